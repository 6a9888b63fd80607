"""gpumem.profile(): hardware counters read in-process through CUPTI.

CPU tests: aliases, validation before anything runs, clean errors and no
state left behind without a GPU.  GPU tests (marked ``gpu``): known values on
an H100, in-place kernels replayed correctly, no effect on later un-profiled
runs, and every alias equal to ``ncu --csv`` within 0.5% (the cache- and
timing-dependent ones, on which ncu does not reproduce itself, within a
documented tolerance: see STATE_DEPENDENT in test_profile_ncu.py).
"""
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpumem
from gpumem import _core
from gpumem.runtime.counters import ALIASES, MetricAlias, _plan, raw_metrics

#: It reads counters, runs child processes that do, or times whole commands: under
#: pytest-xdist it runs in gpu-check's one-process-per-GPU phase (conftest.py).
pytestmark = pytest.mark.alone

REQUIRED = ["gld_efficiency", "gst_efficiency", "gld_transactions", "gst_transactions",
            "gld_requests", "gst_requests", "gld_transactions_per_request",
            "gst_transactions_per_request", "shared_load_transactions",
            "shared_store_transactions", "shared_load_bank_conflict",
            "shared_store_bank_conflict", "local_load_transactions", "local_store_transactions",
            "dram_read_bytes", "dram_write_bytes", "l1_hit_rate", "l2_hit_rate",
            "achieved_occupancy", "branch_efficiency"]


def clean_state() -> bool:
    s = _core._profile_state()
    return (s["profiling"] == 0 and not s["range_profiler"] and not s["host_object"]
            and s["scratch_bytes"] == 0 and s["flush_bytes"] == 0)


# ---- CPU: aliases and validation -----------------------------------------
def test_every_required_alias_is_defined():
    missing = [n for n in REQUIRED if n not in ALIASES]
    assert missing == []
    for a in ALIASES.values():
        assert isinstance(a, MetricAlias)
        for r in a.raw:
            assert "__" in r and "." in r, (a.name, r)


def test_bank_conflicts_are_wavefronts_beyond_one_per_instruction():
    a = ALIASES["shared_load_bank_conflict"]
    assert a.raw == ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                     "smsp__inst_executed_op_shared_ld.sum")
    assert a.evaluate({a.ncu: 40.0, a.per: 8.0}) == 32.0
    assert a.formula == a.ncu + " - " + a.per
    raw, outs = _plan(["shared_load_bank_conflict", "gld_transactions_per_request"])
    (n1, num1, second1), (n2, num2, second2) = outs
    assert raw[num1] == a.ncu and raw[-2 - second1] == a.per       # difference: -2 - index
    assert second2 >= 0 and raw[second2] == ALIASES["gld_requests"].ncu   # ratio: index


def test_derived_aliases_are_ratios_of_sectors_and_requests():
    a = ALIASES["gld_transactions_per_request"]
    assert a.raw == (ALIASES["gld_transactions"].ncu, ALIASES["gld_requests"].ncu)
    assert a.evaluate({a.ncu: 12.0, a.per: 3.0}) == 4.0
    assert math.isnan(a.evaluate({a.ncu: 12.0, a.per: 0.0}))
    assert ALIASES["gld_efficiency"].ncu == \
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"


def test_cp_async_aliases_are_the_ldgsts_counters_apart_from_the_loads():
    # cp.async (LDGSTS) is counted under op_ldgsts, never under gld_*'s op_ld; the names
    # are the keys gpumem.model.predict gives for the kernels that issue it
    from gpumem.model.registry import LDGSTS_METRICS

    req, sect = ALIASES["gldgsts_requests"], ALIASES["gldgsts_transactions"]
    assert req.raw == ("sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts.sum",)
    assert sect.raw == ("sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",)
    assert (req.unit, sect.unit) == ("requests", "sectors")
    assert {req.ncu, sect.ncu}.isdisjoint(ALIASES["gld_requests"].raw
                                          + ALIASES["gld_transactions"].raw)
    for a in (req, sect):
        assert "cp.async" in a.definition and "LDGSTS" in a.definition
        assert a.name in LDGSTS_METRICS
    kind = {r["name"]: r["counted_by"] for r in gpumem.metrics()}
    assert kind["gldgsts_requests"] == kind["gldgsts_transactions"] == "hardware"
    assert raw_metrics(["gldgsts_transactions", "gldgsts_requests"]) == [sect.ncu, req.ncu]


def test_metrics_lists_aliases_with_definitions():
    t = gpumem.metrics()
    assert isinstance(t, gpumem.Table)
    assert t.columns == ["name", "nsight_compute", "unit", "counted_by", "definition"]
    assert set(REQUIRED) <= set(t["name"])
    kind = {r["name"]: r["counted_by"] for r in t}
    assert kind["gld_efficiency"] == kind["gst_efficiency"] == "instrumentation"
    assert kind["gld_transactions"] == kind["dram_read_bytes"] == "hardware"
    row = {r["name"]: r for r in t}["gst_transactions_per_request"]
    assert row["nsight_compute"] == ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum / "
                                     "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
    assert all(r["definition"] for r in t)


def test_raw_names_pass_through_and_are_shared():
    raw = raw_metrics(["gld_transactions_per_request", "dram__bytes_read.sum",
                       "gld_transactions", "gld_transactions"])
    assert raw == ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                   "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "dram__bytes_read.sum"]
    raw, outputs = _plan(["gld_transactions_per_request", "dram__bytes_read.sum"])
    assert outputs == [("gld_transactions_per_request", 0, 1), ("dram__bytes_read.sum", 2, -1)]


def test_unknown_name_lists_close_matches_before_anything_runs():
    before = _core._profile_state()
    with pytest.raises(ValueError) as e:
        gpumem.profile(metrics=["gld_efficency"])
    assert "'gld_efficency'" in str(e.value) and "'gld_efficiency'" in str(e.value)
    with pytest.raises(ValueError, match="shared_load_bank_conflict"):
        gpumem.profile(metrics=["gld_efficiency", "shared_load_bank_conflicts"])
    assert _core._profile_state() == before


@pytest.mark.parametrize("bad, exc", [("gld_efficiency", TypeError), ([3], TypeError),
                                      ([], ValueError), (None, TypeError)])
def test_bad_metric_lists(bad, exc):
    with pytest.raises(exc):
        gpumem.profile(metrics=bad)


def test_bad_replay_mode():
    with pytest.raises(ValueError, match="replay='fast'"):
        gpumem.profile(["gld_efficiency"], replay="fast")


def test_exported_api():
    for name in ("ProfilerError", "metrics", "profile", "profiler_available"):
        assert name in gpumem.__all__ and hasattr(gpumem, name)
    assert gpumem.ProfilerError is _core.ProfilerError
    assert issubclass(gpumem.ProfilerError, RuntimeError)


def test_missing_cupti_is_a_profiler_error_saying_how_to_fix():
    # In a fresh interpreter: once an earlier test has loaded CUPTI, this one
    # could no longer see the not-found path.
    code = textwrap.dedent("""
        import numpy as np
        import gpumem
        from gpumem import _core
        try:
            _core._profile_load(["/nonexistent/cupti"], False)
        except gpumem.ProfilerError as e:
            assert e.reason == "library", e.reason
            assert "libcupti" in str(e) and "nvidia-cuda-cupti" in str(e), str(e)
            assert "pip install 'gpumem-lab[profile]'" in str(e), str(e)   # the extra, named
            assert _core._profile_state()["profiling"] == 0
            if gpumem.is_available():
                one = np.ones(3, np.float32)
                assert gpumem.vec_add(one, one).tolist() == [2.0, 2.0, 2.0]
            print("RAISED")
        else:
            print("DID NOT RAISE")
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(gpumem.__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "RAISED", (out.stdout, out.stderr)
    assert clean_state()


def test_profiler_available_never_raises():
    assert isinstance(gpumem.profiler_available(), bool)
    if not gpumem.is_available():
        assert gpumem.profiler_available() is False
    assert clean_state()


@pytest.mark.skipif(gpumem.is_available(), reason="checks the no-GPU path")
def test_without_gpu_profile_raises_cleanly_and_leaves_nothing():
    sinks = list(_core._sinks)
    for _ in range(2):
        with pytest.raises((gpumem.CudaUnavailableError, gpumem.ProfilerError)):
            with gpumem.profile(metrics=["gld_efficiency", "dram_read_bytes"]):
                pass
        assert clean_state()
        assert list(_core._sinks) == sinks


# ---- GPU ------------------------------------------------------------------
def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.gpu
def test_vec_add_fully_coalesced_known_values(counters, rng, no_leak):
    n = (1 << 20) + 3  # awkward: the last warp has 3 threads
    a, b = f32(rng, n), f32(rng, n)
    names = ["gld_efficiency", "gst_efficiency", "gld_requests", "gst_requests",
             "gld_transactions", "gst_transactions", "gld_transactions_per_request",
             "shared_load_transactions", "local_load_transactions", "local_store_transactions"]
    with gpumem.profile(metrics=names) as p:
        c = gpumem.vec_add(a, b, block=256)
    np.testing.assert_array_equal(c, a + b)
    assert len(p.records) == 1 and p.records[0].kernel == "vec_add"
    m = p.records[0].metrics
    assert list(m) == names
    warps, sectors = -(-n // 32), -(-n // 8)
    assert m["gld_requests"] == 2 * warps            # a[i] and b[i]: one request each per warp
    assert m["gst_requests"] == warps
    assert m["gld_transactions"] == 2 * sectors      # 4 sectors per full warp request
    assert m["gst_transactions"] == sectors
    assert m["gld_transactions_per_request"] == pytest.approx(sectors / warps)
    assert m["gld_efficiency"] == pytest.approx(100.0 * n / (8 * sectors), abs=0.01)
    assert m["gst_efficiency"] == pytest.approx(100.0 * n / (8 * sectors), abs=0.01)
    assert m["shared_load_transactions"] == 0
    assert m["local_load_transactions"] == 0 and m["local_store_transactions"] == 0
    assert clean_state()


@pytest.mark.gpu
def test_one_pass_sets_are_read_in_batches_with_the_same_values(counters, rng, no_leak):
    # 150 launches cross batch boundaries (16 ranges per CUPTI start).  A
    # one-pass set is batched; the values must equal the per-launch (2-pass)
    # path's and the model's -- and the L2 flush between ranges must not be
    # counted (it reads 200 MB: any leak shows in the sector count).
    from gpumem import model
    n = (1 << 16) + 5
    a, b = f32(rng, n), f32(rng, n)
    offs = [i % 37 for i in range(150)]
    with gpumem.profile(["gld_efficiency"]) as one:
        assert one.passes == 1 and one.ranges_per_start == 16
        for off in offs[:3]:
            gpumem.read_offset(a, b, offset=off, block=256)
        # reading inside the block decodes the open batch
        assert one.records[-1].metrics["gld_efficiency"] == pytest.approx(
            model.predict("read_offset", "unroll1", n=n, offset=offs[2], block=256)
            ["gld_efficiency"], abs=0.01)
        for off in offs[3:]:
            gpumem.read_offset(a, b, offset=off, block=256)
        assert gpumem.last_record().metrics["gld_efficiency"] > 0
    with gpumem.profile(["gld_transactions"]) as sect:
        for off in offs:
            gpumem.read_offset(a, b, offset=off, block=256)
    with gpumem.profile(["gld_efficiency", "gld_transactions"]) as two:
        assert two.passes == 2 and two.ranges_per_start == 64
        for off in offs[:40]:
            gpumem.read_offset(a, b, offset=off, block=256)
    assert len(one.records) == len(sect.records) == 150
    for i, off in enumerate(offs):
        want = model.predict("read_offset", "unroll1", n=n, offset=off, block=256)
        assert sect.records[i].metrics["gld_transactions"] == want["gld_transactions"], (i, off)
        assert one.records[i].metrics["gld_efficiency"] == pytest.approx(
            want["gld_efficiency"], abs=0.01), (i, off)
        if i < 40:
            assert two.records[i].metrics == {
                "gld_efficiency": one.records[i].metrics["gld_efficiency"],
                "gld_transactions": sect.records[i].metrics["gld_transactions"]}, (i, off)
    assert clean_state()


# Counters that repeat exactly run to run (no cache or timing state), from
# two groups so that the set needs several passes.
EXACT = ["gld_transactions", "gst_transactions", "gld_requests", "gld_efficiency",
         "local_load_transactions"]


def assert_same_counters(got, want, what):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g.kernel, g.variant, g.params) == (w.kernel, w.variant, w.params), (what, i)
        assert g.metrics == w.metrics, (what, i, g.kernel, g.variant, g.params)


@pytest.mark.gpu
def test_block_replay_equals_launch_by_launch(counters, rng, no_leak):
    # Replaying the recorded launches together (the default) must give every
    # launch the counters that replaying it on the spot gives, in launch
    # order, and leave results and buffers as an unprofiled run does --
    # DeviceArrays swept over, fresh ndarrays of awkward shapes, an in-place
    # update repeated, a launch that cannot be moved (stencil coefficients in
    # the constant bank: profiled on the spot inside the block).
    n = (1 << 20) + 3
    a, b = f32(rng, n), f32(rng, n)
    mats = [(f32(rng, 130, 70), f32(rng, 70, 90)), (f32(rng, 257, 129), f32(rng, 129, 65))]
    t = f32(rng, 300, 257)

    def work(da, db):
        for off in range(0, 40, 3):
            gpumem.read_offset(da, db, offset=off, block=256)
        outs = [gpumem.matmul(x, y, tile=16, variant=v) for x, y in mats
                for v in ("naive", "tiled")]
        for _ in range(3):
            gpumem.vec_add(da, db, out=da)
        outs += [gpumem.stencil_1d(a, memory="constant"), gpumem.stencil_1d(a, memory="readonly"),
                 gpumem.transpose(t), gpumem.copy(db).get()]
        return outs

    runs = {}
    for mode in ("block", "launch"):
        da, db = gpumem.to_device(a), gpumem.to_device(b)
        with gpumem.profile(EXACT, replay=mode) as p:
            outs = work(da, db)
            if mode == "block":
                st = _core._profile_state()
                # recorded, not yet replayed: 14 sweeps + 4 matmuls + 3 in place
                # (the constant-memory stencil ran on the spot) + 3 more
                assert p.passes > 1 and p.ranges_per_start == 64
                assert st["recorded"] == 14 + 4 + 3 + 3 and st["pending"] == 24
                assert st["replay_bytes"] > 0 and st["passes_run"] == p.passes
        runs[mode] = (p.records, outs, da.get())
        assert clean_state() and _core._profile_state()["replay_bytes"] == 0
    (blk, outs, da_end), (one, outs1, da_end1) = runs["block"], runs["launch"]
    assert len(blk) == 14 + 4 + 3 + 4
    assert_same_counters(blk, one, "block vs launch")
    want = a.copy()
    for _ in range(3):
        want = want + b
    np.testing.assert_array_equal(da_end, want)
    np.testing.assert_array_equal(da_end1, want)
    for x, y in zip(outs, outs1):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(outs[-1], b)
    np.testing.assert_array_equal(outs[-2], t.T)
    # the sweep's known counts: 4n bytes of b and of a shifted by off
    sweep = [r.metrics for r in blk[:14]]
    assert sweep[0]["gld_requests"] == 2 * -(-n // 32)
    assert sweep[0]["gld_efficiency"] == pytest.approx(100.0, abs=0.01)


@pytest.mark.gpu
def test_block_replay_sees_each_launch_s_own_data(counters, rng, no_leak):
    # A per-thread histogram in local memory: which words a warp's lanes
    # touch depends on the values, so its local-load sectors do.  Between
    # launches the input changes under the same address (copy(out=x), an
    # in-place add) or is a fresh upload: each replay must see the data its
    # launch saw, not an earlier copy of the same buffer.
    m = (1 << 18) + 7
    same = np.full(m, 0.03, np.float32)
    spread = rng.random(m).astype(np.float32)
    names = ["local_load_transactions", "gld_efficiency"]

    def work():
        x = gpumem.to_device(same)
        gpumem.thread_histogram(x, variant="local")
        gpumem.thread_histogram(x, variant="local")           # unchanged: shares the copy
        gpumem.copy(gpumem.to_device(spread), out=x)
        gpumem.thread_histogram(x, variant="local")
        gpumem.vec_add(x, gpumem.to_device(np.full(m, 0.5, np.float32)), out=x)
        gpumem.thread_histogram(x, variant="local")
        gpumem.thread_histogram(same, variant="local")
        gpumem.thread_histogram(spread, variant="local")

    got = {}
    for mode in ("block", "launch"):
        with gpumem.profile(names, replay=mode) as p:
            work()
        got[mode] = [r.metrics["local_load_transactions"] for r in p.records
                     if r.kernel == "thread_histogram"]
    assert got["block"] == got["launch"], got
    h = got["block"]
    assert h[0] == h[1] == h[4] and h[2] == h[5]
    assert len({h[0], h[2], h[3]}) == 3, h  # three different inputs, three counts


@pytest.mark.gpu
def test_block_replay_within_its_memory_and_batch_limits(counters, rng, no_leak, monkeypatch):
    # A small replay memory replays the batch early; a launch too big for it
    # is profiled on the spot; GPUMEM_PROFILE_BATCH sets the launches per
    # start.  The values stay those of launch-by-launch replay.
    n = 1 << 20                       # 4 MiB per buffer
    xs = [(f32(rng, n), f32(rng, n)) for _ in range(6)]
    names = ["gld_transactions", "gld_efficiency"]

    def work():
        for i, (a, b) in enumerate(xs):  # fresh uploads: nothing to share
            gpumem.read_offset(a, b, offset=i, block=256)

    with gpumem.profile(names, replay="launch") as ref:
        work()
    passes = ref.passes
    for mb, batch, starts in (("24", None, 3), ("2", None, 0), (None, "4", 2)):
        for k, v in (("GPUMEM_PROFILE_REPLAY_MB", mb), ("GPUMEM_PROFILE_BATCH", batch)):
            if v is None:
                monkeypatch.delenv(k, raising=False)
            else:
                monkeypatch.setenv(k, v)
        with gpumem.profile(names) as p:
            work()
            st = _core._profile_state()
            assert st["replay_bytes"] <= (int(mb) << 20 if mb else st["replay_cap_bytes"])
        # 24 MiB holds two launches (two 4 MiB copies each and one 4 MiB sink,
        # with alignment slack): 3 batches; 2 MiB holds none: each launch on
        # the spot (one start per pass each); batch=4: 2 batches.
        assert p.ranges_per_start == (int(batch) if batch else 64)
        runs = starts * passes if starts else len(xs) * passes
        assert st["passes_run"] >= runs - passes, (mb, batch, st)
        assert _core._profile_state()["passes_run"] == runs, (mb, batch)
        assert_same_counters(p.records, ref.records, (mb, batch))
    assert clean_state()


@pytest.mark.gpu
def test_many_blocks_grow_neither_host_nor_device_memory(counters, rng):
    # 30 blocks, one-pass and several-pass in turn (each several-pass block
    # makes and frees its replay memory; a third of a second each): after a warm-up, the process's
    # resident memory and the device's free memory stay where they were.
    a, b = f32(rng, 4099), f32(rng, 4099)
    da, db = gpumem.to_device(a), gpumem.to_device(b)

    def blocks(k):
        for i in range(k):
            names = ["gld_efficiency"] if i % 2 else ["gld_efficiency", "gld_transactions"]
            with gpumem.profile(names) as p:
                gpumem.vec_add(da, db)
                gpumem.vec_add(a, b)
            assert p.records[1].metrics["gld_efficiency"] == pytest.approx(100.0, abs=0.5)

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    blocks(6)
    held, free, host = _core.bytes_held(), gpumem.memory_info()["free"], rss()
    blocks(30)
    assert _core.bytes_held() == held
    assert abs(gpumem.memory_info()["free"] - free) <= 4 << 20
    assert rss() - host <= 16 << 20, (rss() - host) / 2**20
    assert clean_state()


@pytest.mark.gpu
def test_bench_with_counters_reports_measured_bytes(counters, rng, no_leak):
    # a copy of 256 MiB (five times the L2): it reads 4n bytes from device memory
    # and writes 4n, all but what L2 still holds dirty at the end
    n = 1 << 26
    x = gpumem.to_device(f32(rng, n))
    r = gpumem.bench(gpumem.copy, x, repeat=3, warmup=1, counters=True)
    assert r.gbps == pytest.approx(8 * n / (r.median_ms * 1e-3) / 1e9)
    assert 0.8 * 8 * n <= r.dram_bytes <= 1.1 * 8 * n, r
    assert 0.95 * 8 * n <= r.l2_bytes <= 2.5 * 8 * n, r
    assert r.dram_gbps == pytest.approx(r.dram_bytes / (r.median_ms * 1e-3) / 1e9)
    row = r.as_row()
    assert row["DRAM bytes"] == r.dram_bytes and row["L2 GB/s"] == r.l2_gbps
    plain = gpumem.bench(gpumem.copy, x, repeat=2, warmup=0)
    assert plain.dram_bytes is None and "DRAM bytes" not in plain.as_row()


@pytest.mark.gpu
def test_profiling_from_another_thread(counters, rng, no_leak):
    # a fresh thread has no CUDA context current until the runtime binds one;
    # the profiler binds it (it used to fail with "driver error 0")
    import threading

    a, b = f32(rng, 1 << 20), f32(rng, 1 << 20)
    got, errors = [], []

    def work():
        try:
            with gpumem.profile(["gld_efficiency"]) as p:
                gpumem.read_offset(a, b, offset=11, block=512)
            got.append(p.records[0].metrics["gld_efficiency"])
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    for _ in range(2):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert not errors, errors
    assert got == [pytest.approx(80.0, abs=0.01)] * 2
    assert clean_state()


@pytest.mark.gpu
def test_launches_from_two_threads_inside_one_block(counters, rng, no_leak):
    # A worker thread launches while the block's thread launches and while
    # the recorded launches are replayed (the profiler holds the GIL through
    # a launch's profiling and a replay, so the worker waits instead of
    # finding the profiler half-way): every launch of either thread is a
    # record with its own values, none NaN, no error.
    import threading

    n1, n2 = 4099, 50_021
    a, b = f32(rng, n1), f32(rng, n2)
    db = gpumem.to_device(b)
    stop, errors, worker_launches = threading.Event(), [], []

    def worker():
        try:
            while not stop.is_set():
                np.testing.assert_array_equal(gpumem.vec_add(db, db).get(), b + b)
                worker_launches.append(1)
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    t = threading.Thread(target=worker, daemon=True)
    try:
        with gpumem.profile(["gld_requests", "gld_efficiency"]) as p:
            t.start()
            for _ in range(150):       # more than one batch of 64: replays mid-block
                np.testing.assert_array_equal(gpumem.vec_add(a, a), a + a)
    finally:
        stop.set()
        t.join(60)
    assert not t.is_alive() and not errors, errors
    req = [r.metrics["gld_requests"] for r in p.records]
    assert len(req) >= 150 and len(worker_launches) >= len(req) - 150
    mine, theirs = 2 * -(-n1 // 32), 2 * -(-n2 // 32)
    assert set(req) == {mine, theirs} and req.count(mine) == 150
    assert all(r.metrics["gld_efficiency"] == pytest.approx(100.0, abs=0.5) for r in p.records)
    assert clean_state()


@pytest.mark.gpu
def test_batched_in_place_launch_sees_and_leaves_its_inputs(counters, rng, no_leak):
    a, b = f32(rng, 10_001), f32(rng, 10_001)
    da, db = gpumem.to_device(a), gpumem.to_device(b)
    with gpumem.profile(["gst_efficiency"]) as p:
        for _ in range(3):
            gpumem.vec_add(da, db, out=da)       # profiled once, then timed once
    np.testing.assert_array_equal(da.get(), a + b + b + b)
    assert [r.metrics["gst_efficiency"] for r in p.records] == \
        [pytest.approx(100.0 * 10_001 / (8 * 1251), abs=0.01)] * 3
    assert clean_state()


@pytest.mark.gpu
def test_a_raise_inside_a_batch_leaves_no_state(counters, rng, no_leak):
    a, b = f32(rng, 4096), f32(rng, 4096)
    with pytest.raises(KeyError):
        with gpumem.profile(["gld_efficiency"]) as p:
            gpumem.vec_add(a, b)
            raise KeyError("user code")
    assert clean_state() and _core._profile_state()["pending"] == 0
    assert p.records[0].metrics["gld_efficiency"] == pytest.approx(100.0, abs=0.01)
    assert gpumem.vec_add(a, b).tolist() == (a + b).tolist()


@pytest.mark.gpu
def test_in_place_launch_is_replayed_on_restored_inputs(counters, rng, no_leak):
    # vec_add(a, b, out=a) reads and writes a: every pass and the timed launch
    # must start from the caller's a, or a would come back as a + k*b.
    n = 100_003
    a, b = f32(rng, n), f32(rng, n)
    da, db = gpumem.to_device(a), gpumem.to_device(b)
    names = REQUIRED  # many metrics: several passes
    with gpumem.profile(metrics=names) as p:
        out = gpumem.vec_add(da, db, out=da)
    assert p.passes > 1
    assert out is da
    np.testing.assert_array_equal(da.get(), a + b)
    assert p.records[0].metrics["gld_requests"] == 2 * -(-n // 32)
    assert clean_state()


@pytest.mark.gpu
def test_matmul_shared_memory_counters(counters, rng, no_leak):
    a, b = f32(rng, 130, 70), f32(rng, 70, 90)
    names = ["shared_load_transactions", "shared_store_transactions", "gld_requests",
             "local_load_transactions", "shared_load_bank_conflict",
             "shared_store_bank_conflict"]
    with gpumem.profile(metrics=names) as p:
        c_tiled = gpumem.matmul(a, b, tile=16, variant="tiled")
        c_naive = gpumem.matmul(a, b, tile=16, variant="naive")
    np.testing.assert_allclose(c_tiled, a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c_naive, a @ b, rtol=1e-4, atol=1e-4)
    tiled, naive = (r.metrics for r in p.records)
    assert tiled["shared_load_transactions"] > 0 and tiled["shared_store_transactions"] > 0
    assert naive["shared_load_transactions"] == 0 and naive["shared_store_transactions"] == 0
    assert tiled["gld_requests"] < naive["gld_requests"]  # the point of tiling
    assert tiled["local_load_transactions"] == 0
    # tile 16: a warp is 2 rows of 16 threads; As[ty][k] is 2 words (broadcasts),
    # Bs[k][tx] 16 consecutive words, the stores 32 consecutive words: no
    # address conflict (the model says so).  The stores show it: wavefronts =
    # instructions (the counters jitter by a wavefront or two run to run, in
    # ncu too).  The loads do not reach one wavefront each: measured on an
    # H100, 1/6 of the wavefronts are extra (124,047 of 744,207 at
    # 300x257x190), most likely the compiler reading four As[ty][k] at once
    # with a 128-bit load, which a warp issues as 2 wavefronts -- the alias
    # counts width, not only conflicts (see gpumem.metrics()).
    from gpumem import model
    ty, tx, k = np.arange(32) // 16, np.arange(32) % 16, 5
    assert model.bank_conflicts(4 * (16 * ty + k)).conflicts == 0
    assert model.bank_conflicts(4 * (16 * k + tx)).conflicts == 0
    assert 0 <= tiled["shared_store_bank_conflict"] <= 2
    assert 0 < tiled["shared_load_bank_conflict"] < 0.2 * tiled["shared_load_transactions"]


@pytest.mark.gpu
def test_table_has_one_measured_column_per_metric(counters, rng):
    a, b = f32(rng, 5000), f32(rng, 5000)
    with gpumem.profile(["gld_efficiency", "dram__bytes_read.sum"]) as p:
        gpumem.vec_add(a, b)
        gpumem.vec_add(a, b, block=128)
    t = p.table()
    assert t.columns == ["kernel", "variant", "params", "ms", "flops", "bytes",
                         "gld_efficiency", "dram__bytes_read.sum"]
    assert t.sources == {"ms": "measured", "flops": "declared", "bytes": "declared",
                         "gld_efficiency": "measured", "dram__bytes_read.sum": "measured"}
    # vec_add declares one FLOP and 12 bytes (two float32 loads, one store) per element
    assert t["flops"] == [5000, 5000] and t["bytes"] == [12 * 5000, 12 * 5000]
    assert t["kernel"] == ["vec_add", "vec_add"] and "block=128" in t["params"][1]
    assert all(v > 0 for v in t["ms"])


@pytest.mark.gpu
def test_unknown_raw_metric_is_a_value_error_naming_it(counters):
    with pytest.raises(ValueError, match="dram__bytes_nonsense.sum"):
        with gpumem.profile(["dram__bytes_nonsense.sum"]):
            pass
    assert clean_state()


@pytest.mark.gpu
def test_profiles_do_not_nest(counters):
    with gpumem.profile(["gld_requests"]):
        with pytest.raises(gpumem.ProfilerError, match="do not nest"):
            with gpumem.profile(["gld_requests"]):
                pass
    assert clean_state()


@pytest.mark.gpu
def test_raise_inside_block_leaves_no_state(counters, rng, no_leak):
    a, b = f32(rng, 4097), f32(rng, 4097)
    sinks = list(_core._sinks)
    with pytest.raises(KeyError):
        with gpumem.profile(["gld_requests", "dram_read_bytes", "l2_hit_rate"]):
            gpumem.vec_add(a, b)
            raise KeyError("boom")
    assert clean_state() and list(_core._sinks) == sinks
    with pytest.raises(ValueError):  # a failing launch inside the block
        with gpumem.profile(["gld_requests"]):
            gpumem.vec_add(a, b[:10])
    assert clean_state()
    with gpumem.profile(["gld_requests"]) as p:  # and the next block works
        gpumem.vec_add(a, b)
    assert p.records[0].metrics["gld_requests"] == 2 * -(-4097 // 32)
    assert gpumem.vec_add(a, b).tolist() == (a + b).tolist()


@pytest.mark.gpu
def test_profiling_changes_neither_results_nor_later_timing(counters, rng):
    a, b = f32(rng, 512, 512), f32(rng, 512, 512)
    da, db = gpumem.to_device(a), gpumem.to_device(b)
    before = gpumem.bench(gpumem.matmul, da, db, tile=16, repeat=40, warmup=5)
    ref = gpumem.matmul(da, db, tile=16).get()
    with gpumem.profile(REQUIRED) as p:
        inside = gpumem.matmul(da, db, tile=16).get()
    after = gpumem.bench(gpumem.matmul, da, db, tile=16, repeat=40, warmup=5)
    np.testing.assert_array_equal(inside, ref)
    np.testing.assert_array_equal(gpumem.matmul(da, db, tile=16).get(), ref)
    assert p.records[0].ms > 0
    assert after.median_ms == pytest.approx(before.median_ms, rel=0.15), (before, after)
    rec = gpumem.last_record()
    assert rec.metrics is None  # un-profiled launches carry no metrics


@pytest.mark.gpu
def test_kernel_replay_agrees_with_user_replay(counters, rng):
    n = (1 << 18) + 5
    a, b = f32(rng, n), f32(rng, n)
    names = ["gld_transactions", "gst_transactions", "gld_requests", "gst_requests",
             "gld_efficiency"]
    got = {}
    for mode in ("block", "launch", "kernel", "user"):  # "user": the older name of "block"
        with gpumem.profile(names, replay=mode) as p:
            c = gpumem.vec_add(a, b)
        np.testing.assert_array_equal(c, a + b)
        got[mode] = p.records[0].metrics
        assert p.replay == ("block" if mode == "user" else mode)
    assert got["block"] == got["launch"] == got["kernel"] == got["user"]


@pytest.mark.gpu
def test_access_kernels_known_h100_values(counters, rng):
    n = 1 << 20
    a, b = f32(rng, n), f32(rng, n)
    with gpumem.profile(["gld_efficiency", "gst_efficiency"]) as p:
        for off in (0, 11, 128):
            gpumem.read_offset(a, b, offset=off, block=512)
        gpumem.write_offset(a, b, offset=11, block=512)
        gpumem.struct_update(f32(rng, 2 * n).reshape(n, 2), layout="aos")
    eff = [r.metrics for r in p.records]
    assert eff[0]["gld_efficiency"] == pytest.approx(100.0, abs=0.01)
    assert eff[1]["gld_efficiency"] == pytest.approx(80.0, abs=0.01)
    assert eff[2]["gld_efficiency"] == pytest.approx(100.0, abs=0.01)
    assert eff[3]["gst_efficiency"] == pytest.approx(80.0, abs=0.01)
    assert eff[4]["gld_efficiency"] == pytest.approx(50.0, abs=0.01)


# ---- issue 11: errors name the function called --------------------------------------------
def test_raw_metrics_and_profile_name_themselves():
    with pytest.raises(TypeError, match=r"raw_metrics: names must be a sequence"):
        raw_metrics(5)
    with pytest.raises(TypeError, match=r"raw_metrics: names must be a sequence"):
        raw_metrics(np.array(3.0))
    with pytest.raises(ValueError, match=r"raw_metrics: unknown metric 'a'"):
        raw_metrics({"a": 1})
    with pytest.raises(TypeError, match=r"profile: replay must be a str"):
        gpumem.profile(["gld_efficiency"], replay=1)
    with pytest.raises(TypeError, match=r"profile: every name in metrics must be a str, not int"):
        gpumem.profile([1])


def test_cupti_is_looked_for_in_the_profile_extra_first(tmp_path, monkeypatch):
    # pip install 'gpumem-lab[profile]' puts libcupti under site-packages/nvidia/cu13/lib:
    # that directory comes before any toolkit's, with no environment variable needed.
    import importlib
    import sys

    prof = importlib.import_module("gpumem.runtime.counters")
    wheel = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    toolkit = tmp_path / "cuda" / "extras" / "CUPTI" / "lib64"
    toolkit.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")] + sys.path)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    dirs = prof._cupti_dirs()
    assert dirs.index(str(wheel)) < dirs.index(str(toolkit))
