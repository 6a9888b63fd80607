/* dram.c -- the dram lesson's entry points (cuda/dram.cu): dram_stream
 * (bytes in flight), dram_burst (isolated pieces: the access granularity)
 * and dram_channels (streams a power of two apart).  Each returns one float
 * per block, the sum of what the block loaded; the bytes are the bytes the
 * threads asked for. */
#include "gm.h"

#include <stdint.h>

GM_THUNKS(dram_stream)
GM_THUNKS(dram_burst)
GM_THUNKS(dram_channels)

#define BLOCK(def)                                                                       \
    {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, def, 32, 1024, .what = " threads"}

/* The result: `blocks` floats. */
static int per_block_result(gm_call *c, long long blocks)
{
    npy_intp shape[1] = {(npy_intp)blocks};
    gm_result(c, 1, shape, NPY_FLOAT32);
    return gm_record(c, "grid", blocks);
}

static int is_pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }

/* The vector loads need `a` aligned to their width: gpumem's own arrays are
 * (cudaMalloc: 256 bytes); another library's view may not be. */
static int aligned_input(gm_call *c, int arg, long long width)
{
    const uintptr_t p = (uintptr_t)gm_in(c, arg);
    if (p % (uintptr_t)width == 0)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: a must start on a %lld-byte boundary for its %lld-byte loads (its device "
                 "address is %lld bytes past one); pass a gpumem array or an aligned view",
                 c->f->name, width, width, (long long)(p % (uintptr_t)width));
    return -1;
}

/* ---- dram_stream ------------------------------------------------------------- */
static const gm_variant stream_variants[] = {
    GM_ROW(dram_stream, "float", GM_DRAM_FLOAT,
           "4-byte loads: a warp's round of `unroll` loads puts 128 * unroll bytes in flight",
           "4*n", "n"),
    GM_ROW(dram_stream, "float2", GM_DRAM_FLOAT2,
           "8-byte loads: twice the bytes in flight per load instruction", "4*n", "n"),
    GM_ROW(dram_stream, "float4", GM_DRAM_FLOAT4,
           "16-byte loads: 512 bytes per warp-wide load, four times the float's", "4*n", "n"),
    GM_END_ROWS,
};

enum { ST_A, ST_WIDTH, ST_UNROLL, ST_GRID, ST_BLOCK };
static const long long unrolls[] = {1, 2, 4, 8, 16, 0};
static const gm_arg stream_args[] = {
    [ST_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [ST_WIDTH] = {"width", GM_VARIANT, GM_RECORD, .sdef = "float4"},
    [ST_UNROLL] = {"unroll", GM_INT, GM_SELECTS | GM_RECORD, 1, .allowed = unrolls,
                   .what = " (independent loads per thread)"},
    [ST_GRID] = {"grid", GM_INT, GM_RECORD, 132, 1, 1LL << 20, .what = " blocks"},
    [ST_BLOCK] = BLOCK(256),
    {NULL},
};

static int stream_check(gm_call *c)
{
    const long long n = gm_operand_size(&c->op[ST_A]);
    if (n < 1)
        return gm_range_error(c, "a.size", n, "1 or more (floats to stream)");
    c->work = n;
    c->bytes = 4.0 * (double)n;
    c->flops = (double)n;
    if (gm_record(c, "n", n) < 0)
        return -1;
    return per_block_result(c, c->v[ST_GRID]);
}

static int stream_prepare(gm_call *c)
{
    return aligned_input(c, ST_A, 4LL << c->variant->select);
}

static void stream_fill(const gm_call *c, void *params)
{
    *(gm_dram_stream_params *)params = (gm_dram_stream_params){
        c->variant->select, gm_in(c, ST_A),      gm_res(c), c->work, (int)c->v[ST_UNROLL],
        (int)c->v[ST_GRID], (int)c->v[ST_BLOCK]};
}

static const gm_family gm_dram_stream_family = {
    "dram_stream",
    "Stream every float of a (float32, any shape) with `grid` blocks, `unroll` independent "
    "loads of `width` per thread: bytes in flight against DRAM bandwidth.  Returns one sum per "
    "block.",
    stream_args, 1, 0, stream_variants, stream_check, stream_prepare, stream_fill,
};

/* ---- dram_burst ---------------------------------------------------------------- */
static const gm_variant burst_variants[] = {
    GM_ROW(dram_burst, "gather", 0,
           "isolated pieces of `piece` bytes at random aligned places: one DRAM trip each; a "
           "piece under 32 bytes still costs a whole sector",
           "pieces*piece", "pieces*piece/4"),
    GM_END_ROWS,
};

enum { BU_A, BU_PIECES, BU_PIECE, BU_SEED, BU_BLOCK };
static const long long piece_sizes[] = {4, 8, 16, 32, 64, 128, 0};
static const gm_arg burst_args[] = {
    [BU_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [BU_PIECES] = {"pieces", GM_INT, GM_POSITIONAL | GM_REQUIRED | GM_RECORD, 0, 1,
                   0x7fffffffLL, .what = " pieces"},
    [BU_PIECE] = {"piece", GM_INT, GM_SELECTS | GM_RECORD, 32, .allowed = piece_sizes,
                  .what = " bytes"},
    [BU_SEED] = {"seed", GM_INT, GM_RECORD, 0, 0, 0x7fffffffLL},
    [BU_BLOCK] = BLOCK(256),
    {NULL},
};

static int burst_check(gm_call *c)
{
    const long long n = c->op[BU_A].shape[0], piece = c->v[BU_PIECE];
    const long long pieces = c->v[BU_PIECES], lanes = piece > 16 ? piece / 16 : 1;
    if (4 * n < piece) {
        char allowed[96];
        snprintf(allowed, sizeof allowed, "at least %lld floats (one piece of %lld bytes)",
                 piece / 4, piece);
        return gm_range_error(c, "a.size", n, allowed);
    }
    if (gm_check_grid(c, pieces * lanes, c->v[BU_BLOCK], c->v[BU_BLOCK]) < 0)
        return -1;
    c->work = pieces;
    c->bytes = (double)pieces * (double)piece;
    c->flops = c->bytes / 4.0;
    if (gm_record(c, "n", n) < 0)
        return -1;
    const long long threads = pieces * lanes, block = c->v[BU_BLOCK];
    return per_block_result(c, (threads + block - 1) / block);
}

static int burst_prepare(gm_call *c)
{
    return aligned_input(c, BU_A, c->v[BU_PIECE] < 16 ? c->v[BU_PIECE] : 16);
}

static void burst_fill(const gm_call *c, void *params)
{
    *(gm_dram_burst_params *)params = (gm_dram_burst_params){
        gm_in(c, BU_A),    gm_res(c),           gm_dim(c, BU_A, 0),
        c->work,           c->v[BU_SEED],       (int)c->v[BU_PIECE],
        (int)c->v[BU_BLOCK]};
}

static const gm_family gm_dram_burst_family = {
    "dram_burst",
    "Read `pieces` isolated pieces of `piece` bytes of a (float32, 1-D) at random "
    "piece-aligned places (seeded): the access granularity of DRAM.  Returns one sum per block.",
    burst_args, 1, 0, burst_variants, burst_check, burst_prepare, burst_fill,
};

/* ---- dram_channels ----------------------------------------------------------------- */
static const gm_variant channels_variants[] = {
    GM_ROW(dram_channels, "strided", GM_DRAM_STRIDED,
           "warp w starts at byte w * stride: at every step all warps sit at the same offset "
           "modulo the stride (below the chunk: the chunks interleaved in stride-byte pieces)",
           "streams*chunk", "streams*chunk/4"),
    GM_ROW(dram_channels, "random", GM_DRAM_RANDOM,
           "warp w streams its chunk from a random chunk-aligned place (a seeded permutation of "
           "the chunk slots): the control",
           "streams*chunk", "streams*chunk/4"),
    GM_END_ROWS,
};

enum { CH_A, CH_STREAMS, CH_PLACE, CH_STRIDE, CH_CHUNK, CH_SEED, CH_BLOCK };
static const gm_arg channels_args[] = {
    [CH_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [CH_STREAMS] = {"streams", GM_INT, GM_POSITIONAL | GM_REQUIRED | GM_RECORD, 0, 1, 1LL << 24,
                    .what = " warps"},
    [CH_PLACE] = {"placement", GM_VARIANT, GM_RECORD, .sdef = "strided"},
    [CH_STRIDE] = {"stride", GM_INT, 0, 0, 0, 1LL << 40,
                   .what = " bytes (0: the chunk, streams back to back; below the chunk: the "
                           "chunks interleaved in stride-byte pieces)"},
    [CH_CHUNK] = {"chunk", GM_INT, GM_RECORD, 65536, 2048, 1LL << 30, .what = " bytes"},
    [CH_SEED] = {"seed", GM_INT, GM_RECORD, 0, 0, 0x7fffffffLL},
    [CH_BLOCK] = BLOCK(256),
    {NULL},
};

/* log2 of the power-of-two number of chunk slots in `bytes` (-1: not one). */
static long long slots_log2(long long bytes, long long chunk)
{
    const long long slots = bytes / chunk;
    long long k = 0;
    if (slots < 1)
        return -1;
    while (k < 62 && (2LL << k) <= slots)
        ++k;
    return k;
}

static int channels_check(gm_call *c)
{
    const long long n = c->op[CH_A].shape[0], streams = c->v[CH_STREAMS];
    const long long chunk = c->v[CH_CHUNK], bytes = 4 * n;
    long long stride = c->v[CH_STRIDE];
    char allowed[160];
    if (!is_pow2(chunk))
        return gm_range_error(c, "chunk", chunk, "a power of two from 2048 to 2**30 bytes");
    if (c->variant->select == GM_DRAM_STRIDED) {
        if (stride == 0)
            stride = chunk;
        if (!is_pow2(stride) || stride < 32) {
            return gm_range_error(c, "stride", stride,
                                  "0 or a power of two >= 32 bytes (one sector)");
        }
        if (stride < chunk) { /* interleaved: the streams' chunks fill streams * chunk bytes */
            if (streams > bytes / chunk) {
                snprintf(allowed, sizeof allowed,
                         "at most a.nbytes / chunk = %lld for a.nbytes = %lld (stride < chunk: "
                         "the chunks interleave in streams * chunk bytes)",
                         bytes / chunk, bytes);
                return gm_range_error(c, "streams", streams, allowed);
            }
        } else if ((streams - 1) > (bytes - chunk) / stride || bytes < chunk) {
            snprintf(allowed, sizeof allowed,
                     "at most (a.nbytes - chunk) / stride + 1 = %lld for a.nbytes = %lld",
                     bytes < chunk ? 0 : (bytes - chunk) / stride + 1, bytes);
            return gm_range_error(c, "streams", streams, allowed);
        }
    } else {
        if (stride != 0)
            return gm_range_error(c, "stride", stride,
                                  "0 for placement='random' (the permutation places the chunks)");
        const long long k = slots_log2(bytes, chunk);
        if (k < 0 || streams > (1LL << k)) {
            snprintf(allowed, sizeof allowed,
                     "at most %lld (the power-of-two number of chunk slots in a.nbytes = %lld)",
                     k < 0 ? 0 : 1LL << k, bytes);
            return gm_range_error(c, "streams", streams, allowed);
        }
        stride = 0;
    }
    if (gm_check_grid(c, streams * 32, c->v[CH_BLOCK], c->v[CH_BLOCK]) < 0)
        return -1;
    c->work = streams;
    c->bytes = (double)streams * (double)chunk;
    c->flops = c->bytes / 4.0;
    if (gm_record(c, "n", n) < 0)
        return -1;
    if (gm_record(c, "stride", stride) < 0)
        return -1;
    const long long block = c->v[CH_BLOCK];
    return per_block_result(c, (streams * 32 + block - 1) / block);
}

static int channels_prepare(gm_call *c)
{
    return aligned_input(c, CH_A, 16);
}

static void channels_fill(const gm_call *c, void *params)
{
    const int strided = c->variant->select == GM_DRAM_STRIDED;
    const long long chunk = c->v[CH_CHUNK];
    const long long stride = strided ? (c->v[CH_STRIDE] ? c->v[CH_STRIDE] : chunk) : 0;
    *(gm_dram_channels_params *)params = (gm_dram_channels_params){
        c->variant->select, gm_in(c, CH_A),           gm_res(c),
        c->work,            stride,                   chunk,
        strided ? 0 : slots_log2(4 * gm_dim(c, CH_A, 0), chunk), c->v[CH_SEED],
        (int)c->v[CH_BLOCK]};
}

static const gm_family gm_dram_channels_family = {
    "dram_channels",
    "`streams` warps each stream `chunk` bytes of a (float32, 1-D), their starts `stride` bytes "
    "apart (placement='strided') or at random chunk-aligned places (placement='random'): do "
    "power-of-two strides pile onto few DRAM channels?  Returns one sum per block.",
    channels_args, 1, 0, channels_variants, channels_check, channels_prepare, channels_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_dram_stream_family,
    &gm_dram_burst_family,
    &gm_dram_channels_family,
    NULL,
};

const gm_lesson gm_lesson_dram = {"dram", families, NULL, NULL};
