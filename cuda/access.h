/* access.h -- the C ABI of cuda/access.cu (the access lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_ACCESS_H
#define GM_ACCESS_H

/* ==== lesson access (cuda/access.cu) ======================================
 * Global-memory access lessons.  Every buffer is float32 from cudaMalloc
 * (256-byte aligned); indices are 64-bit.  The exact address pattern of each
 * kernel is part of its contract (gpumem.model reproduces it address for
 * address), so do not change it without changing the model. */

/* vec_add: c[i] = a[i] + b[i], one element per thread. */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    long long n;
    int block; /* 1..1024 */
} gm_vec_add_params;
GM_FAMILY(vec_add)

/* Elements per thread of read_offset and write_offset. */
typedef enum { GM_UNROLL1 = 0, GM_UNROLL4 = 1 } gm_unroll_variant;

/* read_offset: C[i] = A[i + offset] + B[i + offset] where i + offset < n.
 * unroll1: one element per thread; unroll4: four, one block-stride apart. */
typedef struct {
    int variant; /* gm_unroll_variant */
    const float *a;
    const float *b;
    float *c;
    long long n;
    long long offset; /* 0..n */
    int block;        /* 1..1024 */
    int cache;        /* gm_cache_path */
} gm_read_offset_params;
GM_FAMILY(read_offset)

/* write_offset: C[i + offset] = A[i] + B[i] where i + offset < n. */
typedef struct {
    int variant; /* gm_unroll_variant */
    const float *a;
    const float *b;
    float *c;
    long long n;
    long long offset; /* 0..n */
    int block;        /* 1..1024 */
} gm_write_offset_params;
GM_FAMILY(write_offset)

/* copy: C[i] = A[i] for n floats; float: one float per thread; float4: one
 * 16-byte vector per thread, then one scalar per thread for the n % 4 tail. */
typedef enum { GM_COPY_FLOAT = 0, GM_COPY_FLOAT4 = 1 } gm_copy_variant;

typedef struct {
    int variant; /* gm_copy_variant */
    const float *a;
    float *c;
    long long n;
    int block; /* 1..1024 */
} gm_copy_params;
GM_FAMILY(copy)

#endif /* GM_ACCESS_H */
