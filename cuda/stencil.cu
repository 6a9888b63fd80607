// stencil.cu -- 1D stencil out[i] = sum_{k=-R..R} w[R+k] * x[i+k], float32,
// x read as zero outside [0, n) (zero padding: the output has length n).
// The lesson of the constant cache: the R+1 coefficients are the same for
// every thread, so a warp reading coefficient k reads ONE address -- the
// constant cache broadcasts it to all 32 lanes in one go.  The same
// coefficients can instead come through the read-only (texture) path
// (`const __restrict__` + __ldg) or as plain global loads; the input tile
// with its halo is staged in shared memory in every variant, so the only
// difference between the three kernels is where the coefficients live.
#include "gm_kernels.h"

enum { MEM_CONSTANT = 0, MEM_READONLY = 1, MEM_GLOBAL = 2 };

// c[k] = w[R+k], k = 0..R.  Application lifetime: set from the host with
// cudaMemcpyToSymbol, read-only for kernels, cached per SM.
__constant__ float c_stencil_coef[GM_STENCIL_MAX_RADIUS + 1];

template <int MEM>
__device__ __forceinline__ float stencil_coef(const float *coef, int k)
{
    if (MEM == MEM_CONSTANT)
        return c_stencil_coef[k];   // constant bank: one broadcast per warp
    else if (MEM == MEM_READONLY)
        return __ldg(coef + k);     // read-only data cache (LDG.CONSTANT)
    else
        return coef[k];             // ordinary global load through L1
}

// One block computes blockDim.x * ITEMS consecutive outputs.  Each thread
// loads ITEMS elements of the tile (coalesced, independent: ITEMS loads in
// flight per thread, which is what keeps a bandwidth-bound kernel busy), the
// first R threads also load the R-element halos on either side, the block
// waits (barrier), then every thread forms its ITEMS outputs from shared
// memory.  The coefficient loop is unrolled to the largest radius with an
// early exit, so a constant-memory coefficient is an immediate operand of
// the FMA (c[0x3][...]) and the others one load per k per thread.
template <int MEM, bool ANTI, int ITEMS>
__global__ void stencil_1d_kernel(const float *__restrict__ in, float *__restrict__ out,
                                  const float *coef, long long n, int radius)
{
    extern __shared__ float tile[]; // radius | blockDim.x * ITEMS | radius
    const int t = threadIdx.x, bd = blockDim.x;
    const int width = bd * ITEMS;
    const long long base = (long long)blockIdx.x * width;

#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const long long g = base + t + j * bd;
        tile[radius + t + j * bd] = g < n ? in[g] : 0.0f;
    }
    if (t < radius) {
        const long long gl = base - radius + t, gr = base + width + t;
        tile[t] = gl >= 0 ? in[gl] : 0.0f;
        tile[radius + width + t] = gr < n ? in[gr] : 0.0f;
    }
    __syncthreads();

    float acc[ITEMS];
    const float c0 = ANTI ? 0.0f : stencil_coef<MEM>(coef, 0);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
        acc[j] = ANTI ? 0.0f : c0 * tile[radius + t + j * bd];
#pragma unroll
    for (int k = 1; k <= GM_STENCIL_MAX_RADIUS; ++k) {
        if (k > radius)
            break;
        const float ck = stencil_coef<MEM>(coef, k);
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const int s = radius + t + j * bd;
            const float r = tile[s + k], l = tile[s - k];
            acc[j] += ck * (ANTI ? r - l : r + l);
        }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
        const long long g = base + t + j * bd;
        if (g < n)
            out[g] = acc[j];
    }
}

template <int MEM, bool ANTI>
static const void *pick_items(int items)
{
    switch (items) {
    case 1: return (const void *)stencil_1d_kernel<MEM, ANTI, 1>;
    case 2: return (const void *)stencil_1d_kernel<MEM, ANTI, 2>;
    case 4: return (const void *)stencil_1d_kernel<MEM, ANTI, 4>;
    case 8: return (const void *)stencil_1d_kernel<MEM, ANTI, 8>;
    default: return nullptr;
    }
}

template <int MEM>
static const void *pick(int items, int antisymmetric)
{
    return antisymmetric ? pick_items<MEM, true>(items) : pick_items<MEM, false>(items);
}

extern "C" const void *gm_stencil_kernel(int memory, int items, int antisymmetric)
{
    switch (memory) {
    case MEM_CONSTANT: return pick<MEM_CONSTANT>(items, antisymmetric);
    case MEM_READONLY: return pick<MEM_READONLY>(items, antisymmetric);
    case MEM_GLOBAL: return pick<MEM_GLOBAL>(items, antisymmetric);
    default: return nullptr;
    }
}

extern "C" cudaError_t gm_stencil_set_constant(const float *c, int count)
{
    return cudaMemcpyToSymbol(c_stencil_coef, c, (size_t)count * sizeof(float));
}

static cudaError_t launch(int memory, const gm_stencil_params *p, gm_dims *dims,
                          cudaStream_t stream)
{
    const void *fn = gm_stencil_kernel(memory, p->items, p->antisymmetric);
    if (fn == nullptr)
        return cudaErrorInvalidValue; /* validated in csrc; never reached */
    const long long width = (long long)p->block * p->items;
    const unsigned int grid = (unsigned int)((p->n + width - 1) / width);
    const size_t smem = (size_t)(width + 2 * p->radius) * sizeof(float);
    *dims = gm_dims{{grid, 1, 1}, {(unsigned int)p->block, 1, 1}, smem};
    const float *in = p->in;
    float *out = p->out;
    const float *coef = p->coef;
    long long n = p->n;
    int radius = p->radius;
    void *args[] = {(void *)&in, (void *)&out, (void *)&coef, (void *)&n, (void *)&radius};
    const cudaError_t err = cudaLaunchKernel(fn, dim3(grid), dim3(p->block), args, smem, stream);
    const cudaError_t last = cudaGetLastError();
    return err != cudaSuccess ? err : last;
}

extern "C" cudaError_t gm_stencil_constant(const gm_stencil_params *p, gm_dims *dims,
                                           cudaStream_t stream)
{
    return launch(MEM_CONSTANT, p, dims, stream);
}

extern "C" cudaError_t gm_stencil_readonly(const gm_stencil_params *p, gm_dims *dims,
                                           cudaStream_t stream)
{
    return launch(MEM_READONLY, p, dims, stream);
}

extern "C" cudaError_t gm_stencil_global(const gm_stencil_params *p, gm_dims *dims,
                                         cudaStream_t stream)
{
    return launch(MEM_GLOBAL, p, dims, stream);
}
