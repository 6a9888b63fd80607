/* gm.h -- the one shared header of gpumem._core (C11): every declaration the
 * units of csrc/ share, section by section in the order of their layers.
 *
 * Rooms.  csrc/runtime/: the infrastructure every lesson uses (errors and
 * arguments, the device, memory, measurement, the launch path, entry points
 * and the registry).  csrc/profiler/: hardware counters through CUPTI
 * (profile.h is its private header).  csrc/lessons/<stem>.c: one file per
 * lesson -- its families' argument tables, shape rules and params, and its
 * plain functions -- ending in `const gm_lesson gm_lesson_<stem>`.
 * csrc/core.c: the module (PyInit); its lesson list is generated at build
 * time (gm_lessons.inc, one GM_LESSON(<stem>) per csrc/lessons/<stem>.c), so
 * adding a lesson edits neither core.c nor this header.  cuda/: kernels and
 * their extern "C" launchers (gm_kernels.h).
 *
 * Layers that only call down.  A unit names (calls, reads) only what units of
 * lower layers define, and within its layer only what earlier units of the
 * order below define: there is no circle.  A higher unit reaches a lower one
 * through a function pointer only where the lower one offers a hook (the
 * profiler registers itself with gm_launch_set_hook).  No lesson names
 * another lesson's symbols.  tests/test_c_layers.py reads the block below
 * and checks every unit against it.
 *
 * gm-layers (lowest first):
 *   kernels:  cuda/runtime.cu
 *   errors:   csrc/runtime/errors.c csrc/runtime/args.c
 *   device:   csrc/runtime/device.c csrc/runtime/stream.c
 *   memory:   csrc/runtime/alloc.c csrc/runtime/peer.c csrc/runtime/hostmem.c
 *             csrc/runtime/cai.c csrc/runtime/dlpack.c csrc/runtime/devarray.c
 *   measure:  csrc/runtime/measure.c
 *   launch:   csrc/runtime/launch.c
 *   profiler: csrc/profiler/profile_cupti.c csrc/profiler/profile_state.c
 *             csrc/profiler/profile_eval.c csrc/profiler/profile_pass.c
 *             csrc/profiler/profile_replay.c csrc/profiler/profile_launch.c
 *             csrc/profiler/profile_session.c csrc/profiler/profile.c
 *   entry:    csrc/runtime/entry.c csrc/runtime/registry.c csrc/runtime/introspect.c
 *   lessons:  cuda/<stem>.cu csrc/lessons/<stem>.c (every other .cu and lesson file)
 *   module:   csrc/core.c
 * gm-layers end
 *
 *   errors    errors.c: gpumem's exceptions, CUDA errors turned into them;
 *             args.c: argument conversion -- int, str, shape, dtype, the
 *             gm_arg tables and the one parser of plain (non-kernel) functions
 *   device    device.c: discovery, every GPU of the machine, the current one
 *             (per thread: CUDA's own), device_count(), device(i);
 *             stream.c: Stream, the thread's current stream, synchronize()
 *   memory    alloc.c: the allocators (device and pinned host memory, each
 *             with its account; a pool later), memory_info(), bytes_held();
 *             peer.c: one GPU reaching another's memory (peer access);
 *             hostmem.c: pinned NumPy arrays and the staged copies;
 *             cai.c: a CUDA array interface read whole, no device touched;
 *             dlpack.c: the DLPack and CUDA-array-interface protocols on raw
 *             memory (it knows no DeviceArray); devarray.c: DeviceArray, its
 *             one constructor, __dlpack__, from_dlpack(), to_device(),
 *             empty(), kernel operands
 *   measure   measure.c: the one event-timing path (events, gm_timer), the
 *             L2-flush buffer and kernel row, _time_memcpy(), _time_calls()
 *   launch    launch.c: gm_launch() -- every kernel launch of the extension,
 *             LaunchRecords, the profiler's hook -- and gm_flush_l2(),
 *             _l2_flush()
 *   profiler  profile*.c (profile.h says which does what): registers its
 *             launch hook from above
 *   entry     entry.c: the one path of every kernel entry point, driven by
 *             its family's table; registry.c: the lessons' families and
 *             plain functions in the module, variants(), args();
 *             introspect.c: kernel_attributes(), kernel_occupancy()
 *   lessons   csrc/lessons/<stem>.c over cuda/<stem>.cu, each on its own
 *   module    core.c
 */
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

/* ---- errors (errors.c) ------------------------------------------------------ */
extern PyObject *gm_Error;                /* gpumem.Error (RuntimeError): every gpumem failure */
extern PyObject *gm_CudaError;            /* gpumem.Error */
extern PyObject *gm_CudaUnavailableError; /* CudaError */
extern PyObject *gm_DeviceMemoryError;    /* CudaError, MemoryError */

/* obj.name = value (steals value; errors cleared: for exception attributes). */
void gm_set_attr(PyObject *obj, const char *name, PyObject *value);

/* Turn a failed CUDA call into a Python exception; returns -1. */
int gm_set_cuda_error(cudaError_t err, const char *call);
/* -1 with exception `type`(msg) raised, its call, name and code set from `call` and
 * `err` (steals msg; NULL msg: the error already set is kept). */
int gm_raise_cuda(PyObject *type, cudaError_t err, const char *call, PyObject *msg);
/* After an error the context cannot recover from (a kernel's fault: an illegal
 * address, a trap ...), remembered by gm_set_cuda_error: -1 with CudaError
 * saying the context is lost and the process must restart; else 0.  Every
 * GPU entry (gm_ensure_device) asks first. */
int gm_context_lost(void);
/* Raise `type` with the formatted message, the exception being handled chained
 * as its __cause__ (raise ... from e).  Returns -1. */
int gm_raise_from(PyObject *type, const char *format, ...);

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

int gm_errors_init(PyObject *module);

/* ---- arguments (args.c) ------------------------------------------------------ */
/* Read an integer argument named `name` for function `fn`: any object with
 * __index__ (int, numpy integers), never a bool; TypeError naming it
 * otherwise.  Returns 0 / -1. */
int gm_arg_long(PyObject *obj, const char *fn, const char *name, long long *out);
/* Read a str argument; TypeError naming it otherwise. */
int gm_arg_str(PyObject *obj, const char *fn, const char *name, const char **out);
/* An integer argument in lo..hi (ValueError "fn: name=v is not allowed; name must be
 * lo..hi" otherwise). */
int gm_arg_range(PyObject *obj, const char *fn, const char *name, long long lo, long long hi,
                 long long *out);
/* A str argument among `choices` (NULL-ended): its index (ValueError "fn: name='s' is
 * unknown; allowed: ..." otherwise). */
int gm_arg_choice(PyObject *obj, const char *fn, const char *name, const char *const *choices,
                  int *out);
/* "'a', 'b', 'c'" of the names at `names`, `stride` bytes apart, up to a NULL. */
void gm_list_names(const char *const *names, size_t stride, char *buf, size_t len);

/* Shapes and dtypes. */
#define GM_MAXDIM 32
/* Shape as "(3, 4)" into buf. */
const char *gm_shape_str(int ndim, const npy_intp *shape, char *buf, size_t len);
/* Bytes of an array of this shape and dtype; ValueError naming fn otherwise. */
int gm_shape_nbytes(int ndim, const npy_intp *shape, PyArray_Descr *dtype, size_t *out,
                    const char *fn);
/* TypeError unless a plain numeric dtype in native byte order; `what` starts
 * the message ("fn: a has dtype"). */
int gm_check_plain_dtype(PyArray_Descr *dtype, const char *what);
/* The (shape, dtype=None) arguments of empty() and pinned_empty(): *shape (free
 * with PyDimMem_FREE), *dtype (new reference; float32 for None, a plain numeric
 * one) and their bytes; 0, or -1 with TypeError/ValueError naming fn. */
int gm_shape_dtype(const char *fn, PyObject *shape_obj, PyObject *dtype_obj,
                   PyArray_Dims *shape, PyArray_Descr **dtype, size_t *nbytes);

/* Argument tables.  A function of the module -- a kernel family's (entry.c)
 * or a plain one (below) -- is described by a table of gm_arg, ended by
 * {NULL}; one binder, one converter and one signature generator serve both,
 * and _core.args(name) shows any table to Python. */
#define GM_MAX_ARGS 12

typedef enum {
    GM_ARRAY = 1, /* ndarray or DeviceArray (a gm_operand): float32 unless typenum */
    GM_INT,       /* integer in lo..hi, or one of `allowed` */
    GM_BOOL,      /* True/False (or 0/1) */
    GM_CHOICE,    /* a str among `choices`; the value is its index */
    GM_VARIANT,   /* a str naming one of the family's variants: picks c->variant */
    GM_OBJECT     /* anything: check() reads it */
} gm_arg_kind;

enum {                    /* gm_arg.flags */
    GM_POSITIONAL = 1,    /* may be passed by position (else keyword-only) */
    GM_REQUIRED = 2,
    GM_NO_DEFAULT = 4,    /* default None: check() decides (c->given[i] says if passed) */
    GM_SELECTS = 8,       /* picks the kernel: a kernel_attributes() parameter */
    GM_RECORD = 16,       /* copied into LaunchRecord.params */
    GM_HIDDEN = 32,       /* no function argument: check() sets it; kernel_attributes() takes it */
    GM_WHOLE_WARPS = 64   /* GM_INT: a multiple of 32 */
};

typedef struct {
    const char *name;
    gm_arg_kind kind;
    int flags;
    long long def, lo, hi;      /* GM_INT, GM_BOOL: default; GM_INT: range */
    const long long *allowed;   /* GM_INT: the only values allowed, ended by 0; or NULL */
    const char *const *choices; /* GM_CHOICE: names, NULL-ended (def: the default's index) */
    const char *sdef;           /* GM_VARIANT: the default variant */
    int ndim;                   /* GM_ARRAY: 1 or 2; 0 for any */
    const char *what;           /* said after the allowed values, e.g. " threads" */
    int typenum;                /* GM_ARRAY: its NumPy dtype number; 0 for float32 */
} gm_arg;

/* Convert obj (not None) for a GM_INT, GM_BOOL or GM_CHOICE argument: the
 * value (GM_CHOICE: the index, *s its name).  Every check of the row, its
 * error naming fn, the argument, the value and what is allowed.  0 / -1. */
int gm_arg_value(const gm_arg *a, PyObject *obj, const char *fn, long long *v, const char **s);
/* Whether None stands for "the default" for argument a: its signature says =None
 * (GM_NO_DEFAULT, or an optional array or object).  Everywhere else None is a
 * wrong type, refused like any other before the device is touched. */
int gm_none_is_default(const gm_arg *a);
/* Bind positional and keyword arguments to the visible (not GM_HIDDEN) rows
 * of `args` -- bound[i], borrowed, NULL when not passed -- and, when has_out,
 * out= to bound[n] (n rows).  TypeError as CPython words it otherwise. */
int gm_bind(const char *fn, const gm_arg *args, int has_out, PyObject *tuple, PyObject *kwargs,
            PyObject **bound);
/* "name($module, a, b, *, c=1, out=None)\n--\n\n" + doc, the form from which
 * CPython derives __text_signature__ (PyMem_Malloc'd; NULL when out of memory). */
char *gm_signature_doc(const char *name, const gm_arg *args, int has_out, const char *doc);
/* A tuple of one dict per row (name, kind, flags, default, range, allowed,
 * choices, ndim, what): _core.args().  GM_VARIANT rows list the names at
 * `variants` (`stride` bytes apart, up to a NULL; NULL: none). */
PyObject *gm_args_describe(const gm_arg *args, const char *const *variants, size_t stride);
/* Add a function `name` to the module: meth(capsule of ptr named capname, args, kwargs);
 * doc from gm_signature_doc (owned by the function from then on). */
int gm_add_function(PyObject *module, const char *name, char *doc, PyCFunction meth,
                    const char *capname, const void *ptr);

/* A plain function: no kernel family, just its argument table and what it
 * does with the converted arguments. */
typedef struct {
    const char *fn;
    PyObject *obj[GM_MAX_ARGS];  /* as passed (borrowed); NULL when not passed or None */
    int given[GM_MAX_ARGS];
    long long v[GM_MAX_ARGS];    /* GM_INT, GM_BOOL value; GM_CHOICE index */
    const char *s[GM_MAX_ARGS];  /* GM_CHOICE name */
} gm_parsed;

typedef struct {
    const char *name;
    const char *doc;           /* after the generated signature */
    const gm_arg *args;        /* GM_INT, GM_BOOL, GM_CHOICE, GM_OBJECT rows */
    PyObject *(*run)(const gm_parsed *p);
} gm_plain;

/* Bind and convert a plain function's arguments (None: the default, except
 * for a required argument).  0 / -1. */
int gm_parse(const char *fn, const gm_arg *args, PyObject *tuple, PyObject *kwargs, gm_parsed *p);
/* Add every function of `fns` (ended by {NULL}) to the module; each is found
 * again by gm_find_plain (for _core.args()). */
int gm_add_plain(PyObject *module, const gm_plain *fns);
const gm_plain *gm_find_plain(const char *name); /* NULL, no exception, when none */

/* ---- the devices (device.c) ---------------------------------------------------- */
/* 0 when a GPU is usable (the current device's context created), else -1 with
 * CudaUnavailableError set.  Cheap after the first call. */
int gm_ensure_device(void);
int gm_device_init(PyObject *module); /* is_available, device_count, device, ... */
int gm_peer_init(PyObject *module);   /* can_access_peer, peer_attributes, *_peer_access */
/* Let kernels of GPU `accessor` reach (on) or not the memory of gpumem's pool of GPU
 * `owner`: now if the pool exists, else when it is made.  0 / -1. */
int gm_pool_peer_access(int owner, int accessor, int on);
/* Whether gm_pool_peer_access last let `accessor` in to `owner`'s pool (the runtime's
 * record of peer access switched on: the driver keeps none to ask). */
int gm_pool_peer_access_on(int owner, int accessor);
#define GM_MAX_DEVICES 64
/* How many GPUs (0 without a usable one; no exception). */
int gm_device_count(void);
/* The calling thread's current device (CUDA's per-thread current device).  0 / -1. */
int gm_device_current(int *dev);
/* ValueError unless 0 <= dev < device_count(): "fn: name=dev is not a device; this
 * machine has N GPU(s), 0..N-1".  0 / -1. */
int gm_device_check(const char *fn, const char *name, long long dev);
/* An optional device argument `name` of fn (None or NULL: the current device) into
 * *dev: an int (TypeError) naming a GPU of this machine (ValueError).  0 / -1. */
int gm_device_arg(const char *fn, const char *name, PyObject *obj, int *dev);
/* Make `dev` current for a while: *prev is what to give back to gm_device_leave. */
int gm_device_enter(int dev, int *prev);
void gm_device_leave(int prev);
/* Whether this process has made `dev` current (its context exists). */
int gm_device_used(int dev);
/* 0 when the current GPU has compute capability major.minor or newer; else -1 with
 * CudaError (code cudaErrorNotSupported) "fn: WHAT needs compute capability M.m or
 * newer (WHY); this GPU has compute capability a.b" -- every lesson's one refusal of
 * an older GPU.  _core._pretend_compute_capability(a, b) makes it see a.b instead
 * (tests of the refusal on a newer GPU; (0, 0): the GPU's own again). */
int gm_need_cc(const char *fn, const char *what, int major, int minor, const char *why);
/* The same for instructions of one architecture only (sm_90a's wgmma): the GPU must
 * have exactly major.minor ("needs compute capability 9.0 (WHY)"). */
int gm_need_cc_exactly(const char *fn, const char *what, int major, int minor, const char *why);

/* ---- streams (stream.c) ----------------------------------------------------------
 * gpumem.Stream: a CUDA stream of one device -- gpumem's own (non-blocking,
 * destroyed with the object) or another library's (wrapped, never destroyed).
 * `with stream:` makes it the calling thread's current stream (and its device
 * the current device) until the block ends; every kernel call runs on the
 * current stream of its device, the legacy default stream when none is set. */
typedef struct {
    PyObject_HEAD
    cudaStream_t handle; /* NULL: the device's legacy default stream */
    int device;
    int owned;           /* created by gpumem: destroyed with the object */
} gm_Stream;
extern PyTypeObject gm_Stream_Type;
#define gm_Stream_Check(o) PyObject_TypeCheck((o), &gm_Stream_Type)
/* The stream a call on device `dev` runs on: the thread's current stream (*keep: a
 * new reference to its Stream, which the caller holds while the stream is in use),
 * or the legacy default stream (NULL; *keep NULL) when none is set.  A current
 * stream of another device: ValueError naming fn and both devices.  0 / -1. */
int gm_call_stream(const char *fn, int dev, cudaStream_t *stream, PyObject **keep);
/* gm_stream_order for streams of two GPUs (each NULL: its own device's legacy default
 * stream): `waiter` on waiter_dev waits for the work queued so far on `producer` on
 * producer_dev.  The current device is unchanged.  0 / -1. */
int gm_stream_order_across(int waiter_dev, cudaStream_t waiter, int producer_dev,
                           cudaStream_t producer);
/* The value a stream goes by in the array interfaces: 1 for the legacy default
 * stream, its handle otherwise. */
uintptr_t gm_stream_value(cudaStream_t stream);
/* Make `waiter` wait for the work queued so far on `producer` (streams of the
 * current device; the same stream: nothing to do) through an event, with no
 * wait on the host.  0 / -1. */
int gm_stream_order(cudaStream_t waiter, cudaStream_t producer);
int gm_stream_init(PyObject *module); /* Stream, current_stream, synchronize */

/* ---- the allocators (alloc.c) --------------------------------------------------- */
/* Every device allocation of gpumem, on the current device: its pool (or
 * cudaMalloc) through the account of bytes_held() (DeviceMemoryError saying how
 * much is free when it fails).  Ordered on the device's legacy default stream. */
int gm_device_alloc(size_t nbytes, void **ptr);
void gm_device_free(void *ptr, size_t nbytes); /* on the current device */
/* Free memory of device `dev` after the work queued on `stream` (one of dev's
 * streams; NULL: its legacy default stream), whichever device is current. */
void gm_device_free_on(int dev, cudaStream_t stream, void *ptr, size_t nbytes);
long long gm_bytes_held(void); /* every device's */
/* cudaHostAlloc / cudaFreeHost through the pinned account (memory_info()). */
int gm_host_alloc(size_t nbytes, unsigned flags, void **ptr);
void gm_host_free(void *ptr, size_t nbytes);
long long gm_pinned_bytes(void);
/* Pinned bytes gpumem holds outside gm_host_alloc (hostmem.c's staging buffers). */
void gm_pinned_count(long long delta);
int gm_alloc_init(PyObject *module); /* memory_info, bytes_held */

/* ---- page-locked host memory and staged copies (hostmem.c) -------------------- */
/* Copy between host and device memory (to_device: host -> device), the GIL
 * released: pageable host memory of 2 MiB and more through the staging
 * threads, the rest by cudaMemcpy.  0 / -1 with CudaError set. */
int gm_copy_host(void *dst, const void *src, size_t nbytes, int to_device);
int gm_hostmem_init(PyObject *module); /* pinned_empty, PinnedMemory, _stage_* */

/* ---- DLPack and the CUDA array interface (dlpack.c) ---------------------------- */
/* Memory described by another library: what DeviceArray's constructor needs. */
typedef struct {
    void *ptr;
    int ndim;
    npy_intp shape[GM_MAXDIM];
    PyArray_Descr *dtype; /* owned */
    PyObject *owner;      /* owned: frees the memory when released */
    int device;           /* the GPU whose memory it is (-1 while pending) */
    cudaStream_t stream;  /* gpumem's stream, ordered after the producer's work */
    PyObject *stream_keep; /* owned: that stream's Stream, or NULL */
    int read_only;        /* its owner marked it read-only */
    /* Described but not yet looked at on the device (a __cuda_array_interface__
     * read with defer): gm_foreign_attach checks its memory and orders the
     * producer's stream (has_producer: its 'stream' said one) when the call
     * has checked everything else. */
    int pending, has_producer;
    cudaStream_t producer;
} gm_foreign;

/* __dlpack__'s arguments for memory of device `dev`: *versioned (a 1.x capsule
 * wanted), *copy (True asked for), and the consumer's stream: *sync 0 when it
 * asked for none (stream=-1), else *consumer (NULL: dev's legacy default
 * stream, for None and 1).  0, or -1 with the exception __dlpack__ raises. */
int gm_dlpack_request(PyObject *args, PyObject *kwargs, int dev, int *versioned, int *copy,
                      int *sync, cudaStream_t *consumer);
/* A DLPack capsule of C-contiguous memory of device dev; `keep` (borrowed) is
 * kept alive until the consumer is done. */
PyObject *gm_dlpack_capsule(PyObject *keep, void *ptr, int dev, int ndim, const npy_intp *shape,
                            PyArray_Descr *dtype, int versioned, int copied);
PyObject *gm_dlpack_device(int dev); /* (2, dev) */
/* x's device memory (__dlpack__ or __cuda_array_interface__, C-contiguous, on
 * any GPU) into *out, gpumem's stream for it (the current one of its device)
 * ordered after the producer's work; fn names the caller and the argument
 * ("copy: a"), as every message begins.  cai: x.__cuda_array_interface__ as the
 * caller has read it already (borrowed; a property that builds its dict anew on
 * every read is then not read twice), or NULL to read it here.  0 / -1. */
int gm_dlpack_import(PyObject *x, const char *fn, int defer, PyObject *cai, gm_foreign *out);
/* cai.c, also for dlpack.c: x's __cuda_array_interface__ dict `cai` read whole
 * into *out, pending (no device touched); a stream number of the protocols as a
 * handle (1 legacy, 2 per-thread, other positive ints; `what` then `key` name it); strides
 * (elements, or bytes with unit) C-contiguous?; fill *out (dtype borrowed, owner
 * stolen). */
int gm_cai_describe(PyObject *x, PyObject *cai, const char *fn, gm_foreign *out);
/* An interface key as an interned str, made once: borrowed; NULL with an error set
 * when it cannot be made. */
typedef enum {
    GM_CAI_DATA, GM_CAI_SHAPE, GM_CAI_TYPESTR, GM_CAI_STRIDES, GM_CAI_MASK, GM_CAI_STREAM,
    GM_CAI_VERSION, GM_CAI_NKEYS
} gm_cai_keyid;
PyObject *gm_cai_key(gm_cai_keyid id);
int gm_stream_handle(PyObject *obj, const char *what, const char *key, cudaStream_t *out);
int gm_c_contiguous(int ndim, const npy_intp *shape, const int64_t *strides, int64_t unit);
void gm_foreign_describe(gm_foreign *out, void *ptr, int ndim, const npy_intp *shape,
                         PyArray_Descr *dtype, PyObject *owner);
/* The device half of an import made with defer (a __cuda_array_interface__ is
 * read whole first, so that a call refuses a wrong dtype or shape before it
 * touches the GPU): is [ptr, ptr + nbytes) device memory, of which GPU (*dev),
 * and gpumem's stream there (*stream, *keep owned) ordered after the producer's.
 * 0 / -1. */
int gm_foreign_attach(const char *fn, void *ptr, size_t nbytes, int has_producer,
                      cudaStream_t producer, int *dev, cudaStream_t *stream, PyObject **keep);
/* Whether obj has attribute attr (a protocol): 1, 0, or -1 when looking it up
 * raised something other than AttributeError (then a TypeError naming fn and
 * the argument, that exception chained).  *value (when value is not NULL): the
 * attribute, a new reference, where it is 1; else NULL. */
int gm_has_protocol(PyObject *obj, const char *attr, const char *fn, const char *name,
                    PyObject **value);

/* ---- DeviceArray and kernel operands (devarray.c) ------------------------------ */
#define GM_MAXDIM 32

typedef struct {
    PyObject_HEAD
    void *ptr;
    int ndim;
    npy_intp shape[GM_MAXDIM];
    PyArray_Descr *dtype;
    size_t nbytes;
    PyObject *owner; /* NULL: gpumem's cudaMalloc; else who frees the memory (from_dlpack) */
    int device;      /* the GPU whose memory it is */
    /* The stream of the newest work queued on it (NULL: the device's legacy
     * default stream): what a reader on another stream waits for, what the
     * array interfaces export, and where its memory is freed. */
    cudaStream_t stream;
    PyObject *stream_keep; /* owned: that stream's gpumem.Stream, or NULL */
    /* Another library's memory, described and checked, not yet looked at on the
     * device (device -1): a kernel call's operand until gm_devarray_attach. */
    int pending, has_producer;
    cudaStream_t producer;
} gm_DeviceArray;

extern PyTypeObject gm_DeviceArray_Type;
#define gm_DeviceArray_Check(o) PyObject_TypeCheck((o), &gm_DeviceArray_Type)

/* New, uninitialised device array on the current device (steals nothing; dtype is
 * borrowed). */
gm_DeviceArray *gm_devarray_new(int ndim, const npy_intp *shape, PyArray_Descr *dtype);
/* Before work on `stream` (of d's device) uses d: order it after d's newest work. */
int gm_devarray_wait(gm_DeviceArray *d, cudaStream_t stream);
/* After work on `stream` was queued on d: its newest (keep: the Stream, borrowed). */
void gm_devarray_used(gm_DeviceArray *d, cudaStream_t stream, PyObject *keep);
/* Copy a host array (any layout) to a new device array. */
gm_DeviceArray *gm_devarray_from_host(PyArrayObject *arr);
/* Copy a device array back into a new C-contiguous ndarray. */
PyObject *gm_devarray_get(gm_DeviceArray *d);
/* ... or into `out` (None/NULL: a new one), checked and returned. */
PyObject *gm_devarray_get_into(gm_DeviceArray *d, PyObject *out);

/* Adds DeviceArray, to_device(), empty() and from_dlpack() to the module. */
int gm_memory_init(PyObject *module);

/* An input of a kernel: an ndarray (uploaded for the call) or a DeviceArray.
 * gm_operand_parse checks type and dtype without touching the device;
 * gm_operand_upload makes `dev` valid; gm_operand_release frees what the
 * call allocated. */
typedef struct {
    const char *fn, *name; /* the call and the argument, for messages (static) */
    PyObject *obj;        /* borrowed: what the caller passed (or `wrapped`) */
    int on_device;        /* the caller passed a DeviceArray (or another library's array) */
    int ndim;
    const npy_intp *shape;
    gm_DeviceArray *dev;  /* owned reference once uploaded */
    PyObject *wrapped;    /* owned: a DeviceArray over another library's CUDA array, or NULL */
} gm_operand;

int gm_operand_parse(PyObject *obj, const char *fn, const char *name, int typenum,
                     gm_operand *op);
int gm_operand_upload(gm_operand *op);
long long gm_operand_size(const gm_operand *op); /* elements */
void gm_operand_release(gm_operand *op);
/* `out=` given as another library's CUDA array (__cuda_array_interface__ or
 * __dlpack__): a new DeviceArray sharing its memory, checked as from_dlpack()
 * checks; out itself (new reference) when it is no such array.  NULL on error. */
PyObject *gm_out_operand(PyObject *out, const char *fn);
/* A pending DeviceArray (another library's array as an operand or out=) on its
 * device: gm_foreign_attach; nothing for any other.  0 / -1. */
int gm_devarray_attach(gm_DeviceArray *d, const char *fn, const char *name);
/* Check an `out=` argument: a DeviceArray with this shape and dtype. */
int gm_check_out(PyObject *out, const char *fn, int ndim, const npy_intp *shape, int typenum);

/* ---- kernel variants (types: the rows of every table below) -------------------- */
typedef cudaError_t (*gm_launcher)(const void *params, gm_dims *dims, cudaStream_t stream);

/* A named kernel variant: one row of its family's table. */
typedef struct {
    const char *family;
    const char *name;
    const char *idea;     /* the one memory idea it shows */
    const char *bytes;    /* the bytes it must move, as a formula */
    const char *flops;    /* the FLOPs it does, as a formula */
    gm_launcher launch;   /* the family's launcher (gm_<family>) */
    /* The family's kernel selector (gm_<family>_kernel): the __global__
     * function the launcher runs for these params. */
    const void *(*kernel)(const void *params);
    int select;           /* its enum value in gm_kernels.h (params->variant) */
} gm_variant;

/* Thunks from the one launcher signature to family f's typed launcher and
 * kernel selector, and a row of f's variant table that uses them. */
#define GM_THUNKS(f)                                                           \
    static cudaError_t gm_run_##f(const void *p, gm_dims *d, cudaStream_t s)   \
    {                                                                          \
        return gm_##f((const gm_##f##_params *)p, d, s);                       \
    }                                                                          \
    static const void *gm_kernel_##f(const void *p)                            \
    {                                                                          \
        return gm_##f##_kernel((const gm_##f##_params *)p);                    \
    }
#define GM_ROW(f, name, select, idea, bytes, flops)                            \
    {#f, name, idea, bytes, flops, gm_run_##f, gm_kernel_##f, select}
#define GM_END_ROWS {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0}

/* ---- measurement (measure.c) ---------------------------------------------------- */
/* The one event-timing path.  n events (all or none; 0 / -1), and their end. */
int gm_events_create(cudaEvent_t *ev, int n);  /* on the current device */
void gm_events_destroy(cudaEvent_t *ev, int n); /* events of the current device */
void gm_events_release(int dev, cudaEvent_t *ev, int n); /* events of device dev */
/* Wait for `to` with the GIL released, then the ms from `from` to it.  A
 * failed wait is reported as `what` (NULL: the call).  0 / -1. */
int gm_event_ms(cudaEvent_t from, cudaEvent_t to, const char *what, double *ms);
/* Wait for a stream with the GIL released (what: as above).  0 / -1. */
int gm_stream_wait(cudaStream_t stream, const char *what);

/* A timer: every loop that times work it queues itself (the lessons'
 * experiments, _time_memcpy, _time_calls) holds one.  n events of the current
 * device (gm_events_create: its cache), recorded on one stream.
 *   gm_timer_open     n >= 1 events (all or none: on failure nothing is held)
 *                     for marks on `stream` (NULL: the legacy default stream)
 *   gm_timer_mark     record event i on the timer's stream (cudaEventRecord);
 *   gm_timer_mark_on  ... on another stream of the same device
 *   gm_timer_ms       the ms from event `from` to event `to` (gm_event_ms:
 *                     waits for `to` with the GIL released)
 *   gm_timer_close    the events back to their device's cache; a timer set to
 *                     GM_TIMER_CLOSED, or closed before, may be closed again
 * 0 / -1 with the exception set.  Start every timer as GM_TIMER_CLOSED so a
 * failure path may close it whether or not it was opened. */
enum { GM_TIMER_SMALL = 4 };
typedef struct {
    cudaEvent_t small[GM_TIMER_SMALL]; /* the events when n <= GM_TIMER_SMALL, */
    cudaEvent_t *many;                 /* else malloc'd here */
    int n;
    int device;                        /* the device the events belong to */
    cudaStream_t stream;               /* where gm_timer_mark records */
} gm_timer;
#define GM_TIMER_CLOSED {{NULL}, NULL, 0, -1, NULL}
int gm_timer_open(gm_timer *t, int n, cudaStream_t stream);
int gm_timer_mark(gm_timer *t, int i);
int gm_timer_mark_on(gm_timer *t, int i, cudaStream_t stream);
int gm_timer_ms(gm_timer *t, int from, int to, double *ms);
void gm_timer_close(gm_timer *t);
/* The device's L2 in bytes. */
int gm_l2_bytes(long long *out);

/* The L2 flush: one buffer, zeroed once when it is allocated (never while
 * anything is timed), kept while someone holds it.  Hold it with at least
 * nbytes (0: twice the L2) and get the flush kernel's params for nbytes;
 * release it after the launch.  0 / -1. */
int gm_flush_hold(size_t nbytes, gm_l2_flush_params *p);
void gm_flush_release(void);
/* The flush kernel's row (cuda/runtime.cu): launched by gm_flush_l2(). */
extern const gm_variant gm_l2_flush_variant;

int gm_measure_init(PyObject *module); /* _time_memcpy, _time_calls */

/* ---- the one launch path (launch.c) --------------------------------------------- */
/* A device buffer of a launch.  In gm_launch_info.inout: one the kernel both
 * reads and writes (an in-place update), which replaying the launch must
 * restore first.  In gm_launch_info.buffers: every buffer the kernel may
 * touch, `access` saying how (GM_READS | GM_WRITES). */
enum { GM_READS = 1, GM_WRITES = 2 };
typedef struct {
    void *ptr;
    size_t nbytes;
    int access;
} gm_buffer;

typedef struct gm_launch_info gm_launch_info;
struct gm_launch_info {
    const gm_variant *variant;
    PyObject *params;     /* borrowed dict of the call's parameters */
    double bytes;         /* bytes the launch must move */
    double flops;         /* floating-point operations of the launch */
    const gm_buffer *inout; /* buffers the kernel reads and writes (may be NULL) */
    int n_inout;
    /* Replaying the launch later on copies of its buffers (the profiler's
     * block replay): every buffer the kernel touches, and moved(), which fills
     * `params` (GM_PARAMS_MAX bytes) for the same launch with buffers[i] at
     * to[i].  moved is NULL when the launch depends on device state outside
     * these buffers (a __constant__ or __device__ variable, pointers stored in
     * a buffer): it can only be replayed on the spot. */
    const gm_buffer *buffers;
    int n_buffers;
    void (*moved)(const gm_launch_info *info, void *const *to, void *params);
    const void *call;     /* moved()'s own (the entry point's gm_call) */
    int flags;            /* GM_LAUNCH_* */
    cudaStream_t stream;  /* NULL: the current device's legacy default stream */
};

/* gm_launch_info.flags.  GM_LAUNCH_INTERNAL: a launch gpumem makes for itself
 * (an L2 flush, a ring build, a lesson's helper kernel, a profiler replay):
 * no hook, no LaunchRecord -- gpumem.record() and bench never see it --, not
 * timed and not waited for (the caller orders and waits); the launch is
 * checked as every other. */
enum { GM_LAUNCH_INTERNAL = 1 };

/* Every kernel launch of the extension.  A user-visible one: the hook (if
 * any) first, then `params` through info->variant->launch between CUDA
 * events, the launch and its execution checked, a LaunchRecord published.
 * GM_LAUNCH_INTERNAL: see above.  0 / -1. */
int gm_launch(const gm_launch_info *info, const void *params);
int gm_launch_init(PyObject *module); /* LaunchRecord, _sinks, last_record, _l2_flush */

/* A hook gm_launch() calls before the timed launch (the profiler registers
 * one while a gpumem.profile() block is open): it may replay the launch as
 * often as it needs, must leave every info->inout buffer as it found it, and
 * returns the launch's metrics (new dict), or NULL with an exception set.
 * The ordinary timed launch runs after it, so a hook never changes the timing
 * or the result of the call.  NULL removes the hook. */
typedef PyObject *(*gm_launch_hook)(const gm_launch_info *info, const void *params);
void gm_launch_set_hook(gm_launch_hook hook);

/* Evict L2: the flush kernel over nbytes (0: twice the L2) of the flush
 * buffer, an internal launch; with `wait`, waited for with the GIL released.
 * The bytes read, or -1. */
long long gm_flush_l2(long long nbytes, int wait);

/* ---- hardware counters (profiler/): adds _profile_* and ProfilerError ---------- */
int gm_profile_init(PyObject *module);

/* ---- entry points (entry.c) --------------------------------------------------
 * A kernel family is described, not programmed: its arguments (a table of
 * gm_arg), its shape rules (check), the device work before its launch
 * (prepare, rarely needed) and how its params struct is filled (fill).  One
 * generic path does the rest, always in this order: bind the arguments,
 * convert and check each one, check the shapes, check out=, and only then
 * touch the device -- upload, allocate the result, prepare, launch, hand
 * back a DeviceArray (any input or out= on the device) or an ndarray. */
#define GM_SLOT_RES GM_MAX_ARGS       /* gm_call.moved: the result's slot */
#define GM_SLOT_TMP (GM_MAX_ARGS + 1) /* and tmp's */
#define GM_PARAMS_MAX 256 /* bytes: every gm_<family>_params fits */

typedef struct gm_family gm_family;

typedef struct {
    const gm_family *f;
    PyObject *obj[GM_MAX_ARGS];  /* as passed (borrowed); NULL when not passed or None */
    int given[GM_MAX_ARGS];
    long long v[GM_MAX_ARGS];    /* GM_INT, GM_BOOL value; GM_CHOICE index */
    const char *s[GM_MAX_ARGS];  /* GM_CHOICE, GM_VARIANT name */
    gm_operand op[GM_MAX_ARGS];  /* GM_ARRAY */
    const gm_variant *variant;
    PyObject *out;               /* the caller's out=, or NULL */
    int out_ndim, out_typenum;   /* the result: set by check() (gm_result) */
    npy_intp out_shape[GM_MAXDIM];
    long long work;              /* nothing is launched when 0 (empty input) */
    double bytes, flops;         /* what the launch must move and compute */
    PyObject *record;            /* LaunchRecord.params (owned) */
    gm_DeviceArray *res;         /* the result (owned) */
    gm_DeviceArray *tmp;         /* a device buffer the kernel reads (owned), or NULL */
    PyObject *out_wrapped;       /* out= as another library's array: its DeviceArray (owned) */
    gm_buffer inout[1];          /* an in-place buffer a profiler replay restores */
    int n_inout;
    /* Set by prepare() when the launch reads device state that is not in its
     * operands, result or tmp (a __constant__ or __device__ variable it set,
     * pointers stored in a buffer): a profiler may not replay it later on
     * copies of its buffers, only on the spot. */
    int apart;
    /* Block replay (entry.c): the launch's buffers, which slot of moved each
     * is (an argument's index, GM_SLOT_RES, GM_SLOT_TMP), and while fill()
     * runs for a replay, where they were moved (gm_in, gm_res and gm_tmp
     * answer with those). */
    gm_buffer buffers[GM_MAX_ARGS + 2];
    int buffer_slot[GM_MAX_ARGS + 2];
    int n_buffers;
    void *const *moved;
    long long host_first, host_count; /* a host caller gets res[first:first+count] (count >= 0) */
    int device;                  /* the GPU the call runs on: its operands' */
    cudaStream_t stream;         /* and its stream there (NULL: the legacy default) */
    PyObject *stream_keep;       /* that stream's Stream (owned), or NULL */
    float scratch[64];           /* the lesson's own (e.g. the stencil's weights) */
} gm_call;

struct gm_family {
    const char *name;           /* the Python name: function, family, LaunchRecord.kernel */
    const char *doc;            /* its docstring (after the generated signature) */
    const gm_arg *args;         /* ended by {NULL} */
    int has_out;                /* takes out= (a DeviceArray) */
    int out_may_alias;          /* out may be an input (an in-place update) */
    const gm_variant *variants; /* ended by GM_END_ROWS */
    int (*check)(gm_call *c);   /* shape rules, sizes, the variant: no device call */
    int (*prepare)(gm_call *c); /* device work before the launch, or NULL; sets
                                   c->apart when it writes state outside the
                                   call's buffers (cudaMemcpyToSymbol) */
    void (*fill)(const gm_call *c, void *params);
    /* Nonzero: the call runs on the current GPU, and its array operands and out=
     * may live on any GPU whose memory it reaches (peer access switched on with
     * enable_peer_access: gm_pool_peer_access_on), each ordered across the two
     * GPUs' streams; otherwise one on another GPU is refused by name.  A NumPy
     * operand and the result go to the current GPU. */
    int peer_operands;
};

PyObject *gm_entry_call(const gm_family *f, PyObject *args, PyObject *kwargs);
/* Nonzero: entry points only check their arguments and return None. */
void gm_set_check_only(int on);
/* f's variant `name`; else ValueError: with `arg` (the GM_VARIANT row that
 * named it) "fn: arg='name' is unknown; allowed: ...", without "fn:
 * variant='name' is not a variant of f; allowed: ...". */
const gm_variant *gm_find_variant(const char *fn, const gm_family *f, const char *name,
                                  const gm_arg *arg);

/* For check(): the result's shape and dtype, a size for LaunchRecord.params,
 * the variant by name, the 2^31 - 1 block limit of a 1-D grid, a value out
 * of range (ValueError "fn: name=v is not allowed; name must be lo..hi..."). */
void gm_result(gm_call *c, int ndim, const npy_intp *shape, int typenum);
int gm_record(gm_call *c, const char *key, long long value);
int gm_pick_variant(gm_call *c, const char *name);
int gm_check_grid(const gm_call *c, long long work, long long per_block, long long block);
int gm_range_error(const gm_call *c, const char *name, long long v, const char *allowed);
int gm_returns_device(const gm_call *c);
/* For fill(): an input's device pointer, the result's (NULL before upload:
 * kernel_attributes() fills params without buffers). */
const void *gm_in(const gm_call *c, int arg);
long long gm_dim(const gm_call *c, int arg, int axis); /* 0 without the operand */
void *gm_res(const gm_call *c);
void *gm_tmp(const gm_call *c); /* c->tmp's device pointer, or NULL */
/* For prepare(): c->tmp, a new 1-D device buffer of n elements of NumPy type typenum
 * (uninitialised); -1 with the Python error set when it cannot be had. */
int gm_new_tmp(gm_call *c, npy_intp n, int typenum);

/* For introspect.c: a call of f with every default and `variant`, whose
 * kernel-selecting parameters are then set from `params` (a dict; unknown
 * keys are errors when strict); fills `buf` (GM_PARAMS_MAX bytes). */
int gm_selecting_params(const char *fn, const gm_family *f, const gm_variant *v, PyObject *params,
                        int strict, void *buf);

/* ---- the registry (registry.c) ---------------------------------------------------- */
/* A lesson, as csrc/lessons/<stem>.c declares it (`const gm_lesson
 * gm_lesson_<stem>`): core.c lists every one from the generated gm_lessons.inc. */
typedef struct {
    const char *stem;
    const gm_family *const *families; /* NULL-ended */
    const gm_plain *plain;            /* its plain functions (ended by {NULL}), or NULL */
    int (*init)(PyObject *module);    /* anything else it adds, or NULL */
} gm_lesson;

/* Adds every lesson's families (one function each, named as the family,
 * with a generated signature) and plain functions, runs their init, and adds
 * variants(), args() and _check_only(). */
int gm_registry_init(PyObject *module, const gm_lesson *const *lessons);
const gm_family *gm_find_family(const char *fn, const char *family);

/* ---- introspection (introspect.c) -------------------------------------------------- */
int gm_introspect_init(PyObject *module); /* kernel_attributes, kernel_occupancy */

#endif /* GM_H */
