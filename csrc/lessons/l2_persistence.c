/* l2_persistence.c -- the l2_persistence lesson (cuda/l2_persistence.cu):
 * keeping a working set in L2 while a cold stream flows past it.
 *   hot_cold          the family: cold[i] plus `reuse` elements of the hot set,
 *                     launched as any other kernel (no window)
 *   _hot_cold_window  hot_cold launches with an access-policy window over the
 *                     hot set and a persisting L2 set-aside, or without any
 *                     (hit_ratio=None), everything it set put back before it returns
 *   _l2_state         what a later launch would see: the set-aside, the legacy
 *                     stream's window, the device's limits
 *
 * Which stream.  Every launch of the extension goes through gm_launch on the
 * stream its gm_launch_info names, and the profiler's hook replays a launch on
 * the legacy default stream (stream 0), as every entry point launches.  The
 * window is a stream attribute, so that a profiled launch is counted under the
 * same window as the timed one, _hot_cold_window sets it on the legacy stream
 * -- a stream the launch layer owns -- just before its launches and clears it
 * (num_bytes 0) before it returns.  It also sets the persisting set-aside
 * (cudaLimitPersistingL2CacheSize, a device-wide limit) and puts it back to
 * the value it had, after cudaCtxResetPersistingL2Cache turned every
 * persisting line back to normal: on every path, errors included (one
 * cleanup label).  Access-policy windows need compute capability 8.0
 * (Ampere) or newer. */
#include "gm.h"

#include <math.h>
#include <string.h>

GM_THUNKS(hot_cold)

#define HOT_COLD_BYTES "4*n_cold*(2 + reuse)"
#define MAX_REUSE 64
#define WINDOW_CC_MAJOR 8 /* access-policy windows: sm_80 and newer */

/* ---- hot_cold -------------------------------------------------------------------- */
static const gm_variant hot_cold_variants[] = {
    GM_ROW(hot_cold, "plain", GM_HOT_COLD_PLAIN,
           "default loads of both arrays: whether the hot set survives in L2 between its reads "
           "depends on what streams past it (with an access-policy window, on sm_80+, its "
           "lines persist in the set-aside)",
           HOT_COLD_BYTES, "n_cold*reuse"),
    GM_ROW(hot_cold, "cold_streaming", GM_HOT_COLD_COLD_STREAMING,
           "the cold loads marked evict-first (ld.global.cs): the software hint that keeps the "
           "stream from pushing the hot set out, no window needed",
           HOT_COLD_BYTES, "n_cold*reuse"),
    GM_END_ROWS,
};

enum { HC_HOT, HC_COLD, HC_REUSE, HC_VARIANT, HC_BLOCK };
static const gm_arg hot_cold_args[] = {
    [HC_HOT] = {"hot", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [HC_COLD] = {"cold", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [HC_REUSE] = {"reuse", GM_INT, GM_RECORD, 2, 1, MAX_REUSE, .what = " hot loads per cold element"},
    [HC_VARIANT] = {"variant", GM_VARIANT, GM_RECORD | GM_SELECTS, .sdef = "plain"},
    [HC_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 256, 32, 1024, .what = " threads"},
    {NULL},
};

static double hot_cold_bytes(long long n_cold, long long reuse)
{
    return 4.0 * (double)n_cold * (2.0 + (double)reuse);
}

/* The shape rules of both entry points: a hot set of at least one element, and a
 * grid of at most 2^31 - 1 blocks. */
static int hot_cold_sizes(const char *fn, long long n_hot, long long n_cold, long long block)
{
    if (n_hot < 1) {
        PyErr_Format(PyExc_ValueError, "%s: hot is empty; the hot set needs at least one "
                     "element", fn);
        return -1;
    }
    if ((n_cold + block - 1) / block > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError, "%s: cold has %lld elements; more than 2^31 - 1 blocks "
                     "of %lld threads", fn, n_cold, block);
        return -1;
    }
    return 0;
}

static int hot_cold_check(gm_call *c)
{
    const long long n_hot = gm_operand_size(&c->op[HC_HOT]);
    const long long n_cold = gm_operand_size(&c->op[HC_COLD]);
    if (hot_cold_sizes(c->f->name, n_hot, n_cold, c->v[HC_BLOCK]) < 0)
        return -1;
    npy_intp shape[1] = {(npy_intp)n_cold};
    gm_result(c, 1, shape, NPY_FLOAT32);
    c->work = n_cold;
    c->bytes = hot_cold_bytes(n_cold, c->v[HC_REUSE]);
    c->flops = (double)n_cold * (double)c->v[HC_REUSE];
    if (gm_record(c, "n_hot", n_hot) < 0)
        return -1;
    return gm_record(c, "n_cold", n_cold);
}

static void hot_cold_fill(const gm_call *c, void *params)
{
    *(gm_hot_cold_params *)params = (gm_hot_cold_params){
        c->variant->select, gm_in(c, HC_HOT), gm_dim(c, HC_HOT, 0), gm_in(c, HC_COLD),
        gm_dim(c, HC_COLD, 0), gm_res(c), (int)c->v[HC_REUSE], (int)c->v[HC_BLOCK]};
}

static const gm_family gm_hot_cold_family = {
    "hot_cold",
    "out[i] = cold[i] + hot[(i + j*n_cold) % n_hot] for j = 0 .. reuse-1, added in that order "
    "in float32: a cold array read once while a hot set is read `reuse` times per cold element "
    "(no access-policy window; _hot_cold_window sets one).",
    hot_cold_args, 1, 0, hot_cold_variants, hot_cold_check, NULL, hot_cold_fill,
};

/* ---- the device's L2 limits -------------------------------------------------------- */
typedef struct {
    int major, minor;
    int max_persisting; /* cudaDevAttrMaxPersistingL2CacheSize, bytes */
    int max_window;     /* cudaDevAttrMaxAccessPolicyWindowSize, bytes */
} l2_limits;

static int read_limits(l2_limits *l)
{
    int dev = 0;
    memset(l, 0, sizeof *l);
    GM_CUDA(cudaGetDevice(&dev));
    GM_CUDA(cudaDeviceGetAttribute(&l->major, cudaDevAttrComputeCapabilityMajor, dev));
    GM_CUDA(cudaDeviceGetAttribute(&l->minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (l->major < WINDOW_CC_MAJOR)
        return 0; /* the two attributes are 0 (or unknown) there */
    GM_CUDA(cudaDeviceGetAttribute(&l->max_persisting, cudaDevAttrMaxPersistingL2CacheSize, dev));
    GM_CUDA(cudaDeviceGetAttribute(&l->max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev));
    return 0;
fail:
    return -1;
}

/* CudaError naming the capability an access-policy window needs, on older GPUs
 * (and on a GPU that offers no persisting set-aside). */
static int need_window_gpu(const char *fn, const l2_limits *l)
{
    if (gm_need_cc(fn, "an access-policy window", WINDOW_CC_MAJOR, 0,
                   "cudaStreamAttributeAccessPolicyWindow: sm_80, Ampere") < 0)
        return -1;
    if (l->max_persisting <= 0 || l->max_window <= 0) {
        PyErr_Format(gm_CudaError, "%s: this GPU offers no persisting L2 set-aside "
                     "(cudaDevAttrMaxPersistingL2CacheSize %d, "
                     "cudaDevAttrMaxAccessPolicyWindowSize %d)", fn, l->max_persisting,
                     l->max_window);
        return -1;
    }
    return 0;
}

/* The legacy stream's window: an empty one (num_bytes 0, both properties normal) or the
 * hot set's. */
static cudaError_t set_window(const void *base, size_t nbytes, float hit_ratio)
{
    cudaStreamAttrValue v;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.base_ptr = (void *)base;
    v.accessPolicyWindow.num_bytes = nbytes;
    v.accessPolicyWindow.hitRatio = hit_ratio;
    v.accessPolicyWindow.hitProp = nbytes ? cudaAccessPropertyPersisting : cudaAccessPropertyNormal;
    v.accessPolicyWindow.missProp = nbytes ? cudaAccessPropertyStreaming : cudaAccessPropertyNormal;
    return cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v);
}

/* ---- _hot_cold_window -------------------------------------------------------------- */
/* _hot_cold_window(hot, cold, out, reuse, hit_ratio=None, *, set_aside=None, repeat=1,
 * fault=0): out (a new DeviceArray when out is None).  One internal warm-up launch of hot_cold/plain (loads the kernel,
 * brings the hot set in), waited for, then `repeat` timed launches, each a LaunchRecord
 * (params n_hot, n_cold, reuse, window_bytes, hit_ratio_ppm, set_aside), all on the
 * legacy stream, writing out (a DeviceArray of cold's shape, not overlapping hot or
 * cold; None: a new one, allocated after every argument was checked).
 *   hit_ratio=None   no window, no set-aside: the baseline through the same path
 *   hit_ratio=h      the window over the whole hot set (hitProp persisting for a
 *                    fraction h of its accesses, missProp streaming for the rest) and
 *                    the set-aside `set_aside` bytes (None: the hot set's bytes, at
 *                    most cudaDevAttrMaxPersistingL2CacheSize)
 * fault=1/2/3 raises RuntimeError after the set-aside was changed / after the window was
 * set / after the warm-up launch (tests of the cleanup path).  Before it returns -- also
 * on any error -- the window is emptied, cudaCtxResetPersistingL2Cache() runs and the
 * set-aside is put back. */
enum { W_HOT, W_COLD, W_OUT, W_REUSE, W_HIT, W_SET_ASIDE, W_REPEAT, W_FAULT };
static const gm_arg window_args[] = {
    [W_HOT] = {"hot", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [W_COLD] = {"cold", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [W_OUT] = {"out", GM_OBJECT, GM_POSITIONAL | GM_NO_DEFAULT},
    [W_REUSE] = {"reuse", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, MAX_REUSE},
    [W_HIT] = {"hit_ratio", GM_OBJECT, GM_POSITIONAL | GM_NO_DEFAULT},
    [W_SET_ASIDE] = {"set_aside", GM_INT, GM_NO_DEFAULT, 0, 0, 1LL << 40, .what = " bytes"},
    [W_REPEAT] = {"repeat", GM_INT, 0, 1, 1, 100000},
    [W_FAULT] = {"fault", GM_INT, 0, 0, 0, 3},
    {NULL},
};

/* hit_ratio: a real number in [0, 1] (never a bool); *h. */
static int read_hit_ratio(const char *fn, PyObject *obj, double *h)
{
    if (PyBool_Check(obj) || !(PyFloat_Check(obj) || PyLong_Check(obj) ||
                               PyObject_HasAttrString(obj, "__float__"))) {
        PyErr_Format(PyExc_TypeError, "%s: hit_ratio must be a real number in [0, 1] (or None: "
                     "no window), not %.200s", fn, Py_TYPE(obj)->tp_name);
        return -1;
    }
    *h = PyFloat_AsDouble(obj);
    if (*h == -1.0 && PyErr_Occurred())
        return -1;
    if (!(*h >= 0.0 && *h <= 1.0)) {
        PyErr_Format(PyExc_ValueError, "%s: hit_ratio=%R is not allowed; hit_ratio must be in "
                     "[0, 1]", fn, obj);
        return -1;
    }
    return 0;
}

static int operand_1d(const char *fn, const char *name, PyObject *obj, gm_operand *op)
{
    if (gm_operand_parse(obj, fn, name, NPY_FLOAT32, op) < 0)
        return -1;
    if (op->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be 1-D, not %d-D", fn, name, op->ndim);
        return -1;
    }
    return 0;
}

static int fault_at(int fault, int stage)
{
    if (fault != stage)
        return 0;
    PyErr_Format(PyExc_RuntimeError, "_hot_cold_window: fault=%d: the error asked for", fault);
    return -1;
}

static PyObject *hot_cold_window(const gm_parsed *a)
{
    const char *fn = a->fn;
    const long long reuse = a->v[W_REUSE], repeat = a->v[W_REPEAT];
    const int fault = (int)a->v[W_FAULT];
    const int window = a->obj[W_HIT] != NULL;
    gm_operand hot, cold;
    memset(&hot, 0, sizeof hot);
    memset(&cold, 0, sizeof cold);
    PyObject *params = NULL;
    gm_DeviceArray *out = NULL;
    double hit = 0.0;
    long long set_aside = 0;
    size_t prev_limit = 0;
    int limit_changed = 0, window_set = 0, ok = 0;
    l2_limits lim;

    /* Arguments, before the device. */
    if (operand_1d(fn, "hot", a->obj[W_HOT], &hot) < 0 ||
        operand_1d(fn, "cold", a->obj[W_COLD], &cold) < 0)
        goto release;
    const long long n_hot = gm_operand_size(&hot), n_cold = gm_operand_size(&cold);
    if (hot_cold_sizes(fn, n_hot, n_cold, 256) < 0)
        goto release;
    if (n_cold < 1) {
        PyErr_Format(PyExc_ValueError, "%s: cold is empty; there is nothing to launch", fn);
        goto release;
    }
    npy_intp shape[1] = {(npy_intp)n_cold};
    if (a->obj[W_OUT] && gm_check_out(a->obj[W_OUT], fn, 1, shape, NPY_FLOAT32) < 0)
        goto release;
    if (window && read_hit_ratio(fn, a->obj[W_HIT], &hit) < 0)
        goto release;
    if (!window && a->given[W_SET_ASIDE]) {
        PyErr_Format(PyExc_ValueError, "%s: set_aside=%lld is not allowed without a window "
                     "(hit_ratio=None)", fn, a->v[W_SET_ASIDE]);
        goto release;
    }
    const long long hot_bytes = 4 * n_hot;

    /* The device: its capability and limits, still nothing changed. */
    if (gm_ensure_device() < 0 || read_limits(&lim) < 0)
        goto release;
    if (window) {
        if (need_window_gpu(fn, &lim) < 0)
            goto release;
        if (hot_bytes > lim.max_window) {
            PyErr_Format(PyExc_ValueError, "%s: hot holds %lld bytes; an access-policy window "
                         "covers at most %d bytes on this GPU "
                         "(cudaDevAttrMaxAccessPolicyWindowSize)", fn, hot_bytes, lim.max_window);
            goto release;
        }
        set_aside = a->given[W_SET_ASIDE] ? a->v[W_SET_ASIDE]
                    : (hot_bytes < lim.max_persisting ? hot_bytes : lim.max_persisting);
        if (set_aside > lim.max_persisting) {
            PyErr_Format(PyExc_ValueError, "%s: set_aside=%lld is not allowed; this GPU sets "
                         "aside at most %d bytes of L2 for persisting lines "
                         "(cudaDevAttrMaxPersistingL2CacheSize)", fn, set_aside,
                         lim.max_persisting);
            goto release;
        }
    }
    if (gm_operand_upload(&hot) < 0 || gm_operand_upload(&cold) < 0)
        goto release;
    if (a->obj[W_OUT]) {
        out = (gm_DeviceArray *)a->obj[W_OUT];
        Py_INCREF(out);
        const char *o0 = out->ptr, *h0 = hot.dev->ptr, *c0 = cold.dev->ptr;
        if ((o0 < h0 + hot_bytes && h0 < o0 + 4 * n_cold) ||
            (o0 < c0 + 4 * n_cold && c0 < o0 + 4 * n_cold)) {
            PyErr_Format(PyExc_ValueError, "%s: out must not share memory with hot or cold "
                         "(the kernel reads them while other threads write out)", fn);
            goto release;
        }
    } else {
        PyArray_Descr *f32 = PyArray_DescrFromType(NPY_FLOAT32);
        out = f32 ? gm_devarray_new(1, shape, f32) : NULL;
        Py_XDECREF(f32);
        if (out == NULL)
            goto release;
    }
    params = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L}", "n_hot", n_hot, "n_cold", n_cold,
                           "reuse", reuse, "window_bytes", window ? hot_bytes : 0LL,
                           "hit_ratio_ppm", window ? (long long)llround(hit * 1e6) : -1LL,
                           "set_aside", window ? set_aside : 0LL);
    if (params == NULL)
        goto release;

    /* From here on L2's state changes: every path leaves through `restore`. */
    if (window) {
        GM_CUDA(cudaDeviceGetLimit(&prev_limit, cudaLimitPersistingL2CacheSize));
        limit_changed = 1;
        GM_CUDA(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)set_aside));
        if (fault_at(fault, 1) < 0)
            goto fail;
        window_set = 1;
        GM_CUDA(set_window(hot.dev->ptr, (size_t)hot_bytes, (float)hit));
        if (fault_at(fault, 2) < 0)
            goto fail;
    } else if (fault_at(fault, 1) < 0 || fault_at(fault, 2) < 0) {
        goto fail;
    }
    const gm_variant *v = &hot_cold_variants[GM_HOT_COLD_PLAIN];
    const gm_hot_cold_params p = {GM_HOT_COLD_PLAIN, hot.dev->ptr, n_hot, cold.dev->ptr, n_cold,
                                  out->ptr, (int)reuse, 256};
    const gm_launch_info internal = {.variant = v, .flags = GM_LAUNCH_INTERNAL};
    if (gm_launch(&internal, &p) < 0 || gm_stream_wait(0, "running hot_cold (warm-up)") < 0)
        goto fail;
    if (fault_at(fault, 3) < 0)
        goto fail;
    const gm_launch_info timed = {.variant = v, .params = params,
                                  .bytes = hot_cold_bytes(n_cold, reuse),
                                  .flops = (double)n_cold * (double)reuse};
    for (long long i = 0; i < repeat; i++)
        if (gm_launch(&timed, &p) < 0) /* timed, waited for, recorded */
            goto fail;
    ok = 1;
fail:
    /* restore: the first error stands; a failure here is raised only when none came before */
    if (window_set || limit_changed) {
        cudaError_t err = cudaSuccess, e;
        const char *call = NULL;
        if (window_set && (e = set_window(NULL, 0, 0.0f)) != cudaSuccess && err == cudaSuccess) {
            err = e;
            call = "cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, empty)";
        }
        if ((e = cudaStreamSynchronize(0)) != cudaSuccess && err == cudaSuccess) {
            err = e;
            call = "cudaStreamSynchronize(0)";
        }
        if ((e = cudaCtxResetPersistingL2Cache()) != cudaSuccess && err == cudaSuccess) {
            err = e;
            call = "cudaCtxResetPersistingL2Cache()";
        }
        if (limit_changed &&
            (e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, prev_limit)) != cudaSuccess &&
            err == cudaSuccess) {
            err = e;
            call = "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, previous)";
        }
        if (err != cudaSuccess) {
            if (ok)
                gm_set_cuda_error(err, call);
            else
                (void)cudaGetLastError();
            ok = 0;
        }
    }
release:
    Py_XDECREF(params);
    gm_operand_release(&hot);
    gm_operand_release(&cold);
    if (!ok) {
        Py_XDECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

/* ---- _l2_state ----------------------------------------------------------------------- */
/* _l2_state(): {"compute_capability": (major, minor), "persisting_limit": bytes
 * (cudaLimitPersistingL2CacheSize now), "window_bytes": the legacy stream's
 * access-policy window's num_bytes, "window_hit_ratio", "max_persisting",
 * "max_window"} -- what the next launch would find.  Limits and window read only on
 * compute capability 8.0 and newer (0 elsewhere). */
static const gm_arg state_args[] = {{NULL}};

static PyObject *l2_state(const gm_parsed *a)
{
    (void)a;
    l2_limits lim;
    size_t limit = 0;
    cudaStreamAttrValue v;
    memset(&v, 0, sizeof v);
    if (gm_ensure_device() < 0 || read_limits(&lim) < 0)
        return NULL;
    if (lim.major >= WINDOW_CC_MAJOR) {
        GM_CUDA(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
        GM_CUDA(cudaStreamGetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &v));
    }
    return Py_BuildValue("{s:(ii),s:K,s:K,s:d,s:i,s:i}", "compute_capability", lim.major,
                         lim.minor, "persisting_limit", (unsigned long long)limit,
                         "window_bytes", (unsigned long long)v.accessPolicyWindow.num_bytes,
                         "window_hit_ratio", (double)v.accessPolicyWindow.hitRatio,
                         "max_persisting", lim.max_persisting, "max_window", lim.max_window);
fail:
    return NULL;
}

static const gm_plain l2_persistence_plain[] = {
    {"_hot_cold_window", "hot_cold launches under an access-policy window over the hot set "
     "(or none), L2's state put back after them.", window_args, hot_cold_window},
    {"_l2_state", "The persisting L2 set-aside and the legacy stream's window, now.", state_args,
     l2_state},
    {NULL},
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_hot_cold_family,
    NULL,
};

const gm_lesson gm_lesson_l2_persistence = {"l2_persistence", families, l2_persistence_plain,
                                             NULL};
