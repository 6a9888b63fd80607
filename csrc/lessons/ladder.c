/* ladder.c -- the ladder lesson's entry points (cuda/ladder.cu): the latency
 * ladder (a pointer chase through a ring at a chosen stride, along one of
 * five paths: its `variant`) and the bandwidth ladder (a full grid reading or
 * copying a resident working set).  What its measurements need besides --
 * evicting L2, timing cudaMemcpy (_l2_flush, _time_memcpy) -- is the
 * runtime's (measure.c, launch.c). */
#include "gm.h"

GM_THUNKS(latency)
GM_THUNKS(bandwidth)

/* The ring's build: a kernel of the lesson, launched through gm_launch as an
 * internal launch (no LaunchRecord: the timed chase is the latency's). */
static cudaError_t run_build(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_latency_build((const gm_latency_params *)p, d, s);
}

static const void *build_kernel(const void *p)
{
    return gm_latency_build_kernel((const gm_latency_params *)p);
}

static const gm_variant latency_build = {
    "latency", "build", "the ring linked on the device before the chase", "n*8", "0",
    run_build, build_kernel, 0};

/* ---- latency ---------------------------------------------------------------------- */
/* bytes per load: the node's link (ring='strided': a 4-byte index on every path) */
#define LATENCY_BYTES(node) #node "*lanes*(warmup + steps)"

static const gm_variant latency_variants[] = {
    GM_ROW(latency, "ca", GM_LATENCY_CA,
           "one load at a time through ld.global.ca: each step waits for L1, else L2, else "
           "device memory (whichever holds the ring)",
           LATENCY_BYTES(8), "0"),
    GM_ROW(latency, "cg", GM_LATENCY_CG,
           "the chase through ld.global.cg: L1 is skipped, so even a tiny ring costs an L2 hit",
           LATENCY_BYTES(8), "0"),
    GM_ROW(latency, "ldg", GM_LATENCY_LDG,
           "the chase through the read-only data path (ld.global.nc, __ldg)",
           LATENCY_BYTES(8), "0"),
    GM_ROW(latency, "shared", GM_LATENCY_SHARED,
           "the ring in dynamic shared memory: the on-chip scratchpad's latency (LDS)",
           LATENCY_BYTES(4), "0"),
    GM_ROW(latency, "constant", GM_LATENCY_CONSTANT,
           "the ring in __constant__ memory: the constant cache, and behind it the constant "
           "L1.5, per step (LDC)",
           LATENCY_BYTES(4), "0"),
    GM_ROW(latency, "tma", GM_LATENCY_TMA,
           "each step one 16-byte bulk copy (cp.async.bulk: the TMA, the copy engine of "
           "compute capability 9.0) of the node into shared memory, waited for on an mbarrier: "
           "the engine's round trip to L2 or device memory",
           LATENCY_BYTES(16), "0"),
    GM_END_ROWS,
};

enum { LA_WS, LA_VARIANT, LA_STRIDE, LA_LANES, LA_STEPS, LA_WARMUP, LA_SEED, LA_RING, LA_CLOCK };
static const char *const ring_names[] = GM_RING_NAMES;
static const char *const clock_names[] = GM_CLOCK_NAMES;
static const gm_arg latency_args[] = {
    [LA_WS] = {"working_set", GM_INT, GM_POSITIONAL | GM_REQUIRED | GM_RECORD, 0, 8, 1LL << 32,
               .what = " bytes"},
    [LA_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "ca"},
    [LA_STRIDE] = {"stride", GM_INT, GM_RECORD, 128, 8, 1 << 20, .what = " bytes"},
    [LA_LANES] = {"lanes", GM_INT, GM_RECORD, 1, 1, 32, .what = " (chasing lanes of one warp)"},
    [LA_STEPS] = {"steps", GM_INT, GM_RECORD, 8192, 1, 1 << 20, .what = " (timed loads per lane)"},
    [LA_WARMUP] = {"warmup", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 0, 0x7fffffffLL,
                   .what = " (untimed loads per lane)"},
    [LA_SEED] = {"seed", GM_INT, GM_RECORD, 0, 0, 0xffffffffLL},
    [LA_RING] = {"ring", GM_CHOICE, GM_SELECTS | GM_RECORD, GM_RING_SHUFFLED,
                 .choices = ring_names},
    [LA_CLOCK] = {"clock", GM_CHOICE, GM_SELECTS | GM_RECORD, GM_CLOCK_LOOP,
                  .choices = clock_names},
    {NULL},
};

static int latency_check(gm_call *c)
{
    const long long ws = c->v[LA_WS], stride = c->v[LA_STRIDE];
    const int sel = c->variant->select;
    const int each = c->v[LA_CLOCK] == GM_CLOCK_EACH;
    if (sel == GM_LATENCY_TMA && (c->v[LA_RING] != GM_RING_SHUFFLED || each)) {
        PyErr_Format(PyExc_ValueError,
                     "latency: %s='%s' is not allowed with variant='tma'; the bulk copy's chase "
                     "has gpumem's ring and clock only (ring='shuffled', clock='loop')",
                     each ? "clock" : "ring", each ? "each" : "strided");
        return -1;
    }
    if (each && c->v[LA_LANES] * c->v[LA_STEPS] > GM_LATENCY_EACH_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "latency: steps=%lld is not allowed with clock='each' and lanes=%lld; every "
                     "load's time is kept in shared memory, so lanes * steps must be at most %d",
                     c->v[LA_STEPS], c->v[LA_LANES], GM_LATENCY_EACH_MAX);
        return -1;
    }
    if (stride % 8) {
        PyErr_Format(PyExc_ValueError,
                     "latency: stride=%lld is not allowed; stride must be a multiple of 8 bytes "
                     "(a node holds an 8-byte pointer) from 8 to %d",
                     stride, 1 << 20);
        return -1;
    }
    if (sel == GM_LATENCY_TMA && stride % 16) {
        PyErr_Format(PyExc_ValueError,
                     "latency: stride=%lld is not allowed with variant='tma'; a bulk copy moves "
                     "16-byte aligned pieces, so stride must be a multiple of 16 bytes",
                     stride);
        return -1;
    }
    if (ws < stride || ws % stride) {
        PyErr_Format(PyExc_ValueError,
                     "latency: working_set=%lld is not allowed with stride=%lld; working_set must "
                     "be a whole number (>= 1) of strides: the ring has working_set / stride "
                     "nodes",
                     ws, stride);
        return -1;
    }
    const long long cap = sel == GM_LATENCY_SHARED     ? GM_LATENCY_SHARED_MAX
                          : sel == GM_LATENCY_CONSTANT ? GM_LATENCY_CONSTANT_MAX
                                                       : 0;
    if (cap && ws > cap) {
        PyErr_Format(PyExc_ValueError,
                     "latency: working_set=%lld is not allowed with variant='%s'; the ring lives in "
                     "%s, so working_set must be at most %lld bytes",
                     ws, c->variant->name,
                     sel == GM_LATENCY_SHARED ? "one block's dynamic shared memory"
                                              : "a __constant__ array",
                     cap);
        return -1;
    }
    npy_intp shape[2] = {3 + (each ? (npy_intp)c->v[LA_STEPS] : 0), (npy_intp)c->v[LA_LANES]};
    gm_result(c, 2, shape, NPY_INT64);
    c->work = 1;
    return gm_record(c, "n", ws / stride);
}

static void latency_fill(const gm_call *c, void *params)
{
    const long long stride = c->v[LA_STRIDE] ? c->v[LA_STRIDE] : 128;
    *(gm_latency_params *)params = (gm_latency_params){
        c->variant ? c->variant->select : 0,
        gm_tmp(c),
        gm_res(c),
        c->v[LA_WS] / stride,
        stride,
        (int)c->v[LA_LANES],
        (int)c->v[LA_STEPS],
        (int)c->v[LA_WARMUP],
        (unsigned)c->v[LA_SEED],
        (int)c->v[LA_RING],
        (int)c->v[LA_CLOCK],
    };
}

/* Before the timed launch: the warm-up (when not given: one pass over the
 * ring -- ceil(n / lanes) steps per lane -- if the ring is at most twice the
 * L2 or lives on chip, else none, so a ring in device memory is met cold),
 * the ring built on the device, and for the global paths L2 evicted, so the
 * warm-up (or its absence) alone decides what is cached. */
static int latency_prepare(gm_call *c)
{
    const int sel = c->variant->select;
    if (sel == GM_LATENCY_TMA &&
        gm_need_cc("latency", "variant='tma'", 9, 0, "cp.async.bulk and mbarrier: sm_90") < 0)
        return -1;
    const int global = sel != GM_LATENCY_SHARED && sel != GM_LATENCY_CONSTANT;
    const long long ws = c->v[LA_WS], n = ws / c->v[LA_STRIDE], lanes = c->v[LA_LANES];
    long long l2 = 0;
    if (!c->given[LA_WARMUP]) {
        if (global && gm_l2_bytes(&l2) < 0)
            return -1;
        const long long pass = (n + lanes - 1) / lanes;
        const long long one_pass = pass < 0x7fffffffLL ? pass : 0x7fffffffLL;
        c->v[LA_WARMUP] = (!global || ws <= 2 * l2) ? one_pass : 0;
    }
    if (gm_record(c, "warmup", c->v[LA_WARMUP]) < 0)
        return -1;
    const int strided = c->v[LA_RING] == GM_RING_STRIDED;
    c->bytes = (sel == GM_LATENCY_TMA ? 16.0 : global && !strided ? 8.0 : 4.0) * (double)lanes *
               ((double)c->v[LA_WARMUP] + (double)c->v[LA_STEPS]);
    if (gm_new_tmp(c, (npy_intp)ws, NPY_UINT8) < 0)
        return -1;
    /* Zeroed first: the build writes only the nodes, and the shared and constant
     * chases copy the whole working set (untimed, like the build). */
    GM_CUDA(cudaMemsetAsync(c->tmp->ptr, 0, (size_t)ws, c->stream));
    /* The ring holds addresses of itself (or lives in the constant bank):
     * it can only be replayed where it is. */
    c->apart = 1;
    gm_latency_params p;
    latency_fill(c, &p);
    const gm_launch_info build = {.variant = &latency_build, .flags = GM_LAUNCH_INTERNAL,
                                  .stream = c->stream};
    if (gm_launch(&build, &p) < 0)
        return -1;
    if (sel == GM_LATENCY_CONSTANT)
        GM_CUDA(gm_latency_constant_ring(&p, 0));
    if (global && gm_flush_l2(0, 1) < 0)
        return -1;
    return 0;
fail:
    return -1;
}

static const gm_family gm_latency_family = {
    "latency",
    "Chase a ring of working_set / stride nodes (`ring`: a pseudo-random cycle picked by `seed`, "
    "or the papers' ascending strided ring) with `lanes` lanes of one warp along the path "
    "`variant` names: `warmup` untimed, then `steps` timed dependent loads per lane.  int64 rows "
    "of `lanes`: the node each lane ends at, the SM cycles (clock64) and the nanoseconds "
    "(%globaltimer) of its timed steps; with clock='each' then one row per step: that load's "
    "cycles between two clock() reads.",
    latency_args, 0, 0, latency_variants, latency_check, latency_prepare, latency_fill,
};

/* ---- bandwidth ---------------------------------------------------------------------- */
static const gm_variant bandwidth_variants[] = {
    GM_ROW(bandwidth, "read", GM_BANDWIDTH_READ,
           "every thread keeps four 16-byte loads in flight and adds them up: the rate one level "
           "of the hierarchy delivers to the SMs (scope 'block': L1; 'grid': L2 or DRAM)",
           "4*n*passes (times blocks for scope='block')",
           "n*passes (times blocks for scope='block')"),
    GM_ROW(bandwidth, "copy", GM_BANDWIDTH_COPY,
           "the same loads, each stored to out: read plus write traffic of a resident set "
           "(stores go through to L2, so only scope 'grid')",
           "8*n*passes", "0"),
    GM_ROW(bandwidth, "shared", GM_BANDWIDTH_SHARED,
           "each block stages x in shared memory once, then reads it `passes` times: the "
           "scratchpad's bandwidth (LDS.128)",
           "4*n*passes*blocks", "n*passes*blocks"),
    GM_END_ROWS,
};

enum { BW_X, BW_VARIANT, BW_SCOPE, BW_CACHE, BW_PASSES, BW_BLOCKS, BW_BLOCK };
static const char *const scope_names[] = GM_SCOPE_NAMES;
static const char *const cache_names[] = GM_CACHE_PATH_NAMES;
static const gm_arg bandwidth_args[] = {
    [BW_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [BW_VARIANT] = {"variant", GM_VARIANT, GM_RECORD, .sdef = "read"},
    [BW_SCOPE] = {"scope", GM_CHOICE, GM_NO_DEFAULT | GM_SELECTS | GM_RECORD, GM_SCOPE_GRID,
                  .choices = scope_names},
    [BW_CACHE] = {"cache", GM_CHOICE, GM_NO_DEFAULT | GM_SELECTS | GM_RECORD, GM_CACHE_CG,
                  .choices = cache_names},
    [BW_PASSES] = {"passes", GM_INT, GM_RECORD, 1, 1, 1 << 20},
    [BW_BLOCKS] = {"blocks", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 1, 0x7fffffffLL},
    [BW_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 256, 32, 1024, .what = " threads"},
    {NULL},
};

static void set_choice(gm_call *c, int i, long long v)
{
    c->v[i] = v;
    c->s[i] = c->f->args[i].choices[v];
}

/* The read and shared variants' traffic scales with the blocks of a
 * block-scope launch: every block reads all of x. */
static void bandwidth_amounts(gm_call *c)
{
    const double n = (double)gm_dim(c, BW_X, 0), passes = (double)c->v[BW_PASSES];
    const double blocks = c->v[BW_SCOPE] == GM_SCOPE_BLOCK ? (double)c->v[BW_BLOCKS] : 1.0;
    if (c->variant->select == GM_BANDWIDTH_COPY) {
        c->bytes = 8.0 * n * passes;
        c->flops = 0.0;
    } else {
        c->bytes = 4.0 * n * passes * blocks;
        c->flops = n * passes * blocks;
    }
}

static int bandwidth_check(gm_call *c)
{
    const int sel = c->variant->select;
    const long long n = gm_dim(c, BW_X, 0);
    if (sel == GM_BANDWIDTH_SHARED) {
        if (c->given[BW_SCOPE] && c->v[BW_SCOPE] != GM_SCOPE_BLOCK) {
            PyErr_SetString(PyExc_ValueError,
                            "bandwidth: scope='grid' is not allowed with variant='shared'; every "
                            "block reads its own copy of x in shared memory (scope='block')");
            return -1;
        }
        if (c->given[BW_CACHE]) {
            PyErr_Format(PyExc_ValueError,
                         "bandwidth: cache='%s' is not allowed with variant='shared'; cache picks "
                         "the path of global loads, and variant='shared' reads shared memory",
                         c->s[BW_CACHE]);
            return -1;
        }
        if (4 * n > GM_BANDWIDTH_SHARED_MAX) {
            PyErr_Format(PyExc_ValueError,
                         "bandwidth: x has %lld floats (%lld bytes); variant='shared' holds x in "
                         "one block's shared memory: at most %d bytes (%d floats)",
                         n, 4 * n, GM_BANDWIDTH_SHARED_MAX, GM_BANDWIDTH_SHARED_MAX / 4);
            return -1;
        }
        set_choice(c, BW_SCOPE, GM_SCOPE_BLOCK);
        set_choice(c, BW_CACHE, GM_CACHE_DEFAULT);
    } else {
        if (sel == GM_BANDWIDTH_COPY && c->given[BW_SCOPE] && c->v[BW_SCOPE] != GM_SCOPE_GRID) {
            PyErr_SetString(PyExc_ValueError,
                            "bandwidth: scope='block' is not allowed with variant='copy'; a "
                            "copy's stores go through to L2 whatever the scope, so only "
                            "scope='grid'");
            return -1;
        }
        if (!c->given[BW_SCOPE])
            set_choice(c, BW_SCOPE, GM_SCOPE_GRID);
        if (!c->given[BW_CACHE]) /* grid: around L1 (its slice would stay there); block: into it */
            set_choice(c, BW_CACHE, c->v[BW_SCOPE] == GM_SCOPE_BLOCK ? GM_CACHE_CA : GM_CACHE_CG);
    }
    if (sel == GM_BANDWIDTH_COPY) {
        gm_result(c, 1, c->op[BW_X].shape, NPY_FLOAT32);
    } else {
        npy_intp shape[1] = {3};
        gm_result(c, 1, shape, NPY_FLOAT64);
    }
    c->work = n;
    bandwidth_amounts(c);
    return gm_record(c, "n", n);
}

static void bandwidth_fill(const gm_call *c, void *params)
{
    const int sel = c->variant ? c->variant->select : 0;
    *(gm_bandwidth_params *)params = (gm_bandwidth_params){
        sel,
        (int)c->v[BW_CACHE],
        (int)c->v[BW_SCOPE],
        gm_in(c, BW_X),
        sel == GM_BANDWIDTH_COPY ? (float *)gm_res(c) : NULL,
        sel == GM_BANDWIDTH_COPY ? NULL : (double *)gm_res(c),
        gm_dim(c, BW_X, 0),
        (int)c->v[BW_PASSES],
        (int)c->v[BW_BLOCKS],
        (int)c->v[BW_BLOCK],
    };
}

/* Before the launch: the grid (when not given: every SM times the blocks of
 * this kernel that fit on one, a full wave), and the read result zeroed (a
 * profiler replay restores the zeros: it is an in-place buffer). */
static int bandwidth_prepare(gm_call *c)
{
    const int sel = c->variant->select;
    if (!c->given[BW_BLOCKS]) {
        int dev = 0, sms = 0, per_sm = 0;
        gm_bandwidth_params p;
        bandwidth_fill(c, &p);
        const long long n = gm_dim(c, BW_X, 0);
        const size_t smem = sel == GM_BANDWIDTH_SHARED ? (size_t)((n + 3) / 4 * 16) : 0;
        GM_CUDA(cudaGetDevice(&dev));
        GM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        GM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, c->variant->kernel(&p), (int)c->v[BW_BLOCK], smem));
        c->v[BW_BLOCKS] = (long long)sms * (per_sm > 0 ? per_sm : 1);
    }
    if (gm_record(c, "blocks", c->v[BW_BLOCKS]) < 0)
        return -1;
    bandwidth_amounts(c);
    if (sel != GM_BANDWIDTH_COPY) {
        GM_CUDA(cudaMemsetAsync(gm_res(c), 0, 3 * sizeof(double), c->stream));
        c->inout[0] = (gm_buffer){gm_res(c), 3 * sizeof(double)};
        c->n_inout = 1;
    }
    return 0;
fail:
    return -1;
}

static const gm_family gm_bandwidth_family = {
    "bandwidth",
    "Read (`read`: add up; `shared`: from shared memory) or copy x `passes` times with a full "
    "grid of float4 loads: the bandwidth of the level x stays in.  read/shared: float64 "
    "[sum of every value read, SM cycles and ns of block 0]; copy: the copy of x.",
    bandwidth_args, 1, 0, bandwidth_variants, bandwidth_check, bandwidth_prepare, bandwidth_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_latency_family,
    &gm_bandwidth_family,
    NULL,
};

const gm_lesson gm_lesson_ladder = {"ladder", families, NULL, NULL};
