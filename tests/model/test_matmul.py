"""gpumem.model.matmul: every variant against the thread-by-thread reference,
the cp.async copies of warptiled, the shared-memory counters the H100 measured,
the per-warp walk, and matmul_traffic."""
import itertools

import pytest

from gpumem import model
from gpumem.model import predict
from gpumem.model.registry import LDGSTS_METRICS, SHARED_METRICS

from ._reference import assert_fast_equals_reference, assert_same


@pytest.mark.parametrize("variant, tile", [(v, t) for v in ("naive", "tiled") for t in (8, 16, 32)]
                         + [("prefetch", 16), ("prefetch", 32), ("coarsened", 32),
                            ("register_tiled", 64), ("warptiled", 64), ("warptiled", 128),
                            ("mma", 128), ("wgmma", 128)])
def test_matmul_equals_the_thread_by_thread_reference(variant, tile):
    # (130, 129, 33): just over a 128 tile and two 64 tiles, N and K not multiples of 4
    # (scalar stores; padded copies of the operands for warptiled, mma and wgmma);
    # (129, 132, 36): the same with the float4 paths and the partial last tiles
    for m, n, k in ((1, 1, 1), (33, 17, 5), (17, 70, 40), (64, 64, 64), (40, 9, 3), (5, 33, 9),
                    (130, 129, 33), (129, 132, 36)):
        assert_same("matmul", variant, m=m, n=n, k=k, tile=tile)
    assert_same("matmul", variant, granularity=128, m=20, n=50, k=11, tile=tile)
    assert_same("matmul", variant, m=0, n=5, k=3, tile=tile)
    assert_same("matmul", variant, m=7, n=9, k=0, tile=tile)


def test_warptiled_copies_b_by_cp_async_not_by_loads():
    """B reaches shared memory by cp.async (LDGSTS): the gldgsts keys count the copies
    alone, the gld requests and sectors A's loads and the copies (as the H100's l1tex
    op_ld counters do); the cp.async keys come with the variant (zeros where nothing is
    launched) and with no other kernel."""
    for t in (64, 128):
        r = predict("matmul", "warptiled", m=t, n=t, k=16, tile=t)
        # one block, one step: A and B tiles of t x 16 and 16 x t floats, in float4s
        assert r["gld_bytes_requested"] == 2 * r["gldgsts_bytes_requested"] == 2 * 4 * 16 * t
        # t / 16 warps (256 or 128 threads), 2 instructions each, for A and for B
        assert r["gld_requests"] == 2 * r["gldgsts_requests"] == 2 * 2 * (t // 16)
        assert r["gld_transactions_per_request"] == 16.0 and r["gld_efficiency"] == 100.0
        assert 2 * r["gldgsts_transactions"] == r["gld_transactions"]
        assert set(r) == (set(model.METRICS) | set(LDGSTS_METRICS)
                          | set(SHARED_METRICS))
        empty = predict("matmul", "warptiled", m=0, n=4, k=4, tile=t)
        assert {key: empty[key] for key in LDGSTS_METRICS} == \
            dict.fromkeys(LDGSTS_METRICS, 0)
    for v in model.families()["matmul"]:
        if v not in ("warptiled", "mma"):
            assert not set(LDGSTS_METRICS) & set(predict("matmul", v, m=9, n=9, k=9))


#: Shared-memory counters of one launch per variant at 64 x 64 x 64 on the H100 (Nsight
#: Compute, 2026-11-23, two runs equal): load instructions, load wavefronts, store
#: instructions, store wavefronts.  Every float4 read the tiled kernels make is a
#: broadcast (2 wavefronts); register_tiled's B rows and warptiled's A rows are 8
#: different float4s a quarter warp (4); warptiled's B a float4 per quarter (2); the
#: transposing stores of A are 2-way conflicts; warptiled's load instructions include
#: three never-executed loads the compiler puts before each step's cp.async copies;
#: prefetch stores its first tiles before its loop and the next ones in every step.
MATMUL_SHARED_64 = {("tiled", 8): (10240, 12288, 2048, 2048),
                    ("tiled", 16): (10240, 12288, 1024, 1024),
                    ("tiled", 32): (10240, 12288, 512, 512),
                    ("prefetch", 32): (10240, 12288, 768, 768),
                    ("coarsened", 32): (4096, 6144, 512, 512),
                    ("register_tiled", 64): (1024, 3072, 160, 384),
                    ("warptiled", 64): (816, 2048, 128, 256),
                    ("warptiled", 128): (2144, 6144, 256, 512)}


@pytest.mark.parametrize("variant,tile", sorted(MATMUL_SHARED_64))
def test_matmul_shared_memory_as_measured(variant, tile):
    r = predict("matmul", variant, m=64, n=64, k=64, tile=tile)
    assert (r["shared_load_requests"], r["shared_load_transactions"], r["shared_store_requests"],
            r["shared_store_transactions"]) == MATMUL_SHARED_64[variant, tile]
    assert r["shared_load_bank_conflict"] == r["shared_load_transactions"] - \
        r["shared_load_requests"]
    # the instructions scale with blocks x tile steps; none where nothing runs
    big = predict("matmul", variant, m=130, n=131, k=33, tile=tile)
    t = {"coarsened": 32, "register_tiled": 64}.get(variant, tile)
    bk = {"register_tiled": 16, "warptiled": 16}.get(variant, t)
    def block_steps(m, n, k):
        # prefetch stores one step's tiles more (before its loop)
        return -(-m // t) * -(-n // t) * (-(-k // bk) + (variant == "prefetch"))
    assert big["shared_store_requests"] * block_steps(64, 64, 64) == \
        MATMUL_SHARED_64[variant, tile][2] * block_steps(130, 131, 33)
    for m, n, k in ((0, 5, 3), (7, 9, 0)):
        z = predict("matmul", variant, m=m, n=n, k=k, tile=tile)
        assert all(z[key] == 0 for key in SHARED_METRICS)


def test_mma_copies_a_and_b_by_cp_async_and_loads_fragments_without_conflicts():
    """mma: A and B both by cp.async (no LDG: every gld request is a copy), per block and
    k slice of 32 each of the 4 warps' 4 k steps of 8 loads of B^T pieces and 8 of A^T
    pieces (8-byte each: 2 wavefronts, the fewest) through the swizzles, no shared store
    instruction (cp.async writes shared memory); C by 8-byte stores where N is even.
    From the source (cuda/matmul_mma.cuh): to be held to Nsight Compute on an sm_80+ GPU."""
    r = predict("matmul", "mma", m=128, n=128, k=32, tile=128)
    # one block, one slice: A 128 x 32 and B 32 x 128 floats in 16-byte copies, 8 + 8 a thread
    assert r["gld_requests"] == r["gldgsts_requests"] == 4 * (8 + 8)
    assert r["gld_bytes_requested"] == r["gldgsts_bytes_requested"] == 2 * 4 * 128 * 32
    assert r["gldgsts_transactions"] == 2 * 4 * 128 * 32 // 32
    assert r["gld_efficiency"] == 0.0                   # the load instructions: none
    # and 3 never-executed loads per warp before the slice's copies (counted by the
    # hardware, no wavefront: gpumem.model.matmul._mma_phantom_loads)
    assert (r["shared_load_requests"], r["shared_load_transactions"]) == \
        (4 * 4 * (8 + 8) + 4 * 3, 4 * 4 * 2 * (8 + 8))
    # "conflicts" = wavefronts past one per instruction: the 8-byte loads' second ones,
    # less the phantoms' none
    assert r["shared_load_bank_conflict"] == 4 * 4 * (8 + 8) - 4 * 3
    assert r["shared_store_requests"] == r["shared_store_transactions"] == 0
    # C: 4 warps x 64 float2 stores, 4 rows of 64 bytes each: 8 sectors, all used
    assert r["gst_requests"] == 4 * 64 and r["gst_transactions"] == 4 * 64 * 8
    assert r["gst_efficiency"] == 100.0
    # K and N not multiples of 4: the launcher pads both operands' rows to 32 and 128
    # floats (the padding zeroed), and the copies stay 16-byte, 8 + 8 a thread: A's 128
    # rows x 8 chunks all start inside K = 31; of B's 32 rows (one per warp copy) row 31 is
    # past K, so 1 of the 32 warp copies has no lane; odd N: two 4-byte stores per float2
    s = predict("matmul", "mma", m=128, n=127, k=31, tile=128)
    assert s["gldgsts_requests"] == 4 * 8 + (4 * 8 - 1)
    # the padding kernel first: a warp's 32 columns of a row per load and per store, A's
    # 128 rows of 31 (one warp each), B's 31 rows of 127 (four each); the loads 4 bytes a
    # lane, inside the row, the stores inside the padded row (its zeros too)
    pads = 128 * 1 + 31 * 4
    assert s["gld_requests"] - s["gldgsts_requests"] == pads
    assert s["gld_bytes_requested"] - s["gldgsts_bytes_requested"] == 4 * (128 * 31 + 31 * 127)
    assert s["gst_requests"] == 2 * 4 * 64 + pads
    assert s["gst_bytes_requested"] == 4 * (128 * 127 + 128 * 32 + 31 * 128)
    # whole 16-byte copies: past K or N they take the padding's zeros
    assert s["gldgsts_bytes_requested"] == 16 * (128 * 8 + 31 * 32)
    # the shared loads scale with blocks x slices: 4 warps x (64 fragment loads + 3
    # phantoms) per block and slice, K and N off the 16-byte grid or not
    big = predict("matmul", "mma", m=130, n=257, k=65, tile=128)
    assert big["shared_load_requests"] == 2 * 3 * 3 * 4 * (64 + 3)
    # two launches of the Nsight grid: 2 and 18 block-slices
    assert predict("matmul", "mma", m=100, n=37, k=53, tile=128)["shared_load_requests"] == 536
    assert predict("matmul", "mma", m=257, n=129, k=70, tile=128)["shared_load_requests"] == 4824


def test_naive_matmul_uses_no_shared_memory():
    r = predict("matmul", "naive", m=100, n=37, k=53, tile=16)
    assert all(r[key] == 0 for key in SHARED_METRICS)


@pytest.mark.parametrize("variant, tile", [(v, t) for v in ("naive", "tiled") for t in (8, 16, 32)]
                         + [("prefetch", 32), ("coarsened", 32), ("register_tiled", 64),
                            ("warptiled", 64), ("warptiled", 128), ("mma", 128),
                            ("wgmma", 128)])
def test_fast_path_equals_the_per_warp_reference_matmul(variant, tile, rng):
    """Block columns, block rows and tile steps past their periods, M, N, K not
    multiples of the tile, K below 8 (row by row A sectors) and up to 300 (the
    naive kernel's B rows repeat every up to 32)."""
    t = tile
    shapes = [(1, 1, 1), (7 * t, 9 * t, 6 * t), (7 * t + 1, 9 * t - 1, 6 * t + 3),
              (6 * t + 5, 1, 3), (1, 11 * t + 2, 7), (3 * t, 2, 0), (40, 13 * t + 7, 257)]
    for _ in range(6):
        shapes.append(tuple(int(x) for x in (rng.integers(1, 12 * t), rng.integers(1, 12 * t),
                                             rng.integers(0, 300))))
    for m, n, k in shapes:
        assert_fast_equals_reference("matmul", variant, m=m, n=n, k=k, tile=t)


def test_matmul_traffic_and_cgma():
    naive = model.matmul_traffic(1024, 1024, 1024, "naive", 16)
    assert naive["cgma"] == 1.0
    assert naive["load_bytes"] == 8 * 1024 ** 3
    for t in (8, 16, 32):
        tiled = model.matmul_traffic(1024, 1024, 1024, "tiled", t)
        assert tiled["cgma"] == t
        assert tiled["load_bytes"] == naive["load_bytes"] / t
    for variant, (m, n, k, t) in itertools.product(("naive", "tiled"),
                                                   ((33, 17, 5, 8), (100, 37, 53, 16))):
        tr = model.matmul_traffic(m, n, k, variant, t)
        pr = predict("matmul", variant, m=m, n=n, k=k, tile=t)
        # matmul_traffic counts every thread's loads (the lesson's CGMA); the
        # counters count a broadcast word once per warp instruction
        if variant == "tiled":
            assert tr["load_bytes"] == pr["gld_bytes_requested"]
        else:
            assert tr["load_bytes"] > pr["gld_bytes_requested"]
        assert tr["store_bytes"] == pr["gst_bytes_requested"] == 4 * m * n
    # every tiled kernel requests what tiled does with its tile, partial tiles included;
    # warptiled's B by cp.async, counted in gld (and alone in gldgsts)
    for variant, tiles in (("prefetch", (16, 32)), ("coarsened", (32,)),
                           ("register_tiled", (64,)), ("warptiled", (64, 128)), ("mma", (128,))):
        for t, (m, n, k) in itertools.product(tiles, ((33, 17, 5), (130, 129, 33),
                                                      (129, 132, 36), (300, 257, 190))):
            tr = model.matmul_traffic(m, n, k, variant, t)
            pr = predict("matmul", variant, m=m, n=n, k=k, tile=t)
            assert tr["load_bytes"] == pr["gld_bytes_requested"], (variant, t)
            assert tr["store_bytes"] == pr["gst_bytes_requested"]
    assert model.matmul_traffic(256, 256, 256, "warptiled") == \
        model.matmul_traffic(256, 256, 256, "warptiled", 128)


def test_wgmma_loads_nothing_through_the_lsu_and_its_fragments_meet_no_conflict():
    """wgmma: the tensor copy fills the stages (no gld, no shared stores in the loop), the
    B^T fragments are 16 conflict-free 4-byte loads per warp and k slice of 32, C goes
    through shared memory (128 stores a lane, 32 banks each; float2 reads back, 2
    wavefronts a warp) and out as float2 stores, whole sectors.  From the source
    (cuda/matmul_wgmma.cuh): to be held to Nsight Compute on an sm_90 GPU."""
    r = predict("matmul", "wgmma", m=256, n=128, k=64, tile=128)
    assert r["gld_requests"] == r["gld_bytes_requested"] == 0
    assert not set(LDGSTS_METRICS) & set(r)
    frags = 8 * 16 * 2                                  # warps x loads x k slices
    back = 256 * 128 // 2 // 32                         # float2 reads, warp instructions
    assert r["shared_load_requests"] == frags + back
    assert r["shared_load_transactions"] == frags + 2 * back
    assert r["shared_store_requests"] == r["shared_store_transactions"] == 8 * 128
    assert (r["gst_requests"], r["gst_efficiency"], r["gst_transactions_per_request"]) == \
        (back, 100.0, 8.0)
    # the last block column zeroes the B boxes wholly past N, in every stage
    edge = predict("matmul", "wgmma", m=256, n=40, k=64, tile=128)
    assert edge["shared_store_requests"] == 8 * 128 + 4 * 2 * 1024 // 32
    # traffic: block rows of 256, block columns of 128
    tr = model.matmul_traffic(512, 384, 64, "wgmma")
    assert tr["load_bytes"] == 4 * 64 * (3 * 512 + 2 * 384)


def test_matmul_naive_broadcasts_count_once():
    r = predict("matmul", "naive", m=256, n=256, k=256, tile=16)
    # a warp = 2 rows x 16 columns: A gives 2 sectors (2 words, each read by 16 lanes),
    # B gives 2 sectors (16 words, each read by 2 lanes): 72 distinct bytes per 128 moved
    assert r["gld_transactions_per_request"] == 2.0
    assert r["gld_efficiency"] == 100.0 * (2 * 4 + 16 * 4) / (4 * 32)
    # H100 (ncu and gpumem.profile, 2026-11-22): 64^3 with 8x8 blocks reads 30.00 %
    # (A: 4 words in 4 sectors, B: 8 words in 1 sector -> 48 of 160 bytes)
    assert predict("matmul", "naive", m=64, n=64, k=64, tile=8)["gld_efficiency"] == 30.0
    assert predict("matmul", "naive", m=64, n=64, k=64, tile=16)["gld_efficiency"] == 56.25
    assert predict("matmul", "tiled", m=256, n=256, k=256, tile=16)["gld_efficiency"] == 100.0


#: Split tails (m, n, k, tile, splits, tail): several slices of a few tiles, all tiles
#: sliced, K not a multiple of the slices (uneven slices), N and K off the 16-byte grid
#: (padded copies, scalar stores; the slices' stores are float4s where inside C), a lone
#: element, a whole tile.
SPLITS = [(300, 257, 1000, 128, 3, 9), (300, 257, 1000, 128, 2, 4), (129, 130, 4096, 128, 16, 4),
          (70, 33, 40, 64, 3, 2), (1, 1, 2000, 64, 7, 1), (257, 131, 513, 64, 2, 5),
          (256, 256, 64, 128, 4, 1), (129, 132, 36, 64, 2, 3)]


@pytest.mark.parametrize("m, n, k, tile, splits, tail", SPLITS)
def test_warptiled_split_tail_equals_the_thread_by_thread_reference(m, n, k, tile, splits, tail):
    """The split tail (cuda/matmul.cu: the last ``tail`` tiles cut into ``splits`` slices of
    K, the slices' sums into the workspace, matmul_split_sum adding them into C) against a
    block-by-block reference written from the kernel; the split launch's 1-D grid, the
    slices only (the whole tiles go first, in a launch of their own)."""
    assert_same("matmul", "warptiled", m=m, n=n, k=k, tile=tile, splits=splits, tail=tail)
    assert_same("matmul", "warptiled", granularity=128, m=m, n=n, k=k, tile=tile,
                splits=splits, tail=tail)
    assert model.launch_config("matmul", "warptiled", m=m, n=n, k=k, tile=tile, splits=splits,
                               tail=tail)["grid"] == (tail * splits, 1, 1)


def test_warptiled_split_tail_moves_only_the_sums():
    """The slices partition each tile's k steps: loads, copies and shared accesses are the
    launch's without a split; the sums take more stores (the slices' blocks, then C) and
    the sum kernel's loads, splits per element of the split tiles inside C."""
    p = dict(m=256, n=256, k=1024, tile=128)
    whole = predict("matmul", "warptiled", **p)
    split = predict("matmul", "warptiled", splits=4, tail=2, **p)
    for key in ("gldgsts_requests", "gldgsts_transactions", *SHARED_METRICS):
        assert split[key] == whole[key], key
    # 2 tiles x 128 x 128 floats, 4 slices: stored 4 times as slices then once to C, read
    # back 4 times; the whole tiles' stores stay
    assert split["gst_bytes_requested"] == whole["gst_bytes_requested"] + 4 * 2 * 128 * 128 * 4
    assert split["gld_bytes_requested"] == whole["gld_bytes_requested"] + 4 * 2 * 128 * 128 * 4
    # the sum kernel: a warp's 32 floats of one row -- 4 sectors a load or store
    assert split["gld_requests"] - whole["gld_requests"] == 4 * 2 * 128 * 128 // 32


def test_warptiled_split_tail_refused_where_the_launcher_makes_none():
    p = dict(m=256, n=256, k=1024, tile=128)
    for bad, msg in (({"splits": 2, "tail": 0}, "a split tail cuts the last tail tiles"),
                     ({"splits": 1, "tail": 3}, "a split tail cuts"),
                     ({"splits": 2, "tail": 5}, r"\(1\.\.4 here\)"),
                     ({"splits": 65, "tail": 1}, "splits must be 1..64"),
                     ({"splits": 2.0, "tail": 1}, "splits must be an int")):
        with pytest.raises((ValueError, TypeError), match=msg):
            predict("matmul", "warptiled", **p, **bad)
    with pytest.raises(ValueError, match="splits=17, tail=1: a split tail"):   # 16 k steps
        predict("matmul", "warptiled", m=128, n=128, k=256, tile=128, splits=17, tail=1)
    with pytest.raises(ValueError, match="only 'warptiled' splits"):
        predict("matmul", "mma", m=256, n=256, k=64, tile=128, splits=2, tail=1)


def test_predict_record_reads_the_split_tail_off_the_grid():
    """A warptiled record says its splits (gm.matmul records them); the tiles it split
    its split launch's 1-D grid says: predict_record equals predict with that tail."""
    class Rec:
        kernel, variant = "matmul", "warptiled"
        params = {"m": 300, "n": 257, "k": 1000, "tile": 128, "splits": 3}
        # 3 x 3 tiles, the last 4 split: 5 whole (a launch of their own), then 4 x 3 slices
        grid = (4 * 3, 1, 1)

    assert model.predict_record(Rec()) == predict("matmul", "warptiled", m=300, n=257, k=1000,
                                                  tile=128, splits=3, tail=4)
    Rec.grid = (13, 1, 1)                       # not a whole number of tiles' slices
    with pytest.raises(ValueError, match="no split tail launches that grid"):
        model.predict_record(Rec())
    Rec.params = {"m": 300, "n": 257, "k": 1000, "tile": 128, "splits": 1}
    Rec.grid = (3, 3, 1)
    assert model.predict_record(Rec()) == predict("matmul", "warptiled", m=300, n=257, k=1000,
                                                  tile=128)
