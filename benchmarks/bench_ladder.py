"""The latency and bandwidth ladders (gpumem.ladder) beside cudaMemcpy device to device,
in one run.

The anchor is ``cudaMemcpy`` device to device of 1 GiB (``_common.memcpy_d2d``:
CUDA events around each call, median of ``REPEAT``; GB/s counts read + write), timed
before and after the ladders; the faster of the two is the reference (the stricter
target).  The bandwidth ladder measures its own cudaMemcpy row too.

Targets (issue 14), each reported with its measured value:

* HBM plateau (``read``, ``scope="grid"``, working sets of at least 8x the L2: the
  median) >= 0.95x the device copy;
* L2 plateau (``read``, ``scope="grid"``, 2 MiB .. half the L2: the best) > 2x the
  HBM plateau;
* L1 plateau (``read``, ``scope="block"``, up to 64 KiB per SM: the best) near
  128 bytes per clock per SM: 0.8x .. 1.05x of it, with the clock the launch measured;
* latency: every level of :func:`gpumem.lessons.ladder.latency_levels` within the published
  range of the device (:mod:`gpumem.runtime.published`, widened by ``TOLERANCE``), and the
  near/far L2 split
  shown: the far-L2 latency at least 1.3x the near one and below device memory's;
* latency by the papers' own method (:func:`gpumem.lessons.ladder.latency_methods`: their
  strided ring, ``clock()`` around every load) within the published range, level by level:
  where it lands there and gpumem's chase does not, the difference is the method's.

About 10-15 s on an H100 (the latency ladder's warm-up passes dominate); ``quick``:
fewer paths and sets, a few seconds.
"""
from __future__ import annotations

import json
import os
import statistics

import gpumem as gm
from gpumem.lessons import ladder
from _common import memcpy_d2d, stamp

REPEAT = 20
HBM_TARGET = 0.95          # x the device copy
L2_TARGET = 2.0            # x the HBM plateau
L1_BYTES_PER_CLK = 128.0   # per SM (published)
L1_RANGE = (0.8, 1.05)     # x L1_BYTES_PER_CLK
SPLIT = 1.3                # far L2 latency / near L2 latency, at least
TOLERANCE = 0.0            # fraction by which the published latency ranges are widened


def _d2d(nbytes: int) -> dict:
    return memcpy_d2d(gm.empty((nbytes // 4,)), gm.empty((nbytes // 4,)), REPEAT, 3)


def run(out_dir: str, quick: bool) -> bool:
    dev = gm.device()
    l2 = dev.l2_cache_size
    before = _d2d(1 << 30)

    if quick:
        lat_sets = [s for s in ladder.LATENCY_SETS if s <= 64 * 1024 or s in (
            1 << 20, 4 << 20, 16 << 20, 24 << 20, 32 << 20, 40 << 20, 48 << 20, 64 << 20,
            256 << 20, 1 << 30)]
        bw_sets = [s for s in ladder.BANDWIDTH_SETS if s <= 1 << 30]
        variants = ("ca", "cg", "shared", "constant")
    else:
        lat_sets, bw_sets, variants = None, None, ladder.LADDER_VARIANTS
    lat = ladder.latency_ladder(lat_sets, variants=variants, progress=False)
    bw = ladder.bandwidth_ladder(bw_sets, repeat=5, progress=False)
    after = _d2d(1 << 30)
    d2d = max(before["GB/s"], after["GB/s"])

    levels = ladder.latency_levels(lat, device=dev)
    sizes = ladder.cache_sizes(lat, device=dev)

    read_grid = [r for r in bw if r["variant"] == "read" and r["scope"] == "grid"]
    hbm_rows = [r["GB/s"] for r in read_grid if r["working set"] >= 8 * l2]
    hbm = statistics.median(hbm_rows) if hbm_rows else float("nan")
    l2_row = max((r for r in read_grid if 2 << 20 <= r["working set"] <= l2 // 2),
                 key=lambda r: r["GB/s"])
    l1_row = max((r for r in bw if r["variant"] == "read" and r["scope"] == "block"
                  and r["working set"] <= 64 * 1024), key=lambda r: r["GB/s"])
    shared_row = max((r for r in bw if r["variant"] == "shared"), key=lambda r: r["GB/s"],
                     default=None)
    copy_hbm = [r["GB/s"] for r in bw if r["variant"] == "copy" and r["working set"] >= 8 * l2]

    by = {r["level"]: r for r in levels}
    near, far, mem = (by["L2 near"]["cycles/load"], by["L2 far"]["cycles/load"],
                      by["device memory"]["cycles/load"])
    checks = [
        {"what": f"HBM plateau (read, grid, >= 8x L2, median) >= {HBM_TARGET}x device copy",
         "value": hbm / d2d, "unit": "x D2D", "met": hbm / d2d >= HBM_TARGET},
        {"what": f"L2 plateau (read, grid, 2 MiB .. L2/2, best) > {L2_TARGET}x HBM plateau",
         "value": l2_row["GB/s"] / hbm, "unit": "x HBM", "met": l2_row["GB/s"] / hbm > L2_TARGET},
        {"what": f"L1 plateau (read, block, <= 64 KiB, best) {L1_RANGE[0]}..{L1_RANGE[1]}x "
                 f"{L1_BYTES_PER_CLK:.0f} B/clk/SM",
         "value": l1_row["bytes/clk/SM"], "unit": "B/clk/SM",
         "met": L1_RANGE[0] * L1_BYTES_PER_CLK <= (l1_row["bytes/clk/SM"] or 0)
         <= L1_RANGE[1] * L1_BYTES_PER_CLK},
    ]
    for r in levels:
        lo, hi = r["published low"], r["published high"]
        if lo is None:      # none published for this GPU's chip (device memory: its own memory)
            continue
        lo, hi = lo * (1 - TOLERANCE), hi * (1 + TOLERANCE)
        v = r["cycles/load"]
        checks.append({"what": f"latency {r['level']} within {lo:.0f}..{hi:.0f} cycles "
                               "(published)",
                       "value": v, "unit": "cycles", "met": v is not None and lo <= v <= hi})
    # the papers' chase on each level's ring: where gpumem's figure and the published one
    # differ, does the papers' own method land in the published range?  (reported beside
    # gpumem's; the split says how much the ring and the clock each add)
    methods = ladder.latency_methods()
    for r in methods:
        lo, hi = r["published low"], r["published high"]
        if lo is None:
            continue
        v = r["papers' chase"]
        checks.append({"what": f"latency {r['level']} by the papers' chase (strided ring, "
                               f"clock() per load) within {lo:.0f}..{hi:.0f} cycles (published)",
                       "value": v, "unit": "cycles", "met": lo <= v <= hi})
    split = far / near if far and near else None
    checks.append({"what": f"near/far L2 split: far >= {SPLIT}x near, and below device memory",
                   "value": split, "unit": "x near",
                   "met": split is not None and split >= SPLIT and far < mem})
    met = all(c["met"] for c in checks)

    summary = gm.Table(
        [{"target": c["what"], "measured": c["value"], "unit": c["unit"],
          "met": "met" if c["met"] else "MISSED"} for c in checks],
        columns=["target", "measured", "unit", "met"], sources={"measured": "measured"},
        title=f"ladder targets on {dev.name}")
    plateaus = gm.Table([
        {"level": "L1 (read, scope block)", "working set": l1_row["working set"],
         "GB/s": l1_row["GB/s"], "GB/s per SM": l1_row["GB/s per SM"],
         "bytes/clk/SM": l1_row["bytes/clk/SM"], "clock MHz": l1_row["clock MHz"]},
        *([{"level": "shared (scope block)", "working set": shared_row["working set"],
            "GB/s": shared_row["GB/s"], "GB/s per SM": shared_row["GB/s per SM"],
            "bytes/clk/SM": shared_row["bytes/clk/SM"], "clock MHz": shared_row["clock MHz"]}]
          if shared_row else []),
        {"level": "L2 (read, scope grid)", "working set": l2_row["working set"],
         "GB/s": l2_row["GB/s"], "GB/s per SM": l2_row["GB/s per SM"],
         "bytes/clk/SM": l2_row["bytes/clk/SM"], "clock MHz": l2_row["clock MHz"]},
        {"level": "HBM (read, scope grid, median)", "GB/s": hbm,
         "GB/s per SM": hbm / dev.multiprocessors},
        {"level": "HBM (copy, scope grid, median)",
         "GB/s": statistics.median(copy_hbm) if copy_hbm else None},
        {"level": "cudaMemcpy D2D (reference)", "working set": 2 << 30, "GB/s": d2d,
         "GB/s per SM": d2d / dev.multiprocessors},
    ], sources={c: "measured" for c in ("GB/s", "GB/s per SM", "bytes/clk/SM", "clock MHz")},
        title="bandwidth plateaus")

    s = stamp()
    payload = {"stamp": s, "d2d_before": before, "d2d_after": after, "d2d_reference_gbps": d2d,
               "targets": checks, "met": met, "latency_levels": levels.rows,
               "cache_sizes": sizes.rows, "bandwidth_plateaus": plateaus.rows,
               "latency_methods": methods.rows,
               "latency_ladder": lat.rows, "bandwidth_ladder": bw.rows,
               "tolerance": TOLERANCE, "quick": quick}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench_ladder.json"), "w") as f:
        json.dump(payload, f, indent=1, default=str)
    md = "\n".join([
        f"### latency and bandwidth ladders, {dev.name}", "",
        f"{s['gpu']} (cc {s['cc']}, driver {s['driver']}, CUDA runtime {s['runtime']}), "
        f"{s['date']}", "",
        summary.to_markdown(), "", levels.to_markdown(), "", methods.to_markdown(), "",
        sizes.to_markdown(), "",
        plateaus.to_markdown(), "",
        f"- cudaMemcpy D2D of 1 GiB: {before['GB/s']:.0f} GB/s before the ladders, "
        f"{after['GB/s']:.0f} after; the faster is the reference.",
        f"- latency: one lane, stride 128 B, 8192 timed dependent loads per ring, cycles from "
        f"clock64 and ns from %globaltimer in the same kernel; published ranges widened by "
        f"{TOLERANCE:.0%}.",
        "- bandwidth: median of 5 launches after 2 warm-ups, passes chosen so a launch moves "
        "4 GB (grid) or 16 GB (block); bytes/clk/SM with the SM clock each read launch measured.",
        f"- targets: {'met' if met else 'MISSED'}.", ""])
    with open(os.path.join(out_dir, "bench_ladder.md"), "w") as f:
        f.write(md)
    print(md, flush=True)
    return met
