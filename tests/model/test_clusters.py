"""gpumem.model.clusters against brute force: every thread's loop of cuda/clusters.cu run
one iteration at a time, its instructions gathered warp by warp."""
from collections import defaultdict

import numpy as np
import pytest

from gpumem.model import clusters as cm


def _brute_stream(variant, words4, block):
    """One pass of one block: {(warp, loop, trip, load): [16-byte word of each active lane]}."""
    inst = defaultdict(list)
    for t in range(block):
        w = t // 32
        if variant == "write":
            for r, k in enumerate(range(t, words4, block)):
                inst[(w, 0, r, 0)].append(k)
            continue
        k, i = t, 0
        while k + 3 * block < words4:
            for u in range(4):
                inst[(w, 0, i, u)].append(k + u * block)
            k, i = k + 4 * block, i + 1
        j = 0
        while k < words4:
            inst[(w, 1, j, 0)].append(k)
            k, j = k + block, j + 1
    req = len(inst)
    sec = sum(len({16 * k // 32 for k in ks}) for ks in inst.values())
    return req, sec, 16 * sum(len(ks) for ks in inst.values())


@pytest.mark.parametrize("variant", ["read", "write", "local"])
@pytest.mark.parametrize("smem,block", [(65536, 512), (16, 32), (16 * 1001, 256),
                                        (16 * 4 * 96 + 48, 96), (16 * 999, 1024),
                                        (16 * 97, 64), (232448, 1024)])
def test_stream_counts_are_the_thread_by_thread_count(variant, smem, block):
    req, sec, nbytes = _brute_stream(variant, smem // 16, block)
    got = cm.stream_counts(variant, smem=smem, passes=3, block=block, blocks=5)
    key = {"read": "dsmem_ld", "write": "dsmem_st", "local": "shared_ld"}[variant]
    assert (got[f"{key}_requests"], got[f"{key}_sectors"], got[f"{key}_bytes"]) == \
        (15 * req, 15 * sec, 15 * nbytes)
    assert nbytes == smem                         # every word once per pass
    assert got["dsmem_bytes"] == (0 if variant == "local" else 15 * smem)
    assert got["global_atom_requests"] == 5 * block // 32
    others = [k for k in got if k.startswith(("dsmem_ld", "dsmem_st", "shared_ld"))
              and not k.startswith(key)]
    assert all(got[k] == 0 for k in others)


def test_stream_counts_when_the_lanes_part_ways():
    # 1000 words, 256 threads: lanes 0..231 take one trip of four loads (k + 768 < 1000)
    # and are done; lanes 232..255 take no trip, then three single loads -- warps 0..6 run
    # 4 instructions, warp 7 runs 4 + 3 (8 lanes, then 24)
    got = cm.stream_counts("read", smem=16000, passes=1, block=256, blocks=1)
    assert got["dsmem_ld_requests"] == 7 * 4 + 7
    assert got["dsmem_ld_sectors"] == 16000 // 32
    assert got["dsmem_ld_bytes"] == 16000


def _brute_histogram(x, bins, variant, cluster, clusters, block):
    grid, n = cluster * clusters, x.size
    # owner: the threads of a cluster stride over x, every rank the same values
    stride = (clusters if variant == "owner" else grid) * block
    loads = defaultdict(list)
    atoms = defaultdict(list)
    remote, own = set(), set()          # warp instructions with a lane in another / own block
    held = defaultdict(int)
    slice_ = -(-bins // cluster) if variant in ("cluster", "owner") else bins
    groups = n // 4
    for b in range(grid):
        for t in range(block):
            g = (b // cluster if variant == "owner" else b) * block + t
            # cuda/clusters.cu: 16-byte loads, each its own instruction (the kernel pairs
            # groups g and g + stride in one step: a warp's second load with no lane inside
            # is no request), its 4 values counted by 4 atomic instructions (value j of
            # each lane in the j-th), then the rest
            steps = [(("g", r), [4 * q + j for j in range(4)])
                     for r, q in enumerate(range(g, groups, stride))]
            steps += [(("s", r), [4 * groups + q]) for r, q in
                      enumerate(range(g, n - 4 * groups, stride))]
            for key, idx in steps:
                loads[(b, t // 32) + key].append(idx)
                for j, i in enumerate(idx):
                    if x[i] >= bins or variant == "owner" and int(x[i]) // slice_ != b % cluster:
                        continue
                    inst = (b, t // 32) + key + (j,)
                    atoms[inst].append(i)
                    if variant == "block":
                        held[(b, int(x[i]))] += 1
                    elif variant == "owner":
                        held[(b, int(x[i]) % slice_)] += 1
                    elif variant == "cluster":
                        owner = (b // cluster) * cluster + int(x[i]) // slice_
                        held[(owner, int(x[i]) % slice_)] += 1
                        (remote if owner != b else own).add(inst)
    flush = defaultdict(int)
    for (b, pos), c in held.items():
        if c:
            flush[(b, pos // 32)] += 1
    return {"gld_requests": len(loads),
            "gld_transactions": sum(len({4 * i // 32 for q in v for i in q})
                                    for v in loads.values()),
            "atom_instructions": len(atoms), "counted": int((x < bins).sum()),
            "flush_atom_requests": len(flush), "flush_atom_lanes": sum(flush.values()),
            "remote_instructions": len(remote), "own_instructions": len(own)}


@pytest.mark.parametrize("variant,cluster", [("global", 1), ("block", 1), ("cluster", 2),
                                             ("cluster", 4), ("cluster", 1), ("owner", 1),
                                             ("owner", 2), ("owner", 4)])
@pytest.mark.parametrize("n,bins,clusters,block", [(1000, 70, 2, 64), (37, 5, 1, 32),
                                                   (4099, 300, 3, 96), (640, 1 << 12, 2, 32)])
def test_histogram_counts_are_the_thread_by_thread_count(variant, cluster, n, bins, clusters,
                                                         block, rng):
    x = rng.integers(0, int(bins * 1.3) + 1, n, dtype=np.uint32)
    want = _brute_histogram(x, bins, variant, cluster, clusters, block)
    got = cm.histogram_counts(x, bins, variant=variant, cluster=cluster, clusters=clusters,
                              block=block)
    remote, own = want.pop("remote_instructions"), want.pop("own_instructions")
    assert {k: got[k] for k in want} == want
    if variant == "cluster":    # a warp's own-block lanes: a shared atomic, the rest DSMEM
        assert (got["dsmem_atom_requests"], got["shared_atom_requests"]) == (remote, own)
        assert max(remote, own) <= want["atom_instructions"] <= remote + own
    else:
        where = {"global": "global", "block": "shared", "owner": "shared"}[variant]
        assert got[f"{where}_atom_requests"] == want["atom_instructions"]
    assert got["global_atom_requests"] == (want["atom_instructions"] if variant == "global"
                                           else want["flush_atom_requests"])


def test_histogram_loads_do_not_depend_on_the_grid():
    x = np.arange(100_003, dtype=np.uint32)
    a = cm.histogram_counts(x, 10, variant="global", clusters=1, block=32)
    b = cm.histogram_counts(x, 10, variant="global", clusters=977, block=1024)
    assert (a["gld_requests"], a["gld_transactions"]) == (b["gld_requests"],
                                                          b["gld_transactions"]) == (783, 12501)
    # x[0..9] are the first three lanes' groups: one atomic instruction per value of a group
    assert a["counted"] == 10 and a["atom_instructions"] == 4


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: cm.stream_counts("copy", smem=64), ValueError, "variant='copy'"),
    (lambda: cm.stream_counts(smem=100), ValueError, "smem=100"),
    (lambda: cm.stream_counts(smem=64, block=100), ValueError, "block=100"),
    (lambda: cm.stream_counts(smem=64, passes=0), ValueError, "passes=0"),
    (lambda: cm.stream_counts(smem=64.0), TypeError, "smem must be an int"),
    (lambda: cm.histogram_counts(np.zeros(4, np.int32), 4), TypeError, "uint32"),
    (lambda: cm.histogram_counts(np.zeros(4, np.uint32), 0), ValueError, "bins=0"),
    (lambda: cm.histogram_counts(np.zeros(4, np.uint32), 4, cluster=3), ValueError,
     "cluster=3"),
    (lambda: cm.histogram_counts(np.zeros(4, np.uint32), 4, variant="block", cluster=2),
     ValueError, "cluster=2"),
    (lambda: cm.histogram_counts(np.zeros(4, np.uint32), 4, variant="x"), ValueError,
     "variant='x'"),
])
def test_hostile_input(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_the_counter_names_are_hoppers():
    assert set(cm.COUNTERS) >= {"dsmem_ld_requests", "dsmem_st_sectors", "global_atom_requests"}
    assert all(n.endswith(".sum") for v in cm.COUNTERS.values() for n in v)
    names = cm.counter_names(["global_atom_requests", "gld_requests", "global_atom_requests"])
    assert names == ["l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
                     "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
                     "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    got = cm.from_counters({n: i + 1.0 for i, n in enumerate(names)},
                           ["global_atom_requests", "gld_requests"])
    assert got == {"global_atom_requests": 3.0, "gld_requests": 3.0}
