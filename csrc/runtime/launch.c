/* launch.c -- the one launch path: every kernel launch of the extension goes
 * through gm_launch().  A launch the user made (an entry point's) goes past
 * the profiler's hook when one is set, is timed with CUDA events (measure.c),
 * its launch and execution checked, and its LaunchRecord published to the
 * active recorders (gpumem.record(), last_record()).  An internal one
 * (GM_LAUNCH_INTERNAL: an L2 flush, a ring build, a lesson's helper kernel, a
 * profiler replay) is only launched and checked.  gm_flush_l2() and
 * _l2_flush() launch measure.c's flush kernel this way. */
#include "gm.h"

static PyTypeObject *gm_LaunchRecord_Type;
static PyObject *gm_sinks;      /* list of lists: gpumem.record() appends here */
static PyObject *gm_last;       /* the newest LaunchRecord, or NULL */
static gm_launch_hook gm_hook;  /* the profiler, while a block is open */

void gm_launch_set_hook(gm_launch_hook hook)
{
    gm_hook = hook;
}

static PyStructSequence_Field record_fields[] = {
    {"kernel", "kernel family, e.g. 'matmul'"},
    {"variant", "variant name, e.g. 'tiled'"},
    {"params", "the call's parameters (dict)"},
    {"grid", "grid dimensions (x, y, z)"},
    {"block", "block dimensions (x, y, z)"},
    {"smem", "shared memory per block, bytes"},
    {"ms", "kernel time from CUDA events, milliseconds"},
    {"bytes", "bytes the launch must move through device memory"},
    {"flops", "floating-point operations of the launch"},
    {"metrics", "hardware counters read for this launch (dict), or None"},
    {NULL, NULL},
};

static PyStructSequence_Desc record_desc = {
    "gpumem.LaunchRecord",
    "One kernel launch: what ran, how it was configured and how long it took.",
    record_fields,
    10,
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

static int publish(const gm_launch_info *info, const gm_dims *dims, float ms, PyObject *metrics)
{
    PyObject *rec = PyStructSequence_New(gm_LaunchRecord_Type);
    if (rec == NULL)
        return -1;
    PyObject *items[10] = {
        PyUnicode_FromString(info->variant->family),
        PyUnicode_FromString(info->variant->name),
        info->params ? PyDict_Copy(info->params) : PyDict_New(),
        dims3(dims->grid),
        dims3(dims->block),
        PyLong_FromSize_t(dims->smem),
        PyFloat_FromDouble((double)ms),
        PyFloat_FromDouble(info->bytes),
        PyFloat_FromDouble(info->flops),
        Py_NewRef(metrics ? metrics : Py_None),
    };
    int bad = 0;
    for (int i = 0; i < 10; i++) {
        if (items[i] == NULL)
            bad = 1;
        PyStructSequence_SetItem(rec, i, items[i] ? items[i] : Py_NewRef(Py_None));
    }
    if (bad) {
        Py_DECREF(rec);
        return -1;
    }
    Py_XSETREF(gm_last, Py_NewRef(rec));
    Py_ssize_t n = PyList_GET_SIZE(gm_sinks);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sink = PyList_GET_ITEM(gm_sinks, i);
        if (PyList_Check(sink) && PyList_Append(sink, rec) < 0) {
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
    double ms = 0.0;
    char what[160];
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
    snprintf(what, sizeof what, "running %s/%s", info->variant->family, info->variant->name);
    if (gm_event_ms(ev[0], ev[1], what, &ms) < 0)
        goto fail;
    int r = publish(info, &dims, (float)ms, metrics);
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
    gm_LaunchRecord_Type = PyStructSequence_NewType(&record_desc);
    if (gm_LaunchRecord_Type == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "LaunchRecord", (PyObject *)gm_LaunchRecord_Type) < 0)
        return -1;
    gm_sinks = PyList_New(0);
    if (gm_sinks == NULL || PyModule_AddObjectRef(module, "_sinks", gm_sinks) < 0)
        return -1;
    if (PyModule_AddFunctions(module, launch_methods) < 0)
        return -1;
    return gm_add_plain(module, launch_plain);
}
