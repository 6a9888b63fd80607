// stencil.cu -- constant memory against the read-only cache.
//
// stencil_1d: 1D stencil out[i] = sum_{k=-R..R} w[R+k] * x[i+k], float32,
// x read as zero outside [0, n) (zero padding: the output has length n).
// The lesson of the constant cache: the R+1 coefficients are the same for
// every thread, so a warp reading coefficient k reads ONE address -- the
// constant cache broadcasts it to all 32 lanes in one go.  The same
// coefficients can instead come through the read-only (texture) path
// (`const __restrict__` + __ldg) or as plain global loads; the input tile
// with its halo is staged in shared memory in every variant, so the only
// difference between the three kernels is where the coefficients live.
//
// constant_broadcast: where the constant cache loses -- it serves one address
// per warp per pass, so d distinct addresses in a warp cost d passes; the
// read-only cache serves any words of one 128-byte line in one.
#include "gm_launch.cuh"

// c[k] = w[R+k], k = 0..R.  Application lifetime: set from the host with
// cudaMemcpyToSymbol, read-only for kernels, cached per SM.
__constant__ float c_stencil_coef[GM_STENCIL_MAX_RADIUS + 1];

template <int MEM>
__device__ __forceinline__ float stencil_coef(const float *coef, int k)
{
    if (MEM == GM_MEMORY_CONSTANT)
        return c_stencil_coef[k];   // constant bank: one broadcast per warp
    else if (MEM == GM_MEMORY_READONLY)
        return __ldg(coef + k);     // read-only data cache (LDG.CONSTANT)
    else
        return coef[k];             // ordinary global load through L1
}

// MEM: gm_memory_variant.  One block computes blockDim.x * ITEMS consecutive outputs.  Each thread
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

using stencil_fn = void (*)(const float *, float *, const float *, long long, int);

static stencil_fn select_stencil(const gm_stencil_1d_params *p)
{
    return gm_select<GM_MEMORY_CONSTANT, GM_MEMORY_READONLY, GM_MEMORY_GLOBAL>(p->variant, [p](auto m) {
        return gm_select<0, 1>(p->antisymmetric, [p](auto a) {
            return gm_select<1, 2, 4, 8>(p->items ? p->items : 4, [](auto i) -> stencil_fn {
                return stencil_1d_kernel<decltype(m)::value, decltype(a)::value == 1,
                                         decltype(i)::value>;
            });
        });
    });
}

extern "C" const void *gm_stencil_1d_kernel(const gm_stencil_1d_params *p)
{
    return (const void *)select_stencil(p);
}

extern "C" cudaError_t gm_stencil_1d_set_constant(const float *c, int count)
{
    return cudaMemcpyToSymbol(c_stencil_coef, c, (size_t)count * sizeof(float));
}

extern "C" cudaError_t gm_stencil_1d(const gm_stencil_1d_params *p, gm_dims *dims,
                                     cudaStream_t stream)
{
    const long long width = (long long)p->block * p->items;
    const size_t smem = (size_t)(width + 2 * p->radius) * sizeof(float);
    *dims = gm_dims_1d(gm_blocks_for(p->n, width), p->block, smem);
    return gm_run(select_stencil(p), dims, smem, stream, p->in, p->out, p->coef, p->n, p->radius);
}

// ---- constant_broadcast ------------------------------------------------------------
__constant__ float c_broadcast_table[GM_BROADCAST_TABLE];

// Lane l reads word (l % distinct) + 32 i of the table at step i: a warp
// touches exactly `distinct` different words per load.  Constant variant:
// the index is known only at run time, so this is an LDC from the constant
// bank, serialised over the distinct words.  Read-only variant: LDG through
// the read-only data cache; the words sit in one 128-byte line.
template <int MEM>
__global__ void constant_broadcast_kernel(const float *__restrict__ table, float *__restrict__ out,
                                 long long n, int distinct, int iters)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const int word = (threadIdx.x & 31) % distinct;
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
        const int idx = (word + 32 * i) & (GM_BROADCAST_TABLE - 1);
        acc += MEM == GM_MEMORY_READONLY ? __ldg(table + idx) : c_broadcast_table[idx];
    }
    out[t] = acc;
}

extern "C" cudaError_t gm_constant_broadcast_set_constant(const float *table, int count)
{
    return cudaMemcpyToSymbol(c_broadcast_table, table, (size_t)count * sizeof(float));
}

using broadcast_fn = void (*)(const float *, float *, long long, int, int);

static broadcast_fn select_broadcast(const gm_constant_broadcast_params *p)
{
    return gm_select<GM_MEMORY_CONSTANT, GM_MEMORY_READONLY>(p->variant, [](auto m) -> broadcast_fn {
        return constant_broadcast_kernel<decltype(m)::value>;
    });
}

extern "C" const void *gm_constant_broadcast_kernel(const gm_constant_broadcast_params *p)
{
    return (const void *)select_broadcast(p);
}

extern "C" cudaError_t gm_constant_broadcast(const gm_constant_broadcast_params *p, gm_dims *dims,
                                             cudaStream_t stream)
{
    *dims = gm_dims_1d(gm_blocks_for(p->n, p->block), p->block);
    return gm_run(select_broadcast(p), dims, 0, stream, p->table, p->out, p->n, p->distinct,
                  p->iters);
}
