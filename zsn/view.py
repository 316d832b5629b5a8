"""What a pane's table shows, as plain data: columns, rows and cells.

No Textual and no Rich here, so a domain's view module (`zsn.zfs.view`,
`zsn.wlan.view`, `zsn.links.view`) builds the very rows `zsn.tui.widgets.table.LiveTable`
draws, and its unit tests read them without a terminal. The widget decides the
colours of the tones and which columns fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from zsn.format import RATE_WIDTH

Align = Literal["left", "right"]

TONES = ("good", "warn", "bad", "muted", "bold", "accent")
"""Cell tones, drawn with the theme's colours (``live-table--good`` ... in table.tcss)."""
ROW_STATES = ("gone", "muted")
"""Row states: ``gone`` = its source vanished (kept, greyed); ``muted`` = shown for
information only (e.g. another network namespace's device)."""


class Cell(NamedTuple):
    """A cell with more than plain text. A plain `str` is a cell too."""

    text: str
    tone: str = ""
    """One of `TONES`, or empty."""
    short: str | None = None
    """A shorter form, shown when `text` does not fit the column (never cut)."""


CellValue = str | Cell


def cell_text(value: CellValue) -> str:
    return value if isinstance(value, str) else value.text


class Row(NamedTuple):
    key: str
    """Stable identity: the cursor follows it, updates are matched by it."""
    cells: tuple[CellValue, ...]
    """One per column, in the columns' order."""
    state: str = ""
    """One of `ROW_STATES`, or empty."""
    depth: int = 0
    """Tree depth: 0 for top-level rows; children follow their parent."""
    data: Any = None
    """Anything the pane wants back with the row (the model object); not compared,
    not shown. Column sort keys read it."""


class Column(NamedTuple):
    key: str
    label: str
    priority: int = 1
    """1 = essential, kept longest; higher numbers are dropped first at narrow widths.
    The first column is never dropped."""
    short_label: str | None = None
    """Shown when the column is narrower than `label`."""
    min_width: int = 0
    """At least this wide (e.g. a rate's widest value, so it does not jump)."""
    max_width: int | None = None
    """Cap for the natural width of a `truncate` column."""
    align: Align = "left"
    truncate: bool = False
    """May be cut, with an ellipsis, to fit: only for keys, hashes, paths. Words,
    numbers and units are never cut: their column is dropped instead."""
    help: str = ""
    """One line for the `?` help."""
    sort_key: Callable[[Row], Any] | None = None
    """Order for `o`; default: the cell's text, numbers compared as numbers."""


def row_of(key: str, columns: Sequence[Column], cells: Mapping[str, CellValue], *,
           state: str = "", depth: int = 0, data: Any = None) -> Row:
    """A row from cells by column key, in the columns' order; a column without a
    cell is blank."""
    return Row(key, tuple(cells.get(column.key, "") for column in columns), state, depth,
               data)


_NUMBER = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key for text with numbers compared by value: peer-9 < peer-10."""
    return tuple((0, int(part)) if part.isdigit() else (1, part.casefold())
                 for part in _NUMBER.split(text) if part)


def by_data(index: int) -> Callable[[Row], Any]:
    """A `Column.sort_key` ordering rows by ``row.data[index]`` (None before values)."""

    def key(row: Row) -> tuple[bool, Any]:
        value = row.data[index]
        return (value is not None, 0 if value is None else value)

    return key


def rate_columns(priority: int, data_index: int = 1,
                 where: str = "") -> tuple[Column, Column]:
    """The ``↓ Rate`` / ``↑ Rate`` pair of every pane with byte counters (cells from
    `zsn.format.human_rate`); ``row.data[data_index]`` and ``[data_index + 1]`` hold
    the two rates for ordering."""
    return (
        Column("rx_rate", "↓ Rate", priority, min_width=RATE_WIDTH, align="right",
               sort_key=by_data(data_index),
               help=f"received per second{where} over the last refresh"),
        Column("tx_rate", "↑ Rate", priority, min_width=RATE_WIDTH, align="right",
               sort_key=by_data(data_index + 1),
               help=f"sent per second{where} over the last refresh"),
    )


def cells_by_key(columns: Sequence[Column], row: Row) -> dict[str, CellValue]:
    """A row's cells by column key (the inverse of `row_of`)."""
    return {column.key: value for column, value in zip(columns, row.cells, strict=True)}
