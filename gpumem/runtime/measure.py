"""The measurement anchors every layer above shares: the device copy
(``cudaMemcpy`` device to device between CUDA events), any callable between CUDA
events (:func:`time_calls`: cuBLAS through CuPy, the benchmarks' anchors) and the L2
flush, all from the C extension's one measurement unit (its timer).  Runtime layer:
imports ``_core`` only."""
from __future__ import annotations

import statistics
from typing import Callable

from .. import _core

__all__ = ["device_copy", "l2_flush", "time_calls"]


def device_copy(dst, src, *, repeat: int = 20, warmup: int = 3) -> dict:
    """``cudaMemcpy`` device to device of DeviceArray ``src`` into ``dst`` (the same
    number of bytes), timed between CUDA events each call after ``warmup`` untimed
    ones: ``{"median_ms", "min_ms", "samples_ms", "GB/s"}``, GB/s counting the bytes
    read and written (twice ``src.nbytes``).  The streaming ceiling that memory-bound
    kernels are judged against."""
    if warmup:
        _core._time_memcpy(dst, src, warmup)
    samples = list(_core._time_memcpy(dst, src, repeat))
    med = statistics.median(samples)
    return {"median_ms": med, "min_ms": min(samples), "samples_ms": samples,
            "GB/s": 2 * src.nbytes / (med * 1e-3) / 1e9 if med > 0 else float("nan")}


def time_calls(fn: Callable[[], object], *, repeat: int = 20, warmup: int = 3) -> dict:
    """``fn()`` timed between two CUDA events each call, ``warmup`` timed calls first
    whose times are dropped: ``{"median_ms", "min_ms", "max_ms", "samples_ms"}``.

    The events are recorded on the stream a gpumem call of the current device runs on:
    the thread's current stream (``with gpumem.Stream():``), else the device's legacy
    default stream -- the stream CuPy and PyTorch launch on unless told otherwise, so
    the events bracket work they queue from ``fn``.  Each call waits for its end event
    before the next starts; what ``fn`` returns is released after that event is
    recorded.  ``TypeError`` for an ``fn`` that is not callable, ``ValueError`` for
    ``repeat`` outside 1..100000 or ``warmup`` outside 0..100000, both before the
    device is touched."""
    samples = list(_core._time_calls(fn, repeat, warmup))
    return {"median_ms": statistics.median(samples), "min_ms": min(samples),
            "max_ms": max(samples), "samples_ms": samples}


def l2_flush() -> None:
    """Evict L2: read a buffer of twice its size (the profiler and ``bench(l2="cold")``
    do this before a measurement)."""
    _core._l2_flush()
