"""The l2_persistence lesson's launch with and without an access-policy window, against
the device copy, in the same run.

Rows (float32 data from ``np.random.default_rng(0)``), a hot set of ``HOT_MIB`` MiB read
``REUSE`` times per element of a ``COLD_MIB`` MiB cold array (``gm.hot_cold``):

* without a window: the kernel time (CUDA events, median of ``REPEAT`` launches after one
  warm-up; ``gm._core._hot_cold_window(..., hit_ratio=None)``);
* with the window over the hot set (hit_ratio 1, the set-aside as large as the hot set or
  the GPU's maximum), the same launches;
* the anchor: ``cudaMemcpy`` device to device of the cold array (``_common.memcpy_d2d``):
  the same device-memory traffic the launch cannot avoid (cold read once, out written
  once) -- a launch whose hot set stays in L2 approaches it.

The ``x anchor`` column is "stream GB/s" (2 x the cold bytes over the launch's time)
over the copy's GB/s.  No speed target: the issue asks what the window does, and on the
H100 (2026-11-25) it did next to nothing for this launch (0.98x the time without: 32 MiB
hot x2 past 256 MiB) -- the rows say so each run.  The target is L2's state after the
run: the set-aside and the stream's window as they were (an AssertionError otherwise),
and the rows with a window present (compute capability 8.0+).
"""
from __future__ import annotations

import statistics

import numpy as np

import gpumem as gm
from gpumem.lessons import l2_persistence as l2p
from _common import memcpy_d2d, stamp, write

MiB = 1 << 20
HOT_MIB, COLD_MIB, REUSE = 32, 256, 2
REPEAT, REPEAT_QUICK = 50, 10


def _ms(hot, cold, out, hit, repeat: int) -> float:
    with gm.record() as recs:
        gm._core._hot_cold_window(hot, cold, out, REUSE, hit, repeat=repeat)
    return statistics.median(r.ms for r in recs)


def run(out_dir: str, quick: bool) -> bool:
    st = stamp()  # without a GPU: CudaUnavailableError here, like the other benchmarks
    state = l2p.l2_state()
    repeat = REPEAT_QUICK if quick else REPEAT
    rng = np.random.default_rng(0)
    hot_h = rng.standard_normal(HOT_MIB * MiB // 4, dtype=np.float32)
    cold_h = rng.standard_normal(COLD_MIB * MiB // 4, dtype=np.float32)
    hot, cold = gm.to_device(hot_h), gm.to_device(cold_h)
    out = gm.empty(cold.shape)
    rows, notes = [], []
    windows = tuple(state["compute_capability"]) >= l2p.WINDOW_CC and state["max_persisting"] > 0
    ref = l2p.hot_cold_reference(hot_h, cold_h, REUSE)
    none_ms = _ms(hot, cold, out, None, repeat)
    if not np.array_equal(out.get(), ref):
        raise AssertionError("hot_cold without a window differs from its reference")
    win_ms = None
    if windows:
        win_ms = _ms(hot, cold, out, 1.0, repeat)
        if not np.array_equal(out.get(), ref):
            raise AssertionError("hot_cold under the window differs from its reference")
    copy = memcpy_d2d(gm.empty(cold.shape), cold, repeat, 5)
    stream_bytes = 2 * COLD_MIB * MiB

    def row(what, ms, target, value=None):
        gbps = stream_bytes / (ms * 1e-3) / 1e9 if ms else None
        ratio = value if value is not None else (gbps / copy["GB/s"] if gbps else None)
        met = None if target is None else ratio is not None and (
            ratio <= target[1] if target[0] == "<=" else ratio >= target[1])
        return {"what": what, "ms": ms, "stream GB/s": gbps, "anchor": "cudaMemcpy D2D of cold",
                "anchor GB/s": copy["GB/s"], "x anchor": ratio,
                "target": None if target is None else f"{target[0]} {target[1]}", "met": met}

    rows.append(row(f"hot_cold {HOT_MIB} MiB hot x{REUSE} past {COLD_MIB} MiB, no window",
                    none_ms, None))
    if windows:
        rows.append(row(f"the same under the window (hit_ratio 1, set-aside "
                        f"{min(HOT_MIB * MiB, state['max_persisting']) / MiB:.1f} MiB)",
                        win_ms, None))
        r = row("window time / time without", win_ms, None, win_ms / none_ms)
        r["stream GB/s"] = None
        rows.append(r)
    else:
        notes.append(f"no access-policy window on this GPU (compute capability "
                     f"{st['cc']}; windows need 8.0): its rows are missing, targets not met")
    after = l2p.l2_state()
    if after != state:
        raise AssertionError(f"L2's state changed: {state} -> {after}")
    notes.append(f"L2 after the run as before: set-aside {after['persisting_limit']} bytes, "
                 f"stream window {after['window_bytes']} bytes (max set-aside "
                 f"{state['max_persisting']}, max window {state['max_window']})")
    met = bool(windows)
    if windows:
        notes.append(f"under the window the launch took {win_ms / none_ms:.2f}x its time "
                     "without (no target: measured, not assumed)")
    notes.append(f"kernel times: CUDA events, median of {repeat} launches after one warm-up")
    cols = ["what", "ms", "stream GB/s", "anchor", "anchor GB/s", "x anchor", "target", "met"]
    table = gm.Table(rows, cols, sources={"ms": "measured", "stream GB/s": "measured",
                                          "anchor GB/s": "measured", "x anchor": "measured"},
                     title=f"a {HOT_MIB} MiB hot set past a {COLD_MIB} MiB stream, with and "
                           "without an access-policy window, against the device copy")
    write(out_dir, "l2_persistence", {"stamp": st, "l2_state": state, "copy": copy,
                                      "rows": rows, "met": met}, table, notes)
    return met
