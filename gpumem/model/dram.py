"""The dram lesson on paper: Little's law for DRAM bandwidth, the bytes a warp
puts in flight, and the sectors isolated pieces cost (``cuda/dram.cu``).

Pure Python.  The GPU's figures are parameters, so it runs anywhere; the
defaults are the H100 80GB HBM3 figures gpumem measured: 132 SMs, a device
copy of 2990 GB/s (``cudaMemcpy`` device to device, read + write counted) and
an unloaded DRAM latency of 351 ns (the latency ladder's pointer chase,
device memory level: 694 cycles, 351 ns by ``%globaltimer``), plus one
published-order figure: a DRAM bank is busy about 45 ns per access (the row
cycle tRC = tRAS + tRP of DRAM datasheets), and two fitted on the H100's
bench_dram run of 2026-11-25: a streaming warp's round is 20 ns longer than a
chase's single load (its loop's own instructions), and the spread of the
return times of a thread's independent loads, which that run puts at 0 ns.

>>> from gpumem.model import dram
>>> dram.bytes_in_flight(warps_per_sm=32, width=16, unroll=4)     # per SM
65536
>>> round(dram.little_bandwidth(4096, bank_ns=0, round_ns=0, spread_ns=0))   # GB/s, plain
1540
>>> round(dram.little_bandwidth(4096))          # with the round's loop and the banks' queues
1328
>>> dram.burst_sectors(piece=8, pieces=1000)
1000
"""
from __future__ import annotations

import math

import numpy as np

from . import _check
from ._launch import BYTES_MAX, REQUIRED as _REQ
from .coalescing import coalesce_warps

__all__ = ["H100_SMS", "H100_PEAK_GBPS", "H100_DRAM_LATENCY_NS", "DRAM_BANK_NS", "DRAM_ROUND_NS",
           "DRAM_SPREAD_NS", "SECTOR", "WARP",
           "bytes_in_flight", "little_bandwidth", "little_bytes", "bytes_for_fraction",
           "latency_bandwidth_product",
           "burst_sectors", "burst_dram_floor", "burst_lanes", "burst_requests", "stream_counts",
           "channels_counts", "mix64", "slot_permutation"]

#: The H100 80GB HBM3 (gpumem's measured anchors).
H100_SMS = 132
H100_PEAK_GBPS = 2990.0
H100_DRAM_LATENCY_NS = 351.0         #: ns: the ladder's device-memory chase (694 cycles)
#: ns a DRAM bank is busy per access: the row cycle tRC = tRAS + tRP, about
#: 45 ns in DRAM datasheets (DDR3's 50 ns, HBM's mid-40s); not measured here.
DRAM_BANK_NS = 45.0
#: ns a streaming warp's round takes beyond the ladder's chase of single loads: its loop's
#: own instructions (address arithmetic, the adds, the branch).  Fitted (to 5 ns) on the
#: H100 bench_dram run of 2026-11-25, with DRAM_SPREAD_NS; see :func:`little_bandwidth`.
DRAM_ROUND_NS = 20.0
#: ns by which, on an idle DRAM, the last of a thread's independent loads trails a single
#: one per step of H(loads) - 1 (channels at different distances, page hits and misses).
#: Fitted on the same run: 0 ns.  Its points with several loads per round are all at 16 KiB
#: in flight per SM or more, where the model already reads low, so any positive figure
#: fits them worse; the term stays for a GPU whose run shows it.
DRAM_SPREAD_NS = 0.0

SECTOR = 32     #: bytes: what L2 moves per request unit, and what the counters count
WARP = 32

_WIDTHS = (4, 8, 16)
_PIECES = (4, 8, 16, 32, 64, 128)


#: A block of these kernels is whole warps: a multiple of 32 from BLOCK_MIN to BLOCK_MAX
#: threads (the C tables' ``whole_warps`` rows; tests/model/test_names proves them equal).
BLOCK_MIN, BLOCK_MAX = WARP, 1024


def _block(fn: str, block) -> int:
    """A block of whole warps, BLOCK_MIN..BLOCK_MAX threads (the C tables' rule)."""
    block = _check.index(fn, "block", block)
    if block % WARP or not BLOCK_MIN <= block <= BLOCK_MAX:
        raise ValueError(f"{fn}: block={block} is not allowed; block must be a multiple of "
                         f"{WARP} from {BLOCK_MIN} to {BLOCK_MAX} (whole warps)")
    return block


def _width(fn: str, width) -> int:
    width = _check.index(fn, "width", width)
    if width not in _WIDTHS:
        raise ValueError(f"{fn}: width={width!r} is not allowed; width must be 4, 8 or 16 bytes")
    return width


def bytes_in_flight(warps_per_sm: int, width: int, unroll: int) -> int:
    """Bytes one SM has on their way to DRAM when each of its ``warps_per_sm``
    resident warps issues ``unroll`` independent loads of ``width`` bytes per
    lane before it waits: ``warps_per_sm * 32 * width * unroll``."""
    fn = "model.dram.bytes_in_flight"
    warps_per_sm = _check.positive(fn, "warps_per_sm", warps_per_sm, True)
    unroll = _check.positive(fn, "unroll", unroll, True)
    width = _width(fn, width)
    return warps_per_sm * WARP * width * unroll


def _harmonic(k: int) -> float:
    return sum(1.0 / i for i in range(1, k + 1))


def _little_figures(fn, loads, sms, latency_ns, peak_gbps, bank_ns, round_ns, spread_ns) -> tuple:
    """The figures checked and as Python numbers, in the order given."""
    pos = _check.positive
    out = [pos(fn, "loads", loads, True), pos(fn, "sms", sms, True),
           pos(fn, "latency_ns", latency_ns), pos(fn, "peak_gbps", peak_gbps)]
    for name, v in (("bank_ns", bank_ns), ("round_ns", round_ns), ("spread_ns", spread_ns)):
        v = _check.number(fn, name, v)
        if not (v >= 0 and math.isfinite(v)):
            raise ValueError(f"{fn}: {name}={v!r} is not allowed; {name} must be >= 0 "
                             "and finite")
        out.append(v)
    return tuple(out)


def _idle_round(loads, latency_ns, round_ns, spread_ns) -> float:
    """ns of a round on an idle DRAM: the chase's latency, the loop's own time and the
    wait for the last of ``loads`` loads."""
    return latency_ns + round_ns + spread_ns * (_harmonic(loads) - 1)


def little_bandwidth(in_flight_per_sm: float, *, loads: int = 1, sms: int = H100_SMS,
                     latency_ns: float = H100_DRAM_LATENCY_NS,
                     peak_gbps: float = H100_PEAK_GBPS, bank_ns: float = DRAM_BANK_NS,
                     round_ns: float = DRAM_ROUND_NS, spread_ns: float = DRAM_SPREAD_NS) -> float:
    """Little's law with the banks' queues: the GB/s that ``in_flight_per_sm``
    bytes per SM sustain.

    Little's law: bandwidth = bytes in flight / the time each byte is in
    flight, a warp's round.  With ``bank_ns``, ``round_ns`` and ``spread_ns``
    all 0 that time is the unloaded ``latency_ns`` and the answer is
    ``min(peak, bytes in flight x SMs / latency)`` -- a sharp knee at the
    latency x bandwidth product.  Three terms make the round longer:

    * ``round_ns``: a streaming warp's round is longer than the latency
      ladder's chase of single loads by its loop's own instructions (address
      arithmetic, the adds, the branch): a fixed time per round.
    * ``spread_ns``: even on an idle DRAM a thread's ``loads`` independent
      loads do not return together (channels at different distances, page
      hits and misses), and the round waits for the last of them: about
      ``spread_ns x (H(loads) - 1)`` more, ``H(k) = 1 + 1/2 + ... + 1/k``.
    * ``bank_ns``: a real DRAM approaches its peak gradually, because a
      request finds its bank busy more often the busier the DRAM is: at
      utilisation U = bandwidth / peak it waits ``bank_ns x U / (1 - U)`` on
      average (a single-server queue per bank whose service is one access,
      ``bank_ns``: the textbook's array access time), and the round waits
      for the last of ``loads`` such waits, each about exponential:
      ``H(loads)`` mean waits.

    The round then takes

        T = latency_ns + round_ns + spread_ns x (H(loads) - 1)
            + bank_ns x H(loads) x U / (1 - U),

    and bandwidth = bytes in flight x SMs / T, solved for U exactly (a
    quadratic).  The bandwidth stays below ``peak_gbps`` and reaches it only as
    the bytes in flight grow without bound (with ``bank_ns=0``: at the knee).

    ``round_ns`` (20) and ``spread_ns`` (0) were fitted on the H100 run of
    2026-11-25 (bench_dram, six points from 1 KiB to 64 KiB in flight per SM,
    least squares of log(model / measured), to 5 ns) and checked on the H200
    run of 2026-11-26 (12 points, its own latency and device copy, the
    fitted figures unchanged): 0.88-1.11.  On the H100 the model is 0.92-1.02x
    of those six points (0.91-1.03x of all twelve of that run), where the
    plain law missed by up to 1.33x at the knee.  Its remaining error is at
    the most bytes (the model about 0.9x): a read-only stream passes the
    device copy the model takes as its peak.  The H200's highest point (1.11x:
    one block per SM of float loads, unroll 4, 4 KiB) is where a positive
    ``spread_ns`` would help; the H100's six points hold no such point.
    """
    fn = "model.dram.little_bandwidth"
    in_flight_per_sm = _check.positive(fn, "in_flight_per_sm", in_flight_per_sm)
    loads, sms, latency_ns, peak_gbps, bank_ns, round_ns, spread_ns = _little_figures(
        fn, loads, sms, latency_ns, peak_gbps, bank_ns, round_ns, spread_ns)
    demand = in_flight_per_sm * sms                  # bytes the SMs keep on their way
    idle = _idle_round(loads, latency_ns, round_ns, spread_ns)
    a = bank_ns * _harmonic(loads)
    # U peak (idle (1 - U) + a U) = demand (1 - U): P (a - L) U^2 + (P L + D) U - D = 0 with
    # L the idle round, the root in [0, 1) in the form that is stable for a < L, a = L, a > L
    b = peak_gbps * idle + demand
    u = 2 * demand / (b + math.sqrt(b * b + 4 * peak_gbps * (a - idle) * demand))
    return peak_gbps * min(u, 1.0)


def little_bytes(fraction: float = 0.9, *, loads: int = 1, sms: int = H100_SMS,
                 latency_ns: float = H100_DRAM_LATENCY_NS, peak_gbps: float = H100_PEAK_GBPS,
                 bank_ns: float = DRAM_BANK_NS, round_ns: float = DRAM_ROUND_NS,
                 spread_ns: float = DRAM_SPREAD_NS) -> float:
    """Bytes in flight per SM at which :func:`little_bandwidth` reaches ``fraction``
    of ``peak_gbps``: ``fraction x peak x T / SMs`` with T the round at that
    utilisation (the same T) -- the seed's "R + 1 banks" in today's terms.  With
    ``bank_ns``, ``round_ns`` and ``spread_ns`` all 0: ``fraction`` x the latency x
    bandwidth product."""
    fn = "model.dram.little_bytes"
    fraction = _check.number(fn, "fraction", fraction)
    if not 0 < fraction < 1:
        raise ValueError(f"{fn}: fraction={fraction!r} is not allowed; fraction must be in (0, 1)")
    loads, sms, latency_ns, peak_gbps, bank_ns, round_ns, spread_ns = _little_figures(
        fn, loads, sms, latency_ns, peak_gbps, bank_ns, round_ns, spread_ns)
    t = (_idle_round(loads, latency_ns, round_ns, spread_ns)
         + bank_ns * _harmonic(loads) * fraction / (1 - fraction))
    return fraction * peak_gbps * t / sms


def latency_bandwidth_product(*, sms: int = H100_SMS, latency_ns: float = H100_DRAM_LATENCY_NS,
                              peak_gbps: float = H100_PEAK_GBPS) -> float:
    """Bytes per SM that fill the DRAM by Little's law: peak x latency / SMs
    (the textbook's "R + 1 banks" in today's terms: enough requests on their way
    to cover the latency at the full rate)."""
    fn = "model.dram.latency_bandwidth_product"
    sms = _check.positive(fn, "sms", sms, True)
    latency_ns = _check.positive(fn, "latency_ns", latency_ns)
    peak_gbps = _check.positive(fn, "peak_gbps", peak_gbps)
    return peak_gbps * latency_ns / sms


def bytes_for_fraction(points, fraction: float = 0.9, peak_gbps: float | None = None) -> float | None:
    """The smallest bytes in flight per SM at which a measured curve reaches
    ``fraction`` of ``peak_gbps`` (default: the curve's best), interpolated
    linearly between the two points around it; None where it never does.

    ``points``: (bytes in flight per SM, GB/s) pairs, any order."""
    fn = "model.dram.bytes_for_fraction"
    pts = sorted(_points(fn, points))
    if not pts:
        raise ValueError(f"{fn}: points must hold at least one (bytes, GB/s) pair")
    fraction = _check.number(fn, "fraction", fraction)
    if not 0 < fraction <= 1:
        raise ValueError(f"{fn}: fraction={fraction!r} is not allowed; fraction must be in (0, 1]")
    peak = (max(y for _, y in pts) if peak_gbps is None
            else _check.positive(fn, "peak_gbps", peak_gbps))
    goal = fraction * peak
    prev = None
    for x, y in pts:
        if y >= goal:
            if prev is None:
                return x
            x0, y0 = prev                       # y0 < goal <= y
            return x0 + (goal - y0) * (x - x0) / (y - y0)
        prev = (x, y)
    return None


def _points(fn: str, points) -> list[tuple[float, float]]:
    """``points`` as (bytes, GB/s) pairs of finite numbers, bytes >= 0."""
    if isinstance(points, (str, bytes)) or not hasattr(points, "__iter__"):
        raise TypeError(f"{fn}: points must be an iterable of (bytes in flight per SM, GB/s) "
                        f"pairs, not {type(points).__name__}")
    out = []
    for i, p in enumerate(points):
        if isinstance(p, (str, bytes)) or not hasattr(p, "__iter__"):
            raise TypeError(f"{fn}: points[{i}] must be a (bytes, GB/s) pair, not "
                            f"{type(p).__name__}")
        pair = tuple(p)
        if len(pair) != 2:
            raise ValueError(f"{fn}: points[{i}] has {len(pair)} entries; a point is a "
                             "(bytes, GB/s) pair")
        x, y = (float(_check.number(fn, f"points[{i}][{j}]", v)) for j, v in enumerate(pair))
        if not (math.isfinite(x) and math.isfinite(y) and x >= 0 and y >= 0):
            raise ValueError(f"{fn}: points[{i}]={pair!r} is not allowed; bytes and GB/s must "
                             "be finite and >= 0")
        out.append((x, y))
    return out


def burst_lanes(piece: int) -> int:
    """Lanes that read one piece in ``dram_burst``: piece / 16 above 16 bytes, else 1."""
    piece = _piece("model.dram.burst_lanes", piece)
    return piece // 16 if piece > 16 else 1


def burst_requests(piece: int, pieces: int, block: int = 256) -> int:
    """Warp-wide load instructions of a ``dram_burst`` launch (warps with an active lane)."""
    fn = "model.dram.burst_requests"
    piece = _piece(fn, piece)
    pieces = _check.positive(fn, "pieces", pieces, True)
    _block(fn, block)
    threads = pieces * burst_lanes(piece)
    # whole warps: block is a multiple of 32, so warp w's first thread is 32 w
    return -(-threads // WARP)


def burst_sectors(piece: int, pieces: int, slots=None) -> int:
    """32-byte sectors the loads of ``dram_burst`` request from L2.

    Without ``slots``: a piece of 32 bytes or more (aligned) is piece / 32
    sectors, a smaller one (aligned, so inside one sector) one sector -- exact
    unless two pieces of one warp share a sector.  With ``slots`` (each piece's
    slot, as ``gpumem.lessons.dram.burst_slots`` gives them): exact, the
    distinct sectors of each warp's request summed (a warp reads 32 / lanes
    pieces; pieces over 16 bytes take piece / 16 lanes)."""
    fn = "model.dram.burst_sectors"
    piece = _piece(fn, piece)
    pieces = _check.positive(fn, "pieces", pieces, True)
    per = max(1, piece // SECTOR)
    if slots is None:
        return pieces * per
    slots = [int(s) for s in slots]
    if len(slots) != pieces:
        raise ValueError(f"{fn}: slots has {len(slots)} entries for pieces={pieces}")
    per_warp = WARP // burst_lanes(piece)
    total = 0
    for w in range(0, pieces, per_warp):
        total += len({s * piece // SECTOR + k for s in slots[w:w + per_warp] for k in range(per)})
    return total


def burst_dram_floor(piece: int, pieces: int) -> int:
    """The fewest DRAM bytes ``dram_burst`` can read: its sectors x 32 (pieces
    that share a sector aside).  A DRAM that fetches more than the sector asked
    for (a 64-byte access) reads more; the measured ratio says which."""
    return SECTOR * burst_sectors(piece, pieces)


def _piece(fn: str, piece) -> int:
    piece = _check.index(fn, "piece", piece)
    if piece not in _PIECES:
        raise ValueError(f"{fn}: piece={piece!r} is not allowed; piece must be one of "
                         f"{', '.join(map(str, _PIECES))} bytes")
    return piece


def _counts(requests: int, sectors: int, nbytes: int, stores: int) -> dict:
    return {"gld_requests": requests, "gld_transactions": sectors, "gld_bytes_requested": nbytes,
            "gst_requests": stores, "gst_transactions": stores, "gst_bytes_requested": 4 * stores}


def stream_counts(n: int, width: int = 16, unroll: int = 1, grid: int = 132,
                  block: int = 256) -> dict:
    """Global loads and stores of one ``dram_stream`` launch, exactly: warp requests,
    32-byte sectors and requested bytes (the names ``gpumem.profile`` uses).

    Full tiles: every warp-wide load is 32 lanes x ``width`` contiguous bytes
    on a 32-byte boundary (``width`` sectors).  The partial tile: row j holds
    ``clip(r - j*block, 0, block)`` vectors.  The ``n % (width/4)`` tail floats:
    one more request of one sector.  Stores: one float per block, one request
    and one sector each."""
    fn = "model.dram.stream_counts"
    n = _check.positive(fn, "n", n, True)
    unroll = _check.positive(fn, "unroll", unroll, True)
    grid = _check.positive(fn, "grid", grid, True)
    block = _block(fn, block)
    width = _width(fn, width)
    k = width // 4
    nv, tile = n // k, block * unroll
    tiles, r = divmod(nv, tile)
    req = tiles * unroll * (block // WARP)
    sec = req * width
    for j in range(unroll):
        c = min(max(r - j * block, 0), block)
        full, part = divmod(c, WARP)
        req += full + (1 if part else 0)
        sec += full * width + -(-part * width // SECTOR)
    nbytes = 4 * nv * k
    if n - nv * k:
        req, sec, nbytes = req + 1, sec + 1, nbytes + 4 * (n - nv * k)
    return _counts(req, sec, nbytes, grid)


def channels_counts(streams: int, chunk: int, block: int = 256) -> dict:
    """Global loads and stores of one ``dram_channels`` launch, exactly: each warp
    reads its chunk 512 bytes (16 sectors) per request; one float stored per block."""
    fn = "model.dram.channels_counts"
    streams = _check.positive(fn, "streams", streams, True)
    chunk = _check.positive(fn, "chunk", chunk, True)
    block = _block(fn, block)
    if chunk % 2048:
        raise ValueError(f"{fn}: chunk={chunk} is not allowed; chunk must be a multiple of 2048")
    req = streams * chunk // 512
    return _counts(req, 16 * req, streams * chunk, -(-WARP * streams // block))


def mix64(q, seed: int):
    """``cuda/dram.cu``'s gm_dram_hash (the splitmix64 finalizer of ``q + (seed+1) *
    0x9E3779B97F4A7C15``), elementwise over a NumPy array of unsigned 64-bit ints
    (or one Python int): the random slots of ``dram_burst``."""
    if isinstance(q, int):
        x = (q + (seed + 1) * 0x9E3779B97F4A7C15) & _M64
        x ^= x >> 31
        x = (x * 0xBF58476D1CE4E5B9) & _M64
        x ^= x >> 27
        x = (x * 0x94D049BB133111EB) & _M64
        return x ^ (x >> 31)
    x = q.astype(np.uint64) + np.uint64(((seed + 1) * 0x9E3779B97F4A7C15) & _M64)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(31)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def slot_permutation(w, bits: int, seed: int):
    """``cuda/dram.cu``'s gm_dram_slot over a NumPy array: a permutation of
    0 .. 2^bits - 1 (odd multiplications and right xorshifts modulo 2^bits), the
    random chunk places of ``dram_channels``."""
    mask = np.uint64((1 << bits) - 1)
    h = np.uint64((bits + 1) // 2)
    x = (w.astype(np.uint64) + np.uint64(seed)) & mask
    with np.errstate(over="ignore"):
        x = (x * np.uint64(0x9E3779B97F4A7C15)) & mask
        x ^= x >> h
        x = (x * np.uint64(0xBF58476D1CE4E5B9)) & mask
        x ^= x >> h
    return x.astype(np.int64)


_M64 = (1 << 64) - 1


# ---- the registry's families: gpumem.model.predict("dram_stream", "float4", n=...) ----------
def _stream_grid(variant: str, p: dict) -> int:
    return p["grid"]


def _burst_grid(variant: str, p: dict) -> int:
    return -(-p["pieces"] * burst_lanes(p["piece"]) // p["block"])


def _channels_grid(variant: str, p: dict) -> int:
    return -(-WARP * p["streams"] // p["block"])


def _launch(grid):
    def launch(variant: str, p: dict) -> dict:
        return {"grid": (grid(variant, p), 1, 1), "block": (p["block"], 1, 1)}
    return launch


def _whole_warps(where: str, p: dict) -> None:
    if p["block"] % WARP or not BLOCK_MIN <= p["block"] <= BLOCK_MAX:
        raise ValueError(f"{where}: block={p['block']} is not allowed; block must be a multiple "
                         f"of {WARP} from {BLOCK_MIN} to {BLOCK_MAX}")


def _recorded(where: str, p: dict, key: str, want) -> None:
    """A parameter a LaunchRecord carries that the variant or the others fix: None or equal."""
    if p[key] is not None and p[key] != want:
        raise ValueError(f"{where}: {key}={p[key]!r} does not match this launch ({key} is "
                         f"{want!r} here)")


def _fits(where: str, p: dict) -> None:
    if 4 * p["n"] > BYTES_MAX:
        raise ValueError(f"{where}: n={p['n']} floats exceed the 2**63 - 1 bytes an array "
                         "can hold")


def _int_in(where: str, p: dict, key: str, lo: int, hi: int, allowed=None) -> None:
    v = p[key]
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{where}: {key} must be an int, not {type(v).__name__}")
    v = p[key] = int(v.__index__())
    if allowed is not None and v not in allowed:
        raise ValueError(f"{where}: {key}={v} is not allowed; allowed: "
                         f"{', '.join(map(str, allowed))}")
    if not lo <= v <= hi:
        raise ValueError(f"{where}: {key}={v} is not allowed; {key} must be {lo}..{hi}")


def _check_stream(where: str, variant: str, p: dict) -> None:
    _whole_warps(where, p)
    _fits(where, p)
    _int_in(where, p, "unroll", 1, 16, (1, 2, 4, 8, 16))
    _int_in(where, p, "grid", 1, 1 << 20)
    if p["n"] < 1:
        raise ValueError(f"{where}: n=0 is not allowed; dram_stream needs at least one float")
    _recorded(where, p, "width", variant)


def _gen_stream(tally, axis, variant: str, p: dict) -> None:
    """dram_stream: every warp-wide load of a full tile is 32 lanes x width contiguous bytes
    on a 32 x width boundary; the partial tile's warps, row by row; the n % k tail floats
    (one 4-byte load each, threads 0.. of block 0); one float stored per block."""
    width = _WIDTHS[("float", "float2", "float4").index(variant)]
    n, unroll, block = p["n"], p["unroll"], p["block"]
    k = width // 4
    nv, tile = n // k, block * unroll
    tiles, r = divmod(nv, tile)
    tally.affine("ld", 0, WARP, width, width, tiles * unroll * (block // WARP))
    for j in range(unroll):
        c = min(max(r - j * block, 0), block)
        full, part = divmod(c, WARP)
        first = (tiles * tile + j * block) * width
        tally.affine("ld", first, WARP, width, width, full)
        tally.affine("ld", first + full * WARP * width, part, width, width, 1)
    tally.affine("ld", 4 * nv * k, n - nv * k, 4, 4, 1)
    tally.affine("st", 0, 1, 4, 4, p["grid"])


def _check_burst(where: str, variant: str, p: dict) -> None:
    _whole_warps(where, p)
    _fits(where, p)
    _int_in(where, p, "piece", 4, 128, _PIECES)
    _int_in(where, p, "pieces", 1, 2**31 - 1)
    _int_in(where, p, "seed", 0, 2**31 - 1)
    if 4 * p["n"] < p["piece"]:
        raise ValueError(f"{where}: n={p['n']} floats hold no {p['piece']}-byte piece")
    _recorded(where, p, "grid", _burst_grid(variant, p))


def _gen_burst(tally, axis, variant: str, p: dict) -> None:
    """dram_burst, exactly: each warp instruction reads 32 / lanes pieces at their random
    slots; its units are the distinct slots x units per piece (a piece of at least one unit)
    or the distinct units the slots fall in (a smaller piece).  Counted piece by piece
    (the slots are random), 2^20 pieces at a time."""
    piece, pieces, seed = p["piece"], p["pieces"], p["seed"]
    g = tally.g["ld"]
    lanes = burst_lanes(piece)
    per_warp = WARP // lanes
    slots = 4 * p["n"] // piece
    step = per_warp << 15                                    # whole warps per batch
    units = nbytes = 0
    for q0 in range(0, pieces, step):
        q = np.arange(q0, min(pieces, q0 + step), dtype=np.uint64)
        s = (mix64(q, seed) % np.uint64(slots)).astype(np.int64)
        pad = -s.size % per_warp
        if pad:                                  # the last warp: repeat its first piece
            s = np.concatenate([s, np.full(pad, s[s.size - (per_warp - pad)])])
        rows = np.sort(s.reshape(-1, per_warp), axis=1)
        distinct = 1 + (np.diff(rows, axis=1) != 0).sum(axis=1)
        nbytes += piece * int(distinct.sum())
        if piece >= g:
            units += (piece // g) * int(distinct.sum())
        else:
            u = np.sort(rows * piece // g, axis=1)
            units += int((1 + (np.diff(u, axis=1) != 0).sum(axis=1)).sum())
    tally.add("ld", -(-pieces * lanes // WARP), units, nbytes)
    tally.affine("st", 0, 1, 4, 4, _burst_grid(variant, p))


def _check_channels(where: str, variant: str, p: dict) -> None:
    _whole_warps(where, p)
    _fits(where, p)
    _int_in(where, p, "streams", 1, 1 << 24)
    _int_in(where, p, "chunk", 2048, 1 << 30)
    _int_in(where, p, "seed", 0, 2**31 - 1)
    chunk, stride, nbytes = p["chunk"], p["stride"], 4 * p["n"]
    if chunk & (chunk - 1):
        raise ValueError(f"{where}: chunk={chunk} is not allowed; chunk must be a power of two")
    if variant == "random":
        if stride:
            raise ValueError(f"{where}: stride={stride} is not allowed; stride must be 0 for "
                             "the random placement")
        if nbytes < chunk or p["streams"] > 1 << ((nbytes // chunk).bit_length() - 1):
            raise ValueError(f"{where}: streams={p['streams']} chunks do not fit the power-of-two "
                             f"number of chunk slots of n={p['n']} floats")
    else:
        s = stride or chunk
        if s & (s - 1) or s < 32:
            raise ValueError(f"{where}: stride={stride} is not allowed; stride must be 0 or a "
                             "power of two >= 32")
        end = p["streams"] * chunk if s < chunk else (p["streams"] - 1) * s + chunk
        if end > nbytes:
            raise ValueError(f"{where}: streams={p['streams']} chunks of {chunk} bytes at stride "
                             f"{s} need {end} bytes; n={p['n']} floats hold {nbytes}")
    _recorded(where, p, "placement", variant)
    _recorded(where, p, "grid", _channels_grid(variant, p))


def _gen_channels(tally, axis, variant: str, p: dict) -> None:
    """dram_channels: every warp-wide load is 32 lanes x 16 bytes at byte off = step * 2048
    + j * 512 + 16 lane of its chunk.  A piece (the stride below the chunk, else the chunk)
    of 512 bytes or more: one contiguous, 512-byte-aligned run.  A smaller piece s: lane l
    at w s + (16 l // s) streams s + 16 l % s; moving to another load adds a multiple of
    512 streams bytes, so the units depend only on w s modulo the unit: warps w = 0 ..
    units/s - 1 stand for their residues."""
    streams, chunk = p["streams"], p["chunk"]
    per_warp = chunk // 512                                  # load instructions per warp
    s = min(p["stride"] or chunk, chunk) if variant == "strided" else chunk
    g = tally.g["ld"]
    if s >= 512:
        tally.affine("ld", 0, WARP, 16, 16, streams * per_warp)
    else:
        lane = 16 * np.arange(WARP, dtype=np.int64)
        pattern = (lane // s) * streams * s + lane % s
        period = max(1, g // s)
        for w in range(min(period, streams)):
            warps = len(range(w, streams, period))
            r = coalesce_warps((w * s + pattern)[None, :], 16, g, np.ones((1, WARP), bool))
            tally.add("ld", warps * per_warp, int(r.transactions.sum()) * warps * per_warp,
                      int(r.bytes_requested.sum()) * warps * per_warp)
    tally.affine("st", 0, 1, 4, 4, _channels_grid(variant, p))


#: The families this module models (see gpumem.model._launch for the keys); ``width``,
#: ``placement`` and ``grid`` are what a LaunchRecord carries beside the variant (None:
#: not given).  dram_burst is counted piece by piece: its cost grows with ``pieces``.
FAMILIES = {
    "dram_stream": {"variants": ("float", "float2", "float4"),
                    "params": {"n": _REQ, "unroll": 1, "grid": 132, "block": 256, "width": None},
                    "gen": _gen_stream, "launch": _launch(_stream_grid), "check": _check_stream},
    "dram_burst": {"variants": ("gather",),
                   "params": {"n": _REQ, "pieces": _REQ, "piece": 32, "seed": 0, "block": 256,
                              "grid": None},
                   "gen": _gen_burst, "launch": _launch(_burst_grid), "check": _check_burst},
    "dram_channels": {"variants": ("strided", "random"),
                      "params": {"n": _REQ, "streams": _REQ, "stride": 0, "chunk": 65536,
                                 "seed": 0, "block": 256, "placement": None, "grid": None},
                      "limits": {"stride": (0, 1 << 40)},
                      "gen": _gen_channels, "launch": _launch(_channels_grid),
                      "check": _check_channels},
}
