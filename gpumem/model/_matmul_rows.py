"""What several matmul variants' global accesses share (gpumem.model.matmul): warp
instructions as rows of a matrix, lane by lane (:func:`_rows_stream`, float4 or scalar:
:func:`_vec_or_scalar`), the blocks of warptiled and mma (:func:`_warp_blocks`), and the
launcher's padding copies of operands whose rows are not whole 16-byte chunks
(:func:`_pad_copies`, :func:`_round4`, :func:`_padded`).
"""
from __future__ import annotations

import numpy as np

from ._tally import LINE, WARP, cdiv, dot, period, wmul
from .coalescing import coalesce_warps


def _rows_stream(tally, op: str, row, col, row_base, row_bytes: int, act, width: int,
                 weight) -> None:
    """Warp instructions whose lane l touches ``row[.., l] * row_bytes + 4 * col[.., l]``
    (``width`` bytes), ``act`` lanes only; ``weight`` (the leading axes, without the
    warp axis) says how many instructions each stands for.
    Addresses are taken relative to the warp's ``row_base`` row (at its offset
    modulo the 128-byte line), so sizes past 2^62 bytes count exactly.

    16-byte cp.async copies are taken a quarter warp (8 lanes, 128 bytes) at a time:
    their sectors are counted per quarter, so a sector two quarters touch counts twice.
    Measured on the H100 (mma's padded rows, 16 or 32 bytes apart: at 17 x 200 x 3, 109
    load sectors where the warp's distinct sectors are 93; 33 x 65 x 7 102 for 96;
    257 x 129 x 70 8,616 for 8,301 -- the quarters' count, exactly)."""
    row, col, act = np.broadcast_arrays(row, col, act)
    row_base = np.broadcast_to(row_base, row.shape)
    # (row_base * row_bytes) mod 128, without forming the product
    off = (row_base % LINE) * (row_bytes % LINE) % LINE
    addr = off + (row - row_base) * row_bytes + 4 * col
    addr = np.where(act, addr, 0).reshape(-1, WARP)
    res = coalesce_warps(addr, width, tally.g[op], act.reshape(-1, WARP))
    sectors = res.transactions
    if op == "cp" and width == 16:
        quarters = coalesce_warps(addr.reshape(-1, 8), width, tally.g[op],
                                  act.reshape(-1, 8)).transactions
        sectors = quarters.reshape(-1, 4).sum(axis=1)
    wt = np.broadcast_to(np.asarray(weight)[..., None], row.shape[:-1]).reshape(-1)
    tally.add(op, dot(res.requests, wt), dot(sectors, wt),
              dot(res.bytes_requested, wt))


def _vec_or_scalar(tally, op, row, col, row_base, row_bytes, ok_vec, ok_lane, weight):
    """A float4 access where ``ok_vec`` holds, else four predicated scalar ones
    (``ok_lane(j)``: lane's element j in bounds), as the kernel branches."""
    _rows_stream(tally, op, row, col, row_base, row_bytes, ok_vec, 16, weight)
    for j in range(4):
        _rows_stream(tally, op, row, col + j, row_base, row_bytes, ~ok_vec & ok_lane(j), 4,
                     weight)


def _warp_blocks(axis, m: int, n: int, k: int, t: int, thr: int, bk: int):
    """What warptiled and mma share: ``t`` x ``t`` blocks of C of ``thr`` threads, K in
    steps of ``bk``.  Returns the blocks along x and y, the k steps, each lane's thread index
    (warps x 32), the warp index (a column), the blocks' weights along x and y (blocks of
    one kind stand for their like, :class:`~gpumem.model._tally.Axis`) and their first
    row and column, shaped (nby, 1, 1, 1) and (1, nbx, 1, 1)."""
    nw = thr // WARP
    gx, gy, steps = cdiv(n, t), cdiv(m, t), cdiv(k, bk)
    tid = np.arange(thr, dtype=np.int64).reshape(nw, WARP)        # warps of 32 lanes
    w = np.arange(nw, dtype=np.int64)[:, None]
    bx, wbx = axis(gx, period(4 * t), (gx - 1,))
    by, wby = axis(gy, period(4 * t * k, 4 * t * n), (gy - 1,))
    BM = by[:, None, None, None] * t                     # (nby, 1, 1, 1)
    BN = bx[None, :, None, None] * t                     # (1, nbx, 1, 1)
    return gx, gy, steps, tid, w, wbx, wby, BM, BN


def _round4(x: int) -> int:
    """Floats between the rows of an operand the launcher padded (mma, wgmma, warptiled):
    x rounded
    up to a multiple of 4."""
    return cdiv(x, 4) * 4


def _padded(m: int, n: int, k: int) -> list[tuple[int, int]]:
    """The operands mma, wgmma and warptiled's launcher pads, as (rows, cols): A (m x k)
    where k is not a multiple of 4, B (k x n) where n is not; none where the call has no
    work."""
    return [(r, c) for r, c in ((m, k), (k, n)) if c % 4] if m and n and k else []


def _pad_copies(tally, axis, m: int, n: int, k: int) -> None:
    """mma, wgmma and warptiled's launcher first copies A where k is not a multiple of 4
    (m rows of k floats) and B where n is not (k rows of n) into the workspace, rows
    padded with
    zeros to round4 floats: cuda/matmul.cu's matmul_pad_rows, a kernel of its own that
    the counters see beside the matmul's.  Lane l of warp w, step j of block x copies
    column 1024 x + 256 j + 32 w + l of its row: a 4-byte load where the column is
    inside the row, a 4-byte store where it is inside the padded row (warps with no
    such lane make no access).  An operand off the 16-byte grid for its base address
    alone (a view) is padded too; the model takes gpumem's own, aligned, arrays."""
    for rows, cols in _padded(m, n, k):
        pitch = _round4(cols)
        r, wr = axis(rows, period(4 * cols, 4 * pitch))
        # a warp's 32 columns: 128 bytes on from the last warp's, alike but at the row's end
        nq = cdiv(pitch, WARP)
        q, wq = axis(nq, 1, (cdiv(cols, WARP) - 1, nq - 1))
        r = r[:, None, None, None]
        c = q[None, :, None, None] * WARP + np.arange(WARP, dtype=np.int64)
        wt = wmul(wr[:, None], wq[None, :])
        _rows_stream(tally, "ld", r, c, r, 4 * cols, c < cols, 4, wt)
        _rows_stream(tally, "st", r, c, r, 4 * pitch, c < pitch, 4, wt)
