/* matmul.c -- the matmul lesson's entry point: C = A @ B, from naive through
 * shared-memory tiles to double buffering, thread coarsening, register tiles and
 * the tensor cores. */
#include "gm.h"

#include <stdint.h>

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
    GM_ROW(matmul, "prefetch", GM_MATMUL_PREFETCH,
           "double buffering: the next tiles are loaded into registers while this tile's inner "
           "product runs, then stored to the other shared buffer; one barrier per tile, not two",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_ROW(matmul, "coarsened", GM_MATMUL_COARSENED,
           "thread coarsening: each thread computes 4 outputs of a column of a 32 x 32 tile, so "
           "each B value read from shared memory serves 4 FMAs from a register",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_ROW(matmul, "register_tiled", GM_MATMUL_REGISTER_TILED,
           "2-D register blocking: each thread keeps a 4 x 4 block of C in registers and does "
           "an outer product per k (8 shared loads per 16 FMAs); 64 x 64 tiles, A transposed "
           "in shared memory, float4 loads and stores",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_ROW(matmul, "warptiled", GM_MATMUL_WARPTILED,
           "block, warp and thread tiles: 128 x 128 tiles of C per 8 warps, 64 x 32 per warp, "
           "8 x 8 per thread (tile=64: 64 x 64 per 4 warps, 4 x 8 per thread); shared memory "
           "double buffered, B's next tile copied by cp.async (global to shared, no registers) "
           "and A's held in registers while this tile's product runs; one barrier per tile",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_ROW(matmul, "mma", GM_MATMUL_MMA,
           "tensor cores: mma.sync m16n8k8 with TF32 inputs (rounded from float32) and float32 "
           "sums, 128 x 128 tiles of C per 4 warps, 64 x 64 per warp; a 3-stage cp.async "
           "pipeline keeps two k slices of 32 in flight, and a swizzled shared layout makes "
           "the fragment loads conflict-free; compute capability 8.0 or newer",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_ROW(matmul, "wgmma", GM_MATMUL_WGMMA,
           "Hopper's tensor cores: wgmma.mma_async m64n256k8 with TF32 inputs and float32 sums "
           "per warpgroup, 256 x 128 tiles of C per 2 warpgroups; the tiles copied by TMA "
           "(cp.async.bulk.tensor, 128-byte swizzle) into a 4-stage ring on mbarriers, A read "
           "by the tensor cores through a shared-memory descriptor, B^T from registers (C's "
           "transpose is computed: TF32 wgmma reads only K-major shared operands); compute "
           "capability 9.0 (sm_90a) only",
           MATMUL_BYTES, MATMUL_FLOPS),
    GM_END_ROWS,
};

enum { A, B, TILE, VARIANT, SPLITS, N_ARGS,
       FULL = N_ARGS + 1,  /* c->v[FULL]: no argument, prepare()'s whole tiles (split tail) */
       PAD = N_ARGS + 2 }; /* c->v[PAD]: mma and wgmma's padded copies (gm_matmul_params.pad) */
static const long long tiles[] = {8, 16, 32, 64, 128, 0};

/* The tiles each variant takes (its default first): the edge of the C tile a
 * block computes. */
static const struct {
    int variant;
    long long tiles[4];
    const char *allowed;
} variant_tiles[] = {
    {GM_MATMUL_NAIVE, {16, 8, 32, 0}, "8, 16 or 32"},
    {GM_MATMUL_TILED, {16, 8, 32, 0}, "8, 16 or 32"},
    {GM_MATMUL_PREFETCH, {16, 32, 0}, "16 or 32"},
    {GM_MATMUL_COARSENED, {GM_MATMUL_COARSENED_TILE, 0}, "32 only (blocks of 32 x 8 threads)"},
    {GM_MATMUL_REGISTER_TILED, {GM_MATMUL_REGISTER_TILED_TILE, 0},
     "64 only (blocks of 16 x 16 threads)"},
    {GM_MATMUL_WARPTILED, {GM_MATMUL_WARPTILED_TILE, 64, 0},
     "128 (8 warps, the default) or 64 (4 warps)"},
    {GM_MATMUL_MMA, {GM_MATMUL_MMA_TILE, 0}, "128 only (4 warps of 64 x 64)"},
    {GM_MATMUL_WGMMA, {GM_MATMUL_WGMMA_TILE, 0},
     "128 only (C tiles of 256 rows x 128 columns, 2 warpgroups)"},
};

static int pick_tile(gm_call *c)
{
    for (size_t i = 0; i < sizeof variant_tiles / sizeof variant_tiles[0]; i++) {
        if (variant_tiles[i].variant != c->variant->select)
            continue;
        if (!c->given[TILE]) {
            c->v[TILE] = variant_tiles[i].tiles[0];
            return 0;
        }
        for (int j = 0; variant_tiles[i].tiles[j]; j++)
            if (variant_tiles[i].tiles[j] == c->v[TILE])
                return 0;
        PyErr_Format(PyExc_ValueError,
                     "matmul: tile=%lld is not allowed with variant='%s'; tile must be %s",
                     c->v[TILE], c->variant->name, variant_tiles[i].allowed);
        return -1;
    }
    return 0;
}
static const gm_arg args[] = {
    [A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 2},
    [B] = {"b", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 2},
    [TILE] = {"tile", GM_INT, GM_SELECTS | GM_RECORD | GM_NO_DEFAULT, .def = 16, .allowed = tiles},
    [VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "tiled"},
    [SPLITS] = {"splits", GM_INT, GM_NO_DEFAULT, 1, 1, GM_MATMUL_SPLITS_MAX,
                .what = " (K slices per tile of the last wave; warptiled only)"},
    [N_ARGS] = {NULL},
};

static int check(gm_call *c)
{
    char sa[128], sb[128];
    const npy_intp *a = c->op[A].shape, *b = c->op[B].shape;
    if (pick_tile(c) < 0)
        return -1;
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
    if (c->given[SPLITS] && c->v[SPLITS] != 1 && c->variant->select != GM_MATMUL_WARPTILED) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: splits=%lld is not allowed with variant='%s'; only 'warptiled' "
                     "splits its last wave's tiles along K (leave splits out, or pass 1)",
                     c->v[SPLITS], c->variant->name);
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
    const int split = c->v[SPLITS] > 1 && c->tmp != NULL;
    /* c->tmp: the split tail's slices (warptiled) or the padded copies (mma, wgmma), if any */
    *p = (gm_matmul_params){c->variant->select, gm_in(c, A), gm_in(c, B), gm_res(c),
                            (int)c->out_shape[0], (int)c->out_shape[1], (int)gm_dim(c, A, 1),
                            (int)c->v[TILE], split ? (int)c->v[SPLITS] : 1,
                            split ? (int)c->v[FULL] : 0, gm_tmp(c), (int)c->v[PAD]};
}

/* warptiled's split tail.  A launch runs in waves of slots = SMs x resident blocks per SM;
 * when tiles % slots, the last wave, is at most half of one, its tiles are each cut into
 * `splits` slices along K (by default as many as fill the slots, at most 16, each slice at
 * least 16 k tiles of 16): that wave then takes about 1/splits of a whole tile's time.
 * Returns the splits (1: none) and sets *full, the tiles computed whole. */
static long long tail_splits(long long tiles, long long ktiles, long long slots, long long given,
                             long long *full)
{
    const long long tail = slots > 0 ? tiles % slots : 0;
    long long s = given;
    if (s == 0) { /* not given: the rule above */
        s = tail > 0 && 2 * tail <= slots ? slots / tail : 1;
        if (s > 16)
            s = 16;
        if (s > ktiles / 16)
            s = ktiles / 16;
    }
    if (s < 2 || tail == 0 || ktiles < 2) {
        *full = tiles;
        return 1;
    }
    if (s > ktiles)
        s = ktiles; /* every slice at least one k tile */
    *full = tiles - tail;
    return s;
}

/* mma, wgmma and warptiled read whole 16-byte chunks of the operands' rows (cp.async of 16
 * bytes, float4 loads; the tensor maps of wgmma): rows must start on the 16-byte grid.  An
 * operand whose rows do not (K or N not a multiple of 4, or a base off the grid, as in a
 * view) is copied first into c->tmp with its rows padded to a multiple of 4 (`which`: bit 0
 * A, bit 1 B).  Returns the floats of those copies and sets c->v[PAD]. */
static long long row_pads(gm_call *c, int which)
{
    const long long M = c->out_shape[0], N = c->out_shape[1], K = gm_dim(c, A, 1);
    const int pad_a = (which & 1) && (K % 4 != 0 || ((uintptr_t)gm_in(c, A) & 15) != 0);
    const int pad_b = (which & 2) && (N % 4 != 0 || ((uintptr_t)gm_in(c, B) & 15) != 0);
    if (c->work == 0 || K == 0)
        return 0;
    c->v[PAD] = pad_a | pad_b << 1;
    /* B's copy starts on a 256-byte boundary (cuda/matmul.cu, pad_rows) */
    return (pad_a ? (M * ((K + 3) / 4 * 4) + 63) / 64 * 64 : 0) +
           (pad_b ? K * ((N + 3) / 4 * 4) : 0);
}

static int pad_tmp(gm_call *c, long long floats)
{
    return floats > 0 ? gm_new_tmp(c, (npy_intp)floats, NPY_FLOAT32) : 0;
}

/* mma's instructions (mma.sync with TF32, cp.async) need compute capability 8.0, wgmma's
 * (sm_90a) 9.0 exactly (Blackwell has other tensor-core instructions): an other GPU is
 * refused here, before the launch, naming both capabilities; then their padded rows
 * (above).  warptiled: the split tail (above) and the padded rows, in c->tmp in that
 * order. */
static int prepare(gm_call *c)
{
    c->v[FULL] = 0;
    c->v[PAD] = 0;
    if (c->variant->select == GM_MATMUL_MMA)
        return gm_need_cc("matmul", "variant='mma'", 8, 0,
                          "mma.sync with TF32 and cp.async: sm_80") < 0
                   ? -1
                   : pad_tmp(c, row_pads(c, 3));
    if (c->variant->select == GM_MATMUL_WGMMA)
        return gm_need_cc_exactly("matmul", "variant='wgmma'", 9, 0,
                                  "wgmma.mma_async and the tensor copy: sm_90a") < 0
                   ? -1
                   : pad_tmp(c, row_pads(c, 3));
    if (c->variant->select != GM_MATMUL_WARPTILED) {
        c->v[SPLITS] = 1;
        return 0;
    }
    const long long M = c->out_shape[0], N = c->out_shape[1], K = gm_dim(c, A, 1);
    const long long t = c->v[TILE], tiles = ((M + t - 1) / t) * ((N + t - 1) / t);
    const long long padded = row_pads(c, 3);
    const long long given = c->given[SPLITS] ? c->v[SPLITS] : 0; /* 0: the rule decides */
    long long slots = 0;
    if (given != 1) {
        int dev = 0, sms = 0, per_sm = 0;
        gm_matmul_params p;
        c->v[SPLITS] = 1; /* fill() for the kernel only: no split buffer yet */
        fill(c, &p);
        GM_CUDA(cudaGetDevice(&dev));
        GM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        GM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, c->variant->kernel(&p), t == 64 ? 128 : 256, 0));
        slots = (long long)sms * (per_sm > 0 ? per_sm : 1);
    }
    long long full = tiles;
    const long long s = tail_splits(tiles, (K + 15) / 16, slots, given, &full);
    c->v[SPLITS] = s;
    if (gm_record(c, "splits", s) < 0)
        return -1;
    if (s > 1)
        c->v[FULL] = full;
    return pad_tmp(c, padded + (s > 1 ? (tiles - full) * s * t * t : 0));
fail:
    return -1;
}

static const gm_family gm_matmul_family = {
    "matmul",
    "C = a @ b for float32 matrices (M x K @ K x N), a tile x tile block of C per thread "
    "block; variant 'naive', 'tiled' (shared-memory tiles of A and B), 'prefetch' (double "
    "buffered), 'coarsened' (4 outputs of a column per thread, 32 x 32 tiles) or "
    "'register_tiled' (a 4 x 4 block of C per thread, 64 x 64 tiles), 'warptiled' "
    "(block, warp and thread tiles, cp.async double buffering; tile 128 or 64) or 'mma' "
    "(tensor cores: mma.sync with TF32 inputs and float32 sums, a 3-stage cp.async "
    "pipeline, swizzled shared memory; tile 128; compute capability 8.0 or newer) or "
    "'wgmma' (Hopper: wgmma.mma_async with TF32 inputs fed by TMA on mbarriers; 256 x 128 "
    "tiles of C; compute capability 9.0).",
    args, 1, 0, variants, check, prepare, fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_matmul_family,
    NULL,
};

const gm_lesson gm_lesson_matmul = {"matmul", families, NULL, NULL};
