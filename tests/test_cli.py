"""python -m gpumem: the report by default (tests/test_report.py tests it in depth), the
tour with --size (or ``gpumem tour``): measured with a GPU, the model's without."""
import json
import subprocess
import sys

import pytest

import gpumem as gm

#: A test whose child process measures on the GPU (it reads counters and times whole
#: commands) runs in pytest-xdist's one-process phase (conftest.py); the refusals, help
#: and compare run nothing on the GPU and stay in the shared phase.
alone = pytest.mark.alone


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpumem", *args], capture_output=True, text=True,
                          timeout=300)


@alone
def test_cli_runs_and_says_what_it_can():
    # '--size' with no command is still the tour, as it was before 'report' became the default
    p = run_cli("--size", "512")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "gpumem 0.1.0, built with CUDA runtime" in out
    assert "matmul 512x512x512" in out
    if gm.is_available():
        assert gm.device().name in out and "vec_add, n = 2^24 floats" in out
        assert "GFLOP/s [measured]" in out
    else:
        assert "No GPU here" in out and "matmul/tiled" in out
        assert "[model]" in out


def test_cli_rejects_bad_arguments():
    p = run_cli("--size", "x")
    assert p.returncode == 2 and "invalid int value" in p.stderr


@alone
def test_cli_tour_command_is_the_same_tour():
    p = run_cli("tour", "--size", "64")
    assert p.returncode == 0, p.stderr
    assert "matmul 64x64x64" in p.stdout


@alone
def test_cli_without_arguments_runs_the_report(tmp_path):
    # CI greps "No GPU here" and "model" in the output of a bare `gpumem`; on a GPU the
    # quick report, whose report.json (what --json prints) says what each row measured
    p = run_cli() if not gm.is_available() else run_cli("--quick", "--no-progress",
                                                        "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    header = next(ln for ln in out.splitlines() if ln.startswith("lesson "))
    assert header.split() == ["lesson", "experiment", "measured", "model", "takeaway"]
    if not gm.is_available():
        assert out.startswith("No GPU here (") and "model" in out
        assert "would measure: " in out
        return
    assert gm.device().name in out.splitlines()[1] and "would measure" not in out
    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["gpu"] is True and doc["device"] == gm.device().name
    # every row measured, or saying why not (matmul's cuBLAS row without CuPy, a lesson of
    # two GPUs on one)
    unmeasured = [r for r in doc["rows"] if not r["measured"]]
    assert all(r["measured_text"] for r in unmeasured) and len(unmeasured) <= 2, unmeasured
    from gpumem.tools.card import DEPTH
    assert [r["level"] for r in doc["card"]] == sorted(DEPTH, key=DEPTH.get)
    # every level measured but those whose row says it is not (a register: no load to time)
    assert all(r["ns"] is not None and r["ns"] > 0 for r in doc["card"]
               if "not measured" not in r["how"])
    assert doc["elapsed_s"] < 15, f"report --quick took {doc['elapsed_s']} s"
    assert (tmp_path / "report.html").exists()


def test_cli_bad_values_are_argparse_errors_not_tracebacks():
    for args in (["--size", "-1"], ["tour", "--size", "0"], ["report", "--lesson", "x"]):
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert "Traceback" not in p.stderr
        assert p.stderr.rstrip().splitlines()[-1].startswith("gpumem")
        assert "error: argument" in p.stderr


def test_cli_help_and_version():
    p = run_cli("--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: gpumem ") and "`" not in p.stdout
    p = run_cli("--version")
    assert p.returncode == 0 and p.stdout.startswith(f"gpumem {gm.__version__}, built with")



# ---- hostile inputs (issue 49): one-line errors and exit code 2, a closed pipe a quiet end ------
import os  # noqa: E402



def _one_line_error(p, *words):
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and "Error:" not in p.stderr, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("gpumem") and "error:" in last, p.stderr
    for w in words:
        assert w in last, p.stderr


@pytest.mark.parametrize("name", ["report.md", "report.html", "memory_card.png", "matmul.png"])
def test_out_refuses_a_folder_where_a_file_goes_before_it_measures(tmp_path, name):
    (tmp_path / name).mkdir()
    p = run_cli("--quick", "--no-progress", "--out", str(tmp_path))
    _one_line_error(p, str(tmp_path / name), "not a file")
    assert "took" not in p.stdout + p.stderr                # refused before the report ran


def test_out_that_fails_while_writing_is_one_line(tmp_path, monkeypatch, capsys):
    # the folder changed while the report ran: the OSError of the write, one line, exit 2
    from gpumem import report
    from gpumem.__main__ import main
    bad = str(tmp_path / "report.md")

    def write(*a, **kw):
        raise IsADirectoryError(21, "Is a directory", bad)
    monkeypatch.setattr(report, "write", write)
    monkeypatch.setattr(report, "headlines", lambda **kw: [])
    monkeypatch.setattr(report, "card", lambda **kw: [])
    assert main(["--quick", "--no-progress", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"gpumem: error: cannot write {bad!r}: Is a directory\n"


@pytest.mark.parametrize("doc,why", [
    ({"rows": ["a", 5, None]}, "rows[0] is \"a\", not an object"),
    ({"rows": [], "card": "L1"}, "its 'card' is a str, not a list"),
    ({"rows": [], "card": [1, "x", None]}, "card[0] is 1, not an object"),
    ({"rows": [{"lesson": "x", "measured": [1]}]}, "rows[0]['measured'] is a list"),
    ({"rows": {}}, "its 'rows' is a dict, not a list"),
])
def test_compare_refuses_a_badly_shaped_file_in_one_line(tmp_path, doc, why):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"rows": [], "card": []}))
    bad.write_text(json.dumps(doc))
    for args in ((good, bad), (bad, good)):
        p = run_cli("compare", *map(str, args))
        _one_line_error(p, str(bad), why)


def test_compare_refuses_a_file_nested_too_deep(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "deep.json"
    good.write_text(json.dumps({"rows": []}))
    bad.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_error(run_cli("compare", str(good), str(bad)), str(bad), "too deep")
    bad.write_text('{"rows": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    _one_line_error(run_cli("compare", str(good), str(bad)), str(bad), "too deep")


def _into_a_closed_pipe(*args):
    """Run the CLI with its stdout a pipe whose reader has gone (as 'gpumem | head -1'
    once head has its line): the first write meets EPIPE."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "gpumem", *args], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(w)


@alone
def test_a_closed_pipe_is_a_quiet_end(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"rows": [], "card": []}))
    # the report's text and JSON each meet EPIPE at their first write; one lesson's sweep
    # (the device's) is enough to get there, and a fraction of the whole report's time
    for args in (("--lesson", "device", "--quick", "--no-progress"),
                 ("--lesson", "device", "--quick", "--no-progress", "--json"),
                 ("compare", str(good), str(good))):
        p = _into_a_closed_pipe(*args)
        assert p.returncode == 0, (args, p.stderr)
        assert "BrokenPipe" not in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
