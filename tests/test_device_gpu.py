"""Device discovery, DeviceArray, memory accounting, records and bench on a GPU."""
import gc

import numpy as np
import pytest

import gpumem as gm

pytestmark = pytest.mark.gpu


def test_device_reports_limits():
    d = gm.device()
    assert d.name and d.compute_capability >= (7, 5)
    assert d.multiprocessors > 0 and d.warp_size == 32
    assert d.max_threads_per_block == 1024
    assert d.max_threads_per_multiprocessor >= 1024
    assert d.registers_per_multiprocessor == 65536
    assert d.shared_memory_per_block == 48 * 1024
    assert d.shared_memory_per_block_optin >= d.shared_memory_per_block
    assert d.shared_memory_per_multiprocessor >= d.shared_memory_per_block_optin
    assert d.constant_memory == 64 * 1024
    assert d.l2_cache_size > 0 and d.total_memory > 0
    expected = 2 * d.memory_clock_khz * 1e3 * d.memory_bus_width / 8 / 1e9
    assert d.theoretical_bandwidth_gbps == pytest.approx(expected)
    assert d.driver_version >= d.runtime_version[:1] + (0,)
    assert d.runtime_version == gm._core.runtime_version()
    assert d.name in d.summary()
    if d.compute_capability == (9, 0) and "H100" in d.name:
        assert d.multiprocessors == 132
        assert d.shared_memory_per_block_optin == 227 * 1024


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32, np.uint16, np.complex64, np.bool_])
@pytest.mark.parametrize("shape", [(0,), (1,), (1023,), (3, 5, 7), (0, 4)])
def test_device_array_round_trip(rng, dtype, shape, no_leak):
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    d = gm.to_device(a)
    assert d.shape == shape and d.dtype == a.dtype and d.nbytes == a.nbytes
    assert d.ndim == len(shape) and d.size == a.size
    back = d.get()
    assert back.dtype == a.dtype and back.flags.c_contiguous
    np.testing.assert_array_equal(back, a)
    assert "DeviceArray(shape=" in repr(d)
    del d


def test_device_array_from_non_contiguous(rng):
    a = rng.standard_normal((40, 30)).astype(np.float32)
    for view in (a.T, a[::3, 1::2], a[:, ::-1]):
        np.testing.assert_array_equal(gm.to_device(view).get(), view)


def test_cuda_array_interface(rng):
    a = rng.standard_normal((7, 9)).astype(np.float32)
    d = gm.to_device(a)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (7, 9) and cai["typestr"] == "<f4"
    assert cai["data"] == (d.ptr, False) and cai["strides"] is None
    cupy = pytest.importorskip("cupy", reason="CuPy reads __cuda_array_interface__")
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(d)), a)


def test_memory_info_counts_what_gpumem_holds(no_leak):
    before = gm.memory_info()
    assert before["total"] > before["free"] > 0
    d = gm.empty((1 << 20,), dtype=np.float32)
    assert gm.memory_info()["gpumem_bytes"] - before["gpumem_bytes"] == 4 * (1 << 20)
    del d
    gc.collect()
    assert gm.memory_info()["gpumem_bytes"] == before["gpumem_bytes"]


def test_out_of_device_memory_is_clean_and_recoverable(rng, no_leak):
    total = gm.memory_info()["total"]
    with pytest.raises(gm.DeviceMemoryError, match="out of device memory") as info:
        gm.empty((2 * total // 4,), dtype=np.float32)
    assert isinstance(info.value, MemoryError)
    # the next call works
    a = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(gm.vec_add(a, a), a + a)


def test_every_launch_leaves_a_record(rng):
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = rng.standard_normal((17, 40)).astype(np.float32)
    with gm.record() as launches:
        gm.matmul(a, b, tile=8, variant="naive")
        gm.matmul(a, b, tile=32)
    assert [(r.kernel, r.variant) for r in launches] == [("matmul", "naive"), ("matmul", "tiled")]
    r0, r1 = launches
    assert r0.params == {"m": 33, "n": 40, "k": 17, "tile": 8}
    assert r0.grid == (5, 5, 1) and r0.block == (8, 8, 1) and r0.smem == 0
    assert r1.grid == (2, 2, 1) and r1.block == (32, 32, 1) and r1.smem == 2 * 32 * 32 * 4
    assert r1.flops == 2 * 33 * 40 * 17 and r1.bytes == 4 * (33 * 17 + 17 * 40 + 33 * 40)
    assert all(r.ms > 0 and r.metrics is None for r in launches)
    assert gm.last_record() == r1


def test_bench_reports_event_times(rng):
    a = rng.standard_normal((512, 512)).astype(np.float32)
    res = gm.bench(gm.matmul, a, a, tile=16, repeat=20, warmup=3)
    assert res.kernel == "matmul" and res.variant == "tiled" and res.repeat == 20
    assert len(res.samples_ms) == 20
    assert 0 < res.min_ms <= res.median_ms <= res.max_ms
    assert res.gflops == pytest.approx(2 * 512**3 / (res.median_ms * 1e-3) / 1e9)
    assert res.gbps == pytest.approx(4 * 3 * 512 * 512 / (res.median_ms * 1e-3) / 1e9)


def test_bench_rejects_a_function_that_launches_nothing():
    with pytest.raises(ValueError, match="launched no gpumem kernel"):
        gm.bench(lambda: None)


def test_launches_from_several_threads(rng):
    # The GIL is released while the host waits on the device; each launch keeps
    # its own events, so concurrent callers get right results and sane times.
    import threading

    a = rng.standard_normal((256, 300)).astype(np.float32)
    b = rng.standard_normal((300, 200)).astype(np.float32)
    ref = a.astype(np.float64) @ b
    errors, times = [], []

    def work():
        for _ in range(10):
            with gm.record() as launches:
                c = gm.matmul(a, b, tile=16)
            times.append(launches[-1].ms)
            errors.append(np.linalg.norm(c - ref) / np.linalg.norm(ref))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 40 and max(errors) < 1e-5
    assert all(0 < t < 1000 for t in times)
