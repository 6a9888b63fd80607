/* profile_pass.c -- what every profiled run shares: the device synchronised
 * with the GIL held, the L2 flush, the snapshot of a launch's in-place
 * buffers, a fresh counter data image for pass 0, one launch in a user range,
 * the clean-up after a failure, and the ONE pass loop -- per pass a Start,
 * each range (its in-place buffers restored, L2 flushed, a user range around
 * its launch), a Stop, until CUPTI has every pass -- that the per-launch path
 * (profile_launch.c) and block replay (profile_replay.c) both run. */
#include "profile.h"

/* ---- the device, L2, in-place buffers ------------------------------------- */
/* The GIL stays held: no other Python thread may launch (and enter the
 * hook), sync or end the block while the profiler's state is half-way
 * through a launch or a replay -- launches from other threads wait. */
int gm_prof_sync_device(const char *what)
{
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, what);
    return 0;
}

/* The L2 flush before a pass or range, ncu's cache control: measure.c's
 * buffer (held for the block since _profile_begin) through gm_flush_l2, an
 * internal launch; the caller waits with the GIL held (gm_prof_sync_device). */
int gm_prof_flush_l2(void)
{
    return gm_flush_l2((long long)gm_prof.flush_size, 0) < 0 ? -1 : 0;
}

int gm_prof_copy_inout(const gm_launch_info *info, int to_scratch)
{
    size_t off = 0;
    for (int i = 0; i < info->n_inout; i++) {
        const gm_buffer *b = &info->inout[i];
        if (b->ptr == NULL || b->nbytes == 0)
            continue;
        char *s = (char *)gm_prof.scratch + off;
        GM_CUDA(cudaMemcpy(to_scratch ? (void *)s : b->ptr, to_scratch ? b->ptr : (void *)s,
                           b->nbytes, cudaMemcpyDeviceToDevice));
        off += b->nbytes;
    }
    return 0;
fail:
    return -1;
}

/* The scratch buffer for a launch's in-place buffers: *need bytes. */
int gm_prof_ensure_scratch(const gm_launch_info *info, size_t *need)
{
    *need = 0;
    for (int i = 0; i < info->n_inout; i++)
        *need += info->inout[i].nbytes;
    if (*need > gm_prof.scratch_size) {
        gm_device_free(gm_prof.scratch, gm_prof.scratch_size);
        gm_prof.scratch = NULL;
        gm_prof.scratch_size = 0;
        if (gm_device_alloc(*need, &gm_prof.scratch) < 0)
            return -1;
        gm_prof.scratch_size = *need;
    }
    return 0;
}

/* ---- pass 0, one launch, failure ------------------------------------------ */
int gm_prof_reenable(void)
{
    if (gm_prof.range) {
        CUpti_RangeProfiler_Disable_Params dp = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        dp.pRangeProfilerObject = gm_prof.range;
        gm_prof.range = NULL;
        GM_CUPTI(cuptiRangeProfilerDisable, &dp);
    }
    CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = gm_prof.ctx;
    GM_CUPTI(cuptiRangeProfilerEnable, &en);
    gm_prof.range = en.pRangeProfilerObject;
    /* The new object has sized no counter data image and has no configuration:
     * CounterDataImageInitialize lays an image out by the object's last
     * GetCounterDataSize, so the next configure_pass0 asks it again. */
    gm_prof.image_ranges = 0;
    gm_prof.configured_ranges = 0;
    gm_prof_reenables++;
    return 0;
fail:
    return -1;
}

/* A fresh counter data image and pass 0, for `ranges` (<= gm_prof.max_ranges)
 * ranges per pass.  A Start costs ~1.4 ms more per range it is configured
 * for (H100), so a short batch is configured for what it holds -- but never
 * for more ranges than the same range profiler object was configured for
 * last: a block replayed as a batch of 1 and then one of 3 (the next launch's
 * result outgrew the sink) came back with 2 ranges on an H200, so a batch that
 * grows gets a range profiler enabled afresh (cost not measured yet;
 * _profile_state()["reenables"] counts them). */
int gm_prof_configure_pass0(size_t ranges)
{
    if (ranges < 1 || ranges > gm_prof.max_ranges)
        ranges = gm_prof.max_ranges;
    if (gm_prof.configured_ranges && ranges > gm_prof.configured_ranges && gm_prof_reenable() < 0)
        goto fail;
    if (ranges != gm_prof.image_ranges) {
        CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
            CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        ds.pRangeProfilerObject = gm_prof.range;
        ds.pMetricNames = gm_prof.cnames;
        ds.numMetrics = gm_prof.n_names;
        ds.maxNumOfRanges = ranges;
        ds.maxNumRangeTreeNodes = ranges;
        GM_CUPTI(cuptiRangeProfilerGetCounterDataSize, &ds);
        if (ds.counterDataSize > gm_prof.counter_data_cap) {
            gm_prof_error("cupti", "cuptiRangeProfilerGetCounterDataSize", 0,
                          PyUnicode_FromFormat("a counter data image for %zu ranges needs "
                                               "%zu bytes, more than the %zu made for %zu",
                                               ranges, ds.counterDataSize,
                                               gm_prof.counter_data_cap, gm_prof.max_ranges));
            goto fail;
        }
        gm_prof.counter_data_size = ds.counterDataSize;
        gm_prof.image_ranges = ranges;
    }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = gm_prof.range;
    di.counterDataSize = gm_prof.counter_data_size;
    di.pCounterData = gm_prof.counter_data;
    GM_CUPTI(cuptiRangeProfilerCounterDataImageInitialize, &di);
    CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = gm_prof.range;
    sc.configSize = gm_prof.config_size;
    sc.pConfig = gm_prof.config;
    sc.counterDataImageSize = gm_prof.counter_data_size;
    sc.pCounterDataImage = gm_prof.counter_data;
    sc.range = gm_prof.replay == CUPTI_UserReplay ? CUPTI_UserRange : CUPTI_AutoRange;
    sc.replayMode = gm_prof.replay;
    sc.maxRangesPerPass = ranges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    GM_CUPTI(cuptiRangeProfilerSetConfig, &sc);
    gm_prof.configured_ranges = ranges;
    return 0;
fail:
    return -1;
}

/* After a failed profiled launch: pop the open range, stop the session (an
 * open batch's launches get NaN), restore the in-place buffers, keep the
 * first error. */
void gm_prof_close_after_failure(const gm_launch_info *info, int pushed, int started, int snap)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (pushed) {
        CUpti_RangeProfiler_PopRange_Params pp = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
        pp.pRangeProfilerObject = gm_prof.range;
        gm_prof_cuptiRangeProfilerPopRange(&pp);
    }
    if (started || gm_prof.session_open) {
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = gm_prof.range;
        gm_prof_cuptiRangeProfilerStop(&sp);
        gm_prof.session_open = 0;
    }
    gm_prof_fill_pending_nan();
    (void)cudaDeviceSynchronize();
    if (snap && gm_prof_copy_inout(info, 0) < 0)
        PyErr_Clear();
    (void)cudaGetLastError();
    PyErr_Restore(et, ev, tb);
}

/* Push a user range (when user_range), launch, wait, pop: one profiled run.
 * *pushed says whether a range is still open when this fails. */
int gm_prof_launch_in_range(const gm_variant *variant, const void *params, const char *name,
                            int user_range, int *pushed, const char *what)
{
    T_BEGIN();
    if (user_range) {
        CUpti_RangeProfiler_PushRange_Params pr = {
            CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
        pr.pRangeProfilerObject = gm_prof.range;
        pr.pRangeName = name;
        GM_CUPTI(cuptiRangeProfilerPushRange, &pr);
        *pushed = 1;
        T_MARK(T_PUSH);
    }
    /* An internal launch: no hook (this is the hook's own work), no record. */
    const gm_launch_info info = {.variant = variant, .flags = GM_LAUNCH_INTERNAL};
    if (gm_launch(&info, params) < 0)
        goto fail;
    if (gm_prof_sync_device(what) < 0)
        goto fail;
    T_MARK(T_LAUNCH);
    if (*pushed) {
        CUpti_RangeProfiler_PopRange_Params pp = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
        pp.pRangeProfilerObject = gm_prof.range;
        *pushed = 0;
        GM_CUPTI(cuptiRangeProfilerPopRange, &pp);
        T_MARK(T_POP);
    }
    return 0;
fail:
    return -1;
}

/* ---- the pass loop --------------------------------------------------------- */
int gm_prof_run_passes(const gm_prof_ranges *r, size_t *passes)
{
    const int user = gm_prof.replay == CUPTI_UserReplay;
    int started = 0, pushed = 0;
    size_t pass = 0;
    char what[64], name[160];
    T_BEGIN();
    for (;;) {
        CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        st.pRangeProfilerObject = gm_prof.range;
        GM_CUPTI(cuptiRangeProfilerStart, &st);
        started = 1;
        T_MARK(T_START);
        snprintf(what, sizeof what, "%s profiling pass %zu", r->verb, pass);
        for (size_t k = 0; k < r->n; k++) {
            const gm_variant *variant;
            const void *params;
            r->range(r, k, &variant, &params, name, sizeof name);
            if (user) {
                if (r->restore && r->restore(r, pass, k) < 0)
                    goto fail;
                T_MARK(T_RESTORE);
                /* Outside any range: not counted. */
                if (gm_prof_flush_l2() < 0 ||
                    gm_prof_sync_device("flushing L2 before a profiled range") < 0)
                    goto fail;
                T_MARK(T_FLUSH);
            }
            if (gm_prof_launch_in_range(variant, params, name, user, &pushed, what) < 0)
                goto fail;
            gm_t_ = gm_prof_now_ms();
        }
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = gm_prof.range;
        started = 0;
        GM_CUPTI(cuptiRangeProfilerStop, &sp);
        T_MARK(T_STOP);
        pass++;
        gm_prof_passes_run++;
        if (sp.isAllPassSubmitted)
            break;
        if (pass > gm_prof.passes + 2) {
            gm_prof_error("cupti", "cuptiRangeProfilerStop", 0,
                          PyUnicode_FromFormat("CUPTI still wants passes after %zu (expected "
                                               "%zu) for %s",
                                               pass, gm_prof.passes, r->whole));
            goto fail;
        }
    }
    *passes = pass;
    return 0;
fail: {
    /* Close the range and the pass this opened; keep the first error. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (pushed) {
        CUpti_RangeProfiler_PopRange_Params pp = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
        pp.pRangeProfilerObject = gm_prof.range;
        gm_prof_cuptiRangeProfilerPopRange(&pp);
    }
    if (started) {
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = gm_prof.range;
        gm_prof_cuptiRangeProfilerStop(&sp);
    }
    PyErr_Restore(et, ev, tb);
    return -1;
}
}
