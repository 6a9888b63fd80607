"""Access-pattern kernels (gpumem.access): validation without a GPU, and on a
GPU element-wise comparison with NumPy on fresh random data of awkward sizes,
outputs poisoned with NaN first so an unwritten element fails and an element
that must stay unwritten is checked to stay NaN."""
import math

import numpy as np
import pytest

import gpumem as gm

OFFSETS = [0, 1, 11, 31, 32, 33, 127, 128]
BLOCKS = [1, 33, 100, 512, 1024]
CACHES = ["default", "ca", "cg", "ldg", "cs"]


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def awkward_n(rng, block, per_thread=1, at_least=300):
    """A length that is no multiple of the block (nor of per_thread*block)."""
    chunk = per_thread * block
    base = chunk * max(2, math.ceil(at_least / chunk))
    r = int(rng.integers(1, chunk)) if chunk > 1 else 0
    if block > 1 and r % block == 0:
        r += 1
    return base + r


def poisoned(shape):
    return gm.to_device(np.full(shape, np.nan, np.float32))


def huge(n):
    """An ndarray of n float32 that takes no memory (validation never reads it)."""
    return np.broadcast_to(np.float32(0), (n,))


# ---- CPU references ----------------------------------------------------------------
def ref_read_offset(a, b, offset):
    return a[offset:] + b[offset:]           # C[i] for i < n - offset


def ref_write_offset(a, b, offset):
    return a[:len(a) - offset] + b[:len(b) - offset]   # C[offset + i]


def ref_struct_update(data, layout):
    r = data.copy()
    if layout == "aos":
        r[:, 0] += np.float32(10)
        r[:, 1] += np.float32(20)
    else:
        r[0] += np.float32(10)
        r[1] += np.float32(20)
    return r


def ref_distance(points, layout):
    x, y, z = points.T if layout == "aos" else points
    return np.sqrt((x * x + y * y) + z * z)


# ---- the variant table (no GPU) ----------------------------------------------------------
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


# ---- validation (no GPU: every check comes before any device call) -----------------------
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


@pytest.mark.parametrize("stride", [0, -1, 65, 128])
def test_strided_read_stride(stride):
    with pytest.raises(ValueError, match=rf"stride={stride} is not allowed; stride must be 1..64"):
        gm.strided_read(A, stride=stride)


def test_strided_read_validation():
    with pytest.raises(TypeError, match="stride must be an int"):
        gm.strided_read(A, stride=2.0)
    with pytest.raises(TypeError, match="a has dtype"):
        gm.strided_read(A.astype(np.float16))
    with pytest.raises(ValueError, match="a must be 1-D"):
        gm.strided_read(A.reshape(4, 25))
    with pytest.raises(ValueError, match="block=0 is not allowed"):
        gm.strided_read(A, block=0)
    with pytest.raises(TypeError, match="out must be a gpumem.DeviceArray"):
        gm.strided_read(A, stride=2, out=np.empty(50, np.float32))


@pytest.mark.parametrize("fn,arg,fields", [(gm.struct_update, "data", 2), (gm.distance, "points", 3)])
def test_layout_validation(fn, arg, fields):
    aos = np.zeros((10, fields), np.float32)
    with pytest.raises(ValueError, match=r"layout='AoS' is unknown; allowed: 'aos'.*'soa'"):
        fn(aos, layout="AoS")
    with pytest.raises(TypeError, match="layout must be a str"):
        fn(aos, layout=0)
    with pytest.raises(ValueError, match=rf"{arg} has shape \(10, {fields}\); layout='soa' takes shape \({fields}, n\)"):
        fn(aos, layout="soa")
    with pytest.raises(ValueError, match=rf"{arg} has shape \({fields}, 10\); layout='aos' takes shape \(n, {fields}\)"):
        fn(aos.T.copy(), layout="aos")
    with pytest.raises(ValueError, match=rf"{arg} has shape \(30,\); layout='aos'"):
        fn(np.zeros(30, np.float32))
    with pytest.raises(TypeError, match=rf"{arg} has dtype"):
        fn(aos.astype(np.float64))
    with pytest.raises(ValueError, match="block=1025 is not allowed"):
        fn(aos, block=1025)
    with pytest.raises(TypeError, match="out must be a gpumem.DeviceArray"):
        fn(aos, out=aos)


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


# ---- GPU: read_offset --------------------------------------------------------------------
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


# ---- GPU: strided_read -------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("stride", [1, 2, 3, 4, 7, 8, 9, 16, 31, 32, 33, 63, 64])
def test_strided_read(rng, no_leak, stride, block):
    n = awkward_n(rng, block) * 3 + 1
    a = f32(rng, n)
    m = -(-n // stride)
    out = poisoned(m)
    assert gm.strided_read(gm.to_device(a), stride=stride, block=block, out=out) is out
    np.testing.assert_array_equal(out.get(), a[::stride])
    got = gm.strided_read(a, stride=stride, block=block)
    assert got.shape == (m,)
    np.testing.assert_array_equal(got, a[::stride])
    r = gm.last_record()
    assert r.params == {"n": n, "stride": stride, "block": block}
    assert r.grid == (-(-m // block), 1, 1) and r.bytes == 8 * m


@pytest.mark.gpu
def test_strided_read_small(rng, no_leak):
    for n in range(0, 70):
        a = f32(rng, n)
        for stride in (1, 5, 64):
            np.testing.assert_array_equal(gm.strided_read(a, stride=stride, block=32), a[::stride])


# ---- GPU: AoS vs SoA ---------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("layout", ["aos", "soa"])
def test_struct_update(rng, no_leak, layout, block):
    n = awkward_n(rng, block)
    data = f32(rng, n, 2) if layout == "aos" else f32(rng, 2, n)
    want = ref_struct_update(data, layout)
    out = poisoned(data.shape)
    assert gm.struct_update(gm.to_device(data), layout=layout, block=block, out=out) is out
    np.testing.assert_array_equal(out.get(), want)
    got = gm.struct_update(data, layout=layout, block=block)
    assert got.shape == data.shape
    np.testing.assert_array_equal(got, want)
    r = gm.last_record()
    assert (r.kernel, r.variant, r.params) == ("struct_update", layout, {"n": n, "block": block})
    assert r.grid == (-(-n // block), 1, 1) and r.bytes == 16 * n


@pytest.mark.gpu
@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("layout", ["aos", "soa"])
def test_distance(rng, no_leak, layout, block):
    n = awkward_n(rng, block)
    pts = f32(rng, n, 3) if layout == "aos" else f32(rng, 3, n)
    pts *= np.float32(rng.uniform(0.01, 100))
    want = ref_distance(pts, layout)
    out = poisoned(n)
    assert gm.distance(gm.to_device(pts), layout=layout, block=block, out=out) is out
    np.testing.assert_array_equal(out.get(), want)   # bit for bit: no FMA, IEEE sqrt
    got = gm.distance(pts, layout=layout, block=block)
    assert got.shape == (n,)
    np.testing.assert_array_equal(got, want)
    r = gm.last_record()
    assert (r.kernel, r.variant, r.params) == ("distance", layout, {"n": n, "block": block})
    assert r.bytes == 16 * n


@pytest.mark.gpu
def test_layouts_agree(rng, no_leak):
    """The same data in both layouts gives the same answer."""
    n = 12_345
    aos = f32(rng, n, 2)
    np.testing.assert_array_equal(gm.struct_update(aos, layout="aos"),
                                  gm.struct_update(aos.T.copy(), layout="soa").T)
    pts = f32(rng, n, 3)
    np.testing.assert_array_equal(gm.distance(pts, layout="aos"),
                                  gm.distance(pts.T.copy(), layout="soa"))


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
