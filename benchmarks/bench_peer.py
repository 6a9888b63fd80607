"""The peer GPU: the copy engine between two GPUs beside CuPy's, both ways at once beside
CuPy's two copies, and an SM's reads over the link beside the copy engine, in the same run;
a dependent load's latency into the peer's memory as context.

The pair is the first of ``peer.peer_pairs()`` whose GPUs reach each other both ways,
``(a, b)``; peer access is switched on both ways, CuPy's first
(``cupy.cuda.runtime.deviceEnablePeerAccess``, 'already enabled' ignored), then gpumem's
(``gm.enable_peer_access``: the driver's switch again, and gpumem's pool opened to the
peer).  Rows:

* the copy engine one way, GPU a -> b, 256 MiB and 1 GiB (quick: 256 MiB):
  ``peer.memcpy_peer(nbytes, src=a, dst=b)`` (``cudaMemcpyPeerAsync`` between CUDA events
  on a's stream, median of ``REPEAT`` after two warm-ups) against CuPy's
  ``cupy.cuda.runtime.memcpyPeerAsync`` of the same bytes between CuPy arrays on the two
  GPUs, on a stream of GPU a between two ``cupy.cuda.Event`` records, median of the same
  count after the same warm-ups, measured before and after gpumem's: the faster is the
  reference (the stricter target);
* both ways at once, the same sizes: ``memcpy_peer(..., way="both")`` (the copy back from
  b on b's stream, started with the first and ended before its end event; GB/s counts
  both directions) against CuPy doing the same on two streams, one per GPU, bracketed by
  events on a's (b's stream waits for the start, a's for b's end);
* SM reads over the link: ``peer.loads_sweep(("read",), src=b, dst=a, n=2^26)`` --
  ``peer_copy`` on GPU a of 256 MiB in b's memory into a's, one block per SM, at
  ``LOAD_POINTS`` (warps per SM, width, loads in flight per thread) -- against the copy
  engine moving the same bytes the same way (``memcpy_peer(src=b, dst=a)``), measured
  before and after the sweep: the faster is the reference;
* info, no target: ``peer.latency_sweep(src=b, dst=a)`` -- one thread of GPU a chasing a
  64 MiB ring in its own memory and in b's: ns and SM cycles per load, the peer's beside
  the own memory's and beside the model's peer latency (``gpumem.model.peer``).

Targets: gpumem's copy engine >= 0.98x CuPy's GB/s one way and both ways, at every size;
the best SM read point >= 0.93x the copy engine's GB/s.  Without CuPy its anchors are
missing and the targets beside it not checkable (counted as not met, like the other
benchmarks whose anchor is CuPy).  With fewer than two GPUs that reach each other it
prints one line, 'skipped: needs two GPUs with peer access', writes it into its JSON and
Markdown, and counts as met (exit 0) -- unless ``GPUMEM_REQUIRE_GPUS`` asks for two or
more (as tests/test_peer.py reads it): then it is missed.  NCCL plays no part.
"""
from __future__ import annotations

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off, as everywhere here

import argparse
import json
import statistics
import sys

import gpumem as gm
from gpumem.lessons import peer
from gpumem.model import peer as pm
from _common import cupy_or_none, stamp, write

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
SIZES, SIZES_QUICK = (256 * MiB, 1024 * MiB), (256 * MiB,)
REPEAT, REPEAT_QUICK = 20, 10
WARMUP = 2                  # memcpy_peer's own: two warm-ups
T_COPY = 0.98               # gpumem's copy engine >= 0.98x CuPy's GB/s, one way
T_BOTH = 0.98               # the same, both ways at once
T_READS = 0.93              # best SM read point >= 0.93x the copy engine's GB/s
LOAD_N = 1 << 26            # floats: 256 MiB
LOAD_POINTS = ((16, "float4", 4), (16, "float4", 8), (32, "float4", 4))
LATENCY_STEPS, LATENCY_STEPS_QUICK = 2048, 512
SKIP = "skipped: needs two GPUs with peer access"
TITLE = "the peer GPU: the copy engine and an SM's reads between two GPUs, beside CuPy"


def _label(nbytes: int) -> str:
    return f"{nbytes // MiB} MiB" if nbytes < 1 << 30 else f"{nbytes >> 30} GiB"


def _pair() -> tuple[int, int] | None:
    """The first ``(a, b)`` of peer_pairs() whose GPUs reach each other both ways."""
    pairs = peer.peer_pairs() if gm.is_available() else []
    return next(((a, b) for a, b in pairs if (b, a) in pairs), None)


def _why_not() -> str:
    n = gm.device_count() if gm.is_available() else 0
    if n < 2:
        return f"{n} GPU{'s' if n != 1 else ''} here" if n else "no GPU here"
    return f"{n} GPUs here, no two that reach each other's memory both ways"


def _enable(cp, a: int, b: int) -> None:
    """Peer access both ways: CuPy's switch first ('already enabled' is no error), then
    gpumem's, whose own call clears the error CuPy's left as the runtime's last one."""
    for d, p in ((a, b), (b, a)):
        if cp is not None:
            with cp.cuda.Device(d):
                try:
                    cp.cuda.runtime.deviceEnablePeerAccess(p)
                except cp.cuda.runtime.CUDARuntimeError as e:
                    if e.status != getattr(cp.cuda.runtime, "errorPeerAccessAlreadyEnabled", 704):
                        raise
        gm.enable_peer_access(d, p)


def _cupy_ms(cp, nbytes: int, a: int, b: int, both: bool, repeat: int) -> list[float]:
    """Milliseconds of each CuPy ``memcpyPeerAsync`` of ``nbytes`` from GPU a to b, on a
    stream of a between CUDA events (with ``both``: b -> a at the same time on a stream of
    b, inside the same events), ``WARMUP`` calls first, timed and dropped."""
    rt, n = cp.cuda.runtime, (nbytes + 3) // 4
    with cp.cuda.Device(a):
        x, back_dst = cp.empty(n, cp.float32), cp.empty(n, cp.float32) if both else None
        sa, start, end = cp.cuda.Stream(non_blocking=True), cp.cuda.Event(), cp.cuda.Event()
    with cp.cuda.Device(b):
        y, back_src = cp.empty(n, cp.float32), cp.empty(n, cp.float32) if both else None
        sb, done_b = cp.cuda.Stream(non_blocking=True), cp.cuda.Event(disable_timing=True)
    out = []
    for i in range(WARMUP + repeat):
        with cp.cuda.Device(a):
            start.record(sa)
        if both:
            with cp.cuda.Device(b):
                sb.wait_event(start)
                rt.memcpyPeerAsync(back_dst.data.ptr, a, back_src.data.ptr, b, 4 * n, sb.ptr)
                done_b.record(sb)
        with cp.cuda.Device(a):
            rt.memcpyPeerAsync(y.data.ptr, b, x.data.ptr, a, 4 * n, sa.ptr)
            if both:
                sa.wait_event(done_b)
            end.record(sa)
            end.synchronize()
        if i >= WARMUP:
            out.append(cp.cuda.get_elapsed_time(start, end))
    del x, y, back_dst, back_src
    return out


def _gbps(nbytes: int, ms: float | None) -> float | None:
    return None if ms is None else nbytes / (ms * 1e-3) / 1e9


def _row(section, what, unit, mine, anchor, anchor_v, target=None):
    """``x anchor``: gpumem's value over the anchor's; ``target``: the least ``x anchor``
    (None: info); ``met``: "met", "MISSED", or "not checkable" without the anchor's value."""
    ratio = None if mine is None or anchor_v is None else mine / anchor_v
    met = None
    if target is not None:
        met = "not checkable" if ratio is None else ("met" if ratio >= target else "MISSED")
    return {"section": section, "what": what, "unit": unit, "gpumem": mine, "anchor": anchor,
            "anchor value": anchor_v, "x anchor": ratio,
            "target": None if target is None else f">= {target}", "met": met}


def _skip(out_dir: str, why: str, need: int) -> bool:
    line = f"{SKIP} ({why})"
    if need >= 2:
        line = f"MISSED: GPUMEM_REQUIRE_GPUS={need} but {why}: nothing measured"
    print(f"peer: {line}", flush=True)
    st = stamp() if gm.is_available() else None
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench_peer.json"), "w") as f:
        json.dump({"stamp": st, "skipped": line, "met": None if need < 2 else False}, f,
                  indent=1, default=str)
    head = (f"{st['gpu']} (cc {st['cc']}, driver {st['driver']}, CUDA runtime {st['runtime']}), "
            f"{st['date']}" if st else "no GPU")
    with open(os.path.join(out_dir, "bench_peer.md"), "w") as f:
        f.write("\n".join([f"### {TITLE}", "", head, "", line, ""]))
    return need < 2


def _run(out_dir: str, quick: bool) -> bool | None:
    """Measure and write; True or False (the targets met or not), None when skipped."""
    need = int(os.environ.get("GPUMEM_REQUIRE_GPUS", "0") or 0)
    pair = _pair()
    if pair is None:
        return None if _skip(out_dir, _why_not(), need) else False
    a, b = pair
    st = stamp()
    cp = cupy_or_none()
    _enable(cp, a, b)
    sizes = SIZES_QUICK if quick else SIZES
    repeat = REPEAT_QUICK if quick else REPEAT
    rows, notes, raw = [], [], {"copies": []}
    no_cupy = "CuPy memcpyPeerAsync (CuPy not importable)"

    # ---- the copy engine, one way and both ways, against CuPy's ---------------------------
    for way, target in (("one", T_COPY), ("both", T_BOTH)):
        for nbytes in sizes:
            moved = nbytes * (2 if way == "both" else 1)
            before = _cupy_ms(cp, nbytes, a, b, way == "both", repeat) if cp else None
            mine = peer.memcpy_peer(nbytes, src=a, dst=b, way=way, repeat=repeat)
            after = _cupy_ms(cp, nbytes, a, b, way == "both", repeat) if cp else None
            ref = min(statistics.median(before), statistics.median(after)) if cp else None
            what = (f"copy engine GPU {a} -> {b}, {_label(nbytes)}" if way == "one" else
                    f"copy engine GPU {a} <-> {b}, {_label(nbytes)} each way at once")
            anchor = (no_cupy if cp is None else "CuPy memcpyPeerAsync" +
                      (" x2, a stream per GPU" if way == "both" else "") + " (events)")
            rows.append(_row("copy", what, "GB/s", mine["GB/s"], anchor, _gbps(moved, ref),
                             target))
            raw["copies"].append({"way": way, "bytes": nbytes, "gpumem": mine,
                                  "cupy_before_ms": before, "cupy_after_ms": after})

    # ---- SM reads over the link against the copy engine, the same bytes the same way ------
    nb = 4 * LOAD_N
    ce = [peer.memcpy_peer(nb, src=b, dst=a, repeat=repeat)]
    loads = peer.loads_sweep(("read",), src=b, dst=a, n=LOAD_N, points=LOAD_POINTS,
                             repeat=repeat, progress=False)
    ce.append(peer.memcpy_peer(nb, src=b, dst=a, repeat=repeat))
    ce_gbps = max(c["GB/s"] for c in ce)
    anchor = f"copy engine GPU {b} -> {a}, {_label(nb)} (faster of before/after)"
    for r in loads:
        rows.append(_row("reads", f"peer_copy on GPU {a} from GPU {b}'s memory: "
                         f"{r['warps_per_sm']} warps/SM, {r['width']}-byte loads, unroll "
                         f"{r['unroll']}", "GB/s", r["GB/s"], anchor, ce_gbps))
    best = max(loads.rows, key=lambda r: r["GB/s"] or 0.0)
    rows.append(_row("reads", f"best SM read point ({best['warps_per_sm']} warps/SM, "
                     f"{best['width']}-byte loads, unroll {best['unroll']})", "GB/s",
                     best["GB/s"], anchor, ce_gbps, T_READS))

    # ---- a dependent load: info ------------------------------------------------------------
    lat = peer.latency_sweep(src=b, dst=a, steps=LATENCY_STEPS_QUICK if quick else LATENCY_STEPS)
    own, far = lat.rows
    for unit in ("ns", "cycles"):
        rows.append(_row("latency", f"peer_chase on GPU {a}, its own memory", unit, own[unit],
                         None, None))
        rows.append(_row("latency", f"peer_chase on GPU {a}, GPU {b}'s memory", unit, far[unit],
                         f"GPU {a}'s own memory", own[unit]))
    rows.append(_row("latency", f"peer_chase on GPU {a}, GPU {b}'s memory", "ns", far["ns"],
                     "the model's peer latency (two H200s)", pm.PEER_LATENCY_NS))
    if cp is not None:
        for d in (a, b):
            with cp.cuda.Device(d):
                cp.get_default_memory_pool().free_all_blocks()

    # ---- targets, table, files -------------------------------------------------------------
    checked = [r for r in rows if r["target"] is not None]
    met = all(r["met"] == "met" for r in checked)
    for r in checked:
        value = "no anchor" if r["x anchor"] is None else f"{r['x anchor']:.3f}x"
        notes.append(f"{r['met']}: {r['what']} vs {r['anchor']} ({value}, target {r['target']})")
    if cp is None:
        notes.append("CuPy not importable: no CuPy anchor in this run; the copy engine's targets "
                     "are not checkable (counted as not met)")
    notes += [
        f"pair: GPU {a} and GPU {b} (peer.peer_pairs(), both ways); peer access on both ways "
        f"({'CuPy then ' if cp else ''}gm.enable_peer_access); attributes "
        f"{gm.peer_attributes(a, b)}",
        f"copy rows: CUDA events, median of {repeat} after {WARMUP} warm-ups, gpumem's and "
        "CuPy's alike; CuPy measured before and after gpumem's, the faster is the reference; "
        "GB/s = bytes moved (both directions for 'at once') / median.",
        f"read rows: peer.loads_sweep, one block per SM, median of {repeat} launches; GB/s counts "
        f"the bytes that cross the link; the copy engine GPU {b} -> {a} of the same bytes "
        f"{ce[0]['GB/s']:.0f} GB/s before, {ce[1]['GB/s']:.0f} after.",
        f"latency rows: one thread, {LATENCY_STEPS_QUICK if quick else LATENCY_STEPS} dependent "
        f"loads through a 64 MiB ring (a node every 4 KiB); the model's peer latency "
        f"{pm.PEER_LATENCY_NS:.0f} ns ({pm.PEER_LATENCY_CYCLES} cycles, two H200s); no target.",
    ]
    table = gm.Table(rows, columns=["what", "unit", "gpumem", "anchor", "anchor value",
                                    "x anchor", "target", "met"],
                     sources={"gpumem": "measured", "anchor value": "measured",
                              "x anchor": "measured"}, title=f"{TITLE} ({st['gpu']})")
    payload = {"stamp": st, "quick": quick, "pair": [a, b], "sizes": list(sizes),
               "repeat": repeat, "warmup": WARMUP, "cupy": getattr(cp, "__version__", None),
               "rows": rows, "copy_engine_for_reads": ce, "loads": loads.rows,
               "latency": lat.rows, "raw": raw, "met": met}
    write(out_dir, "peer", payload, table, notes)
    with open(os.path.join(out_dir, "bench_peer.md")) as f:
        print(f.read(), flush=True)
    return met


def run(out_dir: str, quick: bool) -> bool:
    return _run(out_dir, quick) is not False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    met = _run(args.out, args.quick)
    if met is not None:
        print(f"peer: targets {'met' if met else 'MISSED'}", flush=True)
    return 0 if met is not False else 1


if __name__ == "__main__":
    sys.exit(main())
