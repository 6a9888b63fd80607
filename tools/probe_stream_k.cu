// tools/probe_stream_k.cu -- would a stream-K tail give warptiled its last wave back?
//
// warptiled (tile 128, two blocks of 256 threads per SM) runs 4096^3's 1,024 tiles in
// waves of 264: the fourth wave, 232 tiles, takes as long as a full one (the model's
// efficiency 0.970; tools/probe_waves.py measures it).  Stream-K spreads the tail's
// k steps evenly over every slot instead: worker w of 264 takes steps [w I / 264,
// (w + 1) I / 264) of the tail's I = tail x 256, across tile seams; a segment that is a
// whole tile goes to C, the others to a workspace (two slots a worker: the tail of one
// tile, the head of the next), and a second kernel adds each tile's 2-3 parts.  This
// probe times, beside cuda/matmul.cu's kernel for whole tiles (all tiles):
//   +sk tail  whole tiles for the full waves, then stream-K for the rest, then the sums;
//   sk all    stream-K for every tile (how fast the segment kernel itself is).
// The segment kernel is warptiled's body with the tile and its k range as values (one
// loop over the worker's segments).  Outputs are compared with the whole-tile kernel's
// (another summation order: equal to a few ulps).  CUDA events, median of 20 after 3.
// Rows on the 16-byte grid only (K and N multiples of 4): the probe has no scalar path.
// Build the extension first (setup.py writes gm_lesson_headers.inc), then:
//   nvcc -O3 -std=c++17 -arch=sm_90 -Icuda -I$(ls -d build/temp.*/gm_generated | head -1) \
//        tools/probe_stream_k.cu -o /tmp/probe_stream_k && /tmp/probe_stream_k
// On the H100 (2026-11-27; GFLOP/s, x the whole-tile kernel's, two runs):
//   4096 x 4096 x 4096  whole 45,631 / 45,760  +sk tail 0.983 / 0.985  sk all 0.900 / 0.902
//   3968 x 4096 x 4096  whole 44,017 / 43,864  +sk tail 1.025 / 1.031  sk all 0.930 / 0.936
//   4224 x 4096 x 4096  whole 46,970 / 47,199  +sk tail 0.984 / 0.998  sk all 0.880 / 0.878
//   8192 x 4096 x 4096  whole 45,973 / 45,964  +sk tail 1.008 / 1.008  sk all 0.904 / 0.903
//   4096 x 4096 x 8192  whole 45,960 / 45,895  +sk tail 0.996 / 0.998  sk all 0.924 / 0.924
// The segment kernel runs 8-12% slower than the whole-tile kernel (128 registers both, no
// spill; another schedule of the same FFMAs), which eats the wave it gives back: stream-K
// gains only where the last wave is emptier (3968: 200 of 264), and loses at 4096^3.
// Not the persistent loop: the same segment() over whole tiles, one block a tile from
// blockIdx (bm, bn from blockIdx.y/x, k from 0), ran 0.88x (0.89x with warptiled()'s own
// scalar and 4-byte copy paths in it; then the stream-K kernel spilled 92 bytes), and
// gpumem's split instance of warptiled (matmul_kernel<.., SPLIT = true, ..>) on whole tiles
// 41.0-42.5 TFLOP/s against 45.8: the k loop's schedule moves with what surrounds it.
#include "../cuda/matmul.cu"
#include <algorithm>
#include <cstdio>
#include <vector>

using W = Warptiled<128, 128, 16, 64, 32>;
constexpr int BM = 128, BN = 128, BK = 16, WM = 64, WN = 32;

// one segment: tile (bm, bn), k tiles [kt0, kt1); sums to dst (rows `pitch` apart, indexed by row-r_base, col-c_base)
__device__ __forceinline__ void segment(float (&As)[2][BK][BM + 4], float (&Bs)[2][BK][BN],
                                        const float *__restrict__ A, const float *__restrict__ B,
                                        int M, int N, int K, int bm, int bn, int kt0, int kt1,
                                        float *dst, size_t pitch, int r_base, int c_base, bool vec_c)
{
    const int ka = K, nb = N;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / W::WARPS_N) * WM, wn = (warp % W::WARPS_N) * WN;
    const int lm = (lane % 8) * 4, ln = (lane / 8) * 4;
    float acc[W::TM][W::TN] = {};
    float4 areg[W::A_LOADS];
    auto load_a = [&](int k0) {
#pragma unroll
        for (int i = 0; i < W::A_LOADS; ++i) {
            const int f = tid + i * W::THREADS, r = bm + f / (BK / 4), k = k0 + (f % (BK / 4)) * 4;
            areg[i] = (r < M && k + 3 < ka) ? *reinterpret_cast<const float4 *>(A + (size_t)r * ka + k) : make_float4(0, 0, 0, 0);
        }
    };
    auto store_a = [&](int buf) {
#pragma unroll
        for (int i = 0; i < W::A_LOADS; ++i) {
            const int f = tid + i * W::THREADS, r = f / (BK / 4), c = (f % (BK / 4)) * 4;
            As[buf][c][r] = areg[i].x; As[buf][c + 1][r] = areg[i].y; As[buf][c + 2][r] = areg[i].z; As[buf][c + 3][r] = areg[i].w;
        }
    };
    auto load_b = [&](int buf, int k0) {
#pragma unroll
        for (int i = 0; i < W::B_LOADS; ++i) {
            const int f = tid + i * W::THREADS, kr = f / (BN / 4), c = (f % (BN / 4)) * 4;
            const int k = k0 + kr, col = bn + c;
            const bool in = k < K && col < nb;
            cp_async16(&Bs[buf][kr][c], in ? B + (size_t)k * nb + col : B, in);
        }
        cp_async_commit();
    };
    const int tiles = kt1 - kt0;
    load_b(0, kt0 * BK); load_a(kt0 * BK); store_a(0); cp_async_wait_all();
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const bool next = t + 1 < tiles;
        if (next) { load_b(cur ^ 1, (kt0 + t + 1) * BK); load_a((kt0 + t + 1) * BK); }
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
#pragma unroll
            for (int j = 0; j < W::TN; ++j)
#pragma unroll
                for (int i = 0; i < W::TM; ++i)
                    acc[i][j] += a[i] * b[j];
        }
        if (next) { store_a(cur ^ 1); cp_async_wait_all(); }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < W::TM; ++i) {
        const int r = bm + wm + (i / 4) * 32 + lm + i % 4;
        if (r >= M) continue;
#pragma unroll
        for (int s = 0; s < W::SUB_N; ++s) {
            const int c = bn + wn + s * 16 + ln;
            float *out = dst + (size_t)(r - r_base) * pitch + (c - c_base);
            const float *v = &acc[i][4 * s];
            if (vec_c && c + 3 < N) __stwb(reinterpret_cast<float4 *>(out), make_float4(v[0], v[1], v[2], v[3]));
            else for (int j = 0; j < 4; ++j) if (c + j < N) out[j] = v[j];
        }
    }
}

// worker w: iterations [w I / nw, (w+1) I / nw) of the tiles full.. (I = (tiles - full) * ktiles)
__global__ void __launch_bounds__(256, 2)
sk_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, float *ws,
          int M, int N, int K, int full, int tiles, int nw)
{
    __shared__ __align__(16) float As[2][BK][BM + 4];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int ktiles = (K + BK - 1) / BK, tn = (N + BN - 1) / BN;
    const long long I = (long long)(tiles - full) * ktiles;
    const int w = blockIdx.x;
    long long it = (long long)w * I / nw;
    const long long end = (long long)(w + 1) * I / nw;
#pragma unroll 1
    while (it < end) {
        const int tile = full + (int)(it / ktiles), kt0 = (int)(it % ktiles);
        const int kt1 = (int)llmin(ktiles, kt0 + (end - it));
        const int bm = (tile / tn) * BM, bn = (tile % tn) * BN;
        const bool whole = kt0 == 0 && kt1 == ktiles;
        float *dst = whole ? C : ws + ((size_t)w * 2 + (kt0 == 0 ? 1 : 0)) * BM * BN;
        // slot 0: a tile's later part (kt0 > 0); slot 1: its head (kt0 == 0)
        segment(As, Bs, A, B, M, N, K, bm, bn, kt0, kt1, dst, whole ? (size_t)N : (size_t)BN,
                whole ? 0 : bm, whole ? 0 : bn, true);
        it += kt1 - kt0;
    }
}

// C[tile] = sum of the partial segments of the workers covering tile (tiles full.. ; none whole)
__global__ void sk_fix(const float *__restrict__ ws, float *__restrict__ C, int M, int N, int K,
                       int full, int tiles, int nw)
{
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long per = BM * BN;
    if (e >= (long long)(tiles - full) * per) return;
    const int ktiles = (K + BK - 1) / BK, tn = (N + BN - 1) / BN;
    const long long I = (long long)(tiles - full) * ktiles;
    const int ti = (int)(e / per), local = (int)(e % per);
    const long long i0 = (long long)ti * ktiles, i1 = i0 + ktiles;
    int w = (int)(i0 * nw / I);
    while (w > 0 && (long long)w * I / nw > i0) --w;
    while ((long long)(w + 1) * I / nw <= i0) ++w;
    float sum = 0.0f;
    bool any = false;
    for (; w < nw && (long long)w * I / nw < i1; ++w) {
        const long long s = llmax((long long)w * I / nw, i0);
        const long long en = llmin((long long)(w + 1) * I / nw, i1);
        if (s == i0 && en == i1) { any = false; break; } // whole: written directly
        const int slot = (s == i0) ? 1 : 0;  // head part of the tile (kt0 == 0) or not
        sum += ws[((size_t)w * 2 + slot) * per + local];
        any = true;
    }
    if (!any) return;
    const int t = full + ti;
    const int r = (t / tn) * BM + local / BN, c = (t % tn) * BN + local % BN;
    if (r < M && c < N) C[(size_t)r * N + c] = sum;
}

typedef void (*mk)(const float *, const float *, float *, int, int, int, gm_matmul_split);
int main() {
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    mk whole_k = matmul_kernel<GM_MATMUL_WARPTILED, 128, 2, false, false>;
    int per_sm = 0, per_sm_sk = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, whole_k, 256, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_sk, sk_kernel, 256, 0);
    cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, sk_kernel);
    printf("sms %d, blocks/SM whole %d sk %d, sk regs %d spill %d\n", sms, per_sm, per_sm_sk, fa.numRegs, (int)fa.localSizeBytes);
    const int slots = sms * per_sm;
    const int shapes[][3] = {{4096, 4096, 4096}, {3968, 4096, 4096}, {4224, 4096, 4096}, {8192, 4096, 4096}, {4096, 4096, 8192}};
    size_t maxe = (size_t)8192 * 8192;
    std::vector<float> h(maxe);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    float *A, *B, *C0, *C1, *ws;
    cudaMalloc(&A, maxe * 4); cudaMalloc(&B, maxe * 4); cudaMalloc(&C0, maxe * 4); cudaMalloc(&C1, maxe * 4);
    cudaMalloc(&ws, (size_t)slots * 2 * BM * BN * 4);
    cudaMemcpy(A, h.data(), maxe * 4, cudaMemcpyHostToDevice); cudaMemcpy(B, h.data(), maxe * 4, cudaMemcpyHostToDevice);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<float> g0(maxe), g1(maxe);
    for (int pass = 0; pass < 2; ++pass)
    for (auto &sh : shapes) {
        const int M = sh[0], N = sh[1], K = sh[2];
        const int tn = (N + BN - 1) / BN, tm = (M + BM - 1) / BM, tiles = tn * tm;
        const int full = tiles / slots * slots;
        auto run_whole = [&](float *C, int upto) {
            gm_matmul_split sp{nullptr, upto, 1, tn, K, N};
            dim3 g(tn, (upto + tn - 1) / tn);
            whole_k<<<g, 256>>>(A, B, C, M, N, K, sp);
        };
        auto v0 = [&]() { gm_matmul_split sp{nullptr, 0, 1, tn, K, N}; whole_k<<<dim3(tn, tm), 256>>>(A, B, C0, M, N, K, sp); };
        auto v1 = [&]() {
            if (full > 0) run_whole(C1, full);
            if (tiles > full) {
                sk_kernel<<<slots, 256>>>(A, B, C1, ws, M, N, K, full, tiles, slots);
                long long el = (long long)(tiles - full) * BM * BN;
                sk_fix<<<(unsigned)((el + 255) / 256), 256>>>(ws, C1, M, N, K, full, tiles, slots);
            }
        };
        auto v3 = [&]() {
            sk_kernel<<<slots, 256>>>(A, B, C1, ws, M, N, K, 0, tiles, slots);
            long long el = (long long)tiles * BM * BN;
            sk_fix<<<(unsigned)((el + 255) / 256), 256>>>(ws, C1, M, N, K, 0, tiles, slots);
        };
        auto timeit = [&](auto f) {
            std::vector<float> t;
            for (int i = 0; i < 23; ++i) { cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 3) t.push_back(ms); }
            std::sort(t.begin(), t.end()); return t[t.size() / 2];
        };
        auto check = [&]() {
            cudaMemcpy(g0.data(), C0, (size_t)M * N * 4, cudaMemcpyDeviceToHost);
            cudaMemcpy(g1.data(), C1, (size_t)M * N * 4, cudaMemcpyDeviceToHost);
            double md = 0, mx = 0;
            for (size_t i = 0; i < (size_t)M * N; ++i) { md = std::max(md, (double)fabsf(g0[i] - g1[i])); mx = std::max(mx, (double)fabsf(g0[i])); }
            return md / mx;
        };
        const double fl = 2.0 * M * N * K;
        cudaMemset(C0, 0xff, (size_t)M * N * 4);
        float t0 = timeit(v0);
        cudaMemset(C1, 0xff, (size_t)M * N * 4);
        float t1 = timeit(v1); double d1 = check();
        cudaMemset(C1, 0xff, (size_t)M * N * 4);
        float t3 = timeit(v3); double d3 = check();
        printf("%5dx%5dx%5d tiles %5d waves %.3f | whole %6.0f GFLOP/s | +sk tail %6.0f (%.3fx, diff %.1e) | sk all %6.0f (%.3fx, diff %.1e) %s\n",
               M, N, K, tiles, (double)tiles / slots, fl / t0 / 1e6, fl / t1 / 1e6, t0 / t1, d1, fl / t3 / 1e6, t0 / t3, d3,
               cudaGetErrorString(cudaDeviceSynchronize()));
    }
}
