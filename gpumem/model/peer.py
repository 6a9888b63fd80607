"""The peer GPU on paper: another GPU's memory as the level below device memory.

Pure Python, figures as parameters.  The defaults are two H200s linked by NVLink 4
(``nvidia-smi topo -m``: NV18): 18 links of 25 GB/s each way (NVIDIA's H100/H200 SXM
datasheets: 900 GB/s of NVLink, both ways together), so 450 GB/s each way on the
wire, less a 16-byte header per packet (:func:`gpumem.model.ceiling.nvlink`): 424 GB/s
for the copy engine's 256-byte packets, 400 GB/s for an SM's 128-byte lines.  The
latency of a dependent load from one GPU into the other's memory as gpumem's notes
measured it on 2026-11-28: 1,952 cycles, about 986 ns (a pointer chase from GPU 0
through a 64 MiB ring in GPU 1's memory).

* :func:`copy_seconds`, :func:`copy_gbps` -- a copy engine's copy of ``nbytes``: a
  fixed start-up time (4.8 µs on a non-blocking stream, measured), then the link's
  ceiling for 256-byte packets; the curve of latency and bandwidth against size on one
  plot.
* :func:`loads_gbps` -- SM loads over the link: the dram lesson's Little's law
  (:func:`gpumem.model.dram.little_bandwidth`) with the round a streaming warp's loads
  take over the link under load (:data:`LOADS_ROUND_NS`, 390 ns: the slope of the
  measured sweep below its knee; the one-lane chase's 986 ns is not it) and the link's
  ceiling for 128-byte lines, no DRAM banks to queue at.
* :func:`link_bytes` -- the bytes a payload costs on the wire, headers included (what
  NVML's raw counters count against its data counters).
* :func:`bus_bandwidth`, :func:`algorithm_bandwidth` -- collectives reported as
  nccl-tests reports them: algorithm bandwidth is the bytes of one rank's buffer over
  the time; bus bandwidth multiplies it by the share of those bytes each link must
  carry (all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n,
  broadcast and reduce 1), so that it compares with the link's rate at any n.

>>> from gpumem.model import peer
>>> peer.link_gbps()                       # NV18 each way
450.0
>>> round(peer.copy_gbps(1 << 30), 1)      # 1 GiB: the ceiling, less the start-up
422.7
>>> round(peer.copy_gbps(4096), 2)         # 4 KiB: the start-up is all of it
0.85
>>> peer.link_bytes(1 << 20, payload=128) / (1 << 20)   # an SM's lines: 16 bytes per 128
1.125
>>> round(peer.bus_bandwidth("all_reduce", 300.0, n=8), 1)
525.0
"""
from __future__ import annotations

from . import _check
from .ceiling import NVLINK_HEADER_BYTES, nvlink as _nvlink_ceiling
from .dram import little_bandwidth

__all__ = ["NVLINK4_LINK_GBPS", "H200_NVLINK_LINKS", "PEER_LATENCY_NS", "PEER_LATENCY_CYCLES",
           "COPY_START_US", "LOADS_ROUND_NS", "COPY_PAYLOAD", "SM_PAYLOAD", "BUS_FACTORS",
           "link_gbps", "payload_gbps", "link_bytes", "copy_seconds", "copy_gbps",
           "loads_gbps", "bus_bandwidth", "algorithm_bandwidth"]

#: GB/s each way of one NVLink 4 link (NVIDIA: 50 GB/s per link, both ways together).
NVLINK4_LINK_GBPS = 25.0
#: NVLink links of an H100 or H200 SXM (NV18).
H200_NVLINK_LINKS = 18
#: A dependent load from one H200 into its NVLink peer's memory (measured, 2026-11-28).
PEER_LATENCY_NS = 986.0
PEER_LATENCY_CYCLES = 1952
#: The fixed cost of one copy between the GPUs, before the first byte moves: a copy
#: engine's launch and the link's round trip; a 4-byte cudaMemcpyPeerAsync on a
#: non-blocking stream took 4.8 µs on two H200s (2026-11-28; 10.8 on the legacy stream).
COPY_START_US = 4.8
#: The round a streaming warp's loads take over the link under load: Little's law over the
#: measured sweep below its knee (two H200s, 2026-11-28: 43.5 GB/s from 128 bytes in flight
#: per SM on 132 SMs, 390 ns), where a one-lane dependent chase takes 986 ns.
LOADS_ROUND_NS = 390.0
#: Payload bytes per NVLink packet: the copy engine's, an SM's load or store (one line).
COPY_PAYLOAD, SM_PAYLOAD = 256, 128
#: nccl-tests' bus-bandwidth factors: the share of a rank's buffer each link carries.
BUS_FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def link_gbps(links: int = H200_NVLINK_LINKS, gbps_per_link: float = NVLINK4_LINK_GBPS) -> float:
    """The line rate each way of ``links`` links: GB/s."""
    fn = "link_gbps"
    return _check.positive(fn, "links", links, integer=True) * _check.positive(fn, "gbps_per_link",
                                                                   gbps_per_link)


def payload_gbps(payload: int = COPY_PAYLOAD, links: int = H200_NVLINK_LINKS,
                 gbps_per_link: float = NVLINK4_LINK_GBPS) -> float:
    """The payload rate each way of ``links`` links when every packet carries ``payload``
    bytes behind its header (:func:`gpumem.model.ceiling.nvlink`): GB/s."""
    return _nvlink_ceiling(links, gbps_per_link, payload=payload).gbps


def link_bytes(nbytes: int, *, payload: int = COPY_PAYLOAD) -> int:
    """The bytes ``nbytes`` of payload cost on the link in packets of ``payload`` bytes,
    each with its 16-byte header (NVML's raw count against its data count)."""
    fn = "link_bytes"
    n = _check.index(fn, "nbytes", nbytes, lo=0)
    p = _check.index(fn, "payload", payload, lo=16, hi=256)
    return n + -(-n // p) * NVLINK_HEADER_BYTES


def copy_seconds(nbytes: int, *, start_us: float = COPY_START_US,
                 gbps: float | None = None) -> float:
    """Seconds to copy ``nbytes`` between the GPUs: ``start_us`` then ``gbps`` (default
    the NV18 payload rate of the copy engine's 256-byte packets, :func:`payload_gbps`)."""
    fn = "copy_seconds"
    n = _check.index(fn, "nbytes", nbytes, lo=0)
    start = 0.0 if start_us == 0 else _check.positive(fn, "start_us", start_us)
    rate = payload_gbps() if gbps is None else _check.positive(fn, "gbps", gbps)
    return start * 1e-6 + n / (rate * 1e9)


def copy_gbps(nbytes: int, *, start_us: float = COPY_START_US,
              gbps: float | None = None) -> float:
    """The rate a copy of ``nbytes`` shows (bytes over :func:`copy_seconds`): GB/s;
    0 for 0 bytes."""
    s = copy_seconds(nbytes, start_us=start_us, gbps=gbps)
    return _check.index("copy_gbps", "nbytes", nbytes) / s / 1e9 if s > 0 else 0.0


def loads_gbps(in_flight_per_sm: float, *, loads: int = 1, sms: int = 132,
               latency_ns: float = LOADS_ROUND_NS, peak_gbps: float | None = None) -> float:
    """GB/s that ``in_flight_per_sm`` bytes of loads per SM sustain across the link:
    Little's law with the round a streaming warp's loads take over the link
    (``latency_ns``, default :data:`LOADS_ROUND_NS`, which already holds the loop's own
    time: no ``round_ns`` added) and the link's rate (``peak_gbps``, default the NV18
    payload rate of an SM's 128-byte lines, :func:`payload_gbps`); a link has no DRAM
    banks to queue at (``bank_ns`` 0)."""
    return little_bandwidth(in_flight_per_sm, loads=loads, sms=sms, latency_ns=latency_ns,
                            peak_gbps=payload_gbps(SM_PAYLOAD) if peak_gbps is None
                            else peak_gbps, bank_ns=0.0, round_ns=0.0, spread_ns=0.0)


def bus_bandwidth(collective: str, algbw_gbps: float, n: int) -> float:
    """nccl-tests' bus bandwidth of ``collective`` on ``n`` GPUs from its algorithm
    bandwidth: GB/s."""
    fn = "bus_bandwidth"
    c = _check.choice(fn, "collective", collective, tuple(BUS_FACTORS))
    ranks = _check.index(fn, "n", n, lo=2)
    return _check.positive(fn, "algbw_gbps", algbw_gbps) * BUS_FACTORS[c](ranks)


def algorithm_bandwidth(nbytes: int, seconds: float) -> float:
    """nccl-tests' algorithm bandwidth: one rank's buffer, ``nbytes``, over ``seconds``:
    GB/s."""
    fn = "algorithm_bandwidth"
    return _check.index(fn, "nbytes", nbytes, lo=0) / _check.positive(fn, "seconds", seconds) / 1e9
