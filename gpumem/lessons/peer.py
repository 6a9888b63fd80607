"""Lesson: the peer GPU, the level below device memory.

With peer access on, another GPU's memory is mapped into this one's address space: a
kernel's load to it crosses the link (NVLink on SXM GPUs; ``nvidia-smi topo -m`` names
it) and comes back about three times as late as a load from device memory, and the copy
engine moves a whole buffer across at the link's rate.  This lesson measures the
level three ways, each beside :mod:`gpumem.model.peer`:

* :func:`copy_sweep` -- the copy engine (``cudaMemcpyPeerAsync``) from 4 bytes to 1 GiB,
  peer access off (staged by the driver) and on, one way and both ways at once, and
  the host-staged copy as the baseline: latency and bandwidth on one curve.
* :func:`loads_sweep` -- an SM's loads (and, separately, stores) over the link:
  :func:`peer_copy` with its source (or its destination) on the peer, by blocks per SM,
  loads in flight per thread and load width: Little's law over the link.
* :func:`latency_sweep` -- :func:`peer_chase`, one dependent load after another into the
  other GPU's memory, beside the same chase in this GPU's device memory.

Every function takes the two GPUs as ``src`` and ``dst`` (the data's GPU and the other;
for the kernels, the GPU that runs them is ``dst``'s: it reads ``src``'s memory) and
switches peer access on where it needs it (:func:`gpumem.enable_peer_access`), leaving
it on.  Without two GPUs that reach each other, the sweeps return the model's columns
alone.
"""
from __future__ import annotations

import contextlib
import statistics
from typing import Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..model import ceiling as mc
from ..model import dram as dm
from ..model import peer as pm
from ..runtime import nccl
from ..runtime.args import _checked, _given, _indices, arg_row
from ..runtime.table import Table
from ..tools import card
from ..tools import headline as hl
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools.sweep import _choices, _flag, _int, _ints, _need_gpu, _repeat

__all__ = ["peer_copy", "peer_chase", "chase_ring", "peer_pairs", "memcpy_peer", "copy_sweep",
           "loads_sweep", "latency_sweep", "collectives_sweep", "teaching_all_reduce",
           "WIDTHS", "COPY_CASES",
           "COPY_SIZES", "COLLECTIVE_SIZES"]

Array = Union[np.ndarray, DeviceArray]

#: peer_copy's widths: variant -> bytes per lane per load.
WIDTHS = {"float": 4, "float2": 8, "float4": 16}
#: peer_copy's loads in flight per thread (its C argument table's).
UNROLLS = tuple(arg_row("peer_copy", "unroll")["allowed"])
#: The copy engine's cases: what :func:`copy_sweep` measures at each size.
COPY_CASES = ("access off", "access on", "both ways", "host staged")
#: The copy sweep's sizes: 4 B to 1 GiB, every fourth power of two.
COPY_SIZES = tuple(1 << k for k in range(2, 31, 4))
#: The largest buffer a sweep allocates on each GPU: 1 GiB.
MAX_BUFFER = 1 << 30


# ---- the kernels ---------------------------------------------------------------------------
def peer_copy(a: Array, *, width: str = "float4", unroll: int = 4, grid: int = 264,
              block: int = 512, out: DeviceArray | None = None):
    """Copy ``a`` into a new array (or ``out``) with an SM kernel on the current GPU.

    ``a`` or ``out`` may live on another GPU this one has peer access to: the SMs then
    load (``a`` there) or store (``out`` there) over the link.  Tile ``t`` (``block *
    unroll`` vectors of ``width``) belongs to block ``t % grid``; thread ``i`` loads
    vectors ``t*block*unroll + j*block + i``, j = 0..unroll-1, before its first store, so
    each warp has ``32 * width * unroll`` bytes on their way.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, any shape
    width : {"float4", "float2", "float"}
        Bytes per load and store per lane: 16, 8 or 4.
    unroll : {1, 2, 4, 8, 16}
        Independent loads per thread per round.
    grid, block : int
        Blocks (1..2^20; default 264, two per H200 SM) and threads per block (whole
        warps, 32..1024).
    out : DeviceArray, optional
        float32, ``a``'s shape, on the current GPU or a peer.

    Returns
    -------
    The copy: a DeviceArray on the current GPU (or ``out``), an ndarray for an ndarray
    ``a`` without ``out``.
    """
    _given("peer_copy", a=a)
    return _core.peer_copy(a, width=width, **_indices("peer_copy", unroll=unroll, grid=grid,
                                                      block=block), out=out)


def peer_chase(chain: Array, *, steps: int = 4096, warmup: int = 256) -> dict:
    """One thread of the current GPU follows ``chain`` (``j = chain[j]`` from 0):
    ``warmup`` steps, then ``steps`` timed ones, each load waiting for the last.

    ``chain`` (int32, 1-D; :func:`chase_ring` makes one) may live on a peer GPU.
    Returns ``{"cycles": SM cycles per step, "ns": nanoseconds per step (the GPU's
    global timer), "end": the index it stopped at}``.
    """
    _given("peer_chase", chain=chain)
    r = _core.peer_chase(chain, **_indices("peer_chase", steps=steps, warmup=warmup))
    if r is None:                         # arguments checked only (gpumem._names._checking)
        return None
    r = np.asarray(r.get() if isinstance(r, DeviceArray) else r)
    return {"cycles": float(r[0]), "ns": float(r[1]), "end": int(r[2])}


def chase_ring(nbytes: int, *, stride: int = 4096, seed: int = 0) -> np.ndarray:
    """A chain for :func:`peer_chase`: ``nbytes // 4`` int32 entries whose nodes, one every
    ``stride`` bytes, form one cycle through all of them in a seeded random order (so no
    prefetcher guesses the next).  Entry 0 is a node; the others hold 0."""
    fn = "chase_ring"
    stride = _int(fn, "stride", stride, 4, 1 << 30)
    if stride % 4:
        raise ValueError(f"{fn}: stride={stride} is not allowed; stride must be a multiple of 4 "
                         "bytes (one int32 entry)")
    nbytes = _int(fn, "nbytes", nbytes, stride, MAX_BUFFER)
    seed = _int(fn, "seed", seed, 0, 2**32 - 1)
    n, step = nbytes // 4, stride // 4
    nodes = np.arange(0, n - n % step if n % step else n, step, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(nodes[1:]) if len(nodes) > 1 else nodes[:0]
    cycle = np.concatenate(([0], order))
    chain = np.zeros(n, np.int32)
    chain[cycle] = np.roll(cycle, -1)
    return chain


def chase_reference(chain: np.ndarray, steps: int, warmup: int = 0) -> int:
    """The index :func:`peer_chase` ends on after ``warmup + steps`` steps, by NumPy."""
    chain = np.asarray(chain)
    j = 0
    for _ in range(int(warmup) + int(steps)):
        j = int(chain[j])
        j = j if 0 <= j < len(chain) else 0
    return j


# ---- the GPUs ------------------------------------------------------------------------------
def peer_pairs() -> list[tuple[int, int]]:
    """Every ordered pair of this machine's GPUs ``(device, peer)`` in which ``device`` can
    reach ``peer``'s memory (:func:`gpumem.can_access_peer`); empty with fewer than two."""
    n = runtime.device_count()
    return [(d, p) for d in range(n) for p in range(n) if d != p and _core.can_access_peer(d, p)]


def _pair(fn: str, src, dst, here: bool = True) -> tuple[int, int]:
    """Two GPUs' indices, distinct; with ``here``, GPUs of this machine."""
    hi = max(runtime.device_count() - 1, 0) if here else None
    src, dst = _int(fn, "src", src, 0, hi), _int(fn, "dst", dst, 0, hi)
    if src == dst:
        raise ValueError(f"{fn}: src and dst are both device {src}; the peer lesson needs two "
                         "GPUs")
    return src, dst


def _measurable(src: int, dst: int) -> str | None:
    """Why the pair cannot be measured here, or None when it can."""
    if runtime.device_count() < 2:
        return f"{runtime.device_count()} GPU here: the peer lesson needs two"
    if not (_core.can_access_peer(dst, src) and _core.can_access_peer(src, dst)):
        return f"GPUs {src} and {dst} cannot reach each other's memory (no peer access)"
    return None


def _access(src: int, dst: int, on: bool) -> None:
    for d, p in ((src, dst), (dst, src)):
        (_core.enable_peer_access if on else _core.disable_peer_access)(d, p)


def _gpu(fn: str, src, dst, measure: bool) -> tuple[int, int, bool]:
    """The pair, and whether to measure (two GPUs with peer access, ``measure`` true)."""
    measure = _flag(fn, "measure", measure)
    here = measure and runtime.is_available() and runtime.device_count() >= 2
    src, dst = _pair(fn, src, dst, here)
    return src, dst, here and _measurable(src, dst) is None


def _why_not(src: int, dst: int, measure: bool) -> str:
    """The title's note of a sweep that measured nothing."""
    if not runtime.is_available():
        return "no GPU"
    if not measure:
        return "measure=False"
    return _measurable(src, dst) or "no GPU pair"


def memcpy_peer(nbytes: int, *, src: int = 0, dst: int = 1, way: str = "one",
                repeat: int = 10) -> dict:
    """Time the copy engine moving ``nbytes`` from GPU ``src`` to GPU ``dst``
    (``cudaMemcpyPeerAsync``, CUDA events on ``src``'s stream, median of ``repeat`` after
    two warm-ups), with peer access as it stands.  ``way``: ``"one"``; ``"both"`` (the
    copy back from ``dst`` at the same time: GB/s counts both); ``"staged"`` (through a
    pinned host buffer, device to host to device).  Returns ``{"ms", "GB/s"}`` (the
    median) and ``"GB/s min"``, ``"GB/s max"`` over the ``"runs"``."""
    fn = "memcpy_peer"
    nbytes = _int(fn, "nbytes", nbytes, 4, MAX_BUFFER)
    way = _choices(fn, "way", way, ("one", "both", "staged"))[0]
    repeat = _repeat(fn, repeat)
    _need_gpu()
    src, dst = _pair(fn, src, dst)
    n = (nbytes + 3) // 4
    ones = np.ones(n, np.float32)            # a source of written bytes (never copy garbage)
    a = runtime.to_device(ones, device=src)
    b = runtime.empty((n,), np.float32, device=dst)
    kw = {}
    if way == "both":
        kw = {"back_src": runtime.to_device(ones, device=dst),
              "back_dst": runtime.empty((n,), np.float32, device=src)}
    runs = _core._peer_memcpy(b, a, repeat=repeat, warmup=2, staged=way == "staged", **kw)
    ms = statistics.median(runs)
    moved = (2 if way == "both" else 1) * n * 4
    lo, hi, n_runs = card.gbps_spread(moved, runs)
    return {"ms": ms, "GB/s": moved / (ms * 1e-3) / 1e9, "GB/s min": lo, "GB/s max": hi,
            "runs": n_runs}


# ---- the sweeps ----------------------------------------------------------------------------
def copy_sweep(sizes: Sequence[int] = COPY_SIZES, *, cases: Sequence[str] = COPY_CASES,
               src: int = 0, dst: int = 1, repeat: int = 10, progress: bool = True,
               measure: bool = True) -> Table:
    """The copy engine between two GPUs, by size and case (:data:`COPY_CASES`): time per
    copy (µs) and GB/s, beside the model (:func:`gpumem.model.peer.copy_gbps`: a fixed
    start-up, then the link's rate each way; both ways twice that).  Peer access is
    switched off for ``"access off"`` and on for the rest, and left on."""
    fn = "copy_sweep"
    sizes = _ints(fn, "sizes", sizes, 4, MAX_BUFFER)
    cases = _choices(fn, "cases", cases, COPY_CASES, each="case")
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    src, dst, gpu = _gpu(fn, src, dst, measure)
    rows = []
    for case, nbytes in hl._steps([(c, s) for c in cases for s in sizes], fn, progress and gpu):
        k = 2 if case == "both ways" else 1
        model = None if case in ("access off", "host staged") else k * pm.copy_gbps(nbytes)
        row = {"case": case, "bytes": nbytes, "us": None, "GB/s": None, "model_GB/s": model}
        if gpu:
            _access(src, dst, case != "access off")
            way = {"both ways": "both", "host staged": "staged"}.get(case, "one")
            r = memcpy_peer(nbytes, src=src, dst=dst, way=way, repeat=repeat)
            row.update(us=r["ms"] * 1e3, **{"GB/s": r["GB/s"]})
        rows.append(row)
    if gpu:
        _access(src, dst, True)
    title = (f"The copy engine from GPU {src} to GPU {dst}: cudaMemcpyPeerAsync by size; "
             f"model: {pm.COPY_START_US:g} µs to start, then {pm.payload_gbps():.0f} GB/s each way "
             f"(NVLink 4, NV18: {pm.link_gbps():.0f} GB/s less a 16-byte header per 256-byte "
             "packet)")
    src_cols = {"model_GB/s": "model"}
    if gpu:
        src_cols.update({"us": "measured", "GB/s": "measured"})
    else:
        title += f" (not measured: {_why_not(src, dst, measure)})"
    return Table(rows, columns=["case", "bytes", "us", "GB/s", "model_GB/s"], sources=src_cols,
                 title=title)


#: loads_sweep's points: (warps per SM, width, loads in flight per thread) -- from one
#: warp's 4-byte loads (128 bytes in flight per SM) to 16 warps' 16-byte loads, four each
#: (32 KiB), across the knee of Little's law over the link (about 3.4 KiB per SM on two
#: H200s: 450 GB/s x 986 ns / 132 SMs).
LOAD_POINTS = tuple((w, width, u) for width in ("float", "float4") for u in (1, 4)
                    for w in (1, 2, 4, 8, 16)) + ((4, "float2", 4),)


def loads_sweep(directions: Sequence[str] = ("read", "write"), *, src: int = 0, dst: int = 1,
                n: int = 1 << 26, points=LOAD_POINTS, repeat: int = 10, progress: bool = True,
                measure: bool = True) -> Table:
    """An SM's loads over the link (``read``: :func:`peer_copy` on GPU ``dst`` of an array
    in GPU ``src``'s memory into its own) and its stores (``write``: of its own array into
    ``src``'s memory), one block per SM, by warps per block, width and loads in flight per
    thread (``points``: ``(warps, width, unroll)``): GB/s of the copy against the bytes in
    flight per SM, beside Little's law over the link
    (:func:`gpumem.model.peer.loads_gbps`)."""
    fn = "loads_sweep"
    directions = _choices(fn, "directions", directions, ("read", "write"), each="direction")
    n = _int(fn, "n", n, 1, MAX_BUFFER // 4)
    if isinstance(points, (str, bytes)) or not isinstance(points, (list, tuple)) or not all(
            isinstance(p, (list, tuple)) and len(p) == 3 for p in points) or not points:
        raise TypeError(f"{fn}: points must be a list of (warps, width, unroll) triples, not "
                        f"{points!r:.80}")
    points = [(_int(fn, "warps", w, 1, 32), _choices(fn, "width", width, tuple(WIDTHS))[0],
               _checked(fn, "peer_copy", "unroll", u)) for w, width, u in points]
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    src, dst, gpu = _gpu(fn, src, dst, measure)
    sms = runtime.device(dst).multiprocessors if gpu else dm.H100_SMS
    here = there = None
    if gpu:
        _access(src, dst, True)
        with runtime.Device(src):
            there = runtime.to_device(np.ones(n, np.float32))
        with runtime.Device(dst):
            here = runtime.to_device(np.ones(n, np.float32))
    rows = []
    for d, (warps, width, unroll) in hl._steps([(d, p) for d in directions for p in points], fn,
                                               progress and gpu):
        inflight = dm.bytes_in_flight(warps, WIDTHS[width], unroll)
        # a store is posted: the SM does not wait for its round trip, so Little's law
        # over the link does not bound it (not modelled)
        model = pm.loads_gbps(inflight, loads=unroll, sms=sms) if d == "read" else None
        row = {"direction": d, "warps_per_sm": warps, "width": WIDTHS[width], "unroll": unroll,
               "in_flight_per_sm": inflight, "GB/s": None, "model_GB/s": model,
               "measured/model": None}
        if gpu:
            a, out = (there, here) if d == "read" else (here, there)
            with runtime.Device(dst):
                r = runtime.bench(peer_copy, a, width=width, unroll=unroll, grid=sms,
                                  block=32 * warps, out=out, repeat=repeat, warmup=2)
            row.update(**{"GB/s": r.gbps, "measured/model": r.gbps / model if model else None})
        rows.append(row)
    title = (f"SM loads and stores over the link: peer_copy of {n * 4 / 2**20:.0f} MiB on GPU "
             f"{dst} with one block per SM, {'from' if 'read' in directions else 'into'} GPU "
             f"{src}'s memory; model: Little's law with a {pm.LOADS_ROUND_NS:.0f} ns round and "
             f"{pm.payload_gbps(pm.SM_PAYLOAD):.0f} GB/s (128-byte lines), {sms} SMs")
    src_cols = {"model_GB/s": "model"}
    if gpu:
        src_cols.update({"GB/s": "measured", "measured/model": "measured"})
    else:
        title += f" (not measured: {_why_not(src, dst, measure)})"
    return Table(rows, columns=["direction", "warps_per_sm", "width", "unroll",
                                "in_flight_per_sm", "GB/s", "model_GB/s", "measured/model"],
                 sources=src_cols, title=title)


def latency_sweep(*, src: int = 0, dst: int = 1, nbytes: int = 64 << 20, stride: int = 4096,
                  steps: int = 2048, measure: bool = True) -> Table:
    """The latency of a dependent load: :func:`peer_chase` on GPU ``dst`` through a ring of
    ``nbytes`` (:func:`chase_ring`, one node every ``stride`` bytes) in its own device
    memory, then in GPU ``src``'s over the link: cycles and ns per load, beside the
    model's peer latency."""
    fn = "latency_sweep"
    steps = _int(fn, "steps", steps, 1, 1 << 24)
    stride = _int(fn, "stride", stride, 4, 1 << 30)
    nbytes = _int(fn, "nbytes", nbytes, stride, MAX_BUFFER)
    if stride % 4:
        raise ValueError(f"{fn}: stride={stride} is not allowed; stride must be a multiple of 4 "
                         "bytes (one int32 entry)")
    src, dst, gpu = _gpu(fn, src, dst, measure)
    rows = [{"memory": "device memory", "cycles": None, "ns": None, "model_ns": None},
            {"memory": "peer GPU", "cycles": None, "ns": None,
             "model_ns": pm.PEER_LATENCY_NS}]
    if gpu:
        ring = chase_ring(nbytes, stride=stride)
        _access(src, dst, True)
        for row, where in zip(rows, (dst, src)):
            with runtime.Device(where):
                chain = runtime.to_device(ring)
            with runtime.Device(dst):
                r = peer_chase(chain, steps=steps, warmup=min(steps, 256))
            row.update(cycles=r["cycles"], ns=r["ns"])
    title = (f"A dependent load: one thread of GPU {dst} chasing a {nbytes >> 20} MiB ring (a "
             f"node every {stride} bytes) in its own memory and in GPU {src}'s")
    src_cols = {"model_ns": "model"}
    if gpu:
        src_cols.update({"cycles": "measured", "ns": "measured"})
    else:
        title += f" (not measured: {_why_not(src, dst, measure)})"
    return Table(rows, columns=["memory", "cycles", "ns", "model_ns"], sources=src_cols,
                 title=title)


#: collectives_sweep's sizes: 1 MiB to 1 GiB, every fourth power of two.
COLLECTIVE_SIZES = (1 << 20, 16 << 20, 256 << 20, 1 << 30)


def _buffers(collective: str, nbytes: int, devices: Sequence[int]):
    """Send and receive buffers on each GPU for ``collective`` of ``nbytes`` as nccl-tests
    counts them: the rank's buffer (all_reduce, broadcast), the gathered whole (all_gather)
    or the scattered whole (reduce_scatter)."""
    k, n = len(devices), nbytes // 4
    part = n // k
    counts = {"all_gather": (part, part * k), "reduce_scatter": (part * k, part)}
    s, r = counts.get(collective, (n, n))
    sends, recvs = [], []
    for d in devices:
        with runtime.Device(d):
            sends.append(runtime.to_device(np.ones(s, np.float32)))
            recvs.append(runtime.empty((r,), np.float32))
    return sends, recvs


def teaching_all_reduce(ins: Sequence[DeviceArray], outs: Sequence[DeviceArray] | None = None,
                        *, shots: int = 1, repeat: int = 1) -> tuple[list, float]:
    """The all-reduce written with peer loads, to set beside NCCL's: ``ins`` one float32
    DeviceArray per GPU (all of one size); every GPU ends with the sum of all of them (in
    rank order: the same bits everywhere).  ``shots=1``: each GPU reads every peer's whole
    input over the link and sums it all (the one-shot all-reduce: k - 1 inputs cross
    into each GPU); ``shots=2``: GPU g sums its 1/k part of every input and writes it
    into every GPU's output (reduce-scatter, then all-gather, by stores: 2(k - 1)/k of an
    input crosses each way, NCCL's ring volume).  Peer access is switched on between
    every pair.  Returns ``(outs, median ms of repeat runs)`` (CUDA events on the first
    GPU, every GPU waited for)."""
    fn = "teaching_all_reduce"
    shots = _int(fn, "shots", shots, 1, 2)
    repeat = _repeat(fn, repeat)
    for name, arrays in (("ins", ins), ("outs", outs)):
        if (arrays is not None or name == "ins") and (
                not isinstance(arrays, (list, tuple)) or not arrays
                or not all(isinstance(x, DeviceArray) for x in arrays)):
            raise TypeError(f"{fn}: {name} must be a list of gpumem.DeviceArray, one per GPU")
    ins = list(ins)
    devs = [x.device for x in ins]
    for d in devs:
        for e in devs:
            if d != e:
                _core.enable_peer_access(d, e)
    if outs is None:
        outs = []
        for x in ins:
            with runtime.Device(x.device):
                outs.append(runtime.empty(x.shape, np.float32))
    ms = _core._peer_all_reduce(ins, list(outs), shots=shots, repeat=repeat, warmup=0)
    return list(outs), statistics.median(ms)


#: NCCL's collectives queued back to back between one pair of events (nccl-tests times
#: 20): the host's time to queue them (ctypes, a group of calls per GPU) hides behind the
#: GPUs' work but for the first.
INNER = 10
#: The teaching all-reduce's rows in collectives_sweep: name -> shots.
TEACHING = {"one-shot (peer loads)": 1, "two-shot (peer loads)": 2}


def collectives_sweep(collectives: Sequence[str] = nccl.COLLECTIVES + tuple(TEACHING),
                      sizes: Sequence[int] = COLLECTIVE_SIZES, *,
                      devices: Sequence[int] | None = None, repeat: int = 10,
                      progress: bool = True, measure: bool = True) -> Table:
    """NCCL's collectives (float32 sums) over ``devices`` (default every GPU), one process
    with one communicator per GPU, and beside them the teaching all-reduce
    (:func:`teaching_all_reduce`, one-shot and two-shot), by size: the time (CUDA events on
    the first GPU's stream, median of ``repeat`` after two warm-ups) and nccl-tests'
    algorithm and bus bandwidth (:func:`gpumem.model.peer.bus_bandwidth`; the teaching
    rows as an all-reduce), beside the link's rate each way, which the bus bandwidth
    approaches.  Without NCCL or two GPUs: the model's column."""
    fn = "collectives_sweep"
    collectives = _choices(fn, "collectives", collectives, nccl.COLLECTIVES + tuple(TEACHING),
                           each="collective")
    sizes = _ints(fn, "sizes", sizes, 4, MAX_BUFFER)
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    measure = _flag(fn, "measure", measure)
    n_gpus = runtime.device_count() if measure and runtime.is_available() else 0
    devs = list(range(n_gpus)) if devices is None else _ints(fn, "devices", devices, 0,
                                                             max(n_gpus - 1, 0))
    if len(set(devs)) != len(devs):
        raise ValueError(f"{fn}: devices={devs!r} names a GPU twice")
    why = None
    if len(devs) < 2:
        why = f"{n_gpus} GPU here: collectives need two" if measure else "no GPU"
    elif any(_measurable(a, b) for a in devs for b in devs if a != b):
        why = next(_measurable(a, b) for a in devs for b in devs if a != b and _measurable(a, b))
    else:
        try:
            nccl.version()
        except nccl.NcclError as e:
            why = str(e)
    k = max(len(devs), 2)
    rows = []
    comms = nccl.Communicators(devs) if why is None else None
    try:
        for c, nbytes in hl._steps([(c, s) for c in collectives for s in sizes], fn,
                                   progress and comms is not None):
            row = {"collective": c, "bytes": nbytes, "us": None, "algbw_GB/s": None,
                   "busbw_GB/s": None, "link_GB/s": pm.link_gbps()}
            if comms is not None:
                sends, recvs = _buffers("all_reduce" if c in TEACHING else c, nbytes, devs)
                if c in TEACHING:
                    _, ms = teaching_all_reduce(sends, recvs, shots=TEACHING[c], repeat=repeat)
                    # (one kernel per GPU between the events: no Python between them)
                else:   # ten back to back between the events, as nccl-tests times them
                    with runtime.Device(devs[0]):
                        ms = statistics.median(_core._time_calls(
                            lambda: [comms.run(c, sends, recvs) for _ in range(INNER)],
                            repeat, 2)) / INNER
                alg = pm.algorithm_bandwidth(nbytes, ms * 1e-3)
                bus = pm.bus_bandwidth("all_reduce" if c in TEACHING else c, alg, k)
                row.update(us=ms * 1e3, **{"algbw_GB/s": alg, "busbw_GB/s": bus})
            rows.append(row)
    finally:
        if comms is not None:
            comms.close()
    title = (f"NCCL collectives over GPUs {', '.join(map(str, devs)) or '(none)'}: float32 sums, "
             "algorithm and bus bandwidth as nccl-tests counts them")
    src_cols = {"link_GB/s": "model"}
    if why is None:
        src_cols.update({"us": "measured", "algbw_GB/s": "measured", "busbw_GB/s": "measured"})
    else:
        title += f" (not measured: {why})"
    return Table(rows, columns=["collective", "bytes", "us", "algbw_GB/s", "busbw_GB/s",
                                "link_GB/s"], sources=src_cols, title=title)


# ---- gpumem report: the headline, the card and the full sweeps ---------------------------------
def _pair_here(measure: bool) -> tuple[int, int] | None:
    """(src, dst): the first pair of GPUs that reach each other, where measuring; else None."""
    if not measure:
        return None
    pairs = peer_pairs()
    return (pairs[0][1], pairs[0][0]) if pairs else None


def _not_here() -> str:
    n = runtime.device_count()
    return f"{n} GPU{'s' if n != 1 else ''} here, none with a peer it can reach"


def _measure(src: int, dst: int, quick: bool) -> dict:
    """The headline's and the card's numbers, GPU ``dst`` against GPU ``src``: the copy
    engine one way and both ways (GB/s), an SM's reads (GB/s) and a dependent load in
    device memory and in the peer's (ns, cycles)."""
    from ..runtime import nvml

    big, rep = (64 if quick else 256) << 20, card.CARD_RUNS
    _access(src, dst, True)
    counting = nvml.available()
    with nvml.LinkBytes([src, dst]) if counting else contextlib.nullcontext() as one_moved:
        one = memcpy_peer(big, src=src, dst=dst, repeat=rep)
    with nvml.LinkBytes([src, dst]) if counting else contextlib.nullcontext() as both_moved:
        both = memcpy_peer(big, src=src, dst=dst, way="both", repeat=rep)
    reads = loads_sweep(("read",), src=src, dst=dst, n=big // 4, points=((16, "float4", 4),),
                        repeat=rep, progress=False)
    lat = latency_sweep(src=src, dst=dst, steps=512 if quick else 2048)
    return {"bytes": big, "copy_GB/s": one["GB/s"], "both_GB/s": both["GB/s"],
            "copy_spread": (one["GB/s min"], one["GB/s max"], one["runs"]),
            "both_spread": (both["GB/s min"], both["GB/s max"], both["runs"]),
            # the link's raw bytes (headers too) per payload byte the copy sent
            "copy_raw_per_data": one_moved.overhead(src, "tx") if counting else None,
            "both_raw_per_data": both_moved.overhead(src, "tx") if counting else None,
            "sm_read_GB/s": reads["GB/s"][0], "device_ns": lat["ns"][0], "peer_ns": lat["ns"][1],
            "peer_cycles": lat["cycles"][1]}


def _headline(measure: bool, quick: bool) -> list[dict]:
    big = (64 if quick else 256) << 20
    mod = {"copy_GB/s": pm.copy_gbps(big), "latency_ns": pm.PEER_LATENCY_NS,
           "link_GB/s": pm.link_gbps()}
    mtext = (f"{pm.copy_gbps(big):,.0f} GB/s one way for {big >> 20} MiB ({pm.payload_gbps():.0f} "
             f"GB/s, the NV18 line rate less packet headers, after {pm.COPY_START_US:g} µs to "
             "start); "
             f"{pm.PEER_LATENCY_NS:,.0f} ns a dependent load")
    what = "the peer GPU: copy engine one way, an SM's peer reads, a peer chase"
    take = "a peer GPU is the next level: the link's rate is a tenth of device memory's"
    if not measure:
        return [hl._unmeasured("peer", what, "cudaMemcpyPeer GB/s, peer_copy GB/s and a peer "
                               "chase's ns between two GPUs", model=mod, model_text=mtext,
                               takeaway=take)]
    pair = _pair_here(measure)
    if pair is None:
        return [hl._row("peer", what, model=mod, model_text=mtext, takeaway=take,
                        measured_text=f"not measured: {_not_here()} (the lesson needs two)")]
    src, dst = pair
    m = _measure(src, dst, quick)
    meas = {"copy_GB/s": m["copy_GB/s"], "sm_read_GB/s": m["sm_read_GB/s"],
            "latency_ns": m["peer_ns"], "latency_cycles": m["peer_cycles"]}
    text = (f"GPU {dst} <- {src}: copy engine {m['copy_GB/s']:,.0f} GB/s, SM reads "
            f"{m['sm_read_GB/s']:,.0f} GB/s, a dependent load {m['peer_ns']:,.0f} ns "
            f"({m['peer_cycles']:,.0f} cycles; device memory {m['device_ns']:,.0f} ns)")
    return [hl._row("peer", what, measured=meas, model=mod, measured_text=text,
                    model_text=mtext, takeaway=take)]


def _card(measure: bool, quick: bool) -> list[dict]:
    """The peer GPU on the memory card, below device memory: the copy engine one way and
    both ways (GB/s) beside the published NVLink rate, and a dependent load's latency (ns,
    cycles); measured where two GPUs reach each other, else the published figures and a
    note of why not."""
    entry, _ = card.card_reference(measure)
    pair = _pair_here(measure)
    m = _measure(*pair, quick) if pair else {}
    link = f"GPU {pair[0]} <-> {pair[1]}" if pair else ""
    why = "" if pair or not measure else f" (not measured: {_not_here()})"
    big = m.get("bytes", (64 if quick else 256) << 20) >> 20
    rows = []
    for level, key, fig, ways, how in (
            ("peer GPU, one way", "copy", "nvlink_gbps", 1, f"cudaMemcpyPeerAsync of {big} MiB, "
             f"access on, the median of {card.CARD_RUNS}{why}"),
            ("peer GPU, both ways", "both", "nvlink_both_gbps", 2, f"cudaMemcpyPeerAsync of {big} "
             f"MiB each way at once, the median of {card.CARD_RUNS}{why}")):
        kw = card.published_figure(entry, fig)
        if kw:      # the copy engine's 256-byte packets, each with its header, every link
            links = kw["published_gbps"] / ways / pm.NVLINK4_LINK_GBPS
            if links == int(links):
                kw["ceiling"] = mc.nvlink(int(links), pm.NVLINK4_LINK_GBPS, payload=256,
                                          ways=ways)
        per = m.get(f"{key}_raw_per_data")
        if per is not None:
            kw.update(why=f"{per:.3f} link bytes per payload byte (NVML raw/data)", why_value=per)
        rows.append(card.card_row(level, "peer", size_text_=link, gbps=m.get(f"{key}_GB/s"),
                                  spread=m.get(f"{key}_spread"), how=how, **kw))
    lat = card.card_row("peer GPU, latency", "peer", size_text_=link, ns=m.get("peer_ns"),
                        cycles=m.get("peer_cycles"),
                        how=f"peer_chase: one thread, dependent loads into the peer's "
                            f"memory{why}")
    # on the card's figure: the chase's ring (latency_sweep's 64 MiB) on the peer's path
    lat.update(working_set=64 << 20, chase="peer")
    rows.append(lat)
    return rows


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    pair = _pair_here(measure) or (0, 1)
    src, dst = pair
    rep = 3 if quick else 10
    sizes = COPY_SIZES[:-1] if quick else COPY_SIZES
    return [copy_sweep(sizes, src=src, dst=dst, repeat=rep, progress=progress, measure=measure),
            loads_sweep(src=src, dst=dst, n=(1 << 24) if quick else (1 << 26), repeat=rep,
                        progress=progress, measure=measure),
            latency_sweep(src=src, dst=dst, steps=512 if quick else 2048, measure=measure),
            collectives_sweep(sizes=COLLECTIVE_SIZES[:-1] if quick else COLLECTIVE_SIZES,
                              repeat=rep, progress=progress, measure=measure)]


# ---- compute-sanitizer: every variant once, on small awkward sizes -----------------------------
def _sanitize() -> None:
    """Every variant of every family of this lesson, once, on this GPU and, where there is
    one, across to a peer (tools/sanitize_calls.py)."""
    pairs = peer_pairs()
    where = [None] + ([pairs[0]] if pairs else [])
    for pair in where:
        if pair is not None:
            _access(pair[0], pair[1], True)
        for width in WIDTHS:
            for unroll in UNROLLS:
                for n, grid, block in ((1, 1, 32), (1003, 3, 96), (50001, 7, 256)):
                    x = _f32(n)
                    if pair is None:
                        peer_copy(x, width=width, unroll=unroll, grid=grid, block=block)
                        continue
                    with runtime.Device(pair[1]):
                        a = runtime.to_device(x)
                    with runtime.Device(pair[0]):
                        peer_copy(a, width=width, unroll=unroll, grid=grid, block=block)
        ring = chase_ring(1 << 16, stride=256)
        if pair is None:
            peer_chase(ring, steps=100, warmup=3)
        else:
            with runtime.Device(pair[1]):
                chain = runtime.to_device(ring)
            with runtime.Device(pair[0]):
                peer_chase(chain, steps=100, warmup=3)
            for way in ("one", "both", "staged"):
                memcpy_peer(4099 * 4, src=pair[1], dst=pair[0], way=way, repeat=1)
            for n in (1, 7, 4099):
                ins = []
                for d in pair:
                    with runtime.Device(d):
                        ins.append(runtime.to_device(_f32(n)))
                for shots in (1, 2):
                    teaching_all_reduce(ins, shots=shots)


# ---- what the shared tests read -------------------------------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): a second GPU it reaches, the copy
    engine at 390 GB/s (780 both ways; 380-395 over 10 runs), 1.07 link bytes per payload
    byte, SM reads at 360 GB/s and a peer load of 1,000 ns (2,000 cycles) against 600 ns in
    device memory."""
    return {"peer_pairs": lambda: [(0, 1), (1, 0)],
            "_measure": lambda src, dst, quick: {
                "bytes": 64 << 20, "copy_GB/s": 390.0, "both_GB/s": 780.0, "sm_read_GB/s": 360.0,
                "device_ns": 600.0, "peer_ns": 1000.0, "peer_cycles": 2000.0,
                "copy_spread": (380.0, 395.0, 10), "both_spread": (760.0, 790.0, 10),
                "copy_raw_per_data": 1.07, "both_raw_per_data": 1.07}}


def _arguments(st) -> dict:
    """peer_chase's chain: a ring (:attr:`Lesson.arguments`)."""
    return {"peer_chase": st.sampled_from((64, 1024, 4096)).map(
        lambda b: {"chain": chase_ring(b, stride=64)})}


def _cheap(function: str) -> dict:
    """On two GPUs the sweeps' defaults copy up to 1 GiB per point: while the property
    tests draw their arguments, the sweeps find no pair to measure and memcpy_peer's
    copies are stood in for (the real ones run in tests/test_peer.py; :attr:`Lesson.cheap`)."""
    from types import SimpleNamespace

    if function in LESSON.sweeps:
        return {"_measurable": lambda src, dst: "stood in while the property tests draw"}
    if function == "memcpy_peer":
        return {"_core": SimpleNamespace(
            _peer_memcpy=lambda dst, src, repeat, warmup, staged, **kw: [1.0] * repeat)}
    return {}


LESSON = Lesson(
    name="peer",
    idea="the peer GPU over NVLink: copy engine against SM loads, Little's law over the link, "
         "a peer chase, NCCL's collectives beside an all-reduce written with peer loads "
         "(two GPUs)",
    families=("peer_copy", "peer_chase"),
    exports=("peer_copy", "peer_chase", "chase_ring", "peer_pairs", "memcpy_peer",
             "teaching_all_reduce"),
    sweeps=("copy_sweep", "loads_sweep", "latency_sweep", "collectives_sweep"),
    notebooks=("15_peer",),
    benchmark="peer",
    headline=_headline,
    report_sweeps=_report_sweeps,
    card=_card,
    sanitize=_sanitize,
    stand_ins=_stand_ins,
    cheap=_cheap,
    arguments=_arguments,
)
