"""Layout kernels (gpumem.layout: strided_read, struct_update, distance) and
their sweeps: validation without a GPU, the sweeps in model mode; on a GPU
element-wise comparison with NumPy on fresh random data of awkward sizes,
outputs poisoned with NaN first so an unwritten element fails."""

import sys
import types

import numpy as np
import pytest

import gpumem as gm
from gpumem.lessons import layout
from _helpers import awkward_n, f32, poisoned
from gpumem import model
from _fake_gpu import FakeGPU

BLOCKS = [1, 33, 100, 512, 1024]
A = np.zeros(100, np.float32)


# ---- CPU references ----------------------------------------------------------------
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


# ---- validation (no GPU: every check comes before any device call) -----------------------
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


# ---- the sweeps without a GPU ----------------------------------------------------------------
@pytest.mark.parametrize("call,exc,msg", [
    (lambda: layout.stride_sweep(strides=[0]), ValueError, r"strides=0 is not allowed; strides must be 1..64"),
    (lambda: layout.stride_sweep(strides=[65]), ValueError, r"strides=65 is not allowed"),
    (lambda: layout.aos_vs_soa(kernels=["transpose"]), ValueError, r"kernels='transpose' is unknown"),
])
def test_sweep_arguments(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_layout_sweeps_model_mode(fake_model, no_gpu):
    t = layout.stride_sweep([1, 2, 33], n=100, block=64, progress=False)
    assert t["stride"] == [1, 2, 33] and t["m"] == [100, 50, 4]
    assert t["gld_efficiency"] == [99.0, 98.0, 67.0]
    assert fake_model.calls[-1] == ("strided_read", "default", {"n": 100, "stride": 33, "block": 64})

    t = layout.aos_vs_soa(n=77, block=32, progress=False)
    assert [(r["kernel"], r["layout"]) for r in t.rows] == [
        ("struct_update", "aos"), ("struct_update", "soa"), ("distance", "aos"), ("distance", "soa")]
    assert fake_model.calls[-4:] == [(k, lay, {"n": 77, "block": 32}) for k in ("struct_update", "distance")
                                     for lay in ("aos", "soa")]


def test_gpu_without_counters_uses_model(monkeypatch, fake_model):
    monkeypatch.setattr(gm.runtime, "is_available", lambda: True)
    monkeypatch.setattr(gm.runtime, "profiler_available", lambda: False, raising=False)
    monkeypatch.setattr(gm.runtime, "to_device", lambda a: a)
    monkeypatch.setattr(gm.runtime, "empty", lambda shape: np.full(shape, np.nan, np.float32))
    monkeypatch.setattr(gm.runtime, "bench", lambda fn, *a, repeat, warmup, **kw:
                        types.SimpleNamespace(median_ms=1.0, gbps=2.0))
    t = layout.stride_sweep([4], n=64, progress=False)
    assert t["ms"] == [1.0] and t["gld_efficiency"] == [96.0]
    assert t.sources["ms"] == "measured" and t.sources["gld_efficiency"] == "model"
    assert "gld_efficiency_model" not in t.columns


def test_no_progress_bar_for_model_only_work(fake_model, no_gpu, capsys):
    # without a GPU nothing runs: no bar, even when asked for (tests/test_progress.py)
    pytest.importorskip("tqdm")
    layout.stride_sweep([1, 2], n=64, progress=True)
    assert capsys.readouterr().err == ""
    layout.stride_sweep([1, 2], n=64, progress=False)
    assert capsys.readouterr().err == ""


def test_progress_without_tqdm(fake_model, no_gpu, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)   # import tqdm -> ImportError
    t = layout.stride_sweep([1, 2], n=64, progress=True)
    assert len(t) == 2 and capsys.readouterr().err == ""


def test_real_model_layout_figures(no_gpu):
    pytest.importorskip("gpumem.model")
    s = layout.stride_sweep([1, 2, 8], n=2**16, progress=False)
    assert [round(v, 1) for v in s["gld_efficiency"]] == [100.0, 50.0, 12.5]
    a = layout.aos_vs_soa(n=2**16, kernels=["struct_update"], progress=False)
    assert [round(v) for v in a["gld_efficiency"]] == [50, 100]


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


# ---- GPU: the sweeps -------------------------------------------------------------------
@pytest.mark.gpu
def test_layout_sweeps_on_gpu(no_leak):
    for sweep in (layout.stride_sweep([1, 32], n=2**16, repeat=2, progress=False),
                  layout.aos_vs_soa(n=2**16, repeat=2, progress=False)):
        assert all(v > 0 for v in sweep["ms"]), sweep.title


# ---- issue 11: arguments first ----------------------------------------------------------
def test_layout_sweeps_check_everything_first(no_gpu):
    with pytest.raises(ValueError, match=r"stride_sweep: n=1099511627776 is not allowed; n must be <= "):
        layout.stride_sweep(n=2**40)
    with pytest.raises(ValueError, match=r"aos_vs_soa: unknown metric 'x'"):
        layout.aos_vs_soa(metrics=["x"])
    with pytest.raises(TypeError, match=r"aos_vs_soa: progress must be a bool"):
        layout.aos_vs_soa(progress=None)
    with pytest.raises(ValueError, match=r"aos_vs_soa: n=1000000000 is not allowed"):
        layout.aos_vs_soa(n=10**9)          # distance's 3 n floats would not fit an int index
    with pytest.raises(TypeError, match=r"strided_read: a must be a numpy.ndarray"):
        gm.strided_read(None)
    with pytest.raises(TypeError, match=r"struct_update: block must be an int, not float"):
        gm.struct_update(np.ones((4, 2), np.float32), block=32.0)


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the model, on the fake GPU (the stand-ins layout declares), on a GPU
def test_report_headline_without_a_gpu_is_half_the_efficiency_for_aos():
    (row,) = layout.LESSON.headline(False, False)
    assert (row["model"]["aos_gld_efficiency"], row["model"]["soa_gld_efficiency"]) == (50.0, 100.0)


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    (row,) = layout.LESSON.headline(True, True)
    assert "gld efficiency AoS 50% measured / 50% model, SoA 100% measured / 100% model" in \
        row["measured_text"]
    assert row["measured"]["aos_GB/s"] == pytest.approx(row["measured"]["soa_GB/s"] / 2)


@pytest.mark.gpu
def test_report_headline_on_a_gpu():
    (row,) = layout.LESSON.headline(True, False)
    if gm.profiler_available():
        assert abs(row["measured"]["aos_gld_efficiency"] - 50) < 0.5
    assert row["measured"]["aos_GB/s"] > 0 and row["measured"]["soa_GB/s"] > 0


# gpumem.model.predict of this lesson's families: closed forms, refusals, launch configurations
GMAX = 2 ** 31 - 1       # blocks of a grid (gridDim.x)


def test_predict_struct_update_at_n_2_31_has_the_closed_form_counts():
    # struct_update aos: every warp spans 8 sectors for 4 of bytes, loads and stores
    r = model.predict("struct_update", "aos", n=2 ** 31)
    assert (r["gld_requests"], r["gld_transactions"]) == (2 * 2 ** 26, 2 * 8 * 2 ** 26)


def test_predict_refuses_launches_gpumem_cannot_make():
    for family, variant, p, per in (("strided_read", "default", {"stride": 64}, 64 * 1024),
                                    ("distance", "soa", {}, 1024)):
        ok = model.predict(family, variant, n=GMAX * per, block=1024, **p)
        assert ok["gst_requests"] > 0
        for n in (GMAX * per + 1, 2 ** 50):
            with pytest.raises(ValueError, match=rf"model.predict\({family}/{variant}\): "
                                                 rf"n={n} needs .* blocks of block=1024"):
                model.predict(family, variant, n=n, block=1024, **p)
        with pytest.raises(ValueError, match="model.launch_config.*2\\*\\*31 - 1"):
            model.launch_config(family, variant, n=GMAX * per + 1, block=1024, **p)
    # n past 2^63 bytes: no array can hold it
    for family in ("distance", "struct_update"):
        with pytest.raises(ValueError, match=rf"n={2 ** 60} elements of \d+ bytes exceed"):
            model.predict(family, model.families()[family][0], n=2 ** 60)


def test_predict_distance_aos_to_four_places():
    assert model.predict("distance", "aos", n=2 ** 20)["gld_efficiency"] == 33.3333


def test_launch_config_matches_the_launcher():
    assert model.launch_config("strided_read", "default", n=1000, stride=3, block=32)["grid"] == \
        (11, 1, 1)
