"""Global-memory access patterns: aligned vs offset reads and writes, load
paths, unrolling, strides, AoS vs SoA, vector copies.

Every function takes float32 NumPy arrays (and returns NumPy arrays) or
:class:`gpumem.DeviceArray` (and returns DeviceArray, with no host copies).
Each launch is timed and leaves a :class:`gpumem.LaunchRecord` whose
``params`` are the names :func:`gpumem.model.predict` takes; ``bytes`` are the
*useful* bytes (what the threads ask for), so GB/s from :func:`gpumem.bench`
is the effective bandwidth.  Bad arguments raise ``TypeError`` or
``ValueError`` naming the argument before anything touches the GPU.
"""
from __future__ import annotations

from typing import Literal, Union

import numpy as np

from . import _core
from ._core import DeviceArray

__all__ = ["read_offset", "write_offset", "strided_read", "struct_update", "distance", "copy",
           "CACHE_PATHS"]

Array = Union[np.ndarray, DeviceArray]

#: The load paths of :func:`read_offset` and what each becomes on sm_90.
CACHE_PATHS = {
    "default": "ld.global (LDG.E): cached in L1 and L2",
    "ca": "ld.global.ca (LDG.E.STRONG.SM): cache at all levels",
    "cg": "ld.global.cg (LDG.E.STRONG.GPU): L2 only, bypasses L1",
    "ldg": "ld.global.nc via __ldg (LDG.E.CONSTANT): the read-only path",
    "cs": "ld.global.cs (LDG.E.EF): streaming, evict first",
}


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
    return _core.read_offset(a, b, offset=offset, unroll=unroll, block=block, cache=cache, out=out)


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
    return _core.write_offset(a, b, offset=offset, unroll=unroll, block=block, out=out)


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
    return _core.strided_read(a, stride=stride, block=block, out=out)


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
    return _core.struct_update(data, layout=layout, block=block, out=out)


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
    return _core.distance(points, layout=layout, block=block, out=out)


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
    return _core.copy(a, variant=variant, block=block, out=out)
