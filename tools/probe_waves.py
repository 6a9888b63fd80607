"""Probe: what the last, partly filled wave of blocks costs ``warptiled`` near 4096^3.

``gpumem.matmul(variant="warptiled", tile=128)`` runs one block per 128 x 128 tile of C,
two blocks per SM: on 132 SMs, waves of 264 blocks.  4096^3 has 1,024 tiles, 3.88 waves:
the fourth wave is 232 blocks of 264 and takes as long as a full one, so the launch
lasts 4 waves for 3.88 waves of work (``gpumem.model.matmul_waves``: efficiency 0.970).
The split tail does not take that wave (it splits a last wave at most half full).

This script times warptiled at M = 3968, 4096, 4224 and 4352 (N = K = 4096: 992, 1,024,
1,056 = 4 x 264 and 1,088 tiles), beside cuBLAS SGEMM at the same shapes (CuPy, float32,
``CUPY_TF32=0``) and the model's waves, in one run.  If the wave is the whole story,
each shape's GFLOP/s over the whole-wave shape's (4224) equals the model's efficiency.

GFLOP/s over the median of 20 timed calls (``gpumem.bench``; CuPy events for cuBLAS),
after 3 warm-ups.  Every gpumem product is checked against cuBLAS's (relative error).

Needs numpy, cupy and gpumem built for the GPU.
Usage: python tools/probe_waves.py [--json OUT.json]
"""
from __future__ import annotations

import json
import os
import sys

os.environ["CUPY_TF32"] = "0"      # float32 cuBLAS; CuPy reads it at import

import numpy as np
import cupy as cp

import gpumem as gm

SHAPES = ((3968, 4096, 4096), (4096, 4096, 4096), (4224, 4096, 4096), (4352, 4096, 4096))
WHOLE = (4224, 4096, 4096)         # 1,056 tiles: 4 full waves on 132 SMs


def cublas_gflops(a, b, reps=20, warmup=3):
    for _ in range(warmup):
        a @ b
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        a @ b
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    m, k = a.shape
    return 2.0 * m * k * b.shape[1] / (float(np.median(times)) * 1e-3) / 1e9


def main(argv):
    out_json = argv[argv.index("--json") + 1] if "--json" in argv else None
    dev = gm.device()
    sms = dev.multiprocessors
    rng = np.random.default_rng(0)
    rows = []
    for m, n, k in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        da, db, out = gm.to_device(a), gm.to_device(b), gm.empty((m, n))
        ca, cb = cp.asarray(a), cp.asarray(b)
        r = gm.bench(gm.matmul, da, db, variant="warptiled", tile=128, out=out, repeat=20,
                     warmup=3)
        ref = ca @ cb
        err = float(cp.abs(cp.asarray(out.get()) - ref).max() / cp.abs(ref).max())
        w = gm.model.matmul_waves(m, n, k, tile=128, sms=int(sms))
        rows.append({"m": m, "n": n, "k": k, "tiles": w["tiles"], "slots": w["slots"],
                     "waves": w["tiles"] / w["slots"], "splits": r.params.get("splits"),
                     "model_efficiency": w["efficiency_after"],
                     "warptiled_gflops": r.gflops, "cublas_gflops": cublas_gflops(ca, cb),
                     "relative_error": err})
    whole = next(x for x in rows if (x["m"], x["n"], x["k"]) == WHOLE)
    print(f"{dev.name}: warptiled (tile 128) against cuBLAS SGEMM, waves of {whole['slots']} "
          "blocks")
    print(f"{'M x N x K':>17} {'tiles':>6} {'waves':>6} {'splits':>6} {'warptiled':>10} "
          f"{'cuBLAS':>8} {'x cuBLAS':>8} {'x 4224':>7} {'model':>6}")
    for x in rows:
        x["of_whole_wave_shape"] = x["warptiled_gflops"] / whole["warptiled_gflops"]
        print(f"{x['m']:>5} x {x['n']} x {x['k']} {x['tiles']:>6} {x['waves']:>6.3f} "
              f"{x['splits']:>6} {x['warptiled_gflops']:>10,.0f} {x['cublas_gflops']:>8,.0f} "
              f"{x['warptiled_gflops'] / x['cublas_gflops']:>8.3f} "
              f"{x['of_whole_wave_shape']:>7.3f} {x['model_efficiency']:>6.3f}")
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"gpu": dev.name, "date": __import__("datetime").date.today().isoformat(),
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
