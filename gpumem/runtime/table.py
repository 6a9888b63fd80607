"""Table: the result of an experiment, a sweep or a profile.

A small class on purpose: rows are dicts, columns keep their order, and each
column may say where its numbers come from (``"measured"`` from the GPU's
events or counters, ``"model"`` from :mod:`gpumem.model`).
"""
from __future__ import annotations

import math
import numbers
import re
import shutil
import textwrap
from typing import Any, Iterable, Mapping, Sequence

from .args import _iterable

#: Significant digits of the floats in a printed column.
SIGNIFICANT = 4
#: The width a printed table keeps within where no terminal says its own (characters).
DEFAULT_WIDTH = 100
#: The narrowest a wrapped column gets in :func:`_fit_widths` (characters).
MIN_WIDTH = 8
#: Text that reads as a number (right-aligned like one): "3,350", "-0.5", "2.5e+09",
#: "80%", "0.95x", "nan", "inf".
_NUMBER = re.compile(r"[-+]?((\d[\d,]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?|nan|inf)[%x]?")


def _fit_widths(natural: list[int], room: int) -> list[int]:
    """Column widths within ``room`` characters: the widest column narrowed one
    character at a time (none below :data:`MIN_WIDTH` or its natural width)."""
    widths = list(natural)
    while sum(widths) > room:
        i = max(range(len(widths)), key=lambda k: widths[k])
        if widths[i] <= MIN_WIDTH:
            break
        widths[i] -= 1
    return widths


def _narrow(natural: list[int], floors: list[int], room: int, used) -> list[int]:
    """Column widths within ``room`` characters where the floors allow it: the widest
    column that is still above its floor (the first, the rows' key, only once no other
    is) narrowed, each time to ``used(k, w)``, the characters column ``k`` takes once
    wrapped to ``w`` (one less than it has), so that a column narrows from one place
    its lines break to the next."""
    widths = list(natural)
    while sum(widths) > room:
        movable = [k for k in range(1, len(widths)) if widths[k] > floors[k]] or \
            [k for k in range(len(widths)) if widths[k] > floors[k]]
        if not movable:
            break
        i = max(movable, key=lambda k: widths[k])
        widths[i] = max(floors[i], min(widths[i] - 1, used(i, widths[i] - 1)))
    return widths


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters (long words broken)."""
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _is_prose(cell: str) -> bool:
    """A text cell of several words, which may wrap at its spaces; any other cell (a
    number, a name) is one word and is never broken."""
    return len(cell.split()) > 1


def _cell_lines(cell: str, width: int, hard: bool = False) -> list[str]:
    """A cell in lines of at most ``width`` characters: whole when it is one word (or
    fits), else wrapped at its spaces; words are broken only where ``hard`` (a column
    narrower than its longest word: the last resort of a width too small for the
    table's first column)."""
    if len(cell) <= width or not (hard or _is_prose(cell)):
        return [cell]
    return textwrap.wrap(cell, width, break_long_words=hard, break_on_hyphens=False) or [""]


def _pieces(header: str) -> list[tuple[str, str]]:
    """A header as (piece, joiner) pairs: its words, each split after its underscores
    and slashes; the joiner (" " or "") is what goes between a piece and the next one
    when they share a line."""
    out: list[tuple[str, str]] = []
    for word in header.split():
        parts = [p for p in re.split(r"(?<=[_/])", word) if p]
        out += [(p, "") for p in parts[:-1]] + [(parts[-1], " ")]
    return out


def _header_floor(header: str) -> int:
    """The narrowest a header can wrap to (its longest piece)."""
    return max((len(p) for p, _ in _pieces(header)), default=0)


def _header_lines(header: str, width: int, hard: bool = False) -> list[str]:
    """A header in lines of at most ``width`` characters, broken only between words,
    after an underscore or after a slash (so "gld_efficiency [model]" gives
    "gld_efficiency" and "[model]", then "gld_", "efficiency" and "[model]")."""
    if len(header) <= width:
        return [header]
    lines: list[str] = []
    line, sep = "", ""
    for piece, joiner in _pieces(header):
        if line and len(line) + len(sep) + len(piece) <= width:
            line += sep + piece
        else:
            if line:
                lines.append(line)
            line = piece
        sep = joiner
    lines.append(line)
    if hard:
        lines = [part for ln in lines for part in _wrap(ln, width)]
    return lines or [""]


def _left_out_note(empty: list[str], cut: list[str], width: int) -> str:
    """The line under a table that names the columns it leaves out, and why."""
    parts = []
    if empty:
        parts.append("no values: " + ", ".join(empty))
    if cut:
        parts += [f"to fit {width} characters: " + ", ".join(cut), "to_text(0) shows them"]
    return "(columns left out, " + "; ".join(parts) + ")"


class Table:
    """Rows of named values, with a source per column.

    Parameters
    ----------
    rows : iterable of mappings
        One mapping per row; missing keys read as ``None``.
    columns : sequence of str, optional
        Column order (default: first-seen order of the keys).
    sources : mapping, optional
        ``{column: "measured" | "model" | ...}``.
    title : str, optional
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None,
                 sources: Mapping[str, str] | None = None, title: str = ""):
        if isinstance(rows, (str, bytes, Mapping)) or not _iterable(rows):
            raise TypeError("Table: rows must be an iterable of mappings (one dict per row), "
                            f"not {type(rows).__name__}")
        self.rows: list[dict[str, Any]] = []
        for i, r in enumerate(rows):
            if not isinstance(r, Mapping):
                raise TypeError(f"Table: rows must be mappings (one dict per row); row {i} is "
                                f"a {type(r).__name__}")
            self.rows.append(dict(r))
        if columns is None:
            seen: dict[str, None] = {}
            for r in self.rows:
                seen.update(dict.fromkeys(r))
            columns = list(seen)
        elif isinstance(columns, (str, bytes)) or not _iterable(columns):
            raise TypeError("Table: columns must be a sequence of column names, e.g. "
                            f"['offset', 'ms'], not {type(columns).__name__}")
        else:
            names = []
            for c in columns:
                if not isinstance(c, str):
                    raise TypeError(f"Table: columns must be names (str), not "
                                    f"{type(c).__name__}")
                names.append(c)
            columns = names
        self.columns: list[str] = list(columns)
        if sources is not None and not isinstance(sources, Mapping):
            raise TypeError(f"Table: sources must be a mapping {{column: source}}, not "
                            f"{type(sources).__name__}")
        if not isinstance(title, str):
            raise TypeError(f"Table: title must be a str, not {type(title).__name__}")
        self.sources: dict[str, str] = dict(sources or {})
        self.title = title

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, column: str) -> list:
        """The values of one column, in row order."""
        if not isinstance(column, str):
            raise TypeError(f"Table: a column is named by a str, not {type(column).__name__}; "
                            f"the columns are {self.columns}")
        if column not in self.columns:
            raise KeyError(f"no column {column!r}; columns are {self.columns}")
        return [r.get(column) for r in self.rows]

    def to_pandas(self):
        """A pandas DataFrame (needs pandas); sources go to ``df.attrs``."""
        import pandas as pd

        df = pd.DataFrame(self.rows, columns=self.columns)
        df.attrs["sources"] = dict(self.sources)
        df.attrs["title"] = self.title
        return df

    def _header(self, c: str) -> str:
        src = self.sources.get(c)
        return f"{c} [{src}]" if src else c

    def _formats(self) -> list:
        """One formatter per column, so that a column's numbers share one format."""
        return [_column_format([r.get(c) for r in self.rows]) for c in self.columns]

    def _cells(self) -> list[list[str]]:
        fmts = self._formats()
        return [[f(r.get(c)) for c, f in zip(self.columns, fmts)] for r in self.rows]

    def to_markdown(self) -> str:
        """The table as GitHub Markdown."""
        head = "| " + " | ".join(self._header(c) for c in self.columns) + " |"
        sep = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(row) + " |" for row in self._cells()]
        lines = ([f"**{self.title}**", ""] if self.title else []) + [head, sep] + body
        return "\n".join(lines)

    def to_text(self, width: int | None = None) -> str:
        """The table as plain text no wider than ``width`` characters (default: the
        terminal's, :func:`shutil.get_terminal_size`; 0: no limit, every cell on one
        line).

        A cell that is one word (a number, a name) is never broken across lines; a
        cell of several words may wrap at its spaces, and a header between its words,
        after an underscore or a slash (its ``[measured]``/``[model]`` tag on a line of
        its own).  Columns with no values (every cell None or empty, e.g. the measured
        ones without a GPU) are left out; where the other columns do not fit even
        wrapped so, columns are left out from the right-hand end (never the first).  A
        note under the table names the columns left out.  Columns of numbers (or of
        text that reads as numbers) are right-aligned, other columns left-aligned, at
        every width.  ``str(table)`` is ``to_text()``; ``to_pandas()``,
        ``to_markdown()`` and :attr:`rows` keep every column and cell whole."""
        if width is None:
            width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        if isinstance(width, bool) or not isinstance(width, int) or width < 0:
            raise TypeError(f"Table.to_text: width must be an int >= 0 or None, not {width!r}")
        columns = list(self.columns)
        heads = [self._header(c) for c in columns]
        body = [list(col) for col in zip(*self._cells())] if self.rows else [[] for _ in columns]
        # columns with no values (cells all empty) are left out at every width
        empty = [c for c, col in zip(columns, body) if col and not any(col)]
        keep = [i for i, c in enumerate(columns) if c not in empty]
        natural = {i: max([len(heads[i])] + [len(x) for x in body[i]]) for i in keep}
        floors = {i: max([_header_floor(heads[i])] +
                         [max(map(len, x.split())) if _is_prose(x) else len(x)
                          for x in body[i]]) for i in keep}
        cut: list[str] = []
        if width:
            # the columns that fit at their narrowest, from the left (the first always)
            while len(keep) > 1 and sum(floors[i] for i in keep) + 2 * (len(keep) - 1) > width:
                cut.insert(0, columns[keep.pop()])

            # the characters column k takes wrapped to w: its header's lines, its cells
            # of one word, and w itself where a cell of several words is wrapped (its
            # lines come close enough to w not to wrap them all at each step)
            words = {i: max([len(x) for x in body[i] if not _is_prose(x)], default=0)
                     for i in keep}
            prose = {i: max([len(x) for x in body[i] if _is_prose(x)], default=0)
                     for i in keep}

            def used(k: int, w: int) -> int:
                i = keep[k]
                return max([len(line) for line in _header_lines(heads[i], w)] +
                           [words[i], min(prose[i], w)])

            widths = _narrow([natural[i] for i in keep], [floors[i] for i in keep],
                             width - 2 * max(len(keep) - 1, 0), used)
            if keep and widths[0] > width:         # a first column too wide for the width
                widths[0] = width
        else:
            widths = [natural[i] for i in keep]
        hard = [w < floors[i] for i, w in zip(keep, widths)]
        # right-aligned: a column of numbers (or of text that reads as numbers)
        left = [not all(_NUMBER.fullmatch(x) for x in body[i] if x) for i in keep]

        def lines_of(parts: list[list[str]]) -> list[str]:
            out = []
            for j in range(max((len(p) for p in parts), default=1)):
                line = [(p[j] if j < len(p) else "") for p in parts]
                out.append("  ".join(t.ljust(w) if lf else t.rjust(w)
                                     for t, w, lf in zip(line, widths, left)).rstrip())
            return out

        lines: list[str] = []
        if keep:
            lines += lines_of([_header_lines(heads[i], w, h)
                               for i, w, h in zip(keep, widths, hard)])
            lines.append("  ".join("-" * w for w in widths))
            for k in range(len(self.rows)):
                lines += lines_of([_cell_lines(body[i][k], w, h)
                                   for i, w, h in zip(keep, widths, hard)])
        if empty or cut:
            note = _left_out_note(empty, cut, width)
            lines += _wrap(note, width) if width else [note]
        title = "\n".join(_wrap(self.title, width)) if width and self.title else self.title
        return "\n".join(([title] if title else []) + lines)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        # a terminal shows the table itself, as Jupyter does (_repr_markdown_)
        return str(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def plot(self, x: str, y: str | Sequence[str], by: str | None = None, ax=None, **kw):
        """Plot column(s) ``y`` against ``x`` (one line per value of ``by``); needs matplotlib.

        Returns the matplotlib Axes.
        """
        if not isinstance(y, (str, list, tuple)):
            raise TypeError(f"Table.plot: y must be a column name or a list of them, not "
                            f"{type(y).__name__}")
        ys = [y] if isinstance(y, str) else list(y)
        if ax is not None and not (hasattr(ax, "plot") and hasattr(ax, "set_xlabel")):
            raise TypeError(f"Table.plot: ax must be a matplotlib Axes, not {type(ax).__name__}")
        for name, cols in (("x", [x]), ("y", ys), ("by", [by] if by is not None else [])):
            for col in cols:
                if not isinstance(col, str):
                    raise TypeError(f"Table.plot: {name} must name a column (a str), not "
                                    f"{type(col).__name__}")
                if col not in self.columns:
                    raise ValueError(f"Table.plot: {name}={col!r} is not a column; the columns "
                                     f"are {', '.join(map(repr, self.columns))}")
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        groups: dict[Any, list[dict]] = {}
        for r in self.rows:
            groups.setdefault(r.get(by) if by else None, []).append(r)
        for key, rows in groups.items():
            for col in ys:
                pts = [(r[x], r[col]) for r in rows if r.get(col) is not None]
                if not pts:
                    continue
                label = " ".join(str(p) for p in ((f"{by}={key}" if by else None),
                                                  col if len(ys) > 1 or not by else None) if p)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                        label=label or col, **kw)
        ax.set_xlabel(x)
        ax.set_ylabel(", ".join(self._header(c) for c in ys))
        if self.title:
            ax.set_title(self.title)
        if len(groups) > 1 or len(ys) > 1:
            ax.legend()
        return ax

    def panels(self, x: str, ys: Sequence[str | Sequence[str]], by: str | None = None):
        """One row of plots against ``x``, one panel per entry of ``ys`` (a column, or a
        list of columns sharing a panel), of the columns that hold numbers here: without
        a GPU the measured columns are empty and get no panel.  Needs matplotlib.

        Returns the matplotlib Figure, or None when no column has data.
        """
        if isinstance(ys, str) or not isinstance(ys, (list, tuple)):
            raise TypeError(f"Table.panels: ys must be a list of columns (or lists of them), "
                            f"not {type(ys).__name__}")

        def have(c):
            return c in self.columns and any(v is not None for v in self[c])

        shown = [[c for c in y if have(c)] if isinstance(y, (list, tuple)) else y for y in ys]
        shown = [y for y in shown if (y if isinstance(y, list) else have(y))]
        if not shown:
            return None
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(shown), figsize=(5 * len(shown), 3.5), squeeze=False)
        for ax, y in zip(axes[0], shown):
            self.plot(x=x, y=y, by=by, ax=ax)
            ax.set_title("")
        fig.suptitle(self.title)
        fig.tight_layout()
        return fig


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and \
        type(v).__name__ not in ("bool_", "bool")


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not _is_int(v) and \
        type(v).__name__ not in ("bool_", "bool")


def _column_format(values: list):
    """A formatter for one column's values: ints with thousands separators; floats
    all in fixed notation with the decimals that give the largest :data:`SIGNIFICANT`
    significant digits (integral floats as ints), or all in scientific notation when
    fixed would lose them; None as an empty cell; anything else as ``str``."""
    nums = [float(v) for v in values if _is_int(v) or _is_real(v)]
    finite = [abs(v) for v in nums if math.isfinite(v)]
    nonzero = [v for v in finite if v]
    integral = all(v.is_integer() and v < 1e15 for v in finite)
    decimals, sci = 0, False
    if not integral and nonzero:
        big, small = max(nonzero), min(nonzero)
        decimals = max(0, SIGNIFICANT - 1 - math.floor(math.log10(big)))
        sci = big >= 1e6 or small < 10 ** -decimals / 2 or decimals > 6

    def fmt(v: Any) -> str:
        if v is None:
            return ""
        if not (_is_int(v) or _is_real(v)):
            return str(v)
        if _is_int(v) and not sci:
            return f"{int(v):,}" if decimals == 0 else f"{int(v):,.{decimals}f}"
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        if sci:
            return f"{f:.{SIGNIFICANT - 1}e}"
        return f"{f:,.{decimals}f}"
    return fmt


class Listing(list):
    """A list (of named tuples, e.g. :class:`gpumem.Variant`) shown as a :class:`Table`
    in a terminal and in Jupyter; otherwise an ordinary list."""

    def __init__(self, items: Iterable = (), title: str = ""):
        super().__init__(items)
        self.title = title

    def table(self) -> Table:
        """The items as a Table, one row per item (its fields as columns)."""
        rows = [x._asdict() if hasattr(x, "_asdict") else {"value": x} for x in self]
        return Table(rows, title=self.title)

    def __repr__(self) -> str:
        return str(self.table())

    def _repr_markdown_(self) -> str:
        return self.table().to_markdown()
