// gm_tma.cuh -- sm_90's mbarriers and bulk copy engine (TMA), for the lessons that use
// them (async_copy's tiles, ladder's TMA chase, matmul's wgmma): static inline helpers,
// part of each .cu that includes this (one object per .cu).  Below sm_90 only
// global_ns() and the host's tensor-map encoder are defined; the callers compile their
// TMA code for sm_90 and newer only.
#ifndef GM_TMA_CUH
#define GM_TMA_CUH

#include <cuda.h> // CUtensorMap and its enums (types only: the driver is called
                  // through cudaGetDriverEntryPointByVersion)

// Nanoseconds of the GPU's global timer (%globaltimer).
static __device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ void bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also expects `bytes` more to be completed by copies.
static __device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                 "r"(bytes) : "memory");
}
// Wait until the phase of parity `parity` has completed.  The wait is bounded: a
// copy that never completes its bytes (a wrong expect_tx count, a box the engine
// refused) traps after GM_TMA_WAIT_NS of global time, so the launch fails with
// an error the caller sees instead of hanging the process (and a test run).
#ifndef GM_TMA_WAIT_NS
#define GM_TMA_WAIT_NS 10000000000ull // 10 s: far beyond any copy, even under a sanitizer
#endif
static __device__ __forceinline__ bool bar_try_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n\t.reg .pred P1;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, P1;\n\t"
                 "}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
static __device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity)
{
    if (bar_try_wait(bar, parity))
        return;
    const unsigned long long t0 = global_ns();
    while (!bar_try_wait(bar, parity))
        if (global_ns() - t0 > GM_TMA_WAIT_NS)
            __trap();
}
// One arrival, no bytes (a consumer handing a stage back to its producer).
static __device__ __forceinline__ void bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Generic-proxy accesses to shared memory ordered before the async proxy's.
static __device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
static __device__ __forceinline__ void bulk_load(unsigned dst, const void *src, unsigned bytes,
                                                 unsigned bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1], %2, [%3];" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
// The box at element (x, y) of a 2-D tensor map into shared dst, completing on bar.
static __device__ __forceinline__ void tensor_load(unsigned dst, const CUtensorMap *map, int x,
                                                   int y, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];" ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}
#endif // __CUDA_ARCH__ >= 900

// ---- the tensor map (host) -------------------------------------------------------------------
// cuTensorMapEncodeTiled, resolved once through the runtime (the extension links the
// static runtime and never the driver library).
typedef CUresult (*gm_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                 const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                 const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static inline cudaError_t gm_encode_entry(gm_encode_fn *fn)
{
    static gm_encode_fn cached = nullptr;
    if (cached == nullptr) {
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
        void *f = nullptr;
        const cudaError_t err = cudaGetDriverEntryPointByVersion(
            "cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q);
        if (err != cudaSuccess)
            return err;
        if (q != cudaDriverEntryPointSuccess || f == nullptr)
            return cudaErrorSymbolNotFound;
        cached = (gm_encode_fn)f;
    }
    *fn = cached;
    return cudaSuccess;
}

// A 2-D float32 tensor map: `width` x `height` floats, rows `pitch` bytes apart (a
// multiple of 16), boxes of box_w x box_h, the 128-byte swizzle or none; elements
// outside the tensor are filled with zeros.
static inline cudaError_t gm_encode_2d(CUtensorMap *map, const float *base, unsigned long long width,
                                       unsigned long long height, unsigned long long pitch,
                                       unsigned box_w, unsigned box_h, bool swizzle128)
{
    gm_encode_fn fn = nullptr;
    cudaError_t err = gm_encode_entry(&fn);
    if (err != cudaSuccess)
        return err;
    const cuuint64_t dims[2] = {width, height};
    const cuuint64_t strides[1] = {pitch};
    const cuuint32_t box[2] = {box_w, box_h};
    const cuuint32_t estrides[2] = {1, 1};
    const CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)base, dims, strides,
                          box, estrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                          swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                          CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#endif // GM_TMA_CUH
