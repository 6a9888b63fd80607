"""gpumem.model.peer: the link's copy curve, Little's law over the link and nccl-tests'
bandwidths, on paper (no GPU)."""
import doctest
import math

import numpy as np
import pytest

from gpumem.model import dram, peer


def test_the_examples_in_the_docstring_hold():
    assert doctest.testmod(peer).failed == 0


def test_link_rate_is_links_times_the_rate_of_one():
    assert peer.link_gbps() == 18 * 25.0 == 450.0
    assert peer.link_gbps(4, 25.0) == 100.0
    assert peer.link_gbps(np.int64(2), np.float32(50.0)) == 100.0


def test_a_copy_is_its_start_up_then_the_rate():
    s = peer.copy_seconds(450 * 10**9, start_us=10.0, gbps=450.0)
    assert s == pytest.approx(1.0 + 10e-6)
    assert peer.copy_seconds(0) == pytest.approx(peer.COPY_START_US * 1e-6)
    assert peer.copy_gbps(0) == 0.0
    # the curve rises with size towards the copy engine's payload rate, never past it
    sizes = [4 * 4**k for k in range(15)]
    rates = [peer.copy_gbps(n) for n in sizes]
    rate = peer.payload_gbps()
    assert rate == pytest.approx(450 * 256 / 272)
    assert rates == sorted(rates) and rates[-1] < rate
    # half the rate where the bytes take as long as the start-up
    half = int(peer.COPY_START_US * 1e-6 * rate * 1e9)
    assert peer.copy_gbps(half) == pytest.approx(rate / 2, rel=1e-6)
    assert peer.copy_seconds(4) == pytest.approx(4.8e-6, rel=1e-3)     # the measured 4 bytes


def test_link_bytes_add_a_header_per_packet():
    assert peer.link_bytes(0) == 0
    assert peer.link_bytes(256) == 272 and peer.link_bytes(257) == 257 + 32
    assert peer.link_bytes(1 << 30) / (1 << 30) == 272 / 256
    assert peer.link_bytes(1 << 30, payload=peer.SM_PAYLOAD) / (1 << 30) == 144 / 128
    with pytest.raises(ValueError, match="payload=512"):
        peer.link_bytes(1, payload=512)


def test_loads_over_the_link_are_the_dram_law_with_the_links_figures():
    sm_rate = 450 * 128 / 144                        # 16-byte headers on 128-byte lines
    for in_flight in (512, 2048, 4096, 65536):
        assert peer.loads_gbps(in_flight) == dram.little_bandwidth(
            in_flight, sms=132, latency_ns=peer.LOADS_ROUND_NS, peak_gbps=sm_rate,
            bank_ns=0.0, round_ns=0.0, spread_ns=0.0)
    # below the knee: bytes in flight x SMs / the round; at and past it: the rate
    assert peer.loads_gbps(1024) == pytest.approx(1024 * 132 / peer.LOADS_ROUND_NS)
    assert peer.loads_gbps(1 << 20) == pytest.approx(sm_rate)
    assert peer.loads_gbps(1024, peak_gbps=100.0) == pytest.approx(100.0)
    # the points two H200s measured (2026-11-28, one block per SM) within 15%: one warp of
    # 4-byte loads (128 bytes in flight per SM), 1 KiB, and the plateau past the knee
    for in_flight, measured in ((128, 43.5), (1024, 340.0), (16384, 365.0)):
        assert peer.loads_gbps(in_flight) == pytest.approx(measured, rel=0.15)


@pytest.mark.parametrize("collective, factor", [("all_reduce", lambda n: 2 * (n - 1) / n),
                                                ("all_gather", lambda n: (n - 1) / n),
                                                ("reduce_scatter", lambda n: (n - 1) / n),
                                                ("all_to_all", lambda n: (n - 1) / n),
                                                ("broadcast", lambda n: 1.0),
                                                ("reduce", lambda n: 1.0)])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_bus_bandwidth_is_nccl_tests_factor(collective, factor, n):
    assert peer.bus_bandwidth(collective, 100.0, n) == pytest.approx(100.0 * factor(n))
    assert peer.bus_bandwidth(collective, 100.0, np.int32(n)) == pytest.approx(100.0 * factor(n))


def test_two_gpus_all_reduce_bus_bandwidth_equals_algorithm_bandwidth():
    assert peer.bus_bandwidth("all_reduce", 327.0, 2) == 327.0
    assert peer.algorithm_bandwidth(1 << 30, (1 << 30) / 327e9) == pytest.approx(327.0)


@pytest.mark.parametrize("call, error, msg", [
    (lambda: peer.link_gbps(0), ValueError, r"link_gbps: links=0 is not allowed; links must be positive"),
    (lambda: peer.link_gbps(True), TypeError, r"link_gbps: links must be an int, not bool"),
    (lambda: peer.link_gbps(2, math.nan), ValueError, r"gbps_per_link=nan is not allowed"),
    (lambda: peer.link_gbps(2, "25"), TypeError, r"gbps_per_link must be a number, not str"),
    (lambda: peer.copy_seconds(-1), ValueError, r"copy_seconds: nbytes=-1 is not allowed"),
    (lambda: peer.copy_seconds(1.5), TypeError, r"copy_seconds: nbytes must be an int"),
    (lambda: peer.copy_seconds(8, gbps=0), ValueError, r"copy_seconds: gbps=0 is not allowed"),
    (lambda: peer.copy_seconds(8, start_us=-1), ValueError, r"start_us=-1 is not allowed"),
    (lambda: peer.bus_bandwidth("allreduce", 1.0, 2), ValueError,
     r"collective='allreduce' is not allowed; allowed: 'all_reduce'"),
    (lambda: peer.bus_bandwidth(None, 1.0, 2), TypeError, r"collective must be a str"),
    (lambda: peer.bus_bandwidth("all_reduce", 1.0, 1), ValueError, r"n=1 is not allowed"),
    (lambda: peer.bus_bandwidth("all_reduce", math.inf, 2), ValueError, r"algbw_gbps=inf is not allowed"),
    (lambda: peer.algorithm_bandwidth(8, 0.0), ValueError, r"seconds=0.0 is not allowed"),
])
def test_bad_arguments_are_refused_by_name(call, error, msg):
    with pytest.raises(error, match=msg):
        call()
