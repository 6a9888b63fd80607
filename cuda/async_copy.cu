// async_copy.cu -- four ways to move a tile from global into shared memory,
// in a streaming tiled copy (out = a) and transpose (out = a.T).
//
// ldg_sts     every thread loads into registers (LDG) and stores them into the
//             tile (STS): the data passes through the register file, and the
//             thread waits for its loads before it can store.
// cp_async4   cp.async (sm_80+, SASS LDGSTS): each thread asks for 4 bytes to be
//             copied straight into shared memory; commit/wait groups let the
//             block keep GM_ASYNC_STAGES - 1 tiles in flight while it stores one.
// cp_async16  the same with 16-byte copies (.cg: bypassing L1), a quarter of the
//             instructions (rows must be 16-byte aligned: n % 4 == 0).
// bulk        the bulk copy engine (TMA, sm_90+): one thread per tile row issues
//             a 1-D cp.async.bulk of the row's bytes, completing on an mbarrier
//             (expect_tx): 32 instructions per tile (n % 4 == 0).
// tensor      cp.async.bulk.tensor.2d: ONE thread issues one to four box copies
//             per tile through a CUtensorMap (the tile's shape and bounds in a
//             descriptor; out-of-range elements are zero-filled by the engine).
//             A box starts on the 16-byte grid of its view row (the engine faults
//             with an illegal instruction otherwise): rows whose data lies off it
//             (n % 4 != 0) are read shifted, their last columns from the next box.
// tensor_swizzle128  the same with the 128-byte swizzle: the engine writes the
//             16-byte chunk j of tile row r at chunk j ^ (r % 8), so a warp that
//             reads one chunk from 32 rows (the transpose) meets 32 banks.
//
// The consumer is the same for every variant: tile_copy's warps read rows of
// the tile and store them to out; tile_transpose's warp w reads chunk w (4
// columns) of all 32 rows as float4 (lane l: row l) and stores 4 rows of out,
// 128 contiguous bytes each.  Without a swizzle that read is 8-way conflicted
// (a tile row is 128 bytes: 8 lanes of a quarter warp hit the same 4 banks).
//
// Block order.  A block's run goes along a tile row; tile_copy's blocks are
// numbered along the row first (the blocks beside each other in a row of out
// run together), tile_transpose's down the column of runs first: block b + 1
// writes the 128 bytes of out just after block b's in each out row.  Numbered
// along the row, the transpose's neighbours in out were (n / 32) / tiles blocks
// apart in launch order; where rows are off the 32-byte grid (n = 8190) the
// sectors they share were completed long after the first half was written, and
// L2 read them back from DRAM first (H100: 0.53x the device copy at 8190^2).
#include "gm_launch.cuh"
#include "gm_tma.cuh"

#include <cstring>

static constexpr int T = GM_ASYNC_TILE;          // 32
static constexpr int NT = GM_ASYNC_THREADS;      // 256
[[maybe_unused]] static constexpr int S = GM_ASYNC_STAGES;        // 4
[[maybe_unused]] static constexpr int TB = GM_ASYNC_TILE_BYTES;   // 4096
static constexpr int EXT = GM_ASYNC_EXT;                          // 8

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GM_HAS_CP_ASYNC 1
#else
#define GM_HAS_CP_ASYNC 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GM_HAS_TMA 1
#else
#define GM_HAS_TMA 0
#endif

[[maybe_unused]] static __device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// ---- cp.async (sm_80) ------------------------------------------------------------------
#if GM_HAS_CP_ASYNC
// Copy `bytes` (4 or 16) from src to shared dst; src_bytes 0 fills zeros instead.
template <int BYTES>
static __device__ __forceinline__ void cp_async(unsigned dst, const void *src, int src_bytes)
{
    if constexpr (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                     "r"(src_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src),
                     "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif

// ---- mbarriers, the bulk copy engine and tensor_load (sm_90): cuda/gm_tma.cuh ---------------

// ---- the tile in shared memory ------------------------------------------------------------
// A stage is 32 rows of 128 bytes ("smem rows").  The tensor variants' view
// (GM_ASYNC_GROUP) puts tile row R in smem row (R % k) * (32 / k) + R / k
// (box j holds rows j, j + k, ...); the others have k = 1: smem row = tile row.
// SW: the 128-byte swizzle (chunk j of smem row s at j ^ (s % 8)).  With the ext
// rows (tile rows 32 .. 39, the transpose at m % 8 != 0) a stage has k slots of
// 1 KiB more: slot j holds box j's ext rows, 8 / k of them, swizzled as a stage.
// k is 1, 2 or 4: shifts instead of divisions (kl = log2 k).
static __device__ __forceinline__ int tile_row(int s, int kl)
{
    const int per_l = 5 - kl; // T / k = 2^per_l rows per box
    return ((s & ((1 << per_l) - 1)) << kl) + (s >> per_l);
}
template <bool SW> static __device__ __forceinline__ int chunk_at(int s, int j)
{
    return SW ? j ^ (s & 7) : j;
}

// What a block knows of its run of tiles.
struct Run {
    const float *a;
    int m, n, k, kl;        // k rows per view row (tensor variants; else 1), kl = log2 k
    int view_rows;          // floor(m / k), the tensor map's rows
    int first;              // the first row the tile path does not hold (k view_rows for
                            // the tensor variants: the rest rows are read from a; else m)
    int r0, c00, count;     // the run's first row and column, its tiles
    bool ext;               // the tile's ext rows too (the transpose at m % 8 != 0)
    int stage;              // floats per stage: the tile, the ext slots
    int tail_pitch;         // tail rows per box: 32/k (40/k with the ext rows) rounded up
                            // to 8 (a box's copy starts on a 128-byte boundary)
};

// The tensor variants' box j (tile rows j, j + k, ...) starts at view column
// j n rounded down to the 16-byte grid: its data lies shift(j) words in.
static __device__ __forceinline__ int shift(const Run &u, int j)
{
    return (j * u.n) & 3;
}

// ---- loading tile i of the run into stage buffer `st` ------------------------------------
// ldg_sts: 4 elements per thread, loaded first, then stored (zeros outside a).
// The ext rows (q = 4): one element more per thread, at smem rows 32 .. 39 (k = 1:
// slot 0 follows the tile).
static __device__ __forceinline__ void load_ldg_sts(const Run &u, float *st, int c0)
{
    const int t = threadIdx.x, col = t & 31;
    constexpr int Q = (T + EXT) * T / NT;
    float v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int r = u.r0 + (t >> 5) + 8 * q, c = c0 + col;
        v[q] = (q < T * T / NT || u.ext) && r < u.m && c < u.n ? u.a[(size_t)r * u.n + c]
                                                                : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < Q; ++q)
        if (q < T * T / NT || u.ext)
            st[((t >> 5) + 8 * q) * T + col] = v[q];
}

#if GM_HAS_CP_ASYNC
// cp_async4: the same 4 elements per thread, each one cp.async of 4 bytes.
// cp_async16: one 16-byte chunk per thread (row t / 8, chunk t % 8).
template <int BYTES>
static __device__ __forceinline__ void load_cp_async(const Run &u, float *st, int c0)
{
    const int t = threadIdx.x;
    if constexpr (BYTES == 4) {
#pragma unroll
        for (int q = 0; q < (T + EXT) * T / NT; ++q) {
            const int row = (t >> 5) + 8 * q, col = t & 31, r = u.r0 + row, c = c0 + col;
            const bool in = r < u.m && c < u.n;
            if (q < T * T / NT || u.ext) // the ext rows: q = 4
                cp_async<4>(smem_addr(st + row * T + col),
                            in ? u.a + (size_t)r * u.n + c : u.a, in ? 4 : 0);
        }
    } else {
#pragma unroll
        for (int q = 0; q < 2; ++q) { // the ext rows (q = 1): threads 0 .. 63
            const int row = (t >> 3) + 32 * q, j = t & 7, r = u.r0 + row, c = c0 + 4 * j;
            const bool in = r < u.m && c < u.n; // n % 4 == 0: the whole chunk is inside
            if (q == 0 || (u.ext && t < EXT * 8))
                cp_async<16>(smem_addr(st + row * T + 4 * j),
                             in ? u.a + (size_t)r * u.n + c : u.a, in ? 16 : 0);
        }
    }
}
#endif

#if GM_HAS_TMA
// bulk (warp 0): arrive with the tile's bytes expected, then lane l copies
// tile row l (those inside a) with one cp.async.bulk of 4 min(32, n - c0)
// bytes (a multiple of 16: n % 4 == 0); lanes 0 .. 7 the ext rows too.
static __device__ __forceinline__ void load_bulk(const Run &u, float *st, int c0, unsigned bar)
{
    const int l = threadIdx.x;
    const int cols = u.n - c0 < T ? u.n - c0 : T;
    const int held = u.ext ? T + EXT : T;
    const int rows = u.m - u.r0 < held ? u.m - u.r0 : held;
    if (l == 0)
        bar_expect(bar, (unsigned)(4 * cols * rows));
    __syncwarp();
    if (l < rows)
        bulk_load(smem_addr(st + l * T), u.a + (size_t)(u.r0 + l) * u.n + c0,
                  (unsigned)(4 * cols), bar);
    if (u.ext && T + l < rows) // apart: a loop over both made every issue slower
        bulk_load(smem_addr(st + (T + l) * T), u.a + (size_t)(u.r0 + T + l) * u.n + c0,
                  (unsigned)(4 * cols), bar);
}

// tensor (thread 0): k boxes of 32 x 32/k, box j at view column (j n & ~3) + c0
// (on the 16-byte grid) and view row r0 / k, into smem rows j * 32/k ...; the
// engine counts a whole box's bytes, zeros included.  No box when the view has
// no rows (m < k).  The ext rows: k boxes of 32 x 8/k through ext_map, box j into
// slot j, unless the view ends before them (those rows are read from a, or lie
// past m).
static __device__ __forceinline__ bool ext_boxes(const Run &u)
{
    return u.ext && ((u.r0 + T) >> u.kl) < u.view_rows;
}
static __device__ __forceinline__ void load_tensor(const Run &u, float *st, int c0, unsigned bar,
                                                   const CUtensorMap *map,
                                                   const CUtensorMap *ext_map)
{
    if (u.view_rows == 0)
        return;
    const bool ext = ext_boxes(u);
    bar_expect(bar, (unsigned)(ext ? TB + 1024 : TB));
    for (int j = 0; j < u.k; ++j)
        tensor_load(smem_addr(st + ((j * T) >> u.kl) * T), map, ((j * u.n) & ~3) + c0,
                    u.r0 >> u.kl, bar);
    if (ext)
        for (int j = 0; j < u.k; ++j)
            tensor_load(smem_addr(st + T * T + 256 * j), ext_map, ((j * u.n) & ~3) + c0,
                        (u.r0 + T) >> u.kl, bar);
}

// A shifted run's tail (thread 0): the k boxes of 4 x 32/k or 40/k (16 bytes a view
// row, through the tail map: no swizzle) just right of the run's last tile, into
// `tail` (rows of 4 words, box j from row j * tail_pitch): the words past a shifted
// box's 32 in the run's last tile, ext rows included.  512 bytes (640), where a whole
// box more per run (4 KiB) was loaded before.
static __device__ __forceinline__ void load_tail(const Run &u, float *tail, unsigned bar,
                                                 const CUtensorMap *tail_map)
{
    const int c0 = u.c00 + u.count * T;
    bar_expect(bar, (unsigned)GM_ASYNC_TAIL_BYTES(u.ext));
    for (int j = 0; j < u.k; ++j)
        tensor_load(smem_addr(tail + j * u.tail_pitch * 4), tail_map,
                    ((j * u.n) & ~3) + c0, u.r0 >> u.kl, bar);
}
#endif

// ---- storing a tile from shared memory ----------------------------------------------------
// copy, scalar: warp w stores smem rows w, w + 8, w + 16, w + 24, lane l word l
// (any n; a shifted box's word l + shift, past 31 in the next box `nx` -- or, for
// the run's last tile, in the run's tail `nx` (TAIL: 4 words per smem row); a rest
// row straight from a).  copy, VEC (n % 4 == 0, k = 1): lane l of warp w stores
// chunk l % 8 of tile row 4 w + l / 8 as one float4.
template <bool SW, bool VEC>
static __device__ __forceinline__ void store_copy(const Run &u, const float *st, const float *nx,
                                                  bool tail, int c0, float *out)
{
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    if constexpr (VEC) {
#pragma unroll
        for (int q = 0; q < T * T / (4 * NT); ++q) {
            const int s = 4 * w + (l >> 3) + 32 * q, j = l & 7;
            const int r = u.r0 + s, c = c0 + 4 * j;
            const float4 v = *reinterpret_cast<const float4 *>(st + s * T + 4 * chunk_at<SW>(s, j));
            if (r < u.m && c < u.n)
                *reinterpret_cast<float4 *>(out + (size_t)r * u.n + c) = v;
        }
    } else {
#pragma unroll
        for (int q = 0; q < T / 8; ++q) {
            const int s = w + 8 * q, r = u.r0 + tile_row(s, u.kl), c = c0 + l;
            if (r < u.m && c < u.n) {
                float v;
                if (r >= u.first) {
                    v = u.a[(size_t)r * u.n + c];
                } else {
                    const int p = l + shift(u, s >> (5 - u.kl));
                    v = p < T    ? st[s * T + 4 * chunk_at<SW>(s, p >> 2) + (p & 3)]
                        : tail ? nx[s * 4 + (p & 3)]
                               : nx[s * T + 4 * chunk_at<SW>(s, 0) + (p & 3)];
                }
                out[(size_t)r * u.n + c] = v;
            }
        }
    }
}

// transpose: warp w reads chunk w (tile columns 4w .. 4w+3) of smem row l as one
// float4 (lane l), holding a[r0 + R][c0 + 4w + i], R = tile_row(l), and stores
// out[c0 + 4w + i][r0 + R], i < 4: each store 32 distinct columns of one row of
// out (128 contiguous bytes when m is a multiple of 32).  Shifted boxes (k > 1):
// the chunk after too (the next box's first past 7), the four words picked from
// the pair; rest rows: four plain loads from a.
static __device__ __forceinline__ float pick(const float4 &x, const float4 &y, int i)
{
    switch (i) {
    case 0: return x.x;
    case 1: return x.y;
    case 2: return x.z;
    case 3: return x.w;
    case 4: return y.x;
    case 5: return y.y;
    default: return y.z;
    }
}
template <bool SW>
static __device__ __forceinline__ void store_transpose(const Run &u, const float *st,
                                                       const float *nx, bool tail, int c0,
                                                       float *out)
{
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    const int R = u.r0 + tile_row(l, u.kl);
    float f[4];
    if (R >= u.first) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int c = c0 + 4 * w + i;
            f[i] = R < u.m && c < u.n ? u.a[(size_t)R * u.n + c] : 0.0f;
        }
    } else {
        const float4 v = *reinterpret_cast<const float4 *>(st + l * T + 4 * chunk_at<SW>(l, w));
        if (u.k == 1) {
            f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
        } else {
            // the next chunk: this box's, or the first of the box to the right (the tail)
            const float *y_at = w < 7 ? st + l * T + 4 * chunk_at<SW>(l, w + 1)
                                : tail ? nx + l * 4
                                       : nx + l * T + 4 * chunk_at<SW>(l, 0);
            const float4 y = *reinterpret_cast<const float4 *>(y_at);
            const int sh = shift(u, l >> (5 - u.kl));
#pragma unroll
            for (int i = 0; i < 4; ++i)
                f[i] = pick(v, y, sh + i);
        }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int orow = c0 + 4 * w + i;
        if (orow < u.n && R < u.m)
            out[(size_t)orow * u.m + R] = f[i];
    }
}

// transpose, out's rows off the 32-byte grid (u.ext: m % 8 != 0): out row o's sectors
// start at columns s(o) + 8 j, s(o) = (-o m) mod 8, and the block writes columns
// r0 + s(o) .. r0 + s(o) + 31 of it -- whole sectors (the first tile row columns
// 0 .. s(o) - 1 too).  Warp w holds out rows c0 + 4w + i, i < 4; in step q (-1 .. 3)
// lane l (group h = l / 8, g = l % 8) stores column r0 + s + 8q + g of out row
// c0 + 4w + i, i = (h + q) % 4: a warp's store is four sectors of four rows, and its
// shared load (tile row s + 8q + g, one word of chunk w) meets 32 banks with the
// swizzle.  (Four rows cost the L2 a request per sector, 8.2 M write requests at 8190^2;
// a store of one row's 32 columns took 3.7 M, but its load meets 8 banks (32-way conflicts
// without the swizzle) and the swizzled transpose ran no faster: H100, README.)  c0 is a
// multiple of 8, so s and every offset below are the same for every tile of the block: the
// lane computes the steps q >= 0 once (ExtPlan; the step q = -1 of the first tile row as
// it goes), and an inner tile's step is the plan's load and store.
struct ExtStep {
    int t;    // the tile row (past r0) the lane stores; negative: none
    int word; // its word in the stage (rows t < 32 at smem row (t % k) 32/k + t / k, the
              // ext rows in slot t % k, row (t - 32) / k), or in the next box
    int off;  // its word of out past out + c0 m + r0: col m + t
    bool next; // the word lies in the next box (p > 31)
};
struct ExtPlan {
    ExtStep step[4]; // q = 0 .. 3
};

// Step q's out row past c0 (4w + i), its box word p (past 31: the next box), the step.
static __device__ __forceinline__ int ext_col(int q)
{
    return 4 * (int)(threadIdx.x >> 5) + ((int)((threadIdx.x & 31) >> 3) + q & 3);
}
static __device__ __forceinline__ int ext_p(const Run &u, int col, int t)
{
    return col + shift(u, t & (u.k - 1));
}
template <bool SW> static __device__ __forceinline__ ExtStep ext_step(const Run &u, int q)
{
    const int col = ext_col(q);
    const int s = (int)((0u - (unsigned)col * (unsigned)u.m) & 7u);
    const int t = s + 8 * q + (int)(threadIdx.x & 7), tt = t < 0 ? 0 : t;
    const int j = tt & (u.k - 1), y = tt >> u.kl;
    const int p = ext_p(u, col, tt), pw = p & (T - 1);
    const int row = tt < T ? (j << (5 - u.kl)) + y : y - (T >> u.kl);
    return ExtStep{t,
                   (tt < T ? 0 : T * T + 256 * j) + row * T + 4 * chunk_at<SW>(row, pw >> 2) +
                       (pw & 3),
                   col * u.m + t, p >= T};
}
template <bool SW> static __device__ __forceinline__ ExtPlan ext_plan(const Run &u)
{
    ExtPlan x;
#pragma unroll
    for (int q = 0; q < 4; ++q)
        x.step[q] = ext_step<SW>(u, q);
    return x;
}

template <bool SW>
static __device__ __forceinline__ void ext_store(const Run &u, ExtStep d, int q, const float *st,
                                                 const float *nx, bool tail, int c0, float *o)
{
    const int col = ext_col(q);
    if (d.t < 0 || d.t >= u.m - u.r0 || col >= u.n - c0)
        return;
    // where the word lies -- a rest row of a, the stage, the next box, the tail -- picked
    // as an address: one load and ONE store instruction per step (a store in each branch
    // split a warp's sectors over several requests, each counting them)
    const int p = ext_p(u, col, d.t);
    const float *src =
        d.t >= u.first - u.r0 ? u.a + (size_t)(u.r0 + d.t) * u.n + c0 + col
        : p < T               ? st + d.word
        : !tail               ? nx + d.word
                              : nx + ((d.t & (u.k - 1)) * u.tail_pitch + (d.t >> u.kl)) * 4 +
                                    (p & 3);
    o[d.off] = *src; // o: out + c0 m + r0
}

template <bool SW>
static __device__ __forceinline__ void store_transpose_ext(const Run &u, const ExtPlan &x,
                                                           const float *st, const float *nx,
                                                           bool tail, int c0, float *out)
{
    float *o = out + (size_t)c0 * u.m + u.r0;
    if (u.r0 == 0)
        ext_store<SW>(u, ext_step<SW>(u, -1), -1, st, nx, tail, c0, o);
    // an inner tile (all but the edges of a): every word of the steps q >= 0 is in the
    // stage or the next box (tile rows t <= 38 < 40 held, no rest row, no tail, no column
    // past n), so a step is the plan's load and store and nothing else
    if (u.r0 + T + EXT <= u.first && c0 + T <= u.n && (!tail || u.k == 1)) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            o[x.step[q].off] = (x.step[q].next ? nx : st)[x.step[q].word];
        return;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q)
        ext_store<SW>(u, x.step[q], q, st, nx, tail, c0, o);
}

template <bool TR, bool SW, bool VEC>
static __device__ __forceinline__ void store_tile(const Run &u, const ExtPlan &x, const float *st,
                                                  const float *nx, bool tail, int c0, float *out)
{
    if constexpr (TR) {
        if (u.ext)
            store_transpose_ext<SW>(u, x, st, nx, tail, c0, out);
        else
            store_transpose<SW>(u, st, nx, tail, c0, out);
    } else {
        store_copy<SW, VEC>(u, st, nx, tail, c0, out);
    }
}

// ---- the kernel ---------------------------------------------------------------------------
// Block (bx, by) moves tiles (by, bx * tiles + i), i < count, through a ring of
// min(S, tiles) stage buffers.  TR: transpose (else copy); VEC: copy's float4 stores.
//   ldg_sts     per tile: load, __syncthreads, store, __syncthreads
//   cp_async*   S - 1 tiles committed ahead; wait_group<S - 1> after committing the
//               next: the oldest tile's copies (this thread's) have landed;
//               __syncthreads: everyone's have
//   bulk/tensor every stage has an mbarrier (count 1); S tiles issued ahead; the
//               block waits on the stage's phase, stores it, __syncthreads (the
//               stage is free), and the issuer refills it with tile i + S.
//               Shifted tensor boxes (k > 1): tile i waits for boxes i and i + 1
//               (its last columns), the last tile for the run's tail.
template <int V, bool TR, bool VEC, bool X>
static __device__ __forceinline__ void tile_body(const float *__restrict__ a,
                                                 float *__restrict__ out, int m, int n, int k,
                                                 int view_rows, int tiles, const CUtensorMap *map,
                                                 const CUtensorMap *tail_map,
                                                 const CUtensorMap *ext_map)
{
    [[maybe_unused]] constexpr bool SW = V == GM_ASYNC_TENSOR_SW128;
    constexpr bool NEEDS_TMA = V >= GM_ASYNC_BULK;
    constexpr bool NEEDS_CP = V == GM_ASYNC_CP4 || V == GM_ASYNC_CP16;
#if !GM_HAS_TMA
    if constexpr (NEEDS_TMA) {
        __trap(); // refused by csrc below compute capability 9.0: never reached
        return;
    }
#endif
#if !GM_HAS_CP_ASYNC
    if constexpr (NEEDS_CP) {
        __trap(); // refused by csrc below compute capability 8.0: never reached
        return;
    }
#endif
    extern __shared__ unsigned char gm_async_smem[];
    // the ring, aligned to 1 KiB (the 128-byte swizzle repeats every 8 rows)
    float *ring = reinterpret_cast<float *>(
        (reinterpret_cast<size_t>(gm_async_smem) + 1023) & ~(size_t)1023);
    const int tiles_x = (n + T - 1) / T, tiles_y = (m + T - 1) / T;
    // the run: tile row by, tiles bx * tiles ...; the transpose's grid is one row of
    // blocks, the tile row fastest (see "Block order" above)
    const int by = TR ? (int)(blockIdx.x % (unsigned)tiles_y) : (int)blockIdx.y;
    const int bx = TR ? (int)(blockIdx.x / (unsigned)tiles_y) : (int)blockIdx.x;
    Run u;
    u.a = a;
    u.m = m;
    u.n = n;
    u.k = k;
    u.kl = k == 4 ? 2 : k == 2 ? 1 : 0;
    u.view_rows = view_rows;
    u.first = V == GM_ASYNC_TENSOR || V == GM_ASYNC_TENSOR_SW128 ? k * view_rows : m;
    u.r0 = by * T;
    u.c00 = bx * tiles * T;
    u.count = tiles_x - bx * tiles < tiles ? tiles_x - bx * tiles : tiles;
    u.ext = X; // the launch's choice: the transpose at m % 8 != 0
    u.stage = GM_ASYNC_STAGE_BYTES(u.ext, k) / 4;
    u.tail_pitch = (((u.ext ? T + EXT : T) >> u.kl) + 7) & ~7;
    [[maybe_unused]] ExtPlan plan;
    if constexpr (TR)
        if (u.ext)
            plan = ext_plan<SW>(u);

    if constexpr (V == GM_ASYNC_LDG_STS) {
        for (int i = 0; i < u.count; ++i) {
            const int c0 = u.c00 + i * T;
            load_ldg_sts(u, ring, c0);
            __syncthreads();
            store_tile<TR, false, VEC>(u, plan, ring, ring, false, c0, out);
            __syncthreads();
        }
    }
#if GM_HAS_CP_ASYNC
    if constexpr (NEEDS_CP) {
        constexpr int BYTES = V == GM_ASYNC_CP16 ? 16 : 4;
#pragma unroll
        for (int i = 0; i < S - 1; ++i) {
            if (i < u.count)
                load_cp_async<BYTES>(u, ring + i * u.stage, u.c00 + i * T);
            cp_async_commit(); // empty groups keep the count of groups in step
        }
        for (int i = 0; i < u.count; ++i) {
            const int next = i + S - 1;
            if (next < u.count)
                load_cp_async<BYTES>(u, ring + (next % S) * u.stage, u.c00 + next * T);
            cp_async_commit();
            cp_async_wait<S - 1>(); // every group but the S - 1 newest: tile i's
            __syncthreads();
            store_tile<TR, false, VEC>(u, plan, ring + (i % S) * u.stage, ring, false,
                                       u.c00 + i * T, out);
            __syncthreads(); // stage i % S is refilled at i + 1
        }
    }
#endif
#if GM_HAS_TMA
    if constexpr (NEEDS_TMA) {
        __shared__ __align__(8) unsigned long long bars[S + 1]; // the ring's, the tail's
        const unsigned tail_bar = smem_addr(bars + S);
        // the tail after the ring's stages in use (at most `tiles`: the launch sizes the
        // ring by them)
        float *tail = ring + (tiles < S ? tiles : S) * u.stage;
        const bool issuer = V == GM_ASYNC_BULK ? threadIdx.x < 32 : threadIdx.x == 0;
        if (threadIdx.x == 0) {
            for (int s = 0; s < S + 1; ++s)
                bar_init(smem_addr(bars + s), 1);
            fence_proxy_async(); // the initialized barriers visible to the copy engine
        }
        __syncthreads();
        auto issue = [&](int i) {
            float *st = ring + (i % S) * u.stage;
            const unsigned bar = smem_addr(bars + i % S);
            if constexpr (V == GM_ASYNC_BULK)
                load_bulk(u, st, u.c00 + i * T, bar);
            else
                load_tensor(u, st, u.c00 + i * T, bar, map, ext_map);
        };
        const bool engine = V == GM_ASYNC_BULK || view_rows > 0; // else nothing to wait for
        // a shifted run (k > 1): tile i's last columns lie in box i + 1, the last tile's in
        // the run's tail, loaded first
        const bool shifted = V != GM_ASYNC_BULK && k > 1 && engine;
        if constexpr (V != GM_ASYNC_BULK) {
            if (shifted && threadIdx.x == 0)
                load_tail(u, tail, tail_bar, tail_map);
        }
        if (issuer)
            for (int i = 0; i < S && i < u.count; ++i)
                issue(i);
        for (int i = 0; i < u.count; ++i) {
            const bool last = i + 1 == u.count;
            const float *st = ring + (i % S) * u.stage;
            const float *nx = last ? tail : ring + ((i + 1) % S) * u.stage;
            const int c0 = u.c00 + i * T;
            if (engine) {
                bar_wait(smem_addr(bars + i % S), (unsigned)((i / S) & 1));
                if (shifted)
                    bar_wait(last ? tail_bar : smem_addr(bars + (i + 1) % S),
                             last ? 0u : (unsigned)(((i + 1) / S) & 1));
            }
            store_tile<TR, SW, VEC>(u, plan, st, nx, last, c0, out);
            __syncthreads(); // every thread done with the stage (box i)
            if (issuer && i + S < u.count)
                issue(i + S);
        }
    }
#endif
}

// The families' kernels (named <family>_kernel<variant, ...>, as
// gpumem.compiler_report reads them): the tensor maps (the tiles', the tails') are
// __grid_constant__ parameters, read by the copy engine where they lie.
template <int V, bool VEC>
__global__ void __launch_bounds__(NT)
    tile_copy_kernel(const float *__restrict__ a, float *__restrict__ out, int m, int n, int k,
                     int view_rows, int tiles, const __grid_constant__ CUtensorMap map,
                     const __grid_constant__ CUtensorMap tail_map,
                     const __grid_constant__ CUtensorMap ext_map)
{
    tile_body<V, false, VEC, false>(a, out, m, n, k, view_rows, tiles, &map, &tail_map,
                                    &ext_map);
}

// X: with the ext rows (m % 8 != 0), a kernel apart: its per-lane plan takes registers
// that the transpose at m % 8 == 0 runs better without (28).  No bound on the blocks per
// SM: one of 6 (29 registers) made the compiler work the plan out again in every tile.
template <int V, bool X>
__global__ void __launch_bounds__(NT)
    tile_transpose_kernel(const float *__restrict__ a, float *__restrict__ out, int m, int n,
                          int k, int view_rows, int tiles, const __grid_constant__ CUtensorMap map,
                          const __grid_constant__ CUtensorMap tail_map,
                          const __grid_constant__ CUtensorMap ext_map)
{
    tile_body<V, true, false, X>(a, out, m, n, k, view_rows, tiles, &map, &tail_map, &ext_map);
}

// ---- the tensor map (gm_encode_2d: cuda/gm_tma.cuh) ------------------------------------------
// The view of a (m x n floats) as floor(m/k) rows of k n floats, boxes of `width` x
// rows/k (the tiles': 32 x 32, the ext rows' 32 x 8; the tails': 4 x 32 or 40).
static cudaError_t encode_view(CUtensorMap *map, const float *a, int m, int n, int k, int width,
                               int rows, bool swizzle)
{
    const unsigned long long row = (unsigned long long)k * (unsigned long long)n;
    return gm_encode_2d(map, a, row, (unsigned long long)(m / k), row * sizeof(float),
                        (unsigned)width, (unsigned)(rows / k), swizzle);
}

// ---- selectors and launchers ----------------------------------------------------------------
using tile_fn = void (*)(const float *, float *, int, int, int, int, int, const CUtensorMap,
                         const CUtensorMap, const CUtensorMap);

// The copy's float4 stores: rows of whole 16-byte chunks, both pointers aligned.
static bool vec_ok(const float *a, const float *out, int n)
{
    return n % 4 == 0 && (reinterpret_cast<size_t>(a) & 15) == 0 &&
           (reinterpret_cast<size_t>(out) & 15) == 0;
}

template <bool TR, bool VEC, bool X = false> static tile_fn select_tile(int variant)
{
    return gm_select<GM_ASYNC_LDG_STS, GM_ASYNC_CP4, GM_ASYNC_CP16, GM_ASYNC_BULK,
                     GM_ASYNC_TENSOR, GM_ASYNC_TENSOR_SW128>(variant, [](auto v) -> tile_fn {
        if constexpr (TR)
            return tile_transpose_kernel<decltype(v)::value, X>;
        else
            return tile_copy_kernel<decltype(v)::value, VEC>;
    });
}

static cudaError_t launch_tiles(tile_fn k, bool transpose, int variant, const float *a,
                                float *out, int m, int n, int tiles, gm_dims *dims,
                                cudaStream_t stream)
{
    const long long tiles_x = (n + T - 1) / T, tiles_y = (m + T - 1) / T;
    if (tiles < 1) // a zeroed params struct: the default
        tiles = transpose ? GM_ASYNC_TRANSPOSE_DEFAULT(m) : GM_ASYNC_TILES_PER_BLOCK;
    const long long runs = (tiles_x + tiles - 1) / tiles;
    const int group = GM_ASYNC_IS_TENSOR(variant) ? GM_ASYNC_GROUP(n) : 1;
    const bool ext = transpose && GM_ASYNC_EXT_ROWS(m); // as transpose_kernel's choice
    const size_t smem = GM_ASYNC_SMEM(tiles, ext, group);
    if (transpose) { // one row of blocks, the tile row fastest (tile_body)
        if (runs * tiles_y > 0x7fffffffLL)
            return cudaErrorInvalidConfiguration; // 2^31 blocks: no array that fits
        *dims = gm_dims{{(unsigned)(runs * tiles_y), 1, 1}, {(unsigned)NT, 1, 1}, smem};
    } else {
        *dims = gm_dims{{(unsigned)runs, (unsigned)tiles_y, 1}, {(unsigned)NT, 1, 1}, smem};
    }
    CUtensorMap map, tail_map, ext_map;
    memset(&map, 0, sizeof map);
    memset(&tail_map, 0, sizeof tail_map);
    memset(&ext_map, 0, sizeof ext_map);
    if (GM_ASYNC_IS_TENSOR(variant) && m / group > 0) {
        const bool sw = variant == GM_ASYNC_TENSOR_SW128;
        cudaError_t err = encode_view(&map, a, m, n, group, T, T, sw);
        if (err == cudaSuccess && group > 1) // the shifted runs' tails
            err = encode_view(&tail_map, a, m, n, group, 4, ext ? T + EXT : T, false);
        if (err == cudaSuccess && ext)
            err = encode_view(&ext_map, a, m, n, group, T, EXT, sw);
        if (err != cudaSuccess)
            return err;
    }
    return gm_run(k, dims, dims->smem, stream, a, out, m, n, group, m / group, tiles, map,
                  tail_map, ext_map);
}

extern "C" const void *gm_tile_copy_kernel(const gm_tile_copy_params *p)
{
    return vec_ok(p->a, p->out, p->n) ? (const void *)select_tile<false, true>(p->variant)
                                      : (const void *)select_tile<false, false>(p->variant);
}

extern "C" cudaError_t gm_tile_copy(const gm_tile_copy_params *p, gm_dims *dims,
                                    cudaStream_t stream)
{
    const tile_fn k = vec_ok(p->a, p->out, p->n) ? select_tile<false, true>(p->variant)
                                                 : select_tile<false, false>(p->variant);
    return launch_tiles(k, false, p->variant, p->a, p->out, p->m, p->n, p->tiles, dims, stream);
}

// The transpose's kernel: with the ext rows where out's rows are off the 32-byte grid.
static tile_fn transpose_kernel(const gm_tile_transpose_params *p)
{
    return GM_ASYNC_EXT_ROWS(p->m) ? select_tile<true, false, true>(p->variant)
                                   : select_tile<true, false, false>(p->variant);
}

extern "C" const void *gm_tile_transpose_kernel(const gm_tile_transpose_params *p)
{
    return (const void *)transpose_kernel(p);
}

extern "C" cudaError_t gm_tile_transpose(const gm_tile_transpose_params *p, gm_dims *dims,
                                         cudaStream_t stream)
{
    return launch_tiles(transpose_kernel(p), true, p->variant, p->a, p->out, p->m, p->n,
                        p->tiles, dims, stream);
}
