/* errors.c -- the bottom layer: gpumem's exceptions and CUDA errors turned
 * into them (args.c, beside it, converts arguments). */
#include "gm.h"

#include <stdarg.h>
#include <string.h>

PyObject *gm_Error;
PyObject *gm_CudaError;
PyObject *gm_CudaUnavailableError;
PyObject *gm_DeviceMemoryError;

void gm_set_attr(PyObject *obj, const char *name, PyObject *value)
{
    if (value == NULL || PyObject_SetAttrString(obj, name, value) < 0)
        PyErr_Clear();
    Py_XDECREF(value);
}

/* The first error after which the context cannot work again (a fault in a
 * kernel, an illegal address ...): every later call says so (gm_context_lost). */
static cudaError_t lost_err = cudaSuccess;
static char lost_call[160];

static int is_sticky(cudaError_t err)
{
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
        return 1;
    default:
        return 0;
    }
}

int gm_raise_cuda(PyObject *type, cudaError_t err, const char *call, PyObject *msg)
{
    PyObject *exc = msg ? PyObject_CallOneArg(type, msg) : NULL;
    Py_XDECREF(msg);
    if (exc == NULL)
        return -1;
    gm_set_attr(exc, "call", PyUnicode_FromString(call));
    gm_set_attr(exc, "name", PyUnicode_FromString(cudaGetErrorName(err)));
    gm_set_attr(exc, "code", PyLong_FromLong((long)err));
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return -1;
}

int gm_context_lost(void)
{
    if (lost_err == cudaSuccess)
        return 0;
    return gm_raise_cuda(gm_CudaError, lost_err, lost_call, PyUnicode_FromFormat(
        "the CUDA context is lost: %s (%s) in %s; no later CUDA call of this process can "
        "work -- restart the process (or the Jupyter kernel)",
        cudaGetErrorString(lost_err), cudaGetErrorName(lost_err), lost_call));
}

int gm_raise_from(PyObject *type, const char *format, ...)
{
    PyObject *cause_type, *cause, *tb;
    PyErr_Fetch(&cause_type, &cause, &tb);
    PyErr_NormalizeException(&cause_type, &cause, &tb);
    if (cause != NULL && tb != NULL)
        PyException_SetTraceback(cause, tb);
    va_list va;
    va_start(va, format);
    PyObject *msg = PyUnicode_FromFormatV(format, va);
    va_end(va);
    if (msg != NULL && cause != NULL) {         /* "...: RuntimeError: what it said" */
        PyObject *full = PyUnicode_FromFormat("%U: %s: %S", msg, Py_TYPE(cause)->tp_name, cause);
        Py_SETREF(msg, full);
    }
    PyObject *exc = msg ? PyObject_CallOneArg(type, msg) : NULL;
    Py_XDECREF(msg);
    if (exc != NULL && cause != NULL) {
        PyException_SetCause(exc, Py_NewRef(cause));          /* steals */
        PyException_SetContext(exc, Py_NewRef(cause));        /* steals */
    }
    Py_XDECREF(cause_type);
    Py_XDECREF(cause);
    Py_XDECREF(tb);
    if (exc == NULL)
        return -1;
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return -1;
}

int gm_set_cuda_error(cudaError_t err, const char *call)
{
    if (lost_err != cudaSuccess || is_sticky(err)) {
        if (lost_err == cudaSuccess) {
            lost_err = err;
            snprintf(lost_call, sizeof lost_call, "%s", call);
        }
        (void)cudaGetLastError();
        return gm_context_lost();
    }
    PyObject *type = gm_CudaError;
    if (err == cudaErrorMemoryAllocation)
        type = gm_DeviceMemoryError;
    else if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
             err == cudaErrorCompatNotSupportedOnDevice || err == cudaErrorSystemDriverMismatch)
        type = gm_CudaUnavailableError;
    /* Clear the runtime's non-sticky last error so the next call starts clean. */
    (void)cudaGetLastError();
    return gm_raise_cuda(type, err, call, PyUnicode_FromFormat(
        "%s failed: %s (%s)", call, cudaGetErrorString(err), cudaGetErrorName(err)));
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
    gm_Error = new_exception(m, "Error", PyExc_RuntimeError,
                             "Base of gpumem's own failures (CUDA, counters, NCCL): "
                             "`except gpumem.Error` catches them all.");
    if (gm_Error == NULL)
        return -1;
    gm_CudaError = new_exception(m, "CudaError", gm_Error,
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
