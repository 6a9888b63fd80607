/* stencil.c -- the stencil lesson's entry points (cuda/stencil.cu): the 1D
 * stencil with its coefficients in constant memory, through the read-only
 * cache or as plain global loads, and the constant cache's broadcast against
 * its serialization. */
#include "gm.h"

#include <math.h>
#include <string.h>

GM_THUNKS(stencil_1d)
GM_THUNKS(constant_broadcast)

#define WARPS_BLOCK(def)                                                       \
    {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, def, 32, 1024, .what = " threads"}

/* ---- stencil_1d ---------------------------------------------------------------- */
#define STENCIL_BYTES "8*n"
#define STENCIL_FLOPS "(3*R + 1)*n, 3*R*n when antisymmetric"

static const gm_variant stencil_variants[] = {
    GM_ROW(stencil_1d, "constant", GM_MEMORY_CONSTANT,
           "coefficients in __constant__ memory: every lane of a warp reads the same word, which "
           "the constant cache broadcasts in one pass",
           STENCIL_BYTES, STENCIL_FLOPS),
    GM_ROW(stencil_1d, "readonly", GM_MEMORY_READONLY,
           "coefficients through the read-only data cache (const __restrict__ + __ldg): one LDG "
           "per coefficient, served from the texture/L1 path",
           STENCIL_BYTES, STENCIL_FLOPS),
    GM_ROW(stencil_1d, "global", GM_MEMORY_GLOBAL,
           "coefficients as plain global loads through L1: the baseline the two caches are "
           "measured against",
           STENCIL_BYTES, STENCIL_FLOPS),
    GM_END_ROWS,
};

enum { ST_X, ST_COEF, ST_MEMORY, ST_BLOCK, ST_ITEMS, ST_ANTI, ST_RADIUS };
static const long long items_allowed[] = {1, 2, 4, 8, 0};
static const gm_arg stencil_args[] = {
    [ST_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [ST_COEF] = {"coef", GM_OBJECT, GM_POSITIONAL},
    [ST_MEMORY] = {"memory", GM_VARIANT, GM_RECORD, .sdef = "constant"},
    [ST_BLOCK] = WARPS_BLOCK(256),
    [ST_ITEMS] = {"items", GM_INT, GM_SELECTS | GM_RECORD, 4, .allowed = items_allowed,
                  .what = " (outputs per thread)"},
    /* The default coefficients are antisymmetric. */
    [ST_ANTI] = {"antisymmetric", GM_BOOL, GM_HIDDEN | GM_SELECTS | GM_RECORD, 1},
    [ST_RADIUS] = {"radius", GM_INT, GM_HIDDEN | GM_RECORD},
    {NULL},
};

/* The book's 8th-order first derivative, radius 4: w[R+k] = a_k, w[R-k] = -a_k. */
static const double default_coef[9] = {0.00357, -0.03809, 0.2, -0.8, 0.0,
                                       0.8,     -0.2,     0.03809, -0.00357};

/* coef -> float32 weights w[0..2R], checked: a 1-D real array of odd length
 * 3..2*GM_STENCIL_MAX_RADIUS+1, finite, symmetric or antisymmetric. */
static int parse_coef(PyObject *obj, float *w, long long *radius, long long *anti)
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

static int stencil_check(gm_call *c)
{
    float *w = c->scratch;
    if (parse_coef(c->obj[ST_COEF], w, &c->v[ST_RADIUS], &c->v[ST_ANTI]) < 0)
        return -1;
    const long long n = c->op[ST_X].shape[0], width = c->v[ST_BLOCK] * c->v[ST_ITEMS];
    if ((n + width - 1) / width > 0x7fffffffLL) {
        PyErr_Format(PyExc_ValueError, "stencil_1d: x has %lld elements, too many for one launch",
                     n);
        return -1;
    }
    /* Keep half the weights, c[k] = w[R+k], at the front of scratch. */
    const int R = (int)c->v[ST_RADIUS];
    memmove(w, w + R, sizeof(float) * (size_t)(R + 1));
    gm_result(c, 1, c->op[ST_X].shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 8.0 * (double)n;
    c->flops = (double)n * (3.0 * R + (c->v[ST_ANTI] ? 0.0 : 1.0));
    return gm_record(c, "n", n);
}

/* The coefficients go to the constant bank or to a device buffer before the
 * launch, so the launch's events time the kernel alone. */
static int stencil_prepare(gm_call *c)
{
    const int count = (int)c->v[ST_RADIUS] + 1;
    if (c->work == 0)
        return 0;
    if (c->variant->select == GM_MEMORY_CONSTANT) {
        GM_CUDA(gm_stencil_1d_set_constant(c->scratch, count));
        c->apart = 1; /* the next call may set other coefficients there */
        return 0;
    }
    npy_intp shape[1] = {count};
    PyArrayObject *h = (PyArrayObject *)PyArray_SimpleNew(1, shape, NPY_FLOAT32);
    if (h == NULL)
        return -1;
    memcpy(PyArray_DATA(h), c->scratch, sizeof(float) * (size_t)count);
    c->tmp = gm_devarray_from_host(h);
    Py_DECREF(h);
    return c->tmp ? 0 : -1;
fail:
    return -1;
}

static void stencil_fill(const gm_call *c, void *params)
{
    *(gm_stencil_1d_params *)params = (gm_stencil_1d_params){
        c->variant->select, gm_in(c, ST_X),         gm_res(c),
        gm_tmp(c), c->work, (int)c->v[ST_RADIUS],
        (int)c->v[ST_BLOCK], (int)c->v[ST_ITEMS], (int)c->v[ST_ANTI]};
}

static const gm_family gm_stencil_1d_family = {
    "stencil_1d",
    "out[i] = sum_k coef[R+k] * x[i+k] (x zero outside [0, n)), float32; the coefficients in "
    "__constant__ memory, through the read-only cache, or as global loads (`memory`).",
    stencil_args, 1, 0, stencil_variants, stencil_check, stencil_prepare, stencil_fill,
};

/* ---- constant_broadcast ----------------------------------------------------------- */
static const gm_variant broadcast_variants[] = {
    GM_ROW(constant_broadcast, "constant", GM_MEMORY_CONSTANT,
           "each warp reads `distinct` words of __constant__ memory per load: the constant cache "
           "serves one word per pass, so d words cost d passes",
           "4*n", "iters*n"),
    GM_ROW(constant_broadcast, "readonly", GM_MEMORY_READONLY,
           "the same reads through the read-only data cache (__ldg): any words of one 128-byte "
           "line in one pass",
           "4*n", "iters*n"),
    GM_END_ROWS,
};

enum { BC_DISTINCT, BC_MEMORY, BC_N, BC_ITERS, BC_BLOCK };
static const gm_arg broadcast_args[] = {
    [BC_DISTINCT] = {"distinct", GM_INT, GM_POSITIONAL | GM_REQUIRED | GM_RECORD, 1, 1, 32},
    [BC_MEMORY] = {"memory", GM_VARIANT, GM_RECORD, .sdef = "constant"},
    [BC_N] = {"n", GM_INT, GM_RECORD, 1 << 20, 1, 1LL << 31},
    [BC_ITERS] = {"iters", GM_INT, GM_RECORD, 256, 1, 1 << 16},
    [BC_BLOCK] = WARPS_BLOCK(256),
    {NULL},
};

static int broadcast_check(gm_call *c)
{
    npy_intp shape[1] = {(npy_intp)c->v[BC_N]};
    gm_result(c, 1, shape, NPY_FLOAT32);
    c->work = c->v[BC_N];
    c->bytes = 4.0 * (double)c->work;
    c->flops = (double)c->v[BC_ITERS] * (double)c->work;
    return 0;
}

/* The table every variant reads, (j % 13) / 4: quarters, so any sum of them
 * is exact in float32; into the constant bank or a device buffer. */
static int broadcast_prepare(gm_call *c)
{
    npy_intp shape[1] = {GM_BROADCAST_TABLE};
    PyArrayObject *h = (PyArrayObject *)PyArray_SimpleNew(1, shape, NPY_FLOAT32);
    if (h == NULL)
        return -1;
    float *t = PyArray_DATA(h);
    for (int j = 0; j < GM_BROADCAST_TABLE; j++)
        t[j] = (float)(j % 13) * 0.25f;
    cudaError_t err = cudaSuccess;
    if (c->variant->select == GM_MEMORY_CONSTANT)
        err = gm_constant_broadcast_set_constant(t, GM_BROADCAST_TABLE);
    else
        c->tmp = gm_devarray_from_host(h);
    Py_DECREF(h);
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, "gm_constant_broadcast_set_constant(table)");
    return c->variant->select == GM_MEMORY_CONSTANT || c->tmp ? 0 : -1;
}

static void broadcast_fill(const gm_call *c, void *params)
{
    *(gm_constant_broadcast_params *)params = (gm_constant_broadcast_params){
        c->variant->select, gm_tmp(c), gm_res(c), c->work,
        (int)c->v[BC_DISTINCT], (int)c->v[BC_ITERS], (int)c->v[BC_BLOCK]};
}

static const gm_family gm_constant_broadcast_family = {
    "constant_broadcast",
    "Each warp reads `distinct` different table words per load, `iters` times, from "
    "__constant__ memory or through the read-only cache (`memory`): n sums.",
    broadcast_args, 1, 0, broadcast_variants, broadcast_check, broadcast_prepare, broadcast_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_stencil_1d_family,
    &gm_constant_broadcast_family,
    NULL,
};

const gm_lesson gm_lesson_stencil = {"stencil", families, NULL, NULL};
