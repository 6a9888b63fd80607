"""python -m gpumem: a measured tour with a GPU, the model's tour without."""
import subprocess
import sys

import gpumem as gm


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpumem", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_runs_and_says_what_it_can():
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
