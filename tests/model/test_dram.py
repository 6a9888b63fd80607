"""gpumem.model.dram: Little's law, bytes in flight and the burst's sectors, on paper."""
import math

import pytest

from gpumem.model import dram as dm


def test_bytes_in_flight_is_warps_lanes_width_unroll():
    assert dm.bytes_in_flight(8, 4, 1) == 1024
    assert dm.bytes_in_flight(64, 16, 16) == 524288
    assert dm.bytes_in_flight(32, 8, 4) == dm.bytes_in_flight(32, 16, 2) == dm.bytes_in_flight(64, 8, 2)


def test_little_bandwidth_is_linear_then_flat():
    bw = [dm.little_bandwidth(b, sms=100, latency_ns=500.0, peak_gbps=2000.0)
          for b in (1000, 2000, 10000, 20000)]
    assert bw == [200.0, 400.0, 2000.0, 2000.0]
    assert dm.little_bandwidth(4096) == pytest.approx(4096 * 132 / (680 / 1.98))


def test_latency_bandwidth_product():
    assert dm.latency_bandwidth_product(sms=100, latency_ns=500.0, peak_gbps=2000.0) == 10000.0
    lbp = dm.latency_bandwidth_product()
    assert dm.little_bandwidth(lbp) == pytest.approx(dm.H100_PEAK_GBPS)
    assert dm.little_bandwidth(0.9 * lbp) == pytest.approx(0.9 * dm.H100_PEAK_GBPS)


def test_bytes_for_fraction():
    pts = [(1000, 100.0), (2000, 200.0), (4000, 380.0), (8000, 400.0)]
    assert dm.bytes_for_fraction(pts, 0.9) == pytest.approx(2000 + (360 - 200) / 180 * 2000)
    assert dm.bytes_for_fraction(pts, 0.2) == 1000
    assert dm.bytes_for_fraction(pts, 0.9, peak_gbps=1000.0) is None
    assert dm.bytes_for_fraction(list(reversed(pts)), 1.0) == 8000


def test_burst_sectors_and_floor():
    assert [dm.burst_sectors(p, 10) for p in (4, 8, 16, 32, 64, 128)] == [10, 10, 10, 10, 20, 40]
    assert dm.burst_dram_floor(8, 10) == 320
    assert [dm.burst_lanes(p) for p in (4, 8, 16, 32, 64, 128)] == [1, 1, 1, 2, 4, 8]
    assert dm.burst_requests(4, 33) == 2 and dm.burst_requests(128, 33) == 9


def test_burst_sectors_with_slots_counts_shared_sectors_once_per_warp():
    # 4-byte pieces: slots 0..7 share sector 0; 8 pieces in one warp -> 1 sector
    assert dm.burst_sectors(4, 8, list(range(8))) == 1
    # 40 pieces: warps of 32 and 8; slot 0 in both warps counts in each
    assert dm.burst_sectors(4, 40, [0] * 40) == 2
    # 64-byte pieces (4 lanes, 8 pieces per warp): two sectors each, distinct
    assert dm.burst_sectors(64, 3, [0, 1, 5]) == 6
    with pytest.raises(ValueError, match="slots has 2 entries"):
        dm.burst_sectors(4, 3, [0, 1])


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: dm.bytes_in_flight(0, 4, 1), ValueError, "warps_per_sm=0"),
    (lambda: dm.bytes_in_flight(8, 12, 1), ValueError, "width=12"),
    (lambda: dm.bytes_in_flight(8, 4, 1.5), TypeError, "unroll must be an int"),
    (lambda: dm.little_bandwidth(-1), ValueError, "in_flight_per_sm=-1"),
    (lambda: dm.little_bandwidth(100, latency_ns=math.inf), ValueError, "latency_ns=inf"),
    (lambda: dm.little_bandwidth("1"), TypeError, "in_flight_per_sm must be a number"),
    (lambda: dm.little_bandwidth(True), TypeError, "in_flight_per_sm"),
    (lambda: dm.burst_sectors(12, 1), ValueError, "piece=12"),
    (lambda: dm.burst_sectors(4, 0), ValueError, "pieces=0"),
    (lambda: dm.bytes_for_fraction([], 0.9), ValueError, "at least one"),
    (lambda: dm.bytes_for_fraction([(1, 1)], 1.5), ValueError, "fraction=1.5"),
])
def test_hostile_input(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
