"""Probe: how fast can mma.sync (TF32, m16n8k8) go on this GPU at all?

``gpumem.matmul(variant="mma")`` is the Ampere path: warps issue ``mma.sync``.  On a
Hopper GPU the tensor cores' full rate belongs to ``wgmma`` (warpgroup MMA); the older
instruction has a ceiling of its own.  This script measures that ceiling with a kernel
that does nothing but mma.sync: every warp keeps 32 independent accumulator tiles and
issues m16n8k8 on them from registers (no memory, no rounding), with 4, 8, 16 or 32
warps per SM.  Beside it, in the same run: cuBLAS with TF32 allowed (CuPy,
``CUPY_TF32=1``) and gpumem's ``mma`` and ``wgmma`` at 4096^3.

An m16n8k8 is 16 x 8 x 8 multiply-adds: 2,048 FLOPs.  TFLOP/s over the median of
10 timed launches (CuPy events, after 3 warm-ups).

Needs numpy and cupy; gpumem is optional (its rows are left out without it).
Usage: python tools/probe_mma_peak.py [--json OUT.json]
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "1")      # CuPy reads it at import

import numpy as np
import cupy as cp

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(128) mma_only(float *out, int iters, float seed)
{
    float acc[32][4];
    for (int j = 0; j < 32; ++j)
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    unsigned a0 = __float_as_uint(seed + threadIdx.x), a1 = __float_as_uint(seed + 1.0f),
             a2 = __float_as_uint(seed + 2.0f), a3 = __float_as_uint(seed - threadIdx.x),
             b0 = __float_as_uint(seed * 0.5f), b1 = __float_as_uint(seed + 0.25f);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < 32; ++j)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    float s = 0.0f;
    for (int j = 0; j < 32; ++j)
        s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""
FLOPS_PER_MMA = 2 * 16 * 8 * 8


def median_ms(fn, reps=10, warmup=3):
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def main(argv):
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    sms = props["multiProcessorCount"]
    cc = (props["major"], props["minor"])
    rows = []
    if cc < (8, 0):
        print(f"{name}: compute capability {cc[0]}.{cc[1]}, mma.sync with TF32 needs 8.0")
        return 1
    kernel = cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("mma_only")
    iters = 2000
    for warps_per_sm in (4, 8, 16, 32):
        blocks = sms * warps_per_sm // 4
        out = cp.empty(blocks * 128, cp.float32)
        ms = median_ms(lambda: kernel((blocks,), (128,), (out, np.int32(iters), np.float32(1))))
        flops = blocks * 4 * iters * 32 * FLOPS_PER_MMA
        rows.append({"what": f"mma.sync only, {warps_per_sm} warps/SM", "tflops": flops / ms / 1e9})
    n = 4096
    rng = np.random.default_rng(1)
    a = cp.asarray(rng.standard_normal((n, n)).astype(np.float32))
    b = cp.asarray(rng.standard_normal((n, n)).astype(np.float32))
    c = cp.empty((n, n), cp.float32)
    ms = median_ms(lambda: cp.matmul(a, b, out=c))
    rows.append({"what": "cuBLAS TF32 (CuPy), 4096^3", "tflops": 2 * n ** 3 / ms / 1e9})
    try:
        import gpumem as gm
    except ImportError:
        gm = None
    if gm is not None:
        da, db = gm.from_dlpack(a), gm.from_dlpack(b)
        for variant in ("mma", "wgmma"):
            if variant == "wgmma" and cc != (9, 0):
                continue
            r = gm.bench(gm.matmul, da, db, variant=variant, repeat=10, warmup=3)
            rows.append({"what": f"gpumem {variant}, 4096^3", "tflops": r.gflops / 1e3})
    top = max(r["tflops"] for r in rows if r["what"].startswith("mma.sync only, 8"))
    print(f"{name} ({sms} SMs, compute capability {cc[0]}.{cc[1]})")
    print(f"{'':44s} {'TFLOP/s':>8s} {'x 8-warp ceiling':>17s}")
    for r in rows:
        r["x_ceiling_8_warps"] = r["tflops"] / top
        print(f"{r['what']:44s} {r['tflops']:8.1f} {r['x_ceiling_8_warps']:17.2f}")
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump({"gpu": name, "sms": sms, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
