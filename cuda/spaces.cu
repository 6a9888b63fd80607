// spaces.cu -- where a variable lives, and what that costs.
//   broadcast      the constant cache serves one address per warp per pass:
//                  d distinct addresses in a warp cost d passes; the read-only
//                  cache serves any 32 words of one 128-byte line in one.
//   private_array  a per-thread array indexed at run time lives in local
//                  memory (off-chip, cached in L1/L2); with compile-time
//                  indices the same array lives in registers.
//   lifetime       __device__ variables live as long as the application,
//                  __shared__ ones as long as their block, __constant__ ones
//                  are set from the host and persist.
//   register_cap   one kernel built with several __launch_bounds__: fewer
//                  registers per thread, more resident warps, spills to local.
//   divergence     a branch on threadIdx.x % 2 splits every warp (both paths
//                  run, one after the other); a branch on the warp index splits none.
#include "gm_kernels.h"

static cudaError_t launched(void)
{
    return cudaGetLastError();
}

static unsigned int blocks_for(long long n, int block)
{
    return (unsigned int)((n + block - 1) / block);
}

// ---- broadcast ------------------------------------------------------------
__constant__ float c_broadcast_table[GM_BROADCAST_TABLE];

// Lane l reads word (l % distinct) + 32 i of the table at step i: a warp
// touches exactly `distinct` different words per load.  Constant variant:
// the index is known only at run time, so this is an LDC from the constant
// bank, serialised over the distinct words.  Read-only variant: LDG through
// the read-only data cache; the words sit in one 128-byte line.
template <bool READONLY>
__global__ void broadcast_kernel(const float *__restrict__ table, float *__restrict__ out,
                                 long long n, int distinct, int iters)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const int word = (threadIdx.x & 31) % distinct;
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
        const int idx = (word + 32 * i) & (GM_BROADCAST_TABLE - 1);
        acc += READONLY ? __ldg(table + idx) : c_broadcast_table[idx];
    }
    out[t] = acc;
}

extern "C" cudaError_t gm_broadcast_set_constant(const float *table, int count)
{
    return cudaMemcpyToSymbol(c_broadcast_table, table, (size_t)count * sizeof(float));
}

extern "C" const void *gm_broadcast_kernel(int readonly)
{
    return readonly ? (const void *)broadcast_kernel<true> : (const void *)broadcast_kernel<false>;
}

template <bool READONLY>
static cudaError_t launch_broadcast(const gm_broadcast_params *p, gm_dims *dims, cudaStream_t s)
{
    const unsigned int grid = blocks_for(p->n, p->block);
    *dims = gm_dims{{grid, 1, 1}, {(unsigned int)p->block, 1, 1}, 0};
    broadcast_kernel<READONLY><<<grid, p->block, 0, s>>>(p->table, p->out, p->n, p->distinct,
                                                         p->iters);
    return launched();
}

extern "C" cudaError_t gm_broadcast_constant(const gm_broadcast_params *p, gm_dims *dims,
                                             cudaStream_t stream)
{
    return launch_broadcast<false>(p, dims, stream);
}

extern "C" cudaError_t gm_broadcast_readonly(const gm_broadcast_params *p, gm_dims *dims,
                                             cudaStream_t stream)
{
    return launch_broadcast<true>(p, dims, stream);
}

// ---- private_array ----------------------------------------------------------
// Thread t counts x[t], x[t + T], x[t + 2T], ... into 16 bins of width 1/16
// (bin = clamp(floor(16 x), 0, 15); NaN counts in bin 0).
__device__ __forceinline__ int bin_of(float x)
{
    return (int)fminf(fmaxf(floorf(x * (float)GM_PRIVATE_BINS), 0.0f),
                      (float)(GM_PRIVATE_BINS - 1));
}

// LOCAL: h[b]++ with b known only at run time.  Registers cannot be indexed,
// so the compiler places h in local memory (the stack frame: STL/LDL).
// REGISTERS: the same counts with compile-time indices only -- every bin
// compares and adds -- so h stays in 16 registers.
template <bool REGISTERS>
__global__ void private_array_kernel(const float *__restrict__ in, int *__restrict__ out,
                                     long long n, int threads)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    int h[GM_PRIVATE_BINS];
#pragma unroll
    for (int b = 0; b < GM_PRIVATE_BINS; ++b)
        h[b] = 0;
    for (long long i = t; i < n; i += threads) {
        const int bin = bin_of(in[i]);
        if (REGISTERS) {
#pragma unroll
            for (int b = 0; b < GM_PRIVATE_BINS; ++b)
                h[b] += (bin == b);
        } else {
            h[bin] += 1;
        }
    }
#pragma unroll
    for (int b = 0; b < GM_PRIVATE_BINS; ++b)
        out[(long long)b * threads + t] = h[b];
}

extern "C" const void *gm_private_array_kernel(int registers)
{
    return registers ? (const void *)private_array_kernel<true>
                     : (const void *)private_array_kernel<false>;
}

template <bool REGISTERS>
static cudaError_t launch_private(const gm_private_array_params *p, gm_dims *dims, cudaStream_t s)
{
    const unsigned int grid = blocks_for(p->threads, p->block);
    *dims = gm_dims{{grid, 1, 1}, {(unsigned int)p->block, 1, 1}, 0};
    private_array_kernel<REGISTERS><<<grid, p->block, 0, s>>>(p->in, p->out, p->n, p->threads);
    return launched();
}

extern "C" cudaError_t gm_private_array_local(const gm_private_array_params *p, gm_dims *dims,
                                              cudaStream_t stream)
{
    return launch_private<false>(p, dims, stream);
}

extern "C" cudaError_t gm_private_array_registers(const gm_private_array_params *p,
                                                  gm_dims *dims, cudaStream_t stream)
{
    return launch_private<true>(p, dims, stream);
}

// ---- lifetime -----------------------------------------------------------------
// Grid scope, application lifetime: every block of every launch adds to it.
__device__ unsigned long long g_lifetime_threads;
// Grid scope, application lifetime, read-only in kernels: set from the host.
__constant__ int c_lifetime_value;

// Each block counts its threads in a __shared__ variable.  Shared memory is
// the block's and lives only as long as the block: every launch finds it
// undefined, so thread 0 zeroes it first -- the count never carries over.
// The block then adds its count to the __device__ counter, which does.
__global__ void lifetime_kernel(long long *__restrict__ out, int blocks)
{
    __shared__ int s_count;
    if (threadIdx.x == 0)
        s_count = 0;
    __syncthreads();
    atomicAdd(&s_count, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long before = atomicAdd(&g_lifetime_threads,
                                                    (unsigned long long)s_count);
        out[blockIdx.x] = s_count;
        out[blocks + blockIdx.x] = (long long)(before + (unsigned long long)s_count);
        out[2 * blocks + blockIdx.x] = c_lifetime_value;
    }
}

extern "C" cudaError_t gm_lifetime_set_constant(int value)
{
    return cudaMemcpyToSymbol(c_lifetime_value, &value, sizeof value);
}

extern "C" cudaError_t gm_lifetime_set_counter(unsigned long long value)
{
    return cudaMemcpyToSymbol(g_lifetime_threads, &value, sizeof value);
}

extern "C" cudaError_t gm_lifetime_counter_address(void **ptr, size_t *nbytes)
{
    *nbytes = sizeof(unsigned long long);
    return cudaGetSymbolAddress(ptr, g_lifetime_threads);
}

extern "C" const void *gm_lifetime_kernel(void)
{
    return (const void *)lifetime_kernel;
}

extern "C" cudaError_t gm_lifetime(const gm_lifetime_params *p, gm_dims *dims,
                                   cudaStream_t stream)
{
    *dims = gm_dims{{(unsigned int)p->blocks, 1, 1}, {(unsigned int)p->block, 1, 1}, sizeof(int)};
    lifetime_kernel<<<p->blocks, p->block, 0, stream>>>(p->out, p->blocks);
    return launched();
}

// ---- register_cap ---------------------------------------------------------------
// Each thread keeps GM_REGCAP_LIVE floats live across a run-time loop (all
// indices compile-time, so they want registers).  __launch_bounds__(256, B)
// promises B resident blocks of 256 threads per SM, so the compiler must fit
// in 65536 / (256 B) registers per thread: B = 1 leaves it free, B = 8 caps
// it at 32 and whatever does not fit spills to local memory.
template <int MIN_BLOCKS>
__global__ void __launch_bounds__(GM_REGCAP_MAX_BLOCK, MIN_BLOCKS)
    register_cap_kernel(const float *__restrict__ in, float *__restrict__ out, long long n,
                        int rounds)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float v[GM_REGCAP_LIVE];
#pragma unroll
    for (int j = 0; j < GM_REGCAP_LIVE; ++j)
        v[j] = in[(long long)j * n + t];
    for (int r = 0; r < rounds; ++r) {
        // v[j] <- v[j] / 2 + v[j+1] / 4 (v[0] already new for the last one):
        // products by powers of two are exact, so the result does not depend
        // on whether the compiler fuses them.
#pragma unroll
        for (int j = 0; j < GM_REGCAP_LIVE; ++j)
            v[j] = v[j] * 0.5f + v[(j + 1) % GM_REGCAP_LIVE] * 0.25f;
    }
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < GM_REGCAP_LIVE; ++j)
        acc += v[j];
    out[t] = acc;
}

extern "C" const void *gm_register_cap_kernel(int min_blocks)
{
    switch (min_blocks) {
    case 1: return (const void *)register_cap_kernel<1>;
    case 2: return (const void *)register_cap_kernel<2>;
    case 4: return (const void *)register_cap_kernel<4>;
    case 6: return (const void *)register_cap_kernel<6>;
    case 8: return (const void *)register_cap_kernel<8>;
    default: return nullptr;
    }
}

extern "C" cudaError_t gm_register_cap(const gm_register_cap_params *p, gm_dims *dims,
                                       cudaStream_t stream)
{
    const void *fn = gm_register_cap_kernel(p->min_blocks);
    if (fn == nullptr)
        return cudaErrorInvalidValue; /* validated in csrc; never reached */
    const unsigned int grid = blocks_for(p->n, p->block);
    *dims = gm_dims{{grid, 1, 1}, {(unsigned int)p->block, 1, 1}, 0};
    const float *in = p->in;
    float *out = p->out;
    long long n = p->n;
    int rounds = p->rounds;
    void *args[] = {(void *)&in, (void *)&out, (void *)&n, (void *)&rounds};
    const cudaError_t err = cudaLaunchKernel(fn, dim3(grid), dim3(p->block), args, 0, stream);
    const cudaError_t last = cudaGetLastError();
    return err != cudaSuccess ? err : last;
}

// ---- divergence -----------------------------------------------------------------
// Half the threads take each path, and both paths do the same work (iters
// dependent FMAs).  BY_WARP = false: odd and even lanes of every warp differ,
// so every warp runs both loops one after the other.  BY_WARP = true: whole
// warps agree, so each warp runs one loop.
template <bool BY_WARP>
__global__ void divergence_kernel(const float *__restrict__ in, float *__restrict__ out,
                                  long long n, int iters)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float x = in[t];
    const bool odd = BY_WARP ? ((threadIdx.x / 32) % 2) : (threadIdx.x % 2);
    if (odd) {
        for (int i = 0; i < iters; ++i)
            x = x * 0.5f + 1.0f;  // -> 2
    } else {
        for (int i = 0; i < iters; ++i)
            x = x * 0.25f + 3.0f; // -> 4
    }
    out[t] = x;
}

extern "C" const void *gm_divergence_kernel(int by_warp)
{
    return by_warp ? (const void *)divergence_kernel<true> : (const void *)divergence_kernel<false>;
}

template <bool BY_WARP>
static cudaError_t launch_divergence(const gm_divergence_params *p, gm_dims *dims, cudaStream_t s)
{
    const unsigned int grid = blocks_for(p->n, p->block);
    *dims = gm_dims{{grid, 1, 1}, {(unsigned int)p->block, 1, 1}, 0};
    divergence_kernel<BY_WARP><<<grid, p->block, 0, s>>>(p->in, p->out, p->n, p->iters);
    return launched();
}

extern "C" cudaError_t gm_divergence_odd_even(const gm_divergence_params *p, gm_dims *dims,
                                              cudaStream_t stream)
{
    return launch_divergence<false>(p, dims, stream);
}

extern "C" cudaError_t gm_divergence_warp(const gm_divergence_params *p, gm_dims *dims,
                                          cudaStream_t stream)
{
    return launch_divergence<true>(p, dims, stream);
}
