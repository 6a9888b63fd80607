"""The lessons, one module each, in lesson order.

Each module is one lesson's Python stem (``gpumem/lessons/<stem>.py``, beside
``cuda/<stem>.cu``, ``csrc/lessons/<stem>.c``, ``tests/test_<stem>.py`` and its
notebooks) and ends with ``LESSON = Lesson(...)``
(:class:`gpumem.tools.lesson.Lesson`): its kernel families, the names the
package re-exports, its sweeps, notebooks, benchmark, ``gpumem report``
headline and sweeps, sanitizer calls and modelled families.  Everything that
lists lessons reads :func:`declarations`.  Adding a lesson: its own files, and
its stem in :data:`LESSONS`.

Lessons layer: a lesson imports the tools, the runtime, ``_core`` and the
model -- never another lesson or the package's face.
"""
from __future__ import annotations

import importlib
import inspect

from ..runtime import on_stream

__all__ = ["LESSONS", "declarations"]

#: The lessons, in lesson order (the notebooks' numbering follows it).
LESSONS = ("matmul", "access", "layout", "stencil", "spaces", "transfer", "ladder", "transpose",
           "allocation", "dram", "l2_persistence", "clusters", "async_copy", "peer")


def declarations() -> list:
    """Every lesson's :class:`~gpumem.tools.lesson.Lesson`, in :data:`LESSONS` order.

    Each function a lesson exports takes ``stream=`` from here on (once per module:
    :func:`gpumem.runtime.on_stream`), so no lesson writes it out."""
    found = []
    for stem in LESSONS:
        module = importlib.import_module(f"{__name__}.{stem}")
        for name in module.LESSON.exports:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                setattr(module, name, on_stream(obj))
        found.append(module.LESSON)
    return found
