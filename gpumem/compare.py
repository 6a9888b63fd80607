"""``gpumem compare A.json B.json``: two GPUs side by side, from two ``gpumem report --json`` runs.

Two tables: the memory card, level by level -- size, cycles, ns and GB/s of
each run and B over A (cycles stay in the rows, the text shows ns) -- and the headlines, every number both runs measured
(each lesson's ``measured`` dict), with B over A.  A level or number only one
run has shows with the other side empty.

>>> from gpumem import compare
>>> a, b = compare.load("h100.json"), compare.load("h200.json")
>>> print(compare.as_text(a, b))

Face layer: reads JSON files, imports the runtime's Table.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

from .runtime.table import Table

__all__ = ["load", "label", "card_table", "headline_table", "as_text", "ReportFileError"]


class ReportFileError(ValueError):
    """A file that is not the JSON of ``gpumem report --json``."""


_WHAT = "the JSON of 'gpumem report --json'"


def _strs(where: str, r: dict, keys: tuple[str, ...]) -> str | None:
    """What is wrong with ``r``'s ``keys`` (each a str or None where present), or None."""
    for k in keys:
        if r.get(k) is not None and not isinstance(r[k], str):
            return f"{where}[{k!r}] is {_a(r[k])}, not a string"
    return None


def _objects(name: str, items: list, keys: tuple) -> str | None:
    """What is wrong with the list `name` of a report: an item that is not an object, or
    one whose `keys` are not strings; None where nothing is."""
    for i, r in enumerate(items):
        if not isinstance(r, dict):
            return f"{name}[{i}] is {json.dumps(r)[:40] if _plain(r) else type(r).__name__}, " \
                   "not an object"
        why = _strs(f"{name}[{i}]", r, keys)
        if why:
            return why
    return None


def _problem(doc: Any) -> str | None:
    """What keeps ``doc`` from being a report as ``gpumem report --json`` writes it (a dict
    whose ``rows`` is a list of dicts -- ``lesson`` and ``experiment`` strings, ``measured``
    a dict -- and whose optional ``card`` is a list of dicts -- ``level`` and ``size_text``
    strings), or None where it is one."""
    if not isinstance(doc, dict):
        return f"it is {_a(doc)}, not an object"
    if not isinstance(doc.get("rows"), list):
        return ("it has no 'rows' list" if "rows" not in doc else
                f"its 'rows' is {_a(doc['rows'])}, not a list")
    why = _objects("rows", doc["rows"], ("lesson", "experiment"))
    if why:
        return why
    for i, r in enumerate(doc["rows"]):
        if r.get("measured") is not None and not isinstance(r["measured"], dict):
            return f"rows[{i}]['measured'] is {_a(r['measured'])}, not an object"
    card = doc.get("card", [])
    if card is not None and not isinstance(card, list):
        return f"its 'card' is {_a(card)}, not a list"
    why = _objects("card", card or [], ("level", "size_text"))
    if why:
        return why
    why = _strs("its", doc, ("device", "_path"))
    return why.replace("its[", "its ") if why else None


def _a(v: Any) -> str:
    """``v``'s type with its article: 'a list', 'an int'."""
    t = type(v).__name__
    return ("an " if t[:1].lower() in "aeiou" else "a ") + t


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _report(fn: str, name: str, doc: Any) -> dict:
    """``doc`` checked (see :func:`_problem`): TypeError where it is not a dict, ValueError
    naming what is wrong inside it; ``fn`` and the argument ``name`` lead the message."""
    why = _problem(doc)
    if why is None:
        return doc
    exc = TypeError if not isinstance(doc, dict) else ValueError
    raise exc(f"{fn}: {name} is not a report as 'gpumem report --json' writes it: {why}")


def load(path: str | os.PathLike) -> dict:
    """The report a ``gpumem report --json`` run wrote to ``path`` (a dict), checked: it
    must hold ``rows`` (the headlines); ``card`` is optional (older runs lack it).  Every
    row is checked as the file is loaded (each an object, its names strings, its
    ``measured`` an object): :class:`ReportFileError` naming the file and what is wrong."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"compare.load: path must be a file name, not {type(path).__name__}")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ReportFileError(f"cannot read {os.fspath(path)!r}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:   # ValueError: JSONDecodeError, and an
        # integer of more digits than int() takes (sys.get_int_max_str_digits)
        raise ReportFileError(f"{os.fspath(path)!r} is not JSON ({e})") from None
    except RecursionError:
        raise ReportFileError(f"{os.fspath(path)!r} nests its brackets too deep to be "
                              f"{_WHAT}") from None
    why = _problem(doc)
    if why is not None:
        raise ReportFileError(f"{os.fspath(path)!r} is not {_WHAT} ({why})")
    if doc.get("card") is None:
        doc["card"] = []
    doc["_path"] = os.fspath(path)
    return doc


def label(doc: dict) -> str:
    """Who ran: the device (or that there was none), and the file."""
    _report("compare.label", "doc", doc)
    dev = doc.get("device") or "no GPU: model only"
    return f"{dev} ({os.path.basename(doc.get('_path', ''))}" + \
        (", --quick)" if doc.get("quick") else ")")


def _num(v: Any) -> float | None:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        f = float(v)                    # an int of JSON's can be too large for a float
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _ratio(a: Any, b: Any) -> float | None:
    a, b = _num(a), _num(b)
    return None if a is None or b is None or a == 0 else b / a


def _g(v: float | None) -> str:
    """Four significant digits: one column holds bytes, percentages and GB/s alike."""
    return "" if v is None else format(v, ",.4g")


def _merge(a: list, b: list, key) -> list[tuple[Any, dict | None, dict | None]]:
    """Rows of both lists by key, in A's order, then B's own."""
    ka = {key(r): r for r in a}
    kb = {key(r): r for r in b}
    keys = list(ka) + [k for k in kb if k not in ka]
    return [(k, ka.get(k), kb.get(k)) for k in keys]


def card_table(a: dict, b: dict) -> Table:
    """The two memory cards, level by level: size, cycles, ns and GB/s of A and B, and
    B / A of each (sizes that differ show as ``"A | B"``); each run's ceiling and measured
    over it where its card has them (runs from before the ceilings: empty)."""
    a, b = _report("compare.card_table", "a", a), _report("compare.card_table", "b", b)
    rows = []
    for level, ra, rb in _merge(a.get("card") or [], b.get("card") or [],
                                lambda r: r.get("level")):
        ra, rb = ra or {}, rb or {}
        sa, sb = ra.get("size_text", ""), rb.get("size_text", "")
        rows.append({"level": level, "size": sa if sa == sb or not sb else
                     sb if not sa else f"{sa} | {sb}", "A cycles": _num(ra.get("cycles")),
                     "B cycles": _num(rb.get("cycles")),
                     "B/A cycles": _ratio(ra.get("cycles"), rb.get("cycles")),
                     "A ns": _num(ra.get("ns")), "B ns": _num(rb.get("ns")),
                     "B/A ns": _ratio(ra.get("ns"), rb.get("ns")),
                     "A GB/s": _num(ra.get("GB/s")), "B GB/s": _num(rb.get("GB/s")),
                     "B/A GB/s": _ratio(ra.get("GB/s"), rb.get("GB/s")),
                     "A ceiling GB/s": _num(ra.get("ceiling_GB/s")),
                     "B ceiling GB/s": _num(rb.get("ceiling_GB/s")),
                     "A x ceiling": _num(ra.get("ceiling_ratio")),
                     "B x ceiling": _num(rb.get("ceiling_ratio"))})
    # printed: ns (clocks differ between GPUs), GB/s and each run's measured over its ceiling
    # (the report's ceiling: the published figure less the known overheads); the rows keep
    # the cycles and the ceilings' GB/s too
    return Table(rows, columns=["level", "size", "A ns", "B ns", "B/A ns", "A GB/s", "B GB/s",
                                "B/A GB/s", "A x ceiling", "B x ceiling"],
                 title="memory card, A against B: measured ns and GB/s, B over A, and each "
                       "over its ceiling (the rows keep cycles and the ceilings)")


def headline_table(a: dict, b: dict) -> Table:
    """Every number the headlines measured, A against B, with B / A."""
    a, b = _report("compare.headline_table", "a", a), _report("compare.headline_table", "b", b)
    rows = []
    pairs = _merge(a["rows"], b["rows"], lambda r: (r.get("lesson"), r.get("experiment")))
    for (lesson, _), ra, rb in pairs:
        ma, mb = (ra or {}).get("measured") or {}, (rb or {}).get("measured") or {}
        for name in list(ma) + [k for k in mb if k not in ma]:
            va, vb = _num(ma.get(name)), _num(mb.get(name))
            if va is None and vb is None:
                continue
            rows.append({"lesson": lesson, "measured": name, "A": _g(va), "B": _g(vb),
                         "B/A": _ratio(va, vb)})
    title = "headlines, A against B"
    if not rows:
        title += " (neither run measured anything: both without a GPU)"
    return Table(rows, columns=["lesson", "measured", "A", "B", "B/A"],
                 title=title)


def as_text(a: dict, b: dict) -> str:
    """Both tables as text, after a line naming each run."""
    a, b = _report("compare.as_text", "a", a), _report("compare.as_text", "b", b)
    return "\n\n".join([f"A: {label(a)}\nB: {label(b)}", str(card_table(a, b)),
                        str(headline_table(a, b))])
