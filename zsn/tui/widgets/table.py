"""`LiveTable`: the one table widget of every pane.

Rows are keyed and drawn through Textual's line API: only the lines on screen are
ever rendered, so 5,000 rows cost what 20 do. `update(rows)` compares each row
with the one it replaces and repaints only the cells whose text changed; an
update that changes nothing repaints nothing.

Columns are declared once (`Column`): key, label, an optional short label, a
priority, a minimum width, alignment. When the table is narrower than its
columns, whole columns are dropped, least important first (highest `priority`
number; among equals the rightmost) -- a header or a value is never cut mid-word
and a unit never loses its number. Only columns declared ``truncate=True`` (keys,
paths) may be shortened, and they end in an ellipsis. A cell may offer a shorter
form (`Cell.short`, e.g. ``10.0.0.2/32 +1`` for two networks) used when its
full text does not fit; spare width goes to full forms and full labels first.
Column widths only grow while the rows stay (values that change every second do
not make columns jump); `clear()` starts afresh.

Cells and titles are outside text (names, daemon replies): the table measures and
draws them through `zsn.terminal.safe`, so no pane can forget to; `cell()` and the
rows keep the text as given.

A feeder whose rows are costly to keep current (200 peers whose rates move every
second) may give fresh rows only for those on screen (`window_keys`) and the others
as they were, while the order and the filter do not depend on values
(`orders_by_value`): `on_window_moved` tells it when other rows come into view
(scrolled to, resized), or the order or filter changed, so it updates them before
they are drawn.

Rows may form a tree: `Row.depth` indents the first cell under the row above it
with a lower depth (bond -> members, pool -> vdevs), with guide lines.

Keys: arrows, page up/down, `home`/`end` (first/last row), `enter` (posts
`Selected`), `/` filter (over all rows, every column, shown or not; `enter`
keeps it, `escape` clears it, while typing or later), `o` order by the next
column, `O` reverse. A kept filter stays in the border's subtitle with its
current count and the key that clears it; a row that arrives while a filter hides
it is announced once, so a new bond or network is never silently invisible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from zsn.terminal import is_safe, safe
from zsn.tui.widgets.safe import title as safe_title
from zsn.view import ROW_STATES, TONES, Align, CellValue, Column, Row, cell_text, natural_key

PAD = 1
"""Blank cells at the left and right edge of every line."""
HEADER_LINES = 1
ELLIPSIS = "…"


SPAN_GAP = 8
"""Unchanged cells between two changes of a row that make them two repaints: a cursor
move to the second (``ESC [ y ; x H``) costs about as many bytes."""


class PlacedColumn(NamedTuple):
    column: int
    """Index of the column in the table's `columns`."""
    x: int
    """Offset from the left edge of the line, `PAD` included."""
    width: int


class ColumnLayout(NamedTuple):
    placed: tuple[PlacedColumn, ...]
    hidden: tuple[int, ...]
    """Indices of the columns dropped at this width."""
    width: int


def lay_out(columns: Sequence[Column], need: Sequence[int], natural: Sequence[int],
            width: int) -> ColumnLayout:
    """Which columns fit in `width` cells, and how wide each is.

    `need[i]` is the width column i must have to show every value without
    cutting it (its short forms allowed), `natural[i]` the width that shows
    every value and the label in full. Columns are dropped, least important
    first, until the rest fit at their `need`; spare cells then widen the most
    important columns toward `natural`, then the gutters from one to two cells,
    then the `truncate` columns (more of a key or a path).
    """
    available = max(0, width - 2 * PAD)
    shown = list(range(len(columns)))

    def total(indices: Sequence[int], gutter: int) -> int:
        return sum(need[i] for i in indices) + gutter * max(0, len(indices) - 1)

    for index in sorted(range(1, len(columns)), key=lambda i: (-columns[i].priority, -i)):
        if total(shown, 1) <= available:
            break
        shown.remove(index)
    widths = {i: need[i] for i in shown}
    if shown and total(shown, 1) > available:  # not even the first column fits
        widths[shown[0]] = max(1, available)
    spare = max(0, available - total(shown, 1))
    by_importance = sorted(shown, key=lambda i: (columns[i].priority, i))

    def grow(indices: list[int]) -> None:
        nonlocal spare
        for index in indices:
            extra = min(spare, max(0, natural[index] - widths[index]))
            widths[index] += extra
            spare -= extra

    grow([i for i in by_importance if not columns[i].truncate])  # full values and labels
    gutter = 1
    if len(shown) > 1 and spare >= len(shown) - 1:
        gutter = 2
        spare -= len(shown) - 1
    grow([i for i in by_importance if columns[i].truncate])  # then more of keys and paths
    placed: list[PlacedColumn] = []
    x = PAD
    for index in shown:
        placed.append(PlacedColumn(index, x, widths[index]))
        x += widths[index] + gutter
    hidden = tuple(i for i in range(len(columns)) if i not in widths)
    return ColumnLayout(tuple(placed), hidden, width)


def fit(text: str, short: str | None, width: int, truncate: bool) -> str:
    """The form of a value shown in `width` cells: full, short, or (for `truncate`
    columns, or a first column that cannot fit) cut with an ellipsis."""
    if cell_len(text) <= width:
        return text
    if short is not None and cell_len(short) <= width:
        return short
    if width <= 1:
        return ELLIPSIS[:width]
    kept = text
    while kept and cell_len(kept) > width - 1:
        kept = kept[:-1]
    return kept + ELLIPSIS


def _shown(texts: list[str]) -> list[str]:
    """`texts` as drawn (through `safe`); one scan for the usual all-safe column."""
    return texts if is_safe("".join(texts)) else [safe(text) for text in texts]


def _width(text: str) -> int:
    """Cells `text` takes as drawn (through `safe`); printable ASCII, the usual value,
    without a scan of its characters in Python."""
    if text.isascii() and text.isprintable():
        return len(text)
    return cell_len(safe(text))


def _widest(texts: list[str]) -> int:
    if not texts:
        return 0
    if all(map(str.isascii, texts)):
        return max(map(len, texts))
    return max(map(cell_len, texts))


def tree_guides(depths: Sequence[int]) -> list[str]:
    """The guide drawn before each row's first cell: ``├ ``, ``└ ``, ``│ `` ..."""
    guides = [""] * len(depths)
    if not any(depths):
        return guides
    more: list[bool] = [False] * (max(depths) + 2)  # a later sibling at this depth?
    for position in range(len(depths) - 1, -1, -1):
        depth = depths[position]
        if depth > 0:
            ancestors = "".join("│ " if more[level] else "  " for level in range(1, depth))
            guides[position] = ancestors + ("├ " if more[depth] else "└ ")
        more[depth] = True
        for level in range(depth + 1, len(more)):
            more[level] = False
    return guides


def _forest(rows: Sequence[Row]) -> list[tuple[Row, list[Any]]]:
    """Rows as (row, children) trees, by depth."""
    roots: list[tuple[Row, list[Any]]] = []
    stack: list[tuple[int, list[tuple[Row, list[Any]]]]] = [(-1, roots)]
    for row in rows:
        while len(stack) > 1 and stack[-1][0] >= row.depth:
            stack.pop()
        node: tuple[Row, list[Any]] = (row, [])
        stack[-1][1].append(node)
        stack.append((row.depth, node[1]))
    return roots


class LiveTable(ScrollView, can_focus=True):
    """See the module docstring. Messages: `Highlighted` (cursor moved to another
    row, or its row changed key), `Selected` (enter)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "live-table--header", "live-table--cursor", "live-table--zebra",
        "live-table--empty",
        *(f"live-table--{tone}" for tone in TONES),
        *(f"live-table--{state}" for state in ROW_STATES),
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First row", show=False),
        Binding("end", "last", "Last row", show=False),
        Binding("left", "nothing", show=False),
        Binding("right", "nothing", show=False),
        Binding("enter", "select", "Open", show=False),
        Binding("slash", "start_filter", "Filter", show=False, key_display="/"),
        # Shown (and first in the footer) only while a kept filter hides rows.
        Binding("escape", "clear_filter", "Clear filter", key_display="esc"),
        Binding("o", "order(False)", "Order by next column", show=False),
        Binding("O", "order(True)", "Reverse order", show=False),
    ]

    class Highlighted(Message):
        def __init__(self, table: LiveTable, key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> LiveTable:
            return self.table

    class Selected(Message):
        def __init__(self, table: LiveTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> LiveTable:
            return self.table

    def __init__(self, columns: Sequence[Column], *, title: str = "", zebra: bool = False,
                 empty_text: str = "", id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        if not columns:
            raise ValueError("a table needs at least one column")
        keys = [column.key for column in columns]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate column keys: {keys}")
        self.columns: tuple[Column, ...] = tuple(columns)
        self.help_title = title or (id or "Table")
        """The table's name in the `?` help (its border title may change)."""
        self._title = self._subtitle = ""
        if title:
            self.set_title(title)
        self.zebra = zebra
        self.empty_text = empty_text
        self.reading = True
        """Until the first `update`, an empty table says it is being read."""
        self._rows: dict[str, Row] = {}
        self._order: list[str] = []
        """Keys in the order `update` gave them."""
        self._view: list[str] = []
        """Keys shown, in display order (sorted, filtered)."""
        self._index: dict[str, int] = {}
        self._guides: dict[str, str] = {}
        self._need = [0] * len(columns)
        self._natural = [0] * len(columns)
        self._layout: ColumnLayout | None = None
        self._lines: dict[str, tuple[Row, int, bool, Strip]] = {}
        self._cells: dict[tuple[Any, ...], tuple[Segment, ...]] = {}
        """A cell's segments by what makes them (its value, column, width, styles): a
        changed row is made again from its cells, and most of its cells did not change."""
        self._styles: dict[str, Style] = {}
        self._base: Style | None = None
        """`rich_style`, kept as `_styles` are (it walks every ancestor: a third of
        drawing a changed row)."""
        self._cursor_key: str | None = None
        self._sort: tuple[int, bool] | None = None
        self._filter = ""
        self._filtering = False
        self._note = ""
        """The pane's own words in the subtitle (after the filter and order)."""
        self.repaint_count = 0
        """Regions this table asked Textual to repaint (for tests and benchmarks)."""
        self.on_window_moved: Callable[[], None] | None = None
        """Called when other rows may be drawn now (see the module docstring)."""
        self._updating = False
        self._window_moved = False

    # -- public API --------------------------------------------------------------
    @property
    def row_count(self) -> int:
        """Every row, shown or filtered out."""
        return len(self._order)

    @property
    def shown_count(self) -> int:
        return len(self._view)

    @property
    def rows(self) -> list[Row]:
        """Every row in the order `update` gave them."""
        return [self._rows[key] for key in self._order]

    @property
    def shown_keys(self) -> list[str]:
        """The keys of the rows shown, top to bottom."""
        return list(self._view)

    @property
    def orders_by_value(self) -> bool:
        """Whether which rows are shown, and where, depends on their values (an order
        by a column, a filter): then every row must be current."""
        return self._sort is not None or bool(self._filter)

    def window_keys(self) -> list[str]:
        """The keys of the rows on screen now, and the cursor's."""
        top = int(self.scroll_y)
        keys = self._view[top:top + self._body_height()]
        if self._cursor_key is not None and self._cursor_key not in keys:
            keys.append(self._cursor_key)
        return keys

    def _tell_window_moved(self) -> None:
        if self.on_window_moved is None:
            return
        if self._updating:
            self._window_moved = True  # told once the update is done
            return
        self.on_window_moved()

    def get_row(self, key: str) -> Row | None:
        return self._rows.get(key)

    def set_title(self, title: str) -> None:
        """The border title (outside text welcome: escaped, never markup); setting the
        one shown costs nothing (Textual repaints the whole widget on every assignment)."""
        if self._title != title:
            self._title = title
            self.border_title = safe_title(title)

    def set_empty_text(self, text: str) -> None:
        """What the table says while it has no rows (zsn's own words); setting the one
        shown costs nothing."""
        if self.empty_text != text:
            self.empty_text = text
            if not self._view:
                self._repaint_all()

    @property
    def cursor_key(self) -> str | None:
        return self._cursor_key

    @property
    def cursor_row(self) -> Row | None:
        return self._rows.get(self._cursor_key) if self._cursor_key is not None else None

    @property
    def cursor_index(self) -> int:
        """Position of the cursor among the rows shown; -1 when there are none."""
        return self._index.get(self._cursor_key, -1) if self._cursor_key is not None else -1

    @property
    def filter_text(self) -> str:
        return self._filter

    @property
    def hidden_columns(self) -> list[Column]:
        """The columns dropped at the current width."""
        layout = self._current_layout()
        return [self.columns[i] for i in layout.hidden] if layout else []

    def column_index(self, key: str) -> int:
        for index, column in enumerate(self.columns):
            if column.key == key:
                return index
        raise KeyError(key)

    def cell(self, key: str, column: str) -> str:
        """The full text of a cell, as `update` gave it."""
        return cell_text(self._rows[key].cells[self.column_index(column)])

    def update(self, rows: Iterable[Row]) -> None:
        """Show `rows` (every row, in their natural order). Only cells whose text or
        tone changed are repainted; nothing is when nothing changed."""
        if self._updating:
            self._update(rows)
            return
        self._updating = True
        self._window_moved = False
        try:
            self._update(rows)
        finally:
            self._updating = False
        if self._window_moved:  # the update scrolled: rows it did not refresh came in
            self._window_moved = False
            self._tell_window_moved()

    def _update(self, rows: Iterable[Row]) -> None:
        new_rows = list(rows)
        if self.reading:
            self.reading = False
            if not new_rows:
                self._repaint_all()  # "Reading…" goes
        new_order = [row.key for row in new_rows]
        if len(set(new_order)) != len(new_order):
            raise ValueError(f"{self.id or 'table'}: duplicate row keys")
        width = len(self.columns)
        old_rows = self._rows
        changed: dict[str, list[int]] = {}
        added: list[Row] = []
        grew = depth_changed = False
        for row in new_rows:
            if len(row.cells) != width:
                raise ValueError(f"{self.id or 'table'}: row {row.key!r} has "
                                 f"{len(row.cells)} cells for {width} columns")
            old = old_rows.get(row.key)
            if old is None:
                added.append(row)
                continue
            if old is row or (old.cells == row.cells and old.state == row.state
                               and old.depth == row.depth):
                continue
            if old.depth != row.depth:
                depth_changed = True
            if old.state != row.state or old.depth != row.depth:
                columns = list(range(width))
            else:
                columns = [i for i in range(width) if old.cells[i] != row.cells[i]]
            changed[row.key] = columns
            grew |= self._measure(row, columns)
        if added:
            grew |= self._measure_rows(added)
        self._rows = {row.key: row for row in new_rows}
        order_changed = new_order != self._order
        self._order = new_order
        relaid = grew and self._relayout()
        view_may_change = order_changed or depth_changed or (
            changed and (self._sort is not None or self._filter))
        rebuilt = view_may_change and self._rebuild_view()
        if added and old_rows and self._filter:
            self._announce_hidden([row for row in added if row.key not in self._index])
        if rebuilt:
            self._repaint_all()
            return
        if not relaid and changed:
            self._repaint_changed(changed, old_rows)

    def _repaint_changed(self, changed: dict[str, list[int]], old_rows: dict[str, Row]) -> None:
        """Repaint the changed cells of the rows on screen (`changed`: their columns by
        row key); the others are drawn afresh when scrolled to."""
        for key in changed:
            self._lines.pop(key, None)
        layout = self._layout
        if layout is None:
            return
        # Where the body is, worked out once: a big table's poll changes many rows,
        # most of them out of sight.
        top = int(self.scroll_y) - HEADER_LINES
        height = self.scrollable_content_region.height
        for key, columns in changed.items():
            position = self._index.get(key)
            if position is not None and HEADER_LINES <= position - top < height:
                self._repaint_cells(position - top, columns, layout, old_rows[key])

    def _announce_hidden(self, rows: list[Row]) -> None:
        """New rows the kept filter hides: said once, with the key that shows them."""
        if not rows:
            return
        names = ", ".join(cell_text(row.cells[0]) for row in rows[:3])
        more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
        what = "rows are" if len(rows) > 1 else "row is"
        self.notify(f"New {what} hidden by the filter /{self._filter}: {names}{more} "
                    f"(esc clears the filter).", title=self.help_title,
                    severity="warning", timeout=8, markup=False)

    def clear(self) -> None:
        """Drop every row and start measuring afresh (e.g. another interface's peers)."""
        self._rows = {}
        self._order = []
        self._need = [0] * len(self.columns)
        self._natural = [0] * len(self.columns)
        self._layout = None
        self._rebuild_view()
        self._repaint_all()

    def move_cursor(self, key: str | None = None, index: int | None = None) -> None:
        """Put the cursor on the row `key`, or at position `index` of the rows shown."""
        if key is None and index is not None and self._view:
            key = self._view[max(0, min(index, len(self._view) - 1))]
        if key is None or key not in self._index:
            return
        self._set_cursor(key)

    def sort_by(self, column: str | None, reverse: bool = False) -> None:
        """Order the rows by `column` (all rows, not only those shown); None: as given."""
        self._sort = None if column is None else (self.column_index(column), reverse)
        self._rebuild_view()
        self._repaint_all()
        self._tell_window_moved()

    def set_filter(self, text: str) -> None:
        """Show only rows with `text` in any cell (case-insensitive); '' shows all."""
        kept_before = bool(self._filter)
        self._filter = text
        self._rebuild_view()
        self._repaint_all()
        self._tell_window_moved()
        if kept_before != bool(text):
            self.refresh_bindings()  # `esc` clears it: in the footer while it is kept

    def describe_columns(self) -> str:
        """Markdown for the `?` help: the columns, and which go first when narrow."""
        lines = ["| column | shows |\n|---|---|"]
        for column in self.columns:
            label = column.label + (f" ({column.short_label})" if column.short_label else "")
            lines.append(f"| {label} | {column.help or '-'} |")
        order = sorted(range(1, len(self.columns)),
                       key=lambda i: (-self.columns[i].priority, -i))
        dropped = ", ".join(self.columns[i].label for i in order)
        if dropped:
            lines.append(f"\nWhen the screen is narrow, whole columns are hidden in this "
                         f"order: {dropped}.")
        hidden = self.hidden_columns
        if hidden:
            lines.append(f"Hidden at this width: {', '.join(c.label for c in hidden)}.")
        return "\n".join(lines)

    # -- measuring and layout ------------------------------------------------------
    def _measure(self, row: Row, columns: Iterable[int]) -> bool:
        """Widen the measured widths for these cells; True when one grew."""
        grew = False
        need, natural = self._need, self._natural
        for index in columns:
            value = row.cells[index]
            if isinstance(value, str):
                full = _width(value)
                short = full
            else:
                full = _width(value.text)
                short = _width(value.short) if value.short is not None else full
            if index == 0 and row.depth:
                full += 2 * row.depth
                short += 2 * row.depth
            if full > natural[index]:
                natural[index] = full
                grew = True
            if short > need[index]:
                need[index] = short
                grew = True
        return grew

    def _measure_rows(self, rows: list[Row]) -> bool:
        """`_measure` for many new rows at once, a column at a time (a big table's
        first rows: 5,000 x 9 cells measured one by one took ~45 ms)."""
        grew = False
        need, natural = self._need, self._natural
        indent = [2 * row.depth for row in rows] if any(row.depth for row in rows) else None
        for index in range(len(self.columns)):
            values = [row.cells[index] for row in rows]
            texts = _shown([value if isinstance(value, str) else value.text
                            for value in values])
            shorts = _shown([value.short for value in values
                             if not isinstance(value, str) and value.short is not None])
            if index == 0 and indent is not None:
                full = max(cell_len(text) + extra for text, extra in zip(texts, indent,
                                                                         strict=True))
                short = full
            else:
                full = _widest(texts)
                short = full if not shorts else max(
                    _widest([text for value, text in zip(values, texts, strict=True)
                             if isinstance(value, str) or value.short is None]),
                    _widest(shorts))
            if full > natural[index]:
                natural[index] = full
                grew = True
            if short > need[index]:
                need[index] = short
                grew = True
        return grew

    def _column_widths(self) -> tuple[list[int], list[int]]:
        need: list[int] = []
        natural: list[int] = []
        for index, column in enumerate(self.columns):
            cells_need = 0 if column.truncate else self._need[index]
            minimum = max(column.min_width, cell_len(column.short_label or column.label),
                          cells_need)
            if column.truncate and index == 0:
                minimum = max(minimum, min(self._need[index], 12))
            full = max(minimum, cell_len(column.label), self._natural[index])
            if column.max_width is not None and column.truncate:
                full = max(minimum, min(full, column.max_width))
            need.append(minimum)
            natural.append(full)
        return need, natural

    def _content_width(self) -> int:
        return self.scrollable_content_region.width

    def _current_layout(self) -> ColumnLayout | None:
        width = self._content_width()
        if width <= 0:
            return None
        if self._layout is None or self._layout.width != width:
            need, natural = self._column_widths()
            self._layout = lay_out(self.columns, need, natural, width)
            self._lines.clear()
        return self._layout

    def _relayout(self) -> bool:
        """Re-plan the columns after widths grew; True when the layout changed
        (the whole table is repainted)."""
        old = self._layout
        self._layout = None
        new = self._current_layout()
        if new is None or old is None or new.placed != old.placed:
            self._repaint_all()
            return True
        return False

    def get_content_width(self, container: Size, viewport: Size) -> int:
        need, natural = self._column_widths()
        return sum(natural) + 2 * (len(natural) - 1) + 2 * PAD

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return HEADER_LINES + max(1, len(self._view))

    # -- view: order and filter ----------------------------------------------------
    def _rebuild_view(self) -> bool:
        """Recompute the rows shown; True when their order or number changed."""
        rows = [self._rows[key] for key in self._order]
        if self._filter:
            rows = self._filtered(rows, self._filter.casefold())
        if self._sort is not None:
            rows = self._sorted(rows, *self._sort)
        view = [row.key for row in rows]
        guides = dict(zip(view, tree_guides([row.depth for row in rows]), strict=True))
        if self._filter:  # its "N of M" follows the rows, shown or not
            self._show_subtitle(len(view))
        if view == self._view and guides == self._guides:
            return False
        old_position = self.cursor_index
        self._view = view
        self._index = {key: position for position, key in enumerate(view)}
        self._guides = guides
        self.virtual_size = Size(0, HEADER_LINES + max(1, len(view)))
        self._keep_cursor(old_position)
        return True

    def _filtered(self, rows: list[Row], needle: str) -> list[Row]:
        def matches(row: Row) -> bool:
            return any(needle in cell_text(value).casefold() for value in row.cells)

        if not any(row.depth for row in rows):
            return [row for row in rows if matches(row)]
        # In a tree, a match keeps its ancestors so it is shown where it belongs.
        keep: list[bool] = [False] * len(rows)
        ancestors: list[int] = []
        for position, row in enumerate(rows):
            while ancestors and rows[ancestors[-1]].depth >= row.depth:
                ancestors.pop()
            if matches(row):
                keep[position] = True
                for ancestor in ancestors:
                    keep[ancestor] = True
            ancestors.append(position)
        return [row for row, kept in zip(rows, keep, strict=True) if kept]

    def _sorted(self, rows: list[Row], index: int, reverse: bool) -> list[Row]:
        column = self.columns[index]

        def key(row: Row) -> Any:
            if column.sort_key is not None:
                return column.sort_key(row)
            return natural_key(cell_text(row.cells[index]))

        def flatten(nodes: list[tuple[Row, list[Any]]]) -> list[Row]:
            out: list[Row] = []
            for row, children in sorted(nodes, key=lambda node: key(node[0]),
                                        reverse=reverse):
                out.append(row)
                out.extend(flatten(children))
            return out

        if not any(row.depth for row in rows):
            return sorted(rows, key=key, reverse=reverse)
        return flatten(_forest(rows))  # siblings are sorted, children stay under parents

    def _keep_cursor(self, old_position: int) -> None:
        """After the view changed: the cursor stays on its row, else at its place."""
        old_key = self._cursor_key
        if old_key is not None and old_key in self._index:
            self._scroll_to_cursor()
            return
        new_key: str | None = None
        if self._view:
            new_key = self._view[max(0, min(old_position, len(self._view) - 1))]
        self._cursor_key = new_key
        if new_key != old_key:
            self.post_message(self.Highlighted(self, new_key))
        self._scroll_to_cursor()

    # -- repainting ------------------------------------------------------------------
    def _repaint_all(self) -> None:
        self._lines.clear()
        self.repaint_count += 1
        self.refresh()

    def _repaint_cells(self, y: int, columns: list[int], layout: ColumnLayout,
                       old: Row) -> None:
        """Repaint what changed of a row on line `y`: its cells `columns`, from `old`."""
        if len(columns) == len(self.columns):  # its state: the padding's colours too
            self.repaint_count += 1
            self.refresh(Region(0, y, layout.width, 1))
            return
        # A region from the first changed character to the last, split where unchanged
        # cells between two changes are more than a cursor move would cost: of a rate
        # going from "1.2 KiB/s" to "1.3 KiB/s" only the "3" goes to the terminal, and
        # a row whose handshake and rate changed sends those two, not the cells (and
        # colour changes) between them.
        row = self._rows[old.key]
        wanted = set(columns)
        spans: list[list[int]] = []
        for placed in layout.placed:
            if placed.column not in wanted:
                continue
            changed = self._changed_span(old, row, placed)
            if changed is None:
                continue
            if spans and changed[0] - spans[-1][1] < SPAN_GAP:
                spans[-1][1] = changed[1]
            else:
                spans.append(list(changed))
        for start, end in spans:
            self.repaint_count += 1
            self.refresh(Region(start, y, end - start, 1))

    def _changed_span(self, old: Row, new: Row, placed: PlacedColumn) -> tuple[int, int] | None:
        """The cells (x from, x to) of a changed value that are drawn differently: the
        whole cell, or, for plain text of one tone, from the first character that
        differs to the last; None when it is drawn the same (e.g. its short form)."""
        whole = (placed.x, placed.x + placed.width)
        if placed.column == 0 and (old.depth or new.depth):
            return whole  # tree guides
        before, after = (self._drawn(row.cells[placed.column], placed) for row in (old, new))
        if before is None or after is None or before[1:] != after[1:] and (
                before[1] != after[1] or before[1]):
            return whole  # a tone colours its text, not the padding: where it ends moved
        first = next((i for i, (a, b) in enumerate(zip(before[0], after[0], strict=False))
                      if a != b), None)
        if first is None:
            return None
        last = next(i for i in range(placed.width - 1, -1, -1) if before[0][i] != after[0][i])
        return placed.x + first, placed.x + last + 1

    def _drawn(self, value: CellValue, placed: PlacedColumn) -> tuple[str, str, int] | None:
        """A cell's text as `_row_line` draws it in its column (aligned to the column's
        width), its tone and the length of the text in it; None unless it is printable
        ASCII, one character a cell."""
        text, tone, short = (value, "", None) if isinstance(value, str) else value
        if not (text.isascii() and text.isprintable()) or (
                short is not None and not (short.isascii() and short.isprintable())):
            return None
        column = self.columns[placed.column]
        shown = fit(text, short, placed.width, column.truncate or placed.column == 0)
        if not shown.isascii():  # cut with an ellipsis
            return None
        return self._aligned(shown, placed.width, column.align), tone, len(shown)

    def _repaint_row(self, key: str | None) -> None:
        if key is None:
            return
        self._lines.pop(key, None)
        position = self._index.get(key)
        if position is None:
            return
        y = position - int(self.scroll_y) + HEADER_LINES
        if HEADER_LINES <= y < self.scrollable_content_region.height:
            self.repaint_count += 1
            self.refresh(Region(0, y, self.scrollable_content_region.width, 1))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._base = None
        self._lines.clear()
        self._cells.clear()

    def _on_resize(self, event: events.Resize) -> None:
        self._lines.clear()
        self._scroll_to_cursor()
        self._tell_window_moved()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if int(old_value) != int(new_value):
            self._tell_window_moved()

    def _on_focus(self, event: events.Focus) -> None:
        self._lines.clear()
        self._base = None

    def _on_blur(self, event: events.Blur) -> None:
        self._lines.clear()
        self._base = None
        self._set_filtering(False)

    # -- drawing ---------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            component = f"live-table--{name}"
            part = self.get_component_rich_style(component, partial=True)
            # A colour with alpha ($text-muted, $text-disabled) is blended with the
            # background only in the full style; the partial one reads as white.
            full = self.get_component_rich_style(component, partial=False)
            style = part + Style(color=full.color if part.color is not None else None,
                                 bgcolor=full.bgcolor if part.bgcolor is not None else None)
            self._styles[name] = style
        return style

    def render_line(self, y: int) -> Strip:
        width = self._content_width()
        layout = self._current_layout()
        base = self._base
        if base is None:
            base = self._base = self.rich_style
        if layout is None:
            return Strip.blank(width, base)
        if y < HEADER_LINES:
            return self._header_line(layout, base)
        position = y - HEADER_LINES + int(self.scroll_y)
        if position >= len(self._view):
            if position == 0 and (self.empty_text or self._filter or self.reading):
                text = (f"No row matches {self._filter!r}." if self._filter
                        else "Reading…" if self.reading else self.empty_text)
                style = base + self._style("empty")
                return Strip([Segment(" " * PAD + text, style)]).adjust_cell_length(
                    width, base)
            return Strip.blank(width, base)
        key = self._view[position]
        row = self._rows[key]
        is_cursor = key == self._cursor_key
        cached = self._lines.get(key)
        if cached is not None and cached[0] is row and cached[1] == position % 2 \
                and cached[2] == is_cursor:
            return cached[3]
        strip = self._row_line(row, layout, base, position, is_cursor)
        if len(self._lines) > 400:
            self._lines.clear()
        self._lines[key] = (row, position % 2, is_cursor, strip)
        return strip

    def _header_line(self, layout: ColumnLayout, base: Style) -> Strip:
        style = base + self._style("header")
        segments = [Segment(" " * PAD, style)]
        x = PAD
        for placed in layout.placed:
            column = self.columns[placed.column]
            if placed.x > x:
                segments.append(Segment(" " * (placed.x - x), style))
            label = column.label if cell_len(column.label) <= placed.width else \
                (column.short_label or column.label)
            label = fit(label, None, placed.width, True)
            segments.append(Segment(self._aligned(label, placed.width, column.align), style))
            x = placed.x + placed.width
        return Strip(segments).adjust_cell_length(layout.width, style).simplify()

    @staticmethod
    def _aligned(text: str, width: int, align: Align) -> str:
        gap = width - cell_len(text)
        if gap <= 0:
            return text
        return " " * gap + text if align == "right" else text + " " * gap

    def _row_line(self, row: Row, layout: ColumnLayout, base: Style, position: int,
                  is_cursor: bool) -> Strip:
        row_style = base
        if self.zebra and position % 2:
            row_style += self._style("zebra")
        state_style = self._style(row.state) if row.state in ROW_STATES else None
        cursor_style = self._style("cursor") if is_cursor else None
        line_style = row_style
        if state_style is not None:
            line_style += state_style
        if cursor_style is not None:
            line_style += cursor_style
        segments = [Segment(" " * PAD, line_style)]
        x = PAD
        cells = self._cells
        if len(cells) > 4096:
            cells.clear()
        for placed in layout.placed:
            value = row.cells[placed.column]
            guide = self._guides.get(row.key, "") if placed.column == 0 and row.depth else ""
            if placed.x > x:
                segments.append(Segment(" " * (placed.x - x), line_style))
            key = (value, guide, placed.column, placed.width, row_style, line_style,
                   state_style, cursor_style)
            made = cells.get(key)
            if made is None:
                made = cells[key] = self._cell_segments(
                    value, guide, placed, row_style, line_style, state_style, cursor_style)
            segments += made
            x = placed.x + placed.width
        if x < layout.width:
            segments.append(Segment(" " * (layout.width - x), line_style))
        elif x > layout.width:
            return Strip(segments).adjust_cell_length(layout.width, line_style).simplify()
        # One segment per run of one style: fewer escape sequences on the wire.
        return Strip(list(Segment.simplify(segments)), layout.width)

    def _cell_segments(self, value: CellValue, guide: str, placed: PlacedColumn,
                       row_style: Style, line_style: Style, state_style: Style | None,
                       cursor_style: Style | None) -> tuple[Segment, ...]:
        """One cell of a row: its text fitted to its width, aligned, in its tone."""
        column = self.columns[placed.column]
        if isinstance(value, str):
            text, tone, short = safe(value), "", None
        else:
            text, tone, short = safe(value.text), value.tone, value.short
            short = safe(short) if short is not None else None
        if guide:
            text = guide + text
            short = guide + short if short is not None else None
        shown = fit(text, short, placed.width, column.truncate or placed.column == 0)
        style = line_style
        if tone in TONES:
            style = row_style + self._style(tone)
            if state_style is not None:
                style += state_style
            if cursor_style is not None:
                style += cursor_style
        gap = placed.width - cell_len(shown)
        if gap <= 0:
            return (Segment(shown, style),)
        if column.align == "right":
            return Segment(" " * gap, line_style), Segment(shown, style)
        return Segment(shown, style), Segment(" " * gap, line_style)

    # -- cursor and keys ---------------------------------------------------------------
    def _set_cursor(self, key: str | None) -> None:
        old = self._cursor_key
        if key == old:
            self._scroll_to_cursor()
            return
        self._cursor_key = key
        self._repaint_row(old)
        self._repaint_row(key)
        self._scroll_to_cursor()
        self.post_message(self.Highlighted(self, key))

    def _body_height(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER_LINES)

    def _scroll_to_cursor(self) -> None:
        position = self.cursor_index
        if position < 0:
            return
        top = int(self.scroll_y)
        body = self._body_height()
        if position < top:
            self.scroll_to(y=position, animate=False)
        elif position >= top + body:
            self.scroll_to(y=position - body + 1, animate=False)

    def action_cursor(self, step: int) -> None:
        if self._view:
            self.move_cursor(index=max(0, self.cursor_index) + step)

    def action_page(self, direction: int) -> None:
        if self._view:
            self.move_cursor(index=max(0, self.cursor_index) + direction * self._body_height())

    def action_first(self) -> None:
        self.move_cursor(index=0)

    def action_last(self) -> None:
        self.move_cursor(index=len(self._view) - 1)

    def action_nothing(self) -> None:
        """Left/right: the table never scrolls sideways (columns drop instead)."""

    def action_select(self) -> None:
        if self._cursor_key is not None:
            self.post_message(self.Selected(self, self._cursor_key))

    def action_order(self, reverse: bool) -> None:
        """`o`: order by the next shown column (after the last: as given); `O`: reverse."""
        if reverse:
            if self._sort is not None:
                self.sort_by(self.columns[self._sort[0]].key, not self._sort[1])
            else:
                self.sort_by(self.columns[0].key, True)
        else:
            layout = self._current_layout()
            shown = [p.column for p in layout.placed] if layout else [0]
            current = self._sort[0] if self._sort is not None else -1
            later = [index for index in shown if index > current]
            self.sort_by(self.columns[later[0]].key if later else None)
        self._show_subtitle()

    def action_start_filter(self) -> None:
        self._set_filtering(True)

    def action_clear_filter(self) -> None:
        """`esc` on a table with a kept filter: every row again."""
        if self._filter:
            self.set_filter("")
            self._show_subtitle()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self._filter) and not self._filtering
        return True

    def urgent_keys(self) -> tuple[str, ...]:
        """Keys the footer shows first now (`zsn.tui.widgets.footer.KeyBar`)."""
        return ("escape",) if self._filter and not self._filtering else ()

    def set_note(self, note: str) -> None:
        """The pane's own words at the end of the border's subtitle."""
        if note != self._note:
            self._note = note
            self._show_subtitle()

    def _set_filtering(self, on: bool) -> None:
        if on != self._filtering:
            self._filtering = on
            self.refresh_bindings()  # the footer drops the keys typing now takes
        self._show_subtitle()

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return self._filtering and (
            (character is not None and character.isprintable())
            or key in ("backspace", "enter", "escape"))

    async def _on_key(self, event: events.Key) -> None:
        if not self._filtering:
            return
        if event.key == "escape":
            self._set_filtering(False)
            self.set_filter("")
        elif event.key == "enter":
            self._set_filtering(False)
        elif event.key == "backspace":
            self.set_filter(self._filter[:-1])
        elif event.character is not None and event.character.isprintable():
            self.set_filter(self._filter + event.character)
        else:
            return
        event.stop()
        event.prevent_default()
        self._show_subtitle()

    def _show_subtitle(self, shown: int | None = None) -> None:
        parts: list[str] = []
        if self._filtering or self._filter:
            cursor = "▏" if self._filtering else ""
            count = len(self._view) if shown is None else shown
            parts.append(f"/{self._filter}{cursor} {count} of {len(self._order)}"
                         + (" · esc clears" if self._filter else ""))
        if self._sort is not None:
            index, reverse = self._sort
            parts.append(f"by {self.columns[index].label} {'↓' if reverse else '↑'}")
        if self._note:
            parts.append(self._note)
        subtitle = "  ".join(parts)
        if self._subtitle != subtitle:
            self._subtitle = subtitle
            self.border_subtitle = safe_title(subtitle)

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < HEADER_LINES:
            return
        position = offset.y - HEADER_LINES + int(self.scroll_y)
        if 0 <= position < len(self._view):
            key = self._view[position]
            if key == self._cursor_key and event.chain > 1:
                self.action_select()
            self.move_cursor(key)


