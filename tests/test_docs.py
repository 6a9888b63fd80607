"""Every link and image of every Markdown file in the repository leads somewhere: a file
that exists beside it (images included), and a heading of the page it names after ``#``.
Web addresses are not followed (no network here)."""
from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: [text](target) and ![alt](target "title"); the target up to a space or ')'.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _markdown_files() -> list[pathlib.Path]:
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return []
    return [ROOT / f for f in out]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (not - or _), spaces
    to hyphens."""
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: pathlib.Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        out.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return out


def _links(page: pathlib.Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


FILES = _markdown_files()


def test_the_repository_has_markdown_files():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an installed wheel's tests)")
    assert ROOT / "README.md" in FILES


@pytest.mark.parametrize("page", FILES, ids=[str(f.relative_to(ROOT)) for f in FILES])
def test_every_link_and_image_leads_somewhere(page):
    bad = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):        # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading '#{anchor}' in {dest.relative_to(ROOT)}")
    assert not bad, f"{page.relative_to(ROOT)}:\n" + "\n".join(bad)


def test_the_checker_sees_a_missing_image_and_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# One `two`: three\n\n![x](gone.png) [y](a.md#one-two-three)"
                                   " [z](a.md#four)\n```\n[not](a link)\n```\n")
    links = _links(tmp_path / "a.md")
    assert links == ["gone.png", "a.md#one-two-three", "a.md#four"]
    assert _anchors(tmp_path / "a.md") == {"one-two-three"}
