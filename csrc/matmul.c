/* matmul.c -- the matmul lesson's entry point: C = A @ B, naive or tiled. */
#include "gm.h"

GM_THUNKS(matmul)

#define MATMUL_BYTES "4*(M*K + K*N + M*N)"
#define MATMUL_FLOPS "2*M*N*K"

static const gm_variant variants[] = {
    GM_ROW(matmul, "naive", GM_MATMUL_NAIVE,
           "each thread reads a row of A and a column of B from global memory: 2K loads for 2K "
           "FLOPs",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_ROW(matmul, "tiled", GM_MATMUL_TILED,
           "TILE x TILE tiles of A and B staged in shared memory: global loads fall by the tile "
           "width",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_END_ROWS,
};

enum { A, B, TILE, VARIANT };
static const long long tiles[] = {8, 16, 32, 0};
static const gm_arg args[] = {
    [A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 2},
    [B] = {"b", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 2},
    [TILE] = {"tile", GM_INT, GM_SELECTS | GM_RECORD, .def = 16, .allowed = tiles},
    [VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "tiled"},
    {NULL},
};

static int check(gm_call *c)
{
    char sa[128], sb[128];
    const npy_intp *a = c->op[A].shape, *b = c->op[B].shape;
    const long long M = a[0], K = a[1], N = b[1], tile = c->v[TILE];
    if (K != b[0]) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: inner dimensions differ: a is %s and b is %s (a.shape[1] must "
                     "equal b.shape[0])",
                     gm_shape_str(2, a, sa, sizeof sa), gm_shape_str(2, b, sb, sizeof sb));
        return -1;
    }
    if (M > 0x7fffffffLL || N > 0x7fffffffLL || K > 0x7fffffffLL || (M + tile - 1) / tile > 65535) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: a is %s and b is %s: too large for one launch with tile=%lld "
                     "(at most %lld rows)",
                     gm_shape_str(2, a, sa, sizeof sa), gm_shape_str(2, b, sb, sizeof sb), tile,
                     65535LL * tile);
        return -1;
    }
    npy_intp shape[2] = {(npy_intp)M, (npy_intp)N};
    gm_result(c, 2, shape, NPY_FLOAT32);
    c->work = M * N; /* K == 0 still launches: every element becomes 0 */
    c->bytes = 4.0 * ((double)M * K + (double)K * N + (double)M * N);
    c->flops = 2.0 * (double)M * N * K;
    return gm_record(c, "m", M) < 0 || gm_record(c, "n", N) < 0 || gm_record(c, "k", K) < 0 ? -1 : 0;
}

static void fill(const gm_call *c, void *params)
{
    gm_matmul_params *p = params;
    *p = (gm_matmul_params){c->variant->select, gm_in(c, A), gm_in(c, B), gm_res(c),
                            (int)c->out_shape[0], (int)c->out_shape[1], (int)gm_dim(c, A, 1),
                            (int)c->v[TILE]};
}

const gm_family gm_matmul_family = {
    "matmul",
    "C = a @ b for float32 matrices (M x K @ K x N) with blocks of tile x tile threads; "
    "variant 'naive' or 'tiled' (shared-memory tiles of A and B).",
    args, 1, 0, variants, check, NULL, fill,
};
