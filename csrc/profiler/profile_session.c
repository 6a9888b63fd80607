/* profile_session.c -- one gpumem.profile() block: set-up (_profile_begin)
 * and tear-down (_profile_end), _profile_state(), the scratch buffer for
 * in-place buffers, the L2 flush, and the launch hook: each launch replayed
 * in a user range once per pass, or one range of an open batch for a
 * one-pass metric set (_profile_sync() decodes the batch). */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

gm_prof_session gm_prof;
double gm_prof_phase_ms[T_N];
double gm_prof_setup_ms[U_N];

static const char *const gm_phase_names[T_N] = {"config", "restore", "flush", "start", "push",
                                                "launch", "pop", "stop", "decode", "evaluate",
                                                "record"};
static const char *const gm_setup_names[U_N] = {"enable", "availability", "host", "config",
                                                "counter_data", "flush_setup", "teardown"};
long long gm_prof_passes_run;
static int gm_profiling = 0;
static int gm_cupti_initialized = 0;
/* The counter availability image of the last context profiled (host memory). */
static uint8_t *gm_avail_cache = NULL;
static size_t gm_avail_size = 0;
static CUcontext gm_avail_ctx = NULL;
static int gm_avail_device = -1;

static PyObject *gm_profile_launch(const gm_launch_info *info, const void *params);

/* Reads a buffer of a few times the L2 size through L2 (ld.global.cg): every
 * line it leaves is clean, so the measured kernel starts with a cold L2 and
 * pays for no earlier write-back -- what `ncu --cache-control all` (its
 * default) does before each pass.  The store never happens in practice; it
 * keeps the loads alive. */
static const char gm_flush_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry gm_l2_flush(.param .u64 p0, .param .u64 p1, .param .u64 p2)\n"
    "{\n"
    "  .reg .pred %p<4>;\n"
    "  .reg .f32 %f<12>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .b64 %rd<16>;\n"
    "  ld.param.u64 %rd7, [p0];\n"
    "  ld.param.u64 %rd8, [p1];\n"
    "  ld.param.u64 %rd9, [p2];\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  cvt.u64.u32 %rd1, %r2;\n"
    "  mul.wide.u32 %rd10, %r1, %r2;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  cvt.u64.u32 %rd11, %r3;\n"
    "  add.s64 %rd15, %rd10, %rd11;\n"
    "  setp.ge.s64 %p1, %rd15, %rd8;\n"
    "  @%p1 bra DONE;\n"
    "  mov.u32 %r4, %nctaid.x;\n"
    "  cvt.u64.u32 %rd12, %r4;\n"
    "  mul.lo.s64 %rd3, %rd12, %rd1;\n"
    "  cvta.to.global.u64 %rd4, %rd9;\n"
    "  mov.f32 %f11, 0f00000000;\n"
    "LOOP:\n"
    "  shl.b64 %rd14, %rd15, 4;\n"
    "  add.s64 %rd13, %rd7, %rd14;\n"
    "  ld.global.cg.v4.f32 {%f4,%f5,%f6,%f7}, [%rd13];\n"
    "  add.f32 %f8, %f4, %f5;\n"
    "  add.f32 %f9, %f6, %f8;\n"
    "  add.f32 %f10, %f7, %f9;\n"
    "  add.f32 %f11, %f11, %f10;\n"
    "  add.s64 %rd15, %rd15, %rd3;\n"
    "  setp.lt.s64 %p2, %rd15, %rd8;\n"
    "  @%p2 bra LOOP;\n"
    "  setp.neu.f32 %p3, %f11, 0f449A5000;\n"
    "  @%p3 bra DONE;\n"
    "  mov.u32 %r5, 1150963712;\n"
    "  st.global.u32 [%rd4], %r5;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    /* gm_differs(a, b, n, flag): *flag = 1 when the n 4-byte words at a and b
     * differ anywhere (block replay: may a launch share an earlier copy of
     * its input?); flag is left alone when they are equal. */
    ".visible .entry gm_differs(.param .u64 q0, .param .u64 q1, .param .u64 q2, .param .u64 q3)\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .b64 %rd<16>;\n"
    "  ld.param.u64 %rd1, [q0];\n"
    "  ld.param.u64 %rd2, [q1];\n"
    "  ld.param.u64 %rd3, [q2];\n"
    "  ld.param.u64 %rd4, [q3];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd2, %rd2;\n"
    "  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mul.wide.u32 %rd5, %r1, %r2;\n"
    "  cvt.u64.u32 %rd6, %r3;\n"
    "  add.s64 %rd7, %rd5, %rd6;\n"
    "  mov.u32 %r4, %nctaid.x;\n"
    "  mul.wide.u32 %rd8, %r4, %r2;\n"
    "  mov.u32 %r5, 0;\n"
    "  setp.ge.u64 %p1, %rd7, %rd3;\n"
    "  @%p1 bra CHECK;\n"
    "WORDS:\n"
    "  shl.b64 %rd9, %rd7, 2;\n"
    "  add.s64 %rd10, %rd1, %rd9;\n"
    "  add.s64 %rd11, %rd2, %rd9;\n"
    "  ld.global.u32 %r6, [%rd10];\n"
    "  ld.global.u32 %r7, [%rd11];\n"
    "  xor.b32 %r8, %r6, %r7;\n"
    "  or.b32 %r5, %r5, %r8;\n"
    "  add.s64 %rd7, %rd7, %rd8;\n"
    "  setp.lt.u64 %p2, %rd7, %rd3;\n"
    "  @%p2 bra WORDS;\n"
    "CHECK:\n"
    "  setp.eq.u32 %p1, %r5, 0;\n"
    "  @%p1 bra SAME;\n"
    "  mov.u32 %r9, 1;\n"
    "  st.global.u32 [%rd4], %r9;\n"
    "SAME:\n"
    "  ret;\n"
    "}\n";

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
    if (gm_prof.flush_mod) {
        gm_prof_cuModuleUnload(gm_prof.flush_mod);
        gm_prof.flush_mod = NULL;
        gm_prof.flush_fn = gm_prof.differs_fn = NULL;
    }
    gm_device_free(gm_prof.flush_buf, gm_prof.flush_size);
    gm_device_free(gm_prof.flush_sink, 256);
    gm_device_free(gm_prof.scratch, gm_prof.scratch_size);
    gm_prof.flush_buf = gm_prof.flush_sink = gm_prof.scratch = NULL;
    gm_prof.flush_size = gm_prof.scratch_size = 0;
    PyMem_Free(gm_prof.avail);
    PyMem_Free(gm_prof.config);
    PyMem_Free(gm_prof.counter_data);
    PyMem_Free(gm_prof.values);
    gm_prof.avail = gm_prof.config = gm_prof.counter_data = NULL;
    gm_prof.values = NULL;
    gm_prof.config_size = gm_prof.counter_data_size = gm_prof.counter_data_cap = 0;
    gm_prof.image_ranges = 0;
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
    gm_profiling = 0;
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

static int setup_flush(void)
{
    int l2 = 0, sms = 0;
    CUresult r;
    GM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, gm_prof.device));
    GM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gm_prof.device));
    /* Four times L2 (each half of a partitioned L2 may hold its own copy),
     * at least 8 MiB; a multiple of 16 bytes. */
    gm_prof.flush_size = ((size_t)(l2 > 0 ? l2 : 0) * 4 + 15) & ~(size_t)15;
    if (gm_prof.flush_size < (8u << 20))
        gm_prof.flush_size = 8u << 20;
    gm_prof.flush_grid = (unsigned int)(sms > 0 ? sms : 1) * 4;
    if (gm_device_alloc(gm_prof.flush_size, &gm_prof.flush_buf) < 0) {
        gm_prof.flush_size = 0;
        return -1;
    }
    if (gm_device_alloc(256, &gm_prof.flush_sink) < 0)
        return -1;
    if ((r = gm_prof_cuModuleLoadData(&gm_prof.flush_mod, gm_flush_ptx)) != CUDA_SUCCESS) {
        gm_prof.flush_mod = NULL;
        return gm_prof_driver_error(r, "cuModuleLoadData(L2 flush kernel)");
    }
    r = gm_prof_cuModuleGetFunction(&gm_prof.flush_fn, gm_prof.flush_mod, "gm_l2_flush");
    if (r != CUDA_SUCCESS)
        return gm_prof_driver_error(r, "cuModuleGetFunction(gm_l2_flush)");
    r = gm_prof_cuModuleGetFunction(&gm_prof.differs_fn, gm_prof.flush_mod, "gm_differs");
    if (r != CUDA_SUCCESS)
        return gm_prof_driver_error(r, "cuModuleGetFunction(gm_differs)");
    return 0;
fail:
    return -1;
}

int gm_prof_flush_l2(void)
{
    long long n4 = (long long)(gm_prof.flush_size / 16);
    void *args[] = {&gm_prof.flush_buf, &n4, &gm_prof.flush_sink};
    CUresult r = gm_prof_cuLaunchKernel(gm_prof.flush_fn, gm_prof.flush_grid, 1, 1, 512, 1, 1, 0,
                                        NULL, args, NULL);
    if (r != CUDA_SUCCESS)
        return gm_prof_driver_error(r, "cuLaunchKernel(gm_l2_flush)");
    return 0;
}

/* ---- _profile_begin, _profile_end, _profile_state ------------------------ */
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
    if (gm_profiling || gm_prof.host || gm_prof.range) {
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
    gm_prof_passes_run = 0;
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
    /* Start: every launch from now on goes through gm_profile_launch. */
    gm_profiling = 1;
    gm_launch_set_hook(gm_profile_launch);
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
    gm_profiling = 0;
    gm_launch_set_hook(NULL);
    Py_RETURN_NONE;
}

/* {names[i]: ms[i] for i < n}, a new dict. */
static PyObject *ms_dict(const char *const *names, const double *ms, int n)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < n; i++) {
        PyObject *v = PyFloat_FromDouble(ms[i]);
        if (v == NULL || PyDict_SetItemString(d, names[i], v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* _profile_state(): what a session holds now (for tests). */
PyObject *gm_prof_state(PyObject *self, PyObject *unused)
{
    PyObject *t = ms_dict(gm_phase_names, gm_prof_phase_ms, T_N);
    if (t == NULL)
        return NULL;
    PyObject *u = ms_dict(gm_setup_names, gm_prof_setup_ms, U_N);
    if (u == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return Py_BuildValue(
        "{s:i,s:O,s:O,s:n,s:n,s:O,s:L,s:N,s:L,s:i,s:n,s:N,s:n,s:n,s:n}", "profiling", gm_profiling,
        "range_profiler", gm_prof.range ? Py_True : Py_False, "host_object",
        gm_prof.host ? Py_True : Py_False, "scratch_bytes", (Py_ssize_t)gm_prof.scratch_size,
        "flush_bytes", (Py_ssize_t)gm_prof.flush_size, "library_loaded",
        gm_prof_cupti_lib ? Py_True : Py_False, "launches", gm_prof.launches, "timing_ms", t,
        "passes_run", gm_prof_passes_run, "batch_open", gm_prof.session_open, "pending",
        gm_prof.pending ? PyList_GET_SIZE(gm_prof.pending) : (Py_ssize_t)0, "setup_ms", u,
        "replay_bytes", (Py_ssize_t)(gm_prof.arena_size + gm_prof.sink_size), "recorded",
        (Py_ssize_t)gm_prof.n_recs, "replay_cap_bytes", (Py_ssize_t)gm_prof.arena_cap);
}

/* ---- one profiled launch ------------------------------------------------- */
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

static int copy_inout(const gm_launch_info *info, int to_scratch)
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
static int ensure_scratch(const gm_launch_info *info, size_t *need)
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

/* A fresh counter data image and pass 0, for `ranges` (<= gm_prof.max_ranges)
 * ranges per pass.  A Start costs ~1.4 ms more per range it is configured
 * for (H100), so a short batch is configured for what it holds. */
int gm_prof_configure_pass0(size_t ranges)
{
    if (ranges < 1 || ranges > gm_prof.max_ranges)
        ranges = gm_prof.max_ranges;
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
    return 0;
fail:
    return -1;
}

/* After a failed profiled launch: pop the open range, stop the session (an
 * open batch's launches get NaN), restore the in-place buffers, keep the
 * first error. */
static void close_after_failure(const gm_launch_info *info, int pushed, int started, int snap)
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
    if (snap && copy_inout(info, 0) < 0)
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
    gm_dims dims = {{0, 0, 0}, {0, 0, 0}, 0};
    cudaError_t err = variant->launch(params, &dims, 0);
    if (err != cudaSuccess) {
        char msg[200];
        snprintf(msg, sizeof msg, "launching %s (%s)", name, what);
        gm_set_cuda_error(err, msg);
        goto fail;
    }
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

/* ---- batches of one-pass launches ---------------------------------------- */
/* Close the open batch: stop, decode, evaluate every range into its dict.
 * 0, or -1 with an exception (the batch's dicts then hold NaN). */
static int batch_finish(void)
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
    if (ensure_scratch(info, &need) < 0)
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
        if (copy_inout(info, 1) < 0)
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
    if (snap && copy_inout(info, 0) < 0)
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
    if ((size_t)PyList_GET_SIZE(gm_prof.pending) >= gm_prof.max_ranges && batch_finish() < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;

fail:
    /* Close the batch (its earlier launches get NaN), restore the buffers,
     * keep the first error. */
    close_after_failure(info, pushed, 0, snap);
    return NULL;
}

/* _profile_sync(): decode the open batch now, so every record so far has its values. */
PyObject *gm_prof_sync(PyObject *self, PyObject *unused)
{
    if (gm_profiling && (batch_finish() < 0 || gm_prof_block_finish() < 0))
        return NULL;
    Py_RETURN_NONE;
}

/* ---- the launch hook ----------------------------------------------------- */
/* Replay one launch in a session of its own until CUPTI has every pass
 * (user replay: the in-place buffers restored and L2 flushed before each
 * pass); *passes: how many ran.  0, or -1 with an exception, the launch
 * closed and its buffers restored. */
static int run_passes(const gm_launch_info *info, const void *params, const char *range_name,
                      int snap, size_t *passes)
{
    int started = 0, pushed = 0;
    size_t pass = 0;
    T_BEGIN();
    for (;;) {
        if (gm_prof.replay == CUPTI_UserReplay) {
            if (pass > 0 && snap && copy_inout(info, 0) < 0)
                goto fail;
            T_MARK(T_RESTORE);
            if (gm_prof_flush_l2() < 0 || gm_prof_sync_device("flushing L2 before a profiling pass") < 0)
                goto fail;
            T_MARK(T_FLUSH);
        }
        CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        st.pRangeProfilerObject = gm_prof.range;
        GM_CUPTI(cuptiRangeProfilerStart, &st);
        started = 1;
        T_MARK(T_START);
        char what[64];
        snprintf(what, sizeof what, "running profiling pass %zu", pass);
        if (gm_prof_launch_in_range(info->variant, params, range_name, gm_prof.replay == CUPTI_UserReplay, &pushed,
                            what) < 0)
            goto fail;
        gm_t_ = gm_prof_now_ms();
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
                                               pass, gm_prof.passes, range_name));
            goto fail;
        }
    }
    *passes = pass;
    return 0;
fail:
    /* Close what this launch opened, restore its buffers, keep the first error. */
    close_after_failure(info, pushed, started, snap);
    return -1;
}

/* The launch hook: the metrics of one launch (a new dict; for a batched
 * one-pass set, filled when the batch is decoded). */
static PyObject *gm_profile_launch(const gm_launch_info *info, const void *params)
{
    int snap = 0;
    char range_name[128];
    if (!gm_profiling || gm_prof.range == NULL || gm_prof.host == NULL)
        return gm_prof_error("cupti", NULL, 0,
                             PyUnicode_FromString("internal: no profiling session is active"));
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
    if (ensure_scratch(info, &need) < 0)
        return NULL;
    if (need) {
        if (copy_inout(info, 1) < 0)
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
    if (run_passes(info, params, range_name, snap, &pass) < 0)
        return NULL;
    gm_t_ = gm_prof_now_ms();
    if (snap && copy_inout(info, 0) < 0)
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
    close_after_failure(info, 0, 0, snap);
    return NULL;
}
