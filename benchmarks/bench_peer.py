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
  the own memory's and beside the model's peer latency (``gpumem.model.peer``);
* collectives over the pair, 64 MiB, 256 MiB and 1 GiB per GPU (quick: 64 and 256 MiB):
  ``peer.collectives_sweep(("all_reduce",) + tuple(peer.TEACHING), devices=[a, b])`` --
  gpumem's NCCL all-reduce (one process, a communicator per GPU) against PyTorch's
  ``torch.cuda.nccl.all_reduce`` of one float32 tensor of the same size per GPU, in this
  process, timed the same way (``peer.INNER`` calls back to back between CUDA events on
  GPU a's legacy default stream, median of ``REPEAT`` after two warm-ups, both GPUs idle
  before and after; measured before and after gpumem's sweep, the faster is the
  reference), both as nccl-tests' bus bandwidth (``gpumem.model.peer.bus_bandwidth``);
  and the teaching all-reduce (``peer.teaching_all_reduce``, one-shot and two-shot)
  against gpumem's NCCL at the same size.

Targets: gpumem's copy engine >= 0.98x CuPy's GB/s one way and both ways, at every size;
the best SM read point >= 0.93x the copy engine's GB/s; gpumem's NCCL all-reduce bus
bandwidth at 1 GiB >= 0.97x PyTorch's (the other sizes: info); the faster teaching
all-reduce (one-shot or two-shot) >= 0.9x gpumem's NCCL at every size from 64 MiB (where it
is faster, a note says why).  Without CuPy (or PyTorch, or NCCL) the anchors are missing
and the targets beside them not checkable (counted as not met, like the other benchmarks
whose anchor is CuPy).  With fewer than two GPUs that reach each other it prints one
line, 'skipped: needs two GPUs with peer access', writes it into its JSON and Markdown,
and counts as met (exit 0) -- unless ``GPUMEM_REQUIRE_GPUS`` asks for two or more (as
tests/test_peer.py reads it): then it is missed.  NVLink multicast stays off
(``NCCL_NVLS_ENABLE=0``, set before gpumem's or PyTorch's NCCL starts).
"""
from __future__ import annotations

import os

os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLink multicast off (PyTorch's NCCL too)

import argparse
import json
import statistics
import sys

import gpumem as gm
from gpumem.lessons import peer
from gpumem.model import peer as pm
from gpumem.runtime import nccl
from gpumem.runtime.measure import time_calls
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
COLL_SIZES, COLL_SIZES_QUICK = (64 * MiB, 256 * MiB, 1024 * MiB), (64 * MiB, 256 * MiB)
T_NCCL = 0.97               # gpumem's NCCL all-reduce bus bandwidth >= 0.97x PyTorch's ...
T_NCCL_AT = 1024 * MiB      # ... at 1 GiB (the other sizes: info)
T_TEACH = 0.9               # the faster teaching all-reduce >= 0.9x gpumem's NCCL ...
T_TEACH_FROM = 64 * MiB     # ... at every size from 64 MiB
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


def _torch_or_none(a: int, b: int):
    """``(torch, None)``: PyTorch with CUDA and NCCL on both GPUs of the pair, imported
    here (lazily); else ``(None, why)``."""
    try:
        import torch
        import torch.cuda.nccl
    except Exception as e:     # not installed, or a build that fails to load here
        return None, f"PyTorch not importable ({type(e).__name__}: {e})"
    if not torch.cuda.is_available() or torch.cuda.device_count() <= max(a, b):
        return None, f"PyTorch {torch.__version__} sees {torch.cuda.device_count()} GPU(s)"
    if not hasattr(torch._C, "_nccl_all_reduce"):
        return None, f"PyTorch {torch.__version__} is built without NCCL"
    return torch, None


def _torch_all_reduce_ms(torch, nbytes: int, a: int, b: int, repeat: int) -> dict:
    """PyTorch's all-reduce of ``nbytes`` per GPU (``torch.cuda.nccl.all_reduce``: float32
    sums, one tensor on GPU a and one on b into one each, PyTorch's current -- default --
    stream of each GPU), timed as ``peer.collectives_sweep`` times gpumem's NCCL:
    ``peer.INNER`` calls back to back between CUDA events on GPU a's legacy default stream
    (``time_calls`` with GPU a current), ``WARMUP`` warm-ups dropped, both GPUs idle before
    and after.  ``{"ms": [per call, each of repeat], "ok": every output the sum}``."""
    n, coll = nbytes // 4, torch.cuda.nccl
    sends = [torch.ones(n, dtype=torch.float32, device=f"cuda:{d}") for d in (a, b)]
    recvs = [torch.empty(n, dtype=torch.float32, device=f"cuda:{d}") for d in (a, b)]
    assert [t.device.index for t in sends + recvs] == [a, b, a, b]
    coll.all_reduce(sends, recvs)        # PyTorch's communicators made here, untimed
    gm.synchronize()                     # both GPUs idle before the first event
    with gm.Device(a):
        t = time_calls(lambda: [coll.all_reduce(sends, recvs) for _ in range(peer.INNER)],
                       repeat=repeat, warmup=WARMUP)
    gm.synchronize()                     # and after the last
    ok = all(bool((r == 2.0).all()) for r in recvs)     # ones + ones, on both GPUs
    return {"ms": [ms / peer.INNER for ms in t["samples_ms"]], "ok": ok}


def _busbw(nbytes: int, ms: float | None) -> float | None:
    """nccl-tests' bus bandwidth of an all-reduce of ``nbytes`` per GPU on two GPUs."""
    if ms is None:
        return None
    return pm.bus_bandwidth("all_reduce", pm.algorithm_bandwidth(nbytes, ms * 1e-3), 2)


def _nccl_version() -> str | None:
    """gpumem's NCCL as ``2.28.7`` (None without it)."""
    try:
        v = nccl.version()
    except nccl.NcclError:
        return None
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def _torch_nccl_version(torch) -> str | None:
    """PyTorch's NCCL as ``2.27.5`` (None without PyTorch)."""
    if torch is None:
        return None
    try:
        v = torch.cuda.nccl.version()
    except Exception:
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


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

    # ---- collectives: gpumem's NCCL against PyTorch's, the teaching all-reduce against NCCL
    csizes = COLL_SIZES_QUICK if quick else COLL_SIZES
    torch, no_torch = _torch_or_none(a, b)
    torch_ms: dict[int, dict] = {}

    def torch_round(when: str) -> None:
        nonlocal no_torch
        if no_torch is None:
            try:
                for nbytes in csizes:
                    torch_ms.setdefault(nbytes, {})[when] = _torch_all_reduce_ms(
                        torch, nbytes, a, b, repeat)
            except Exception as e:     # PyTorch's NCCL failing here: no anchor, say why
                no_torch = f"PyTorch's all-reduce failed ({type(e).__name__}: {e})"
                torch_ms.clear()

    torch_round("before")
    coll = peer.collectives_sweep(("all_reduce",) + tuple(peer.TEACHING), csizes,
                                  devices=[a, b], repeat=repeat, progress=False)
    torch_round("after")
    if torch is not None:
        torch.cuda.empty_cache()       # PyTorch's cached blocks, on every GPU
    for d in (a, b):
        gm.empty_cache(device=d)
    busbw = {(r["collective"], r["bytes"]): r["busbw_GB/s"] for r in coll}
    torch_anchor = (f"PyTorch {torch.__version__} torch.cuda.nccl.all_reduce (events)"
                    if no_torch is None else
                    f"PyTorch torch.cuda.nccl.all_reduce ({no_torch.split(' (')[0]})")
    faster = []
    raw["collectives"] = []
    for nbytes in csizes:
        t = torch_ms.get(nbytes)
        ref = (min(statistics.median(t["before"]["ms"]), statistics.median(t["after"]["ms"]))
               if t else None)
        mine = busbw[("all_reduce", nbytes)]
        rows.append(_row("collectives", f"NCCL all_reduce bus bandwidth, GPUs {a} + {b}, "
                         f"{_label(nbytes)} each", "GB/s", mine, torch_anchor,
                         _busbw(nbytes, ref), T_NCCL if nbytes == T_NCCL_AT else None))
        nccl_anchor = f"gpumem NCCL all_reduce, {_label(nbytes)}"
        for name in peer.TEACHING:
            rows.append(_row("collectives", f"teaching all-reduce, {name}, {_label(nbytes)}",
                             "GB/s", busbw[(name, nbytes)], nccl_anchor, mine))
        name, best = max(((n_, busbw[(n_, nbytes)]) for n_ in peer.TEACHING),
                         key=lambda x: x[1] or 0.0)
        shot = f" ({name})" if best is not None else ""
        rows.append(_row("collectives", f"best teaching all-reduce{shot}, {_label(nbytes)}",
                         "GB/s", best, nccl_anchor, mine,
                         T_TEACH if nbytes >= T_TEACH_FROM else None))
        if best is not None and mine is not None and best > mine:
            faster.append(f"{_label(nbytes)} ({name}, {best / mine:.2f}x)")
        raw["collectives"].append({
            "bytes": nbytes,
            "busbw_GB/s": {c: busbw[(c, nbytes)] for c in ("all_reduce",) + tuple(peer.TEACHING)},
            "torch_before": t["before"] if t else None, "torch_after": t["after"] if t else None})

    # ---- targets, table, files -------------------------------------------------------------
    checked = [r for r in rows if r["target"] is not None]
    met = all(r["met"] == "met" for r in checked)
    for r in checked:
        value = "no anchor" if r["x anchor"] is None else f"{r['x anchor']:.3f}x"
        notes.append(f"{r['met']}: {r['what']} vs {r['anchor']} ({value}, target {r['target']})")
    if cp is None:
        notes.append("CuPy not importable: no CuPy anchor in this run; the copy engine's targets "
                     "are not checkable (counted as not met)")
    if no_torch is not None:
        notes.append(f"{no_torch}: no PyTorch anchor in this run; " + (
            "the NCCL all-reduce's target is not checkable (counted as not met)"
            if T_NCCL_AT in csizes else f"(its target is at {_label(T_NCCL_AT)} only)"))
    elif not all(t[w]["ok"] for t in torch_ms.values() for w in ("before", "after")):
        notes.append("PyTorch's all-reduce did not give every GPU the sum (ones + ones = 2): "
                     "its anchor is suspect")
    if "not measured" in coll.title:
        notes.append(f"collectives not measured ({coll.title.split('not measured: ', 1)[-1]}: "
                     "the NCCL and teaching rows are empty, their targets not met")
    if faster:
        notes.append(
            "the teaching all-reduce beats NCCL at " + ", ".join(faster) + ". Why (the "
            "mechanism, not measured here): on two GPUs the bytes each way are the same for "
            "both shots and for NCCL's ring (one buffer per direction), so the difference is how "
            "they move. The teaching kernel is one launch per GPU on every SM (4 blocks of 256 "
            "threads each), float4 loads straight from the peer's buffer (two-shot: stores "
            "straight into it), no staging and no handshake inside the kernel; NCCL moves the "
            "data through its own FIFO buffers in chunks, on its channels (a block each; "
            "NCCL_DEBUG=INFO lists how many), each chunk signalled by a flag the receiver "
            "polls, so fewer bytes are in flight over the link. NCCL pays that to be general: "
            "any number of GPUs and nodes, and user buffers it need not map into the peer.")
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
        f"collective rows: nccl-tests' bus bandwidth of an all-reduce on 2 GPUs (2(n-1)/n = 1x "
        f"the algorithm bandwidth: one GPU's buffer over the time), float32 sums; gpumem's NCCL "
        f"(NCCL {_nccl_version() or 'missing'}, one process, a communicator per GPU) and "
        f"PyTorch's (its own NCCL, {_torch_nccl_version(torch) or 'unknown'}) both "
        f"{peer.INNER} calls back to back between CUDA events on GPU {a}'s legacy default "
        f"stream, median of {repeat} after {WARMUP} warm-ups, per call; PyTorch measured before "
        "and after gpumem's sweep, the faster is the reference. The teaching all-reduce: one "
        "kernel per GPU between the events (peer.teaching_all_reduce), median of "
        f"{repeat}.",
    ]
    table = gm.Table(rows, columns=["what", "unit", "gpumem", "anchor", "anchor value",
                                    "x anchor", "target", "met"],
                     sources={"gpumem": "measured", "anchor value": "measured",
                              "x anchor": "measured"}, title=f"{TITLE} ({st['gpu']})")
    payload = {"stamp": st, "quick": quick, "pair": [a, b], "sizes": list(sizes),
               "repeat": repeat, "warmup": WARMUP, "cupy": getattr(cp, "__version__", None),
               "rows": rows, "copy_engine_for_reads": ce, "loads": loads.rows,
               "latency": lat.rows, "collectives": coll.rows, "collective_sizes": list(csizes),
               "torch": getattr(torch, "__version__", None), "torch_anchor": no_torch or "ok",
               "nccl": {"gpumem": _nccl_version(), "torch": _torch_nccl_version(torch)},
               "raw": raw, "met": met}
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
