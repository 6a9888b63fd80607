"""Matrix multiply, the staircase from a naive kernel toward cuBLAS:

* ``naive``: every thread reads a row of A and a column of B from global memory;
* ``tiled``: blocks stage ``tile x tile`` tiles of A and B in shared memory, so
  each loaded float is used ``tile`` times;
* ``prefetch``: tiled with double buffering -- the next tiles are loaded into
  registers while this tile's inner product runs, one barrier per tile;
* ``coarsened``: thread coarsening -- 32 x 8 threads compute a 32 x 32 tile, four
  outputs of a column each, so a B value read from shared memory serves four FMAs;
* ``register_tiled``: 2-D register blocking -- 16 x 16 threads compute a 64 x 64
  tile, a 4 x 4 block of C each, an outer product of 4 A and 4 B values per k
  (float4 loads from shared memory, A stored transposed; float4 global loads and
  stores where rows are 16-byte aligned);
* ``warptiled``: block, warp and thread tiles -- 8 warps compute a 128 x 128 tile,
  each warp 64 x 32 of it, each lane 8 x 8 (``tile=64``: 4 warps, 64 x 64); shared
  memory is double buffered, the next tile of B copied by ``cp.async`` (global to
  shared memory without registers, sm_80 and newer) and the next tile of A held in
  registers while the block multiplies the current one; a lane's 64 FMAs per k go column
  by column of its 8 x 8 block (row by row ran 7% slower on an H100: the order decides
  the compiler's register banks); A comes by float4 loads and B by 16-byte copies, an
  operand whose rows are off the 16-byte grid copied first into the call's workspace with
  padded rows, as for ``mma`` (the scalar loads and 4-byte copies this replaces ran
  4000 x 4001 x 3999 3% slower on an H100);
* ``mma``: the tensor cores (compute capability 8.0 and newer) -- ``mma.sync``
  m16n8k8 with TF32 inputs (each float32 operand rounded to 10 fraction bits) and
  float32 sums; 4 warps compute a 128 x 128 tile, each warp 64 x 64 of it as its
  transpose (B^T A^T, so that every operand register pair is one 8-byte load from
  shared memory); a 3-stage ``cp.async`` pipeline keeps the next two 32-wide k slices
  of A and B in flight, and a swizzled shared-memory layout makes the fragment loads
  free of bank conflicts.  Every copy is 16 bytes: an operand whose rows are off the
  16-byte grid (K or N not a multiple of 4, or a view's base) is first copied into the
  call's workspace with rows padded with zeros to a multiple of 4 floats, by a kernel of
  its own, as for ``wgmma`` (the 4-byte copies it replaces ran 4095^3 at a third of
  4096^3's TFLOP/s on an H100).  Its
  results differ from the float32 variants by TF32's rounding: about
  ``2**-10 * sum_k |a||b|`` per element.

Takes float32 NumPy arrays (and returns NumPy arrays) or
:class:`gpumem.DeviceArray` (and returns DeviceArray, with no host copies).
"""
from __future__ import annotations

from typing import Literal, Union

import numpy as np

from .. import _core, runtime, model
from .._core import DeviceArray
from ..runtime.args import _checking, _given, _host, _index, _indices, arg_row
from ..runtime.measure import time_calls
from ..runtime.table import Table
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools import headline as hl

__all__ = ["matmul", "matmul_reference", "matmul_model_points"]

Array = Union[np.ndarray, DeviceArray]


def matmul(a: Array, b: Array, *, tile: Literal[8, 16, 32, 64, 128] | None = None,
           variant: Literal["tiled", "naive", "prefetch", "coarsened",
                            "register_tiled", "warptiled", "mma", "wgmma"] = "tiled",
           splits: int | None = None, out: DeviceArray | None = None):
    """``a @ b`` for float32 matrices of any shape M x K @ K x N.

    Parameters
    ----------
    a, b : numpy.ndarray or DeviceArray, float32, 2-D
        Other dtypes raise TypeError (convert with ``.astype(np.float32)``);
        non-contiguous ndarrays are copied to a contiguous buffer first.
    tile : {8, 16, 32, 64, 128}, optional
        The edge of the block of C a thread block computes (default: 16, or the
        variant's own tile for coarsened, register_tiled and warptiled): blocks
        of ``tile x tile`` threads; for ``"tiled"`` and ``"prefetch"`` (16 or 32)
        also the shared-memory tile.  ``"coarsened"`` takes 32 only (its blocks
        are 32 x 8 threads), ``"register_tiled"`` 64 only (16 x 16 threads),
        ``"warptiled"`` 128 (256 threads, the default) or 64 (128 threads), ``"mma"``
        128 only (128 threads), ``"wgmma"`` 128 only (C tiles of 256 rows x 128 columns,
        256 threads); a tile a variant does not take is a ValueError.
    variant : {"tiled", "naive", "prefetch", "coarsened", "register_tiled", "warptiled", "mma", "wgmma"}
        ``gpumem.variants("matmul")`` lists what each shows.  ``"mma"`` (TF32 tensor
        cores) needs compute capability 8.0 or newer, ``"wgmma"`` (Hopper's warpgroup
        MMA fed by TMA) compute capability 9.0 exactly (sm_90a: H100, H200): another GPU
        raises CudaError (cudaErrorNotSupported) naming its capability.  Both take TF32
        inputs (10 fraction bits) and sum in float32: ``"mma"`` rounds both operands to
        nearest, ``"wgmma"`` rounds B's and truncates A's (the tensor cores read A from
        shared memory and use its top 19 bits).
    splits : int, optional
        ``"warptiled"`` only: how many slices along K each tile of C in the launch's last,
        partly filled wave is cut into (1 to 64; 1: none).  The GPU runs the blocks in
        waves of SMs x resident blocks per SM; when the tiles leave the last wave at most
        half full (4097^3 on 132 SMs: 1,089 tiles of 128 in waves of 264, a fifth wave of
        33), its tiles are computed by ``splits`` blocks each, one slice of K apiece, into a
        buffer, and a second kernel adds the slices in order into C: that wave then takes
        about ``1/splits`` of a whole tile's time.  The whole tiles go first, in a launch
        of their own (the kernel without the split code runs faster: 0.91x cuBLAS at
        4096^3 on an H100 against 0.83x), then the slices on a 1-D grid of ``tail x
        splits`` blocks -- the record's grid.  Left out: as many as fill the wave's
        slots, at most 16, each slice at least 256 of K (none when the last wave is over
        half full).  ``gpumem.last_record().params["splits"]`` says what ran; the model's
        :func:`gpumem.model.matmul_waves` predicts it, and ``gpumem.model.predict`` counts
        a split call given ``splits`` and ``tail`` (how many tiles were sliced;
        :func:`gpumem.model.predict_record` reads it off the record's grid): the same
        loads, the slices' stores and the sum kernel's traffic on top.  Another variant
        with splits other than 1 is a ValueError.
    out : DeviceArray, optional
        Where to write the M x N result; must not be an input.

    Returns
    -------
    numpy.ndarray when every input is an ndarray, else DeviceArray (``out`` if given).
    Empty operands give NumPy's result shape (K == 0 gives zeros).
    """
    _given("matmul", a=a, b=b)
    opts = {} if tile is None else _indices("matmul", tile=tile)
    if splits is not None:
        opts.update(_indices("matmul", splits=splits))
    return _core.matmul(a, b, **opts, variant=variant, out=out)


def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`matmul`: ``a @ b`` in float64.

    Parameters
    ----------
    a, b : array_like, 2-D, M x K and K x N

    Returns
    -------
    numpy.ndarray, float64, M x N.  The kernels sum in float32, so compare with a
    relative tolerance that grows with ``sqrt(K)``.
    """
    fn = "matmul_reference"
    a, b = (_host(fn, name, v, np.float64, ndim=2) for name, v in (("a", a), ("b", b)))
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{fn}: a is {a.shape[0]} x {a.shape[1]} and b is {b.shape[0]} x "
                         f"{b.shape[1]}: a's columns must equal b's rows")
    return a @ b


def matmul_model_points(m: int, n: int, k: int,
                        variants: tuple = (("naive", 16), ("tiled", 8), ("tiled", 16),
                                           ("tiled", 32), ("prefetch", 32), ("coarsened", 32),
                                           ("register_tiled", 64), ("warptiled", 128))):
    """The model's roofline points of the matmul variants (no GPU needed): a Table of
    label, flops (``2mnk``), bytes and source ``"model"`` for :func:`gpumem.roofline`.

    The bytes are the global loads and stores the kernels *request*
    (:func:`gpumem.model.matmul_traffic`), so the intensity is the lesson's
    compute-to-global-memory-access ratio in FLOP per byte: 0.25 for naive (two 4-byte
    loads per FMA: 2 FLOPs per 8 bytes), about ``tile / 4`` for tiled.  Measured DRAM bytes are fewer (L1 and L2
    serve the reuse): profile ``dram_read_bytes`` and ``dram_write_bytes`` for those.
    """

    fn = "matmul_model_points"
    sizes = {name: _index(fn, name, v) for name, v in (("m", m), ("n", n), ("k", k))}
    if isinstance(variants, (str, bytes)) or not hasattr(variants, "__iter__"):
        raise TypeError(f"{fn}: variants must be a sequence of (variant, tile) pairs, not "
                        f"{type(variants).__name__}")
    pairs = []
    for pair in variants:
        if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                or not isinstance(pair[0], str)):
            raise TypeError(f"{fn}: variants must hold (variant, tile) pairs such as "
                            f"('tiled', 16), not {pair!r}")
        pairs.append((pair[0], _index(fn, "tile", pair[1])))
    rows = []
    for variant, tile in pairs:
        try:
            t = model.matmul_traffic(sizes["m"], sizes["n"], sizes["k"], variant, tile)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{fn}: {e}") from None
        rows.append({"label": f"matmul/{variant} (tile={tile})", "flops": t["flops"],
                     "bytes": t["load_bytes"] + t["store_bytes"], "source": "model"})
    return Table(rows, ["label", "flops", "bytes", "source"],
                 title=f"matmul {sizes['m']} x {sizes['k']} @ {sizes['k']} x {sizes['n']}: "
                       "global bytes requested (model)")


# ---- gpumem report: the headline and the full sweeps ------------------------------------
def _cublas(a: np.ndarray, b: np.ndarray, ours: np.ndarray, quick: bool) -> dict:
    """cuBLAS (``cupy.matmul``, float32) on the same operands: checked against gpumem's
    result first (relative error < 1e-4), timed with CUDA events only when it agrees."""
    try:
        import cupy as cp
    except ImportError:
        return {"error": "CuPy not importable: no cuBLAS to compare with"}
    except Exception as e:      # a CuPy that cannot load its CUDA libraries
        return {"error": f"CuPy failed to load ({type(e).__name__}: {e})"}
    try:
        A, B = cp.asarray(a), cp.asarray(b)
        C = cp.matmul(A, B)
        err = float(np.linalg.norm(cp.asnumpy(C) - ours) / np.linalg.norm(ours))
        if not err < 1e-4:
            return {"error": f"cuBLAS differs from gpumem: relative error {err:.2e}",
                    "rel_err": err}
        # gpumem's timer records its events on the legacy default stream (no gpumem stream
        # is current here), the stream CuPy launches cuBLAS on unless told otherwise
        ms = time_calls(lambda: cp.matmul(A, B, out=C), repeat=5 if quick else 20,
                        warmup=2)["median_ms"]             # two warm-up calls, timed and dropped
        del A, B, C
        cp.get_default_memory_pool().free_all_blocks()
    except Exception as e:      # a CuPy without a working cuBLAS: say so, keep the report
        return {"error": f"cuBLAS failed ({type(e).__name__}: {e})"}
    return {"ms": ms, "rel_err": err}


def _headline(measure: bool, quick: bool) -> list[dict]:
    size = 1024 if quick else 2048
    tile = 32
    tiles = {"naive": 16, "tiled": tile}      # the naive kernel in its usual 16x16 blocks
    traffic = {v: model.matmul_traffic(size, size, size, v, t) for v, t in tiles.items()}
    preds = {v: model.predict("matmul", v, m=size, n=size, k=size, tile=t)
             for v, t in tiles.items()}
    mod = {"naive_flops_per_float": traffic["naive"]["cgma"],
           "tiled_flops_per_float": traffic["tiled"]["cgma"],
           "naive_gld_transactions": preds["naive"]["gld_transactions"],
           "tiled_gld_transactions": preds["tiled"]["gld_transactions"]}
    mtext = (f"FLOPs per loaded float: naive {traffic['naive']['cgma']:.0f}, tiled "
             f"{traffic['tiled']['cgma']:.0f} ({traffic['naive']['load_bytes'] / 1e9:,.1f} vs "
             f"{traffic['tiled']['load_bytes'] / 1e9:,.2f} GB of global loads)")
    what = f"matmul {size}^3 float32: naive (16x16 blocks) vs tiled, tile {tile}"
    cub_what = f"cuBLAS (cupy.matmul, float32) at {size}^3 against gpumem's kernels"
    if not measure:
        return [hl._unmeasured("matmul", what, "GFLOP/s of both kernels (gpumem.bench)",
                            model=mod, model_text=mtext,
                            takeaway=f"shared-memory tiles cut global loads {tile}x"),
                hl._unmeasured("matmul", cub_what, "cuBLAS's GFLOP/s (needs CuPy), after "
                            "checking its result against gpumem's",
                            takeaway="how far the teaching kernels are from the vendor "
                                     "library, warptiled among them")]
    rng = hl._rng()
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    A, B = runtime.to_device(a), runtime.to_device(b)
    out = runtime.empty((size, size))
    res, got = hl._timed({v: (matmul, (A, B), {"tile": t, "variant": v, "out": out})
                       for v, t in tiles.items()}, "gld_transactions", quick,
                      repeat=3 if quick else 5)
    ours = matmul(A, B, tile=tile, variant="tiled").get()
    meas = {f"{v}_GFLOP/s": r.gflops for v, r in res.items()}
    meas.update({f"{v}_ms": r.median_ms for v, r in res.items()})
    speedup = res["naive"].median_ms / res["tiled"].median_ms
    text = (f"naive {res['naive'].gflops:,.0f} GFLOP/s, tiled {res['tiled'].gflops:,.0f} "
            f"GFLOP/s ({speedup:.1f}x)")
    if got is not None:
        meas.update({f"{v}_gld_transactions": g for v, g in got.items()})
        text += ("; global load sectors " + ", ".join(
            f"{v} {meas[f'{v}_gld_transactions'] / 1e6:,.0f}M measured / "
            f"{preds[v]['gld_transactions'] / 1e6:,.0f}M model" for v in ("naive", "tiled")
            if meas[f"{v}_gld_transactions"] is not None))
    rows = [hl._row("matmul", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"tiling in shared memory: {speedup:.1f}x faster for "
                          f"{tile}x fewer global loads")]
    cub = _cublas(a, b, ours, quick)
    if "error" in cub:
        cmeas = {"rel_err": cub["rel_err"]} if "rel_err" in cub else {}
        rows.append(hl._row("matmul", cub_what, measured=cmeas, measured_text=cub["error"],
                         takeaway="no cuBLAS comparison in this run"))
    else:
        flops = 2.0 * size**3
        gf = flops / (cub["ms"] * 1e-3) / 1e9
        # the last step of the staircase (notebook 06), beside the vendor library
        wt = runtime.bench(matmul, A, B, variant="warptiled", out=out,
                      repeat=3 if quick else 5, warmup=1).gflops
        best = max([wt] + [r.gflops for r in res.values()])
        cmeas = {"cublas_GFLOP/s": gf, "cublas_ms": cub["ms"], "rel_err": cub["rel_err"],
                 "warptiled_GFLOP/s": wt, "fastest_gpumem_over_cublas": best / gf}
        ctext = (f"cuBLAS {gf:,.0f} GFLOP/s (agrees: relative error {cub['rel_err']:.1e}); "
                 f"gpumem's warptiled {wt:,.0f} GFLOP/s, fastest gpumem / cuBLAS = "
                 f"{best / gf:.2f}")
        if _has_mma():          # the tensor cores' step (TF32: not in the float32 ratio)
            cmeas["mma_GFLOP/s"] = runtime.bench(matmul, A, B, variant="mma", out=out,
                                                 repeat=3 if quick else 5, warmup=1).gflops
            ctext += f"; mma (TF32 tensor cores) {cmeas['mma_GFLOP/s']:,.0f} GFLOP/s"
        if _has_wgmma():        # Hopper's step: warpgroup MMA fed by TMA
            cmeas["wgmma_GFLOP/s"] = runtime.bench(matmul, A, B, variant="wgmma", out=out,
                                                   repeat=3 if quick else 5, warmup=1).gflops
            ctext += f", wgmma {cmeas['wgmma_GFLOP/s']:,.0f} GFLOP/s"
        rows.append(hl._row("matmul", cub_what, measured=cmeas, measured_text=ctext,
                         takeaway="register and warp tiles, float4 loads and cp.async double "
                                  "buffering on top of shared-memory tiles close most of the "
                                  "gap (notebook 06)"))
    return rows

def _has_mma() -> bool:
    """Whether this GPU runs ``variant="mma"`` (compute capability 8.0 or newer; False
    where the device does not say)."""
    cc = getattr(runtime.device(), "compute_capability", None)
    return cc is not None and tuple(cc) >= (8, 0)


def _has_wgmma() -> bool:
    """Whether this GPU runs ``variant="wgmma"`` (compute capability 9.0 exactly)."""
    cc = getattr(runtime.device(), "compute_capability", None)
    return cc is not None and tuple(cc) == (9, 0)


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    size = 1024 if quick else 2048
    rows = []
    for v, t in [("naive", 16), ("naive", 32), ("tiled", 8), ("tiled", 16), ("tiled", 32)]:
        tr = model.matmul_traffic(size, size, size, v, t)
        rows.append({"variant": v, "tile": t, "FLOPs per loaded float": tr["cgma"],
                     "global load GB": tr["load_bytes"] / 1e9})
    sources = {"FLOPs per loaded float": "model", "global load GB": "model"}
    title = f"matmul {size}^3 float32: tile sweep"
    if measure:
        rng = hl._rng()
        A = runtime.to_device(rng.standard_normal((size, size), dtype=np.float32))
        B = runtime.to_device(rng.standard_normal((size, size), dtype=np.float32))
        out = runtime.empty((size, size))
        for row in hl._steps(rows, "matmul tiles", progress):
            r = runtime.bench(matmul, A, B, tile=row["tile"], variant=row["variant"], out=out,
                         repeat=3 if quick else 5, warmup=1)
            row["ms"], row["GFLOP/s"] = r.median_ms, r.gflops
        sources.update({"ms": "measured", "GFLOP/s": "measured"})
    else:
        title += " (no GPU: model only, times not measured)"
    return [Table(rows, sources=sources, title=title)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _tiles() -> dict[str, tuple[int, ...]]:
    """The tiles each variant takes, as the C entry point says: each of the table's allowed
    tiles (``gpumem._core.args("matmul")``) tried by a check-only call on 1 x 1 operands,
    which touches no GPU (the variant's own rule is csrc/lessons/matmul.c's, not restated)."""
    one = np.ones((1, 1), np.float32)

    def takes(variant: str, tile: int) -> bool:
        try:
            _core.matmul(one, one, tile=tile, variant=variant)
        except ValueError:
            return False
        return True

    with _checking():
        return {v: tuple(t for t in arg_row("matmul", "tile")["allowed"] if takes(v, t))
                for v in arg_row("matmul", "variant")["choices"]}


def _sanitize_matmul():
    tiles = _tiles()
    for v in runtime.variants("matmul"):
        if v.name == "mma" and not _has_mma() or v.name == "wgmma" and not _has_wgmma():
            continue                        # refused on other compute capabilities
        for tile in tiles[v.name]:
            matmul(_f32(37, 41), _f32(41, 29), tile=tile, variant=v.name)
            matmul(_f32(1, 1), _f32(1, 1), tile=tile, variant=v.name)
            matmul(_f32(70, 0), _f32(0, 33), tile=tile, variant=v.name)
            matmul(_f32(65, 100), _f32(100, 64), tile=tile, variant=v.name)
            matmul(_f32(67, 9), _f32(9, 130), tile=tile, variant=v.name)   # scalar paths
            if v.name in ("mma", "wgmma"):  # K, N % 4: padded copies, k slices
                matmul(_f32(300, 130), _f32(130, 257), tile=tile, variant=v.name)
            if v.name == "mma":             # the fast copies (whole blocks), then the edge
                matmul(_f32(256, 96), _f32(96, 132), tile=tile, variant=v.name)
            if v.name == "warptiled":       # the split tail: slices, then their sums
                matmul(_f32(70, 300), _f32(300, 65), tile=tile, variant=v.name, splits=5)
                # A padded alone (K % 4), after the slices in the workspace
                matmul(_f32(130, 301), _f32(301, 64), tile=tile, variant=v.name, splits=3)
                matmul(_f32(33, 4096), _f32(4096, 7), tile=tile, variant=v.name)  # auto
                # more tiles than a wave on a 132-SM GPU, the whole ones ending mid-row (their
                # launch's last blocks exit)
                matmul(_f32(16 * tile - 3, 32), _f32(32, 17 * tile - 5), tile=tile,
                       variant=v.name, splits=2)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_matmul()


# ---- what the shared tests read: a fake GPU's measurements, argument strategies, the model's
# largest launches -----------------------------------------------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): each variant at a set time (tiled
    4x naive, warptiled 3.2x tiled, mma and wgmma faster still), the product NumPy's;
    cuBLAS through CuPy timed by the fake's ``time_calls``."""
    from types import SimpleNamespace

    return {"time_calls": gpu.time_calls, "matmul": gpu.kernel(
        "matmul", {"naive": 8.0, "tiled": 2.0, "warptiled": 0.625, "mma": 0.08, "wgmma": 0.05},
        counters={"naive": {"gld_transactions": 1.3e9}, "tiled": {"gld_transactions": 6.7e7}},
        flops=lambda args, kw: 2.0 * np.shape(args[0])[0] ** 3,
        result=lambda a, b, **kw: SimpleNamespace(get=lambda: a @ b))}


def _arguments(st) -> dict:
    """a (m x k) and b (k x n) agree on k (:attr:`Lesson.arguments`)."""
    dims = st.integers(1, 40)
    return {"matmul": st.tuples(dims, dims, dims).map(
        lambda mnk: {"a": np.ones(mnk[::2], np.float32), "b": np.ones(mnk[:0:-1], np.float32)})}


def _model_launches() -> dict:
    """Every variant at each of its tiles at the largest launch gpumem accepts (65535 block
    rows, N*K just under 2^61 floats) and at 16384^3 (:attr:`Lesson.model_launches`); wgmma's
    operands come through the tensor copy."""
    from .. import model

    tiles = _tiles()
    largest = [("matmul", v, dict(m=65535 * t, n=2**30 - 1, k=2**31 - 1, tile=t))
               for v, ts in tiles.items() for t in ts]
    large = [("matmul", v, dict(m=16384, n=16384, k=16384)) for v in model.families()["matmul"]]
    return {"largest": largest, "large": large, "copy_engine": [("matmul", "wgmma")],
            "left_out": {}}



def _model_counters(cc) -> dict:
    """Every variant at each of its tiles on shapes on and off the tiles' grid, for
    Nsight Compute's counters (:attr:`Lesson.model_counters`; wgmma on compute capability
    9.0 only).  The padding copy (matmul_pad_rows) runs before mma, wgmma and warptiled,
    and the model counts both.  On the H200 (2026-11-27) the wavefronts of wgmma's shared
    loads came 10-21% over the model on this grid's launches while its load instructions
    were exact -- an excess no load address makes; the threads' mbarrier waits (try_wait
    polls on shared memory, as many as the copies take) are the likely source, not
    separated by a counter yet: there the model is a floor."""
    # on the tiles' grid; off it in m, n and k at once (a partial tile of each, below and
    # above one tile); one element -- each variant at each tile is a third of a second of
    # Nsight Compute's time
    shapes = ((64, 64, 64), (33, 65, 7), (1, 1, 1), (257, 129, 70))
    tiles = _tiles()
    cases = [("matmul", v, dict(m=m, n=n, k=k, tile=t)) for v, ts in tiles.items() for t in ts
             for m, n, k in shapes if v != "wgmma" or cc is None or tuple(cc) == (9, 0)]
    return {"cases": cases, "helpers": ("matmul_pad_rows",),
            "over": {("wgmma", "shared_load_transactions"): 0.3}}

LESSON = Lesson(
    name='matmul',
    idea="tiling in shared memory, then registers and warps: global loads per FLOP, from naive to the staircase's last step",
    families=('matmul',),
    exports=('matmul', 'matmul_reference', 'matmul_model_points'),
    sweeps=(),
    notebooks=('01_matmul', '06_matmul_staircase'),
    benchmark='matmul',
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=('matmul',),
    stand_ins=_stand_ins,
    arguments=_arguments,
    model_launches=_model_launches,
    model_counters=_model_counters,
)
