"""The core: import, discovery, exceptions, DeviceArray, records, bench and the
variant table -- without a GPU every validation path (validation must happen
before any device call, so each bad argument raises its own TypeError/ValueError,
never CudaUnavailableError; with a GPU the same tests prove nothing reached it),
and on a GPU device discovery, memory accounting, records and bench.  Also the
experiments face."""
import re
import gc
import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import gpumem as gm
from _helpers import F, m


def test_is_available_is_a_bool_and_never_raises():
    assert gm.is_available() in (True, False)
    assert gm.is_available() == gm.is_available()


def test_exception_hierarchy():
    from gpumem.runtime.nccl import NcclError
    assert issubclass(gm.Error, RuntimeError)
    # one base for every failure of gpumem's own: `except gpumem.Error` catches them all
    for e in (gm.CudaError, gm.CudaUnavailableError, gm.DeviceMemoryError, gm.ProfilerError,
              NcclError):
        assert issubclass(e, gm.Error), e
    assert not issubclass(ValueError, gm.Error)         # bad input stays ValueError/TypeError
    assert issubclass(gm.CudaError, RuntimeError)
    assert issubclass(gm.CudaUnavailableError, gm.CudaError)
    assert issubclass(gm.DeviceMemoryError, gm.CudaError)
    assert issubclass(gm.DeviceMemoryError, MemoryError)


@pytest.mark.skipif(gm.is_available(), reason="this machine has a GPU: see the gpu tests below")
def test_no_gpu_behaviour():
    # Every GPU use raises CudaUnavailableError with the reason; nothing crashes.
    for call in (gm.device, gm.memory_info, lambda: gm.to_device(m(3)), lambda: gm.empty((3,)),
                 lambda: gm.matmul(m(2, 3), m(3, 4)), lambda: gm.vec_add(m(5), m(5))):
        with pytest.raises(gm.CudaUnavailableError, match="no usable CUDA GPU"):
            call()
    assert gm._core.bytes_held() == 0
    # ... and the package keeps working for what needs no GPU.
    assert [v.name for v in gm.variants("matmul")] == ["naive", "tiled", "prefetch", "coarsened",
                                                      "register_tiled", "warptiled", "mma", "wgmma"]


def test_runtime_version_without_device():
    major, minor = gm._core.runtime_version()
    assert major >= 12 and minor >= 0


def test_variants_lists_named_variants_with_bytes_and_flops():
    vs = gm.variants("matmul")
    assert [v.name for v in vs] == ["naive", "tiled", "prefetch", "coarsened", "register_tiled",
                                    "warptiled", "mma", "wgmma"]
    assert all(v.family == "matmul" and v.bytes == "4*(M*K + K*N + M*N)" and v.flops == "2*M*N*K"
               for v in vs)
    assert "shared memory" in vs[1].idea
    everything = gm.variants()
    assert {v.family for v in everything} >= {"vec_add", "matmul"}
    with pytest.raises(ValueError, match="family='conv' is unknown; allowed: .*'matmul'"):
        gm.variants("conv")
    with pytest.raises(TypeError, match="family must be a str"):
        gm.variants(3)


# ---- DeviceArray and allocation validation -------------------------------------
@pytest.mark.parametrize("obj,exc,msg", [
    ([1.0, 2.0], TypeError, "to_device: a must be a numpy.ndarray or an array with __dlpack__ "
                            "or __cuda_array_interface__, not list"),
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
    ({"counters": "yes"}, TypeError, "bench: counters must be True or False, not str"),
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


# ---- on the GPU ------------------------------------------------------------------------
@pytest.mark.gpu
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
    # the PCI address, domain:bus:device.function, as NVML and nvidia-smi print it
    assert re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9]", d.pci_bus_id), \
        d.pci_bus_id
    assert d.name in d.summary()
    if d.compute_capability == (9, 0) and "H100" in d.name:
        assert d.multiprocessors == 132
        assert d.shared_memory_per_block_optin == 227 * 1024


@pytest.mark.gpu
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


@pytest.mark.gpu
def test_device_array_from_non_contiguous(rng):
    a = rng.standard_normal((40, 30)).astype(np.float32)
    for view in (a.T, a[::3, 1::2], a[:, ::-1]):
        np.testing.assert_array_equal(gm.to_device(view).get(), view)


@pytest.mark.gpu
def test_cuda_array_interface(rng):
    a = rng.standard_normal((7, 9)).astype(np.float32)
    d = gm.to_device(a)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (7, 9) and cai["typestr"] == "<f4"
    assert cai["data"] == (d.ptr, False) and cai["strides"] is None
    cupy = pytest.importorskip("cupy", reason="CuPy reads __cuda_array_interface__")
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(d)), a)


@pytest.mark.gpu
def test_memory_info_counts_what_gpumem_holds(no_leak):
    before = gm.memory_info()
    assert before["total"] > before["free"] > 0
    d = gm.empty((1 << 20,), dtype=np.float32)
    assert gm.memory_info()["gpumem_bytes"] - before["gpumem_bytes"] == 4 * (1 << 20)
    del d
    gc.collect()
    assert gm.memory_info()["gpumem_bytes"] == before["gpumem_bytes"]


# ---- the allocator: a stream-ordered pool by default (issue 30) ---------------------------------
def test_the_allocator_is_the_pool_unless_asked_otherwise():
    assert gm.allocator() in ("pool", "cudaMalloc")
    with pytest.raises(ValueError, match=r"set_allocator: name='bogus' is unknown; allowed: "
                                         r"'cudaMalloc', 'pool'"):
        gm.set_allocator("bogus")
    with pytest.raises(TypeError, match="set_allocator: name must be a str"):
        gm.set_allocator(None)


@pytest.mark.parametrize("env,want", [("", "pool"), ("pool", "pool"),
                                      ("cudaMalloc", "cudaMalloc"), ("bogus", "ValueError")])
def test_gpumem_allocator_chooses_it(env, want):
    code = ("import gpumem as gm\ntry:\n    print(gm.allocator())\n"
            "except ValueError as e:\n    print('ValueError', e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "GPUMEM_ALLOCATOR": env}, timeout=120)
    assert out.stdout.split()[0] == want, out.stdout + out.stderr
    if want == "ValueError":
        assert "GPUMEM_ALLOCATOR='bogus' is unknown" in out.stdout


@pytest.mark.gpu
def test_the_pool_keeps_freed_blocks_and_gives_them_back(no_leak):
    if gm.allocator() != "pool":
        pytest.skip("GPUMEM_ALLOCATOR chose cudaMalloc for this run")
    gc.collect()
    gm.empty_cache()
    start = gm.memory_info()
    n = 256 << 20
    d = gm.empty((n // 4,))
    info = gm.memory_info()
    assert info["allocator"] == "pool" and info["pool_peak"] >= n
    assert info["pool_in_use"] - start["pool_in_use"] >= n, (start, info)
    assert info["pool_reserved"] >= info["pool_in_use"]
    del d
    gc.collect()
    gm.to_device(np.zeros(1, np.float32)).get()                    # the free done in stream order
    kept = gm.memory_info()
    assert kept["gpumem_bytes"] == info["gpumem_bytes"] - n       # gpumem holds it no more
    assert kept["pool_in_use"] <= info["pool_in_use"] - n + (1 << 20)   # nothing uses it ...
    assert kept["pool_reserved"] >= info["pool_in_use"]            # ... and the pool keeps it
    for _ in range(1000):                                           # reused, not reallocated
        gm.empty((n // 4,))
    assert gm.memory_info()["pool_reserved"] <= kept["pool_reserved"]
    released = gm.empty_cache()
    after = gm.memory_info()
    assert released > 0 and after["pool_reserved"] <= kept["pool_reserved"] - released, after


@pytest.mark.gpu
@pytest.mark.alone      # fills 80% of the device: tests beside it would run out
def test_out_of_memory_trims_the_pool_and_retries_once(no_leak):
    if gm.allocator() != "pool":
        pytest.skip("GPUMEM_ALLOCATOR chose cudaMalloc for this run")
    gc.collect()
    gm.empty_cache()
    free = gm.memory_info()["free"]
    kept = gm.empty((int(free * 0.5) // 4,))
    del kept                               # half the device kept by the pool
    gc.collect()
    assert gm.memory_info()["pool_reserved"] >= int(free * 0.5) // 4 * 4
    big = gm.empty((int(free * 0.8) // 4,))   # fits only once the pool gives back what it keeps
    assert big.nbytes >= int(free * 0.8) // 4 * 4
    del big
    gc.collect()
    gm.empty_cache()


@pytest.mark.gpu
def test_switching_the_allocator_needs_nothing_held(no_leak):
    before = gm.allocator()
    d = gm.empty((1024,))
    other = "cudaMalloc" if before == "pool" else "pool"
    with pytest.raises(ValueError, match=r"set_allocator: gpumem holds \d+ bytes from the"):
        gm.set_allocator(other)
    del d
    gc.collect()
    # The switch itself in a fresh process, where nothing is held yet (in this one, earlier
    # tests leave small buffers -- cached records, a profiler's -- that keep the refusal up).
    code = ("import numpy as np, gpumem as gm\n"
            f"gm.set_allocator({other!r})\n"
            "a = np.arange(1000, dtype=np.float32)\n"
            "assert (gm.vec_add(a, a) == a + a).all()\n"
            "print(gm.memory_info()['allocator'], gm.allocator())\n")
    env = {k: v for k, v in os.environ.items() if k != "GPUMEM_ALLOCATOR"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [other, other]
    assert gm.allocator() == before                   # this process: unchanged


@pytest.mark.gpu
def test_out_of_device_memory_is_clean_and_recoverable(rng, no_leak):
    total = gm.memory_info()["total"]
    with pytest.raises(gm.DeviceMemoryError, match="out of device memory") as info:
        gm.empty((2 * total // 4,), dtype=np.float32)
    assert isinstance(info.value, MemoryError)
    # the next call works
    a = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(gm.vec_add(a, a), a + a)


@pytest.mark.gpu
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


@pytest.mark.gpu
def test_bench_reports_event_times(rng):
    a = rng.standard_normal((512, 512)).astype(np.float32)
    res = gm.bench(gm.matmul, a, a, tile=16, repeat=20, warmup=3)
    assert res.kernel == "matmul" and res.variant == "tiled" and res.repeat == 20
    assert len(res.samples_ms) == 20
    assert 0 < res.min_ms <= res.median_ms <= res.max_ms
    assert res.gflops == pytest.approx(2 * 512**3 / (res.median_ms * 1e-3) / 1e9)
    assert res.gbps == pytest.approx(4 * 3 * 512 * 512 / (res.median_ms * 1e-3) / 1e9)


@pytest.mark.gpu
def test_bench_rejects_a_function_that_launches_nothing():
    with pytest.raises(ValueError, match="launched no gpumem kernel"):
        gm.bench(lambda: None)


@pytest.mark.gpu
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


# ---- the variant table: select values ------------------------------------------------
def test_variants_carry_their_select_value():
    sel = {(v.family, v.name): v.select for v in gm.variants()}
    assert (sel[("matmul", "naive")], sel[("matmul", "tiled")]) == (0, 1)
    assert [sel[("stencil_1d", m)] for m in ("constant", "readonly", "global")] == [0, 1, 2]
    assert [sel[("register_pressure", c)] for c in ("uncapped", "cap128", "cap64", "cap40",
                                                     "cap32")] == [1, 2, 4, 6, 8]
    assert all(isinstance(s, int) for s in sel.values())
    assert gm.Variant("f", "n", "idea", "bytes", "flops").select == 0


# ---- the experiments face ------------------------------------------------------------------
def test_experiments_reexports_every_lessons_declared_sweeps():
    from gpumem import experiments as ex

    for lesson in gm.lessons.declarations():
        module = importlib.import_module(f"gpumem.lessons.{lesson.name}")
        for name in lesson.sweeps:
            assert getattr(ex, name) is getattr(module, name)
        assert ex.SWEEPS_BY_LESSON[lesson.name] == lesson.sweeps
    assert ex.offset_sweep is gm.lessons.access.offset_sweep
    assert all(hasattr(ex, n) for n in ex.__all__)
    assert all(hasattr(gm, n) for n in gm.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ex.nope


# ---- issue 11: arguments first, everywhere --------------------------------------------
def test_import_from_a_source_tree_without_the_extension_says_what_to_do(tmp_path):
    import shutil
    import subprocess
    import sys

    src = tmp_path / "gpumem"
    shutil.copytree(gm.__path__[0], src, ignore=shutil.ignore_patterns("_core*.so", "_core*.pyd",
                                                                       "__pycache__"))
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'gpumem'\n")
    # (an editable install of another checkout would answer gpumem._core: leave it out)
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in "
            "getattr(f, '__module__', '')]; import gpumem")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: you are importing gpumem from its source tree "
                           f"{tmp_path}, which has no built extension (gpumem/_core")
    assert "pip install -e ." in last and "another folder" in last


@pytest.mark.parametrize("bad, exc", [(True, TypeError), (np.True_, TypeError), (1.0, TypeError),
                                      (np.int64(0), ValueError), (np.uint8(0), ValueError)])
def test_bench_ints_take_index_and_refuse_bool(bad, exc):
    with pytest.raises(exc, match=r"bench: repeat"):
        gm.bench(gm.vec_add, m(4), m(4), repeat=bad)


def test_bench_raises_the_kernels_own_error_before_uploading(monkeypatch):
    uploads = []
    monkeypatch.setattr(gm.runtime, "to_device", lambda a: uploads.append(a))
    with pytest.raises(TypeError, match=r"vec_add: b has dtype"):
        gm.bench(gm.vec_add, m(8), m(8, dtype=np.float64))
    with pytest.raises(ValueError, match=r"vec_add: block=0 is not allowed"):
        gm.bench(gm.vec_add, m(8), m(8), block=0)
    assert uploads == []
    with gm.runtime.args._checking():                 # nests, and switches off at the end
        with gm.runtime.args._checking():
            assert gm.vec_add(m(8), m(8)) is None
        assert gm.vec_add(m(8), m(8)) is None
    assert not gm.runtime.args._checking_only()


def test_dir_is_the_public_api():
    d = dir(gm)
    assert not {"np", "Any", "contextlib", "statistics", "dataclass"} & set(d)
    assert set(gm.__all__) <= set(d)
    assert {"model", "experiments", "lessons", "runtime", "tools", "report"} <= set(d)
    # a lesson's module and the function it exports cannot collide: lessons live apart
    assert callable(gm.matmul) and callable(gm.transpose) and callable(gm.profile)
    assert gm.lessons.matmul.matmul is gm.matmul


def test_py_typed_marks_the_package_typed():
    import os

    assert os.path.isfile(os.path.join(gm.__path__[0], "py.typed"))


def test_variants_show_as_a_table_and_stay_a_list():
    vs = gm.variants("matmul")
    assert isinstance(vs, list) and [v.name for v in vs][:2] == ["naive", "tiled"]
    lines = repr(vs).splitlines()
    assert lines[0] == "variants of matmul"
    assert lines[1].split() == ["family", "name", "idea", "bytes", "flops", "select"]
    assert lines[3].split()[:2] == ["matmul", "naive"] and lines[3].split()[-1] == "0"
    md = vs._repr_markdown_()
    assert "| family | name | idea | bytes | flops | select |" in md and "| matmul | tiled |" in md
    assert "gld_efficiency" in repr(gm.metrics())        # a Table shows its rows too


def test_table_checks_its_arguments():
    with pytest.raises(TypeError, match=r"Table: rows must be an iterable of mappings"):
        gm.Table(5)
    with pytest.raises(TypeError, match=r"Table: rows must be mappings .* row 1 is a int"):
        gm.Table([{"a": 1}, 2])
    with pytest.raises(TypeError, match=r"Table: columns must be a sequence of column names"):
        gm.Table([], columns="ab")
    with pytest.raises(TypeError, match=r"Table: title must be a str"):
        gm.Table([], title=3)
    t = gm.Table([{"x": 1, "y": 2.0}])
    with pytest.raises(ValueError, match=r"Table.plot: y='ms' is not a column; the columns are "
                                         r"'x', 'y'"):
        t.plot("x", "ms")
    with pytest.raises(TypeError, match=r"Table: a column is named by a str"):
        t[0]


def test_table_formats_each_column_one_way():
    t = gm.Table([{"bytes": 2097152.0, "n": 524288, "ms": 0.0123, "eff": 100.0, "big": 2.5e9},
                  {"bytes": 1024.0, "n": 7, "ms": 5.25, "eff": 87.5, "big": 3.25}])
    cells = [line.split() for line in str(t).splitlines()[2:]]
    assert cells == [["2,097,152", "524,288", "0.012", "100.0", "2.500e+09"],
                     ["1,024", "7", "5.250", "87.5", "3.250e+00"]]
    assert "| 2,097,152 | 524,288 | 0.012 | 100.0 | 2.500e+09 |" in t.to_markdown()


def test_table_panels_draw_only_columns_with_numbers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = gm.Table([{"offset": o, "ms": None, "eff": 100 - o, "tx": o * 2} for o in range(4)],
                 title="sweep")
    fig = t.panels("offset", ["ms", ["eff", "tx"], "tx"])   # "ms" has no numbers: no panel
    assert len(fig.axes) == 2 and fig._suptitle.get_text() == "sweep"
    assert [len(ax.lines) for ax in fig.axes] == [2, 1]
    plt.close(fig)
    assert t.panels("offset", ["ms", ["ms"]]) is None
    with pytest.raises(TypeError, match="Table.panels: ys must be a list"):
        t.panels("offset", "eff")
    with pytest.raises(ValueError, match="x='nope' is not a column"):
        t.panels("nope", ["eff"])
