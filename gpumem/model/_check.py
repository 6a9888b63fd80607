"""Argument checks shared by the model's functions: integers (NumPy integers
welcome, bools and floats refused) and arrays of byte addresses.  Every
message names the function and the argument."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

#: Byte addresses the model takes: 0 <= address < MAX_ADDRESS (2**62, far
#: beyond any GPU's 49- or 57-bit virtual address space, and room to add a
#: width and round up to a line without leaving int64).
MAX_ADDRESS = 2 ** 62


def _index(fn: str, name: str, v: Any) -> int:
    """``v`` as a Python int: anything with ``__index__`` (int, NumPy integers); bool
    and numpy.bool_ raise TypeError, as does anything else (naming ``fn`` and ``name``).
    The same check as the rest of gpumem's; the model keeps its own copy, so that it
    imports nothing of gpumem outside gpumem.model."""
    if not isinstance(v, (bool, np.bool_)):
        try:
            return operator.index(v)
        except TypeError:
            pass
    raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}")


def index(fn: str, name: str, v: Any, lo: int | None = None, hi: int | None = None,
          allowed: tuple[int, ...] | None = None) -> int:
    """``v`` as a Python int (gpumem's one integer check: ``operator.index``, not bool),
    optionally in ``lo..hi`` or one of ``allowed``; TypeError/ValueError naming
    ``fn`` and ``name`` otherwise."""
    i = _index(fn, name, v)
    if allowed is not None and i not in allowed:
        raise ValueError(f"{fn}: {name}={i} is not allowed; {name} must be one of "
                         f"{', '.join(map(str, allowed))}")
    if (lo is not None and i < lo) or (hi is not None and i > hi):
        rng = (f"{lo}..{hi}" if lo is not None and hi is not None
               else f">= {lo}" if lo is not None else f"<= {hi}")
        raise ValueError(f"{fn}: {name}={i} is not allowed; {name} must be {rng}")
    return i


def flag(fn: str, name: str, v: Any) -> bool:
    """``v`` as a bool: only ``True``/``False`` (or NumPy bools) are taken (TypeError
    naming ``fn`` and ``name`` otherwise)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise TypeError(f"{fn}: {name} must be a bool (True or False), not {type(v).__name__}")


def address_array(fn: str, addresses: Any, max_lanes: int | None = None,
                  name: str = "addresses") -> np.ndarray:
    """``addresses`` as an int64 array of its own shape, checked for type.

    ``max_lanes``: the most entries allowed (checked before any conversion,
    so a huge broadcast view costs nothing to refuse).  Integer dtypes and
    sequences of Python/NumPy ints are taken; floats, bools, strings are a
    TypeError; values outside int64 a ValueError.
    """
    a = np.asarray(addresses)
    if max_lanes is not None and a.size > max_lanes:
        raise ValueError(f"{fn}: {name} has {a.size} entries; one warp has at most {max_lanes} "
                         "active lanes")
    if a.size == 0:
        return np.zeros(a.shape, np.int64)
    kind = a.dtype.kind
    if kind == "O":
        flat = []
        for x in a.ravel():
            if isinstance(x, (bool, np.bool_)) or not hasattr(x, "__index__"):
                raise TypeError(f"{fn}: {name} must be integer byte addresses, not "
                                f"{type(x).__name__}")
            x = operator.index(x)
            if not -MAX_ADDRESS <= x < MAX_ADDRESS:
                raise ValueError(f"{fn}: {name} holds {x}; byte addresses must be "
                                 f"0 <= address < 2**62")
            flat.append(x)
        return np.array(flat, np.int64).reshape(a.shape)
    if kind not in "iu":
        raise TypeError(f"{fn}: {name} must be integer byte addresses, not {a.dtype} values")
    if kind == "u" and int(a.max()) >= MAX_ADDRESS:
        raise ValueError(f"{fn}: {name} holds {int(a.max())}; byte addresses must be "
                         f"0 <= address < 2**62")
    return a.astype(np.int64, copy=False)


def check_range(fn: str, a: np.ndarray, active: np.ndarray | None = None,
                align: int = 1, name: str = "addresses") -> None:
    """The (active) addresses are in ``0 .. MAX_ADDRESS - 1`` and multiples of ``align``."""
    v = a if active is None else a[active]
    if v.size == 0:
        return
    lo, hi = int(v.min()), int(v.max())
    if lo < 0:
        raise ValueError(f"{fn}: {name} holds {lo}; byte addresses must be non-negative")
    if hi >= MAX_ADDRESS:
        raise ValueError(f"{fn}: {name} holds {hi}; byte addresses must be "
                         f"0 <= address < 2**62")
    if align > 1:
        bad = v[v % align != 0]
        if bad.size:
            raise ValueError(f"{fn}: {name} holds {int(bad[0])}; every address must be a "
                             f"multiple of width={align} (aligned access)")


def active_mask(fn: str, active: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``active`` (bools, broadcastable to ``shape``), or all lanes when None."""
    if active is None:
        return np.ones(shape, bool)
    m = np.asarray(active)
    if m.dtype != np.bool_:
        raise TypeError(f"{fn}: active must be booleans, not {m.dtype} values")
    try:
        return np.broadcast_to(m, shape)
    except ValueError:
        raise ValueError(f"{fn}: active has shape {m.shape}, which does not broadcast to "
                         f"the addresses' shape {shape}") from None


def number(fn: str, name: str, v: Any) -> float | int:
    """``v`` as a Python number: an integer (anything with ``__index__``, NumPy's
    included) or a float (NumPy's included); bool and everything else: TypeError."""
    if not isinstance(v, (bool, np.bool_)):
        try:
            return operator.index(v)
        except TypeError:
            pass
        if isinstance(v, (float, np.floating)):
            return float(v)
    raise TypeError(f"{fn}: {name} must be a number, not {type(v).__name__}")


def positive(fn: str, name: str, v: Any, integer: bool = False) -> float | int:
    """``v`` as a number (an int with ``integer``) above 0 and finite; ValueError naming
    ``fn`` and ``name`` otherwise."""
    v = index(fn, name, v) if integer else number(fn, name, v)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{fn}: {name}={v!r} is not allowed; {name} must be positive and finite")
    return v


def choice(fn: str, name: str, v: Any, allowed: tuple[str, ...]) -> str:
    """``v``, a str among ``allowed``; TypeError/ValueError naming ``fn`` and ``name``."""
    if not isinstance(v, str):
        raise TypeError(f"{fn}: {name} must be a str, not {type(v).__name__}")
    if v not in allowed:
        raise ValueError(f"{fn}: {name}={v!r} is not allowed; allowed: "
                         f"{', '.join(repr(a) for a in allowed)}")
    return v

