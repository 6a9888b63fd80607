"""Occupancy: how many blocks of a kernel fit on one SM, and what stops more.

The arithmetic is the CUDA Occupancy Calculator's (and, for compute
capability 3.0 and later, that of ``cuda_occupancy.h``, which
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` agrees with):

* **threads**: ``floor(max warps per SM / warps per block)`` (a block of 100
  threads takes 4 warps).
* **blocks**: the per-SM block limit of the architecture.
* **registers**: registers are handed out per warp (per block on 1.x) in
  units of the register allocation size.  From 2.0 on a warp needs
  ``ceil(regs * 32 / unit) * unit`` registers and the SM holds
  ``floor(regs per SM / that)`` warps, rounded down to the warp allocation
  granularity (the number of SM sub-partitions, which each own a quarter of
  the register file since Kepler); on 1.x a block needs
  ``ceil(ceil(warps, 2) * 32 * regs / unit) * unit`` registers.
* **shared memory**: ``static + dynamic + reserved`` bytes per block rounded
  up to the allocation unit (the reserved 1 KiB per block is the driver's,
  from 8.0 on); the SM's shared memory is the largest carveout.

A configuration that cannot launch at all (too many threads per block, more
registers per block or per thread than allowed, more shared memory than a
block may have) gives 0 blocks and ``limiter == "invalid"`` with the reason.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ._check import flag, index

__all__ = ["Arch", "ARCHS", "OccupancyResult", "occupancy"]


@dataclass(frozen=True)
class Arch:
    """Per-SM limits of one compute capability (Occupancy Calculator "GPU data")."""

    cc: str
    threads_per_sm: int
    blocks_per_sm: int
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    reg_unit: int                 # register allocation unit size
    reg_granularity: str          # "warp" or "block"
    warp_granularity: int         # warp allocation granularity
    smem_per_sm: int              # bytes, the largest carveout
    smem_per_block: int           # bytes a block may use without opting in
    smem_per_block_optin: int     # bytes a block may use after cudaFuncSetAttribute
    smem_unit: int                # shared memory allocation unit size
    smem_reserved: int = 0        # bytes the driver reserves per block (8.0 on)
    threads_per_block: int = 1024
    warp_size: int = 32

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // self.warp_size


KiB = 1024


def _a(cc, threads, blocks, regs, regs_block, max_regs, reg_unit, reg_gran, warp_gran, smem_sm,
       smem_block, smem_optin, smem_unit, reserved=0, tpb=1024):
    return Arch(cc, threads, blocks, regs, regs_block, max_regs, reg_unit, reg_gran, warp_gran,
                smem_sm, smem_block, smem_optin, smem_unit, reserved, tpb)


#: Every compute capability the model knows, '1.0' (G80) to '12.1'.
#: 7.5 and later: the CUDA Programming Guide (CUDA 13), section 5.1 "Compute
#: Capabilities", Table 30 (resident blocks, warps and threads per SM: 10.3 as 9.0 and
#: 10.0, 2048 threads and 32 blocks; 11.0 as 12.x, 1536 threads and 24 blocks) and
#: Table 31 (64 K registers per SM and per block, 255 per thread; shared memory per SM
#: and per block 228 KB / 227 KB for 9.0, 10.x and 11.0, 100 KB / 99 KB for 12.x), and
#: the CUDA 13.0 cuda_occupancy.h (allocation units and granularities, the same blocks
#: per SM).  8.8 (sm_88, which nvcc 13.0 lists) is left out: the guide publishes no
#: limits for it.
ARCHS: dict[str, Arch] = {a.cc: a for a in (
    #   cc     thr/SM blk regs/SM regs/blk maxr unit gran  wg smem/SM     smem/blk   opt-in     su  rsv   tpb
    _a("1.0", 768, 8, 8192, 8192, 124, 256, "block", 2, 16 * KiB, 16 * KiB, 16 * KiB, 512, 0, 512),
    _a("1.1", 768, 8, 8192, 8192, 124, 256, "block", 2, 16 * KiB, 16 * KiB, 16 * KiB, 512, 0, 512),
    _a("1.2", 1024, 8, 16384, 16384, 124, 512, "block", 2, 16 * KiB, 16 * KiB, 16 * KiB, 512, 0, 512),
    _a("1.3", 1024, 8, 16384, 16384, 124, 512, "block", 2, 16 * KiB, 16 * KiB, 16 * KiB, 512, 0, 512),
    _a("2.0", 1536, 8, 32768, 32768, 63, 64, "warp", 2, 48 * KiB, 48 * KiB, 48 * KiB, 128),
    _a("2.1", 1536, 8, 32768, 32768, 63, 64, "warp", 2, 48 * KiB, 48 * KiB, 48 * KiB, 128),
    _a("3.0", 2048, 16, 65536, 65536, 63, 256, "warp", 4, 48 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("3.5", 2048, 16, 65536, 65536, 255, 256, "warp", 4, 48 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("3.7", 2048, 16, 131072, 65536, 255, 256, "warp", 4, 112 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("5.0", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 64 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("5.2", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 96 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("5.3", 2048, 32, 65536, 32768, 255, 256, "warp", 4, 64 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("6.0", 2048, 32, 65536, 65536, 255, 256, "warp", 2, 64 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("6.1", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 96 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("6.2", 2048, 32, 65536, 32768, 255, 256, "warp", 4, 64 * KiB, 48 * KiB, 48 * KiB, 256),
    _a("7.0", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 96 * KiB, 48 * KiB, 96 * KiB, 256),
    _a("7.2", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 96 * KiB, 48 * KiB, 96 * KiB, 256),
    _a("7.5", 1024, 16, 65536, 65536, 255, 256, "warp", 4, 64 * KiB, 48 * KiB, 64 * KiB, 256),
    _a("8.0", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 164 * KiB, 48 * KiB, 163 * KiB, 128, KiB),
    _a("8.6", 1536, 16, 65536, 65536, 255, 256, "warp", 4, 100 * KiB, 48 * KiB, 99 * KiB, 128, KiB),
    _a("8.7", 1536, 16, 65536, 65536, 255, 256, "warp", 4, 164 * KiB, 48 * KiB, 163 * KiB, 128, KiB),
    _a("8.9", 1536, 24, 65536, 65536, 255, 256, "warp", 4, 100 * KiB, 48 * KiB, 99 * KiB, 128, KiB),
    _a("9.0", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 228 * KiB, 48 * KiB, 227 * KiB, 128, KiB),
    _a("10.0", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 228 * KiB, 48 * KiB, 227 * KiB, 128, KiB),
    _a("10.3", 2048, 32, 65536, 65536, 255, 256, "warp", 4, 228 * KiB, 48 * KiB, 227 * KiB, 128, KiB),
    _a("11.0", 1536, 24, 65536, 65536, 255, 256, "warp", 4, 228 * KiB, 48 * KiB, 227 * KiB, 128, KiB),
    _a("12.0", 1536, 24, 65536, 65536, 255, 256, "warp", 4, 100 * KiB, 48 * KiB, 99 * KiB, 128, KiB),
    _a("12.1", 1536, 24, 65536, 65536, 255, 256, "warp", 4, 100 * KiB, 48 * KiB, 99 * KiB, 128, KiB),
)}

LIMITERS = ("threads", "blocks", "registers", "shared_memory")


@dataclass(frozen=True)
class OccupancyResult:
    """What fits on one SM.

    Attributes
    ----------
    blocks_per_sm, active_warps, active_threads : int
    occupancy : float
        Active warps / maximum warps per SM, 0..1.
    limiter : str
        ``"threads"``, ``"blocks"``, ``"registers"``, ``"shared_memory"`` (the
        first of these, in that order, that allows the fewest blocks) or
        ``"invalid"`` (the block cannot launch; see ``reason``).
    limiters : tuple of str
        Every resource that allows exactly ``blocks_per_sm`` blocks.
    limits : dict
        Blocks per SM each resource alone allows (``None``: no limit).
    reason : str
        Why the configuration is invalid ("" when it is valid).
    regs_per_block, smem_per_block_allocated : int
        What a block is charged after rounding to the allocation units.
    """

    cc: str
    threads_per_block: int
    regs_per_thread: int
    smem_per_block: int
    blocks_per_sm: int
    active_warps: int
    active_threads: int
    max_warps: int
    occupancy: float
    limiter: str
    limiters: tuple
    limits: dict = field(default_factory=dict)
    reason: str = ""
    regs_per_block: int = 0
    smem_per_block_allocated: int = 0

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _cdiv(a, b) * b


def _norm_cc(cc: Any) -> str:
    """The ARCHS key of ``cc``: a string as listed, ``(major, minor)`` ints, an
    int major (``9`` is ``"9.0"``) or a float that reads as a listed one
    (``8.6``; ``9.04`` is unknown, not rounded)."""
    fn = "occupancy"
    if isinstance(cc, np.generic):
        cc = cc.item()                  # NumPy scalars as the Python ones (and in messages)
    if isinstance(cc, bool):
        raise TypeError(f"{fn}: cc must be a str such as '9.0' or a (major, minor) tuple, "
                        "not bool")
    if isinstance(cc, tuple) and len(cc) == 2:
        key = f"{index(fn, 'cc[0]', cc[0])}.{index(fn, 'cc[1]', cc[1])}"
    elif isinstance(cc, int):
        key = f"{int(cc)}.0"
    elif isinstance(cc, float):
        key = repr(float(cc))
    elif isinstance(cc, str):
        key = cc
    else:
        raise TypeError(f"{fn}: cc must be a str such as '9.0' or a (major, minor) tuple, not "
                        f"{type(cc).__name__}")
    if key not in ARCHS:
        raise ValueError(f"{fn}: cc={cc!r} is unknown; allowed: "
                         f"{', '.join(repr(c) for c in ARCHS)}")
    return key


def _int(name: str, v: Any) -> int:
    return index("occupancy", name, v, lo=0)


def occupancy(cc: str | tuple[int, int] = "9.0", threads_per_block: int | None = None,
              regs_per_thread: int | None = None, smem_per_block: int | None = None, *,
              optin: bool = False, threads: int | None = None, regs: int | None = None,
              smem: int | None = None) -> OccupancyResult:
    """Blocks, warps and threads of one kernel that fit on one SM.

    Parameters
    ----------
    cc : str or (major, minor)
        Compute capability: ``"1.0"`` (G80) .. ``"12.1"``; see :data:`ARCHS`.
    threads_per_block : int
        Threads per block (``threads=`` is accepted as an alias).
    regs_per_thread : int
        Registers per thread, as ``cudaFuncGetAttributes``/``ptxas -v`` report
        (``regs=``; default 0).
    smem_per_block : int
        Shared memory per block in bytes, static plus dynamic (``smem=``;
        default 0).  The driver's reserved 1 KiB (8.0 on) is added here.
    optin : bool
        Whether the kernel opted in to more than 48 KiB per block
        (``cudaFuncSetAttribute(..., MaxDynamicSharedMemorySize, ...)``);
        ``True`` or ``False`` only.

    Returns
    -------
    OccupancyResult

    Raises
    ------
    TypeError
        A count that is not an int (NumPy integers are taken, bools are not),
        ``optin`` not a bool, a missing ``threads_per_block``, or both a
        parameter and its alias.
    ValueError
        An unknown compute capability (the message lists :data:`ARCHS`), a
        negative count or a block of no threads.  (A launch that asks for more
        than the GPU allows is no error here: its ``limiter`` is ``"invalid"``
        and ``reason`` says which limit it breaks.)

    Examples
    --------
    >>> occupancy("9.0", 256, 32, 0).occupancy
    1.0
    >>> occupancy("9.0", 1024, 64, 0).limiter
    'registers'
    """
    for alias, name, v in (("threads", "threads_per_block", threads),
                           ("regs", "regs_per_thread", regs), ("smem", "smem_per_block", smem)):
        if v is not None:
            if {"threads_per_block": threads_per_block, "regs_per_thread": regs_per_thread,
                    "smem_per_block": smem_per_block}[name] is not None:
                raise TypeError(f"occupancy: give {name} or {alias}, not both")
            if name == "threads_per_block":
                threads_per_block = v
            elif name == "regs_per_thread":
                regs_per_thread = v
            else:
                smem_per_block = v
    cc = _norm_cc(cc)
    optin = flag("occupancy", "optin", optin)
    if threads_per_block is None:
        raise TypeError("occupancy: threads_per_block is required")
    a = ARCHS[cc]
    tpb = _int("threads_per_block", threads_per_block)
    if tpb < 1:       # no launch has no threads: a question, not an occupancy to report
        raise ValueError(f"occupancy: threads_per_block={tpb} is not allowed; a block has at "
                         "least 1 thread")
    regs = _int("regs_per_thread", 0 if regs_per_thread is None else regs_per_thread)
    smem = _int("smem_per_block", 0 if smem_per_block is None else smem_per_block)

    warps = _cdiv(tpb, a.warp_size)
    # registers a block is charged
    if a.reg_granularity == "block":
        regs_block = _round_up(_round_up(warps, a.warp_granularity) * a.warp_size * regs,
                               a.reg_unit)
        regs_warp = 0
    else:
        regs_warp = _round_up(regs * a.warp_size, a.reg_unit)
        regs_block = regs_warp * warps
    smem_alloc = _round_up(smem + a.smem_reserved, a.smem_unit)
    smem_limit = a.smem_per_block_optin if optin else a.smem_per_block

    def invalid(reason: str) -> OccupancyResult:
        return OccupancyResult(cc, tpb, regs, smem, 0, 0, 0, a.warps_per_sm, 0.0, "invalid",
                               ("invalid",), {}, reason, regs_block, smem_alloc)

    if tpb > a.threads_per_block:
        return invalid(f"{tpb} threads per block exceed the {a.threads_per_block} allowed on "
                       f"compute capability {cc}")
    if regs > a.max_regs_per_thread:
        return invalid(f"{regs} registers per thread exceed the {a.max_regs_per_thread} allowed "
                       f"on compute capability {cc}")
    # The hardware check of cuda_occupancy.h: a block's warps rounded up to
    # the sub-partitions must fit the per-block register file.
    regs_check = (regs_warp * _round_up(warps, a.warp_granularity)
                  if a.reg_granularity == "warp" else regs_block)
    if max(regs_check, regs_block) > a.regs_per_block:
        return invalid(f"a block needs {max(regs_check, regs_block)} registers ({regs} per thread "
                       f"x {tpb} threads, allocated in units of {a.reg_unit}); at most "
                       f"{a.regs_per_block} per block on compute capability {cc} "
                       "(cudaErrorLaunchOutOfResources)")
    if cc == "6.0" and regs_warp:
        # cuda_occupancy.h: a block that could not run on GP10x (4 sub-partitions)
        # is refused on GP100 too, for forward compatibility within Pascal
        warps_gp10x = (a.regs_per_sm // regs_warp) // 4 * 4
        if regs_warp * _round_up(warps, 4) > a.regs_per_block or warps_gp10x < warps:
            return invalid(f"a block of {tpb} threads with {regs} registers each would not fit "
                           "a GP10x SM (4 sub-partitions), so the driver refuses it on every "
                           "Pascal GPU, GP100 included")
    if smem > smem_limit:
        hint = (f"; up to {a.smem_per_block_optin} with optin=True (cudaFuncSetAttribute)"
                if not optin and a.smem_per_block_optin > a.smem_per_block else "")
        return invalid(f"{smem} bytes of shared memory per block exceed the {smem_limit} "
                       f"allowed on compute capability {cc}{hint}")

    limits: dict[str, int | None] = {}
    limits["threads"] = a.warps_per_sm // warps
    limits["blocks"] = a.blocks_per_sm
    if regs == 0:
        limits["registers"] = None
    elif a.reg_granularity == "block":
        limits["registers"] = a.regs_per_sm // regs_block
    else:
        warps_fit = (a.regs_per_sm // regs_warp) // a.warp_granularity * a.warp_granularity
        limits["registers"] = warps_fit // warps
    limits["shared_memory"] = a.smem_per_sm // smem_alloc if smem_alloc else None
    blocks = min(v for v in limits.values() if v is not None)
    tied = tuple(k for k in LIMITERS if limits[k] == blocks)
    active_warps = blocks * warps
    return OccupancyResult(cc, tpb, regs, smem, blocks, active_warps, blocks * tpb,
                           a.warps_per_sm, active_warps / a.warps_per_sm, tied[0], tied, limits,
                           "", regs_block, smem_alloc)
