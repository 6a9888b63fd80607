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


def read_offset():
    for unroll in (1, 4):
        for cache in ("default", "ca", "cg", "ldg", "cs"):
            for offset, block in ((0, 512), (11, 100), (128, 33), (1001, 1), (1003, 1024)):
                gm.read_offset(f32(1003), f32(1003), offset=offset, unroll=unroll, block=block,
                               cache=cache)


def write_offset():
    for unroll in (1, 4):
        for offset, block in ((0, 512), (11, 100), (128, 33), (1001, 1), (1003, 1024)):
            gm.write_offset(f32(1003), f32(1003), offset=offset, unroll=unroll, block=block)


def strided_read():
    for stride in (1, 2, 7, 32, 64):
        for block in (1, 100, 512):
            gm.strided_read(f32(1001), stride=stride, block=block)


def struct_update():
    for block in (1, 100, 1024):
        gm.struct_update(f32(1001, 2), layout="aos", block=block)
        gm.struct_update(f32(2, 1001), layout="soa", block=block)


def distance():
    for block in (1, 100, 1024):
        gm.distance(f32(1001, 3), layout="aos", block=block)
        gm.distance(f32(3, 1001), layout="soa", block=block)


def copy():
    for variant in ("float", "float4"):
        for n in (1, 3, 4, 1001, 1003):
            for block in (1, 100, 256):
                gm.copy(f32(n), variant=variant, block=block)



def stencil():
    sym = np.array([0.25, 0.5, 1.0, 0.5, 0.25], np.float32)
    for memory in ("constant", "readonly", "global"):
        for items in (1, 2, 4, 8):
            for n in (1, 37, 1000):
                gm.stencil_1d(f32(n), memory=memory, items=items, block=32)
        gm.stencil_1d(f32(3001), sym, memory=memory, block=96, items=4)
        gm.stencil_1d(f32(5), np.ones(33, np.float32), memory=memory, block=1024, items=1)


def broadcast():
    for memory in ("constant", "readonly"):
        for distinct in (1, 3, 32):
            gm.constant_broadcast(distinct, memory=memory, n=1000, iters=5, block=96)


def private_array():
    for variant in ("local", "registers"):
        gm.thread_histogram(f32(1000), variant=variant, threads=77, block=32)


def lifetime():
    gm.lifetimes(2, blocks=3, block=64)


def register_cap():
    for v in gm.variants("register_cap"):
        gm.register_pressure(f32(64, 300), variant=v.name, rounds=2, block=96)


def divergence():
    for variant in ("odd_even", "warp"):
        gm.divergence(f32(1000), variant=variant, iters=3, block=96)


CALLS = {"vec_add": vec_add, "matmul": matmul, "read_offset": read_offset,
         "write_offset": write_offset, "strided_read": strided_read,
         "struct_update": struct_update, "distance": distance, "copy": copy,
         "stencil": stencil, "broadcast": broadcast,
         "private_array": private_array, "lifetime": lifetime, "register_cap": register_cap,
         "divergence": divergence}


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
