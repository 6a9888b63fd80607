/* core.c -- the module gpumem._core: its layers initialised in order (gm.h
 * lists them), then every lesson.  The lesson list is derived, not kept by
 * hand: gm_lessons.inc, which setup.py generates into the build's temp
 * folder, holds one GM_LESSON(<stem>) per csrc/lessons/<stem>.c, and each
 * such file defines `const gm_lesson gm_lesson_<stem>` (its families, plain
 * functions and init).  Adding a lesson edits nothing here. */
#define GM_IMPORT_ARRAY
#include "gm.h"

#define GM_LESSON(stem) extern const gm_lesson gm_lesson_##stem;
#include "gm_lessons.inc"
#undef GM_LESSON

static const gm_lesson *const gm_lessons[] = {
#define GM_LESSON(stem) &gm_lesson_##stem,
#include "gm_lessons.inc"
#undef GM_LESSON
    NULL,
};

/* _core.CACHE_PATHS: the names of gm_cache_path, in enum order. */
static int add_cache_paths(PyObject *m)
{
    static const char *const names[] = GM_CACHE_PATH_NAMES;
    PyObject *t = PyTuple_New(sizeof names / sizeof names[0] - 1);
    for (Py_ssize_t i = 0; t && names[i]; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    int r = t ? PyModule_AddObjectRef(m, "CACHE_PATHS", t) : -1;
    Py_XDECREF(t);
    return r;
}

static struct PyModuleDef gm_module = {
    PyModuleDef_HEAD_INIT, "gpumem._core",
    "gpumem's native core: CUDA kernels behind NumPy-facing functions.", -1, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *m = PyModule_Create(&gm_module);
    if (m == NULL)
        return NULL;
    if (gm_errors_init(m) < 0 || gm_device_init(m) < 0 || gm_peer_init(m) < 0 || gm_stream_init(m) < 0 || gm_alloc_init(m) < 0 ||
        gm_hostmem_init(m) < 0 || gm_memory_init(m) < 0 || gm_measure_init(m) < 0 ||
        gm_launch_init(m) < 0 || gm_profile_init(m) < 0 ||
        gm_registry_init(m, gm_lessons) < 0 || gm_introspect_init(m) < 0 ||
        add_cache_paths(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
