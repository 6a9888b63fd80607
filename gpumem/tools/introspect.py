"""What the compiler and the CUDA runtime say about any gpumem kernel variant.

* :func:`kernel_attributes` -- registers, local (stack) bytes, shared and
  constant bytes of a variant's kernel (``cudaFuncGetAttributes``);
* :func:`kernel_occupancy` -- resident blocks and warps per SM at a block size
  (the CUDA occupancy API), with :func:`gpumem.model.occupancy`'s breakdown of
  the limiting resource beside it;
* :func:`block_size_sweep` -- any kernel's time and occupancy against its block size;
* :func:`compiler_report` -- ``cuobjdump``'s resource report of every kernel in
  the built extension, with no GPU at all.

Kernel families are named as the Python functions (``gpumem.variants()``
lists them).  Tools layer: imports the runtime, ``_core`` and the model.
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

from .. import _core
from ..runtime.args import MAX_REPEAT, _flag, _index, _validate
from ..runtime.hardware import device
from .sweep import _bench, _int, _ints, _repeat
from ..runtime.table import Table

__all__ = ["KernelAttributes", "Occupancy", "kernel_attributes", "kernel_occupancy",
           "block_size_sweep", "compiler_report"]


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


def kernel_attributes(family: str, variant: str, **params: Any) -> KernelAttributes:
    """Registers per thread, local (stack) bytes, static shared bytes, constant bytes,
    max threads per block and PTX/binary version of a variant's kernel.

    Parameters
    ----------
    family, variant : str
        As listed by :func:`gpumem.variants` (e.g. ``"register_pressure"``,
        ``"cap32"``).
    **params
        Pick among the kernels one variant builds: ``tile`` for matmul,
        ``items`` and ``antisymmetric`` for stencil_1d; nothing else.

    Returns
    -------
    KernelAttributes

    Needs a GPU (the runtime loads the kernel); :func:`compiler_report` answers
    without one.
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


def _model_occupancy(cc: str, threads_per_block: int, regs_per_thread: int,
                     smem_per_block: int) -> dict:
    """:func:`gpumem.model.occupancy` as a dict (blocks_per_sm, active_warps,
    active_threads, occupancy, limiter).  No GPU needed.

    Raises
    ------
    ImportError
        When this build of gpumem has no ``gpumem.model.occupancy``.
    """
    try:
        from .. import model
        fn = model.occupancy
    except (ImportError, AttributeError) as e:
        raise ImportError(
            "gpumem.model.occupancy is not available in this build of gpumem (the memory "
            "model provides it); kernel_occupancy() still reports the CUDA occupancy API's numbers "
            f"({type(e).__name__}: {e})") from None
    return _as_dict(fn(cc, threads_per_block, regs_per_thread, smem_per_block))


def _occupancy(family, variant, block, smem, params, strict) -> Occupancy:
    d = _core.kernel_occupancy(family, variant, block, smem, dict(params or {}), strict)
    attrs = _attributes(family, variant, params, strict)
    dev = device()
    warps = -(-block // dev.warp_size)
    max_warps = dev.max_threads_per_multiprocessor // dev.warp_size
    active = d["blocks_per_sm"] * warps
    cc = "%d.%d" % dev.compute_capability
    try:
        model, note = _model_occupancy(cc, block, attrs.registers_per_thread,
                                      attrs.static_shared_bytes + (smem or 0)), ""
    except ImportError as e:
        model, note = None, str(e)
    return Occupancy(family, variant, block, smem or 0, d["blocks_per_sm"], warps, active,
                     max_warps, active / max_warps, attrs.registers_per_thread,
                     attrs.static_shared_bytes, model, note)


def kernel_occupancy(family: str, variant: str, block: int, smem: int = 0,
                     **params: Any) -> Occupancy:
    """Resident blocks and warps per SM for a variant's kernel at ``block`` threads and
    ``smem`` bytes of dynamic shared memory per block (CUDA occupancy API), with
    :func:`gpumem.model.occupancy`'s breakdown of the limiting resource in ``.model``
    (``None``, and ``.model_note`` saying why, where the model is missing).

    Parameters
    ----------
    family, variant : str
        As listed by :func:`gpumem.variants`.
    block : int
        Threads per block, 1..1024 (and within the kernel's launch bounds).
    smem : int
        Dynamic shared memory per block, bytes.
    **params
        As for :func:`kernel_attributes`.

    Returns
    -------
    Occupancy
    """
    fn = "kernel_occupancy"
    block = _index(fn, "block", block)
    smem = 0 if smem is None else _index(fn, "smem", smem)
    for name, v in (("family", family), ("variant", variant)):
        if not isinstance(v, str):
            raise TypeError(f"{fn}: {name} must be a str, not {type(v).__name__}")
    return _occupancy(family, variant, block, smem, params, True)




# ---- block-size sweep ------------------------------------------------------------
def _dynamic_smem(rec, attrs: KernelAttributes) -> int:
    """Dynamic shared memory of a recorded launch.  The stencil's tile is all dynamic
    (and the one family whose size is known from its params); elsewhere the record's
    total less the kernel's static shared memory."""
    p = rec.params
    if rec.kernel == "stencil_1d" and {"items", "radius"} <= p.keys():
        return (int(np.prod(rec.block)) * p["items"] + 2 * p["radius"]) * 4
    return max(0, rec.smem - attrs.static_shared_bytes)


def block_size_sweep(fn: Callable, *args, blocks: Sequence[int] = (32, 64, 128, 256, 512, 1024),
                     param: str = "block", repeat: int = 20, warmup: int = 3, **kw) -> Table:
    """Time ``fn(*args, **{param: b}, **kw)`` for every ``b`` in ``blocks``, with the
    occupancy of the kernel that ran beside it ("exposing more parallelism").

    Parameters
    ----------
    fn : callable
        Any gpumem kernel that takes a block-size argument, e.g. :func:`gpumem.vec_add`.
    *args, **kw
        Passed to ``fn`` on every call.
    blocks : sequence of int
        The values of ``param`` to try.
    param : str
        The block-size argument's name (``"tile"`` for matmul, whose blocks are
        ``tile x tile``).
    repeat, warmup : int
        As for :func:`gpumem.bench`.

    Returns
    -------
    Table with columns ``param``, threads/block, median_ms, GB/s, regs/thread,
    blocks/SM, occupancy and limiter.
    """
    name = "block_size_sweep"
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable, e.g. gpumem.stencil_1d")
    if not isinstance(param, str):
        raise TypeError(f"{name}: param must be a str (the block-size argument's name), not "
                        f"{type(param).__name__}")
    if param in kw:
        raise TypeError(f"{name}: {param}= is what the sweep sets (from blocks); do not pass it")
    blocks = _ints(name, "blocks", blocks, 1, 1024)
    repeat, warmup = _repeat(name, repeat), _int(name, "warmup", warmup, 0, MAX_REPEAT)
    for b in blocks:         # every call checked before anything touches the GPU
        try:
            _validate(fn, args, {**kw, param: b})
        except (TypeError, ValueError) as e:
            raise (TypeError if isinstance(e, TypeError) else ValueError)(
                f"{name}: {param}={b}: {e}") from e
    rows = []
    for b in blocks:
        try:
            r, rec = _bench(fn, *args, repeat=repeat, warmup=warmup, **{param: b}, **kw)
        except ValueError as e:      # "bench: fn launched no gpumem kernel": name the sweep
            if not str(e).startswith("bench: "):
                raise
            raise ValueError(f"{name}: {str(e)[len('bench: '):]}") from e
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


def _selects() -> dict[str, dict[int, str]]:
    """family -> {select: variant name}, from ``_core.variants()``: a kernel's first
    template argument is its variant's select value (cuda/gm_kernels.h)."""
    out: dict[str, dict[int, str]] = {}
    for fam, name, *_, select in _core.variants():
        out.setdefault(fam, {})[select] = name
    return out


def _template_args(pretty: str) -> list[str]:
    """The template arguments of a demangled kernel name as the source writes them
    (cu++filt's ``(int)8`` is ``8``, its ``(bool)1`` is ``true``)."""
    args = re.findall(r"<(.*)>\s*\(", pretty)
    out = []
    for x in (args[0].split(",") if args else []):
        m = re.match(r"\((?:unsigned |signed )?(\w+)\)(.*)", x.strip())
        if m is None:
            out.append(x.strip())
        elif m.group(1) == "bool":
            out.append({"1": "true", "0": "false"}.get(m.group(2), m.group(2)))
        else:
            out.append(m.group(2))
    return out


def _family_of(pretty: str) -> str | None:
    """``<family>_kernel`` -> family, for the families ``_core.variants()`` lists."""
    head = pretty.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    words = head.split("<")[0].split("(")[0].split()
    base = words[-1].split("::")[-1] if words else ""
    fam = base[:-len("_kernel")] if base.endswith("_kernel") else None
    return fam if fam in _selects() else None


def _variant_of(family: str | None, pretty: str) -> str | None:
    """The variant a kernel builds: its first template argument through the variants'
    select values; a family's one plain kernel is its one variant."""
    names = _selects().get(family or "", {})
    args = _template_args(pretty)
    if not args:
        return next(iter(names.values())) if len(names) == 1 else None
    try:
        return names.get(int(args[0]))
    except ValueError:
        return None


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


_DUMPS: dict = {}


def _dump(tool: str, option: str, so: str, env: dict | None = None) -> str:
    """``tool option so``'s output, once per build of the extension (keyed by its
    path, size and time): the SASS of every architecture takes seconds to print."""
    st = os.stat(so)
    key = (tool, option, so, st.st_size, st.st_mtime_ns)
    if key not in _DUMPS:
        run = subprocess.run([tool, option, so], capture_output=True, text=True, env=env,
                             check=option != "-sass")
        _DUMPS[key] = run.stdout
    return _DUMPS[key]


def compiler_report(family: str | None = None, *, sass: bool = True) -> Table:
    """Registers, stack (local) bytes and shared bytes of every kernel in the built
    extension, read with ``cuobjdump -res-usage`` -- no GPU needed -- and, with
    ``sass=True`` and ``nvdisasm`` at hand, the number of local-memory instructions
    (``LDL``/``STL``) in each kernel's SASS.

    Every kernel is named ``<family>_kernel``; its first template argument is
    the variant's select value (:func:`gpumem.variants`), the others go in the
    ``template`` column as they are (``"16"``: matmul's tile, ``"true, 4"``:
    stencil_1d's antisymmetry and items per thread).

    Parameters
    ----------
    family : str, optional
        Only this family's kernels.
    sass : bool
        Also count LDL/STL in the SASS (needs ``nvdisasm``).

    Returns
    -------
    Table with columns kernel, family, variant, template, arch, registers,
    stack bytes, shared bytes (and LDL, STL).

    Raises
    ------
    FileNotFoundError
        When ``cuobjdump`` is not found (CUDA toolkit's ``bin/``, or
        ``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``).
    """
    if family is not None:
        if not isinstance(family, str):
            raise TypeError(f"compiler_report: family must be a str or None, not "
                            f"{type(family).__name__}")
        families = list(_selects())
        if family not in families:
            raise ValueError(f"compiler_report: family={family!r} is unknown; allowed: "
                             + ", ".join(map(repr, families)))
    sass = _flag("compiler_report", "sass", sass)
    tool = _find_tool("cuobjdump")
    if tool is None:
        nvcc = shutil.which("nvcc")
        where = (f"the CUDA toolkit at {os.path.dirname(os.path.dirname(nvcc))} has no "
                 "cuobjdump (a toolkit installed without it)" if nvcc else
                 "put the CUDA toolkit's bin/ on PATH")
        raise FileNotFoundError(f"compiler_report needs cuobjdump: {where}, or pip install "
                                "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    so = _core.__file__
    text = _dump(tool, "-res-usage", so)
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
        arch = cur = None
        for line in _dump(tool, "-sass", so, env).splitlines():
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
        fam = _family_of(p)
        if family is not None and fam != family:
            continue
        base = p.split("<")[0].split("(")[0].split()[-1]
        targs = _template_args(p)
        kernel = base + (f"<{', '.join(targs)}>" if targs else "")
        row = {"kernel": kernel, "family": fam, "variant": _variant_of(fam, p),
               "template": ", ".join(targs[1:]), "arch": a, "registers": f.get("REG"),
               "stack bytes": f.get("STACK"), "shared bytes": f.get("SHARED")}
        if (a, name) in ldl:
            row["LDL"], row["STL"] = ldl[(a, name)]
        rows.append(row)
    rows.sort(key=lambda r: (str(r["family"]), r["kernel"], r["arch"]))
    return Table(rows, sources={c: "compiler" for c in ("registers", "stack bytes",
                                                        "shared bytes", "LDL", "STL")},
                 title="the compiler's resource report (cuobjdump)")
