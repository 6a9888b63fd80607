"""Asynchronous copies into shared memory: four ways to fill a tile.

A tiled kernel spends its load side getting a tile from global into shared
memory.  The lesson moves the same 32 x 32 float tiles four ways, in a
streaming tiled copy (:func:`tile_copy`, ``out = a``) and a tiled transpose
(:func:`tile_transpose`, ``out = a.T``), every block keeping a ring of up to 4
tile buffers so that later tiles load while it stores earlier ones:

* ``ldg_sts`` -- every thread loads into registers (LDG) and stores into
  shared memory (STS): the data passes through the register file and each
  thread waits for its loads before it can store them.
* ``cp_async4`` / ``cp_async16`` -- ``cp.async`` (compute capability 8.0+,
  SASS LDGSTS): global to shared without registers, 4 or 16 bytes per
  instruction, tracked with commit/wait groups (``cp_async16`` needs rows of
  whole 16-byte chunks: N a multiple of 4).
* ``bulk`` -- the bulk copy engine (TMA, compute capability 9.0+): one 1-D
  ``cp.async.bulk`` per tile row, completing on an mbarrier that was told how
  many bytes to expect (N a multiple of 4).
* ``tensor`` / ``tensor_swizzle128`` -- ``cp.async.bulk.tensor.2d`` with a
  ``CUtensorMap``: one thread issues the whole tile, the engine clips it at the
  matrix's edges (zero fill) and, with the 128-byte swizzle, stores 16-byte
  chunk ``j`` of tile row ``r`` at chunk ``j ^ (r % 8)``.

A tensor map's row stride must be a multiple of 16 bytes.  Rows of N floats
where N is not a multiple of 4 (8190: 32760 bytes) are viewed 2 or 4 at a time
(:func:`tensor_view`: 8190 floats -> rows of 16380, 65520 bytes), and a tile
is fetched as 2 or 4 boxes (even and odd rows); the rows past the last whole
group (at most 3) are loaded by the block's threads.  A box must start on the
16-byte grid of its view row, so the odd rows' box starts up to 3 words early and
their last words lie in the next tile's box -- for a block's last tile, in a
16-byte "tail" box loaded beside it.

Block order.  :func:`tile_transpose` numbers its blocks down the column of runs
first: the block after block ``b`` writes the 128 bytes of each out row just
after ``b``'s.

Whole sectors.  Where out's rows are off the 32-byte grid (M % 8 != 0, 8190
floats) a block's 32 columns of an out row would share a sector with the next
block's, and L2 reads a half-written sector back from DRAM when the second half
comes late (H100, 8190 x 8190: 0.53x the device copy numbered along the row,
0.69x down the column).  There the transpose's tiles hold the 8 rows below them
too (the "ext rows"), and the block writes columns ``r0 + s .. r0 + s + 31`` of
out row ``o``, ``s = (-o M) mod 8``: whole sectors, no DRAM read-back, at 1.25x
the reads from L2 (the ext rows are the next block's first rows, in L2 then).  A
warp's store is then 4 sectors of 4 out rows, its shared load one word per lane
(32 banks with the swizzle); a lane's offsets are the same in every tile of the
block: the source works them out once, and a tile away from a's edges stores
with one shared load and one global store per step and nothing else.  The
default run is 8 tiles there (2 elsewhere).

:func:`async_compare` puts the variants side by side with the device copy of
the same bytes, the compiler's registers per thread, the instructions issued
per tile and the shared-memory bank conflicts (the transpose's column of
16-byte chunks: 8-way without a swizzle, none with it).
"""
from __future__ import annotations

from typing import Any, Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..runtime.args import _checked, _flag, _given, _host, _index, arg_row
from ..runtime.measure import device_copy
from ..model import async_copy as _model_async
from ..runtime.table import Table
from ..tools import headline as hl
from ..tools.introspect import kernel_attributes
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools.sweep import (_choices, _counters_available, _each, _int, _model_predict, _progress,
                           _repeat, _str)

__all__ = ["VARIANTS", "FAMILIES", "CC_NEEDED", "TILE", "TRANSPOSE_TILES", "TRANSPOSE_TILES_EXT",
           "ASYNC_METRICS", "transpose_tiles", "variant_capable", "tensor_view", "tile_copy",
           "tile_copy_reference", "tile_transpose", "tile_transpose_reference", "registers",
           "async_compare"]

Array = Union[np.ndarray, DeviceArray]
Variant = Literal["ldg_sts", "cp_async4", "cp_async16", "bulk", "tensor", "tensor_swizzle128"]

#: The ways to fill a tile, from through-registers to the tensor copy.
VARIANTS = tuple(v[1] for v in _core.variants("tile_copy"))
#: The lesson's kernel families.
FAMILIES = ("tile_copy", "tile_transpose")
#: The compute capability each variant needs ((0, 0): any GPU gpumem runs on).
CC_NEEDED = {"ldg_sts": (0, 0), "cp_async4": (8, 0), "cp_async16": (8, 0), "bulk": (9, 0),
             "tensor": (9, 0), "tensor_swizzle128": (9, 0)}
#: Floats per tile side, tile buffers per block (at most), threads per block.
TILE, STAGES, THREADS = 32, 4, 256
#: Tiles per block: tile_copy's default (its C argument table's).
TILES_PER_BLOCK = arg_row("tile_copy", "tiles")["default"]
#: tile_transpose's default tiles per block: 2 (the H100's fastest at 8192 x 8192), 8
#: where M % 8 != 0 (the ext rows; the H100's fastest at 8190 x 8190).  The model holds
#: the defaults, checked against the launch records on the GPU.
TRANSPOSE_TILES = _model_async.TRANSPOSE_TILES
TRANSPOSE_TILES_EXT = _model_async.TRANSPOSE_TILES_EXT
#: The counters :func:`async_compare` reads (measured, and the model's beside them).
ASYNC_METRICS = ("smsp__inst_executed.sum", "gld_transactions", "gst_transactions",
                 "shared_load_transactions", "shared_load_bank_conflict")
_NEEDS_16 = ("cp_async16", "bulk")


def transpose_tiles(m: int) -> int:
    """:func:`tile_transpose`'s default tiles per block for an M x N ``a``:
    :data:`TRANSPOSE_TILES`, or :data:`TRANSPOSE_TILES_EXT` where M % 8 != 0."""
    return _model_async.transpose_tiles(_int("transpose_tiles", "m", m, 0, 65535 * TILE))


def variant_capable(variant: str, cc: Sequence[int]) -> bool:
    """Whether a GPU of compute capability ``cc`` (``(major, minor)``) runs ``variant``:
    ``cp_async*`` need 8.0, ``bulk`` and the tensor variants 9.0 (:data:`CC_NEEDED`)."""
    fn = "variant_capable"
    variant = _checked(fn, "tile_copy", "variant", variant)
    if isinstance(cc, (str, bytes)) or not hasattr(cc, "__len__") or len(cc) != 2:
        raise TypeError(f"{fn}: cc must be (major, minor), not {cc!r}")
    major, minor = (_int(fn, "cc", v, 0) for v in cc)
    return (major, minor) >= CC_NEEDED[variant]


def tensor_view(m: int, n: int) -> dict[str, int]:
    """How the tensor variants see an ``m x n`` float32 matrix.

    A ``CUtensorMap``'s row stride must be a multiple of 16 bytes, so rows are
    taken ``k`` at a time: ``k = 1`` when ``n % 4 == 0``, 2 when ``n`` is even, else 4.
    The map has ``view_rows = m // k`` rows of ``k * n`` floats (a stride of
    ``4 k n`` bytes), and a tile is ``k`` boxes of 32 columns by ``32 / k`` view rows,
    box ``j`` at view column ``j * n + c0``: tile rows ``j, j + k, ...``.  The last
    ``m - k * view_rows`` rows (``rest_rows``, at most 3) lie outside the view and are
    loaded by the block's threads.

    Returns
    -------
    dict: ``k``, ``view_rows``, ``view_cols`` (``k * n``), ``stride_bytes``, ``box``
    (``(32, 32 // k)``), ``rest_rows``.
    """
    m = _int("tensor_view", "m", m, 1)
    n = _int("tensor_view", "n", n, 1)
    k = 1 if n % 4 == 0 else 2 if n % 2 == 0 else 4
    return {"k": k, "view_rows": m // k, "view_cols": k * n, "stride_bytes": 4 * k * n,
            "box": (TILE, TILE // k), "rest_rows": m - k * (m // k)}


def tile_copy(a: Array, *, variant: Variant = "tensor_swizzle128", tiles: int = 8,
              out: DeviceArray | None = None):
    """``out = a`` through 32 x 32 tiles in shared memory, filled by ``variant``.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, 2-D (M x N)
        At most 65535 * 32 rows and 2**29 columns.
    variant : str
        How a tile gets into shared memory: ``"ldg_sts"`` (registers), ``"cp_async4"``,
        ``"cp_async16"`` (cp.async, compute capability 8.0+), ``"bulk"`` (1-D bulk
        copies, one per tile row), ``"tensor"`` or ``"tensor_swizzle128"`` (the tensor
        copy; these three need 9.0).  ``cp_async16`` and ``bulk`` move whole 16-byte
        chunks: N must be a multiple of 4 (ValueError naming ``a`` otherwise), and these
        two and the tensor variants need ``a``'s data 16-byte aligned (any array gpumem
        allocates is; ValueError naming ``a`` otherwise).  The other variants take any
        N.  Below a variant's compute capability: :class:`gpumem.CudaError` naming it.
    tiles : {1, 2, 4, 8, 16, 32, 64}
        Tiles per block, along a tile row (the block's ring holds 4 of them at a time:
        more tiles per block keep the ring full longer, fewer make shorter blocks).
    out : DeviceArray, optional
        float32, shape ``(M, N)``.

    Returns
    -------
    numpy.ndarray (M x N) when ``a`` is an ndarray, else DeviceArray (``out`` if given):
    equal to ``a`` bit for bit (:func:`tile_copy_reference`).
    """
    _given("tile_copy", a=a)
    return _core.tile_copy(a, variant=variant, tiles=_index("tile_copy", "tiles", tiles), out=out)


def tile_copy_reference(a: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`tile_copy`: a C-contiguous float32 copy of ``a``."""
    return np.array(_host("tile_copy_reference", "a", a, np.float32, ndim=2), order="C")


def tile_transpose(a: Array, *, variant: Variant = "tensor_swizzle128",
                   tiles: int | None = None,
                   out: DeviceArray | None = None):
    """``out = a.T`` through 32 x 32 tiles in shared memory, filled by ``variant``.

    The tile is filled as in :func:`tile_copy`; then warp ``w`` of the block reads
    16-byte chunk ``w`` (tile columns ``4w .. 4w+3``) of all 32 tile rows (lane ``l``:
    row ``l``, one float4) and stores four rows of ``out``, 32 consecutive floats each.
    Without a swizzle the 8 lanes of a quarter warp read the same 4 banks (tile rows
    are 128 bytes apart): 8 wavefronts where 1 would do; ``tensor_swizzle128`` spreads
    them over all 32 banks.  Where M % 8 != 0 the tile also holds the 8 rows below it
    and the block stores whole 32-byte sectors of ``out`` (see the module's "Whole
    sectors").

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, 2-D (M x N)
    variant : str
        As for :func:`tile_copy` (the same rules on N, alignment and GPUs).
    tiles : {1, 2, 4, 8, 16, 32, 64}, optional
        Tiles per block along a tile row, as for :func:`tile_copy`.  Default: 2
        (the fastest on the H100 at 8192 x 8192), or 8 where M % 8 != 0 (out's rows
        off the 32-byte grid: the tiles hold 8 rows more, and a longer run spreads
        each block's set-up; the fastest on the H100 at 8190 x 8190).  The blocks
        are numbered down the column of runs first: the block after block ``b``
        writes the 128 bytes of each out row just after ``b``'s.
    out : DeviceArray, optional
        float32, shape ``(N, M)``.

    Returns
    -------
    numpy.ndarray (N x M) when ``a`` is an ndarray, else DeviceArray (``out`` if given):
    :func:`tile_transpose_reference`.
    """
    _given("tile_transpose", a=a)
    return _core.tile_transpose(a, variant=variant,
                                tiles=None if tiles is None else
                                _index("tile_transpose", "tiles", tiles), out=out)


def tile_transpose_reference(a: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`tile_transpose`: ``a.T`` as a C-contiguous float32 copy."""
    return np.ascontiguousarray(_host("tile_transpose_reference", "a", a, np.float32,
                                      ndim=2).T)


def registers(family: str, variant: str) -> int:
    """Registers per thread the compiler gave ``family``'s kernel for ``variant``
    (``cudaFuncGetAttributes``; needs a GPU).  For tile_copy: the kernel with float4
    stores, which runs where N is a multiple of 4 (the other stores a float per lane)."""
    fn = "registers"
    (family,) = _choices(fn, "family", _str(fn, "family", family), FAMILIES)
    variant = _checked(fn, family, "variant", variant)
    return kernel_attributes(family, variant).registers_per_thread


# ---- the comparison -------------------------------------------------------------------------
def _bad_n(variant: str, n: int) -> bool:
    return variant in _NEEDS_16 and n % 4 != 0


def _counters(calls: list, metrics: Sequence[str]) -> list[dict] | None:
    """Each call's counters from one profile block (None where they cannot be read)."""
    if not (runtime.is_available() and _counters_available()):
        return None
    try:
        with runtime.profile(metrics=list(metrics)) as prof:
            for fn, args, kw in calls:
                fn(*args, **kw)
    except runtime.ProfilerError:
        return None
    return [dict(r.metrics or {}) for r in prof.records]


def async_compare(m: int = 8192, n: int = 8192, *, family: str = "tile_transpose",
                  variants: Sequence[str] | None = None, tiles: int | None = None,
                  repeat: int = 20,
                  progress: bool = True) -> Table:
    """Every variant of ``family`` on one M x N matrix, beside the device copy.

    Per variant: the kernel time (median of ``repeat`` timed launches after a warm-up),
    GB/s of the 8*M*N bytes moved, ``x copy`` (the device copy's time -- ``cudaMemcpy``
    device to device of the same M*N floats, timed in the same run -- over the
    variant's), ``registers`` per thread (``cudaFuncGetAttributes``), ``inst/tile``
    (warp instructions issued per 32 x 32 tile, ``smsp__inst_executed.sum``), and
    :data:`ASYNC_METRICS` -- measured where the profiler reads counters, the model's
    beside them (``<metric>_model``); without a GPU the model's alone.  A variant this
    GPU cannot run (compute capability) or this N does not allow (``cp_async16`` and
    ``bulk``: N a multiple of 4) is a row with a note.  ``tiles``: tiles per block
    (default: the family's, 8 for :func:`tile_copy`; for :func:`tile_transpose` 2, or
    8 where M % 8 != 0).
    """
    fn = "async_compare"
    m, n = _int(fn, "m", m, 1, 65535 * TILE), _int(fn, "n", n, 1, 1 << 29)
    (family,) = _choices(fn, "family", _str(fn, "family", family), FAMILIES)
    vs = list(VARIANTS) if variants is None else \
        _each(fn, "variants", variants, family, "variant")
    if tiles is None:
        tiles = transpose_tiles(m) if family == "tile_transpose" else TILES_PER_BLOCK
    tiles = _checked(fn, family, "tiles", tiles)
    repeat, progress = _repeat(fn, repeat), _flag(fn, "progress", progress)
    gpu = runtime.is_available()
    kernel = tile_transpose if family == "tile_transpose" else tile_copy
    predict = _model_predict()
    ntiles = -(-m // TILE) * -(-n // TILE)
    rows: list[dict[str, Any]] = [{"variant": v, "note": ""} for v in vs]
    cc = tuple(runtime.device().compute_capability) if gpu else None
    for row in rows:
        v = row["variant"]
        if _bad_n(v, n):
            row["note"] = f"N={n} is not a multiple of 4 (rows of whole 16-byte chunks)"
        elif cc is not None and not variant_capable(v, cc):
            need = CC_NEEDED[v]
            row["note"] = f"needs compute capability {need[0]}.{need[1]}"
    ok = [r for r in rows if not r["note"]]
    copy_ms = None
    got = None
    if gpu:
        rng = np.random.default_rng(0)
        a = runtime.to_device(rng.standard_normal((m, n), dtype=np.float32))
        res = runtime.empty((n, m) if family == "tile_transpose" else (m, n))
        flat, dst = runtime.to_device(rng.standard_normal(m * n, dtype=np.float32)), \
            runtime.empty((m * n,))
        copy_ms = device_copy(dst, flat, repeat=repeat, warmup=3)["median_ms"]
        for row in _progress(ok, len(ok), fn, progress):
            r = runtime.bench(kernel, a, variant=row["variant"], tiles=tiles, out=res,
                              repeat=repeat, warmup=3)
            row.update({"ms": r.median_ms, "GB/s": r.gbps, "x copy": copy_ms / r.median_ms,
                        "registers": registers(family, row["variant"])})
        got = _counters([(kernel, (a,), {"variant": r["variant"], "tiles": tiles, "out": res})
                         for r in ok], ASYNC_METRICS)
    measured = dict(zip((r["variant"] for r in ok), got)) if got else {}
    for row in ok:
        pred = predict(family, row["variant"], m=m, n=n, tiles=tiles) if predict else None
        g = measured.get(row["variant"])
        for k in ASYNC_METRICS:
            if g is not None:
                row[k] = g.get(k)
                if pred and k in pred:
                    row[k + "_model"] = pred[k]
            elif pred:
                row[k] = pred.get(k)
        if row.get("smsp__inst_executed.sum") is not None:
            row["inst/tile"] = row["smsp__inst_executed.sum"] / ntiles
    src = "measured" if got else "model"
    sources = {k: src for k in ASYNC_METRICS}
    sources["inst/tile"] = src
    if gpu:
        sources.update({"ms": "measured", "GB/s": "measured", "x copy": "measured",
                        "registers": "measured"})
    if got:
        sources.update({k + "_model": "model" for k in ASYNC_METRICS[1:]})
    shown = ASYNC_METRICS if got else ASYNC_METRICS[1:]   # instructions: measured only
    cols = ["variant"] + (["ms", "GB/s", "x copy", "registers"] if gpu else []) + \
        (["inst/tile"] if got else []) + list(shown)
    if got:
        cols += [k + "_model" for k in ASYNC_METRICS[1:]]
    cols.append("note")
    for row in rows:                 # a row with a note (not run) has every column, empty
        for c in cols:
            row.setdefault(c, None)
    title = f"{family} {m} x {n}, {tiles} tiles per block" + (
        f" (device copy of the same bytes: {copy_ms:.3f} ms)" if copy_ms
        else " (no GPU: model only, times not measured)")
    return Table(rows, cols, sources=sources, title=title)


# ---- gpumem report: the headline -------------------------------------------------------------
_SHOWN = ("ldg_sts", "cp_async16", "tensor", "tensor_swizzle128")


def _headline(measure: bool, quick: bool) -> list[dict]:
    size = 4096 if quick else 8192
    what = (f"tile_copy and tile_transpose {size} x {size} float32: a tile filled through "
            "registers, cp.async, the tensor copy (TMA) without and with the 128-byte swizzle")
    take = ("let the copy engine fill the tile (one thread, one instruction per tile) and "
            "swizzle it so the transposed read meets 32 banks")
    mod: dict[str, float] = {}
    try:
        for v in ("tensor", "tensor_swizzle128"):
            p = hl._predict("tile_transpose", v, m=size, n=size)
            mod[f"transpose_{v}_shared_load_transactions"] = p["shared_load_transactions"]
    except (ValueError, KeyError):
        mod = {}
    mtext = "the transpose's shared loads: " + (
        f"{mod['transpose_tensor_shared_load_transactions'] / mod['transpose_tensor_swizzle128_shared_load_transactions']:.0f}"
        "x the wavefronts without the swizzle" if mod else "not modelled")
    if not measure:
        return [hl._unmeasured("async_copy", what, "GB/s of each against the device copy "
                               "(tensor variants: compute capability 9.0)", model=mod,
                               model_text=mtext, takeaway=take)]
    cc = tuple(runtime.device().compute_capability)
    shown = [v for v in _SHOWN if variant_capable(v, cc)]
    rng = hl._rng()
    a = runtime.to_device(rng.standard_normal((size, size), dtype=np.float32))
    out = runtime.empty((size, size))
    flat, dst = runtime.to_device(rng.standard_normal(size * size, dtype=np.float32)), \
        runtime.empty((size * size,))
    copy = device_copy(dst, flat, repeat=5 if quick else 20, warmup=2)
    calls = {(f, v): (k, (a,), {"variant": v, "out": out})
             for f, k in (("copy", tile_copy), ("transpose", tile_transpose)) for v in shown}
    res, _ = hl._timed(calls, None, quick)
    meas = {f"{f}_{v}_GB/s": r.gbps for (f, v), r in res.items()}
    meas["device_copy_GB/s"] = copy["GB/s"]
    meas.update({f"{f}_{v}_x_copy": r.gbps / copy["GB/s"] for (f, v), r in res.items()})
    text = "; ".join(f"{f}: " + ", ".join(f"{v} {res[(f, v)].gbps / copy['GB/s']:.2f}x"
                                          for v in shown)
                     for f in ("copy", "transpose")) + \
        f" of the device copy {hl._gbps(copy['GB/s'])}"
    if len(shown) < len(_SHOWN):
        text += f" (compute capability {cc[0]}.{cc[1]}: the tensor copy needs 9.0)"
    return [hl._row("async_copy", what, measured=meas, model=mod, measured_text=text,
                    model_text=mtext, takeaway=take)]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    size = 4096 if quick else 8192
    return [async_compare(size, size, family=f, repeat=5 if quick else 20, progress=progress)
            for f in FAMILIES] + \
        [async_compare(size - 2, size - 2, family="tile_transpose", repeat=5 if quick else 20,
                       progress=progress)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize() -> None:
    """Every variant of both families, once per awkward size, where this GPU runs it (the
    transpose's both kernels: M % 8 != 0 holds the ext rows, (64, 36) and (96, 70) not)."""
    cc = tuple(runtime.device().compute_capability)
    for v in VARIANTS:
        if not variant_capable(v, cc):
            continue
        for m, n in ((1, 1), (3, 7), (37, 41), (65, 68), (257, 190), (33, 300), (64, 36),
                     (96, 70)):
            if _bad_n(v, n):
                continue
            a = _f32(m, n)
            tile_copy(a, variant=v)
            tile_transpose(a, variant=v)
        if not _bad_n(v, 290):                # runs of 1 and 16 tiles (the tails: n % 4 == 2)
            a = _f32(70, 290)
            for tiles in (1, 16):
                tile_copy(a, variant=v, tiles=tiles)
                tile_transpose(a, variant=v, tiles=tiles)


# ---- what the shared tests read: a fake GPU's measurements, the model's largest launches ----
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): each way of filling the tile a
    little closer to the copy's time, the swizzled tensor copy's transpose nearly at it."""
    return {"tile_copy": gpu.kernel("tile_copy", {"ldg_sts": 1.25, "cp_async16": 1.1,
                                                  "tensor": 1.05, "tensor_swizzle128": 1.02}),
            "tile_transpose": gpu.kernel("tile_transpose", {
                "ldg_sts": 2.0, "cp_async16": 1.8, "tensor": 1.6, "tensor_swizzle128": 1.04}),
            "device_copy": gpu.device_copy}


def _model_launches() -> dict:
    """Every variant at the largest launch gpumem accepts (65535 block rows of tiles) and at
    65536^2 (:attr:`Lesson.model_launches`); the bulk and tensor copies read through the copy
    engine."""
    from .. import model

    largest = [(f, v, dict(m=65535 * 32, n=2**29)) for f in FAMILIES
               for v in model.families()[f]]
    large = [(f, v, dict(m=65536, n=65536)) for f in FAMILIES for v in model.families()[f]]
    engine = [(f, v) for f in FAMILIES for v in ("bulk", "tensor", "tensor_swizzle128")]
    return {"largest": largest, "large": large, "copy_engine": engine, "left_out": {}}


LESSON = Lesson(
    name="async_copy",
    idea="filling a shared-memory tile: through registers, cp.async, the bulk copy engine and "
         "the tensor copy (TMA) with its swizzle, in a tiled copy and transpose",
    families=FAMILIES,
    exports=("tile_copy", "tile_transpose"),
    sweeps=("async_compare",),
    notebooks=("14_async_copy",),
    benchmark="async_copy",
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=FAMILIES,
    stand_ins=_stand_ins,
    model_launches=_model_launches,
)
