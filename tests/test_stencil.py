"""gpumem.stencil: stencil_1d and constant_broadcast -- validation and the NumPy
references without a GPU; against the references on awkward n with poisoned
outputs on a GPU, and the broadcast sweep."""
import numpy as np
import pytest

import gpumem as gm
from gpumem.lessons import stencil
from gpumem.lessons.stencil import STENCIL_8TH_ORDER, constant_broadcast_reference, stencil_1d_reference
from _fake_gpu import FakeGPU, first_with

X = np.ones(10, np.float32)


# ---- the references and the table (no GPU) ---------------------------------------
def test_default_coefficients_are_the_books_antisymmetric_radius_4():
    a = np.array([0.8, -0.2, 0.03809, -0.00357], np.float32)
    np.testing.assert_array_equal(STENCIL_8TH_ORDER[5:], a)
    np.testing.assert_array_equal(STENCIL_8TH_ORDER[:4], -a[::-1])
    assert STENCIL_8TH_ORDER[4] == 0


def test_reference_is_the_books_formula_with_zero_padding(rng):
    x = rng.standard_normal(50).astype(np.float32)
    a = STENCIL_8TH_ORDER[5:].astype(np.float64)
    xp = np.concatenate([np.zeros(4), x.astype(np.float64), np.zeros(4)])
    book = np.array([sum(a[k - 1] * (xp[i + 4 + k] - xp[i + 4 - k]) for k in range(1, 5))
                     for i in range(50)])
    np.testing.assert_allclose(stencil_1d_reference(x), book, rtol=1e-12, atol=1e-12)
    # symmetric weights: the centre counts, the edges see zeros
    ref = stencil_1d_reference(np.ones(3, np.float32), [1.0, 2.0, 1.0])
    np.testing.assert_array_equal(ref, [3.0, 4.0, 3.0])


def test_variants_table():
    vs = {v.name: v for v in gm.variants("stencil_1d")}
    assert set(vs) == {"constant", "readonly", "global"}
    assert all(v.bytes == "8*n" for v in vs.values())
    assert "__constant__" in vs["constant"].idea and "__ldg" in vs["readonly"].idea


def test_broadcast_reference():
    table = stencil.broadcast_table()
    one = constant_broadcast_reference(1, n=64, iters=8)
    assert np.all(one == one[0])
    assert one[0] == sum(table[(32 * i) % 256] for i in range(8))
    many = constant_broadcast_reference(32, n=64, iters=3)
    assert many[33] == table[1] + table[33] + table[65]
    assert np.array_equal(many[:32], many[32:])


# ---- validation before any device call (no GPU) ------------------------------------
@pytest.mark.parametrize("memory", ["shared", "texture", ""])
def test_bad_memory(memory):
    with pytest.raises(ValueError, match=rf"memory='{memory}' is unknown; allowed: 'constant', "
                                         r"'readonly', 'global'"):
        gm.stencil_1d(X, memory=memory)


def test_memory_must_be_str():
    with pytest.raises(TypeError, match="memory must be a str"):
        gm.stencil_1d(X, memory=1)


@pytest.mark.parametrize("coef", [[1.0], [1.0, 1.0], [0.0] * 35, np.ones((3, 3)), []],
                         ids=["len1", "even", "radius17", "2d", "empty"])
def test_bad_coef_length(coef):
    with pytest.raises(ValueError, match=r"coef has shape .*odd length 2\*R \+ 1 for a radius R "
                                         r"of 1\.\.16"):
        gm.stencil_1d(X, coef)


@pytest.mark.parametrize("coef", [[1.0, 2.0, 3.0], [1.0, 0.5, 0.0, 0.5, 2.0],
                                  [-1.0, 1.0, 1.0]],
                         ids=["asym-ends", "outer-pair", "antisym-with-centre"])
def test_coef_neither_symmetric_nor_antisymmetric(coef):
    with pytest.raises(ValueError, match="neither symmetric .* nor antisymmetric"):
        gm.stencil_1d(X, coef)


@pytest.mark.parametrize("coef", [[1.0, np.nan, 1.0], [np.inf, 0.0, -np.inf], [1e39, 0, 1e39]])
def test_coef_must_be_finite_float32(coef):
    with pytest.raises(ValueError, match=r"coef\[\d\] is not a finite float32 value"):
        gm.stencil_1d(X, coef)


@pytest.mark.parametrize("coef", [["a", "b", "c"], np.array([1j, 0, 1j])], ids=["str", "complex"])
def test_coef_must_be_real(coef):
    with pytest.raises(TypeError, match="coef must hold real numbers"):
        gm.stencil_1d(X, coef)


@pytest.mark.parametrize("block", [0, 16, 48, 1056, 2048, -32])
def test_bad_block(block):
    with pytest.raises(ValueError, match=rf"block={block} is not allowed; block must be a "
                                         r"multiple of 32 .* from 32 to 1024"):
        gm.stencil_1d(X, block=block)


@pytest.mark.parametrize("bad", [256.0, "256", True])
def test_block_must_be_int(bad):
    with pytest.raises(TypeError, match="block must be an int"):
        gm.stencil_1d(X, block=bad)


@pytest.mark.parametrize("items", [0, 3, 16])
def test_bad_items(items):
    with pytest.raises(ValueError, match=rf"items={items} is not allowed; .* 1, 2, 4, 8"):
        gm.stencil_1d(X, items=items)


def test_x_must_be_float32_1d_array():
    with pytest.raises(TypeError, match="dtype"):
        gm.stencil_1d(np.ones(10))
    with pytest.raises(TypeError, match="numpy.ndarray or gpumem.DeviceArray"):
        gm.stencil_1d([1.0, 2.0])
    with pytest.raises(ValueError, match=r"x must be 1-D, not 2-D with shape \(2, 5\)"):
        gm.stencil_1d(np.ones((2, 5), np.float32))


def test_out_must_be_device_array():
    with pytest.raises(TypeError, match="out must be a gpumem.DeviceArray"):
        gm.stencil_1d(X, out=np.empty(10, np.float32))


@pytest.mark.parametrize("distinct", [0, 33, -1])
def test_broadcast_bad_distinct(distinct):
    with pytest.raises(ValueError, match=rf"distinct={distinct} is not allowed; distinct must "
                                         r"be 1\.\.32"):
        gm.constant_broadcast(distinct)


def test_broadcast_bad_arguments():
    with pytest.raises(TypeError, match="distinct must be an int"):
        gm.constant_broadcast(2.0)
    with pytest.raises(ValueError, match="memory='global' is unknown; allowed: 'constant', "
                                         "'readonly'"):
        gm.constant_broadcast(2, memory="global")
    with pytest.raises(ValueError, match="n=0 is not allowed"):
        gm.constant_broadcast(2, n=0)
    with pytest.raises(ValueError, match="iters=0 is not allowed"):
        gm.constant_broadcast(2, iters=0)
    with pytest.raises(ValueError, match="block=100 is not allowed"):
        gm.constant_broadcast(2, block=100)


# ---- on the GPU ----------------------------------------------------------------------
AWKWARD_N = [1, 3, 31, 33, 255, 1025, 4097, 100_003]


MEMORIES = ["constant", "readonly", "global"]


def _poisoned(n):
    return gm.to_device(np.full(n, np.nan, np.float32))


def _check(got, x, coef):
    ref = stencil_1d_reference(x, coef)
    w = STENCIL_8TH_ORDER if coef is None else np.asarray(coef, np.float32)
    assert not np.isnan(got).any(), "an output element was never written"
    scale = float(np.abs(w).sum() * max(np.abs(x).max(), 1e-30))
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * scale)


@pytest.mark.gpu
@pytest.mark.parametrize("n", AWKWARD_N)
@pytest.mark.parametrize("items", [1, 2, 4, 8])
@pytest.mark.parametrize("memory", MEMORIES)
def test_default_stencil_matches_numpy(rng, memory, items, n, no_leak):
    x = rng.standard_normal(n).astype(np.float32)
    out = _poisoned(n)
    got = gm.stencil_1d(gm.to_device(x), memory=memory, items=items, out=out)
    assert got is out
    _check(out.get(), x, None)


def _random_coef(rng, radius, antisymmetric):
    half = rng.standard_normal(radius).astype(np.float32)
    centre = np.float32(0.0) if antisymmetric else rng.standard_normal(1).astype(np.float32)[0]
    left = -half[::-1] if antisymmetric else half[::-1]
    return np.concatenate([left, [centre], half]).astype(np.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("radius", [1, 2, 7, 16])
@pytest.mark.parametrize("antisymmetric", [False, True], ids=["sym", "antisym"])
@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("block,n", [(32, 37), (96, 1000), (1024, 5000)])
def test_any_radius_and_symmetry(rng, radius, antisymmetric, memory, block, n, no_leak):
    x = rng.standard_normal(n).astype(np.float32)
    coef = _random_coef(rng, radius, antisymmetric)
    out = _poisoned(n)
    gm.stencil_1d(x if n % 2 else gm.to_device(x), coef, memory=memory, block=block, items=2,
                  out=out)
    _check(out.get(), x, coef)
    rec = gm.last_record()
    assert rec.kernel == "stencil_1d" and rec.variant == memory
    assert rec.params["radius"] == radius and rec.params["antisymmetric"] == int(antisymmetric)
    assert rec.bytes == 8 * n and rec.block == (block, 1, 1)
    assert rec.smem == (block * 2 + 2 * radius) * 4


@pytest.mark.gpu
def test_radius_larger_than_n(rng):
    x = rng.standard_normal(5).astype(np.float32)
    coef = _random_coef(rng, 16, False)
    for memory in MEMORIES:
        _check(gm.stencil_1d(x, coef, memory=memory), x, coef)


@pytest.mark.gpu
def test_constant_coefficients_follow_each_call(rng):
    """The constant variant copies its coefficients to the symbol on every call."""
    x = rng.standard_normal(3000).astype(np.float32)
    a, b = _random_coef(rng, 3, False), _random_coef(rng, 5, True)
    for coef in (a, b, a, None, b):
        _check(gm.stencil_1d(x, coef, memory="constant"), x, coef)


@pytest.mark.gpu
def test_ndarray_in_ndarray_out_and_empty(rng):
    x = rng.standard_normal(777).astype(np.float32)
    got = gm.stencil_1d(x)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (777,)
    _check(got, x, None)
    assert isinstance(gm.stencil_1d(gm.to_device(x)), gm.DeviceArray)
    empty = gm.stencil_1d(np.zeros(0, np.float32))
    assert isinstance(empty, np.ndarray) and empty.shape == (0,)


@pytest.mark.gpu
def test_out_must_not_alias_x_and_must_match():
    d = gm.to_device(np.ones(64, np.float32))
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.stencil_1d(d, out=d)
    with pytest.raises(ValueError, match=r"out has shape \(63,\); the result has shape \(64,\)"):
        gm.stencil_1d(d, out=gm.empty((63,), np.float32))
    with pytest.raises(TypeError, match="coef must be a host sequence"):
        gm.stencil_1d(d, gm.to_device(STENCIL_8TH_ORDER))


@pytest.mark.gpu
def test_stencil_kernel_attributes():
    for memory in MEMORIES:
        for items in (1, 8):
            a = gm.kernel_attributes("stencil_1d", memory, items=items)
            assert 0 < a.registers_per_thread <= 64
            assert a.local_bytes_per_thread == 0
            assert a.max_threads_per_block == 1024
    assert gm.kernel_attributes("stencil_1d", "constant").constant_bytes >= 17 * 4


@pytest.mark.gpu
@pytest.mark.parametrize("memory", ["constant", "readonly"])
@pytest.mark.parametrize("distinct", [1, 2, 3, 4, 8, 16, 32])
def test_broadcast_matches_reference(memory, distinct, no_leak):
    n, iters = 5000, 37
    out = gm.to_device(np.full(n, np.nan, np.float32))
    got = gm.constant_broadcast(distinct, memory=memory, n=n, iters=iters, block=96, out=out)
    assert got is out
    np.testing.assert_array_equal(out.get(), constant_broadcast_reference(distinct, n, iters))
    host = gm.constant_broadcast(distinct, memory=memory, n=33, iters=5)
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, constant_broadcast_reference(distinct, 33, 5))


@pytest.mark.gpu
def test_broadcast_sweep_is_consistent():
    b = stencil.broadcast_sweep((1, 32), n=1 << 14, iters=64, repeat=3)
    for row in b:
        assert row["constant / readonly"] == pytest.approx(row["constant_ms"] / row["readonly_ms"])
    assert b["constant vs 1 word"][0] == 1.0


# ---- issue 11: arguments first ----------------------------------------------------------
def test_stencil_references_and_sweep_check_their_arguments(monkeypatch):
    monkeypatch.setattr(gm.runtime, "bench", lambda *a, **k: pytest.fail("reached the device"))
    with pytest.raises(ValueError, match=r"constant_broadcast_reference: distinct=0 is not allowed; "
                                         r"distinct must be 1..32"):
        constant_broadcast_reference(0)
    with pytest.raises(TypeError, match=r"constant_broadcast_reference: iters must be an int, not bool"):
        constant_broadcast_reference(4, iters=True)
    with pytest.raises(ValueError, match=r"broadcast_sweep: distincts=33 is not allowed"):
        stencil.broadcast_sweep([1, 33])
    with pytest.raises(ValueError, match=r"broadcast_sweep: repeat=0 is not allowed"):
        stencil.broadcast_sweep(repeat=0)
    with pytest.raises(ValueError, match=r"stencil_1d_reference: coef has 4 weights"):
        stencil_1d_reference(np.ones(8), [1, 2, 3, 4])
    with pytest.raises(TypeError, match=r"stencil_1d_reference: x must be an array of real numbers"):
        stencil_1d_reference(None)
    with pytest.raises(TypeError, match=r"constant_broadcast: distinct must be an int, not NoneType"):
        gm.constant_broadcast(None)
    got = constant_broadcast_reference(np.int64(3), n=np.int64(70), iters=2)
    assert got.shape == (70,) and got.dtype == np.float32
    table = stencil.broadcast_table()
    assert got[33] == table[1] + table[33]      # lane 1: word 1, then word 1 + 32


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the model, on the fake GPU (the stand-ins stencil declares), on a GPU
def test_report_headline_without_a_gpu_counts_the_broadcasts_passes():
    rows = stencil.LESSON.headline(False, False)
    assert first_with(rows, "constant_passes_32")["model"]["constant_passes_32"] == 32.0


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    rows = stencil.LESSON.headline(True, True)
    st = first_with(rows, "constant_pct_of_copy")["measured"]
    assert st["constant_pct_of_copy"] == pytest.approx(100 / 1.05)
    assert first_with(rows, "constant_32_over_1")["measured"]["constant_32_over_1"] == 20.0


@pytest.mark.gpu
def test_report_headline_on_a_gpu():
    rows = stencil.LESSON.headline(True, False)
    st = first_with(rows, "constant_GB/s")["measured"]
    # sane against this GPU's copy; the speed itself is bench_stencil's
    assert st["constant_GB/s"] >= 0.5 * st["device_copy_GB/s"]
    bc = first_with(rows, "constant_32_over_1")["measured"]
    assert bc["constant_32_over_1"] > 4 and bc["constant_over_readonly_32"] > 1
