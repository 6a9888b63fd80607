/* profile_cupti.c -- loading CUPTI (dlopen/dlsym) and the driver entry
 * point the profiler needs (cuCtxGetCurrent), and CUPTI and driver failures as
 * gpumem.ProfilerError / CudaError; _profile_load(). */
#include "profile.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#define GM_DEFINE(name, type) CUptiResult (*gm_prof_##name)(type *);
GM_CUPTI_FUNCS(GM_DEFINE)
#undef GM_DEFINE
CUptiResult (*gm_prof_cuptiGetResultString)(CUptiResult, const char **);

CUresult (*gm_prof_cuCtxGetCurrent)(CUcontext *);

void *gm_prof_cupti_lib = NULL;
PyObject *gm_prof_ProfilerError; /* made by profile.c at import */
char gm_prof_cupti_path[1024];

/* ---- errors -------------------------------------------------------------- */
const char *gm_prof_cupti_name(CUptiResult r)
{
    const char *s = NULL;
    if (gm_prof_cuptiGetResultString == NULL ||
        gm_prof_cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        return "CUPTI error";
    return s;
}

/* ProfilerError(message) with .reason (library, permission, unsupported,
 * busy, metric, cupti), .call and .code. */
PyObject *gm_prof_error(const char *reason, const char *call, long code, PyObject *msg)
{
    if (msg == NULL)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(gm_prof_ProfilerError, msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return NULL;
    gm_set_attr(exc, "reason", PyUnicode_FromString(reason));
    gm_set_attr(exc, "call", call ? PyUnicode_FromString(call) : Py_NewRef(Py_None));
    gm_set_attr(exc, "code", PyLong_FromLong(code));
    PyErr_SetObject(gm_prof_ProfilerError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* A failed CUPTI call as ProfilerError with what to do about it; returns -1. */
int gm_prof_cupti_error(CUptiResult r, const char *call)
{
    const char *reason = "cupti", *hint = "";
    switch ((int)r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        reason = "permission";
        hint = " -- GPU performance counters are restricted to administrators on this machine. "
               "Run Python as root/administrator, or let every user read them: add "
               "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to a file in "
               "/etc/modprobe.d/, rebuild the initramfs and reboot (Windows: NVIDIA Control "
               "Panel > Developer > Manage GPU Performance Counters > allow all users); see "
               "https://developer.nvidia.com/ERR_NVGPUCTRPERM";
        break;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        reason = "unsupported";
        hint = " -- CUPTI's range profiler cannot read counters on this GPU or setup (it needs "
               "a Turing (sm_75) or newer GPU, not a MIG slice, vGPU without profiling, "
               "confidential computing or WSL); timings still work";
        break;
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        reason = "busy";
        hint = " -- another profiler (ncu, nsys or another CUPTI client) already uses this "
               "process's counters; run without it";
        break;
    case CUPTI_ERROR_INVALID_METRIC_NAME:
        reason = "metric";
        break;
    default:
        break;
    }
    gm_prof_error(reason, call, (long)r,
                  PyUnicode_FromFormat("%s failed: %s (code %d)%s", call, gm_prof_cupti_name(r),
                                       (int)r, hint));
    return -1;
}

/* ---- loading CUPTI ------------------------------------------------------- */
static int resolve_all(void *lib, const char **missing)
{
#define GM_RESOLVE(name, type)                                                 \
    *(void **)(&gm_prof_##name) = dlsym(lib, #name);                           \
    if (gm_prof_##name == NULL) {                                              \
        *missing = #name;                                                      \
        return -1;                                                             \
    }
    GM_CUPTI_FUNCS(GM_RESOLVE)
    GM_RESOLVE(cuptiGetResultString, void)
#undef GM_RESOLVE
    return 0;
}

/* Load libcupti: from each directory of `dirs` (libcupti.so.13, then
 * libcupti.so), then from the loader's path.  0, or -1 with ProfilerError. */
int gm_prof_load_cupti(PyObject *dirs)
{
    if (gm_prof_cupti_lib != NULL)
        return 0;
    char tried[2048] = "";
    size_t pos = 0;
    const char *missing = NULL;
    static const char *const files[] = {"libcupti.so.13", "libcupti.so"};
    Py_ssize_t nd = dirs ? PySequence_Size(dirs) : 0;
    if (nd < 0)
        return -1;
    for (Py_ssize_t i = 0; i <= nd; i++) {
        const char *dir = NULL;
        PyObject *d = NULL;
        if (i < nd) {
            d = PySequence_GetItem(dirs, i);
            if (d == NULL)
                return -1;
            if (!PyUnicode_Check(d)) {
                Py_DECREF(d);
                continue;
            }
            dir = PyUnicode_AsUTF8(d);
            if (dir == NULL) {
                Py_DECREF(d);
                return -1;
            }
        }
        for (int f = 0; f < 2; f++) {
            char path[1024];
            if (dir)
                snprintf(path, sizeof path, "%s/%s", dir, files[f]);
            else
                snprintf(path, sizeof path, "%s", files[f]);
            void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (lib == NULL)
                continue;
            if (resolve_all(lib, &missing) == 0) {
                gm_prof_cupti_lib = lib;
                char *where = gm_prof_cupti_path;
                if (dlinfo(lib, RTLD_DI_ORIGIN, where) == 0 && where[0]) {
                    size_t len = strlen(where);
                    snprintf(where + len, sizeof gm_prof_cupti_path - len, "/%s", files[f]);
                } else {
                    snprintf(gm_prof_cupti_path, sizeof gm_prof_cupti_path, "%s", path);
                }
                Py_XDECREF(d);
                return 0;
            }
            if (pos < sizeof tried)
                pos += (size_t)snprintf(tried + pos, sizeof tried - pos,
                                        "%s%s lacks %s (CUPTI older than 12.6)", pos ? "; " : "",
                                        path, missing);
            dlclose(lib);
        }
        Py_XDECREF(d);
    }
    gm_prof_error("library", NULL, 0,
                  PyUnicode_FromFormat(
                      "CUPTI (libcupti.so.13) was not found%s%s -- install gpumem's profile "
                      "extra, pip install 'gpumem-lab[profile]' (the nvidia-cuda-cupti wheel), or "
                      "the CUDA toolkit (it ships extras/CUPTI/lib64), or set CUDA_HOME to a "
                      "toolkit that has it; timings work without it",
                      pos ? ": " : "", tried));
    return -1;
}

/* ---- driver entry points ------------------------------------------------- */
int gm_prof_load_driver(void)
{
    if (gm_prof_cuCtxGetCurrent != NULL)
        return 0;
    struct {
        const char *name;
        void **fp;
    } want[] = {
        {"cuCtxGetCurrent", (void **)&gm_prof_cuCtxGetCurrent},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
        cudaError_t err =
            cudaGetDriverEntryPointByVersion(want[i].name, want[i].fp, 12000, cudaEnableDefault, &q);
        if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || *want[i].fp == NULL) {
            char what[128];
            snprintf(what, sizeof what, "cudaGetDriverEntryPointByVersion(\"%s\")", want[i].name);
            if (err == cudaSuccess)
                err = cudaErrorSymbolNotFound;
            gm_set_cuda_error(err, what);
            gm_prof_cuCtxGetCurrent = NULL;
            return -1;
        }
    }
    return 0;
}

int gm_prof_driver_error(CUresult r, const char *call)
{
    char what[160];
    snprintf(what, sizeof what, "%s (driver error %d)", call, (int)r);
    return gm_set_cuda_error(cudaErrorUnknown, what);
}

/* _profile_load(dirs, loader_path=True) -> path of the loaded libcupti. */
PyObject *gm_prof_load(PyObject *self, PyObject *args)
{
    PyObject *dirs;
    int loader_path = 1;
    if (!PyArg_ParseTuple(args, "O|p:_profile_load", &dirs, &loader_path))
        return NULL;
    if (!loader_path && gm_prof_cupti_lib == NULL) {
        /* Only the listed directories (tests of the not-found path). */
        Py_ssize_t nd = PySequence_Size(dirs);
        if (nd < 0)
            return NULL;
        int found = 0;
        for (Py_ssize_t i = 0; i < nd && !found; i++) {
            PyObject *d = PySequence_GetItem(dirs, i);
            const char *s = d && PyUnicode_Check(d) ? PyUnicode_AsUTF8(d) : NULL;
            if (s) {
                char path[1024];
                snprintf(path, sizeof path, "%s/libcupti.so.13", s);
                found = access(path, R_OK) == 0;
                snprintf(path, sizeof path, "%s/libcupti.so", s);
                found = found || access(path, R_OK) == 0;
            }
            Py_XDECREF(d);
            if (PyErr_Occurred())
                return NULL;
        }
        if (!found)
            return gm_prof_error(
                "library", NULL, 0,
                PyUnicode_FromFormat("CUPTI (libcupti.so.13) was not found in %R -- install "
                                     "gpumem's profile extra, pip install 'gpumem-lab[profile]' "
                                     "(the nvidia-cuda-cupti wheel), or the CUDA toolkit, or "
                                     "set CUDA_HOME; timings work without it",
                                     dirs));
    }
    if (gm_prof_load_cupti(dirs) < 0)
        return NULL;
    return PyUnicode_FromString(gm_prof_cupti_path);
}
