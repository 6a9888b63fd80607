"""gpumem: explore and measure the GPU memory hierarchy from NumPy.

Kernels take NumPy arrays (and return NumPy arrays) or :class:`DeviceArray`
(and return DeviceArray, with no host copies, and without waiting for the
kernel).  Every launch is timed with CUDA events and leaves a
:class:`LaunchRecord` whose ``ms`` waits for the kernel when first read;
:func:`bench` repeats a call
and reports median time, GB/s and GFLOP/s.  :mod:`gpumem.model` predicts the
memory traffic of every kernel with no GPU at all.

This module is the package's face: it re-exports the runtime
(:mod:`gpumem.runtime`), the tools (:mod:`gpumem.tools`) and what each lesson
declares (:mod:`gpumem.lessons`), and defines nothing of its own.  The layers,
each importing only those below it::

    _core (C) -> runtime -> tools -> lessons -> face (this module, report, CLI)
    model: pure Python, imports nothing of gpumem's outside gpumem.model
"""
from __future__ import annotations

import importlib as _importlib


def _no_extension(error: ImportError) -> ImportError:
    """Why ``gpumem._core`` cannot be imported, as NumPy says it: a source tree without
    its built extension (shadowing the installed gpumem), or an install missing it."""
    import importlib.machinery
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    built = [f for f in os.listdir(here) if f.startswith("_core.")
             and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    if built:      # it is there but does not load (a missing library, another Python ...)
        return error
    so = "gpumem/_core" + importlib.machinery.EXTENSION_SUFFIXES[0]
    if any(os.path.exists(os.path.join(root, f)) for f in ("setup.py", "pyproject.toml")):
        return ImportError(
            f"you are importing gpumem from its source tree {root}, which has no built "
            f"extension ({so}); run Python from another folder to use the installed gpumem, "
            "or build in place with `pip install -e .`")
    return ImportError(f"gpumem's C extension ({so}) is missing from {here}; reinstall gpumem "
                       "(pip install --force-reinstall gpumem-lab)")


try:
    from . import _core
except ImportError as _e:
    raise _no_extension(_e) from _e

from . import lessons, model, runtime, tools
from .runtime import (CudaError, CudaUnavailableError, Error, Device, DeviceArray, DeviceInfo,
                      DeviceMemoryError, LaunchRecord, BenchResult, Listing, ProfilerError,
                      Stream, Table, Variant, allocator, bench, can_access_peer,
                      current_stream, device, device_count, disable_peer_access, empty,
                      empty_cache, enable_peer_access, from_dlpack, peer_attributes,
                      is_available, last_record, memory_info, metrics, pinned_empty, profile,
                      profiler_available, record, set_allocator, synchronize, to_device,
                      variants)
from .tools.introspect import (KernelAttributes, Occupancy, block_size_sweep, compiler_report,
                               kernel_attributes, kernel_occupancy)
from .tools.roofline import plot_roofline, roofline

__version__ = "0.1.0"

_RUNTIME = ["Error", "CudaError", "CudaUnavailableError", "DeviceMemoryError", "DeviceArray",
            "LaunchRecord", "Table", "BenchResult", "DeviceInfo", "Variant", "bench", "device",
            "empty", "is_available", "last_record", "memory_info", "record", "to_device",
            "variants", "from_dlpack", "pinned_empty", "ProfilerError", "metrics", "profile",
            "profiler_available", "allocator", "set_allocator", "empty_cache", "synchronize",
            "Device", "Stream", "current_stream", "device_count", "can_access_peer",
            "peer_attributes", "enable_peer_access", "disable_peer_access"]
_TOOLS = ["KernelAttributes", "Occupancy", "block_size_sweep", "compiler_report",
          "kernel_attributes", "kernel_occupancy", "roofline", "plot_roofline"]


def _lesson_exports() -> list[str]:
    """Each lesson's declared exports, bound here (``gpumem.matmul`` ...)."""
    names = []
    for lesson in lessons.declarations():
        module = _importlib.import_module(f"{lessons.__name__}.{lesson.name}")
        for name in lesson.exports:
            globals()[name] = getattr(module, name)
            names.append(name)
    return names


__all__ = _RUNTIME + _TOOLS + _lesson_exports()

#: The subpackages and modules reachable as attributes (``gpumem.model`` ...);
#: ``experiments`` and ``report`` are imported on first use.
_SUBMODULES = ("runtime", "tools", "lessons", "model", "experiments", "report")


def __dir__() -> list[str]:
    # the public API, not the modules this file happens to import
    return sorted(set(__all__) | set(_SUBMODULES) | {"__version__"})


def __getattr__(name: str):
    if name in ("experiments", "report"):
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
