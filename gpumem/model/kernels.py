"""Access generators: the global-memory instructions of every gpumem kernel,
warp by warp, for one launch with its real configuration.

Each generator follows its kernel's source (``cuda/*.cu``) address for
address: the grid and block the launcher picks, warps cut from consecutive
``threadIdx.x`` (then ``threadIdx.y``), partial last warps of a block, the
bounds checks, and where each array starts.  Every buffer comes from its own
``cudaMalloc`` (256-byte aligned) and arrays inside one buffer start where the
kernel says (``struct_update`` and ``distance`` in SoA layout keep x, y, z one
after the other in one buffer, so y starts ``4*n`` bytes in -- off the
32-byte grid unless n is a multiple of 8).

What a prediction costs: the distinct warps, not the launch
------------------------------------------------------------
An instruction's sectors (lines) depend on its addresses only modulo the
line size (128 bytes, a multiple of the 32-byte sector), as long as every
address of the instruction moves by the same amount.  Every address of a
gpumem kernel is an integer-affine function of the block index (and, for
matmul, of the block column, the block row and the tile step), so warps 128
blocks apart -- fewer where the step in bytes has a factor of 2 -- cost the
same, *unless* a bound check cuts through one of them.  A generator
therefore walks each launch axis through :func:`_representatives`: the axis
is cut at the few indices where the work changes (the block that holds the
end of the data, the last block column or row, the last tile step), and in
each piece only the first ``period`` indices are worked out, each weighted by
how many indices of the piece share its residue.  The sums are exact, and a
launch of 2^31 elements costs what a few thousand warps cost.
:func:`_every` walks every index with weight 1 (the per-warp reference, the
same generators warp by warp); the tests check that both give the same
numbers on many small and awkward launches.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache, reduce
from typing import Any, Callable

import numpy as np

from .. import _core
from ._check import index
from .banks import bank_conflicts, bank_conflicts_warps
from .coalescing import _check_granularity, affine_units, coalesce_warps, runs_units

__all__ = ["predict", "launch_config", "matmul_traffic", "families", "METRICS", "DECIMALS",
           "SHARED_METRICS", "LDGSTS_METRICS"]

#: The keys of :func:`predict`'s result (nvprof names, plus requested bytes).
METRICS = (
    "gld_requests", "gld_transactions", "gld_efficiency", "gld_transactions_per_request",
    "gst_requests", "gst_transactions", "gst_efficiency", "gst_transactions_per_request",
    "gld_bytes_requested", "gst_bytes_requested",
)

#: Decimal places of the percentages and ratios that :func:`predict` and
#: :func:`matmul_traffic` return (their counts are exact ints).
DECIMALS = 4

WARP = 32
#: The load paths of ``read_offset``: ``gpumem._core.CACHE_PATHS`` (one list, in the core).
CACHES = _core.CACHE_PATHS

_LINE = 128                    # the largest transaction unit: every period divides it
_GRID_MAX = 2 ** 31 - 1        # blocks in gridDim.x
_GRID_Y_MAX = 65535            # blocks in gridDim.y (matmul's block rows)
_DIM_MAX = 2 ** 31 - 1         # matmul's M, N, K (ints in the kernel)
_BYTES_MAX = 2 ** 63 - 1       # bytes one array can hold (npy_intp)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- walking a launch axis ---------------------------------------------------
Axis = Callable[..., "tuple[np.ndarray, np.ndarray]"]


def _every(length: int, period: int, cuts: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Every index ``0 .. length - 1`` of a launch axis, each with weight 1 (the reference)."""
    return np.arange(length, dtype=np.int64), np.ones(length, np.int64)


def _representatives(length: int, period: int,
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


def _period(*steps: int) -> int:
    """How many indices apart an axis repeats when one step moves the addresses
    by ``steps`` bytes (each address stream its own): the smallest p with every
    ``p * step`` a multiple of the 128-byte line."""
    return _LINE // math.gcd(_LINE, *steps)


def _wmul(*factors) -> np.ndarray:
    """The product of weights (ints and int64 arrays, broadcast), as int64 where it
    surely fits and as Python ints (object array) where it might not."""
    arrs = [np.asarray(f) for f in factors]
    bound = 1.0
    for a in arrs:
        bound *= float(a.max()) if a.size else 0.0
    dtype = np.int64 if bound < 2.0 ** 62 else object
    return reduce(np.multiply, [a.astype(dtype) for a in arrs])


def _dot(values, weights) -> int:
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
class _Tally:
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
        self.add(op, _dot(1, wt), _dot(units, wt), width * _dot(lanes, wt))

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
        self.add(op, _dot(1, wt), _dot(units, wt), 4 * _dot(lanes, wt))

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


# ---- 1-D launches -----------------------------------------------------------
def _warps_1d(axis: Axis, grid: int, block: int, per_block: int | None = None,
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
    wpb = _cdiv(block, WARP)
    b, wb = axis(grid, _LINE, tuple(lim // per_block for lim in limits))
    w32 = WARP * np.arange(wpb, dtype=np.int64)
    lanes = np.minimum(WARP, block - w32)
    return (np.repeat(b * per_block, wpb), np.tile(w32, b.size), np.tile(lanes, b.size),
            np.repeat(wb, wpb))


def _active(limit, first, lanes):
    """Active lanes of a warp whose lane t handles index ``first + t`` and runs while < limit."""
    return np.clip(np.minimum(lanes, limit - first), 0, WARP)


def _grid_1d(family: str, variant: str, p: dict) -> int:
    """The blocks the launcher starts (``gridDim.x``) for a 1-D family."""
    n, block = p["n"], p["block"]
    if family in ("read_offset", "write_offset"):
        return _cdiv(n, (4 if variant == "unroll4" else 1) * block)
    if family == "strided_read":
        return _cdiv(_cdiv(n, p["stride"]), block)
    if family == "copy" and variant == "float4":
        return _cdiv(n // 4 + n % 4, block)
    return _cdiv(n, block)


def _simple_1d(axis: Axis, family: str, variant: str, p: dict, limit: int):
    """Lane-0 thread index, active lanes and weight of every warp of a kernel
    with one thread per index ``i < limit``."""
    base, w32, lanes, wt = _warps_1d(axis, _grid_1d(family, variant, p), p["block"],
                                     limits=(limit,))
    i0 = base + w32
    return i0, _active(limit, i0, lanes), wt


def _offset_family(tally: _Tally, axis: Axis, variant: str, p: dict, shifted: str) -> None:
    """read_offset / write_offset: ``k = i + offset``; ``shifted`` is "ld" or "st"."""
    n, off, block = p["n"], p["offset"], p["block"]
    unroll = 4 if variant == "unroll4" else 1
    if n == 0:
        return
    grid = _cdiv(n, unroll * block)
    base, w32, lanes, wt = _warps_1d(axis, grid, block, unroll * block, limits=(n - off,))
    for j in range(unroll):
        i0 = base + j * block + w32            # thread index of lane 0
        cnt = _active(n - off, i0, lanes)      # guard: i + offset < n
        ld0, st0 = (i0 + off, i0) if shifted == "ld" else (i0, i0 + off)
        tally.affine("ld", 4 * ld0, cnt, 4, 4, 2 * wt)   # A and B: separate 256-aligned buffers
        tally.affine("st", 4 * st0, cnt, 4, 4, wt)


def _gen_read_offset(tally, axis, variant, p):
    _offset_family(tally, axis, variant, p, "ld")


def _gen_write_offset(tally, axis, variant, p):
    _offset_family(tally, axis, variant, p, "st")


def _gen_vec_add(tally, axis, variant, p):
    if p["n"] == 0:
        return
    i0, cnt, wt = _simple_1d(axis, "vec_add", variant, p, p["n"])
    tally.affine("ld", 4 * i0, cnt, 4, 4, 2 * wt)
    tally.affine("st", 4 * i0, cnt, 4, 4, wt)


def _gen_strided_read(tally, axis, variant, p):
    s = p["stride"]
    m = _cdiv(p["n"], s)
    if m == 0:
        return
    i0, cnt, wt = _simple_1d(axis, "strided_read", variant, p, m)
    tally.affine("ld", 4 * s * i0, cnt, 4 * s, 4, wt)
    tally.affine("st", 4 * i0, cnt, 4, 4, wt)


def _gen_struct_update(tally, axis, variant, p):
    n = p["n"]
    if n == 0:
        return
    i0, cnt, wt = _simple_1d(axis, "struct_update", variant, p, n)
    if variant == "aos":   # {float x, y}: data[i].x at 8i, .y at 8i + 4; the same for result
        for field in (0, 4):
            tally.affine("ld", 8 * i0 + field, cnt, 8, 4, wt)
            tally.affine("st", 8 * i0 + field, cnt, 8, 4, wt)
    else:                  # x = data, y = data + n; rx = result, ry = result + n
        for row in (0, 4 * n):
            tally.affine("ld", row + 4 * i0, cnt, 4, 4, wt)
            tally.affine("st", row + 4 * i0, cnt, 4, 4, wt)


def _gen_distance(tally, axis, variant, p):
    n = p["n"]
    if n == 0:
        return
    i0, cnt, wt = _simple_1d(axis, "distance", variant, p, n)
    if variant == "aos":   # {float x, y, z}: three 4-byte loads 12 bytes apart per lane
        for field in (0, 4, 8):
            tally.affine("ld", 12 * i0 + field, cnt, 12, 4, wt)
    else:                  # x, y, z = points, points + n, points + 2n
        for row in (0, 4 * n, 8 * n):
            tally.affine("ld", row + 4 * i0, cnt, 4, 4, wt)
    tally.affine("st", 4 * i0, cnt, 4, 4, wt)


def _gen_copy(tally, axis, variant, p):
    n, block = p["n"], p["block"]
    if n == 0:
        return
    if variant == "float":
        i0, cnt, wt = _simple_1d(axis, "copy", variant, p, n)
        tally.affine("ld", 4 * i0, cnt, 4, 4, wt)
        tally.affine("st", 4 * i0, cnt, 4, 4, wt)
        return
    n4, r = n // 4, n % 4
    base, w32, lanes, wt = _warps_1d(axis, _grid_1d("copy", variant, p), block,
                                     limits=(n4, n4 + r))
    i0 = base + w32
    c4 = _active(n4, i0, lanes)                       # threads i < n4: one float4 each
    tally.affine("ld", 16 * i0, c4, 16, 16, wt)
    tally.affine("st", 16 * i0, c4, 16, 16, wt)
    lo = np.maximum(i0, n4)                           # threads n4 <= i < n4 + r: the tail
    cs = np.clip(np.minimum(i0 + lanes, n4 + r) - lo, 0, WARP)
    e0 = 4 * n4 + (lo - n4)
    tally.affine("ld", 4 * e0, cs, 4, 4, wt)
    tally.affine("st", 4 * e0, cs, 4, 4, wt)


# ---- matmul -----------------------------------------------------------------
def _matmul_shape(p):
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    rpw = WARP // t                     # rows of the block per warp: 4, 2, 1
    wpb = t * t // WARP                 # warps per block: 2, 8, 32
    gx, gy = _cdiv(n, t), _cdiv(m, t)
    return m, n, k, t, rpw, wpb, gx, gy


def _rows_per_warp(first_row, limit, rpw):
    """How many of the warp's rows ``first_row .. first_row + rpw - 1`` are < limit."""
    return np.clip(limit - first_row, 0, rpw)


class _Blocks:
    """The block columns and the warps of a block column of one matmul launch,
    as representatives with weights.

    ``col0``/``ncol``/``wcol``: first column, active columns and weight of each
    block column (``4t`` bytes apart in B and C; the last may be partial);
    ``row0``/``nrow``/``wrow``: first row, active rows and weight of each warp
    of a block column (block row by: ``4tn`` bytes apart in C, ``4tk`` in A;
    the last block row may be partial).
    """

    def __init__(self, axis: Axis, p: dict):
        m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
        bx, self.wcol = axis(gx, _period(4 * t), (gx - 1,))
        self.col0 = bx * t
        self.ncol = np.minimum(t, n - self.col0)
        by, wby = axis(gy, _period(4 * t * n, 4 * t * k), (gy - 1,))
        self.row0 = np.repeat(by * t, wpb) + np.tile(rpw * np.arange(wpb, dtype=np.int64),
                                                     by.size)
        self.wrow = np.repeat(wby, wpb)
        self.nrow = _rows_per_warp(self.row0, m, rpw)


def _gen_matmul(tally, axis, variant, p):
    _matmul_shared(tally, variant, p)
    if variant == "register_tiled":
        _gen_matmul_register_tiled(tally, axis, p)
        return
    if variant == "warptiled":
        _gen_matmul_warptiled(tally, axis, p)
        return
    m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    bl = _Blocks(axis, p)
    j = np.arange(rpw, dtype=np.int64)[None, :]          # row of the warp

    # ---- store C[row][col] (both variants: threads outside C exit / skip) ----
    # every (bx, by, w): runs = the warp's active rows, each over its active columns
    r = (bl.row0[:, None] + j)[None, :, :]               # (1, P, rpw)
    first = 4 * (r * n + bl.col0[:, None, None])         # (gx, P, rpw)
    last = first + 4 * bl.ncol[:, None, None] - 1
    nr = np.broadcast_to(bl.nrow[None, :], first.shape[:2])
    tally.runs("st", first.reshape(-1, rpw), last.reshape(-1, rpw), nr.ravel(),
               (nr * bl.ncol[:, None]).ravel(), _wmul(bl.wcol[:, None], bl.wrow[None, :]).ravel())
    if k == 0:
        return

    if variant == "naive":
        _naive_loads(tally, axis, p, bl)
    else:
        _tiled_loads(tally, axis, p, bl)


# ---- matmul: shared memory ------------------------------------------------------------
def _words(row, col, pitch):
    """Byte offsets of float [row][col] in a shared array of ``pitch`` floats per row."""
    return 4 * (np.asarray(row, np.int64) * pitch + col)


def _matmul_shared_step(variant: str, t: int):
    """One tile step of one block of a matmul variant (cuda/matmul.cu): its shared
    stores and loads as (op, byte offsets (warps, 32), width, instructions of that kind
    per warp and step), and the block's k per step.  Every block and every step
    repeats the same offsets: the double buffers are 128-byte multiples apart, so
    the banks do not change with the buffer."""
    lane = np.arange(WARP, dtype=np.int64)[None, :]
    acc = []
    if variant in ("tiled", "prefetch"):                 # blockDim (t, t), tiles t x t
        lin = np.arange(t * t // WARP, dtype=np.int64)[:, None] * WARP + lane
        ty, tx = lin // t, lin % t
        acc += [("st", _words(ty, tx, t), 4, 2)]         # As[ty][tx], Bs[ty][tx]
        # the compiler reads As[ty][k .. k + 3] as one float4, Bs[k][tx] word by word
        acc += [("ld", _words(ty, 4 * q, t), 16, 1) for q in range(t // 4)]
        acc += [("ld", _words(kk + 0 * ty, tx, t), 4, 1) for kk in range(t)]
        return acc, t
    if variant == "coarsened":                           # blockDim (32, 8): a warp is a row
        ty, tx = np.arange(8, dtype=np.int64)[:, None] + 0 * lane, 0 * lane + lane
        for i in range(4):
            acc += [("st", _words(ty + 8 * i, tx, 32), 4, 2)]
            acc += [("ld", _words(ty + 8 * i, 4 * q, 32), 16, 1) for q in range(8)]
        acc += [("ld", _words(kk + 0 * ty, tx, 32), 4, 1) for kk in range(32)]
        return acc, 32
    if variant == "register_tiled":                      # 16 x 16 threads, 64 x 64 tiles
        tid = np.arange(8, dtype=np.int64)[:, None] * WARP + lane
        ar, ac, br, bc = tid // 4, (tid % 4) * 4, tid // 16, (tid % 16) * 4
        acc += [("st", _words(ac + j, ar, _RT + 4), 4, 1) for j in range(4)]   # A transposed
        acc += [("st", _words(br, bc, _RT), 16, 1)]
        ty, tx = tid // 16, tid % 16
        for kk in range(_RT_K):
            acc += [("ld", _words(kk + 0 * ty, 4 * ty, _RT + 4), 16, 1),
                    ("ld", _words(kk + 0 * tx, 4 * tx, _RT), 16, 1)]
        return acc, _RT_K
    if variant == "warptiled":
        thr, wm_, wn_ = _WT[t]
        tid = np.arange(thr // WARP, dtype=np.int64)[:, None] * WARP + lane
        warp = tid // WARP
        for i in range(t * _WT_K // 4 // thr):           # store_a: A transposed, A_LOADS
            f = tid + i * thr
            acc += [("st", _words((f % 4) * 4 + j, f // 4, t + 4), 4, 1) for j in range(4)]
        wm, wn = (warp // (t // wn_)) * wm_, (warp % (t // wn_)) * wn_
        lm, ln = (lane % 8) * 4, (lane // 8) * 4
        for kk in range(_WT_K):
            acc += [("ld", _words(kk + 0 * wm, wm + s_ * 32 + lm, t + 4), 16, 1)
                    for s_ in range(wm_ // 32)]
            acc += [("ld", _words(kk + 0 * wn, wn + s_ * 16 + ln, t), 16, 1)
                    for s_ in range(wn_ // 16)]
        # before each step's cp.async copies of B the compiler (CUDA 13, sm_90) puts
        # three never-executed shared loads (@!PT LDS RZ, [RZ]): no wavefront, but
        # smsp__inst_executed_op_shared_ld counts them
        acc += [("ld", None, 0, 3)]
        return acc, _WT_K
    raise AssertionError(variant)


def _matmul_shared(tally, variant: str, p: dict) -> None:
    """Shared-memory warp instructions and wavefronts of a matmul launch: every
    block runs every tile step (zeros outside the matrices are stored too)."""
    tally.shared = True                                  # naive: zeros
    m, n, k = p["m"], p["n"], p["k"]
    if variant == "naive" or m == 0 or n == 0 or k == 0:
        return
    t = {"coarsened": 32, "register_tiled": _RT}.get(variant, p["tile"])
    per_step, bk = _matmul_shared_per_step(variant, t)
    blocks = _cdiv(m, t) * _cdiv(n, t)
    steps = _cdiv(k, bk) * blocks                        # block steps
    for op, (inst, waves) in per_step.items():
        tally.shared_access(op, inst * steps, waves * steps)
    if variant == "prefetch":
        # its stores: the first tiles before the loop, then the next ones in every step,
        # the last step's too (zeros into a buffer no one reads): one step's more
        tally.shared_access("st", per_step["st"][0] * blocks, per_step["st"][1] * blocks)


@lru_cache(maxsize=None)
def _matmul_shared_per_step(variant: str, t: int):
    """{op: (warp instructions, wavefronts)} of one block's tile step, and its k."""
    step_acc, bk = _matmul_shared_step(variant, t)
    one = _Tally(32)
    for op, addr, width, per in step_acc:
        if addr is None:                                 # counted, never executed
            one.shared_access(op, per * (_WT[t][0] // WARP), 0)
        else:
            _shared(one, op, addr, None, width, per)
    return {op: (one.sh_inst[op], one.sh_wave[op]) for op in ("ld", "st")}, bk


# ---- matmul register_tiled: 64 x 64 tiles, 16 x 16 threads, float4 where it can --------
_RT, _RT_K = 64, 16                      # C tile edge, k per step


def _rows_stream(tally, op: str, row, col, row_base, row_bytes: int, act, width: int,
                 weight) -> None:
    """Warp instructions whose lane l touches ``row[.., l] * row_bytes + 4 * col[.., l]``
    (``width`` bytes), ``act`` lanes only; ``weight`` (the leading axes, without the
    warp axis) says how many instructions each stands for.
    Addresses are taken relative to the warp's ``row_base`` row (at its offset
    modulo the 128-byte line), so sizes past 2^62 bytes count exactly."""
    row, col, act = np.broadcast_arrays(row, col, act)
    row_base = np.broadcast_to(row_base, row.shape)
    # (row_base * row_bytes) mod 128, without forming the product
    off = (row_base % _LINE) * (row_bytes % _LINE) % _LINE
    addr = off + (row - row_base) * row_bytes + 4 * col
    addr = np.where(act, addr, 0).reshape(-1, WARP)
    res = coalesce_warps(addr, width, tally.g[op], act.reshape(-1, WARP))
    wt = np.broadcast_to(np.asarray(weight)[..., None], row.shape[:-1]).reshape(-1)
    tally.add(op, _dot(res.requests, wt), _dot(res.transactions, wt),
              _dot(res.bytes_requested, wt))


def _vec_or_scalar(tally, op, row, col, row_base, row_bytes, ok_vec, ok_lane, weight):
    """A float4 access where ``ok_vec`` holds, else four predicated scalar ones
    (``ok_lane(j)``: lane's element j in bounds), as the kernel branches."""
    _rows_stream(tally, op, row, col, row_base, row_bytes, ok_vec, 16, weight)
    for j in range(4):
        _rows_stream(tally, op, row, col + j, row_base, row_bytes, ~ok_vec & ok_lane(j), 4,
                     weight)


def _gen_matmul_register_tiled(tally, axis, p):
    m, n, k = p["m"], p["n"], p["k"]
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    gx, gy, steps = _cdiv(n, _RT), _cdiv(m, _RT), _cdiv(k, _RT_K)
    tid = np.arange(256, dtype=np.int64).reshape(8, WARP)         # 8 warps of 32 lanes
    w = np.arange(8, dtype=np.int64)[:, None]
    bx, wbx = axis(gx, _period(4 * _RT), (gx - 1,))
    by, wby = axis(gy, _period(4 * _RT * k, 4 * _RT * n), (gy - 1,))
    # ---- C: 4 rows per thread (ty * 4 + i), 4 columns (tx * 4); float4 where N % 4 == 0
    ty, tx = tid // 16, tid % 16
    B4 = by[:, None, None, None] * _RT                   # (nby, 1, 1, 1)
    X4 = bx[None, :, None, None] * _RT                   # (1, nbx, 1, 1)
    wc = _wmul(wby[:, None], wbx[None, :])               # (nby, nbx)
    for i in range(4):
        r, c = B4 + ty * 4 + i, X4 + tx * 4
        ok = r < m
        vec = ok & (c + 3 < n) if n % 4 == 0 else np.zeros(np.broadcast(r, c).shape, bool)
        _vec_or_scalar(tally, "st", r, c, B4 + 8 * w + i, 4 * n, vec,
                       lambda j: ok & (c + j < n), wc)
    if k == 0:
        return
    s, ws = axis(steps, _period(4 * _RT_K, 4 * _RT_K * n), (steps - 1,))
    K0 = s[None, :, None, None] * _RT_K                  # (1, ns, 1, 1)
    # ---- A: row ar = tid / 4, columns k0 + ac .. + 3 (ac = 4 (tid % 4)), every block column
    ar, ac = tid // 4, (tid % 4) * 4
    r, kk = B4 + ar, K0 + ac
    ok = r < m
    vec = ok & (kk + 3 < k) if k % 4 == 0 else np.zeros(np.broadcast(r, kk).shape, bool)
    _vec_or_scalar(tally, "ld", r, kk, B4 + 8 * w, 4 * k, vec, lambda j: ok & (kk + j < k),
                   _wmul(wby[:, None], ws[None, :], gx))
    # ---- B: row k0 + br (br = tid / 16), columns bn + bc .. + 3, every block row
    br, bc = tid // 16, (tid % 16) * 4
    K0b = s[:, None, None, None] * _RT_K                 # (ns, 1, 1, 1)
    kr, c = K0b + br, X4 + bc
    ok = kr < k
    vec = ok & (c + 3 < n) if n % 4 == 0 else np.zeros(np.broadcast(kr, c).shape, bool)
    _vec_or_scalar(tally, "ld", kr, c, K0b + 2 * w, 4 * n, vec, lambda j: ok & (c + j < n),
                   _wmul(ws[:, None], wbx[None, :], gy))


# ---- matmul warptiled: block, warp and lane tiles; B by cp.async --------------------------
_WT_K = 16                               # k per step (BK)
#: warptiled's configurations by tile (BM = BN): threads, warp tile rows WM, columns WN
_WT = {128: (256, 64, 32), 64: (128, 32, 32)}


def _gen_matmul_warptiled(tally, axis, p):
    """cuda/matmul.cu ``warptiled``: per k step, A (``tile`` rows x 16) by float4 or
    four predicated scalar loads into registers, B (16 x ``tile``) by cp.async into
    shared memory -- one 16-byte copy per lane where N % 4 == 0, else 4-byte ones, a
    warp's 32 on consecutive columns; lanes outside B copy nothing (src-size 0:
    zero-fill) and count nothing --
    and at the end C by float4 or scalar stores, every (i, s) pair of a lane's
    sub-tiles its own warp instruction.  Every step's tiles are loaded once per
    block (the prologue loads step 0, iteration t loads t + 1)."""
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    thr, wm_, wn_ = _WT[t]
    tally.ldgsts = True                  # the variant's keys, zeros included
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    nw = thr // WARP
    gx, gy, steps = _cdiv(n, t), _cdiv(m, t), _cdiv(k, _WT_K)
    tid = np.arange(thr, dtype=np.int64).reshape(nw, WARP)        # warps of 32 lanes
    w = np.arange(nw, dtype=np.int64)[:, None]
    bx, wbx = axis(gx, _period(4 * t), (gx - 1,))
    by, wby = axis(gy, _period(4 * t * k, 4 * t * n), (gy - 1,))
    BM = by[:, None, None, None] * t                     # (nby, 1, 1, 1)
    BN = bx[None, :, None, None] * t                     # (1, nbx, 1, 1)
    # ---- C: warp w's tile at (wm, wn); lane (lm, ln) = (4 (lane % 8), 4 (lane / 8));
    # row wm + 32 (i / 4) + lm + i % 4, columns wn + 16 s + ln .. + 3
    wm, wn = (w // (t // wn_)) * wm_, (w % (t // wn_)) * wn_
    lm, ln = (tid % WARP % 8) * 4, (tid % WARP // 8) * 4
    wc = _wmul(wby[:, None], wbx[None, :])               # (nby, nbx)
    for i in range(4 * (wm_ // WARP)):
        r0 = BM + wm + (i // 4) * 32 + i % 4             # the warp's first row
        r = r0 + lm
        ok = r < m
        for s in range(wn_ // 16):
            c = BN + wn + s * 16 + ln
            vec = ok & (c + 3 < n) if n % 4 == 0 else np.zeros(np.broadcast(r, c).shape, bool)
            _vec_or_scalar(tally, "st", r, c, r0, 4 * n, vec, lambda j: ok & (c + j < n), wc)
    if k == 0:
        return
    st, wst = axis(steps, _period(4 * _WT_K, 4 * _WT_K * n), (steps - 1,))
    # ---- A: f = tid + i * threads; row bm + f / 4, columns k0 + 4 (f % 4) .. + 3, every
    # block column
    K0 = st[None, :, None, None] * _WT_K                 # (1, ns, 1, 1)
    wa = _wmul(wby[:, None], wst[None, :], gx)
    for i in range(t * _WT_K // 4 // thr):
        f = tid + i * thr
        r, kk = BM + f // 4, K0 + (f % 4) * 4
        ok = r < m
        vec = ok & (kk + 3 < k) if k % 4 == 0 else np.zeros(np.broadcast(r, kk).shape, bool)
        _vec_or_scalar(tally, "ld", r, kk, BM + (WARP * w + i * thr) // 4, 4 * k, vec,
                       lambda j: ok & (kk + j < k), wa)
    # ---- B (cp.async), every block row: copy e = tid + i * threads of the tile is row
    # k0 + e / per_row, columns bn + (e % per_row) * floats: float4s where N % 4 == 0 (all
    # four or none), else single floats, a warp's 32 on consecutive columns
    width = 16 if n % 4 == 0 else 4
    floats = width // 4
    per_row = t // floats                                # copies per row of the B tile
    K0b = st[:, None, None, None] * _WT_K                # (ns, 1, 1, 1)
    wb = _wmul(wst[:, None], wbx[None, :], gy)
    for i in range(_WT_K * per_row // thr):
        e = tid + i * thr
        kr, c = K0b + e // per_row, BN + (e % per_row) * floats
        _rows_stream(tally, "cp", kr, c, K0b + (WARP * w + i * thr) // per_row, 4 * n,
                     (kr < k) & (c < n), width, wb)


def _naive_loads(tally, axis, p, bl):
    """acc += a[row*K + kk] * b[kk*N + col] for kk < K, threads with row < M, col < N."""
    m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
    g = tally.g["ld"]
    live = bl.nrow > 0
    nwarps = _dot(live, bl.wrow)             # warps with an active row, in one block column
    nrows = _dot(bl.nrow, bl.wrow)           # active rows of a block column: m
    # A: each active row of the warp reads one word (a broadcast across its
    # columns); rows are 4K bytes apart, so from 4K >= granule on they never
    # share a sector (line).  Smaller K: count row by row.
    if 4 * k >= g:
        tx_a = nrows * k * gx
    else:
        kk = np.arange(k, dtype=np.int64)
        rows = bl.row0[live][:, None, None] + np.arange(rpw)[None, None, :]   # (P, 1, rpw)
        unit = 4 * (rows * k + kk[None, :, None]) // g                        # (P, K, rpw)
        nr = np.broadcast_to(bl.nrow[live][:, None], unit.shape[:2])
        wt = np.broadcast_to(bl.wrow[live][:, None], unit.shape[:2])
        tx_a = _dot(runs_units(unit.reshape(-1, rpw), unit.reshape(-1, rpw), nr.ravel()),
                    wt.ravel()) * gx
    # requested bytes are distinct per instruction: one word per active row
    tally.add("ld", nwarps * k * gx, tx_a, 4 * k * nrows * gx)
    # B: every active row of the warp reads the same columns of row kk (a
    # broadcast); rows kk of B are 4N bytes apart
    kk, wk = axis(k, _period(4 * n))
    fb = 4 * (kk[:, None] * n + bl.col0[None, :])
    lb = fb + 4 * bl.ncol[None, :] - 1
    tx_b = _dot(lb // g - fb // g + 1, _wmul(wk[:, None], bl.wcol[None, :]))
    tally.add("ld", nwarps * k * gx, nwarps * tx_b, 4 * k * nwarps * _dot(bl.ncol, bl.wcol))


def _tiled_loads(tally, axis, p, bl):
    """Per tile step k0: As <- A[row][k0 + tx] if row < M and k0 + tx < K;
    Bs <- B[k0 + ty][col] if k0 + ty < K and col < N (predicated loads)."""
    m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
    steps = _cdiv(k, t)
    # tile steps: 4t bytes along A's rows, 4tn down B; the last may be partial
    s, ws = axis(steps, _period(4 * t, 4 * t * n), (steps - 1,))
    k0 = t * s
    ka = np.minimum(t, k - k0)                           # active tx per step (k0 + tx < K)
    j = np.arange(rpw, dtype=np.int64)
    # A: identical for every block column bx (A's guard ignores col)
    rows = bl.row0[:, None, None] + j[None, None, :]     # (P, 1, rpw)
    first = 4 * (rows * k + k0[None, :, None])           # (P, S, rpw)
    last = first + 4 * ka[None, :, None] - 1
    nr = np.broadcast_to(bl.nrow[:, None], first.shape[:2])
    tally.runs("ld", first.reshape(-1, rpw), last.reshape(-1, rpw), nr.ravel(),
               (nr * ka[None, :]).ravel(), _wmul(bl.wrow[:, None], ws[None, :], gx).ravel())
    # B: identical for every block row by (B's guard ignores row)
    w = np.arange(wpb, dtype=np.int64)
    brow = k0[None, :, None] + (w * rpw)[:, None, None] + j[None, None, :]     # (W, S, rpw)
    nb = np.clip(k - (k0[None, :] + (w * rpw)[:, None]), 0, rpw)               # (W, S)
    first = 4 * (brow[None] * n + bl.col0[:, None, None, None])                # (gx, W, S, rpw)
    last = first + 4 * bl.ncol[:, None, None, None] - 1
    nbb = np.broadcast_to(nb[None], first.shape[:3])
    wt = _wmul(bl.wcol[:, None, None], np.ones((1, wpb, 1), np.int64), ws[None, None, :], gy)
    tally.runs("ld", first.reshape(-1, rpw), last.reshape(-1, rpw), nbb.ravel(),
               (nbb * bl.ncol[:, None, None]).ravel(), wt.ravel())


# ---- transpose and shared_stride (cuda/transpose.cu) ---------------------------------
#: The shared-memory counters :func:`predict` adds for the families that use it.
SHARED_METRICS = ("shared_load_transactions", "shared_load_requests",
                  "shared_load_bank_conflict", "shared_store_transactions",
                  "shared_store_requests", "shared_store_bank_conflict")

#: The cp.async counters :func:`predict` adds for the kernels that issue them
#: (matmul warptiled): warp instructions, sectors and requested bytes.
LDGSTS_METRICS = ("gldgsts_requests", "gldgsts_transactions", "gldgsts_bytes_requested")

_TILE, _WIDE = 32, 64


def _transpose_shape(variant: str, m: int, n: int) -> tuple[bool, int, int]:
    """(float4 path, tile, threadIdx.y extent) of a transpose launch, as the launcher picks."""
    wide = variant == "coarsened" and m % 4 == 0 and n % 4 == 0
    if wide:
        return True, _WIDE, 16
    return False, _TILE, 4 if variant == "coarsened" else 8


def _global(tally, op: str, addr: np.ndarray, active: np.ndarray, width: int, weight) -> None:
    """Warp instructions given lane by lane (rows of ``addr``), each standing for ``weight``."""
    if not active.any():
        return
    r = coalesce_warps(np.where(active, addr, 0), width, tally.g[op], active)
    tally.add(op, int(r.requests.sum()) * weight, int(r.transactions.sum()) * weight,
              int(r.bytes_requested.sum()) * weight)


def _shared(tally, op: str, addr: np.ndarray, active: np.ndarray | None, width: int,
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
    if width == 4:
        waves = bank_conflicts_warps(np.where(active, addr, 0), active)[0]
    else:
        waves = np.array([bank_conflicts(list(map(int, a[ok])), width).wavefronts
                          for a, ok in zip(addr, active)])
    tally.shared_access(op, len(addr) * weight, int(waves.sum()) * weight)


def _transpose_block(variant: str, m: int, n: int, bx: int, by: int):
    """The instructions of block (bx, by): global (op, addresses, active, width) and
    shared (op, byte offsets, width), every lane of every warp (cuda/transpose.cu)."""
    wide, t, brows = _transpose_shape(variant, m, n)
    lane = np.arange(WARP, dtype=np.int64)[None, :]
    glob, shared = [], []
    if wide:
        tid = np.arange(brows * WARP, dtype=np.int64).reshape(brows, WARP)   # warps x lanes
        g, r = tid & 15, tid >> 4
        for p in range(0, _WIDE, brows * WARP // 16):
            row = r + p
            R, C = by * _WIDE + row, bx * _WIDE + 4 * g
            ok = (R < m) & (C < n)
            glob.append(("ld", 4 * (R * n + C), ok, 16))
            shared.append(("st", 16 * (row * 16 + (g ^ ((row >> 2) & 7))), None, 16))
        ln, w = tid & 31, tid >> 5
        ql, cc = ln & 7, ln >> 3
        for p in range(32 // brows):
            k = w + brows * p
            cg, q = k & 15, ql + 8 * (k >> 4)
            c = 4 * cg + cc
            orow, ocol = bx * _WIDE + c, by * _WIDE + 4 * q
            ok = (orow < n) & (ocol < m)
            for i in range(4):            # guarded with the store: predicated off outside
                shared.append(("ld", 4 * (4 * ((4 * q + i) * 16 + (cg ^ ql)) + cc), ok, 4))
            glob.append(("st", 4 * (orow * m + ocol), ok, 16))
        return glob, shared
    ty = np.arange(brows, dtype=np.int64)[:, None]                        # warp = threadIdx.y
    for j in range(0, t, brows):
        if variant == "naive_row":
            r, c = by * t + ty + j, bx * t + lane
        elif variant == "naive_col":
            r, c = by * t + lane, bx * t + ty + j
        if variant in ("naive_row", "naive_col"):
            ok = (r < m) & (c < n)
            glob += [("ld", 4 * (r * n + c), ok, 4), ("st", 4 * (c * m + r), ok, 4)]
            continue
        r, c = by * t + ty + j, bx * t + lane
        glob.append(("ld", 4 * (r * n + c), (r < m) & (c < n), 4))
        shared.append(("st", 4 * _tile_at(variant, ty + j + 0 * lane, lane), None, 4))
    if variant not in ("naive_row", "naive_col"):
        for j in range(0, t, brows):
            orow, ocol = bx * t + ty + j, by * t + lane
            ok = (orow < n) & (ocol < m)    # the read is predicated with the store
            shared.append(("ld", 4 * _tile_at(variant, lane + 0 * ty, ty + j), ok, 4))
            glob.append(("st", 4 * (orow * m + ocol), ok, 4))
    return glob, shared


def _tile_at(variant: str, row, col):
    """Word of tile element (row, col): [32][33] padded, [r][c ^ r] swizzled, else [32][32]."""
    if variant in ("padded", "coarsened"):          # coarsened's scalar path is padded
        return row * (_TILE + 1) + col
    if variant == "swizzled":
        return row * _TILE + (col ^ row)
    return row * _TILE + col


def _gen_transpose(tally, axis, variant, p):
    m, n = p["m"], p["n"]
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    wide, t, brows = _transpose_shape(variant, m, n)
    gx, gy = _cdiv(n, t), _cdiv(m, t)
    # a block column moves the loads by 4t bytes and the stores by 4tm; a block
    # row by 4tn and 4t: multiples of the 128-byte line, so every block is
    # alike but the last column and the last row (partial tiles)
    bxs, wx = axis(gx, 1, (gx - 1,))
    bys, wy = axis(gy, 1, (gy - 1,))
    tally.shared = True                     # the naive kernels: zeros
    for bx, w1 in zip(bxs.tolist(), wx.tolist()):
        for by, w2 in zip(bys.tolist(), wy.tolist()):
            glob, shared = _transpose_block(variant, m, n, bx, by)
            for op, addr, ok, width in glob:
                _global(tally, op, addr, ok, width, w1 * w2)
            for op, addr, ok, width in shared:
                addr = np.broadcast_to(addr, (addr.shape[0], WARP))
                ok = None if ok is None else np.broadcast_to(ok, addr.shape)
                _shared(tally, op, addr, ok, width, w1 * w2)


#: shared_stride: elements of the 16 KiB shared array per word size, threads per block.
_STRIDE_BYTES, _STRIDE_BLOCK = 16384, 256
_WORDS = {"float": 4, "float2": 8, "float4": 16}


def _gen_shared_stride(tally, axis, variant, p):
    width = _WORDS[variant]
    blocks, stride, iters = p["blocks"], p["stride"], p["iters"]
    nelem = _STRIDE_BYTES // width
    warps = _STRIDE_BLOCK // WARP
    # the fill: every warp stores 32 consecutive elements per instruction
    fill = (nelem // _STRIDE_BLOCK) * warps
    _shared(tally, "st", (width * np.arange(WARP, dtype=np.int64))[None, :], None, width,
            fill * blocks)
    # the loads: lane l reads element l * stride (+ 32 i: the same banks) every step
    addr = (width * ((np.arange(WARP, dtype=np.int64) * stride) % nelem))[None, :]
    _shared(tally, "ld", addr, None, width, iters * warps * blocks)
    # one float per thread to global memory
    base, w32, lanes, wt = _warps_1d(axis, blocks, _STRIDE_BLOCK)
    tally.affine("st", 4 * (base + w32), lanes, 4, 4, wt)


#: matmul's tile (the edge of the C tile of a block) per variant: default, allowed.
#: prefetch loads exactly what tiled loads (the next tile early, into registers);
#: coarsened's 32 x 8 threads load and store a 32 x 32 tile four rows per thread, the
#: same requests and sectors as tiled with tile 32 (each of its warps' four
#: instructions covers one row, as one warp of tiled's 32 x 32 block does);
#: register_tiled takes 64 only, warptiled 128 (256 threads) or 64 (128 threads).
_MATMUL_TILES = {"naive": (16, (8, 16, 32)), "tiled": (16, (8, 16, 32)),
                 "prefetch": (16, (16, 32)), "coarsened": (32, (32,)),
                 "register_tiled": (64, (64,)), "warptiled": (128, (64, 128))}


# ---- the family table ------------------------------------------------------
_REQUIRED = object()

_FAMILIES: dict[str, dict[str, Any]] = {
    "vec_add": {"params": {"n": _REQUIRED, "block": 256}, "gen": _gen_vec_add, "bytes": 4},
    "matmul": {"params": {"m": _REQUIRED, "n": _REQUIRED, "k": _REQUIRED, "tile": 16},
               "gen": _gen_matmul},
    "read_offset": {"params": {"n": _REQUIRED, "offset": 0, "block": 512, "cache": "default"},
                    "gen": _gen_read_offset, "bytes": 4},
    "write_offset": {"params": {"n": _REQUIRED, "offset": 0, "block": 512, "cache": "default"},
                     "gen": _gen_write_offset, "bytes": 4},
    "strided_read": {"params": {"n": _REQUIRED, "stride": 1, "block": 512},
                     "gen": _gen_strided_read, "bytes": 4},
    "struct_update": {"params": {"n": _REQUIRED, "block": 512}, "gen": _gen_struct_update,
                      "bytes": 8},
    "distance": {"params": {"n": _REQUIRED, "block": 512}, "gen": _gen_distance, "bytes": 12},
    "copy": {"params": {"n": _REQUIRED, "block": 256}, "gen": _gen_copy, "bytes": 4},
    "transpose": {"params": {"m": _REQUIRED, "n": _REQUIRED}, "gen": _gen_transpose},
    "shared_stride": {"params": {"stride": 1, "iters": 256, "blocks": 1024},
                      "gen": _gen_shared_stride},
}
# ``bytes``: bytes per element of a 1-D family's largest array (a float, a
# {x, y} pair, an {x, y, z} point).

#: Each family's variants, as the core names them (``gpumem._core.variants``).
_VARIANTS: dict[str, tuple[str, ...]] = {
    f: tuple(row[1] for row in _core.variants(f)) for f in _FAMILIES}


def families() -> dict[str, tuple[str, ...]]:
    """The modelled kernel families and their variants (the names ``gpumem.variants()`` uses)."""
    return dict(_VARIANTS)


def _name(fn: str, what: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{fn}: {what} must be a str, not {type(v).__name__}")
    return v


def _check_size(where: str, family: str, variant: str, p: dict) -> None:
    """What the C entry points refuse: arrays past 2^63 - 1 bytes, grids past
    2^31 - 1 blocks (gridDim.x), matmul past 65535 block rows or 2^31 - 1 in
    any dimension."""
    if family == "transpose":
        if p["m"] > _GRID_Y_MAX * _TILE:
            raise ValueError(f"{where}: m={p['m']} is too large; transpose takes at most "
                             f"{_GRID_Y_MAX * _TILE} rows")
        if p["n"] > _DIM_MAX - 64:
            raise ValueError(f"{where}: n={p['n']} is too large; transpose takes at most "
                             "2**31 - 65 columns")
        if 4 * p["m"] * p["n"] > _BYTES_MAX:
            raise ValueError(f"{where}: m={p['m']} and n={p['n']}: the matrix would hold more "
                             "than the 2**63 - 1 bytes an array can hold")
        return
    if family == "shared_stride":
        return
    if family == "matmul":
        m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
        for name in ("m", "n", "k"):
            if p[name] > _DIM_MAX:
                raise ValueError(f"{where}: {name}={p[name]} is too large; matmul's sizes must "
                                 f"be <= 2**31 - 1")
        if _cdiv(m, t) > _GRID_Y_MAX:
            raise ValueError(f"{where}: m={m} needs {_cdiv(m, t)} block rows with tile={t}, "
                             f"more than the {_GRID_Y_MAX} a launch can have "
                             f"(m <= {_GRID_Y_MAX * t})")
        for a, b, what in (("m", "k", "a (m x k)"), ("k", "n", "b (k x n)"),
                           ("m", "n", "the result (m x n)")):
            if 4 * p[a] * p[b] > _BYTES_MAX:
                raise ValueError(f"{where}: {a}={p[a]} and {b}={p[b]}: {what} would hold "
                                 f"{4 * p[a] * p[b]} bytes, more than the 2**63 - 1 an array "
                                 "can hold")
        return
    n, size = p["n"], _FAMILIES[family]["bytes"]
    if n * size > _BYTES_MAX:
        raise ValueError(f"{where}: n={n} elements of {size} bytes exceed the 2**63 - 1 bytes "
                         "an array can hold")
    grid = _grid_1d(family, variant, p)
    if grid > _GRID_MAX:
        raise ValueError(f"{where}: n={n} needs {grid} blocks of block={p['block']} threads, "
                         "more than the 2**31 - 1 a launch can have; use a larger block")


def _resolve(fn: str, family: Any, variant: Any,
             params: Mapping[str, Any]) -> tuple[dict, dict[str, Any]]:
    family = _name(fn, "family", family)
    variant = _name(fn, "variant", variant)
    if family not in _FAMILIES:
        raise ValueError(f"{fn}: family={family!r} is unknown; allowed: "
                         f"{', '.join(repr(f) for f in _FAMILIES)}")
    spec = _FAMILIES[family]
    if variant not in _VARIANTS[family]:
        raise ValueError(f"{fn}: variant={variant!r} is unknown for family {family!r}; allowed: "
                         f"{', '.join(repr(v) for v in _VARIANTS[family])}")
    allowed = spec["params"]
    for name in params:
        if name not in allowed:
            raise ValueError(f"{fn}: parameter {name!r} is unknown for {family}/{variant}; "
                             f"allowed: {', '.join(allowed)}")
    p = {}
    for name, default in allowed.items():
        if name in params:
            p[name] = params[name]
        elif default is _REQUIRED:
            raise ValueError(f"{fn}: {family}/{variant} needs parameter {name!r} "
                             f"(parameters: {', '.join(allowed)})")
        else:
            p[name] = default
    where = f"{fn}({family}/{variant})"
    for name in ("n", "m", "k"):
        if name in p:
            p[name] = index(where, name, p[name], lo=0)
    if "block" in p:
        p["block"] = index(where, "block", p["block"], 1, 1024)
    if "offset" in p:
        p["offset"] = index(where, "offset", p["offset"], 0, p["n"])
    if "stride" in p:
        p["stride"] = index(where, "stride", p["stride"], 1, 32 if family == "shared_stride" else 64)
    if "iters" in p:
        p["iters"] = index(where, "iters", p["iters"], 1, 65536)
    if "blocks" in p:
        p["blocks"] = index(where, "blocks", p["blocks"], 1, 1 << 20)
    if family == "matmul":
        default, allowed = _MATMUL_TILES[variant]
        p["tile"] = index(where, "tile", p["tile"] if "tile" in params else default,
                          allowed=allowed)
    if "cache" in p:
        _name(where, "cache", p["cache"])
        if p["cache"] not in CACHES:
            raise ValueError(f"{where}: cache={p['cache']!r} is not allowed; cache must be one "
                             f"of {', '.join(repr(c) for c in CACHES)} (all touch the same "
                             "sectors)")
    _check_size(where, family, variant, p)
    return spec, p


def _predict(fn: str, family: Any, variant: Any, granularity: Any, params: Mapping[str, Any],
             axis: Axis = _representatives) -> dict[str, int | float]:
    granularity = _check_granularity(granularity, fn)
    spec, p = _resolve(fn, family, variant, params)
    tally = _Tally(granularity)
    spec["gen"](tally, axis, variant, p)
    return tally.result()


def _predict_reference(family: str, variant: str, *, granularity: int = 32,
                       **params: Any) -> dict[str, int | float]:
    """:func:`predict` warp by warp (every warp of the launch worked out on its
    own): the reference the tests hold the fast path to.  Slow; small launches."""
    return _predict("model.predict", family, variant, granularity, params, axis=_every)


def predict(family: str, variant: str, *, granularity: int = 32,
            **params: Any) -> dict[str, int | float]:
    """Predict the global-memory counters of one launch of a gpumem kernel.

    Costs what the launch's distinct warp patterns cost, not what its size
    costs: any launch gpumem can make is predicted in milliseconds.

    Parameters
    ----------
    family, variant : str
        As in ``gpumem.variants()``: ``"read_offset"``/``"unroll1"``,
        ``"matmul"``/``"tiled"``, ... (see :func:`families`).
    granularity : {32, 128}
        Load transaction unit: 32-byte sectors (every GPU since Maxwell, and
        what Nsight Compute counts) or 128-byte lines (Fermi/Kepler loads
        cached in L1).  Stores are always counted in 32-byte sectors.
    **params
        The launch parameters, the same names as ``LaunchRecord.params``:
        ``n``, ``block``, ``offset``, ``cache``, ``stride`` (1-D families);
        ``m``, ``n``, ``k``, ``tile`` (matmul); ``m``, ``n`` (transpose: ``a`` is
        m x n); ``stride``, ``iters``, ``blocks`` (shared_stride, whose variant is
        the word: ``"float"``, ``"float2"``, ``"float4"``).  Omitted ones take the
        defaults of the gpumem function.  Integers may be NumPy integers.

    Returns
    -------
    dict
        ``gld_requests``, ``gld_transactions``, ``gld_efficiency`` (percent),
        ``gld_transactions_per_request``, the same four for ``gst``, and
        ``gld_bytes_requested``, ``gst_bytes_requested``.  Requests are warp
        instructions with at least one active lane; transactions are distinct
        sectors (lines) per instruction, summed; requested bytes are the
        distinct bytes of each instruction's active lanes (a word read by
        several lanes counts once, as the hardware counts it).  Requests,
        transactions and bytes are exact ``int``; efficiencies and
        transactions per request are ``float`` rounded to :data:`DECIMALS`
        (4) decimal places.  The families that use shared memory (matmul,
        transpose, shared_stride) add :data:`SHARED_METRICS`: ``shared_load_transactions``
        (wavefronts), ``shared_load_requests`` (warp instructions) and
        ``shared_load_bank_conflict`` (wavefronts beyond one per instruction, as
        :func:`gpumem.profile` counts them), and the same for stores.  The
        kernels that copy global to shared memory by ``cp.async`` (LDGSTS: matmul
        ``"warptiled"``'s B tiles) add :data:`LDGSTS_METRICS`: ``gldgsts_requests``,
        ``gldgsts_transactions`` (32-byte sectors) and ``gldgsts_bytes_requested``,
        the copies alone, lanes that copy nothing (zero-fill) not counted.  As the
        H100's counters do, ``gld_requests``, ``gld_transactions`` (and
        ``gld_bytes_requested``) include the copies; ``gld_efficiency``, a SASS
        counter there, is of the load instructions alone.

    Raises
    ------
    TypeError
        A family, variant or cache that is not a str; a size that is not an
        int (bools are refused).
    ValueError
        Unknown family, variant or parameter, a value out of range (``offset``
        past ``n``), or a launch gpumem cannot make: more than 2^31 - 1
        blocks, a matmul past 65535 block rows or 2^31 - 1 in a dimension,
        an array past 2^63 - 1 bytes.

    Examples
    --------
    >>> r = predict("read_offset", "unroll1", n=2**24, offset=11, block=512)
    >>> r["gld_transactions"], r["gld_efficiency"]
    (5242876, 80.0)
    """
    return _predict("model.predict", family, variant, granularity, params)


def predict_record(record: Any, granularity: int = 32) -> dict[str, int | float]:
    """:func:`predict` for a :class:`gpumem.LaunchRecord` (its kernel, variant and params).

    Raises
    ------
    TypeError
        ``record`` without ``kernel``, ``variant`` and a ``params`` mapping.
    """
    fn = "model.predict_record"
    params = getattr(record, "params", None)
    if not (hasattr(record, "kernel") and hasattr(record, "variant")
            and isinstance(params, Mapping)):
        raise TypeError(f"{fn}: record must be a gpumem.LaunchRecord (with kernel, variant and "
                        f"a params dict), not {type(record).__name__}")
    return _predict(fn, record.kernel, record.variant, granularity, params)


def launch_config(family: str, variant: str, **params: Any) -> dict[str, tuple[int, int, int]]:
    """The grid and block a gpumem launcher picks: ``{"grid": (x, y, z), "block": (x, y, z)}``.

    Raises
    ------
    TypeError, ValueError
        As :func:`predict`.
    """
    _, p = _resolve("model.launch_config", family, variant, params)
    if family == "matmul":
        t = p["tile"]
        block = ((t, 8, 1) if variant == "coarsened" else (16, 16, 1)
                 if variant == "register_tiled" else (_WT[t][0], 1, 1)
                 if variant == "warptiled" else (t, t, 1))
        return {"grid": (_cdiv(p["n"], t), _cdiv(p["m"], t), 1), "block": block}
    if family == "transpose":
        _, t, brows = _transpose_shape(variant, p["m"], p["n"])
        return {"grid": (_cdiv(p["n"], t), _cdiv(p["m"], t), 1), "block": (WARP, brows, 1)}
    if family == "shared_stride":
        return {"grid": (p["blocks"], 1, 1), "block": (_STRIDE_BLOCK, 1, 1)}
    return {"grid": (_grid_1d(family, variant, p), 1, 1), "block": (p["block"], 1, 1)}


def matmul_traffic(m: int, n: int, k: int, variant: str = "tiled",
                   tile: int | None = None) -> dict[str, int | float]:
    """Global traffic of one gpumem matmul launch ``C[m,n] = A[m,k] @ B[k,n]`` (no GPU needed).

    The bytes are what the kernel's loads and stores *request* (4 per active
    thread and access), not the DRAM-side minimum: the naive kernel asks for
    every A and B element once per use, the tiled one once per tile.

    Parameters
    ----------
    m, n, k : int
        Matrix sizes.
    variant : {"tiled", "naive", "prefetch", "coarsened", "register_tiled", "warptiled"}
        prefetch and coarsened load what tiled does with the same tile; so do
        register_tiled and warptiled with theirs (every block column reads A
        once, every block row B once).  warptiled's B comes by cp.async:
        :func:`predict` counts it in ``gld_bytes_requested`` (as the H100's load
        counters do) and again, alone, in ``gldgsts_bytes_requested``.
    tile : {8, 16, 32, 64, 128}, default 16 (prefetch: 16 or 32; coarsened: 32 only;
        register_tiled: 64 only; warptiled: 128, the default, or 64)

    Returns
    -------
    dict
        ``load_bytes``, ``store_bytes``, ``flops`` (2*m*n*k) and ``min_bytes``
        (each of A, B, C moved once: 4*(mk + kn + mn)), exact ints; ``cgma``
        (the compute-to-global-memory-access ratio: FLOPs per 4-byte global
        load; 1.0 for naive, ``tile`` for tiled when the sizes are multiples
        of the tile) and ``flops_per_byte`` (FLOPs per loaded byte), floats
        rounded to :data:`DECIMALS` places.

    Raises
    ------
    TypeError, ValueError
        As :func:`predict`, naming ``model.matmul_traffic``.
    """
    _, p = _resolve("model.matmul_traffic", "matmul", variant,
                    {"m": m, "n": n, "k": k} | ({} if tile is None else {"tile": tile}))
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    gx, gy = _cdiv(n, t), _cdiv(m, t)
    if m == 0 or n == 0:
        loads = 0
    elif variant == "naive":
        loads = 2 * m * n * k                   # every thread: K of A and K of B
    else:
        loads = k * (gx * m + gy * n)           # every block column reads A once, every block row B
    flops = 2 * m * n * k
    return {
        "load_bytes": 4 * loads,
        "store_bytes": 4 * m * n,
        "flops": flops,
        "cgma": round(flops / loads, DECIMALS) if loads else 0.0,
        "flops_per_byte": round(flops / (4 * loads), DECIMALS) if loads else 0.0,
        "min_bytes": 4 * (m * k + k * n + m * n),
    }
