/* measure.c -- the measurement unit, below the launch path: the one
 * event-timing path (gm_launch, the transfers and _time_memcpy all read
 * their milliseconds through gm_event_ms), the L2-flush buffer and the flush
 * kernel's row (gm_flush_l2 in launch.c launches it: for bench's cold L2, the
 * ladder and the profiler), and _time_memcpy(), the bandwidth ladder's
 * cudaMemcpy anchor. */
#include "gm.h"

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

/* ---- _time_memcpy ------------------------------------------------------------------ */
enum { TM_DST, TM_SRC, TM_REPEAT };
static const gm_arg time_memcpy_args[] = {
    [TM_DST] = {"dst", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [TM_SRC] = {"src", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [TM_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 100000},
    {NULL},
};

static PyObject *time_memcpy(const gm_parsed *a)
{
    PyObject *out = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
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
    int prev = 0;
    if (gm_ensure_device() < 0 || gm_device_enter(dst->device, &prev) < 0)
        return NULL;
    if ((out = PyList_New(0)) == NULL || gm_events_create(ev, 2) < 0)
        goto fail;
    for (long long i = 0; i < a->v[TM_REPEAT]; i++) {
        double ms = 0.0;
        GM_CUDA(cudaEventRecord(ev[0], NULL));
        GM_CUDA(cudaMemcpyAsync(dst->ptr, src->ptr, src->nbytes, cudaMemcpyDeviceToDevice, NULL));
        GM_CUDA(cudaEventRecord(ev[1], NULL));
        if (gm_event_ms(ev[0], ev[1], NULL, &ms) < 0)
            goto fail;
        PyObject *v = PyFloat_FromDouble(ms);
        if (v == NULL || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    gm_events_destroy(ev, 2);
    gm_device_leave(prev);
    return out;
fail:
    gm_events_destroy(ev, 2);
    gm_device_leave(prev);
    Py_XDECREF(out);
    return NULL;
}

static const gm_plain measure_plain[] = {
    {"_time_memcpy",
     "cudaMemcpy device to device of src into dst `repeat` times, each between CUDA events: "
     "the milliseconds, a list (the bandwidth ladder's anchor).",
     time_memcpy_args, time_memcpy},
    {NULL},
};

int gm_measure_init(PyObject *module)
{
    return gm_add_plain(module, measure_plain);
}
