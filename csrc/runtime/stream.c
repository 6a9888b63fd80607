/* stream.c -- the streams a call can run on: gpumem.Stream (a stream of one
 * device, gpumem's own or another library's), each thread's current stream
 * per device (`with stream:`), the ordering of one stream after another
 * through an event (no host wait), synchronize() and current_stream().  A
 * call that names no stream runs on its device's legacy default stream, as
 * every call did before streams existed.  It calls nothing above device.c. */
#include "gm.h"

#include <stdint.h>

/* ---- each thread's current streams ---------------------------------------------- */
/* Per thread and device: the Stream `with` made current (owned), or NULL. */
static _Thread_local PyObject *current[GM_MAX_DEVICES];
/* What each open `with` block gives back: the stream it replaced, the device. */
enum { GM_STREAM_NESTING = 64 };
static _Thread_local struct {
    PyObject *stream; /* owned, or NULL */
    int device;       /* the device current before the block */
} opened[GM_STREAM_NESTING];
static _Thread_local int n_opened;

int gm_call_stream(const char *fn, int dev, cudaStream_t *stream, PyObject **keep)
{
    (void)fn;
    PyObject *s = dev >= 0 && dev < GM_MAX_DEVICES ? current[dev] : NULL;
    *stream = s ? ((gm_Stream *)s)->handle : NULL;
    *keep = s ? Py_NewRef(s) : NULL;
    return 0;
}

uintptr_t gm_stream_value(cudaStream_t stream)
{
    return stream == NULL ? 1 : (uintptr_t)stream;
}

/* ---- one stream after another ------------------------------------------------------ */
/* One event per device will do: a wait takes the event's newest record at the
 * time it is queued, so the event can be recorded again at once (GIL held). */
static cudaEvent_t order_event[GM_MAX_DEVICES];

int gm_stream_order(cudaStream_t waiter, cudaStream_t producer)
{
    int dev = 0;
    if (waiter == producer)
        return 0;
    if (gm_device_current(&dev) < 0)
        return -1;
    if (order_event[dev] == NULL)
        GM_CUDA(cudaEventCreateWithFlags(&order_event[dev], cudaEventDisableTiming));
    GM_CUDA(cudaEventRecord(order_event[dev], producer));
    GM_CUDA(cudaStreamWaitEvent(waiter, order_event[dev], 0));
    return 0;
fail:
    return -1;
}

int gm_stream_order_across(int waiter_dev, cudaStream_t waiter, int producer_dev,
                           cudaStream_t producer)
{
    int prev = 0;
    cudaEvent_t ev = NULL;
    cudaError_t err;
    if (waiter_dev == producer_dev) {
        if (gm_device_enter(waiter_dev, &prev) < 0)
            return -1;
        int r = gm_stream_order(waiter, producer);
        gm_device_leave(prev);
        return r;
    }
    /* A one-time event, recorded where the producer runs (NULL: its device's legacy
     * default stream), waited for where the waiter runs. */
    if (gm_device_enter(producer_dev, &prev) < 0)
        return -1;
    err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess)
        err = cudaEventRecord(ev, producer);
    if (err == cudaSuccess && (err = cudaSetDevice(waiter_dev)) == cudaSuccess)
        err = cudaStreamWaitEvent(waiter, ev, 0);
    if (ev)
        (void)cudaEventDestroy(ev);       /* the wait keeps its record */
    gm_device_leave(prev);
    return err == cudaSuccess ? 0 : gm_set_cuda_error(err, "ordering streams of two GPUs");
}

/* ---- gpumem.Stream ------------------------------------------------------------------- */
/* A stream handle as another library gives it: 0 and 1 the legacy default
 * stream, 2 the per-thread default stream, else a cudaStream_t. */
static cudaStream_t handle_of(unsigned long long v)
{
    return v <= 1 ? NULL : v == 2 ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)v;
}

static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", "ptr", NULL};
    PyObject *dev_obj = Py_None, *ptr_obj = Py_None;
    long long v = 0;
    int dev = 0, prev = 0;
    cudaStream_t h = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:Stream", kwlist, &dev_obj, &ptr_obj))
        return NULL;
    if (ptr_obj != Py_None) {
        unsigned long long u;
        if (PyBool_Check(ptr_obj) || !PyLong_Check(ptr_obj)) {
            PyErr_Format(PyExc_TypeError, "Stream: ptr must be an int (a cudaStream_t), not "
                         "%.200s", Py_TYPE(ptr_obj)->tp_name);
            return NULL;
        }
        u = PyLong_AsUnsignedLongLong(ptr_obj);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "Stream: ptr=%R is not a stream handle (an address "
                         "of 0..2**64-1)", ptr_obj);
            return NULL;
        }
        h = handle_of(u);
    }
    if (gm_ensure_device() < 0)
        return NULL;
    if (dev_obj != Py_None) {
        if (gm_arg_long(dev_obj, "Stream", "device", &v) < 0 ||
            gm_device_check("Stream", "device", v) < 0)
            return NULL;
        dev = (int)v;
    } else if (h != NULL && h != cudaStreamPerThread) {
        GM_CUDA(cudaStreamGetDevice(h, &dev));
    } else if (gm_device_current(&dev) < 0) {
        return NULL;
    }
    gm_Stream *s = (gm_Stream *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->device = dev;
    s->handle = h;
    s->owned = ptr_obj == Py_None;
    if (s->owned) {
        if (gm_device_enter(dev, &prev) < 0) {
            Py_DECREF(s);
            return NULL;
        }
        cudaError_t err = cudaStreamCreateWithFlags(&s->handle, cudaStreamNonBlocking);
        gm_device_leave(prev);
        if (err != cudaSuccess) {
            s->owned = 0;
            s->handle = NULL;
            Py_DECREF(s);
            gm_set_cuda_error(err, "cudaStreamCreateWithFlags");
            return NULL;
        }
    }
    return (PyObject *)s;
fail:
    return NULL;
}

static void stream_dealloc(gm_Stream *s)
{
    /* Work queued on it still runs: CUDA frees the stream once it is done. */
    if (s->owned && s->handle && cudaStreamDestroy(s->handle) != cudaSuccess)
        (void)cudaGetLastError();
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *stream_synchronize(gm_Stream *s, PyObject *unused)
{
    cudaError_t err;
    int prev = 0;
    if (gm_ensure_device() < 0 || gm_device_enter(s->device, &prev) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    err = cudaStreamSynchronize(s->handle);
    Py_END_ALLOW_THREADS
    gm_device_leave(prev);
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, "cudaStreamSynchronize"), NULL;
    Py_RETURN_NONE;
}

static PyObject *stream_query(gm_Stream *s, PyObject *unused)
{
    int prev = 0;
    if (gm_ensure_device() < 0 || gm_device_enter(s->device, &prev) < 0)
        return NULL;
    cudaError_t err = cudaStreamQuery(s->handle);
    gm_device_leave(prev);
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        Py_RETURN_FALSE;
    }
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, "cudaStreamQuery"), NULL;
    Py_RETURN_TRUE;
}

/* s.wait(other): work queued on s from now on waits for what is queued on other. */
static PyObject *stream_wait(gm_Stream *s, PyObject *other)
{
    int prev = 0;
    if (!gm_Stream_Check(other)) {
        PyErr_Format(PyExc_TypeError, "Stream.wait: other must be a gpumem.Stream, not %.200s",
                     Py_TYPE(other)->tp_name);
        return NULL;
    }
    gm_Stream *o = (gm_Stream *)other;
    if (o->device != s->device) {
        PyErr_Format(PyExc_ValueError, "Stream.wait: other is a stream of device %d; this one "
                     "is of device %d", o->device, s->device);
        return NULL;
    }
    if (gm_ensure_device() < 0 || gm_device_enter(s->device, &prev) < 0)
        return NULL;
    int r = gm_stream_order(s->handle, o->handle);
    gm_device_leave(prev);
    return r < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_enter(gm_Stream *s, PyObject *unused)
{
    int prev = 0;
    if (n_opened == GM_STREAM_NESTING) {
        PyErr_Format(PyExc_RuntimeError, "Stream: more than %d `with stream:` blocks open in "
                     "one thread", GM_STREAM_NESTING);
        return NULL;
    }
    if (gm_ensure_device() < 0 || gm_device_enter(s->device, &prev) < 0)
        return NULL;
    opened[n_opened].stream = current[s->device];   /* its reference moves there */
    opened[n_opened].device = prev;
    n_opened++;
    current[s->device] = Py_NewRef((PyObject *)s);
    return Py_NewRef((PyObject *)s);
}

static PyObject *stream_exit(gm_Stream *s, PyObject *args)
{
    if (n_opened == 0 || current[s->device] != (PyObject *)s) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Stream: `with` blocks of streams must close in the order they opened");
        return NULL;
    }
    n_opened--;
    PyObject *old = current[s->device];
    current[s->device] = opened[n_opened].stream;
    opened[n_opened].stream = NULL;
    gm_device_leave(opened[n_opened].device);
    Py_DECREF(old);
    Py_RETURN_FALSE;
}

static PyObject *stream_cuda_stream(gm_Stream *s, PyObject *unused)
{
    return Py_BuildValue("(iK)", 0, (unsigned long long)(uintptr_t)s->handle);
}

static PyObject *stream_repr(gm_Stream *s)
{
    if (s->handle == NULL)
        return PyUnicode_FromFormat("Stream(device=%d, the legacy default stream)", s->device);
    return PyUnicode_FromFormat("Stream(device=%d, ptr=%#zx%s)", s->device,
                                (size_t)(uintptr_t)s->handle, s->owned ? "" : ", not gpumem's");
}

static PyObject *stream_ptr(gm_Stream *s, void *closure)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)s->handle);
}

static PyObject *stream_device(gm_Stream *s, void *closure)
{
    return PyLong_FromLong(s->device);
}

static PyGetSetDef stream_getset[] = {
    {"ptr", (getter)stream_ptr, NULL, "The cudaStream_t (int; 0: the legacy default stream).",
     NULL},
    {"device", (getter)stream_device, NULL, "The GPU the stream belongs to.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef stream_methods[] = {
    {"synchronize", (PyCFunction)stream_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\nWait until everything queued on the stream has finished."},
    {"query", (PyCFunction)stream_query, METH_NOARGS,
     "query($self, /)\n--\n\nTrue when everything queued on the stream has finished."},
    {"wait", (PyCFunction)stream_wait, METH_O,
     "wait($self, other, /)\n--\n\nWork queued on this stream from now on waits for what is "
     "queued on `other` now (an event: the host does not wait)."},
    {"__enter__", (PyCFunction)stream_enter, METH_NOARGS,
     "Make this stream the thread's current stream of its device, and its device current."},
    {"__exit__", (PyCFunction)stream_exit, METH_VARARGS, "Give back what __enter__ replaced."},
    {"__cuda_stream__", (PyCFunction)stream_cuda_stream, METH_NOARGS,
     "(0, ptr): the CUDA stream protocol."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject gm_Stream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpumem.Stream",
    .tp_basicsize = sizeof(gm_Stream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = stream_new,
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_repr = (reprfunc)stream_repr,
    .tp_getset = stream_getset,
    .tp_methods = stream_methods,
    .tp_doc = "Stream(device=None, *, ptr=None)\n--\n\n"
              "A CUDA stream of one GPU.  Stream() makes a new non-blocking stream on the "
              "current device (or `device`); Stream(ptr=handle) wraps another library's "
              "(torch.cuda.Stream().cuda_stream, cupy's .ptr; 0 or 1: the legacy default "
              "stream), which must stay alive while in use: CUDA cannot check a handle.  `with stream:` runs every gpumem call of the thread on its device "
              "there; each call waits for the streams its operands were written on.",
};

/* ---- module functions -------------------------------------------------------------- */
/* current_stream(device=None): the Stream calls on that device run on now. */
static PyObject *current_stream(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *obj = Py_None;
    int dev = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:current_stream", kwlist, &obj) ||
        gm_ensure_device() < 0 || gm_device_arg("current_stream", "device", obj, &dev) < 0)
        return NULL;
    if (current[dev])
        return Py_NewRef(current[dev]);
    gm_Stream *s = PyObject_New(gm_Stream, &gm_Stream_Type);
    if (s == NULL)
        return NULL;
    s->handle = NULL;
    s->device = dev;
    s->owned = 0;
    return (PyObject *)s;
}

/* synchronize(device=None): wait for every device (or one). */
static PyObject *synchronize(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *obj = Py_None;
    int first = 0, last = 0, prev = 0;
    cudaError_t err = cudaSuccess;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:synchronize", kwlist, &obj) ||
        gm_ensure_device() < 0)
        return NULL;
    if (obj == Py_None) {
        last = gm_device_count() - 1;
    } else {
        if (gm_device_arg("synchronize", "device", obj, &first) < 0)
            return NULL;
        last = first;
    }
    if (gm_device_current(&prev) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (int d = first; d <= last && err == cudaSuccess; d++) {
        if (!gm_device_used(d)) /* nothing queued there: no context is made for it */
            continue;
        err = cudaSetDevice(d);
        if (err == cudaSuccess)
            err = cudaDeviceSynchronize();
    }
    Py_END_ALLOW_THREADS
    gm_device_leave(prev);
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, "cudaDeviceSynchronize"), NULL;
    Py_RETURN_NONE;
}

static PyMethodDef stream_module_methods[] = {
    {"current_stream", (PyCFunction)(void (*)(void))current_stream, METH_VARARGS | METH_KEYWORDS,
     "current_stream($module, /, device=None)\n--\n\nThe Stream gpumem's calls on `device` "
     "(None: the current device) run on in this thread: the one of the innermost open `with "
     "stream:` block, else the legacy default stream."},
    {"synchronize", (PyCFunction)(void (*)(void))synchronize, METH_VARARGS | METH_KEYWORDS,
     "synchronize($module, /, device=None)\n--\n\nWait until every kernel and copy queued on "
     "every GPU (or on `device` only) has finished, on any stream; raises CudaError for a "
     "fault among them."},
    {NULL, NULL, 0, NULL},
};

int gm_stream_init(PyObject *module)
{
    if (PyType_Ready(&gm_Stream_Type) < 0 ||
        PyModule_AddObjectRef(module, "Stream", (PyObject *)&gm_Stream_Type) < 0)
        return -1;
    return PyModule_AddFunctions(module, stream_module_methods);
}
