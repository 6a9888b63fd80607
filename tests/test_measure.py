"""gpumem.runtime.measure over the C measurement unit (csrc/runtime/measure.c, its timer):
time_calls -- any callable between two CUDA events on the stream a call runs on -- refuses
bad arguments before the device is touched (so on any machine), and on a GPU times a known
kernel as gpumem.bench's own events do, on the current gpumem stream too, and leaks
nothing when fn raises."""
import numpy as np
import pytest

import gpumem as gm
from gpumem.runtime.measure import time_calls


# ---- without a GPU: every refusal comes first ---------------------------------------------
@pytest.mark.parametrize("fn", [None, 1, "gpumem.copy", np.float32(1.0), [print]])
def test_time_calls_refuses_a_fn_that_is_not_callable(fn):
    with pytest.raises(TypeError, match=rf"^_time_calls: fn must be callable, not "
                                        rf"([\w.]*\.)?{type(fn).__name__}$"):
        gm._core._time_calls(fn, 3)
    with pytest.raises(TypeError, match=r"^_time_calls: fn must be callable"):
        time_calls(fn)


@pytest.mark.parametrize("kw, match", [
    ({"repeat": 0}, r"^_time_calls: repeat=0 is not allowed; repeat must be 1\.\.100000$"),
    ({"repeat": 100001}, r"^_time_calls: repeat=100001 is not allowed; repeat must be 1\.\.100000$"),
    ({"repeat": -5}, r"^_time_calls: repeat=-5 is not allowed"),
    ({"warmup": -1}, r"^_time_calls: warmup=-1 is not allowed; warmup must be 0\.\.100000$"),
    ({"warmup": 100001}, r"^_time_calls: warmup=100001 is not allowed"),
])
def test_time_calls_refuses_repeat_and_warmup_out_of_range(kw, match):
    calls = []
    with pytest.raises(ValueError, match=match):
        time_calls(lambda: calls.append(1), **kw)
    assert calls == []                          # refused before fn was called


@pytest.mark.parametrize("kw", [{"repeat": True}, {"repeat": 2.0}, {"warmup": "3"},
                                {"warmup": None}])
def test_time_calls_takes_whole_numbers(kw):
    name = next(iter(kw))
    with pytest.raises(TypeError, match=rf"^_time_calls: {name} must be an int"):
        time_calls(lambda: None, **kw)


def test_time_calls_table_says_its_arguments():
    rows = {r["name"]: r for r in gm._core.args("_time_calls")}
    assert list(rows) == ["fn", "repeat", "warmup"]
    assert rows["fn"]["required"] and rows["repeat"]["required"]
    assert (rows["repeat"]["lo"], rows["repeat"]["hi"]) == (1, 100000)
    assert (rows["warmup"]["lo"], rows["warmup"]["hi"], rows["warmup"]["default"]) == (0, 100000, 0)


@pytest.mark.skipif(gm.is_available(), reason="the answer of a machine without a GPU")
def test_time_calls_without_a_gpu_says_so_before_calling_fn():
    calls = []
    with pytest.raises(gm.CudaUnavailableError):
        time_calls(lambda: calls.append(1))
    assert calls == []


# ---- on a GPU -------------------------------------------------------------------------------
#: 256 MiB a copy: ~0.1 ms of device time on an H100/H200, far above a launch's host time, so
#: events on the wrong stream (which would time only the host's launch) cannot pass.
N = 64 << 20


@pytest.fixture
def arrays():                   # function scope: after the GPU gate (a skip without a GPU)
    a = gm.to_device(np.arange(N, dtype=np.float32) % 1000)
    return a, gm.empty((N,))


@pytest.mark.gpu
@pytest.mark.parametrize("on_stream", [False, True])
def test_time_calls_times_a_kernel_as_bench_does(arrays, on_stream):
    a, out = arrays
    bench_ms = gm.bench(gm.copy, a, out=out, repeat=20, warmup=3).median_ms
    out.get()                                   # idle again
    if on_stream:
        with gm.Stream():                       # the copy and the events both on this stream
            t = time_calls(lambda: gm.copy(a, out=out), repeat=20, warmup=3)
    else:
        t = time_calls(lambda: gm.copy(a, out=out), repeat=20, warmup=3)
    assert len(t["samples_ms"]) == 20 and all(s > 0 for s in t["samples_ms"])
    assert t["min_ms"] == min(t["samples_ms"]) and t["max_ms"] == max(t["samples_ms"])
    assert t["min_ms"] <= t["median_ms"] <= t["max_ms"]
    # the events bracket the kernel and the host's launch of it: about bench's kernel time
    assert 0.7 * bench_ms <= t["median_ms"] <= 3 * bench_ms + 0.05, (t, bench_ms)
    np.testing.assert_array_equal(out.get(), a.get())


@pytest.mark.gpu
def test_time_calls_releases_what_fn_returns_and_survives_fn_raising(arrays, no_leak):
    a, _ = arrays
    t = time_calls(lambda: gm.copy(a), repeat=4, warmup=1)      # a new array each call
    assert len(t["samples_ms"]) == 4 and t["median_ms"] > 0
    calls = []

    def boom():
        calls.append(1)
        if len(calls) == 3:
            raise ZeroDivisionError("from fn")
        return gm.copy(a)
    with pytest.raises(ZeroDivisionError, match="from fn"):
        time_calls(boom, repeat=5, warmup=1)
    assert len(calls) == 3
    idle = time_calls(lambda: None, repeat=3, warmup=0)         # the next call works
    assert len(idle["samples_ms"]) == 3 and all(s >= 0 for s in idle["samples_ms"])
