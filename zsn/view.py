"""What a pane's table shows, as plain data: columns, rows and cells.

No Textual and no Rich here, so a domain's view module (`zsn.zfs.view`,
`zsn.wlan.view`, `zsn.links.view`) builds the very rows `zsn.tui.widgets.table.LiveTable`
draws, and its unit tests read them without a terminal. The widget decides the
colours of the tones and which columns fit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

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
