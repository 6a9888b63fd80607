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
:mod:`gpumem.tools.introspect`.
"""
from __future__ import annotations

from typing import Literal, Union

import numpy as np

from .. import _core, runtime, model
from .._core import DeviceArray
from ..runtime.args import (arg_range, _checked, _checking_only, _given, _host, _index, _indices,
                            _validate)
from ..tools.introspect import kernel_attributes, kernel_occupancy
from ..tools.sweep import MAX_N, _bench, _int, _need_gpu, _repeat
from ..runtime.table import Table
from ..tools.lesson import Lesson, sanitize_f32 as _f32
from ..tools import card, headline as hl

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
MAX_LAUNCHES = 10_000        #: lifetimes' launches: at most this

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
    threads = _checked(fn, "thread_histogram", "threads", threads)
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
    # (every one an int: None is no default here)
    ints = {k: _index("lifetimes", k, v) for k, v in (("blocks", blocks), ("block", block),
                                                      ("value", value), ("counter", counter))}
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
    rounds = _checked(fn, "register_pressure", "rounds", rounds)
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
    iters = _checked(fn, "divergence", "iters", iters)
    variant = _checked(fn, "divergence", "variant", variant)
    block = _checked(fn, "divergence", "block", block)
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
    fn = "local_vs_registers"
    n, repeat = _int(fn, "n", n, 1, MAX_N), _repeat(fn, repeat)
    threads = _checked(fn, "thread_histogram", "threads", threads)
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
    fn = "register_pressure_sweep"
    n, repeat = _int(fn, "n", n, 1, MAX_N // REGCAP_LIVE), _repeat(fn, repeat)
    rounds = _checked(fn, "register_pressure", "rounds", rounds)
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
    iters = _checked(fn, "divergence", "iters", iters)
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


# ---- gpumem report: the headline and the full sweeps ------------------------------------
def _occupancy_model(regs: int) -> int:
    return model.occupancy(hl.MODEL_CC, 256, regs, 0).blocks_per_sm


def _headline(measure: bool, quick: bool) -> list[dict]:
    hist_local = 4 * HISTOGRAM_BINS
    caps = REGCAP_CAPS
    hmod = {"local_bytes_per_thread_local": float(hist_local),
            "local_bytes_per_thread_registers": 0.0}
    hmtext = (f"a run-time-indexed {HISTOGRAM_BINS}-bin array: {hist_local} B/thread of "
              "local memory; compile-time indices: 0")
    hwhat = "thread_histogram, local memory vs registers"
    # cap32: at most 32 registers for 64 live floats; the model's blocks/SM at each cap
    rmod = {"cap32_max_registers": float(caps["cap32"]),
            "cap32_blocks_per_sm": float(_occupancy_model(caps["cap32"])),
            "uncapped_blocks_per_sm": float(_occupancy_model(caps["uncapped"]))}
    rmtext = (f"cap32: <= {caps['cap32']} registers for {REGCAP_LIVE} live floats, "
              f"{rmod['cap32_blocks_per_sm']:.0f} blocks/SM vs "
              f"{rmod['uncapped_blocks_per_sm']:.0f} at {caps['uncapped']} registers "
              f"(model, sm_{hl.MODEL_CC.replace('.', '')})")
    rwhat = "register_pressure, cap32 vs uncapped (__launch_bounds__)"
    dmod = {"odd_even_over_warp": 2.0}
    dmtext = "odd_even runs both halves' loops one after the other: about 2x"
    dwhat = "divergence, odd_even vs warp-aligned branch"
    dtake = "branch on whole warps, not on neighbouring threads"
    if not measure:
        return [hl._unmeasured("spaces", hwhat, "time of both and local bytes/thread "
                            "(gpumem.kernel_attributes)", model=hmod, model_text=hmtext,
                            takeaway="an array indexed at run time leaves the registers"),
                hl._unmeasured("spaces", rwhat, "spilled bytes, time and blocks/SM "
                            "(gpumem.kernel_occupancy)", model=rmod, model_text=rmtext,
                            takeaway="a register cap trades spills for occupancy"),
                hl._unmeasured("spaces", dwhat, "the time ratio", model=dmod, model_text=dmtext,
                            takeaway=dtake)]
    rng = hl._rng()
    # local vs registers
    n = 2**22 if quick else 2**24
    x = runtime.to_device(rng.random(n, dtype=np.float32))
    # register caps
    rn = 2**18 if quick else 2**20
    xr = runtime.to_device(rng.standard_normal((REGCAP_LIVE, rn), dtype=np.float32))
    rout = runtime.empty((rn,))
    both, got = hl._timed({**{("hist", v): (thread_histogram, (x,), {"variant": v})
                           for v in ("local", "registers")},
                        **{("regs", v): (register_pressure, (xr,), {"variant": v, "out": rout})
                           for v in ("uncapped", "cap32")}}, "local_load_transactions", quick)
    hres = {v: r for (kind, v), r in both.items() if kind == "hist"}
    rres = {v: r for (kind, v), r in both.items() if kind == "regs"}
    rattr = {v: kernel_attributes("register_pressure", v) for v in rres}
    hattr = {v: kernel_attributes("thread_histogram", v) for v in hres}
    rocc = {v: kernel_occupancy("register_pressure", v, 256) for v in rres}
    # divergence
    dn = 2**20 if quick else 2**22
    xd = runtime.to_device(rng.standard_normal(dn, dtype=np.float32))
    dres = {v: hl._bench(divergence, xd, variant=v, quick=quick) for v in ("odd_even", "warp")}

    hmeas = {f"local_bytes_per_thread_{v}": float(a.local_bytes_per_thread)
             for v, a in hattr.items()}
    hmeas.update({f"{v}_ms": r.median_ms for v, r in hres.items()})
    hslow = hres["local"].median_ms / hres["registers"].median_ms
    htext = (f"local {hres['local'].median_ms:.3f} ms ({hattr['local'].local_bytes_per_thread} "
             f"B/thread), registers {hres['registers'].median_ms:.3f} ms "
             f"({hattr['registers'].local_bytes_per_thread} B/thread)")
    rmeas = {f"{v}_ms": r.median_ms for v, r in rres.items()}
    rmeas.update({f"{v}_local_bytes_per_thread": float(a.local_bytes_per_thread)
                  for v, a in rattr.items()})
    rmeas.update({f"{v}_registers": float(a.registers_per_thread) for v, a in rattr.items()})
    rmeas.update({f"{v}_blocks_per_sm": float(o.blocks_per_sm) for v, o in rocc.items()})
    rtext = "; ".join(f"{v}: {rattr[v].registers_per_thread} regs, "
                      f"{rattr[v].local_bytes_per_thread} B spilled, {rocc[v].blocks_per_sm} "
                      f"blocks/SM, {rres[v].median_ms:.3f} ms" for v in rres)
    if got is not None:
        for (kind, v), g in got.items():
            (hmeas if kind == "hist" else rmeas)[f"{v}_local_load_transactions"] = g
        htext += (f"; local load sectors {hmeas['local_local_load_transactions'] or 0:,.0f} "
                  f"vs {hmeas['registers_local_load_transactions'] or 0:,.0f}")
        rtext += (f"; local load sectors cap32 {rmeas['cap32_local_load_transactions'] or 0:,.0f}"
                  f" vs uncapped {rmeas['uncapped_local_load_transactions'] or 0:,.0f}")
    dratio = dres["odd_even"].median_ms / dres["warp"].median_ms
    dmeas = {f"{v}_ms": r.median_ms for v, r in dres.items()}
    dmeas["odd_even_over_warp"] = dratio
    rfaster = rres["uncapped"].median_ms / rres["cap32"].median_ms
    return [hl._row("spaces", hwhat, measured=hmeas, model=hmod, measured_text=htext,
                 model_text=hmtext,
                 takeaway=f"the local-memory histogram takes {hslow:.2f}x the time of the "
                          "one in registers"),
            hl._row("spaces", rwhat, measured=rmeas, model=rmod, measured_text=rtext,
                 model_text=rmtext,
                 takeaway=f"more blocks per SM for spills: cap32 runs {rfaster:.2f}x the "
                          "speed of uncapped here"),
            hl._row("spaces", dwhat, measured=dmeas, model=dmod, model_text=dmtext,
                 measured_text=(f"odd_even {dres['odd_even'].median_ms:.3f} ms, warp "
                                f"{dres['warp'].median_ms:.3f} ms: {dratio:.2f}x"),
                 takeaway=dtake)]

def _report_sweeps(measure: bool, quick: bool, progress: bool) -> list[Table]:
    if measure:
        repeat = 5 if quick else 20
        return [local_vs_registers(2**22 if quick else 2**24, repeat=repeat),
                register_pressure_sweep(2**18 if quick else 2**20, repeat=repeat),
                divergence_compare(2**20 if quick else 2**22, repeat=repeat)]
    rows = [{"variant": v, "cap": c, "blocks/SM": _occupancy_model(c)}
            for v, c in REGCAP_CAPS.items()]
    return [Table(rows, sources={"blocks/SM": "model"},
                  title=f"register caps at 256 threads per block (no GPU: model, "
                        f"sm_{hl.MODEL_CC.replace('.', '')}; register_pressure_sweep "
                        "would measure spills and time)")]


# ---- gpumem report: the memory card --------------------------------------------------------
#: Where the register file's size per compute capability is published (the model's limits).
REGISTERS_SOURCE = ("CUDA C++ Programming Guide, compute capabilities: 32-bit registers per "
                    "SM (gpumem.model.ARCHS)")


def _card(measure: bool, quick: bool) -> list[dict]:
    """The registers on the memory card: the register file of one SM (the device's
    attributes; without a GPU the model's compute capability), beside the figure the
    programming guide gives for that compute capability.  Nothing is timed: a register
    is an operand of the instruction, not a load a chase could wait on."""
    if measure:
        dev = runtime.device()
        regs, cc = int(dev.registers_per_multiprocessor), "%d.%d" % tuple(dev.compute_capability)
    else:
        cc = hl.MODEL_CC
        regs = model.ARCHS[cc].regs_per_sm
    arch = model.ARCHS.get(cc)
    kw = {"published_text": f"{arch.regs_per_sm // 1024} Ki x 32-bit/SM (cc {cc})",
          "source": REGISTERS_SOURCE} if arch else {}
    return [card.card_row("registers", "spaces", size=4 * regs,
                          size_text_=f"{card.size_text(4 * regs, '/SM')} ({regs // 1024} Ki x "
                                     "32-bit)",
                          how="the register file's size: 32-bit registers per SM x 4 bytes "
                              + ("(the device's attributes)" if measure else
                                 f"(compute capability {cc}, the model's)")
                              + "; latency not measured: a register is an operand, not a load",
                          **kw)]


# ---- compute-sanitizer: every variant once, on small awkward sizes ---------------------
def _sanitize_thread_histogram():
    for v in runtime.variants("thread_histogram"):
        thread_histogram(_f32(1000), variant=v.name, threads=77, block=32)


def _sanitize_lifetimes():
    lifetimes(2, blocks=3, block=64)


def _sanitize_register_pressure():
    for v in runtime.variants("register_pressure"):
        register_pressure(_f32(64, 300), variant=v.name, rounds=2, block=96)


def _sanitize_divergence():
    for v in runtime.variants("divergence"):
        divergence(_f32(1000), variant=v.name, iters=3, block=96)


def _sanitize() -> None:
    """Every variant of every family of this lesson, once (tools/sanitize_calls.py)."""
    _sanitize_thread_histogram()
    _sanitize_lifetimes()
    _sanitize_register_pressure()
    _sanitize_divergence()


# ---- what the shared tests read: a fake GPU's measurements, argument strategies ----------------
def _stand_ins(gpu) -> dict:
    """On the tests' fake GPU (:attr:`Lesson.stand_ins`): local memory 3x slower than
    registers, the 32-register cap spilling 160 bytes a thread for 8 blocks per SM against
    3, the odd/even branch twice the warp-uniform one."""
    from types import SimpleNamespace

    return {"thread_histogram": gpu.kernel(
                "thread_histogram", {"local": 3.0, "registers": 1.0},
                counters={"local": {"local_load_transactions": 5e6},
                          "registers": {"local_load_transactions": 0.0}}),
            "register_pressure": gpu.kernel(
                "register_pressure", {"uncapped": 2.0, "cap32": 1.6},
                counters={"uncapped": {"local_load_transactions": 0.0},
                          "cap32": {"local_load_transactions": 2e6}}),
            "divergence": gpu.kernel("divergence", {"odd_even": 2.0, "warp": 1.0}),
            "kernel_attributes": lambda fam, v: SimpleNamespace(
                local_bytes_per_thread={"local": 64, "cap32": 160}.get(v, 0),
                registers_per_thread={"cap32": 32, "uncapped": 72}.get(v, 24)),
            "kernel_occupancy": lambda fam, v, block: SimpleNamespace(
                blocks_per_sm={"cap32": 8, "uncapped": 3}[v])}


def _arguments(st) -> dict:
    """register_pressure's x is (64, n) (REGCAP_LIVE rows); lifetimes sets value and counter
    before its first launch, so its Python defaults are ints where the kernel's table has
    None (:attr:`Lesson.arguments`)."""
    return {"register_pressure": st.integers(1, 64).map(
                lambda n: {"x": np.ones((REGCAP_LIVE, n), np.float32)}),
            "lifetimes": st.fixed_dictionaries({k: st.integers(*arg_range("lifetimes", k))
                                                for k in ("value", "counter")})}


LESSON = Lesson(
    name='spaces',
    idea='memory spaces: local memory against registers, variable lifetimes, register caps and occupancy, divergence',
    families=('thread_histogram', 'lifetimes', 'register_pressure', 'divergence'),
    exports=('divergence', 'lifetimes', 'register_pressure', 'thread_histogram'),
    sweeps=('local_vs_registers', 'register_pressure_sweep', 'divergence_compare'),
    notebooks=('05_spaces',),
    benchmark=None,
    headline=_headline,
    report_sweeps=_report_sweeps,
    sanitize=_sanitize,
    card=_card,
    model=(),
    stand_ins=_stand_ins,
    arguments=_arguments,
)
