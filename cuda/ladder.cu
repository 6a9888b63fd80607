// ladder.cu -- the memory hierarchy as two ladders: how long one load waits
// (latency) and how many bytes per second a level delivers (bandwidth).
//
// latency: a pointer chase.  The working set is a ring of n nodes, `stride`
// bytes apart, linked in a pseudo-random cyclic order; one thread (or each
// lane of one warp) follows the links, every load's address being the value
// the previous load returned.  Nothing can overlap, so the time per step is
// the latency of the level that holds the ring: L1 (or shared, constant),
// L2 -- near or far partition --, or device memory.  The kernel reads
// clock64() (SM cycles) and %globaltimer (ns) around the timed steps, so
// cycles and nanoseconds come from the same run (their ratio is the clock).
//
// bandwidth: the opposite -- every thread keeps several independent 16-byte
// loads in flight over a working set that stays resident in one level; the
// grid-wide rate is the level's bandwidth.
//
// The chain's order is a keyed bijection of [0, n) (a 4-round Feistel
// network on ceil(log2 n) bits, cycle-walked into [0, n)), computed where it
// is needed: node order(i) links to order(i + 1 mod n), one cycle through all
// n nodes, built on the device in microseconds even for 2 GiB.
// gpumem.ladder.chain_order reproduces it bit for bit in NumPy.
#include "gm_launch.cuh"
#include "gm_tma.cuh"

// ---- the chain's order ----------------------------------------------------------
__device__ __forceinline__ unsigned chain_hash(unsigned x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

struct chain_perm {
    long long n;
    int wl, wr;       // bits of the left and right halves (wl + wr = ceil(log2 n), >= 1)
    unsigned key[4];  // one per round, from the seed
};

__device__ __forceinline__ chain_perm chain_make(long long n, unsigned seed)
{
    chain_perm p;
    int bits = 1;
    while ((1LL << bits) < n)
        ++bits;
    p.n = n;
    p.wl = bits / 2;
    p.wr = bits - p.wl;
#pragma unroll
    for (int r = 0; r < 4; ++r)
        p.key[r] = chain_hash(seed + 0x9e3779b9u * (unsigned)(r + 1));
    return p;
}

// One pass of the network: a bijection of [0, 2^(wl+wr)).  Each round moves
// the right half left and xors the left half with a hash of the right; the
// halves trade widths, so after four rounds they are back where they began.
__device__ __forceinline__ unsigned chain_feistel(unsigned x, const chain_perm &p)
{
    int wl = p.wl, wr = p.wr;
    unsigned l = x >> wr, r = x & ((1u << wr) - 1u);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const unsigned f = chain_hash(r ^ p.key[k]) & ((1u << wl) - 1u);
        const unsigned nl = r, nr = l ^ f;
        l = nl;
        r = nr;
        const int t = wl;
        wl = wr;
        wr = t;
    }
    return (l << wr) | r;
}

// order(i): the node visited i-th.  Cycle walking keeps the bijection inside
// [0, n) (the domain is < 2n, so about two passes on average).
__device__ __forceinline__ long long chain_order(long long i, const chain_perm &p)
{
    unsigned x = chain_feistel((unsigned)i, p);
    while ((long long)x >= p.n)
        x = chain_feistel(x, p);
    return (long long)x;
}

// Node order(i) at byte offset order(i) * stride holds the link to
// order(i + 1): an 8-byte pointer for the global paths (the chase is then
// one load per step, no address arithmetic), a 4-byte byte offset for the
// shared and constant chases.
__global__ void ladder_build_chain(char *chain, long long n, long long stride, unsigned seed,
                                   int pointers, int strided)
{
    const chain_perm p = chain_make(n, seed);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        if (strided) {   // the papers' ring: node i holds the element index of node i + 1
            *(unsigned *)(chain + i * stride) = (unsigned)((i + 1 == n ? 0 : i + 1) * (stride / 4));
            continue;
        }
        const long long a = chain_order(i, p), b = chain_order(i + 1 == n ? 0 : i + 1, p);
        if (pointers)
            *(unsigned long long *)(chain + a * stride) =
                (unsigned long long)(chain + b * stride);
        else
            *(unsigned *)(chain + a * stride) = (unsigned)(b * stride);
    }
}

// The constant chase's ring: the whole user constant bank of this module.
__constant__ unsigned c_ladder_chain[GM_LATENCY_CONSTANT_MAX / 4];

// ---- latency: the chase ---------------------------------------------------------
// global_ns(): cuda/gm_tma.cuh

// The load path of a global chase (gm_load's cache path, gm_launch.cuh): ld.global.ca (L1
// and L2), ld.global.cg (L2 only: every step pays at least the L2 latency), or ld.global.nc
// (the read-only data path through L1).  Shared memory and the constant bank: a plain load.
template <int MEM>
constexpr int chase_cache = MEM == GM_LATENCY_CG    ? GM_CACHE_CG
                            : MEM == GM_LATENCY_LDG ? GM_CACHE_LDG
                            : MEM == GM_LATENCY_CA  ? GM_CACHE_CA
                                                    : GM_CACHE_DEFAULT;

// One step along a global ring: the next node's address, loaded through MEM's path.
template <int MEM>
__device__ __forceinline__ const char *chase_global(const char *p)
{
    return (const char *)gm_load<chase_cache<MEM>>((const unsigned long long *)p);
}

// The timed steps, timed one of two ways (CLOCK: gm_latency_clock).  GM_CLOCK_LOOP, gpumem's:
// clock64() and %globaltimer read once before and once after all `steps` loads (the mean per
// load; the loop's few instructions overlap the loads' wait).  GM_CLOCK_EACH, the papers'
// fine-grained chase (Mei and Chu; Jia et al.; Luo et al. on Hopper): the 32-bit clock() read
// before and after each load, the loaded value stored to shared memory in between (so the
// second read waits for the load), each difference kept in shared memory (s_each: steps
// times, then steps values) -- every load's cycles, clock reads and store included.  Both
// read clock64 and %globaltimer around the whole loop too (the clock's rate).
template <int CLOCK, typename P, typename Step>
__device__ __forceinline__ P chase_timed(P p, int steps, unsigned *s_each, long long &t0,
                                         long long &t1, unsigned long long &g0,
                                         unsigned long long &g1, Step step)
{
    t0 = clock64();
    g0 = global_ns();
    if constexpr (CLOCK == GM_CLOCK_EACH) {
        volatile unsigned *s_value = s_each + steps;
#pragma unroll 1
        for (int s = 0; s < steps; ++s) {
            const unsigned c0 = (unsigned)clock();
            p = step(p);
            s_value[s] = (unsigned)(unsigned long long)p;
            const unsigned c1 = (unsigned)clock();
            s_each[s] = c1 - c0;
        }
    } else {
#pragma unroll 4
        for (int s = 0; s < steps; ++s)
            p = step(p);
    }
    g1 = global_ns();
    t1 = clock64();
    return p;
}

// One step along the papers' strided ring (RING == GM_RING_STRIDED): A[i] = (i + stride / 4)
// mod (working_set / 4), 4-byte element indices, read as j = A[j] (the address computed from
// the index each step) through the chosen path.
template <int MEM>
__device__ __forceinline__ unsigned chase_index(const unsigned *a, unsigned j)
{
    return gm_load<chase_cache<MEM>>(a + j);   // shared memory, the constant bank: a[j]
}

// MEM: gm_latency_variant; RING: gm_latency_ring; CLOCK: gm_latency_clock.  One warp;
// lanes 0..lanes-1 chase, lane l from position l*n/lanes of the ring (so the lanes never
// meet within n/lanes steps: 32 lanes are 32 independent misses per warp-wide load).
// `warmup` untimed steps first (they bring the ring into the caches it fits), then `steps`
// timed ones.  out: end node | clock64 cycles | globaltimer ns, one row of `lanes` each;
// with GM_CLOCK_EACH then `steps` rows of each load's clock() cycles.  The shared chase
// first copies the ring from global into dynamic shared memory (untimed); the per-load
// times are kept in dynamic shared memory after it.
template <int MEM, int RING, int CLOCK>
__global__ void latency_kernel(const char *chain, long long *out, long long n, long long stride,
                               int lanes, int steps, int warmup, unsigned seed)
{
    extern __shared__ __align__(16) unsigned char s_chain[];
    const long long ring_bytes = MEM == GM_LATENCY_SHARED ? n * stride : 0;
    if constexpr (MEM == GM_LATENCY_SHARED) {
        for (long long k = 8LL * threadIdx.x; k < ring_bytes; k += 8LL * blockDim.x)
            *(uint2 *)(s_chain + k) = *(const uint2 *)(chain + k);
        __syncthreads();
    }
    const int lane = threadIdx.x;
    if (lane >= lanes)
        return;
    // after the ring (a whole number of 8-byte strides: 4-byte aligned)
    unsigned *s_each = (unsigned *)(s_chain + ring_bytes) + 2LL * steps * lane;
    long long first;
    if constexpr (RING == GM_RING_STRIDED) {
        first = (long long)lane * n / lanes;
    } else {
        const chain_perm perm = chain_make(n, seed);
        first = chain_order((long long)lane * n / lanes, perm);
    }
    long long t0, t1, end;
    unsigned long long g0, g1;
    if constexpr (MEM == GM_LATENCY_TMA) {
        // each step one 16-byte bulk copy of the node into one of this lane's two slots (by
        // step parity), completing on this lane's mbarrier; the link is then read from
        // shared memory (LDS).  Two slots: a slot is written again only after the next
        // step's __syncwarp has ordered this step's read of it before that write.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        __shared__ __align__(16) unsigned long long s_slot[GM_LATENCY_WARP][2][2];
        __shared__ __align__(8) unsigned long long s_bar[GM_LATENCY_WARP];
        const unsigned slot = (unsigned)__cvta_generic_to_shared(&s_slot[lane][0][0]);
        const unsigned bar = (unsigned)__cvta_generic_to_shared(&s_bar[lane]);
        // the chasing lanes (0 .. lanes - 1; the others have returned): __syncwarp over
        // them orders each step's copy, which the engine writes for the warp, before the
        // lanes' reads of their slots (compute-sanitizer's racecheck sees the order there)
        const unsigned chasing = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
        bar_init(bar, 1);
        fence_proxy_async(); // the barrier's init before the engine's complete_tx
        __syncwarp(chasing);
        unsigned phase = 0;
        const char *p = chain + first * stride;
        auto step = [&](const char *q) -> const char * {
            // the last step's read of the slot (generic proxy) before the engine's write
            // into it (async proxy)
            fence_proxy_async();
            bar_expect(bar, 16);
            bulk_load(slot + 16 * phase, q, 16, bar);
            bar_wait(bar, phase);
            __syncwarp(chasing);
            const char *next =
                (const char *)*(volatile unsigned long long *)&s_slot[lane][phase][0];
            phase ^= 1;
            return next;
        };
        for (int s = 0; s < warmup; ++s)
            p = step(p);
        p = chase_timed<CLOCK>(p, steps, s_each, t0, t1, g0, g1, step);
        end = (p - chain) / stride;
#else
        __trap(); // refused by csrc below compute capability 9.0: never reached
        t0 = t1 = end = 0;
        g0 = g1 = 0;
#endif
    } else if constexpr (RING == GM_RING_STRIDED) {
        const unsigned *a = MEM == GM_LATENCY_SHARED     ? (const unsigned *)s_chain
                            : MEM == GM_LATENCY_CONSTANT ? c_ladder_chain
                                                         : (const unsigned *)chain;
        unsigned j = (unsigned)(first * (stride / 4));
        auto step = [a](unsigned i) { return chase_index<MEM>(a, i); };
        for (int s = 0; s < warmup; ++s)
            j = step(j);
        j = chase_timed<CLOCK>(j, steps, s_each, t0, t1, g0, g1, step);
        end = (long long)j / (stride / 4);
    } else if constexpr (MEM == GM_LATENCY_CA || MEM == GM_LATENCY_CG || MEM == GM_LATENCY_LDG) {
        const char *p = chain + first * stride;
        auto step = [](const char *q) { return chase_global<MEM>(q); };
        for (int s = 0; s < warmup; ++s)
            p = step(p);
        p = chase_timed<CLOCK>(p, steps, s_each, t0, t1, g0, g1, step);
        end = (p - chain) / stride;
    } else {
        // a byte offset into shared memory (LDS) or into the constant bank (LDC)
        const unsigned char *base = MEM == GM_LATENCY_SHARED
                                        ? s_chain
                                        : (const unsigned char *)c_ladder_chain;
        unsigned p = (unsigned)(first * stride);
        auto step = [base](unsigned q) { return *(const unsigned *)(base + q); };
        for (int s = 0; s < warmup; ++s)
            p = step(p);
        p = chase_timed<CLOCK>(p, steps, s_each, t0, t1, g0, g1, step);
        end = (long long)p / stride;
    }
    out[lane] = end;
    out[lanes + lane] = t1 - t0;
    out[2 * lanes + lane] = (long long)(g1 - g0);
    if constexpr (CLOCK == GM_CLOCK_EACH) {
        for (int s = 0; s < steps; ++s)
            out[(3LL + s) * lanes + lane] = s_each[s];
    }
}

using latency_fn = void (*)(const char *, long long *, long long, long long, int, int, int,
                            unsigned);

// The paths, each with gpumem's ring and clock; the papers' ring and per-load clock for
// every path but the TMA's (its node is a 16-byte copy of a pointer).
static latency_fn select_latency(const gm_latency_params *p)
{
    const int ring = p->ring, clk = p->clock;
    return gm_select<GM_LATENCY_CA, GM_LATENCY_CG, GM_LATENCY_LDG, GM_LATENCY_SHARED,
                     GM_LATENCY_CONSTANT, GM_LATENCY_TMA>(p->variant, [&](auto m) -> latency_fn {
        constexpr int M = decltype(m)::value;
        if constexpr (M == GM_LATENCY_TMA) {
            return ring == GM_RING_SHUFFLED && clk == GM_CLOCK_LOOP
                       ? latency_kernel<M, GM_RING_SHUFFLED, GM_CLOCK_LOOP>
                       : nullptr;
        } else {
            return gm_select<GM_RING_SHUFFLED, GM_RING_STRIDED>(ring, [&](auto r) -> latency_fn {
                return gm_select<GM_CLOCK_LOOP, GM_CLOCK_EACH>(clk, [&](auto c) -> latency_fn {
                    return latency_kernel<M, decltype(r)::value, decltype(c)::value>;
                });
            });
        }
    });
}

extern "C" const void *gm_latency_kernel(const gm_latency_params *p)
{
    return (const void *)select_latency(p);
}

extern "C" const void *gm_latency_build_kernel(const gm_latency_params *)
{
    return (const void *)ladder_build_chain;
}

extern "C" cudaError_t gm_latency_build(const gm_latency_params *p, gm_dims *dims,
                                        cudaStream_t stream)
{
    const int pointers = p->variant != GM_LATENCY_SHARED && p->variant != GM_LATENCY_CONSTANT;
    const unsigned blocks = gm_blocks_for(p->n, 256) < 8192 ? gm_blocks_for(p->n, 256) : 8192;
    *dims = gm_dims_1d(blocks, 256);
    return gm_run(ladder_build_chain, dims, 0, stream, (char *)p->chain, p->n, p->stride,
                  p->seed, pointers, (int)(p->ring == GM_RING_STRIDED));
}

extern "C" cudaError_t gm_latency_constant_ring(const gm_latency_params *p, cudaStream_t stream)
{
    return cudaMemcpyToSymbolAsync(c_ladder_chain, p->chain, (size_t)(p->n * p->stride), 0,
                                   cudaMemcpyDeviceToDevice, stream);
}

extern "C" cudaError_t gm_latency(const gm_latency_params *p, gm_dims *dims, cudaStream_t stream)
{
    // the shared ring, then (GM_CLOCK_EACH) each lane's per-load times and values
    const size_t ring = p->variant == GM_LATENCY_SHARED ? (size_t)(p->n * p->stride) : 0;
    const size_t smem =
        ring + (p->clock == GM_CLOCK_EACH ? 8 * (size_t)p->steps * (size_t)p->lanes : 0);
    const latency_fn k = select_latency(p);
    *dims = gm_dims_1d(1, GM_LATENCY_WARP, smem);
    const cudaError_t err = gm_opt_in_smem((const void *)k, smem);
    if (err != cudaSuccess)
        return err;
    return gm_run(k, dims, smem, stream, (const char *)p->chain, p->out, p->n, p->stride,
                  p->lanes, p->steps, p->warmup, p->seed);
}

// ---- bandwidth ----------------------------------------------------------------------
__device__ __forceinline__ float sum4(float4 v)
{
    return (v.x + v.y) + (v.z + v.w);
}

// V: gm_bandwidth_variant; CACHE: gm_cache_path; SCOPE: gm_bandwidth_scope.
// Who reads what: with SCOPE grid the threads of the whole grid stride
// through the working set (each pass reads it once; with ld.global.cg it
// comes from L2, or from device memory when it does not fit); with SCOPE
// block every block strides through all of it (each SM re-reads the same
// bytes, which stay in its L1 when they fit).  Each thread has four 16-byte
// loads in flight per iteration; `read` adds them into four registers, block
// sums meet in one atomicAdd, so no load can be optimised away.  `shared`
// stages the working set in shared memory once per block, then reads it
// there.  `copy` writes what it reads.  Thread 0 of block 0 notes the SM
// cycles and globaltimer ns of its passes in result[1], result[2].
template <int V, int CACHE, int SCOPE>
__global__ void bandwidth_kernel(const float *in, float *out, double *result, long long n,
                                 int passes)
{
    extern __shared__ float4 s_data[];
    __shared__ double warp_sums[32];
    const long long n4 = n >> 2, tail = n & 3;
    const long long first = SCOPE == GM_SCOPE_BLOCK
                                ? (long long)threadIdx.x
                                : (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = SCOPE == GM_SCOPE_BLOCK ? (long long)blockDim.x
                                                   : (long long)gridDim.x * blockDim.x;
    const float4 *in4 = (const float4 *)in;
    const bool timer = blockIdx.x == 0 && threadIdx.x == 0;
    long long t0 = 0;
    unsigned long long g0 = 0;
    if (timer) {
        t0 = clock64();
        g0 = global_ns();
    }
    if constexpr (V == GM_BANDWIDTH_COPY) {
        float4 *out4 = (float4 *)out;
        for (int pass = 0; pass < passes; ++pass) {
            long long k = first;
            for (; k + 3 * step < n4; k += 4 * step) {
                const float4 a = gm_load<CACHE>(in4 + k), b = gm_load<CACHE>(in4 + k + step),
                             c = gm_load<CACHE>(in4 + k + 2 * step),
                             d = gm_load<CACHE>(in4 + k + 3 * step);
                out4[k] = a;
                out4[k + step] = b;
                out4[k + 2 * step] = c;
                out4[k + 3 * step] = d;
            }
            if (k < n4) { // at most three left: all three loads in flight at once
                const bool hb = k + step < n4, hc = k + 2 * step < n4;
                const float4 a = gm_load<CACHE>(in4 + k),
                             b = hb ? gm_load<CACHE>(in4 + k + step) : float4{},
                             c = hc ? gm_load<CACHE>(in4 + k + 2 * step) : float4{};
                out4[k] = a;
                if (hb)
                    out4[k + step] = b;
                if (hc)
                    out4[k + 2 * step] = c;
            }
            if (first < tail)
                out[4 * n4 + first] = gm_load<CACHE>(in + 4 * n4 + first);
        }
        return;
    } else {
        if constexpr (V == GM_BANDWIDTH_SHARED) {
            for (long long k = threadIdx.x; k < n4; k += blockDim.x)
                s_data[k] = in4[k];
            if (threadIdx.x < tail)
                ((float *)s_data)[4 * n4 + threadIdx.x] = in[4 * n4 + threadIdx.x];
            __syncthreads();
        }
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        for (int pass = 0; pass < passes; ++pass) {
            long long k = first;
            if constexpr (V == GM_BANDWIDTH_SHARED) {
                const int s = (int)step;
                int j = (int)k;
                for (; j + 3 * s < (int)n4; j += 4 * s) {
                    a0 += sum4(s_data[j]);
                    a1 += sum4(s_data[j + s]);
                    a2 += sum4(s_data[j + 2 * s]);
                    a3 += sum4(s_data[j + 3 * s]);
                }
                for (; j < (int)n4; j += s)
                    a0 += sum4(s_data[j]);
                if (first < tail)
                    a1 += ((const float *)s_data)[4 * n4 + first];
            } else {
                for (; k + 3 * step < n4; k += 4 * step) {
                    const float4 a = gm_load<CACHE>(in4 + k), b = gm_load<CACHE>(in4 + k + step),
                                 c = gm_load<CACHE>(in4 + k + 2 * step),
                                 d = gm_load<CACHE>(in4 + k + 3 * step);
                    a0 += sum4(a);
                    a1 += sum4(b);
                    a2 += sum4(c);
                    a3 += sum4(d);
                }
                if (k < n4) { // at most three left: all three loads in flight at once
                    const float4 a = gm_load<CACHE>(in4 + k),
                                 b = k + step < n4 ? gm_load<CACHE>(in4 + k + step) : float4{},
                                 c = k + 2 * step < n4 ? gm_load<CACHE>(in4 + k + 2 * step)
                                                       : float4{};
                    a0 += sum4(a);
                    a1 += sum4(b);
                    a2 += sum4(c);
                }
                if (first < tail)
                    a1 += gm_load<CACHE>(in + 4 * n4 + first);
            }
        }
        if (timer) {
            const unsigned long long g1 = global_ns();
            const long long t1 = clock64();
            result[1] = (double)(t1 - t0);
            result[2] = (double)(g1 - g0);
        }
        // block sum: warp shuffles, one partial per warp in shared memory, one atomic
        double s = ((double)a0 + (double)a1) + ((double)a2 + (double)a3);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if ((threadIdx.x & 31) == 0)
            warp_sums[threadIdx.x >> 5] = s;
        __syncthreads();
        if (threadIdx.x < 32) {
            s = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_down_sync(0xffffffffu, s, o);
            if (threadIdx.x == 0)
                atomicAdd(result, s);
        }
    }
}

using bandwidth_fn = void (*)(const float *, float *, double *, long long, int);

// The kernel for one (variant, cache, scope); none for a block-scope copy (a
// copy's stores go through to L2 whatever the scope: csrc refuses it).
template <int V, int C, int S>
static bandwidth_fn bandwidth_pick()
{
    if constexpr (V == GM_BANDWIDTH_COPY && S == GM_SCOPE_BLOCK)
        return nullptr;
    else
        return bandwidth_kernel<V, C, S>;
}

static bandwidth_fn select_bandwidth(const gm_bandwidth_params *p)
{
    if (p->variant == GM_BANDWIDTH_SHARED) // reads shared memory: one kernel, block scope
        return bandwidth_kernel<GM_BANDWIDTH_SHARED, GM_CACHE_DEFAULT, GM_SCOPE_BLOCK>;
    return gm_select<GM_BANDWIDTH_READ, GM_BANDWIDTH_COPY>(p->variant, [p](auto v) {
        return gm_select<GM_CACHE_DEFAULT, GM_CACHE_CA, GM_CACHE_CG, GM_CACHE_LDG, GM_CACHE_CS>(
            p->cache, [p](auto c) {
                return gm_select<GM_SCOPE_GRID, GM_SCOPE_BLOCK>(p->scope, [](auto s) {
                    return bandwidth_pick<decltype(v)::value, decltype(c)::value,
                                          decltype(s)::value>();
                });
            });
    });
}

extern "C" const void *gm_bandwidth_kernel(const gm_bandwidth_params *p)
{
    return (const void *)select_bandwidth(p);
}

extern "C" cudaError_t gm_bandwidth(const gm_bandwidth_params *p, gm_dims *dims,
                                    cudaStream_t stream)
{
    const size_t smem = p->variant == GM_BANDWIDTH_SHARED ? (size_t)((p->n + 3) / 4 * 16) : 0;
    const size_t sums = p->variant == GM_BANDWIDTH_COPY ? 0 : 32 * sizeof(double); // warp_sums
    *dims = gm_dims_1d((unsigned)p->blocks, p->block, smem + sums);
    const bandwidth_fn k = select_bandwidth(p);
    const cudaError_t err = gm_opt_in_smem((const void *)k, smem, sums); // + static warp sums
    if (err != cudaSuccess)
        return err;
    return gm_run(k, dims, smem, stream, p->in, p->out, p->result, p->n, p->passes);
}
