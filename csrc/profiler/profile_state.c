/* profile_state.c -- the state of the open gpumem.profile() block (gm_prof,
 * one session at a time), where its time goes (gm_prof_phase_ms,
 * gm_prof_setup_ms) and _profile_state(), which shows it (for tests). */
#include "profile.h"

gm_prof_session gm_prof;
double gm_prof_phase_ms[T_N];
double gm_prof_setup_ms[U_N];
long long gm_prof_passes_run;
long long gm_prof_reenables;
int gm_prof_active;

static const char *const gm_phase_names[T_N] = {"config", "restore", "flush", "start", "push",
                                                "launch", "pop", "stop", "decode", "evaluate",
                                                "record"};
static const char *const gm_setup_names[U_N] = {"enable", "availability", "host", "config",
                                                "counter_data", "flush_setup", "teardown"};

/* {names[i]: ms[i] for i < n}, a new dict. */
static PyObject *ms_dict(const char *const *names, const double *ms, int n)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < n; i++) {
        PyObject *v = PyFloat_FromDouble(ms[i]);
        if (v == NULL || PyDict_SetItemString(d, names[i], v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* _profile_state(): what a session holds now (for tests). */
PyObject *gm_prof_state(PyObject *self, PyObject *unused)
{
    PyObject *t = ms_dict(gm_phase_names, gm_prof_phase_ms, T_N);
    if (t == NULL)
        return NULL;
    PyObject *u = ms_dict(gm_setup_names, gm_prof_setup_ms, U_N);
    if (u == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return Py_BuildValue(
        "{s:i,s:O,s:O,s:n,s:n,s:O,s:L,s:N,s:L,s:i,s:n,s:N,s:n,s:n,s:n,s:L}", "profiling",
        gm_prof_active,
        "range_profiler", gm_prof.range ? Py_True : Py_False, "host_object",
        gm_prof.host ? Py_True : Py_False, "scratch_bytes", (Py_ssize_t)gm_prof.scratch_size,
        "flush_bytes", (Py_ssize_t)gm_prof.flush_size, "library_loaded",
        gm_prof_cupti_lib ? Py_True : Py_False, "launches", gm_prof.launches, "timing_ms", t,
        "passes_run", gm_prof_passes_run, "batch_open", gm_prof.session_open, "pending",
        gm_prof.pending ? PyList_GET_SIZE(gm_prof.pending) : (Py_ssize_t)0, "setup_ms", u,
        "replay_bytes", (Py_ssize_t)(gm_prof.arena_size + gm_prof.sink_size), "recorded",
        (Py_ssize_t)gm_prof.n_recs, "replay_cap_bytes", (Py_ssize_t)gm_prof.arena_cap,
        "reenables", gm_prof_reenables);
}
