"""NCCL, the engine users scale out with, loaded at run time: collectives over gpumem's
arrays in either of NCCL's two forms.

* :class:`Communicators` -- one process driving every GPU of ``devices`` (one
  communicator each, ``ncclCommInitAll``).
* :class:`Communicator` -- one rank of a communicator in this process, on one GPU
  (``ncclCommInitRank``): one process per GPU, on one node or many, started by
  ``mpirun``, ``torchrun`` or by hand.  The ranks share one NCCL unique id
  (:func:`unique_id`, 128 bytes, or its hex text): given to each, or through a file
  (:func:`unique_id_file`: rank 0 writes it, the others wait for it), or through the
  environment (:meth:`Communicator.from_env`: ``RANK``/``WORLD_SIZE`` as torchrun sets
  them, or ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE`` as Open MPI's mpirun does;
  the id in ``GPUMEM_NCCL_ID`` as hex, or in the file ``GPUMEM_NCCL_ID_FILE`` names).

The library comes from the ``nvidia-nccl-cu13`` wheel (``pip install 'gpumem-lab[nccl]'``), as
the profiler's CUPTI comes from its wheel; ``GPUMEM_NCCL`` may name another
``libnccl.so``, and a system one (``libnccl.so.2`` on the loader's path) is the last
resort.  Nothing is loaded until a collective is asked for; without the library,
:class:`NcclError` says how to get it.  Bad arguments are refused (``TypeError``,
``ValueError`` naming the argument) before the library is loaded.

NVLink multicast (NVLS) stays off in every process that loads NCCL here:
``NCCL_NVLS_ENABLE=0`` is set before the library starts.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import numbers
import os
import tempfile
import time
from typing import Any, Sequence, Union

from .._core import DeviceArray, Error
from .._core import _get_device
from .args import _index
from .devices import Device

__all__ = ["NcclError", "COLLECTIVES", "library_path", "version", "Communicators",
           "Communicator", "unique_id", "unique_id_file", "UNIQUE_ID_BYTES"]

#: The collectives this module runs, as nccl-tests names them.
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
#: The size of NCCL's unique id (``ncclUniqueId``: a struct of 128 chars).
UNIQUE_ID_BYTES = 128
_FLOAT32, _SUM = 7, 0                     # ncclFloat32, ncclSum (nccl.h)


class NcclError(Error):
    """NCCL is not installed here, or a call of it failed (its own message)."""


class _UniqueId(ctypes.Structure):
    """``ncclUniqueId`` (nccl.h): 128 bytes, passed to ``ncclCommInitRank`` by value."""
    _fields_ = [("internal", ctypes.c_ubyte * UNIQUE_ID_BYTES)]


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
    lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(_UniqueId)]
    lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, _UniqueId,
                                     ctypes.c_int]     # the id by value: 128 bytes on the stack
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


# ---- one rank's pair of buffers, checked and queued: both forms share these -------------
def _check_call(fn: str, collective: Any, root: Any, nranks: int) -> int:
    """The collective's name and ``root`` (a rank: 0 .. nranks - 1): the root, an int."""
    if not isinstance(collective, str) or collective not in COLLECTIVES:
        raise ValueError(f"{fn}: collective={collective!r} is not one of "
                         f"{', '.join(COLLECTIVES)}")
    root = _index(fn, "root", root)
    if not 0 <= root < nranks:
        raise ValueError(f"{fn}: root={root} is not a rank; ranks are 0..{nranks - 1}")
    return root


def _check_pair(fn: str, collective: str, send: Any, recv: Any, device: int, nranks: int,
                names: tuple[str, str] = ("send", "recv")) -> None:
    """One rank's ``send`` and ``recv`` for ``collective`` over ``nranks`` ranks: float32
    DeviceArrays on ``device`` whose sizes fit (all_reduce and broadcast: equal;
    all_gather: recv ``nranks`` times send; reduce_scatter: send ``nranks`` times recv).
    ``names``: how the messages call them."""
    s_name, r_name = names
    if not isinstance(send, DeviceArray) or not isinstance(recv, DeviceArray):
        raise TypeError(f"{fn}: {s_name} and {r_name} must be gpumem.DeviceArray")
    if send.device != device or recv.device != device or str(send.dtype) != "float32" or \
            str(recv.dtype) != "float32":
        raise ValueError(f"{fn}: {s_name} and {r_name} must be float32 on device {device}")
    want = {"all_gather": (send.size * nranks, recv.size),
            "reduce_scatter": (recv.size * nranks, send.size)}
    a, b = want.get(collective, (send.size, recv.size))
    if a != b:
        raise ValueError(f"{fn}: {collective} of {s_name} ({send.size} floats) into {r_name} "
                         f"({recv.size}) does not fit")


def _enqueue(lib: ctypes.CDLL, collective: str, send: DeviceArray, recv: DeviceArray,
             comm: int, root: int) -> None:
    """Queue one rank's part of ``collective`` on its GPU's legacy default stream."""
    sp, rp, c = ctypes.c_void_p(send.ptr), ctypes.c_void_p(recv.ptr), ctypes.c_void_p(comm)
    st = ctypes.c_void_p(0)
    if collective == "all_reduce":
        rc = lib.ncclAllReduce(sp, rp, ctypes.c_size_t(send.size), _FLOAT32, _SUM, c, st)
    elif collective == "all_gather":
        rc = lib.ncclAllGather(sp, rp, ctypes.c_size_t(send.size), _FLOAT32, c, st)
    elif collective == "reduce_scatter":
        rc = lib.ncclReduceScatter(sp, rp, ctypes.c_size_t(recv.size), _FLOAT32, _SUM, c, st)
    else:
        rc = lib.ncclBroadcast(sp, rp, ctypes.c_size_t(send.size), _FLOAT32, root, c, st)
    _check(rc, f"nccl {collective}")


class _Closes:
    """A context manager that closes what it holds on leaving, and when collected."""

    def close(self) -> None:          # each class destroys its own communicators
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Communicators(_Closes):
    """One NCCL communicator per GPU of ``devices``, all driven from this process
    (``ncclCommInitAll``); a collective is one group of calls, one per GPU, each on that
    GPU's legacy default stream (where gpumem's calls run unless a Stream is current).
    Use as a context manager, or call :meth:`close`."""

    _comms = None

    def __init__(self, devices: Sequence[int]):
        devs = [int(d) for d in devices]
        if len(devs) < 1 or len(set(devs)) != len(devs):
            raise ValueError(f"Communicators: devices={list(devices)!r} must be distinct GPUs, "
                             "at least one")
        lib = _library()
        self.devices = devs
        comms = (ctypes.c_void_p * len(devs))()
        _check(lib.ncclCommInitAll(comms, len(devs), (ctypes.c_int * len(devs))(*devs)),
               "ncclCommInitAll")
        self._comms = comms

    def close(self) -> None:
        if self._comms is not None:
            for c in self._comms:
                _library().ncclCommDestroy(ctypes.c_void_p(c))
            self._comms = None

    def run(self, collective: str, sends: Sequence[DeviceArray], recvs: Sequence[DeviceArray],
            *, root: int = 0) -> None:
        """Queue one ``collective`` (:data:`COLLECTIVES`) of float32 sums: ``sends[i]`` and
        ``recvs[i]`` on ``devices[i]``.  all_reduce and broadcast: equal sizes;
        all_gather: each recv ``len(devices)`` times its send; reduce_scatter: each send
        that times its recv; broadcast from GPU ``devices[root]``.  Returns once queued
        (the streams order the rest)."""
        fn = "Communicators.run"
        k = len(self.devices)
        root = _check_call(fn, collective, root, k)
        if self._comms is None:
            raise ValueError(f"{fn}: the communicators are closed")
        if len(sends) != k or len(recvs) != k:
            raise ValueError(f"{fn}: one send and one recv per GPU ({k}), not "
                             f"{len(sends)} and {len(recvs)}")
        for i, (s, r, d) in enumerate(zip(sends, recvs, self.devices)):
            _check_pair(fn, collective, s, r, d, k, names=(f"sends[{i}]", f"recvs[{i}]"))
        lib = _library()
        _check(lib.ncclGroupStart(), "ncclGroupStart")
        try:
            for s, r, c in zip(sends, recvs, self._comms):
                _enqueue(lib, collective, s, r, c, root)
        finally:
            _check(lib.ncclGroupEnd(), "ncclGroupEnd")


# ---- one process per GPU: a rank, and the id its ranks share ----------------------------
_Id = Union[bytes, bytearray, str]


def _as_id(fn: str, name: str, v: Any) -> bytes:
    """``v`` as NCCL's unique id: 128 bytes, or the 256 hex digits of them."""
    if isinstance(v, (bytes, bytearray)):
        b = bytes(v)
    elif isinstance(v, str):
        try:
            b = bytes.fromhex(v.strip())
        except ValueError:
            shown = v[:40] + ("..." if len(v) > 40 else "")
            raise ValueError(f"{fn}: {name} is not hex text ({shown!r}); a unique id is "
                             f"{UNIQUE_ID_BYTES} bytes or {2 * UNIQUE_ID_BYTES} hex digits"
                             ) from None
    else:
        raise TypeError(f"{fn}: {name} must be bytes ({UNIQUE_ID_BYTES}) or a hex str "
                        f"(nccl.unique_id()), not {type(v).__name__}")
    if len(b) != UNIQUE_ID_BYTES:
        raise ValueError(f"{fn}: {name} holds {len(b)} bytes; a unique id is "
                         f"{UNIQUE_ID_BYTES} bytes ({2 * UNIQUE_ID_BYTES} hex digits)")
    return b


def _rank_size(fn: str, rank: Any, nranks: Any, names: tuple[str, str] = ("rank", "nranks")
               ) -> tuple[int, int]:
    rank, nranks = _index(fn, names[0], rank), _index(fn, names[1], nranks)
    if nranks < 1:
        raise ValueError(f"{fn}: {names[1]}={nranks} must be at least 1")
    if not 0 <= rank < nranks:
        raise ValueError(f"{fn}: {names[0]}={rank} is not a rank of {nranks}; ranks are "
                         f"0..{nranks - 1}")
    return rank, nranks


def _timeout(fn: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{fn}: timeout must be a number of seconds, not {type(v).__name__}")
    if not v > 0:
        raise ValueError(f"{fn}: timeout={v!r} must be more than 0 seconds")
    return float(v)


def unique_id() -> bytes:
    """A new NCCL unique id (``ncclGetUniqueId``): 128 bytes that every rank of one
    communicator is given (``.hex()`` for the environment or a file).  The process that
    makes it hosts NCCL's bootstrap root: it must live until every rank has joined
    (rank 0 makes it, as a rule)."""
    uid = _UniqueId()
    _check(_library().ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    return bytes(uid)


def unique_id_file(path: str | os.PathLike, rank: int, *, timeout: float = 60.0) -> bytes:
    """The unique id the ranks share through the file ``path`` (hex text; a file system
    every rank sees).  Rank 0 makes one (:func:`unique_id`) and writes it, whole or not
    at all (a temporary file beside it, renamed), unless the file is there already, when
    it reads it as the others do; every other rank waits for the file up to ``timeout``
    seconds, then raises :class:`NcclError` naming it.  A file left by an earlier run
    names a bootstrap root that is gone: remove it before starting the ranks."""
    fn = "unique_id_file"
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"{fn}: path must be a str or os.PathLike, not "
                        f"{type(path).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise ValueError(f"{fn}: path is empty; name the file the ranks share")
    rank = _index(fn, "rank", rank)
    if rank < 0:
        raise ValueError(f"{fn}: rank={rank} is not a rank; ranks are numbered from 0")
    return _shared_id(fn, "the unique id file", path, rank, _timeout(fn, timeout))


def _shared_id(fn: str, what: str, path: str, rank: int, timeout: float) -> bytes:
    """:func:`unique_id_file`'s work, its arguments checked; ``what`` names the file."""
    if rank == 0 and not os.path.exists(path):
        uid = unique_id()
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                                   dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(uid.hex() + "\n")
            os.replace(tmp, path)           # the others see the whole id, or no file
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return uid
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                raise NcclError(f"{fn}: rank {rank} waited {timeout:g} s for {what} {path!r}, "
                                "which rank 0 writes: is rank 0 running, and is the file on "
                                "a file system every rank sees?") from None
            time.sleep(0.02)
            continue
        return _as_id(fn, f"{what} {path!r}", text)


def _env_int(fn: str, name: str) -> int:
    text = os.environ[name]
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{fn}: {name}={text!r} is not an integer") from None


class Communicator(_Closes):
    """Rank ``rank`` of a communicator of ``nranks`` ranks, one per process (or per
    thread) and GPU, joined through ``unique_id`` (:func:`unique_id`'s 128 bytes, or their
    hex text; every rank is given the same).  ``ncclCommInitRank`` runs with ``device``
    current (default: the current device) and returns once every rank has joined.

    A collective is one call per rank (:meth:`run`), queued on the device's legacy default
    stream (where gpumem's calls run unless a Stream is current), as
    :class:`Communicators` queues each GPU's.  Use as a context manager, or call
    :meth:`close`.  :meth:`from_env` takes the rank, the size and the id from the
    environment (torchrun, mpirun).

    Parameters
    ----------
    rank : int
        0 .. ``nranks - 1``.
    nranks : int
        The number of ranks, at least 1.
    unique_id : bytes or str
        The id every rank shares: 128 bytes, or 256 hex digits.
    device : int, optional
        The GPU of this rank; default the calling thread's current device.
    """

    _comm = None

    def __init__(self, rank: int, nranks: int, unique_id: _Id, device: int | None = None):
        fn = "Communicator"
        rank, nranks = _rank_size(fn, rank, nranks)
        uid = _as_id(fn, "unique_id", unique_id)
        if device is not None:
            device = _index(fn, "device", device)
            if device < 0:
                raise ValueError(f"{fn}: device={device} is not a device; devices are "
                                 "numbered from 0")
        lib = _library()
        self.rank, self.nranks = rank, nranks
        self.device = _get_device() if device is None else device
        comm = ctypes.c_void_p()
        with Device(self.device):
            _check(lib.ncclCommInitRank(ctypes.byref(comm), nranks,
                                        _UniqueId.from_buffer_copy(uid), rank),
                   f"ncclCommInitRank (rank {rank} of {nranks}, device {self.device})")
        self._comm = comm.value

    @classmethod
    def from_env(cls, *, device: int | None = None, timeout: float = 60.0) -> "Communicator":
        """This process's rank as a launcher describes it in the environment: ``RANK``
        and ``WORLD_SIZE`` (torchrun), else ``OMPI_COMM_WORLD_RANK`` and
        ``OMPI_COMM_WORLD_SIZE`` (Open MPI's mpirun); the unique id from
        ``GPUMEM_NCCL_ID`` (hex), else through the file ``GPUMEM_NCCL_ID_FILE`` names
        (:func:`unique_id_file`: rank 0 writes it, the others wait up to ``timeout``
        seconds).  ``device``: default ``LOCAL_RANK`` (torchrun) or
        ``OMPI_COMM_WORLD_LOCAL_RANK`` where set, else the current device."""
        fn = "Communicator.from_env"
        for r_name, s_name in (("RANK", "WORLD_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
            if r_name in os.environ or s_name in os.environ:
                break
        else:
            raise ValueError(f"{fn}: no rank in the environment: set RANK and WORLD_SIZE (as "
                             "torchrun does) or start under mpirun (OMPI_COMM_WORLD_RANK, "
                             "OMPI_COMM_WORLD_SIZE)")
        if r_name not in os.environ or s_name not in os.environ:
            raise ValueError(f"{fn}: {r_name} and {s_name} go together; only "
                             f"{r_name if r_name in os.environ else s_name} is set")
        rank, nranks = _rank_size(fn, _env_int(fn, r_name), _env_int(fn, s_name),
                                  names=(r_name, s_name))
        timeout = _timeout(fn, timeout)
        if device is None:
            local = next((v for v in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")
                          if v in os.environ), None)
            if local is not None:
                device = _env_int(fn, local)
        hex_id, id_file = os.environ.get("GPUMEM_NCCL_ID"), os.environ.get("GPUMEM_NCCL_ID_FILE")
        if hex_id:
            uid = _as_id(fn, "GPUMEM_NCCL_ID", hex_id)
        elif id_file:
            uid = _shared_id(fn, "GPUMEM_NCCL_ID_FILE", id_file, rank, timeout)
        else:
            raise ValueError(f"{fn}: no unique id: set GPUMEM_NCCL_ID (hex, "
                             "nccl.unique_id().hex()) or GPUMEM_NCCL_ID_FILE (a file rank 0 "
                             "writes and the others read)")
        return cls(rank, nranks, uid, device=device)

    def run(self, collective: str, send: DeviceArray, recv: DeviceArray, *,
            root: int = 0) -> None:
        """Queue this rank's part of one ``collective`` (:data:`COLLECTIVES`) of float32
        sums: ``send`` and ``recv`` on this rank's device.  all_reduce and broadcast:
        equal sizes; all_gather: recv ``nranks`` times send; reduce_scatter: send that
        times recv; broadcast from rank ``root``.  Every rank must make the same call.
        Returns once queued (the stream orders the rest)."""
        fn = "Communicator.run"
        root = _check_call(fn, collective, root, self.nranks)
        if self._comm is None:
            raise ValueError(f"{fn}: the communicator is closed")
        _check_pair(fn, collective, send, recv, self.device, self.nranks)
        with Device(self.device):
            _enqueue(_library(), collective, send, recv, self._comm, root)

    def close(self) -> None:
        """Destroy the communicator (``ncclCommDestroy``); every rank closes its own."""
        if self._comm is not None:
            comm, self._comm = self._comm, None
            _check(_library().ncclCommDestroy(ctypes.c_void_p(comm)), "ncclCommDestroy")

    def __repr__(self) -> str:
        state = "closed" if self._comm is None else "open"
        return (f"gpumem.runtime.nccl.Communicator(rank={getattr(self, 'rank', None)}, "
                f"nranks={getattr(self, 'nranks', None)}, device={getattr(self, 'device', None)}, "
                f"{state})")
