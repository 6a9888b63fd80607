"""The peer lesson: peer_copy and peer_chase against NumPy references on this GPU and
across to a peer, the copy engine's copies arriving whole, and every argument refused by
name before the GPU.  Tests of two GPUs skip on one, and fail instead under
GPUMEM_REQUIRE_GPUS=2 (tools/gpu-check sets it to the GPUs it finds)."""
import os

import numpy as np
import pytest

import gpumem as gm
from gpumem.lessons import peer
from gpumem.model import peer as pm

N_GPUS = gm.device_count()
PAIRS = peer.peer_pairs() if gm.is_available() else []


@pytest.fixture
def pair():
    """(device, peer): the first two GPUs that reach each other, peer access on both ways."""
    need = int(os.environ.get("GPUMEM_REQUIRE_GPUS", "0") or 0)
    if not PAIRS:
        if need >= 2:
            pytest.fail(f"GPUMEM_REQUIRE_GPUS={need} but {N_GPUS} GPU(s) here with no peer pair")
        pytest.skip("needs two GPUs with peer access")
    d, p = PAIRS[0]
    gm.enable_peer_access(d, p)
    gm.enable_peer_access(p, d)
    yield d, p
    import gc
    gc.collect()
    for g in (d, p):         # the other GPU's pool too (the suite's gate trims the current one)
        gm.empty_cache(device=g)


def poisoned(shape, device=None):
    """NaN on ``device`` (default the current GPU): an output no kernel wrote yet."""
    if device is None:
        return gm.to_device(np.full(shape, np.nan, np.float32))
    with gm.Device(device):
        return gm.to_device(np.full(shape, np.nan, np.float32))


# ---- without a GPU: arguments and the model's side ------------------------------------------
@pytest.mark.parametrize("kw,word", [
    (dict(width="double"), "width"), (dict(unroll=3), "unroll"), (dict(grid=0), "grid"),
    (dict(block=48), "block"), (dict(block=2048), "block"), (dict(unroll=True), "unroll")])
def test_peer_copy_refuses_bad_arguments_by_name(kw, word):
    with pytest.raises((ValueError, TypeError), match=word):
        peer.peer_copy(np.ones(10, np.float32), **kw)


def test_peer_chase_takes_a_1d_int32_chain():
    with pytest.raises((ValueError, TypeError), match="chain"):
        peer.peer_chase(np.zeros(16, np.float32))
    with pytest.raises((ValueError, TypeError), match="chain"):
        peer.peer_chase(np.zeros((4, 4), np.int32))
    with pytest.raises(ValueError, match="steps"):
        peer.peer_chase(np.zeros(16, np.int32), steps=0)
    with pytest.raises(TypeError, match="chain"):
        peer.peer_chase(None)


def test_chase_ring_is_one_cycle_through_every_node():
    ring = peer.chase_ring(1 << 16, stride=256, seed=3)
    assert ring.dtype == np.int32 and ring.size == (1 << 16) // 4
    nodes = np.arange(0, ring.size, 64)
    seen, j = [], 0
    for _ in range(len(nodes)):
        seen.append(j)
        j = int(ring[j])
    assert j == 0 and sorted(seen) == list(nodes)       # back at the start, every node once
    assert not np.any(np.delete(ring, nodes))           # the rest hold 0
    assert not np.array_equal(seen, nodes)              # in a random order, not stride order
    assert peer.chase_reference(ring, len(nodes)) == 0
    with pytest.raises(ValueError, match="stride"):
        peer.chase_ring(4096, stride=6)
    with pytest.raises(ValueError, match="nbytes"):
        peer.chase_ring(100, stride=4096)


def test_sweeps_without_a_gpu_show_the_model():
    t = peer.copy_sweep(measure=False)
    assert t["case"] == [c for c in peer.COPY_CASES for _ in peer.COPY_SIZES]
    on = [r for r in t if r["case"] == "access on"]
    assert [r["model_GB/s"] for r in on] == [pm.copy_gbps(s) for s in peer.COPY_SIZES]
    both = [r for r in t if r["case"] == "both ways"]
    assert [r["model_GB/s"] for r in both] == [2 * pm.copy_gbps(s) for s in peer.COPY_SIZES]
    assert all(r["GB/s"] is None for r in t)
    loads = peer.loads_sweep(measure=False)
    reads = [r for r in loads if r["direction"] == "read"]
    assert [r["model_GB/s"] for r in reads] == [
        pm.loads_gbps(r["in_flight_per_sm"], loads=r["unroll"], sms=132) for r in reads]
    assert max(r["model_GB/s"] for r in reads) == pytest.approx(pm.payload_gbps(pm.SM_PAYLOAD))
    assert min(r["model_GB/s"] for r in reads) < 0.1 * pm.link_gbps()   # below the knee too
    lat = peer.latency_sweep(measure=False)
    assert lat["memory"] == ["device memory", "peer GPU"]
    assert lat["model_ns"][1] == pm.PEER_LATENCY_NS


def test_sweeps_refuse_bad_arguments_by_name():
    with pytest.raises(ValueError, match="cases"):
        peer.copy_sweep(cases=("sideways",), measure=False)
    with pytest.raises(ValueError, match="sizes"):
        peer.copy_sweep(sizes=(0,), measure=False)
    with pytest.raises(ValueError, match="directions"):
        peer.loads_sweep(("up",), measure=False)
    with pytest.raises(ValueError, match="repeat"):
        peer.loads_sweep(repeat=0, measure=False)
    with pytest.raises(TypeError, match="measure"):
        peer.latency_sweep(measure="yes")


def test_peer_memcpy_refuses_what_is_not_a_pair_of_device_arrays():
    with pytest.raises(TypeError, match="dst"):
        gm._core._peer_memcpy(np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="repeat"):
        gm._core._peer_memcpy(None, None, repeat=0)


# ---- one GPU: the kernels against NumPy, on the GPU's own memory ------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("width", list(peer.WIDTHS))
@pytest.mark.parametrize("n,unroll,grid,block", [(1, 1, 1, 32), (1003, 4, 3, 96),
                                                 (65537, 16, 7, 256), (1 << 20, 2, 264, 512)])
def test_peer_copy_on_this_gpu_equals_its_input(rng, width, n, unroll, grid, block, no_leak):
    a = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n)
    got = peer.peer_copy(gm.to_device(a), width=width, unroll=unroll, grid=grid, block=block,
                         out=out)
    np.testing.assert_array_equal(got.get(), a)
    assert gm.last_record().bytes == 4 * n


@pytest.mark.gpu
def test_peer_chase_on_this_gpu_ends_where_numpy_does(no_leak):
    ring = peer.chase_ring(1 << 20, stride=512, seed=5)
    for steps, warmup in ((1, 0), (777, 13), (4096, 256)):
        r = peer.peer_chase(gm.to_device(ring), steps=steps, warmup=warmup)
        assert r["end"] == peer.chase_reference(ring, steps, warmup)
        assert 100 < r["cycles"] < 5000 and 50 < r["ns"] < 5000, r


@pytest.mark.gpu
def test_peer_chase_restarts_outside_the_chain():
    chain = np.array([3, -7, 1 << 30, 2], np.int32)        # 0 -> 3 -> 2 -> (out: 0)
    r = peer.peer_chase(chain, steps=4, warmup=0)
    assert r["end"] == peer.chase_reference(chain, 4) == 3


# ---- two GPUs: across the link ----------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("width", list(peer.WIDTHS))
def test_sm_reads_and_writes_over_the_link(rng, pair, width, no_leak):
    dev, other = pair
    n = 1_000_003 if width == "float" else 1_000_000
    a = rng.standard_normal(n).astype(np.float32)
    with gm.Device(other):
        there = gm.to_device(a)
    with gm.Device(dev):                                       # read: a on the peer
        got = peer.peer_copy(there, width=width, unroll=4, grid=132, block=256)
    assert got.device == dev
    np.testing.assert_array_equal(got.get(), a)
    out = poisoned(n, other)
    with gm.Device(dev):                                       # write: out on the peer
        here = gm.to_device(a)
        peer.peer_copy(here, width=width, unroll=2, grid=64, block=128, out=out)
    assert out.device == other
    np.testing.assert_array_equal(out.get(), a)


@pytest.mark.gpu
def test_a_peer_operand_without_access_is_refused_by_name(pair):
    dev, other = pair
    with gm.Device(other):
        there = gm.to_device(np.ones(1000, np.float32))
    gm.disable_peer_access(dev, other)
    try:
        with gm.Device(dev), pytest.raises(ValueError, match="enable_peer_access"):
            peer.peer_copy(there)
    finally:
        gm.enable_peer_access(dev, other)
    with gm.Device(dev):                                       # and the next call works
        np.testing.assert_array_equal(peer.peer_copy(there).get(), np.ones(1000, np.float32))


@pytest.mark.all_gpus
@pytest.mark.gpu
def test_the_peer_chase_is_slower_than_device_memory(pair):
    dev, other = pair
    t = peer.latency_sweep(src=other, dst=dev, nbytes=16 << 20, steps=512)
    local, far = t["ns"]
    assert 200 < local < far < 5000, t
    assert t["cycles"][1] > t["cycles"][0]


@pytest.mark.gpu
@pytest.mark.parametrize("way", ["one", "both", "staged"])
@pytest.mark.parametrize("access", [True, False])
def test_the_copy_engine_moves_every_byte(rng, pair, way, access, no_leak):
    dev, other = pair
    for d, p in ((dev, other), (other, dev)):
        (gm.enable_peer_access if access else gm.disable_peer_access)(d, p)
    try:
        n = 3 * 2**18 + 5
        a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        with gm.Device(dev):
            src, back_dst = gm.to_device(a), poisoned(n, dev)
        with gm.Device(other):
            dst, back_src = poisoned(n, other), gm.to_device(b)
        kw = dict(back_dst=back_dst, back_src=back_src) if way == "both" else {}
        ms = gm._core._peer_memcpy(dst, src, repeat=3, warmup=1, staged=way == "staged", **kw)
        assert len(ms) == 3 and all(m > 0 for m in ms)
        np.testing.assert_array_equal(dst.get(), a)
        if way == "both":
            np.testing.assert_array_equal(back_dst.get(), b)
    finally:
        for d, p in ((dev, other), (other, dev)):
            gm.enable_peer_access(d, p)


@pytest.mark.all_gpus
@pytest.mark.gpu
def test_the_copy_sweep_measures_every_case(pair):
    dev, other = pair
    t = peer.copy_sweep((4, 1 << 20, 64 << 20), src=dev, dst=other, repeat=3, progress=False)
    assert all(r["GB/s"] > 0 and r["us"] > 0 for r in t)
    big = {r["case"]: r["GB/s"] for r in t if r["bytes"] == 64 << 20}
    # the link with access on beats the driver's staging, and both ways beat one way
    assert big["access on"] > 2 * big["access off"], t
    assert big["both ways"] > 1.3 * big["access on"], t
    assert big["access on"] <= 1.05 * pm.link_gbps(), t


@pytest.mark.all_gpus
@pytest.mark.gpu
def test_sm_reads_follow_littles_law_over_the_link(pair):
    dev, other = pair
    t = peer.loads_sweep(("read",), src=other, dst=dev, n=1 << 24, repeat=3, progress=False,
                         points=((1, "float", 1), (16, "float4", 4)))
    few, many = t["GB/s"]
    assert few < 0.5 * many and many > 100, t


@pytest.mark.gpu
def test_a_wrong_pair_is_refused_by_name():
    with pytest.raises(ValueError, match="src"):
        peer.memcpy_peer(1024, src=0, dst=0)
    with pytest.raises(ValueError, match="dst"):
        peer.memcpy_peer(1024, src=0, dst=N_GPUS)


# ---- NCCL's collectives ---------------------------------------------------------------------
def test_nccl_missing_says_how_to_get_it(monkeypatch):
    from gpumem.runtime import nccl
    monkeypatch.setattr(nccl, "_lib", None)
    monkeypatch.setenv("GPUMEM_NCCL", "/nonexistent/libnccl.so.2")
    with pytest.raises(nccl.NcclError, match=r"gpumem-lab\[nccl\]"):
        nccl.version()
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"          # set before NCCL could start
    with pytest.raises(ValueError, match="devices"):
        nccl.Communicators([0, 0])
    t = peer.collectives_sweep(sizes=(1 << 20,), measure=True)
    assert "not measured" in t.title and all(r["busbw_GB/s"] is None for r in t)


def test_collectives_sweep_refuses_bad_arguments_by_name():
    with pytest.raises(ValueError, match="collectives"):
        peer.collectives_sweep(("all_to_none",), measure=False)
    with pytest.raises(ValueError, match="sizes"):
        peer.collectives_sweep(sizes=(2,), measure=False)


@pytest.fixture
def nccl_here():
    """gpumem.runtime.nccl, NCCL loaded: skipped without it, failed instead under
    GPUMEM_REQUIRE_GPUS (tools/gpu-check installs the nccl extra's wheel)."""
    from gpumem.runtime import nccl
    try:
        nccl.version()
    except nccl.NcclError as e:
        if os.environ.get("GPUMEM_REQUIRE_GPUS"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    return nccl


@pytest.fixture
def comms(pair, nccl_here):
    with nccl_here.Communicators(list(pair)) as c:
        yield c


@pytest.mark.gpu
def test_nccl_collectives_equal_numpy(rng, pair, comms):
    n = 2 * 100_003
    xs = [rng.standard_normal(n).astype(np.float32) for _ in pair]
    sends = []
    for d, x in zip(pair, xs):
        with gm.Device(d):
            sends.append(gm.to_device(x))
    full = [poisoned(n, d) for d in pair]
    half = [poisoned(n // 2, d) for d in pair]
    twice = [poisoned(2 * n, d) for d in pair]
    comms.run("all_reduce", sends, full)
    for r in full:                     # two addends: the same sum in any order
        np.testing.assert_array_equal(r.get(), xs[0] + xs[1])
    comms.run("reduce_scatter", sends, half)
    for i, r in enumerate(half):
        np.testing.assert_array_equal(r.get(), (xs[0] + xs[1])[i * n // 2:(i + 1) * n // 2])
    comms.run("all_gather", sends, twice)
    for r in twice:
        np.testing.assert_array_equal(r.get(), np.concatenate(xs))
    comms.run("broadcast", sends, full, root=1)
    for r in full:
        np.testing.assert_array_equal(r.get(), xs[1])
    with pytest.raises(ValueError, match="does not fit"):
        comms.run("all_gather", sends, full)


@pytest.mark.all_gpus
@pytest.mark.gpu
def test_the_collectives_sweep_measures_bus_bandwidth(pair, comms):
    t = peer.collectives_sweep(sizes=(1 << 20, 64 << 20), devices=list(pair), repeat=3,
                               progress=False)
    assert "not measured" not in t.title
    for r in t:
        name = "all_reduce" if r["collective"] in peer.TEACHING else r["collective"]
        assert r["us"] > 0 and r["busbw_GB/s"] == pytest.approx(
            pm.bus_bandwidth(name, r["algbw_GB/s"], 2))
    big = [r for r in t if r["bytes"] == 64 << 20]
    assert all(50 < r["busbw_GB/s"] < 1.1 * pm.link_gbps() for r in big), big


@pytest.mark.gpu
@pytest.mark.parametrize("shots", [1, 2])
@pytest.mark.parametrize("n", [1, 5, 4099, 1_000_003])
def test_the_teaching_all_reduce_sums_every_gpu_s_input(rng, pair, shots, n, no_leak):
    xs = [rng.standard_normal(n).astype(np.float32) for _ in pair]
    ins = []
    for d, x in zip(pair, xs):
        with gm.Device(d):
            ins.append(gm.to_device(x))
    outs = [poisoned(n, d) for d in pair]
    got, ms = peer.teaching_all_reduce(ins, outs, shots=shots, repeat=2)
    assert ms > 0 and [o.device for o in got] == list(pair)
    for o in got:
        np.testing.assert_array_equal(o.get(), xs[0] + xs[1])


def test_the_teaching_all_reduce_refuses_what_is_not_one_array_per_gpu():
    with pytest.raises(TypeError, match="ins"):
        peer.teaching_all_reduce([np.ones(4, np.float32)])
    with pytest.raises(ValueError, match="shots"):
        peer.teaching_all_reduce([], shots=3)
    with pytest.raises(TypeError, match="ins"):
        gm._core._peer_all_reduce(None, [])


# ---- NCCL, one process per GPU: a rank, and the unique id the ranks share -------------------
@pytest.fixture
def no_nccl(monkeypatch):
    """NCCL made unloadable: a refusal that comes before loading it is a TypeError or a
    ValueError; one that comes after, an NcclError (that says how to get NCCL)."""
    from gpumem.runtime import nccl
    monkeypatch.setattr(nccl, "_lib", None)
    monkeypatch.setenv("GPUMEM_NCCL", "/nonexistent/libnccl.so.2")
    for v in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "LOCAL_RANK",
              "OMPI_COMM_WORLD_LOCAL_RANK", "GPUMEM_NCCL_ID", "GPUMEM_NCCL_ID_FILE"):
        monkeypatch.delenv(v, raising=False)
    return nccl


ID_HEX = bytes(range(128)).hex()


@pytest.mark.parametrize("args,kw,error,word", [
    ((-1, 2, ID_HEX), {}, ValueError, "rank=-1"),
    ((2, 2, ID_HEX), {}, ValueError, "rank=2"),
    ((True, 2, ID_HEX), {}, TypeError, "rank"),
    ((0.0, 2, ID_HEX), {}, TypeError, "rank"),
    ((0, 0, ID_HEX), {}, ValueError, "nranks=0"),
    ((0, "2", ID_HEX), {}, TypeError, "nranks"),
    ((0, 2, b"\0" * 127), {}, ValueError, "unique_id holds 127 bytes"),
    ((0, 2, ID_HEX + "00"), {}, ValueError, "unique_id holds 129 bytes"),
    ((0, 2, "z" * 256), {}, ValueError, "unique_id is not hex"),
    ((0, 2, 12345), {}, TypeError, "unique_id"),
    ((0, 2, ID_HEX), {"device": -1}, ValueError, "device=-1"),
    ((0, 2, ID_HEX), {"device": 1.0}, TypeError, "device"),
])
def test_a_rank_refuses_bad_arguments_by_name_before_nccl_loads(no_nccl, args, kw, error, word):
    with pytest.raises(error, match=word) as e:
        no_nccl.Communicator(*args, **kw)
    assert e.value.args[0].startswith("Communicator: ")
    assert no_nccl._lib is None                          # refused before NCCL was looked for


def test_a_rank_with_good_arguments_and_no_nccl_says_how_to_get_it(no_nccl):
    for uid in (ID_HEX, bytes.fromhex(ID_HEX), bytearray(128), ID_HEX.upper() + "\n"):
        with pytest.raises(no_nccl.NcclError, match=r"gpumem-lab\[nccl\]"):
            no_nccl.Communicator(1, 2, uid, device=0)
    with pytest.raises(no_nccl.NcclError, match=r"gpumem-lab\[nccl\]"):
        no_nccl.unique_id()
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"
    assert {"Communicator", "unique_id", "unique_id_file"} <= set(no_nccl.__all__)


@pytest.mark.parametrize("env,error,words", [
    ({}, ValueError, ["RANK and WORLD_SIZE", "mpirun"]),
    ({"RANK": "0"}, ValueError, ["WORLD_SIZE"]),
    ({"RANK": "one", "WORLD_SIZE": "2"}, ValueError, ["RANK='one'"]),
    ({"RANK": "2", "WORLD_SIZE": "2"}, ValueError, ["RANK=2 is not a rank of 2"]),
    ({"RANK": "0", "WORLD_SIZE": "0"}, ValueError, ["WORLD_SIZE=0"]),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "2"}, ValueError,
     ["OMPI_COMM_WORLD_RANK=3"]),
    ({"RANK": "1", "WORLD_SIZE": "2"}, ValueError, ["GPUMEM_NCCL_ID", "GPUMEM_NCCL_ID_FILE"]),
    ({"RANK": "1", "WORLD_SIZE": "2", "GPUMEM_NCCL_ID": "abc"}, ValueError,
     ["GPUMEM_NCCL_ID is not hex"]),
    ({"RANK": "1", "WORLD_SIZE": "2", "GPUMEM_NCCL_ID": "ab" * 64}, ValueError,
     ["GPUMEM_NCCL_ID holds 64 bytes"]),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "x", "GPUMEM_NCCL_ID": ID_HEX}, ValueError,
     ["LOCAL_RANK='x'"]),
])
def test_a_rank_from_the_environment_refuses_what_is_missing_or_wrong_by_name(
        no_nccl, monkeypatch, env, error, words):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(error) as e:
        no_nccl.Communicator.from_env()
    assert all(w in str(e.value) for w in words), str(e.value)
    assert no_nccl._lib is None


def test_a_rank_from_the_environment_reaches_nccl_with_a_good_id(no_nccl, monkeypatch):
    # torchrun's names, then mpirun's: both get as far as loading NCCL (missing here)
    monkeypatch.setenv("GPUMEM_NCCL_ID", ID_HEX)
    for env in ({"RANK": "1", "WORLD_SIZE": "2"},
                {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            with pytest.raises(no_nccl.NcclError, match=r"gpumem-lab\[nccl\]"):
                no_nccl.Communicator.from_env(device=0)


def test_the_unique_id_file_rank_0_writes_whole_and_the_others_wait_for(no_nccl, monkeypatch,
                                                                         tmp_path):
    import threading
    import time

    made = bytes(range(7, 135))
    monkeypatch.setattr(no_nccl, "unique_id", lambda: made)      # NCCL's id, stood in for
    path = tmp_path / "nccl.id"
    got = {}
    waiter = threading.Thread(target=lambda: got.update(
        r1=no_nccl.unique_id_file(path, 1, timeout=30)))
    waiter.start()                                   # rank 1 first: it waits for the file
    time.sleep(0.2)
    assert waiter.is_alive() and not path.exists()
    assert no_nccl.unique_id_file(str(path), 0) == made
    waiter.join(30)
    assert got["r1"] == made
    assert os.listdir(tmp_path) == ["nccl.id"]       # renamed into place: no temporary left
    assert path.read_text().strip() == made.hex()
    monkeypatch.setattr(no_nccl, "unique_id", lambda: bytes(128))
    assert no_nccl.unique_id_file(path, 0) == made   # rank 0 reads a file already there
    # from the environment: the same file, through GPUMEM_NCCL_ID_FILE
    monkeypatch.setenv("GPUMEM_NCCL_ID_FILE", str(path))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(no_nccl.NcclError, match=r"gpumem-lab\[nccl\]"):
        no_nccl.Communicator.from_env(device=0)


def test_the_unique_id_file_refuses_by_name_and_times_out_saying_why(no_nccl, tmp_path,
                                                                     monkeypatch):
    path = tmp_path / "never"
    with pytest.raises(no_nccl.NcclError, match=r"rank 1 waited 0\.2 s.*never.*rank 0") as e:
        no_nccl.unique_id_file(path, 1, timeout=0.2)
    assert "GPUMEM_NCCL_ID_FILE" not in str(e.value)
    monkeypatch.setenv("GPUMEM_NCCL_ID_FILE", str(path))
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    with pytest.raises(no_nccl.NcclError, match=r"waited 0\.1 s for GPUMEM_NCCL_ID_FILE"):
        no_nccl.Communicator.from_env(timeout=0.1)
    bad = tmp_path / "bad"
    bad.write_text("not an id\n")
    with pytest.raises(ValueError, match="bad.* is not hex"):
        no_nccl.unique_id_file(bad, 1)
    with pytest.raises(ValueError, match="rank=-1"):
        no_nccl.unique_id_file(path, -1)
    with pytest.raises(TypeError, match="rank"):
        no_nccl.unique_id_file(path, "0")
    with pytest.raises(TypeError, match="path"):
        no_nccl.unique_id_file(None, 0)
    with pytest.raises(ValueError, match="path is empty"):
        no_nccl.unique_id_file("", 0)
    for t, error in ((0, ValueError), (-1.5, ValueError), ("60", TypeError), (True, TypeError)):
        with pytest.raises(error, match="timeout"):
            no_nccl.unique_id_file(path, 1, timeout=t)
    assert no_nccl._lib is None


@pytest.mark.all_gpus
@pytest.mark.gpu
def test_one_process_per_gpu_all_reduces_like_numpy(pair, nccl_here, tmp_path):
    """Two processes, rank r on the pair's GPU r, sharing the unique id through a file
    (RANK and WORLD_SIZE as torchrun sets them): each all-reduces arange(n) + rank and
    gets NumPy's sum."""
    import json
    import subprocess
    import sys
    import time

    n, size = 1_000_003, 2
    want = np.arange(n, dtype=np.float32) * size + sum(range(size))
    root = os.path.dirname(os.path.dirname(os.path.abspath(gm.__file__)))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_nccl_rank.py")
    procs, logs = [], []
    for rank, dev in enumerate(pair):
        env = {k: v for k, v in os.environ.items()
               if k not in ("GPUMEM_NCCL_ID", "LOCAL_RANK") and not k.startswith("OMPI_")}
        env.update(NCCL_NVLS_ENABLE="0", RANK=str(rank), WORLD_SIZE=str(size),
                   GPUMEM_NCCL_ID_FILE=str(tmp_path / "nccl.id"),
                   PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out, err = (open(tmp_path / f"rank{rank}.{x}", "w+") for x in ("out", "err"))
        logs.append((out, err))
        procs.append(subprocess.Popen([sys.executable, script, str(dev), str(n)], env=env,
                                      stdout=out, stderr=err, text=True))
    deadline = time.monotonic() + 60                 # each child: 60 s
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    said = []
    for (out, err), p in zip(logs, procs):
        out.seek(0)
        err.seek(0)
        said.append((p.returncode, out.read(), err.read()[-3000:]))
        out.close()
        err.close()
    assert [rc for rc, _, _ in said] == [0, 0], said
    got = [json.loads([ln for ln in o.splitlines() if ln.startswith("{")][-1]) for _, o, _ in said]
    assert [g["rank"] for g in got] == [0, 1] and [g["device"] for g in got] == list(pair)
    for g in got:
        assert g["nranks"] == size and g["equal"], got
        assert (g["first"], g["last"]) == (float(want[0]), float(want[-1]))
        assert g["total"] == float(want.sum(dtype=np.float64))
        assert "must be gpumem.DeviceArray" in g["refused"][0]
        assert "does not fit" in g["refused"][1] and len(g["refused"]) == 2


def test_card_rows_on_a_fake_gpu_show_the_link_ceiling_and_why(monkeypatch):
    """On a fake H100 pair: the copy engine's rows start from the datasheet's NVLink rate,
    less a 16-byte header per 256-byte packet; the why is the link's raw bytes per payload
    byte (the fake's 1.07); each rate is the median of 10 with its spread."""
    from _fake_gpu import FakeGPU
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    by = {r["level"]: r for r in peer.LESSON.card(True, False)}
    one, both = by["peer GPU, one way"], by["peer GPU, both ways"]
    assert one["ceiling_GB/s"] == pytest.approx(450 * 256 / 272)
    assert both["ceiling_GB/s"] == pytest.approx(900 * 256 / 272)
    assert one["ceiling_ratio"] == pytest.approx(390 / (450 * 256 / 272))
    assert one["why"] == "1.070 link bytes per payload byte (NVML raw/data)"
    assert one["why_value"] == 1.07
    assert (one["GB/s_min"], one["GB/s_max"], one["runs"]) == (380.0, 395.0, 10)
    assert by["peer GPU, latency"]["ceiling"] is None


def test_sweeps_that_measure_nothing_say_why_in_their_titles():
    """What the shared report test reads on a GPU where the pair is not visible: every
    sweep that measures nothing says why (here: measure=False, on any machine)."""
    tables = peer.LESSON.report_sweeps(False, True, False)
    assert len(tables) == 4
    for t in tables:
        assert "(not measured: " in t.title, t.title


def test_compare_shows_the_peer_rows_of_a_two_gpu_run():
    """gpumem compare of the saved one-GPU and two-GPU H200 reports: the peer rows are there,
    measured on the two-GPU side only."""
    import pathlib

    from gpumem import compare
    reports = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reports"
    if not reports.is_dir():
        pytest.skip("the saved reports live in the source tree (docs/reports), not beside "
                    "an installed wheel's tests")
    one, two = (compare.load(reports / f) for f in ("h200-2026-11-29.json",
                                                    "h200x2-2026-11-29-quick.json"))
    rows = {r["level"]: r for r in compare.card_table(one, two)}
    for level in ("peer GPU, one way", "peer GPU, both ways", "peer GPU, latency"):
        assert level in rows, list(rows)
    assert rows["peer GPU, one way"]["B GB/s"] > 300 and rows["peer GPU, one way"]["A GB/s"] is None
    assert rows["peer GPU, latency"]["B ns"] > 2 * rows["device memory"]["B ns"]


def test_the_peer_chase_is_a_point_on_the_card_figure(monkeypatch):
    """The card's latency row of the peer GPU is drawn where the chase ran: its 64 MiB ring,
    on its own path's colour (the fake's 2,000 cycles)."""
    from _fake_gpu import FakeGPU

    from gpumem import report
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    fig = report.card_figure(report.card(measure=True), None, "NVIDIA H100 80GB HBM3")
    pts = {(p[0], p[1]): p[2:] for p in fig["points"]}
    assert pts[("latency", "peer GPU, latency")] == (64 << 20, 2000.0, "peer GPU", None, None)
    assert report.PATH_COLOURS["peer GPU"] not in (
        report.PATH_COLOURS[k] for k in report.PATH_COLOURS if k != "peer GPU")
    assert fig["spreads"]["peer GPU, one way"] == (380.0, 395.0)
