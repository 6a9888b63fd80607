"""What allocation costs, and what the first write into fresh memory costs.

Every array on the GPU starts with an allocation, and every allocation ends
with a free.  Both are host calls into the driver, and ``cudaFree`` does more
than give memory back: it waits for the whole device first (an *implicit
synchronization*), so a free in the middle of a loop stalls the host behind
every kernel still running.  A stream-ordered pool (``cudaMallocFromPoolAsync``
/ ``cudaFreeAsync`` on a pool that keeps freed blocks) turns both into
bookkeeping; gpumem allocates every output from such a pool
(:func:`gpumem.allocator`).

* :func:`alloc_cost_sweep` -- host microseconds of an allocation and its free, by
  size, for each of :data:`KINDS`: ``cudaMalloc``, the pool reusing a block, the
  first (growing) allocation of a new pool, managed memory and pinned host memory.
* :func:`free_sync_timeline` -- a kernel that keeps the device busy for a known
  time, then ``cudaFree`` of an unrelated buffer (it returns when the kernel
  ends) against ``cudaFreeAsync`` (it returns at once); :func:`plot_free_sync`
  draws the host's timeline.
* :func:`first_touch_sweep` -- the :func:`first_touch` kernel writing memory that
  was ``cudaMalloc``'d just before the launch against a buffer written before, by
  size: GB/s of both.  :func:`first_touch_counters` reads the hardware counters
  that could tell them apart.

On a GPU a ``cudaMalloc``'d page is mapped when it is allocated: no page fault
waits for the first write, as it does on a CPU.  What can still differ is the
state around the memory -- TLBs that never saw the new pages, the driver's own
work on pages it hands out -- and the experiments measure whether that costs
anything on the GPU at hand.  Everything here measures; without a GPU the
experiments raise :class:`gpumem.CudaUnavailableError`.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..runtime.args import _checked, _flag, _index, _indices, arg_row
from ..runtime.counters import _check_names
from ..runtime.table import Table
from ..tools import card, headline as hl
from ..tools.lesson import Lesson
from ..tools.sweep import MAX_N, _each, _int, _need_gpu, _progress

__all__ = ["KINDS", "SIZES", "TOUCH_SIZES", "COUNTERS", "first_touch", "first_touch_reference",
           "alloc_cost_sweep", "free_sync_timeline", "plot_free_sync", "first_touch_sweep",
           "first_touch_counters"]

Array = Union[np.ndarray, DeviceArray]

#: The allocation kinds of :func:`alloc_cost_sweep` and what each one times.
KINDS = {
    "cudaMalloc": "cudaMalloc + cudaFree: the driver's allocator; cudaFree waits for the device",
    "pool": "cudaMallocFromPoolAsync + cudaFreeAsync on a pool that keeps freed blocks, "
            "reusing one (gpumem's own allocator does this)",
    "pool_first": "the same on a new pool each time: the first allocation grows the pool "
                  "(the device memory is mapped then)",
    "managed": "cudaMallocManaged + cudaFree: address space only, no page touched",
    "host": "cudaHostAlloc + cudaFreeHost: page-locked host memory (the OS pins every page)",
}
#: The default sizes of :func:`alloc_cost_sweep`: 4 KiB .. 4 GiB, by 4x.
SIZES = tuple(4096 * 4 ** k for k in range(11))
#: The default sizes of :func:`first_touch_sweep`: 1 MiB .. 1 GiB, by 4x.
TOUCH_SIZES = tuple((1 << 20) * 4 ** k for k in range(6))
#: The counters :func:`first_touch_counters` tries: device memory written and read, L2's
#: sectors (all, the writes that missed, the fills from device memory), the kernel's time.
#: CUDA 13's metric tables (libnvperf_host) name no TLB or page-walk counter: L2's are the
#: closest to the memory's state that the profiler can read.
COUNTERS = ("dram_write_bytes", "dram_read_bytes", "lts__t_sectors.sum",
            "lts__t_sectors_op_write_lookup_miss.sum", "lts__d_sectors_fill_device.sum",
            "gpu_time_ns")

_PAGE_FLOATS = 16384          # first_touch(touch="page"): one write per 64 KiB
_TOUCHES = arg_row("_first_touch", "touch")["choices"]       # write, page


# ---- the kernel ----------------------------------------------------------------------
def first_touch(n: int, *, touch: Literal["write", "page"] = "write", block: int = 256,
                out: DeviceArray | None = None):
    """Write ``n`` float32: ``out[i] = i mod 2**24``.

    Parameters
    ----------
    n : int
        Floats, 1 .. 2**32.
    touch : {"write", "page"}
        ``"write"``: every element, coalesced 16-byte stores (the kernel finds the
        first 16-byte boundary of ``out`` itself).  ``"page"``: only elements
        ``16384 k``, one 4-byte store per 64 KiB -- the cost of reaching each page,
        almost no bandwidth; the other elements of ``out`` are left as they were, those
        of a new result are NaN.
    block : int
        Threads per block, a multiple of 32 up to 1024.
    out : DeviceArray, optional
        Where to write (float32, shape ``(n,)``).  Without it the result is a new
        array, returned as a numpy.ndarray.

    Returns
    -------
    numpy.ndarray, or ``out`` (a DeviceArray) when given.
    """
    return _core.first_touch(_index("first_touch", "n", n), touch=touch,
                             **_indices("first_touch", block=block), out=out)


def first_touch_reference(n: int, touch: Literal["write", "page"] = "write") -> np.ndarray:
    """NumPy reference of :func:`first_touch`: ``i mod 2**24`` as float32 where the
    kernel writes, NaN where it does not (compare with an output poisoned with NaN)."""
    fn = "first_touch_reference"
    n = _int(fn, "n", n, 1, MAX_N)
    touch = _checked(fn, "first_touch", "touch", touch)
    i = np.arange(n, dtype=np.int64)
    if touch == "write":
        return (i & 0xFFFFFF).astype(np.float32)
    ref = np.full(n, np.nan, np.float32)
    ref[::_PAGE_FLOATS] = (i[::_PAGE_FLOATS] & 0xFFFFFF).astype(np.float32)
    return ref


# ---- the experiments ---------------------------------------------------------------------
def _measuring(fn: str) -> None:
    """Every experiment here measures: CudaUnavailableError naming ``fn`` (and why)."""
    if runtime.is_available():
        return
    try:
        _need_gpu()
    except runtime.CudaUnavailableError as e:
        raise runtime.CudaUnavailableError(f"{fn}: no GPU to measure on ({e})") from None
    raise runtime.CudaUnavailableError(f"{fn}: no GPU to measure on")


def _sizes(fn: str, sizes: Any, family: str, mult: int = 1) -> list[int]:
    """Sizes in bytes, each a ``nbytes`` of ``family`` (its C table's range) and a
    multiple of ``mult``."""
    out = _each(fn, "sizes", sizes, family, "nbytes")
    for s in out:
        if s % mult:
            raise ValueError(f"{fn}: sizes: {s} is not a multiple of {mult} bytes (float32)")
    return out


def _fit(fn: str, sizes: list[int], name: str = "sizes") -> None:
    """Every size (the argument `name`) must fit the device memory free now (never ask for
    more than that)."""
    free = int(runtime.memory_info()["free"])
    big = [s for s in sizes if s > free]
    if big:
        raise ValueError(f"{fn}: {name}: {big[0]} bytes is more than the {free} bytes of device "
                         "memory free now (gpumem.empty_cache() gives back what gpumem's pool "
                         "keeps)")


def _auto_repeat(nbytes: int) -> tuple[int, int]:
    """(repeat, warmup) for one size: many pairs for small sizes (microseconds), a few for
    large ones (milliseconds: pinning a GiB of host memory takes a good part of a second)."""
    if nbytes <= 4 << 20:
        return 50, 5
    if nbytes <= 64 << 20:
        return 10, 2
    return 3, 1


def _scaled(repeat: int, nbytes: int, full: int) -> int:
    """``repeat`` for sizes up to ``full`` bytes; above, in proportion to the size (at
    least 3, or ``repeat`` when that is fewer): a point's time stays bounded."""
    return repeat if nbytes <= full else max(min(3, repeat), repeat * full // nbytes)


def alloc_cost_sweep(sizes: Sequence[int] = SIZES, *,
                     kinds: Sequence[str] = tuple(KINDS), repeat: int | None = None,
                     host_max: int = 1 << 30, progress: bool = True) -> Table:
    """Host microseconds of one allocation and its free, by kind (:data:`KINDS`) and size.

    Each point is the median of ``repeat`` allocate-and-free pairs (default: 50 for
    sizes up to 4 MiB, 10 up to 64 MiB, 3 above; a ``repeat`` given is taken for sizes
    up to 4 MiB and scaled down in proportion above, to at least 3) after a warm-up,
    each call timed
    on the host's monotonic clock.  Nothing else runs on the device meanwhile, so
    ``cudaFree``'s wait for the device costs nothing here (:func:`free_sync_timeline`
    shows it).  Device and managed sizes must fit the device memory free now (a
    ValueError before anything is allocated); pinned host sizes above ``host_max``
    are left out (``sizes`` above it is no error for the other kinds).

    Returns
    -------
    Table: kind, bytes, us (allocation + free, median of the pairs), alloc_us, free_us
    (medians of each), repeat.
    """
    fn = "alloc_cost_sweep"
    sizes = _sizes(fn, sizes, "_alloc_cost")
    kinds = _each(fn, "kinds", kinds, "_alloc_cost", "kind")
    rep = None if repeat is None else _checked(fn, "_alloc_cost", "repeat", repeat)
    host_max = _checked(fn, "_alloc_cost", "host_max", host_max)
    progress = _flag(fn, "progress", progress)
    cases = [(k, s) for k in kinds for s in sizes if not (k == "host" and s > host_max)]
    if not cases:
        raise ValueError(f"{fn}: every size is above host_max={host_max} and kinds is only "
                         "'host': nothing to measure")
    _measuring(fn)
    _fit(fn, sorted({s for k, s in cases if k != "host"}))
    rows = []
    for kind, nbytes in _progress(cases, len(cases), fn, progress):
        r, warm = _auto_repeat(nbytes)
        r = r if rep is None else _scaled(rep, nbytes, 4 << 20)
        d = _core._alloc_cost(kind, nbytes, r, warm, host_max=host_max)
        pair = [a + f for a, f in zip(d["alloc"], d["free"])]
        rows.append({"kind": kind, "bytes": nbytes, "us": statistics.median(pair),
                     "alloc_us": statistics.median(d["alloc"]),
                     "free_us": statistics.median(d["free"]), "repeat": r})
    left = [s for s in sizes if s > host_max] if "host" in kinds else []
    title = "allocation + free, host microseconds per pair (median)"
    if left:
        title += f"; host sizes above host_max={host_max} not pinned"
    return Table(rows, ["kind", "bytes", "us", "alloc_us", "free_us", "repeat"],
                 sources={c: "measured" for c in ("us", "alloc_us", "free_us")}, title=title)


def free_sync_timeline(spin_us: int = 2000, *, nbytes: int = 1 << 20) -> Table:
    """``cudaFree``'s implicit synchronization, on the host's clock.

    A kernel that keeps the device busy for ``spin_us`` microseconds (one thread
    waiting on the GPU's timer) is launched, then a buffer of ``nbytes`` that the
    kernel never touches is freed: with ``cudaFree`` (the buffer from
    ``cudaMalloc``), which returns only when the device is idle -- about the
    kernel's remaining time -- and with ``cudaFreeAsync`` (the buffer from a
    stream-ordered pool), which returns at once.  Then the host waits for the
    device (``cudaStreamSynchronize``).

    Returns
    -------
    Table: mode ("cudaFree" or "cudaFreeAsync"), op ("launch", "free", "sync"),
    start_us, end_us (from just before the launch), us.  ``table.kernel_us`` holds
    each mode's kernel time (CUDA events); :func:`plot_free_sync` draws it.
    """
    fn = "free_sync_timeline"
    spin_us = _checked(fn, "_free_sync", "spin_us", spin_us)
    nbytes = _checked(fn, "_free_sync", "nbytes", nbytes)
    _measuring(fn)
    _fit(fn, [nbytes], "nbytes")
    d = _core._free_sync(spin_us, nbytes)
    rows, kernel = [], {}
    for mode in ("cudaFree", "cudaFreeAsync"):
        for op in ("launch", "free", "sync"):
            t0, t1 = d[mode][op]
            rows.append({"mode": mode, "op": op, "start_us": t0, "end_us": t1, "us": t1 - t0})
        kernel[mode] = d[mode]["kernel_us"]
    waited = {m: next(r["us"] for r in rows if r["mode"] == m and r["op"] == "free")
              for m in kernel}
    title = (f"cudaFree behind a {spin_us} us kernel: it returned after {waited['cudaFree']:.0f} "
             f"us; cudaFreeAsync after {waited['cudaFreeAsync']:.1f} us")
    t = Table(rows, sources={c: "measured" for c in ("start_us", "end_us", "us")}, title=title)
    t.kernel_us = kernel  # type: ignore[attr-defined]
    return t


def plot_free_sync(table: Table, ax=None):
    """Draw :func:`free_sync_timeline`'s table: one lane per mode, a bar per host call
    (launch, free, sync) and the kernel's span underneath.  Returns the axes."""
    if not isinstance(table, Table) or not {"mode", "op", "start_us", "end_us"} <= set(
            table.columns):
        raise TypeError("plot_free_sync: table must be the Table of free_sync_timeline, not "
                        f"{type(table).__name__}")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 2.6))
    colours = {"launch": "tab:blue", "free": "tab:red", "sync": "tab:green"}
    modes = list(dict.fromkeys(r["mode"] for r in table))
    kernel = getattr(table, "kernel_us", {}) or {}
    for y, mode in enumerate(modes):
        for r in table:
            if r["mode"] == mode:
                ax.broken_barh([(r["start_us"], max(r["end_us"] - r["start_us"], 0.5))],
                               (y - 0.3, 0.4), color=colours.get(r["op"], "grey"))
        if mode in kernel:
            ax.broken_barh([(0.0, kernel[mode])], (y + 0.15, 0.15), color="tab:orange")
    ax.set_yticks(range(len(modes)), modes)
    ax.set_xlabel("host time from the launch, us")
    handles = [Patch(color=c, label=f"host: {op}") for op, c in colours.items()]
    handles.append(Patch(color="tab:orange", label="device: the kernel (events)"))
    ax.legend(handles=handles, loc="upper right", fontsize="small")
    ax.invert_yaxis()
    return ax


def _touch_ms(touch: str, nbytes: int, fresh: bool, repeat: int) -> list:
    """The LaunchRecords of ``repeat`` timed first_touch launches (one warm-up first)."""
    with runtime.record() as recs:
        _core._first_touch(touch, nbytes, fresh, repeat, 1)
    if len(recs) != repeat:
        raise runtime.CudaError(f"first_touch: {repeat} launches made {len(recs)} records")
    return recs


def first_touch_sweep(sizes: Sequence[int] = TOUCH_SIZES, *,
                      touches: Sequence[str] = _TOUCHES, repeat: int = 5,
                      progress: bool = True) -> Table:
    """:func:`first_touch` into fresh memory against a reused buffer, by size.

    *fresh*: a new ``cudaMalloc`` before every timed launch and its ``cudaFree``
    after it (plain ``cudaMalloc``, not gpumem's pool, which would hand back the
    same, already written block; whether the driver hands out the same physical
    pages again is its business).  *reused*: one ``cudaMalloc``'d buffer, written
    once before the timed launches.  The kernel alone is timed (CUDA events,
    LaunchRecords), median of ``repeat`` after one warm-up launch of each kind
    (``repeat`` above 16 MiB scaled down in proportion to the size, to at least 3).

    Returns
    -------
    Table: touch, bytes, pages (64 KiB), fresh_ms, reused_ms, fresh GB/s, reused
    GB/s (the bytes the variant declares over the time), fresh ns/page, reused
    ns/page, and fresh / reused (the time ratio).
    """
    fn = "first_touch_sweep"
    sizes = _sizes(fn, sizes, "_first_touch", 4)
    touches = _each(fn, "touches", touches, "_first_touch", "touch")
    repeat = _checked(fn, "_first_touch", "repeat", repeat)
    progress = _flag(fn, "progress", progress)
    _measuring(fn)
    _fit(fn, sizes)
    cases = [(t, s) for t in touches for s in sizes]
    rows = []
    for touch, nbytes in _progress(cases, len(cases), fn, progress):
        row: dict[str, Any] = {"touch": touch, "bytes": nbytes,
                               "pages": math.ceil(nbytes / (4 * _PAGE_FLOATS))}
        for key, fresh in (("fresh", True), ("reused", False)):
            recs = _touch_ms(touch, nbytes, fresh, _scaled(repeat, nbytes, 16 << 20))
            ms = statistics.median(r.ms for r in recs)
            row[f"{key}_ms"] = ms
            row[f"{key} GB/s"] = recs[0].bytes / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")
            row[f"{key} ns/page"] = ms * 1e6 / row["pages"]
        row["fresh / reused"] = row["fresh_ms"] / row["reused_ms"] if row["reused_ms"] else None
        rows.append(row)
    cols = ["touch", "bytes", "pages", "fresh_ms", "reused_ms", "fresh GB/s", "reused GB/s",
            "fresh ns/page", "reused ns/page", "fresh / reused"]
    return Table(rows, cols, sources={c: "measured" for c in cols[3:]},
                 title="first_touch into memory cudaMalloc'd just before the launch (fresh) "
                       "against a buffer written before (reused)")


def first_touch_counters(nbytes: int = 64 << 20, *, touch: Literal["write", "page"] = "write",
                         metrics: Sequence[str] = COUNTERS) -> Table:
    """Hardware counters of one :func:`first_touch` launch into fresh memory and one into a
    reused buffer (as :func:`first_touch_sweep` makes them), metric by metric.

    Each metric is read in a :func:`gpumem.profile` block of its own, so that it needs
    one pass: the launch into fresh memory is then counted on its first run.  (A metric
    that needs several passes replays the launch on the spot, and later passes see
    memory already written: ``passes`` says how many were needed.)  A metric the
    profiler cannot read here is kept with its reason in ``note``, so the table shows
    everything that was tried.  No TLB or page-walk counter is among them: CUDA 13's
    metric tables name none; what L2 and device memory did is what can be read.

    Returns
    -------
    Table: metric, fresh, reused, fresh / reused, passes, note.
    """
    fn = "first_touch_counters"
    nbytes = _checked(fn, "_first_touch", "nbytes", nbytes)
    if nbytes % 4:
        raise ValueError(f"{fn}: nbytes={nbytes} is not a multiple of 4 (float32)")
    touch = _checked(fn, "_first_touch", "touch", touch)
    names = _check_names(metrics, fn, "metrics")
    _measuring(fn)
    _fit(fn, [nbytes], "nbytes")
    _core._first_touch(touch, 4096, False, 1, 1)     # the kernel loaded before any profiling
    rows = []
    readable = runtime.profiler_available()
    for m in names:
        row: dict[str, Any] = {"metric": m, "fresh": None, "reused": None,
                               "fresh / reused": None, "passes": None, "note": ""}
        if not readable:
            row["note"] = "counters cannot be read here"
            rows.append(row)
            continue
        try:
            with runtime.profile([m]) as p:
                _core._first_touch(touch, nbytes, True, 1, 0)
                _core._first_touch(touch, nbytes, False, 1, 0)
            recs = p.records
            got = [(r.metrics or {}).get(m) for r in recs]
            row["passes"] = p.passes
            if len(got) == 2:
                row["fresh"], row["reused"] = got
            if row["fresh"] is not None and row["reused"]:
                row["fresh / reused"] = row["fresh"] / row["reused"]
            if p.passes and p.passes > 1:
                row["note"] = "several passes: later passes see written memory"
        except (runtime.ProfilerError, ValueError) as e:
            row["note"] = f"not read: {str(e).splitlines()[0][:120]}"
        rows.append(row)
    return Table(rows, ["metric", "fresh", "reused", "fresh / reused", "passes", "note"],
                 sources={"fresh": "measured", "reused": "measured", "fresh / reused": "measured"},
                 title=f"first_touch ({touch}) of {nbytes} bytes: counters, fresh against reused")


# ---- gpumem report: the headline and the full sweeps ------------------------------------
_MODEL_TEXT = "not modelled: driver and OS costs"


def _headline(measure: bool, quick: bool) -> list[dict]:
    small = 1 << 20
    what = "allocate + free 1 MiB: cudaMalloc/cudaFree against a stream-ordered pool's reuse"
    take = "a pool that keeps freed blocks turns allocation into bookkeeping (gpumem uses one)"
    big = (64 if quick else 256) << 20
    twhat = f"first_touch write of {big >> 20} MiB: memory cudaMalloc'd just before vs reused"
    ttake = "a cudaMalloc'd page is mapped at allocation: the GPU has no page fault on first touch"
    tmod = {"bytes_written": float(big), "pages_64KiB": float(big // 65536),
            "fresh_over_reused": 1.0}
    tmtext = ("mapped at allocation, no fault: the same bytes either way, fresh / reused = 1.0 "
              "(driver costs not modelled)")
    if not measure:
        return [hl._unmeasured("allocation", what, "host us per pair of both (monotonic clock, "
                               "median)", model_text=_MODEL_TEXT, takeaway=take),
                hl._unmeasured("allocation", twhat, "GB/s of both (CUDA events)", model=tmod,
                               model_text=tmtext, takeaway=ttake)]
    rep = 20 if quick else 100
    us = {}
    for kind in ("cudaMalloc", "pool"):
        d = _core._alloc_cost(kind, small, rep, 5)
        us[kind] = statistics.median(a + f for a, f in zip(d["alloc"], d["free"]))
    meas = {f"{k}_us": v for k, v in us.items()}
    meas["cudaMalloc_over_pool"] = us["cudaMalloc"] / us["pool"]
    gbps = {}
    for key, fresh in (("fresh", True), ("reused", False)):
        recs = _touch_ms("write", big, fresh, 3 if quick else 10)
        ms = statistics.median(r.ms for r in recs)
        gbps[key] = big / (ms * 1e-3) / 1e9
    tmeas = {f"{k}_GB/s": v for k, v in gbps.items()}
    tmeas["fresh_over_reused"] = gbps["fresh"] / gbps["reused"]
    return [hl._row("allocation", what, measured=meas, model_text=_MODEL_TEXT,
                    measured_text=f"cudaMalloc {us['cudaMalloc']:.1f} us, pool {us['pool']:.1f} us"
                                  f" ({meas['cudaMalloc_over_pool']:.0f}x)", takeaway=take),
            hl._row("allocation", twhat, measured=tmeas, model=tmod, model_text=tmtext,
                    measured_text=f"fresh {hl._gbps(gbps['fresh'])}, reused "
                                  f"{hl._gbps(gbps['reused'])}", takeaway=ttake)]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    if not measure:
        rows = [{"kind": k, "what": v} for k, v in KINDS.items()]
        return [Table(rows, title="allocation kinds (no GPU: alloc_cost_sweep would measure "
                                  "each by size; free_sync_timeline and first_touch_sweep need "
                                  "a GPU too)")]
    sizes = SIZES[::2] if quick else SIZES
    touch = TOUCH_SIZES[:4] if quick else TOUCH_SIZES
    return [alloc_cost_sweep(sizes, progress=progress), free_sync_timeline(),
            first_touch_sweep(touch, repeat=3 if quick else 5, progress=progress)]


def _card(measure: bool, quick: bool) -> list[dict]:
    """The pool on the memory card: the time of allocating and freeing 1 MiB from it
    (a reused block) against cudaMalloc's, and the bytes it has reserved."""
    rows = []
    for kind, level in (("pool", "pool, 1 MiB"), ("cudaMalloc", "cudaMalloc, 1 MiB")):
        kw: dict = {}
        if measure:
            d = _core._alloc_cost(kind, 1 << 20, 20 if quick else 100, 5)
            kw["ns"] = 1e3 * statistics.median(a + f for a, f in zip(d["alloc"], d["free"]))
        size = runtime.memory_info()["pool_reserved"] if measure and kind == "pool" else None
        rows.append(card.card_row(level, "allocation", size=size, size_text_=(
            f"{card.size_text(size)} reserved" if size else ""), how=(
            f"allocate + free 1 MiB ({kind}), host time per pair (median)"), **kw))
    return rows


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py), and
    the experiments' kernels and allocations on small sizes."""
    for v in runtime.variants("first_touch"):
        for n in (1, 3, 5, 1001, 16385, 40003):
            for block in (32, 96, 1024):
                # the page variant writes a few elements: a new result's others are NaN
                # (initcheck: nothing unwritten is copied back), out='s left as they were
                first_touch(n, touch=v.name, block=block)
                if v.name == "page":
                    first_touch(n, touch=v.name, block=block,
                                out=runtime.to_device(np.zeros(n, np.float32)))
        base = runtime.empty((16400,))
        ptr = base.__cuda_array_interface__["data"][0]
        for shift in (1, 2, 3):           # out not on a 16-byte boundary
            view = _View(ptr + 4 * shift, 16399 - shift, base)
            first_touch(16399 - shift, touch=v.name, out=runtime.from_dlpack(view))
        _core._first_touch(v.name, 4 * 16387, True, 1, 1)
        _core._first_touch(v.name, 4 * 16387, False, 1, 1)
    _core._free_sync(50, 4100)
    for kind in KINDS:
        _core._alloc_cost(kind, 4100, 1, 1)


class _View:
    """A float32 view into a DeviceArray at an offset (its __cuda_array_interface__)."""

    def __init__(self, ptr: int, n: int, keep: Any):
        self._keep = keep
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,),
                                         "typestr": "<f4", "version": 3, "strides": None}


# ---- what the shared tests read: a fake GPU's measurements -------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): the pool allocates and frees in
    0.5 us, the rest in 20 and 30 us; a first write at 2.5 GB/s."""
    from types import SimpleNamespace

    return {"_core": SimpleNamespace(
                _alloc_cost=lambda kind, nbytes, r, w: {
                    "alloc": [{"pool": 0.5}.get(kind, 20.0)] * r,
                    "free": [{"pool": 0.5}.get(kind, 30.0)] * r}),
            "_touch_ms": lambda touch, nbytes, fresh, repeat: [
                SimpleNamespace(ms=nbytes / 2.5e9, bytes=float(nbytes))] * repeat}


LESSON = Lesson(
    name="allocation",
    idea="what allocating costs (cudaMalloc, a stream-ordered pool, managed, pinned), "
         "cudaFree's implicit synchronization, and the first write into fresh memory",
    families=("first_touch",),
    exports=("first_touch",),
    sweeps=("alloc_cost_sweep", "free_sync_timeline", "first_touch_sweep",
            "first_touch_counters"),
    notebooks=("10_allocation",),
    benchmark="allocation",
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    card=_card,
    model=(),
    stand_ins=_stand_ins,
)
