"""A kernel model's launch parameters: what each family declares, and the checks
every family shares.

A kernel model (a module of this package with a ``FAMILIES`` table) declares
each family it models as a dict:

``variants``
    The variant names, in the core's order (``gpumem.variants(family)``).
``params``
    Parameter name -> default (:data:`REQUIRED` when there is none), in the
    order messages list them.
``gen``
    ``gen(tally, axis, variant, p)``: adds the launch's global (and shared)
    accesses to ``tally`` (:class:`~gpumem.model._tally.Tally`), walking each
    launch axis with ``axis`` (:func:`~gpumem.model._tally.representatives`
    or :func:`~gpumem.model._tally.every`).
``launch``
    ``launch(variant, p)``: ``{"grid": (x, y, z), "block": (x, y, z)}`` as the
    launcher picks them.
``check`` (optional)
    ``check(where, variant, p)``: refuses (ValueError) a launch gpumem cannot make.
``limits`` (optional)
    Parameter name -> ``(lo, hi)``, in place of the shared ranges of :data:`RANGES`.
``tiles`` (optional)
    Variant -> ``(default tile, allowed tiles)``: the family takes a ``tile``
    whose default depends on the variant.

:func:`one_d` builds the declaration of a 1-D family (one thread per element,
``gridDim.x`` blocks of ``block`` threads) from its grid and element size.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from ._check import index
from ._tally import cdiv
from .names import CACHE_PATHS

GRID_MAX = 2 ** 31 - 1         # blocks in gridDim.x
GRID_Y_MAX = 65535             # blocks in gridDim.y (matmul's block rows, transpose's)
DIM_MAX = 2 ** 31 - 1          # matmul's M, N, K (ints in the kernel)
BYTES_MAX = 2 ** 63 - 1        # bytes one array can hold (npy_intp)

#: The ranges of the parameters several families share (``block``: threads per
#: block; ``stride``: floats between the elements one thread reads; ``iters``,
#: ``blocks``: shared_stride's loop count and grid).  ``offset`` runs 0..n.
RANGES = {"block": (1, 1024), "stride": (1, 64), "iters": (1, 65536), "blocks": (1, 1 << 20)}


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter that has none.
REQUIRED: Any = _Required()


def name(fn: str, what: str, v: Any) -> str:
    """``v``, a str (TypeError naming ``fn`` and ``what`` otherwise)."""
    if not isinstance(v, str):
        raise TypeError(f"{fn}: {what} must be a str, not {type(v).__name__}")
    return v


def resolve(fn: str, family: str, spec: Mapping[str, Any], variant: Any,
            params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` of one launch of ``family``/``variant`` (declared by ``spec``),
    checked and with the defaults filled in; TypeError/ValueError naming ``fn``."""
    variant = name(fn, "variant", variant)
    if variant not in spec["variants"]:
        raise ValueError(f"{fn}: variant={variant!r} is unknown for family {family!r}; allowed: "
                         f"{', '.join(repr(v) for v in spec['variants'])}")
    allowed = spec["params"]
    for key in params:
        if key not in allowed:
            raise ValueError(f"{fn}: parameter {key!r} is unknown for {family}/{variant}; "
                             f"allowed: {', '.join(allowed)}")
    p = {}
    for key, default in allowed.items():
        if key in params:
            p[key] = params[key]
        elif default is REQUIRED:
            raise ValueError(f"{fn}: {family}/{variant} needs parameter {key!r} "
                             f"(parameters: {', '.join(allowed)})")
        else:
            p[key] = default
    where = f"{fn}({family}/{variant})"
    for key in ("n", "m", "k"):
        if key in p:
            p[key] = index(where, key, p[key], lo=0)
    limits = {**RANGES, **spec.get("limits", {})}
    for key in ("block", "offset", "stride", "iters", "blocks"):
        if key in p:
            lo, hi = (0, p["n"]) if key == "offset" else limits[key]
            p[key] = index(where, key, p[key], lo, hi)
    if "tiles" in spec:
        default, tiles = spec["tiles"][variant]
        p["tile"] = index(where, "tile", p["tile"] if "tile" in params else default,
                          allowed=tiles)
    if "cache" in p:
        name(where, "cache", p["cache"])
        if p["cache"] not in CACHE_PATHS:
            raise ValueError(f"{where}: cache={p['cache']!r} is not allowed; cache must be one "
                             f"of {', '.join(repr(c) for c in CACHE_PATHS)} (all touch the same "
                             "sectors)")
    if "check" in spec:
        spec["check"](where, variant, p)
    return p


def one_d(variants: tuple[str, ...], params: dict[str, Any], gen: Callable,
          grid: Callable[[str, dict], int], nbytes: int) -> dict[str, Any]:
    """The declaration of a 1-D family: ``grid(variant, p)`` blocks (``gridDim.x``)
    of ``p["block"]`` threads, over arrays of ``n`` elements of ``nbytes`` bytes
    each (its largest array: a float, a {x, y} pair, an {x, y, z} point)."""

    def launch(variant: str, p: dict) -> dict[str, tuple[int, int, int]]:
        return {"grid": (grid(variant, p), 1, 1), "block": (p["block"], 1, 1)}

    def check(where: str, variant: str, p: dict) -> None:
        # what the C entry points refuse: arrays past 2^63 - 1 bytes, grids past
        # 2^31 - 1 blocks (gridDim.x)
        n = p["n"]
        if n * nbytes > BYTES_MAX:
            raise ValueError(f"{where}: n={n} elements of {nbytes} bytes exceed the 2**63 - 1 "
                             "bytes an array can hold")
        blocks = grid(variant, p)
        if blocks > GRID_MAX:
            raise ValueError(f"{where}: n={n} needs {blocks} blocks of block={p['block']} "
                             "threads, more than the 2**31 - 1 a launch can have; use a "
                             "larger block")

    return {"variants": variants, "params": params, "gen": gen, "launch": launch,
            "check": check}


def grid_1d(variant: str, p: dict) -> int:
    """The grid of a 1-D family with one thread per element: ``ceil(n / block)``."""
    return cdiv(p["n"], p["block"])
