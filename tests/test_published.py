"""The published figures (gpumem/data/published.json) and their reader, without a GPU."""
from __future__ import annotations

import json
import pathlib

import pytest

import gpumem as gm
from gpumem.runtime.published import REFERENCE_GPU, published, published_gpus

DATA = pathlib.Path(gm.__file__).resolve().parent / "data" / "published.json"
NEEDED = ("sms", "l2_mb", "memory_gb", "memory_gbps", "fp32_tflops", "tf32_dense_tflops",
          "host_link", "host_link_gbps")


def test_every_gpu_has_the_figures_and_every_figure_a_source():
    doc = json.loads(DATA.read_text())
    assert {"H100 SXM", "H100 PCIe", "H200", "A100 SXM 40GB", "A100 SXM 80GB", "L40S", "L4",
            "RTX 4090"} <= set(published_gpus())
    for g in doc["gpus"]:
        for name in NEEDED:
            assert name in g["figures"], (g["key"], name)
        for name, v in g["figures"].items():
            pairs = v.values() if name == "latency_cycles" else [v]
            for value, src in pairs:
                assert src in doc["sources"], (g["key"], name, src)
                assert value is not None
    for key in published_gpus():            # every key finds its own entry
        assert published(key).key == key


@pytest.mark.parametrize("name,key,gbps", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350), ("NVIDIA H100 PCIe", "H100 PCIe", 2000),
    ("NVIDIA H200", "H200", 4800), ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB", 1555),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB", 2039), ("NVIDIA L40S", "L40S", 864),
    ("NVIDIA L4", "L4", 300), ("NVIDIA GeForce RTX 4090", "RTX 4090", 1008)])
def test_device_names_match(name, key, gbps):
    p = published(name)
    assert p.key == key and p.get("memory_gbps") == gbps
    assert p.source("memory_gbps").startswith(("http", "NVIDIA"))


def test_unknown_gpus_have_none():
    for name in ("NVIDIA H100 NVL", "Tesla T4", "NVIDIA L4X", "", "NVIDIA GeForce RTX 3090"):
        assert published(name) is None
    with pytest.raises(TypeError, match="name"):
        published(42)


def test_latencies_of_the_reference_gpu():
    p = published(REFERENCE_GPU)
    assert p.latency("L1") == (32, 40) and p.latency("L2 far") == (470, 500)
    assert p.latency("no such level") is None and "Luo" in p.source("L1")
    assert p.borrowed == {} and p.published_for("L1") == REFERENCE_GPU


# ---- a figure published for another GPU of the same chip (issue 51) ----------------------------
def test_every_gpu_names_its_chip():
    doc = json.loads(DATA.read_text())
    assert all(g.get("chip") for g in doc["gpus"])
    assert {g["key"] for g in doc["gpus"] if g["chip"] == "GH100"} == {"H100 SXM", "H100 PCIe",
                                                                      "H200"}


@pytest.mark.parametrize("name", ["NVIDIA H200", "NVIDIA H100 PCIe"])
def test_sm_side_figures_of_the_same_chip_stand_in_marked_as_such(name):
    p, ref = published(name), published(REFERENCE_GPU)
    for level in ("shared", "constant", "L1", "L2 near", "L2 far"):
        assert p.latency(level) == ref.latency(level)
        assert p.published_for(level) == "H100 SXM" != p.key
        assert p.source(level) == (ref.source(level) + " -- published for the H100 SXM, the "
                                   "same GH100 chip (same SMs and caches)")
    # not memory, links or clocks: the H200's HBM3e is not the H100's HBM3
    assert p.latency("device memory") is None
    assert p.get("memory_gbps") != ref.get("memory_gbps")
    assert p.published_for("memory_gbps") == p.key


def test_a_figure_of_its_own_is_never_replaced():
    pcie = published("H100 PCIe")          # publishes its own L1 bytes per clock
    assert pcie.get("l1_bytes_per_clk_sm") == 128 and "l1_bytes_per_clk_sm" not in pcie.borrowed
    assert published("H200").published_for("l1_bytes_per_clk_sm") == "H100 SXM"
    for key in ("A100 SXM 80GB", "L40S", "L4", "RTX 4090"):   # no one of their chips publishes
        assert published(key).borrowed == {} and published(key).latency("L1") is None


def test_the_card_names_the_gpu_a_figure_was_published_for():
    from gpumem.tools import card

    h200 = published("NVIDIA H200")
    row = card.card_row("L2 far", "ladder", cycles=520.0, **card.published_latency(h200, "L2 far"))
    assert row["published"] == "470-500 cyc (H100 SXM)"
    assert row["cycles_ratio"] == pytest.approx(520 / 485)
    assert "same GH100 chip" in row["source"]
    own = card.card_row("L2 far", "ladder", **card.published_latency(published(REFERENCE_GPU),
                                                                      "L2 far"))
    assert own["published"] == "470-500 cyc"
    assert card.published_for(None, "L1") == {}


def test_without_a_gpu_the_default_is_none(no_gpu):
    assert published() is None
