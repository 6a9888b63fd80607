/* profile.c -- hardware counters read inside the process through CUPTI's
 * Range Profiler (CUDA 12.6+ API), around gpumem's own launches.
 *
 * CUPTI is loaded at run time with dlopen, so gpumem imports and times
 * kernels where it is missing; every failure becomes gpumem.ProfilerError
 * saying which and how to fix it.
 *
 * One gpumem.profile() block = one session:
 *   begin   initialize CUPTI, chip name, counter availability, host object,
 *           config image (the metrics), counter data image for one range;
 *           everything here is re-used by every launch of the block.
 *   launch  gm_profile_launch(): one user range per launch, user replay --
 *           gpumem replays the launch itself once per pass, restoring the
 *           launch's in-place buffers (info->inout) between passes and after
 *           the last, and flushing L2 before each pass as `ncu` does by
 *           default; then decode and evaluate the metrics.
 *           A one-pass metric set is read in batches instead: one Start for
 *           up to GM_BATCH_RANGES (16) launches, each a user range (the L2 flush
 *           runs between ranges, not counted); the metric dicts handed out
 *           are filled at decode time -- batch full, _profile_sync() (which
 *           Profile.records and gpumem.last_record() call), block end.
 *   end     disable the range profiler, deinitialize the host object, free
 *           the images and scratch buffers: no state is left behind.
 * Kernel replay (CUPTI saves and restores device memory itself) is kept as
 * replay="kernel".  Measured on an H100 (vec_add, 16 launches per block):
 * both cost about 12 ms per pass, set by CUPTI itself -- in user replay
 * cuptiRangeProfilerStart reprograms the counters for each pass (10-13 ms),
 * in kernel replay the launch does the same inside (plus ~9 ms Start);
 * 2 passes: 34 ms (user) vs 34-39 ms (kernel) per launch, 6 passes: 103-105
 * vs 103-108 ms.  User replay is the default: never slower, and it lets
 * gpumem start each pass with a cold L2 as ncu does, so DRAM and L2 counters
 * agree with ncu (kernel replay does not flush).  _profile_state()
 * ["timing_ms"] shows where the time of a block went.
 */
#include "gm.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
/* cupti_profiler_host.h includes the C++ header <string> by mistake; the
 * build puts an empty csrc/cupti_c/string on the include path for C. */
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

static int gm_profiling = 0;
static PyObject *gm_profile_launch(const gm_launch_info *info, const void *params);
static PyObject *gm_ProfilerError;

/* Where the time of profiled launches goes (ms, summed over the block);
 * gpumem._core._profile_state()["timing_ms"]. */
enum { T_CONFIG, T_RESTORE, T_FLUSH, T_START, T_PUSH, T_LAUNCH, T_POP, T_STOP, T_DECODE,
       T_EVALUATE, T_N };
static const char *const gm_phase_names[T_N] = {"config", "restore", "flush", "start", "push",
                                                "launch", "pop", "stop", "decode", "evaluate"};
static double gm_phase_ms[T_N];
/* Where a block's set-up and tear-down go (ms, last block);
 * gpumem._core._profile_state()["setup_ms"]. */
enum { U_ENABLE, U_AVAILABILITY, U_HOST, U_CONFIG, U_COUNTER_DATA, U_FLUSH_SETUP, U_TEARDOWN,
       U_N };
static const char *const gm_setup_names[U_N] = {"enable", "availability", "host", "config",
                                                "counter_data", "flush_setup", "teardown"};
static double gm_setup_ms[U_N];
static long long gm_passes_run;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
#define T_BEGIN() double gm_t_ = now_ms()
#define T_MARK_IN(arr, ph)                                                     \
    do {                                                                       \
        double gm_t2_ = now_ms();                                              \
        (arr)[ph] += gm_t2_ - gm_t_;                                           \
        gm_t_ = gm_t2_;                                                        \
    } while (0)
#define T_MARK(ph) T_MARK_IN(gm_phase_ms, ph)

/* ---- CUPTI entry points, resolved with dlsym -------------------------------- */
#define GM_CUPTI_FUNCS(X)                                                          \
    X(cuptiProfilerInitialize, CUpti_Profiler_Initialize_Params)                   \
    X(cuptiDeviceGetChipName, CUpti_Device_GetChipName_Params)                     \
    X(cuptiProfilerGetCounterAvailability, CUpti_Profiler_GetCounterAvailability_Params) \
    X(cuptiRangeProfilerEnable, CUpti_RangeProfiler_Enable_Params)                 \
    X(cuptiRangeProfilerDisable, CUpti_RangeProfiler_Disable_Params)               \
    X(cuptiRangeProfilerSetConfig, CUpti_RangeProfiler_SetConfig_Params)           \
    X(cuptiRangeProfilerStart, CUpti_RangeProfiler_Start_Params)                   \
    X(cuptiRangeProfilerStop, CUpti_RangeProfiler_Stop_Params)                     \
    X(cuptiRangeProfilerPushRange, CUpti_RangeProfiler_PushRange_Params)           \
    X(cuptiRangeProfilerPopRange, CUpti_RangeProfiler_PopRange_Params)             \
    X(cuptiRangeProfilerDecodeData, CUpti_RangeProfiler_DecodeData_Params)         \
    X(cuptiRangeProfilerGetCounterDataSize, CUpti_RangeProfiler_GetCounterDataSize_Params) \
    X(cuptiRangeProfilerCounterDataImageInitialize,                                \
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params)                      \
    X(cuptiRangeProfilerGetCounterDataInfo, CUpti_RangeProfiler_GetCounterDataInfo_Params) \
    X(cuptiProfilerHostInitialize, CUpti_Profiler_Host_Initialize_Params)          \
    X(cuptiProfilerHostDeinitialize, CUpti_Profiler_Host_Deinitialize_Params)      \
    X(cuptiProfilerHostConfigAddMetrics, CUpti_Profiler_Host_ConfigAddMetrics_Params) \
    X(cuptiProfilerHostGetConfigImageSize, CUpti_Profiler_Host_GetConfigImageSize_Params) \
    X(cuptiProfilerHostGetConfigImage, CUpti_Profiler_Host_GetConfigImage_Params)  \
    X(cuptiProfilerHostGetNumOfPasses, CUpti_Profiler_Host_GetNumOfPasses_Params)  \
    X(cuptiProfilerHostEvaluateToGpuValues, CUpti_Profiler_Host_EvaluateToGpuValues_Params)

#define GM_DECLARE(name, type) static CUptiResult (*p_##name)(type *);
GM_CUPTI_FUNCS(GM_DECLARE)
#undef GM_DECLARE
static CUptiResult (*p_cuptiGetResultString)(CUptiResult, const char **);

static void *gm_cupti_lib = NULL;
static char gm_cupti_path[1024];
static int gm_cupti_initialized = 0;
/* The counter availability image of the last context profiled (host memory). */
static uint8_t *gm_avail_cache = NULL;
static size_t gm_avail_size = 0;
static CUcontext gm_avail_ctx = NULL;
static int gm_avail_device = -1;

/* ---- driver entry points (the extension links only the static runtime) ------ */
static CUresult (*p_cuCtxGetCurrent)(CUcontext *);
static CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*p_cuModuleUnload)(CUmodule);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int, unsigned int,
                                    CUstream, void **, void **);

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
    "}\n";

/* ---- the session of one gpumem.profile() block ------------------------------ */
typedef struct {
    char *name;  /* the name the user asked for (dict key) */
    int num;     /* index into metric names */
    int den;     /* -1; k >= 0: value = num / metric k; -2 - k: value = num - metric k */
} gm_output;

static struct {
    int replay;                        /* CUPTI_UserReplay or CUPTI_KernelReplay */
    CUpti_RangeProfiler_Object *range; /* enabled range profiler */
    CUpti_Profiler_Host_Object *host;
    char chip[64];
    int device;
    uint8_t *avail;
    uint8_t *config;
    size_t config_size;
    uint8_t *counter_data;
    size_t counter_data_size;
    size_t passes;
    char **names;                      /* metric names given to CUPTI */
    const char **cnames;
    size_t n_names;
    double *values;
    gm_output *outputs;
    size_t n_outputs;
    void *scratch;                     /* snapshot of in-place buffers */
    size_t scratch_size;
    void *flush_buf;                   /* L2 flush: read-only buffer */
    size_t flush_size;
    void *flush_sink;
    CUmodule flush_mod;
    CUfunction flush_fn;
    unsigned int flush_grid;
    long long launches;
    double last_passes_run;
    /* Batched ranges (user replay, one pass): one Start for up to max_ranges
     * launches, a user range around each; the metric dicts handed out are
     * filled when the batch is decoded (full, _profile_sync, block end). */
    int batched;
    size_t max_ranges;
    int session_open;
    PyObject *pending;                 /* list of the dicts waiting for values */
} S;

/* Ranges per batch (GPUMEM_PROFILE_BATCH overrides).  A Start costs more the
 * more ranges it is configured for.  Measured on an H100, 64 read_offset
 * launches, whole block: a hardware-counter set (gld_transactions) 1791 ms
 * with 1 range per Start, 455 with 8, 375 with 16, 354 with 32, 344 with 64,
 * 414 with 128; an instrumented set (gld/gst_efficiency) 351-474 ms at every
 * size, best at 8-16. */
#define GM_BATCH_RANGES 16

static const char *cupti_name(CUptiResult r)
{
    const char *s = NULL;
    if (p_cuptiGetResultString == NULL || p_cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        return "CUPTI error";
    return s;
}

/* ProfilerError(message) with .reason (library, permission, unsupported,
 * busy, metric, cupti), .call and .code. */
static PyObject *profiler_error(const char *reason, const char *call, long code, PyObject *msg)
{
    if (msg == NULL)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(gm_ProfilerError, msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return NULL;
    gm_set_attr(exc, "reason", PyUnicode_FromString(reason));
    gm_set_attr(exc, "call", call ? PyUnicode_FromString(call) : Py_NewRef(Py_None));
    gm_set_attr(exc, "code", PyLong_FromLong(code));
    PyErr_SetObject(gm_ProfilerError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* A failed CUPTI call as ProfilerError with what to do about it; returns -1. */
static int set_cupti_error(CUptiResult r, const char *call)
{
    const char *reason = "cupti", *hint = "";
    switch ((int)r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        reason = "permission";
        hint = " -- GPU performance counters are restricted to administrators on this machine. "
               "Run Python as root/administrator, or let every user read them: add "
               "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to a file in "
               "/etc/modprobe.d/, rebuild the initramfs and reboot (Windows: NVIDIA Control "
               "Panel > Developer > Manage GPU Performance Counters > allow all users); see "
               "https://developer.nvidia.com/ERR_NVGPUCTRPERM";
        break;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        reason = "unsupported";
        hint = " -- CUPTI's range profiler cannot read counters on this GPU or setup (it needs "
               "a Turing (sm_75) or newer GPU, not a MIG slice, vGPU without profiling, "
               "confidential computing or WSL); timings still work";
        break;
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        reason = "busy";
        hint = " -- another profiler (ncu, nsys or another CUPTI client) already uses this "
               "process's counters; run without it";
        break;
    case CUPTI_ERROR_INVALID_METRIC_NAME:
        reason = "metric";
        break;
    default:
        break;
    }
    profiler_error(reason, call, (long)r,
                   PyUnicode_FromFormat("%s failed: %s (code %d)%s", call, cupti_name(r), (int)r,
                                        hint));
    return -1;
}

#define GM_CUPTI(fn, params)                                                   \
    do {                                                                       \
        CUptiResult gm_r_ = p_##fn(params);                                    \
        if (gm_r_ != CUPTI_SUCCESS) {                                          \
            set_cupti_error(gm_r_, #fn);                                       \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* ---- loading -------------------------------------------------------------- */
static int resolve_all(void *lib, const char **missing)
{
#define GM_RESOLVE(name, type)                                                 \
    *(void **)(&p_##name) = dlsym(lib, #name);                                 \
    if (p_##name == NULL) {                                                    \
        *missing = #name;                                                      \
        return -1;                                                             \
    }
    GM_CUPTI_FUNCS(GM_RESOLVE)
    GM_RESOLVE(cuptiGetResultString, void)
#undef GM_RESOLVE
    return 0;
}

/* Load libcupti: from each directory of `dirs` (libcupti.so.13, then
 * libcupti.so), then from the loader's path.  0, or -1 with ProfilerError. */
static int load_cupti(PyObject *dirs)
{
    if (gm_cupti_lib != NULL)
        return 0;
    char tried[2048] = "";
    size_t pos = 0;
    const char *missing = NULL;
    static const char *const files[] = {"libcupti.so.13", "libcupti.so"};
    Py_ssize_t nd = dirs ? PySequence_Size(dirs) : 0;
    if (nd < 0)
        return -1;
    for (Py_ssize_t i = 0; i <= nd; i++) {
        const char *dir = NULL;
        PyObject *d = NULL;
        if (i < nd) {
            d = PySequence_GetItem(dirs, i);
            if (d == NULL)
                return -1;
            if (!PyUnicode_Check(d)) {
                Py_DECREF(d);
                continue;
            }
            dir = PyUnicode_AsUTF8(d);
            if (dir == NULL) {
                Py_DECREF(d);
                return -1;
            }
        }
        for (int f = 0; f < 2; f++) {
            char path[1024];
            if (dir)
                snprintf(path, sizeof path, "%s/%s", dir, files[f]);
            else
                snprintf(path, sizeof path, "%s", files[f]);
            void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (lib == NULL)
                continue;
            if (resolve_all(lib, &missing) == 0) {
                gm_cupti_lib = lib;
                if (dlinfo(lib, RTLD_DI_ORIGIN, gm_cupti_path) == 0 && gm_cupti_path[0]) {
                    size_t len = strlen(gm_cupti_path);
                    snprintf(gm_cupti_path + len, sizeof gm_cupti_path - len, "/%s", files[f]);
                } else {
                    snprintf(gm_cupti_path, sizeof gm_cupti_path, "%s", path);
                }
                Py_XDECREF(d);
                return 0;
            }
            if (pos < sizeof tried)
                pos += (size_t)snprintf(tried + pos, sizeof tried - pos,
                                        "%s%s lacks %s (CUPTI older than 12.6)", pos ? "; " : "",
                                        path, missing);
            dlclose(lib);
        }
        Py_XDECREF(d);
    }
    profiler_error("library", NULL, 0,
                   PyUnicode_FromFormat(
                       "CUPTI (libcupti.so.13) was not found%s%s -- install it with "
                       "'pip install nvidia-cuda-cupti' or the CUDA toolkit (it ships "
                       "extras/CUPTI/lib64), or set CUDA_HOME to a toolkit that has it; "
                       "timings work without it",
                       pos ? ": " : "", tried));
    return -1;
}

static int load_driver_entry_points(void)
{
    if (p_cuLaunchKernel != NULL)
        return 0;
    struct {
        const char *name;
        void **fp;
    } want[] = {
        {"cuCtxGetCurrent", (void **)&p_cuCtxGetCurrent},
        {"cuModuleLoadData", (void **)&p_cuModuleLoadData},
        {"cuModuleUnload", (void **)&p_cuModuleUnload},
        {"cuModuleGetFunction", (void **)&p_cuModuleGetFunction},
        {"cuLaunchKernel", (void **)&p_cuLaunchKernel},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
        cudaError_t err =
            cudaGetDriverEntryPointByVersion(want[i].name, want[i].fp, 12000, cudaEnableDefault, &q);
        if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || *want[i].fp == NULL) {
            char what[128];
            snprintf(what, sizeof what, "cudaGetDriverEntryPointByVersion(\"%s\")", want[i].name);
            if (err == cudaSuccess)
                err = cudaErrorSymbolNotFound;
            gm_set_cuda_error(err, what);
            p_cuLaunchKernel = NULL;
            return -1;
        }
    }
    return 0;
}

static int driver_error(CUresult r, const char *call)
{
    char what[160];
    snprintf(what, sizeof what, "%s (driver error %d)", call, (int)r);
    return gm_set_cuda_error(cudaErrorUnknown, what);
}

/* ---- session set-up and tear-down ------------------------------------------ */
static void fill_pending_nan(void);

static void teardown(void)
{
    if (S.session_open && S.range) {
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = S.range;
        p_cuptiRangeProfilerStop(&sp);
    }
    S.session_open = 0;
    if (S.pending) {
        fill_pending_nan();
        Py_CLEAR(S.pending);
    }
    S.batched = 0;
    S.max_ranges = 0;
    if (S.host) {
        CUpti_Profiler_Host_Deinitialize_Params p = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        p.pHostObject = S.host;
        p_cuptiProfilerHostDeinitialize(&p);
        S.host = NULL;
    }
    if (S.range) {
        CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
        p.pRangeProfilerObject = S.range;
        p_cuptiRangeProfilerDisable(&p);
        S.range = NULL;
    }
    if (S.flush_mod) {
        p_cuModuleUnload(S.flush_mod);
        S.flush_mod = NULL;
        S.flush_fn = NULL;
    }
    gm_device_free(S.flush_buf, S.flush_size);
    gm_device_free(S.flush_sink, 256);
    gm_device_free(S.scratch, S.scratch_size);
    S.flush_buf = S.flush_sink = S.scratch = NULL;
    S.flush_size = S.scratch_size = 0;
    PyMem_Free(S.avail);
    PyMem_Free(S.config);
    PyMem_Free(S.counter_data);
    PyMem_Free(S.values);
    S.avail = S.config = S.counter_data = NULL;
    S.values = NULL;
    S.config_size = S.counter_data_size = 0;
    for (size_t i = 0; i < S.n_names; i++)
        PyMem_Free(S.names[i]);
    PyMem_Free(S.names);
    PyMem_Free(S.cnames);
    S.names = NULL;
    S.cnames = NULL;
    S.n_names = 0;
    for (size_t i = 0; i < S.n_outputs; i++)
        PyMem_Free(S.outputs[i].name);
    PyMem_Free(S.outputs);
    S.outputs = NULL;
    S.n_outputs = 0;
    S.passes = 0;
    S.launches = 0;
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
    for (size_t i = 0; i < S.n_names; i++) {
        CUpti_Profiler_Host_Initialize_Params hi = {
            CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        hi.pChipName = S.chip;
        hi.pCounterAvailabilityImage = S.avail;
        if (p_cuptiProfilerHostInitialize(&hi) != CUPTI_SUCCESS)
            return;
        CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
            CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        am.pHostObject = hi.pHostObject;
        am.ppMetricNames = &S.cnames[i];
        am.numMetrics = 1;
        CUptiResult r = p_cuptiProfilerHostConfigAddMetrics(&am);
        CUpti_Profiler_Host_Deinitialize_Params hd = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
        hd.pHostObject = hi.pHostObject;
        p_cuptiProfilerHostDeinitialize(&hd);
        if (r != CUPTI_SUCCESS) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "metric '%s' is not a metric CUPTI can collect on this GPU (%s): %s; "
                         "gpumem.metrics() lists the aliases, `ncu --query-metrics` the raw "
                         "Nsight Compute names",
                         S.cnames[i], S.chip, cupti_name(r));
            return;
        }
    }
}

static int setup_flush(void)
{
    int l2 = 0, sms = 0;
    CUresult r;
    GM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, S.device));
    GM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, S.device));
    /* Four times L2 (each half of a partitioned L2 may hold its own copy),
     * at least 8 MiB; a multiple of 16 bytes. */
    S.flush_size = ((size_t)(l2 > 0 ? l2 : 0) * 4 + 15) & ~(size_t)15;
    if (S.flush_size < (8u << 20))
        S.flush_size = 8u << 20;
    S.flush_grid = (unsigned int)(sms > 0 ? sms : 1) * 4;
    if (gm_device_alloc(S.flush_size, &S.flush_buf) < 0) {
        S.flush_size = 0;
        return -1;
    }
    if (gm_device_alloc(256, &S.flush_sink) < 0)
        return -1;
    if ((r = p_cuModuleLoadData(&S.flush_mod, gm_flush_ptx)) != CUDA_SUCCESS) {
        S.flush_mod = NULL;
        return driver_error(r, "cuModuleLoadData(L2 flush kernel)");
    }
    if ((r = p_cuModuleGetFunction(&S.flush_fn, S.flush_mod, "gm_l2_flush")) != CUDA_SUCCESS)
        return driver_error(r, "cuModuleGetFunction(gm_l2_flush)");
    return 0;
fail:
    return -1;
}

static int flush_l2(void)
{
    long long n4 = (long long)(S.flush_size / 16);
    void *args[] = {&S.flush_buf, &n4, &S.flush_sink};
    CUresult r = p_cuLaunchKernel(S.flush_fn, S.flush_grid, 1, 1, 512, 1, 1, 0, NULL, args, NULL);
    if (r != CUDA_SUCCESS)
        return driver_error(r, "cuLaunchKernel(gm_l2_flush)");
    return 0;
}

/* _profile_begin(metric_names, outputs, replay, dirs) -> dict
 * outputs: [(name, num_index, den_index or -1)], keys of each launch's dict. */
static PyObject *profile_begin(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"metric_names", "outputs", "replay", "dirs", NULL};
    PyObject *names_obj, *outputs_obj, *dirs = NULL;
    const char *replay = "user";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|sO:_profile_begin", kwlist, &names_obj,
                                     &outputs_obj, &replay, &dirs))
        return NULL;
    if (gm_profiling || S.host || S.range) {
        return profiler_error("busy", NULL, 0,
                              PyUnicode_FromString("gpumem.profile() blocks do not nest: one "
                                                   "is already active"));
    }
    int replay_mode;
    if (strcmp(replay, "user") == 0)
        replay_mode = CUPTI_UserReplay;
    else if (strcmp(replay, "kernel") == 0)
        replay_mode = CUPTI_KernelReplay;
    else {
        PyErr_Format(PyExc_ValueError, "profile: replay='%s' is not allowed; use 'user' or 'kernel'",
                     replay);
        return NULL;
    }
    PyObject *names = PySequence_Fast(names_obj, "profile: metric names must be a list");
    if (names == NULL)
        return NULL;
    PyObject *outs = PySequence_Fast(outputs_obj, "profile: outputs must be a list");
    if (outs == NULL) {
        Py_DECREF(names);
        return NULL;
    }
    Py_ssize_t nn = PySequence_Fast_GET_SIZE(names), no = PySequence_Fast_GET_SIZE(outs);
    if (nn == 0 || no == 0) {
        Py_DECREF(names);
        Py_DECREF(outs);
        PyErr_SetString(PyExc_ValueError, "profile: no metrics to collect");
        return NULL;
    }
    if (gm_ensure_device() < 0) {
        Py_DECREF(names);
        Py_DECREF(outs);
        return NULL;
    }
    if (load_cupti(dirs) < 0 || load_driver_entry_points() < 0) {
        Py_DECREF(names);
        Py_DECREF(outs);
        return NULL;
    }

    memset(&S, 0, sizeof S);
    memset(gm_setup_ms, 0, sizeof gm_setup_ms);
    T_BEGIN();
    S.replay = replay_mode;
    memset(gm_phase_ms, 0, sizeof gm_phase_ms);
    gm_passes_run = 0;
    S.names = PyMem_Calloc((size_t)nn, sizeof(char *));
    S.cnames = PyMem_Calloc((size_t)nn, sizeof(char *));
    S.values = PyMem_Calloc((size_t)nn, sizeof(double));
    S.outputs = PyMem_Calloc((size_t)no, sizeof(gm_output));
    if (!S.names || !S.cnames || !S.values || !S.outputs) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < nn; i++) {
        const char *s;
        if (gm_arg_str(PySequence_Fast_GET_ITEM(names, i), "profile", "metric name", &s) < 0)
            goto fail;
        if ((S.names[i] = dup_str(s)) == NULL)
            goto fail;
        S.cnames[i] = S.names[i];
        S.n_names++;
    }
    for (Py_ssize_t i = 0; i < no; i++) {
        const char *s;
        int num, den;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(outs, i), "sii", &s, &num, &den))
            goto fail;
        if (num < 0 || num >= nn || den < -2 - (int)nn || den >= nn) {
            PyErr_SetString(PyExc_ValueError, "profile: output index out of range");
            goto fail;
        }
        if ((S.outputs[i].name = dup_str(s)) == NULL)
            goto fail;
        S.outputs[i].num = num;
        S.outputs[i].den = den;
        S.n_outputs++;
    }

    GM_CUDA(cudaGetDevice(&S.device));
    if (!gm_cupti_initialized) {
        CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        GM_CUPTI(cuptiProfilerInitialize, &ip);
        gm_cupti_initialized = 1;
    }
    {
        CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
        cn.deviceIndex = (size_t)S.device;
        GM_CUPTI(cuptiDeviceGetChipName, &cn);
        snprintf(S.chip, sizeof S.chip, "%s", cn.pChipName ? cn.pChipName : "?");
    }
    CUcontext ctx = NULL;
    {
        CUresult r = p_cuCtxGetCurrent(&ctx);
        if (r != CUDA_SUCCESS || ctx == NULL) {
            driver_error(r, "cuCtxGetCurrent");
            goto fail;
        }
    }
    {
        CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
        en.ctx = ctx;
        GM_CUPTI(cuptiRangeProfilerEnable, &en);
        S.range = en.pRangeProfilerObject;
    }
    T_MARK_IN(gm_setup_ms, U_ENABLE);
    if (gm_avail_cache == NULL || gm_avail_ctx != ctx || gm_avail_device != S.device) {
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
        CUptiResult r = p_cuptiProfilerGetCounterAvailability(&ca);
        if (r != CUPTI_SUCCESS) {
            PyMem_Free(img);
            set_cupti_error(r, "cuptiProfilerGetCounterAvailability");
            goto fail;
        }
        PyMem_Free(gm_avail_cache);
        gm_avail_cache = img;
        gm_avail_size = n;
        gm_avail_ctx = ctx;
        gm_avail_device = S.device;
    }
    S.avail = PyMem_Malloc(gm_avail_size);
    if (S.avail == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(S.avail, gm_avail_cache, gm_avail_size);
    T_MARK_IN(gm_setup_ms, U_AVAILABILITY);
    {
        CUpti_Profiler_Host_Initialize_Params hi = {
            CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        hi.pChipName = S.chip;
        hi.pCounterAvailabilityImage = S.avail;
        GM_CUPTI(cuptiProfilerHostInitialize, &hi);
        S.host = hi.pHostObject;
    }
    T_MARK_IN(gm_setup_ms, U_HOST);
    {
        CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
            CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        am.pHostObject = S.host;
        am.ppMetricNames = S.cnames;
        am.numMetrics = S.n_names;
        CUptiResult r = p_cuptiProfilerHostConfigAddMetrics(&am);
        if (r != CUPTI_SUCCESS) {
            set_cupti_error(r, "cuptiProfilerHostConfigAddMetrics");
            name_bad_metric();
            goto fail;
        }
    }
    {
        CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
            CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
        cs.pHostObject = S.host;
        GM_CUPTI(cuptiProfilerHostGetConfigImageSize, &cs);
        S.config_size = cs.configImageSize;
        S.config = PyMem_Calloc(S.config_size ? S.config_size : 1, 1);
        if (S.config == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        CUpti_Profiler_Host_GetConfigImage_Params ci = {
            CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
        ci.pHostObject = S.host;
        ci.configImageSize = S.config_size;
        ci.pConfigImage = S.config;
        GM_CUPTI(cuptiProfilerHostGetConfigImage, &ci);
        CUpti_Profiler_Host_GetNumOfPasses_Params np = {
            CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
        np.configImageSize = S.config_size;
        np.pConfigImage = S.config;
        GM_CUPTI(cuptiProfilerHostGetNumOfPasses, &np);
        S.passes = np.numOfPasses;
    }
    T_MARK_IN(gm_setup_ms, U_CONFIG);
    {
        CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
            CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        ds.pRangeProfilerObject = S.range;
        ds.pMetricNames = S.cnames;
        ds.numMetrics = S.n_names;
        S.batched = S.replay == CUPTI_UserReplay && S.passes == 1;
        S.max_ranges = 1; /* one launch = one range */
        if (S.batched) {
            const char *env = getenv("GPUMEM_PROFILE_BATCH");
            long v = env && *env ? strtol(env, NULL, 10) : GM_BATCH_RANGES;
            S.max_ranges = v < 1 ? 1 : v > 4096 ? 4096 : (size_t)v;
        }
        ds.maxNumOfRanges = S.max_ranges;
        ds.maxNumRangeTreeNodes = S.max_ranges;
        GM_CUPTI(cuptiRangeProfilerGetCounterDataSize, &ds);
        S.counter_data_size = ds.counterDataSize;
        S.counter_data = PyMem_Calloc(S.counter_data_size ? S.counter_data_size : 1, 1);
        if (S.counter_data == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    T_MARK_IN(gm_setup_ms, U_COUNTER_DATA);
    if (S.replay == CUPTI_UserReplay && setup_flush() < 0)
        goto fail;
    T_MARK_IN(gm_setup_ms, U_FLUSH_SETUP);
    if (S.batched && (S.pending = PyList_New(0)) == NULL)
        goto fail;
    Py_DECREF(names);
    Py_DECREF(outs);
    gm_profiling = 1;
    gm_launch_set_hook(gm_profile_launch);
    return Py_BuildValue("{s:s,s:n,s:s,s:s,s:n,s:n}", "chip", S.chip, "passes",
                         (Py_ssize_t)S.passes, "replay", replay, "library", gm_cupti_path,
                         "flush_bytes", (Py_ssize_t)S.flush_size, "ranges_per_start",
                         (Py_ssize_t)S.max_ranges);
fail:
    Py_DECREF(names);
    Py_DECREF(outs);
    {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        teardown();
        PyErr_Restore(et, ev, tb);
    }
    return NULL;
}

/* _profile_end(): leave nothing behind; safe to call at any time. */
static PyObject *profile_end(PyObject *self, PyObject *unused)
{
    T_BEGIN();
    if (gm_cupti_lib != NULL)
        teardown();
    T_MARK_IN(gm_setup_ms, U_TEARDOWN);
    gm_profiling = 0;
    gm_launch_set_hook(NULL);
    Py_RETURN_NONE;
}

/* _profile_state(): what a session holds now (for tests). */
static PyObject *profile_state(PyObject *self, PyObject *unused)
{
    PyObject *t = PyDict_New();
    for (int i = 0; t && i < T_N; i++) {
        PyObject *v = PyFloat_FromDouble(gm_phase_ms[i]);
        if (v == NULL || PyDict_SetItemString(t, gm_phase_names[i], v) < 0)
            Py_CLEAR(t);
        Py_XDECREF(v);
    }
    if (t == NULL)
        return NULL;
    PyObject *u = PyDict_New();
    for (int i = 0; u && i < U_N; i++) {
        PyObject *v = PyFloat_FromDouble(gm_setup_ms[i]);
        if (v == NULL || PyDict_SetItemString(u, gm_setup_names[i], v) < 0)
            Py_CLEAR(u);
        Py_XDECREF(v);
    }
    if (u == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:O,s:O,s:n,s:n,s:O,s:L,s:N,s:L,s:i,s:n,s:N}", "profiling", gm_profiling,
                         "range_profiler", S.range ? Py_True : Py_False, "host_object",
                         S.host ? Py_True : Py_False, "scratch_bytes", (Py_ssize_t)S.scratch_size,
                         "flush_bytes", (Py_ssize_t)S.flush_size, "library_loaded",
                         gm_cupti_lib ? Py_True : Py_False, "launches", S.launches, "timing_ms",
                         t, "passes_run", gm_passes_run, "batch_open", S.session_open,
                         "pending", S.pending ? PyList_GET_SIZE(S.pending) : (Py_ssize_t)0,
                         "setup_ms", u);
}

/* _profile_load(dirs, loader_path=True) -> path of the loaded libcupti. */
static PyObject *profile_load(PyObject *self, PyObject *args)
{
    PyObject *dirs;
    int loader_path = 1;
    if (!PyArg_ParseTuple(args, "O|p:_profile_load", &dirs, &loader_path))
        return NULL;
    if (!loader_path && gm_cupti_lib == NULL) {
        /* Only the listed directories (tests of the not-found path). */
        Py_ssize_t nd = PySequence_Size(dirs);
        if (nd < 0)
            return NULL;
        int found = 0;
        for (Py_ssize_t i = 0; i < nd && !found; i++) {
            PyObject *d = PySequence_GetItem(dirs, i);
            const char *s = d && PyUnicode_Check(d) ? PyUnicode_AsUTF8(d) : NULL;
            if (s) {
                char path[1024];
                snprintf(path, sizeof path, "%s/libcupti.so.13", s);
                found = access(path, R_OK) == 0;
                snprintf(path, sizeof path, "%s/libcupti.so", s);
                found = found || access(path, R_OK) == 0;
            }
            Py_XDECREF(d);
            if (PyErr_Occurred())
                return NULL;
        }
        if (!found)
            return profiler_error(
                "library", NULL, 0,
                PyUnicode_FromFormat("CUPTI (libcupti.so.13) was not found in %R -- install it "
                                     "with 'pip install nvidia-cuda-cupti' or the CUDA toolkit, "
                                     "or set CUDA_HOME; timings work without it",
                                     dirs));
    }
    if (load_cupti(dirs) < 0)
        return NULL;
    return PyUnicode_FromString(gm_cupti_path);
}

/* ---- one profiled launch ---------------------------------------------------- */
static int sync_device(const char *what)
{
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS
    err = cudaDeviceSynchronize();
    Py_END_ALLOW_THREADS
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
        char *s = (char *)S.scratch + off;
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
    if (*need > S.scratch_size) {
        gm_device_free(S.scratch, S.scratch_size);
        S.scratch = NULL;
        S.scratch_size = 0;
        if (gm_device_alloc(*need, &S.scratch) < 0)
            return -1;
        S.scratch_size = *need;
    }
    return 0;
}

/* A fresh counter data image and pass 0, for S.max_ranges ranges per pass. */
static int configure_pass0(void)
{
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = S.range;
    di.counterDataSize = S.counter_data_size;
    di.pCounterData = S.counter_data;
    GM_CUPTI(cuptiRangeProfilerCounterDataImageInitialize, &di);
    CUpti_RangeProfiler_SetConfig_Params sc = {CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = S.range;
    sc.configSize = S.config_size;
    sc.pConfig = S.config;
    sc.counterDataImageSize = S.counter_data_size;
    sc.pCounterDataImage = S.counter_data;
    sc.range = S.replay == CUPTI_UserReplay ? CUPTI_UserRange : CUPTI_AutoRange;
    sc.replayMode = S.replay;
    sc.maxRangesPerPass = S.max_ranges;
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
        pp.pRangeProfilerObject = S.range;
        p_cuptiRangeProfilerPopRange(&pp);
    }
    if (started || S.session_open) {
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = S.range;
        p_cuptiRangeProfilerStop(&sp);
        S.session_open = 0;
    }
    fill_pending_nan();
    (void)cudaDeviceSynchronize();
    if (snap && copy_inout(info, 0) < 0)
        PyErr_Clear();
    (void)cudaGetLastError();
    PyErr_Restore(et, ev, tb);
}

/* Push a user range (when user_range), launch, wait, pop: one profiled run.
 * *pushed says whether a range is still open when this fails. */
static int launch_in_range(const gm_launch_info *info, const void *params, const char *name,
                           int user_range, int *pushed, const char *what)
{
    T_BEGIN();
    if (user_range) {
        CUpti_RangeProfiler_PushRange_Params pr = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
        pr.pRangeProfilerObject = S.range;
        pr.pRangeName = name;
        GM_CUPTI(cuptiRangeProfilerPushRange, &pr);
        *pushed = 1;
        T_MARK(T_PUSH);
    }
    gm_dims dims = {{0, 0, 0}, {0, 0, 0}, 0};
    cudaError_t err = info->variant->launch(params, &dims, 0);
    if (err != cudaSuccess) {
        char msg[200];
        snprintf(msg, sizeof msg, "launching %s (%s)", name, what);
        gm_set_cuda_error(err, msg);
        goto fail;
    }
    if (sync_device(what) < 0)
        goto fail;
    T_MARK(T_LAUNCH);
    if (*pushed) {
        CUpti_RangeProfiler_PopRange_Params pp = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
        pp.pRangeProfilerObject = S.range;
        *pushed = 0;
        GM_CUPTI(cuptiRangeProfilerPopRange, &pp);
        T_MARK(T_POP);
    }
    return 0;
fail:
    return -1;
}

/* Decode the stopped session: how many ranges it holds (and dropped). */
static int decode_ranges(size_t *ranges, size_t *dropped)
{
    CUpti_RangeProfiler_DecodeData_Params dd = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = S.range;
    GM_CUPTI(cuptiRangeProfilerDecodeData, &dd);
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = S.counter_data;
    gi.counterDataImageSize = S.counter_data_size;
    GM_CUPTI(cuptiRangeProfilerGetCounterDataInfo, &gi);
    *ranges = gi.numTotalRanges;
    *dropped = dd.numOfRangeDropped;
    return 0;
fail:
    return -1;
}

/* The metric values of range k into S.values. */
static int evaluate_range(size_t k)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = S.host;
    ev.pCounterDataImage = S.counter_data;
    ev.counterDataImageSize = S.counter_data_size;
    ev.rangeIndex = k;
    ev.ppMetricNames = S.cnames;
    ev.numMetrics = S.n_names;
    ev.pMetricValues = S.values;
    GM_CUPTI(cuptiProfilerHostEvaluateToGpuValues, &ev);
    return 0;
fail:
    return -1;
}

/* Put the evaluated S.values of one range into dict d (derived ratios too). */
static int fill_values(PyObject *d)
{
    for (size_t i = 0; i < S.n_outputs; i++) {
        double v = S.values[S.outputs[i].num];
        if (S.outputs[i].den >= 0) {
            double den = S.values[S.outputs[i].den];
            v = den != 0.0 ? v / den : Py_NAN;
        } else if (S.outputs[i].den <= -2) {
            v -= S.values[-2 - S.outputs[i].den];
        }
        PyObject *f = PyFloat_FromDouble(v);
        if (f == NULL || PyDict_SetItemString(d, S.outputs[i].name, f) < 0) {
            Py_XDECREF(f);
            return -1;
        }
        Py_DECREF(f);
    }
    return 0;
}

/* A batch that cannot be decoded: its launches get NaN, never a stale value. */
static void fill_pending_nan(void)
{
    if (S.pending == NULL)
        return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(S.pending); k++) {
        PyObject *d = PyList_GET_ITEM(S.pending, k);
        for (size_t i = 0; i < S.n_outputs; i++) {
            PyObject *f = PyFloat_FromDouble(Py_NAN);
            if (f == NULL || PyDict_SetItemString(d, S.outputs[i].name, f) < 0)
                PyErr_Clear();
            Py_XDECREF(f);
        }
    }
    PyList_SetSlice(S.pending, 0, PyList_GET_SIZE(S.pending), NULL);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* Close the open batch: stop, decode, evaluate every range into its dict.
 * 0, or -1 with an exception (the batch's dicts then hold NaN). */
static int batch_finish(void)
{
    if (!S.batched || !S.session_open)
        return 0;
    T_BEGIN();
    CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = S.range;
    S.session_open = 0;
    GM_CUPTI(cuptiRangeProfilerStop, &sp);
    T_MARK(T_STOP);
    gm_passes_run++;
    if (!sp.isAllPassSubmitted) {
        profiler_error("cupti", "cuptiRangeProfilerStop", 0,
                       PyUnicode_FromString("CUPTI wants another pass for a one-pass metric set"));
        goto fail;
    }
    {
        size_t ranges, dropped;
        if (decode_ranges(&ranges, &dropped) < 0)
            goto fail;
        T_MARK(T_DECODE);
        Py_ssize_t want = PyList_GET_SIZE(S.pending);
        if ((Py_ssize_t)ranges != want || dropped > 0) {
            profiler_error("cupti", "cuptiRangeProfilerDecodeData", 0,
                           PyUnicode_FromFormat("CUPTI recorded %zu ranges (%zu dropped) for "
                                                "a batch of %zd launches",
                                                ranges, dropped, want));
            goto fail;
        }
        for (Py_ssize_t k = 0; k < want; k++)
            if (evaluate_range((size_t)k) < 0 || fill_values(PyList_GET_ITEM(S.pending, k)) < 0)
                goto fail;
        T_MARK(T_EVALUATE);
    }
    PyList_SetSlice(S.pending, 0, PyList_GET_SIZE(S.pending), NULL);
    return 0;
fail:
    fill_pending_nan();
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
    if (!S.session_open) {
        if (configure_pass0() < 0)
            goto fail;
        T_MARK(T_CONFIG);
        CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        st.pRangeProfilerObject = S.range;
        GM_CUPTI(cuptiRangeProfilerStart, &st);
        S.session_open = 1;
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
    if (flush_l2() < 0 || sync_device("flushing L2 before a profiled launch") < 0)
        goto fail;
    T_MARK(T_FLUSH);
    if (launch_in_range(info, params, range_name, 1, &pushed, "running a profiled launch") < 0)
        goto fail;
    gm_t_ = now_ms();
    if (snap && copy_inout(info, 0) < 0)
        goto fail;
    snap = 0;
    T_MARK(T_RESTORE);
    S.last_passes_run = 1.0;
    S.launches++;
    PyObject *d = PyDict_New();
    if (d == NULL || PyList_Append(S.pending, d) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    if ((size_t)PyList_GET_SIZE(S.pending) >= S.max_ranges && batch_finish() < 0) {
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
static PyObject *profile_sync(PyObject *self, PyObject *unused)
{
    if (gm_profiling && batch_finish() < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *gm_profile_launch(const gm_launch_info *info, const void *params)
{
    int started = 0, pushed = 0, snap = 0;
    char range_name[128];
    if (!gm_profiling || S.range == NULL || S.host == NULL)
        return profiler_error("cupti", NULL, 0,
                              PyUnicode_FromString("internal: no profiling session is active"));
    snprintf(range_name, sizeof range_name, "%s/%s", info->variant->family, info->variant->name);
    if (S.batched) {
        /* CUPTI merges ranges of the same name within a session: number them. */
        snprintf(range_name, sizeof range_name, "%s/%s #%lld", info->variant->family,
                 info->variant->name, S.launches);
        return profile_launch_batched(info, params, range_name);
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
    if (configure_pass0() < 0)
        goto fail;
    T_MARK(T_CONFIG);

    size_t pass = 0;
    for (;;) {
        if (S.replay == CUPTI_UserReplay) {
            if (pass > 0 && snap && copy_inout(info, 0) < 0)
                goto fail;
            T_MARK(T_RESTORE);
            if (flush_l2() < 0 || sync_device("flushing L2 before a profiling pass") < 0)
                goto fail;
            T_MARK(T_FLUSH);
        }
        CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        st.pRangeProfilerObject = S.range;
        GM_CUPTI(cuptiRangeProfilerStart, &st);
        started = 1;
        T_MARK(T_START);
        char what[64];
        snprintf(what, sizeof what, "running profiling pass %zu", pass);
        if (launch_in_range(info, params, range_name, S.replay == CUPTI_UserReplay, &pushed,
                            what) < 0)
            goto fail;
        gm_t_ = now_ms();
        CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
        sp.pRangeProfilerObject = S.range;
        started = 0;
        GM_CUPTI(cuptiRangeProfilerStop, &sp);
        T_MARK(T_STOP);
        pass++;
        gm_passes_run++;
        if (sp.isAllPassSubmitted)
            break;
        if (pass > S.passes + 2) {
            profiler_error("cupti", "cuptiRangeProfilerStop", 0,
                           PyUnicode_FromFormat("CUPTI still wants passes after %zu (expected "
                                                "%zu) for %s",
                                                pass, S.passes, range_name));
            goto fail;
        }
    }
    if (snap && copy_inout(info, 0) < 0)
        goto fail;
    snap = 0;
    S.last_passes_run = (double)pass;
    T_MARK(T_RESTORE);

    {
        size_t ranges, dropped;
        if (decode_ranges(&ranges, &dropped) < 0)
            return NULL;
        T_MARK(T_DECODE);
        if (ranges != 1 || dropped > 0)
            return profiler_error(
                "cupti", "cuptiRangeProfilerDecodeData", 0,
                PyUnicode_FromFormat("CUPTI recorded %zu ranges (%zu dropped) for %s; expected 1",
                                     ranges, dropped, range_name));
        if (evaluate_range(0) < 0)
            return NULL;
        T_MARK(T_EVALUATE);
    }
    S.launches++;

    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    if (fill_values(d) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;

fail:
    /* Close what this launch opened, restore its buffers, keep the first error. */
    close_after_failure(info, pushed, started, snap);
    return NULL;
}

/* ---- module ------------------------------------------------------------------ */
static PyMethodDef profile_methods[] = {
    {"_profile_begin", (PyCFunction)(void (*)(void))profile_begin, METH_VARARGS | METH_KEYWORDS,
     "_profile_begin(metric_names, outputs, replay='user', dirs=None): start a profiling "
     "session (use gpumem.profile())."},
    {"_profile_end", profile_end, METH_NOARGS, "End the profiling session; leaves no state."},
    {"_profile_sync", profile_sync, METH_NOARGS,
     "Decode the open batch of one-pass launches now (fills their metrics)."},
    {"_profile_state", profile_state, METH_NOARGS, "What the profiling session holds (dict)."},
    {"_profile_load", profile_load, METH_VARARGS,
     "_profile_load(dirs, loader_path=True): load libcupti; its path."},
    {NULL, NULL, 0, NULL},
};

int gm_profile_init(PyObject *module)
{
    gm_ProfilerError = PyErr_NewExceptionWithDoc(
        "gpumem.ProfilerError",
        "Hardware counters cannot be read: CUPTI missing, GPU unsupported, no permission or "
        "another profiler attached.  .reason says which (library, permission, unsupported, "
        "busy, metric, cupti); timings still work.",
        PyExc_RuntimeError, NULL);
    if (gm_ProfilerError == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "ProfilerError", gm_ProfilerError) < 0)
        return -1;
    return PyModule_AddFunctions(module, profile_methods);
}
