/* dram.h -- the C ABI of cuda/dram.cu (the dram lesson's kernels): included
 * through gm_kernels.h only, inside its extern "C" and with its GM_FAMILY. */
#ifndef GM_DRAM_H
#define GM_DRAM_H

/* ==== lesson dram (cuda/dram.cu) ==========================================
 * DRAM: how many bytes in flight fill it, what granularity it moves, and
 * whether addresses a power of two apart pile onto few channels.  Every
 * kernel reads a float32 buffer `a` (cudaMalloc: 256-byte aligned) and
 * writes one float per block: the sum of every float the block loaded, so
 * no load can be dropped and a NumPy reference checks each block. */

/* The load width of dram_stream: one float, float2 or float4 per load. */
typedef enum { GM_DRAM_FLOAT = 0, GM_DRAM_FLOAT2 = 1, GM_DRAM_FLOAT4 = 2 } gm_dram_width;

/* dram_stream: `grid` blocks sweep a in tiles of block * unroll vectors
 * (tile t by block t % grid); each thread issues `unroll` independent loads
 * of one vector, block apart, before it adds any.  The n % (width / 4)
 * tail floats are read one per thread by block 0. */
typedef struct {
    int variant; /* gm_dram_width */
    const float *a;
    float *out; /* grid floats */
    long long n;
    int unroll; /* 1, 2, 4, 8, 16 */
    int grid;
    int block; /* a multiple of 32, 32..1024 */
} gm_dram_stream_params;
GM_FAMILY(dram_stream)

/* dram_burst: `pieces` isolated pieces of `piece` bytes at random aligned
 * places: piece q starts at float slot(q) * piece / 4, slot(q) =
 * gm_dram_hash(q, seed) % (4 n / piece).  A piece of up to 16 bytes is one
 * thread's load; a larger one is read by piece / 16 consecutive lanes, 16
 * bytes each.  Loads through ld.global.cg (L2 only): a repeated sector is
 * never an L1 hit. */
typedef struct {
    const float *a;
    float *out; /* one float per block */
    long long n;
    long long pieces;
    long long seed;
    int piece; /* bytes: 4, 8, 16, 32, 64, 128 */
    int block; /* a multiple of 32 */
} gm_dram_burst_params;
GM_FAMILY(dram_burst)

/* Where dram_channels' streams start. */
typedef enum { GM_DRAM_STRIDED = 0, GM_DRAM_RANDOM = 1 } gm_dram_placement;

/* dram_channels: `streams` warps, warp w reading the `chunk` contiguous
 * bytes from byte w * stride (strided) or slot(w) * chunk (random: slot a
 * seeded permutation of the 2^k chunk-sized slots of a), 2 KiB per step
 * (four 16-byte loads per lane in flight).  A stride below the chunk
 * interleaves the chunks: warp w reads stride-byte pieces at
 * w * stride + q * streams * stride. */
typedef struct {
    int variant; /* gm_dram_placement */
    const float *a;
    float *out; /* one float per block */
    long long streams;
    long long stride; /* bytes, a power of two >= 32 (strided) */
    long long chunk;  /* bytes, a power of two >= 2048 */
    long long slots_log2; /* random: a holds 2^slots_log2 chunks */
    long long seed;
    int block; /* a multiple of 32 */
} gm_dram_channels_params;
GM_FAMILY(dram_channels)

#endif /* GM_DRAM_H */
