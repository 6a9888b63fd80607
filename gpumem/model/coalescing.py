"""Coalescing: how many requests, sectors (or lines) and bytes one warp-wide
global memory instruction costs.

The model (Volta and newer, and what Nsight Compute counts there)
-----------------------------------------------------------------
* A warp-wide load or store instruction with at least one active lane sends
  **one request** to L1TEX, whatever the access width (4, 8 or 16 bytes per
  lane).  An instruction whose lanes are all inactive (exited, branched
  around, or predicated off) sends none.
* The request costs one **transaction** per distinct 32-byte **sector** that
  the active lanes' bytes fall in (``l1tex__t_sectors_pipe_lsu_mem_global_op_*``).
  With ``granularity=128`` the unit is the 128-byte **line** instead: the
  unit of Fermi and Kepler global loads cached in L1 (the book's
  ``gld_transactions`` with ``-Xptxas -dlcm=ca``).
* **Requested bytes** are the distinct bytes the active lanes ask for: lanes
  reading the same word ask for it once, so a warp whose 32 lanes read one
  4-byte word requests 4 bytes from one sector (12.5 %).  This is how the
  hardware forms Nsight Compute's
  ``smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct`` (the
  nvprof ``gld_efficiency``): measured on an H100, the naive matmul at
  64x64x64 with 8x8 blocks -- a warp reads 4 words of A, each broadcast to 8
  lanes, and 8 words of B, each read by 4 lanes: 48 distinct bytes from 5
  sectors -- reads 30.00 %, where counting every lane would give 160 %.

Efficiency = requested bytes / (transactions x granularity) x 100.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import active_mask, address_array, check_range, index

__all__ = ["CoalesceResult", "coalesce", "coalesce_warps", "WarpCoalescing"]

_GRANULARITIES = (32, 128)
_WIDTHS = (1, 2, 4, 8, 16)


def _check_granularity(granularity: int, fn: str = "coalesce") -> int:
    g = index(fn, "granularity", granularity)
    if g not in _GRANULARITIES:
        raise ValueError(f"{fn}: granularity={g!r} is not allowed; granularity must be 32 "
                         "(bytes per sector, every GPU since Maxwell) or 128 (bytes per L1 line, "
                         "Fermi/Kepler cached loads)")
    return g


def _check_width(width: int, fn: str = "coalesce") -> int:
    return index(fn, "width", width, allowed=_WIDTHS)


def efficiency(bytes_requested: float, transactions: float, granularity: int = 32) -> float:
    """Requested bytes per transferred byte, in percent (0.0 when nothing moved)."""
    if transactions == 0:
        return 0.0
    return 100.0 * float(bytes_requested) / (float(transactions) * granularity)


@dataclass(frozen=True)
class CoalesceResult:
    """What one (or many) warp-wide memory instruction(s) cost.

    Attributes
    ----------
    requests : int
        Warp-level instructions with at least one active lane.
    transactions : int
        Distinct ``granularity``-byte sectors (or lines) touched, summed over
        the instructions.
    bytes_requested : int
        Bytes the active lanes asked for (``width`` per active lane).
    granularity : int
        32 (sectors) or 128 (lines).
    """

    requests: int
    transactions: int
    bytes_requested: int
    granularity: int = 32

    @property
    def sectors(self) -> int:
        """Alias of :attr:`transactions` (they are sectors when granularity is 32)."""
        return self.transactions

    @property
    def efficiency(self) -> float:
        """Requested bytes / transferred bytes, in percent."""
        return efficiency(self.bytes_requested, self.transactions, self.granularity)

    @property
    def transactions_per_request(self) -> float:
        return self.transactions / self.requests if self.requests else 0.0


def _lane_units(addresses: np.ndarray, width: int, granularity: int):
    """First and last sector (line) index that each lane's bytes fall in."""
    first = addresses // granularity
    last = (addresses + (width - 1)) // granularity
    return first, last


def coalesce(addresses, width: int = 4, granularity: int = 32) -> CoalesceResult:
    """Requests, transactions and efficiency of ONE warp-wide instruction.

    Parameters
    ----------
    addresses : sequence of int
        Byte addresses of the **active** lanes only (at most 32; duplicates
        allowed: lanes reading the same word, which count once), integers in
        ``0 <= a < 2**62``.  Empty means no active lane: no request at all.
    width : {1, 2, 4, 8, 16}
        Bytes each lane accesses (4 for ``float``, 16 for ``float4``).
    granularity : {32, 128}
        Transaction unit: 32-byte sectors (default) or 128-byte L1 lines.

    Returns
    -------
    CoalesceResult

    Raises
    ------
    TypeError
        Addresses that are not integers (floats, bools); width or granularity
        not an int.
    ValueError
        More than 32 addresses, a negative or too large address, a width or
        granularity not allowed.

    Examples
    --------
    >>> coalesce([4 * i for i in range(32)]).transactions          # aligned floats
    4
    >>> coalesce([4 * (i + 1) for i in range(32)]).transactions    # off by one float
    5
    """
    width = _check_width(width)
    granularity = _check_granularity(granularity)
    a = address_array("coalesce", addresses, max_lanes=32).ravel()
    if a.size == 0:
        return CoalesceResult(0, 0, 0, granularity)
    check_range("coalesce", a)
    first, last = _lane_units(a, width, granularity)
    units = np.unique(np.concatenate([first, last]))
    return CoalesceResult(1, int(units.size), int(width * np.unique(a).size), granularity)


@dataclass(frozen=True)
class WarpCoalescing:
    """Per-instruction results of :func:`coalesce_warps` (arrays, one entry per warp)."""

    requests: np.ndarray
    transactions: np.ndarray
    bytes_requested: np.ndarray
    granularity: int = 32

    def total(self) -> CoalesceResult:
        """The sums over all instructions."""
        return CoalesceResult(int(self.requests.sum()), int(self.transactions.sum()),
                              int(self.bytes_requested.sum()), self.granularity)


def coalesce_warps(addresses, width: int = 4, granularity: int = 32, active=None) -> WarpCoalescing:
    """:func:`coalesce` for many warp instructions at once (vectorized).

    Parameters
    ----------
    addresses : array_like of int, shape (warps, lanes)
        Byte address of each lane (lanes <= 32), integers; the active lanes'
        must be in ``0 <= a < 2**62``, inactive lanes may hold any integer.
    width, granularity
        As in :func:`coalesce`.
    active : array_like of bool, shape (warps, lanes), optional
        Which lanes take part (default: all).

    Returns
    -------
    WarpCoalescing
        Arrays of requests (0 or 1), transactions and requested bytes per warp.

    Raises
    ------
    TypeError
        Non-integer addresses, non-boolean ``active``.
    ValueError
        A shape other than (warps, <= 32), a negative or too large active
        address, a width or granularity not allowed.
    """
    fn = "coalesce_warps"
    width = _check_width(width, fn)
    granularity = _check_granularity(granularity, fn)
    a = _warp_rows(fn, addresses)
    act = active_mask(fn, active, a.shape)
    check_range(fn, a, act)
    first, last = _lane_units(a, width, granularity)
    # Every lane touches one or two units; inactive lanes do not count.
    distinct = _distinct_per_row(np.concatenate([first, last], axis=1),
                                 np.concatenate([act, act], axis=1))
    nact = act.sum(axis=1)
    # requested bytes: distinct addresses of the active lanes (a broadcast counts once)
    nuniq = _distinct_per_row(a, act)
    return WarpCoalescing((nact > 0).astype(np.int64), distinct, nuniq * width, granularity)


def _warp_rows(fn: str, addresses) -> np.ndarray:
    """``addresses`` as an int64 (warps, lanes <= 32) array (one row when 1-D);
    the shape is checked before any conversion."""
    shape = np.shape(addresses)
    if len(shape) == 1:
        shape = (1,) + shape
    if len(shape) != 2 or shape[1] > 32:
        raise ValueError(f"{fn}: addresses must have shape (warps, <=32 lanes), not "
                         f"{np.shape(addresses)}")
    return address_array(fn, addresses).reshape(shape)


def _distinct_per_row(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """How many distinct non-negative values each row holds where ``valid``:
    the others become -1, and after sorting each change of value is one more."""
    u = np.where(valid, values, -1)
    u.sort(axis=1)
    ok = u >= 0
    return ok[:, 0].astype(np.int64) + np.count_nonzero((u[:, 1:] != u[:, :-1]) & ok[:, 1:],
                                                        axis=1)


# ---- fast forms used by the kernel generators ------------------------------
def runs_units(first: np.ndarray, last: np.ndarray, nactive: np.ndarray) -> np.ndarray:
    """Distinct units touched by instructions made of sorted runs.

    Each instruction (row) is made of up to R runs of bytes, in increasing
    address order and not overlapping (one row of a matrix each, say); run j
    covers units ``first[:, j] .. last[:, j]``.  Only the first
    ``nactive[row]`` runs take part.  Two neighbouring runs can share at most
    their boundary unit, so the count is the sum of the run lengths less the
    shared boundaries.
    """
    first = np.asarray(first, np.int64)
    last = np.asarray(last, np.int64)
    r = first.shape[1]
    j = np.arange(r)
    on = j[None, :] < np.asarray(nactive)[:, None]
    total = np.where(on, last - first + 1, 0).sum(axis=1)
    if r > 1:
        both = on[:, 1:]  # run j+1 active implies run j active (prefix)
        shared = both & (last[:, :-1] == first[:, 1:])
        total = total - shared.sum(axis=1)
    return total


def affine_units(first_addr: np.ndarray, count: np.ndarray, stride: int, width: int,
                 granularity: int) -> np.ndarray:
    """Distinct units of instructions whose active lanes form an arithmetic sequence.

    Instruction ``i`` has ``count[i]`` active lanes (0..32) at byte addresses
    ``first_addr[i] + stride * j``; each touches ``width`` bytes.  The answer
    depends on the start only through ``first_addr mod granularity``, so each
    distinct (start mod granularity, count) class is worked out once, lane by
    lane, and looked up: a launch of millions of warps costs a few array
    passes.
    """
    first_addr = np.asarray(first_addr, np.int64)
    count = np.asarray(count, np.int64)
    if stride != 0 and stride < width:
        raise ValueError("affine_units: lanes must not overlap (stride >= width, or 0)")
    if first_addr.size == 0:
        return np.zeros(0, np.int64)
    g = granularity
    key = (first_addr % g) * 33 + count
    uniq, inv = np.unique(key, return_inverse=True)
    m = (uniq // 33)[:, None]
    c = uniq % 33
    if stride == 0:  # every lane on the same bytes: one lane's worth
        c = np.minimum(c, 1)
    lanes = np.arange(32)[None, :]
    start = m + stride * lanes
    f, l = start // g, (start + width - 1) // g
    units = runs_units(f, l, c)
    return units[inv.reshape(first_addr.shape)]
