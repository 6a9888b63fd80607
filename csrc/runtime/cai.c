/* cai.c -- the CUDA array interface (version 0 to 3) of another library's array,
 * read as a whole without touching any device: the dict's every key checked and
 * turned into a pending gm_foreign description, whose memory dlpack.c's
 * gm_foreign_attach then looks at on the device.  A wrong field is named (the
 * argument, the key, the value), so that a call refuses a bad interface, dtype or
 * shape the same with or without a GPU.  Also the pieces dlpack.c shares: stream
 * numbers as handles, the C-contiguity rule, filling a gm_foreign. */
#include "gm.h"

#include <stdint.h>
#include <string.h>

/* ---- shared with dlpack.c (below it in the memory layer) ---------------------- */
/* A stream handle of the array interfaces (DLPack's __dlpack__(stream=), CAI v3's
 * 'stream'): 1 the legacy default stream, 2 the per-thread default stream, any
 * other positive int a cudaStream_t; 0 is disallowed by both (ambiguous), and
 * -1 (DLPack only: no synchronisation) is the caller's to handle.  `what` and
 * `key` name it (written one after the other, and only for an error: a foreign
 * operand's every call passes here).  0 / -1 with ValueError or TypeError. */
int gm_stream_handle(PyObject *obj, const char *what, const char *key, cudaStream_t *out)
{
    if (PyBool_Check(obj) || !PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s%s must be None or an int, not %.200s", what, key,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (PyErr_Occurred() || v == 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s%s=%R is not a stream: 1 is the legacy default stream, 2 the per-thread "
                     "default stream, any other positive int below 2**64 a cudaStream_t (0 is "
                     "disallowed by the protocol)", what, key, obj);
        return -1;
    }
    *out = v == 1 ? NULL : v == 2 ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)v;
    return 0;
}

/* C-contiguous strides (in elements, or bytes when `bytes`)?  Dimensions of
 * size 1 may carry any stride; an empty array is contiguous. */
int gm_c_contiguous(int ndim, const npy_intp *shape, const int64_t *strides, int64_t unit)
{
    int64_t want = unit;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] != 1 && strides[i] != want)
            return 0;
        want *= shape[i];
    }
    return 1;
}

/* Fill *out: dtype borrowed (out gets a new reference), owner stolen. */
void gm_foreign_describe(gm_foreign *out, void *ptr, int ndim, const npy_intp *shape,
                     PyArray_Descr *dtype, PyObject *owner)
{
    out->ptr = ptr;
    out->ndim = ndim;
    memcpy(out->shape, shape, sizeof(npy_intp) * (size_t)ndim);
    Py_INCREF(dtype);
    out->dtype = dtype;
    out->owner = owner;
}

/* ---- the interface's dict --------------------------------------------------------- */
/* The interface's keys (gm_cai_keyid's order) as interned str objects, made once: a lookup
 * by C string makes and hashes a new str on every call, a part of every foreign
 * operand's cost. */
static const char *const cai_names[GM_CAI_NKEYS] = {"data", "shape", "typestr", "strides",
                                                    "mask", "stream", "version"};

PyObject *gm_cai_key(gm_cai_keyid id)
{
    static PyObject *keys[GM_CAI_NKEYS];   /* kept for the process's life */
    if (keys[id] == NULL)
        keys[id] = PyUnicode_InternFromString(cai_names[id]);
    return keys[id];
}

/* One key of the interface dict, of a Python type; NULL (no error) when absent. */
static int cai_item(PyObject *cai, gm_cai_keyid id, PyTypeObject *type, int required,
                    const char *fn, PyObject **out)
{
    const char *key = cai_names[id];
    PyObject *k = gm_cai_key(id);
    if (k == NULL)
        return -1;
    *out = PyDict_GetItemWithError(cai, k); /* borrowed */
    if (*out == NULL && PyErr_Occurred())
        return -1;
    if (*out == NULL || (*out == Py_None && !required)) {
        *out = NULL;
        if (!required)
            return 0;
        PyErr_Format(PyExc_ValueError, "%s.__cuda_array_interface__ has no '%s'", fn, key);
        return -1;
    }
    if (!PyObject_TypeCheck(*out, type)) {
        PyErr_Format(PyExc_TypeError,
                     "%s.__cuda_array_interface__['%s'] must be %s %s, not %.200s", fn, key,
                     strchr("aeiou", type->tp_name[0]) ? "an" : "a", type->tp_name,
                     Py_TYPE(*out)->tp_name);
        return -1;
    }
    return 0;
}

/* An int (not bool) of the interface, into *v; `what` names it, with item `i` where i >= 0
 * (['shape'][i]: the name is written only for an error). */
static int cai_index(PyObject *o, const char *fn, const char *what, Py_ssize_t i, long long *v)
{
    char at[32] = "";
    if (!PyBool_Check(o) && PyLong_Check(o)) {
        *v = PyLong_AsLongLong(o);
        if (!(*v == -1 && PyErr_Occurred()))
            return 0;
        PyErr_Clear();
        if (i >= 0)
            snprintf(at, sizeof at, "[%zd]", i);
        PyErr_Format(PyExc_ValueError, "%s.__cuda_array_interface__%s%s=%R is out of range", fn,
                     what, at, o);
        return -1;
    }
    if (i >= 0)
        snprintf(at, sizeof at, "[%zd]", i);
    PyErr_Format(PyExc_TypeError, "%s.__cuda_array_interface__%s%s must be an int, not %.200s",
                 fn, what, at, Py_TYPE(o)->tp_name);
    return -1;
}

/* The interface checked as a whole, touching no device: a dict of version 0..3,
 * data (pointer aligned to its dtype, read-only flag True/False), shape (ints >= 0),
 * typestr (byte order, kind, size: a plain numeric NumPy type), strides (None or
 * C-contiguous), no mask, stream (None or a stream).  *out is left pending: the
 * device half is gm_foreign_attach. */
int gm_cai_describe(PyObject *x, PyObject *cai, const char *fn, gm_foreign *out)
{
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, "%s.__cuda_array_interface__ must be a dict, not %.200s",
                     fn, Py_TYPE(cai)->tp_name);
        return -1;
    }
    PyObject *data, *shape_obj, *typestr, *strides, *mask, *stream, *version;
    if (cai_item(cai, GM_CAI_DATA, &PyTuple_Type, 1, fn, &data) < 0 ||
        cai_item(cai, GM_CAI_SHAPE, &PyTuple_Type, 1, fn, &shape_obj) < 0 ||
        cai_item(cai, GM_CAI_TYPESTR, &PyUnicode_Type, 1, fn, &typestr) < 0 ||
        cai_item(cai, GM_CAI_STRIDES, &PyTuple_Type, 0, fn, &strides) < 0 ||
        cai_item(cai, GM_CAI_MASK, &PyBaseObject_Type, 0, fn, &mask) < 0 ||
        cai_item(cai, GM_CAI_STREAM, &PyLong_Type, 0, fn, &stream) < 0 ||
        cai_item(cai, GM_CAI_VERSION, &PyLong_Type, 1, fn, &version) < 0)
        return -1;
    long long v;
    if (cai_index(version, fn, "['version']", -1, &v) < 0 || v < 0 || v > 3) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError,
                         "%s.__cuda_array_interface__ has version %lld; gpumem reads 0..3", fn,
                         v);
        return -1;
    }
    if (PyTuple_GET_SIZE(data) != 2) {
        PyErr_Format(PyExc_ValueError,
                     "%s.__cuda_array_interface__['data'] must be (pointer, read_only), not a "
                     "tuple of %zd", fn, PyTuple_GET_SIZE(data));
        return -1;
    }
    PyObject *ro = PyTuple_GET_ITEM(data, 1);
    if (!PyBool_Check(ro)) {
        PyErr_Format(PyExc_TypeError,
                     "%s.__cuda_array_interface__['data'][1] (read-only) must be True or False, "
                     "not %.200R", fn, ro);
        return -1;
    }
    out->read_only = ro == Py_True;
    long long addr;
    if (cai_index(PyTuple_GET_ITEM(data, 0), fn, "['data'][0]", -1, &addr) < 0)
        return -1;
    if (addr < 0) {
        PyErr_Format(PyExc_ValueError, "%s.__cuda_array_interface__['data'][0]=%lld is not "
                     "an address", fn, addr);
        return -1;
    }
    if (mask != NULL) {
        PyErr_Format(PyExc_ValueError, "%s has a mask; gpumem takes unmasked arrays", fn);
        return -1;
    }
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape_obj);
    if (ndim > GM_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s has %zd dimensions; gpumem holds at most %d", fn,
                     ndim, GM_MAXDIM);
        return -1;
    }
    npy_intp shape[GM_MAXDIM];
    int64_t st[GM_MAXDIM];
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (cai_index(PyTuple_GET_ITEM(shape_obj, i), fn, "['shape']", i, &v) < 0)
            return -1;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError,
                         "%s.__cuda_array_interface__['shape'][%zd]=%lld is negative", fn, i, v);
            return -1;
        }
        shape[i] = (npy_intp)v;
    }
    /* The protocol's typestr is NumPy's array-interface one: byte order, kind, size. */
    const char *ts = PyUnicode_AsUTF8(typestr);
    if (ts == NULL)
        return -1;
    if (strchr("<>|", ts[0]) == NULL || ts[0] == '\0' || strlen(ts) < 3) {
        PyErr_Format(PyExc_ValueError,
                     "%s.__cuda_array_interface__['typestr']=%R is not byte order, kind and "
                     "size (e.g. '<f4')", fn, typestr);
        return -1;
    }
    /* The plain little-endian types straight from their code (NumPy's converter parses the
     * string anew on every call, a measurable part of a foreign operand's cost); any other
     * string through the converter, which says what it is. */
    PyArray_Descr *dtype = NULL;
    int typenum = -1;
    if ((ts[0] == '<' || ts[0] == '|') && ts[2] && !ts[3] && NPY_BYTE_ORDER == NPY_LITTLE_ENDIAN) {
        const char kind = ts[1], size = ts[2];
        typenum = kind == 'f' ? (size == '2' ? NPY_FLOAT16 : size == '4' ? NPY_FLOAT32
                                 : size == '8' ? NPY_FLOAT64 : -1)
                  : kind == 'i' ? (size == '1' ? NPY_INT8 : size == '2' ? NPY_INT16
                                   : size == '4' ? NPY_INT32 : size == '8' ? NPY_INT64 : -1)
                  : kind == 'u' ? (size == '1' ? NPY_UINT8 : size == '2' ? NPY_UINT16
                                   : size == '4' ? NPY_UINT32 : size == '8' ? NPY_UINT64 : -1)
                  : kind == 'b' && size == '1' ? NPY_BOOL : -1;
    }
    if (typenum >= 0) {
        if ((dtype = PyArray_DescrFromType(typenum)) == NULL)
            return -1;
    } else if (!PyArray_DescrConverter(typestr, &dtype)) {
        gm_raise_from(PyExc_ValueError,
                      "%s.__cuda_array_interface__['typestr']=%R is not a NumPy type string",
                      fn, typestr);
        return -1;
    }
    char what[64] = "";
    size_t nbytes = 0;
    if (typenum < 0)   /* the codes above are plain numbers; any other dtype is checked */
        snprintf(what, sizeof what, "%s has dtype", fn);
    if ((typenum < 0 && gm_check_plain_dtype(dtype, what) < 0) ||
        gm_shape_nbytes((int)ndim, shape, dtype, &nbytes, fn) < 0) {
        Py_DECREF(dtype);
        return -1;
    }
    if (strides != NULL) {
        int bad = PyTuple_GET_SIZE(strides) != ndim;
        for (Py_ssize_t i = 0; !bad && i < ndim; i++) {
            PyObject *o = PyTuple_GET_ITEM(strides, i);
            bad = PyBool_Check(o) || !PyLong_Check(o);
            st[i] = bad ? 0 : PyLong_AsLongLong(o);
            bad = bad || PyErr_Occurred() != NULL;
        }
        PyErr_Clear();
        if (bad || !gm_c_contiguous((int)ndim, shape, st, (int64_t)PyDataType_ELSIZE(dtype))) {
            Py_DECREF(dtype);
            PyErr_Format(PyExc_ValueError,
                         "%s is not C-contiguous (or its strides are not %zd ints); a "
                         "DeviceArray is (make a contiguous copy first, e.g. x.copy())",
                         fn, ndim);
            return -1;
        }
    }
    void *ptr = (void *)(uintptr_t)addr;
    if (addr == 0 && nbytes > 0) {
        Py_DECREF(dtype);
        PyErr_Format(PyExc_ValueError,
                     "%s's data pointer is 0 (NULL) while it claims %zu bytes", fn, nbytes);
        return -1;
    }
    size_t align = (size_t)PyDataType_ALIGNMENT(dtype);
    if (align > 1 && (uintptr_t)ptr % align != 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s's data pointer %p is not aligned to its dtype %R (%zu bytes)", fn, ptr,
                     (PyObject *)dtype, align);
        Py_DECREF(dtype);
        return -1;
    }
    if (stream != NULL &&
        gm_stream_handle(stream, fn, ".__cuda_array_interface__['stream']", &out->producer) < 0) {
        Py_DECREF(dtype);
        return -1;
    }
    out->has_producer = stream != NULL;
    gm_foreign_describe(out, ptr, (int)ndim, shape, dtype, Py_NewRef(x));
    Py_DECREF(dtype);
    out->device = -1;
    out->pending = 1;
    return 0;
}
