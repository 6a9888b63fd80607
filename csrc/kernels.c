/* kernels.c -- the variant table and the Python entry points of the kernels:
 * parse and validate every argument (no device call before that), upload
 * ndarray inputs, launch through gm_launch(), hand back the result. */
#include "gm.h"

#include <string.h>

/* Thunks from the one launcher signature to each typed extern "C" launcher. */
static cudaError_t run_vec_add(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_vec_add((const gm_vec_add_params *)p, d, s);
}
static cudaError_t run_matmul_naive(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_matmul_naive((const gm_matmul_params *)p, d, s);
}
static cudaError_t run_matmul_tiled(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_matmul_tiled((const gm_matmul_params *)p, d, s);
}

/* The kernels behind the variants (gm_variant.kernel). */
static const void *kernel_vec_add(const void *p)
{
    (void)p;
    return gm_vec_add_kernel();
}
static const void *kernel_matmul_naive(const void *p)
{
    (void)p;
    return gm_matmul_naive_kernel();
}
static const void *kernel_matmul_tiled(const void *p)
{
    int tile = ((const gm_matmul_params *)p)->tile;
    return gm_matmul_tiled_kernel(tile ? tile : 16);
}

#define MATMUL_BYTES "4*(M*K + K*N + M*N)"
#define MATMUL_FLOPS "2*M*N*K"

const gm_variant gm_core_variants[] = {
    {"vec_add", "default",
     "one element per thread: each warp reads and writes 128 contiguous bytes (fully coalesced)",
     "12*n", "n", run_vec_add, kernel_vec_add},
    {"matmul", "naive",
     "each thread reads a row of A and a column of B from global memory: 2K loads for 2K FLOPs",
     MATMUL_BYTES, MATMUL_FLOPS, run_matmul_naive, kernel_matmul_naive},
    {"matmul", "tiled",
     "TILE x TILE tiles of A and B staged in shared memory: global loads fall by the tile width",
     MATMUL_BYTES, MATMUL_FLOPS, run_matmul_tiled, kernel_matmul_tiled},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* Every family's table; a new family adds its table here (see gm.h). */
static const gm_variant *const gm_tables[] = {gm_core_variants, gm_access_variants,
                                             gm_stencil_variants, gm_spaces_variants, NULL};

/* Iterate over every variant of every table. */
#define FOR_EACH_VARIANT(v)                                                    \
    for (const gm_variant *const *t_ = gm_tables; *t_; t_++)                   \
        for (const gm_variant *v = *t_; v->family; v++)

const gm_variant *gm_find_variant(const char *fn, const char *family, const char *name)
{
    char allowed[512] = "";
    size_t pos = 0;
    FOR_EACH_VARIANT(v) {
        if (strcmp(v->family, family) != 0)
            continue;
        if (strcmp(v->name, name) == 0)
            return v;
        pos += (size_t)snprintf(allowed + pos, sizeof allowed - pos, "%s'%s'", pos ? ", " : "",
                                v->name);
        if (pos >= sizeof allowed)
            pos = sizeof allowed - 1;
    }
    PyErr_Format(PyExc_ValueError, "%s: variant='%s' is unknown; allowed: %s", fn, name, allowed);
    return NULL;
}

PyObject *gm_variants(PyObject *self, PyObject *args)
{
    const char *family = NULL;
    if (!PyArg_ParseTuple(args, "|z:variants", &family))
        return NULL;
    PyObject *list = PyList_New(0);
    int found_family = family == NULL;
    FOR_EACH_VARIANT(v) {
        if (list == NULL)
            break;
        if (family && strcmp(v->family, family) != 0)
            continue;
        found_family = 1;
        PyObject *t = Py_BuildValue("(sssss)", v->family, v->name, v->idea, v->bytes, v->flops);
        if (t == NULL || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(t);
    }
    if (list && !found_family) {
        char fams[512] = "";
        size_t pos = 0;
        const char *prev = "";
        FOR_EACH_VARIANT(v) {
            if (strcmp(v->family, prev) != 0 && pos < sizeof fams)
                pos += (size_t)snprintf(fams + pos, sizeof fams - pos, "%s'%s'", pos ? ", " : "",
                                        v->family);
            prev = v->family;
        }
        Py_DECREF(list);
        PyErr_Format(PyExc_ValueError, "variants: family='%s' is unknown; allowed: %s", family,
                     fams);
        return NULL;
    }
    return list;
}

/* Finish a kernel call: the DeviceArray result, or its copy on the host
 * when every input came from the host.  Consumes `out`. */
static PyObject *finish(gm_DeviceArray *out, int return_device)
{
    if (return_device)
        return (PyObject *)out;
    PyObject *host = gm_devarray_get(out);
    Py_DECREF(out);
    return host;
}

/* The output: the caller's `out=` (checked) or a new DeviceArray. */
static gm_DeviceArray *make_out(PyObject *out, const char *fn, int ndim, const npy_intp *shape)
{
    if (out != NULL && out != Py_None) {
        Py_INCREF(out);
        return (gm_DeviceArray *)out;
    }
    PyArray_Descr *f32 = PyArray_DescrFromType(NPY_FLOAT32);
    gm_DeviceArray *d = gm_devarray_new(ndim, shape, f32);
    Py_DECREF(f32);
    return d;
}

static int check_no_alias(PyObject *out, const char *fn, gm_operand *ops, int nops)
{
    if (out == NULL || out == Py_None)
        return 0;
    for (int i = 0; i < nops; i++)
        if (ops[i].on_device && ((gm_DeviceArray *)ops[i].obj)->ptr ==
                                    ((gm_DeviceArray *)out)->ptr &&
            ((gm_DeviceArray *)out)->nbytes) {
            PyErr_Format(PyExc_ValueError,
                         "%s: out must not share memory with an input (%s reads its inputs "
                         "while other threads write the result)",
                         fn, fn);
            return -1;
        }
    return 0;
}

/* ---- vec_add ------------------------------------------------------------- */
PyObject *gm_vec_add_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "b", "block", "out", NULL};
    PyObject *a_obj, *b_obj, *block_obj = NULL, *out = NULL;
    long long block = 256;
    gm_operand ops[2];
    char sa[128], sb[128];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OO:vec_add", kwlist, &a_obj, &b_obj,
                                     &block_obj, &out))
        return NULL;
    if (gm_operand_parse(a_obj, "vec_add", "a", NPY_FLOAT32, &ops[0]) < 0 ||
        gm_operand_parse(b_obj, "vec_add", "b", NPY_FLOAT32, &ops[1]) < 0)
        return NULL;
    if (ops[0].ndim != ops[1].ndim ||
        memcmp(ops[0].shape, ops[1].shape, sizeof(npy_intp) * (size_t)ops[0].ndim) != 0) {
        PyErr_Format(PyExc_ValueError, "vec_add: a and b must have the same shape, not %s and %s",
                     gm_shape_str(ops[0].ndim, ops[0].shape, sa, sizeof sa),
                     gm_shape_str(ops[1].ndim, ops[1].shape, sb, sizeof sb));
        return NULL;
    }
    if (block_obj && block_obj != Py_None) {
        if (gm_arg_long(block_obj, "vec_add", "block", &block) < 0)
            return NULL;
        if (block < 1 || block > 1024) {
            PyErr_Format(PyExc_ValueError,
                         "vec_add: block=%lld is not allowed; block must be 1..1024 threads", block);
            return NULL;
        }
    }
    if (out && out != Py_None &&
        gm_check_out(out, "vec_add", ops[0].ndim, ops[0].shape, NPY_FLOAT32) < 0)
        return NULL;
    long long n = 1;
    for (int i = 0; i < ops[0].ndim; i++)
        n *= ops[0].shape[i];
    if ((n + block - 1) / block > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError, "vec_add: a has %lld elements, too many for block=%lld", n,
                     block);
        return NULL;
    }
    const gm_variant *v = gm_find_variant("vec_add", "vec_add", "default");
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work: nothing above touched the GPU ---- */
    int return_device = ops[0].on_device || ops[1].on_device || (out && out != Py_None);
    gm_DeviceArray *c = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&ops[0]) < 0 || gm_operand_upload(&ops[1]) < 0)
        goto fail;
    c = make_out(out, "vec_add", ops[0].ndim, ops[0].shape);
    if (c == NULL)
        goto fail;
    if (n > 0) {
        gm_vec_add_params p = {(const float *)ops[0].dev->ptr, (const float *)ops[1].dev->ptr,
                               (float *)c->ptr, n, (int)block};
        params = Py_BuildValue("{s:L,s:L}", "n", n, "block", block);
        /* out=a or out=b: an in-place update, which a profiling replay must undo. */
        gm_buffer inout = {c->ptr, c->nbytes};
        int in_place = c->ptr == ops[0].dev->ptr || c->ptr == ops[1].dev->ptr;
        gm_launch_info info = {v, params, 12.0 * (double)n, (double)n, in_place ? &inout : NULL,
                               in_place};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    gm_operand_release(&ops[0]);
    gm_operand_release(&ops[1]);
    return finish(c, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(c);
    gm_operand_release(&ops[0]);
    gm_operand_release(&ops[1]);
    return NULL;
}

/* ---- matmul -------------------------------------------------------------- */
PyObject *gm_matmul_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "b", "tile", "variant", "out", NULL};
    PyObject *a_obj, *b_obj, *tile_obj = NULL, *variant_obj = NULL, *out = NULL;
    long long tile = 16;
    const char *variant = "tiled";
    gm_operand ops[2];
    char sa[128], sb[128];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOO:matmul", kwlist, &a_obj, &b_obj,
                                     &tile_obj, &variant_obj, &out))
        return NULL;
    if (gm_operand_parse(a_obj, "matmul", "a", NPY_FLOAT32, &ops[0]) < 0 ||
        gm_operand_parse(b_obj, "matmul", "b", NPY_FLOAT32, &ops[1]) < 0)
        return NULL;
    for (int i = 0; i < 2; i++)
        if (ops[i].ndim != 2) {
            PyErr_Format(PyExc_ValueError,
                         "matmul: %s must be 2-D (a matrix), not %d-D with shape %s",
                         i ? "b" : "a", ops[i].ndim,
                         gm_shape_str(ops[i].ndim, ops[i].shape, sa, sizeof sa));
            return NULL;
        }
    if (ops[0].shape[1] != ops[1].shape[0]) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: inner dimensions differ: a is %s and b is %s (a.shape[1] must "
                     "equal b.shape[0])",
                     gm_shape_str(2, ops[0].shape, sa, sizeof sa),
                     gm_shape_str(2, ops[1].shape, sb, sizeof sb));
        return NULL;
    }
    if (tile_obj && tile_obj != Py_None) {
        if (gm_arg_long(tile_obj, "matmul", "tile", &tile) < 0)
            return NULL;
        if (tile != 8 && tile != 16 && tile != 32) {
            PyErr_Format(PyExc_ValueError,
                         "matmul: tile=%lld is not allowed; tile must be one of 8, 16, 32", tile);
            return NULL;
        }
    }
    if (variant_obj && variant_obj != Py_None &&
        gm_arg_str(variant_obj, "matmul", "variant", &variant) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant("matmul", "matmul", variant);
    if (v == NULL)
        return NULL;
    long long M = ops[0].shape[0], K = ops[0].shape[1], N = ops[1].shape[1];
    npy_intp out_shape[2] = {(npy_intp)M, (npy_intp)N};
    if (M > 0x7fffffffLL || N > 0x7fffffffLL || K > 0x7fffffffLL || (M + tile - 1) / tile > 65535) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: a is %s and b is %s: too large for one launch with tile=%lld "
                     "(at most %lld rows)",
                     gm_shape_str(2, ops[0].shape, sa, sizeof sa),
                     gm_shape_str(2, ops[1].shape, sb, sizeof sb), tile, 65535LL * tile);
        return NULL;
    }
    if (out && out != Py_None &&
        (gm_check_out(out, "matmul", 2, out_shape, NPY_FLOAT32) < 0 ||
         check_no_alias(out, "matmul", ops, 2) < 0))
        return NULL;
    if (gm_ensure_device() < 0)
        return NULL;

    /* ---- device work: nothing above touched the GPU ---- */
    int return_device = ops[0].on_device || ops[1].on_device || (out && out != Py_None);
    gm_DeviceArray *c = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&ops[0]) < 0 || gm_operand_upload(&ops[1]) < 0)
        goto fail;
    c = make_out(out, "matmul", 2, out_shape);
    if (c == NULL)
        goto fail;
    if (M > 0 && N > 0) { /* K == 0 still launches: every element becomes 0 */
        gm_matmul_params p = {(const float *)ops[0].dev->ptr, (const float *)ops[1].dev->ptr,
                              (float *)c->ptr, (int)M, (int)N, (int)K, (int)tile};
        params = Py_BuildValue("{s:L,s:L,s:L,s:L}", "m", M, "n", N, "k", K, "tile", tile);
        gm_launch_info info = {v, params, 4.0 * ((double)M * K + (double)K * N + (double)M * N),
                               2.0 * (double)M * N * K, NULL, 0};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    gm_operand_release(&ops[0]);
    gm_operand_release(&ops[1]);
    return finish(c, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(c);
    gm_operand_release(&ops[0]);
    gm_operand_release(&ops[1]);
    return NULL;
}
