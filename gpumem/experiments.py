"""Experiments: every lesson's sweeps in one place, each returning a :class:`gpumem.Table`.

The sweeps live with their lessons (:mod:`gpumem.lessons`); each lesson declares
them (``LESSON.sweeps``) and this module re-exports every one, so a new
lesson's sweeps are here by construction.

The access and layout sweeps give, per configuration, the kernel time (median
of ``repeat`` timed launches through :func:`gpumem.bench`), the effective
bandwidth of the *useful* bytes, and the efficiency columns (:data:`METRICS`):

* on a GPU where :func:`gpumem.profiler_available` says the counters can be
  read, the efficiency columns are **measured** (one extra profiled launch per
  row, after the timing, so profiling never touches the times), and the
  model's prediction stands beside them in ``<metric>_model`` columns;
* otherwise they come from :func:`gpumem.model.predict` (source ``"model"``);
* without a GPU the time columns are ``None`` and the sweep runs on the model
  alone.

``table.sources`` says where each column came from.  Long sweeps show a tqdm
progress bar (``progress=False`` turns it off; without tqdm there is none).

>>> from gpumem import experiments
>>> t = experiments.offset_sweep(range(0, 129), kind="read")
>>> t.plot(x="offset", y="gld_efficiency")
"""
from __future__ import annotations

import importlib

from . import lessons
from .tools.sweep import METRICS

#: Lesson -> the names of its sweeps, in lesson order.
SWEEPS_BY_LESSON: dict[str, tuple[str, ...]] = {}
for _lesson in lessons.declarations():
    _module = importlib.import_module(f"{lessons.__name__}.{_lesson.name}")
    for _name in _lesson.sweeps:
        globals()[_name] = getattr(_module, _name)
    SWEEPS_BY_LESSON[_lesson.name] = _lesson.sweeps

__all__ = [n for names in SWEEPS_BY_LESSON.values() for n in names] + [
    "METRICS", "SWEEPS_BY_LESSON"]
