"""Where a kernel's read-only data lives: a 1D stencil whose coefficients sit in
``__constant__`` memory, come through the read-only cache or are plain global
loads (:func:`stencil_1d`), and the constant cache's one weakness -- a warp
reading several distinct words at once is served one word per pass
(:func:`constant_broadcast`).

Each kernel has a NumPy reference (``*_reference``); :func:`broadcast_sweep`
times the broadcast through both caches.
"""
from __future__ import annotations

from typing import Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..runtime.args import _checked, _given, _host, _index, _indices
from ..tools.sweep import _bench, _each, _repeat
from ..runtime.measure import device_copy
from ..runtime.table import Table
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools import headline as hl

__all__ = ["STENCIL_8TH_ORDER", "stencil_1d", "stencil_1d_reference", "constant_broadcast",
           "constant_broadcast_reference", "broadcast_table", "broadcast_sweep"]

Array = Union[np.ndarray, DeviceArray]

#: The book's radius-4, 8th-order first-derivative weights w[-4..4]:
#: out[i] = sum_k a_k (x[i+k] - x[i-k]) with a = (0.8, -0.2, 0.03809, -0.00357).
STENCIL_8TH_ORDER = np.array([0.00357, -0.03809, 0.2, -0.8, 0.0, 0.8, -0.2, 0.03809, -0.00357],
                             dtype=np.float32)

BROADCAST_TABLE = 256     #: floats in the broadcast table (1 KiB)
MAX_RADIUS = 16           #: the largest stencil radius (2R + 1 = 33 weights)


# ---- stencil ----------------------------------------------------------------
def stencil_1d(x: Array, coef: Sequence[float] | np.ndarray | None = None, *,
               memory: Literal["constant", "readonly", "global"] = "constant", block: int = 256,
               items: Literal[1, 2, 4, 8] = 4, out: DeviceArray | None = None):
    """``out[i] = sum_{k=-R..R} coef[R+k] * x[i+k]``, float32, with ``x`` read as zero
    outside ``[0, n)``: the output has the length of ``x`` (zero padding, not the valid region).

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, 1-D, any length
    coef : sequence of real numbers, optional
        ``2R + 1`` weights for a radius ``R`` of 1..16, centre ``coef[R]``; symmetric
        (``coef[R+k] == coef[R-k]``) or antisymmetric (``coef[R+k] == -coef[R-k]``,
        ``coef[R] == 0``) after rounding to float32.  Default: :data:`STENCIL_8TH_ORDER`.
    memory : {"constant", "readonly", "global"}
        Where the coefficients live: ``__constant__`` memory (copied with
        ``cudaMemcpyToSymbol`` *before* the launch, so the recorded time is the kernel
        alone), the read-only data cache (``const __restrict__`` + ``__ldg``), or plain
        global loads.
    block : int
        Threads per block, a multiple of 32 up to 1024 (the book's 32 is slow: 256 is not).
    items : {1, 2, 4, 8}
        Outputs per thread (1 is the book's kernel); more loads in flight per thread.
    out : DeviceArray, optional
        Where to write the result (shape ``(n,)``, float32, not ``x``).

    Returns
    -------
    numpy.ndarray when ``x`` is an ndarray, else DeviceArray (``out`` if given).
    """
    _given("stencil_1d", x=x)
    return _core.stencil_1d(x, coef, memory=memory,
                            **_indices("stencil_1d", block=block, items=items), out=out)


def stencil_1d_reference(x: np.ndarray,
                         coef: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """NumPy reference of :func:`stencil_1d` in float64 (weights rounded to float32 first)."""
    fn = "stencil_1d_reference"
    x = _host(fn, "x", x, np.float64, ndim=1)
    w = STENCIL_8TH_ORDER if coef is None else _host(fn, "coef", coef, np.float64, ndim=1)
    if not (3 <= len(w) <= 2 * MAX_RADIUS + 1 and len(w) % 2):
        raise ValueError(f"{fn}: coef has {len(w)} weights; it needs 2R + 1 for a radius R "
                         f"of 1..{MAX_RADIUS}")
    w = w.astype(np.float32).astype(np.float64)
    r = len(w) // 2
    xp = np.pad(x, r)
    return np.correlate(xp, w, mode="valid")


# ---- constant broadcast ----------------------------------------------------------
def constant_broadcast(distinct: int, *, memory: Literal["constant", "readonly"] = "constant",
                       n: int = 1 << 20, iters: int = 256, block: int = 256,
                       out: DeviceArray | None = None):
    """Each warp reads ``distinct`` different table words per load, ``iters`` times.

    Thread ``t`` (lane ``l = t % 32``) sums ``table[(l % distinct + 32 i) % 256]`` for
    ``i < iters``; :func:`broadcast_table` is the table.  With ``memory="constant"``
    the table is in ``__constant__`` memory and the constant cache serves one word
    per pass, so a warp's load costs ``distinct`` passes; with ``"readonly"`` it
    goes through the read-only data cache, where the words share one 128-byte line.

    Parameters
    ----------
    distinct : int
        Distinct words per warp load, 1..32.
    memory : {"constant", "readonly"}
        Where the table lives.
    n : int
        Threads (and results), >= 1.
    iters : int
        Loads per thread, >= 1.
    block : int
        Threads per block, a multiple of 32 up to 1024.
    out : DeviceArray, optional
        float32, shape ``(n,)``.

    Returns
    -------
    numpy.ndarray of ``n`` float32 sums (a DeviceArray when ``out`` is given).
    """
    return _core.constant_broadcast(_index("constant_broadcast", "distinct", distinct), memory=memory,
                                    **_indices("constant_broadcast", n=n, iters=iters, block=block),
                                    out=out)


def broadcast_table() -> np.ndarray:
    """The 256-float table :func:`constant_broadcast` reads: ``(j % 13) / 4``."""
    return ((np.arange(BROADCAST_TABLE) % 13) * 0.25).astype(np.float32)


def constant_broadcast_reference(distinct: int, n: int = 1 << 20, iters: int = 256) -> np.ndarray:
    """NumPy reference of :func:`constant_broadcast` (exact: every partial sum is a
    multiple of 1/4 well below 2**22)."""
    fn = "constant_broadcast_reference"
    distinct, n, iters = (_checked(fn, "constant_broadcast", k, v)
                          for k, v in (("distinct", distinct), ("n", n), ("iters", iters)))
    table = broadcast_table().astype(np.float64)
    words = np.arange(32) % distinct
    idx = (words[:, None] + 32 * np.arange(iters)[None, :]) & (BROADCAST_TABLE - 1)
    per_lane = table[idx].sum(axis=1)
    return np.resize(per_lane.astype(np.float32), n)      # lane t % 32, n floats and no more


# ---- sweeps ----------------------------------------------------------------------
def broadcast_sweep(distincts: Sequence[int] = (1, 2, 4, 8, 16, 32), *, n: int = 1 << 20,
                    iters: int = 256, repeat: int = 20) -> Table:
    """:func:`constant_broadcast` through both caches for each number of distinct words
    per warp: time, and time per load relative to one word."""
    fn = "broadcast_sweep"
    ds = _each(fn, "distincts", distincts, "constant_broadcast", "distinct")
    n, iters = (_checked(fn, "constant_broadcast", k, v) for k, v in (("n", n), ("iters", iters)))
    repeat = _repeat(fn, repeat)
    rows = []
    for d in ds:
        row = {"distinct": d}
        for mem in (v[1] for v in _core.variants("constant_broadcast")):   # constant, readonly
            r, _ = _bench(constant_broadcast, d, memory=mem, n=n, iters=iters, repeat=repeat,
                          warmup=2)
            row[f"{mem}_ms"] = r.median_ms
        rows.append(row)
    for row in rows:
        row["constant / readonly"] = row["constant_ms"] / row["readonly_ms"]
        row["constant vs 1 word"] = row["constant_ms"] / rows[0]["constant_ms"]
    return Table(rows, sources={c: "measured" for c in rows[0] if c != "distinct"},
                 title=f"constant broadcast vs serialisation ({n} threads x {iters} loads)")


# ---- gpumem report: the headline and the full sweeps ------------------------------------
def _headline(measure: bool, quick: bool) -> list[dict]:
    n = 2**24 if quick else 2**26
    mems = ("constant", "readonly")
    mod = {"bytes_per_point": 8.0}
    mtext = "8 bytes per point (x read once, out written once): a copy's traffic at best"
    block = 128
    what = (f"stencil_1d, 8th order, coefficients constant vs readonly (n = {hl._pow2(n)}, "
            f"block {block}, 4 outputs per thread)")
    bmod = {"constant_passes_1": 1.0, "constant_passes_32": 32.0, "readonly_passes_32": 1.0}
    bmtext = ("constant cache: one word per pass, 32 passes for 32 distinct words "
              "(time ratio up to 32); read-only cache: 1 pass")
    bwhat = "constant_broadcast, 1 vs 32 distinct words per warp load"
    btake = "__constant__ is for values every lane reads at once"
    if not measure:
        return [hl._unmeasured("stencil", what, "GB/s of both, against the device copy (cudaMemcpy) of the same size",
                            model=mod, model_text=mtext,
                            takeaway="a stencil is a streaming kernel: both caches serve the "
                                     "coefficients, the copy ceiling is the bound"),
                hl._unmeasured("stencil", bwhat, "the time ratio of 32 distinct words to 1",
                            model=bmod, model_text=bmtext, takeaway=btake)]
    x = runtime.to_device(hl._rng().standard_normal(n, dtype=np.float32))
    out = runtime.empty((n,))
    res = {m: hl._bench(stencil_1d, x, memory=m, block=block, items=4, out=out, quick=quick)
           for m in mems}
    ceiling = device_copy(out, x, repeat=5 if quick else 20, warmup=2)["GB/s"]
    meas = {f"{m}_GB/s": r.gbps for m, r in res.items()}
    meas["device_copy_GB/s"] = ceiling
    meas.update({f"{m}_pct_of_copy": 100 * r.gbps / ceiling for m, r in res.items()})
    text = (", ".join(f"{m} {hl._gbps(r.gbps)}" for m, r in res.items())
            + f" (device copy {hl._gbps(ceiling)}: {meas['constant_pct_of_copy']:.0f}% and "
              f"{meas['readonly_pct_of_copy']:.0f}%)")
    del x, out
    bn = 2**18 if quick else 2**20
    bcast = {(m, d): hl._bench(constant_broadcast, d, memory=m, n=bn, quick=quick)
             for m, d in (("constant", 1), ("constant", 32), ("readonly", 32))}
    slow = bcast[("constant", 32)].median_ms / bcast[("constant", 1)].median_ms
    ro = bcast[("constant", 32)].median_ms / bcast[("readonly", 32)].median_ms
    bmeas = {f"{m}_{d}_ms": r.median_ms for (m, d), r in bcast.items()}
    bmeas.update({"constant_32_over_1": slow, "constant_over_readonly_32": ro})
    return [hl._row("stencil", what, measured=meas, model=mod, measured_text=text,
                 model_text=mtext,
                 takeaway=f"coefficients in __constant__: the stencil runs at "
                          f"{meas['constant_pct_of_copy']:.0f}% of the copy ceiling"),
            hl._row("stencil", bwhat, measured=bmeas, model=bmod, model_text=bmtext,
                 measured_text=(f"constant: 32 words {slow:.1f}x the time of 1; read-only "
                                f"cache {ro:.1f}x faster at 32"),
                 takeaway=btake)]

def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    if measure:
        return [broadcast_sweep(n=2**18 if quick else 2**20, repeat=5 if quick else 20)]
    rows = [{"distinct": d, "constant passes": d, "readonly passes": 1}
            for d in (1, 2, 4, 8, 16, 32)]
    return [Table(rows, sources={"constant passes": "model", "readonly passes": "model"},
                  title="constant broadcast (no GPU: passes per warp load, the time "
                        "broadcast_sweep would measure)")]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_stencil_1d():
    sym = np.array([0.25, 0.5, 1.0, 0.5, 0.25], np.float32)
    for v in runtime.variants("stencil_1d"):
        for items in (1, 2, 4, 8):
            for n in (1, 37, 1000):
                stencil_1d(_f32(n), memory=v.name, items=items, block=32)
        stencil_1d(_f32(3001), sym, memory=v.name, block=96, items=4)
        stencil_1d(_f32(5), np.ones(33, np.float32), memory=v.name, block=1024, items=1)


def _sanitize_constant_broadcast():
    for v in runtime.variants("constant_broadcast"):
        for distinct in (1, 3, 32):
            constant_broadcast(distinct, memory=v.name, n=1000, iters=5, block=96)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_stencil_1d()
    _sanitize_constant_broadcast()


# ---- what the shared tests read: a fake GPU's measurements -------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): the stencil near the copy's speed
    from either memory; the broadcast 20x slower at 32 distinct words from constant memory,
    1.5x from the read-only path."""
    return {"stencil_1d": gpu.kernel("stencil_1d", {"constant": 1.05, "readonly": 1.1},
                                     select="memory"),
            "constant_broadcast": gpu.kernel(
                "constant_broadcast",
                {("constant", 1): 1.0, ("constant", 32): 20.0, ("readonly", 32): 1.5},
                select=lambda args, kw: (kw.get("memory"), args[0]),
                moved=lambda args, kw: 8.0 * kw["n"]),
            "device_copy": gpu.device_copy}


LESSON = Lesson(
    name='stencil',
    idea="constant memory against the read-only cache: a stencil's coefficients and the broadcast",
    families=('stencil_1d', 'constant_broadcast'),
    exports=('constant_broadcast', 'stencil_1d'),
    sweeps=('broadcast_sweep',),
    notebooks=('04_stencil',),
    benchmark='stencil',
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=(),
    stand_ins=_stand_ins,
)
