"""Every GPU and stream of the machine (gpumem/runtime/devices.py, csrc/runtime/stream.c):
Device, Stream, stream=, per-device memory, and the stream rules of the array interfaces
in both directions -- gpumem's result read at once by PyTorch and CuPy on non-blocking
streams, and PyTorch's and CuPy's writes on non-blocking streams read at once by gpumem."""
from __future__ import annotations

import inspect
import re
import threading
from pathlib import Path

import numpy as np
import pytest

import gpumem as gm

from _helpers import f32

GPU = gm.is_available()
N_GPUS = gm.device_count()
ROOT = Path(__file__).resolve().parents[1]


# ---- without a GPU: the arguments ---------------------------------------------------------
def test_device_count_is_an_int_and_matches_availability():
    assert isinstance(N_GPUS, int)
    assert (N_GPUS > 0) == GPU


@pytest.mark.parametrize("bad, error", [("1", TypeError), (1.0, TypeError), (True, TypeError),
                                        (-1, ValueError), (None, TypeError)])
def test_device_refuses_what_is_not_an_index(bad, error):
    with pytest.raises(error, match="Device: index"):
        gm.Device(bad)
    if bad is not None:
        with pytest.raises(error, match="device: index"):
            gm.device(bad)


@pytest.mark.parametrize("bad, error", [("s", TypeError), (-1, ValueError), (2**64, ValueError),
                                        (3, ValueError), (0x7F0012345600, ValueError),
                                        (1.5, TypeError), (True, TypeError)])
def test_stream_keyword_refuses_non_streams_naming_the_function(bad, error):
    with pytest.raises(error, match=r"^vec_add: stream"):
        gm.vec_add(np.ones(4, np.float32), np.ones(4, np.float32), stream=bad)


def test_every_exported_function_takes_stream():
    fns = [getattr(gm, n) for n in gm.__all__
           if inspect.isfunction(getattr(gm, n)) and getattr(gm, n).__module__.startswith(
               "gpumem.lessons")]
    assert len(fns) > 30
    for fn in fns:
        p = inspect.signature(fn).parameters.get("stream")
        assert p is not None and p.kind is p.KEYWORD_ONLY and p.default is None, fn.__name__


@pytest.mark.parametrize("fn", ["memory_info", "empty_cache", "synchronize", "current_stream"])
def test_device_keyword_is_checked_as_an_int(fn):
    if not GPU:
        with pytest.raises((TypeError, gm.CudaUnavailableError)):
            getattr(gm, fn)(device="0")
        return
    with pytest.raises(TypeError, match=f"{fn}: device"):
        getattr(gm, fn)(device="0")
    with pytest.raises(ValueError, match=rf"{fn}: device={N_GPUS} is not a device"):
        getattr(gm, fn)(device=N_GPUS)


def test_no_literal_device_zero_in_the_native_code():
    """A GPU is always a variable (the call's, the array's, the current one): no C or CUDA
    source names device 0."""
    pattern = re.compile(r"cudaSetDevice\(\s*0\s*\)|location\.id\s*=\s*0\b|device_id\s*=\s*0\b"
                         r"|device\s*[!=]=\s*0\b|Attribute\([^()]*,\s*0\s*\)"
                         r"|GetDeviceProperties\([^()]*,\s*0\s*\)|->device\s*=\s*0\b")
    files = sorted(ROOT.glob("csrc/**/*.c")) + sorted(ROOT.glob("csrc/**/*.h")) + \
        sorted(ROOT.glob("cuda/*.cu")) + sorted(ROOT.glob("cuda/*.h"))
    if not files:
        pytest.skip("no C sources here (tests run against an installed wheel)")
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, "\n".join(hits)


# ---- on a GPU: devices --------------------------------------------------------------------
@pytest.mark.gpu
def test_device_info_of_each_gpu(each_device):
    info = gm.device(each_device)
    assert info.index == each_device and info.multiprocessors > 0
    assert gm.device().index == each_device          # each_device made it current
    with pytest.raises(ValueError, match=f"device: index={N_GPUS} is not a device"):
        gm.device(N_GPUS)


@pytest.mark.gpu
def test_arrays_and_calls_stay_on_their_device(each_device, rng, no_leak):
    a, b = f32(rng, 1000), f32(rng, 1000)
    da = gm.to_device(a)
    assert da.device == each_device and f"device={each_device}" in repr(da)
    assert da.__dlpack_device__() == (2, each_device)
    out = gm.vec_add(da, gm.to_device(b))
    assert out.device == each_device
    np.testing.assert_array_equal(out.get(), a + b)
    with gm.Device(0):                                 # the operands' device, not the current
        out = gm.vec_add(da, gm.to_device(b, device=each_device))
    assert out.device == each_device
    np.testing.assert_array_equal(out.get(), a + b)
    assert gm.empty((3, 5), device=each_device).device == each_device


@pytest.mark.gpu
def test_memory_is_counted_per_device(each_device):
    gm.synchronize()
    before = {d: gm.memory_info(device=d)["gpumem_bytes"] for d in range(N_GPUS)}
    x = gm.empty((1 << 20,), device=each_device)
    after = {d: gm.memory_info(device=d)["gpumem_bytes"] for d in range(N_GPUS)}
    assert after[each_device] - before[each_device] == x.nbytes
    assert all(after[d] == before[d] for d in range(N_GPUS) if d != each_device)
    assert gm.memory_info(device=each_device)["device"] == each_device
    del x
    gm.synchronize()
    assert gm.empty_cache(device=each_device) >= 0


@pytest.mark.gpu
def test_device_is_per_thread():
    seen = {}

    def worker():
        seen["thread"] = gm._core._get_device()

    with gm.Device(N_GPUS - 1):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert gm._core._get_device() == N_GPUS - 1
    assert seen["thread"] == 0      # a new thread starts on CUDA's first device


@pytest.mark.gpu
@pytest.mark.skipif(N_GPUS < 2, reason="needs two GPUs")
def test_operands_on_two_devices_are_refused_naming_both(rng, no_leak):
    a = gm.to_device(f32(rng, 64, 64), device=0)
    b = gm.to_device(f32(rng, 64, 64), device=1)
    with pytest.raises(ValueError, match=r"matmul: a is on device 0 and b on device 1"):
        gm.matmul(a, b)
    with pytest.raises(ValueError, match=r"vec_add: a is on device 0 and out on device 1"):
        gm.vec_add(gm.to_device(f32(rng, 7), device=0), gm.to_device(f32(rng, 7), device=0),
                   out=gm.empty((7,), device=1))
    # the next call works
    np.testing.assert_allclose(gm.matmul(a, a).get(), a.get() @ a.get(), rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(N_GPUS < 2, reason="needs two GPUs")
def test_a_profile_block_reads_the_device_it_was_opened_on(rng, counters):
    x = gm.to_device(f32(rng, 256), device=1)
    with gm.profile(["gld_requests"]):
        with pytest.raises(gm.ProfilerError, match=r"runs on device 1, but this "
                           r"gpumem\.profile\(\) block reads the counters of device 0"):
            gm.vec_add(x, x)


# ---- on a GPU: gpumem's streams ------------------------------------------------------------
@pytest.mark.gpu
def test_stream_block_sets_the_current_stream_and_device(each_device):
    s = gm.Stream(device=each_device)
    assert s.device == each_device and s.ptr != 0 and s.__cuda_stream__() == (0, s.ptr)
    with gm.Device(0):
        assert gm.current_stream().ptr == 0
        with s as entered:
            assert entered is s
            assert gm._core._get_device() == each_device
            assert gm.current_stream() is s
            with gm.Stream(device=each_device) as inner:
                assert gm.current_stream() is inner
            assert gm.current_stream() is s
        assert gm._core._get_device() == 0
    assert gm.current_stream(device=each_device).ptr == 0


@pytest.mark.gpu
def test_calls_on_a_stream_are_ordered_and_timed_there(each_device, rng):
    """A long kernel on a non-blocking stream, its result copied to the host at once, then
    read by a call on a second stream: each waits for the work before it."""
    n = 2048
    a, b = f32(rng, n, n), f32(rng, n, n)
    s1, s2 = gm.Stream(), gm.Stream()
    da, db = gm.to_device(a), gm.to_device(b)
    out = gm.to_device(np.full((n, n), np.nan, np.float32))
    gm.matmul(da, db, variant="naive", out=out, stream=s1)
    rec = gm.last_record()
    assert out.__cuda_array_interface__["stream"] == s1.ptr
    got = out.get()                                  # no synchronize: get() waits for s1
    ref = a.astype(np.float64) @ b
    assert np.isfinite(got).all()
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-4
    total = gm.vec_add(out, out, stream=s2)
    np.testing.assert_allclose(total.get(), 2 * got, rtol=1e-6)
    assert rec.ms > 0


# ---- the array interfaces: gpumem as the producer ------------------------------------------
def _long_naive_matmul(n=8192):
    """Operands of gpumem's naive n^3 matmul (about 0.3 s on an H200) and its NaN-poisoned
    out, every upload finished: the caller queues the matmul and reads out at once."""
    rng = np.random.default_rng()
    a = gm.to_device(rng.random((n, n), dtype=np.float32))
    b = gm.to_device(rng.random((n, n), dtype=np.float32))
    out = gm.to_device(np.full((n, n), np.nan, np.float32))
    gm.synchronize()
    return a, b, out


@pytest.mark.gpu
def test_pytorch_reads_gpumem_result_on_a_side_stream(each_device):
    torch = pytest.importorskip("torch")
    a, b, out = _long_naive_matmul()
    gm.matmul(a, b, variant="naive", out=out)
    side = torch.cuda.Stream(device=each_device)       # non-blocking, as PyTorch's are
    with torch.cuda.device(each_device), torch.cuda.stream(side):
        t = torch.from_dlpack(out)                      # passes side's handle as stream=
        total = t.sum(dtype=torch.float64)
    side.synchronize()
    assert t.device.index == each_device
    assert torch.isfinite(total), "PyTorch read gpumem's result before it was written"
    assert float(total) == pytest.approx(float(out.get().sum(dtype=np.float64)), rel=1e-9)


@pytest.mark.gpu
def test_cupy_reads_gpumem_result_on_a_non_blocking_stream(each_device):
    cp = pytest.importorskip("cupy")
    a, b, out = _long_naive_matmul()
    gm.matmul(a, b, variant="naive", out=out)
    with cp.cuda.Device(each_device), cp.cuda.Stream(non_blocking=True) as side:
        x = cp.asarray(out)                             # reads __cuda_array_interface__'s stream
        total = x.sum(dtype=cp.float64)
        side.synchronize()
    assert bool(cp.isfinite(total)), "CuPy read gpumem's result before it was written"
    assert float(total) == pytest.approx(float(out.get().sum(dtype=np.float64)), rel=1e-9)
    a, b, out2 = _long_naive_matmul()
    gm.matmul(a, b, variant="naive", out=out2)
    with cp.cuda.Device(each_device), cp.cuda.Stream(non_blocking=True) as side:
        y = cp.from_dlpack(out2)                        # DLPack: __dlpack__(stream=side)
        total = y.sum(dtype=cp.float64)
        side.synchronize()
    assert bool(cp.isfinite(total)), "CuPy (DLPack) read gpumem's result before it was written"


# ---- the array interfaces: gpumem as the consumer ------------------------------------------
def _torch_write_behind_sleep(torch, side, n, value, device):
    """On `side`: a 0.2 s sleep, then x[:] = value; returns x (NaN before the write)."""
    x = torch.full((n,), float("nan"), device=f"cuda:{device}")
    torch.cuda.synchronize(device)
    with torch.cuda.stream(side):
        torch.cuda._sleep(400_000_000)
        x.fill_(value)
    return x


@pytest.mark.gpu
def test_gpumem_reads_pytorch_write_on_a_side_stream(each_device):
    torch = pytest.importorskip("torch")
    n = 1 << 20
    side = torch.cuda.Stream(device=each_device)
    x = _torch_write_behind_sleep(torch, side, n, 3.0, each_device)
    with torch.cuda.device(each_device), torch.cuda.stream(side):
        got = gm.copy(x)            # DLPack: PyTorch makes gpumem's stream wait for `side`
    assert got.device == each_device
    np.testing.assert_array_equal(got.get(), np.full(n, 3.0, np.float32))


class _Interface:
    """Only __cuda_array_interface__ (v3, with the producer's stream)."""

    def __init__(self, tensor, stream_ptr):
        self.keep = tensor
        self.__cuda_array_interface__ = {"shape": tuple(tensor.shape), "typestr": "<f4",
                                         "data": (tensor.data_ptr(), False), "version": 3,
                                         "strides": None, "stream": stream_ptr}


@pytest.mark.gpu
def test_gpumem_waits_for_the_stream_of_a_cuda_array_interface(each_device):
    torch = pytest.importorskip("torch")
    n = 1 << 20
    side = torch.cuda.Stream(device=each_device)
    x = _torch_write_behind_sleep(torch, side, n, 5.0, each_device)
    got = gm.copy(_Interface(x, side.cuda_stream))
    np.testing.assert_array_equal(got.get(), np.full(n, 5.0, np.float32))
    for bad in (0, -1, 2**64):
        with pytest.raises(ValueError, match=r"copy: a\.__cuda_array_interface__\['stream'\]"):
            gm.copy(_Interface(x, bad))


@pytest.mark.gpu
def test_gpumem_reads_cupy_write_on_a_non_blocking_stream(each_device):
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    n = 1 << 20
    with cp.cuda.Device(each_device):
        side = cp.cuda.Stream(non_blocking=True)
        x = cp.full((n,), cp.nan, dtype=cp.float32)
        cp.cuda.Device(each_device).synchronize()
        with side:
            # a 0.2 s sleep on CuPy's stream (PyTorch's kernel on it), then the write
            with torch.cuda.device(each_device), torch.cuda.stream(
                    torch.cuda.ExternalStream(side.ptr, device=f"cuda:{each_device}")):
                torch.cuda._sleep(400_000_000)
            x.fill(7.0)
            got = gm.copy(x)        # DLPack: CuPy makes gpumem's stream wait for `side`
    np.testing.assert_array_equal(got.get(), np.full(n, 7.0, np.float32))


@pytest.mark.gpu
def test_dlpack_stream_argument_is_checked(rng):
    d = gm.to_device(f32(rng, 16))
    for bad in (0, -2, 2**64):
        with pytest.raises(ValueError, match=r"__dlpack__: stream="):
            d.__dlpack__(stream=bad)
    with pytest.raises(TypeError, match="__dlpack__: stream must be None or an int"):
        d.__dlpack__(stream="1")
    s = gm.Stream()
    for ok in (None, 1, 2, -1, s.ptr):
        assert d.__dlpack__(stream=ok) is not None


@pytest.mark.gpu
def test_bench_runs_on_the_gpu_of_its_operands(rng):
    last = N_GPUS - 1
    x = gm.to_device(f32(rng, 1 << 20), device=last)
    with gm.Device(0):
        r = gm.bench(gm.vec_add, x, f32(rng, 1 << 20), repeat=3, warmup=1, l2="cold")
        assert gm._core._get_device() == 0
    assert r.median_ms > 0 and r.gbps > 0


# ---- one GPU reaching another's memory: peer access and copies between GPUs ---------------
PAIR_FUNCTIONS = ["can_access_peer", "peer_attributes", "enable_peer_access",
                  "disable_peer_access"]


@pytest.mark.parametrize("fn", PAIR_FUNCTIONS)
@pytest.mark.parametrize("args, error, msg", [
    ((0, 0), ValueError, r"device and peer are both 0; a GPU reaches its own memory"),
    ((True, 1), TypeError, r"device must be an int, not bool"),
    ((0, 1.5), TypeError, r"peer must be an int, not float"),
    ((None, 1), TypeError, r"device and peer must be GPU numbers, not None"),
    ((-1, 0), ValueError, r"device=-1 is not a device"),
    ((0, -3), ValueError, r"peer=-3 is not a device")])
def test_pair_functions_refuse_what_is_not_two_gpus(fn, args, error, msg):
    # said the same with or without a GPU (the numbers' own faults need no driver)
    with pytest.raises(error, match=rf"^{fn}: {msg}"):
        getattr(gm, fn)(*args)


def test_pair_functions_are_exported():
    assert set(PAIR_FUNCTIONS) <= set(gm.__all__) and set(PAIR_FUNCTIONS) <= set(gm.runtime.__all__)


PAIRS = [(a, b) for a in range(N_GPUS) for b in range(N_GPUS) if a != b] or [(0, 1)]


@pytest.mark.gpu
@pytest.mark.skipif(N_GPUS < 2, reason="needs two GPUs")
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}to{p[1]}")
def test_peer_attributes_of_each_pair_and_the_switch(pair):
    a, b = pair
    att = gm.peer_attributes(a, b)
    assert (att["device"], att["peer"]) == (a, b)
    assert att["access_supported"] == gm.can_access_peer(a, b)
    assert isinstance(att["performance_rank"], int) and att["performance_rank"] >= 0
    if not att["access_supported"]:
        with pytest.raises(ValueError, match=rf"GPU {a} cannot reach GPU {b}'s memory"):
            gm.enable_peer_access(a, b)
        return
    for _ in range(2):                    # on twice, off twice: no error
        gm.enable_peer_access(a, b)
        assert gm.peer_attributes(a, b)["enabled"]
    for _ in range(2):
        gm.disable_peer_access(a, b)
        assert not gm.peer_attributes(a, b)["enabled"]


@pytest.mark.gpu
@pytest.mark.skipif(N_GPUS < 2, reason="needs two GPUs")
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}to{p[1]}")
@pytest.mark.parametrize("access", ["off", "on"])
def test_to_device_copies_between_gpus(pair, access, rng, no_leak):
    a, b = pair
    if access == "on" and not gm.can_access_peer(b, a):
        pytest.skip(f"GPU {b} cannot reach GPU {a}")
    (gm.enable_peer_access if access == "on" else gm.disable_peer_access)(b, a)
    try:
        for n in (0, 1, 1023, 3 * 2**20 + 7):
            host = f32(rng, n)
            x = gm.to_device(host, device=a)
            y = gm.to_device(x, device=b)
            assert (y.device, y.shape, y.dtype) == (b, x.shape, x.dtype)
            np.testing.assert_array_equal(y.get(), host)
        with pytest.raises(TypeError, match=rf"to_device: a is already a DeviceArray on device "
                                            rf"{a} \(use it as it is\)"):
            gm.to_device(x, device=a)
    finally:
        gm.disable_peer_access(b, a)


@pytest.mark.gpu
@pytest.mark.skipif(N_GPUS < 2, reason="needs two GPUs")
def test_a_copy_between_gpus_waits_for_the_kernel_writing_its_source():
    # the source written by a naive 4096^2 matmul (tens of ms) on a non-blocking stream of
    # GPU 0, copied to GPU 1 at once: the copy must wait for the matmul
    with gm.Device(0):
        a, b, out = _long_naive_matmul(4096)
        with gm.Stream() as s:
            gm.matmul(a, b, out=out, variant="naive")
            y = gm.to_device(out, device=1)
        assert s.device == 0
    got = y.get()
    assert not np.isnan(got).any(), f"{np.isnan(got).sum()} elements copied before written"
    np.testing.assert_array_equal(got, out.get())


@pytest.mark.gpu
@pytest.mark.skipif(N_GPUS < 2, reason="needs two GPUs")
def test_another_librarys_array_is_copied_to_the_gpu_asked_for():
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(1):
        src = cp.arange(1 << 20, dtype=cp.float32)
    y = gm.to_device(src, device=0)
    assert y.device == 0
    np.testing.assert_array_equal(y.get(), cp.asnumpy(src))
