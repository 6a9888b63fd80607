"""gpumem.ladder: the latency measured the papers' way beside gpumem's own -- their strided
ring (``ring="strided"``) and their clock() around each load (``clock="each"``) -- and the
card's table that splits the difference between them.

Without a GPU: the arguments (refused with the TMA path, the per-load times' limit), the
strided ring's CPU walk, the model's copy of the ring names, and the table on a fake GPU.
On a GPU: every path's strided chase ends where the CPU walk ends, every load's time comes
back, and timing each load costs cycles that gpumem's loop does not."""
import numpy as np
import pytest

import gpumem as gm
from gpumem import _core, report
from gpumem.lessons.ladder import KiB, MiB, latency_reference
from gpumem.model import ring as model_ring
from gpumem.tools import card
from _fake_gpu import FakeGPU

PATHS = ["ca", "cg", "ldg", "shared", "constant"]       # every path but the TMA's


# ---- no GPU -------------------------------------------------------------------------------
def test_the_models_ring_names_are_the_kernels():
    args = {a["name"]: a for a in _core.args("latency")}
    assert args["ring"]["choices"] == model_ring.RINGS
    assert args["ring"]["default"] == "shuffled" and args["clock"]["default"] == "loop"
    assert args["clock"]["choices"] == ("loop", "each")
    assert args["ring"]["selects"] and args["clock"]["selects"]   # each picks a kernel


@pytest.mark.parametrize("kw,msg", [
    ({"variant": "tma", "ring": "strided"},
     r"ring='strided' is not allowed with variant='tma'; the bulk copy's chase has gpumem's "
     r"ring and clock only"),
    ({"variant": "tma", "clock": "each"}, r"clock='each' is not allowed with variant='tma'"),
    ({"clock": "each", "steps": 8193}, r"steps=8193 is not allowed with clock='each' and "
                                       r"lanes=1; .* lanes \* steps must be at most 8192"),
    ({"clock": "each", "lanes": 32, "steps": 257}, r"steps=257 is not allowed with "
                                                    r"clock='each' and lanes=32"),
    ({"ring": "sorted"}, r"ring='sorted' is unknown; allowed: 'shuffled', 'strided'"),
    ({"clock": "every"}, r"clock='every' is unknown; allowed: 'loop', 'each'"),
])
def test_the_papers_method_is_refused_where_it_cannot_run(kw, msg):
    with pytest.raises(ValueError, match="latency: " + msg):
        gm.latency(4096, **kw)


@pytest.mark.parametrize("name", ["ring", "clock"])
def test_ring_and_clock_must_be_str(name):
    with pytest.raises(TypeError, match=f"latency: {name} must be a str"):
        gm.latency(4096, **{name: 1})


@pytest.mark.parametrize("n,lanes,steps,warmup", [(1, 1, 5, 0), (8, 3, 5, 1), (37, 32, 100, 7),
                                                  (1000, 7, 999, 0)])
def test_the_strided_ring_ends_where_counting_ends(n, lanes, steps, warmup):
    got = latency_reference(128 * n, lanes=lanes, steps=steps, warmup=warmup, ring="strided",
                            seed=12345)                # the seed picks no strided ring
    want = [(l * n // lanes + warmup + steps) % n for l in range(lanes)]
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, latency_reference(128 * n, lanes=lanes, steps=steps,
                                                     warmup=warmup)) or n < 8


def test_latency_reference_names_a_bad_ring():
    with pytest.raises(ValueError, match=r"latency_reference: ring='sorted' is not allowed; "
                                         r"allowed: 'shuffled', 'strided'"):
        latency_reference(1024, ring="sorted")
    with pytest.raises(TypeError, match=r"latency_reference: ring must be a str, not int"):
        latency_reference(1024, ring=1)


def test_the_methods_table_splits_each_difference(monkeypatch):
    """On a fake H100 (its loads: the papers' ring 4 cycles more, their clock 6 more): every
    row with a published latency has the three methods; the table says what each adds."""
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    rows = report.card(measure=True)
    with_methods = [r for r in rows if r.get("methods")]
    assert {r["level"] for r in with_methods} == {
        r["level"] for r in rows if r["published_cycles"] and r["cycles"] is not None}
    assert {"shared", "L1", "L2 near", "device memory"} <= {r["level"] for r in with_methods}
    t = report.methods_table(rows)
    assert t.title == "each latency as the papers measure it"
    assert t["level"] == [r["level"] for r in with_methods]
    for line, r in zip(t, with_methods):
        assert line["gpumem's chase"] == f"{r['cycles']:.1f}"
        assert line["ring adds"] == "+4.0" and line["clock() adds"] == "+6.0"
        assert line[card.PAPERS] == f"{r['cycles'] + 10.0:.1f}"
        lo, hi = r["published_cycles"]
        inside = 0.95 * lo <= r["cycles"] + 10.0 <= 1.05 * hi
        assert line["papers' figure"] == "reproduced" if inside else \
            line["papers' figure"].startswith("not reproduced (")
    # the fake L1 (30 cycles, +10 = 40) lands in the H100's published 32-40
    assert t.rows[t["level"].index("L1")]["papers' figure"] == "reproduced"


def test_the_methods_table_is_empty_without_a_gpu():
    assert len(report.methods_table(report.card(measure=False))) == 0


# ---- on a GPU ------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("variant", PATHS)
@pytest.mark.parametrize("clock", ["loop", "each"])
@pytest.mark.parametrize("ws,stride,lanes,steps,warmup", [(8, 8, 1, 50, None),
                                                          (40960, 40, 7, 77, 13),
                                                          (8 * 37, 8, 32, 200, 3)])
def test_the_strided_chase_ends_where_the_cpu_walk_ends(variant, clock, ws, stride, lanes, steps,
                                                        warmup, no_leak):
    c = gm.latency(ws, variant=variant, stride=stride, lanes=lanes, steps=steps, warmup=warmup,
                   ring="strided", clock=clock)
    assert (c.ring, c.clock) == ("strided", clock)
    np.testing.assert_array_equal(c.end, latency_reference(ws, stride=stride, lanes=lanes,
                                                           steps=steps, warmup=c.warmup,
                                                           ring="strided"))
    rec = gm.last_record()
    assert rec.params["ring"] == "strided" and rec.params["clock"] == clock
    assert rec.bytes == 4 * lanes * (c.warmup + steps)        # a 4-byte index per load
    if clock == "loop":
        assert c.each is None and rec.smem == (ws if variant == "shared" else 0)
    else:
        assert c.each.shape == (steps, lanes)
        # a load takes cycles, fewer than the whole loop's
        assert (c.each >= 1).all() and (c.each.sum(axis=0) <= c.cycles).all()
        assert c.cycles_per_load == float(np.median(c.each))
        assert rec.smem == (ws if variant == "shared" else 0) + 8 * steps * lanes


@pytest.mark.gpu
@pytest.mark.parametrize("variant", PATHS)
def test_each_load_timed_on_gpumems_ring_ends_where_the_cpu_walk_ends(variant, no_leak):
    c = gm.latency(40960, variant=variant, stride=40, lanes=5, steps=300, seed=7, clock="each")
    np.testing.assert_array_equal(c.end, latency_reference(40960, stride=40, lanes=5, steps=300,
                                                           warmup=c.warmup, seed=7))
    assert c.each.shape == (300, 5) and c.ring == "shuffled"


@pytest.mark.gpu
def test_the_largest_shared_ring_with_the_most_times_fits(no_leak):
    # 48 KiB of ring and 64 KiB of times and values: past a block's default 48 KiB
    c = gm.latency(48 * KiB, variant="shared", steps=8192, ring="strided", clock="each")
    assert c.each.shape == (8192, 1) and gm.last_record().smem == 48 * KiB + 64 * KiB
    np.testing.assert_array_equal(c.end, latency_reference(48 * KiB, steps=8192, warmup=c.warmup,
                                                           ring="strided"))


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_timing_each_load_costs_cycles_gpumems_loop_does_not(no_leak):
    l2 = gm.device().l2_cache_size
    for ws, variant in ((16 * KiB, "shared"), (16 * KiB, "ca"),
                        (min(4 * MiB, l2 // 8) // 128 * 128, "cg")):
        loop = gm.latency(ws, variant=variant, steps=4096, ring="strided")
        each = gm.latency(ws, variant=variant, steps=4096, ring="strided", clock="each")
        # the clock reads and the store between them add to every load on chip (from L2 the
        # median of single loads meets the loop's mean, which its slow loads pull up)
        if variant != "cg":
            assert each.cycles_per_load > loop.cycles_per_load, (variant, each, loop)
        assert each.cycles_per_load > 0.9 * loop.cycles_per_load, (variant, each, loop)
        assert each.cycles_per_load < 2 * loop.cycles_per_load + 40
        assert 300 < each.clock_mhz < 3500
        assert each.ns_per_load == pytest.approx(each.cycles_per_load / each.clock_mhz * 1e3)


def test_latency_methods_checks_its_arguments_first():
    from gpumem.lessons import ladder

    with pytest.raises(ValueError, match=r"latency_methods: steps=8193 is not allowed; steps "
                                         r"must be 1\.\.8192"):
        ladder.latency_methods(steps=8193)
    with pytest.raises(TypeError, match=r"latency_methods: progress must be a bool"):
        ladder.latency_methods(progress=1)
    rings = ladder.chase_rings(50 * MiB)
    assert list(rings) == ["shared", "constant", "L1", "L2 near", "L2 far", "device memory"]
    assert all(ws % 128 == 0 for ws, _ in rings.values())


@pytest.mark.alone      # a cache measured: another process would share it
@pytest.mark.gpu
def test_latency_methods_on_the_gpu(no_leak):
    from gpumem.lessons import ladder

    t = ladder.latency_methods(steps=1024)
    assert t["level"] == list(ladder.chase_rings(gm.device().l2_cache_size))
    for r in t:
        assert r["ring adds"] == pytest.approx(r[card.STRIDED] - r["gpumem's chase"])
        assert r["clock() adds"] == pytest.approx(r[card.PAPERS] - r[card.STRIDED])
        assert r[card.PAPERS] > 0 and r[card.STRIDED] > 0, r
        if r["level"] in ("shared", "constant", "L1"):       # timing each load costs cycles
            assert r[card.PAPERS] > r[card.STRIDED], r
    by = {r["level"]: r for r in t}
    # the papers' chase keeps the levels in their order
    assert by["shared"][card.PAPERS] < by["L2 near"][card.PAPERS] < \
        by["device memory"][card.PAPERS]


@pytest.mark.parametrize("l2,err,msg", [("50", TypeError, r"chase_rings: l2 must be an int, not str"),
                                        (True, TypeError, r"l2 must be an int, not bool"),
                                        (1000, ValueError, r"chase_rings: l2=1000 is not allowed"),
                                        (2**33, ValueError, r"l2=8589934592 is not allowed")])
def test_chase_rings_names_a_bad_l2(l2, err, msg):
    from gpumem.lessons import ladder

    with pytest.raises(err, match=msg):
        ladder.chase_rings(l2)
