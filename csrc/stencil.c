/* stencil.c -- gpumem._core.stencil_1d: parse and validate, pick where the
 * coefficients live (constant / read-only / global), launch through gm_launch(). */
#include "gm.h"

#include <math.h>
#include <string.h>

static cudaError_t run_constant(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_stencil_constant((const gm_stencil_params *)p, d, s);
}
static cudaError_t run_readonly(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_stencil_readonly((const gm_stencil_params *)p, d, s);
}
static cudaError_t run_global(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_stencil_global((const gm_stencil_params *)p, d, s);
}

/* A zeroed params struct gives the symmetric build with 4 outputs per thread. */
#define STENCIL_KERNEL(NAME, MEM)                                                  \
    static const void *NAME(const void *params)                                    \
    {                                                                              \
        const gm_stencil_params *p = (const gm_stencil_params *)params;            \
        return gm_stencil_kernel(MEM, p->items ? p->items : 4, p->antisymmetric);  \
    }
STENCIL_KERNEL(kernel_constant, 0)
STENCIL_KERNEL(kernel_readonly, 1)
STENCIL_KERNEL(kernel_global, 2)

#define STENCIL_BYTES "8*n"
#define STENCIL_FLOPS "(3*R + 1)*n, 3*R*n when antisymmetric"

const gm_variant gm_stencil_variants[] = {
    {"stencil", "constant",
     "coefficients in __constant__ memory: every lane of a warp reads the same word, which the "
     "constant cache broadcasts in one pass",
     STENCIL_BYTES, STENCIL_FLOPS, run_constant, kernel_constant},
    {"stencil", "readonly",
     "coefficients through the read-only data cache (const __restrict__ + __ldg): one LDG per "
     "coefficient, served from the texture/L1 path",
     STENCIL_BYTES, STENCIL_FLOPS, run_readonly, kernel_readonly},
    {"stencil", "global",
     "coefficients as plain global loads through L1: the baseline the two caches are measured "
     "against",
     STENCIL_BYTES, STENCIL_FLOPS, run_global, kernel_global},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* The book's 8th-order first derivative, radius 4: w[R+k] = a_k, w[R-k] = -a_k. */
static const double default_coef[9] = {0.00357, -0.03809, 0.2, -0.8, 0.0,
                                       0.8,     -0.2,     0.03809, -0.00357};

/* coef -> float32 weights w[0..2R], checked: a 1-D real array of odd length
 * 3..2*GM_STENCIL_MAX_RADIUS+1, finite, symmetric or antisymmetric. */
static int parse_coef(PyObject *obj, float *w, int *radius, int *anti)
{
    int len;
    if (obj == NULL || obj == Py_None) {
        len = 9;
        for (int i = 0; i < len; i++)
            w[i] = (float)default_coef[i];
    } else {
        if (gm_DeviceArray_Check(obj)) {
            PyErr_SetString(PyExc_TypeError,
                            "stencil_1d: coef must be a host sequence or numpy.ndarray of real "
                            "numbers (the launch copies it to the device), not a DeviceArray");
            return -1;
        }
        PyArrayObject *a = (PyArrayObject *)PyArray_FROM_O(obj);
        if (a == NULL)
            return -1;
        int kind = PyArray_DESCR(a)->kind;
        if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') {
            PyErr_Format(PyExc_TypeError,
                         "stencil_1d: coef must hold real numbers, not dtype %R",
                         (PyObject *)PyArray_DESCR(a));
            Py_DECREF(a);
            return -1;
        }
        npy_intp size = PyArray_SIZE(a);
        if (PyArray_NDIM(a) != 1 || size % 2 == 0 || size < 3 ||
            size > 2 * GM_STENCIL_MAX_RADIUS + 1) {
            char sh[128];
            PyErr_Format(PyExc_ValueError,
                         "stencil_1d: coef has shape %s; it must be 1-D with an odd length "
                         "2*R + 1 for a radius R of 1..%d (3..%d weights, coef[R] the centre)",
                         gm_shape_str(PyArray_NDIM(a), PyArray_DIMS(a), sh, sizeof sh),
                         GM_STENCIL_MAX_RADIUS, 2 * GM_STENCIL_MAX_RADIUS + 1);
            Py_DECREF(a);
            return -1;
        }
        PyArrayObject *f = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)a, NPY_FLOAT64,
                                                             NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
        Py_DECREF(a);
        if (f == NULL)
            return -1;
        len = (int)size;
        const double *d = (const double *)PyArray_DATA(f);
        for (int i = 0; i < len; i++) {
            if (!isfinite(d[i]) || fabs(d[i]) > 3.0e38) {
                PyErr_Format(PyExc_ValueError,
                             "stencil_1d: coef[%d] is not a finite float32 value; every weight "
                             "must be finite",
                             i);
                Py_DECREF(f);
                return -1;
            }
            w[i] = (float)d[i];
        }
        Py_DECREF(f);
    }
    int R = len / 2, sym = 1, asym = w[R] == 0.0f;
    for (int k = 1; k <= R; k++) {
        sym &= w[R + k] == w[R - k];
        asym &= w[R + k] == -w[R - k];
    }
    if (!sym && !asym) {
        int k = 1;
        while (k < R && (w[R + k] == w[R - k] || w[R + k] == -w[R - k]))
            k++;
        char a[64], b[64], c[64];
        snprintf(a, sizeof a, "%.9g", (double)w[R + k]);
        snprintf(b, sizeof b, "%.9g", (double)w[R - k]);
        snprintf(c, sizeof c, "%.9g", (double)w[R]);
        PyErr_Format(PyExc_ValueError,
                     "stencil_1d: coef is neither symmetric (coef[R+k] == coef[R-k]) nor "
                     "antisymmetric (coef[R+k] == -coef[R-k] and coef[R] == 0) with R=%d: "
                     "coef[%d]=%s, coef[%d]=%s, coef[R]=%s",
                     R, R + k, a, R - k, b, c);
        return -1;
    }
    *radius = R;
    *anti = !sym; /* all zeros or any symmetric set: the symmetric form */
    return 0;
}

PyObject *gm_stencil_1d_py(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "coef", "memory", "block", "items", "out", NULL};
    PyObject *x_obj, *coef_obj = NULL, *mem_obj = NULL, *block_obj = NULL, *items_obj = NULL,
                     *out = NULL;
    const char *memory = "constant";
    long long block = 256, items = 4;
    float w[2 * GM_STENCIL_MAX_RADIUS + 1];
    int radius = 0, anti = 0;
    gm_operand op;
    char sh[128];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OOOO:stencil_1d", kwlist, &x_obj,
                                     &coef_obj, &mem_obj, &block_obj, &items_obj, &out))
        return NULL;
    if (gm_operand_parse(x_obj, "stencil_1d", "x", NPY_FLOAT32, &op) < 0)
        return NULL;
    if (op.ndim != 1) {
        PyErr_Format(PyExc_ValueError, "stencil_1d: x must be 1-D, not %d-D with shape %s",
                     op.ndim, gm_shape_str(op.ndim, op.shape, sh, sizeof sh));
        return NULL;
    }
    if (parse_coef(coef_obj, w, &radius, &anti) < 0)
        return NULL;
    if (mem_obj && mem_obj != Py_None && gm_arg_str(mem_obj, "stencil_1d", "memory", &memory) < 0)
        return NULL;
    if (strcmp(memory, "constant") && strcmp(memory, "readonly") && strcmp(memory, "global")) {
        PyErr_Format(PyExc_ValueError,
                     "stencil_1d: memory='%s' is unknown; allowed: 'constant', 'readonly', "
                     "'global'",
                     memory);
        return NULL;
    }
    if (gm_sp_block(block_obj, "stencil_1d", 1024, &block) < 0)
        return NULL;
    if (items_obj && items_obj != Py_None) {
        if (gm_arg_long(items_obj, "stencil_1d", "items", &items) < 0)
            return NULL;
        if (items != 1 && items != 2 && items != 4 && items != 8) {
            PyErr_Format(PyExc_ValueError,
                         "stencil_1d: items=%lld is not allowed; items (outputs per thread) "
                         "must be one of 1, 2, 4, 8",
                         items);
            return NULL;
        }
    }
    const long long n = op.shape[0];
    if ((n + block * items - 1) / (block * items) > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError, "stencil_1d: x has %lld elements, too many for one launch",
                     n);
        return NULL;
    }
    npy_intp out_shape[1] = {(npy_intp)n};
    if (out && out != Py_None &&
        (gm_check_out(out, "stencil_1d", 1, out_shape, NPY_FLOAT32) < 0 ||
         gm_sp_no_alias(out, "stencil_1d", &op) < 0))
        return NULL;
    const gm_variant *v = gm_find_variant("stencil_1d", "stencil", memory);
    if (v == NULL || gm_ensure_device() < 0)
        return NULL;

    /* ---- device work: nothing above touched the GPU ---- */
    int return_device = op.on_device || (out && out != Py_None);
    gm_DeviceArray *res = NULL, *dcoef = NULL;
    PyObject *params = NULL;
    float half[GM_STENCIL_MAX_RADIUS + 1];
    for (int k = 0; k <= radius; k++)
        half[k] = w[radius + k];
    if (gm_operand_upload(&op) < 0)
        goto fail;
    res = gm_sp_make_out(out, 1, out_shape, NPY_FLOAT32);
    if (res == NULL)
        goto fail;
    if (n > 0) {
        const void *coef_dev = NULL;
        if (strcmp(memory, "constant") == 0) {
            /* Before the launch, so the launch's events time the kernel alone. */
            GM_CUDA(gm_stencil_set_constant(half, radius + 1));
        } else {
            npy_intp cn[1] = {radius + 1};
            PyArrayObject *hc = (PyArrayObject *)PyArray_SimpleNew(1, cn, NPY_FLOAT32);
            if (hc == NULL)
                goto fail;
            memcpy(PyArray_DATA(hc), half, sizeof(float) * (size_t)(radius + 1));
            dcoef = gm_devarray_from_host(hc);
            Py_DECREF(hc);
            if (dcoef == NULL)
                goto fail;
            coef_dev = dcoef->ptr;
        }
        gm_stencil_params p = {(const float *)op.dev->ptr, (float *)res->ptr,
                               (const float *)coef_dev, n, radius, (int)block, (int)items, anti};
        params = Py_BuildValue("{s:L,s:i,s:L,s:L,s:i,s:s}", "n", n, "radius", radius, "block",
                               block, "items", items, "antisymmetric", anti, "memory", memory);
        gm_launch_info info = {v, params, 8.0 * (double)n,
                               (double)n * (3.0 * radius + (anti ? 0.0 : 1.0)), NULL, 0};
        if (params == NULL || gm_launch(&info, &p) < 0)
            goto fail;
    }
    Py_XDECREF(params);
    Py_XDECREF(dcoef);
    gm_operand_release(&op);
    return gm_sp_finish(res, return_device);
fail:
    Py_XDECREF(params);
    Py_XDECREF(dcoef);
    Py_XDECREF(res);
    gm_operand_release(&op);
    return NULL;
}
