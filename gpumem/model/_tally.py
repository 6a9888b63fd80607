"""The machinery every kernel model shares: walking a launch axis, the tally of
requests, transactions and bytes, and the warps of a 1-D launch.

Each kernel model (``access``, ``layout``, ``matmul``, ``transpose``) follows
its kernel's source (``cuda/*.cu``) address for address: the grid and block
the launcher picks, warps cut from consecutive ``threadIdx.x`` (then
``threadIdx.y``), partial last warps of a block, the bounds checks, and where
each array starts.  Every buffer comes from its own ``cudaMalloc`` (256-byte
aligned) and arrays inside one buffer start where the kernel says.

What a prediction costs: the distinct warps, not the launch
------------------------------------------------------------
An instruction's sectors (lines) depend on its addresses only modulo the
line size (128 bytes, a multiple of the 32-byte sector), as long as every
address of the instruction moves by the same amount.  Every address of a
gpumem kernel is an integer-affine function of the block index (and, for
matmul, of the block column, the block row and the tile step), so warps 128
blocks apart -- fewer where the step in bytes has a factor of 2 -- cost the
same, *unless* a bound check cuts through one of them.  A model therefore
walks each launch axis through :func:`representatives`: the axis is cut at
the few indices where the work changes (the block that holds the end of the
data, the last block column or row, the last tile step), and in each piece
only the first ``period`` indices are worked out, each weighted by how many
indices of the piece share its residue.  The sums are exact, and a launch of
2^31 elements costs what a few thousand warps cost.  :func:`every` walks
every index with weight 1 (the per-warp reference, the same models warp by
warp); the tests check that both give the same numbers on many small and
awkward launches.
"""
from __future__ import annotations

import math
from functools import reduce
from typing import Callable

import numpy as np

from .banks import bank_conflicts, bank_conflicts_warps
from .coalescing import affine_units, coalesce_warps, runs_units

#: The keys of :func:`gpumem.model.predict`'s result (nvprof names, plus requested bytes).
METRICS = (
    "gld_requests", "gld_transactions", "gld_efficiency", "gld_transactions_per_request",
    "gst_requests", "gst_transactions", "gst_efficiency", "gst_transactions_per_request",
    "gld_bytes_requested", "gst_bytes_requested",
)

#: The shared-memory counters predict adds for the families that use shared memory.
SHARED_METRICS = ("shared_load_transactions", "shared_load_requests",
                  "shared_load_bank_conflict", "shared_store_transactions",
                  "shared_store_requests", "shared_store_bank_conflict")

#: The cp.async counters predict adds for the kernels that issue them
#: (matmul warptiled): warp instructions, sectors and requested bytes.
LDGSTS_METRICS = ("gldgsts_requests", "gldgsts_transactions", "gldgsts_bytes_requested")

#: Decimal places of the percentages and ratios that predict and matmul_traffic
#: return (their counts are exact ints).
DECIMALS = 4

WARP = 32
LINE = 128                     # the largest transaction unit: every period divides it


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- walking a launch axis ---------------------------------------------------
Axis = Callable[..., "tuple[np.ndarray, np.ndarray]"]


def every(length: int, period: int, cuts: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Every index ``0 .. length - 1`` of a launch axis, each with weight 1 (the reference)."""
    return np.arange(length, dtype=np.int64), np.ones(length, np.int64)


def representatives(length: int, period: int,
                    cuts: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Representative indices of a launch axis and how many indices each stands for.

    The axis ``0 .. length - 1`` is cut so that every index in ``cuts`` is a
    piece of its own; in each piece, indices ``period`` apart are alike (their
    addresses differ by a multiple of the line size), so the first ``period``
    indices of the piece stand for all of it, each weighted by the number of
    indices of the piece congruent to it.
    """
    edges = {0, length}
    for c in cuts:
        if 0 <= c < length:
            edges.update((c, c + 1))
    edges = sorted(edges)
    idx, weight = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for lo, hi in zip(edges, edges[1:]):
        r = np.arange(min(period, hi - lo), dtype=np.int64)
        idx.append(lo + r)
        weight.append((hi - lo - r + period - 1) // period)
    return np.concatenate(idx), np.concatenate(weight)


def period(*steps: int) -> int:
    """How many indices apart an axis repeats when one step moves the addresses
    by ``steps`` bytes (each address stream its own): the smallest p with every
    ``p * step`` a multiple of the 128-byte line."""
    return LINE // math.gcd(LINE, *steps)


def wmul(*factors) -> np.ndarray:
    """The product of weights (ints and int64 arrays, broadcast), as int64 where it
    surely fits and as Python ints (object array) where it might not."""
    arrs = [np.asarray(f) for f in factors]
    bound = 1.0
    for a in arrs:
        bound *= float(a.max()) if a.size else 0.0
    dtype = np.int64 if bound < 2.0 ** 62 else object
    return reduce(np.multiply, [a.astype(dtype) for a in arrs])


def dot(values, weights) -> int:
    """``sum(values * weights)`` exactly, as a Python int."""
    v, w = np.broadcast_arrays(np.asarray(values, np.int64), np.asarray(weights))
    if w.size == 0:
        return 0
    if w.dtype != object:
        bound = float(np.abs(v).max()) * float(np.abs(w).sum(dtype=np.float64))
        if bound < 2.0 ** 62:
            return int((v * w).sum(dtype=np.int64))
    return int((v.astype(object) * w.astype(object)).sum())


# ---- the tally --------------------------------------------------------------
class Tally:
    """Requests, transactions and requested bytes of loads and stores (Python ints).

    Ops: ``"ld"`` (global loads, LDG), ``"st"`` (global stores) and ``"cp"``
    (asynchronous global -> shared copies, cp.async / LDGSTS: Nsight Compute
    counts them apart from the loads, ``..._global_op_ldgsts``; always in
    32-byte sectors).  The ``cp`` keys are reported only for the kernels that
    issue them (``self.ldgsts``), as the shared-memory keys are.
    """

    def __init__(self, granularity: int):
        # stores go to L2 in 32-byte sectors everywhere; cp.async exists from sm_80 on
        self.g = {"ld": granularity, "st": 32, "cp": 32}
        self.req = {"ld": 0, "st": 0, "cp": 0}
        self.tx = {"ld": 0, "st": 0, "cp": 0}
        self.bytes = {"ld": 0, "st": 0, "cp": 0}
        self.ldgsts = False
        # shared memory (families that use it): warp instructions and wavefronts
        self.shared = False
        self.sh_inst = {"ld": 0, "st": 0}
        self.sh_wave = {"ld": 0, "st": 0}

    def shared_access(self, op: str, instructions: int, wavefronts: int) -> None:
        self.shared = True
        self.sh_inst[op] += int(instructions)
        self.sh_wave[op] += int(wavefronts)

    def add(self, op: str, requests: int, transactions: int, nbytes: int) -> None:
        self.req[op] += int(requests)
        self.tx[op] += int(transactions)
        self.bytes[op] += int(nbytes)

    def affine(self, op: str, first_addr, count, stride: int, width: int, weight) -> None:
        """Instructions whose active lanes are ``count`` lanes ``stride`` bytes apart,
        each standing for ``weight`` instructions."""
        count = np.asarray(count, np.int64)
        on = count > 0
        c = count[on]
        if c.size == 0:
            return
        fa = np.broadcast_to(np.asarray(first_addr, np.int64), count.shape)[on]
        wt = np.broadcast_to(np.asarray(weight), count.shape)[on]
        units = affine_units(fa, c, stride, width, self.g[op])
        lanes = c if stride else np.minimum(c, 1)        # same bytes for every lane: once
        self.add(op, dot(1, wt), dot(units, wt), width * dot(lanes, wt))

    def runs(self, op: str, first_byte, last_byte, nruns, lanes, weight) -> None:
        """Instructions made of sorted, non-overlapping byte runs (one per matrix row).

        ``first_byte``/``last_byte`` (instructions, R): the runs; only the
        first ``nruns`` of each row take part; ``lanes``: active lanes of each
        instruction (requested bytes = 4 per active lane); ``weight``: how many
        instructions each row stands for.
        """
        nruns = np.asarray(nruns, np.int64)
        on = nruns > 0
        if not on.any():
            return
        g = self.g[op]
        units = runs_units(np.asarray(first_byte)[on] // g, np.asarray(last_byte)[on] // g,
                           nruns[on])
        lanes = np.broadcast_to(np.asarray(lanes, np.int64), nruns.shape)[on]
        wt = np.broadcast_to(np.asarray(weight), nruns.shape)[on]
        self.add(op, dot(1, wt), dot(units, wt), 4 * dot(lanes, wt))

    def result(self) -> dict[str, int | float]:
        out: dict[str, int | float] = {}
        for op, p in (("ld", "gld"), ("st", "gst")):
            r, t, b = self.req[op], self.tx[op], self.bytes[op]
            # exact integer quotients, correctly rounded, then to DECIMALS places; the
            # efficiency is the SASS counter's, of the load instructions alone
            out[f"{p}_efficiency"] = round(100 * b / (t * self.g[op]), DECIMALS) if t else 0.0
            if op == "ld":
                # the H100's l1tex op_ld requests and sectors count the cp.async copies too
                # (measured: every warptiled launch of test_model_equals_nsight_compute)
                r, t, b = r + self.req["cp"], t + self.tx["cp"], b + self.bytes["cp"]
            out[f"{p}_requests"] = r
            out[f"{p}_transactions"] = t
            out[f"{p}_transactions_per_request"] = round(t / r, DECIMALS) if r else 0.0
            out[f"{p}_bytes_requested"] = b
        res = {k: out[k] for k in METRICS}
        if self.shared:
            # as gpumem.profile's aliases: wavefronts, and wavefronts beyond one per
            # warp instruction (for 8- and 16-byte words that counts the width too)
            for op, name in (("ld", "load"), ("st", "store")):
                res[f"shared_{name}_transactions"] = self.sh_wave[op]
                res[f"shared_{name}_requests"] = self.sh_inst[op]
                res[f"shared_{name}_bank_conflict"] = self.sh_wave[op] - self.sh_inst[op]
        if self.ldgsts:
            # as gpumem.profile's aliases gldgsts_requests and gldgsts_transactions
            res["gldgsts_requests"] = self.req["cp"]
            res["gldgsts_transactions"] = self.tx["cp"]
            res["gldgsts_bytes_requested"] = self.bytes["cp"]
        return res


# ---- warps given lane by lane -------------------------------------------------
def global_warps(tally: Tally, op: str, addr: np.ndarray, active: np.ndarray, width: int,
                 weight) -> None:
    """Warp instructions given lane by lane (rows of ``addr``), each standing for ``weight``."""
    if not active.any():
        return
    r = coalesce_warps(np.where(active, addr, 0), width, tally.g[op], active)
    tally.add(op, int(r.requests.sum()) * weight, int(r.transactions.sum()) * weight,
              int(r.bytes_requested.sum()) * weight)


def shared_warps(tally: Tally, op: str, addr: np.ndarray, active: np.ndarray | None, width: int,
                 weight) -> None:
    """Shared accesses given lane by lane (rows of ``addr``: byte offsets; ``active``:
    the lanes that take part, None for all), each row standing for ``weight``.  An
    instruction no lane takes part in costs nothing: predicated off, it is neither
    a wavefront nor counted (measured on an H100)."""
    if active is None:
        active = np.ones(addr.shape, bool)
    live = active.any(axis=1)
    if not live.any():
        return
    addr, active = addr[live], active[live]
    if width in (4, 8):
        waves = bank_conflicts_warps(np.where(active, addr, 0), active, width)[0]
    else:
        waves = np.array([bank_conflicts(list(map(int, a[ok])), width).wavefronts
                          for a, ok in zip(addr, active)])
    tally.shared_access(op, len(addr) * weight, int(waves.sum()) * weight)


# ---- 1-D launches -----------------------------------------------------------
def warps_1d(axis: Axis, grid: int, block: int, per_block: int | None = None,
             limits: tuple[int, ...] = ()):
    """First thread index, lane count and weight of the warps of a 1-D launch.

    Returns ``(base, w32, lanes, weight)``: ``base`` is ``blockIdx.x *
    per_block`` (``per_block`` defaults to ``block``), ``w32`` is ``32 * warp
    index in the block`` (so warp w's thread t has ``threadIdx.x = w32 + t``),
    ``lanes`` how many threads the warp has (the last warp of a block may be
    partial), ``weight`` how many warps it stands for.  ``limits``: the
    thread indices where the kernel's bound checks change (``i < n``); the
    block holding each is walked on its own.
    """
    per_block = block if per_block is None else per_block
    wpb = cdiv(block, WARP)
    b, wb = axis(grid, LINE, tuple(lim // per_block for lim in limits))
    w32 = WARP * np.arange(wpb, dtype=np.int64)
    lanes = np.minimum(WARP, block - w32)
    return (np.repeat(b * per_block, wpb), np.tile(w32, b.size), np.tile(lanes, b.size),
            np.repeat(wb, wpb))


def active_lanes(limit, first, lanes):
    """Active lanes of a warp whose lane t handles index ``first + t`` and runs while < limit."""
    return np.clip(np.minimum(lanes, limit - first), 0, WARP)


def simple_1d(axis: Axis, grid: int, block: int, limit: int):
    """Lane-0 thread index, active lanes and weight of every warp of a launch of
    ``grid`` blocks with one thread per index ``i < limit``."""
    base, w32, lanes, wt = warps_1d(axis, grid, block, limits=(limit,))
    i0 = base + w32
    return i0, active_lanes(limit, i0, lanes), wt
