"""gpumem.model.predict: what a prediction costs, the launches gpumem cannot make,
the arguments predict refuses, launch_config -- and, on a GPU, every modelled
family against Nsight Compute."""
import time

import numpy as np
import pytest

from gpumem import model
from gpumem.model import predict
from gpumem.model.names import CACHE_PATHS

from ._ncu import (COUNTERS, EXACT, LDGSTS_COUNTERS, PCT_TOL, SHARED_COUNTERS, SHARED_OVER, case,
                   dims, merge_helpers, number, require_family, reweigh_load_average, run_ncu)


# ---- what a prediction costs, and the launches gpumem cannot make -----------------
GMAX = 2 ** 31 - 1       # blocks of a grid (gridDim.x)

#: Every family and variant at the largest launch gpumem accepts (block 1024,
#: 2^31 - 1 blocks; matmul at 65535 block rows with N*K just under 2^61 floats).
LARGEST = [
    ("vec_add", "default", dict(n=GMAX * 1024, block=1024)),
    ("read_offset", "unroll1", dict(n=GMAX * 1024, block=1024, offset=11)),
    ("read_offset", "unroll4", dict(n=GMAX * 4096, block=1024, offset=GMAX * 1000)),
    ("write_offset", "unroll1", dict(n=GMAX * 1024, block=1024, offset=3)),
    ("write_offset", "unroll4", dict(n=GMAX * 4000 - 5, block=1000, offset=33)),
    ("strided_read", "default", dict(n=GMAX * 1024 * 64, block=1024, stride=64)),
    ("struct_update", "aos", dict(n=GMAX * 1024, block=1024)),
    ("struct_update", "soa", dict(n=GMAX * 1024 - 7, block=1024)),
    ("distance", "aos", dict(n=GMAX * 1024, block=1024)),
    ("distance", "soa", dict(n=GMAX * 1024 - 1, block=1024)),
    ("copy", "float", dict(n=GMAX * 1024, block=1024)),
    ("copy", "float4", dict(n=4 * GMAX * 1024 - 9, block=1024)),
] + [("matmul", v, dict(m=65535 * t, n=2 ** 30 - 1, k=GMAX, tile=t))
     for v, tiles in (("naive", (8, 16, 32)), ("tiled", (8, 16, 32)), ("prefetch", (16, 32)),
                      ("coarsened", (32,)), ("register_tiled", (64,)),
                      ("warptiled", (64, 128)), ("mma", (128,)), ("wgmma", (128,)))
     for t in tiles
] + [("transpose", v, dict(m=65535 * 32, n=2 ** 31 - 65)) for v in model.families()["transpose"]
] + [("dram_stream", v, dict(n=2 ** 61 - 1, unroll=u, grid=1 << 20, block=1024))
     for v in ("float", "float2", "float4") for u in (1, 16)
] + [("dram_channels", "strided", dict(n=2 ** 61 - 1, streams=(1 << 22) - 1, stride=1 << 40,
                                       chunk=1 << 30, block=1024)),
     ("dram_channels", "strided", dict(n=2 ** 61 - 1, streams=1 << 24, stride=32, chunk=1 << 30,
                                       block=1024)),
     ("dram_channels", "random", dict(n=2 ** 61 - 1, streams=1 << 24, chunk=1 << 30, block=1024))]
LARGEST += [(f, v, dict(m=65535 * 32, n=2 ** 29)) for f in ("tile_copy", "tile_transpose")
            for v in model.families()[f]]
#: The sizes issue 11 names: n = 2^31 with the default block, matmul at 16384^3 (transpose
#: at 65536^2).  shared_stride moves no global loads: its sizes are tested in test_transpose;
#: dram_burst's sectors depend on every piece's random slot, so it is counted piece by piece
#: (tests/model/test_dram.py times it at 2^24 pieces).
HEADLINE = [(f, v, dict(m=16384, n=16384, k=16384) if f == "matmul" else
             dict(m=65536, n=65536) if f in ("transpose", "tile_copy", "tile_transpose") else
             dict(n=2 ** 31, streams=4096) if f == "dram_channels" else dict(n=2 ** 31))
            for f, vs in model.families().items() if f not in ("shared_stride", "dram_burst")
            for v in vs]


def test_predict_at_the_largest_launch_takes_under_a_second_and_100_mb():
    import tracemalloc

    predict("matmul", "tiled", m=40, n=40, k=40)              # warm-up: imports, caches
    assert {(f, v) for f, v, _ in LARGEST} == {(f, v) for f, v, _ in HEADLINE}
    for family, variant, p in LARGEST + HEADLINE:
        for g in (32, 128):
            tracemalloc.start()
            try:
                t0 = time.perf_counter()
                r = predict(family, variant, granularity=g, **p)
                dt = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert dt < 1.0, (family, variant, p, dt)
            assert peak < 100 * 2 ** 20, (family, variant, p, peak)
            # the copy engine's reads (bulk, tensor*) are no LSU load requests
            engine = variant in ("bulk", "tensor", "tensor_swizzle128", "wgmma")
            assert (r["gld_requests"] > 0 or engine) and r["gst_requests"] > 0


def test_the_largest_launches_have_the_closed_form_counts():
    # vec_add, n = 2^31: 2^26 full warps, 2 loads and a store of 4 sectors each
    r = predict("vec_add", "default", n=2 ** 31)
    assert (r["gld_requests"], r["gld_transactions"], r["gst_transactions"]) == \
        (2 ** 27, 2 ** 29, 2 ** 28)
    assert r["gld_bytes_requested"] == 2 * 4 * 2 ** 31 and r["gld_efficiency"] == 100.0
    # the largest vec_add: 2^31 - 1 blocks of 32 full warps
    r = predict("vec_add", "default", n=GMAX * 1024, block=1024)
    assert (r["gst_requests"], r["gst_transactions"]) == (GMAX * 32, GMAX * 128)
    # struct_update aos: every warp spans 8 sectors for 4 of bytes, loads and stores
    r = predict("struct_update", "aos", n=2 ** 31)
    assert (r["gld_requests"], r["gld_transactions"]) == (2 * 2 ** 26, 2 * 8 * 2 ** 26)
    # matmul 16384^3, tile 16: each block column reads A once, each block row B
    # once, in full 64-byte rows (2 sectors per row, 2 rows per warp)
    r = predict("matmul", "tiled", m=16384, n=16384, k=16384, tile=16)
    reads = 2 * 16384 * 16384 * 1024                          # floats of A and B read
    assert r["gld_bytes_requested"] == 4 * reads == model.matmul_traffic(
        16384, 16384, 16384, "tiled", 16)["load_bytes"]
    assert (r["gld_requests"], r["gld_transactions"]) == (reads // 32, reads // 8)
    assert r["gst_transactions"] == 16384 * 16384 // 8
    # matmul warptiled 16384^3: every block reads, per 16-wide k step, its 16 x t tile of A
    # in A_LOADS = 2 float4 instructions per warp (8 rows of 64 bytes: 16 sectors each) and
    # copies its 16 x t tile of B in 2 float4 cp.async per warp (512 contiguous bytes, or 2
    # rows of 256: 16 sectors); C: 8 (t=128) or 4 (t=64) rows x 2 float4 per lane, each
    # instruction 8 rows of 64 bytes
    size = 16384
    for t, threads, rows in ((128, 256, 8), (64, 128, 4)):
        t0 = time.perf_counter()
        r = predict("matmul", "warptiled", m=size, n=size, k=size, tile=t)
        assert time.perf_counter() - t0 < 1.0
        blocks, steps, warps = (size // t) ** 2, size // 16, threads // 32
        req = blocks * steps * warps * 2
        for pre, times in (("gld", 2), ("gldgsts", 1)):      # gld: A and the copies of B
            assert (r[f"{pre}_requests"], r[f"{pre}_transactions"],
                    r[f"{pre}_bytes_requested"]) == (times * req, times * 16 * req,
                                                     times * 512 * req)
        # A once per block column, B once per block row
        assert r["gld_bytes_requested"] == 2 * 4 * size * size * (size // t)
        st = blocks * warps * rows * 2
        assert (r["gst_requests"], r["gst_transactions"], r["gst_bytes_requested"]) == \
            (st, 16 * st, 4 * size * size)
        assert r["gld_efficiency"] == r["gst_efficiency"] == 100.0
        tr = model.matmul_traffic(size, size, size, "warptiled", t)
        assert tr["load_bytes"] == r["gld_bytes_requested"]
        assert tr["cgma"] == t                      # as tiled's: t FLOPs per loaded float
    # matmul naive at its largest: exact Python ints far past 2^63
    r = predict("matmul", "naive", m=65535 * 32, n=2 ** 30 - 1, k=GMAX, tile=32)
    warps = 65535 * 32 * (2 ** 30 // 32)                       # one row of 32 columns each
    assert r["gld_requests"] == 2 * warps * GMAX > 2 ** 63


def test_launches_gpumem_cannot_make_are_refused():
    # one past the largest grid (2^31 - 1 blocks), as the C entry points refuse it
    for family, variant, p, per in (("vec_add", "default", {}, 1024),
                                    ("read_offset", "unroll4", {}, 4096),
                                    ("strided_read", "default", {"stride": 64}, 64 * 1024),
                                    ("copy", "float4", {}, 4 * 1024),
                                    ("distance", "soa", {}, 1024)):
        ok = predict(family, variant, n=GMAX * per, block=1024, **p)
        assert ok["gst_requests"] > 0
        for n in (GMAX * per + 1, 2 ** 50):
            with pytest.raises(ValueError, match=rf"model.predict\({family}/{variant}\): "
                                                 rf"n={n} needs .* blocks of block=1024"):
                predict(family, variant, n=n, block=1024, **p)
        with pytest.raises(ValueError, match="model.launch_config.*2\\*\\*31 - 1"):
            model.launch_config(family, variant, n=GMAX * per + 1, block=1024, **p)
    # n past 2^63 bytes: no array can hold it
    for family, n in (("vec_add", 2 ** 61), ("distance", 2 ** 60), ("struct_update", 2 ** 60)):
        with pytest.raises(ValueError, match=rf"n={n} elements of \d+ bytes exceed"):
            predict(family, model.families()[family][0], n=n)
    # matmul: 65535 block rows, 2^31 - 1 per dimension, 2^63 - 1 bytes per matrix
    for t in (8, 16, 32):
        assert predict("matmul", "tiled", m=65535 * t, n=5, k=5, tile=t)["gst_requests"] > 0
        with pytest.raises(ValueError, match=rf"m={65535 * t + 1} needs 65536 block rows "
                                             rf"with tile={t}.*m <= {65535 * t}"):
            predict("matmul", "naive", m=65535 * t + 1, n=5, k=5, tile=t)
    for name in ("n", "k"):
        p = dict(m=4, n=4, k=4, tile=16)
        p[name] = 2 ** 31
        with pytest.raises(ValueError, match=rf"{name}=2147483648 is too large.*2\*\*31 - 1"):
            predict("matmul", "tiled", **p)
    with pytest.raises(ValueError, match=r"k=2147483647 and n=2147483647: b \(k x n\)"):
        predict("matmul", "tiled", m=4, n=GMAX, k=GMAX)
    with pytest.raises(ValueError, match=r"model.matmul_traffic\(matmul/naive\): m=2097121"):
        model.matmul_traffic(65535 * 32 + 1, 4, 4, "naive", 32)


def test_predict_returns_int_counts_and_percentages_to_four_places():
    assert model.DECIMALS == 4
    for family, variant, p in HEADLINE:
        r = predict(family, variant, **p)
        for key in model.METRICS:
            if key.endswith(("efficiency", "per_request")):
                assert type(r[key]) is float and r[key] == round(r[key], 4), (family, key)
            else:
                assert type(r[key]) is int, (family, key)
    # 8388520 bytes in 327676 sectors: 80.00013733...% -> 80.0001, 4.99993896... -> 4.9999
    r = predict("read_offset", "unroll4", n=2 ** 20, offset=11, block=256)
    assert (r["gld_bytes_requested"], r["gld_transactions"], r["gld_requests"]) == \
        (8_388_520, 327_676, 65_536)
    assert (r["gld_efficiency"], r["gld_transactions_per_request"]) == (80.0001, 4.9999)
    assert r["gst_efficiency"] == 99.9997                             # 99.99971...
    assert predict("distance", "aos", n=2 ** 20)["gld_efficiency"] == 33.3333
    t = model.matmul_traffic(100, 37, 53, "tiled", 16)
    assert all(type(t[k]) is int for k in ("load_bytes", "store_bytes", "flops", "min_bytes"))
    assert t["cgma"] == round(2 * 100 * 37 * 53 / (53 * (3 * 100 + 7 * 37)), 4)


def test_predict_refuses_wrong_types_and_values_naming_the_argument():
    with pytest.raises(TypeError, match="model.predict: family must be a str, not list"):
        predict(["matmul"], "tiled", m=4, n=4, k=4)
    with pytest.raises(TypeError, match="model.predict: variant must be a str, not int"):
        predict("matmul", 1, m=4, n=4, k=4)
    with pytest.raises(ValueError, match=r"read_offset/unroll1\): offset=1001 .* 0..1000"):
        predict("read_offset", "unroll1", n=1000, offset=1001)
    assert predict("write_offset", "unroll4", n=1000, offset=1000)["gst_requests"] == 0
    with pytest.raises(TypeError, match="cache must be a str, not int"):
        predict("read_offset", "unroll1", n=10, cache=1)
    for bad in (True, 4.0, "4", None):
        with pytest.raises(TypeError, match="n must be an int"):
            predict("vec_add", "default", n=bad)
    with pytest.raises(TypeError, match="block must be an int, not bool"):
        predict("copy", "float", n=10, block=True)
    with pytest.raises(TypeError, match="model.predict: granularity must be an int"):
        predict("vec_add", "default", n=10, granularity=32.0)
    # NumPy integers are integers, everywhere
    assert predict("read_offset", "unroll4", n=np.int64(10_000), offset=np.uint8(11),
                   block=np.int32(96), granularity=np.int16(128)) == \
        predict("read_offset", "unroll4", n=10_000, offset=11, block=96, granularity=128)
    assert predict("matmul", "tiled", m=np.int32(40), n=np.int64(9), k=np.uint16(3),
                   tile=np.int64(8)) == predict("matmul", "tiled", m=40, n=9, k=3, tile=8)
    assert model.launch_config("vec_add", "default", n=np.int64(1000), block=np.int16(100)) == \
        {"grid": (10, 1, 1), "block": (100, 1, 1)}


def test_predict_record_and_matmul_traffic_name_themselves():
    for bad in (None, 3, {"kernel": "vec_add"}):
        with pytest.raises(TypeError, match="model.predict_record: record must be a "
                                            "gpumem.LaunchRecord"):
            model.predict_record(bad)
    with pytest.raises(ValueError, match="model.matmul_traffic: variant='x' is unknown"):
        model.matmul_traffic(4, 4, 4, "x")
    with pytest.raises(ValueError, match=r"model.matmul_traffic\(matmul/tiled\): tile=12"):
        model.matmul_traffic(4, 4, 4, "tiled", 12)
    with pytest.raises(TypeError, match=r"model.matmul_traffic\(matmul/tiled\): k must be an"):
        model.matmul_traffic(4, 4, 4.0)
    assert model.matmul_traffic(np.int64(64), np.int32(64), np.uint8(64)) == \
        model.matmul_traffic(64, 64, 64)


# ---- families, variants, parameters -------------------------------------------
def test_predict_names_what_is_allowed():
    with pytest.raises(ValueError, match="family='nope'.*'read_offset'"):
        predict("nope", "x", n=1)
    with pytest.raises(ValueError, match="variant='unroll2'.*'unroll1', 'unroll4'"):
        predict("read_offset", "unroll2", n=1)
    with pytest.raises(ValueError, match="'stride' is unknown.*n, offset, block, cache"):
        predict("read_offset", "unroll1", n=1, stride=2)
    with pytest.raises(ValueError, match="block=0"):
        predict("copy", "float", n=10, block=0)
    with pytest.raises(ValueError, match="tile=12.*8, 16, 32"):
        predict("matmul", "tiled", m=4, n=4, k=4, tile=12)
    with pytest.raises(ValueError, match="cache='L3'"):
        predict("read_offset", "unroll1", n=4, cache="L3")
    with pytest.raises(ValueError, match="needs parameter 'n'"):
        predict("vec_add", "default")
    with pytest.raises(ValueError, match="granularity"):
        predict("vec_add", "default", n=4, granularity=64)
    with pytest.raises(TypeError, match="n must be an int"):
        predict("vec_add", "default", n=4.0)


def test_every_key_and_the_cache_paths_agree():
    ref = predict("read_offset", "unroll4", n=100_003, offset=5, block=256)
    assert tuple(ref) == model.METRICS
    for c in ("ca", "cg", "ldg", "cs"):
        assert predict("read_offset", "unroll4", n=100_003, offset=5, block=256, cache=c) == ref
    assert set(model.families()) == {"vec_add", "matmul", "read_offset", "write_offset",
                                     "strided_read", "struct_update", "distance", "copy",
                                     "transpose", "shared_stride", "dram_stream", "dram_burst",
                                     "dram_channels", "tile_copy", "tile_transpose"}


def test_predict_takes_a_launch_record():
    from collections import namedtuple

    rec = namedtuple("Rec", "kernel variant params")("read_offset", "unroll1",
                                                       {"n": 1000, "offset": 3, "block": 256,
                                                        "cache": "cg"})
    assert model.predict_record(rec) == predict("read_offset", "unroll1", n=1000, offset=3,
                                                block=256)


def test_launch_config_matches_the_launchers():
    assert model.launch_config("read_offset", "unroll4", n=1000, block=100) == \
        {"grid": (3, 1, 1), "block": (100, 1, 1)}
    assert model.launch_config("strided_read", "default", n=1000, stride=3, block=32)["grid"] == \
        (11, 1, 1)
    assert model.launch_config("copy", "float4", n=1003, block=256)["grid"] == (1, 1, 1)
    assert model.launch_config("matmul", "tiled", m=33, n=70, k=5, tile=16) == \
        {"grid": (5, 3, 1), "block": (16, 16, 1)}
    assert model.launch_config("matmul", "register_tiled", m=130, n=65, k=5) == \
        {"grid": (2, 3, 1), "block": (16, 16, 1)}
    assert model.launch_config("matmul", "warptiled", m=130, n=129, k=5) == \
        {"grid": (2, 2, 1), "block": (256, 1, 1)}
    assert model.launch_config("matmul", "warptiled", m=130, n=129, k=5, tile=64) == \
        {"grid": (3, 3, 1), "block": (128, 1, 1)}
    with pytest.raises(ValueError, match="tile=32 is not allowed.*64, 128"):
        model.launch_config("matmul", "warptiled", m=4, n=4, k=4, tile=32)


def test_families_are_what_the_model_modules_declare():
    """The registry is not a hand list: every module of gpumem.model with FAMILIES
    (one per lesson) contributes its families, in module-name order."""
    import importlib
    import pkgutil

    declared = {}
    for info in sorted(pkgutil.iter_modules(model.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"gpumem.model.{info.name}")
            for family, spec in getattr(module, "FAMILIES", {}).items():
                declared[family] = tuple(spec["variants"])
    assert list(model.families().items()) == list(declared.items())
    assert {"access", "async_copy", "dram", "layout", "matmul", "transpose"} == {
        info.name for info in pkgutil.iter_modules(model.__path__)
        if hasattr(importlib.import_module(f"gpumem.model.{info.name}"), "FAMILIES")}


# ==== on the GPU: the model against Nsight Compute ==================================
# (the assumptions these launches check are listed in _ncu.py)
OFFSETS = (0, 1, 2, 4, 8, 11, 16, 31, 32, 33, 64, 127, 128)
BLOCKS = (32, 100, 256, 512, 1024)
STRIDES = (1, 2, 3, 4, 8, 16, 32, 64)
NS = (1 << 20, 1_000_003)


# ---- the parameter grid, family by family ----------------------------------------

def _offset_cases(family):
    cases = []
    for x, off in enumerate(OFFSETS):                 # every offset with both unrolls
        for unroll in (1, 4):
            cases.append(case(family, f"unroll{unroll}", n=NS[x % 2], offset=off,
                              block=BLOCKS[(x + unroll) % len(BLOCKS)]))
    for block in BLOCKS:                              # every block size at a misaligned offset
        for unroll in (1, 4):
            for n in NS:
                cases.append(case(family, f"unroll{unroll}", n=n, offset=11, block=block))
    if family == "read_offset":                       # the load paths: same sectors
        for cache in CACHE_PATHS:
            for off in (0, 11):
                cases.append(case(family, "unroll1", n=NS[1], offset=off, block=512, cache=cache))
        cases.append(case(family, "unroll4", n=NS[1], offset=33, block=100, cache="cg"))
    return cases


def _cases(family):
    if family in ("read_offset", "write_offset"):
        return _offset_cases(family)
    if family == "strided_read":
        cases = [case(family, "default", n=NS[x % 2], stride=s, block=BLOCKS[x % len(BLOCKS)])
                 for x, s in enumerate(STRIDES)]
        cases += [case(family, "default", n=NS[1], stride=s, block=b)
                  for s in (3, 64) for b in BLOCKS]
        return cases
    if family in ("struct_update", "distance"):
        return [case(family, v, n=n, block=b) for v in ("aos", "soa") for n in NS for b in BLOCKS]
    if family == "copy":
        cases = [case(family, v, n=n, block=b) for v in ("float", "float4") for n in NS
                 for b in BLOCKS]
        cases += [case(family, "float4", n=n, block=b)       # tails of 1, 2, 3 floats
                  for n, b in ((1_000_001, 256), (1_000_002, 100), (37, 32), (3, 1024))]
        return cases
    if family == "vec_add":
        return [case(family, "default", n=n, block=b) for n in NS + (77,) for b in BLOCKS]
    if family == "matmul":
        shapes = ((64, 64, 64), (100, 37, 53), (33, 65, 7), (1, 1, 1), (17, 200, 3),
                  (257, 129, 70))
        return [case(family, v, m=m, n=n, k=k, tile=t)
                for v, tiles in (("naive", (8, 16, 32)), ("tiled", (8, 16, 32)),
                                 ("prefetch", (16, 32)), ("coarsened", (32,)),
                                 ("register_tiled", (64,)), ("warptiled", (64, 128)),
                                 ("mma", (128,)), ("wgmma", (128,)))
                for t in tiles for m, n, k in shapes
                if v != "wgmma" or _runs_wgmma()]
    raise AssertionError(family)


def _runs_wgmma():
    """wgmma runs on compute capability 9.0 only (elsewhere it is refused, tested in
    tests/test_matmul.py)."""
    import gpumem
    return tuple(gpumem.device().compute_capability) == (9, 0)


FAMILIES = ("read_offset", "write_offset", "strided_read", "struct_update", "distance", "copy",
            "vec_add", "matmul")


@pytest.mark.gpu
@pytest.mark.parametrize("family", FAMILIES)
def test_model_equals_nsight_compute(family, tmp_path):
    require_family(family)
    cases = _cases(family)
    counters = dict(COUNTERS, **(dict(LDGSTS_COUNTERS, **SHARED_COUNTERS)
                                 if family == "matmul" else {}))
    hw = merge_helpers(run_ncu(cases, tmp_path, list(counters), family_filter=family),
                       "matmul_pad_rows", list(counters))
    assert len(hw) == len(cases), (
        f"{len(cases)} {family} launches made, {len(hw)} profiled: "
        f"{[h['kernel'] for h in hw][:5]} ...")
    bad = []
    for c, h in zip(cases, hw):
        want = model.predict(c["family"], c["variant"], **c["params"])
        cfg = model.launch_config(c["family"], c["variant"], **c["params"])
        if "helpers" in h and c["variant"] == "warptiled":   # loads and 16-byte copies
            reweigh_load_average(h, want["gld_transactions"] - want["gldgsts_transactions"])
        where = f"{c['variant']} {c['params']}"
        if h["grid"] and (dims(h["grid"]), dims(h["block"])) != (cfg["grid"], cfg["block"]):
            bad.append(f"{where}: launched grid {h['grid']} block {h['block']}, model "
                       f"assumes {cfg}")
            continue
        for metric, key in counters.items():
            got = number(h[metric])
            exp = want.get(key, 0) if metric in LDGSTS_COUNTERS else want[key]
            if key == "gldgsts_transactions" and exp:
                continue                  # 16-byte copies: not exact on the H100 (_ncu.py)
            if key == "shared_load_transactions" and c["variant"] == "wgmma":
                # a floor: on the H200 (2026-11-27) the wavefronts of wgmma's loads came 10-21%
                # over the model on this grid's launches while its load instructions were
                # exact -- an excess no load address makes; the threads' mbarrier waits
                # (try_wait polls on shared memory, as many as the copies take) are the
                # likely source, not separated by a counter yet
                ok = exp <= got <= exp * 1.3
            elif key in SHARED_OVER:
                ok = exp <= got <= exp * (1 + SHARED_OVER[key])
            else:
                ok = got == exp if key in EXACT else abs(got - exp) <= PCT_TOL
            if not ok:
                bad.append(f"{where}: {key} hardware {got:g}, model {exp:g}")
    assert not bad, f"{len(bad)} mismatches of {len(cases)} launches:\n" + "\n".join(bad[:40])
