"""gpumem.lessons.clusters: distributed shared memory (compute capability 9.0+).

Without a GPU: the variant tables, the references, which GPUs the lesson runs on,
every bad argument (refused by name before the device is touched), the experiments
refusing by name, the report's unmeasured rows.  On a GPU of compute capability 9.0:
the chase ends where the reference says and a remote load costs more than a local
one; the stream checksums equal the reference for every variant, cluster size and
awkward size; the histograms equal np.bincount on poisoned outputs, for bin counts
beyond one block's shared memory; a refused cluster size is a ValueError in the
function and a note in the sweep; nothing is left behind."""
import types
import re

import numpy as np
import pytest

import gpumem as gm
from gpumem import experiments
from gpumem.lessons import clusters
from gpumem.lessons.clusters import (chase_hop, cluster_histogram_reference,
                                     dsmem_chase_reference, dsmem_pipeline_reference,
                                     dsmem_stream_reference)

from _helpers import poisoned
from _fake_gpu import FakeGPU, first_with

gpu = pytest.mark.gpu


# ---- tables, references, declaration (no GPU) ----------------------------------------------
def test_variants_tables():
    assert [v.name for v in gm.variants("dsmem_chase")] == ["local", "self", "remote"]
    assert [v.select for v in gm.variants("dsmem_chase")] == [0, 1, 2]
    assert [v.name for v in gm.variants("dsmem_stream")] == ["read", "write", "local"]
    assert [v.name for v in gm.variants("cluster_histogram")] == ["cluster", "block", "global",
                                                                  "owner"]
    assert [v.name for v in gm.variants("dsmem_pipeline")] == ["dsmem", "global"]
    for fam in ("dsmem_chase", "dsmem_stream", "cluster_histogram", "dsmem_pipeline"):
        for v in gm.variants(fam):      # every variant says which GPUs run it
            assert "compute capability 9.0+" in v.idea, (fam, v.name)
    assert gm.variants("dsmem_stream")[0].bytes == "16*(smem/16)*passes*cluster*clusters"
    assert gm.cluster_histogram is clusters.cluster_histogram
    assert experiments.dsmem_bandwidth is clusters.dsmem_bandwidth
    assert clusters.LESSON.notebooks == ("13_clusters",)
    assert clusters.LESSON.benchmark == "clusters"
    assert "clusters" in gm.lessons.LESSONS


def test_argument_tables():
    rows = {r["name"]: r for r in gm._core.args("dsmem_stream")}
    assert rows["cluster"]["allowed"] == (1, 2, 4, 8, 16) and rows["cluster"]["default"] == 2
    assert rows["smem"]["hi"] == 227 * 1024 and rows["smem"]["default"] is None
    rows = {r["name"]: r for r in gm._core.args("dsmem_chase")}
    assert rows["cluster"]["allowed"] == (2, 4, 8, 16) and rows["hop"]["hidden"]
    assert rows["nodes"]["hi"] == 12288


@pytest.mark.parametrize("cc, ok", [((9, 0), True), ((10, 0), True), ((12, 1), True),
                                    ((8, 9), False), ((8, 0), False), ((7, 5), False),
                                    ((np.int64(9), np.int64(0)), True)])
def test_which_gpus_run_the_lesson(cc, ok):
    assert clusters.cluster_capable(cc) is ok


@pytest.mark.parametrize("bad", [9.0, "9.0", (9,), None, (9.0, 0)])
def test_cluster_capable_refuses_what_is_no_capability(bad):
    with pytest.raises(TypeError, match="cluster_capable: cc must be"):
        clusters.cluster_capable(bad)


def test_an_older_gpu_is_refused_naming_the_capability(monkeypatch):
    import types

    monkeypatch.setattr(gm.runtime, "is_available", lambda: True)
    monkeypatch.setattr(gm.runtime, "device",
                        lambda: types.SimpleNamespace(compute_capability=(8, 0)))
    for fn in (clusters.dsmem_latency, clusters.dsmem_bandwidth, clusters.histogram_sweep,
               clusters.pipeline_sweep):
        with pytest.raises(gm.CudaError, match=rf"^{fn.__name__}: a cluster launch \(thread "
                                               r"block clusters, .*\) needs compute capability "
                                               r"9\.0 or newer \(sm_90, Hopper\); this GPU "
                                               r"has compute capability 8\.0$"):
            fn()
    rows = clusters._headline(True, True)
    assert all("needs compute capability 9.0" in r["measured_text"] for r in rows)
    assert all(r["measured"] == {} for r in rows)
    clusters._sanitize()        # nothing to run on such a GPU: returns without a launch


def test_chase_reference():
    assert chase_hop(2) == 1 and chase_hop(4) == 3 and chase_hop(6) == 5 and chase_hop(1024) == 513
    for nodes in (2, 3, 6, 37, 1024, 12288):
        h = chase_hop(nodes)
        seen, p = set(), 0
        for _ in range(nodes):                   # one cycle through every node
            seen.add(p)
            p = (p + h) % nodes
        assert len(seen) == nodes and p == 0
        assert dsmem_chase_reference(nodes, steps=5, warmup=0) == 5 * h % nodes
    assert dsmem_chase_reference(37, steps=100) == (37 + 100) * chase_hop(37) % 37


def test_stream_reference_by_brute_force():
    for variant in ("read", "local", "write"):
        for smem, passes, blocks in ((16, 1, 1), (48, 3, 2), (16 * 37, 2, 6)):
            words = smem // 4
            total = 0
            for b in range(blocks):
                for j in range(words):
                    w = (b * 65599 + j) % 2**32
                    total += (w + passes - 1) % 2**32 if variant == "write" else w * passes
            assert dsmem_stream_reference(variant, smem=smem, passes=passes,
                                          blocks=blocks) == total % 2**32
    # large grids wrap at 2^32; a word's own wrap (b * 65599 past 2^32) is the same sum
    assert 0 <= dsmem_stream_reference("read", smem=227 * 1024, passes=1000, blocks=2000) < 2**32
    big = [(b * 65599 + j) % 2**32 for b in (70_000, 70_001) for j in range(8)]
    base = dsmem_stream_reference("local", smem=32, blocks=70_000, passes=1)
    assert dsmem_stream_reference("local", smem=32, blocks=70_002, passes=1) == \
        (base + sum(big)) % 2**32


def test_histogram_reference(rng):
    x = rng.integers(0, 1000, size=10007, dtype=np.uint32)
    ref = cluster_histogram_reference(x, 700)
    assert ref.dtype == np.uint32 and ref.shape == (700,)
    assert ref.sum() == np.count_nonzero(x < 700)
    assert ref[5] == np.count_nonzero(x == 5)
    np.testing.assert_array_equal(cluster_histogram_reference(np.zeros(0, np.uint32), 3), [0, 0, 0])


_u32 = np.arange(10, dtype=np.uint32)
BAD = [
    (lambda: gm.dsmem_chase(1), ValueError, "dsmem_chase: nodes=1 is not allowed"),
    (lambda: gm.dsmem_chase(12289), ValueError, "dsmem_chase: nodes=12289"),
    (lambda: gm.dsmem_chase(8.0), TypeError, "dsmem_chase: nodes must be an int"),
    (lambda: gm.dsmem_chase(64, variant="far"), ValueError, "variant='far' is unknown"),
    (lambda: gm.dsmem_chase(64, cluster=1), ValueError, "dsmem_chase: cluster=1 is not allowed"),
    (lambda: gm.dsmem_chase(64, cluster=3), ValueError, "dsmem_chase: cluster=3"),
    (lambda: gm.dsmem_chase(64, cluster=32), ValueError, "dsmem_chase: cluster=32"),
    (lambda: gm.dsmem_chase(64, steps=0), ValueError, "dsmem_chase: steps=0"),
    (lambda: gm.dsmem_chase(64, warmup=-1), ValueError, "dsmem_chase: warmup=-1"),
    (lambda: gm.dsmem_chase(64, steps=True), TypeError, "dsmem_chase: steps must be"),
    (lambda: gm.dsmem_stream(variant="copy"), ValueError, "variant='copy' is unknown"),
    (lambda: gm.dsmem_stream(cluster=0), ValueError, "dsmem_stream: cluster=0"),
    (lambda: gm.dsmem_stream(cluster=12), ValueError, "dsmem_stream: cluster=12"),
    (lambda: gm.dsmem_stream(smem=17), ValueError,
     "dsmem_stream: smem=17 is not allowed; smem must be a multiple of 16"),
    (lambda: gm.dsmem_stream(smem=0), ValueError, "dsmem_stream: smem=0"),
    (lambda: gm.dsmem_stream(smem=228 * 1024), ValueError, "dsmem_stream: smem=233472"),
    (lambda: gm.dsmem_stream(passes=0), ValueError, "dsmem_stream: passes=0"),
    (lambda: gm.dsmem_stream(block=100), ValueError, "dsmem_stream: block=100"),
    (lambda: gm.dsmem_stream(clusters=0), ValueError, "dsmem_stream: clusters=0"),
    (lambda: gm.dsmem_stream(clusters=1.5), TypeError, "dsmem_stream: clusters must be"),
    (lambda: gm.cluster_histogram(_u32.astype(np.float32), 4), TypeError,
     "cluster_histogram: x has dtype dtype('float32'); this kernel takes dtype('uint32')"),
    (lambda: gm.cluster_histogram(_u32.astype(np.int32), 4), TypeError, "takes dtype('uint32')"),
    (lambda: gm.cluster_histogram(_u32.reshape(2, 5), 4), ValueError,
     "cluster_histogram: x must be 1-D"),
    (lambda: gm.cluster_histogram(list(_u32), 4), TypeError, "cluster_histogram: x must be"),
    (lambda: gm.cluster_histogram(None, 4), TypeError, "cluster_histogram: x must be"),
    (lambda: gm.cluster_histogram(_u32, 0), ValueError, "cluster_histogram: bins=0"),
    (lambda: gm.cluster_histogram(_u32, 2**24 + 1), ValueError, "cluster_histogram: bins=16777217"),
    (lambda: gm.cluster_histogram(_u32, 4.0), TypeError, "cluster_histogram: bins must be"),
    (lambda: gm.cluster_histogram(_u32, 4, variant="warp"), ValueError, "variant='warp'"),
    (lambda: gm.cluster_histogram(_u32, 4, cluster=3), ValueError, "cluster_histogram: cluster=3"),
    (lambda: gm.cluster_histogram(_u32, 4, variant="block", cluster=2), ValueError,
     "cluster_histogram: cluster=2 is not allowed with variant='block'"),
    (lambda: gm.cluster_histogram(_u32, 4, variant="global", cluster=4), ValueError,
     "variant='global'; only variant='cluster'"),
    (lambda: gm.cluster_histogram(_u32, 4, block=33), ValueError, "cluster_histogram: block=33"),
    (lambda: gm.cluster_histogram(_u32, 4, clusters=0), ValueError,
     "cluster_histogram: clusters=0"),
    (lambda: gm.cluster_histogram(_u32, 4, out=np.zeros(4, np.uint32)), TypeError,
     "cluster_histogram: out"),
    (lambda: gm.cluster_histogram(np.ma.masked_array(_u32), 4), TypeError, "masked"),
    (lambda: gm.dsmem_pipeline(_u32, variant="dsmem"), TypeError,
     "dsmem_pipeline: x has dtype dtype('uint32'); this kernel takes dtype('float32')"),
    (lambda: gm.dsmem_pipeline(np.ones((2, 3), np.float32)), ValueError,
     "dsmem_pipeline: x must be 1-D"),
    (lambda: gm.dsmem_pipeline(np.ones(8, np.float32), variant="l2"), ValueError, "variant='l2'"),
    (lambda: gm.dsmem_pipeline(np.ones(8, np.float32), block=48), ValueError,
     "dsmem_pipeline: block=48"),
    (lambda: gm.dsmem_pipeline(np.ones(8, np.float32), clusters=0), ValueError,
     "dsmem_pipeline: clusters=0"),
    (lambda: gm.dsmem_pipeline(np.ones(8, np.float32), out=np.ones(8, np.float32)), TypeError,
     "dsmem_pipeline: out"),
    (lambda: dsmem_pipeline_reference(_u32), TypeError, "dsmem_pipeline_reference: x must be"),
    (lambda: clusters.pipeline_sweep([0]), ValueError, "pipeline_sweep: sizes"),
    (lambda: clusters.pipeline_sweep(block=48), ValueError, "pipeline_sweep: block=48"),
    (lambda: chase_hop(1), ValueError, "chase_hop: nodes=1"),
    (lambda: dsmem_chase_reference(64, steps=0), ValueError, "dsmem_chase_reference: steps=0"),
    (lambda: dsmem_stream_reference("copy"), ValueError, "dsmem_stream_reference: variant"),
    (lambda: dsmem_stream_reference(smem=8), ValueError, "dsmem_stream_reference: smem=8"),
    (lambda: dsmem_stream_reference(smem=24), ValueError, "dsmem_stream_reference: smem=24"),
    (lambda: dsmem_stream_reference(blocks=2**40), ValueError, "dsmem_stream_reference: blocks"),
    (lambda: cluster_histogram_reference(_u32.astype(np.int64), 4), TypeError,
     "cluster_histogram_reference: x must be a 1-D uint32 array"),
    (lambda: cluster_histogram_reference(_u32, 0), ValueError,
     "cluster_histogram_reference: bins=0"),
    (lambda: clusters.dsmem_latency(nodes=1), ValueError, "dsmem_latency: nodes=1"),
    (lambda: clusters.dsmem_latency(variants=["far"]), ValueError, "variant='far'"),
    (lambda: clusters.dsmem_latency(cluster=True), TypeError, "dsmem_latency: cluster must be"),
    (lambda: clusters.dsmem_bandwidth([3]), ValueError,
     "dsmem_bandwidth: sizes: 3 is not a cluster size"),
    (lambda: clusters.dsmem_bandwidth([]), ValueError, "dsmem_bandwidth: sizes is empty"),
    (lambda: clusters.dsmem_bandwidth(smem=15), ValueError, "dsmem_bandwidth: smem=15"),
    (lambda: clusters.dsmem_bandwidth(repeat=0), ValueError, "dsmem_bandwidth: repeat=0"),
    (lambda: clusters.dsmem_bandwidth(progress=1), TypeError, "progress must be"),
    (lambda: clusters.histogram_sweep([0]), ValueError, "histogram_sweep: bins"),
    (lambda: clusters.histogram_sweep(n=0), ValueError, "histogram_sweep: n=0"),
    (lambda: clusters.histogram_sweep(variants=["x"]), ValueError, "variant='x'"),
]


@pytest.mark.parametrize("call, exc, msg", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_every_bad_argument_is_refused_by_name(call, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        call()


def test_valid_arguments_take_numpy_integers():
    with gm.runtime.args._checking():
        assert gm.dsmem_chase(np.int64(37), variant="self", cluster=np.int32(4)) is None
        assert gm.dsmem_stream(cluster=np.int64(16), smem=np.int64(4096)) is None
        assert gm.cluster_histogram(_u32, np.int64(3), variant="global") is None
        assert gm.cluster_histogram(np.zeros(0, np.uint32), 5) is None


@pytest.mark.parametrize("name", ["dsmem_latency", "dsmem_bandwidth", "histogram_sweep",
                                  "pipeline_sweep"])
def test_experiments_without_a_gpu_say_so_by_name(name, no_gpu):
    with pytest.raises(gm.CudaUnavailableError, match=f"^{name}: no GPU"):
        getattr(clusters, name)()


def test_report_without_a_gpu():
    rows = clusters._headline(False, True)
    assert len(rows) == 3
    for r in rows:
        assert r["lesson"] == "clusters" and r["measured"] == {}
        assert r["measured_text"].startswith("would measure: ")
        assert "needs compute capability 9.0" in r["measured_text"]
    assert rows[2]["model"] == {"bins": 65536.0, "bytes_of_counts": 262144.0}
    (t,) = clusters._report_sweeps(False, True, False)
    assert [r["experiment"] for r in t] == list(clusters.LESSON.sweeps)


# ---- on a GPU of compute capability 9.0 ---------------------------------------------------
def _hopper():
    cc = tuple(gm.device().compute_capability)
    if not clusters.cluster_capable(cc):
        pytest.skip(f"needs compute capability 9.0 (this GPU: {cc})")


@gpu
@pytest.mark.parametrize("variant", ["local", "self", "remote"])
def test_chase_ends_where_the_reference_says(variant, rng, no_leak):
    _hopper()
    for nodes in (2, 3, 37, 1000, int(rng.integers(2000, 12288)), 12288):
        for cluster in (2, 4):
            steps = int(rng.integers(1, 3000))
            r = gm.dsmem_chase(nodes, variant=variant, cluster=cluster, steps=steps)
            assert r.dtype == np.int64 and r.shape == (2,)
            assert r[0] == dsmem_chase_reference(nodes, steps=steps), (nodes, cluster, steps)
            assert r[1] >= steps            # at least a cycle per dependent load
    rec = gm.last_record()
    assert rec.kernel == "dsmem_chase" and rec.variant == variant and rec.params["cluster"] == 4
    assert rec.params["smem"] >= gm.device().shared_memory_per_multiprocessor // 2 - 16


@gpu
def test_a_remote_load_costs_more_than_a_local_one(no_leak):
    _hopper()
    t = clusters.dsmem_latency()
    c = {r["variant"]: r["cycles/load"] for r in t}
    assert 10 < c["local"] < 100                  # the H100's shared memory: about 30 cycles
    assert c["remote"] > 2 * c["local"]
    assert c["self"] >= c["local"] * 0.9


@gpu
@pytest.mark.parametrize("variant", ["read", "write", "local"])
def test_stream_checksums_equal_the_reference(variant, rng, no_leak):
    _hopper()
    for cluster in (1, 2, 4, 8):
        for smem, block in ((16, 32), (16 * 37, 96), (16 * 1000 + 48, 512), (200 * 1024, 1024)):
            clusters_ = int(rng.integers(1, 4))
            passes = int(rng.integers(1, 4))
            got = gm.dsmem_stream(variant=variant, cluster=cluster, smem=smem, passes=passes,
                                  block=block, clusters=clusters_)
            assert got.dtype == np.uint32 and got.shape == (1,)
            want = dsmem_stream_reference(variant, smem=smem, passes=passes,
                                          blocks=cluster * clusters_)
            assert int(got[0]) == want, (cluster, smem, block, clusters_, passes)
    got = gm.dsmem_stream(variant=variant)   # the default grid (a full wave) and smem
    rec = gm.last_record()
    smem, ncl = rec.params["smem"], rec.params["clusters"]
    assert smem == min(gm.device().shared_memory_per_multiprocessor // 2,
                       gm.device().shared_memory_per_block_optin) // 16 * 16
    assert ncl >= 1 and rec.bytes == smem * 64 * 2 * ncl
    assert int(got[0]) == dsmem_stream_reference(variant, smem=smem, passes=64, blocks=2 * ncl)


@gpu
def test_cluster_16_runs_or_is_refused_by_name(no_leak):
    _hopper()
    try:
        got = gm.dsmem_stream(cluster=16, smem=4096, passes=2, clusters=2)
    except ValueError as e:
        assert "dsmem_stream: cluster=16 is refused by this GPU" in str(e)
        with pytest.raises(ValueError, match="refused by this GPU"):
            clusters.dsmem_bandwidth([16], variants=["read"], passes=2, repeat=1)
        t = clusters.dsmem_bandwidth(variants=["read"], passes=2, repeat=1)
        assert [r["note"] for r in t if r["cluster"] == 16] == ["refused by this GPU"]
    else:
        assert int(got[0]) == dsmem_stream_reference("read", smem=4096, passes=2, blocks=32)
    assert int(gm.dsmem_stream(cluster=2, smem=64, passes=1, clusters=1)[0]) == \
        dsmem_stream_reference("read", smem=64, passes=1, blocks=2)    # the next call works


@gpu
def test_dsmem_bandwidth_table(no_leak):
    _hopper()
    t = clusters.dsmem_bandwidth([1, 2, 8], passes=8, repeat=3)
    assert [(r["cluster"], r["variant"]) for r in t] == [
        (s, v) for s in (1, 2, 8) for v in ("read", "write", "local")]
    for r in t:
        assert r["GB/s"] > 100 and r["blocks"] == r["cluster"] * r["clusters"] and not r["note"]


def _poisoned_u32(n):
    return gm.to_device(np.full(n, 0xFFFFFFFF, np.uint32))


@gpu
@pytest.mark.parametrize("variant", ["cluster", "block", "global", "owner"])
def test_histogram_equals_bincount(variant, rng, no_leak):
    _hopper()
    for bins in (1, 7, 1000, 4999, int(rng.integers(5000, 40000))):
        for n in (0, 1, 1001, int(rng.integers(100_000, 300_000))):
            x = rng.integers(0, bins + bins // 3 + 2, size=n, dtype=np.uint32)  # some >= bins
            x[: min(n, 3)] = 0xFFFFFFFF
            # the cluster and owner variants' default is one block here (the bins fit): 2
            # and 4 too
            sizes = (None, 2, 4) if variant in ("cluster", "owner") else (None,)
            for block, cluster in ((b, k) for b in (32, 96, 512) for k in sizes):
                out = _poisoned_u32(bins)
                got = gm.cluster_histogram(x, bins, variant=variant, block=block,
                                           cluster=cluster, out=out)
                assert got is out
                np.testing.assert_array_equal(out.get(), cluster_histogram_reference(x, bins),
                                              err_msg=f"bins={bins} n={n} {block} {cluster}")
    x = rng.integers(0, 300, size=5003, dtype=np.uint32)
    host = gm.cluster_histogram(x, 257, variant=variant)          # a new result, an ndarray
    assert isinstance(host, np.ndarray) and host.dtype == np.uint32
    np.testing.assert_array_equal(host, cluster_histogram_reference(x, 257))
    dev = gm.cluster_histogram(gm.to_device(x), 257, variant=variant)   # a DeviceArray in, out
    assert isinstance(dev, gm.DeviceArray)
    np.testing.assert_array_equal(dev.get(), cluster_histogram_reference(x, 257))


@gpu
@pytest.mark.parametrize("variant", ["read", "write", "local"])
def test_stream_dsmem_counters_equal_the_model(variant, counters, no_leak):
    """gpumem.model.clusters against Hopper's distributed-shared-memory counters: warp
    instructions, requests and 32-byte sectors of ld/st.shared::cluster, and the warps'
    global atomics, on sizes where the lanes of a warp part ways and where they do not."""
    _hopper()
    from gpumem.model import clusters as cm
    keys = [k for k in cm.COUNTERS if k.startswith(("dsmem_ld", "dsmem_st"))
            or k == "global_atom_requests"]
    for smem, block, cluster in ((65536, 512, 2), (16 * 1001, 256, 4), (16 * 97 * 4, 96, 2)):
        with gm.profile(cm.counter_names(keys)) as p:
            gm.dsmem_stream(variant=variant, cluster=cluster, smem=smem, passes=3, block=block,
                            clusters=2)
        rec = p.records[0]
        want = cm.stream_counts(variant, smem=rec.params["smem"], passes=3, block=block,
                                blocks=rec.params["cluster"] * rec.params["clusters"])
        assert cm.from_counters(rec.metrics, keys) == {k: want[k] for k in keys}, \
            (smem, block, cluster)


@gpu
@pytest.mark.parametrize("variant", ["cluster", "block", "global", "owner"])
def test_histogram_counters_equal_the_model(variant, rng, counters, no_leak):
    """The loads of x and the atomics' warp instructions, from the values themselves."""
    _hopper()
    from gpumem.model import clusters as cm
    keys = ["gld_requests", "gld_transactions", "global_atom_requests"]
    if variant in ("cluster", "owner"):   # owner: none, it makes no DSMEM access
        keys.append("dsmem_atom_requests")
    for n, bins in ((100_003, 1000), (4099, 70), (1 << 18, 5000)):
        x = rng.integers(0, int(bins * 1.2), n, dtype=np.uint32)
        with gm.profile(cm.counter_names(keys)) as p:
            gm.cluster_histogram(x, bins, variant=variant, block=256, clusters=3,
                                 **({"cluster": 2} if variant in ("cluster", "owner") else {}))
        rec = p.records[0]
        want = cm.histogram_counts(x, bins, variant=variant, cluster=rec.params["cluster"],
                                   clusters=rec.params["clusters"], block=256)
        assert cm.from_counters(rec.metrics, keys) == {k: want[k] for k in keys}, (n, bins)


@gpu
def test_histogram_beyond_one_blocks_shared_memory(rng, no_leak):
    _hopper()
    most = gm.device().shared_memory_per_block_optin
    for bins in (1 << 16, (1 << 17) + 3, (1 << 18) + 5):
        x = rng.integers(0, bins, size=1_000_003, dtype=np.uint32)
        ref = cluster_histogram_reference(x, bins)
        for cluster in (None, 8, 16):
            out = _poisoned_u32(bins)
            try:
                gm.cluster_histogram(x, bins, cluster=cluster, out=out)
            except ValueError as e:            # a slice too big, or 16 refused by this GPU
                assert cluster is not None and ("refused by this GPU" in str(e)
                                                or "is more than the" in str(e)), e
                continue
            np.testing.assert_array_equal(out.get(), ref, err_msg=f"bins={bins} {cluster}")
            if cluster is None:
                k = gm.last_record().params["cluster"]
                assert -(-bins // k) * 4 <= most and (k == 1 or -(-bins // (k // 2)) * 4 > most)
        np.testing.assert_array_equal(gm.cluster_histogram(x, bins, variant="global"), ref)
        np.testing.assert_array_equal(gm.cluster_histogram(x, bins, variant="owner"), ref)
        if 4 * bins > most:
            with pytest.raises(ValueError, match="with variant='block'; its .* bytes of counts "
                                                 "must fit one block's shared memory"):
                gm.cluster_histogram(x, bins, variant="block")


@gpu
def test_histogram_sweep_table(no_leak):
    _hopper()
    t = clusters.histogram_sweep([1000, 1 << 17], n=100_003, repeat=2)
    rows = {(r["bins"], r["variant"]): r for r in t}
    assert len(rows) == 2 * len(clusters.HISTOGRAM_VARIANTS) == 8
    # the cluster (and owner) at 2^17 bins: slices that fit this GPU's blocks
    most = gm.device().shared_memory_per_block_optin
    for v in ("cluster", "owner"):
        k = rows[(1 << 17, v)]["cluster"]
        assert k > 1 and -(-(1 << 17) // k) * 4 <= most
    assert rows[(1 << 17, "block")]["note"] == "the bins do not fit one block's shared memory"
    for key, r in rows.items():
        if key != (1 << 17, "block"):
            assert r["ms"] > 0 and r["Gvalues/s"] > 0 and not r["note"], key


@gpu
@pytest.mark.parametrize("variant", ["dsmem", "global"])
def test_pipeline_equals_the_reference(variant, rng, no_leak):
    _hopper()
    for n in (1, 3, 1023, 1024, 1025, 100_003, int(rng.integers(1 << 20, 1 << 21))):
        x = rng.standard_normal(n, dtype=np.float32)
        for block, clusters_ in ((32, None), (96, 1), (256, 3), (1024, None), (64, 1000)):
            out = poisoned((n,))
            got = gm.dsmem_pipeline(x, variant=variant, block=block, clusters=clusters_, out=out)
            assert got is out
            np.testing.assert_array_equal(out.get(), dsmem_pipeline_reference(x),
                                          err_msg=f"n={n} block={block} clusters={clusters_}")
    host = gm.dsmem_pipeline(np.arange(5, dtype=np.float32), variant=variant)
    np.testing.assert_array_equal(host, [1, 3, 5, 7, 9])
    assert gm.dsmem_pipeline(np.zeros(0, np.float32), variant=variant).shape == (0,)


@gpu
def test_pipeline_sweep_table(no_leak):
    _hopper()
    t = clusters.pipeline_sweep([1 << 16, 1 << 20], repeat=3)
    assert [(r["n"], r["variant"]) for r in t] == [
        (n, v) for n in (1 << 16, 1 << 20) for v in ("dsmem", "global")]
    assert all(r["ms"] > 0 and r["GB/s"] > 0 for r in t)
    assert all(r["global / dsmem"] > 0 for r in t if r["variant"] == "global")


@gpu
def test_report_measures_every_row(no_leak):
    _hopper()
    rows = clusters._headline(True, True)
    assert rows[0]["measured"]["remote_cycles"] > rows[0]["measured"]["local_cycles"]
    assert rows[1]["measured"]["read_GB/s"] > 0 and rows[1]["measured"]["device_copy_GB/s"] > 0
    h = rows[2]["measured"]
    assert h["cluster_ms"] > 0 and h["global_ms"] > 0 and h["owner_ms"] > 0
    assert h["global_over_owner"] == pytest.approx(h["global_ms"] / h["owner_ms"])


@gpu
def test_sanitizer_calls_cover_every_variant(no_leak):
    _hopper()
    with gm.record() as recs:
        clusters._sanitize()
    assert {(r.kernel, r.variant) for r in recs} == {
        (f, v.name) for f in ("dsmem_chase", "dsmem_stream", "cluster_histogram",
                              "dsmem_pipeline")
        for v in gm.variants(f)}


def test_the_card_row_without_measuring_and_on_an_older_gpu(monkeypatch):
    (row,) = clusters._card(False, True)
    assert row["level"] == "distributed shared" and row["lesson"] == "clusters"
    assert row["cycles"] is None and row["GB/s"] is None and "dsmem_chase remote" in row["how"]
    monkeypatch.setattr(gm.runtime, "device", lambda: types.SimpleNamespace(
        compute_capability=(8, 9), clock_khz=2_520_000))
    (row,) = clusters._card(True, True)
    assert row["cycles"] is None and row["how"] == (
        "needs compute capability 9.0; this GPU has 8.9")


@gpu
def test_the_c_refusal_of_an_older_gpu_names_the_capability(pretend_cc, no_leak):
    """Past the Python check (the GPU's own 9.0), the C side refuses every cluster launch
    on compute capability 8.9 (pretended) with the same words; 9.0 runs again."""
    _hopper()
    x = np.arange(1000, dtype=np.float32)
    calls = [(clusters.dsmem_chase, (64,), {}),
             (clusters.dsmem_stream, (), {}),
             (clusters.cluster_histogram, (x.astype(np.uint32), 64), {}),
             (clusters.dsmem_pipeline, (x,), {})]
    pretend_cc(8, 9)
    for fn, args, kw in calls:
        with pytest.raises(gm.CudaError, match=rf"^{fn.__name__}: a cluster launch \(thread "
                                               r"block clusters, distributed shared memory\) "
                                               r"needs compute capability 9\.0 or newer "
                                               r"\(sm_90, Hopper\); this GPU has compute "
                                               r"capability 8\.9$") as e:
            fn(*args, **kw)
        assert e.value.code == 801
    pretend_cc(0, 0)
    np.testing.assert_array_equal(clusters.dsmem_pipeline(x), clusters.dsmem_pipeline_reference(x))


@pytest.mark.parametrize("call", [lambda x: clusters.dsmem_pipeline_reference(x),
                                  lambda x: clusters.cluster_histogram_reference(x, 16)])
def test_references_refuse_a_sequence_too_long_to_build(call):
    """range(2**40) is refused by name at once: NumPy would otherwise try to build it (on a
    machine that overcommits memory, for hours)."""
    with pytest.raises(ValueError, match=r"_reference: x has more than 2\*\*31 elements"):
        call(range(2**40))


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the fake GPU (the stand-ins clusters declares); the card's row
def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    rows = clusters.LESSON.headline(True, True)
    dsm = first_with(rows, "remote_over_local")["measured"]
    assert dsm["remote_over_local"] == pytest.approx(200 / 30)
    assert first_with(rows, "global_over_cluster")["measured"]["global_over_cluster"] == \
        pytest.approx(4.0)


def test_card_row_is_distributed_shared_memory(monkeypatch):
    assert [r["level"] for r in clusters.LESSON.card(False, True)] == ["distributed shared"]
    FakeGPU(monkeypatch)
    (row,) = clusters.LESSON.card(True, True)
    assert row["cycles"] == 200.0 and row["lesson"] == "clusters"
