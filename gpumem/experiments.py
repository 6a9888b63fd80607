"""Experiments: the access-pattern lessons as sweeps that return a :class:`gpumem.Table`.

Every sweep gives, per configuration, the kernel time (median of ``repeat``
timed launches through :func:`gpumem.bench`), the effective bandwidth of the
*useful* bytes, and the efficiency columns (``gld_efficiency``,
``gld_transactions``, ``gld_requests`` and the ``gst_`` three):

* on a GPU where :func:`gpumem.profiler_available` says the counters can be
  read, the efficiency columns are **measured** (one extra profiled launch per
  row, after the timing, so profiling never touches the times), and the
  model's prediction stands beside them in ``<metric>_model`` columns;
* otherwise they come from :func:`gpumem.model.predict` (source ``"model"``);
* without a GPU the time columns are ``None`` and the sweep runs on the model
  alone.

``table.sources`` says where each column came from.  Long sweeps show a tqdm
progress bar (``progress=False`` turns it off; without tqdm there is none).

>>> from gpumem import experiments
>>> t = experiments.offset_sweep(range(0, 129), kind="read")
>>> t.plot(x="offset", y="gld_efficiency")
"""
from __future__ import annotations

import importlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import gpumem

from ._table import Table

__all__ = ["offset_sweep", "block_size_sweep", "stride_sweep", "aos_vs_soa",
           "cache_path_compare", "METRICS"]

#: The counters every sweep reports (nvprof names; gpumem.profile maps them).
METRICS = ("gld_efficiency", "gld_transactions", "gld_requests",
           "gst_efficiency", "gst_transactions", "gst_requests")
CACHES = ("default", "ca", "cg", "ldg", "cs")


# ---- argument checks (before anything runs) -------------------------------------------
def _int(fn: str, name: str, v: Any, lo: int, hi: int | None = None) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}")
    v = int(v)
    if v < lo or (hi is not None and v > hi):
        allowed = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be {allowed}")
    return v


def _ints(fn: str, name: str, vs: Any, lo: int, hi: int | None = None) -> list[int]:
    if isinstance(vs, (int, np.integer)) and not isinstance(vs, bool):
        vs = [vs]
    try:
        vs = list(vs)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int or a sequence of ints, "
                        f"not {type(vs).__name__}") from None
    if not vs:
        raise ValueError(f"{fn}: {name} is empty; give at least one value")
    return [_int(fn, name, v, lo, hi) for v in vs]


def _choices(fn: str, name: str, vs: Any, allowed: Sequence[str]) -> list[str]:
    if isinstance(vs, str):
        vs = [vs]
    try:
        vs = list(vs)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be a str or a sequence of str, "
                        f"not {type(vs).__name__}") from None
    if not vs:
        raise ValueError(f"{fn}: {name} is empty; give at least one value")
    for v in vs:
        if not isinstance(v, str):
            raise TypeError(f"{fn}: {name} must be a str or a sequence of str, "
                            f"not {type(v).__name__}")
        if v not in allowed:
            raise ValueError(f"{fn}: {name}={v!r} is unknown; allowed: "
                             + ", ".join(repr(a) for a in allowed))
    return vs


def _common(fn: str, repeat: Any, progress: Any, metrics: Any) -> tuple[int, bool, tuple]:
    repeat = _int(fn, "repeat", repeat, 1)
    if not isinstance(progress, bool):
        raise TypeError(f"{fn}: progress must be a bool, not {type(progress).__name__}")
    if metrics is None:
        metrics = METRICS
    if isinstance(metrics, str) or not all(isinstance(m, str) for m in metrics):
        raise TypeError(f"{fn}: metrics must be a sequence of metric names (str)")
    return repeat, progress, tuple(metrics)


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
    return bool(getattr(gpumem, "profiler_available", lambda: False)())


def _progress(it: Iterable, total: int, desc: str, enabled: bool) -> Iterable:
    if not enabled:
        return it
    try:
        from tqdm import tqdm
    except ImportError:
        return it
    return tqdm(it, total=total, desc=desc, leave=False)


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
    gpu = gpumem.is_available()
    measured = gpu and _counters_available()
    predict = _model_predict()
    bufs = buffers() if gpu else {}
    rows, preds = [], []
    for p in _progress(points, len(points), title, progress):
        row = dict(p.row)
        row["ms"] = row["GB/s"] = None
        pred = None
        if predict is not None:
            pred = predict(p.family, p.variant, **p.params)
        if gpu:
            fn, args, kw = p.launch(bufs)
            res = gpumem.bench(fn, *args, repeat=repeat, warmup=min(3, repeat), **kw)
            row["ms"], row["GB/s"] = res.median_ms, res.gbps
        rows.append(row)
        preds.append(pred)
    got: list = [None] * len(points)
    if measured:
        # One profile block for the whole sweep (one CUPTI set-up, and one-pass
        # metric sets read in batches); bench's launches stay outside it.
        with gpumem.profile(metrics=list(metrics)) as prof:
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


# ---- the sweeps ----------------------------------------------------------------------------
def offset_sweep(offsets: Iterable[int] = range(0, 129), kind: str | Sequence[str] = "read",
                 cache: str | Sequence[str] = "default", unroll: int | Sequence[int] = 1,
                 block: int = 512, n: int = 2**24, repeat: int = 20, progress: bool = True,
                 metrics: Sequence[str] | None = None) -> Table:
    """Time, bandwidth and efficiency of misaligned reads or writes against the offset.

    Parameters
    ----------
    offsets : iterable of int
        Offsets in floats, each 0..n.
    kind : {"read", "write"} or a sequence of them
        :func:`gpumem.read_offset` (misaligned loads) or
        :func:`gpumem.write_offset` (misaligned stores).
    cache : str or sequence of str
        Load path(s) of the reads: "default", "ca", "cg", "ldg", "cs" (only
        "default" for writes, whose loads are plain).
    unroll : {1, 4} or a sequence of them
    block : int
        Threads per block, 1..1024.
    n : int
        Floats per array (three arrays: a, b and the result).
    repeat : int
        Timed launches per row (median reported).
    progress : bool
        Show a tqdm progress bar.
    metrics : sequence of str, optional
        Counter names (default :data:`METRICS`).

    Returns
    -------
    Table with columns kernel, unroll, cache, offset, ms, GB/s (useful bytes
    ``12 * (n - offset)``) and the metrics; one row per combination.
    """
    fn = "offset_sweep"
    kinds = _choices(fn, "kind", kind, ("read", "write"))
    caches = _choices(fn, "cache", cache, CACHES)
    unrolls = _ints(fn, "unroll", unroll, 1, 4)
    for u in unrolls:
        if u not in (1, 4):
            raise ValueError(f"{fn}: unroll={u} is not allowed; unroll must be 1 or 4")
    n = _int(fn, "n", n, 1)
    block = _int(fn, "block", block, 1, 1024)
    offs = _ints(fn, "offsets", offsets, 0, n)
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)
    if kinds == ["write"] and caches != ["default"]:
        raise ValueError(f"{fn}: cache={cache!r} applies to kind='read' only; write_offset's "
                         "loads are plain")

    def buffers():
        rng = np.random.default_rng(0)
        return {"a": gpumem.to_device(_f32(rng, n)), "b": gpumem.to_device(_f32(rng, n)),
                "c": gpumem.empty((n,))}

    points = []
    combos = [(k, u, c, off) for k in kinds
              for u, c, off in itertools.product(unrolls, caches if k == "read" else [None], offs)]
    for k, u, c, off in combos:
        family = "read_offset" if k == "read" else "write_offset"
        params = {"n": n, "offset": off, "block": block}
        if k == "read":
            params["cache"] = c
        call = dict(offset=off, unroll=u, block=block, **({"cache": c} if k == "read" else {}))

        def launch(bufs, family=family, call=call):
            return getattr(gpumem, family), (bufs["a"], bufs["b"]), dict(call, out=bufs["c"])

        points.append(_Point({"kernel": family, "unroll": u, "cache": c, "offset": off},
                             family, f"unroll{u}", params, launch))
    title = f"offset sweep: {', '.join(kinds)}, n={n}, block={block}"
    return _run(points, buffers, metrics, repeat, progress, title,
                ["kernel", "unroll", "cache", "offset"])


def cache_path_compare(caches: Sequence[str] = CACHES, offsets: Iterable[int] = (0, 1, 11, 32, 128),
                       unroll: int | Sequence[int] = 1, block: int = 512, n: int = 2**24,
                       repeat: int = 20, progress: bool = True,
                       metrics: Sequence[str] | None = None) -> Table:
    """The five load paths of :func:`gpumem.read_offset` side by side at a few offsets.

    "default" (ld.global), "ca" (L1 and L2), "cg" (L2 only), "ldg" (the
    read-only path) and "cs" (streaming) touch the same sectors; what moves is
    the time.  Same columns as :func:`offset_sweep`, one row per cache x offset.
    """
    return offset_sweep(offsets, kind="read", cache=caches, unroll=unroll, block=block, n=n,
                        repeat=repeat, progress=progress, metrics=metrics)


def block_size_sweep(blocks: Iterable[int] = (32, 48, 64, 96, 100, 128, 256, 384, 512, 768, 1024),
                     kind: str = "read", offset: int = 0, unroll: int = 1,
                     cache: str = "default", n: int = 2**24, repeat: int = 20,
                     progress: bool = True, metrics: Sequence[str] | None = None) -> Table:
    """read_offset / write_offset against the block size.

    A block that is no multiple of 32 leaves ``idle_lanes`` lanes of its last
    warp idle: the requests stay, the useful bytes per request fall.

    Returns
    -------
    Table with columns block, warps_per_block, idle_lanes, grid, ms, GB/s and the metrics.
    """
    fn = "block_size_sweep"
    (kind,) = _choices(fn, "kind", [kind] if isinstance(kind, str) else kind, ("read", "write"))
    n = _int(fn, "n", n, 1)
    offset = _int(fn, "offset", offset, 0, n)
    unroll = _int(fn, "unroll", unroll, 1, 4)
    if unroll not in (1, 4):
        raise ValueError(f"{fn}: unroll={unroll} is not allowed; unroll must be 1 or 4")
    (cache,) = _choices(fn, "cache", [cache] if isinstance(cache, str) else cache, CACHES)
    if kind == "write" and cache != "default":
        raise ValueError(f"{fn}: cache={cache!r} applies to kind='read' only")
    bs = _ints(fn, "blocks", blocks, 1, 1024)
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)
    family = "read_offset" if kind == "read" else "write_offset"

    def buffers():
        rng = np.random.default_rng(0)
        return {"a": gpumem.to_device(_f32(rng, n)), "b": gpumem.to_device(_f32(rng, n)),
                "c": gpumem.empty((n,))}

    points = []
    for b in bs:
        params = {"n": n, "offset": offset, "block": b}
        call = {"offset": offset, "unroll": unroll, "block": b}
        if kind == "read":
            params["cache"] = call["cache"] = cache

        def launch(bufs, call=call):
            return getattr(gpumem, family), (bufs["a"], bufs["b"]), dict(call, out=bufs["c"])

        warps = math.ceil(b / 32)
        points.append(_Point({"block": b, "warps_per_block": warps, "idle_lanes": 32 * warps - b,
                              "grid": math.ceil(n / (unroll * b))},
                             family, f"unroll{unroll}", params, launch))
    title = f"block size sweep: {family} unroll{unroll}, offset={offset}, n={n}"
    return _run(points, buffers, metrics, repeat, progress, title,
                ["block", "warps_per_block", "idle_lanes", "grid"])


def stride_sweep(strides: Iterable[int] = (1, 2, 3, 4, 8, 16, 32, 64), n: int = 2**24,
                 block: int = 512, repeat: int = 20, progress: bool = True,
                 metrics: Sequence[str] | None = None) -> Table:
    """:func:`gpumem.strided_read` (``C = a[::stride]``) against the stride: the coalescing cliff.

    Returns
    -------
    Table with columns stride, m (elements read: ``ceil(n / stride)``), ms,
    GB/s of the useful bytes ``8 * m``, and the metrics.
    """
    fn = "stride_sweep"
    n = _int(fn, "n", n, 1)
    block = _int(fn, "block", block, 1, 1024)
    ss = _ints(fn, "strides", strides, 1, 64)
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)

    def buffers():
        rng = np.random.default_rng(0)
        bufs = {"a": gpumem.to_device(_f32(rng, n))}
        bufs.update({("out", s): gpumem.empty((-(-n // s),)) for s in set(ss)})
        return bufs

    points = []
    for s in ss:
        m = -(-n // s)

        def launch(bufs, s=s):
            return (gpumem.strided_read, (bufs["a"],),
                    {"stride": s, "block": block, "out": bufs[("out", s)]})

        points.append(_Point({"stride": s, "m": m}, "strided_read", "default",
                             {"n": n, "stride": s, "block": block}, launch))
    return _run(points, buffers, metrics, repeat, progress,
                f"stride sweep: strided_read, n={n}, block={block}", ["stride", "m"])


def aos_vs_soa(n: int = 2**22, block: int = 512, kernels: Sequence[str] = ("struct_update", "distance"),
               repeat: int = 20, progress: bool = True,
               metrics: Sequence[str] | None = None) -> Table:
    """Array of structs vs struct of arrays for :func:`gpumem.struct_update` and :func:`gpumem.distance`.

    Returns
    -------
    Table with columns kernel, layout, ms, GB/s (useful bytes ``16 * n`` for
    both) and the metrics, one row per kernel and layout.
    """
    fn = "aos_vs_soa"
    n = _int(fn, "n", n, 1)
    block = _int(fn, "block", block, 1, 1024)
    ks = _choices(fn, "kernels", kernels, ("struct_update", "distance"))
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)
    fields = {"struct_update": 2, "distance": 3}

    def buffers():
        rng = np.random.default_rng(0)
        bufs = {}
        for k in ks:
            f = fields[k]
            bufs[(k, "aos")] = gpumem.to_device(_f32(rng, n, f))
            bufs[(k, "soa")] = gpumem.to_device(_f32(rng, f, n))
            out_shape = (n,) if k == "distance" else None
            bufs[(k, "aos", "out")] = gpumem.empty(out_shape or (n, f))
            bufs[(k, "soa", "out")] = gpumem.empty(out_shape or (f, n))
        return bufs

    points = []
    for k in ks:
        for layout in ("aos", "soa"):
            def launch(bufs, k=k, layout=layout):
                return (getattr(gpumem, k), (bufs[(k, layout)],),
                        {"layout": layout, "block": block, "out": bufs[(k, layout, "out")]})

            points.append(_Point({"kernel": k, "layout": layout}, k, layout,
                                 {"n": n, "block": block}, launch))
    return _run(points, buffers, metrics, repeat, progress,
                f"AoS vs SoA: n={n}, block={block}", ["kernel", "layout"])
