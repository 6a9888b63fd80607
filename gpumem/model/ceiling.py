"""Ceilings: what a path of the memory card can deliver once its known overheads are taken
off the published figure, one named and sourced factor at a time.

A datasheet states a line rate (PCIe 5.0 x16: 64 GB/s each way; NVLink 4 on an H200:
450 GB/s each way) or a DRAM peak; no copy reaches it, and the gap between the two is the
question users of bandwidth tools ask most.  Each function here starts from the published
figure and multiplies in the overheads that are known and sourced -- the link's encoding,
the headers each packet carries for its payload, the clock the SMs ran at -- so that the
card can show *published -> ceiling -> measured*, and the rest of the gap (measured over
ceiling) is what the counters must explain.

* :func:`pcie` -- a PCIe link: its encoding (8b/10b, 128b/130b) and each transaction
  layer packet's framing, header and CRC around its payload (the negotiated maximum
  payload size).
* :func:`nvlink` -- NVLink: a header flit per packet of payload (the copy engine's
  256-byte packets against an SM's 128-byte ones).
* :func:`per_clock` -- an SM-side figure stated per clock (L1: bytes/clock/SM) at the clock
  the SMs ran at, against the maximum clock the datasheet's figure assumes.
* :func:`dram` -- device memory: the memory clock the GPU reports against the datasheet's
  figure (refresh and read/write turnaround are not itemised: no published figure for
  HBM3/HBM3e gives them, so they stay in the measured gap, where the DRAM counters show them).

Pure Python, every figure a parameter.

>>> from gpumem.model import ceiling
>>> c = ceiling.pcie(5, 16)
>>> round(c.start_gbps, 1), round(c.gbps, 1)
(64.0, 57.6)
>>> [o.what for o in c.overheads]
['128b/130b encoding', 'TLP framing, header and LCRC per 256-byte payload']
>>> round(ceiling.nvlink(18, 25.0, payload=256).gbps, 1)
423.5
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import _check

__all__ = ["Overhead", "Ceiling", "pcie", "tlp_bytes_per_payload_byte", "nvlink", "per_clock",
           "dram", "PCIE_GT_S", "TLP_FRAMING_BYTES", "TLP_HEADER_BYTES",
           "NVLINK_HEADER_BYTES", "SOURCES"]

#: Where each overhead's figure comes from: a short name (what a table shows) -> the
#: source in full.
SOURCES = {
    "PCIe Base Spec 3.0-5.0":
        "PCI Express Base Specification (PCI-SIG), revisions 3.0-5.0: 8b/10b encoding for "
        "2.5 and 5 GT/s, 128b/130b from 8 GT/s; a TLP's 4-byte STP framing token and 4-byte "
        "LCRC around its header and payload; a memory write with a 64-bit address has a "
        "4-DW (16-byte) header, a completion with data a 3-DW (12-byte) one",
    "Foley & Danskin 2017":
        "Foley and Danskin, 'Ultra-Performance Pascal GPU and NVLink Interconnect', IEEE Micro "
        "37(2), 2017: a packet is a 16-byte header flit and up to 256 bytes of data in 16-byte "
        "flits; an SM's load or store moves a 128-byte line, the copy engine 256-byte packets",
    "clock64 / %globaltimer":
        "the datasheet's per-clock figures assume the maximum SM clock (cudaDevAttrClockRate); "
        "the clock the SMs ran at is measured in the same run (clock64 against %globaltimer)",
    "the GPU's attributes":
        "the memory clock and bus width the GPU reports (cudaDevAttrMemoryClockRate, "
        "cudaDevAttrGlobalMemoryBusWidth), two transfers a clock",
}
_PCIE, _NVLINK, _CLOCK, _DRAM = SOURCES
#: GT/s per lane of each PCIe generation.
PCIE_GT_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}
#: Bytes around each TLP's payload besides its header: the STP framing token 4, LCRC 4.
TLP_FRAMING_BYTES = 8
#: A TLP's header: a memory write with a 64-bit address has 4 DW (the GPU writing host
#: memory, device -> host); a completion carrying read data 3 DW (host memory read by the
#: GPU, host -> device).
TLP_HEADER_BYTES = {"write": 16, "completion": 12}
#: NVLink's header flit per packet.
NVLINK_HEADER_BYTES = 16


@dataclass(frozen=True)
class Overhead:
    """One overhead: what it is, the factor it leaves of the rate (<= 1 for a cost), and
    where the figure comes from (a key of :data:`SOURCES`)."""
    what: str
    factor: float
    source: str

    def as_dict(self) -> dict:
        return {"what": self.what, "factor": self.factor, "source": self.source,
                "source_detail": SOURCES.get(self.source, self.source)}


@dataclass(frozen=True)
class Ceiling:
    """``start_gbps`` (the published figure, ``start`` says what it is) times every
    overhead's factor: :attr:`gbps`."""
    start_gbps: float
    start: str
    overheads: tuple[Overhead, ...] = field(default_factory=tuple)

    @property
    def gbps(self) -> float:
        v = self.start_gbps
        for o in self.overheads:
            v *= o.factor
        return v

    def as_dict(self) -> dict:
        return {"start_GB/s": self.start_gbps, "start": self.start, "GB/s": self.gbps,
                "overheads": [o.as_dict() for o in self.overheads]}

    def text(self) -> str:
        """One line: ``64.0 GB/s (PCIe 5.0 x16) x 0.985 128b/130b encoding x ... = 57.6``."""
        parts = [f"{self.start_gbps:,.1f} GB/s ({self.start})"]
        parts += [f"x {o.factor:.3f} {o.what}" for o in self.overheads]
        return " ".join(parts) + f" = {self.gbps:,.1f} GB/s"


def tlp_bytes_per_payload_byte(max_payload: int = 256, tlp: str = "write") -> float:
    """The link's bytes per payload byte of full TLPs of ``max_payload`` bytes: (payload +
    framing + header) / payload, ``tlp`` "write" (4-DW header) or "completion" (3-DW)."""
    fn = "ceiling.tlp_bytes_per_payload_byte"
    mps = _check.index(fn, "max_payload", max_payload, lo=128, hi=4096)
    kind = _check.choice(fn, "tlp", tlp, tuple(TLP_HEADER_BYTES))
    return (mps + TLP_FRAMING_BYTES + TLP_HEADER_BYTES[kind]) / mps


def pcie(generation: int, lanes: int, *, max_payload: int = 256, tlp: str = "write") -> Ceiling:
    """A PCIe link of ``generation`` (1-5) and ``lanes``, each way: the line rate, its
    encoding, and a TLP's framing, header and CRC per ``max_payload`` bytes (the negotiated
    maximum payload size; 256 bytes is what GPUs and their root ports usually agree on).
    ``tlp``: the packets the data travels in, "write" (the GPU writing host memory: 4-DW
    headers) or "completion" (the GPU reading host memory: the data comes back in
    completions, 3-DW headers)."""
    fn = "ceiling.pcie"
    gen = _check.index(fn, "generation", generation, lo=1, hi=max(PCIE_GT_S))
    lanes = _check.index(fn, "lanes", lanes, lo=1, hi=32)
    mps = _check.index(fn, "max_payload", max_payload, lo=128, hi=4096)
    kind = _check.choice(fn, "tlp", tlp, tuple(TLP_HEADER_BYTES))
    start = PCIE_GT_S[gen] * lanes / 8.0
    enc = (Overhead("8b/10b encoding", 8 / 10, _PCIE) if gen <= 2 else
           Overhead("128b/130b encoding", 128 / 130, _PCIE))
    what = "TLP" if kind == "write" else "completion TLP"
    tlp_ = Overhead(f"{what} framing, header and LCRC per {mps}-byte payload",
                    1 / tlp_bytes_per_payload_byte(mps, kind), _PCIE)
    return Ceiling(start, f"PCIe {gen}.0 x{lanes} line rate", (enc, tlp_))


def nvlink(links: int, gbps_per_link: float, *, payload: int = 256, ways: int = 1) -> Ceiling:
    """NVLink: ``links`` x ``gbps_per_link`` each way (the datasheet's rate) x ``ways`` (1,
    or 2 for both directions at once), less a 16-byte header flit per packet of
    ``payload`` bytes (256: the copy engine; 128: an SM's loads and stores)."""
    fn = "ceiling.nvlink"
    links = _check.index(fn, "links", links, lo=1)
    rate = _check.positive(fn, "gbps_per_link", gbps_per_link)
    payload = _check.index(fn, "payload", payload, lo=16, hi=256)
    ways = _check.index(fn, "ways", ways, lo=1, hi=2)
    start = f"{links} NVLinks x {rate:g} GB/s" + (", both ways" if ways == 2 else "")
    return Ceiling(links * rate * ways, start, (
        Overhead(f"a {NVLINK_HEADER_BYTES}-byte header per {payload}-byte packet",
                 payload / (payload + NVLINK_HEADER_BYTES), _NVLINK),))


def per_clock(published_gbps: float, max_clock_mhz: float, clock_mhz: float | None,
              what: str = "the published figure") -> Ceiling:
    """An SM-side rate stated at the maximum clock, at the clock the SMs ran at
    (``clock_mhz``; None: unknown, no factor)."""
    fn = "ceiling.per_clock"
    start = _check.positive(fn, "published_gbps", published_gbps)
    top = _check.positive(fn, "max_clock_mhz", max_clock_mhz)
    if clock_mhz is None:
        return Ceiling(start, what)
    ran = _check.positive(fn, "clock_mhz", clock_mhz)
    return Ceiling(start, what, (Overhead(f"SMs at {ran:,.0f} of {top:,.0f} MHz", ran / top,
                                          _CLOCK),))


def dram(published_gbps: float, theoretical_gbps: float | None) -> Ceiling:
    """Device memory: the datasheet's figure, scaled to the memory clock and bus width the
    GPU reports (``theoretical_gbps``; None: unknown, no factor)."""
    fn = "ceiling.dram"
    start = _check.positive(fn, "published_gbps", published_gbps)
    if theoretical_gbps is None:
        return Ceiling(start, "published")
    th = _check.positive(fn, "theoretical_gbps", theoretical_gbps)
    return Ceiling(start, "published", (Overhead(
        f"the memory clock the GPU reports ({th:,.0f} GB/s)", th / start, _DRAM),))
