/* peer.h -- the C ABI of cuda/peer.cu (the peer lesson's kernels): included
 * through gm_kernels.h only, inside its extern "C" and with its GM_FAMILY. */
#ifndef GM_PEER_H
#define GM_PEER_H

/* ==== lesson peer (cuda/peer.cu) ==========================================
 * Past device memory: another GPU's memory, reached over NVLink (or PCIe)
 * through a peer pointer.  The kernels run on the current GPU; their
 * operands may live on any GPU it has peer access to (gm_family.peer_operands). */

/* The width of peer_copy's loads and stores: one float, float2 or float4. */
typedef enum { GM_PEER_FLOAT = 0, GM_PEER_FLOAT2 = 1, GM_PEER_FLOAT4 = 2 } gm_peer_width;

/* peer_copy: out[i] = a[i] for n floats, by `grid` blocks in tiles of
 * block * unroll vectors (tile t by block t % grid): each thread issues
 * `unroll` independent loads before its first store -- the loads in flight
 * of Little's law.  a on a peer GPU: the SM reads over the link; out there:
 * it writes over the link.  The n % (width / 4) tail floats go one per
 * thread of block 0.  a and out are aligned to the width (csrc checks). */
typedef struct {
    int variant; /* gm_peer_width */
    const float *a;
    float *out;
    long long n;
    int unroll; /* 1, 2, 4, 8, 16 */
    int grid;
    int block; /* a multiple of 32, 32..1024 */
} gm_peer_copy_params;
GM_FAMILY(peer_copy)

/* peer_chase: one thread follows chain (int32 indices: j = chain[j], from 0;
 * an index outside 0..n-1 restarts at 0) `warmup` steps untimed, then `steps`
 * timed ones through ld.global.cg; out (3 doubles): SM cycles per step,
 * nanoseconds per step (%globaltimer) and the index it ended on. */
typedef struct {
    const int *chain;
    double *out;
    long long n;
    long long steps;
    long long warmup;
} gm_peer_chase_params;
GM_FAMILY(peer_chase)

/* peer_reduce: one GPU's step of the teaching all-reduce (csrc's _peer_all_reduce,
 * not a family of its own: an internal launch on each GPU at once).  For every i in
 * begin..end-1: s = in[0][i] + ... + in[k-1][i] (in rank order), then out[j][i] = s
 * for j < outs.  One-shot: each GPU sums the whole range and writes its own out
 * (outs 1); two-shot: GPU g sums its part and writes it into every GPU's out. */
enum { GM_PEER_MAX_GPUS = 8 };
typedef struct {
    const float *in[GM_PEER_MAX_GPUS];
    float *out[GM_PEER_MAX_GPUS];
    int k;
    int outs;
    long long begin;
    long long end;
    int grid;
    int block;
} gm_peer_reduce_params;
cudaError_t gm_peer_reduce(const gm_peer_reduce_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_peer_reduce_kernel(const gm_peer_reduce_params *p);

#endif /* GM_PEER_H */
