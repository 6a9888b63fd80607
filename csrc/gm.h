/* gm.h -- internal declarations shared by the C files of gpumem._core. */
#ifndef GM_H
#define GM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL gm_ARRAY_API
#ifndef GM_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <cuda_runtime_api.h>

#include "gm_kernels.h"

/* ---- errors (core.c) ---------------------------------------------------- */
extern PyObject *gm_CudaError;            /* RuntimeError */
extern PyObject *gm_CudaUnavailableError; /* CudaError */
extern PyObject *gm_DeviceMemoryError;    /* CudaError, MemoryError */

/* obj.name = value (steals value; errors cleared: for exception attributes). */
void gm_set_attr(PyObject *obj, const char *name, PyObject *value);

/* Turn a failed CUDA call into a Python exception; returns -1. */
int gm_set_cuda_error(cudaError_t err, const char *call);

/* The one checking macro: every CUDA call of the extension goes through it.
 * On failure it sets the exception and jumps to the function's `fail:`. */
#define GM_CUDA(call)                                                          \
    do {                                                                       \
        cudaError_t gm_err_ = (call);                                          \
        if (gm_err_ != cudaSuccess) {                                          \
            gm_set_cuda_error(gm_err_, #call);                                 \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* 0 when device 0 is usable (context created), else -1 with
 * CudaUnavailableError set.  Cheap after the first call. */
int gm_ensure_device(void);

/* ---- argument helpers (core.c) ------------------------------------------ */
/* Read a Python int argument named `name` for function `fn`; TypeError
 * naming it otherwise.  Returns 0 / -1. */
int gm_arg_long(PyObject *obj, const char *fn, const char *name, long long *out);
/* Read a str argument; TypeError naming it otherwise. */
int gm_arg_str(PyObject *obj, const char *fn, const char *name, const char **out);

/* ---- device memory and DeviceArray (devarray.c) -------------------------- */
#define GM_MAXDIM 32

typedef struct {
    PyObject_HEAD
    void *ptr;
    int ndim;
    npy_intp shape[GM_MAXDIM];
    PyArray_Descr *dtype;
    size_t nbytes;
} gm_DeviceArray;

extern PyTypeObject gm_DeviceArray_Type;
#define gm_DeviceArray_Check(o) PyObject_TypeCheck((o), &gm_DeviceArray_Type)

int gm_device_alloc(size_t nbytes, void **ptr);
void gm_device_free(void *ptr, size_t nbytes);
long long gm_bytes_held(void);

/* New, uninitialised device array (steals nothing; dtype is borrowed). */
gm_DeviceArray *gm_devarray_new(int ndim, const npy_intp *shape, PyArray_Descr *dtype);
/* Copy a host array (any layout) to a new device array. */
gm_DeviceArray *gm_devarray_from_host(PyArrayObject *arr);
/* Copy a device array back into a new C-contiguous ndarray. */
PyObject *gm_devarray_get(gm_DeviceArray *d);

PyObject *gm_to_device(PyObject *self, PyObject *arg);
PyObject *gm_empty(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- kernel operands (devarray.c) ---------------------------------------- */
/* An input of a kernel: an ndarray (uploaded for the call) or a DeviceArray.
 * gm_operand_parse checks type and dtype without touching the device;
 * gm_operand_upload makes `dev` valid; gm_operand_release frees what the
 * call allocated. */
typedef struct {
    PyObject *obj;        /* borrowed: what the caller passed */
    int on_device;        /* the caller passed a DeviceArray */
    int ndim;
    const npy_intp *shape;
    gm_DeviceArray *dev;  /* owned reference once uploaded */
} gm_operand;

int gm_operand_parse(PyObject *obj, const char *fn, const char *name, int typenum,
                     gm_operand *op);
int gm_operand_upload(gm_operand *op);
void gm_operand_release(gm_operand *op);
/* Check an `out=` argument: a DeviceArray with this shape and dtype. */
int gm_check_out(PyObject *out, const char *fn, int ndim, const npy_intp *shape, int typenum);
/* Shape as "(3, 4)" into buf. */
const char *gm_shape_str(int ndim, const npy_intp *shape, char *buf, size_t len);

/* ---- the one launch path (launch.c) --------------------------------------- */
typedef cudaError_t (*gm_launcher)(const void *params, gm_dims *dims, cudaStream_t stream);

typedef struct {
    const char *family;
    const char *name;
    const char *idea;     /* the one memory idea it shows */
    const char *bytes;    /* the bytes it must move, as a formula */
    const char *flops;    /* the FLOPs it does, as a formula */
    gm_launcher launch;
    /* The __global__ function the launcher would run for these params (a
     * gm_<family>_params; a zeroed struct must give the default build), for
     * cudaFuncGetAttributes and the occupancy API: kernel_attributes() and
     * occupancy() (spaces.c).  NULL where a family does not provide it yet. */
    const void *(*kernel)(const void *params);
} gm_variant;

/* A device buffer a launch both reads and writes (an in-place update):
 * replaying such a launch must restore it first. */
typedef struct {
    void *ptr;
    size_t nbytes;
} gm_buffer;

typedef struct {
    const gm_variant *variant;
    PyObject *params;     /* borrowed dict of the call's parameters */
    double bytes;         /* bytes the launch must move */
    double flops;         /* floating-point operations of the launch */
    const gm_buffer *inout; /* buffers the kernel reads and writes (may be NULL) */
    int n_inout;
} gm_launch_info;

/* Time `params` through info->variant->launch with CUDA events, check the
 * launch and the execution, and publish a LaunchRecord.  0 / -1. */
int gm_launch(const gm_launch_info *info, const void *params);
int gm_launch_init(PyObject *module);
PyObject *gm_last_record(PyObject *self, PyObject *unused);

/* A hook gm_launch() calls before the timed launch (the profiler registers
 * one while a gpumem.profile() block is open): it may replay the launch as
 * often as it needs, must leave every info->inout buffer as it found it, and
 * returns the launch's metrics (new dict), or NULL with an exception set.
 * The ordinary timed launch runs after it, so a hook never changes the timing
 * or the result of the call.  NULL removes the hook. */
typedef PyObject *(*gm_launch_hook)(const gm_launch_info *info, const void *params);
void gm_launch_set_hook(gm_launch_hook hook);

/* ---- hardware counters (profile.c): adds _profile_* and ProfilerError ---- */
int gm_profile_init(PyObject *module);

/* ---- variants and kernels (kernels.c) -------------------------------------
 * Each family keeps a table of its variants, ended by a row of NULLs; the
 * list of tables is gm_tables in kernels.c. */
extern const gm_variant gm_core_variants[]; /* vec_add, matmul (kernels.c) */
const gm_variant *gm_find_variant(const char *fn, const char *family, const char *name);
PyObject *gm_variants(PyObject *self, PyObject *args);
PyObject *gm_vec_add_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_matmul_py(PyObject *self, PyObject *args, PyObject *kwargs);

/* access patterns (access.c) */
extern const gm_variant gm_access_variants[];
PyObject *gm_read_offset_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_write_offset_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_strided_read_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_struct_update_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_distance_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_copy_py(PyObject *self, PyObject *args, PyObject *kwargs);
/* ---- stencil (stencil.c) and memory spaces (spaces.c) ---------------------- */
extern const gm_variant gm_stencil_variants[];
extern const gm_variant gm_spaces_variants[]; /* broadcast, private_array, lifetime,
                                                register_cap, divergence */
PyObject *gm_stencil_1d_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_broadcast_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_private_array_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_lifetime_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_register_cap_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_divergence_py(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gm_kernel_attributes_py(PyObject *self, PyObject *args);
PyObject *gm_occupancy_py(PyObject *self, PyObject *args);
/* Helpers of stencil.c and spaces.c (spaces.c). */
int gm_sp_int(PyObject *obj, const char *fn, const char *name, long long lo, long long hi,
              long long *out);                      /* None keeps *out (the default) */
int gm_sp_block(PyObject *obj, const char *fn, long long max, long long *out);
int gm_sp_no_alias(PyObject *out, const char *fn, const gm_operand *op);
gm_DeviceArray *gm_sp_make_out(PyObject *out, int ndim, const npy_intp *shape, int typenum);
PyObject *gm_sp_finish(gm_DeviceArray *out, int return_device); /* consumes out */

#endif /* GM_H */
