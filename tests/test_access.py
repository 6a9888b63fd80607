"""Access kernels (gpumem.access: vec_add, read_offset, write_offset, copy) and
their sweeps: validation without a GPU, the sweeps in model mode and their
measured mode's plumbing with stand-ins; on a GPU element-wise comparison with
NumPy on fresh random data of awkward sizes, outputs poisoned with NaN first so
an unwritten element fails and an element that must stay unwritten is checked to
stay NaN."""
import contextlib
import math
import types

import numpy as np
import pytest

import gpumem as gm
from gpumem import _core
from gpumem.tools import sweep as _sweep
from gpumem.lessons import access
from gpumem import experiments as ex
from _helpers import awkward_n, f32, huge, m, poisoned
from gpumem import model, report
from gpumem.__main__ import main
from _fake_gpu import FakeGPU

OFFSETS = [0, 1, 11, 31, 32, 33, 127, 128]
BLOCKS = [1, 33, 100, 512, 1024]
CACHES = ["default", "ca", "cg", "ldg", "cs"]


# ---- CPU references ----------------------------------------------------------------
def ref_read_offset(a, b, offset):
    return a[offset:] + b[offset:]           # C[i] for i < n - offset


def ref_write_offset(a, b, offset):
    return a[:len(a) - offset] + b[:len(b) - offset]   # C[offset + i]


# ---- the variant table and the load paths (no GPU) -----------------------------------
def test_variants_listed_with_bytes():
    got = {(v.family, v.name): v.bytes for v in gm.variants()}
    assert got[("read_offset", "unroll1")] == "12*(n - offset)"
    assert got[("read_offset", "unroll4")] == "12*(n - offset)"
    assert got[("write_offset", "unroll1")] == "12*(n - offset)"
    assert got[("write_offset", "unroll4")] == "12*(n - offset)"
    assert got[("strided_read", "default")] == "8*ceil(n/stride)"
    assert got[("struct_update", "aos")] == got[("struct_update", "soa")] == "16*n"
    assert got[("distance", "aos")] == got[("distance", "soa")] == "16*n"
    assert got[("copy", "float")] == got[("copy", "float4")] == "8*n"
    assert [v.name for v in gm.variants("copy")] == ["float", "float4"]


def test_cache_paths_are_the_cores_in_order():
    assert tuple(access.CACHE_PATHS) == _core.CACHE_PATHS == tuple(CACHES)
    assert all(text.startswith("ld.global") for text in access.CACHE_PATHS.values())


# ---- validation (no GPU: every check comes before any device call) -----------------------
@pytest.mark.parametrize("args,kw,exc,msg", [
    ((m(3), [1, 2, 3]), {}, TypeError, "vec_add: b must be a numpy.ndarray or gpumem.DeviceArray, not list"),
    ((m(3, dtype=np.float64), m(3)), {}, TypeError, r"vec_add: a has dtype dtype\('float64'\)"),
    ((m(3), m(4)), {}, ValueError, r"a and b must have the same shape, not \(3,\) and \(4,\)"),
    ((m(2, 3), m(3, 2)), {}, ValueError, r"not \(2, 3\) and \(3, 2\)"),
    ((m(3), m(3)), {"block": 0}, ValueError, "block=0 is not allowed; block must be 1..1024 threads"),
    ((m(3), m(3)), {"block": 1025}, ValueError, "block=1025 is not allowed"),
    ((m(3), m(3)), {"block": -1}, ValueError, "block=-1 is not allowed"),
    ((m(3), m(3)), {"block": "256"}, TypeError, "block must be an int, not str"),
    ((m(3), m(3)), {"out": 5}, TypeError, "out must be a gpumem.DeviceArray, not int"),
])
def test_vec_add_rejects_bad_arguments(args, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.vec_add(*args, **kw)


A = np.zeros(100, np.float32)


B = np.zeros(100, np.float32)


@pytest.mark.parametrize("fn", [gm.read_offset, gm.write_offset])
class TestOffsetValidation:
    def test_dtype(self, fn):
        with pytest.raises(TypeError, match=r"a has dtype.*float64"):
            fn(A.astype(np.float64), B)
        with pytest.raises(TypeError, match=r"\bb has dtype.*int32"):
            fn(A, B.astype(np.int32))

    def test_type(self, fn):
        with pytest.raises(TypeError, match=r"a must be a numpy.ndarray or gpumem.DeviceArray"):
            fn([0.0] * 100, B)

    def test_shapes(self, fn):
        with pytest.raises(ValueError, match=r"a must be 1-D, not 2-D with shape \(10, 10\)"):
            fn(A.reshape(10, 10), A.reshape(10, 10))
        with pytest.raises(ValueError, match=r"a and b must have the same shape, not \(100,\) and \(99,\)"):
            fn(A, B[:99])

    @pytest.mark.parametrize("offset", [-1, 101, 10**6])
    def test_offset_range(self, fn, offset):
        with pytest.raises(ValueError, match=rf"offset={offset} is not allowed; offset must be 0..n \(n=100"):
            fn(A, B, offset=offset)

    @pytest.mark.parametrize("offset", [1.0, "1", True])
    def test_offset_type(self, fn, offset):
        with pytest.raises(TypeError, match="offset must be an int"):
            fn(A, B, offset=offset)

    @pytest.mark.parametrize("unroll", [0, 2, 3, 8, -4])
    def test_unroll(self, fn, unroll):
        with pytest.raises(ValueError, match=rf"unroll={unroll} is not allowed; unroll must be 1 or 4"):
            fn(A, B, unroll=unroll)
        with pytest.raises(TypeError, match="unroll must be an int"):
            fn(A, B, unroll=4.0)

    @pytest.mark.parametrize("block", [0, -1, 1025, 2048])
    def test_block(self, fn, block):
        with pytest.raises(ValueError, match=rf"block={block} is not allowed; block must be 1..1024"):
            fn(A, B, block=block)
        with pytest.raises(TypeError, match="block must be an int"):
            fn(A, B, block="512")

    def test_out_must_be_device_array(self, fn):
        with pytest.raises(TypeError, match="out must be a gpumem.DeviceArray, not numpy.ndarray"):
            fn(A, B, out=np.empty(100, np.float32))

    def test_grid_too_large(self, fn):
        n = 2**31 + 5
        with pytest.raises(ValueError, match=r"more than 2\^31 - 1 blocks with block=1"):
            fn(huge(n), huge(n), block=1)

    def test_no_positional_options(self, fn):
        with pytest.raises(TypeError):
            fn(A, B, 11)


@pytest.mark.parametrize("cache", ["l1", "DEFAULT", "", "nc"])
def test_read_offset_cache_name(cache):
    with pytest.raises(ValueError, match=rf"cache='{cache}' is unknown; allowed: 'default', 'ca'"):
        gm.read_offset(A, B, cache=cache)


def test_read_offset_cache_type():
    with pytest.raises(TypeError, match="cache must be a str"):
        gm.read_offset(A, B, cache=1)


def test_write_offset_has_no_cache():
    with pytest.raises(TypeError, match="cache"):
        gm.write_offset(A, B, cache="cg")


def test_copy_validation():
    with pytest.raises(ValueError, match=r"variant='double' is unknown; allowed: 'float', 'float4'"):
        gm.copy(A, variant="double")
    with pytest.raises(TypeError, match="variant must be a str"):
        gm.copy(A, variant=4)
    with pytest.raises(ValueError, match="block=-5 is not allowed"):
        gm.copy(A, block=-5)
    with pytest.raises(TypeError, match="a has dtype"):
        gm.copy(A.astype(np.int64))
    with pytest.raises(ValueError, match=r"more than 2\^31 - 1 blocks with block=1"):
        gm.copy(huge(2**31 + 1), variant="float", block=1)
    # float4 needs a quarter of the threads: the same size fits
    n = 2**31 + 1
    with pytest.raises(ValueError, match=r"more than 2\^31 - 1 blocks"):
        gm.copy(huge(4 * n), variant="float4", block=1)


def test_valid_call_without_gpu_says_so():
    """A valid call reaches the device: without one it is CudaUnavailableError."""
    if gm.is_available():
        got = gm.read_offset(A + 1, B + 2, offset=3)
        np.testing.assert_array_equal(got, np.full(97, 3, np.float32))
    else:
        with pytest.raises(gm.CudaUnavailableError, match="no usable CUDA GPU"):
            gm.read_offset(A, B, offset=3)


# ---- the sweeps: argument checks --------------------------------------------------------
@pytest.mark.parametrize("call,exc,msg", [
    (lambda: access.offset_sweep(kind="load"), ValueError, r"kind='load' is unknown; allowed: 'read', 'write'"),
    (lambda: access.offset_sweep(cache="l1"), ValueError, r"cache='l1' is unknown"),
    (lambda: access.offset_sweep(kind="write", cache="cg"), ValueError, r"applies to kind='read' only"),
    (lambda: access.offset_sweep(unroll=2), ValueError, r"unroll=2 is not allowed; unroll must be 1 or 4"),
    (lambda: access.offset_sweep([0, 200], n=100), ValueError, r"offsets=200 is not allowed; offsets must be 0..100"),
    (lambda: access.offset_sweep([-1]), ValueError, r"offsets=-1 is not allowed"),
    (lambda: access.offset_sweep([]), ValueError, r"offsets is empty"),
    (lambda: access.offset_sweep([1.5]), TypeError, r"offsets must be an int"),
    (lambda: access.offset_sweep(block=0), ValueError, r"block=0 is not allowed; block must be 1..1024"),
    (lambda: access.offset_sweep(n=0), ValueError, r"n=0 is not allowed; n must be >= 1"),
    (lambda: access.offset_sweep(repeat=0), ValueError, r"repeat=0 is not allowed"),
    (lambda: access.offset_sweep(progress="yes"), TypeError, r"progress must be a bool"),
    (lambda: access.offset_sweep(metrics="gld_efficiency"), TypeError, r"metrics must be a sequence"),
    (lambda: access.idle_lanes_sweep(blocks=[32, 2048]), ValueError, r"blocks=2048 is not allowed"),
    (lambda: access.idle_lanes_sweep(kind="write", cache="cs"), ValueError, r"applies to kind='read' only"),
    (lambda: access.idle_lanes_sweep(offset=10, n=5), ValueError, r"offset=10 is not allowed"),
    (lambda: access.cache_path_compare(caches=["texture"]), ValueError, r"cache='texture' is unknown"),
])
def test_sweep_arguments(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# ---- the sweeps in model mode (no GPU) -----------------------------------------------------
def test_offset_sweep_model_mode(fake_model, no_gpu):
    t = access.offset_sweep([0, 11, 128], kind=["read", "write"], cache=["default", "cg"],
                            unroll=[1, 4], n=1000, block=100, progress=False)
    # reads: 2 unrolls x 2 caches x 3 offsets; writes: 2 unrolls x 3 offsets (no cache)
    assert len(t) == 12 + 6
    assert t.columns[:6] == ["kernel", "unroll", "cache", "offset", "ms", "GB/s"]
    assert t["ms"] == [None] * 18 and t["GB/s"] == [None] * 18
    assert t.sources == {m: "model" for m in ex.METRICS}
    assert "no GPU" in t.title
    calls = fake_model.calls
    assert calls[0] == ("read_offset", "unroll1", {"n": 1000, "offset": 0, "block": 100, "cache": "default"})
    assert ("read_offset", "unroll4", {"n": 1000, "offset": 128, "block": 100, "cache": "cg"}) in calls
    assert ("write_offset", "unroll4", {"n": 1000, "offset": 11, "block": 100}) in calls
    assert len(calls) == 18
    r = t.rows[2]
    assert (r["kernel"], r["unroll"], r["cache"], r["offset"]) == ("read_offset", 1, "default", 128)
    assert r["gld_efficiency"] == 100.0 - 128 and r["gst_transactions"] == 2000 + 128
    w = [r for r in t.rows if r["kernel"] == "write_offset"]
    assert {r["cache"] for r in w} == {None}


def test_idle_lanes_and_cache_path_sweeps_model_mode(fake_model, no_gpu):
    t = access.idle_lanes_sweep([32, 33, 100], offset=3, n=1000, progress=False)
    assert t["warps_per_block"] == [1, 2, 4] and t["idle_lanes"] == [0, 31, 28]
    assert t["grid"] == [32, 31, 10]
    assert fake_model.calls[-1] == ("read_offset", "unroll1",
                                    {"n": 1000, "offset": 3, "block": 100, "cache": "default"})

    t = access.cache_path_compare(offsets=[0, 11], n=500, progress=False)
    assert [(r["cache"], r["offset"]) for r in t.rows] == [(c, o) for c in _core.CACHE_PATHS for o in (0, 11)]


def test_without_model_columns_are_empty(monkeypatch, no_gpu):
    monkeypatch.setattr(_sweep, "_model_predict", lambda: None)
    t = access.offset_sweep([0, 1], n=100, progress=False)
    assert t["gld_efficiency"] == [None, None] and t.sources == {}


# ---- the measured mode, with stand-ins for the GPU ---------------------------------------
class FakeProfile:
    active = None

    def __init__(self, metrics):
        self.metrics = metrics
        self.records = []


def test_measured_mode_plumbing(monkeypatch, fake_model):
    launches, profiled = [], []
    monkeypatch.setattr(gm.runtime, "is_available", lambda: True)
    monkeypatch.setattr(gm.runtime, "profiler_available", lambda: True, raising=False)
    monkeypatch.setattr(gm.runtime, "to_device", lambda a: ("dev", a.shape))
    monkeypatch.setattr(gm.runtime, "empty", lambda shape: ("out", shape))

    @contextlib.contextmanager
    def profile(metrics):
        p = FakeProfile(metrics)
        FakeProfile.active = p
        yield p
        FakeProfile.active = None

    def read_offset(a, b, **kw):
        launches.append(kw)
        if FakeProfile.active is not None:
            profiled.append(kw)
            m = {name: 42.0 + kw["offset"] for name in FakeProfile.active.metrics}
            FakeProfile.active.records.append(types.SimpleNamespace(metrics=m))

    def bench(fn, *args, repeat, warmup, **kw):
        assert fn is read_offset and args == (("dev", (64,)), ("dev", (64,)))
        assert kw["out"] == ("out", (64,)) and repeat == 5
        for _ in range(repeat):
            fn(*args, **kw)
        return types.SimpleNamespace(median_ms=0.5 + kw["offset"], gbps=1000.0 - kw["offset"])

    monkeypatch.setattr(gm.runtime, "profile", profile, raising=False)
    monkeypatch.setattr(gm.runtime, "bench", bench)
    monkeypatch.setattr(access, "read_offset", read_offset)
    t = access.offset_sweep([0, 11], n=64, block=32, cache="cs", repeat=5, progress=False)
    assert t["ms"] == [0.5, 11.5] and t["GB/s"] == [1000.0, 989.0]
    assert t["gld_efficiency"] == [42.0, 53.0] and t["gst_requests"] == [42.0, 53.0]
    assert t["gld_efficiency_model"] == [100.0, 89.0]
    assert t["gst_efficiency_model"] == [50.0, 61.0]
    assert t.sources["ms"] == t.sources["GB/s"] == "measured"
    assert all(t.sources[m] == "measured" for m in ex.METRICS)
    assert t.sources["gld_efficiency_model"] == "model"
    assert t.columns[-2:] == ["gld_efficiency_model", "gst_efficiency_model"]
    # one profiled launch per row, outside the timed ones
    assert profiled == [{"offset": 0, "unroll": 1, "block": 32, "cache": "cs", "out": ("out", (64,))},
                        {"offset": 11, "unroll": 1, "block": 32, "cache": "cs", "out": ("out", (64,))}]
    assert len(launches) == 2 * 5 + 2


def test_real_model_offset_figures(no_gpu):
    pytest.importorskip("gpumem.model")
    t = access.offset_sweep([0, 11, 128], kind=["read", "write"], n=2**16, progress=False)
    assert t.sources["gld_efficiency"] == "model"
    reads = [r for r in t.rows if r["kernel"] == "read_offset"]
    writes = [r for r in t.rows if r["kernel"] == "write_offset"]
    assert [round(r["gld_efficiency"]) for r in reads] == [100, 80, 100]
    assert [round(r["gst_efficiency"]) for r in writes] == [100, 80, 100]
    assert [round(r["gst_efficiency"]) for r in reads] == [100, 100, 100]


# ---- GPU: vec_add -------------------------------------------------------------------------
@pytest.mark.gpu
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


@pytest.mark.gpu
def test_vec_add_any_shape_and_views(rng):
    a = rng.standard_normal((7, 11, 3)).astype(np.float32)
    b = rng.standard_normal((3, 11, 7)).astype(np.float32).T
    np.testing.assert_array_equal(gm.vec_add(a, b), a + b)
    z = np.zeros((0, 3), np.float32)
    assert gm.vec_add(z, z).shape == (0, 3)


@pytest.mark.gpu
def test_vec_add_in_place_through_out(rng):
    a = rng.standard_normal(999).astype(np.float32)
    d = gm.to_device(a)
    gm.vec_add(d, d, out=d)  # elementwise: aliasing is allowed
    np.testing.assert_array_equal(d.get(), a + a)


# ---- GPU: read_offset, write_offset --------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("unroll", [1, 4])
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_read_offset(rng, no_leak, offset, block, unroll):
    n = awkward_n(rng, block, unroll)
    a, b = f32(rng, n), f32(rng, n)
    da, db = gm.to_device(a), gm.to_device(b)
    want = ref_read_offset(a, b, offset)
    for cache in CACHES:
        out = poisoned(n)
        res = gm.read_offset(da, db, offset=offset, unroll=unroll, block=block, cache=cache, out=out)
        assert res is out
        got = out.get()
        np.testing.assert_array_equal(got[:n - offset], want, err_msg=f"cache={cache}")
        assert np.isnan(got[n - offset:]).all(), f"cache={cache}: unreachable tail was written"
    # ndarray in: only the written part comes back
    host = gm.read_offset(a, b, offset=offset, unroll=unroll, block=block)
    assert isinstance(host, np.ndarray) and host.shape == (n - offset,)
    np.testing.assert_array_equal(host, want)
    # DeviceArray in, no out: length n, the unwritten tail NaN
    dev = gm.read_offset(da, db, offset=offset, unroll=unroll, block=block)
    assert isinstance(dev, gm.DeviceArray) and dev.shape == (n,)
    got = dev.get()
    np.testing.assert_array_equal(got[:n - offset], want)
    assert np.isnan(got[n - offset:]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("unroll", [1, 4])
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_write_offset(rng, no_leak, offset, block, unroll):
    n = awkward_n(rng, block, unroll)
    a, b = f32(rng, n), f32(rng, n)
    want = ref_write_offset(a, b, offset)
    out = poisoned(n)
    res = gm.write_offset(gm.to_device(a), gm.to_device(b), offset=offset, unroll=unroll,
                          block=block, out=out)
    assert res is out
    got = out.get()
    np.testing.assert_array_equal(got[offset:], want)
    assert np.isnan(got[:offset]).all(), "C[:offset] was written"
    host = gm.write_offset(a, b, offset=offset, unroll=unroll, block=block)
    assert isinstance(host, np.ndarray) and host.shape == (n - offset,)
    np.testing.assert_array_equal(host, want)
    dev = gm.write_offset(gm.to_device(a), gm.to_device(b), offset=offset, unroll=unroll,
                          block=block).get()
    np.testing.assert_array_equal(dev[offset:], want)
    assert np.isnan(dev[:offset]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("fn", [gm.read_offset, gm.write_offset])
@pytest.mark.parametrize("unroll", [1, 4])
def test_offset_edges(rng, no_leak, fn, unroll):
    """offset == n writes nothing; n == 0 launches nothing; tiny n below one warp."""
    a, b = f32(rng, 5), f32(rng, 5)
    out = poisoned(5)
    fn(gm.to_device(a), gm.to_device(b), offset=5, unroll=unroll, out=out)
    assert np.isnan(out.get()).all()
    assert fn(a, b, offset=5, unroll=unroll).shape == (0,)
    empty = np.zeros(0, np.float32)
    assert fn(empty, empty, unroll=unroll).shape == (0,)
    for off in range(6):
        got = fn(a, b, offset=off, unroll=unroll, block=3)
        want = ref_read_offset(a, b, off) if fn is gm.read_offset else ref_write_offset(a, b, off)
        np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
def test_offset_noncontiguous_input(rng, no_leak):
    a, b = f32(rng, 2002), f32(rng, 2002)
    got = gm.read_offset(a[::2], b[::2], offset=7, unroll=4, block=96)
    np.testing.assert_array_equal(got, ref_read_offset(a[::2], b[::2], 7))


@pytest.mark.gpu
@pytest.mark.parametrize("kernel,unroll", [("read_offset", 1), ("read_offset", 4),
                                           ("write_offset", 1), ("write_offset", 4)])
def test_offset_launch_record(rng, no_leak, kernel, unroll):
    n, block, offset = 10_007, 100, 11
    fn = getattr(gm, kernel)
    kw = {"cache": "cg"} if kernel == "read_offset" else {}
    with gm.record() as launches:
        fn(f32(rng, n), f32(rng, n), offset=offset, unroll=unroll, block=block, **kw)
    (r,) = launches
    assert (r.kernel, r.variant) == (kernel, f"unroll{unroll}")
    want = {"n": n, "offset": offset, "block": block, **kw}
    assert r.params == want
    assert r.grid == (math.ceil(n / (unroll * block)), 1, 1)
    assert r.block == (block, 1, 1)
    assert r.bytes == 12 * (n - offset)
    assert r.ms > 0


@pytest.mark.gpu
def test_out_validation_on_device(rng, no_leak):
    a = gm.to_device(f32(rng, 300))
    b = gm.to_device(f32(rng, 300))
    with pytest.raises(ValueError, match=r"out has shape \(299,\); the result has shape \(300,\)"):
        gm.read_offset(a, b, out=gm.empty((299,)))
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.read_offset(a, b, offset=1, out=a)
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.write_offset(a, b, offset=1, out=b)
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.copy(a, out=a)
    with pytest.raises(TypeError, match="out has dtype"):
        gm.strided_read(a, stride=3, out=gm.empty((100,), np.float64))


# ---- GPU: copy ------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("block", BLOCKS + [256])
@pytest.mark.parametrize("variant", ["float", "float4"])
@pytest.mark.parametrize("tail", [0, 1, 2, 3])
def test_copy(rng, no_leak, variant, block, tail):
    n = 4 * awkward_n(rng, block) + tail
    a = f32(rng, n)
    out = poisoned(n)
    assert gm.copy(gm.to_device(a), variant=variant, block=block, out=out) is out
    np.testing.assert_array_equal(out.get(), a)
    r = gm.last_record()
    threads = n // 4 + n % 4 if variant == "float4" else n
    assert r.grid == (-(-threads // block), 1, 1) and r.bytes == 8 * n
    assert (r.kernel, r.variant, r.params) == ("copy", variant, {"n": n, "block": block})


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["float", "float4"])
def test_copy_shapes(rng, no_leak, variant):
    for shape in [(0,), (1,), (3,), (5,), (7, 3), (2, 3, 5), (4, 4)]:
        a = f32(rng, *shape)
        got = gm.copy(a, variant=variant, block=7)
        assert got.shape == a.shape
        np.testing.assert_array_equal(got, a)


@pytest.mark.gpu
def test_bench_counts_useful_bytes(rng, no_leak):
    n, offset = 1 << 16, 11
    res = gm.bench(gm.read_offset, f32(rng, n), f32(rng, n), offset=offset, repeat=3, warmup=1)
    assert res.gbps == pytest.approx(12 * (n - offset) / (res.median_ms * 1e-3) / 1e9)
    assert res.params["offset"] == offset


# ---- GPU: the sweeps -------------------------------------------------------------------
@pytest.mark.gpu
def test_offset_sweeps_on_gpu(no_leak):
    t = access.offset_sweep([0, 11], kind=["read", "write"], unroll=[1, 4], n=2**18, repeat=3,
                            progress=False)
    assert len(t) == 8
    assert all(v > 0 for v in t["ms"]) and all(v > 0 for v in t["GB/s"])
    assert t.sources["ms"] == "measured"
    if t.sources.get("gld_efficiency") == "measured":
        eff = {(r["kernel"], r["unroll"], r["offset"]): r for r in t.rows}
        assert eff[("read_offset", 1, 11)]["gld_efficiency"] == pytest.approx(80.0, abs=0.1)
        assert eff[("write_offset", 1, 11)]["gst_efficiency"] == pytest.approx(80.0, abs=0.1)
        assert eff[("read_offset", 4, 0)]["gld_efficiency"] == pytest.approx(100.0, abs=0.01)
    for sweep in (access.idle_lanes_sweep([33, 512], n=2**16, repeat=2, progress=False),
                  access.cache_path_compare(offsets=[11], n=2**16, repeat=2, progress=False)):
        assert all(v > 0 for v in sweep["ms"]), sweep.title


# ---- issue 11: arguments first, named by the function called --------------------------
def test_sweep_metrics_are_checked_up_front(no_gpu, fake_model):
    with pytest.raises(ValueError, match=r"offset_sweep: unknown metric 'nonsense'"):
        access.offset_sweep(metrics=["nonsense"])
    with pytest.raises(ValueError, match=r"idle_lanes_sweep: unknown metric 'gld_eficiency' "
                                         r"\(did you mean 'gld_efficiency'"):
        access.idle_lanes_sweep(metrics=["gld_eficiency"])
    with pytest.raises(ValueError, match=r"cache_path_compare: metrics is empty"):
        access.cache_path_compare(metrics=[])
    assert fake_model.calls == []


def test_cache_path_compare_errors_name_it_and_its_argument(no_gpu, fake_model):
    with pytest.raises(ValueError, match=r"^cache_path_compare: caches=\['L3'\]: cache='L3' is unknown"):
        access.cache_path_compare(caches=["L3"])
    with pytest.raises(ValueError, match=r"^cache_path_compare: caches is empty"):
        access.cache_path_compare(caches=[])
    with pytest.raises(TypeError, match=r"^cache_path_compare: progress must be a bool"):
        access.cache_path_compare(progress=1)


def test_sweeps_take_numpy_ints_and_bools(no_gpu, fake_model):
    t = access.offset_sweep(np.arange(3), n=np.int64(64), block=np.int32(32),
                            repeat=np.uint8(2), progress=np.False_)
    assert t["offset"] == [0, 1, 2] and all(type(o) is int for o in t["offset"])
    assert [c[2]["n"] for c in fake_model.calls] == [64, 64, 64]
    t = access.idle_lanes_sweep(np.int16(48), offset=np.int64(1), n=100, progress=False)
    assert t["idle_lanes"] == [16] and t["block"] == [48]
    for bad in (True, np.True_):
        with pytest.raises(TypeError, match=r"offset_sweep: offsets must be an int.*, not bool"):
            access.offset_sweep(bad, progress=False)
    with pytest.raises(ValueError, match=r"offset_sweep: n=1099511627776 is not allowed; "
                                         r"n must be <= 2147483647"):
        access.offset_sweep([0], n=2**40)
    with pytest.raises(ValueError, match=r"offset_sweep: offsets lists more than 100,000 values"):
        access.offset_sweep(range(2**40), n=2**31 - 1)
    with pytest.raises(TypeError, match=r"idle_lanes_sweep: kind must be a str, not list"):
        access.idle_lanes_sweep(kind=["read", "write"])


def test_kernels_refuse_none_arrays_and_array_ints():
    with pytest.raises(TypeError, match=r"vec_add: a must be a numpy.ndarray or gpumem.DeviceArray, not None"):
        gm.vec_add(None, None)
    with pytest.raises(TypeError, match=r"read_offset: offset must be an int, not ndarray"):
        gm.read_offset(m(8), m(8), offset=np.array([1]))
    with pytest.raises(TypeError, match=r"copy: block must be an int, not bool"):
        gm.copy(m(8), block=np.True_)


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the model, on the fake GPU (the stand-ins access declares), on a GPU
def test_report_headline_without_a_gpu_is_the_models_offset_11():
    (row,) = access.LESSON.headline(False, False)
    m = row["model"]
    assert m["offset11_gld_efficiency"] == 80.0 and m["offset0_gld_efficiency"] == 100.0
    assert m["offset11_gld_transactions_per_request"] == pytest.approx(5.0, abs=1e-3)


def test_the_report_prints_offset_11s_efficiency(no_gpu, capsys, monkeypatch):
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    monkeypatch.setenv("COLUMNS", "250")          # every cell on one line, to find it
    assert main([]) == 0
    assert "80% at offset 11" in capsys.readouterr().out


def test_report_lesson_access_prints_the_offset_sweep(no_gpu, capsys, monkeypatch):
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    monkeypatch.setenv("COLUMNS", "250")          # one line per row, to parse
    assert main(["report", "--lesson", "access", "--quick", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "offset sweep: read" in out and "gld_efficiency [model]" in out
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("read_offset")]
    assert len(lines) == 33                                         # offsets 0..32
    by_offset = {int(f[3]): float(f[4]) for f in lines}             # kernel unroll cache offset eff
    assert by_offset[0] == 100 and by_offset[11] == 80 and by_offset[32] == 100


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    (row,) = access.LESSON.headline(True, True)
    assert "offset 11: gld efficiency 80% measured / 80% model" in row["measured_text"]
    assert row["measured"]["offset11_gld_efficiency"] == 80.0
    assert row["measured"]["offset11_GB/s"] == pytest.approx(row["measured"]["offset0_GB/s"] / 1.25)
    assert "offset 11 runs at 0.80x the aligned bandwidth" in row["takeaway"]


@pytest.mark.gpu
def test_report_headline_on_a_gpu():
    (row,) = access.LESSON.headline(True, False)
    acc = row["measured"]
    if gm.profiler_available():
        assert abs(acc["offset11_gld_efficiency"] - 80) < 0.5
        assert abs(acc["offset0_gld_efficiency"] - 100) < 0.5
    else:
        assert "offset11_gld_efficiency" not in acc


# gpumem.model.predict of this lesson's families: closed forms, refusals, launch configurations
GMAX = 2 ** 31 - 1       # blocks of a grid (gridDim.x)


def test_predict_vec_add_at_the_largest_launches_has_the_closed_form_counts():
    # vec_add, n = 2^31: 2^26 full warps, 2 loads and a store of 4 sectors each
    r = model.predict("vec_add", "default", n=2 ** 31)
    assert (r["gld_requests"], r["gld_transactions"], r["gst_transactions"]) == \
        (2 ** 27, 2 ** 29, 2 ** 28)
    assert r["gld_bytes_requested"] == 2 * 4 * 2 ** 31 and r["gld_efficiency"] == 100.0
    # the largest vec_add: 2^31 - 1 blocks of 32 full warps
    r = model.predict("vec_add", "default", n=GMAX * 1024, block=1024)
    assert (r["gst_requests"], r["gst_transactions"]) == (GMAX * 32, GMAX * 128)


def test_predict_refuses_launches_gpumem_cannot_make():
    # one past the largest grid (2^31 - 1 blocks), as the C entry points refuse it
    for family, variant, per in (("vec_add", "default", 1024), ("read_offset", "unroll4", 4096),
                                 ("copy", "float4", 4 * 1024)):
        ok = model.predict(family, variant, n=GMAX * per, block=1024)
        assert ok["gst_requests"] > 0
        for n in (GMAX * per + 1, 2 ** 50):
            with pytest.raises(ValueError, match=rf"model.predict\({family}/{variant}\): "
                                                 rf"n={n} needs .* blocks of block=1024"):
                model.predict(family, variant, n=n, block=1024)
        with pytest.raises(ValueError, match="model.launch_config.*2\\*\\*31 - 1"):
            model.launch_config(family, variant, n=GMAX * per + 1, block=1024)
    # n past 2^63 bytes: no array can hold it
    with pytest.raises(ValueError, match=r"n=2305843009213693952 elements of \d+ bytes exceed"):
        model.predict("vec_add", "default", n=2 ** 61)


def test_predict_read_offset_to_four_places():
    # 8388520 bytes in 327676 sectors: 80.00013733...% -> 80.0001, 4.99993896... -> 4.9999
    r = model.predict("read_offset", "unroll4", n=2 ** 20, offset=11, block=256)
    assert (r["gld_bytes_requested"], r["gld_transactions"], r["gld_requests"]) == \
        (8_388_520, 327_676, 65_536)
    assert (r["gld_efficiency"], r["gld_transactions_per_request"]) == (80.0001, 4.9999)
    assert r["gst_efficiency"] == 99.9997                             # 99.99971...


def test_predict_refuses_offsets_caches_and_blocks_by_name():
    with pytest.raises(ValueError, match=r"read_offset/unroll1\): offset=1001 .* 0..1000"):
        model.predict("read_offset", "unroll1", n=1000, offset=1001)
    assert model.predict("write_offset", "unroll4", n=1000, offset=1000)["gst_requests"] == 0
    with pytest.raises(TypeError, match="cache must be a str, not int"):
        model.predict("read_offset", "unroll1", n=10, cache=1)
    with pytest.raises(TypeError, match="block must be an int, not bool"):
        model.predict("copy", "float", n=10, block=True)
    # NumPy integers are integers, everywhere
    assert model.predict("read_offset", "unroll4", n=np.int64(10_000), offset=np.uint8(11),
                         block=np.int32(96), granularity=np.int16(128)) == \
        model.predict("read_offset", "unroll4", n=10_000, offset=11, block=96, granularity=128)
    assert model.launch_config("vec_add", "default", n=np.int64(1000), block=np.int16(100)) == \
        {"grid": (10, 1, 1), "block": (100, 1, 1)}
    with pytest.raises(ValueError, match="variant='unroll2'.*'unroll1', 'unroll4'"):
        model.predict("read_offset", "unroll2", n=1)
    with pytest.raises(ValueError, match="'stride' is unknown.*n, offset, block, cache"):
        model.predict("read_offset", "unroll1", n=1, stride=2)
    with pytest.raises(ValueError, match="block=0"):
        model.predict("copy", "float", n=10, block=0)
    with pytest.raises(ValueError, match="cache='L3'"):
        model.predict("read_offset", "unroll1", n=4, cache="L3")
    with pytest.raises(ValueError, match="needs parameter 'n'"):
        model.predict("vec_add", "default")
    with pytest.raises(TypeError, match="n must be an int"):
        model.predict("vec_add", "default", n=4.0)


def test_predict_the_load_paths_agree_and_a_record_carries_its_cache():
    ref = model.predict("read_offset", "unroll4", n=100_003, offset=5, block=256)
    assert tuple(ref) == model.METRICS
    for c in ("ca", "cg", "ldg", "cs"):
        assert model.predict("read_offset", "unroll4", n=100_003, offset=5, block=256,
                             cache=c) == ref
    rec = types.SimpleNamespace(kernel="read_offset", variant="unroll1",
                                params={"n": 1000, "offset": 3, "block": 256, "cache": "cg"})
    assert model.predict_record(rec) == model.predict("read_offset", "unroll1", n=1000,
                                                      offset=3, block=256)


def test_launch_config_matches_the_launchers():
    assert model.launch_config("read_offset", "unroll4", n=1000, block=100) == \
        {"grid": (3, 1, 1), "block": (100, 1, 1)}
    assert model.launch_config("copy", "float4", n=1003, block=256)["grid"] == (1, 1, 1)
