// spaces.cu -- where a variable lives, and what that costs.
//   thread_histogram   a per-thread array indexed at run time lives in local
//                      memory (off-chip, cached in L1/L2); with compile-time
//                      indices the same array lives in registers.
//   lifetimes          __device__ variables live as long as the application,
//                      __shared__ ones as long as their block, __constant__ ones
//                      are set from the host and persist.
//   register_pressure  one kernel built with several __launch_bounds__: fewer
//                      registers per thread, more resident warps, spills to local.
//   divergence         a branch on threadIdx.x % 2 splits every warp (both paths
//                      run, one after the other); a branch on the warp index splits none.
#include "gm_launch.cuh"

// ---- thread_histogram ----------------------------------------------------------
// Thread t counts x[t], x[t + T], x[t + 2T], ... into 16 bins of width 1/16
// (bin = clamp(floor(16 x), 0, 15); NaN counts in bin 0).
__device__ __forceinline__ int bin_of(float x)
{
    return (int)fminf(fmaxf(floorf(x * (float)GM_HISTOGRAM_BINS), 0.0f),
                      (float)(GM_HISTOGRAM_BINS - 1));
}

// VARIANT local: h[b]++ with b known only at run time.  Registers cannot be indexed,
// so the compiler places h in local memory (the stack frame: STL/LDL).
// registers: the same counts with compile-time indices only -- every bin
// compares and adds -- so h stays in 16 registers.
template <int VARIANT>
__global__ void thread_histogram_kernel(const float *__restrict__ in, int *__restrict__ out,
                                     long long n, int threads)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    int h[GM_HISTOGRAM_BINS];
#pragma unroll
    for (int b = 0; b < GM_HISTOGRAM_BINS; ++b)
        h[b] = 0;
    for (long long i = t; i < n; i += threads) {
        const int bin = bin_of(in[i]);
        if (VARIANT == GM_HISTOGRAM_REGISTERS) {
#pragma unroll
            for (int b = 0; b < GM_HISTOGRAM_BINS; ++b)
                h[b] += (bin == b);
        } else {
            h[bin] += 1;
        }
    }
#pragma unroll
    for (int b = 0; b < GM_HISTOGRAM_BINS; ++b)
        out[(long long)b * threads + t] = h[b];
}

using histogram_fn = void (*)(const float *, int *, long long, int);

static histogram_fn select_histogram(const gm_thread_histogram_params *p)
{
    return gm_select<GM_HISTOGRAM_LOCAL, GM_HISTOGRAM_REGISTERS>(
        p->variant, [](auto v) -> histogram_fn { return thread_histogram_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_thread_histogram_kernel(const gm_thread_histogram_params *p)
{
    return (const void *)select_histogram(p);
}

extern "C" cudaError_t gm_thread_histogram(const gm_thread_histogram_params *p, gm_dims *dims,
                                           cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->threads, p->block), p->block);
    return gm_run(select_histogram(p), dims, 0, stream, p->in, p->out, p->n, p->threads);
}

// ---- lifetimes ----------------------------------------------------------------
// Grid scope, application lifetime: every block of every launch adds to it.
__device__ unsigned long long g_lifetime_threads;
// Grid scope, application lifetime, read-only in kernels: set from the host.
__constant__ int c_lifetime_value;

// Each block counts its threads in a __shared__ variable.  Shared memory is
// the block's and lives only as long as the block: every launch finds it
// undefined, so thread 0 zeroes it first -- the count never carries over.
// The block then adds its count to the __device__ counter, which does.
__global__ void lifetimes_kernel(long long *__restrict__ out, int blocks)
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

extern "C" cudaError_t gm_lifetimes_set_constant(int value)
{
    return cudaMemcpyToSymbol(c_lifetime_value, &value, sizeof value);
}

extern "C" cudaError_t gm_lifetimes_set_counter(unsigned long long value)
{
    return cudaMemcpyToSymbol(g_lifetime_threads, &value, sizeof value);
}

extern "C" cudaError_t gm_lifetimes_counter_address(void **ptr, size_t *nbytes)
{
    *nbytes = sizeof(unsigned long long);
    return cudaGetSymbolAddress(ptr, g_lifetime_threads);
}

extern "C" const void *gm_lifetimes_kernel(const gm_lifetimes_params *)
{
    return (const void *)lifetimes_kernel;
}

extern "C" cudaError_t gm_lifetimes(const gm_lifetimes_params *p, gm_dims *dims,
                                    cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned int)p->blocks, p->block, sizeof(int));
    return gm_run(lifetimes_kernel, dims, 0, stream, p->out, p->blocks);
}

// ---- register_pressure------------------------------------------------------------
// Each thread keeps GM_REGCAP_LIVE floats live across a run-time loop (all
// indices compile-time, so they want registers).  __launch_bounds__(256, B)
// promises B resident blocks of 256 threads per SM, so the compiler must fit
// in 65536 / (256 B) registers per thread: B = 1 leaves it free, B = 8 caps
// it at 32 and whatever does not fit spills to local memory.  MIN_BLOCKS is
// the variant (gm_regcap_variant).
template <int MIN_BLOCKS>
__global__ void __launch_bounds__(GM_REGCAP_MAX_BLOCK, MIN_BLOCKS)
    register_pressure_kernel(const float *__restrict__ in, float *__restrict__ out, long long n,
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

using pressure_fn = void (*)(const float *, float *, long long, int);

static pressure_fn select_pressure(const gm_register_pressure_params *p)
{
    return gm_select<GM_REGCAP_UNCAPPED, GM_REGCAP_128, GM_REGCAP_64, GM_REGCAP_40, GM_REGCAP_32>(
        p->variant ? p->variant : GM_REGCAP_UNCAPPED,
        [](auto v) -> pressure_fn { return register_pressure_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_register_pressure_kernel(const gm_register_pressure_params *p)
{
    return (const void *)select_pressure(p);
}

extern "C" cudaError_t gm_register_pressure(const gm_register_pressure_params *p, gm_dims *dims,
                                            cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->n, p->block), p->block);
    return gm_run(select_pressure(p), dims, 0, stream, p->in, p->out, p->n, p->rounds);
}

// ---- divergence -----------------------------------------------------------------
// Half the threads take each path, and both paths do the same work (iters
// dependent FMAs).  odd_even: odd and even lanes of every warp differ,
// so every warp runs both loops one after the other.  warp: whole
// warps agree, so each warp runs one loop.
template <int VARIANT>
__global__ void divergence_kernel(const float *__restrict__ in, float *__restrict__ out,
                                  long long n, int iters)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float x = in[t];
    const bool odd = VARIANT == GM_DIVERGENCE_WARP ? ((threadIdx.x / 32) % 2) : (threadIdx.x % 2);
    if (odd) {
        for (int i = 0; i < iters; ++i)
            x = x * 0.5f + 1.0f;  // -> 2
    } else {
        for (int i = 0; i < iters; ++i)
            x = x * 0.25f + 3.0f; // -> 4
    }
    out[t] = x;
}

using divergence_fn = void (*)(const float *, float *, long long, int);

static divergence_fn select_divergence(const gm_divergence_params *p)
{
    return gm_select<GM_DIVERGENCE_ODD_EVEN, GM_DIVERGENCE_WARP>(
        p->variant, [](auto v) -> divergence_fn { return divergence_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_divergence_kernel(const gm_divergence_params *p)
{
    return (const void *)select_divergence(p);
}

extern "C" cudaError_t gm_divergence(const gm_divergence_params *p, gm_dims *dims,
                                     cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->n, p->block), p->block);
    return gm_run(select_divergence(p), dims, 0, stream, p->in, p->out, p->n, p->iters);
}
