// matmul.cu -- C[M,N] = A[M,K] @ B[K,N], float32, row-major.
// The first memory lesson: the naive kernel reads 2K floats from global
// memory per 2K FLOPs (a compute-to-global-memory-access ratio of 1); the
// tiled kernel stages TILE x TILE blocks of A and B in shared memory so each
// global float is read once per tile and reused TILE times, cutting global
// traffic by the tile width.
#include "gm_launch.cuh"
#include "gm_tma.cuh"

#include <stdint.h>
#include <cstring>

// naive: each thread computes one C element straight from global memory.
// Neighbouring threads (tx) read neighbouring B columns (coalesced) and the
// same A element (a broadcast); the reuse across threads is left to L1/L2.
__device__ __forceinline__ void naive(const float *__restrict__ A, const float *__restrict__ B,
                                      float *__restrict__ C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;
    const float *a = A + (size_t)row * K;
    const float *b = B + col;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += a[k] * b[(size_t)k * N];
    C[(size_t)row * N + col] = acc;
}

// tiled: each block walks K in TILE steps.  Every thread loads one A and one
// B element of the current tiles into shared memory (zero outside the
// matrix, so any M, N, K works), the block waits for the whole tile
// (barrier 1), every thread takes a TILE-long inner product from shared
// memory, and the block waits again (barrier 2) before the next tile
// overwrites what slower warps may still be reading.
template <int TILE, bool CHECKED>
__device__ __forceinline__ void tiled_step(float (&As)[TILE][TILE], float (&Bs)[TILE][TILE],
                                           const float *a, const float *b, bool a_ok, bool b_ok,
                                           float &acc)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    As[ty][tx] = (!CHECKED || a_ok) ? *a : 0.0f;
    Bs[ty][tx] = (!CHECKED || b_ok) ? *b : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k)
        acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
}

template <int TILE>
__device__ __forceinline__ void tiled(float (&As)[TILE][TILE], float (&Bs)[TILE][TILE],
                                      const float *__restrict__ A, const float *__restrict__ B,
                                      float *__restrict__ C, int M, int N, int K)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    const float *a = A + (size_t)row * K + tx;   // A[row][k0 + tx]
    const float *b = B + (size_t)ty * N + col;   // B[k0 + ty][col]
    const size_t b_step = (size_t)TILE * N;
    float acc = 0.0f;
    int k0 = 0;
    // Blocks wholly inside C skip the bounds checks on every full tile (the
    // same loads, without the compare-and-select); the rest check each load.
    const bool inside = (blockIdx.y + 1) * TILE <= M && (blockIdx.x + 1) * TILE <= N;
    if (inside)
        for (; k0 + TILE <= K; k0 += TILE, a += TILE, b += b_step)
            tiled_step<TILE, false>(As, Bs, a, b, true, true, acc);
    for (; k0 < K; k0 += TILE, a += TILE, b += b_step)
        tiled_step<TILE, true>(As, Bs, a, b, row < M && k0 + tx < K, k0 + ty < K && col < N, acc);
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

// prefetch (double buffering, PMPP): two shared buffers per operand.  While
// the block multiplies the tiles in buffer `cur`, each thread already has
// its elements of the next tiles in flight from global memory into two
// registers; it stores them to the other buffer after its inner product, and
// one barrier per tile (not two) separates the steps: buffer cur ^ 1 was last
// read before the previous barrier, buffer cur is next written after this one.
// The loads are not under an `if (more tiles)`: with the loads and the stores in
// two such branches the compiler sank the loads into the second one, after the
// inner product -- no prefetch at all, the whole load latency exposed every tile
// (cuobjdump -sass shows where the LDGs are).  Past the last tile the loads are
// predicated off (zeros) and the stores land in a buffer no one reads again.
template <int TILE>
__device__ __forceinline__ void prefetch(float (&As)[2][TILE][TILE], float (&Bs)[2][TILE][TILE],
                                         const float *__restrict__ A, const float *__restrict__ B,
                                         float *__restrict__ C, int M, int N, int K)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    const int tiles = (K + TILE - 1) / TILE;
    const float *a = A + (size_t)row * K + tx;   // A[row][k0 + tx]
    const float *b = B + (size_t)ty * N + col;   // B[k0 + ty][col]
    const size_t b_step = (size_t)TILE * N;
    float acc = 0.0f;
    if (tiles > 0) {
        As[0][ty][tx] = (row < M && tx < K) ? *a : 0.0f;
        Bs[0][ty][tx] = (ty < K && col < N) ? *b : 0.0f;
        __syncthreads();
        for (int t = 0, k0 = TILE; t < tiles; ++t, k0 += TILE) {
            const int cur = t & 1;
            a += TILE;
            b += b_step;
            // issued now, used after the inner product: the loads overlap it
            const float a_next = (row < M && k0 + tx < K) ? *a : 0.0f;
            const float b_next = (k0 + ty < K && col < N) ? *b : 0.0f;
#pragma unroll
            for (int k = 0; k < TILE; ++k)
                acc += As[cur][ty][k] * Bs[cur][k][tx];
            As[cur ^ 1][ty][tx] = a_next;
            Bs[cur ^ 1][ty][tx] = b_next;
            __syncthreads();
        }
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

// coarsened (thread coarsening, PMPP): a 32 x 32 tile of C per block of
// 32 x 8 threads; each thread computes COARSE = 4 outputs of one column (rows
// ty, ty + 8, ty + 16, ty + 24).  Each B value it reads from shared memory is
// kept in a register and used 4 times (the A values are warp-wide broadcasts),
// so shared-memory loads per FMA fall from 2 to 1.25.
constexpr int COARSE_TILE = GM_MATMUL_COARSENED_TILE, COARSE_ROWS = 8,
              COARSE = COARSE_TILE / COARSE_ROWS;

__device__ __forceinline__ void coarsened(float (&As)[COARSE_TILE][COARSE_TILE],
                                          float (&Bs)[COARSE_TILE][COARSE_TILE],
                                          const float *__restrict__ A,
                                          const float *__restrict__ B, float *__restrict__ C,
                                          int M, int N, int K)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * COARSE_TILE + ty;
    const int col = blockIdx.x * COARSE_TILE + tx;
    float acc[COARSE] = {};
    for (int k0 = 0; k0 < K; k0 += COARSE_TILE) {
#pragma unroll
        for (int i = 0; i < COARSE; ++i) {
            const int r = row0 + i * COARSE_ROWS, kb = k0 + ty + i * COARSE_ROWS;
            As[ty + i * COARSE_ROWS][tx] =
                (r < M && k0 + tx < K) ? A[(size_t)r * K + k0 + tx] : 0.0f;
            Bs[ty + i * COARSE_ROWS][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < COARSE_TILE; ++k) {
            const float b = Bs[k][tx];
#pragma unroll
            for (int i = 0; i < COARSE; ++i)
                acc[i] += As[ty + i * COARSE_ROWS][k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < COARSE; ++i) {
        const int r = row0 + i * COARSE_ROWS;
        if (r < M && col < N)
            C[(size_t)r * N + col] = acc[i];
    }
}

// register_tiled (2-D register blocking): a 64 x 64 tile of C per block of
// 16 x 16 threads, each thread a 4 x 4 block of it in registers.  Per k step a
// thread reads 4 A values (one float4, A stored transposed in shared memory)
// and 4 B values (one float4) and does 16 FMAs: an outer product, 8 shared
// floats per 16 FMAs instead of 2 per 1.  Tiles of A and B that lie inside
// the matrices, with rows 16-byte aligned, come in by float4 loads.
constexpr int RT_BM = GM_MATMUL_REGISTER_TILED_TILE, RT_BN = GM_MATMUL_REGISTER_TILED_TILE,
              RT_BK = 16, RT_T = 4, RT_PAD = 4;

__device__ __forceinline__ bool aligned16(const float *p)
{
    return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

__device__ __forceinline__ void register_tiled(float (&As)[RT_BK][RT_BM + RT_PAD],
                                               float (&Bs)[RT_BK][RT_BN],
                                               const float *__restrict__ A,
                                               const float *__restrict__ B,
                                               float *__restrict__ C, int M, int N, int K)
{
    const int tid = threadIdx.y * 16 + threadIdx.x;
    const int bm = blockIdx.y * RT_BM, bn = blockIdx.x * RT_BN;
    // loads: A as 64 rows x 4 float4 (r, 4c), B as 16 rows x 16 float4 (r, 4c)
    const int ar = tid / 4, ac = (tid % 4) * 4;
    const int br = tid / 16, bc = (tid % 16) * 4;
    const bool vec_a = (K % 4) == 0 && aligned16(A), vec_b = (N % 4) == 0 && aligned16(B);
    float acc[RT_T][RT_T] = {};
    for (int k0 = 0; k0 < K; k0 += RT_BK) {
        {   // A[bm + ar][k0 + ac .. + 3] -> As[ac + j][ar] (transposed)
            const int r = bm + ar, k = k0 + ac;
            float v[4];
            if (vec_a && r < M && k + 3 < K) {
                const float4 f = *reinterpret_cast<const float4 *>(A + (size_t)r * K + k);
                v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    v[j] = (r < M && k + j < K) ? A[(size_t)r * K + k + j] : 0.0f;
            }
#pragma unroll
            for (int j = 0; j < 4; ++j)
                As[ac + j][ar] = v[j];
        }
        {   // B[k0 + br][bn + bc .. + 3] -> Bs[br][bc .. + 3]
            const int k = k0 + br, c = bn + bc;
            float4 f;
            if (vec_b && k < K && c + 3 < N) {
                f = *reinterpret_cast<const float4 *>(B + (size_t)k * N + c);
            } else {
                f.x = (k < K && c < N) ? B[(size_t)k * N + c] : 0.0f;
                f.y = (k < K && c + 1 < N) ? B[(size_t)k * N + c + 1] : 0.0f;
                f.z = (k < K && c + 2 < N) ? B[(size_t)k * N + c + 2] : 0.0f;
                f.w = (k < K && c + 3 < N) ? B[(size_t)k * N + c + 3] : 0.0f;
            }
            *reinterpret_cast<float4 *>(&Bs[br][bc]) = f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < RT_BK; ++k) {
            const float4 a = *reinterpret_cast<const float4 *>(&As[k][threadIdx.y * RT_T]);
            const float4 b = *reinterpret_cast<const float4 *>(&Bs[k][threadIdx.x * RT_T]);
            const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < RT_T; ++i)
#pragma unroll
                for (int j = 0; j < RT_T; ++j)
                    acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < RT_T; ++i) {
        const int r = bm + threadIdx.y * RT_T + i;
        const int c = bn + threadIdx.x * RT_T;
        if (r >= M)
            continue;
        float *out = C + (size_t)r * N + c;
        if ((N % 4) == 0 && aligned16(C) && c + 3 < N) {
            *reinterpret_cast<float4 *>(out) = make_float4(acc[i][0], acc[i][1], acc[i][2],
                                                           acc[i][3]);
        } else {
#pragma unroll
            for (int j = 0; j < RT_T; ++j)
                if (c + j < N)
                    out[j] = acc[i][j];
        }
    }
}

// cp.async (sm_80 and newer: global -> shared memory without registers), for warptiled
// and mma; below sm_80 a plain load and store.
__device__ __forceinline__ void cp_async16(float *smem, const float *gmem, bool full)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(full ? 16 : 0));
#else
    *reinterpret_cast<float4 *>(smem) =
        full ? *reinterpret_cast<const float4 *>(gmem) : make_float4(0.f, 0.f, 0.f, 0.f);
#endif
}

__device__ __forceinline__ void cp_async4(float *smem, const float *gmem, bool full)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(full ? 4 : 0));
#else
    *smem = full ? *gmem : 0.0f;
#endif
}

__device__ __forceinline__ void cp_async_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

__device__ __forceinline__ void cp_async_wait_all()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// warptiled: block, warp and thread tiles, cp.async double buffering -- its body,
// warptiled(), in its own file.
#include "matmul_warptiled.cuh"

// mma: tensor cores (mma.sync, TF32 in, FP32 accumulate) fed by a 3-stage cp.async
// pipeline through swizzled shared memory -- its kernel, matmul_mma, in its own file.
#include "matmul_mma.cuh"

// wgmma: the Hopper path (wgmma.mma_async fed by the tensor copy on mbarriers), its
// kernel matmul_wgmma in its own file.
#include "matmul_wgmma.cuh"

// The warptiled configurations by tile (BM = BN): 128 -> 8 warps of 64 x 32,
// 8 x 8 outputs per lane; 64 -> 4 warps of 32 x 32, 4 x 8 per lane.  BK = 16.
template <int TILE> struct WtCfg;
template <> struct WtCfg<128> { using W = Warptiled<128, 128, 16, 64, 32>; static constexpr int WM = 64, WN = 32; };
template <> struct WtCfg<64> { using W = Warptiled<64, 64, 16, 32, 32>; static constexpr int WM = 32, WN = 32; };

// One kernel per (variant, tile): VARIANT is a gm_matmul_variant; naive
// ignores TILE (its blocks are tile x tile threads all the same), coarsened
// and register_tiled have their own fixed tiles (TILE 0).
template <int VARIANT, int TILE>
__global__ void matmul_kernel(const float *__restrict__ A, const float *__restrict__ B,
                              float *__restrict__ C, int M, int N, int K, gm_matmul_split)
{
    if constexpr (VARIANT == GM_MATMUL_NAIVE) {
        naive(A, B, C, M, N, K);
    } else if constexpr (VARIANT == GM_MATMUL_TILED) {
        __shared__ float As[TILE][TILE];
        __shared__ float Bs[TILE][TILE];
        tiled<TILE>(As, Bs, A, B, C, M, N, K);
    } else if constexpr (VARIANT == GM_MATMUL_PREFETCH) {
        __shared__ float As[2][TILE][TILE];
        __shared__ float Bs[2][TILE][TILE];
        prefetch<TILE>(As, Bs, A, B, C, M, N, K);
    } else if constexpr (VARIANT == GM_MATMUL_COARSENED) {
        __shared__ float As[COARSE_TILE][COARSE_TILE];
        __shared__ float Bs[COARSE_TILE][COARSE_TILE];
        coarsened(As, Bs, A, B, C, M, N, K);
    } else {
        __shared__ __align__(16) float As[RT_BK][RT_BM + RT_PAD];
        __shared__ __align__(16) float Bs[RT_BK][RT_BN];
        register_tiled(As, Bs, A, B, C, M, N, K);
    }
}

// warptiled needs __launch_bounds__ (2 blocks of 256 threads per SM: at most 128
// registers per thread; without it ptxas takes 147 and the kernel runs 8% slower),
// which the kernels above must not get (it changes their register allocation):
// the same name with a third template argument, the blocks per SM it is built for.
// SPLIT: built for a launch with the split tail (sp as given); without it sp is taken
// as empty, so the compiler drops the tile arithmetic of the slices.  Not for the
// instructions saved: with the split code in it, the kernel's k loop got other registers
// and ran at 0.82x cuBLAS at 4096^3 where the kernel without it runs at 0.91x (H100).
// PADDED: built for operands the launcher padded (rows sp.lda, sp.ldb floats apart);
// without it K and N.  The pitches come in as values the compiler cannot fold: with
// B's 4-byte path taken out instead (its pitch round4(N) in the code), the k loop got
// other registers again and ran 8% slower at 4096^3 (H100); these kernels' k loops have
// the same FFMAs, register for register, as the one for aligned rows.
template <int VARIANT, int TILE, int BLOCKS_PER_SM, bool SPLIT, bool PADDED>
__global__ void __launch_bounds__(WtCfg<TILE>::W::THREADS, BLOCKS_PER_SM)
    matmul_kernel(const float *__restrict__ A, const float *__restrict__ B,
                  float *__restrict__ C, int M, int N, int K, gm_matmul_split sp)
{
    static_assert(VARIANT == GM_MATMUL_WARPTILED, "the launch-bounded kernel is warptiled's");
    __shared__ __align__(16) float As[2][16][TILE + 4];
    __shared__ __align__(16) float Bs[2][16][TILE];
    // a split call's whole tiles: the first sp.full of C's tiles in row-major order, on
    // whole rows of blocks; the blocks past them (in the last row) have nothing to do
    if (!SPLIT && sp.full > 0 && (int)(blockIdx.y * gridDim.x + blockIdx.x) >= sp.full)
        return;
    warptiled<TILE, TILE, 16, WtCfg<TILE>::WM, WtCfg<TILE>::WN>(
        As, Bs, A, B, C, M, N, K, PADDED ? sp.lda : K, PADDED ? sp.ldb : N,
        SPLIT ? sp : gm_matmul_split{nullptr, 0, 1, 0, 0, 0});
}

// warptiled's split tail, second step: element e of the split tiles (tile full + e /
// tile^2, row and column of it from e % tile^2) is the sum of its `splits` slices in ws,
// added in slice order (the result does not depend on which block finished first).
__global__ void matmul_split_sum(const float *__restrict__ ws, float *__restrict__ C, int M,
                                 int N, int tile, int splits, int full, int tiles_n,
                                 long long elements)
{
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= elements)
        return;
    const long long per = (long long)tile * tile, i = e / per;
    const int local = (int)(e % per), t = full + (int)i;
    const int r = (t / tiles_n) * tile + local / tile, c = (t % tiles_n) * tile + local % tile;
    if (r >= M || c >= N)
        return;
    const float *w = ws + (size_t)i * splits * per + local;
    float sum = 0.0f;
    for (int z = 0; z < splits; ++z)
        sum += w[(size_t)z * per];
    C[(size_t)r * N + c] = sum;
}

using matmul_fn = void (*)(const float *, const float *, float *, int, int, int, gm_matmul_split);

// The one selector: the launcher runs what it returns, attributes read it.
static matmul_fn select_kernel(const gm_matmul_params *p)
{
    switch (p->variant) {
    case GM_MATMUL_NAIVE:
        return matmul_kernel<GM_MATMUL_NAIVE, 0>;
    case GM_MATMUL_TILED:
        return gm_select<8, 16, 32>(p->tile ? p->tile : 16, [](auto t) -> matmul_fn {
            return matmul_kernel<GM_MATMUL_TILED, decltype(t)::value>;
        });
    case GM_MATMUL_PREFETCH:
        return gm_select<16, 32>(p->tile ? p->tile : 16, [](auto t) -> matmul_fn {
            return matmul_kernel<GM_MATMUL_PREFETCH, decltype(t)::value>;
        });
    case GM_MATMUL_COARSENED:
        return matmul_kernel<GM_MATMUL_COARSENED, 0>;
    case GM_MATMUL_REGISTER_TILED:
        return matmul_kernel<GM_MATMUL_REGISTER_TILED, 0>;
    case GM_MATMUL_WARPTILED: {
        // 64, else the default 128: csrc/matmul.c refuses other tiles before a launch,
        // and kernel_attributes() passes the family's default tile (16) when given none;
        // the split tail's kernel where gm_matmul launches one (see matmul_kernel)
        const bool split = p->splits > 1 && p->ws != nullptr, padded = p->pad != 0;
        return gm_select<64, 128>(
            p->tile == 64 ? 64 : GM_MATMUL_WARPTILED_TILE, [split, padded](auto t) -> matmul_fn {
                constexpr int T = decltype(t)::value, V = GM_MATMUL_WARPTILED;
                if (padded)
                    return split ? matmul_kernel<V, T, 2, true, true>
                                 : matmul_kernel<V, T, 2, false, true>;
                return split ? matmul_kernel<V, T, 2, true, false>
                             : matmul_kernel<V, T, 2, false, false>;
            });
    }
    case GM_MATMUL_MMA:   // their own arguments: gm_matmul_kernel and gm_matmul
    case GM_MATMUL_WGMMA:
        return nullptr;
    }
    return nullptr;
}

// mma runs on compute capability 8.0 and newer only (csrc/matmul.c refuses older GPUs
// first, naming the capability), and takes 96 KiB of dynamic shared memory, past the
// 48 KiB a kernel gets without opting in: both settled once, before its first launch.
// Kernel k opted in to `smem` bytes of dynamic shared memory once, on a GPU of compute
// capability `major` or newer (an older one: cudaErrorNotSupported).
static cudaError_t opt_in(const void *k, size_t smem, int major, bool &ready)
{
    if (ready)
        return cudaSuccess;
    int dev = 0, have = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&have, cudaDevAttrComputeCapabilityMajor, dev);
    if (err == cudaSuccess && have < major)
        return cudaErrorNotSupported;
    if (err == cudaSuccess)
        err = gm_opt_in_smem(k, smem);
    ready = err == cudaSuccess;
    return err;
}

static cudaError_t mma_ready()
{
    static bool ready = false;
    return opt_in((const void *)matmul_mma, MMA_SMEM, 8, ready);
}

// wgmma's 193 KiB (csrc/matmul.c refuses GPUs other than compute capability 9.0 first)
static cudaError_t wgmma_ready()
{
    static bool ready = false;
    return opt_in((const void *)matmul_wgmma, WG_SMEM, 9, ready);
}

// The launcher's padded copy of one operand (mma, wgmma, warptiled): dst[r][c] =
// src[r][c] for c < cols and 0 for cols <= c < pitch (pitch: cols rounded up to 4's).
// Block (x, y) copies columns 1024 x .. 1024 x + 1023 of rows y, y + gridDim.y, ...:
// thread t column 1024 x + 256 j + t, j = 0..3, all four loads before the stores
// (4-byte accesses: src rows are off the 16-byte grid; a warp's are 128 bytes in a
// row).  One pass, where cudaMemcpy2DAsync and cudaMemset2DAsync took two.
constexpr int PAD_THREADS = 256, PAD_COLS = 4 * PAD_THREADS;

__global__ void __launch_bounds__(PAD_THREADS)
    matmul_pad_rows(const float *__restrict__ src, float *__restrict__ dst, int rows, int cols,
                    int pitch)
{
    const int c0 = blockIdx.x * PAD_COLS + threadIdx.x;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const float *s = src + (size_t)r * cols;
        float *d = dst + (size_t)r * pitch;
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = c0 + j * PAD_THREADS;
            v[j] = c < cols ? __ldg(s + c) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = c0 + j * PAD_THREADS;
            if (c < pitch)
                d[c] = v[j];
        }
    }
}

static cudaError_t pad_copy(const float *src, float *dst, size_t rows, size_t cols,
                            cudaStream_t stream)
{
    const size_t pitch = (cols + 3) / 4 * 4;
    const dim3 grid((unsigned)((pitch + PAD_COLS - 1) / PAD_COLS),
                    (unsigned)(rows < 65535 ? rows : 65535));
    matmul_pad_rows<<<grid, PAD_THREADS, 0, stream>>>(src, dst, (int)rows, (int)cols, (int)pitch);
    return cudaGetLastError();
}

// The operands whose rows are off the 16-byte grid (p->pad says which) copied into ws
// (p->ws, or past warptiled's slices) by matmul_pad_rows, rows padded with zeros to a
// multiple of 4 floats (A: M x round4(K) first, then B: K x round4(N) from the next
// 256-byte boundary); *a, *b, *lda, *ldb say where each operand is read then.  mma's
// 16-byte copies read the zeros (warptiled's too); wgmma's tensor maps end at K and N.
static cudaError_t pad_rows(const gm_matmul_params *p, float *ws, const float **a,
                            size_t *lda, const float **b, size_t *ldb, cudaStream_t stream)
{
    const size_t M = (size_t)p->m, N = (size_t)p->n, K = (size_t)p->k;
    const size_t kp = (K + 3) / 4 * 4, np = (N + 3) / 4 * 4;
    cudaError_t err = cudaSuccess;
    *a = p->a, *b = p->b, *lda = K, *ldb = N;
    if ((p->pad & 1) && K > 0) { // B's copy from the next 256 bytes on (as the model has it)
        err = pad_copy(p->a, ws, M, K, stream);
        *a = ws, *lda = kp, ws += (M * kp + 63) / 64 * 64;
    }
    if ((p->pad & 2) && K > 0 && err == cudaSuccess) {
        err = pad_copy(p->b, ws, K, N, stream);
        *b = ws, *ldb = np;
    }
    return err;
}

// wgmma: the operands (padded first where p->pad says so), their tensor maps, one launch.
static cudaError_t launch_wgmma(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream)
{
    cudaError_t err = wgmma_ready();
    if (err != cudaSuccess)
        return err;
    const size_t M = (size_t)p->m, N = (size_t)p->n, K = (size_t)p->k;
    const float *a, *b;
    size_t lda, ldb;
    err = pad_rows(p, p->ws, &a, &lda, &b, &ldb, stream);
    CUtensorMap map_a, map_b;
    memset(&map_a, 0, sizeof map_a);
    memset(&map_b, 0, sizeof map_b);
    if (K > 0 && err == cudaSuccess) // A: K x M boxes of 32 x 256; B: N x K boxes of 32 x 32
        err = gm_encode_2d(&map_a, a, K, M, lda * 4, WG_BK, WG_BM, true);
    if (K > 0 && err == cudaSuccess)
        err = gm_encode_2d(&map_b, b, N, K, ldb * 4, 32, WG_BK, true);
    if (err != cudaSuccess)
        return err;
    *dims = gm_dims{{(unsigned)((N + WG_BN - 1) / WG_BN), (unsigned)((M + WG_BM - 1) / WG_BM), 1},
                    {WG_THREADS, 1, 1}, WG_SMEM};
    return gm_run(matmul_wgmma, dims, WG_SMEM, stream, map_a, map_b, p->c, p->m, p->n, p->k);
}

// warptiled: the operands padded into ws first where p->pad says so (rows off the 16-byte
// grid: the kernel for them reads the copies by float4 loads and 16-byte cp.async, rows
// lda and ldb apart), then the launch, or with the split tail: the whole
// tiles by the kernel without the split (a 2-D grid of their own, the blocks past them
// exit: that kernel runs at 0.91x cuBLAS at 4096^3 on an H100 where the split kernel runs
// at 0.83x, see matmul_kernel), then the slices on a 1-D grid (into ws, before the padded
// B), then the sums.
static cudaError_t launch_warptiled(const gm_matmul_params *p, gm_dims *dims,
                                    cudaStream_t stream)
{
    const unsigned int w = p->tile == 64 ? 64 : 128;
    const unsigned int threads = w == 64 ? WtCfg<64>::W::THREADS : WtCfg<128>::W::THREADS;
    const size_t smem = w == 64 ? WtCfg<64>::W::SMEM : WtCfg<128>::W::SMEM;
    const unsigned int tn = (p->n + w - 1) / w, tm = (p->m + w - 1) / w;
    const long long tail = (long long)tn * tm - p->full;
    // the padded copies after the slices (their blocks of tile^2 floats keep them aligned)
    const float *a, *b;
    size_t lda, ldb;
    float *pads = p->ws + (p->splits > 1 ? (size_t)tail * p->splits * w * w : 0);
    cudaError_t err = pad_rows(p, pads, &a, &lda, &b, &ldb, stream);
    if (err != cudaSuccess)
        return err;
    if (p->splits <= 1) {
        *dims = gm_dims{{tn, tm, 1}, {threads, 1, 1}, smem};
        const gm_matmul_split none = {nullptr, 0, 1, 0, (int)lda, (int)ldb};
        return gm_run(select_kernel(p), dims, 0, stream, a, b, p->c, p->m, p->n, p->k, none);
    }
    if (p->full > 0) {
        gm_matmul_params q = *p;
        q.splits = 1;
        const gm_dims whole = {{tn, (unsigned int)((p->full + tn - 1) / tn), 1},
                               {threads, 1, 1}, smem};
        const gm_matmul_split first = {nullptr, p->full, 1, (int)tn, (int)lda, (int)ldb};
        err = gm_run(select_kernel(&q), &whole, 0, stream, a, b, p->c, p->m, p->n, p->k,
                     first);
    }
    if (err != cudaSuccess)
        return err;
    *dims = gm_dims{{(unsigned int)(tail * p->splits), 1, 1}, {threads, 1, 1}, smem};
    const gm_matmul_split sp = {p->ws, p->full, p->splits, (int)tn, (int)lda, (int)ldb};
    err = gm_run(select_kernel(p), dims, 0, stream, a, b, p->c, p->m, p->n, p->k, sp);
    if (err != cudaSuccess)
        return err;
    const long long elements = tail * w * w;
    const gm_dims sum = {{(unsigned int)((elements + 255) / 256), 1, 1}, {256, 1, 1}, 0};
    return gm_run(matmul_split_sum, &sum, 0, stream, (const float *)p->ws, p->c, p->m, p->n,
                  (int)w, p->splits, p->full, (int)tn, elements);
}

extern "C" const void *gm_matmul_kernel(const gm_matmul_params *p)
{
    if (p->variant == GM_MATMUL_WGMMA) { // its own arguments: not a matmul_fn
        if (wgmma_ready() != cudaSuccess)
            (void)cudaGetLastError();
        return (const void *)matmul_wgmma;
    }
    // kernel_occupancy() asks with mma's 96 KiB: opt in first (an older GPU refuses;
    // its error is cleared here, the launch reports it)
    if (p->variant == GM_MATMUL_MMA) {
        if (mma_ready() != cudaSuccess)
            (void)cudaGetLastError();
        return (const void *)matmul_mma;
    }
    return (const void *)select_kernel(p);
}

extern "C" cudaError_t gm_matmul(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream)
{
    const unsigned int t = (unsigned int)(p->tile ? p->tile : 16);
    const unsigned int m = (unsigned int)p->m, n = (unsigned int)p->n;
    const gm_matmul_split none = {nullptr, 0, 1, 0, 0, 0};
    switch (p->variant) {
    case GM_MATMUL_COARSENED:
        *dims = gm_dims{{(n + COARSE_TILE - 1) / COARSE_TILE, (m + COARSE_TILE - 1) / COARSE_TILE, 1},
                        {COARSE_TILE, COARSE_ROWS, 1}, 2 * COARSE_TILE * COARSE_TILE * sizeof(float)};
        break;
    case GM_MATMUL_REGISTER_TILED:
        *dims = gm_dims{{(n + RT_BN - 1) / RT_BN, (m + RT_BM - 1) / RT_BM, 1}, {16, 16, 1},
                        (RT_BK * (RT_BM + RT_PAD) + RT_BK * RT_BN) * sizeof(float)};
        break;
    case GM_MATMUL_WARPTILED:
        return launch_warptiled(p, dims, stream);
    case GM_MATMUL_WGMMA:
        return launch_wgmma(p, dims, stream);
    case GM_MATMUL_MMA: { // the operands padded first where p->pad says so, one launch
        const float *a, *b;
        size_t lda, ldb;
        cudaError_t err = mma_ready();
        if (err == cudaSuccess)
            err = pad_rows(p, p->ws, &a, &lda, &b, &ldb, stream);
        if (err != cudaSuccess)
            return err;
        *dims = gm_dims{{(n + MMA_BN - 1) / MMA_BN, (m + MMA_BM - 1) / MMA_BM, 1},
                        {MMA_THREADS, 1, 1}, MMA_SMEM};
        return gm_run(matmul_mma, dims, MMA_SMEM, stream, a, b, p->c, p->m, p->n, p->k,
                      (int)lda, (int)ldb);
    }
    default: {
        const size_t bufs = p->variant == GM_MATMUL_TILED ? 2 : p->variant == GM_MATMUL_PREFETCH ? 4 : 0;
        *dims = gm_dims{{(n + t - 1) / t, (m + t - 1) / t, 1}, {t, t, 1}, bufs * t * t * sizeof(float)};
    }
    }
    return gm_run(select_kernel(p), dims, 0, stream, p->a, p->b, p->c, p->m, p->n, p->k, none);
}
