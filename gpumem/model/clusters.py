"""The clusters lesson on paper: what ``dsmem_stream`` and ``cluster_histogram``
(``cuda/clusters.cu``) ask of distributed shared memory (DSMEM), global memory and
the atomic units, counted without a GPU where the count is deterministic.

Pure Python and NumPy.  Counted here, instruction by instruction as the kernels
issue them:

* ``dsmem_stream`` -- the ``ld.shared::cluster`` (read) and ``st.shared::cluster``
  (write) warp instructions, their active lanes, the bytes they move and the
  32-byte sectors they touch, from the kernel's loops (the read loop's four loads
  in flight per thread and its remainder loop, where the lanes of one warp may part
  ways); ``local`` moves no DSMEM bytes.  Each warp adds its sum to ``out`` with one
  global atomic.
* ``cluster_histogram`` -- the loads of ``x`` (every 128-value piece of ``x`` once, in
  16-byte loads, and the last ``n % 4`` values one at a time, whatever the grid: the
  grid strides over ``x`` in whole warps; ``x`` is taken to start on the 16-byte grid,
  as gpumem's allocations do; ``owner``: once per rank of a cluster) and, from the
  values themselves, the atomics: one per value below ``bins`` (into global memory,
  the block's own shared memory, or the owning rank's shared memory through DSMEM;
  ``owner``: the owning rank's own, in the rank's own instruction), and the global
  atomics that add each block's non-zero bins at the end.

Which hardware counters show them (Hopper, Nsight Compute / CUPTI names):
:data:`COUNTERS` maps each key to one.  The SM-to-SM network's latency and
bandwidth are not modelled: the lesson measures them.

>>> from gpumem.model import clusters
>>> c = clusters.stream_counts("read", smem=65536, passes=2, block=512, blocks=4)
>>> c["dsmem_ld_requests"], c["dsmem_ld_bytes"]
(1024, 524288)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._check import choice as _choice, index

__all__ = ["COUNTERS", "STREAM_VARIANTS", "HISTOGRAM_VARIANTS", "stream_counts",
           "histogram_counts", "counter_names", "from_counters"]

WARP = 32
SECTOR = 32
STREAM_VARIANTS = ("read", "write", "local")
HISTOGRAM_VARIANTS = ("cluster", "block", "global", "owner")

#: model key -> the Hopper counters whose sum shows it (``gpumem.profile`` takes raw
#: names).  An ``atomicAdd`` whose result is unused compiles to a reduction (RED), one
#: whose result is used to an atomic (ATOM): the atomics' keys count both kinds.
COUNTERS = {
    "dsmem_ld_requests": ("l1tex__t_requests_pipe_lsu_mem_dshared_op_ld.sum",),
    "dsmem_ld_sectors": ("l1tex__t_sectors_pipe_lsu_mem_dshared_op_ld.sum",),
    "dsmem_ld_instructions": ("smsp__sass_inst_executed_op_dshared_ld.sum",),
    "dsmem_st_requests": ("l1tex__t_requests_pipe_lsu_mem_dshared_op_st.sum",),
    "dsmem_st_sectors": ("l1tex__t_sectors_pipe_lsu_mem_dshared_op_st.sum",),
    "dsmem_st_instructions": ("smsp__sass_inst_executed_op_dshared_st.sum",),
    "dsmem_atom_requests": ("l1tex__t_requests_pipe_lsu_mem_dshared_op_atom.sum",
                            "l1tex__t_requests_pipe_lsu_mem_dshared_op_redas.sum"),
    "global_atom_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
                             "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"),
    "gld_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",),
    "gld_transactions": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",),
}


def counter_names(keys) -> list[str]:
    """The counters to read for the model ``keys`` (each once, in order)."""
    return list(dict.fromkeys(n for k in keys for n in COUNTERS[k]))


def from_counters(metrics, keys) -> dict:
    """Each model key's value from a LaunchRecord's ``metrics`` (its counters summed)."""
    return {k: sum(metrics[n] for n in COUNTERS[k]) for k in keys}


def _block(fn: str, block: Any) -> int:
    block = index(fn, "block", block, 32, 1024)
    if block % WARP:
        raise ValueError(f"{fn}: block={block} is not allowed; block must be a multiple of 32")
    return block


def _tally(words: np.ndarray, active: np.ndarray) -> tuple[int, int, int]:
    """Warp instructions given lane by lane (rows: 16-byte word indices, ``active``
    lanes): instructions with an active lane, 32-byte sectors (distinct per
    instruction) and bytes (16 per active lane)."""
    live = active.any(axis=1)
    w, a = words[live], active[live]
    if not w.size:
        return 0, 0, 0
    sec = np.where(a, (16 * w) // SECTOR, -1)
    sec.sort(axis=1)
    distinct = ((np.diff(sec, axis=1) != 0) & (sec[:, 1:] >= 0)).sum(axis=1) + (sec[:, 0] >= 0)
    return int(live.sum()), int(distinct.sum()), 16 * int(a.sum())


def _stream_block(variant: str, words4: int, block: int) -> tuple[int, int, int]:
    """One pass of one block: the DSMEM (or, for local, shared) 16-byte accesses."""
    t = np.arange(block, dtype=np.int64).reshape(-1, WARP)    # thread ids, warp by warp
    rows = []
    if variant == "write":                                     # k = t, t + block, ... < words4
        for r in range(-(-words4 // block)):
            k = t + r * block
            rows.append((k, k < words4))
        return _tally(np.concatenate([k for k, _ in rows]), np.concatenate([a for _, a in rows]))
    # read / local: for (k = t; k + 3 block < words4; k += 4 block) four loads k + u block;
    # then for (; k < words4; k += block) one load.  Lanes of a warp leave the first loop
    # at different trips (m); the warp runs both loops to its slowest lane's end.
    m = np.maximum(0, -(-(words4 - 3 * block - t) // (4 * block)))
    for i in range(int(m.max(initial=0))):
        on = m > i
        for u in range(4):
            rows.append((t + 4 * block * i + u * block, on))
    k0 = t + 4 * block * m
    rem = np.maximum(0, -(-(words4 - k0) // block))
    for j in range(int(rem.max(initial=0))):
        rows.append((k0 + j * block, rem > j))
    if not rows:
        return 0, 0, 0
    return _tally(np.concatenate([k for k, _ in rows]), np.concatenate([a for _, a in rows]))


def stream_counts(variant: str = "read", *, smem: int, passes: int = 64, block: int = 512,
                  blocks: int = 2) -> dict:
    """What one ``dsmem_stream`` launch asks for: ``blocks`` blocks (cluster size x
    clusters: the cluster size changes where the bytes go, not how many), each moving
    its ``smem`` bytes ``passes`` times.

    Returns
    -------
    dict: ``dsmem_ld_requests`` (= ``dsmem_ld_instructions``: warp instructions with an
    active lane), ``dsmem_ld_sectors``, ``dsmem_ld_bytes`` and the same for ``st``
    (zero for the variants that do not issue them; ``local`` issues neither: its
    ``ld.shared`` loads are ``shared_ld_*``, the fill's stores and the write
    variant's read-back of its own memory not counted); ``global_atom_requests``
    (one per warp: its sum into ``out``); ``dsmem_bytes`` (what crosses into another block's shared
    memory, loads and stores).
    """
    fn = "model.clusters.stream_counts"
    variant = _choice(fn, "variant", variant, STREAM_VARIANTS)
    smem = index(fn, "smem", smem, 16, 1 << 30)
    if smem % 16:
        raise ValueError(f"{fn}: smem={smem} is not allowed; smem must be a multiple of 16")
    passes = index(fn, "passes", passes, 1, 1 << 16)
    block = _block(fn, block)
    blocks = index(fn, "blocks", blocks, 1, 1 << 24)
    req, sec, nbytes = (passes * blocks * v for v in _stream_block(variant, smem // 16, block))
    out = {f"dsmem_{op}_{k}": 0 for op in ("ld", "st")
           for k in ("requests", "instructions", "sectors", "bytes")}
    out.update({f"shared_ld_{k}": 0 for k in ("requests", "sectors", "bytes")})
    key = {"read": "dsmem_ld", "write": "dsmem_st", "local": "shared_ld"}[variant]
    out.update({f"{key}_requests": req, f"{key}_sectors": sec, f"{key}_bytes": nbytes})
    if key != "shared_ld":
        out[f"{key}_instructions"] = req
    out["dsmem_bytes"] = out["dsmem_ld_bytes"] + out["dsmem_st_bytes"]
    out["global_atom_requests"] = blocks * (block // WARP)
    return out


def histogram_counts(x, bins: int, *, variant: str = "cluster", cluster: int = 1,
                     clusters: int = 1, block: int = 512) -> dict:
    """What one ``cluster_histogram`` launch asks for, from the values ``x`` (a 1-D
    uint32 array) and the launch (``cluster`` blocks per cluster, ``clusters`` clusters:
    a LaunchRecord's params).

    Returns
    -------
    dict: ``gld_requests``, ``gld_transactions`` (the loads of ``x``: data-independent);
    ``counted`` (values below ``bins``); ``atom_instructions`` (warp instructions of the
    per-value ``atomicAdd`` with an active lane) and where they go: ``global_atom_*``,
    ``shared_atom_*`` or ``dsmem_atom_*`` (``cluster``: a warp's lanes whose bin lies in
    the own block's shared memory make a shared atomic, the others a DSMEM one: a
    mixed warp counts one of each; ``owner``: every rank runs each of its cluster's
    pieces, a shared atomic where one of its lanes holds a bin of the rank's slice);
    ``flush_atom_lanes`` and ``flush_atom_requests`` (block, cluster, owner: the global
    atomics adding each block's non-zero bins); ``global_atom_requests`` (all global
    atomic instructions).
    """
    fn = "model.clusters.histogram_counts"
    variant = _choice(fn, "variant", variant, HISTOGRAM_VARIANTS)
    bins = index(fn, "bins", bins, 1, 1 << 24)
    block = _block(fn, block)
    cluster = index(fn, "cluster", cluster, 1, 16)
    if cluster & (cluster - 1):
        raise ValueError(f"{fn}: cluster={cluster} is not allowed; cluster must be a power of two")
    if variant not in ("cluster", "owner") and cluster != 1:
        raise ValueError(f"{fn}: cluster={cluster} is not allowed with variant={variant!r}")
    clusters = index(fn, "clusters", clusters, 1, 1 << 20)
    x = np.asarray(x)
    if x.dtype != np.uint32 or x.ndim != 1:
        raise TypeError(f"{fn}: x must be a 1-D uint32 array, not {x.dtype} with shape {x.shape}")
    n = x.size
    # loads: x's 16-byte groups, the grid striding over them in whole warps (a warp's
    # 32 groups, 512 bytes, in one load; two such loads a step, the second predicated:
    # one with no lane inside is no request), then the last n % 4 values one at a time
    # (owner: every rank of a cluster makes the loads of its cluster's threads)
    groups, rest = divmod(n, 4)
    full, part = divmod(groups, WARP)
    reads = cluster if variant == "owner" else 1
    out = {"gld_requests": reads * (full + (part > 0) + (rest > 0)),
           "gld_transactions": reads * (16 * full + -(-part // 2) + (rest > 0))}
    hit = x < bins
    i = np.flatnonzero(hit)
    out["counted"] = int(i.size)
    # the warp instruction that counts value i: value j of a warp's 32 groups (one per
    # lane), or a warp's 32 values of the rest; and the thread that runs it
    grouped = i < 4 * groups
    piece = np.where(grouped, i // (4 * WARP) * 4 + i % 4,
                     4 * -(-groups // WARP) + (i - 4 * groups) // WARP)
    threads = (clusters if variant == "owner" else cluster * clusters) * block
    thread = np.where(grouped, i // 4, i - 4 * groups) % threads
    inst = int(np.unique(piece).size)
    out["atom_instructions"] = inst
    out["atom_lanes"] = int(i.size)
    for place in ("global", "shared", "dsmem"):
        out[f"{place}_atom_requests"] = 0
    where = {"global": "global", "block": "shared", "cluster": "dsmem",
             "owner": "shared"}[variant]
    out[f"{where}_atom_requests"] = inst
    out["flush_atom_lanes"] = out["flush_atom_requests"] = 0
    if variant != "global" and i.size:
        b = thread // block              # the block that counted it (owner: the cluster)
        v = x[i].astype(np.int64)
        slice_ = -(-bins // cluster)
        if variant == "block":
            owner, local = b, v                                    # the block's own bins
        elif variant == "owner":
            # cluster b of the loads' grid: its rank holding the bin counts it, in an
            # instruction of its own (every rank runs each of the cluster's pieces)
            owner, local = b * cluster + v // slice_, v % slice_
            inst = int(np.unique(owner * (piece.max() + 1) + piece).size)
            out["atom_instructions"] = out["shared_atom_requests"] = inst
        else:
            owner = (b // cluster) * cluster + v // slice_         # the rank that holds the bin
            local = v % slice_
            # A warp's atomicAdd through the cluster window runs as a shared-memory atomic
            # for the lanes whose bin is in the own block and as a DSMEM one for the others
            # (measured on an H200: a warp of own-rank bins counts no DSMEM request, a
            # mixed warp one of each): count the warp instructions with a remote lane.
            out["dsmem_atom_requests"] = int(np.unique(piece[owner != b]).size)
            out["shared_atom_requests"] = int(np.unique(piece[owner == b]).size)
        pairs = np.unique(owner * slice_ + local)                  # non-zero (block, bin)
        out["flush_atom_lanes"] = int(pairs.size)
        # for (i = t; i < slice; i += block) if (c) atomicAdd: one instruction per warp-row
        blk, pos = pairs // slice_, pairs % slice_
        out["flush_atom_requests"] = int(np.unique(blk * (-(-slice_ // WARP)) + pos // WARP).size)
        out["global_atom_requests"] += out["flush_atom_requests"]
    return out
