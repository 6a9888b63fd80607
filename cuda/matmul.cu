// matmul.cu -- C[M,N] = A[M,K] @ B[K,N], float32, row-major.
// The first memory lesson: the naive kernel reads 2K floats from global
// memory per 2K FLOPs (a compute-to-global-memory-access ratio of 1); the
// tiled kernel stages TILE x TILE blocks of A and B in shared memory so each
// global float is read once per tile and reused TILE times, cutting global
// traffic by the tile width.
#include "gm_launch.cuh"

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

// One kernel per (variant, tile): VARIANT is a gm_matmul_variant; naive
// ignores TILE (its blocks are tile x tile threads all the same).
template <int VARIANT, int TILE>
__global__ void matmul_kernel(const float *__restrict__ A, const float *__restrict__ B,
                              float *__restrict__ C, int M, int N, int K)
{
    if constexpr (VARIANT == GM_MATMUL_NAIVE) {
        naive(A, B, C, M, N, K);
    } else {
        __shared__ float As[TILE][TILE];
        __shared__ float Bs[TILE][TILE];
        tiled<TILE>(As, Bs, A, B, C, M, N, K);
    }
}

using matmul_fn = void (*)(const float *, const float *, float *, int, int, int);

// The one selector: the launcher runs what it returns, attributes read it.
static matmul_fn select_kernel(const gm_matmul_params *p)
{
    if (p->variant == GM_MATMUL_NAIVE)
        return matmul_kernel<GM_MATMUL_NAIVE, 0>;
    return gm_select<8, 16, 32>(p->tile ? p->tile : 16, [](auto t) -> matmul_fn {
        return matmul_kernel<GM_MATMUL_TILED, decltype(t)::value>;
    });
}

extern "C" const void *gm_matmul_kernel(const gm_matmul_params *p)
{
    return (const void *)select_kernel(p);
}

extern "C" cudaError_t gm_matmul(const gm_matmul_params *p, gm_dims *dims, cudaStream_t stream)
{
    const unsigned int t = (unsigned int)p->tile;
    const size_t smem = p->variant == GM_MATMUL_TILED ? 2 * t * t * sizeof(float) : 0;
    *dims = gm_dims{{(p->n + t - 1) / t, (p->m + t - 1) / t, 1}, {t, t, 1}, smem};
    return gm_run(select_kernel(p), dims, 0, stream, p->a, p->b, p->c, p->m, p->n, p->k);
}
