"""Shared helpers of the benchmarks: device name/date stamp, anchors, output."""
from __future__ import annotations

import datetime
import json
import os
import statistics
import time

import gpumem as gm
from gpumem.runtime.measure import time_calls


def stamp() -> dict:
    d = gm.device()
    return {"gpu": d.name, "cc": "%d.%d" % d.compute_capability,
            "driver": "%d.%d" % d.driver_version, "runtime": "%d.%d" % d.runtime_version,
            "date": datetime.date.today().isoformat()}


def cupy_or_none():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def wall(fn, repeat: int, warmup: int) -> list[float]:
    """Seconds of each timed ``fn()`` on the host clock (``warmup`` untimed calls first);
    what it returns is freed after the clock stops (device memory back to its pool)."""
    for _ in range(warmup):
        r = fn()
        del r
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        out.append(time.perf_counter() - t0)
        del r
    return out


def time_cupy(fn, repeat: int, warmup: int = 3) -> float:
    """Median ms of ``fn()`` (a CuPy call: the anchor) between CUDA events, timed like
    gpumem (:func:`gpumem.runtime.measure.time_calls`; the ``warmup`` calls first are
    timed too and dropped).  The events go on the legacy default stream, the stream
    CuPy launches on unless told otherwise (no gpumem stream is current here)."""
    return time_calls(fn, repeat=repeat, warmup=warmup)["median_ms"]


def memcpy_d2d(dst: gm.DeviceArray, src: gm.DeviceArray, repeat: int = 50,
               warmup: int = 5) -> dict:
    """The anchor of every bandwidth benchmark: ``cudaMemcpy`` device to device of ``src``
    into ``dst`` (same size), between CUDA events each call (``gpumem._core._time_memcpy``),
    ``warmup`` untimed calls first; GB/s counts read + write."""
    gm._core._time_memcpy(dst, src, warmup)
    samples = gm._core._time_memcpy(dst, src, repeat)
    med = statistics.median(samples)
    return {"bytes_copied": src.nbytes, "median_ms": med, "min_ms": min(samples),
            "GB/s": 2 * src.nbytes / (med * 1e-3) / 1e9, "repeat": repeat,
            "timed_with": "cudaMemcpy between CUDA events (gpumem._core._time_memcpy)"}


def write(out_dir: str, name: str, payload: dict, table: gm.Table, notes: list[str]) -> None:
    with open(os.path.join(out_dir, f"bench_{name}.json"), "w") as f:
        json.dump(payload, f, indent=1, default=str)
    s = payload["stamp"]
    md = [f"### {table.title}", "",
          f"{s['gpu']} (cc {s['cc']}, driver {s['driver']}, CUDA runtime {s['runtime']}), {s['date']}", "",
          table.to_markdown(), ""] + [f"- {n}" for n in notes] + [""]
    with open(os.path.join(out_dir, f"bench_{name}.md"), "w") as f:
        f.write("\n".join(md))
