/* transfer.c -- the host memory and transfers lesson (cuda/transfer.cu): the
 * read_sum and scale families, and the timed experiments gpumem.transfer
 * builds its tables from:
 *   _transfer_copy      one copy kind, one direction, one size, repeated
 *   _transfer_zero_copy a kernel reading mapped pinned host memory against
 *                       copying first and reading device memory
 *   _transfer_managed   a kernel reading managed memory that lives on the
 *                       host, with and without cudaMemPrefetchAsync first
 *   _transfer_overlap   copy-kernel-copy serially and in chunks on two streams,
 *                       every operation's start and end from events
 * Every time comes from CUDA events on the device's clock (a measure.c
 * gm_timer each); the kernels run through gm_launch as internal launches (the
 * experiments time them with their own events: no LaunchRecord). */
#include "gm.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

GM_THUNKS(read_sum)
GM_THUNKS(scale)

/* ---- read_sum ------------------------------------------------------------------ */
static const gm_variant read_sum_variants[] = {
    GM_ROW(read_sum, "default", 0,
           "every byte of x read once (16-byte loads, grid-stride) and added up: as fast as "
           "the memory x lives in -- device memory, pinned host memory over the bus, managed "
           "memory migrating on first touch",
           "4*n", "n"),
    GM_END_ROWS,
};

enum { RS_X, RS_BLOCK };
static const gm_arg read_sum_args[] = {
    [RS_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [RS_BLOCK] = {"block", GM_INT, GM_RECORD | GM_WHOLE_WARPS, 256, 32, 1024, .what = " threads"},
    {NULL},
};

static int read_sum_check(gm_call *c)
{
    const long long n = gm_operand_size(&c->op[RS_X]);
    npy_intp one[1] = {1};
    gm_result(c, 1, one, NPY_FLOAT64);
    c->work = n > 0 ? n : 1; /* always launched: the sum of nothing is written as 0 */
    c->bytes = 4.0 * (double)n;
    c->flops = (double)n;
    return gm_record(c, "n", n);
}

static int read_sum_prepare(gm_call *c)
{
    c->inout[0] = (gm_buffer){gm_res(c), sizeof(double)}; /* a replay must start from 0 */
    c->n_inout = 1;
    GM_CUDA(cudaMemsetAsync(gm_res(c), 0, sizeof(double), c->stream));
    return 0;
fail:
    return -1;
}

static void read_sum_fill(const gm_call *c, void *params)
{
    *(gm_read_sum_params *)params = (gm_read_sum_params){
        gm_in(c, RS_X), gm_res(c), gm_operand_size(&c->op[RS_X]), (int)c->v[RS_BLOCK]};
}

static const gm_family gm_read_sum_family = {
    "read_sum",
    "The sum of x (float32, any shape) as a float64 array of one element, reading every "
    "byte once: the kernel the transfer lesson points at device, mapped host and managed "
    "memory.",
    read_sum_args, 0, 0, read_sum_variants, read_sum_check, read_sum_prepare, read_sum_fill,
};

/* ---- scale ----------------------------------------------------------------------------- */
static const gm_variant scale_variants[] = {
    GM_ROW(scale, "default", 0,
           "y = x pushed `work` times through an FMA: `work` FMAs per 8 bytes moved, so its "
           "time can be set to match a copy's (the compute that copies overlap with)",
           "8*n", "2*n*work"),
    GM_END_ROWS,
};

enum { SC_X, SC_WORK, SC_BLOCK };
static const gm_arg scale_args[] = {
    [SC_X] = {"x", GM_ARRAY, GM_POSITIONAL | GM_REQUIRED},
    [SC_WORK] = {"work", GM_INT, GM_RECORD, 0, 0, 1000000, .what = " FMAs per element"},
    [SC_BLOCK] = {"block", GM_INT, GM_RECORD, 256, 1, 1024, .what = " threads"},
    {NULL},
};

static int scale_check(gm_call *c)
{
    const long long n = gm_operand_size(&c->op[SC_X]);
    gm_result(c, c->op[SC_X].ndim, c->op[SC_X].shape, NPY_FLOAT32);
    c->work = n;
    c->bytes = 8.0 * (double)n;
    c->flops = 2.0 * (double)n * (double)c->v[SC_WORK];
    return gm_record(c, "n", n);
}

static void scale_fill(const gm_call *c, void *params)
{
    *(gm_scale_params *)params = (gm_scale_params){
        gm_in(c, SC_X), gm_res(c), gm_operand_size(&c->op[SC_X]), (int)c->v[SC_WORK],
        (int)c->v[SC_BLOCK]};
}

static const gm_family gm_scale_family = {
    "scale",
    "y = x (float32, any shape) pushed `work` times through v = 0.999 v + 0.001: compute "
    "whose time grows with `work`, the kernel of the copy/compute overlap experiment.",
    scale_args, 0, 0, scale_variants, scale_check, NULL, scale_fill,
};

/* ---- the experiments' shared parts ---------------------------------------------------------- */
#define MAX_BYTES (1LL << 36) /* 64 GiB */

/* nbytes of whole floats (the table has checked 4..MAX_BYTES): a multiple of 4. */
static int whole_floats(const char *fn, long long nbytes)
{
    if (nbytes % 4 == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: nbytes=%lld is not allowed; nbytes must be a multiple "
                 "of 4 (whole floats)", fn, nbytes);
    return -1;
}

static int append_float(PyObject *list, double v)
{
    PyObject *o = PyFloat_FromDouble(v);
    int rc = o ? PyList_Append(list, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/* x[i] = i % 8: every partial sum the kernel forms is an exact float. */
static void fill_pattern(float *x, long long n)
{
    for (long long i = 0; i < n; i++)
        x[i] = (float)(i & 7);
}

/* One kernel of the lesson, an internal launch on stream s. */
static int run_on(const gm_variant *v, const void *params, cudaStream_t s)
{
    const gm_launch_info info = {.variant = v, .flags = GM_LAUNCH_INTERNAL, .stream = s};
    return gm_launch(&info, params);
}

static int sum_on_device(const float *x, long long n, double *dsum, cudaStream_t s)
{
    const gm_read_sum_params p = {x, dsum, n, 256};
    return run_on(&read_sum_variants[0], &p, s);
}

/* ---- _transfer_copy ------------------------------------------------------------------------ */
static const char *const copy_kinds[] = {"pageable", "fresh", "pinned", "write_combined",
                                         "staged", NULL};
enum { K_PAGEABLE, K_FRESH, K_PINNED, K_WC, K_STAGED };
static const char *const directions[] = {"h2d", "d2h", NULL};

/* _transfer_copy(kind, direction, nbytes, repeat, warmup): ms of each timed copy.
 *   pageable        cudaMemcpy from/to malloc'd memory touched before (the driver stages it)
 *   fresh           d2h only: into memory mapped just before, never touched (page faults)
 *   pinned          cudaMemcpy from/to cudaHostAlloc'd memory (DMA straight from/to it)
 *   write_combined  pinned, write-combined (uncached for the CPU)
 *   staged          gpumem's own path for pageable memory (to_device / get) */
enum { TC_KIND, TC_DIRECTION, TC_NBYTES, TC_REPEAT, TC_WARMUP };
static const gm_arg copy_args[] = {
    [TC_KIND] = {"kind", GM_CHOICE, GM_POSITIONAL | GM_REQUIRED, .choices = copy_kinds},
    [TC_DIRECTION] = {"direction", GM_CHOICE, GM_POSITIONAL | GM_REQUIRED, .choices = directions},
    [TC_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, MAX_BYTES},
    [TC_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 100000},
    [TC_WARMUP] = {"warmup", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 0, 100000},
    {NULL},
};

static PyObject *transfer_copy(const gm_parsed *a)
{
    const char *fn = a->fn;
    const int kind = (int)a->v[TC_KIND];
    const long long nbytes = a->v[TC_NBYTES], repeat = a->v[TC_REPEAT], warmup = a->v[TC_WARMUP];
    PyObject *out = NULL;
    void *dev = NULL, *host = NULL;
    gm_timer t = GM_TIMER_CLOSED;
    const int h2d = a->v[TC_DIRECTION] == 0;
    if (kind == K_FRESH && h2d) {
        PyErr_Format(PyExc_ValueError, "%s: kind='fresh' is a destination on the host: "
                     "direction must be 'd2h'", fn);
        return NULL;
    }
    if (gm_ensure_device() < 0)
        return NULL;
    const size_t nb = (size_t)nbytes;
    if (gm_device_alloc(nb, &dev) < 0)
        return NULL;
    if (kind == K_PINNED || kind == K_WC) {
        if (gm_host_alloc(nb, kind == K_WC ? cudaHostAllocWriteCombined : 0, &host) < 0)
            goto fail;
    } else if (kind != K_FRESH) {
        host = malloc(nb);
        if (host == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    if (host)
        memset(host, 1, nb); /* every page touched: no first-touch cost in the timing */
    GM_CUDA(cudaMemset(dev, 2, nb));
    out = PyList_New(0);
    if (out == NULL || gm_timer_open(&t, 2, NULL) < 0)
        goto fail;
    for (long long i = 0; i < warmup + repeat; i++) {
        void *h = host;
        if (kind == K_FRESH) {
            h = mmap(NULL, nb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (h == MAP_FAILED) {
                PyErr_NoMemory();
                goto fail;
            }
        }
        cudaError_t err = cudaSuccess;
        double ms = 0;
        if (gm_timer_mark(&t, 0) < 0) {
            if (kind == K_FRESH)
                munmap(h, nb);
            goto fail;
        }
        if (kind == K_STAGED) {
            if (gm_copy_host(h2d ? dev : h, h2d ? h : dev, nb, h2d) < 0)
                goto fail;
        } else {
            Py_BEGIN_ALLOW_THREADS
            err = cudaMemcpy(h2d ? dev : h, h2d ? h : dev, nb,
                             h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
            Py_END_ALLOW_THREADS
        }
        const int marked = err == cudaSuccess ? gm_timer_mark(&t, 1) : 0;
        if (kind == K_FRESH)
            munmap(h, nb);
        GM_CUDA(err);
        if (marked < 0 || gm_timer_ms(&t, 0, 1, &ms) < 0)
            goto fail;
        if (i >= warmup && append_float(out, ms) < 0)
            goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    gm_timer_close(&t);
    if (kind == K_PINNED || kind == K_WC)
        gm_host_free(host, nb);
    else
        free(host);
    gm_device_free(dev, nb);
    return out;
}

/* ---- _transfer_zero_copy --------------------------------------------------------------------- */
/* _transfer_zero_copy(nbytes, reads, repeat): {"mapped": [ms], "copy": [ms], "device": [ms],
 * "sums": [mapped, copy, device]} -- `reads` read_sum launches over
 *   mapped  pinned host memory through its device address (every load crosses the bus)
 *   copy    a device copy made first by cudaMemcpy (included in the time)
 *   device  the device copy, already there (the kernels alone) */
enum { ZC_NBYTES, ZC_READS, ZC_REPEAT };
static const gm_arg zero_copy_args[] = {
    [ZC_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 4, MAX_BYTES},
    [ZC_READS] = {"reads", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 1000},
    [ZC_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 10000},
    {NULL},
};

static PyObject *transfer_zero_copy(const gm_parsed *a)
{
    const long long nbytes = a->v[ZC_NBYTES], reads = a->v[ZC_READS], repeat = a->v[ZC_REPEAT];
    PyObject *res = NULL, *lists[3] = {NULL, NULL, NULL};
    float *host = NULL, *hdev = NULL, *dev = NULL;
    double *dsum = NULL, sums[3] = {0, 0, 0};
    gm_timer t = GM_TIMER_CLOSED;
    if (whole_floats(a->fn, nbytes) < 0 || gm_ensure_device() < 0)
        return NULL;
    const size_t nb = (size_t)nbytes;
    const long long n = nbytes / 4;
    if (gm_host_alloc(nb, cudaHostAllocMapped, (void **)&host) < 0)
        return NULL;
    if (gm_device_alloc(nb, (void **)&dev) < 0 || gm_device_alloc(sizeof(double), (void **)&dsum) < 0)
        goto fail;
    fill_pattern(host, n);
    GM_CUDA(cudaHostGetDevicePointer((void **)&hdev, host, 0));
    GM_CUDA(cudaMemcpy(dev, host, nb, cudaMemcpyHostToDevice));
    if (gm_timer_open(&t, 2, NULL) < 0)
        goto fail;
    for (int k = 0; k < 3; k++)
        if ((lists[k] = PyList_New(0)) == NULL)
            goto fail;
    for (long long i = 0; i <= repeat; i++) { /* i == 0: warm-up */
        for (int k = 0; k < 3; k++) {
            double ms = 0;
            GM_CUDA(cudaMemset(dsum, 0, sizeof(double)));
            if (gm_timer_mark(&t, 0) < 0)
                goto fail;
            if (k == 1)
                GM_CUDA(cudaMemcpyAsync(dev, host, nb, cudaMemcpyHostToDevice, 0));
            for (long long r = 0; r < reads; r++)
                if (sum_on_device(k == 0 ? hdev : dev, n, dsum, 0) < 0)
                    goto fail;
            if (gm_timer_mark(&t, 1) < 0 || gm_timer_ms(&t, 0, 1, &ms) < 0)
                goto fail;
            GM_CUDA(cudaMemcpy(&sums[k], dsum, sizeof(double), cudaMemcpyDeviceToHost));
            sums[k] /= (double)reads;
            if (i > 0 && append_float(lists[k], ms) < 0)
                goto fail;
        }
    }
    res = Py_BuildValue("{s:O,s:O,s:O,s:[ddd]}", "mapped", lists[0], "copy", lists[1], "device",
                        lists[2], "sums", sums[0], sums[1], sums[2]);
fail:
    for (int k = 0; k < 3; k++)
        Py_XDECREF(lists[k]);
    gm_timer_close(&t);
    gm_device_free(dsum, sizeof(double));
    gm_device_free(dev, nb);
    gm_host_free(host, nb);
    return res;
}

/* ---- _transfer_managed ----------------------------------------------------------------------- */
/* _transfer_managed(nbytes, repeat): {"fault": [ms], "prefetch": [ms], "after_prefetch": [ms],
 * "resident": [ms], "sums": [...]}: managed memory written on the host (so it lives there),
 * then one read_sum launch
 *   fault           straight away: every page faults and migrates while the kernel waits
 *   prefetch        cudaMemPrefetchAsync to the device first: the migration in bulk ...
 *   after_prefetch  ... and the kernel after it
 *   resident        a second launch, the pages now on the device */
enum { MG_NBYTES, MG_REPEAT };
static const gm_arg managed_args[] = {
    [MG_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 4, MAX_BYTES},
    [MG_REPEAT] = {"repeat", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 1000},
    {NULL},
};

static PyObject *transfer_managed(const gm_parsed *a)
{
    const char *fn = a->fn;
    const long long nbytes = a->v[MG_NBYTES], repeat = a->v[MG_REPEAT];
    PyObject *res = NULL, *lists[4] = {NULL, NULL, NULL, NULL};
    float *m = NULL;
    double *dsum = NULL, sums[3] = {0, 0, 0};
    gm_timer t = GM_TIMER_CLOSED;
    int managed = 0, dev = 0;
    if (whole_floats(fn, nbytes) < 0 || gm_ensure_device() < 0)
        return NULL;
    const size_t nb = (size_t)nbytes;
    const long long n = nbytes / 4;
    GM_CUDA(cudaGetDevice(&dev));
    GM_CUDA(cudaDeviceGetAttribute(&managed, cudaDevAttrConcurrentManagedAccess, dev));
    if (!managed) {
        PyErr_Format(gm_CudaError, "%s: this GPU and system have no concurrent managed access "
                     "(cudaDevAttrConcurrentManagedAccess is 0): pages cannot migrate on demand",
                     fn);
        return NULL;
    }
    if (gm_device_alloc(sizeof(double), (void **)&dsum) < 0)
        return NULL;
    for (int k = 0; k < 4; k++)
        if ((lists[k] = PyList_New(0)) == NULL)
            goto fail;
    if (gm_timer_open(&t, 3, NULL) < 0)
        goto fail;
    struct cudaMemLocation loc = {0};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    for (long long i = 0; i <= repeat; i++) { /* i == 0: warm-up */
        for (int pre = 0; pre < 2; pre++) {
            double ms[3] = {0, 0, 0};
            GM_CUDA(cudaMallocManaged((void **)&m, nb, cudaMemAttachGlobal));
            fill_pattern(m, n); /* first touch on the host: the pages live there */
            GM_CUDA(cudaMemset(dsum, 0, sizeof(double)));
            if (gm_timer_mark(&t, 0) < 0)
                goto fail;
            if (pre)
                GM_CUDA(cudaMemPrefetchAsync(m, nb, loc, 0, 0));
            if (gm_timer_mark(&t, 1) < 0 || sum_on_device(m, n, dsum, 0) < 0 ||
                gm_timer_mark(&t, 2) < 0 || gm_timer_ms(&t, 0, 1, &ms[0]) < 0 ||
                gm_timer_ms(&t, 1, 2, &ms[1]) < 0)
                goto fail;
            GM_CUDA(cudaMemcpy(&sums[pre], dsum, sizeof(double), cudaMemcpyDeviceToHost));
            if (pre) { /* once more, resident now */
                GM_CUDA(cudaMemset(dsum, 0, sizeof(double)));
                if (gm_timer_mark(&t, 0) < 0 || sum_on_device(m, n, dsum, 0) < 0 ||
                    gm_timer_mark(&t, 1) < 0 || gm_timer_ms(&t, 0, 1, &ms[2]) < 0)
                    goto fail;
                GM_CUDA(cudaMemcpy(&sums[2], dsum, sizeof(double), cudaMemcpyDeviceToHost));
            }
            GM_CUDA(cudaFree(m));
            m = NULL;
            if (i == 0)
                continue;
            if (!pre && append_float(lists[0], ms[1]) < 0)
                goto fail;
            if (pre && (append_float(lists[1], ms[0]) < 0 || append_float(lists[2], ms[1]) < 0 ||
                        append_float(lists[3], ms[2]) < 0))
                goto fail;
        }
    }
    res = Py_BuildValue("{s:O,s:O,s:O,s:O,s:[ddd]}", "fault", lists[0], "prefetch", lists[1],
                        "after_prefetch", lists[2], "resident", lists[3], "sums", sums[0],
                        sums[1], sums[2]);
fail:
    if (m && cudaFree(m) != cudaSuccess)
        (void)cudaGetLastError();
    for (int k = 0; k < 4; k++)
        Py_XDECREF(lists[k]);
    gm_timer_close(&t);
    gm_device_free(dsum, sizeof(double));
    return res;
}

/* ---- _transfer_overlap ---------------------------------------------------------------------- */
/* _transfer_overlap(nbytes, chunks, work): {"serial": [...], "overlapped": [...], "equal": bool,
 * "output": bytes of y's first 64 floats}.  Each list holds (stream, op, chunk, start_ms,
 * end_ms) for every copy and kernel, from events, relative to one origin event:
 *   serial      copy x in, scale, copy y out -- one stream, one after the other
 *   overlapped  the same in `chunks` pieces, piece c on stream c % 2, so one piece's copies
 *               run while another's kernel does (the copy engines and the SMs busy at once) */
enum { OV_NBYTES, OV_CHUNKS, OV_WORK };
static const gm_arg overlap_args[] = {
    [OV_NBYTES] = {"nbytes", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 4, MAX_BYTES},
    [OV_CHUNKS] = {"chunks", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 1, 64},
    [OV_WORK] = {"work", GM_INT, GM_POSITIONAL | GM_REQUIRED, 0, 0, 1000000},
    {NULL},
};

static PyObject *transfer_overlap(const gm_parsed *a)
{
    const char *fn = a->fn;
    static const char *ops[3] = {"h2d", "kernel", "d2h"};
    const long long nbytes = a->v[OV_NBYTES], chunks = a->v[OV_CHUNKS], work = a->v[OV_WORK];
    PyObject *res = NULL, *lists[2] = {NULL, NULL};
    float *hx = NULL, *hy[2] = {NULL, NULL}, *dx = NULL, *dy = NULL;
    cudaStream_t st[2] = {NULL, NULL};
    gm_timer t = GM_TIMER_CLOSED;
    if (whole_floats(fn, nbytes) < 0)
        return NULL;
    if (chunks > nbytes / 4) {
        PyErr_Format(PyExc_ValueError, "%s: chunks=%lld is not allowed; chunks must be at most "
                     "the %lld floats of nbytes", fn, chunks, nbytes / 4);
        return NULL;
    }
    if (gm_ensure_device() < 0)
        return NULL;
    const size_t nb = (size_t)nbytes;
    const long long n = nbytes / 4;
    if (gm_host_alloc(nb, 0, (void **)&hx) < 0 || gm_host_alloc(nb, 0, (void **)&hy[0]) < 0 ||
        gm_host_alloc(nb, 0, (void **)&hy[1]) < 0 || gm_device_alloc(nb, (void **)&dx) < 0 ||
        gm_device_alloc(nb, (void **)&dy) < 0)
        goto fail;
    for (long long i = 0; i < n; i++)
        hx[i] = (float)(i % 1000) * 0.001f;
    memset(hy[0], 0xff, nb); /* poisoned: an unwritten element is NaN */
    memset(hy[1], 0xff, nb);
    GM_CUDA(cudaStreamCreate(&st[0]));
    GM_CUDA(cudaStreamCreate(&st[1]));
    /* event 0: the origin, on the legacy default stream; then six a piece, on its stream */
    if (gm_timer_open(&t, 1 + 6 * (int)(chunks + 1), NULL) < 0)
        goto fail;
    for (int pass = 0; pass < 3; pass++) { /* 0: warm-up (overlapped), 1: serial, 2: overlapped */
        const int over = pass != 1;
        const long long pieces = over ? chunks : 1;
        const long long per = (n + pieces - 1) / pieces;
        float *out = hy[pass == 1 ? 0 : 1];
        GM_CUDA(cudaDeviceSynchronize());
        if (gm_timer_mark(&t, 0) < 0)
            goto fail;
        int e = 1;
        for (long long c = 0; c < pieces; c++) {
            const long long first = c * per, cnt = first + per > n ? n - first : per;
            cudaStream_t s = st[over ? c % 2 : 0];
            if (cnt <= 0)
                continue;
            const size_t off = (size_t)first, bytes = (size_t)cnt * sizeof(float);
            if (gm_timer_mark_on(&t, e++, s) < 0)
                goto fail;
            GM_CUDA(cudaMemcpyAsync(dx + off, hx + off, bytes, cudaMemcpyHostToDevice, s));
            const gm_scale_params p = {dx + off, dy + off, cnt, (int)work, 256};
            if (gm_timer_mark_on(&t, e++, s) < 0 || gm_timer_mark_on(&t, e++, s) < 0 ||
                run_on(&scale_variants[0], &p, s) < 0 || gm_timer_mark_on(&t, e++, s) < 0 ||
                gm_timer_mark_on(&t, e++, s) < 0)
                goto fail;
            GM_CUDA(cudaMemcpyAsync(out + off, dy + off, bytes, cudaMemcpyDeviceToHost, s));
            if (gm_timer_mark_on(&t, e++, s) < 0)
                goto fail;
        }
        cudaError_t err;
        Py_BEGIN_ALLOW_THREADS
        err = cudaDeviceSynchronize();
        Py_END_ALLOW_THREADS
        GM_CUDA(err);
        if (pass == 0)
            continue;
        PyObject *list = lists[pass - 1] = PyList_New(0);
        if (list == NULL)
            goto fail;
        e = 1;
        for (long long c = 0; c < pieces; c++) {
            const long long first = c * per;
            if (n - first <= 0)
                continue;
            for (int k = 0; k < 3; k++, e += 2) {
                double t0, t1;
                if (gm_timer_ms(&t, 0, e, &t0) < 0 || gm_timer_ms(&t, 0, e + 1, &t1) < 0)
                    goto fail;
                PyObject *row = Py_BuildValue("(isLdd)", over ? (int)(c % 2) : 0, ops[k], c, t0,
                                              t1);
                if (row == NULL || PyList_Append(list, row) < 0) {
                    Py_XDECREF(row);
                    goto fail;
                }
                Py_DECREF(row);
            }
        }
    }
    {
        const int equal = memcmp(hy[0], hy[1], nb) == 0;
        const long long shown = n < 64 ? n : 64;
        res = Py_BuildValue("{s:O,s:O,s:O,s:y#}", "serial", lists[0], "overlapped", lists[1],
                            "equal", equal ? Py_True : Py_False, "output", (const char *)hy[1],
                            (Py_ssize_t)(shown * (long long)sizeof(float)));
    }
fail:
    Py_XDECREF(lists[0]);
    Py_XDECREF(lists[1]);
    gm_timer_close(&t);
    for (int i = 0; i < 2; i++)
        if (st[i])
            cudaStreamDestroy(st[i]);
    gm_device_free(dy, nb);
    gm_device_free(dx, nb);
    gm_host_free(hy[1], nb);
    gm_host_free(hy[0], nb);
    gm_host_free(hx, nb);
    return res;
}

static const gm_plain transfer_plain[] = {
    {"_transfer_copy", "ms of each timed copy of one kind, direction and size.", copy_args,
     transfer_copy},
    {"_transfer_zero_copy", "mapped vs copy-then-read vs device, ms.", zero_copy_args,
     transfer_zero_copy},
    {"_transfer_managed",
     "managed memory on the host read by a kernel, with and without prefetch, ms.",
     managed_args, transfer_managed},
    {"_transfer_overlap", "the serial and overlapped timelines.", overlap_args,
     transfer_overlap},
    {NULL},
};

/* ---- the lesson --------------------------------------------------------------------- */
static const gm_family *const families[] = {
    &gm_read_sum_family,
    &gm_scale_family,
    NULL,
};

const gm_lesson gm_lesson_transfer = {"transfer", families, transfer_plain, NULL};
