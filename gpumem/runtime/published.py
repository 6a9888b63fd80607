"""Published figures for the GPUs gpumem knows: vendor datasheets and papers
(``gpumem/data/published.json``), each figure with its source.

:func:`published` matches a device name (default: the running GPU's) to an
entry; an unknown GPU gives None, and whatever shows published figures says
that none are known.  Every published number gpumem prints is read here.

>>> from gpumem.runtime.published import published
>>> h100 = published("NVIDIA H100 80GB HBM3")
>>> h100.get("memory_gbps"), h100.source("memory_gbps")
(3350, 'https://www.nvidia.com/en-us/data-center/h100/ (H100 Tensor Core GPU datasheet)')
>>> h100.latency("L2 far")
(470, 500)
>>> h200 = published("NVIDIA H200")            # the H100's SM-side figures, marked
>>> h200.latency("L2 far"), h200.published_for("L2 far"), h200.latency("device memory")
((470, 500), 'H100 SXM', None)

Runtime layer: imports ``_core`` (through :mod:`.hardware`) only.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__all__ = ["Published", "published", "published_gpus", "compared_with", "REFERENCE_GPU",
           "SAME_CHIP"]

#: The entry gpumem assumes where it models without a GPU (the model's compute
#: capability, 9.0, is the H100's).
REFERENCE_GPU = "H100 SXM"


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    text = resources.files("gpumem").joinpath("data", "published.json").read_text("utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class Published:
    """One GPU's published figures.

    ``figures`` maps a figure's name (``"memory_gbps"``) to its value, ``sources``
    to the text of its source (a URL or a paper), ``units`` to its unit.
    ``latencies`` maps a level (``"L2 far"``) to ``(low, high)`` SM cycles.
    """

    key: str
    figures: dict = field(repr=False)
    sources: dict = field(repr=False)
    units: dict = field(repr=False)
    latencies: dict = field(repr=False)
    latency_sources: dict = field(repr=False)
    #: The chip (``"GH100"``), and for each figure or latency level this GPU's vendor
    #: did not publish but another GPU of the same chip did: that GPU's key.
    chip: str = ""
    borrowed: dict = field(default_factory=dict, repr=False)

    def published_for(self, name: str) -> str:
        """The GPU the figure ``name`` (or latency level) was published for: this one's
        key, or another GPU's of the same chip (:data:`SAME_CHIP`)."""
        return self.borrowed.get(name, self.key)

    def get(self, name: str, default: Any = None) -> Any:
        """The figure ``name``'s value (``default`` where it is not published)."""
        return self.figures.get(name, default)

    def source(self, name: str) -> str | None:
        """Where the figure ``name`` (or latency level) comes from."""
        return self.sources.get(name) or self.latency_sources.get(name)

    def latency(self, level: str) -> tuple[float, float] | None:
        """``(low, high)`` SM cycles of a dependent load at ``level`` (None: unpublished)."""
        return self.latencies.get(level)


#: What one GPU's figures say of another of the same chip: latencies counted in SM cycles
#: and bandwidths per clock per SM, where the SMs and caches are the same -- not device
#: memory (the H200's HBM3e is not the H100's HBM3), links or clocks.
SAME_CHIP = ("shared", "constant", "L1", "L2 near", "L2 far", "l1_bytes_per_clk_sm")


def _entry(raw: dict) -> Published:
    """``raw``'s own figures, and where it lacks one of :data:`SAME_CHIP` that another
    GPU of its chip has, that GPU's (its source saying so)."""
    own = _own(raw)
    for other in _data()["gpus"]:
        if other is raw or not raw.get("chip") or other.get("chip") != raw["chip"]:
            continue
        theirs = _own(other)
        for name in SAME_CHIP:
            if name in own.latencies or name in own.figures or name in own.borrowed:
                continue
            note = (f" -- published for the {theirs.key}, the same {raw['chip']} chip "
                    f"(same SMs and caches)")
            if name in theirs.latencies:
                own.latencies[name] = theirs.latencies[name]
                own.latency_sources[name] = theirs.latency_sources[name] + note
            elif name in theirs.figures:
                own.figures[name] = theirs.figures[name]
                own.sources[name] = theirs.sources[name] + note
            else:
                continue
            own.borrowed[name] = theirs.key
    return own


def _own(raw: dict) -> Published:
    data = _data()
    names = data["sources"]
    figures, sources, lat, lat_src = {}, {}, {}, {}
    for name, v in raw["figures"].items():
        if name == "latency_cycles":
            for level, ((lo, hi), src) in v.items():
                lat[level], lat_src[level] = (lo, hi), names[src]
            continue
        value, src = v
        figures[name] = tuple(value) if isinstance(value, list) else value
        sources[name] = names[src]
    return Published(raw["key"], figures, sources, dict(data["units"]), lat, lat_src,
                     raw.get("chip", ""))


def published_gpus() -> list[str]:
    """The keys of every GPU with published figures (``"H100 SXM"``, ...)."""
    return [g["key"] for g in _data()["gpus"]]


def published(name: str | None = None) -> Published | None:
    """The published figures of the GPU called ``name`` (a CUDA device name such as
    ``"NVIDIA H100 80GB HBM3"``, or a key of :func:`published_gpus`); default the
    running GPU's name.  None for a GPU gpumem has no figures for (or no GPU)."""
    if name is None:
        from . import device, is_available      # read at call time (tests stand in for them)

        if not is_available():
            return None
        name = device().name
    if not isinstance(name, str):
        raise TypeError(f"published: name must be a str or None, not {type(name).__name__}")
    for raw in _data()["gpus"]:
        if name.strip().lower() == raw["key"].lower() or any(
                re.search(p, name.strip(), re.IGNORECASE) for p in raw["match"]):
            return _entry(raw)
    return None


def compared_with(gpu: Any = None, fn: str = "compared_with") -> tuple[Published | None, str]:
    """The published figures to set a measurement beside, and the GPU's name: ``gpu``'s
    (a device name or a :class:`DeviceInfo`), else the running GPU's, else -- no GPU --
    the reference GPU's (the one the model assumes; its name then says so).  The
    figures are None for a GPU without published figures."""
    from . import device, is_available

    if gpu is not None and not isinstance(gpu, str) and not isinstance(
            getattr(gpu, "name", None), str):
        raise TypeError(f"{fn}: gpu must be a device name (str), a gpumem.DeviceInfo or None, "
                        f"not {type(gpu).__name__}")
    if gpu is None and is_available():
        gpu = device().name
    if gpu is None:
        return published(REFERENCE_GPU), REFERENCE_GPU + " (assumed: no GPU)"
    return published(gpu if isinstance(gpu, str) else gpu.name), \
        gpu if isinstance(gpu, str) else gpu.name
