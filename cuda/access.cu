// access.cu -- global-memory access patterns: aligned vs offset reads and
// writes, four load paths, unrolling, strides, AoS vs SoA, vector copies.
//
// What the hardware does (sm_70 and later): a warp-wide load or store is one
// request; the LSU splits it into the 32-byte sectors it touches.  Efficiency
// = bytes the threads asked for / bytes of the sectors moved.  32 aligned
// consecutive floats touch 4 sectors (100%); shifted by 11 floats they touch 5
// (80%).  The book's Fermi numbers (128-byte L1 lines: 50%) are the old rule.
//
// The address pattern of every kernel here is a contract: gpumem.model
// reproduces it address for address, so change both or neither.  No pointer
// is __restrict__: a const __restrict__ input lets nvcc pick the read-only
// path (LDG.E.CONSTANT) on its own, and the "default" load path must stay a
// plain ld.global.  Indices are 64-bit (n may exceed 2^31 / 4).
#include "gm_kernels.h"

// ---- the load paths ---------------------------------------------------------
// One build offers all five through per-load intrinsics (no -Xptxas -dlcm=..).
// What each becomes on sm_90 (nvcc 13.0 -O3, read with cuobjdump -sass):
//   default  ld.global     -> LDG.E             (weak load, cached in L1 and L2)
//   ca       ld.global.ca  -> LDG.E.STRONG.SM   (cached at all levels, coherent at SM scope)
//   cg       ld.global.cg  -> LDG.E.STRONG.GPU  (coherent at GPU scope: served by L2, not L1)
//   ldg      ld.global.nc  -> LDG.E.CONSTANT    (read-only, non-coherent path through L1/tex)
//   cs       ld.global.cs  -> LDG.E.EF          (evict-first: streaming, little reuse expected)
// Every path moves 32-byte sectors, so the sectors a warp's request touches
// do not depend on the path; what differs is where the data may stay
// afterwards (L1 or not, evicted first or not).  Stores are plain STG.E throughout.
template <int CACHE>
__device__ __forceinline__ float load(const float *p)
{
    if constexpr (CACHE == GM_CACHE_CA)
        return __ldca(p);
    else if constexpr (CACHE == GM_CACHE_CG)
        return __ldcg(p);
    else if constexpr (CACHE == GM_CACHE_LDG)
        return __ldg(p);
    else if constexpr (CACHE == GM_CACHE_CS)
        return __ldcs(p);
    else
        return *p;
}

static unsigned int blocks_for(long long work, int block)
{
    return (unsigned int)((work + block - 1) / block); // validated in csrc: <= 2^31 - 1
}

static void set_dims(gm_dims *dims, unsigned int grid, int block)
{
    *dims = gm_dims{{grid, 1, 1}, {(unsigned int)block, 1, 1}, 0};
}

// ---- read_offset --------------------------------------------------------------
// Misaligned reads: the loads of A and B start `offset` floats into the
// array, so unless offset is a multiple of 8 (32 bytes) each warp's 128 bytes
// straddle one sector more (5 instead of 4: 80%).  The writes stay aligned.
template <int CACHE>
__global__ void read_offset_unroll1(const float *A, const float *B, float *C, long long n,
                                    long long offset)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long k = i + offset;
    if (k < n)
        C[i] = load<CACHE>(A + k) + load<CACHE>(B + k);
}

// The readOffsetUnroll4 pattern: each thread handles four elements one block
// apart, issuing all eight loads before any store, so four independent load
// pairs are in flight per thread (more bytes in flight hide DRAM latency).
// Unlike the book's kernel every element has its own guard: no tail is lost.
template <int CACHE>
__global__ void read_offset_unroll4(const float *A, const float *B, float *C, long long n,
                                    long long offset)
{
    const long long bd = blockDim.x;
    const long long i = (long long)blockIdx.x * bd * 4 + threadIdx.x;
    float a[4] = {0.f, 0.f, 0.f, 0.f}, b[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        long long k = i + j * bd + offset;
        if (k < n) {
            a[j] = load<CACHE>(A + k);
            b[j] = load<CACHE>(B + k);
        }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        long long k = i + j * bd + offset;
        if (k < n)
            C[i + j * bd] = a[j] + b[j];
    }
}

#define GM_READ_OFFSET_LAUNCH(KERNEL)                                                       \
    switch (p->cache) {                                                                     \
    case GM_CACHE_DEFAULT:                                                                  \
        KERNEL<GM_CACHE_DEFAULT><<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n,     \
                                                                p->offset);                 \
        break;                                                                              \
    case GM_CACHE_CA:                                                                       \
        KERNEL<GM_CACHE_CA><<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n, p->offset); \
        break;                                                                              \
    case GM_CACHE_CG:                                                                       \
        KERNEL<GM_CACHE_CG><<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n, p->offset); \
        break;                                                                              \
    case GM_CACHE_LDG:                                                                      \
        KERNEL<GM_CACHE_LDG><<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n,         \
                                                            p->offset);                     \
        break;                                                                              \
    case GM_CACHE_CS:                                                                       \
        KERNEL<GM_CACHE_CS><<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n, p->offset); \
        break;                                                                              \
    default:                                                                                \
        return cudaErrorInvalidValue; /* validated in csrc; never reached */               \
    }

extern "C" cudaError_t gm_read_offset_unroll1(const gm_read_offset_params *p, gm_dims *dims,
                                              cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    GM_READ_OFFSET_LAUNCH(read_offset_unroll1)
    return cudaGetLastError();
}

extern "C" cudaError_t gm_read_offset_unroll4(const gm_read_offset_params *p, gm_dims *dims,
                                              cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, 4 * p->block);
    set_dims(dims, grid, p->block);
    GM_READ_OFFSET_LAUNCH(read_offset_unroll4)
    return cudaGetLastError();
}

// ---- write_offset -------------------------------------------------------------
// Misaligned writes: loads aligned, stores shifted by `offset` floats.  Stores
// are not cached in L1; L2 takes them in 32-byte sectors, so offset 11 again
// costs 5 sectors for 4 sectors' worth of data (80% store efficiency).
__global__ void write_offset_unroll1(const float *A, const float *B, float *C, long long n,
                                     long long offset)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long k = i + offset;
    if (k < n)
        C[k] = A[i] + B[i];
}

__global__ void write_offset_unroll4(const float *A, const float *B, float *C, long long n,
                                     long long offset)
{
    const long long bd = blockDim.x;
    const long long i = (long long)blockIdx.x * bd * 4 + threadIdx.x;
    float a[4] = {0.f, 0.f, 0.f, 0.f}, b[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (i + j * bd + offset < n) {
            a[j] = A[i + j * bd];
            b[j] = B[i + j * bd];
        }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        long long k = i + j * bd + offset;
        if (k < n)
            C[k] = a[j] + b[j];
    }
}

extern "C" cudaError_t gm_write_offset_unroll1(const gm_write_offset_params *p, gm_dims *dims,
                                               cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    write_offset_unroll1<<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n, p->offset);
    return cudaGetLastError();
}

extern "C" cudaError_t gm_write_offset_unroll4(const gm_write_offset_params *p, gm_dims *dims,
                                               cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, 4 * p->block);
    set_dims(dims, grid, p->block);
    write_offset_unroll4<<<grid, p->block, 0, stream>>>(p->a, p->b, p->c, p->n, p->offset);
    return cudaGetLastError();
}

// ---- strided_read ---------------------------------------------------------------
// The coalescing cliff: lane t reads A[t * stride].  Stride 1: 4 sectors per
// warp; stride 2: 8 (50%); stride 8 and beyond: 32 sectors, one per lane
// (12.5%) -- each 32-byte sector carries 4 useful bytes.  Writes stay dense.
__global__ void strided_read_kernel(const float *A, float *C, long long m, int stride)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m)
        C[i] = A[i * stride];
}

extern "C" cudaError_t gm_strided_read_default(const gm_strided_read_params *p, gm_dims *dims,
                                               cudaStream_t stream)
{
    long long m = (p->n + p->stride - 1) / p->stride;
    unsigned int grid = blocks_for(m, p->block);
    set_dims(dims, grid, p->block);
    strided_read_kernel<<<grid, p->block, 0, stream>>>(p->a, p->c, m, p->stride);
    return cudaGetLastError();
}

// ---- struct_update: AoS vs SoA -----------------------------------------------
// The book's innerStruct: 4-byte aligned, so nvcc must emit two 4-byte loads
// (LDG.E at +0 and +4) and two 4-byte stores, not one 8-byte access.  Each
// load instruction of a warp spans 256 bytes of which it uses 128: 50%.
struct innerStruct {
    float x;
    float y;
};

__global__ void struct_update_aos_kernel(const innerStruct *data, innerStruct *result, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        innerStruct tmp = data[i];
        tmp.x += 10.f;
        tmp.y += 20.f;
        result[i] = tmp;
    }
}

// SoA: all x's, then all y's; every load and store is a dense 128-byte run.
__global__ void struct_update_soa_kernel(const float *x, const float *y, float *rx, float *ry,
                                         long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        rx[i] = x[i] + 10.f;
        ry[i] = y[i] + 20.f;
    }
}

extern "C" cudaError_t gm_struct_update_aos(const gm_struct_update_params *p, gm_dims *dims,
                                            cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    struct_update_aos_kernel<<<grid, p->block, 0, stream>>>(
        (const innerStruct *)p->data, (innerStruct *)p->result, p->n);
    return cudaGetLastError();
}

extern "C" cudaError_t gm_struct_update_soa(const gm_struct_update_params *p, gm_dims *dims,
                                            cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    struct_update_soa_kernel<<<grid, p->block, 0, stream>>>(p->data, p->data + p->n, p->result,
                                                            p->result + p->n, p->n);
    return cudaGetLastError();
}

// ---- distance to the origin: AoS vs SoA -----------------------------------------
// AoS points {x, y, z}: three 4-byte loads 12 bytes apart per lane, each
// warp-wide load spanning 384 bytes for 128 useful (about 33%, although L1
// serves the second and third from the lines the first brought in).  SoA:
// three dense loads.  The sum is rounded step by step (no FMA contraction),
// and sqrtf is IEEE-exact by default, so the result equals NumPy's float32
// sqrt((x*x + y*y) + z*z) bit for bit.
struct point3 {
    float x;
    float y;
    float z;
};

__device__ __forceinline__ float norm3(float x, float y, float z)
{
    return sqrtf(__fadd_rn(__fadd_rn(__fmul_rn(x, x), __fmul_rn(y, y)), __fmul_rn(z, z)));
}

__global__ void distance_aos_kernel(const point3 *pts, float *d, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        point3 p = pts[i];
        d[i] = norm3(p.x, p.y, p.z);
    }
}

__global__ void distance_soa_kernel(const float *x, const float *y, const float *z, float *d,
                                    long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        d[i] = norm3(x[i], y[i], z[i]);
}

extern "C" cudaError_t gm_distance_aos(const gm_distance_params *p, gm_dims *dims,
                                       cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    distance_aos_kernel<<<grid, p->block, 0, stream>>>((const point3 *)p->points, p->d, p->n);
    return cudaGetLastError();
}

extern "C" cudaError_t gm_distance_soa(const gm_distance_params *p, gm_dims *dims,
                                       cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    distance_soa_kernel<<<grid, p->block, 0, stream>>>(p->points, p->points + p->n,
                                                       p->points + 2 * p->n, p->d, p->n);
    return cudaGetLastError();
}

// ---- copy: the streaming ceiling ------------------------------------------------
// float: one 4-byte load and store per thread (4 sectors per warp request).
// float4: one 16-byte load and store per thread (LDG.E.128: 16 sectors per
// request, a quarter of the instructions), then the n % 4 tail floats one per
// thread.  cudaMalloc's 256-byte alignment makes every float4 aligned.
__global__ void copy_float_kernel(const float *A, float *C, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        C[i] = A[i];
}

__global__ void copy_float4_kernel(const float *A, float *C, long long n4, long long r)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        reinterpret_cast<float4 *>(C)[i] = reinterpret_cast<const float4 *>(A)[i];
    } else if (i < n4 + r) {
        long long e = 4 * n4 + (i - n4);
        C[e] = A[e];
    }
}

extern "C" cudaError_t gm_copy_float(const gm_copy_params *p, gm_dims *dims, cudaStream_t stream)
{
    unsigned int grid = blocks_for(p->n, p->block);
    set_dims(dims, grid, p->block);
    copy_float_kernel<<<grid, p->block, 0, stream>>>(p->a, p->c, p->n);
    return cudaGetLastError();
}

extern "C" cudaError_t gm_copy_float4(const gm_copy_params *p, gm_dims *dims, cudaStream_t stream)
{
    long long n4 = p->n / 4, r = p->n % 4;
    unsigned int grid = blocks_for(n4 + r, p->block);
    set_dims(dims, grid, p->block);
    copy_float4_kernel<<<grid, p->block, 0, stream>>>(p->a, p->c, n4, r);
    return cudaGetLastError();
}
