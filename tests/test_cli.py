"""python -m gpumem: the report by default (tests/test_report.py tests it in depth), the
tour with --size (or ``gpumem tour``): measured with a GPU, the model's without."""
import subprocess
import sys

import gpumem as gm

#: Its child processes read counters: under pytest-xdist it runs in the one-process
#: phase (conftest.py).
ONE_PROCESS = True


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpumem", *args], capture_output=True, text=True,
                          timeout=300)


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


def test_cli_tour_command_is_the_same_tour():
    p = run_cli("tour", "--size", "64")
    assert p.returncode == 0, p.stderr
    assert "matmul 64x64x64" in p.stdout


def test_cli_without_arguments_runs_the_report():
    # CI greps "No GPU here" and "model" in the output of a bare `gpumem`
    p = run_cli() if not gm.is_available() else run_cli("--quick", "--no-progress")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    header = next(ln for ln in out.splitlines() if ln.startswith("lesson "))
    assert header.split() == ["lesson", "experiment", "measured", "model", "takeaway"]
    if gm.is_available():
        assert gm.device().name in out.splitlines()[1] and "would measure" not in out
    else:
        assert out.startswith("No GPU here (") and "model" in out
        assert "would measure: " in out


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

