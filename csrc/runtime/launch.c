/* launch.c -- the one launch path: every kernel launch of the extension goes
 * through gm_launch().  A launch the user made (an entry point's) goes past
 * the profiler's hook when one is set, is timed with CUDA events (measure.c),
 * its launch checked, and its LaunchRecord published to the active recorders
 * (gpumem.record(), last_record()) without waiting: the record's ms is read
 * lazily, so the kernel's execution is checked when something waits for it.  An internal one
 * (GM_LAUNCH_INTERNAL: an L2 flush, a ring build, a lesson's helper kernel, a
 * profiler replay) is only launched and checked.  gm_flush_l2() and
 * _l2_flush() launch measure.c's flush kernel this way. */
#include "gm.h"

static PyObject *gm_sinks;      /* list of lists: gpumem.record() appends here */
static PyObject *gm_last;       /* the newest LaunchRecord, or NULL */
static gm_launch_hook gm_hook;  /* the profiler, while a block is open */

void gm_launch_set_hook(gm_launch_hook hook)
{
    gm_hook = hook;
}

/* ---- LaunchRecord ---------------------------------------------------------------------
 * What ran, how it was configured and how long it took.  Its time is resolved
 * when first read: the record keeps the launch's two events and `ms` waits for
 * the second (without the GIL) the first time it is read, so a call returns as
 * soon as its kernel is queued and a loop of calls pipelines.  A fault of the
 * kernel surfaces at the next thing that waits: reading `ms`, copying a result
 * to the host, the next call that synchronizes. */
enum { R_KERNEL, R_VARIANT, R_PARAMS, R_GRID, R_BLOCK, R_SMEM, R_MS, R_BYTES, R_FLOPS,
       R_METRICS, R_FIELDS };

typedef struct {
    PyObject_HEAD
    PyObject *f[R_FIELDS];   /* f[R_MS] is NULL until the time is read */
    cudaEvent_t ev[2];       /* around the launch, on its stream; given back once ms is known */
    int device;              /* the GPU it ran on (whose events those are) */
    int waiting;             /* threads inside ms's wait (they still use ev) */
    char what[96];           /* "running family/variant", for an error */
} gm_Record;

static const char *const record_names[R_FIELDS] = {
    "kernel", "variant", "params", "grid", "block", "smem", "ms", "bytes", "flops", "metrics"};

static PyObject *record_ms(gm_Record *r)
{
    if (r->f[R_MS] == NULL) {
        double ms = 0.0;
        r->waiting++;
        int rc = gm_event_ms(r->ev[0], r->ev[1], r->what, &ms); /* waits without the GIL */
        r->waiting--;
        if (rc < 0 && r->f[R_MS] == NULL)
            return NULL;
        PyErr_Clear();       /* another thread resolved it while this one waited */
        if (r->f[R_MS] == NULL && (r->f[R_MS] = PyFloat_FromDouble(ms)) == NULL)
            return NULL;
    }
    if (r->waiting == 0 && r->ev[0] != NULL)
        gm_events_release(r->device, r->ev, 2);
    return Py_NewRef(r->f[R_MS]);
}

static PyObject *record_get(gm_Record *r, void *closure)
{
    int i = (int)(intptr_t)closure;
    return i == R_MS ? record_ms(r) : Py_NewRef(r->f[i]);
}

static void record_dealloc(gm_Record *r)
{
    for (int i = 0; i < R_FIELDS; i++)
        Py_CLEAR(r->f[i]);
    gm_events_release(r->device, r->ev, 2); /* unread: reused once they complete */
    PyObject_Free(r);
}

static PyObject *record_asdict(gm_Record *r, PyObject *unused)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < R_FIELDS; i++) {
        PyObject *v = record_get(r, (void *)(intptr_t)i);
        if (v == NULL || PyDict_SetItemString(d, record_names[i], v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *record_repr(gm_Record *r)
{
    PyObject *d = record_asdict(r, NULL);
    if (d == NULL)
        return NULL;
    PyObject *parts = PyList_New(0), *key, *value;
    Py_ssize_t pos = 0;
    while (parts != NULL && PyDict_Next(d, &pos, &key, &value)) {
        PyObject *p = PyUnicode_FromFormat("%U=%R", key, value);
        if (p == NULL || PyList_Append(parts, p) < 0)
            Py_CLEAR(parts);
        Py_XDECREF(p);
    }
    Py_DECREF(d);
    if (parts == NULL)
        return NULL;
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *body = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    PyObject *res = body ? PyUnicode_FromFormat("gpumem.LaunchRecord(%U)", body) : NULL;
    Py_XDECREF(body);
    return res;
}

static PyGetSetDef record_getset[] = {
    {"kernel", (getter)record_get, NULL, "kernel family, e.g. 'matmul'", (void *)R_KERNEL},
    {"variant", (getter)record_get, NULL, "variant name, e.g. 'tiled'", (void *)R_VARIANT},
    {"params", (getter)record_get, NULL, "the call's parameters (dict)", (void *)R_PARAMS},
    {"grid", (getter)record_get, NULL, "grid dimensions (x, y, z)", (void *)R_GRID},
    {"block", (getter)record_get, NULL, "block dimensions (x, y, z)", (void *)R_BLOCK},
    {"smem", (getter)record_get, NULL, "shared memory per block, bytes", (void *)R_SMEM},
    {"ms", (getter)record_get, NULL,
     "kernel time from CUDA events, milliseconds (read: waits for the kernel the first time)",
     (void *)R_MS},
    {"bytes", (getter)record_get, NULL, "bytes the launch must move through device memory",
     (void *)R_BYTES},
    {"flops", (getter)record_get, NULL, "floating-point operations of the launch",
     (void *)R_FLOPS},
    {"metrics", (getter)record_get, NULL,
     "hardware counters read for this launch (dict), or None", (void *)R_METRICS},
    {NULL},
};

static PyMethodDef record_methods[] = {
    {"_asdict", (PyCFunction)record_asdict, METH_NOARGS,
     "The fields as a dict (reading ms waits for the kernel)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject gm_Record_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpumem.LaunchRecord",
    .tp_doc = "One kernel launch: what ran, how it was configured and how long it took "
              "(ms: CUDA events around the launch, resolved when first read).",
    .tp_basicsize = sizeof(gm_Record),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)record_dealloc,
    .tp_repr = (reprfunc)record_repr,
    .tp_getset = record_getset,
    .tp_methods = record_methods,
};

static PyObject *gm_last_record(PyObject *self, PyObject *unused)
{
    return Py_NewRef(gm_last ? gm_last : Py_None);
}

static PyMethodDef launch_methods[] = {
    {"last_record", gm_last_record, METH_NOARGS,
     "last_record($module, /)\n--\n\nThe LaunchRecord of the newest launch, or None."},
    {NULL, NULL, 0, NULL},
};


static PyObject *dims3(const unsigned int v[3])
{
    return Py_BuildValue("(III)", v[0], v[1], v[2]);
}

/* A record of the launch (taking over ev) as the newest and into every sink. */
static int publish(const gm_launch_info *info, const gm_dims *dims, cudaEvent_t *ev,
                   PyObject *metrics)
{
    gm_Record *rec = PyObject_New(gm_Record, &gm_Record_Type);
    if (rec == NULL)
        return -1;
    rec->ev[0] = ev[0];
    rec->ev[1] = ev[1];
    ev[0] = ev[1] = NULL;
    rec->waiting = 0;
    if (gm_device_current(&rec->device) < 0) {
        rec->device = -1;
        PyErr_Clear();
    }
    snprintf(rec->what, sizeof rec->what, "running %s/%s", info->variant->family,
             info->variant->name);
    PyObject *items[R_FIELDS] = {
        PyUnicode_FromString(info->variant->family),
        PyUnicode_FromString(info->variant->name),
        info->params ? PyDict_Copy(info->params) : PyDict_New(),
        dims3(dims->grid),
        dims3(dims->block),
        PyLong_FromSize_t(dims->smem),
        NULL,
        PyFloat_FromDouble(info->bytes),
        PyFloat_FromDouble(info->flops),
        Py_NewRef(metrics ? metrics : Py_None),
    };
    int bad = 0;
    for (int i = 0; i < R_FIELDS; i++) {
        rec->f[i] = items[i];
        bad |= i != R_MS && items[i] == NULL;
    }
    if (bad) {
        Py_DECREF(rec);
        return -1;
    }
    Py_XSETREF(gm_last, Py_NewRef((PyObject *)rec));
    Py_ssize_t n = PyList_GET_SIZE(gm_sinks);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sink = PyList_GET_ITEM(gm_sinks, i);
        if (PyList_Check(sink) && PyList_Append(sink, (PyObject *)rec) < 0) {
            Py_DECREF(rec);
            return -1;
        }
    }
    Py_DECREF(rec);
    return 0;
}

static int launch_error(const gm_launch_info *info, const gm_dims *d, cudaError_t err)
{
    char what[160];
    snprintf(what, sizeof what, "launching %s/%s grid (%u, %u, %u) block (%u, %u, %u)",
             info->variant->family, info->variant->name, d->grid[0], d->grid[1], d->grid[2],
             d->block[0], d->block[1], d->block[2]);
    return gm_set_cuda_error(err, what);
}

int gm_launch(const gm_launch_info *info, const void *params)
{
    gm_dims dims = {{0, 0, 0}, {0, 0, 0}, 0};
    cudaError_t err;
    cudaEvent_t ev[2] = {NULL, NULL};
    PyObject *metrics = NULL;

    if (gm_ensure_device() < 0)
        return -1;
    if (info->flags & GM_LAUNCH_INTERNAL) {
        err = info->variant->launch(params, &dims, info->stream);
        return err == cudaSuccess ? 0 : launch_error(info, &dims, err);
    }
    if (gm_hook) {
        metrics = gm_hook(info, params);
        if (metrics == NULL)
            return -1;
    }
    /* Events per launch: another Python thread may launch while this one
     * waits without the GIL. */
    if (gm_events_create(ev, 2) < 0)
        goto fail;
    GM_CUDA(cudaEventRecord(ev[0], info->stream));
    err = info->variant->launch(params, &dims, info->stream);
    if (err != cudaSuccess) {
        launch_error(info, &dims, err);
        goto fail;
    }
    GM_CUDA(cudaEventRecord(ev[1], info->stream));
    int r = publish(info, &dims, ev, metrics);
    Py_XDECREF(metrics);
    gm_events_destroy(ev, 2);
    return r;
fail:
    Py_XDECREF(metrics);
    gm_events_destroy(ev, 2);
    return -1;
}

/* ---- evicting L2 -------------------------------------------------------------------- */
long long gm_flush_l2(long long nbytes, int wait)
{
    gm_l2_flush_params p;
    if (nbytes <= 0) {
        if (gm_l2_bytes(&nbytes) < 0)
            return -1;
        nbytes = 2 * (nbytes > 0 ? nbytes : (1LL << 20));
    }
    if (gm_flush_hold((size_t)nbytes, &p) < 0)
        return -1;
    const gm_launch_info info = {.variant = &gm_l2_flush_variant, .flags = GM_LAUNCH_INTERNAL};
    int r = gm_launch(&info, &p);
    if (r == 0 && wait)
        r = gm_stream_wait(0, "running the L2 flush");
    gm_flush_release();
    return r < 0 ? -1 : nbytes;
}

/* _l2_flush(nbytes=None): gpumem.bench(..., l2="cold") between its launches. */
static const gm_arg l2_flush_args[] = {
    {"nbytes", GM_INT, GM_POSITIONAL | GM_NO_DEFAULT, 0, 16, 1LL << 40},
    {NULL},
};

static PyObject *l2_flush(const gm_parsed *a)
{
    if (gm_ensure_device() < 0)
        return NULL;
    long long done = gm_flush_l2(a->given[0] ? a->v[0] : 0, 1);
    return done < 0 ? NULL : PyLong_FromLongLong(done);
}

static const gm_plain launch_plain[] = {
    {"_l2_flush",
     "Read nbytes (default: twice the L2) of gpumem's zeroed flush buffer through L2 and "
     "wait: what L2 held is evicted.  Returns the bytes read.",
     l2_flush_args, l2_flush},
    {NULL},
};

int gm_launch_init(PyObject *module)
{
    if (PyType_Ready(&gm_Record_Type) < 0)
        return -1;
    PyObject *n = PyLong_FromLong(R_FIELDS);
    int bad = n == NULL || PyDict_SetItemString(gm_Record_Type.tp_dict, "n_fields", n) < 0;
    Py_XDECREF(n);
    if (bad || PyModule_AddObjectRef(module, "LaunchRecord", (PyObject *)&gm_Record_Type) < 0)
        return -1;
    gm_sinks = PyList_New(0);
    if (gm_sinks == NULL || PyModule_AddObjectRef(module, "_sinks", gm_sinks) < 0)
        return -1;
    if (PyModule_AddFunctions(module, launch_methods) < 0)
        return -1;
    return gm_add_plain(module, launch_plain);
}
