"""The memory hierarchy as two ladders: how long one load waits at each level
(:func:`latency`, :func:`latency_ladder`) and how many bytes per second each
level delivers (:func:`bandwidth`, :func:`bandwidth_ladder`).

**Latency.** A pointer chase: the working set is a ring of
``n = working_set / stride`` nodes, each holding the address of the next, linked
in a pseudo-random cyclic order.  One thread -- or each lane of one warp --
follows the links; every load's address is the value the previous load
returned, so nothing overlaps and the time per step is the latency of the level
that holds the ring.  The kernel reads ``clock64()`` (SM cycles) and
``%globaltimer`` (ns) around the timed steps, so cycles and nanoseconds come
from the same run.  Rings from 1 KiB to 2 GiB step through L1, the near and the
far L2 partition and device memory; rings in shared and in constant memory
give those levels.  :func:`cache_sizes` reads the steps off the curve.

**The ring.** ``order(i)`` -- the node visited ``i``-th -- is a keyed bijection of
``[0, n)``: a 4-round Feistel network on ``ceil(log2 n)`` bits, cycle-walked
into ``[0, n)``.  Node ``order(i)`` links to ``order(i + 1 mod n)``: one cycle
through all ``n`` nodes by construction (what Sattolo's shuffle gives, without
its sequential loop), built on the device in microseconds even for 2 GiB.
:func:`chain_order` computes the same order in NumPy, so a chase's end node is
checked against the CPU (:func:`latency_reference`).

**Bandwidth.** The opposite: a full grid, every thread with four independent
16-byte loads in flight, over a working set that stays resident in one level.
``scope="block"``: every block reads all of it, so each SM keeps its own copy
(in L1 when it fits -- the per-SM level); ``scope="grid"``: the grid reads it
once per pass through ``ld.global.cg``, from L2 while it fits there, from
device memory beyond.  The ``shared`` variant reads a copy in shared memory.

Published figures from vendors and papers come from
:mod:`gpumem.runtime.published` (:func:`published_figures` tabulates a GPU's).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Sequence, Union

import numpy as np

from .. import runtime

from .. import _core
from .._core import DeviceArray
from ..runtime.args import (arg_range, _checked, _checking_only, _flag, _given, _host, _index,
                            _indices)
from ..tools.sweep import _choices, _each, _ints, _need_gpu, _progress, _repeat
from ..model.ring import chain_image, chain_order, latency_chain, latency_reference
from ..runtime.measure import device_copy
from ..runtime.published import REFERENCE_GPU, compared_with as _published
from ..runtime.table import Table
from ..tools import card, headline as hl
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools.levels import (CONSTANT_MAX, GiB, KiB, L1_SHARED_PER_SM, LATENCY_LEVELS,
                            MAX_WORKING_SET, MiB, REFERENCE_L2, SHARED_MAX, _device_or_none,
                            _read_cache_sizes, latency_levels, published_figures)

__all__ = ["Chase", "latency", "latency_reference", "chain_order", "latency_chain", "chain_image",
           "bandwidth", "bandwidth_reference", "latency_ladder", "bandwidth_ladder",
           "cache_sizes", "latency_levels", "latency_methods", "chase_rings",
           "published_figures", "LATENCY_LEVELS",
           "LATENCY_SETS", "LATENCY_VARIANTS", "LADDER_VARIANTS", "BANDWIDTH_SETS",
           "L1_SHARED_PER_SM"]

Array = Union[np.ndarray, DeviceArray]

#: The chase's paths (the latency family's variants) and the largest ring each takes.
LATENCY_VARIANTS = tuple(v[1] for v in _core.variants("latency"))
#: The paths :func:`latency_ladder` chases unless told: every variant but ``"tma"`` (the
#: copy engine's round trip needs compute capability 9.0; the memory card has its row,
#: "L2 near, TMA", and ``variants=("tma",)`` gives its ladder).
LADDER_VARIANTS = tuple(v for v in LATENCY_VARIANTS if v != "tma")
#: The kernels' limits, read from the C argument tables (``gpumem._core.args``); the
#: largest ring, the shared and the constant ring's (MAX_WORKING_SET, SHARED_MAX,
#: CONSTANT_MAX) are :mod:`gpumem.tools.levels`'s.
MAX_STRIDE = arg_range("latency", "stride")[1]
MAX_PASSES = arg_range("bandwidth", "passes")[1]
BANDWIDTH_SHARED_MAX = 48 * KiB   #: bytes of x for the bandwidth ``shared`` variant

#: The latency ladder's rings: powers of two from 1 KiB to 2 GiB, plus 48 KiB (the
#: largest shared ring), points around the L1 step (96-384 KiB) and every 4 MiB
#: from 12 to 56 MiB, where the ring outgrows first the near L2 partition and then
#: the whole L2 (:data:`REFERENCE_L2`).
LATENCY_SETS = tuple(sorted({*(1 << k for k in range(10, 32)), 48 * KiB,
                             96 * KiB, 160 * KiB, 192 * KiB, 224 * KiB, 384 * KiB,
                             *(m * MiB for m in range(12, 57, 4)), 80 * MiB, 96 * MiB}))

#: The bandwidth ladder's working sets, 16 KiB .. 4 GiB.
BANDWIDTH_SETS = tuple(sorted({16 * KiB, 32 * KiB, 48 * KiB, 64 * KiB, 96 * KiB, 128 * KiB,
                               192 * KiB, 256 * KiB, 512 * KiB,
                               *(1 << k for k in range(20, 33)), 24 * MiB, 48 * MiB, 96 * MiB}))
#: Working sets up to this are read per SM (``scope="block"``); from this up,
#: by the whole grid (``scope="grid"``); both at this size.
PER_SM_MAX = 1 * MiB
#: Bytes one timed launch moves: enough passes that a launch lasts about half a
#: millisecond at the level's rate (launch overhead is then ~1%).
TARGET_BYTES = {"block": 16e9, "grid": 4e9}


# ---- latency ------------------------------------------------------------------------
@dataclass(frozen=True)
class Chase:
    """One pointer chase: what ran and what the kernel's clocks said.

    ``cycles`` and ``ns`` are per lane, over the ``steps`` timed loads (the
    ``warmup`` loads before them are not timed); ``end`` is the node each lane
    stopped at (compare :func:`latency_reference`).  ``ring`` and ``clock`` say how it
    was measured (:func:`latency`); with ``clock="each"``, ``each`` holds every timed
    load's cycles, ``(steps, lanes)``.
    """

    working_set: int
    stride: int
    variant: str
    lanes: int
    steps: int
    warmup: int
    seed: int
    end: np.ndarray = field(repr=False)
    cycles: np.ndarray = field(repr=False)
    ns: np.ndarray = field(repr=False)
    ring: str = "shuffled"
    clock: str = "loop"
    each: np.ndarray | None = field(default=None, repr=False)

    @property
    def cycles_per_load(self) -> float:
        """SM cycles per dependent load: the timed loop's over its steps (mean over the
        lanes); with ``clock="each"``, the median of the loads' own clock() differences."""
        if self.each is not None:
            return float(np.median(self.each))
        return float(self.cycles.mean()) / self.steps

    @property
    def ns_per_load(self) -> float:
        """Nanoseconds per dependent load (mean over the lanes); with ``clock="each"``,
        :attr:`cycles_per_load` at the clock the chase ran at."""
        if self.each is not None:
            return self.cycles_per_load / self.clock_mhz * 1e3
        return float(self.ns.mean()) / self.steps

    @property
    def clock_mhz(self) -> float:
        """The SM clock during the chase: cycles over nanoseconds."""
        return float(self.cycles.sum()) / max(float(self.ns.sum()), 1e-9) * 1e3


def latency(working_set: int, *,
            variant: Literal["ca", "cg", "ldg", "shared", "constant", "tma"] = "ca",
            stride: int = 128, lanes: int = 1, steps: int = 8192, warmup: int | None = None,
            seed: int = 0, ring: Literal["shuffled", "strided"] = "shuffled",
            clock: Literal["loop", "each"] = "loop") -> Chase | None:
    """Chase a ring of ``working_set // stride`` nodes and time each dependent load.

    Before the launch (untimed) the ring is built on the device, and for the global
    paths L2 is evicted; then one warp runs: lanes ``0..lanes-1`` each start at
    position ``l * n // lanes`` of the ring, take ``warmup`` untimed steps, read
    ``clock64()`` and ``%globaltimer``, take ``steps`` timed steps and read both again.

    Parameters
    ----------
    working_set : int
        Bytes of the ring, a multiple of ``stride``, 8 .. 2**32 (``shared``: at most
        48 KiB, one block's default dynamic shared memory; ``constant``: at most 64 KiB).
    variant : {"ca", "cg", "ldg", "shared", "constant", "tma"}
        Where the ring lives and how it is read: global memory through
        ``ld.global.ca`` (L1, L2, DRAM), ``ld.global.cg`` (L2 only, L1 skipped),
        ``ld.global.nc`` (the read-only path); shared memory; ``__constant__`` memory;
        ``"tma"``: global memory, each step one 16-byte bulk copy (``cp.async.bulk``, the
        Hopper copy engine) of the node into shared memory, waited for on an mbarrier, then
        the link read there -- the round trip a TMA-fed kernel waits for (compute
        capability 9.0; an older GPU raises CudaError naming its capability).
    stride : int
        Bytes between nodes, a multiple of 8 up to 1 MiB (``"tma"``: of 16, the bulk copy's
        alignment).  The default, 128, puts
        each node in its own 128-byte line, so no two nodes share a cache line.
    lanes : int
        Chasing lanes of the warp, 1..32.  With 32, one warp-wide load asks for 32
        unrelated lines: its latency shows how the cache serves a divergent request.
    steps : int
        Timed loads per lane, 1 .. 2**20.
    warmup : int, optional
        Untimed loads per lane first.  Default: one pass over the ring
        (``ceil(n / lanes)`` steps) when it lives on chip or is at most twice the L2,
        so the timed steps meet the ring where it settles; none for larger rings,
        which are met cold (a pass over them would take long and leave little).
    seed : int
        0 .. 2**32 - 1: picks the shuffled ring's order (:func:`chain_order`).
    ring : {"shuffled", "strided"}
        ``"shuffled"``: gpumem's ring above.  ``"strided"``: the papers' (the fine-grained
        chase of Mei and Chu, Jia et al., and Luo et al. on Hopper): ``A[i] = (i + stride /
        4) % (working_set / 4)`` of 4-byte indices, visited in ascending order and read as
        ``j = A[j]`` (each step computes its address from the index).  Not with ``"tma"``.
    clock : {"loop", "each"}
        ``"loop"``: gpumem's: ``clock64()`` around all ``steps`` loads, the mean per load.
        ``"each"``: the papers': the 32-bit ``clock()`` read before and after each load,
        the loaded value stored to shared memory in between; every load's cycles come back
        (:attr:`Chase.each`; ``lanes * steps`` at most 8192) and
        :attr:`Chase.cycles_per_load` is their median.  Not with ``"tma"``.

    Returns
    -------
    Chase, or None while gpumem checks a call without running it.
    """
    ints = _indices("latency", stride=stride, lanes=lanes, steps=steps, warmup=warmup, seed=seed)
    r = _core.latency(_index("latency", "working_set", working_set), variant=variant, ring=ring,
                      clock=clock, **ints)
    if r is None or _checking_only():
        return None
    rec = _core.last_record()
    p = rec.params
    return Chase(p["working_set"], p["stride"], p["variant"], p["lanes"], p["steps"], p["warmup"],
                 p["seed"], r[0].copy(), r[1].copy(), r[2].copy(), p["ring"], p["clock"],
                 r[3:].copy() if p["clock"] == "each" else None)


# ---- bandwidth ------------------------------------------------------------------------
def bandwidth(x: Array, *, variant: Literal["read", "copy", "shared"] = "read",
              scope: Literal["grid", "block"] | None = None,
              cache: Literal["default", "ca", "cg", "ldg", "cs"] | None = None, passes: int = 1,
              blocks: int | None = None, block: int = 256, out: DeviceArray | None = None):
    """Read (or copy) ``x`` ``passes`` times with a full grid of 16-byte loads.

    Each thread has four independent float4 loads in flight per iteration of a
    stride loop (the ``n % 4`` tail floats are read by the first threads).

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, 1-D
        The working set (``4 * len(x)`` bytes; ``shared``: at most 48 KiB).
    variant : {"read", "copy", "shared"}
        ``read``: add every value into registers (block sums meet in one float64
        atomicAdd, so no load can be optimised away); ``copy``: store each value to
        the result; ``shared``: each block copies ``x`` into shared memory once,
        then reads it there ``passes`` times.
    scope : {"grid", "block"}, optional
        ``grid`` (default for read and copy): the grid's threads stride through
        ``x`` once per pass -- each byte comes from L2 while ``x`` fits there, else
        from device memory.  ``block`` (read; always for shared): every block
        strides through all of ``x`` each pass, so each SM keeps its own copy -- in
        L1 while it fits.  A copy's stores go through to L2 whatever the scope, so
        copy is grid-only.
    cache : {"default", "ca", "cg", "ldg", "cs"}, optional
        The load path (as :func:`gpumem.read_offset`'s).  Default: ``cg`` for
        ``scope="grid"`` -- with a fixed grid-stride assignment each SM re-reads the
        same slice every pass, which would otherwise stay in its L1 -- and ``ca``
        for ``scope="block"``.  Not for ``shared``.
    passes : int
        Times ``x`` is read, 1 .. 2**20.
    blocks : int, optional
        Grid size.  Default: one full wave -- every SM times the blocks of this
        kernel that fit on one (the occupancy API).
    block : int
        Threads per block, a multiple of 32 up to 1024.
    out : DeviceArray, optional
        copy: float32 of ``x``'s shape (not ``x``); read/shared: float64, shape (3,).

    Returns
    -------
    read, shared: float64 ``[sum, cycles, ns]`` -- the sum of every value read (all
    passes; times the blocks for ``scope="block"``), and the SM cycles
    (``clock64``) and nanoseconds (``%globaltimer``) thread 0 of block 0 spent in
    its passes: their ratio is the SM clock during the run.  copy: the copy of
    ``x``.  A numpy.ndarray for an ndarray ``x``, else a DeviceArray.

    ``gpumem.bench(gpumem.bandwidth, x, ...)`` reports GB/s of the bytes read (and
    written, for copy).
    """
    _given("bandwidth", x=x)
    return _core.bandwidth(x, variant=variant, scope=scope, cache=cache,
                           **_indices("bandwidth", passes=passes, blocks=blocks, block=block),
                           out=out)


def bandwidth_reference(x: np.ndarray, *, variant: str = "read", passes: int = 1,
                        blocks: int = 1, scope: str | None = None):
    """What :func:`bandwidth` returns, from NumPy: for ``read`` and ``shared`` the sum of
    every value read (float64: ``passes * sum(x)``, times ``blocks`` for block scope --
    always for ``shared``); for ``copy`` the copy of ``x``.

    The kernel adds in float32 per thread: equal to this exactly when ``x`` holds
    small integers (every partial sum below 2**24), close otherwise.
    """
    fn = "bandwidth_reference"
    variant = _checked(fn, "bandwidth", "variant", variant)
    x = _host(fn, "x", x, np.float32)
    passes = _checked(fn, "bandwidth", "passes", passes)
    blocks = _checked(fn, "bandwidth", "blocks", blocks)
    if variant == "copy":
        return x.copy()
    if scope is not None:
        scope = _checked(fn, "bandwidth", "scope", scope)
    per_block = variant == "shared" or scope == "block"
    return float(x.astype(np.float64).sum()) * passes * (blocks if per_block else 1)


# ---- the latency ladder ------------------------------------------------------------------
def _cap(variant: str) -> int:
    return SHARED_MAX if variant == "shared" else CONSTANT_MAX if variant == "constant" else \
        MAX_WORKING_SET


def latency_ladder(working_sets: Sequence[int] | None = None, *,
                   variants: Sequence[str] | str = LADDER_VARIANTS, stride: int = 128,
                   lanes: int = 1, steps: int = 8192, seed: int = 0,
                   progress: bool = True) -> Table:
    """Cycles and nanoseconds per dependent load for rings of each size, along each path.

    Parameters
    ----------
    working_sets : sequence of int, optional
        Ring sizes in bytes (each rounded down to a whole number of strides).
        Default :data:`LATENCY_SETS`: 1 KiB .. 2 GiB, denser around the L1 step and
        between 12 and 56 MiB (the near/far L2 split and the L2 step).  The
        ``shared`` path takes the sizes up to 48 KiB, ``constant`` up to 64 KiB.
    variants : sequence of {"ca", "cg", "ldg", "shared", "constant", "tma"}
        The paths (:func:`latency`'s ``variant``); default :data:`LADDER_VARIANTS`, all
        but ``"tma"``.
    stride, lanes, steps, seed
        As :func:`latency`; the warm-up is its default (one pass for rings on chip
        or up to twice the L2, none beyond).

    Returns
    -------
    Table with columns working set, stride, variant, lanes, cycles/load, ns/load,
    clock MHz and warm-up loads.  Every chase's end node is checked against
    :func:`latency_reference` (RuntimeError if one differs).  Without a GPU the
    measured columns are None.

    On an H100 the default ladder (five paths, about 40 rings for the global ones)
    takes a few seconds: its cost is the warm-up passes over the rings up to
    twice the L2 (about 5 million dependent loads per global path at stride 128).
    """
    fn = "latency_ladder"
    variants = _each(fn, "variants", variants, "latency", "variant")
    sets = _each(fn, "working_sets", LATENCY_SETS if working_sets is None else working_sets,
                 "latency", "working_set")
    stride = _checked(fn, "latency", "stride", stride)
    if stride % 8:
        raise ValueError(f"{fn}: stride={stride} is not allowed; stride must be a multiple of 8 "
                         f"bytes from 8 to {MAX_STRIDE}")
    lanes, steps = _checked(fn, "latency", "lanes", lanes), _checked(fn, "latency", "steps", steps)
    seed = _checked(fn, "latency", "seed", seed)
    progress = _flag(fn, "progress", progress)
    small = sorted({ws for ws in sets if ws < stride})
    if small:               # a ring holds at least one node: never dropped silently
        raise ValueError(f"{fn}: working_sets has {', '.join(map(str, small))}, smaller than "
                         f"stride={stride}; a ring holds at least one node of stride bytes")
    rings = sorted({ws // stride * stride for ws in sets})
    points = [(c, ws) for c in variants for ws in rings if ws <= _cap(c)]
    if not points:
        raise ValueError(f"{fn}: none of working_sets fits variants={variants} (shared: at most "
                         f"{SHARED_MAX} bytes, constant: at most {CONSTANT_MAX})")
    gpu = runtime.is_available()
    rows = []
    for variant, ws in _progress(points, len(points), fn, progress and gpu):
        row = {"working set": ws, "stride": stride, "variant": variant, "lanes": lanes,
               "cycles/load": None, "ns/load": None, "clock MHz": None, "warm-up": None}
        if gpu:
            c = latency(ws, variant=variant, stride=stride, lanes=lanes, steps=steps, seed=seed)
            ref = latency_reference(ws, stride=stride, lanes=lanes, steps=steps, warmup=c.warmup,
                                    seed=seed)
            if not np.array_equal(c.end, ref):
                raise RuntimeError(f"{fn}: the {variant} chase of {ws} bytes ended at nodes "
                                   f"{c.end.tolist()}, the CPU walk at {ref.tolist()}")
            row.update({"cycles/load": c.cycles_per_load, "ns/load": c.ns_per_load,
                        "clock MHz": c.clock_mhz, "warm-up": c.warmup})
        rows.append(row)
    title = f"latency ladder: dependent loads, stride {stride} B, {lanes} lane(s)"
    if gpu:
        title += f", {runtime.device().name}"
    else:
        title += " (no GPU: nothing measured)"
    return Table(rows, sources={c: "measured" for c in ("cycles/load", "ns/load", "clock MHz")}
                 if gpu else {}, title=title)


def cache_sizes(table: Table | None = None, *, variant: Literal["ca", "ldg"] = "ca",
                device: Any = None) -> Table:
    """Read the cache sizes off a latency ladder and set them beside the device's.

    The ``variant`` rows (one lane) of ``table`` -- by default a fresh
    :func:`latency_ladder` of that path, which needs a GPU -- are sorted by size,
    and the plateaus found: L1 (the smallest three rings), device memory (the
    largest three), the near L2 (the lowest latency past the L1 step).  A step is
    where the curve crosses a threshold between two plateaus:

    * L1: the geometric mean of the L1 and near-L2 plateaus;
    * L2 near partition: a quarter of the way from the near-L2 plateau to device
      memory -- where rings start to spill into the far partition;
    * L2: three quarters of the way -- where they no longer fit in L2 at all.

    Returns
    -------
    Table: per level its plateau (cycles/load and ns/load) and, for the three
    steps, the rings either side of it (``from``, ``to``), the crossing point
    (``measured``: log-interpolated between them) and the device's stated size
    (``stated``: the SM's unified L1 + shared memory by compute capability -- the L1
    in use is that minus the shared carveout --, half the L2, the L2), with
    ``measured / stated``.  ``device`` (a :class:`gpumem.DeviceInfo`) defaults to
    :func:`gpumem.device` where a GPU is present; without one ``stated`` is None.
    """
    fn = "cache_sizes"
    variant = _choices(fn, "variant", variant, ("ca", "ldg"))[0]
    dev = _device_or_none(fn, device)      # checked before a ladder is measured
    if table is None:
        if not runtime.is_available():
            _need_gpu()                  # raises CudaUnavailableError with the driver's reason
            raise runtime.CudaUnavailableError(f"{fn}: no GPU to measure the ladder on; pass a "
                                              "table from latency_ladder")
        table = latency_ladder(variants=(variant,), progress=False)
    elif not isinstance(table, Table):
        raise TypeError(f"{fn}: table must be a gpumem.Table from latency_ladder, not "
                        f"{type(table).__name__}")
    return _read_cache_sizes(table, variant, dev)


# ---- the bandwidth ladder ------------------------------------------------------------------
BANDWIDTH_VARIANTS = tuple(v[1] for v in _core.variants("bandwidth"))


def _bandwidth_plan(sets: list[int], variants: list[str]) -> list[tuple[str, str, int]]:
    """(variant, scope, working set) of each row: shared up to 48 KiB; read per SM up
    to :data:`PER_SM_MAX` and by the grid from it; copy by the grid from it (its
    working set is the source plus the copy)."""
    plan = []
    for v in variants:
        for ws in sets:
            if v == "shared" and 16 <= ws <= BANDWIDTH_SHARED_MAX:
                plan.append((v, "block", ws))
            if v == "read" and 16 <= ws <= PER_SM_MAX:
                plan.append((v, "block", ws))
            if v in ("read", "copy") and ws >= PER_SM_MAX:
                plan.append((v, "grid", ws))
    return plan


def bandwidth_ladder(working_sets: Sequence[int] | None = None, *,
                     variants: Sequence[str] | str = BANDWIDTH_VARIANTS, repeat: int = 5,
                     anchor: bool = True, progress: bool = True) -> Table:
    """GB/s of :func:`bandwidth` for working sets from on-chip to device memory.

    Rows: ``shared`` (sets up to 48 KiB: the scratchpad); ``read`` with
    ``scope="block"`` (sets up to 1 MiB per SM: L1 while it fits, then L2 shared
    by all SMs); ``read`` and ``copy`` with ``scope="grid"`` (1 MiB .. 4 GiB for the
    whole GPU: L2 while it fits, then device memory; a copy's working set is its
    source plus its destination).  ``passes`` is chosen so a launch moves about
    :data:`TARGET_BYTES`; each row is the median of ``repeat`` launches (after two
    warm-up launches: the set is resident when timing starts) through
    :func:`gpumem.bench`.  ``anchor`` adds ``cudaMemcpy`` device to device of 1 GiB,
    timed in the same run, as the device-memory reference.

    Columns: working set, variant, scope, cache, passes, blocks, ms, GB/s,
    GB/s per SM, clock MHz (the SM clock a read launch saw: clock64 over
    %globaltimer) and bytes/clk/SM (GB/s per SM over that clock).  Without a GPU
    the measured columns are None.  About two seconds on an H100 (most of it
    allocating and launching over the 4 GiB sets).
    """
    fn = "bandwidth_ladder"
    variants = _each(fn, "variants", variants, "bandwidth", "variant")
    sets = _ints(fn, "working_sets", BANDWIDTH_SETS if working_sets is None else working_sets,
                 16, MAX_WORKING_SET)
    repeat = _repeat(fn, repeat)
    anchor = _flag(fn, "anchor", anchor)
    progress = _flag(fn, "progress", progress)
    plan = _bandwidth_plan(sorted(set(sets)), variants)
    if not plan:
        raise ValueError(f"{fn}: no row to measure for working_sets and variants={variants}: "
                         f"shared takes working sets up to {BANDWIDTH_SHARED_MAX} bytes, read "
                         f"any, copy from {PER_SM_MAX}")
    gpu = runtime.is_available()
    sms = runtime.device().multiprocessors if gpu else None
    cols = ["working set", "variant", "scope", "cache", "passes", "blocks", "ms", "GB/s",
            "GB/s per SM", "clock MHz", "bytes/clk/SM"]
    rows = []
    for v, scope, ws in _progress(plan, len(plan), fn, progress and gpu):
        cache = "default" if v == "shared" else ("ca" if scope == "block" else "cg")
        row = dict.fromkeys(cols)
        row.update({"working set": ws, "variant": v, "scope": scope,
                    "cache": None if v == "shared" else cache})
        if gpu:
            row.update(_measure_bandwidth(v, scope, ws, repeat, sms))
        rows.append(row)
    if anchor:
        row = dict.fromkeys(cols)
        row.update({"working set": 2 * GiB, "variant": "cudaMemcpy D2D", "scope": "device"})
        if gpu:
            row.update(_memcpy_row(1 * GiB, repeat, sms))
        rows.append(row)
    title = "bandwidth ladder"
    title += f", {runtime.device().name}" if gpu else " (no GPU: nothing measured)"
    # measured in every row (passes and blocks are chosen; the kernels' clock, and so
    # bytes/clk/SM, only where a kernel reads it: not the copies)
    measured = ("ms", "GB/s", "GB/s per SM")
    return Table(rows, columns=cols, sources={c: "measured" for c in measured} if gpu else {},
                 title=title)


def _measure_bandwidth(v: str, scope: str, ws: int, repeat: int, sms: int,
                       counters: bool = False) -> dict:
    n = ws // 8 if v == "copy" else ws // 4
    x = runtime.empty((n,))
    out = runtime.empty((n,)) if v == "copy" else runtime.empty((3,), np.float64)
    kw = {"variant": v, "out": out}
    if v != "shared":
        kw["scope"] = scope
    with runtime.record() as recs:          # one pass: the grid and the bytes of a pass
        bandwidth(x, **kw)
    blocks, per_pass = recs[-1].params["blocks"], recs[-1].bytes
    passes = int(min(MAX_PASSES, max(1, round(TARGET_BYTES[scope] / max(per_pass, 1)))))
    res = runtime.bench(bandwidth, x, passes=passes, blocks=blocks, repeat=repeat, warmup=2,
                        counters=counters, **kw)
    row = {"passes": passes, "blocks": blocks, "ms": res.median_ms, "GB/s": res.gbps,
           "GB/s per SM": res.gbps / sms, "cache": res.params.get("cache") if v != "shared"
           else None, "GB/s min": res.gbps * res.median_ms / res.max_ms,
           "GB/s max": res.gbps * res.median_ms / res.min_ms, "runs": repeat}
    if res.dram_bytes is not None:          # DRAM bytes (read + written) per byte read
        row["DRAM bytes per byte"] = res.dram_bytes / (per_pass * passes)
    if v != "copy":
        _, cycles, ns = bandwidth(x, passes=passes, blocks=blocks, **kw).get()
        if ns > 0:
            clock = cycles / ns * 1e3
            row["clock MHz"] = clock
            row["bytes/clk/SM"] = res.gbps * 1e3 / (sms * clock)
    return row


def chase_rings(l2: int) -> dict[str, tuple[int, str]]:
    """The ring each level's one latency figure is chased on (the card's, and
    :func:`latency_methods`'s): level -> (bytes, path), for an L2 of ``l2`` bytes (1 MiB ..
    :data:`MAX_WORKING_SET`)."""
    l2 = _index("chase_rings", "l2", l2)
    if not MiB <= l2 <= MAX_WORKING_SET:
        raise ValueError(f"chase_rings: l2={l2} is not allowed; l2 must be {MiB}.."
                         f"{MAX_WORKING_SET} bytes")
    return {"shared": (16 * KiB, "shared"), "constant": (1 * KiB, "constant"),
            "L1": (16 * KiB, "ca"), "L2 near": (min(4 * MiB, l2 // 8) // 128 * 128, "cg"),
            "L2 far": (int(0.7 * l2) // 128 * 128, "cg"),
            "device memory": (max(256 * MiB, 8 * l2) // 128 * 128, "cg")}


def _methods(ws: int, variant: str, steps: int) -> dict[str, float]:
    """Cycles per load on ``ws``'s ring by the papers' ring and by their whole method."""
    return {card.STRIDED: latency(ws, variant=variant, steps=steps,
                                  ring="strided").cycles_per_load,
            card.PAPERS: latency(ws, variant=variant, steps=steps, ring="strided",
                                 clock="each").cycles_per_load}


def latency_methods(*, steps: int = 8192, progress: bool = False) -> Table:
    """Each level's latency (:func:`chase_rings`) three ways -- gpumem's chase, the same on
    the papers' strided ring, and the papers' whole method (that ring, ``clock()`` around
    every load) -- beside the published range, with what the ring and the clock each add."""
    fn = "latency_methods"
    steps = _ints(fn, "steps", steps, 1, 8192)[0]
    progress = _flag(fn, "progress", progress)
    _need_gpu()
    entry, _ = _published(None)
    rows = []
    rings = chase_rings(runtime.device().l2_cache_size)
    for level, (ws, v) in _progress(rings.items(), len(rings), fn, progress):
        own = latency(ws, variant=v, steps=steps).cycles_per_load
        m = _methods(ws, v, steps)
        pub = entry.latency(level) if entry else None
        rows.append({"level": level, "working set": ws, "path": v,
                     "published low": pub[0] if pub else None,
                     "published high": pub[1] if pub else None, "gpumem's chase": own, **m,
                     "ring adds": m[card.STRIDED] - own,
                     "clock() adds": m[card.PAPERS] - m[card.STRIDED]})
    return Table(rows, sources={k: "measured" for k in ("gpumem's chase", *card.METHODS,
                                                         "ring adds", "clock() adds")},
                 title=f"cycles per load three ways, on {runtime.device().name}")


def _memcpy_row(nbytes: int, repeat: int, sms: int) -> dict:
    src, dst = runtime.empty((nbytes // 4,)), runtime.empty((nbytes // 4,))
    copy = device_copy(dst, src, repeat=repeat, warmup=3)
    return {"ms": copy["median_ms"], "GB/s": copy["GB/s"], "GB/s per SM": copy["GB/s"] / sms}


# ---- gpumem report: the headline -------------------------------------------------------------
def _headline(measure: bool, quick: bool) -> list[dict]:
    entry, name = _published(None if measure else REFERENCE_GPU)
    levels = ("shared", "L1", "L2 near", "device memory")
    pub = {k: entry.latency(k) for k in levels if entry and entry.latency(k)}
    mod = {f"{k}_published_low": float(lo) for k, (lo, _) in pub.items()}
    mod.update({f"{k}_published_high": float(hi) for k, (_, hi) in pub.items()})
    mtext = (f"published {entry.key} (cycles): " + ", ".join(
        f"{k} {lo}-{hi}" for k, (lo, hi) in pub.items())) if pub else \
        f"no published latencies are known for {name}"
    what = "latency of one dependent load (pointer chase, one lane): shared, L1, L2, device memory"
    take = "each level down costs several times the one above: latency, not bandwidth, is what a chase sees"
    if not measure:
        return [hl._unmeasured("ladder", what, "cycles and ns per load on four rings, beside "
                               "the published figures", model=mod, model_text=mtext,
                               takeaway=take)]
    l2 = runtime.device().l2_cache_size or REFERENCE_L2
    steps = 2048 if quick else 8192
    rings = {"shared": (16 * KiB, "shared"), "L1": (16 * KiB, "ca"),
             "L2 near": (min(4 * MiB, l2 // 8) // 128 * 128, "ca"),
             "device memory": (max(256 * MiB, 8 * l2) // 128 * 128, "ca")}
    chases = {k: latency(ws, variant=v, steps=steps) for k, (ws, v) in rings.items()}
    meas = {f"{k}_cycles": c.cycles_per_load for k, c in chases.items()}
    meas.update({f"{k}_ns": c.ns_per_load for k, c in chases.items()})
    text = ", ".join(f"{k} {c.cycles_per_load:.0f} cycles ({c.ns_per_load:.0f} ns)"
                     for k, c in chases.items())
    ratio = chases["device memory"].cycles_per_load / chases["L1"].cycles_per_load
    return [hl._row("ladder", what, measured=meas, model=mod, measured_text=text,
                    model_text=mtext,
                    takeaway=f"device memory is {ratio:.0f}x the L1's latency here; "
                             "notebook 08 has the whole ladder and the bandwidths")]


# ---- gpumem report: the memory card (one chase, and a bandwidth where one is read, per level) -
def _card(measure: bool, quick: bool) -> list[dict]:
    entry, _ = card.card_reference(measure)
    dev = runtime.device() if measure else None
    cc = tuple(dev.compute_capability) if dev else tuple(int(x) for x in hl.MODEL_CC.split("."))
    l2 = dev.l2_cache_size if dev else int(entry.get("l2_mb", 0)) * MiB
    unified, big = L1_SHARED_PER_SM.get(cc), (256 if quick else 1024) * MiB
    dram = dev.total_memory if dev else int(entry.get("memory_gb", 0) * 1e9)
    # level, size, its unit, the chased ring (bytes, path), the bandwidth read, its figure
    # without a GPU, the compute capability's largest shared carveout per SM (the model's
    # occupancy table: 228 KiB for 9.0), as a GPU reports it
    from ..model.occupancy import ARCHS

    arch = ARCHS.get(f"{cc[0]}.{cc[1]}")
    shared = dev.shared_memory_per_multiprocessor if dev else (arch.smem_per_sm if arch else
                                                               unified)
    ring = chase_rings(l2)
    spec = [("shared", shared, "/SM", ring["shared"], ("shared", "block", 32 * KiB),
             "shared_bytes_per_clk_sm"),
            ("constant", CONSTANT_MAX, "", ring["constant"], None, None),
            ("L1", unified, "/SM (+shared)", ring["L1"], ("read", "block", 64 * KiB),
             "l1_bytes_per_clk_sm"),
            ("L2 near", l2 // 2, "", ring["L2 near"], ("read", "grid", l2 // 4 // 16 * 16),
             "l2_gbps"),
            ("L2 far", l2, "", ring["L2 far"], None, None),
            # the same near ring through the copy engine (compute capability 9.0)
            ("L2 near, TMA", l2 // 2, "", (ring["L2 near"][0], "tma"), None, None),
            ("device memory", dram, "", ring["device memory"], ("read", "grid", big),
             "memory_gbps")]
    rows = []
    for level, size, per, (ws, v), bw, fig in spec:
        if v == "tma" and cc < (9, 0):
            continue
        kw = card.published_latency(entry, level)
        per_clk = entry.get(fig) if entry and fig and fig.endswith("_per_clk_sm") else None
        if per_clk:
            kw.update(published_text=f"{per_clk} B/clk/SM", source=entry.source(fig),
                      **card.published_for(entry, fig))
        elif fig:
            kw.update(card.published_figure(entry, fig))
        how = f"chase a {card.size_text(ws)} ring ({v})" + (
            f"; read {card.size_text(bw[2])} (bandwidth {bw[0]}, scope={bw[1]})" if bw else "")
        if per_clk and dev:          # the per-clock figure at the maximum SM clock, in GB/s
            kw["published_gbps"] = per_clk * dev.multiprocessors * dev.clock_khz / 1e6
        if measure:
            steps = 2048 if quick else 8192
            c = latency(ws, variant=v, steps=steps)
            kw.update(cycles=c.cycles_per_load, ns=c.ns_per_load)
            if kw.get("published_cycles"):
                # the papers' ring, then their whole method: where a published latency
                # differs from gpumem's chase, by how much each accounts for
                kw["methods"] = _methods(ws, v, steps)
            if bw:
                # the median of the card's runs, their spread beside it; device memory's read
                # also counts the DRAM bytes it cost (the counter that says where the gap is not)
                counters = fig == "memory_gbps" and runtime.profiler_available()
                r = _measure_bandwidth(*bw, card.CARD_RUNS, dev.multiprocessors,
                                       counters=counters)
                kw.update(gbps=r["GB/s"], spread=(r["GB/s min"], r["GB/s max"], r["runs"]))
                kw.update(_card_ceiling(level, kw, r, dev, per_clock=bool(per_clk)))
        # the published size, in the datasheet's words ("80 GB": the GPU reports 79 GiB of it)
        text = f"{entry.get('memory_gb'):g} GB (published)" if level == "device memory" and \
            not dev else card.size_text(size, per)
        row = card.card_row(level, "ladder", size=size, size_text_=text, how=how, **kw)
        # where the card's figure marks the row: the ring chased, the set read, the paths
        row.update(working_set=ws, chase=v, bandwidth_working_set=bw[2] if bw else None,
                   bandwidth_path=(bw[0], bw[1]) if bw else None)
        rows.append(row)
    return rows


def _card_ceiling(level: str, kw: dict, r: dict, dev, per_clock: bool = False) -> dict:
    """``card_row`` keywords for a measured bandwidth row's ceiling and why: a figure published
    per clock (``per_clock``: L1, shared memory) at the clock the read ran at (``r["clock
    MHz"]``: clock64 over %globaltimer); device memory at the memory clock the GPU reports,
    with the DRAM bytes each byte read cost."""
    from ..model import ceiling as mc

    pub = kw.get("published_gbps")
    if not pub:
        return {}
    if per_clock:
        ran = r.get("clock MHz")
        out = {"ceiling": mc.per_clock(pub, dev.clock_khz / 1e3, ran,
                                       "published bytes/clock/SM at the maximum clock")}
        if ran:
            out.update(why=f"SM clock {ran:,.0f} of {dev.clock_khz / 1e3:,.0f} MHz",
                       why_value=ran)
        return out
    if level == "device memory":
        out = {"ceiling": mc.dram(pub, dev.theoretical_bandwidth_gbps)}
        per = r.get("DRAM bytes per byte")
        if per is not None:
            out.update(why=f"{per:.2f} DRAM bytes per byte read (counters): no waste, the rest "
                           "is in the DRAM (refresh, row switches)", why_value=per)
        return out
    return {}


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    sets = [s for s in LATENCY_SETS if s <= 64 * KiB or s in (
        1 * MiB, 4 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)] if quick else None
    variants = ("ca", "shared", "constant") if quick else LADDER_VARIANTS
    lat = latency_ladder(sets, variants=variants, steps=2048 if quick else 8192,
                         progress=progress)
    bw = [s for s in BANDWIDTH_SETS if s <= 1 << 30] if quick else None
    return [lat, bandwidth_ladder(bw, repeat=3 if quick else 5, progress=progress)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_latency():
    # every path; one node, a ring that wraps many times, 32 lanes, an odd stride
    for v in runtime.variants("latency"):
        if v.name == "tma":       # 16-byte nodes, compute capability 9.0
            if tuple(runtime.device().compute_capability) >= (9, 0):
                for ws, stride, lanes in ((16, 16, 1), (16 * 37, 16, 32), (40960, 80, 7)):
                    latency(ws, variant="tma", stride=stride, lanes=lanes, steps=100)
            continue
        for ws, stride, lanes in ((8, 8, 1), (8 * 37, 8, 32), (4096, 128, 1), (40960, 40, 7)):
            latency(ws, variant=v.name, stride=stride, lanes=lanes, steps=100)
        # the papers' ring and clock, each alone and together (a shared ring at its largest
        # with the most per-load times: past a block's default shared memory)
        for ring, clock in (("strided", "loop"), ("shuffled", "each"), ("strided", "each")):
            for ws, stride, lanes in ((8, 8, 1), (8 * 37, 8, 32), (40960, 40, 7)):
                latency(ws, variant=v.name, stride=stride, lanes=lanes, steps=100, ring=ring,
                        clock=clock)
        if v.name == "shared":
            latency(SHARED_MAX, variant="shared", steps=8192, ring="strided", clock="each")


def _sanitize_bandwidth():
    for n in (1, 3, 1001, 4099):
        for cache in _core.CACHE_PATHS:
            for scope in ("grid", "block"):
                bandwidth(_f32(n), scope=scope, cache=cache, passes=2, blocks=3, block=96)
            bandwidth(_f32(n), variant="copy", cache=cache, passes=2, blocks=3, block=64)
        bandwidth(_f32(n), variant="shared", passes=2, blocks=3, block=96)
    bandwidth(_f32(12288), variant="shared", blocks=2, block=1024)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_latency()
    _sanitize_bandwidth()


LESSON = Lesson(
    name='ladder',
    idea='the memory hierarchy as two ladders: latency of a dependent load and bandwidth, level by level',
    families=('latency', 'bandwidth'),
    exports=('bandwidth', 'latency'),
    sweeps=('latency_ladder', 'bandwidth_ladder', 'cache_sizes'),
    notebooks=('08_ladder',),
    benchmark='ladder',
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    card=_card,
    model=(),
    # the tests' fake GPU (Lesson.stand_ins): a load 30 cycles from L1 (16 KiB), 260 from L2
    # (4 MiB), 700 beyond (the papers' ring 4 more, their clock() per load 6 more); shared memory read at 30,000 GB/s, L1 at 25,000, L2 at 7,000 and
    # device memory (50 MiB on) at 3,000 (each within 2% over its runs; 1.01 DRAM bytes per
    # byte read where counted); the reads' SMs at 1,900 of the 1,980 MHz maximum
    stand_ins=lambda gpu: {
        "latency": lambda ws, variant, steps, ring="shuffled", clock="loop": gpu.record(
            cycles_per_load=(c := {16 * 2**10: 30.0, 4 * 2**20: 260.0}.get(ws, 700.0) + (
                4.0 if ring == "strided" else 0.0) + (6.0 if clock == "each" else 0.0)),
            ns_per_load=c / 1.98),
        "_measure_bandwidth": lambda v, scope, ws, repeat, sms, counters=False: {
            "GB/s": (g := {("shared", "block"): 30000.0, ("read", "block"): 25000.0}.get(
                (v, scope), 7000.0 if ws < 50 * 2**20 else 3000.0)),
            "GB/s min": 0.98 * g, "GB/s max": 1.02 * g, "runs": repeat,
            **({"DRAM bytes per byte": 1.01} if counters else {}),
            "clock MHz": 1900.0}},
    # on a GPU, cache_sizes() with no table measures a whole latency ladder (6 s) on every
    # valid draw of the property tests: the ladder's own arguments are drawn under
    # latency_ladder, so there the first ladder of each set of arguments is kept and handed
    # back (Lesson.cheap; 82 s -> a few)
    cheap=lambda function, kept={}, real=latency_ladder: {} if function != "cache_sizes" else {
        "latency_ladder": lambda **kw: kept[k] if (k := repr(sorted(kw.items()))) in kept
        else kept.setdefault(k, real(**kw))},
    # the property tests (Lesson.arguments): a ring is a whole number of strides (128 bytes
    # by default)
    arguments=lambda st: {"latency": st.integers(1, 64).map(lambda k: {"working_set": 128 * k})},
)
