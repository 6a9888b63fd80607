"""gpumem.lessons.allocation: what allocating costs, cudaFree's implicit synchronization,
and first_touch into fresh against reused memory.

Without a GPU: the variant table, the reference, every bad argument of every function
(refused before the device is touched), the experiments refusing by name, the report's
unmeasured rows and the timeline plot on a hand-made table.  On a GPU: first_touch
against its reference on poisoned outputs (every element, both variants, awkward sizes,
outputs off a 16-byte boundary); pool reuse faster than cudaMalloc; cudaFree waiting for
a spin kernel while cudaFreeAsync does not; fresh and reused both measured and recorded;
the counters read for both; nothing left behind."""
import inspect
import math

import numpy as np
import pytest

import gpumem as gm
from gpumem import experiments
from gpumem.lessons import allocation
from gpumem.lessons.allocation import first_touch_reference

from _helpers import poisoned
from _fake_gpu import FakeGPU

gpu = pytest.mark.gpu
MiB = 1 << 20


# ---- tables, reference, declaration (no GPU) ----------------------------------------------
def test_variants_table():
    w, p = gm.variants("first_touch")
    assert (w.name, w.bytes, w.flops, w.select) == ("write", "4*n", "0", 0)
    assert (p.name, p.bytes, p.select) == ("page", "4*ceil(n/16384)", 1)
    assert "16-byte" in w.idea and "64 KiB" in p.idea
    assert gm.first_touch is allocation.first_touch
    assert experiments.alloc_cost_sweep is allocation.alloc_cost_sweep
    assert set(allocation.KINDS) == {"cudaMalloc", "pool", "pool_first", "managed", "host"}
    # what the lesson documents and defaults to is what its C functions take (issue 48)
    rows = {r["name"]: r for r in gm._core.args("_alloc_cost")}
    assert tuple(allocation.KINDS) == rows["kind"]["choices"]
    params = inspect.signature(allocation.alloc_cost_sweep).parameters
    assert params["host_max"].default == rows["host_max"]["default"]
    assert allocation.SIZES[0] == 4096 and allocation.SIZES[-1] == 4 << 30
    assert allocation.TOUCH_SIZES[0] == MiB and allocation.TOUCH_SIZES[-1] == 1 << 30
    assert "allocation" in gm.lessons.LESSONS
    assert allocation.LESSON.notebooks == ("10_allocation",)
    assert allocation.LESSON.benchmark == "allocation"


def test_reference():
    ref = first_touch_reference(5)
    np.testing.assert_array_equal(ref, [0, 1, 2, 3, 4])
    big = first_touch_reference((1 << 24) + 3)
    assert big[(1 << 24) + 2] == 2.0 and big[(1 << 24) - 1] == float((1 << 24) - 1)
    page = first_touch_reference(40000, touch="page")
    written = np.flatnonzero(~np.isnan(page))
    np.testing.assert_array_equal(written, [0, 16384, 32768])
    np.testing.assert_array_equal(page[written], [0, 16384, 32768])
    assert first_touch_reference(np.int64(3), "page").tolist()[0] == 0.0


_huge = 1 << 41
BAD = [
    (lambda: gm.first_touch(0), ValueError, "first_touch: n=0"),
    (lambda: gm.first_touch(True), TypeError, "first_touch: n must be an int"),
    (lambda: gm.first_touch(3.0), TypeError, "first_touch: n must be an int"),
    (lambda: gm.first_touch(None), TypeError, "first_touch: n must be an int"),
    (lambda: gm.first_touch(2**33), ValueError, "first_touch: n=8589934592"),
    (lambda: gm.first_touch(8, touch="read"), ValueError, "touch='read'"),
    (lambda: gm.first_touch(8, touch=1), TypeError, "first_touch: touch"),
    (lambda: gm.first_touch(8, block=100), ValueError, "first_touch: block=100"),
    (lambda: gm.first_touch(8, block=None), TypeError, "first_touch: block must be"),
    (lambda: gm.first_touch(8, out=np.ones(8, np.float32)), TypeError, "first_touch: out"),
    (lambda: first_touch_reference(0), ValueError, "first_touch_reference: n=0"),
    (lambda: first_touch_reference(4, touch="x"), ValueError, "first_touch_reference: touch"),
    (lambda: first_touch_reference(4, touch=None), TypeError, "first_touch_reference: touch"),
    (lambda: first_touch_reference(False), TypeError, "first_touch_reference: n must be"),
    (lambda: allocation.alloc_cost_sweep([]), ValueError, "alloc_cost_sweep: sizes is empty"),
    (lambda: allocation.alloc_cost_sweep([0]), ValueError, "alloc_cost_sweep: sizes=0"),
    (lambda: allocation.alloc_cost_sweep([_huge]), ValueError, "alloc_cost_sweep: sizes="),
    (lambda: allocation.alloc_cost_sweep([4.0]), TypeError, "alloc_cost_sweep: sizes must be"),
    (lambda: allocation.alloc_cost_sweep([4096], kinds=["malloc"]), ValueError, "kind='malloc'"),
    (lambda: allocation.alloc_cost_sweep([4096], repeat=0), ValueError, "repeat=0"),
    (lambda: allocation.alloc_cost_sweep([4096], repeat=True), TypeError, "repeat must be"),
    (lambda: allocation.alloc_cost_sweep([4096], host_max=0), ValueError, "host_max=0"),
    (lambda: allocation.alloc_cost_sweep([4096], progress=1), TypeError, "progress must be"),
    (lambda: allocation.alloc_cost_sweep([8192], kinds="host", host_max=4096), ValueError,
     "alloc_cost_sweep: every size is above host_max=4096"),
    (lambda: allocation.free_sync_timeline(0), ValueError, "free_sync_timeline: spin_us=0"),
    (lambda: allocation.free_sync_timeline(10**7), ValueError, "free_sync_timeline: spin_us="),
    (lambda: allocation.free_sync_timeline(None), TypeError, "free_sync_timeline: spin_us"),
    (lambda: allocation.free_sync_timeline(nbytes=0), ValueError, "free_sync_timeline: nbytes=0"),
    (lambda: allocation.first_touch_sweep([6]), ValueError, "first_touch_sweep: sizes: 6"),
    (lambda: allocation.first_touch_sweep([2**35]), ValueError, "first_touch_sweep: sizes"),
    (lambda: allocation.first_touch_sweep([MiB], touches=["read"]), ValueError, "touch='read'"),
    (lambda: allocation.first_touch_sweep([MiB], repeat=0), ValueError, "repeat=0"),
    (lambda: allocation.first_touch_counters(6), ValueError, "first_touch_counters: nbytes=6"),
    (lambda: allocation.first_touch_counters(MiB, touch="x"), ValueError, "touch='x'"),
    (lambda: allocation.first_touch_counters(MiB, metrics=["no_such_metric"]), ValueError,
     "no_such_metric"),
    (lambda: allocation.plot_free_sync([1]), TypeError, "plot_free_sync: table must be"),
    # the C experiments: every argument checked before the device
    (lambda: gm._core._alloc_cost("bogus", 4096, 1, 0), ValueError, "_alloc_cost: kind='bogus'"),
    (lambda: gm._core._alloc_cost("pool", 0, 1, 0), ValueError, "_alloc_cost: nbytes=0"),
    (lambda: gm._core._alloc_cost("pool", 4096, True, 0), TypeError, "_alloc_cost: repeat"),
    (lambda: gm._core._alloc_cost("pool", 4096, 1, -1), ValueError, "_alloc_cost: warmup=-1"),
    (lambda: gm._core._alloc_cost("host", 2 << 30, 1, 0), ValueError,
     "_alloc_cost: nbytes=2147483648 is not allowed; kind='host' pins at most host_max"),
    (lambda: gm._core._alloc_cost("host", 8192, 1, 0, host_max=4096), ValueError, "host_max=4096"),
    (lambda: gm._core._free_sync(0, 4096), ValueError, "_free_sync: spin_us=0"),
    (lambda: gm._core._free_sync(10, 0), ValueError, "_free_sync: nbytes=0"),
    (lambda: gm._core._first_touch("read", 4096, True, 1, 0), ValueError, "touch='read'"),
    (lambda: gm._core._first_touch("write", 4098, True, 1, 0), ValueError,
     "_first_touch: nbytes=4098 is not allowed; nbytes must be a multiple of 4"),
    (lambda: gm._core._first_touch("write", 4096, 2, 1, 0), ValueError, "_first_touch: fresh=2"),
    (lambda: gm._core._first_touch("write", 4096, True, 0, 0), ValueError, "repeat=0"),
]


@pytest.mark.parametrize("call, exc, msg", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_every_bad_argument_is_refused_by_name(call, exc, msg):
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace("[", r"\[")):
        call()


def test_valid_arguments_take_numpy_integers():
    with gm.runtime.args._checking():
        assert gm.first_touch(np.int64(1001), touch="page", block=np.int32(96)) is None


@pytest.mark.parametrize("name, args", [("alloc_cost_sweep", ([4096],)),
                                        ("free_sync_timeline", ()),
                                        ("first_touch_sweep", ([MiB],)),
                                        ("first_touch_counters", ())])
def test_experiments_without_a_gpu_say_so_by_name(name, args, no_gpu):
    with pytest.raises(gm.CudaUnavailableError, match=f"^{name}: no GPU"):
        getattr(allocation, name)(*args)


def test_report_without_a_gpu():
    rows = allocation._headline(False, True)
    assert len(rows) == 2
    for r in rows:
        assert r["lesson"] == "allocation" and r["measured"] == {}
        assert r["measured_text"].startswith("would measure: ")
    assert rows[0]["model_text"] == "not modelled: driver and OS costs"
    assert rows[1]["model"] == {"bytes_written": 64.0 * MiB, "pages_64KiB": 1024.0,
                                "fresh_over_reused": 1.0}
    (t,) = allocation._report_sweeps(False, True, False)
    assert [r["kind"] for r in t] == list(allocation.KINDS)


def test_plot_free_sync_draws_a_timeline():
    import matplotlib

    matplotlib.use("Agg")
    rows = [{"mode": m, "op": op, "start_us": s, "end_us": e, "us": e - s}
            for m, spans in (("cudaFree", ((0, 5), (6, 2000), (2001, 2002))),
                             ("cudaFreeAsync", ((0, 5), (6, 7), (8, 2000))))
            for op, (s, e) in zip(("launch", "free", "sync"), spans)]
    t = gm.Table(rows)
    t.kernel_us = {"cudaFree": 2000.0, "cudaFreeAsync": 2000.0}
    ax = allocation.plot_free_sync(t)
    assert [lbl.get_text() for lbl in ax.get_yticklabels()] == ["cudaFree", "cudaFreeAsync"]
    assert len(ax.collections) == 8    # three host calls and the kernel, per mode


# ---- on a GPU -----------------------------------------------------------------------------------
@gpu
@pytest.mark.parametrize("touch", ["write", "page"])
def test_first_touch_writes_what_the_reference_says(touch, rng, no_leak):
    for n in (1, 3, 5, 1001, 16385, int(rng.integers(40_000, 70_000)), 3 * 2**20 + 7):
        for block in (32, 96, 256, 1024):
            out = poisoned((n,))
            got = gm.first_touch(n, touch=touch, block=block, out=out)
            assert got is out
            np.testing.assert_array_equal(out.get(), first_touch_reference(n, touch),
                                          err_msg=f"n={n} block={block}")
    for n in (1001, 40_003):            # a new result, as an ndarray: NaN where unwritten
        host = gm.first_touch(n, touch=touch)
        assert isinstance(host, np.ndarray) and host.shape == (n,)
        np.testing.assert_array_equal(host, first_touch_reference(n, touch))


@gpu
def test_first_touch_off_a_16_byte_boundary(no_leak):
    base = poisoned((70_003,))
    ptr = base.__cuda_array_interface__["data"][0]
    for shift in (1, 2, 3):
        n = 70_003 - shift
        view = gm.from_dlpack(allocation._View(ptr + 4 * shift, n, base))
        gm.first_touch(n, out=view)
        got = base.get()
        np.testing.assert_array_equal(got[shift:], first_touch_reference(n))
    del view, base


def _median_pair(kind, nbytes, repeat=100, warmup=10):
    d = gm._core._alloc_cost(kind, nbytes, repeat, warmup)
    assert len(d["alloc"]) == len(d["free"]) == repeat
    assert all(v >= 0 and math.isfinite(v) for v in d["alloc"] + d["free"])
    return float(np.median(np.add(d["alloc"], d["free"]))), float(np.median(d["alloc"]))


@gpu
def test_pool_reuse_is_faster_than_cudamalloc(no_leak):
    free0 = gm.memory_info()["free"]
    for nbytes in (64 << 10, MiB, 16 * MiB):
        pool, _ = _median_pair("pool", nbytes)
        malloc, _ = _median_pair("cudaMalloc", nbytes)
        assert pool < malloc, (nbytes, pool, malloc)
    # at 16 MiB the driver maps new memory for every cudaMalloc and every new pool
    pool, pool_alloc = _median_pair("pool", 16 * MiB)
    malloc, _ = _median_pair("cudaMalloc", 16 * MiB, 20, 2)
    _, first_alloc = _median_pair("pool_first", 16 * MiB, 20, 2)
    assert 2 * pool < malloc, (pool, malloc)
    assert first_alloc > pool_alloc, (first_alloc, pool_alloc)
    for kind in ("managed", "host"):
        us, _ = _median_pair(kind, MiB, 10, 2)
        assert us > 0
    # every allocation given back: the device's free memory as it was (the driver's slack)
    assert gm.memory_info()["free"] >= free0 - 64 * MiB


@gpu
def test_sizes_above_the_free_memory_are_refused(no_leak):
    free = gm.memory_info()["free"]
    for kind in ("cudaMalloc", "pool", "pool_first", "managed"):
        with pytest.raises(ValueError, match=rf"_alloc_cost: nbytes={free + 4096} is not "
                                             "allowed; it is more than the"):
            gm._core._alloc_cost(kind, free + 4096, 1, 0)
    with pytest.raises(ValueError, match="alloc_cost_sweep: sizes: "):
        allocation.alloc_cost_sweep([4096, free + 4096], kinds=["managed"])
    with pytest.raises(ValueError, match=r"first_touch_sweep: sizes(: |=\d+ is not allowed)"):
        allocation.first_touch_sweep([free + 4096])


@gpu
def test_alloc_cost_sweep_table(no_leak):
    t = allocation.alloc_cost_sweep([4096, 4 * MiB, 64 * MiB], repeat=3, host_max=4 * MiB,
                                    progress=False)
    got = {(r["kind"], r["bytes"]) for r in t}
    assert ("host", 64 * MiB) not in got and ("host", 4 * MiB) in got
    assert len(t) == 4 * 3 + 2
    for r in t:
        assert r["us"] > 0
        assert r["alloc_us"] >= 0 and r["free_us"] >= 0 and r["repeat"] == 3


@gpu
def test_cudafree_waits_for_the_kernel_and_cudafreeasync_does_not(no_leak):
    spin = 2000
    d = gm._core._free_sync(spin, MiB)
    for mode in ("cudaFree", "cudaFreeAsync"):
        assert d[mode]["kernel_us"] >= 0.9 * spin, d[mode]
    sync_free, async_free = d["cudaFree"], d["cudaFreeAsync"]
    f0, f1 = sync_free["free"]
    remaining = sync_free["kernel_us"] - f0          # the kernel's time left when cudaFree began
    assert remaining > 0.5 * spin, sync_free
    assert f1 - f0 >= 0.5 * remaining, sync_free     # cudaFree waited for the device
    a0, a1 = async_free["free"]
    assert a1 - a0 < 0.1 * spin, async_free          # cudaFreeAsync returned at once ...
    s0, s1 = async_free["sync"]
    assert s1 - s0 >= 0.5 * (async_free["kernel_us"] - a1), async_free  # ... the device busy
    t = allocation.free_sync_timeline(spin)
    assert len(t) == 6 and set(t.kernel_us) == {"cudaFree", "cudaFreeAsync"}
    waited = {r["mode"]: r["us"] for r in t if r["op"] == "free"}
    assert waited["cudaFree"] > 10 * waited["cudaFreeAsync"], waited


@gpu
@pytest.mark.parametrize("touch", ["write", "page"])
def test_fresh_and_reused_are_both_measured(touch, no_leak):
    free0 = gm.memory_info()["free"]
    for fresh in (True, False):
        with gm.record() as recs:
            gm._core._first_touch(touch, 8 * MiB, fresh, 4, 1)
        assert len(recs) == 4                           # the warm-up is not recorded
        for r in recs:
            assert (r.kernel, r.variant) == ("first_touch", touch)
            assert r.params == {"n": 2 * MiB, "nbytes": 8 * MiB, "fresh": fresh}
            assert r.ms > 0
            assert r.bytes == (8 * MiB if touch == "write" else 4 * 128)
    t = allocation.first_touch_sweep([MiB, 16 * MiB], touches=[touch], repeat=3, progress=False)
    assert len(t) == 2
    for r in t:
        for key in ("fresh", "reused"):
            assert r[f"{key}_ms"] > 0 and r[f"{key} GB/s"] > 0
            assert math.isfinite(r[f"{key} ns/page"])
        assert r["fresh / reused"] == pytest.approx(r["fresh_ms"] / r["reused_ms"])
    if touch == "write":   # a write of 16 MiB runs at a good part of the device's bandwidth
        assert max(r["reused GB/s"] for r in t) > 100
    assert gm.memory_info()["free"] >= free0 - 64 * MiB


@gpu
def test_first_touch_counters_fresh_and_reused(counters, no_leak):
    nbytes = 64 * MiB
    t = allocation.first_touch_counters(nbytes)
    rows = {r["metric"]: r for r in t}
    assert list(rows) == list(allocation.COUNTERS)
    sectors = rows["lts__t_sectors.sum"]
    assert sectors["passes"] == 1, sectors
    for key in ("fresh", "reused"):       # every byte written goes through L2
        assert sectors[key] * 32 >= 0.95 * nbytes, sectors
        assert rows["dram_write_bytes"][key] is not None
    assert all(r["fresh"] is not None or r["note"] for r in t)


@gpu
def test_report_measures_both_rows(no_leak):
    rows = allocation._headline(True, True)
    assert rows[0]["measured"]["pool_us"] > 0 and rows[0]["measured"]["cudaMalloc_us"] > 0
    assert rows[1]["measured"]["fresh_GB/s"] > 0 and rows[1]["measured"]["reused_GB/s"] > 0


@gpu
def test_sanitizer_calls_cover_every_variant(no_leak):
    with gm.record() as recs:
        allocation._sanitize()
    assert {(r.kernel, r.variant) for r in recs} == {("first_touch", "write"),
                                                      ("first_touch", "page")}


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# the memory card: the pool against cudaMalloc, on the fake GPU (the stand-ins allocation declares)
def test_card_rows_on_a_fake_gpu(monkeypatch):
    assert [r["level"] for r in allocation.LESSON.card(False, True)] == [
        "pool, 1 MiB", "cudaMalloc, 1 MiB"]
    FakeGPU(monkeypatch)
    by = {r["level"]: r for r in allocation.LESSON.card(True, True)}
    assert by["pool, 1 MiB"]["ns"] == pytest.approx(1000.0)        # 0.5 + 0.5 us
    assert by["cudaMalloc, 1 MiB"]["ns"] == pytest.approx(50000.0)
    assert by["pool, 1 MiB"]["size_text"] == "64 MiB reserved"


@pytest.mark.gpu
def test_card_rows_on_a_gpu():
    by = {r["level"]: r for r in allocation.LESSON.card(True, True)}
    assert by["pool, 1 MiB"]["ns"] < by["cudaMalloc, 1 MiB"]["ns"]
