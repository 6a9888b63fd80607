"""Building ``gpumem report`` rows: what a lesson's headline uses.

A lesson's ``headline(measure, quick)`` (declared in its :class:`gpumem.tools.lesson.Lesson`)
returns a list of rows made by :func:`_row` -- or, without a GPU, by
:func:`_unmeasured`, which shows the model's side and says what the row would
measure.  :func:`_timed` times a dict of calls with :func:`gpumem.bench` and
reads one counter for each in one ``gpumem.profile`` block (None where the
profiler cannot).  Each row is a dict with the keys

``lesson``, ``experiment``
    The lesson and what the row runs.
``measured``, ``model``
    Numbers by name (``{"offset11_gld_efficiency": 80.0, ...}``): what this GPU
    measured (empty without a GPU) and what the model predicts (empty where
    nothing is modelled).
``measured_text``, ``model_text``, ``takeaway``
    The same for people ("would measure: ..." without a GPU).

Tools layer: imports the runtime and the model.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .. import model, runtime

#: Compute capability the model assumes without a GPU (the H100's).
MODEL_CC = "9.0"


# ---- rows and small helpers ------------------------------------------------------------
def _row(lesson: str, experiment: str, *, measured: dict | None = None,
         model: dict | None = None, measured_text: str = "", model_text: str = "",
         takeaway: str = "") -> dict:
    """One report row (see the module docstring for the keys)."""
    return {"lesson": lesson, "experiment": experiment, "measured": dict(measured or {}),
            "model": dict(model or {}), "measured_text": measured_text,
            "model_text": model_text or "not modelled", "takeaway": takeaway}


def _unmeasured(lesson: str, experiment: str, would: str, **kw: Any) -> dict:
    """A row without a GPU: the model's side, and what it would measure."""
    return _row(lesson, experiment, measured_text="would measure: " + would, **kw)


def _gbps(v: float) -> str:
    return f"{v:,.0f} GB/s"


def _pct(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.0f}%"


def _pow2(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def _rng() -> np.random.Generator:
    return np.random.default_rng()


def _bench(fn: Callable, *args, quick: bool, **kw) -> runtime.BenchResult:
    """:func:`gpumem.bench` with the report's modest repeats."""
    return runtime.bench(fn, *args, repeat=5 if quick else 20, warmup=2, **kw)


def _counters(metrics: Sequence[str], calls: Sequence[Callable[[], Any]]) -> list[dict] | None:
    """Hardware counters of one launch of each call, in one ``gpumem.profile`` block.

    None where the profiler cannot read counters here (or fails): the rows then
    show the model's side alone.
    """
    if not runtime.profiler_available():
        return None
    try:
        with runtime.profile(metrics=list(metrics)) as prof:
            for call in calls:
                call()
        recs = prof.records
    except runtime.ProfilerError:
        return None
    if len(recs) != len(calls):
        return None
    return [dict(r.metrics or {}) for r in recs]


def _timed(calls: dict, metric: str | None, quick: bool, repeat: int | None = None
           ) -> tuple[dict, dict | None]:
    """Time every call of ``calls`` (key -> (fn, args, kwargs)) with :func:`gpumem.bench`,
    then read ``metric`` for one launch of each in one ``gpumem.profile`` block.

    Returns ``({key: BenchResult}, {key: counter value} or None)``.
    """
    res = {k: runtime.bench(fn, *args, repeat=repeat or (5 if quick else 20), warmup=1, **kw)
           for k, (fn, args, kw) in calls.items()}
    if metric is None:
        return res, None
    got = _counters([metric], [lambda c=c: c[0](*c[1], **c[2]) for c in calls.values()])
    return res, None if got is None else {k: g.get(metric) for k, g in zip(calls, got)}


def _predict(family: str, variant: str, **params: Any) -> dict:
    """gpumem.model.predict, efficiencies rounded to 0.01 percent."""
    p = model.predict(family, variant, **params)
    return {k: (round(v, 2) if k.endswith("efficiency") else v) for k, v in p.items()}


def _stderr_is_tty() -> bool:
    """Whether ``sys.stderr`` (looked up now) is a terminal; False for None, a closed
    stream or one without ``isatty``."""
    err = sys.stderr
    try:
        return err is not None and bool(err.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _steps(items: Sequence, desc: str, enabled: bool, *, runs: bool | None = None
           ) -> Iterable:
    """``items``, one by one, with progress on stderr where it helps.

    Every item is yielded, in order, whatever is shown.  Progress is shown only when all
    of these hold, else nothing at all is written:

    * ``enabled`` is true (the caller's ``progress=``);
    * the work runs: ``runs`` true, or, where ``runs`` is None (the default), a GPU is
      usable here (:func:`gpumem.runtime.is_available`) -- every step of a sweep that
      measures needs one, and the model's side alone is too quick for a bar.  A caller
      that knows (``runs=measure``, ``runs=gpu``) says so;
    * stderr is a terminal (``sys.stderr.isatty()``, looked up when the first item is
      asked for).  A pipe, a file or a log gets no progress at all -- no tqdm bar, no
      ``\\r`` frames and no per-step lines -- so that captured output holds only the
      results.

    On a terminal the bar is tqdm's (cleared when the loop ends, or stops early) when
    tqdm is importable, else one line per step: ``[i/n] desc: label ...``.
    """
    if not (enabled and _stderr_is_tty() and (runtime.is_available() if runs is None
                                               else runs)):
        yield from items
        return
    total = len(items) if hasattr(items, "__len__") else None
    try:
        from tqdm import tqdm
    except ImportError:
        of = "" if total is None else f"/{total}"
        for i, item in enumerate(items, 1):
            label = item[0] if isinstance(item, tuple) else item
            print(f"[{i}{of}] {desc}: {label} ...", file=sys.stderr, flush=True)
            yield item
        return
    bar = tqdm(items, total=total, desc=desc, file=sys.stderr, leave=False)
    try:
        for item in bar:
            if isinstance(item, tuple):
                bar.set_postfix_str(str(item[0]))
            yield item
    finally:
        bar.close()
