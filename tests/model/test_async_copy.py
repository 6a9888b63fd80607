"""gpumem.model.async_copy: tile_copy and tile_transpose against closed forms (every row
of every tile a run of bytes, its sectors counted here on their own), the per-tile walk,
and the shared-memory wavefronts of the tile (the transpose's swizzle)."""
import itertools

import numpy as np
import pytest

from gpumem import model
from gpumem.model import async_copy, predict
from gpumem.model.registry import _predict_reference

VARIANTS = async_copy.VARIANTS
SIZES = [(1, 1), (3, 5), (7, 1), (33, 127), (64, 96), (190, 257), (257, 65), (35, 38),
         (96, 4 * 37 + 2), (129, 131)]


def _runs(starts, lengths):
    """Requests (one per run) and 32-byte sectors of byte runs [start, start + length)."""
    starts, lengths = np.asarray(starts), np.asarray(lengths)
    sectors = (starts + lengths - 1) // 32 - starts // 32 + 1
    return len(starts), int(sectors.sum())


def _row_runs(rows, cols, tile=32):
    """Every row of every tile column of a rows x cols matrix as a byte run."""
    c0 = np.arange(0, cols, tile)
    r = np.arange(rows)[:, None]
    return (4 * (r * cols + c0[None, :])).ravel(), \
        np.broadcast_to(4 * np.minimum(tile, cols - c0)[None, :], (rows, len(c0))).ravel()


def _ext_row_runs(rows, cols, tile=32, ext=8):
    """The transpose's loads where out's rows are off the 32-byte grid: every tile's rows
    and the 8 below it, each a run of the tile column's bytes."""
    starts, lengths = [], []
    for r0 in range(0, rows, tile):
        for r in range(r0, min(r0 + tile + ext, rows)):
            for c0 in range(0, cols, tile):
                starts.append(4 * (r * cols + c0))
                lengths.append(4 * min(tile, cols - c0))
    return starts, lengths


def _ok(variant, n):
    return not (variant in ("cp_async16", "bulk") and n % 4)


@pytest.mark.parametrize("m, n", SIZES)
def test_global_sectors_are_the_rows_of_the_tiles(m, n):
    a_req, a_sec = _runs(*_row_runs(m, n))          # a: every tile row a run (the copy's out)
    t_req, t_sec = _runs(*_row_runs(n, m))          # out = a.T: the same for n x m
    ext = m % 8 != 0                                # out's rows off the 32-byte grid:
    _, o_sec = _runs(*_row_runs(n, m, tile=m))      # whole sectors, as many as out's rows
    x_req, x_sec = _runs(*_ext_row_runs(m, n))      # span, and 8 rows more per tile loaded
    for v in VARIANTS:
        if not _ok(v, n):
            continue
        for fam in ("tile_copy", "tile_transpose"):
            p = predict(fam, v, m=m, n=n)
            loaded = sum(_ext_row_runs(m, n)[1]) if fam == "tile_transpose" and ext \
                else 4 * m * n
            assert p["gld_bytes_requested"] == (loaded if v not in async_copy._ENGINE
                                                else 4 * (m % (async_copy.group(v, n))) * n
                                                if v != "bulk" else 0), (fam, v)
            assert p["gst_bytes_requested"] == 4 * m * n
            if fam == "tile_transpose" and ext and m > 32:
                assert p["gst_transactions"] == o_sec <= t_sec, (v, m, n)
            elif fam == "tile_transpose" and ext:   # one tile row: a request may hold two
                assert p["gst_transactions"] <= o_sec, (v, m, n)     # rows' shared sector
            elif fam == "tile_transpose":
                assert (p["gst_requests"], p["gst_transactions"]) == (t_req, t_sec), (v, m, n)
            elif n % 4:                             # a float per lane: a request per tile row
                assert (p["gst_requests"], p["gst_transactions"]) == (a_req, a_sec), (v, m, n)
            else:                                   # float4: 4 tile rows per request
                assert p["gst_transactions"] == a_sec
            xt = fam == "tile_transpose" and ext
            if v in ("ldg_sts", "cp_async4"):       # a request per tile row
                assert (p["gld_requests"], p["gld_transactions"]) == \
                    ((x_req, x_sec) if xt else (a_req, a_sec)), (fam, v, m, n)
            if v in ("cp_async4", "cp_async16"):    # cp.async's copies, alone too
                assert p["gldgsts_transactions"] == p["gld_transactions"] == \
                    (x_sec if xt else a_sec)
            else:
                assert "gldgsts_transactions" not in p


def test_the_transpose_writes_whole_sectors_where_out_rows_are_off_the_grid():
    # m = 36: out's rows 144 bytes apart, every odd one 16 bytes off the 32-byte grid;
    # s(o) = (-36 o) % 8 is 0 (o even) or 4 (o odd).  Tile row 0: 8 warps x 4 steps, and
    # the step q = -1 (columns 0 .. 3 of the odd rows); tile row 1: columns 32 .. 35 of
    # the even rows, one step.  Every row of out is 5 sectors, none shared by two warps.
    for v in VARIANTS:
        p = predict("tile_transpose", v, m=36, n=32)
        assert (p["gst_requests"], p["gst_transactions"]) == (8 * 4 + 8 + 8, 32 * 5), v
    # the loads: the 8 rows below a tile too (ldg_sts: rows 32 .. 35 twice)
    p = predict("tile_transpose", "ldg_sts", m=36, n=32)
    assert (p["gld_requests"], p["gld_transactions"]) == (32 + 4 + 4, 4 * (36 + 4))
    assert p["shared_store_requests"] == 8 * 5 + 8 * 5
    # with the swizzle, every step's shared load meets 32 banks
    p = predict("tile_transpose", "tensor_swizzle128", m=36, n=32)
    assert p["shared_load_transactions"] == p["shared_load_requests"] == 48
    # at 8190 (pairs of rows in the view, odd rows shifted 2 words): 8192 x 8 + ... requests
    p, q = (predict("tile_transpose", "tensor_swizzle128", m=m, n=m) for m in (8190, 8192))
    assert p["gst_transactions"] == _runs(*_row_runs(8190, 8190, tile=8190))[1]
    assert p["gst_transactions"] < 1.01 * q["gst_transactions"] * (8190 / 8192) ** 2


def test_the_copy_engine_reads_are_no_load_requests():
    for v in ("bulk", "tensor", "tensor_swizzle128"):
        p = predict("tile_transpose", v, m=256, n=192)
        assert p["gld_requests"] == p["gld_transactions"] == 0
    # an odd M with rows in fours (n odd): the 3 rest rows are read from a by the threads.
    # The copy: one request per rest row and tile column (a warp reads 32 columns of a row)
    p = predict("tile_copy", "tensor", m=35, n=71)
    assert async_copy.group("tensor", 71) == 4 and p["gld_requests"] == 3 * 3
    assert p["gld_bytes_requested"] == 4 * 3 * 71
    # the transpose (m % 8 != 0: whole sectors of out, see above): every rest element read
    # once, where it is stored; a step's lanes read rows of several columns at once
    p = predict("tile_transpose", "tensor", m=35, n=71)
    assert p["gld_requests"] < 71 and p["gld_bytes_requested"] == 4 * 3 * 71
    assert predict("tile_transpose", "tensor", m=36, n=70)["gld_requests"] == 0  # pairs: none left


def test_the_swizzle_and_the_shared_wavefronts():
    tiles = 8 * 6
    for fam in ("tile_copy", "tile_transpose"):
        for v in VARIANTS:
            p = predict(fam, v, m=256, n=192)
            assert p["shared_load_requests"] == 8 * tiles           # 8 warp loads per tile
            if fam == "tile_transpose" and v != "tensor_swizzle128":
                # lane l reads chunk w of tile row l: 8 lanes of a quarter warp, 4 banks
                assert p["shared_load_transactions"] == 32 * 8 * tiles
            else:                                                   # 16-byte reads, no conflict
                assert p["shared_load_transactions"] == 4 * 8 * tiles
            stores = 32 * tiles if v == "ldg_sts" else 0           # STS: 4 per thread
            assert p["shared_store_requests"] == p["shared_store_transactions"] == stores
    # n % 4 != 0: the copy reads a float per lane, conflict-free with and without the swizzle
    for v in ("ldg_sts", "tensor", "tensor_swizzle128"):
        p = predict("tile_copy", v, m=64, n=62)
        assert p["shared_load_transactions"] == p["shared_load_requests"] == 2 * 2 * 32


@pytest.mark.parametrize("fam, v", [(f, v) for f in ("tile_copy", "tile_transpose")
                                    for v in VARIANTS])
def test_every_tile_walked_equals_the_representatives(fam, v):
    for m, n in itertools.product((1, 31, 64, 97, 300), (1, 33, 64, 98, 301)):
        if _ok(v, n):
            assert predict(fam, v, m=m, n=n) == _predict_reference(fam, v, m=m, n=n), (m, n)


def test_the_views_match_the_lesson():
    for n, k in ((8192, 1), (8190, 2), (8191, 4), (6, 2), (1, 4)):
        assert async_copy.group("tensor", n) == k
        assert async_copy.group("ldg_sts", n) == 1
        for s in range(32):                     # smem row and tile row: inverse maps
            assert async_copy.smem_row(async_copy.tile_row(s, k), k) == s


def test_launch_and_refusals():
    assert model.launch_config("tile_copy", "tensor", m=8190, n=8190) == \
        {"grid": (32, 256, 1), "block": (256, 1, 1)}
    # the transpose: runs of 2 tiles by default (8 where M % 8 != 0), the blocks on one
    # row, the tile row fastest
    assert model.launch_config("tile_transpose", "tensor", m=8192, n=8190) == \
        {"grid": (128 * 256, 1, 1), "block": (256, 1, 1)}
    assert model.launch_config("tile_transpose", "tensor", m=8190, n=8190) == \
        {"grid": (32 * 256, 1, 1), "block": (256, 1, 1)}
    assert [async_copy.transpose_tiles(m) for m in (8, 8192, 8190, 1, 36)] == [2, 2, 8, 8, 8]
    assert model.launch_config("tile_transpose", "tensor", m=100, n=300, tiles=2)["grid"] == \
        (5 * 4, 1, 1)
    assert model.launch_config("tile_copy", "ldg_sts", m=1, n=300)["grid"] == (2, 1, 1)
    assert model.launch_config("tile_copy", "ldg_sts", m=1, n=300, tiles=2)["grid"] == (5, 1, 1)
    assert predict("tile_copy", "tensor", m=100, n=300, tiles=1) == \
        predict("tile_copy", "tensor", m=100, n=300, tiles=64)      # tiles: when, not what
    with pytest.raises(ValueError, match="tiles=3 is not allowed"):
        predict("tile_copy", "bulk", m=4, n=8, tiles=3)
    with pytest.raises(ValueError, match="n=6 is not a multiple of 4; variant='bulk'"):
        predict("tile_copy", "bulk", m=4, n=6)
    with pytest.raises(ValueError, match="m=2097121 is too large"):
        predict("tile_copy", "tensor", m=65535 * 32 + 1, n=4)
    assert predict("tile_copy", "tensor", m=0, n=5)["gst_requests"] == 0
