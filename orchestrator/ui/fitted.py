"""A table that is a table only where it can be read: below its least width, one block of lines per row.

Short columns (numbers, states, check ids) keep their width and never wrap. The free columns share
what is left, each at least as wide as the widest word in it (:func:`~.wrap.least_width`), and their
text is wrapped here at spaces (:func:`~.wrap.wrap`), so Rich never folds a word. When the console
is narrower than that, each row is printed as ``label: value`` lines: the short columns on one line,
then each free column, wrapped at spaces.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from rigaudit.orchestrator.ui.wrap import least_width, wrap
from rigaudit.tools.core.record import Record

HANG = 2
"""How much further a wrapped line is indented than the line it continues."""


class Column(Record):
    header: str
    free: bool = False
    """Wraps and takes a share of what is left (by :attr:`ratio`); the others keep their width."""
    ratio: int = 1
    min_width: int = 0
    justify: Literal["left", "right"] = "left"
    label: str = ""
    """Its name in a block (default: the header)."""


class FittedTable:
    """``rows`` of Text under ``columns``: a table at its width, else blocks (see the module's docstring)."""

    def __init__(self, title: str, columns: Sequence[Column], rows: Sequence[Sequence[Text]], *, show_lines: bool = False):
        self.title = title
        self.columns = tuple(columns)
        self.rows = [tuple(row) for row in rows]
        self.show_lines = show_lines

    def _least(self, index: int) -> int:
        column = self.columns[index]
        cells = [row[index] for row in self.rows]
        if column.free:
            return max([column.min_width, least_width(column.header, HANG), *(least_width(c.plain, HANG) for c in cells)])
        longest = [len(line) for c in cells for line in c.plain.split("\n")]
        return max([column.min_width, len(column.header), *longest])

    def widths(self, width: int) -> list[int] | None:
        """Each column's width in a table ``width`` columns wide; ``None`` when it does not fit."""
        least = [self._least(i) for i in range(len(self.columns))]
        left = width - sum(least) - 3 * len(self.columns) - 1  # per column: padding each side and a border
        if left < 0:
            return None
        free = [i for i, c in enumerate(self.columns) if c.free]
        shares = sum(self.columns[i].ratio for i in free)
        given = 0
        for n, i in enumerate(free):
            extra = left - given if n == len(free) - 1 else left * self.columns[i].ratio // shares
            least[i] += extra
            given += extra
        return least

    def table(self, widths: Sequence[int]) -> Table:
        table = Table(title=self.title, show_lines=self.show_lines, expand=False, title_justify="left")
        for column, size in zip(self.columns, widths, strict=True):
            table.add_column(column.header, width=size, no_wrap=True, justify=column.justify)
        for row in self.rows:
            cells = [wrap(c, size, hang=HANG) if col.free else c for col, c, size in zip(self.columns, row, widths, strict=True)]
            table.add_row(*cells)
        return table

    def blocks(self, width: int) -> Iterator[Text]:
        """The title, then per row: its short columns on one line (``label: value · ...``), each free column in
        ``label: value`` lines, and a blank line."""
        yield Text(self.title, style="table.title")
        for row in self.rows:
            fields = [
                Text.assemble((f"{col.label or col.header}: ", "dim"), cell)
                for col, cell in zip(self.columns, row, strict=True)
                if not col.free and cell.plain
            ]
            yield _packed(fields, width)
            for col, cell in zip(self.columns, row, strict=True):
                if col.free and cell.plain:
                    yield wrap(Text.assemble((f"{col.label or col.header}: ", "dim"), cell), width, hang=HANG)
            yield Text("")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.widths(options.max_width)
        if widths is not None:
            yield self.table(widths)
        else:
            yield from self.blocks(options.max_width)


def _packed(fields: Sequence[Text], width: int, sep: str = " · ") -> Text:
    """``fields`` on as few lines as fit, joined by ``sep``; a field is never split unless wider than a line."""
    lines: list[Text] = []
    for item in fields:
        if lines and lines[-1].cell_len + len(sep) + item.cell_len <= width:
            lines[-1].append(sep)
            lines[-1].append_text(item)
        else:
            lines.append(item.copy())
    return wrap(Text("\n").join(lines), width, hang=HANG)


__all__ = ["Column", "FittedTable"]
