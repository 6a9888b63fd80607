/* access.c -- Python entry points of the access-pattern kernels
 * (cuda/access.cu): read_offset, write_offset, strided_read, struct_update,
 * distance, copy.  Same path as kernels.c: parse and validate every argument
 * (no device call before that), upload ndarray inputs, launch through
 * gm_launch(), hand back the result. */
#include "gm.h"

#include <string.h>

/* Thunks from the one launcher signature to each typed extern "C" launcher. */
#define GM_THUNK(fn, type)                                                     \
    static cudaError_t run_##fn(const void *p, gm_dims *d, cudaStream_t s)     \
    {                                                                          \
        return gm_##fn((const type *)p, d, s);                                 \
    }
GM_THUNK(read_offset_unroll1, gm_read_offset_params)
GM_THUNK(read_offset_unroll4, gm_read_offset_params)
GM_THUNK(write_offset_unroll1, gm_write_offset_params)
GM_THUNK(write_offset_unroll4, gm_write_offset_params)
GM_THUNK(strided_read_default, gm_strided_read_params)
GM_THUNK(struct_update_aos, gm_struct_update_params)
GM_THUNK(struct_update_soa, gm_struct_update_params)
GM_THUNK(distance_aos, gm_distance_params)
GM_THUNK(distance_soa, gm_distance_params)
GM_THUNK(copy_float, gm_copy_params)
GM_THUNK(copy_float4, gm_copy_params)

/* The bytes are the useful bytes (what the threads ask for); the sectors the
 * hardware moves on top of them are what the lessons measure. */
const gm_variant gm_access_variants[] = {
    {"read_offset", "unroll1",
     "C[i] = A[i+offset] + B[i+offset]: loads shifted off the 32-byte sector grid touch one "
     "sector more per warp (offset 11: 5 sectors for 4 sectors' worth, 80%)",
     "12*(n - offset)", "n - offset", run_read_offset_unroll1},
    {"read_offset", "unroll4",
     "the same reads, four elements per thread one block apart: 8 independent loads in flight "
     "per thread before any store",
     "12*(n - offset)", "n - offset", run_read_offset_unroll4},
    {"write_offset", "unroll1",
     "C[i+offset] = A[i] + B[i]: stores shifted off the sector grid (offset 11: 80% store "
     "efficiency); stores skip L1",
     "12*(n - offset)", "n - offset", run_write_offset_unroll1},
    {"write_offset", "unroll4",
     "the same writes, four elements per thread one block apart, loads first",
     "12*(n - offset)", "n - offset", run_write_offset_unroll4},
    {"strided_read", "default",
     "C[i] = A[i*stride]: the coalescing cliff, from 4 sectors per warp (stride 1) to 32 "
     "(stride >= 8, 12.5% efficiency)",
     "8*ceil(n/stride)", "0", run_strided_read_default},
    {"struct_update", "aos",
     "array of structs {float x, y}: two 4-byte loads per element, each warp request spans "
     "256 bytes for 128 used (50%)",
     "16*n", "2*n", run_struct_update_aos},
    {"struct_update", "soa",
     "struct of arrays: x's then y's, every request a dense 128-byte run (100%)", "16*n", "2*n",
     run_struct_update_soa},
    {"distance", "aos",
     "points {float x, y, z}: three 4-byte loads 12 bytes apart per lane (a third of each "
     "request used)",
     "16*n", "5*n", run_distance_aos},
    {"distance", "soa", "x's, y's, z's in three arrays: three dense loads (100%)", "16*n", "5*n",
     run_distance_soa},
    {"copy", "float", "one 4-byte load and store per thread: 4 sectors per warp request", "8*n",
     "0", run_copy_float},
    {"copy", "float4",
     "one 16-byte vector load and store per thread: 16 sectors per request, a quarter of the "
     "instructions (the streaming ceiling)",
     "8*n", "0", run_copy_float4},
    {NULL, NULL, NULL, NULL, NULL, NULL},
};

/* ---- shared helpers --------------------------------------------------------- */
static int parse_block(PyObject *obj, const char *fn, long long *block)
{
    if (obj == NULL || obj == Py_None)
        return 0;
    if (gm_arg_long(obj, fn, "block", block) < 0)
        return -1;
    if (*block < 1 || *block > 1024) {
        PyErr_Format(PyExc_ValueError, "%s: block=%lld is not allowed; block must be 1..1024 threads",
                     fn, *block);
        return -1;
    }
    return 0;
}

/* One launch must fit a grid of at most 2^31 - 1 blocks of `per_block` items. */
static int check_grid(const char *fn, long long work, long long per_block, long long block)
{
    if ((work + per_block - 1) / per_block > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %lld elements need more than 2^31 - 1 blocks with block=%lld; use a "
                     "larger block",
                     fn, work, block);
        return -1;
    }
    return 0;
}

static int require_1d(const char *fn, const char *name, const gm_operand *op)
{
    char s[128];
    if (op->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be 1-D, not %d-D with shape %s", fn, name,
                     op->ndim, gm_shape_str(op->ndim, op->shape, s, sizeof s));
        return -1;
    }
    return 0;
}

static long long n_elements(const gm_operand *op)
{
    long long n = 1;
    for (int i = 0; i < op->ndim; i++)
        n *= op->shape[i];
    return n;
}

/* out must not overlap an input: the kernels read inputs other threads may
 * be writing through out. */
static int check_no_overlap(PyObject *out, const char *fn, const gm_operand *ops, int nops)
{
    if (out == NULL || out == Py_None)
        return 0;
    const gm_DeviceArray *o = (const gm_DeviceArray *)out;
    const char *o0 = (const char *)o->ptr, *o1 = o0 + o->nbytes;
    for (int i = 0; i < nops; i++) {
        if (!ops[i].on_device)
            continue;
        const gm_DeviceArray *d = (const gm_DeviceArray *)ops[i].obj;
        const char *d0 = (const char *)d->ptr, *d1 = d0 + d->nbytes;
        if (o->nbytes && d->nbytes && o0 < d1 && d0 < o1) {
            PyErr_Format(PyExc_ValueError,
                         "%s: out must not share memory with an input (%s reads its inputs "
                         "while other threads write the result)",
                         fn, fn);
            return -1;
        }
    }
    return 0;
}

static int has_out(PyObject *out) { return out != NULL && out != Py_None; }

/* The result buffer: the caller's out= (checked already) or a new float32
 * DeviceArray. */
static gm_DeviceArray *result_buffer(PyObject *out, int ndim, const npy_intp *shape)
{
    if (has_out(out))
        return (gm_DeviceArray *)Py_NewRef(out);
    PyArray_Descr *f32 = PyArray_DescrFromType(NPY_FLOAT32);
    gm_DeviceArray *d = gm_devarray_new(ndim, shape, f32);
    Py_DECREF(f32);
    return d;
}

/* count floats of a device array from element `start`, as a new 1-D ndarray. */
static PyObject *get_range(const gm_DeviceArray *d, long long start, long long count)
{
    npy_intp dims[1] = {(npy_intp)count};
    PyObject *a = PyArray_SimpleNew(1, dims, NPY_FLOAT32);
    if (a == NULL)
        return NULL;
    if (count > 0) {
        cudaError_t err;
        Py_BEGIN_ALLOW_THREADS
        err = cudaMemcpy(PyArray_DATA((PyArrayObject *)a), (const float *)d->ptr + start,
                         (size_t)count * sizeof(float), cudaMemcpyDeviceToHost);
        Py_END_ALLOW_THREADS
        GM_CUDA(err);
    }
    return a;
fail:
    Py_DECREF(a);
    return NULL;
}

/* Finish a call whose result is the whole buffer: the DeviceArray, or its
 * host copy when every input came from the host.  Consumes `c`. */
static PyObject *finish(gm_DeviceArray *c, int return_device)
{
    if (return_device)
        return (PyObject *)c;
    PyObject *host = gm_devarray_get(c);
    Py_DECREF(c);
    return host;
}

static void release_all(gm_operand *ops, int nops)
{
    for (int i = 0; i < nops; i++)
        gm_operand_release(&ops[i]);
}

/* ---- read_offset / write_offset ------------------------------------------------
 * The result has length n.  read_offset writes C[:n-offset], write_offset
 * C[offset:]; the other `offset` elements are never written:
 *   - ndarray inputs: the ndarray of the written elements only (n - offset);
 *   - out= given: out, its unwritten elements untouched;
 *   - DeviceArray inputs, no out=: a new length-n DeviceArray whose unwritten
 *     elements are NaN (bytes 0xff, set before the timed launch). */
static PyObject *offset_call(PyObject *args, PyObject *kwargs, int is_read)
{
    static char *kw_read[] = {"a", "b", "offset", "unroll", "block", "cache", "out", NULL};
    static char *kw_write[] = {"a", "b", "offset", "unroll", "block", "out", NULL};
    static const char *caches[] = {"default", "ca", "cg", "ldg", "cs"}; /* = gm_cache_path */
    const char *fn = is_read ? "read_offset" : "write_offset";
    PyObject *a_obj, *b_obj, *offset_obj = NULL, *unroll_obj = NULL, *block_obj = NULL,
                             *cache_obj = NULL, *out = NULL;
    long long offset = 0, unroll = 1, block = 512;
    int cache = GM_CACHE_DEFAULT;
    const char *cache_name = "default";
    gm_operand ops[2];
    char sa[128], sb[128];
    int ok = is_read ? PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOOO:read_offset", kw_read,
                                                   &a_obj, &b_obj, &offset_obj, &unroll_obj,
                                                   &block_obj, &cache_obj, &out)
                     : PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOO:write_offset", kw_write,
                                                   &a_obj, &b_obj, &offset_obj, &unroll_obj,
                                                   &block_obj, &out);
    if (!ok)
        return NULL;
    if (gm_operand_parse(a_obj, fn, "a", NPY_FLOAT32, &ops[0]) < 0 ||
        gm_operand_parse(b_obj, fn, "b", NPY_FLOAT32, &ops[1]) < 0 ||
        require_1d(fn, "a", &ops[0]) < 0 || require_1d(fn, "b", &ops[1]) < 0)
        return NULL;
    if (ops[0].shape[0] != ops[1].shape[0]) {
        PyErr_Format(PyExc_ValueError, "%s: a and b must have the same shape, not %s and %s", fn,
                     gm_shape_str(1, ops[0].shape, sa, sizeof sa),
                     gm_shape_str(1, ops[1].shape, sb, sizeof sb));
        return NULL;
    }
    long long n = ops[0].shape[0];
    if (offset_obj && offset_obj != Py_None) {
        if (gm_arg_long(offset_obj, fn, "offset", &offset) < 0)
            return NULL;
        if (offset < 0 || offset > n) {
            PyErr_Format(PyExc_ValueError,
                         "%s: offset=%lld is not allowed; offset must be 0..n (n=%lld, the "
                         "length of a)",
                         fn, offset, n);
            return NULL;
        }
    }
    if (unroll_obj && unroll_obj != Py_None) {
        if (gm_arg_long(unroll_obj, fn, "unroll", &unroll) < 0)
            return NULL;
        if (unroll != 1 && unroll != 4) {
            PyErr_Format(PyExc_ValueError,
                         "%s: unroll=%lld is not allowed; unroll must be 1 or 4 (elements per "
                         "thread)",
                         fn, unroll);
            return NULL;
        }
    }
    if (parse_block(block_obj, fn, &block) < 0)
        return NULL;
    if (cache_obj && cache_obj != Py_None) {
        if (gm_arg_str(cache_obj, fn, "cache", &cache_name) < 0)
            return NULL;
        cache = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(cache_name, caches[i]) == 0)
                cache = i;
        if (cache < 0) {
            PyErr_Format(PyExc_ValueError,
                         "%s: cache='%s' is unknown; allowed: 'default', 'ca' (L1 and L2), 'cg' "
                         "(L2 only), 'ldg' (read-only path), 'cs' (streaming)",
                         fn, cache_name);
            return NULL;
        }
    }
    if (check_grid(fn, n, unroll * block, block) < 0)
        return NULL;
    if (has_out(out) && (gm_check_out(out, fn, 1, ops[0].shape, NPY_FLOAT32) < 0 ||
                         check_no_overlap(out, fn, ops, 2) < 0))
        return NULL;
    const gm_variant *v = gm_find_variant(fn, fn, unroll == 4 ? "unroll4" : "unroll1");
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work: nothing above touched the GPU ---- */
    int return_device = ops[0].on_device || ops[1].on_device || has_out(out);
    long long written = n - offset;
    long long first = is_read ? 0 : offset;          /* first element written */
    long long hole = is_read ? written : 0;          /* first element never written */
    gm_DeviceArray *c = NULL;
    PyObject *params = NULL, *res = NULL;
    if (gm_operand_upload(&ops[0]) < 0 || gm_operand_upload(&ops[1]) < 0)
        goto fail;
    c = result_buffer(out, 1, ops[0].shape);
    if (c == NULL)
        goto fail;
    if (return_device && !has_out(out) && offset > 0)
        GM_CUDA(cudaMemset((float *)c->ptr + hole, 0xff, (size_t)offset * sizeof(float)));
    if (n > 0) {
        params = is_read ? Py_BuildValue("{s:L,s:L,s:L,s:s}", "n", n, "offset", offset, "block",
                                         block, "cache", caches[cache])
                         : Py_BuildValue("{s:L,s:L,s:L}", "n", n, "offset", offset, "block", block);
        gm_launch_info info = {v, params, 12.0 * (double)written, (double)written, NULL, 0};
        if (params == NULL)
            goto fail;
        if (is_read) {
            gm_read_offset_params p = {(const float *)ops[0].dev->ptr,
                                       (const float *)ops[1].dev->ptr, (float *)c->ptr, n, offset,
                                       (int)block, cache};
            if (gm_launch(&info, &p) < 0)
                goto fail;
        } else {
            gm_write_offset_params p = {(const float *)ops[0].dev->ptr,
                                        (const float *)ops[1].dev->ptr, (float *)c->ptr, n, offset,
                                        (int)block};
            if (gm_launch(&info, &p) < 0)
                goto fail;
        }
    }
    if (return_device) {
        res = (PyObject *)c;
        c = NULL;
    } else {
        res = get_range(c, first, written);
        if (res == NULL)
            goto fail;
    }
    Py_XDECREF(c);
    Py_XDECREF(params);
    release_all(ops, 2);
    return res;
fail:
    Py_XDECREF(params);
    Py_XDECREF(c);
    release_all(ops, 2);
    return NULL;
}

PyObject *gm_read_offset_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return offset_call(args, kwargs, 1);
}

PyObject *gm_write_offset_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return offset_call(args, kwargs, 0);
}

/* ---- strided_read ------------------------------------------------------------------ */
PyObject *gm_strided_read_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "stride", "block", "out", NULL};
    const char *fn = "strided_read";
    PyObject *a_obj, *stride_obj = NULL, *block_obj = NULL, *out = NULL;
    long long stride = 1, block = 512;
    gm_operand op;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:strided_read", kwlist, &a_obj,
                                     &stride_obj, &block_obj, &out))
        return NULL;
    if (gm_operand_parse(a_obj, fn, "a", NPY_FLOAT32, &op) < 0 || require_1d(fn, "a", &op) < 0)
        return NULL;
    if (stride_obj && stride_obj != Py_None) {
        if (gm_arg_long(stride_obj, fn, "stride", &stride) < 0)
            return NULL;
        if (stride < 1 || stride > 64) {
            PyErr_Format(PyExc_ValueError,
                         "strided_read: stride=%lld is not allowed; stride must be 1..64 floats",
                         stride);
            return NULL;
        }
    }
    if (parse_block(block_obj, fn, &block) < 0)
        return NULL;
    long long n = op.shape[0], m = (n + stride - 1) / stride;
    npy_intp out_shape[1] = {(npy_intp)m};
    if (check_grid(fn, m, block, block) < 0)
        return NULL;
    if (has_out(out) && (gm_check_out(out, fn, 1, out_shape, NPY_FLOAT32) < 0 ||
                         check_no_overlap(out, fn, &op, 1) < 0))
        return NULL;
    const gm_variant *v = gm_find_variant(fn, fn, "default");
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    int return_device = op.on_device || has_out(out);
    gm_DeviceArray *c = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&op) < 0)
        goto fail;
    c = result_buffer(out, 1, out_shape);
    if (c == NULL)
        goto fail;
    if (m > 0) {
        gm_strided_read_params p = {(const float *)op.dev->ptr, (float *)c->ptr, n, (int)stride,
                                    (int)block};
        params = Py_BuildValue("{s:L,s:L,s:L}", "n", n, "stride", stride, "block", block);
        gm_launch_info info = {v, params, 8.0 * (double)m, 0.0, NULL, 0};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    gm_operand_release(&op);
    return finish(c, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(c);
    gm_operand_release(&op);
    return NULL;
}

/* ---- struct_update and distance: AoS vs SoA ------------------------------------------ */
/* Read layout= ("aos" or "soa"); 0 for aos, 1 for soa, -1 with ValueError. */
static int parse_layout(PyObject *obj, const char *fn, const char **name)
{
    *name = "aos";
    if (obj && obj != Py_None && gm_arg_str(obj, fn, "layout", name) < 0)
        return -1;
    if (strcmp(*name, "aos") == 0)
        return 0;
    if (strcmp(*name, "soa") == 0)
        return 1;
    PyErr_Format(PyExc_ValueError,
                 "%s: layout='%s' is unknown; allowed: 'aos' (array of structs), 'soa' (struct "
                 "of arrays)",
                 fn, *name);
    return -1;
}

/* data must be (n, fields) for aos and (fields, n) for soa; returns n or -1. */
static long long layout_n(const char *fn, const char *name, const gm_operand *op, int soa,
                          int fields, const char *what)
{
    char s[128];
    if (op->ndim == 2 && op->shape[soa ? 0 : 1] == fields)
        return op->shape[soa ? 1 : 0];
    PyErr_Format(PyExc_ValueError,
                 "%s: %s has shape %s; layout='%s' takes shape %s (%s)", fn, name,
                 gm_shape_str(op->ndim, op->shape, s, sizeof s), soa ? "soa" : "aos",
                 soa ? (fields == 2 ? "(2, n)" : "(3, n)") : (fields == 2 ? "(n, 2)" : "(n, 3)"),
                 what);
    return -1;
}

static PyObject *layout_call(PyObject *args, PyObject *kwargs, int is_distance)
{
    static char *kw_update[] = {"data", "layout", "block", "out", NULL};
    static char *kw_distance[] = {"points", "layout", "block", "out", NULL};
    const char *fn = is_distance ? "distance" : "struct_update";
    const char *arg = is_distance ? "points" : "data";
    PyObject *d_obj, *layout_obj = NULL, *block_obj = NULL, *out = NULL;
    long long block = 512;
    const char *layout;
    gm_operand op;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     is_distance ? "O|$OOO:distance" : "O|$OOO:struct_update",
                                     is_distance ? kw_distance : kw_update, &d_obj, &layout_obj,
                                     &block_obj, &out))
        return NULL;
    if (gm_operand_parse(d_obj, fn, arg, NPY_FLOAT32, &op) < 0)
        return NULL;
    int soa = parse_layout(layout_obj, fn, &layout);
    if (soa < 0)
        return NULL;
    long long n = is_distance
                      ? layout_n(fn, arg, &op, soa, 3, soa ? "rows x, y, z" : "n points {x, y, z}")
                      : layout_n(fn, arg, &op, soa, 2, soa ? "rows x, y" : "n structs {x, y}");
    if (n < 0)
        return NULL;
    if (parse_block(block_obj, fn, &block) < 0 || check_grid(fn, n, block, block) < 0)
        return NULL;
    npy_intp d_shape[1] = {(npy_intp)n};
    int out_ndim = is_distance ? 1 : op.ndim;
    const npy_intp *out_shape = is_distance ? d_shape : op.shape;
    if (has_out(out) && (gm_check_out(out, fn, out_ndim, out_shape, NPY_FLOAT32) < 0 ||
                         check_no_overlap(out, fn, &op, 1) < 0))
        return NULL;
    const gm_variant *v = gm_find_variant(fn, fn, layout);
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    int return_device = op.on_device || has_out(out);
    gm_DeviceArray *c = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&op) < 0)
        goto fail;
    c = result_buffer(out, out_ndim, out_shape);
    if (c == NULL)
        goto fail;
    if (n > 0) {
        params = Py_BuildValue("{s:L,s:L}", "n", n, "block", block);
        gm_launch_info info = {v, params, 16.0 * (double)n, (is_distance ? 5.0 : 2.0) * (double)n,
                               NULL, 0};
        if (params == NULL)
            goto fail;
        if (is_distance) {
            gm_distance_params p = {(const float *)op.dev->ptr, (float *)c->ptr, n, (int)block};
            if (gm_launch(&info, &p) < 0)
                goto fail;
        } else {
            gm_struct_update_params p = {(const float *)op.dev->ptr, (float *)c->ptr, n,
                                         (int)block};
            if (gm_launch(&info, &p) < 0)
                goto fail;
        }
    }
    Py_XDECREF(params);
    gm_operand_release(&op);
    return finish(c, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(c);
    gm_operand_release(&op);
    return NULL;
}

PyObject *gm_struct_update_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return layout_call(args, kwargs, 0);
}

PyObject *gm_distance_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return layout_call(args, kwargs, 1);
}

/* ---- copy ------------------------------------------------------------------------ */
PyObject *gm_copy_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "variant", "block", "out", NULL};
    const char *fn = "copy";
    PyObject *a_obj, *variant_obj = NULL, *block_obj = NULL, *out = NULL;
    long long block = 256;
    const char *variant = "float4";
    gm_operand op;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:copy", kwlist, &a_obj, &variant_obj,
                                     &block_obj, &out))
        return NULL;
    if (gm_operand_parse(a_obj, fn, "a", NPY_FLOAT32, &op) < 0)
        return NULL;
    if (variant_obj && variant_obj != Py_None && gm_arg_str(variant_obj, fn, "variant", &variant) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, fn, variant);
    if (v == NULL || parse_block(block_obj, fn, &block) < 0)
        return NULL;
    long long n = n_elements(&op);
    long long threads = strcmp(variant, "float4") == 0 ? n / 4 + n % 4 : n;
    if (check_grid(fn, threads, block, block) < 0)
        return NULL;
    if (has_out(out) && (gm_check_out(out, fn, op.ndim, op.shape, NPY_FLOAT32) < 0 ||
                         check_no_overlap(out, fn, &op, 1) < 0))
        return NULL;
    if (gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    int return_device = op.on_device || has_out(out);
    gm_DeviceArray *c = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&op) < 0)
        goto fail;
    c = result_buffer(out, op.ndim, op.shape);
    if (c == NULL)
        goto fail;
    if (n > 0) {
        gm_copy_params p = {(const float *)op.dev->ptr, (float *)c->ptr, n, (int)block};
        params = Py_BuildValue("{s:L,s:L}", "n", n, "block", block);
        gm_launch_info info = {v, params, 8.0 * (double)n, 0.0, NULL, 0};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    gm_operand_release(&op);
    return finish(c, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(c);
    gm_operand_release(&op);
    return NULL;
}
