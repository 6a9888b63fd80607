/* transpose.c -- the transpose lesson's entry points (cuda/transpose.cu): the
 * matrix transpose from naive to shared-memory tiles (plain, padded,
 * swizzled, coarsened), and the bank-conflict stride sweep's kernel. */
#include "gm.h"

GM_THUNKS(transpose)
GM_THUNKS(shared_stride)

/* ---- transpose ------------------------------------------------------------------ */
#define TRANSPOSE_BYTES "8*M*N"

static const gm_variant transpose_variants[] = {
    GM_ROW(transpose, "naive_row", GM_TRANSPOSE_NAIVE_ROW,
           "a warp reads 32 consecutive floats of a row (coalesced) and writes them down a "
           "column of out, 4*M bytes apart: 32 sectors per store",
           TRANSPOSE_BYTES, "0"),
    GM_ROW(transpose, "naive_col", GM_TRANSPOSE_NAIVE_COL,
           "a warp reads down a column of a (32 sectors per load) and writes a row of out "
           "(coalesced): the strided side moved to the loads",
           TRANSPOSE_BYTES, "0"),
    GM_ROW(transpose, "shared", GM_TRANSPOSE_SHARED,
           "a 32 x 32 tile through __shared__ float tile[32][32]: both global sides coalesced, "
           "but a column of the tile is one bank -- 32-way conflicts on the read",
           TRANSPOSE_BYTES, "0"),
    GM_ROW(transpose, "padded", GM_TRANSPOSE_PADDED,
           "tile[32][33]: one word of padding per row spreads a column over all 32 banks, no "
           "conflicts",
           TRANSPOSE_BYTES, "0"),
    GM_ROW(transpose, "swizzled", GM_TRANSPOSE_SWIZZLED,
           "tile[r][c ^ r]: an XOR-swizzled column index, no conflicts and no padding",
           TRANSPOSE_BYTES, "0"),
    GM_ROW(transpose, "coarsened", GM_TRANSPOSE_COARSENED,
           "64 x 64 swizzled tiles moved with float4 loads and stores by 512 threads (M, N "
           "multiples of 4; else 32 x 32 padded tiles, 8 elements per thread): more bytes in "
           "flight per thread",
           TRANSPOSE_BYTES, "0"),
    GM_END_ROWS,
};

enum { TR_A, TR_VARIANT };
static const gm_arg transpose_args[] = {
    [TR_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 2},
    [TR_VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "coarsened"},
    {NULL},
};

static int transpose_check(gm_call *c)
{
    const npy_intp *a = c->op[TR_A].shape;
    const long long M = a[0], N = a[1];
    if (M > 65535LL * GM_TRANSPOSE_TILE || N > 0x7fffffffLL - 64) {
        char sa[128];
        PyErr_Format(PyExc_ValueError,
                     "transpose: a is %s, too large for one launch (at most %lld rows and "
                     "2^31 - 65 columns)",
                     gm_shape_str(2, a, sa, sizeof sa), 65535LL * GM_TRANSPOSE_TILE);
        return -1;
    }
    npy_intp shape[2] = {(npy_intp)N, (npy_intp)M};
    gm_result(c, 2, shape, NPY_FLOAT32);
    c->work = M * N;
    c->bytes = 8.0 * (double)M * (double)N;
    c->flops = 0.0;
    return gm_record(c, "m", M) < 0 || gm_record(c, "n", N) < 0 ? -1 : 0;
}

static void transpose_fill(const gm_call *c, void *params)
{
    *(gm_transpose_params *)params = (gm_transpose_params){
        c->variant->select, gm_in(c, TR_A), gm_res(c), (int)gm_dim(c, TR_A, 0),
        (int)gm_dim(c, TR_A, 1)};
}

static const gm_family gm_transpose_family = {
    "transpose",
    "out = a.T for a float32 matrix a (M x N): out is N x M, C-contiguous.  variant: "
    "'naive_row', 'naive_col', 'shared', 'padded', 'swizzled' or 'coarsened'.",
    transpose_args, 1, 0, transpose_variants, transpose_check, NULL, transpose_fill,
};

/* ---- shared_stride ---------------------------------------------------------------- */
#define STRIDE_BYTES "1024*blocks"

static const gm_variant stride_variants[] = {
    GM_ROW(shared_stride, "float", GM_SHARED_FLOAT,
           "4-byte words: lane l reads word l*stride; a stride with a factor 2^k puts 2^k lanes "
           "on one bank (32-way at stride 32), any odd stride is conflict-free",
           STRIDE_BYTES, "256*blocks*iters"),
    GM_ROW(shared_stride, "float2", GM_SHARED_FLOAT2,
           "8-byte words: served half a warp per wavefront at best (2 per warp); stride 1 is "
           "conflict-free, even strides conflict",
           STRIDE_BYTES, "2*256*blocks*iters"),
    GM_ROW(shared_stride, "float4", GM_SHARED_FLOAT4,
           "16-byte words: a quarter warp per wavefront at best (4 per warp); every odd stride "
           "is conflict-free",
           STRIDE_BYTES, "4*256*blocks*iters"),
    GM_END_ROWS,
};

enum { SS_STRIDE, SS_WORD, SS_ITERS, SS_BLOCKS };
static const gm_arg stride_args[] = {
    [SS_STRIDE] = {"stride", GM_INT, GM_POSITIONAL | GM_RECORD, 1, 1, 32, .what = " elements"},
    [SS_WORD] = {"word", GM_VARIANT, GM_RECORD, .sdef = "float"},
    [SS_ITERS] = {"iters", GM_INT, GM_RECORD, 256, 1, 65536},
    [SS_BLOCKS] = {"blocks", GM_INT, GM_RECORD, 1024, 1, 1 << 20},
    {NULL},
};

static int stride_check(gm_call *c)
{
    const long long n = c->v[SS_BLOCKS] * GM_SHARED_STRIDE_BLOCK;
    npy_intp shape[1] = {(npy_intp)n};
    gm_result(c, 1, shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 4.0 * (double)n;
    c->flops = (double)n * (double)c->v[SS_ITERS] * (double)(1 << c->variant->select);
    return 0;
}

static void stride_fill(const gm_call *c, void *params)
{
    *(gm_shared_stride_params *)params = (gm_shared_stride_params){
        c->variant->select, gm_res(c), (int)c->v[SS_STRIDE], (int)c->v[SS_ITERS],
        (int)c->v[SS_BLOCKS]};
}

static const gm_family gm_shared_stride_family = {
    "shared_stride",
    "Shared-memory bank conflicts by stride: lane l of every warp reads element "
    "(l*stride + 32*i) mod N of a 16 KiB shared array of `word` elements, i = 0..iters-1; "
    "returns each thread's sum (blocks x 256 float32).",
    stride_args, 1, 0, stride_variants, stride_check, NULL, stride_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_transpose_family,
    &gm_shared_stride_family,
    NULL,
};

const gm_lesson gm_lesson_transpose = {"transpose", families, NULL, NULL};
