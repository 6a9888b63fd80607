// dram.cu -- DRAM: bytes in flight (Little's law), the access granularity,
// and channels.
//
// What the hardware does: a load that misses L2 becomes a DRAM request of
// 32-byte sectors, served by one of the memory partitions (channels) the
// address hashes to; the request waits out the DRAM latency.  To keep the
// DRAM busy, bandwidth x latency bytes must be on their way at every moment
// (Little's law; the textbook's "R + 1 banks" for one channel).  A warp
// puts width x unroll x 32 bytes on the way per round of independent loads.
//
// Every kernel writes one float per block: the sum of every float the block
// loaded, so the loads cannot be dropped and NumPy checks each block.  The
// address pattern of each kernel is a contract: gpumem.lessons.dram and
// gpumem.model.dram reproduce it.
#include "gm_launch.cuh"

// ---- shared pieces ------------------------------------------------------------
template <int K> struct gm_vec;
template <> struct gm_vec<1> { using T = float; };
template <> struct gm_vec<2> { using T = float2; };
template <> struct gm_vec<4> { using T = float4; };

__device__ __forceinline__ float gm_vsum(float v) { return v; }
__device__ __forceinline__ float gm_vsum(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float gm_vsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// The block's sum of every thread's s into out[blockIdx.x] (blockDim.x: whole warps).
__device__ __forceinline__ void gm_block_sum(float s, float *out)
{
    __shared__ float warp_sums[32];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, d);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < warps ? warp_sums[lane] : 0.f;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, d);
        if (lane == 0)
            out[blockIdx.x] = s;
    }
}

// A 64-bit mix of (q, seed) (the splitmix64 finalizer): the random slots of
// dram_burst.  gpumem.lessons.dram computes the same numbers with NumPy.
__device__ __forceinline__ unsigned long long gm_dram_hash(unsigned long long q,
                                                           unsigned long long seed)
{
    unsigned long long x = q + (seed + 1ull) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

// ---- dram_stream: bytes in flight ---------------------------------------------
// Tile t (block * UNROLL vectors) belongs to block t % grid; thread i of the
// block loads vectors t * block * UNROLL + j * block + i, j = 0..UNROLL-1 --
// every load of a round issued before any add, so UNROLL loads per thread
// are on their way together, each warp-wide load one contiguous run.
template <int K, int UNROLL>
__global__ void dram_stream_kernel(const float *a, float *out, long long n)
{
    using V = typename gm_vec<K>::T;
    const V *av = reinterpret_cast<const V *>(a);
    const long long nv = n / K, bd = blockDim.x, tile = bd * UNROLL;
    const long long tiles = nv / tile; // full tiles; then one partial one, guarded
    float s = 0.f;
    long long t = blockIdx.x;
    for (; t < tiles; t += gridDim.x) {
        V v[UNROLL];
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            v[j] = av[t * tile + j * bd + threadIdx.x];
#pragma unroll
        for (int j = 0; j < UNROLL; ++j)
            s += gm_vsum(v[j]);
    }
    if (t == tiles) { // this block owns the partial tile (if any)
#pragma unroll
        for (int j = 0; j < UNROLL; ++j) {
            const long long e = t * tile + j * bd + threadIdx.x;
            if (e < nv)
                s += gm_vsum(av[e]);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n - nv * K)
        s += a[nv * K + threadIdx.x];
    gm_block_sum(s, out);
}

using stream_fn = void (*)(const float *, float *, long long);

static stream_fn select_stream(const gm_dram_stream_params *p)
{
    return gm_select<GM_DRAM_FLOAT, GM_DRAM_FLOAT2, GM_DRAM_FLOAT4>(p->variant, [p](auto w) {
        constexpr int K = 1 << decltype(w)::value;
        return gm_select<1, 2, 4, 8, 16>(p->unroll, [](auto u) -> stream_fn {
            return dram_stream_kernel<K, decltype(u)::value>;
        });
    });
}

extern "C" const void *gm_dram_stream_kernel(const gm_dram_stream_params *p)
{
    gm_dram_stream_params q = *p;
    if (q.unroll == 0)
        q.unroll = 1; // a zeroed params struct selects the default build
    return (const void *)select_stream(&q);
}

extern "C" cudaError_t gm_dram_stream(const gm_dram_stream_params *p, gm_dims *dims,
                                      cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned int)p->grid, p->block);
    return gm_run(select_stream(p), dims, 0, stream, p->a, p->out, p->n);
}

// ---- dram_burst: the access granularity ------------------------------------------
// Lanes l * L .. l * L + L - 1 read piece q = thread / L (L = PIECE / 16 lanes
// for pieces over 16 bytes, else 1): PIECE bytes at a random PIECE-aligned
// place.  Each piece is a separate trip to DRAM; a piece under 32 bytes still
// costs its whole sector at L2, and DRAM may move more than that sector.
template <int PIECE>
__global__ void dram_burst_kernel(const float *a, float *out, long long n, long long pieces,
                                  unsigned long long seed)
{
    constexpr int W = PIECE < 16 ? PIECE : 16; // bytes per lane
    constexpr int L = PIECE / W;               // lanes per piece
    using V = typename gm_vec<W / 4>::T;
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long q = g / L, slots = 4 * n / PIECE;
    float s = 0.f;
    if (q < pieces) {
        const long long slot = (long long)(gm_dram_hash((unsigned long long)q, seed) %
                                           (unsigned long long)slots);
        const V *p = reinterpret_cast<const V *>(a + slot * (PIECE / 4)) + g % L;
        s = gm_vsum(__ldcg(p));
    }
    gm_block_sum(s, out);
}

using burst_fn = void (*)(const float *, float *, long long, long long, unsigned long long);

static burst_fn select_burst(const gm_dram_burst_params *p)
{
    return gm_select<4, 8, 16, 32, 64, 128>(
        p->piece, [](auto b) -> burst_fn { return dram_burst_kernel<decltype(b)::value>; });
}

extern "C" const void *gm_dram_burst_kernel(const gm_dram_burst_params *p)
{
    gm_dram_burst_params q = *p;
    if (q.piece == 0)
        q.piece = 32;
    return (const void *)select_burst(&q);
}

extern "C" cudaError_t gm_dram_burst(const gm_dram_burst_params *p, gm_dims *dims,
                                     cudaStream_t stream)
{
    const long long lanes = p->piece > 16 ? p->piece / 16 : 1;
    *dims = gm_dims_1d(gm_blocks_for(p->pieces * lanes, p->block), p->block);
    return gm_run(select_burst(p), dims, 0, stream, p->a, p->out, p->n, p->pieces,
                  (unsigned long long)p->seed);
}

// ---- dram_channels: many streams a power of two apart ------------------------------
// Warp w streams `chunk` bytes from its start, 2 KiB per step: four 16-byte
// loads per lane, 512 bytes apart, before any add.  Strided starts w * stride
// put every warp's address of a step at the same offset modulo the stride: a
// plain modulo interleave would send them all to one channel.  A stride below
// the chunk interleaves the chunks: warp w's bytes are pieces of `stride`
// bytes at w * stride + q * streams * stride (q = 0 .. chunk / stride - 1), so
// neighbouring warps still start a stride apart and no byte is read twice.
// Byte `off` of a warp's chunk lies at piece off >> piece_log2 (piece =
// min(stride, chunk); random placement: the chunk, one piece).
__device__ __forceinline__ unsigned long long gm_dram_slot(unsigned long long w, int bits,
                                                           unsigned long long seed)
{
    // A permutation of 0 .. 2^bits - 1: odd multiplications and right
    // xorshifts, each one-to-one modulo 2^bits.
    const unsigned long long mask = (bits >= 64) ? ~0ull : ((1ull << bits) - 1);
    const int h = (bits + 1) / 2;
    unsigned long long x = (w + seed) & mask;
    x = (x * 0x9E3779B97F4A7C15ull) & mask;
    x ^= x >> h;
    x = (x * 0xBF58476D1CE4E5B9ull) & mask;
    x ^= x >> h;
    return x;
}

template <int PLACEMENT>
__global__ void dram_channels_kernel(const float *a, float *out, long long streams,
                                     long long stride, long long chunk, int slots_log2,
                                     int piece_log2, unsigned long long seed)
{
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    float s = 0.f;
    if (w < streams) {
        long long start, pitch = 0; // pitch: bytes from one piece of a warp to its next
        if constexpr (PLACEMENT == GM_DRAM_STRIDED) {
            start = w * stride;
            pitch = streams * stride;
        } else {
            start = (long long)gm_dram_slot((unsigned long long)w, slots_log2, seed) * chunk;
        }
        const char *base = reinterpret_cast<const char *>(a) + start;
        const long long in_piece = (1LL << piece_log2) - 1;
        for (long long step = 0; step < chunk / 2048; ++step) {
            float4 v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const long long off = step * 2048 + j * 512 + lane * 16;
                v[j] = *reinterpret_cast<const float4 *>(base + (off >> piece_log2) * pitch +
                                                         (off & in_piece));
            }
#pragma unroll
            for (int j = 0; j < 4; ++j)
                s += gm_vsum(v[j]);
        }
    }
    gm_block_sum(s, out);
}

using channels_fn = void (*)(const float *, float *, long long, long long, long long, int, int,
                             unsigned long long);

static channels_fn select_channels(const gm_dram_channels_params *p)
{
    return gm_select<GM_DRAM_STRIDED, GM_DRAM_RANDOM>(
        p->variant, [](auto v) -> channels_fn { return dram_channels_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_dram_channels_kernel(const gm_dram_channels_params *p)
{
    return (const void *)select_channels(p);
}

extern "C" cudaError_t gm_dram_channels(const gm_dram_channels_params *p, gm_dims *dims,
                                        cudaStream_t stream)
{
    const long long piece = (p->stride > 0 && p->stride < p->chunk) ? p->stride : p->chunk;
    int piece_log2 = 0;
    while ((2LL << piece_log2) <= piece)
        ++piece_log2;
    *dims = gm_dims_1d(gm_blocks_for(p->streams * 32, p->block), p->block);
    return gm_run(select_channels(p), dims, 0, stream, p->a, p->out, p->streams, p->stride,
                  p->chunk, (int)p->slots_log2, piece_log2, (unsigned long long)p->seed);
}
