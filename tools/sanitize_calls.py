"""Call every gpumem kernel variant once on small, awkward sizes.

tools/gpu-check runs this under compute-sanitizer (memcheck, racecheck,
synccheck).  Each family has one function named as the family, which calls
every variant gm.variants(family) lists; the script fails when a family
listed by gpumem.variants() has no function, so a new kernel cannot skip the
sanitizers.
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
    tiles = {"naive": (8, 16, 32), "tiled": (8, 16, 32), "prefetch": (16, 32), "coarsened": (32,),
             "register_tiled": (64,), "warptiled": (64, 128)}
    for v in gm.variants("matmul"):
        for tile in tiles[v.name]:
            gm.matmul(f32(37, 41), f32(41, 29), tile=tile, variant=v.name)
            gm.matmul(f32(1, 1), f32(1, 1), tile=tile, variant=v.name)
            gm.matmul(f32(70, 0), f32(0, 33), tile=tile, variant=v.name)
            gm.matmul(f32(65, 100), f32(100, 64), tile=tile, variant=v.name)
            gm.matmul(f32(67, 9), f32(9, 130), tile=tile, variant=v.name)   # scalar paths


def read_offset():
    for v in gm.variants("read_offset"):
        unroll = int(v.name.removeprefix("unroll"))
        for cache in gm._core.CACHE_PATHS:
            for offset, block in ((0, 512), (11, 100), (128, 33), (1001, 1), (1003, 1024)):
                gm.read_offset(f32(1003), f32(1003), offset=offset, unroll=unroll, block=block,
                               cache=cache)


def write_offset():
    for v in gm.variants("write_offset"):
        unroll = int(v.name.removeprefix("unroll"))
        for offset, block in ((0, 512), (11, 100), (128, 33), (1001, 1), (1003, 1024)):
            gm.write_offset(f32(1003), f32(1003), offset=offset, unroll=unroll, block=block)


def strided_read():
    for stride in (1, 2, 7, 32, 64):
        for block in (1, 100, 512):
            gm.strided_read(f32(1001), stride=stride, block=block)


def _layouts(fn, fields):
    for v in gm.variants(fn.__name__):
        shape = (1001, fields) if v.name == "aos" else (fields, 1001)
        for block in (1, 100, 1024):
            fn(f32(*shape), layout=v.name, block=block)


def struct_update():
    _layouts(gm.struct_update, 2)


def distance():
    _layouts(gm.distance, 3)


def copy():
    for v in gm.variants("copy"):
        for n in (1, 3, 4, 1001, 1003):
            for block in (1, 100, 256):
                gm.copy(f32(n), variant=v.name, block=block)


def stencil_1d():
    sym = np.array([0.25, 0.5, 1.0, 0.5, 0.25], np.float32)
    for v in gm.variants("stencil_1d"):
        for items in (1, 2, 4, 8):
            for n in (1, 37, 1000):
                gm.stencil_1d(f32(n), memory=v.name, items=items, block=32)
        gm.stencil_1d(f32(3001), sym, memory=v.name, block=96, items=4)
        gm.stencil_1d(f32(5), np.ones(33, np.float32), memory=v.name, block=1024, items=1)


def constant_broadcast():
    for v in gm.variants("constant_broadcast"):
        for distinct in (1, 3, 32):
            gm.constant_broadcast(distinct, memory=v.name, n=1000, iters=5, block=96)


def thread_histogram():
    for v in gm.variants("thread_histogram"):
        gm.thread_histogram(f32(1000), variant=v.name, threads=77, block=32)


def lifetimes():
    gm.lifetimes(2, blocks=3, block=64)


def register_pressure():
    for v in gm.variants("register_pressure"):
        gm.register_pressure(f32(64, 300), variant=v.name, rounds=2, block=96)


def divergence():
    for v in gm.variants("divergence"):
        gm.divergence(f32(1000), variant=v.name, iters=3, block=96)


def latency():
    # every path; one node, a ring that wraps many times, 32 lanes, an odd stride
    for v in gm.variants("latency"):
        for ws, stride, lanes in ((8, 8, 1), (8 * 37, 8, 32), (4096, 128, 1), (40960, 40, 7)):
            gm.latency(ws, cache=v.name, stride=stride, lanes=lanes, steps=100)


def bandwidth():
    for n in (1, 3, 1001, 4099):
        for cache in gm._core.CACHE_PATHS:
            for scope in ("grid", "block"):
                gm.bandwidth(f32(n), scope=scope, cache=cache, passes=2, blocks=3, block=96)
            gm.bandwidth(f32(n), variant="copy", cache=cache, passes=2, blocks=3, block=64)
        gm.bandwidth(f32(n), variant="shared", passes=2, blocks=3, block=96)
    gm.bandwidth(f32(12288), variant="shared", blocks=2, block=1024)


def transpose():
    for v in gm.variants("transpose"):
        for m, n in ((1, 1), (37, 41), (64, 68), (65, 68), (100, 3)):
            gm.transpose(f32(m, n), variant=v.name)


def shared_stride():
    for v in gm.variants("shared_stride"):
        for stride in (1, 2, 7, 32):
            gm.shared_stride(stride, word=v.name, iters=5, blocks=2)


def read_sum():
    for n in (0, 1, 3, 1001, 4099):
        for block in (32, 256, 1024):
            gm.read_sum(f32(n), block=block)
    # the experiments point it at mapped pinned host memory and managed memory
    gm._core._transfer_zero_copy(4100, 2, 1)
    gm._core._transfer_managed(4100, 1)
    # and the copies behind to_device/get: staged (>= 2 MiB pageable) and pinned
    big = f32(3 * 2**18 + 5)
    assert np.array_equal(gm.to_device(big).get(), big)
    h = gm.pinned_empty(1003, np.float32)
    h[:] = 1.5
    d = gm.to_device(h)
    d.get(out=h)
    for kind in ("pageable", "pinned", "write_combined", "staged"):
        gm._core._transfer_copy(kind, "h2d", 3 * 2**20 + 4, 1, 0)
        gm._core._transfer_copy(kind, "d2h", 3 * 2**20 + 4, 1, 0)


def scale():
    for n, work in ((1, 0), (1001, 3), (70000, 1)):
        gm.scale(f32(n), work=work, block=128)
    gm._core._transfer_overlap(4 * 1001, 3, 2)


# one function per family, named as the family
CALLS = {fam: globals()[fam] for fam in {v.family for v in gm.variants()} if fam in globals()}


def main() -> int:
    families = {v.family for v in gm.variants()}
    missing = sorted(families - CALLS.keys())
    if missing:
        print(f"sanitize_calls: no calls for families {missing}", file=sys.stderr)
        return 2
    for fam in sorted(families):
        CALLS[fam]()
        print(f"{fam}: {len(gm.variants(fam))} variants called")
    return 0


if __name__ == "__main__":
    sys.exit(main())
