/* devarray.c -- device buffers, the DeviceArray type and kernel operands. */
#include "gm.h"

#include <stdio.h>
#include <string.h>

/* ---- device allocations -------------------------------------------------- */
static long long gm_held = 0; /* bytes of device memory gpumem holds now */

long long gm_bytes_held(void) { return gm_held; }

int gm_device_alloc(size_t nbytes, void **ptr)
{
    *ptr = NULL;
    if (nbytes == 0)
        return 0;
    if (gm_ensure_device() < 0)
        return -1;
    cudaError_t err = cudaMalloc(ptr, nbytes);
    if (err == cudaErrorMemoryAllocation) {
        size_t free_b = 0, total_b = 0;
        (void)cudaGetLastError();
        cudaMemGetInfo(&free_b, &total_b);
        (void)cudaGetLastError();
        *ptr = NULL;
        PyErr_Format(gm_DeviceMemoryError,
                     "cudaMalloc of %zu bytes failed: out of device memory "
                     "(%zu of %zu bytes free; gpumem holds %lld)",
                     nbytes, free_b, total_b, gm_held);
        return -1;
    }
    if (err != cudaSuccess) {
        *ptr = NULL;
        return gm_set_cuda_error(err, "cudaMalloc");
    }
    gm_held += (long long)nbytes;
    return 0;
}

void gm_device_free(void *ptr, size_t nbytes)
{
    if (ptr == NULL)
        return;
    /* During interpreter shutdown the runtime may already be unloading;
     * a failed free then has nothing left to leak. */
    if (cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
    gm_held -= (long long)nbytes;
}

const char *gm_shape_str(int ndim, const npy_intp *shape, char *buf, size_t len)
{
    size_t pos = 0;
    pos += (size_t)snprintf(buf + pos, len - pos, "(");
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (pos < len)
        snprintf(buf + pos, len - pos, ndim == 1 ? ",)" : ")");
    return buf;
}

/* ---- DeviceArray ----------------------------------------------------------- */
/* Bytes of an array of this shape and dtype; ValueError for a bad shape. */
int gm_shape_nbytes(int ndim, const npy_intp *shape, PyArray_Descr *dtype, size_t *out,
                    const char *fn)
{
    if (ndim > GM_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: shape: at most %d dimensions, not %d", fn, GM_MAXDIM,
                     ndim);
        return -1;
    }
    size_t nbytes = (size_t)PyDataType_ELSIZE(dtype);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: shape: negative dimension %lld", fn,
                         (long long)shape[i]);
            return -1;
        }
        if (shape[i] && nbytes > (size_t)PY_SSIZE_T_MAX / (size_t)shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s: shape: array is too big", fn);
            return -1;
        }
        nbytes *= (size_t)shape[i];
    }
    *out = nbytes;
    return 0;
}

gm_DeviceArray *gm_devarray_new(int ndim, const npy_intp *shape, PyArray_Descr *dtype)
{
    size_t nbytes;
    if (gm_shape_nbytes(ndim, shape, dtype, &nbytes, "device array") < 0)
        return NULL;
    gm_DeviceArray *d = PyObject_New(gm_DeviceArray, &gm_DeviceArray_Type);
    if (d == NULL)
        return NULL;
    d->ptr = NULL;
    d->nbytes = 0;
    d->owner = NULL;
    d->ndim = ndim;
    memcpy(d->shape, shape, sizeof(npy_intp) * (size_t)ndim);
    Py_INCREF(dtype);
    d->dtype = dtype;
    if (gm_device_alloc(nbytes, &d->ptr) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    d->nbytes = nbytes;
    return d;
}

/* Plain numbers only: bool, integers, floats, complex (no strings, bytes,
 * dates, objects or structs).  `what` is "fn: argument has dtype". */
int gm_check_plain_dtype(PyArray_Descr *dtype, const char *what)
{
    const char kind = dtype->kind;
    if (PyDataType_REFCHK(dtype) || PyDataType_HASFIELDS(dtype) ||
        (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c')) {
        PyErr_Format(PyExc_TypeError,
                     "%s %R, which cannot live in device memory (only plain numeric dtypes: "
                     "bool, integers, floats, complex)",
                     what, (PyObject *)dtype);
        return -1;
    }
    if (!PyArray_ISNBO(dtype->byteorder)) {
        PyErr_Format(PyExc_TypeError, "%s %R, which is not in native byte order", what,
                     (PyObject *)dtype);
        return -1;
    }
    return 0;
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
    if (gm_copy_host(PyArray_DATA(a), d->ptr, d->nbytes, 0) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}

PyObject *gm_devarray_get(gm_DeviceArray *d) { return gm_devarray_get_into(d, NULL); }

static PyObject *gm_to_device(PyObject *self, PyObject *obj)
{
    if (gm_DeviceArray_Check(obj)) {
        PyErr_SetString(PyExc_TypeError,
                        "to_device: a is already a DeviceArray (use it as it is)");
        return NULL;
    }
    if (!PyArray_Check(obj)) {
        /* Another library's array: its device memory is shared, a host one
         * (DLPack device kDLCPU) goes through NumPy and is copied. */
        if (PyObject_HasAttrString(obj, "__cuda_array_interface__"))
            return gm_from_dlpack_obj(obj, "to_device");
        if (!PyObject_HasAttrString(obj, "__dlpack__")) {
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
            return gm_from_dlpack_obj(obj, "to_device");
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
    if (gm_check_plain_dtype(PyArray_DESCR((PyArrayObject *)obj), "to_device: a has dtype") < 0)
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
    PyArrayObject *a = (PyArrayObject *)obj;
    gm_DeviceArray *d = (gm_DeviceArray *)out;
    if (same_layout("to_device", "a", a, d, "out") < 0 || gm_ensure_device() < 0)
        return NULL;
    PyArrayObject *c = (PyArrayObject *)PyArray_GETCONTIGUOUS(a); /* copies if strided */
    if (c == NULL)
        return NULL;
    int r = gm_copy_host(d->ptr, PyArray_DATA(c), d->nbytes, 1);
    Py_DECREF(c);
    return r < 0 ? NULL : Py_NewRef(out);
}

static PyObject *gm_to_device_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"", "out", NULL}; /* a is positional-only */
    PyObject *obj, *out = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:to_device", kwlist, &obj, &out))
        return NULL;
    if (out != Py_None)
        return to_device_into(obj, out);
    return gm_to_device(self, obj);
}

int gm_shape_dtype(const char *fn, PyObject *shape_obj, PyObject *dtype_obj,
                   PyArray_Dims *shape, PyArray_Descr **dtype, size_t *nbytes)
{
    char what[64];
    shape->ptr = NULL;
    shape->len = 0;
    *dtype = NULL;
    if (shape_obj == Py_None || !PyArray_IntpConverter(shape_obj, shape)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: shape must be an int or a sequence of ints, not %.200s",
                     fn, Py_TYPE(shape_obj)->tp_name);
        goto fail;
    }
    if (!PyArray_DescrConverter2(dtype_obj, dtype)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: dtype=%R is not a NumPy dtype", fn, dtype_obj);
        goto fail;
    }
    if (*dtype == NULL)
        *dtype = PyArray_DescrFromType(NPY_FLOAT32);
    snprintf(what, sizeof what, "%s: dtype is", fn);
    if (gm_check_plain_dtype(*dtype, what) == 0 &&
        gm_shape_nbytes(shape->len, shape->ptr, *dtype, nbytes, fn) == 0)
        return 0;
fail:
    Py_CLEAR(*dtype);
    PyDimMem_FREE(shape->ptr);
    shape->ptr = NULL;
    return -1;
}

static PyObject *gm_empty(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", NULL};
    PyArray_Dims shape;
    PyArray_Descr *dtype;
    PyObject *result = NULL;
    PyObject *shape_obj, *dtype_obj = Py_None;
    size_t nbytes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:empty", kwlist, &shape_obj, &dtype_obj) ||
        gm_shape_dtype("empty", shape_obj, dtype_obj, &shape, &dtype, &nbytes) < 0)
        return NULL;
    if (gm_ensure_device() == 0)
        result = (PyObject *)gm_devarray_new(shape.len, shape.ptr, dtype);
    Py_DECREF(dtype);
    PyDimMem_FREE(shape.ptr);
    return result;
}

static void devarray_dealloc(gm_DeviceArray *d)
{
    if (d->owner)
        Py_DECREF(d->owner); /* borrowed memory (from_dlpack): its owner frees it */
    else
        gm_device_free(d->ptr, d->nbytes);
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

static PyObject *devarray_cai(gm_DeviceArray *d, void *closure)
{
    PyObject *shape = devarray_shape(d, NULL);
    PyObject *typestr = PyObject_GetAttrString((PyObject *)d->dtype, "str");
    if (shape == NULL || typestr == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(typestr);
        return NULL;
    }
    /* Version 3; C-contiguous (strides None); every gpumem launch is
     * synchronized before it returns, so consumers need no stream sync. */
    return Py_BuildValue("{s:N,s:N,s:(NO),s:O,s:i,s:O}", "shape", shape, "typestr", typestr, "data",
                         PyLong_FromVoidPtr(d->ptr), Py_False, "strides", Py_None, "version", 3,
                         "stream", Py_None);
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
    return PyUnicode_FromFormat("DeviceArray(shape=%s, dtype=%S, nbytes=%zu)", buf,
                                (PyObject *)d->dtype, d->nbytes);
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
    {"__dlpack__", (PyCFunction)(void (*)(void))gm_devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule sharing this array's device memory (DLPack 1.0 versioned when "
     "max_version >= (1, 0), else the legacy capsule); copy=True exports a device copy."},
    {"__dlpack_device__", (PyCFunction)gm_devarray_dlpack_device, METH_NOARGS,
     "(2, 0): CUDA device 0, as DLPack names it."},
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
     "to_device($module, a, /, out=None)\n--\n\nCopy an ndarray to device memory: a new "
     "DeviceArray, or into `out` (a DeviceArray of the same shape and dtype: no allocation), "
     "returned.  An array already on the GPU (__dlpack__ or __cuda_array_interface__) is "
     "shared, not copied (out= is for ndarrays)."},
    {"empty", (PyCFunction)(void (*)(void))gm_empty, METH_VARARGS | METH_KEYWORDS,
     "empty($module, /, shape, dtype=None)\n--\n\nAn uninitialised DeviceArray of this shape "
     "and dtype (float32 by default)."},
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
    op->obj = obj;
    if (gm_DeviceArray_Check(obj)) {
        gm_DeviceArray *d = (gm_DeviceArray *)obj;
        op->on_device = 1;
        op->ndim = d->ndim;
        op->shape = d->shape;
        dtype = d->dtype;
    } else if (PyArray_Check(obj)) {
        op->ndim = PyArray_NDIM((PyArrayObject *)obj);
        op->shape = PyArray_DIMS((PyArrayObject *)obj);
        dtype = PyArray_DESCR((PyArrayObject *)obj);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must be a numpy.ndarray or gpumem.DeviceArray, not %.200s", fn, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
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
        Py_INCREF(op->obj);
        op->dev = (gm_DeviceArray *)op->obj;
        return 0;
    }
    op->dev = gm_devarray_from_host((PyArrayObject *)op->obj);
    return op->dev ? 0 : -1;
}

void gm_operand_release(gm_operand *op) { Py_CLEAR(op->dev); }

int gm_check_out(PyObject *out, const char *fn, int ndim, const npy_intp *shape, int typenum)
{
    char want[256], got[256];
    if (!gm_DeviceArray_Check(out)) {
        PyErr_Format(PyExc_TypeError, "%s: out must be a gpumem.DeviceArray, not %.200s", fn,
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
