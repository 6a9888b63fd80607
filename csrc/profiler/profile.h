/* profile.h -- private declarations of the hardware-counter profiler, shared
 * by its units, in their layer order (gm.h; each calls only earlier ones):
 *   profile_cupti.c    loading CUPTI and the driver entry point, errors
 *   profile_state.c    the state of the open block, its timings, _profile_state()
 *   profile_eval.c     decoding ranges into metric values
 *   profile_pass.c     one profiled launch in a user range, the in-place
 *                      buffers' snapshot, the L2 flush, and the ONE pass loop
 *                      (Start, every range, Stop, until CUPTI has every pass)
 *                      that the per-launch path and block replay share
 *   profile_replay.c   block replay of several-pass sets (records, copies)
 *   profile_launch.c   the launch hook: batches, block records, per launch
 *   profile_session.c  a gpumem.profile() block: set-up and tear-down
 *   profile.c          the module part: _profile_* and ProfilerError
 * The profiler sits above launch.c: its set-up registers the hook
 * (gm_launch_set_hook) that gm_launch calls, and every kernel it runs -- the
 * replays, the L2 flush (measure.c's, through gm_flush_l2), the buffer
 * comparison -- goes through gm_launch as an internal launch.
 *
 * Hardware counters are read inside the process through CUPTI's Range
 * Profiler (CUDA 12.6+ API), around gpumem's own launches.
 *
 * CUPTI is loaded at run time with dlopen, so gpumem imports and times
 * kernels where it is missing; every failure becomes gpumem.ProfilerError
 * saying which and how to fix it.
 *
 * One gpumem.profile() block = one session:
 *   begin   initialize CUPTI, chip name, counter availability, host object,
 *           config image (the metrics), counter data image for one range;
 *           everything here is re-used by every launch of the block.
 *   launch  gm_prof_launch_hook() (profile_launch.c), by replay mode and passes:
 *           block, one pass: batches -- one Start for up to GM_BATCH_RANGES
 *             (16) launches, each profiled as it comes in a user range (the
 *             L2 flush runs between ranges, not counted);
 *           block, several passes: each launch recorded on copies of its
 *             buffers (profile_replay.c), up to GM_BLOCK_RANGES (64) replayed
 *             together, one Start per pass for all, L2 flushed and in-place
 *             copies restored before each range; a batch configured for more
 *             ranges than the one before it runs on a range profiler enabled
 *             afresh (on an H200 such a batch came back one range short);
 *           launch (and block for a launch that cannot be moved or does not
 *             fit the replay memory): one user range, gpumem replays the
 *             launch on the spot once per pass, restoring its in-place
 *             buffers (info->inout) between passes and after the last, and
 *             flushing L2 before each pass as `ncu` does by default (the
 *             same pass loop as block replay's, profile_pass.c);
 *           kernel: CUPTI's kernel replay, one launch per session.
 *           Batched dicts are handed out empty and filled at decode time --
 *           batch full, _profile_sync() (which Profile.records and
 *           gpumem.last_record() call), block end.
 *   end     disable the range profiler, deinitialize the host object, free
 *           the images and scratch buffers: no state is left behind.
 * Kernel replay (CUPTI saves and restores device memory itself) is kept as
 * replay="kernel".  Measured on an H100 (vec_add, 16 launches per block):
 * both cost about 12 ms per pass, set by CUPTI itself -- in user replay
 * cuptiRangeProfilerStart reprograms the counters for each pass (10-13 ms),
 * in kernel replay the launch does the same inside (plus ~9 ms Start);
 * 2 passes: 34 ms (user) vs 34-39 ms (kernel) per launch, 6 passes: 103-105
 * vs 103-108 ms.  That cost is per Start, so block replay pays it once per
 * pass and batch (measured: 64 read_offset launches, 2 passes, 0.35 s
 * against 1.8 s launch by launch; a Start costs ~10 ms plus ~1.4 ms per
 * range it is configured for).  User replay is the default: never slower, and it lets
 * gpumem start each pass with a cold L2 as ncu does, so DRAM and L2 counters
 * agree with ncu (kernel replay does not flush).  _profile_state()
 * ["timing_ms"] shows where the time of a block went.
 *
 * Everything these files share is named gm_prof_*.
 */
#ifndef GM_PROFILE_H
#define GM_PROFILE_H

#include "gm.h"

#include <time.h>

#include <cuda.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
/* cupti_profiler_host.h includes the C++ header <string> by mistake; the
 * build puts an empty csrc/profiler/cupti_c/string on the include path for C. */
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

/* ---- state and timing (profile_state.c) ---------------------------------- */
/* Where the time of profiled launches goes (ms, summed over the block);
 * gpumem._core._profile_state()["timing_ms"]. */
enum { T_CONFIG, T_RESTORE, T_FLUSH, T_START, T_PUSH, T_LAUNCH, T_POP, T_STOP, T_DECODE,
       T_EVALUATE, T_RECORD, T_N };
extern double gm_prof_phase_ms[T_N];
/* Where a block's set-up and tear-down go (ms, last block);
 * gpumem._core._profile_state()["setup_ms"]. */
enum { U_ENABLE, U_AVAILABILITY, U_HOST, U_CONFIG, U_COUNTER_DATA, U_FLUSH_SETUP, U_TEARDOWN,
       U_N };
extern double gm_prof_setup_ms[U_N];
extern long long gm_prof_passes_run; /* passes run in this block */
extern long long gm_prof_reenables;  /* range profiler objects made afresh in this block */
extern int gm_prof_active;           /* a block is open: the hook is set */
PyObject *gm_prof_state(PyObject *self, PyObject *unused); /* _profile_state() */

static inline double gm_prof_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
#define T_BEGIN() double gm_t_ = gm_prof_now_ms()
#define T_MARK_IN(arr, ph)                                                     \
    do {                                                                       \
        double gm_t2_ = gm_prof_now_ms();                                      \
        (arr)[ph] += gm_t2_ - gm_t_;                                           \
        gm_t_ = gm_t2_;                                                        \
    } while (0)
#define T_MARK(ph) T_MARK_IN(gm_prof_phase_ms, ph)

/* ---- CUPTI and driver entry points (profile_cupti.c) --------------------- */
/* gm_prof_<name>: CUPTI's <name>, resolved with dlsym by gm_prof_load_cupti. */
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

#define GM_DECLARE(name, type) extern CUptiResult (*gm_prof_##name)(type *);
GM_CUPTI_FUNCS(GM_DECLARE)
#undef GM_DECLARE
extern CUptiResult (*gm_prof_cuptiGetResultString)(CUptiResult, const char **);

/* The driver entry point (the extension links only the static runtime),
 * resolved by gm_prof_load_driver. */
extern CUresult (*gm_prof_cuCtxGetCurrent)(CUcontext *);

extern void *gm_prof_cupti_lib;       /* the loaded libcupti, or NULL */
extern char gm_prof_cupti_path[1024]; /* where it was loaded from */

/* Load libcupti: from each directory of `dirs` (libcupti.so.13, then
 * libcupti.so), then from the loader's path.  0, or -1 with ProfilerError. */
int gm_prof_load_cupti(PyObject *dirs);
/* Resolve the driver entry point above.  0, or -1 with CudaError. */
int gm_prof_load_driver(void);

/* ---- errors (profile_cupti.c; profile.c creates the type at import) ------ */
extern PyObject *gm_prof_ProfilerError; /* gpumem.ProfilerError (gpumem.Error) */

/* CUPTI's name for a result code. */
const char *gm_prof_cupti_name(CUptiResult r);
/* Raise ProfilerError(msg) with .reason (library, permission, unsupported,
 * busy, metric, cupti), .call and .code; steals msg (NULL: leave the error
 * set while making it).  Returns NULL. */
PyObject *gm_prof_error(const char *reason, const char *call, long code, PyObject *msg);
/* A failed CUPTI call as ProfilerError with what to do about it; returns -1. */
int gm_prof_cupti_error(CUptiResult r, const char *call);
/* A failed driver call as CudaError; returns -1. */
int gm_prof_driver_error(CUresult r, const char *call);

/* Call CUPTI's fn through its resolved pointer; on failure set the
 * ProfilerError and jump to the function's `fail:`. */
#define GM_CUPTI(fn, params)                                                   \
    do {                                                                       \
        CUptiResult gm_r_ = gm_prof_##fn(params);                              \
        if (gm_r_ != CUPTI_SUCCESS) {                                          \
            gm_prof_cupti_error(gm_r_, #fn);                                   \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* ---- the session of one gpumem.profile() block (its state: profile_state.c) */
typedef struct {
    char *name;  /* the name the user asked for (dict key) */
    int num;     /* index into metric names */
    int den;     /* -1; k >= 0: value = num / metric k; -2 - k: value = num - metric k */
} gm_prof_output;

/* gpumem.profile(replay=...) */
enum { GM_REPLAY_BLOCK, GM_REPLAY_LAUNCH, GM_REPLAY_KERNEL };

/* Block replay: a recorded launch (its params with its buffers moved to
 * copies), and a copy to make (a snapshot, or an in-place buffer's restore). */
typedef struct {
    const gm_variant *variant;
    _Alignas(16) unsigned char params[GM_PARAMS_MAX];
    size_t first_restore, n_restore;   /* into gm_prof.restores */
} gm_prof_record;

typedef struct {
    void *dst;
    const void *src;
    size_t nbytes;
} gm_prof_copy;

typedef struct {
    int mode;                          /* GM_REPLAY_* */
    int replay;                        /* CUPTI_UserReplay or CUPTI_KernelReplay */
    CUpti_RangeProfiler_Object *range; /* enabled range profiler */
    CUcontext ctx;                     /* the context it is enabled on */
    CUpti_Profiler_Host_Object *host;
    char chip[64];
    int device;
    uint8_t *avail;
    uint8_t *config;
    size_t config_size;
    uint8_t *counter_data;
    size_t counter_data_size;          /* of the image for image_ranges ranges */
    size_t counter_data_cap;           /* allocated: for max_ranges */
    size_t image_ranges;               /* of range's last GetCounterDataSize (0: none) */
    size_t configured_ranges;          /* range's last SetConfig (0: none since Enable) */
    size_t passes;
    char **names;                      /* metric names given to CUPTI */
    const char **cnames;
    size_t n_names;
    double *values;
    gm_prof_output *outputs;
    size_t n_outputs;
    void *scratch;                     /* snapshot of in-place buffers */
    size_t scratch_size;
    size_t flush_size;                 /* bytes each L2 flush reads (0: flush buffer not held) */
    long long launches;
    double last_passes_run;
    /* Batched ranges (user replay, one pass): one Start for up to max_ranges
     * launches, a user range around each; the metric dicts handed out are
     * filled when the batch is decoded (full, _profile_sync, block end). */
    int batched;
    size_t max_ranges;
    int session_open;
    PyObject *pending;                 /* list of the dicts waiting for values */
    /* Block replay (profile_replay.c; user replay of a several-pass set):
     * each launch recorded on copies of its buffers, up to max_ranges of
     * them replayed together -- one Start per pass for all. */
    int block;
    gm_prof_record *recs;              /* max_ranges of them */
    size_t n_recs;
    gm_prof_copy *snaps;               /* this batch's copies of read-only inputs */
    size_t n_snaps, snaps_cap;         /* (src: the original, dst: the copy) */
    gm_prof_copy *restores;            /* in-place buffers: pristine -> working */
    size_t n_restores, restores_cap;
    void *arena;                       /* the copies */
    size_t arena_size, arena_used, arena_cap; /* cap: arena + sink, bytes */
    void *sink;                        /* where every write-only result goes */
    size_t sink_size;
    int *flag;                         /* the comparison's answer (device) */
} gm_prof_session;

extern gm_prof_session gm_prof;

/* The module functions (profile.c lists them). */
PyObject *gm_prof_begin(PyObject *self, PyObject *args, PyObject *kwargs); /* profile_session.c */
PyObject *gm_prof_end(PyObject *self, PyObject *unused);                   /* profile_session.c */
PyObject *gm_prof_sync(PyObject *self, PyObject *unused);                  /* profile_launch.c */
PyObject *gm_prof_load(PyObject *self, PyObject *args);                    /* profile_cupti.c */

/* ---- one profiled launch and the pass loop (profile_pass.c) --------------- */
int gm_prof_flush_l2(void);                /* launch the L2 flush; 0 / -1 */
int gm_prof_sync_device(const char *what); /* GIL held; 0 / -1 */
/* The scratch buffer for a launch's in-place buffers: *need bytes of it. */
int gm_prof_ensure_scratch(const gm_launch_info *info, size_t *need);
/* Copy the launch's in-place buffers to the scratch buffer (to_scratch) or back. */
int gm_prof_copy_inout(const gm_launch_info *info, int to_scratch);
/* A fresh counter data image and pass 0, for `ranges` ranges per pass; a
 * range profiler enabled afresh first when that is more ranges than its last
 * configuration (gm_prof_reenable). */
int gm_prof_configure_pass0(size_t ranges);
/* Disable the range profiler and enable a new one on the same context: no
 * CUPTI state of earlier configurations left (no session open).  0 / -1. */
int gm_prof_reenable(void);
/* Push a user range (when user_range), launch, wait, pop; *pushed says
 * whether a range is still open when this fails. */
int gm_prof_launch_in_range(const gm_variant *variant, const void *params, const char *name,
                            int user_range, int *pushed, const char *what);
/* After a failed profiled launch: pop the open range, stop the session (an
 * open batch's launches get NaN), restore the in-place buffers (snap), keep
 * the first error. */
void gm_prof_close_after_failure(const gm_launch_info *info, int pushed, int started, int snap);

/* What the pass loop replays: n ranges per pass, range k's launch and name,
 * and (user replay) what to put back before it. */
typedef struct gm_prof_ranges gm_prof_ranges;
struct gm_prof_ranges {
    size_t n;
    void (*range)(const gm_prof_ranges *r, size_t k, const gm_variant **variant,
                  const void **params, char *name, size_t len);
    /* Before range k of pass `pass` (user replay): the in-place buffers as
     * the launch found them.  0 / -1. */
    int (*restore)(const gm_prof_ranges *r, size_t pass, size_t k);
    const char *verb;  /* "running", "replaying": names a failed launch */
    const char *whole; /* "read_offset/unroll1", "a block of 3 launches" */
    const void *ctx;
};
/* The one pass loop: per pass one Start, then for each range (user replay:
 * restore, flush L2 -- outside any range, not counted -- and a user range
 * around the launch), one Stop; until CUPTI has every pass.  *passes: how
 * many ran.  0, or -1 with an exception and no range or pass left open. */
int gm_prof_run_passes(const gm_prof_ranges *r, size_t *passes);

/* ---- the launch hook (profile_launch.c) ------------------------------------ */
/* gm_launch's hook while a block is open: the launch's metrics (a new dict;
 * for a batched one-pass set or a recorded launch, filled later). */
PyObject *gm_prof_launch_hook(const gm_launch_info *info, const void *params);
/* Close the open batch of one-pass launches: decode, fill the dicts. */
int gm_prof_batch_finish(void);

/* ---- block replay (profile_replay.c) -------------------------------------- */
/* The replay memory's cap and the record table (at _profile_begin). */
int gm_prof_block_setup(void);
/* Record one launch for replay: a new metric dict, filled when its batch is
 * replayed.  NULL with *here = 1 and no exception: it does not fit the
 * replay memory, profile it on the spot; NULL with an exception: failed. */
PyObject *gm_prof_block_record(const gm_launch_info *info, int *here);
/* Replay the recorded launches, one Start per pass, and fill their dicts.
 * 0 (also with nothing recorded), or -1 with an exception (dicts: NaN). */
int gm_prof_block_finish(void);
/* Free the copies and the records (teardown). */
void gm_prof_block_free(void);

/* ---- decoding and evaluating (profile_eval.c) ---------------------------- */
/* Decode the stopped one-launch session named range_name and evaluate its
 * one range into gm_prof.values.  0, or -1 with an exception. */
int gm_prof_evaluate_one(const char *range_name);
/* Decode the stopped batch and fill every dict of gm_prof.pending.  0, or -1
 * with an exception (the dicts are left to gm_prof_fill_pending_nan). */
int gm_prof_evaluate_batch(void);
/* Put the evaluated gm_prof.values of one range into dict d (derived ratios too). */
int gm_prof_fill_values(PyObject *d);
/* A batch that cannot be decoded: its launches get NaN, never a stale value. */
void gm_prof_fill_pending_nan(void);

#endif /* GM_PROFILE_H */
