"""The async_copy lesson's kernels (``cuda/async_copy.cu``): ``tile_copy`` and
``tile_transpose``, every variant's global loads (LDG, or cp.async's LDGSTS
copies), its global stores, and the shared-memory accesses of its tile.

Every tile is moved alone (the block's ring of buffers, and ``tiles``, the
tiles per block, change when, not what: they change only the launch's grid): a tile column moves the loads by 128 bytes and the copy's stores by
128, the transpose's by ``128 m``; a tile row by ``128 n`` and 128 -- multiples
of the 128-byte line, so every tile is alike but the last column and the last
row (partial tiles).

The transpose where out's rows are off the 32-byte grid (M % 8 != 0, ``ext``): each
tile also loads the 8 rows below it, and in step q (-1 for the first tile row only,
0 .. 3) lane l of warp w stores column ``r0 + s + 8q + l % 8`` of out row
``c0 + 4w + (l // 8 + q) % 4``, ``s = (-o M) % 8``: four whole sectors per store,
the sectors out spans and no more.  The first tile row and the last but one (whose
ext rows may pass M) are walked apart from the representative tile row.

What the model leaves out, and why:

* The bulk copy engine (``bulk``, ``tensor``, ``tensor_swizzle128``) reads
  global memory without LSU instructions: its bytes are not in the LSU's load
  requests and sectors (``gld_*``), and its writes into shared memory are no
  shared store instructions.  The model counts the loads the block's threads
  make (the tensor variants' rest rows, past the view's last whole group of
  ``k`` rows, which the consumers read straight from a) -- for those variants
  ``gld_*`` is what the LSU sees, the engine's reads are measured as DRAM/L2
  bytes instead.
* A box must start on the 16-byte grid of its view row.  Where n % 4 != 0 the
  view's box j starts at j n rounded down to a multiple of 4: its data lies
  ``shift`` words in, the last columns of a tile row come from the next box (for
  a run's last tile: from the run's tail, 16 bytes per row loaded apart), and the
  transpose reads the next 16-byte chunk too.  The model reads every tile's last
  words from a next box; in a run's last tile they come from the tail, whose
  banks differ: the transpose's ``tensor`` (no swizzle) meets no conflict there
  where a next box's chunks meet 8-way ones (its shared-load wavefronts at
  n % 4 != 0 are over by up to 28 per run), and the copy's few lanes past word 31
  may meet other banks than modelled.  The GPU test compares shared counts at
  multiples of 32 only.
* cp.async's writes into shared memory are not counted as shared stores
  (Nsight Compute counts LDGSTS apart, ``gldgsts_*``).
* A shared load whose every lane is predicated off costs nothing; the copy's
  loads are predicated with the store they feed (as in the transpose lesson),
  the transpose's float4 load feeds four stores and is modelled as executed by
  every lane whose row the tile holds.  Shared counts are exact for interior
  tiles; in the edge tiles of sizes that are not multiples of 32 the compiler's
  predication decides, which the GPU test checks only for multiples of 32.
"""
from __future__ import annotations

import numpy as np

from ._check import index
from ._launch import GRID_Y_MAX, REQUIRED
from ._tally import WARP, cdiv, global_warps, shared_warps

T, THREADS, TILES_PER_BLOCK, TRANSPOSE_TILES, TRANSPOSE_TILES_EXT, EXT = 32, 256, 8, 2, 8, 8
_TB = 4 * T * T                       # a tile in bytes
VARIANTS = ("ldg_sts", "cp_async4", "cp_async16", "bulk", "tensor", "tensor_swizzle128")
_TENSOR = ("tensor", "tensor_swizzle128")
_ENGINE = ("bulk",) + _TENSOR
_WARPS = THREADS // WARP


def group(variant: str, n: int) -> int:
    """Rows per tensor-map row (the tensor variants; 1 for the others)."""
    if variant not in _TENSOR:
        return 1
    return 1 if n % 4 == 0 else 2 if n % 2 == 0 else 4


def tile_row(s, k: int):
    """The tile row smem row ``s`` holds (the tensor view puts box j's rows j, j+k, ...
    at smem rows j*32/k ...)."""
    per = T // k
    return k * (s % per) + s // per


def smem_row(r, k: int):
    """The smem row that holds tile row ``r`` (the inverse of ``tile_row``)."""
    return (r % k) * (T // k) + r // k


def shift(s, k: int, n: int):
    """Words past the 16-byte grid where smem row s's box starts its data (box j
    starts at view column j n rounded down to a multiple of 4)."""
    return ((s // (T // k)) * n) % 4


def chunk_at(variant: str, s, j):
    """The 16-byte chunk where chunk j of smem row s lies (the 128-byte swizzle)."""
    return j ^ (s & 7) if variant == "tensor_swizzle128" else j


def ext(family: str, m: int) -> bool:
    """Whether the tiles hold the EXT rows below them too: the transpose where out's rows
    are off the 32-byte grid (m % 8 != 0), so that a block writes whole sectors of them."""
    return family == "tile_transpose" and m % 8 != 0


def transpose_tiles(m: int) -> int:
    """tile_transpose's default run: 2 tiles per block, 8 where it holds the ext rows."""
    return TRANSPOSE_TILES_EXT if ext("tile_transpose", m) else TRANSPOSE_TILES


def stage_bytes(variant: str, family: str, m: int, n: int) -> int:
    """A stage of the ring: the tile and, with the ext rows, k slots of 1 KiB."""
    return _TB + (1024 * group(variant, n) if ext(family, m) else 0)


def ext_word(t, p, k: int, variant: str):
    """The stage word of tile row t's box word p (p < 32): rows t < 32 at smem row
    smem_row(t), the ext rows in slot t % k after the tile, row (t - 32) // k."""
    t = np.asarray(t)
    row = np.where(t < T, smem_row(t, k), (t - T) // k)
    at = np.where(t < T, 0, T * T + 256 * (t % k))
    return at + row * T + 4 * chunk_at(variant, row, p >> 2) + (p & 3)


def _vec(variant: str, n: int) -> bool:
    """tile_copy stores float4 where n % 4 == 0 (gpumem's arrays are aligned)."""
    return n % 4 == 0


def _tile(tally, family: str, variant: str, m: int, n: int, tx: int, ty: int, wt: int) -> None:
    """The accesses of tile (ty, tx), each standing for ``wt`` tiles."""
    k = group(variant, n)
    xt = ext(family, m)
    r0, c0 = T * ty, T * tx
    lane = np.arange(WARP, dtype=np.int64)[None, :]
    w = np.arange(_WARPS, dtype=np.int64)[:, None]              # warps x lanes
    # ---- filling the tile (with the ext rows: 8 rows more) ----
    if variant in ("ldg_sts", "cp_async4"):
        op = "ld" if variant == "ldg_sts" else "cp"
        for q in range((T + EXT * xt) * T // THREADS):
            row = w + 8 * q + 0 * lane
            r, c = r0 + row, c0 + lane + 0 * w
            global_warps(tally, op, 4 * (r * n + c), (r < m) & (c < n), 4, wt)
            if variant == "ldg_sts":
                shared_warps(tally, "st", 4 * (row * T + lane), None, 4, wt)
    elif variant == "cp_async16":
        t = WARP * w + lane
        for q in range(1 + xt):                            # the ext rows: threads 0 .. 63
            row, j = (t >> 3) + T * q, t & 7
            r, c = r0 + row, c0 + 4 * j
            issued = t < (THREADS if q == 0 else EXT * 8)
            global_warps(tally, "cp", 4 * (r * n + c), (r < m) & (c < n) & issued, 16, wt)
    # the engine fills the tensor variants' tiles; their rest rows (from `first` on) are
    # read from a by the consumers below
    first = k * (m // k) if variant in _TENSOR else m
    # ---- storing it ----
    if family == "tile_copy":
        if _vec(variant, n):
            s = 4 * w + (lane >> 3)
            j = lane & 7
            r, c = r0 + s, c0 + 4 * j
            ok = (r < m) & (c < n)
            shared_warps(tally, "ld", 16 * (s * 8 + chunk_at(variant, s, j)), ok, 16, wt)
            global_warps(tally, "st", 4 * (r * n + c), ok, 16, wt)
        else:
            for q in range(T // 8):
                s = w + 8 * q + 0 * lane
                r, c = r0 + tile_row(s, k), c0 + lane + 0 * w
                ok = (r < m) & (c < n)
                p = lane + shift(s, k, n)                  # past 31: the next box
                word = s * T + 4 * chunk_at(variant, s, (p & 31) >> 2) + (p & 3)
                shared_warps(tally, "ld", 4 * word + _TB * (p >= T), ok & (r < first), 4, wt)
                global_warps(tally, "ld", 4 * (r * n + c), ok & (r >= first), 4, wt)
                global_warps(tally, "st", 4 * (r * n + c), ok, 4, wt)
    elif xt:
        # whole sectors of out: column r0 + s + 8q + g of out row o = c0 + 4w + i in step q
        # (lane l: g = l % 8, i = (l // 8 + q) % 4), s = (-o m) % 8; the first tile row
        # also writes columns 0 .. s - 1 (q = -1)
        g, h = lane & 7, lane >> 3
        st_b = stage_bytes(variant, family, m, n)
        for q in range(-1 if ty == 0 else 0, 4):
            i = (h + q) & 3
            o = c0 + 4 * w + i
            s = (-(o * m)) % 8
            t = s + 8 * q + g
            R = r0 + t
            ok = (t >= 0) & (R < m) & (o < n)
            p = 4 * w + i + ((t % k) * n) % 4                  # past 31: the next box
            word = ext_word(np.maximum(t, 0), p & 31, k, variant)
            shared_warps(tally, "ld", 4 * word + st_b * (p >= T), ok & (R < first), 4, wt)
            global_warps(tally, "ld", 4 * (R * n + o), ok & (R >= first), 4, wt)
            global_warps(tally, "st", 4 * (o * m + R), ok, 4, wt)
    else:
        s = lane + 0 * w
        R = r0 + tile_row(s, k)
        held = R < first
        shared_warps(tally, "ld", 16 * (s * 8 + chunk_at(variant, s, w + 0 * lane)), held, 16,
                     wt)
        if k > 1:                                          # a shifted box: the next chunk too
            shared_warps(tally, "ld", 16 * (s * 8 + chunk_at(variant, s, (w + 1) & 7)) +
                         _TB * (w == 7), held, 16, wt)
        for i in range(4):
            c = c0 + 4 * w + i + 0 * lane
            global_warps(tally, "ld", 4 * (R * n + c), ~held & (R < m) & (c < n), 4, wt)
        for i in range(4):
            orow = c0 + 4 * w + i + 0 * lane
            global_warps(tally, "st", 4 * (orow * m + R), (orow < n) & (R < m), 4, wt)


def _gen(family: str):
    def gen(tally, axis, variant, p):
        m, n = p["m"], p["n"]
        if m == 0 or n == 0:
            return                                           # gpumem launches nothing
        tally.shared = True
        tally.ldgsts = variant in ("cp_async4", "cp_async16")
        gx, gy = cdiv(n, T), cdiv(m, T)
        txs, wx = axis(gx, 1, (gx - 1,))
        # with the ext rows the first tile row writes out's first columns too, and the
        # ext rows of the last but one may pass m: each alone
        tys, wy = axis(gy, 1, (0, gy - 2, gy - 1) if ext(family, m) else (gy - 1,))
        for tx, w1 in zip(txs.tolist(), wx.tolist()):
            for ty, w2 in zip(tys.tolist(), wy.tolist()):
                _tile(tally, family, variant, m, n, tx, ty, w1 * w2)
    return gen


def _check(where: str, variant: str, p: dict) -> None:
    """What the C entry point refuses: more than 65535 tile rows or 2^29 columns; N not a
    multiple of 4 for cp_async16 and bulk; tiles per block not a power of two up to 64.
    tiles=None (the transpose's default): by the shape, transpose_tiles."""
    if p["tiles"] is None:
        p["tiles"] = transpose_tiles(index(where, "m", p["m"]))
    p["tiles"] = index(where, "tiles", p["tiles"], allowed=(1, 2, 4, 8, 16, 32, 64))
    if p["m"] > GRID_Y_MAX * T:
        raise ValueError(f"{where}: m={p['m']} is too large; at most {GRID_Y_MAX * T} rows")
    if p["n"] > 1 << 29:
        raise ValueError(f"{where}: n={p['n']} is too large; at most 2**29 columns")
    if variant in ("cp_async16", "bulk") and p["n"] % 4:
        raise ValueError(f"{where}: n={p['n']} is not a multiple of 4; variant={variant!r} "
                         "copies whole 16-byte chunks of a row")


def _launch_copy(variant: str, p: dict) -> dict[str, tuple[int, int, int]]:
    """(runs of ``tiles`` tiles along a tile row, tile rows)."""
    return {"grid": (cdiv(cdiv(p["n"], T), p["tiles"]), cdiv(p["m"], T), 1),
            "block": (THREADS, 1, 1)}


def _launch_transpose(variant: str, p: dict) -> dict[str, tuple[int, int, int]]:
    """The same blocks on one row, numbered down the column of runs first."""
    return {"grid": (cdiv(cdiv(p["n"], T), p["tiles"]) * cdiv(p["m"], T), 1, 1),
            "block": (THREADS, 1, 1)}


#: The families this module models (see gpumem.model._launch for the keys).
FAMILIES = {
    family: {"variants": VARIANTS,
             "params": {"m": REQUIRED, "n": REQUIRED, "tiles": tiles},
             "gen": _gen(family), "launch": launch, "check": _check}
    for family, launch, tiles in (("tile_copy", _launch_copy, TILES_PER_BLOCK),
                                  ("tile_transpose", _launch_transpose, None))
}
