"""1D stencil (radius 4, the book's 8th-order coefficients): constant vs read-only vs
global coefficients, at the book's launch (block 32, one output per thread) and at
wider ones, beside a cudaMemcpy device-to-device copy of the same bytes in the same run.

Target on an H100 at n = 2^26: the best stencil variant >= 0.85x the copy's GB/s
(both count 8 bytes per element: one read, one write).
"""
from __future__ import annotations

import numpy as np

import gpumem as gm
from _common import memcpy_d2d, stamp, write

TARGET = 0.85
CONFIGS = [(32, 1), (256, 1), (256, 2), (256, 4), (256, 8), (128, 4), (512, 4), (128, 8)]


def run(out_dir: str, quick: bool) -> bool:
    n = 1 << (24 if quick else 26)
    x = gm.to_device(np.random.default_rng(2).standard_normal(n).astype(np.float32))
    out = gm.empty((n,), np.float32)
    d2d = memcpy_d2d(out, x, 30, 3)
    copy_gbps, copy_src = d2d["GB/s"], "measured"
    rows = [{"variant": "cudaMemcpy D2D", "block": None, "items": None,
             "median_ms": d2d["median_ms"], "GB/s": copy_gbps, "x copy": 1.0}]
    for memory in ("constant", "readonly", "global"):
        for block, items in CONFIGS:
            r = gm.bench(gm.stencil_1d, x, memory=memory, block=block, items=items, out=out,
                         repeat=20, warmup=3)
            label = f"{memory}" + (" (the book's launch)" if (block, items) == (32, 1) else "")
            rows.append({"variant": label, "block": block, "items": items,
                         "median_ms": r.median_ms, "GB/s": r.gbps, "x copy": r.gbps / copy_gbps})
    table = gm.Table(rows, columns=["variant", "block", "items", "median_ms", "GB/s", "x copy"],
                     sources={"median_ms": "measured", "GB/s": "measured", "x copy": "measured"},
                     title=f"1D stencil radius 4, n = 2^{n.bit_length() - 1}: where the "
                           "coefficients live, beside a device copy")
    best = max((r for r in rows if r["block"] is not None), key=lambda r: r["GB/s"])
    checks = []
    if not quick:
        checks.append({"what": f"best stencil >= {TARGET}x device copy at n = 2^26",
                       "value": best["x copy"], "met": best["x copy"] >= TARGET})
    met = all(c["met"] for c in checks)
    notes = [f"{'met' if c['met'] else 'MISSED'}: {c['what']} ({c['value']:.2f}x: "
             f"{best['variant']}, block {best['block']}, items {best['items']})" for c in checks]
    notes.append(f"device copy: {copy_gbps:.0f} GB/s ({copy_src}); stencil bytes = 8 n")
    notes.append("constant: coefficients copied with cudaMemcpyToSymbol before each launch, "
                 "outside the timed region")
    write(out_dir, "stencil", {"stamp": stamp(), "n": n, "rows": rows, "targets": checks,
                               "met": met}, table, notes)
    return met
