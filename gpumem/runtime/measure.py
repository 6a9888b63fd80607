"""The measurement anchors every layer above shares: the device copy
(``cudaMemcpy`` device to device between CUDA events) and the L2 flush, both from
the C extension's one measurement unit.  Runtime layer: imports ``_core`` only."""
from __future__ import annotations

import statistics

from .. import _core

__all__ = ["device_copy", "l2_flush"]


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


def l2_flush() -> None:
    """Evict L2: read a buffer of twice its size (the profiler and ``bench(l2="cold")``
    do this before a measurement)."""
    _core._l2_flush()
