"""Memory spaces, registers and divergence: the CUDA memory model made runnable.

* :func:`thread_histogram` -- a per-thread array indexed at run time (local
  memory) against the same work with compile-time indices (registers);
* :func:`lifetimes` -- ``__device__`` state persists across launches,
  ``__shared__`` state does not, ``__constant__`` set from the host persists;
* :func:`register_pressure` -- one kernel built at several ``__launch_bounds__``
  register caps: registers, spills, occupancy and time;
* :func:`divergence` -- a branch on ``threadIdx.x % 2`` against one on the
  warp index.

Every kernel has a NumPy reference (``*_reference``); :func:`local_vs_registers`,
:func:`register_pressure_sweep` and :func:`divergence_compare` measure them.
What the compiler and the occupancy API say about any kernel is in
:mod:`gpumem.introspect`; the stencil and the constant broadcast, once here,
are in :mod:`gpumem.stencil` (their old names here still work, with a
DeprecationWarning).
"""
from __future__ import annotations

from typing import Any, Literal, Union

import numpy as np

from . import _core
from ._core import DeviceArray
from ._names import _checking_only, _given, _host, _indices, _moved, _validate
from ._sweep import MAX_N, _bench, _choices, _int, _need_gpu, _repeat, _str
from ._table import Table

__all__ = [
    "REGCAP_CAPS", "REGCAP_LIVE", "divergence", "divergence_compare", "divergence_reference",
    "lifetimes", "local_vs_registers", "register_pressure", "register_pressure_reference",
    "register_pressure_sweep", "thread_histogram", "thread_histogram_reference",
]

Array = Union[np.ndarray, DeviceArray]

REGCAP_LIVE = 64          #: floats each register_pressure thread keeps live
#: register_pressure variant -> its register cap per thread.  Each variant is
#: ``__launch_bounds__(256, select)``: ``select`` blocks of 256 threads share the
#: SM's 65536 registers, allotted 8 per thread at a time, at most 255.
REGCAP_CAPS = {name: min(255, 65536 // (256 * select) // 8 * 8)
               for _, name, *_, select in _core.variants("register_pressure")}
HISTOGRAM_BINS = 16
MAX_THREADS = 2**31 - 1025   #: thread_histogram's most histograms (as the kernel checks)
MAX_ITERS = 1 << 20          #: register_pressure's rounds, divergence's iters: at most this
MAX_LAUNCHES = 10_000        #: lifetimes' launches: at most this

#: Names that left this module: old name -> (module, name) now.
_MOVED = {
    **{n: ("gpumem.stencil", n) for n in (
        "STENCIL_8TH_ORDER", "stencil_1d", "stencil_1d_reference", "constant_broadcast",
        "constant_broadcast_reference", "broadcast_table", "broadcast_sweep")},
    **{n: ("gpumem.introspect", n) for n in (
        "KernelAttributes", "Occupancy", "kernel_attributes", "kernel_occupancy",
        "block_size_sweep", "compiler_report")},
    "occupancy": ("gpumem.introspect", "kernel_occupancy"),
    "model_occupancy": ("gpumem.introspect", "_model_occupancy"),
    "register_cap_sweep": ("gpumem.spaces", "register_pressure_sweep"),
}


def __getattr__(name: str) -> Any:
    # the one place this module names another lesson: old names, lazily, with a warning
    return _moved(__name__, name, _MOVED)


# ---- local memory vs registers -------------------------------------------------------
def thread_histogram(x: Array, *, variant: Literal["local", "registers"] = "local",
                     threads: int | None = None, block: int = 256,
                     out: DeviceArray | None = None):
    """A private 16-bin histogram per thread: thread ``t`` counts ``x[t::threads]``.

    The bin of ``v`` is ``clip(floor(16 v), 0, 15)`` (NaN counts in bin 0).
    ``variant="local"`` indexes the per-thread array with the bin (known only at run
    time), so the compiler puts it in local memory; ``"registers"`` adds
    ``(bin == b)`` to every bin ``b`` -- compile-time indices only -- and keeps it
    in registers.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, 1-D
    variant : {"local", "registers"}
    threads : int, optional
        Number of histograms (default ``min(len(x), 65536)``, at least 1).
    block : int
        Threads per block, a multiple of 32 up to 1024.
    out : DeviceArray, optional
        int32, shape ``(16, threads)``.

    Returns
    -------
    int32 array of shape ``(16, threads)``: ``[b, t]`` is thread t's count of bin b.
    """
    _given("thread_histogram", x=x)
    return _core.thread_histogram(x, variant=variant, out=out,
                                  **_indices("thread_histogram", threads=threads, block=block))


def thread_histogram_reference(x: np.ndarray, threads: int) -> np.ndarray:
    """NumPy reference of :func:`thread_histogram`."""
    fn = "thread_histogram_reference"
    x = _host(fn, "x", x, np.float32, ndim=1)
    threads = _int(fn, "threads", threads, 1, MAX_THREADS)
    b = np.floor(x * np.float32(HISTOGRAM_BINS))
    b = np.nan_to_num(np.clip(b, 0, HISTOGRAM_BINS - 1), nan=0.0).astype(np.int64)
    t = np.arange(x.size) % threads
    counts = np.bincount(b * threads + t, minlength=HISTOGRAM_BINS * threads)
    return counts.reshape(HISTOGRAM_BINS, threads).astype(np.int32)


# ---- lifetimes ---------------------------------------------------------------------
def lifetimes(launches: int = 3, *, blocks: int = 4, block: int = 64, value: int = 7,
              counter: int = 0) -> Table | None:
    """Launch the lifetime kernel ``launches`` times and tabulate what each launch saw.

    Before the first launch the host sets a ``__constant__ int`` to ``value`` and a
    ``__device__`` counter to ``counter`` (both with ``cudaMemcpyToSymbol``); later
    launches set nothing.  Each block counts its threads in a ``__shared__`` int
    (zeroed by the block itself: shared memory starts undefined every launch) and
    adds the count to the ``__device__`` counter.

    Parameters
    ----------
    launches : int
        Launches, >= 1.
    blocks, block : int
        Blocks per launch (>= 1) and threads per block (a multiple of 32).
    value, counter : int
        What the host sets the ``__constant__`` int and the ``__device__`` counter
        to before the first launch.

    Returns
    -------
    Table with, per launch: the shared count of every block (always ``block``), the
    device counter after the launch (``counter + k * blocks * block``), and the
    constant every block read (``value`` every time).  None while gpumem checks a
    call without running it (``bench(gm.lifetimes, ...)`` checks its arguments first).
    """
    launches = _int("lifetimes", "launches", launches, 1, MAX_LAUNCHES)
    # the kernel's own checks of blocks, block, value and counter, before the first launch
    ints = _indices("lifetimes", blocks=blocks, block=block, value=value, counter=counter)
    _validate(_core.lifetimes, (), ints)
    if _checking_only():            # bench(gm.lifetimes, ...) checking its call
        return None
    blocks, block, value, counter = ints.values()
    rows = []
    for k in range(launches):
        kw = dict(value=value, counter=counter) if k == 0 else {}
        r = _core.lifetimes(blocks=blocks, block=block, **kw)
        rows.append({"launch": k + 1, "host set": "constant, counter" if k == 0 else "nothing",
                     "__shared__ count (every block)": sorted(set(r[0].tolist())),
                     "__device__ counter after": int(r[1].max()),
                     "__constant__ read (every block)": sorted(set(r[2].tolist()))})
    return Table(rows, sources={c: "measured" for c in rows[0] if c not in ("launch", "host set")},
                 title=f"lifetimes: {blocks} blocks of {block} threads per launch")


# ---- register caps -------------------------------------------------------------------
def register_pressure(x: Array, *, variant: str = "uncapped", rounds: int = 8,
                      block: int = 256, out: DeviceArray | None = None):
    """Each thread keeps 64 floats live through ``rounds`` rounds of mixing.

    Column ``t`` of ``x`` (shape ``(64, n)``) holds thread ``t``'s values ``v``; each
    round does ``v[j] = v[j]/2 + v[j+1]/4`` for ``j = 0..63`` in order (indices mod 64,
    so the last uses the new ``v[0]``), and ``out[t] = v[0] + ... + v[63]``.
    ``variant`` picks the build: ``"uncapped"`` (``__launch_bounds__(256, 1)``),
    ``"cap128"``, ``"cap64"``, ``"cap40"``, ``"cap32"`` (``__launch_bounds__(256, B)``
    with B = 2, 4, 6, 8 -- the variant's ``select`` in :func:`gpumem.variants` --: at
    most 65536 / (256 B) registers per thread, :data:`REGCAP_CAPS`; the rest spills).
    A bound the SM cannot meet is not applied: B blocks of 256 threads must fit the
    SM's thread limit, so on GPUs with 1024 (sm_75) or 1536 (sm_86, sm_89, sm_120)
    threads per SM the compiler builds cap32 (and on sm_75 cap40) with the registers
    it wants and no spills -- :func:`gpumem.compiler_report` shows it per architecture.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, shape (64, n)
    variant : str
        A key of :data:`REGCAP_CAPS`.
    rounds : int
        Rounds of mixing, >= 0.
    block : int
        A multiple of 32, at most 256 (the launch bounds promise 256).
    out : DeviceArray, optional
        float32, shape ``(n,)``.

    Returns
    -------
    float32 array of shape ``(n,)``: each thread's sum.
    """
    _given("register_pressure", x=x)
    return _core.register_pressure(x, variant=variant, out=out,
                                   **_indices("register_pressure", rounds=rounds, block=block))


def register_pressure_reference(x: np.ndarray, rounds: int = 8) -> np.ndarray:
    """NumPy reference of :func:`register_pressure` (float32, same order of operations)."""
    fn = "register_pressure_reference"
    x = _host(fn, "x", x, np.float32, ndim=2)
    if x.shape[0] != REGCAP_LIVE:
        raise ValueError(f"{fn}: x must have shape ({REGCAP_LIVE}, n), not {x.shape}")
    rounds = _int(fn, "rounds", rounds, 0, MAX_ITERS)
    v = [row.copy() for row in x]
    h, q = np.float32(0.5), np.float32(0.25)
    for _ in range(rounds):
        for j in range(REGCAP_LIVE):
            v[j] = v[j] * h + v[(j + 1) % REGCAP_LIVE] * q
    acc = np.zeros_like(v[0])
    for j in range(REGCAP_LIVE):
        acc = acc + v[j]
    return acc


# ---- divergence ---------------------------------------------------------------------------
def divergence(x: Array, *, variant: Literal["odd_even", "warp"] = "odd_even", iters: int = 256,
               block: int = 256, out: DeviceArray | None = None):
    """Half the threads run ``x = x/2 + 1``, the other half ``x = x/4 + 3``, ``iters`` times.

    ``variant="odd_even"`` splits on ``threadIdx.x % 2`` (odd threads take the first
    path): every warp holds both halves and runs both loops one after the other.
    ``"warp"`` splits on ``(threadIdx.x / 32) % 2``: whole warps agree and no warp
    diverges.  Same work, same result shape.

    Parameters
    ----------
    x : numpy.ndarray or DeviceArray, float32, 1-D
    variant : {"odd_even", "warp"}
    iters : int
        Loop trips, >= 0.
    block : int
        Threads per block, a multiple of 32 up to 1024.
    out : DeviceArray, optional
        float32, same shape as ``x``.

    Returns
    -------
    float32 array shaped like ``x``.
    """
    _given("divergence", x=x)
    return _core.divergence(x, variant=variant, out=out,
                            **_indices("divergence", iters=iters, block=block))


def divergence_reference(x: np.ndarray, iters: int = 256, *, variant: str = "odd_even",
                         block: int = 256) -> np.ndarray:
    """NumPy reference of :func:`divergence` (float32)."""
    fn = "divergence_reference"
    x = _host(fn, "x", x, np.float32, ndim=1).copy()
    iters = _int(fn, "iters", iters, 0, MAX_ITERS)
    (variant,) = _choices(fn, "variant", _str(fn, "variant", variant),
                          _variant_names("divergence"))
    block = _int(fn, "block", block, 32, 1024)
    if block % 32:
        raise ValueError(f"{fn}: block={block} is not allowed; block must be a multiple of 32")
    tid = np.arange(x.size) % block
    odd = (tid % 2 == 1) if variant == "odd_even" else ((tid // 32) % 2 == 1)
    a, b = x[odd], x[~odd]
    for _ in range(iters):
        a = a * np.float32(0.5) + np.float32(1.0)
        b = b * np.float32(0.25) + np.float32(3.0)
    x[odd], x[~odd] = a, b
    return x


# ---- sweeps ----------------------------------------------------------------------
def _variant_names(family: str) -> list[str]:
    return [v[1] for v in _core.variants(family)]


def _zeros(n: int) -> np.ndarray:
    """n float32 zeros that take no memory (for a check, which never reads them)."""
    return np.broadcast_to(np.float32(0), (n,))


def local_vs_registers(n: int = 1 << 24, *, threads: int = 1 << 16, repeat: int = 20) -> Table:
    """:func:`thread_histogram` in local memory and in registers: resources and time."""
    from . import kernel_attributes   # introspect, through the package (lazily)

    fn = "local_vs_registers"
    n, repeat = _int(fn, "n", n, 1, MAX_N), _repeat(fn, repeat)
    threads = _int(fn, "threads", threads, 1, MAX_THREADS)
    _validate(thread_histogram, (_zeros(n),), dict(threads=threads))
    _need_gpu()
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    rows = []
    for v in _variant_names("thread_histogram"):                  # local, registers
        a = kernel_attributes("thread_histogram", v)
        r, _ = _bench(thread_histogram, x, variant=v, threads=threads, repeat=repeat, warmup=2)
        rows.append({"variant": v, "regs/thread": a.registers_per_thread,
                     "local bytes/thread": a.local_bytes_per_thread, "median_ms": r.median_ms,
                     "GB/s": r.gbps})
    return Table(rows, sources={"median_ms": "measured", "GB/s": "measured"},
                 title=f"per-thread histogram: local memory vs registers (n={n})")


def register_pressure_sweep(n: int = 1 << 20, *, rounds: int = 8, repeat: int = 20) -> Table:
    """:func:`register_pressure` at every cap: registers, spilled (local) bytes,
    occupancy at 256 threads per block, and time."""
    from . import kernel_attributes, kernel_occupancy   # introspect, through the package

    fn = "register_pressure_sweep"
    n, repeat = _int(fn, "n", n, 1, MAX_N // REGCAP_LIVE), _repeat(fn, repeat)
    rounds = _int(fn, "rounds", rounds, 0, MAX_ITERS)
    _need_gpu()
    x = np.random.default_rng(0).standard_normal((REGCAP_LIVE, n), dtype=np.float32)
    rows = []
    for v in REGCAP_CAPS:
        occ = kernel_occupancy("register_pressure", v, 256)
        a = kernel_attributes("register_pressure", v)
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
    fn = "divergence_compare"
    n, repeat = _int(fn, "n", n, 1, MAX_N), _repeat(fn, repeat)
    iters = _int(fn, "iters", iters, 0, MAX_ITERS)
    _need_gpu()
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    rows = []
    for v in sorted(_variant_names("divergence"), key=lambda v: v != "warp"):  # warp first
        r, _ = _bench(divergence, x, variant=v, iters=iters, repeat=repeat, warmup=2)
        rows.append({"variant": v, "median_ms": r.median_ms, "GFLOP/s": r.gflops})
    for row in rows:
        row["x warp"] = row["median_ms"] / rows[0]["median_ms"]
    return Table(rows, sources={"median_ms": "measured", "GFLOP/s": "measured"},
                 title=f"warp divergence: n={n}, iters={iters}")
