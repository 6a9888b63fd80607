"""gpumem.model.layout: strided_read, struct_update and distance against the
thread-by-thread reference, the published figures and the per-warp walk."""
import itertools

import pytest

from gpumem.model import layout, predict

from ._reference import assert_same, fast_path_1d

LAYOUT = [(f, v) for f, spec in layout.FAMILIES.items() for v in spec["variants"]]


def test_layout_kernels_equal_the_thread_by_thread_reference():
    for n, block in itertools.product((1, 5, 33, 1000, 4103), (1, 32, 100, 512)):
        for v in ("aos", "soa"):
            assert_same("struct_update", v, n=n, block=block)
            assert_same("distance", v, n=n, block=block)
        for s in (1, 2, 3, 4, 8, 16, 32, 64):
            assert_same("strided_read", "default", n=n, stride=s, block=block)
    for g in (32, 128):
        assert_same("distance", "aos", granularity=g, n=777, block=64)
        assert_same("strided_read", "default", granularity=g, n=3001, stride=3, block=64)


# ---- the published figures ("Professional CUDA C Programming", Fermi M2070) --
def test_book_aos_half_efficiency_soa_full():
    aos = predict("struct_update", "aos", n=1 << 20, block=128)
    soa = predict("struct_update", "soa", n=1 << 20, block=128)
    assert aos["gld_efficiency"] == aos["gst_efficiency"] == 50.0
    assert soa["gld_efficiency"] == soa["gst_efficiency"] == 100.0
    assert predict("struct_update", "aos", granularity=128, n=1 << 20,
                   block=128)["gld_efficiency"] == 50.0


def test_strided_read_cliff_and_float4_copy():
    eff = [predict("strided_read", "default", n=1 << 20, stride=s)["gld_efficiency"]
           for s in (1, 2, 4, 8, 16)]
    assert eff == [100.0, 50.0, 25.0, 12.5, 12.5]
    c4 = predict("copy", "float4", n=1 << 20, block=256)
    assert (c4["gld_requests"], c4["gld_transactions_per_request"]) == ((1 << 18) / 32, 16.0)
    assert c4["gld_efficiency"] == 100.0
    d = predict("distance", "aos", n=1 << 20)
    assert d["gld_transactions_per_request"] == 12.0       # 384 bytes per warp for 128 used
    # SoA in one buffer: y starts 4n bytes in, off the sector grid when n % 8 != 0
    odd = predict("struct_update", "soa", n=1_000_003)
    assert odd["gld_efficiency"] == pytest.approx(100 * 8 / 9, abs=0.01)    # x: 4 sectors, y: 5
    assert predict("struct_update", "soa", n=1 << 20)["gld_efficiency"] == 100.0


@pytest.mark.parametrize("family,variant", LAYOUT)
def test_fast_path_equals_the_per_warp_reference_1d(family, variant, rng):
    """Grids past the 128-block period several times, blocks that are not
    multiples of 32, the data ending anywhere in the last block, random strides:
    the classes must give the very numbers of the warps."""
    fast_path_1d(family, variant, rng)
