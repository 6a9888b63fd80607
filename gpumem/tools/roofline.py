"""The roofline: how fast a kernel can be, given how many FLOPs it does per byte it moves.

A kernel that does ``I`` floating-point operations per byte of device memory it
moves (its *arithmetic intensity*) can run at most at ``min(peak, I x bandwidth)``
GFLOP/s: below the *ridge point* ``peak / bandwidth`` it is memory-bound (the
slanted roof), above it compute-bound (the flat one).  :func:`roofline` places
each kernel launch under that roof:

* its bytes: the DRAM bytes the hardware counted when the launch was profiled
  (``dram_read_bytes + dram_write_bytes``, source ``measured``), else the bytes
  the launch declares it must move (each array once, source ``declared``) or, in
  a Table you build, whatever you give (e.g. :mod:`gpumem.model`'s, source
  ``model``);
* its FLOP/s: FLOPs over the measured time (None without a time: model points sit
  on the roof);
* the roof: the device's FP32 peak (SMs x FP32 lanes x 2 x clock) and its memory
  bandwidth (theoretical, or a measured device copy you pass).

>>> with gm.profile(["dram_read_bytes", "dram_write_bytes"]) as p:
...     gm.matmul(a, b, variant="tiled")
>>> t = gm.roofline(p)            # or records, bench results, or a Table
>>> gm.plot_roofline(t)
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Mapping

import numpy as np

from .. import runtime
from ..runtime.hardware import FP32_LANES
from ..runtime.published import REFERENCE_GPU, published
from ..runtime.table import Table

__all__ = ["roofline", "plot_roofline", "FP32_LANES", "H100_SXM"]

#: The roof used where no device is given and no GPU is present: the reference GPU's
#: published FP32 peak and memory bandwidth (:mod:`gpumem.runtime.published`: an H100 SXM).
_REF = published(REFERENCE_GPU)
H100_SXM = {"name": f"{_REF.key} (assumed: no GPU)",
            "peak_gflops": 1e3 * _REF.get("fp32_tflops"),
            "bandwidth_gbps": float(_REF.get("memory_gbps"))}

_DRAM = ("dram_read_bytes", "dram_write_bytes")


def _roof(device: Any, peak_gflops: Any, bandwidth_gbps: Any) -> tuple[str, float, float]:
    fn = "roofline"
    name, peak, bw = None, None, None
    if device is not None:
        if not all(hasattr(device, a) for a in ("name", "theoretical_bandwidth_gbps")):
            raise TypeError(f"{fn}: device must be a gpumem.DeviceInfo (gpumem.device()) or "
                            f"None, not {type(device).__name__}")
        name, peak, bw = (device.name, getattr(device, "peak_fp32_gflops", None),
                          device.theoretical_bandwidth_gbps)
    elif runtime.is_available():
        d = runtime.device()
        name, peak, bw = d.name, d.peak_fp32_gflops, d.theoretical_bandwidth_gbps
    else:
        name, peak, bw = H100_SXM["name"], H100_SXM["peak_gflops"], H100_SXM["bandwidth_gbps"]
    if peak_gflops is not None:
        peak = _number(fn, "peak_gflops", peak_gflops, positive=True)
    if bandwidth_gbps is not None:
        bw = _number(fn, "bandwidth_gbps", bandwidth_gbps, positive=True)
    if not peak or not bw:
        raise ValueError(f"{fn}: the FP32 peak or the bandwidth of {name} is unknown; pass "
                         "peak_gflops= and bandwidth_gbps=")
    return name, peak, bw


def _number(fn: str, what: str, v: Any, *, positive: bool = False) -> float:
    """``v`` as a finite float: Python and NumPy ints and floats (not bool), TypeError
    naming ``what`` otherwise; NaN, infinities and negatives (zero too with
    ``positive``) are ValueErrors."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.integer,
                                                             np.floating)):
        raise TypeError(f"{fn}: {what} must be a number, not {type(v).__name__}")
    f = float(v)
    if not math.isfinite(f) or f < 0 or (positive and f == 0):
        need = "a finite number > 0" if positive else "a finite number >= 0"
        raise ValueError(f"{fn}: {what}={v!r} is not allowed; it must be {need}")
    return f


def _label(kernel: str, variant: str, params: Mapping[str, Any]) -> str:
    keys = [k for k in ("tile", "block", "offset", "items") if k in params]
    extra = ", ".join(f"{k}={params[k]}" for k in keys)
    return f"{kernel}/{variant}" + (f" ({extra})" if extra else "")


def _points(fn: str, source: Any) -> list[dict]:
    """(label, flops, bytes, bytes source, ms) from whatever was given."""
    if isinstance(source, Table):
        cols = set(source.columns)
        if ("label" not in cols and not {"kernel", "variant"} <= cols) or "flops" not in cols \
                or not ("bytes" in cols or set(_DRAM) <= cols):
            raise ValueError(f"{fn}: a Table needs the columns label (or kernel and variant), "
                             "flops and bytes (or dram_read_bytes and dram_write_bytes); ms and "
                             f"source are optional; it has {source.columns}")
        out = []
        for i, r in enumerate(source):
            label = r.get("label")
            if label is None:
                if r.get("kernel") is None or r.get("variant") is None:
                    raise ValueError(f"{fn}: row {i} has no label (and no kernel and variant "
                                     "to name it by)")
                label = f"{r['kernel']}/{r['variant']}" + (f" ({r['params']})"
                                                           if r.get("params") else "")
            if all(r.get(k) is not None for k in _DRAM) and set(_DRAM) <= cols:
                nbytes, src = r[_DRAM[0]] + r[_DRAM[1]], "measured"   # Profile.table()
            else:
                nbytes, src = r.get("bytes"), r.get("source") or "given"
            out.append({"label": str(label), "flops": r["flops"], "bytes": nbytes,
                        "source": src, "ms": r.get("ms")})
        return out
    if hasattr(source, "records") and not isinstance(source, (str, bytes)):
        source = source.records                      # a gpumem.profile block
    if isinstance(source, (str, bytes, Mapping)) or not hasattr(source, "__iter__"):
        raise TypeError(f"{fn}: points must be a gpumem.profile block, LaunchRecords, "
                        f"BenchResults or a Table, not {type(source).__name__}")
    out = []
    for i, p in enumerate(source):
        if isinstance(p, runtime.BenchResult):
            s = p.median_ms * 1e-3
            out.append({"label": _label(p.kernel, p.variant, p.params),
                        "flops": p.gflops * 1e9 * s, "bytes": p.gbps * 1e9 * s,
                        "source": "declared", "ms": p.median_ms})
        elif all(hasattr(p, a) for a in ("kernel", "variant", "params", "ms", "flops", "bytes")):
            m = getattr(p, "metrics", None) or {}
            if all(k in m for k in _DRAM):
                nbytes, src = float(sum(m[k] for k in _DRAM)), "measured"
            else:
                nbytes, src = float(p.bytes), "declared"
            out.append({"label": _label(p.kernel, p.variant, p.params), "flops": float(p.flops),
                        "bytes": nbytes, "source": src, "ms": p.ms})
        else:
            raise TypeError(f"{fn}: points[{i}] is a {type(p).__name__}, not a LaunchRecord "
                            "or BenchResult")
    return out


def roofline(points: Any, *, device: Any = None, peak_gflops: float | None = None,
             bandwidth_gbps: float | None = None) -> Table:
    """Place kernel launches under the device's roofline.

    Parameters
    ----------
    points
        A :func:`gpumem.profile` block (its records; profile ``dram_read_bytes`` and
        ``dram_write_bytes`` to use measured bytes), LaunchRecords
        (:func:`gpumem.record`), :class:`gpumem.BenchResult` s, or a :class:`Table`
        with columns ``label``, ``flops``, ``bytes`` and optionally ``ms`` and
        ``source`` (e.g. the model's bytes: no GPU needed), or a profile's
        ``Profile.table()`` as it is.
    device : DeviceInfo, optional
        Whose roof (default :func:`gpumem.device`; without a GPU the published roof of an
        H100 SXM, :data:`H100_SXM`, and the title says it was assumed).
    peak_gflops, bandwidth_gbps : float, optional
        Override the roof: e.g. a measured device copy's GB/s instead of the
        theoretical bandwidth.

    Returns
    -------
    Table: label, flops, bytes, source (of the bytes), FLOP/byte, GFLOP/s (None
    without a time), roof GFLOP/s (``min(peak, FLOP/byte x bandwidth)``), x roof,
    bound ("memory" left of the ridge point, else "compute").  ``table.roof`` holds
    the device name, peak, bandwidth and ridge point.
    """
    fn = "roofline"
    name, peak, bw = _roof(device, peak_gflops, bandwidth_gbps)
    ridge = peak / bw
    rows = []
    for p in _points(fn, points):
        where = f"{p['label']}: "
        flops = _number(fn, where + "flops", p["flops"])
        nbytes = _number(fn, where + "bytes", p["bytes"])
        ms = None if p["ms"] is None else _number(fn, where + "ms", p["ms"], positive=True)
        intensity = flops / nbytes if nbytes > 0 else float("inf")
        roof = min(peak, intensity * bw)
        achieved = flops / (ms * 1e-3) / 1e9 if ms else None
        rows.append({"label": p["label"], "flops": flops, "bytes": nbytes, "source": p["source"],
                     "FLOP/byte": intensity, "GFLOP/s": achieved, "roof GFLOP/s": roof,
                     "x roof": achieved / roof if achieved is not None and roof > 0 else None,
                     "bound": "memory" if intensity < ridge else "compute"})
    t = Table(rows, ["label", "flops", "bytes", "source", "FLOP/byte", "GFLOP/s",
                     "roof GFLOP/s", "x roof", "bound"],
              sources={"GFLOP/s": "measured", "roof GFLOP/s": "roofline"},
              title=f"roofline of {name}: FP32 peak {peak:,.0f} GFLOP/s, {bw:,.0f} GB/s, "
                    f"ridge at {ridge:.1f} FLOP/byte")
    t.roof = {"device": name, "peak_gflops": peak, "bandwidth_gbps": bw,  # type: ignore[attr-defined]
              "ridge": ridge}
    return t


def plot_roofline(table: Table, ax=None):
    """Draw :func:`roofline`'s table: the two roofs on log-log axes, the ridge point,
    and each launch at (FLOP/byte, GFLOP/s) -- hollow where it has no time (a model
    point, drawn on its roof).  Returns the axes."""
    roof = getattr(table, "roof", None)
    if not isinstance(table, Table) or roof is None:
        raise TypeError("plot_roofline: table must be the Table of gpumem.roofline, not "
                        f"{type(table).__name__}")
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    elif not isinstance(ax, Axes):
        raise TypeError(f"plot_roofline: ax must be a matplotlib Axes or None, not "
                        f"{type(ax).__name__}")
    peak, bw, ridge = roof["peak_gflops"], roof["bandwidth_gbps"], roof["ridge"]
    xs = [r["FLOP/byte"] for r in table if 0 < r["FLOP/byte"] < float("inf")]
    lo = min(xs + [ridge]) / 4
    hi = max(xs + [ridge]) * 4
    x = np.geomspace(lo, hi, 200)
    ax.loglog(x, np.minimum(peak, x * bw), color="black", lw=2)
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, peak), textcoords="offset points",
                xytext=(4, -14), fontsize="small", color="grey")
    spots: dict = {}                     # launches at one spot share a marker and a label
    for r in table:
        i = r["FLOP/byte"]
        if not 0 < i < float("inf"):
            continue
        y = r["GFLOP/s"] if r["GFLOP/s"] is not None else r["roof GFLOP/s"]
        spots.setdefault((float(f"{i:.6g}"), float(f"{y:.6g}"), r["GFLOP/s"] is None),
                         []).append(r["label"])
    # each spot numbered beside its marker; the legend says which launches it holds
    for n, ((i, y, hollow), labels) in enumerate(sorted(spots.items()), start=1):
        ax.plot([i], [y], "o", mfc="none" if hollow else None, ms=7,
                label=f"{n}: " + ", ".join(labels))
        ax.annotate(str(n), (i, y), textcoords="offset points", xytext=(-4, 6),
                    fontsize="small")
    if spots:
        ax.legend(loc="lower right", fontsize="x-small")
    sources = sorted({str(r["source"]) for r in table})
    ax.set_xlabel(f"arithmetic intensity (FLOP per byte; bytes: {', '.join(sources)})")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"{roof['device']}: {peak:,.0f} GFLOP/s, {bw:,.0f} GB/s", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    return ax
