"""Hardware counters read inside the process, around gpumem's own launches.

>>> with gpumem.profile(metrics=["gld_efficiency", "gld_transactions"]) as p:
...     gpumem.vec_add(a, b)
>>> p.records[0].metrics["gld_efficiency"]
100.0
>>> p.table()

The counters come from CUPTI's Range Profiler (the library Nsight Compute
uses), loaded at run time: gpumem imports and times kernels without it.
Every launch inside the block is one range, and runs and is timed as
usual.  When the metrics need several passes, gpumem replays its launches
itself (it knows them): by default it records each launch on copies of its
buffers and replays the recorded launches together at the end of the block
(or every 64 launches), one CUPTI start per pass for all of them, with L2
flushed and in-place buffers restored before each, as ``ncu`` does by
default.  Results and timings are those of an unprofiled call.

The familiar nvprof names (``gld_efficiency``, ``gld_transactions``, ...)
are aliases of Nsight Compute metrics (:func:`metrics` lists them); raw
Nsight Compute names such as ``dram__bytes_read.sum`` pass through.
"""
from __future__ import annotations

import difflib
import itertools
import os
import re
import sys
import threading
from typing import NamedTuple, Sequence

import numpy as np

from .. import _core
from .._core import ProfilerError
from .args import _iterable
from .table import Table

__all__ = ["ProfilerError", "MetricAlias", "Profile", "metrics", "profile", "profiler_available",
           "raw_metrics"]


class MetricAlias(NamedTuple):
    """An nvprof-style name for one Nsight Compute metric, or a ratio (or
    difference, ``op="-"``) of two."""

    name: str
    ncu: str            # the Nsight Compute metric (first operand when derived)
    per: str | None     # second operand when derived (value = ncu / per, or ncu - per)
    unit: str
    definition: str
    op: str = "/"

    @property
    def formula(self) -> str:
        return f"{self.ncu} {self.op} {self.per}" if self.per else self.ncu

    @property
    def raw(self) -> tuple[str, ...]:
        """The Nsight Compute metrics this alias needs."""
        return (self.ncu, self.per) if self.per else (self.ncu,)

    def evaluate(self, raw: dict) -> float:
        """The alias's value from raw metric values (e.g. parsed from ``ncu --csv``)."""
        v = float(raw[self.ncu])
        if self.per is None:
            return v
        d = float(raw[self.per])
        if self.op == "-":
            return v - d
        return v / d if d else float("nan")


_GLD_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
_GST_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
_GLD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
_GST_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
# the SASS-level counts: the l1tex__t_*_op_ldgsts.sum names are not collectable on GH100
_LDGSTS_SECT = "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"
_LDGSTS_REQ = "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts.sum"

_ALIAS_LIST = [
    MetricAlias("gld_efficiency", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
                None, "%", "bytes the warps' global loads asked for / bytes of the 32-byte "
                "sectors fetched for them (100% = fully coalesced)"),
    MetricAlias("gst_efficiency", "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
                None, "%", "bytes the warps' global stores wrote / bytes of the sectors they "
                "touched"),
    MetricAlias("gld_transactions", _GLD_SECT, None, "sectors",
                "32-byte sectors global loads moved through L1 (nvprof counted transactions)"),
    MetricAlias("gst_transactions", _GST_SECT, None, "sectors",
                "32-byte sectors global stores moved through L1"),
    MetricAlias("gld_requests", _GLD_REQ, None, "requests",
                "global load instructions executed by warps (one request per warp-instruction)"),
    MetricAlias("gst_requests", _GST_REQ, None, "requests",
                "global store instructions executed by warps"),
    # cp.async (PTX cp.async, SASS LDGSTS; sm_80 and newer) copies global memory to
    # shared memory without registers.  The SASS-level op_ldgsts counts hold the copies
    # alone; on the H100 the l1tex op_ld requests and sectors behind gld_requests and
    # gld_transactions count them as well (gld_efficiency, a SASS counter, does not).
    MetricAlias("gldgsts_requests", _LDGSTS_REQ, None, "requests",
                "asynchronous global -> shared copy instructions (cp.async, LDGSTS) executed "
                "by warps, one request per warp-instruction (on the H100 gld_requests "
                "includes them)"),
    MetricAlias("gldgsts_transactions", _LDGSTS_SECT, None, "sectors",
                "32-byte sectors of global memory that asynchronous global -> shared copies "
                "(cp.async, LDGSTS) read (on the H100 gld_transactions includes them, "
                "exactly); this SASS-level count is exact for 4-byte copies; for 16-byte ones (which bypass L1) a "
                "few percent off and varying run to run, and higher where lanes zero-fill"),
    MetricAlias("gld_transactions_per_request", _GLD_SECT, _GLD_REQ, "sectors/request",
                "sectors per global load request: 4 when a warp reads 128 contiguous bytes"),
    MetricAlias("gst_transactions_per_request", _GST_SECT, _GST_REQ, "sectors/request",
                "sectors per global store request"),
    MetricAlias("shared_load_transactions", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                None, "wavefronts", "shared-memory load wavefronts (one per conflict-free "
                "warp access; bank conflicts add more)"),
    MetricAlias("shared_store_transactions",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", None, "wavefronts",
                "shared-memory store wavefronts"),
    # Address-caused conflicts: wavefronts beyond one per warp instruction.
    # Hopper's l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum
    # also counts conflicts the addresses do not cause and does not repeat
    # itself (measured on an H100, the same tiled matmul launch: 12, 79, 131
    # and 167); it still passes through under its own name.
    MetricAlias("shared_load_bank_conflict",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                "smsp__inst_executed_op_shared_ld.sum", "wavefronts",
                "shared-memory load wavefronts beyond one per warp instruction: the bank "
                "conflicts the addresses cause (64- and 128-bit accesses need 2 and 4 "
                "wavefronts without any conflict, which this counts too)", "-"),
    MetricAlias("shared_store_bank_conflict",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                "smsp__inst_executed_op_shared_st.sum", "wavefronts",
                "shared-memory store wavefronts beyond one per warp instruction (as "
                "shared_load_bank_conflict)", "-"),
    MetricAlias("local_load_transactions", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", None,
                "sectors", "sectors of local memory (register spills, local arrays) loaded"),
    MetricAlias("local_store_transactions", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", None,
                "sectors", "sectors of local memory stored"),
    MetricAlias("dram_read_bytes", "dram__bytes_read.sum", None, "bytes",
                "bytes read from device memory (HBM/GDDR), L2 misses and prefetches"),
    MetricAlias("dram_write_bytes", "dram__bytes_write.sum", None, "bytes",
                "bytes written to device memory (L2 write-backs)"),
    MetricAlias("l1_hit_rate", "l1tex__t_sector_hit_rate.pct", None, "%",
                "sectors found in L1/texture cache / sectors requested from it (nvprof "
                "global_hit_rate's nearest counter)"),
    MetricAlias("l2_hit_rate", "lts__t_sector_hit_rate.pct", None, "%",
                "sectors found in L2 / sectors requested from L2 (reads and writes)"),
    MetricAlias("achieved_occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", None,
                "%", "average active warps per SM cycle / the SM's maximum warps"),
    MetricAlias("branch_efficiency", "smsp__sass_average_branch_targets_threads_uniform.pct",
                None, "%", "branch instructions whose threads all went the same way / all "
                "branches (the nearest counter to nvprof's branch_efficiency)"),
    MetricAlias("gpu_time_ns", "gpu__time_duration.sum", None, "ns",
                "kernel duration measured by the GPU during the profiling pass"),
]

ALIASES: dict[str, MetricAlias] = {a.name: a for a in _ALIAS_LIST}

# unit__counter.rollup[.submetric]: the shape of every Nsight Compute metric name.
_MAX_NAMES = 1000   #: more metric names than any profile could read
_RAW = re.compile(r"^[a-z][a-z0-9_]*__[a-z0-9_]+(\.[a-z0-9_]+)+$")


def metrics() -> Table:
    """The metric aliases gpumem understands, with their Nsight Compute definitions.

    Returns
    -------
    Table
        Columns ``name``, ``nsight_compute`` (the metric, or ``a / b`` when
        derived), ``unit``, ``counted_by`` (``"instrumentation"``: CUPTI patches
        the kernel's instructions, ``smsp__sass_*``; ``"hardware"``: the
        performance counters; the two kinds never share a pass) and
        ``definition``.  Raw Nsight Compute names (``unit__counter.rollup``)
        are accepted by :func:`profile` as well.
    """
    def kind(a):
        return "instrumentation" if all(r.startswith("smsp__sass_") for r in a.raw) else \
            "hardware"
    return Table([{"name": a.name, "nsight_compute": a.formula, "unit": a.unit,
                   "counted_by": kind(a), "definition": a.definition} for a in _ALIAS_LIST],
                 title="gpumem metric aliases (nvprof name -> Nsight Compute)")


def _check_names(names, fn: str = "profile", arg: str = "metrics") -> list[str]:
    """``names`` as a list of known metric names (aliases or raw Nsight Compute names),
    duplicates dropped; errors name ``fn``, the function the user called, and ``arg``."""
    if isinstance(names, (str, bytes)) or not _iterable(names):
        raise TypeError(f"{fn}: {arg} must be a sequence (list) of metric names, e.g. "
                        f"{arg}=['gld_efficiency'], not {type(names).__name__}")
    out: list[str] = []
    for n in itertools.islice(names, _MAX_NAMES + 1):
        if not isinstance(n, str):
            raise TypeError(f"{fn}: every name in {arg} must be a str, not {type(n).__name__}")
        if n in ALIASES or _RAW.match(n):
            if n not in out:
                out.append(n)
            if len(out) > _MAX_NAMES:
                raise ValueError(f"{fn}: {arg} names more than {_MAX_NAMES} metrics")
            continue
        known = list(ALIASES) + sorted({r for a in _ALIAS_LIST for r in a.raw})
        close = difflib.get_close_matches(n, known, n=5, cutoff=0.5)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        raise ValueError(f"{fn}: unknown metric {n!r}{hint}; gpumem.metrics() lists the "
                         "aliases; raw Nsight Compute names look like 'dram__bytes_read.sum'")
    if not out:
        raise ValueError(f"{fn}: {arg} is empty; name at least one, e.g. ['gld_efficiency']")
    return out


def raw_metrics(names: Sequence[str]) -> list[str]:
    """The Nsight Compute metrics behind ``names`` (aliases expanded, raw names kept)."""
    raw: list[str] = []
    for n in _check_names(names, "raw_metrics", "names"):
        for r in (ALIASES[n].raw if n in ALIASES else (n,)):
            if r not in raw:
                raw.append(r)
    return raw


def _plan(names: list[str]) -> tuple[list[str], list[tuple[str, int, int]]]:
    raw = raw_metrics(names)
    outputs = []
    for n in names:
        a = ALIASES.get(n)
        if a is None:
            outputs.append((n, raw.index(n), -1))
        else:
            second = -1 if not a.per else raw.index(a.per) if a.op == "/" else \
                -2 - raw.index(a.per)
            outputs.append((n, raw.index(a.ncu), second))
    return raw, outputs


def _cupti_dirs() -> list[str]:
    """Where libcupti may live: first the nvidia-cuda-cupti wheel of this environment
    (``pip install 'gpumem-lab[profile]'``: the CUDA major gpumem was built with), then the
    toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda); the loader's own path is tried last."""
    dirs: list[str] = []
    candidates = [os.path.join(entry or ".", sub) for entry in sys.path
                  for sub in ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib")]
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    candidates += [os.path.join(root, sub) for root in roots if root
                   for sub in ("extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib",
                               "targets/sbsa-linux/lib", "lib")]
    for d in candidates:
        if os.path.isdir(d) and d not in dirs:
            dirs.append(d)
    return dirs


class Profile:
    """The result of a ``with gpumem.profile(...)`` block.

    Attributes
    ----------
    records : list of LaunchRecord
        Every gpumem launch inside the block, in order; ``record.metrics``
        maps each name asked for to its value.
    metrics : list of str
        The names asked for, in order (duplicates removed).
    passes : int or None
        Replay passes CUPTI needs per launch for this metric set.
    ranges_per_start : int or None
        Launches read per CUPTI start: the batch size with ``replay="block"``
        (a one-pass set: 16, several passes: 64), else 1.
    chip : str or None
        CUPTI's chip name, e.g. ``"GH100"``.
    replay : str
        ``"block"``, ``"launch"`` or ``"kernel"`` (see :func:`profile`).
    """

    _MODES = ("block", "launch", "kernel")

    def __init__(self, metrics: Sequence[str], replay: str = "block",
                 timeout: float | None = None):
        if timeout is not None:
            if isinstance(timeout, (bool, np.bool_)) or not isinstance(
                    timeout, (int, float, np.integer, np.floating)):
                raise TypeError(f"profile: timeout must be a number of seconds or None, not "
                                f"{type(timeout).__name__}")
            if not 0 <= float(timeout) < float("inf"):
                raise ValueError(f"profile: timeout={timeout!r} is not allowed; it must be a "
                                 "finite number of seconds >= 0, or None (wait as long as it "
                                 "takes)")
            timeout = float(timeout)
        self.timeout = timeout
        if not isinstance(replay, str):
            raise TypeError(f"profile: replay must be a str ('block', 'launch' or 'kernel'), "
                            f"not {type(replay).__name__}")
        if replay == "user":  # the name of "block" before launches were replayed together
            replay = "block"
        if replay not in self._MODES:
            raise ValueError(f"profile: replay={replay!r} is not allowed; use 'block' (gpumem "
                             "replays the block's launches together, the fast default), "
                             "'launch' (gpumem replays each launch on the spot) or 'kernel' "
                             "(CUPTI replays each launch)")
        self.metrics = _check_names(metrics)
        self._raw, self._outputs = _plan(self.metrics)
        self.replay = replay
        self._records: list = []
        self.passes: int | None = None
        self.ranges_per_start: int | None = None
        self.chip: str | None = None
        self.library: str | None = None
        self._active = False

    def __enter__(self) -> "Profile":
        if self._active:
            raise ProfilerError("this profile block is already active")
        me = threading.get_ident()
        if _BLOCK_OWNER[0] == me:
            raise ProfilerError("gpumem.profile() blocks do not nest: this thread has one open "
                                "already (one block reads every launch inside it)")
        # the counters are the context's: a block of another thread waits its turn
        if not _BLOCK.acquire(timeout=-1 if self.timeout is None else self.timeout):
            raise ProfilerError(f"profile: another thread's profile block was still open after "
                                f"timeout={self.timeout} s")
        _BLOCK_OWNER[0] = me
        try:
            info = _core._profile_begin(self._raw, self._outputs, self.replay, _cupti_dirs())
        except BaseException:
            _BLOCK_OWNER[0] = None
            _BLOCK.release()
            raise
        self.passes, self.chip, self.library = info["passes"], info["chip"], info["library"]
        self.ranges_per_start = info["ranges_per_start"]
        _core._sinks.append(self._records)
        self._active = True
        return self

    @property
    def records(self) -> list:
        # With replay="block" launches are read in batches (one CUPTI start
        # for many); reading the records inside the block reads the batch.
        if self._active:
            _core._profile_sync()
        return self._records

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._active = False
        for i in range(len(_core._sinks) - 1, -1, -1):
            if _core._sinks[i] is self._records:
                del _core._sinks[i]
                break
        try:
            _core._profile_sync()
        except Exception:
            if exc_type is None:
                raise
        finally:
            try:
                _core._profile_end()
            finally:
                _BLOCK_OWNER[0] = None
                _BLOCK.release()
        return False

    def table(self) -> Table:
        """One row per launch: kernel, variant, params, ms, the FLOPs and bytes the launch
        declares, and one column per metric.  :func:`gpumem.roofline` takes it as it is
        (with ``dram_read_bytes`` and ``dram_write_bytes`` among the metrics, their sum as
        the measured bytes), so the counters need not be read again."""
        rows = []
        for r in self.records:
            row = {"kernel": r.kernel, "variant": r.variant,
                   "params": ", ".join(f"{k}={v}" for k, v in r.params.items()), "ms": r.ms,
                   "flops": r.flops, "bytes": r.bytes}
            row.update({m: (r.metrics or {}).get(m) for m in self.metrics})
            rows.append(row)
        cols = ["kernel", "variant", "params", "ms", "flops", "bytes"] + list(self.metrics)
        return Table(rows, columns=cols,
                     sources={"flops": "declared", "bytes": "declared", **{c: "measured" for c in ["ms"] + self.metrics}},
                     title=f"profile ({self.chip or 'GPU'}, {self.passes} pass"
                           f"{'es' if self.passes != 1 else ''} per launch)")

    def __repr__(self) -> str:
        return f"Profile({len(self.records)} launches, metrics={self.metrics})"


#: One profile block at a time in the process (the counters are the context's): a block
#: opened in another thread waits for it; the thread that holds it.
_BLOCK = threading.Lock()
_BLOCK_OWNER: list = [None]


def profile(metrics: Sequence[str], *, replay: str = "block",
            timeout: float | None = None) -> Profile:
    """Read hardware counters for every gpumem launch inside a ``with`` block.

    Parameters
    ----------
    metrics : list of str
        Aliases (``gpumem.metrics()``: ``gld_efficiency``, ``gld_transactions``,
        ``dram_read_bytes``, ...) or raw Nsight Compute names
        (``dram__bytes_read.sum``).  Unknown names raise ValueError (with close
        matches) here, before anything runs.
    replay : {"block", "launch", "kernel"}
        ``"block"`` (default): launches are read in batches, one CUPTI
        start per pass for many launches, a user range around each launch
        and L2 flushed before each (outside the range).  A one-pass set
        profiles each launch as it comes, up to 16 per start.  A set that
        needs several passes records each launch on copies of its buffers
        (inputs copied once and shared by later launches that read the same,
        unchanged data; in-place buffers restored before every pass) and
        replays up to 64 recorded launches together.  The values are filled
        in when the batch is read: when it is full, when ``p.records`` or
        ``gpumem.last_record()`` is read, and at the end of the block.
        ``GPUMEM_PROFILE_BATCH`` sets another batch size.  The copies stay
        under a quarter of the device memory free when the block began
        (``GPUMEM_PROFILE_REPLAY_MB`` sets another cap) and are freed at
        its end.  A launch is profiled on the spot, as with ``"launch"``,
        when its copies alone exceed that cap, or when it depends on device
        state outside its buffers, which a later replay could not restore:
        ``stencil_1d(memory="constant")`` (its coefficients in the constant
        bank), ``latency`` (a ring of pointers to itself) and ``lifetimes``
        (a ``__device__`` counter).
        ``"launch"``: each launch replayed on the spot, once per pass, its
        in-place buffers restored and L2 flushed before each pass; CUPTI
        reprograms the counters for every pass of every launch, about 12 ms
        each on an H100.
        ``"kernel"``: CUPTI's kernel replay, which saves and restores device
        memory itself and does not flush L2.
        ``"user"`` is the older name of ``"block"``.
        Launches from other threads while the block is open are profiled
        too (their records join this one); the profiler holds the GIL while
        it profiles or replays, so they wait rather than interleave.
    timeout : float, optional
        One block is open at a time in a process (the counters belong to the
        GPU context): a block opened in another thread meanwhile waits for
        this one to end, at most ``timeout`` seconds (default: as long as it
        takes), then raises ProfilerError.  A block inside a block of the
        same thread is an error at once.
        ``gpumem.metrics()`` says which aliases are counted by instrumenting
        the kernel's instructions (``gld_efficiency``, ``gst_efficiency``,
        ``branch_efficiency``) and which by hardware counters; a set that
        mixes the two kinds needs at least two passes.

    Returns
    -------
    Profile
        A context manager; after the block, ``p.records`` and ``p.table()``.

    Raises
    ------
    ProfilerError
        On entering the block, when counters cannot be read: CUPTI missing,
        GPU unsupported, no permission (``.reason`` says which; the message
        says how to fix it).
    CudaUnavailableError
        Without a usable GPU.
    """
    return Profile(metrics, replay=replay, timeout=timeout)


_available: bool | None = None


def profiler_available() -> bool:
    """True when hardware counters can really be read here; never raises.

    The first call profiles one tiny ``vec_add`` (so it adds one record to
    any :func:`gpumem.record` block around it); the answer is cached.
    """
    global _available
    if _available is None:
        try:
            if not _core.is_available():
                return False
            one = np.ones(64, dtype=np.float32)
            with profile(["gld_requests"]) as p:
                _core.vec_add(one, one)
            v = p.records[0].metrics["gld_requests"] if p.records else 0.0
            _available = bool(v == v and v > 0)
        except Exception:
            _available = False
    return _available
