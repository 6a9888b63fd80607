"""Distributed shared memory: the blocks of a thread block cluster share their
shared memory (compute capability 9.0 and newer).

A *cluster* is a group of up to 8 blocks (16 where the GPU allows the
non-portable size) that the hardware runs at the same time on SMs of one GPC.
Each block can map another's shared memory into its own address space
(``cluster.map_shared_rank`` in cooperative groups, ``mapa`` in PTX) and read,
write or update it with atomics: the accesses travel over the SM-to-SM network
instead of through L2.  Three experiments:

* :func:`dsmem_latency` -- a dependent pointer chase (:func:`dsmem_chase`) in a
  block's own shared memory, in its own through the cluster window, and in
  another block's: cycles per load.  (The latency ladder, ``gpumem.experiments``,
  has the same chase through L1, L2 and device memory for comparison.)
* :func:`dsmem_bandwidth` -- coalesced 16-byte loads and stores into the next
  rank's shared memory (:func:`dsmem_stream`), by cluster size 1, 2, 4, 8, 16,
  against each block reading its own.
* :func:`histogram_sweep` -- the CUDA Programming Guide's histogram whose bins
  are spread over a cluster's shared memories (:func:`cluster_histogram`), for
  more bins than one block can hold, against one shared histogram per block and
  atomics in global memory.
* :func:`pipeline_sweep` -- a producer -> consumer pipeline in clusters of two
  (:func:`dsmem_pipeline`): each tile handed over in the consumer's shared memory
  against through global memory.

Everything here needs a GPU of compute capability 9.0 or newer: on an older one
every call raises :class:`gpumem.CudaError` naming the capability it needs, and
without a GPU the experiments raise :class:`gpumem.CudaUnavailableError`.
"""
from __future__ import annotations

import math
from typing import Any, Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..runtime.args import _checked, _flag, _host, _index, _indices, arg_row
from ..runtime.measure import device_copy
from ..runtime.table import Table
from ..tools import card
from ..tools import headline as hl
from ..tools.lesson import Lesson
from ..tools.sweep import _each, _int, _ints, _need_gpu, _progress, _repeat

__all__ = ["CC_NEEDED", "CLUSTER_SIZES", "HISTOGRAM_BINS", "CHASE_VARIANTS", "STREAM_VARIANTS",
           "HISTOGRAM_VARIANTS", "cluster_capable", "dsmem_chase", "dsmem_chase_reference",
           "chase_hop", "dsmem_stream", "dsmem_stream_reference", "cluster_histogram",
           "cluster_histogram_reference", "dsmem_pipeline", "dsmem_pipeline_reference",
           "PIPELINE_VARIANTS", "PIPELINE_SIZES", "dsmem_latency", "dsmem_bandwidth",
           "histogram_sweep", "pipeline_sweep"]

Array = Union[np.ndarray, DeviceArray]

#: The compute capability thread block clusters need (Hopper, sm_90).
CC_NEEDED = (9, 0)
#: Cluster sizes of :func:`dsmem_bandwidth` (:func:`dsmem_stream`'s, 1 .. 16): 8 is the
#: portable maximum, 16 needs the non-portable size
#: (``cudaFuncAttributeNonPortableClusterSizeAllowed``).
CLUSTER_SIZES = arg_row("dsmem_stream", "cluster")["allowed"]
#: Bin counts of :func:`histogram_sweep`: 2^12 fit one block's shared memory; 2^16 ..
#: 2^18 (256 KiB .. 1 MiB of counts) do not, on any GPU of today.
HISTOGRAM_BINS = (1 << 12, 1 << 14, 1 << 16, 1 << 17, 1 << 18)
#: Each kernel's variants, as its C argument table names them.
CHASE_VARIANTS = arg_row("dsmem_chase", "variant")["choices"]           # local, self, remote
STREAM_VARIANTS = arg_row("dsmem_stream", "variant")["choices"]         # read, write, local
HISTOGRAM_VARIANTS = arg_row("cluster_histogram", "variant")["choices"]  # cluster, ... owner
PIPELINE_VARIANTS = arg_row("dsmem_pipeline", "variant")["choices"]     # dsmem, global
#: Sizes of :func:`pipeline_sweep` (float32 elements): 2^16 .. 2^26.
PIPELINE_SIZES = tuple(1 << k for k in range(16, 27, 2))

_WHERE = {"local": "own shared memory (ld.shared)",
          "self": "own shared memory through the cluster window (ld.shared::cluster)",
          "remote": "rank 1's shared memory (mapa + ld.shared::cluster)"}
_REFUSED = "refused by this GPU"


# ---- which GPUs -----------------------------------------------------------------------------
def cluster_capable(cc: Sequence[int]) -> bool:
    """Whether a GPU of compute capability ``cc`` (``(major, minor)``) runs this lesson's
    kernels: thread block clusters need :data:`CC_NEEDED`, 9.0 (Hopper) or newer."""
    if (isinstance(cc, (str, bytes)) or not hasattr(cc, "__len__")
            or getattr(cc, "ndim", 1) != 1 or len(cc) != 2):   # a 0-d array has __len__ too
        raise TypeError(f"cluster_capable: cc must be (major, minor), not {cc!r}")
    major, minor = (_index("cluster_capable", "cc", v) for v in cc)
    return (major, minor) >= CC_NEEDED


def _require(fn: str) -> None:
    """A GPU, and one of compute capability 9.0 or newer: CudaUnavailableError or
    CudaError naming ``fn`` and the capability otherwise (before anything runs)."""
    if not runtime.is_available():
        why = "no usable CUDA GPU"
        try:
            _need_gpu()                 # its message says why, where it has one
        except runtime.CudaUnavailableError as e:
            why = str(e)
        raise runtime.CudaUnavailableError(f"{fn}: no GPU to measure on ({why})")
    cc = tuple(runtime.device().compute_capability)
    if not cluster_capable(cc):
        raise runtime.CudaError(
            f"{fn}: a cluster launch (thread block clusters, distributed shared memory) needs "
            f"compute capability {CC_NEEDED[0]}.{CC_NEEDED[1]} or newer (sm_90, Hopper); this "
            f"GPU has compute capability {cc[0]}.{cc[1]}")


# ---- the kernels ------------------------------------------------------------------------------
def chase_hop(nodes: int) -> int:
    """The ring's hop: node ``i`` of :func:`dsmem_chase`'s ring links to ``(i + hop) mod
    nodes``; the first value from ``nodes // 2 + 1`` up that is coprime to ``nodes``, so the
    ring is one cycle through every node."""
    nodes = _int("chase_hop", "nodes", nodes, 2, 1 << 40)
    h = nodes // 2 + 1
    while math.gcd(h, nodes) != 1:
        h += 1
    return h % nodes


def dsmem_chase(nodes: int = 1024, *, variant: Literal["local", "self", "remote"] = "remote",
                cluster: int = 2, steps: int = 4096, warmup: int | None = None):
    """A dependent pointer chase in shared memory, launched as one cluster.

    Every block of the cluster (each given half an SM's shared memory, so that each
    has an SM of its own) writes the same ring of ``nodes`` 4-byte links into its
    shared memory (node ``i`` holds the byte offset of node ``(i + hop) mod nodes``,
    :func:`chase_hop`); after ``cluster.sync()`` one thread of rank 0 follows it,
    each load's address the value the previous one returned: ``warmup`` untimed
    loads, then ``steps`` timed with ``clock64()``.

    Parameters
    ----------
    nodes : int
        Links in the ring, 2 .. 12288 (48 KiB).
    variant : {"local", "self", "remote"}
        Whose shared memory, through which instruction: its own with ``ld.shared``
        (LDS), its own through the cluster window (``ld.shared::cluster`` to its
        own rank), or rank 1's (``mapa`` then ``ld.shared::cluster``).
    cluster : int
        Blocks per cluster: 2, 4, 8 or 16 (16 only where the GPU allows it).
    steps : int
        Timed loads, 1 .. 2**20.
    warmup : int, optional
        Untimed loads first, 0 .. 2**24 (default: ``nodes``, one lap).

    Returns
    -------
    numpy.ndarray of int64: ``[the node it ends at, clock64 cycles of the timed loads]``
    (:func:`dsmem_chase_reference` gives the end node), or None while gpumem checks a
    call without running it.
    """
    return _core.dsmem_chase(_index("dsmem_chase", "nodes", nodes), variant=variant,
                             **_indices("dsmem_chase", cluster=cluster, steps=steps,
                                        warmup=warmup))


def dsmem_chase_reference(nodes: int = 1024, *, steps: int = 4096,
                          warmup: int | None = None) -> int:
    """The node :func:`dsmem_chase` ends at, from node 0 after ``warmup + steps`` links."""
    fn = "dsmem_chase_reference"
    nodes = _checked(fn, "dsmem_chase", "nodes", nodes)
    steps = _checked(fn, "dsmem_chase", "steps", steps)
    warmup = nodes if warmup is None else _checked(fn, "dsmem_chase", "warmup", warmup)
    return (warmup + steps) * chase_hop(nodes) % nodes


def dsmem_stream(*, variant: Literal["read", "write", "local"] = "read", cluster: int = 2,
                 smem: int | None = None, passes: int = 64, block: int = 512,
                 clusters: int | None = None):
    """Stream 16-byte words through another block's shared memory, many times.

    Block ``b`` of the grid fills ``smem`` bytes of its shared memory with uint32
    words ``w(b, j) = b * 65599 + j`` and waits for its cluster; then each thread
    moves the 16-byte words ``k, k + block, ...`` (a warp touches 512 contiguous
    bytes) ``passes`` times:

    * ``read``: loads from the next rank's shared memory (``(rank + 1) mod cluster``;
      with ``cluster=1`` its own, through the cluster window);
    * ``write``: stores ``w(b, j) + pass`` into the next rank's;
    * ``local``: loads from its own with ``ld.shared`` -- the SM's own bandwidth.

    Parameters
    ----------
    variant : {"read", "write", "local"}
    cluster : int
        Blocks per cluster: 1, 2, 4, 8 or 16 (16 only where the GPU allows it;
        ValueError "refused by this GPU" otherwise).
    smem : int, optional
        Bytes of shared memory per block, a multiple of 16, up to this GPU's opt-in
        maximum (227 KiB on an H100).  Default: half an SM's shared memory (114 KiB on
        an H100), so that no two blocks share an SM and every access to another rank's
        memory crosses the SM-to-SM network (with less, two ranks of a cluster may sit on
        one SM).
    passes : int
        Times every word is moved, 1 .. 65536.
    block : int
        Threads per block, a multiple of 32 up to 1024.
    clusters : int, optional
        Clusters in the grid (default: as many as can be resident at once).

    Returns
    -------
    numpy.ndarray of one uint32: the sum of every word read (``write``: of every
    word in the blocks' memories after the last pass), wrapping at 2**32 --
    :func:`dsmem_stream_reference` -- or None while gpumem checks a call.  The
    LaunchRecord (:func:`gpumem.last_record`) has the time, the bytes moved, ``smem``
    and ``clusters``.
    """
    return _core.dsmem_stream(variant=variant,
                              **_indices("dsmem_stream", cluster=cluster, smem=smem,
                                         passes=passes, block=block, clusters=clusters))


def dsmem_stream_reference(variant: Literal["read", "write", "local"] = "read", *,
                           smem: int = 65536, passes: int = 64, blocks: int = 1) -> int:
    """Reference of :func:`dsmem_stream`'s checksum for a grid of ``blocks`` blocks (cluster
    size times ``clusters``; the cluster size itself does not change it).

    The sum of the words ``b * 65599 + j (+ pass)`` wraps at 2**32 like the kernel's, and a
    sum of wrapped words is the wrapped sum, so it is a closed form in Python integers."""
    fn = "dsmem_stream_reference"
    variant = _checked(fn, "dsmem_stream", "variant", variant)
    smem = _checked(fn, "dsmem_stream", "smem", smem)
    if smem % 16:
        raise ValueError(f"{fn}: smem={smem} is not a multiple of 16 bytes")
    passes = _checked(fn, "dsmem_stream", "passes", passes)
    blocks = _int(fn, "blocks", blocks, 1, 16 << 20)
    w = smem // 4                                   # words per block
    words = 65599 * w * (blocks * (blocks - 1) // 2) + blocks * (w * (w - 1) // 2)
    if variant == "write":                          # the last pass's words
        total = words + blocks * w * (passes - 1)
    else:
        total = words * passes
    return total % (1 << 32)


def cluster_histogram(x: Array, bins: int, *,
                      variant: Literal["cluster", "block", "global", "owner"] = "cluster",
                      cluster: int | None = None, block: int | None = None,
                      clusters: int | None = None, out: DeviceArray | None = None):
    """Count the values of ``x`` below ``bins``: a histogram with integer bins.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, uint32, 1-D
        The values; those ``>= bins`` are not counted.  At most 2**32 - 1 of them.
    bins : int
        1 .. 2**24.
    variant : {"cluster", "block", "global", "owner"}
        ``cluster``: the bins are split into ``cluster`` slices, one in each block's
        shared memory, and each value's atomic add goes to the block that owns its
        bin through distributed shared memory -- the CUDA Programming Guide's
        histogram, for more bins than one block holds; ``block``: every bin in each
        block's shared memory (only while ``4 * bins`` bytes fit one block);
        ``global``: one ``atomicAdd`` in global memory per value; ``owner``: the bins
        split as for ``cluster``, but the values travel instead of the atomics: every
        block of a cluster reads all of the cluster's values (L2 serves the repeats)
        and counts only those in its own slice -- local shared-memory atomics, no
        DSMEM.  The shared copies are added into the result at the end of each block.
    cluster : int, optional
        Blocks per cluster for ``variant="cluster"`` or ``"owner"``: 1, 2, 4, 8 or 16
        (default: the smallest whose slices fit a block's shared memory on this GPU).
    block : int, optional
        Threads per block, a multiple of 32 up to 1024 (default 512; ``owner`` 1024: it
        waits on its loads, and twice the threads keep twice the bytes in flight).
    clusters : int, optional
        Clusters in the grid (default: one value per thread, at most as many clusters
        as can be resident at once; the grid then strides over ``x``).
    out : DeviceArray, optional
        uint32, shape ``(bins,)``: overwritten with the counts.

    Returns
    -------
    numpy.ndarray of uint32 counts (``bins`` of them), or ``out`` when given (a
    DeviceArray also when ``x`` is one).  Equal to :func:`cluster_histogram_reference`.
    """
    return _core.cluster_histogram(x, _index("cluster_histogram", "bins", bins),
                                   variant=variant,
                                   **_indices("cluster_histogram", cluster=cluster, block=block,
                                              clusters=clusters), out=out)


def cluster_histogram_reference(x: Any, bins: int) -> np.ndarray:
    """NumPy reference of :func:`cluster_histogram`: ``np.bincount`` of the values below
    ``bins``, as uint32."""
    fn = "cluster_histogram_reference"
    bins = _checked(fn, "cluster_histogram", "bins", bins)
    x = _host(fn, "x", x, None)
    if x.dtype != np.uint32 or x.ndim != 1:
        raise TypeError(f"{fn}: x must be a 1-D uint32 array, not {x.dtype} with shape "
                        f"{x.shape}")
    return np.bincount(x[x < bins], minlength=bins).astype(np.uint32)


def dsmem_pipeline(x: Array, *, variant: Literal["dsmem", "global"] = "dsmem", block: int = 256,
                   clusters: int | None = None, out: DeviceArray | None = None):
    """``2 x + 1`` through a producer -> consumer pipeline in clusters of two blocks.

    Cluster ``c`` takes a contiguous run of tiles of ``4 * block`` floats.  At each
    step rank 0 (the producer) computes the next tile from ``x`` while rank 1 (the
    consumer) stores the previous one to ``out``; one ``cluster.sync()`` per step
    hands the tile over, two tiles in flight.  ``dsmem``: the producer stores each
    tile straight into the consumer's shared memory; ``global``: into a global
    buffer of the cluster's, which the consumer reads back from L2.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, 1-D
    variant : {"dsmem", "global"}
    block : int
        Threads per block, a multiple of 32 up to 1024.
    clusters : int, optional
        Clusters of two in the grid (default: one per tile, at most as many as can be
        resident at once).
    out : DeviceArray, optional

    Returns
    -------
    ``2 x + 1`` (:func:`dsmem_pipeline_reference`), or None while gpumem checks a call.
    """
    return _core.dsmem_pipeline(x, variant=variant,
                                **_indices("dsmem_pipeline", block=block, clusters=clusters),
                                out=out)


def dsmem_pipeline_reference(x: Any) -> np.ndarray:
    """NumPy reference of :func:`dsmem_pipeline`: ``2 x + 1`` in float32."""
    x = _host("dsmem_pipeline_reference", "x", x, None)
    if x.dtype != np.float32 or x.ndim != 1:
        raise TypeError(f"dsmem_pipeline_reference: x must be a 1-D float32 array, not "
                        f"{x.dtype} with shape {x.shape}")
    return np.float32(2) * x + np.float32(1)


# ---- the experiments ----------------------------------------------------------------------------
def dsmem_latency(*, nodes: int = 1024, cluster: int = 2, steps: int = 4096,
                  variants: Sequence[str] = CHASE_VARIANTS) -> Table:
    """Cycles per dependent load in a block's own shared memory and in another block's.

    One :func:`dsmem_chase` per variant (one lap of warm-up first).  Each chase's end
    node is checked against :func:`dsmem_chase_reference` (RuntimeError if it
    differs).  The latency ladder of global memory (L1, L2, device memory) is the
    ladder lesson's ``latency_ladder``: on an H100 an L2 hit costs about 250 cycles.

    Returns
    -------
    Table: variant, where, cluster, nodes, steps, cycles/load.
    """
    fn = "dsmem_latency"
    nodes = _checked(fn, "dsmem_chase", "nodes", nodes)
    cluster = _checked(fn, "dsmem_chase", "cluster", cluster)
    steps = _checked(fn, "dsmem_chase", "steps", steps)
    variants = _each(fn, "variants", variants, "dsmem_chase", "variant")
    _require(fn)
    rows = []
    for v in variants:
        r = dsmem_chase(nodes, variant=v, cluster=cluster, steps=steps)
        want = dsmem_chase_reference(nodes, steps=steps)
        if int(r[0]) != want:
            raise RuntimeError(f"{fn}: the {v} chase ended at node {int(r[0])}, not {want}")
        rows.append({"variant": v, "where": _WHERE[v], "cluster": cluster, "nodes": nodes,
                     "steps": steps, "cycles/load": float(r[1]) / steps})
    return Table(rows, ["variant", "where", "cluster", "nodes", "steps", "cycles/load"],
                 sources={"cycles/load": "measured"},
                 title="a dependent load in shared memory: the block's own against another "
                       "block's of its cluster (clock64 cycles per load)")


def _stream_point(variant: str, cluster: int, smem: int | None, passes: int, block: int,
                  repeat: int) -> dict:
    """One dsmem_stream timing: median GB/s of ``repeat`` launches, the checksum checked."""
    res = runtime.bench(dsmem_stream, variant=variant, cluster=cluster, smem=smem,
                        passes=passes, block=block, repeat=repeat, warmup=2)
    clusters, smem = int(res.params["clusters"]), int(res.params["smem"])
    got = int(dsmem_stream(variant=variant, cluster=cluster, smem=smem, passes=passes,
                           block=block, clusters=clusters)[0])
    want = dsmem_stream_reference(variant, smem=smem, passes=passes, blocks=cluster * clusters)
    if got != want:
        raise RuntimeError(f"dsmem_bandwidth: {variant} with cluster={cluster} summed {got}, "
                           f"not {want}")
    return {"clusters": clusters, "blocks": cluster * clusters, "smem": smem,
            "ms": res.median_ms, "GB/s": res.gbps}


def dsmem_bandwidth(sizes: Sequence[int] | None = None, *,
                    variants: Sequence[str] = STREAM_VARIANTS, smem: int | None = None,
                    passes: int = 64, block: int = 512, repeat: int = 10,
                    progress: bool = False) -> Table:
    """GB/s of distributed shared memory by cluster size: :func:`dsmem_stream` over a
    full wave of clusters (as many as can be resident at once).

    Parameters
    ----------
    sizes : sequence of int, optional
        Cluster sizes among 1, 2, 4, 8, 16.  Default :data:`CLUSTER_SIZES`, where a
        size the GPU refuses (16 where the non-portable size is not allowed) becomes a
        row saying "refused by this GPU"; a size given here that the GPU refuses is a
        ValueError.
    variants : sequence of {"read", "write", "local"}
    smem, passes, block
        As :func:`dsmem_stream`.
    repeat : int
        Timed launches per point (median; two warm-up launches first).

    Returns
    -------
    Table: cluster, variant, clusters, blocks, smem, ms, GB/s (every byte read or
    written over the kernel's time, CUDA events), note.
    """
    fn = "dsmem_bandwidth"
    given = sizes is not None
    sizes = _ints(fn, "sizes", CLUSTER_SIZES if sizes is None else sizes, min(CLUSTER_SIZES),
                  max(CLUSTER_SIZES))
    for s in sizes:
        if s not in CLUSTER_SIZES:
            raise ValueError(f"{fn}: sizes: {s} is not a cluster size; allowed: "
                             + ", ".join(map(str, CLUSTER_SIZES)))
    variants = _each(fn, "variants", variants, "dsmem_stream", "variant")
    smem = None if smem is None else _checked(fn, "dsmem_stream", "smem", smem)
    passes = _checked(fn, "dsmem_stream", "passes", passes)
    block = _checked(fn, "dsmem_stream", "block", block)
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    _require(fn)
    cases = [(s, v) for s in sizes for v in variants]
    rows = []
    for s, v in _progress(cases, len(cases), fn, progress):
        row: dict[str, Any] = {"cluster": s, "variant": v, "clusters": None, "blocks": None,
                               "smem": None, "ms": None, "GB/s": None, "note": ""}
        try:
            row.update(_stream_point(v, s, smem, passes, block, repeat))
        except ValueError as e:
            if given or _REFUSED not in str(e):
                raise
            row["note"] = _REFUSED
        rows.append(row)
    per = "half an SM's shared memory" if smem is None else f"{smem} bytes"
    return Table(rows, ["cluster", "variant", "clusters", "blocks", "smem", "ms", "GB/s",
                        "note"],
                 sources={"ms": "measured", "GB/s": "measured"},
                 title=f"distributed shared memory by cluster size: {per} per block, "
                       f"{passes} passes, 16-byte accesses")


def histogram_sweep(bins: Sequence[int] = HISTOGRAM_BINS, *, n: int = 1 << 24,
                    variants: Sequence[str] = HISTOGRAM_VARIANTS, repeat: int = 10,
                    seed: int = 0, progress: bool = False) -> Table:
    """:func:`cluster_histogram`'s variants by bin count, on ``n`` uniform random values
    below the bin count (fresh each bin count, from ``seed``).

    Each point is the median of ``repeat`` timed launches; every variant's counts
    are checked against :func:`cluster_histogram_reference` once (RuntimeError if
    they differ).  ``block`` where the bins do not fit one block's shared memory is
    a row with a note, not an error.

    Returns
    -------
    Table: bins, variant, cluster, ms, Gvalues/s, note.
    """
    fn = "histogram_sweep"
    bins = _each(fn, "bins", bins, "cluster_histogram")
    n = _int(fn, "n", n, 1, (1 << 32) - 1)
    variants = _each(fn, "variants", variants, "cluster_histogram", "variant")
    repeat = _repeat(fn, repeat)
    seed = _int(fn, "seed", seed, 0)
    progress = _flag(fn, "progress", progress)
    _require(fn)
    rng = np.random.default_rng(seed)
    rows = []
    for b in _progress(bins, len(bins), fn, progress):
        host = rng.integers(0, b, size=n, dtype=np.uint32)
        want = cluster_histogram_reference(host, b)
        x = runtime.to_device(host)
        for v in variants:
            row: dict[str, Any] = {"bins": b, "variant": v, "cluster": None, "ms": None,
                                   "Gvalues/s": None, "note": ""}
            try:
                got = cluster_histogram(x, b, variant=v)
            except ValueError as e:
                if v != "block" or "fit one block" not in str(e):
                    raise
                row["note"] = "the bins do not fit one block's shared memory"
                rows.append(row)
                continue
            if not np.array_equal(got.get(), want):
                raise RuntimeError(f"{fn}: variant {v!r} with bins={b} counted wrong")
            res = runtime.bench(cluster_histogram, x, b, variant=v, repeat=repeat, warmup=2)
            row.update({"cluster": int(res.params["cluster"]), "ms": res.median_ms,
                        "Gvalues/s": n / (res.median_ms * 1e-3) / 1e9})
            rows.append(row)
        del x
    return Table(rows, ["bins", "variant", "cluster", "ms", "Gvalues/s", "note"],
                 sources={"ms": "measured", "Gvalues/s": "measured"},
                 title=f"histogram of {n} uniform uint32 values: bins in a cluster's shared "
                       "memories, in each block's, or in global memory")


def pipeline_sweep(sizes: Sequence[int] = PIPELINE_SIZES, *, block: int = 256,
                   repeat: int = 10, progress: bool = False) -> Table:
    """:func:`dsmem_pipeline`'s two hand-offs by size: GB/s of ``x`` read and the result
    written (8 bytes per element), median of ``repeat`` launches after two warm-ups;
    every result compared with :func:`dsmem_pipeline_reference` first (RuntimeError if
    it differs).

    Returns
    -------
    Table: n, variant, clusters, ms, GB/s, and global / dsmem (the time ratio).
    """
    fn = "pipeline_sweep"
    sizes = _ints(fn, "sizes", sizes, 1, 1 << 30)
    block = _checked(fn, "dsmem_pipeline", "block", block)
    repeat = _repeat(fn, repeat)
    progress = _flag(fn, "progress", progress)
    _require(fn)
    rng = np.random.default_rng(0)
    rows = []
    for n in _progress(sizes, len(sizes), fn, progress):
        host = rng.standard_normal(n, dtype=np.float32)
        x, out = runtime.to_device(host), runtime.empty((n,))
        want = dsmem_pipeline_reference(host)
        ms = {}
        for v in PIPELINE_VARIANTS:
            if not np.array_equal(dsmem_pipeline(x, variant=v, block=block, out=out).get(), want):
                raise RuntimeError(f"{fn}: variant {v!r} with n={n} computed wrong")
            res = runtime.bench(dsmem_pipeline, x, variant=v, block=block, out=out,
                                repeat=repeat, warmup=2)
            ms[v] = res.median_ms
            rows.append({"n": n, "variant": v, "clusters": int(res.params["clusters"]),
                         "ms": res.median_ms, "GB/s": res.gbps, "global / dsmem": None})
        for r in rows[-len(PIPELINE_VARIANTS):]:      # the ratio on both rows of this n
            r["global / dsmem"] = ms["global"] / ms["dsmem"]
        del x, out
    return Table(rows, ["n", "variant", "clusters", "ms", "GB/s", "global / dsmem"],
                 sources={"ms": "measured", "GB/s": "measured", "global / dsmem": "measured"},
                 title="producer -> consumer in clusters of two: each tile through the "
                       "consumer's shared memory against through global memory")


# ---- gpumem report: the headline and the full sweeps ----------------------------------------
_MODEL_TEXT = "not modelled: the SM-to-SM network's latency and bandwidth are measured"


def _chase_cycles(variant: str, steps: int) -> float:
    """Cycles per load of one :func:`dsmem_chase` of 1024 nodes (the headline's)."""
    return float(dsmem_chase(variant=variant, steps=steps)[1]) / steps


def _stream_gbps(quick: bool) -> float:
    """GB/s of :func:`dsmem_stream` reads in clusters of 2, a full wave (the headline's)."""
    return hl._bench(dsmem_stream, quick=quick, variant="read", cluster=2).gbps


def _histogram_ms(x: DeviceArray, bins: int, variant: str, quick: bool) -> float:
    """Median ms of :func:`cluster_histogram` (the headline's)."""
    return hl._bench(cluster_histogram, x, bins, variant=variant, quick=quick).median_ms


def _headline(measure: bool, quick: bool) -> list[dict]:
    what = "a dependent load from another block's shared memory (DSMEM) vs its own"
    bwhat = "DSMEM read bandwidth, clusters of 2, against a device copy"
    hbins = 1 << 16
    hwhat = ("histogram of 2^16 bins (256 KiB of counts): bins in a cluster's shared memories "
             "vs global atomics (and owner: the values re-read instead of DSMEM atomics)")
    needs = f"needs compute capability {CC_NEEDED[0]}.{CC_NEEDED[1]} (thread block clusters)"
    take = ("another block's shared memory is a few times farther than your own, still closer "
            "than L2")
    btake = "the SM-to-SM network moves DSMEM bytes at a multiple of device memory's rate"
    htake = ("bins spread over a cluster keep the atomics on chip where one block could not "
             "hold them")
    hmod = {"bins": float(hbins), "bytes_of_counts": 4.0 * hbins}
    rows_no = [hl._unmeasured("clusters", what, f"cycles per load, local and remote ({needs})",
                              model_text=_MODEL_TEXT, takeaway=take),
               hl._unmeasured("clusters", bwhat, f"GB/s ({needs})", model_text=_MODEL_TEXT,
                              takeaway=btake),
               hl._unmeasured("clusters", hwhat, f"ms of each ({needs})", model=hmod,
                              model_text="4 * bins bytes of counts: more than one block's "
                                         "shared memory", takeaway=htake)]
    if not measure:
        return rows_no
    cc = tuple(runtime.device().compute_capability)
    if not cluster_capable(cc):
        for r in rows_no:
            r["measured_text"] = f"{needs}; this GPU has {cc[0]}.{cc[1]}"
        return rows_no
    steps = 1024 if quick else 4096
    lat = {v: _chase_cycles(v, steps) for v in ("local", "remote")}
    meas = {f"{v}_cycles": c for v, c in lat.items()}
    meas["remote_over_local"] = lat["remote"] / lat["local"]
    gbps = _stream_gbps(quick)
    n = 1 << 24
    dst, src = runtime.empty((n,)), runtime.to_device(np.zeros(n, np.float32))
    copy = device_copy(dst, src, repeat=5 if quick else 20, warmup=2)
    bmeas = {"read_GB/s": gbps, "device_copy_GB/s": copy["GB/s"],
             "read_over_copy": gbps / copy["GB/s"]}
    x = runtime.to_device(hl._rng().integers(0, hbins, size=n, dtype=np.uint32))
    ms = {v: _histogram_ms(x, hbins, v, quick) for v in ("cluster", "global", "owner")}
    hmeas = {f"{v}_ms": m for v, m in ms.items()}
    hmeas["global_over_cluster"] = ms["global"] / ms["cluster"]
    hmeas["global_over_owner"] = ms["global"] / ms["owner"]
    return [hl._row("clusters", what, measured=meas, model_text=_MODEL_TEXT,
                    measured_text=f"local {lat['local']:.0f}, remote {lat['remote']:.0f} cycles",
                    takeaway=take),
            hl._row("clusters", bwhat, measured=bmeas, model_text=_MODEL_TEXT,
                    measured_text=f"{hl._gbps(gbps)} ({bmeas['read_over_copy']:.2f}x the "
                                  f"device copy's {hl._gbps(copy['GB/s'])})", takeaway=btake),
            hl._row("clusters", hwhat, measured=hmeas, model=hmod,
                    model_text="4 * bins bytes of counts: more than one block's shared memory",
                    measured_text=f"cluster {ms['cluster']:.3f} ms, global {ms['global']:.3f} ms "
                                  f"(owner {ms['owner']:.3f})",
                    takeaway=htake)]


def _card(measure: bool, quick: bool) -> list[dict]:
    """Distributed shared memory on the memory card: a dependent load from the next
    cluster rank's shared memory (cycles; ns at the SMs' peak clock) and DSMEM reads in
    clusters of 2 (GB/s), the headline's own measurements.  No published figure is known
    to gpumem for either; a GPU below compute capability 9.0 gets the row, unmeasured,
    saying so."""
    kw: dict[str, Any] = {}
    how = ("dsmem_chase remote (1024 links, cycles per load; ns at the peak clock) and "
           "dsmem_stream read, clusters of 2 (GB/s)")
    if measure:
        info = runtime.device()
        if cluster_capable(tuple(info.compute_capability)):
            cycles = _chase_cycles("remote", 1024 if quick else 4096)
            kw = {"cycles": cycles, "gbps": _stream_gbps(quick),
                  "ns": cycles / (info.clock_khz / 1e6) if info.clock_khz else None}
        else:
            how = (f"needs compute capability {CC_NEEDED[0]}.{CC_NEEDED[1]}; this GPU has "
                   f"{info.compute_capability[0]}.{info.compute_capability[1]}")
    return [card.card_row("distributed shared", "clusters",
                          size_text_="the cluster's blocks' shared memory", how=how, **kw)]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    cc = tuple(runtime.device().compute_capability) if measure else None
    if cc is None or not cluster_capable(cc):
        why = "no GPU" if cc is None else f"this GPU has compute capability {cc[0]}.{cc[1]}"
        rows = [{"experiment": "dsmem_latency", "what": "cycles per load: own shared memory "
                 "against another block's"},
                {"experiment": "dsmem_bandwidth", "what": "GB/s by cluster size 1..16"},
                {"experiment": "histogram_sweep", "what": "cluster / block / global / owner "
                 "histograms by bin count"},
                {"experiment": "pipeline_sweep", "what": "producer -> consumer through DSMEM "
                 "against through global memory"}]
        return [Table(rows, title=f"clusters ({why}: every experiment measures, on a GPU of "
                                  "compute capability 9.0 or newer)")]
    return [dsmem_latency(), dsmem_bandwidth(passes=16 if quick else 64, progress=progress),
            histogram_sweep(HISTOGRAM_BINS[::2] if quick else HISTOGRAM_BINS,
                            n=(1 << 22) if quick else (1 << 24), progress=progress),
            pipeline_sweep(PIPELINE_SIZES[::2] if quick else PIPELINE_SIZES, progress=progress)]


# ---- compute-sanitizer: every variant once, on small awkward sizes -------------------------
def _sanitize() -> None:
    """Every variant of every family of this lesson, once, on small awkward sizes."""
    if not cluster_capable(tuple(runtime.device().compute_capability)):
        return
    rng = np.random.default_rng(0)
    for v in CHASE_VARIANTS:
        dsmem_chase(37, variant=v, cluster=2, steps=101)
    for v in STREAM_VARIANTS:
        dsmem_stream(variant=v, cluster=2, smem=16 * 37, passes=2, block=96, clusters=3)
    x = rng.integers(0, 5003, size=10007, dtype=np.uint32)
    for v in HISTOGRAM_VARIANTS:
        cluster_histogram(x, 4999, variant=v, block=96)
    for v in ("cluster", "owner"):
        cluster_histogram(x, 4999, variant=v, cluster=4, block=64, clusters=2)
    y = rng.standard_normal(10007).astype(np.float32)
    for v in PIPELINE_VARIANTS:
        dsmem_pipeline(y, variant=v, block=96)
        dsmem_pipeline(y, variant=v, block=64, clusters=3)


# ---- what the shared tests read: a fake GPU's measurements, argument strategies ----------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): a local load 30 cycles, a remote
    one 200; DSMEM at 6,000 GB/s; the cluster's histogram 4x faster than global atomics."""
    return {"device_copy": gpu.device_copy,
            "_chase_cycles": lambda v, steps: {"local": 30.0}.get(v, 200.0),
            "_stream_gbps": lambda quick: 6000.0,
            "_histogram_ms": lambda x, bins, v, quick: {"cluster": 0.1}.get(v, 0.4)}


def _arguments(st) -> dict:
    """cluster_histogram counts uint32 values (:attr:`Lesson.arguments`)."""
    return {"cluster_histogram": st.integers(1, 4096).map(
        lambda n: {"x": np.ones(n, np.uint32)})}


LESSON = Lesson(
    name="clusters",
    idea="distributed shared memory (compute capability 9.0+): a load from another block's "
         "shared memory, DSMEM bandwidth by cluster size, a histogram spread over a cluster, "
         "producer -> consumer through DSMEM",
    families=("dsmem_chase", "dsmem_stream", "cluster_histogram", "dsmem_pipeline"),
    exports=("dsmem_chase", "dsmem_stream", "cluster_histogram", "dsmem_pipeline"),
    sweeps=("dsmem_latency", "dsmem_bandwidth", "histogram_sweep", "pipeline_sweep"),
    notebooks=("13_clusters",),
    benchmark="clusters",
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=(),
    card=_card,
    stand_ins=_stand_ins,
    arguments=_arguments,
)
