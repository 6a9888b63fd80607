"""What gpumem's outputs cost to allocate: calls that make a fresh output each time
against the same calls into an existing one, against CuPy and against the copies that
bound them, in the same run.

Rows (float32 data from ``np.random.default_rng(0)``):

* ``vec_add`` of 2^20 floats on DeviceArrays: a fresh output each call, into ``out=``,
  and CuPy's ``a + a``: loops of ``LOOP`` calls and one synchronize at the end (calls
  return once their kernel is queued, gpumem's as CuPy's), host wall clock
  (``time.perf_counter``) per call, median of ``REPEAT`` loops after ``WARMUP``.  Beside
  it, without a target, one call waited for (its record's ``ms`` read) against one CuPy
  call and a stream synchronize.
* ``vec_add`` of 1,024 floats, fresh output, against CuPy's ``a + a`` (the same clock).
* ``vec_add`` of CuPy's arrays (2^20 and 1,024 floats: foreign operands, each checked
  through its ``__cuda_array_interface__``), against CuPy's ``a + a``.
* ``gm.bench(gm.transpose, a)`` at 8192 x 8192 with a fresh output every call (kernel
  time, CUDA events) against the device copy of the same bytes (``cudaMemcpy`` device
  to device, ``_common.memcpy_d2d``).
* ``gm.to_device(h)`` of a pinned 256 MiB array (``gm.pinned_empty``; quick: 64 MiB),
  allocation included, host wall clock, against ``cudaMemcpy`` of pinned memory timed
  with CUDA events (``gm._core._transfer_copy("pinned", "h2d", ...)``), measured
  before and after: the faster is the reference.

Targets: vec_add 2^20 fresh <= 1.3x the out= time and <= 1.2x CuPy's; vec_add 1,024
<= 1.2x CuPy's; vec_add of CuPy's arrays <= 1.2x CuPy's; transpose with fresh outputs >= 0.93x the device copy's GB/s; pinned
to_device >= 0.95x the pinned cudaMemcpy's GB/s.  Without CuPy its targets are not
met (a note says so).  The allocator in use (``gm.allocator()``) is printed and kept.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

import gpumem as gm
from _common import cupy_or_none, memcpy_d2d, stamp, wall as _wall, write

MiB = 1 << 20
REPEAT, WARMUP = 2000, 200
REPEAT_QUICK, WARMUP_QUICK = 300, 30
T_FRESH_VS_OUT = 1.3      # fresh time <= 1.3x out= time
T_VS_CUPY = 1.2           # gpumem time <= 1.2x CuPy's
T_TRANSPOSE = 0.93        # x device copy GB/s
T_PINNED = 0.95           # x cudaMemcpy pinned GB/s
LOOP = 100                # calls per timed loop


def _us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _paired_us(mine, theirs, repeat: int, warmup: int) -> tuple[float, float]:
    """Microseconds per call of ``mine`` and ``theirs``, each ``(call, sync)``: loops of LOOP
    calls and one ``sync()`` at the end (calls queue their kernels and return, as CuPy's
    do), the two loops alternating so that both see the same machine; medians of
    ``max(10, repeat // 20)`` loops each."""
    def loop(call, sync):
        t0 = time.perf_counter()
        for _ in range(LOOP):
            r = call()
        sync()
        dt = time.perf_counter() - t0
        del r
        return dt
    for _ in range(max(2, warmup // 20)):
        loop(*mine), loop(*theirs)
    a, b = [], []
    for _ in range(max(10, repeat // 20)):
        a.append(loop(*mine))
        b.append(loop(*theirs))
    return _us(a) / LOOP, _us(b) / LOOP


def _row(what, unit, mine, anchor, anchor_v, target, lower_is_better):
    """``x anchor``: gpumem's time over the anchor's (lower is better) or GB/s over GB/s."""
    ratio = None if mine is None or anchor_v is None else mine / anchor_v
    met = None if target is None else ratio is not None and (
        ratio <= target if lower_is_better else ratio >= target)
    return {"what": what, "unit": unit, "gpumem": mine, "anchor": anchor,
            "anchor value": anchor_v, "x anchor": ratio,
            "target": None if target is None else (f"<= {target}" if lower_is_better
                                                   else f">= {target}"),
            "met": met}


def run(out_dir: str, quick: bool) -> bool:
    st = stamp()  # without a GPU: CudaUnavailableError here, like the other benchmarks
    allocator = gm.allocator()
    print(f"allocation benchmark: gpumem's allocator is {allocator!r}", flush=True)
    cp = cupy_or_none()
    repeat, warmup = (REPEAT_QUICK, WARMUP_QUICK) if quick else (REPEAT, WARMUP)
    rng = np.random.default_rng(0)
    rows, notes = [], []

    # ---- vec_add: fresh output, out=, CuPy -- loops of LOOP calls, then one synchronize ----
    for n in (1 << 20, 1024):
        a = gm.to_device(rng.standard_normal(n).astype(np.float32))
        want = 2 * a.get()
        if not np.array_equal(gm.vec_add(a, a).get(), want):
            raise AssertionError(f"vec_add of {n} floats differs from a + a")
        label = "2^20" if n == 1 << 20 else "1,024"
        fresh_call = (lambda: gm.vec_add(a, a), gm.synchronize)
        if n == 1 << 20:
            out = gm.empty((n,), np.float32)
            fresh, into = _paired_us(fresh_call, (lambda: gm.vec_add(a, a, out=out),
                                                  gm.synchronize), repeat, warmup)
            rows.append(_row(f"vec_add {label} floats: fresh output vs out=", "us", fresh,
                             "gm.vec_add(a, a, out=d)", into, T_FRESH_VS_OUT, True))
            del out
        cupy_us = cupy_waited = None
        fresh_vs_cupy = None
        if cp is not None:
            c = cp.asarray(a.get())
            stream = cp.cuda.get_current_stream()
            fresh_vs_cupy, cupy_us = _paired_us(fresh_call, (lambda: c + c, stream.synchronize),
                                                repeat, warmup)

            def cupy_add():
                r = c + c
                stream.synchronize()
                return r

            cupy_waited = _us(_wall(cupy_add, repeat, warmup))
            del c
        rows.append(_row(f"vec_add {label} floats: fresh output vs CuPy a + a", "us",
                         fresh_vs_cupy, "CuPy a + a", cupy_us, T_VS_CUPY, True))
        # CuPy's arrays as the operands (each checked through __cuda_array_interface__:
        # its stream, and one driver query of its memory), the output gpumem's
        foreign_vs_cupy = foreign_cupy_us = None
        if cp is not None:
            c = cp.asarray(a.get())
            if not np.array_equal(gm.vec_add(c, c).get(), want):
                raise AssertionError(f"vec_add of CuPy's {n} floats differs from a + a")
            foreign_vs_cupy, foreign_cupy_us = _paired_us(
                (lambda: gm.vec_add(c, c), gm.synchronize),
                (lambda: c + c, cp.cuda.get_current_stream().synchronize), repeat, warmup)
            del c
        rows.append(_row(f"vec_add {label} floats, CuPy arrays as operands: vs CuPy a + a",
                         "us", foreign_vs_cupy, "CuPy a + a", foreign_cupy_us, T_VS_CUPY,
                         True))
        if n == 1 << 20:            # each call waited for: the latency of one call, no target

            def waited():
                r = gm.vec_add(a, a)
                gm.last_record().ms
                return r

            rows.append(_row(f"vec_add {label} floats, each call waited for (record's ms "
                             "read)", "us", _us(_wall(waited, repeat, warmup)),
                             "CuPy a + a, stream synchronized", cupy_waited, None, True))
        del a
    if cp is None:
        notes.append("CuPy is not installed: its rows have no anchor, and their targets are "
                     "not met")

    # ---- transpose with fresh outputs against the device copy ----------------------------------
    side = 4096 if quick else 8192
    m = gm.to_device(rng.standard_normal((side, side)).astype(np.float32))
    if not np.array_equal(gm.transpose(m).get(), m.get().T):
        raise AssertionError("transpose differs from a.T")
    r = gm.bench(gm.transpose, m, repeat=20 if quick else 50, warmup=5)
    dst = gm.empty((side, side), np.float32)
    d2d = memcpy_d2d(dst, m, 20 if quick else 50, 5)
    rows.append(_row(f"transpose {side}^2, fresh output each call (gm.bench)", "GB/s", r.gbps,
                     "cudaMemcpy D2D of the same bytes", d2d["GB/s"], T_TRANSPOSE, False))
    del m, dst

    # ---- to_device of pinned memory against cudaMemcpy pinned ------------------------------------
    nbytes = (64 if quick else 256) * MiB
    h = gm.pinned_empty((nbytes // 4,), np.float32)
    h[...] = rng.random(nbytes // 4, dtype=np.float32)
    if not np.array_equal(gm.to_device(h).get(), h):
        raise AssertionError("to_device of pinned memory differs from its input")
    pin_rep, pin_warm = (3, 1) if quick else (10, 2)
    ref = [statistics.median(gm._core._transfer_copy("pinned", "h2d", nbytes, pin_rep, pin_warm))]
    mine = _wall(lambda: gm.to_device(h), pin_rep, pin_warm)
    ref.append(statistics.median(gm._core._transfer_copy("pinned", "h2d", nbytes, pin_rep,
                                                         pin_warm)))
    mine_gbps = nbytes / statistics.median(mine) / 1e9
    ref_gbps = nbytes / (min(ref) * 1e-3) / 1e9
    rows.append(_row(f"to_device pinned {nbytes // MiB} MiB (with its allocation)", "GB/s",
                     mine_gbps, "cudaMemcpy pinned h2d (events), best of before/after",
                     ref_gbps, T_PINNED, False))
    # where the rest goes, without targets: the same copy into an existing array (no
    # allocation), and the host wall clock of the events' anchor call itself
    d = gm.empty(h.shape, np.float32)
    into = _wall(lambda: gm.to_device(h, out=d), pin_rep, pin_warm)
    rows.append(_row(f"to_device pinned {nbytes // MiB} MiB into out= (no allocation)", "GB/s",
                     nbytes / statistics.median(into) / 1e9, "cudaMemcpy pinned h2d (events)",
                     ref_gbps, None, False))
    del d
    if cp is not None:
        def cupy_in():                      # CuPy's own copy of it, waited for
            r = cp.asarray(h)
            cp.cuda.get_current_stream().synchronize()
            return r

        cp_in = _wall(cupy_in, pin_rep, pin_warm)
        rows.append(_row(f"CuPy asarray of the pinned {nbytes // MiB} MiB (host wall clock)",
                         "GB/s", nbytes / statistics.median(cp_in) / 1e9,
                         "cudaMemcpy pinned h2d (events)", ref_gbps, None, False))
    del h

    met = all(r["met"] for r in rows if r["met"] is not None) and all(
        r["met"] is not None for r in rows if r["target"] is not None)
    for r in rows:
        if r["target"] is None:
            notes.append(f"no target: {r['what']}" + (f" ({r['x anchor']:.2f}x)"
                                                      if r["x anchor"] is not None else ""))
            continue
        notes.append(f"{'met' if r['met'] else 'MISSED'}: {r['what']} ({r['x anchor']:.2f}x, "
                     f"target {r['target']})" if r["x anchor"] is not None else
                     f"MISSED: {r['what']} (no anchor)")
    notes.append(f"allocator: {allocator} (GPUMEM_ALLOCATOR or gm.set_allocator() chooses); "
                 f"host wall clock rows: loops of {LOOP} calls and a synchronize, median of "
                 f"{max(10, repeat // 20)} loops; single calls median of {repeat} after {warmup}")
    cols = ["what", "unit", "gpumem", "anchor", "anchor value", "x anchor", "target", "met"]
    table = gm.Table(rows, cols, sources={"gpumem": "measured", "anchor value": "measured",
                                          "x anchor": "measured"},
                     title=f"fresh outputs against reused ones, CuPy and the copies "
                           f"(allocator: {allocator})")
    write(out_dir, "allocation", {"stamp": st, "allocator": allocator, "rows": rows,
                                  "met": met}, table, notes)
    return met
