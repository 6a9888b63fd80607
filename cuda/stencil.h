/* stencil.h -- the C ABI of cuda/stencil.cu (the stencil lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_STENCIL_H
#define GM_STENCIL_H

/* ==== lesson stencil (cuda/stencil.cu) ===================================== */
/* Where coefficients (stencil_1d) or a table (constant_broadcast) live. */
typedef enum {
    GM_MEMORY_CONSTANT = 0, /* __constant__, set with cudaMemcpyToSymbol */
    GM_MEMORY_READONLY = 1, /* global, read through the read-only cache (__ldg) */
    GM_MEMORY_GLOBAL = 2    /* global, plain loads through L1 */
} gm_memory_variant;

/* stencil_1d: out[i] = sum_{k=-R..R} w[R+k] * x[i+k], x zero outside [0, n). */
#define GM_STENCIL_MAX_RADIUS 16

typedef struct {
    int variant;       /* gm_memory_variant */
    const float *in;
    float *out;
    const float *coef; /* device c[0..R] (readonly / global variants; NULL for constant) */
    long long n;
    int radius;        /* 1..GM_STENCIL_MAX_RADIUS */
    int block;         /* threads per block: a multiple of 32, 32..1024 */
    int items;         /* outputs per thread: 1, 2, 4 or 8 (0: 4) */
    int antisymmetric; /* 1: w[R-k] == -w[R+k] (and w[R] == 0); 0: w[R-k] == w[R+k] */
} gm_stencil_1d_params;
GM_FAMILY(stencil_1d)
/* Half the weights, c[k] = w[R+k] for k = 0..R, into __constant__ memory
 * (cudaMemcpyToSymbol): called before the constant variant's launch, so the
 * launch's event time holds the kernel alone.  It stays set until the next call. */
cudaError_t gm_stencil_1d_set_constant(const float *c, int count);

/* constant_broadcast: each warp reads `distinct` different table words per load. */
#define GM_BROADCAST_TABLE 256 /* floats: 1 KiB, fits every constant and L1 cache */

typedef struct {
    int variant;        /* GM_MEMORY_CONSTANT or GM_MEMORY_READONLY */
    const float *table; /* device copy of the table (readonly variant; NULL for constant) */
    float *out;         /* one sum per thread */
    long long n;        /* threads */
    int distinct;       /* 1..32 distinct addresses per warp per load */
    int iters;          /* loads per thread */
    int block;          /* multiple of 32 */
} gm_constant_broadcast_params;
GM_FAMILY(constant_broadcast)
cudaError_t gm_constant_broadcast_set_constant(const float *table, int count);

#endif /* GM_STENCIL_H */
