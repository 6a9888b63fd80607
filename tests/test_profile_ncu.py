"""gpumem.profile() against Nsight Compute: every alias, read in-process through CUPTI,
equals ``ncu --csv`` on the same launches within 0.5%; the cache- and
timing-dependent ones, on which ncu does not reproduce itself, within the
documented tolerances of STATE_DEPENDENT.  GPU only (marked ``gpu``).
"""
import csv
import math
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpumem
from gpumem.runtime.counters import ALIASES, raw_metrics
from test_profile import REQUIRED

#: It reads counters, runs child processes that do, or times whole commands: under
#: pytest-xdist it runs in gpu-check's one-process-per-GPU phase (conftest.py).
pytestmark = pytest.mark.alone

REQUIRE_GPU = os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0")


# ---- GPU: the same launches under ncu ----------------------------------------
WORKLOAD = textwrap.dedent("""
    def workload(gm, np):
        rng = np.random.default_rng(7)
        a = gm.to_device(rng.standard_normal(4_000_037).astype(np.float32))
        b = gm.to_device(rng.standard_normal(4_000_037).astype(np.float32))
        A = gm.to_device(rng.standard_normal((300, 257)).astype(np.float32))
        B = gm.to_device(rng.standard_normal((257, 190)).astype(np.float32))
        gm.vec_add(a, b, block=256)
        gm.matmul(A, B, tile=16, variant="tiled")
        gm.matmul(A, B, tile=8, variant="naive")
        # cp.async: the gldgsts_* aliases.  Rows on the 16-byte grid: elsewhere warptiled
        # pads them first, by a kernel of its own, which ncu would profile apart
        A2 = gm.to_device(rng.standard_normal((300, 256)).astype(np.float32))
        B2 = gm.to_device(rng.standard_normal((256, 256)).astype(np.float32))
        gm.matmul(A2, B2, variant="warptiled")
        if "read_offset" in {v.family for v in gm.variants()}:
            gm.read_offset(a, b, offset=11, block=512)
""")

# A duration, not a counter: two ncu runs of the same kernel differ by more than 0.5%.
NOT_COUNTERS = {"gpu_time_ns"}

# Counters that depend on cache contents and timing: ncu does not reproduce
# ITSELF within 0.5% on them (measured on an H100, the WORKLOAD below, two
# ncu runs: dram_write_bytes 6.03 vs 5.81 MB, l2_hit_rate 90.33 vs 91.13 and
# 100.22 vs 102.64, achieved_occupancy 74.06 vs 74.47), so 0.5% is not a
# meaningful bound for them.  (The bank-conflict aliases are differences of
# two exact counters, compared within 0.5%: Hopper's own bank-conflict
# counter read 167 vs 131 in two ncu runs.)  gpumem must agree
# with ncu within this documented tolerance instead (value -> allowed |diff|);
# every other alias within 0.5%.  The test prints every pair.
STATE_DEPENDENT = {
    # DRAM writes during a kernel are the dirty lines its stores push out of
    # L2 before it ends; what is still dirty at the end is not counted.  Which
    # lines go depends on the L2's replacement state at launch, which ncu's
    # cache control (a driver-level flush) and gpumem's (reading a clean buffer
    # of 4x the L2) leave differently.  Measured on an H100 (2026-11-23):
    # read_offset over 4M floats (48 MB touched, 16 MB stored, L2 50 MB):
    # ncu 6.55 and 6.49 MB, gpumem 4.21 MB.  On a small kernel the whole
    # store may or may not leave L2 before the end: the tiled 300x190 matmul
    # (228 KB stored) read 172,032 bytes in gpumem and 0 in two ncu runs (H100,
    # 2026-11-23).  Bound: the bytes the kernel stores (gpumem's own gst
    # sectors), plus 64 KiB -- a write-back can be all of them or none.
    "dram_write_bytes": lambda ref, mine: 32 * mine["gst_transactions"] + 64 * 1024,
    # DRAM reads: gpumem reads a little more than ncu on small kernels, by a
    # varying amount (measured on the 0.5 MB matmuls: +2.3 KB, +2.6 KB and
    # +10.7 KB in three runs, while ncu agreed with itself within 256 B); a
    # likely cause is gpumem's flush (a 200 MB read) evicting cached address
    # translations that the kernel then re-reads.  On read_offset (32 MB)
    # within 0.02%.  Bound: 0.5% plus 32 KiB.
    "dram_read_bytes": lambda ref, mine: 0.005 * abs(ref) + 32 * 1024,
    "l1_hit_rate": lambda ref, mine: 5.0,                           # percentage points
    # On the two small matmuls (~300 KB touched) gpumem's own value moved by
    # 7 points between two GPU runs (tiled 92.8 vs 99.9; ncu 90.3-91.1, and
    # 100.2-103.5 for naive); on vec_add every run agreed within 0.6 points.
    # Block replay and launch-by-launch replay alike, five blocks each on the
    # H100 (2026-11-23): warptiled 300x257x190 read 79.7-94.2 (and 107.7 in
    # a full suite run; ncu 84.5 and 85.1), tiled 91.6-99.5, naive 91.5-99.2,
    # while read_offset and vec_add stayed within 1 point.  A ratio above 100 says hits and lookups came
    # from different passes: on these launches of ~0.5 MB the L2 lookups
    # alone moved by 12% from pass to pass (157K-177K sectors).  Bound: 15
    # points, 25 for launches of under a million global-load sectors.
    "l2_hit_rate": lambda ref, mine: 15.0 if mine["gld_transactions"] >= 1e6 else 25.0,
    "achieved_occupancy": lambda ref, mine: 3.0,
    # 16-byte cp.async copies (warptiled's, since its rows off the 16-byte grid are padded
    # first: no 4-byte copies are left): their SASS-level sectors are not exact and vary
    # run to run (counters.py; 1,018,080 and 1,023,136 in two runs of one 1024^3 launch
    # on an H100, for 1,048,576).  The WORKLOAD's 300 x 256 x 256 (24,576 sectors), H100,
    # two test runs: gpumem 24,320 and 24,208, ncu 24,384, 24,224, 24,272 and 24,368.
    # Bound: 2%.
    "gldgsts_transactions": lambda ref, mine: 0.02 * abs(ref),
}


def find_ncu():
    for cand in (shutil.which("ncu"),
                 *(os.path.join(os.environ.get(v) or "", "bin", "ncu")
                   for v in ("CUDA_HOME", "CUDA_PATH")),
                 "/usr/local/cuda/bin/ncu"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def run_ncu(ncu, raw, script, timeout=300, args=()):
    """Raw metric values per kernel launch, in launch order, from ``ncu --csv`` running
    ``script`` with ``args``."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(gpumem.__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    # Clocks as in-process (not locked to base); caches flushed before each
    # pass (ncu's default, which gpumem's replay does too).
    cmd = [ncu, "--csv", "--print-units", "base", "--clock-control", "none",
           "--metrics", ",".join(raw), sys.executable, script, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert out.returncode == 0, (cmd, out.stdout[-3000:], out.stderr[-3000:])
    rows = list(csv.DictReader([ln for ln in out.stdout.splitlines() if ln.startswith('"')]))
    assert rows, out.stdout[-3000:] + out.stderr[-3000:]
    launches: dict[int, dict] = {}
    for r in rows:
        v = r["Metric Value"].replace(",", "")
        try:
            val = float(v)
        except ValueError:
            val = float("nan")
        launches.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})[r["Metric Name"]] = val
    return [launches[k] for k in sorted(launches)]


@pytest.mark.gpu
def test_every_alias_equals_ncu_within_half_a_percent(counters, tmp_path):
    ncu = find_ncu()
    if ncu is None:
        msg = "ncu (Nsight Compute CLI) is not on PATH nor in CUDA_HOME/bin"
        if REQUIRE_GPU:
            pytest.fail(msg + " -- the GPU suite needs it for the counter comparison")
        pytest.skip(msg)
    names = [n for n in ALIASES if n not in NOT_COUNTERS]
    assert set(REQUIRED) <= set(names)
    script = tmp_path / "workload.py"
    script.write_text("import numpy as np\nimport gpumem as gm\n" + WORKLOAD +
                      "\nworkload(gm, np)\n")
    ns: dict = {}
    exec(WORKLOAD, ns)
    with gpumem.profile(names) as p:
        ns["workload"](gpumem, np)
    ours = [r.metrics for r in p.records]
    theirs = run_ncu(ncu, raw_metrics(names), str(script))
    again = run_ncu(ncu, raw_metrics(names), str(script))
    assert len(theirs) == len(ours), [t["kernel"] for t in theirs]
    bad = []
    for i, (mine, ref, ref2) in enumerate(zip(ours, theirs, again)):
        for n in names:
            want, want2 = ALIASES[n].evaluate(ref), ALIASES[n].evaluate(ref2)
            got = mine[n]
            line = (f"launch {i} ({p.records[i].kernel}/{p.records[i].variant}) {n}: "
                    f"gpumem {got!r} vs ncu {want!r} (ncu again {want2!r})")
            print(line)
            if math.isnan(want) and math.isnan(got):
                continue
            # beyond 0.5%, what ncu itself moves between its two runs (twice over): the
            # shared wavefronts of the warp-tiled matmul read 12,315 and then 12,288
            spread = 2 * abs(want - want2) if not math.isnan(want - want2) else 0.0
            if n in STATE_DEPENDENT:
                ok = abs(got - want) <= STATE_DEPENDENT[n](want, mine)
            elif ALIASES[n].per and ALIASES[n].op == "-":
                # a difference inherits its operands' 0.5%: the shared wavefront
                # counters themselves move by a few run to run (744,207 vs
                # 744,221; stores 62,017 vs 62,016), in ncu too
                ok = abs(got - want) <= 0.005 * abs(ref[ALIASES[n].ncu]) + spread + 1e-9
            else:
                ok = abs(got - want) <= 0.005 * abs(want) + spread + 1e-9
            if not ok:
                bad.append(line)
    assert not bad, "\n".join(bad)
