/* entry.c -- the one path of every kernel entry point, driven by its
 * family's description (gm.h): bind the arguments and convert each (args.c's
 * binder and converter, the variant by name here), check the shapes (the
 * family's check()), check out=; only then touch the device: upload,
 * allocate the result, prepare, launch through gm_launch(), and hand back a
 * DeviceArray or an ndarray.  Nothing leaks on any path.  Also the family's
 * params for kernel_attributes() (gm_selecting_params). */
#include "gm.h"

#include <string.h>

static int nargs(const gm_family *f)
{
    int n = 0;
    while (f->args[n].name)
        n++;
    return n;
}

/* ---- variants by name -------------------------------------------------------------- */
const gm_variant *gm_find_variant(const char *fn, const gm_family *f, const char *name,
                                  const gm_arg *arg)
{
    char allowed[512];
    for (const gm_variant *v = f->variants; v->name; v++)
        if (strcmp(v->name, name) == 0)
            return v;
    gm_list_names(&f->variants[0].name, sizeof(gm_variant), allowed, sizeof allowed);
    if (arg)
        PyErr_Format(PyExc_ValueError, "%s: %s='%s' is unknown; allowed: %s%s", fn, arg->name,
                     name, allowed, arg->what ? arg->what : "");
    else
        PyErr_Format(PyExc_ValueError, "%s: variant='%s' is not a variant of %s; allowed: %s", fn,
                     name, f->name, allowed);
    return NULL;
}

/* ---- one call ---------------------------------------------------------------------- */
int gm_range_error(const gm_call *c, const char *name, long long v, const char *allowed)
{
    PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; %s must be %s", c->f->name, name,
                 v, name, allowed);
    return -1;
}

/* Convert argument i from obj (not None) into c: arrays here, the variant
 * by name (gm_find_variant), every other kind by args.c's gm_arg_value. */
static int convert(gm_call *c, int i, PyObject *obj, const char *fn)
{
    const gm_arg *a = &c->f->args[i];
    char buf[256];
    switch (a->kind) {
    case GM_ARRAY:
        if (gm_operand_parse(obj, fn, a->name, a->typenum ? a->typenum : NPY_FLOAT32,
                             &c->op[i]) < 0)
            return -1;
        if (a->ndim && c->op[i].ndim != a->ndim) {
            PyErr_Format(PyExc_ValueError, "%s: %s must be %d-D%s, not %d-D with shape %s", fn,
                         a->name, a->ndim, a->ndim == 2 ? " (a matrix)" : "", c->op[i].ndim,
                         gm_shape_str(c->op[i].ndim, c->op[i].shape, buf, sizeof buf));
            return -1;
        }
        return 0;
    case GM_VARIANT:
        if (gm_arg_str(obj, fn, a->name, &c->s[i]) < 0)
            return -1;
        c->variant = gm_find_variant(fn, c->f, c->s[i], a);
        return c->variant ? 0 : -1;
    case GM_OBJECT:
        return 0;
    default:
        return gm_arg_value(a, obj, fn, &c->v[i], &c->s[i]);
    }
}

/* Every argument at its default (no operands, no variant chosen yet). */
static void defaults(gm_call *c, const gm_family *f)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->out_typenum = NPY_FLOAT32;
    c->host_count = -1;
    for (int i = 0; f->args[i].name; i++) {
        const gm_arg *a = &f->args[i];
        c->v[i] = a->def;
        c->s[i] = a->kind == GM_CHOICE ? a->choices[a->def] : a->sdef;
        if (a->kind == GM_VARIANT && a->sdef)
            c->variant = gm_find_variant(f->name, f, a->sdef, a);
    }
    if (f->variants[0].name && !f->variants[1].name)
        c->variant = &f->variants[0]; /* a family of one variant */
}

static int no_overlap(gm_call *c)
{
    const gm_DeviceArray *o = (const gm_DeviceArray *)c->out;
    const char *o0 = (const char *)o->ptr, *o1 = o0 + o->nbytes;
    for (int i = 0; c->f->args[i].name; i++) {
        if (c->f->args[i].kind != GM_ARRAY || !c->op[i].on_device)
            continue;
        const gm_DeviceArray *d = (const gm_DeviceArray *)c->op[i].obj;
        const char *d0 = (const char *)d->ptr, *d1 = d0 + d->nbytes;
        if (!o->nbytes || !d->nbytes || o1 <= d0 || d1 <= o0)
            continue;
        if (c->f->out_may_alias && d0 == o0 && d1 == o1) { /* in place: out is this input */
            c->inout[0] = (gm_buffer){o->ptr, o->nbytes};
            c->n_inout = 1;
            continue;
        }
        PyErr_Format(PyExc_ValueError,
                     "%s: out must not share memory with an input (%s reads its inputs while "
                     "other threads write the result)%s",
                     c->f->name, c->f->name, c->f->out_may_alias ? ", unless it is that input" : "");
        return -1;
    }
    return 0;
}

/* LaunchRecord.params: what check() recorded, then every GM_RECORD argument. */
static int record_args(gm_call *c)
{
    for (int i = 0; c->f->args[i].name; i++) {
        const gm_arg *a = &c->f->args[i];
        if (!(a->flags & GM_RECORD))
            continue;
        PyObject *v = (a->kind == GM_CHOICE || a->kind == GM_VARIANT)
                          ? PyUnicode_FromString(c->s[i])
                          : PyLong_FromLongLong(c->v[i]);
        if (v == NULL || PyDict_SetItemString(c->record, a->name, v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    return 0;
}

/* Everything that does not touch the device, in a fixed order. */
static int validate(gm_call *c, PyObject *args, PyObject *kwargs)
{
    const gm_family *f = c->f;
    PyObject *bound[GM_MAX_ARGS + 1] = {NULL};
    if (gm_bind(f->name, f->args, f->has_out, args, kwargs, bound) < 0)
        return -1;
    for (int i = 0; f->args[i].name; i++) {
        /* None means "the default" only where the signature says so (=None);
         * elsewhere it is converted, and refused, like any other wrong type. */
        if (bound[i] == NULL || (bound[i] == Py_None && gm_none_is_default(&f->args[i])))
            continue;
        c->obj[i] = bound[i];
        c->given[i] = 1;
        if (convert(c, i, bound[i], f->name) < 0)
            return -1;
    }
    PyObject *out = bound[nargs(f)];
    if (out != NULL && out != Py_None) {     /* another library's array: its DeviceArray */
        c->out_wrapped = gm_out_operand(out, f->name);
        if (c->out_wrapped == NULL)
            return -1;
        out = c->out_wrapped;
    }
    c->out = out == Py_None ? NULL : out;
    c->record = PyDict_New();
    if (c->record == NULL || f->check(c) < 0 || record_args(c) < 0)
        return -1;
    if (c->variant == NULL) {
        PyErr_Format(PyExc_SystemError, "%s: no variant chosen", f->name);
        return -1;
    }
    if (c->out && (gm_check_out(c->out, f->name, c->out_ndim, c->out_shape, c->out_typenum) < 0 ||
                   no_overlap(c) < 0))
        return -1;
    return 0;
}

int gm_returns_device(const gm_call *c)
{
    if (c->out)
        return 1;
    for (int i = 0; c->f->args[i].name; i++)
        if (c->f->args[i].kind == GM_ARRAY && c->op[i].on_device)
            return 1;
    return 0;
}

/* res[first:first+count] (1-D float32) as a new ndarray. */
static PyObject *get_range(const gm_DeviceArray *d, long long start, long long count)
{
    npy_intp dims[1] = {(npy_intp)count};
    PyObject *a = PyArray_SimpleNew(1, dims, NPY_FLOAT32);
    if (a == NULL || count == 0)
        return a;
    cudaError_t err;
    if (gm_stream_order(NULL, d->stream) < 0) { /* the copy: after the kernel */
        Py_DECREF(a);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = cudaMemcpy(PyArray_DATA((PyArrayObject *)a), (const float *)d->ptr + start,
                     (size_t)count * sizeof(float), cudaMemcpyDeviceToHost);
    Py_END_ALLOW_THREADS
    GM_CUDA(err);
    return a;
fail:
    Py_DECREF(a);
    return NULL;
}

/* ---- block replay: the launch's buffers, and its params with them moved ---- */
static void add_buffer(gm_call *c, int slot, const gm_DeviceArray *d, int access)
{
    if (d == NULL || d->ptr == NULL || d->nbytes == 0)
        return;
    const char *b0 = d->ptr, *b1 = b0 + d->nbytes;
    for (int k = 0; k < c->n_inout; k++)
        if ((const char *)c->inout[k].ptr >= b0 && (const char *)c->inout[k].ptr < b1)
            access |= GM_READS | GM_WRITES;
    c->buffers[c->n_buffers] = (gm_buffer){d->ptr, d->nbytes, access};
    c->buffer_slot[c->n_buffers++] = slot;
}

/* c->buffers: every operand (read), the result (written; read too when it
 * is the in-place buffer) and tmp (read). */
static void list_buffers(gm_call *c)
{
    c->n_buffers = 0;
    for (int i = 0; c->f->args[i].name; i++)
        if (c->f->args[i].kind == GM_ARRAY)
            add_buffer(c, i, c->op[i].dev, GM_READS);
    add_buffer(c, GM_SLOT_RES, c->res, GM_WRITES);
    add_buffer(c, GM_SLOT_TMP, c->tmp, GM_READS);
}

/* A launch can be replayed on copies of its buffers unless prepare() said
 * otherwise or an in-place buffer is not inside one of them (a __device__
 * variable). */
static int movable(const gm_call *c)
{
    if (c->apart)
        return 0;
    for (int k = 0; k < c->n_inout; k++) {
        const char *i0 = c->inout[k].ptr, *i1 = i0 + c->inout[k].nbytes;
        int found = 0;
        for (int b = 0; b < c->n_buffers; b++) {
            const char *b0 = c->buffers[b].ptr, *b1 = b0 + c->buffers[b].nbytes;
            found |= i0 >= b0 && i1 <= b1 && (c->buffers[b].access & GM_WRITES);
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* gm_launch_info.moved: fill() again with buffers[i] at to[i]. */
static void moved_params(const gm_launch_info *info, void *const *to, void *params)
{
    const gm_call *c = info->call;
    gm_call m = *c;
    void *slots[GM_MAX_ARGS + 2] = {NULL};
    for (int b = 0; b < c->n_buffers; b++)
        slots[c->buffer_slot[b]] = to[b];
    m.moved = slots;
    memset(params, 0, GM_PARAMS_MAX);
    c->f->fill(&m, params);
}

/* Every device buffer of the call (operands, result, tmp): wait for each one's
 * newest work before the launch (when), or take the launch as its newest. */
static int order_buffers(gm_call *c, int before)
{
    gm_DeviceArray *all[GM_MAX_ARGS + 2];
    int n = 0;
    for (int i = 0; c->f->args[i].name; i++)
        if (c->f->args[i].kind == GM_ARRAY && c->op[i].dev)
            all[n++] = c->op[i].dev;
    if (c->res)
        all[n++] = c->res;
    if (c->tmp)
        all[n++] = c->tmp;
    /* uploads, allocations and prepare() ran on the legacy default stream */
    if (before && c->stream != NULL && gm_stream_order(c->stream, NULL) < 0)
        return -1;
    for (int k = 0; k < n; k++) {
        if (all[k]->device != c->device) {   /* a peer GPU's array (peer_operands) */
            /* before: this launch after its newest work there; after: its stream
             * there after this launch, so that it stays a stream of its own GPU */
            if ((before ? gm_stream_order_across(c->device, c->stream, all[k]->device,
                                                 all[k]->stream)
                        : gm_stream_order_across(all[k]->device, all[k]->stream, c->device,
                                                 c->stream)) < 0)
                return -1;
            continue;
        }
        if (!before)
            gm_devarray_used(all[k], c->stream, c->stream_keep);
        else if (all[k]->stream != NULL && gm_devarray_wait(all[k], c->stream) < 0)
            return -1;
    }
    return 0;
}

/* The GPU of the call: its operands' and out's, the current one when it has none
 * on a device; operands on two devices are refused, naming both.  0 / -1. */
static int same_device(gm_call *c, const gm_DeviceArray *d, const char *name, const char **first)
{
    if (*first == NULL) {
        *first = name;
        c->device = d->device;
        return 0;
    }
    if (d->device == c->device)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: %s is on device %d and %s on device %d; a call runs on one GPU (gpumem "
                 "does not copy between GPUs unasked: copy one, e.g. gpumem.to_device(x, "
                 "device=%d))", c->f->name, *first, c->device, name, d->device, c->device);
    return -1;
}

/* A family with peer operands: the current GPU, and every operand on another GPU
 * one it has peer access to.  0 / -1. */
static int peer_reachable(gm_call *c, const gm_DeviceArray *d, const char *name)
{
    if (d->device == c->device || gm_pool_peer_access_on(d->device, c->device))
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: %s is on device %d, which a kernel on device %d (the current one) reaches "
                 "only with peer access on: call gpumem.enable_peer_access(%d, %d) first",
                 c->f->name, name, d->device, c->device, c->device, d->device);
    return -1;
}

static int call_device(gm_call *c)
{
    const char *first = NULL;
    /* Other libraries' arrays, checked whole so far: now their memory on the device. */
    for (int i = 0; c->f->args[i].name; i++)
        if (c->f->args[i].kind == GM_ARRAY && c->op[i].wrapped &&
            gm_devarray_attach((gm_DeviceArray *)c->op[i].wrapped, c->f->name,
                               c->f->args[i].name) < 0)
            return -1;
    if (c->out_wrapped && gm_DeviceArray_Check(c->out_wrapped) &&
        gm_devarray_attach((gm_DeviceArray *)c->out_wrapped, c->f->name, "out") < 0)
        return -1;
    if (c->f->peer_operands) {
        if (gm_device_current(&c->device) < 0)
            return -1;
        for (int i = 0; c->f->args[i].name; i++)
            if (c->f->args[i].kind == GM_ARRAY && c->op[i].on_device &&
                peer_reachable(c, (const gm_DeviceArray *)c->op[i].obj, c->f->args[i].name) < 0)
                return -1;
        return c->out ? peer_reachable(c, (const gm_DeviceArray *)c->out, "out") : 0;
    }
    for (int i = 0; c->f->args[i].name; i++)
        if (c->f->args[i].kind == GM_ARRAY && c->op[i].on_device &&
            same_device(c, (const gm_DeviceArray *)c->op[i].obj, c->f->args[i].name, &first) < 0)
            return -1;
    if (c->out && same_device(c, (const gm_DeviceArray *)c->out, "out", &first) < 0)
        return -1;
    return first ? 0 : gm_device_current(&c->device);
}

static PyObject *run(gm_call *c)
{
    const gm_family *f = c->f;
    for (int i = 0; f->args[i].name; i++)
        if (f->args[i].kind == GM_ARRAY && c->obj[i] && gm_operand_upload(&c->op[i]) < 0)
            return NULL;
    if (c->out) {
        c->res = (gm_DeviceArray *)Py_NewRef(c->out);
    } else {
        PyArray_Descr *dt = PyArray_DescrFromType(c->out_typenum);
        c->res = gm_devarray_new(c->out_ndim, c->out_shape, dt);
        Py_DECREF(dt);
        if (c->res == NULL)
            return NULL;
    }
    if (f->prepare && f->prepare(c) < 0)
        return NULL;
    if (order_buffers(c, 1) < 0)
        return NULL;
    if (c->work > 0) {
        _Alignas(16) unsigned char params[GM_PARAMS_MAX] = {0};
        f->fill(c, params);
        list_buffers(c);
        gm_launch_info info = {c->variant, c->record, c->bytes, c->flops,
                               c->n_inout ? c->inout : NULL, c->n_inout,
                               c->buffers, c->n_buffers, movable(c) ? moved_params : NULL, c,
                               0, c->stream};
        if (gm_launch(&info, params) < 0)
            return NULL;
    }
    if (order_buffers(c, 0) < 0)
        return NULL;
    if (gm_returns_device(c))
        return Py_NewRef(c->res);
    if (c->host_count >= 0)
        return get_range(c->res, c->host_first, c->host_count);
    return gm_devarray_get(c->res);
}

/* While nonzero (_core._check_only(True): gpumem._names._checking()), entry
 * points check their arguments and return None without touching the device. */
static int gm_check_only;

PyObject *gm_entry_call(const gm_family *f, PyObject *args, PyObject *kwargs)
{
    gm_call c;
    PyObject *result = NULL;
    defaults(&c, f);
    if (validate(&c, args, kwargs) == 0) {
        int prev = 0;
        if (gm_check_only)
            result = Py_NewRef(Py_None);
        else if (gm_ensure_device() == 0 && call_device(&c) == 0 &&
                 gm_device_enter(c.device, &prev) == 0) {
            if (gm_call_stream(f->name, c.device, &c.stream, &c.stream_keep) == 0)
                result = run(&c);
            gm_device_leave(prev);
        }
    }
    for (int i = 0; f->args[i].name; i++)
        if (f->args[i].kind == GM_ARRAY)
            gm_operand_release(&c.op[i]);
    Py_XDECREF(c.res);
    Py_XDECREF(c.tmp);
    Py_XDECREF(c.record);
    Py_XDECREF(c.out_wrapped);
    Py_XDECREF(c.stream_keep);
    return result;
}

void gm_set_check_only(int on)
{
    gm_check_only = on;
}

/* ---- helpers for the families' check() and fill() ------------------------------ */
void gm_result(gm_call *c, int ndim, const npy_intp *shape, int typenum)
{
    c->out_ndim = ndim;
    memcpy(c->out_shape, shape, sizeof(npy_intp) * (size_t)ndim);
    c->out_typenum = typenum;
}

int gm_record(gm_call *c, const char *key, long long value)
{
    PyObject *v = PyLong_FromLongLong(value);
    int r = v ? PyDict_SetItemString(c->record, key, v) : -1;
    Py_XDECREF(v);
    return r;
}

int gm_pick_variant(gm_call *c, const char *name)
{
    c->variant = gm_find_variant(c->f->name, c->f, name, NULL);
    return c->variant ? 0 : -1;
}

int gm_check_grid(const gm_call *c, long long work, long long per_block, long long block)
{
    if ((work + per_block - 1) / per_block <= 0x7fffffffLL)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: %lld elements need more than 2^31 - 1 blocks with block=%lld; use a larger "
                 "block",
                 c->f->name, work, block);
    return -1;
}

const void *gm_in(const gm_call *c, int arg)
{
    if (c->moved && c->moved[arg])
        return c->moved[arg];
    return c->op[arg].dev ? c->op[arg].dev->ptr : NULL;
}

long long gm_dim(const gm_call *c, int arg, int axis)
{
    return c->op[arg].shape && axis < c->op[arg].ndim ? c->op[arg].shape[axis] : 0;
}

void *gm_res(const gm_call *c)
{
    if (c->moved && c->moved[GM_SLOT_RES])
        return c->moved[GM_SLOT_RES];
    return c->res ? c->res->ptr : NULL;
}

void *gm_tmp(const gm_call *c)
{
    if (c->moved && c->moved[GM_SLOT_TMP])
        return c->moved[GM_SLOT_TMP];
    return c->tmp ? c->tmp->ptr : NULL;
}

int gm_new_tmp(gm_call *c, npy_intp n, int typenum)
{
    PyArray_Descr *dt = PyArray_DescrFromType(typenum);
    if (dt == NULL)
        return -1;
    c->tmp = gm_devarray_new(1, &n, dt);
    Py_DECREF(dt);
    return c->tmp ? 0 : -1;
}

/* ---- kernel_attributes() / kernel_occupancy() ---------------------------------- */
int gm_selecting_params(const char *fn, const gm_family *f, const gm_variant *v, PyObject *params,
                        int strict, void *buf)
{
    gm_call c;
    defaults(&c, f);
    c.variant = v;
    if (params && params != Py_None) {
        if (!PyDict_Check(params)) {
            PyErr_Format(PyExc_TypeError, "%s: params must be a dict, not %.200s", fn,
                         Py_TYPE(params)->tp_name);
            return -1;
        }
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(params, &pos, &key, &value)) {
            const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
            if (k == NULL) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s: parameter names must be str", fn);
                return -1;
            }
            int slot = -1;
            char allowed[256] = "";
            size_t used = 0;
            for (int i = 0; f->args[i].name; i++) {
                if (!(f->args[i].flags & GM_SELECTS))
                    continue;
                if (strcmp(f->args[i].name, k) == 0)
                    slot = i;
                used += (size_t)snprintf(allowed + used, sizeof allowed - used, "%s'%s'",
                                         used ? ", " : "", f->args[i].name);
            }
            if (slot < 0) {
                if (!strict)
                    continue;
                PyErr_Format(PyExc_ValueError,
                             "%s: parameter %s is not one that picks a %s/%s kernel; allowed: %s",
                             fn, k, f->name, v->name, used ? allowed : "none");
                return -1;
            }
            if (convert(&c, slot, value, fn) < 0)
                return -1;
        }
    }
    memset(buf, 0, GM_PARAMS_MAX);
    f->fill(&c, buf);
    return 0;
}
