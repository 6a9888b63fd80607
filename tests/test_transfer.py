"""gpumem.transfer and the host side of the core: read_sum and scale, pinned memory,
to_device/get (staged, pinned, out=), DLPack and the CUDA array interface.

Without a GPU: tables, references, argument validation.  On a GPU: bytes equal
after round trips for every dtype, odd sizes, empty and non-contiguous arrays;
the kernels against NumPy with poisoned outputs; no device or pinned memory kept
over 10,000 calls; DLPack both ways (with CuPy and PyTorch where installed); the
experiments' tables."""
import ctypes
import gc
import sys

import numpy as np
import pytest

from gpumem.tools.card import CARD_RUNS

import gpumem as gm
from gpumem import experiments
from gpumem.lessons import transfer
from gpumem.lessons.transfer import read_sum_reference, scale_reference

from _helpers import f32
from _fake_gpu import FakeGPU, first_with

gpu = pytest.mark.gpu
DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64,
          np.complex64, np.complex128]
STAGE_MIN = 2 << 20


# ---- tables and references (no GPU) -------------------------------------------------------
def test_variants_tables():
    (rs,) = gm.variants("read_sum")
    (sc,) = gm.variants("scale")
    assert (rs.name, rs.bytes, rs.flops) == ("default", "4*n", "n")
    assert (sc.name, sc.bytes, sc.flops) == ("default", "8*n", "2*n*work")
    assert "mapped" not in rs.idea and "pinned host memory" in rs.idea
    assert experiments.transfer_sweep is transfer.transfer_sweep
    assert {"pageable", "fresh", "pinned", "write_combined", "staged"} == set(transfer.KINDS)
    rows = {r["name"]: r for r in gm._core.args("_transfer_copy")}     # issue 48: the C table's
    assert tuple(transfer.KINDS) == rows["kind"]["choices"]
    assert transfer.DIRECTIONS == rows["direction"]["choices"]
    assert transfer.SIZES[0] == 4096 and transfer.SIZES[-1] == 1 << 30


def test_references():
    x = np.array([1.5, -2.0, 3.25], np.float32)
    np.testing.assert_array_equal(read_sum_reference(x), [2.75])
    v = np.array([0.0, 1.0, -3.0], np.float64)
    w = v.copy()
    for _ in range(7):
        w = w * 0.999 + 0.001
    np.testing.assert_allclose(scale_reference(v.astype(np.float32), 7), w, rtol=1e-12)
    np.testing.assert_array_equal(scale_reference(v.astype(np.float32), 0), v)
    assert transfer._pattern_sum(10) == 28 + 1
    assert transfer._pattern_sum(8 * 1000 + 3) == 28 * 1000 + 3


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: gm.read_sum(np.ones(3)), TypeError, "read_sum: x has dtype"),
    (lambda: gm.read_sum(np.ones(3, np.float32), block=100), ValueError, "read_sum: block=100"),
    (lambda: gm.read_sum(None), TypeError, "read_sum: x must be"),
    (lambda: gm.scale(np.ones(3, np.float32), work=-1), ValueError, "scale: work=-1"),
    (lambda: gm.scale(np.ones(3, np.float32), work=10**7), ValueError, "scale: work=10000000"),
    (lambda: gm.pinned_empty(-1), ValueError, "pinned_empty: shape: negative"),
    (lambda: gm.pinned_empty("x"), TypeError, "pinned_empty: shape must be"),
    (lambda: gm.pinned_empty(3, "U4"), TypeError, "pinned_empty: dtype is"),
    (lambda: gm.pinned_empty(3, write_combined=1), TypeError, "write_combined must be True"),
    (lambda: gm.pinned_like([1, 2]), TypeError, "pinned_like: a must have a shape"),
    (lambda: gm.pinned_like(np.array(["a"])), TypeError, "pinned_like: a's dtype"),
    (lambda: gm.from_dlpack([1.0]), TypeError, "from_dlpack: x must have __dlpack__"),
    (lambda: gm.from_dlpack(np.ones(3)), ValueError, "from_dlpack: x is in host memory"),
    (lambda: gm.to_device([1.0]), TypeError, "to_device: a must be a numpy.ndarray"),
    (lambda: gm.to_device(np.ones(3), out=3), TypeError,
     "to_device: out must be a gpumem.DeviceArray, not int"),
    (lambda: gm.to_device(a=np.ones(3)), TypeError, "to_device"),
    (lambda: experiments.transfer_sweep([4096], kinds=["mmap"]), ValueError, "kind='mmap'"),
    (lambda: experiments.transfer_sweep([], kinds=["pinned"]), ValueError, "sizes is empty"),
    (lambda: experiments.transfer_sweep([0]), ValueError, "transfer_sweep: sizes"),
    (lambda: experiments.transfer_sweep([4096], directions="up"), ValueError, "direction"),
    (lambda: experiments.zero_copy_compare([4098]), ValueError, "not a multiple of 4"),
    (lambda: experiments.zero_copy_compare([4096], reads=[0]), ValueError, "reads"),
    (lambda: experiments.managed_compare([4096], repeat=0), ValueError, "repeat=0"),
    (lambda: experiments.overlap_timeline(8, chunks=3), ValueError, "chunks=3"),
    (lambda: experiments.overlap_timeline(4096, chunks=65), ValueError, "chunks=65"),
    (lambda: experiments.overlap_timeline(4097), ValueError, "not a multiple of 4"),
    (lambda: gm._core._transfer_copy("fresh", "h2d", 4096, 1, 0), ValueError,
     "direction must be 'd2h'"),
    (lambda: gm._core._transfer_copy("pinned", "h2d", 0, 1, 0), ValueError, "nbytes=0"),
    (lambda: gm._core._transfer_copy("pinned", "sideways", 4, 1, 0), ValueError, "direction"),
    (lambda: gm._core._transfer_zero_copy(4096, 1001, 1), ValueError, "reads=1001"),
    (lambda: gm._core._transfer_overlap(4096, 0, 1), ValueError, "chunks=0"),
])
def test_validation_before_the_device(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_experiments_need_a_gpu(no_gpu):
    for call in (lambda: experiments.transfer_sweep([4096]),
                 lambda: experiments.zero_copy_compare([4096]),
                 lambda: experiments.managed_compare([4096]),
                 lambda: experiments.overlap_timeline(4096, chunks=2)):
        with pytest.raises(gm.CudaUnavailableError):
            call()


def test_plot_timeline_refuses_other_tables():
    with pytest.raises(TypeError, match="plot_timeline: table must be"):
        transfer.plot_timeline(gm.Table([{"x": 1}]))


# ---- round trips ------------------------------------------------------------------------------
def _random(rng, shape, dtype):
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, size=n * np.dtype(dtype).itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(shape) if dtype != np.bool_ else (raw % 2).astype(bool).reshape(shape)
    return a


def _same_bytes(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 0, 5), (33, 31), (4097,),
                                   (STAGE_MIN // 8 + 3,), (1021, 1031)])
def test_round_trip_bytes(rng, no_leak, dtype, shape):
    a = _random(rng, shape, dtype)
    d = gm.to_device(a)
    assert d.shape == a.shape and d.dtype == a.dtype and d.nbytes == a.nbytes
    assert _same_bytes(d.get(), a)
    out = np.empty_like(a)
    out.view(np.uint8).reshape(-1)[:] = 0xAB  # poisoned
    assert d.get(out=out) is out and _same_bytes(out, a)


@gpu
def test_staged_round_trip_large_and_odd(rng, no_leak):
    # several chunks per worker, a ragged last chunk, an odd byte count
    for nbytes in (STAGE_MIN, STAGE_MIN + 1, 37 * 2**20 + 4093, 129 * 2**20 + 1):
        a = rng.integers(0, 256, nbytes, dtype=np.uint8)
        d = gm.to_device(a)
        back = d.get()
        assert back.tobytes() == a.tobytes(), nbytes
        out = np.zeros_like(a)
        d.get(out=out)
        assert np.array_equal(out, a)
    info = gm._core._stage_info()
    assert 1 <= info["workers"] <= 8 and info["min_bytes"] == STAGE_MIN


@gpu
def test_to_device_into_an_existing_array(rng, no_leak):
    for shape, dtype in (((1021, 1031), np.float32), ((7,), np.int16), ((0, 3), np.float64),
                         ((STAGE_MIN // 4 + 9,), np.float32)):
        a = _random(rng, shape, dtype)
        d = gm.empty(shape, dtype)
        held = gm._core.bytes_held()
        assert gm.to_device(a, out=d) is d and gm._core.bytes_held() == held   # no allocation
        assert _same_bytes(d.get(), a)
    h = gm.pinned_empty((300, 257), np.float32)
    h[:] = rng.standard_normal(h.shape)
    d = gm.empty(h.shape, np.float32)
    assert _same_bytes(gm.to_device(h, out=d).get(), h)
    v = f32(rng, 40, 60)[:, ::3]                             # strided: copied first
    assert _same_bytes(gm.to_device(v, out=gm.empty(v.shape, np.float32)).get(), v)
    with pytest.raises(ValueError, match=r"to_device: a has shape \(3,\); out has shape \(4,\)"):
        gm.to_device(np.ones(3, np.float32), out=gm.empty(4))
    with pytest.raises(TypeError, match="to_device: a has dtype"):
        gm.to_device(np.ones(4), out=gm.empty(4))
    with pytest.raises(TypeError, match="with out=, a must be a numpy.ndarray"):
        gm.to_device(Producer(np.ones(4, np.float32)), out=gm.empty(4))


@gpu
def test_non_contiguous_inputs(rng, no_leak):
    a = f32(rng, 1001, 2003)
    for view in (a[::2], a[:, ::3], a.T, a[::-1, 5:], np.broadcast_to(a[0], (7, 2003))):
        assert _same_bytes(gm.to_device(view).get(), view)
    big = f32(rng, 2300, 700)[:, 1:]              # > 2 MiB, strided: staged after the copy
    assert _same_bytes(gm.to_device(big).get(), big)


@gpu
def test_pinned_arrays(rng, no_leak):
    base = gm.memory_info()["pinned_bytes"]
    for wc in (False, True):
        h = gm.pinned_empty((513, 7), np.float64, write_combined=wc)
        assert h.shape == (513, 7) and h.dtype == np.float64 and h.flags.c_contiguous
        assert type(h.base).__name__ == "PinnedMemory" and h.flags.writeable
        assert gm.memory_info()["pinned_bytes"] == base + h.nbytes
        h[:] = rng.standard_normal(h.shape)
        d = gm.to_device(h)
        out = gm.pinned_like(h)
        out[:] = np.nan
        assert d.get(out=out) is out and np.array_equal(out, h)
        del h, out
        gc.collect()
        assert gm.memory_info()["pinned_bytes"] == base
    big = gm.pinned_empty(5 * 2**20, np.uint8)     # pinned and large: one cudaMemcpy
    big[:] = rng.integers(0, 256, big.size, dtype=np.uint8)
    assert np.array_equal(gm.to_device(big).get(), big)
    assert gm.pinned_empty(0).shape == (0,) and gm.pinned_empty(()).shape == ()
    like = gm.pinned_like(gm.empty((3, 4), np.int16))
    assert like.shape == (3, 4) and like.dtype == np.int16


@gpu
@pytest.mark.parametrize("out, exc, msg", [
    (np.empty(5, np.float32), ValueError, r"get: out has shape \(5,\); the DeviceArray has shape \(4,\)"),
    (np.empty(4, np.float64), TypeError, r"get: out has dtype dtype\('float64'\)"),
    (np.empty(8, np.float32)[::2], ValueError, "C-contiguous and writeable"),
    ([0.0] * 4, TypeError, "get: out must be a numpy.ndarray"),
])
def test_get_out_is_checked(out, exc, msg, no_leak):
    d = gm.to_device(np.arange(4, dtype=np.float32))
    with pytest.raises(exc, match=msg):
        d.get(out=out)
    ro = np.empty(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        d.get(out=ro)
    assert np.array_equal(d.get(), np.arange(4, dtype=np.float32))  # the next call works


@gpu
def test_numpy_cannot_read_a_device_array_implicitly():
    d = gm.to_device(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"call .*\.get\(\)|\.get\(\)"):
        np.asarray(d)
    with pytest.raises(TypeError, match=r"\.get\(\)"):
        np.array(d)


@gpu
def test_nothing_kept_over_ten_thousand_calls(rng):
    small = f32(rng, 1000)
    big = f32(rng, 3 * 2**18 + 7)
    gm.to_device(big).get()            # the staging buffers exist from here on
    gc.collect()
    held, pinned = gm._core.bytes_held(), gm.memory_info()["pinned_bytes"]
    for _ in range(10_000):
        assert gm.to_device(small).get()[999] == small[999]
    out = np.empty_like(big)
    for _ in range(100):
        gm.to_device(big).get(out=out)
    for _ in range(1000):
        h = gm.pinned_empty(257, np.float32)
        d = gm.to_device(h)
        cap = d.__dlpack__(max_version=(1, 0))
        del h, d, cap
    gc.collect()
    assert np.array_equal(out, big)
    assert gm._core.bytes_held() == held
    assert gm.memory_info()["pinned_bytes"] == pinned


@gpu
def test_staging_buffers_are_counted_and_released():
    gm.to_device(np.ones(STAGE_MIN, np.uint8)).get()
    before = gm.memory_info()["pinned_bytes"]
    info = gm._core._stage_info()
    freed = gm._core._stage_release()
    assert freed == info["workers"] * 2 * info["chunk"]
    assert gm.memory_info()["pinned_bytes"] == before - freed
    a = np.arange(STAGE_MIN, dtype=np.uint8)
    assert np.array_equal(gm.to_device(a).get(), a)       # set up again on demand
    assert gm.memory_info()["pinned_bytes"] == before


# ---- the kernels -----------------------------------------------------------------------------
@gpu
@pytest.mark.parametrize("n", [0, 1, 3, 31, 1000, 4099, 2**20 + 5])
def test_read_sum_against_numpy(rng, no_leak, n):
    x = f32(rng, n)
    ref = read_sum_reference(x)
    for block in (32, 96, 1024):
        got = gm.read_sum(x, block=block)
        assert got.shape == (1,) and got.dtype == np.float64
        assert abs(got[0] - ref[0]) <= 1e-5 * max(np.abs(x).sum(), 1.0), (block, got, ref)
    d = gm.read_sum(gm.to_device(x.reshape(-1, 1) if n else x))
    assert isinstance(d, gm.DeviceArray) and abs(d.get()[0] - ref[0]) <= 1e-5 * max(
        np.abs(x).sum(), 1.0)


@gpu
def test_read_sum_unaligned_through_dlpack(rng, no_leak):
    cupy = pytest.importorskip("cupy")
    x = f32(rng, 4099)
    c = cupy.asarray(x)[1:]                  # 4 bytes past a 16-byte boundary
    got = gm.read_sum(gm.from_dlpack(c))
    assert abs(got.get()[0] - x[1:].astype(np.float64).sum()) <= 1e-5 * np.abs(x).sum()


@gpu
@pytest.mark.parametrize("n, work", [(1, 0), (1001, 1), (4099, 37), (70001, 5)])
def test_scale_against_numpy(rng, no_leak, n, work):
    x = f32(rng, n)
    out = gm.scale(x, work=work, block=128)
    ref = scale_reference(x, work)
    assert out.dtype == np.float32 and out.shape == x.shape and not np.isnan(out).any()
    np.testing.assert_allclose(out, ref, rtol=1e-6 * (work + 1), atol=1e-6 * (work + 1))
    dev = gm.scale(gm.to_device(x.reshape(1, n)), work=work)
    np.testing.assert_array_equal(dev.get().reshape(n), out)


# ---- DLPack and the CUDA array interface -------------------------------------------------------
def _capsule_name(cap):
    f = ctypes.pythonapi.PyCapsule_GetName
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return f(cap).decode()


class Producer:
    """Another library's array, as gpumem sees it: only __dlpack__ and __dlpack_device__."""

    def __init__(self, inner, legacy=False):
        self.inner, self.legacy, self.asked = inner, legacy, []

    def __dlpack__(self, **kw):
        self.asked.append(kw)
        if self.legacy and "max_version" in kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return self.inner.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


@gpu
def test_dlpack_export_and_import(rng, no_leak):
    a = f32(rng, 37, 41)
    d = gm.to_device(a)
    assert d.__dlpack_device__() == (2, d.device) and d.device == gm.device().index
    assert _capsule_name(d.__dlpack__()) == "dltensor"
    assert _capsule_name(d.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert _capsule_name(d.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert gm.from_dlpack(d) is d
    for legacy in (False, True):
        p = Producer(d, legacy)
        e = gm.from_dlpack(p)
        assert e.ptr == d.ptr and e.shape == d.shape and e.dtype == d.dtype     # shared
        assert p.asked[0] == {"stream": 1, "max_version": (1, 0)}
        assert np.array_equal(e.get(), a)
        refs = sys.getrefcount(d)
        del e
        gc.collect()
        assert sys.getrefcount(d) == refs - 1          # the exported tensor was deleted
    # the import keeps the memory alive after its first owner is gone
    e = gm.from_dlpack(Producer(d))
    del d
    gc.collect()
    assert np.array_equal(e.get(), a)
    # and a kernel takes it like any other DeviceArray
    assert np.array_equal(gm.transpose(e, variant="padded").get(), a.T)


@gpu
def test_dlpack_options(rng, no_leak):
    d = gm.to_device(np.arange(6, dtype=np.int32))
    c = gm.from_dlpack(Producer(gm.from_dlpack(Producer(d))))
    assert c.ptr == d.ptr
    with pytest.raises(BufferError, match=r"dl_device=\(1, 0\)"):
        d.__dlpack__(dl_device=(1, 0))
    with pytest.raises(TypeError, match="max_version must be"):
        d.__dlpack__(max_version="1.0")
    with pytest.raises(TypeError, match="stream must be None or an int"):
        d.__dlpack__(stream="default")
    copied = gm.from_dlpack(Producer(_Copying(d)))
    assert copied.ptr != d.ptr and np.array_equal(copied.get(), np.arange(6, dtype=np.int32))


class _Copying:
    def __init__(self, d):
        self.d = d

    def __dlpack__(self, **kw):
        return self.d.__dlpack__(copy=True, **kw)

    def __dlpack_device__(self):
        return self.d.__dlpack_device__()


@gpu
def test_to_device_takes_host_dlpack_arrays(rng, no_leak):
    a = f32(rng, 5, 3)
    d = gm.to_device(Producer(a))       # a host producer (kDLCPU): copied through NumPy
    assert np.array_equal(d.get(), a)
    with pytest.raises(ValueError, match="from_dlpack: x is in host memory"):
        gm.from_dlpack(Producer(a))


@gpu
def test_cupy_both_ways(rng, no_leak):
    cupy = pytest.importorskip("cupy")
    a = f32(rng, 300, 257)
    d = gm.to_device(a)
    c = cupy.from_dlpack(d)                                  # gpumem -> CuPy, shared
    assert c.data.ptr == d.ptr and np.array_equal(cupy.asnumpy(c), a)
    x = cupy.asarray(a) * 2
    e = gm.from_dlpack(x)                                    # CuPy -> gpumem, shared
    assert e.ptr == x.data.ptr
    x[0, 0] = 123.0
    assert e.get()[0, 0] == 123.0
    t = gm.to_device(x)                                      # to_device shares it too
    assert t.ptr == x.data.ptr
    np.testing.assert_array_equal(gm.transpose(e).get(), cupy.asnumpy(x).T)

    class CAIOnly:                                           # Numba-style producer
        def __init__(self, arr):
            self.arr = arr
            self.__cuda_array_interface__ = arr.__cuda_array_interface__

    f = gm.from_dlpack(CAIOnly(x))
    assert f.ptr == x.data.ptr and np.array_equal(f.get(), cupy.asnumpy(x))
    with pytest.raises(ValueError, match="not C-contiguous"):
        gm.from_dlpack(x[:, ::2])
    with pytest.raises(ValueError, match="not C-contiguous"):
        gm.from_dlpack(CAIOnly(x.T))


@gpu
def test_torch_both_ways(rng, no_leak):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    a = f32(rng, 64, 33)
    d = gm.to_device(a)
    t = torch.from_dlpack(d)
    assert t.data_ptr() == d.ptr and np.array_equal(t.cpu().numpy(), a)
    u = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4) + 1
    e = gm.from_dlpack(u)
    assert e.ptr == u.data_ptr() and np.array_equal(e.get(), u.cpu().numpy())
    assert np.array_equal(gm.read_sum(e).get(), [78.0])
    with pytest.raises(ValueError, match="not C-contiguous"):
        gm.from_dlpack(u.t())


# ---- the experiments ------------------------------------------------------------------------------
@gpu
def test_transfer_sweep_table(no_leak):
    t = experiments.transfer_sweep([4096, 3 << 20], repeat=3, progress=False)
    keys = [(r["kind"], r["direction"], r["bytes"]) for r in t]
    assert len(keys) == 2 * 9 and ("fresh", "h2d", 4096) not in keys
    assert ("fresh", "d2h", 3 << 20) in keys and ("staged", "h2d", 3 << 20) in keys
    for r in t:
        assert r["ms"] > 0 and r["GB/s"] == pytest.approx(r["bytes"] / r["ms"] / 1e6)
        assert r["us"] == pytest.approx(r["ms"] * 1e3) and r["x pinned"] > 0
    assert max(r["x pinned"] for r in t if r["kind"] == "pinned") == pytest.approx(1.0)


@gpu
def test_zero_copy_and_managed_tables(no_leak):
    z = experiments.zero_copy_compare([4096, 1 << 20], reads=(1, 3), repeat=2, progress=False)
    assert [(r["bytes"], r["reads"]) for r in z] == [(4096, 1), (4096, 3), (1 << 20, 1),
                                                       (1 << 20, 3)]
    assert all(r["mapped ms"] > 0 and r["copy ms"] > 0 and r["device ms"] > 0 for r in z)
    assert all(r["winner"] in ("mapped", "copy") for r in z)
    m = experiments.managed_compare([4096, 1 << 20], repeat=1, progress=False)
    assert [r["how"] for r in m][:5] == ["fault", "prefetch", "kernel after prefetch",
                                         "prefetch + kernel", "resident"]
    assert all(r["ms"] > 0 for r in m)


@gpu
def test_overlap_timeline(no_leak):
    t = experiments.overlap_timeline(1 << 20, chunks=4, work=20)
    serial = [r for r in t if r["mode"] == "serial"]
    over = [r for r in t if r["mode"] == "overlapped"]
    assert [r["op"] for r in serial] == ["h2d", "kernel", "d2h"]
    assert len(over) == 12 and {r["stream"] for r in over} == {0, 1}
    for rows in (serial, over):
        for r in rows:
            assert 0 <= r["start_ms"] <= r["end_ms"]
        for c in {r["chunk"] for r in rows}:       # in order within a chunk
            ops = [r for r in rows if r["chunk"] == c]
            assert ops[0]["end_ms"] <= ops[1]["start_ms"] + 1e-3
            assert ops[1]["end_ms"] <= ops[2]["start_ms"] + 1e-3
    assert t.work == 20 and set(t.totals) == {"serial", "overlapped"}
    # the output: x[i] = (i % 1000) * 0.001 pushed through 20 FMAs
    d = gm._core._transfer_overlap(4 * 1001, 3, 20)
    assert d["equal"]
    got = np.frombuffer(d["output"], np.float32)
    x = (np.arange(64) % 1000).astype(np.float32) * np.float32(0.001)
    np.testing.assert_allclose(got, scale_reference(x, 20), rtol=1e-5, atol=1e-6)
    import matplotlib
    matplotlib.use("Agg")
    ax = transfer.plot_timeline(t)
    assert len(ax.get_yticks()) == 3


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline (not modelled: the link decides), on the fake GPU (the
# stand-ins transfer declares); the memory card's host link
def test_report_headline_is_not_modelled():
    rows = transfer.LESSON.headline(False, False)
    assert rows and all(r["model_text"].startswith("not modelled") and not r["model"]
                        for r in rows)


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    xfer = first_with(transfer.LESSON.headline(True, True), "pinned_GB/s")["measured"]
    assert xfer["pinned_GB/s"] == pytest.approx(50.0) and \
        xfer["pageable_GB/s"] == pytest.approx(10.0)


def test_card_rows_without_a_gpu_are_the_published_link():
    by = {r["level"]: r for r in transfer.LESSON.card(False, True)}
    assert list(by) == ["host -> device", "device -> host"]
    assert by["host -> device"]["size_text"] == "PCIe 5.0 x16"
    assert by["host -> device"]["published_GB/s"] == 64.0
    # the published link's ceiling: 128b/130b, and per 256 bytes of payload a TLP's 8 bytes
    # of framing and its header: 12 bytes for the completions that bring host memory's data
    # to the GPU, 16 for the writes it sends to host memory
    assert by["host -> device"]["ceiling_GB/s"] == pytest.approx(64 * 128 / 130 * 256 / 276)
    assert by["device -> host"]["ceiling_GB/s"] == pytest.approx(64 * 128 / 130 * 256 / 280)
    assert by["device -> host"]["ceiling"]["start"] == "PCIe 5.0 x16 line rate"


def test_card_rows_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    by = {r["level"]: r for r in transfer.LESSON.card(True, True)}
    assert by["host -> device"]["GB/s"] == pytest.approx(50.0)
    assert by["host -> device"]["GB/s_ratio"] is None          # no published figure: Fake GPU


def test_card_rows_on_an_h100_set_ratios(monkeypatch):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    by = {r["level"]: r for r in transfer.LESSON.card(True, False)}
    assert by["host -> device"]["GB/s_ratio"] == pytest.approx(50.0 / 64.0)
    assert by["host -> device"]["ceiling_ratio"] == pytest.approx(50.0 / (64 * 128 / 130 * 256
                                                                        / 276))
    assert by["host -> device"]["runs"] == CARD_RUNS
    # no NVML here: the link as published, the payload assumed
    assert by["device -> host"]["why"] == ("PCIe 5.0 x16 (published); max payload unread, "
                                           "256 B assumed")


@pytest.mark.gpu
def test_card_rows_on_a_gpu():
    for r in transfer.LESSON.card(True, True):
        assert 1 < r["GB/s"] < 1000 and r["ns"] > 0, r["level"]
