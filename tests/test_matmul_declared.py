"""matmul's side of the shared tests (issue 48: ``tests/test_report*.py`` and
``tests/model/test_predict.py`` iterate over the lessons' declarations and name none):
its ``gpumem report`` headline on the model, on the fake GPU (the stand-ins it declares)
and on a GPU, with CuPy's cuBLAS beside it; and what gpumem.model predicts of it --
closed forms at the largest launches, the launches it refuses, launch configurations.
Beside tests/test_matmul.py, the lesson's kernels."""
import importlib
import sys
import time

import numpy as np
import pytest

import gpumem as gm
from gpumem import model, report
from gpumem.lessons import matmul
from gpumem.model import predict
from _fake_gpu import FakeGPU, fake_cupy, first_with

GMAX = 2 ** 31 - 1       # blocks of a grid (gridDim.x)


# ---- gpumem report ----------------------------------------------------------------------
def test_report_headline_without_a_gpu_is_the_models_flops_per_float():
    rows = matmul.LESSON.headline(False, False)
    m = first_with(rows, "tiled_flops_per_float")["model"]
    assert (m["naive_flops_per_float"], m["tiled_flops_per_float"]) == (1.0, 32.0)
    assert m["naive_gld_transactions"] > 10 * m["tiled_gld_transactions"]


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    rows = matmul.LESSON.headline(True, True)
    mm = first_with(rows, "tiled_GFLOP/s")
    assert mm["measured"]["tiled_GFLOP/s"] == pytest.approx(4 * mm["measured"]["naive_GFLOP/s"])
    assert "(4.0x)" in mm["measured_text"] and "measured / " in mm["measured_text"]
    cub = first_with(rows, "cublas_GFLOP/s")["measured"]
    assert cub["cublas_ms"] == 0.5 and cub["rel_err"] == 0.0
    assert cub["warptiled_GFLOP/s"] == pytest.approx(4 * mm["measured"]["tiled_GFLOP/s"] / 1.25)
    assert cub["fastest_gpumem_over_cublas"] == pytest.approx(0.5 / 0.625)   # warptiled


def test_cublas_that_disagrees_is_not_timed(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(noise=1e-3))
    rows = matmul.LESSON.headline(True, True)
    cub = next(r for r in rows if "cuBLAS" in r["experiment"])
    assert cub["measured"]["rel_err"] == pytest.approx(1e-3, rel=1e-2)
    assert "cublas_GFLOP/s" not in cub["measured"]
    assert cub["measured_text"].startswith("cuBLAS differs from gpumem: relative error 1.0")


def test_without_cupy_the_report_says_so(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", None)
    rows = matmul.LESSON.headline(True, True)
    assert rows[-1]["measured_text"] == "CuPy not importable: no cuBLAS to compare with"
    assert rows[-1]["measured"] == {}


def test_the_report_plots_matmuls_gflops_on_a_fake_gpu(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    rows = report.headlines(measure=True, quick=True, lessons=["matmul"])
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)     # the offset sweep: model only
    assert report.plot(rows, str(tmp_path), measure=True, quick=True) == [
        "access_gld_efficiency.png", "matmul.png"]


@pytest.mark.gpu
def test_report_headline_on_a_gpu():
    rows = matmul.LESSON.headline(True, False)
    mm = first_with(rows, "tiled_GFLOP/s")["measured"]
    assert mm["tiled_GFLOP/s"] > mm["naive_GFLOP/s"]
    if gm.profiler_available():
        assert mm["naive_gld_transactions"] > 10 * mm["tiled_gld_transactions"]
    cub = next(r for r in rows if "cuBLAS" in r["experiment"])
    try:
        importlib.import_module("cupy")
    except ImportError:
        assert cub["measured_text"].startswith("CuPy not importable")
    else:
        assert cub["measured"]["rel_err"] < 1e-4
        assert 0 < cub["measured"]["fastest_gpumem_over_cublas"] < 2


# ---- gpumem.model.predict -----------------------------------------------------------------
def test_predict_at_the_largest_launches_has_the_closed_form_counts():
    # matmul 16384^3, tile 16: each block column reads A once, each block row B
    # once, in full 64-byte rows (2 sectors per row, 2 rows per warp)
    r = predict("matmul", "tiled", m=16384, n=16384, k=16384, tile=16)
    reads = 2 * 16384 * 16384 * 1024                          # floats of A and B read
    assert r["gld_bytes_requested"] == 4 * reads == model.matmul_traffic(
        16384, 16384, 16384, "tiled", 16)["load_bytes"]
    assert (r["gld_requests"], r["gld_transactions"]) == (reads // 32, reads // 8)
    assert r["gst_transactions"] == 16384 * 16384 // 8
    # matmul warptiled 16384^3: every block reads, per 16-wide k step, its 16 x t tile of A
    # in A_LOADS = 2 float4 instructions per warp (8 rows of 64 bytes: 16 sectors each) and
    # copies its 16 x t tile of B in 2 float4 cp.async per warp (512 contiguous bytes, or 2
    # rows of 256: 16 sectors); C: 8 (t=128) or 4 (t=64) rows x 2 float4 per lane, each
    # instruction 8 rows of 64 bytes
    size = 16384
    for t, threads, rows in ((128, 256, 8), (64, 128, 4)):
        t0 = time.perf_counter()
        r = predict("matmul", "warptiled", m=size, n=size, k=size, tile=t)
        assert time.perf_counter() - t0 < 1.0
        blocks, steps, warps = (size // t) ** 2, size // 16, threads // 32
        req = blocks * steps * warps * 2
        for pre, times in (("gld", 2), ("gldgsts", 1)):      # gld: A and the copies of B
            assert (r[f"{pre}_requests"], r[f"{pre}_transactions"],
                    r[f"{pre}_bytes_requested"]) == (times * req, times * 16 * req,
                                                     times * 512 * req)
        # A once per block column, B once per block row
        assert r["gld_bytes_requested"] == 2 * 4 * size * size * (size // t)
        st = blocks * warps * rows * 2
        assert (r["gst_requests"], r["gst_transactions"], r["gst_bytes_requested"]) == \
            (st, 16 * st, 4 * size * size)
        assert r["gld_efficiency"] == r["gst_efficiency"] == 100.0
        tr = model.matmul_traffic(size, size, size, "warptiled", t)
        assert tr["load_bytes"] == r["gld_bytes_requested"]
        assert tr["cgma"] == t                      # as tiled's: t FLOPs per loaded float
    # matmul naive at its largest: exact Python ints far past 2^63
    r = predict("matmul", "naive", m=65535 * 32, n=2 ** 30 - 1, k=GMAX, tile=32)
    warps = 65535 * 32 * (2 ** 30 // 32)                       # one row of 32 columns each
    assert r["gld_requests"] == 2 * warps * GMAX > 2 ** 63


def test_predict_refuses_launches_gpumem_cannot_make():
    # matmul: 65535 block rows, 2^31 - 1 per dimension, 2^63 - 1 bytes per matrix
    for t in (8, 16, 32):
        assert predict("matmul", "tiled", m=65535 * t, n=5, k=5, tile=t)["gst_requests"] > 0
        with pytest.raises(ValueError, match=rf"m={65535 * t + 1} needs 65536 block rows "
                                             rf"with tile={t}.*m <= {65535 * t}"):
            predict("matmul", "naive", m=65535 * t + 1, n=5, k=5, tile=t)
    for name in ("n", "k"):
        p = dict(m=4, n=4, k=4, tile=16)
        p[name] = 2 ** 31
        with pytest.raises(ValueError, match=rf"{name}=2147483648 is too large.*2\*\*31 - 1"):
            predict("matmul", "tiled", **p)
    with pytest.raises(ValueError, match=r"k=2147483647 and n=2147483647: b \(k x n\)"):
        predict("matmul", "tiled", m=4, n=GMAX, k=GMAX)
    with pytest.raises(ValueError, match=r"model.matmul_traffic\(matmul/naive\): m=2097121"):
        model.matmul_traffic(65535 * 32 + 1, 4, 4, "naive", 32)
    with pytest.raises(ValueError, match="tile=12.*8, 16, 32"):
        predict("matmul", "tiled", m=4, n=4, k=4, tile=12)
    assert predict("matmul", "tiled", m=np.int32(40), n=np.int64(9), k=np.uint16(3),
                   tile=np.int64(8)) == predict("matmul", "tiled", m=40, n=9, k=3, tile=8)


def test_matmul_traffic_is_ints_and_names_itself():
    t = model.matmul_traffic(100, 37, 53, "tiled", 16)
    assert all(type(t[k]) is int for k in ("load_bytes", "store_bytes", "flops", "min_bytes"))
    assert t["cgma"] == round(2 * 100 * 37 * 53 / (53 * (3 * 100 + 7 * 37)), 4)
    with pytest.raises(ValueError, match="model.matmul_traffic: variant='x' is unknown"):
        model.matmul_traffic(4, 4, 4, "x")
    with pytest.raises(ValueError, match=r"model.matmul_traffic\(matmul/tiled\): tile=12"):
        model.matmul_traffic(4, 4, 4, "tiled", 12)
    with pytest.raises(TypeError, match=r"model.matmul_traffic\(matmul/tiled\): k must be an"):
        model.matmul_traffic(4, 4, 4.0)
    assert model.matmul_traffic(np.int64(64), np.int32(64), np.uint8(64)) == \
        model.matmul_traffic(64, 64, 64)


def test_launch_config_matches_the_launchers():
    assert model.launch_config("matmul", "tiled", m=33, n=70, k=5, tile=16) == \
        {"grid": (5, 3, 1), "block": (16, 16, 1)}
    assert model.launch_config("matmul", "register_tiled", m=130, n=65, k=5) == \
        {"grid": (2, 3, 1), "block": (16, 16, 1)}
    assert model.launch_config("matmul", "warptiled", m=130, n=129, k=5) == \
        {"grid": (2, 2, 1), "block": (256, 1, 1)}
    assert model.launch_config("matmul", "warptiled", m=130, n=129, k=5, tile=64) == \
        {"grid": (3, 3, 1), "block": (128, 1, 1)}
    with pytest.raises(ValueError, match="tile=32 is not allowed.*64, 128"):
        model.launch_config("matmul", "warptiled", m=4, n=4, k=4, tile=32)


def test_the_counters_launches_leave_out_wgmma_below_compute_capability_9_0():
    every = matmul.LESSON.model_counters(None)["cases"]
    assert {v for _, v, _ in every} == set(model.families()["matmul"])
    assert matmul.LESSON.model_counters((9, 0))["cases"] == every
    assert {v for _, v, _ in matmul.LESSON.model_counters((8, 0))["cases"]} == \
        set(model.families()["matmul"]) - {"wgmma"}


def test_the_tiles_are_stated_once_in_c():
    # issue 48: the C entry point says which tiles each variant takes (csrc/lessons/matmul.c);
    # the lesson reads them by check-only calls, the model keeps its own copy -- equal
    tile = next(r for r in gm._core.args("matmul") if r["name"] == "tile")
    assert tile["default"] is None          # the variant picks (below)
    took = matmul._tiles()
    assert set(took) == set(model.families()["matmul"])
    assert {t for ts in took.values() for t in ts} == set(tile["allowed"])
    spec = model.registry._registry()["matmul"]["tiles"]
    assert {v: ts for v, (_, ts) in spec.items()} == took
    # each variant's default tile: the one a call too tall for it names (no GPU needed)
    m = 65535 * max(tile["allowed"]) + 1
    a, b = np.ones((m, 0), np.float32), np.ones((0, 1), np.float32)
    with gm.runtime.args._checking():
        for v, (default, _) in spec.items():
            with pytest.raises(ValueError, match=rf"too large for one launch with tile={default} "):
                gm._core.matmul(a, b, variant=v)
    # the lesson's sanitizer and the model's launches cover every variant's every tile
    assert {(v, p["tile"]) for _, v, p in matmul.LESSON.model_counters(None)["cases"]} == \
        {(v, t) for v, ts in took.items() for t in ts}
