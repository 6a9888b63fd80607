"""The runtime layer: what every tool and lesson builds on, above the C extension.

* :mod:`.args` -- argument conversions shared by every layer above;
* :mod:`.table` -- :class:`Table` and :class:`Listing`, the result types of sweeps;
* :mod:`.hardware` -- :func:`device` and :class:`DeviceInfo`;
* :mod:`.devices` -- :class:`Device`, :class:`Stream`, :func:`device_count`,
  :func:`current_stream`, :func:`synchronize` and the ``stream=`` keyword; from the
  extension, peer access between GPUs (:func:`can_access_peer`, :func:`peer_attributes`,
  :func:`enable_peer_access`, :func:`disable_peer_access`);
* :mod:`.counters` -- hardware counters (:func:`profile`, :func:`metrics`);
* :mod:`.launches` -- :func:`variants`, :func:`record`, :func:`last_record`,
  :func:`bench` and :class:`BenchResult`.

It imports ``gpumem._core`` and nothing above it: no tool, lesson or the
package's face (``gpumem/__init__.py``).
"""
from .._core import (CudaError, CudaUnavailableError, Error, DeviceArray, DeviceMemoryError,
                     LaunchRecord, allocator, can_access_peer, disable_peer_access, empty,
                     empty_cache, enable_peer_access, from_dlpack, is_available, memory_info,
                     peer_attributes, pinned_empty, set_allocator, to_device)
from .hardware import FP32_LANES, DeviceInfo, device
from .devices import (Device, Stream, as_stream, current_stream, device_count, on_stream,
                      synchronize)
from .launches import (BENCH_COUNTERS, BenchResult, Variant, bench, last_record, record,
                       variants)
from .counters import ProfilerError, metrics, profile, profiler_available
from .table import Listing, Table
from . import nvml          # bound to _core now (NVML itself loads on first use)

__all__ = ["Error", "CudaError", "CudaUnavailableError", "DeviceArray", "DeviceMemoryError",
           "LaunchRecord", "allocator", "empty", "empty_cache", "from_dlpack", "is_available",
           "memory_info", "pinned_empty", "set_allocator", "synchronize", "to_device", "FP32_LANES",
           "DeviceInfo", "device", "Device", "Stream", "as_stream", "current_stream",
           "device_count", "on_stream", "can_access_peer", "peer_attributes",
           "enable_peer_access", "disable_peer_access", "BENCH_COUNTERS", "BenchResult", "Variant", "bench",
           "last_record", "record", "variants", "ProfilerError", "metrics", "profile",
           "profiler_available", "Listing", "Table"]
