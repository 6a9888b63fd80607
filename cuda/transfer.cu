// transfer.cu -- the kernels of the host memory and transfers lesson.
//
// read_sum reads every byte of x once and adds it up: pointed at device memory
// it runs at HBM speed; pointed at mapped pinned host memory (zero-copy) every
// load crosses PCIe/C2C as it happens; pointed at managed memory that lives on
// the host, the first touch of each page faults and migrates it.  scale is the
// compute that chunked copies on two streams hide behind.
#include "gm_launch.cuh"

#include <stdint.h>

// One pass over x: each thread sums its grid-stride share (16-byte loads when
// x is aligned), the warp and block reduce with shuffles, one atomicAdd per block.
__global__ void read_sum_kernel(const float *x, long long n, double *sum)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    if ((reinterpret_cast<uintptr_t>(x) & 15) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        for (long long i = t; i < n4; i += stride) {
            const float4 v = x4[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
        for (long long i = 4 * n4 + t; i < n; i += stride)
            acc += x[i];
    } else {
        for (long long i = t; i < n; i += stride)
            acc += x[i];
    }
    for (int o = 16; o; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    __shared__ float part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        part[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        float v = lane < (int)(blockDim.x >> 5) ? part[lane] : 0.0f;
        for (int o = 16; o; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0)
            atomicAdd(sum, (double)v);
    }
}

extern "C" const void *gm_read_sum_kernel(const gm_read_sum_params *)
{
    return (const void *)read_sum_kernel;
}

extern "C" cudaError_t gm_read_sum(const gm_read_sum_params *p, gm_dims *dims,
                                   cudaStream_t stream)
{
    long long blocks = gm_blocks_for(p->n / 4 + 1, p->block);
    if (blocks > GM_READ_SUM_MAX_BLOCKS)
        blocks = GM_READ_SUM_MAX_BLOCKS;
    *dims = gm_dims_1d((unsigned int)blocks, p->block);
    return gm_run(read_sum_kernel, dims, 0, stream, p->x, p->n, p->sum);
}

// y = x pushed `work` times through an FMA: `work` FMAs per 8 bytes moved.
__global__ void scale_kernel(const float *x, float *y, long long n, int work)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        for (int k = 0; k < work; k++)
            v = fmaf(v, GM_SCALE_A, GM_SCALE_B);
        y[i] = v;
    }
}

extern "C" const void *gm_scale_kernel(const gm_scale_params *)
{
    return (const void *)scale_kernel;
}

extern "C" cudaError_t gm_scale(const gm_scale_params *p, gm_dims *dims, cudaStream_t stream)
{
    long long blocks = gm_blocks_for(p->n, p->block);
    if (blocks > 65536)
        blocks = 65536;
    *dims = gm_dims_1d((unsigned int)(blocks ? blocks : 1), p->block);
    return gm_run(scale_kernel, dims, 0, stream, p->x, p->y, p->n, p->work);
}
