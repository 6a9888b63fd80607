/* registry.c -- the lessons the module was built with (core.c hands over the
 * list it generates from csrc/lessons/): one Python function per family,
 * named as the family, with a signature generated from its argument table
 * (inspect.signature reads it); each lesson's plain functions and init;
 * variants(); args(), any function's argument table for Python; finding a
 * family by name. */
#include "gm.h"

#include <string.h>

static const gm_lesson *const *gm_lessons;

#define FOR_EACH_FAMILY(f)                                                     \
    for (const gm_lesson *const *l_ = gm_lessons; l_ && *l_; l_++)             \
        for (const gm_family *const *p_ = (*l_)->families; p_ && *p_; p_++)    \
            for (const gm_family *f = *p_; f; f = NULL)

static void family_names(char *buf, size_t len)
{
    size_t pos = 0;
    buf[0] = '\0';
    FOR_EACH_FAMILY(f) {
        if (pos < len)
            pos += (size_t)snprintf(buf + pos, len - pos, "%s'%s'", pos ? ", " : "", f->name);
    }
}

const gm_family *gm_find_family(const char *fn, const char *family)
{
    char names[1024];
    FOR_EACH_FAMILY(f) {
        if (strcmp(f->name, family) == 0)
            return f;
    }
    family_names(names, sizeof names);
    PyErr_Format(PyExc_ValueError, "%s: family='%s' is unknown; allowed: %s", fn, family, names);
    return NULL;
}

static PyObject *variants(PyObject *self, PyObject *args)
{
    const char *family = NULL;
    if (!PyArg_ParseTuple(args, "|z:variants", &family))
        return NULL;
    if (family && gm_find_family("variants", family) == NULL)
        return NULL;
    PyObject *list = PyList_New(0);
    FOR_EACH_FAMILY(f) {
        if (list == NULL || (family && strcmp(f->name, family) != 0))
            continue;
        for (const gm_variant *v = f->variants; v->name; v++) {
            PyObject *t = Py_BuildValue("(sssssi)", v->family, v->name, v->idea, v->bytes,
                                        v->flops, v->select);
            if (t == NULL || PyList_Append(list, t) < 0) {
                Py_XDECREF(t);
                Py_CLEAR(list);
                break;
            }
            Py_DECREF(t);
        }
    }
    return list;
}

/* args(family): the argument table of a family (or of a plain function). */
static const gm_arg args_args[] = {
    {"family", GM_OBJECT, GM_POSITIONAL | GM_REQUIRED},
    {NULL},
};

static PyObject *args(const gm_parsed *a)
{
    const char *name;
    if (gm_arg_str(a->obj[0], a->fn, "family", &name) < 0)
        return NULL;
    const gm_plain *p = gm_find_plain(name);
    if (p)
        return gm_args_describe(p->args, NULL, 0);
    const gm_family *f = gm_find_family(a->fn, name);
    return f ? gm_args_describe(f->args, &f->variants[0].name, sizeof(gm_variant)) : NULL;
}

static const gm_plain registry_plain[] = {
    {"args",
     "The argument table of a kernel family (or of one of _core's plain functions), one dict "
     "per argument in order: name, kind ('array', 'int', 'bool', 'choice', 'variant', "
     "'object'), positional, required, selects, record, hidden, whole_warps, default, lo, hi, "
     "allowed, choices (a variant argument: the family's variants), ndim, what.",
     args_args, args},
    {NULL},
};

static PyObject *call_family(PyObject *self, PyObject *args, PyObject *kwargs)
{
    const gm_family *f = PyCapsule_GetPointer(self, "gpumem.family");
    return f ? gm_entry_call(f, args, kwargs) : NULL;
}

static PyObject *check_only(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    gm_set_check_only(on);
    Py_RETURN_NONE;
}

static PyMethodDef registry_methods[] = {
    {"_check_only", check_only, METH_O,
     "_check_only($module, on, /)\n--\n\nWhile on, every kernel function checks its arguments "
     "and returns None without touching the device (gpumem._names._checking() uses it)."},
    {"variants", variants, METH_VARARGS,
     "variants($module, family=None, /)\n--\n\nThe named kernel variants (of one family): "
     "(family, name, idea, bytes, flops, select) tuples."},
    {NULL, NULL, 0, NULL},
};

int gm_registry_init(PyObject *module, const gm_lesson *const *lessons)
{
    gm_lessons = lessons;
    if (PyModule_AddFunctions(module, registry_methods) < 0 ||
        gm_add_plain(module, registry_plain) < 0)
        return -1;
    FOR_EACH_FAMILY(f) {
        int n_args = 0;   /* a table longer than the binder's slots would overrun them */
        while (f->args[n_args].name)
            n_args++;
        if (n_args > GM_MAX_ARGS) {
            PyErr_Format(PyExc_SystemError, "%s has %d arguments; GM_MAX_ARGS is %d", f->name,
                         n_args, GM_MAX_ARGS);
            return -1;
        }
        if (gm_add_function(module, f->name, gm_signature_doc(f->name, f->args, f->has_out, f->doc),
                            (PyCFunction)(void (*)(void))call_family, "gpumem.family", f) < 0)
            return -1;
    }
    for (const gm_lesson *const *l = lessons; *l; l++)
        if (((*l)->plain && gm_add_plain(module, (*l)->plain) < 0) ||
            ((*l)->init && (*l)->init(module) < 0))
            return -1;
    return 0;
}
