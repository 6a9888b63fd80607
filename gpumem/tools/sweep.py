"""The machinery every lesson's sweeps share (infrastructure, not a lesson).

Argument checks that run before anything touches the GPU (:func:`_int`,
:func:`_ints`, :func:`_choices` for a sweep's own rules; :func:`_each` for values a sweep
hands to a kernel, by the rule of the kernel's C argument table; :func:`_common`), and :func:`_run`, which
turns a list of :class:`_Point` into a :class:`gpumem.Table`: per point the
kernel time (median of ``repeat`` timed launches through :func:`gpumem.bench`),
the bandwidth of the useful bytes and the efficiency columns -- measured by the
profiler where its counters can be read (one extra profiled launch per row,
after the timing), else :func:`gpumem.model.predict`'s; without a GPU the time
columns are ``None`` and the sweep runs on the model alone.

The GPU is reached through the ``gpumem`` package's names (``gpumem.bench``,
``gpumem.to_device`` ...) looked up at call time.
"""
from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .. import runtime

from ..runtime.args import MAX_REPEAT, _checked, _flag, _index, arg_row
from ..runtime.table import Table

#: The counters every access sweep reports (nvprof names; gpumem.profile maps them).
METRICS = ("gld_efficiency", "gld_transactions", "gld_requests",
           "gst_efficiency", "gst_transactions", "gst_requests")


# ---- argument checks (before anything runs) -------------------------------------------
def _int(fn: str, name: str, v: Any, lo: int, hi: int | None = None) -> int:
    """``v`` (anything with ``__index__``, not a bool) as an int in ``lo..hi``."""
    v = _index(fn, name, v)
    if v < lo or (hi is not None and v > hi):
        # a short range in full ("1..1024"); of a wide one, the end that was crossed
        wide = hi is None or hi - lo > 2**20
        allowed = f"{lo}..{hi}" if not wide else f">= {lo}" if v < lo else f"<= {hi}"
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be {allowed}")
    return v


#: The most elements a sweep's arrays may have: their index is a 32-bit int.
MAX_N = 2**31 - 1

#: The most values one argument of a sweep may list (a sweep of more runs for days).
MAX_VALUES = 100_000


def _listed(fn: str, name: str, vs: Any, one: tuple, what: str, whats: str) -> list:
    """``vs`` as a non-empty list of at most :data:`MAX_VALUES`; a single value of a type
    in ``one`` (or any single integer: numpy's, a 0-d array) becomes ``[vs]``."""
    single = (not isinstance(vs, np.ndarray) and hasattr(vs, "__index__")) or \
        (isinstance(vs, np.ndarray) and vs.ndim == 0)
    if isinstance(vs, one) or single:
        vs = [vs]
    try:
        vs = list(itertools.islice(vs, MAX_VALUES + 1))
    except TypeError:
        raise TypeError(f"{fn}: {name} must be {what} or a sequence of {whats}, "
                        f"not {type(vs).__name__}") from None
    if not vs:
        raise ValueError(f"{fn}: {name} is empty; give at least one value")
    if len(vs) > MAX_VALUES:
        raise ValueError(f"{fn}: {name} lists more than {MAX_VALUES:,} values; sweep fewer")
    return vs


def _str(fn: str, name: str, v: Any) -> str:
    """``v``, which must be one str (TypeError naming ``fn`` and ``name`` otherwise)."""
    if not isinstance(v, str):
        raise TypeError(f"{fn}: {name} must be a str, not {type(v).__name__}")
    return v


def _ints(fn: str, name: str, vs: Any, lo: int, hi: int | None = None) -> list[int]:
    vs = _listed(fn, name, vs, (int, np.integer), "an int", "ints")
    return [_int(fn, name, v, lo, hi) for v in vs]


def _choices(fn: str, name: str, vs: Any, allowed: Sequence[str],
             each: str | None = None) -> list[str]:
    """``vs`` (one str or a sequence of them) as a list of names in ``allowed``.  ``each``
    names one value where the argument's name is a plural (``caches``: each a ``cache``)."""
    given = vs
    vs = _listed(fn, name, vs, (str,), "a str", "str")
    where = f"{name}={given!r}: " if each else ""
    for v in vs:
        if not isinstance(v, str):
            raise TypeError(f"{fn}: {name} must be a str or a sequence of str, "
                            f"not {type(v).__name__}")
        if v not in allowed:
            raise ValueError(f"{fn}: {where}{each or name}={v!r} is unknown; allowed: "
                             + ", ".join(repr(a) for a in allowed))
    return vs


def _each(fn: str, name: str, vs: Any, family: str, arg: str | None = None) -> list:
    """``vs`` (one value or a sequence) as a list, each value checked by the row ``arg``
    (default ``name``) of ``family``'s C argument table: the values a sweep hands to that
    kernel, refused before anything runs, in the C side's words (ints: naming ``name``;
    choices: ``name`` and each ``arg``, as :func:`_choices`)."""
    arg = arg or name
    row = arg_row(family, arg)
    if row["choices"] is not None:
        return _choices(fn, name, vs, row["choices"], each=arg if arg != name else None)
    vs = _listed(fn, name, vs, (int, np.integer), "an int", "ints")
    return [_checked(fn, family, arg, v, name) for v in vs]


def _metrics(fn: str, metrics: Any) -> tuple[str, ...]:
    """A sweep's ``metrics=``: None (:data:`METRICS`) or known metric names
    (:func:`gpumem.metrics`, or raw Nsight Compute names), checked up front."""
    if metrics is None:
        return METRICS
    from ..runtime.counters import _check_names

    return tuple(_check_names(metrics, fn))


def _common(fn: str, repeat: Any, progress: Any, metrics: Any) -> tuple[int, bool, tuple]:
    """A sweep's ``repeat`` (>= 1), ``progress`` (a bool) and ``metrics``, checked."""
    return _repeat(fn, repeat), _flag(fn, "progress", progress), _metrics(fn, metrics)


def _repeat(fn: str, repeat: Any) -> int:
    """A sweep's ``repeat``: timed launches per point, 1..:data:`MAX_REPEAT`."""
    return _int(fn, "repeat", repeat, 1, MAX_REPEAT)


def _need_gpu() -> None:
    """Raise CudaUnavailableError (saying why) without a usable GPU: a sweep that can
    only measure says so before it makes its data."""
    runtime.device()


# ---- where the numbers come from -------------------------------------------------------
def _model_predict() -> Callable[..., dict] | None:
    """gpumem.model.predict, or None where the model is not installed."""
    try:
        model = importlib.import_module("gpumem.model")
    except ModuleNotFoundError as e:
        if e.name in ("gpumem.model",):
            return None
        raise
    return getattr(model, "predict", None)


def _counters_available() -> bool:
    return runtime.profiler_available()


def _progress(it: Iterable, total: int, desc: str, enabled: bool) -> Iterable:
    """``it`` with the one progress display (:func:`gpumem.tools.headline._steps`: on a
    terminal only, for work that runs); ``total`` is ``len(it)``'s."""
    from .headline import _steps

    return _steps(it, desc, enabled)


@dataclass
class _Point:
    """One row: what to show, what to launch, what to ask the model."""

    row: dict
    family: str
    variant: str
    params: dict                      # the launch's parameters = predict()'s keywords
    launch: Callable[[dict], tuple]   # buffers -> (fn, args, kwargs)
    extra: dict = field(default_factory=dict)


def _run(points: list[_Point], buffers: Callable[[], dict], metrics: tuple, repeat: int,
         progress: bool, title: str, lead: Sequence[str]) -> Table:
    gpu = runtime.is_available()
    measured = gpu and _counters_available()
    predict = _model_predict()
    bufs = buffers() if gpu else {}
    rows, preds = [], []
    for p in _progress(points, len(points), title, progress and gpu):
        row = dict(p.row)
        row["ms"] = row["GB/s"] = None
        pred = None
        if predict is not None:
            pred = predict(p.family, p.variant, **p.params)
        if gpu:
            fn, args, kw = p.launch(bufs)
            res = runtime.bench(fn, *args, repeat=repeat, warmup=min(3, repeat), **kw)
            row["ms"], row["GB/s"] = res.median_ms, res.gbps
        rows.append(row)
        preds.append(pred)
    got: list = [None] * len(points)
    if measured:
        # One profile block for the whole sweep (one CUPTI set-up, and one-pass
        # metric sets read in batches); bench's launches stay outside it.
        with runtime.profile(metrics=list(metrics)) as prof:
            for p in points:
                fn, args, kw = p.launch(bufs)
                fn(*args, **kw)                  # one launch per point
        if len(prof.records) != len(points):
            raise RuntimeError(f"{title}: {len(points)} points made {len(prof.records)} "
                               "profiled launches")
        got = [r.metrics for r in prof.records]
    for p, row, pred, g in zip(points, rows, preds, got):
        for m in metrics:
            if not measured:
                row[m] = pred.get(m) if pred is not None else None
            else:
                row[m] = g.get(m)
                if pred is not None and m.endswith("efficiency"):
                    row[m + "_model"] = pred.get(m)
        row.update(p.extra)
    eff_src = "measured" if measured else ("model" if predict is not None else None)
    sources = {}
    if gpu:
        sources.update({"ms": "measured", "GB/s": "measured"})
    if eff_src:
        sources.update({m: eff_src for m in metrics})
    if measured and predict is not None:
        sources.update({m + "_model": "model" for m in metrics if m.endswith("efficiency")})
    columns = list(lead) + ["ms", "GB/s"] + list(metrics)
    columns += [c for r in rows for c in r if c not in columns and not c.endswith("_model")]
    columns += sorted({c for r in rows for c in r if c.endswith("_model")},
                      key=lambda c: metrics.index(c[:-6]))
    if not gpu:
        title += " (no GPU: model only, times not measured)"
    return Table(rows, columns=columns, sources=sources, title=title)


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def _random_device(rng: np.random.Generator, *shape: int):
    """Standard-normal float32 data of ``shape`` on the device."""
    return runtime.to_device(_f32(rng, *shape))


def _empty(shape: tuple[int, ...]):
    """An uninitialised float32 device array (a sweep's ``out``)."""
    return runtime.empty(shape)


def _bench(fn: Callable, *args, repeat: int, warmup: int, **kw):
    """:func:`gpumem.bench` of one call, and the LaunchRecord of its last launch."""
    with runtime.record() as recs:
        r = runtime.bench(fn, *args, repeat=repeat, warmup=warmup, **kw)
    return r, recs[-1]
