"""Experiments: every lesson's sweeps in one place, each returning a :class:`gpumem.Table`.

The sweeps live with their lessons and are re-exported here:

* :mod:`gpumem.access` -- :func:`offset_sweep`, :func:`cache_path_compare`,
  :func:`idle_lanes_sweep`;
* :mod:`gpumem.layout` -- :func:`stride_sweep`, :func:`aos_vs_soa`;
* :mod:`gpumem.stencil` -- :func:`broadcast_sweep`;
* :mod:`gpumem.spaces` -- :func:`local_vs_registers`,
  :func:`register_pressure_sweep`, :func:`divergence_compare`;
* :mod:`gpumem.ladder` -- :func:`latency_ladder`, :func:`bandwidth_ladder`,
  :func:`cache_sizes` (the memory hierarchy's latency and bandwidth per level);
* :mod:`gpumem.transpose` -- :func:`transpose_compare`, :func:`bank_conflict_sweep`;
* :mod:`gpumem.transfer` -- :func:`transfer_sweep`, :func:`zero_copy_compare`,
  :func:`managed_compare`, :func:`overlap_timeline` (host memory and copies).

The access and layout sweeps give, per configuration, the kernel time (median
of ``repeat`` timed launches through :func:`gpumem.bench`), the effective
bandwidth of the *useful* bytes, and the efficiency columns
(:data:`METRICS`):

* on a GPU where :func:`gpumem.profiler_available` says the counters can be
  read, the efficiency columns are **measured** (one extra profiled launch per
  row, after the timing, so profiling never touches the times), and the
  model's prediction stands beside them in ``<metric>_model`` columns;
* otherwise they come from :func:`gpumem.model.predict` (source ``"model"``);
* without a GPU the time columns are ``None`` and the sweep runs on the model
  alone.

``table.sources`` says where each column came from.  Long sweeps show a tqdm
progress bar (``progress=False`` turns it off; without tqdm there is none).
``experiments.block_size_sweep`` is the old name of :func:`idle_lanes_sweep`
(deprecated); :func:`gpumem.block_size_sweep` times any kernel against its
block size with its occupancy.

>>> from gpumem import experiments
>>> t = experiments.offset_sweep(range(0, 129), kind="read")
>>> t.plot(x="offset", y="gld_efficiency")
"""
from __future__ import annotations

from typing import Any

from . import _core
from ._names import _moved
from ._sweep import METRICS
from .access import cache_path_compare, idle_lanes_sweep, offset_sweep
from .ladder import bandwidth_ladder, cache_sizes, latency_ladder
from .layout import aos_vs_soa, stride_sweep
from .spaces import divergence_compare, local_vs_registers, register_pressure_sweep
from .stencil import broadcast_sweep
from .transfer import managed_compare, overlap_timeline, transfer_sweep, zero_copy_compare
from .transpose import bank_conflict_sweep, transpose_compare

__all__ = ["offset_sweep", "cache_path_compare", "idle_lanes_sweep", "stride_sweep",
           "aos_vs_soa", "broadcast_sweep", "local_vs_registers", "register_pressure_sweep",
           "divergence_compare", "latency_ladder", "bandwidth_ladder", "cache_sizes",
           "transpose_compare", "bank_conflict_sweep", "transfer_sweep", "zero_copy_compare",
           "managed_compare", "overlap_timeline", "METRICS",
           "CACHES"]

#: The load paths of :func:`gpumem.read_offset` (:data:`gpumem.access.CACHE_PATHS`).
CACHES = _core.CACHE_PATHS

_MOVED = {"block_size_sweep": ("gpumem.access", "idle_lanes_sweep")}


def __getattr__(name: str) -> Any:
    return _moved(__name__, name, _MOVED)
