"""The argument conversions every layer above shares (``_index``, ``_flag``,
``_host`` ...: the runtime, the tools and the lessons), the C argument tables
(``arg_row``; ``_checked``: a value by its row's rule, the one statement of a range,
a choice or a default -- Python restates none) and the check-only switch of the C
entry points (``_checking``).  Runtime layer: imports ``_core`` only.
"""
from __future__ import annotations

import contextlib
import operator
import sys
from typing import Any, Iterator

import numpy as np

from .. import _core


# ---- argument checks every module shares ------------------------------------------------
#: The most timed (or warm-up) calls :func:`gpumem.bench` and the sweeps make per point.
MAX_REPEAT = 100_000


def _index(fn: str, name: str, v: Any) -> int:
    """``v`` as a Python int: anything with ``__index__`` (int, numpy integers);
    bool and numpy.bool_ raise TypeError, as does anything else (naming ``fn`` and ``name``)."""
    if not isinstance(v, (bool, np.bool_)):
        try:
            return operator.index(v)
        except TypeError:
            pass
    raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}")


def _iterable(v: Any) -> bool:
    """Whether ``iter(v)`` works (a 0-d NumPy array says it is Iterable, and is not)."""
    try:
        iter(v)
    except TypeError:
        return False
    return True


def _flag(fn: str, name: str, v: Any) -> bool:
    """``v`` as a bool: bool or numpy.bool_ only (TypeError otherwise, naming ``fn`` and ``name``)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise TypeError(f"{fn}: {name} must be a bool (True or False), not {type(v).__name__}")


_check_depth = 0


def _checking_only() -> bool:
    """Whether a :func:`_checking` block is active: a Python function that launches
    several times (``gpumem.lifetimes``) checks its arguments and returns None."""
    return _check_depth > 0


@contextlib.contextmanager
def _checking() -> Iterator[None]:
    """While inside, every ``_core`` kernel function checks its arguments and returns
    None without touching the device (``_core._check_only``): a caller validates a
    call it will make later, before any upload or launch.  Nests."""
    global _check_depth
    _check_depth += 1
    _core._check_only(True)
    try:
        yield
    finally:
        _check_depth -= 1
        if _check_depth == 0:
            _core._check_only(False)


def _is_kernel(fn: Any) -> bool:
    """Whether ``fn`` is one of gpumem's kernel functions (``gpumem.vec_add``,
    ``gpumem._core.vec_add`` ...): a function whose every call validates the same
    way with ``_core._check_only`` on."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name not in {v[0] for v in _core.variants()}:
        return False
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return (module is not None and module.__name__.startswith("gpumem.")
            and getattr(module, name, None) is fn)


def _validate(fn: Any, args: tuple, kw: dict) -> None:
    """Check ``fn(*args, **kw)`` without touching the device when ``fn`` is a gpumem
    kernel function: its own TypeError or ValueError, before any upload or launch.
    Other callables are left to run (what they do with a kernel's None is theirs)."""
    if _is_kernel(fn):
        with _checking():
            fn(*args, **kw)


def _host(fn: str, name: str, v: Any, dtype: Any, ndim: int | None = None) -> np.ndarray:
    """``v`` (an array_like of real numbers) as a NumPy array of ``dtype`` (None: its own),
    for the NumPy references; TypeError or ValueError naming ``fn`` and ``name`` otherwise
    (a sequence of more than 2**31 elements too, before NumPy would try to build it)."""
    if v is None or isinstance(v, (str, bytes)):
        raise TypeError(f"{fn}: {name} must be an array of real numbers, not "
                        f"{type(v).__name__}")
    if not isinstance(v, np.ndarray) and hasattr(v, "__len__"):
        try:
            too_long = len(v) > 2**31
        except OverflowError:
            too_long = True
        if too_long:
            raise ValueError(f"{fn}: {name} has more than 2**31 elements")
    try:
        a = np.asarray(v)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{fn}: {name} must be an array of real numbers ({e})") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: {name} must be an array of real numbers, not one of dtype "
                        f"{a.dtype}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{fn}: {name} must be {ndim}-D, not {a.ndim}-D with shape {a.shape}")
    return a if dtype is None else a.astype(dtype, copy=False)


def _indices(fn: str, **values: Any) -> dict[str, Any]:
    """``values`` with each one through :func:`_index` (None stays None: "the default"),
    for a kernel function's integer arguments."""
    return {k: None if v is None else _index(fn, k, v) for k, v in values.items()}


def _given(fn: str, **arrays: Any) -> None:
    """A kernel function's required arrays: None is refused here (TypeError naming
    ``fn`` and the argument), for the C entry points read None as "not given"."""
    for name, v in arrays.items():
        if v is None:
            raise TypeError(f"{fn}: {name} must be a numpy.ndarray or gpumem.DeviceArray, "
                            "not None")


# ---- the C argument tables (one statement of every range and choice) ------------------------
_TABLES: dict[str, dict[str, dict]] = {}


def arg_row(family: str, name: str) -> dict:
    """The row of ``name`` in the C argument table of ``family`` (``_core.args``): its
    kind, default, range (``lo``, ``hi``), allowed values and choices.  Python code reads
    ranges and choices here instead of restating them."""
    table = _TABLES.get(family)
    if table is None:
        table = _TABLES[family] = {row["name"]: row for row in _core.args(family)}
    return table[name]


def arg_range(family: str, name: str) -> tuple[int, int]:
    """``(lo, hi)`` of an integer argument of ``family``'s C table."""
    row = arg_row(family, name)
    return row["lo"], row["hi"]


def _values_text(values: tuple) -> str:
    """An allowed list as the C side words it: "8", "1 or 4", "one of 1, 2, 4"."""
    if len(values) > 2:
        return "one of " + ", ".join(map(str, values))
    return " or ".join(map(str, values))


def _checked(fn: str, family: str, arg: str, v: Any, name: str | None = None) -> Any:
    """``v`` checked by the row ``arg`` of ``family``'s C argument table, worded as the C
    entry point words it (csrc/runtime/args.c) but naming ``fn`` and ``name`` (default
    ``arg``): an int in its range, among its allowed values or in whole warps; a bool; one
    of its choices (a str).  For a Python function that hands ``v`` to ``family`` later (a
    sweep, after its buffers are made) or computes what ``family`` would (a reference):
    the rule stays the C table's, refused here before anything runs."""
    row = arg_row(family, arg)
    name = name or arg
    what = row["what"]
    if row["kind"] == "int":
        v = _index(fn, name, v)
        if row["allowed"] is not None:
            if v in row["allowed"]:
                return v
            must = _values_text(row["allowed"])
        elif row["lo"] <= v <= row["hi"] and not (row["whole_warps"] and v % 32):
            return v
        elif row["whole_warps"]:
            must = f"a multiple of 32 (whole warps) from {row['lo']} to {row['hi']}"
        else:
            must = f"{row['lo']}..{row['hi']}"
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be {must}{what}")
    if row["kind"] == "bool":
        return _flag(fn, name, v)
    if row["kind"] in ("choice", "variant"):
        if not isinstance(v, str):
            raise TypeError(f"{fn}: {name} must be a str, not {type(v).__name__}")
        if v in row["choices"]:
            return v
        raise ValueError(f"{fn}: {name}={v!r} is unknown; allowed: "
                         + ", ".join(repr(c) for c in row["choices"]) + what)
    raise TypeError(f"_checked: {family}'s {arg} is an argument of kind {row['kind']!r}, "
                    "not an int, bool or choice")
