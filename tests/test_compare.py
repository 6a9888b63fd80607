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
