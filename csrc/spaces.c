/* spaces.c -- memory spaces, lifetimes, register caps, divergence: the Python
 * entry points of cuda/spaces.cu, their variant table, and kernel_attributes()
 * / occupancy() for every variant that names its __global__ function. */
#include "gm.h"

#include <string.h>

/* ---- helpers (also used by stencil.c) -------------------------------------- */
int gm_sp_int(PyObject *obj, const char *fn, const char *name, long long lo, long long hi,
              long long *out)
{
    long long v;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (gm_arg_long(obj, fn, name, &v) < 0)
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; %s must be %lld..%lld", fn,
                     name, v, name, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int gm_sp_block(PyObject *obj, const char *fn, long long max, long long *out)
{
    long long v;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (gm_arg_long(obj, fn, "block", &v) < 0)
        return -1;
    if (v < 32 || v > max || v % 32) {
        PyErr_Format(PyExc_ValueError,
                     "%s: block=%lld is not allowed; block must be a multiple of 32 (whole "
                     "warps) from 32 to %lld threads",
                     fn, v, max);
        return -1;
    }
    *out = v;
    return 0;
}

int gm_sp_no_alias(PyObject *out, const char *fn, const gm_operand *op)
{
    if (out && out != Py_None && op->on_device &&
        ((gm_DeviceArray *)op->obj)->ptr == ((gm_DeviceArray *)out)->ptr &&
        ((gm_DeviceArray *)out)->nbytes) {
        PyErr_Format(PyExc_ValueError,
                     "%s: out must not share memory with an input (threads read their "
                     "neighbours' inputs while others write the result)",
                     fn);
        return -1;
    }
    return 0;
}

gm_DeviceArray *gm_sp_make_out(PyObject *out, int ndim, const npy_intp *shape, int typenum)
{
    if (out != NULL && out != Py_None) {
        Py_INCREF(out);
        return (gm_DeviceArray *)out;
    }
    PyArray_Descr *dt = PyArray_DescrFromType(typenum);
    gm_DeviceArray *d = gm_devarray_new(ndim, shape, dt);
    Py_DECREF(dt);
    return d;
}

PyObject *gm_sp_finish(gm_DeviceArray *out, int return_device)
{
    if (return_device)
        return (PyObject *)out;
    PyObject *host = gm_devarray_get(out);
    Py_DECREF(out);
    return host;
}

static int check_out(PyObject *out, const char *fn, int ndim, const npy_intp *shape, int typenum,
                     const gm_operand *op)
{
    if (out == NULL || out == Py_None)
        return 0;
    if (gm_check_out(out, fn, ndim, shape, typenum) < 0)
        return -1;
    return op ? gm_sp_no_alias(out, fn, op) : 0;
}

static int parse_1d(PyObject *obj, const char *fn, gm_operand *op)
{
    char sh[128];
    if (gm_operand_parse(obj, fn, "x", NPY_FLOAT32, op) < 0)
        return -1;
    if (op->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: x must be 1-D, not %d-D with shape %s", fn, op->ndim,
                     gm_shape_str(op->ndim, op->shape, sh, sizeof sh));
        return -1;
    }
    return 0;
}

/* ---- thunks and the variant table ------------------------------------------- */
#define THUNK(NAME, LAUNCHER, TYPE)                                            \
    static cudaError_t NAME(const void *p, gm_dims *d, cudaStream_t s)         \
    {                                                                          \
        return LAUNCHER((const TYPE *)p, d, s);                                \
    }
#define KERNEL(NAME, EXPR)                                                     \
    static const void *NAME(const void *p)                                     \
    {                                                                          \
        (void)p;                                                               \
        return EXPR;                                                           \
    }
THUNK(run_bcast_constant, gm_broadcast_constant, gm_broadcast_params)
THUNK(run_bcast_readonly, gm_broadcast_readonly, gm_broadcast_params)
THUNK(run_private_local, gm_private_array_local, gm_private_array_params)
THUNK(run_private_registers, gm_private_array_registers, gm_private_array_params)
THUNK(run_lifetime, gm_lifetime, gm_lifetime_params)
THUNK(run_register_cap, gm_register_cap, gm_register_cap_params)
THUNK(run_div_odd_even, gm_divergence_odd_even, gm_divergence_params)
THUNK(run_div_warp, gm_divergence_warp, gm_divergence_params)
KERNEL(k_bcast_constant, gm_broadcast_kernel(0))
KERNEL(k_bcast_readonly, gm_broadcast_kernel(1))
KERNEL(k_private_local, gm_private_array_kernel(0))
KERNEL(k_private_registers, gm_private_array_kernel(1))
KERNEL(k_lifetime, gm_lifetime_kernel())
KERNEL(k_cap1, gm_register_cap_kernel(1))
KERNEL(k_cap2, gm_register_cap_kernel(2))
KERNEL(k_cap4, gm_register_cap_kernel(4))
KERNEL(k_cap6, gm_register_cap_kernel(6))
KERNEL(k_cap8, gm_register_cap_kernel(8))
KERNEL(k_div_odd_even, gm_divergence_kernel(0))
KERNEL(k_div_warp, gm_divergence_kernel(1))

#define REGCAP_BYTES "4*(64 + 1)*n"
#define REGCAP_FLOPS "(192*rounds + 64)*n"
#define REGCAP_IDEA(CAP)                                                                   \
    "__launch_bounds__(256, " CAP "): 64 live floats per thread in at most 65536/(256*" CAP \
    ") registers; what does not fit spills to local memory"

const gm_variant gm_spaces_variants[] = {
    {"broadcast", "constant",
     "each warp reads `distinct` words of __constant__ memory per load: the constant cache "
     "serves one word per pass, so d words cost d passes",
     "4*n", "iters*n", run_bcast_constant, k_bcast_constant},
    {"broadcast", "readonly",
     "the same reads through the read-only data cache (__ldg): any words of one 128-byte line "
     "in one pass",
     "4*n", "iters*n", run_bcast_readonly, k_bcast_readonly},
    {"private_array", "local",
     "a per-thread 16-bin histogram indexed at run time: registers cannot be indexed, so it "
     "lives in local memory (STL/LDL through L1)",
     "4*n + 64*threads", "0", run_private_local, k_private_local},
    {"private_array", "registers",
     "the same histogram with compile-time indices only (compare and add every bin): it stays "
     "in registers",
     "4*n + 64*threads", "0", run_private_registers, k_private_registers},
    {"lifetime", "default",
     "a __device__ counter persists across launches, a __shared__ count lives and dies with "
     "its block, a __constant__ set from the host persists",
     "24*blocks", "0", run_lifetime, k_lifetime},
    {"register_cap", "uncapped", REGCAP_IDEA("1"), REGCAP_BYTES, REGCAP_FLOPS, run_register_cap,
     k_cap1},
    {"register_cap", "cap128", REGCAP_IDEA("2"), REGCAP_BYTES, REGCAP_FLOPS, run_register_cap,
     k_cap2},
    {"register_cap", "cap64", REGCAP_IDEA("4"), REGCAP_BYTES, REGCAP_FLOPS, run_register_cap,
     k_cap4},
    {"register_cap", "cap40", REGCAP_IDEA("6"), REGCAP_BYTES, REGCAP_FLOPS, run_register_cap,
     k_cap6},
    {"register_cap", "cap32", REGCAP_IDEA("8"), REGCAP_BYTES, REGCAP_FLOPS, run_register_cap,
     k_cap8},
    {"divergence", "odd_even",
     "branch on threadIdx.x % 2: both paths in every warp, run one after the other", "8*n",
     "2*iters*n", run_div_odd_even, k_div_odd_even},
    {"divergence", "warp",
     "branch on the warp index: each warp takes one path, no warp diverges", "8*n",
     "2*iters*n", run_div_warp, k_div_warp},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

static int min_blocks_of(const char *variant)
{
    static const struct { const char *name; int min_blocks; } caps[] = {
        {"uncapped", 1}, {"cap128", 2}, {"cap64", 4}, {"cap40", 6}, {"cap32", 8}};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        if (strcmp(caps[i].name, variant) == 0)
            return caps[i].min_blocks;
    return 0;
}

/* ---- broadcast ------------------------------------------------------------- */
/* The table every variant reads: quarters, so any sum of them is exact in float32. */
static void broadcast_table(float *t)
{
    for (int j = 0; j < GM_BROADCAST_TABLE; j++)
        t[j] = (float)(j % 13) * 0.25f;
}

PyObject *gm_broadcast_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"distinct", "memory", "n", "iters", "block", "out", NULL};
    PyObject *d_obj, *mem_obj = NULL, *n_obj = NULL, *it_obj = NULL, *block_obj = NULL,
                     *out = NULL;
    const char *memory = "constant";
    long long distinct = 1, n = 1 << 20, iters = 256, block = 256;
    const char *fn = "constant_broadcast";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOOO:constant_broadcast", kwlist, &d_obj,
                                     &mem_obj, &n_obj, &it_obj, &block_obj, &out))
        return NULL;
    if (gm_sp_int(d_obj, fn, "distinct", 1, 32, &distinct) < 0)
        return NULL;
    if (mem_obj && mem_obj != Py_None && gm_arg_str(mem_obj, fn, "memory", &memory) < 0)
        return NULL;
    if (strcmp(memory, "constant") && strcmp(memory, "readonly")) {
        PyErr_Format(PyExc_ValueError,
                     "%s: memory='%s' is unknown; allowed: 'constant', 'readonly'", fn, memory);
        return NULL;
    }
    if (gm_sp_int(n_obj, fn, "n", 1, 1LL << 31, &n) < 0 ||
        gm_sp_int(it_obj, fn, "iters", 1, 1 << 16, &iters) < 0 ||
        gm_sp_block(block_obj, fn, 1024, &block) < 0)
        return NULL;
    npy_intp shape[1] = {(npy_intp)n};
    if (check_out(out, fn, 1, shape, NPY_FLOAT32, NULL) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, "broadcast", memory);
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    gm_DeviceArray *res = NULL, *dtable = NULL;
    PyObject *params = NULL;
    npy_intp tn[1] = {GM_BROADCAST_TABLE};
    PyArrayObject *ht = (PyArrayObject *)PyArray_SimpleNew(1, tn, NPY_FLOAT32);
    if (ht == NULL)
        return NULL;
    broadcast_table((float *)PyArray_DATA(ht));
    res = gm_sp_make_out(out, 1, shape, NPY_FLOAT32);
    if (res == NULL)
        goto fail;
    if (strcmp(memory, "constant") == 0) {
        GM_CUDA(gm_broadcast_set_constant((const float *)PyArray_DATA(ht), GM_BROADCAST_TABLE));
    } else {
        dtable = gm_devarray_from_host(ht);
        if (dtable == NULL)
            goto fail;
    }
    gm_broadcast_params p = {dtable ? (const float *)dtable->ptr : NULL, (float *)res->ptr, n,
                             (int)distinct, (int)iters, (int)block};
    params = Py_BuildValue("{s:L,s:L,s:L,s:L,s:s}", "distinct", distinct, "n", n, "iters", iters,
                           "block", block, "memory", memory);
    gm_launch_info info = {v, params, 4.0 * (double)n, (double)iters * (double)n, NULL, 0};
    if (params == NULL || gm_launch(&info, &p) < 0)
        goto fail;
    Py_DECREF(params);
    Py_XDECREF(dtable);
    Py_DECREF(ht);
    return gm_sp_finish(res, out && out != Py_None);
fail:
    Py_XDECREF(params);
    Py_XDECREF(dtable);
    Py_XDECREF(res);
    Py_DECREF(ht);
    return NULL;
}

/* ---- private_array ------------------------------------------------------------ */
PyObject *gm_private_array_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "variant", "threads", "block", "out", NULL};
    PyObject *x_obj, *var_obj = NULL, *thr_obj = NULL, *block_obj = NULL, *out = NULL;
    const char *variant = "local", *fn = "thread_histogram";
    long long threads, block = 256;
    gm_operand op;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOO:thread_histogram", kwlist, &x_obj,
                                     &var_obj, &thr_obj, &block_obj, &out))
        return NULL;
    if (parse_1d(x_obj, fn, &op) < 0)
        return NULL;
    if (var_obj && var_obj != Py_None && gm_arg_str(var_obj, fn, "variant", &variant) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, "private_array", variant);
    if (v == NULL)
        return NULL;
    const long long n = op.shape[0];
    threads = n < 65536 ? (n > 0 ? n : 1) : 65536;
    if (gm_sp_int(thr_obj, fn, "threads", 1, 0x7fffffffLL - 1024, &threads) < 0 ||
        gm_sp_block(block_obj, fn, 1024, &block) < 0)
        return NULL;
    npy_intp shape[2] = {GM_PRIVATE_BINS, (npy_intp)threads};
    if (check_out(out, fn, 2, shape, NPY_INT32, NULL) < 0 || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    int return_device = op.on_device || (out && out != Py_None);
    gm_DeviceArray *res = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&op) < 0)
        goto fail;
    res = gm_sp_make_out(out, 2, shape, NPY_INT32);
    if (res == NULL)
        goto fail;
    gm_private_array_params p = {(const float *)op.dev->ptr, (int *)res->ptr, n, (int)threads,
                                 (int)block};
    params = Py_BuildValue("{s:L,s:L,s:L}", "n", n, "threads", threads, "block", block);
    gm_launch_info info = {v, params, 4.0 * (double)n + 64.0 * (double)threads, 0.0, NULL, 0};
    if (params == NULL || gm_launch(&info, &p) < 0)
        goto fail;
    Py_DECREF(params);
    gm_operand_release(&op);
    return gm_sp_finish(res, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(res);
    gm_operand_release(&op);
    return NULL;
}

/* ---- lifetime --------------------------------------------------------------------- */
PyObject *gm_lifetime_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"blocks", "block", "value", "counter", NULL};
    PyObject *blocks_obj = NULL, *block_obj = NULL, *value_obj = NULL, *counter_obj = NULL;
    const char *fn = "lifetime";
    long long blocks = 4, block = 64, value = 0, counter = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:lifetime", kwlist, &blocks_obj,
                                     &block_obj, &value_obj, &counter_obj))
        return NULL;
    if (gm_sp_int(blocks_obj, fn, "blocks", 1, 65535, &blocks) < 0 ||
        gm_sp_block(block_obj, fn, 1024, &block) < 0 ||
        gm_sp_int(value_obj, fn, "value", -2147483647LL - 1, 2147483647LL, &value) < 0 ||
        gm_sp_int(counter_obj, fn, "counter", 0, 1LL << 62, &counter) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, "lifetime", "default");
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    gm_DeviceArray *res = NULL;
    PyObject *params = NULL;
    npy_intp shape[2] = {3, (npy_intp)blocks};
    gm_buffer inout[1];
    size_t nbytes = 0;
    if (value_obj && value_obj != Py_None)
        GM_CUDA(gm_lifetime_set_constant((int)value));
    if (counter_obj && counter_obj != Py_None)
        GM_CUDA(gm_lifetime_set_counter((unsigned long long)counter));
    /* The kernel reads and writes the __device__ counter: a profiler replay restores it. */
    GM_CUDA(gm_lifetime_counter_address(&inout[0].ptr, &nbytes));
    inout[0].nbytes = nbytes;
    res = gm_sp_make_out(NULL, 2, shape, NPY_INT64);
    if (res == NULL)
        goto fail;
    gm_lifetime_params p = {(long long *)res->ptr, (int)blocks, (int)block};
    params = Py_BuildValue("{s:L,s:L}", "blocks", blocks, "block", block);
    gm_launch_info info = {v, params, 24.0 * (double)blocks, 0.0, inout, 1};
    if (params == NULL || gm_launch(&info, &p) < 0)
        goto fail;
    Py_DECREF(params);
    return gm_sp_finish(res, 0);
fail:
    Py_XDECREF(params);
    Py_XDECREF(res);
    return NULL;
}

/* ---- register_cap --------------------------------------------------------------- */
PyObject *gm_register_cap_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "variant", "rounds", "block", "out", NULL};
    PyObject *x_obj, *var_obj = NULL, *rounds_obj = NULL, *block_obj = NULL, *out = NULL;
    const char *variant = "uncapped", *fn = "register_pressure";
    long long rounds = 8, block = GM_REGCAP_MAX_BLOCK;
    gm_operand op;
    char sh[128];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOO:register_pressure", kwlist, &x_obj,
                                     &var_obj, &rounds_obj, &block_obj, &out))
        return NULL;
    if (gm_operand_parse(x_obj, fn, "x", NPY_FLOAT32, &op) < 0)
        return NULL;
    if (op.ndim != 2 || op.shape[0] != GM_REGCAP_LIVE) {
        PyErr_Format(PyExc_ValueError,
                     "%s: x has shape %s; it must be (%d, n): column t holds the %d values "
                     "thread t keeps live",
                     fn, gm_shape_str(op.ndim, op.shape, sh, sizeof sh), GM_REGCAP_LIVE,
                     GM_REGCAP_LIVE);
        return NULL;
    }
    if (var_obj && var_obj != Py_None && gm_arg_str(var_obj, fn, "variant", &variant) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, "register_cap", variant);
    if (v == NULL)
        return NULL;
    if (gm_sp_int(rounds_obj, fn, "rounds", 0, 1 << 20, &rounds) < 0 ||
        gm_sp_block(block_obj, fn, GM_REGCAP_MAX_BLOCK, &block) < 0)
        return NULL;
    const long long n = op.shape[1];
    npy_intp shape[1] = {(npy_intp)n};
    if (check_out(out, fn, 1, shape, NPY_FLOAT32, &op) < 0 || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    int return_device = op.on_device || (out && out != Py_None);
    gm_DeviceArray *res = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&op) < 0)
        goto fail;
    res = gm_sp_make_out(out, 1, shape, NPY_FLOAT32);
    if (res == NULL)
        goto fail;
    if (n > 0) {
        gm_register_cap_params p = {(const float *)op.dev->ptr, (float *)res->ptr, n, (int)rounds,
                                    (int)block, min_blocks_of(variant)};
        params = Py_BuildValue("{s:L,s:L,s:L}", "n", n, "rounds", rounds, "block", block);
        gm_launch_info info = {v, params, 4.0 * (GM_REGCAP_LIVE + 1) * (double)n,
                               (192.0 * (double)rounds + 64.0) * (double)n, NULL, 0};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    gm_operand_release(&op);
    return gm_sp_finish(res, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(res);
    gm_operand_release(&op);
    return NULL;
}

/* ---- divergence ----------------------------------------------------------------- */
PyObject *gm_divergence_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "variant", "iters", "block", "out", NULL};
    PyObject *x_obj, *var_obj = NULL, *it_obj = NULL, *block_obj = NULL, *out = NULL;
    const char *variant = "odd_even", *fn = "divergence";
    long long iters = 256, block = 256;
    gm_operand op;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOO:divergence", kwlist, &x_obj,
                                     &var_obj, &it_obj, &block_obj, &out))
        return NULL;
    if (parse_1d(x_obj, fn, &op) < 0)
        return NULL;
    if (var_obj && var_obj != Py_None && gm_arg_str(var_obj, fn, "variant", &variant) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, "divergence", variant);
    if (v == NULL)
        return NULL;
    if (gm_sp_int(it_obj, fn, "iters", 0, 1 << 20, &iters) < 0 ||
        gm_sp_block(block_obj, fn, 1024, &block) < 0)
        return NULL;
    const long long n = op.shape[0];
    npy_intp shape[1] = {(npy_intp)n};
    if ((n + block - 1) / block > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError, "%s: x has %lld elements, too many for one launch", fn, n);
        return NULL;
    }
    if (check_out(out, fn, 1, shape, NPY_FLOAT32, &op) < 0 || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work ---- */
    int return_device = op.on_device || (out && out != Py_None);
    gm_DeviceArray *res = NULL;
    PyObject *params = NULL;
    if (gm_operand_upload(&op) < 0)
        goto fail;
    res = gm_sp_make_out(out, 1, shape, NPY_FLOAT32);
    if (res == NULL)
        goto fail;
    if (n > 0) {
        gm_divergence_params p = {(const float *)op.dev->ptr, (float *)res->ptr, n, (int)iters,
                                  (int)block};
        params = Py_BuildValue("{s:L,s:L,s:L}", "n", n, "iters", iters, "block", block);
        gm_launch_info info = {v, params, 8.0 * (double)n, 2.0 * (double)iters * (double)n, NULL,
                               0};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    gm_operand_release(&op);
    return gm_sp_finish(res, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(res);
    gm_operand_release(&op);
    return NULL;
}

/* ---- kernel_attributes / occupancy ----------------------------------------------- */
typedef union {
    gm_vec_add_params vec_add;
    gm_matmul_params matmul;
    gm_stencil_params stencil;
    gm_broadcast_params broadcast;
    gm_private_array_params private_array;
    gm_lifetime_params lifetime;
    gm_register_cap_params register_cap;
    gm_divergence_params divergence;
    char pad[256];
} any_params;

/* Read the kernel-selecting entries of `params` (a dict) into p.  Only
 * matmul (tile) and stencil (items, antisymmetric) build several kernels per
 * variant; other keys are errors when strict (and ignored otherwise, so a
 * LaunchRecord's params can be passed as they are). */
static int selecting_params(const char *fn, const gm_variant *v, PyObject *params, int strict,
                            any_params *p)
{
    static const char *matmul_keys[] = {"tile", NULL};
    static const char *stencil_keys[] = {"items", "antisymmetric", NULL};
    static const char *none[] = {NULL};
    const char **keys = none;
    memset(p, 0, sizeof *p);
    if (strcmp(v->family, "matmul") == 0)
        keys = matmul_keys;
    else if (strcmp(v->family, "stencil") == 0)
        keys = stencil_keys;
    if (strcmp(v->family, "matmul") == 0)
        p->matmul.tile = 16;
    if (strcmp(v->family, "stencil") == 0) {
        p->stencil.items = 4;
        p->stencil.antisymmetric = 1; /* the default coefficients */
    }
    if (params == NULL || params == Py_None)
        return 0;
    if (!PyDict_Check(params)) {
        PyErr_Format(PyExc_TypeError, "%s: params must be a dict, not %.200s", fn,
                     Py_TYPE(params)->tp_name);
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(params, &pos, &key, &value)) {
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (k == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: parameter names must be str", fn);
            return -1;
        }
        int known = 0;
        for (const char **q = keys; *q; q++)
            known |= strcmp(*q, k) == 0;
        if (!known) {
            if (!strict)
                continue;
            char allowed[128] = "";
            size_t used = 0;
            for (const char **q = keys; *q && used < sizeof allowed; q++)
                used += (size_t)snprintf(allowed + used, sizeof allowed - used, "%s'%s'",
                                         used ? ", " : "", *q);
            PyErr_Format(PyExc_ValueError,
                         "%s: parameter %s is not one that picks a %s/%s kernel; allowed: %s", fn,
                         k, v->family, v->name, used ? allowed : "none");
            return -1;
        }
        long long x;
        if (strcmp(k, "tile") == 0) {
            if (gm_arg_long(value, fn, "tile", &x) < 0)
                return -1;
            if (x != 8 && x != 16 && x != 32) {
                PyErr_Format(PyExc_ValueError,
                             "%s: tile=%lld is not allowed; tile must be one of 8, 16, 32", fn, x);
                return -1;
            }
            p->matmul.tile = (int)x;
        } else if (strcmp(k, "items") == 0) {
            if (gm_arg_long(value, fn, "items", &x) < 0)
                return -1;
            if (x != 1 && x != 2 && x != 4 && x != 8) {
                PyErr_Format(PyExc_ValueError,
                             "%s: items=%lld is not allowed; items must be one of 1, 2, 4, 8", fn,
                             x);
                return -1;
            }
            p->stencil.items = (int)x;
        } else if (strcmp(k, "antisymmetric") == 0) {
            int t = PyObject_IsTrue(value);
            if (t < 0)
                return -1;
            p->stencil.antisymmetric = t;
        }
    }
    return 0;
}

static const void *kernel_of(const char *fn, PyObject *family_obj, PyObject *variant_obj,
                             PyObject *params, int strict, const gm_variant **vout)
{
    const char *family, *variant;
    any_params p;
    if (gm_arg_str(family_obj, fn, "family", &family) < 0 ||
        gm_arg_str(variant_obj, fn, "variant", &variant) < 0)
        return NULL;
    const gm_variant *v = gm_find_variant(fn, family, variant);
    if (v == NULL)
        return NULL;
    if (v->kernel == NULL) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %s/%s does not name its __global__ function yet (gm_variant.kernel "
                     "is NULL)",
                     fn, family, variant);
        return NULL;
    }
    if (selecting_params(fn, v, params, strict, &p) < 0)
        return NULL;
    const void *k = v->kernel(&p);
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

PyObject *gm_kernel_attributes_py(PyObject *self, PyObject *args)
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

PyObject *gm_occupancy_py(PyObject *self, PyObject *args)
{
    PyObject *family, *variant, *block_obj, *smem_obj = Py_None, *params = NULL, *res = NULL,
                                                     *num = NULL;
    int strict = 1, blocks = 0;
    long long block, smem = 0;
    const gm_variant *v = NULL;
    struct cudaFuncAttributes a;
    const char *fn = "occupancy";
    if (!PyArg_ParseTuple(args, "OOO|OOp:occupancy", &family, &variant, &block_obj, &smem_obj,
                          &params, &strict))
        return NULL;
    if (gm_arg_long(block_obj, fn, "block", &block) < 0)
        return NULL;
    if (block < 1 || block > 1024) {
        PyErr_Format(PyExc_ValueError,
                     "%s: block=%lld is not allowed; block must be 1..1024 threads", fn, block);
        return NULL;
    }
    if (gm_sp_int(smem_obj, fn, "smem", 0, 1 << 30, &smem) < 0)
        return NULL;
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
