"""``gpumem report``: the memory card, then every lesson's headline experiment on this GPU.

The report opens with the memory card (:func:`card`): one row per level of the
hierarchy -- registers, shared memory, L1, constant, distributed shared memory, L2 near
and far, device memory, the host link, the pool -- with its size, the latency (cycles and
ns) and bandwidth this GPU measured, the published figure
(:mod:`gpumem.runtime.published`) and the ratio; each row comes from the lesson
that measures it (its ``card``).  Its figure (``--out``, :func:`card_figure`) sets
latency and bandwidth against working set -- the ladder lesson's chases and reads
(:func:`card_curves`) -- beside the published figures, the cache sizes marked.

Each row says what was measured (kernel time, GB/s, and a hardware counter where
:func:`gpumem.profiler_available`), what :mod:`gpumem.model` predicts for it
(where the model covers the kernel; elsewhere the bound the kernel's design
implies), and a one-line takeaway.  Without a GPU every row still shows the
model's side and says what it would measure.  The whole report takes about a
minute on an H100 (``quick=True``: smaller sizes, a few seconds).

>>> from gpumem import report
>>> rows = report.headlines(quick=True)          # list of row dicts
>>> print(report.as_text(rows))
>>> report.sweeps("access")                       # the lesson's full sweep(s): Tables

Rows and lessons
----------------
The rows are dicts (:mod:`gpumem.tools.headline` says their keys).  The first
is the report's own: the device and its streaming ceiling.  The others come
from the lessons: each lesson declares its ``headline`` and its
``report_sweeps`` (:class:`gpumem.tools.lesson.Lesson`), so a new lesson is in
the report by construction.  This module is the top layer: it may import
every lesson; no lesson imports it.
"""
from __future__ import annotations

import base64
import html
import json
import math
import os
import shutil
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import lessons, model, runtime
from .lessons.access import copy, offset_sweep
from .runtime.args import _flag
from .lessons.ladder import bandwidth_ladder, latency_ladder
from .runtime.published import REFERENCE_GPU, published
from .runtime.table import DEFAULT_WIDTH, Table, _fit_widths
from .tools.card import (CARD_COLUMNS, PAPERS, STRIDED, card_reference, ceiling_table,
                         ceiling_text, conditions,
                         conditions_text, methods_table, ratio_text, size_text,
                         unpublished_table)
from .tools.headline import (_gbps, _pow2, _predict, _rng, _row, _steps, _timed,
                             _unmeasured, _bench)

__all__ = ["CARDS", "card", "card_title", "card_table", "ceiling_table", "methods_table",
           "unpublished_table", "conditions",
           "conditions_text", "HEADLINES", "SWEEPS", "COLUMNS",
           "headlines", "sweeps", "as_table", "as_text",
           "to_markdown", "to_html", "to_json", "write", "plot", "plot_names", "no_gpu_reason",
           "card_curves", "card_figure"]

#: The report's columns, in print order (row key -> header).
COLUMNS = {"lesson": "lesson", "experiment": "experiment", "measured_text": "measured",
           "model_text": "model", "takeaway": "takeaway"}

# ---- device ---------------------------------------------------------------------------
def _device(measure: bool, quick: bool) -> list[dict]:
    n = 2**25 if quick else 2**26
    pred = _predict("copy", "float4", n=n)
    moved = pred["gld_bytes_requested"] + pred["gst_bytes_requested"]
    mod = {"copy_bytes": moved, "copy_gld_efficiency": pred["gld_efficiency"],
           "copy_dram_read_bytes": pred["gld_bytes_requested"]}
    mtext = (f"copy moves {moved / 1e6:,.0f} MB, {pred['gld_efficiency']:.0f}% load and "
             f"{pred['gst_efficiency']:.0f}% store efficiency: nothing streams faster")
    what = f"copy float4, n = {_pow2(n)} floats ({4 * n / 2**20:.0f} MiB, well over L2)"
    if not measure:
        return [_unmeasured("device", what, "the GPU's SMs, L2 and theoretical GB/s, and "
                            "the GB/s of a plain copy: the streaming ceiling",
                            model=mod, model_text=mtext,
                            takeaway="the copy's GB/s is the ceiling every memory-bound "
                                     "kernel below is judged against")]
    dev = runtime.device()
    a = runtime.to_device(_rng().standard_normal(n, dtype=np.float32))
    out = runtime.empty((n,))
    res, got = _timed({"copy": (copy, (a,), {"variant": "float4", "out": out})},
                      "dram_read_bytes", quick)
    r = res["copy"]
    peak = dev.theoretical_bandwidth_gbps
    meas = {"SMs": dev.multiprocessors, "L2_MiB": dev.l2_cache_size / 2**20,
            "theoretical_GB/s": peak, "copy_GB/s": r.gbps, "copy_ms": r.median_ms,
            "copy_pct_of_theoretical": 100 * r.gbps / peak}
    text = (f"{dev.name}: {dev.multiprocessors} SMs, L2 {dev.l2_cache_size / 2**20:.0f} MiB, "
            f"{_gbps(peak)} theoretical; copy {_gbps(r.gbps)} ({100 * r.gbps / peak:.0f}%)")
    if got is not None and got["copy"] is not None:
        meas["copy_dram_read_bytes"] = got["copy"]
        text += (f"; DRAM read {got['copy'] / 1e6:,.0f} MB measured / "
                 f"{pred['gld_bytes_requested'] / 1e6:,.0f} MB model")
    pub = published(dev.name)
    stated = f"{100 * r.gbps / peak:.0f}% of the theoretical {_gbps(peak)}"
    if pub is not None and pub.get("memory_gbps"):
        meas["published_GB/s"] = float(pub.get("memory_gbps"))
        stated += f", {100 * r.gbps / pub.get('memory_gbps'):.0f}% of the published " \
                  f"{_gbps(pub.get('memory_gbps'))}"
    return [_row("device", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"{_gbps(r.gbps)} is this GPU's streaming ceiling: {stated}")]


#: The headline experiments, in lesson order: (lesson, function(measure, quick) -> rows):
#: the report's own device row, then every lesson that declares a headline.
HEADLINES: list[tuple[str, Callable[[bool, bool], list[dict]]]] = [("device", _device)] + [
    (lesson.name, lesson.headline) for lesson in lessons.declarations() if lesson.headline]


# ---- the memory card ------------------------------------------------------------------------
#: The memory card's rows, in lesson order: (lesson, function(measure, quick) -> rows), every
#: lesson that declares a ``card`` (:mod:`gpumem.tools.card` says the rows' keys).
CARDS: list[tuple[str, Callable[[bool, bool], list[dict]]]] = [
    (lesson.name, lesson.card) for lesson in lessons.declarations() if lesson.card]


def card(*, measure: bool | None = None, quick: bool = False,
         progress: bool = False) -> list[dict]:
    """The memory card: every level's size, latency and bandwidth as this GPU measures
    them, beside the published figures (:data:`CARDS`).  Without a GPU (``measure``
    false) the rows show the sizes and published figures of the GPU the model assumes,
    the measured columns None.  ``measure``, ``quick``, ``progress``: as for
    :func:`headlines`."""
    fn = "report.card"
    _check_flags(fn, measure=measure, quick=quick, progress=progress)
    if measure is None:
        measure = runtime.is_available()
    rows: list[dict] = []
    for _, f in _steps(CARDS, "gpumem memory card", progress, runs=measure):
        rows += f(measure, quick)
    return sorted(rows, key=lambda r: r.get("depth", 0))       # stable: lesson order within


def card_title(measure: bool, cond: Mapping[str, Any] | None = None) -> str:
    """The card's title: whose figures the measured ones stand beside, and the conditions
    it was measured under (``cond``: :func:`conditions`)."""
    entry, name = card_reference(measure)
    if not measure:
        return (f"memory card (no GPU: nothing measured; sizes and published figures of the "
                f"{name}, which the model assumes)")
    said = conditions_text(cond)
    said = f" ({said})" if said else ""
    if entry is None:
        return f"memory card of {name} (no published figures are known for this GPU){said}"
    return f"memory card of {name}, beside the published figures of the {entry.key}{said}"


def card_table(rows: Sequence[dict], title: str = "memory card") -> Table:
    """The card's rows as a :class:`gpumem.Table` of text cells (:data:`CARD_COLUMNS`);
    the rows themselves keep every number and each figure's source.  A measured row with
    no published figure says so ("none known")."""
    def num(v: Any, fmt: str) -> str:
        return "" if v is None else format(v, fmt)

    out = [{"level": r["level"], "size": r.get("size_text", ""), "cycles": num(r["cycles"], ".0f"),
            "ns": num(r["ns"], ",.0f"), "GB/s": num(r["GB/s"], ",.0f"),
            "published": r.get("published") or (
                "none known" if any(r.get(k) is not None for k in ("cycles", "ns", "GB/s"))
                else ""), "x published": ratio_text(r),
            "ceiling": ceiling_text(r),
            "x ceiling": num(r.get("ceiling_ratio"), ".2f"), "why": r.get("why", ""),
            "from": r["lesson"]} for r in rows]
    return Table(out, columns=list(CARD_COLUMNS.values()), title=title)


# ---- the lessons' full sweeps (--lesson) ----------------------------------------------------
def _device_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    sizes = [2**e for e in range(16, (25 if quick else 27), 2)]
    rows = []
    for n in sizes:
        row: dict[str, Any] = {"n": _pow2(n), "MiB moved": 8 * n / 2**20}
        for v in ("float", "float4"):
            row[f"{v} transactions/request"] = model.predict(
                "copy", v, n=n)["gld_transactions_per_request"]
        rows.append(row)
    sources = {f"{v} transactions/request": "model" for v in ("float", "float4")}
    title = "copy against size: the L2, then device memory"
    if measure:
        rng = _rng()
        for row, n in zip(rows, sizes):
            a = runtime.to_device(rng.standard_normal(n, dtype=np.float32))
            out = runtime.empty((n,))
            for v in ("float", "float4"):
                row[f"{v} GB/s"] = _bench(copy, a, variant=v, out=out, quick=quick).gbps
        sources.update({"float GB/s": "measured", "float4 GB/s": "measured"})
    else:
        title += " (no GPU: model only, GB/s not measured)"
    return [Table(rows, sources=sources, title=title)]


#: Each lesson's full sweep(s) for ``--lesson``: lesson -> function(measure, quick, progress):
#: the device's, then every lesson that declares them.
SWEEPS: dict[str, Callable[[bool, bool, bool], list[Table]]] = {"device": _device_sweeps, **{
    lesson.name: lesson.report_sweeps for lesson in lessons.declarations() if lesson.report_sweeps}}


# ---- running ----------------------------------------------------------------------------
def _check_flags(fn: str, **flags: Any) -> None:
    """Each flag a bool (numpy.bool_ too, as everywhere in gpumem) or None (the default)."""
    for name, v in flags.items():
        if v is not None:
            _flag(fn, name, v)


def no_gpu_reason() -> str | None:
    """Why gpumem cannot run kernels here (None when it can)."""
    if runtime.is_available():
        return None
    try:
        runtime.device()
    except runtime.CudaError as e:
        return str(e)
    return "no usable CUDA GPU"


def headlines(*, measure: bool | None = None, quick: bool = False, progress: bool = False,
              lessons: Sequence[str] | None = None) -> list[dict]:
    """Run the headline experiment of every lesson (:data:`HEADLINES`) and return the rows.

    Parameters
    ----------
    measure : bool, optional
        Run kernels (default: when a GPU is usable).  False gives the model's side
        alone, with "would measure: ..." in ``measured_text``.
    quick : bool
        Smaller sizes and fewer repeats.
    progress : bool
        A progress bar on stderr (tqdm, else one line per lesson).
    lessons : sequence of str, optional
        Only these lessons (names of :data:`HEADLINES`), in lesson order.

    Returns
    -------
    list of dict, the rows (see the module docstring).
    """
    fn = "report.headlines"
    _check_flags(fn, measure=measure, quick=quick, progress=progress)
    known = [name for name, _ in HEADLINES]
    if lessons is not None:
        if isinstance(lessons, str):
            lessons = [lessons]
        for name in lessons:
            if name not in known:
                raise ValueError(f"{fn}: lessons has {name!r}; allowed: "
                                 + ", ".join(repr(k) for k in known))
    if measure is None:
        measure = runtime.is_available()
    todo = [(name, f) for name, f in HEADLINES if lessons is None or name in lessons]
    rows: list[dict] = []
    for name, f in _steps(todo, "gpumem report", progress, runs=measure):
        rows += f(measure, quick)
    return rows


def sweeps(lesson: str, *, measure: bool | None = None, quick: bool = False,
           progress: bool = False) -> list[Table]:
    """The full sweep(s) of one lesson (:data:`SWEEPS`), as Tables.

    Parameters
    ----------
    lesson : str
        A key of :data:`SWEEPS`.
    measure, quick, progress : bool
        As for :func:`headlines`.
    """
    fn = "report.sweeps"
    if not isinstance(lesson, str):
        raise TypeError(f"{fn}: lesson must be a str, not {type(lesson).__name__}")
    if lesson not in SWEEPS:
        raise ValueError(f"{fn}: lesson={lesson!r} is unknown; allowed: "
                         + ", ".join(repr(k) for k in SWEEPS))
    _check_flags(fn, measure=measure, quick=quick, progress=progress)
    if measure is None:
        measure = runtime.is_available()
    return SWEEPS[lesson](measure, quick, progress)


# ---- output -------------------------------------------------------------------------------
def as_table(rows: Sequence[dict], title: str = "gpumem report") -> Table:
    """The rows as a :class:`gpumem.Table` of the text columns (:data:`COLUMNS`)."""
    return Table([{h: r.get(k, "") for k, h in COLUMNS.items()} for r in rows],
                 columns=list(COLUMNS.values()), title=title)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of ``width`` at its spaces; a word longer than that (a number, a
    name) stays whole on a line of its own rather than being cut."""
    import textwrap

    return textwrap.wrap(text, max(width, 1), break_long_words=False,
                         break_on_hyphens=False) or [""]


#: Column widths of the text table (characters).
_WIDTHS = {"lesson": 9, "experiment": 30, "measured_text": 44, "model_text": 34,
           "takeaway": 34}


def as_text(rows: Sequence[dict], title: str = "gpumem report", width: int | None = None) -> str:
    """The rows as a plain-text table, left-aligned, long cells wrapped, no wider than
    ``width`` characters (default: the terminal's; the columns of :data:`_WIDTHS` at most)."""
    keys = list(COLUMNS)
    if width is None:
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    # a lesson's name is never wrapped: the column is as wide as the longest one
    lesson_w = max([_WIDTHS["lesson"]] + [len(str(r.get("lesson", ""))) for r in rows])
    room = width - lesson_w - 2 * (len(keys) - 1)
    text_keys = [k for k in keys if k != "lesson"]
    fitted = _fit_widths([_WIDTHS[k] for k in text_keys], max(room, 0))
    widths = dict(zip(text_keys, fitted), lesson=lesson_w)
    head = "  ".join(COLUMNS[k].ljust(widths[k]) for k in keys).rstrip()
    rule = "  ".join("-" * widths[k] for k in keys)
    lines = [title, head, rule] if title else [head, rule]
    for i, r in enumerate(rows):
        cells = [_wrap(str(r.get(k, "")), widths[k]) for k in keys]
        for j in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[j] if j < len(c) else "").ljust(widths[k])
                                   for c, k in zip(cells, keys)).rstrip())
        if i + 1 < len(rows) and rows[i + 1].get("lesson") != r.get("lesson"):
            lines.append("")
    return "\n".join(lines)


def to_markdown(tables: Sequence[Table], header: Sequence[str] = ()) -> str:
    """Markdown of the tables, after the ``header`` lines (e.g. the device line)."""
    parts = list(header) + [t.to_markdown() for t in tables]
    return "\n\n".join(parts) + "\n"


def _html_table(t: Table) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(t._header(c))}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>\n"
                   for row in t._cells())
    cap = f"<caption>{esc(t.title)}</caption>" if t.title else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody></table>"


def to_html(tables: Sequence[Table], header: Sequence[str] = (),
            images: Mapping[str, bytes] | None = None) -> str:
    """One self-contained HTML page (it opens offline: no link, no file beside it): the
    ``header`` lines, the tables, and ``images`` ({name: PNG bytes}) embedded as base64
    data URIs."""
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
             "margin-bottom:2em}td,th{border:1px solid #bbb;padding:4px 8px;text-align:left;"
             "vertical-align:top}th{background:#eee}caption{font-weight:bold;text-align:left;"
             "padding:4px 0}")
    parts = [f"<p>{html.escape(line)}</p>" for line in header]
    parts += [_html_table(t) for t in tables]
    parts += [f'<p><img src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}" '
              f'alt="{html.escape(name)}"></p>' for name, data in (images or {}).items()]
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpumem report</title>"
            f"<style>{style}</style></head><body>\n<h1>gpumem report</h1>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def _clean(v: Any) -> Any:
    """JSON-safe values: NaN and infinities become None, NumPy scalars Python numbers."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


#: The report JSON's schema: 1 is the document of rows, card and tables with their keys as
#: of gpumem 0.1 (``gpumem compare`` reads it); a change of keys raises it.
SCHEMA = 1


def to_json(rows: Sequence[dict] = (), tables: Sequence[Table] = (), **meta: Any) -> str:
    """JSON of the report rows (and lesson tables), with ``schema`` (:data:`SCHEMA`) and the
    ``meta`` keys at the top."""
    doc: dict[str, Any] = {"schema": SCHEMA, **meta}
    if rows:
        doc["rows"] = list(rows)
    if tables:
        doc["tables"] = [{"title": t.title, "columns": t.columns, "sources": t.sources,
                          "rows": t.rows} for t in tables]
    return json.dumps(_clean(doc), indent=1, default=str)


def plot_names(rows: Sequence[dict], card: Sequence[dict] = ()) -> list[str]:
    """The PNG files :func:`plot` writes for these rows and card (with matplotlib)."""
    return (["memory_card.png"] if card else []) + ["access_gld_efficiency.png"] + (
        ["matmul.png"] if any(r.get("lesson") == "matmul" for r in rows) else [])


# ---- the memory card's figure: latency and bandwidth against working set ----------------------
_KiB, _MiB, _GiB = 1 << 10, 1 << 20, 1 << 30
#: The rings the card's figure chases (bytes), by ``quick``: from L1-sized rings through the
#: L2's halves to device memory (the ladder's :func:`latency_ladder`; the ``shared`` and
#: ``constant`` paths take the sizes their memories hold).
CURVE_LATENCY_SETS = {
    False: (4 * _KiB, 8 * _KiB, 16 * _KiB, 32 * _KiB, 48 * _KiB, 64 * _KiB, 128 * _KiB,
            192 * _KiB, 256 * _KiB, 384 * _KiB, 512 * _KiB, 1 * _MiB, 2 * _MiB, 4 * _MiB,
            8 * _MiB, 12 * _MiB, 16 * _MiB, 24 * _MiB, 32 * _MiB, 40 * _MiB, 48 * _MiB,
            64 * _MiB, 128 * _MiB, 256 * _MiB, 1 * _GiB),
    True: (4 * _KiB, 16 * _KiB, 48 * _KiB, 64 * _KiB, 128 * _KiB, 256 * _KiB, 512 * _KiB,
           1 * _MiB, 4 * _MiB, 16 * _MiB, 32 * _MiB, 48 * _MiB, 64 * _MiB, 256 * _MiB)}
#: The paths chased, by ``quick``: ``ca`` climbs L1, L2 and device memory; ``cg`` skips L1.
CURVE_LATENCY_VARIANTS = {False: ("ca", "cg", "shared", "constant"),
                          True: ("ca", "shared", "constant")}
#: The working sets the card's figure reads (bytes), by ``quick`` (:func:`bandwidth_ladder`:
#: shared up to 48 KiB, each SM its own copy up to 1 MiB, the whole grid from 1 MiB).
CURVE_BANDWIDTH_SETS = {
    False: (16 * _KiB, 32 * _KiB, 48 * _KiB, 64 * _KiB, 128 * _KiB, 192 * _KiB, 256 * _KiB,
            512 * _KiB, 1 * _MiB, 4 * _MiB, 8 * _MiB, 16 * _MiB, 24 * _MiB, 32 * _MiB,
            48 * _MiB, 64 * _MiB, 256 * _MiB, 1 * _GiB),
    True: (16 * _KiB, 48 * _KiB, 128 * _KiB, 256 * _KiB, 512 * _KiB, 1 * _MiB, 8 * _MiB,
           24 * _MiB, 64 * _MiB, 256 * _MiB)}

#: The curves' labels: (table, variant[, scope]) -> label.
_CURVE_LABELS = {("latency", "ca"): "global, ld.ca: L1, L2, device memory",
                 ("latency", "cg"): "global, ld.cg: L2, device memory (L1 skipped)",
                 ("latency", "shared"): "shared memory",
                 ("latency", "constant"): "constant memory",
                 ("bandwidth", "shared", "block"): "shared memory, each SM its own copy",
                 ("bandwidth", "read", "block"): "read, each SM its own copy (scope=block)",
                 ("bandwidth", "read", "grid"): "read once by the whole grid (scope=grid)"}
#: One colour per path, the same in both panels: (table, variant[, scope]) -> the path's
#: name, and its matplotlib colour.
_PATHS = {("latency", "ca"): "L1", ("latency", "cg"): "L2", ("latency", "tma"): "TMA",
          ("latency", "shared"): "shared", ("latency", "constant"): "constant",
          ("latency", "peer"): "peer GPU",
          ("bandwidth", "shared", "block"): "shared", ("bandwidth", "read", "block"): "L1",
          ("bandwidth", "read", "grid"): "L2"}
PATH_COLOURS = {"L1": "C0", "L2": "C1", "shared": "C2", "constant": "C3", "TMA": "C4",
                "peer GPU": "C5"}
#: The levels whose published figures the figure draws over the working sets they hold,
#: and the card levels whose sizes bound those working sets (marked by vertical lines).
_FIGURE_LEVELS = ("L1", "L2 near", "L2 far", "device memory")
_FIGURE_LINES = {"L1": "L1 + shared per SM", "L2 near": "half the L2", "L2 far": "L2"}


def card_curves(*, measure: bool | None = None, quick: bool = False,
                progress: bool = False) -> dict[str, Table] | None:
    """The ladder's latency and bandwidth against working set for the card's figure
    (:data:`CURVE_LATENCY_SETS` through :func:`gpumem.lessons.ladder.latency_ladder`,
    :data:`CURVE_BANDWIDTH_SETS` through :func:`~gpumem.lessons.ladder.bandwidth_ladder`):
    ``{"latency": Table, "bandwidth": Table}``, or None without a GPU (``measure`` false:
    the figure then draws the published figures alone).  About a second on an H100
    (``quick``: fewer rings and paths, shorter chases)."""
    fn = "report.card_curves"
    _check_flags(fn, measure=measure, quick=quick, progress=progress)
    if measure is None:
        measure = runtime.is_available()
    if not measure:
        return None
    lat = latency_ladder(CURVE_LATENCY_SETS[bool(quick)],
                         variants=CURVE_LATENCY_VARIANTS[bool(quick)],
                         steps=2048 if quick else 8192, progress=progress)
    bw = bandwidth_ladder(CURVE_BANDWIDTH_SETS[bool(quick)], variants=("shared", "read"),
                          repeat=3 if quick else 5, anchor=False, progress=progress)
    return {"latency": lat, "bandwidth": bw}


def _series(table: Table, name: str, value: str) -> list[tuple[str, list, list, str]]:
    """(label, working sets, values, path) of each path of a ladder table, sorted by size;
    rows not measured are left out; ``path`` names the colour (:data:`PATH_COLOURS`)."""
    out: dict[tuple, tuple[list, list]] = {}
    for r in table:
        if r.get(value) is None:
            continue
        key = (name, r["variant"]) + ((r["scope"],) if name == "bandwidth" else ())
        xs, ys = out.setdefault(key, ([], []))
        xs.append(r["working set"])
        ys.append(r[value])
    series = []
    for key, (xs, ys) in out.items():
        order = sorted(range(len(xs)), key=xs.__getitem__)
        series.append((_CURVE_LABELS.get(key, " ".join(key[1:])), [xs[i] for i in order],
                       [ys[i] for i in order], _PATHS.get(key, "")))
    return series


def _card_points(card: Sequence[dict]) -> list[tuple]:
    """Every card row the figure can place, as a marked point: ``(panel, level, bytes,
    measured, path, published, ceiling)`` -- latency at the ring the row chased (SM cycles;
    published: the middle of the published range), bandwidth at the set it read (GB/s;
    published and ceiling where the row has them)."""
    pts = []
    for r in card:
        if r.get("working_set") and (r.get("cycles") is not None or r.get("published_cycles")):
            pub = r.get("published_cycles")
            pts.append(("latency", r["level"], float(r["working_set"]), r.get("cycles"),
                        _PATHS.get(("latency", r.get("chase")), ""),
                        sum(pub) / 2 if pub else None, None))
        if r.get("bandwidth_working_set") and (r.get("GB/s") is not None
                                               or r.get("published_GB/s")):
            path = _PATHS.get(("bandwidth", *(r.get("bandwidth_path") or ())), "")
            pts.append(("bandwidth", r["level"], float(r["bandwidth_working_set"]), r.get("GB/s"),
                        path, r.get("published_GB/s"), r.get("ceiling_GB/s")))
    return pts


def _card_methods(card: Sequence[dict]) -> list[tuple]:
    """The latency rows' other methods (``methods``: :data:`gpumem.tools.card.METHODS`), as
    ``(level, bytes, method, cycles, path)`` at the working set the row chased."""
    return [(r["level"], float(r["working_set"]), k, float(v),
             _PATHS.get(("latency", r.get("chase")), ""))
            for r in card if r.get("working_set") and r.get("cycles") is not None
            for k, v in (r.get("methods") or {}).items() if v is not None]


def _card_spreads(card: Sequence[dict]) -> dict[str, tuple[float, float]]:
    """Each measured bandwidth row's spread, level -> (min, max) GB/s of its runs: the card
    figure's error bars."""
    return {r["level"]: (float(r["GB/s_min"]), float(r["GB/s_max"])) for r in card
            if r.get("GB/s_min") is not None and r.get("GB/s_max") is not None}


def card_figure(card: Sequence[dict], curves: Mapping[str, Table] | None = None,
                device: str | None = None) -> dict:
    """What the memory card's figure draws, as data (:func:`plot` draws it): two panels over
    one log2 axis of working-set bytes.

    ``latency`` and ``bandwidth``: ``(label, working sets, values)`` of each measured path
    (SM cycles per dependent load; GB/s), from ``curves`` (:func:`card_curves`; None: no
    GPU, no curve).  ``latency_bands`` and ``bandwidth_bands``: ``(level, from bytes, to
    bytes, low, high)``, the published figure of each level of :data:`_FIGURE_LEVELS` over
    the working sets it holds (from the card's row above it to its own size; device memory
    from the L2 on).  ``lines``: ``(bytes, label)``, the sizes that bound them (the card's
    rows: the device's attributes, else the published figures).  ``levels``: ``(bytes,
    level)`` where each level's name is written.  ``points``: every card row the figure can
    place (:func:`_card_points`), so that each row of the card is a marked point, its
    published figure and ceiling beside it; a path has one colour in both panels
    (:data:`PATH_COLOURS`).  ``methods``: ``(level, bytes, method, cycles, path)``, a row's
    latency as the papers measure it (the card's ``methods``: their ring, their whole
    chase), drawn beside the row's own point.  ``spreads``: level -> (min, max) GB/s of a measured row's runs,
    drawn as its error bar.  ``bandwidth_notes``: ``(bytes, text)``, a
    level's bandwidth published per clock (``"128 B/clk/SM"``: GB/s needs the clock a
    measurement sees, so without one it is written, not drawn).  ``title`` says what was measured, or that
    nothing was."""
    by = {r["level"]: r for r in card}
    lat = _series(curves["latency"], "latency", "cycles/load") if curves else []
    bw = _series(curves["bandwidth"], "bandwidth", "GB/s") if curves else []
    points = _card_points(card)
    xs = [x for _, sx, _, _ in lat + bw for x in sx] + [p[2] for p in points]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (4 * _KiB, 1 * _GiB)
    lines = [(float(by[k]["size"]), f"{label}: {size_text(by[k]['size'])}")
             for k, label in _FIGURE_LINES.items() if k in by and by[k].get("size")]
    lat_bands, bw_bands, levels, notes = [], [], [], []
    lower = x_lo
    for k in (k for k in _FIGURE_LEVELS if k in by):
        r = by[k]
        upper = float(r["size"]) if k in _FIGURE_LINES and r.get("size") else x_hi
        upper = min(max(upper, lower), x_hi)
        levels.append((math.sqrt(lower * upper), k))
        if r.get("published_cycles"):
            lat_bands.append((k, lower, upper, *map(float, r["published_cycles"])))
        if r.get("published_GB/s"):
            g = float(r["published_GB/s"])
            bw_bands.append((k, lower, upper, g, g))
        else:       # a bandwidth published per clock: GB/s only at a measured clock
            per_clock = [p.strip() for p in str(r.get("published", "")).split(",")
                         if "/clk" in p]
            notes += [(math.sqrt(lower * upper), f"{k}: {per_clock[0]} published")] \
                if per_clock else []
        lower = upper
    pub = "the published figures" if lat_bands or bw_bands else "no published figures known"
    if curves:
        title = (f"{device or 'this GPU'}: latency and bandwidth against working set (lines: "
                 f"measured, the ladder's chases and reads; grey: {pub})")
    else:
        title = (f"no GPU, nothing measured: {pub} of the {device or REFERENCE_GPU} "
                 "(the model's GPU), level by level, against working set")
    return {"title": title, "latency": lat, "bandwidth": bw, "latency_bands": lat_bands,
            "bandwidth_bands": bw_bands, "bandwidth_notes": notes, "lines": lines,
            "levels": levels, "points": points, "spreads": _card_spreads(card),
            "methods": _card_methods(card),
            "x_range": (x_lo, x_hi), "measured": bool(curves)}


#: How the card figure marks a latency measured the papers' way (card rows' ``methods``):
#: marker, where beside the row's own point (its working set times this), legend.
_METHOD_MARKS = {STRIDED: ("x", 1.3, "the row's chase on the papers' strided ring"),
                 PAPERS: ("+", 1.7, "the papers' chase (that ring, clock() per load)")}


def _plot_card(fig_data: dict, out_dir: str, plt: Any) -> str:
    """Draw :func:`card_figure`'s data into memory_card.png: latency over bandwidth, one
    log2 axis of working-set bytes, the cache sizes marked and the levels named."""
    fig, (lat, bw) = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True)
    marks = {"latency": "o", "bandwidth": "s"}
    for ax, name, unit in ((lat, "latency", "SM cycles per dependent load"),
                           (bw, "bandwidth", "GB/s")):
        ys = [y for _, _, vals, _ in fig_data[name] for y in vals]
        ys += [v for p in fig_data["points"] if p[0] == name for v in p[3:4] + p[5:7]
               if v is not None]
        for level, x0, x1, lo, hi in fig_data[f"{name}_bands"]:
            if hi > lo:
                ax.fill_between([x0, x1], [lo, lo], [hi, hi], color="0.8", lw=0, zorder=0)
            ax.plot([x0, x1], [(lo + hi) / 2] * 2, color="0.55", lw=1.2, zorder=1)
            ax.text(math.sqrt(x0 * x1), hi, f"{lo:,.0f}" + (f"-{hi:,.0f}" if hi > lo else ""),
                    ha="center", va="bottom", fontsize=7, color="0.4")
            ys += [lo, hi]
        if ys:              # at least a decade, so a lone figure is not stretched over the panel
            top, bottom = max(ys) * 1.6, min(ys) / 1.6
            mid = math.sqrt(top * bottom)
            ax.set_ylim(min(bottom, mid / 4), max(top, mid * 4))
        for label, xs, ys, path in fig_data[name]:
            ax.plot(xs, ys, marker=marks[name], ms=3.5, lw=1.4, label=label, zorder=3,
                    color=PATH_COLOURS.get(path))
        # the card's rows: measured (filled, the path's colour), published (hollow grey),
        # ceiling (black bar), each named
        for panel, level, x, got, path, pub, ceil in fig_data["points"]:
            if panel != name:
                continue
            if got is not None:
                lo_hi = fig_data.get("spreads", {}).get(level) if panel == "bandwidth" else None
                if lo_hi:       # min and max of the row's runs around their median
                    ax.errorbar([x], [got], yerr=[[got - lo_hi[0]], [lo_hi[1] - got]],
                                fmt="none", ecolor="k", elinewidth=1.0, capsize=3, zorder=5)
                ax.plot([x], [got], marker="D", ms=7, color=PATH_COLOURS.get(path, "k"),
                        mec="k", mew=0.8, zorder=5)
            if pub is not None:
                ax.plot([x], [pub], marker="o", ms=8, mfc="none", mec="0.35", mew=1.2,
                        zorder=4)
            if ceil is not None:
                ax.plot([x], [ceil], marker="_", ms=14, color="k", mew=1.6, zorder=4)
            y = got if got is not None else pub
            ax.annotate(level, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7,
                        zorder=6)
        if ax is lat:       # the papers' methods beside the row's own chase
            for level, x, method, cycles, path in fig_data.get("methods", ()):
                mark, dx, _ = _METHOD_MARKS.get(method, (".", 1.0, method))
                ax.plot([x * dx], [cycles], marker=mark, ms=7, mew=1.4, ls="none",
                        color=PATH_COLOURS.get(path, "k"), zorder=5)
        for x, label in fig_data["lines"]:
            ax.axvline(x, color="0.35", lw=0.8, ls="--", zorder=2)
            if ax is lat:
                ax.text(x, 0.02, f" {label}", rotation=90, va="bottom", fontsize=7,
                        transform=ax.get_xaxis_transform())
        ax.set_yscale("log")
        ax.set_ylabel(unit)
        if fig_data[name] or any(p[0] == name for p in fig_data["points"]):
            from matplotlib.lines import Line2D

            keys = [Line2D([], [], marker="D", ls="none", color="0.5", mec="k",
                           label="a card row, measured"),
                    Line2D([], [], marker="o", ls="none", mfc="none", mec="0.35",
                           label="its published figure")]
            if name == "bandwidth":
                keys.append(Line2D([], [], marker="_", ls="none", color="k", ms=12,
                                   label="its ceiling (published less known overheads)"))
            elif fig_data.get("methods"):
                keys += [Line2D([], [], marker=mark, ls="none", color="0.3", mew=1.4,
                                label=label)
                         for method, (mark, _, label) in _METHOD_MARKS.items()
                         if any(m[2] == method for m in fig_data["methods"])]
            handles = ax.get_legend_handles_labels()[0] + keys
            ax.legend(handles=handles, fontsize=7,
                      loc="upper left" if ax is lat else "lower left")
        elif not fig_data[f"{name}_bands"]:
            ax.text(0.5, 0.5, "nothing measured, no published figure", ha="center",
                    transform=ax.transAxes, fontsize=8, color="0.4")
    for x, text in fig_data["bandwidth_notes"]:
        bw.text(x, 0.5, text, ha="center", fontsize=7, color="0.4",
                transform=bw.get_xaxis_transform())
    for x, level in fig_data["levels"]:
        lat.text(x, 1.01, level, ha="center", va="bottom", fontsize=8,
                 transform=lat.get_xaxis_transform())
    bw.set_xscale("log", base=2)
    lo, hi = fig_data["x_range"]
    bw.set_xlim(lo / 1.4, hi * 1.4)       # room for the card's points at either end
    bw.set_xlabel("working set (bytes)")
    fig.suptitle(fig_data["title"], fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "memory_card.png"), dpi=100)
    plt.close(fig)
    return "memory_card.png"


def plot(rows: Sequence[dict], out_dir: str, *, measure: bool, quick: bool,
         card: Sequence[dict] = ()) -> list[str]:
    """PNG plots of the report into ``out_dir`` (needs matplotlib; [] without it):
    the memory card's figure (:func:`card_figure`: latency and bandwidth against working
    set, measured by :func:`card_curves` on a GPU, beside the published figures), the access lesson's gld efficiency against offsets 0..32 with the model's
    line, and matmul GFLOP/s per variant (the model's FLOPs per loaded float without a
    GPU).  Returns the file names written (:func:`plot_names` says which it would)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    names = []
    if card:
        device = runtime.device().name if measure else card_reference(False)[1]
        curves = card_curves(measure=measure, quick=quick)
        names.append(_plot_card(card_figure(card, curves, device), out_dir, plt))
    t = offset_sweep(range(0, 33), n=2**22 if quick else 2**24, repeat=3,
                            progress=False)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    offs = t["offset"]
    model_col = "gld_efficiency_model" if "gld_efficiency_model" in t.columns else \
        "gld_efficiency"
    ax.plot(offs, t[model_col], "-", color="0.4", label="model")
    if model_col != "gld_efficiency":
        ax.plot(offs, t["gld_efficiency"], "o", ms=4, label="measured")
    ax.set_xlabel("offset (floats)")
    ax.set_ylabel("gld efficiency (%)")
    ax.set_title("read_offset: global load efficiency against offset")
    ax.set_ylim(0, 105)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "access_gld_efficiency.png"), dpi=100)
    plt.close(fig)
    names.append("access_gld_efficiency.png")
    mm = next((r for r in rows if r["lesson"] == "matmul"), None)
    if mm is not None:
        cub = next((r for r in rows if "cublas_GFLOP/s" in r["measured"]), None)
        if measure and "naive_GFLOP/s" in mm["measured"]:
            labels = ["naive", "tiled"] + (["cuBLAS"] if cub else [])
            vals = [mm["measured"]["naive_GFLOP/s"], mm["measured"]["tiled_GFLOP/s"]]
            vals += [cub["measured"]["cublas_GFLOP/s"]] if cub else []
            ylabel, title = "GFLOP/s (measured)", mm["experiment"]
        else:
            labels = ["naive", "tiled"]
            vals = [mm["model"]["naive_flops_per_float"], mm["model"]["tiled_flops_per_float"]]
            ylabel, title = "FLOPs per loaded float (model)", mm["experiment"]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.bar(labels, vals, color=["#c44", "#48c", "#4a4"][:len(vals)])
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "matmul.png"), dpi=100)
        plt.close(fig)
        names.append("matmul.png")
    return names


#: The files :func:`write` writes into its folder besides the plots.
REPORT_FILES = ("report.md", "report.html", "report.json")


def write(out_dir: str, tables: Sequence[Table], *, header: Sequence[str] = (),
          rows: Sequence[dict] = (), measure: bool = False, quick: bool = False,
          card: Sequence[dict] = (), doc: str | None = None) -> list[str]:
    """Write report.md and report.html (and, for report rows, PNG plots) into ``out_dir``
    (created if missing), and report.json when ``doc`` (:func:`to_json`'s text, what
    ``--json`` prints and ``gpumem compare`` reads) is given.  report.html is one
    self-contained file: the plots are in it (base64 PNG), beside it as files too.
    Returns the paths written."""
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"report.write: out_dir must be a path, not {type(out_dir).__name__}")
    os.makedirs(out_dir, exist_ok=True)
    images = plot(rows, str(out_dir), measure=measure, quick=quick, card=card) if rows else []
    paths = []
    md = to_markdown(tables, header) + "".join(f"\n![{i}]({i})\n" for i in images)
    embedded = {}
    for i in images:
        with open(os.path.join(out_dir, i), "rb") as f:
            embedded[i] = f.read()
    texts = [md, to_html(tables, header, embedded)] + ([doc] if doc is not None else [])
    for name, text in zip(REPORT_FILES, texts):
        p = os.path.join(out_dir, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(p)
    return paths + [os.path.join(out_dir, i) for i in images]
