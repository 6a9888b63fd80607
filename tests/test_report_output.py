"""What the report writes and prints: tables within a terminal's width, --out without
matplotlib, and report.html as one self-contained page whose figures decode (and, where
a headless Chromium is installed, render to a screenshot that is not blank)."""
from __future__ import annotations

import base64
import importlib
import re
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

import gpumem as gm
from gpumem import report
from gpumem.__main__ import main

#: It reads counters, runs child processes that do, or times whole commands: under
#: pytest-xdist it runs in gpu-check's one-process-per-GPU phase (conftest.py).
pytestmark = pytest.mark.alone

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The lesson module whose chases and reads the card's figure draws (report.card_curves).
CHASES = importlib.import_module(report.latency_ladder.__module__)


def quick_plots() -> list[str]:
    """The plots ``gpumem report --quick --out`` writes without a GPU."""
    return report.plot_names(report.headlines(measure=False, quick=True),
                             report.card(measure=False, quick=True))


@pytest.fixture
def model_mode(monkeypatch):
    monkeypatch.setattr(report, "no_gpu_reason", lambda: "forced by the test")
    monkeypatch.setattr(gm.runtime, "is_available", lambda: False)


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG, each CRC checked (no imaging library needed)."""
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    chunks, pos = [], 8
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            break
    return chunks


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated image data (filter bytes included) of a PNG."""
    chunks = png_chunks(data)
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height = struct.unpack(">II", chunks[0][1][:8])
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    return width, height, raw


# ---- tables within a terminal's width -----------------------------------------------------
def test_a_wide_table_wraps_to_the_width_and_keeps_every_word():
    idea = "a long explanation of what this kernel does " * 4
    t = gm.Table([{"name": "naive", "idea": idea, "bytes": 1024},
                  {"name": "tiled", "idea": "short", "bytes": 4096}], title="variants " * 20)
    for width in (40, 60, 100):
        text = t.to_text(width)
        assert max(len(line) for line in text.splitlines()) <= width
        assert " ".join(text.split()).count("explanation") == 4
    one_line = t.to_text(0)
    assert len(one_line.splitlines()) == 1 + 4      # title, header, rule, two rows
    assert idea.strip() in t.to_markdown()            # the full form keeps every cell whole
    with pytest.raises(TypeError, match="width"):
        t.to_text(-1)


def test_listings_and_the_report_print_within_the_terminal(monkeypatch, model_mode, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    text = repr(gm.variants())
    assert max(len(line) for line in text.splitlines()) <= 100
    # a formula such as 16*(smem/16)*passes*cluster*clusters is never broken: the columns
    # right of the prose that do not fit whole are left out, and the note says which
    assert text.splitlines()[1].split() == ["family", "name", "idea"]
    assert text.splitlines()[-1] == ("(columns left out, to fit 100 characters: bytes, flops, "
                                     "select; to_text(0) shows them)")
    assert main(["report", "--quick", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    monkeypatch.setenv("COLUMNS", "200")
    assert max(len(line) for line in repr(gm.variants()).splitlines()) > 100


# ---- --out without matplotlib --------------------------------------------------------------
def test_out_without_matplotlib_says_which_plots_it_skipped(model_mode, monkeypatch, tmp_path,
                                                            capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import matplotlib raises
    assert main(["report", "--quick", "--no-progress", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert not list(tmp_path.glob("*.png"))
    names = quick_plots()
    assert names[0] == "memory_card.png" and len(names) > 1
    assert ("no plots: matplotlib is not installed (pip install 'gpumem-lab[report]'); skipped "
            + ", ".join(names)) in out
    assert "<img" not in (tmp_path / "report.html").read_text()


# ---- the HTML page ---------------------------------------------------------------------------
@pytest.fixture
def page(model_mode, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["report", "--quick", "--no-progress", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    return tmp_path / "report.html"


def test_the_page_is_self_contained_and_every_figure_decodes(page):
    text = page.read_text(encoding="utf-8")
    # nothing fetched: no link, no script, no file beside it
    assert not re.search(r"(src|href)=\"(?!data:)", text) and "<script" not in text
    assert "http" not in text
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]+)"', text)
    assert [alt for _, alt in images] == quick_plots()
    for b64, alt in images:
        data = base64.b64decode(b64, validate=True)
        assert data == (page.parent / alt).read_bytes()
        width, height, raw = png_pixels(data)
        assert width > 100 and height > 100 and len(set(raw)) > 8, alt   # a picture, not a fill
        mpimg = pytest.importorskip("matplotlib.image")
        import io
        assert mpimg.imread(io.BytesIO(data), format="png").shape[:2] == (height, width)


CHROMIUM = next((c for c in ("chromium", "chromium-browser") if shutil.which(c)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium here (Debian: apt-get "
                                             "install chromium)")
def test_chromium_renders_the_page_offline(page, tmp_path):
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    width, height, raw = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    # not blank: many distinct byte values (text, table rules and figures), not one colour
    assert len(set(raw)) > 16 and raw.count(raw[1:2]) < 0.98 * len(raw)


# ---- the memory card's figure: latency and bandwidth against working set ---------------------
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def test_the_card_figure_without_a_gpu_draws_the_published_levels():
    fig = report.card_figure(report.card(measure=False), None, "H100 SXM")
    assert not fig["measured"] and fig["latency"] == [] and fig["bandwidth"] == []
    assert fig["title"].startswith("no GPU, nothing measured: the published figures of the "
                                   "H100 SXM")
    # the cache sizes from the card's rows: unified L1 + shared of cc 9.0, half the L2, the L2
    assert [x for x, _ in fig["lines"]] == [256 * KiB, 25 * MiB, 50 * MiB]
    assert [label for _, label in fig["lines"]] == ["L1 + shared per SM: 256 KiB",
                                                    "half the L2: 25 MiB", "L2: 50 MiB"]
    # the axis reaches down to the constant row's 1 KiB ring: every card row is on it
    assert fig["x_range"] == (1 * KiB, 1 * GiB)
    assert fig["latency_bands"] == [("L1", 1 * KiB, 256 * KiB, 32.0, 40.0),
                                    ("L2 near", 256 * KiB, 25 * MiB, 220.0, 265.0),
                                    ("L2 far", 25 * MiB, 50 * MiB, 470.0, 500.0),
                                    ("device memory", 50 * MiB, 1 * GiB, 570.0, 860.0)]
    assert fig["bandwidth_bands"] == [("device memory", 50 * MiB, 1 * GiB, 3350.0, 3350.0)]
    assert fig["bandwidth_notes"] == [(16 * KiB, "L1: 128 B/clk/SM published")]
    assert [name for _, name in fig["levels"]] == ["L1", "L2 near", "L2 far", "device memory"]
    assert fig["levels"][0][0] == pytest.approx(16 * KiB)       # the middle of 1..256 KiB, log2
    # each card row with a ring or a read and a figure is a point: (panel, level, bytes,
    # measured, path, published, ceiling); nothing measured, the published figure stands
    pts = {(p[0], p[1]): p[2:] for p in fig["points"]}
    assert pts[("latency", "constant")] == (1 * KiB, None, "constant", 19.0, None)
    assert pts[("latency", "shared")] == (16 * KiB, None, "shared", 29.5, None)
    assert pts[("latency", "L1")][2] == "L1" and pts[("latency", "L2 far")][2] == "L2"
    assert pts[("bandwidth", "device memory")] == (1 * GiB, None, "L2", 3350.0, None)
    assert ("latency", "L2 near, TMA") not in pts           # no published figure, no GPU
    # one colour per path in both panels
    assert {report.PATH_COLOURS[p[4]] for p in fig["points"] if p[4] == "L1"} == {"C0"}


def ladder_tables():
    """Ladder tables as latency_ladder and bandwidth_ladder give them: rows in plan order,
    one row unmeasured (None), the working sets not sorted within a path."""
    lat = gm.Table([
        {"working set": 4 * MiB, "variant": "ca", "cycles/load": 262.5},
        {"working set": 12 * KiB, "variant": "ca", "cycles/load": 33.25},
        {"working set": 3 * GiB // 4, "variant": "ca", "cycles/load": 701.0},
        {"working set": 40 * MiB, "variant": "ca", "cycles/load": None},
        {"working set": 40 * KiB, "variant": "shared", "cycles/load": 29.5},
        {"working set": 8 * KiB, "variant": "shared", "cycles/load": 30.5}])
    bw = gm.Table([
        {"working set": 48 * KiB, "variant": "shared", "scope": "block", "GB/s": 31000.0},
        {"working set": 96 * KiB, "variant": "read", "scope": "block", "GB/s": 24000.5},
        {"working set": 1 * MiB, "variant": "read", "scope": "block", "GB/s": 7100.0},
        {"working set": 1 * MiB, "variant": "read", "scope": "grid", "GB/s": 6900.0},
        {"working set": 512 * MiB, "variant": "read", "scope": "grid", "GB/s": 3001.0}])
    return {"latency": lat, "bandwidth": bw}


def test_the_card_figure_draws_each_measured_path_sorted_by_working_set():
    fig = report.card_figure(report.card(measure=False), ladder_tables(), "Some GPU")
    assert fig["measured"] and fig["title"].startswith("Some GPU: latency and bandwidth")
    lat = {label: (xs, ys) for label, xs, ys, _ in fig["latency"]}
    assert lat == {"global, ld.ca: L1, L2, device memory": ([12 * KiB, 4 * MiB, 3 * GiB // 4],
                                                           [33.25, 262.5, 701.0]),
                   "shared memory": ([8 * KiB, 40 * KiB], [30.5, 29.5])}
    bw = {label: (xs, ys) for label, xs, ys, _ in fig["bandwidth"]}
    assert bw["read, each SM its own copy (scope=block)"] == ([96 * KiB, 1 * MiB],
                                                              [24000.5, 7100.0])
    assert bw["read once by the whole grid (scope=grid)"] == ([1 * MiB, 512 * MiB],
                                                              [6900.0, 3001.0])
    assert bw["shared memory, each SM its own copy"] == ([48 * KiB], [31000.0])
    # the axis spans the working sets measured and the card's rows; the published bands
    # fill it
    # (the constant row's 1 KiB ring, device memory's 1 GiB read)
    assert fig["x_range"] == (1 * KiB, 1 * GiB)
    assert fig["latency_bands"][0][1:3] == (1 * KiB, 256 * KiB)
    # a path keeps its colour across the panels: ld.ca's chase and the per-SM read are L1's
    paths = {label: path for label, _, _, path in fig["latency"] + fig["bandwidth"]}
    assert paths["global, ld.ca: L1, L2, device memory"] == \
        paths["read, each SM its own copy (scope=block)"] == "L1"
    assert paths["shared memory"] == paths["shared memory, each SM its own copy"] == "shared"
    assert paths["read once by the whole grid (scope=grid)"] == "L2"
    assert fig["latency_bands"][-1][1:3] == (50 * MiB, 1 * GiB)


def test_card_curves_run_the_ladders_sweeps_on_the_figures_sets(monkeypatch):
    calls = []
    monkeypatch.setattr(report, "latency_ladder", lambda sets, **kw: calls.append(
        ("latency", tuple(sets), kw)) or "lat")
    monkeypatch.setattr(report, "bandwidth_ladder", lambda sets, **kw: calls.append(
        ("bandwidth", tuple(sets), kw)) or "bw")
    assert report.card_curves(measure=False) is None and calls == []
    assert report.card_curves(measure=True, quick=True) == {"latency": "lat", "bandwidth": "bw"}
    (_, lsets, lkw), (_, bsets, bkw) = calls
    assert lsets == report.CURVE_LATENCY_SETS[True] and lkw["steps"] == 2048
    assert lkw["variants"] == ("ca", "shared", "constant")
    assert bsets == report.CURVE_BANDWIDTH_SETS[True] and bkw["anchor"] is False
    assert bkw["variants"] == ("shared", "read") and bkw["repeat"] == 3
    calls.clear()
    report.card_curves(measure=True)
    assert calls[0][1] == report.CURVE_LATENCY_SETS[False] and calls[0][2]["steps"] == 8192
    assert "cg" in calls[0][2]["variants"] and calls[1][2]["repeat"] == 5
    # the figure's rings reach past the L2 of every GPU gpumem knows, and fit the kernel
    from gpumem.runtime.published import published, published_gpus
    l2 = max(published(g).get("l2_mb") for g in published_gpus()) * 10**6
    for quick in (False, True):
        assert 2 * l2 <= max(report.CURVE_LATENCY_SETS[quick]) <= CHASES.MAX_WORKING_SET
        assert 2 * l2 <= max(report.CURVE_BANDWIDTH_SETS[quick])
    with pytest.raises(TypeError, match="quick"):
        report.card_curves(quick="yes")


def test_the_card_figure_is_drawn_from_the_curves(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(report, "card_curves", lambda measure, quick: ladder_tables())
    monkeypatch.setattr(gm.runtime, "device", lambda: type("D", (), {"name": "Some GPU"})())
    monkeypatch.setattr(report, "offset_sweep", lambda *a, **kw: gm.Table(
        [{"offset": 0, "gld_efficiency": 100.0}]))
    card = report.card(measure=False)
    names = report.plot([], str(tmp_path), measure=True, quick=True, card=card)
    assert names == report.plot_names([], card) and names[0] == "memory_card.png"
    assert all((tmp_path / n).read_bytes()[:8] == PNG_SIGNATURE for n in names) and len(names) > 1
    width, height, raw = png_pixels((tmp_path / "memory_card.png").read_bytes())
    assert (width, height) == (1000, 750) and len(set(raw)) > 8
