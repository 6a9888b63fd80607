/* access.c -- the access lesson's entry points (cuda/access.cu): vec_add,
 * read_offset, write_offset, copy.  The bytes are the useful bytes (what the
 * threads ask for); the sectors the hardware moves on top of them are what
 * the lesson measures. */
#include "gm.h"

#include <string.h>

GM_THUNKS(vec_add)
GM_THUNKS(read_offset)
GM_THUNKS(write_offset)
GM_THUNKS(copy)

#define BLOCK(def) {"block", GM_INT, GM_RECORD, def, 1, 1024, .what = " threads"}

static int same_shape(const gm_call *c, int i, int j, const char *a, const char *b)
{
    char sa[128], sb[128];
    const gm_operand *x = &c->op[i], *y = &c->op[j];
    if (x->ndim == y->ndim && !memcmp(x->shape, y->shape, sizeof(npy_intp) * (size_t)x->ndim))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s and %s must have the same shape, not %s and %s",
                 c->f->name, a, b, gm_shape_str(x->ndim, x->shape, sa, sizeof sa),
                 gm_shape_str(y->ndim, y->shape, sb, sizeof sb));
    return -1;
}

/* ---- vec_add ---------------------------------------------------------------- */
static const gm_variant vec_add_variants[] = {
    GM_ROW(vec_add, "default", 0,
           "one element per thread: each warp reads and writes 128 contiguous bytes (fully "
           "coalesced)",
           "12*n", "n"),
    GM_END_ROWS,
};

enum { VA_A, VA_B, VA_BLOCK };
static const gm_arg vec_add_args[] = {
    [VA_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [VA_B] = {"b", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [VA_BLOCK] = BLOCK(256),
    {NULL},
};

static int vec_add_check(gm_call *c)
{
    if (same_shape(c, VA_A, VA_B, "a", "b") < 0)
        return -1;
    const long long n = gm_operand_size(&c->op[VA_A]);
    if (gm_check_grid(c, n, c->v[VA_BLOCK], c->v[VA_BLOCK]) < 0)
        return -1;
    gm_result(c, c->op[VA_A].ndim, c->op[VA_A].shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 12.0 * (double)n;
    c->flops = (double)n;
    return gm_record(c, "n", n);
}

static void vec_add_fill(const gm_call *c, void *params)
{
    *(gm_vec_add_params *)params = (gm_vec_add_params){
        gm_in(c, VA_A), gm_in(c, VA_B), gm_res(c), c->work, (int)c->v[VA_BLOCK]};
}

static const gm_family gm_vec_add_family = {
    "vec_add",
    "a + b elementwise (float32, same shape), one element per thread; out may be a or b "
    "(in place).",
    vec_add_args, 1, 1, vec_add_variants, vec_add_check, NULL, vec_add_fill,
};

/* ---- read_offset / write_offset -------------------------------------------------
 * The result has length n.  read_offset writes C[:n-offset], write_offset
 * C[offset:]; the other `offset` elements are never written:
 *   - ndarray inputs: the ndarray of the written elements only (n - offset);
 *   - out= given: out, its unwritten elements untouched;
 *   - DeviceArray inputs, no out=: a new length-n DeviceArray whose unwritten
 *     elements are NaN (bytes 0xff, set before the timed launch). */
#define OFFSET_BYTES "12*(n - offset)"
#define OFFSET_FLOPS "n - offset"

static const gm_variant read_offset_variants[] = {
    GM_ROW(read_offset, "unroll1", GM_UNROLL1,
           "C[i] = A[i+offset] + B[i+offset]: loads shifted off the 32-byte sector grid touch "
           "one sector more per warp (offset 11: 5 sectors for 4 sectors' worth, 80%)",
           OFFSET_BYTES, OFFSET_FLOPS),
    GM_ROW(read_offset, "unroll4", GM_UNROLL4,
           "the same reads, four elements per thread one block apart: 8 independent loads in "
           "flight per thread before any store",
           OFFSET_BYTES, OFFSET_FLOPS),
    GM_END_ROWS,
};

static const gm_variant write_offset_variants[] = {
    GM_ROW(write_offset, "unroll1", GM_UNROLL1,
           "C[i+offset] = A[i] + B[i]: stores shifted off the sector grid (offset 11: 80% store "
           "efficiency); stores skip L1",
           OFFSET_BYTES, OFFSET_FLOPS),
    GM_ROW(write_offset, "unroll4", GM_UNROLL4,
           "the same writes, four elements per thread one block apart, loads first",
           OFFSET_BYTES, OFFSET_FLOPS),
    GM_END_ROWS,
};

enum { OF_A, OF_B, OF_OFFSET, OF_UNROLL, OF_BLOCK, OF_CACHE };
static const long long unrolls[] = {1, 4, 0};
static const char *const cache_names[] = GM_CACHE_PATH_NAMES;
#define OFFSET_ARGS                                                                     \
    [OF_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},                  \
    [OF_B] = {"b", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1},                  \
    [OF_OFFSET] = {"offset", GM_INT, GM_RECORD, 0, -0x7fffffffffffffffLL, 0x7fffffffffffffffLL}, \
    [OF_UNROLL] = {"unroll", GM_INT, 0, 1, .allowed = unrolls, .what = " (elements per thread)"}, \
    [OF_BLOCK] = BLOCK(512)
static const gm_arg read_offset_args[] = {
    OFFSET_ARGS,
    [OF_CACHE] = {"cache", GM_CHOICE, GM_SELECTS | GM_RECORD, 0, .choices = cache_names,
                  .what = " (ca: L1 and L2, cg: L2 only, ldg: the read-only path, cs: streaming)"},
    {NULL},
};
static const gm_arg write_offset_args[] = {OFFSET_ARGS, {NULL}};

static int offset_check(gm_call *c)
{
    const int is_read = c->f->variants == read_offset_variants;
    if (same_shape(c, OF_A, OF_B, "a", "b") < 0)
        return -1;
    const long long n = c->op[OF_A].shape[0], offset = c->v[OF_OFFSET], unroll = c->v[OF_UNROLL];
    if (offset < 0 || offset > n) {
        char allowed[96];
        snprintf(allowed, sizeof allowed, "0..n (n=%lld, the length of a)", n);
        return gm_range_error(c, "offset", offset, allowed);
    }
    if (gm_check_grid(c, n, unroll * c->v[OF_BLOCK], c->v[OF_BLOCK]) < 0 ||
        gm_pick_variant(c, unroll == 4 ? "unroll4" : "unroll1") < 0)
        return -1;
    gm_result(c, 1, c->op[OF_A].shape, NPY_FLOAT32);
    c->host_first = is_read ? 0 : offset;
    c->host_count = n - offset;
    c->work = n;
    c->bytes = 12.0 * (double)(n - offset);
    c->flops = (double)(n - offset);
    return gm_record(c, "n", n);
}

/* A new DeviceArray result: NaN where the kernel writes nothing. */
static int offset_prepare(gm_call *c)
{
    const int is_read = c->f->variants == read_offset_variants;
    const long long offset = c->v[OF_OFFSET], hole = is_read ? c->host_count : 0;
    if (gm_returns_device(c) && !c->out && offset > 0)
        GM_CUDA(cudaMemsetAsync((float *)gm_res(c) + hole, 0xff, (size_t)offset * sizeof(float),
                                c->stream));
    return 0;
fail:
    return -1;
}

static void read_offset_fill(const gm_call *c, void *params)
{
    *(gm_read_offset_params *)params = (gm_read_offset_params){
        c->variant->select, gm_in(c, OF_A), gm_in(c, OF_B), gm_res(c), c->work,
        c->v[OF_OFFSET],    (int)c->v[OF_BLOCK], (int)c->v[OF_CACHE]};
}

static void write_offset_fill(const gm_call *c, void *params)
{
    *(gm_write_offset_params *)params = (gm_write_offset_params){
        c->variant->select, gm_in(c, OF_A),  gm_in(c, OF_B), gm_res(c),
        c->work,            c->v[OF_OFFSET], (int)c->v[OF_BLOCK]};
}

static const gm_family gm_read_offset_family = {
    "read_offset",
    "Misaligned reads: C[i] = a[i + offset] + b[i + offset] for i + offset < n, one or four "
    "elements per thread, through the load path `cache`.",
    read_offset_args, 1, 0, read_offset_variants, offset_check, offset_prepare, read_offset_fill,
};

static const gm_family gm_write_offset_family = {
    "write_offset",
    "Misaligned writes: C[i + offset] = a[i] + b[i] for i + offset < n, one or four elements "
    "per thread.",
    write_offset_args, 1, 0, write_offset_variants, offset_check, offset_prepare,
    write_offset_fill,
};

/* ---- copy ------------------------------------------------------------------------ */
static const gm_variant copy_variants[] = {
    GM_ROW(copy, "float", GM_COPY_FLOAT,
           "one 4-byte load and store per thread: 4 sectors per warp request", "8*n", "0"),
    GM_ROW(copy, "float4", GM_COPY_FLOAT4,
           "one 16-byte vector load and store per thread: 16 sectors per request, a quarter of "
           "the instructions (the streaming ceiling)",
           "8*n", "0"),
    GM_END_ROWS,
};

enum { CP_A, CP_VARIANT, CP_BLOCK };
static const gm_arg copy_args[] = {
    [CP_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [CP_VARIANT] = {"variant", GM_VARIANT, 0, .sdef = "float4"},
    [CP_BLOCK] = BLOCK(256),
    {NULL},
};

static int copy_check(gm_call *c)
{
    const long long n = gm_operand_size(&c->op[CP_A]);
    const long long threads = c->variant->select == GM_COPY_FLOAT4 ? n / 4 + n % 4 : n;
    if (gm_check_grid(c, threads, c->v[CP_BLOCK], c->v[CP_BLOCK]) < 0)
        return -1;
    gm_result(c, c->op[CP_A].ndim, c->op[CP_A].shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 8.0 * (double)n;
    return gm_record(c, "n", n);
}

static void copy_fill(const gm_call *c, void *params)
{
    *(gm_copy_params *)params = (gm_copy_params){c->variant->select, gm_in(c, CP_A), gm_res(c),
                                                 c->work, (int)c->v[CP_BLOCK]};
}

static const gm_family gm_copy_family = {
    "copy",
    "Device-to-device copy of a (any shape, float32) by a kernel: the streaming ceiling.",
    copy_args, 1, 0, copy_variants, copy_check, NULL, copy_fill,
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_vec_add_family,
    &gm_read_offset_family,
    &gm_write_offset_family,
    &gm_copy_family,
    NULL,
};

const gm_lesson gm_lesson_access = {"access", families, NULL, NULL};
