"""The transpose lesson's kernels (``cuda/transpose.cu``): ``transpose`` (every
variant's global loads and stores and its shared-memory tile) and
``shared_stride`` (one warp's strided shared loads, the bank-conflict ways).

A block column moves transpose's loads by ``4t`` bytes and its stores by
``4tm``, a block row by ``4tn`` and ``4t``: multiples of the 128-byte line, so
every block is alike but the last column and the last row (partial tiles).
"""
from __future__ import annotations

import numpy as np

from ._launch import BYTES_MAX, DIM_MAX, GRID_Y_MAX, REQUIRED
from ._tally import WARP, cdiv, global_warps, shared_warps, warps_1d


_TILE, _WIDE = 32, 64


def _transpose_shape(variant: str, m: int, n: int) -> tuple[bool, int, int]:
    """(float4 path, tile, threadIdx.y extent) of a transpose launch, as the launcher picks."""
    wide = variant == "coarsened" and m % 4 == 0 and n % 4 == 0
    if wide:
        return True, _WIDE, 16
    return False, _TILE, 4 if variant == "coarsened" else 8


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
    gx, gy = cdiv(n, t), cdiv(m, t)
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
                global_warps(tally, op, addr, ok, width, w1 * w2)
            for op, addr, ok, width in shared:
                addr = np.broadcast_to(addr, (addr.shape[0], WARP))
                ok = None if ok is None else np.broadcast_to(ok, addr.shape)
                shared_warps(tally, op, addr, ok, width, w1 * w2)


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
    shared_warps(tally, "st", (width * np.arange(WARP, dtype=np.int64))[None, :], None, width,
                 fill * blocks)
    # the loads: lane l reads element l * stride (+ 32 i: the same banks) every step
    addr = (width * ((np.arange(WARP, dtype=np.int64) * stride) % nelem))[None, :]
    shared_warps(tally, "ld", addr, None, width, iters * warps * blocks)
    # one float per thread to global memory
    base, w32, lanes, wt = warps_1d(axis, blocks, _STRIDE_BLOCK)
    tally.affine("st", 4 * (base + w32), lanes, 4, 4, wt)


def _check_transpose(where: str, variant: str, p: dict) -> None:
    """What the C entry point refuses: more than 65535 block rows, 2^31 - 65
    columns, a matrix past 2^63 - 1 bytes."""
    if p["m"] > GRID_Y_MAX * _TILE:
        raise ValueError(f"{where}: m={p['m']} is too large; transpose takes at most "
                         f"{GRID_Y_MAX * _TILE} rows")
    if p["n"] > DIM_MAX - 64:
        raise ValueError(f"{where}: n={p['n']} is too large; transpose takes at most "
                         "2**31 - 65 columns")
    if 4 * p["m"] * p["n"] > BYTES_MAX:
        raise ValueError(f"{where}: m={p['m']} and n={p['n']}: the matrix would hold more "
                         "than the 2**63 - 1 bytes an array can hold")


def _launch_transpose(variant: str, p: dict) -> dict[str, tuple[int, int, int]]:
    _, t, brows = _transpose_shape(variant, p["m"], p["n"])
    return {"grid": (cdiv(p["n"], t), cdiv(p["m"], t), 1), "block": (WARP, brows, 1)}


def _launch_shared_stride(variant: str, p: dict) -> dict[str, tuple[int, int, int]]:
    return {"grid": (p["blocks"], 1, 1), "block": (_STRIDE_BLOCK, 1, 1)}


#: The families this module models (see gpumem.model._launch for the keys).
#: shared_stride's variant is the word it reads; its stride runs 1..32 lanes' words.
FAMILIES = {
    "transpose": {"variants": ("naive_row", "naive_col", "shared", "padded", "swizzled",
                               "coarsened"),
                  "params": {"m": REQUIRED, "n": REQUIRED}, "gen": _gen_transpose,
                  "launch": _launch_transpose, "check": _check_transpose},
    "shared_stride": {"variants": tuple(_WORDS),
                      "params": {"stride": 1, "iters": 256, "blocks": 1024},
                      "gen": _gen_shared_stride, "launch": _launch_shared_stride,
                      "limits": {"stride": (1, 32)}},
}
