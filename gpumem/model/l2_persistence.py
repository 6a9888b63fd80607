"""The l2_persistence lesson's kernel (``cuda/l2_persistence.cu``): what one
``hot_cold`` launch asks of the memory system, counted without a GPU.

Thread ``i`` (one per cold element, ``block`` threads per block) loads
``cold[i]``, then ``hot[(i + j*n_cold) % n_hot]`` for ``j = 0 .. reuse-1``, and
stores ``out[i]``.  Counted here, exactly, for arrays that start on a 32-byte
boundary (gpumem's allocations start on 256 bytes):

* the bytes the threads request: ``4 n_cold`` of cold, ``4 reuse n_cold`` of
  the hot set, ``4 n_cold`` of out -- the hot set is ``4 n_hot`` distinct bytes,
  each requested ``reuse n_cold / n_hot`` times on average;
* the global load and store requests (one per warp instruction) and the
  32-byte sectors they touch (``gld_transactions``, ``gst_transactions``): a
  warp's 32 hot indices are consecutive modulo ``n_hot``, one run or two
  where they wrap, the whole hot set where ``n_hot`` is at most 32.

What L2 then does with those sectors -- which hot sectors are still there when
they are read again -- depends on the replacement policy and on the
access-policy window; the lesson measures it (``l2_hit_rate``).
:func:`reuse_distance_bytes` gives the footprint between two reads of one hot
element, the number to hold against the L2 size.
"""
from __future__ import annotations

import math

import numpy as np

from ._check import index

__all__ = ["hot_cold_bytes", "hot_cold_counts", "reuse_distance_bytes", "MAX_REUSE"]

WARP = 32
SECTOR = 32
MAX_REUSE = 64
_MAX_N = (2**31 - 1) * 256


def _sectors(first: np.ndarray, end: np.ndarray) -> np.ndarray:
    """32-byte sectors of floats [first, end) (end > first), from a 32-byte-aligned base."""
    return (4 * end - 1) // SECTOR - (4 * first) // SECTOR + 1


def hot_cold_bytes(n_hot: int, n_cold: int, reuse: int = 2) -> dict:
    """The bytes one ``hot_cold`` launch requests (no sector counting: constant time).

    Returns
    -------
    dict: ``hot_bytes``, ``cold_bytes``, ``out_bytes``, ``bytes`` (their sum),
    ``hot_set_bytes``.
    """
    fn = "hot_cold_bytes"
    n_hot = index(fn, "n_hot", n_hot, 1, _MAX_N)
    n_cold = index(fn, "n_cold", n_cold, 1, _MAX_N)
    reuse = index(fn, "reuse", reuse, 1, MAX_REUSE)
    return {"hot_bytes": 4 * reuse * n_cold, "cold_bytes": 4 * n_cold, "out_bytes": 4 * n_cold,
            "bytes": 4 * n_cold * (2 + reuse), "hot_set_bytes": 4 * n_hot}


def hot_cold_counts(n_hot: int, n_cold: int, reuse: int = 2, *, block: int = 256) -> dict:
    """What one ``hot_cold`` launch requests (either variant, with or without a window:
    the window changes what L2 keeps, not what the threads ask for).

    Returns
    -------
    dict: ``hot_bytes`` (requested), ``cold_bytes``, ``out_bytes``, ``bytes`` (their sum:
    the variant table's ``4*n_cold*(2 + reuse)``), ``hot_set_bytes`` (distinct),
    ``gld_requests``, ``gld_transactions`` (cold's and the hot set's sectors: also
    ``cold_sectors`` and ``hot_sectors``), ``gst_requests``, ``gst_transactions``,
    ``blocks``.
    """
    fn = "hot_cold_counts"
    n_hot = index(fn, "n_hot", n_hot, 1, _MAX_N)
    n_cold = index(fn, "n_cold", n_cold, 1, _MAX_N)
    reuse = index(fn, "reuse", reuse, 1, MAX_REUSE)
    block = index(fn, "block", block, 32, 1024)
    if block % WARP:
        raise ValueError(f"{fn}: block={block} is not a multiple of 32")
    warps = math.ceil(n_cold / WARP)
    a = np.arange(warps, dtype=np.int64) * WARP           # each warp's first element
    length = np.minimum(WARP, n_cold - a)                  # its active lanes
    cold_sectors = int(_sectors(a, a + length).sum())
    hot_sectors = 0
    whole = (4 * n_hot - 1) // SECTOR + 1
    for j in range(reuse):
        s = (a + j * (n_cold % n_hot)) % n_hot             # start of the run, mod n_hot
        e = s + length
        one = _sectors(s, np.minimum(e, n_hot))
        wrapped = e > n_hot
        tail = np.where(wrapped, e - n_hot, 1)
        second = np.where(wrapped, _sectors(np.zeros_like(tail), tail), 0)
        # the two runs [s, n_hot) and [0, e - n_hot) share sectors where they meet
        overlap = np.where(wrapped, np.maximum(0, (4 * tail - 1) // SECTOR
                                              - (4 * s) // SECTOR + 1), 0)
        per = np.where(length >= n_hot, whole, one + second - overlap)
        hot_sectors += int(per.sum())
    return {
        **hot_cold_bytes(n_hot, n_cold, reuse),
        "gld_requests": warps * (1 + reuse), "cold_sectors": cold_sectors,
        "hot_sectors": hot_sectors, "gld_transactions": cold_sectors + hot_sectors,
        "gst_requests": warps, "gst_transactions": cold_sectors,
        "blocks": math.ceil(n_cold / block),
    }


def reuse_distance_bytes(n_hot: int, reuse: int = 2) -> int:
    """Bytes that flow through L2 between two reads of one hot element, on average:
    the whole hot set (``4 n_hot``) plus the cold elements read and the out elements
    written meanwhile (``2 * 4 n_hot / reuse``).  Without a window, the hot set can stay
    in an LRU-like L2 only where this is well below the L2's size."""
    fn = "reuse_distance_bytes"
    n_hot = index(fn, "n_hot", n_hot, 1, _MAX_N)
    reuse = index(fn, "reuse", reuse, 1, MAX_REUSE)
    return 4 * n_hot + (8 * n_hot) // reuse
