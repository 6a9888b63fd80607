// matmul_wgmma.cuh -- matmul's `wgmma` variant, included by cuda/matmul.cu (one object
// per .cu: this header is part of matmul.cu).
//
// wgmma: the Hopper path.  `wgmma.mma_async` is issued by a warpgroup (4 warps, 128
// threads) and multiplies a 64 x N x 8 TF32 product asynchronously; its B operand is read
// by the tensor cores straight from shared memory through a 64-bit descriptor, and the
// tiles get there by the tensor copy (TMA: cp.async.bulk.tensor on a CUtensorMap),
// completing on mbarriers.  No thread copies a tile, and no thread loads the big operand.
//
// TF32 wgmma reads both shared operands K-major (k contiguous) only: A (row-major M x K)
// is, B (row-major K x N) is not.  So the roles are swapped -- the kernel computes the
// tile of C's transpose, D = B^T A^T: wgmma's M (64 per warpgroup) is C's columns, its N
// (256) C's rows; its A operand is B^T, in registers, which each thread loads from the
// B tile in shared memory as fragments (4 LDS per 8 k; the tensor cores take A from
// registers too); its B operand is the A tile, K-major as it lies in global memory, read
// through the descriptor.  No transposed copy of B is made.
//
// Block: a 256 x 128 tile of C; 2 warpgroups (C columns 0-63 and 64-127 of the tile, one
// m64n256k8 per 8 k, 128 accumulators a thread: 170 registers).  Thread 0 also issues
// the TMA copies: the first 4 slices up front, and in step kt, once its warpgroup's
// products are issued, slice kt + 3 into the stage of slice kt - 1 as soon as every warp
// is done with that one -- the wait overlaps the tensor cores' work.  (A producer
// warpgroup of its own would leave 168 registers a thread of 384: too few for the 128
// accumulators and the fragments, ptxas serializes the wgmma then.)  A 4-stage ring of k
// slices of 32: per stage the A tile (256 rows x 128 bytes: one box, 32 KiB) and the B
// tile (32 k x 128 columns: 4 boxes of 32 x 32, 16 KiB), both with the 128-byte swizzle
// (16-byte chunk j of row r at j ^ (r % 8)) that the descriptor names and that spreads the
// fragment loads over the banks.  full[s]: the copies of stage s have landed (expect_tx); empty[s]: all 8 warps
// are done with it.  One block per SM (193 KiB of shared memory).
//
// Rounding: B's values are rounded to TF32 (matmul_mma.cuh's to_tf32: cvt.rn, ties to
// even) as they become fragments; A's are read by the tensor cores from shared memory,
// which use the top 19 bits (truncation).
// The sums are float32.
//
// Edges: the tensor copy fills zeros outside the matrices, so any M, N, K works; a box
// wholly past N is not copied (its stage area is zeroed once).  The tensor map needs
// rows on the 16-byte grid: where K or N is not a multiple of 4 (or a base is not
// 16-byte aligned) the launcher first copies the operand into the call's workspace with
// rows padded to a multiple of 4 floats (matmul_pad_rows); the map still ends at K, N.
constexpr int WG_BM = 256, WG_BN = 128, WG_BK = 32, WG_STAGES = 4, WG_CONSUMERS = 2;
constexpr int WG_THREADS = WG_CONSUMERS * 128;
constexpr int WG_A_BYTES = WG_BM * WG_BK * 4, WG_B_BYTES = WG_BK * WG_BN * 4;
constexpr int WG_STAGE_BYTES = WG_A_BYTES + WG_B_BYTES, WG_B_BOX_BYTES = 32 * 32 * 4;
constexpr size_t WG_SMEM = (size_t)WG_STAGES * WG_STAGE_BYTES + 1024; // + the 1 KiB alignment
constexpr int WG_C_PITCH = WG_BN + 2; // floats a row of the tile of C staged at the end
// Block order: the blocks take C's tiles in groups of WG_GROUP tile rows, down a group's
// rows first, then along its columns, so that a wave of 132 blocks (one per SM) covers
// 4 x 33 tiles and reads 4 panels of A and 33 of B, where row by row it covered 2 x 64
// and read 2 of A and all 64 of B: at 8192^3 (H200) DRAM reads 3.2 GB instead of 6.4 and
// 341.6 TFLOP/s instead of 317.3 (groups of 2 / 8 / 16: 307.0 / 333.2 / 326.1); at 4096^3
// and 2048^3 within 1% of row order (docs/measurements.md, "wgmma's block order").
constexpr int WG_GROUP = 4;
static_assert((size_t)WG_BM * WG_C_PITCH * 4 <= (size_t)WG_STAGES * WG_STAGE_BYTES, "C fits");
static_assert(GM_MATMUL_WGMMA_TILE == WG_BN && WG_BM == 2 * WG_BN, "matmul.h's tile");
static_assert(WG_BK * 4 == 128, "a tile row is one 128-byte swizzle row");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GM_HAS_WGMMA 1
#else
#define GM_HAS_WGMMA 0
#endif

#if GM_HAS_WGMMA
__device__ __forceinline__ unsigned smem_addr_of(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// The shared-memory descriptor of a K-major operand with the 128-byte swizzle: start
// address, leading offset (unused by this layout: 1), stride 1024 bytes between groups
// of 8 rows, layout 1 (SWIZZLE_128B).  The 8-k step kk starts kk * 32 bytes into the
// rows; the swizzle is applied to the address bits, as the engine wrote it.
__device__ __forceinline__ unsigned long long wg_desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) |
           ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_wait_all()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

#define GM_WG_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define GM_WG_F16(i) GM_WG_F4(i), GM_WG_F4(i + 4), GM_WG_F4(i + 8), GM_WG_F4(i + 12)
// d (64 x 256, float32) += a (64 x 8, TF32 fragments in registers) * the 8 x 256 operand
// the descriptor names.  d[4j + 2h + e] is row 16 w + g + 8 h, column 8 j + 2 t + e of the
// warpgroup's 64 x 256 (warp w, lane 4 g + t); a[2q + h] is row 16 w + g + 8 h, k t + 4 q.
__device__ __forceinline__ void wg_mma(float (&d)[128], const unsigned (&a)[4],
                                       unsigned long long desc)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, "
        "%35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, "
        "%52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, "
        "%69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "
        "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
        "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, "
        "%116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "{%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
        : GM_WG_F16(0), GM_WG_F16(16), GM_WG_F16(32), GM_WG_F16(48), GM_WG_F16(64),
          GM_WG_F16(80), GM_WG_F16(96), GM_WG_F16(112)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc)
        : "memory");
}
#undef GM_WG_F16
#undef GM_WG_F4

#endif // GM_HAS_WGMMA

// The kernel: 256 threads, one block per SM.  Built for every architecture of the
// wheel; its body is sm_90a's only (wgmma exists on compute capability 9.0 alone), and
// csrc/lessons/matmul.c refuses other GPUs before any launch, naming the capability.
__global__ void __launch_bounds__(WG_THREADS, 1)
    matmul_wgmma(const __grid_constant__ CUtensorMap map_a,
                 const __grid_constant__ CUtensorMap map_b, float *__restrict__ C, int M, int N,
                 int K)
{
#if GM_HAS_WGMMA
    extern __shared__ unsigned char wg_raw[];
    __shared__ __align__(8) unsigned long long bars[2 * WG_STAGES]; // full[s], empty[s]
    const unsigned base = (smem_addr_of(wg_raw) + 1023u) & ~1023u;  // the swizzle's 1 KiB
    unsigned char *const smem = wg_raw + (base - smem_addr_of(wg_raw));
    const unsigned full0 = smem_addr_of(&bars[0]), empty0 = smem_addr_of(&bars[WG_STAGES]);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // The block's tile of C (see WG_GROUP): the blocks start in the order of their linear
    // index, tile rows first + r % rows of a group, its columns r / rows.
    const int id = blockIdx.y * gridDim.x + blockIdx.x, per = WG_GROUP * gridDim.x;
    const int first = id / per * WG_GROUP, r = id % per;
    const int rows = (int)gridDim.y - first < WG_GROUP ? (int)gridDim.y - first : WG_GROUP;
    const int bm = (first + r % rows) * WG_BM, bn = r / rows * WG_BN;
    const int ktiles = (K + WG_BK - 1) / WG_BK;
    int boxes = (N - bn + 31) / 32; // B boxes inside N (the rest stay zero)
    boxes = boxes > WG_BN / 32 ? WG_BN / 32 : boxes;

    if (threadIdx.x == 0) {
        for (int s = 0; s < WG_STAGES; ++s) {
            bar_init(full0 + 8 * s, 1);
            bar_init(empty0 + 8 * s, WG_CONSUMERS * 4);
        }
        fence_proxy_async(); // the barriers' init visible to the copy engine
    }
    if (boxes < WG_BN / 32) // the last column of tiles: zero the boxes never copied
        for (int i = threadIdx.x; i < WG_STAGES * (WG_BN / 32 - boxes) * WG_B_BOX_BYTES / 4;
             i += WG_THREADS) {
            const int per = (WG_BN / 32 - boxes) * WG_B_BOX_BYTES / 4;
            reinterpret_cast<float *>(smem + (i / per) * WG_STAGE_BYTES + WG_A_BYTES +
                                      boxes * WG_B_BOX_BYTES)[i % per] = 0.0f;
        }
    __syncthreads();

    // slice kt into stage kt % STAGES (thread 0 only)
    const unsigned bytes = WG_A_BYTES + boxes * WG_B_BOX_BYTES;
    auto load = [&](int kt) {
        const int s = kt % WG_STAGES;
        const unsigned st = base + s * WG_STAGE_BYTES, full = full0 + 8 * s;
        bar_expect(full, bytes);
        tensor_load(st, &map_a, kt * WG_BK, bm, full);
        for (int b = 0; b < boxes; ++b)
            tensor_load(st + WG_A_BYTES + b * WG_B_BOX_BYTES, &map_b, bn + 32 * b, kt * WG_BK,
                        full);
    };
    if (threadIdx.x == 0)
        for (int kt = 0; kt < WG_STAGES && kt < ktiles; ++kt)
            load(kt);

    // warpgroup wgi computes C columns bn + 64 wgi .. + 63: wgmma's row 16 w + g + 8 h of
    // it (warp w, lane 4 g + t) stands for column nl = 64 wgi + col_of(w, g, h) of the tile,
    // where col_of = 32 (w / 2) + 8 (w % 2) + g % 4 + 4 h + 16 (g / 4): any order works as
    // long as the fragments and the stores of C agree, and this one puts the 8 g's of a
    // fragment load in two different 16-byte chunk groups (g / 4: 16 columns apart) -- with
    // the swizzle, 32 banks for the 4 k's of t, where 8 consecutive columns would meet
    // 2-way conflicts.  Fragment a[2q + h] of k step kk is B[8 kk + t + 4 q][bn + nl]: in box
    // nl / 32, row k, chunk ((nl % 32) / 4) ^ (k % 8) (k % 8 = t + 4 q), float nl % 4.
    const int wgi = warp / 4, w = warp % 4, g = lane / 4, t = lane % 4;
    int col_of[2];
    unsigned frag_off[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        col_of[h] = 64 * wgi + 32 * (w / 2) + 8 * (w % 2) + g % 4 + 4 * h + 16 * (g / 4);
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int nl = col_of[h], k = t + 4 * q, c = nl % 32;
            frag_off[q][h] = WG_A_BYTES + (nl / 32) * WG_B_BOX_BYTES + k * 128 +
                             (((c / 4) ^ (k % 8)) << 4) + (c % 4) * 4;
        }
    }
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i)
        d[i] = 0.0f;
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % WG_STAGES;
        bar_wait(full0 + 8 * s, (kt / WG_STAGES) & 1);
        const unsigned char *st = smem + s * WG_STAGE_BYTES;
        unsigned a[4][4];
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
            for (int q = 0; q < 2; ++q)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    a[kk][2 * q + h] = to_tf32( // matmul_mma.cuh's rounding
                        *reinterpret_cast<const float *>(st + frag_off[q][h] + kk * 8 * 128));
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
            wg_mma(d, a[kk], wg_desc(base + s * WG_STAGE_BYTES + kk * 32));
        wg_commit();
        // thread 0: slice kt - 1 + STAGES into the stage of kt - 1 once all 8 warps are
        // done with it (its own warpgroup's products of kt are queued meanwhile)
        if (threadIdx.x == 0 && kt >= 1 && kt - 1 + WG_STAGES < ktiles) {
            bar_wait(empty0 + 8 * ((kt - 1) % WG_STAGES), ((kt - 1) / WG_STAGES) & 1);
            load(kt - 1 + WG_STAGES);
        }
        wg_wait_all();
        if (lane == 0)
            bar_arrive(empty0 + 8 * s);
    }

    // C through shared memory (the ring is free once every warp is past its last slice):
    // d[4 j + 2 h + e] is tile row 8 j + 2 t + e, column col_of[h]; rows of WG_C_PITCH
    // (130) floats put a warp's 32 stores in 32 banks.  Then each warp stores half a row
    // of the tile as float2s: 256 contiguous bytes.
    __syncthreads();
    float *cs = reinterpret_cast<float *>(smem);
#pragma unroll
    for (int j = 0; j < 32; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                cs[(8 * j + 2 * t + e) * WG_C_PITCH + col_of[h]] = d[4 * j + 2 * h + e];
    __syncthreads();
    const bool vec = (N % 2) == 0 && (reinterpret_cast<uintptr_t>(C) & 7) == 0;
    for (int i = threadIdx.x; i < WG_BM * WG_BN / 2; i += WG_THREADS) {
        const int r = i / (WG_BN / 2), c = 2 * (i % (WG_BN / 2));
        const int row = bm + r, col = bn + c;
        if (row >= M || col >= N)
            continue;
        const float2 v = *reinterpret_cast<const float2 *>(cs + r * WG_C_PITCH + c);
        float *out = C + (size_t)row * N + col;
        if (vec && col + 1 < N) {
            *reinterpret_cast<float2 *>(out) = v;
        } else {
            out[0] = v.x;
            if (col + 1 < N)
                out[1] = v.y;
        }
    }
#endif
}
