"""``gpumem report``: every lesson's headline experiment on this GPU, in one table.

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

Rows
----
Every headline function returns a list of row dicts with the keys

``lesson``, ``experiment``
    The lesson and what the row runs.
``measured``, ``model``
    Numbers by name (``{"offset11_gld_efficiency": 80.0, ...}``): what this GPU
    measured (empty without a GPU) and what the model predicts (empty where
    nothing is modelled).
``measured_text``, ``model_text``, ``takeaway``
    The same for people ("would measure: ..." without a GPU).

Adding a lesson
---------------
Write ``_<lesson>(measure: bool, quick: bool) -> list[dict]`` that always
fills the model's side and, only when ``measure`` is true, runs kernels:
:func:`_timed` times a dict of calls with :func:`gpumem.bench` and reads one
counter for each in one ``gpumem.profile`` block (None where the profiler
cannot).  Build rows with :func:`_row` (:func:`_unmeasured` without a GPU), and
append ``("<lesson>", _<lesson>)`` to :data:`HEADLINES` in lesson order.
For ``gpumem report --lesson <lesson>``, add
``"<lesson>": _<lesson>_sweeps`` to :data:`SWEEPS`: a function
``(measure: bool, quick: bool, progress: bool) -> list[Table]`` that calls the
lesson module's sweeps.  This module is the top layer: it may import every
lesson module; no lesson module imports it.
"""
from __future__ import annotations

import html
import json
import math
import os
import statistics
import sys
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import gpumem as gm

from . import access, layout, model, spaces, stencil
from ._names import _flag
from ._table import Table

__all__ = ["HEADLINES", "SWEEPS", "COLUMNS", "headlines", "sweeps", "as_table", "as_text",
           "to_markdown", "to_html", "to_json", "write", "plot", "no_gpu_reason"]

#: The report's columns, in print order (row key -> header).
COLUMNS = {"lesson": "lesson", "experiment": "experiment", "measured_text": "measured",
           "model_text": "model", "takeaway": "takeaway"}

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


def _bench(fn: Callable, *args, quick: bool, **kw) -> gm.BenchResult:
    """:func:`gpumem.bench` with the report's modest repeats."""
    return gm.bench(fn, *args, repeat=5 if quick else 20, warmup=2, **kw)


def _counters(metrics: Sequence[str], calls: Sequence[Callable[[], Any]]) -> list[dict] | None:
    """Hardware counters of one launch of each call, in one ``gpumem.profile`` block.

    None where the profiler cannot read counters here (or fails): the rows then
    show the model's side alone.
    """
    if not gm.profiler_available():
        return None
    try:
        with gm.profile(metrics=list(metrics)) as prof:
            for call in calls:
                call()
        recs = prof.records
    except gm.ProfilerError:
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
    res = {k: gm.bench(fn, *args, repeat=repeat or (5 if quick else 20), warmup=1, **kw)
           for k, (fn, args, kw) in calls.items()}
    if metric is None:
        return res, None
    got = _counters([metric], [lambda c=c: c[0](*c[1], **c[2]) for c in calls.values()])
    return res, None if got is None else {k: g.get(metric) for k, g in zip(calls, got)}


def _predict(family: str, variant: str, **params: Any) -> dict:
    """gpumem.model.predict, efficiencies rounded to 0.01 percent."""
    p = model.predict(family, variant, **params)
    return {k: (round(v, 2) if k.endswith("efficiency") else v) for k, v in p.items()}


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
    dev = gm.device()
    a = gm.to_device(_rng().standard_normal(n, dtype=np.float32))
    out = gm.empty((n,))
    res, got = _timed({"copy": (gm.copy, (a,), {"variant": "float4", "out": out})},
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
    return [_row("device", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"{_gbps(r.gbps)} is this GPU's streaming ceiling: "
                          f"{100 * r.gbps / peak:.0f}% of the datasheet's {_gbps(peak)}")]


# ---- matmul ---------------------------------------------------------------------------
def _cublas(a: np.ndarray, b: np.ndarray, ours: np.ndarray, quick: bool) -> dict:
    """cuBLAS (``cupy.matmul``, float32) on the same operands: checked against gpumem's
    result first (relative error < 1e-4), timed with CUDA events only when it agrees."""
    try:
        import cupy as cp
    except ImportError:
        return {"error": "CuPy not importable: no cuBLAS to compare with"}
    except Exception as e:      # a CuPy that cannot load its CUDA libraries
        return {"error": f"CuPy failed to load ({type(e).__name__}: {e})"}
    try:
        A, B = cp.asarray(a), cp.asarray(b)
        C = cp.matmul(A, B)
        err = float(np.linalg.norm(cp.asnumpy(C) - ours) / np.linalg.norm(ours))
        if not err < 1e-4:
            return {"error": f"cuBLAS differs from gpumem: relative error {err:.2e}",
                    "rel_err": err}
        start, end = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for i in range(2 + (5 if quick else 20)):
            start.record()
            cp.matmul(A, B, out=C)
            end.record()
            end.synchronize()
            if i >= 2:                                  # two warm-up calls
                times.append(cp.cuda.get_elapsed_time(start, end))
        ms = statistics.median(times)
        del A, B, C
        cp.get_default_memory_pool().free_all_blocks()
    except Exception as e:      # a CuPy without a working cuBLAS: say so, keep the report
        return {"error": f"cuBLAS failed ({type(e).__name__}: {e})"}
    return {"ms": ms, "rel_err": err}


def _matmul(measure: bool, quick: bool) -> list[dict]:
    size = 1024 if quick else 2048
    tile = 32
    tiles = {"naive": 16, "tiled": tile}      # the naive kernel in its usual 16x16 blocks
    traffic = {v: model.matmul_traffic(size, size, size, v, t) for v, t in tiles.items()}
    preds = {v: model.predict("matmul", v, m=size, n=size, k=size, tile=t)
             for v, t in tiles.items()}
    mod = {"naive_flops_per_float": traffic["naive"]["cgma"],
           "tiled_flops_per_float": traffic["tiled"]["cgma"],
           "naive_gld_transactions": preds["naive"]["gld_transactions"],
           "tiled_gld_transactions": preds["tiled"]["gld_transactions"]}
    mtext = (f"FLOPs per loaded float: naive {traffic['naive']['cgma']:.0f}, tiled "
             f"{traffic['tiled']['cgma']:.0f} ({traffic['naive']['load_bytes'] / 1e9:,.1f} vs "
             f"{traffic['tiled']['load_bytes'] / 1e9:,.2f} GB of global loads)")
    what = f"matmul {size}^3 float32: naive (16x16 blocks) vs tiled, tile {tile}"
    cub_what = f"cuBLAS (cupy.matmul, float32) at {size}^3 against gpumem's kernels"
    if not measure:
        return [_unmeasured("matmul", what, "GFLOP/s of both kernels (gpumem.bench)",
                            model=mod, model_text=mtext,
                            takeaway=f"shared-memory tiles cut global loads {tile}x"),
                _unmeasured("matmul", cub_what, "cuBLAS's GFLOP/s (needs CuPy), after "
                            "checking its result against gpumem's",
                            takeaway="how far the teaching kernels are from the vendor "
                                     "library, warptiled among them")]
    rng = _rng()
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    A, B = gm.to_device(a), gm.to_device(b)
    out = gm.empty((size, size))
    res, got = _timed({v: (gm.matmul, (A, B), {"tile": t, "variant": v, "out": out})
                       for v, t in tiles.items()}, "gld_transactions", quick,
                      repeat=3 if quick else 5)
    ours = gm.matmul(A, B, tile=tile, variant="tiled").get()
    meas = {f"{v}_GFLOP/s": r.gflops for v, r in res.items()}
    meas.update({f"{v}_ms": r.median_ms for v, r in res.items()})
    speedup = res["naive"].median_ms / res["tiled"].median_ms
    text = (f"naive {res['naive'].gflops:,.0f} GFLOP/s, tiled {res['tiled'].gflops:,.0f} "
            f"GFLOP/s ({speedup:.1f}x)")
    if got is not None:
        meas.update({f"{v}_gld_transactions": g for v, g in got.items()})
        text += ("; global load sectors " + ", ".join(
            f"{v} {meas[f'{v}_gld_transactions'] / 1e6:,.0f}M measured / "
            f"{preds[v]['gld_transactions'] / 1e6:,.0f}M model" for v in ("naive", "tiled")
            if meas[f"{v}_gld_transactions"] is not None))
    rows = [_row("matmul", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"tiling in shared memory: {speedup:.1f}x faster for "
                          f"{tile}x fewer global loads")]
    cub = _cublas(a, b, ours, quick)
    if "error" in cub:
        cmeas = {"rel_err": cub["rel_err"]} if "rel_err" in cub else {}
        rows.append(_row("matmul", cub_what, measured=cmeas, measured_text=cub["error"],
                         takeaway="no cuBLAS comparison in this run"))
    else:
        flops = 2.0 * size**3
        gf = flops / (cub["ms"] * 1e-3) / 1e9
        # the last step of the staircase (notebook 06), beside the vendor library
        wt = gm.bench(gm.matmul, A, B, variant="warptiled", out=out,
                      repeat=3 if quick else 5, warmup=1).gflops
        best = max([wt] + [r.gflops for r in res.values()])
        rows.append(_row("matmul", cub_what,
                         measured={"cublas_GFLOP/s": gf, "cublas_ms": cub["ms"],
                                   "rel_err": cub["rel_err"], "warptiled_GFLOP/s": wt,
                                   "fastest_gpumem_over_cublas": best / gf},
                         measured_text=(f"cuBLAS {gf:,.0f} GFLOP/s (agrees: relative error "
                                        f"{cub['rel_err']:.1e}); gpumem's warptiled "
                                        f"{wt:,.0f} GFLOP/s, fastest gpumem / cuBLAS = "
                                        f"{best / gf:.2f}"),
                         takeaway="register and warp tiles, float4 loads and cp.async double "
                                  "buffering on top of shared-memory tiles close most of the "
                                  "gap (notebook 06)"))
    return rows


# ---- access ---------------------------------------------------------------------------
def _access(measure: bool, quick: bool) -> list[dict]:
    n, block, offsets = (2**22 if quick else 2**24), 512, (0, 11)
    preds = {o: _predict("read_offset", "unroll1", n=n, offset=o, block=block) for o in offsets}
    mod = {f"offset{o}_gld_efficiency": preds[o]["gld_efficiency"] for o in offsets}
    mod.update({f"offset{o}_gld_transactions_per_request": preds[o]["gld_transactions_per_request"]
                for o in offsets})
    mtext = (f"gld efficiency {_pct(preds[0]['gld_efficiency'])} at offset 0, "
             f"{_pct(preds[11]['gld_efficiency'])} at offset 11 (5 sectors per warp for 4 "
             "sectors' worth)")
    what = f"read_offset, offset 0 vs 11 (n = {_pow2(n)}, block {block})"
    take = "a warp's 128 bytes off the 32-byte sector grid cost one sector more"
    if not measure:
        return [_unmeasured("access", what, "GB/s at both offsets and the gld_efficiency "
                            "counter (gpumem.profile)", model=mod, model_text=mtext,
                            takeaway=take)]
    rng = _rng()
    a = gm.to_device(rng.standard_normal(n, dtype=np.float32))
    b = gm.to_device(rng.standard_normal(n, dtype=np.float32))
    out = gm.empty((n,))
    res, got = _timed({o: (gm.read_offset, (a, b), {"offset": o, "block": block, "out": out})
                       for o in offsets}, "gld_efficiency", quick)
    meas = {f"offset{o}_GB/s": r.gbps for o, r in res.items()}
    text = ", ".join(f"offset {o}: {_gbps(r.gbps)}" for o, r in res.items())
    if got is not None:
        meas.update({f"offset{o}_gld_efficiency": g for o, g in got.items()})
        text += (f"; offset 11: gld efficiency {_pct(meas['offset11_gld_efficiency'])} measured"
                 f" / {_pct(preds[11]['gld_efficiency'])} model")
    ratio = res[11].gbps / res[0].gbps
    return [_row("access", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"{take}; here offset 11 runs at {ratio:.2f}x the aligned bandwidth "
                          "(L1 and L2 absorb much of the extra sector)")]


# ---- layout ---------------------------------------------------------------------------
_LAYOUT_NAMES = {"aos": "AoS", "soa": "SoA"}


def _layout(measure: bool, quick: bool) -> list[dict]:
    n, block, layouts = (2**22 if quick else 2**24), 512, ("aos", "soa")
    preds = {lay: _predict("struct_update", lay, n=n, block=block) for lay in layouts}
    mod = {f"{lay}_gld_efficiency": preds[lay]["gld_efficiency"] for lay in layouts}
    mtext = (f"gld efficiency AoS {_pct(preds['aos']['gld_efficiency'])}, SoA "
             f"{_pct(preds['soa']['gld_efficiency'])}")
    what = f"struct_update, array of structs vs struct of arrays (n = {_pow2(n)})"
    take = "each AoS load uses half of every sector it pulls in"
    if not measure:
        return [_unmeasured("layout", what, "GB/s of both layouts and the gld_efficiency "
                            "counter", model=mod, model_text=mtext, takeaway=take)]
    rng = _rng()
    data = {"aos": gm.to_device(rng.standard_normal((n, 2), dtype=np.float32)),
            "soa": gm.to_device(rng.standard_normal((2, n), dtype=np.float32))}
    outs = {lay: gm.empty(data[lay].shape) for lay in layouts}
    res, got = _timed({lay: (gm.struct_update, (data[lay],),
                             {"layout": lay, "block": block, "out": outs[lay]})
                       for lay in layouts}, "gld_efficiency", quick)
    meas = {f"{lay}_GB/s": r.gbps for lay, r in res.items()}
    text = f"AoS {_gbps(res['aos'].gbps)}, SoA {_gbps(res['soa'].gbps)}"
    if got is not None:
        meas.update({f"{lay}_gld_efficiency": g for lay, g in got.items()})
        text += ("; gld efficiency " + ", ".join(
            f"{_LAYOUT_NAMES[lay]} {_pct(meas[f'{lay}_gld_efficiency'])} "
            f"measured / {_pct(preds[lay]['gld_efficiency'])} model" for lay in layouts))
    ratio = res["soa"].gbps / res["aos"].gbps
    return [_row("layout", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"{take}; SoA runs at {ratio:.2f}x the AoS bandwidth here (L1 "
                          "serves much of what AoS skipped)")]


# ---- stencil --------------------------------------------------------------------------
def _stencil(measure: bool, quick: bool) -> list[dict]:
    n = 2**24 if quick else 2**26
    mems = ("constant", "readonly")
    mod = {"bytes_per_point": 8.0}
    mtext = "8 bytes per point (x read once, out written once): a copy's traffic at best"
    block = 128
    what = (f"stencil_1d, 8th order, coefficients constant vs readonly (n = {_pow2(n)}, "
            f"block {block}, 4 outputs per thread)")
    bmod = {"constant_passes_1": 1.0, "constant_passes_32": 32.0, "readonly_passes_32": 1.0}
    bmtext = ("constant cache: one word per pass, 32 passes for 32 distinct words "
              "(time ratio up to 32); read-only cache: 1 pass")
    bwhat = "constant_broadcast, 1 vs 32 distinct words per warp load"
    btake = "__constant__ is for values every lane reads at once"
    if not measure:
        return [_unmeasured("stencil", what, "GB/s of both, against a copy of the same size",
                            model=mod, model_text=mtext,
                            takeaway="a stencil is a streaming kernel: both caches serve the "
                                     "coefficients, the copy ceiling is the bound"),
                _unmeasured("stencil", bwhat, "the time ratio of 32 distinct words to 1",
                            model=bmod, model_text=bmtext, takeaway=btake)]
    x = gm.to_device(_rng().standard_normal(n, dtype=np.float32))
    out = gm.empty((n,))
    res = {m: _bench(gm.stencil_1d, x, memory=m, block=block, items=4, out=out, quick=quick)
           for m in mems}
    ceiling = _bench(gm.copy, x, variant="float4", out=out, quick=quick).gbps
    meas = {f"{m}_GB/s": r.gbps for m, r in res.items()}
    meas["copy_GB/s"] = ceiling
    meas.update({f"{m}_pct_of_copy": 100 * r.gbps / ceiling for m, r in res.items()})
    text = (", ".join(f"{m} {_gbps(r.gbps)}" for m, r in res.items())
            + f" (copy {_gbps(ceiling)}: {meas['constant_pct_of_copy']:.0f}% and "
              f"{meas['readonly_pct_of_copy']:.0f}%)")
    del x, out
    bn = 2**18 if quick else 2**20
    bcast = {(m, d): _bench(gm.constant_broadcast, d, memory=m, n=bn, quick=quick)
             for m, d in (("constant", 1), ("constant", 32), ("readonly", 32))}
    slow = bcast[("constant", 32)].median_ms / bcast[("constant", 1)].median_ms
    ro = bcast[("constant", 32)].median_ms / bcast[("readonly", 32)].median_ms
    bmeas = {f"{m}_{d}_ms": r.median_ms for (m, d), r in bcast.items()}
    bmeas.update({"constant_32_over_1": slow, "constant_over_readonly_32": ro})
    return [_row("stencil", what, measured=meas, model=mod, measured_text=text,
                 model_text=mtext,
                 takeaway=f"coefficients in __constant__: the stencil runs at "
                          f"{meas['constant_pct_of_copy']:.0f}% of the copy ceiling"),
            _row("stencil", bwhat, measured=bmeas, model=bmod, model_text=bmtext,
                 measured_text=(f"constant: 32 words {slow:.1f}x the time of 1; read-only "
                                f"cache {ro:.1f}x faster at 32"),
                 takeaway=btake)]


# ---- spaces ---------------------------------------------------------------------------
def _occupancy_model(regs: int) -> int:
    return model.occupancy(MODEL_CC, 256, regs, 0).blocks_per_sm


def _spaces(measure: bool, quick: bool) -> list[dict]:
    hist_local = 4 * spaces.HISTOGRAM_BINS
    caps = spaces.REGCAP_CAPS
    hmod = {"local_bytes_per_thread_local": float(hist_local),
            "local_bytes_per_thread_registers": 0.0}
    hmtext = (f"a run-time-indexed {spaces.HISTOGRAM_BINS}-bin array: {hist_local} B/thread of "
              "local memory; compile-time indices: 0")
    hwhat = "thread_histogram, local memory vs registers"
    # cap32: at most 32 registers for 64 live floats; the model's blocks/SM at each cap
    rmod = {"cap32_max_registers": float(caps["cap32"]),
            "cap32_blocks_per_sm": float(_occupancy_model(caps["cap32"])),
            "uncapped_blocks_per_sm": float(_occupancy_model(caps["uncapped"]))}
    rmtext = (f"cap32: <= {caps['cap32']} registers for {spaces.REGCAP_LIVE} live floats, "
              f"{rmod['cap32_blocks_per_sm']:.0f} blocks/SM vs "
              f"{rmod['uncapped_blocks_per_sm']:.0f} at {caps['uncapped']} registers "
              f"(model, sm_{MODEL_CC.replace('.', '')})")
    rwhat = "register_pressure, cap32 vs uncapped (__launch_bounds__)"
    dmod = {"odd_even_over_warp": 2.0}
    dmtext = "odd_even runs both halves' loops one after the other: about 2x"
    dwhat = "divergence, odd_even vs warp-aligned branch"
    dtake = "branch on whole warps, not on neighbouring threads"
    if not measure:
        return [_unmeasured("spaces", hwhat, "time of both and local bytes/thread "
                            "(gpumem.kernel_attributes)", model=hmod, model_text=hmtext,
                            takeaway="an array indexed at run time leaves the registers"),
                _unmeasured("spaces", rwhat, "spilled bytes, time and blocks/SM "
                            "(gpumem.kernel_occupancy)", model=rmod, model_text=rmtext,
                            takeaway="a register cap trades spills for occupancy"),
                _unmeasured("spaces", dwhat, "the time ratio", model=dmod, model_text=dmtext,
                            takeaway=dtake)]
    rng = _rng()
    # local vs registers
    n = 2**22 if quick else 2**24
    x = gm.to_device(rng.random(n, dtype=np.float32))
    # register caps
    rn = 2**18 if quick else 2**20
    xr = gm.to_device(rng.standard_normal((spaces.REGCAP_LIVE, rn), dtype=np.float32))
    rout = gm.empty((rn,))
    both, got = _timed({**{("hist", v): (gm.thread_histogram, (x,), {"variant": v})
                           for v in ("local", "registers")},
                        **{("regs", v): (gm.register_pressure, (xr,), {"variant": v, "out": rout})
                           for v in ("uncapped", "cap32")}}, "local_load_transactions", quick)
    hres = {v: r for (kind, v), r in both.items() if kind == "hist"}
    rres = {v: r for (kind, v), r in both.items() if kind == "regs"}
    rattr = {v: gm.kernel_attributes("register_pressure", v) for v in rres}
    hattr = {v: gm.kernel_attributes("thread_histogram", v) for v in hres}
    rocc = {v: gm.kernel_occupancy("register_pressure", v, 256) for v in rres}
    # divergence
    dn = 2**20 if quick else 2**22
    xd = gm.to_device(rng.standard_normal(dn, dtype=np.float32))
    dres = {v: _bench(gm.divergence, xd, variant=v, quick=quick) for v in ("odd_even", "warp")}

    hmeas = {f"local_bytes_per_thread_{v}": float(a.local_bytes_per_thread)
             for v, a in hattr.items()}
    hmeas.update({f"{v}_ms": r.median_ms for v, r in hres.items()})
    hslow = hres["local"].median_ms / hres["registers"].median_ms
    htext = (f"local {hres['local'].median_ms:.3f} ms ({hattr['local'].local_bytes_per_thread} "
             f"B/thread), registers {hres['registers'].median_ms:.3f} ms "
             f"({hattr['registers'].local_bytes_per_thread} B/thread)")
    rmeas = {f"{v}_ms": r.median_ms for v, r in rres.items()}
    rmeas.update({f"{v}_local_bytes_per_thread": float(a.local_bytes_per_thread)
                  for v, a in rattr.items()})
    rmeas.update({f"{v}_registers": float(a.registers_per_thread) for v, a in rattr.items()})
    rmeas.update({f"{v}_blocks_per_sm": float(o.blocks_per_sm) for v, o in rocc.items()})
    rtext = "; ".join(f"{v}: {rattr[v].registers_per_thread} regs, "
                      f"{rattr[v].local_bytes_per_thread} B spilled, {rocc[v].blocks_per_sm} "
                      f"blocks/SM, {rres[v].median_ms:.3f} ms" for v in rres)
    if got is not None:
        for (kind, v), g in got.items():
            (hmeas if kind == "hist" else rmeas)[f"{v}_local_load_transactions"] = g
        htext += (f"; local load sectors {hmeas['local_local_load_transactions'] or 0:,.0f} "
                  f"vs {hmeas['registers_local_load_transactions'] or 0:,.0f}")
        rtext += (f"; local load sectors cap32 {rmeas['cap32_local_load_transactions'] or 0:,.0f}"
                  f" vs uncapped {rmeas['uncapped_local_load_transactions'] or 0:,.0f}")
    dratio = dres["odd_even"].median_ms / dres["warp"].median_ms
    dmeas = {f"{v}_ms": r.median_ms for v, r in dres.items()}
    dmeas["odd_even_over_warp"] = dratio
    rfaster = rres["uncapped"].median_ms / rres["cap32"].median_ms
    return [_row("spaces", hwhat, measured=hmeas, model=hmod, measured_text=htext,
                 model_text=hmtext,
                 takeaway=f"the local-memory histogram takes {hslow:.2f}x the time of the "
                          "one in registers"),
            _row("spaces", rwhat, measured=rmeas, model=rmod, measured_text=rtext,
                 model_text=rmtext,
                 takeaway=f"more blocks per SM for spills: cap32 runs {rfaster:.2f}x the "
                          "speed of uncapped here"),
            _row("spaces", dwhat, measured=dmeas, model=dmod, model_text=dmtext,
                 measured_text=(f"odd_even {dres['odd_even'].median_ms:.3f} ms, warp "
                                f"{dres['warp'].median_ms:.3f} ms: {dratio:.2f}x"),
                 takeaway=dtake)]


#: The headline experiments, in lesson order: (lesson, function(measure, quick) -> rows).
HEADLINES: list[tuple[str, Callable[[bool, bool], list[dict]]]] = [
    ("device", _device),
    ("matmul", _matmul),
    ("access", _access),
    ("layout", _layout),
    ("stencil", _stencil),
    ("spaces", _spaces),
]


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
            a = gm.to_device(rng.standard_normal(n, dtype=np.float32))
            out = gm.empty((n,))
            for v in ("float", "float4"):
                row[f"{v} GB/s"] = _bench(gm.copy, a, variant=v, out=out, quick=quick).gbps
        sources.update({"float GB/s": "measured", "float4 GB/s": "measured"})
    else:
        title += " (no GPU: model only, GB/s not measured)"
    return [Table(rows, sources=sources, title=title)]


def _matmul_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    size = 1024 if quick else 2048
    rows = []
    for v, t in [("naive", 16), ("naive", 32), ("tiled", 8), ("tiled", 16), ("tiled", 32)]:
        tr = model.matmul_traffic(size, size, size, v, t)
        rows.append({"variant": v, "tile": t, "FLOPs per loaded float": tr["cgma"],
                     "global load GB": tr["load_bytes"] / 1e9})
    sources = {"FLOPs per loaded float": "model", "global load GB": "model"}
    title = f"matmul {size}^3 float32: tile sweep"
    if measure:
        rng = _rng()
        A = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
        B = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
        out = gm.empty((size, size))
        for row in _steps(rows, "matmul tiles", progress):
            r = gm.bench(gm.matmul, A, B, tile=row["tile"], variant=row["variant"], out=out,
                         repeat=3 if quick else 5, warmup=1)
            row["ms"], row["GFLOP/s"] = r.median_ms, r.gflops
        sources.update({"ms": "measured", "GFLOP/s": "measured"})
    else:
        title += " (no GPU: model only, times not measured)"
    return [Table(rows, sources=sources, title=title)]


def _access_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    return [access.offset_sweep(range(0, 33) if quick else range(0, 129),
                                n=2**22 if quick else 2**24, repeat=5 if quick else 20,
                                progress=progress)]


def _layout_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    n, repeat = (2**22, 5) if quick else (2**24, 20)
    return [layout.stride_sweep(n=n, repeat=repeat, progress=progress),
            layout.aos_vs_soa(n=n, repeat=repeat, progress=progress)]


def _stencil_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    if measure:
        return [stencil.broadcast_sweep(n=2**18 if quick else 2**20, repeat=5 if quick else 20)]
    rows = [{"distinct": d, "constant passes": d, "readonly passes": 1}
            for d in (1, 2, 4, 8, 16, 32)]
    return [Table(rows, sources={"constant passes": "model", "readonly passes": "model"},
                  title="constant broadcast (no GPU: passes per warp load, the time "
                        "stencil.broadcast_sweep would measure)")]


def _spaces_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    if measure:
        repeat = 5 if quick else 20
        return [spaces.local_vs_registers(2**22 if quick else 2**24, repeat=repeat),
                spaces.register_pressure_sweep(2**18 if quick else 2**20, repeat=repeat),
                spaces.divergence_compare(2**20 if quick else 2**22, repeat=repeat)]
    rows = [{"variant": v, "cap": c, "blocks/SM": _occupancy_model(c)}
            for v, c in spaces.REGCAP_CAPS.items()]
    return [Table(rows, sources={"blocks/SM": "model"},
                  title=f"register caps at 256 threads per block (no GPU: model, "
                        f"sm_{MODEL_CC.replace('.', '')}; spaces.register_pressure_sweep "
                        "would measure spills and time)")]


#: Each lesson's full sweep(s) for ``--lesson``: lesson -> function(measure, quick, progress).
SWEEPS: dict[str, Callable[[bool, bool, bool], list[Table]]] = {
    "device": _device_sweeps,
    "matmul": _matmul_sweeps,
    "access": _access_sweeps,
    "layout": _layout_sweeps,
    "stencil": _stencil_sweeps,
    "spaces": _spaces_sweeps,
}


# ---- running ----------------------------------------------------------------------------
def _steps(items: Sequence, desc: str, enabled: bool) -> Iterable:
    """``items`` with a progress bar on stderr: tqdm when importable, else one line per
    step; nothing when ``enabled`` is false."""
    if not enabled:
        yield from items
        return
    try:
        from tqdm import tqdm
    except ImportError:
        for i, item in enumerate(items, 1):
            label = item[0] if isinstance(item, tuple) else item
            print(f"[{i}/{len(items)}] {desc}: {label} ...", file=sys.stderr, flush=True)
            yield item
        return
    bar = tqdm(items, desc=desc, file=sys.stderr, leave=False)
    for item in bar:
        if isinstance(item, tuple):
            bar.set_postfix_str(str(item[0]))
        yield item


def _check_flags(fn: str, **flags: Any) -> None:
    """Each flag a bool (numpy.bool_ too, as everywhere in gpumem) or None (the default)."""
    for name, v in flags.items():
        if v is not None:
            _flag(fn, name, v)


def no_gpu_reason() -> str | None:
    """Why gpumem cannot run kernels here (None when it can)."""
    if gm.is_available():
        return None
    try:
        gm.device()
    except gm.CudaError as e:
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
        measure = gm.is_available()
    todo = [(name, f) for name, f in HEADLINES if lessons is None or name in lessons]
    rows: list[dict] = []
    for name, f in _steps(todo, "gpumem report", progress):
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
        measure = gm.is_available()
    return SWEEPS[lesson](measure, quick, progress)


# ---- output -------------------------------------------------------------------------------
def as_table(rows: Sequence[dict], title: str = "gpumem report") -> Table:
    """The rows as a :class:`gpumem.Table` of the text columns (:data:`COLUMNS`)."""
    return Table([{h: r.get(k, "") for k, h in COLUMNS.items()} for r in rows],
                 columns=list(COLUMNS.values()), title=title)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


#: Column widths of the text table (characters).
_WIDTHS = {"lesson": 8, "experiment": 30, "measured_text": 44, "model_text": 34,
           "takeaway": 34}


def as_text(rows: Sequence[dict], title: str = "gpumem report") -> str:
    """The rows as a plain-text table, left-aligned, long cells wrapped."""
    keys = list(COLUMNS)
    head = "  ".join(COLUMNS[k].ljust(_WIDTHS[k]) for k in keys).rstrip()
    rule = "  ".join("-" * _WIDTHS[k] for k in keys)
    lines = [title, head, rule] if title else [head, rule]
    for i, r in enumerate(rows):
        cells = [_wrap(str(r.get(k, "")), _WIDTHS[k]) for k in keys]
        for j in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[j] if j < len(c) else "").ljust(_WIDTHS[k])
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
            images: Sequence[str] = ()) -> str:
    """A small self-contained HTML page: the ``header`` lines, the tables, and ``images``
    (file names beside the page)."""
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
             "margin-bottom:2em}td,th{border:1px solid #bbb;padding:4px 8px;text-align:left;"
             "vertical-align:top}th{background:#eee}caption{font-weight:bold;text-align:left;"
             "padding:4px 0}")
    parts = [f"<p>{html.escape(line)}</p>" for line in header]
    parts += [_html_table(t) for t in tables]
    parts += [f'<p><img src="{html.escape(i)}" alt="{html.escape(i)}"></p>' for i in images]
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


def to_json(rows: Sequence[dict] = (), tables: Sequence[Table] = (), **meta: Any) -> str:
    """JSON of the report rows (and lesson tables), with ``meta`` keys at the top."""
    doc: dict[str, Any] = dict(meta)
    if rows:
        doc["rows"] = list(rows)
    if tables:
        doc["tables"] = [{"title": t.title, "columns": t.columns, "sources": t.sources,
                          "rows": t.rows} for t in tables]
    return json.dumps(_clean(doc), indent=1, default=str)


def plot(rows: Sequence[dict], out_dir: str, *, measure: bool, quick: bool) -> list[str]:
    """PNG plots of the report into ``out_dir`` (needs matplotlib; [] without it):
    the access lesson's gld efficiency against offsets 0..32 with the model's line,
    and matmul GFLOP/s per variant (the model's FLOPs per loaded float without a GPU).
    Returns the file names written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    names = []
    t = access.offset_sweep(range(0, 33), n=2**22 if quick else 2**24, repeat=3,
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


def write(out_dir: str, tables: Sequence[Table], *, header: Sequence[str] = (),
          rows: Sequence[dict] = (), measure: bool = False, quick: bool = False) -> list[str]:
    """Write report.md and report.html (and, for report rows, PNG plots) into ``out_dir``
    (created if missing).  Returns the paths written."""
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"report.write: out_dir must be a path, not {type(out_dir).__name__}")
    os.makedirs(out_dir, exist_ok=True)
    images = plot(rows, str(out_dir), measure=measure, quick=quick) if rows else []
    paths = []
    md = to_markdown(tables, header) + "".join(f"\n![{i}]({i})\n" for i in images)
    for name, text in (("report.md", md), ("report.html", to_html(tables, header, images))):
        p = os.path.join(out_dir, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(p)
    return paths + [os.path.join(out_dir, i) for i in images]
