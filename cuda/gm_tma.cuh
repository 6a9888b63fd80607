// gm_tma.cuh -- sm_90's mbarriers and bulk copy engine (TMA), for the lessons that use
// them (async_copy's tiles, ladder's TMA chase): static inline helpers, part of each .cu
// that includes this (one object per .cu).  Below sm_90 only global_ns() is defined; the
// callers compile their TMA code for sm_90 and newer only.
#ifndef GM_TMA_CUH
#define GM_TMA_CUH

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
#endif // __CUDA_ARCH__ >= 900
#endif // GM_TMA_CUH
