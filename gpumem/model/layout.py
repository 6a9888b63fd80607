"""The layout lesson's kernels (``cuda/layout.cu``): ``strided_read``,
``struct_update`` and ``distance``, warp by warp.

In SoA layout ``struct_update`` and ``distance`` keep x, y (and z) one after
the other in one buffer, so y starts ``4*n`` bytes in -- off the 32-byte grid
unless n is a multiple of 8.
"""
from __future__ import annotations

from ._launch import REQUIRED, grid_1d, one_d
from ._tally import cdiv, simple_1d


def _grid_strided(variant: str, p: dict) -> int:
    """strided_read: one thread per element it reads, ``ceil(n / stride)`` of them."""
    return cdiv(cdiv(p["n"], p["stride"]), p["block"])


def _gen_strided_read(tally, axis, variant, p):
    s = p["stride"]
    m = cdiv(p["n"], s)
    if m == 0:
        return
    i0, cnt, wt = simple_1d(axis, _grid_strided(variant, p), p["block"], m)
    tally.affine("ld", 4 * s * i0, cnt, 4 * s, 4, wt)
    tally.affine("st", 4 * i0, cnt, 4, 4, wt)


def _gen_struct_update(tally, axis, variant, p):
    n = p["n"]
    if n == 0:
        return
    i0, cnt, wt = simple_1d(axis, grid_1d(variant, p), p["block"], n)
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
    i0, cnt, wt = simple_1d(axis, grid_1d(variant, p), p["block"], n)
    if variant == "aos":   # {float x, y, z}: three 4-byte loads 12 bytes apart per lane
        for field in (0, 4, 8):
            tally.affine("ld", 12 * i0 + field, cnt, 12, 4, wt)
    else:                  # x, y, z = points, points + n, points + 2n
        for row in (0, 4 * n, 8 * n):
            tally.affine("ld", row + 4 * i0, cnt, 4, 4, wt)
    tally.affine("st", 4 * i0, cnt, 4, 4, wt)


#: The families this module models (see gpumem.model._launch for the keys).
FAMILIES = {
    "strided_read": one_d(("default",), {"n": REQUIRED, "stride": 1, "block": 512},
                          _gen_strided_read, _grid_strided, 4),
    "struct_update": one_d(("aos", "soa"), {"n": REQUIRED, "block": 512}, _gen_struct_update,
                           grid_1d, 8),
    "distance": one_d(("aos", "soa"), {"n": REQUIRED, "block": 512}, _gen_distance, grid_1d, 12),
}
