"""The memory card: one row per level of the hierarchy, beside the published figures.

A lesson that measures a level declares ``card(measure, quick) -> list[dict]``
(:class:`gpumem.tools.lesson.Lesson`) and builds each row with :func:`card_row`;
``gpumem report`` opens with the rows of every lesson that declares one, so a
new lesson is in the card by construction.  Each row is a dict with the keys

``level``, ``lesson``, ``depth``
    The level (``"L2 near"``), the lesson that measures it, and where the level sits
    (:data:`DEPTH`: the card lists rows from the SM outwards).
``size``
    Bytes of the level (None where a size means nothing, e.g. the host link);
    ``size_text`` says it for people (``"228 KiB/SM"``).
``cycles``, ``ns``, ``GB/s``
    What this GPU measured (None without a GPU or where the row measures no such
    thing): SM cycles and nanoseconds of one dependent access, bytes per second.
``published``, ``published_cycles``, ``published_GB/s``, ``source``
    The published figure as text and as numbers (:mod:`gpumem.runtime.published`),
    and where it comes from.
``cycles_ratio``, ``GB/s_ratio``
    Measured over published: cycles over the middle of the published range, GB/s
    over GB/s (None where either side is missing); :func:`ratio_text` prints both.
``ceiling_GB/s``, ``ceiling``, ``ceiling_ratio``
    What the path can deliver after its known overheads (:mod:`gpumem.model.ceiling`:
    the published figure times each named, sourced overhead; ``ceiling`` is that
    itemisation as a dict), and measured over it.
``why``, ``why_value``
    The counter or condition that explains the rest of the gap, from the same run, as
    text and as a number (e.g. the link's raw bytes per payload byte); empty where none
    is read.
``GB/s_min``, ``GB/s_max``, ``runs``
    The spread of the measured bandwidth: the median above is of ``runs`` runs.
``how``
    What the row measures (or would measure, without a GPU).
``methods``
    Where a row's latency is also measured the papers' way: cycles per load by each of
    :data:`METHODS` (None elsewhere).

Around the rows: :func:`conditions` (the run's clocks, power limit, ECC... from NVML, for the
card's title and JSON), :func:`ceiling_table` (every ceiling itemised: *where each gap
goes*), :func:`methods_table` (each latency as the papers measure it, the difference
split into the ring's part and the clock's) and :func:`unpublished_table` (the levels with
no published figure, and the sources searched for one).

Tools layer: imports the runtime.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import runtime
from ..model.ceiling import Ceiling
from ..runtime.published import REFERENCE_GPU, Published, published
from ..runtime.table import Table

__all__ = ["DEPTH", "card_row", "card_reference", "size_text", "published_latency", "published_figure",
           "published_for", "ratio_text", "ceiling_text", "CARD_COLUMNS", "CARD_RUNS",
           "gbps_spread", "conditions", "conditions_text", "ceiling_table", "METHODS",
           "methods_table", "unpublished_table"]

#: Where each level sits, from the SM outwards (the card's order; a level not named here
#: goes last, in lesson order).
DEPTH = {"registers": 0, "shared": 1, "constant": 2, "L1": 3, "distributed shared": 3.5, "L2 near": 4,
         "L2 near, TMA": 4.5, "L2 far": 5, "device memory": 6, "peer GPU, one way": 6.3,
         "peer GPU, both ways": 6.4, "peer GPU, latency": 6.5, "host -> device": 7,
         "device -> host": 8, "pool, 1 MiB": 9, "cudaMalloc, 1 MiB": 10}

#: Runs behind each measured figure of the card: it shows their median, and keeps their
#: min and max (``spread``).
CARD_RUNS = 10

#: The card's printed columns: row key -> header.
CARD_COLUMNS = {"level": "level", "size_text": "size", "cycles": "cycles", "ns": "ns",
                "GB/s": "GB/s", "published": "published", "ratio_text": "x published",
                "ceiling": "ceiling", "ceiling_ratio": "x ceiling", "why": "why",
                "lesson": "from"}


def gbps_spread(nbytes: float, runs_ms) -> tuple[float, float, int]:
    """``card_row``'s ``spread`` of runs that each moved ``nbytes`` in ``runs_ms``
    milliseconds: (min GB/s, max GB/s, runs)."""
    runs = list(runs_ms)
    return nbytes / max(runs) / 1e6, nbytes / min(runs) / 1e6, len(runs)


def size_text(nbytes: float | None, per: str = "") -> str:
    """``nbytes`` for people, binary units (``"50 MiB"``); ``per`` is appended (``"/SM"``)."""
    if nbytes is None:
        return ""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            v = nbytes / scale
            return (f"{v:.0f}" if v >= 10 or v == int(v) else f"{v:.1f}") + f" {unit}{per}"
    return f"{nbytes:.0f} B{per}"


def card_reference(measure: bool) -> tuple[Published | None, str]:
    """The published figures the card compares with, and the GPU's name: the running
    GPU's (None where none are known); without a GPU (``measure`` false) the reference
    GPU's, the one the model assumes."""
    if measure:
        name = runtime.device().name
        return published(name), name
    return published(REFERENCE_GPU), REFERENCE_GPU


def card_row(level: str, lesson: str, *, size: float | None = None, size_text_: str = "",
             cycles: float | None = None, ns: float | None = None, gbps: float | None = None,
             published_cycles: tuple[float, float] | None = None,
             published_gbps: float | None = None, published_text: str = "",
             source: str | None = None, how: str = "", published_for: str = "",
             ceiling: Ceiling | None = None, why: str = "", why_value: float | None = None,
             spread: tuple[float, float, int] | None = None,
             methods: Mapping[str, float] | None = None) -> dict:
    """One card row (see the module docstring).  ``published_text`` stands for the
    published bandwidth where it is stated in other units (``"128 B/clk/SM"``);
    ``published_gbps`` may still carry its GB/s for the ratio.  ``published_for``: the
    GPU a figure was published for where it is not this one (another of its chip),
    named after the figure.  ``ceiling``: the path's ceiling (:mod:`gpumem.model.ceiling`);
    ``why``/``why_value``: what explains the rest; ``spread``: (min, max, runs) of the
    measured GB/s; ``methods``: the same level's cycles per load as other methods measure
    them (:data:`METHODS`; :func:`methods_table`)."""
    parts = []
    if published_cycles is not None:
        lo, hi = published_cycles
        parts.append(f"{lo:g} cyc" if lo == hi else f"{lo:g}-{hi:g} cyc")
    if published_text:
        parts.append(published_text)
    elif published_gbps is not None:
        parts.append(f"{published_gbps:,.0f} GB/s")
    if parts and published_for:
        parts[-1] += f" ({published_for})"
    lat_ratio = bw_ratio = None
    if cycles is not None and published_cycles is not None:
        lat_ratio = cycles / (0.5 * (published_cycles[0] + published_cycles[1]))
    if gbps is not None and published_gbps:
        bw_ratio = gbps / published_gbps
    return {"level": level, "lesson": lesson, "depth": DEPTH.get(level, len(DEPTH) + 1),
            "size": size,
            "size_text": size_text_ or size_text(size), "cycles": cycles, "ns": ns,
            "GB/s": gbps, "published": ", ".join(parts),
            "published_cycles": list(published_cycles) if published_cycles else None,
            "published_GB/s": published_gbps, "source": source,
            "cycles_ratio": lat_ratio, "GB/s_ratio": bw_ratio, "how": how,
            "ceiling_GB/s": ceiling.gbps if ceiling else None,
            "ceiling": ceiling.as_dict() if ceiling else None,
            "ceiling_ratio": gbps / ceiling.gbps if ceiling and gbps is not None else None,
            "why": why, "why_value": why_value,
            "GB/s_min": spread[0] if spread else None, "GB/s_max": spread[1] if spread else None,
            "runs": spread[2] if spread else None,
            "methods": dict(methods) if methods else None}


def ratio_text(row: dict) -> str:
    """The card's ``x published`` cell: measured over published, latency and bandwidth."""
    parts = []
    if row.get("cycles_ratio") is not None:
        parts.append(f"{row['cycles_ratio']:.2f} lat")
    if row.get("GB/s_ratio") is not None:
        parts.append(f"{row['GB/s_ratio']:.2f} BW")
    return ", ".join(parts)


def ceiling_text(row: dict) -> str:
    """The card's ``ceiling`` cell: the ceiling's GB/s (its itemisation is in the row's
    ``ceiling`` and in the lines under the card)."""
    v = row.get("ceiling_GB/s")
    return "" if v is None else f"{v:,.0f} GB/s"


def published_latency(entry: Published | None, level: str) -> dict[str, Any]:
    """``card_row`` keywords for the published latency of ``level`` (none where unknown)."""
    if entry is None or entry.latency(level) is None:
        return {}
    return {"published_cycles": entry.latency(level), "source": entry.source(level),
            **published_for(entry, level)}


def published_for(entry: Published | None, name: str) -> dict[str, str]:
    """``card_row``'s ``published_for`` where the figure ``name`` is another GPU's of the
    chip (:data:`gpumem.runtime.published.SAME_CHIP`); none where it is this GPU's."""
    if entry is None:
        return {}
    key = entry.published_for(name)
    return {"published_for": key} if key != entry.key else {}


def published_figure(entry: Published | None, name: str) -> dict[str, Any]:
    """``card_row`` keywords for a published bandwidth figure (GB/s) ``name``."""
    if entry is None or entry.get(name) is None:
        return {}
    return {"published_gbps": float(entry.get(name)), "source": entry.source(name),
            **published_for(entry, name)}


# ---- what the card says around its rows: the run's conditions, where each gap goes ------
def conditions(measure: bool) -> dict | None:
    """The conditions the card is measured under (:func:`gpumem.runtime.nvml.conditions` of
    the current GPU: clocks, power limit, ECC, persistence, driver, links); None without a
    GPU."""
    return runtime.nvml.conditions() if measure else None


def conditions_text(cond: Mapping[str, Any] | None) -> str:
    """``conditions`` in a few words for the card's title; "" without them."""
    if not cond:
        return ""
    if not cond.get("nvml"):
        return "conditions unknown (NVML not available)"

    def said(v, fmt="{}"):
        return "unknown" if v is None else fmt.format(v)
    onoff = {True: "on", False: "off", None: "unknown"}
    held = cond.get("clock_event_reasons") or []
    return (f"SM clock {said(cond.get('sm_clock_mhz'))} MHz now, max "
            f"{said(cond.get('max_sm_clock_mhz'))}; memory clock "
            f"{said(cond.get('memory_clock_mhz'))} MHz; power limit "
            f"{said(cond.get('power_limit_w'), '{:.0f}')} W; ECC {onoff[cond.get('ecc')]}; "
            f"persistence {onoff[cond.get('persistence_mode')]}; driver "
            f"{said(cond.get('driver'))}"
            + (f"; clocks held back by: {', '.join(held)}" if [h for h in held if h != "idle"]
               else ""))


def _short_source(text: str | None) -> str:
    """A published figure's source in a few words: the datasheet's name in its brackets
    (``"https://... (H100 Tensor Core GPU datasheet)"``), else up to the first comma."""
    text = (text or "").split(" -- ")[0]          # "... -- published for the H100 SXM"
    if text.endswith(")") and " (" in text:
        return text[text.rindex(" (") + 2:-1]
    return text.split(",")[0]


def ceiling_table(rows: Sequence[dict], title: str = "where each gap goes") -> Table:
    """The card's ceilings itemised: for each row with one, the published figure, then one
    line per overhead (its factor and source), the ceiling, the measured figure over it and
    the counter or condition that explains the rest (:mod:`gpumem.model.ceiling`)."""
    out = []
    for r in rows:
        c = r.get("ceiling")
        if not c:
            continue
        out.append({"level": r["level"], "step": c["start"], "factor": None,
                    "GB/s": c["start_GB/s"], "source": _short_source(r.get("source"))})
        for o in c["overheads"]:
            out.append({"level": "", "step": o["what"], "factor": o["factor"], "GB/s": None,
                        "source": o["source"]})
        out.append({"level": "", "step": "ceiling", "factor": None, "GB/s": c["GB/s"],
                    "source": "gpumem.model.ceiling"})
        if r.get("GB/s") is not None:
            out.append({"level": "", "step": f"measured: {r['ceiling_ratio']:.2f} of the "
                        "ceiling" + (f"; why: {r['why']}" if r.get("why") else ""),
                        "factor": None, "GB/s": r["GB/s"], "source": "this run"})
    return Table(out, columns=["level", "step", "factor", "GB/s", "source"], title=title)


#: The latency methods a card row may carry beside its own chase (``card_row``'s
#: ``methods``): gpumem's chase on the papers' ring, then the papers' whole method (that ring
#: timed load by load with clock(), as Mei and Chu, Jia et al. and Luo et al. measure).
STRIDED, PAPERS = "strided ring", "papers' chase"
METHODS = (STRIDED, PAPERS)


def methods_table(rows: Sequence[dict],
                  title: str = "each latency as the papers measure it") -> Table:
    """For each card row that carries :data:`METHODS`: its published latency, gpumem's
    chase, the same chase on the papers' strided ring, and the papers' whole method; the
    difference split into what the ring adds and what timing each load with clock() adds,
    and whether the papers' method lands in the published range (within 5% of its ends).
    Cells are text, cycles to one decimal; the numbers are the rows' ``methods``."""
    out = []
    for r in rows:
        m, own = r.get("methods") or {}, r.get("cycles")
        if own is None or not all(m.get(k) is not None for k in METHODS):
            continue
        pub = r.get("published_cycles")
        lo, hi = pub if pub else (None, None)
        papers = m[PAPERS]
        if pub is None:
            verdict = "none known"
        elif lo * 0.95 <= papers <= hi * 1.05:
            verdict = "reproduced"
        else:
            verdict = f"not reproduced ({papers / (0.5 * (lo + hi)):.2f}x)"
        out.append({"level": r["level"],
                    "published": "" if pub is None else (f"{lo:g}" if lo == hi else
                                                         f"{lo:g}-{hi:g}"),
                    "gpumem's chase": f"{own:.1f}", STRIDED: f"{m[STRIDED]:.1f}",
                    PAPERS: f"{papers:.1f}", "ring adds": f"{m[STRIDED] - own:+.1f}",
                    "clock() adds": f"{papers - m[STRIDED]:+.1f}",
                    "papers' figure": verdict})
    return Table(out, columns=["level", "published", "gpumem's chase", STRIDED, PAPERS,
                               "ring adds", "clock() adds", "papers' figure"], title=title)


def unpublished_table(rows: Sequence[dict], entry: Published | None,
                      title: str = "no published figure known") -> Table:
    """One line for the measured rows with no published figure ("none known" in the card):
    which levels, and every source gpumem holds for this GPU (and its chip) that was
    searched for them.  Empty where every measured row has a figure, or nothing is
    measured."""
    levels = [r["level"] for r in rows if not r.get("published") and any(
        r.get(k) is not None for k in ("cycles", "ns", "GB/s"))]
    if not levels:
        return Table([], columns=["levels", "searched"], title=title)
    if entry is None:
        searched = "gpumem holds no published figures for this GPU"
    else:
        searched = "; ".join(sorted({_short_source(t).split(";")[0] for t in _cited(
            [*entry.sources.values(), *entry.latency_sources.values()])}))
    return Table([{"levels": "; ".join(levels), "searched": searched}],
                 columns=["levels", "searched"], title=title)


def _cited(texts: Sequence[str]) -> list[str]:
    """Source texts, a text that cites others by their key (``"... (luo2024) and ...
    (chipsandcheese-h100)"``) replaced by theirs."""
    from ..runtime.published import _data

    names = _data()["sources"]
    out = []
    for t in texts:
        keys = [k for k in names if f"({k})" in (t or "")]
        out += [names[k] for k in keys] if keys else [t] if t else []
    return out
