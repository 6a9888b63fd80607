/* launch.c -- the one launch path: every kernel of gpumem runs through
 * gm_launch(), which times it with CUDA events, checks the launch and its
 * execution, and publishes a LaunchRecord to the active recorders. */
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
    return PyModule_AddFunctions(module, launch_methods);
}

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

int gm_launch(const gm_launch_info *info, const void *params)
{
    gm_dims dims = {{0, 0, 0}, {0, 0, 0}, 0};
    cudaStream_t stream = 0; /* the legacy default stream: ordered with cudaMemcpy */
    cudaError_t err;
    float ms = 0.0f;
    char what[160];
    cudaEvent_t ev_start = NULL, ev_stop = NULL;

    PyObject *metrics = NULL;
    if (gm_ensure_device() < 0)
        return -1;
    if (gm_hook) {
        metrics = gm_hook(info, params);
        if (metrics == NULL)
            return -1;
    }
    /* Events per launch: another Python thread may launch while this one
     * waits without the GIL. */
    GM_CUDA(cudaEventCreate(&ev_start));
    GM_CUDA(cudaEventCreate(&ev_stop));
    GM_CUDA(cudaEventRecord(ev_start, stream));
    err = info->variant->launch(params, &dims, stream);
    if (err != cudaSuccess) {
        snprintf(what, sizeof what, "launching %s/%s grid (%u, %u, %u) block (%u, %u, %u)",
                 info->variant->family, info->variant->name, dims.grid[0], dims.grid[1],
                 dims.grid[2], dims.block[0], dims.block[1], dims.block[2]);
        gm_set_cuda_error(err, what);
        goto fail;
    }
    GM_CUDA(cudaEventRecord(ev_stop, stream));
    Py_BEGIN_ALLOW_THREADS
    err = cudaEventSynchronize(ev_stop);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) {
        snprintf(what, sizeof what, "running %s/%s", info->variant->family, info->variant->name);
        gm_set_cuda_error(err, what);
        goto fail;
    }
    GM_CUDA(cudaEventElapsedTime(&ms, ev_start, ev_stop));
    int r = publish(info, &dims, ms, metrics);
    Py_XDECREF(metrics);
    cudaEventDestroy(ev_start);
    cudaEventDestroy(ev_stop);
    return r;
fail:
    Py_XDECREF(metrics);
    if (ev_start)
        cudaEventDestroy(ev_start);
    if (ev_stop)
        cudaEventDestroy(ev_stop);
    return -1;
}


