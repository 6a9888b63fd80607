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
README's table of lessons (checked by a test).  The shared tests read them too
(``tests/test_report*.py``, ``tests/test_properties.py``,
``tests/model/test_predict.py``): a lesson's fake measurements, argument
strategies and model launches are declared here, so that adding a lesson edits
no shared test file (``tests/test_layers.py`` checks that none names a lesson).
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
    stand_ins : callable or None
        ``(gpu) -> dict``: what takes the place of the module's measuring functions on
        the tests' fake GPU (``tests/_fake_gpu.py``), so that its headline and card run
        their measured path without a GPU: ``{module attribute: stand-in}`` (a family's
        function, ``device_copy``, ``_core``, a private timing helper).  ``gpu`` offers
        ``gpu.kernel(family, ms, select=, counters=, moved=, flops=, result=)`` (a
        kernel that computes nothing -- ``result`` says what it returns -- which
        :func:`gpumem.bench` times at ``ms[select(args, kwargs)]`` milliseconds for
        ``moved`` bytes and ``flops``, and :func:`gpumem.profile` counts at
        ``counters[...]``), ``gpu.device_copy`` (a copy at ``gpu.COPY_MS``),
        ``gpu.record(**fields)`` (a result with these attributes) and ``gpu.device``
        (the fake's attributes).  Where the face imported such a name
        from the module (the report, the package), the stand-in replaces it there too.
    cheap : callable or None
        ``(function name) -> dict``: on a GPU, ``tests/test_properties.py`` runs every
        valid call it draws for each public function; where one would measure for long
        (a whole ladder, a GiB copy), ``{module attribute: stand-in}`` to use while it
        draws for that function (``{}`` for the rest).
    arguments : callable or None
        ``(hypothesis.strategies) -> {family: strategy}``: each strategy draws a dict
        ``{argument: value}`` of valid values for what the family's C argument table
        (``gpumem._core.args``) alone does not say -- shapes that must agree, sizes a
        shape rule needs, a Python wrapper's own default.  The property tests draw the
        rest from the table and take the strategy's simplest draw for the smallest valid
        call.
    model_launches : callable or None
        ``() -> dict`` of lists of ``(family, variant, params)`` for
        :func:`gpumem.model.predict`, over the families of ``model``: ``"largest"``,
        every variant at the largest launch gpumem accepts; ``"large"``, every variant at
        the sizes issue 11 names (n = 2^31, matmul 16384^3; the same variants as
        ``"largest"``); ``"copy_engine"``, the ``(family, variant)`` pairs whose global
        reads are the copy engine's (no load request); ``"left_out"``, ``{family: why}``
        for each family of ``model`` not in those lists (its sizes tested in its own
        tests).
    model_counters : callable or None
        ``(compute capability or None) -> dict``: the launches on which the model's
        counts are compared with Nsight Compute on a GPU (``tests/model/test_predict.py``):
        ``"cases"``, a list of ``(family, variant, params)`` (those that compute capability
        runs; None: all); ``"helpers"``, kernels a call launches before its own and the
        model counts with it (their counters are added into the next launch); ``"over"``,
        ``{(variant, metric): fraction}``, counters the hardware may read up to that
        fraction over the model (the model a floor).
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
    stand_ins: Callable[[Any], dict[str, Any]] | None = field(default=None, repr=False)
    cheap: Callable[[str], dict[str, Any]] | None = field(default=None, repr=False)
    arguments: Callable[[Any], dict[str, Any]] | None = field(default=None, repr=False)
    model_launches: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    model_counters: Callable[[Any], dict[str, Any]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("families", "exports", "sweeps", "notebooks", "model"):
            v = getattr(self, name)
            if isinstance(v, str) or not isinstance(v, Sequence):
                raise TypeError(f"Lesson {self.name!r}: {name} must be a tuple of str")
            object.__setattr__(self, name, tuple(v))
