"""A fake GPU for the measured path of ``gpumem report`` (headlines, memory card), on any
machine: the runtime's device, bench, profile and allocations stood in for, and every
lesson's measuring functions replaced by what the lesson declares
(:attr:`gpumem.tools.lesson.Lesson.stand_ins`), so this file names no lesson.

>>> gpu = FakeGPU(monkeypatch)                 # every lesson's stand-ins, in place
>>> rows = report.headlines(measure=True, quick=True)
"""
from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Callable, Mapping

import numpy as np

import gpumem as gm


class FakeResult:
    """What :func:`gpumem.bench` returns, from a set time."""

    def __init__(self, ms: float, nbytes: float, flops: float):
        self.median_ms = self.min_ms = self.max_ms = ms
        self.gbps = nbytes / (ms * 1e-3) / 1e9
        self.dram_bytes = None                  # no counters=True stand-in
        self.gflops = flops / (ms * 1e-3) / 1e9


def _selector(select: str | Callable | None) -> Callable:
    if callable(select):
        return select
    return lambda args, kw: kw.get(select)


class FakeKernel:
    """A kernel that computes nothing: ``result(*args, **kw)`` (default: its first
    argument) comes back; the fake's bench times it at ``ms[select(args, kw)]`` for
    ``moved(args, kw)`` bytes (default: 8 per element of the first argument) and
    ``flops(args, kw)``; a launch inside ``gpumem.profile`` reads ``counters[...]``."""

    def __init__(self, gpu: "FakeGPU", family: str, ms: Mapping, *, select="variant",
                 counters: Mapping | None = None, moved: Callable | None = None,
                 flops: Callable | None = None, result: Callable | None = None):
        self.gpu, self.family, self.ms, self.counters = gpu, family, dict(ms), dict(counters or {})
        self.select = _selector(select)
        self.moved = moved or (lambda args, kw: 8.0 * np.size(args[0]))
        self.flops = flops or (lambda args, kw: 0.0)
        self.result = result or (lambda *args, **kw: args[0])
        self.__name__ = family

    def __call__(self, *args, **kw):
        if self.gpu.profiling is not None:
            self.gpu.profiling.append(types.SimpleNamespace(
                metrics=self.counters[self.select(args, kw)]))
        return self.result(*args, **kw)

    def time(self, args: tuple, kw: dict) -> FakeResult:
        return FakeResult(self.ms[self.select(args, kw)], self.moved(args, kw),
                          self.flops(args, kw))


#: The modules of the face that import a lesson's names (``from .lessons.x import y``):
#: a stand-in replaces the name there too.
_FACE = ("gpumem", "gpumem.report", "gpumem.experiments")


class FakeGPU:
    """Just enough of a GPU for the report's measured path: the runtime's device (132 SMs,
    50 MiB of L2, 3,352 GB/s), bench with the kernels' set times, counters, allocations
    that are NumPy arrays, and every lesson's stand-ins
    (:attr:`~gpumem.tools.lesson.Lesson.stand_ins`, ``lessons``: only these)."""

    #: The fake's streaming copy: ms for 8 bytes per element (device_copy; a lesson's copy).
    COPY_MS = 1.0
    #: The fake's time of any call timed between events (time_calls: a library's kernel).
    CALL_MS = 0.5

    #: what gpumem.runtime.nvml.conditions() says where NVML is missing
    NO_NVML = {**dict.fromkeys(gm.runtime.nvml.CONDITIONS), "nvml": False}

    def __init__(self, monkeypatch, name: str = "Fake GPU", lessons=None):
        self.profiling = None
        self.device = types.SimpleNamespace(
            name=name, multiprocessors=132, l2_cache_size=50 * 2**20,
            theoretical_bandwidth_gbps=3352.0, compute_capability=(9, 0),
            shared_memory_per_multiprocessor=228 * 1024, total_memory=80 * 2**30,
            clock_khz=1_980_000, registers_per_multiprocessor=65536)
        monkeypatch.setattr(gm.runtime, "to_device", lambda a: a)
        monkeypatch.setattr(gm.runtime, "empty", lambda shape: np.empty(shape, np.float32))
        monkeypatch.setattr(gm.runtime, "bench", self.bench)
        monkeypatch.setattr(gm.runtime, "profiler_available", lambda: True)
        monkeypatch.setattr(gm.runtime, "profile", self.profile)
        monkeypatch.setattr(gm.runtime, "device", lambda: self.device)
        monkeypatch.setattr(gm.runtime, "memory_info", lambda: {"pool_reserved": 64 << 20})
        # no NVML on the fake GPU (on a real machine the real one would answer for it)
        monkeypatch.setattr(gm.runtime.nvml, "available", lambda: False)
        monkeypatch.setattr(gm.runtime.nvml, "conditions",
                            lambda device=None: dict(self.NO_NVML))
        self.stood_in: dict[str, list[str]] = {}
        for d in gm.lessons.declarations():
            if d.stand_ins is None or (lessons is not None and d.name not in lessons):
                continue
            module = sys.modules[f"{gm.lessons.__name__}.{d.name}"]
            for attr, new in d.stand_ins(self).items():
                old = getattr(module, attr)         # a stand-in replaces a name that exists
                monkeypatch.setattr(module, attr, new)
                for face in _FACE:
                    there = getattr(sys.modules.get(face), attr, None)
                    if there is not None and old in (there, getattr(there, "__wrapped__", None)):
                        monkeypatch.setattr(sys.modules[face], attr, new)
                self.stood_in.setdefault(d.name, []).append(attr)

    def kernel(self, family: str, ms: Mapping, **kw: Any) -> FakeKernel:
        """A kernel of ``family`` with set times (see :class:`FakeKernel`)."""
        return FakeKernel(self, family, ms, **kw)

    @staticmethod
    def record(**fields: Any) -> types.SimpleNamespace:
        """A result with these attributes (what a measuring function returns)."""
        return types.SimpleNamespace(**fields)

    def device_copy(self, dst, src, repeat, warmup) -> dict:
        """:func:`gpumem.runtime.measure.device_copy` at :data:`COPY_MS`."""
        return {"GB/s": 8.0 * np.size(src) / (self.COPY_MS * 1e-3) / 1e9,
                "median_ms": self.COPY_MS}

    def time_calls(self, fn, *, repeat, warmup) -> dict:
        """:func:`gpumem.runtime.measure.time_calls`: ``fn()`` called once, at :data:`CALL_MS`."""
        assert callable(fn) and repeat >= 1 and warmup >= 0
        fn()
        return {"median_ms": self.CALL_MS, "min_ms": self.CALL_MS, "max_ms": self.CALL_MS,
                "samples_ms": [self.CALL_MS] * repeat}

    def bench(self, fn, *args, repeat, warmup, **kw) -> FakeResult:
        assert repeat >= 1 and warmup >= 0
        assert isinstance(fn, FakeKernel), f"bench of {fn!r}: no stand-in declared for it"
        return fn.time(args, kw)

    @contextlib.contextmanager
    def profile(self, metrics):
        recs: list = []
        self.profiling = recs
        try:
            yield types.SimpleNamespace(records=recs)
        finally:
            self.profiling = None


def fake_cupy(noise: float = 0.0) -> types.ModuleType:
    """A CuPy whose matrix product is NumPy's (plus ``noise`` relative error); the fake GPU's
    ``time_calls`` times it (:data:`FakeGPU.CALL_MS`)."""
    cp = types.ModuleType("cupy")
    cp.asarray = np.asarray
    cp.asnumpy = np.asarray

    def matmul(a, b, out=None):
        c = (a @ b) * np.float32(1 + noise)
        if out is not None:
            out[...] = c
            return out
        return c
    cp.matmul = matmul
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    return cp


def first_with(rows, key: str) -> dict:
    """The first report row with ``key`` among its model or measured numbers."""
    return next(r for r in rows if key in r["model"] or key in r["measured"])
