"""gpumem.ladder: the latency ladder (a pointer chase through a ring) and the
bandwidth ladder (a full grid over a resident working set).

Without a GPU: the ring's order and layout, the CPU references, every argument
check before any device call, bench's l2= switch, and the step detection of
cache_sizes on a synthetic ladder.  On a GPU: chases end where the CPU walk
ends, each level is slower than the one above it, read sums equal NumPy's,
copies equal their source, and the ladders' tables are filled in."""
import collections
import math

import numpy as np
import pytest

from gpumem.tools.card import CARD_RUNS

import gpumem as gm
from gpumem.lessons import ladder
from gpumem.lessons.ladder import (KiB, MiB, bandwidth_reference, cache_sizes, chain_image, chain_order,
                           latency_chain, latency_levels, latency_reference)
from gpumem import report
from _fake_gpu import FakeGPU, first_with

X = np.ones(100, np.float32)
VARIANTS = ["ca", "cg", "ldg", "shared", "constant", "tma"]


# ---- the ring (no GPU) ------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 31, 33, 1000, 4097, 65539])
@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1])
def test_chain_order_is_a_permutation(n, seed):
    order = chain_order(n, seed)
    assert order.dtype == np.int64 and order.shape == (n,)
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    # positions pick entries of the same order
    pos = np.array([0, n - 1, n // 2])
    np.testing.assert_array_equal(chain_order(n, seed, pos), order[pos])


def test_chain_order_depends_on_the_seed_only():
    a, b = chain_order(1000, 5), chain_order(1000, 6)
    np.testing.assert_array_equal(a, chain_order(1000, 5))
    assert (a != b).mean() > 0.9


@pytest.mark.parametrize("n", [1, 2, 3, 37, 1024, 5000])
def test_latency_chain_is_one_cycle_through_every_node(n):
    nxt = latency_chain(8 * n, 8, seed=11)
    assert nxt.shape == (n,)
    seen = np.zeros(n, bool)
    j = 0
    for _ in range(n):
        assert not seen[j]
        seen[j] = True
        j = nxt[j]
    assert j == 0 and seen.all()
    # it is the order's cycle: order[i] -> order[i + 1]
    order = chain_order(n, 11)
    np.testing.assert_array_equal(nxt[order], np.roll(order, -1))


def test_ring_has_no_locality_to_exploit():
    # consecutive visits land far apart: neighbouring nodes (next = j +- 1) are rare and the
    # mean jump is about a third of the ring, as for a uniformly random cycle
    n = 1 << 14
    nxt = latency_chain(128 * n, 128, seed=3)
    jump = np.abs(nxt - np.arange(n))
    assert (jump <= 1).mean() < 0.01
    assert 0.25 * n < jump.mean() < 0.42 * n


@pytest.mark.parametrize("stride", [8, 24, 64, 128, 4096])
def test_chain_image_honours_the_stride(stride):
    n = 37
    img = chain_image(n * stride, stride, seed=2)
    assert img.dtype == np.uint32 and img.shape == (n * stride // 4,)
    slots = np.arange(n) * (stride // 4)
    others = np.ones(img.shape, bool)
    others[slots] = False
    assert not img[others].any()                 # nothing between the nodes
    assert (img[slots] % stride == 0).all()      # every link is a node's byte offset
    # following the byte offsets from node 0 visits every node once
    off, visited = 0, set()
    for _ in range(n):
        visited.add(off)
        off = int(img[off // 4])
    assert off == 0 and visited == set(range(0, n * stride, stride))


@pytest.mark.parametrize("ws,stride,lanes,steps,warmup", [
    (1024, 128, 1, 100, 0), (8 * 37, 8, 1, 1000, 5), (4096, 64, 32, 333, 2),
    (40960, 40, 7, 77, 13), (8, 8, 1, 5, 0), (16, 8, 32, 9, 3)])
def test_reference_is_a_walk_along_the_chain(ws, stride, lanes, steps, warmup):
    n = ws // stride
    nxt, order = latency_chain(ws, stride, 9), chain_order(n, 9)
    want = []
    for lane in range(lanes):
        j = order[lane * n // lanes]
        for _ in range(warmup + steps):
            j = nxt[j]
        want.append(j)
    got = latency_reference(ws, stride=stride, lanes=lanes, steps=steps, warmup=warmup, seed=9)
    np.testing.assert_array_equal(got, want)


def test_bandwidth_reference():
    x = np.arange(10, dtype=np.float32)
    assert bandwidth_reference(x, passes=3) == 135.0
    assert bandwidth_reference(x, passes=3, blocks=4, scope="block") == 540.0
    assert bandwidth_reference(x, variant="shared", passes=2, blocks=5) == 450.0
    assert bandwidth_reference(x, passes=2, blocks=5, scope="grid") == 90.0
    np.testing.assert_array_equal(bandwidth_reference(x, variant="copy"), x)
    with pytest.raises(ValueError, match="bandwidth_reference: variant='write' is unknown"):
        bandwidth_reference(x, variant="write")


def test_variants_tables():
    lat = {v.name: v for v in gm.variants("latency")}
    assert list(lat) == VARIANTS == list(ladder.LATENCY_VARIANTS)
    assert [v.select for v in lat.values()] == [0, 1, 2, 3, 4, 5]
    assert list(ladder.LADDER_VARIANTS) == VARIANTS[:-1]          # the ladder's: all but tma
    assert lat["ca"].bytes == "8*lanes*(warmup + steps)"
    assert lat["tma"].bytes == "16*lanes*(warmup + steps)"
    assert lat["shared"].bytes == lat["constant"].bytes == "4*lanes*(warmup + steps)"
    bw = {v.name: v for v in gm.variants("bandwidth")}
    assert list(bw) == ["read", "copy", "shared"]
    assert bw["copy"].bytes == "8*n*passes" and bw["shared"].bytes == "4*n*passes*blocks"
    assert gm.latency in (getattr(gm, n) for n in gm.__all__)
    assert gm.bandwidth is ladder.bandwidth


def test_experiments_reexport_the_ladders():
    from gpumem import experiments as ex

    assert ex.latency_ladder is ladder.latency_ladder
    assert ex.bandwidth_ladder is ladder.bandwidth_ladder
    assert ex.cache_sizes is ladder.cache_sizes


def test_published_figures():
    t = ladder.published_figures("NVIDIA H100 80GB HBM3")     # the paper figures: H100 SXM
    rows = {r["what"]: r for r in t}
    assert (rows["latency: shared"]["low"], rows["latency: shared"]["high"]) == (29, 30)
    assert rows["latency: L2 far"]["low"] == 470 and rows["latency: device memory"]["high"] == 860
    assert rows["l1_bytes_per_clk_sm"]["unit"] == "bytes/clk/SM"
    assert rows["l1_bytes_per_clk_sm"]["low"] == 128
    assert all(r["source"] for r in t)           # every figure says where it comes from
    pcie = {r["what"]: r for r in ladder.published_figures("NVIDIA H100 PCIe")}
    assert pcie["memory_gbps"]["low"] == 2000
    # the H100 PCIe publishes no latencies: its chip's (the SXM's) stand in, marked
    assert pcie["latency: L1"]["low"] == 32 and "published for the H100 SXM, the same GH100 " \
        "chip" in pcie["latency: L1"]["source"] and "latency: device memory" not in pcie
    unknown = ladder.published_figures("NVIDIA Tesla T4")
    assert len(unknown) == 0 and "no published figures are known for NVIDIA Tesla T4" in \
        unknown.title


def test_default_sets():
    sets = ladder.LATENCY_SETS
    assert sets[0] == 1 * KiB and sets[-1] == 2 << 30 and list(sets) == sorted(set(sets))
    assert 30 <= len(sets) <= 45
    assert sum(20 * MiB <= s <= 60 * MiB for s in sets) >= 8      # the near/far L2 split
    assert all(s % 128 == 0 for s in sets)
    bw = ladder.BANDWIDTH_SETS
    assert bw[0] == 16 * KiB and bw[-1] == 4 << 30


# ---- validation before any device call (no GPU) ----------------------------------------------
@pytest.mark.parametrize("kw,msg", [
    ({"variant": "l3"}, r"variant='l3' is unknown; allowed: 'ca', 'cg', 'ldg', 'shared', 'constant'"),
    ({"lanes": 0}, r"lanes=0 is not allowed; lanes must be 1\.\.32"),
    ({"lanes": 33}, r"lanes=33 is not allowed"),
    ({"steps": 0}, r"steps=0 is not allowed; steps must be 1\.\.1048576"),
    ({"steps": 2**20 + 1}, r"steps=1048577 is not allowed"),
    ({"warmup": -1}, r"warmup=-1 is not allowed; warmup must be 0\.\.2147483647"),
    ({"seed": -1}, r"seed=-1 is not allowed"),
    ({"seed": 2**32}, r"seed=4294967296 is not allowed; seed must be 0\.\.4294967295"),
    ({"stride": 12}, r"stride=12 is not allowed; stride must be a multiple of 8 bytes"),
    ({"stride": 0}, r"stride=0 is not allowed; stride must be 8\.\.1048576 bytes"),
    ({"stride": 2**21}, r"stride=2097152 is not allowed"),
    ({"stride": 96}, r"working_set=1024 is not allowed with stride=96; working_set must be a "
                     r"whole number"),
    ({"stride": 2048}, r"working_set=1024 is not allowed with stride=2048"),
])
def test_latency_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match="latency: " + msg):
        gm.latency(1024, **kw)


@pytest.mark.parametrize("ws,variant,limit", [(48 * KiB + 128, "shared", 49152),
                                            (64 * KiB + 128, "constant", 65536)])
def test_latency_on_chip_rings_have_their_limits(ws, variant, limit):
    with pytest.raises(ValueError, match=rf"working_set={ws} is not allowed with "
                                         rf"variant='{variant}'; .* at most {limit} bytes"):
        gm.latency(ws, variant=variant)


@pytest.mark.parametrize("ws", [0, 4, 2**32 + 128, -1024])
def test_latency_working_set_range(ws):
    with pytest.raises(ValueError, match=rf"latency: working_set={ws} is not allowed; "
                                         r"working_set must be 8\.\.4294967296 bytes"):
        gm.latency(ws)


@pytest.mark.parametrize("name", ["working_set", "stride", "lanes", "steps", "warmup", "seed"])
@pytest.mark.parametrize("bad", [1024.0, "1024", True])
def test_latency_integers_must_be_ints(name, bad):
    kw = {"working_set": 1024, name: bad}
    ws = kw.pop("working_set")
    with pytest.raises(TypeError, match=f"latency: {name} must be an int"):
        gm.latency(ws, **kw)


def test_latency_variant_must_be_str_and_working_set_given():
    with pytest.raises(TypeError, match="latency: variant must be a str"):
        gm.latency(1024, variant=1)
    with pytest.raises(TypeError, match="cache"):         # one word, one meaning: not latency's
        gm.latency(1024, cache="ca")
    with pytest.raises(TypeError, match="working_set"):
        gm.latency()
    with pytest.raises(TypeError, match="latency: working_set must be an int, not NoneType"):
        gm.latency(None)


@pytest.mark.parametrize("kw,msg", [
    ({"variant": "write"}, r"variant='write' is unknown; allowed: 'read', 'copy', 'shared'"),
    ({"scope": "warp"}, r"scope='warp' is unknown; allowed: 'grid', 'block'"),
    ({"cache": "l3"}, r"cache='l3' is unknown; allowed: 'default', 'ca', 'cg', 'ldg', 'cs'"),
    ({"variant": "copy", "scope": "block"}, r"scope='block' is not allowed with variant='copy'"),
    ({"variant": "shared", "scope": "grid"}, r"scope='grid' is not allowed with variant='shared'"),
    ({"variant": "shared", "cache": "cg"}, r"cache='cg' is not allowed with variant='shared'"),
    ({"passes": 0}, r"passes=0 is not allowed; passes must be 1\.\.1048576"),
    ({"blocks": 0}, r"blocks=0 is not allowed"),
    ({"block": 100}, r"block=100 is not allowed; block must be a multiple of 32"),
    ({"block": 2048}, r"block=2048 is not allowed"),
])
def test_bandwidth_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match="bandwidth: " + msg):
        gm.bandwidth(X, **kw)


def test_bandwidth_bad_inputs():
    with pytest.raises(ValueError, match=r"bandwidth: x has 12289 floats \(49156 bytes\); "
                                         r"variant='shared' .* at most 49152 bytes"):
        gm.bandwidth(np.ones(12289, np.float32), variant="shared")
    with pytest.raises(TypeError, match="dtype"):
        gm.bandwidth(np.ones(10))
    with pytest.raises(ValueError, match=r"bandwidth: x must be 1-D, not 2-D"):
        gm.bandwidth(np.ones((2, 5), np.float32))
    with pytest.raises(TypeError, match="bandwidth: x must be a numpy.ndarray or "
                                        "gpumem.DeviceArray, not None"):
        gm.bandwidth(None)
    with pytest.raises(TypeError, match="out must be a gpumem.DeviceArray"):
        gm.bandwidth(X, out=np.zeros(3))
    for name in ("passes", "blocks", "block"):
        with pytest.raises(TypeError, match=f"bandwidth: {name} must be an int"):
            gm.bandwidth(X, **{name: 2.0})
    with pytest.raises(TypeError, match="bandwidth: variant must be a str"):
        gm.bandwidth(X, variant=0)


def test_reference_and_chain_helpers_check_their_arguments():
    with pytest.raises(ValueError, match=r"chain_order: n=0 is not allowed"):
        chain_order(0)
    with pytest.raises(ValueError, match=r"chain_order: positions must be 0\.\.n-1 = 0\.\.9"):
        chain_order(10, positions=[10])
    with pytest.raises(TypeError, match=r"chain_order: positions must be integers"):
        chain_order(10, positions=[1.5])
    with pytest.raises(ValueError, match=r"latency_chain: working_set=100 is not allowed with "
                                         r"stride=128"):
        latency_chain(100)
    with pytest.raises(ValueError, match=r"latency_reference: lanes=0 is not allowed"):
        latency_reference(1024, lanes=0)
    with pytest.raises(ValueError, match=r"chain_image: stride=4 is not allowed"):
        chain_image(1024, 4)
    with pytest.raises(TypeError, match=r"latency_reference: warmup must be an int, not bool"):
        latency_reference(1024, warmup=True)


def test_ladders_check_their_arguments(monkeypatch):
    monkeypatch.setattr(ladder, "latency", lambda *a, **k: pytest.fail("reached the device"))
    monkeypatch.setattr(gm.runtime, "bench", lambda *a, **k: pytest.fail("reached the device"))
    with pytest.raises(ValueError, match=r"latency_ladder: variants=\('ca', 'l3'\): variant='l3' "
                                         r"is unknown"):
        ladder.latency_ladder(variants=("ca", "l3"))
    with pytest.raises(ValueError, match=r"latency_ladder: working_sets=4 is not allowed"):
        ladder.latency_ladder([1024, 4])
    with pytest.raises(ValueError, match=r"latency_ladder: stride=12 is not allowed"):
        ladder.latency_ladder(stride=12)
    with pytest.raises(ValueError, match=r"latency_ladder: working_sets has 1024, smaller than "
                                         r"stride=4096; a ring holds at least one node"):
        ladder.latency_ladder([1024, 8192], stride=4096)
    with pytest.raises(ValueError, match=r"working_sets has 100, smaller than stride=128"):
        ladder.latency_ladder([100, 4096])                  # was dropped without a word
    with pytest.raises(ValueError, match=r"latency_ladder: none of working_sets fits "
                                         r"variants=\['shared'\]"):
        ladder.latency_ladder([1 << 20], variants="shared")
    with pytest.raises(TypeError, match=r"latency_ladder: progress must be a bool"):
        ladder.latency_ladder(progress=1)
    with pytest.raises(ValueError, match=r"bandwidth_ladder: variants=\['copy', 'x'\]: "
                                         r"variant='x' is unknown"):
        ladder.bandwidth_ladder(variants=["copy", "x"])
    with pytest.raises(ValueError, match=r"bandwidth_ladder: repeat=0 is not allowed"):
        ladder.bandwidth_ladder(repeat=0)
    with pytest.raises(ValueError, match=r"bandwidth_ladder: no row to measure"):
        ladder.bandwidth_ladder([1 << 16], variants="copy")
    with pytest.raises(ValueError, match=r"bandwidth_ladder: working_sets=8 is not allowed"):
        ladder.bandwidth_ladder([8])


def test_ladders_without_a_gpu_list_what_they_would_measure(no_gpu):
    t = ladder.latency_ladder([1024, 4096, 100 * KiB, 1 << 20], variants=("ca", "shared"))
    assert "no GPU" in t.title
    assert [(r["variant"], r["working set"]) for r in t] == [
        ("ca", 1024), ("ca", 4096), ("ca", 102400), ("ca", 1 << 20),
        ("shared", 1024), ("shared", 4096)]
    assert all(r["cycles/load"] is None and r["stride"] == 128 for r in t)
    sets = ladder.LATENCY_SETS
    assert len(ladder.latency_ladder()) == \
        3 * len(sets) + sum(s <= 48 * KiB for s in sets) + sum(s <= 64 * KiB for s in sets)
    b = ladder.bandwidth_ladder([16 * KiB, 1 << 20, 1 << 30])
    assert [(r["variant"], r["scope"], r["working set"]) for r in b] == [
        ("read", "block", 16 * KiB), ("read", "block", 1 << 20), ("read", "grid", 1 << 20),
        ("read", "grid", 1 << 30), ("copy", "grid", 1 << 20), ("copy", "grid", 1 << 30),
        ("shared", "block", 16 * KiB), ("cudaMemcpy D2D", "device", 2 << 30)]
    assert all(r["GB/s"] is None for r in b) and "no GPU" in b.title
    assert [r["cache"] for r in b][:3] == ["ca", "ca", "cg"]


# ---- bench(l2=...) ----------------------------------------------------------------------------
def test_bench_l2_is_checked_first():
    with pytest.raises(ValueError, match=r"bench: l2='hot' is unknown; allowed: 'warm', 'cold'"):
        gm.bench(gm.vec_add, X, X, l2="hot")
    with pytest.raises(TypeError, match=r"bench: l2 must be a str, not NoneType"):
        gm.bench(gm.vec_add, X, X, l2=None)


FakeRecord = collections.namedtuple("FakeRecord", "kernel variant params ms bytes flops")


@pytest.mark.parametrize("l2", ["warm", "cold"])
def test_bench_cold_evicts_before_every_timed_call_only(monkeypatch, l2):
    calls = []
    monkeypatch.setattr(gm._core, "_l2_flush", lambda: calls.append("flush") or 1)

    def fake_kernel():                    # launches "a kernel": a record in every sink
        calls.append("call")
        for sink in gm._core._sinks:
            sink.append(FakeRecord("k", "v", {}, 1.0, 1e6, 0.0))

    r = gm.bench(fake_kernel, repeat=3, warmup=2, l2=l2)
    flushes = ["flush", "call"] if l2 == "cold" else ["call"]
    assert calls == ["call", "call"] + flushes * 3
    assert r.l2 == l2 and r.as_row()["l2"] == l2 and r.median_ms == 1.0


def test_bench_result_l2_defaults_to_warm():
    r = gm.BenchResult("k", "v", {}, 1.0, 1.0, 1.0, 1.0, 0.0, 1, 0, (1.0,))
    assert r.l2 == "warm"


def test_private_helpers_check_first():
    with pytest.raises(ValueError, match=r"_l2_flush: nbytes=8 is not allowed"):
        gm._core._l2_flush(8)
    with pytest.raises(TypeError, match=r"_l2_flush: nbytes must be an int"):
        gm._core._l2_flush(1.5)
    with pytest.raises(TypeError, match=r"_time_memcpy: dst and src must be gpumem.DeviceArray"):
        gm._core._time_memcpy(X, X, 3)


# ---- cache_sizes and latency_levels on a synthetic ladder (no GPU) -------------------------------
FakeDevice = collections.namedtuple("FakeDevice", "compute_capability l2_cache_size name")
H100 = FakeDevice((9, 0), 50 * MiB, "NVIDIA H100 80GB HBM3")


def _step_model(ws):
    """An H100-like staircase: L1 to 208 KiB, near L2 to 24 MiB, far L2 to 50 MiB."""
    return 40.0 if ws <= 208 * KiB else 255.0 if ws <= 24 * MiB else \
        480.0 if ws <= 50 * MiB else 680.0


def _synthetic(variants=("ca",), model=_step_model):
    rows = []
    for variant in variants:
        for ws in ladder.LATENCY_SETS:
            if ws > ladder._cap(variant):
                continue
            cyc = {"shared": 30.0, "constant": 19.0 if ws <= 2 * KiB else 105.0}.get(variant)
            if cyc is None:
                cyc = model(ws) if variant == "ca" else max(model(ws), 255.0)
            rows.append({"working set": ws, "stride": 128, "variant": variant, "lanes": 1,
                         "cycles/load": cyc, "ns/load": cyc / 1.98, "clock MHz": 1980.0,
                         "warm-up": 0})
    return gm.Table(rows)


def test_cache_sizes_reads_the_steps():
    t = cache_sizes(_synthetic(), device=H100)
    by = {r["level"]: r for r in t}
    l1, near, l2, mem = (by["L1 (capacity in use)"], by["L2 near partition"], by["L2"],
                         by["device memory"])
    assert (l1["from"], l1["to"]) == (192 * KiB, 224 * KiB)
    assert 192 * KiB <= l1["measured"] <= 224 * KiB and l1["stated"] == 256 * KiB
    assert (near["from"], near["to"]) == (24 * MiB, 28 * MiB) and near["stated"] == 25 * MiB
    assert (l2["from"], l2["to"]) == (48 * MiB, 52 * MiB) and l2["stated"] == 50 * MiB
    assert l2["measured / stated"] == pytest.approx(l2["measured"] / (50 * MiB))
    assert (l1["cycles/load"], near["cycles/load"], l2["cycles/load"], mem["cycles/load"]) == \
        (40.0, 255.0, 480.0, 680.0)
    assert mem["ns/load"] == pytest.approx(680 / 1.98)
    # the threshold between L1 and L2 is their geometric mean
    assert l1["threshold"] == pytest.approx(math.sqrt(40 * 255))


def test_cache_sizes_gradual_l2():
    # a gradual rise between the partitions (hit rates falling off, TLB reach) still
    # gives ordered steps inside the rise
    def gradual(ws):
        if ws <= 208 * KiB:
            return 40.0
        if ws <= 8 * MiB:
            return 255.0
        if ws >= 64 * MiB:
            return 680.0
        f = math.log2(ws / (8 * MiB)) / 3.0       # 8 -> 64 MiB: 255 -> 680
        return 255.0 + f * (680.0 - 255.0)
    by = {r["level"]: r for r in cache_sizes(_synthetic(model=gradual), device=H100)}
    assert 8 * MiB <= by["L2 near partition"]["measured"] < by["L2"]["measured"] <= 64 * MiB


def test_cache_sizes_without_device_or_enough_rows(no_gpu):
    t = cache_sizes(_synthetic())
    assert all(r.get("stated") is None for r in t)
    few = gm.Table([r for r in _synthetic() if r["working set"] <= 4 * KiB])
    with pytest.raises(ValueError, match=r"cache_sizes: the table has 3 measured one-lane rows "
                                         r"of variant='ca'"):
        cache_sizes(few)
    flat = gm.Table([{**r, "cycles/load": 40.0} for r in _synthetic()])
    with pytest.raises(ValueError, match=r"cache_sizes: the table's ca rows show no L1 step"):
        cache_sizes(flat)
    with pytest.raises(TypeError, match=r"cache_sizes: table must be a gpumem.Table"):
        cache_sizes([1, 2])
    with pytest.raises(ValueError, match=r"cache_sizes: variant='cg' is unknown"):
        cache_sizes(_synthetic(), variant="cg")
    with pytest.raises(gm.CudaUnavailableError):
        cache_sizes()                          # measuring needs a GPU
    for fn in (cache_sizes, latency_levels):   # checked before any ladder is measured
        with pytest.raises(TypeError, match=fr"{fn.__name__}: device must be a gpumem.DeviceInfo"):
            fn(_synthetic(), device=7)
    with pytest.raises(TypeError, match=r"cache_sizes: device must be a gpumem.DeviceInfo"):
        cache_sizes(device="H100")             # would otherwise measure first, then fail


def test_latency_levels_beside_the_published_figures():
    t = latency_levels(_synthetic(("ca", "cg", "shared", "constant")), device=H100)
    by = {r["level"]: r for r in t}
    assert [r["level"] for r in t] == list(ladder.LATENCY_LEVELS)
    assert "H100" in t.title
    assert by["shared"]["cycles/load"] == 30.0 and by["shared"]["within"] is True
    assert by["constant"]["cycles/load"] == 19.0 and by["constant"]["within"] is True
    assert by["L1"]["cycles/load"] == 40.0 and by["L1"]["within"] is True
    assert by["L2 near"]["cycles/load"] == 255.0 and by["L2 near"]["within"] is True
    assert by["L2 far"]["cycles/load"] == 480.0 and by["L2 far"]["within"] is True
    assert by["device memory"]["cycles/load"] == 680.0
    assert by["device memory"]["ns/load"] == pytest.approx(680 / 1.98)
    only_ca = {r["level"]: r for r in latency_levels(_synthetic(), device=H100)}
    assert only_ca["shared"]["cycles/load"] is None and only_ca["shared"]["within"] is None
    assert only_ca["L2 near"]["cycles/load"] == 255.0       # from the 1-4 MiB ca rings
    other = latency_levels(_synthetic(), device=FakeDevice((9, 0), 50 * MiB, "a new GPU"))
    assert "none are known" in other.title
    assert all(r["published low"] is None and r["within"] is None for r in other)
    assert {r["level"]: r["cycles/load"] for r in other}["L1"] == 40.0


# ---- on the GPU: latency ----------------------------------------------------------------------
RINGS = [(1024, 128, 1, 100, 0, 0), (8 * 37, 8, 1, 1000, 5, 7), (4096, 64, 32, 333, None, 123),
         (40960, 40, 7, 77, 13, 2**32 - 1), (8, 8, 1, 5, 0, 1), (16, 8, 32, 9, 3, 5),
         (48 * KiB, 8, 32, 2000, None, 9)]
#: The same for the bulk copy's 16-byte nodes (stride a multiple of 16).
TMA_RINGS = [(1024, 128, 1, 100, 0, 0), (16 * 37, 16, 1, 1000, 5, 7), (4096, 64, 32, 333, None, 123),
             (40960, 80, 7, 77, 13, 2**32 - 1), (16, 16, 1, 5, 0, 1), (32, 16, 32, 9, 3, 5),
             (48 * KiB, 16, 32, 2000, None, 9)]


@pytest.mark.gpu
@pytest.mark.parametrize("variant,ws,stride,lanes,steps,warmup,seed",
                         [(v, *r) for v in VARIANTS for r in (TMA_RINGS if v == "tma" else RINGS)])
def test_chase_ends_where_the_cpu_walk_ends(variant, ws, stride, lanes, steps, warmup, seed,
                                            no_leak):
    if variant == "tma" and gm.device().compute_capability < (9, 0):
        pytest.skip("the tma chase needs compute capability 9.0 (its refusal: "
                    "test_tma_chase_refused_below_sm90)")
    c = gm.latency(ws, variant=variant, stride=stride, lanes=lanes, steps=steps, warmup=warmup,
                   seed=seed)
    n = ws // stride
    assert c.warmup == (warmup if warmup is not None else -(-n // lanes))  # small: one pass
    ref = latency_reference(ws, stride=stride, lanes=lanes, steps=steps, warmup=c.warmup,
                            seed=seed)
    assert c.end.shape == c.cycles.shape == c.ns.shape == (lanes,)
    np.testing.assert_array_equal(c.end, ref)
    assert (c.cycles >= steps).all() and (c.ns >= 0).all()
    rec = gm.last_record()
    assert rec.kernel == "latency" and rec.variant == variant and c.variant == variant
    assert rec.grid == (1, 1, 1) and rec.block == (32, 1, 1)
    assert rec.smem == (ws if variant == "shared" else 0)
    assert rec.params["warmup"] == c.warmup and rec.params["n"] == n
    assert rec.bytes == {"shared": 4, "constant": 4, "tma": 16}.get(variant, 8) * lanes * \
        (c.warmup + steps)


def test_tma_chase_takes_16_byte_nodes():
    with pytest.raises(ValueError, match=r"latency: stride=40 is not allowed with variant='tma'; "
                                         r"a bulk copy moves 16-byte aligned pieces, so stride "
                                         r"must be a multiple of 16 bytes"):
        gm.latency(4000, variant="tma", stride=40)


@pytest.mark.gpu
def test_tma_chase_refused_below_sm90(pretend_cc, no_leak):
    pretend_cc(8, 0)
    with pytest.raises(gm.CudaError, match=r"variant='tma'.*9\.0.*8\.0"):
        gm.latency(4096, variant="tma")
    pretend_cc(0, 0)
    assert gm.latency(4096, variant="ca", steps=10).end.shape == (1,)     # the next call works


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_tma_chase_is_slower_from_device_memory_than_from_l2(no_leak):
    if gm.device().compute_capability < (9, 0):
        pytest.skip("the tma chase needs compute capability 9.0")
    l2 = gm.device().l2_cache_size
    near = gm.latency(min(4 * MiB, l2 // 8) // 128 * 128, variant="tma", steps=2000)
    far = gm.latency(max(512 * MiB, 8 * l2) // 128 * 128, variant="tma", steps=2000)
    shared = gm.latency(16 * KiB, variant="shared", steps=2000)
    # the copy engine's round trip: past shared memory's, and device memory's past L2's
    assert shared.cycles_per_load < near.cycles_per_load < far.cycles_per_load
    assert all(300 < c.clock_mhz < 3500 for c in (near, far))


@pytest.mark.gpu
def test_a_ring_beyond_the_l2_is_met_cold_and_still_followed(no_leak):
    l2 = gm.device().l2_cache_size
    ws = 4 * l2 // 128 * 128
    c = gm.latency(ws, steps=2000, seed=4)
    assert c.warmup == 0
    np.testing.assert_array_equal(c.end, latency_reference(ws, steps=2000, seed=4))
    c32 = gm.latency(ws, lanes=32, steps=500, warmup=7, variant="cg")
    np.testing.assert_array_equal(c32.end, latency_reference(ws, lanes=32, steps=500, warmup=7))


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_each_level_is_slower_than_the_one_above(no_leak):
    l2 = gm.device().l2_cache_size
    in_l1 = gm.latency(16 * KiB, variant="ca")
    in_l2 = gm.latency(min(4 * MiB, l2 // 4) // 128 * 128, variant="ca")
    in_dram = gm.latency(max(512 * MiB, 8 * l2) // 128 * 128, variant="ca", steps=4096)
    assert 2 * in_l1.cycles_per_load < in_l2.cycles_per_load
    assert 1.2 * in_l2.cycles_per_load < in_dram.cycles_per_load
    # cg skips L1: a ring that fits it costs an L2 hit
    assert gm.latency(16 * KiB, variant="cg").cycles_per_load > 2 * in_l1.cycles_per_load
    # shared memory and the constant cache are on chip
    assert gm.latency(16 * KiB, variant="shared").cycles_per_load < in_l2.cycles_per_load / 2
    assert gm.latency(1 * KiB, variant="constant").cycles_per_load < in_l2.cycles_per_load / 2
    # cycles (clock64) and nanoseconds (%globaltimer) come from one run: their ratio is a
    # plausible SM clock
    assert all(300 < c.clock_mhz < 3500 for c in (in_l1, in_l2, in_dram))


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_latency_ladder_and_cache_sizes_on_the_gpu(no_leak):
    t = ladder.latency_ladder([1024, 4096, 1 << 20, 64 << 20], variants=("ca", "shared"),
                              steps=512, progress=False)
    assert [(r["variant"], r["working set"]) for r in t] == [
        ("ca", 1024), ("ca", 4096), ("ca", 1 << 20), ("ca", 64 << 20),
        ("shared", 1024), ("shared", 4096)]
    assert all(r["cycles/load"] > 1 and r["ns/load"] > 0 for r in t)
    ca = {r["working set"]: r["cycles/load"] for r in t if r["variant"] == "ca"}
    assert ca[1 << 20] > 2 * ca[1024]
    # the whole default ladder of one path, and the steps read off it
    full = ladder.latency_ladder(variants=("ca",), progress=False)
    sizes = {r["level"]: r for r in cache_sizes(full)}
    l2 = gm.device().l2_cache_size
    assert 16 * KiB <= sizes["L1 (capacity in use)"]["measured"] <= 1 * MiB
    assert sizes["L1 (capacity in use)"]["measured"] < sizes["L2"]["measured"]
    assert l2 / 8 <= sizes["L2"]["measured"] <= 4 * l2


# ---- on the GPU: bandwidth --------------------------------------------------------------------
def _ints(rng, n):
    return rng.integers(-8, 9, n).astype(np.float32)   # every partial sum exact in float32


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 3, 4, 5, 1023, 4099, 100_003])
@pytest.mark.parametrize("scope,cache", [("grid", None), ("grid", "default"), ("grid", "ca"),
                                         ("grid", "ldg"), ("grid", "cs"), ("block", None),
                                         ("block", "cg")])
def test_read_sums_every_value(rng, n, scope, cache, no_leak):
    x = _ints(rng, n)
    got = gm.bandwidth(x, scope=scope, cache=cache, passes=3, blocks=5, block=96)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (3,)
    assert got[0] == bandwidth_reference(x, passes=3, blocks=5, scope=scope)
    assert got[1] > 0 and got[2] >= 0
    rec = gm.last_record()
    assert rec.grid == (5, 1, 1) and rec.block == (96, 1, 1) and rec.params["scope"] == scope
    default = "cg" if scope == "grid" else "ca"      # around L1, or into it
    assert rec.params["cache"] == (cache or default)
    assert rec.bytes == 4 * n * 3 * (5 if scope == "block" else 1)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 5, 4097, 12288])
def test_shared_sums_every_value(rng, n, no_leak):
    x = _ints(rng, n)
    got = gm.bandwidth(gm.to_device(x), variant="shared", passes=2)
    assert isinstance(got, gm.DeviceArray)
    rec = gm.last_record()
    blocks = rec.params["blocks"]
    assert blocks >= gm.device().multiprocessors and rec.grid == (blocks, 1, 1)
    assert got.get()[0] == bandwidth_reference(x, variant="shared", passes=2, blocks=blocks)
    assert rec.smem == -(-n // 4) * 16 + 256 and rec.params["scope"] == "block"


@pytest.mark.gpu
def test_read_default_grid_is_a_full_wave(rng, no_leak):
    x = _ints(rng, 300_001)
    got = gm.bandwidth(x, scope="block", passes=2)
    blocks = gm.last_record().params["blocks"]
    occ = gm.kernel_occupancy("bandwidth", "read", 256, scope="block", cache="ca")
    assert blocks == gm.device().multiprocessors * occ.blocks_per_sm
    assert got[0] == bandwidth_reference(x, passes=2, blocks=blocks, scope="block")
    assert gm.bandwidth(x)[0] == bandwidth_reference(x)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 3, 4, 7, 1025, 100_003])
@pytest.mark.parametrize("cache", [None, "default", "ca", "ldg", "cs"])
def test_copy_copies_every_element(rng, n, cache, no_leak):
    x = rng.standard_normal(n).astype(np.float32)
    out = gm.to_device(np.full(n, np.nan, np.float32))
    got = gm.bandwidth(gm.to_device(x), variant="copy", cache=cache, passes=2, blocks=3,
                       block=64, out=out)
    assert got is out
    np.testing.assert_array_equal(out.get(), x)
    assert gm.last_record().bytes == 8 * n * 2
    np.testing.assert_array_equal(gm.bandwidth(x, variant="copy"), x)


@pytest.mark.gpu
def test_bandwidth_out_and_empty_input(no_leak):
    d = gm.to_device(np.ones(64, np.float32))
    res = gm.empty((3,), np.float64)
    assert gm.bandwidth(d, out=res) is res and res.get()[0] == 64.0
    with pytest.raises(ValueError, match="out must not share memory with an input"):
        gm.bandwidth(d, variant="copy", out=d)
    with pytest.raises(ValueError, match=r"out has shape \(4,\)"):
        gm.bandwidth(d, out=gm.empty((4,), np.float64))
    np.testing.assert_array_equal(gm.bandwidth(np.zeros(0, np.float32)), [0.0, 0.0, 0.0])
    assert gm.bandwidth(np.zeros(0, np.float32), variant="copy").shape == (0,)


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_bandwidth_ladder_on_the_gpu(no_leak):
    t = ladder.bandwidth_ladder([16 * KiB, 1 << 20, 1 << 24], repeat=2, progress=False)
    assert [(r["variant"], r["scope"]) for r in t] == [
        ("read", "block"), ("read", "block"), ("read", "grid"), ("read", "grid"),
        ("copy", "grid"), ("copy", "grid"), ("shared", "block"), ("cudaMemcpy D2D", "device")]
    sms = gm.device().multiprocessors
    for r in t:
        assert r["GB/s"] > 0 and r["ms"] > 0
        if r["variant"] in ("read", "shared"):
            assert 300 < r["clock MHz"] < 3500 and r["bytes/clk/SM"] > 0
            assert r["passes"] >= 1 and r["blocks"] >= sms


# ---- on the GPU: bench(l2="cold") and the helpers -----------------------------------------------
@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_cold_l2_is_not_faster_than_warm(no_leak):
    l2 = gm.device().l2_cache_size
    x = gm.to_device(np.ones(l2 // 2 // 4, np.float32))       # half the L2: resident when warm
    res = gm.empty((3,), np.float64)
    warm = gm.bench(gm.bandwidth, x, out=res, repeat=20, warmup=3)
    cold = gm.bench(gm.bandwidth, x, out=res, repeat=20, warmup=3, l2="cold")
    assert (warm.l2, cold.l2) == ("warm", "cold")
    assert cold.median_ms > warm.median_ms


@pytest.mark.gpu
def test_l2_flush_and_memcpy_timing(no_leak):
    l2 = gm.device().l2_cache_size
    assert gm._core._l2_flush() == 2 * l2
    assert gm._core._l2_flush(1 << 20) == 1 << 20
    a, b = gm.to_device(np.arange(1 << 20, dtype=np.float32)), gm.empty((1 << 20,))
    ms = gm._core._time_memcpy(b, a, 4)
    assert len(ms) == 4 and all(m > 0 for m in ms)
    np.testing.assert_array_equal(b.get(), np.arange(1 << 20, dtype=np.float32))
    with pytest.raises(ValueError, match="_time_memcpy: dst .* must be two arrays of the "
                                         "same size"):
        gm._core._time_memcpy(gm.empty((3,)), a, 1)
    with pytest.raises(ValueError, match=r"_time_memcpy: repeat=0 is not allowed"):
        gm._core._time_memcpy(b, a, 0)


def test_cache_sizes_of_a_ladder_measured_without_a_gpu_says_so(no_gpu):
    t = ladder.latency_ladder([1024, 4096, 1 << 20], variants=("ca",), progress=False)
    with pytest.raises(ValueError, match=r"cache_sizes: the table's ca rows were not measured"):
        cache_sizes(t, device=H100)


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline and the memory card's rows on the model, on the fake GPU (the
# stand-ins the ladder declares), on a GPU
LEVELS = ["shared", "constant", "L1", "L2 near", "L2 far", "L2 near, TMA", "device memory"]


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    lad = first_with(ladder.LESSON.headline(True, True), "L1_cycles")["measured"]
    assert (lad["L1_cycles"], lad["L2 near_cycles"], lad["device memory_cycles"]) == (
        30.0, 260.0, 700.0)


def test_card_rows_without_a_gpu_are_the_published_figures():
    rows = ladder.LESSON.card(False, True)
    by = {r["level"]: r for r in rows}
    assert list(by) == LEVELS and {r["lesson"] for r in rows} == {"ladder"}
    assert [r["level"] for r in sorted(rows, key=lambda r: r["depth"])] == [
        "shared", "constant", "L1", "L2 near", "L2 near, TMA", "L2 far", "device memory"]
    assert by["L1"]["published"] == "32-40 cyc, 128 B/clk/SM"
    assert by["L2 far"]["size"] == 50 * 2**20 and by["L2 near"]["size_text"] == "25 MiB"
    assert by["device memory"]["published_GB/s"] == 3350.0
    assert by["device memory"]["size_text"] == "80 GB (published)"
    assert by["shared"]["size_text"] == "228 KiB/SM"          # cc 9.0's largest carveout
    text = report.card_table(rows, report.card_title(False)).to_text(0)
    assert "570-860 cyc, 3,350 GB/s" in text


def test_card_rows_on_a_gpu_without_published_figures(monkeypatch):
    FakeGPU(monkeypatch)
    by = {r["level"]: r for r in ladder.LESSON.card(True, True)}
    assert by["L1"]["cycles"] == 30.0 and by["L2 near"]["cycles"] == 260.0
    assert by["L1"]["GB/s"] == 25000.0 and by["device memory"]["GB/s"] == 3000.0
    assert by["device memory"]["size"] == 80 * 2**30
    assert all(r["published"] == "" and r["GB/s_ratio"] is None for r in by.values())


def test_card_rows_on_an_h100_set_ratios(monkeypatch):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    by = {r["level"]: r for r in ladder.LESSON.card(True, False)}
    assert by["L1"]["cycles_ratio"] == pytest.approx(30.0 / 36.0)
    # 128 bytes/clk/SM at the clock the read saw: 132 x 128 x 1.98 GB/s
    assert by["L1"]["GB/s_ratio"] == pytest.approx(25000.0 / (132 * 128 * 1.98))
    assert by["device memory"]["GB/s_ratio"] == pytest.approx(3000.0 / 3350.0)
    assert by["shared"]["cycles_ratio"] == pytest.approx(30.0 / 29.5)
    assert by["L2 near"]["GB/s_ratio"] is None          # no published L2 bandwidth for it
    cells = {r["level"]: r for r in report.card_table(list(by.values()))}
    assert cells["device memory"]["x published"] == "0.98 lat, 0.90 BW"     # 700 / 715 cycles
    # ceilings: L1's published rate at the 1,900 MHz its read ran at, of 1,980; device
    # memory's at the memory clock the GPU reports (3,352 GB/s), its DRAM bytes the why
    l1, dram = by["L1"], by["device memory"]
    assert l1["ceiling_GB/s"] == pytest.approx(132 * 128 * 1.90)
    assert l1["ceiling_ratio"] == pytest.approx(25000.0 / (132 * 128 * 1.90))
    assert l1["why"] == "SM clock 1,900 of 1,980 MHz" and l1["why_value"] == 1900.0
    assert dram["ceiling_GB/s"] == pytest.approx(gm.runtime.device().theoretical_bandwidth_gbps)
    assert [o["what"] for o in dram["ceiling"]["overheads"]] == [
        f"the memory clock the GPU reports ({gm.runtime.device().theoretical_bandwidth_gbps:,.0f} GB/s)"]
    assert dram["why_value"] == 1.01 and dram["why"].startswith("1.01 DRAM bytes per byte")
    assert (dram["GB/s_min"], dram["GB/s_max"], dram["runs"]) == (2940.0, 3060.0,
                                                                  CARD_RUNS)
    assert cells["L1"]["x ceiling"] == f"{25000.0 / (132 * 128 * 1.90):.2f}"
    assert by["L2 near"]["ceiling"] is None and by["L2 near"]["GB/s_min"] == 0.98 * 7000.0


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_card_rows_on_a_gpu_climb_the_hierarchy():
    by = {r["level"]: r for r in ladder.LESSON.card(True, True)}
    lat = [by[k]["cycles"] for k in ("L1", "L2 near", "L2 far", "device memory")]
    assert lat == sorted(lat) and lat[0] < 100 and lat[-1] > 3 * lat[0], lat
    assert by["shared"]["cycles"] < by["L2 near"]["cycles"]
    bw = [by[k]["GB/s"] for k in ("L1", "L2 near", "device memory")]
    assert bw == sorted(bw, reverse=True), bw
    if gm.runtime.published.published(gm.device().name) is not None:
        assert 0.3 < by["device memory"]["GB/s_ratio"] < 1.1
