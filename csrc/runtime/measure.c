/* measure.c -- the measurement unit, below the launch path: the one
 * event-timing path (gm_launch reads its milliseconds through gm_event_ms;
 * every loop that times work it queues itself -- the lessons' experiments,
 * _time_memcpy, _time_calls -- through a gm_timer over it), the L2-flush
 * buffer and the flush kernel's row (gm_flush_l2 in launch.c launches it: for
 * bench's cold L2, the ladder and the profiler), _time_memcpy(), the bandwidth
 * ladder's cudaMemcpy anchor, and _time_calls(), any Python callable between
 * events (cuBLAS through CuPy, the benchmarks' anchors). */
#include "gm.h"

#include <stdlib.h>

/* ---- events ------------------------------------------------------------------- */
/* Destroyed events are kept (all are created with the default flags), one
 * cache per device (an event belongs to the device it was made on), and handed
 * out again: a launch takes two, and a LaunchRecord keeps them until its ms is
 * read, so creating them fresh each time would cost every call.  Only ever
 * touched with the GIL held. */
enum { EVENT_CACHE = 256 };
static struct {
    cudaEvent_t ev[EVENT_CACHE];
    int n;
} event_cache[GM_MAX_DEVICES];

int gm_events_create(cudaEvent_t *ev, int n)
{
    int dev = 0;
    for (int i = 0; i < n; i++)
        ev[i] = NULL;
    if (gm_device_current(&dev) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (event_cache[dev].n > 0)
            ev[i] = event_cache[dev].ev[--event_cache[dev].n];
        else
            GM_CUDA(cudaEventCreate(&ev[i]));
    }
    return 0;
fail:
    gm_events_release(dev, ev, n);
    return -1;
}

void gm_events_release(int dev, cudaEvent_t *ev, int n)
{
    for (int i = 0; i < n; i++)
        if (ev[i]) {
            if (dev >= 0 && dev < GM_MAX_DEVICES && event_cache[dev].n < EVENT_CACHE)
                event_cache[dev].ev[event_cache[dev].n++] = ev[i];
            else
                cudaEventDestroy(ev[i]);
            ev[i] = NULL;
        }
}

void gm_events_destroy(cudaEvent_t *ev, int n)
{
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess)
        (void)cudaGetLastError();
    gm_events_release(dev, ev, n);
}

int gm_event_ms(cudaEvent_t from, cudaEvent_t to, const char *what, double *ms)
{
    cudaError_t err;
    float f = 0.0f;
    /* Another Python thread may launch while this one waits. */
    Py_BEGIN_ALLOW_THREADS
    err = cudaEventSynchronize(to);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, what ? what : "cudaEventSynchronize");
    GM_CUDA(cudaEventElapsedTime(&f, from, to));
    *ms = (double)f;
    return 0;
fail:
    return -1;
}

int gm_stream_wait(cudaStream_t stream, const char *what)
{
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS
    err = cudaStreamSynchronize(stream);
    Py_END_ALLOW_THREADS
    return err == cudaSuccess ? 0 : gm_set_cuda_error(err, what ? what : "cudaStreamSynchronize");
}

/* ---- the timer ---------------------------------------------------------------------- */
static cudaEvent_t *timer_events(gm_timer *t)
{
    return t->many ? t->many : t->small;
}

int gm_timer_open(gm_timer *t, int n, cudaStream_t stream)
{
    *t = (gm_timer)GM_TIMER_CLOSED;
    if (n < 1) {
        PyErr_Format(PyExc_SystemError, "gm_timer_open: %d events", n);
        return -1;
    }
    if (gm_device_current(&t->device) < 0)
        return -1;
    if (n > GM_TIMER_SMALL && (t->many = calloc((size_t)n, sizeof *t->many)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (gm_events_create(timer_events(t), n) < 0) { /* all or none */
        free(t->many);
        t->many = NULL;
        return -1;
    }
    t->n = n;
    t->stream = stream;
    return 0;
}

int gm_timer_mark_on(gm_timer *t, int i, cudaStream_t stream)
{
    if (i < 0 || i >= t->n) {
        PyErr_Format(PyExc_SystemError, "gm_timer_mark: event %d of a timer of %d", i, t->n);
        return -1;
    }
    cudaEvent_t *ev = timer_events(t);
    GM_CUDA(cudaEventRecord(ev[i], stream));
    return 0;
fail:
    return -1;
}

int gm_timer_mark(gm_timer *t, int i)
{
    return gm_timer_mark_on(t, i, t->stream);
}

int gm_timer_ms(gm_timer *t, int from, int to, double *ms)
{
    if (from < 0 || from >= t->n || to < 0 || to >= t->n) {
        PyErr_Format(PyExc_SystemError, "gm_timer_ms: events %d and %d of a timer of %d", from,
                     to, t->n);
        return -1;
    }
    cudaEvent_t *ev = timer_events(t);
    return gm_event_ms(ev[from], ev[to], NULL, ms);
}

void gm_timer_close(gm_timer *t)
{
    if (t->n > 0)
        gm_events_release(t->device, timer_events(t), t->n);
    free(t->many);
    *t = (gm_timer)GM_TIMER_CLOSED;
}

/* ---- the L2 flush ---------------------------------------------------------------- */
int gm_l2_bytes(long long *out)
{
    int dev = 0, l2 = 0;
    GM_CUDA(cudaGetDevice(&dev));
    GM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    *out = l2;
    return 0;
fail:
    return -1;
}

GM_THUNKS(l2_flush)

const gm_variant gm_l2_flush_variant = GM_ROW(
    l2_flush, "default", 0,
    "every 16 bytes of a zeroed buffer larger than L2 read through L2: what L2 held is evicted",
    "nbytes", "0");

/* One buffer per device, zeroed when it is allocated -- the flush reads
 * initialised memory, and the zeroing is never inside anything timed -- kept
 * while held (the profiler holds it for a block), freed with the last release.
 * It grows (a new zeroed buffer) only when asked for more than it has.  Hold
 * and release it on the same (current) device. */
static struct {
    void *buf;
    size_t size;
    int holds;
} flushes[GM_MAX_DEVICES];

int gm_flush_hold(size_t nbytes, gm_l2_flush_params *p)
{
    int dev = 0;
    if (gm_device_current(&dev) < 0)
        return -1;
#define flush flushes[dev]
    if (nbytes == 0) {
        long long l2 = 0;
        if (gm_l2_bytes(&l2) < 0)
            return -1;
        nbytes = 2 * (size_t)(l2 > 0 ? l2 : (1LL << 20));
    }
    const size_t size = (nbytes + 15) & ~(size_t)15;
    void *buf = NULL;
    if (size > flush.size) {
        if (gm_device_alloc(size, &buf) < 0)
            return -1;
        GM_CUDA(cudaMemset(buf, 0, size));
        gm_device_free(flush.buf, flush.size);
        flush.buf = buf;
        flush.size = size;
    }
    flush.holds++;
    *p = (gm_l2_flush_params){flush.buf, (long long)(nbytes / 16)};
    return 0;
fail:
    gm_device_free(buf, size);
    return -1;
}

void gm_flush_release(void)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    if (flush.holds > 0 && --flush.holds == 0) {
        gm_device_free(flush.buf, flush.size);
        flush.buf = NULL;
        flush.size = 0;
    }
}
#undef flush

/* ---- the timed loop of _time_memcpy and _time_calls ------------------------------ */
/* Append ms to a list of floats.  0 / -1. */
static int append_ms(PyObject *list, double ms)
{
    PyObject *v = PyFloat_FromDouble(ms);
    const int rc = v ? PyList_Append(list, v) : -1;
    Py_XDECREF(v);
    return rc;
}

/* What the loop below times once: queue it (0 / -1); an object it sets in
 * *held is released after the end event is recorded. */
typedef int (*timed_work)(void *ctx, PyObject **held);

/* work() warmup + repeat times, each between the open timer's events 0 and 1,
 * waiting for event 1 before the next: the ms of the last `repeat`, a list. */
static PyObject *time_each(gm_timer *t, long long warmup, long long repeat, timed_work work,
                           void *ctx)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (long long i = 0; i < warmup + repeat; i++) {
        PyObject *held = NULL;
        double ms = 0.0;
        if (gm_timer_mark(t, 0) < 0 || work(ctx, &held) < 0)
            goto fail;
        const int marked = gm_timer_mark(t, 1);
        Py_XDECREF(held);
        if (marked < 0 || gm_timer_ms(t, 0, 1, &ms) < 0 || (i >= warmup && append_ms(out, ms) < 0))
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ---- _time_memcpy ------------------------------------------------------------------ */
enum { TM_DST, TM_SRC, TM_REPEAT };
static const gm_arg time_memcpy_args[] = {
    [TM_DST] = {"dst", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [TM_SRC] = {"src", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [TM_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 100000},
    {NULL},
};

static int copy_once(void *ctx, PyObject **held)
{
    const gm_DeviceArray *const *dst_src = ctx;
    (void)held;
    GM_CUDA(cudaMemcpyAsync(dst_src[0]->ptr, dst_src[1]->ptr, dst_src[1]->nbytes,
                            cudaMemcpyDeviceToDevice, NULL));
    return 0;
fail:
    return -1;
}

static PyObject *time_memcpy(const gm_parsed *a)
{
    if (!gm_DeviceArray_Check(a->obj[TM_DST]) || !gm_DeviceArray_Check(a->obj[TM_SRC])) {
        PyErr_Format(PyExc_TypeError, "%s: dst and src must be gpumem.DeviceArray", a->fn);
        return NULL;
    }
    const gm_DeviceArray *dst = (const gm_DeviceArray *)a->obj[TM_DST],
                         *src = (const gm_DeviceArray *)a->obj[TM_SRC];
    if (dst->nbytes != src->nbytes || dst == src) {
        PyErr_Format(PyExc_ValueError,
                     "%s: dst (%zu bytes) and src (%zu bytes) must be two arrays of the same size",
                     a->fn, dst->nbytes, src->nbytes);
        return NULL;
    }
    if (dst->device != src->device) {
        PyErr_Format(PyExc_ValueError, "%s: dst is on device %d and src on device %d; both "
                     "must be on one", a->fn, dst->device, src->device);
        return NULL;
    }
    const gm_DeviceArray *dst_src[2] = {dst, src};
    gm_timer t = GM_TIMER_CLOSED;
    PyObject *out = NULL;
    int prev = 0;
    if (gm_ensure_device() < 0 || gm_device_enter(dst->device, &prev) < 0)
        return NULL;
    if (gm_timer_open(&t, 2, NULL) == 0) /* on the legacy default stream */
        out = time_each(&t, 0, a->v[TM_REPEAT], copy_once, dst_src);
    gm_timer_close(&t);
    gm_device_leave(prev);
    return out;
}

/* ---- _time_calls ------------------------------------------------------------------- */
enum { TK_FN, TK_REPEAT, TK_WARMUP };
static const gm_arg time_calls_args[] = {
    [TK_FN] = {"fn", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [TK_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 100000},
    [TK_WARMUP] = {"warmup", GM_INT, GM_POSITIONAL, 0, 0, 100000},
    {NULL},
};

static int call_once(void *fn, PyObject **held)
{
    *held = PyObject_CallNoArgs((PyObject *)fn);
    return *held ? 0 : -1;
}

/* fn() warmup + repeat times, each between two events on the stream a call of
 * the current device runs on (the thread's current gpumem stream, else the
 * legacy default stream -- where CuPy and PyTorch launch unless told
 * otherwise), waiting for the second before the next call; what fn returns is
 * released after the second event is recorded.  The ms of the last `repeat`. */
static PyObject *time_calls(const gm_parsed *a)
{
    PyObject *fn = a->obj[TK_FN], *out = NULL, *keep = NULL;
    gm_timer t = GM_TIMER_CLOSED;
    cudaStream_t stream = NULL;
    int dev = 0;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%s: fn must be callable, not %.200s", a->fn,
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    if (gm_ensure_device() < 0 || gm_device_current(&dev) < 0 ||
        gm_call_stream(a->fn, dev, &stream, &keep) < 0)
        return NULL;
    if (gm_timer_open(&t, 2, stream) == 0)
        out = time_each(&t, a->v[TK_WARMUP], a->v[TK_REPEAT], call_once, fn);
    gm_timer_close(&t);
    Py_XDECREF(keep); /* the stream's Stream, held while it was in use */
    return out;
}

static const gm_plain measure_plain[] = {
    {"_time_memcpy",
     "cudaMemcpy device to device of src into dst `repeat` times, each between CUDA events: "
     "the milliseconds, a list (the bandwidth ladder's anchor).",
     time_memcpy_args, time_memcpy},
    {"_time_calls",
     "fn() warmup + repeat times, each between CUDA events on the current stream of the "
     "current device (the legacy default stream unless one is set): the milliseconds of the "
     "last `repeat`, a list (cuBLAS through CuPy, the benchmarks' anchors).",
     time_calls_args, time_calls},
    {NULL},
};

int gm_measure_init(PyObject *module)
{
    return gm_add_plain(module, measure_plain);
}
