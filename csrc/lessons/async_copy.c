/* async_copy.c -- the async_copy lesson's entry points (cuda/async_copy.cu):
 * a tile from global into shared memory four ways (through registers,
 * cp.async, the bulk copy engine in 1-D and with a tensor map), in a streaming
 * tiled copy and a tiled transpose.
 *   tile_copy       out = a     (float32, m x n)
 *   tile_transpose  out = a.T
 * Before anything is launched, prepare() refuses a GPU below the variant's
 * compute capability (CudaError naming it: 8.0 for cp.async, 9.0 for the bulk
 * copy engine) and an `a` whose data is not 16-byte aligned where the variant
 * needs it (ValueError naming a); check() refuses rows that are not whole
 * 16-byte chunks (n % 4 != 0) for cp_async16 and bulk. */
#include "gm.h"

GM_THUNKS(tile_copy)
GM_THUNKS(tile_transpose)

/* The compute capability (major) variant `select` needs. */
static int cc_needed(int select)
{
    return select >= GM_ASYNC_BULK ? GM_ASYNC_CC_BULK
           : select == GM_ASYNC_CP4 || select == GM_ASYNC_CP16 ? GM_ASYNC_CC_ASYNC
                                                               : 0;
}

/* CudaError unless the GPU has the compute capability the variant needs. */
static int need_cc(const gm_call *c)
{
    const int need = cc_needed(c->variant->select);
    char what[96];
    if (need == 0)
        return 0;
    snprintf(what, sizeof what, "variant='%s'", c->variant->name);
    return gm_need_cc(c->f->name, what, need, 0,
                      need == GM_ASYNC_CC_BULK ? "the bulk copy engine, TMA: sm_90, Hopper"
                                               : "cp.async: sm_80, Ampere");
}

#define ASYNC_BYTES "8*M*N"

/* One table for both families: the same ways to fill a tile. */
#define ASYNC_ROWS(f, what)                                                                    \
    GM_ROW(f, "ldg_sts", GM_ASYNC_LDG_STS,                                                     \
           "every thread loads 4 floats into registers (LDG), then stores them into the tile " \
           "(STS): the data passes through the register file; " what,                         \
           ASYNC_BYTES, "0"),                                                                  \
    GM_ROW(f, "cp_async4", GM_ASYNC_CP4,                                                       \
           "cp.async of 4 bytes per element (LDGSTS, compute capability 8.0+): global to "     \
           "shared without registers, 3 tiles in flight through commit/wait groups; " what,    \
           ASYNC_BYTES, "0"),                                                                  \
    GM_ROW(f, "cp_async16", GM_ASYNC_CP16,                                                     \
           "cp.async of 16 bytes per thread (.cg, compute capability 8.0+; N a multiple of "   \
           "4): a quarter of the copy instructions; " what,                                    \
           ASYNC_BYTES, "0"),                                                                  \
    GM_ROW(f, "bulk", GM_ASYNC_BULK,                                                           \
           "the bulk copy engine (TMA, compute capability 9.0+): one 1-D cp.async.bulk per "   \
           "tile row, completing on an mbarrier (N a multiple of 4); " what,                   \
           ASYNC_BYTES, "0"),                                                                  \
    GM_ROW(f, "tensor", GM_ASYNC_TENSOR,                                                       \
           "cp.async.bulk.tensor.2d with a CUtensorMap (compute capability 9.0+): one thread " \
           "issues a whole 32 x 32 tile, any N (rows viewed in pairs or fours when N is not "  \
           "a multiple of 4); no swizzle; " what,                                              \
           ASYNC_BYTES, "0"),                                                                  \
    GM_ROW(f, "tensor_swizzle128", GM_ASYNC_TENSOR_SW128,                                      \
           "the tensor copy with the 128-byte swizzle (compute capability 9.0+; chunk j of "   \
           "row r at j ^ (r % 8)): a column of 16-byte chunks spans all 32 banks; " what,                               \
           ASYNC_BYTES, "0"),                                                                  \
    GM_END_ROWS

static const gm_variant copy_variants[] = {
    ASYNC_ROWS(tile_copy, "then the tile's rows are stored to out"),
};
static const gm_variant transpose_variants[] = {
    ASYNC_ROWS(tile_transpose, "then warp w reads 16-byte chunk w of every tile row and stores "
                               "4 rows of out"),
};

static const long long tiles_allowed[] = {1, 2, 4, 8, 16, 32, 64, 0};

enum { AC_A, AC_VARIANT, AC_TILES };
/* The families differ in their default run: the copy's 8 tiles; the transpose's by the
 * shape (None: transpose_check sets GM_ASYNC_TRANSPOSE_DEFAULT(M)). */
#define ASYNC_ARGS(tiles_flags, tiles_default)                                               \
    {                                                                                        \
        [AC_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 2},                    \
        [AC_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "tensor_swizzle128"},      \
        [AC_TILES] = {"tiles", GM_INT, GM_RECORD | (tiles_flags), tiles_default, 1, 64,      \
                      .allowed = tiles_allowed, .what = " (tiles per block, along a tile row)"}, \
        {NULL},                                                                              \
    }
static const gm_arg copy_args[] = ASYNC_ARGS(0, GM_ASYNC_TILES_PER_BLOCK);
static const gm_arg transpose_args[] = ASYNC_ARGS(GM_NO_DEFAULT, 0);

/* rows: the copy's grid has one block row per tile row, at most 65535 (the
 * transpose's grid is one row of blocks: the limit is the copy's, kept for both) */
#define ASYNC_MAX_ROWS (65535LL * GM_ASYNC_TILE)
#define ASYNC_MAX_COLS (1LL << 29)              /* the tensor map's column coordinates: int */

/* Shape rules of both families (transposed: out is n x m). */
static int async_check(gm_call *c, int transposed)
{
    const npy_intp *a = c->op[AC_A].shape;
    const long long M = a[0], N = a[1];
    const int sel = c->variant->select;
    char sa[128];
    if (M > ASYNC_MAX_ROWS || N > ASYNC_MAX_COLS) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a is %s, too large for one launch (at most %lld rows and %lld "
                     "columns)",
                     c->f->name, gm_shape_str(2, a, sa, sizeof sa), ASYNC_MAX_ROWS,
                     ASYNC_MAX_COLS);
        return -1;
    }
    if ((sel == GM_ASYNC_CP16 || sel == GM_ASYNC_BULK) && N % 4) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a is %s; variant='%s' copies whole 16-byte chunks of a row, so a's "
                     "rows must be multiples of 16 bytes (N a multiple of 4); 'cp_async4', "
                     "'ldg_sts' and the tensor variants take any N",
                     c->f->name, gm_shape_str(2, a, sa, sizeof sa), c->variant->name);
        return -1;
    }
    npy_intp shape[2] = {(npy_intp)(transposed ? N : M), (npy_intp)(transposed ? M : N)};
    gm_result(c, 2, shape, NPY_FLOAT32);
    c->work = M * N;
    c->bytes = 8.0 * (double)M * (double)N;
    c->flops = 0.0;
    return gm_record(c, "m", M) < 0 || gm_record(c, "n", N) < 0 ? -1 : 0;
}

static int copy_check(gm_call *c) { return async_check(c, 0); }
static int transpose_check(gm_call *c)
{
    if (!c->given[AC_TILES]) /* 2, or 8 where out's rows are off the 32-byte grid */
        c->v[AC_TILES] = GM_ASYNC_TRANSPOSE_DEFAULT(c->op[AC_A].shape[0]);
    return async_check(c, 1);
}

/* Before the launch: the GPU's compute capability; a's data 16-byte aligned for
 * the variants whose copies need it (cp_async16, bulk: every row; the tensor
 * map: its base address). */
static int async_prepare(gm_call *c)
{
    const int sel = c->variant->select;
    if (need_cc(c) < 0)
        return -1;
    if (sel >= GM_ASYNC_CP16 && ((size_t)gm_in(c, AC_A) & 15)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a's data at %p is not 16-byte aligned; variant='%s' needs it (the "
                     "copy engine and 16-byte cp.async read whole 16-byte chunks); pass an "
                     "array gpumem allocated, or variant='ldg_sts' or 'cp_async4'",
                     c->f->name, gm_in(c, AC_A), c->variant->name);
        return -1;
    }
    return 0;
}

static void copy_fill(const gm_call *c, void *params)
{
    *(gm_tile_copy_params *)params = (gm_tile_copy_params){
        c->variant->select, gm_in(c, AC_A), gm_res(c), (int)gm_dim(c, AC_A, 0),
        (int)gm_dim(c, AC_A, 1), (int)c->v[AC_TILES]};
}

static void transpose_fill(const gm_call *c, void *params)
{
    *(gm_tile_transpose_params *)params = (gm_tile_transpose_params){
        c->variant->select, gm_in(c, AC_A), gm_res(c), (int)gm_dim(c, AC_A, 0),
        (int)gm_dim(c, AC_A, 1), (int)c->v[AC_TILES]};
}

static const gm_family gm_tile_copy_family = {
    "tile_copy",
    "out = a for a float32 matrix a (M x N), through 32 x 32 tiles in shared memory, up to 4 "
    "tile buffers per block, `tiles` tiles per block along a tile row: the variant says how a "
    "tile gets into shared memory ('ldg_sts', 'cp_async4', 'cp_async16', 'bulk', 'tensor', "
    "'tensor_swizzle128').",
    copy_args, 1, 0, copy_variants, copy_check, async_prepare, copy_fill,
};

static const gm_family gm_tile_transpose_family = {
    "tile_transpose",
    "out = a.T for a float32 matrix a (M x N): out is N x M.  Tiles as tile_copy's (2 per "
    "block by default), the blocks numbered down a column of runs first; each warp reads a "
    "column of 16-byte chunks of the tile and stores four rows of out.",
    transpose_args, 1, 0, transpose_variants, transpose_check, async_prepare, transpose_fill,
};

/* ---- the lesson ----------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_tile_copy_family,
    &gm_tile_transpose_family,
    NULL,
};

const gm_lesson gm_lesson_async_copy = {"async_copy", families, NULL, NULL};
