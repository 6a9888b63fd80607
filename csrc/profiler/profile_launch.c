/* profile_launch.c -- the launch hook gm_launch calls while a
 * gpumem.profile() block is open (profile_session.c sets it): a one-pass
 * metric set's launch becomes one range of the open batch (decoded when the
 * batch is full, at _profile_sync() or at the block's end); a several-pass
 * set's launch is recorded for block replay (profile_replay.c) when it can
 * be moved and fits; any other runs the pass loop (profile_pass.c) on the
 * spot, its in-place buffers restored between passes and after the last. */
#include "profile.h"

/* ---- batches of one-pass launches ---------------------------------------- */
/* Close the open batch: stop, decode, evaluate every range into its dict.
 * 0, or -1 with an exception (the batch's dicts then hold NaN). */
int gm_prof_batch_finish(void)
{
    if (!gm_prof.batched || !gm_prof.session_open)
        return 0;
    T_BEGIN();
    CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = gm_prof.range;
    gm_prof.session_open = 0;
    GM_CUPTI(cuptiRangeProfilerStop, &sp);
    T_MARK(T_STOP);
    gm_prof_passes_run++;
    if (!sp.isAllPassSubmitted) {
        gm_prof_error("cupti", "cuptiRangeProfilerStop", 0,
                      PyUnicode_FromString("CUPTI wants another pass for a one-pass metric set"));
        goto fail;
    }
    if (gm_prof_evaluate_batch() < 0)
        goto fail;
    return 0;
fail:
    gm_prof_fill_pending_nan();
    return -1;
}

/* One launch of a one-pass metric set: a user range in the open batch. */
static PyObject *profile_launch_batched(const gm_launch_info *info, const void *params,
                                       const char *range_name)
{
    int pushed = 0, snap = 0;
    size_t need = 0;
    if (gm_prof_ensure_scratch(info, &need) < 0)
        return NULL;
    T_BEGIN();
    if (!gm_prof.session_open) {
        if (gm_prof_configure_pass0(gm_prof.max_ranges) < 0)
            goto fail;
        T_MARK(T_CONFIG);
        CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        st.pRangeProfilerObject = gm_prof.range;
        GM_CUPTI(cuptiRangeProfilerStart, &st);
        gm_prof.session_open = 1;
        T_MARK(T_START);
    }
    /* The timed launch after this one must see the buffers as the caller left them. */
    if (need) {
        if (gm_prof_copy_inout(info, 1) < 0)
            goto fail;
        snap = 1;
    }
    T_MARK(T_RESTORE);
    /* Outside any range: not counted. */
    if (gm_prof_flush_l2() < 0 || gm_prof_sync_device("flushing L2 before a profiled launch") < 0)
        goto fail;
    T_MARK(T_FLUSH);
    if (gm_prof_launch_in_range(info->variant, params, range_name, 1, &pushed, "running a profiled launch") < 0)
        goto fail;
    gm_t_ = gm_prof_now_ms();
    if (snap && gm_prof_copy_inout(info, 0) < 0)
        goto fail;
    snap = 0;
    T_MARK(T_RESTORE);
    gm_prof.last_passes_run = 1.0;
    gm_prof.launches++;
    PyObject *d = PyDict_New();
    if (d == NULL || PyList_Append(gm_prof.pending, d) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    if ((size_t)PyList_GET_SIZE(gm_prof.pending) >= gm_prof.max_ranges && gm_prof_batch_finish() < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;

fail:
    /* Close the batch (its earlier launches get NaN), restore the buffers,
     * keep the first error. */
    gm_prof_close_after_failure(info, pushed, 0, snap);
    return NULL;
}

/* _profile_sync(): decode the open batch now, so every record so far has its values. */
PyObject *gm_prof_sync(PyObject *self, PyObject *unused)
{
    if (gm_prof_active && (gm_prof_batch_finish() < 0 || gm_prof_block_finish() < 0))
        return NULL;
    Py_RETURN_NONE;
}

/* ---- one launch on the spot ------------------------------------------------ */
/* The pass loop's view of one launch: its one range, and its in-place
 * buffers put back from the snapshot before every pass after the first. */
typedef struct {
    const gm_launch_info *info;
    const void *params;
    const char *name;
    int snap;
} one_launch;

static void one_range(const gm_prof_ranges *r, size_t k, const gm_variant **variant,
                      const void **params, char *name, size_t len)
{
    const one_launch *o = r->ctx;
    *variant = o->info->variant;
    *params = o->params;
    snprintf(name, len, "%s", o->name);
}

static int one_restore(const gm_prof_ranges *r, size_t pass, size_t k)
{
    const one_launch *o = r->ctx;
    return pass > 0 && o->snap ? gm_prof_copy_inout(o->info, 0) : 0;
}

/* The launch hook: the metrics of one launch (a new dict; for a batched
 * one-pass set, filled when the batch is decoded). */
PyObject *gm_prof_launch_hook(const gm_launch_info *info, const void *params)
{
    int snap = 0;
    char range_name[128];
    if (!gm_prof_active || gm_prof.range == NULL || gm_prof.host == NULL)
        return gm_prof_error("cupti", NULL, 0,
                             PyUnicode_FromString("internal: no profiling session is active"));
    int dev = gm_prof.device;
    if (gm_device_current(&dev) < 0)
        return NULL;
    if (dev != gm_prof.device) {
        /* CUPTI counts one context: a block reads the GPU it was opened on */
        PyErr_Format(gm_prof_ProfilerError,
                     "%s/%s runs on device %d, but this gpumem.profile() block reads the counters "
                     "of device %d, where it was opened; open one on device %d (with "
                     "gpumem.Device(%d): with gpumem.profile(...):)", info->variant->family,
                     info->variant->name, dev, gm_prof.device, dev, dev);
        return NULL;
    }
    snprintf(range_name, sizeof range_name, "%s/%s", info->variant->family, info->variant->name);
    if (gm_prof.batched) {
        /* CUPTI merges ranges of the same name within a session: number them. */
        snprintf(range_name, sizeof range_name, "%s/%s #%lld", info->variant->family,
                 info->variant->name, gm_prof.launches);
        return profile_launch_batched(info, params, range_name);
    }
    if (gm_prof.block && info->moved) {
        /* Recorded on copies of its buffers, replayed with the others of its
         * batch; on the spot below when it does not fit the replay memory. */
        int here = 0;
        PyObject *d = gm_prof_block_record(info, &here);
        if (d != NULL || !here)
            return d;
    }

    /* Snapshot the buffers the launch reads and writes: every pass and the
     * timed launch after profiling must see them as the caller left them. */
    size_t need = 0;
    if (gm_prof_ensure_scratch(info, &need) < 0)
        return NULL;
    if (need) {
        if (gm_prof_copy_inout(info, 1) < 0)
            return NULL;
        snap = 1;
    }

    /* A fresh counter data image and pass 0 for every launch: a finished
     * replay session cannot take another range (measured: the next session
     * overwrites range 0), and both calls cost microseconds. */
    T_BEGIN();
    if (gm_prof_configure_pass0(gm_prof.max_ranges) < 0)
        goto fail;
    T_MARK(T_CONFIG);
    size_t pass;
    const one_launch one = {info, params, range_name, snap};
    const gm_prof_ranges ranges = {1, one_range, one_restore, "running", range_name, &one};
    if (gm_prof_run_passes(&ranges, &pass) < 0)
        goto fail;
    gm_t_ = gm_prof_now_ms();
    if (snap && gm_prof_copy_inout(info, 0) < 0)
        goto fail;
    snap = 0;
    gm_prof.last_passes_run = (double)pass;
    T_MARK(T_RESTORE);

    if (gm_prof_evaluate_one(range_name) < 0)
        return NULL;
    gm_prof.launches++;

    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    if (gm_prof_fill_values(d) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;

fail:
    /* Restore the launch's buffers, keep the first error. */
    gm_prof_close_after_failure(info, 0, 0, snap);
    return NULL;
}
