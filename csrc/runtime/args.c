/* args.c -- the conversion of arguments, written once for every function of
 * the module: int and str arguments, shapes and dtypes, and the gm_arg
 * tables -- one binder, one converter, one signature generator for kernel
 * families (entry.c) and plain functions alike; the parser and registration
 * of plain functions (a table and a run(), no hand-written parsing);
 * _core.args()'s description of a table.  Errors name the function, the
 * argument, the value and what is allowed. */
#include "gm.h"

#include <stdio.h>
#include <string.h>

/* ---- int and str ------------------------------------------------------------- */
int gm_arg_long(PyObject *obj, const char *fn, const char *name, long long *out)
{
    /* operator.index(), the NumPy convention: int and numpy integers, not
     * bool (nor numpy.bool_), not float. */
    if (PyBool_Check(obj) || PyArray_IsScalar(obj, Bool) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %.200s", fn, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *index = PyNumber_Index(obj);
    if (index == NULL) { /* e.g. an array of several elements */
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %.200s", fn, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s: %s=%R is out of range", fn, name, obj);
        return -1;
    }
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

int gm_arg_str(PyObject *obj, const char *fn, const char *name, const char **out)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a str, not %.200s", fn, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(obj);
    return *out ? 0 : -1;
}

/* "a or b", "one of a, b, c" of an allowed list (ended by 0). */
static void list_values(const long long *v, char *buf, size_t len)
{
    size_t pos = 0;
    int n = 0;
    buf[0] = '\0';
    while (v[n])
        n++;
    if (n > 2)
        pos = (size_t)snprintf(buf, len, "one of ");
    for (int i = 0; i < n && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%lld",
                                i == 0 ? "" : (n == 2 ? " or " : ", "), v[i]);
}

void gm_list_names(const char *const *names, size_t stride, char *buf, size_t len)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (const char *const *p = names; *p && pos < len;
         p = (const char *const *)((const char *)p + stride))
        pos += (size_t)snprintf(buf + pos, len - pos, "%s'%s'", pos ? ", " : "", *p);
}

/* ---- one argument of a table ---------------------------------------------------- */
static int int_value(const gm_arg *a, PyObject *obj, const char *fn, long long *out)
{
    char buf[256];
    const char *what = a->what ? a->what : "";
    long long v;
    if (gm_arg_long(obj, fn, a->name, &v) < 0)
        return -1;
    if (a->allowed) {
        for (const long long *p = a->allowed; *p; p++)
            if (*p == v) {
                *out = v;
                return 0;
            }
        list_values(a->allowed, buf, sizeof buf);
        PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; %s must be %s%s", fn, a->name,
                     v, a->name, buf, what);
        return -1;
    }
    if (v >= a->lo && v <= a->hi && !((a->flags & GM_WHOLE_WARPS) && v % 32)) {
        *out = v;
        return 0;
    }
    if (a->flags & GM_WHOLE_WARPS)
        PyErr_Format(PyExc_ValueError,
                     "%s: %s=%lld is not allowed; %s must be a multiple of 32 (whole warps) "
                     "from %lld to %lld%s",
                     fn, a->name, v, a->name, a->lo, a->hi, what);
    else
        PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; %s must be %lld..%lld%s", fn,
                     a->name, v, a->name, a->lo, a->hi, what);
    return -1;
}

int gm_none_is_default(const gm_arg *a)
{
    return !(a->flags & GM_REQUIRED) &&
           ((a->flags & GM_NO_DEFAULT) || a->kind == GM_ARRAY || a->kind == GM_OBJECT);
}

int gm_arg_value(const gm_arg *a, PyObject *obj, const char *fn, long long *v, const char **s)
{
    char buf[256];
    const char *str;
    switch (a->kind) {
    case GM_INT:
        return int_value(a, obj, fn, v);
    case GM_BOOL:
        if (PyBool_Check(obj) || PyArray_IsScalar(obj, Bool)) {
            int t = PyObject_IsTrue(obj);
            if (t < 0)
                return -1;
            *v = t;
            return 0;
        }
        if (gm_arg_long(obj, fn, a->name, v) < 0)
            return -1;
        if (*v == 0 || *v == 1)
            return 0;
        PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; %s must be True or False", fn,
                     a->name, *v, a->name);
        return -1;
    case GM_CHOICE:
        if (gm_arg_str(obj, fn, a->name, &str) < 0)
            return -1;
        for (int k = 0; a->choices[k]; k++)
            if (strcmp(a->choices[k], str) == 0) {
                *v = k;
                if (s)
                    *s = a->choices[k];
                return 0;
            }
        gm_list_names(a->choices, sizeof(char *), buf, sizeof buf);
        PyErr_Format(PyExc_ValueError, "%s: %s='%s' is unknown; allowed: %s%s", fn, a->name, str,
                     buf, a->what ? a->what : "");
        return -1;
    default:
        PyErr_Format(PyExc_SystemError, "%s: argument %s is not an int, bool or choice", fn,
                     a->name);
        return -1;
    }
}

int gm_arg_range(PyObject *obj, const char *fn, const char *name, long long lo, long long hi,
                 long long *out)
{
    const gm_arg a = {name, GM_INT, 0, 0, lo, hi};
    return gm_arg_value(&a, obj, fn, out, NULL);
}

int gm_arg_choice(PyObject *obj, const char *fn, const char *name, const char *const *choices,
                  int *out)
{
    const gm_arg a = {name, GM_CHOICE, 0, .choices = choices};
    long long v;
    if (gm_arg_value(&a, obj, fn, &v, NULL) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* ---- shapes and dtypes ------------------------------------------------------------ */
const char *gm_shape_str(int ndim, const npy_intp *shape, char *buf, size_t len)
{
    size_t pos = 0;
    pos += (size_t)snprintf(buf + pos, len - pos, "(");
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (pos < len)
        snprintf(buf + pos, len - pos, ndim == 1 ? ",)" : ")");
    return buf;
}

/* Bytes of an array of this shape and dtype; ValueError for a bad shape. */
int gm_shape_nbytes(int ndim, const npy_intp *shape, PyArray_Descr *dtype, size_t *out,
                    const char *fn)
{
    if (ndim > GM_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "%s: shape: at most %d dimensions, not %d", fn, GM_MAXDIM,
                     ndim);
        return -1;
    }
    size_t nbytes = (size_t)PyDataType_ELSIZE(dtype);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: shape: negative dimension %lld", fn,
                         (long long)shape[i]);
            return -1;
        }
        if (shape[i] && nbytes > (size_t)PY_SSIZE_T_MAX / (size_t)shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s: shape: array is too big", fn);
            return -1;
        }
        nbytes *= (size_t)shape[i];
    }
    *out = nbytes;
    return 0;
}

/* Plain numbers only: bool, integers, floats, complex (no strings, bytes,
 * dates, objects or structs).  `what` is "fn: argument has dtype". */
int gm_check_plain_dtype(PyArray_Descr *dtype, const char *what)
{
    const char kind = dtype->kind;
    if (PyDataType_REFCHK(dtype) || PyDataType_HASFIELDS(dtype) ||
        (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c')) {
        PyErr_Format(PyExc_TypeError,
                     "%s %R, which cannot live in device memory (only plain numeric dtypes: "
                     "bool, integers, floats, complex)",
                     what, (PyObject *)dtype);
        return -1;
    }
    if (!PyArray_ISNBO(dtype->byteorder)) {
        PyErr_Format(PyExc_TypeError, "%s %R, which is not in native byte order", what,
                     (PyObject *)dtype);
        return -1;
    }
    return 0;
}

int gm_shape_dtype(const char *fn, PyObject *shape_obj, PyObject *dtype_obj,
                   PyArray_Dims *shape, PyArray_Descr **dtype, size_t *nbytes)
{
    char what[64];
    shape->ptr = NULL;
    shape->len = 0;
    *dtype = NULL;
    if (shape_obj == Py_None || PyBool_Check(shape_obj) ||
        !PyArray_IntpConverter(shape_obj, shape)) {
        PyErr_Clear();
        /* say which element is wrong where one is: (4.0,) is a tuple, but of a float
         * (a converter refuses more than NPY_MAXDIMS, so few are looked at) */
        Py_ssize_t n = PySequence_Check(shape_obj) && !PyUnicode_Check(shape_obj) &&
                               !PyBytes_Check(shape_obj)
                           ? PySequence_Size(shape_obj)
                           : -1;
        for (Py_ssize_t i = 0; i < n && i <= NPY_MAXDIMS; i++) {
            PyObject *e = PySequence_GetItem(shape_obj, i);
            int ok = e != NULL && PyIndex_Check(e) && !PyBool_Check(e);
            if (!ok && e != NULL) {
                PyErr_Format(PyExc_TypeError, "%s: shape[%zd] must be an int, not %.200s", fn, i,
                             Py_TYPE(e)->tp_name);
                Py_DECREF(e);
                goto fail;
            }
            Py_XDECREF(e);
            if (!ok)
                break;
        }
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: shape must be an int or a sequence of ints, not %.200s",
                     fn, Py_TYPE(shape_obj)->tp_name);
        goto fail;
    }
    if (!PyArray_DescrConverter2(dtype_obj, dtype)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: dtype=%R is not a NumPy dtype", fn, dtype_obj);
        goto fail;
    }
    if (*dtype == NULL)
        *dtype = PyArray_DescrFromType(NPY_FLOAT32);
    snprintf(what, sizeof what, "%s: dtype is", fn);
    if (gm_check_plain_dtype(*dtype, what) == 0 &&
        gm_shape_nbytes(shape->len, shape->ptr, *dtype, nbytes, fn) == 0)
        return 0;
fail:
    Py_CLEAR(*dtype);
    PyDimMem_FREE(shape->ptr);
    shape->ptr = NULL;
    return -1;
}

/* ---- binding a call to a table --------------------------------------------------- */
static int visible(const gm_arg *a) { return !(a->flags & GM_HIDDEN); }

int gm_bind(const char *fn, const gm_arg *args, int has_out, PyObject *tuple, PyObject *kwargs,
            PyObject **bound)
{
    int n = 0, npos = 0;
    while (args[n].name)
        n++;
    for (int i = 0; i < n; i++)
        npos += visible(&args[i]) && (args[i].flags & GM_POSITIONAL);
    Py_ssize_t given = PyTuple_GET_SIZE(tuple);
    if (given > npos) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional argument%s (%zd given)",
                     fn, npos, npos == 1 ? "" : "s", given);
        return -1;
    }
    for (Py_ssize_t k = 0, i = 0; k < given; k++, i++) {
        while (!visible(&args[i]) || !(args[i].flags & GM_POSITIONAL))
            i++;
        bound[i] = PyTuple_GET_ITEM(tuple, k);
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (k == NULL)
            return -1;
        int slot = -1;
        for (int i = 0; i < n; i++)
            if (visible(&args[i]) && strcmp(args[i].name, k) == 0)
                slot = i;
        if (slot < 0 && has_out && strcmp(k, "out") == 0)
            slot = n;
        if (slot < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", fn, k);
            return -1;
        }
        if (bound[slot]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn, k);
            return -1;
        }
        bound[slot] = value;
    }
    for (int i = 0; i < n; i++)
        if ((args[i].flags & GM_REQUIRED) && bound[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn,
                         args[i].name);
            return -1;
        }
    return 0;
}

/* ---- signatures and descriptions -------------------------------------------------- */
char *gm_signature_doc(const char *name, const gm_arg *args, int has_out, const char *doc)
{
    char sig[1024];
    size_t pos = (size_t)snprintf(sig, sizeof sig, "%s($module", name);
    int star = 0;
    for (const gm_arg *a = args; a->name && pos < sizeof sig; a++) {
        if (a->flags & GM_HIDDEN)
            continue;
        if (!(a->flags & GM_POSITIONAL) && !star) {
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, ", *");
            star = 1;
        }
        pos += (size_t)snprintf(sig + pos, sizeof sig - pos, ", %s", a->name);
        if (a->flags & GM_REQUIRED)
            continue;
        if (gm_none_is_default(a))
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "=None");
        else if (a->kind == GM_CHOICE)
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "='%s'", a->choices[a->def]);
        else if (a->kind == GM_VARIANT)
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "='%s'", a->sdef);
        else if (a->kind == GM_BOOL)
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "=%s", a->def ? "True" : "False");
        else
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "=%lld", a->def);
    }
    if (has_out && pos < sizeof sig)
        pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "%s, out=None", star ? "" : ", *");
    size_t len = strlen(sig) + strlen(doc) + 16;
    char *text = PyMem_Malloc(len);
    if (text)
        snprintf(text, len, "%s)\n--\n\n%s", sig, doc);
    return text;
}

static PyObject *names_tuple(const char *const *names, size_t stride)
{
    Py_ssize_t n = 0;
    for (const char *const *p = names; *p; p = (const char *const *)((const char *)p + stride))
        n++;
    PyObject *t = PyTuple_New(n);
    const char *const *p = names;
    for (Py_ssize_t i = 0; t && i < n; i++, p = (const char *const *)((const char *)p + stride)) {
        PyObject *s = PyUnicode_FromString(*p);
        if (s == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static PyObject *default_of(const gm_arg *a)
{
    if (a->flags & (GM_REQUIRED | GM_NO_DEFAULT))
        Py_RETURN_NONE;
    switch (a->kind) {
    case GM_INT:
        return PyLong_FromLongLong(a->def);
    case GM_BOOL:
        return PyBool_FromLong(a->def != 0);
    case GM_CHOICE:
        return PyUnicode_FromString(a->choices[a->def]);
    case GM_VARIANT:
        if (a->sdef)
            return PyUnicode_FromString(a->sdef);
        Py_RETURN_NONE;
    default:
        Py_RETURN_NONE;
    }
}

static PyObject *describe(const gm_arg *a, const char *const *variants, size_t stride)
{
    static const char *const kinds[] = {"?", "array", "int", "bool", "choice", "variant",
                                        "object"};
    const int range = a->kind == GM_INT && a->allowed == NULL;
    PyObject *allowed = Py_NewRef(Py_None), *choices = Py_NewRef(Py_None);
    if (a->kind == GM_INT && a->allowed) {
        Py_ssize_t n = 0;
        while (a->allowed[n])
            n++;
        Py_SETREF(allowed, PyTuple_New(n));
        for (Py_ssize_t i = 0; allowed && i < n; i++) {
            PyObject *v = PyLong_FromLongLong(a->allowed[i]);
            if (v == NULL)
                Py_CLEAR(allowed);
            else
                PyTuple_SET_ITEM(allowed, i, v);
        }
    }
    if (a->kind == GM_CHOICE)
        Py_SETREF(choices, names_tuple(a->choices, sizeof(char *)));
    else if (a->kind == GM_VARIANT && variants)
        Py_SETREF(choices, names_tuple(variants, stride));
    PyObject *def = default_of(a);
    PyObject *d = NULL;
    if (allowed && choices && def)
        d = Py_BuildValue(
            "{s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:N,s:N,s:O,s:O,s:i,s:s}", "name", a->name,
            "kind", kinds[a->kind >= GM_ARRAY && a->kind <= GM_OBJECT ? a->kind : 0],
            "positional", a->flags & GM_POSITIONAL ? Py_True : Py_False, "required",
            a->flags & GM_REQUIRED ? Py_True : Py_False, "selects",
            a->flags & GM_SELECTS ? Py_True : Py_False, "record",
            a->flags & GM_RECORD ? Py_True : Py_False, "hidden",
            a->flags & GM_HIDDEN ? Py_True : Py_False, "whole_warps",
            a->flags & GM_WHOLE_WARPS ? Py_True : Py_False, "default", def, "lo",
            range ? PyLong_FromLongLong(a->lo) : Py_NewRef(Py_None), "hi",
            range ? PyLong_FromLongLong(a->hi) : Py_NewRef(Py_None), "allowed", allowed,
            "choices", choices, "ndim", a->ndim, "what", a->what ? a->what : "");
    Py_XDECREF(allowed);
    Py_XDECREF(choices);
    Py_XDECREF(def);
    return d;
}

PyObject *gm_args_describe(const gm_arg *args, const char *const *variants, size_t stride)
{
    Py_ssize_t n = 0;
    while (args[n].name)
        n++;
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        PyObject *d = describe(&args[i], variants, stride);
        if (d == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* ---- functions of the module --------------------------------------------------------- */
int gm_add_function(PyObject *module, const char *name, char *doc, PyCFunction meth,
                    const char *capname, const void *ptr)
{
    if (doc == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* Lives as long as the process, as a static method table would. */
    PyMethodDef *def = PyMem_Calloc(1, sizeof *def);
    if (def == NULL) {
        PyMem_Free(doc);
        PyErr_NoMemory();
        return -1;
    }
    def->ml_name = name;
    def->ml_meth = meth;
    def->ml_flags = METH_VARARGS | METH_KEYWORDS;
    def->ml_doc = doc;
    PyObject *modname = PyModule_GetNameObject(module);
    PyObject *cap = modname ? PyCapsule_New((void *)ptr, capname, NULL) : NULL;
    PyObject *fn = cap ? PyCFunction_NewEx(def, cap, modname) : NULL;
    int r = fn ? PyModule_AddObjectRef(module, name, fn) : -1;
    Py_XDECREF(fn);
    Py_XDECREF(cap);
    Py_XDECREF(modname);
    return r;
}

/* ---- plain functions ---------------------------------------------------------------- */
int gm_parse(const char *fn, const gm_arg *args, PyObject *tuple, PyObject *kwargs, gm_parsed *p)
{
    PyObject *bound[GM_MAX_ARGS + 1] = {NULL};
    memset(p, 0, sizeof *p);
    p->fn = fn;
    for (int i = 0; args[i].name; i++) {
        p->v[i] = args[i].def;
        p->s[i] = args[i].kind == GM_CHOICE ? args[i].choices[args[i].def] : NULL;
    }
    if (gm_bind(fn, args, 0, tuple, kwargs, bound) < 0)
        return -1;
    for (int i = 0; args[i].name; i++) {
        /* None means "the default" only where the signature says so (=None). */
        if (bound[i] == NULL || (bound[i] == Py_None && gm_none_is_default(&args[i])))
            continue;
        p->obj[i] = bound[i];
        p->given[i] = 1;
        if (args[i].kind != GM_OBJECT && gm_arg_value(&args[i], bound[i], fn, &p->v[i], &p->s[i]) < 0)
            return -1;
    }
    return 0;
}

static PyObject *call_plain(PyObject *self, PyObject *args, PyObject *kwargs)
{
    const gm_plain *f = PyCapsule_GetPointer(self, "gpumem.plain");
    gm_parsed p;
    if (f == NULL || gm_parse(f->name, f->args, args, kwargs, &p) < 0)
        return NULL;
    return f->run(&p);
}

#define GM_MAX_PLAIN_LISTS 32
static const gm_plain *plain_lists[GM_MAX_PLAIN_LISTS];
static int n_plain_lists;

int gm_add_plain(PyObject *module, const gm_plain *fns)
{
    if (n_plain_lists == GM_MAX_PLAIN_LISTS) {
        PyErr_SetString(PyExc_SystemError, "gm_add_plain: too many lists of plain functions");
        return -1;
    }
    plain_lists[n_plain_lists++] = fns;
    for (const gm_plain *f = fns; f->name; f++)
        if (gm_add_function(module, f->name, gm_signature_doc(f->name, f->args, 0, f->doc),
                            (PyCFunction)(void (*)(void))call_plain, "gpumem.plain", f) < 0)
            return -1;
    return 0;
}

const gm_plain *gm_find_plain(const char *name)
{
    for (int k = 0; k < n_plain_lists; k++)
        for (const gm_plain *f = plain_lists[k]; f->name; f++)
            if (strcmp(f->name, name) == 0)
                return f;
    return NULL;
}
