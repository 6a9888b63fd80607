/* transfer.h -- the C ABI of cuda/transfer.cu (the transfer lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_TRANSFER_H
#define GM_TRANSFER_H

/* ==== lesson transfer (cuda/transfer.cu) ================================= */
/* read_sum: *sum += the float32 sum of x[0..n) (one pass, 16-byte loads where
 * x is 16-byte aligned): the kernel that reads data wherever it lives --
 * device memory, mapped pinned host memory, managed memory.  *sum is zeroed
 * by the caller. */
typedef struct {
    const float *x;
    double *sum;
    long long n;
    int block; /* 32..1024, a multiple of 32 */
} gm_read_sum_params;
GM_FAMILY(read_sum)
#define GM_READ_SUM_MAX_BLOCKS 4096 /* grid-stride beyond this many blocks */

/* scale: y[i] = x[i] pushed `work` times through v = v * 0.999f + 0.001f (an
 * FMA): a kernel whose time grows with `work`, for copy/compute overlap. */
typedef struct {
    const float *x;
    float *y;
    long long n;
    int work;  /* 0..1e6 */
    int block; /* 1..1024 */
} gm_scale_params;
GM_FAMILY(scale)
#define GM_SCALE_A 0.999f
#define GM_SCALE_B 0.001f

#endif /* GM_TRANSFER_H */
