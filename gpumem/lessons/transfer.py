"""Host memory and transfers: pageable, pinned, mapped (zero-copy) and managed memory.

Data starts on the host.  A copy from ordinary (*pageable*) memory cannot be
handed to the copy engine as it is -- the OS may move or swap a page at any time
-- so the driver first copies it into a small page-locked buffer, piece by
piece, on one CPU thread.  *Pinned* (page-locked) memory is DMA'd directly and
runs at the link's speed; *write-combined* pinned memory is uncached for the
CPU (fast for the CPU to write and the GPU to read, slow for the CPU to read).
A destination that was never touched pays a page fault per page on top
(``kind="fresh"``).

* :func:`transfer_sweep` -- GB/s and latency per size for each kind, both
  directions, with the pinned copy as the reference line.
* :func:`zero_copy_compare` -- a kernel reading *mapped* pinned host memory over
  the bus against copying first and reading device memory: zero-copy wins when
  the data is read once, loses when it is read again.
* :func:`managed_compare` -- ``cudaMallocManaged`` memory written on the host and
  then read by a kernel, with and without ``cudaMemPrefetchAsync`` first.
* :func:`overlap_timeline` -- copy in, compute, copy out, serially and in chunks
  on two streams (copy/compute overlap), every operation's start and end from
  CUDA events; :func:`plot_timeline` draws it.

gpumem's own transfers use what the lesson teaches: :func:`gpumem.to_device` and
:meth:`DeviceArray.get` stage pageable arrays of 2 MiB and more through reused
pinned buffers on several threads, overlapping the host copy with the copy
engine (``kind="staged"`` in the sweep), and copy pinned arrays
(:func:`gpumem.pinned_empty`, :func:`pinned_like`) directly.

The kernels: :func:`read_sum` (reads every byte once, wherever it lives) and
:func:`scale` (compute whose time is set by ``work``).  Everything here measures;
without a GPU the experiments raise :class:`gpumem.CudaUnavailableError`.
"""
from __future__ import annotations

import contextlib
import re
import statistics
from typing import Any, Sequence, Union

import numpy as np

from .. import runtime

from .. import _core
from .._core import DeviceArray
from ..runtime.args import _checked, _flag, _given, _host, arg_row
from ..tools.sweep import _each, _need_gpu, _progress
from ..runtime.table import Table
from ..tools import card, headline as hl
from ..tools.lesson import Lesson, sanitize_f32 as _f32

__all__ = ["read_sum", "read_sum_reference", "scale", "scale_reference", "pinned_like",
           "transfer_sweep", "zero_copy_compare", "managed_compare", "overlap_timeline",
           "plot_timeline", "KINDS", "DIRECTIONS", "SIZES"]

Array = Union[np.ndarray, DeviceArray]

#: The copy kinds of :func:`transfer_sweep` and what each one is.
KINDS = {
    "pageable": "cudaMemcpy from/to malloc'd memory, touched before: the driver stages it "
                "through its own pinned buffer on one thread",
    "fresh": "device to host into memory mapped just before and never touched: a page fault "
             "per page on top (d2h only)",
    "pinned": "cudaMemcpy from/to cudaHostAlloc'd (page-locked) memory: DMA straight from/to "
              "it, the link's speed",
    "write_combined": "pinned and write-combined: uncached for the CPU, the same for the DMA",
    "staged": "gpumem's to_device / get on pageable memory: reused pinned buffers, several "
              "threads, host copy and DMA overlapped",
}
#: The directions of a copy (its C argument table's).
DIRECTIONS = arg_row("_transfer_copy", "direction")["choices"]        # h2d, d2h
#: The default sizes of :func:`transfer_sweep`: 4 KiB .. 1 GiB, by 4x.
SIZES = tuple(4096 * 4 ** k for k in range(10))


def read_sum(x: Array, *, block: int = 256):
    """The sum of ``x`` (float32, any shape), reading every byte once.

    Each thread adds its grid-stride share with 16-byte loads (where ``x`` is
    16-byte aligned), warps and blocks reduce with shuffles, and one float64
    atomic per block collects the total.  Partial sums are float32.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32
    block : int, 32..1024, a multiple of 32

    Returns
    -------
    numpy.ndarray of one float64 (a DeviceArray when ``x`` is one).
    """
    _given("read_sum", x=x)
    return _core.read_sum(x, block=block)


def read_sum_reference(x: Any) -> np.ndarray:
    """NumPy reference of :func:`read_sum`: ``[x.sum()]`` in float64."""
    return np.array([_host("read_sum_reference", "x", x, np.float32).astype(np.float64).sum()])


def scale(x: Array, *, work: int = 0, block: int = 256):
    """``y = x`` pushed ``work`` times through ``v = 0.999 v + 0.001`` (one FMA each).

    ``work`` sets the kernel's time without changing the bytes it moves: the
    compute that :func:`overlap_timeline` hides copies behind.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, any shape
    work : int, 0..1_000_000
        FMAs per element.
    block : int, 1..1024

    Returns
    -------
    numpy.ndarray (DeviceArray when ``x`` is one) of ``x``'s shape, float32.
    """
    _given("scale", x=x)
    return _core.scale(x, work=work, block=block)


def scale_reference(x: Any, work: int = 0) -> np.ndarray:
    """NumPy reference of :func:`scale`, in float64 (the kernel rounds each FMA to
    float32: compare with a tolerance of about ``work`` float32 ulps)."""
    v = _host("scale_reference", "x", x, np.float32).astype(np.float64)
    work = _checked("scale_reference", "scale", "work", work)
    # v_k = a^k v + b (1 - a^k) / (1 - a), closed form of the recurrence
    a, b = 0.999, 0.001
    ak = a ** work
    return (ak * v + b * (1 - ak) / (1 - a)).astype(np.float64)


def pinned_like(a: Any) -> np.ndarray:
    """An uninitialised array of ``a``'s shape and dtype in pinned host memory
    (:func:`gpumem.pinned_empty`); ``a`` is a NumPy array or anything with
    ``shape`` and ``dtype`` (a DeviceArray too)."""
    shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"pinned_like: a must have a shape and a dtype (a numpy.ndarray or "
                        f"DeviceArray), not {type(a).__name__}")
    try:
        return _core.pinned_empty(tuple(shape), dtype)
    except (TypeError, ValueError) as e:
        raise type(e)(str(e).replace("pinned_empty:", "pinned_like: a's", 1)) from None


# ---- the experiments ------------------------------------------------------------------------
def _measuring(fn: str) -> None:
    """Every experiment here measures: CudaUnavailableError (saying why) without a GPU."""
    if not runtime.is_available():
        _need_gpu()
        raise runtime.CudaUnavailableError(f"{fn}: no GPU to measure on")


def _sizes(fn: str, sizes: Any, family: str, mult: int = 1) -> list[int]:
    """Sizes in bytes, each a ``nbytes`` of ``family`` (its C table's range) and a
    multiple of ``mult``."""
    out = _each(fn, "sizes", sizes, family, "nbytes")
    if not out:
        raise ValueError(f"{fn}: sizes is empty; give at least one size in bytes")
    for s in out:
        if s % mult:
            raise ValueError(f"{fn}: sizes: {s} is not a multiple of {mult} bytes (float32)")
    return out


def _auto_repeat(nbytes: int) -> int:
    """Repeats for one size: many for small copies (microseconds), a few for large ones."""
    return max(3, min(50, (64 << 20) // max(nbytes, 1)))


def transfer_sweep(sizes: Sequence[int] = SIZES, *,
                   kinds: Sequence[str] = tuple(KINDS),
                   directions: Sequence[str] = DIRECTIONS, repeat: int | None = None,
                   progress: bool = True) -> Table:
    """Host<->device copies by kind, direction and size (see :data:`KINDS`).

    Each point is the median of ``repeat`` copies (default: 50 for the smallest
    sizes down to 3 from 64 MiB) after a warm-up, timed with CUDA events around
    the synchronous copy.  ``fresh`` is measured device-to-host only.

    Returns
    -------
    Table: kind, direction, bytes, ms, us (latency per copy), GB/s and ``x
    pinned`` (the GB/s over the best pinned GB/s of that direction in this sweep;
    None without a pinned row).
    """
    fn = "transfer_sweep"
    sizes = _sizes(fn, sizes, "_transfer_copy")
    kinds = _each(fn, "kinds", kinds, "_transfer_copy", "kind")
    directions = _each(fn, "directions", directions, "_transfer_copy", "direction")
    rep = None if repeat is None else _checked(fn, "_transfer_copy", "repeat", repeat)
    progress = _flag(fn, "progress", progress)
    _measuring(fn)
    cases = [(k, d, s) for d in directions for k in kinds for s in sizes
             if not (k == "fresh" and d == "h2d")]
    rows = []
    for kind, direction, nbytes in _progress(cases, len(cases), fn, progress):
        r = rep or _auto_repeat(nbytes)
        warm = 2 if nbytes < 1 << 24 else 1
        ms = statistics.median(_core._transfer_copy(kind, direction, nbytes, r, warm))
        rows.append({"kind": kind, "direction": direction, "bytes": nbytes, "ms": ms,
                     "us": ms * 1e3, "GB/s": nbytes / ms / 1e6, "repeat": r})
    best = {d: max((r["GB/s"] for r in rows if r["kind"] == "pinned" and r["direction"] == d),
                   default=None) for d in directions}
    for r in rows:
        b = best[r["direction"]]
        r["x pinned"] = r["GB/s"] / b if b else None
    cols = ["kind", "direction", "bytes", "ms", "us", "GB/s", "x pinned", "repeat"]
    return Table(rows, cols, sources={c: "measured" for c in ("ms", "us", "GB/s", "x pinned")},
                 title="host<->device copies by kind and size (CUDA events)")


def zero_copy_compare(sizes: Sequence[int] = (64 << 10, 1 << 20, 16 << 20, 256 << 20), *,
                      reads: Sequence[int] = (1, 8), repeat: int = 5,
                      progress: bool = True) -> Table:
    """A kernel (:func:`read_sum`) reading mapped pinned host memory directly
    against copying the data to the device first.

    For each size and each number of ``reads`` (kernel launches over the same
    data): ``mapped`` (every launch reads host memory over the bus), ``copy``
    (one ``cudaMemcpy`` from the pinned buffer, then the launches read device
    memory; both together timed) and ``device`` (the launches alone, data
    already resident).  Median of ``repeat`` after a warm-up; each path's sum is
    checked against the exact one.

    Returns
    -------
    Table: bytes, reads, mapped ms, copy ms, device ms, mapped GB/s (bytes x reads
    / time), winner ("mapped" or "copy").
    """
    fn = "zero_copy_compare"
    sizes = _sizes(fn, sizes, "_transfer_zero_copy", 4)
    reads = _each(fn, "reads", reads, "_transfer_zero_copy")
    repeat = _checked(fn, "_transfer_zero_copy", "repeat", repeat)
    progress = _flag(fn, "progress", progress)
    _measuring(fn)
    cases = [(s, r) for s in sizes for r in reads]
    rows = []
    for nbytes, nreads in _progress(cases, len(cases), fn, progress):
        d = _core._transfer_zero_copy(nbytes, nreads, repeat)
        want = _pattern_sum(nbytes // 4)
        if any(s != want for s in d["sums"]):
            raise runtime.CudaError(f"{fn}: the kernel's sums {d['sums']} differ from {want}")
        m, c, dv = (statistics.median(d[k]) for k in ("mapped", "copy", "device"))
        rows.append({"bytes": nbytes, "reads": nreads, "mapped ms": m, "copy ms": c,
                     "device ms": dv, "mapped GB/s": nbytes * nreads / m / 1e6,
                     "winner": "mapped" if m < c else "copy"})
    return Table(rows, sources={c: "measured" for c in ("mapped ms", "copy ms", "device ms",
                                                        "mapped GB/s")},
                 title="zero-copy (mapped pinned host memory) against copy, then read")


def _pattern_sum(n: int) -> float:
    """Sum of x[i] = i % 8 for i < n (the experiments' data), exact."""
    full, rest = divmod(n, 8)
    return float(full * 28 + rest * (rest - 1) // 2)


def managed_compare(sizes: Sequence[int] = (1 << 20, 16 << 20, 256 << 20), *, repeat: int = 3,
                    progress: bool = True) -> Table:
    """Managed memory (``cudaMallocManaged``) written on the host, then read once by
    :func:`read_sum`, with and without ``cudaMemPrefetchAsync`` to the device first.

    Without the prefetch every page faults on the GPU's first touch and migrates
    while the kernel waits; with it the pages move in bulk first.  Each repeat
    allocates and writes fresh managed memory.  Rows per size:

    * ``fault``: the kernel reading host-resident pages (migration on demand);
    * ``prefetch``: the bulk migration alone;
    * ``kernel after prefetch``: the kernel once the pages are on the device;
    * ``prefetch + kernel``: the two together (against ``fault``);
    * ``resident``: a second launch over the same pages (device memory speed).

    Returns
    -------
    Table: bytes, how, ms, GB/s (bytes / ms).
    """
    fn = "managed_compare"
    sizes = _sizes(fn, sizes, "_transfer_managed", 4)
    repeat = _checked(fn, "_transfer_managed", "repeat", repeat)
    progress = _flag(fn, "progress", progress)
    _measuring(fn)
    rows = []
    for nbytes in _progress(sizes, len(sizes), fn, progress):
        d = _core._transfer_managed(nbytes, repeat)
        want = _pattern_sum(nbytes // 4)
        if any(s != want for s in d["sums"]):
            raise runtime.CudaError(f"{fn}: the kernel's sums {d['sums']} differ from {want}")
        pre, after = statistics.median(d["prefetch"]), statistics.median(d["after_prefetch"])
        both = statistics.median([p + a for p, a in zip(d["prefetch"], d["after_prefetch"])])
        for how, ms in (("fault", statistics.median(d["fault"])), ("prefetch", pre),
                        ("kernel after prefetch", after), ("prefetch + kernel", both),
                        ("resident", statistics.median(d["resident"]))):
            rows.append({"bytes": nbytes, "how": how, "ms": ms, "GB/s": nbytes / ms / 1e6})
    return Table(rows, sources={"ms": "measured", "GB/s": "measured"},
                 title="managed memory written on the host, read by a kernel")


def _calibrate_work(nbytes: int) -> int:
    """FMAs per element that make :func:`scale` over ``nbytes`` take about as long as a
    pinned host-to-device copy of them (so overlap has something to hide)."""
    copy_ms = statistics.median(_core._transfer_copy("pinned", "h2d", nbytes, 3, 1))
    x = runtime.empty(max(nbytes // 4, 1), np.float32)
    probe = 256
    ms = runtime.bench(scale, x, work=probe, repeat=3, warmup=1).median_ms
    most = arg_row("scale", "work")["hi"]
    return int(min(most, max(1, round(probe * copy_ms / max(ms, 1e-6)))))


def overlap_timeline(nbytes: int = 64 << 20, *, chunks: int = 8, work: int | None = None) -> Table:
    """Copy in, compute, copy out: serially on one stream, then in ``chunks`` pieces
    alternating between two streams, each copy and kernel bracketed by events.

    Pinned buffers on both sides (pageable memory cannot overlap: its copies are
    synchronous).  ``work`` (FMAs per element of :func:`scale`; default: chosen so
    the kernel takes as long as the copy in) sets the compute.  The overlapped
    output is checked equal to the serial one.

    Returns
    -------
    Table: mode ("serial" or "overlapped"), stream, op ("h2d", "kernel", "d2h"),
    chunk, start_ms, end_ms (from the first event of that mode's run), ms;
    ``table.title`` holds each mode's total.
    """
    fn = "overlap_timeline"
    nbytes = _checked(fn, "_transfer_overlap", "nbytes", nbytes)
    if nbytes % 4:
        raise ValueError(f"{fn}: nbytes={nbytes} is not a multiple of 4 (float32)")
    chunks = _checked(fn, "_transfer_overlap", "chunks", chunks)
    if chunks > nbytes // 4:
        raise ValueError(f"{fn}: chunks={chunks} is not allowed; chunks must be at most the "
                         f"{nbytes // 4} floats of nbytes")
    if work is not None:
        work = _checked(fn, "_transfer_overlap", "work", work)
    _measuring(fn)
    if work is None:
        work = _calibrate_work(nbytes)
    d = _core._transfer_overlap(nbytes, chunks, work)
    if not d["equal"]:
        raise runtime.CudaError(f"{fn}: the overlapped output differs from the serial one")
    rows, total = [], {}
    for mode in ("serial", "overlapped"):
        for stream, op, chunk, t0, t1 in d[mode]:
            rows.append({"mode": mode, "stream": stream, "op": op, "chunk": chunk,
                         "start_ms": t0, "end_ms": t1, "ms": t1 - t0})
        total[mode] = max(t1 for *_, t1 in d[mode])
    title = (f"copy/compute overlap, {nbytes / 2**20:g} MiB, work={work}: serial "
             f"{total['serial']:.3f} ms, overlapped ({chunks} chunks, 2 streams) "
             f"{total['overlapped']:.3f} ms ({total['serial'] / total['overlapped']:.2f}x)")
    t = Table(rows, sources={c: "measured" for c in ("start_ms", "end_ms", "ms")}, title=title)
    t.totals = total  # type: ignore[attr-defined]
    t.work = work  # type: ignore[attr-defined]
    return t


def plot_timeline(table: Table, ax=None):
    """Draw :func:`overlap_timeline`'s table: one lane per (mode, stream), a bar per
    copy or kernel (h2d, kernel, d2h in three colours).  Returns the axes."""
    if not isinstance(table, Table) or not {"mode", "stream", "op", "start_ms",
                                             "end_ms"} <= set(table.columns):
        raise TypeError("plot_timeline: table must be the Table of overlap_timeline, not "
                        f"{type(table).__name__}")
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 2.8))
    colours = {"h2d": "tab:blue", "kernel": "tab:orange", "d2h": "tab:green"}
    lanes = sorted({(r["mode"], r["stream"]) for r in table},
                   key=lambda k: (k[0] != "serial", k[1]))
    for y, (mode, stream) in enumerate(lanes):
        for r in table:
            if (r["mode"], r["stream"]) == (mode, stream):
                ax.broken_barh([(r["start_ms"], r["end_ms"] - r["start_ms"])], (y - 0.35, 0.7),
                               color=colours.get(r["op"], "grey"), edgecolor="white")
    ax.set_yticks(range(len(lanes)), [f"{m} / stream {s}" for m, s in lanes])
    ax.set_xlabel("ms")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=op) for op, c in colours.items()], loc="upper right",
              fontsize="small")
    ax.invert_yaxis()
    return ax


# ---- gpumem report: the headline -------------------------------------------------------------
def _headline(measure: bool, quick: bool) -> list[dict]:
    nbytes = (16 if quick else 64) << 20
    kinds = ("pageable", "pinned")
    what = f"host -> device copy of {nbytes >> 20} MiB: pageable against pinned memory"
    take = "pinned (page-locked) memory lets the copy engine read the host directly"
    if not measure:
        return [hl._unmeasured("transfer", what, "GB/s of both (CUDA events around "
                               "cudaMemcpy)", model_text="not modelled: the link decides",
                               takeaway=take)]
    ms = {k: statistics.median(_core._transfer_copy(k, "h2d", nbytes, 3 if quick else 10, 1))
          for k in kinds}
    gbps = {k: nbytes / v / 1e6 for k, v in ms.items()}
    meas = {f"{k}_GB/s": g for k, g in gbps.items()}
    meas.update({f"{k}_ms": v for k, v in ms.items()})
    text = ", ".join(f"{k} {hl._gbps(g)}" for k, g in gbps.items())
    return [hl._row("transfer", what, measured=meas, measured_text=text,
                    model_text="not modelled: the link decides",
                    takeaway=f"{take}: {gbps['pinned'] / gbps['pageable']:.1f}x the pageable "
                             "copy here (notebook 07)")]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    if not measure:
        rows = [{"kind": k, "what": v} for k, v in KINDS.items()]
        return [Table(rows, title="host<->device copy kinds (no GPU: transfer_sweep would "
                                  "measure each by size and direction)")]
    sizes = SIZES[::3] if quick else SIZES
    return [transfer_sweep(sizes, progress=progress), overlap_timeline(
        (16 if quick else 64) << 20)]


def _host_link(entry, measure: bool) -> tuple[int, int, int | None, str]:
    """The host link's PCIe generation, lanes and maximum payload, and where they come
    from: NVML and sysfs on a GPU where they answer, else the published link
    (``"PCIe 5.0 x16"``); (0, 0, None, "") where neither says."""
    from ..runtime import nvml

    if measure:
        c = nvml.conditions()
        if c["pcie_generation"] and c["pcie_width"]:
            return (c["pcie_generation"], c["pcie_width"], c["pcie_max_payload"],
                    f"negotiated Gen{c['pcie_generation']} x{c['pcie_width']} (NVML; max "
                    f"Gen{c['pcie_max_generation']} x{c['pcie_max_width']})")
    text = (entry.get("host_link") if entry else None) or ""
    m = re.fullmatch(r"PCIe (\d)\.0 x(\d+)", text)
    return (int(m.group(1)), int(m.group(2)), None, f"{text} (published)") if m else \
        (0, 0, None, "")


def _card(measure: bool, quick: bool) -> list[dict]:
    """The host link on the memory card: pinned copies each way (GB/s of a large copy, the
    median of :data:`~gpumem.tools.card.CARD_RUNS`; the time of a 4-byte one as its latency)
    beside the published link and its ceiling (:func:`gpumem.model.ceiling.pcie`: the
    encoding and each packet's framing at the negotiated maximum payload, 256 bytes where it
    cannot be read), and the PCIe bytes each payload byte cost where NVML counts them."""
    from ..model import ceiling as mc
    from ..runtime import nvml

    entry, _ = card.card_reference(measure)
    nbytes = (16 if quick else 64) << 20
    link = (entry.get("host_link") if entry else None) or ""
    gen, lanes, mps, said = _host_link(entry, measure)
    rows = []
    # host -> device: the GPU's copy engine reads host memory, the data comes back in
    # completions; device -> host: it writes host memory (posted writes)
    for d, arrow, tlp in (("h2d", "host -> device", "completion"),
                          ("d2h", "device -> host", "write")):
        ceil = mc.pcie(gen, lanes, max_payload=mps or 256, tlp=tlp) \
            if gen in mc.PCIE_GT_S else None
        kw: dict[str, Any] = dict(card.published_figure(entry, "host_link_gbps"), ceiling=ceil)
        if measure:
            moved = nvml.LinkBytes([runtime.device().index], link="pcie") \
                if nvml.available() else None
            with moved or contextlib.nullcontext():
                ms = _core._transfer_copy("pinned", d, nbytes, card.CARD_RUNS, 1)
            tiny = statistics.median(_core._transfer_copy("pinned", d, 4, 5 * card.CARD_RUNS, 2))
            kw.update(gbps=nbytes / statistics.median(ms) / 1e6, ns=tiny * 1e6,
                      spread=card.gbps_spread(nbytes, ms))
            counted = moved.bytes.get(moved.devices[0]) if moved else None
            way = "rx" if d == "h2d" else "tx"
            # the copies plus the warm-up, each of nbytes
            per = counted[way] / (nbytes * (len(ms) + 1)) if counted and counted[way] else None
            if per is not None:
                model = mc.tlp_bytes_per_payload_byte(mps or 256, tlp)
                kw.update(why=f"{per:.3f} PCIe bytes per payload byte (NVML; the TLPs' "
                              f"framing and headers: {model:.3f}); {said}", why_value=per)
            else:
                kw.update(why=said + ("" if mps else "; max payload unread, 256 B assumed"))
        rows.append(card.card_row(arrow, "transfer", size_text_=link, how=(
            f"cudaMemcpy of {nbytes >> 20} MiB pinned (GB/s, the median of {card.CARD_RUNS}) and "
            "of 4 bytes (ns)"), **kw))
    return rows


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_read_sum():
    for n in (0, 1, 3, 1001, 4099):
        for block in (32, 256, 1024):
            read_sum(_f32(n), block=block)
    # the experiments point it at mapped pinned host memory and managed memory
    _core._transfer_zero_copy(4100, 2, 1)
    _core._transfer_managed(4100, 1)
    # and the copies behind to_device/get: staged (>= 2 MiB pageable) and pinned
    big = _f32(3 * 2**18 + 5)
    assert np.array_equal(runtime.to_device(big).get(), big)
    h = runtime.pinned_empty(1003, np.float32)
    h[:] = 1.5
    d = runtime.to_device(h)
    d.get(out=h)
    for kind in ("pageable", "pinned", "write_combined", "staged"):
        _core._transfer_copy(kind, "h2d", 3 * 2**20 + 4, 1, 0)
        _core._transfer_copy(kind, "d2h", 3 * 2**20 + 4, 1, 0)


def _sanitize_scale():
    for n, work in ((1, 0), (1001, 3), (70000, 1)):
        scale(_f32(n), work=work, block=128)
    _core._transfer_overlap(4 * 1001, 3, 2)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_read_sum()
    _sanitize_scale()


# ---- what the shared tests read: a fake GPU's measurements, cheap copies on a GPU --------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): pinned copies at 50 GB/s, the
    rest at 10 GB/s."""
    from types import SimpleNamespace

    return {"_core": SimpleNamespace(_transfer_copy=lambda kind, d, nbytes, r, w: [
        nbytes / (50e9 if kind == "pinned" else 10e9) * 1e3] * r)}


class _QuickTransfers:
    """The transfer entry points of ``_core`` at set times (the rest of ``_core`` as it is)."""

    def __getattr__(self, name):
        return getattr(_core, name)

    @staticmethod
    def _transfer_copy(kind, direction, nbytes, repeat, warmup):
        return [1.0] * repeat

    @staticmethod
    def _transfer_zero_copy(nbytes, reads, repeat):
        s = _pattern_sum(nbytes // 4)
        return {"mapped": [1.0] * repeat, "copy": [2.0] * repeat, "device": [0.5] * repeat,
                "sums": [s] * 3}

    @staticmethod
    def _transfer_managed(nbytes, repeat):
        s = _pattern_sum(nbytes // 4)
        return {k: [1.0] * repeat for k in ("fault", "prefetch", "after_prefetch", "resident")} \
            | {"sums": [s] * 3}

    @staticmethod
    def _transfer_overlap(nbytes, chunks, work):
        rows = [(0, op, 0, float(i), i + 1.0) for i, op in enumerate(("h2d", "kernel", "d2h"))]
        return {"serial": rows, "overlapped": rows, "equal": True, "output": b""}


def _cheap(function: str) -> dict:
    """On a GPU the sweeps' defaults copy up to 1 GiB per point: while the property tests
    draw their arguments, the copies are stood in for (the real ones run in
    tests/test_transfer.py; :attr:`Lesson.cheap`)."""
    if function not in LESSON.sweeps:
        return {}
    return {"_core": _QuickTransfers(), "_calibrate_work": lambda nbytes: 1}


LESSON = Lesson(
    name='transfer',
    idea='host and device: pageable, pinned, write-combined, mapped and managed memory, and copies overlapped with kernels',
    families=('read_sum', 'scale'),
    exports=('read_sum', 'scale', 'pinned_like'),
    sweeps=('transfer_sweep', 'zero_copy_compare', 'managed_compare', 'overlap_timeline'),
    notebooks=('07_transfer',),
    benchmark='transfer',
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    card=_card,
    model=(),
    stand_ins=_stand_ins,
    cheap=_cheap,
)
