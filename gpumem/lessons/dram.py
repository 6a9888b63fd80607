"""DRAM: how many bytes in flight fill it (Little's law), which granularity it
moves, and whether addresses a power of two apart pile onto few channels.

The textbook's DRAM section: a request to DRAM waits out the cell array's
latency, so one bank cannot keep its channel busy; "if the ratio of the array
access latency to the transfer time is R, at least R + 1 banks are needed".
On a GPU the same rule reads: bandwidth x latency bytes must be on their way
at every moment (Little's law), and the programmer controls them -- resident
warps x 32 lanes x load width x independent loads per thread.

* :func:`dram_stream` streams an array with a chosen grid, load width and
  unroll: :func:`little_sweep` varies the three ways and sets the GB/s beside
  :func:`gpumem.model.dram.little_bandwidth`.
* :func:`dram_burst` reads isolated pieces of 4 .. 128 bytes at random
  aligned places: :func:`burst_sweep` counts the sectors (model: exact) and
  the DRAM bytes per useful byte.
* :func:`dram_channels` lets warps stream chunks a power of two apart or at
  random places: :func:`channel_sweep`.

Every kernel writes one float per block, the sum of what the block loaded
(so no load can be dropped); :func:`stream_reference`, :func:`burst_reference`
and :func:`channels_reference` compute the same sums with NumPy.  Bad
arguments raise ``TypeError`` or ``ValueError`` naming the argument before
anything touches the GPU.
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..model import dram as dm
from ..runtime.args import _checked, _given, _host, _index, _indices, _validate, arg_row
from ..runtime.counters import _check_names
from ..runtime.measure import device_copy
from ..runtime.table import Table
from ..tools import headline as hl
from ..tools.introspect import kernel_occupancy
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools.sweep import _each, _int, _ints, _repeat, _flag, _choices

__all__ = ["dram_stream", "dram_burst", "dram_channels", "WIDTHS", "PIECES", "stream_reference",
           "burst_slots", "burst_reference", "channel_starts", "channels_reference",
           "little_sweep", "little_summary", "burst_sweep", "channel_sweep", "LITTLE_WAYS",
           "BURST_METRICS", "CHANNEL_METRICS", "MAX_BUFFER"]

Array = Union[np.ndarray, DeviceArray]

#: dram_stream's load widths: variant -> bytes per lane per load.
WIDTHS = {"float": 4, "float2": 8, "float4": 16}
#: dram_burst's piece sizes, bytes (its C argument table's).
PIECES = arg_row("dram_burst", "piece")["allowed"]
#: The largest buffer the sweeps allocate: 1 GiB (2^28 floats).
MAX_BUFFER = 1 << 30



# ---- the kernels ---------------------------------------------------------------------
def dram_stream(a: Array, *, width: str = "float4", unroll: int = 1, grid: int = 132,
                block: int = 256, out: DeviceArray | None = None):
    """Stream every float of ``a`` and return one sum per block.

    Tile ``t`` (``block * unroll`` vectors of ``width``) belongs to block
    ``t % grid``; thread ``i`` loads vectors ``t*block*unroll + j*block + i``
    for j = 0..unroll-1, all before it adds any: each warp has ``32 * width *
    unroll`` bytes on their way.  With ``grid`` = SMs x blocks per SM (all
    resident), an SM holds ``blocks per SM * block / 32`` warps.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, any shape (read as flat n floats)
    width : {"float4", "float2", "float"}
        Bytes per load per lane: 16, 8 or 4 (the ``n % (width/4)`` tail floats
        are read one per thread by block 0).
    unroll : {1, 2, 4, 8, 16}
        Independent loads per thread per round.
    grid : int
        Blocks, 1..2^20 (default 132: one per H100 SM).
    block : int
        Threads per block, a multiple of 32 from 32 to 1024.
    out : DeviceArray, optional
        float32, ``grid`` elements.

    Returns
    -------
    ``grid`` float32 sums (ndarray for an ndarray input, else DeviceArray).
    """
    _given("dram_stream", a=a)
    return _core.dram_stream(a, width=width, **_indices("dram_stream", unroll=unroll, grid=grid,
                                                        block=block), out=out)


def dram_burst(a: Array, pieces: int, *, piece: int = 32, seed: int = 0, block: int = 256,
               out: DeviceArray | None = None):
    """Read ``pieces`` isolated pieces of ``piece`` bytes at random aligned places.

    Piece ``q`` starts at float ``slot(q) * piece / 4`` with ``slot`` from
    :func:`burst_slots` (a seeded 64-bit hash modulo ``4 * n // piece``).  A
    piece of up to 16 bytes is one thread's load; a larger one is read by
    ``piece / 16`` consecutive lanes, 16 bytes each; loads go through
    ``ld.global.cg`` (L2 only).  Each piece is its own trip to DRAM, so the
    DRAM's access granularity shows in the bytes it moves per useful byte.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, 1-D (at least one piece)
    pieces : int
        1..2^31 - 1.
    piece : {4, 8, 16, 32, 64, 128}
        Bytes per piece.
    seed : int
        0..2^31 - 1: which random places.
    block : int
        A multiple of 32 from 32 to 1024.
    out : DeviceArray, optional
        float32, one element per block (``ceil(pieces * lanes / block)``).

    Returns
    -------
    One float32 sum per block: the floats of the pieces its threads read.
    """
    _given("dram_burst", a=a)
    return _core.dram_burst(a, _index("dram_burst", "pieces", pieces),
                            **_indices("dram_burst", piece=piece, seed=seed, block=block), out=out)


def dram_channels(a: Array, streams: int, *, placement: str = "strided", stride: int = 0,
                  chunk: int = 65536, seed: int = 0, block: int = 256,
                  out: DeviceArray | None = None):
    """``streams`` warps each stream ``chunk`` contiguous bytes of ``a``.

    ``placement="strided"``: warp ``w`` starts at byte ``w * stride`` (a power
    of two >= 32; 0: the chunk, warps back to back).  At every step all
    warps sit at the same offset modulo the stride: if the memory controller
    picked the channel from low address bits alone, a large power-of-two
    stride would send every warp to one channel.  A stride below the chunk
    interleaves the chunks instead of overlapping them: warp ``w`` reads
    ``stride``-byte pieces at ``w * stride + q * streams * stride`` (q = 0 ..
    chunk / stride - 1), so neighbouring warps still start a stride apart,
    all the streams together read ``streams * chunk`` bytes once each.  ``placement="random"``: warp
    ``w`` starts at a random chunk-aligned place (:func:`channel_starts`: a
    seeded permutation of the power-of-two number of chunk slots), the
    control.  Each warp reads 2 KiB per step (four 16-byte loads per lane).

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, 1-D
    streams : int
        Warps, 1..2^24, each its own stream (the chunks must fit in ``a``).
    placement : {"strided", "random"}
    stride : int
        Bytes between the starts (strided only; 0 for random): 0 or a power of
        two >= 32; below ``chunk``, the chunks interleave in pieces of this size.
    chunk : int
        Bytes per stream, a power of two from 2048 to 2^30.
    seed : int
        The random placement's permutation, 0..2^31 - 1.
    block : int
        A multiple of 32 from 32 to 1024.
    out : DeviceArray, optional
        float32, one element per block (``ceil(32 * streams / block)``).

    Returns
    -------
    One float32 sum per block: the floats of its warps' chunks.
    """
    _given("dram_channels", a=a)
    return _core.dram_channels(a, _index("dram_channels", "streams", streams),
                               placement=placement,
                               **_indices("dram_channels", stride=stride, chunk=chunk, seed=seed,
                                          block=block), out=out)


# ---- NumPy references: the same sums, the same address patterns ----------------------------
def _check_as(fn: str, kernel, args: tuple, kw: dict) -> None:
    """The kernel's own checks of these arguments (no device touched), its TypeError or
    ValueError re-raised naming ``fn``."""
    try:
        _validate(kernel, args, kw)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{fn}: {e}") from None


def _flat(fn: str, a, ndim: int | None = None) -> np.ndarray:
    if isinstance(a, DeviceArray):
        a = a.get()
    return _host(fn, "a", a, np.float32, ndim).reshape(-1)


def burst_slots(pieces: int, piece: int, n: int, seed: int = 0) -> np.ndarray:
    """The slot of each piece of :func:`dram_burst` (piece ``q`` starts at float
    ``slot[q] * piece // 4``), as the kernel computes them."""
    fn = "burst_slots"
    pieces = _checked(fn, "dram_burst", "pieces", pieces)
    piece = _checked(fn, "dram_burst", "piece", piece)
    n = _int(fn, "n", n, piece // 4, 2**62)
    seed = _checked(fn, "dram_burst", "seed", seed)
    slots = 4 * n // piece
    return (dm.mix64(np.arange(pieces, dtype=np.uint64), seed) % np.uint64(slots)).astype(np.int64)


def _by_block(sums: np.ndarray, blocks: np.ndarray, grid: int) -> np.ndarray:
    return np.bincount(blocks, weights=sums, minlength=grid)


def stream_reference(a, *, width: str = "float4", unroll: int = 1, grid: int = 132,
                     block: int = 256) -> np.ndarray:
    """:func:`dram_stream`'s sums in float64: which block reads which float."""
    fn = "stream_reference"
    _check_as(fn, _core.dram_stream, (np.zeros(1, np.float32),),
              dict(width=width, unroll=unroll, grid=grid, block=block))
    a = _flat(fn, a)
    if a.size == 0:
        raise ValueError(f"{fn}: a has no elements; dram_stream needs at least one float")
    k = WIDTHS[width] // 4
    nv = a.size // k
    vec_block = (np.arange(nv, dtype=np.int64) // (block * unroll)) % grid
    owner = np.zeros(a.size, np.int64)
    owner[:nv * k] = np.repeat(vec_block, k)          # the tail floats: block 0
    return _by_block(a.astype(np.float64), owner, grid)


def burst_reference(a, pieces: int, *, piece: int = 32, seed: int = 0,
                    block: int = 256) -> np.ndarray:
    """:func:`dram_burst`'s sums in float64."""
    fn = "burst_reference"
    a = _flat(fn, a, 1)
    _check_as(fn, _core.dram_burst, (np.broadcast_to(np.float32(0), (a.size,)), pieces),
              dict(piece=piece, seed=seed, block=block))
    lanes = dm.burst_lanes(piece)
    grid = -(-pieces * lanes // block)
    first = burst_slots(pieces, piece, a.size, seed) * (piece // 4)
    idx = first[:, None] + np.arange(piece // 4)
    sums = a[idx].astype(np.float64).sum(axis=1)
    return _by_block(sums, np.arange(pieces, dtype=np.int64) * lanes // block, grid)


def channel_starts(streams: int, *, placement: str = "strided", stride: int = 0,
                   chunk: int = 65536, nbytes: int, seed: int = 0) -> np.ndarray:
    """The byte where each warp of :func:`dram_channels` starts (``nbytes``: the
    bytes of its ``a``)."""
    fn = "channel_starts"
    nbytes = _int(fn, "nbytes", nbytes, 4, 2**62)
    _check_as(fn, _core.dram_channels, (np.broadcast_to(np.float32(0), (nbytes // 4,)), streams),
              dict(placement=placement, stride=stride, chunk=chunk, seed=seed))
    w = np.arange(streams, dtype=np.int64)
    if placement == "strided":
        return w * (stride or chunk)
    bits = (nbytes // chunk).bit_length() - 1
    return dm.slot_permutation(w, bits, seed) * chunk


def channels_reference(a, streams: int, *, placement: str = "strided", stride: int = 0,
                       chunk: int = 65536, seed: int = 0, block: int = 256) -> np.ndarray:
    """:func:`dram_channels`' sums in float64."""
    fn = "channels_reference"
    a = _flat(fn, a, 1)
    _check_as(fn, _core.dram_channels, (np.broadcast_to(np.float32(0), (a.size,)), streams),
              dict(placement=placement, stride=stride, chunk=chunk, seed=seed, block=block))
    starts = channel_starts(streams, placement=placement, stride=stride, chunk=chunk,
                            nbytes=4 * a.size, seed=seed) // 4
    cs = np.concatenate([[0.0], np.cumsum(a, dtype=np.float64)])
    if placement == "strided" and 0 < stride < chunk:      # interleaved pieces of stride bytes
        piece, pitch = stride // 4, streams * stride // 4
        first = starts[:, None] + pitch * np.arange(chunk // stride, dtype=np.int64)
        sums = (cs[first + piece] - cs[first]).sum(axis=1)
    else:
        sums = cs[starts + chunk // 4] - cs[starts]
    grid = -(-32 * streams // block)
    return _by_block(sums, np.arange(streams, dtype=np.int64) * 32 // block, grid)


# ---- the sweeps ---------------------------------------------------------------------------
def _terms(bank_ns=None, round_ns=None, spread_ns=None) -> dict:
    """The model's round terms (None: the module's figure): the bank's busy time, the
    loop's time per round and the loads' spread of gpumem.model.dram; all three 0 is the
    plain Little's law."""
    return {"bank_ns": dm.DRAM_BANK_NS if bank_ns is None else bank_ns,
            "round_ns": dm.DRAM_ROUND_NS if round_ns is None else round_ns,
            "spread_ns": dm.DRAM_SPREAD_NS if spread_ns is None else spread_ns}


def _anchors(sms, latency_ns, peak_gbps, terms: dict, measure: bool, repeat: int) -> dict:
    """The model's figures: the arguments where given, else measured (SMs, the device
    copy) where a GPU is at hand, else the H100 anchors of gpumem.model.dram."""
    got = {"sms": sms, "latency_ns": latency_ns, "peak_gbps": peak_gbps, **terms,
           "peak_source": "given"}
    if sms is None:
        got["sms"] = runtime.device().multiprocessors if measure else dm.H100_SMS
    if latency_ns is None:
        got["latency_ns"] = dm.H100_DRAM_LATENCY_NS
    if peak_gbps is None:
        if measure:
            src = runtime.empty((1 << 26,))
            dst = runtime.empty((1 << 26,))
            got["peak_gbps"] = device_copy(dst, src, repeat=repeat, warmup=2)["GB/s"]
            got["peak_source"] = "device copy, measured"
            del src, dst
        else:
            got["peak_gbps"], got["peak_source"] = dm.H100_PEAK_GBPS, "H100 device copy (anchor)"
    return got


_TERMS = ("bank_ns", "round_ns", "spread_ns")   # the round's terms: 0 allowed


def _figures(fn: str, sms, latency_ns, peak_gbps, bank_ns=None, round_ns=None,
             spread_ns=None) -> tuple:
    """The model's figures a sweep or summary was given (None: its default), checked
    (the round's terms may be 0; all three 0: the plain Little's law): sms, latency_ns,
    peak_gbps and the dict of the round's terms."""
    if sms is not None:
        sms = _int(fn, "sms", sms, 1, 1 << 16)
    got = [sms]
    for name, v in (("latency_ns", latency_ns), ("peak_gbps", peak_gbps), ("bank_ns", bank_ns),
                    ("round_ns", round_ns), ("spread_ns", spread_ns)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{fn}: {name} must be a number, not {type(v).__name__}")
            low_ok = v >= 0 if name in _TERMS else v > 0
            if not (low_ok and v < float("inf")):
                raise ValueError(f"{fn}: {name}={v!r} is not allowed; {name} must be "
                                 + ("non-negative" if name in _TERMS else "positive")
                                 + " and finite")
            v = float(v)
        got.append(v)
    return (*got[:3], _terms(*got[3:]))


#: little_sweep's three ways (and "combined": all three at once), as
#: (blocks per SM, width, unroll) points at block 256.
LITTLE_WAYS = {
    "warps": [(b, "float", 1) for b in (1, 2, 3, 4, 6, 8)],
    "unroll": [(1, "float", u) for u in (1, 2, 4, 8, 16)],
    "width": [(2, w, 1) for w in ("float", "float2", "float4")],
    "combined": [(b, "float4", u) for b, u in ((1, 4), (2, 4), (4, 4), (4, 8), (8, 4))],
}


def little_sweep(ways: str | Sequence[str] = tuple(LITTLE_WAYS), *, n: int = 1 << 28,
                 block: int = 256, repeat: int = 10, progress: bool = False,
                 sms: int | None = None, latency_ns: float | None = None,
                 peak_gbps: float | None = None, bank_ns: float | None = None,
                 round_ns: float | None = None, spread_ns: float | None = None) -> Table:
    """:func:`dram_stream`'s bandwidth against the bytes in flight per SM, varied by
    resident warps, unroll and width (:data:`LITTLE_WAYS`), beside Little's law.

    The grid is SMs x blocks per SM, so every block is resident at once
    (checked against the occupancy API on a GPU: ``resident`` is the blocks per
    SM that fit).  Bytes in flight per SM = resident warps x 32 x width x
    unroll.  Without a GPU the table holds the model alone.

    Parameters
    ----------
    ways : str or sequence of {"warps", "unroll", "width", "combined"}
    n : int
        Floats streamed (default 2^28: 1 GiB, 20x the H100's L2), at most 2^28.
    block : int
        Threads per block, a multiple of 32 (default 256: 8 warps).
    repeat : int
        Timed launches per point (median; L2 evicted before each).
    sms, latency_ns, peak_gbps, bank_ns, round_ns, spread_ns : optional
        The model's figures (:func:`gpumem.model.dram.little_bandwidth`; default:
        measured SMs and device copy, the H100's 351 ns DRAM latency from the
        latency ladder -- pass your GPU's, e.g. ``gpumem.latency(1 << 30).ns_per_load`` --
        a bank busy 45 ns per access, and the module's fitted ``DRAM_ROUND_NS``, 20 ns of
        loop per round, and ``DRAM_SPREAD_NS``).  All three of the round's terms 0: the
        plain law.  The model takes each point's unroll as its independent loads.

    Returns
    -------
    Table: way, blocks_per_sm, resident, warps_per_sm, width, unroll,
    in_flight_per_sm (bytes), ms, GB/s, model_GB/s, measured/model.
    """
    return _little("little_sweep", ways, n, block, repeat, progress, sms, latency_ns, peak_gbps,
                   runtime.is_available(), bank_ns, round_ns, spread_ns)


def _little(fn, ways, n, block, repeat, progress, sms, latency_ns, peak_gbps, gpu,
            bank_ns=None, round_ns=None, spread_ns=None) -> Table:
    ways = _choices(fn, "ways", ways, tuple(LITTLE_WAYS))
    n = _int(fn, "n", n, 1, MAX_BUFFER // 4)
    block = _checked(fn, "dram_stream", "block", block)
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    sms, latency_ns, peak_gbps, terms = _figures(fn, sms, latency_ns, peak_gbps, bank_ns,
                                                 round_ns, spread_ns)
    fig = _anchors(sms, latency_ns, peak_gbps, terms, gpu, repeat)
    a = runtime.to_device(np.ones(n, np.float32)) if gpu else None
    rows = []
    points = [(way, *pt) for way in ways for pt in LITTLE_WAYS[way]]
    for way, bps, width, unroll in hl._steps(points, fn, progress and gpu):
        resident = bps
        row = {"way": way, "blocks_per_sm": bps}
        if gpu:
            occ = kernel_occupancy("dram_stream", width, block, unroll=unroll)
            resident = min(bps, occ.blocks_per_sm)
        warps = resident * block // 32
        inflight = dm.bytes_in_flight(warps, WIDTHS[width], unroll)
        model = dm.little_bandwidth(inflight, loads=unroll, sms=fig["sms"],
                                    latency_ns=fig["latency_ns"], peak_gbps=fig["peak_gbps"],
                                    bank_ns=fig["bank_ns"], round_ns=fig["round_ns"],
                                    spread_ns=fig["spread_ns"])
        row.update(resident=resident, warps_per_sm=warps, width=WIDTHS[width], unroll=unroll,
                   in_flight_per_sm=inflight, ms=None, **{"GB/s": None, "model_GB/s": model,
                                                          "measured/model": None})
        if gpu:
            out = runtime.empty((fig["sms"] * bps,))
            r = runtime.bench(dram_stream, a, width=width, unroll=unroll, grid=fig["sms"] * bps,
                              block=block, out=out, repeat=repeat, warmup=2, l2="cold")
            row.update(ms=r.median_ms, **{"GB/s": r.gbps, "measured/model": r.gbps / model})
        rows.append(row)
    title = (f"Little's law: dram_stream of {n * 4 / 2**20:.0f} MiB, block {block}; model: "
             f"{fig['sms']} SMs, {fig['latency_ns']:.0f} ns, banks busy {fig['bank_ns']:.0f} ns, "
             f"loop {fig['round_ns']:.0f} ns and spread {fig['spread_ns']:.0f} ns a round, "
             f"peak {fig['peak_gbps']:.0f} GB/s ({fig['peak_source']})")
    if not gpu:
        title += " (no GPU: model only, times not measured)"
    src = {"model_GB/s": "model"}
    if gpu:
        src.update({"ms": "measured", "GB/s": "measured", "measured/model": "measured"})
    return Table(rows, columns=["way", "blocks_per_sm", "resident", "warps_per_sm", "width",
                                "unroll", "in_flight_per_sm", "ms", "GB/s", "model_GB/s",
                                "measured/model"], sources=src, title=title)


def little_summary(table: Table, fraction: float = 0.9, *, sms: int | None = None,
                   latency_ns: float | None = None, peak_gbps: float | None = None,
                   bank_ns: float | None = None, round_ns: float | None = None,
                   spread_ns: float | None = None) -> dict:
    """From a :func:`little_sweep` table: the bytes in flight per SM at which the
    measured (else the modelled) curve reaches ``fraction`` of its peak, beside
    the latency x bandwidth product per SM (the plain law's answer) and the
    model's answer with the banks' queues and the loop's time per round (one
    load per thread per round, the model's terms as :func:`little_sweep` takes
    them; None for ``fraction`` 1, which the model reaches only in the limit)."""
    fn = "little_summary"
    if not isinstance(table, Table):
        raise TypeError(f"{fn}: table must be a gpumem.Table from little_sweep, not "
                        f"{type(table).__name__}")
    if not {"in_flight_per_sm", "GB/s", "model_GB/s"} <= set(table.columns) or not len(table):
        raise ValueError(f"{fn}: table must be a little_sweep table (rows with "
                         "in_flight_per_sm, GB/s and model_GB/s)")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"{fn}: fraction must be a number, not {type(fraction).__name__}")
    if not 0 < fraction <= 1:
        raise ValueError(f"{fn}: fraction={fraction!r} is not allowed; fraction must be in (0, 1]")
    sms, latency_ns, peak_gbps, terms = _figures(fn, sms, latency_ns, peak_gbps, bank_ns,
                                                 round_ns, spread_ns)
    meas = [(x, y) for x, y in zip(table["in_flight_per_sm"], table["GB/s"]) if y is not None]
    col = "GB/s" if meas else "model_GB/s"
    pts = meas or list(zip(table["in_flight_per_sm"], table["model_GB/s"]))
    peak = peak_gbps if peak_gbps is not None else max(y for _, y in pts)
    need = dm.bytes_for_fraction(pts, fraction, peak)
    figs = dict(sms=sms or dm.H100_SMS, latency_ns=latency_ns or dm.H100_DRAM_LATENCY_NS,
                peak_gbps=peak)
    lbp = dm.latency_bandwidth_product(**figs)
    model = None if fraction >= 1 else dm.little_bytes(fraction, **terms, **figs)
    return {"source": "measured" if meas else "model", "column": col, "peak_GB/s": peak,
            "fraction": fraction, "in_flight_per_sm_needed": need,
            "latency_x_bandwidth_per_sm": lbp,
            "needed/product": None if need is None else need / lbp,
            "model_in_flight_per_sm_needed": model}


#: burst_sweep's counters: sectors the loads requested, their requests, DRAM bytes read.
BURST_METRICS = ("gld_transactions", "gld_requests", "dram_read_bytes")


def burst_sweep(pieces_sizes: Sequence[int] = PIECES, *, pieces: int = 1 << 20,
                n: int = 1 << 28, seed: int = 0, repeat: int = 10, progress: bool = False) -> Table:
    """:func:`dram_burst` for each piece size: useful GB/s, the sectors the loads
    requested (model: exact) and the DRAM bytes read per sector and per useful byte.

    ``dram_bytes_per_sector`` near 32 means DRAM fetched the lone sector alone;
    near 64, with a neighbour.  Counters need CUPTI (else only the model's
    columns and the times are filled).

    Returns
    -------
    Table: piece, pieces, useful_bytes, ms, GB/s, sectors_model, gld_transactions,
    gld_requests, requests_model, dram_read_bytes, dram_floor_model,
    dram_bytes_per_sector, dram_bytes_per_useful_byte.
    """
    return _burst("burst_sweep", pieces_sizes, pieces, n, seed, repeat, progress,
                  runtime.is_available())


def _burst(fn, pieces_sizes, pieces, n, seed, repeat, progress, gpu) -> Table:
    sizes = _each(fn, "pieces_sizes", pieces_sizes, "dram_burst", "piece")
    pieces = _int(fn, "pieces", pieces, 1, 1 << 26)
    n = _int(fn, "n", n, 32, MAX_BUFFER // 4)
    seed = _checked(fn, "dram_burst", "seed", seed)
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    a = runtime.to_device(np.ones(n, np.float32)) if gpu else None
    rows = []
    for p in hl._steps(sizes, fn, progress and gpu):
        row = {"piece": p, "pieces": pieces, "useful_bytes": p * pieces, "ms": None,
               "GB/s": None, "sectors_model": dm.burst_sectors(p, pieces),
               "gld_transactions": None, "gld_requests": None,
               "requests_model": dm.burst_requests(p, pieces),
               "dram_read_bytes": None, "dram_floor_model": dm.burst_dram_floor(p, pieces),
               "dram_bytes_per_sector": None, "dram_bytes_per_useful_byte": None}
        if gpu:
            r = runtime.bench(dram_burst, a, pieces, piece=p, seed=seed, repeat=repeat, warmup=2,
                              l2="cold")
            row.update(ms=r.median_ms, **{"GB/s": r.gbps})
        rows.append(row)
    got = hl._counters(BURST_METRICS, [lambda p=p: dram_burst(a, pieces, piece=p, seed=seed)
                                       for p in sizes]) if gpu else None
    if got is not None:
        for row, g in zip(rows, got):
            row.update({k: g.get(k) for k in BURST_METRICS})
            d, s = row["dram_read_bytes"], row["gld_transactions"]
            if d is not None and s:
                row["dram_bytes_per_sector"] = d / s
                row["dram_bytes_per_useful_byte"] = d / row["useful_bytes"]
    title = f"DRAM bursts: {pieces} isolated pieces at random aligned places in {4 * n / 2**20:.0f} MiB"
    if not gpu:
        title += " (no GPU: model only)"
    src = {"sectors_model": "model", "requests_model": "model", "dram_floor_model": "model"}
    if gpu:
        src.update({"ms": "measured", "GB/s": "measured"})
    if got is not None:
        src.update({k: "measured" for k in BURST_METRICS + ("dram_bytes_per_sector",
                                                             "dram_bytes_per_useful_byte")})
    return Table(rows, columns=list(rows[0]) if rows else None, sources=src, title=title)


#: channel_sweep's counters tried: DRAM bytes, and the busiest / average L2
#: slice and DRAM channel (Nsight Compute's .max / .avg over the units).
CHANNEL_METRICS = ("dram_read_bytes", "lts__t_sectors_op_read.max", "lts__t_sectors_op_read.avg",
                   "dram__bytes_read.max", "dram__bytes_read.avg")


def channel_sweep(strides: Sequence[int] | None = None, *,
                  chunk: int = 65536, max_streams: int = 4096, n: int = 1 << 28, seed: int = 0,
                  repeat: int = 10, progress: bool = False,
                  metrics: Sequence[str] | None = CHANNEL_METRICS) -> Table:
    """:func:`dram_channels`, strided against random placement at each stride.

    Each stride runs ``min(max_streams, (4n - chunk) // stride + 1)`` warps
    (at most the power-of-two number of chunks in the buffer), the strided and
    the random placement with the same number, so their ratio shows the
    placement alone (at the largest strides the 1 GiB buffer holds few
    streams: both are slow, the ratio still tells).  The default strides run
    from 64 bytes to 64 MiB.  Strides below the chunk interleave the chunks in
    stride-byte pieces (see :func:`dram_channels`): the warps a stride apart
    at every step, every byte read once; at the chunk, the streams are back
    to back.  ``metrics`` are read in one profile block where
    CUPTI takes them (else None: the title says which were tried).

    Returns
    -------
    Table: stride, streams, placement, MiB, ms, GB/s, strided/random and the metrics.
    """
    fn = "channel_sweep"
    n = _int(fn, "n", n, 512, MAX_BUFFER // 4)
    chunk = _int(fn, "chunk", chunk, arg_row("dram_channels", "chunk")["lo"], 4 * n)
    if chunk & (chunk - 1):
        raise ValueError(f"{fn}: chunk={chunk} is not allowed; chunk must be a power of two")
    if strides is None:        # 64 B .. 64 MiB, within the buffer
        strides = [64 << k for k in range(64) if 64 << k <= min(1 << 26, 4 * n)]
    ss = _ints(fn, "strides", strides, 32, 4 * n)
    for s in ss:
        if s & (s - 1):
            raise ValueError(f"{fn}: stride {s} is not allowed; strides must be powers of two")
    max_streams = _checked(fn, "dram_channels", "streams", max_streams, "max_streams")
    seed = _checked(fn, "dram_channels", "seed", seed)
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    metrics = () if metrics is None else tuple(_check_names(metrics, fn))
    gpu = runtime.is_available()
    a = runtime.to_device(np.ones(n, np.float32)) if gpu else None
    slots = 1 << ((4 * n // chunk).bit_length() - 1)
    rows, calls = [], []
    for s in hl._steps(ss, fn, progress and gpu):
        streams = min(max_streams, (4 * n - chunk) // s + 1, slots)
        times = {}
        for placement in ("strided", "random"):
            kw = dict(placement=placement, stride=s if placement == "strided" else 0,
                      chunk=chunk, seed=seed)
            row = {"stride": s, "streams": streams, "placement": placement,
                   "MiB": streams * chunk / 2**20, "ms": None, "GB/s": None,
                   "strided/random": None}
            if gpu:
                r = runtime.bench(dram_channels, a, streams, repeat=repeat, warmup=2, l2="cold",
                                  **kw)
                row.update(ms=r.median_ms, **{"GB/s": r.gbps})
                times[placement] = r.gbps
            calls.append(lambda streams=streams, kw=kw: dram_channels(a, streams, **kw))
            rows.append(row)
        if times:
            rows[-2]["strided/random"] = rows[-1]["strided/random"] = (times["strided"]
                                                                     / times["random"])
    got, read = None, ()
    if gpu and metrics:
        # every metric at once; where CUPTI refuses the set, the DRAM bytes alone
        for trial in (metrics, tuple(m for m in metrics if m == "dram_read_bytes")):
            if trial:
                got, read = _try_counters(trial, calls), trial
            if got is not None:
                break
    for row in rows:
        for m in metrics:
            row[m] = None
    if got is not None:
        for row, g in zip(rows, got):
            row.update({m: g.get(m) for m in read})
    title = (f"DRAM channels: warps streaming {chunk // 1024} KiB chunks a power of two apart "
             f"against random chunk-aligned places, in {4 * n / 2**20:.0f} MiB")
    missing = [m for m in metrics if got is None or m not in read or
               all(r[m] is None for r in rows)]
    if gpu and missing:
        title += f" (counters tried, not readable here: {', '.join(missing)})"
    if not gpu:
        title += " (no GPU: nothing measured)"
    src = {"ms": "measured", "GB/s": "measured", "strided/random": "measured"} if gpu else {}
    if got is not None:
        src.update({m: "measured" for m in read})
    return Table(rows, columns=list(rows[0]) if rows else None, sources=src, title=title)


def _try_counters(metrics, calls):
    """hl._counters, None also where the counter layer refuses a metric name (ValueError)."""
    try:
        return hl._counters(metrics, calls)
    except ValueError:
        return None


# ---- gpumem report: the headline and the full sweeps ------------------------------------------
def _headline(measure: bool, quick: bool) -> list[dict]:
    lbp = dm.latency_bandwidth_product()
    need = dm.little_bytes(0.9)
    mod = {"in_flight_per_sm_for_90pct": need, "latency_x_bandwidth_per_sm": lbp,
           "dram_bytes_per_sector_floor": dm.SECTOR}
    mtext = (f"Little's law with the banks' queues and {dm.DRAM_ROUND_NS:.0f} ns of loop a round: "
             f"{need / 1024:.1f} KiB in flight per SM for 90% of {dm.H100_PEAK_GBPS:.0f} GB/s, "
             f"{need / lbp:.1f}x the latency x bandwidth product "
             f"({dm.H100_DRAM_LATENCY_NS:.0f} ns x bandwidth / {dm.H100_SMS} SMs = "
             f"{lbp / 1024:.1f} KiB); a lone sector: 32 DRAM bytes at least")
    what = "dram_stream bytes in flight per SM for 90% of peak; dram_burst DRAM bytes per sector"
    take = "the bytes in flight, not the way they are produced, set the DRAM bandwidth"
    if not measure:
        return [hl._unmeasured("dram", what, "GB/s against bytes in flight per SM "
                               "(warps, unroll, width) and dram_read_bytes per 32-byte sector of "
                               "isolated 32-byte pieces (gpumem.profile)", model=mod,
                               model_text=mtext, takeaway=take)]
    n = (1 << 26) if quick else (1 << 28)
    t = _little("dram headline", ("warps", "unroll", "combined"), n, 256, 3 if quick else 10,
                False, None, None, None, True)
    s = little_summary(t)
    meas = {"in_flight_per_sm_for_90pct": s["in_flight_per_sm_needed"],
            "best_GB/s": max(v for v in t["GB/s"] if v is not None)}
    text = (f"90% of {s['peak_GB/s']:,.0f} GB/s needs "
            + ("more than the sweep's most" if s["in_flight_per_sm_needed"] is None else
               f"{s['in_flight_per_sm_needed'] / 1024:.1f} KiB ({s['needed/product']:.1f}x the "
               "latency x bandwidth product)") + " in flight per SM")
    b = _burst("dram headline", (32,), 1 << 18 if quick else 1 << 20, n, 0, 3 if quick else 10,
               False, True)
    per = b["dram_bytes_per_sector"][0]
    if per is not None:
        meas["dram_bytes_per_sector"] = per
        text += f"; a lone 32-byte piece costs {per:.0f} DRAM bytes"
    return [hl._row("dram", what, measured=meas, model=mod, measured_text=text,
                    model_text=mtext, takeaway=take)]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    n = (1 << 26) if quick else (1 << 28)
    rep = 3 if quick else 10
    return [little_sweep(n=n, repeat=rep, progress=progress),
            burst_sweep(pieces=1 << 18 if quick else 1 << 20, n=n, repeat=rep, progress=progress),
            channel_sweep(n=n, repeat=rep, progress=progress,
                          max_streams=1024 if quick else 4096)]


# ---- compute-sanitizer: every variant once, on small awkward sizes -----------------------------
def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    for width in WIDTHS:
        for unroll in (1, 2, 4, 8, 16):
            for n, grid, block in ((1, 1, 32), (1003, 3, 96), (50001, 7, 256)):
                dram_stream(_f32(n), width=width, unroll=unroll, grid=grid, block=block)
    for piece in PIECES:
        for pieces, block in ((1, 32), (1001, 96), (4099, 1024)):
            dram_burst(_f32(1003), pieces, piece=piece, seed=7, block=block)
    for streams, kw in ((1, {}), (5, {"stride": 8192, "chunk": 2048}),
                        (3, {"stride": 32, "chunk": 4096, "block": 64}),
                        (7, {"placement": "random", "chunk": 4096, "block": 96})):
        dram_channels(_f32(16411), streams, **kw)


# ---- what the shared tests read: a fake GPU's measurements, argument strategies, the model's
# largest launches -----------------------------------------------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): the stream's time falls with the
    unroll up to 4; a lone 32-byte piece costs 64 DRAM bytes; 8 blocks per SM."""
    from types import SimpleNamespace

    return {"dram_stream": gpu.kernel("dram_stream", {u: 4.0 / min(u, 4) for u in (1, 2, 4, 8, 16)},
                                      select="unroll"),
            "dram_burst": gpu.kernel("dram_burst", {32: 1.0}, select="piece", counters={32: {
                "gld_transactions": 1000.0, "gld_requests": 63.0, "dram_read_bytes": 64000.0}}),
            "device_copy": gpu.device_copy,
            "kernel_occupancy": lambda fam, v, block, **kw: SimpleNamespace(blocks_per_sm=8)}


def _arguments(st) -> dict:
    """dram_channels' streams each read a whole chunk (64 KiB by default) of a
    (:attr:`Lesson.arguments`)."""
    return {"dram_channels": st.integers(1, 16).map(
        lambda s: {"streams": s, "a": np.ones(s * 65536 // 4, np.float32)})}


def _model_launches() -> dict:
    """Every variant at the largest launch gpumem accepts and at n = 2^31
    (:attr:`Lesson.model_launches`); dram_burst left out."""
    from .. import model

    largest = [("dram_stream", v, dict(n=2**61 - 1, unroll=u, grid=1 << 20, block=1024))
               for v in ("float", "float2", "float4") for u in (1, 16)]
    largest += [("dram_channels", "strided", dict(n=2**61 - 1, streams=(1 << 22) - 1,
                                                  stride=1 << 40, chunk=1 << 30, block=1024)),
                ("dram_channels", "strided", dict(n=2**61 - 1, streams=1 << 24, stride=32,
                                                  chunk=1 << 30, block=1024)),
                ("dram_channels", "random", dict(n=2**61 - 1, streams=1 << 24, chunk=1 << 30,
                                                 block=1024))]
    large = [("dram_stream", v, dict(n=2**31)) for v in model.families()["dram_stream"]]
    large += [("dram_channels", v, dict(n=2**31, streams=4096))
              for v in model.families()["dram_channels"]]
    return {"largest": largest, "large": large, "copy_engine": [], "left_out": {
        "dram_burst": "its sectors depend on every piece's random slot, so it is counted piece by "
                      "piece (tests/model/test_dram.py times it at 2^24 pieces)"}}


LESSON = Lesson(
    name="dram",
    idea="DRAM: bytes in flight against bandwidth (Little's law), bursts and sectors, channels",
    families=("dram_stream", "dram_burst", "dram_channels"),
    exports=("dram_stream", "dram_burst", "dram_channels"),
    sweeps=("little_sweep", "burst_sweep", "channel_sweep"),
    notebooks=("11_dram",),
    benchmark="dram",
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=("dram_stream", "dram_burst", "dram_channels"),
    stand_ins=_stand_ins,
    arguments=_arguments,
    model_launches=_model_launches,
)
