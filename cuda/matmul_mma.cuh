// matmul_mma.cuh -- matmul's `mma` variant, included by cuda/matmul.cu after its
// cp.async helpers (one object per .cu: this header is part of matmul.cu).
//
// mma: the tensor cores through `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`
// (sm_80 and newer), the Ampere path.  A 128 x 128 tile of C per block of 4 warps,
// 64 x 64 per warp.  The float32 operands are rounded to TF32 (10 fraction bits, to
// nearest) as they leave shared memory; the products are summed in float32.
//
// Memory: a 3-stage cp.async pipeline (global -> shared without registers) keeps the
// next two 32-wide k slices of A (128 x 32) and B (32 x 128) in flight while the warps
// multiply the current one: 96 KiB of dynamic shared memory per block, two blocks per
// SM, one barrier per k slice.  Every copy is 16 bytes: A's rows lie lda floats apart
// and B's ldb, both multiples of 4 on 16-byte aligned bases -- where K or N is not a
// multiple of 4 (or a base is off the 16-byte grid) the launcher first copies the
// operand into the call's workspace with rows padded to a multiple of 4 floats, the
// padding zeroed (4-byte copies had run ragged shapes at a third of the aligned speed:
// 4095^3 0.33x, 4097^3 0.28x of 4096^3's GFLOP/s on an H100).  A copy that starts
// inside the matrix takes its 4 floats (past K or N: the padding's zeros); one that
// starts outside reads nothing and zero-fills (cp.async's src-size 0), so any M, N, K
// works.
//
// The warps compute C's transpose, as wgmma does: each mma multiplies a 16 x 8 piece of
// B^T (mma's A operand: 16 columns of C) by an 8 x 8 piece of A^T (its B operand: 8 rows
// of C).  That way every operand register pair the instruction wants is one 8-byte load
// from shared memory, already in place:
//   * mma's B operand (b0: row t, col g; b1: row t + 4, col g) is A[row g][k j = t],
//     A[row g][k j = t + 4].  The sum over k does not care which k each fragment column
//     j stands for, as long as both operands agree (lanes with the same t hold both):
//     j = t and t + 4 are taken as k = kk + 2t and kk + 2t + 1, adjacent floats of a row
//     of A -- one LDS.64, b0 and b1 in order.
//   * mma's A operand (a0: row g, col t; a1: row g + 8, col t; a2, a3: col t + 4) is
//     B[k][column of row g], B[k][column of row g + 8], then the same at k + 1.  Rows g
//     and g + 8 are taken as C's columns n0 + 2g and n0 + 2g + 1: (a0, a1) is one LDS.64
//     of row k of B, (a2, a3) one of row k + 1.
// Per warp and k step of 8: 8 loads for the 4 pieces of B^T (16 columns of C each), 8 for
// the 8 pieces of A^T (8 rows each), 32 mmas; a piece of B^T serves 8 mmas, one of A^T 4.
// No register moves (fed the other way round, A's fragment quads need them: a0 and a1 sit
// in different rows of A), and the stores of C pair up the same way (below).
// Fragments come by plain loads (LDS), not ldmatrix: ldmatrix moves 8 x 8 matrices of
// 16-bit elements, so on 32-bit TF32 data it would deliver halves a lane must reassemble.
// The swizzles (offsets in floats within a stage; 16-byte chunks permuted inside each
// 128-byte row segment, so every cp.async chunk stays whole):
//   A [128][32]:  chunk c/4 of row r stored at chunk (c/4) ^ 2 (r % 4).  A half warp's
//     8-byte loads (lanes g = 0..3 or 4..7, t = 0..3) read rows r0 + g, floats kk + 2t,
//     + 1: 4 rows in 4 different chunk pairs, t's 4 float pairs inside one pair -- all
//     32 banks, the 2 wavefronts 256 bytes need.
//   B [32][128]:  chunk n/4 of row k stored at chunk (n/4) ^ 2 ((k / 2) % 4).  A half
//     warp's 8-byte loads read rows kk + 2t (+ 1), floats n0 + 2g, + 1: the 4 rows t in 4
//     different chunk pairs, g's 8 floats in one pair -- 32 banks, 2 wavefronts a warp.
// Without them every row of A (and every k row of B) starts at bank 0: 4-way conflicts.
constexpr int MMA_BM = 128, MMA_BN = 128, MMA_BK = 32, MMA_WM = 64, MMA_WN = 64,
              MMA_STAGES = 3;
constexpr int MMA_WARPS_N = MMA_BN / MMA_WN, MMA_THREADS = (MMA_BM / MMA_WM) * MMA_WARPS_N * 32;
constexpr int MMA_TI = MMA_WM / 8, MMA_TJ = MMA_WN / 16; // C's 8-row x 16-column tiles per warp
constexpr int MMA_A_FLOATS = MMA_BM * MMA_BK, MMA_B_FLOATS = MMA_BK * MMA_BN;
constexpr size_t MMA_SMEM = (size_t)MMA_STAGES * (MMA_A_FLOATS + MMA_B_FLOATS) * sizeof(float);
static_assert(MMA_THREADS == 128 && MMA_BK == 32 && MMA_BN == 128, "the swizzles assume these");
static_assert(GM_MATMUL_MMA_TILE == MMA_BM && MMA_BM == MMA_BN, "matmul.h's tile");

// offsets (floats) of A[r][c] and B[k][n] inside a stage's tiles
__device__ __forceinline__ int mma_a_at(int r, int c)
{
    return r * MMA_BK + ((((c >> 2) ^ ((r & 3) << 1)) << 2) | (c & 3));
}

__device__ __forceinline__ int mma_b_at(int k, int n)
{
    return k * MMA_BN + ((((n >> 2) ^ (((k >> 1) & 3) << 1)) << 2) | (n & 3));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ void cp_async_wait_stages()  // all but the newest STAGES - 2 groups
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(MMA_STAGES - 2) : "memory");
}

// float32 -> TF32, rounded to nearest: on sm_90 and newer cvt.rn (ties to even; one
// F2FP instruction), below it cvt.rna (ties away from zero; a compare and an add: twice
// the issue slots, 150 instead of 193 TFLOP/s at 4096^3 on an H100).  Handing the
// float32 bits over unconverted would let the tensor cores truncate them: 7-15% faster
// there (H100, 4096^3, two sessions' runs), 2.5 times the error (8.1e-4 against 3.2e-4,
// the largest error over the largest element of the float64 product).
__device__ __forceinline__ unsigned to_tf32(float x)
{
    unsigned u;
#if __CUDA_ARCH__ >= 900
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
#else
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
#endif
    return u;
}

// d += a (16 x 8, row) * b (8 x 8, col); fragments as the PTX ISA's "Matrix Fragments
// for mma.m16n8k8" (.tf32): a0 (row g, col t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8,
// t + 4); b0 (row t, col g), b1 (t + 4, g); d0, d1 (g, 2t and 2t + 1), d2, d3 (g + 8, ..).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The k slice k0 .. k0 + 31 of A's rows bm .. bm + 127 and B's columns bn .. bn + 127
// into stage `sa` / `sb` by cp.async, one commit group.  16-byte copies (A: a warp's 32
// copy 4 rows of 128 bytes; B: one row of 512 bytes); one that starts outside the matrix
// reads nothing (src-size 0).
__device__ __forceinline__ void mma_load_tiles(float *sa, float *sb, const float *__restrict__ A,
                                               const float *__restrict__ B, int M, int N, int K,
                                               int lda, int ldb, int bm, int bn, int k0)
{
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < MMA_A_FLOATS / 4 / MMA_THREADS; ++i) {
        const int f = tid + i * MMA_THREADS, r = f / (MMA_BK / 4), c = (f % (MMA_BK / 4)) * 4;
        const bool in = bm + r < M && k0 + c < K;
        cp_async16(sa + mma_a_at(r, c), in ? A + (size_t)(bm + r) * lda + k0 + c : A, in);
    }
#pragma unroll
    for (int i = 0; i < MMA_B_FLOATS / 4 / MMA_THREADS; ++i) {
        const int f = tid + i * MMA_THREADS, k = f / (MMA_BN / 4), c = (f % (MMA_BN / 4)) * 4;
        const bool in = k0 + k < K && bn + c < N;
        cp_async16(sb + mma_b_at(k, c), in ? B + (size_t)(k0 + k) * ldb + bn + c : B, in);
    }
    cp_async_commit();
}

// The same copies for a block whose tiles lie wholly inside A and B (and the slice inside
// K): no bounds, and the addresses walk, not recomputed.  A thread's A copies are row
// tid / 8 + 16 i, floats 4 (tid % 8) .. + 3 (i < 8): one swizzled chunk for all i (the
// row's r % 4 does not change with i), 2 KiB apart in the stage, 16 lda floats apart in A;
// its B copies are row tid / 32 + 4 i, floats 4 (tid % 32) .. + 3: the swizzle
// ((k / 2) % 4) alternates with i's parity, 2 KiB apart per i, 4 ldb floats apart in B.
// Each copy is then an add or two and the LDGSTS (the general path spends ~20 issue slots
// a copy on the same addresses: the bounds, the swizzle and 64-bit products).
struct MmaFast {
    const float *a, *b;   // this thread's first A and B floats at k0 = 0
    unsigned sa, sb0, sb1; // byte offsets in a stage's A tile / B tile (B: even, odd i)
};

__device__ __forceinline__ MmaFast mma_fast_init(const float *__restrict__ A,
                                                 const float *__restrict__ B, int lda, int ldb,
                                                 int bm, int bn)
{
    const int tid = threadIdx.x, ra = tid / 8, ca = (tid % 8) * 4, kb = tid / 32,
              cb = (tid % 32) * 4;
    return MmaFast{A + (size_t)(bm + ra) * lda + ca, B + (size_t)kb * ldb + bn + cb,
                   (unsigned)(4 * mma_a_at(ra, ca)), (unsigned)(4 * mma_b_at(kb, cb)),
                   (unsigned)(4 * (mma_b_at(kb + 4, cb) - 4 * MMA_BN))};
}

__device__ __forceinline__ void cp_async16_to(unsigned dst, const float *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void mma_load_fast(unsigned sa, unsigned sb, const MmaFast &f,
                                              int lda, int ldb, int k0)
{
    const float *pa = f.a + k0, *pb = f.b + (size_t)k0 * ldb;
    const size_t da = (size_t)16 * lda, db = (size_t)4 * ldb;
#pragma unroll
    for (int i = 0; i < MMA_A_FLOATS / 4 / MMA_THREADS; ++i)
        cp_async16_to(sa + f.sa + i * 16 * MMA_BK * 4, pa + i * da);
#pragma unroll
    for (int i = 0; i < MMA_B_FLOATS / 4 / MMA_THREADS; ++i)
        cp_async16_to(sb + (i & 1 ? f.sb1 : f.sb0) + i * 4 * MMA_BN * 4, pb + i * db);
    cp_async_commit();
}

__device__ __forceinline__ void mma_tiles(float *smem, const float *__restrict__ A,
                                          const float *__restrict__ B, float *__restrict__ C,
                                          int M, int N, int K, int lda, int ldb)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wm = (warp / MMA_WARPS_N) * MMA_WM, wn = (warp % MMA_WARPS_N) * MMA_WN;
    const int bm = blockIdx.y * MMA_BM, bn = blockIdx.x * MMA_BN;
    float *const sa = smem, *const sb = smem + MMA_STAGES * MMA_A_FLOATS;
    float acc[MMA_TJ][MMA_TI][4] = {};
    const int tiles = (K + MMA_BK - 1) / MMA_BK;
    // the fast copies: the block's tiles inside A and B (the last, partial k slice still
    // takes the general path)
    const bool fast = bm + MMA_BM <= M && bn + MMA_BN <= N;
    const MmaFast f = mma_fast_init(A, B, lda, ldb, bm, bn);
    const unsigned sa_u = (unsigned)__cvta_generic_to_shared(sa),
                   sb_u = (unsigned)__cvta_generic_to_shared(sb);

    // prologue: slices 0 .. STAGES - 2 in flight (an empty group where there is none,
    // so that group s is always slice s and wait_group counts right)
#pragma unroll
    for (int s = 0; s < MMA_STAGES - 1; ++s) {
        if (fast && (s + 1) * MMA_BK <= K)
            mma_load_fast(sa_u + s * MMA_A_FLOATS * 4, sb_u + s * MMA_B_FLOATS * 4, f, lda,
                          ldb, s * MMA_BK);
        else if (s < tiles)
            mma_load_tiles(sa + s * MMA_A_FLOATS, sb + s * MMA_B_FLOATS, A, B, M, N, K, lda,
                           ldb, bm, bn, s * MMA_BK);
        else
            cp_async_commit();
    }
    for (int kt = 0; kt < tiles; ++kt) {
        // slice kt has landed (this thread's copies), then the barrier: everyone's
        // copies are visible, and every warp is done with slice kt - 1, whose stage
        // the next copies overwrite
        cp_async_wait_stages();
        __syncthreads();
        const int next = kt + MMA_STAGES - 1, ns = next % MMA_STAGES;
        if (fast && (next + 1) * MMA_BK <= K)
            mma_load_fast(sa_u + ns * MMA_A_FLOATS * 4, sb_u + ns * MMA_B_FLOATS * 4, f, lda,
                          ldb, next * MMA_BK);
        else if (next < tiles)
            mma_load_tiles(sa + ns * MMA_A_FLOATS, sb + ns * MMA_B_FLOATS, A, B, M, N, K, lda,
                           ldb, bm, bn, next * MMA_BK);
        else
            cp_async_commit();
        const float *a = sa + (kt % MMA_STAGES) * MMA_A_FLOATS;
        const float *b = sb + (kt % MMA_STAGES) * MMA_B_FLOATS;
#pragma unroll
        for (int kk = 0; kk < MMA_BK; kk += 8) {
            const int k = kk + 2 * t; // fragment columns j = t, t + 4: k, k + 1
            unsigned bt[MMA_TJ][4], at[MMA_TI][2]; // pieces of B^T and of A^T
#pragma unroll
            for (int j = 0; j < MMA_TJ; ++j) { // C's columns wn + 16 j + 2g, + 1
                const int n = wn + 16 * j + 2 * g;
                const float2 lo = *reinterpret_cast<const float2 *>(&b[mma_b_at(k, n)]);
                const float2 hi = *reinterpret_cast<const float2 *>(&b[mma_b_at(k + 1, n)]);
                bt[j][0] = to_tf32(lo.x);
                bt[j][1] = to_tf32(lo.y);
                bt[j][2] = to_tf32(hi.x);
                bt[j][3] = to_tf32(hi.y);
            }
#pragma unroll
            for (int i = 0; i < MMA_TI; ++i) { // C's row wm + 8 i + g: A[row][k], [k + 1]
                const float2 v = *reinterpret_cast<const float2 *>(&a[mma_a_at(wm + 8 * i + g, k)]);
                at[i][0] = to_tf32(v.x);
                at[i][1] = to_tf32(v.y);
            }
#pragma unroll
            for (int i = 0; i < MMA_TI; ++i)
#pragma unroll
                for (int j = 0; j < MMA_TJ; ++j)
                    mma_tf32(acc[j][i], bt[j], at[i]);
        }
    }
    cp_async_wait_all(); // only empty groups are left; none outlives the block

    // C: tile (j, i) is C's rows wm + 8i + 2t, + 1 and columns wn + 16j + 2g, + 1: the
    // lane holds (d0, d2) of the first row and (d1, d3) of the second, one 8-byte store
    // each where N is even and C 8-byte aligned, else two scalars
    const bool vec_c = (N % 2) == 0 && (reinterpret_cast<uintptr_t>(C) & 7) == 0;
#pragma unroll
    for (int i = 0; i < MMA_TI; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = bm + wm + 8 * i + 2 * t + h;
            if (r >= M)
                continue;
#pragma unroll
            for (int j = 0; j < MMA_TJ; ++j) {
                const int c = bn + wn + 16 * j + 2 * g;
                float *out = C + (size_t)r * N + c;
                const float v0 = acc[j][i][h], v1 = acc[j][i][h + 2];
                if (vec_c && c + 1 < N) {
                    *reinterpret_cast<float2 *>(out) = make_float2(v0, v1);
                } else {
                    if (c < N)
                        out[0] = v0;
                    if (c + 1 < N)
                        out[1] = v1;
                }
            }
        }
    }
}
#endif // __CUDA_ARCH__ >= 800

// The kernel: 128 threads, two blocks per SM (at most 255 registers a thread); A's rows
// lda floats apart, B's ldb (multiples of 4, 16-byte aligned bases: the launcher pads).
// Built for every architecture of the wheel; below sm_80 its body is empty and the
// launcher refuses before any launch (csrc/lessons/matmul.c first, naming the capability).
__global__ void __launch_bounds__(MMA_THREADS, 2)
    matmul_mma(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
               int M, int N, int K, int lda, int ldb)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    extern __shared__ __align__(128) float mma_smem[];
    mma_tiles(mma_smem, A, B, C, M, N, K, lda, ldb);
#endif
}
