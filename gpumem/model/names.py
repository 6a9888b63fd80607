"""Names the model shares with the C core, kept here so that the model needs no
``gpumem._core``: the load paths of ``read_offset``, in the order of the
core's ``gm_cache_path`` enum (``cuda/gm_kernels.h``; ``gpumem._core.CACHE_PATHS``).

Each kernel model declares its families' variant names next to the code that
models them (``FAMILIES`` in ``access``, ``layout``, ``matmul``,
``transpose``); tests/model/test_names.py holds this module and those tables to
what ``gpumem._core`` says.
"""
from __future__ import annotations

__all__ = ["CACHE_PATHS"]

#: The load paths ``read_offset`` takes (``cache=``), in ``gm_cache_path`` order;
#: every path touches the same sectors.
CACHE_PATHS: tuple[str, ...] = ("default", "ca", "cg", "ldg", "cs")
