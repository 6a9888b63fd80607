"""matmul: validation without a GPU, the NumPy reference, and on a GPU every
variant against NumPy on fresh random data of awkward sizes, with the output
poisoned first so an element the kernel never wrote fails; warptiled's split tail.
The tensor-core variants (mma, wgmma) are in tests/test_matmul_tensor.py."""
import numpy as np
import pytest

import gpumem as gm
from _helpers import F, m, poisoned, rel_err

MATMUL_SHAPES = [(1, 1, 1), (17, 33, 5), (31, 1, 64), (64, 64, 64), (100, 257, 3),
                 (1000, 999, 1001), (33, 4096, 7)]


# ---- the reference (no GPU) ---------------------------------------------------
def test_matmul_reference_is_float64_numpy(rng):
    a = rng.standard_normal((17, 33)).astype(np.float32)
    b = rng.standard_normal((33, 5)).astype(np.float32)
    ref = gm.matmul_reference(a, b)
    assert ref.dtype == np.float64 and ref.shape == (17, 5)
    np.testing.assert_array_equal(ref, a.astype(np.float64) @ b.astype(np.float64))
    assert gm.matmul_reference(np.ones((3, 0)), np.ones((0, 4))).tolist() == [[0.0] * 4] * 3


# ---- validation (no GPU) ------------------------------------------------------
@pytest.mark.parametrize("a,b,exc,msg", [
    ([[1.0]], m(1, 1), TypeError, "a must be a numpy.ndarray or gpumem.DeviceArray, not list"),
    (m(1, 1), "x", TypeError, "b must be a numpy.ndarray or gpumem.DeviceArray, not str"),
    (m(2, 2, dtype=np.float64), m(2, 2), TypeError, r"a has dtype dtype\('float64'\); this kernel takes dtype\('float32'\) only"),
    (m(2, 2), m(2, 2, dtype=np.int32), TypeError, r"b has dtype dtype\('int32'\)"),
    (m(2, 2), m(2, 2, dtype=np.float16), TypeError, r"b has dtype dtype\('float16'\)"),
    (m(2, 2).astype(">f4"), m(2, 2), TypeError, "a has dtype"),
    (m(4), m(4, 2), ValueError, r"a must be 2-D \(a matrix\), not 1-D with shape \(4,\)"),
    (m(2, 2), m(2, 2, 2), ValueError, r"b must be 2-D \(a matrix\), not 3-D with shape \(2, 2, 2\)"),
    (m(3, 4), m(5, 2), ValueError, r"inner dimensions differ: a is \(3, 4\) and b is \(5, 2\)"),
])
def test_matmul_rejects_bad_operands(a, b, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.matmul(a, b)


@pytest.mark.parametrize("kw,exc,msg", [
    ({"tile": 12}, ValueError, "tile=12 is not allowed; tile must be one of 8, 16, 32"),
    ({"tile": 0}, ValueError, "tile=0 is not allowed"),
    ({"tile": 64}, ValueError, "tile=64 is not allowed with variant='tiled'"),
    ({"tile": 16.0}, TypeError, "tile must be an int, not float"),
    ({"tile": True}, TypeError, "tile must be an int, not bool"),
    ({"tile": 2**70}, ValueError, "tile=.* is out of range"),
    ({"variant": "tiledd"}, ValueError, "variant='tiledd' is unknown; allowed: 'naive', 'tiled', "
                                        "'prefetch', 'coarsened', 'register_tiled', "
                                        "'warptiled', 'mma', 'wgmma'"),
    ({"variant": "warptiled", "tile": 32}, ValueError,
     r"tile=32 is not allowed with variant='warptiled'; tile must be 128 \(8 warps, the "
     r"default\) or 64 \(4 warps\)"),
    ({"tile": 256}, ValueError, "tile=256 is not allowed; tile must be one of 8, 16, 32, 64, 128"),
    ({"variant": "register_tiled", "tile": 32}, ValueError,
     r"tile=32 is not allowed with variant='register_tiled'; tile must be 64 only"),
    ({"variant": "prefetch", "tile": 8}, ValueError,
     "matmul: tile=8 is not allowed with variant='prefetch'; tile must be 16 or 32"),
    ({"variant": "coarsened", "tile": 16}, ValueError,
     r"matmul: tile=16 is not allowed with variant='coarsened'; tile must be 32 only"),
    ({"variant": "mma", "tile": 64}, ValueError,
     r"matmul: tile=64 is not allowed with variant='mma'; tile must be 128 only \(4 warps of "
     r"64 x 64\)"),
    ({"variant": "wgmma", "tile": 64}, ValueError,
     r"matmul: tile=64 is not allowed with variant='wgmma'; tile must be 128 only \(C tiles "
     r"of 256 rows x 128 columns, 2 warpgroups\)"),
    ({"variant": "wgmma", "splits": 2}, ValueError, "splits=2 is not allowed with variant='wgmma'"),
    ({"variant": 1}, TypeError, "variant must be a str, not int"),
    ({"splits": 2}, ValueError, "matmul: splits=2 is not allowed with variant='tiled'; only "
                                "'warptiled' splits its last wave's tiles along K"),
    ({"variant": "mma", "splits": 4}, ValueError, "splits=4 is not allowed with variant='mma'"),
    ({"variant": "warptiled", "splits": 0}, ValueError,
     r"splits=0 is not allowed; splits must be 1..64 \(K slices per tile"),
    ({"variant": "warptiled", "splits": 65}, ValueError, "splits=65 is not allowed"),
    ({"variant": "warptiled", "splits": 2.0}, TypeError, "splits must be an int, not float"),
    ({"variant": "warptiled", "splits": True}, TypeError, "splits must be an int, not bool"),
    ({"out": m(3, 2)}, TypeError, "out must be a gpumem.DeviceArray, not numpy.ndarray"),
])
def test_matmul_rejects_bad_options(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.matmul(m(3, 4), m(4, 2), **kw)


def test_matmul_rejects_unknown_keyword_and_positional_options():
    with pytest.raises(TypeError):
        gm.matmul(m(3, 4), m(4, 2), tile_size=16)
    with pytest.raises(TypeError):
        gm._core.matmul(m(3, 4), m(4, 2), 16)


def test_matmul_rejects_too_many_rows_for_one_grid():
    # 65535 blocks of 8 rows at most in grid.y; a 0-column view costs no memory.
    a = np.lib.stride_tricks.as_strided(np.zeros(1, F), shape=(65535 * 8 + 1, 0), strides=(0, 4))
    with pytest.raises(ValueError, match="too large for one launch with tile=8"):
        gm.matmul(a, np.zeros((0, 3), F), tile=8)


# ---- on the GPU -----------------------------------------------------------------
#: Every variant with every tile it takes.
VARIANT_TILES = [("naive", 8), ("naive", 16), ("naive", 32), ("tiled", 8), ("tiled", 16),
                 ("tiled", 32), ("prefetch", 16), ("prefetch", 32), ("coarsened", 32),
                 ("register_tiled", 64), ("warptiled", 64), ("warptiled", 128)]


def test_every_variant_and_tile_is_tested():
    # the float32 variants here, mma and wgmma (TF32 tensor cores, their own bound) in
    # tests/test_matmul_tensor.py
    assert {v.name for v in gm.variants("matmul")} == \
        {v for v, _ in VARIANT_TILES} | {"mma", "wgmma"}


def test_a_variant_without_tile_takes_its_own():
    # checked before the device: the record of a launch would say the same
    with pytest.raises(ValueError, match="too large for one launch with tile=32"):
        a = np.lib.stride_tricks.as_strided(np.zeros(1, F), shape=(65535 * 32 + 1, 0),
                                            strides=(0, 4))
        gm.matmul(a, np.zeros((0, 3), F), variant="coarsened")


def _operands(rng, M, K, N):
    """Fresh float32 A (M x K) and B (K x N), and their product in float64."""
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def sum_err(got, ref, a, b):
    """||got - ref|| over || |a| @ |b| ||: the error of float32 sums relative to the size of
    their terms, which a near-cancelling result (a 1 x 1 product of 2,000 terms that comes
    out at 0.01, say) does not inflate as rel_err does."""
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(scale), 1e-300)


@pytest.mark.gpu
@pytest.mark.parametrize("variant, tile", VARIANT_TILES)
@pytest.mark.parametrize("mkn", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_numpy(rng, variant, tile, mkn, no_leak):
    M, K, N = mkn
    a, b, ref = _operands(rng, M, K, N)
    out = poisoned((M, N))
    got = gm.matmul(gm.to_device(a), gm.to_device(b), tile=tile, variant=variant, out=out)
    assert got is out
    host = got.get()
    assert not np.isnan(host).any(), "an output element was never written"
    assert rel_err(host, ref) < 1e-5 * max(1.0, np.sqrt(K) / 8)


@pytest.mark.gpu
def test_matmul_ndarray_in_ndarray_out(rng):
    a = rng.standard_normal((45, 70)).astype(np.float32)
    b = rng.standard_normal((70, 23)).astype(np.float32)
    got = gm.matmul(a, b)
    assert isinstance(got, np.ndarray) and got.shape == (45, 23) and got.dtype == np.float32
    assert rel_err(got, a.astype(np.float64) @ b) < 1e-5


@pytest.mark.gpu
def test_matmul_mixed_inputs_return_device_array(rng):
    a = rng.standard_normal((9, 8)).astype(np.float32)
    b = rng.standard_normal((8, 7)).astype(np.float32)
    got = gm.matmul(a, gm.to_device(b), variant="naive")
    assert isinstance(got, gm.DeviceArray)
    assert rel_err(got.get(), a.astype(np.float64) @ b) < 1e-5


@pytest.mark.gpu
def test_matmul_non_contiguous_inputs(rng):
    a = rng.standard_normal((60, 50)).astype(np.float32)
    b = rng.standard_normal((80, 60)).astype(np.float32)
    got = gm.matmul(a.T, b[::2, ::-1].T)
    ref = a.T.astype(np.float64) @ b[::2, ::-1].T.astype(np.float64)
    assert rel_err(got, ref) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("M,K,N", [(0, 5, 3), (4, 5, 0), (0, 0, 0), (3, 0, 4)])
def test_matmul_empty_follows_numpy(M, K, N):
    a = np.ones((M, K), np.float32)
    b = np.ones((K, N), np.float32)
    got = gm.matmul(a, b)
    ref = a @ b
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)  # K == 0: zeros


@pytest.mark.gpu
def test_matmul_k0_writes_zeros_over_poison():
    out = poisoned((5, 6))
    gm.matmul(gm.to_device(np.ones((5, 0), np.float32)), np.ones((0, 6), np.float32), out=out)
    np.testing.assert_array_equal(out.get(), np.zeros((5, 6), np.float32))


@pytest.mark.gpu
def test_matmul_out_must_match_and_not_alias(rng):
    a = gm.to_device(rng.standard_normal((8, 8)).astype(np.float32))
    with pytest.raises(ValueError, match=r"out has shape \(8, 7\); the result has shape \(8, 8\)"):
        gm.matmul(a, a, out=gm.empty((8, 7)))
    with pytest.raises(TypeError, match="out has dtype"):
        gm.matmul(a, a, out=gm.empty((8, 8), dtype=np.float64))
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.matmul(a, a, out=a)


@pytest.mark.gpu
@pytest.mark.parametrize("variant, tile", [("register_tiled", 64), ("warptiled", 64),
                                           ("warptiled", 128)])
def test_vector_variants_on_aligned_and_unaligned_rows(rng, no_leak, variant, tile):
    # float4 loads and stores where K and N are multiples of 4, scalar ones elsewhere
    # (warptiled: float4 loads of A and 16-byte cp.async copies of B always, from the
    # launcher's padded copies where K or N % 4 != 0 or a base is off the 16-byte grid);
    # both paths, partial tiles, K over several 16-wide steps, and a view 4 bytes past an
    # aligned start
    for m_, k_, n_ in ((128, 64, 128), (130, 68, 132), (65, 67, 63), (3, 4, 5), (200, 1, 300),
                       (257, 48, 260), (129, 35, 131)):
        a = rng.standard_normal((m_, k_)).astype(np.float32)
        b = rng.standard_normal((k_, n_)).astype(np.float32)
        out = poisoned((m_, n_))
        gm.matmul(a, b, variant=variant, tile=tile, out=out)
        got = out.get()
        assert not np.isnan(got).any()
        assert rel_err(got, a.astype(np.float64) @ b) < 1e-5
    try:
        import cupy
    except ImportError:
        return
    a = cupy.asarray(rng.standard_normal(65 * 64 + 1).astype(np.float32))[1:].reshape(65, 64)
    b = rng.standard_normal((64, 36)).astype(np.float32)
    got = gm.matmul(gm.from_dlpack(a), gm.to_device(b), variant=variant, tile=tile).get()
    assert rel_err(got, cupy.asnumpy(a).astype(np.float64) @ b) < 1e-5
    # B misaligned too: register_tiled's loads of B take the scalar path, warptiled pads B
    bb = cupy.asarray(rng.standard_normal(64 * 36 + 1).astype(np.float32))[1:].reshape(64, 36)
    got = gm.matmul(gm.to_device(cupy.asnumpy(a)), gm.from_dlpack(bb), variant=variant,
                    tile=tile).get()
    assert rel_err(got, cupy.asnumpy(a).astype(np.float64) @ cupy.asnumpy(bb)) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["prefetch", "coarsened"])
def test_new_variants_sum_in_tiled_order(rng, variant):
    # prefetch and coarsened add the products of k in the same order as tiled with
    # the same tile (one FMA chain per output): the float32 results are identical.
    a = rng.standard_normal((130, 77)).astype(np.float32)
    b = rng.standard_normal((77, 65)).astype(np.float32)
    tile = 32 if variant == "coarsened" else 16
    got = gm.matmul(a, b, variant=variant)           # its own tile, left out
    rec = gm.last_record()
    assert (rec.variant, rec.params["tile"]) == (variant, tile)
    assert rec.block == ((32, 8, 1) if variant == "coarsened" else (16, 16, 1))
    np.testing.assert_array_equal(got, gm.matmul(a, b, tile=tile, variant="tiled"))


@pytest.mark.gpu
def test_matmul_tiled_is_deterministic_and_equals_naive_order(rng):
    # Both variants sum k in the same order, so the float32 results agree exactly
    # whenever the compiler keeps the order (fma contraction in both).
    a = rng.standard_normal((130, 77)).astype(np.float32)
    b = rng.standard_normal((77, 65)).astype(np.float32)
    r1 = gm.matmul(a, b, tile=16)
    r2 = gm.matmul(a, b, tile=16)
    np.testing.assert_array_equal(r1, r2)


# ---- issue 11: arguments first ----------------------------------------------------------
def test_matmul_reference_names_itself_and_the_argument():
    with pytest.raises(ValueError, match=r"matmul_reference: a is 2 x 3 and b is 4 x 2: a's "
                                         r"columns must equal b's rows"):
        gm.matmul_reference(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(TypeError, match=r"matmul_reference: b must be an array of real numbers, not str"):
        gm.matmul_reference(np.ones((2, 2)), "x")
    with pytest.raises(ValueError, match=r"matmul_reference: a must be 2-D, not 1-D"):
        gm.matmul_reference(np.ones(3), np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"matmul: tile must be an int, not bool"):
        gm.matmul(m(2, 2), m(2, 2), tile=True)
    np.testing.assert_array_equal(gm.matmul_reference([[1, 2]], [[3], [4]]), [[11.0]])


# ---- warptiled's split tail (issue 27: the last wave's tiles sliced along K) -------------
def _waves_here(m_, n_, k_, tile):
    """The model's waves with this GPU's SMs and warptiled's resident blocks per SM."""
    sms = gm.device().multiprocessors
    per_sm = gm.kernel_occupancy("matmul", "warptiled", 256 if tile == 128 else 128,
                                 tile=tile).blocks_per_sm
    return gm.model.matmul_waves(m_, n_, k_, tile=tile, sms=sms, blocks_per_sm=per_sm)


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [64, 128])
@pytest.mark.parametrize("mkn, splits", [((300, 1000, 257), 3), ((129, 4096, 130), None),
                                          ((70, 40, 33), 64), ((1, 2000, 1), 7),
                                          ((257, 513, 131), 2)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_split_tail_matches_numpy_and_the_model(rng, tile, mkn, splits, no_leak):
    M, K, N = mkn
    a, b, ref = _operands(rng, M, K, N)
    out = poisoned((M, N))
    got = gm.matmul(gm.to_device(a), gm.to_device(b), variant="warptiled", tile=tile,
                    splits=splits, out=out).get()
    rec = gm.last_record()
    assert not np.isnan(got).any(), "an output element was never written"
    assert sum_err(got, ref, a, b) < 1e-6
    w = _waves_here(M, N, K, tile)
    want = w["splits"] if splits is None else min(splits, w["steps"]) if w["tail"] else 1
    assert rec.params["splits"] == want
    if want > 1:     # the whole tiles first (a launch of their own), then a 1-D grid of
        # every slice of the tail's tiles
        assert rec.grid == (w["tail"] * want, 1, 1)
        # the slices are added in order: the same operands give the same bits
        again = gm.matmul(a, b, variant="warptiled", tile=tile, splits=splits)
        np.testing.assert_array_equal(again, got)
    # no split: the same sums in another grouping, within float32's rounding
    whole = gm.matmul(a, b, variant="warptiled", tile=tile, splits=1)
    assert gm.last_record().params["splits"] == 1
    assert sum_err(whole, got.astype(np.float64), a, b) < 1e-6


@pytest.mark.gpu
@pytest.mark.parametrize("tile", [64, 128])
def test_split_tail_whole_tiles_off_a_row_boundary(rng, tile, no_leak):
    """More tiles than one wave, a thin last wave: the whole tiles (one wave's worth) go
    first in a launch of their own whose last row of blocks is partly past them (those
    blocks exit), then the slices. A shape sized from this GPU's slots so that the whole
    tiles end inside a row of tiles; every element against float64, none left unwritten."""
    probe = _waves_here(tile, tile, 32, tile)
    slots = probe["slots"]
    tn = next(x for x in (17, 19, 23) if slots % x)          # whole tiles end mid-row
    tm = -(-(slots + 1) // tn)                              # tiles just past one wave
    M, N, K = tm * tile - 3, tn * tile - 5, 64
    w = _waves_here(M, N, K, tile)
    assert w["tiles"] == tm * tn and 0 < w["tail"] and (w["tiles"] - w["tail"]) % tn
    a, b, ref = _operands(rng, M, K, N)
    out = poisoned((M, N))
    got = gm.matmul(gm.to_device(a), gm.to_device(b), variant="warptiled", tile=tile,
                    splits=2, out=out).get()
    rec = gm.last_record()
    assert rec.params["splits"] == 2 and rec.grid == (w["tail"] * 2, 1, 1)
    assert not np.isnan(got).any(), "an output element was never written"
    assert sum_err(got, ref, a, b) < 1e-6
    assert gm.model.predict_record(rec) == gm.model.predict(
        "matmul", "warptiled", m=M, n=N, k=K, tile=tile, splits=2, tail=w["tail"])


@pytest.mark.gpu
def test_split_tail_counters_equal_the_model(rng, counters, no_leak):
    """gpumem.profile of split launches -- the slices and the sum kernel, one record --
    against gpumem.model.predict_record (the tail read off the record's grid): global
    requests and sectors, cp.async requests and shared instructions exact, shared
    wavefronts a floor (+1% loads, +15% stores, as test_model_equals_nsight_compute
    allows)."""
    exact = {"gld_requests": "gld_requests", "gld_transactions": "gld_transactions",
             "gst_requests": "gst_requests", "gst_transactions": "gst_transactions",
             "gldgsts_requests": "gldgsts_requests",
             "smsp__inst_executed_op_shared_ld.sum": "shared_load_requests",
             "smsp__inst_executed_op_shared_st.sum": "shared_store_requests"}
    floor = {"shared_load_transactions": 0.01, "shared_store_transactions": 0.15}
    cases = [((300, 1000, 257), 3, 128), ((129, 4096, 130), None, 128),
             ((257, 513, 131), 2, 64), ((70, 40, 33), 64, 64), ((300, 1000, 256), None, 64)]
    with gm.profile(list(exact) + list(floor)) as p:
        for (M, K, N), splits, tile in cases:
            a, b = rng.standard_normal((M, K), F), rng.standard_normal((K, N), F)
            gm.matmul(gm.to_device(a), gm.to_device(b), variant="warptiled", tile=tile,
                      splits=splits)
    recs = [r for r in p.records if r.kernel == "matmul"]
    assert len(recs) == len(cases)
    for ((M, K, N), _, tile), rec in zip(cases, recs):
        assert rec.params["splits"] > 1, rec.params          # every case a split launch
        want = gm.model.predict_record(rec)
        tail = _waves_here(M, N, K, tile)["tail"]            # the tiles the launcher split
        assert want == gm.model.predict("matmul", "warptiled", m=M, n=N, k=K, tile=tile,
                                        splits=rec.params["splits"], tail=tail)
        assert rec.grid == gm.model.launch_config("matmul", "warptiled", m=M, n=N, k=K,
                                                  tile=tile, splits=rec.params["splits"],
                                                  tail=tail)["grid"]
        for metric, key in exact.items():
            assert rec.metrics[metric] == want[key], (rec.params, key, rec.metrics[metric],
                                                      want[key])
        for key, over in floor.items():
            assert want[key] <= rec.metrics[key] <= want[key] * (1 + over), \
                (rec.params, key, rec.metrics[key], want[key])


@pytest.mark.gpu
def test_split_tail_is_automatic_where_the_last_wave_is_thin(rng, no_leak):
    # one tile of 128 and K = 4096: the tail is the whole launch, far under half a wave
    a = rng.standard_normal((100, 4096)).astype(np.float32)
    b = rng.standard_normal((4096, 90)).astype(np.float32)
    got = gm.matmul(a, b, variant="warptiled")
    assert gm.last_record().params["splits"] == 16 == _waves_here(100, 90, 4096, 128)["splits"]
    assert rel_err(got, a.astype(np.float64) @ b) < 1e-5 * 8


def test_matmul_waves_model():
    w = gm.model.matmul_waves(4097, 4097, 4097)
    assert (w["tiles"], w["slots"], w["steps"], w["whole_waves"], w["tail"], w["splits"]) == \
        (1089, 264, 257, 4, 33, 8)
    assert w["steps_before"] == 5 * 257 and w["steps_after"] == 4 * 257 + 33
    assert w["efficiency_before"] == pytest.approx(1089 * 257 / 264 / (5 * 257))
    # a last wave over half full is left alone; a given split is used where there is a tail
    assert gm.model.matmul_waves(4096, 4096, 4096)["splits"] == 1
    assert gm.model.matmul_waves(4096, 4096, 4096, splits=2)["splits"] == 2
    assert gm.model.matmul_waves(128, 128, 4096, splits=64)["splits"] == 64
    assert gm.model.matmul_waves(128, 128, 40, splits=64)["splits"] == 3       # 3 steps of K
    assert gm.model.matmul_waves(1024, 1024, 1024)["splits"] == 4               # 64 tiles
    assert gm.model.matmul_waves(1024, 1024, 1024, tile=64, blocks_per_sm=4)["splits"] == 2
    assert gm.model.matmul_waves(4097, 4097, 100)["splits"] == 1       # 7 steps: no slice
    assert gm.model.matmul_waves(0, 5, 5)["tiles"] == 0
    for kw, exc, msg in [({"tile": 32}, ValueError, "tile=32 is not allowed"),
                         ({"splits": 0}, ValueError, "splits=0 is not allowed"),
                         ({"splits": 2.0}, TypeError, "splits must be an int or None"),
                         ({"sms": 0}, ValueError, "sms=0 is not allowed"),
                         ({"blocks_per_sm": True}, TypeError, "blocks_per_sm must be an int")]:
        with pytest.raises(exc, match=msg):
            gm.model.matmul_waves(8, 8, 8, **kw)
    with pytest.raises(ValueError, match="m=-1 is not allowed"):
        gm.model.matmul_waves(-1, 8, 8)
