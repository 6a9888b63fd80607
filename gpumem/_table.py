"""Table: the result of an experiment, a sweep or a profile.

A small class on purpose: rows are dicts, columns keep their order, and each
column may say where its numbers come from (``"measured"`` from the GPU's
events or counters, ``"model"`` from :mod:`gpumem.model`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence


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
        self.rows: list[dict[str, Any]] = [dict(r) for r in rows]
        if columns is None:
            columns = []
            for r in self.rows:
                columns += [k for k in r if k not in columns]
        self.columns: list[str] = list(columns)
        self.sources: dict[str, str] = dict(sources or {})
        self.title = title

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, column: str) -> list:
        """The values of one column, in row order."""
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

    @staticmethod
    def _fmt(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            if v != v:
                return "nan"
            if v == 0 or 1e-3 <= abs(v) < 1e6:
                return f"{v:.4g}" if abs(v) < 1 else f"{v:,.2f}".rstrip("0").rstrip(".")
            return f"{v:.3e}"
        return str(v)

    def to_markdown(self) -> str:
        """The table as GitHub Markdown."""
        head = "| " + " | ".join(self._header(c) for c in self.columns) + " |"
        sep = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(self._fmt(r.get(c)) for c in self.columns) + " |" for r in self.rows]
        lines = ([f"**{self.title}**", ""] if self.title else []) + [head, sep] + body
        return "\n".join(lines)

    def __str__(self) -> str:
        cells = [[self._header(c) for c in self.columns]]
        cells += [[self._fmt(r.get(c)) for c in self.columns] for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = ["  ".join(s.rjust(w) for s, w in zip(row, widths)) for row in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return (self.title + "\n" if self.title else "") + "\n".join(lines)

    def __repr__(self) -> str:
        return f"Table({len(self.rows)} rows, columns={self.columns})"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def plot(self, x: str, y: str | Sequence[str], by: str | None = None, ax=None, **kw):
        """Plot column(s) ``y`` against ``x`` (one line per value of ``by``); needs matplotlib.

        Returns the matplotlib Axes.
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        ys = [y] if isinstance(y, str) else list(y)
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
