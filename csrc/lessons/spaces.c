/* spaces.c -- the memory-spaces lesson's entry points (cuda/spaces.cu):
 * thread_histogram (local memory vs registers), lifetimes, register_pressure
 * (register caps, spills, occupancy) and divergence. */
#include "gm.h"

GM_THUNKS(thread_histogram)
GM_THUNKS(lifetimes)
GM_THUNKS(register_pressure)
GM_THUNKS(divergence)

#define WARPS_BLOCK(def, max)                                                  \
    {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, def, 32, max, .what = " threads"}

/* ---- thread_histogram --------------------------------------------------------- */
static const gm_variant histogram_variants[] = {
    GM_ROW(thread_histogram, "local", GM_HISTOGRAM_LOCAL,
           "a per-thread 16-bin histogram indexed at run time: registers cannot be indexed, so "
           "it lives in local memory (STL/LDL through L1)",
           "4*n + 64*threads", "0"),
    GM_ROW(thread_histogram, "registers", GM_HISTOGRAM_REGISTERS,
           "the same histogram with compile-time indices only (compare and add every bin): it "
           "stays in registers",
           "4*n + 64*threads", "0"),
    GM_END_ROWS,
};

enum { TH_X, TH_VARIANT, TH_THREADS, TH_BLOCK };
static const gm_arg histogram_args[] = {
    [TH_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [TH_VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "local"},
    [TH_THREADS] = {"threads", GM_INT, GM_NO_DEFAULT | GM_RECORD, 0, 1, 0x7fffffffLL - 1024},
    [TH_BLOCK] = WARPS_BLOCK(256, 1024),
    {NULL},
};

static int histogram_check(gm_call *c)
{
    const long long n = c->op[TH_X].shape[0];
    if (!c->given[TH_THREADS]) /* one histogram per element, at most 65536 */
        c->v[TH_THREADS] = n < 65536 ? (n > 0 ? n : 1) : 65536;
    npy_intp shape[2] = {GM_HISTOGRAM_BINS, (npy_intp)c->v[TH_THREADS]};
    gm_result(c, 2, shape, NPY_INT32);
    c->work = 1; /* always launched: an empty x gives zero counts */
    c->bytes = 4.0 * (double)n + 64.0 * (double)c->v[TH_THREADS];
    return gm_record(c, "n", n);
}

static void histogram_fill(const gm_call *c, void *params)
{
    *(gm_thread_histogram_params *)params = (gm_thread_histogram_params){
        c->variant->select, gm_in(c, TH_X), gm_res(c), gm_dim(c, TH_X, 0),
        (int)c->v[TH_THREADS], (int)c->v[TH_BLOCK]};
}

static const gm_family gm_thread_histogram_family = {
    "thread_histogram",
    "A private 16-bin histogram per thread (thread t counts x[t::threads]), in local memory or "
    "in registers (`variant`): int32 counts of shape (16, threads).",
    histogram_args, 1, 0, histogram_variants, histogram_check, NULL, histogram_fill,
};

/* ---- lifetimes ------------------------------------------------------------------ */
static const gm_variant lifetimes_variants[] = {
    GM_ROW(lifetimes, "default", 0,
           "a __device__ counter persists across launches, a __shared__ count lives and dies with "
           "its block, a __constant__ set from the host persists",
           "24*blocks", "0"),
    GM_END_ROWS,
};

enum { LT_BLOCKS, LT_BLOCK, LT_VALUE, LT_COUNTER };
static const gm_arg lifetimes_args[] = {
    [LT_BLOCKS] = {"blocks", GM_INT, GM_RECORD, 4, 1, 65535},
    [LT_BLOCK] = WARPS_BLOCK(64, 1024),
    [LT_VALUE] = {"value", GM_INT, GM_NO_DEFAULT, 0, -2147483647LL - 1, 2147483647LL},
    [LT_COUNTER] = {"counter", GM_INT, GM_NO_DEFAULT, 0, 0, 1LL << 62},
    {NULL},
};

static int lifetimes_check(gm_call *c)
{
    npy_intp shape[2] = {3, (npy_intp)c->v[LT_BLOCKS]};
    gm_result(c, 2, shape, NPY_INT64);
    c->work = 1;
    c->bytes = 24.0 * (double)c->v[LT_BLOCKS];
    return 0;
}

/* Set what the host sets; the kernel reads and writes the __device__
 * counter, so a profiler replay restores it. */
static int lifetimes_prepare(gm_call *c)
{
    size_t nbytes = 0;
    if (c->given[LT_VALUE])
        GM_CUDA(gm_lifetimes_set_constant((int)c->v[LT_VALUE]));
    if (c->given[LT_COUNTER])
        GM_CUDA(gm_lifetimes_set_counter((unsigned long long)c->v[LT_COUNTER]));
    GM_CUDA(gm_lifetimes_counter_address(&c->inout[0].ptr, &nbytes));
    c->inout[0].nbytes = nbytes;
    c->n_inout = 1;
    c->apart = 1; /* the __device__ counter and the __constant__ value */
    return 0;
fail:
    return -1;
}

static void lifetimes_fill(const gm_call *c, void *params)
{
    *(gm_lifetimes_params *)params =
        (gm_lifetimes_params){gm_res(c), (int)c->v[LT_BLOCKS], (int)c->v[LT_BLOCK]};
}

static const gm_family gm_lifetimes_family = {
    "lifetimes",
    "One launch of the lifetime kernel: int64 rows (the __shared__ count of each block, the "
    "__device__ counter after it, the __constant__ it read); `value` and `counter` set the "
    "constant and the counter first.",
    lifetimes_args, 0, 0, lifetimes_variants, lifetimes_check, lifetimes_prepare, lifetimes_fill,
};

/* ---- register_pressure -------------------------------------------------------------- */
#define REGCAP_BYTES "4*(64 + 1)*n"
#define REGCAP_FLOPS "(192*rounds + 64)*n"
#define REGCAP_IDEA(CAP)                                                                   \
    "__launch_bounds__(256, " CAP "): 64 live floats per thread in at most 65536/(256*" CAP \
    ") registers; what does not fit spills to local memory"

static const gm_variant pressure_variants[] = {
    GM_ROW(register_pressure, "uncapped", GM_REGCAP_UNCAPPED, REGCAP_IDEA("1"), REGCAP_BYTES,
           REGCAP_FLOPS),
    GM_ROW(register_pressure, "cap128", GM_REGCAP_128, REGCAP_IDEA("2"), REGCAP_BYTES,
           REGCAP_FLOPS),
    GM_ROW(register_pressure, "cap64", GM_REGCAP_64, REGCAP_IDEA("4"), REGCAP_BYTES,
           REGCAP_FLOPS),
    GM_ROW(register_pressure, "cap40", GM_REGCAP_40, REGCAP_IDEA("6"), REGCAP_BYTES,
           REGCAP_FLOPS),
    GM_ROW(register_pressure, "cap32", GM_REGCAP_32, REGCAP_IDEA("8"), REGCAP_BYTES,
           REGCAP_FLOPS),
    GM_END_ROWS,
};

enum { RP_X, RP_VARIANT, RP_ROUNDS, RP_BLOCK };
static const gm_arg pressure_args[] = {
    [RP_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [RP_VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "uncapped"},
    [RP_ROUNDS] = {"rounds", GM_INT, GM_RECORD, 8, 0, 1 << 20},
    [RP_BLOCK] = WARPS_BLOCK(GM_REGCAP_MAX_BLOCK, GM_REGCAP_MAX_BLOCK),
    {NULL},
};

static int pressure_check(gm_call *c)
{
    const gm_operand *x = &c->op[RP_X];
    char sh[128];
    if (x->ndim != 2 || x->shape[0] != GM_REGCAP_LIVE) {
        PyErr_Format(PyExc_ValueError,
                     "register_pressure: x has shape %s; it must be (%d, n): column t holds the "
                     "%d values thread t keeps live",
                     gm_shape_str(x->ndim, x->shape, sh, sizeof sh), GM_REGCAP_LIVE,
                     GM_REGCAP_LIVE);
        return -1;
    }
    const long long n = x->shape[1];
    npy_intp shape[1] = {(npy_intp)n};
    gm_result(c, 1, shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 4.0 * (GM_REGCAP_LIVE + 1) * (double)n;
    c->flops = (192.0 * (double)c->v[RP_ROUNDS] + 64.0) * (double)n;
    return gm_record(c, "n", n);
}

static void pressure_fill(const gm_call *c, void *params)
{
    *(gm_register_pressure_params *)params = (gm_register_pressure_params){
        c->variant->select, gm_in(c, RP_X), gm_res(c), c->work, (int)c->v[RP_ROUNDS],
        (int)c->v[RP_BLOCK]};
}

static const gm_family gm_register_pressure_family = {
    "register_pressure",
    "Each thread keeps 64 floats live through `rounds` rounds of mixing; `variant` picks the "
    "__launch_bounds__ register cap (registers, spills, occupancy).",
    pressure_args, 1, 0, pressure_variants, pressure_check, NULL, pressure_fill,
};

/* ---- divergence --------------------------------------------------------------------- */
static const gm_variant divergence_variants[] = {
    GM_ROW(divergence, "odd_even", GM_DIVERGENCE_ODD_EVEN,
           "branch on threadIdx.x % 2: both paths in every warp, run one after the other", "8*n",
           "2*iters*n"),
    GM_ROW(divergence, "warp", GM_DIVERGENCE_WARP,
           "branch on the warp index: each warp takes one path, no warp diverges", "8*n",
           "2*iters*n"),
    GM_END_ROWS,
};

enum { DV_X, DV_VARIANT, DV_ITERS, DV_BLOCK };
static const gm_arg divergence_args[] = {
    [DV_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},
    [DV_VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "odd_even"},
    [DV_ITERS] = {"iters", GM_INT, GM_RECORD, 256, 0, 1 << 20},
    [DV_BLOCK] = WARPS_BLOCK(256, 1024),
    {NULL},
};

static int divergence_check(gm_call *c)
{
    const long long n = c->op[DV_X].shape[0];
    if (gm_check_grid(c, n, c->v[DV_BLOCK], c->v[DV_BLOCK]) < 0)
        return -1;
    gm_result(c, 1, c->op[DV_X].shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 8.0 * (double)n;
    c->flops = 2.0 * (double)c->v[DV_ITERS] * (double)n;
    return gm_record(c, "n", n);
}

static void divergence_fill(const gm_call *c, void *params)
{
    *(gm_divergence_params *)params = (gm_divergence_params){
        c->variant->select, gm_in(c, DV_X), gm_res(c), c->work, (int)c->v[DV_ITERS],
        (int)c->v[DV_BLOCK]};
}

static const gm_family gm_divergence_family = {
    "divergence",
    "Half the threads run x = x/2 + 1, the other half x = x/4 + 3, `iters` times, split by "
    "threadIdx.x % 2 (odd_even) or by warp (warp).",
    divergence_args, 1, 0, divergence_variants, divergence_check, NULL, divergence_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_thread_histogram_family,
    &gm_lifetimes_family,
    &gm_register_pressure_family,
    &gm_divergence_family,
    NULL,
};

const gm_lesson gm_lesson_spaces = {"spaces", families, NULL, NULL};
