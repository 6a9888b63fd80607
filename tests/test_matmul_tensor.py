"""matmul's tensor-core variants, mma (TF32 mma.sync, compute capability 8.0 on) and
wgmma (Hopper's warpgroup MMA fed by the tensor copy, 9.0 only): the TF32 error bounds
and the fragment mapping checked on the CPU, and on a GPU every product against float64
within its bound, the rounding the operands really get, unaligned rows and views, the
refusals on other GPUs and the kernels' resources.  Beside tests/test_matmul.py (its
shapes and operands are shared from there)."""
import numpy as np
import pytest

import gpumem as gm
from _helpers import F, poisoned, rel_err
from test_matmul import MATMUL_SHAPES, _operands


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
