"""gpumem.model.access: vec_add, read_offset, write_offset and copy against the
thread-by-thread reference, the published figures, the H100's counters and the
per-warp walk."""
import itertools
import time

import pytest

from gpumem.model import access, predict

from ._reference import assert_same, fast_path_1d

ACCESS = [(f, v) for f, spec in access.FAMILIES.items() for v in spec["variants"]]


@pytest.mark.parametrize("variant", ["unroll1", "unroll4"])
@pytest.mark.parametrize("family", ["read_offset", "write_offset"])
def test_offset_kernels_equal_the_thread_by_thread_reference(family, variant):
    for n, off, block in itertools.product((1, 31, 1000, 4099), (0, 1, 2, 7, 11, 32, 33, 127),
                                           (32, 100, 256, 1024)):
        if off <= n:
            assert_same(family, variant, n=n, offset=off, block=block)
    assert_same(family, variant, granularity=128, n=5000, offset=11, block=96)


def test_access_kernels_equal_the_thread_by_thread_reference():
    for n, block in itertools.product((1, 5, 33, 1000, 4103), (1, 32, 100, 512)):
        assert_same("vec_add", "default", n=n, block=block)
        for v in ("float", "float4"):
            assert_same("copy", v, n=n, block=block)


# ---- the published figures ("Professional CUDA C Programming", Fermi M2070) --
def test_book_misaligned_read_offset_11():
    args = dict(n=1 << 20, offset=11, block=512)
    fermi_l1 = predict("read_offset", "unroll1", granularity=128, **args)
    assert fermi_l1["gld_efficiency"] == pytest.approx(50.0, abs=0.3)   # book: 49.81%
    assert fermi_l1["gld_transactions"] == pytest.approx(2 * 65536, rel=1e-4)  # book: 131039
    uncached = predict("read_offset", "unroll1", **args)
    assert uncached["gld_efficiency"] == pytest.approx(80.0, abs=0.01)   # book: 80.00% (-dlcm=cg)
    for off in (0, 128):
        assert predict("read_offset", "unroll1", granularity=128, n=1 << 20, offset=off,
                       block=512)["gld_efficiency"] == 100.0


def test_book_misaligned_write_offset_11():
    r = predict("write_offset", "unroll1", n=1 << 20, offset=11, block=512)
    assert r["gst_efficiency"] == pytest.approx(80.0, abs=0.01)
    assert r["gld_efficiency"] == pytest.approx(100.0, abs=0.01)     # the tail warp: 99.9997
    # stores bypass L1 on Fermi: 32-byte segments whatever the load granularity
    assert predict("write_offset", "unroll1", granularity=128, n=1 << 20, offset=11,
                   block=512)["gst_efficiency"] == pytest.approx(80.0, abs=0.01)


# ---- counters measured on the H100 through CUPTI ----------------------------------
def test_h100_read_offset_counters_exactly():
    off0 = predict("read_offset", "unroll1", n=1 << 24, offset=0, block=512)
    off11 = predict("read_offset", "unroll1", n=1 << 24, offset=11, block=512)
    assert off0["gld_requests"] == off11["gld_requests"] == 1_048_576
    assert off0["gld_transactions"] == 4_194_304
    assert off11["gld_transactions"] == 5_242_876
    assert round(off11["gld_efficiency"], 2) == 80.00
    assert round(predict("write_offset", "unroll1", n=1 << 24, offset=11,
                         block=512)["gst_efficiency"], 2) == 80.00
    assert predict("struct_update", "aos", n=1 << 24, block=512)["gld_efficiency"] == 50.0


def test_predicting_a_16m_thread_launch_takes_well_under_a_second():
    predict("read_offset", "unroll1", n=1 << 20, offset=3)        # warm-up
    for variant in ("unroll1", "unroll4"):
        t0 = time.perf_counter()
        predict("read_offset", variant, n=1 << 24, offset=11, block=512)
        assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("family,variant", ACCESS)
def test_fast_path_equals_the_per_warp_reference_1d(family, variant, rng):
    """Grids past the 128-block period several times, blocks that are not
    multiples of 32, the data ending anywhere in the last block, random offsets
    (up to n): the classes must give the very numbers of the warps."""
    fast_path_1d(family, variant, rng)
