/* device.c -- the GPUs gpumem runs on: discovery (once, on first use -- never
 * at import), every GPU of the machine and the calling thread's current one
 * (CUDA's own per-thread current device: `with gpumem.Device(i):` sets it),
 * is_available(), device_count(), device(i), runtime_version().  It calls
 * nothing above errors.c (memory_info() is the memory layer's, alloc.c). */
#include "gm.h"

#include <dlfcn.h>

/* ---- device discovery ---------------------------------------------------- */
static int gm_device_state = 0; /* 0 unknown, 1 ready, -1 unavailable */
static cudaError_t gm_device_err = cudaSuccess;
static int n_devices = 0;

/* The devices this process made current (their contexts exist). */
static unsigned long long used_mask;

int gm_device_used(int dev)
{
    return dev >= 0 && dev < 64 && (used_mask >> dev & 1);
}

static void mark_used(int dev)
{
    if (dev >= 0 && dev < 64)
        used_mask |= 1ULL << dev;
}

static void probe_device(void)
{
    if (gm_device_state != 0)
        return;
    cudaError_t err = cudaGetDeviceCount(&n_devices);
    if (err == cudaSuccess && n_devices == 0)
        err = cudaErrorNoDevice;
    if (err == cudaSuccess && n_devices > GM_MAX_DEVICES)
        n_devices = GM_MAX_DEVICES;
    if (err == cudaSuccess)
        err = cudaFree(NULL); /* the current device's primary context, now */
    gm_device_err = err;
    gm_device_state = (err == cudaSuccess) ? 1 : -1;
    int dev = -1;
    if (err == cudaSuccess && cudaGetDevice(&dev) == cudaSuccess)
        mark_used(dev);
    (void)cudaGetLastError();
}

/* The runtime says "driver version is insufficient" when there is no driver
 * at all; say which it is. */
static int driver_present(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    return lib != NULL;
}

int gm_ensure_device(void)
{
    probe_device();
    if (gm_device_state == 1)
        return gm_context_lost();
    if (gm_device_err == cudaErrorInsufficientDriver && !driver_present()) {
        PyErr_SetString(gm_CudaUnavailableError,
                        "no usable CUDA GPU: no NVIDIA driver was found (libcuda.so.1 could not "
                        "be loaded); gpumem's kernels need an NVIDIA GPU and driver, while "
                        "validation, variants() and gpumem.model work without one");
        return -1;
    }
    PyErr_Format(gm_CudaUnavailableError,
                 "no usable CUDA GPU: %s (%s); gpumem's kernels need an NVIDIA GPU and driver, "
                 "while validation, variants() and gpumem.model work without one",
                 cudaGetErrorString(gm_device_err), cudaGetErrorName(gm_device_err));
    return -1;
}

int gm_device_count(void)
{
    probe_device();
    return gm_device_state == 1 ? n_devices : 0;
}

int gm_device_current(int *dev)
{
    GM_CUDA(cudaGetDevice(dev));
    return 0;
fail:
    return -1;
}

int gm_device_check(const char *fn, const char *name, long long dev)
{
    if (dev < 0) {  /* never a device: said without asking the driver */
        PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not a device; GPUs are numbered from 0",
                     fn, name, dev);
        return -1;
    }
    if (gm_ensure_device() < 0)
        return -1;
    if (dev >= 0 && dev < n_devices)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not a device; this machine has %d GPU%s, "
                 "0..%d", fn, name, dev, n_devices, n_devices == 1 ? "" : "s",
                 n_devices - 1);
    return -1;
}

int gm_device_enter(int dev, int *prev)
{
    GM_CUDA(cudaGetDevice(prev));
    if (*prev != dev)
        GM_CUDA(cudaSetDevice(dev));
    mark_used(dev);
    return 0;
fail:
    return -1;
}

void gm_device_leave(int prev)
{
    int now = prev;
    if (cudaGetDevice(&now) != cudaSuccess || (now != prev && cudaSetDevice(prev) != cudaSuccess))
        (void)cudaGetLastError();
}

int gm_device_arg(const char *fn, const char *name, PyObject *obj, int *dev)
{
    long long v;
    if (obj == NULL || obj == Py_None)
        return gm_ensure_device() < 0 ? -1 : gm_device_current(dev);
    if (gm_arg_long(obj, fn, name, &v) < 0 || gm_device_check(fn, name, v) < 0)
        return -1;
    *dev = (int)v;
    return 0;
}

static PyObject *device_count_py(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(gm_device_count());
}

/* _get_device() / _set_device(i): the calling thread's current device (gpumem.Device). */
static PyObject *gm_get_device(PyObject *self, PyObject *unused)
{
    int dev = 0;
    if (gm_ensure_device() < 0 || gm_device_current(&dev) < 0)
        return NULL;
    return PyLong_FromLong(dev);
}

static PyObject *gm_set_device(PyObject *self, PyObject *obj)
{
    int dev = 0;
    if (gm_device_arg("Device", "index", obj, &dev) < 0)
        return NULL;
    GM_CUDA(cudaSetDevice(dev));
    GM_CUDA(cudaFree(NULL)); /* its context, now: later calls on it need not */
    mark_used(dev);
    Py_RETURN_NONE;
fail:
    return NULL;
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

static PyObject *gm_device_info(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"index", NULL};
    PyObject *which = Py_None;
    struct cudaDeviceProp prop;
    int dev = 0, mem_clock_khz = 0, clock_khz = 0, driver = 0, runtime = 0;
    PyObject *d = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:device", kwlist, &which) ||
        gm_device_arg("device", "index", which, &dev) < 0)
        return NULL;
    GM_CUDA(cudaGetDeviceProperties(&prop, dev));
    GM_CUDA(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev));
    GM_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
    GM_CUDA(cudaDriverGetVersion(&driver));
    GM_CUDA(cudaRuntimeGetVersion(&runtime));
    /* the PCI address names this GPU to NVML, whose order may differ from CUDA's */
    char bus_id[32] = "";
    GM_CUDA(cudaDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, dev));

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
    PyObject *bus = PyUnicode_FromString(bus_id);
    int bad = !name || !cc || !drv || !rt || !bw || !bus ||
              PyDict_SetItemString(d, "pci_bus_id", bus) < 0 ||
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
              dict_set_int(d, "clock_khz", clock_khz) < 0 ||
              dict_set_int(d, "memory_bus_width", prop.memoryBusWidth) < 0 ||
              dict_set_int(d, "total_memory", (long long)prop.totalGlobalMem) < 0;
    Py_XDECREF(name);
    Py_XDECREF(cc);
    Py_XDECREF(drv);
    Py_XDECREF(rt);
    Py_XDECREF(bw);
    Py_XDECREF(bus);
    if (bad) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
fail:
    Py_XDECREF(d);
    return NULL;
}

/* ---- refusing an older GPU ----------------------------------------------- */
static int pretend_major = 0, pretend_minor = 0; /* 0.0: the GPU's own */

static int need_cc(const char *fn, const char *what, int major, int minor, int exact,
                   const char *why)
{
    int dev = 0, have_major = pretend_major, have_minor = pretend_minor;
    if (have_major == 0) {
        GM_CUDA(cudaGetDevice(&dev));
        GM_CUDA(cudaDeviceGetAttribute(&have_major, cudaDevAttrComputeCapabilityMajor, dev));
        GM_CUDA(cudaDeviceGetAttribute(&have_minor, cudaDevAttrComputeCapabilityMinor, dev));
    }
    if (exact ? have_major == major && have_minor == minor
              : have_major > major || (have_major == major && have_minor >= minor))
        return 0;
    return gm_raise_cuda(gm_CudaError, cudaErrorNotSupported, fn, PyUnicode_FromFormat(
        "%s: %s needs compute capability %d.%d%s (%s); this GPU has compute capability %d.%d",
        fn, what, major, minor, exact ? "" : " or newer", why, have_major, have_minor));
fail:
    return -1;
}

int gm_need_cc(const char *fn, const char *what, int major, int minor, const char *why)
{
    return need_cc(fn, what, major, minor, 0, why);
}

int gm_need_cc_exactly(const char *fn, const char *what, int major, int minor, const char *why)
{
    return need_cc(fn, what, major, minor, 1, why);
}

static PyObject *gm_pretend_cc(PyObject *self, PyObject *args)
{
    int major = 0, minor = 0;
    if (!PyArg_ParseTuple(args, "ii:_pretend_compute_capability", &major, &minor))
        return NULL;
    if (major < 0 || minor < 0 || (major == 0 && minor != 0)) {
        PyErr_Format(PyExc_ValueError, "_pretend_compute_capability: major, minor must be a "
                     "compute capability or (0, 0), got (%d, %d)", major, minor);
        return NULL;
    }
    pretend_major = major;
    pretend_minor = minor;
    Py_RETURN_NONE;
}

static PyMethodDef device_methods[] = {
    {"_pretend_compute_capability", gm_pretend_cc, METH_VARARGS,
     "_pretend_compute_capability($module, major, minor, /)\n--\n\nFor tests: the "
     "lessons' refusals of an older GPU see compute capability (major, minor) instead of "
     "the GPU's; (0, 0) gives the GPU's own back.  Nothing else changes."},
    {"device_count", device_count_py, METH_NOARGS,
     "device_count($module, /)\n--\n\nThe number of CUDA GPUs gpumem can use (0 without a "
     "GPU or driver; never raises)."},
    {"_get_device", gm_get_device, METH_NOARGS,
     "_get_device($module, /)\n--\n\nThe calling thread's current device (gpumem.Device)."},
    {"_set_device", gm_set_device, METH_O,
     "_set_device($module, device, /)\n--\n\nMake `device` the calling thread's current "
     "device (gpumem.Device)."},
    {"is_available", gm_is_available, METH_NOARGS,
     "is_available($module, /)\n--\n\nTrue when a CUDA GPU and driver are usable; never raises."},
    {"device", (PyCFunction)(void (*)(void))gm_device_info, METH_VARARGS | METH_KEYWORDS,
     "device($module, /, index=None)\n--\n\nProperties and limits of GPU `index` (dict; "
     "None: the current device)."},
    {"runtime_version", gm_runtime_version, METH_NOARGS,
     "runtime_version($module, /)\n--\n\nThe CUDA runtime version gpumem was built with, as "
     "(major, minor)."},
    {NULL, NULL, 0, NULL},
};

int gm_device_init(PyObject *module)
{
    return PyModule_AddFunctions(module, device_methods);
}
