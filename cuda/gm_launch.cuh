// gm_launch.cuh -- what every cuda/<lesson>.cu shares: the grid of a 1-D
// launch, turning a run-time selector into a template argument, and one
// launch through the kernel pointer the family's selector returned.
#ifndef GM_LAUNCH_CUH
#define GM_LAUNCH_CUH

#include <type_traits>

#include "gm_kernels.h"

// Blocks of `per_block` items covering `work` items (csrc keeps it <= 2^31 - 1).
static inline unsigned int gm_blocks_for(long long work, long long per_block)
{
    return (unsigned int)((work + per_block - 1) / per_block);
}

static inline gm_dims gm_dims_1d(unsigned int grid, int block, size_t smem = 0)
{
    return gm_dims{{grid, 1, 1}, {(unsigned int)block, 1, 1}, smem};
}

// gm_select<V0, V1, ...>(v, f): f(std::integral_constant<int, v>) for the
// listed value equal to v, or a null pointer when none is (the selectors'
// "no kernel built for these parameters").
template <int... Vs, typename F>
static auto gm_select(int v, F f) -> decltype(f(std::integral_constant<int, 0>{}))
{
    decltype(f(std::integral_constant<int, 0>{})) r = nullptr;
    ((v == Vs ? (void)(r = f(std::integral_constant<int, Vs>{})) : (void)0), ...);
    return r;
}

// One global load through the path `CACHE` (gm_cache_path) names, for any type
// the load intrinsics take (float, float4, ...): what `cache=` selects in
// read_offset and bandwidth.  cuda/access.cu says what each becomes on sm_90.
template <int CACHE, typename T>
__device__ __forceinline__ T gm_load(const T *p)
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

// Shared memory past the 48 KiB a block gets by default (dynamic + the kernel's static):
// kernel k opts in to `dynamic_smem` bytes of dynamic shared memory.  Nothing to do at or
// under the default, or for a null k (gm_run answers that one).
static inline cudaError_t gm_opt_in_smem(const void *k, size_t dynamic_smem,
                                         size_t static_smem = 0)
{
    if (k == nullptr || dynamic_smem + static_smem <= 48 * 1024)
        return cudaSuccess;
    return cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)dynamic_smem);
}

// Launch kernel k (from the family's selector) with dims and arguments.
template <typename... P, typename... A>
static cudaError_t gm_run(void (*k)(P...), const gm_dims *d, size_t dynamic_smem,
                          cudaStream_t stream, A... args)
{
    if (k == nullptr)
        return cudaErrorInvalidValue; // validated in csrc; never reached
    k<<<dim3(d->grid[0], d->grid[1], d->grid[2]), dim3(d->block[0], d->block[1], d->block[2]),
        dynamic_smem, stream>>>(args...);
    return cudaGetLastError();
}

#endif // GM_LAUNCH_CUH
