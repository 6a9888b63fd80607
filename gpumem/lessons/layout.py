"""Data layout: how the addresses a warp touches decide what it pays.

:func:`strided_read` walks the coalescing cliff (``a[::stride]``);
:func:`struct_update` and :func:`distance` hold the same data as an array of
structs and as a struct of arrays.  Every function takes float32 NumPy arrays
(and returns NumPy arrays) or :class:`gpumem.DeviceArray` (and returns
DeviceArray); bad arguments raise ``TypeError`` or ``ValueError`` naming the
argument before anything touches the GPU.

The sweeps (:func:`stride_sweep`, :func:`aos_vs_soa`) return a
:class:`gpumem.Table` of time, bandwidth and efficiency columns, measured
where the counters can be read and from :mod:`gpumem.model` otherwise.
"""
from __future__ import annotations

from typing import Iterable, Literal, Sequence, Union

import numpy as np

from .. import _core, runtime
from .._core import DeviceArray
from ..runtime.args import _checked, _given, _indices
from ..tools.sweep import (MAX_N, _choices, _common, _each, _empty, _int, _Point, _random_device,
                           _run)
from ..runtime.table import Table
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools import headline as hl

__all__ = ["strided_read", "struct_update", "distance", "stride_sweep", "aos_vs_soa"]

Array = Union[np.ndarray, DeviceArray]


def strided_read(a: Array, *, stride: int = 1, block: int = 512,
                 out: DeviceArray | None = None):
    """The coalescing cliff: ``C[i] = a[i * stride]``, the same as ``a[::stride]``.

    Lane t of a warp reads ``a[t * stride]``: stride 1 touches 4 sectors per
    warp request, stride 2 eight (50%), stride 8 and beyond one sector per
    lane, 32 in all (12.5%).  The writes stay dense.

    Parameters
    ----------
    a : numpy.ndarray or DeviceArray, float32, 1-D, length n
    stride : int
        1..64 floats.
    block : int
        Threads per block, 1..1024; grid ``ceil(m / block)`` with
        ``m = ceil(n / stride)``.
    out : DeviceArray, optional
        float32, length m.

    Returns
    -------
    numpy.ndarray of length m for an ndarray input, else DeviceArray.
    """
    _given("strided_read", a=a)
    return _core.strided_read(a, **_indices("strided_read", stride=stride, block=block), out=out)


def struct_update(data: Array, *, layout: Literal["aos", "soa"] = "aos", block: int = 512,
                  out: DeviceArray | None = None):
    """AoS vs SoA: ``x + 10`` and ``y + 20`` for n pairs {x, y}.

    Parameters
    ----------
    data : numpy.ndarray or DeviceArray, float32
        ``layout="aos"``: shape (n, 2), row i the struct ``{float x, y}`` of
        element i (4-byte aligned: two 4-byte loads and stores per element,
        each warp request spanning 256 bytes for 128 used, 50%).
        ``layout="soa"``: shape (2, n), row 0 the x's and row 1 the y's (dense
        128-byte requests, 100%).
    layout : {"aos", "soa"}
    block : int
        Threads per block, 1..1024; one element per thread.
    out : DeviceArray, optional
        float32, same shape as ``data``.

    Returns
    -------
    Same shape as ``data``: column (aos) or row (soa) 0 is x + 10, 1 is y + 20.
    """
    _given("struct_update", data=data)
    return _core.struct_update(data, layout=layout, **_indices("struct_update", block=block),
                              out=out)


def distance(points: Array, *, layout: Literal["aos", "soa"] = "aos", block: int = 512,
             out: DeviceArray | None = None):
    """Distance of n points to the origin: ``sqrt(x*x + y*y + z*z)``.

    Rounded step by step in float32 (no fused multiply-add) with an IEEE
    square root, so it equals ``np.sqrt((x*x + y*y) + z*z)`` on float32 bit
    for bit.

    Parameters
    ----------
    points : numpy.ndarray or DeviceArray, float32
        ``layout="aos"``: shape (n, 3), structs ``{float x, y, z}`` (three
        4-byte loads 12 bytes apart per lane).  ``layout="soa"``: shape
        (3, n), rows x, y, z (three dense loads).
    layout : {"aos", "soa"}
    block : int
        Threads per block, 1..1024.
    out : DeviceArray, optional
        float32, shape (n,).

    Returns
    -------
    Shape (n,) float32.
    """
    _given("distance", points=points)
    return _core.distance(points, layout=layout, **_indices("distance", block=block), out=out)


# ---- sweeps ----------------------------------------------------------------------
def stride_sweep(strides: Iterable[int] = (1, 2, 3, 4, 8, 16, 32, 64), n: int = 2**24,
                 block: int = 512, repeat: int = 20, progress: bool = True,
                 metrics: Sequence[str] | None = None) -> Table:
    """:func:`strided_read` (``C = a[::stride]``) against the stride: the coalescing cliff.

    Returns
    -------
    Table with columns stride, m (elements read: ``ceil(n / stride)``), ms,
    GB/s of the useful bytes ``8 * m``, and the metrics.
    """
    fn = "stride_sweep"
    n = _int(fn, "n", n, 1, MAX_N)
    block = _checked(fn, "strided_read", "block", block)
    ss = _each(fn, "strides", strides, "strided_read", "stride")
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)

    def buffers():
        rng = np.random.default_rng(0)
        bufs = {"a": _random_device(rng, n)}
        bufs.update({("out", s): _empty((-(-n // s),)) for s in set(ss)})
        return bufs

    points = []
    for s in ss:
        m = -(-n // s)

        def launch(bufs, s=s):
            return (strided_read, (bufs["a"],),
                    {"stride": s, "block": block, "out": bufs[("out", s)]})

        points.append(_Point({"stride": s, "m": m}, "strided_read", "default",
                             {"n": n, "stride": s, "block": block}, launch))
    return _run(points, buffers, metrics, repeat, progress,
                f"stride sweep: strided_read, n={n}, block={block}", ["stride", "m"])


def aos_vs_soa(n: int = 2**22, block: int = 512, kernels: Sequence[str] = ("struct_update", "distance"),
               repeat: int = 20, progress: bool = True,
               metrics: Sequence[str] | None = None) -> Table:
    """Array of structs vs struct of arrays for :func:`struct_update` and :func:`distance`.

    Returns
    -------
    Table with columns kernel, layout, ms, GB/s (useful bytes ``16 * n`` for
    both) and the metrics, one row per kernel and layout.
    """
    fn = "aos_vs_soa"
    n = _int(fn, "n", n, 1, MAX_N // 3)     # distance's points: 3 n floats
    ks = _choices(fn, "kernels", kernels, ("struct_update", "distance"))
    for k in ks:
        block = _checked(fn, k, "block", block)
    repeat, progress, metrics = _common(fn, repeat, progress, metrics)
    fields = {"struct_update": 2, "distance": 3}

    def buffers():
        rng = np.random.default_rng(0)
        bufs = {}
        for k in ks:
            f = fields[k]
            bufs[(k, "aos")] = _random_device(rng, n, f)
            bufs[(k, "soa")] = _random_device(rng, f, n)
            out_shape = (n,) if k == "distance" else None
            bufs[(k, "aos", "out")] = _empty(out_shape or (n, f))
            bufs[(k, "soa", "out")] = _empty(out_shape or (f, n))
        return bufs

    points = []
    for k in ks:
        for layout in (v[1] for v in _core.variants(k)):    # "aos", "soa"
            def launch(bufs, k=k, layout=layout):
                return (globals()[k], (bufs[(k, layout)],),     # struct_update or distance
                        {"layout": layout, "block": block, "out": bufs[(k, layout, "out")]})

            points.append(_Point({"kernel": k, "layout": layout}, k, layout,
                                 {"n": n, "block": block}, launch))
    return _run(points, buffers, metrics, repeat, progress,
                f"AoS vs SoA: n={n}, block={block}", ["kernel", "layout"])


# ---- gpumem report: the headline and the full sweeps ------------------------------------
_LAYOUT_NAMES = {"aos": "AoS", "soa": "SoA"}


def _headline(measure: bool, quick: bool) -> list[dict]:
    n, block, layouts = (2**22 if quick else 2**24), 512, ("aos", "soa")
    preds = {lay: hl._predict("struct_update", lay, n=n, block=block) for lay in layouts}
    mod = {f"{lay}_gld_efficiency": preds[lay]["gld_efficiency"] for lay in layouts}
    mtext = (f"gld efficiency AoS {hl._pct(preds['aos']['gld_efficiency'])}, SoA "
             f"{hl._pct(preds['soa']['gld_efficiency'])}")
    what = f"struct_update, array of structs vs struct of arrays (n = {hl._pow2(n)})"
    take = "each AoS load uses half of every sector it pulls in"
    if not measure:
        return [hl._unmeasured("layout", what, "GB/s of both layouts and the gld_efficiency "
                            "counter", model=mod, model_text=mtext, takeaway=take)]
    rng = hl._rng()
    data = {"aos": runtime.to_device(rng.standard_normal((n, 2), dtype=np.float32)),
            "soa": runtime.to_device(rng.standard_normal((2, n), dtype=np.float32))}
    outs = {lay: runtime.empty(data[lay].shape) for lay in layouts}
    res, got = hl._timed({lay: (struct_update, (data[lay],),
                             {"layout": lay, "block": block, "out": outs[lay]})
                       for lay in layouts}, "gld_efficiency", quick)
    meas = {f"{lay}_GB/s": r.gbps for lay, r in res.items()}
    text = f"AoS {hl._gbps(res['aos'].gbps)}, SoA {hl._gbps(res['soa'].gbps)}"
    if got is not None:
        meas.update({f"{lay}_gld_efficiency": g for lay, g in got.items()})
        text += ("; gld efficiency " + ", ".join(
            f"{_LAYOUT_NAMES[lay]} {hl._pct(meas[f'{lay}_gld_efficiency'])} "
            f"measured / {hl._pct(preds[lay]['gld_efficiency'])} model" for lay in layouts))
    ratio = res["soa"].gbps / res["aos"].gbps
    return [hl._row("layout", what, measured=meas, model=mod, measured_text=text, model_text=mtext,
                 takeaway=f"{take}; SoA runs at {ratio:.2f}x the AoS bandwidth here (L1 "
                          "serves much of what AoS skipped)")]

def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    n, repeat = (2**22, 5) if quick else (2**24, 20)
    return [stride_sweep(n=n, repeat=repeat, progress=progress),
            aos_vs_soa(n=n, repeat=repeat, progress=progress)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_strided_read():
    for stride in (1, 2, 7, 32, 64):
        for block in (1, 100, 512):
            strided_read(_f32(1001), stride=stride, block=block)


def _sanitize_layouts(fn, fields):
    for v in runtime.variants(fn.__name__):
        shape = (1001, fields) if v.name == "aos" else (fields, 1001)
        for block in (1, 100, 1024):
            fn(_f32(*shape), layout=v.name, block=block)


def _sanitize_struct_update():
    _sanitize_layouts(struct_update, 2)


def _sanitize_distance():
    _sanitize_layouts(distance, 3)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_strided_read()
    _sanitize_struct_update()
    _sanitize_distance()


# ---- what the shared tests read: a fake GPU's measurements, argument strategies, the model's
# largest launches -----------------------------------------------------------------------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): AoS at half the speed and half the
    load efficiency of SoA."""
    return {"struct_update": gpu.kernel(
        "struct_update", {"aos": 2.0, "soa": 1.0}, select="layout",
        counters={"aos": {"gld_efficiency": 50.0}, "soa": {"gld_efficiency": 100.0}})}


def _arguments(st) -> dict:
    """An array of structs is (n, 2) or (n, 3) floats (:attr:`Lesson.arguments`)."""
    n = st.integers(1, 300)
    return {"struct_update": n.map(lambda k: {"data": np.ones((k, 2), np.float32)}),
            "distance": n.map(lambda k: {"points": np.ones((k, 3), np.float32)})}


def _model_launches() -> dict:
    """Every variant at the largest launch gpumem accepts (2^31 - 1 blocks of 1024) and at
    n = 2^31 (:attr:`Lesson.model_launches`)."""
    from .. import model

    g = 2**31 - 1
    largest = [("strided_read", "default", dict(n=g * 1024 * 64, block=1024, stride=64)),
               ("struct_update", "aos", dict(n=g * 1024, block=1024)),
               ("struct_update", "soa", dict(n=g * 1024 - 7, block=1024)),
               ("distance", "aos", dict(n=g * 1024, block=1024)),
               ("distance", "soa", dict(n=g * 1024 - 1, block=1024))]
    large = [(f, v, dict(n=2**31)) for f in LESSON.model for v in model.families()[f]]
    return {"largest": largest, "large": large, "copy_engine": [], "left_out": {}}



def _model_counters(cc) -> dict:
    """Launches for Nsight Compute's counters (:attr:`Lesson.model_counters`): every
    stride, strides 3 and 64 at every block size, both layouts at every block size (the
    two sizes taking turns across the blocks)."""
    blocks, ns = (32, 100, 256, 512, 1024), (1 << 20, 1_000_003)
    cases = [("strided_read", "default", dict(n=ns[x % 2], stride=s, block=blocks[x % 5]))
             for x, s in enumerate((1, 2, 3, 4, 8, 16, 32, 64))]
    cases += [("strided_read", "default", dict(n=ns[1], stride=s, block=b))
              for s in (3, 64) for b in blocks]
    cases += [(f, v, dict(n=ns[(x + y) % 2], block=b)) for f in ("struct_update", "distance")
              for y, v in enumerate(("aos", "soa")) for x, b in enumerate(blocks)]
    return {"cases": cases, "helpers": (), "over": {}}

LESSON = Lesson(
    name='layout',
    idea='data layout: strides, and arrays of structs against structs of arrays',
    families=('strided_read', 'struct_update', 'distance'),
    exports=('distance', 'strided_read', 'struct_update'),
    sweeps=('stride_sweep', 'aos_vs_soa'),
    notebooks=('03_layout',),
    benchmark=None,
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    model=('strided_read', 'struct_update', 'distance'),
    stand_ins=_stand_ins,
    arguments=_arguments,
    model_launches=_model_launches,
    model_counters=_model_counters,
)
