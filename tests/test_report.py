"""gpumem report: every lesson's headline in one table.

Model mode (forced, so these run the same with or without a GPU): the rows,
the JSON, --out, --lesson and the argument errors.  On a fake GPU (everywhere):
the measured path of every headline and card row, each lesson measuring through
the stand-ins it declares.  On a GPU (marked ``gpu``): the measured rows are
sane and a full report finishes in under 120 s.

Every lesson is a plug-in here too: these tests iterate over
``gpumem.lessons.declarations()`` and name no lesson; what a lesson's rows must
say is checked in its own ``tests/test_<lesson>.py``.
"""
import importlib
import io
import json
import math
import pathlib
import sys
import time

import numpy as np
import pytest

import gpumem as gm
from gpumem import report
from gpumem.__main__ import main
from gpumem.tools.card import DEPTH
from _fake_gpu import FakeGPU, fake_cupy, first_with

#: It reads counters, runs child processes that do, or times whole commands: under
#: pytest-xdist it runs in gpu-check's one-process-per-GPU phase (conftest.py).
pytestmark = pytest.mark.alone

LESSONS = [name for name, _ in report.HEADLINES]
DECLARED = gm.lessons.declarations()


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
        for r in rs:
            # the model's numbers, or a row that says it is not modelled (and why)
            assert r["model"] or r["model_text"].startswith("not modelled"), r
            assert all(isinstance(v, (int, float)) and math.isfinite(v)
                       for v in r["model"].values()), r["model"]
            assert r["measured"] == {}
            assert r["measured_text"].startswith("would measure: ")
            assert r["takeaway"] and r["experiment"]
    # each lesson's rows are its headline's, in its name (what they say: tests/test_<lesson>.py)
    for d in DECLARED:
        assert lessons[d.name] == d.headline(False, False), d.name
    m = first_with(rows, "copy_bytes")["model"]
    assert m["copy_bytes"] == 8 * 2**26 and m["copy_gld_efficiency"] == 100.0


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
    # every row's model side is printed (its first words: a cell may wrap)
    for r in report.headlines(measure=False):
        assert " ".join(r["model_text"].split()[:2]) in out, r["model_text"]


def test_report_json_parses_and_has_model_numbers(model_mode, capsys):
    assert main(["report", "--json", "--no-progress"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["gpu"] is False and doc["no_gpu_reason"] == "forced by the test"
    assert doc["gpumem"] == gm.__version__
    rows = doc["rows"]
    want = report.headlines(measure=False)
    assert [r["lesson"] for r in rows] == [r["lesson"] for r in want]
    # every number of the model's side, as the rows hold it (NaN: null)
    assert [r["model"] for r in rows] == [json.loads(report.to_json(rows=[r]))["rows"][0]["model"]
                                          for r in want]
    assert {r["lesson"] for r in rows if r["model"]} == {
        r["lesson"] for r in want if not r["model_text"].startswith("not modelled")}
    assert "No GPU here" in cap.err                     # stdout is the JSON alone


def test_out_writes_markdown_html_and_plots(model_mode, tmp_path, capsys):
    d = tmp_path / "rep"
    assert main(["report", "--quick", "--no-progress", "--out", str(d)]) == 0
    md = (d / "report.md").read_text()
    assert "| lesson | experiment | measured | model | takeaway |" in md
    card = report.card(measure=False)
    # the card, where its gaps go (the ceilings itemised), then the headlines
    n_rows = len(card) + len(report.ceiling_table(card)) + len(report.headlines(measure=False))
    assert "No GPU here" in md and md.count("\n| ") == 3 + n_rows
    assert md.index("memory card") < md.index("| lesson |")
    page = (d / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<tr>") == 3 + n_rows
    assert "<th>takeaway</th>" in page and "http" not in page      # self-contained
    names = report.plot_names(report.headlines(measure=False, quick=True),
                              report.card(measure=False, quick=True))
    assert names[0] == "memory_card.png" and len(names) > 1
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        assert not list(d.glob("*.png"))
    else:
        assert sorted(p.name for p in d.glob("*.png")) == sorted(names)
        for png in names:
            assert (d / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f'alt="{png}"' in page and f'src="{png}"' not in page     # embedded
    out = capsys.readouterr().out
    assert str(d / "report.md") in out and str(d / "report.json") in out
    # report.json is the document --json prints, which 'gpumem compare' reads
    doc = json.loads((d / "report.json").read_text())
    assert doc["gpu"] is False and doc["rows"] and doc["card"]
    assert main(["compare", str(d / "report.json"), str(d / "report.json")]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("A: ") and "\nB: " in shown


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_sweep_runs_in_model_mode(model_mode, capsys, lesson):
    assert main(["report", "--lesson", lesson, "--quick", "--no-progress", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lesson"] == lesson and doc["tables"]
    for t in doc["tables"]:
        # the model's columns, or (for what only a GPU can say) a title that says so
        assert t["rows"] and ("model" in t["sources"].values() or "no GPU" in t["title"]), \
            t["title"]


def test_progress_without_tqdm_is_one_line_per_lesson(monkeypatch):
    # on a terminal, for work that runs (a fake GPU's): one line per step without tqdm
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "tqdm", None)      # import tqdm raises ImportError
    err = type("TTY", (io.StringIO,), {"isatty": lambda self: True})()
    monkeypatch.setattr(sys, "stderr", err)
    report.card(measure=True, quick=True, progress=True)
    report.headlines(measure=True, quick=True, progress=True)
    steps = [ln for ln in err.getvalue().splitlines() if ln.startswith("[")]
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
    assert report.headlines(measure=np.False_, quick=np.True_, lessons=[LESSONS[-1]])
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
    assert doc["schema"] == report.SCHEMA == 1          # a versioned document


# ---- the measured path, on a fake GPU (runs everywhere) ------------------------------------
def test_every_lesson_with_a_headline_declares_its_stand_ins(monkeypatch):
    gpu = FakeGPU(monkeypatch)
    for d in DECLARED:
        if d.headline or d.card:
            assert d.stand_ins is not None, f"{d.name}: no stand-ins for the fake GPU"
            assert gpu.stood_in[d.name], d.name      # each a name its module has


def test_measured_rows_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    rows = report.headlines(measure=True, quick=True)
    assert [r["lesson"] for r in rows] == [r["lesson"] for r in report.headlines(
        measure=False, quick=True)]
    for r in rows:
        assert r["measured"], r["experiment"]
        assert not r["measured_text"].startswith("would measure")
        assert all(v is None or isinstance(v, (int, float)) for v in r["measured"].values()), r
        assert r["takeaway"] and r["model_text"], r
    # each lesson's rows are its headline's (their numbers: tests/test_<lesson>.py)
    lessons = by_lesson(rows)
    for d in DECLARED:
        assert [r["experiment"] for r in lessons[d.name]] == [
            r["experiment"] for r in d.headline(True, True)], d.name
    dev = first_with(rows, "copy_GB/s")
    assert dev["measured"]["copy_GB/s"] == pytest.approx(8 * 2**25 / 1e-3 / 1e9)
    assert "Fake GPU: 132 SMs, L2 50 MiB, 3,352 GB/s theoretical" in dev["measured_text"]
    assert "DRAM read 268 MB measured / 134 MB model" in dev["measured_text"]


def test_measured_plots_on_a_fake_gpu(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    FakeGPU(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy())
    rows = report.headlines(measure=True, quick=True)
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)     # the sweeps: model only
    names = report.plot(rows, str(tmp_path), measure=True, quick=True)
    assert names == report.plot_names(rows) and names
    for png in names:
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
    for r in rows:
        assert not r["measured_text"].startswith("would measure"), r
        assert r["measured"] or r["measured_text"], r      # numbers, or why there are none
    dev = first_with(rows, "copy_GB/s")["measured"]
    assert 0.5 * dev["theoretical_GB/s"] < dev["copy_GB/s"] < 1.05 * dev["theoretical_GB/s"]
    # what each lesson's rows measure: its own tests/test_<lesson>.py, on a GPU


@pytest.mark.gpu
@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_sweeps_measure_on_a_gpu(lesson):
    tables = report.sweeps(lesson, quick=True)
    assert tables
    for t in tables:
        # measured, or its title says why not (a lesson of two GPUs where one is visible)
        assert "measured" in t.sources.values() or "(not measured: " in t.title, t.title
        for col in (c for c, s in t.sources.items() if s == "measured"):
            # empty only where the row says why (a variant that cannot run that point)
            assert all(r[col] is not None or r.get("note") for r in t), (t.title, col)


# ---- the memory card ----------------------------------------------------------------------
#: The card's levels from the SM outwards (gpumem.tools.card.DEPTH: every level a lesson measures).
LEVELS = sorted(DEPTH, key=DEPTH.get)


def test_the_card_comes_from_the_lessons_declarations():
    assert report.CARDS == [(d.name, d.card) for d in DECLARED if d.card]
    assert len(report.CARDS) >= 2
    # the card is every declared card's rows, ordered from the SM outwards, lesson order within
    rows = report.card(measure=False, quick=True)
    declared = [r for d in DECLARED if d.card for r in d.card(False, True)]
    assert rows == sorted(declared, key=lambda r: r["depth"])
    for d in DECLARED:
        if d.card:
            assert {r["lesson"] for r in d.card(False, True)} == {d.name}, d.name


def test_card_without_a_gpu_shows_sizes_and_published_figures():
    rows = report.card(measure=False, quick=True)
    assert [r["level"] for r in rows] == LEVELS
    for r in rows:
        assert r["cycles"] is None and r["ns"] is None and r["GB/s"] is None
        assert r["cycles_ratio"] is None and r["GB/s_ratio"] is None and r["how"]
        assert bool(r["published"]) == bool(r["source"])
        assert r["size"] is None or r["size_text"], r
    # the model's GPU is the H100 SXM: published figures for most levels
    assert sum(bool(r["published"]) for r in rows) > len(rows) // 2
    assert "no GPU" in report.card_title(False)
    text = report.card_table(rows, report.card_title(False)).to_text(0)
    for r in rows:
        assert r["level"] in text and r["published"] in text
    # each level's size and figures: the lesson that measures it (tests/test_<lesson>.py)


def test_card_on_a_gpu_without_published_figures(monkeypatch):
    FakeGPU(monkeypatch)
    rows = report.card(measure=True, quick=True)
    assert [r["level"] for r in rows] == LEVELS
    # measured where the row measures something: ns and GB/s positive, or None
    assert all(r[k] is None or r[k] > 0 for r in rows for k in ("cycles", "ns", "GB/s"))
    assert sum(r["ns"] is not None or r["GB/s"] is not None for r in rows) >= len(rows) - 1
    # nothing published for this GPU: only what a compute capability publishes, no ratio
    assert all((r["published"] == "" or "(cc 9.0)" in r["published"])
               and r["GB/s_ratio"] is None and r["cycles_ratio"] is None for r in rows)
    assert report.card_title(True) == ("memory card of Fake GPU (no published figures are "
                                       "known for this GPU)")


def test_card_on_an_h100_sets_ratios(monkeypatch):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    rows = report.card(measure=True)
    # a ratio wherever the row measured what the H100's figures publish
    ratios = [r for r in rows if r["cycles_ratio"] is not None or r["GB/s_ratio"] is not None]
    assert len(ratios) >= 4
    for r in rows:
        if r["cycles"] is not None and r["published_cycles"]:
            assert r["cycles_ratio"] == pytest.approx(
                r["cycles"] / (sum(r["published_cycles"]) / 2)), r["level"]
    assert "H100 SXM" in report.card_title(True)
    dev = report.headlines(measure=True, lessons=["device"])[0]
    assert dev["measured"]["published_GB/s"] == 3350.0
    assert "of the theoretical 3,352 GB/s" in dev["takeaway"]
    assert "of the published 3,350 GB/s" in dev["takeaway"]
    cells = {r["level"]: r for r in report.card_table(rows)}
    assert all(cells[r["level"]]["x published"] for r in ratios)


def test_every_ceiling_is_itemised_under_the_card(monkeypatch):
    """On a fake H100: each row with a ceiling shows its published start, one line per
    overhead with a factor and a source, the ceiling (the product) and measured over it."""
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    rows = report.card(measure=True)
    with_ceiling = [r for r in rows if r["ceiling"]]
    assert len(with_ceiling) >= 6 and all(r["ceiling"]["overheads"] for r in with_ceiling)
    t = report.ceiling_table(rows)
    for r in with_ceiling:
        at = t["level"].index(r["level"])
        start, *steps = t.rows[at:at + 2 + len(r["ceiling"]["overheads"])]
        assert start["GB/s"] == r["ceiling"]["start_GB/s"] and start["source"]
        product = start["GB/s"]
        for o, line in zip(r["ceiling"]["overheads"], steps):
            assert line["factor"] == o["factor"] and line["source"] == o["source"]
            product *= o["factor"]
        ceiling_line = steps[len(r["ceiling"]["overheads"])]
        assert ceiling_line["step"] == "ceiling"
        assert ceiling_line["GB/s"] == pytest.approx(product) == r["ceiling_GB/s"]
        if r["GB/s"] is not None:
            assert r["ceiling_ratio"] == pytest.approx(r["GB/s"] / r["ceiling_GB/s"])
    cells = {r["level"]: r for r in report.card_table(rows)}
    for r in with_ceiling:
        assert cells[r["level"]]["ceiling"] == f"{r['ceiling_GB/s']:,.0f} GB/s"
        if r["GB/s"] is not None:
            assert cells[r["level"]]["x ceiling"] == f"{r['ceiling_ratio']:.2f}"


def test_shared_memory_has_its_banks_ceiling_on_every_gpu(monkeypatch):
    """The shared row's bandwidth: 32 banks of 4 bytes a clock per SM (the CUDA programming
    guide, any compute capability from 5.0), at the clock its read ran at, like L1's."""
    from gpumem.runtime.published import published

    for name in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
        FakeGPU(monkeypatch, name=name)
        dev = gm.runtime.device()
        row = next(r for r in report.card(measure=True) if r["level"] == "shared")
        assert row["published_GB/s"] == pytest.approx(128 * dev.multiprocessors
                                                      * dev.clock_khz / 1e6)
        assert "128 B/clk/SM" in row["published"] and "CUDA C++ Programming Guide" in \
            row["source"]
        (clock,) = row["ceiling"]["overheads"]
        assert clock["what"].startswith("SMs at") and 0 < clock["factor"] <= 1
        assert row["ceiling_GB/s"] == pytest.approx(row["published_GB/s"] * clock["factor"])
        assert row["ceiling_ratio"] == pytest.approx(row["GB/s"] / row["ceiling_GB/s"])
        assert row["why"].startswith("SM clock")
    assert all(published(g).get("shared_bytes_per_clk_sm") == 128
               for g in ("H100 SXM", "H200", "A100 SXM 80GB", "L4", "RTX 4090"))


def test_a_measured_row_without_a_published_figure_says_none_known(monkeypatch):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    rows = report.card(measure=True)
    cells = report.card_table(rows).rows
    for r, c in zip(rows, cells):
        measured = any(r[k] is not None for k in ("cycles", "ns", "GB/s"))
        if r["published"]:
            assert c["published"] == r["published"]
        else:
            assert c["published"] == ("none known" if measured else ""), r["level"]
    assert any(c["published"] == "none known" for c in cells)


def test_the_card_figure_has_an_error_bar_for_every_spread(monkeypatch):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    card = report.card(measure=True)
    fig = report.card_figure(card, None, "NVIDIA H100 80GB HBM3")
    spread = {r["level"]: (r["GB/s_min"], r["GB/s_max"]) for r in card if r["GB/s_min"]}
    assert spread and fig["spreads"] == spread
    for lo, hi in fig["spreads"].values():
        assert lo <= hi


def test_the_card_figure_marks_each_latency_as_the_papers_measure_it(monkeypatch, tmp_path):
    FakeGPU(monkeypatch, name="NVIDIA H100 80GB HBM3")
    card = report.card(measure=True)
    fig = report.card_figure(card, None, "NVIDIA H100 80GB HBM3")
    want = {(r["level"], float(r["working_set"]), k, float(v)) for r in card
            if r.get("methods") for k, v in r["methods"].items()}
    assert len(want) >= 8 and {m[:4] for m in fig["methods"]} == want
    # each beside its row's own point (same working set, same path's colour)
    own = {p[1]: (p[2], p[4]) for p in fig["points"] if p[0] == "latency"}
    for level, x, _, _, path in fig["methods"]:
        assert own[level] == (x, path), level
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert report._plot_card(fig, str(tmp_path), plt) == "memory_card.png"
    assert (tmp_path / "memory_card.png").stat().st_size > 10_000


def test_conditions_in_the_card_title():
    cond = {"nvml": True, "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980,
            "memory_clock_mhz": 2619, "power_limit_w": 700.0, "ecc": True,
            "persistence_mode": False, "driver": "580.159.04",
            "clock_event_reasons": ["idle", "software power cap"]}
    text = report.conditions_text(cond)
    assert text == ("SM clock 1980 MHz now, max 1980; memory clock 2619 MHz; power limit 700 W; "
                    "ECC on; persistence off; driver 580.159.04; clocks held back by: idle, "
                    "software power cap")
    assert "SM clock unknown MHz" in report.conditions_text({"nvml": True})
    assert report.conditions_text({"nvml": False}) == "conditions unknown (NVML not available)"
    assert report.conditions_text(None) == ""
    assert report.conditions(False) is None


def test_the_report_opens_with_the_card(model_mode, capsys):
    assert main(["report", "--quick", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.index("memory card") < out.index("\nlesson ")
    assert "gpumem report took" in out.splitlines()[-1]
    assert main(["report", "--quick", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["level"] for r in doc["card"]] == LEVELS and doc["elapsed_s"] >= 0
    assert "no GPU" in doc["card_title"] and doc["conditions"] is None
    assert "where each gap goes" in out


@pytest.mark.gpu
def test_the_card_on_a_gpu_climbs_the_hierarchy():
    t0 = time.perf_counter()
    rows = report.card(quick=True)
    seconds = time.perf_counter() - t0
    assert [r["level"] for r in rows] == LEVELS and seconds < 15, \
        f"the quick card took {seconds:.1f} s"
    # each level against its neighbours: the lessons that measure them (on a GPU)


@pytest.mark.gpu
def test_the_card_figure_measures_the_ladder_on_a_gpu(tmp_path):
    t0 = time.perf_counter()
    curves = report.card_curves(quick=True)
    seconds = time.perf_counter() - t0
    fig = report.card_figure(report.card(measure=False), curves, gm.device().name)
    lat = {label: (xs, ys) for label, xs, ys, _ in fig["latency"]}
    xs, ys = lat["global, ld.ca: L1, L2, device memory"]
    assert (xs[0], xs[-1]) == (4 * 2**10, 256 * 2**20)
    assert ys[0] < 100 and ys[-1] > 3 * ys[0], ys            # L1, then device memory
    assert max(lat["shared memory"][1]) < 100
    bw = {label: (xs, ys) for label, xs, ys, _ in fig["bandwidth"]}
    per_sm = bw["read, each SM its own copy (scope=block)"][1]
    grid = bw["read once by the whole grid (scope=grid)"][1]
    assert per_sm[0] > 2 * grid[-1], (per_sm, grid)         # L1 against device memory
    assert seconds < 5, f"the quick figure's sweeps took {seconds:.1f} s"


def test_levels_with_no_published_figure_say_what_was_searched(monkeypatch):
    """On a fake H200: every measured card row without a published figure is named under
    the card, with the sources gpumem holds for the GPU and its chip (a source citing
    others by key, such as the H100's latency ranges, stands for them)."""
    FakeGPU(monkeypatch, name="NVIDIA H200")
    rows = report.card(measure=True)
    entry = report.card_reference(True)[0]
    t = report.unpublished_table(rows, entry)
    assert t.title == "no published figure known" and len(t) == 1
    none_known = [r["level"] for r in rows if not r["published"] and
                  any(r[k] is not None for k in ("cycles", "ns", "GB/s"))]
    assert none_known and t.rows[0]["levels"] == "; ".join(none_known)
    searched = t.rows[0]["searched"].split("; ")
    assert "H200 Tensor Core GPU datasheet" in searched
    assert {"Luo et al.", "Chips and Cheese"} <= set(searched)    # behind the H100's ranges
    cells = {r["level"]: r["published"] for r in report.card_table(rows)}
    assert all(cells[level] == "none known" for level in none_known)
    # nothing measured: nothing to say
    assert len(report.unpublished_table(report.card(measure=False), entry)) == 0
