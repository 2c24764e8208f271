"""A table that fits the width it is given and never wraps a row (§11.2's summary in a terminal).

The full table has every column. When it is wider than the terminal, layouts give up, one step
at a time: the detail column (failing dimensions) moves to a line of its own under each row; the
layer column becomes a heading line; task names lose their shared dataset prefix; the optional
columns go by rank; headers are abbreviated; the last optional columns go; task names are cut
to the width that is left (with `…`, the shared prefix on a line above the table). The first
layout that fits is used (the last one when none does). Without a width (a file or a pipe reads the
output) the full table is printed, one unwrapped line per row.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from rich.cells import cell_len
from rich.text import Text

INDENT = "  "
#: the narrowest a cut task name gets (`reply-to-…`)
MIN_NAME_WIDTH = 10


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    justify: Literal["left", "right"]
    short_header: str = ""  # the abbreviated layouts' header ("" = the header)
    gap: int = 2  # spaces before the column
    drop_rank: int = 0  # 0: always shown; others leave the table in rank order (LAYOUTS)
    detail: bool = False  # may leave the table for a line of its own under each row


@dataclass(frozen=True)
class Row:
    layer: str
    name: str
    cells: Mapping[str, str]
    bold: bool = False


@dataclass(frozen=True)
class Layout:
    detail_inline: bool = True
    layer_headings: bool = False
    short_names: bool = False
    short_headers: bool = False
    dropped_ranks: frozenset[int] = frozenset()
    cut_names: bool = False


def _layouts() -> tuple[Layout, ...]:
    """Each layout is the one before with one more thing given up."""
    changes: tuple[Callable[[Layout], Layout], ...] = (
        lambda layout: replace(layout, detail_inline=False),
        lambda layout: replace(layout, layer_headings=True),
        lambda layout: replace(layout, short_names=True),
        lambda layout: replace(layout, dropped_ranks=frozenset({1})),
        lambda layout: replace(layout, dropped_ranks=frozenset({1, 2})),
        lambda layout: replace(layout, short_headers=True),
        lambda layout: replace(layout, dropped_ranks=frozenset({1, 2, 3})),
        lambda layout: replace(layout, dropped_ranks=frozenset({1, 2, 3, 4})),
        lambda layout: replace(layout, dropped_ranks=frozenset({1, 2, 3, 4, 5})),
        lambda layout: replace(layout, cut_names=True),
    )
    layouts = [Layout()]
    for change in changes:
        layouts.append(change(layouts[-1]))
    return tuple(layouts)


LAYOUTS = _layouts()


@dataclass(frozen=True)
class FittedTable:
    lines: list[Text]
    layout: Layout
    dropped: list[Column]  # columns not shown at this width


def _pad(text: str, width: int, justify: str) -> str:
    space = " " * max(0, width - cell_len(text))
    return space + text if justify == "right" else text + space


def shared_prefix(names: Sequence[str]) -> str:
    """`buzz-native/` when every name starts with that dataset prefix, else ""."""
    prefixes = {name.rpartition("/")[0] for name in names}
    if len(prefixes) != 1 or not next(iter(prefixes)):
        return ""
    return next(iter(prefixes)) + "/"


class _Table:
    def __init__(
        self,
        columns: Sequence[Column],
        rows: Sequence[Row],
        layout: Layout,
        prefix: str,
        width: int | None,
    ) -> None:
        self.layout, self.rows = layout, rows
        self.prefix = prefix if layout.short_names else ""
        kept = [c for c in columns if c.drop_rank not in layout.dropped_ranks]
        self.dropped = [c for c in columns if c not in kept]
        self.columns = [c for c in kept if layout.detail_inline or not c.detail]
        self.details = [c for c in kept if c not in self.columns]
        self.headers = {
            c.key: (c.short_header or c.header) if layout.short_headers else c.header
            for c in self.columns
        }
        self.widths = {
            c.key: max([cell_len(self.headers[c.key])] + [cell_len(r.cells[c.key]) for r in rows])
            for c in self.columns
        }
        cut = layout.cut_names and width is not None
        self.name_header = f"Task ({prefix})" if self.prefix and not cut else "Task"
        self.name_width = max(
            cell_len(self._name(self.name_header)), *(self._width_of(r) for r in rows)
        )
        self.layer_width = 0
        if not layout.layer_headings:
            self.layer_width = max([cell_len("Layer")] + [cell_len(r.layer) for r in rows])
        if cut and width is not None:
            room = width - (self.width - self.name_width)
            self.name_width = max(MIN_NAME_WIDTH, min(self.name_width, room))

    def _name(self, name: str) -> str:
        return INDENT + name if self.layout.layer_headings else name

    def _width_of(self, row: Row) -> int:
        return cell_len(self._name(self._short(row.name)))

    def _short(self, name: str) -> str:
        return name.removeprefix(self.prefix) if self.prefix else name

    def _fitted(self, name: str) -> str:
        """`name` as the row shows it: cut with `…` in a layout that cuts names."""
        shown = self._name(name)
        if not self.layout.cut_names or cell_len(shown) <= self.name_width:
            return name
        room = self.name_width - (cell_len(shown) - cell_len(name)) - 1
        return name[: max(0, room)] + "…"

    @property
    def width(self) -> int:
        layer = self.layer_width + 2 if self.layer_width else 0
        return layer + self.name_width + sum(c.gap + self.widths[c.key] for c in self.columns)

    def _line(self, layer: str, name: str, cells: Mapping[str, str]) -> str:
        parts = [_pad(layer, self.layer_width, "left") + "  "] if self.layer_width else []
        parts.append(_pad(self._name(self._fitted(name)), self.name_width, "left"))
        for column in self.columns:
            cell = _pad(cells[column.key], self.widths[column.key], column.justify)
            parts.append(" " * column.gap + cell)
        return "".join(parts).rstrip()

    def render(self, width: int | None) -> list[Text]:
        lines = []
        if self.prefix and self.name_header == "Task":  # the names are cut: say whose they are
            lines.append(Text(f"tasks of {self.prefix}"))
        lines.append(Text(self._line("Layer", self.name_header, self.headers), style="bold"))
        layer = None
        for row in self.rows:
            if self.layout.layer_headings and row.layer != layer:
                lines.append(Text(row.layer, style="bold"))
            layer = row.layer
            line = self._line(row.layer, self._short(row.name), row.cells)
            lines.append(Text(line, style="bold" if row.bold else ""))
            for column in self.details:
                lines += self._detail_lines(column, row.cells[column.key], width)
        return lines

    def _detail_lines(self, column: Column, value: str, width: int | None) -> list[Text]:
        if not value or value == "-":
            return []
        indent = self._name(INDENT)
        text = f"{indent}{column.header.lower()}: {value}"
        if width is None or cell_len(text) <= width:
            return [Text(text)]
        wrapped = textwrap.wrap(
            text, width=width, subsequent_indent=indent + INDENT, break_long_words=False
        )
        return [Text(line) for line in wrapped]


def fit_table(columns: Sequence[Column], rows: Sequence[Row], width: int | None) -> FittedTable:
    """The lines of the richest layout whose rows fit in `width` (None: the full table)."""
    prefix = shared_prefix([row.name for row in rows if not row.bold])
    for layout in LAYOUTS:
        table = _Table(columns, rows, layout, prefix, width)
        if width is None or table.width <= width or layout is LAYOUTS[-1]:
            return FittedTable(table.render(width), layout, table.dropped)
    raise AssertionError("unreachable: the last layout always fits")
