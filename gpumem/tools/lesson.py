"""What a lesson declares for the rest of gpumem: :class:`Lesson`.

A lesson is one stem in every folder -- ``cuda/<stem>.cu``,
``csrc/lessons/<stem>.c``, ``gpumem/lessons/<stem>.py``,
``tests/test_<stem>.py``, ``notebooks/NN_<stem>.ipynb`` and, where it has one,
``benchmarks/bench_<stem>.py`` -- and its Python module ends with one
``LESSON = Lesson(...)``.  Everything that lists lessons is derived from these
declarations (:data:`gpumem.lessons.LESSONS` names the modules, in lesson
order): the package's re-exports, :mod:`gpumem.experiments`, ``gpumem
report``'s memory card, headlines and ``--lesson`` sweeps, the notebook tests, the
sanitizer calls (``tools/sanitize_calls.py``), the benchmark list and the
README's table of lessons (checked by a test).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["Lesson", "sanitize_f32"]

_SANITIZE_RNG = np.random.default_rng(0)


def sanitize_f32(*shape: int) -> np.ndarray:
    """Fresh float32 normal data of ``shape`` for a lesson's sanitizer calls (one seeded
    stream for the whole run, so a sanitizer's report can be reproduced)."""
    return _SANITIZE_RNG.standard_normal(shape).astype(np.float32)


@dataclass(frozen=True)
class Lesson:
    """One lesson's declaration.

    Attributes
    ----------
    name : str
        The stem (``"access"``): the module ``gpumem.lessons.<name>`` and its files.
    idea : str
        The memory idea it teaches, in one line (the README's table).
    families : tuple of str
        The kernel families its C file offers (``gpumem.variants(family)``).
    exports : tuple of str
        The names ``import gpumem`` re-exports from the module (``gpumem.<name>``).
    sweeps : tuple of str
        Its sweep functions, each returning a :class:`gpumem.Table`
        (re-exported by :mod:`gpumem.experiments`).
    notebooks : tuple of str
        Its notebooks' stems (``"02_access"``: ``notebooks/02_access.ipynb``).
    benchmark : str or None
        Its benchmark, ``benchmarks/bench_<benchmark>.py`` (None: none).
    headline : callable or None
        ``(measure: bool, quick: bool) -> list[dict]``: its ``gpumem report`` rows
        (:mod:`gpumem.tools.headline` builds them).  Without a GPU (``measure``
        false) it shows the model's side and says what it would measure.
    report_sweeps : callable or None
        ``(measure: bool, quick: bool, progress: bool) -> list[Table]``: its full
        sweeps for ``gpumem report --lesson <name>``.
    card : callable or None
        ``(measure: bool, quick: bool) -> list[dict]``: its rows of the memory card
        that opens ``gpumem report`` (:mod:`gpumem.tools.card` builds them): one per
        level of the hierarchy the lesson measures.  Without a GPU the rows show the
        sizes and the published figures, the measured columns None.
    sanitize : callable or None
        ``() -> None``: calls every variant of every family once on small, awkward
        sizes (compute-sanitizer runs these through ``tools/sanitize_calls.py``).
    model : tuple of str
        The families :func:`gpumem.model.predict` covers.
    """

    name: str
    idea: str
    families: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()
    sweeps: tuple[str, ...] = ()
    notebooks: tuple[str, ...] = ()
    benchmark: str | None = None
    headline: Callable[[bool, bool], list[dict]] | None = field(default=None, repr=False)
    report_sweeps: Callable[[bool, bool, bool], list[Any]] | None = field(default=None,
                                                                         repr=False)
    sanitize: Callable[[], None] | None = field(default=None, repr=False)
    card: Callable[[bool, bool], list[dict]] | None = field(default=None, repr=False)
    model: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("families", "exports", "sweeps", "notebooks", "model"):
            v = getattr(self, name)
            if isinstance(v, str) or not isinstance(v, Sequence):
                raise TypeError(f"Lesson {self.name!r}: {name} must be a tuple of str")
            object.__setattr__(self, name, tuple(v))
