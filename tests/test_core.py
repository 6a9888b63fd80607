"""The core without a GPU: import, discovery, exceptions, every validation path.

Validation must happen before any device call, so on a machine without a GPU
each bad argument raises its own TypeError/ValueError, never
CudaUnavailableError; with a GPU the same tests prove nothing reached it.
"""
import numpy as np
import pytest

import gpumem as gm

F = np.float32


def m(*shape, dtype=F):
    return np.ones(shape, dtype=dtype)


def test_is_available_is_a_bool_and_never_raises():
    assert gm.is_available() in (True, False)
    assert gm.is_available() == gm.is_available()


def test_exception_hierarchy():
    assert issubclass(gm.CudaError, RuntimeError)
    assert issubclass(gm.CudaUnavailableError, gm.CudaError)
    assert issubclass(gm.DeviceMemoryError, gm.CudaError)
    assert issubclass(gm.DeviceMemoryError, MemoryError)


@pytest.mark.skipif(gm.is_available(), reason="this machine has a GPU: see test_device_gpu")
def test_no_gpu_behaviour():
    # Every GPU use raises CudaUnavailableError with the reason; nothing crashes.
    for call in (gm.device, gm.memory_info, lambda: gm.to_device(m(3)), lambda: gm.empty((3,)),
                 lambda: gm.matmul(m(2, 3), m(3, 4)), lambda: gm.vec_add(m(5), m(5))):
        with pytest.raises(gm.CudaUnavailableError, match="no usable CUDA GPU"):
            call()
    assert gm._core.bytes_held() == 0
    # ... and the package keeps working for what needs no GPU.
    assert [v.name for v in gm.variants("matmul")] == ["naive", "tiled"]


def test_runtime_version_without_device():
    major, minor = gm._core.runtime_version()
    assert major >= 12 and minor >= 0


def test_variants_lists_named_variants_with_bytes_and_flops():
    vs = gm.variants("matmul")
    assert [v.name for v in vs] == ["naive", "tiled"]
    assert all(v.family == "matmul" and v.bytes == "4*(M*K + K*N + M*N)" and v.flops == "2*M*N*K"
               for v in vs)
    assert "shared memory" in vs[1].idea
    everything = gm.variants()
    assert {v.family for v in everything} >= {"vec_add", "matmul"}
    with pytest.raises(ValueError, match="family='conv' is unknown; allowed: .*'matmul'"):
        gm.variants("conv")
    with pytest.raises(TypeError, match="family must be a str"):
        gm.variants(3)


# ---- matmul validation -------------------------------------------------------
@pytest.mark.parametrize("a,b,exc,msg", [
    ([[1.0]], m(1, 1), TypeError, "a must be a numpy.ndarray or gpumem.DeviceArray, not list"),
    (m(1, 1), "x", TypeError, "b must be a numpy.ndarray or gpumem.DeviceArray, not str"),
    (m(2, 2, dtype=np.float64), m(2, 2), TypeError, r"a has dtype dtype\('float64'\); this kernel takes dtype\('float32'\) only"),
    (m(2, 2), m(2, 2, dtype=np.int32), TypeError, r"b has dtype dtype\('int32'\)"),
    (m(2, 2), m(2, 2, dtype=np.float16), TypeError, r"b has dtype dtype\('float16'\)"),
    (m(2, 2).astype(">f4"), m(2, 2), TypeError, "a has dtype"),
    (m(4), m(4, 2), ValueError, r"a must be 2-D \(a matrix\), not 1-D with shape \(4,\)"),
    (m(2, 2), m(2, 2, 2), ValueError, r"b must be 2-D \(a matrix\), not 3-D with shape \(2, 2, 2\)"),
    (m(3, 4), m(5, 2), ValueError, r"inner dimensions differ: a is \(3, 4\) and b is \(5, 2\)"),
])
def test_matmul_rejects_bad_operands(a, b, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.matmul(a, b)


@pytest.mark.parametrize("kw,exc,msg", [
    ({"tile": 12}, ValueError, "tile=12 is not allowed; tile must be one of 8, 16, 32"),
    ({"tile": 0}, ValueError, "tile=0 is not allowed"),
    ({"tile": 64}, ValueError, "tile=64 is not allowed"),
    ({"tile": 16.0}, TypeError, "tile must be an int, not float"),
    ({"tile": True}, TypeError, "tile must be an int, not bool"),
    ({"tile": 2**70}, ValueError, "tile=.* is out of range"),
    ({"variant": "tiledd"}, ValueError, "variant='tiledd' is unknown; allowed: 'naive', 'tiled'"),
    ({"variant": 1}, TypeError, "variant must be a str, not int"),
    ({"out": m(3, 2)}, TypeError, "out must be a gpumem.DeviceArray, not numpy.ndarray"),
])
def test_matmul_rejects_bad_options(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.matmul(m(3, 4), m(4, 2), **kw)


def test_matmul_rejects_unknown_keyword_and_positional_options():
    with pytest.raises(TypeError):
        gm.matmul(m(3, 4), m(4, 2), tile_size=16)
    with pytest.raises(TypeError):
        gm._core.matmul(m(3, 4), m(4, 2), 16)


def test_matmul_rejects_too_many_rows_for_one_grid():
    # 65535 blocks of 8 rows at most in grid.y; a 0-column view costs no memory.
    a = np.lib.stride_tricks.as_strided(np.zeros(1, F), shape=(65535 * 8 + 1, 0), strides=(0, 4))
    with pytest.raises(ValueError, match="too large for one launch with tile=8"):
        gm.matmul(a, np.zeros((0, 3), F), tile=8)


# ---- vec_add validation -------------------------------------------------------
@pytest.mark.parametrize("args,kw,exc,msg", [
    ((m(3), [1, 2, 3]), {}, TypeError, "vec_add: b must be a numpy.ndarray or gpumem.DeviceArray, not list"),
    ((m(3, dtype=np.float64), m(3)), {}, TypeError, r"vec_add: a has dtype dtype\('float64'\)"),
    ((m(3), m(4)), {}, ValueError, r"a and b must have the same shape, not \(3,\) and \(4,\)"),
    ((m(2, 3), m(3, 2)), {}, ValueError, r"not \(2, 3\) and \(3, 2\)"),
    ((m(3), m(3)), {"block": 0}, ValueError, "block=0 is not allowed; block must be 1..1024 threads"),
    ((m(3), m(3)), {"block": 1025}, ValueError, "block=1025 is not allowed"),
    ((m(3), m(3)), {"block": -1}, ValueError, "block=-1 is not allowed"),
    ((m(3), m(3)), {"block": "256"}, TypeError, "block must be an int, not str"),
    ((m(3), m(3)), {"out": 5}, TypeError, "out must be a gpumem.DeviceArray, not int"),
])
def test_vec_add_rejects_bad_arguments(args, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.vec_add(*args, **kw)


# ---- DeviceArray and allocation validation -------------------------------------
@pytest.mark.parametrize("obj,exc,msg", [
    ([1.0, 2.0], TypeError, "to_device: a must be a numpy.ndarray, not list"),
    (np.array([object()]), TypeError, "cannot live in device memory"),
    (np.zeros(2, dtype=[("x", F), ("y", F)]), TypeError, "cannot live in device memory"),
    (np.zeros(2, dtype=">f4"), TypeError, "not in native byte order"),
])
def test_to_device_rejects(obj, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.to_device(obj)


def test_empty_rejects_bad_shape_and_dtype():
    with pytest.raises(TypeError, match="cannot live in device memory"):
        gm.empty((3,), dtype=object)
    with pytest.raises(ValueError, match="negative dimension"):
        gm.empty((-1,))
    with pytest.raises(ValueError, match="shape: at most 32 dimensions"):
        gm.empty((1,) * 33)
    with pytest.raises(TypeError):
        gm.empty("three")


def test_device_array_cannot_be_made_directly():
    with pytest.raises(TypeError):
        gm.DeviceArray()


# ---- bench and records without a GPU ---------------------------------------------
@pytest.mark.parametrize("kw,exc,msg", [
    ({"repeat": 0}, ValueError, "repeat=0 is not allowed"),
    ({"warmup": -1}, ValueError, "warmup=-1 is not allowed"),
    ({"repeat": 2.5}, TypeError, "repeat must be an int"),
])
def test_bench_validates(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        gm.bench(gm.vec_add, m(3), m(3), **kw)


def test_bench_needs_a_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        gm.bench(3)


def test_record_context_unregisters_on_error():
    n = len(gm._core._sinks)
    with pytest.raises(ValueError):
        with gm.record() as launches:
            assert launches == []
            gm.matmul(m(3, 4), m(5, 2))
    assert len(gm._core._sinks) == n


def test_launch_record_fields():
    assert gm.LaunchRecord.n_fields == 10
    fields = [f for f in dir(gm.LaunchRecord) if not f.startswith("_")]
    for f in ("kernel", "variant", "params", "grid", "block", "smem", "ms", "bytes", "flops", "metrics"):
        assert f in fields


# ---- Table ---------------------------------------------------------------------------
def test_table_formats_and_selects():
    t = gm.Table([{"offset": 0, "gld_efficiency": 100.0}, {"offset": 11, "gld_efficiency": 80.0}],
                 sources={"gld_efficiency": "model"}, title="read")
    assert t["gld_efficiency"] == [100.0, 80.0]
    assert len(t) == 2 and t.columns == ["offset", "gld_efficiency"]
    md = t.to_markdown()
    assert "| offset | gld_efficiency [model] |" in md and "| 11 | 80 |" in md
    assert "gld_efficiency [model]" in str(t)
    with pytest.raises(KeyError, match="no column 'ms'"):
        t["ms"]


def test_submodules_are_reachable_from_the_package():
    import gpumem as gm

    assert gm.model.predict("read_offset", "unroll1", n=1 << 20, offset=11)[
        "gld_efficiency"] == pytest.approx(80.0, abs=0.01)
    assert callable(gm.experiments.offset_sweep)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gm.nope
