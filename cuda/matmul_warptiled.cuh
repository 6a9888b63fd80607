// matmul_warptiled.cuh -- matmul's `warptiled` variant, included by cuda/matmul.cu after
// its cp.async helpers (one object per .cu: this header is part of matmul.cu).
//
// warptiled: a BM x BN tile of C per block, split into warp tiles of WM x WN,
// each lane a (WM / 32 * 4) x (WN / 16 * 4) block of C as 4 x 4 sub-tiles (lanes
// 8 down x 4 across a warp tile, so a quarter-warp's float4 reads of A cover 128
// contiguous bytes and of B are one broadcast).  Shared memory is double
// buffered: while the block multiplies tile t, the tile t + 1 of B is already
// on its way into the other buffer by asynchronous copies (cp.async, sm_80 and
// newer: global -> shared without passing through registers) and the tile t + 1
// of A is in registers, stored transposed after the product; one barrier per
// tile.  A is transposed in shared memory so a lane's 4 A values of a k are one
// float4; its row stride (BM + 4 floats) keeps the transposing stores at 2-way
// bank conflicts at most.  Out-of-range elements are zero-filled (cp.async
// src-size 0), so any M, N, K works; rows off the 16-byte grid are padded by the
// launcher first (the float4 loads and 16-byte copies then read its copies).

template <int BM, int BN, int BK, int WM, int WN>
struct Warptiled {
    static constexpr int WARPS_N = BN / WN, THREADS = (BM / WM) * WARPS_N * 32;
    static constexpr int SUB_M = WM / 32, SUB_N = WN / 16; // 4 x 4 sub-tiles per lane
    static constexpr int TM = 4 * SUB_M, TN = 4 * SUB_N;
    static constexpr int A_PAD = 4;
    static constexpr int A_LOADS = BM * BK / 4 / THREADS, B_LOADS = BK * BN / 4 / THREADS;
    static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN,
                  "tiles must split into float4 per thread");
    static constexpr size_t SMEM = 2 * BK * (BM + A_PAD + BN) * sizeof(float);
};

template <int BM, int BN, int BK, int WM, int WN>
__device__ __forceinline__ void warptiled(float (&As)[2][BK][BM + 4], float (&Bs)[2][BK][BN],
                                          const float *__restrict__ A,
                                          const float *__restrict__ B, float *__restrict__ C,
                                          int M, int N, int K, int ka, int nb,
                                          const gm_matmul_split &sp)
{
    using W = Warptiled<BM, BN, BK, WM, WN>;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / W::WARPS_N) * WM, wn = (warp % W::WARPS_N) * WN;
    const int lm = (lane % 8) * 4, ln = (lane / 8) * 4;
    // Which tile of C, and which k tiles [kt0, kt1) of it (all, unless a slice of a split
    // tile); where the sums go is settled after the loop (fewer registers live in it).
    const int ktiles = (K + BK - 1) / BK;
    int bm = blockIdx.y * BM, bn = blockIdx.x * BN, kt0 = 0, kt1 = ktiles;
    if (sp.ws != nullptr) { // block b: slice b % splits of tile full + b / splits
        const int z = (int)blockIdx.x % sp.splits, tile = sp.full + (int)blockIdx.x / sp.splits;
        kt0 = (int)((long long)z * ktiles / sp.splits);
        kt1 = (int)((long long)(z + 1) * ktiles / sp.splits);
        bm = (tile / sp.tiles_n) * BM;
        bn = (tile % sp.tiles_n) * BN;
    }
    // A's rows ka floats apart, B's nb: K and N, or round4(K) and round4(N) where the
    // launcher padded the operand (zeros past K and N, so A's loads run to ka)
    const bool vec_a = (ka % 4) == 0 && aligned16(A), vec_b = (nb % 4) == 0 && aligned16(B);
    float acc[W::TM][W::TN] = {};
    float4 areg[W::A_LOADS];

    auto load_a = [&](int k0) { // A[bm + r][k0 + c .. + 3] -> registers
#pragma unroll
        for (int i = 0; i < W::A_LOADS; ++i) {
            const int f = tid + i * W::THREADS, r = bm + f / (BK / 4), k = k0 + (f % (BK / 4)) * 4;
            if (vec_a && r < M && k + 3 < ka) {
                areg[i] = *reinterpret_cast<const float4 *>(A + (size_t)r * ka + k);
            } else {
                const float *a = A + (size_t)r * ka + k;
                areg[i].x = (r < M && k < ka) ? a[0] : 0.0f;
                areg[i].y = (r < M && k + 1 < ka) ? a[1] : 0.0f;
                areg[i].z = (r < M && k + 2 < ka) ? a[2] : 0.0f;
                areg[i].w = (r < M && k + 3 < ka) ? a[3] : 0.0f;
            }
        }
    };
    auto store_a = [&](int buf) { // registers -> As[buf][k][r] (transposed)
#pragma unroll
        for (int i = 0; i < W::A_LOADS; ++i) {
            const int f = tid + i * W::THREADS, r = f / (BK / 4), c = (f % (BK / 4)) * 4;
            As[buf][c][r] = areg[i].x;
            As[buf][c + 1][r] = areg[i].y;
            As[buf][c + 2][r] = areg[i].z;
            As[buf][c + 3][r] = areg[i].w;
        }
    };
    // B's tile by cp.async: 16-byte copies where rows are 16-byte aligned (nb % 4 == 0),
    // else 4-byte ones with consecutive lanes on consecutive columns (element e = tid +
    // q * THREADS is B[k0 + e / BN][bn + e % BN]): 128 contiguous bytes per warp.  gpumem's
    // launcher pads B's rows off the grid, so the 4-byte branch is not taken; it stays
    // because taking it out gave the k loop other registers, 8% slower (see matmul_kernel).
    auto load_b = [&](int buf, int k0) {
        if (vec_b) {
#pragma unroll
            for (int i = 0; i < W::B_LOADS; ++i) {
                const int f = tid + i * W::THREADS, kr = f / (BN / 4), c = (f % (BN / 4)) * 4;
                const int k = k0 + kr, col = bn + c;
                const bool in = k < K && col < nb; // nb % 4 == 0: all four or none
                cp_async16(&Bs[buf][kr][c], in ? B + (size_t)k * nb + col : B, in);
            }
        } else {
            // rows k0 + tid / BN + q * (THREADS / BN), column bn + tid % BN
            const int c = tid % BN, col = bn + c;
            int kr = tid / BN;
            const float *b = B + (size_t)(k0 + kr) * nb + col;
            const size_t step = (size_t)(W::THREADS / BN) * nb;
#pragma unroll
            for (int q = 0; q < 4 * W::B_LOADS; ++q, kr += W::THREADS / BN, b += step) {
                const bool in = k0 + kr < K && col < nb;
                cp_async4(&Bs[buf][kr][c], in ? b : B, in);
            }
        }
        cp_async_commit();
    };

    const int tiles = kt1 - kt0;
    if (tiles > 0) {
        load_b(0, kt0 * BK);
        load_a(kt0 * BK);
        store_a(0);
        cp_async_wait_all();
    }
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const bool next = t + 1 < tiles;
        if (next) {
            load_b(cur ^ 1, (kt0 + t + 1) * BK);
            load_a((kt0 + t + 1) * BK);
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[W::TM], b[W::TN];
#pragma unroll
            for (int s = 0; s < W::SUB_M; ++s) {
                const float4 v = *reinterpret_cast<const float4 *>(&As[cur][k][wm + s * 32 + lm]);
                a[4 * s] = v.x, a[4 * s + 1] = v.y, a[4 * s + 2] = v.z, a[4 * s + 3] = v.w;
            }
#pragma unroll
            for (int s = 0; s < W::SUB_N; ++s) {
                const float4 v = *reinterpret_cast<const float4 *>(&Bs[cur][k][wn + s * 16 + ln]);
                b[4 * s] = v.x, b[4 * s + 1] = v.y, b[4 * s + 2] = v.z, b[4 * s + 3] = v.w;
            }
            // column by column: b[j] stays in its operand slot for TM FFMAs in a row.
            // Row by row (a[i] held instead) ran 7% slower at 4096^3 on an H100, with
            // 1.7x the dispatch stalls (0.68 against 0.39 per issued instruction):
            // the order decides the compiler's register banks and operand reuse
#pragma unroll
            for (int j = 0; j < W::TN; ++j)
#pragma unroll
                for (int i = 0; i < W::TM; ++i)
                    acc[i][j] += a[i] * b[j];
        }
        if (next) {
            store_a(cur ^ 1);
            cp_async_wait_all();
        }
        __syncthreads();
    }
    // The sums go to C (rows N floats apart), or a slice's to its own BM x BN block of ws
    // (block b's, rows BN floats apart, 16-byte aligned), indexed by the row and column in
    // C less the tile's first.
    const bool slice = sp.ws != nullptr;
    float *dst = slice ? sp.ws + (size_t)blockIdx.x * BM * BN : C;
    const size_t pitch = slice ? (size_t)BN : (size_t)N;
    const int r_base = slice ? bm : 0, c_base = slice ? bn : 0;
    const bool vec_c = slice || ((N % 4) == 0 && aligned16(C));
#pragma unroll
    for (int i = 0; i < W::TM; ++i) {
        const int r = bm + wm + (i / 4) * 32 + lm + i % 4;
        if (r >= M)
            continue;
#pragma unroll
        for (int s = 0; s < W::SUB_N; ++s) {
            const int c = bn + wn + s * 16 + ln;
            float *out = dst + (size_t)(r - r_base) * pitch + (c - c_base);
            const float *v = &acc[i][4 * s];
            if (vec_c && c + 3 < N) {
                // __stwb (st.global.wb.v4: the default caching): a plain float4 store here
                // was split into four 4-byte ones by the compiler (CUDA 13, with the
                // scalar path beside it), a quarter of the store efficiency
                __stwb(reinterpret_cast<float4 *>(out), make_float4(v[0], v[1], v[2], v[3]));
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (c + j < N)
                        out[j] = v[j];
            }
        }
    }
}
