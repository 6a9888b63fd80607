"""gpumem compare: two report --json runs side by side (synthetic runs, no GPU)."""
from __future__ import annotations

import json

import pytest

from gpumem import compare, report
from gpumem.__main__ import main


def run(device, cycles, gbps, copy_gbps, *, extra_level=False):
    """A report --json document: a card of three levels and two headline rows."""
    card = [{"level": "L1", "size_text": "256 KiB/SM", "cycles": cycles, "ns": cycles / 2,
             "GB/s": gbps},
            {"level": "device memory", "size_text": "80 GiB", "cycles": 10 * cycles,
             "ns": 5 * cycles, "GB/s": gbps / 10},
            {"level": "host -> device", "size_text": "PCIe 5.0 x16", "cycles": None,
             "ns": 2000.0, "GB/s": 50.0}]
    if extra_level:
        card.append({"level": "distributed shared", "size_text": "", "cycles": 200.0,
                     "ns": 100.0, "GB/s": None})
    rows = [{"lesson": "device", "experiment": "copy", "measured": {
                "copy_GB/s": copy_gbps, "SMs": 132, "copy_dram_read_bytes": 2.68e8},
             "model": {}},
            {"lesson": "transfer", "experiment": "h2d", "measured": {"pinned_GB/s": 50.0,
                                                                     "note": "text"},
             "model": {}}]
    return {"gpumem": "0.1.0", "gpu": True, "device": device, "quick": False, "card": card,
            "rows": rows}


@pytest.fixture
def two_runs(tmp_path):
    a, b = tmp_path / "h100.json", tmp_path / "h200.json"
    a.write_text(json.dumps(run("NVIDIA H100 80GB HBM3", 40.0, 30000.0, 3000.0)))
    b.write_text(json.dumps(run("NVIDIA H200", 36.0, 33000.0, 4200.0, extra_level=True)))
    return str(a), str(b)


def test_card_side_by_side_with_ratios(two_runs):
    a, b = (compare.load(p) for p in two_runs)
    t = compare.card_table(a, b)
    by = {r["level"]: r for r in t}
    assert list(by) == ["L1", "device memory", "host -> device", "distributed shared"]
    assert by["L1"]["B/A cycles"] == pytest.approx(0.9)
    assert by["L1"]["B/A GB/s"] == pytest.approx(1.1)
    assert by["device memory"]["A cycles"] == 400.0 and by["device memory"]["B GB/s"] == 3300.0
    assert by["host -> device"]["B/A cycles"] is None and by["host -> device"]["B/A GB/s"] == 1.0
    # each run's ceiling and measured over it, where its card has one (not here)
    assert t.columns[-2:] == ["A x ceiling", "B x ceiling"]
    assert by["L1"]["A x ceiling"] is None and by["L1"]["B ceiling GB/s"] is None
    # a level only B measures: A's side empty, no ratio
    assert by["distributed shared"]["A cycles"] is None
    assert by["distributed shared"]["B cycles"] == 200.0
    assert by["distributed shared"]["B/A cycles"] is None


def test_headlines_side_by_side(two_runs):
    a, b = (compare.load(p) for p in two_runs)
    rows = {(r["lesson"], r["measured"]): r for r in compare.headline_table(a, b)}
    assert rows["device", "copy_GB/s"]["B/A"] == pytest.approx(1.4)
    assert (rows["device", "copy_GB/s"]["A"], rows["device", "copy_GB/s"]["B"]) == \
        ("3,000", "4,200")
    assert rows["device", "SMs"]["B/A"] == 1.0
    assert rows["device", "copy_dram_read_bytes"]["A"] == "2.68e+08"
    assert ("transfer", "note") not in rows            # text is not compared


def test_cli_prints_both(two_runs, capsys):
    assert main(["compare", *two_runs]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A: NVIDIA H100 80GB HBM3 (h100.json)\nB: NVIDIA H200 (h200.json)")
    assert "memory card, A against B" in out and "headlines, A against B" in out
    assert "1.400" in out and "distributed shared" in out


def test_a_real_model_report_compares_with_itself(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    import gpumem as gm
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)
    assert main(["report", "--quick", "--json", "--no-progress"]) == 0
    path = tmp_path / "model.json"
    path.write_text(capsys.readouterr().out)
    assert main(["compare", str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert "no GPU: model only" in out and "neither run measured anything" in out
    assert "L2 far" in out


@pytest.mark.parametrize("content,why", [(None, "cannot read"), ("{", "is not JSON"),
                                         ("[1, 2]", "is not the JSON of 'gpumem report"),
                                         ('{"card": []}', "no 'rows' list")])
def test_bad_files_are_argument_errors(tmp_path, capsys, content, why, two_runs):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    with pytest.raises(SystemExit) as e:
        main(["compare", two_runs[0], str(bad)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
    with pytest.raises(TypeError, match="path"):
        compare.load(3)


# ---- gpumem report --compare A.json: this run beside a saved one -------------------------------
@pytest.fixture
def model_mode(monkeypatch):
    import gpumem as gm
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)


def test_report_compare_sets_this_run_beside_the_saved_one(two_runs, model_mode, monkeypatch,
                                                           capsys):
    # this run's card and headlines: the H200-like synthetic run's
    b = run("NVIDIA H200", 36.0, 33000.0, 4200.0)
    b["card"] = [dict(r, lesson="ladder") for r in b["card"]]      # as a card row has it
    monkeypatch.setattr(report, "card", lambda **kw: b["card"])
    monkeypatch.setattr(report, "headlines", lambda **kw: b["rows"])
    assert main(["report", "--quick", "--no-progress", "--compare", two_runs[0]]) == 0
    out = capsys.readouterr().out
    cmp_text = out[out.index("A: NVIDIA H100"):out.index("gpumem report took")]
    assert cmp_text.startswith("A: NVIDIA H100 80GB HBM3 (h100.json)\n"
                               "B: no GPU: model only (this run, --quick)")
    a_doc = compare.load(two_runs[0])
    this = json.loads(report.to_json(rows=b["rows"], card=b["card"], quick=True))
    assert cmp_text.rstrip() == compare.as_text(a_doc, dict(this, _path="this run")).rstrip()
    card = {r["level"]: r for r in compare.card_table(a_doc, dict(this, _path="this run"))}
    assert card["L1"]["B/A ns"] == pytest.approx(0.9) and card["L1"]["B/A GB/s"] == \
        pytest.approx(1.1)
    assert "1.400" in cmp_text                       # the copy's GB/s, B over A
    # with --json, stdout stays the JSON alone; the comparison goes to stderr
    assert main(["report", "--quick", "--no-progress", "--json", "--compare",
                 two_runs[0]]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["card"] == b["card"]
    assert "memory card, A against B" in cap.err and "headlines, A against B" in cap.err


def test_report_compare_refuses_a_bad_file_and_lesson(two_runs, tmp_path, capsys):
    for argv, why in ((["report", "--compare", str(tmp_path / "none.json")], "cannot read"),
                      (["report", "--lesson", "access", "--compare", two_runs[0]],
                       "not allowed with argument")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err


def test_the_saved_h100_run_compares_with_a_second_gpu(tmp_path):
    """docs/reports/' H100 run against a synthetic second GPU 1.25x as fast everywhere:
    every measured level and headline number gets its ratio."""
    import pathlib
    saved = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reports" / \
        "h100-2026-11-27g.json"
    if not saved.exists():
        pytest.skip("docs/reports/ beside the tests: a source checkout")
    a = compare.load(saved)
    doc = json.loads(saved.read_text())
    for r in doc["card"]:
        for k in ("ns", "cycles"):
            r[k] = None if r.get(k) is None else r[k] / 1.25
        r["GB/s"] = None if r.get("GB/s") is None else r["GB/s"] * 1.25
    for r in doc["rows"]:
        r["measured"] = {k: v * 1.25 if isinstance(v, (int, float)) and not isinstance(v, bool)
                         else v for k, v in (r.get("measured") or {}).items()}
    doc["device"] = "NVIDIA H200"
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(doc))
    b = compare.load(path)
    card = list(compare.card_table(a, b))
    assert [r["level"] for r in card] == [r["level"] for r in a["card"]]
    measured = [r for r in card if r["A ns"] is not None]
    timed = [r for r in a["card"] if r.get("ns") is not None]   # registers: a size, no time
    assert len(timed) >= 10 and len(measured) == len(timed) and all(
        r["B/A ns"] == pytest.approx(0.8) for r in measured)
    assert all(r["B/A GB/s"] == pytest.approx(1.25) for r in card if r["A GB/s"])
    heads = list(compare.headline_table(a, b))
    assert len(heads) > 30 and all(r["B/A"] == pytest.approx(1.25) for r in heads
                                   if r["A"] not in ("", "0"))
    assert {r["lesson"] for r in heads} >= {"device", "ladder", "transfer", "allocation"}


def test_the_saved_runs_show_each_ceiling_and_measured_over_it(monkeypatch):
    """docs/reports/' H100 run (from before the ceilings) against the H200's: the H200's
    side has its ceilings, measured over each, the H100's side is empty."""
    import pathlib
    monkeypatch.setenv("COLUMNS", "400")   # every column in the text, whatever the terminal
    reports = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reports"
    if not (reports / "h200-2026-11-29.json").exists():
        pytest.skip("docs/reports/ beside the tests: a source checkout")
    a = compare.load(reports / "h100-2026-11-27g.json")
    b = compare.load(reports / "h200-2026-11-29.json")
    by = {r["level"]: r for r in compare.card_table(a, b)}
    with_ceiling = [r for r in b["card"] if r.get("ceiling_ratio") is not None]
    assert {r["level"] for r in with_ceiling} >= {"L1", "device memory", "host -> device"}
    for r in with_ceiling:
        assert by[r["level"]]["B x ceiling"] == pytest.approx(r["ceiling_ratio"])
        assert by[r["level"]]["B ceiling GB/s"] == pytest.approx(r["ceiling_GB/s"])
        assert 0.5 < r["ceiling_ratio"] <= 1.02            # a ceiling beaten would be wrong
    assert "B x ceiling" in compare.as_text(a, b)


# ---- hostile inputs (issue 49): every entry point checks the shape of what it is given ----------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                     lambda kids: st.lists(kids, max_size=3) |
                     st.dictionaries(st.text(max_size=4), kids, max_size=3), max_leaves=12)
_ROW = st.fixed_dictionaries({}, optional={"lesson": _JSON, "experiment": _JSON,
                                           "measured": _JSON | st.dictionaries(
                                               st.text(max_size=3), _JSON, max_size=3)})
_CARD = st.fixed_dictionaries({}, optional={"level": _JSON, "size_text": _JSON, "ns": _JSON,
                                            "cycles": _JSON, "GB/s": _JSON})
#: documents shaped like a report, wrong in places: what a hand-edited or foreign file holds
_DOCS = _JSON | st.fixed_dictionaries({}, optional={
    "rows": _JSON | st.lists(_ROW | _JSON, max_size=3),
    "card": _JSON | st.lists(_CARD | _JSON, max_size=3),
    "device": _JSON, "quick": _JSON})
_ENTRY = [compare.as_text, compare.card_table, compare.headline_table]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_DOCS, which=st.integers(0, 1))
def test_every_entry_point_refuses_what_is_not_a_report_by_name(doc, which):
    good = run("x", 40.0, 3e4, 3e3)
    args = (doc, good) if which == 0 else (good, doc)
    for fn in _ENTRY:
        try:
            fn(*args)
        except (TypeError, ValueError) as e:
            assert str(e).startswith(f"compare.{fn.__name__}: {'ab'[which]} is not a report"), e
    try:
        compare.label(doc)
    except (TypeError, ValueError) as e:
        assert str(e).startswith("compare.label: doc is not a report"), e


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(doc=_DOCS)
def test_load_takes_a_report_or_refuses_the_file(tmp_path, doc):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    try:
        loaded = compare.load(path)
    except compare.ReportFileError as e:
        assert str(path) in str(e)
        return
    compare.as_text(loaded, loaded)            # what load takes, every entry point takes


@pytest.mark.parametrize("a,exc,why", [
    ({}, ValueError, "no 'rows' list"),
    (None, TypeError, "it is a NoneType, not an object"),
    ({"card": "x", "rows": []}, ValueError, "its 'card' is a str, not a list"),
    ({"rows": ["a", 5, None]}, ValueError, "rows\\[0\\] is \"a\", not an object"),
    ({"rows": [], "card": [1, 2]}, ValueError, "card\\[0\\] is 1, not an object"),
    ({"rows": [{"lesson": ["x"]}]}, ValueError, "rows\\[0\\]\\['lesson'\\] is a list"),
    ({"rows": [{"measured": 5}]}, ValueError, "rows\\[0\\]\\[.measured.\\] is an int"),
])
def test_the_issue_49_examples(a, exc, why):
    for fn in _ENTRY:
        with pytest.raises(exc, match=f"compare.{fn.__name__}: a is not a report .*{why}"):
            fn(a, run("x", 40.0, 3e4, 3e3))


def test_numbers_too_large_for_a_float_show_empty():
    a, b = run("x", 40.0, 3e4, 3e3), run("y", 40.0, 3e4, 3e3)
    a["rows"][0]["measured"]["copy_GB/s"] = 10 ** 400
    rows = {r["measured"]: r for r in compare.headline_table(a, b)}
    assert rows["copy_GB/s"]["A"] == "" and rows["copy_GB/s"]["B/A"] is None


def test_load_refuses_an_integer_too_long_for_python(tmp_path):
    path = tmp_path / "long.json"
    path.write_text('{"rows": [], "n": ' + "1" * 5000 + "}")
    with pytest.raises(compare.ReportFileError, match="is not JSON"):
        compare.load(path)
