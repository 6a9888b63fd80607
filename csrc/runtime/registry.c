/* registry.c -- the families the module was built with (core.c hands the
 * list over at import): one Python function per family, named as the family,
 * with a signature generated from its argument table (inspect.signature
 * reads it); variants(); finding a family or a variant by name. */
#include "gm.h"

#include <string.h>

static const gm_family *const *gm_families;

#define FOR_EACH_FAMILY(f)                                                     \
    for (const gm_family *const *p_ = gm_families; p_ && *p_; p_++)            \
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

const gm_variant *gm_find_variant(const char *fn, const gm_family *f, const char *name)
{
    char allowed[512] = "";
    size_t pos = 0;
    for (const gm_variant *v = f->variants; v->name; v++) {
        if (strcmp(v->name, name) == 0)
            return v;
        if (pos < sizeof allowed)
            pos += (size_t)snprintf(allowed + pos, sizeof allowed - pos, "%s'%s'", pos ? ", " : "",
                                    v->name);
    }
    PyErr_Format(PyExc_ValueError, "%s: variant='%s' is not a variant of %s; allowed: %s", fn,
                 name, f->name, allowed);
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

/* "name($module, a, b, /, *, block=256, out=None)\n--\n\n" + doc: the form
 * from which CPython derives __text_signature__. */
static char *signature_doc(const gm_family *f)
{
    char sig[1024];
    size_t pos = (size_t)snprintf(sig, sizeof sig, "%s($module", f->name);
    int star = 0;
    for (const gm_arg *a = f->args; a->name && pos < sizeof sig; a++) {
        if (a->flags & GM_HIDDEN)
            continue;
        if (!(a->flags & GM_POSITIONAL) && !star) {
            pos += (size_t)snprintf(sig + pos, sizeof sig - pos, ", *");
            star = 1;
        }
        pos += (size_t)snprintf(sig + pos, sizeof sig - pos, ", %s", a->name);
        if (a->flags & GM_REQUIRED)
            continue;
        if (a->flags & GM_NO_DEFAULT || a->kind == GM_ARRAY || a->kind == GM_OBJECT)
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
    if (f->has_out && pos < sizeof sig)
        pos += (size_t)snprintf(sig + pos, sizeof sig - pos, "%s, out=None", star ? "" : ", *");
    size_t len = strlen(sig) + strlen(f->doc) + 16;
    char *doc = PyMem_Malloc(len);
    if (doc)
        snprintf(doc, len, "%s)\n--\n\n%s", sig, f->doc);
    return doc;
}

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

int gm_registry_init(PyObject *module, const gm_family *const *families)
{
    gm_families = families;
    PyObject *modname = PyModule_GetNameObject(module);
    if (modname == NULL)
        return -1;
    int r = PyModule_AddFunctions(module, registry_methods);
    FOR_EACH_FAMILY(f) {
        if (r < 0)
            break;
        /* Lives as long as the process, as a static method table would. */
        PyMethodDef *def = PyMem_Calloc(1, sizeof *def);
        PyObject *cap = NULL, *fn = NULL;
        r = -1;
        if (def == NULL || (def->ml_doc = signature_doc(f)) == NULL) {
            PyErr_NoMemory();
            break;
        }
        def->ml_name = f->name;
        def->ml_meth = (PyCFunction)(void (*)(void))call_family;
        def->ml_flags = METH_VARARGS | METH_KEYWORDS;
        cap = PyCapsule_New((void *)f, "gpumem.family", NULL);
        fn = cap ? PyCFunction_NewEx(def, cap, modname) : NULL;
        r = fn ? PyModule_AddObjectRef(module, f->name, fn) : -1;
        Py_XDECREF(fn);
        Py_XDECREF(cap);
    }
    Py_DECREF(modname);
    return r;
}
