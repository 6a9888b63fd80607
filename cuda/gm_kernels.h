/* gm_kernels.h -- the C ABI between csrc/ (the Python extension, C11) and
 * cuda/ (kernels and their extern "C" launchers).
 *
 * Every launcher has the same shape:
 *
 *     cudaError_t gm_<family>_<variant>(const gm_<family>_params *p,
 *                                       gm_dims *dims, cudaStream_t stream);
 *
 * It picks the launch configuration, writes it to *dims, launches on
 * `stream` and returns cudaGetLastError().  It never synchronizes, allocates
 * or prints: the extension's one launch helper (csrc/launch.c) times it with
 * events and turns errors into Python exceptions.  Arguments have been
 * validated by the caller.
 */
#ifndef GM_KERNELS_H
#define GM_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    size_t smem; /* dynamic + static shared memory per block, bytes */
} gm_dims;

/* ---- vec_add: c[i] = a[i] + b[i], one element per thread ---------------- */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    long long n;
    int block; /* threads per block, 1..1024 */
} gm_vec_add_params;

cudaError_t gm_vec_add(const gm_vec_add_params *p, gm_dims *dims, cudaStream_t stream);

/* ---- matmul: C[M,N] = A[M,K] @ B[K,N], float32, row-major --------------- */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    int m, n, k;
    int tile; /* 8, 16 or 32: block is tile x tile threads */
} gm_matmul_params;

cudaError_t gm_matmul_naive(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_matmul_tiled(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream);

/* ---- access patterns (cuda/access.cu) -----------------------------------
 * Global-memory access lessons.  Every buffer is float32 from cudaMalloc
 * (256-byte aligned); indices are 64-bit.  The exact address pattern of each
 * kernel is part of its contract (gpumem.model reproduces it address for
 * address), so do not change it without changing the model. */

/* Load path of read_offset's loads of A and B. */
typedef enum {
    GM_CACHE_DEFAULT = 0, /* ld.global: the compiler's default (L1 + L2 on sm_70+) */
    GM_CACHE_CA = 1,      /* ld.global.ca (__ldca): cache at all levels */
    GM_CACHE_CG = 2,      /* ld.global.cg (__ldcg): cache in L2 only */
    GM_CACHE_LDG = 3,     /* ld.global.nc (__ldg): the read-only (texture) path */
    GM_CACHE_CS = 4       /* ld.global.cs (__ldcs): streaming, evict first */
} gm_cache_path;

/* read_offset: C[i] = A[i + offset] + B[i + offset] where i + offset < n.
 * unroll1: one element per thread; unroll4: four, one block-stride apart. */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    long long n;
    long long offset; /* 0..n */
    int block;        /* 1..1024 */
    int cache;        /* gm_cache_path */
} gm_read_offset_params;

cudaError_t gm_read_offset_unroll1(const gm_read_offset_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_read_offset_unroll4(const gm_read_offset_params *p, gm_dims *dims, cudaStream_t stream);

/* write_offset: C[i + offset] = A[i] + B[i] where i + offset < n. */
typedef struct {
    const float *a;
    const float *b;
    float *c;
    long long n;
    long long offset; /* 0..n */
    int block;        /* 1..1024 */
} gm_write_offset_params;

cudaError_t gm_write_offset_unroll1(const gm_write_offset_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_write_offset_unroll4(const gm_write_offset_params *p, gm_dims *dims, cudaStream_t stream);

/* strided_read: C[i] = A[i * stride] for i < m = ceil(n / stride). */
typedef struct {
    const float *a;
    float *c;
    long long n;
    int stride; /* 1..64 */
    int block;  /* 1..1024 */
} gm_strided_read_params;

cudaError_t gm_strided_read_default(const gm_strided_read_params *p, gm_dims *dims, cudaStream_t stream);

/* struct_update: r.x = d.x + 10, r.y = d.y + 20 for n {x, y} pairs;
 * aos: data is n structs {float x, y}; soa: n x's, then n y's. */
typedef struct {
    const float *data;
    float *result;
    long long n;
    int block; /* 1..1024 */
} gm_struct_update_params;

cudaError_t gm_struct_update_aos(const gm_struct_update_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_struct_update_soa(const gm_struct_update_params *p, gm_dims *dims, cudaStream_t stream);

/* distance: d[i] = sqrt(x*x + y*y + z*z) of n points;
 * aos: n structs {float x, y, z}; soa: n x's, n y's, n z's. */
typedef struct {
    const float *points;
    float *d;
    long long n;
    int block; /* 1..1024 */
} gm_distance_params;

cudaError_t gm_distance_aos(const gm_distance_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_distance_soa(const gm_distance_params *p, gm_dims *dims, cudaStream_t stream);

/* copy: C[i] = A[i] for n floats; float: one float per thread; float4: one
 * 16-byte vector per thread, then one scalar per thread for the n % 4 tail. */
typedef struct {
    const float *a;
    float *c;
    long long n;
    int block; /* 1..1024 */
} gm_copy_params;

cudaError_t gm_copy_float(const gm_copy_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_copy_float4(const gm_copy_params *p, gm_dims *dims, cudaStream_t stream);
/* ---- stencil: out[i] = sum_{k=-R..R} w[R+k] * x[i+k], x zero outside [0, n) -- */
#define GM_STENCIL_MAX_RADIUS 16

typedef struct {
    const float *in;
    float *out;
    const float *coef; /* device c[0..R] (readonly / global variants; NULL for constant) */
    long long n;
    int radius;        /* 1..GM_STENCIL_MAX_RADIUS */
    int block;         /* threads per block: a multiple of 32, 32..1024 */
    int items;         /* outputs per thread: 1, 2, 4 or 8 */
    int antisymmetric; /* 1: w[R-k] == -w[R+k] (and w[R] == 0); 0: w[R-k] == w[R+k] */
} gm_stencil_params;

/* Half the weights, c[k] = w[R+k] for k = 0..R, into __constant__ memory
 * (cudaMemcpyToSymbol): called before the constant variant's launch, so the
 * launch's event time holds the kernel alone.  It stays set until the next call. */
cudaError_t gm_stencil_set_constant(const float *c, int count);
cudaError_t gm_stencil_constant(const gm_stencil_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_stencil_readonly(const gm_stencil_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_stencil_global(const gm_stencil_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_stencil_kernel(int memory, int items, int antisymmetric); /* memory 0/1/2 */

/* ---- broadcast: each warp reads `distinct` different table words per load --- */
#define GM_BROADCAST_TABLE 256 /* floats: 1 KiB, fits every constant and L1 cache */

typedef struct {
    const float *table; /* device copy of the table (readonly variant; NULL for constant) */
    float *out;         /* one sum per thread */
    long long n;        /* threads */
    int distinct;       /* 1..32 distinct addresses per warp per load */
    int iters;          /* loads per thread */
    int block;          /* multiple of 32 */
} gm_broadcast_params;

cudaError_t gm_broadcast_set_constant(const float *table, int count);
cudaError_t gm_broadcast_constant(const gm_broadcast_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_broadcast_readonly(const gm_broadcast_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_broadcast_kernel(int readonly);

/* ---- private_array: a per-thread 16-bin histogram, local memory vs registers - */
#define GM_PRIVATE_BINS 16

typedef struct {
    const float *in;
    int *out;          /* GM_PRIVATE_BINS x threads, bin-major */
    long long n;
    int threads;       /* histograms (one per thread) */
    int block;
} gm_private_array_params;

cudaError_t gm_private_array_local(const gm_private_array_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_private_array_registers(const gm_private_array_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_private_array_kernel(int registers);

/* ---- lifetime: __device__ persists across launches, __shared__ does not ------ */
typedef struct {
    long long *out; /* 3 x blocks: shared count, device counter after the block, constant */
    int blocks;
    int block;
} gm_lifetime_params;

cudaError_t gm_lifetime_set_constant(int value);                  /* __constant__ int */
cudaError_t gm_lifetime_set_counter(unsigned long long value);    /* __device__ counter */
cudaError_t gm_lifetime_counter_address(void **ptr, size_t *nbytes);
cudaError_t gm_lifetime(const gm_lifetime_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_lifetime_kernel(void);

/* ---- register_cap: one kernel built at several __launch_bounds__ caps -------- */
#define GM_REGCAP_LIVE 64 /* floats each thread keeps live */
#define GM_REGCAP_MAX_BLOCK 256

typedef struct {
    const float *in;   /* GM_REGCAP_LIVE x n */
    float *out;        /* n */
    long long n;
    int rounds;
    int block;         /* multiple of 32, 32..GM_REGCAP_MAX_BLOCK */
    int min_blocks;    /* __launch_bounds__(256, min_blocks): 1, 2, 4, 6 or 8 */
} gm_register_cap_params;

cudaError_t gm_register_cap(const gm_register_cap_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_register_cap_kernel(int min_blocks);

/* ---- divergence: branch on threadIdx.x % 2 vs on the warp index ------------- */
typedef struct {
    const float *in;
    float *out;
    long long n;
    int iters;
    int block;
} gm_divergence_params;

cudaError_t gm_divergence_odd_even(const gm_divergence_params *p, gm_dims *dims, cudaStream_t stream);
cudaError_t gm_divergence_warp(const gm_divergence_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_divergence_kernel(int by_warp);

/* ---- kernel function pointers of the core families (for cudaFuncGetAttributes) */
const void *gm_vec_add_kernel(void);
const void *gm_matmul_naive_kernel(void);
const void *gm_matmul_tiled_kernel(int tile); /* NULL for a tile that is not built */

#ifdef __cplusplus
}
#endif

#endif /* GM_KERNELS_H */
