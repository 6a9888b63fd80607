/* alloc.c -- the allocators: every device allocation of gpumem (a
 * stream-ordered pool, or cudaMalloc) and every page-locked host allocation
 * (cudaHostAlloc), each through its account -- bytes_held() and
 * memory_info()'s gpumem_bytes and pinned_bytes. */
#include "gm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device memory ------------------------------------------------------------ */
/* Two allocators, one chosen per process: the stream-ordered pool (default) -- a
 * cudaMemPool_t of gpumem's own whose release threshold keeps freed blocks, so a
 * call's output costs no cudaMalloc and no cudaFree (which synchronizes the
 * device) -- or plain cudaMalloc/cudaFree (GPUMEM_ALLOCATOR=cudaMalloc, or
 * set_allocator('cudaMalloc') while gpumem holds nothing), which the allocation
 * lesson compares it with.  One pool per device; allocations are ordered on
 * the device's legacy default stream, a DeviceArray's memory freed on the
 * stream of its newest work (gm_device_free_on). */
enum { ALLOC_UNSET = -1, ALLOC_CUDAMALLOC = 0, ALLOC_POOL = 1 };
static const char *const allocator_names[] = {"cudaMalloc", "pool", NULL};
static int allocator = ALLOC_UNSET;
static cudaMemPool_t pools[GM_MAX_DEVICES];
static long long held[GM_MAX_DEVICES]; /* bytes of device memory gpumem holds now */
static long long gm_held = 0;          /* on every device */

long long gm_bytes_held(void) { return gm_held; }

/* The allocator from GPUMEM_ALLOCATOR ('pool' when unset): 0, or -1 with ValueError. */
static int choose_allocator(void)
{
    if (allocator != ALLOC_UNSET)
        return 0;
    const char *env = getenv("GPUMEM_ALLOCATOR");
    if (env == NULL || *env == '\0' || strcmp(env, "pool") == 0) {
        allocator = ALLOC_POOL;
    } else if (strcmp(env, "cudaMalloc") == 0) {
        allocator = ALLOC_CUDAMALLOC;
    } else {
        PyErr_Format(PyExc_ValueError,
                     "GPUMEM_ALLOCATOR='%s' is unknown; allowed: 'pool' (the default), "
                     "'cudaMalloc'", env);
        return -1;
    }
    return 0;
}

/* Which GPUs' kernels may reach which GPU's pool (accessor * GM_MAX_DEVICES + owner):
 * peer access (peer.c) does not cover memory of a pool, which must grant it itself
 * (cudaMemPoolSetAccess) -- now, or when the pool is made.  Set with peer access, so
 * also the record of which GPU has peer access on to which. */
static unsigned char pool_access[GM_MAX_DEVICES * GM_MAX_DEVICES];

static int apply_access(int owner, int accessor, int on)
{
    struct cudaMemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = cudaMemLocationTypeDevice;
    d.location.id = accessor;
    d.flags = on ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone;
    GM_CUDA(cudaMemPoolSetAccess(pools[owner], &d, 1));
    return 0;
fail:
    return -1;
}

int gm_pool_peer_access(int owner, int accessor, int on)
{
    if (pools[owner] != NULL && apply_access(owner, accessor, on) < 0)
        return -1;
    pool_access[accessor * GM_MAX_DEVICES + owner] = (unsigned char)on;
    return 0;
}

int gm_pool_peer_access_on(int owner, int accessor)
{
    return pool_access[accessor * GM_MAX_DEVICES + owner];
}

/* gpumem's pool on the current device `dev`, made on first use: freed blocks are
 * kept (release threshold: all of it) until empty_cache() or an allocation that
 * finds the device full trims it. */
static int ensure_pool(int dev)
{
    if (pools[dev] != NULL)
        return 0;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    GM_CUDA(cudaMemPoolCreate(&pools[dev], &props));
    uint64_t keep = UINT64_MAX;
    GM_CUDA(cudaMemPoolSetAttribute(pools[dev], cudaMemPoolAttrReleaseThreshold, &keep));
    for (int a = 0; a < GM_MAX_DEVICES; a++)       /* peers let in before it existed */
        if (pool_access[a * GM_MAX_DEVICES + dev] && apply_access(dev, a, 1) < 0)
            goto fail;
    return 0;
fail:
    if (pools[dev] != NULL) {
        (void)cudaMemPoolDestroy(pools[dev]);
        pools[dev] = NULL;
    }
    return -1;
}

static cudaError_t raw_alloc(int dev, void **ptr, size_t nbytes)
{
    if (allocator == ALLOC_POOL)
        return cudaMallocFromPoolAsync(ptr, nbytes, pools[dev], NULL);
    return cudaMalloc(ptr, nbytes);
}

/* The blocks the current device's pool keeps, given back to the device (after the
 * device's work, which may still use them).  Returns the bytes released, or -1. */
static long long trim_pool(int dev)
{
    cudaMemPool_t pool = pools[dev];
    if (pool == NULL)
        return 0;
    uint64_t before = 0, after = 0;
    GM_CUDA(cudaDeviceSynchronize());
    GM_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &before));
    GM_CUDA(cudaMemPoolTrimTo(pool, 0));
    GM_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &after));
    return (long long)(before - after);
fail:
    return -1;
}

int gm_device_alloc(size_t nbytes, void **ptr)
{
    *ptr = NULL;
    if (nbytes == 0)
        return 0;
    if (gm_ensure_device() < 0 || choose_allocator() < 0)
        return -1;
    int dev = 0;
    if (gm_device_current(&dev) < 0 || (allocator == ALLOC_POOL && ensure_pool(dev) < 0))
        return -1;
    cudaError_t err = raw_alloc(dev, ptr, nbytes);
    if (err == cudaErrorMemoryAllocation && allocator == ALLOC_POOL) {
        /* out of memory: give the kept blocks back and try once more */
        (void)cudaGetLastError();
        if (trim_pool(dev) < 0)
            return -1;
        err = raw_alloc(dev, ptr, nbytes);
    }
    if (err == cudaErrorMemoryAllocation) {
        size_t free_b = 0, total_b = 0;
        (void)cudaGetLastError();
        cudaMemGetInfo(&free_b, &total_b);
        (void)cudaGetLastError();
        *ptr = NULL;
        PyErr_Format(gm_DeviceMemoryError,
                     "%s of %zu bytes failed: out of device memory on device %d "
                     "(%zu of %zu bytes free; gpumem holds %lld there)",
                     allocator == ALLOC_POOL ? "cudaMallocFromPoolAsync" : "cudaMalloc", nbytes,
                     dev, free_b, total_b, held[dev]);
        return -1;
    }
    if (err != cudaSuccess) {
        *ptr = NULL;
        return gm_set_cuda_error(err, allocator == ALLOC_POOL ? "cudaMallocFromPoolAsync"
                                                              : "cudaMalloc");
    }
    gm_held += (long long)nbytes;
    held[dev] += (long long)nbytes;
    return 0;
}

void gm_device_free_on(int dev, cudaStream_t stream, void *ptr, size_t nbytes)
{
    int prev = dev;
    if (ptr == NULL)
        return;
    /* During interpreter shutdown the runtime may already be unloading;
     * a failed free then has nothing left to leak. */
    if (cudaGetDevice(&prev) != cudaSuccess || (prev != dev && cudaSetDevice(dev) != cudaSuccess))
        (void)cudaGetLastError();
    cudaError_t err = allocator == ALLOC_POOL ? cudaFreeAsync(ptr, stream) : cudaFree(ptr);
    if (err != cudaSuccess)
        (void)cudaGetLastError();
    if (prev != dev && cudaSetDevice(prev) != cudaSuccess)
        (void)cudaGetLastError();
    gm_held -= (long long)nbytes;
    if (dev >= 0 && dev < GM_MAX_DEVICES)
        held[dev] -= (long long)nbytes;
}

void gm_device_free(void *ptr, size_t nbytes)
{
    int dev = 0;
    if (ptr == NULL)
        return;
    if (cudaGetDevice(&dev) != cudaSuccess) /* shutting down: nothing left to leak */
        (void)cudaGetLastError();
    gm_device_free_on(dev, NULL, ptr, nbytes);
}

/* ---- page-locked host memory -------------------------------------------------- */
static long long gm_pinned = 0; /* bytes of page-locked host memory gpumem holds */

long long gm_pinned_bytes(void) { return gm_pinned; }

int gm_host_alloc(size_t nbytes, unsigned flags, void **ptr)
{
    *ptr = NULL;
    if (gm_ensure_device() < 0)
        return -1;
    cudaError_t err = cudaHostAlloc(ptr, nbytes ? nbytes : 1, flags);
    if (err != cudaSuccess) {
        *ptr = NULL;
        (void)cudaGetLastError();
        if (err == cudaErrorMemoryAllocation) {
            PyErr_Format(PyExc_MemoryError,
                         "cudaHostAlloc of %zu bytes failed: the system would not lock that much "
                         "host memory (gpumem holds %lld pinned bytes)",
                         nbytes, gm_pinned);
            return -1;
        }
        return gm_set_cuda_error(err, "cudaHostAlloc");
    }
    gm_pinned += (long long)(nbytes ? nbytes : 1);
    return 0;
}

void gm_host_free(void *ptr, size_t nbytes)
{
    if (ptr == NULL)
        return;
    if (cudaFreeHost(ptr) != cudaSuccess)
        (void)cudaGetLastError();
    gm_pinned -= (long long)(nbytes ? nbytes : 1);
}

void gm_pinned_count(long long delta) { gm_pinned += delta; }

/* ---- the accounts, for Python ------------------------------------------------------ */
/* The optional device= of memory_info() and empty_cache(), made current. */
static int enter_arg(const char *fn, PyObject *args, PyObject *kwargs, int *dev, int *prev)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *obj = Py_None;
    char format[32];
    snprintf(format, sizeof format, "|O:%s", fn);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, kwlist, &obj) ||
        gm_device_arg(fn, "device", obj, dev) < 0)
        return -1;
    return gm_device_enter(*dev, prev);
}

static PyObject *gm_memory_info(PyObject *self, PyObject *args, PyObject *kwargs)
{
    size_t free_b = 0, total_b = 0;
    uint64_t reserved = 0, used = 0, peak = 0;
    int dev = 0, prev = 0;
    if (choose_allocator() < 0 || enter_arg("memory_info", args, kwargs, &dev, &prev) < 0)
        return NULL;
    cudaMemPool_t pool = pools[dev];
    GM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (pool != NULL) {
        GM_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
        GM_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
        GM_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &peak));
    }
    gm_device_leave(prev);
    return Py_BuildValue("{s:i,s:K,s:K,s:L,s:L,s:s,s:K,s:K,s:K}", "device", dev, "free",
                         (unsigned long long)free_b, "total", (unsigned long long)total_b,
                         "gpumem_bytes", held[dev], "pinned_bytes", gm_pinned_bytes(),
                         "allocator", allocator_names[allocator], "pool_reserved",
                         (unsigned long long)reserved, "pool_in_use", (unsigned long long)used,
                         "pool_peak", (unsigned long long)peak);
fail:
    gm_device_leave(prev);
    return NULL;
}

static PyObject *gm_empty_cache(PyObject *self, PyObject *args, PyObject *kwargs)
{
    int dev = 0, prev = 0;
    if (enter_arg("empty_cache", args, kwargs, &dev, &prev) < 0)
        return NULL;
    long long released = trim_pool(dev);
    gm_device_leave(prev);
    return released < 0 ? NULL : PyLong_FromLongLong(released);
}

static PyObject *gm_allocator(PyObject *self, PyObject *unused)
{
    if (choose_allocator() < 0)
        return NULL;
    return PyUnicode_FromString(allocator_names[allocator]);
}

static PyObject *gm_set_allocator(PyObject *self, PyObject *name)
{
    int which;
    if (gm_arg_choice(name, "set_allocator", "name", allocator_names, &which) < 0)
        return NULL;
    if (which != allocator && gm_held != 0) {
        PyErr_Format(PyExc_ValueError,
                     "set_allocator: gpumem holds %lld bytes from the %s allocator; free them "
                     "(del the DeviceArrays) before switching to name='%s'", gm_held,
                     allocator_names[allocator], allocator_names[which]);
        return NULL;
    }
    allocator = which;
    Py_RETURN_NONE;
}

static PyObject *gm_bytes_held_py(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(gm_bytes_held());
}

static PyMethodDef alloc_methods[] = {
    {"memory_info", (PyCFunction)(void (*)(void))gm_memory_info, METH_VARARGS | METH_KEYWORDS,
     "memory_info($module, /, device=None)\n--\n\nOf GPU `device` (None: the current one): "
     "free and total memory, the bytes gpumem holds there now (gpumem_bytes; pinned_bytes: "
     "host memory), its allocator, and its pool there: reserved from the device, in use, and "
     "the most it ever reserved (dict)."},
    {"empty_cache", (PyCFunction)(void (*)(void))gm_empty_cache, METH_VARARGS | METH_KEYWORDS,
     "empty_cache($module, /, device=None)\n--\n\nGive the memory gpumem's pool keeps on GPU "
     "`device` (None: the current one) back to it (after its work); returns the bytes "
     "released."},
    {"allocator", gm_allocator, METH_NOARGS,
     "allocator($module, /)\n--\n\nThe device allocator in use: 'pool' (stream-ordered, "
     "freed blocks kept) or 'cudaMalloc' (GPUMEM_ALLOCATOR chooses; default 'pool')."},
    {"set_allocator", gm_set_allocator, METH_O,
     "set_allocator($module, name, /)\n--\n\nUse 'pool' or 'cudaMalloc' for gpumem's device "
     "memory from now on (only while gpumem holds none)."},
    {"bytes_held", gm_bytes_held_py, METH_NOARGS,
     "bytes_held($module, /)\n--\n\nDevice bytes gpumem holds now (works without a GPU)."},
    {NULL, NULL, 0, NULL},
};

int gm_alloc_init(PyObject *module)
{
    return PyModule_AddFunctions(module, alloc_methods);
}
