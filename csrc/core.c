/* core.c -- the module gpumem._core: its layers in order, and the list of
 * kernel families it offers (each lesson's csrc/<lesson>.c defines its own). */
#define GM_IMPORT_ARRAY
#include "gm.h"

extern const gm_family gm_matmul_family;                                   /* matmul.c */
extern const gm_family gm_vec_add_family, gm_read_offset_family, gm_write_offset_family,
    gm_copy_family;                                                        /* access.c */
extern const gm_family gm_strided_read_family, gm_struct_update_family,
    gm_distance_family;                                                    /* layout.c */
extern const gm_family gm_stencil_1d_family, gm_constant_broadcast_family; /* stencil.c */
extern const gm_family gm_thread_histogram_family, gm_lifetimes_family,
    gm_register_pressure_family, gm_divergence_family;                     /* spaces.c */
extern const gm_family gm_transpose_family, gm_shared_stride_family;    /* transpose.c */
extern const gm_family gm_latency_family, gm_bandwidth_family;            /* ladder.c */
int gm_ladder_init(PyObject *module);                                      /* ladder.c */
extern const gm_family gm_read_sum_family, gm_scale_family;               /* transfer.c */
int gm_transfer_init(PyObject *module);                                    /* transfer.c */
int gm_introspect_init(PyObject *module);                                  /* introspect.c */

static const gm_family *const gm_all_families[] = {
    &gm_vec_add_family,          &gm_matmul_family,
    &gm_read_offset_family,      &gm_write_offset_family,
    &gm_copy_family,             &gm_strided_read_family,
    &gm_struct_update_family,    &gm_distance_family,
    &gm_stencil_1d_family,       &gm_constant_broadcast_family,
    &gm_thread_histogram_family, &gm_lifetimes_family,
    &gm_register_pressure_family, &gm_divergence_family,
    &gm_transpose_family,        &gm_shared_stride_family,
    &gm_latency_family,          &gm_bandwidth_family,
    &gm_read_sum_family,         &gm_scale_family,
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
    if (gm_errors_init(m) < 0 || gm_device_init(m) < 0 || gm_memory_init(m) < 0 ||
        gm_hostmem_init(m) < 0 || gm_dlpack_init(m) < 0 ||
        gm_launch_init(m) < 0 || gm_profile_init(m) < 0 ||
        gm_registry_init(m, gm_all_families) < 0 || gm_introspect_init(m) < 0 ||
        gm_ladder_init(m) < 0 || gm_transfer_init(m) < 0 ||
        add_cache_paths(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
