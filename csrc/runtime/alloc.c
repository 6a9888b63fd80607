/* alloc.c -- the allocators: every device allocation of gpumem (cudaMalloc;
 * a stream-ordered pool later) and every page-locked host allocation
 * (cudaHostAlloc), each through its account -- bytes_held() and
 * memory_info()'s gpumem_bytes and pinned_bytes. */
#include "gm.h"

#include <stdio.h>

/* ---- device memory ------------------------------------------------------------ */
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
static PyObject *gm_memory_info(PyObject *self, PyObject *unused)
{
    size_t free_b = 0, total_b = 0;
    if (gm_ensure_device() < 0)
        return NULL;
    GM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    return Py_BuildValue("{s:K,s:K,s:L,s:L}", "free", (unsigned long long)free_b, "total",
                         (unsigned long long)total_b, "gpumem_bytes", gm_bytes_held(),
                         "pinned_bytes", gm_pinned_bytes());
fail:
    return NULL;
}

static PyObject *gm_bytes_held_py(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(gm_bytes_held());
}

static PyMethodDef alloc_methods[] = {
    {"memory_info", gm_memory_info, METH_NOARGS,
     "memory_info($module, /)\n--\n\nFree and total device memory, and the bytes gpumem holds "
     "now (dict)."},
    {"bytes_held", gm_bytes_held_py, METH_NOARGS,
     "bytes_held($module, /)\n--\n\nDevice bytes gpumem holds now (works without a GPU)."},
    {NULL, NULL, 0, NULL},
};

int gm_alloc_init(PyObject *module)
{
    return PyModule_AddFunctions(module, alloc_methods);
}
