"""Helpers the test files share (plain functions; fixtures are in conftest.py)."""
import inspect
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


def defer_to_one_process(why: str, all_gpus: bool = False) -> None:
    """Under pytest-xdist with GPUMEM_TEST_DEFER=FILE (tools/gpu-check): skip the running
    test here and append its node ID to FILE, for the one-process phase that follows (CUPTI
    and Nsight Compute serve one process of a GPU at a time); with ``all_gpus``, to
    FILE.all, for the last phase: one process that sees every GPU.  Elsewhere: nothing."""
    import os

    import pytest

    path = os.environ.get("GPUMEM_TEST_DEFER")
    if not path or not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    nodeid = os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]
    with open(path + (".all" if all_gpus else ""), "a") as f:   # one short O_APPEND write
        f.write(nodeid + "\n")
    pytest.skip(f"deferred to the one-process phase: {why}")


def simplest(strategy):
    """A hypothesis strategy's simplest draw (hypothesis shrinks it: the smallest sizes)."""
    import hypothesis

    return hypothesis.find(strategy, lambda _: True,
                           settings=hypothesis.settings(database=None, max_examples=50))


def base_call(fn, rows: list[dict], declared: dict) -> tuple[list, dict]:
    """The smallest valid call of a kernel function: every required argument from its
    argument table's row (``_core.args``), and the values its lesson declares
    (``declared``: its strategy's simplest draw, or another)."""
    sig = inspect.signature(fn).parameters
    args, kw = [], {}
    for r in rows:
        if not r["required"] and r["name"] not in declared:
            continue
        if r["name"] in declared:
            v = declared[r["name"]]
        elif r["kind"] == "array":
            v = np.ones((8,) * max(r["ndim"], 1), np.float32)
        else:
            v = max(r["lo"], 8) if r["lo"] is not None and r["hi"] >= 8 else r["lo"]
        if sig[r["name"]].kind is inspect.Parameter.KEYWORD_ONLY or not r["required"]:
            kw[r["name"]] = v
        else:
            args.append(v)
    return args, kw


def kernel_functions() -> list[tuple[str, object, list[dict]]]:
    """(family, its Python function, its argument table's visible rows) for every family
    of every declared lesson (``gpumem.lessons.declarations()``) that has a function."""
    import importlib

    out = []
    for lesson in gm.lessons.declarations():
        module = importlib.import_module(f"gpumem.lessons.{lesson.name}")
        for fam in lesson.families:
            fn = getattr(module, fam, None)
            if fn is not None:
                out.append((fam, fn, [r for r in gm._core.args(fam) if not r["hidden"]]))
    return out

