"""gpumem.transpose: transpose and shared_stride -- validation, references and the
model without a GPU; every variant against a.T on awkward shapes with poisoned
outputs, and the model against the hardware counters, on a GPU."""
import numpy as np
import pytest

import gpumem as gm
from gpumem import experiments, model
from gpumem.model.registry import _predict_reference
from gpumem.lessons.transpose import (TRANSPOSE_VARIANTS, shared_stride_reference,
                              transpose_reference)

from _helpers import f32, poisoned
from gpumem.lessons import transpose as lesson
from _fake_gpu import FakeGPU, first_with

M = np.ones((3, 4), np.float32)
SHAPES = [(1, 1), (1, 37), (37, 1), (33, 31), (64, 68), (300, 257), (129, 1000), (1000, 4),
          (4, 1000), (96, 100)]


# ---- tables, references, validation (no GPU) ------------------------------------------
def test_variants_table():
    vs = {v.name: v for v in gm.variants("transpose")}
    assert tuple(vs) == TRANSPOSE_VARIANTS == ("naive_row", "naive_col", "shared", "padded",
                                               "swizzled", "coarsened")
    assert all(v.bytes == "8*M*N" and v.flops == "0" for v in vs.values())
    assert "tile[32][33]" in vs["padded"].idea and "c ^ r" in vs["swizzled"].idea
    assert [v.name for v in gm.variants("shared_stride")] == ["float", "float2", "float4"]
    assert tuple(lesson.WORDS) == next(r["choices"] for r in gm._core.args("shared_stride")
                                if r["name"] == "word")     # issue 48: the C table's words


def test_reference_is_a_contiguous_float32_transpose(rng):
    a = f32(rng, 5, 7)
    t = transpose_reference(a)
    assert t.shape == (7, 5) and t.flags.c_contiguous and t.dtype == np.float32
    np.testing.assert_array_equal(t, a.T)


def test_shared_stride_reference_by_hand():
    # lane l reads element (l * stride + 32 i) % 4096 of e % 7
    r = shared_stride_reference(3, "float", iters=2, blocks=1)
    assert r.shape == (256,)
    assert r[5] == (15 % 7) + ((15 + 32) % 7)
    assert np.array_equal(r[:32], r[32:64])
    r4 = shared_stride_reference(1, "float4", iters=1, blocks=1)
    assert r4[9] == 9 % 7 + 9 % 5 + 9 % 3 + 9 % 2


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: gm.transpose(M, variant="tiled"), ValueError,
     r"transpose: variant='tiled' is unknown; allowed: 'naive_row', 'naive_col'"),
    (lambda: gm.transpose(np.ones(3, np.float32)), ValueError, r"transpose: a must be 2-D"),
    (lambda: gm.transpose(np.ones((3, 4))), TypeError, r"transpose: a has dtype"),
    (lambda: gm.transpose(None), TypeError, r"transpose: a must be a numpy.ndarray"),
    (lambda: gm.transpose(M, variant=3), TypeError, r"transpose: variant must be a str"),
    (lambda: gm.transpose(np.broadcast_to(np.float32(0), (65535 * 32 + 1, 1))), ValueError,
     r"transpose: a is \(2097121, 1\), too large for one launch"),
    (lambda: gm.shared_stride(0), ValueError, r"shared_stride: stride=0 is not allowed; stride "
                                              r"must be 1\.\.32"),
    (lambda: gm.shared_stride(33), ValueError, r"stride must be 1\.\.32"),
    (lambda: gm.shared_stride(True), TypeError, r"shared_stride: stride must be an int"),
    (lambda: gm.shared_stride(1, word="double"), ValueError,
     r"shared_stride: word='double' is unknown; allowed: 'float', 'float2', 'float4'"),
    (lambda: gm.shared_stride(1, iters=0), ValueError, r"iters must be 1\.\.65536"),
    (lambda: gm.shared_stride(1, blocks=2**20 + 1), ValueError, r"blocks must be 1\.\.1048576"),
    (lambda: gm.shared_stride(1, iters=2.0), TypeError, r"shared_stride: iters must be an int"),
])
def test_bad_arguments_name_themselves_before_any_device_call(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_reference_arguments_are_checked():
    with pytest.raises(ValueError, match="shared_stride_reference: stride=40"):
        shared_stride_reference(40)
    with pytest.raises(ValueError, match="word='half' is unknown"):
        shared_stride_reference(1, "half")


# ---- the model (no GPU) -------------------------------------------------------------
@pytest.mark.parametrize("variant", TRANSPOSE_VARIANTS)
@pytest.mark.parametrize("m, n", SHAPES)
def test_model_fast_path_equals_warp_by_warp(variant, m, n):
    assert model.predict("transpose", variant, m=m, n=n) == \
        _predict_reference("transpose", variant, m=m, n=n)


def test_model_known_values_8192():
    n = 8192
    sectors = n * n // 8                                # every float moved once, 8 per sector
    row = model.predict("transpose", "naive_row", m=n, n=n)
    assert row["gld_transactions"] == sectors and row["gld_efficiency"] == 100.0
    assert row["gst_transactions"] == n * n and row["gst_efficiency"] == 12.5  # a sector a float
    col = model.predict("transpose", "naive_col", m=n, n=n)
    assert (col["gld_efficiency"], col["gst_efficiency"]) == (12.5, 100.0)
    sh = model.predict("transpose", "shared", m=n, n=n)
    warp_reads = n * n // 32                            # one LDS per 32 floats
    assert sh["shared_load_requests"] == warp_reads
    assert sh["shared_load_transactions"] == 32 * warp_reads       # 32-way
    assert sh["shared_store_bank_conflict"] == 0
    for v in ("padded", "swizzled"):
        p = model.predict("transpose", v, m=n, n=n)
        assert p["shared_load_transactions"] == warp_reads and p["shared_load_bank_conflict"] == 0
        assert (p["gld_transactions"], p["gst_transactions"]) == (sectors, sectors)
    c = model.predict("transpose", "coarsened", m=n, n=n)
    # float4 in and out: 4x fewer global requests, the same sectors; the 16-byte
    # shared stores take 4 wavefronts each (the width, no conflict)
    assert c["gld_requests"] == n * n // 128 and c["gld_transactions"] == sectors
    assert c["shared_store_transactions"] == 4 * c["shared_store_requests"]
    assert c["shared_load_bank_conflict"] == 0


def test_model_coarsened_falls_back_to_scalar_tiles_off_multiples_of_4():
    assert model.launch_config("transpose", "coarsened", m=64, n=68) == \
        {"grid": (2, 1, 1), "block": (32, 16, 1)}
    assert model.launch_config("transpose", "coarsened", m=65, n=68) == \
        {"grid": (3, 3, 1), "block": (32, 4, 1)}
    assert model.launch_config("transpose", "padded", m=65, n=68)["block"] == (32, 8, 1)


@pytest.mark.parametrize("word, width", [("float", 4), ("float2", 8), ("float4", 16)])
def test_model_shared_stride_ways(word, width):
    for stride in range(1, 33):
        p = model.predict("shared_stride", word, stride=stride, iters=10, blocks=3)
        reads = 3 * 8 * 10
        lanes = [width * stride * lane for lane in range(32)]
        assert p["shared_load_requests"] == reads
        assert p["shared_load_transactions"] == reads * model.bank_conflicts(lanes, width).wavefronts
        assert p == _predict_reference("shared_stride", word, stride=stride, iters=10, blocks=3)
    # 4-byte words: the ways are the power of two in the stride
    assert model.predict("shared_stride", "float", stride=12, iters=1, blocks=1)[
        "shared_load_transactions"] == 8 * 4


def test_model_refuses_what_the_kernels_refuse():
    with pytest.raises(ValueError, match="stride=33"):
        model.predict("shared_stride", "float", stride=33)
    with pytest.raises(ValueError, match="m=2097121 is too large"):
        model.predict("transpose", "padded", m=65535 * 32 + 1, n=1)
    with pytest.raises(ValueError, match="needs parameter 'm'"):
        model.predict("transpose", "padded", n=4)


def test_experiments_run_on_the_model_without_a_gpu(no_gpu):
    t = experiments.transpose_compare(300, 257, progress=False)
    assert [r["variant"] for r in t.rows] == list(TRANSPOSE_VARIANTS)
    assert t.sources["shared_load_bank_conflict"] == "model"
    shared = t.rows[2]
    assert shared["shared_load_bank_conflict"] > 25 * t.rows[3]["shared_load_transactions"]
    s = experiments.bank_conflict_sweep([1, 2, 32], ["float"], progress=False)
    assert [r["wavefronts/read"] for r in s.rows] == [1, 2, 32]
    assert "ms" not in s.columns


# ---- on a GPU ----------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("variant", TRANSPOSE_VARIANTS)
def test_every_variant_is_a_T_on_awkward_shapes(variant, rng, no_leak):
    for m, n in SHAPES + [(int(rng.integers(1, 700)), int(rng.integers(1, 700)))]:
        a = f32(rng, m, n)
        out = poisoned((n, m))
        got = gm.transpose(gm.to_device(a), variant=variant, out=out)
        assert got is out
        np.testing.assert_array_equal(out.get(), a.T, err_msg=f"{variant} {m}x{n}")
        np.testing.assert_array_equal(gm.transpose(a, variant=variant), a.T)


@pytest.mark.gpu
def test_empty_and_the_next_call_works(rng, no_leak):
    e = gm.transpose(np.ones((0, 5), np.float32))
    assert e.shape == (5, 0) and e.dtype == np.float32
    a = f32(rng, 3, 2)
    np.testing.assert_array_equal(gm.transpose(a), a.T)


@pytest.mark.gpu
@pytest.mark.parametrize("word", ["float", "float2", "float4"])
def test_shared_stride_sums_are_exact(word, rng, no_leak):
    for stride in (1, 2, 3, 8, 17, 32, int(rng.integers(1, 33))):
        iters, blocks = int(rng.integers(1, 300)), int(rng.integers(1, 5))
        out = poisoned((blocks * 256,))
        gm.shared_stride(stride, word=word, iters=iters, blocks=blocks, out=out)
        np.testing.assert_array_equal(out.get(),
                                      shared_stride_reference(stride, word, iters, blocks))


COUNTERS = ("gld_requests", "gld_transactions", "gst_requests", "gst_transactions",
            "shared_load_transactions", "shared_store_transactions")


@pytest.mark.gpu
def test_model_equals_the_counters_for_every_transpose(rng):
    if not gm.profiler_available():
        pytest.fail("hardware counters cannot be read on this GPU machine")
    cases = [(v, m, n) for v in TRANSPOSE_VARIANTS
             for m, n in ((300, 257), (64, 68), (128, 96), (37, 1), (1000, 4))]
    with gm.profile(list(COUNTERS)) as p:
        for v, m, n in cases:
            gm.transpose(f32(rng, m, n), variant=v)
    bad = []
    for (v, m, n), r in zip(cases, p.records):
        want = model.predict("transpose", v, m=m, n=n)
        for k in COUNTERS:
            if r.metrics[k] != want[k]:
                bad.append(f"{v} {m}x{n} {k}: hardware {r.metrics[k]:g}, model {want[k]}")
    assert not bad, "\n".join(bad)


@pytest.mark.gpu
def test_model_equals_the_counters_for_every_stride():
    if not gm.profiler_available():
        pytest.fail("hardware counters cannot be read on this GPU machine")
    cases = [(w, s) for w in ("float", "float2", "float4") for s in (1, 2, 3, 4, 8, 16, 31, 32)]
    names = ["shared_load_transactions", "shared_store_transactions", "gst_transactions"]
    with gm.profile(names) as p:
        for w, s in cases:
            gm.shared_stride(s, word=w, iters=64, blocks=6)
    bad = []
    for (w, s), r in zip(cases, p.records):
        want = model.predict("shared_stride", w, stride=s, iters=64, blocks=6)
        for k in names:
            if r.metrics[k] != want[k]:
                bad.append(f"{w} stride {s} {k}: hardware {r.metrics[k]:g}, model {want[k]}")
    assert not bad, "\n".join(bad)


@pytest.mark.gpu
def test_compare_and_sweep_measure(rng):
    t = experiments.transpose_compare(512, 384, repeat=3, progress=False)
    assert all(r["ms"] > 0 and r["x copy"] > 0 for r in t.rows)
    assert t.sources["ms"] == "measured"
    shared = {r["variant"]: r for r in t.rows}["shared"]
    assert shared["shared_load_bank_conflict"] == shared["shared_load_bank_conflict_model"]
    s = experiments.bank_conflict_sweep([1, 32], ["float"], repeat=3,
                                        progress=False)
    one, thirty_two = s.rows
    # the counters add a wavefront in 10^4 or so at this size (the model counts none)
    assert one["wavefronts/read"] == pytest.approx(1, rel=1e-3)
    assert thirty_two["wavefronts/read"] == pytest.approx(32, rel=1e-3)
    assert thirty_two["vs stride 1"] > 4          # 32 wavefronts a read cannot be hidden


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the fake GPU (the stand-ins transpose declares)
def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    tr = first_with(lesson.LESSON.headline(True, True), "padded_x_copy")
    assert tr["measured"]["padded_x_copy"] == pytest.approx(1 / 1.1)
    assert tr["measured"]["shared_shared_load_bank_conflict"] == 1.6e7
    assert "coarsened reaches 0.95x of a copy" in tr["takeaway"]
