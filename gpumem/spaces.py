"""Memory spaces, constant memory, registers, occupancy and divergence.

The lessons of the CUDA memory model made runnable:

* :func:`stencil_1d` -- a 1D stencil whose coefficients live in
  ``__constant__`` memory, come through the read-only cache, or are plain
  global loads (the input tile with its halo is in shared memory in all three);
* :func:`constant_broadcast` -- a warp reading 1, 2, 4 ... 32 distinct
  constant words per load: the constant cache serialises them;
* :func:`thread_histogram` -- a per-thread array indexed at run time (local
  memory) against the same work with compile-time indices (registers);
* :func:`lifetimes` -- ``__device__`` state persists across launches,
  ``__shared__`` state does not, ``__constant__`` set from the host persists;
* :func:`register_pressure` -- one kernel built at several ``__launch_bounds__``
  register caps: registers, spills, occupancy and time;
* :func:`divergence` -- a branch on ``threadIdx.x % 2`` against one on the
  warp index;
* :func:`kernel_attributes`, :func:`occupancy`, :func:`block_size_sweep`,
  :func:`compiler_report` -- what the compiler and the occupancy API say about
  any kernel variant.

Every kernel has a NumPy reference (``*_reference``).  Without a GPU,
:func:`compiler_report` (``cuobjdump`` on the built extension) and
:func:`model_occupancy` (:mod:`gpumem.model`) still answer.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import _core
from ._table import Table

__all__ = [
    "STENCIL_8TH_ORDER", "KernelAttributes", "Occupancy", "block_size_sweep",
    "broadcast_sweep", "broadcast_table", "compiler_report", "constant_broadcast",
    "constant_broadcast_reference", "divergence", "divergence_compare", "divergence_reference",
    "kernel_attributes", "lifetimes", "local_vs_registers", "model_occupancy", "occupancy",
    "register_cap_sweep", "register_pressure", "register_pressure_reference", "stencil_1d",
    "stencil_1d_reference", "thread_histogram", "thread_histogram_reference",
]

#: The book's radius-4, 8th-order first-derivative weights w[-4..4]:
#: out[i] = sum_k a_k (x[i+k] - x[i-k]) with a = (0.8, -0.2, 0.03809, -0.00357).
STENCIL_8TH_ORDER = np.array([0.00357, -0.03809, 0.2, -0.8, 0.0, 0.8, -0.2, 0.03809, -0.00357],
                             dtype=np.float32)

REGCAP_LIVE = 64          #: floats each register_pressure thread keeps live
REGCAP_CAPS = {"uncapped": 255, "cap128": 128, "cap64": 64, "cap40": 40, "cap32": 32}
BROADCAST_TABLE = 256     #: floats in the broadcast table (1 KiB)
HISTOGRAM_BINS = 16


# ---- stencil ----------------------------------------------------------------
def stencil_1d(x, coef=None, *, memory: str = "constant", block: int = 256, items: int = 4,
               out=None):
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
    return _core.stencil_1d(x, coef, memory=memory, block=block, items=items, out=out)


def stencil_1d_reference(x, coef=None) -> np.ndarray:
    """NumPy reference of :func:`stencil_1d` in float64 (weights rounded to float32 first)."""
    w = STENCIL_8TH_ORDER if coef is None else np.asarray(coef)
    w = w.astype(np.float32).astype(np.float64)
    r = len(w) // 2
    xp = np.pad(np.asarray(x, dtype=np.float64), r)
    return np.correlate(xp, w, mode="valid")


# ---- constant broadcast ----------------------------------------------------------
def constant_broadcast(distinct: int, *, memory: str = "constant", n: int = 1 << 20,
                       iters: int = 256, block: int = 256, out=None):
    """Each warp reads ``distinct`` different table words per load, ``iters`` times.

    Thread ``t`` (lane ``l = t % 32``) sums ``table[(l % distinct + 32 i) % 256]`` for
    ``i < iters``; :func:`broadcast_table` is the table.  With ``memory="constant"``
    the table is in ``__constant__`` memory and the constant cache serves one word
    per pass, so a warp's load costs ``distinct`` passes; with ``"readonly"`` it
    goes through the read-only data cache, where the words share one 128-byte line.

    Returns
    -------
    numpy.ndarray of ``n`` float32 sums (a DeviceArray when ``out`` is given).
    """
    return _core.constant_broadcast(distinct, memory=memory, n=n, iters=iters, block=block,
                                    out=out)


def broadcast_table() -> np.ndarray:
    """The 256-float table :func:`constant_broadcast` reads: ``(j % 13) / 4``."""
    return ((np.arange(BROADCAST_TABLE) % 13) * 0.25).astype(np.float32)


def constant_broadcast_reference(distinct: int, n: int = 1 << 20, iters: int = 256) -> np.ndarray:
    """NumPy reference of :func:`constant_broadcast` (exact: every partial sum is a
    multiple of 1/4 well below 2**22)."""
    table = broadcast_table().astype(np.float64)
    words = np.arange(32) % distinct
    idx = (words[:, None] + 32 * np.arange(iters)[None, :]) & (BROADCAST_TABLE - 1)
    per_lane = table[idx].sum(axis=1)
    return per_lane[np.arange(n) % 32].astype(np.float32)


# ---- local memory vs registers -------------------------------------------------------
def thread_histogram(x, *, variant: str = "local", threads: int | None = None,
                     block: int = 256, out=None):
    """A private 16-bin histogram per thread: thread ``t`` counts ``x[t::threads]``.

    The bin of ``v`` is ``clip(floor(16 v), 0, 15)`` (NaN counts in bin 0).
    ``variant="local"`` indexes the per-thread array with the bin (known only at run
    time), so the compiler puts it in local memory; ``"registers"`` adds
    ``(bin == b)`` to every bin ``b`` -- compile-time indices only -- and keeps it
    in registers.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, 1-D
    threads : int, optional
        Number of histograms (default ``min(len(x), 65536)``, at least 1).
    out : DeviceArray, optional
        int32, shape ``(16, threads)``.

    Returns
    -------
    int32 array of shape ``(16, threads)``: ``[b, t]`` is thread t's count of bin b.
    """
    return _core.thread_histogram(x, variant=variant, threads=threads, block=block, out=out)


def thread_histogram_reference(x, threads: int) -> np.ndarray:
    """NumPy reference of :func:`thread_histogram`."""
    x = np.asarray(x, dtype=np.float32)
    b = np.floor(x * np.float32(HISTOGRAM_BINS))
    b = np.nan_to_num(np.clip(b, 0, HISTOGRAM_BINS - 1), nan=0.0).astype(np.int64)
    t = np.arange(x.size) % threads
    counts = np.bincount(b * threads + t, minlength=HISTOGRAM_BINS * threads)
    return counts.reshape(HISTOGRAM_BINS, threads).astype(np.int32)


# ---- lifetimes ---------------------------------------------------------------------
def lifetimes(launches: int = 3, *, blocks: int = 4, block: int = 64, value: int = 7,
              counter: int = 0) -> Table:
    """Launch the lifetime kernel ``launches`` times and tabulate what each launch saw.

    Before the first launch the host sets a ``__constant__ int`` to ``value`` and a
    ``__device__`` counter to ``counter`` (both with ``cudaMemcpyToSymbol``); later
    launches set nothing.  Each block counts its threads in a ``__shared__`` int
    (zeroed by the block itself: shared memory starts undefined every launch) and
    adds the count to the ``__device__`` counter.

    Returns
    -------
    Table with, per launch: the shared count of every block (always ``block``), the
    device counter after the launch (``counter + k * blocks * block``), and the
    constant every block read (``value`` every time).
    """
    if not isinstance(launches, int) or isinstance(launches, bool):
        raise TypeError(f"lifetimes: launches must be an int, not {type(launches).__name__}")
    if launches < 1:
        raise ValueError(f"lifetimes: launches={launches} is not allowed; launches must be >= 1")
    rows = []
    for k in range(launches):
        kw = dict(value=value, counter=counter) if k == 0 else {}
        r = _core.lifetime(blocks=blocks, block=block, **kw)
        rows.append({"launch": k + 1, "host set": "constant, counter" if k == 0 else "nothing",
                     "__shared__ count (every block)": sorted(set(r[0].tolist())),
                     "__device__ counter after": int(r[1].max()),
                     "__constant__ read (every block)": sorted(set(r[2].tolist()))})
    return Table(rows, sources={c: "measured" for c in rows[0] if c not in ("launch", "host set")},
                 title=f"lifetimes: {blocks} blocks of {block} threads per launch")


# ---- register caps -------------------------------------------------------------------
def register_pressure(x, *, variant: str = "uncapped", rounds: int = 8, block: int = 256,
                      out=None):
    """Each thread keeps 64 floats live through ``rounds`` rounds of mixing.

    Column ``t`` of ``x`` (shape ``(64, n)``) holds thread ``t``'s values ``v``; each
    round does ``v[j] = v[j]/2 + v[j+1]/4`` for ``j = 0..63`` in order (indices mod 64,
    so the last uses the new ``v[0]``), and ``out[t] = v[0] + ... + v[63]``.
    ``variant`` picks the build: ``"uncapped"`` (``__launch_bounds__(256, 1)``),
    ``"cap128"``, ``"cap64"``, ``"cap40"``, ``"cap32"`` (``__launch_bounds__(256, B)``
    with B = 2, 4, 6, 8: at most 65536 / (256 B) registers per thread; the rest spills).

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, shape (64, n)
    block : int
        A multiple of 32, at most 256 (the launch bounds promise 256).
    """
    return _core.register_pressure(x, variant=variant, rounds=rounds, block=block, out=out)


def register_pressure_reference(x, rounds: int = 8) -> np.ndarray:
    """NumPy reference of :func:`register_pressure` (float32, same order of operations)."""
    v = [row.copy() for row in np.asarray(x, dtype=np.float32)]
    h, q = np.float32(0.5), np.float32(0.25)
    for _ in range(rounds):
        for j in range(REGCAP_LIVE):
            v[j] = v[j] * h + v[(j + 1) % REGCAP_LIVE] * q
    acc = np.zeros_like(v[0])
    for j in range(REGCAP_LIVE):
        acc = acc + v[j]
    return acc


# ---- divergence ---------------------------------------------------------------------------
def divergence(x, *, variant: str = "odd_even", iters: int = 256, block: int = 256, out=None):
    """Half the threads run ``x = x/2 + 1``, the other half ``x = x/4 + 3``, ``iters`` times.

    ``variant="odd_even"`` splits on ``threadIdx.x % 2`` (odd threads take the first
    path): every warp holds both halves and runs both loops one after the other.
    ``"warp"`` splits on ``(threadIdx.x / 32) % 2``: whole warps agree and no warp
    diverges.  Same work, same result shape.
    """
    return _core.divergence(x, variant=variant, iters=iters, block=block, out=out)


def divergence_reference(x, iters: int = 256, *, variant: str = "odd_even",
                         block: int = 256) -> np.ndarray:
    """NumPy reference of :func:`divergence` (float32)."""
    x = np.asarray(x, dtype=np.float32).copy()
    tid = np.arange(x.size) % block
    odd = (tid % 2 == 1) if variant == "odd_even" else ((tid // 32) % 2 == 1)
    a, b = x[odd], x[~odd]
    for _ in range(iters):
        a = a * np.float32(0.5) + np.float32(1.0)
        b = b * np.float32(0.25) + np.float32(3.0)
    x[odd], x[~odd] = a, b
    return x


# ---- kernel attributes and occupancy ---------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class KernelAttributes:
    """What ``cudaFuncGetAttributes`` says about the kernel behind a variant."""

    family: str
    variant: str
    registers_per_thread: int
    local_bytes_per_thread: int   #: stack frame: local arrays and register spills
    static_shared_bytes: int
    constant_bytes: int
    max_threads_per_block: int    #: lower than 1024 under __launch_bounds__ or many registers
    ptx_version: int
    binary_version: int
    max_dynamic_shared_bytes: int
    preferred_shared_carveout: int


@dataclasses.dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM from ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``,
    with the model's breakdown of the limiting resource beside it when available."""

    family: str
    variant: str
    block: int
    smem: int                     #: dynamic shared memory per block, bytes
    blocks_per_sm: int
    warps_per_block: int
    active_warps: int
    max_warps_per_sm: int
    occupancy: float              #: active warps / max warps per SM
    registers_per_thread: int
    static_shared_bytes: int
    model: dict | None            #: gpumem.model.occupancy(...), or None
    model_note: str = ""          #: why ``model`` is None

    @property
    def limiter(self):
        """The model's limiting resource (None without the model)."""
        return None if self.model is None else self.model.get("limiter")


def _attributes(family: str, variant: str, params: Mapping[str, Any] | None,
                strict: bool) -> KernelAttributes:
    for name, v in (("family", family), ("variant", variant)):
        if not isinstance(v, str):
            raise TypeError(f"kernel_attributes: {name} must be a str, not {type(v).__name__}")
    d = _core.kernel_attributes(family, variant, dict(params or {}), strict)
    return KernelAttributes(family, variant, **d)


def kernel_attributes(family: str, variant: str, **params) -> KernelAttributes:
    """Registers per thread, local (stack) bytes, static shared bytes, constant bytes,
    max threads per block and PTX/binary version of a variant's kernel.

    ``params`` pick among the kernels one variant builds: ``tile`` for matmul,
    ``items`` and ``antisymmetric`` for the stencil; nothing else.  Needs a GPU
    (the runtime loads the kernel); :func:`compiler_report` answers without one.
    """
    return _attributes(family, variant, params, True)


_MODEL_KEYS = ("blocks_per_sm", "active_warps", "active_threads", "occupancy", "limiter")


def _as_dict(r: Any) -> dict:
    if isinstance(r, Mapping):
        return dict(r)
    if dataclasses.is_dataclass(r):
        return dataclasses.asdict(r)
    if hasattr(r, "_asdict"):
        return dict(r._asdict())
    return {k: getattr(r, k) for k in _MODEL_KEYS if hasattr(r, k)}


def model_occupancy(cc: str, threads_per_block: int, regs_per_thread: int,
                    smem_per_block: int) -> dict:
    """:func:`gpumem.model.occupancy` as a dict (blocks_per_sm, active_warps,
    active_threads, occupancy, limiter).  No GPU needed.

    Raises
    ------
    ImportError
        When this build of gpumem has no ``gpumem.model.occupancy``.
    """
    try:
        from . import model
        fn = model.occupancy
    except (ImportError, AttributeError) as e:
        raise ImportError(
            "gpumem.model.occupancy is not available in this build of gpumem (the memory "
            "model provides it); occupancy() still reports the CUDA occupancy API's numbers "
            f"({type(e).__name__}: {e})") from None
    return _as_dict(fn(cc, threads_per_block, regs_per_thread, smem_per_block))


def _occupancy(family, variant, block, smem, params, strict) -> Occupancy:
    from . import device

    d = _core.occupancy(family, variant, block, smem, dict(params or {}), strict)
    attrs = _attributes(family, variant, params, strict)
    dev = device()
    warps = -(-block // dev.warp_size)
    max_warps = dev.max_threads_per_multiprocessor // dev.warp_size
    active = d["blocks_per_sm"] * warps
    cc = "%d.%d" % dev.compute_capability
    try:
        model, note = model_occupancy(cc, block, attrs.registers_per_thread,
                                      attrs.static_shared_bytes + (smem or 0)), ""
    except ImportError as e:
        model, note = None, str(e)
    return Occupancy(family, variant, block, smem or 0, d["blocks_per_sm"], warps, active,
                     max_warps, active / max_warps, attrs.registers_per_thread,
                     attrs.static_shared_bytes, model, note)


def occupancy(family: str, variant: str, block: int, smem: int = 0, **params) -> Occupancy:
    """Resident blocks and warps per SM for a variant's kernel at ``block`` threads and
    ``smem`` bytes of dynamic shared memory per block (CUDA occupancy API), with
    :func:`gpumem.model.occupancy`'s breakdown of the limiting resource in ``.model``
    (``None``, and ``.model_note`` saying why, where the model is missing).

    ``params`` as for :func:`kernel_attributes`.
    """
    return _occupancy(family, variant, block, smem, params, True)


# ---- sweeps -------------------------------------------------------------------------------
def _bench(fn: Callable, *args, repeat: int, warmup: int, **kw):
    from . import bench, record

    with record() as recs:
        r = bench(fn, *args, repeat=repeat, warmup=warmup, **kw)
    return r, recs[-1]


def _dynamic_smem(rec, attrs: KernelAttributes) -> int:
    """Dynamic shared memory of a recorded launch.  The stencil's tile is all dynamic
    (and the one family whose size is known from its params); elsewhere the record's
    total less the kernel's static shared memory."""
    p = rec.params
    if rec.kernel == "stencil" and {"items", "radius"} <= p.keys():
        return (int(np.prod(rec.block)) * p["items"] + 2 * p["radius"]) * 4
    return max(0, rec.smem - attrs.static_shared_bytes)


def block_size_sweep(fn: Callable, *args, blocks: Sequence[int] = (32, 64, 128, 256, 512, 1024),
                     param: str = "block", repeat: int = 20, warmup: int = 3, **kw) -> Table:
    """Time ``fn(*args, **{param: b}, **kw)`` for every ``b`` in ``blocks``, with the
    occupancy of the kernel that ran beside it ("exposing more parallelism").

    Works for any gpumem kernel that takes a block-size argument (``param="tile"``
    for matmul, whose blocks are ``tile x tile``).
    """
    if not callable(fn):
        raise TypeError("block_size_sweep: fn must be callable, e.g. gpumem.stencil_1d")
    rows = []
    for b in blocks:
        r, rec = _bench(fn, *args, repeat=repeat, warmup=warmup, **{param: b}, **kw)
        threads = int(np.prod(rec.block))
        attrs = _attributes(rec.kernel, rec.variant, rec.params, False)
        dyn = _dynamic_smem(rec, attrs)
        occ = _occupancy(rec.kernel, rec.variant, threads, dyn, rec.params, False)
        rows.append({param: b, "threads/block": threads, "median_ms": r.median_ms,
                     "GB/s": r.gbps, "regs/thread": attrs.registers_per_thread,
                     "blocks/SM": occ.blocks_per_sm, "occupancy": occ.occupancy,
                     "limiter": occ.limiter})
    return Table(rows, sources={"median_ms": "measured", "GB/s": "measured",
                                "blocks/SM": "occupancy API", "occupancy": "occupancy API",
                                "limiter": "model"},
                 title=f"block-size sweep: {rec.kernel}/{rec.variant}" if rows else "block-size sweep")


def broadcast_sweep(distincts: Sequence[int] = (1, 2, 4, 8, 16, 32), *, n: int = 1 << 20,
                    iters: int = 256, repeat: int = 20) -> Table:
    """:func:`constant_broadcast` through both caches for each number of distinct words
    per warp: time, and time per load relative to one word."""
    rows = []
    for d in distincts:
        row = {"distinct": d}
        for mem in ("constant", "readonly"):
            r, _ = _bench(constant_broadcast, d, memory=mem, n=n, iters=iters, repeat=repeat,
                          warmup=2)
            row[f"{mem}_ms"] = r.median_ms
        rows.append(row)
    for row in rows:
        row["constant / readonly"] = row["constant_ms"] / row["readonly_ms"]
        row["constant vs 1 word"] = row["constant_ms"] / rows[0]["constant_ms"]
    return Table(rows, sources={c: "measured" for c in rows[0] if c != "distinct"},
                 title=f"constant broadcast vs serialisation ({n} threads x {iters} loads)")


def local_vs_registers(n: int = 1 << 24, *, threads: int = 1 << 16, repeat: int = 20) -> Table:
    """:func:`thread_histogram` in local memory and in registers: resources and time."""
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    rows = []
    for v in ("local", "registers"):
        a = kernel_attributes("private_array", v)
        r, _ = _bench(thread_histogram, x, variant=v, threads=threads, repeat=repeat, warmup=2)
        rows.append({"variant": v, "regs/thread": a.registers_per_thread,
                     "local bytes/thread": a.local_bytes_per_thread, "median_ms": r.median_ms,
                     "GB/s": r.gbps})
    return Table(rows, sources={"median_ms": "measured", "GB/s": "measured"},
                 title=f"per-thread histogram: local memory vs registers (n={n})")


def register_cap_sweep(n: int = 1 << 20, *, rounds: int = 8, repeat: int = 20) -> Table:
    """:func:`register_pressure` at every cap: registers, spilled (local) bytes,
    occupancy at 256 threads per block, and time."""
    x = np.random.default_rng(0).standard_normal((REGCAP_LIVE, n)).astype(np.float32)
    rows = []
    for v in REGCAP_CAPS:
        occ = occupancy("register_cap", v, 256)
        a = kernel_attributes("register_cap", v)
        r, _ = _bench(register_pressure, x, variant=v, rounds=rounds, repeat=repeat, warmup=2)
        rows.append({"variant": v, "cap": REGCAP_CAPS[v], "regs/thread": a.registers_per_thread,
                     "local bytes/thread": a.local_bytes_per_thread,
                     "blocks/SM": occ.blocks_per_sm, "occupancy": occ.occupancy,
                     "limiter": occ.limiter, "median_ms": r.median_ms})
    return Table(rows, sources={"median_ms": "measured", "blocks/SM": "occupancy API",
                                "occupancy": "occupancy API", "limiter": "model"},
                 title=f"register caps (__launch_bounds__), 64 live floats, n={n}, rounds={rounds}")


def divergence_compare(n: int = 1 << 22, *, iters: int = 256, repeat: int = 20) -> Table:
    """:func:`divergence` both ways: time and the ratio to the warp-aligned branch."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    rows = []
    for v in ("warp", "odd_even"):
        r, _ = _bench(divergence, x, variant=v, iters=iters, repeat=repeat, warmup=2)
        rows.append({"variant": v, "median_ms": r.median_ms, "GFLOP/s": r.gflops})
    for row in rows:
        row["x warp"] = row["median_ms"] / rows[0]["median_ms"]
    return Table(rows, sources={"median_ms": "measured", "GFLOP/s": "measured"},
                 title=f"warp divergence: n={n}, iters={iters}")


# ---- the compiler's report (no GPU) ------------------------------------------------------
def _find_tool(name: str) -> str | None:
    path = shutil.which(name)
    if path:
        return path
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        p = os.path.join(root, "bin", name)
        if os.access(p, os.X_OK):
            return p
    for sp in sys.path:  # pip's nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels
        for p in glob.glob(os.path.join(sp or ".", "nvidia", "*", "bin", name)):
            if os.access(p, os.X_OK):
                return p
    return None


_KERNEL_FAMILY = {
    "stencil_1d_kernel": "stencil", "broadcast_kernel": "broadcast",
    "private_array_kernel": "private_array", "lifetime_kernel": "lifetime",
    "register_cap_kernel": "register_cap", "divergence_kernel": "divergence",
    "matmul_naive_kernel": "matmul", "matmul_tiled_kernel": "matmul", "vec_add_kernel": "vec_add",
}


def _variant_of(family: str | None, pretty: str) -> str | None:
    args = re.findall(r"<(.*)>\s*\(", pretty)
    # cu++filt writes template arguments with their type, "(int)8", "(bool)1"
    a = [re.sub(r"^\((?:unsigned |signed )?\w+\)", "", x.strip()) for x in args[0].split(",")] \
        if args else []
    if family in ("broadcast", "private_array", "divergence"):   # bool template arguments
        a = [{"1": "true", "0": "false"}.get(x, x) for x in a]
    if family == "stencil" and a:
        return ["constant", "readonly", "global"][int(a[0])] + f" (items={a[2]})"
    if family == "broadcast" and a:
        return "readonly" if a[0] == "true" else "constant"
    if family == "private_array" and a:
        return "registers" if a[0] == "true" else "local"
    if family == "divergence" and a:
        return "warp" if a[0] == "true" else "odd_even"
    if family == "register_cap" and a:
        caps = {"1": "uncapped", "2": "cap128", "4": "cap64", "6": "cap40", "8": "cap32"}
        return caps.get(a[0])
    if family == "matmul":
        return f"tiled (tile={a[0]})" if a else "naive"
    return "default" if family else None


_TEMPLATE_ARG = re.compile(r"L([bijlmxy])(n?)(\d+)E")


def _demangle_simple(name: str) -> str:
    """The few Itanium-ABI forms gpumem's kernels use -- ``_Z<len><name>`` with
    an optional list of integer/bool template arguments (``ILi8ELb1EE``) -- for
    machines with neither ``cu++filt`` nor ``c++filt``.  Anything else is returned
    unchanged."""
    m = re.match(r"_Z(\d+)", name)
    if not m:
        return name
    k = m.end()
    base = name[k:k + int(m.group(1))]
    rest = name[k + int(m.group(1)):]
    args = []
    if rest.startswith("I"):
        rest = rest[1:]
        while True:
            t = _TEMPLATE_ARG.match(rest)
            if not t:
                break
            kind, neg, num = t.groups()
            args.append(("true" if num == "1" else "false") if kind == "b" else neg and "-" + num or num)
            rest = rest[t.end():]
        if not rest.startswith("E"):
            return name
    return "void " + base + (f"<{', '.join(args)}>" if args else "") + "(...)"


def _demangle(names: list[str]) -> dict[str, str]:
    tool = _find_tool("cu++filt") or shutil.which("c++filt")
    if tool and names:
        out = subprocess.run([tool], input="\n".join(names), capture_output=True,
                             text=True).stdout
        pretty = out.splitlines()
        if len(pretty) == len(names):
            return dict(zip(names, pretty))
    return {n: _demangle_simple(n) for n in names}


def compiler_report(family: str | None = None, *, sass: bool = True) -> Table:
    """Registers, stack (local) bytes and shared bytes of every kernel in the built
    extension, read with ``cuobjdump -res-usage`` -- no GPU needed -- and, with
    ``sass=True`` and ``nvdisasm`` at hand, the number of local-memory instructions
    (``LDL``/``STL``) in each kernel's SASS.

    Raises
    ------
    FileNotFoundError
        When ``cuobjdump`` is not found (CUDA toolkit's ``bin/``, or
        ``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``).
    """
    tool = _find_tool("cuobjdump")
    if tool is None:
        raise FileNotFoundError("compiler_report needs cuobjdump: put the CUDA toolkit's bin/ on "
                                "PATH or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    so = _core.__file__
    text = subprocess.run([tool, "-res-usage", so], capture_output=True, text=True,
                          check=True).stdout
    arch, res = None, {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*arch = (sm_\d+\w*)", line)
        if m:
            arch = m.group(1)
        m = re.match(r"\s*Function (\S+):", line)
        if m and i + 1 < len(lines):
            fields = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", lines[i + 1]))
            res[(arch, m.group(1))] = {k: int(v) for k, v in fields.items()}
    ldl: dict = {}
    disasm = _find_tool("nvdisasm")
    if sass and disasm:
        env = dict(os.environ, NVDISASM_PATH=os.path.dirname(disasm),
                   PATH=os.path.dirname(disasm) + os.pathsep + os.environ.get("PATH", ""))
        s = subprocess.run([tool, "-sass", so], capture_output=True, text=True, env=env)
        arch = cur = None
        for line in s.stdout.splitlines():
            m = re.search(r"code for (sm_\d+\w*)", line)
            if m:
                arch = m.group(1)
            m = re.search(r"Function : (\S+)", line)
            if m:
                cur = (arch, m.group(1))
                ldl[cur] = [0, 0]
            elif cur and re.search(r"\bLDL(\.|\s)", line):
                ldl[cur][0] += 1
            elif cur and re.search(r"\bSTL(\.|\s)", line):
                ldl[cur][1] += 1
    pretty = _demangle(sorted({k[1] for k in res}))
    rows = []
    for (a, name), f in res.items():
        p = pretty.get(name, name)
        base = p.split("<")[0].split("(")[0].split()[-1]
        fam = _KERNEL_FAMILY.get(base)
        if family is not None and fam != family:
            continue
        targs = re.findall(r"<(.*)>\s*\(", p)
        kernel = base + (f"<{targs[0]}>" if targs else "")
        row = {"kernel": kernel, "family": fam, "variant": _variant_of(fam, p), "arch": a,
               "registers": f.get("REG"),
               "stack bytes": f.get("STACK"), "shared bytes": f.get("SHARED")}
        if (a, name) in ldl:
            row["LDL"], row["STL"] = ldl[(a, name)]
        rows.append(row)
    rows.sort(key=lambda r: (str(r["family"]), r["kernel"], r["arch"]))
    return Table(rows, sources={c: "compiler" for c in ("registers", "stack bytes",
                                                        "shared bytes", "LDL", "STL")},
                 title="the compiler's resource report (cuobjdump)")
