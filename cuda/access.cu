// access.cu -- coalescing: the fully coalesced vec_add, aligned vs offset
// reads and writes, five load paths, unrolling, vector copies.
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
#include "gm_launch.cuh"

// ---- vec_add: the smallest complete trip through device memory -------------
// One element per thread: consecutive threads touch consecutive floats, so
// every warp-wide load and store is fully coalesced (4 sectors per request).
__global__ void vec_add_kernel(const float *__restrict__ a, const float *__restrict__ b,
                               float *__restrict__ c, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" const void *gm_vec_add_kernel(const gm_vec_add_params *)
{
    return (const void *)vec_add_kernel;
}

extern "C" cudaError_t gm_vec_add(const gm_vec_add_params *p, gm_dims *dims, cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->n, p->block), p->block);
    return gm_run(vec_add_kernel, dims, 0, stream, p->a, p->b, p->c, p->n);
}

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
// The loads go through gm_load<CACHE> (gm_launch.cuh).

// ---- read_offset --------------------------------------------------------------
// Misaligned reads: the loads of A and B start `offset` floats into the
// array, so unless offset is a multiple of 8 (32 bytes) each warp's 128 bytes
// straddle one sector more (5 instead of 4: 80%).  The writes stay aligned.
template <int CACHE>
__device__ __forceinline__ void read_unroll1(const float *A, const float *B, float *C, long long n,
                                             long long offset)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long k = i + offset;
    if (k < n)
        C[i] = gm_load<CACHE>(A + k) + gm_load<CACHE>(B + k);
}

// The readOffsetUnroll4 pattern: each thread handles four elements one block
// apart, issuing all eight loads before any store, so four independent load
// pairs are in flight per thread (more bytes in flight hide DRAM latency).
// Unlike the book's kernel every element has its own guard: no tail is lost.
template <int CACHE>
__device__ __forceinline__ void read_unroll4(const float *A, const float *B, float *C, long long n,
                                             long long offset)
{
    const long long bd = blockDim.x;
    const long long i = (long long)blockIdx.x * bd * 4 + threadIdx.x;
    float a[4] = {0.f, 0.f, 0.f, 0.f}, b[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        long long k = i + j * bd + offset;
        if (k < n) {
            a[j] = gm_load<CACHE>(A + k);
            b[j] = gm_load<CACHE>(B + k);
        }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        long long k = i + j * bd + offset;
        if (k < n)
            C[i + j * bd] = a[j] + b[j];
    }
}

// VARIANT: gm_unroll_variant; CACHE: gm_cache_path.
template <int VARIANT, int CACHE>
__global__ void read_offset_kernel(const float *A, const float *B, float *C, long long n,
                                   long long offset)
{
    if constexpr (VARIANT == GM_UNROLL4)
        read_unroll4<CACHE>(A, B, C, n, offset);
    else
        read_unroll1<CACHE>(A, B, C, n, offset);
}

using offset_fn = void (*)(const float *, const float *, float *, long long, long long);

static offset_fn select_read(const gm_read_offset_params *p)
{
    return gm_select<GM_UNROLL1, GM_UNROLL4>(p->variant, [p](auto v) {
        return gm_select<GM_CACHE_DEFAULT, GM_CACHE_CA, GM_CACHE_CG, GM_CACHE_LDG, GM_CACHE_CS>(
            p->cache, [](auto c) -> offset_fn {
                return read_offset_kernel<decltype(v)::value, decltype(c)::value>;
            });
    });
}

extern "C" const void *gm_read_offset_kernel(const gm_read_offset_params *p)
{
    return (const void *)select_read(p);
}

extern "C" cudaError_t gm_read_offset(const gm_read_offset_params *p, gm_dims *dims,
                                      cudaStream_t stream)
{
    const int per_thread = p->variant == GM_UNROLL4 ? 4 : 1;
    *dims = gm_dims_1d(gm_blocks_for(p->n, (long long)per_thread * p->block), p->block);
    return gm_run(select_read(p), dims, 0, stream, p->a, p->b, p->c, p->n, p->offset);
}

// ---- write_offset -------------------------------------------------------------
// Misaligned writes: loads aligned, stores shifted by `offset` floats.  Stores
// are not cached in L1; L2 takes them in 32-byte sectors, so offset 11 again
// costs 5 sectors for 4 sectors' worth of data (80% store efficiency).
__device__ __forceinline__ void write_unroll1(const float *A, const float *B, float *C, long long n,
                                              long long offset)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long k = i + offset;
    if (k < n)
        C[k] = A[i] + B[i];
}

__device__ __forceinline__ void write_unroll4(const float *A, const float *B, float *C, long long n,
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

template <int VARIANT>
__global__ void write_offset_kernel(const float *A, const float *B, float *C, long long n,
                                    long long offset)
{
    if constexpr (VARIANT == GM_UNROLL4)
        write_unroll4(A, B, C, n, offset);
    else
        write_unroll1(A, B, C, n, offset);
}

static offset_fn select_write(const gm_write_offset_params *p)
{
    return gm_select<GM_UNROLL1, GM_UNROLL4>(
        p->variant, [](auto v) -> offset_fn { return write_offset_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_write_offset_kernel(const gm_write_offset_params *p)
{
    return (const void *)select_write(p);
}

extern "C" cudaError_t gm_write_offset(const gm_write_offset_params *p, gm_dims *dims,
                                       cudaStream_t stream)
{
    const int per_thread = p->variant == GM_UNROLL4 ? 4 : 1;
    *dims = gm_dims_1d(gm_blocks_for(p->n, (long long)per_thread * p->block), p->block);
    return gm_run(select_write(p), dims, 0, stream, p->a, p->b, p->c, p->n, p->offset);
}

// ---- copy: the streaming ceiling ------------------------------------------------
// float: one 4-byte load and store per thread (4 sectors per warp request).
// float4: one 16-byte load and store per thread (LDG.E.128: 16 sectors per
// request, a quarter of the instructions), then the n % 4 tail floats one per
// thread.  cudaMalloc's 256-byte alignment makes every float4 aligned.
// n4 = n / 4 and r = n % 4 for float4; n4 = n and r = 0 for float.
template <int VARIANT>
__global__ void copy_kernel(const float *A, float *C, long long n4, long long r)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if constexpr (VARIANT == GM_COPY_FLOAT) {
        if (i < n4)
            C[i] = A[i];
    } else if (i < n4) {
        reinterpret_cast<float4 *>(C)[i] = reinterpret_cast<const float4 *>(A)[i];
    } else if (i < n4 + r) {
        long long e = 4 * n4 + (i - n4);
        C[e] = A[e];
    }
}

using copy_fn = void (*)(const float *, float *, long long, long long);

static copy_fn select_copy(const gm_copy_params *p)
{
    return gm_select<GM_COPY_FLOAT, GM_COPY_FLOAT4>(
        p->variant, [](auto v) -> copy_fn { return copy_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_copy_kernel(const gm_copy_params *p)
{
    return (const void *)select_copy(p);
}

extern "C" cudaError_t gm_copy(const gm_copy_params *p, gm_dims *dims, cudaStream_t stream)
{
    const bool vec = p->variant == GM_COPY_FLOAT4;
    const long long n4 = vec ? p->n / 4 : p->n, r = vec ? p->n % 4 : 0;
    *dims = gm_dims_1d(gm_blocks_for(n4 + r, p->block), p->block);
    return gm_run(select_copy(p), dims, 0, stream, p->a, p->c, n4, r);
}
