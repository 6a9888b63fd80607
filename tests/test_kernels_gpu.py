"""vec_add and matmul against NumPy on fresh random data of awkward sizes,
with the output poisoned first so an element the kernel never wrote fails."""
import numpy as np
import pytest

import gpumem as gm

pytestmark = pytest.mark.gpu

MATMUL_SHAPES = [(1, 1, 1), (17, 33, 5), (31, 1, 64), (64, 64, 64), (100, 257, 3),
                 (1000, 999, 1001), (33, 4096, 7)]


def rel_err(got, ref):
    return np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-300)


def poisoned(shape):
    return gm.to_device(np.full(shape, np.nan, dtype=np.float32))


@pytest.mark.parametrize("variant", ["naive", "tiled"])
@pytest.mark.parametrize("tile", [8, 16, 32])
@pytest.mark.parametrize("mkn", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_numpy(rng, variant, tile, mkn, no_leak):
    M, K, N = mkn
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    out = poisoned((M, N))
    got = gm.matmul(gm.to_device(a), gm.to_device(b), tile=tile, variant=variant, out=out)
    assert got is out
    host = got.get()
    assert not np.isnan(host).any(), "an output element was never written"
    assert rel_err(host, ref) < 1e-5 * max(1.0, np.sqrt(K) / 8)


def test_matmul_ndarray_in_ndarray_out(rng):
    a = rng.standard_normal((45, 70)).astype(np.float32)
    b = rng.standard_normal((70, 23)).astype(np.float32)
    got = gm.matmul(a, b)
    assert isinstance(got, np.ndarray) and got.shape == (45, 23) and got.dtype == np.float32
    assert rel_err(got, a.astype(np.float64) @ b) < 1e-5


def test_matmul_mixed_inputs_return_device_array(rng):
    a = rng.standard_normal((9, 8)).astype(np.float32)
    b = rng.standard_normal((8, 7)).astype(np.float32)
    got = gm.matmul(a, gm.to_device(b), variant="naive")
    assert isinstance(got, gm.DeviceArray)
    assert rel_err(got.get(), a.astype(np.float64) @ b) < 1e-5


def test_matmul_non_contiguous_inputs(rng):
    a = rng.standard_normal((60, 50)).astype(np.float32)
    b = rng.standard_normal((80, 60)).astype(np.float32)
    got = gm.matmul(a.T, b[::2, ::-1].T)
    ref = a.T.astype(np.float64) @ b[::2, ::-1].T.astype(np.float64)
    assert rel_err(got, ref) < 1e-5


@pytest.mark.parametrize("M,K,N", [(0, 5, 3), (4, 5, 0), (0, 0, 0), (3, 0, 4)])
def test_matmul_empty_follows_numpy(M, K, N):
    a = np.ones((M, K), np.float32)
    b = np.ones((K, N), np.float32)
    got = gm.matmul(a, b)
    ref = a @ b
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)  # K == 0: zeros


def test_matmul_k0_writes_zeros_over_poison():
    out = poisoned((5, 6))
    gm.matmul(gm.to_device(np.ones((5, 0), np.float32)), np.ones((0, 6), np.float32), out=out)
    np.testing.assert_array_equal(out.get(), np.zeros((5, 6), np.float32))


def test_matmul_out_must_match_and_not_alias(rng):
    a = gm.to_device(rng.standard_normal((8, 8)).astype(np.float32))
    with pytest.raises(ValueError, match=r"out has shape \(8, 7\); the result has shape \(8, 8\)"):
        gm.matmul(a, a, out=gm.empty((8, 7)))
    with pytest.raises(TypeError, match="out has dtype"):
        gm.matmul(a, a, out=gm.empty((8, 8), dtype=np.float64))
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.matmul(a, a, out=a)


def test_matmul_tiled_is_deterministic_and_equals_naive_order(rng):
    # Both variants sum k in the same order, so the float32 results agree exactly
    # whenever the compiler keeps the order (fma contraction in both).
    a = rng.standard_normal((130, 77)).astype(np.float32)
    b = rng.standard_normal((77, 65)).astype(np.float32)
    r1 = gm.matmul(a, b, tile=16)
    r2 = gm.matmul(a, b, tile=16)
    np.testing.assert_array_equal(r1, r2)


@pytest.mark.parametrize("n", [1, 31, 257, 1000, 1 << 20, (1 << 20) + 3])
@pytest.mark.parametrize("block", [1, 32, 100, 256, 1024])
def test_vec_add_matches_numpy(rng, n, block, no_leak):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = poisoned((n,))
    gm.vec_add(gm.to_device(a), gm.to_device(b), block=block, out=out)
    np.testing.assert_array_equal(out.get(), a + b)
    rec = gm.last_record()
    assert rec.block == (block, 1, 1) and rec.grid == (-(-n // block), 1, 1)
    assert rec.bytes == 12 * n and rec.flops == n


def test_vec_add_any_shape_and_views(rng):
    a = rng.standard_normal((7, 11, 3)).astype(np.float32)
    b = rng.standard_normal((3, 11, 7)).astype(np.float32).T
    np.testing.assert_array_equal(gm.vec_add(a, b), a + b)
    z = np.zeros((0, 3), np.float32)
    assert gm.vec_add(z, z).shape == (0, 3)


def test_vec_add_in_place_through_out(rng):
    a = rng.standard_normal(999).astype(np.float32)
    d = gm.to_device(a)
    gm.vec_add(d, d, out=d)  # elementwise: aliasing is allowed
    np.testing.assert_array_equal(d.get(), a + a)
