"""Table.to_text within a width: no cell broken, no line wider than the width, the
columns left out named in one note, the same alignment at every width.

Every table here is a real one in model mode (no GPU needed): each lesson's full
sweeps (``gpumem report --lesson``), the memory card and the variants listing.
"""
from __future__ import annotations

import numbers
import re
import textwrap

import pytest

import gpumem as gm
from gpumem import report

WIDTHS = (60, 80, 100, 120)
NOTE = re.compile(r"\(columns left out, (?:no values: (?P<empty>.+?))?(?:; )?"
                  r"(?:to fit (?P<width>\d+) characters: (?P<cut>.+?); to_text\(0\) shows them)?\)")


def _tables() -> dict[str, gm.Table]:
    """Every lesson's sweeps, the card and the variants listing as on a machine without a
    GPU (built at collection: on a GPU machine nothing may measure or profile here)."""
    from unittest import mock

    tables = {}
    with mock.patch.object(gm.runtime, "is_available", lambda: False), \
            mock.patch.object(report, "no_gpu_reason", lambda: "the tables' test"):
        for lesson in report.SWEEPS:
            for k, t in enumerate(report.sweeps(lesson, measure=False, quick=True)):
                tables[f"{lesson}[{k}]"] = t
        tables["card"] = report.card_table(report.card(measure=False, quick=True),
                                           report.card_title(False))
    tables["variants"] = gm.variants().table()
    return tables


TABLES = _tables()


def header(t: gm.Table, c: str) -> str:
    src = t.sources.get(c)
    return f"{c} [{src}]" if src else c


def is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and \
        type(v).__name__ != "bool_"


def header_broken_only_between_words(pieces: list[str], text: str) -> bool:
    """Whether ``pieces`` (a header's lines in one column) are ``text`` broken only at
    its spaces or after an underscore or a slash."""
    pos = 0
    for k, piece in enumerate(pieces):
        if not text.startswith(piece, pos):
            return False
        pos += len(piece)
        if k + 1 < len(pieces):
            if text[pos:pos + 1] == " ":
                pos += 1
            elif not piece.endswith(("_", "/")):
                return False
    return pos == len(text)


def layout(t: gm.Table, width: int) -> dict:
    """Parse ``t.to_text(width)`` and check it on the way: every line within the width,
    each kept column's header and every cell whole in its own place (a cell of several
    words may wrap at its spaces, nothing else), the note naming the columns left out.
    Returns the kept columns, the ones left out (empty and cut) and each cell's side."""
    text = t.to_text(width)
    lines = text.splitlines()
    if width:
        assert max(len(line) for line in lines) <= width, (width, text)
    n_title = len(textwrap.wrap(t.title, width, break_on_hyphens=False)) if width else 1
    if t.title:
        assert " ".join(lines[:n_title]).split() == t.title.split()
    else:
        n_title = 0
    rule_at = next(i for i, line in enumerate(lines) if re.fullmatch(r"-+(  -+)*", line))
    spans = [m.span() for m in re.finditer(r"-+", lines[rule_at])]
    note_at = next((i for i, line in enumerate(lines)
                    if i > rule_at and line.startswith("(columns left out")), len(lines))

    def check_gaps(line: str) -> None:
        # nothing outside the columns' places
        outside = "".join(ch for x, ch in enumerate(line)
                          if not any(a <= x < b for a, b in spans))
        assert not outside.strip(), (width, line)

    # the headers: which columns are kept, each header broken only between words
    by_header = {header(t, c): c for c in t.columns}
    kept = []
    for a, b in spans:
        pieces = [line[a:b].strip() for line in lines[n_title:rule_at] if line[a:b].strip()]
        found = [h for h in by_header if header_broken_only_between_words(pieces, h)]
        assert len(found) == 1, (width, pieces)
        kept.append(by_header[found[0]])
    for line in lines[n_title:rule_at]:
        check_gaps(line)
    assert len(set(kept)) == len(kept)
    assert kept == [c for c in t.columns if c in kept], "kept columns keep their order"

    # the rows: every cell whole on its row's line (several words: wrapped at spaces)
    cells = t._cells()
    body = lines[rule_at + 1:note_at]
    sides: dict[str, set] = {c: set() for c in kept}
    pos = 0
    for k, row in enumerate(t.rows):
        want = {c: cells[k][t.columns.index(c)] for c in kept}
        for h in range(1, len(body) - pos + 1):
            block = body[pos:pos + h]
            got = {c: " ".join(line[a:b].strip() for line in block if line[a:b].strip())
                   for c, (a, b) in zip(kept, spans)}
            if all(got[c] == " ".join(want[c].split()) for c in kept):
                break
        else:
            raise AssertionError(f"width {width}: row {k} {want} is not whole in {body[pos:]}")
        for line in block:
            check_gaps(line)
        for c, (a, b) in zip(kept, spans):
            cell = want[c]
            if len(cell.split()) <= 1:          # one word (a number, a name): one line, whole
                assert block[0][a:b].strip() == cell, (width, c, block)
                assert all(not line[a:b].strip() for line in block[1:]), (width, c, block)
            first = block[0][a:b].ljust(b - a)
            if cell and len(first.strip()) < b - a:
                sides[c].add("right" if first == first.strip().rjust(b - a) else "left")
            if cell and is_number(row.get(c)):
                assert first == cell.rjust(b - a), f"width {width}: {c}={cell!r} not right-aligned"
        pos += h
    assert pos == len(body), f"width {width}: lines left after the rows: {body[pos:]}"

    # the note: exactly the columns left out, and why
    empty = [c for c in t.columns if t.rows and all(r.get(c) in (None, "") for r in t.rows)]
    assert not set(empty) & set(kept), f"width {width}: columns with no values shown"
    left_out = [c for c in t.columns if c not in kept]
    if not left_out:
        assert note_at == len(lines), lines[note_at:]
        return {"kept": kept, "empty": [], "cut": [], "sides": sides}
    note = " ".join(lines[note_at:])
    m = NOTE.fullmatch(note)
    assert m, note
    named_empty = m["empty"].split(", ") if m["empty"] else []
    named_cut = m["cut"].split(", ") if m["cut"] else []
    assert named_empty == empty, (width, note)
    assert named_cut == [c for c in t.columns if c in named_cut], "in the columns' order"
    assert sorted(named_empty + named_cut) == sorted(left_out), (width, note, kept)
    if named_cut:
        assert width and int(m["width"]) == width
        # cut from the right-hand end: the first column stays, the cut ones are the last
        full = [c for c in t.columns if c not in empty]
        assert full[0] in kept and named_cut == full[len(full) - len(named_cut):], note
    return {"kept": kept, "empty": named_empty, "cut": named_cut, "sides": sides}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_real_tables_fit_every_width_and_keep_every_value_whole(name):
    t = TABLES[name]
    assert t.rows, name
    found = {w: layout(t, w) for w in WIDTHS + (0,)}
    # no limit: every column with values, nothing cut
    assert found[0]["cut"] == [] and found[0]["kept"] == \
        [c for c in t.columns if c not in found[0]["empty"]]
    # a wider table leaves out no more than a narrower one
    for narrow, wide in zip(WIDTHS, WIDTHS[1:]):
        assert len(found[wide]["cut"]) <= len(found[narrow]["cut"]), name
    # each column on the same side at every width
    for c in t.columns:
        seen = set().union(*(f["sides"].get(c, set()) for f in found.values()))
        assert len(seen) <= 1, (name, c, seen)


def test_the_access_sweep_of_the_issue():
    # `gpumem report --lesson access | cat` at 100 columns printed 4,194,30 / 4 and
    # read_off / set; at 80 the table was 101 wide (without a GPU: its empty ms and GB/s)
    t = TABLES["access[0]"]
    at = {w: layout(t, w) for w in (80, 100)}
    for w, found in at.items():
        assert found["empty"] == ["ms", "GB/s"]
        assert found["kept"][:4] == ["kernel", "unroll", "cache", "offset"]
        text = t.to_text(w)
        assert "read_offset" in text and "read_off\n" not in text
        assert all(f"{v:,}" in text for v in t["gld_transactions"])
    assert at[80]["cut"] == ["gst_efficiency", "gst_transactions", "gst_requests"]
    assert at[100]["cut"] == ["gst_requests"]
    assert t.to_text(80).splitlines()[-2:] == [
        "(columns left out, no values: ms, GB/s; to fit 80 characters: gst_efficiency,",
        "gst_transactions, gst_requests; to_text(0) shows them)"]


def test_empty_columns_are_left_out_even_where_they_fit():
    t = gm.Table([{"n": 1, "ms": None, "what": "a b"}, {"n": 2, "what": "c"}],
                 sources={"ms": "measured"})
    for width in (0, 40, 200):
        lines = t.to_text(width).splitlines()
        assert lines[0].split() == ["n", "what"]
        assert lines[-1] == "(columns left out, no values: ms)"
    # every column empty: only the note; no rows: every column's header
    assert gm.Table([{"a": None}]).to_text(80) == "(columns left out, no values: a)"
    assert gm.Table([], columns=["a", "bb"]).to_text(80).splitlines() == ["a  bb", "-  --"]
    assert gm.Table([]).to_text(80) == ""


def test_headers_wrap_between_words_and_numbers_never_break():
    t = gm.Table([{"kernel": "read_offset", "gld_efficiency": 100.0, "n": 4194304}],
                 sources={"gld_efficiency": "model"})
    assert t.to_text(0).splitlines() == [
        "kernel       gld_efficiency [model]          n",
        "-----------  ----------------------  ---------",
        "read_offset                     100  4,194,304"]
    assert t.to_text(38).splitlines() == [
        "kernel       gld_efficiency          n",
        "                    [model]",
        "-----------  --------------  ---------",
        "read_offset             100  4,194,304"]
    assert t.to_text(34).splitlines() == [
        "kernel             gld_          n",
        "             efficiency",
        "                [model]",
        "-----------  ----------  ---------",
        "read_offset         100  4,194,304"]
    # no room for n whole: it is left out, never broken
    lines = t.to_text(30).splitlines()
    assert lines[:4] == ["kernel       gld_efficiency", "                    [model]",
                         "-----------  --------------", "read_offset             100"]
    assert " ".join(lines[4:]) == "(columns left out, to fit 30 characters: n; to_text(0) " \
                                  "shows them)"
    assert max(len(line) for line in lines) <= 30


def test_a_width_below_the_first_column_still_bounds_every_line():
    # the last resort: the first column is kept, and broken to the width
    t = gm.Table([{"name": "a_very_long_kernel_name", "n": 1}])
    for width in (1, 5, 10, 20):
        assert max(len(line) for line in t.to_text(width).splitlines()) <= width


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_the_headline_text_never_cuts_a_word(width):
    """gpumem report's headline table at any width: every word of every cell (numbers such as
    4,194,304, names such as gld_efficiency) is on one line, whole."""
    from gpumem import report
    rows = report.headlines(measure=False)
    text = report.as_text(rows, width=width)
    printed = set(text.split())
    for r in rows:
        for key in report.COLUMNS:
            for word in str(r.get(key, "")).split():
                assert word in printed, (width, key, word)
