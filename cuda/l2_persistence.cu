// l2_persistence.cu -- a hot set reused while a cold stream flows past it.
//
// hot_cold: thread i loads cold[i] once and `reuse` elements of the hot set,
// and writes their sum.  Consecutive threads read consecutive elements of both
// arrays (every load a full 128-byte line per warp), and the hot set is swept
// at the same pace as the cold array: a hot element is read again after about
// n_hot / reuse cold elements.  Whether it is still in L2 then depends on what
// flowed through L2 in between -- the rest of the hot set, the cold stream and
// the output -- unless an access-policy window (csrc/lessons/l2_persistence.c)
// marks the hot set's lines persisting, so that the cold stream cannot evict
// them from the set-aside part of L2.  The kernel is the same either way.
#include "gm_launch.cuh"

// V: gm_hot_cold_variant (the first template argument names the variant, as
// compiler_report reads it).  COLD_STREAMING loads the cold element with
// ld.global.cs (evict first): the software hint beside the window.
template <int V>
__global__ void hot_cold_kernel(const float *__restrict__ hot, long long n_hot,
                                const float *__restrict__ cold, long long n_cold,
                                float *__restrict__ out, int reuse)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_cold)
        return;
    float acc;
    if constexpr (V == GM_HOT_COLD_COLD_STREAMING)
        acc = __ldcs(cold + i);
    else
        acc = cold[i];
    // h = (i + j * n_cold) mod n_hot, stepped without a division per load.
    long long h = i % n_hot;
    const long long step = n_cold % n_hot;
    for (int j = 0; j < reuse; j++) {
        acc = __fadd_rn(acc, hot[h]); // no contraction: the NumPy reference's order
        h += step;
        if (h >= n_hot)
            h -= n_hot;
    }
    out[i] = acc;
}

using hot_cold_fn = void (*)(const float *, long long, const float *, long long, float *, int);

static hot_cold_fn select_hot_cold(const gm_hot_cold_params *p)
{
    return gm_select<GM_HOT_COLD_PLAIN, GM_HOT_COLD_COLD_STREAMING>(
        p->variant, [](auto v) -> hot_cold_fn { return hot_cold_kernel<decltype(v)::value>; });
}

extern "C" const void *gm_hot_cold_kernel(const gm_hot_cold_params *p)
{
    return (const void *)select_hot_cold(p);
}

extern "C" cudaError_t gm_hot_cold(const gm_hot_cold_params *p, gm_dims *dims,
                                   cudaStream_t stream)
{
    const int block = p->block ? p->block : 256;
    *dims = gm_dims_1d(gm_blocks_for(p->n_cold, block), block);
    return gm_run(select_hot_cold(p), dims, 0, stream, p->hot, p->n_hot, p->cold, p->n_cold,
                  p->out, p->reuse);
}
