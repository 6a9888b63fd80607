"""Shared-memory banks: how many wavefronts one warp's shared access takes.

Shared memory is 32 banks, each 4 bytes wide; byte address ``a`` lives in
bank ``(a // 4) % 32``.  In one wavefront every bank delivers one 4-byte
word, to any number of lanes (lanes reading the same word get it by
broadcast, no conflict).  A warp whose lanes need ``w`` *different* words of
one bank needs ``w`` wavefronts: a ``w``-way bank conflict, ``w - 1`` extra
wavefronts (what Nsight Compute's ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared``
and nvprof's ``shared_load_bank_conflict`` count).

Wider accesses: an 8-byte access is served half a warp at a time, a 16-byte
access a quarter warp at a time (each group of lanes asks for 128 bytes at
most, one wavefront when conflict-free); the groups' wavefronts add up and
the ideal is one wavefront per group with an active lane.  Except: the two
quarters of a half warp share one group when together they need at most 128
bytes, each quarter's distinct 16-byte words counted apart -- so a float4
that every lane reads (a broadcast) takes 2 wavefronts, not 4, and one that
each quarter reads for all its lanes takes 2 as well; a quarter that reads 8
different float4s still takes a wavefront of its own, even when the other
quarter reads the same ones (measured on an H100: the float4 shared loads of
gpumem's tiled, register_tiled and warptiled matmuls).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import active_mask, address_array, check_range, index
from .coalescing import _warp_rows

__all__ = ["BankResult", "bank_conflicts", "bank_conflicts_warps", "BANKS", "BANK_WIDTH"]

BANKS = 32
BANK_WIDTH = 4


@dataclass(frozen=True)
class BankResult:
    """Wavefronts and conflicts of one warp-wide shared-memory access.

    Attributes
    ----------
    wavefronts : int
        Passes the shared-memory pipeline needs.
    ideal_wavefronts : int
        Passes without conflicts (1 for 4-byte accesses; one per half warp
        for 8-byte, per quarter warp for 16-byte accesses with active lanes,
        per half warp where its two quarters together ask for <= 128 bytes).
    conflicts : int
        ``wavefronts - ideal_wavefronts``: the extra passes.
    ways : int
        The worst bank's number of distinct words (the "n-way" conflict).
    banks : tuple of int
        The bank of each active lane's first word, in lane order.
    """

    wavefronts: int
    ideal_wavefronts: int
    conflicts: int
    ways: int
    banks: tuple

    @property
    def conflict_free(self) -> bool:
        return self.conflicts == 0


def bank_conflicts(addresses, width: int = 4) -> BankResult:
    """Wavefronts and bank conflicts of ONE warp's shared-memory access.

    Parameters
    ----------
    addresses : sequence of int
        Byte addresses (relative to the start of shared memory) of the
        **active** lanes, in lane order (at most 32).
    width : {4, 8, 16}
        Bytes per lane.

    Returns
    -------
    BankResult

    Raises
    ------
    TypeError
        Non-integer addresses or width.
    ValueError
        More than 32 addresses, a negative or unaligned address, a width
        other than 4, 8 or 16.

    Examples
    --------
    >>> bank_conflicts([4 * t for t in range(32)]).conflicts          # stride 1
    0
    >>> bank_conflicts([8 * t for t in range(32)]).ways               # stride 2: 2-way
    2
    >>> bank_conflicts([4 * 32 * t for t in range(32)]).wavefronts    # column of a 32x32 tile
    32
    >>> bank_conflicts([4 * 33 * t for t in range(32)]).conflicts     # padded to 33
    0
    >>> bank_conflicts([0] * 32, width=16).wavefronts                 # float4 broadcast
    2
    """
    fn = "bank_conflicts"
    width = index(fn, "width", width, allowed=(4, 8, 16))
    a = address_array(fn, addresses, max_lanes=32).ravel()
    check_range(fn, a, align=width)
    if a.size == 0:
        return BankResult(0, 0, 0, 0, ())
    lanes_per_group = 32 * 4 // width                  # 32, 16 or 8 lanes per group
    words_per_lane = width // BANK_WIDTH
    groups = [a[g0:g0 + lanes_per_group] for g0 in range(0, a.size, lanes_per_group)]
    if width == 16:                                    # quarters of a half warp that share
        merged = []
        for h in range(0, len(groups), 2):
            pair = groups[h:h + 2]
            if sum(np.unique(q).size for q in pair) <= 8:
                merged.append(np.concatenate(pair))    # <= 128 bytes: one group
            else:
                merged.extend(pair)
        groups = merged
    wavefronts = ideal = ways = 0
    for grp in groups:
        words = (grp[:, None] // BANK_WIDTH + np.arange(words_per_lane)[None, :]).ravel()
        words = np.unique(words)                       # same word: broadcast
        per_bank = np.bincount(words % BANKS, minlength=BANKS)
        w = int(per_bank.max())
        wavefronts += w
        ideal += 1
        ways = max(ways, w)
    banks = tuple(int(b) for b in (a // BANK_WIDTH) % BANKS)
    return BankResult(wavefronts, ideal, wavefronts - ideal, ways, banks)


def bank_conflicts_warps(addresses, active=None, width: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bank_conflicts` of 4- or 8-byte accesses for many warps at once (vectorized).

    Parameters
    ----------
    addresses : array_like of int, shape (warps, lanes <= 32)
        Byte offsets into shared memory: the active lanes' non-negative
        multiples of ``width`` (inactive lanes may hold any integer).
    active : array_like of bool, same shape, optional
        Which lanes take part (default: all).
    width : {4, 8}
        Bytes per lane.  8-byte accesses are served a half warp's worth at a time:
        the active lanes in lane order, in groups of 16, as :func:`bank_conflicts`.

    Returns
    -------
    wavefronts, conflicts : numpy.ndarray of int, shape (warps,)
        A warp with no active lane has 0 of both.

    Raises
    ------
    TypeError
        Non-integer addresses or width, non-boolean ``active``.
    ValueError
        A shape other than (warps, <= 32), a negative or unaligned active address,
        a width other than 4 or 8.
    """
    fn = "bank_conflicts_warps"
    width = index(fn, "width", width, allowed=(4, 8))
    a = _warp_rows(fn, addresses)
    act = active_mask(fn, active, a.shape)
    check_range(fn, a, act, align=width)
    per_group = 32 * BANK_WIDTH // width                # lanes a wavefront group serves
    if width > BANK_WIDTH:                               # the active lanes first, in order
        order = np.argsort(~act, axis=1, kind="stable")
        a, act = np.take_along_axis(a, order, 1), np.take_along_axis(act, order, 1)
    pad = -a.shape[1] % per_group
    a = np.pad(a, ((0, 0), (0, pad)))
    act = np.pad(act, ((0, 0), (0, pad)))
    groups = a.reshape(-1, per_group)                    # (warps x groups, lanes)
    words = groups[..., None] // BANK_WIDTH + np.arange(width // BANK_WIDTH)
    words = np.where(act.reshape(-1, per_group)[..., None], words, -1).reshape(len(groups), -1)
    words.sort(axis=1)
    new = np.ones(words.shape, bool)
    new[:, 1:] = words[:, 1:] != words[:, :-1]
    new &= words >= 0                                   # each distinct word once
    rows = np.broadcast_to(np.arange(words.shape[0])[:, None], words.shape)
    per_bank = np.bincount((rows * BANKS + words % BANKS)[new],
                           minlength=words.shape[0] * BANKS).reshape(-1, BANKS)
    waves = per_bank.max(axis=1).reshape(a.shape[0], -1)     # (warps, groups)
    wavefronts = waves.sum(axis=1)
    return wavefronts, wavefronts - (waves > 0).sum(axis=1)
