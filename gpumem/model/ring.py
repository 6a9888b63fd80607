"""The latency ladder's ring on paper: the order in which the latency kernels'
pointer chase visits its nodes (a 4-round Feistel permutation of the node
indices with cycle walking, the same 32-bit arithmetic as ``cuda/ladder.cu``),
so a chase's end can be checked on the host without a GPU.

Pure Python and NumPy, like the rest of :mod:`gpumem.model`.  The limits below
are the latency kernel's (``gpumem._core.args("latency")``; a test checks them).
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from . import _check

__all__ = ["chain_order", "latency_chain", "chain_image", "latency_reference",
           "MAX_WORKING_SET", "MAX_STRIDE", "MAX_STEPS", "MAX_WARMUP", "RINGS"]

MAX_WORKING_SET = 1 << 32    #: bytes: the largest ring
MAX_STRIDE = 1 << 20         #: bytes between nodes, at most
MAX_STEPS = 1 << 20          #: timed loads per lane, at most
MAX_WARMUP = 2**31 - 1       #: untimed loads per lane, at most
#: The rings :func:`latency` chases: gpumem's keyed shuffle, and the papers' ascending ring
#: of 4-byte indices ``stride`` bytes apart (a pure copy of the C table's choices, tested
#: equal to them)
RINGS = ("shuffled", "strided")


def _int(fn: str, name: str, v: Any, lo: int, hi: int) -> int:
    """``v`` (anything with ``__index__``, not a bool) as an int in ``lo..hi``."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}")
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be {lo}..{hi}")
    return v


_M32 = 0xFFFFFFFF


def _hash(x: np.ndarray) -> np.ndarray:
    """The kernels' 32-bit mixer, on uint64 arrays holding 32-bit values."""
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & np.uint64(_M32)
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & np.uint64(_M32)
    return x ^ (x >> np.uint64(16))


def _perm(n: int, seed: int) -> tuple[int, int, np.ndarray]:
    bits = 1
    while (1 << bits) < n:
        bits += 1
    wl = bits // 2
    keys = _hash(np.array([(seed + 0x9E3779B9 * (r + 1)) & _M32 for r in range(4)],
                          dtype=np.uint64))
    return wl, bits - wl, keys


def _feistel(x: np.ndarray, wl: int, wr: int, keys: np.ndarray) -> np.ndarray:
    left, right = x >> np.uint64(wr), x & np.uint64((1 << wr) - 1)
    for k in range(4):
        f = _hash(right ^ keys[k]) & np.uint64((1 << wl) - 1)
        left, right = right, left ^ f
        wl, wr = wr, wl
    return (left << np.uint64(wr)) | right


def _order(n: int, seed: int, positions: np.ndarray) -> np.ndarray:
    wl, wr, keys = _perm(n, seed)
    x = _feistel(positions.astype(np.uint64), wl, wr, keys)
    out = x >= np.uint64(n)
    while out.any():                     # cycle walking: stay inside [0, n)
        x[out] = _feistel(x[out], wl, wr, keys)
        out = x >= np.uint64(n)
    return x.astype(np.int64)


def chain_order(n: int, seed: int = 0, positions: Sequence[int] | np.ndarray | None = None
                ) -> np.ndarray:
    """The order in which a chase of ``n`` nodes visits them: ``order[i]`` is the node
    visited ``i``-th (a permutation of ``0..n-1``), as the kernels compute it.

    Parameters
    ----------
    n : int
        Nodes, 1 .. 2**31 - 1.
    seed : int
        0 .. 2**32 - 1: picks the permutation.
    positions : array of int, optional
        Only these positions (each ``0 <= i < n``); default all ``n``.

    Returns
    -------
    numpy.ndarray of int64
    """
    fn = "chain_order"
    n, seed = _int(fn, "n", n, 1, 2**31 - 1), _int(fn, "seed", seed, 0, _M32)
    if positions is None:
        pos = np.arange(n, dtype=np.int64)
    else:
        pos = np.asarray(positions)
        if pos.dtype.kind not in "iu":
            raise TypeError(f"{fn}: positions must be integers, not dtype {pos.dtype}")
        if pos.size and (pos.min() < 0 or pos.max() >= n):
            raise ValueError(f"{fn}: positions must be 0..n-1 = 0..{n - 1}")
    return _order(n, seed, pos.astype(np.int64).reshape(-1)).reshape(np.shape(pos))


def _ring(fn: str, working_set: Any, stride: Any) -> tuple[int, int, int]:
    """(working_set, stride, n) checked as the latency kernel checks them."""
    ws = _int(fn, "working_set", working_set, 8, MAX_WORKING_SET)
    stride = _int(fn, "stride", stride, 8, MAX_STRIDE)
    if stride % 8:
        raise ValueError(f"{fn}: stride={stride} is not allowed; stride must be a multiple of 8 "
                         f"bytes (a node holds an 8-byte pointer) from 8 to {MAX_STRIDE}")
    if ws < stride or ws % stride:
        raise ValueError(f"{fn}: working_set={ws} is not allowed with stride={stride}; "
                         "working_set must be a whole number (>= 1) of strides: the ring has "
                         "working_set / stride nodes")
    return ws, stride, ws // stride


def latency_chain(working_set: int, stride: int = 128, seed: int = 0) -> np.ndarray:
    """The ring as a next-index array: ``nxt[j]`` is the node after node ``j`` (node ``j``
    sits at byte ``j * stride`` of the working set).  One cycle through all
    ``working_set // stride`` nodes.  For rings a NumPy array can hold."""
    _, _, n = _ring("latency_chain", working_set, stride)
    seed = _int("latency_chain", "seed", seed, 0, _M32)
    order = _order(n, seed, np.arange(n, dtype=np.int64))
    nxt = np.empty(n, dtype=np.int64)
    nxt[order] = np.roll(order, -1)
    return nxt


def chain_image(working_set: int, stride: int = 128, seed: int = 0) -> np.ndarray:
    """The ring as the ``shared`` and ``constant`` chases hold it: ``working_set // 4``
    uint32 words, word ``j * stride / 4`` holding the byte offset of node ``j``'s
    successor, every other word 0.  (The global chases hold an 8-byte pointer,
    the buffer's address plus that offset, at the same place.)"""
    ws, stride, _ = _ring("chain_image", working_set, stride)
    nxt = latency_chain(ws, stride, _int("chain_image", "seed", seed, 0, _M32))
    img = np.zeros(ws // 4, dtype=np.uint32)
    img[np.arange(len(nxt)) * (stride // 4)] = (nxt * stride).astype(np.uint32)
    return img


def latency_reference(working_set: int, *, stride: int = 128, lanes: int = 1, steps: int = 8192,
                      warmup: int = 0, seed: int = 0, ring: str = "shuffled") -> np.ndarray:
    """Where each lane of :func:`latency` ends: lane ``l`` starts at position
    ``l * n // lanes`` of the ring and takes ``warmup + steps`` steps, so it ends at
    node ``order[(l * n // lanes + warmup + steps) % n]`` -- with ``ring="strided"``
    (the papers' ascending ring) at node ``(l * n // lanes + warmup + steps) % n``.

    Returns
    -------
    numpy.ndarray of int64, one node per lane.
    """
    fn = "latency_reference"
    _, _, n = _ring(fn, working_set, stride)
    lanes, steps = _int(fn, "lanes", lanes, 1, 32), _int(fn, "steps", steps, 1, MAX_STEPS)
    warmup, seed = _int(fn, "warmup", warmup, 0, MAX_WARMUP), _int(fn, "seed", seed, 0, _M32)
    _check.choice(fn, "ring", ring, RINGS)
    start = np.arange(lanes, dtype=np.int64) * n // lanes
    at = (start + warmup + steps) % n
    return at if ring == "strided" else _order(n, seed, at)
