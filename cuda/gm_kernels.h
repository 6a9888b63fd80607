/* gm_kernels.h -- the C ABI between csrc/ (the Python extension, C11) and
 * cuda/ (kernels and their extern "C" launchers).
 *
 * One lesson, one file: cuda/<lesson>.cu holds the kernels of its families.
 * Every family <f> has exactly two entry points:
 *
 *     cudaError_t gm_<f>(const gm_<f>_params *p, gm_dims *dims, cudaStream_t stream);
 *     const void *gm_<f>_kernel(const gm_<f>_params *p);
 *
 * The launcher picks the launch configuration, writes it to *dims, launches
 * on `stream` and returns cudaGetLastError(); it never synchronizes,
 * allocates or prints (csrc/launch.c times it with events and turns errors
 * into Python exceptions).  The kernel selector returns the __global__
 * function the launcher would run for *p -- the launcher itself uses it --
 * for cudaFuncGetAttributes and the occupancy API; NULL for parameters that
 * select no built kernel.  A zeroed params struct selects the default build.
 *
 * Every value that selects a kernel is an enum below.  A family with several
 * variants has `variant` as the first member of its params, and each variant
 * name of csrc's tables stands beside its enum value there (exposed to Python
 * as gpumem.variants()[i].select).  Arguments have been validated by csrc.
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

#define GM_FAMILY(f)                                                                 \
    cudaError_t gm_##f(const gm_##f##_params *p, gm_dims *dims, cudaStream_t stream); \
    const void *gm_##f##_kernel(const gm_##f##_params *p);

/* ==== lesson matmul (cuda/matmul.cu) ===================================== */
/* C[M,N] = A[M,K] @ B[K,N], float32, row-major. */
typedef enum {
    GM_MATMUL_NAIVE = 0,
    GM_MATMUL_TILED = 1,
    GM_MATMUL_PREFETCH = 2,       /* tiled, the next tiles loaded during this one's product */
    GM_MATMUL_COARSENED = 3,      /* 32 x 32 tiles, 4 outputs of a column per thread */
    GM_MATMUL_REGISTER_TILED = 4, /* 64 x 64 tiles, a 4 x 4 block of C per thread */
    GM_MATMUL_WARPTILED = 5       /* block, warp and thread tiles; cp.async double buffering */
} gm_matmul_variant;
#define GM_MATMUL_COARSENED_TILE 32      /* rows and columns of C per block (coarsened) */
#define GM_MATMUL_REGISTER_TILED_TILE 64 /* ... (register_tiled) */
#define GM_MATMUL_WARPTILED_TILE 128     /* ... (warptiled's default; 64 also built) */

typedef struct {
    int variant; /* gm_matmul_variant */
    const float *a;
    const float *b;
    float *c;
    int m, n, k;
    int tile; /* naive, tiled: 8, 16 or 32; prefetch: 16 or 32 (0: 16); coarsened: 32;
                 register_tiled: 64; warptiled: 64 or 128 (0: 128) */
} gm_matmul_params;
GM_FAMILY(matmul)

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

/* The load path of read_offset's loads of A and B. */
typedef enum {
    GM_CACHE_DEFAULT = 0, /* ld.global: the compiler's default (L1 + L2 on sm_70+) */
    GM_CACHE_CA = 1,      /* ld.global.ca (__ldca): cache at all levels */
    GM_CACHE_CG = 2,      /* ld.global.cg (__ldcg): cache in L2 only */
    GM_CACHE_LDG = 3,     /* ld.global.nc (__ldg): the read-only (texture) path */
    GM_CACHE_CS = 4       /* ld.global.cs (__ldcs): streaming, evict first */
} gm_cache_path;
/* Their names, in enum order: the `cache=` argument and _core.CACHE_PATHS. */
#define GM_CACHE_PATH_NAMES {"default", "ca", "cg", "ldg", "cs", NULL}

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

/* ==== lesson layout (cuda/layout.cu) ===================================== */
/* strided_read: C[i] = A[i * stride] for i < m = ceil(n / stride). */
typedef struct {
    const float *a;
    float *c;
    long long n;
    int stride; /* 1..64 */
    int block;  /* 1..1024 */
} gm_strided_read_params;
GM_FAMILY(strided_read)

/* Array of structs or struct of arrays. */
typedef enum { GM_LAYOUT_AOS = 0, GM_LAYOUT_SOA = 1 } gm_layout_variant;

/* struct_update: r.x = d.x + 10, r.y = d.y + 20 for n {x, y} pairs;
 * aos: data is n structs {float x, y}; soa: n x's, then n y's. */
typedef struct {
    int variant; /* gm_layout_variant */
    const float *data;
    float *result;
    long long n;
    int block; /* 1..1024 */
} gm_struct_update_params;
GM_FAMILY(struct_update)

/* distance: d[i] = sqrt(x*x + y*y + z*z) of n points;
 * aos: n structs {float x, y, z}; soa: n x's, n y's, n z's. */
typedef struct {
    int variant; /* gm_layout_variant */
    const float *points;
    float *d;
    long long n;
    int block; /* 1..1024 */
} gm_distance_params;
GM_FAMILY(distance)

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

/* ==== lesson ladder (cuda/ladder.cu) ======================================
 * The memory hierarchy as two ladders.  latency: one warp chases a ring of
 * n = working_set / stride nodes linked in a pseudo-random cyclic order (a
 * keyed Feistel bijection of [0, n), cycle-walked: gpumem.ladder.chain_order
 * reproduces it), timed with clock64() and %globaltimer in the kernel.
 * bandwidth: a full grid of 16-byte loads over a resident working set. */
typedef enum {
    GM_LATENCY_CA = 0,      /* global ring, ld.global.ca: L1, then L2, then DRAM */
    GM_LATENCY_CG = 1,      /* global ring, ld.global.cg: L2, then DRAM (L1 skipped) */
    GM_LATENCY_LDG = 2,     /* global ring, ld.global.nc: the read-only path */
    GM_LATENCY_SHARED = 3,  /* the ring copied into dynamic shared memory */
    GM_LATENCY_CONSTANT = 4 /* the ring in a __constant__ array */
} gm_latency_variant;
#define GM_LATENCY_WARP 32             /* one block of one warp */
#define GM_LATENCY_SHARED_MAX 49152    /* bytes: the default dynamic shared memory per block */
#define GM_LATENCY_CONSTANT_MAX 65536  /* bytes: the user constant bank */

typedef struct {
    int variant;     /* gm_latency_variant */
    void *chain;     /* device, working_set bytes: node j at byte j * stride */
    long long *out;  /* 3 x lanes: end node, clock64 cycles, globaltimer ns of the timed steps */
    long long n;     /* nodes, >= 1 */
    long long stride; /* bytes between nodes: a multiple of 8 */
    int lanes;       /* 1..32 chasing lanes of the one warp */
    int steps;       /* timed steps per lane */
    int warmup;      /* untimed steps per lane before them */
    unsigned seed;   /* picks the ring's order */
} gm_latency_params;
GM_FAMILY(latency)
/* Build p's ring in p->chain (8-byte pointers for the global variants, 4-byte
 * byte offsets for shared and constant; the constant variant's is then copied
 * to its __constant__ array), on `stream`, before the launch: not timed. */
cudaError_t gm_latency_build(const gm_latency_params *p, cudaStream_t stream);
/* Read nbytes of buf (a buffer larger than L2): what L2 held is evicted, dirty lines
 * written back. */
cudaError_t gm_l2_flush(void *buf, size_t nbytes, cudaStream_t stream);

typedef enum {
    GM_BANDWIDTH_READ = 0,  /* float4 loads added into registers */
    GM_BANDWIDTH_COPY = 1,  /* float4 loads stored to out */
    GM_BANDWIDTH_SHARED = 2 /* staged in shared memory once per block, then read there */
} gm_bandwidth_variant;
typedef enum {
    GM_SCOPE_GRID = 0,  /* the grid strides through the working set once per pass */
    GM_SCOPE_BLOCK = 1  /* every block strides through all of it each pass */
} gm_bandwidth_scope;
#define GM_SCOPE_NAMES {"grid", "block", NULL}
#define GM_BANDWIDTH_SHARED_MAX 49152 /* bytes of x for the shared variant */

typedef struct {
    int variant;     /* gm_bandwidth_variant */
    int cache;       /* gm_cache_path of the global loads */
    int scope;       /* gm_bandwidth_scope */
    const float *in;
    float *out;      /* copy: n floats */
    double *result;  /* read, shared: sum of everything read, cycles, ns (zeroed first) */
    long long n;     /* floats in the working set */
    int passes;      /* times the working set is read */
    int blocks;      /* grid size */
    int block;       /* threads per block, a multiple of 32 */
} gm_bandwidth_params;
GM_FAMILY(bandwidth)

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

#undef GM_FAMILY

#ifdef __cplusplus
}
#endif

#endif /* GM_KERNELS_H */
