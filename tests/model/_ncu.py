"""Running gpumem's kernels under Nsight Compute, for the model's GPU tests
(test_predict.py: the counters; test_occupancy.py: the occupancy limits)."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gpumem

from _helpers import defer_to_one_process

# ==== on the GPU ======================================================================
# gpumem.model against the hardware: every modelled kernel family, run under
# Nsight Compute (one ``ncu`` process per family, every parameter combination
# in launch order), must give exactly the predicted request and sector counts
# and the predicted efficiencies to 0.01 percentage points; and
# ``model.occupancy`` must agree with the driver's occupancy calculator.
#
# What these tests check about the hardware (the model's assumptions):
#
# 1. A warp-wide global load/store instruction with at least one active lane
#    is ONE L1TEX request (``l1tex__t_requests_pipe_lsu_mem_global_op_*``),
#    whatever its width: a warp of 16-byte ``float4`` accesses is 1 request and
#    16 sectors.  An instruction whose lanes are all inactive -- including a
#    predicated-off load such as the tiled matmul's ``(row < M && ...) ? *a : 0``
#    in a warp entirely below the matrix -- is no request and no sector.
# 2. Sectors are the distinct 32-byte sectors the active lanes touch, counted
#    per instruction; the load path (default, ``.ca``, ``.cg``, ``__ldg``,
#    ``.cs``) does not change them.
# 3. ``smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.pct`` is
#    requested bytes / (sectors * 32) * 100 where requested bytes are the
#    distinct bytes of the active lanes (4 per distinct float address, 16 per
#    float4): a word several lanes read counts once.  Measured here: the naive
#    matmul at 64^3 reads 30.00% with tile 8 and 56.25% with tile 16 -- counting
#    every lane would give 160% and 200%.
# 4. Buffers start 256-byte aligned (cudaMalloc); SoA rows in one buffer start
#    ``4*n`` bytes apart (``struct_update``/``distance``).

REPO = Path(__file__).resolve().parents[2]
REQUIRE_GPU = os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0")

COUNTERS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "gld_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "gld_transactions",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "gst_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "gst_transactions",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": "gld_efficiency",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": "gst_efficiency",
}
#: cp.async (LDGSTS, sm_80 and newer): matmul warptiled copies B to shared memory with
#: it; the load counters above do not count it.  Asked for the matmul family only; a
#: launch whose prediction has no cp.async keys must read 0.
#: On the H100 the l1tex__t_*_op_ldgsts names are not collectable; the SASS-level
#: counts are.  Their requests are exact; their sectors are exact for the 4-byte copies
#: (cache_access) but not for the 16-byte ones (cache_bypass): measured 1,018,080 and
#: 1,023,136 in two runs of one 1024^3 launch for the 1,048,576 the addresses need, and
#: more than needed where lanes zero-fill (src-size 0).  gpumem's matmul copies are all
#: 16-byte ones (warptiled and mma pad rows off the 16-byte grid first), so their sectors
#: are held here only through the load counters (l1tex op_ld, which count them exactly:
#: gld_transactions), and a launch without copies must read 0.
LDGSTS_COUNTERS = {
    "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts.sum": "gldgsts_requests",
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum": "gldgsts_transactions",
}
#: Shared memory (matmul): the warp instructions are exact; the H100's wavefront counts
#: are the model's plus a few that vary run to run and that no address causes (measured
#: on every launch of the matmul grid below, twice: loads at most 0.16% over, stores up
#: to 11% -- tiled-8/16 and tiny warptiled launches, where stores from many blocks meet),
#: never under it.  So the model is exact for instructions and a floor for wavefronts.
SHARED_COUNTERS = {
    "smsp__inst_executed_op_shared_ld.sum": "shared_load_requests",
    "smsp__inst_executed_op_shared_st.sum": "shared_store_requests",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared_load_transactions",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared_store_transactions",
}
SHARED_OVER = {"shared_load_transactions": 0.01, "shared_store_transactions": 0.15}
EXACT = ("shared_load_requests", "shared_store_requests", "gld_requests", "gld_transactions",
         "gst_requests", "gst_transactions",
         "gldgsts_requests", "gldgsts_transactions")
PCT_TOL = 0.01


def case(family, variant, **params):
    return {"family": family, "variant": variant, "params": params}


# ---- the script ncu runs: every case of one family, in order ----------------------
SCRIPT = r'''
import json, sys
import numpy as np
import gpumem

cases = json.load(open(sys.argv[1]))
_arrays = {}

def dev(tag, shape):
    """One device buffer per (tag, shape), uploaded once: every launch reads
    its own cudaMalloc'd (256-byte aligned) inputs."""
    key = (tag, tuple(shape))
    if key not in _arrays:
        rng = np.random.default_rng(len(_arrays))
        _arrays[key] = gpumem.to_device(rng.random(shape, dtype=np.float32))
    return _arrays[key]

for c in cases:
    f, v, p = c["family"], c["variant"], c["params"]
    n = p.get("n")
    if f == "read_offset":
        gpumem.read_offset(dev("a", (n,)), dev("b", (n,)), offset=p["offset"],
                           unroll=int(v[-1]), block=p["block"], cache=p.get("cache", "default"))
    elif f == "write_offset":
        gpumem.write_offset(dev("a", (n,)), dev("b", (n,)), offset=p["offset"],
                            unroll=int(v[-1]), block=p["block"])
    elif f == "strided_read":
        gpumem.strided_read(dev("a", (n,)), stride=p["stride"], block=p["block"])
    elif f == "struct_update":
        gpumem.struct_update(dev("d", (n, 2) if v == "aos" else (2, n)), layout=v,
                             block=p["block"])
    elif f == "distance":
        gpumem.distance(dev("p", (n, 3) if v == "aos" else (3, n)), layout=v, block=p["block"])
    elif f == "copy":
        gpumem.copy(dev("a", (n,)), variant=v, block=p["block"])
    elif f == "vec_add":
        gpumem.vec_add(dev("a", (n,)), dev("b", (n,)), block=p["block"])
    elif f == "matmul":
        gpumem.matmul(dev("A", (p["m"], p["k"])), dev("B", (p["k"], p["n"])), tile=p["tile"],
                      variant=v)
    else:
        raise SystemExit("unknown family " + f)
'''


def ncu_path() -> str:
    cands = [shutil.which("ncu")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            cands.append(os.path.join(root, "bin", "ncu"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    msg = "Nsight Compute (ncu) is not on PATH (nor in $CUDA_HOME/bin, /usr/local/cuda/bin)"
    if REQUIRE_GPU:
        pytest.fail(msg + " and GPUMEM_REQUIRE_GPU=1: the model cannot be compared with the "
                    "hardware")
    pytest.skip(msg)


def require_family(family):
    # every family the model covers is a gpumem kernel family (it reads their variants
    # from _core): a missing one is a defect, not something to skip
    have = {v.family for v in gpumem.variants()}
    assert family in have, f"gpumem has no kernel family {family!r} (it lists {sorted(have)})"


def number(text: str) -> float:
    return float(text.replace(",", "").strip())


def run_ncu(cases, tmp_path, metrics, family_filter=None, timeout=400):
    """Profile the cases in one ncu process; one dict {metric: value, ...} per launch, in order."""
    defer_to_one_process("it runs Nsight Compute")
    script = tmp_path / "launch_all.py"
    script.write_text(SCRIPT)
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases))
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # The counters read here (requests, sectors, wavefronts, occupancy) do not depend on
    # what the caches hold or on the clocks: no flush and no clock lock between passes.
    cmd = [ncu_path(), "--csv", "--print-units", "base", "--target-processes", "all",
           "--cache-control", "none", "--clock-control", "none",
           "--metrics", ",".join(metrics), sys.executable, str(script), str(spec)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout
    start = out.find('"ID"')
    if proc.returncode != 0 or start < 0:
        pytest.fail(f"ncu failed (exit {proc.returncode}):\n{' '.join(cmd)}\n"
                    f"stdout tail:\n{out[-3000:]}\nstderr tail:\n{proc.stderr[-3000:]}")
    lines = [ln for ln in out[start:].splitlines() if ln.startswith('"')]
    launches: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row.get("Kernel Name", "")
        if family_filter and family_filter not in name:
            continue                                   # not a gpumem kernel of this family
        d = launches.setdefault(int(row["ID"]), {"kernel": name,
                                                 "grid": row.get("Grid Size", ""),
                                                 "block": row.get("Block Size", "")})
        d[row["Metric Name"]] = row["Metric Value"]
    return [launches[i] for i in sorted(launches)]


#: Averages among the counters (3. above) and the sector counts they are taken over: a
#: merged launch's is the sector-weighted mean (the load's over its ld sectors less the
#: cp.async copies', which the ld sectors count and the average does not).
AVERAGES = {
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct":
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
         "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"),
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct":
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", None),
}


def merge_helpers(launches, helper: str, metrics):
    """Launches of a ``helper`` kernel (one whose name contains it) are part of the call
    that follows them -- the padding copy (matmul_pad_rows) runs before mma, wgmma and
    warptiled, and the model counts both: each one's ``metrics`` added into the next
    launch (averages weighted by their sectors; a launch whose average reads 0 made no
    such access and weighs nothing), which keeps its name, grid and block; the helpers'
    launches and its own unmerged stay in it under ``"helpers"`` and ``"own"`` (see
    :func:`reweigh_load_average`)."""
    out, pending = [], []
    for d in launches:
        if helper in d["kernel"]:
            pending.append(d)
            continue
        if pending:
            group, own, d = pending + [d], d, dict(d)
            for m in metrics:
                if m in AVERAGES:
                    sec, less = AVERAGES[m]
                    w = [0.0 if number(g[m]) == 0 else number(g[sec]) -
                         (number(g[less]) if less in g else 0.0) for g in group]
                    avg = sum(number(g[m]) * x for g, x in zip(group, w)) / sum(w) if sum(w) else 0
                    d[m] = repr(avg)
                else:
                    d[m] = repr(sum(number(g[m]) for g in group))
            d["helpers"], d["own"], pending = pending, own, []
        out.append(d)
    assert not pending, f"{helper} launched last, with no launch after it"
    return out


def reweigh_load_average(launch, ld_sectors: int) -> None:
    """The merged load average of a launch whose own kernel both loads and copies by
    16-byte cp.async (warptiled after its padding copy): its weight in
    :func:`merge_helpers` is its ld sectors less its copies' SASS-level sectors, which are
    not exact for 16-byte copies (above).  Taken instead over ``ld_sectors``, the call's
    load sectors without the copies' (the model's, whose sector counts this test holds
    exact): the helpers' own (they only load) and the rest the kernel's."""
    m = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
    sec = AVERAGES[m][0]
    parts = [(number(g[m]), number(g[sec])) for g in launch["helpers"] if number(g[m])]
    own = ld_sectors - sum(s for _, s in parts)
    parts.append((number(launch["own"][m]), own))
    total = sum(s for _, s in parts)
    launch[m] = repr(sum(a * s for a, s in parts) / total if total else 0.0)


def dims(text: str) -> tuple:
    return tuple(int(x) for x in text.strip("() ").split(","))
