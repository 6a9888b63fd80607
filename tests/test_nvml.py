"""gpumem.runtime.nvml: the run's conditions and the NVLink byte counters, read from NVML at
run time.  Without NVML (or a GPU) every figure is None, never an exception; bad arguments
are refused by name; on a GPU the figures agree with CUDA's own, and across a copy between
two GPUs the link counters grow by at least the bytes copied, with raw >= data."""
import os

import numpy as np
import pytest

import gpumem as gm
from gpumem.runtime import nvml

N_GPUS = gm.device_count()


@pytest.mark.parametrize("bad, err", [(-1, ValueError), (10 ** 6, ValueError),
                                      ("0", TypeError), (True, TypeError), (1.0, TypeError)])
def test_a_wrong_device_is_refused_by_name(bad, err):
    for call in (lambda: nvml.conditions(bad), lambda: nvml.nvlink_bytes(bad),
                 lambda: nvml.LinkBytes([bad])):
        with pytest.raises(err, match=r"device="):
            call()


def test_overhead_refuses_a_wrong_way():
    with pytest.raises(ValueError, match=r"way='up'"):
        nvml.LinkBytes([]).overhead(0, "up")
    with pytest.raises(ValueError, match=r"link='usb'"):
        nvml.LinkBytes([], link="usb")


@pytest.mark.parametrize("before, after, want", [
    (10, 25, 15), (0, 0, 0),
    ((1 << 32) - 100, 50, 150),                  # a 32-bit counter wrapped once
    (3_900_000_000, 3_900_000_000 + 738_197_504 - (1 << 32), 738_197_504),  # the card's 11 x 64 MiB
    (1 << 40, 5, None), (1 << 33, (1 << 33) - 1, None)])   # a 64-bit counter reset: unknown
def test_a_counter_that_wraps_still_counts(before, after, want):
    assert nvml._grown(before, after) == want


def test_link_bytes_read_across_a_wrap(monkeypatch):
    """LinkBytes over a PCIe counter that wraps inside the block: the bytes that crossed,
    not a negative count; a reset counter makes the whole device's bytes unknown."""
    reads = iter([{"tx": (1 << 32) - 1000, "rx": 7}, {"tx": 24, "rx": 1007},
                  {"tx": 1 << 40, "rx": 0}, {"tx": 3, "rx": 0}])
    monkeypatch.setattr(nvml, "pcie_bytes", lambda d=None: next(reads))
    monkeypatch.setattr(nvml, "_device", lambda fn, d: d)
    for want in ({"tx": 1024, "rx": 1000}, None):
        moved = nvml.LinkBytes([0], link="pcie")
        with moved:
            pass
        assert moved.bytes[0] == want


@pytest.mark.parametrize("field, want", [(0, 128), (1, 256), (2, 512), (5, 4096)])
def test_max_payload_is_read_from_the_pcie_capability(tmp_path, field, want):
    """A configuration space with a power-management capability at 0x40 pointing on to the
    PCI Express capability at 0x60, whose Device Control (0x68) holds the payload field."""
    cfg = bytearray(256)
    cfg[0x34] = 0x40
    cfg[0x40:0x42] = bytes([0x01, 0x60])          # PM capability, next at 0x60
    cfg[0x60:0x62] = bytes([0x10, 0x00])          # PCI Express capability, last
    cfg[0x68:0x6A] = (field << 5 | 0x1F).to_bytes(2, "little")   # other bits set too
    (tmp_path / "0000:19:00.0").mkdir()
    (tmp_path / "0000:19:00.0" / "config").write_bytes(bytes(cfg))
    assert nvml._max_payload("0000:19:00.0", root=str(tmp_path)) == want
    (tmp_path / "0000:19:00.0" / "config").write_bytes(bytes(cfg[:64]))   # unprivileged
    assert nvml._max_payload("0000:19:00.0", root=str(tmp_path)) is None
    assert nvml._max_payload("0000:99:00.0", root=str(tmp_path)) is None  # no such device
    cfg[0x61] = 0x40                              # a loop in the list ends, unknown
    cfg[0x60] = 0x05
    (tmp_path / "0000:19:00.0" / "config").write_bytes(bytes(cfg))
    assert nvml._max_payload("0000:19:00.0", root=str(tmp_path)) is None


def test_without_nvml_every_figure_is_unknown(monkeypatch):
    monkeypatch.setattr(nvml, "_lib", None)
    monkeypatch.setattr(nvml, "_handles", {})
    monkeypatch.setenv("GPUMEM_NVML", "/nonexistent/libnvidia-ml.so.1")
    assert nvml.available() is False
    c = nvml.conditions(0) if N_GPUS else nvml.conditions()
    assert c["nvml"] is False
    assert all(v is None for k, v in c.items() if k not in ("nvml", "pcie_max_payload")), c
    if N_GPUS:
        assert nvml.nvlink_bytes(0) is None
        with nvml.LinkBytes([0]) as moved:
            pass
        assert moved.bytes == {0: None} and moved.overhead(0) is None
    # the fake GPU of the report's tests says the same
    from _fake_gpu import FakeGPU
    assert set(FakeGPU.NO_NVML) == set(c) and FakeGPU.NO_NVML["nvml"] is False
    monkeypatch.setattr(nvml, "_lib", None)      # the next test loads the real one again


@pytest.mark.gpu
def test_conditions_agree_with_cuda():
    if not nvml.available():
        # the driver ships libnvidia-ml: on a GPU run a missing NVML is a failure
        if os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0"):
            pytest.fail("GPUMEM_REQUIRE_GPU=1 but NVML does not load")
        pytest.skip("NVML does not load here")
    for d in range(N_GPUS):
        c = nvml.conditions(d)
        info = gm.device(d)
        assert c["nvml"] is True
        assert 0 < c["sm_clock_mhz"] <= c["max_sm_clock_mhz"]
        # CUDA's peak SM clock is NVML's maximum (both in MHz, to the MHz)
        assert c["max_sm_clock_mhz"] == pytest.approx(info.clock_khz / 1000, abs=1)
        assert c["max_memory_clock_mhz"] == pytest.approx(info.memory_clock_khz / 1000, abs=1)
        assert c["ecc"] in (True, False) and c["persistence_mode"] in (True, False)
        assert c["power_limit_w"] > 50
        major = int(c["driver"].split(".")[0])
        assert major * 1000 >= info.driver_version[0] * 1000 - 1000     # same driver family
        assert c["pcie_generation"] >= 1 and c["pcie_width"] >= 1
        assert isinstance(c["clock_event_reasons"], list)
        assert c["pcie_max_payload"] in (None, 128, 256, 512, 1024, 2048, 4096)


@pytest.mark.gpu
@pytest.mark.all_gpus
def test_link_counters_see_a_copy_between_gpus():
    """1 GiB copied GPU a -> b by the copy engine: a's payload sent and b's payload received
    both grow by at least 1 GiB (the counters also see other traffic, never less), and by
    less than twice it; each raw count is at least its payload count."""
    from gpumem.lessons import peer
    need = int(os.environ.get("GPUMEM_REQUIRE_GPUS", "0") or 0)
    pairs = peer.peer_pairs()
    if not pairs:
        if need >= 2:
            pytest.fail(f"GPUMEM_REQUIRE_GPUS={need} but no peer pair here")
        pytest.skip("needs two GPUs with peer access")
    if not nvml.available() or nvml.nvlink_bytes(pairs[0][0]) is None:
        if need >= 2:        # GPUs joined by NVLink count their bytes (H100, H200)
            pytest.fail(f"GPUMEM_REQUIRE_GPUS={need} but NVML gives no NVLink counters")
        pytest.skip("NVML gives no NVLink counters here")
    a, b = pairs[0]
    nbytes = 1 << 30
    gm.enable_peer_access(a, b)
    gm.enable_peer_access(b, a)
    src = gm.to_device(np.ones(nbytes // 4, np.float32), device=a)
    dst = gm.empty((nbytes // 4,), np.float32, device=b)
    gm.synchronize()
    with nvml.LinkBytes([a, b]) as moved:
        gm._core._peer_memcpy(dst, src, repeat=1, warmup=0)
        gm.synchronize()
    sent, got = moved.bytes[a], moved.bytes[b]
    slack = 18 * 2 * 1024            # each link's count is whole KiB, read twice
    assert nbytes - slack <= sent["data_tx"] < 2 * nbytes, sent
    assert nbytes - slack <= got["data_rx"] < 2 * nbytes, got
    # the copy engine's 256-byte packets, each with a 16-byte header (the model's 1.0625;
    # 1.064 measured on two H200s, 2026-11-29), within 2%
    from gpumem.model import peer as pm
    want = pm.link_bytes(nbytes, payload=pm.COPY_PAYLOAD) / nbytes
    assert moved.overhead(a, "tx") == pytest.approx(want, rel=0.02)
    assert moved.overhead(b, "rx") == pytest.approx(want, rel=0.02)
    del src, dst
    for g in (a, b):
        gm.empty_cache(device=g)
