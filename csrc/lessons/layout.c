/* layout.c -- the layout lesson's entry points (cuda/layout.cu):
 * strided_read, struct_update and distance (AoS vs SoA). */
#include "gm.h"

GM_THUNKS(strided_read)
GM_THUNKS(struct_update)
GM_THUNKS(distance)

#define BLOCK {"block", GM_INT, GM_RECORD, 512, 1, 1024, .what = " threads"}

/* ---- strided_read ------------------------------------------------------------ */
static const gm_variant strided_read_variants[] = {
    GM_ROW(strided_read, "default", 0,
           "C[i] = A[i*stride]: the coalescing cliff, from 4 sectors per warp (stride 1) to 32 "
           "(stride >= 8, 12.5% efficiency)",
           "8*ceil(n/stride)", "0"),
    GM_END_ROWS,
};

enum { SR_A, SR_STRIDE, SR_BLOCK };
static const gm_arg strided_read_args[] = {
    [SR_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [SR_STRIDE] = {"stride", GM_INT, GM_RECORD, 1, 1, 64, .what = " floats"},
    [SR_BLOCK] = BLOCK,
    {NULL},
};

static int strided_read_check(gm_call *c)
{
    const long long n = c->op[SR_A].shape[0], m = (n + c->v[SR_STRIDE] - 1) / c->v[SR_STRIDE];
    if (gm_check_grid(c, m, c->v[SR_BLOCK], c->v[SR_BLOCK]) < 0)
        return -1;
    npy_intp shape[1] = {(npy_intp)m};
    gm_result(c, 1, shape, NPY_FLOAT32);
    c->work = m;
    c->bytes = 8.0 * (double)m;
    return gm_record(c, "n", n);
}

static void strided_read_fill(const gm_call *c, void *params)
{
    *(gm_strided_read_params *)params = (gm_strided_read_params){
        gm_in(c, SR_A), gm_res(c), gm_dim(c, SR_A, 0), (int)c->v[SR_STRIDE], (int)c->v[SR_BLOCK]};
}

static const gm_family gm_strided_read_family = {
    "strided_read",
    "The coalescing cliff: C[i] = a[i * stride], the same as a[::stride].",
    strided_read_args, 1, 0, strided_read_variants, strided_read_check, NULL, strided_read_fill,
};

/* ---- struct_update and distance: AoS vs SoA -------------------------------------- */
static const gm_variant struct_update_variants[] = {
    GM_ROW(struct_update, "aos", GM_LAYOUT_AOS,
           "array of structs {float x, y}: two 4-byte loads per element, each warp request spans "
           "256 bytes for 128 used (50%)",
           "16*n", "2*n"),
    GM_ROW(struct_update, "soa", GM_LAYOUT_SOA,
           "struct of arrays: x's then y's, every request a dense 128-byte run (100%)", "16*n",
           "2*n"),
    GM_END_ROWS,
};

static const gm_variant distance_variants[] = {
    GM_ROW(distance, "aos", GM_LAYOUT_AOS,
           "points {float x, y, z}: three 4-byte loads 12 bytes apart per lane (a third of each "
           "request used)",
           "16*n", "5*n"),
    GM_ROW(distance, "soa", GM_LAYOUT_SOA,
           "x's, y's, z's in three arrays: three dense loads (100%)", "16*n", "5*n"),
    GM_END_ROWS,
};

enum { LY_DATA, LY_LAYOUT, LY_BLOCK };
#define LAYOUT_ARGS(data)                                                              \
    {                                                                                  \
        [LY_DATA] = {data, GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},                     \
        [LY_LAYOUT] = {"layout", GM_VARIANT, 0, .sdef = "aos",                         \
                       .what = " (array of structs, struct of arrays)"},               \
        [LY_BLOCK] = BLOCK, {NULL},                                                    \
    }
static const gm_arg struct_update_args[] = LAYOUT_ARGS("data");
static const gm_arg distance_args[] = LAYOUT_ARGS("points");

/* data is (n, fields) for aos and (fields, n) for soa. */
static int layout_check(gm_call *c)
{
    const int is_distance = c->f->variants == distance_variants;
    const int soa = c->variant->select == GM_LAYOUT_SOA, fields = is_distance ? 3 : 2;
    const gm_operand *op = &c->op[LY_DATA];
    char s[128];
    if (op->ndim != 2 || op->shape[soa ? 0 : 1] != fields) {
        PyErr_Format(PyExc_ValueError, "%s: %s has shape %s; layout='%s' takes shape %s (%s)",
                     c->f->name, c->f->args[LY_DATA].name,
                     gm_shape_str(op->ndim, op->shape, s, sizeof s), c->variant->name,
                     soa ? (fields == 2 ? "(2, n)" : "(3, n)") : (fields == 2 ? "(n, 2)" : "(n, 3)"),
                     soa ? (fields == 2 ? "rows x, y" : "rows x, y, z")
                         : (fields == 2 ? "n structs {x, y}" : "n points {x, y, z}"));
        return -1;
    }
    const long long n = op->shape[soa ? 1 : 0];
    if (gm_check_grid(c, n, c->v[LY_BLOCK], c->v[LY_BLOCK]) < 0)
        return -1;
    npy_intp d_shape[1] = {(npy_intp)n};
    if (is_distance)
        gm_result(c, 1, d_shape, NPY_FLOAT32);
    else
        gm_result(c, op->ndim, op->shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 16.0 * (double)n;
    c->flops = (is_distance ? 5.0 : 2.0) * (double)n;
    return gm_record(c, "n", n);
}

static void struct_update_fill(const gm_call *c, void *params)
{
    *(gm_struct_update_params *)params = (gm_struct_update_params){
        c->variant->select, gm_in(c, LY_DATA), gm_res(c), c->work, (int)c->v[LY_BLOCK]};
}

static void distance_fill(const gm_call *c, void *params)
{
    *(gm_distance_params *)params = (gm_distance_params){
        c->variant->select, gm_in(c, LY_DATA), gm_res(c), c->work, (int)c->v[LY_BLOCK]};
}

static const gm_family gm_struct_update_family = {
    "struct_update",
    "AoS vs SoA: x + 10 and y + 20 for n pairs {x, y}, data of shape (n, 2) (aos) or (2, n) "
    "(soa).",
    struct_update_args, 1, 0, struct_update_variants, layout_check, NULL, struct_update_fill,
};

static const gm_family gm_distance_family = {
    "distance",
    "Distance of n points to the origin, sqrt(x*x + y*y + z*z); points of shape (n, 3) (aos) "
    "or (3, n) (soa).",
    distance_args, 1, 0, distance_variants, layout_check, NULL, distance_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_strided_read_family,
    &gm_struct_update_family,
    &gm_distance_family,
    NULL,
};

const gm_lesson gm_lesson_layout = {"layout", families, NULL, NULL};
