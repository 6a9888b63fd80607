/* dlpack.c -- the DLPack and CUDA-array-interface protocols on raw device
 * memory, so arrays go in and out of other libraries without a copy: the
 * checks of __dlpack__'s arguments and its capsule (DLPack 1.0, the versioned
 * capsule when the consumer asks for it, the legacy one otherwise), and the
 * import of any object with __dlpack__ or __cuda_array_interface__ (its dict is
 * read in cai.c) whose memory is on a GPU, as a gm_foreign description -- and
 * the streams of both:
 * a consumer's stream is made to wait for the array's newest work (an event,
 * no host wait), and gpumem's stream for a producer's.  It knows
 * no DeviceArray: devarray.c, above it, builds DeviceArrays from what it
 * gives and offers __dlpack__ and from_dlpack().  The structs below are the
 * DLPack ABI (dlpack.h, v1.0), declared here so the build needs no extra header. */
#include "gm.h"

#include <stdint.h>
#include <string.h>

#include <cuda.h>

/* ---- the DLPack ABI ------------------------------------------------------------- */
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_COMPLEX = 5, DL_BOOL = 6 };
#define DL_FLAG_READ_ONLY (1ULL << 0)
#define DL_FLAG_IS_COPIED (1ULL << 1)

typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

static const char CAP_LEGACY[] = "dltensor", CAP_LEGACY_USED[] = "used_dltensor";
static const char CAP_VERSIONED[] = "dltensor_versioned",
                  CAP_VERSIONED_USED[] = "used_dltensor_versioned";

/* ---- export -------------------------------------------------------------------------- */
/* One allocation: the managed tensor (either kind) and its shape and strides. */
typedef struct {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
    int64_t shape[GM_MAXDIM];
    int64_t strides[GM_MAXDIM];
    PyObject *array; /* what keeps the memory alive (owned): the DeviceArray */
} export_ctx;

static void export_free(export_ctx *ctx)
{
    if (ctx == NULL)
        return;
    PyGILState_STATE g = PyGILState_Ensure(); /* a consumer may free it from any thread */
    Py_XDECREF(ctx->array);
    PyGILState_Release(g);
    PyMem_RawFree(ctx);
}

static void legacy_deleter(DLManagedTensor *t) { export_free((export_ctx *)t->manager_ctx); }
static void versioned_deleter(DLManagedTensorVersioned *t)
{
    export_free((export_ctx *)t->manager_ctx);
}

/* An unconsumed capsule still owns its tensor. */
static void legacy_capsule_free(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, CAP_LEGACY)) {
        DLManagedTensor *t = PyCapsule_GetPointer(cap, CAP_LEGACY);
        if (t && t->deleter)
            t->deleter(t);
    }
}

static void versioned_capsule_free(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, CAP_VERSIONED)) {
        DLManagedTensorVersioned *t = PyCapsule_GetPointer(cap, CAP_VERSIONED);
        if (t && t->deleter)
            t->deleter(t);
    }
}

static int dl_dtype(PyArray_Descr *d, DLDataType *out)
{
    out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
    out->lanes = 1;
    switch (d->kind) {
    case 'b': out->code = DL_BOOL; return 0;
    case 'i': out->code = DL_INT; return 0;
    case 'u': out->code = DL_UINT; return 0;
    case 'f': out->code = DL_FLOAT; return 0;
    case 'c': out->code = DL_COMPLEX; return 0;
    }
    PyErr_Format(PyExc_BufferError, "__dlpack__: dtype %R has no DLPack type", (PyObject *)d);
    return -1;
}

static int is_cuda_device(PyObject *dl_device, int dev)
{
    long long type = -1, id = -1;
    if (!PyTuple_Check(dl_device) || PyTuple_GET_SIZE(dl_device) != 2)
        return 0;
    type = PyLong_AsLongLong(PyTuple_GET_ITEM(dl_device, 0));
    id = PyLong_AsLongLong(PyTuple_GET_ITEM(dl_device, 1));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return type == DL_CUDA && id == dev;
}

int gm_dlpack_request(PyObject *args, PyObject *kwargs, int dev, int *versioned, int *copy_out,
                      int *sync, cudaStream_t *consumer)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    *versioned = 0;
    *sync = 1;
    *consumer = NULL; /* None: the consumer uses the legacy default stream */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return -1;
    if (stream != Py_None) {
        int overflow = 0;
        int is_int = PyLong_Check(stream) && !PyBool_Check(stream);
        long long v = is_int ? PyLong_AsLongLongAndOverflow(stream, &overflow) : 0;
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (is_int && !overflow && v == -1)
            *sync = 0; /* the consumer asks for no synchronisation */
        else if (gm_stream_handle(stream, "__dlpack__: stream", "", consumer) < 0)
            return -1;
    }
    if (max_version != Py_None) {
        unsigned long major = 0, minor = 0;
        if (!PyTuple_Check(max_version) || !PyArg_ParseTuple(max_version, "kk", &major, &minor)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "__dlpack__: max_version must be None or a (major, minor) tuple, not %R",
                         max_version);
            return -1;
        }
        *versioned = major >= 1;
    }
    if (dl_device != Py_None && !is_cuda_device(dl_device, dev)) {
        PyErr_Format(PyExc_BufferError,
                     "__dlpack__: dl_device=%R: this DeviceArray lives on GPU %d, (2, %d); copy "
                     "it to the host with .get()",
                     dl_device, dev, dev);
        return -1;
    }
    if (copy != Py_None && !PyBool_Check(copy)) {
        PyErr_Format(PyExc_TypeError, "__dlpack__: copy must be None, True or False, not %.200s",
                     Py_TYPE(copy)->tp_name);
        return -1;
    }
    *copy_out = copy == Py_True;
    return 0;
}

PyObject *gm_dlpack_capsule(PyObject *keep, void *ptr, int dev, int ndim, const npy_intp *shape,
                            PyArray_Descr *dtype, int versioned, int copied)
{
    export_ctx *ctx = PyMem_RawCalloc(1, sizeof *ctx);
    if (ctx == NULL)
        return PyErr_NoMemory();
    ctx->array = Py_NewRef(keep);
    DLTensor t = {0};
    t.data = ptr;
    t.device.device_type = DL_CUDA;
    t.device.device_id = dev;
    t.ndim = ndim;
    if (dl_dtype(dtype, &t.dtype) < 0) {
        export_free(ctx);
        return NULL;
    }
    long long stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        ctx->shape[i] = (int64_t)shape[i];
        ctx->strides[i] = (int64_t)stride; /* in elements */
        stride *= shape[i] ? shape[i] : 1;
    }
    t.shape = ctx->shape;
    t.strides = ctx->strides;
    PyObject *cap;
    if (versioned) {
        ctx->versioned.version.major = 1;
        ctx->versioned.version.minor = 0;
        ctx->versioned.manager_ctx = ctx;
        ctx->versioned.deleter = versioned_deleter;
        ctx->versioned.flags = copied ? DL_FLAG_IS_COPIED : 0;
        ctx->versioned.dl_tensor = t;
        cap = PyCapsule_New(&ctx->versioned, CAP_VERSIONED, versioned_capsule_free);
    } else {
        ctx->legacy.dl_tensor = t;
        ctx->legacy.manager_ctx = ctx;
        ctx->legacy.deleter = legacy_deleter;
        cap = PyCapsule_New(&ctx->legacy, CAP_LEGACY, legacy_capsule_free);
    }
    if (cap == NULL)
        export_free(ctx);
    return cap;
}

PyObject *gm_dlpack_device(int dev)
{
    return Py_BuildValue("(ii)", DL_CUDA, dev);
}

/* ---- import ---------------------------------------------------------------------------- */
/* The owner of borrowed memory: calls the producer's deleter when the
 * DeviceArray that wraps the memory goes. */
static void import_capsule_free(PyObject *cap)
{
    const char *name = PyCapsule_GetName(cap);
    void *p = PyCapsule_GetPointer(cap, name);
    if (p == NULL) {
        PyErr_Clear();
        return;
    }
    if (name && strcmp(name, "gpumem.dlpack_versioned") == 0) {
        DLManagedTensorVersioned *t = p;
        if (t->deleter)
            t->deleter(t);
    } else {
        DLManagedTensor *t = p;
        if (t->deleter)
            t->deleter(t);
    }
}

static PyArray_Descr *numpy_dtype(DLDataType dt, const char *fn)
{
    int type = -1;
    if (dt.lanes == 1) {
        switch (dt.code) {
        case DL_BOOL: type = dt.bits == 8 ? NPY_BOOL : -1; break;
        case DL_INT:
            type = dt.bits == 8 ? NPY_INT8 : dt.bits == 16 ? NPY_INT16 : dt.bits == 32 ? NPY_INT32
                 : dt.bits == 64 ? NPY_INT64 : -1;
            break;
        case DL_UINT:
            type = dt.bits == 8 ? NPY_UINT8 : dt.bits == 16 ? NPY_UINT16
                 : dt.bits == 32 ? NPY_UINT32 : dt.bits == 64 ? NPY_UINT64 : -1;
            break;
        case DL_FLOAT:
            type = dt.bits == 16 ? NPY_FLOAT16 : dt.bits == 32 ? NPY_FLOAT32
                 : dt.bits == 64 ? NPY_FLOAT64 : -1;
            break;
        case DL_COMPLEX:
            type = dt.bits == 64 ? NPY_COMPLEX64 : dt.bits == 128 ? NPY_COMPLEX128 : -1;
            break;
        }
    }
    if (type < 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s has DLPack dtype (code %d, %d bits, %d lanes), which gpumem does not "
                     "hold (only bool, integers, float16/32/64 and complex64/128)",
                     fn, dt.code, dt.bits, dt.lanes);
        return NULL;
    }
    return PyArray_DescrFromType(type);
}

/* A DLPack device gpumem reads: CUDA (or managed) memory of one of this machine's
 * GPUs. */
static int device_ok(const char *fn, long long type, long long id)
{
    int n = gm_device_count();
    if ((type == DL_CUDA || type == DL_CUDA_MANAGED) && id >= 0 && id < n)
        return 0;
    if (type == DL_CPU || type == DL_CUDA_HOST)
        PyErr_Format(PyExc_ValueError,
                     "%s is in host memory (DLPack device %lld); copy it with "
                     "gpumem.to_device(x)",
                     fn, type);
    else
        PyErr_Format(PyExc_ValueError,
                     "%s is on DLPack device (%lld, %lld); gpumem uses CUDA devices (2, 0) to "
                     "(2, %d) here", fn, type, id, n - 1);
    return -1;
}

/* ---- the memory a foreign array claims -------------------------------------------- */
typedef CUresult (*pointer_attributes_fn)(unsigned int n, CUpointer_attribute *attributes,
                                          void **data, CUdeviceptr ptr);
static pointer_attributes_fn pointer_attributes; /* cuPointerGetAttributes, resolved once */

/* [ptr, ptr + nbytes) must be device memory of one GPU (*dev: which) inside one
 * allocation: a foreign array that claims more than its memory holds would have
 * kernels read and write past its end.  One driver query per array, every call (a
 * freed and reused address is seen as it is now): memory type, managed or not, device
 * and the allocation's range together.  Pointer 0 only for no bytes (*dev left as it
 * is).  0, or -1 with ValueError naming fn. */
static int check_extent(const char *fn, void *ptr, size_t nbytes, int *dev)
{
    if (nbytes == 0)
        return 0;
    if (ptr == NULL) {
        PyErr_Format(PyExc_ValueError,
                     "%s's data pointer is 0 (NULL) while it claims %zu bytes", fn, nbytes);
        return -1;
    }
    if (pointer_attributes == NULL) {
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
        cudaError_t err = cudaGetDriverEntryPointByVersion("cuPointerGetAttributes",
                                                           (void **)&pointer_attributes, 12000,
                                                           cudaEnableDefault, &q);
        if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || pointer_attributes == NULL) {
            pointer_attributes = NULL;
            return gm_set_cuda_error(err != cudaSuccess ? err : cudaErrorSymbolNotFound,
                                     "cudaGetDriverEntryPointByVersion(\"cuPointerGetAttributes\")");
        }
    }
    unsigned int type = 0, managed = 0;
    int ordinal = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *into[] = {&type, &managed, &ordinal, &start, &size};
    /* A pointer the driver does not know is no error here: every attribute reads 0. */
    if (pointer_attributes(5, what, into, (CUdeviceptr)ptr) != CUDA_SUCCESS ||
        (type != CU_MEMORYTYPE_DEVICE && !managed) || ordinal < 0 ||
        ordinal >= gm_device_count()) {
        PyErr_Format(PyExc_ValueError, "%s's data at %p is not device memory of a GPU", fn, ptr);
        return -1;
    }
    *dev = ordinal;
    if (size == 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s's data at %p lies in no allocation the driver knows", fn, ptr);
        return -1;
    }
    const uintptr_t p = (uintptr_t)ptr, end = (uintptr_t)start + size;
    if (p < (uintptr_t)start || p > end || nbytes > end - p) {
        PyErr_Format(PyExc_ValueError,
                     "%s claims %zu bytes from %p, but the allocation there holds %zu bytes "
                     "from %p: %zu bytes past its end",
                     fn, nbytes, ptr, size, (void *)start,
                     (size_t)(p + nbytes > end ? p + nbytes - end : 0));
        return -1;
    }
    return 0;
}

static int from_capsule(PyObject *cap, const char *fn, gm_foreign *out)
{
    int versioned = PyCapsule_IsValid(cap, CAP_VERSIONED);
    if (!versioned && !PyCapsule_IsValid(cap, CAP_LEGACY)) {
        PyErr_Format(PyExc_TypeError,
                     "%s.__dlpack__() returned %.200s, not an unused DLPack capsule", fn,
                     Py_TYPE(cap)->tp_name);
        return -1;
    }
    void *p = PyCapsule_GetPointer(cap, versioned ? CAP_VERSIONED : CAP_LEGACY);
    if (p == NULL)
        return -1;
    DLTensor *t;
    if (versioned) {
        DLManagedTensorVersioned *m = p;
        if (m->version.major != 1) {
            PyErr_Format(PyExc_BufferError, "%s gave a DLPack %u.%u tensor; gpumem reads 1.x",
                         fn, m->version.major, m->version.minor);
            return -1;
        }
        t = &m->dl_tensor;
        out->read_only = (m->flags & DL_FLAG_READ_ONLY) != 0;
    } else {
        t = &((DLManagedTensor *)p)->dl_tensor;
    }
    if (device_ok(fn, t->device.device_type, t->device.device_id) < 0)
        return -1;
    if (t->ndim < 0 || t->ndim > GM_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s has %d dimensions; gpumem holds at most %d", fn,
                     (int)t->ndim, GM_MAXDIM);
        return -1;
    }
    npy_intp shape[GM_MAXDIM];
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s has a negative dimension", fn);
            return -1;
        }
        shape[i] = (npy_intp)t->shape[i];
    }
    if (t->strides && !gm_c_contiguous(t->ndim, shape, t->strides, 1)) {
        PyErr_Format(PyExc_ValueError,
                     "%s is not C-contiguous; a DeviceArray is (make a contiguous copy first, "
                     "e.g. x.copy() or x.contiguous())",
                     fn);
        return -1;
    }
    PyArray_Descr *dtype = numpy_dtype(t->dtype, fn);
    if (dtype == NULL)
        return -1;
    /* Consume the capsule: from here its tensor is ours to delete. */
    if (PyCapsule_SetName(cap, versioned ? CAP_VERSIONED_USED : CAP_LEGACY_USED) < 0) {
        Py_DECREF(dtype);
        return -1;
    }
    PyObject *owner = PyCapsule_New(p, versioned ? "gpumem.dlpack_versioned" : "gpumem.dlpack",
                                    import_capsule_free);
    if (owner == NULL) {
        if (versioned)
            ((DLManagedTensorVersioned *)p)->deleter((DLManagedTensorVersioned *)p);
        else
            ((DLManagedTensor *)p)->deleter((DLManagedTensor *)p);
        Py_DECREF(dtype);
        return -1;
    }
    void *ptr = (char *)t->data + t->byte_offset;
    size_t nbytes = 0;
    int dev = t->device.device_id;
    if (gm_shape_nbytes(t->ndim, shape, dtype, &nbytes, fn) < 0 ||
        check_extent(fn, ptr, nbytes, &dev) < 0) {
        Py_DECREF(owner);              /* the producer's deleter runs: nothing is kept */
        Py_DECREF(dtype);
        return -1;
    }
    if (dev != t->device.device_id && t->device.device_type == DL_CUDA) {
        PyErr_Format(PyExc_ValueError, "%s says it is on CUDA device %d, but its memory is "
                     "device %d's", fn, (int)t->device.device_id, dev);
        Py_DECREF(owner);
        Py_DECREF(dtype);
        return -1;
    }
    gm_foreign_describe(out, ptr, t->ndim, shape, dtype, owner);
    out->device = dev;
    Py_DECREF(dtype);
    return 0;
}

int gm_has_protocol(PyObject *obj, const char *attr, const char *fn, const char *name,
                    PyObject **value)
{
    PyObject *v = PyObject_GetAttrString(obj, attr);
    if (value)
        *value = NULL;
    if (v != NULL) {
        if (value)
            *value = v;
        else
            Py_DECREF(v);
        return 1;
    }
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return 0;
    }
    gm_raise_from(PyExc_TypeError, "%s: %s.%s raised", fn, name,
                  attr);
    return -1;
}

int gm_foreign_attach(const char *fn, void *ptr, size_t nbytes, int has_producer,
                      cudaStream_t producer, int *dev, cudaStream_t *stream, PyObject **keep)
{
    /* Where the memory is, and how much of it there is. */
    int prev = 0;
    *keep = NULL;
    if (gm_ensure_device() < 0 || gm_device_current(dev) < 0 ||
        check_extent(fn, ptr, nbytes, dev) < 0 || gm_device_enter(*dev, &prev) < 0)
        return -1;
    /* Version 3: work on its stream may still be writing it: gpumem's stream waits. */
    int r = gm_call_stream(fn, *dev, stream, keep);
    if (r == 0 && has_producer)
        r = gm_stream_order(*stream, producer);
    gm_device_leave(prev);
    if (r < 0)
        Py_CLEAR(*keep);
    return r;
}

/* A foreign array through its __cuda_array_interface__ dict: the dict checked whole, then
 * (unless deferred) its memory and stream on the device. */
static int import_cai(PyObject *x, PyObject *cai, const char *fn, int defer, gm_foreign *out)
{
    int r = gm_cai_describe(x, cai, fn, out); /* the dict first, then the device */
    if (r < 0 || defer)
        return r;
    size_t nbytes = 0;
    gm_shape_nbytes(out->ndim, out->shape, out->dtype, &nbytes, fn); /* checked */
    if (gm_foreign_attach(fn, out->ptr, nbytes, out->has_producer, out->producer,
                          &out->device, &out->stream, &out->stream_keep) < 0) {
        Py_CLEAR(out->dtype);
        Py_CLEAR(out->owner);
        return -1;
    }
    out->pending = 0;
    return 0;
}

/* A version-3 interface that names its stream says all a consumer needs (where the data
 * is, and which stream to wait for): read through it, an array costs no capsule and no
 * producer-side event (CuPy's __dlpack__(stream=) records and waits on one each call).
 * Without a stream (version 2, as PyTorch exports), DLPack's stream= is the safe way. */
static int cai_names_its_stream(PyObject *cai)
{
    if (!PyDict_Check(cai))
        return 0;
    PyObject *kv = gm_cai_key(GM_CAI_VERSION), *ks = gm_cai_key(GM_CAI_STREAM);
    if (kv == NULL || ks == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *v = PyDict_GetItemWithError(cai, kv);   /* borrowed */
    PyObject *s = v ? PyDict_GetItemWithError(cai, ks) : NULL;
    PyErr_Clear();
    if (v == NULL || s == NULL || s == Py_None || !PyLong_Check(v))
        return 0;
    long long version = PyLong_AsLongLong(v);
    if (version == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return version >= 3;
}

int gm_dlpack_import(PyObject *x, const char *fn, int defer, PyObject *given, gm_foreign *out)
{
    memset(out, 0, sizeof *out);
    PyObject *cai = given ? Py_NewRef(given) : PyObject_GetAttrString(x, "__cuda_array_interface__");
    if (cai == NULL) {
        /* an interface that raises (PyTorch's, for a tensor that requires grad): DLPack
         * decides, where there is one; else the error, chained */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            int has = PyObject_HasAttrString(x, "__dlpack__");
            PyErr_Restore(type, value, tb);
            if (!has)
                return gm_raise_from(PyExc_TypeError, "%s.__cuda_array_interface__ raised",
                                     fn);
        }
        PyErr_Clear();
    } else if (cai_names_its_stream(cai)) {
        int r = import_cai(x, cai, fn, defer, out);
        Py_DECREF(cai);
        return r;
    }
    PyObject *method = PyObject_GetAttrString(x, "__dlpack__");
    if (method == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            Py_XDECREF(cai);
            return gm_raise_from(PyExc_TypeError,
                                 "%s.__dlpack__ raised", fn);
        }
        PyErr_Clear();
        if (cai == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s must have __dlpack__ or __cuda_array_interface__ (a CuPy, "
                         "PyTorch, JAX or Numba array), not %.200s",
                         fn, Py_TYPE(x)->tp_name);
            return -1;
        }
        int r = import_cai(x, cai, fn, defer, out);
        Py_DECREF(cai);
        return r;
    }
    Py_XDECREF(cai);
    /* Where it lives first: a host array is refused before a capsule is made. */
    PyObject *dev = PyObject_CallMethod(x, "__dlpack_device__", NULL);
    int dev_id = -1;
    if (dev != NULL) {
        long long type = -1, id = -1;
        int ok = PyTuple_Check(dev) && PyArg_ParseTuple(dev, "LL", &type, &id);
        Py_DECREF(dev);
        if (!ok) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s.__dlpack_device__() is not a (type, id) tuple",
                         fn);
            Py_DECREF(method);
            return -1;
        }
        if (device_ok(fn, type, id) < 0) {
            Py_DECREF(method);
            return -1;
        }
        dev_id = (int)id;
    } else {
        PyErr_Clear();
    }
    if (gm_ensure_device() < 0 || (dev_id < 0 && gm_device_current(&dev_id) < 0) ||
        gm_call_stream(fn, dev_id, &out->stream, &out->stream_keep) < 0) {
        Py_DECREF(method);
        return -1;
    }
    /* stream=: the producer orders its work before gpumem's stream of that device
     * (1: the legacy default stream, where calls run unless a Stream is current). */
    unsigned long long sv = (unsigned long long)gm_stream_value(out->stream);
    PyObject *kw = Py_BuildValue("{s:K,s:(ii)}", "stream", sv, "max_version", 1, 0);
    PyObject *empty = PyTuple_New(0);
    PyObject *cap = (kw && empty) ? PyObject_Call(method, empty, kw) : NULL;
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear(); /* a producer from before DLPack 1.0 */
        PyObject *kw1 = Py_BuildValue("{s:K}", "stream", sv);
        cap = kw1 ? PyObject_Call(method, empty, kw1) : NULL;
        Py_XDECREF(kw1);
    }
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    Py_DECREF(method);
    int r = cap == NULL ? -1 : from_capsule(cap, fn, out);
    Py_XDECREF(cap);
    if (r < 0)
        Py_CLEAR(out->stream_keep);
    return r;
}
