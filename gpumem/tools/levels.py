"""The memory levels read off a latency ladder (:func:`gpumem.lessons.ladder.latency_ladder`):
the cache sizes where its curve steps (:func:`_read_cache_sizes`, behind
:func:`gpumem.lessons.ladder.cache_sizes`), each level's latency beside the published
figures (:func:`latency_levels`), and those figures as a table (:func:`published_figures`).

The ladder lesson's reading of its tables, kept apart from its kernels and sweeps;
:mod:`gpumem.lessons.ladder` re-exports these names.  Tools layer: imports the runtime.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

from .. import runtime
from ..runtime.args import arg_range
from ..runtime.published import REFERENCE_GPU, compared_with as _published, published
from ..runtime.table import Table

__all__ = ["published_figures", "latency_levels", "LATENCY_LEVELS", "L1_SHARED_PER_SM"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

SHARED_MAX = 48 * KiB        #: bytes: the shared ring lives in one block's default dynamic smem
CONSTANT_MAX = 64 * KiB      #: bytes: the constant ring fills the user constant bank
#: bytes: the largest ring (the latency kernel's limit, from the C argument table)
MAX_WORKING_SET = arg_range("latency", "working_set")[1]

#: The L2 bytes assumed where no device says its own: the published L2 of the model's GPU.
REFERENCE_L2 = int(published(REFERENCE_GPU).get("l2_mb")) * MiB

#: The unified L1 data cache + shared memory of one SM, bytes, by compute
#: capability (CUDA C++ Programming Guide, compute capabilities): the L1 in
#: use is this minus the shared-memory carveout of the running kernel.
L1_SHARED_PER_SM = {(7, 0): 128 * KiB, (7, 2): 128 * KiB, (7, 5): 96 * KiB, (8, 0): 192 * KiB,
                    (8, 6): 128 * KiB, (8, 7): 192 * KiB, (8, 9): 128 * KiB, (9, 0): 256 * KiB,
                    (10, 0): 256 * KiB, (10, 3): 256 * KiB, (11, 0): 256 * KiB,
                    (12, 0): 128 * KiB, (12, 1): 128 * KiB}

#: The levels :func:`latency_levels` reads off a latency ladder, in order.
LATENCY_LEVELS = ("shared", "constant", "L1", "L2 near", "L2 far", "device memory")


# ---- the published figures ------------------------------------------------------------
def published_figures(gpu: Any = None) -> Table:
    """A GPU's published figures (:mod:`gpumem.runtime.published`) as a table: latency in
    cycles per dependent load (low..high), then the vendor's and the papers' figures,
    each with its source.  ``gpu``: a device name or :class:`gpumem.DeviceInfo` (default
    the running GPU; without one the reference H100).  An unknown GPU gives an empty
    table whose title says no published figures are known."""
    pub, name = _published(gpu, "published_figures")
    if pub is None:
        return Table([], columns=["what", "low", "high", "unit", "source"],
                     title=f"no published figures are known for {name}")
    rows = [{"what": f"latency: {k}", "low": lo, "high": hi, "unit": "cycles",
             "source": pub.source(k)} for k in LATENCY_LEVELS
            for lo, hi in [pub.latency(k) or (None, None)] if lo is not None]
    for k, v in pub.figures.items():
        lo, hi = v if isinstance(v, tuple) else (v, v)
        rows.append({"what": k, "low": lo, "high": hi, "unit": pub.units.get(k, ""),
                     "source": pub.source(k)})
    return Table(rows, columns=["what", "low", "high", "unit", "source"],
                 sources={"low": "published", "high": "published"},
                 title=f"{pub.key}: published figures (vendor and papers)")


# ---- reading a latency ladder ------------------------------------------------------------
def _global_rows(table: Table, variant: str) -> list[dict]:
    rows = [r for r in table if r.get("variant") == variant and r.get("cycles/load") is not None
            and r.get("lanes", 1) == 1]
    return sorted(rows, key=lambda r: r["working set"])


def _crossing(rows: list[dict], threshold: float, start: int) -> int | None:
    """Index of the first row from ``start`` whose cycles exceed ``threshold``."""
    for j in range(max(start, 1), len(rows)):
        if rows[j]["cycles/load"] > threshold:
            return j
    return None


def _interp(rows: list[dict], j: int, threshold: float) -> float:
    """The working set where the curve crosses ``threshold`` between rows j-1 and j
    (linear in cycles, logarithmic in bytes)."""
    a, b = rows[j - 1], rows[j]
    ca, cb = a["cycles/load"], b["cycles/load"]
    f = 0.0 if cb <= ca else min(max((threshold - ca) / (cb - ca), 0.0), 1.0)
    return float(2 ** (math.log2(a["working set"]) + f * (math.log2(b["working set"])
                                                             - math.log2(a["working set"]))))


def _device_or_none(fn: str, device: Any) -> Any:
    if device is not None:
        if not all(hasattr(device, a) for a in ("compute_capability", "l2_cache_size")):
            raise TypeError(f"{fn}: device must be a gpumem.DeviceInfo (gpumem.device()) or "
                            f"None, not {type(device).__name__}")
        return device
    return runtime.device() if runtime.is_available() else None


def _read_cache_sizes(table: Table, variant: str, dev: Any) -> Table:
    """:func:`gpumem.lessons.ladder.cache_sizes` once it has its table: the steps of the
    ``variant`` rows, beside ``dev``'s stated sizes (``dev`` None: none stated)."""
    fn = "cache_sizes"
    rows = _global_rows(table, variant)
    if not rows and any(r.get("variant") == variant and r.get("cycles/load") is None
                        for r in table):
        raise ValueError(f"{fn}: the table's {variant} rows were not measured (a ladder made "
                         "without a GPU lists what it would measure); measure one on a GPU")
    if len(rows) < 8:
        raise ValueError(f"{fn}: the table has {len(rows)} measured one-lane rows of "
                         f"variant={variant!r}; reading the steps needs at least 8 (from L1-sized "
                         "rings to rings far beyond the L2)")
    cyc = [r["cycles/load"] for r in rows]
    p1 = statistics.median(cyc[:3])
    ph = statistics.median(cyc[-3:])
    j = _crossing(rows, 2 * p1, 1)
    if j is None or j + 1 >= len(rows):
        raise ValueError(f"{fn}: the table's {variant} rows show no L1 step (all within 2x "
                         f"of {p1:.0f} cycles): the rings must grow past L1")
    p2 = min(cyc[j + 1:]) if j + 1 < len(cyc) else cyc[j]
    t1 = math.sqrt(p1 * p2)
    j1 = _crossing(rows, t1, 1)
    t_near, t_l2 = p2 + 0.25 * (ph - p2), p2 + 0.75 * (ph - p2)
    j_near = _crossing(rows, t_near, j1 + 1) if j1 is not None else None
    j_l2 = _crossing(rows, t_l2, j_near if j_near is not None else (j1 or 1))
    l1_stated = l2_stated = None
    if dev is not None:
        l1_stated = L1_SHARED_PER_SM.get(tuple(dev.compute_capability))
        l2_stated = int(dev.l2_cache_size) or None

    def ns_of(lo: float, hi: float) -> float | None:
        ns = [r["ns/load"] for r in rows if lo <= r["cycles/load"] <= hi
              and r.get("ns/load") is not None]
        return statistics.median(ns) if ns else None

    def step(level: str, jj: int | None, thr: float, plateau: float, stated: int | None) -> dict:
        row = {"level": level, "cycles/load": plateau, "ns/load": None, "threshold": thr,
               "from": None, "to": None, "measured": None, "stated": stated,
               "measured / stated": None}
        if jj is not None:
            row.update({"from": rows[jj - 1]["working set"], "to": rows[jj]["working set"],
                        "measured": _interp(rows, jj, thr)})
            if stated:
                row["measured / stated"] = row["measured"] / stated
        return row

    far = [c for k, c in enumerate(cyc) if j_near is not None and j_l2 is not None
           and j_near <= k < j_l2]
    out = [step("L1 (capacity in use)", j1, t1, p1, l1_stated),
           step("L2 near partition", j_near, t_near, p2, l2_stated // 2 if l2_stated else None),
           step("L2", j_l2, t_l2, statistics.median(far) if far else None, l2_stated),
           {"level": "device memory", "cycles/load": ph, "ns/load": None}]
    out[0]["ns/load"] = statistics.median([r["ns/load"] for r in rows[:3]])
    out[1]["ns/load"] = ns_of(p2 * 0.999, p2 * 1.001)
    out[3]["ns/load"] = statistics.median([r["ns/load"] for r in rows[-3:]])
    if far:
        out[2]["ns/load"] = statistics.median(rows[k]["ns/load"] for k in range(j_near, j_l2))
    src = {c: "measured" for c in ("cycles/load", "ns/load", "from", "to", "measured")}
    src.update({"stated": "device", "measured / stated": "measured"})
    return Table(out, columns=["level", "cycles/load", "ns/load", "threshold", "from", "to",
                               "measured", "stated", "measured / stated"], sources=src,
                 title=f"cache sizes read off the {variant} latency ladder")


def latency_levels(table: Table, *, device: Any = None) -> Table:
    """Each level's latency in a :func:`latency_ladder` table beside the device's
    published figures (:func:`published_figures`; None where none are published).

    * shared: the median over the ``shared`` rings; constant: the lowest
      ``constant`` ring (the constant cache proper; larger rings spill to its L1.5);
    * L1: the median of ``ca`` rings up to 64 KiB;
    * L2 near: the median of ``cg`` rings up to 4 MiB (``cg`` skips L1; without
      ``cg`` rows, ``ca`` rings of 1-4 MiB);
    * L2 far: the median of ``cg`` (else ``ca``) rings between 0.55 and 0.9 of the
      L2 -- too large for one partition, small enough for the whole L2;
    * device memory: the median of the rings of at least 8 times the L2.

    The L2 size is ``device``'s (default :func:`gpumem.device`), else :data:`REFERENCE_L2`.
    Returns a Table: level, cycles/load, ns/load, published low and high, and
    whether the measurement lies within them.
    """
    fn = "latency_levels"
    if not isinstance(table, Table):
        raise TypeError(f"{fn}: table must be a gpumem.Table from latency_ladder, not "
                        f"{type(table).__name__}")
    dev = _device_or_none(fn, device)
    l2 = int(dev.l2_cache_size) if dev is not None and dev.l2_cache_size else REFERENCE_L2

    def pick(variant: str, lo: float, hi: float) -> list[dict]:
        return [r for r in _global_rows(table, variant) if lo <= r["working set"] <= hi]

    def agg(rows: list[dict], how=statistics.median) -> tuple[float | None, float | None]:
        if not rows:
            return None, None
        return how(r["cycles/load"] for r in rows), how(r["ns/load"] for r in rows)

    lowest = lambda vals: min(vals)  # noqa: E731
    near = pick("cg", 0, 4 * MiB) or pick("ca", 1 * MiB, 4 * MiB)
    far = pick("cg", 0.55 * l2, 0.9 * l2) or pick("ca", 0.55 * l2, 0.9 * l2)
    dram = pick("cg", 8 * l2, MAX_WORKING_SET) or pick("ca", 8 * l2, MAX_WORKING_SET)
    found = {"shared": agg(pick("shared", 0, SHARED_MAX)),
             "constant": agg(pick("constant", 0, CONSTANT_MAX), lowest),
             "L1": agg(pick("ca", 0, 64 * KiB)),
             "L2 near": agg(near), "L2 far": agg(far), "device memory": agg(dram)}
    pub, name = _published(dev)
    rows = []
    for level in LATENCY_LEVELS:
        lo, hi = (pub.latency(level) if pub else None) or (None, None)
        cyc, ns = found[level]
        rows.append({"level": level, "cycles/load": cyc, "ns/load": ns, "published low": lo,
                     "published high": hi,
                     "within": None if cyc is None or lo is None else bool(lo <= cyc <= hi)})
    return Table(rows, sources={"cycles/load": "measured", "ns/load": "measured",
                                "published low": "published", "published high": "published"},
                 title=f"latency per level beside the published figures of {name}"
                 + ("" if pub else " (none are known)"))
