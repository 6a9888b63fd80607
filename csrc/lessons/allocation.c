/* allocation.c -- the allocation lesson (cuda/allocation.cu): what allocating
 * device, managed and pinned host memory costs, cudaFree's implicit
 * synchronization, and what the first write into fresh memory costs.
 *   first_touch      the family: write every element (or one per 64 KiB page)
 *   _alloc_cost      host microseconds of one allocation and its free, by kind
 *   _free_sync       a spin kernel, then cudaFree or cudaFreeAsync: host timestamps
 *   _first_touch     first_touch launches into memory cudaMalloc'd just before
 *                    each launch, or into one buffer written before
 * This lesson measures the allocators themselves, so it calls cudaMalloc,
 * cudaMallocFromPoolAsync, cudaMallocManaged and cudaHostAlloc directly (not
 * through alloc.c, whose pool would hand back the same block): every such
 * allocation is freed before its function returns, on every path. */
#include "gm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

GM_THUNKS(first_touch)
GM_THUNKS(spin)

/* ---- first_touch ------------------------------------------------------------- */
static const gm_variant touch_variants[] = {
    GM_ROW(first_touch, "write", GM_TOUCH_WRITE,
           "every element written once with coalesced 16-byte stores: the bandwidth of "
           "writing memory, fresh from the allocator or written before",
           "4*n", "0"),
    GM_ROW(first_touch, "page", GM_TOUCH_PAGE,
           "one 4-byte store per 64 KiB: the cost of reaching each page (its translation, its "
           "first use), with almost no bytes moved",
           "4*ceil(n/16384)", "0"),
    GM_END_ROWS,
};

#define MAX_TOUCH_N (1LL << 32) /* floats: 16 GiB */

enum { FT_N, FT_TOUCH, FT_BLOCK };
static const gm_arg touch_args[] = {
    [FT_N] = {"n", GM_INT, GM_POSITIONAL | GM_REQUIRED | GM_RECORD, 0, 1, MAX_TOUCH_N,
              .what = " floats"},
    [FT_TOUCH] = {"touch", GM_VARIANT, GM_RECORD, .sdef = "write"},
    [FT_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 256, 32, 1024, .what = " threads"},
    {NULL},
};

static double touch_bytes(int variant, long long n)
{
    if (variant == GM_TOUCH_PAGE)
        return 4.0 * (double)((n + GM_TOUCH_PAGE_FLOATS - 1) / GM_TOUCH_PAGE_FLOATS);
    return 4.0 * (double)n;
}

static int touch_check(gm_call *c)
{
    npy_intp shape[1] = {(npy_intp)c->v[FT_N]};
    gm_result(c, 1, shape, NPY_FLOAT32);
    c->work = c->v[FT_N];
    c->bytes = touch_bytes(c->variant->select, c->work);
    c->flops = 0.0;
    return 0;
}

/* A new result of touch='page': NaN where the kernel writes nothing (as
 * first_touch_reference says), not whatever the allocator's memory held. */
static int touch_prepare(gm_call *c)
{
    if (!c->out && c->variant->select == GM_TOUCH_PAGE && c->work > 0)
        GM_CUDA(cudaMemsetAsync(gm_res(c), 0xff, (size_t)c->work * sizeof(float), c->stream));
    return 0;
fail:
    return -1;
}

static void touch_fill(const gm_call *c, void *params)
{
    *(gm_first_touch_params *)params = (gm_first_touch_params){
        c->variant->select, gm_res(c), c->work, (int)c->v[FT_BLOCK]};
}

static const gm_family gm_first_touch_family = {
    "first_touch",
    "n float32 written: out[i] = i mod 2^24 for every i (touch='write'), or only for i a "
    "multiple of 16384, one per 64 KiB page (touch='page'; the rest of out= left as it was, "
    "of a new result NaN).",
    touch_args, 1, 0, touch_variants, touch_check, touch_prepare, touch_fill,
};

/* ---- shared parts of the experiments -------------------------------------------- */
#define MAX_BYTES (1LL << 40)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* A failed allocation of the lesson's own as an exception (with the GIL): out of
 * memory as DeviceMemoryError (MemoryError for pinned host memory), saying so. */
static int alloc_error(cudaError_t err, const char *call, size_t nbytes, int host)
{
    if (err != cudaErrorMemoryAllocation)
        return gm_set_cuda_error(err, call);
    size_t free_b = 0, total_b = 0;
    (void)cudaGetLastError();
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    if (host)
        PyErr_Format(PyExc_MemoryError, "%s of %zu bytes failed: the system would not lock "
                     "that much host memory", call, nbytes);
    else
        PyErr_Format(gm_DeviceMemoryError, "%s of %zu bytes failed: out of device memory "
                     "(%zu of %zu bytes free)", call, nbytes, free_b, total_b);
    return -1;
}

/* nbytes must fit the device memory free now: ValueError naming `arg` otherwise. */
static int fits_device(const char *fn, const char *arg, long long nbytes)
{
    size_t free_b = 0, total_b = 0;
    GM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if ((unsigned long long)nbytes <= (unsigned long long)free_b)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; it is more than the %zu bytes "
                 "of device memory free now (of %zu; gpumem.empty_cache() gives back what "
                 "gpumem's pool keeps)", fn, arg, nbytes, free_b, total_b);
    return -1;
fail:
    return -1;
}

static PyObject *list_of(const double *v, long long n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (long long i = 0; list && i < n; i++) {
        PyObject *o = PyFloat_FromDouble(v[i]);
        if (o == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

/* A stream-ordered pool of the lesson's own on the current device whose release threshold
 * keeps every freed block (as gpumem's own pool does). */
static cudaError_t new_pool(cudaMemPool_t *pool)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    *pool = NULL;
    cudaError_t err = cudaGetDevice(&props.location.id);
    if (err == cudaSuccess)
        err = cudaMemPoolCreate(pool, &props);
    if (err != cudaSuccess) {
        *pool = NULL;
        return err;
    }
    uint64_t keep = UINT64_MAX;
    err = cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (err != cudaSuccess) {
        (void)cudaMemPoolDestroy(*pool);
        *pool = NULL;
    }
    return err;
}

/* After the pool's frees have run on the legacy stream: destroy it. */
static void drop_pool(cudaMemPool_t pool)
{
    if (pool == NULL)
        return;
    if (cudaStreamSynchronize(0) != cudaSuccess || cudaMemPoolDestroy(pool) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ---- _alloc_cost ---------------------------------------------------------------- */
static const char *const alloc_kinds[] = {"cudaMalloc", "pool", "pool_first", "managed", "host",
                                          NULL};
enum { K_MALLOC, K_POOL, K_POOL_FIRST, K_MANAGED, K_HOST };

/* _alloc_cost(kind, nbytes, repeat, warmup, host_max=2**30): {"alloc": [us], "free": [us]}
 * -- host microseconds of each timed allocation and of its free, after `warmup` untimed
 * pairs (CLOCK_MONOTONIC, the GIL released for the whole loop):
 *   cudaMalloc   cudaMalloc + cudaFree
 *   pool         cudaMallocFromPoolAsync + cudaFreeAsync on a pool of the lesson's own that
 *                keeps freed blocks (the warm-up grows it: the timed pairs reuse a block)
 *   pool_first   the same, each pair on a new pool: the first, growing allocation
 *   managed      cudaMallocManaged + cudaFree (no page touched)
 *   host         cudaHostAlloc + cudaFreeHost (pinned; nbytes at most host_max, 16 GiB at most) */
enum { AC_KIND, AC_NBYTES, AC_REPEAT, AC_WARMUP, AC_HOST_MAX };
static const gm_arg alloc_cost_args[] = {
    [AC_KIND] = {"kind", GM_CHOICE, GM_POSITIONAL | GM_REQUIRED, .choices = alloc_kinds},
    [AC_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, MAX_BYTES},
    [AC_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 100000},
    [AC_WARMUP] = {"warmup", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 0, 100000},
    [AC_HOST_MAX] = {"host_max", GM_INT, 0, 1LL << 30, 1, 1LL << 34},
    {NULL},
};

typedef struct {
    int kind;
    size_t nb;
    long long n;             /* warmup + repeat */
    double *alloc_us, *free_us;
    cudaError_t err;
    const char *call;        /* the call that failed */
} alloc_loop;

/* The timed loop, without the GIL: no Python here.  Stops at the first error
 * (l->err, l->call) with nothing left allocated. */
static void alloc_loop_run(alloc_loop *l)
{
    cudaMemPool_t pool = NULL;
    void *p = NULL;
    if (l->kind == K_POOL && (l->err = new_pool(&pool)) != cudaSuccess) {
        l->call = "cudaMemPoolCreate";
        return;
    }
    for (long long i = 0; i < l->n; i++) {
        if (l->kind == K_POOL_FIRST && (l->err = new_pool(&pool)) != cudaSuccess) {
            l->call = "cudaMemPoolCreate";
            break;
        }
        const double t0 = now_us();
        switch (l->kind) {
        case K_MALLOC:
            l->err = cudaMalloc(&p, l->nb);
            l->call = "cudaMalloc";
            break;
        case K_POOL:
        case K_POOL_FIRST:
            l->err = cudaMallocFromPoolAsync(&p, l->nb, pool, 0);
            l->call = "cudaMallocFromPoolAsync";
            break;
        case K_MANAGED:
            l->err = cudaMallocManaged(&p, l->nb, cudaMemAttachGlobal);
            l->call = "cudaMallocManaged";
            break;
        default:
            l->err = cudaHostAlloc(&p, l->nb, cudaHostAllocDefault);
            l->call = "cudaHostAlloc";
        }
        const double t1 = now_us();
        if (l->err != cudaSuccess) {
            p = NULL;
            break;
        }
        switch (l->kind) {
        case K_POOL:
        case K_POOL_FIRST:
            l->err = cudaFreeAsync(p, 0);
            l->call = "cudaFreeAsync";
            break;
        case K_HOST:
            l->err = cudaFreeHost(p);
            l->call = "cudaFreeHost";
            break;
        default:
            l->err = cudaFree(p);
            l->call = "cudaFree";
        }
        const double t2 = now_us();
        p = NULL; /* a failed free has nothing left to give back */
        if (l->err != cudaSuccess)
            break;
        l->alloc_us[i] = t1 - t0;
        l->free_us[i] = t2 - t1;
        if (l->kind == K_POOL_FIRST) {
            drop_pool(pool);
            pool = NULL;
        }
    }
    drop_pool(pool);
}

static PyObject *alloc_cost(const gm_parsed *a)
{
    const char *fn = a->fn;
    const int kind = (int)a->v[AC_KIND];
    const long long nbytes = a->v[AC_NBYTES], host_max = a->v[AC_HOST_MAX];
    const long long warmup = a->v[AC_WARMUP], n = a->v[AC_REPEAT] + warmup;
    if (kind == K_HOST && nbytes > host_max) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes=%lld is not allowed; kind='host' pins at "
                     "most host_max=%lld bytes", fn, nbytes, host_max);
        return NULL;
    }
    if (gm_ensure_device() < 0 || (kind != K_HOST && fits_device(fn, "nbytes", nbytes) < 0))
        return NULL;
    alloc_loop l = {kind, (size_t)nbytes, n, NULL, NULL, cudaSuccess, NULL};
    PyObject *res = NULL, *al = NULL, *fl = NULL;
    l.alloc_us = malloc(sizeof(double) * (size_t)n);
    l.free_us = malloc(sizeof(double) * (size_t)n);
    if (l.alloc_us == NULL || l.free_us == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    alloc_loop_run(&l);
    Py_END_ALLOW_THREADS
    if (l.err != cudaSuccess) {
        alloc_error(l.err, l.call, l.nb, kind == K_HOST);
        goto done;
    }
    al = list_of(l.alloc_us + warmup, n - warmup);
    fl = list_of(l.free_us + warmup, n - warmup);
    if (al && fl)
        res = Py_BuildValue("{s:O,s:O}", "alloc", al, "free", fl);
done:
    Py_XDECREF(al);
    Py_XDECREF(fl);
    free(l.alloc_us);
    free(l.free_us);
    return res;
}

/* ---- _free_sync ------------------------------------------------------------------ */
static const gm_variant spin_variant = GM_ROW(
    spin, "default", 0, "one thread waiting on the global timer: the device busy for a known "
    "time", "0", "0");

/* One spin kernel of `ns` on the legacy stream, an internal launch. */
static int spin_on(long long ns)
{
    const gm_spin_params p = {ns};
    const gm_launch_info info = {.variant = &spin_variant, .flags = GM_LAUNCH_INTERNAL};
    return gm_launch(&info, &p);
}

/* _free_sync(spin_us, nbytes): {"cudaFree": {...}, "cudaFreeAsync": {...}}, each
 * {"launch": (start, end), "free": (start, end), "sync": (start, end), "kernel_us": us} --
 * host microseconds from just before the spin kernel's launch: launching a kernel that
 * runs spin_us, freeing an unrelated buffer of nbytes (cudaMalloc'd and cudaFree'd, or
 * from a pool of the lesson's own and cudaFreeAsync'd), then waiting for the device; the
 * kernel's own time from CUDA events.  One short spin first loads the kernel. */
enum { FS_SPIN_US, FS_NBYTES };
static const gm_arg free_sync_args[] = {
    [FS_SPIN_US] = {"spin_us", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 1000000},
    [FS_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, MAX_BYTES},
    {NULL},
};

static PyObject *free_sync(const gm_parsed *a)
{
    static const char *const modes[2] = {"cudaFree", "cudaFreeAsync"};
    const long long ns = a->v[FS_SPIN_US] * 1000;
    const size_t nb = (size_t)a->v[FS_NBYTES];
    PyObject *res = NULL, *rows[2] = {NULL, NULL};
    cudaMemPool_t pool = NULL;
    gm_timer timer = GM_TIMER_CLOSED;
    void *buf = NULL;
    int async = 0;
    if (gm_ensure_device() < 0 || fits_device(a->fn, "nbytes", a->v[FS_NBYTES]) < 0)
        return NULL;
    GM_CUDA(new_pool(&pool));
    if (gm_timer_open(&timer, 2, NULL) < 0)
        goto fail;
    if (spin_on(1000) < 0 || gm_stream_wait(0, "running the spin kernel") < 0)
        goto fail;
    for (async = 0; async < 2; async++) {
        cudaError_t err;
        double t[6], kernel_ms = 0.0;
        if (async)
            err = cudaMallocFromPoolAsync(&buf, nb, pool, 0);
        else
            err = cudaMalloc(&buf, nb);
        if (err != cudaSuccess) {
            buf = NULL;
            alloc_error(err, async ? "cudaMallocFromPoolAsync" : "cudaMalloc", nb, 0);
            goto fail;
        }
        GM_CUDA(cudaDeviceSynchronize()); /* the device idle, the buffer ready */
        t[0] = now_us();
        if (gm_timer_mark(&timer, 0) < 0 || spin_on(ns) < 0 || gm_timer_mark(&timer, 1) < 0)
            goto fail;
        t[1] = now_us();
        Py_BEGIN_ALLOW_THREADS
        t[2] = now_us();
        err = async ? cudaFreeAsync(buf, 0) : cudaFree(buf);
        t[3] = now_us();
        Py_END_ALLOW_THREADS
        buf = NULL; /* freed, or a failed free with nothing left to give back */
        if (err != cudaSuccess) {
            gm_set_cuda_error(err, modes[async]);
            goto fail;
        }
        Py_BEGIN_ALLOW_THREADS
        t[4] = now_us();
        err = cudaStreamSynchronize(0);
        t[5] = now_us();
        Py_END_ALLOW_THREADS
        GM_CUDA(err);
        if (gm_timer_ms(&timer, 0, 1, &kernel_ms) < 0)
            goto fail;
        rows[async] = Py_BuildValue("{s:(dd),s:(dd),s:(dd),s:d}", "launch", 0.0, t[1] - t[0],
                                    "free", t[2] - t[0], t[3] - t[0], "sync", t[4] - t[0],
                                    t[5] - t[0], "kernel_us", kernel_ms * 1e3);
        if (rows[async] == NULL)
            goto fail;
    }
    res = Py_BuildValue("{s:O,s:O}", modes[0], rows[0], modes[1], rows[1]);
fail:
    if (buf != NULL) {
        cudaError_t err = async ? cudaFreeAsync(buf, 0) : cudaFree(buf);
        if (err != cudaSuccess)
            (void)cudaGetLastError();
    }
    Py_XDECREF(rows[0]);
    Py_XDECREF(rows[1]);
    gm_timer_close(&timer);
    drop_pool(pool);
    return res;
}

/* ---- _first_touch ----------------------------------------------------------------- */
/* _first_touch(touch, nbytes, fresh, repeat, warmup): None.  `repeat` first_touch
 * launches over nbytes, each a launch of its own (a LaunchRecord: gpumem.record() and
 * gpumem.profile() see them, params n, nbytes and fresh), after `warmup` internal ones:
 *   fresh=True   into memory cudaMalloc'd just before each launch and cudaFree'd after it
 *                (cudaMalloc, not gpumem's pool, which would hand back the same block)
 *   fresh=False  into one cudaMalloc'd buffer, written once before the first launch */
static const char *const touch_names[] = {"write", "page", NULL}; /* gm_touch_variant order */
enum { TT_TOUCH, TT_NBYTES, TT_FRESH, TT_REPEAT, TT_WARMUP };
static const gm_arg first_touch_args[] = {
    [TT_TOUCH] = {"touch", GM_CHOICE, GM_POSITIONAL | GM_REQUIRED, .choices = touch_names},
    [TT_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 4, 4 * MAX_TOUCH_N},
    [TT_FRESH] = {"fresh", GM_BOOL, GM_POSITIONAL | GM_REQUIRED},
    [TT_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 100000},
    [TT_WARMUP] = {"warmup", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 0, 100000},
    {NULL},
};

static cudaError_t malloc_nogil(void **p, size_t nb)
{
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS
    err = cudaMalloc(p, nb);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess)
        *p = NULL;
    return err;
}

static cudaError_t free_nogil(void *p)
{
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS
    err = cudaFree(p);
    Py_END_ALLOW_THREADS
    return err;
}

static PyObject *first_touch_run(const gm_parsed *a)
{
    const char *fn = a->fn;
    const int touch = (int)a->v[TT_TOUCH], fresh = (int)a->v[TT_FRESH];
    const long long nbytes = a->v[TT_NBYTES], warmup = a->v[TT_WARMUP];
    const long long n = nbytes / 4, count = warmup + a->v[TT_REPEAT];
    const size_t nb = (size_t)nbytes;
    const gm_variant *v = &touch_variants[touch];
    PyObject *params = NULL;
    void *buf = NULL;
    cudaError_t err;
    int ok = 0;
    if (nbytes % 4) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes=%lld is not allowed; nbytes must be a "
                     "multiple of 4 (whole floats)", fn, nbytes);
        return NULL;
    }
    if (gm_ensure_device() < 0 || fits_device(fn, "nbytes", nbytes) < 0)
        return NULL;
    params = Py_BuildValue("{s:L,s:L,s:O}", "n", n, "nbytes", nbytes, "fresh",
                           fresh ? Py_True : Py_False);
    if (params == NULL)
        return NULL;
    const gm_launch_info timed = {.variant = v, .params = params, .bytes = touch_bytes(touch, n)};
    const gm_launch_info internal = {.variant = v, .flags = GM_LAUNCH_INTERNAL};
    gm_first_touch_params p = {touch, NULL, n, 256};
    if (!fresh) { /* the reused buffer: allocated and written once, untimed */
        if ((err = malloc_nogil(&buf, nb)) != cudaSuccess) {
            alloc_error(err, "cudaMalloc", nb, 0);
            goto done;
        }
        p.out = buf;
        if (gm_launch(&internal, &p) < 0 || gm_stream_wait(0, "running first_touch") < 0)
            goto done;
    }
    for (long long i = 0; i < count; i++) {
        if (fresh) {
            if ((err = malloc_nogil(&buf, nb)) != cudaSuccess) {
                alloc_error(err, "cudaMalloc", nb, 0);
                goto done;
            }
            p.out = buf;
        }
        if (i < warmup) {
            if (gm_launch(&internal, &p) < 0 || gm_stream_wait(0, "running first_touch") < 0)
                goto done;
        } else if (gm_launch(&timed, &p) < 0) { /* timed, waited for, recorded */
            goto done;
        }
        if (fresh) {
            err = free_nogil(buf);
            buf = NULL;
            if (err != cudaSuccess) {
                gm_set_cuda_error(err, "cudaFree");
                goto done;
            }
        }
    }
    ok = 1;
done:
    if (buf != NULL && (err = free_nogil(buf)) != cudaSuccess) {
        if (ok)
            gm_set_cuda_error(err, "cudaFree");
        else
            (void)cudaGetLastError(); /* the first error stands */
        ok = 0;
    }
    Py_DECREF(params);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static const gm_plain allocation_plain[] = {
    {"_alloc_cost", "Host microseconds of each timed allocation and free of one kind and size.",
     alloc_cost_args, alloc_cost},
    {"_free_sync", "cudaFree against cudaFreeAsync behind a spin kernel: host timestamps.",
     free_sync_args, free_sync},
    {"_first_touch", "first_touch launches into fresh or reused memory (LaunchRecords).",
     first_touch_args, first_touch_run},
    {NULL},
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_first_touch_family,
    NULL,
};

const gm_lesson gm_lesson_allocation = {"allocation", families, allocation_plain, NULL};
