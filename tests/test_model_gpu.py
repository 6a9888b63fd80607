"""gpumem.model against the hardware: every modelled kernel family, run under
Nsight Compute (one ``ncu`` process per family, every parameter combination
in launch order), must give exactly the predicted request and sector counts
and the predicted efficiencies to 0.01 percentage points; and
``model.occupancy`` must agree with the driver's occupancy calculator.

What these tests check about the hardware (the model's assumptions):

1. A warp-wide global load/store instruction with at least one active lane
   is ONE L1TEX request (``l1tex__t_requests_pipe_lsu_mem_global_op_*``),
   whatever its width: a warp of 16-byte ``float4`` accesses is 1 request and
   16 sectors.  An instruction whose lanes are all inactive -- including a
   predicated-off load such as the tiled matmul's ``(row < M && ...) ? *a : 0``
   in a warp entirely below the matrix -- is no request and no sector.
2. Sectors are the distinct 32-byte sectors the active lanes touch, counted
   per instruction; the load path (default, ``.ca``, ``.cg``, ``__ldg``,
   ``.cs``) does not change them.
3. ``smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.pct`` is
   requested bytes / (sectors * 32) * 100 where requested bytes are the
   distinct bytes of the active lanes (4 per distinct float address, 16 per
   float4): a word several lanes read counts once.  Measured here: the naive
   matmul at 64^3 reads 30.00% with tile 8 and 56.25% with tile 16 -- counting
   every lane would give 160% and 200%.
4. Buffers start 256-byte aligned (cudaMalloc); SoA rows in one buffer start
   ``4*n`` bytes apart (``struct_update``/``distance``).
"""
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
from gpumem import model

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[1]
REQUIRE_GPU = os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0")

COUNTERS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "gld_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "gld_transactions",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "gst_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "gst_transactions",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": "gld_efficiency",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": "gst_efficiency",
}
EXACT = ("gld_requests", "gld_transactions", "gst_requests", "gst_transactions")
PCT_TOL = 0.01

OFFSETS = (0, 1, 2, 4, 8, 11, 16, 31, 32, 33, 64, 127, 128)
BLOCKS = (32, 100, 256, 512, 1024)
STRIDES = (1, 2, 3, 4, 8, 16, 32, 64)
NS = (1 << 20, 1_000_003)


# ---- the parameter grid, family by family ----------------------------------------
def _case(family, variant, **params):
    return {"family": family, "variant": variant, "params": params}


def _offset_cases(family):
    cases = []
    for x, off in enumerate(OFFSETS):                 # every offset with both unrolls
        for unroll in (1, 4):
            cases.append(_case(family, f"unroll{unroll}", n=NS[x % 2], offset=off,
                               block=BLOCKS[(x + unroll) % len(BLOCKS)]))
    for block in BLOCKS:                              # every block size at a misaligned offset
        for unroll in (1, 4):
            for n in NS:
                cases.append(_case(family, f"unroll{unroll}", n=n, offset=11, block=block))
    if family == "read_offset":                       # the load paths: same sectors
        for cache in model.kernels.CACHES:
            for off in (0, 11):
                cases.append(_case(family, "unroll1", n=NS[1], offset=off, block=512, cache=cache))
        cases.append(_case(family, "unroll4", n=NS[1], offset=33, block=100, cache="cg"))
    return cases


def _cases(family):
    if family in ("read_offset", "write_offset"):
        return _offset_cases(family)
    if family == "strided_read":
        cases = [_case(family, "default", n=NS[x % 2], stride=s, block=BLOCKS[x % len(BLOCKS)])
                 for x, s in enumerate(STRIDES)]
        cases += [_case(family, "default", n=NS[1], stride=s, block=b)
                  for s in (3, 64) for b in BLOCKS]
        return cases
    if family in ("struct_update", "distance"):
        return [_case(family, v, n=n, block=b) for v in ("aos", "soa") for n in NS for b in BLOCKS]
    if family == "copy":
        cases = [_case(family, v, n=n, block=b) for v in ("float", "float4") for n in NS
                 for b in BLOCKS]
        cases += [_case(family, "float4", n=n, block=b)       # tails of 1, 2, 3 floats
                  for n, b in ((1_000_001, 256), (1_000_002, 100), (37, 32), (3, 1024))]
        return cases
    if family == "vec_add":
        return [_case(family, "default", n=n, block=b) for n in NS + (77,) for b in BLOCKS]
    if family == "matmul":
        shapes = ((64, 64, 64), (100, 37, 53), (33, 65, 7), (1, 1, 1), (17, 200, 3),
                  (257, 129, 70))
        return [_case(family, v, m=m, n=n, k=k, tile=t) for v in ("naive", "tiled")
                for t in (8, 16, 32) for m, n, k in shapes]
    raise AssertionError(family)


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


def _ncu() -> str:
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


def _require_family(family):
    have = {v.family for v in gpumem.variants()}
    if family not in have:
        pytest.skip(f"gpumem has no kernel family {family!r} yet (gpumem.variants() lists "
                    f"{sorted(have)}); nothing to compare the model with")


def _number(text: str) -> float:
    return float(text.replace(",", "").strip())


def run_ncu(cases, tmp_path, metrics, family_filter=None, timeout=400):
    """Profile the cases in one ncu process; one dict {metric: value, ...} per launch, in order."""
    script = tmp_path / "launch_all.py"
    script.write_text(SCRIPT)
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases))
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [_ncu(), "--csv", "--print-units", "base", "--target-processes", "all",
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


def _dims(text: str) -> tuple:
    return tuple(int(x) for x in text.strip("() ").split(","))


FAMILIES = ("read_offset", "write_offset", "strided_read", "struct_update", "distance", "copy",
            "vec_add", "matmul")


@pytest.mark.parametrize("family", FAMILIES)
def test_model_equals_nsight_compute(family, tmp_path):
    _require_family(family)
    cases = _cases(family)
    hw = run_ncu(cases, tmp_path, list(COUNTERS), family_filter=family)
    assert len(hw) == len(cases), (
        f"{len(cases)} {family} launches made, {len(hw)} profiled: "
        f"{[h['kernel'] for h in hw][:5]} ...")
    bad = []
    for c, h in zip(cases, hw):
        want = model.predict(c["family"], c["variant"], **c["params"])
        cfg = model.launch_config(c["family"], c["variant"], **c["params"])
        where = f"{c['variant']} {c['params']}"
        if h["grid"] and (_dims(h["grid"]), _dims(h["block"])) != (cfg["grid"], cfg["block"]):
            bad.append(f"{where}: launched grid {h['grid']} block {h['block']}, model "
                       f"assumes {cfg}")
            continue
        for metric, key in COUNTERS.items():
            got = _number(h[metric])
            exp = want[key]
            ok = got == exp if key in EXACT else abs(got - exp) <= PCT_TOL
            if not ok:
                bad.append(f"{where}: {key} hardware {got:g}, model {exp:g}")
    assert not bad, f"{len(bad)} mismatches of {len(cases)} launches:\n" + "\n".join(bad[:40])


# ---- occupancy ----------------------------------------------------------------------
def _cc() -> str:
    major, minor = gpumem.device().compute_capability
    cc = f"{major}.{minor}"
    if cc not in model.ARCHS:
        pytest.fail(f"model.occupancy does not know compute capability {cc} of this GPU")
    return cc


def test_architecture_table_matches_this_gpu():
    """The limits model.ARCHS holds for this GPU's compute capability are the
    ones the CUDA runtime reports for it."""
    cc = _cc()
    a, d = model.ARCHS[cc], gpumem.device()
    assert (a.threads_per_sm, a.threads_per_block, a.blocks_per_sm) == (
        d.max_threads_per_multiprocessor, d.max_threads_per_block, d.max_blocks_per_multiprocessor)
    assert (a.regs_per_sm, a.regs_per_block) == (d.registers_per_multiprocessor,
                                                 d.registers_per_block)
    assert (a.smem_per_sm, a.smem_per_block, a.smem_per_block_optin) == (
        d.shared_memory_per_multiprocessor, d.shared_memory_per_block,
        d.shared_memory_per_block_optin)


OCC_METRICS = ["launch__occupancy_limit_registers", "launch__occupancy_limit_warps",
               "launch__occupancy_limit_blocks", "launch__registers_per_thread",
               "launch__shared_mem_per_block_static"]


def test_occupancy_limits_of_gpumem_kernels_equal_nsight_compute(tmp_path):
    """Per resource, for gpumem's own kernels: the block limits ncu reports
    (launch__occupancy_limit_*) from the kernel's real register count."""
    cc = _cc()
    cases = [_case("matmul", v, m=96, n=96, k=96, tile=t) for v in ("naive", "tiled")
             for t in (8, 16, 32)]
    cases += [_case("vec_add", "default", n=4096, block=b) for b in (32, 100, 256, 640, 1024)]
    hw = run_ncu(cases, tmp_path, OCC_METRICS)
    hw = [h for h in hw if "matmul" in h["kernel"] or "vec_add" in h["kernel"]]
    assert len(hw) == len(cases)
    bad = []
    for c, h in zip(cases, hw):
        cfg = model.launch_config(c["family"], c["variant"], **c["params"])
        threads = cfg["block"][0] * cfg["block"][1]
        regs = int(_number(h["launch__registers_per_thread"]))
        smem = int(_number(h["launch__shared_mem_per_block_static"]))
        occ = model.occupancy(cc, threads, regs, smem)
        for res, metric in (("registers", "launch__occupancy_limit_registers"),
                            ("threads", "launch__occupancy_limit_warps"),
                            ("blocks", "launch__occupancy_limit_blocks")):
            got = int(_number(h[metric]))
            exp = occ.limits[res]
            if exp is not None and got != exp:
                bad.append(f"{c['family']}/{c['variant']} {c['params']} ({threads} threads, "
                           f"{regs} regs, {smem} B smem): {res} limit hardware {got}, model {exp}")
    assert not bad, "\n".join(bad)


OCC_SRC = r'''
extern "C" __global__ void light(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

extern "C" __global__ void heavy(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v[40];
#pragma unroll
    for (int j = 0; j < 40; ++j) v[j] = x[(i + 977 * j) % n];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 40; ++j) s += v[j] * v[(7 * j + 3) % 40] + v[(11 * j) % 40];
    x[i % n] = s;
}

extern "C" __global__ void static_smem(float *x, int n)
{
    __shared__ float s[3000];
    int t = threadIdx.x;
    for (int j = t; j < 3000; j += blockDim.x) s[j] = x[j % n];
    __syncthreads();
    x[t % n] = s[(7 * t) % 3000];
}

extern "C" __global__ void dynamic_smem(float *x, int n)
{
    extern __shared__ float s[];
    int t = threadIdx.x;
    s[t] = x[t % n];
    __syncthreads();
    x[t % n] = s[(t + 1) % blockDim.x];
}
'''


def _driver_occupancy(cupy, kernel, block, dyn):
    """cuOccupancyMaxActiveBlocksPerMultiprocessor, the driver call behind the
    runtime's cudaOccupancyMaxActiveBlocksPerMultiprocessor; None if it refuses."""
    import ctypes

    func = kernel.kernel.ptr                  # CUfunction of the loaded CuPy kernel
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        lib = None
    if lib is None:
        try:
            return cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(func, block, dyn)
        except cupy.cuda.driver.CUDADriverError:
            return None
    out = ctypes.c_int(-1)
    rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(out), ctypes.c_void_p(func), ctypes.c_int(block), ctypes.c_size_t(dyn))
    return out.value if rc == 0 else None


def test_occupancy_equals_the_cuda_occupancy_api():
    cupy = pytest.importorskip("cupy", reason="needs CuPy to call the CUDA occupancy API")
    cc = _cc()
    kernels = [cupy.RawKernel(OCC_SRC, "light"), cupy.RawKernel(OCC_SRC, "static_smem"),
               cupy.RawKernel(OCC_SRC, "dynamic_smem")]
    kernels += [cupy.RawKernel(OCC_SRC, "heavy", options=(f"--maxrregcount={r}",))
                for r in (24, 40, 64, 96, 128, 168, 255)]
    blocks = (32, 64, 96, 100, 128, 192, 256, 320, 384, 512, 640, 768, 1024)
    dyns = (0, 1000, 4096, 12345, 24576, 40000, 49152)
    bad, checked = [], 0
    for k in kernels:
        regs, static = k.num_regs, k.shared_size_bytes
        for block in blocks:
            for dyn in (dyns if k.__name__ == "dynamic_smem" else (0,)):
                got = _driver_occupancy(cupy, k, block, dyn)
                occ = model.occupancy(cc, block, regs, static + dyn)
                if block > k.max_threads_per_block:
                    ok = occ.limiter == "invalid" and got in (None, 0)
                else:
                    ok = got == occ.blocks_per_sm
                checked += 1
                if not ok:
                    bad.append(f"{k.__name__} ({regs} regs, {static} B static) block {block} "
                               f"dyn {dyn}: driver {got}, model {occ.blocks_per_sm} "
                               f"({occ.limiter} {occ.limits} {occ.reason})")
    # opting in to more than 48 KiB of dynamic shared memory
    big = cupy.RawKernel(OCC_SRC, "dynamic_smem")
    optin = model.ARCHS[cc].smem_per_block_optin
    if optin > 48 * 1024:
        big.max_dynamic_shared_size_bytes = optin - big.shared_size_bytes
        for dyn in (60 * 1024, 100 * 1024, optin - big.shared_size_bytes):
            for block in (128, 1024):
                got = _driver_occupancy(cupy, big, block, dyn)
                occ = model.occupancy(cc, block, big.num_regs, big.shared_size_bytes + dyn,
                                      optin=True)
                checked += 1
                if got != occ.blocks_per_sm:
                    bad.append(f"opt-in dyn {dyn} block {block}: driver {got}, model "
                               f"{occ.blocks_per_sm} ({occ.limiter})")
    assert checked > 100
    assert not bad, f"{len(bad)} of {checked} disagree:\n" + "\n".join(bad[:40])
