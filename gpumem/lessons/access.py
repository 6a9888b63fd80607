"""Global-memory access: aligned vs misaligned reads and writes, load paths,
unrolling, idle lanes, and the streaming ceiling of a plain copy.

Every function takes float32 NumPy arrays (and returns NumPy arrays) or
:class:`gpumem.DeviceArray` (and returns DeviceArray, with no host copies).
Each launch is timed and leaves a :class:`gpumem.LaunchRecord` whose
``params`` are the names :func:`gpumem.model.predict` takes; ``bytes`` are the
*useful* bytes (what the threads ask for), so GB/s from :func:`gpumem.bench`
is the effective bandwidth.  Bad arguments raise ``TypeError`` or
``ValueError`` naming the argument before anything touches the GPU.

The sweeps (:func:`offset_sweep`, :func:`cache_path_compare`,
:func:`idle_lanes_sweep`) return a :class:`gpumem.Table` of time, bandwidth
and efficiency columns, measured where the counters can be read and from
:mod:`gpumem.model` otherwise (see :mod:`gpumem.experiments`).

>>> from gpumem import access
>>> t = access.offset_sweep(range(0, 129), kind="read")
>>> t.plot(x="offset", y="gld_efficiency")
"""
from __future__ import annotations

import itertools
import math
from typing import Iterable, Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..runtime.args import _checked, _given, _indices
from ..tools.sweep import (MAX_N, _choices, _common, _each, _empty, _int, _ints, _Point,
                           _random_device, _run, _str)
from ..runtime.table import Table
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools import headline as hl

__all__ = ["vec_add", "read_offset", "write_offset", "copy", "CACHE_PATHS", "offset_sweep",
           "cache_path_compare", "idle_lanes_sweep"]

Array = Union[np.ndarray, DeviceArray]

#: The load paths of :func:`read_offset` (``_core.CACHE_PATHS``, in that order)
#: and what each becomes on sm_90.
CACHE_PATHS = {
    "default": "ld.global (LDG.E): cached in L1 and L2",
    "ca": "ld.global.ca (LDG.E.STRONG.SM): cache at all levels",
    "cg": "ld.global.cg (LDG.E.STRONG.GPU): L2 only, bypasses L1",
    "ldg": "ld.global.nc via __ldg (LDG.E.CONSTANT): the read-only path",
    "cs": "ld.global.cs (LDG.E.EF): streaming, evict first",
}


def vec_add(a: Array, b: Array, *, block: int = 256, out: DeviceArray | None = None):
    """``a + b`` elementwise, float32, one element per thread.

    Parameters
    ----------
    a, b : numpy.ndarray or DeviceArray, float32, same shape
        Non-contiguous ndarrays are copied to a contiguous buffer first.
    block : int
        Threads per block, 1..1024 (grid: ``ceil(n / block)`` blocks).
    out : DeviceArray, optional
        Where to write the result (same shape, float32).

    Returns
    -------
    numpy.ndarray when every input is an ndarray, else DeviceArray (``out`` if given).
    """
    _given("vec_add", a=a, b=b)
    return _core.vec_add(a, b, **_indices("vec_add", block=block), out=out)


def read_offset(a: Array, b: Array, *, offset: int = 0, unroll: Literal[1, 4] = 1,
                block: int = 512, cache: str = "default", out: DeviceArray | None = None):
    """Misaligned reads: ``C[i] = a[i + offset] + b[i + offset]`` for ``i + offset < n``.

    The loads start ``offset`` floats into ``a`` and ``b``; unless ``offset`` is
    a multiple of 8 floats (32 bytes) every warp's 128 bytes straddle one more
    32-byte sector (offset 11: 5 sectors for 4 sectors' worth, 80% load
    efficiency).  The stores to ``C`` stay aligned.

    Parameters
    ----------
    a, b : numpy.ndarray or DeviceArray, float32, 1-D, same length n
    offset : int
        0..n.  Threads with ``i + offset >= n`` do nothing.
    unroll : {1, 4}
        Elements per thread.  1: grid ``ceil(n / block)``, one element per
        thread.  4: grid ``ceil(n / (4 * block))``, thread t of block b handles
        ``i = 4*b*block + t + j*block`` for j = 0..3, issuing all eight loads
        before its four stores (each element guarded on its own).
    block : int
        Threads per block, 1..1024 (a non-multiple of 32 leaves idle lanes in
        the last warp of every block).
    cache : {"default", "ca", "cg", "ldg", "cs"}
        The load path of the reads of ``a`` and ``b`` (see :data:`CACHE_PATHS`):
        default ``ld.global``; ``"ca"`` L1 and L2; ``"cg"`` L2 only; ``"ldg"``
        the read-only path (``__ldg``); ``"cs"`` streaming.
    out : DeviceArray, optional
        float32, length n, not overlapping ``a`` or ``b``.  ``out[:n - offset]``
        is written; ``out[n - offset:]`` is left exactly as it was.

    Returns
    -------
    numpy.ndarray of length ``n - offset`` (the written elements,
    ``(a + b)[offset:]``) when ``a`` and ``b`` are ndarrays and ``out`` is not
    given; else a length-n DeviceArray (``out`` if given; a new one has NaN in
    its ``offset`` unwritten elements).
    """
    _given("read_offset", a=a, b=b)
    return _core.read_offset(a, b, **_indices("read_offset", offset=offset, unroll=unroll, block=block),
                             cache=cache, out=out)


def write_offset(a: Array, b: Array, *, offset: int = 0, unroll: Literal[1, 4] = 1,
                 block: int = 512, out: DeviceArray | None = None):
    """Misaligned writes: ``C[i + offset] = a[i] + b[i]`` for ``i + offset < n``.

    Loads aligned, stores shifted by ``offset`` floats: stores skip L1 and
    reach L2 in 32-byte sectors, so offset 11 costs 5 sectors per warp for 4
    sectors' worth of data (80% store efficiency).

    Parameters
    ----------
    a, b : numpy.ndarray or DeviceArray, float32, 1-D, same length n
    offset : int
        0..n.
    unroll : {1, 4}
        As in :func:`read_offset`: four elements per thread one block apart,
        all loads before the stores, every element guarded by
        ``i + j*block + offset < n``.
    block : int
        Threads per block, 1..1024.
    out : DeviceArray, optional
        float32, length n, not overlapping ``a`` or ``b``.  ``out[offset:]`` is
        written; ``out[:offset]`` is left exactly as it was.

    Returns
    -------
    numpy.ndarray of length ``n - offset`` (the written elements
    ``C[offset:]``, equal to ``(a + b)[:n - offset]``) for ndarray inputs
    without ``out``; else a length-n DeviceArray (``out`` if given; a new one
    has NaN in its ``offset`` unwritten elements).
    """
    _given("write_offset", a=a, b=b)
    return _core.write_offset(a, b, **_indices("write_offset", offset=offset, unroll=unroll,
                                                   block=block), out=out)


def copy(a: Array, *, variant: Literal["float", "float4"] = "float4", block: int = 256,
         out: DeviceArray | None = None):
    """Device-to-device copy by a kernel: the streaming ceiling.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, any shape (copied as flat n floats)
    variant : {"float4", "float"}
        ``"float"``: one 4-byte load and store per thread.  ``"float4"``: one
        16-byte vector per thread for the first ``4 * (n // 4)`` floats, then
        one scalar per thread for the ``n % 4`` left.
    block : int
        Threads per block, 1..1024.
    out : DeviceArray, optional
        float32, same shape, not overlapping ``a``.

    Returns
    -------
    Same shape as ``a``: ndarray for an ndarray input, else DeviceArray.
    """
    _given("copy", a=a)
    return _core.copy(a, variant=variant, **_indices("copy", block=block), out=out)


# ---- sweeps ----------------------------------------------------------------------
_KINDS = {"read": "read_offset", "write": "write_offset"}   # sweep kind -> kernel family


def _offset_buffers(n: int):
    """Buffers of an offset sweep: a, b and the result, n floats each."""
    def buffers():
        rng = np.random.default_rng(0)
        return {"a": _random_device(rng, n), "b": _random_device(rng, n), "c": _empty((n,))}
    return buffers


def _offset_launch(family: str, call: dict):
    """A point's launch: read_offset or write_offset (looked up when it runs) on the buffers."""
    def launch(bufs):
        fn = {"read_offset": read_offset, "write_offset": write_offset}[family]
        return fn, (bufs["a"], bufs["b"]), dict(call, out=bufs["c"])
    return launch


def offset_sweep(offsets: Iterable[int] = range(0, 129), kind: str | Sequence[str] = "read",
                 cache: str | Sequence[str] = "default", unroll: int | Sequence[int] = 1,
                 block: int = 512, n: int = 2**24, repeat: int = 20, progress: bool = True,
                 metrics: Sequence[str] | None = None) -> Table:
    """Time, bandwidth and efficiency of misaligned reads or writes against the offset.

    Parameters
    ----------
    offsets : iterable of int
        Offsets in floats, each 0..n.
    kind : {"read", "write"} or a sequence of them
        :func:`read_offset` (misaligned loads) or :func:`write_offset`
        (misaligned stores).
    cache : str or sequence of str
        Load path(s) of the reads, keys of :data:`CACHE_PATHS` (only
        "default" for writes, whose loads are plain).
    unroll : {1, 4} or a sequence of them
    block : int
        Threads per block, 1..1024.
    n : int
        Floats per array (three arrays: a, b and the result).
    repeat : int
        Timed launches per row (median reported).
    progress : bool
        Show a tqdm progress bar.
    metrics : sequence of str, optional
        Counter names (default :data:`gpumem.experiments.METRICS`).

    Returns
    -------
    Table with columns kernel, unroll, cache, offset, ms, GB/s (useful bytes
    ``12 * (n - offset)``) and the metrics; one row per combination.
    """
    return _offset_sweep("offset_sweep", offsets, kind, cache, unroll, block, n, repeat, progress,
                         metrics)


def _offset_sweep(fn: str, offsets, kind, cache, unroll, block, n, repeat, progress,
                  metrics, cache_name: str = "cache") -> Table:
    """:func:`offset_sweep` for ``fn``, the function the user called, whose argument
    ``cache_name`` is the sweep's ``cache`` (errors name both)."""
    kinds = _choices(fn, "kind", kind, tuple(_KINDS))
    caches = _each(fn, cache_name, cache, "read_offset", "cache")
    families = [_KINDS[k] for k in kinds]          # each value by the rules of every kernel
    unrolls = [_each(fn, "unroll", unroll, f) for f in families][0]
    n = _int(fn, "n", n, 1, MAX_N)
    block = [_checked(fn, f, "block", block) for f in families][0]
    offs = _ints(fn, "offsets", offsets, 0, n)
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)
    if kinds == ["write"] and caches != ["default"]:
        raise ValueError(f"{fn}: cache={cache!r} applies to kind='read' only; write_offset's "
                         "loads are plain")
    points = []
    combos = [(k, u, c, off) for k in kinds
              for u, c, off in itertools.product(unrolls, caches if k == "read" else [None], offs)]
    for k, u, c, off in combos:
        family = _KINDS[k]
        params = {"n": n, "offset": off, "block": block}
        if k == "read":
            params["cache"] = c
        call = dict(offset=off, unroll=u, block=block, **({"cache": c} if k == "read" else {}))
        points.append(_Point({"kernel": family, "unroll": u, "cache": c, "offset": off},
                             family, f"unroll{u}", params, _offset_launch(family, call)))
    title = f"offset sweep: {', '.join(kinds)}, n={n}, block={block}"
    return _run(points, _offset_buffers(n), metrics, repeat, progress, title,
                ["kernel", "unroll", "cache", "offset"])


def cache_path_compare(caches: Sequence[str] = _core.CACHE_PATHS,
                       offsets: Iterable[int] = (0, 1, 11, 32, 128),
                       unroll: int | Sequence[int] = 1, block: int = 512, n: int = 2**24,
                       repeat: int = 20, progress: bool = True,
                       metrics: Sequence[str] | None = None) -> Table:
    """The load paths of :func:`read_offset` (:data:`CACHE_PATHS`) side by side at a few offsets.

    "default" (ld.global), "ca" (L1 and L2), "cg" (L2 only), "ldg" (the
    read-only path) and "cs" (streaming) touch the same sectors; what moves is
    the time.  Same columns as :func:`offset_sweep`, one row per cache x offset.
    """
    return _offset_sweep("cache_path_compare", offsets, "read", caches, unroll, block, n, repeat,
                         progress, metrics, cache_name="caches")


def idle_lanes_sweep(blocks: Iterable[int] = (32, 48, 64, 96, 100, 128, 256, 384, 512, 768, 1024),
                     kind: str = "read", offset: int = 0, unroll: int = 1,
                     cache: str = "default", n: int = 2**24, repeat: int = 20,
                     progress: bool = True, metrics: Sequence[str] | None = None) -> Table:
    """:func:`read_offset` / :func:`write_offset` against the block size: idle lanes.

    A block that is no multiple of 32 leaves ``idle_lanes`` lanes of its last
    warp idle: the requests stay, the useful bytes per request fall.  (For the
    time and occupancy of any kernel against its block size see
    :func:`gpumem.block_size_sweep`.)

    Returns
    -------
    Table with columns block, warps_per_block, idle_lanes, grid, ms, GB/s and the metrics.
    """
    fn = "idle_lanes_sweep"
    (kind,) = _choices(fn, "kind", _str(fn, "kind", kind), tuple(_KINDS))
    family = _KINDS[kind]
    n = _int(fn, "n", n, 1, MAX_N)
    offset = _int(fn, "offset", offset, 0, n)
    unroll = _checked(fn, family, "unroll", unroll)
    cache = _checked(fn, "read_offset", "cache", cache)
    if kind == "write" and cache != "default":
        raise ValueError(f"{fn}: cache={cache!r} applies to kind='read' only")
    bs = _each(fn, "blocks", blocks, family, "block")
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)
    points = []
    for b in bs:
        params = {"n": n, "offset": offset, "block": b}
        call = {"offset": offset, "unroll": unroll, "block": b}
        if kind == "read":
            params["cache"] = call["cache"] = cache
        warps = math.ceil(b / 32)
        points.append(_Point({"block": b, "warps_per_block": warps, "idle_lanes": 32 * warps - b,
                              "grid": math.ceil(n / (unroll * b))},
                             family, f"unroll{unroll}", params, _offset_launch(family, call)))
    title = f"idle lanes sweep: {family} unroll{unroll}, offset={offset}, n={n}"
    return _run(points, _offset_buffers(n), metrics, repeat, progress, title,
                ["block", "warps_per_block", "idle_lanes", "grid"])


# ---- gpumem report: the headline and the full sweeps ------------------------------------
def _headline(measure: bool, quick: bool) -> list[dict]:
    n, block, offsets = (2**22 if quick else 2**24), 512, (0, 11)
    preds = {o: hl._predict("read_offset", "unroll1", n=n, offset=o, block=block) for o in offsets}
    mod = {f"offset{o}_gld_efficiency": preds[o]["gld_efficiency"] for o in offsets}
    mod.update({f"offset{o}_gld_transactions_per_request": preds[o]["gld_transactions_per_request"]
                for o in offsets})
    mtext = (f"gld efficiency {hl._pct(preds[0]['gld_efficiency'])} at offset 0, "
             f"{hl._pct(preds[11]['gld_efficiency'])} at offset 11 (5 sectors per warp for 4 "
             "sectors' worth)")
    what = f"read_offset, offset 0 vs 11 (n = {hl._pow2(n)}, block {block})"
    take = "a warp's 128 bytes off the 32-byte sector grid cost one sector more"
    if not measure:
        return [hl._unmeasured("access", what, "GB/s at both offsets and the gld_efficiency "
                            "counter (gpumem.profile)", model=mod, model_text=mtext,
                            takeaway=take)]
    rng = hl._rng()
    a = runtime.to_device(rng.standard_normal(n, dtype=np.float32))
    b = runtime.to_device(rng.standard_normal(n, dtype=np.float32))
    out = runtime.empty((n,))
    res, got = hl._timed({o: (read_offset, (a, b), {"offset": o, "block": block, "out": out})
                       for o in offsets}, "gld_efficiency", quick)
    meas = {f"offset{o}_GB/s": r.gbps for o, r in res.items()}
    text = ", ".join(f"offset {o}: {hl._gbps(r.gbps)}" for o, r in res.items())
    if got is not None:
        meas.update({f"offset{o}_gld_efficiency": g for o, g in got.items()})
        text += (f"; offset 11: gld efficiency {hl._pct(meas['offset11_gld_efficiency'])} measured"
                 f" / {hl._pct(preds[11]['gld_efficiency'])} model")
    ratio = res[11].gbps / res[0].gbps
    return [hl._row("access", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"{take}; here offset 11 runs at {ratio:.2f}x the aligned bandwidth "
                          "(L1 and L2 absorb much of the extra sector)")]

def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    return [offset_sweep(range(0, 33) if quick else range(0, 129),
                                n=2**22 if quick else 2**24, repeat=5 if quick else 20,
                                progress=progress)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_vec_add():
    for block in (1, 100, 256, 1024):
        vec_add(_f32(1000), _f32(1000), block=block)


def _sanitize_read_offset():
    for v in runtime.variants("read_offset"):
        unroll = int(v.name.removeprefix("unroll"))
        for cache in _core.CACHE_PATHS:
            for offset, block in ((0, 512), (11, 100), (128, 33), (1001, 1), (1003, 1024)):
                read_offset(_f32(1003), _f32(1003), offset=offset, unroll=unroll, block=block,
                               cache=cache)


def _sanitize_write_offset():
    for v in runtime.variants("write_offset"):
        unroll = int(v.name.removeprefix("unroll"))
        for offset, block in ((0, 512), (11, 100), (128, 33), (1001, 1), (1003, 1024)):
            write_offset(_f32(1003), _f32(1003), offset=offset, unroll=unroll, block=block)


def _sanitize_copy():
    for v in runtime.variants("copy"):
        for n in (1, 3, 4, 1001, 1003):
            for block in (1, 100, 256):
                copy(_f32(n), variant=v.name, block=block)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_vec_add()
    _sanitize_read_offset()
    _sanitize_write_offset()
    _sanitize_copy()


# ---- what the shared tests read: a fake GPU's measurements, the model's largest launches ----
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): the float4 copy at the fake's
    streaming time, offset 11 a quarter slower than offset 0, with their counters."""
    return {"copy": gpu.kernel("copy", {"float4": gpu.COPY_MS},
                               counters={"float4": {"dram_read_bytes": 4.0 * 2**26}}),
            "read_offset": gpu.kernel("read_offset", {0: 1.0, 11: 1.25},
                                      select=lambda args, kw: kw.get("offset", 0),
                                      counters={0: {"gld_efficiency": 100.0},
                                                11: {"gld_efficiency": 80.0}})}


def _model_launches() -> dict:
    """Every variant at the largest launch gpumem accepts (2^31 - 1 blocks of 1024) and at
    n = 2^31 (:attr:`Lesson.model_launches`)."""
    from .. import model

    g = 2**31 - 1
    largest = [("vec_add", "default", dict(n=g * 1024, block=1024)),
               ("read_offset", "unroll1", dict(n=g * 1024, block=1024, offset=11)),
               ("read_offset", "unroll4", dict(n=g * 4096, block=1024, offset=g * 1000)),
               ("write_offset", "unroll1", dict(n=g * 1024, block=1024, offset=3)),
               ("write_offset", "unroll4", dict(n=g * 4000 - 5, block=1000, offset=33)),
               ("copy", "float", dict(n=g * 1024, block=1024)),
               ("copy", "float4", dict(n=4 * g * 1024 - 9, block=1024))]
    large = [(f, v, dict(n=2**31)) for f in LESSON.model for v in model.families()[f]]
    return {"largest": largest, "large": large, "copy_engine": [], "left_out": {}}



def _model_counters(cc) -> dict:
    """Launches for Nsight Compute's counters (:attr:`Lesson.model_counters`): every offset
    with both unrolls, every block size at a misaligned offset, the load paths at offsets 0
    and 11; copy (with tails of 1, 2 and 3 floats) and vec_add at every block size, the
    two sizes (2^20 and a prime) taking turns across the blocks -- each launch costs
    Nsight Compute a quarter of a second, and a size's sectors do not depend on the
    block."""
    from ..model.names import CACHE_PATHS as paths

    offsets = (0, 1, 2, 4, 8, 11, 16, 31, 32, 33, 64, 127, 128)
    blocks, ns = (32, 100, 256, 512, 1024), (1 << 20, 1_000_003)
    cases = []
    for fam in ("read_offset", "write_offset"):
        for x, off in enumerate(offsets):
            for unroll in (1, 4):
                cases.append((fam, f"unroll{unroll}", dict(n=ns[x % 2], offset=off,
                                                           block=blocks[(x + unroll) % 5])))
        cases += [(fam, f"unroll{unroll}", dict(n=ns[x % 2], offset=11, block=block))
                  for x, block in enumerate(blocks) for unroll in (1, 4)]
        if fam == "read_offset":                      # the load paths: same sectors
            cases += [(fam, "unroll1", dict(n=ns[1], offset=off, block=512, cache=cache))
                      for cache in paths for off in (0, 11)]
            cases.append((fam, "unroll4", dict(n=ns[1], offset=33, block=100, cache="cg")))
    cases += [("copy", v, dict(n=ns[(x + y) % 2], block=b))
              for y, v in enumerate(("float", "float4")) for x, b in enumerate(blocks)]
    cases += [("copy", "float4", dict(n=n, block=b))          # tails of 1, 2, 3 floats
              for n, b in ((1_000_001, 256), (1_000_002, 100), (37, 32), (3, 1024))]
    cases += [("vec_add", "default", dict(n=n, block=b)) for x, b in enumerate(blocks)
              for n in (ns[x % 2], 77)]
    return {"cases": cases, "helpers": (), "over": {}}

LESSON = Lesson(
    name='access',
    idea='coalescing: offsets, load paths, unrolling and idle lanes against sectors per request',
    families=('vec_add', 'read_offset', 'write_offset', 'copy'),
    exports=('vec_add', 'copy', 'read_offset', 'write_offset'),
    sweeps=('offset_sweep', 'cache_path_compare', 'idle_lanes_sweep'),
    notebooks=('02_access',),
    benchmark='access',
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=('vec_add', 'read_offset', 'write_offset', 'copy'),
    stand_ins=_stand_ins,
    model_launches=_model_launches,
    model_counters=_model_counters,
)
