/* peer.c -- one GPU reaching another's memory: whether it can (the driver's
 * answer and its link's attributes, cudaDeviceGetP2PAttribute), and peer access
 * switched on and off (cudaDeviceEnablePeerAccess, from `device`'s context to
 * `peer`'s memory, and gpumem's pool of `peer` opened to `device`: alloc.c's
 * gm_pool_peer_access, as peer access does not cover a pool's memory).  What the
 * switch changes: a kernel on `device` may then load and store through a pointer
 * into `peer`'s memory, and a copy between the two
 * (cudaMemcpyPeerAsync, devarray.c's to_device(x, device=)) goes over the link
 * directly instead of being staged by the driver. */
#include "gm.h"

/* (device, peer) from the arguments: two GPUs of this machine, not the same one. */
static int pair_args(const char *fn, PyObject *args, PyObject *kwargs, int *dev, int *peer)
{
    static char *kwlist[] = {"device", "peer", NULL};
    PyObject *d = NULL, *p = NULL;
    char fmt[64];
    snprintf(fmt, sizeof fmt, "OO:%s", fn);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &d, &p))
        return -1;
    if (d == Py_None || p == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: device and peer must be GPU numbers, not None", fn);
        return -1;
    }
    long long a, b;            /* what is wrong with the numbers is said without a GPU */
    if (gm_arg_long(d, fn, "device", &a) < 0 || gm_arg_long(p, fn, "peer", &b) < 0)
        return -1;
    if (a == b && a >= 0) {
        PyErr_Format(PyExc_ValueError, "%s: device and peer are both %lld; a GPU reaches its "
                     "own memory without peer access", fn, a);
        return -1;
    }
    if ((a < 0 && gm_device_check(fn, "device", a) < 0) ||    /* never a device */
        (b < 0 && gm_device_check(fn, "peer", b) < 0) ||
        gm_device_check(fn, "device", a) < 0 || gm_device_check(fn, "peer", b) < 0)
        return -1;
    *dev = (int)a;
    *peer = (int)b;
    return 0;
}

static PyObject *can_access_peer(PyObject *self, PyObject *args, PyObject *kwargs)
{
    int dev, peer, can = 0;
    if (pair_args("can_access_peer", args, kwargs, &dev, &peer) < 0)
        return NULL;
    GM_CUDA(cudaDeviceCanAccessPeer(&can, dev, peer));
    return PyBool_FromLong(can);
fail:
    return NULL;
}

static PyObject *peer_attributes(PyObject *self, PyObject *args, PyObject *kwargs)
{
    int dev, peer, rank = 0, access = 0, atomics = 0, arrays = 0;
    if (pair_args("peer_attributes", args, kwargs, &dev, &peer) < 0)
        return NULL;
    GM_CUDA(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, dev, peer));
    GM_CUDA(cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, dev, peer));
    GM_CUDA(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, dev, peer));
    GM_CUDA(cudaDeviceGetP2PAttribute(&arrays, cudaDevP2PAttrCudaArrayAccessSupported, dev,
                                      peer));
    return Py_BuildValue("{s:i,s:i,s:N,s:i,s:N,s:N,s:N}", "device", dev, "peer", peer,
                         "access_supported", PyBool_FromLong(access), "performance_rank",
                         rank, "native_atomics", PyBool_FromLong(atomics),
                         "cuda_array_access", PyBool_FromLong(arrays), "enabled",
                         PyBool_FromLong(gm_pool_peer_access_on(peer, dev)));
fail:
    return NULL;
}

/* Switch access from dev's context to peer's memory on (on=1) or off; already so
 * is no error. */
static PyObject *set_access(const char *fn, PyObject *args, PyObject *kwargs, int on)
{
    int dev, peer, prev = 0, can = 0;
    if (pair_args(fn, args, kwargs, &dev, &peer) < 0)
        return NULL;
    GM_CUDA(cudaDeviceCanAccessPeer(&can, dev, peer));
    if (!can && on) {
        PyErr_Format(PyExc_ValueError, "%s: GPU %d cannot reach GPU %d's memory (no peer "
                     "path between them: cudaDeviceCanAccessPeer says 0)", fn, dev, peer);
        return NULL;
    }
    /* already as gpumem left it: no driver call (one that finds it so is an error the
     * sanitizers report, cleared or not) */
    if (!gm_pool_peer_access_on(peer, dev) == !on)
        Py_RETURN_NONE;
    if (gm_device_enter(dev, &prev) < 0)
        return NULL;
    cudaError_t err = on ? cudaDeviceEnablePeerAccess(peer, 0) : cudaDeviceDisablePeerAccess(peer);
    gm_device_leave(prev);
    if (err == cudaErrorPeerAccessAlreadyEnabled || err == cudaErrorPeerAccessNotEnabled) {
        (void)cudaGetLastError(); /* already as asked */
        err = cudaSuccess;
    }
    if (err != cudaSuccess) {
        gm_set_cuda_error(err, on ? "cudaDeviceEnablePeerAccess" : "cudaDeviceDisablePeerAccess");
        return NULL;
    }
    if (gm_pool_peer_access(peer, dev, on) < 0)      /* gpumem's pool of peer, too */
        return NULL;
    Py_RETURN_NONE;
fail:
    return NULL;
}

static PyObject *enable_peer_access(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return set_access("enable_peer_access", args, kwargs, 1);
}

static PyObject *disable_peer_access(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return set_access("disable_peer_access", args, kwargs, 0);
}

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef peer_methods[] = {
    {"can_access_peer", KW(can_access_peer),
     "can_access_peer($module, /, device, peer)\n--\n\nWhether a kernel on GPU `device` can "
     "read and write GPU `peer`'s memory once peer access is on (cudaDeviceCanAccessPeer)."},
    {"peer_attributes", KW(peer_attributes),
     "peer_attributes($module, /, device, peer)\n--\n\nThe link from GPU `device` to GPU "
     "`peer` as the driver describes it (cudaDeviceGetP2PAttribute): access_supported, "
     "performance_rank (0 the best), native_atomics, cuda_array_access -- and enabled, "
     "whether gpumem switched peer access on."},
    {"enable_peer_access", KW(enable_peer_access),
     "enable_peer_access($module, /, device, peer)\n--\n\nLet kernels on GPU `device` reach "
     "GPU `peer`'s memory (cudaDeviceEnablePeerAccess; already on: nothing to do).  Copies "
     "between the two then go over the link directly."},
    {"disable_peer_access", KW(disable_peer_access),
     "disable_peer_access($module, /, device, peer)\n--\n\nUndo enable_peer_access (already "
     "off: nothing to do).  Copies between the two are then staged by the driver."},
    {NULL, NULL, 0, NULL},
};

int gm_peer_init(PyObject *module)
{
    return PyModule_AddFunctions(module, peer_methods);
}
