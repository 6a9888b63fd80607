/* core.c -- module gpumem._core: exceptions, device discovery, device()
 * and memory_info(), argument helpers. */
#define GM_IMPORT_ARRAY
#include "gm.h"

#include <string.h>

PyObject *gm_CudaError;
PyObject *gm_CudaUnavailableError;
PyObject *gm_DeviceMemoryError;

void gm_set_attr(PyObject *obj, const char *name, PyObject *value)
{
    if (value == NULL || PyObject_SetAttrString(obj, name, value) < 0)
        PyErr_Clear();
    Py_XDECREF(value);
}

int gm_set_cuda_error(cudaError_t err, const char *call)
{
    PyObject *type = gm_CudaError;
    if (err == cudaErrorMemoryAllocation)
        type = gm_DeviceMemoryError;
    else if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
             err == cudaErrorCompatNotSupportedOnDevice || err == cudaErrorSystemDriverMismatch)
        type = gm_CudaUnavailableError;
    /* Clear the runtime's non-sticky last error so the next call starts clean. */
    (void)cudaGetLastError();
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%s)", call, cudaGetErrorString(err),
                                         cudaGetErrorName(err));
    if (msg == NULL)
        return -1;
    PyObject *exc = PyObject_CallOneArg(type, msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return -1;
    gm_set_attr(exc, "call", PyUnicode_FromString(call));
    gm_set_attr(exc, "name", PyUnicode_FromString(cudaGetErrorName(err)));
    gm_set_attr(exc, "code", PyLong_FromLong((long)err));
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return -1;
}

/* ---- device discovery ---------------------------------------------------- */
static int gm_device_state = 0; /* 0 unknown, 1 ready, -1 unavailable */
static cudaError_t gm_device_err = cudaSuccess;
static int gm_device_count = 0;

static void probe_device(void)
{
    if (gm_device_state != 0)
        return;
    cudaError_t err = cudaGetDeviceCount(&gm_device_count);
    if (err == cudaSuccess && gm_device_count == 0)
        err = cudaErrorNoDevice;
    if (err == cudaSuccess)
        err = cudaSetDevice(0);
    if (err == cudaSuccess)
        err = cudaFree(0); /* create the primary context now */
    gm_device_err = err;
    gm_device_state = (err == cudaSuccess) ? 1 : -1;
    (void)cudaGetLastError();
}

int gm_ensure_device(void)
{
    probe_device();
    if (gm_device_state == 1)
        return 0;
    PyErr_Format(gm_CudaUnavailableError,
                 "no usable CUDA GPU: %s (%s); gpumem's kernels need an NVIDIA GPU and driver, "
                 "while validation, variants() and gpumem.model work without one",
                 cudaGetErrorString(gm_device_err), cudaGetErrorName(gm_device_err));
    return -1;
}

static PyObject *gm_is_available(PyObject *self, PyObject *unused)
{
    probe_device();
    return PyBool_FromLong(gm_device_state == 1);
}

static PyObject *gm_runtime_version(PyObject *self, PyObject *unused)
{
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return Py_BuildValue("(ii)", v / 1000, (v % 1000) / 10);
}

static int dict_set_int(PyObject *d, const char *key, long long v)
{
    PyObject *o = PyLong_FromLongLong(v);
    int r = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return r;
}

static PyObject *gm_device_info(PyObject *self, PyObject *unused)
{
    if (gm_ensure_device() < 0)
        return NULL;
    struct cudaDeviceProp prop;
    int dev = 0, mem_clock_khz = 0, driver = 0, runtime = 0;
    PyObject *d = NULL;
    GM_CUDA(cudaGetDevice(&dev));
    GM_CUDA(cudaGetDeviceProperties(&prop, dev));
    GM_CUDA(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev));
    GM_CUDA(cudaDriverGetVersion(&driver));
    GM_CUDA(cudaRuntimeGetVersion(&runtime));

    d = PyDict_New();
    if (d == NULL)
        return NULL;
    PyObject *name = PyUnicode_FromString(prop.name);
    PyObject *cc = Py_BuildValue("(ii)", prop.major, prop.minor);
    PyObject *drv = Py_BuildValue("(ii)", driver / 1000, (driver % 1000) / 10);
    PyObject *rt = Py_BuildValue("(ii)", runtime / 1000, (runtime % 1000) / 10);
    /* DDR: two transfers per clock; bus width in bits. */
    double gbps = 2.0 * (double)mem_clock_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9;
    PyObject *bw = PyFloat_FromDouble(gbps);
    int bad = !name || !cc || !drv || !rt || !bw ||
              dict_set_int(d, "index", dev) < 0 ||
              PyDict_SetItemString(d, "name", name) < 0 ||
              PyDict_SetItemString(d, "compute_capability", cc) < 0 ||
              PyDict_SetItemString(d, "driver_version", drv) < 0 ||
              PyDict_SetItemString(d, "runtime_version", rt) < 0 ||
              PyDict_SetItemString(d, "theoretical_bandwidth_gbps", bw) < 0 ||
              dict_set_int(d, "multiprocessors", prop.multiProcessorCount) < 0 ||
              dict_set_int(d, "warp_size", prop.warpSize) < 0 ||
              dict_set_int(d, "max_threads_per_multiprocessor", prop.maxThreadsPerMultiProcessor) < 0 ||
              dict_set_int(d, "max_threads_per_block", prop.maxThreadsPerBlock) < 0 ||
              dict_set_int(d, "max_blocks_per_multiprocessor", prop.maxBlocksPerMultiProcessor) < 0 ||
              dict_set_int(d, "registers_per_multiprocessor", prop.regsPerMultiprocessor) < 0 ||
              dict_set_int(d, "registers_per_block", prop.regsPerBlock) < 0 ||
              dict_set_int(d, "shared_memory_per_multiprocessor", (long long)prop.sharedMemPerMultiprocessor) < 0 ||
              dict_set_int(d, "shared_memory_per_block", (long long)prop.sharedMemPerBlock) < 0 ||
              dict_set_int(d, "shared_memory_per_block_optin", (long long)prop.sharedMemPerBlockOptin) < 0 ||
              dict_set_int(d, "constant_memory", (long long)prop.totalConstMem) < 0 ||
              dict_set_int(d, "l2_cache_size", prop.l2CacheSize) < 0 ||
              dict_set_int(d, "memory_clock_khz", mem_clock_khz) < 0 ||
              dict_set_int(d, "memory_bus_width", prop.memoryBusWidth) < 0 ||
              dict_set_int(d, "total_memory", (long long)prop.totalGlobalMem) < 0;
    Py_XDECREF(name);
    Py_XDECREF(cc);
    Py_XDECREF(drv);
    Py_XDECREF(rt);
    Py_XDECREF(bw);
    if (bad) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
fail:
    Py_XDECREF(d);
    return NULL;
}

static PyObject *gm_memory_info(PyObject *self, PyObject *unused)
{
    size_t free_b = 0, total_b = 0;
    if (gm_ensure_device() < 0)
        return NULL;
    GM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    return Py_BuildValue("{s:K,s:K,s:L}", "free", (unsigned long long)free_b, "total",
                         (unsigned long long)total_b, "gpumem_bytes", gm_bytes_held());
fail:
    return NULL;
}

static PyObject *gm_bytes_held_py(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(gm_bytes_held());
}

/* ---- argument helpers ----------------------------------------------------- */
int gm_arg_long(PyObject *obj, const char *fn, const char *name, long long *out)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %.200s", fn, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s: %s=%R is out of range", fn, name, obj);
        return -1;
    }
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

int gm_arg_str(PyObject *obj, const char *fn, const char *name, const char **out)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a str, not %.200s", fn, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(obj);
    return *out ? 0 : -1;
}

/* ---- module --------------------------------------------------------------- */
static PyMethodDef gm_methods[] = {
    {"is_available", gm_is_available, METH_NOARGS,
     "True when a CUDA GPU and driver are usable; never raises."},
    {"device", gm_device_info, METH_NOARGS, "Properties and limits of the current device (dict)."},
    {"memory_info", gm_memory_info, METH_NOARGS,
     "Free and total device memory, and the bytes gpumem holds now (dict)."},
    {"bytes_held", gm_bytes_held_py, METH_NOARGS,
     "Device bytes gpumem holds now (works without a GPU)."},
    {"runtime_version", gm_runtime_version, METH_NOARGS,
     "The CUDA runtime version gpumem was built with, as (major, minor)."},
    {"to_device", gm_to_device, METH_O, "Copy an array to device memory: DeviceArray."},
    {"empty", (PyCFunction)(void (*)(void))gm_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype=float32): an uninitialised DeviceArray."},
    {"last_record", gm_last_record, METH_NOARGS, "The LaunchRecord of the newest launch, or None."},
    {"variants", gm_variants, METH_VARARGS, "variants([family]): the named kernel variants."},
    {"vec_add", (PyCFunction)(void (*)(void))gm_vec_add_py, METH_VARARGS | METH_KEYWORDS,
     "vec_add(a, b, *, block=256, out=None)"},
    {"matmul", (PyCFunction)(void (*)(void))gm_matmul_py, METH_VARARGS | METH_KEYWORDS,
     "matmul(a, b, *, tile=16, variant='tiled', out=None)"},
    {"read_offset", (PyCFunction)(void (*)(void))gm_read_offset_py, METH_VARARGS | METH_KEYWORDS,
     "read_offset(a, b, *, offset=0, unroll=1, block=512, cache='default', out=None)"},
    {"write_offset", (PyCFunction)(void (*)(void))gm_write_offset_py, METH_VARARGS | METH_KEYWORDS,
     "write_offset(a, b, *, offset=0, unroll=1, block=512, out=None)"},
    {"strided_read", (PyCFunction)(void (*)(void))gm_strided_read_py, METH_VARARGS | METH_KEYWORDS,
     "strided_read(a, *, stride=1, block=512, out=None)"},
    {"struct_update", (PyCFunction)(void (*)(void))gm_struct_update_py,
     METH_VARARGS | METH_KEYWORDS, "struct_update(data, *, layout='aos', block=512, out=None)"},
    {"distance", (PyCFunction)(void (*)(void))gm_distance_py, METH_VARARGS | METH_KEYWORDS,
     "distance(points, *, layout='aos', block=512, out=None)"},
    {"copy", (PyCFunction)(void (*)(void))gm_copy_py, METH_VARARGS | METH_KEYWORDS,
     "copy(a, *, variant='float4', block=256, out=None)"},
    {"stencil_1d", (PyCFunction)(void (*)(void))gm_stencil_1d_py, METH_VARARGS | METH_KEYWORDS,
     "stencil_1d(x, coef=None, *, memory='constant', block=256, items=4, out=None)"},
    {"constant_broadcast", (PyCFunction)(void (*)(void))gm_broadcast_py,
     METH_VARARGS | METH_KEYWORDS,
     "constant_broadcast(distinct, *, memory='constant', n=2**20, iters=256, block=256, out=None)"},
    {"thread_histogram", (PyCFunction)(void (*)(void))gm_private_array_py,
     METH_VARARGS | METH_KEYWORDS,
     "thread_histogram(x, *, variant='local', threads=None, block=256, out=None)"},
    {"lifetime", (PyCFunction)(void (*)(void))gm_lifetime_py, METH_VARARGS | METH_KEYWORDS,
     "lifetime(*, blocks=4, block=64, value=None, counter=None)"},
    {"register_pressure", (PyCFunction)(void (*)(void))gm_register_cap_py,
     METH_VARARGS | METH_KEYWORDS,
     "register_pressure(x, *, variant='uncapped', rounds=8, block=256, out=None)"},
    {"divergence", (PyCFunction)(void (*)(void))gm_divergence_py, METH_VARARGS | METH_KEYWORDS,
     "divergence(x, *, variant='odd_even', iters=256, block=256, out=None)"},
    {"kernel_attributes", gm_kernel_attributes_py, METH_VARARGS,
     "kernel_attributes(family, variant, params=None, strict=True): cudaFuncGetAttributes."},
    {"occupancy", gm_occupancy_py, METH_VARARGS,
     "occupancy(family, variant, block, smem=None, params=None, strict=True)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gm_module = {
    PyModuleDef_HEAD_INIT, "gpumem._core",
    "gpumem's native core: CUDA kernels behind NumPy-facing functions.", -1, gm_methods,
};

static PyObject *new_exception(PyObject *m, const char *name, PyObject *bases, const char *doc)
{
    char full[128];
    snprintf(full, sizeof full, "gpumem.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (e == NULL || PyModule_AddObjectRef(m, name, e) < 0) {
        Py_XDECREF(e);
        return NULL;
    }
    return e;
}

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *m = PyModule_Create(&gm_module);
    if (m == NULL)
        return NULL;
    PyObject *bases = NULL;
    gm_CudaError = new_exception(m, "CudaError", PyExc_RuntimeError,
                                 "A CUDA call failed; .call, .name and .code say which and how.");
    if (gm_CudaError == NULL)
        goto fail;
    gm_CudaUnavailableError = new_exception(m, "CudaUnavailableError", gm_CudaError,
                                            "No usable CUDA GPU or driver.");
    if (gm_CudaUnavailableError == NULL)
        goto fail;
    bases = PyTuple_Pack(2, gm_CudaError, PyExc_MemoryError);
    if (bases == NULL)
        goto fail;
    gm_DeviceMemoryError = new_exception(m, "DeviceMemoryError", bases,
                                         "Device memory could not be allocated.");
    Py_CLEAR(bases);
    if (gm_DeviceMemoryError == NULL)
        goto fail;
    if (PyType_Ready(&gm_DeviceArray_Type) < 0 ||
        PyModule_AddObjectRef(m, "DeviceArray", (PyObject *)&gm_DeviceArray_Type) < 0)
        goto fail;
    if (gm_launch_init(m) < 0 || gm_profile_init(m) < 0)
        goto fail;
    return m;
fail:
    Py_XDECREF(bases);
    Py_DECREF(m);
    return NULL;
}
