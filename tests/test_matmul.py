"""matmul: validation without a GPU, the NumPy reference, and on a GPU every
variant against NumPy on fresh random data of awkward sizes, with the output
poisoned first so an element the kernel never wrote fails."""
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
    # the float32 variants here, mma and wgmma (TF32 tensor cores, their own bound) below
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


# ---- mma: TF32 tensor cores -----------------------------------------------------------
# The bound.  mma rounds every float32 operand to TF32 (cvt.rna: 10 fraction bits, to
# nearest), so |x' - x| <= 2^-11 |x| and |a'b' - ab| <= (2^-10 + 2^-22) |ab|.  A product
# of two TF32 values has at most 22 significant bits: exact in float32.  The K products
# are summed in float32 (the tensor core's adder may truncate: at most 2^-23 relative
# per addition), so the sum is off by at most K 2^-23 sum|a'b'|.  Together, per element
# of C:  |C_mma - C| <= sum_k |a_k||b_k| (2^-10 + K 2^-23) (1 + 2^-10),
# checked with a factor 2 of margin (MMA_C); a wrong fragment, a missed tile or an
# unwritten element is off by O(|ab|) (or NaN) and fails.
MMA_C = 2.0


def tf32_bound(a, b):
    """Elementwise bound on |a @ b (TF32 in, float32 sums) - a @ b (float64)|."""
    k = a.shape[1]
    absab = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return MMA_C * absab * (2.0 ** -10 + k * 2.0 ** -23)


def round_tf32(x):
    """float32 -> the nearest TF32 (10 fraction bits; ties to even, as cvt.rn, which mma
    uses from compute capability 9.0 on -- below it cvt.rna takes ties away from zero),
    as float32: what mma multiplies."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000
    return u.astype(np.uint32).view(np.float32)


def test_round_tf32_keeps_10_fraction_bits():
    x = np.array([1.0, 1 + 2.0 ** -10, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -12,
                  -(1 + 3 * 2.0 ** -12), 3.0e-30], np.float32)
    got = round_tf32(x)
    # the ties 1 + 2^-11 and 1 + 3 x 2^-11 go to the even neighbours 1 and 1 + 2^-9
    assert got.tolist()[:6] == [1.0, 1 + 2.0 ** -10, 1.0, 1 + 2.0 ** -9, 1.0, -(1 + 2.0 ** -10)]
    assert abs(got[6] - x[6]) <= 2.0 ** -11 * x[6]


def test_the_tf32_bound_holds_for_tf32_rounding_and_not_for_a_wrong_element(rng):
    """The bound, on the CPU: TF32-rounded operands summed in float32 stay inside it; a
    k slice of 32 left out, or rows of a fragment swapped, do not."""
    a, b = rng.standard_normal((37, 300)).astype(F), rng.standard_normal((300, 29)).astype(F)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    emul = (round_tf32(a) @ round_tf32(b)).astype(np.float64)   # float32 sums
    bound = tf32_bound(a, b)
    assert (np.abs(emul - ref) <= bound).all()
    assert np.abs(emul - ref).max() > 1e-6 * np.abs(ref).max()    # TF32 is visibly coarser
    missed = emul - a[:, :32].astype(np.float64) @ b[:32].astype(np.float64)
    assert (np.abs(missed - ref) <= bound).mean() < 0.2
    swapped = emul[[1, 0] + list(range(2, 37))]
    assert (np.abs(swapped - ref) <= bound)[:2].mean() < 0.2     # a few may agree by chance


def test_mma_fragment_mapping_emulated_on_the_cpu(rng):
    """The kernel's index mapping, lane by lane, on one block's 128 x 128 x 32 slice:
    A and B stored through the model's swizzles (cuda/matmul_mma.cuh's mma_a_at and
    mma_b_at, restated in gpumem.model.matmul), every warp's fragments loaded as the
    kernel loads them -- the warps compute C's transpose: mma's A operand is a 16 x 8
    piece of B^T whose rows g and g + 8 are C's columns n0 + 2g and n0 + 2g + 1, its B
    operand an 8 x 8 piece of A^T whose column g is C's row m0 + g, and fragment column
    j = t is k = kk + 2t, j = t + 4 is kk + 2t + 1 -- each mma.m16n8k8 taken as the PTX
    ISA defines its .tf32 fragments (a0 (row g, col t), a1 (g + 8, t), a2 (g, t + 4), a3
    (g + 8, t + 4); b0 (row t, col g), b1 (t + 4, g); c_q (g + 8 (q >= 2), 2t + q % 2)),
    and C stored as the kernel stores it: the product equals A @ B, every operand
    register pair is one 8-byte load in order, and every load takes the fewest
    wavefronts its width allows (no bank conflict)."""
    from gpumem.model import bank_conflicts
    from gpumem.model.matmul import _mma_a_at, _mma_b_at

    A = rng.standard_normal((128, 32))
    B = rng.standard_normal((32, 128))
    r, c = np.meshgrid(np.arange(128), np.arange(32), indexing="ij")
    sa = np.full(128 * 32, np.nan)
    sa[_mma_a_at(r, c)] = A                       # cp.async into the swizzled stage
    k, n = np.meshgrid(np.arange(32), np.arange(128), indexing="ij")
    sb = np.full(32 * 128, np.nan)
    sb[_mma_b_at(k, n)] = B
    assert not np.isnan(sa).any() and not np.isnan(sb).any()     # both are permutations
    # every 16-byte chunk stays whole (a cp.async copy lands in one piece)
    assert (_mma_a_at(r, c) - _mma_a_at(r, c - c % 4) == c % 4).all()
    assert (_mma_b_at(k, n) - _mma_b_at(k, n - n % 4) == n % 4).all()
    C = np.full((128, 128), np.nan)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4

    def load64(stage, offsets):
        """An 8-byte load: aligned, no bank conflict; the two floats of each lane."""
        assert (offsets % 2 == 0).all()
        res = bank_conflicts((4 * offsets).tolist(), 8)
        assert res.wavefronts == res.ideal_wavefronts == 2, res
        return stage[offsets], stage[offsets + 1]

    for warp in range(4):
        wm, wn = (warp // 2) * 64, (warp % 2) * 64
        acc = np.zeros((4, 8, 32, 4))                          # [j][i][lane][c_q]
        for kk in range(0, 32, 8):
            bt = np.zeros((4, 32, 4))                          # mma's A operand: a0..a3
            at = np.zeros((8, 32, 2))                          # mma's B operand: b0, b1
            for j in range(4):
                col = wn + 16 * j + 2 * g
                bt[j, :, 0], bt[j, :, 1] = load64(sb, _mma_b_at(kk + 2 * t, col))
                bt[j, :, 2], bt[j, :, 3] = load64(sb, _mma_b_at(kk + 2 * t + 1, col))
            for i in range(8):
                at[i, :, 0], at[i, :, 1] = load64(sa, _mma_a_at(wm + 8 * i + g, kk + 2 * t))
            for j in range(4):
                for i in range(8):
                    # the PTX ISA's layout, on its own: rebuild the 16 x 8 and 8 x 8 tiles
                    # from the lanes' registers, multiply, hand D back lane by lane
                    ta, tb = np.full((16, 8), np.nan), np.full((8, 8), np.nan)
                    for q in range(4):
                        ta[g + 8 * (q % 2), t + 4 * (q // 2)] = bt[j, :, q]
                    for q in range(2):
                        tb[t + 4 * q, g] = at[i, :, q]
                    assert not np.isnan(ta).any() and not np.isnan(tb).any()
                    d = ta @ tb
                    for q in range(4):
                        acc[j, i, :, q] += d[g + 8 * (q // 2), 2 * t + (q % 2)]
        for i in range(8):
            for h in range(2):
                for j in range(4):
                    for e in range(2):                 # float2 store: (d_h, d_h+2)
                        C[wm + 8 * i + 2 * t + h, wn + 16 * j + 2 * g + e] = acc[j, i, :, h + 2 * e]
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)


#: (M, K, N): partial tiles, K and N not multiples of 4 (padded copies, scalar stores),
#: K under one slice of 32 and over several, odd N (scalar stores), one row or column.
MMA_SHAPES = MATMUL_SHAPES + [(128, 32, 128), (130, 68, 132), (129, 35, 131), (257, 48, 260),
                              (3, 4, 5), (200, 1, 300), (65, 67, 63), (256, 130, 2)]


def _needs_mma():
    if gm.device().compute_capability < (8, 0):
        pytest.skip("mma needs compute capability 8.0 (tested by test_mma_refused_below_sm80)")


def _tensor_product_within(rng, mkn, variant, bound):
    """A tensor-core variant on fresh operands into a poisoned output: every element
    written, each within ``bound(a, b)`` of float64; the launch's record."""
    M, K, N = mkn
    a, b, ref = _operands(rng, M, K, N)
    out = poisoned((M, N))
    got = gm.matmul(gm.to_device(a), gm.to_device(b), variant=variant, out=out)
    assert got is out
    host = got.get()
    assert not np.isnan(host).any(), "an output element was never written"
    err = np.abs(host - ref)
    limit = bound(a, b)
    assert (err <= limit).all(), (err - limit).max()
    return gm.last_record()


def _tensor_product_on_unaligned_rows_and_views(rng, variant, bound):
    """K or N not a multiple of 4 and a base 4 bytes past an aligned start (a view of
    another library's array): every element written, within ``bound``."""
    for m_, k_, n_ in ((130, 68, 132), (65, 67, 63), (129, 36, 131), (64, 33, 64)):
        a = rng.standard_normal((m_, k_)).astype(np.float32)
        b = rng.standard_normal((k_, n_)).astype(np.float32)
        out = poisoned((m_, n_))
        gm.matmul(a, b, variant=variant, out=out)
        got = out.get()
        assert not np.isnan(got).any()
        assert (np.abs(got - a.astype(np.float64) @ b) <= bound(a, b)).all()
    try:
        import cupy
    except ImportError:
        return
    a = cupy.asarray(rng.standard_normal(65 * 64 + 1).astype(np.float32))[1:].reshape(65, 64)
    b = cupy.asarray(rng.standard_normal(64 * 36 + 1).astype(np.float32))[1:].reshape(64, 36)
    got = gm.matmul(gm.from_dlpack(a), gm.from_dlpack(b), variant=variant).get()
    ha, hb = cupy.asnumpy(a), cupy.asnumpy(b)
    assert (np.abs(got - ha.astype(np.float64) @ hb) <= bound(ha, hb)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("mkn", MMA_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_mma_matches_float64_within_the_tf32_bound(rng, mkn, no_leak):
    _needs_mma()
    rec = _tensor_product_within(rng, mkn, "mma", tf32_bound)
    M, K, N = mkn
    assert (rec.variant, rec.params["tile"], rec.block) == ("mma", 128, (128, 1, 1))
    assert rec.grid == (-(-N // 128), -(-M // 128), 1)


@pytest.mark.gpu
def test_mma_rounds_to_tf32(rng):
    """The operands really are TF32 (not float32 through the FMA pipe): on inputs exact in
    TF32 the result equals float32 sums of exact products to float32 rounding, on
    float32 inputs it differs from the float32 kernels by TF32's rounding."""
    _needs_mma()
    a = round_tf32(rng.standard_normal((96, 256)).astype(F))
    b = round_tf32(rng.standard_normal((256, 80)).astype(F))
    got = gm.matmul(a, b, variant="mma").astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    absab = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(got - ref) <= 2 * 256 * 2.0 ** -23 * absab).all()
    x = rng.standard_normal((96, 256)).astype(F)
    y = rng.standard_normal((256, 80)).astype(F)
    fp32 = gm.matmul(x, y, variant="warptiled").astype(np.float64)
    tf32 = gm.matmul(x, y, variant="mma").astype(np.float64)
    ref = x.astype(np.float64) @ y.astype(np.float64)
    assert rel_err(tf32, ref) > 10 * rel_err(fp32, ref)
    assert (np.abs(tf32 - ref) <= tf32_bound(x, y)).all()
    # a tie, 1 + 2^-11: to even (1) on compute capability 9.0 and newer (cvt.rn), away
    # from zero (1 + 2^-10) below it (cvt.rna)
    tie = np.full((64, 512), 1 + 2.0 ** -11, F)
    want = 512.0 if gm.device().compute_capability >= (9, 0) else 512 * (1 + 2.0 ** -10)
    assert (gm.matmul(tie, np.ones((512, 8), F), variant="mma") == want).all()


@pytest.mark.gpu
def test_mma_on_unaligned_rows_and_views(rng, no_leak):
    """K or N not a multiple of 4, and a base 4 bytes past an aligned start (a view of
    another library's array): those operands are copied into the workspace with padded
    rows first, as for wgmma -- same results."""
    _needs_mma()
    _tensor_product_on_unaligned_rows_and_views(rng, "mma", tf32_bound)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["mma", "wgmma", "warptiled"])
def test_padded_rows_last_floats_count_as_zeros(rng, variant, no_leak):
    """The padded copies' rows end in 1-3 floats past K or N: mma's 16-byte copies read
    them (warptiled's of B too), so the launcher's padding kernel writes zeros there
    (wgmma's tensor maps end at K and N: it never reads them).  The workspace is made of
    memory just freed full of NaN: no NaN comes out."""
    if variant != "warptiled":
        _needs_mma() if variant == "mma" else _needs_wgmma()
    m, k, n = 130, 67, 131
    a = gm.to_device(rng.standard_normal((m, k)).astype(F))
    b = gm.to_device(rng.standard_normal((k, n)).astype(F))
    ha, hb = a.get(), b.get()
    for _ in range(3):
        out = poisoned((m, n))
        junk = poisoned(((m * 68 + 63) // 64 * 64 + k * 132,))   # the workspace: A's, B's rows
        del junk                               # back to the pool, NaN inside
        gm.matmul(a, b, variant=variant, out=out)
        got = out.get()
        assert not np.isnan(got).any()
        bound = {"mma": tf32_bound, "wgmma": wgmma_bound}.get(variant, fp32_bound)(ha, hb)
        assert (np.abs(got - ha.astype(np.float64) @ hb) <= bound).all()


@pytest.mark.gpu
def test_mma_refused_below_sm80_else_runs(rng, no_leak):
    """Below compute capability 8.0 the call is refused before any launch, the message
    naming both capabilities, and the next call works; from 8.0 on mma runs."""
    a = rng.standard_normal((20, 30)).astype(np.float32)
    cc = tuple(gm.device().compute_capability)
    if cc < (8, 0):
        with pytest.raises(gm.CudaError, match=r"matmul: variant='mma' needs compute "
                                               r"capability 8\.0 or newer .*; this GPU has "
                                               rf"compute capability {cc[0]}\.{cc[1]}"):
            gm.matmul(a, a.T.copy(), variant="mma")
    else:
        got = gm.matmul(a, a.T.copy(), variant="mma")
        assert (np.abs(got - a.astype(np.float64) @ a.T) <= tf32_bound(a, a.T)).all()
    got = gm.matmul(a, a.T.copy(), variant="tiled")
    assert rel_err(got, a.astype(np.float64) @ a.T) < 1e-5


@pytest.mark.gpu
def test_mma_on_a_gpu_below_sm80_is_a_cuda_error_and_the_rest_runs(pretend_cc, rng, no_leak):
    """The C refusal itself (gm_need_cc), seen through a pretended compute capability 7.5:
    CudaError naming the variant, both capabilities and cudaErrorNotSupported; the other
    variants run meanwhile, and at 8.0 mma runs."""
    a = rng.standard_normal((20, 30)).astype(np.float32)
    _needs_mma()
    pretend_cc(7, 5)
    with pytest.raises(gm.CudaError, match=r"^matmul: variant='mma' needs compute capability "
                                           r"8\.0 or newer \(mma\.sync with TF32 and "
                                           r"cp\.async: sm_80\); this GPU has compute "
                                           r"capability 7\.5$") as e:
        gm.matmul(a, a.T.copy(), variant="mma")
    assert (e.value.name, e.value.code, e.value.call) == ("cudaErrorNotSupported", 801, "matmul")
    assert rel_err(gm.matmul(a, a.T.copy(), variant="tiled"), a.astype(np.float64) @ a.T) < 1e-5
    pretend_cc(8, 0)
    got = gm.matmul(a, a.T.copy(), variant="mma")
    assert (np.abs(got - a.astype(np.float64) @ a.T) <= tf32_bound(a, a.T)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("M,K,N", [(0, 5, 3), (4, 5, 0), (3, 0, 4)])
def test_mma_empty_and_k0(M, K, N):
    _needs_mma()
    out = poisoned((M, N))
    gm.matmul(gm.to_device(np.ones((M, K), np.float32)), np.ones((K, N), np.float32),
              variant="mma", out=out)
    np.testing.assert_array_equal(out.get(), np.ones((M, K)) @ np.ones((K, N)))


@pytest.mark.gpu
def test_mma_kernel_fits_two_blocks_per_sm_without_spills():
    """128 threads at most 255 registers (__launch_bounds__(128, 2)), nothing spilled to
    local memory, and 96 KiB of dynamic shared memory opted in: two blocks per SM where
    the SM has 2 x 97 KiB (sm_80, sm_86 has 100 KiB: one)."""
    _needs_mma()
    attrs = gm.kernel_attributes("matmul", "mma")
    assert attrs.registers_per_thread <= 255 and attrs.local_bytes_per_thread == 0
    assert attrs.static_shared_bytes == 0 and attrs.max_dynamic_shared_bytes >= 96 * 1024
    occ = gm.kernel_occupancy("matmul", "mma", 128, smem=96 * 1024)
    if gm.device().shared_memory_per_multiprocessor >= 2 * 97 * 1024:
        assert occ.blocks_per_sm == 2
    gm.matmul(np.ones((130, 70), F), np.ones((70, 129), F), variant="mma")
    assert gm.last_record().smem == 96 * 1024


# ---- wgmma: Hopper's warpgroup MMA fed by the tensor copy (issue 27) ---------------------
def wgmma_bound(a, b):
    """tf32_bound with wgmma's rounding: B's values rounded to TF32 (2^-11), A's truncated
    by the tensor cores (2^-10): 1.5 x 2^-10 per product at most, instead of 2^-10."""
    k = a.shape[1]
    absab = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return MMA_C * absab * (1.5 * 2.0 ** -10 + k * 2.0 ** -23)


def fp32_bound(a, b):
    """Elementwise bound on |a @ b (float32 products and sums, any order) - a @ b
    (float64)|: K roundings of 2^-24 each, twice over."""
    k = a.shape[1]
    absab = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return 2.0 * absab * (k + 1) * 2.0 ** -24


def truncate_tf32(x):
    """float32 -> TF32 by dropping the 13 low fraction bits: what the tensor cores make
    of wgmma's shared-memory operand."""
    u = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return u.view(np.float32)


#: (M, K, N): one 256 x 128 tile and parts of it, K under one slice of 32 and over the
#: 4-stage ring (several rounds of the mbarriers' phases), K and N not multiples of 4 (the
#: padded copies), B boxes wholly past N (n % 128 <= 96), one row or column.
WGMMA_SHAPES = MATMUL_SHAPES + [(256, 32, 128), (257, 160, 129), (300, 130, 257),
                                (129, 35, 131), (3, 4, 5), (200, 1, 300), (65, 67, 63),
                                (512, 520, 40), (256, 129, 2)]


def _needs_wgmma():
    if tuple(gm.device().compute_capability) != (9, 0):
        pytest.skip("wgmma needs compute capability 9.0 (tested by "
                    "test_wgmma_refused_on_other_gpus)")


@pytest.mark.gpu
@pytest.mark.parametrize("mkn", WGMMA_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wgmma_matches_float64_within_the_tf32_bound(rng, mkn, no_leak):
    _needs_wgmma()
    rec = _tensor_product_within(rng, mkn, "wgmma", wgmma_bound)
    M, K, N = mkn
    assert (rec.variant, rec.params["tile"], rec.block) == ("wgmma", 128, (256, 1, 1))
    assert rec.grid == (-(-N // 128), -(-M // 256), 1)


@pytest.mark.gpu
def test_wgmma_truncates_a_and_rounds_b(rng):
    """The operands really are TF32: with A exact in TF32 and B rounded the result is
    float32 sums of exact products; with float32 inputs it differs from the float32
    kernels by TF32's rounding, and on A made of values just under a TF32 step it shows
    the truncation (mma, rounding A, does not)."""
    _needs_wgmma()
    a = truncate_tf32(rng.standard_normal((96, 256)).astype(F))
    b = rng.standard_normal((256, 80)).astype(F)
    got = gm.matmul(a, b, variant="wgmma").astype(np.float64)
    ref = a.astype(np.float64) @ round_tf32(b).astype(np.float64)
    absab = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(got - ref) <= 2 * 256 * 2.0 ** -23 * absab).all()
    x = rng.standard_normal((96, 256)).astype(F)
    y = rng.standard_normal((256, 80)).astype(F)
    fp32 = gm.matmul(x, y, variant="warptiled").astype(np.float64)
    tf32 = gm.matmul(x, y, variant="wgmma").astype(np.float64)
    ref = x.astype(np.float64) @ y.astype(np.float64)
    assert rel_err(tf32, ref) > 10 * rel_err(fp32, ref)
    # 1 + 2^-10 - 2^-23: truncated to 1, rounded to 1 + 2^-10
    ones = np.full((64, 512), 1 + 2.0 ** -10 - 2.0 ** -23, F)
    e = np.ones((512, 8), F)
    assert (gm.matmul(ones, e, variant="wgmma") == 512).all()
    assert (gm.matmul(ones, e, variant="mma") == 512 * (1 + 2.0 ** -10)).all()


@pytest.mark.gpu
def test_wgmma_on_unaligned_rows_and_views(rng, no_leak):
    """The tensor map wants rows on the 16-byte grid: K or N not a multiple of 4, or a base
    4 bytes past an aligned start (a view of another library's array), go through padded
    copies in the call's workspace -- same results."""
    _needs_wgmma()
    _tensor_product_on_unaligned_rows_and_views(rng, "wgmma", wgmma_bound)


@pytest.mark.gpu
def test_wgmma_refused_on_other_gpus(pretend_cc, rng, no_leak):
    """wgmma is sm_90a's: compute capability 8.0 (older) and 10.0 (newer: other tensor-core
    instructions) are refused before any launch, naming the capability; the next call
    works, and at 9.0 wgmma runs."""
    a = rng.standard_normal((20, 30)).astype(np.float32)
    _needs_wgmma()
    for major in (8, 10):
        pretend_cc(major, 0)
        with pytest.raises(gm.CudaError, match=rf"^matmul: variant='wgmma' needs compute "
                                               rf"capability 9\.0 \(wgmma\.mma_async and the "
                                               rf"tensor copy: sm_90a\); this GPU has compute "
                                               rf"capability {major}\.0$") as e:
            gm.matmul(a, a.T.copy(), variant="wgmma")
        assert (e.value.name, e.value.code) == ("cudaErrorNotSupported", 801)
        assert rel_err(gm.matmul(a, a.T.copy(), variant="tiled"), a.astype(np.float64) @ a.T) < 1e-5
    pretend_cc(9, 0)
    got = gm.matmul(a, a.T.copy(), variant="wgmma")
    assert (np.abs(got - a.astype(np.float64) @ a.T) <= wgmma_bound(a, a.T)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("M,K,N", [(0, 5, 3), (4, 5, 0), (3, 0, 4), (300, 0, 130)])
def test_wgmma_empty_and_k0(M, K, N):
    _needs_wgmma()
    out = poisoned((M, N))
    gm.matmul(gm.to_device(np.ones((M, K), np.float32)), np.ones((K, N), np.float32),
              variant="wgmma", out=out)
    np.testing.assert_array_equal(out.get(), np.ones((M, K)) @ np.ones((K, N)))


@pytest.mark.gpu
def test_wgmma_kernel_fits_one_block_per_sm_without_spills():
    """256 threads (2 warpgroups) with 128 accumulators each fit without spilling, and the
    193 KiB ring of stages is opted in: one block per SM."""
    _needs_wgmma()
    attrs = gm.kernel_attributes("matmul", "wgmma")
    assert attrs.registers_per_thread <= 255 and attrs.local_bytes_per_thread == 0
    assert attrs.max_dynamic_shared_bytes >= 4 * 48 * 1024 + 1024
    occ = gm.kernel_occupancy("matmul", "wgmma", 256, smem=4 * 48 * 1024 + 1024)
    assert occ.blocks_per_sm == 1
    gm.matmul(np.ones((130, 70), F), np.ones((70, 129), F), variant="wgmma")
    assert gm.last_record().smem == 4 * 48 * 1024 + 1024


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
