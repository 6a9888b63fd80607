"""``python -m gpumem``: the device summary and a short measured tour.

Without a GPU it says so and shows what works anyway: the kernel variants and
the memory model's predictions of their global-memory traffic.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import gpumem as gm


def _tour_gpu(size: int) -> None:
    print(gm.device().summary())
    print()
    rng = np.random.default_rng()
    n = 1 << 24
    a = gm.to_device(rng.standard_normal(n).astype(np.float32))
    b = gm.to_device(rng.standard_normal(n).astype(np.float32))
    r = gm.bench(gm.vec_add, a, b, repeat=20)
    peak = gm.device().theoretical_bandwidth_gbps
    print(f"vec_add, n = 2^24 floats: {r.median_ms:.3f} ms, {r.gbps:.0f} GB/s "
          f"({100 * r.gbps / peak:.0f}% of the {peak:.0f} GB/s theoretical)")
    print()
    A = gm.to_device(rng.standard_normal((size, size)).astype(np.float32))
    B = gm.to_device(rng.standard_normal((size, size)).astype(np.float32))
    rows = []
    for variant, tile in [("naive", 16), ("tiled", 8), ("tiled", 16), ("tiled", 32)]:
        r = gm.bench(gm.matmul, A, B, tile=tile, variant=variant, repeat=5, warmup=1)
        rows.append({"variant": variant, "tile": tile, "median_ms": r.median_ms, "GFLOP/s": r.gflops})
    print(gm.Table(rows, sources={"median_ms": "measured", "GFLOP/s": "measured"},
                   title=f"matmul {size}x{size}x{size} float32"))


def _tour_model(size: int) -> None:
    from gpumem import model

    rows = []
    for variant, tile in [("naive", 16), ("tiled", 8), ("tiled", 16), ("tiled", 32)]:
        t = model.matmul_traffic(size, size, size, variant, tile)
        rows.append({"variant": variant, "tile": tile,
                     "global load MB": t["load_bytes"] / 1e6,
                     "FLOPs per loaded float": t["cgma"]})
    print(gm.Table(rows, sources={"global load MB": "model", "FLOPs per loaded float": "model"},
                   title=f"matmul {size}x{size}x{size}: global-memory traffic the kernels request"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpumem", description=__doc__)
    ap.add_argument("--size", type=int, default=2048, help="matmul size for the tour")
    args = ap.parse_args(argv)
    print(f"gpumem {gm.__version__}, built with CUDA runtime %d.%d" % gm._core.runtime_version())
    if gm.is_available():
        _tour_gpu(args.size)
    else:
        try:
            gm.device()
        except gm.CudaError as e:
            print(f"No GPU here ({e}).")
        print("Without a GPU, gpumem validates arguments, lists its kernels and predicts their "
              "memory traffic with gpumem.model:\n")
        for v in gm.variants():
            print(f"  {v.family}/{v.name}: {v.idea}")
        print()
        _tour_model(args.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
