"""Distributed shared memory (compute capability 9.0+): DSMEM read and write bandwidth by
cluster size beside each SM reading its own shared memory and beside a cudaMemcpy
device-to-device copy measured before and after in the same run; the latency of a load
from another block's shared memory against the block's own; the cluster histogram against
per-block shared bins and global atomics; a producer -> consumer pipeline in clusters of
two handing tiles over through the consumer's shared memory against through global memory
(reported, no target: Lühnen et al. measured up to 2.3x for the shared-memory hand-off).

Every gpumem row is the median of ``REPEAT`` launches timed with CUDA events
(gpumem.bench); every checksum and histogram is compared with its NumPy reference
before it is timed.  GB/s counts every byte read or written in shared memory.

Targets on an H100: DSMEM reads in clusters of 2 >= 1.0x the device copy's GB/s (the
SM-to-SM network against device memory; Luo et al. report DSMEM throughput of a few TB/s
that falls as clusters grow), and at 2^16 .. 2^18 bins -- more than one block's shared
memory -- the cluster histogram faster than global atomics (>= 1.0x).  The owner
histogram (the same slices of bins, the values read by every rank instead of the atomics
sent over DSMEM) is reported beside it.
"""
from __future__ import annotations

import numpy as np

import gpumem as gm
from gpumem.lessons import clusters as cl
from _common import memcpy_d2d, stamp, write

REPEAT = 20
WARMUP = 3
TARGET_READ = 1.0
TARGET_HIST = 1.0


def run(out_dir: str, quick: bool) -> bool:
    cc = tuple(gm.device().compute_capability)
    if not cl.cluster_capable(cc):
        raise RuntimeError(f"bench_clusters needs compute capability 9.0 (this GPU: {cc})")
    n = 1 << (24 if quick else 26)
    src = gm.to_device(np.zeros(n, np.float32))
    dst = gm.empty((n,))
    before = memcpy_d2d(dst, src, REPEAT, WARMUP)
    passes = 16 if quick else 64
    bw = cl.dsmem_bandwidth(passes=passes, repeat=REPEAT)
    after = memcpy_d2d(dst, src, REPEAT, WARMUP)
    copy = max(before["GB/s"], after["GB/s"])
    rows = [{"experiment": "cudaMemcpy D2D", "variant": "", "cluster": None, "ms": None,
             "GB/s": copy, "x copy": 1.0, "note": f"{4 * n >> 20} MiB"}]
    for r in bw:
        rows.append({"experiment": "dsmem_stream", "variant": r["variant"], "cluster": r["cluster"],
                     "ms": r["ms"], "GB/s": r["GB/s"],
                     "x copy": r["GB/s"] / copy if r["GB/s"] else None, "note": r["note"]})
    lat = cl.dsmem_latency()
    for r in lat:
        rows.append({"experiment": "dsmem_chase", "variant": r["variant"], "cluster": r["cluster"],
                     "ms": None, "GB/s": None, "x copy": None,
                     "note": f"{r['cycles/load']:.1f} cycles per load"})
    bins = (1 << 12, 1 << 16, 1 << 18) if quick else cl.HISTOGRAM_BINS
    hist = cl.histogram_sweep(bins, n=1 << (22 if quick else 24), repeat=REPEAT)
    for r in hist:
        rows.append({"experiment": f"histogram {r['bins']} bins", "variant": r["variant"],
                     "cluster": r["cluster"], "ms": r["ms"], "GB/s": None, "x copy": None,
                     "note": r["note"] or f"{r['Gvalues/s']:.1f} Gvalues/s"})
    pipe = cl.pipeline_sweep(cl.PIPELINE_SIZES[::2] if quick else cl.PIPELINE_SIZES,
                             repeat=REPEAT)
    for r in pipe:
        rows.append({"experiment": f"pipeline n = {r['n']}", "variant": r["variant"],
                     "cluster": 2, "ms": r["ms"], "GB/s": r["GB/s"], "x copy": r["GB/s"] / copy,
                     "note": "" if r["global / dsmem"] is None
                     else f"global / dsmem {r['global / dsmem']:.2f}"})
    table = gm.Table(rows, columns=["experiment", "variant", "cluster", "ms", "GB/s", "x copy",
                                    "note"],
                     sources={"ms": "measured", "GB/s": "measured", "x copy": "measured"},
                     title=f"distributed shared memory, {gm.device().name}")
    read2 = next(r for r in bw if r["variant"] == "read" and r["cluster"] == 2)
    ms = {(r["bins"], r["variant"]): r["ms"] for r in hist}
    big = [b for b in bins if b >= 1 << 16]
    checks = [{"what": f"DSMEM read, clusters of 2 >= {TARGET_READ}x the device copy",
               "value": read2["GB/s"] / copy, "met": read2["GB/s"] / copy >= TARGET_READ}]
    for b in big:
        ratio = ms[(b, "global")] / ms[(b, "cluster")]
        checks.append({"what": f"cluster histogram at {b} bins >= {TARGET_HIST}x global atomics",
                       "value": ratio, "met": ratio >= TARGET_HIST})
    met = all(c["met"] for c in checks)
    notes = [f"{'met' if c['met'] else 'MISSED'}: {c['what']} ({c['value']:.2f}x)"
             for c in checks]
    notes.append(f"device copy: {copy:.0f} GB/s (the faster of before {before['GB/s']:.0f} "
                 f"and after {after['GB/s']:.0f}); DSMEM: half an SM's shared memory per block "
                 f"({read2['smem']} bytes: one block per SM), {passes} passes, "
                 "a full wave of clusters, every checksum equal to the reference")
    notes.append("histogram: uniform uint32 values, counts equal to np.bincount; 'block' "
                 "only where all bins fit one block's shared memory")
    notes.append("owner (the bins split as for cluster, every rank reading all of its cluster's "
                 "values: no DSMEM), x global atomics, reported (no target): " + ", ".join(
                     f"{b} bins {ms[(b, 'global')] / ms[(b, 'owner')]:.2f}x" for b in big))
    write(out_dir, "clusters", {"stamp": stamp(), "rows": rows, "copy": {"before": before,
                                                                         "after": after},
                                "targets": checks, "met": met}, table, notes)
    return met
