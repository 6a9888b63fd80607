"""The matmul lesson's tensor-core variants (gpumem.model.matmul): ``mma``
(``cuda/matmul_mma.cuh``: mma.sync m16n8k8 TF32, A and B by cp.async) and ``wgmma``
(``cuda/matmul_wgmma.cuh``: warpgroup MMA fed by the tensor copy) -- their global
accesses, their tiles' shared-memory layouts and the shared accesses outside the k loop.
"""
from __future__ import annotations

import numpy as np

from ._matmul_rows import _pad_copies, _round4, _rows_stream, _warp_blocks
from ._tally import WARP, cdiv, global_warps, period, shared_warps, wmul


# ---- matmul mma: tensor cores (mma.sync m16n8k8 TF32), A and B by cp.async ---------------
_MMA_K, _MMA_THREADS, _MMA_WM, _MMA_WN = 32, 128, 64, 64    # k slice, threads, warp tile


def _mma_a_at(r, c):
    """Float offset of A[r][c] in a stage of cuda/matmul_mma.cuh (rows of 32 floats, the
    16-byte chunk c / 4 of row r stored at chunk (c / 4) ^ 2 (r % 4))."""
    return r * _MMA_K + ((((c >> 2) ^ ((r & 3) << 1)) << 2) | (c & 3))


def _mma_b_at(k, c):
    """Float offset of B[k][c] in a stage (rows of 128 floats, chunk c / 4 of row k
    stored at chunk (c / 4) ^ 2 ((k / 2) % 4))."""
    return k * 128 + ((((c >> 2) ^ (((k >> 1) & 3) << 1)) << 2) | (c & 3))


def _mma_phantom_loads(m: int, n: int, k: int) -> int:
    """Shared load instructions that are counted and never executed: before each k slice's
    copies the compiler (CUDA 13, sm_90a) puts three ``@!PT LDS RZ, [RZ]``, which
    smsp__inst_executed_op_shared_ld counts with no wavefront (as in warptiled): 3 per warp
    and k slice copied, on the fast path and the general one alike."""
    return (_MMA_THREADS // WARP) * 3 * cdiv(m, 128) * cdiv(n, 128) * cdiv(k, _MMA_K)


def _gen_matmul_mma(tally, axis, p):
    """cuda/matmul_mma.cuh: per k slice of 32, A (128 rows x 32) and B (32 x 128 columns)
    by cp.async into shared memory, 16-byte copies all: where K (for A) or N (for B) is
    not a multiple of 4 the launcher first copies the operand into the workspace with rows
    padded to a multiple of 4 floats, the padding zeroed (rows round4(K) or round4(N)
    floats apart; that copy is a kernel of its own, counted by :func:`_pad_copies`).  A
    copy starting inside the matrix takes its 16 bytes (past K or N: padding); lanes
    outside copy nothing (src-size 0) and count nothing.  At the end C from the
    accumulator fragments (the warps compute C's transpose): lane (g, t) of each 8-row x
    16-column tile of C writes rows 2t and 2t + 1, columns 2g and 2g + 1, as one 8-byte
    store each where N is even, else two predicated 4-byte ones.  Each slice is copied
    once per block (the pipeline's prologue copies slices 0 and 1, iteration s copies
    s + 2)."""
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    thr, bk = _MMA_THREADS, _MMA_K
    tally.ldgsts = True                  # the variant's keys, zeros included
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    gx, gy, steps, tid, w, wbx, wby, BM, BN = _warp_blocks(axis, m, n, k, t, thr, bk)
    # ---- C: warp w's tile at (wm, wn); tile (i, j), half h: row wm + 8i + 2t + h,
    # columns wn + 16j + 2g, + 1 -- the 64 (i, h, j) stores of a lane on a leading axis
    wm, wn = (w // (t // _MMA_WN)) * _MMA_WM, (w % (t // _MMA_WN)) * _MMA_WN
    g, tq = tid % WARP // 4, tid % WARP % 4
    i, h, j = (x.reshape(-1, 1, 1, 1, 1) for x in np.meshgrid(
        np.arange(_MMA_WM // 8), np.arange(2), np.arange(_MMA_WN // 16), indexing="ij"))
    wc = wmul(wby[:, None], wbx[None, :])               # (nby, nbx)
    r0 = BM + wm + 8 * i + h                             # the warp's first row
    r, c = r0 + 2 * tq, BN + wn + 16 * j + 2 * g
    ok = r < m
    vec = ok & (c + 1 < n) if n % 2 == 0 else np.zeros(np.broadcast(r, c).shape, bool)
    _rows_stream(tally, "st", r, c, r0, 4 * n, vec, 8, wc)
    for e in range(2):
        _rows_stream(tally, "st", r, c + e, r0, 4 * n, ~vec & ok & (c + e < n), 4, wc)
    if k == 0:
        return
    _pad_copies(tally, axis, m, n, k)
    st, wst = axis(steps, period(4 * bk, 4 * bk * _round4(n)), (steps - 1,))
    # ---- A, every block column: 16-byte copy f = tid + i * threads is row f / 8, columns
    # 4 (f % 8) .. + 3 (i on a leading axis)
    K0 = st[None, :, None, None] * bk                    # (1, ns, 1, 1)
    wa = wmul(wby[:, None], wst[None, :], gx)
    per_row = bk // 4
    i = np.arange(bk * t // 4 // thr, dtype=np.int64).reshape(-1, 1, 1, 1, 1)
    e = tid + i * thr
    r, kk = BM + e // per_row, K0 + (e % per_row) * 4
    _rows_stream(tally, "cp", r, kk, BM + (WARP * w + i * thr) // per_row, 4 * _round4(k),
                 (r < m) & (kk < k), 16, wa)
    # ---- B, every block row: copy e is row e / per_row, columns 4 (e % per_row) .. + 3
    K0b = st[:, None, None, None] * bk                   # (ns, 1, 1, 1)
    wb = wmul(wst[:, None], wbx[None, :], gy)
    per_row = t // 4
    i = np.arange(bk * t // 4 // thr, dtype=np.int64).reshape(-1, 1, 1, 1, 1)
    e = tid + i * thr
    kr, c = K0b + e // per_row, BN + (e % per_row) * 4
    _rows_stream(tally, "cp", kr, c, K0b + (WARP * w + i * thr) // per_row, 4 * _round4(n),
                 (kr < k) & (c < n), 16, wb)


# ---- matmul wgmma: warpgroup MMA (TF32) fed by the tensor copy (TMA) -------------------------
_WG_BM, _WG_BN, _WG_K, _WG_THREADS, _WG_STAGES, _WG_C_PITCH = 256, 128, 32, 256, 4, 130


def _wg_col(warp, g, h):
    """The tile column wgmma's row 16 (warp % 4) + g + 8 h of warpgroup warp / 4 stands
    for (two chunk groups per fragment load: 32 banks with the swizzle)."""
    w = warp % 4
    return 64 * (warp // 4) + 32 * (w // 2) + 8 * (w % 2) + g % 4 + 4 * h + 16 * (g // 4)


def _wgmma_shared_edges(tally, m: int, n: int) -> None:
    """wgmma's shared accesses outside the k loop: the last block column zeroes, in every
    stage, the boxes of B wholly past N (never copied: 32 consecutive floats a warp
    instruction, one wavefront); every block stages its tile of C (each lane's 128
    accumulators, 4-byte stores to rows of 130 floats: 32 banks a warp) and reads it back
    as float2s, half a tile row a warp, the lanes whose element is inside C."""
    gx, gy = cdiv(n, _WG_BN), cdiv(m, _WG_BM)
    if n % _WG_BN and cdiv(n % _WG_BN, 32) < _WG_BN // 32:
        inst = _WG_STAGES * (_WG_BN // 32 - cdiv(n % _WG_BN, 32)) * 1024 // WARP
        tally.shared_access("st", inst * gy, inst * gy)
    lane = np.arange(WARP, dtype=np.int64)
    warp = np.arange(_WG_THREADS // WARP, dtype=np.int64)[:, None]
    g, tq = lane // 4, lane % 4
    for h in (0, 1):
        for e in (0, 1):
            for j in range(32):
                addr = 4 * ((8 * j + 2 * tq + e) * _WG_C_PITCH + _wg_col(warp, g, h))
                shared_warps(tally, "st", addr, None, 4, gx * gy)
    # the read back: iteration it of warp w covers tile row 4 it + w / 2, columns
    # 2 (32 (w % 2) + lane), + 1
    for by, wy in ((0, gy - 1), (gy - 1, 1)) if gy > 1 else ((0, 1),):
        for bx, wx in ((0, gx - 1), (gx - 1, 1)) if gx > 1 else ((0, 1),):
            if wx * wy == 0:
                continue
            r = 4 * np.arange(_WG_BM // 4)[:, None, None] + warp[None] // 2
            c = 2 * (32 * (warp[None] % 2) + lane)
            ok = (by * _WG_BM + r < m) & (bx * _WG_BN + c < n)
            shared_warps(tally, "ld", (4 * (r * _WG_C_PITCH + c) + 0 * ok).reshape(-1, WARP),
                         ok.reshape(-1, WARP), 8, wx * wy)


def _wg_frag_at(nl, kl):
    """Byte offset in a stage of cuda/matmul_wgmma.cuh of B[k0 + kl][bn + nl]: after the A
    tile (32 KiB), box nl / 32 (4 KiB: 32 rows of 128 bytes, the 128-byte swizzle puts
    chunk j of row kl at j ^ (kl % 8))."""
    c = nl % 32
    return (_WG_BM * _WG_K * 4 + (nl // 32) * 4096 + kl * 128 + (((c // 4) ^ (kl % 8)) << 4)
            + (c % 4) * 4)


def _gen_matmul_wgmma(tally, axis, p):
    """cuda/matmul_wgmma.cuh: A and B reach shared memory by the tensor copy (TMA), which
    makes no load instructions -- ``gld_*`` are the padding copies' alone (see
    :func:`_pad_copies`, where k or n is not a multiple of 4), and the engine's reads are
    L2/DRAM bytes (``matmul_traffic`` counts them: every block column reads A once, every
    block row B once).  C, staged in shared memory, leaves as float2 stores, half a row of the
    256 x 128 tile per warp instruction (iteration it of warp w: row 4 it + w / 2, columns
    2 (32 (w % 2) + lane), + 1), where N is even and C 8-byte aligned; else two
    predicated 4-byte stores."""
    m, n = p["m"], p["n"]
    tally.shared = True
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    _pad_copies(tally, axis, m, n, p["k"])
    gx, gy = cdiv(n, _WG_BN), cdiv(m, _WG_BM)
    bx, wbx = axis(gx, period(4 * _WG_BN), (gx - 1,))
    by, wby = axis(gy, period(4 * _WG_BM * n), (gy - 1,))
    lane = np.arange(WARP, dtype=np.int64)
    warp = np.arange(_WG_THREADS // WARP, dtype=np.int64)[:, None]
    r = (4 * np.arange(_WG_BM // 4)[:, None, None] + warp[None] // 2).reshape(-1, 1)
    c = (2 * (32 * (warp % 2) + lane))[None].repeat(_WG_BM // 4, 0).reshape(-1, WARP)
    for x, wx in zip(bx.tolist(), wbx.tolist()):
        col = x * _WG_BN + c
        for y, wy in zip(by.tolist(), wby.tolist()):
            row = y * _WG_BM + r + 0 * col
            ok = (row < m) & (col < n)
            vec = ok & (col + 1 < n) if n % 2 == 0 else np.zeros(ok.shape, bool)
            global_warps(tally, "st", 4 * (row * n + col), vec, 8, wx * wy)
            global_warps(tally, "st", 4 * (row * n + col), ok & ~vec, 4, wx * wy)
            global_warps(tally, "st", 4 * (row * n + col + 1), ok & ~vec & (col + 1 < n), 4,
                         wx * wy)
