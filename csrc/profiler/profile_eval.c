/* profile_eval.c -- a stopped session decoded into its ranges, each range
 * evaluated into metric values, and the values put into the metric dicts
 * handed out for the launches. */
#include "profile.h"

/* Decode the stopped session: how many ranges it holds (and dropped). */
static int decode_ranges(size_t *ranges, size_t *dropped)
{
    CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = gm_prof.range;
    GM_CUPTI(cuptiRangeProfilerDecodeData, &dd);
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = gm_prof.counter_data;
    gi.counterDataImageSize = gm_prof.counter_data_size;
    GM_CUPTI(cuptiRangeProfilerGetCounterDataInfo, &gi);
    *ranges = gi.numTotalRanges;
    *dropped = dd.numOfRangeDropped;
    return 0;
fail:
    return -1;
}

/* The metric values of range k into gm_prof.values. */
static int evaluate_range(size_t k)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = gm_prof.host;
    ev.pCounterDataImage = gm_prof.counter_data;
    ev.counterDataImageSize = gm_prof.counter_data_size;
    ev.rangeIndex = k;
    ev.ppMetricNames = gm_prof.cnames;
    ev.numMetrics = gm_prof.n_names;
    ev.pMetricValues = gm_prof.values;
    GM_CUPTI(cuptiProfilerHostEvaluateToGpuValues, &ev);
    return 0;
fail:
    return -1;
}

int gm_prof_evaluate_one(const char *range_name)
{
    size_t ranges, dropped;
    T_BEGIN();
    if (decode_ranges(&ranges, &dropped) < 0)
        return -1;
    T_MARK(T_DECODE);
    if (ranges != 1 || dropped > 0) {
        gm_prof_error("cupti", "cuptiRangeProfilerDecodeData", 0,
                      PyUnicode_FromFormat("CUPTI recorded %zu ranges (%zu dropped) for %s; "
                                           "expected 1",
                                           ranges, dropped, range_name));
        return -1;
    }
    if (evaluate_range(0) < 0)
        return -1;
    T_MARK(T_EVALUATE);
    return 0;
}

int gm_prof_evaluate_batch(void)
{
    size_t ranges, dropped;
    T_BEGIN();
    if (decode_ranges(&ranges, &dropped) < 0)
        return -1;
    T_MARK(T_DECODE);
    Py_ssize_t want = PyList_GET_SIZE(gm_prof.pending);
    if ((Py_ssize_t)ranges != want || dropped > 0) {
        gm_prof_error("cupti", "cuptiRangeProfilerDecodeData", 0,
                      PyUnicode_FromFormat("CUPTI recorded %zu ranges (%zu dropped) for "
                                           "a batch of %zd launches",
                                           ranges, dropped, want));
        return -1;
    }
    for (Py_ssize_t k = 0; k < want; k++)
        if (evaluate_range((size_t)k) < 0 ||
            gm_prof_fill_values(PyList_GET_ITEM(gm_prof.pending, k)) < 0)
            return -1;
    T_MARK(T_EVALUATE);
    PyList_SetSlice(gm_prof.pending, 0, PyList_GET_SIZE(gm_prof.pending), NULL);
    return 0;
}

int gm_prof_fill_values(PyObject *d)
{
    for (size_t i = 0; i < gm_prof.n_outputs; i++) {
        const gm_prof_output *o = &gm_prof.outputs[i];
        double v = gm_prof.values[o->num];
        if (o->den >= 0) {
            double den = gm_prof.values[o->den];
            v = den != 0.0 ? v / den : Py_NAN;
        } else if (o->den <= -2) {
            v -= gm_prof.values[-2 - o->den];
        }
        PyObject *f = PyFloat_FromDouble(v);
        if (f == NULL || PyDict_SetItemString(d, o->name, f) < 0) {
            Py_XDECREF(f);
            return -1;
        }
        Py_DECREF(f);
    }
    return 0;
}

void gm_prof_fill_pending_nan(void)
{
    if (gm_prof.pending == NULL)
        return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(gm_prof.pending); k++) {
        PyObject *d = PyList_GET_ITEM(gm_prof.pending, k);
        for (size_t i = 0; i < gm_prof.n_outputs; i++) {
            PyObject *f = PyFloat_FromDouble(Py_NAN);
            if (f == NULL || PyDict_SetItemString(d, gm_prof.outputs[i].name, f) < 0)
                PyErr_Clear();
            Py_XDECREF(f);
        }
    }
    PyList_SetSlice(gm_prof.pending, 0, PyList_GET_SIZE(gm_prof.pending), NULL);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}
