/* spaces.h -- the C ABI of cuda/spaces.cu (the spaces lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_SPACES_H
#define GM_SPACES_H

/* ==== lesson spaces (cuda/spaces.cu) ====================================== */
/* thread_histogram: a per-thread 16-bin histogram, local memory vs registers. */
#define GM_HISTOGRAM_BINS 16
typedef enum { GM_HISTOGRAM_LOCAL = 0, GM_HISTOGRAM_REGISTERS = 1 } gm_histogram_variant;

typedef struct {
    int variant;       /* gm_histogram_variant */
    const float *in;
    int *out;          /* GM_HISTOGRAM_BINS x threads, bin-major */
    long long n;
    int threads;       /* histograms (one per thread) */
    int block;
} gm_thread_histogram_params;
GM_FAMILY(thread_histogram)

/* lifetimes: __device__ persists across launches, __shared__ does not. */
typedef struct {
    long long *out; /* 3 x blocks: shared count, device counter after the block, constant */
    int blocks;
    int block;
} gm_lifetimes_params;
GM_FAMILY(lifetimes)
cudaError_t gm_lifetimes_set_constant(int value);               /* __constant__ int */
cudaError_t gm_lifetimes_set_counter(unsigned long long value); /* __device__ counter */
cudaError_t gm_lifetimes_counter_address(void **ptr, size_t *nbytes);

/* register_pressure: one kernel built at several __launch_bounds__(256, B)
 * caps; the enum value is B, the resident blocks promised (at most
 * 65536 / (256 B) registers per thread, 255 at most). */
#define GM_REGCAP_LIVE 64 /* floats each thread keeps live */
#define GM_REGCAP_MAX_BLOCK 256
typedef enum {
    GM_REGCAP_UNCAPPED = 1,
    GM_REGCAP_128 = 2,
    GM_REGCAP_64 = 4,
    GM_REGCAP_40 = 6,
    GM_REGCAP_32 = 8
} gm_regcap_variant;

typedef struct {
    int variant;       /* gm_regcap_variant (0: uncapped) */
    const float *in;   /* GM_REGCAP_LIVE x n */
    float *out;        /* n */
    long long n;
    int rounds;
    int block;         /* multiple of 32, 32..GM_REGCAP_MAX_BLOCK */
} gm_register_pressure_params;
GM_FAMILY(register_pressure)

/* divergence: branch on threadIdx.x % 2 vs on the warp index. */
typedef enum { GM_DIVERGENCE_ODD_EVEN = 0, GM_DIVERGENCE_WARP = 1 } gm_divergence_variant;

typedef struct {
    int variant; /* gm_divergence_variant */
    const float *in;
    float *out;
    long long n;
    int iters;
    int block;
} gm_divergence_params;
GM_FAMILY(divergence)

#endif /* GM_SPACES_H */
