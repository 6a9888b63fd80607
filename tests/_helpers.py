"""Helpers the test files share (plain functions; fixtures are in conftest.py)."""
import math

import numpy as np

import gpumem as gm

F = np.float32


def m(*shape, dtype=F):
    """ones of ``shape``: a valid operand whose values do not matter."""
    return np.ones(shape, dtype=dtype)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def awkward_n(rng, block, per_thread=1, at_least=300):
    """A length that is no multiple of the block (nor of per_thread*block)."""
    chunk = per_thread * block
    base = chunk * max(2, math.ceil(at_least / chunk))
    r = int(rng.integers(1, chunk)) if chunk > 1 else 0
    if block > 1 and r % block == 0:
        r += 1
    return base + r


def poisoned(shape):
    """A float32 device array full of NaN: an element a kernel never wrote stays NaN."""
    return gm.to_device(np.full(shape, np.nan, np.float32))


def huge(n):
    """An ndarray of n float32 that takes no memory (validation never reads it)."""
    return np.broadcast_to(np.float32(0), (n,))


def rel_err(got, ref):
    return np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-300)


def defer_to_one_process(why: str) -> None:
    """Under pytest-xdist with GPUMEM_TEST_DEFER=FILE (tools/gpu-check): skip the running
    test here and append its node ID to FILE, for the one-process phase that follows (CUPTI
    and Nsight Compute serve one process of a GPU at a time).  Elsewhere: nothing."""
    import os

    import pytest

    path = os.environ.get("GPUMEM_TEST_DEFER")
    if not path or not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    nodeid = os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]
    with open(path, "a") as f:          # one short O_APPEND write: whole between workers
        f.write(nodeid + "\n")
    pytest.skip(f"deferred to the one-process phase: {why}")
