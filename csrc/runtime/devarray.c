/* devarray.c -- the DeviceArray type: its one constructor (over memory
 * gpumem allocates, or memory another library owns), copies to and from the
 * host, __dlpack__ and from_dlpack() over dlpack.c's protocols, to_device(),
 * empty(); and the operands of kernel calls. */
#include "gm.h"

#include <stdio.h>
#include <string.h>

/* ---- DeviceArray ----------------------------------------------------------- */
/* The one constructor: a DeviceArray over `ptr` (nbytes of this shape and
 * dtype; dtype borrowed).  owner NULL: gpumem's own memory, freed with the
 * array; else who frees it (stolen: released with the array, or here on
 * failure), the memory not counted as gpumem's. */
static gm_DeviceArray *make(const char *fn, void *ptr, int ndim, const npy_intp *shape,
                            PyArray_Descr *dtype, PyObject *owner)
{
    size_t nbytes;
    gm_DeviceArray *d = gm_shape_nbytes(ndim, shape, dtype, &nbytes, fn) < 0
                            ? NULL : PyObject_New(gm_DeviceArray, &gm_DeviceArray_Type);
    if (d == NULL) {
        Py_XDECREF(owner);
        return NULL;
    }
    d->ptr = ptr;
    d->ndim = ndim;
    memcpy(d->shape, shape, sizeof(npy_intp) * (size_t)ndim);
    Py_INCREF(dtype);
    d->dtype = dtype;
    d->nbytes = owner ? nbytes : 0; /* gpumem's: set once allocated */
    d->owner = owner;
    d->device = -1; /* set by whoever made it */
    d->stream = NULL;
    d->stream_keep = NULL;
    d->pending = d->has_producer = 0;
    d->producer = NULL;
    return d;
}

gm_DeviceArray *gm_devarray_new(int ndim, const npy_intp *shape, PyArray_Descr *dtype)
{
    size_t nbytes;
    gm_DeviceArray *d = make("device array", NULL, ndim, shape, dtype, NULL);
    if (d == NULL)
        return NULL;
    if (gm_device_current(&d->device) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    gm_shape_nbytes(ndim, shape, dtype, &nbytes, "device array"); /* checked by make() */
    if (gm_device_alloc(nbytes, &d->ptr) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    d->nbytes = nbytes;
    return d;
}

/* How from_dlpack_obj takes another library's array: whole (from_dlpack, to_device),
 * or as a kernel call's operand, pending until the call has checked every argument
 * (a __cuda_array_interface__ touches no device until gm_devarray_attach), and as
 * its out=, which must be writable. */
enum { TAKE_NOW, TAKE_OPERAND, TAKE_OUT };

/* from_dlpack(x): x's device memory as a DeviceArray, shared (no copy).  Errors name
 * fn and the argument (`name`).  cai: x's __cuda_array_interface__ where the caller has
 * read it (borrowed), else NULL. */
static PyObject *from_dlpack_obj(PyObject *x, const char *fn, const char *name, int take,
                                 PyObject *cai)
{
    gm_foreign f;
    char who[160];
    if (gm_DeviceArray_Check(x))
        return Py_NewRef(x);
    snprintf(who, sizeof who, "%s: %s", fn, name);
    if (gm_dlpack_import(x, who, take != TAKE_NOW, cai, &f) < 0)
        return NULL;
    if (take == TAKE_OUT && f.read_only) {
        PyErr_Format(PyExc_ValueError, "%s is read-only (its owner says so): a kernel cannot "
                     "write its result there", who);
        Py_DECREF(f.dtype);
        Py_DECREF(f.owner);
        Py_XDECREF(f.stream_keep);
        return NULL;
    }
    gm_DeviceArray *d = make(fn, f.ptr, f.ndim, f.shape, f.dtype, f.owner);
    Py_DECREF(f.dtype);
    if (d == NULL) {
        Py_XDECREF(f.stream_keep);
        return NULL;
    }
    d->device = f.device;
    d->stream = f.stream;
    d->stream_keep = f.stream_keep; /* taken over */
    d->pending = f.pending;
    d->has_producer = f.has_producer;
    d->producer = f.producer;
    return (PyObject *)d;
}

int gm_devarray_attach(gm_DeviceArray *d, const char *fn, const char *name)
{
    char who[160];
    if (!d->pending)
        return 0;
    snprintf(who, sizeof who, "%s: %s", fn, name);
    if (gm_foreign_attach(who, d->ptr, d->nbytes, d->has_producer, d->producer, &d->device,
                          &d->stream, &d->stream_keep) < 0)
        return -1;
    d->pending = 0;
    return 0;
}

int gm_devarray_wait(gm_DeviceArray *d, cudaStream_t stream)
{
    int prev = 0;
    if (d->stream == stream)
        return 0;
    if (gm_device_enter(d->device, &prev) < 0)
        return -1;
    int r = gm_stream_order(stream, d->stream);
    gm_device_leave(prev);
    return r;
}

void gm_devarray_used(gm_DeviceArray *d, cudaStream_t stream, PyObject *keep)
{
    d->stream = stream;
    Py_XINCREF(keep);
    Py_XSETREF(d->stream_keep, keep);
}

static PyObject *from_dlpack(PyObject *self, PyObject *x)
{
    return from_dlpack_obj(x, "from_dlpack", "x", TAKE_NOW, NULL);
}

/* __dlpack__: a capsule of this array's memory, or of a device copy (copy=True). */
static PyObject *devarray_dlpack(gm_DeviceArray *d, PyObject *args, PyObject *kwargs)
{
    int versioned, copy, sync, prev = 0;
    cudaStream_t consumer;
    PyObject *cap = NULL;
    if (gm_dlpack_request(args, kwargs, d->device, &versioned, &copy, &sync, &consumer) < 0)
        return NULL;
    if (gm_ensure_device() < 0 || gm_device_enter(d->device, &prev) < 0)
        return NULL;
    gm_DeviceArray *src = (gm_DeviceArray *)Py_NewRef(d);
    if (copy) {   /* a device copy, queued on the stream of d's newest work */
        gm_DeviceArray *c = gm_devarray_new(d->ndim, d->shape, d->dtype);
        cudaError_t err = cudaSuccess;
        if (c != NULL && d->nbytes && (gm_stream_order(d->stream, NULL) < 0 ||
            (err = cudaMemcpyAsync(c->ptr, d->ptr, d->nbytes, cudaMemcpyDeviceToDevice,
                                   d->stream)) != cudaSuccess)) {
            if (err != cudaSuccess)
                gm_set_cuda_error(err, "cudaMemcpyAsync (__dlpack__ copy=True)");
            Py_CLEAR(c);
        }
        if (c == NULL)
            goto done;
        gm_devarray_used(c, d->stream, d->stream_keep);
        Py_SETREF(src, c);
    }
    /* The consumer's stream waits for the array's newest work (the array API's
     * rule for `stream`): an event, not a device-wide wait. */
    if (sync && gm_stream_order(consumer, src->stream) < 0)
        goto done;
    cap = gm_dlpack_capsule((PyObject *)src, src->ptr, src->device, src->ndim, src->shape,
                            src->dtype, versioned, copy);
done:
    gm_device_leave(prev);
    Py_DECREF(src);
    return cap;
}

static PyObject *devarray_dlpack_device(gm_DeviceArray *d, PyObject *unused)
{
    return gm_dlpack_device(d->device);
}

gm_DeviceArray *gm_devarray_from_host(PyArrayObject *arr)
{
    PyArrayObject *c = (PyArrayObject *)PyArray_GETCONTIGUOUS(arr); /* copies if strided */
    if (c == NULL)
        return NULL;
    gm_DeviceArray *d = gm_devarray_new(PyArray_NDIM(c), PyArray_DIMS(c), PyArray_DESCR(c));
    if (d != NULL && gm_copy_host(d->ptr, PyArray_DATA(c), d->nbytes, 1) < 0)
        Py_CLEAR(d);
    Py_DECREF(c);
    return d;
}

/* `arr` (an ndarray, named `what` for fn) has d's dtype and shape; TypeError or
 * ValueError naming both otherwise.  For get(out=) and to_device(out=). */
static int same_layout(const char *fn, const char *what, PyArrayObject *arr,
                       const gm_DeviceArray *d, const char *dname)
{
    char want[256], got[256];
    if (!PyArray_EquivTypes(PyArray_DESCR(arr), d->dtype)) {
        PyErr_Format(PyExc_TypeError, "%s: %s has dtype %R; %s has %R", fn, what,
                     (PyObject *)PyArray_DESCR(arr), dname, (PyObject *)d->dtype);
        return -1;
    }
    int same = PyArray_NDIM(arr) == d->ndim;
    for (int i = 0; same && i < d->ndim; i++)
        same = PyArray_DIMS(arr)[i] == d->shape[i];
    if (same)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s has shape %s; %s has shape %s", fn, what,
                 gm_shape_str(PyArray_NDIM(arr), PyArray_DIMS(arr), got, sizeof got), dname,
                 gm_shape_str(d->ndim, d->shape, want, sizeof want));
    return -1;
}

/* get(out=): a writable C-contiguous ndarray of d's shape and dtype. */
static int check_get_out(gm_DeviceArray *d, PyObject *out)
{
    if (!PyArray_Check(out)) {
        PyErr_Format(PyExc_TypeError, "get: out must be a numpy.ndarray, not %.200s",
                     Py_TYPE(out)->tp_name);
        return -1;
    }
    PyArrayObject *o = (PyArrayObject *)out;
    if (same_layout("get", "out", o, d, "the DeviceArray") < 0)
        return -1;
    if (!PyArray_IS_C_CONTIGUOUS(o) || !PyArray_ISWRITEABLE(o)) {
        PyErr_SetString(PyExc_ValueError,
                        "get: out must be C-contiguous and writeable (e.g. numpy.empty(shape, "
                        "dtype) or gpumem.pinned_empty(shape, dtype))");
        return -1;
    }
    return 0;
}

PyObject *gm_devarray_get_into(gm_DeviceArray *d, PyObject *out)
{
    PyArrayObject *a;
    int prev = 0;
    if (out != NULL && out != Py_None) {
        if (check_get_out(d, out) < 0)
            return NULL;
        Py_INCREF(out);
        a = (PyArrayObject *)out;
    } else {
        Py_INCREF(d->dtype);
        a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, d->dtype, d->ndim, d->shape, NULL,
                                                  NULL, 0, NULL);
        if (a == NULL)
            return NULL;
    }
    /* The copy runs on the device's legacy default stream, after d's newest work. */
    int r = gm_device_enter(d->device, &prev);
    if (r == 0) {
        r = gm_stream_order(NULL, d->stream);
        if (r == 0)
            r = gm_copy_host(PyArray_DATA(a), d->ptr, d->nbytes, 0);
        gm_device_leave(prev);
    }
    if (r < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}

PyObject *gm_devarray_get(gm_DeviceArray *d) { return gm_devarray_get_into(d, NULL); }

/* numpy.ma arrays are ndarrays whose mask a kernel would silently drop: refused,
 * naming fn and the argument.  0, or -1 with TypeError. */
static int refuse_masked(PyObject *obj, const char *fn, const char *name)
{
    static PyObject *masked_type; /* numpy.ma.MaskedArray, looked up once */
    if (PyArray_CheckExact(obj) || !PyArray_Check(obj))
        return 0;
    if (masked_type == NULL) {
        PyObject *ma = PyImport_ImportModule("numpy.ma");
        masked_type = ma ? PyObject_GetAttrString(ma, "MaskedArray") : NULL;
        Py_XDECREF(ma);
        if (masked_type == NULL)
            return -1;
    }
    int masked = PyObject_IsInstance(obj, masked_type);
    if (masked > 0)
        PyErr_Format(PyExc_TypeError,
                     "%s: %s is a numpy.ma masked array; gpumem's kernels would ignore its mask "
                     "-- pass %s.filled(value) (or numpy.asarray(%s) to drop the mask)",
                     fn, name, name, name);
    return masked ? -1 : 0;
}

static PyObject *gm_to_device(PyObject *self, PyObject *obj)
{
    if (gm_DeviceArray_Check(obj)) {
        PyErr_SetString(PyExc_TypeError,
                        "to_device: a is already a DeviceArray (use it as it is)");
        return NULL;
    }
    if (!PyArray_Check(obj)) {
        /* Another library's array: its device memory is shared, a host one
         * (DLPack device kDLCPU) goes through NumPy and is copied.  An interface
         * that raises is the caller's error, chained (not "has no interface"). */
        PyObject *iface = NULL;
        int cai = gm_has_protocol(obj, "__cuda_array_interface__", "to_device", "a", &iface);
        int dl = cai ? 0 : gm_has_protocol(obj, "__dlpack__", "to_device", "a", NULL);
        if (cai < 0 || dl < 0)
            return NULL;
        if (cai) {
            PyObject *r = from_dlpack_obj(obj, "to_device", "a", TAKE_NOW, iface);
            Py_DECREF(iface);
            return r;
        }
        if (!dl) {
            PyErr_Format(PyExc_TypeError,
                         "to_device: a must be a numpy.ndarray or an array with __dlpack__ or "
                         "__cuda_array_interface__, not %.200s",
                         Py_TYPE(obj)->tp_name);
            return NULL;
        }
        PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
        long type = 0, id = 0;
        int host = dev != NULL && PyTuple_Check(dev) && PyArg_ParseTuple(dev, "ll", &type, &id) &&
                   type == 1;
        Py_XDECREF(dev);
        PyErr_Clear();
        if (!host)
            return from_dlpack_obj(obj, "to_device", "a", TAKE_NOW, NULL);
        PyObject *np = PyImport_ImportModule("numpy");
        PyObject *arr = np ? PyObject_CallMethod(np, "from_dlpack", "O", obj) : NULL;
        Py_XDECREF(np);
        if (arr == NULL)
            return NULL;
        PyObject *res = PyArray_Check(arr) ? gm_to_device(self, arr) : NULL;
        if (res == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "to_device: numpy.from_dlpack(a) gave no ndarray");
        Py_DECREF(arr);
        return res;
    }
    if (refuse_masked(obj, "to_device", "a") < 0 ||
        gm_check_plain_dtype(PyArray_DESCR((PyArrayObject *)obj), "to_device: a has dtype") < 0)
        return NULL;
    if (gm_ensure_device() < 0)
        return NULL;
    return (PyObject *)gm_devarray_from_host((PyArrayObject *)obj);
}

/* to_device(a, out=d): a's bytes into an existing DeviceArray of its shape and dtype. */
static PyObject *to_device_into(PyObject *obj, PyObject *out)
{
    if (!gm_DeviceArray_Check(out)) {
        PyErr_Format(PyExc_TypeError, "to_device: out must be a gpumem.DeviceArray, not %.200s",
                     Py_TYPE(out)->tp_name);
        return NULL;
    }
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "to_device: with out=, a must be a numpy.ndarray, not "
                     "%.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (refuse_masked(obj, "to_device", "a") < 0)
        return NULL;
    PyArrayObject *a = (PyArrayObject *)obj;
    gm_DeviceArray *d = (gm_DeviceArray *)out;
    int prev = 0;
    if (same_layout("to_device", "a", a, d, "out") < 0 || gm_ensure_device() < 0)
        return NULL;
    PyArrayObject *c = (PyArrayObject *)PyArray_GETCONTIGUOUS(a); /* copies if strided */
    if (c == NULL)
        return NULL;
    /* on out's device's legacy default stream, after out's newest work */
    int r = gm_device_enter(d->device, &prev);
    if (r == 0) {
        r = gm_stream_order(NULL, d->stream);
        if (r == 0)
            r = gm_copy_host(d->ptr, PyArray_DATA(c), d->nbytes, 1);
        if (r == 0)
            gm_devarray_used(d, NULL, NULL);
        gm_device_leave(prev);
    }
    Py_DECREF(c);
    return r < 0 ? NULL : Py_NewRef(out);
}

/* to_device(x, device=dev) of an array on another GPU: a new DeviceArray on dev, its
 * bytes copied between the GPUs (cudaMemcpyPeerAsync: over the link when peer access
 * is on, staged by the driver otherwise) on dev's current stream, after x's newest
 * work; x's own stream then waits for the copy before x is written or freed (and
 * with finish, the host too). */
static PyObject *copy_between(gm_DeviceArray *x, int dev, int finish)
{
    cudaStream_t s = NULL;
    PyObject *keep = NULL;
    int prev = 0;
    if (gm_device_enter(dev, &prev) < 0)
        return NULL;
    gm_DeviceArray *d = NULL;
    if (gm_call_stream("to_device", dev, &s, &keep) < 0 ||
        (d = gm_devarray_new(x->ndim, x->shape, x->dtype)) == NULL)
        goto fail;
    if (x->nbytes) {
        cudaError_t err;
        if (gm_stream_order_across(dev, s, x->device, x->stream) < 0)
            goto fail;
        err = cudaMemcpyPeerAsync(d->ptr, dev, x->ptr, x->device, x->nbytes, s);
        if (err != cudaSuccess) {
            gm_set_cuda_error(err, "cudaMemcpyPeerAsync");
            goto fail;
        }
        if (gm_stream_order_across(x->device, x->stream, dev, s) < 0)
            goto fail;
        /* finish: x is another library's, which knows nothing of this copy and may
         * free or write its memory as soon as we return */
        if (finish && (err = cudaStreamSynchronize(s)) != cudaSuccess) {
            gm_set_cuda_error(err, "cudaStreamSynchronize");
            goto fail;
        }
    }
    gm_devarray_used(d, s, keep);
    goto out;
fail:
    Py_CLEAR(d);
out:
    Py_XDECREF(keep);
    gm_device_leave(prev);
    return (PyObject *)d;
}

static PyObject *gm_to_device_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"", "out", "device", NULL}; /* a is positional-only */
    PyObject *obj, *out = Py_None, *dev_obj = Py_None, *res;
    int dev, prev = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:to_device", kwlist, &obj, &out,
                                     &dev_obj))
        return NULL;
    if (out != Py_None) {
        if (dev_obj != Py_None) {
            PyErr_SetString(PyExc_TypeError, "to_device: give out= or device=, not both (out "
                            "is on its own device)");
            return NULL;
        }
        return to_device_into(obj, out);
    }
    if (dev_obj == Py_None)
        return gm_to_device(self, obj);
    if (gm_device_arg("to_device", "device", dev_obj, &dev) < 0)
        return NULL;
    if (gm_DeviceArray_Check(obj)) {      /* gpumem's array: on dev already, or copied */
        gm_DeviceArray *x = (gm_DeviceArray *)obj;
        if (x->device == dev) {
            PyErr_Format(PyExc_TypeError, "to_device: a is already a DeviceArray on device %d "
                         "(use it as it is)", dev);
            return NULL;
        }
        return copy_between(x, dev, 0);
    }
    if (gm_device_enter(dev, &prev) < 0)
        return NULL;
    res = gm_to_device(self, obj);
    gm_device_leave(prev);
    if (res != NULL && ((gm_DeviceArray *)res)->device != dev) {
        /* another library's array on another GPU: shared there, copied here */
        PyObject *copy = copy_between((gm_DeviceArray *)res, dev, 1);
        Py_SETREF(res, copy);
    }
    return res;
}

static PyObject *gm_empty(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyArray_Dims shape;
    PyArray_Descr *dtype;
    PyObject *result = NULL;
    PyObject *shape_obj, *dtype_obj = Py_None, *dev_obj = Py_None;
    size_t nbytes;
    int dev, prev = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:empty", kwlist, &shape_obj, &dtype_obj,
                                     &dev_obj) ||
        gm_shape_dtype("empty", shape_obj, dtype_obj, &shape, &dtype, &nbytes) < 0)
        return NULL;
    if (gm_device_arg("empty", "device", dev_obj, &dev) == 0 &&
        gm_device_enter(dev, &prev) == 0) {
        result = (PyObject *)gm_devarray_new(shape.len, shape.ptr, dtype);
        gm_device_leave(prev);
    }
    Py_DECREF(dtype);
    PyDimMem_FREE(shape.ptr);
    return result;
}

static void devarray_dealloc(gm_DeviceArray *d)
{
    if (d->owner)
        Py_DECREF(d->owner); /* borrowed memory (from_dlpack): its owner frees it */
    else                     /* after its newest work, whichever device is current */
        gm_device_free_on(d->device, d->stream, d->ptr, d->nbytes);
    Py_XDECREF(d->stream_keep);
    Py_XDECREF(d->dtype);
    PyObject_Free(d);
}

static PyObject *devarray_shape(gm_DeviceArray *d, void *closure)
{
    PyObject *t = PyTuple_New(d->ndim);
    for (int i = 0; t && i < d->ndim; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(d->shape[i]));
    return t;
}

static PyObject *devarray_dtype(gm_DeviceArray *d, void *closure)
{
    Py_INCREF(d->dtype);
    return (PyObject *)d->dtype;
}

static PyObject *devarray_nbytes(gm_DeviceArray *d, void *closure)
{
    return PyLong_FromSize_t(d->nbytes);
}

static PyObject *devarray_ndim(gm_DeviceArray *d, void *closure)
{
    return PyLong_FromLong(d->ndim);
}

static PyObject *devarray_size(gm_DeviceArray *d, void *closure)
{
    npy_intp n = 1;
    for (int i = 0; i < d->ndim; i++)
        n *= d->shape[i];
    return PyLong_FromSsize_t(n);
}

static PyObject *devarray_ptr(gm_DeviceArray *d, void *closure)
{
    return PyLong_FromVoidPtr(d->ptr);
}

static PyObject *devarray_device(gm_DeviceArray *d, void *closure)
{
    return PyLong_FromLong(d->device);
}

static PyObject *devarray_cai(gm_DeviceArray *d, void *closure)
{
    PyObject *shape = devarray_shape(d, NULL);
    PyObject *typestr = PyObject_GetAttrString((PyObject *)d->dtype, "str");
    if (shape == NULL || typestr == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(typestr);
        return NULL;
    }
    /* Version 3; C-contiguous (strides None).  Calls return once their kernels are
     * queued: `stream` is where the array's newest work was queued (1: the legacy
     * default stream), which a consumer waits for before it reads. */
    return Py_BuildValue("{s:N,s:N,s:(NO),s:O,s:i,s:K}", "shape", shape, "typestr", typestr,
                         "data", PyLong_FromVoidPtr(d->ptr), Py_False, "strides", Py_None,
                         "version", 3, "stream",
                         (unsigned long long)gm_stream_value(d->stream));
}

static PyObject *devarray_get_py(gm_DeviceArray *d, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"out", NULL};
    PyObject *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get", kwlist, &out))
        return NULL;
    return gm_devarray_get_into(d, out);
}

/* np.asarray(d) would otherwise make a 0-d object array: say what to do. */
static PyObject *devarray_array(gm_DeviceArray *d, PyObject *args, PyObject *kwargs)
{
    PyErr_SetString(PyExc_TypeError,
                    "a DeviceArray is in device memory: NumPy cannot read it implicitly; copy it "
                    "to the host with .get() (or .get(out=ndarray))");
    return NULL;
}

static PyObject *devarray_repr(gm_DeviceArray *d)
{
    char buf[256];
    gm_shape_str(d->ndim, d->shape, buf, sizeof buf);
    return PyUnicode_FromFormat("DeviceArray(shape=%s, dtype=%S, nbytes=%zu, device=%d)", buf,
                                (PyObject *)d->dtype, d->nbytes, d->device);
}

static Py_ssize_t devarray_len(gm_DeviceArray *d)
{
    if (d->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d DeviceArray");
        return -1;
    }
    return d->shape[0];
}

static PyGetSetDef devarray_getset[] = {
    {"shape", (getter)devarray_shape, NULL, "Shape (tuple of int).", NULL},
    {"dtype", (getter)devarray_dtype, NULL, "NumPy dtype of the elements.", NULL},
    {"nbytes", (getter)devarray_nbytes, NULL, "Bytes of device memory held.", NULL},
    {"ndim", (getter)devarray_ndim, NULL, "Number of dimensions.", NULL},
    {"size", (getter)devarray_size, NULL, "Number of elements.", NULL},
    {"ptr", (getter)devarray_ptr, NULL, "Device address (int).", NULL},
    {"device", (getter)devarray_device, NULL, "The GPU whose memory it is (int).", NULL},
    {"__cuda_array_interface__", (getter)devarray_cai, NULL,
     "CUDA Array Interface, version 3 (CuPy, Numba, PyTorch read it).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef devarray_methods[] = {
    {"get", (PyCFunction)(void (*)(void))devarray_get_py, METH_VARARGS | METH_KEYWORDS,
     "get($self, /, out=None)\n--\n\nCopy to the host: a new C-contiguous numpy.ndarray, or "
     "into `out` (a writeable C-contiguous ndarray of the same shape and dtype), returned."},
    {"__array__", (PyCFunction)(void (*)(void))devarray_array, METH_VARARGS | METH_KEYWORDS,
     "Refused: NumPy cannot read device memory; call .get()."},
    {"__dlpack__", (PyCFunction)(void (*)(void))devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule sharing this array's device memory (DLPack 1.0 versioned when "
     "max_version >= (1, 0), else the legacy capsule); copy=True exports a device copy.  "
     "The consumer's `stream` (None or 1: the legacy default stream, 2: the per-thread one, "
     "else a cudaStream_t; -1: none) waits for the array's newest work through an event."},
    {"__dlpack_device__", (PyCFunction)devarray_dlpack_device, METH_NOARGS,
     "(2, device): the CUDA device whose memory it is, as DLPack names it."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods devarray_as_sequence = {
    .sq_length = (lenfunc)devarray_len,
};

PyTypeObject gm_DeviceArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpumem.DeviceArray",
    .tp_basicsize = sizeof(gm_DeviceArray),
    .tp_dealloc = (destructor)devarray_dealloc,
    .tp_repr = (reprfunc)devarray_repr,
    .tp_as_sequence = &devarray_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A C-contiguous array in device memory, freed when released.\n\n"
              "Make one with gpumem.to_device(ndarray) or gpumem.empty(shape, dtype); "
              "copy it back with .get().",
    .tp_methods = devarray_methods,
    .tp_getset = devarray_getset,
};

static PyMethodDef memory_methods[] = {
    {"to_device", (PyCFunction)(void (*)(void))gm_to_device_py, METH_VARARGS | METH_KEYWORDS,
     "to_device($module, a, /, out=None, *, device=None)\n--\n\nCopy an ndarray to device memory: a new "
     "DeviceArray, or into `out` (a DeviceArray of the same shape and dtype: no allocation), "
     "returned.  An array already on the GPU (__dlpack__ or __cuda_array_interface__) is "
     "shared, not copied (out= is for ndarrays).  device: the GPU (None: the current one); "
     "an array on another GPU (a DeviceArray too) is copied there between the GPUs (over "
     "the link when peer access is on: enable_peer_access)."},
    {"empty", (PyCFunction)(void (*)(void))gm_empty, METH_VARARGS | METH_KEYWORDS,
     "empty($module, /, shape, dtype=None, *, device=None)\n--\n\nAn uninitialised "
     "DeviceArray of this shape and dtype (float32 by default) on GPU `device` (None: the "
     "current one)."},
    {"from_dlpack", from_dlpack, METH_O,
     "from_dlpack($module, x, /)\n--\n\nA DeviceArray sharing x's device memory (no copy): "
     "any object with __dlpack__ or __cuda_array_interface__ on a GPU, C-contiguous; gpumem's "
     "stream there (the current one) waits for the producer's work."},
    {NULL, NULL, 0, NULL},
};

int gm_memory_init(PyObject *module)
{
    if (PyType_Ready(&gm_DeviceArray_Type) < 0 ||
        PyModule_AddObjectRef(module, "DeviceArray", (PyObject *)&gm_DeviceArray_Type) < 0)
        return -1;
    return PyModule_AddFunctions(module, memory_methods);
}

/* ---- kernel operands -------------------------------------------------------- */
int gm_operand_parse(PyObject *obj, const char *fn, const char *name, int typenum,
                     gm_operand *op)
{
    PyArray_Descr *dtype;
    memset(op, 0, sizeof *op);
    op->fn = fn;
    op->name = name;
    op->obj = obj;
    if (gm_DeviceArray_Check(obj)) {
        gm_DeviceArray *d = (gm_DeviceArray *)obj;
        op->on_device = 1;
        op->ndim = d->ndim;
        op->shape = d->shape;
        dtype = d->dtype;
    } else if (PyArray_Check(obj)) {
        if (refuse_masked(obj, fn, name) < 0)
            return -1;
        op->ndim = PyArray_NDIM((PyArrayObject *)obj);
        op->shape = PyArray_DIMS((PyArrayObject *)obj);
        dtype = PyArray_DESCR((PyArrayObject *)obj);
    } else {
        /* Another library's CUDA array: shared, no copy, checked as from_dlpack() checks
         * (its interface now, its memory on the device when the call's other arguments
         * have passed too: gm_operand_upload). */
        PyObject *iface = NULL;   /* read once: CuPy builds the dict on every read */
        int cai = gm_has_protocol(obj, "__cuda_array_interface__", fn, name, &iface);
        int dl = cai ? 0 : gm_has_protocol(obj, "__dlpack__", fn, name, NULL);
        if (cai < 0 || dl < 0)
            return -1;
        if (!cai && !dl) {
            PyErr_Format(PyExc_TypeError,
                         "%s: %s must be a numpy.ndarray or gpumem.DeviceArray, not %.200s (a "
                         "CUDA array with __cuda_array_interface__ or __dlpack__ is taken too)",
                         fn, name, Py_TYPE(obj)->tp_name);
            return -1;
        }
        op->wrapped = from_dlpack_obj(obj, fn, name, TAKE_OPERAND, iface);
        Py_XDECREF(iface);
        if (op->wrapped == NULL)
            return -1;
        gm_DeviceArray *d = (gm_DeviceArray *)op->wrapped;
        op->obj = op->wrapped;
        op->on_device = 1;
        op->ndim = d->ndim;
        op->shape = d->shape;
        dtype = d->dtype;
    }
    if (dtype->type_num != typenum || !PyArray_ISNBO(dtype->byteorder)) {
        PyArray_Descr *want = PyArray_DescrFromType(typenum);
        PyErr_Format(PyExc_TypeError,
                     "%s: %s has dtype %R; this kernel takes %R only (convert with "
                     ".astype(numpy.%S))",
                     fn, name, (PyObject *)dtype, (PyObject *)want, (PyObject *)want);
        Py_XDECREF(want);
        return -1;
    }
    return 0;
}

long long gm_operand_size(const gm_operand *op)
{
    long long n = 1;
    for (int i = 0; i < op->ndim; i++)
        n *= op->shape[i];
    return n;
}

int gm_operand_upload(gm_operand *op)
{
    if (op->on_device) {
        if (gm_devarray_attach((gm_DeviceArray *)op->obj, op->fn, op->name) < 0)
            return -1;
        Py_INCREF(op->obj);
        op->dev = (gm_DeviceArray *)op->obj;
        return 0;
    }
    op->dev = gm_devarray_from_host((PyArrayObject *)op->obj);
    return op->dev ? 0 : -1;
}

void gm_operand_release(gm_operand *op)
{
    Py_CLEAR(op->dev);
    Py_CLEAR(op->wrapped);
}

PyObject *gm_out_operand(PyObject *out, const char *fn)
{
    if (gm_DeviceArray_Check(out) || PyArray_Check(out))
        return Py_NewRef(out);
    PyObject *iface = NULL;
    int cai = gm_has_protocol(out, "__cuda_array_interface__", fn, "out", &iface);
    int dl = cai ? 0 : gm_has_protocol(out, "__dlpack__", fn, "out", NULL);
    if (cai < 0 || dl < 0)
        return NULL;
    PyObject *r = cai || dl ? from_dlpack_obj(out, fn, "out", TAKE_OUT, iface) : Py_NewRef(out);
    Py_XDECREF(iface);
    return r;
}

int gm_check_out(PyObject *out, const char *fn, int ndim, const npy_intp *shape, int typenum)
{
    char want[256], got[256];
    if (!gm_DeviceArray_Check(out)) {
        PyErr_Format(PyExc_TypeError, "%s: out must be a gpumem.DeviceArray, not %.200s (a CUDA "
                     "array with __cuda_array_interface__ or __dlpack__ is taken too)", fn,
                     Py_TYPE(out)->tp_name);
        return -1;
    }
    gm_DeviceArray *d = (gm_DeviceArray *)out;
    if (d->dtype->type_num != typenum) {
        PyArray_Descr *w = PyArray_DescrFromType(typenum);
        PyErr_Format(PyExc_TypeError, "%s: out has dtype %R; it must be %R", fn,
                     (PyObject *)d->dtype, (PyObject *)w);
        Py_XDECREF(w);
        return -1;
    }
    if (d->ndim != ndim || memcmp(d->shape, shape, sizeof(npy_intp) * (size_t)ndim) != 0) {
        PyErr_Format(PyExc_ValueError, "%s: out has shape %s; the result has shape %s", fn,
                     gm_shape_str(d->ndim, d->shape, got, sizeof got),
                     gm_shape_str(ndim, shape, want, sizeof want));
        return -1;
    }
    return 0;
}
