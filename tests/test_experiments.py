"""gpumem.experiments: argument checks, model mode (no GPU), the measured mode's
plumbing (with stand-ins, so it is checked without a GPU too), the real model's
published figures, and real sweeps on a GPU."""
import contextlib
import sys
import types

import numpy as np
import pytest

import gpumem as gm
from gpumem import experiments as ex


# ---- a stand-in model that remembers what it was asked ------------------------------------
class FakeModel(types.ModuleType):
    def __init__(self):
        super().__init__("gpumem.model")
        self.calls = []

    def predict(self, family, variant, **params):
        self.calls.append((family, variant, params))
        off = params.get("offset", 0) + params.get("stride", 0)
        return {"gld_efficiency": 100.0 - off, "gld_transactions": 1000 + off, "gld_requests": 7,
                "gst_efficiency": 50.0 + off, "gst_transactions": 2000 + off, "gst_requests": 9}


@pytest.fixture
def fake_model(monkeypatch):
    m = FakeModel()
    monkeypatch.setitem(sys.modules, "gpumem.model", m)
    return m


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(gm, "is_available", lambda: False)


# ---- argument checks ---------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,msg", [
    (lambda: ex.offset_sweep(kind="load"), ValueError, r"kind='load' is unknown; allowed: 'read', 'write'"),
    (lambda: ex.offset_sweep(cache="l1"), ValueError, r"cache='l1' is unknown"),
    (lambda: ex.offset_sweep(kind="write", cache="cg"), ValueError, r"applies to kind='read' only"),
    (lambda: ex.offset_sweep(unroll=2), ValueError, r"unroll=2 is not allowed; unroll must be 1 or 4"),
    (lambda: ex.offset_sweep([0, 200], n=100), ValueError, r"offsets=200 is not allowed; offsets must be 0..100"),
    (lambda: ex.offset_sweep([-1]), ValueError, r"offsets=-1 is not allowed"),
    (lambda: ex.offset_sweep([]), ValueError, r"offsets is empty"),
    (lambda: ex.offset_sweep([1.5]), TypeError, r"offsets must be an int"),
    (lambda: ex.offset_sweep(block=0), ValueError, r"block=0 is not allowed; block must be 1..1024"),
    (lambda: ex.offset_sweep(n=0), ValueError, r"n=0 is not allowed; n must be >= 1"),
    (lambda: ex.offset_sweep(repeat=0), ValueError, r"repeat=0 is not allowed"),
    (lambda: ex.offset_sweep(progress="yes"), TypeError, r"progress must be a bool"),
    (lambda: ex.offset_sweep(metrics="gld_efficiency"), TypeError, r"metrics must be a sequence"),
    (lambda: ex.block_size_sweep(blocks=[32, 2048]), ValueError, r"blocks=2048 is not allowed"),
    (lambda: ex.block_size_sweep(kind="write", cache="cs"), ValueError, r"applies to kind='read' only"),
    (lambda: ex.block_size_sweep(offset=10, n=5), ValueError, r"offset=10 is not allowed"),
    (lambda: ex.stride_sweep(strides=[0]), ValueError, r"strides=0 is not allowed; strides must be 1..64"),
    (lambda: ex.stride_sweep(strides=[65]), ValueError, r"strides=65 is not allowed"),
    (lambda: ex.aos_vs_soa(kernels=["transpose"]), ValueError, r"kernels='transpose' is unknown"),
    (lambda: ex.cache_path_compare(caches=["texture"]), ValueError, r"cache='texture' is unknown"),
])
def test_arguments(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# ---- model mode (no GPU) -----------------------------------------------------------------
def test_offset_sweep_model_mode(fake_model, no_gpu):
    t = ex.offset_sweep([0, 11, 128], kind=["read", "write"], cache=["default", "cg"],
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


def test_other_sweeps_model_mode(fake_model, no_gpu):
    t = ex.stride_sweep([1, 2, 33], n=100, block=64, progress=False)
    assert t["stride"] == [1, 2, 33] and t["m"] == [100, 50, 4]
    assert t["gld_efficiency"] == [99.0, 98.0, 67.0]
    assert fake_model.calls[-1] == ("strided_read", "default", {"n": 100, "stride": 33, "block": 64})

    t = ex.aos_vs_soa(n=77, block=32, progress=False)
    assert [(r["kernel"], r["layout"]) for r in t.rows] == [
        ("struct_update", "aos"), ("struct_update", "soa"), ("distance", "aos"), ("distance", "soa")]
    assert fake_model.calls[-4:] == [(k, lay, {"n": 77, "block": 32}) for k in ("struct_update", "distance")
                                     for lay in ("aos", "soa")]

    t = ex.block_size_sweep([32, 33, 100], offset=3, n=1000, progress=False)
    assert t["warps_per_block"] == [1, 2, 4] and t["idle_lanes"] == [0, 31, 28]
    assert t["grid"] == [32, 31, 10]
    assert fake_model.calls[-1] == ("read_offset", "unroll1",
                                    {"n": 1000, "offset": 3, "block": 100, "cache": "default"})

    t = ex.cache_path_compare(offsets=[0, 11], n=500, progress=False)
    assert [(r["cache"], r["offset"]) for r in t.rows] == [(c, o) for c in ex.CACHES for o in (0, 11)]


def test_without_model_columns_are_empty(monkeypatch, no_gpu):
    monkeypatch.setattr(ex, "_model_predict", lambda: None)
    t = ex.offset_sweep([0, 1], n=100, progress=False)
    assert t["gld_efficiency"] == [None, None] and t.sources == {}


# ---- the measured mode, with stand-ins for the GPU ---------------------------------------
class FakeProfile:
    active = None

    def __init__(self, metrics):
        self.metrics = metrics
        self.records = []


def test_measured_mode_plumbing(monkeypatch, fake_model):
    launches, profiled = [], []
    monkeypatch.setattr(gm, "is_available", lambda: True)
    monkeypatch.setattr(gm, "profiler_available", lambda: True, raising=False)
    monkeypatch.setattr(gm, "to_device", lambda a: ("dev", a.shape))
    monkeypatch.setattr(gm, "empty", lambda shape: ("out", shape))

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

    monkeypatch.setattr(gm, "profile", profile, raising=False)
    monkeypatch.setattr(gm, "bench", bench)
    monkeypatch.setattr(gm, "read_offset", read_offset)
    t = ex.offset_sweep([0, 11], n=64, block=32, cache="cs", repeat=5, progress=False)
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


def test_gpu_without_counters_uses_model(monkeypatch, fake_model):
    monkeypatch.setattr(gm, "is_available", lambda: True)
    monkeypatch.setattr(gm, "profiler_available", lambda: False, raising=False)
    monkeypatch.setattr(gm, "to_device", lambda a: a)
    monkeypatch.setattr(gm, "empty", lambda shape: np.full(shape, np.nan, np.float32))
    monkeypatch.setattr(gm, "bench", lambda fn, *a, repeat, warmup, **kw:
                        types.SimpleNamespace(median_ms=1.0, gbps=2.0))
    t = ex.stride_sweep([4], n=64, progress=False)
    assert t["ms"] == [1.0] and t["gld_efficiency"] == [96.0]
    assert t.sources["ms"] == "measured" and t.sources["gld_efficiency"] == "model"
    assert "gld_efficiency_model" not in t.columns


# ---- progress bar ---------------------------------------------------------------------------
def test_progress_bar(fake_model, no_gpu, capsys):
    pytest.importorskip("tqdm")
    ex.stride_sweep([1, 2], n=64, progress=True)
    assert "stride sweep" in capsys.readouterr().err
    ex.stride_sweep([1, 2], n=64, progress=False)
    assert capsys.readouterr().err == ""


def test_progress_without_tqdm(fake_model, no_gpu, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)   # import tqdm -> ImportError
    t = ex.stride_sweep([1, 2], n=64, progress=True)
    assert len(t) == 2 and capsys.readouterr().err == ""


# ---- the real model: the published figures ---------------------------------------------------
def test_real_model_figures(no_gpu):
    pytest.importorskip("gpumem.model")
    t = ex.offset_sweep([0, 11, 128], kind=["read", "write"], n=2**16, progress=False)
    assert t.sources["gld_efficiency"] == "model"
    reads = [r for r in t.rows if r["kernel"] == "read_offset"]
    writes = [r for r in t.rows if r["kernel"] == "write_offset"]
    assert [round(r["gld_efficiency"]) for r in reads] == [100, 80, 100]
    assert [round(r["gst_efficiency"]) for r in writes] == [100, 80, 100]
    assert [round(r["gst_efficiency"]) for r in reads] == [100, 100, 100]
    s = ex.stride_sweep([1, 2, 8], n=2**16, progress=False)
    assert [round(v, 1) for v in s["gld_efficiency"]] == [100.0, 50.0, 12.5]
    a = ex.aos_vs_soa(n=2**16, kernels=["struct_update"], progress=False)
    assert [round(v) for v in a["gld_efficiency"]] == [50, 100]


# ---- real sweeps on a GPU -----------------------------------------------------------------------
@pytest.mark.gpu
def test_sweeps_on_gpu(no_leak):
    t = ex.offset_sweep([0, 11], kind=["read", "write"], unroll=[1, 4], n=2**18, repeat=3,
                        progress=False)
    assert len(t) == 8
    assert all(v > 0 for v in t["ms"]) and all(v > 0 for v in t["GB/s"])
    assert t.sources["ms"] == "measured"
    if t.sources.get("gld_efficiency") == "measured":
        eff = {(r["kernel"], r["unroll"], r["offset"]): r for r in t.rows}
        assert eff[("read_offset", 1, 11)]["gld_efficiency"] == pytest.approx(80.0, abs=0.1)
        assert eff[("write_offset", 1, 11)]["gst_efficiency"] == pytest.approx(80.0, abs=0.1)
        assert eff[("read_offset", 4, 0)]["gld_efficiency"] == pytest.approx(100.0, abs=0.01)
    for sweep in (ex.stride_sweep([1, 32], n=2**16, repeat=2, progress=False),
                  ex.aos_vs_soa(n=2**16, repeat=2, progress=False),
                  ex.block_size_sweep([33, 512], n=2**16, repeat=2, progress=False),
                  ex.cache_path_compare(offsets=[11], n=2**16, repeat=2, progress=False)):
        assert all(v > 0 for v in sweep["ms"]), sweep.title
