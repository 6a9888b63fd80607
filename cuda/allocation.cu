// allocation.cu -- what the first write into memory costs, and a clock to wait on.
//
// first_touch: the same store kernel pointed at memory allocated just before
// the launch (fresh) or at a buffer written before (reused).  On the GPU a
// cudaMalloc'd page is mapped when it is allocated -- there is no page fault
// on first touch as on a CPU -- so what can differ is the memory system's
// state: the GPU's TLBs have never seen the new pages, and the driver may have
// handed over pages it has to make ready first.  The experiment measures
// whether that costs anything; the kernel only writes.
//
// spin: a kernel that keeps the device busy for a known time, so the host can
// see which CUDA calls wait for the device (cudaFree) and which do not
// (cudaFreeAsync).
#include "gm_launch.cuh"

#include <stdint.h>

// TOUCH: gm_touch_variant (the first template argument names the variant, as
// compiler_report reads it).
//
// write: every element once, 16-byte stores (STG.128) for the 16-byte-aligned
// body, one thread per float4: a warp writes 512 contiguous bytes, every
// sector full.  The few elements before the first 16-byte boundary (head) and
// after the last whole float4 (tail) are written by the first threads.
//
// page: thread k writes element k * GM_TOUCH_PAGE_FLOATS only -- one 4-byte
// store per 64 KiB, so the time is the cost per page (translation, first
// use), not bandwidth.
template <int TOUCH>
__global__ void first_touch_kernel(float *__restrict__ out, long long n)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if constexpr (TOUCH == GM_TOUCH_PAGE) {
        const long long i = t * GM_TOUCH_PAGE_FLOATS;
        if (i < n)
            out[i] = GM_TOUCH_VALUE(i);
    } else {
        long long head = (long long)(((16u - ((uintptr_t)out & 15u)) & 15u) / 4u);
        if (head > n)
            head = n;
        const long long n4 = (n - head) / 4;
        if (t < n4) {
            const long long i = head + 4 * t;
            reinterpret_cast<float4 *>(out + head)[t] =
                make_float4(GM_TOUCH_VALUE(i), GM_TOUCH_VALUE(i + 1), GM_TOUCH_VALUE(i + 2),
                            GM_TOUCH_VALUE(i + 3));
        }
        if (t < head)
            out[t] = GM_TOUCH_VALUE(t);
        const long long tail = head + 4 * n4 + t;
        if (t < 4 && tail < n)
            out[tail] = GM_TOUCH_VALUE(tail);
    }
}

using touch_fn = void (*)(float *, long long);

static touch_fn select_touch(const gm_first_touch_params *p)
{
    return gm_select<GM_TOUCH_WRITE, GM_TOUCH_PAGE>(p->variant, [](auto v) -> touch_fn {
        return first_touch_kernel<decltype(v)::value>;
    });
}

extern "C" const void *gm_first_touch_kernel(const gm_first_touch_params *p)
{
    return (const void *)select_touch(p);
}

// Threads the launch needs: float4 stores of the body (at least 4 for the
// head and tail), or one per page.
static long long touch_threads(const gm_first_touch_params *p)
{
    if (p->variant == GM_TOUCH_PAGE)
        return (p->n + GM_TOUCH_PAGE_FLOATS - 1) / GM_TOUCH_PAGE_FLOATS;
    const long long body = p->n / 4;
    return body > 4 ? body : 4;
}

extern "C" cudaError_t gm_first_touch(const gm_first_touch_params *p, gm_dims *dims,
                                      cudaStream_t stream)
{
    const int block = p->block ? p->block : 256;
    *dims = gm_dims_1d(gm_blocks_for(touch_threads(p), block), block);
    return gm_run(select_touch(p), dims, 0, stream, p->out, p->n);
}

// ---- spin ----------------------------------------------------------------------------
__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One thread reads the global timer (nanoseconds, updated every microsecond
// or so) until `ns` have passed: the device is busy, the memory system idle.
__global__ void spin_kernel(long long ns)
{
    const unsigned long long t0 = global_ns();
    while (global_ns() - t0 < (unsigned long long)ns) {
    }
}

extern "C" const void *gm_spin_kernel(const gm_spin_params *p)
{
    (void)p;
    return (const void *)spin_kernel;
}

extern "C" cudaError_t gm_spin(const gm_spin_params *p, gm_dims *dims, cudaStream_t stream)
{
    *dims = gm_dims_1d(1, 1);
    return gm_run(spin_kernel, dims, 0, stream, p->ns);
}
