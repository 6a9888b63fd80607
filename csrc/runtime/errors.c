/* errors.c -- the bottom layer: gpumem's exceptions, CUDA errors turned into
 * them, and the conversion of int and str arguments. */
#include "gm.h"

#include <string.h>

PyObject *gm_CudaError;
PyObject *gm_CudaUnavailableError;
PyObject *gm_DeviceMemoryError;

void gm_set_attr(PyObject *obj, const char *name, PyObject *value)
{
    if (value == NULL || PyObject_SetAttrString(obj, name, value) < 0)
        PyErr_Clear();
    Py_XDECREF(value);
}

int gm_set_cuda_error(cudaError_t err, const char *call)
{
    PyObject *type = gm_CudaError;
    if (err == cudaErrorMemoryAllocation)
        type = gm_DeviceMemoryError;
    else if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
             err == cudaErrorCompatNotSupportedOnDevice || err == cudaErrorSystemDriverMismatch)
        type = gm_CudaUnavailableError;
    /* Clear the runtime's non-sticky last error so the next call starts clean. */
    (void)cudaGetLastError();
    PyObject *msg = PyUnicode_FromFormat("%s failed: %s (%s)", call, cudaGetErrorString(err),
                                         cudaGetErrorName(err));
    if (msg == NULL)
        return -1;
    PyObject *exc = PyObject_CallOneArg(type, msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return -1;
    gm_set_attr(exc, "call", PyUnicode_FromString(call));
    gm_set_attr(exc, "name", PyUnicode_FromString(cudaGetErrorName(err)));
    gm_set_attr(exc, "code", PyLong_FromLong((long)err));
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return -1;
}

/* ---- argument helpers ----------------------------------------------------- */
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

int gm_arg_range(PyObject *obj, const char *fn, const char *name, long long lo, long long hi,
                 long long *out)
{
    if (gm_arg_long(obj, fn, name, out) < 0)
        return -1;
    if (*out >= lo && *out <= hi)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s=%lld is not allowed; %s must be %lld..%lld", fn, name,
                 *out, name, lo, hi);
    return -1;
}

int gm_arg_choice(PyObject *obj, const char *fn, const char *name, const char *const *choices,
                  int *out)
{
    const char *s;
    char allowed[256] = "";
    size_t pos = 0;
    if (gm_arg_str(obj, fn, name, &s) < 0)
        return -1;
    for (int i = 0; choices[i]; i++) {
        if (strcmp(s, choices[i]) == 0) {
            *out = i;
            return 0;
        }
        if (pos < sizeof allowed)
            pos += (size_t)snprintf(allowed + pos, sizeof allowed - pos, "%s'%s'", i ? ", " : "",
                                    choices[i]);
    }
    PyErr_Format(PyExc_ValueError, "%s: %s='%s' is unknown; allowed: %s", fn, name, s, allowed);
    return -1;
}

static PyObject *new_exception(PyObject *m, const char *name, PyObject *bases, const char *doc)
{
    char full[128];
    snprintf(full, sizeof full, "gpumem.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (e == NULL || PyModule_AddObjectRef(m, name, e) < 0) {
        Py_XDECREF(e);
        return NULL;
    }
    return e;
}

int gm_errors_init(PyObject *m)
{
    gm_CudaError = new_exception(m, "CudaError", PyExc_RuntimeError,
                                 "A CUDA call failed; .call, .name and .code say which and how.");
    if (gm_CudaError == NULL)
        return -1;
    gm_CudaUnavailableError = new_exception(m, "CudaUnavailableError", gm_CudaError,
                                            "No usable CUDA GPU or driver.");
    if (gm_CudaUnavailableError == NULL)
        return -1;
    PyObject *bases = PyTuple_Pack(2, gm_CudaError, PyExc_MemoryError);
    if (bases == NULL)
        return -1;
    gm_DeviceMemoryError = new_exception(m, "DeviceMemoryError", bases,
                                         "Device memory could not be allocated.");
    Py_DECREF(bases);
    return gm_DeviceMemoryError ? 0 : -1;
}
