"""The access lesson's kernels (``cuda/access.cu``): ``vec_add``,
``read_offset``, ``write_offset`` and ``copy``, warp by warp.

Every array is its own ``cudaMalloc`` (256-byte aligned): ``A``, ``B`` and
``C`` start on the 32-byte grid, so only an offset, a partial warp or a bound
check moves a warp's bytes off it.
"""
from __future__ import annotations

import numpy as np

from ._launch import REQUIRED, grid_1d, one_d
from ._tally import WARP, active_lanes, cdiv, simple_1d, warps_1d


def _unroll(variant: str) -> int:
    return 4 if variant == "unroll4" else 1


def _grid_offset(variant: str, p: dict) -> int:
    """read_offset / write_offset: each thread handles ``unroll`` elements one block apart."""
    return cdiv(p["n"], _unroll(variant) * p["block"])


def _grid_copy(variant: str, p: dict) -> int:
    """copy: float4 gives a thread four floats, the tail (n % 4 floats) one each."""
    if variant == "float4":
        return cdiv(p["n"] // 4 + p["n"] % 4, p["block"])
    return grid_1d(variant, p)


def _offset_family(tally, axis, variant: str, p: dict, shifted: str) -> None:
    """read_offset / write_offset: ``k = i + offset``; ``shifted`` is "ld" or "st"."""
    n, off, block = p["n"], p["offset"], p["block"]
    unroll = _unroll(variant)
    if n == 0:
        return
    grid = cdiv(n, unroll * block)
    base, w32, lanes, wt = warps_1d(axis, grid, block, unroll * block, limits=(n - off,))
    for j in range(unroll):
        i0 = base + j * block + w32            # thread index of lane 0
        cnt = active_lanes(n - off, i0, lanes)  # guard: i + offset < n
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
    i0, cnt, wt = simple_1d(axis, grid_1d(variant, p), p["block"], p["n"])
    tally.affine("ld", 4 * i0, cnt, 4, 4, 2 * wt)
    tally.affine("st", 4 * i0, cnt, 4, 4, wt)


def _gen_copy(tally, axis, variant, p):
    n, block = p["n"], p["block"]
    if n == 0:
        return
    if variant == "float":
        i0, cnt, wt = simple_1d(axis, grid_1d(variant, p), block, n)
        tally.affine("ld", 4 * i0, cnt, 4, 4, wt)
        tally.affine("st", 4 * i0, cnt, 4, 4, wt)
        return
    n4, r = n // 4, n % 4
    base, w32, lanes, wt = warps_1d(axis, _grid_copy(variant, p), block, limits=(n4, n4 + r))
    i0 = base + w32
    c4 = active_lanes(n4, i0, lanes)                  # threads i < n4: one float4 each
    tally.affine("ld", 16 * i0, c4, 16, 16, wt)
    tally.affine("st", 16 * i0, c4, 16, 16, wt)
    lo = np.maximum(i0, n4)                           # threads n4 <= i < n4 + r: the tail
    cs = np.clip(np.minimum(i0 + lanes, n4 + r) - lo, 0, WARP)
    e0 = 4 * n4 + (lo - n4)
    tally.affine("ld", 4 * e0, cs, 4, 4, wt)
    tally.affine("st", 4 * e0, cs, 4, 4, wt)


#: The families this module models (see gpumem.model._launch for the keys).
FAMILIES = {
    "vec_add": one_d(("default",), {"n": REQUIRED, "block": 256}, _gen_vec_add, grid_1d, 4),
    "read_offset": one_d(("unroll1", "unroll4"),
                         {"n": REQUIRED, "offset": 0, "block": 512, "cache": "default"},
                         _gen_read_offset, _grid_offset, 4),
    "write_offset": one_d(("unroll1", "unroll4"),
                          {"n": REQUIRED, "offset": 0, "block": 512, "cache": "default"},
                          _gen_write_offset, _grid_offset, 4),
    "copy": one_d(("float", "float4"), {"n": REQUIRED, "block": 256}, _gen_copy, _grid_copy, 4),
}
