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
    const gm_variant *v = f ? gm_find_variant(fn, f, variant, NULL) : NULL;
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

/* kernel_attributes(family, variant, params=None, strict=True) and
 * kernel_occupancy(family, variant, block, smem=None, params=None, strict=True). */
enum { KA_FAMILY, KA_VARIANT, KA_PARAMS, KA_STRICT };
static const gm_arg attributes_args[] = {
    [KA_FAMILY] = {"family", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [KA_VARIANT] = {"variant", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [KA_PARAMS] = {"params", GM_OBJECT, GM_POSITIONAL},
    [KA_STRICT] = {"strict", GM_BOOL, GM_POSITIONAL, 1},
    {NULL},
};

enum { KO_FAMILY, KO_VARIANT, KO_BLOCK, KO_SMEM, KO_PARAMS, KO_STRICT };
static const gm_arg occupancy_args[] = {
    [KO_FAMILY] = {"family", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [KO_VARIANT] = {"variant", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [KO_BLOCK] = {"block", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 1024},
    [KO_SMEM] = {"smem", GM_INT, GM_POSITIONAL | GM_NO_DEFAULT, 0, 0, 1 << 30},
    [KO_PARAMS] = {"params", GM_OBJECT, GM_POSITIONAL},
    [KO_STRICT] = {"strict", GM_BOOL, GM_POSITIONAL, 1},
    {NULL},
};

static PyObject *kernel_attributes(const gm_parsed *p)
{
    const gm_variant *v = NULL;
    struct cudaFuncAttributes a;
    const void *k = kernel_of(p->fn, p->obj[KA_FAMILY], p->obj[KA_VARIANT], p->obj[KA_PARAMS],
                              (int)p->v[KA_STRICT], &v);
    if (k == NULL || gm_ensure_device() < 0)
        return NULL;
    GM_CUDA(cudaFuncGetAttributes(&a, k));
    return attributes_dict(&a);
fail:
    return NULL;
}

static PyObject *kernel_occupancy(const gm_parsed *p)
{
    PyObject *res = NULL, *num = NULL;
    int blocks = 0;
    const long long block = p->v[KO_BLOCK], smem = p->v[KO_SMEM];
    const gm_variant *v = NULL;
    struct cudaFuncAttributes a;
    const char *fn = p->fn;
    const void *k = kernel_of(fn, p->obj[KO_FAMILY], p->obj[KO_VARIANT], p->obj[KO_PARAMS],
                              (int)p->v[KO_STRICT], &v);
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

static const gm_plain introspect_plain[] = {
    {"kernel_attributes", "cudaFuncGetAttributes of a variant's kernel (dict).",
     attributes_args, kernel_attributes},
    {"kernel_occupancy",
     "The occupancy API's resident blocks per SM for a variant's kernel, with its attributes "
     "(dict).",
     occupancy_args, kernel_occupancy},
    {NULL},
};

int gm_introspect_init(PyObject *module)
{
    return gm_add_plain(module, introspect_plain);
}
