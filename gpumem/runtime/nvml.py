"""NVML, the driver's management library, loaded at run time: the conditions a run measured
under, and the bytes that crossed each GPU's NVLinks.

* :func:`conditions` -- the SM and memory clocks now, their maxima and the application
  clocks, the power limit, ECC, persistence mode, the driver, the PCIe link (generation and
  width, current and maximum), the active NVLinks, and why the clocks are held back now (the
  clocks-event reasons: power cap, thermal slowdown...).  Each figure is ``None`` where
  NVML is missing or does not say: a report shows it as unknown.
* :func:`nvlink_bytes` and :class:`LinkBytes` -- NVML's NVLink throughput counters, payload
  (``data``) and payload with the protocol's headers (``raw``), sent and received, summed over
  the links: what ``nvidia-smi nvlink -gt d`` and ``-gt r`` print.  Their difference across
  a piece of work is the bytes it moved over the link; raw over data is the protocol's cost.

``libnvidia-ml.so.1`` comes with the driver (``GPUMEM_NVML`` may name another); nothing is
loaded until a figure is asked for.  NVML names a GPU by its PCI address, not by CUDA's
index: each query looks the GPU up by :attr:`DeviceInfo.pci_bus_id`.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Sequence

from .. import _core

__all__ = ["available", "CONDITIONS", "conditions", "nvlink_bytes", "pcie_bytes", "LinkBytes",
           "CLOCK_EVENT_REASONS"]

_SUCCESS, _NOT_SUPPORTED = 0, 3
_CLOCK_SM, _CLOCK_MEM = 1, 2
#: NVML field ids (nvml.h): NVLink throughput in KiB, payload and raw, sent and received;
#: the number of NVLinks up.
_FI_DATA_TX, _FI_DATA_RX, _FI_RAW_TX, _FI_RAW_RX, _FI_LINK_COUNT = 138, 139, 140, 141, 91
#: ... and the PCIe link's bytes sent and received.
_FI_PCIE_TX, _FI_PCIE_RX = 197, 198
#: nvmlClocksEventReasons bits (nvml.h) -> what each says.
CLOCK_EVENT_REASONS = {
    0x1: "idle", 0x2: "application clock setting", 0x4: "software power cap",
    0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown", 0x80: "hardware power brake", 0x100: "display clock",
}


class _Value(ctypes.Union):
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint),
                ("ulVal", ctypes.c_ulong), ("ullVal", ctypes.c_ulonglong),
                ("sllVal", ctypes.c_longlong), ("siVal", ctypes.c_int),
                ("usVal", ctypes.c_ushort)]


class _FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint32), ("scopeId", ctypes.c_uint32),
                ("timestamp", ctypes.c_int64), ("latencyUsec", ctypes.c_int64),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int), ("value", _Value)]


_lock = threading.Lock()
_lib: Any = None            # the CDLL once started; False when it cannot be
_handles: dict[str, ctypes.c_void_p] = {}


def _library():
    """The started library, or None (missing, or nvmlInit failed)."""
    global _lib
    with _lock:
        if _lib is None:
            try:
                lib = ctypes.CDLL(os.environ.get("GPUMEM_NVML") or "libnvidia-ml.so.1")
                init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
                _lib = lib if init() == _SUCCESS else False
            except (OSError, AttributeError):
                _lib = False
        return _lib or None


def available() -> bool:
    """True when NVML loads and starts here (it never raises)."""
    return _library() is not None


def _handle(device: int):
    lib = _library()
    if lib is None:
        return None, None
    bus = _core.device(device)["pci_bus_id"]
    if bus not in _handles:
        h = ctypes.c_void_p()
        fn = getattr(lib, "nvmlDeviceGetHandleByPciBusId_v2", None) or \
            lib.nvmlDeviceGetHandleByPciBusId
        if fn(bus.encode(), ctypes.byref(h)) != _SUCCESS:
            return lib, None
        _handles[bus] = h
    return lib, _handles[bus]


def _device(fn: str, device: int | None) -> int:
    """``device`` checked (None: the calling thread's current GPU)."""
    if device is None:
        return _core._get_device()
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"{fn}: device={device!r} must be an int, a GPU's index")
    n = _core.device_count()
    if not 0 <= device < n:
        raise ValueError(f"{fn}: device={device} is not a GPU here (there are {n})")
    return device


def _uint(lib, h, name: str, *args) -> int | None:
    fn = getattr(lib, name, None)
    if fn is None:
        return None
    v = ctypes.c_uint(0)
    return v.value if fn(h, *args, ctypes.byref(v)) == _SUCCESS else None


#: nvmlValueType_t (nvml.h) -> the union member that holds it; the counters are integers.
_VALUE_MEMBER = {1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _fields(lib, h, ids: Sequence[int], scope: int = 0) -> list[int | None]:
    """Field values ``ids`` at ``scope`` (a link's index, for the per-link fields), each read
    as the type NVML says it has."""
    vals = (_FieldValue * len(ids))()
    for v, f in zip(vals, ids):
        v.fieldId, v.scopeId = f, scope
    if lib.nvmlDeviceGetFieldValues(h, len(ids), vals) != _SUCCESS:
        return [None] * len(ids)
    return [getattr(v.value, _VALUE_MEMBER.get(v.valueType, "ullVal"))
            if v.nvmlReturn == _SUCCESS else None for v in vals]


def _grown(before: int, after: int) -> int | None:
    """How much a byte counter grew from ``before`` to ``after``.  NVML's PCIe counters are
    32-bit on the H200's driver (580): they wrap every 4 GiB, and a block that crossed the
    wrap reads after < before (a card run of 11 x 64 MiB read -4.7 bytes per payload byte);
    so a fall between two values that fit 32 bits is one wrap.  Any other fall (a counter
    reset) is unknown: None."""
    if after >= before:
        return after - before
    if before < 1 << 32 and after < 1 << 32:
        return after + (1 << 32) - before
    return None


#: NVLinks a GPU may have (nvml.h's NVML_NVLINK_MAX_LINKS): the throughput fields are per
#: link (the scope), and a GPU's total is their sum.
_MAX_LINKS = 18


#: The figures :func:`conditions` gives (besides ``nvml``, whether NVML answered).
CONDITIONS = ("sm_clock_mhz", "memory_clock_mhz", "max_sm_clock_mhz", "max_memory_clock_mhz",
              "applications_sm_clock_mhz", "applications_memory_clock_mhz", "power_limit_w",
              "ecc", "persistence_mode", "driver", "pcie_generation", "pcie_width",
              "pcie_max_generation", "pcie_max_width", "pcie_max_payload", "nvlinks",
              "clock_event_reasons")


def _max_payload(bus: str, root: str = "/sys/bus/pci/devices") -> int | None:
    """The negotiated PCIe maximum payload size of the GPU at ``bus``, from its PCI
    configuration space in sysfs (the PCI Express capability's Device Control register,
    bits 7:5: 128 << value); None where it cannot be read (an unprivileged process sees
    only the first 64 bytes of the space)."""
    path = os.path.join(root, bus.lower(), "config")
    try:
        with open(path, "rb") as f:
            cfg = f.read(256)
    except OSError:
        return None
    if len(cfg) < 0x40:
        return None
    at, seen = cfg[0x34] & 0xFC, set()
    while 0x40 <= at < len(cfg) - 10 and at not in seen:
        seen.add(at)
        if cfg[at] == 0x10:                          # the PCI Express capability
            ctl = int.from_bytes(cfg[at + 8:at + 10], "little")
            return 128 << ((ctl >> 5) & 0x7)
        at = cfg[at + 1] & 0xFC
    return None


def conditions(device: int | None = None) -> dict:
    """The conditions GPU ``device`` (default: the current one) is in now, from NVML:
    clocks in MHz (``sm_clock_mhz`` now, ``max_``, ``applications_``), ``power_limit_w``,
    ``ecc`` (True/False), ``persistence_mode``, ``driver``, ``pcie_generation``/``_width``
    (now and ``max``), ``pcie_max_payload`` (bytes, from sysfs where readable), ``nvlinks``
    (links up), ``clock_event_reasons`` (names).  A figure NVML
    does not give is None; without NVML (or, for the current device, without a GPU) every
    figure is None and ``nvml`` is False."""
    out: dict[str, Any] = dict.fromkeys(CONDITIONS)
    if device is None and _core.device_count() == 0:
        out["nvml"] = False             # no GPU: nothing to ask about
        return out
    device = _device("conditions", device)
    out["pcie_max_payload"] = _max_payload(_core.device(device)["pci_bus_id"])
    lib, h = _handle(device)
    out["nvml"] = h is not None
    if h is None:
        return out
    for key, fn, arg in (("sm_clock_mhz", "nvmlDeviceGetClockInfo", _CLOCK_SM),
                         ("memory_clock_mhz", "nvmlDeviceGetClockInfo", _CLOCK_MEM),
                         ("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", _CLOCK_SM),
                         ("max_memory_clock_mhz", "nvmlDeviceGetMaxClockInfo", _CLOCK_MEM),
                         ("applications_sm_clock_mhz", "nvmlDeviceGetApplicationsClock",
                          _CLOCK_SM),
                         ("applications_memory_clock_mhz", "nvmlDeviceGetApplicationsClock",
                          _CLOCK_MEM)):
        out[key] = _uint(lib, h, fn, arg)
    for key, fn in (("pcie_generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
                    ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
                    ("pcie_max_generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
                    ("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth")):
        out[key] = _uint(lib, h, fn)
    mw = _uint(lib, h, "nvmlDeviceGetEnforcedPowerLimit")
    out["power_limit_w"] = None if mw is None else mw / 1000.0
    cur, pend = ctypes.c_int(0), ctypes.c_int(0)
    if lib.nvmlDeviceGetEccMode(h, ctypes.byref(cur), ctypes.byref(pend)) == _SUCCESS:
        out["ecc"] = bool(cur.value)
    pm = _uint(lib, h, "nvmlDeviceGetPersistenceMode")
    out["persistence_mode"] = None if pm is None else bool(pm)
    buf = ctypes.create_string_buffer(96)
    if lib.nvmlSystemGetDriverVersion(buf, 96) == _SUCCESS:
        out["driver"] = buf.value.decode(errors="replace")
    fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    bits = ctypes.c_ulonglong(0)
    if fn is not None and fn(h, ctypes.byref(bits)) == _SUCCESS:
        out["clock_event_reasons"] = [w for b, w in CLOCK_EVENT_REASONS.items()
                                      if bits.value & b]
    out["nvlinks"] = _fields(lib, h, [_FI_LINK_COUNT])[0]
    return out


def nvlink_bytes(device: int | None = None) -> dict | None:
    """GPU ``device``'s NVLink counters since the driver started, summed over its links (NVML
    counts each link on its own: on two H200s a 1 GiB copy showed 1/18 of it on link 0), in
    bytes: ``data_tx``, ``data_rx`` (payload), ``raw_tx``, ``raw_rx`` (payload with the
    protocol's headers); None where NVML or the counters are missing.  NVML counts KiB per
    link: a difference is good to a few KiB."""
    device = _device("nvlink_bytes", device)
    lib, h = _handle(device)
    if h is None:
        return None
    ids = [_FI_DATA_TX, _FI_DATA_RX, _FI_RAW_TX, _FI_RAW_RX]
    total, links = [0] * len(ids), 0
    for link in range(_MAX_LINKS):       # each link's counters (scope = the link's index)
        vals = _fields(lib, h, ids, scope=link)
        if any(v is None for v in vals):
            continue                     # no such link, or not counted
        total = [t + v for t, v in zip(total, vals)]
        links += 1
    if not links:
        return None
    return dict(zip(("data_tx", "data_rx", "raw_tx", "raw_rx"), (v * 1024 for v in total)))


def pcie_bytes(device: int | None = None) -> dict | None:
    """GPU ``device``'s PCIe byte counters (``tx``, ``rx``: bytes sent and received over its
    host link since the driver started), where NVML has them (recent drivers); else None."""
    device = _device("pcie_bytes", device)
    lib, h = _handle(device)
    if h is None:
        return None
    vals = _fields(lib, h, [_FI_PCIE_TX, _FI_PCIE_RX])
    return None if any(v is None for v in vals) else {"tx": vals[0], "rx": vals[1]}


class LinkBytes:
    """The NVLink bytes each of ``devices`` sent and received across a block of work::

        with nvml.LinkBytes([0, 1]) as moved:
            ...work, synchronized before the block ends...
        moved.bytes[0]["data_tx"]      # payload bytes GPU 0 sent
        moved.overhead(0, "tx")        # raw / data: the protocol's bytes per payload byte

    ``link="pcie"`` reads the host link's counters instead (:func:`pcie_bytes`: ``tx`` and
    ``rx``).  ``bytes`` is None for a GPU whose counters NVML does not give.  The work must
    be finished (``gm.synchronize()``) before the block ends; NVML refreshes its counters
    on its own schedule, so a block of less than a few MiB reads as noise."""

    def __init__(self, devices: Sequence[int] | None = None, link: str = "nvlink"):
        if link not in ("nvlink", "pcie"):
            raise ValueError(f"LinkBytes: link={link!r} must be 'nvlink' or 'pcie'")
        n = _core.device_count()
        self.devices = list(range(n)) if devices is None else \
            [_device("LinkBytes", d) for d in devices]
        self._read = nvlink_bytes if link == "nvlink" else pcie_bytes
        self.bytes: dict[int, dict | None] = {}
        self._before: dict[int, dict | None] = {}

    def __enter__(self) -> "LinkBytes":
        self._before = {d: self._read(d) for d in self.devices}
        return self

    def __exit__(self, *exc) -> None:
        for d in self.devices:
            a, b = self._before.get(d), self._read(d)
            grown = None if a is None or b is None else {k: _grown(a[k], b[k]) for k in a}
            self.bytes[d] = None if grown is None or None in grown.values() else grown

    def overhead(self, device: int, way: str = "tx") -> float | None:
        """raw / data bytes of ``device`` in direction ``way`` ("tx" or "rx"); None when
        unknown or nothing moved."""
        if way not in ("tx", "rx"):
            raise ValueError(f"LinkBytes.overhead: way={way!r} must be 'tx' or 'rx'")
        b = self.bytes.get(device)
        if not b or not b.get(f"data_{way}"):
            return None
        return b[f"raw_{way}"] / b[f"data_{way}"]
