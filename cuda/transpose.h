/* transpose.h -- the C ABI of cuda/transpose.cu (the transpose lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_TRANSPOSE_H
#define GM_TRANSPOSE_H

/* ==== lesson transpose (cuda/transpose.cu) ================================
 * out[N,M] = a[M,N].T, float32, row-major.  Every variant but `coarsened`
 * moves a TRANSPOSE_TILE x TRANSPOSE_TILE tile with blocks of 32 x 8
 * threads (4 elements per thread); grid (ceil(N/32), ceil(M/32)).
 * coarsened: 64 x 64 tiles with 32 x 16 threads (float4 path), else 32 x 32
 * tiles with 32 x 4 threads. */
#define GM_TRANSPOSE_TILE 32
#define GM_TRANSPOSE_ROWS 8      /* threadIdx.y: 32 x 8 = 256 threads */
#define GM_TRANSPOSE_WIDE_TILE 64 /* coarsened, float4 path: 64 x 64 tiles, */
#define GM_TRANSPOSE_WIDE_ROWS 16 /* blocks of 32 x 16 threads */
typedef enum {
    GM_TRANSPOSE_NAIVE_ROW = 0, /* coalesced reads, strided writes */
    GM_TRANSPOSE_NAIVE_COL = 1, /* strided reads, coalesced writes */
    GM_TRANSPOSE_SHARED = 2,    /* tile[32][32]: 32-way conflicts on the column read */
    GM_TRANSPOSE_PADDED = 3,    /* tile[32][33] */
    GM_TRANSPOSE_SWIZZLED = 4,  /* tile[r][c ^ r] */
    GM_TRANSPOSE_COARSENED = 5  /* 64 x 64 tiles, float4 in and out, swizzled (M, N % 4 == 0);
                                   else 32 x 32 padded tiles with 8 elements per thread */
} gm_transpose_variant;

typedef struct {
    int variant; /* gm_transpose_variant */
    const float *a;
    float *out;
    int m, n;    /* a is m x n; m <= 65535 * 32 */
} gm_transpose_params;
GM_FAMILY(transpose)

/* shared_stride: every lane of a warp reads the shared-memory word (element of
 * 4, 8 or 16 bytes) `stride` elements from its neighbour's, `iters` times. */
#define GM_SHARED_STRIDE_BYTES 16384 /* the shared array: 4096 float, 2048 float2, 1024 float4 */
#define GM_SHARED_STRIDE_BLOCK 256
typedef enum {
    GM_SHARED_FLOAT = 0,  /* 4-byte words */
    GM_SHARED_FLOAT2 = 1, /* 8-byte words: a half warp per wavefront at best */
    GM_SHARED_FLOAT4 = 2  /* 16-byte words: a quarter warp per wavefront at best */
} gm_shared_stride_variant;

typedef struct {
    int variant; /* gm_shared_stride_variant */
    float *out;  /* one sum per thread: blocks x GM_SHARED_STRIDE_BLOCK */
    int stride;  /* 1..32 elements */
    int iters;
    int blocks;
} gm_shared_stride_params;
GM_FAMILY(shared_stride)

#endif /* GM_TRANSPOSE_H */
