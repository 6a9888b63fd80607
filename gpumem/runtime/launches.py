"""Kernel variants, launch records and timing: :func:`variants`, :func:`record`,
:func:`last_record` and :func:`bench`.  Runtime layer: imports ``_core`` and the
runtime modules below it (args, table, measure, counters)."""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from .. import _core
from .args import MAX_REPEAT, _index, _validate
from .devices import Device
from .measure import l2_flush
from .counters import profile
from .table import Listing

__all__ = ["Variant", "variants", "last_record", "record", "BenchResult", "BENCH_COUNTERS",
           "bench"]


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
        ``"register_pressure"`` ...).

    Returns
    -------
    Listing of Variant
        A list, shown as a table (in a terminal and in Jupyter).
    """
    if family is not None and not isinstance(family, str):
        raise TypeError(f"variants: family must be a str, not {type(family).__name__}")
    title = f"variants of {family}" if family else "gpumem's kernel variants"
    return Listing((Variant(*v) for v in _core.variants(family)), title=title)


def last_record() -> _core.LaunchRecord | None:
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
    # the GPU of the call: its first DeviceArray's (so the L2 flush and the counters are that
    # GPU's too), else the current one; ndarrays go there once, so only the kernel is timed
    on = next((a.device for a in (*args, *kw.values()) if isinstance(a, _core.DeviceArray)),
              None)
    with contextlib.nullcontext() if on is None else Device(on):
        try:
            args = tuple(_core.to_device(a) if isinstance(a, np.ndarray) else a for a in args)
            kw = {k: (_core.to_device(v) if isinstance(v, np.ndarray) else v)
                  for k, v in kw.items()}
        except (TypeError, ValueError) as e:
            raise type(e)(f"bench: an argument for fn cannot go to the device: {e}") from None
        return _bench(fn, args, kw, repeat, warmup, l2, counters)


def _bench(fn: Callable, args: tuple, kw: dict, repeat: int, warmup: int, l2: str,
           counters: bool) -> BenchResult:
    """bench's timed part, on the current GPU with its operands there."""
    for _ in range(warmup):
        fn(*args, **kw)
    samples = []
    last = None
    for _ in range(repeat):
        if l2 == "cold":
            l2_flush()
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
