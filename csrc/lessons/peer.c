/* peer.c -- the peer lesson's entry points (cuda/peer.cu): peer_copy (an
 * SM's loads or stores over the link), peer_chase (the link's latency, one
 * dependent load after another) and _peer_memcpy (the copy engine between
 * two GPUs, timed with events).  The families run on the current GPU and
 * take operands on any GPU it has peer access to (peer_operands). */
#include "gm.h"

#include <stdint.h>

GM_THUNKS(peer_copy)
GM_THUNKS(peer_chase)

/* A kernel reading peer memory counts what crosses the link: a profiler may
 * replay it only where its operands are, not on copies of them. */
static int on_the_spot(gm_call *c)
{
    c->apart = 1;
    return 0;
}

/* ---- peer_copy ------------------------------------------------------------------ */
static const gm_variant copy_variants[] = {
    GM_ROW(peer_copy, "float", GM_PEER_FLOAT,
           "4-byte loads and stores: a warp's round of `unroll` loads puts 128 * unroll bytes on "
           "the link", "4*n", "0"),
    GM_ROW(peer_copy, "float2", GM_PEER_FLOAT2,
           "8-byte loads and stores: twice the bytes in flight per load instruction", "4*n", "0"),
    GM_ROW(peer_copy, "float4", GM_PEER_FLOAT4,
           "16-byte loads and stores: 512 bytes per warp-wide load", "4*n", "0"),
    GM_END_ROWS,
};

enum { PC_A, PC_WIDTH, PC_UNROLL, PC_GRID, PC_BLOCK };
static const long long unrolls[] = {1, 2, 4, 8, 16, 0};
static const gm_arg copy_args[] = {
    [PC_A] = {"a", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [PC_WIDTH] = {"width", GM_VARIANT, GM_RECORD, .sdef = "float4"},
    [PC_UNROLL] = {"unroll", GM_INT, GM_SELECTS | GM_RECORD, 4, .allowed = unrolls,
                   .what = " (independent loads per thread)"},
    [PC_GRID] = {"grid", GM_INT, GM_RECORD, 264, 1, 1LL << 20, .what = " blocks"},
    [PC_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 512, 32, 1024,
                  .what = " threads"},
    {NULL},
};

static int copy_check(gm_call *c)
{
    const gm_operand *a = &c->op[PC_A];
    const long long n = gm_operand_size(a);
    if (n < 1)
        return gm_range_error(c, "a.size", n, "1 or more (floats to copy)");
    c->work = n;
    c->bytes = 4.0 * (double)n; /* the bytes copied: over the link, when one side is a peer */
    c->flops = 0.0;
    if (gm_record(c, "n", n) < 0)
        return -1;
    gm_result(c, a->ndim, a->shape, NPY_FLOAT32);
    return 0;
}

/* The vector loads and stores need a and out aligned to their width: gpumem's
 * own arrays are (256 bytes); another library's view may not be. */
static int copy_prepare(gm_call *c)
{
    const uintptr_t width = (uintptr_t)4 << c->variant->select;
    const struct { const char *name; uintptr_t p; } ends[] = {
        {"a", (uintptr_t)gm_in(c, PC_A)}, {"out", (uintptr_t)gm_res(c)}};
    for (int i = 0; i < 2; i++)
        if (ends[i].p % width) {
            PyErr_Format(PyExc_ValueError,
                         "%s: %s must start on a %d-byte boundary for width=%s (its device "
                         "address is %d bytes past one); pass a gpumem array or an aligned view",
                         c->f->name, ends[i].name, (int)width, c->variant->name,
                         (int)(ends[i].p % width));
            return -1;
        }
    return on_the_spot(c);
}

static void copy_fill(const gm_call *c, void *params)
{
    *(gm_peer_copy_params *)params = (gm_peer_copy_params){
        c->variant->select, gm_in(c, PC_A), gm_res(c), c->work, (int)c->v[PC_UNROLL],
        (int)c->v[PC_GRID], (int)c->v[PC_BLOCK]};
}

static const gm_family gm_peer_copy_family = {
    "peer_copy",
    "Copy a (float32, any shape) into a new array or out= with `grid` blocks, `unroll` "
    "independent loads of `width` per thread, on the current GPU: a or out may live on another "
    "GPU it has peer access to (gpumem.enable_peer_access), so that the SM loads (a there) or "
    "stores (out there) over the link.  Returns the copy (on the current GPU unless out=).",
    copy_args, 1, 0, copy_variants, copy_check, copy_prepare, copy_fill, 1,
};

/* ---- peer_chase ----------------------------------------------------------------- */
static const gm_variant chase_variants[] = {
    GM_ROW(peer_chase, "chase", 0,
           "one thread, one dependent load after another through ld.global.cg: the latency of "
           "the memory that holds the chain, on this GPU or across the link", "4*steps", "0"),
    GM_END_ROWS,
};

enum { CS_CHAIN, CS_STEPS, CS_WARMUP };
static const gm_arg chase_args[] = {
    [CS_CHAIN] = {"chain", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED, .ndim = 1, .typenum = NPY_INT32},
    [CS_STEPS] = {"steps", GM_INT, GM_RECORD, 4096, 1, 1 << 24, .what = " (timed loads)"},
    [CS_WARMUP] = {"warmup", GM_INT, GM_RECORD, 256, 0, 1 << 24, .what = " (untimed loads)"},
    {NULL},
};

static int chase_check(gm_call *c)
{
    const long long n = c->op[CS_CHAIN].shape[0];
    if (n < 1 || n > 0x7fffffffLL)
        return gm_range_error(c, "chain.size", n, "1..2^31-1 (int32 indices into the chain)");
    c->work = 1;
    c->bytes = 4.0 * (double)(c->v[CS_STEPS] + c->v[CS_WARMUP]);
    c->flops = 0.0;
    if (gm_record(c, "n", n) < 0)
        return -1;
    const npy_intp shape[1] = {3};
    gm_result(c, 1, shape, NPY_FLOAT64);
    return 0;
}

static void chase_fill(const gm_call *c, void *params)
{
    *(gm_peer_chase_params *)params = (gm_peer_chase_params){
        gm_in(c, CS_CHAIN), gm_res(c), gm_dim(c, CS_CHAIN, 0), c->v[CS_STEPS],
        c->v[CS_WARMUP]};
}

static const gm_family gm_peer_chase_family = {
    "peer_chase",
    "Follow chain (int32, 1-D: j = chain[j] from 0; an index outside it restarts at 0) `warmup` "
    "steps, then time `steps` more, one thread on the current GPU; chain may live on another "
    "GPU it has peer access to.  Returns [SM cycles per step, ns per step, the last index] "
    "(float64).",
    chase_args, 0, 0, chase_variants, chase_check, on_the_spot, chase_fill, 1,
};

/* ---- _peer_memcpy: the copy engine ------------------------------------------------ */
enum { PM_DST, PM_SRC, PM_REPEAT, PM_WARMUP, PM_BACK_DST, PM_BACK_SRC, PM_STAGED };
static const gm_arg memcpy_args[] = {
    [PM_DST] = {"dst", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [PM_SRC] = {"src", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [PM_REPEAT] = {"repeat", GM_INT, 0, 10, 1, 100000},
    [PM_WARMUP] = {"warmup", GM_INT, 0, 2, 0, 100000},
    [PM_BACK_DST] = {"back_dst", GM_OBJECT, 0},
    [PM_BACK_SRC] = {"back_src", GM_OBJECT, 0},
    [PM_STAGED] = {"staged", GM_BOOL, 0, 0},
    {NULL},
};

static const gm_DeviceArray *device_array(const gm_parsed *a, int i, const char *name)
{
    if (!gm_DeviceArray_Check(a->obj[i])) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a gpumem.DeviceArray, not %.200s", a->fn,
                     name, Py_TYPE(a->obj[i])->tp_name);
        return NULL;
    }
    return (const gm_DeviceArray *)a->obj[i];
}

/* One copy src -> dst on `stream` of src's GPU: cudaMemcpyPeerAsync, or through
 * the pinned host buffer `host` (device to host there, then host to device on
 * `other`, a stream of dst's GPU, ordered after it and waited for).  0 / -1. */
static int copy_once(const gm_DeviceArray *dst, const gm_DeviceArray *src, void *host,
                     cudaStream_t stream, cudaStream_t other)
{
    int prev = 0;
    if (host == NULL) {
        GM_CUDA(cudaMemcpyPeerAsync(dst->ptr, dst->device, src->ptr, src->device, src->nbytes,
                                    stream));
        return 0;
    }
    GM_CUDA(cudaMemcpyAsync(host, src->ptr, src->nbytes, cudaMemcpyDeviceToHost, stream));
    if (gm_stream_order_across(dst->device, other, src->device, stream) < 0 ||
        gm_device_enter(dst->device, &prev) < 0)
        return -1;
    const cudaError_t err = cudaMemcpyAsync(dst->ptr, host, src->nbytes, cudaMemcpyHostToDevice,
                                            other);
    gm_device_leave(prev);
    if (err != cudaSuccess)
        return gm_set_cuda_error(err, "cudaMemcpyAsync (host to device)");
    return gm_stream_order_across(src->device, stream, dst->device, other);
fail:
    return -1;
}

/* A new non-blocking stream on GPU dev, and its end (after the work on it ended).  0 / -1. */
static int own_stream(int dev, cudaStream_t *s)
{
    int prev = 0;
    *s = NULL;
    if (gm_device_enter(dev, &prev) < 0)
        return -1;
    const cudaError_t err = cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
    gm_device_leave(prev);
    if (err != cudaSuccess) {
        *s = NULL;
        return gm_set_cuda_error(err, "cudaStreamCreateWithFlags");
    }
    return 0;
}

static void drop_stream(int dev, cudaStream_t s)
{
    int prev = 0;
    if (s == NULL || gm_device_enter(dev, &prev) < 0)
        return;
    (void)cudaStreamSynchronize(s);
    (void)cudaStreamDestroy(s);
    gm_device_leave(prev);
}

static PyObject *peer_memcpy(const gm_parsed *a)
{
    const gm_DeviceArray *dst, *src, *bdst = NULL, *bsrc = NULL;
    if (!(dst = device_array(a, PM_DST, "dst")) || !(src = device_array(a, PM_SRC, "src")))
        return NULL;
    const int both = a->obj[PM_BACK_DST] != NULL || a->obj[PM_BACK_SRC] != NULL;
    if (both && (!a->obj[PM_BACK_DST] || !a->obj[PM_BACK_SRC])) {
        PyErr_Format(PyExc_ValueError, "%s: back_dst and back_src come together (the copy the "
                     "other way at the same time)", a->fn);
        return NULL;
    }
    if (both && (!(bdst = device_array(a, PM_BACK_DST, "back_dst")) ||
                 !(bsrc = device_array(a, PM_BACK_SRC, "back_src"))))
        return NULL;
    if (dst->nbytes != src->nbytes || dst->nbytes == 0) {
        PyErr_Format(PyExc_ValueError, "%s: dst (%zu bytes) and src (%zu bytes) must be the same "
                     "size, and not empty", a->fn, dst->nbytes, src->nbytes);
        return NULL;
    }
    if (both && (bdst->nbytes != src->nbytes || bsrc->nbytes != src->nbytes ||
                 bdst->device != src->device || bsrc->device != dst->device)) {
        PyErr_Format(PyExc_ValueError, "%s: back_src (on device %d) is copied into back_dst (on "
                     "device %d): the way back, as many bytes as src, from dst's GPU (%d) to "
                     "src's (%d)", a->fn, bsrc->device, bdst->device, dst->device, src->device);
        return NULL;
    }
    if (both && a->v[PM_STAGED]) {
        PyErr_Format(PyExc_ValueError, "%s: staged=True copies one way only", a->fn);
        return NULL;
    }
    PyObject *out = NULL;
    cudaStream_t sa = NULL, sb = NULL;
    gm_timer t = GM_TIMER_CLOSED;
    void *host = NULL;
    int prev = 0;
    const int da = src->device, db = dst->device;
    /* A stream of its own on each GPU, non-blocking: on the legacy default streams the
     * two ways of a copy between GPUs run one after the other (measured on two H200s:
     * 386 GB/s both ways together, one way's rate). */
    if (gm_ensure_device() < 0 || own_stream(da, &sa) < 0 || own_stream(db, &sb) < 0)
        goto done;
    if (a->v[PM_STAGED] && gm_host_alloc(src->nbytes, 0, &host) < 0)
        goto done;
    /* after every array's newest work */
    const gm_DeviceArray *all[4] = {dst, src, bdst, bsrc};
    for (int i = 0; i < 4; i++)
        if (all[i] && (gm_stream_order_across(da, sa, all[i]->device, all[i]->stream) < 0 ||
                       gm_stream_order_across(db, sb, all[i]->device, all[i]->stream) < 0))
            goto done;
    if (gm_device_enter(da, &prev) < 0)
        goto done;
    if ((out = PyList_New(0)) == NULL || gm_timer_open(&t, 2, sa) < 0)
        goto left;
    for (long long i = 0; i < a->v[PM_WARMUP] + a->v[PM_REPEAT]; i++) {
        double ms = 0.0;
        if (gm_timer_mark(&t, 0) < 0)
            goto left;
        if (both) { /* the way back on dst's GPU, started with this one, ended before the mark */
            int p2 = 0;
            if (gm_stream_order_across(db, sb, da, sa) < 0 || gm_device_enter(db, &p2) < 0)
                goto left;
            const cudaError_t err = cudaMemcpyPeerAsync(bdst->ptr, bdst->device, bsrc->ptr,
                                                        bsrc->device, bsrc->nbytes, sb);
            gm_device_leave(p2);
            if (err != cudaSuccess) {
                gm_set_cuda_error(err, "cudaMemcpyPeerAsync (the way back)");
                goto left;
            }
        }
        if (copy_once(dst, src, host, sa, sb) < 0 ||
            (both && gm_stream_order_across(da, sa, db, sb) < 0) || gm_timer_mark(&t, 1) < 0 ||
            gm_timer_ms(&t, 0, 1, &ms) < 0)
            goto left;
        if (i >= a->v[PM_WARMUP]) {
            PyObject *v = PyFloat_FromDouble(ms);
            const int rc = v ? PyList_Append(out, v) : -1;
            Py_XDECREF(v);
            if (rc < 0)
                goto left;
        }
    }
    gm_timer_close(&t);
    gm_device_leave(prev);
    goto done;
left:
    Py_CLEAR(out);
    gm_timer_close(&t);
    gm_device_leave(prev);
done:
    if (host) {
        /* the last copy through it has ended: its end event was waited for */
        if (out == NULL)
            (void)cudaDeviceSynchronize();
        gm_host_free(host, src->nbytes);
    }
    drop_stream(da, sa);
    drop_stream(db, sb);
    return out;
}

/* ---- _peer_all_reduce: the teaching all-reduce ------------------------------------- */
static cudaError_t run_reduce(const void *p, gm_dims *d, cudaStream_t s)
{
    return gm_peer_reduce((const gm_peer_reduce_params *)p, d, s);
}

static const void *reduce_kernel(const void *p)
{
    return gm_peer_reduce_kernel((const gm_peer_reduce_params *)p);
}

static const gm_variant reduce_variant = {
    "peer_reduce", "step", "one GPU's step of the teaching all-reduce: every GPU's input "
    "summed over the link, written to one or every GPU's output", "4*(end-begin)", "end-begin",
    run_reduce, reduce_kernel, 0};

enum { AR_INS, AR_OUTS, AR_SHOTS, AR_REPEAT, AR_WARMUP };
static const long long shot_counts[] = {1, 2, 0};
static const gm_arg all_reduce_args[] = {
    [AR_INS] = {"ins", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [AR_OUTS] = {"outs", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    [AR_SHOTS] = {"shots", GM_INT, 0, 1, .allowed = shot_counts},
    [AR_REPEAT] = {"repeat", GM_INT, 0, 1, 1, 100000},
    [AR_WARMUP] = {"warmup", GM_INT, 0, 0, 0, 100000},
    {NULL},
};

/* ins and outs: one float32 DeviceArray each per GPU, all of one size, GPU g's pair on one
 * device, no device twice, every pair with peer access both ways.  k, or -1. */
static int reduce_operands(const gm_parsed *a, const gm_DeviceArray **in,
                           const gm_DeviceArray **out)
{
    PyObject *seq[2] = {a->obj[AR_INS], a->obj[AR_OUTS]};
    const char *names[2] = {"ins", "outs"};
    Py_ssize_t k = -1;
    for (int w = 0; w < 2; w++) {
        if (!PyList_Check(seq[w]) && !PyTuple_Check(seq[w])) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be a list of gpumem.DeviceArray, one per "
                         "GPU", a->fn, names[w]);
            return -1;
        }
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq[w]);
        if (n < 1 || n > GM_PEER_MAX_GPUS || (k >= 0 && n != k)) {
            PyErr_Format(PyExc_ValueError, "%s: ins and outs must hold one array per GPU, as "
                         "many each, 1..%d (%s has %zd)", a->fn, GM_PEER_MAX_GPUS, names[w], n);
            return -1;
        }
        k = n;
        for (Py_ssize_t g = 0; g < n; g++) {
            PyObject *o = PySequence_Fast_GET_ITEM(seq[w], g);
            const gm_DeviceArray *d = (const gm_DeviceArray *)o;
            if (!gm_DeviceArray_Check(o) || d->dtype->type_num != NPY_FLOAT32) {
                PyErr_Format(PyExc_TypeError, "%s: %s[%zd] must be a float32 gpumem.DeviceArray",
                             a->fn, names[w], g);
                return -1;
            }
            (w ? out : in)[g] = d;
        }
    }
    for (Py_ssize_t g = 0; g < k; g++) {
        if (in[g]->nbytes != in[0]->nbytes || out[g]->nbytes != in[0]->nbytes ||
            in[0]->nbytes == 0 || out[g]->device != in[g]->device) {
            PyErr_Format(PyExc_ValueError, "%s: ins[%zd] and outs[%zd] must be on one GPU, and "
                         "every array the size of ins[0] (%zu bytes, not empty)", a->fn, g, g,
                         in[0]->nbytes);
            return -1;
        }
        for (Py_ssize_t h = 0; h < k; h++) {
            if (h != g && in[h]->device == in[g]->device) {
                PyErr_Format(PyExc_ValueError, "%s: ins[%zd] and ins[%zd] are both on device "
                             "%d: one array per GPU", a->fn, g, h, in[g]->device);
                return -1;
            }
            if (h != g && !gm_pool_peer_access_on(in[h]->device, in[g]->device)) {
                PyErr_Format(PyExc_ValueError, "%s: device %d cannot reach device %d's memory: "
                             "call gpumem.enable_peer_access(%d, %d) first", a->fn,
                             in[g]->device, in[h]->device, in[g]->device, in[h]->device);
                return -1;
            }
        }
    }
    return (int)k;
}

static PyObject *peer_all_reduce(const gm_parsed *a)
{
    const gm_DeviceArray *in[GM_PEER_MAX_GPUS], *out[GM_PEER_MAX_GPUS];
    cudaStream_t st[GM_PEER_MAX_GPUS] = {NULL}; /* a non-blocking stream of its own on each */
    gm_peer_reduce_params p[GM_PEER_MAX_GPUS];
    const int k = reduce_operands(a, in, out);
    if (k < 0 || gm_ensure_device() < 0)
        return NULL;
    const long long n = (long long)(in[0]->nbytes / 4), shots = a->v[AR_SHOTS];
    PyObject *res = NULL;
    gm_timer t = GM_TIMER_CLOSED;
    int prev = 0, g = 0, entered = 0;
    for (g = 0; g < k; g++) {
        int sms = 0, p2 = 0;
        const int dev = in[g]->device;
        if (own_stream(dev, &st[g]) < 0 || gm_device_enter(dev, &p2) < 0)
            goto done;
        cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (err == cudaSuccess) /* after every array's earlier work */
            err = cudaDeviceSynchronize();
        gm_device_leave(p2);
        if (err != cudaSuccess) {
            gm_set_cuda_error(err, "_peer_all_reduce");
            goto done;
        }
        /* two-shot: GPU g's part, whole float4s but for the last part's end */
        const long long per = shots == 2 ? ((n / k + 3) / 4) * 4 : n;
        long long b = shots == 2 ? per * g : 0, e = shots == 2 ? per * (g + 1) : n;
        b = b < n ? b : n;
        e = (e < n && g < k - 1) ? e : n;
        p[g] = (gm_peer_reduce_params){.k = k, .outs = shots == 2 ? k : 1, .begin = b, .end = e,
                                       .grid = 4 * sms, .block = 256};
        for (int r = 0; r < k; r++)
            p[g].in[r] = (const float *)in[r]->ptr;
        if (shots == 2)
            for (int j = 0; j < k; j++)
                p[g].out[j] = (float *)out[j]->ptr;
        else
            p[g].out[0] = (float *)out[g]->ptr;
    }
    if (gm_device_enter(in[0]->device, &prev) < 0)
        goto done;
    entered = 1;
    if ((res = PyList_New(0)) == NULL || gm_timer_open(&t, 2, st[0]) < 0)
        goto fail;
    for (long long i = 0; i < a->v[AR_WARMUP] + a->v[AR_REPEAT]; i++) {
        double ms = 0.0;
        if (gm_timer_mark(&t, 0) < 0)
            goto fail;
        for (g = 0; g < k; g++) { /* every GPU starts with the first's mark */
            int p2 = 0;
            if ((g && gm_stream_order_across(in[g]->device, st[g], in[0]->device, st[0]) < 0) ||
                gm_device_enter(in[g]->device, &p2) < 0)
                goto fail;
            const gm_launch_info info = {.variant = &reduce_variant, .flags = GM_LAUNCH_INTERNAL,
                                         .stream = st[g]};
            const int rc = p[g].begin < p[g].end ? gm_launch(&info, &p[g]) : 0;
            gm_device_leave(p2);
            if (rc < 0)
                goto fail;
        }
        for (g = 1; g < k; g++) /* and the first's end mark waits for every GPU */
            if (gm_stream_order_across(in[0]->device, st[0], in[g]->device, st[g]) < 0)
                goto fail;
        if (gm_timer_mark(&t, 1) < 0 || gm_timer_ms(&t, 0, 1, &ms) < 0)
            goto fail;
        if (i >= a->v[AR_WARMUP]) {
            PyObject *v = PyFloat_FromDouble(ms);
            const int rc = v ? PyList_Append(res, v) : -1;
            Py_XDECREF(v);
            if (rc < 0)
                goto fail;
        }
    }
    goto done;
fail:
    Py_CLEAR(res);
done:
    gm_timer_close(&t);
    if (entered)
        gm_device_leave(prev);
    for (g = 0; g < k; g++)
        drop_stream(in[g]->device, st[g]);
    return res;
}

static const gm_plain peer_plain[] = {
    {"_peer_memcpy",
     "Copy src into dst (DeviceArrays of one size, on any two GPUs) with the copy engine "
     "(cudaMemcpyPeerAsync; staged=True: through a pinned host buffer instead, device to host "
     "to device), warmup + repeat times, each between CUDA events on src's GPU; with back_src "
     "and back_dst, the copy the other way at the same time on dst's GPU.  The milliseconds of "
     "the last `repeat`, a list.",
     memcpy_args, peer_memcpy},
    {"_peer_all_reduce",
     "The teaching all-reduce: outs[g] = ins[0] + ... + ins[k-1] (float32, in rank order) for "
     "each GPU g, every GPU at once, its peers' inputs read over the link (peer access on "
     "between every pair).  shots=1: each GPU sums everything; shots=2: GPU g sums part g "
     "and writes it into every GPU's out.  warmup + repeat times, each between CUDA events on "
     "ins[0]'s GPU: the milliseconds of the last `repeat`, a list.",
     all_reduce_args, peer_all_reduce},
    {NULL},
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_peer_copy_family,
    &gm_peer_chase_family,
    NULL,
};

const gm_lesson gm_lesson_peer = {"peer", families, peer_plain, NULL};
