"""gpumem: explore and measure the GPU memory hierarchy from NumPy.

Kernels take NumPy arrays (and return NumPy arrays) or :class:`DeviceArray`
(and return DeviceArray, with no host copies).  Every launch is timed with
CUDA events and leaves a :class:`LaunchRecord`; :func:`bench` repeats a call
and reports median time, GB/s and GFLOP/s.  :mod:`gpumem.model` predicts the
memory traffic of every kernel with no GPU at all.
"""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np


def _no_extension(error: ImportError) -> ImportError:
    """Why ``gpumem._core`` cannot be imported, as NumPy says it: a source tree without
    its built extension (shadowing the installed gpumem), or an install missing it."""
    import importlib.machinery
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    built = [f for f in os.listdir(here) if f.startswith("_core.")
             and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    if built:      # it is there but does not load (a missing library, another Python ...)
        return error
    so = "gpumem/_core" + importlib.machinery.EXTENSION_SUFFIXES[0]
    if any(os.path.exists(os.path.join(root, f)) for f in ("setup.py", "pyproject.toml")):
        return ImportError(
            f"you are importing gpumem from its source tree {root}, which has no built "
            f"extension ({so}); run Python from another folder to use the installed gpumem, "
            "or build in place with `pip install -e .`")
    return ImportError(f"gpumem's C extension ({so}) is missing from {here}; reinstall gpumem "
                       "(pip install --force-reinstall gpumem)")


try:
    from . import _core
except ImportError as _e:
    raise _no_extension(_e) from _e
from ._core import (
    CudaError,
    CudaUnavailableError,
    DeviceArray,
    DeviceMemoryError,
    LaunchRecord,
    empty,
    from_dlpack,
    is_available,
    memory_info,
    pinned_empty,
    to_device,
)
from ._names import MAX_REPEAT, _family, _index, _moved, _validate
from ._table import Listing, Table
from .access import copy, read_offset, vec_add, write_offset
from .introspect import (KernelAttributes, Occupancy, block_size_sweep, compiler_report,
                         kernel_attributes, kernel_occupancy)
from .ladder import bandwidth, latency
from .layout import distance, strided_read, struct_update
from .matmul import matmul, matmul_model_points, matmul_reference
from .profile import ProfilerError, metrics, profile, profiler_available
from .spaces import divergence, lifetimes, register_pressure, thread_histogram
from .stencil import constant_broadcast, stencil_1d
from .roofline import plot_roofline, roofline
from .transfer import pinned_like, read_sum, scale
from .transpose import shared_stride, transpose

__version__ = "0.1.0"

__all__ = [
    # the core: errors, device memory, launch records, timing
    "CudaError", "CudaUnavailableError", "DeviceMemoryError", "DeviceArray", "LaunchRecord",
    "Table", "BenchResult", "DeviceInfo", "Variant", "bench", "device", "empty", "is_available",
    "last_record", "memory_info", "record", "to_device", "variants",
    # host memory and interop
    "from_dlpack", "pinned_empty", "pinned_like",
    # matmul
    "matmul", "matmul_reference", "matmul_model_points",
    # the roofline
    "roofline", "plot_roofline",
    # access
    "vec_add", "copy", "read_offset", "write_offset",
    # layout
    "distance", "strided_read", "struct_update",
    # stencil
    "constant_broadcast", "stencil_1d",
    # spaces
    "divergence", "lifetimes", "register_pressure", "thread_histogram",
    # ladder
    "bandwidth", "latency",
    # transpose
    "shared_stride", "transpose",
    # transfer
    "read_sum", "scale",
    # introspect
    "KernelAttributes", "Occupancy", "block_size_sweep", "compiler_report", "kernel_attributes",
    "kernel_occupancy",
    # hardware counters
    "ProfilerError", "metrics", "profile", "profiler_available",
]

#: Old names of the package: name -> (module, name) now.  Each warns once used.
_MOVED = {"occupancy": ("gpumem.introspect", "kernel_occupancy")}

ArrayLike = "np.ndarray | DeviceArray"


# ---- device --------------------------------------------------------------
@dataclass(frozen=True)
class DeviceInfo:
    """Properties and limits of the GPU gpumem runs on (from the CUDA runtime)."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    warp_size: int
    max_threads_per_multiprocessor: int
    max_threads_per_block: int
    max_blocks_per_multiprocessor: int
    registers_per_multiprocessor: int
    registers_per_block: int
    shared_memory_per_multiprocessor: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    constant_memory: int
    l2_cache_size: int
    memory_clock_khz: int
    memory_bus_width: int
    theoretical_bandwidth_gbps: float
    total_memory: int
    driver_version: tuple[int, int]
    runtime_version: tuple[int, int]
    clock_khz: int = 0  #: the SMs' peak clock (cudaDevAttrClockRate)

    @property
    def fp32_lanes_per_multiprocessor(self) -> int | None:
        """FP32 units per SM for this compute capability (None where unknown)."""
        from .roofline import FP32_LANES
        return FP32_LANES.get(tuple(self.compute_capability))

    @property
    def peak_fp32_gflops(self) -> float | None:
        """SMs x FP32 lanes x 2 (an FMA) x the peak clock, in GFLOP/s."""
        lanes = self.fp32_lanes_per_multiprocessor
        if not lanes or not self.clock_khz:
            return None
        return self.multiprocessors * lanes * 2 * self.clock_khz / 1e6

    def summary(self) -> str:
        """A few lines for people."""
        cc = "%d.%d" % self.compute_capability
        return "\n".join([
            f"{self.name} (sm_{cc.replace('.', '')}, compute capability {cc})",
            f"  {self.multiprocessors} SMs, warp {self.warp_size}, "
            f"{self.max_threads_per_multiprocessor} threads/SM, {self.max_threads_per_block} threads/block",
            f"  registers: {self.registers_per_multiprocessor // 1024} Ki/SM, "
            f"{self.registers_per_block // 1024} Ki/block",
            f"  shared memory: {self.shared_memory_per_multiprocessor // 1024} KiB/SM, "
            f"{self.shared_memory_per_block // 1024} KiB/block "
            f"({self.shared_memory_per_block_optin // 1024} KiB opt-in)",
            f"  constant memory {self.constant_memory // 1024} KiB, L2 {self.l2_cache_size / 2**20:.0f} MiB",
            f"  device memory {self.total_memory / 2**30:.1f} GiB, {self.memory_bus_width}-bit at "
            f"{self.memory_clock_khz / 1000:.0f} MHz: {self.theoretical_bandwidth_gbps:.0f} GB/s theoretical",
            f"  FP32 peak {self.peak_fp32_gflops or 0:,.0f} GFLOP/s at {self.clock_khz / 1000:.0f} MHz",
            f"  driver {self.driver_version[0]}.{self.driver_version[1]}, "
            f"runtime {self.runtime_version[0]}.{self.runtime_version[1]}",
        ])


def device() -> DeviceInfo:
    """The current GPU's properties and limits.

    Raises
    ------
    CudaUnavailableError
        When no usable GPU or driver is present.
    """
    return DeviceInfo(**_core.device())


# ---- variants ------------------------------------------------------------
class Variant(NamedTuple):
    """A named kernel variant: the one memory idea it shows, and what it must move.

    ``select`` is the variant's value in the kernels' enums (cuda/gm_kernels.h):
    the first template argument of its kernel (for register_pressure, the
    ``__launch_bounds__`` minimum blocks per SM).
    """

    family: str
    name: str
    idea: str
    bytes: str
    flops: str
    select: int = 0


def variants(family: str | None = None) -> Listing:
    """The named variants of one kernel family (or of all), e.g. ``variants("matmul")``.

    Parameters
    ----------
    family : str, optional
        A family as the Python function is named (``"stencil_1d"``,
        ``"register_pressure"`` ...); an old name (:data:`gpumem._names.FAMILY_ALIASES`)
        warns with a DeprecationWarning and maps.

    Returns
    -------
    Listing of Variant
        A list, shown as a table (in a terminal and in Jupyter).
    """
    family = _family("variants", family)
    if family is not None and not isinstance(family, str):
        raise TypeError(f"variants: family must be a str, not {type(family).__name__}")
    title = f"variants of {family}" if family else "gpumem's kernel variants"
    return Listing((Variant(*v) for v in _core.variants(family)), title=title)


# ---- launch records ------------------------------------------------------
def last_record() -> LaunchRecord | None:
    """The :class:`LaunchRecord` of the newest gpumem launch, or None.

    Inside a ``gpumem.profile`` block its ``metrics`` are complete: a batch of
    one-pass launches still waiting for CUPTI's decode is decoded first.
    """
    _core._profile_sync()
    return _core.last_record()


@contextlib.contextmanager
def record() -> Iterator[list]:
    """Collect the LaunchRecord of every gpumem launch inside the block.

    >>> with gpumem.record() as launches:
    ...     gpumem.matmul(a, b)
    >>> launches[0].ms
    """
    sink: list = []
    _core._sinks.append(sink)
    try:
        yield sink
    finally:
        for i in range(len(_core._sinks) - 1, -1, -1):
            if _core._sinks[i] is sink:
                del _core._sinks[i]
                break


@dataclass(frozen=True)
class BenchResult:
    """Timing of repeated calls: kernel time from CUDA events (no host transfers)."""

    kernel: str
    variant: str
    params: dict
    median_ms: float
    min_ms: float
    max_ms: float
    gbps: float
    gflops: float
    repeat: int
    warmup: int
    samples_ms: tuple = field(repr=False)
    l2: str = "warm"   #: "warm": timed as called; "cold": L2 evicted before every timed call
    #: with ``counters=True``: bytes the hardware counted in device memory (read +
    #: written) and through L2 for one call, and those bytes over ``median_ms``
    dram_bytes: float | None = None
    dram_gbps: float | None = None
    l2_bytes: float | None = None
    l2_gbps: float | None = None

    def as_row(self) -> dict[str, Any]:
        row = {"kernel": self.kernel, "variant": self.variant, **self.params,
               "median_ms": self.median_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
               "GB/s": self.gbps, "GFLOP/s": self.gflops, "l2": self.l2}
        if self.dram_bytes is not None:
            row.update({"DRAM bytes": self.dram_bytes, "DRAM GB/s": self.dram_gbps,
                        "L2 bytes": self.l2_bytes, "L2 GB/s": self.l2_gbps})
        return row


#: What ``bench(..., counters=True)`` reads: device memory read and written, and the
#: sectors (32 bytes) through L2's tag stage (reads and writes, hits and misses).
BENCH_COUNTERS = ("dram_read_bytes", "dram_write_bytes", "lts__t_sectors.sum")


def bench(fn: Callable, *args, repeat: int = 50, warmup: int = 5, l2: str = "warm",
          counters: bool = False, **kw) -> BenchResult:
    """Time ``fn(*args, **kw)``: ``warmup`` untimed calls, then ``repeat`` timed ones.

    ndarray arguments are copied to the device once first, so the numbers are
    kernel time only (CUDA events around each launch).  GB/s and GFLOP/s come
    from the bytes and FLOPs each variant declares (``gpumem.variants()``).

    ``l2="warm"`` (the default) times each call as it comes: data the previous
    call left in L2 is still there.  ``l2="cold"`` evicts L2 before every timed
    call -- a kernel reads a fresh buffer of twice the L2's size,
    outside the timed events -- so each call starts from device memory.  The
    result's ``l2`` says which.

    ``counters=True`` profiles one more call after the timed ones
    (:func:`gpumem.profile` with :data:`BENCH_COUNTERS`) and reports the bytes the
    hardware counted -- in device memory (``dram_bytes``, read + written) and
    through L2 (``l2_bytes``) -- and those bytes over the median time
    (``dram_gbps``, ``l2_gbps``) beside the declared-bytes ``gbps``: a kernel whose
    declared bytes are wrong, or whose data comes from L2, shows here.  The
    profiled call starts with L2 flushed (as ``ncu`` does).  It needs the counters
    (:class:`gpumem.ProfilerError` says why they cannot be read).
    """
    if not callable(fn):
        raise TypeError("bench: fn must be callable, e.g. gpumem.matmul")
    if not isinstance(l2, str):
        raise TypeError(f"bench: l2 must be a str, not {type(l2).__name__}")
    if l2 not in ("warm", "cold"):
        raise ValueError(f"bench: l2={l2!r} is unknown; allowed: 'warm', 'cold'")
    if not isinstance(counters, (bool, np.bool_)):
        raise TypeError(f"bench: counters must be True or False, not {type(counters).__name__}")
    repeat, warmup = _index("bench", "repeat", repeat), _index("bench", "warmup", warmup)
    if not 1 <= repeat <= MAX_REPEAT:
        raise ValueError(f"bench: repeat={repeat} is not allowed; repeat must be "
                         f"1..{MAX_REPEAT}")
    if not 0 <= warmup <= MAX_REPEAT:
        raise ValueError(f"bench: warmup={warmup} is not allowed; warmup must be "
                         f"0..{MAX_REPEAT}")
    _validate(fn, args, kw)           # the kernel's own errors, before anything is uploaded
    try:          # ndarrays go to the device once, so only the kernel is timed
        args = tuple(to_device(a) if isinstance(a, np.ndarray) else a for a in args)
        kw = {k: (to_device(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    except (TypeError, ValueError) as e:
        raise type(e)(f"bench: an argument for fn cannot go to the device: {e}") from None
    for _ in range(warmup):
        fn(*args, **kw)
    samples = []
    last = None
    for _ in range(repeat):
        if l2 == "cold":
            _core._l2_flush()
        with record() as launches:
            fn(*args, **kw)
        if not launches:
            raise ValueError("bench: fn launched no gpumem kernel (empty input?)")
        samples.append(sum(r.ms for r in launches))
        last = launches
    med = statistics.median(samples)
    nbytes = sum(r.bytes for r in last)
    flops = sum(r.flops for r in last)
    first = last[0]
    measured: dict[str, float | None] = {}
    if counters:
        from .profile import profile
        with profile(list(BENCH_COUNTERS)) as p:
            fn(*args, **kw)
        dram = sum(r.metrics["dram_read_bytes"] + r.metrics["dram_write_bytes"]
                   for r in p.records)
        l2_bytes = 32 * sum(r.metrics["lts__t_sectors.sum"] for r in p.records)
        per_s = 1.0 / (med * 1e-3) / 1e9 if med > 0 else float("nan")
        measured = {"dram_bytes": float(dram), "dram_gbps": dram * per_s,
                    "l2_bytes": float(l2_bytes), "l2_gbps": l2_bytes * per_s}
    return BenchResult(first.kernel, first.variant, dict(first.params), med, min(samples),
                       max(samples), nbytes / (med * 1e-3) / 1e9 if med > 0 else float("nan"),
                       flops / (med * 1e-3) / 1e9 if med > 0 else float("nan"), repeat, warmup,
                       tuple(samples), l2, **measured)


#: Submodules imported on first use (``gpumem.model``, ``gpumem.access`` ...).
_SUBMODULES = ("model", "experiments", "matmul", "access", "layout", "stencil", "spaces",
               "introspect", "profile", "ladder")


def __dir__() -> list[str]:
    # the public API, not the modules this file happens to import (np, Any ...)
    return sorted(set(__all__) | set(_SUBMODULES) | {"__version__"})


def __getattr__(name: str):
    # gpumem.model and gpumem.experiments without importing them up front
    if name in ("model", "experiments"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    return _moved(__name__, name, _MOVED)
