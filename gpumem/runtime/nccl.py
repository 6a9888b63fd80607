"""NCCL, the engine users scale out with, loaded at run time: collectives over gpumem's
arrays, one process driving every GPU (one communicator each).

The library comes from the ``nvidia-nccl-cu13`` wheel (``pip install 'gpumem-lab[nccl]'``), as
the profiler's CUPTI comes from its wheel; ``GPUMEM_NCCL`` may name another
``libnccl.so``, and a system one (``libnccl.so.2`` on the loader's path) is the last
resort.  Nothing is loaded until a collective is asked for; without the library,
:class:`NcclError` says how to get it.

NVLink multicast (NVLS) stays off in every process that loads NCCL here:
``NCCL_NVLS_ENABLE=0`` is set before the library starts.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
from typing import Sequence

from .._core import DeviceArray, Error

__all__ = ["NcclError", "COLLECTIVES", "library_path", "version", "Communicators"]

#: The collectives this module runs, as nccl-tests names them.
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
_FLOAT32, _SUM = 7, 0                     # ncclFloat32, ncclSum (nccl.h)


class NcclError(Error):
    """NCCL is not installed here, or a call of it failed (its own message)."""


def library_path() -> str | None:
    """Where libnccl is: ``GPUMEM_NCCL``, else the ``nvidia-nccl-cu13`` wheel's, else None
    (the loader's search path is tried last, by name)."""
    given = os.environ.get("GPUMEM_NCCL")
    if given:
        return given
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(glob.glob(os.path.join(root, "nccl", "lib", "libnccl.so*")))
        if found:
            return found[0]
    return None


_lib: ctypes.CDLL | None = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    os.environ["NCCL_NVLS_ENABLE"] = "0"          # no NVLink multicast objects, ever
    path = library_path()
    try:
        lib = ctypes.CDLL(path or "libnccl.so.2")
    except OSError as e:
        raise NcclError(f"NCCL is not available here ({e}); pip install 'gpumem-lab[nccl]' "
                        "(the nvidia-nccl-cu13 wheel), or set GPUMEM_NCCL to a libnccl.so") from None
    lib.ncclGetErrorString.restype = ctypes.c_char_p
    _lib = lib
    return lib


def _check(rc: int, what: str) -> None:
    if rc != 0:
        msg = _library().ncclGetErrorString(rc).decode(errors="replace")
        raise NcclError(f"{what}: {msg} (ncclResult {rc})")


def version() -> int:
    """NCCL's version code (e.g. 22807 for 2.28.7)."""
    v = ctypes.c_int(0)
    _check(_library().ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    return v.value


class Communicators:
    """One NCCL communicator per GPU of ``devices``, all driven from this process
    (``ncclCommInitAll``); a collective is one group of calls, one per GPU, each on that
    GPU's legacy default stream (where gpumem's calls run unless a Stream is current).
    Use as a context manager, or call :meth:`close`."""

    def __init__(self, devices: Sequence[int]):
        devs = [int(d) for d in devices]
        if len(devs) < 1 or len(set(devs)) != len(devs):
            raise ValueError(f"Communicators: devices={list(devices)!r} must be distinct GPUs, "
                             "at least one")
        lib = _library()
        self.devices = devs
        self._comms = (ctypes.c_void_p * len(devs))()
        _check(lib.ncclCommInitAll(self._comms, len(devs), (ctypes.c_int * len(devs))(*devs)),
               "ncclCommInitAll")

    def close(self) -> None:
        if self._comms is not None:
            for c in self._comms:
                _library().ncclCommDestroy(ctypes.c_void_p(c))
            self._comms = None

    def __enter__(self) -> "Communicators":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def run(self, collective: str, sends: Sequence[DeviceArray], recvs: Sequence[DeviceArray],
            *, root: int = 0) -> None:
        """Queue one ``collective`` (:data:`COLLECTIVES`) of float32 sums: ``sends[i]`` and
        ``recvs[i]`` on ``devices[i]``.  all_reduce and broadcast: equal sizes;
        all_gather: each recv ``len(devices)`` times its send; reduce_scatter: each send
        that times its recv.  Returns once queued (the streams order the rest)."""
        if collective not in COLLECTIVES:
            raise ValueError(f"Communicators.run: collective={collective!r} is not one of "
                             f"{', '.join(COLLECTIVES)}")
        if self._comms is None:
            raise ValueError("Communicators.run: the communicators are closed")
        k = len(self.devices)
        if len(sends) != k or len(recvs) != k:
            raise ValueError(f"Communicators.run: one send and one recv per GPU ({k}), not "
                             f"{len(sends)} and {len(recvs)}")
        for i, (s, r, d) in enumerate(zip(sends, recvs, self.devices)):
            if not isinstance(s, DeviceArray) or not isinstance(r, DeviceArray):
                raise TypeError(f"Communicators.run: sends[{i}] and recvs[{i}] must be "
                                "gpumem.DeviceArray")
            if s.device != d or r.device != d or str(s.dtype) != "float32" or \
                    str(r.dtype) != "float32":
                raise ValueError(f"Communicators.run: sends[{i}] and recvs[{i}] must be float32 "
                                 f"on device {d}")
            want = {"all_gather": (s.size * k, r.size), "reduce_scatter": (r.size * k, s.size)}
            a, b = want.get(collective, (s.size, r.size))
            if a != b:
                raise ValueError(f"Communicators.run: {collective} of sends[{i}] ({s.size} "
                                 f"floats) into recvs[{i}] ({r.size}) does not fit")
        lib = _library()
        _check(lib.ncclGroupStart(), "ncclGroupStart")
        try:
            for s, r, c in zip(sends, recvs, self._comms):
                sp, rp, comm = ctypes.c_void_p(s.ptr), ctypes.c_void_p(r.ptr), ctypes.c_void_p(c)
                st = ctypes.c_void_p(0)
                if collective == "all_reduce":
                    rc = lib.ncclAllReduce(sp, rp, ctypes.c_size_t(s.size), _FLOAT32, _SUM, comm,
                                           st)
                elif collective == "all_gather":
                    rc = lib.ncclAllGather(sp, rp, ctypes.c_size_t(s.size), _FLOAT32, comm, st)
                elif collective == "reduce_scatter":
                    rc = lib.ncclReduceScatter(sp, rp, ctypes.c_size_t(r.size), _FLOAT32, _SUM,
                                               comm, st)
                else:
                    rc = lib.ncclBroadcast(sp, rp, ctypes.c_size_t(s.size), _FLOAT32, int(root),
                                           comm, st)
                _check(rc, f"nccl {collective}")
        finally:
            _check(lib.ncclGroupEnd(), "ncclGroupEnd")
