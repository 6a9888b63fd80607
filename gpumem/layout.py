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

from . import _core
from ._core import DeviceArray
from ._names import _given, _indices
from ._sweep import MAX_N, _choices, _common, _empty, _int, _ints, _Point, _random_device, _run
from ._table import Table

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
    block = _int(fn, "block", block, 1, 1024)
    ss = _ints(fn, "strides", strides, 1, 64)
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
    block = _int(fn, "block", block, 1, 1024)
    ks = _choices(fn, "kernels", kernels, ("struct_update", "distance"))
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
