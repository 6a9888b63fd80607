"""Keeping a working set in L2: a hot set reused while a cold stream flows past it.

A kernel that reads a small array again and again while it streams a large one
once (a lookup table beside a stream, the weights of a layer beside its
activations) wants the small one to stay in L2.  Left to itself, L2 keeps what
was used last, and the stream pushes the hot set out as soon as the stream
between two reads of a hot element is about as large as L2.  Since Ampere
(compute capability 8.0) a program can say which lines matter: an
*access-policy window* on a stream (``cudaStreamSetAttribute(...,
cudaStreamAttributeAccessPolicyWindow, ...)``: ``base_ptr``, ``num_bytes``, a
``hitRatio`` and the properties of hits and misses) marks a fraction
``hitRatio`` of the window's accesses *persisting* and the rest *streaming*;
persisting lines live in a part of L2 set aside for them
(``cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, ...)``, at most
``cudaDevAttrMaxPersistingL2CacheSize``), where normal accesses cannot evict them.

* :func:`hot_cold` -- the kernel: ``out[i] = cold[i] + hot[(i + j*n_cold) % n_hot]``
  summed over ``j < reuse``; ``window=True`` runs it under a window over the
  whole hot set.  :func:`hot_cold_reference` is its NumPy twin.
* :func:`persistence_sweep` -- time and L2 hit rate (counters) by hot-set size and
  ``hit_ratio``, with and without the window, and with the cold loads marked
  evict-first (``variant="cold_streaming"``, ``ld.global.cs``: the software hint).
* :func:`l2_state` -- the set-aside and the window a later launch would see.

Everything the window path sets, it puts back before it returns -- also on an
error: the window emptied (``num_bytes`` 0), ``cudaCtxResetPersistingL2Cache()``
(every persisting line normal again), the set-aside limit back to its value.
The window is set on the legacy default stream, on which gpumem launches and
the profiler replays, just before the launches, and cleared after them.
Without a GPU the model's side (:mod:`gpumem.model.l2_persistence`: bytes,
requests and sectors of a launch; the reuse distance) still works; windows need
compute capability 8.0 or newer, and the window path raises
:class:`gpumem.CudaError` naming it on older GPUs.
"""
from __future__ import annotations

import statistics
from typing import Any, Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..model import l2_persistence as model
from ..runtime.args import _checked, _flag, _given, _host, _index, _indices
from ..runtime.table import Table
from ..tools import headline as hl
from ..tools.lesson import Lesson, sanitize_f32
from ..tools.sweep import _int, _ints, _need_gpu, _progress

__all__ = ["HOT_MIB", "HIT_RATIOS", "COUNTERS", "WINDOW_CC", "hot_cold", "hot_cold_reference",
           "l2_state", "persistence_sweep"]

Array = Union[np.ndarray, DeviceArray]

MiB = 1 << 20
#: The default hot-set sizes of :func:`persistence_sweep`, MiB (the H100's L2: 50 MB).
HOT_MIB = (4, 8, 16, 24, 32, 40, 48)
#: The default hit ratios of :func:`persistence_sweep`'s windows.
HIT_RATIOS = (0.0, 0.5, 1.0)
#: The counters :func:`persistence_sweep` reads for every row.
COUNTERS = ("l2_hit_rate", "dram_read_bytes")
#: The compute capability access-policy windows need (Ampere).
WINDOW_CC = (8, 0)


def _ratio(fn: str, name: str, v: Any) -> float:
    """``v`` as a float in [0, 1]: TypeError or ValueError naming ``fn`` and ``name``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                              np.floating)):
        raise TypeError(f"{fn}: {name} must be a real number in [0, 1], not "
                        f"{type(v).__name__}")
    if not 0.0 <= float(v) <= 1.0:
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be in [0, 1]")
    return float(v)


# ---- the kernel ----------------------------------------------------------------------
def hot_cold(hot: Array, cold: Array, *, reuse: int = 2,
             variant: Literal["plain", "cold_streaming"] = "plain", block: int = 256,
             window: bool = False, hit_ratio: float = 1.0, set_aside: int | None = None,
             out: DeviceArray | None = None):
    """``out[i] = cold[i] + sum(hot[(i + j*len(cold)) % len(hot)] for j < reuse)``.

    One thread per cold element; the sum is taken in that order in float32 (so
    :func:`hot_cold_reference` matches it exactly).  The cold array is read once,
    the hot set ``reuse * len(cold) / len(hot)`` times per element on average.

    Parameters
    ----------
    hot, cold : numpy.ndarray or DeviceArray
        1-D float32; ``hot`` has at least one element.
    reuse : int
        Hot loads per cold element, 1..64.
    variant : {"plain", "cold_streaming"}
        ``"cold_streaming"`` loads the cold elements with ``ld.global.cs`` (evict
        first).  With ``window=True`` only ``"plain"``.
    block : int
        Threads per block, a multiple of 32 up to 1024 (``window=True``: 256).
    window : bool
        Run under an access-policy window over the whole hot set (compute
        capability 8.0+): ``hitProp`` persisting for a fraction ``hit_ratio`` of its
        accesses, ``missProp`` streaming for the rest, and ``set_aside`` bytes of L2
        for persisting lines.  Everything is put back before the call returns.
    hit_ratio : float
        In [0, 1]; only with ``window=True``.
    set_aside : int, optional
        Bytes of L2 for persisting lines (default: the hot set's bytes, at most
        what the GPU allows); only with ``window=True``.
    out : DeviceArray, optional
        float32, shape ``(len(cold),)``, sharing no memory with ``hot`` or ``cold``.

    Returns
    -------
    numpy.ndarray, or a DeviceArray when an input or ``out`` is one.
    """
    fn = "hot_cold"
    _given(fn, hot=hot, cold=cold)
    window = _flag(fn, "window", window)
    hit_ratio = _ratio(fn, "hit_ratio", hit_ratio)
    if set_aside is not None:
        set_aside = _checked(fn, "_hot_cold_window", "set_aside", set_aside)
    if not window:
        if hit_ratio != 1.0 or set_aside is not None:
            raise ValueError(f"{fn}: hit_ratio and set_aside need window=True")
        return _core.hot_cold(hot, cold, **_indices(fn, reuse=reuse, block=block),
                              variant=variant, out=out)
    if _checked(fn, "hot_cold", "variant", variant) != "plain":
        raise ValueError(f"{fn}: variant={variant!r} is not allowed with window=True; "
                         "the window runs the 'plain' kernel")
    if _index(fn, "block", block) != 256:
        raise ValueError(f"{fn}: block={block} is not allowed with window=True; it launches "
                         "blocks of 256")
    on_device = out is not None or not all(isinstance(x, np.ndarray) for x in (hot, cold))
    res = _core._hot_cold_window(hot, cold, out, reuse, hit_ratio, set_aside=set_aside)
    return res if on_device else res.get()


def hot_cold_reference(hot: np.ndarray, cold: np.ndarray, reuse: int = 2) -> np.ndarray:
    """NumPy reference of :func:`hot_cold`: the same float32 additions in the same order."""
    fn = "hot_cold_reference"
    hot = _host(fn, "hot", hot, np.float32, 1)
    cold = _host(fn, "cold", cold, np.float32, 1)
    reuse = _checked(fn, "hot_cold", "reuse", reuse)
    if hot.size < 1:
        raise ValueError(f"{fn}: hot is empty")
    i = np.arange(cold.size, dtype=np.int64)
    acc = cold.copy()
    for j in range(reuse):
        acc += hot[(i + j * cold.size) % hot.size]
    return acc


def l2_state() -> dict:
    """What the next launch would find: ``persisting_limit`` (the set-aside now, bytes),
    ``window_bytes`` and ``window_hit_ratio`` (the legacy stream's access-policy window),
    ``max_persisting`` and ``max_window`` (the device's limits) and
    ``compute_capability``.  The limits read 0 below compute capability 8.0."""
    return _core._l2_state()



# ---- the sweep -------------------------------------------------------------------------
#: The cases of every hot-set size in :func:`persistence_sweep`: no window, the
#: evict-first hint on the cold loads, then one window per hit ratio.
_NONE, _CS = "none", "cold_streaming"


def _case_name(hit_ratio: float) -> str:
    return f"window hit_ratio={hit_ratio:g}"


def _hit_ratios(fn: str, vs: Any) -> list[float]:
    if isinstance(vs, (int, float)) and not isinstance(vs, bool):
        vs = [vs]
    try:
        vs = list(vs)
    except TypeError:
        raise TypeError(f"{fn}: hit_ratios must be a sequence of numbers in [0, 1], not "
                        f"{type(vs).__name__}") from None
    if not vs:
        raise ValueError(f"{fn}: hit_ratios is empty")
    out = []
    for v in vs:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.floating,
                                                                 np.integer)):
            raise TypeError(f"{fn}: hit_ratios must hold real numbers, not {type(v).__name__}")
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{fn}: hit_ratios: {v} is not in [0, 1]")
        out.append(float(v))
    return out


def _median_ms(recs: list) -> float:
    return statistics.median(r.ms for r in recs)


def _counted(call) -> dict:
    """The :data:`COUNTERS` of the one timed launch ``call()`` makes, or a note why not."""
    if not runtime.profiler_available():
        return {"note": "counters cannot be read here"}
    try:
        with runtime.profile(list(COUNTERS)) as p:
            call()
        recs = p.records
        return dict((recs[-1].metrics or {}) if recs else {})
    except (runtime.ProfilerError, ValueError) as e:
        return {"note": f"not read: {str(e).splitlines()[0][:100]}"}


def _model_row(hot_mib: float, cold_mib: int, reuse: int) -> dict:
    n_hot, n_cold = int(hot_mib * MiB) // 4, cold_mib * MiB // 4
    c = model.hot_cold_bytes(n_hot, n_cold, reuse)
    return {"hot_MiB": hot_mib, "requested_MiB": c["bytes"] / MiB,
            "hot_requested_MiB": c["hot_bytes"] / MiB,
            "reuse_distance_MiB": model.reuse_distance_bytes(n_hot, reuse) / MiB}


def persistence_sweep(hot_mib: Sequence[int] = HOT_MIB, *,
                      hit_ratios: Sequence[float] = HIT_RATIOS, cold_mib: int = 256,
                      reuse: int = 2, repeat: int = 5, counters: bool = True,
                      progress: bool = True, measure: bool = True) -> Table:
    """:func:`hot_cold` by hot-set size: no window, the cold loads evict-first
    (``cold_streaming``), and a window over the hot set for each hit ratio.

    The cold array has ``cold_mib`` MiB (default 256: five times the H100's L2), so
    the stream alone would wash L2 out several times over.  Each case is timed (CUDA
    events, median of ``repeat`` launches after one warm-up; the window set for
    exactly those launches and cleared after) and, with ``counters``, profiled once
    more for :data:`COUNTERS` -- L2's sector hit rate (reads and writes: the cold
    reads and out's writes miss or write through whatever the window does, so 100%
    is out of reach) and the bytes read from device memory.  The profiler flushes
    L2 before its launch; persisting lines of the warm-up may survive that flush,
    as they would survive any stream.

    Without a GPU (or with ``measure=False``) the model's columns alone: the bytes
    requested and the reuse distance (the bytes that flow through L2 between two reads
    of one hot element).

    Returns
    -------
    Table: hot_MiB, case, hit_ratio, set_aside_MiB, ms, GB/s (requested bytes over the
    time), l2_hit_rate, dram_read_MiB, requested_MiB, hot_requested_MiB,
    reuse_distance_MiB, note.
    """
    fn = "persistence_sweep"
    sizes = _ints(fn, "hot_mib", hot_mib, 1, 1024)
    ratios = _hit_ratios(fn, hit_ratios)
    cold_mib = _int(fn, "cold_mib", cold_mib, 1, 16384)
    reuse = _checked(fn, "hot_cold", "reuse", reuse)
    repeat = _checked(fn, "_hot_cold_window", "repeat", repeat)
    counters = _flag(fn, "counters", counters)
    progress = _flag(fn, "progress", progress)
    measure = _flag(fn, "measure", measure)
    cases = [_NONE, _CS] + [_case_name(h) for h in ratios]
    cols = ["hot_MiB", "case", "hit_ratio", "set_aside_MiB", "ms", "GB/s", "l2_hit_rate",
            "dram_read_MiB", "requested_MiB", "hot_requested_MiB", "reuse_distance_MiB", "note"]
    sources = {c: "measured" for c in ("ms", "GB/s", "l2_hit_rate", "dram_read_MiB")}
    sources.update({c: "model" for c in ("requested_MiB", "hot_requested_MiB",
                                          "reuse_distance_MiB")})
    title = (f"hot_cold: a hot set reused {reuse}x per element of a {cold_mib} MiB cold "
             "stream, with and without an access-policy window")
    rows = []
    if not measure or not runtime.is_available():
        note = "no GPU: model only" if measure else "not measured: model only"
        for s in sizes:
            for case in cases:
                row = dict.fromkeys(cols)
                row.update(_model_row(s, cold_mib, reuse), case=case, note=note)
                rows.append(row)
        return Table(rows, cols, sources=sources, title=title)
    _need_gpu()
    state = l2_state()
    windows = tuple(state["compute_capability"]) >= WINDOW_CC and state["max_persisting"] > 0
    rng = np.random.default_rng(26)
    n_cold = cold_mib * MiB // 4
    cold = runtime.to_device(rng.standard_normal(n_cold, dtype=np.float32))
    out = runtime.empty((n_cold,))
    todo = [(s, case) for s in sizes for case in cases]
    hot, hot_size = None, None
    for s, case in _progress(todo, len(todo), fn, progress):
        if s != hot_size:
            hot = runtime.to_device(rng.standard_normal(s * MiB // 4, dtype=np.float32))
            hot_size = s
        row = dict.fromkeys(cols)
        row.update(_model_row(s, cold_mib, reuse), case=case, note="")
        hit = None
        if case.startswith("window"):
            hit = ratios[cases.index(case) - 2]
            row["hit_ratio"] = hit
            if not windows:
                row["note"] = "no access-policy window on this GPU (compute capability < 8.0)"
                rows.append(row)
                continue
            row["set_aside_MiB"] = min(s * MiB, state["max_persisting"]) / MiB
        if case == _CS:
            def call(k: int) -> None:
                for _ in range(k):
                    _core.hot_cold(hot, cold, reuse=reuse, variant="cold_streaming", out=out)
            call(1)                                            # warm-up
        else:
            def call(k: int) -> None:
                _core._hot_cold_window(hot, cold, out, reuse, hit, repeat=k)
        with runtime.record() as recs:
            call(repeat)
        row["ms"] = _median_ms(recs)
        row["GB/s"] = recs[0].bytes / (row["ms"] * 1e-3) / 1e9 if row["ms"] > 0 else None
        if counters:
            m = _counted(lambda: call(1))
            row["l2_hit_rate"] = m.get("l2_hit_rate")
            dram = m.get("dram_read_bytes")
            row["dram_read_MiB"] = dram / MiB if dram is not None else None
            row["note"] = m.get("note", "")
        rows.append(row)
    return Table(rows, cols, sources=sources, title=title)


# ---- gpumem report: the headline and the full sweeps ------------------------------------
_HEAD_HOT, _HEAD_COLD, _HEAD_REUSE = 32, 256, 2


def _head_rows(quick: bool) -> list[dict]:
    """The headline's measured rows: :func:`persistence_sweep` at one size, no window and
    a window with hit_ratio 1."""
    return persistence_sweep([_HEAD_HOT], hit_ratios=[1.0], cold_mib=_HEAD_COLD,
                             reuse=_HEAD_REUSE, repeat=3 if quick else 10, progress=False).rows


def _headline(measure: bool, quick: bool) -> list[dict]:
    what = (f"hot_cold: a {_HEAD_HOT} MiB hot set read {_HEAD_REUSE}x per element of a "
            f"{_HEAD_COLD} MiB stream, with an access-policy window (hit_ratio 1) vs without")
    take = ("a window marks the hot set persisting: the stream cannot evict it from L2's "
            "set-aside (sm_80+); the lesson puts the set-aside and the window back after")
    m = _model_row(_HEAD_HOT, _HEAD_COLD, _HEAD_REUSE)
    mod = {k: v for k, v in m.items() if k != "hot_MiB"}
    mtext = (f"{m['requested_MiB']:.0f} MiB requested per launch ({m['hot_requested_MiB']:.0f} "
             f"of them hot); {m['reuse_distance_MiB']:.0f} MiB flow through L2 between two reads "
             "of a hot element")
    if not measure:
        return [hl._unmeasured("l2_persistence", what, "ms and L2 hit rate of both (CUDA "
                               "events, counters)", model=mod, model_text=mtext, takeaway=take)]
    by = {r["case"]: r for r in _head_rows(quick)}
    none, win = by[_NONE], by[_case_name(1.0)]
    if win["ms"] is None:
        return [hl._row("l2_persistence", what, model=mod, model_text=mtext,
                        measured_text=win["note"], takeaway=take)]
    meas = {"none_ms": none["ms"], "window_ms": win["ms"],
            "none_over_window": none["ms"] / win["ms"],
            "none_l2_hit_rate": none["l2_hit_rate"], "window_l2_hit_rate": win["l2_hit_rate"]}
    return [hl._row("l2_persistence", what, measured=meas, model=mod, model_text=mtext,
                    measured_text=f"{none['ms']:.3f} ms without, {win['ms']:.3f} ms with "
                                  f"({meas['none_over_window']:.2f}x); L2 hit rate "
                                  f"{hl._pct(none['l2_hit_rate'])} -> "
                                  f"{hl._pct(win['l2_hit_rate'])}", takeaway=take)]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    sizes = HOT_MIB[::2] if quick else HOT_MIB
    return [persistence_sweep(sizes, repeat=3 if quick else 5, progress=progress,
                              measure=measure)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize() -> None:
    """Every variant of hot_cold once on small awkward sizes (hot sets shorter than a
    warp included), and the window path with and without a window."""
    for v in runtime.variants("hot_cold"):
        for n_hot, n_cold, reuse in ((1, 1, 1), (5, 33, 3), (33, 1001, 2), (1000, 4099, 5)):
            hot, cold = sanitize_f32(n_hot), sanitize_f32(n_cold)
            hot_cold(hot, cold, reuse=reuse, variant=v.name, block=96)
    st = l2_state()
    if tuple(st["compute_capability"]) >= WINDOW_CC and st["max_persisting"] > 0:
        hot, cold = sanitize_f32(1003), sanitize_f32(5001)
        for hit in (None, 0.0, 0.5, 1.0):
            _core._hot_cold_window(hot, cold, None, 3, hit)


# ---- what the shared tests read: a fake GPU's measurements -------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): the window lifts the hit rate from
    40% to 65% and takes a fifth off the time."""
    return {"_head_rows": lambda quick: [{"case": "none", "ms": 0.5, "l2_hit_rate": 40.0},
                                         {"case": "window hit_ratio=1", "ms": 0.4,
                                          "l2_hit_rate": 65.0}]}


LESSON = Lesson(
    name="l2_persistence",
    idea="keeping a working set in L2: a hot set reused while a cold stream flows past it, "
         "with and without an access-policy window and a persisting set-aside",
    families=("hot_cold",),
    exports=("hot_cold",),
    sweeps=("persistence_sweep",),
    notebooks=("12_l2_persistence",),
    benchmark="l2_persistence",
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=(),
    stand_ins=_stand_ins,
)
