/* matmul.h -- the C ABI of cuda/matmul.cu (the matmul lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_MATMUL_H
#define GM_MATMUL_H

/* ==== lesson matmul (cuda/matmul.cu) ===================================== */
/* C[M,N] = A[M,K] @ B[K,N], float32, row-major. */
typedef enum {
    GM_MATMUL_NAIVE = 0,
    GM_MATMUL_TILED = 1,
    GM_MATMUL_PREFETCH = 2,       /* tiled, the next tiles loaded during this one's product */
    GM_MATMUL_COARSENED = 3,      /* 32 x 32 tiles, 4 outputs of a column per thread */
    GM_MATMUL_REGISTER_TILED = 4, /* 64 x 64 tiles, a 4 x 4 block of C per thread */
    GM_MATMUL_WARPTILED = 5,      /* block, warp and thread tiles; cp.async double buffering */
    GM_MATMUL_MMA = 6,            /* tensor cores: mma.sync TF32, cp.async 3-stage pipeline (sm_80+) */
    GM_MATMUL_WGMMA = 7           /* Hopper: wgmma.mma_async TF32 fed by TMA on mbarriers (sm_90a) */
} gm_matmul_variant;
#define GM_MATMUL_COARSENED_TILE 32      /* rows and columns of C per block (coarsened) */
#define GM_MATMUL_REGISTER_TILED_TILE 64 /* ... (register_tiled) */
#define GM_MATMUL_WARPTILED_TILE 128     /* ... (warptiled's default; 64 also built) */
#define GM_MATMUL_MMA_TILE 128           /* ... (mma) */
#define GM_MATMUL_WGMMA_TILE 128         /* columns of C per block (wgmma; and 256 rows) */
#define GM_MATMUL_SPLITS_MAX 64          /* the most K slices of a split tile (warptiled) */

typedef struct {
    int variant; /* gm_matmul_variant */
    const float *a;
    const float *b;
    float *c;
    int m, n, k;
    int tile; /* naive, tiled: 8, 16 or 32; prefetch: 16 or 32 (0: 16); coarsened: 32;
                 register_tiled: 64; warptiled: 64 or 128 (0: 128); mma: 128; wgmma: 128 */
    /* warptiled's split tail (splits > 1): the tiles of C after the first `full` (those of
     * the last, partly filled wave) are each computed by `splits` blocks, one slice of K
     * each, into ws (splits floats per element of those tiles); a second kernel adds the
     * slices in order into C.  splits 1 (or 0): every block computes a whole tile. */
    int splits;
    int full;
    float *ws; /* the call's workspace: warptiled's split tail's slices, the padded copies */
    /* which operands the launcher first copies into ws with rows padded to a multiple of 4
     * floats (16-byte copies and the tensor maps' rows lie on the 16-byte grid): bit 0 A
     * (M x round4(K)), bit 1 B (K x round4(N), after A's, from a 256-byte boundary) */
    int pad;
} gm_matmul_params;

/* What every matmul kernel gets besides its operands (only warptiled's kernels read it).
 * A split call runs its first `full` tiles of C (row-major order) whole, on a 2-D grid of
 * whole rows of blocks, those past `full` exiting (ws NULL); then the slices on a 1-D grid
 * (ws set): block b is slice b % splits of tile full + b / splits. */
typedef struct {
    float *ws;   /* NULL: no slices; the grid is 2-D, block (x, y) computes tile (y, x) */
    int full;    /* the tiles computed whole (the first, in row-major order) */
    int splits;  /* K slices per tile of the tail */
    int tiles_n; /* tiles in a row of C */
    int lda;     /* warptiled's kernels for padded operands (gm_matmul_params.pad != 0): A's */
    int ldb;     /* and B's rows lda and ldb floats apart (K or round4(K), N or round4(N));
                  * the others take K and N */
} gm_matmul_split;
GM_FAMILY(matmul)

#endif /* GM_MATMUL_H */
