/* async_copy.h -- the C ABI of cuda/async_copy.cu (the async_copy lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these.
 *
 * Two streaming tiled kernels move a float32 matrix a (m x n, row-major)
 * through shared memory in tiles of GM_ASYNC_TILE x GM_ASYNC_TILE floats:
 *   tile_copy       out = a        (global -> shared -> global)
 *   tile_transpose  out = a.T      (global -> shared -> transposed -> global)
 * and differ only in how a tile gets from global into shared memory (the
 * variant).  Blocks of GM_ASYNC_THREADS threads each take a run of up to
 * `tiles` tiles along a tile row (default GM_ASYNC_TILES_PER_BLOCK for the copy,
 * GM_ASYNC_TRANSPOSE_TILES for the transpose), through a ring of up to
 * GM_ASYNC_STAGES tile buffers (later tiles load while the block stores earlier
 * ones).  tile_copy's grid is (runs along a tile row, tile rows); tile_transpose's
 * is one row of blocks numbered down the column of runs first, so that block b + 1
 * writes the 128 bytes of each out row just after block b's.
 *
 * cp_async4/cp_async16 need compute capability 8.0, bulk and the tensor
 * variants 9.0: for older architectures those kernels are built as a trap
 * that csrc's capability check never lets run. */
#ifndef GM_ASYNC_COPY_H
#define GM_ASYNC_COPY_H

#define GM_ASYNC_TILE 32            /* floats per tile side: a tile row is 128 bytes */
#define GM_ASYNC_THREADS 256        /* 8 warps */
#define GM_ASYNC_STAGES 4           /* tile buffers per block */
#define GM_ASYNC_TILES_PER_BLOCK 8  /* tiles per block along a tile row: tile_copy's default */
#define GM_ASYNC_TRANSPOSE_TILES 2  /* tile_transpose's default (H100: fastest at 8192^2) */
#define GM_ASYNC_TRANSPOSE_TILES_EXT 8 /* ... where it holds the ext rows (H100: at 8190^2) */
#define GM_ASYNC_TILE_BYTES (GM_ASYNC_TILE * GM_ASYNC_TILE * 4)
/* The transpose where out's rows are off the 32-byte grid (m % 8 != 0): out row o's
 * sectors start at columns (-o m) mod 8 + 8 j, and a block writes whole sectors of
 * it (tile_transpose_kernel): each tile also holds the GM_ASYNC_EXT tile rows below
 * it ("the ext rows"), in k slots of 1 KiB after the stage's 32 rows (slot j: the
 * rows of box j; k: GM_ASYNC_GROUP for the tensor variants, else 1). */
#define GM_ASYNC_EXT 8
#define GM_ASYNC_EXT_ROWS(m) ((m) % 8 != 0)
#define GM_ASYNC_TRANSPOSE_DEFAULT(m)                                                        \
    (GM_ASYNC_EXT_ROWS(m) ? GM_ASYNC_TRANSPOSE_TILES_EXT : GM_ASYNC_TRANSPOSE_TILES)
#define GM_ASYNC_STAGE_BYTES(ext, k) (GM_ASYNC_TILE_BYTES + ((ext) ? 1024 * (k) : 0))
/* a tail: 32 rows (40 with the ext rows) of 16 bytes, the words just right of a
 * run's last tile (the tensor variants where rows are viewed in pairs or fours:
 * see GM_ASYNC_GROUP); in shared memory each of its k boxes starts on a 128-byte
 * boundary: 1 KiB at most (4 boxes of 10 rows, 16 apart) */
#define GM_ASYNC_TAIL_BYTES(ext) (16 * (GM_ASYNC_TILE + ((ext) ? GM_ASYNC_EXT : 0)))
#define GM_ASYNC_TAIL_SMEM(ext) ((ext) ? 1024 : 512)
/* dynamic shared memory per block of a run of `tiles` tiles: the ring (a stage per
 * tile up to GM_ASYNC_STAGES), the tail, and 1024 bytes to align the ring to 1 KiB
 * (the 128-byte swizzle's period); the mbarriers are static */
#define GM_ASYNC_SMEM(tiles, ext, k)                                                         \
    (((tiles) < GM_ASYNC_STAGES ? (tiles) : GM_ASYNC_STAGES) * GM_ASYNC_STAGE_BYTES(ext, k) + \
     GM_ASYNC_TAIL_SMEM(ext) + 1024)
#define GM_ASYNC_CC_ASYNC 8         /* cp.async: compute capability 8.0 */
#define GM_ASYNC_CC_BULK 9          /* the bulk copy engine (TMA): 9.0 */

typedef enum {
    GM_ASYNC_LDG_STS = 0,   /* ld.global into registers, st.shared (LDG + STS) */
    GM_ASYNC_CP4 = 1,       /* cp.async.ca 4 bytes per thread and element (LDGSTS) */
    GM_ASYNC_CP16 = 2,      /* cp.async.cg 16 bytes per thread and copy (n % 4 == 0) */
    GM_ASYNC_BULK = 3,      /* cp.async.bulk: one 1-D copy per tile row (n % 4 == 0) */
    GM_ASYNC_TENSOR = 4,    /* cp.async.bulk.tensor.2d, a CUtensorMap, no swizzle */
    GM_ASYNC_TENSOR_SW128 = 5 /* the same with CU_TENSOR_MAP_SWIZZLE_128B */
} gm_async_variant;
#define GM_ASYNC_IS_TENSOR(v) ((v) == GM_ASYNC_TENSOR || (v) == GM_ASYNC_TENSOR_SW128)

/* Rows per tensor-map row: a CUtensorMap's row stride must be a multiple of
 * 16 bytes, so rows of n floats are viewed k at a time (4 k n bytes):
 * k = 1 when n % 4 == 0, 2 when n % 2 == 0, else 4.  The view has floor(m/k)
 * rows of k n floats; a tile's k boxes (32 / k view rows each) start at view
 * columns j n + c0, j < k.  The rows past k floor(m/k) (at most 3) are loaded
 * by the block's threads. */
#define GM_ASYNC_GROUP(n) ((n) % 4 == 0 ? 1 : (n) % 2 == 0 ? 2 : 4)

typedef struct {
    int variant;        /* gm_async_variant */
    const float *a;
    float *out;
    int m, n;           /* a is m x n */
    int tiles;          /* tiles per block (0: the default) */
} gm_tile_copy_params;
GM_FAMILY(tile_copy)

typedef struct {
    int variant;        /* gm_async_variant */
    const float *a;
    float *out;         /* n x m */
    int m, n;
    int tiles;          /* tiles per block (0: the default) */
} gm_tile_transpose_params;
GM_FAMILY(tile_transpose)

#endif /* GM_ASYNC_COPY_H */
