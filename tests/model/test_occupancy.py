"""gpumem.model.occupancy: the arithmetic of the seed text, the H100, every
architecture, against cuda_occupancy.h -- and, on a GPU, against Nsight Compute
and the CUDA occupancy API."""
import itertools

import numpy as np
import pytest

import gpumem
from gpumem import model
from gpumem.model import occupancy

from ._ncu import case, number, run_ncu


# ---- occupancy -----------------------------------------------------------------
def test_g80_register_arithmetic_of_seed_000():
    # "8K registers / 768 threads = 10 registers per thread" for a full SM
    assert 8192 // 768 == 10
    full = occupancy("1.0", 256, 10, 0)
    assert (full.blocks_per_sm, full.active_threads, full.occupancy) == (3, 768, 1.0)
    # "with 11 registers ... 256-thread blocks": a block needs 2816 of the 8192
    # registers, only 2 blocks fit -- 512 threads.  The text's "1/3" is the loss
    # (768 -> 512, one third fewer), not what is left (two thirds).
    eleven = occupancy("1.0", 256, 11, 0)
    assert eleven.regs_per_block == 2816
    assert (eleven.blocks_per_sm, eleven.active_threads, eleven.limiter) == (2, 512, "registers")
    assert eleven.occupancy == pytest.approx(2 / 3)


def test_g80_shared_memory_arithmetic_of_seed_000_and_the_limits_it_ignores():
    # "tile 16: 2 KiB per block, 16 KiB / 2 KiB = 8 blocks, the block limit too"
    t16 = occupancy("1.0", 16 * 16, 10, 2 * 16 * 16 * 4)
    assert t16.limits["shared_memory"] == 8 and t16.limits["blocks"] == 8
    # ... but 8 blocks of 256 threads would be 2048 threads on a 768-thread SM:
    # the threads-per-SM limit the text ignores allows 3 blocks.
    assert (t16.blocks_per_sm, t16.limiter, t16.active_threads) == (3, "threads", 768)
    # "tile 32: 8 KiB per block, only 2 blocks" -- but a 32 x 32 block is 1024
    # threads, over G80's 512 threads per block: it cannot launch at all.
    t32 = occupancy("1.0", 32 * 32, 10, 2 * 32 * 32 * 4)
    assert t32.limiter == "invalid" and "512" in t32.reason and t32.blocks_per_sm == 0
    assert 16 * 1024 // (2 * 32 * 32 * 4) == 2          # the text's shared-memory division


def test_h100_occupancy():
    r = occupancy("9.0", 256, 32, 0)
    assert (r.blocks_per_sm, r.active_warps, r.occupancy) == (8, 64, 1.0)
    assert r.limiter == "threads" and "registers" in r.limiters
    big = occupancy("9.0", 1024, 64, 0)
    assert (big.blocks_per_sm, big.occupancy, big.limiter) == (1, 0.5, "registers")
    over = occupancy("9.0", 1024, 65, 0)                 # 2304 regs/warp x 32 > 65536
    assert over.limiter == "invalid" and "registers" in over.reason
    small = occupancy("9.0", 32, 16, 0)
    assert (small.blocks_per_sm, small.limiter, small.occupancy) == (32, "blocks", 0.5)
    # the tiled matmul, tile 32: 8 KiB static + 1 KiB reserved per block
    tm = occupancy("9.0", 1024, 32, 8192)
    assert tm.smem_per_block_allocated == 9216 and tm.limits["shared_memory"] == 25
    smem = occupancy("9.0", 128, 32, 48 * 1024)          # 49 KiB charged: 4 blocks of 228 KiB
    assert (smem.blocks_per_sm, smem.limiter) == (4, "shared_memory")
    assert occupancy("9.0", 128, 32, 100 * 1024).limiter == "invalid"
    assert occupancy("9.0", 128, 32, 100 * 1024, optin=True).blocks_per_sm == 2
    odd = occupancy("9.0", 100, 40, 0)                   # 4 warps of 1280 regs each
    assert odd.active_threads == 100 * odd.blocks_per_sm
    assert odd.limits["registers"] == (65536 // 1280) // 4 * 4 // 4


def test_occupancy_across_architectures():
    for cc in model.ARCHS:
        r = occupancy(cc, 128, 16, 1024)
        assert 0 < r.occupancy <= 1 and r.limiter in ("threads", "blocks", "registers",
                                                      "shared_memory"), cc
    assert occupancy("7.5", 1024, 32, 0).occupancy == 1.0           # Turing: 1024 threads/SM
    assert occupancy("8.6", 512, 32, 0).blocks_per_sm == 3          # 1536 threads/SM
    assert occupancy("2.0", 256, 63, 0).limits["registers"] == 2    # 2048 regs/warp on Fermi
    # the Programming Guide's 10.3 is 10.0's SM; 11.0 has 12.x's threads and blocks and
    # 9.0's shared memory; 12.1 is 12.0's
    assert model.ARCHS["10.3"].threads_per_sm == 2048 and model.ARCHS["11.0"].blocks_per_sm == 24
    assert occupancy("11.0", 256, 32, 0).blocks_per_sm == 6          # 1536 threads/SM
    assert occupancy("11.0", 128, 32, 100 * 1024, optin=True).blocks_per_sm == 2   # 228 KiB
    assert occupancy("12.1", 128, 32, 60 * 1024, optin=True).blocks_per_sm == 1    # 100 KiB
    for a, b in (("10.3", "10.0"), ("12.1", "12.0")):
        assert {**vars(model.ARCHS[a]), "cc": b} == vars(model.ARCHS[b])
    assert occupancy((9, 0), threads=256, regs=32, smem=0) == occupancy("9.0", 256, 32, 0)
    with pytest.raises(ValueError, match="cc='4.0' is unknown.*'1.0'.*'12.0'"):
        occupancy("4.0", 128)
    r = occupancy("9.0", 128, 0, 0)
    assert r["blocks_per_sm"] == 16 and r.as_dict()["limiter"] == "threads"


def test_occupancy_takes_known_compute_capabilities_bool_optin_and_numpy_ints():
    with pytest.raises(ValueError, match=r"occupancy: cc=9.04 is unknown; allowed: '1.0'.*'12.0'"):
        occupancy(9.04)                          # not rounded to 9.0
    with pytest.raises(ValueError, match="cc=9.04 is unknown"):
        occupancy(np.float64(9.04), 256)
    with pytest.raises(ValueError, match=r"cc=\(9, 1\) is unknown"):
        occupancy((9, 1), 256)
    with pytest.raises(TypeError, match="occupancy: cc must be a str"):
        occupancy(True, 256)
    with pytest.raises(TypeError, match="occupancy: cc must be a str"):
        occupancy(["9.0"], 256)
    with pytest.raises(TypeError, match=r"occupancy: cc\[0\] must be an int"):
        occupancy((9.0, 0), 256)
    for bad in ("no", 1, None):
        with pytest.raises(TypeError, match="occupancy: optin must be a bool"):
            occupancy("9.0", 128, 32, 100 * 1024, optin=bad)
    with pytest.raises(TypeError, match="occupancy: threads_per_block must be an int, not bool"):
        occupancy("9.0", True)
    with pytest.raises(TypeError, match="occupancy: regs_per_thread must be an int, not float"):
        occupancy("9.0", 256, 32.0)
    with pytest.raises(ValueError, match="occupancy: smem_per_block=-1"):
        occupancy("9.0", 256, 32, -1)
    want = occupancy("8.6", 256, 32, 1024, optin=True)
    assert occupancy(8.6, np.int64(256), np.int32(32), np.uint16(1024),
                     optin=np.bool_(True)) == want
    assert occupancy(9, 256) == occupancy("9.0", 256) == occupancy((np.int64(9), 0), 256)
    assert occupancy(12.0, 256).cc == "12.0"


# ---- occupancy against cuda_occupancy.h, the toolkit's own calculator ------------
OCC_CPP = r'''
#include <cstdio>
#include "cuda_occupancy.h"
int main()
{
    int maj, min, tpb, tsm, rpb, rsm, blk, regs, optin;
    long long spb, ssm, sopt, rsv, smem;
    while (scanf("%d %d %d %d %d %d %lld %lld %lld %lld %d %d %lld %d", &maj, &min, &tpb, &tsm,
                 &rpb, &rsm, &spb, &ssm, &sopt, &rsv, &blk, &regs, &smem, &optin) == 14) {
        cudaOccDeviceProp p;
        p.computeMajor = maj; p.computeMinor = min; p.maxThreadsPerBlock = tpb;
        p.maxThreadsPerMultiprocessor = tsm; p.regsPerBlock = rpb; p.regsPerMultiprocessor = rsm;
        p.warpSize = 32; p.sharedMemPerBlock = spb; p.sharedMemPerMultiprocessor = ssm;
        p.numSms = 1; p.sharedMemPerBlockOptin = sopt; p.reservedSharedMemPerBlock = rsv;
        cudaOccFuncAttributes a;
        a.maxThreadsPerBlock = tpb; a.numRegs = regs; a.sharedSizeBytes = 0;
        a.shmemLimitConfig = optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
        a.maxDynamicSharedSizeBytes = optin ? sopt : spb;
        a.numBlockBarriers = 1;
        cudaOccDeviceState s;
        cudaOccResult r;
        cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, blk, smem);
        printf("%d\n", e == CUDA_OCC_SUCCESS ? r.activeBlocksPerMultiprocessor : -1);
    }
    return 0;
}
'''


def _occupancy_header_tool(tmp_path):
    import os
    import shutil
    import subprocess

    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    inc = None
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "include", "cuda_occupancy.h")):
            inc = os.path.join(root, "include")
            break
    if cxx is None or inc is None:
        pytest.skip("needs a C++ compiler and the CUDA toolkit's cuda_occupancy.h")
    src = tmp_path / "occ.cpp"
    src.write_text(OCC_CPP)
    exe = tmp_path / "occ"
    subprocess.run([cxx, "-O1", "-I", inc, str(src), "-o", str(exe)], check=True,
                   capture_output=True)
    return exe


def test_occupancy_equals_cuda_occupancy_h_for_every_modern_architecture(tmp_path):
    """cuda_occupancy.h (CUDA 13) is the calculator the runtime's
    cudaOccupancyMaxActiveBlocksPerMultiprocessor agrees with; it covers 3.x
    and later.  Fed each architecture's limits, it must give model.occupancy's
    blocks per SM for every block size, register count and shared-memory size."""
    import subprocess

    exe = _occupancy_header_tool(tmp_path)
    lines, want = [], []
    for cc, a in model.ARCHS.items():
        major, minor = map(int, cc.split("."))
        if major < 3:
            continue
        for block, regs, smem, optin in itertools.product(
                (1, 32, 33, 64, 96, 100, 128, 160, 192, 256, 288, 384, 512, 640, 768, 1000, 1024),
                (0, 8, 16, 24, 31, 32, 33, 40, 48, 56, 63, 64, 72, 80, 96, 128, 168, 200, 255),
                (0, 1, 1000, 4096, 9000, 16384, 20000, 32768, 40000, 49152, 60000, 100000),
                (0, 1)):
            if optin and smem <= 49152:
                continue
            if regs > a.max_regs_per_thread:   # 3.0 (GK104) allows 63; the header says 255
                continue
            lines.append(f"{major} {minor} {a.threads_per_block} {a.threads_per_sm} "
                         f"{a.regs_per_block} {a.regs_per_sm} {a.smem_per_block} {a.smem_per_sm} "
                         f"{a.smem_per_block_optin} {a.smem_reserved} "
                         f"{block} {regs} {smem} {optin}")
            want.append(occupancy(cc, block, regs, smem, optin=bool(optin)))
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, check=True).stdout.split()
    assert len(out) == len(want)
    bad = [f"{w.cc} block {w.threads_per_block} regs {w.regs_per_thread} smem "
           f"{w.smem_per_block}: cuda_occupancy.h {o}, model {w.blocks_per_sm} ({w.limiter})"
           for o, w in zip(out, want) if int(o) != w.blocks_per_sm]
    assert not bad, f"{len(bad)} of {len(want)} differ:\n" + "\n".join(bad[:30])


# ==== on the GPU ======================================================================
# ---- occupancy ----------------------------------------------------------------------
def _cc() -> str:
    major, minor = gpumem.device().compute_capability
    cc = f"{major}.{minor}"
    if cc not in model.ARCHS:
        pytest.fail(f"model.occupancy does not know compute capability {cc} of this GPU")
    return cc


@pytest.mark.gpu
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


@pytest.mark.gpu
def test_occupancy_limits_of_gpumem_kernels_equal_nsight_compute(tmp_path):
    """Per resource, for gpumem's own kernels: the block limits ncu reports
    (launch__occupancy_limit_*) from the kernel's real register count."""
    cc = _cc()
    cases = [case("matmul", v, m=96, n=96, k=96, tile=t) for v in ("naive", "tiled")
             for t in (8, 16, 32)]
    cases += [case("vec_add", "default", n=4096, block=b) for b in (32, 100, 256, 640, 1024)]
    hw = run_ncu(cases, tmp_path, OCC_METRICS)
    hw = [h for h in hw if "matmul" in h["kernel"] or "vec_add" in h["kernel"]]
    assert len(hw) == len(cases)
    bad = []
    for c, h in zip(cases, hw):
        cfg = model.launch_config(c["family"], c["variant"], **c["params"])
        threads = cfg["block"][0] * cfg["block"][1]
        regs = int(number(h["launch__registers_per_thread"]))
        smem = int(number(h["launch__shared_mem_per_block_static"]))
        occ = model.occupancy(cc, threads, regs, smem)
        for res, metric in (("registers", "launch__occupancy_limit_registers"),
                            ("threads", "launch__occupancy_limit_warps"),
                            ("blocks", "launch__occupancy_limit_blocks")):
            got = int(number(h[metric]))
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


@pytest.mark.gpu
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


@pytest.mark.parametrize("threads", [0])
def test_a_block_of_no_threads_is_refused(threads):
    # a calculator answers for launches that can be; over-limit launches say "invalid" instead
    with pytest.raises(ValueError, match=rf"occupancy: threads_per_block={threads} is not "
                                         "allowed; a block has at least 1 thread"):
        occupancy("9.0", threads, 32, 0)
    assert occupancy("9.0", 1025, 32, 0).limiter == "invalid"
