"""What the report writes and prints: tables within a terminal's width, --out without
matplotlib, and report.html as one self-contained page whose figures decode (and, where
a headless Chromium is installed, render to a screenshot that is not blank)."""
from __future__ import annotations

import base64
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

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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
    text = repr(gm.variants("matmul"))
    assert max(len(line) for line in text.splitlines()) <= 100
    assert text.splitlines()[1].split() == ["family", "name", "idea", "bytes", "flops", "select"]
    assert main(["report", "--quick", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    monkeypatch.setenv("COLUMNS", "200")
    assert max(len(line) for line in repr(gm.variants("matmul")).splitlines()) > 100


# ---- --out without matplotlib --------------------------------------------------------------
def test_out_without_matplotlib_says_which_plots_it_skipped(model_mode, monkeypatch, tmp_path,
                                                            capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import matplotlib raises
    assert main(["report", "--quick", "--no-progress", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert not list(tmp_path.glob("*.png"))
    assert ("no plots: matplotlib is not installed (pip install 'gpumem[report]'); skipped "
            "memory_card.png, access_gld_efficiency.png, matmul.png") in out
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
    assert [alt for _, alt in images] == ["memory_card.png", "access_gld_efficiency.png",
                                          "matmul.png"]
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
