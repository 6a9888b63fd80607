/* ladder.h -- the C ABI of cuda/ladder.cu (the ladder lesson's kernels):
 * included through gm_kernels.h only (which the build gives the list of
 * lesson headers, gm_lesson_headers.inc), inside its extern "C" and with its
 * GM_FAMILY.  No other lesson's header or file uses these. */
#ifndef GM_LADDER_H
#define GM_LADDER_H

/* ==== lesson ladder (cuda/ladder.cu) ======================================
 * The memory hierarchy as two ladders.  latency: one warp chases a ring of
 * n = working_set / stride nodes linked in a pseudo-random cyclic order (a
 * keyed Feistel bijection of [0, n), cycle-walked: gpumem.ladder.chain_order
 * reproduces it), timed with clock64() and %globaltimer in the kernel.
 * bandwidth: a full grid of 16-byte loads over a resident working set. */
typedef enum {
    GM_LATENCY_CA = 0,      /* global ring, ld.global.ca: L1, then L2, then DRAM */
    GM_LATENCY_CG = 1,      /* global ring, ld.global.cg: L2, then DRAM (L1 skipped) */
    GM_LATENCY_LDG = 2,     /* global ring, ld.global.nc: the read-only path */
    GM_LATENCY_SHARED = 3,  /* the ring copied into dynamic shared memory */
    GM_LATENCY_CONSTANT = 4, /* the ring in a __constant__ array */
    GM_LATENCY_TMA = 5       /* global ring, each step a 16-byte bulk copy (cp.async.bulk, the
                                TMA) into shared memory completing on an mbarrier (sm_90) */
} gm_latency_variant;
/* The ring: gpumem's (a keyed shuffle; 8-byte pointers on the global paths, 4-byte byte
 * offsets in shared and constant memory) or the papers' (ascending, stride apart: node i
 * holds the 4-byte element index of node i + 1, read as j = A[j]). */
typedef enum { GM_RING_SHUFFLED = 0, GM_RING_STRIDED = 1 } gm_latency_ring;
#define GM_RING_NAMES {"shuffled", "strided", NULL}
/* The clock: clock64 and %globaltimer around all timed steps (gpumem's), or clock() read
 * around each load with its value stored to shared memory in between (the papers'). */
typedef enum { GM_CLOCK_LOOP = 0, GM_CLOCK_EACH = 1 } gm_latency_clock;
#define GM_CLOCK_NAMES {"loop", "each", NULL}
#define GM_LATENCY_EACH_MAX 8192       /* lanes * steps with GM_CLOCK_EACH (shared memory) */
#define GM_LATENCY_WARP 32             /* one block of one warp */
#define GM_LATENCY_SHARED_MAX 49152    /* bytes: the default dynamic shared memory per block */
#define GM_LATENCY_CONSTANT_MAX 65536  /* bytes: the user constant bank */

typedef struct {
    int variant;     /* gm_latency_variant */
    void *chain;     /* device, working_set bytes: node j at byte j * stride */
    long long *out;  /* (3 [+ steps]) x lanes: end node, clock64 cycles, globaltimer ns of the
                        timed steps [, GM_CLOCK_EACH: each load's clock() cycles] */
    long long n;     /* nodes, >= 1 */
    long long stride; /* bytes between nodes: a multiple of 8 */
    int lanes;       /* 1..32 chasing lanes of the one warp */
    int steps;       /* timed steps per lane */
    int warmup;      /* untimed steps per lane before them */
    unsigned seed;   /* picks the shuffled ring's order */
    int ring;        /* gm_latency_ring */
    int clock;       /* gm_latency_clock */
} gm_latency_params;
GM_FAMILY(latency)
/* Build p's ring in p->chain (shuffled: 8-byte pointers for the global variants, 4-byte
 * byte offsets for shared and constant; strided: 4-byte element indices), before the
 * launch: not timed.  A
 * launcher (csrc launches it through gm_launch, an internal launch) and its
 * kernel; then, for the constant variant, copy the ring to its __constant__
 * array on `stream`. */
cudaError_t gm_latency_build(const gm_latency_params *p, gm_dims *dims, cudaStream_t stream);
const void *gm_latency_build_kernel(const gm_latency_params *p);
cudaError_t gm_latency_constant_ring(const gm_latency_params *p, cudaStream_t stream);

typedef enum {
    GM_BANDWIDTH_READ = 0,  /* float4 loads added into registers */
    GM_BANDWIDTH_COPY = 1,  /* float4 loads stored to out */
    GM_BANDWIDTH_SHARED = 2 /* staged in shared memory once per block, then read there */
} gm_bandwidth_variant;
typedef enum {
    GM_SCOPE_GRID = 0,  /* the grid strides through the working set once per pass */
    GM_SCOPE_BLOCK = 1  /* every block strides through all of it each pass */
} gm_bandwidth_scope;
#define GM_SCOPE_NAMES {"grid", "block", NULL}
#define GM_BANDWIDTH_SHARED_MAX 49152 /* bytes of x for the shared variant */

typedef struct {
    int variant;     /* gm_bandwidth_variant */
    int cache;       /* gm_cache_path of the global loads */
    int scope;       /* gm_bandwidth_scope */
    const float *in;
    float *out;      /* copy: n floats */
    double *result;  /* read, shared: sum of everything read, cycles, ns (zeroed first) */
    long long n;     /* floats in the working set */
    int passes;      /* times the working set is read */
    int blocks;      /* grid size */
    int block;       /* threads per block, a multiple of 32 */
} gm_bandwidth_params;
GM_FAMILY(bandwidth)

#endif /* GM_LADDER_H */
