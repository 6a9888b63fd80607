"""Call every gpumem kernel variant once on small, awkward sizes.

tools/gpu-check runs this under compute-sanitizer (memcheck, racecheck,
synccheck).  Each family registers one function in CALLS; the script fails
when a family listed by gpumem.variants() has no entry, so a new kernel
cannot skip the sanitizers.
"""
import sys

import numpy as np

import gpumem as gm

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def vec_add():
    for block in (1, 100, 256, 1024):
        gm.vec_add(f32(1000), f32(1000), block=block)


def matmul():
    for variant in ("naive", "tiled"):
        for tile in (8, 16, 32):
            gm.matmul(f32(37, 41), f32(41, 29), tile=tile, variant=variant)
            gm.matmul(f32(1, 1), f32(1, 1), tile=tile, variant=variant)


CALLS = {"vec_add": vec_add, "matmul": matmul}


def main() -> int:
    families = {v.family for v in gm.variants()}
    missing = sorted(families - CALLS.keys())
    if missing:
        print(f"sanitize_calls: no calls for families {missing}", file=sys.stderr)
        return 2
    for fam in sorted(families):
        CALLS[fam]()
        print(f"{fam}: {len([v for v in gm.variants(fam)])} variants called")
    return 0


if __name__ == "__main__":
    sys.exit(main())
