/* profile.c -- the module part of the hardware-counter profiler, its top
 * unit: the _profile_* functions and gpumem.ProfilerError.  profile.h says
 * how the profiler works and which unit does what. */
#include "profile.h"

static PyMethodDef profile_methods[] = {
    {"_profile_begin", (PyCFunction)(void (*)(void))gm_prof_begin, METH_VARARGS | METH_KEYWORDS,
     "_profile_begin(metric_names, outputs, replay='user', dirs=None): start a profiling "
     "session (use gpumem.profile())."},
    {"_profile_end", gm_prof_end, METH_NOARGS, "End the profiling session; leaves no state."},
    {"_profile_sync", gm_prof_sync, METH_NOARGS,
     "Decode the open batch of one-pass launches now (fills their metrics)."},
    {"_profile_state", gm_prof_state, METH_NOARGS, "What the profiling session holds (dict)."},
    {"_profile_load", gm_prof_load, METH_VARARGS,
     "_profile_load(dirs, loader_path=True): load libcupti; its path."},
    {NULL, NULL, 0, NULL},
};

int gm_profile_init(PyObject *module)
{
    gm_prof_ProfilerError = PyErr_NewExceptionWithDoc(
        "gpumem.ProfilerError",
        "Hardware counters cannot be read: CUPTI missing, GPU unsupported, no permission or "
        "another profiler attached.  .reason says which (library, permission, unsupported, "
        "busy, metric, cupti); timings still work.",
        gm_Error, NULL);
    if (gm_prof_ProfilerError == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "ProfilerError", gm_prof_ProfilerError) < 0)
        return -1;
    return PyModule_AddFunctions(module, profile_methods);
}
