"""The matrix transpose and shared-memory bank conflicts.

A transpose reads rows and writes columns, so one global side is strided
whatever a thread does (:func:`transpose` with ``variant="naive_row"`` or
``"naive_col"``).  A tile staged in shared memory makes both global sides
coalesced and moves the strided access into shared memory, where a column of
a ``float tile[32][32]`` is 32 words of one bank: a 32-way conflict
(``"shared"``).  One word of padding per row (``"padded"``) or an
XOR-swizzled column (``"swizzled"``) removes it; ``"coarsened"`` moves
64 x 64 tiles with 16-byte loads and stores, takes them down a column of tiles
first (the blocks in flight write the same rows of ``out``, one piece after
another), and runs at the speed of a copy.

:func:`shared_stride` isolates the banks: lane ``l`` reads element
``l * stride`` of a shared array of 4-, 8- or 16-byte words, and
:func:`bank_conflict_sweep` times it against the stride beside the conflicts
the counters and :mod:`gpumem.model` give.  :func:`transpose_compare` puts the
variants side by side with a copy of the same bytes.
"""
from __future__ import annotations

from typing import Literal, Sequence, Union

import numpy as np

from .. import runtime

from .. import _core
from .._core import DeviceArray
from ..runtime.args import _checked, _flag, _given, _host, _index
from ..tools.sweep import _counters_available, _each, _int, _model_predict, _progress, _repeat
from ..runtime.measure import device_copy
from ..runtime.table import Table
from ..tools import headline as hl
from ..tools.lesson import Lesson, sanitize_f32 as _f32

__all__ = ["transpose", "transpose_reference", "shared_stride", "shared_stride_reference",
           "transpose_compare", "bank_conflict_sweep", "TRANSPOSE_VARIANTS", "WORDS",
           "TRANSPOSE_METRICS", "STRIDE_METRICS"]

Array = Union[np.ndarray, DeviceArray]

#: The variants of :func:`transpose`, from the naive kernels to the fastest.
TRANSPOSE_VARIANTS = tuple(v[1] for v in _core.variants("transpose"))
#: The element types of :func:`shared_stride` and their sizes in bytes.
WORDS = {"float": 4, "float2": 8, "float4": 16}
#: Shared array of :func:`shared_stride` (bytes) and its threads per block.
STRIDE_BYTES, STRIDE_BLOCK = 16384, 256

#: The counters :func:`transpose_compare` reports (measured, and the model's beside them).
TRANSPOSE_METRICS = ("gld_transactions", "gst_transactions", "gld_efficiency",
                     "gst_efficiency", "shared_load_transactions", "shared_load_bank_conflict",
                     "shared_store_bank_conflict")
#: The counters :func:`bank_conflict_sweep` reports.
STRIDE_METRICS = ("shared_load_transactions", "shared_load_bank_conflict")


def transpose(a: Array, *, variant: Literal["naive_row", "naive_col", "shared", "padded",
                                            "swizzled", "coarsened"] = "coarsened",
              out: DeviceArray | None = None):
    """``a.T`` as a new C-contiguous float32 matrix, through one of the lesson's kernels.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, 2-D (M x N), any M and N
        (at most 65535 * 32 rows).
    variant : str
        ``"naive_row"`` (coalesced reads, a column of stores 4*M bytes apart),
        ``"naive_col"`` (the opposite), ``"shared"`` (a 32 x 32 tile in shared
        memory: both global sides coalesced, 32-way bank conflicts reading its
        columns), ``"padded"`` (``tile[32][33]``: no conflicts), ``"swizzled"``
        (``tile[r][c ^ r]``: no conflicts, no padding) or ``"coarsened"``
        (64 x 64 swizzled tiles with float4 loads and stores when M and N are
        multiples of 4, else 32 x 32 padded tiles with 8 elements per thread).
        Every variant uses blocks of 32 x 8 threads (``coarsened``: 32 x 16 on the
        float4 path, 32 x 4 on the scalar one).
    out : DeviceArray, optional
        float32, shape ``(N, M)``, not ``a``.

    Returns
    -------
    numpy.ndarray (N x M) when ``a`` is an ndarray, else DeviceArray (``out`` if given).
    """
    _given("transpose", a=a)
    return _core.transpose(a, variant=variant, out=out)


def transpose_reference(a: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`transpose`: ``a.T`` as a C-contiguous float32 copy."""
    return np.ascontiguousarray(_host("transpose_reference", "a", a, np.float32, ndim=2).T)


def shared_stride(stride: int = 1, *, word: Literal["float", "float2", "float4"] = "float",
                  iters: int = 256, blocks: int = 1024, out: DeviceArray | None = None):
    """Bank conflicts by stride: lane ``l`` of every warp reads element
    ``(l * stride + 32 i) % N`` of a 16 KiB shared array of ``word`` elements, ``i <
    iters``, and each thread returns its sum.

    Shared memory is 32 banks of 4 bytes.  With 4-byte words a stride with the
    factor ``2**k`` puts ``2**k`` lanes on one bank (32-way at stride 32), any odd
    stride is conflict-free.  8-byte words are served half a warp per wavefront at
    best and 16-byte words a quarter warp, so their ideal is 2 and 4 wavefronts per
    warp; the ``32 i`` shift moves every lane by a multiple of 128 bytes, so every
    step meets the banks as step 0 does.

    Parameters
    ----------
    stride : int, 1..32
        Elements between neighbouring lanes.
    word : {"float", "float2", "float4"}
        The element type (4, 8 or 16 bytes); the array holds 4096, 2048 or 1024.
    iters : int, 1..65536
        Reads per thread.
    blocks : int, 1..2**20
        Blocks of 256 threads.
    out : DeviceArray, optional
        float32, shape ``(blocks * 256,)``.

    Returns
    -------
    numpy.ndarray of ``blocks * 256`` float32 sums (a DeviceArray when ``out`` is given);
    :func:`shared_stride_reference` gives them exactly.
    """
    fn = "shared_stride"
    return _core.shared_stride(_index(fn, "stride", stride), word=word,
                               iters=_index(fn, "iters", iters),
                               blocks=_index(fn, "blocks", blocks), out=out)


def shared_stride_reference(stride: int = 1, word: str = "float", iters: int = 256,
                            blocks: int = 1024) -> np.ndarray:
    """NumPy reference of :func:`shared_stride` (exact: element ``e`` holds ``e % 7``,
    ``e % 5``, ``e % 3``, ``e % 2`` in its first 1, 2 or 4 components)."""
    fn = "shared_stride_reference"
    stride, iters, blocks, word = (_checked(fn, "shared_stride", k, v) for k, v in (
        ("stride", stride), ("iters", iters), ("blocks", blocks), ("word", word)))
    nelem = STRIDE_BYTES // WORDS[word]
    e = np.arange(nelem)
    value = sum(e % mod for mod in (7, 5, 3, 2)[:WORDS[word] // 4])
    idx = (np.arange(32)[:, None] * stride + 32 * np.arange(iters)[None, :]) & (nelem - 1)
    per_lane = value[idx].sum(axis=1).astype(np.float32)
    return np.tile(per_lane, blocks * STRIDE_BLOCK // 32)


# ---- experiments -------------------------------------------------------------------
def _predictions(family: str, cases: list[tuple[str, dict]]) -> list[dict | None]:
    predict = _model_predict()
    return [predict(family, v, **p) if predict else None for v, p in cases]


def _counters(calls: list, metrics: Sequence[str]) -> list[dict] | None:
    """Each call's counters from one profile block (None where they cannot be read)."""
    if not (runtime.is_available() and _counters_available()):
        return None
    with runtime.profile(metrics=list(metrics)) as prof:
        for fn, args, kw in calls:
            fn(*args, **kw)
    return [r.metrics for r in prof.records]


def transpose_compare(m: int = 8192, n: int = 8192, *,
                      variants: Sequence[str] | None = None, repeat: int = 20,
                      progress: bool = True) -> Table:
    """Every :func:`transpose` variant on one M x N matrix, beside a copy of the same bytes.

    Per variant: the kernel time (median of ``repeat`` timed launches after a
    warm-up), GB/s of the 8*M*N bytes moved, the ratio to the device copy (``cudaMemcpy``) of the
    same M*N floats (``variant="float4"``, timed in the same run: the speed of
    light of any transpose), and :data:`TRANSPOSE_METRICS` -- measured by the
    profiler where it can read counters, with :func:`gpumem.model.predict`'s beside
    them in ``<metric>_model`` columns; without a GPU the model's alone.
    """
    fn = "transpose_compare"
    m, n = _int(fn, "m", m, 1, 65535 * 32), _int(fn, "n", n, 1, 2**31 - 65)
    vs = list(TRANSPOSE_VARIANTS) if variants is None else \
        _each(fn, "variants", variants, "transpose", "variant")
    repeat, progress = _repeat(fn, repeat), _flag(fn, "progress", progress)
    gpu = runtime.is_available()
    preds = _predictions("transpose", [(v, {"m": m, "n": n}) for v in vs])
    rows = [{"variant": v} for v in vs]
    copy_ms = None
    if gpu:
        rng = np.random.default_rng(0)
        a = runtime.to_device(rng.standard_normal((m, n), dtype=np.float32))
        res = runtime.empty((n, m))
        flat, dst = runtime.to_device(rng.standard_normal(m * n, dtype=np.float32)), \
            runtime.empty((m * n,))
        copy_ms = device_copy(dst, flat, repeat=repeat, warmup=3)["median_ms"]
        for row in _progress(rows, len(rows), fn, progress):
            r = runtime.bench(transpose, a, variant=row["variant"], out=res, repeat=repeat,
                             warmup=3)
            row.update({"ms": r.median_ms, "GB/s": r.gbps, "x copy": copy_ms / r.median_ms})
        got = _counters([(transpose, (a,), {"variant": v, "out": res}) for v in vs],
                        TRANSPOSE_METRICS)
    else:
        got = None
    for row, pred, g in zip(rows, preds, got or [None] * len(rows)):
        for k in TRANSPOSE_METRICS:
            row[k] = g[k] if g is not None else (pred.get(k) if pred else None)
        if g is not None and pred:
            row.update({k + "_model": pred.get(k) for k in TRANSPOSE_METRICS})
    src = "measured" if got is not None else "model"
    sources = {k: src for k in TRANSPOSE_METRICS}
    if gpu:
        sources.update({"ms": "measured", "GB/s": "measured", "x copy": "measured"})
    if got is not None:
        sources.update({k + "_model": "model" for k in TRANSPOSE_METRICS})
    title = f"transpose {m} x {n}" + (f" (device copy of the same bytes: {copy_ms:.3f} ms)"
                                      if copy_ms else " (no GPU: model only, times not measured)")
    return Table(rows, sources=sources, title=title)


def bank_conflict_sweep(strides: Sequence[int] = tuple(range(1, 33)),
                        words: Sequence[str] = ("float", "float2", "float4"), *,
                        iters: int = 1024, blocks: int = 1056, repeat: int = 10,
                        progress: bool = True) -> Table:
    """:func:`shared_stride` for each word size and stride: time per warp read, and the
    wavefronts (bank conflicts) per read from the counters and from the model.

    Columns: ``word``, ``stride``, ``ms`` and ``ns/read`` (kernel time over the
    ``blocks * 8 * iters`` warp reads, measured), ``vs stride 1`` (time relative to the
    same word at stride 1), ``wavefronts/read`` and ``conflicts/read`` (measured
    where counters can be read), and the model's ``wavefronts/read_model``,
    ``conflicts/read_model`` (the fill's stores are left out of both).
    """
    fn = "bank_conflict_sweep"
    ss = _each(fn, "strides", strides, "shared_stride", "stride")
    ws = _each(fn, "words", words, "shared_stride", "word")
    iters = _checked(fn, "shared_stride", "iters", iters)
    blocks = _checked(fn, "shared_stride", "blocks", blocks)
    repeat, progress = _repeat(fn, repeat), _flag(fn, "progress", progress)
    cases = [(w, {"stride": s, "iters": iters, "blocks": blocks}) for w in ws for s in ss]
    preds = _predictions("shared_stride", cases)
    reads = blocks * (STRIDE_BLOCK // 32) * iters
    gpu = runtime.is_available()
    rows = []
    out = runtime.empty((blocks * STRIDE_BLOCK,)) if gpu else None
    for (w, p), pred in _progress(list(zip(cases, preds)), len(cases), fn, progress and gpu):
        row = {"word": w, "stride": p["stride"]}
        if gpu:
            r = runtime.bench(shared_stride, p["stride"], word=w, iters=iters, blocks=blocks,
                             out=out, repeat=repeat, warmup=2)
            row["ms"], row["ns/read"] = r.median_ms, r.median_ms * 1e6 / reads
        rows.append(row)
    got = _counters([(shared_stride, (p["stride"],), {"word": w, "iters": iters,
                                                      "blocks": blocks, "out": out})
                     for w, p in cases], STRIDE_METRICS) if gpu else None
    first = {}
    for row, pred, g in zip(rows, preds, got or [None] * len(rows)):
        if gpu:
            first.setdefault(row["word"], row["ms"])
            row["vs stride 1"] = row["ms"] / first[row["word"]]
        for vals, suffix in ((g, ""), (pred, "_model")):
            if vals is None:
                continue
            waves = vals["shared_load_transactions"] / reads
            row["wavefronts/read" + suffix] = waves
            row["conflicts/read" + suffix] = vals["shared_load_bank_conflict"] / reads
    if got is None:                     # the model's numbers are the only ones: no suffix
        for row in rows:
            for k in ("wavefronts/read", "conflicts/read"):
                if k + "_model" in row:
                    row[k] = row.pop(k + "_model")
    src = "measured" if got is not None else "model"
    sources = {"wavefronts/read": src, "conflicts/read": src}
    if got is not None:
        sources.update({"wavefronts/read_model": "model", "conflicts/read_model": "model"})
    if gpu:
        sources.update({"ms": "measured", "ns/read": "measured", "vs stride 1": "measured"})
    title = (f"shared-memory bank conflicts by stride ({blocks} blocks x 8 warps x {iters} "
             "reads)" + ("" if gpu else " (no GPU: model only, times not measured)"))
    return Table(rows, sources=sources, title=title)


# ---- gpumem report: the headline -------------------------------------------------------------
def _headline(measure: bool, quick: bool) -> list[dict]:
    m = n = 4096 if quick else 8192
    shown = ("naive_row", "shared", "padded", "coarsened")
    preds = {v: hl._predict("transpose", v, m=m, n=n) for v in ("shared", "padded")}
    mod = {f"{v}_shared_load_bank_conflict": p["shared_load_bank_conflict"]
           for v, p in preds.items()}
    per = preds["shared"]["shared_load_transactions"] / preds["shared"]["shared_load_requests"]
    mtext = (f"tile[32][32]: {per:.0f} wavefronts per shared load (a column is one bank); "
             f"tile[32][33]: {preds['padded']['shared_load_transactions'] / preds['padded']['shared_load_requests']:.0f}")
    what = f"transpose {m} x {n} float32: naive, shared tiles, padded, coarsened"
    take = "stage the tile in shared memory so both global sides coalesce, and pad its rows"
    if not measure:
        return [hl._unmeasured("transpose", what, "GB/s of each against the device copy, "
                               "and the shared-memory bank conflicts (gpumem.profile)",
                               model=mod, model_text=mtext, takeaway=take)]
    rng = hl._rng()
    a = runtime.to_device(rng.standard_normal((m, n), dtype=np.float32))
    out = runtime.empty((n, m))
    flat, dst = runtime.to_device(rng.standard_normal(m * n, dtype=np.float32)), \
        runtime.empty((m * n,))
    copy = device_copy(dst, flat, repeat=5 if quick else 20, warmup=2)
    res, got = hl._timed({v: (transpose, (a,), {"variant": v, "out": out}) for v in shown},
                         "shared_load_bank_conflict", quick)
    meas = {f"{v}_GB/s": r.gbps for v, r in res.items()}
    meas["device_copy_GB/s"] = copy["GB/s"]
    meas.update({f"{v}_x_copy": r.gbps / copy["GB/s"] for v, r in res.items()})
    text = ", ".join(f"{v} {hl._gbps(r.gbps)} ({r.gbps / copy['GB/s']:.2f}x)"
                     for v, r in res.items()) + f" of the device copy {hl._gbps(copy['GB/s'])}"
    if got is not None:
        meas.update({f"{v}_shared_load_bank_conflict": got[v] for v in ("shared", "padded")})
        text += (f"; bank conflicts shared {got['shared'] or 0:,.0f} / padded "
                 f"{got['padded'] or 0:,.0f} measured")
    best = max(res, key=lambda v: res[v].gbps)
    return [hl._row("transpose", what, measured=meas, model=mod, measured_text=text,
                    model_text=mtext,
                    takeaway=f"{take}: {best} reaches {res[best].gbps / copy['GB/s']:.2f}x "
                             "of a copy")]


def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    size = 4096 if quick else 8192
    strides = (1, 2, 4, 8, 16, 32) if quick else tuple(range(1, 33))
    return [transpose_compare(size, size, repeat=5 if quick else 20, progress=progress),
            bank_conflict_sweep(strides, repeat=3 if quick else 10, progress=progress)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_transpose():
    for v in runtime.variants("transpose"):
        for m, n in ((1, 1), (37, 41), (64, 68), (65, 68), (100, 3)):
            transpose(_f32(m, n), variant=v.name)


def _sanitize_shared_stride():
    for v in runtime.variants("shared_stride"):
        for stride in (1, 2, 7, 32):
            shared_stride(stride, word=v.name, iters=5, blocks=2)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_transpose()
    _sanitize_shared_stride()


# ---- what the shared tests read: a fake GPU's measurements, the model's largest launches ----
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): the naive transpose 6x the copy's
    time, shared memory 2x with its bank conflicts, padded and coarsened near the copy."""
    return {"transpose": gpu.kernel(
                "transpose", {"naive_row": 6.0, "shared": 2.0, "padded": 1.1, "coarsened": 1.05},
                counters={v: {"shared_load_bank_conflict": c} for v, c in (
                    ("naive_row", 0.0), ("shared", 1.6e7), ("padded", 0.0), ("coarsened", 0.0))}),
            "device_copy": gpu.device_copy}


def _model_launches() -> dict:
    """Every transpose variant at the largest launch gpumem accepts (65535 block rows of 32)
    and at 65536^2 (:attr:`Lesson.model_launches`); shared_stride left out."""
    from .. import model

    largest = [("transpose", v, dict(m=65535 * 32, n=2**31 - 65))
               for v in model.families()["transpose"]]
    large = [("transpose", v, dict(m=65536, n=65536)) for v in model.families()["transpose"]]
    return {"largest": largest, "large": large, "copy_engine": [], "left_out": {
        "shared_stride": "moves no global loads: its sizes are tested in tests/test_transpose.py"}}


LESSON = Lesson(
    name='transpose',
    idea='transpose through shared memory: coalesced both ways, and the bank conflicts padding removes',
    families=('transpose', 'shared_stride'),
    exports=('shared_stride', 'transpose'),
    sweeps=('transpose_compare', 'bank_conflict_sweep'),
    notebooks=('09_transpose',),
    benchmark='transpose',
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=('transpose', 'shared_stride'),
    stand_ins=_stand_ins,
    model_launches=_model_launches,
)
