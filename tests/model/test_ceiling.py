"""gpumem.model.ceiling: each ceiling is the published figure times its named, sourced
overheads, figures checked by hand; bad arguments refused by name."""
import doctest

import pytest

from gpumem.model import ceiling


def test_doctests():
    assert doctest.testmod(ceiling).failed == 0


def test_pcie_by_hand():
    c = ceiling.pcie(5, 16)
    assert c.start_gbps == 64.0                             # 32 GT/s x 16 lanes / 8 bits
    assert [o.factor for o in c.overheads] == [pytest.approx(128 / 130),
                                              pytest.approx(256 / 280)]
    assert c.gbps == pytest.approx(64 * 128 / 130 * 256 / 280)
    assert ceiling.pcie(2, 8).gbps == pytest.approx(5 * 8 / 8 * 0.8 * 256 / 280)
    # the data of a read comes back in completions, whose header is 3 DW, not 4
    assert ceiling.pcie(5, 16, tlp="completion").gbps == pytest.approx(64 * 128 / 130 * 256 / 276)
    # what NVML's PCIe byte counters showed on an H200 (2026-11-29, 64 MiB pinned copies at
    # the negotiated 256-byte payload): 1.079 bytes per payload byte host -> device, 1.094
    # device -> host
    assert ceiling.tlp_bytes_per_payload_byte(256, "completion") == pytest.approx(1.079, abs=1e-3)
    assert ceiling.tlp_bytes_per_payload_byte(256, "write") == pytest.approx(1.094, abs=1e-3)
    # a larger payload carries its 24 bytes of framing further
    assert ceiling.pcie(4, 16, max_payload=512).gbps > ceiling.pcie(4, 16).gbps
    d = c.as_dict()
    assert d["GB/s"] == pytest.approx(c.gbps) and len(d["overheads"]) == 2
    assert all(o["source"] for o in d["overheads"])
    assert c.text().endswith("= 57.6 GB/s")


def test_nvlink_by_hand():
    ce, sm = ceiling.nvlink(18, 25.0, payload=256), ceiling.nvlink(18, 25.0, payload=128)
    assert ce.start_gbps == 450.0
    assert ce.gbps == pytest.approx(450 * 256 / 272)
    assert sm.gbps == pytest.approx(450 * 128 / 144)        # an SM's lines pay more headers
    both = ceiling.nvlink(18, 25.0, ways=2)
    assert both.gbps == pytest.approx(2 * ce.gbps) and both.start.endswith("both ways")


def test_clock_and_dram():
    assert ceiling.per_clock(100.0, 2000, 1500).gbps == pytest.approx(75.0)
    assert ceiling.per_clock(100.0, 2000, None).gbps == 100.0
    assert ceiling.dram(4800, 4814).gbps == pytest.approx(4814)
    assert ceiling.dram(4800, None).overheads == ()


@pytest.mark.parametrize("call, word", [
    (lambda: ceiling.pcie(0, 16), "generation"), (lambda: ceiling.pcie(6, 16), "generation"),
    (lambda: ceiling.pcie(5, 0), "lanes"), (lambda: ceiling.pcie(5, 16, max_payload=64),
                                           "max_payload"),
    (lambda: ceiling.nvlink(0, 25), "links"), (lambda: ceiling.nvlink(18, -1), "gbps_per_link"),
    (lambda: ceiling.nvlink(18, 25, payload=512), "payload"),
    (lambda: ceiling.nvlink(18, 25, ways=3), "ways"),
    (lambda: ceiling.pcie(5, 16, tlp="read"), "tlp"),
    (lambda: ceiling.tlp_bytes_per_payload_byte(64), "max_payload"),
    (lambda: ceiling.per_clock(1, 0, 1), "max_clock_mhz"),
    (lambda: ceiling.dram(float("nan"), 1), "published_gbps"),
])
def test_bad_arguments_are_refused_by_name(call, word):
    with pytest.raises((TypeError, ValueError), match=word):
        call()
