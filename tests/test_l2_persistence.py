"""gpumem.lessons.l2_persistence: a hot set reused while a cold stream flows past it, with and
without an access-policy window.

Without a GPU: the variant table, the reference, every bad argument of every function
(refused before the device is touched), the sweep's model-only table, the report's unmeasured
row.  On a GPU: hot_cold (both variants, with and without a window) against its reference on
poisoned outputs of awkward sizes; the counters of a launch against the model; the window path
leaving L2 as it found it -- the set-aside limit, the legacy stream's window -- after a call
that succeeds, after calls that fail at each stage and after a call refused mid-way; the
sweep's table and the window's effect at one size."""
import numpy as np
import pytest

import gpumem as gm
from gpumem import experiments
from gpumem.lessons import l2_persistence as l2p
from gpumem.lessons.l2_persistence import hot_cold_reference
from gpumem.model import l2_persistence as model

from _helpers import huge, poisoned

gpu = pytest.mark.gpu
MiB = 1 << 20
W = gm._core._hot_cold_window


# ---- tables, reference, declaration (no GPU) ----------------------------------------------
def test_variants_table():
    p, cs = gm.variants("hot_cold")
    assert (p.name, p.select, cs.name, cs.select) == ("plain", 0, "cold_streaming", 1)
    assert p.bytes == cs.bytes == "4*n_cold*(2 + reuse)"
    assert "sm_80+" in p.idea and "ld.global.cs" in cs.idea
    assert gm.hot_cold is l2p.hot_cold
    assert experiments.persistence_sweep is l2p.persistence_sweep
    assert "l2_persistence" in gm.lessons.LESSONS
    assert l2p.LESSON.notebooks == ("12_l2_persistence",)
    assert l2p.LESSON.benchmark == "l2_persistence"
    assert l2p.WINDOW_CC == (8, 0)


def test_reference_by_hand():
    hot = np.array([1, 2, 4], np.float32)
    cold = np.array([10, 20, 30, 40, 50], np.float32)
    # i + j*5 mod 3: j=0 -> i mod 3, j=1 -> (i+2) mod 3
    np.testing.assert_array_equal(hot_cold_reference(hot, cold, 1), [11, 22, 34, 41, 52])
    np.testing.assert_array_equal(hot_cold_reference(hot, cold, 2), [15, 23, 36, 45, 53])
    one = hot_cold_reference(np.array([0.5], np.float32), np.zeros(4, np.float32), 3)
    np.testing.assert_array_equal(one, [1.5] * 4)


_H, _C = np.ones(8, np.float32), np.ones(40, np.float32)
BAD = [
    (lambda: gm.hot_cold(np.ones(0, np.float32), _C), ValueError, "hot_cold: hot is empty"),
    (lambda: gm.hot_cold(_H, _C, reuse=0), ValueError, "hot_cold: reuse=0"),
    (lambda: gm.hot_cold(_H, _C, reuse=65), ValueError, "hot_cold: reuse=65"),
    (lambda: gm.hot_cold(_H, _C, reuse=True), TypeError, "hot_cold: reuse"),
    (lambda: gm.hot_cold(_H, _C, reuse=2.0), TypeError, "hot_cold: reuse"),
    (lambda: gm.hot_cold(_H, _C, variant="lru"), ValueError, "variant='lru'"),
    (lambda: gm.hot_cold(_H, _C, block=100), ValueError, "hot_cold: block=100"),
    (lambda: gm.hot_cold(_H.astype(np.float64), _C), TypeError, "hot_cold: hot"),
    (lambda: gm.hot_cold(_H, np.ones((4, 10), np.float32)), ValueError, "hot_cold: cold must be 1-D"),
    (lambda: gm.hot_cold(_H, _C, out=np.ones(40, np.float32)), TypeError, "hot_cold: out"),
    (lambda: gm.hot_cold(_H, huge(2**40)), ValueError, "hot_cold: cold has 1099511627776"),
    (lambda: gm.hot_cold(_H, _C, hit_ratio=0.5), ValueError, "need window=True"),
    (lambda: gm.hot_cold(_H, _C, set_aside=MiB), ValueError, "need window=True"),
    (lambda: gm.hot_cold(_H, _C, window=1), TypeError, "hot_cold: window must be"),
    (lambda: gm.hot_cold(_H, _C, window=True, variant="cold_streaming"), ValueError,
     "is not allowed with window=True"),
    (lambda: gm.hot_cold(_H, _C, window=True, block=128), ValueError, "block=128"),
    (lambda: gm.hot_cold(_H, _C, window=True, hit_ratio=None), TypeError, "hit_ratio must be"),
    # the window path: every argument checked before the device
    (lambda: W(_H, _C, None, 2, 1.5), ValueError, r"_hot_cold_window: hit_ratio=1.5 is not "
     "allowed; hit_ratio must be in [0, 1]"),
    (lambda: W(_H, _C, None, 2, -0.25), ValueError, "hit_ratio=-0.25"),
    (lambda: W(_H, _C, None, 2, float("nan")), ValueError, "hit_ratio=nan"),
    (lambda: W(_H, _C, None, 2, float("inf")), ValueError, "hit_ratio=inf"),
    (lambda: W(_H, _C, None, 2, True), TypeError, "_hot_cold_window: hit_ratio must be a real"),
    (lambda: W(_H, _C, None, 2, "1"), TypeError, "_hot_cold_window: hit_ratio must be a real"),
    (lambda: W(_H, _C, None, 2, None, set_aside=MiB), ValueError,
     "set_aside=1048576 is not allowed without a window"),
    (lambda: W(_H, _C, None, 2, 1.0, set_aside=-1), ValueError, "set_aside=-1"),
    (lambda: W(_H, _C, None, 0, 1.0), ValueError, "_hot_cold_window: reuse=0"),
    (lambda: W(_H, _C, None, 65, 1.0), ValueError, "_hot_cold_window: reuse=65"),
    (lambda: W(_H, _C, None, 2, 1.0, repeat=0), ValueError, "repeat=0"),
    (lambda: W(_H, _C, None, 2, 1.0, fault=4), ValueError, "fault=4"),
    (lambda: W(np.ones(0, np.float32), _C, None, 2, 1.0), ValueError, "hot is empty"),
    (lambda: W(_H, np.ones(0, np.float32), None, 2, 1.0), ValueError, "cold is empty"),
    (lambda: W(_H.reshape(2, 4), _C, None, 2, 1.0), ValueError, "hot must be 1-D"),
    (lambda: W(_H.astype(np.float16), _C, None, 2, 1.0), TypeError, "_hot_cold_window: hot"),
    (lambda: W(_H, [1.0, 2.0], None, 2, 1.0), TypeError, "_hot_cold_window: cold"),
    (lambda: W(_H, _C, np.ones(40, np.float32), 2, 1.0), TypeError, "out must be a gpumem"),
    (lambda: W(_H, huge(2**40), None, 2, 1.0), ValueError, "cold has 1099511627776"),
    # the reference, the model and the sweep
    (lambda: hot_cold_reference(np.ones(0, np.float32), _C), ValueError, "hot is empty"),
    (lambda: hot_cold_reference(_H, _C, 0), ValueError, "hot_cold_reference: reuse=0"),
    (lambda: model.hot_cold_counts(0, 5), ValueError, "hot_cold_counts: n_hot=0"),
    (lambda: model.hot_cold_counts(5, 5, 65), ValueError, "hot_cold_counts: reuse=65"),
    (lambda: model.hot_cold_counts(5, 5.0), TypeError, "hot_cold_counts: n_cold must be an int"),
    (lambda: model.hot_cold_counts(5, 5, block=100), ValueError, "block=100"),
    (lambda: model.reuse_distance_bytes(True), TypeError, "reuse_distance_bytes: n_hot"),
    (lambda: l2p.persistence_sweep([]), ValueError, "persistence_sweep: hot_mib"),
    (lambda: l2p.persistence_sweep([0]), ValueError, "persistence_sweep: hot_mib=0"),
    (lambda: l2p.persistence_sweep([4], hit_ratios=[1.5]), ValueError, "hit_ratios: 1.5"),
    (lambda: l2p.persistence_sweep([4], hit_ratios=[True]), TypeError, "hit_ratios must hold"),
    (lambda: l2p.persistence_sweep([4], hit_ratios=None), TypeError, "hit_ratios must be"),
    (lambda: l2p.persistence_sweep([4], cold_mib=0), ValueError, "cold_mib=0"),
    (lambda: l2p.persistence_sweep([4], reuse=0), ValueError, "reuse=0"),
    (lambda: l2p.persistence_sweep([4], repeat=0), ValueError, "repeat=0"),
    (lambda: l2p.persistence_sweep([4], counters=2), TypeError, "counters must be"),
]


@pytest.mark.parametrize("call, exc, msg", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_every_bad_argument_is_refused_by_name(call, exc, msg):
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace("[", r"\[")):
        call()


def test_sweep_without_a_gpu_is_the_model(no_gpu):
    t = l2p.persistence_sweep([4, 32], hit_ratios=[0.0, 1.0], cold_mib=64, reuse=2)
    assert len(t.rows) == 2 * 4
    assert [r["case"] for r in t.rows[:4]] == ["none", "cold_streaming", "window hit_ratio=0",
                                               "window hit_ratio=1"]
    r = t.rows[4]
    assert r["hot_MiB"] == 32 and r["ms"] is None and r["l2_hit_rate"] is None
    assert r["requested_MiB"] == 64 * 4 and r["hot_requested_MiB"] == 128
    assert r["reuse_distance_MiB"] == 32 + 32


def test_report_without_a_gpu():
    (row,) = l2p._headline(False, True)
    assert row["lesson"] == "l2_persistence" and row["measured"] == {}
    assert row["measured_text"].startswith("would measure: ")
    assert row["model"]["requested_MiB"] == 1024 and row["model"]["hot_requested_MiB"] == 512
    assert row["model"]["reuse_distance_MiB"] == 64
    assert "1024 MiB requested" in row["model_text"]


def test_report_rows_from_measured_numbers(monkeypatch):
    monkeypatch.setattr(l2p, "_head_rows", lambda quick: [
        {"case": "none", "ms": 0.5, "l2_hit_rate": 40.0},
        {"case": "window hit_ratio=1", "ms": 0.4, "l2_hit_rate": 65.0}])
    (row,) = l2p._headline(True, True)
    assert row["measured"] == {"none_ms": 0.5, "window_ms": 0.4, "none_over_window": 1.25,
                               "none_l2_hit_rate": 40.0, "window_l2_hit_rate": 65.0}
    assert "(1.25x); L2 hit rate 40% -> 65%" in row["measured_text"]
    monkeypatch.setattr(l2p, "_head_rows", lambda quick: [
        {"case": "none", "ms": 0.5, "l2_hit_rate": 40.0},
        {"case": "window hit_ratio=1", "ms": None, "note": "no access-policy window"}])
    (row,) = l2p._headline(True, True)
    assert row["measured"] == {} and row["measured_text"] == "no access-policy window"


def test_report_sweep_unmeasured_is_the_model():
    (t,) = l2p._report_sweeps(False, True, False)
    assert [r["hot_MiB"] for r in t.rows[::5]] == list(l2p.HOT_MIB[::2])
    assert all(r["ms"] is None and r["note"] == "not measured: model only" for r in t.rows)


# ---- the kernel on a GPU -------------------------------------------------------------------
@gpu
@pytest.mark.parametrize("variant", ["plain", "cold_streaming"])
def test_hot_cold_matches_the_reference(variant, rng, no_leak):
    for n_hot, n_cold, reuse, block in ((1, 1, 1, 32), (5, 33, 3, 96), (31, 1001, 2, 256),
                                        (1000, 4099, 5, 1024), (4097, 70_001, 7, 256),
                                        (int(rng.integers(10_000, 20_000)), 300_007, 2, 128)):
        hot = rng.standard_normal(n_hot, dtype=np.float32)
        cold = rng.standard_normal(n_cold, dtype=np.float32)
        out = poisoned((n_cold,))
        got = gm.hot_cold(gm.to_device(hot), gm.to_device(cold), reuse=reuse, variant=variant,
                          block=block, out=out)
        assert got is out
        np.testing.assert_array_equal(out.get(), hot_cold_reference(hot, cold, reuse),
                                      err_msg=f"{n_hot} {n_cold} {reuse} {block}")
    host = gm.hot_cold(hot, cold, reuse=2, variant=variant)
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, hot_cold_reference(hot, cold, 2))


def _windows_here() -> bool:
    st = l2p.l2_state()
    return tuple(st["compute_capability"]) >= (8, 0) and st["max_persisting"] > 0


@gpu
def test_window_path_matches_the_reference_and_restores_l2(rng, no_leak):
    if not _windows_here():
        with pytest.raises(gm.CudaError, match="needs compute capability 8.0"):
            W(np.ones(8, np.float32), np.ones(8, np.float32), None, 1, 1.0)
        return
    before = l2p.l2_state()
    assert before["window_bytes"] == 0
    for n_hot, n_cold, reuse in ((1, 1, 1), (33, 1001, 3), (40_003, 200_001, 2)):
        hot = rng.standard_normal(n_hot, dtype=np.float32)
        cold = rng.standard_normal(n_cold, dtype=np.float32)
        ref = hot_cold_reference(hot, cold, reuse)
        for hit in (None, 0.0, 0.5, 1.0):
            out = poisoned((n_cold,))
            assert W(gm.to_device(hot), gm.to_device(cold), out, reuse, hit) is out
            np.testing.assert_array_equal(out.get(), ref, err_msg=f"{n_hot} {n_cold} {hit}")
            assert l2p.l2_state() == before
        got = gm.hot_cold(hot, cold, reuse=reuse, window=True, hit_ratio=0.5)
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, ref)
    # set_aside: explicit, zero and the largest the GPU allows
    for aside in (0, 4096, before["max_persisting"]):
        W(hot, cold, None, 2, 1.0, set_aside=aside)
        assert l2p.l2_state() == before


@gpu
def test_a_gpu_below_sm80_is_refused_before_l2_changes(pretend_cc, no_leak):
    """The C refusal (gm_need_cc) through a pretended compute capability 7.5: CudaError
    naming the window and both capabilities, and the L2 as it was."""
    if not _windows_here():
        pytest.skip("no access-policy window below compute capability 8.0")
    before = l2p.l2_state()
    pretend_cc(7, 5)
    with pytest.raises(gm.CudaError, match=r"^_hot_cold_window: an access-policy window needs "
                                           r"compute capability 8\.0 or newer \(.*\); this GPU "
                                           r"has compute capability 7\.5$") as e:
        W(np.ones(8, np.float32), np.ones(8, np.float32), None, 1, 1.0)
    assert e.value.code == 801
    assert l2p.l2_state() == before
    pretend_cc(0, 0)
    out = W(np.ones(8, np.float32), np.ones(8, np.float32), None, 1, 1.0)
    out = out.get() if isinstance(out, gm.DeviceArray) else out
    np.testing.assert_array_equal(out, hot_cold_reference(np.ones(8, np.float32),
                                                          np.ones(8, np.float32), 1))
    assert l2p.l2_state() == before


@gpu
def test_nothing_outlives_a_failed_call(rng, no_leak):
    if not _windows_here():
        pytest.skip("no access-policy window below compute capability 8.0")
    before = l2p.l2_state()
    hot = gm.to_device(rng.standard_normal(5000, dtype=np.float32))
    cold = gm.to_device(rng.standard_normal(20_000, dtype=np.float32))
    for fault in (1, 2, 3):               # after the set-aside, after the window, after a launch
        with pytest.raises(RuntimeError, match=f"fault={fault}"):
            W(hot, cold, None, 2, 1.0, set_aside=1 << 20, fault=fault)
        assert l2p.l2_state() == before, fault
    # refused after the device was asked for its limits
    with pytest.raises(ValueError, match="set_aside=.* this GPU sets aside at most"):
        W(hot, cold, None, 2, 1.0, set_aside=before["max_persisting"] + 1)
    big = gm.empty((before["max_window"] // 4 + 1,))
    with pytest.raises(ValueError, match="an access-policy window covers at most"):
        W(big, cold, None, 2, 1.0)
    out = gm.empty((20_000,))
    with pytest.raises(ValueError, match="out must not share memory with hot or cold"):
        W(hot, out, out, 2, 1.0)
    assert l2p.l2_state() == before
    # and the next call works
    got = W(hot, cold, None, 2, 1.0).get()
    np.testing.assert_array_equal(got, hot_cold_reference(hot.get(), cold.get(), 2))
    assert l2p.l2_state() == before


@gpu
def test_counters_match_the_model(rng, counters, no_leak):
    for n_hot, n_cold, reuse in ((7, 1001, 3), (1000, 40_003, 2), (262_147, 1 << 20, 4)):
        hot = gm.to_device(rng.standard_normal(n_hot, dtype=np.float32))
        cold = gm.to_device(rng.standard_normal(n_cold, dtype=np.float32))
        want = model.hot_cold_counts(n_hot, n_cold, reuse)
        names = ["gld_requests", "gld_transactions", "gst_requests", "gst_transactions"]
        with gm.profile(names) as p:
            gm.hot_cold(hot, cold, reuse=reuse)
            if _windows_here():
                W(hot, cold, None, reuse, 1.0)
        for r in p.records:
            for m in names:
                assert r.metrics[m] == want[m], (n_hot, n_cold, reuse, m)


@gpu
def test_the_window_keeps_the_hot_set(counters, no_leak):
    if not _windows_here():
        pytest.skip("no access-policy window below compute capability 8.0")
    st = l2p.l2_state()
    hot = min(32, st["max_persisting"] // MiB // 2 * 2)
    t = l2p.persistence_sweep([hot], hit_ratios=[0.0, 1.0], cold_mib=256, repeat=5,
                              progress=False)
    by = {r["case"]: r for r in t.rows}
    none, win = by["none"], by["window hit_ratio=1"]
    assert all(r["ms"] > 0 for r in t.rows)
    # the persisting hot set is read from L2: fewer bytes from device memory, more hits
    assert win["dram_read_MiB"] < none["dram_read_MiB"], (win, none)
    assert win["l2_hit_rate"] > none["l2_hit_rate"], (win, none)
    assert l2p.l2_state() == st
