"""Names that changed, in one place: the old kernel-family names and the
module-level shims that keep moved or renamed functions reachable for one
release, each access warning with a DeprecationWarning.

Infrastructure, not a lesson: lesson modules and ``gpumem/__init__.py`` import
from here.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any, Mapping

#: Old kernel-family name -> the family's name now (the Python function's name).
FAMILY_ALIASES: dict[str, str] = {
    "stencil": "stencil_1d",
    "broadcast": "constant_broadcast",
    "private_array": "thread_histogram",
    "lifetime": "lifetimes",
    "register_cap": "register_pressure",
}


def _family(fn_name: str, family: Any) -> Any:
    """``family`` as it is named now: an old name warns (DeprecationWarning, naming
    ``fn_name`` and the new name) and maps; anything else comes back unchanged, so
    the caller's own type and value checks still see it."""
    if isinstance(family, str) and family in FAMILY_ALIASES:
        new = FAMILY_ALIASES[family]
        warnings.warn(f"{fn_name}: family {family!r} is deprecated; it is {new!r} now",
                      DeprecationWarning, stacklevel=3)
        return new
    return family


def _moved(module: str, name: str, moved: Mapping[str, tuple[str, str]]) -> Any:
    """For a module-level ``__getattr__``: ``module.name`` that has moved to
    ``moved[name] = (new_module, new_name)``, imported lazily, with a
    DeprecationWarning; AttributeError for a name that never existed."""
    if name not in moved:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new_module, new_name = moved[name]
    warnings.warn(f"{module}.{name} is deprecated; use {new_module}.{new_name}",
                  DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(new_module), new_name)
