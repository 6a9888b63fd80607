// clusters.cu -- distributed shared memory: the blocks of a thread block
// cluster (compute capability 9.0+) read, write and update each other's
// shared memory.
//
// A cluster's blocks run at the same time on SMs of one GPC, and each can
// map another's shared memory into its own address space (mapa, or
// cooperative_groups' cluster.map_shared_rank): loads, stores and atomics
// to it travel over the SM-to-SM network instead of through L2.
//
// dsmem_chase: the latency of one such load, as a pointer chase -- in the
// block's own shared memory (LDS), in its own through the cluster window,
// and in rank 1's.
// dsmem_stream: the bandwidth of coalesced 16-byte loads and stores into the
// next rank's shared memory, against loads from a block's own.
// cluster_histogram: the CUDA Programming Guide's histogram, its bins spread
// over the shared memories of a cluster (more bins than one block holds),
// against one shared histogram per block and global atomics.
//
// Every kernel body is compiled for sm_90 and newer only (the wheel builds
// older architectures too: there the kernels are empty, and csrc refuses a
// GPU below compute capability 9.0 before any launch).
#include "gm_launch.cuh"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GM_HAS_CLUSTERS 1
#else
#define GM_HAS_CLUSTERS 0
#endif

#if GM_HAS_CLUSTERS
// The address of shared-memory offset `a` (this block's window) in the
// shared memory of cluster rank `rank`: a 32-bit shared::cluster address.
__device__ __forceinline__ unsigned cluster_map(unsigned a, unsigned rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}

__device__ __forceinline__ unsigned shared_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
#endif

// ---- dsmem_chase ------------------------------------------------------------------
// V: gm_chase_variant.  Every block of the cluster writes the same ring into
// its shared memory (node i links to (i + hop) mod nodes, as a byte offset);
// after cluster.sync() thread 0 of rank 0 chases `warmup` untimed, then
// `steps` timed links: ld.shared (local), ld.shared::cluster into its own
// window (self) or into rank 1's (remote).  The loads are volatile asm, so
// the three differ only in the state space of one instruction.  The final
// cluster.sync() keeps rank 1's shared memory alive until the chase is done.
template <int V>
__global__ void dsmem_chase_kernel(long long *out, int nodes, int hop, int steps, int warmup)
{
#if GM_HAS_CLUSTERS
    extern __shared__ __align__(16) unsigned s_ring[];
    cg::cluster_group cl = cg::this_cluster();
    for (int i = threadIdx.x; i < nodes; i += blockDim.x) {
        const int next = (int)(((long long)i + hop) % nodes);
        s_ring[i] = 4u * (unsigned)next;
    }
    cl.sync();
    if (cl.block_rank() == 0 && threadIdx.x == 0) {
        unsigned p = 0;
        long long t0, t1;
        if constexpr (V == GM_CHASE_LOCAL) {
            const unsigned base = shared_addr(s_ring);
            for (int s = 0; s < warmup; ++s)
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(p) : "r"(base + p));
            t0 = clock64();
            for (int s = 0; s < steps; ++s)
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(p) : "r"(base + p));
            t1 = clock64();
        } else {
            const unsigned base = cluster_map(shared_addr(s_ring), V == GM_CHASE_REMOTE ? 1u : 0u);
            for (int s = 0; s < warmup; ++s)
                asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(p) : "r"(base + p));
            t0 = clock64();
            for (int s = 0; s < steps; ++s)
                asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(p) : "r"(base + p));
            t1 = clock64();
        }
        out[0] = (long long)(p / 4u);
        out[1] = t1 - t0;
    }
    cl.sync();
#endif
}

// ---- dsmem_stream -------------------------------------------------------------------
// V: gm_stream_variant.  Block b fills its `smem` bytes with GM_STREAM_WORD(b, j, 0)
// and waits for the whole cluster (cluster.sync()); then every thread moves
// 16-byte words k, k + blockDim, ... -- a warp touches 512 contiguous bytes,
// as the Hopper tuning guide asks of distributed shared memory -- `passes`
// times: read loads the next rank's words (four loads in flight per
// thread), local its own, write stores GM_STREAM_WORD(b, j, pass) into the
// next rank's.  The words read (write: the words its neighbour wrote, after
// a second cluster.sync()) are summed into out[0], wrapping at 2^32.
template <int V>
__global__ void dsmem_stream_kernel(unsigned *out, int smem, int passes)
{
#if GM_HAS_CLUSTERS
    extern __shared__ __align__(16) unsigned s_buf[];
    cg::cluster_group cl = cg::this_cluster();
    const int words4 = smem / 16, step = blockDim.x;
    const unsigned b = blockIdx.x;
    for (int j = threadIdx.x; j < 4 * words4; j += step)
        s_buf[j] = GM_STREAM_WORD(b, j, 0);
    cl.sync();
    const unsigned rank = cl.block_rank(), next = (rank + 1) % cl.num_blocks();
    const unsigned own = shared_addr(s_buf);
    const unsigned base = V == GM_STREAM_LOCAL ? own : cluster_map(own, next);
    unsigned a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    if constexpr (V == GM_STREAM_WRITE) {
        for (int p = 0; p < passes; ++p)
            for (int k = threadIdx.x; k < words4; k += step) {
                const unsigned j = 4u * (unsigned)k;
                asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};"
                             ::"r"(base + 16u * k), "r"(GM_STREAM_WORD(b, j, p)),
                             "r"(GM_STREAM_WORD(b, j + 1, p)), "r"(GM_STREAM_WORD(b, j + 2, p)),
                             "r"(GM_STREAM_WORD(b, j + 3, p))
                             : "memory");
            }
        cl.sync();
        for (int j = threadIdx.x; j < 4 * words4; j += step)
            a0 += s_buf[j];
    } else {
        for (int p = 0; p < passes; ++p) {
            int k = threadIdx.x;
            for (; k + 3 * step < words4; k += 4 * step) {
                unsigned v[16];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const unsigned addr = base + 16u * (unsigned)(k + u * step);
                    if constexpr (V == GM_STREAM_LOCAL)
                        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                                     : "=r"(v[4 * u]), "=r"(v[4 * u + 1]), "=r"(v[4 * u + 2]),
                                       "=r"(v[4 * u + 3])
                                     : "r"(addr));
                    else
                        asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                                     : "=r"(v[4 * u]), "=r"(v[4 * u + 1]), "=r"(v[4 * u + 2]),
                                       "=r"(v[4 * u + 3])
                                     : "r"(addr));
                }
                a0 += (v[0] + v[1]) + (v[2] + v[3]);
                a1 += (v[4] + v[5]) + (v[6] + v[7]);
                a2 += (v[8] + v[9]) + (v[10] + v[11]);
                a3 += (v[12] + v[13]) + (v[14] + v[15]);
            }
            for (; k < words4; k += step) {
                unsigned x, y, z, w;
                const unsigned addr = base + 16u * (unsigned)k;
                if constexpr (V == GM_STREAM_LOCAL)
                    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(addr));
                else
                    asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(addr));
                a0 += (x + y) + (z + w);
            }
        }
        cl.sync(); // the next rank's memory stays until every block has read it
    }
    unsigned s = (a0 + a1) + (a2 + a3);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, s);
#endif
}

// ---- cluster_histogram ------------------------------------------------------------------
// V: gm_hist_variant.  The grid strides over x four values at a time, two
// 16-byte loads per thread and step (groups i and i + stride: eight values in
// flight, where one at a time left the loop waiting on each load), then over
// the last n % 4 values one at a time; a value v < bins is counted:
//   global   atomicAdd on out[v] (L2's atomic units; nothing on chip)
//   block    atomicAdd on the block's own copy of all bins in shared memory
//   cluster  bins split in slices of ceil(bins / cluster): rank v / slice owns
//            bin v, and red.shared::cluster.add goes to its shared memory
//            (mapa) -- the CUDA Programming Guide's distributed-shared-memory
//            histogram, without the generic address and the device scope
//            that atomicAdd through map_shared_rank compiles to
//   owner    the bins split as for cluster, but the values move instead of the
//            atomics: the cluster strides over x, every rank reads each of its
//            values (L2 serves the repeats: the cluster's blocks run at the same
//            time) and counts those in its own slice -- shared atomics only, no
//            DSMEM; the cluster launch only schedules the ranks together
// then (block, cluster, owner) each block adds its non-zero bins into out.
#if GM_HAS_CLUSTERS
// The rank owning bin v: v / slice for a cluster of `size` (a power of two up
// to 16) ranks, by binary search -- no division in the loop.
__device__ __forceinline__ unsigned hist_owner(unsigned v, unsigned slice, unsigned size)
{
    unsigned r = 0;
#pragma unroll
    for (unsigned step = 8; step; step >>= 1)
        if (step < size && v >= (r + step) * slice)
            r += step;
    return r;
}
#endif

template <int V>
__global__ void cluster_histogram_kernel(const unsigned *__restrict__ x, unsigned *out, long long n,
                                         int bins)
{
#if GM_HAS_CLUSTERS
    constexpr bool SPREAD = V == GM_HIST_CLUSTER || V == GM_HIST_OWNER; // bins in slices
    const unsigned nb = (unsigned)bins;
    extern __shared__ unsigned s_bins[];
    cg::cluster_group cl = cg::this_cluster();
    const unsigned size = SPREAD ? cl.num_blocks() : 1u;
    const unsigned slice = (nb + size - 1) / size;
    const unsigned rank = SPREAD ? cl.block_rank() : 0u;
    const unsigned lo = rank * slice;
    // owner: the cluster's threads stride over x (every rank the same values)
    const long long first = V == GM_HIST_OWNER
                                ? (long long)(blockIdx.x / size) * blockDim.x + threadIdx.x
                                : (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = V == GM_HIST_OWNER ? (long long)(gridDim.x / size) * blockDim.x
                                                : (long long)gridDim.x * blockDim.x;
    const unsigned s_base = shared_addr(s_bins);
    if constexpr (V != GM_HIST_GLOBAL) {
        for (unsigned i = threadIdx.x; i < slice; i += blockDim.x)
            s_bins[i] = 0;
        if constexpr (V == GM_HIST_CLUSTER)
            cl.sync(); // every slice zeroed before anyone adds to it
        else
            __syncthreads();
    }
    auto count = [&](unsigned v) {
        if (v >= nb)
            return;
        if constexpr (V == GM_HIST_GLOBAL) {
            atomicAdd(out + v, 1u);
        } else if constexpr (V == GM_HIST_BLOCK) {
            atomicAdd(s_bins + v, 1u);
        } else if constexpr (V == GM_HIST_OWNER) {
            if (v - lo < slice)
                atomicAdd(s_bins + (v - lo), 1u);
        } else {
            const unsigned owner = hist_owner(v, slice, size);
            const unsigned a = cluster_map(s_base + 4 * (v - owner * slice), owner);
            asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], 1;" ::"r"(a)
                         : "memory");
        }
    };
    // x's 16-byte groups (none when x is off the 16-byte grid: a view), then the rest
    const long long groups = ((size_t)x & 15) ? 0 : n / 4;
    const uint4 *x4 = (const uint4 *)x;
    for (long long i = first; i < groups; i += 2 * stride) {
        const uint4 q = __ldg(x4 + i);
        uint4 r = make_uint4(nb, nb, nb, nb); // values >= bins: not counted
        if (i + stride < groups)
            r = __ldg(x4 + i + stride);
        count(q.x), count(q.y), count(q.z), count(q.w);
        count(r.x), count(r.y), count(r.z), count(r.w);
    }
    for (long long i = 4 * groups + first; i < n; i += stride)
        count(__ldg(x + i));
    if constexpr (V != GM_HIST_GLOBAL) {
        if constexpr (V == GM_HIST_CLUSTER)
            cl.sync(); // every add into this block's slice done
        else
            __syncthreads();
        for (unsigned i = threadIdx.x; i < slice && lo + i < nb; i += blockDim.x) {
            const unsigned c = s_bins[i];
            if (c)
                atomicAdd(out + lo + i, c);
        }
    }
#endif
}

// ---- dsmem_pipeline ------------------------------------------------------------------------
// V: gm_pipe_variant.  A producer -> consumer pipeline in clusters of two:
// cluster c takes a contiguous run of tiles (4 * blockDim floats each); at
// step t rank 0 produces tile t (2 x + 1, from global memory) into buffer
// t mod 2 -- the consumer's shared memory (dsmem) or a global buffer of the
// cluster's (global) -- while rank 1 stores tile t - 1 from buffer (t - 1)
// mod 2 to out; one cluster.sync() per step (release/acquire at cluster
// scope) hands the tile over and frees the buffer it read.  One step more
// than tiles drains the last.  The global hand-off is read with ld.global.cg
// (from L2: the producer ran on another SM).
template <int V>
__global__ void dsmem_pipeline_kernel(const float *__restrict__ x, float *__restrict__ out,
                                      float *scratch, long long n)
{
#if GM_HAS_CLUSTERS
    extern __shared__ __align__(16) float s_tiles[];
    cg::cluster_group cl = cg::this_cluster();
    const int tile = 4 * (int)blockDim.x;
    const long long tiles = (n + tile - 1) / tile;
    const long long cid = blockIdx.x / GM_PIPE_CLUSTER, ncl = gridDim.x / GM_PIPE_CLUSTER;
    const long long per = (tiles + ncl - 1) / ncl;
    const long long first = cid * per;
    const long long last = first + per < tiles ? first + per : tiles; // may be < first: no work
    const bool producer = cl.block_rank() == 0;
    float *hand = V == GM_PIPE_DSMEM ? cl.map_shared_rank(s_tiles, 1)
                                     : scratch + cid * 2 * (long long)tile;
    // The consumer block must be running before the producer writes into its shared
    // memory: a cluster's blocks are co-scheduled, but not started in step.
    cl.sync();
    for (long long t = first; t <= last; ++t) {
        if (producer && t < last) {
            float *dst = hand + (t & 1) * tile;
            for (int k = threadIdx.x; k < tile; k += blockDim.x) {
                const long long i = t * tile + k;
                dst[k] = i < n ? 2.0f * x[i] + 1.0f : 0.0f;
            }
        }
        if (!producer && t > first) {
            const float *src = (V == GM_PIPE_DSMEM ? s_tiles : hand) + ((t - 1) & 1) * tile;
            for (int k = threadIdx.x; k < tile; k += blockDim.x) {
                const long long i = (t - 1) * tile + k;
                if (i < n)
                    out[i] = V == GM_PIPE_DSMEM ? src[k] : __ldcg(src + k);
            }
        }
        cl.sync();
    }
#endif
}

// ---- launching a cluster ------------------------------------------------------------------
// The kernel's attributes a cluster launch of it needs: more than 48 KiB of
// dynamic shared memory, more than 8 blocks per cluster (non-portable).
static cudaError_t cluster_attributes(const void *k, int cluster, size_t smem)
{
    cudaError_t err = gm_opt_in_smem(k, smem);
    if (err == cudaSuccess && cluster > GM_CLUSTER_PORTABLE)
        err = cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    return err;
}

static cudaLaunchConfig_t cluster_config(const gm_dims *d, cudaStream_t s, cudaLaunchAttribute *at,
                                         int cluster)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(d->grid[0], d->grid[1], d->grid[2]);
    cfg.blockDim = dim3(d->block[0], d->block[1], d->block[2]);
    cfg.dynamicSmemBytes = d->smem;
    cfg.stream = s;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)cluster;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cfg;
}

// Launch k as clusters of `cluster` blocks along x (cudaLaunchKernelEx).
template <typename... P, typename... A>
static cudaError_t cluster_run(void (*k)(P...), const gm_dims *d, int cluster, cudaStream_t s,
                               A... args)
{
    if (k == nullptr)
        return cudaErrorInvalidValue; // validated in csrc; never reached
    cudaError_t err = cluster_attributes((const void *)k, cluster, d->smem);
    if (err != cudaSuccess)
        return err;
    cudaLaunchAttribute at[1];
    const cudaLaunchConfig_t cfg = cluster_config(d, s, at, cluster);
    err = cudaLaunchKernelEx(&cfg, k, args...);
    return err != cudaSuccess ? err : cudaGetLastError();
}

extern "C" cudaError_t gm_cluster_fit(const void *kernel, int cluster, int block, size_t smem,
                                      int *clusters)
{
    *clusters = 0;
    cudaError_t err = cluster_attributes(kernel, cluster, smem);
    if (err != cudaSuccess)
        return err;
    const gm_dims d = gm_dims_1d((unsigned)cluster, block, smem);
    cudaLaunchAttribute at[1];
    const cudaLaunchConfig_t cfg = cluster_config(&d, 0, at, cluster);
    return cudaOccupancyMaxActiveClusters(clusters, kernel, &cfg);
}

// ---- the families' selectors and launchers ----------------------------------------------
using chase_fn = void (*)(long long *, int, int, int, int);

static chase_fn select_chase(const gm_dsmem_chase_params *p)
{
    return gm_select<GM_CHASE_LOCAL, GM_CHASE_SELF, GM_CHASE_REMOTE>(
        p->variant, [](auto v) -> chase_fn { return dsmem_chase_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_dsmem_chase_kernel(const gm_dsmem_chase_params *p)
{
    return (const void *)select_chase(p);
}

extern "C" size_t gm_dsmem_chase_smem(const gm_dsmem_chase_params *p)
{
    const size_t ring = (size_t)p->nodes * 4;
    return (size_t)p->smem > ring ? (size_t)p->smem : ring;
}

extern "C" cudaError_t gm_dsmem_chase(const gm_dsmem_chase_params *p, gm_dims *dims,
                                      cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned)p->cluster, GM_CHASE_BLOCK, gm_dsmem_chase_smem(p));
    return cluster_run(select_chase(p), dims, p->cluster, stream, p->out, p->nodes, p->hop,
                       p->steps, p->warmup);
}

using stream_fn = void (*)(unsigned *, int, int);

static stream_fn select_stream(const gm_dsmem_stream_params *p)
{
    return gm_select<GM_STREAM_READ, GM_STREAM_WRITE, GM_STREAM_LOCAL>(
        p->variant, [](auto v) -> stream_fn { return dsmem_stream_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_dsmem_stream_kernel(const gm_dsmem_stream_params *p)
{
    return (const void *)select_stream(p);
}

extern "C" size_t gm_dsmem_stream_smem(const gm_dsmem_stream_params *p)
{
    return (size_t)p->smem;
}

extern "C" cudaError_t gm_dsmem_stream(const gm_dsmem_stream_params *p, gm_dims *dims,
                                       cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned)(p->clusters * p->cluster), p->block, gm_dsmem_stream_smem(p));
    return cluster_run(select_stream(p), dims, p->cluster, stream, p->out, p->smem, p->passes);
}

using pipe_fn = void (*)(const float *, float *, float *, long long);

static pipe_fn select_pipe(const gm_dsmem_pipeline_params *p)
{
    return gm_select<GM_PIPE_DSMEM, GM_PIPE_GLOBAL>(
        p->variant, [](auto v) -> pipe_fn { return dsmem_pipeline_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_dsmem_pipeline_kernel(const gm_dsmem_pipeline_params *p)
{
    return (const void *)select_pipe(p);
}

extern "C" size_t gm_dsmem_pipeline_smem(const gm_dsmem_pipeline_params *p)
{
    return p->variant == GM_PIPE_DSMEM ? (size_t)(2 * 4 * p->block) * sizeof(float) : 0;
}

extern "C" cudaError_t gm_dsmem_pipeline(const gm_dsmem_pipeline_params *p, gm_dims *dims,
                                         cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned)(p->clusters * GM_PIPE_CLUSTER), p->block,
                       gm_dsmem_pipeline_smem(p));
    return cluster_run(select_pipe(p), dims, GM_PIPE_CLUSTER, stream, p->x, p->out, p->scratch,
                       p->n);
}

using hist_fn = void (*)(const unsigned *, unsigned *, long long, int);

static hist_fn select_hist(const gm_cluster_histogram_params *p)
{
    return gm_select<GM_HIST_CLUSTER, GM_HIST_BLOCK, GM_HIST_GLOBAL, GM_HIST_OWNER>(
        p->variant,
        [](auto v) -> hist_fn { return cluster_histogram_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_cluster_histogram_kernel(const gm_cluster_histogram_params *p)
{
    return (const void *)select_hist(p);
}

extern "C" size_t gm_cluster_histogram_smem(const gm_cluster_histogram_params *p)
{
    if (p->variant == GM_HIST_GLOBAL)
        return 0;
    const bool spread = p->variant == GM_HIST_CLUSTER || p->variant == GM_HIST_OWNER;
    const int size = spread && p->cluster > 0 ? p->cluster : 1;
    return (size_t)((p->bins + size - 1) / size) * 4;
}

extern "C" cudaError_t gm_cluster_histogram(const gm_cluster_histogram_params *p, gm_dims *dims,
                                            cudaStream_t stream)
{
    const int cluster = p->cluster > 0 ? p->cluster : 1;
    *dims = gm_dims_1d((unsigned)(p->clusters * cluster), p->block, gm_cluster_histogram_smem(p));
    return cluster_run(select_hist(p), dims, cluster, stream, p->x, p->out, p->n, p->bins);
}
