/* errors.c -- the bottom layer: gpumem's exceptions and CUDA errors turned
 * into them (args.c, beside it, converts arguments). */
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
