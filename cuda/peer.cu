// peer.cu -- the peer GPU as a level of the memory hierarchy: an SM's loads
// and stores into another GPU's memory, and a pointer chase there.
//
// What the hardware does: with peer access on, the other GPU's memory is
// mapped into this GPU's address space; a load to it leaves the SM as usual,
// misses this GPU's L2 (peer lines are not kept there) and crosses the
// link (NVLink: packets of up to 128 bytes of payload from an SM, 256 from
// the copy engine) to the other GPU's L2 and DRAM, and the answer comes
// back the same way: about 2,000 cycles on two H200s over NV18, three times
// local device memory.  Keeping the link busy then takes bandwidth x that
// latency in flight (Little's law), more than device memory needs.
//
// The address pattern of each kernel is a contract: gpumem.lessons.peer and
// gpumem.model.peer reproduce it.
#include "gm_launch.cuh"

#include <type_traits>

#include "gm_tma.cuh" // global_ns(): %globaltimer

// ---- peer_copy: loads (or stores) over the link ----------------------------------
// Tile t (block * UNROLL vectors) belongs to block t % grid; thread i of the
// block loads vectors t * block * UNROLL + j * block + i, j = 0..UNROLL-1,
// all before its first store: UNROLL loads per thread on their way together,
// each warp-wide load one contiguous run.
template <int K, int UNROLL>
__global__ void peer_copy_kernel(const float *a, float *out, long long n)
{
    using V = std::conditional_t<K == 1, float, std::conditional_t<K == 2, float2, float4>>;
    const V *av = reinterpret_cast<const V *>(a);
    V *ov = reinterpret_cast<V *>(out);
    const long long nv = n / K, bd = blockDim.x, tile = bd * UNROLL;
    const long long tiles = nv / tile; // full tiles; then one partial one, guarded
    long long t = blockIdx.x;
    for (; t < tiles; t += gridDim.x) {
        V v[UNROLL];
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            v[j] = av[t * tile + j * bd + threadIdx.x];
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            ov[t * tile + j * bd + threadIdx.x] = v[j];
    }
    if (t == tiles) { // this block owns the partial tile (if any)
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const long long e = t * tile + j * bd + threadIdx.x;
            if (e < nv)
                ov[e] = av[e];
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n - nv * K)
        out[nv * K + threadIdx.x] = a[nv * K + threadIdx.x];
}

using copy_fn = void (*)(const float *, float *, long long);

static copy_fn select_copy(const gm_peer_copy_params *p)
{
    return gm_select<GM_PEER_FLOAT, GM_PEER_FLOAT2, GM_PEER_FLOAT4>(p->variant, [p](auto w) {
        constexpr int K = 1 << decltype(w)::value;
        return gm_select<1, 2, 4, 8, 16>(p->unroll, [](auto u) -> copy_fn {
            return peer_copy_kernel<K, decltype(u)::value>;
        });
    });
}

extern "C" const void *gm_peer_copy_kernel(const gm_peer_copy_params *p)
{
    gm_peer_copy_params q = *p;
    if (q.unroll == 0)
        q.unroll = 1; // a zeroed params struct selects the default build
    return (const void *)select_copy(&q);
}

extern "C" cudaError_t gm_peer_copy(const gm_peer_copy_params *p, gm_dims *dims,
                                    cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned int)p->grid, p->block);
    return gm_run(select_copy(p), dims, 0, stream, p->a, p->out, p->n);
}

// ---- peer_chase: one dependent load after another ---------------------------------
// One thread; each step's address is the last step's load (ld.global.cg: never
// an L1 hit), so the steps cannot overlap: the time per step is the latency of
// wherever chain lives.  The range guard is a compare and a select, two of the
// ~2,000 cycles a step costs over the link (and of the ~600 of device memory).
__global__ void peer_chase_kernel(const int *chain, double *out, long long n, long long steps,
                                  long long warmup)
{
    unsigned j = 0;
    for (long long s = 0; s < warmup; ++s) {
        j = (unsigned)__ldcg(chain + j);
        j = j < (unsigned long long)n ? j : 0u;
    }
    const long long c0 = clock64();
    const unsigned long long g0 = global_ns();
    for (long long s = 0; s < steps; ++s) {
        j = (unsigned)__ldcg(chain + j);
        j = j < (unsigned long long)n ? j : 0u;
    }
    const long long c1 = clock64();
    const unsigned long long g1 = global_ns();
    out[0] = steps ? (double)(c1 - c0) / (double)steps : 0.0;
    out[1] = steps ? (double)(g1 - g0) / (double)steps : 0.0;
    out[2] = (double)j;
}

extern "C" const void *gm_peer_chase_kernel(const gm_peer_chase_params *p)
{
    (void)p;
    return (const void *)peer_chase_kernel;
}

extern "C" cudaError_t gm_peer_chase(const gm_peer_chase_params *p, gm_dims *dims,
                                     cudaStream_t stream)
{
    *dims = gm_dims_1d(1u, 1);
    return gm_run(peer_chase_kernel, dims, 0, stream, p->chain, p->out, p->n, p->steps,
                  p->warmup);
}

// ---- peer_reduce: the teaching all-reduce, one GPU's step ------------------------------
// Grid-stride over begin..end with float4 where the range allows (begin and end are
// multiples of 4 floats but for the last part's end; the tail goes one float a thread):
// every GPU's input read (the others' over the link), summed in rank order -- the same
// order on every GPU, so every copy of the result is bitwise the same -- and written to
// each out.
__global__ void peer_reduce_kernel(gm_peer_reduce_params p)
{
    const long long n4 = (p.end - p.begin) / 4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < n4; q += stride) {
        const long long i = p.begin + 4 * q;
        float4 s = *reinterpret_cast<const float4 *>(p.in[0] + i);
        for (int r = 1; r < p.k; ++r) {
            const float4 v = *reinterpret_cast<const float4 *>(p.in[r] + i);
            s.x += v.x;
            s.y += v.y;
            s.z += v.z;
            s.w += v.w;
        }
        for (int j = 0; j < p.outs; ++j)
            *reinterpret_cast<float4 *>(p.out[j] + i) = s;
    }
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long i = p.begin + 4 * n4 + t;
    if (i < p.end) {
        float s = p.in[0][i];
        for (int r = 1; r < p.k; ++r)
            s += p.in[r][i];
        for (int j = 0; j < p.outs; ++j)
            p.out[j][i] = s;
    }
}

extern "C" const void *gm_peer_reduce_kernel(const gm_peer_reduce_params *p)
{
    (void)p;
    return (const void *)peer_reduce_kernel;
}

extern "C" cudaError_t gm_peer_reduce(const gm_peer_reduce_params *p, gm_dims *dims,
                                      cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned int)p->grid, p->block);
    return gm_run(peer_reduce_kernel, dims, 0, stream, *p);
}
