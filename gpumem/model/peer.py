"""The peer GPU on paper: another GPU's memory as the level below device memory.

Pure Python, figures as parameters.  The defaults are two H200s linked by NVLink 4
(``nvidia-smi topo -m``: NV18): 18 links of 25 GB/s each way (NVIDIA's H100/H200 SXM
datasheets: 900 GB/s of NVLink, both ways together), so 450 GB/s each way on the
wire, and the latency of a dependent load from one GPU into the other's memory as
gpumem's notes measured it on 2026-11-28: 1,952 cycles, about 986 ns (a pointer chase
from GPU 0 through a 64 MiB ring in GPU 1's memory).

* :func:`copy_seconds`, :func:`copy_gbps` -- a copy engine's copy of ``nbytes``: a
  fixed start-up time, then the link's rate; the curve of latency and bandwidth
  against size on one plot.
* :func:`loads_gbps` -- SM loads over the link: the dram lesson's Little's law
  (:func:`gpumem.model.dram.little_bandwidth`) with the link's latency and rate and
  no DRAM banks to queue at.
* :func:`bus_bandwidth`, :func:`algorithm_bandwidth` -- collectives reported as
  nccl-tests reports them: algorithm bandwidth is the bytes of one rank's buffer over
  the time; bus bandwidth multiplies it by the share of those bytes each link must
  carry (all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n,
  broadcast and reduce 1), so that it compares with the link's rate at any n.

>>> from gpumem.model import peer
>>> peer.link_gbps()                       # NV18 each way
450.0
>>> round(peer.copy_gbps(1 << 30), 1)      # 1 GiB: the rate, less the start-up
448.1
>>> round(peer.copy_gbps(4096), 2)         # 4 KiB: the start-up is all of it
0.41
>>> round(peer.bus_bandwidth("all_reduce", 300.0, n=8), 1)
525.0
"""
from __future__ import annotations

from . import _check
from .dram import DRAM_ROUND_NS, little_bandwidth

__all__ = ["NVLINK4_LINK_GBPS", "H200_NVLINK_LINKS", "PEER_LATENCY_NS", "PEER_LATENCY_CYCLES",
           "COPY_START_US", "BUS_FACTORS", "link_gbps", "copy_seconds", "copy_gbps",
           "loads_gbps", "bus_bandwidth", "algorithm_bandwidth"]

#: GB/s each way of one NVLink 4 link (NVIDIA: 50 GB/s per link, both ways together).
NVLINK4_LINK_GBPS = 25.0
#: NVLink links of an H100 or H200 SXM (NV18).
H200_NVLINK_LINKS = 18
#: A dependent load from one H200 into its NVLink peer's memory (measured, 2026-11-28).
PEER_LATENCY_NS = 986.0
PEER_LATENCY_CYCLES = 1952
#: The fixed cost of one copy between the GPUs, before the first byte moves: the order
#: of a copy engine's launch and the link's round trip (a parameter; the lesson fits it).
COPY_START_US = 10.0
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


def copy_seconds(nbytes: int, *, start_us: float = COPY_START_US,
                 gbps: float | None = None) -> float:
    """Seconds to copy ``nbytes`` between the GPUs: ``start_us`` then ``gbps`` (default
    the NV18 line rate each way)."""
    fn = "copy_seconds"
    n = _check.index(fn, "nbytes", nbytes, lo=0)
    start = 0.0 if start_us == 0 else _check.positive(fn, "start_us", start_us)
    rate = link_gbps() if gbps is None else _check.positive(fn, "gbps", gbps)
    return start * 1e-6 + n / (rate * 1e9)


def copy_gbps(nbytes: int, *, start_us: float = COPY_START_US,
              gbps: float | None = None) -> float:
    """The rate a copy of ``nbytes`` shows (bytes over :func:`copy_seconds`): GB/s;
    0 for 0 bytes."""
    s = copy_seconds(nbytes, start_us=start_us, gbps=gbps)
    return _check.index("copy_gbps", "nbytes", nbytes) / s / 1e9 if s > 0 else 0.0


def loads_gbps(in_flight_per_sm: float, *, loads: int = 1, sms: int = 132,
               latency_ns: float = PEER_LATENCY_NS, peak_gbps: float | None = None) -> float:
    """GB/s that ``in_flight_per_sm`` bytes of loads per SM sustain across the link:
    Little's law with the link's latency and rate (``peak_gbps``, default the NV18 rate
    each way) and a streaming warp's round (the dram model's ``round_ns``); a link has
    no DRAM banks to queue at (``bank_ns`` 0)."""
    return little_bandwidth(in_flight_per_sm, loads=loads, sms=sms, latency_ns=latency_ns,
                            peak_gbps=link_gbps() if peak_gbps is None else peak_gbps,
                            bank_ns=0.0, round_ns=DRAM_ROUND_NS, spread_ns=0.0)


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
