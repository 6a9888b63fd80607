/* profile_session.c -- one gpumem.profile() block: its set-up
 * (_profile_begin: CUPTI initialised, the range profiler enabled, the counter
 * availability, host object, config image and counter data image, the L2
 * flush buffer held, block replay's memory) and its tear-down (_profile_end:
 * nothing left behind).  Between the two, gm_launch calls the hook
 * (profile_launch.c) that _profile_begin sets. */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

static int gm_cupti_initialized = 0;
/* The counter availability image of the last context profiled (host memory). */
static uint8_t *gm_avail_cache = NULL;
static size_t gm_avail_size = 0;
static CUcontext gm_avail_ctx = NULL;
static int gm_avail_device = -1;

/* Ranges per batch (GPUMEM_PROFILE_BATCH overrides).  A Start costs more the
 * more ranges it is configured for.  Measured on an H100, 64 read_offset
 * launches, whole block: a hardware-counter set (gld_transactions) 1791 ms
 * with 1 range per Start, 455 with 8, 375 with 16, 354 with 32, 344 with 64,
 * 414 with 128; an instrumented set (gld/gst_efficiency) 351-474 ms at every
 * size, best at 8-16. */
#define GM_BATCH_RANGES 16
/* Launches per replayed batch of a several-pass set (block replay; the same
 * variable overrides it): one Start per pass for all of them. */
#define GM_BLOCK_RANGES 64

/* ---- session set-up and tear-down ---------------------------------------- */
static void teardown(void)
{
    if (gm_prof.session_open && gm_prof.range) {
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = gm_prof.range;
        gm_prof_cuptiRangeProfilerStop(&sp);
    }
    gm_prof.session_open = 0;
    if (gm_prof.pending) {
        gm_prof_fill_pending_nan();
        Py_CLEAR(gm_prof.pending);
    }
    gm_prof.batched = 0;
    gm_prof.max_ranges = 0;
    if (gm_prof.host) {
        CUpti_Profiler_Host_Deinitialize_Params p = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        p.pHostObject = gm_prof.host;
        gm_prof_cuptiProfilerHostDeinitialize(&p);
        gm_prof.host = NULL;
    }
    if (gm_prof.range) {
        CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        p.pRangeProfilerObject = gm_prof.range;
        gm_prof_cuptiRangeProfilerDisable(&p);
        gm_prof.range = NULL;
    }
    gm_prof_block_free();
    if (gm_prof.flush_size)
        gm_flush_release();
    gm_device_free(gm_prof.scratch, gm_prof.scratch_size);
    gm_prof.scratch = NULL;
    gm_prof.flush_size = gm_prof.scratch_size = 0;
    PyMem_Free(gm_prof.avail);
    PyMem_Free(gm_prof.config);
    PyMem_Free(gm_prof.counter_data);
    PyMem_Free(gm_prof.values);
    gm_prof.avail = gm_prof.config = gm_prof.counter_data = NULL;
    gm_prof.values = NULL;
    gm_prof.config_size = gm_prof.counter_data_size = gm_prof.counter_data_cap = 0;
    gm_prof.image_ranges = gm_prof.configured_ranges = 0;
    gm_prof.ctx = NULL;
    for (size_t i = 0; i < gm_prof.n_names; i++)
        PyMem_Free(gm_prof.names[i]);
    PyMem_Free(gm_prof.names);
    PyMem_Free(gm_prof.cnames);
    gm_prof.names = NULL;
    gm_prof.cnames = NULL;
    gm_prof.n_names = 0;
    for (size_t i = 0; i < gm_prof.n_outputs; i++)
        PyMem_Free(gm_prof.outputs[i].name);
    PyMem_Free(gm_prof.outputs);
    gm_prof.outputs = NULL;
    gm_prof.n_outputs = 0;
    gm_prof.passes = 0;
    gm_prof.launches = 0;
    gm_prof_active = 0;
    gm_launch_set_hook(NULL);
    (void)cudaGetLastError();
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = PyMem_Malloc(n);
    if (d)
        memcpy(d, s, n);
    else
        PyErr_NoMemory();
    return d;
}

/* Which of the metric names CUPTI does not know (set ValueError), else leave
 * the CUPTI error in place.  Uses a throw-away host object per name. */
static void name_bad_metric(void)
{
    for (size_t i = 0; i < gm_prof.n_names; i++) {
        CUpti_Profiler_Host_Initialize_Params hi = {
            CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        hi.pChipName = gm_prof.chip;
        hi.pCounterAvailabilityImage = gm_prof.avail;
        if (gm_prof_cuptiProfilerHostInitialize(&hi) != CUPTI_SUCCESS)
            return;
        CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
            CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        am.pHostObject = hi.pHostObject;
        am.ppMetricNames = &gm_prof.cnames[i];
        am.numMetrics = 1;
        CUptiResult r = gm_prof_cuptiProfilerHostConfigAddMetrics(&am);
        CUpti_Profiler_Host_Deinitialize_Params hd = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        hd.pHostObject = hi.pHostObject;
        gm_prof_cuptiProfilerHostDeinitialize(&hd);
        if (r != CUPTI_SUCCESS) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "metric '%s' is not a metric CUPTI can collect on this GPU (%s): %s; "
                         "gpumem.metrics() lists the aliases, `ncu --query-metrics` the raw "
                         "Nsight Compute names",
                         gm_prof.cnames[i], gm_prof.chip, gm_prof_cupti_name(r));
            return;
        }
    }
}

/* Hold measure.c's L2 flush buffer for the block: four times L2 (each half
 * of a partitioned L2 may hold its own copy), at least 8 MiB, zeroed once
 * now -- never inside a pass. */
static int setup_flush(void)
{
    int l2 = 0;
    gm_l2_flush_params p;
    GM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, gm_prof.device));
    size_t size = ((size_t)(l2 > 0 ? l2 : 0) * 4 + 15) & ~(size_t)15;
    if (size < (8u << 20))
        size = 8u << 20;
    if (gm_flush_hold(size, &p) < 0)
        return -1;
    gm_prof.flush_size = size;
    return 0;
fail:
    return -1;
}

/* ---- _profile_begin, _profile_end ---------------------------------------- */
/* _profile_begin's arguments: *names and *outs as new references (fast
 * sequences), *dirs borrowed, the replay mode.  0, or -1 with an exception
 * and nothing held. */
static int parse_begin_args(PyObject *args, PyObject *kwargs, PyObject **names, PyObject **outs,
                            PyObject **dirs, const char **replay, int *replay_mode)
{
    static char *kwlist[] = {"metric_names", "outputs", "replay", "dirs", NULL};
    PyObject *names_obj, *outputs_obj;
    *dirs = NULL;
    *replay = "block";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|sO:_profile_begin", kwlist, &names_obj,
                                     &outputs_obj, replay, dirs))
        return -1;
    if (gm_prof_active || gm_prof.host || gm_prof.range) {
        gm_prof_error("busy", NULL, 0,
                      PyUnicode_FromString("gpumem.profile() blocks do not nest: one "
                                           "is already active"));
        return -1;
    }
    /* "user" is the older name of "block" */
    if (strcmp(*replay, "block") == 0 || strcmp(*replay, "user") == 0)
        *replay_mode = GM_REPLAY_BLOCK;
    else if (strcmp(*replay, "launch") == 0)
        *replay_mode = GM_REPLAY_LAUNCH;
    else if (strcmp(*replay, "kernel") == 0)
        *replay_mode = GM_REPLAY_KERNEL;
    else {
        PyErr_Format(PyExc_ValueError,
                     "profile: replay='%s' is not allowed; use 'block', 'launch' or 'kernel'",
                     *replay);
        return -1;
    }
    *names = PySequence_Fast(names_obj, "profile: metric names must be a list");
    if (*names == NULL)
        return -1;
    *outs = PySequence_Fast(outputs_obj, "profile: outputs must be a list");
    if (*outs == NULL) {
        Py_DECREF(*names);
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(*names) == 0 || PySequence_Fast_GET_SIZE(*outs) == 0) {
        Py_DECREF(*names);
        Py_DECREF(*outs);
        PyErr_SetString(PyExc_ValueError, "profile: no metrics to collect");
        return -1;
    }
    return 0;
}

/* The metric names (for CUPTI) and the outputs (the keys of each launch's
 * dict and how to compute them) into gm_prof. */
static int copy_metrics(PyObject *names, PyObject *outs)
{
    Py_ssize_t nn = PySequence_Fast_GET_SIZE(names), no = PySequence_Fast_GET_SIZE(outs);
    gm_prof.names = PyMem_Calloc((size_t)nn, sizeof(char *));
    gm_prof.cnames = PyMem_Calloc((size_t)nn, sizeof(char *));
    gm_prof.values = PyMem_Calloc((size_t)nn, sizeof(double));
    gm_prof.outputs = PyMem_Calloc((size_t)no, sizeof(gm_prof_output));
    if (!gm_prof.names || !gm_prof.cnames || !gm_prof.values || !gm_prof.outputs) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < nn; i++) {
        const char *s;
        if (gm_arg_str(PySequence_Fast_GET_ITEM(names, i), "profile", "metric name", &s) < 0)
            return -1;
        if ((gm_prof.names[i] = dup_str(s)) == NULL)
            return -1;
        gm_prof.cnames[i] = gm_prof.names[i];
        gm_prof.n_names++;
    }
    for (Py_ssize_t i = 0; i < no; i++) {
        const char *s;
        int num, den;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(outs, i), "sii", &s, &num, &den))
            return -1;
        if (num < 0 || num >= nn || den < -2 - (int)nn || den >= nn) {
            PyErr_SetString(PyExc_ValueError, "profile: output index out of range");
            return -1;
        }
        if ((gm_prof.outputs[i].name = dup_str(s)) == NULL)
            return -1;
        gm_prof.outputs[i].num = num;
        gm_prof.outputs[i].den = den;
        gm_prof.n_outputs++;
    }
    return 0;
}

/* Initialize CUPTI (once per process), name the chip, enable the range
 * profiler on the current context, *ctx. */
static int enable_range_profiler(CUcontext *ctx)
{
    GM_CUDA(cudaGetDevice(&gm_prof.device));
    if (!gm_cupti_initialized) {
        CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        GM_CUPTI(cuptiProfilerInitialize, &ip);
        gm_cupti_initialized = 1;
    }
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = (size_t)gm_prof.device;
    GM_CUPTI(cuptiDeviceGetChipName, &cn);
    snprintf(gm_prof.chip, sizeof gm_prof.chip, "%s", cn.pChipName ? cn.pChipName : "?");
    /* A thread other than the one that made the context has none current until
     * the runtime binds one: make gpumem's (the device's primary context)
     * current here, as a kernel launch from this thread would. */
    GM_CUDA(cudaSetDevice(gm_prof.device));
    GM_CUDA(cudaFree(0));
    CUresult r = gm_prof_cuCtxGetCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        gm_prof_driver_error(r, "cuCtxGetCurrent");
        goto fail;
    }
    if (*ctx == NULL) {
        PyErr_SetString(gm_CudaError, "profile: no CUDA context is current in this thread, even "
                                      "after cudaFree(0) bound the runtime's");
        goto fail;
    }
    CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = *ctx;
    GM_CUPTI(cuptiRangeProfilerEnable, &en);
    gm_prof.range = en.pRangeProfilerObject;
    gm_prof.ctx = *ctx;
    return 0;
fail:
    return -1;
}

/* gm_prof.avail: a copy of the counter availability image of ctx. */
static int availability_image(CUcontext ctx)
{
    if (gm_avail_cache == NULL || gm_avail_ctx != ctx || gm_avail_device != gm_prof.device) {
        /* ~35 ms per call on an H100, twice: asked once per context, kept
         * (host memory only) for the next blocks. */
        CUpti_Profiler_GetCounterAvailability_Params ca = {
            CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
        ca.ctx = ctx;
        GM_CUPTI(cuptiProfilerGetCounterAvailability, &ca);
        size_t n = ca.counterAvailabilityImageSize ? ca.counterAvailabilityImageSize : 1;
        uint8_t *img = PyMem_Calloc(n, 1);
        if (img == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        ca.pCounterAvailabilityImage = img;
        CUptiResult r = gm_prof_cuptiProfilerGetCounterAvailability(&ca);
        if (r != CUPTI_SUCCESS) {
            PyMem_Free(img);
            gm_prof_cupti_error(r, "cuptiProfilerGetCounterAvailability");
            goto fail;
        }
        PyMem_Free(gm_avail_cache);
        gm_avail_cache = img;
        gm_avail_size = n;
        gm_avail_ctx = ctx;
        gm_avail_device = gm_prof.device;
    }
    gm_prof.avail = PyMem_Malloc(gm_avail_size);
    if (gm_prof.avail == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(gm_prof.avail, gm_avail_cache, gm_avail_size);
    return 0;
fail:
    return -1;
}

/* gm_prof.host: the host object for this chip and availability image. */
static int host_object(void)
{
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = gm_prof.chip;
    hi.pCounterAvailabilityImage = gm_prof.avail;
    GM_CUPTI(cuptiProfilerHostInitialize, &hi);
    gm_prof.host = hi.pHostObject;
    return 0;
fail:
    return -1;
}

/* The metrics into the host object; gm_prof.config: the config image, and
 * how many passes it takes. */
static int config_image(void)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    am.pHostObject = gm_prof.host;
    am.ppMetricNames = gm_prof.cnames;
    am.numMetrics = gm_prof.n_names;
    CUptiResult r = gm_prof_cuptiProfilerHostConfigAddMetrics(&am);
    if (r != CUPTI_SUCCESS) {
        gm_prof_cupti_error(r, "cuptiProfilerHostConfigAddMetrics");
        name_bad_metric();
        goto fail;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    cs.pHostObject = gm_prof.host;
    GM_CUPTI(cuptiProfilerHostGetConfigImageSize, &cs);
    gm_prof.config_size = cs.configImageSize;
    gm_prof.config = PyMem_Calloc(gm_prof.config_size ? gm_prof.config_size : 1, 1);
    if (gm_prof.config == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    ci.pHostObject = gm_prof.host;
    ci.configImageSize = gm_prof.config_size;
    ci.pConfigImage = gm_prof.config;
    GM_CUPTI(cuptiProfilerHostGetConfigImage, &ci);
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = gm_prof.config_size;
    np.pConfigImage = gm_prof.config;
    GM_CUPTI(cuptiProfilerHostGetNumOfPasses, &np);
    gm_prof.passes = np.numOfPasses;
    return 0;
fail:
    return -1;
}

/* Whether launches are batched and how many ranges a Start takes;
 * gm_prof.counter_data: a counter data image that size. */
static int counter_data_image(void)
{
    CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pRangeProfilerObject = gm_prof.range;
    ds.pMetricNames = gm_prof.cnames;
    ds.numMetrics = gm_prof.n_names;
    gm_prof.batched = gm_prof.mode == GM_REPLAY_BLOCK && gm_prof.passes == 1;
    gm_prof.block = gm_prof.mode == GM_REPLAY_BLOCK && gm_prof.passes > 1;
    gm_prof.max_ranges = 1; /* one launch = one range */
    if (gm_prof.batched || gm_prof.block) {
        const char *env = getenv("GPUMEM_PROFILE_BATCH");
        long v = env && *env ? strtol(env, NULL, 10)
                 : gm_prof.batched ? GM_BATCH_RANGES : GM_BLOCK_RANGES;
        gm_prof.max_ranges = v < 1 ? 1 : v > 4096 ? 4096 : (size_t)v;
    }
    ds.maxNumOfRanges = gm_prof.max_ranges;
    ds.maxNumRangeTreeNodes = gm_prof.max_ranges;
    GM_CUPTI(cuptiRangeProfilerGetCounterDataSize, &ds);
    gm_prof.counter_data_size = gm_prof.counter_data_cap = ds.counterDataSize;
    gm_prof.image_ranges = gm_prof.max_ranges;
    size_t n = gm_prof.counter_data_size ? gm_prof.counter_data_size : 1;
    gm_prof.counter_data = PyMem_Calloc(n, 1);
    if (gm_prof.counter_data == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    return 0;
fail:
    return -1;
}

/* Everything the block's launches share, from a clean gm_prof, each step
 * timed into gm_prof_setup_ms.  0, or -1 with an exception (the caller tears
 * down what was made). */
static int open_session(PyObject *names, PyObject *outs, int replay_mode)
{
    memset(&gm_prof, 0, sizeof gm_prof);
    memset(gm_prof_setup_ms, 0, sizeof gm_prof_setup_ms);
    T_BEGIN();
    gm_prof.mode = replay_mode;
    gm_prof.replay = replay_mode == GM_REPLAY_KERNEL ? CUPTI_KernelReplay : CUPTI_UserReplay;
    memset(gm_prof_phase_ms, 0, sizeof gm_prof_phase_ms);
    gm_prof_passes_run = gm_prof_reenables = 0;
    CUcontext ctx = NULL;
    if (copy_metrics(names, outs) < 0 || enable_range_profiler(&ctx) < 0)
        return -1;
    T_MARK_IN(gm_prof_setup_ms, U_ENABLE);
    if (availability_image(ctx) < 0)
        return -1;
    T_MARK_IN(gm_prof_setup_ms, U_AVAILABILITY);
    if (host_object() < 0)
        return -1;
    T_MARK_IN(gm_prof_setup_ms, U_HOST);
    if (config_image() < 0)
        return -1;
    T_MARK_IN(gm_prof_setup_ms, U_CONFIG);
    if (counter_data_image() < 0)
        return -1;
    T_MARK_IN(gm_prof_setup_ms, U_COUNTER_DATA);
    if (gm_prof.replay == CUPTI_UserReplay && setup_flush() < 0)
        return -1;
    T_MARK_IN(gm_prof_setup_ms, U_FLUSH_SETUP);
    if ((gm_prof.batched || gm_prof.block) && (gm_prof.pending = PyList_New(0)) == NULL)
        return -1;
    if (gm_prof.block && gm_prof_block_setup() < 0)
        return -1;
    return 0;
}

/* _profile_begin(metric_names, outputs, replay, dirs) -> dict
 * outputs: [(name, num_index, den_index or -1)], keys of each launch's dict. */
PyObject *gm_prof_begin(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *names, *outs, *dirs;
    const char *replay;
    int replay_mode;
    if (parse_begin_args(args, kwargs, &names, &outs, &dirs, &replay, &replay_mode) < 0)
        return NULL;
    if (gm_ensure_device() < 0 || gm_prof_load_cupti(dirs) < 0 || gm_prof_load_driver() < 0) {
        Py_DECREF(names);
        Py_DECREF(outs);
        return NULL;
    }
    int opened = open_session(names, outs, replay_mode);
    Py_DECREF(names);
    Py_DECREF(outs);
    if (opened < 0) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        teardown();
        PyErr_Restore(et, ev, tb);
        return NULL;
    }
    /* Start: every launch from now on goes through the hook. */
    gm_prof_active = 1;
    gm_launch_set_hook(gm_prof_launch_hook);
    return Py_BuildValue("{s:s,s:n,s:s,s:s,s:n,s:n}", "chip", gm_prof.chip, "passes",
                         (Py_ssize_t)gm_prof.passes, "replay",
                         replay_mode == GM_REPLAY_BLOCK    ? "block"
                         : replay_mode == GM_REPLAY_LAUNCH ? "launch"
                                                           : "kernel",
                         "library",
                         gm_prof_cupti_path, "flush_bytes", (Py_ssize_t)gm_prof.flush_size,
                         "ranges_per_start", (Py_ssize_t)gm_prof.max_ranges);
}

/* _profile_end(): leave nothing behind; safe to call at any time. */
PyObject *gm_prof_end(PyObject *self, PyObject *unused)
{
    T_BEGIN();
    if (gm_prof_cupti_lib != NULL)
        teardown();
    T_MARK_IN(gm_prof_setup_ms, U_TEARDOWN);
    gm_prof_active = 0;
    gm_launch_set_hook(NULL);
    Py_RETURN_NONE;
}
