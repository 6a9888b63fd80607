"""gpumem report: every lesson's headline in one table.

Model mode (forced, so these run the same with or without a GPU): the rows,
the JSON, --out, --lesson and the argument errors.  On a GPU (marked ``gpu``):
the measured rows are sane and a full report finishes in under 120 s.
"""
import contextlib
import importlib
import json
import os
import pathlib
import sys
import time
import types

import numpy as np
import pytest

import gpumem as gm
from gpumem import report
from gpumem.__main__ import main

LESSONS = [name for name, _ in report.HEADLINES]
UNMODELLED = {"transfer"}        #: host copies: the link decides, nothing to predict


@pytest.fixture
def model_mode(monkeypatch):
    """The CLI as on a machine without a GPU (the lessons' sweeps ask the runtime too)."""
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)


def by_lesson(rows):
    out = {}
    for r in rows:
        out.setdefault(r["lesson"], []).append(r)
    return out


def first_with(rows, key):
    return next(r for r in rows if key in r["model"] or key in r["measured"])


# ---- the registry ------------------------------------------------------------------------
def test_registry_lists_every_lesson_in_order_with_its_sweeps():
    # the report's own device row, then every lesson, in lesson order (each declares both)
    assert LESSONS == ["device"] + list(gm.lessons.LESSONS)
    assert list(report.SWEEPS) == LESSONS
    assert all(callable(f) for _, f in report.HEADLINES)


def test_no_lesson_module_imports_the_report():
    pkg = pathlib.Path(report.__file__).parent
    for path in pkg.rglob("*.py"):
        if path.name in ("report.py", "__main__.py"):
            continue
        text = path.read_text()
        for needle in ("from .report", "from . import report", "gpumem.report",
                       "import report"):
            assert needle not in text, f"{path.name} imports the report ({needle!r})"


# ---- model mode ---------------------------------------------------------------------------
def test_headlines_without_measuring_give_the_models_side_of_every_lesson():
    rows = report.headlines(measure=False)
    lessons = by_lesson(rows)
    assert list(lessons) == LESSONS
    for lesson, rs in lessons.items():
        if lesson not in UNMODELLED:
            assert any(r["model"] for r in rs), f"{lesson}: no row with model numbers"
        else:
            assert all(r["model_text"].startswith("not modelled") for r in rs)
        for r in rs:
            assert r["measured"] == {}
            assert r["measured_text"].startswith("would measure: ")
            assert r["takeaway"] and r["experiment"]
    m = first_with(rows, "offset11_gld_efficiency")["model"]
    assert m["offset11_gld_efficiency"] == 80.0 and m["offset0_gld_efficiency"] == 100.0
    assert m["offset11_gld_transactions_per_request"] == pytest.approx(5.0, abs=1e-3)
    m = first_with(rows, "aos_gld_efficiency")["model"]
    assert (m["aos_gld_efficiency"], m["soa_gld_efficiency"]) == (50.0, 100.0)
    m = first_with(rows, "tiled_flops_per_float")["model"]
    assert (m["naive_flops_per_float"], m["tiled_flops_per_float"]) == (1.0, 32.0)
    assert m["naive_gld_transactions"] > 10 * m["tiled_gld_transactions"]
    m = first_with(rows, "copy_bytes")["model"]
    assert m["copy_bytes"] == 8 * 2**26 and m["copy_gld_efficiency"] == 100.0
    m = first_with(rows, "cap32_blocks_per_sm")["model"]
    assert (m["cap32_blocks_per_sm"], m["uncapped_blocks_per_sm"]) == (8.0, 1.0)
    assert first_with(rows, "local_bytes_per_thread_local")["model"][
        "local_bytes_per_thread_local"] == 64.0
    assert first_with(rows, "constant_passes_32")["model"]["constant_passes_32"] == 32.0


def test_quick_headlines_use_smaller_sizes():
    full = first_with(report.headlines(measure=False, lessons=["device"]), "copy_bytes")
    quick = first_with(report.headlines(measure=False, quick=True, lessons=["device"]),
                       "copy_bytes")
    assert quick["model"]["copy_bytes"] == full["model"]["copy_bytes"] / 2


def test_main_without_arguments_prints_the_model_report(model_mode, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")          # every cell on one line, to find it
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("No GPU here (forced by the test).")
    header = next(ln for ln in out.splitlines() if ln.startswith("lesson "))
    assert header.split() == ["lesson", "experiment", "measured", "model", "takeaway"]
    for lesson in LESSONS:
        assert f"\n{lesson} " in out
    assert "would measure: " in out
    assert "80% at offset 11" in out


def test_report_json_parses_and_has_model_numbers(model_mode, capsys):
    assert main(["report", "--json", "--no-progress"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["gpu"] is False and doc["no_gpu_reason"] == "forced by the test"
    assert doc["gpumem"] == gm.__version__
    rows = doc["rows"]
    assert [r["lesson"] for r in rows] == [r["lesson"] for r in report.headlines(measure=False)]
    assert {r["lesson"] for r in rows if r["model"]} == set(LESSONS) - UNMODELLED
    access = next(r for r in rows if r["lesson"] == "access")
    assert access["model"]["offset11_gld_efficiency"] == 80.0
    assert "No GPU here" in cap.err                     # stdout is the JSON alone


def test_out_writes_markdown_html_and_plots(model_mode, tmp_path, capsys):
    d = tmp_path / "rep"
    assert main(["report", "--quick", "--no-progress", "--out", str(d)]) == 0
    md = (d / "report.md").read_text()
    assert "| lesson | experiment | measured | model | takeaway |" in md
    n_rows = len(report.card(measure=False)) + len(report.headlines(measure=False))
    assert "No GPU here" in md and md.count("\n| ") == 2 + n_rows      # the card, then headlines
    assert md.index("memory card") < md.index("| lesson |")
    page = (d / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<tr>") == 2 + n_rows
    assert "<th>takeaway</th>" in page and "http" not in page      # self-contained
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        assert not list(d.glob("*.png"))
    else:
        for png in ("memory_card.png", "access_gld_efficiency.png", "matmul.png"):
            assert (d / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f'alt="{png}"' in page and f'src="{png}"' not in page     # embedded
    assert str(d / "report.md") in capsys.readouterr().out


def test_lesson_access_prints_the_offset_sweep(model_mode, capsys, monkeypatch):
    # the sweep asks gpumem itself whether there is a GPU: model-only here too
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)
    monkeypatch.setenv("COLUMNS", "250")          # one line per row, to parse
    assert main(["report", "--lesson", "access", "--quick", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "offset sweep: read" in out and "gld_efficiency [model]" in out
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("read_offset")]
    assert len(lines) == 33                                         # offsets 0..32
    by_offset = {int(f[3]): float(f[4]) for f in lines}             # kernel unroll cache offset eff
    assert by_offset[0] == 100 and by_offset[11] == 80 and by_offset[32] == 100


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_sweep_runs_in_model_mode(model_mode, capsys, lesson):
    assert main(["report", "--lesson", lesson, "--quick", "--no-progress", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lesson"] == lesson and doc["tables"]
    for t in doc["tables"]:
        # the model's columns, or (for what only a GPU can say) a title that says so
        assert t["rows"] and ("model" in t["sources"].values() or "no GPU" in t["title"]), \
            t["title"]


def test_progress_without_tqdm_is_one_line_per_lesson(model_mode, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)      # import tqdm raises ImportError
    assert main(["report", "--quick"]) == 0
    err = capsys.readouterr().err
    steps = [ln for ln in err.splitlines() if ln.startswith("[")]
    cards = [name for name, _ in report.CARDS]
    assert steps == [f"[{i}/{len(cards)}] gpumem memory card: {lesson} ..."
                     for i, lesson in enumerate(cards, 1)] + [
        f"[{i}/{len(LESSONS)}] gpumem report: {lesson} ..." for i, lesson in enumerate(LESSONS, 1)]


def test_no_progress_means_nothing_on_stderr(model_mode, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert main(["report", "--quick", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


# ---- arguments ---------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["--size", "-1"], ["tour", "--size", "0"], ["--size", "x"],
                                  ["--lesson", "nope"], ["report", "--bogus"],
                                  ["nope"], ["--out", ""]])
def test_bad_arguments_exit_2_with_one_error_line(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(errors) == 1 and errors[0].startswith("gpumem") and errors[0] == \
        err.rstrip().splitlines()[-1]
    assert "Traceback" not in err


def test_out_that_is_a_file_is_an_argument_error(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit) as e:
        main(["report", "--out", str(f)])
    assert e.value.code == 2 and "is not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("path,why", [("/proc/gpumem-no-such", "No such file or directory"),
                                      ("/etc/hostname/sub", "Not a directory")])
def test_an_unwritable_out_folder_is_refused_before_anything_runs(path, why, capsys,
                                                                   monkeypatch):
    monkeypatch.setattr(report, "headlines", lambda **kw: pytest.fail("measured first"))
    with pytest.raises(SystemExit) as e:
        main(["report", "--quick", "--out", path])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --out: cannot write into '{path}': {why}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [["--help"], ["report", "--help"], ["tour", "--help"]])
def test_help_says_usage_gpumem_without_backticks(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert out.startswith("usage: gpumem") and "`" not in out
    if argv == ["--help"]:
        assert "report" in out and "tour" in out and "--version" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"gpumem {gm.__version__}, built with CUDA runtime ")


def test_api_checks_its_arguments():
    with pytest.raises(TypeError, match=r"report.headlines: quick must be a bool"):
        report.headlines(quick="yes")
    # numpy.bool_ is a bool, as everywhere in gpumem
    assert report.headlines(measure=np.False_, quick=np.True_, lessons=["access"])
    with pytest.raises(ValueError, match=r"report.headlines: lessons has 'nope'"):
        report.headlines(measure=False, lessons=["nope"])
    with pytest.raises(TypeError, match=r"report.sweeps: lesson must be a str"):
        report.sweeps(3)
    with pytest.raises(ValueError, match=r"report.sweeps: lesson='nope' is unknown"):
        report.sweeps("nope")
    with pytest.raises(TypeError, match=r"report.write: out_dir must be a path"):
        report.write(3, [])


def test_json_turns_nan_into_null():
    doc = json.loads(report.to_json(rows=[{"lesson": "x", "measured": {"a": float("nan")}}]))
    assert doc["rows"][0]["measured"]["a"] is None


# ---- the measured path, on a fake GPU (runs everywhere) ------------------------------------
class FakeResult:
    def __init__(self, ms, nbytes, flops):
        self.median_ms = ms
        self.gbps = nbytes / (ms * 1e-3) / 1e9
        self.gflops = flops / (ms * 1e-3) / 1e9


class FakeGPU:
    """Just enough of gpumem's GPU side for report's measured path: kernels that
    compute nothing (matmul computes), bench with set times, counters, attributes."""

    MS = {("copy", "float4"): 1.0, ("matmul", "naive"): 8.0, ("matmul", "tiled"): 2.0,
          ("matmul", "warptiled"): 0.625,
          ("matmul", "mma"): 0.08, ("matmul", "wgmma"): 0.05,
          ("read_offset", 0): 1.0, ("read_offset", 11): 1.25, ("struct_update", "aos"): 2.0,
          ("struct_update", "soa"): 1.0, ("stencil_1d", "constant"): 1.05,
          ("stencil_1d", "readonly"): 1.1, ("constant_broadcast", "constant", 1): 1.0,
          ("constant_broadcast", "constant", 32): 20.0,
          ("constant_broadcast", "readonly", 32): 1.5, ("thread_histogram", "local"): 3.0,
          ("thread_histogram", "registers"): 1.0, ("register_pressure", "uncapped"): 2.0,
          ("register_pressure", "cap32"): 1.6, ("divergence", "odd_even"): 2.0,
          ("divergence", "warp"): 1.0, ("transpose", "naive_row"): 6.0,
          ("transpose", "shared"): 2.0, ("transpose", "padded"): 1.1,
          ("transpose", "coarsened"): 1.05,
          **{("tile_copy", v): t for v, t in (("ldg_sts", 1.25), ("cp_async16", 1.1),
                                               ("tensor", 1.05), ("tensor_swizzle128", 1.02))},
          **{("tile_transpose", v): t for v, t in (("ldg_sts", 2.0), ("cp_async16", 1.8),
                                                    ("tensor", 1.6), ("tensor_swizzle128", 1.04))},
          **{("dram_stream", u): 4.0 / min(u, 4) for u in (1, 2, 4, 8, 16)}, ("dram_burst", 32): 1.0}
    COUNTERS = {("dram_burst", 32): {"gld_transactions": 1000.0, "gld_requests": 63.0,
                                     "dram_read_bytes": 64000.0},
                ("copy", "float4"): {"dram_read_bytes": 4.0 * 2**26},
                ("matmul", "naive"): {"gld_transactions": 1.3e9},
                ("matmul", "tiled"): {"gld_transactions": 6.7e7},
                ("read_offset", 0): {"gld_efficiency": 100.0},
                ("read_offset", 11): {"gld_efficiency": 80.0},
                ("struct_update", "aos"): {"gld_efficiency": 50.0},
                ("struct_update", "soa"): {"gld_efficiency": 100.0},
                ("thread_histogram", "local"): {"local_load_transactions": 5e6},
                ("thread_histogram", "registers"): {"local_load_transactions": 0.0},
                ("register_pressure", "uncapped"): {"local_load_transactions": 0.0},
                ("register_pressure", "cap32"): {"local_load_transactions": 2e6},
                **{("transpose", v): {"shared_load_bank_conflict": c} for v, c in (
                    ("naive_row", 0.0), ("shared", 1.6e7), ("padded", 0.0), ("coarsened", 0.0))}}
    LATENCY = {16 * 2**10: 30.0, 4 * 2**20: 260.0}    # cycles per load; larger rings: 700

    #: GB/s of the ladder's bandwidth reads by (variant, scope): shared, L1, L2, device memory
    BANDWIDTH = {("shared", "block"): 30000.0, ("read", "block"): 25000.0}

    def __init__(self, monkeypatch, name="Fake GPU"):
        self.profiling = None
        owner = {f: d.name for d in gm.lessons.declarations() for f in d.families}
        for fam in ("copy", "matmul", "read_offset", "struct_update", "stencil_1d",
                    "constant_broadcast", "thread_histogram", "register_pressure", "divergence",
                    "transpose", "dram_stream", "dram_burst", "tile_copy", "tile_transpose"):
            # each headline calls its lesson's own function; the report's device row, copy
            monkeypatch.setattr(sys.modules[f"gpumem.lessons.{owner[fam]}"], fam,
                                self._kernel(fam))
        monkeypatch.setattr(report, "copy", sys.modules["gpumem.lessons.access"].copy)
        # the stencil's ceiling: the device copy, here as fast as the float4 copy
        def device_copy(dst, src, repeat, warmup):
            return {"GB/s": 8.0 * np.size(src) / (self.MS[("copy", "float4")] * 1e-3) / 1e9}
        for lesson in ("stencil", "transpose", "dram", "clusters", "async_copy"):
            monkeypatch.setattr(sys.modules[f"gpumem.lessons.{lesson}"], "device_copy",
                                device_copy)
        # the ladder's chases and the transfer lesson's copies
        monkeypatch.setattr(sys.modules["gpumem.lessons.ladder"], "latency",
                            lambda ws, variant, steps: types.SimpleNamespace(
                                cycles_per_load=self.LATENCY.get(ws, 700.0),
                                ns_per_load=self.LATENCY.get(ws, 700.0) / 1.98))
        monkeypatch.setattr(sys.modules["gpumem.lessons.transfer"], "_core",
                            types.SimpleNamespace(_transfer_copy=lambda kind, d, nbytes, r, w: [
                                nbytes / (50e9 if kind == "pinned" else 10e9) * 1e3] * r))
        # the allocation lesson's host timings and first_touch launches
        alloc = sys.modules["gpumem.lessons.allocation"]
        monkeypatch.setattr(alloc, "_core", types.SimpleNamespace(
            _alloc_cost=lambda kind, nbytes, r, w: {"alloc": [{"pool": 0.5}.get(kind, 20.0)] * r,
                                                    "free": [{"pool": 0.5}.get(kind, 30.0)] * r}))
        monkeypatch.setattr(alloc, "_touch_ms", lambda touch, nbytes, fresh, repeat: [
            types.SimpleNamespace(ms=nbytes / 2.5e9, bytes=float(nbytes))] * repeat)
        # the l2_persistence lesson's launches without and with a window
        monkeypatch.setattr(sys.modules["gpumem.lessons.l2_persistence"], "_head_rows",
                            lambda quick: [{"case": "none", "ms": 0.5, "l2_hit_rate": 40.0},
                                           {"case": "window hit_ratio=1", "ms": 0.4,
                                            "l2_hit_rate": 65.0}])
        monkeypatch.setattr(gm.runtime, "to_device", lambda a: a)
        monkeypatch.setattr(gm.runtime, "empty", lambda shape: np.empty(shape, np.float32))
        monkeypatch.setattr(gm.runtime, "bench", self.bench)
        monkeypatch.setattr(gm.runtime, "profiler_available", lambda: True)
        monkeypatch.setattr(gm.runtime, "profile", self.profile)
        monkeypatch.setattr(gm.runtime, "device", lambda: types.SimpleNamespace(
            name=name, multiprocessors=132, l2_cache_size=50 * 2**20,
            theoretical_bandwidth_gbps=3352.0, compute_capability=(9, 0),
            shared_memory_per_multiprocessor=228 * 1024, total_memory=80 * 2**30,
            clock_khz=1_980_000, registers_per_multiprocessor=65536))
        # the clusters lesson's chases, DSMEM reads and histograms
        clu = sys.modules["gpumem.lessons.clusters"]
        monkeypatch.setattr(clu, "_chase_cycles", lambda v, steps: {"local": 30.0}.get(v, 200.0))
        monkeypatch.setattr(clu, "_stream_gbps", lambda quick: 6000.0)
        monkeypatch.setattr(clu, "_histogram_ms", lambda x, bins, v, quick: {"cluster": 0.1}.get(
            v, 0.4))
        # the memory card: the ladder's bandwidth reads (L2 below 50 MiB, then device memory)
        # and the pool's account
        monkeypatch.setattr(sys.modules["gpumem.lessons.ladder"], "_measure_bandwidth",
                            lambda v, scope, ws, repeat, sms: {
                                "GB/s": self.BANDWIDTH.get((v, scope), 7000.0 if ws < 50 * 2**20
                                                           else 3000.0), "clock MHz": 1980.0})
        monkeypatch.setattr(gm.runtime, "memory_info", lambda: {"pool_reserved": 64 << 20})
        spaces = sys.modules["gpumem.lessons.spaces"]
        monkeypatch.setattr(spaces, "kernel_attributes", lambda fam, v: types.SimpleNamespace(
            local_bytes_per_thread={"local": 64, "cap32": 160}.get(v, 0),
            registers_per_thread={"cap32": 32, "uncapped": 72}.get(v, 24)))
        monkeypatch.setattr(spaces, "kernel_occupancy", lambda fam, v, block: types.SimpleNamespace(
            blocks_per_sm={"cap32": 8, "uncapped": 3}[v]))
        monkeypatch.setattr(sys.modules["gpumem.lessons.dram"], "kernel_occupancy",
                            lambda fam, v, block, **kw: types.SimpleNamespace(blocks_per_sm=8))

    @staticmethod
    def key(fam, args, kw):
        sel = {"copy": "variant", "matmul": "variant", "read_offset": "offset", "transpose": "variant",
               "struct_update": "layout", "stencil_1d": "memory",
               "constant_broadcast": "memory", "thread_histogram": "variant",
               "register_pressure": "variant", "divergence": "variant", "dram_stream": "unroll",
               "dram_burst": "piece", "tile_copy": "variant", "tile_transpose": "variant"}[fam]
        k = (fam, kw.get(sel, 0 if sel == "offset" else None))
        return k + (args[0],) if fam == "constant_broadcast" else k

    def _kernel(self, fam):
        def kernel(*args, **kw):
            if self.profiling is not None:
                self.profiling.append(types.SimpleNamespace(
                    metrics=self.COUNTERS[self.key(fam, args, kw)]))
            if fam == "matmul":
                return types.SimpleNamespace(get=lambda: args[0] @ args[1])
            return args[0]
        kernel.family = fam
        return kernel

    def bench(self, fn, *args, repeat, warmup, **kw):
        assert repeat >= 1 and warmup >= 0
        fam = fn.family
        n = np.size(args[0]) if fam != "constant_broadcast" else kw["n"]
        flops = 2.0 * np.shape(args[0])[0] ** 3 if fam == "matmul" else 0.0
        return FakeResult(self.MS[self.key(fam, args, kw)], 8.0 * n, flops)

    @contextlib.contextmanager
    def profile(self, metrics):
        recs = []
        self.profiling = recs
        try:
            yield types.SimpleNamespace(records=recs)
        finally:
            self.profiling = None


def fake_cupy(noise=0.0):
    """A CuPy whose matmul is NumPy's (plus ``noise`` relative error)."""
    events = iter(range(10**6))
    cp = types.ModuleType("cupy")
    cp.asarray = np.asarray
    cp.asnumpy = np.asarray

    def matmul(a, b, out=None):
        c = (a @ b) * np.float32(1 + noise)
        if out is not None:
            out[...] = c
            return out
        return c
    cp.matmul = matmul
    cp.cuda = types.SimpleNamespace(
        Event=lambda: types.SimpleNamespace(record=lambda: None, synchronize=lambda: None,
                                            t=next(events)),
        get_elapsed_time=lambda start, end: 0.5)
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    return cp


def test_measured_rows_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    rows = report.headlines(measure=True, quick=True)
    assert [r["lesson"] for r in rows] == [r["lesson"] for r in report.headlines(
        measure=False, quick=True)]
    for r in rows:
        assert r["measured"], r["experiment"]
        assert not r["measured_text"].startswith("would measure")
    dev = first_with(rows, "copy_GB/s")
    assert dev["measured"]["copy_GB/s"] == pytest.approx(8 * 2**25 / 1e-3 / 1e9)
    assert "Fake GPU: 132 SMs, L2 50 MiB, 3,352 GB/s theoretical" in dev["measured_text"]
    assert "DRAM read 268 MB measured / 134 MB model" in dev["measured_text"]
    mm = first_with(rows, "tiled_GFLOP/s")
    assert mm["measured"]["tiled_GFLOP/s"] == pytest.approx(4 * mm["measured"]["naive_GFLOP/s"])
    assert "(4.0x)" in mm["measured_text"] and "measured / " in mm["measured_text"]
    cub = first_with(rows, "cublas_GFLOP/s")["measured"]
    assert cub["cublas_ms"] == 0.5 and cub["rel_err"] == 0.0
    assert cub["warptiled_GFLOP/s"] == pytest.approx(4 * mm["measured"]["tiled_GFLOP/s"] / 1.25)
    assert cub["fastest_gpumem_over_cublas"] == pytest.approx(0.5 / 0.625)   # warptiled
    acc = first_with(rows, "offset11_GB/s")
    assert "offset 11: gld efficiency 80% measured / 80% model" in acc["measured_text"]
    assert acc["measured"]["offset11_gld_efficiency"] == 80.0
    assert "gld efficiency AoS 50% measured / 50% model, SoA 100% measured / 100% model" in \
        first_with(rows, "aos_GB/s")["measured_text"]
    st = first_with(rows, "constant_pct_of_copy")["measured"]
    assert st["constant_pct_of_copy"] == pytest.approx(100 / 1.05)
    assert first_with(rows, "constant_32_over_1")["measured"]["constant_32_over_1"] == 20.0
    reg = first_with(rows, "cap32_blocks_per_sm")["measured"]
    assert (reg["cap32_blocks_per_sm"], reg["cap32_local_load_transactions"]) == (8.0, 2e6)
    assert first_with(rows, "odd_even_over_warp")["measured"]["odd_even_over_warp"] == 2.0
    tr = first_with(rows, "padded_x_copy")
    assert tr["measured"]["padded_x_copy"] == pytest.approx(1 / 1.1)
    assert tr["measured"]["shared_shared_load_bank_conflict"] == 1.6e7
    assert "coarsened reaches 0.95x of a copy" in tr["takeaway"]
    lad = first_with(rows, "L1_cycles")["measured"]
    assert (lad["L1_cycles"], lad["L2 near_cycles"], lad["device memory_cycles"]) == (
        30.0, 260.0, 700.0)
    dsm = first_with(rows, "remote_over_local")["measured"]
    assert dsm["remote_over_local"] == pytest.approx(200 / 30)
    assert first_with(rows, "global_over_cluster")["measured"]["global_over_cluster"] == \
        pytest.approx(4.0)
    xfer = first_with(rows, "pinned_GB/s")["measured"]
    assert xfer["pinned_GB/s"] == pytest.approx(50.0) and xfer["pageable_GB/s"] == pytest.approx(10.0)
    tma = first_with(rows, "transpose_tensor_swizzle128_x_copy")["measured"]
    assert tma["transpose_tensor_swizzle128_x_copy"] == pytest.approx(1 / 1.04)
    assert tma["copy_ldg_sts_x_copy"] == pytest.approx(1 / 1.25)
    dr = first_with(rows, "dram_bytes_per_sector")
    assert dr["measured"]["dram_bytes_per_sector"] == 64.0
    assert "a lone 32-byte piece costs 64 DRAM bytes" in dr["measured_text"]


def test_cublas_that_disagrees_is_not_timed(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(noise=1e-3))
    rows = report.headlines(measure=True, quick=True, lessons=["matmul"])
    cub = next(r for r in rows if "cuBLAS" in r["experiment"])
    assert cub["measured"]["rel_err"] == pytest.approx(1e-3, rel=1e-2)
    assert "cublas_GFLOP/s" not in cub["measured"]
    assert cub["measured_text"].startswith("cuBLAS differs from gpumem: relative error 1.0")


def test_without_cupy_the_report_says_so(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", None)
    rows = report.headlines(measure=True, quick=True, lessons=["matmul"])
    assert rows[-1]["measured_text"] == "CuPy not importable: no cuBLAS to compare with"
    assert rows[-1]["measured"] == {}


def test_measured_plots_on_a_fake_gpu(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    rows = report.headlines(measure=True, quick=True, lessons=["matmul"])
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)     # the offset sweep: model only
    assert report.plot(rows, str(tmp_path), measure=True, quick=True) == [
        "access_gld_efficiency.png", "matmul.png"]


# ---- on a GPU --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def full_report():
    if not gm.is_available():
        return None, None
    t0 = time.perf_counter()
    rows = report.headlines()
    return rows, time.perf_counter() - t0


@pytest.mark.gpu
def test_full_report_finishes_in_under_two_minutes(full_report):
    rows, seconds = full_report
    assert [r for r in rows if r["lesson"] == "device"][0]["measured"]["copy_GB/s"] > 0
    assert seconds < 120, f"the full report took {seconds:.0f} s"


@pytest.mark.gpu
def test_full_report_measured_rows_are_sane(full_report):
    rows, _ = full_report
    counters = gm.profiler_available()
    for r in rows:
        assert not r["measured_text"].startswith("would measure"), r
    dev = first_with(rows, "copy_GB/s")["measured"]
    assert 0.5 * dev["theoretical_GB/s"] < dev["copy_GB/s"] < 1.05 * dev["theoretical_GB/s"]
    mm = first_with(rows, "tiled_GFLOP/s")["measured"]
    assert mm["tiled_GFLOP/s"] > mm["naive_GFLOP/s"]
    acc = first_with(rows, "offset11_GB/s")["measured"]
    lay = first_with(rows, "aos_GB/s")["measured"]
    if counters:
        assert abs(acc["offset11_gld_efficiency"] - 80) < 0.5
        assert abs(acc["offset0_gld_efficiency"] - 100) < 0.5
        assert abs(lay["aos_gld_efficiency"] - 50) < 0.5
        assert mm["naive_gld_transactions"] > 10 * mm["tiled_gld_transactions"]
    else:
        assert "offset11_gld_efficiency" not in acc
    st = first_with(rows, "constant_GB/s")["measured"]
    assert st["constant_GB/s"] >= 0.5 * dev["copy_GB/s"]     # sane; the speed is bench_stencil's
    bc = first_with(rows, "constant_32_over_1")["measured"]
    assert bc["constant_32_over_1"] > 4 and bc["constant_over_readonly_32"] > 1
    hist = first_with(rows, "local_bytes_per_thread_local")["measured"]
    assert hist["local_bytes_per_thread_local"] >= 64 and \
        hist["local_bytes_per_thread_registers"] == 0
    reg = first_with(rows, "cap32_blocks_per_sm")["measured"]
    assert reg["cap32_registers"] <= 32 < reg["uncapped_registers"]
    assert reg["cap32_local_bytes_per_thread"] > reg["uncapped_local_bytes_per_thread"]
    assert reg["cap32_blocks_per_sm"] > reg["uncapped_blocks_per_sm"]
    div = first_with(rows, "odd_even_over_warp")["measured"]
    assert div["odd_even_over_warp"] > 1.3
    cub = next(r for r in rows if "cuBLAS" in r["experiment"])
    try:
        importlib.import_module("cupy")
    except ImportError:
        assert cub["measured_text"].startswith("CuPy not importable")
    else:
        assert cub["measured"]["rel_err"] < 1e-4
        assert 0 < cub["measured"]["fastest_gpumem_over_cublas"] < 2


@pytest.mark.gpu
@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_sweeps_measure_on_a_gpu(lesson):
    tables = report.sweeps(lesson, quick=True)
    assert tables
    for t in tables:
        assert "measured" in t.sources.values(), t.title
        for col in (c for c, s in t.sources.items() if s == "measured"):
            # empty only where the row says why (a variant that cannot run that point)
            assert all(r[col] is not None or r.get("note") for r in t), (t.title, col)


@pytest.mark.gpu
def test_cli_quick_report_json_on_a_gpu(capsys, tmp_path):
    assert main(["report", "--quick", "--json", "--no-progress", "--out",
                 str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu"] is True and doc["device"] == gm.device().name
    assert all(r["measured"] for r in doc["rows"] if r["lesson"] != "matmul")
    assert [r["level"] for r in doc["card"]] == LEVELS
    # every level measured but the registers (an operand: no load to time)
    assert all(r["ns"] is not None and r["ns"] > 0 for r in doc["card"][1:])
    assert doc["card"][0]["level"] == "registers" and doc["card"][0]["size"] == \
        4 * gm.device().registers_per_multiprocessor
    assert doc["elapsed_s"] < 15, f"report --quick took {doc['elapsed_s']} s"
    assert os.path.exists(tmp_path / "report.html")


# ---- the memory card ----------------------------------------------------------------------
LEVELS = ["registers", "shared", "constant", "L1", "distributed shared", "L2 near", "L2 near, TMA",
          "L2 far", "device memory",
          "host -> device", "device -> host", "pool, 1 MiB", "cudaMalloc, 1 MiB"]


def test_the_card_comes_from_the_lessons_declarations():
    assert report.CARDS == [(d.name, d.card) for d in gm.lessons.declarations() if d.card]
    assert {name for name, _ in report.CARDS} == {"spaces", "ladder", "transfer", "allocation",
                                                  "clusters"}


def test_card_without_a_gpu_shows_sizes_and_published_figures():
    rows = report.card(measure=False, quick=True)
    assert [r["level"] for r in rows] == LEVELS
    by = {r["level"]: r for r in rows}
    for r in rows:
        assert r["cycles"] is None and r["ns"] is None and r["GB/s"] is None
        assert r["cycles_ratio"] is None and r["GB/s_ratio"] is None and r["how"]
        assert bool(r["published"]) == bool(r["source"])
    assert by["L1"]["published"] == "32-40 cyc, 128 B/clk/SM"
    assert by["L2 far"]["size"] == 50 * 2**20 and by["L2 near"]["size_text"] == "25 MiB"
    assert by["device memory"]["published_GB/s"] == 3350.0
    assert by["device memory"]["size_text"] == "80 GB"
    assert by["host -> device"]["size_text"] == "PCIe 5.0 x16"
    assert by["host -> device"]["published_GB/s"] == 64.0
    assert by["registers"]["size"] == 256 * 2**10
    assert by["registers"]["size_text"] == "256 KiB/SM (64 Ki x 32-bit)"
    assert by["registers"]["published"] == "64 Ki x 32-bit/SM (cc 9.0)"
    assert "no GPU" in report.card_title(False)
    text = report.card_table(rows, report.card_title(False)).to_text(0)
    assert "570-860 cyc, 3,350 GB/s" in text


def test_card_on_a_gpu_without_published_figures(monkeypatch):
    FakeGPU(monkeypatch)
    rows = report.card(measure=True, quick=True)
    by = {r["level"]: r for r in rows}
    assert [r["level"] for r in rows] == LEVELS
    assert by["L1"]["cycles"] == 30.0 and by["L2 near"]["cycles"] == 260.0
    assert by["L1"]["GB/s"] == 25000.0 and by["device memory"]["GB/s"] == 3000.0
    assert by["device memory"]["size"] == 80 * 2**30
    assert by["host -> device"]["GB/s"] == pytest.approx(50.0)
    assert by["pool, 1 MiB"]["ns"] == pytest.approx(1000.0)        # 0.5 + 0.5 us
    assert by["cudaMalloc, 1 MiB"]["ns"] == pytest.approx(50000.0)
    assert by["pool, 1 MiB"]["size_text"] == "64 MiB reserved"
    # the register file is published per compute capability, not per GPU
    assert by["registers"]["published"] == "64 Ki x 32-bit/SM (cc 9.0)"
    assert by["registers"]["size"] == 4 * 65536 and by["registers"]["ns"] is None
    assert all(r["published"] == "" and r["GB/s_ratio"] is None for r in rows
               if r["level"] != "registers")
    assert report.card_title(True) == ("memory card of Fake GPU (no published figures are "
                                       "known for this GPU)")


def test_the_registers_of_a_compute_capability_the_model_lacks(monkeypatch):
    monkeypatch.setattr(gm.runtime, "device", lambda: types.SimpleNamespace(
        registers_per_multiprocessor=32768, compute_capability=(8, 8)))
    (row,) = gm.lessons.spaces.LESSON.card(True, True)
    assert (row["level"], row["size"], row["size_text"]) == ("registers", 131072,
                                                            "128 KiB/SM (32 Ki x 32-bit)")
    assert row["published"] == "" and row["source"] is None and row["cycles"] is None
    assert "the device's attributes" in row["how"]


def test_card_on_an_h100_sets_ratios(monkeypatch):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    by = {r["level"]: r for r in report.card(measure=True)}
    assert by["L1"]["cycles_ratio"] == pytest.approx(30.0 / 36.0)
    # 128 bytes/clk/SM at the clock the read saw: 132 x 128 x 1.98 GB/s
    assert by["L1"]["GB/s_ratio"] == pytest.approx(25000.0 / (132 * 128 * 1.98))
    assert by["device memory"]["GB/s_ratio"] == pytest.approx(3000.0 / 3350.0)
    assert by["host -> device"]["GB/s_ratio"] == pytest.approx(50.0 / 64.0)
    assert by["shared"]["cycles_ratio"] == pytest.approx(30.0 / 29.5)
    assert by["L2 near"]["GB/s_ratio"] is None          # no published L2 bandwidth for it
    assert "H100 SXM" in report.card_title(True)
    dev = report.headlines(measure=True, lessons=["device"])[0]
    assert dev["measured"]["published_GB/s"] == 3350.0
    assert "of the theoretical 3,352 GB/s" in dev["takeaway"]
    assert "of the published 3,350 GB/s" in dev["takeaway"]
    cells = {r["level"]: r for r in report.card_table(list(by.values()))}
    assert cells["device memory"]["x published"] == "0.98 lat, 0.90 BW"     # 700 / 715 cycles


def test_the_report_opens_with_the_card(model_mode, capsys):
    assert main(["report", "--quick", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.index("memory card") < out.index("\nlesson ")
    assert "gpumem report took" in out.splitlines()[-1]
    assert main(["report", "--quick", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["level"] for r in doc["card"]] == LEVELS and doc["elapsed_s"] >= 0
    assert "no GPU" in doc["card_title"]


@pytest.mark.gpu
def test_the_card_on_a_gpu_climbs_the_hierarchy():
    t0 = time.perf_counter()
    by = {r["level"]: r for r in report.card(quick=True)}
    seconds = time.perf_counter() - t0
    assert list(by) == LEVELS and seconds < 15, f"the quick card took {seconds:.1f} s"
    lat = [by[k]["cycles"] for k in ("L1", "L2 near", "L2 far", "device memory")]
    assert lat == sorted(lat) and lat[0] < 100 and lat[-1] > 3 * lat[0], lat
    assert by["shared"]["cycles"] < by["L2 near"]["cycles"]
    bw = [by[k]["GB/s"] for k in ("L1", "L2 near", "device memory")]
    assert bw == sorted(bw, reverse=True), bw
    for k in ("host -> device", "device -> host"):
        assert 1 < by[k]["GB/s"] < 1000 and by[k]["ns"] > 0
    assert by["pool, 1 MiB"]["ns"] < by["cudaMalloc, 1 MiB"]["ns"]
    if gm.runtime.published.published(gm.device().name) is not None:
        assert 0.3 < by["device memory"]["GB/s_ratio"] < 1.1


@pytest.mark.gpu
def test_the_card_figure_measures_the_ladder_on_a_gpu(tmp_path):
    t0 = time.perf_counter()
    curves = report.card_curves(quick=True)
    seconds = time.perf_counter() - t0
    fig = report.card_figure(report.card(measure=False), curves, gm.device().name)
    lat = {label: (xs, ys) for label, xs, ys in fig["latency"]}
    xs, ys = lat["global, ld.ca: L1, L2, device memory"]
    assert (xs[0], xs[-1]) == (4 * 2**10, 256 * 2**20)
    assert ys[0] < 100 and ys[-1] > 3 * ys[0], ys            # L1, then device memory
    assert max(lat["shared memory"][1]) < 100
    bw = {label: (xs, ys) for label, xs, ys in fig["bandwidth"]}
    per_sm = bw["read, each SM its own copy (scope=block)"][1]
    grid = bw["read once by the whole grid (scope=grid)"][1]
    assert per_sm[0] > 2 * grid[-1], (per_sm, grid)         # L1 against device memory
    assert seconds < 5, f"the quick figure's sweeps took {seconds:.1f} s"
