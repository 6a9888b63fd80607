"""Predict a launch's counters: the registry of modelled kernel families,
:func:`predict`, :func:`predict_record`, :func:`launch_config` and
:func:`families`.

The registry is not a list kept by hand: every module of this package that
defines ``FAMILIES`` (one per lesson: ``access``, ``dram``, ``layout``, ``matmul``,
``transpose``) is a kernel model, and its families are the ones it declares
(the keys are described in gpumem.model._launch).  Adding a lesson's model is
adding one such module.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ._launch import name, resolve
from ._tally import (DECIMALS, LDGSTS_METRICS, METRICS, SHARED_METRICS, Axis, Tally, every,
                     representatives)
from .coalescing import _check_granularity

__all__ = ["predict", "predict_record", "launch_config", "families", "METRICS", "DECIMALS",
           "SHARED_METRICS", "LDGSTS_METRICS"]

#: The keys every family declares (optional ones: ``check``, ``limits``, ``tiles``, and
#: ``from_record``: what a launch record's params leave for its grid to say).
_SPEC_KEYS = ("variants", "params", "gen", "launch")


@lru_cache(maxsize=None)
def _registry() -> dict[str, dict[str, Any]]:
    """Family -> its declaration, from every module of this package with ``FAMILIES``
    (modules in name order, families in the order each module declares them)."""
    package = importlib.import_module(__package__)
    found: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == __name__.rpartition(".")[2]:
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        for family, spec in getattr(module, "FAMILIES", {}).items():
            missing = [k for k in _SPEC_KEYS if k not in spec]
            if missing:
                raise TypeError(f"{module.__name__}.FAMILIES[{family!r}] lacks "
                                f"{', '.join(missing)}")
            if family in found:
                raise ValueError(f"family {family!r} is modelled twice: in {owner[family]} "
                                 f"and {module.__name__}")
            found[family], owner[family] = spec, module.__name__
    return found


def families() -> dict[str, tuple[str, ...]]:
    """The modelled kernel families and their variants (the names ``gpumem.variants()`` uses)."""
    return {family: tuple(spec["variants"]) for family, spec in _registry().items()}


def _resolve(fn: str, family: Any, variant: Any,
             params: Mapping[str, Any]) -> tuple[dict, dict[str, Any]]:
    family = name(fn, "family", family)
    variant = name(fn, "variant", variant)
    registry = _registry()
    if family not in registry:
        raise ValueError(f"{fn}: family={family!r} is unknown; allowed: "
                         f"{', '.join(repr(f) for f in registry)}")
    spec = registry[family]
    return spec, resolve(fn, family, spec, variant, params)


def _predict(fn: str, family: Any, variant: Any, granularity: Any, params: Mapping[str, Any],
             axis: Axis = representatives) -> dict[str, int | float]:
    granularity = _check_granularity(granularity, fn)
    spec, p = _resolve(fn, family, variant, params)
    tally = Tally(granularity)
    spec["gen"](tally, axis, variant, p)
    return tally.result()


def _predict_reference(family: str, variant: str, *, granularity: int = 32,
                       **params: Any) -> dict[str, int | float]:
    """:func:`predict` warp by warp (every warp of the launch worked out on its
    own): the reference the tests hold the fast path to.  Slow; small launches."""
    return _predict("model.predict", family, variant, granularity, params, axis=every)


def predict(family: str, variant: str, *, granularity: int = 32,
            **params: Any) -> dict[str, int | float]:
    """Predict the global-memory counters of one launch of a gpumem kernel.

    Costs what the launch's distinct warp patterns cost, not what its size
    costs: any launch gpumem can make is predicted in milliseconds.

    Parameters
    ----------
    family, variant : str
        As in ``gpumem.variants()``: ``"read_offset"``/``"unroll1"``,
        ``"matmul"``/``"tiled"``, ... (see :func:`families`).
    granularity : {32, 128}
        Load transaction unit: 32-byte sectors (every GPU since Maxwell, and
        what Nsight Compute counts) or 128-byte lines (Fermi/Kepler loads
        cached in L1).  Stores are always counted in 32-byte sectors.
    **params
        The launch parameters, the same names as ``LaunchRecord.params``:
        ``n``, ``block``, ``offset``, ``cache``, ``stride`` (1-D families);
        ``m``, ``n``, ``k``, ``tile`` (matmul; warptiled's split tail: ``splits`` and
        ``tail``, the last ``tail`` tiles cut into ``splits`` slices of K, as
        :func:`matmul_waves` picks them); ``m``, ``n`` (transpose: ``a`` is
        m x n); ``stride``, ``iters``, ``blocks`` (shared_stride, whose variant is
        the word: ``"float"``, ``"float2"``, ``"float4"``).  Omitted ones take the
        defaults of the gpumem function.  Integers may be NumPy integers.

    Returns
    -------
    dict
        ``gld_requests``, ``gld_transactions``, ``gld_efficiency`` (percent),
        ``gld_transactions_per_request``, the same four for ``gst``, and
        ``gld_bytes_requested``, ``gst_bytes_requested``.  Requests are warp
        instructions with at least one active lane; transactions are distinct
        sectors (lines) per instruction, summed; requested bytes are the
        distinct bytes of each instruction's active lanes (a word read by
        several lanes counts once, as the hardware counts it).  Requests,
        transactions and bytes are exact ``int``; efficiencies and
        transactions per request are ``float`` rounded to :data:`DECIMALS`
        (4) decimal places.  The families that use shared memory (matmul,
        transpose, shared_stride) add :data:`SHARED_METRICS`: ``shared_load_transactions``
        (wavefronts), ``shared_load_requests`` (warp instructions) and
        ``shared_load_bank_conflict`` (wavefronts beyond one per instruction, as
        :func:`gpumem.profile` counts them), and the same for stores.  The
        kernels that copy global to shared memory by ``cp.async`` (LDGSTS: matmul
        ``"warptiled"``'s B tiles) add :data:`LDGSTS_METRICS`: ``gldgsts_requests``,
        ``gldgsts_transactions`` (32-byte sectors) and ``gldgsts_bytes_requested``,
        the copies alone, lanes that copy nothing (zero-fill) not counted.  As the
        H100's counters do, ``gld_requests``, ``gld_transactions`` (and
        ``gld_bytes_requested``) include the copies; ``gld_efficiency``, a SASS
        counter there, is of the load instructions alone.

    Raises
    ------
    TypeError
        A family, variant or cache that is not a str; a size that is not an
        int (bools are refused).
    ValueError
        Unknown family, variant or parameter, a value out of range (``offset``
        past ``n``), or a launch gpumem cannot make: more than 2^31 - 1
        blocks, a matmul past 65535 block rows or 2^31 - 1 in a dimension,
        an array past 2^63 - 1 bytes.

    Examples
    --------
    >>> r = predict("read_offset", "unroll1", n=2**24, offset=11, block=512)
    >>> r["gld_transactions"], r["gld_efficiency"]
    (5242876, 80.0)
    """
    return _predict("model.predict", family, variant, granularity, params)


def predict_record(record: Any, granularity: int = 32) -> dict[str, int | float]:
    """:func:`predict` for a :class:`gpumem.LaunchRecord` (its kernel, variant and params).

    Raises
    ------
    TypeError
        ``record`` without ``kernel``, ``variant`` and a ``params`` mapping.
    """
    fn = "model.predict_record"
    params = getattr(record, "params", None)
    if not (hasattr(record, "kernel") and hasattr(record, "variant")
            and isinstance(params, Mapping)):
        raise TypeError(f"{fn}: record must be a gpumem.LaunchRecord (with kernel, variant and "
                        f"a params dict), not {type(record).__name__}")
    spec = _registry().get(record.kernel) if isinstance(record.kernel, str) else None
    if spec is not None and "from_record" in spec:
        params = spec["from_record"](record, params)
    return _predict(fn, record.kernel, record.variant, granularity, params)


def launch_config(family: str, variant: str, **params: Any) -> dict[str, tuple[int, int, int]]:
    """The grid and block a gpumem launcher picks: ``{"grid": (x, y, z), "block": (x, y, z)}``.

    Raises
    ------
    TypeError, ValueError
        As :func:`predict`.
    """
    spec, p = _resolve("model.launch_config", family, variant, params)
    return spec["launch"](variant, p)
