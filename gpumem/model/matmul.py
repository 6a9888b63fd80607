"""The matmul lesson's kernels (``cuda/matmul.cu``): every variant's global
loads and stores warp by warp, its shared-memory instructions and wavefronts,
and :func:`matmul_traffic`, the bytes the lesson's CGMA counts.

Block columns move B and C by ``4t`` bytes, block rows A by ``4tk`` and C by
``4tn``, tile steps A by ``4t`` and B by ``4tn``: each axis is walked through
its representatives (gpumem.model._tally), cut at the last, partial, column,
row and step.

The tensor-core variants (``mma``, ``wgmma``) are modelled in
:mod:`gpumem.model._matmul_tensor`; what several variants share (warp instructions
streamed row by row, the launcher's padding copies) in :mod:`gpumem.model._matmul_rows`.
"""
from __future__ import annotations

from functools import lru_cache
import numpy as np

from ._check import index
from ._launch import BYTES_MAX, DIM_MAX, GRID_MAX, GRID_Y_MAX, REQUIRED, resolve
from ._matmul_rows import (_pad_copies, _padded, _round4, _rows_stream, _vec_or_scalar,
                           _warp_blocks)
from ._matmul_tensor import (_MMA_K, _MMA_THREADS, _MMA_WM, _MMA_WN, _WG_BM, _WG_K, _WG_THREADS,
                             _gen_matmul_mma, _gen_matmul_wgmma, _mma_a_at, _mma_b_at,
                             _mma_phantom_loads, _wg_col, _wg_frag_at, _wgmma_shared_edges)
from ._tally import DECIMALS, WARP, Axis, Tally, cdiv, dot, period, shared_warps, wmul
from .coalescing import runs_units

__all__ = ["matmul_traffic", "matmul_waves"]


def _matmul_shape(p):
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    rpw = WARP // t                     # rows of the block per warp: 4, 2, 1
    wpb = t * t // WARP                 # warps per block: 2, 8, 32
    gx, gy = cdiv(n, t), cdiv(m, t)
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
        bx, self.wcol = axis(gx, period(4 * t), (gx - 1,))
        self.col0 = bx * t
        self.ncol = np.minimum(t, n - self.col0)
        by, wby = axis(gy, period(4 * t * n, 4 * t * k), (gy - 1,))
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
    if variant == "mma":
        _gen_matmul_mma(tally, axis, p)
        return
    if variant == "wgmma":
        _gen_matmul_wgmma(tally, axis, p)
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
               (nr * bl.ncol[:, None]).ravel(), wmul(bl.wcol[:, None], bl.wrow[None, :]).ravel())
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
    if variant == "mma":
        # a k slice of 32: per 8-wide k step each warp loads its 4 pieces of B^T (16 of
        # C's columns each: rows kk + 2t and + 1 of B, floats wn + 16j + 2g, + 1, one
        # 8-byte load each) and its 8 pieces of A^T (8 of C's rows each: row wm + 8i + g
        # of A, floats kk + 2t, + 1, one 8-byte load) from the swizzled tiles; cp.async
        # fills them (no shared store instructions)
        warp = np.arange(_MMA_THREADS // WARP, dtype=np.int64)[:, None]
        g, tq = lane // 4, lane % 4
        wm, wn = (warp // (t // _MMA_WN)) * _MMA_WM, (warp % (t // _MMA_WN)) * _MMA_WN
        for kk in range(0, _MMA_K, 8):
            for j in range(_MMA_WN // 16):
                acc += [("ld", 4 * _mma_b_at(kk + 2 * tq + dk, wn + 16 * j + 2 * g), 8, 1)
                        for dk in (0, 1)]
            for i in range(_MMA_WM // 8):
                acc += [("ld", 4 * _mma_a_at(wm + 8 * i + g, kk + 2 * tq), 8, 1)]
        return acc, _MMA_K
    if variant == "wgmma":
        # a k slice of 32: per 8-wide k step each warp loads its 4 B^T fragments (32-bit
        # loads of B[8 kk + t + 4 q][column _wg_col(w, g, h)] from the swizzled boxes); the
        # engine fills the stage (no shared stores), the tensor cores read A through the
        # descriptor (no instructions)
        warp = np.arange(_WG_THREADS // WARP, dtype=np.int64)[:, None]
        g, tq = lane // 4, lane % 4
        for kk in range(_WG_K // 8):
            acc += [("ld", _wg_frag_at(_wg_col(warp, g, h), 8 * kk + tq + 4 * q), 4, 1)
                    for q in (0, 1) for h in (0, 1)]
        return acc, _WG_K
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
    blocks = cdiv(m, 2 * t if variant == "wgmma" else t) * cdiv(n, t)
    steps = cdiv(k, bk) * blocks                        # block steps
    for op, (inst, waves) in per_step.items():
        tally.shared_access(op, inst * steps, waves * steps)
    if variant == "wgmma":
        _wgmma_shared_edges(tally, m, n)
    if variant == "mma":
        tally.shared_access("ld", _mma_phantom_loads(m, n, k), 0)
    if variant == "prefetch":
        # its stores: the first tiles before the loop, then the next ones in every step,
        # the last step's too (zeros into a buffer no one reads): one step's more
        tally.shared_access("st", per_step["st"][0] * blocks, per_step["st"][1] * blocks)


@lru_cache(maxsize=None)
def _matmul_shared_per_step(variant: str, t: int):
    """{op: (warp instructions, wavefronts)} of one block's tile step, and its k."""
    step_acc, bk = _matmul_shared_step(variant, t)
    one = Tally(32)
    for op, addr, width, per in step_acc:
        if addr is None:                                 # counted, never executed (warptiled)
            one.shared_access(op, per * (_WT[t][0] // WARP), 0)
        else:
            shared_warps(one, op, addr, None, width, per)
    return {op: (one.sh_inst[op], one.sh_wave[op]) for op in ("ld", "st")}, bk


# ---- matmul register_tiled: 64 x 64 tiles, 16 x 16 threads, float4 where it can --------
_RT, _RT_K = 64, 16                      # C tile edge, k per step


def _gen_matmul_register_tiled(tally, axis, p):
    m, n, k = p["m"], p["n"], p["k"]
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    gx, gy, steps = cdiv(n, _RT), cdiv(m, _RT), cdiv(k, _RT_K)
    tid = np.arange(256, dtype=np.int64).reshape(8, WARP)         # 8 warps of 32 lanes
    w = np.arange(8, dtype=np.int64)[:, None]
    bx, wbx = axis(gx, period(4 * _RT), (gx - 1,))
    by, wby = axis(gy, period(4 * _RT * k, 4 * _RT * n), (gy - 1,))
    # ---- C: 4 rows per thread (ty * 4 + i), 4 columns (tx * 4); float4 where N % 4 == 0
    ty, tx = tid // 16, tid % 16
    B4 = by[:, None, None, None] * _RT                   # (nby, 1, 1, 1)
    X4 = bx[None, :, None, None] * _RT                   # (1, nbx, 1, 1)
    wc = wmul(wby[:, None], wbx[None, :])               # (nby, nbx)
    for i in range(4):
        r, c = B4 + ty * 4 + i, X4 + tx * 4
        ok = r < m
        vec = ok & (c + 3 < n) if n % 4 == 0 else np.zeros(np.broadcast(r, c).shape, bool)
        _vec_or_scalar(tally, "st", r, c, B4 + 8 * w + i, 4 * n, vec,
                       lambda j: ok & (c + j < n), wc)
    if k == 0:
        return
    s, ws = axis(steps, period(4 * _RT_K, 4 * _RT_K * n), (steps - 1,))
    K0 = s[None, :, None, None] * _RT_K                  # (1, ns, 1, 1)
    # ---- A: row ar = tid / 4, columns k0 + ac .. + 3 (ac = 4 (tid % 4)), every block column
    ar, ac = tid // 4, (tid % 4) * 4
    r, kk = B4 + ar, K0 + ac
    ok = r < m
    vec = ok & (kk + 3 < k) if k % 4 == 0 else np.zeros(np.broadcast(r, kk).shape, bool)
    _vec_or_scalar(tally, "ld", r, kk, B4 + 8 * w, 4 * k, vec, lambda j: ok & (kk + j < k),
                   wmul(wby[:, None], ws[None, :], gx))
    # ---- B: row k0 + br (br = tid / 16), columns bn + bc .. + 3, every block row
    br, bc = tid // 16, (tid % 16) * 4
    K0b = s[:, None, None, None] * _RT_K                 # (ns, 1, 1, 1)
    kr, c = K0b + br, X4 + bc
    ok = kr < k
    vec = ok & (c + 3 < n) if n % 4 == 0 else np.zeros(np.broadcast(kr, c).shape, bool)
    _vec_or_scalar(tally, "ld", kr, c, K0b + 2 * w, 4 * n, vec, lambda j: ok & (c + j < n),
                   wmul(ws[:, None], wbx[None, :], gy))


# ---- matmul warptiled: block, warp and lane tiles; B by cp.async --------------------------
_WT_K = 16                               # k per step (BK)
#: warptiled's configurations by tile (BM = BN): threads, warp tile rows WM, columns WN
_WT = {128: (256, 64, 32), 64: (128, 32, 32)}


def _gen_matmul_warptiled(tally, axis, p):
    """cuda/matmul.cu ``warptiled``: per k step, A (``tile`` rows x 16) by float4 loads
    into registers, B (16 x ``tile``) by cp.async into shared memory, one 16-byte copy per
    lane -- from the operands' rows padded to round4(K) and round4(N) floats where K or N
    is not a multiple of 4 (the launcher's copies first, :func:`_pad_copies`); lanes
    outside A or B load and copy nothing (src-size 0: zero-fill) and count nothing --
    and at the end C by float4 or scalar stores, every (i, s) pair of a lane's
    sub-tiles its own warp instruction.  Every step's tiles are loaded once per
    block (the prologue loads step 0, iteration t loads t + 1)."""
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    thr, wm_, wn_ = _WT[t]
    tally.ldgsts = True                  # the variant's keys, zeros included
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    gx, gy, steps, tid, w, wbx, wby, BM, BN = _warp_blocks(axis, m, n, k, t, thr, _WT_K)
    _wt_stores(tally, m, n, t, BM, BN, wmul(wby[:, None], wbx[None, :]))
    if p["splits"] > 1:
        _wt_split(tally, m, n, t, p["splits"], p["tail"])
    if k == 0:
        return
    st, wst = axis(steps, period(4 * _WT_K, 4 * _WT_K * _round4(n)), (steps - 1,))
    # ---- A: f = tid + i * threads; row bm + f / 4, columns k0 + 4 (f % 4) .. + 3, every
    # block column: a float4 where the row is inside A and the column inside its rows of
    # round4(k) floats (the launcher's padded copy where k % 4 != 0: _pad_copies)
    _pad_copies(tally, axis, m, n, k)
    K0 = st[None, :, None, None] * _WT_K                 # (1, ns, 1, 1)
    wa = wmul(wby[:, None], wst[None, :], gx)
    for i in range(t * _WT_K // 4 // thr):
        f = tid + i * thr
        r, kk = BM + f // 4, K0 + (f % 4) * 4
        _rows_stream(tally, "ld", r, kk, BM + (WARP * w + i * thr) // 4, 4 * _round4(k),
                     (r < m) & (kk < k), 16, wa)
    # ---- B (cp.async), every block row: copy e = tid + i * threads of the tile is row
    # k0 + e / (t / 4), columns bn + 4 (e % (t / 4)) .. + 3, 16 bytes each, rows round4(n)
    # floats apart (where n % 4 != 0 the launcher padded B first)
    per_row = t // 4                                     # copies per row of the B tile
    K0b = st[:, None, None, None] * _WT_K                # (ns, 1, 1, 1)
    wb = wmul(wst[:, None], wbx[None, :], gy)
    for i in range(_WT_K * per_row // thr):
        e = tid + i * thr
        kr, c = K0b + e // per_row, BN + (e % per_row) * 4
        _rows_stream(tally, "cp", kr, c, K0b + (WARP * w + i * thr) // per_row,
                     4 * _round4(n), (kr < k) & (c < n), 16, wb)


def _wt_stores(tally, m: int, n: int, t: int, BM, BN, weight, slice_: bool = False) -> None:
    """warptiled's stores of its sums, blocks at rows ``BM`` and columns ``BN`` (shaped
    (.., .., 1, 1)): warp w's tile at (wm, wn); lane (lm, ln) = (4 (lane % 8), 4 (lane /
    8)); row wm + 32 (i / 4) + lm + i % 4, columns wn + 16 s + ln .. + 3, rows past M
    skipped -- into C (rows N floats apart; float4s where N % 4 == 0), or (``slice_``) into
    a slice's own t x t block of the workspace (rows t floats apart, float4s wherever the
    four columns are inside C)."""
    thr, wm_, wn_ = _WT[t]
    tid = np.arange(thr, dtype=np.int64).reshape(thr // WARP, WARP)
    w = np.arange(thr // WARP, dtype=np.int64)[:, None]
    wm, wn = (w // (t // wn_)) * wm_, (w % (t // wn_)) * wn_
    lm, ln = (tid % WARP % 8) * 4, (tid % WARP // 8) * 4
    for i in range(4 * (wm_ // WARP)):
        r0 = BM + wm + (i // 4) * 32 + i % 4             # the warp's first row
        r = r0 + lm
        ok = r < m
        for s in range(wn_ // 16):
            c = BN + wn + s * 16 + ln
            if slice_:
                vec = ok & (c + 3 < n)
                _vec_or_scalar(tally, "st", r - BM, c - BN, r0 - BM, 4 * t, vec,
                               lambda j: ok & (c + j < n), weight)
                continue
            vec = ok & (c + 3 < n) if n % 4 == 0 else np.zeros(np.broadcast(r, c).shape, bool)
            _vec_or_scalar(tally, "st", r, c, r0, 4 * n, vec, lambda j: ok & (c + j < n), weight)


def _wt_split(tally, m: int, n: int, t: int, splits: int, tail: int) -> None:
    """warptiled's split tail (cuda/matmul.cu), on top of the launch without it: the last
    ``tail`` tiles of C in launch order are each computed by ``splits`` blocks, one slice
    of the k steps apiece.  The slices partition every tile's steps, so the loads, copies
    and shared accesses are the whole launch's; what changes is where the sums go: each
    slice stores its t x t block into the workspace instead of C, and then
    matmul_split_sum (256 threads a block, thread e of the split tiles' elements: tile
    full + e / t^2, row and column from e % t^2) loads a tile element's ``splits`` slices
    (a warp's 32 threads: 32 consecutive floats of one row of a slice) and stores their
    sum into C, the threads inside C only."""
    gx = cdiv(n, t)
    tiles = gx * cdiv(m, t)
    for first in range(tiles - tail, tiles, 256):       # 256 tiles at a time
        tt = np.arange(first, min(first + 256, tiles), dtype=np.int64)
        BM = (tt // gx * t)[:, None, None, None]        # (tiles, 1, 1, 1)
        BN = (tt % gx * t)[:, None, None, None]
        _wt_stores(tally, m, n, t, BM, BN, -1)           # not into C ...
        _wt_stores(tally, m, n, t, BM, BN, splits, slice_=True)   # ... into the slices
        # matmul_split_sum: warp q of a tile covers row 32 q / t, columns 32 q % t + lane
        q = np.arange(t * t // WARP, dtype=np.int64)[None, :, None]
        lane = np.arange(WARP, dtype=np.int64)[None, None, :]
        rl, cl = 32 * q // t, 32 * q % t + lane          # (1, warps, 32)
        r, c = BM[:, :, 0, 0][..., None] + rl, BN[:, :, 0, 0][..., None] + cl
        ok = (r < m) & (c < n)                           # (tiles, warps, 32)
        _rows_stream(tally, "ld", rl, cl, 0 * rl, 4 * t, ok, 4, splits)
        _rows_stream(tally, "st", r, c, r, 4 * n, ok, 4, 1)


def _naive_loads(tally, axis, p, bl):
    """acc += a[row*K + kk] * b[kk*N + col] for kk < K, threads with row < M, col < N."""
    m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
    g = tally.g["ld"]
    live = bl.nrow > 0
    nwarps = dot(live, bl.wrow)             # warps with an active row, in one block column
    nrows = dot(bl.nrow, bl.wrow)           # active rows of a block column: m
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
        tx_a = dot(runs_units(unit.reshape(-1, rpw), unit.reshape(-1, rpw), nr.ravel()),
                   wt.ravel()) * gx
    # requested bytes are distinct per instruction: one word per active row
    tally.add("ld", nwarps * k * gx, tx_a, 4 * k * nrows * gx)
    # B: every active row of the warp reads the same columns of row kk (a
    # broadcast); rows kk of B are 4N bytes apart
    kk, wk = axis(k, period(4 * n))
    fb = 4 * (kk[:, None] * n + bl.col0[None, :])
    lb = fb + 4 * bl.ncol[None, :] - 1
    tx_b = dot(lb // g - fb // g + 1, wmul(wk[:, None], bl.wcol[None, :]))
    tally.add("ld", nwarps * k * gx, nwarps * tx_b, 4 * k * nwarps * dot(bl.ncol, bl.wcol))


def _tiled_loads(tally, axis, p, bl):
    """Per tile step k0: As <- A[row][k0 + tx] if row < M and k0 + tx < K;
    Bs <- B[k0 + ty][col] if k0 + ty < K and col < N (predicated loads)."""
    m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
    steps = cdiv(k, t)
    # tile steps: 4t bytes along A's rows, 4tn down B; the last may be partial
    s, ws = axis(steps, period(4 * t, 4 * t * n), (steps - 1,))
    k0 = t * s
    ka = np.minimum(t, k - k0)                           # active tx per step (k0 + tx < K)
    j = np.arange(rpw, dtype=np.int64)
    # A: identical for every block column bx (A's guard ignores col)
    rows = bl.row0[:, None, None] + j[None, None, :]     # (P, 1, rpw)
    first = 4 * (rows * k + k0[None, :, None])           # (P, S, rpw)
    last = first + 4 * ka[None, :, None] - 1
    nr = np.broadcast_to(bl.nrow[:, None], first.shape[:2])
    tally.runs("ld", first.reshape(-1, rpw), last.reshape(-1, rpw), nr.ravel(),
               (nr * ka[None, :]).ravel(), wmul(bl.wrow[:, None], ws[None, :], gx).ravel())
    # B: identical for every block row by (B's guard ignores row)
    w = np.arange(wpb, dtype=np.int64)
    brow = k0[None, :, None] + (w * rpw)[:, None, None] + j[None, None, :]     # (W, S, rpw)
    nb = np.clip(k - (k0[None, :] + (w * rpw)[:, None]), 0, rpw)               # (W, S)
    first = 4 * (brow[None] * n + bl.col0[:, None, None, None])                # (gx, W, S, rpw)
    last = first + 4 * bl.ncol[:, None, None, None] - 1
    nbb = np.broadcast_to(nb[None], first.shape[:3])
    wt = wmul(bl.wcol[:, None, None], np.ones((1, wpb, 1), np.int64), ws[None, None, :], gy)
    tally.runs("ld", first.reshape(-1, rpw), last.reshape(-1, rpw), nbb.ravel(),
               (nbb * bl.ncol[:, None, None]).ravel(), wt.ravel())


#: matmul's tile (the edge of the C tile of a block) per variant: default, allowed.
#: prefetch loads exactly what tiled loads (the next tile early, into registers);
#: coarsened's 32 x 8 threads load and store a 32 x 32 tile four rows per thread, the
#: same requests and sectors as tiled with tile 32 (each of its warps' four
#: instructions covers one row, as one warp of tiled's 32 x 32 block does);
#: register_tiled takes 64 only, warptiled 128 (256 threads) or 64 (128 threads), mma 128,
#: wgmma 128 (C tiles of 256 rows x 128 columns).
_MATMUL_TILES = {"naive": (16, (8, 16, 32)), "tiled": (16, (8, 16, 32)),
                 "prefetch": (16, (16, 32)), "coarsened": (32, (32,)),
                 "register_tiled": (64, (64,)), "warptiled": (128, (64, 128)),
                 "mma": (128, (128,)), "wgmma": (128, (128,))}


def _check(where: str, variant: str, p: dict) -> None:
    """What the C entry point refuses: 65535 block rows or 2^31 - 1 in any
    dimension, a matrix past 2^63 - 1 bytes; a split tail other than warptiled's, or
    one its launcher would not make."""
    m, t = p["m"], p["tile"]
    p["splits"] = index(where, "splits", p["splits"], lo=1, hi=64)
    p["tail"] = index(where, "tail", p["tail"], lo=0)
    if p["splits"] > 1 or p["tail"]:
        if variant != "warptiled":
            raise ValueError(f"{where}: splits={p['splits']}, tail={p['tail']}: only "
                             "'warptiled' splits its last wave's tiles along K")
        tiles, ktiles = cdiv(m, t) * cdiv(p["n"], t), cdiv(p["k"], _WT_K)
        if p["splits"] == 1 or not 1 <= p["tail"] <= tiles or p["splits"] > ktiles:
            raise ValueError(
                f"{where}: splits={p['splits']}, tail={p['tail']}: a split tail cuts the "
                f"last tail tiles (1..{tiles} here) into 2..{max(ktiles, 2)} slices of the "
                f"{ktiles} k steps; without one, splits=1 and tail=0 "
                "(gpumem.model.matmul_waves says what the launcher picks)")
        if p["tail"] * p["splits"] > GRID_MAX:
            raise ValueError(f"{where}: the split tail's 1-D grid would exceed 2**31 - 1 "
                             "blocks")
    for name in ("m", "n", "k"):
        if p[name] > DIM_MAX:
            raise ValueError(f"{where}: {name}={p[name]} is too large; matmul's sizes must "
                             f"be <= 2**31 - 1")
    if cdiv(m, t) > GRID_Y_MAX:
        raise ValueError(f"{where}: m={m} needs {cdiv(m, t)} block rows with tile={t}, "
                         f"more than the {GRID_Y_MAX} a launch can have "
                         f"(m <= {GRID_Y_MAX * t})")
    for a, b, what in (("m", "k", "a (m x k)"), ("k", "n", "b (k x n)"),
                       ("m", "n", "the result (m x n)")):
        if 4 * p[a] * p[b] > BYTES_MAX:
            raise ValueError(f"{where}: {a}={p[a]} and {b}={p[b]}: {what} would hold "
                             f"{4 * p[a] * p[b]} bytes, more than the 2**63 - 1 an array "
                             "can hold")


def _launch(variant: str, p: dict) -> dict[str, tuple[int, int, int]]:
    t = p["tile"]
    block = ((t, 8, 1) if variant == "coarsened" else (16, 16, 1)
             if variant == "register_tiled" else (_WT[t][0], 1, 1)
             if variant == "warptiled" else (_MMA_THREADS, 1, 1)
             if variant == "mma" else (_WG_THREADS, 1, 1)
             if variant == "wgmma" else (t, t, 1))
    rows = _WG_BM if variant == "wgmma" else t
    if p["splits"] > 1:
        # the split launch: tail x splits slices (the whole tiles go first, in a launch of
        # their own on a 2-D grid)
        return {"grid": (p["tail"] * p["splits"], 1, 1), "block": block}
    return {"grid": (cdiv(p["n"], t), cdiv(p["m"], rows), 1), "block": block}


def _from_record(record, params: dict) -> dict:
    """A warptiled record says its ``splits``; how many tiles were split (``tail``) the
    1-D grid of its split launch says: tail x splits blocks."""
    if params.get("splits", 1) == 1 or "tail" in params or record.variant != "warptiled":
        return params
    tail, rest = divmod(record.grid[0], params["splits"])
    if rest or tail < 1:
        raise ValueError(f"predict_record: a warptiled record of {params['splits']} splits "
                         f"with grid {record.grid}: no split tail launches that grid")
    return {**params, "tail": tail}


#: The family this module models (see gpumem.model._launch for the keys).
FAMILIES = {
    "matmul": {"variants": ("naive", "tiled", "prefetch", "coarsened", "register_tiled",
                            "warptiled", "mma", "wgmma"),
               "params": {"m": REQUIRED, "n": REQUIRED, "k": REQUIRED, "tile": 16,
                          "splits": 1, "tail": 0},
               "gen": _gen_matmul, "launch": _launch, "check": _check, "tiles": _MATMUL_TILES,
               "from_record": _from_record},
}


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
    variant : {"tiled", "naive", "prefetch", "coarsened", "register_tiled", "warptiled", "mma", "wgmma"}
        prefetch and coarsened load what tiled does with the same tile; so do
        register_tiled, warptiled and mma with theirs (every block column reads A
        once, every block row B once).  warptiled's B comes by cp.async, mma's A and
        B too: :func:`predict` counts the copies in ``gld_bytes_requested`` (as the
        H100's load counters do) and again, alone, in ``gldgsts_bytes_requested``;
        mma's copies are whole 16-byte chunks, so where k or n is not a multiple of 4
        they bring the zeros of the padded rows along (rows of round4(k), round4(n)),
        and so do warptiled's float4 loads of A and copies of B.
        wgmma's block rows are 256 (its tiles of C are 256 x 128), and its tiles come by
        the tensor copy, which no load counter sees: here they are the bytes the engine
        reads (its boxes' zero fill past the edges not included).  mma and wgmma's
        launches start with the padding copy where k or n is not a multiple of 4 (A, B
        into the workspace, rows of round4 floats), and so do warptiled's: its loads and
        stores are counted too.
    tile : {8, 16, 32, 64, 128}, default 16 (prefetch: 16 or 32; coarsened: 32 only;
        register_tiled: 64 only; warptiled: 128, the default, or 64; mma, wgmma: 128 only)

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
    p = resolve("model.matmul_traffic", "matmul", FAMILIES["matmul"], variant,
                {"m": m, "n": n, "k": k} | ({} if tile is None else {"tile": tile}))
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    gx, gy = cdiv(n, t), cdiv(m, 2 * t if variant == "wgmma" else t)
    if m == 0 or n == 0:
        loads = 0
    elif variant == "naive":
        loads = 2 * m * n * k                   # every thread: K of A and K of B
    elif variant in ("mma", "warptiled"):       # whole 16 bytes: the padding's zeros too
        loads = gx * m * _round4(k) + gy * k * _round4(n)
    else:
        loads = k * (gx * m + gy * n)           # every block column reads A once, every block row B
    stores = m * n
    if variant in ("mma", "wgmma", "warptiled"):   # the padding copies' (_pad_copies)
        for rows, cols in _padded(m, n, k):
            loads, stores = loads + rows * cols, stores + rows * _round4(cols)
    flops = 2 * m * n * k
    return {
        "load_bytes": 4 * loads,
        "store_bytes": 4 * stores,
        "flops": flops,
        "cgma": round(flops / loads, DECIMALS) if loads else 0.0,
        "flops_per_byte": round(flops / (4 * loads), DECIMALS) if loads else 0.0,
        "min_bytes": 4 * (m * k + k * n + m * n),
    }


def matmul_waves(m: int, n: int, k: int, *, tile: int = 128, splits: int | None = None,
                 sms: int = 132, blocks_per_sm: int = 2) -> dict[str, int | float]:
    """Waves of a warptiled launch and what its split tail does to them (no GPU needed).

    The GPU runs a launch's blocks ``slots = sms x blocks_per_sm`` at a time (the
    defaults: the H100's 132 SMs, two 256-thread warptiled blocks on each).  With
    ``tiles`` blocks of ``tile x tile`` outputs, every block a whole tile, the launch takes
    ``ceil(tiles / slots)`` waves, each as long as one block's ``ceil(k / 16)`` steps of
    16 along K; a last wave of ``tiles % slots`` blocks is as long as a full one.  When it
    is at most half full, :func:`gpumem.matmul` (``variant="warptiled"``) cuts each of its
    tiles into ``splits`` slices of K (left out: ``slots // tail`` of them, at most 16,
    each at least 16 steps), and a second kernel adds the slices in order: that wave's
    ``tail x splits`` blocks then take ``ceil(tail x splits / slots)`` waves of
    ``ceil(steps / splits)`` steps.

    Returns a dict: ``tiles``, ``slots``, ``steps`` (per whole tile), ``whole_waves``
    (full waves), ``tail`` (the last wave's tiles, 0 when it is full), ``splits`` (what
    the launch uses; 1: none), ``steps_before`` and ``steps_after`` (the launch's length
    in steps without and with the split), ``ideal_steps`` (``tiles x steps / slots``:
    every slot busy to the end) and ``efficiency_before`` / ``efficiency_after``
    (ideal over each).  The split's extra work (the slices' stores, the sum kernel) is
    not in the steps: the measured time says what it costs.

    >>> w = matmul_waves(4097, 4097, 4097)
    >>> w["tiles"], w["tail"], w["splits"], round(w["efficiency_before"], 3), round(w["efficiency_after"], 3)
    (1089, 33, 8, 0.825, 0.999)
    >>> matmul_waves(4096, 4096, 4096)["splits"]          # the last wave is 232 of 264
    1
    """
    fn = "model.matmul_waves"
    for name, v in (("m", m), ("n", n), ("k", k), ("sms", sms), ("blocks_per_sm", blocks_per_sm)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}")
        low = 0 if name in ("m", "n", "k") else 1
        if v < low:
            raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be >= {low}")
    if tile not in (64, 128) or isinstance(tile, bool):
        raise ValueError(f"{fn}: tile={tile!r} is not allowed; warptiled's tile must be 64 or 128")
    if splits is not None and (isinstance(splits, bool) or not isinstance(splits, (int, np.integer))):
        raise TypeError(f"{fn}: splits must be an int or None, not {type(splits).__name__}")
    if splits is not None and not 1 <= splits <= 64:
        raise ValueError(f"{fn}: splits={splits} is not allowed; splits must be 1..64")
    tiles, slots, steps = cdiv(m, tile) * cdiv(n, tile), sms * blocks_per_sm, cdiv(k, 16)
    tail = tiles % slots
    s = splits
    if s is None:                                   # csrc/lessons/matmul.c tail_splits()
        s = min(slots // tail, 16, steps // 16) if tail and 2 * tail <= slots else 1
    if s < 2 or tail == 0 or steps < 2:
        s = 1
    s = min(s, max(steps, 1))
    whole = tiles // slots
    before = cdiv(tiles, slots) * steps
    after = before if s == 1 else whole * steps + cdiv(tail * s, slots) * cdiv(steps, s)
    ideal = tiles * steps / slots
    return {"tiles": tiles, "slots": slots, "steps": steps, "whole_waves": whole, "tail": tail,
            "splits": s, "steps_before": before, "steps_after": after, "ideal_steps": ideal,
            "efficiency_before": ideal / before if before else 1.0,
            "efficiency_after": ideal / after if after else 1.0}
