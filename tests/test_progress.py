"""Progress on stderr (gpumem.tools.headline._steps): a bar only on a terminal, and only for
work that runs; every item yielded, in order, whatever is shown."""
import io
import os
import subprocess
import sys

import pytest

import gpumem as gm
from gpumem import report
from gpumem.__main__ import main
from gpumem.tools import headline as hl

ITEMS = [("a", 1), ("b", 2), ("c", 3)]


class FakeTTY(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self):
        return True


def on_tty(monkeypatch) -> FakeTTY:
    """A fake terminal as sys.stderr until the test ends.  (Set in the test's body: pytest's
    own capture puts its stream back in sys.stderr when the test's call begins.)"""
    err = FakeTTY()
    monkeypatch.setattr(sys, "stderr", err)
    return err


@pytest.fixture(params=["tqdm", "no tqdm"])
def tqdm_or_not(request, monkeypatch):
    if request.param == "tqdm":
        pytest.importorskip("tqdm")
    else:
        monkeypatch.setitem(sys.modules, "tqdm", None)      # import tqdm raises ImportError
    return request.param


@pytest.fixture
def no_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)


@pytest.fixture
def model_mode(monkeypatch):
    """As on a machine without a GPU (the report and the lessons' sweeps both ask)."""
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)


# ---- not a terminal: nothing -----------------------------------------------------------
def test_not_a_terminal_gets_no_progress(tqdm_or_not, capsys):
    assert not sys.stderr.isatty()
    assert list(hl._steps(ITEMS, "demo", True, runs=True)) == ITEMS
    err = capsys.readouterr().err
    assert err == ""


def test_a_plain_stream_as_stderr_gets_nothing(tqdm_or_not, monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert list(hl._steps(ITEMS, "demo", True, runs=True)) == ITEMS
    assert err.getvalue() == ""


@pytest.mark.parametrize("stderr", [None, "closed"])
def test_no_stderr_or_a_closed_one_is_not_a_terminal(monkeypatch, stderr):
    if stderr == "closed":
        stderr = FakeTTY()
        stderr.close()                                      # isatty() raises ValueError
    monkeypatch.setattr(sys, "stderr", stderr)
    assert list(hl._steps(ITEMS, "demo", True, runs=True)) == ITEMS


# ---- a terminal: a bar, or one line per step -------------------------------------------------
def test_a_terminal_gets_a_tqdm_bar(monkeypatch):
    tty = on_tty(monkeypatch)
    pytest.importorskip("tqdm")
    got = []
    for item in hl._steps(ITEMS, "demo", True, runs=True):
        got.append(item)
    assert got == ITEMS
    out = tty.getvalue()
    assert "demo:" in out and "/3" in out and "\r" in out
    for label, _ in ITEMS:                                  # the step being run, as a postfix
        assert label in out
    assert out.endswith("\r")                               # leave=False: cleared at the end


def test_a_terminal_without_tqdm_gets_one_line_per_step(no_tqdm, monkeypatch):
    tty = on_tty(monkeypatch)
    got = []
    for i, item in enumerate(hl._steps(ITEMS, "demo", True, runs=True)):
        got.append(item)
        # each line is written before its step runs
        assert tty.getvalue().splitlines()[-1] == f"[{i + 1}/3] demo: {item[0]} ..."
    assert got == ITEMS
    assert tty.getvalue().splitlines() == [f"[{i}/3] demo: {x} ..." for i, (x, _) in
                                           enumerate(ITEMS, 1)]
    assert "\r" not in tty.getvalue()


def test_plain_items_and_items_without_a_length(no_tqdm, monkeypatch):
    tty = on_tty(monkeypatch)
    assert list(hl._steps([10, 20], "sizes", True, runs=True)) == [10, 20]
    assert list(hl._steps(iter("xy"), "letters", True, runs=True)) == ["x", "y"]
    assert tty.getvalue().splitlines() == ["[1/2] sizes: 10 ...", "[2/2] sizes: 20 ...",
                                           "[1] letters: x ...", "[2] letters: y ..."]


def test_a_loop_that_stops_early_clears_its_bar(monkeypatch):
    tty = on_tty(monkeypatch)
    tqdm = pytest.importorskip("tqdm")
    steps = hl._steps(ITEMS, "demo", True, runs=True)
    assert next(steps) == ITEMS[0]
    assert len(tqdm.tqdm._instances) >= 1
    steps.close()
    assert not any(getattr(b, "desc", "") == "demo" for b in tqdm.tqdm._instances)
    assert tty.getvalue().endswith("\r")


# ---- nothing when disabled, or when the work does not run -------------------------------
def test_disabled_yields_the_items_and_writes_nothing(tqdm_or_not, monkeypatch):
    tty = on_tty(monkeypatch)
    assert list(hl._steps(ITEMS, "demo", False)) == ITEMS
    assert list(hl._steps(ITEMS, "demo", False, runs=True)) == ITEMS
    assert tty.getvalue() == ""


def test_work_that_does_not_run_gets_no_bar(tqdm_or_not, monkeypatch):
    tty = on_tty(monkeypatch)
    assert list(hl._steps(ITEMS, "demo", True, runs=False)) == ITEMS
    assert tty.getvalue() == ""


@pytest.mark.parametrize("gpu", [False, True])
def test_by_default_the_work_runs_where_a_gpu_is(no_tqdm, monkeypatch, gpu):
    tty = on_tty(monkeypatch)
    monkeypatch.setattr(gm.runtime, "is_available", lambda: gpu)
    assert list(hl._steps(ITEMS, "demo", True)) == ITEMS
    assert (tty.getvalue() != "") is gpu


def test_the_signature_stays_positional():
    # (items, desc, enabled) as the lessons call it
    assert list(hl._steps([1, 2], "x", False)) == [1, 2]
    assert list(hl._steps(items=[1], desc="x", enabled=False)) == [1]


# ---- the report: the commands ------------------------------------------------------
def test_the_model_only_report_on_a_terminal_shows_no_bar(model_mode, tqdm_or_not, capsys,
                                                          monkeypatch):
    tty = on_tty(monkeypatch)
    # without a GPU nothing is measured: no bar at 0/N for the card, headlines or sweeps
    assert main(["report", "--quick"]) == 0
    assert main(["report", "--lesson", "dram", "--quick"]) == 0
    assert tty.getvalue() == ""
    assert capsys.readouterr().out                          # the tables still print


def test_a_piped_report_writes_no_frames_into_the_log():
    # `python -m gpumem report --quick 2>err.log` (no GPU visible: nothing measured)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    for args in (["report", "--quick"], ["report", "--lesson", "dram", "--quick"]):
        p = subprocess.run([sys.executable, "-m", "gpumem", *args], capture_output=True,
                           text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stderr
        assert "\r" not in p.stderr and "it/s" not in p.stderr and "%|" not in p.stderr
        assert not [ln for ln in p.stderr.splitlines() if ln.startswith("[")], p.stderr
        assert "\r" not in p.stdout
