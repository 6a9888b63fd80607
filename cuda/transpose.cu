// transpose.cu -- out[N,M] = a[M,N].T and the shared-memory banks it meets.
//
// A transpose reads a row and writes a column: one of the two global sides
// is strided whatever a thread does (naive_row: the writes; naive_col: the
// reads).  Staging a tile in shared memory makes both global sides
// coalesced -- a warp reads a row of the tile and writes a row of the
// transposed tile -- and moves the strided access into shared memory, where
// it meets the banks: a column of a 32 x 32 float tile is 32 words of ONE
// bank (a 32-way conflict, 32 wavefronts per warp instead of 1).  Padding
// each row by one word (tile[32][33]) or XOR-swizzling the column index
// (tile[r][c ^ r]) spreads a column over all 32 banks.  `coarsened` moves
// 64 x 64 tiles with float4 loads and stores (16 bytes per lane each way),
// so each thread keeps 4 x 16 bytes in flight: the variant that runs at the
// speed of a copy.
//
// shared_stride: the banks alone -- lane l reads element l * stride of a
// shared array of 4-, 8- or 16-byte elements; the stride picks the conflict.
#include "gm_launch.cuh"

// Every kernel is transpose_kernel<variant, ...> or shared_stride_kernel<word>:
// the family's name and the variant first, as gpumem.compiler_report reads them.

static constexpr int T = GM_TRANSPOSE_TILE;      // 32
static constexpr int ROWS = GM_TRANSPOSE_ROWS;   // threadIdx.y: 8
static constexpr int W = GM_TRANSPOSE_WIDE_TILE; // 64

// naive_row: a warp reads 32 consecutive floats of a row of `a` (one 128-byte
// line) and writes them 4*M bytes apart down a column of `out` (32 sectors).
static __device__ __forceinline__ void naive_row(const float *__restrict__ a,
                                                 float *__restrict__ out, int m, int n)
{
    const int c = blockIdx.x * T + threadIdx.x;
    const int r0 = blockIdx.y * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += ROWS) {
        const int r = r0 + j;
        if (r < m && c < n)
            out[(size_t)c * m + r] = a[(size_t)r * n + c];
    }
}

// naive_col: the lanes walk down a column of `a` instead (threadIdx.x picks
// the row): strided reads, coalesced writes.
static __device__ __forceinline__ void naive_col(const float *__restrict__ a,
                                                 float *__restrict__ out, int m, int n)
{
    const int r = blockIdx.y * T + threadIdx.x;
    const int c0 = blockIdx.x * T + threadIdx.y;
#pragma unroll
    for (int j = 0; j < T; j += ROWS) {
        const int c = c0 + j;
        if (r < m && c < n)
            out[(size_t)c * m + r] = a[(size_t)r * n + c];
    }
}

// Where element (row, col) of a T x T tile lives in shared memory.
template <int LAYOUT>
static __device__ __forceinline__ int tile_at(int row, int col)
{
    if (LAYOUT == GM_TRANSPOSE_PADDED)
        return row * (T + 1) + col; // a row is 33 words: a column spans all 32 banks
    else if (LAYOUT == GM_TRANSPOSE_SWIZZLED)
        return row * T + (col ^ row); // the word of a column moves one bank per row
    else
        return row * T + col;         // a column is one bank: 32-way conflicts
}

// shared / padded / swizzled (BROWS = 8, 4 elements per thread) and
// coarsened's scalar path (padded, BROWS = 4, 8 elements per thread).  The
// block reads the tile rows by..by+31, columns bx..bx+31 of `a` row by row
// (coalesced), waits, and writes row bx + i of `out` from column i of the
// tile (coalesced).  Out-of-range elements are neither loaded from nor stored
// to global memory; every thread still writes its shared word (a zero outside),
// while the compiler predicates each shared read with the global store it
// feeds, so a partial tile reads fewer words (gpumem.model counts it so).
template <int LAYOUT, int BROWS>
static __device__ __forceinline__ void tiled(const float *__restrict__ a,
                                             float *__restrict__ out, int m, int n)
{
    __shared__ float tile[T * (T + 1)];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int bx = blockIdx.x * T, by = blockIdx.y * T;
#pragma unroll
    for (int j = 0; j < T; j += BROWS) {
        const int r = by + ty + j, c = bx + tx;
        tile[tile_at<LAYOUT>(ty + j, tx)] = r < m && c < n ? a[(size_t)r * n + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < T; j += BROWS) {
        const int orow = bx + ty + j, ocol = by + tx; // out is n x m
        const float v = tile[tile_at<LAYOUT>(tx, ty + j)];
        if (orow < n && ocol < m)
            out[(size_t)orow * m + ocol] = v;
    }
}

// coarsened, M and N multiples of 4: a 64 x 64 tile held as 64 rows of 16
// float4 groups, group g of row r stored at g ^ ((r / 4) % 8); blocks of
// 32 x 16 threads (512: measured on an H100 at 8192 x 8192, 0.955x of the
// device copy against 0.938x with 256 threads and 0.948x with 1024).
//   in:  thread t loads group t % 16 of rows t / 16 + 32 p (p = 0, 1): a
//        warp reads 2 rows x 256 contiguous bytes; a quarter warp stores 8
//        groups of one row, 8 distinct 16-byte slots: no conflict.
//   out: lane l of warp w, pass p: tile column c = 4 * ((w + 16 p) % 16) +
//        l / 8 and row group q = l % 8 + 8 * ((w + 16 p) / 16) gather
//        tile[4q .. 4q+3][c] (four 4-byte reads: the 8 row groups land on
//        8 different bank quads, the 4 columns on the 4 banks of a quad --
//        32 banks, one wavefront) and store them as one float4 of out's row
//        bx + c: 8 lanes x 16 bytes = 128 contiguous bytes per row.
// Block order: the blocks take the tiles down a column of tiles first -- block b + 1
// the tile below block b's -- so that blocks in flight together write the next 256
// bytes of the same 64 rows of out, and each reads 256 bytes of 64 rows of a.  In launch
// order (along a row of tiles) the reads were the contiguous side and the writes were
// spread over every row of out: on an H200 0.92-0.93x of the device copy at 8192^2
// against 0.96x down the column (16384^2: 0.93 -> 0.97; docs/measurements.md).
static constexpr int WIDE_THREADS = GM_TRANSPOSE_WIDE_ROWS * T; // 512

static __device__ __forceinline__ void wide(const float *__restrict__ a,
                                            float *__restrict__ out, int m, int n)
{
    __shared__ float4 tile[W * W / 4];
    const int t = threadIdx.y * T + threadIdx.x;
    const unsigned long long b = (unsigned long long)blockIdx.y * gridDim.x + blockIdx.x;
    const int bx = (int)(b / gridDim.y) * W, by = (int)(b % gridDim.y) * W;
    const int g = t & 15, r = t >> 4;
#pragma unroll
    for (int p = 0; p < W; p += WIDE_THREADS / 16) {
        const int row = r + p, R = by + row, C = bx + 4 * g;
        tile[row * 16 + (g ^ ((row >> 2) & 7))] =
            R < m && C < n ? *reinterpret_cast<const float4 *>(a + (size_t)R * n + C)
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    __syncthreads();
    const float *s = reinterpret_cast<const float *>(tile);
    const int lane = t & 31, w = t >> 5, ql = lane & 7, cc = lane >> 3;
#pragma unroll
    for (int p = 0; p < 32 * T / WIDE_THREADS; ++p) {
        const int k = w + WIDE_THREADS / 32 * p, cg = k & 15, c = 4 * cg + cc;
        const int q = ql + 8 * (k >> 4);
        const int orow = bx + c, ocol = by + 4 * q;
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
            v[i] = s[4 * ((4 * q + i) * 16 + (cg ^ ql)) + cc];
        if (orow < n && ocol < m)
            *reinterpret_cast<float4 *>(out + (size_t)orow * m + ocol) =
                make_float4(v[0], v[1], v[2], v[3]);
    }
}

// The kernel of variant V; BROWS: threadIdx.y (the threads per tile column);
// WIDE: coarsened's float4 path.
template <int V, int BROWS, bool WIDE = false>
__global__ void __launch_bounds__(WIDE ? WIDE_THREADS : T * BROWS)
    transpose_kernel(const float *__restrict__ a, float *__restrict__ out, int m, int n)
{
    if constexpr (V == GM_TRANSPOSE_NAIVE_ROW)
        naive_row(a, out, m, n);
    else if constexpr (V == GM_TRANSPOSE_NAIVE_COL)
        naive_col(a, out, m, n);
    else if constexpr (WIDE)
        wide(a, out, m, n);
    else // coarsened's scalar path is padded
        tiled<V == GM_TRANSPOSE_COARSENED ? GM_TRANSPOSE_PADDED : V, BROWS>(a, out, m, n);
}

using transpose_fn = void (*)(const float *, float *, int, int);

// coarsened takes the float4 path when both sizes are multiples of 4 (every
// row then starts 16-byte aligned; cudaMalloc aligns the base).
static bool transpose_wide_ok(const gm_transpose_params *p)
{
    return p->m % 4 == 0 && p->n % 4 == 0 && (reinterpret_cast<size_t>(p->a) & 15) == 0 &&
           (reinterpret_cast<size_t>(p->out) & 15) == 0;
}

static transpose_fn select_transpose(const gm_transpose_params *p)
{
    switch (p->variant) {
    case GM_TRANSPOSE_NAIVE_ROW:
        return transpose_kernel<GM_TRANSPOSE_NAIVE_ROW, ROWS>;
    case GM_TRANSPOSE_NAIVE_COL:
        return transpose_kernel<GM_TRANSPOSE_NAIVE_COL, ROWS>;
    case GM_TRANSPOSE_SHARED:
        return transpose_kernel<GM_TRANSPOSE_SHARED, ROWS>;
    case GM_TRANSPOSE_PADDED:
        return transpose_kernel<GM_TRANSPOSE_PADDED, ROWS>;
    case GM_TRANSPOSE_SWIZZLED:
        return transpose_kernel<GM_TRANSPOSE_SWIZZLED, ROWS>;
    case GM_TRANSPOSE_COARSENED:
        return transpose_wide_ok(p)
                   ? transpose_kernel<GM_TRANSPOSE_COARSENED, GM_TRANSPOSE_WIDE_ROWS, true>
                   : transpose_kernel<GM_TRANSPOSE_COARSENED, 4>;
    default:
        return nullptr;
    }
}

extern "C" const void *gm_transpose_kernel(const gm_transpose_params *p)
{
    return (const void *)select_transpose(p);
}

extern "C" cudaError_t gm_transpose(const gm_transpose_params *p, gm_dims *dims,
                                    cudaStream_t stream)
{
    const transpose_fn k = select_transpose(p);
    const bool wide = k == transpose_kernel<GM_TRANSPOSE_COARSENED, GM_TRANSPOSE_WIDE_ROWS, true>;
    const int tile = wide ? W : T;
    const int brows = wide ? GM_TRANSPOSE_WIDE_ROWS
                      : p->variant == GM_TRANSPOSE_COARSENED ? 4
                                                             : ROWS;
    const size_t smem = p->variant <= GM_TRANSPOSE_NAIVE_COL ? 0
                        : wide                              ? sizeof(float4) * W * W / 4
                                                            : sizeof(float) * T * (T + 1);
    *dims = gm_dims{{(unsigned)((p->n + tile - 1) / tile), (unsigned)((p->m + tile - 1) / tile), 1},
                    {(unsigned)T, (unsigned)brows, 1},
                    smem};
    return gm_run(k, dims, 0, stream, p->a, p->out, p->m, p->n);
}

// ---- shared_stride ------------------------------------------------------------------

// Element e of the shared array holds small integers (e % 7, e % 5, ...): any
// sum of 65536 of them is exact in float32, so the result is checked bit for bit.
template <typename V> static __device__ __forceinline__ V stride_value(int e);
template <> __device__ __forceinline__ float stride_value<float>(int e) { return (float)(e % 7); }
template <> __device__ __forceinline__ float2 stride_value<float2>(int e)
{
    return make_float2((float)(e % 7), (float)(e % 5));
}
template <> __device__ __forceinline__ float4 stride_value<float4>(int e)
{
    return make_float4((float)(e % 7), (float)(e % 5), (float)(e % 3), (float)(e % 2));
}
static __device__ __forceinline__ float stride_sum(float v) { return v; }
static __device__ __forceinline__ float stride_sum(float2 v) { return v.x + v.y; }
static __device__ __forceinline__ float stride_sum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// The element type of a gm_shared_stride_variant.
template <int WORD> struct stride_word { using type = float; };
template <> struct stride_word<GM_SHARED_FLOAT2> { using type = float2; };
template <> struct stride_word<GM_SHARED_FLOAT4> { using type = float4; };

// The block fills the array (consecutive elements per warp: conflict-free),
// waits, then lane l reads element (l * stride + 32 i) mod N at step i.  The
// 32 i moves every lane by a multiple of 128 bytes, so every step meets the
// banks exactly as step 0 does (and 31 * stride < N keeps the lanes'
// elements distinct): the conflict of one stride, `iters` times per warp.
template <int WORD>
__global__ void __launch_bounds__(GM_SHARED_STRIDE_BLOCK)
    shared_stride_kernel(float *__restrict__ out, int stride, int iters)
{
    using V = typename stride_word<WORD>::type;
    constexpr int N = GM_SHARED_STRIDE_BYTES / sizeof(V);
    __shared__ V s[N];
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        s[i] = stride_value<V>(i);
    __syncthreads();
    const int base = (threadIdx.x & 31) * stride;
    float acc = 0.0f;
#pragma unroll 4
    for (int i = 0; i < iters; ++i)
        acc += stride_sum(s[(base + 32 * i) & (N - 1)]);
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

using stride_fn = void (*)(float *, int, int);

static stride_fn select_stride(const gm_shared_stride_params *p)
{
    return gm_select<GM_SHARED_FLOAT, GM_SHARED_FLOAT2, GM_SHARED_FLOAT4>(
        p->variant, [](auto w) -> stride_fn { return shared_stride_kernel<decltype(w)::value>; });
}

extern "C" const void *gm_shared_stride_kernel(const gm_shared_stride_params *p)
{
    return (const void *)select_stride(p);
}

extern "C" cudaError_t gm_shared_stride(const gm_shared_stride_params *p, gm_dims *dims,
                                        cudaStream_t stream)
{
    *dims = gm_dims_1d((unsigned)p->blocks, GM_SHARED_STRIDE_BLOCK, GM_SHARED_STRIDE_BYTES);
    return gm_run(select_stride(p), dims, 0, stream, p->out, p->stride, p->iters);
}
