"""The dram lesson (gpumem.lessons.dram: dram_stream, dram_burst, dram_channels)
and its sweeps: validation without a GPU, the NumPy references against plain
loops, the sweeps in model mode; on a GPU each kernel's per-block sums against
the references on fresh random data of awkward sizes (outputs poisoned with NaN
first), and the burst's sector counts against the model."""
import numpy as np
import pytest

import gpumem as gm
from gpumem.lessons import dram
from gpumem.model import dram as dm
from _helpers import f32, m, poisoned
from _fake_gpu import FakeGPU, first_with

gpu = pytest.mark.gpu


# ---- declaration --------------------------------------------------------------------------
def test_declared_as_a_lesson():
    assert "dram" in gm.lessons.LESSONS
    assert dram.LESSON.families == ("dram_stream", "dram_burst", "dram_channels")
    assert dram.LESSON.notebooks == ("11_dram",)
    assert dram.LESSON.benchmark == "dram"
    assert [v.name for v in gm.variants("dram_stream")] == ["float", "float2", "float4"]
    assert [v.name for v in gm.variants("dram_channels")] == ["strided", "random"]
    assert gm.dram_stream is dram.dram_stream
    # the widths' bytes and the pieces: of the C table's choices (issue 48)
    rows = {r["name"]: r for r in gm._core.args("dram_stream") + gm._core.args("dram_burst")}
    assert tuple(dram.WIDTHS) == rows["width"]["choices"]
    assert dram.PIECES == rows["piece"]["allowed"]


# ---- validation (no GPU) -----------------------------------------------------------------------
A = m(1000)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: dram.dram_stream(None), TypeError, "dram_stream: a must be"),
    (lambda: dram.dram_stream(m(10, dtype=np.float64)), TypeError, "dtype"),
    (lambda: dram.dram_stream(np.zeros(0, np.float32)), ValueError, "a.size=0 is not allowed"),
    (lambda: dram.dram_stream(A, unroll=3), ValueError, "unroll=3 is not allowed"),
    (lambda: dram.dram_stream(A, unroll=32), ValueError, "unroll=32 is not allowed"),
    (lambda: dram.dram_stream(A, unroll=True), TypeError, "unroll"),
    (lambda: dram.dram_stream(A, width="float3"), ValueError, "float3"),
    (lambda: dram.dram_stream(A, grid=0), ValueError, "grid=0 is not allowed"),
    (lambda: dram.dram_stream(A, grid=2**20 + 1), ValueError, "grid=1048577"),
    (lambda: dram.dram_stream(A, block=100), ValueError, "block=100 is not allowed"),
    (lambda: dram.dram_stream(A, block=2048), ValueError, "block=2048"),
    (lambda: dram.dram_stream(A, grid=1.5), TypeError, "grid"),
    (lambda: dram.dram_burst(A, 0), ValueError, "pieces=0 is not allowed"),
    (lambda: dram.dram_burst(A, -5), ValueError, "pieces"),
    (lambda: dram.dram_burst(A, 10, piece=12), ValueError, "piece=12 is not allowed"),
    (lambda: dram.dram_burst(A, 10, piece=256), ValueError, "piece=256"),
    (lambda: dram.dram_burst(m(1), 10, piece=8), ValueError, "a.size=1 is not allowed"),
    (lambda: dram.dram_burst(m(4, 4), 10), ValueError, "1-D"),
    (lambda: dram.dram_burst(A, 10, seed=-1), ValueError, "seed=-1"),
    (lambda: dram.dram_burst(A, 2**31), ValueError, "pieces"),
    (lambda: dram.dram_burst(A, "3"), TypeError, "pieces"),
    (lambda: dram.dram_channels(A, 1), ValueError, "streams=1 is not allowed"),   # 4000 B < chunk
    (lambda: dram.dram_channels(m(2**20), 1, chunk=3000), ValueError, "chunk=3000"),
    (lambda: dram.dram_channels(m(2**20), 1, chunk=1024), ValueError, "chunk=1024"),
    (lambda: dram.dram_channels(m(2**20), 4, stride=16), ValueError, "stride=16"),
    (lambda: dram.dram_channels(m(2**20), 4, stride=96), ValueError, "stride=96"),
    (lambda: dram.dram_channels(m(2**20), 65, stride=1024), ValueError, "streams=65"),
    (lambda: dram.dram_channels(m(2**20), 4, stride=3 * 65536), ValueError, "stride=196608"),
    (lambda: dram.dram_channels(m(2**20), 65, stride=65536), ValueError, "streams=65"),
    (lambda: dram.dram_channels(m(2**20), 65, placement="random"), ValueError, "streams=65"),
    (lambda: dram.dram_channels(m(2**20), 4, placement="random", stride=65536), ValueError,
     "stride=65536"),
    (lambda: dram.dram_channels(m(2**20), 4, placement="diagonal"), ValueError, "diagonal"),
    (lambda: dram.dram_channels(m(2**20), 0), ValueError, "streams=0"),
])
def test_hostile_input_refused_before_the_gpu(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_out_must_have_one_element_per_block():
    with pytest.raises((TypeError, ValueError), match="out"):
        dram.dram_stream(A, grid=7, out=np.zeros(7, np.float32))


# ---- the references against plain loops (no GPU) ------------------------------------------------
def _loop_stream(a, k, unroll, grid, block):
    nv = a.size // k
    sums = np.zeros(grid)
    tile = block * unroll
    for v in range(nv):
        sums[(v // tile) % grid] += a[v * k:(v + 1) * k].astype(np.float64).sum()
    sums[0] += a[nv * k:].astype(np.float64).sum()
    return sums


@pytest.mark.parametrize("width,unroll,grid,block,n", [
    ("float", 1, 3, 32, 1003), ("float2", 4, 5, 64, 2049), ("float4", 2, 7, 96, 4099),
    ("float4", 16, 2, 32, 5003), ("float", 8, 1, 1024, 777)])
def test_stream_reference_is_the_loop(width, unroll, grid, block, n):
    a = f32(np.random.default_rng(n), n)
    got = dram.stream_reference(a, width=width, unroll=unroll, grid=grid, block=block)
    assert got.shape == (grid,)
    np.testing.assert_allclose(got, _loop_stream(a, dram.WIDTHS[width] // 4, unroll, grid, block),
                               rtol=1e-12, atol=1e-9)
    assert got.sum() == pytest.approx(a.astype(np.float64).sum(), abs=1e-9)


def test_burst_slots_are_the_hash_and_in_range():
    s = dram.burst_slots(10000, 16, 1003, seed=3)
    assert s.min() >= 0 and s.max() < 4 * 1003 // 16
    assert len(np.unique(s)) > 200                 # spread over the 250 slots
    # the splitmix64 finalizer, by Python integers
    def mix(q, seed):
        x = (q + (seed + 1) * 0x9E3779B97F4A7C15) % 2**64
        x ^= x >> 31
        x = x * 0xBF58476D1CE4E5B9 % 2**64
        x ^= x >> 27
        x = x * 0x94D049BB133111EB % 2**64
        return x ^ (x >> 31)
    assert [int(v) for v in s[:50]] == [mix(q, 3) % 250 for q in range(50)]
    assert not np.array_equal(dram.burst_slots(100, 16, 1003, 0), dram.burst_slots(100, 16, 1003, 1))


@pytest.mark.parametrize("piece,pieces,block", [(4, 1001, 32), (8, 77, 96), (16, 500, 64),
                                                 (32, 333, 32), (64, 100, 256), (128, 999, 1024)])
def test_burst_reference_is_the_loop(piece, pieces, block):
    a = f32(np.random.default_rng(piece), 1003)
    got = dram.burst_reference(a, pieces, piece=piece, seed=5, block=block)
    lanes = max(1, piece // 16)
    ref = np.zeros(-(-pieces * lanes // block))
    for q, s in enumerate(dram.burst_slots(pieces, piece, a.size, 5)):
        f = s * piece // 4
        ref[q * lanes // block] += a[f:f + piece // 4].astype(np.float64).sum()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9)


def test_channel_starts():
    st = dram.channel_starts(5, stride=8192, chunk=2048, nbytes=65644)
    assert st.tolist() == [0, 8192, 16384, 24576, 32768]
    assert dram.channel_starts(3, chunk=2048, nbytes=65644).tolist() == [0, 2048, 4096]
    for bits in (0, 1, 4, 5, 14):
        r = dram.channel_starts(1 << bits, placement="random", chunk=4096, nbytes=4096 << bits,
                                seed=9)
        assert sorted(r.tolist()) == [4096 * i for i in range(1 << bits)]   # a permutation
    r = dram.channel_starts(64, placement="random", chunk=4096, nbytes=4096 * 64, seed=9)
    assert r.tolist() != sorted(r.tolist())                                  # not in order


def test_channels_reference_is_the_loop():
    a = f32(np.random.default_rng(2), 16411)
    for kw in ({"stride": 8192, "chunk": 2048}, {"placement": "random", "chunk": 4096}):
        streams, block = 7, 96
        got = dram.channels_reference(a, streams, block=block, seed=4, **kw)
        st = dram.channel_starts(streams, nbytes=4 * a.size, seed=4, **kw) // 4
        ref = np.zeros(-(-32 * streams // block))
        for w, s in enumerate(st):
            ref[32 * w // block] += a[s:s + kw["chunk"] // 4].astype(np.float64).sum()
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def _channels_loop(a, streams, stride, chunk, block):
    """dram_channels' interleaved placement lane load by lane load, as the kernel addresses it."""
    piece = min(stride, chunk)
    ref = np.zeros(-(-32 * streams // block))
    for w in range(streams):
        for off in range(0, chunk, 16):
            byte = w * stride + (off // piece) * streams * stride + off % piece
            ref[32 * w // block] += a[byte // 4:byte // 4 + 4].astype(np.float64).sum()
    return ref


@pytest.mark.parametrize("stride,chunk,streams,block", [(32, 2048, 7, 96), (64, 4096, 3, 32),
                                                        (1024, 2048, 5, 64), (2048, 2048, 4, 64),
                                                        (8192, 2048, 3, 32)])
def test_interleaved_reference_is_the_loop(stride, chunk, streams, block):
    a = f32(np.random.default_rng(stride), 16411)
    got = dram.channels_reference(a, streams, stride=stride, chunk=chunk, block=block)
    np.testing.assert_allclose(got, _channels_loop(a, streams, stride, chunk, block),
                               rtol=1e-9, atol=1e-9)
    # every byte of the interleaved region read once: the sums add up to it
    if stride < chunk:
        assert got.sum() == pytest.approx(a[:streams * chunk // 4].astype(np.float64).sum())


def test_references_refuse_what_the_kernels_refuse():
    with pytest.raises(ValueError, match="unroll=3"):
        dram.stream_reference(A, unroll=3)
    with pytest.raises(ValueError, match="piece=12"):
        dram.burst_reference(A, 10, piece=12)
    with pytest.raises(ValueError, match="stride=48"):
        dram.channels_reference(m(2**20), 4, stride=48)


# ---- the sweeps in model mode (no GPU) ---------------------------------------------------------------
def test_little_sweep_model_follows_littles_law(no_gpu):
    plain = dict(bank_ns=0, round_ns=0, spread_ns=0)           # the plain law: no round terms
    t = dram.little_sweep(sms=100, latency_ns=500.0, peak_gbps=2000.0, **plain)
    assert len(t) == sum(len(v) for v in dram.LITTLE_WAYS.values())
    for row in t:
        assert row["in_flight_per_sm"] == row["warps_per_sm"] * 32 * row["width"] * row["unroll"]
        assert row["model_GB/s"] == pytest.approx(min(2000.0, row["in_flight_per_sm"] * 100 / 500))
        assert row["GB/s"] is None
    q = dram.little_sweep(sms=100, latency_ns=500.0, peak_gbps=2000.0, bank_ns=60.0)
    for row in q:      # the queues: each point below the plain law, as the model computes it
        assert row["model_GB/s"] == pytest.approx(dm.little_bandwidth(
            row["in_flight_per_sm"], loads=row["unroll"], sms=100, latency_ns=500.0,
            peak_gbps=2000.0, bank_ns=60.0))
        assert row["model_GB/s"] < min(2000.0, row["in_flight_per_sm"] * 100 / 500)
    assert "banks busy 60 ns" in q.title
    s = dram.little_summary(t, peak_gbps=2000.0, sms=100, latency_ns=500.0, **plain)
    assert s["latency_x_bandwidth_per_sm"] == pytest.approx(10000.0)
    assert s["source"] == "model"
    # 90% of 2000 GB/s: between the points at 8 KiB (1638 GB/s) and 16 KiB (2000), linearly
    assert s["in_flight_per_sm_needed"] == pytest.approx(8192 + (1800 - 1638.4) / 361.6 * 8192)
    assert s["model_in_flight_per_sm_needed"] == pytest.approx(9000.0)      # 0.9 x the product
    s = dram.little_summary(q, peak_gbps=2000.0, sms=100, latency_ns=500.0, bank_ns=60.0)
    assert s["model_in_flight_per_sm_needed"] == pytest.approx(
        dm.little_bytes(0.9, sms=100, latency_ns=500.0, peak_gbps=2000.0, bank_ns=60.0))
    # each term means one thing: bank_ns=0 drops the banks' queues only, not the loop's time
    nb = dram.little_sweep(["warps"], sms=100, latency_ns=500.0, peak_gbps=2000.0, bank_ns=0)
    assert nb["model_GB/s"][0] == pytest.approx(
        1024 * 100 / (500.0 + dm.DRAM_ROUND_NS))                    # 1 KiB/SM, below the knee
    assert "loop 20 ns" in nb.title and "banks busy 0 ns" in nb.title
    r = dram.little_sweep(["unroll"], sms=100, latency_ns=500.0, peak_gbps=2000.0, **{
        **plain, "round_ns": 100.0})
    assert r["model_GB/s"][0] == pytest.approx(1024 * 100 / 600.0)
    for kw, exc, msg in [({"round_ns": -1.0}, ValueError, "round_ns=-1.0 is not allowed; "
                                                          "round_ns must be non-negative"),
                         ({"spread_ns": float("inf")}, ValueError, "spread_ns=inf is not allowed"),
                         ({"round_ns": "20"}, TypeError, "round_ns must be a number, not str")]:
        with pytest.raises(exc, match="little_sweep: " + msg):
            dram.little_sweep(**kw)
        with pytest.raises(exc, match="little_summary: " + msg):
            dram.little_summary(t, **kw)


def test_burst_sweep_model(no_gpu):
    t = dram.burst_sweep(pieces=1000)
    assert t["sectors_model"] == [1000, 1000, 1000, 1000, 2000, 4000]
    assert t["dram_floor_model"] == [32000, 32000, 32000, 32000, 64000, 128000]
    assert t["requests_model"] == [32, 32, 32, 63, 125, 250]
    assert t["gld_transactions"] == [None] * 6


def test_channel_sweep_streams_fit(no_gpu):
    t = dram.channel_sweep(n=1 << 22)
    assert sorted({r["stride"] for r in t}) == [64 << k for k in range(19)]   # 64 B .. 16 MiB...
    t = dram.channel_sweep(n=1 << 28)
    assert sorted({r["stride"] for r in t}) == [64 << k for k in range(21)]   # ... 64 MiB
    for row in t:
        assert row["streams"] * 65536 <= 4 << 28
        assert (row["streams"] - 1) * row["stride"] + 65536 <= 4 << 28
    assert [r["placement"] for r in t][:2] == ["strided", "random"]


@pytest.mark.parametrize("call,msg", [
    (lambda: dram.little_sweep(ways="diagonal"), "diagonal"),
    (lambda: dram.little_sweep(n=2**28 + 1), "n="),
    (lambda: dram.little_sweep(block=100), "block=100"),
    (lambda: dram.little_sweep(bank_ns=-1.0), "bank_ns=-1.0"),
    (lambda: dram.burst_sweep((12,)), "12"),
    (lambda: dram.channel_sweep((65536 * 3,)), "196608"),
    (lambda: dram.channel_sweep(chunk=3000), "chunk=3000"),
])
def test_sweeps_refuse_bad_arguments(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_every_sanitizer_call_passes_the_checks():
    with gm.runtime.args._checking():       # the C entry points check, nothing is launched
        dram._sanitize()


def test_headline_without_gpu_shows_the_model():
    (row,) = dram._headline(False, True)
    assert row["lesson"] == "dram"
    assert row["measured_text"].startswith("would measure")
    assert row["model"]["in_flight_per_sm_for_90pct"] == pytest.approx(dm.little_bytes(0.9))
    assert row["model"]["latency_x_bandwidth_per_sm"] == pytest.approx(
        dm.latency_bandwidth_product())


# ---- on the GPU: the kernels against the references --------------------------------------------------
def _close(got, ref, a_abs):
    np.testing.assert_allclose(np.asarray(got, np.float64), ref, rtol=0, atol=1e-5 * a_abs + 1e-5)


@gpu
@pytest.mark.parametrize("width", list(dram.WIDTHS))
@pytest.mark.parametrize("unroll", [1, 2, 4, 8, 16])
def test_stream_sums_every_float(width, unroll):
    rng = np.random.default_rng(unroll)
    for n, grid, block in ((1, 1, 32), (1003, 3, 96), (300007, 11, 256), (1 << 20, 132, 1024)):
        a = f32(rng, n)
        ref = dram.stream_reference(a, width=width, unroll=unroll, grid=grid, block=block)
        out = poisoned((grid,))
        dram.dram_stream(gm.to_device(a), width=width, unroll=unroll, grid=grid, block=block,
                         out=out)
        _close(out.get(), ref, np.abs(a).astype(np.float64).sum())
        got = dram.dram_stream(a, width=width, unroll=unroll, grid=grid, block=block)
        assert isinstance(got, np.ndarray) and got.shape == (grid,)
        _close(got, ref, np.abs(a).astype(np.float64).sum())


@gpu
@pytest.mark.parametrize("piece", dram.PIECES)
def test_burst_sums_every_piece(piece):
    rng = np.random.default_rng(piece)
    for n, pieces, block, seed in ((1003, 1, 32, 0), (1003, 1001, 96, 7), (300007, 40009, 256, 3)):
        a = f32(rng, n)
        ref = dram.burst_reference(a, pieces, piece=piece, seed=seed, block=block)
        out = poisoned(ref.shape)
        dram.dram_burst(gm.to_device(a), pieces, piece=piece, seed=seed, block=block, out=out)
        _close(out.get(), ref, np.abs(a).astype(np.float64).sum())


@gpu
@pytest.mark.parametrize("kw", [{}, {"stride": 8192, "chunk": 2048}, {"chunk": 2048},
                                {"stride": 32, "chunk": 2048}, {"stride": 256, "chunk": 4096},
                                {"stride": 1024, "chunk": 2048, "block": 96},
                                {"placement": "random", "chunk": 4096, "seed": 5},
                                {"placement": "random", "chunk": 2048, "block": 1024}])
def test_channels_sum_every_chunk(kw):
    rng = np.random.default_rng(len(kw))
    a = f32(rng, 16411 if kw else (1 << 17) + 11)    # the defaults: 64 KiB chunks a chunk apart
    for streams in (1, 3, 7):
        ref = dram.channels_reference(a, streams, **kw)
        out = poisoned(ref.shape)
        dram.dram_channels(gm.to_device(a), streams, out=out, **kw)
        _close(out.get(), ref, np.abs(a).astype(np.float64).sum())


@gpu
def test_a_misaligned_foreign_view_is_refused_before_the_launch():
    cp = pytest.importorskip("cupy")
    x = cp.ones(1 << 12, dtype=cp.float32)[1:]              # 4 bytes past a 256-byte boundary
    for call in (lambda: dram.dram_stream(x, width="float4"),
                 lambda: dram.dram_stream(x, width="float2"),
                 lambda: dram.dram_burst(x, 10, piece=16),
                 lambda: dram.dram_channels(x, 1, chunk=2048)):
        with pytest.raises(ValueError, match="byte boundary"):
            call()
    got = dram.dram_stream(x, width="float", grid=3, block=64)   # 4-byte loads: aligned
    assert got.get().sum() == pytest.approx(4095.0)
    assert dram.dram_burst(x, 10, piece=4, block=32).get().sum() == pytest.approx(10.0)


@gpu
def test_after_a_refusal_the_next_call_works():
    a = f32(np.random.default_rng(0), 5003)
    with pytest.raises(ValueError):
        dram.dram_stream(a, unroll=5)
    got = dram.dram_stream(a, grid=3, block=64)
    _close(got, dram.stream_reference(a, grid=3, block=64), np.abs(a).sum())


@gpu
@pytest.mark.parametrize("piece", dram.PIECES)
def test_burst_sectors_and_requests_equal_the_model(piece):
    if not gm.profiler_available():
        pytest.skip("counters not readable here")
    a = gm.to_device(f32(np.random.default_rng(1), 1 << 22))
    pieces = 40009
    with gm.profile(metrics=["gld_transactions", "gld_requests", "dram_read_bytes"]) as p:
        dram.dram_burst(a, pieces, piece=piece, seed=11, block=256)
    got = p.records[0].metrics
    slots = dram.burst_slots(pieces, piece, 1 << 22, 11)
    exact = dm.burst_sectors(piece, pieces, slots)        # shared sectors within a warp: once
    assert gm.model.predict_record(p.records[0])["gld_transactions"] == exact
    assert exact >= 0.99 * dm.burst_sectors(piece, pieces)
    assert got["gld_transactions"] == exact
    assert got["gld_requests"] == dm.burst_requests(piece, pieces)
    # the DRAM reads at least the distinct sectors (a few pieces share a sector at random)
    sectors = np.unique((slots * piece)[:, None] // 32 + np.arange(max(1, piece // 32)))
    assert got["dram_read_bytes"] >= 0.98 * 32 * sectors.size


@gpu
@pytest.mark.parametrize("width,unroll,n", [("float", 1, 300007), ("float2", 4, 1 << 20),
                                            ("float4", 16, 1000003)])
def test_stream_and_channels_counters_equal_the_model(width, unroll, n):
    if not gm.profiler_available():
        pytest.skip("counters not readable here")
    a = gm.to_device(f32(np.random.default_rng(3), n))
    b = gm.to_device(f32(np.random.default_rng(4), 1 << 20))
    names = ["gld_requests", "gld_transactions", "gst_requests", "gst_transactions"]
    with gm.profile(metrics=names) as p:
        dram.dram_stream(a, width=width, unroll=unroll, grid=11, block=96)
        dram.dram_channels(b, 9, stride=1 << 17, chunk=8192, block=64)
        dram.dram_channels(b, 9, stride=64, chunk=8192, block=64)     # interleaved pieces
    for rec, want in zip(p.records, (dm.stream_counts(n, dram.WIDTHS[width], unroll, 11, 96),
                                     dm.channels_counts(9, 8192, 64),
                                     dm.channels_counts(9, 8192, 64))):
        assert {k: rec.metrics[k] for k in names} == {k: want[k] for k in names}, rec.kernel
        predicted = gm.model.predict_record(rec)          # the registry, from the record
        assert {k: rec.metrics[k] for k in names} == {k: predicted[k] for k in names}


@gpu
def test_stream_bandwidth_grows_with_bytes_in_flight():
    """More bytes in flight per SM, more bandwidth (not a speed target: a ratio)."""
    t = dram.little_sweep("unroll", n=1 << 26, repeat=5)
    gb = t["GB/s"]
    assert gb[2] > 1.5 * gb[0]          # unroll 4 against unroll 1 at 8 warps per SM


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the fake GPU (the stand-ins dram declares)
def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    dr = first_with(dram.LESSON.headline(True, True), "dram_bytes_per_sector")
    assert dr["measured"]["dram_bytes_per_sector"] == 64.0
    assert "a lone 32-byte piece costs 64 DRAM bytes" in dr["measured_text"]
