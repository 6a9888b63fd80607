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
    assert published("H100 PCIe").latency("L1") is None


def test_without_a_gpu_the_default_is_none(no_gpu):
    assert published() is None
