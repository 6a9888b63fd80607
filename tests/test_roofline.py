"""gpumem.roofline: the roof and the points without a GPU (model points, an assumed
H100, a given device), its validation; on a GPU, measured DRAM bytes from a profile
and records and bench results placed under the device's own roof."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

import gpumem as gm
from gpumem.tools.roofline import FP32_LANES, H100_SXM

FAKE = SimpleNamespace(name="fake GPU", theoretical_bandwidth_gbps=1000.0, peak_fp32_gflops=20000.0)


def test_model_points_under_a_given_roof():
    t = gm.roofline(gm.matmul_model_points(1024, 1024, 1024), device=FAKE)
    assert t.roof == {"device": "fake GPU", "peak_gflops": 20000.0, "bandwidth_gbps": 1000.0,
                      "ridge": 20.0}
    by = {r["label"]: r for r in t}
    naive = by["matmul/naive (tile=16)"]
    assert naive["FLOP/byte"] == pytest.approx(2 * 1024**3 / (4 * (2 * 1024**3 + 1024**2)))
    assert naive["roof GFLOP/s"] == pytest.approx(naive["FLOP/byte"] * 1000.0)
    assert naive["bound"] == "memory" and naive["GFLOP/s"] is None and naive["x roof"] is None
    assert by["matmul/tiled (tile=32)"]["FLOP/byte"] == pytest.approx(2 * 1024**3 / (4 * (2 * 32 * 1024**2 + 1024**2)))
    assert all(r["source"] == "model" for r in t)


def test_a_table_of_your_own_and_the_compute_roof():
    pts = gm.Table([{"label": "fma-heavy", "flops": 4e12, "bytes": 1e9, "ms": 400.0},
                    {"label": "copy", "flops": 0, "bytes": 2e9, "ms": 2.0}])
    t = gm.roofline(pts, device=FAKE, bandwidth_gbps=500.0)
    heavy, copy = t.rows
    assert heavy["bound"] == "compute" and heavy["roof GFLOP/s"] == 20000.0
    assert heavy["GFLOP/s"] == pytest.approx(10000.0) and heavy["x roof"] == pytest.approx(0.5)
    assert copy["FLOP/byte"] == 0 and copy["roof GFLOP/s"] == 0 and copy["bound"] == "memory"
    assert t.roof["ridge"] == 40.0 and heavy["source"] == "given"


def test_a_profile_table_as_it_is():
    # the shape of Profile.table() with the DRAM counters among its metrics
    t = gm.Table([{"kernel": "matmul", "variant": "tiled", "params": "tile=16, m=8", "ms": 0.5,
                   "flops": 1e9, "bytes": 4e6, "dram_read_bytes": 3e6, "dram_write_bytes": 1e6},
                  {"kernel": "copy", "variant": "float4", "params": "", "ms": 0.25,
                   "flops": 0.0, "bytes": 8e6, "dram_read_bytes": None,
                   "dram_write_bytes": None}])
    a, b = gm.roofline(t, device=FAKE).rows
    assert (a["label"], a["source"], a["bytes"]) == ("matmul/tiled (tile=16, m=8)", "measured", 4e6)
    assert a["GFLOP/s"] == pytest.approx(2000.0)
    assert (b["label"], b["source"], b["bytes"]) == ("copy/float4", "given", 8e6)


def test_without_a_gpu_the_h100_is_assumed(no_gpu):
    t = gm.roofline(gm.matmul_model_points(64, 64, 64))
    assert t.roof["device"] == H100_SXM["name"] and "assumed" in t.title
    assert t.roof["peak_gflops"] == pytest.approx(67_000.0)     # the H100 SXM datasheet's
    assert t.roof["bandwidth_gbps"] == pytest.approx(3350.0)


def test_device_info_peak():
    d = gm.DeviceInfo(0, "x", (9, 0), 132, 32, 2048, 1024, 32, 65536, 65536, 233472, 49152,
                      232448, 65536, 52428800, 2619000, 5120, 3352.3, 80 << 30, (13, 0),
                      (13, 0), clock_khz=1980000)
    assert d.fp32_lanes_per_multiprocessor == 128 == FP32_LANES[(9, 0)]
    assert d.peak_fp32_gflops == pytest.approx(132 * 128 * 2 * 1.98)
    assert "FP32 peak 66,908 GFLOP/s at 1980 MHz" in d.summary()
    t = gm.roofline(gm.matmul_model_points(64, 64, 64), device=d)
    assert t.roof["peak_gflops"] == pytest.approx(66908.16)
    no_clock = {k: v for k, v in d.__dict__.items() if k != "clock_khz"}
    assert gm.DeviceInfo(**no_clock).peak_fp32_gflops is None


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: gm.roofline(3), TypeError, "roofline: points must be"),
    (lambda: gm.roofline("x"), TypeError, "roofline: points must be"),
    (lambda: gm.roofline([1]), TypeError, r"roofline: points\[0\] is a int"),
    (lambda: gm.roofline(gm.Table([{"label": "a", "flops": 1}]), device=FAKE), ValueError,
     r"needs the columns label \(or kernel and variant\), flops and bytes"),
    (lambda: gm.roofline(gm.Table([{"label": "a", "flops": -1, "bytes": 1}]), device=FAKE),
     ValueError, "flops=-1"),
    (lambda: gm.roofline(gm.Table([{"label": "a", "flops": 1, "bytes": 1, "ms": 0}]),
                         device=FAKE), ValueError, "ms=0"),
    (lambda: gm.roofline([], device=7), TypeError, "device must be a gpumem.DeviceInfo"),
    (lambda: gm.roofline([], device=FAKE, peak_gflops=-3), ValueError, "peak_gflops=-3"),
    (lambda: gm.roofline([], device=FAKE, bandwidth_gbps="fast"), TypeError,
     "bandwidth_gbps must be a number"),
    (lambda: gm.plot_roofline(gm.Table([{"x": 1}])), TypeError, "plot_roofline: table must be"),
])
def test_validation(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_plot_shares_a_label_where_points_coincide():
    import matplotlib
    matplotlib.use("Agg")
    t = gm.roofline(gm.matmul_model_points(256, 256, 256), device=FAKE)
    ax = gm.plot_roofline(t)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(s.endswith(": matmul/tiled (tile=32), matmul/prefetch (tile=32), "
                          "matmul/coarsened (tile=32)") for s in legend), legend
    assert len(legend) == len(ax.texts) - 1 == 6      # the ridge's label and 6 numbers
    assert "bytes: model" in ax.get_xlabel()


@pytest.mark.gpu
def test_measured_points(rng, no_leak):
    a = gm.to_device(rng.standard_normal((1024, 1024)).astype(np.float32))
    if not gm.profiler_available():
        pytest.fail("the counters cannot be read on this GPU machine")
    with gm.profile(["dram_read_bytes", "dram_write_bytes"]) as p:
        gm.matmul(a, a, variant="naive")
        gm.matmul(a, a, variant="tiled", tile=32)
    t = gm.roofline(p)
    assert [r["source"] for r in t] == ["measured", "measured"]
    again = gm.roofline(p.table())                         # the table, without reading again
    drop = lambda rows: [{k: v for k, v in r.items() if k != "label"} for r in rows]  # noqa: E731
    assert drop(again.rows) == drop(t.rows)
    d = gm.device()
    assert t.roof["peak_gflops"] == pytest.approx(d.peak_fp32_gflops) and d.clock_khz > 0
    for r, rec in zip(t, p.records):
        assert r["bytes"] == rec.metrics["dram_read_bytes"] + rec.metrics["dram_write_bytes"]
        assert r["GFLOP/s"] == pytest.approx(2 * 1024**3 / (rec.ms * 1e-3) / 1e9)
        assert 0 < r["x roof"] <= 1.05, r          # nothing runs above its roof
    with gm.record() as launches:
        gm.matmul(a, a)
    assert gm.roofline(launches).rows[0]["source"] == "declared"
    b = gm.bench(gm.matmul, a, a, repeat=3, warmup=1)
    r = gm.roofline([b]).rows[0]
    assert r["GFLOP/s"] == pytest.approx(b.gflops) and r["source"] == "declared"
    assert not math.isnan(r["FLOP/byte"])


# ---- every input refused before anything is drawn (issue 29) ----------------------------------
@pytest.mark.parametrize("row,exc,msg", [
    ({"label": "a", "flops": float("nan"), "bytes": 1.0}, ValueError, r"a: flops=nan is not allowed"),
    ({"label": "a", "flops": 1.0, "bytes": float("inf")}, ValueError, r"a: bytes=inf is not allowed"),
    ({"label": "a", "flops": -1.0, "bytes": 1.0}, ValueError, r"a: flops=-1.0 is not allowed"),
    ({"label": "a", "flops": 1.0, "bytes": 1.0, "ms": 0.0}, ValueError, r"a: ms=0.0 is not allowed"),
    ({"label": "a", "flops": "1", "bytes": 1.0}, TypeError, r"a: flops must be a number, not str"),
    ({"label": "a", "flops": True, "bytes": 1.0}, TypeError, r"a: flops must be a number, not bool"),
    ({"label": None, "flops": 1.0, "bytes": 1.0}, ValueError, r"row 0 has no label"),
])
def test_roofline_refuses_bad_numbers_and_rows(row, exc, msg):
    with pytest.raises(exc, match="roofline: " + msg):
        gm.roofline(gm.Table([row]), peak_gflops=1000, bandwidth_gbps=100)


def test_roofline_takes_numpy_numbers():
    t = gm.roofline(gm.Table([{"label": "np", "flops": np.int64(600), "bytes": np.float32(2.0),
                               "ms": np.float64(1e-3)}]),
                    peak_gflops=np.float32(1000.0), bandwidth_gbps=np.int32(100))
    assert t["FLOP/byte"] == [300.0] and t.roof["bandwidth_gbps"] == 100.0
    with pytest.raises(ValueError, match="roofline: peak_gflops=nan is not allowed"):
        gm.roofline(t, peak_gflops=float("nan"), bandwidth_gbps=100)


def test_plot_roofline_refuses_an_ax_that_is_no_axes():
    pytest.importorskip("matplotlib")
    t = gm.roofline(gm.Table([{"label": "a", "flops": 2.0, "bytes": 1.0}]),
                    peak_gflops=1000, bandwidth_gbps=100)
    with pytest.raises(TypeError, match="plot_roofline: ax must be a matplotlib Axes or None, "
                                        "not str"):
        gm.plot_roofline(t, ax="left")
