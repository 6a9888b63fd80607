/* introspect.c -- what the compiler and the occupancy API say about the
 * kernel behind any variant: kernel_attributes() (cudaFuncGetAttributes) and
 * kernel_occupancy() (cudaOccupancyMaxActiveBlocksPerMultiprocessor).  The
 * kernel is found through the family's own selector, with the parameters
 * that pick it (tile, items, cache, ...: its GM_SELECTS arguments). */
#include "gm.h"

static const void *kernel_of(const char *fn, PyObject *family_obj, PyObject *variant_obj,
                             PyObject *params, int strict, const gm_variant **vout)
{
    const char *family, *variant;
    _Alignas(16) unsigned char buf[GM_PARAMS_MAX];
    if (gm_arg_str(family_obj, fn, "family", &family) < 0 ||
        gm_arg_str(variant_obj, fn, "variant", &variant) < 0)
        return NULL;
    const gm_family *f = gm_find_family(fn, family);
    const gm_variant *v = f ? gm_find_variant(fn, f, variant) : NULL;
    if (v == NULL || gm_selecting_params(fn, f, v, params, strict, buf) < 0)
        return NULL;
    const void *k = v->kernel(buf);
    if (k == NULL)
        PyErr_Format(PyExc_ValueError, "%s: %s/%s has no kernel built for these parameters", fn,
                     family, variant);
    *vout = v;
    return k;
}

static PyObject *attributes_dict(const struct cudaFuncAttributes *a)
{
    return Py_BuildValue(
        "{s:i,s:n,s:n,s:n,s:i,s:i,s:i,s:i,s:i}", "registers_per_thread", a->numRegs,
        "local_bytes_per_thread", (Py_ssize_t)a->localSizeBytes, "static_shared_bytes",
        (Py_ssize_t)a->sharedSizeBytes, "constant_bytes", (Py_ssize_t)a->constSizeBytes,
        "max_threads_per_block", a->maxThreadsPerBlock, "ptx_version", a->ptxVersion,
        "binary_version", a->binaryVersion, "max_dynamic_shared_bytes",
        a->maxDynamicSharedSizeBytes, "preferred_shared_carveout", a->preferredShmemCarveout);
}

static PyObject *kernel_attributes(PyObject *self, PyObject *args)
{
    PyObject *family, *variant, *params = NULL;
    int strict = 1;
    const gm_variant *v = NULL;
    struct cudaFuncAttributes a;
    if (!PyArg_ParseTuple(args, "OO|Op:kernel_attributes", &family, &variant, &params, &strict))
        return NULL;
    const void *k = kernel_of("kernel_attributes", family, variant, params, strict, &v);
    if (k == NULL || gm_ensure_device() < 0)
        return NULL;
    GM_CUDA(cudaFuncGetAttributes(&a, k));
    return attributes_dict(&a);
fail:
    return NULL;
}

static int int_in(PyObject *obj, const char *fn, const char *name, long long lo, long long hi,
                  long long *out)
{
    if (obj == NULL || obj == Py_None)
        return 0;
    return gm_arg_range(obj, fn, name, lo, hi, out);
}

static PyObject *kernel_occupancy(PyObject *self, PyObject *args)
{
    PyObject *family, *variant, *block_obj, *smem_obj = Py_None, *params = NULL, *res = NULL,
                                                     *num = NULL;
    int strict = 1, blocks = 0;
    long long block = 0, smem = 0;
    const gm_variant *v = NULL;
    struct cudaFuncAttributes a;
    const char *fn = "kernel_occupancy";
    if (!PyArg_ParseTuple(args, "OOO|OOp:kernel_occupancy", &family, &variant, &block_obj,
                          &smem_obj, &params, &strict))
        return NULL;
    if (int_in(block_obj, fn, "block", 1, 1024, &block) < 0 ||
        int_in(smem_obj, fn, "smem", 0, 1 << 30, &smem) < 0)
        return NULL;
    if (block_obj == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: block must be an int, not NoneType", fn);
        return NULL;
    }
    const void *k = kernel_of(fn, family, variant, params, strict, &v);
    if (k == NULL || gm_ensure_device() < 0)
        return NULL;
    GM_CUDA(cudaFuncGetAttributes(&a, k));
    if (block > a.maxThreadsPerBlock) {
        PyErr_Format(PyExc_ValueError,
                     "%s: block=%lld is not allowed for %s/%s: this kernel runs at most %d "
                     "threads per block",
                     fn, block, v->family, v->name, a.maxThreadsPerBlock);
        return NULL;
    }
    if (smem > a.maxDynamicSharedSizeBytes) {
        PyErr_Format(PyExc_ValueError,
                     "%s: smem=%lld is not allowed for %s/%s: at most %d bytes of dynamic shared "
                     "memory per block",
                     fn, smem, v->family, v->name, a.maxDynamicSharedSizeBytes);
        return NULL;
    }
    GM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, (int)block, (size_t)smem));
    res = attributes_dict(&a);
    num = PyLong_FromLong(blocks);
    if (res == NULL || num == NULL || PyDict_SetItemString(res, "blocks_per_sm", num) < 0) {
        Py_XDECREF(res);
        Py_XDECREF(num);
        return NULL;
    }
    Py_DECREF(num);
    return res;
fail:
    return NULL;
}

static PyMethodDef introspect_methods[] = {
    {"kernel_attributes", kernel_attributes, METH_VARARGS,
     "kernel_attributes($module, family, variant, params=None, strict=True, /)\n--\n\n"
     "cudaFuncGetAttributes of a variant's kernel (dict)."},
    {"kernel_occupancy", kernel_occupancy, METH_VARARGS,
     "kernel_occupancy($module, family, variant, block, smem=None, params=None, strict=True, /)"
     "\n--\n\nThe occupancy API's resident blocks per SM for a variant's kernel, with its "
     "attributes (dict)."},
    {NULL, NULL, 0, NULL},
};

int gm_introspect_init(PyObject *module)
{
    return PyModule_AddFunctions(module, introspect_methods);
}
