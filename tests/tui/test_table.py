"""LiveTable, the table of every pane: columns by priority, quiet updates, keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from textual.app import App, ComposeResult

from tests.pilot import _ESCAPES, TerminalOutput, screen_text, shown_row, wait_until
from zsn.tui.output import CellUpdate, tight
from zsn.tui.widgets.table import LiveTable, fit, lay_out, tree_guides
from zsn.view import Cell, Column, Row, cell_text, natural_key

STYLES = Path(__file__).parent.parent.parent / "zsn" / "tui" / "styles" / "table.tcss"

COLUMNS = (
    Column("name", "Peer", 1),
    Column("handshake", "Handshake", 2, short_label="Shake"),
    Column("rate", "↓ Rate", 3, min_width=9, align="right"),
    Column("allowed", "Allowed IPs", 4, short_label="IPs"),
    Column("received", "Received", 6, short_label="Recv", align="right"),
    Column("key", "Key", 7, truncate=True, min_width=9),
)


def peer_row(index: int, rate: str = "1.2 KiB/s", depth: int = 0) -> Row:
    return Row(f"key{index}", (
        f"peer-{index}", Cell("42s", "good"), rate,
        Cell("10.77.0.2/32, fd77::2/128", short="10.77.0.2/32 +1"), "213 B",
        "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=",
    ), depth=depth)


def sent_updates(app: App[None], plain: bool = False) -> list[str]:
    """What each partial update of `app` sends to the terminal from now on (`plain`:
    without its escape sequences), as zsn's `CellUpdate` writes it."""
    sent: list[str] = []
    display = app._display

    def tight_display(screen: Any, renderable: Any) -> None:
        update = tight(renderable)
        if isinstance(update, CellUpdate) and not app._batch_count:
            text = update.render_segments(app.console)
            sent.append(_ESCAPES.sub("", text) if plain else text)
        display(screen, renderable)

    app._display = tight_display  # type: ignore[method-assign]
    return sent


class TableApp(App[None]):
    CSS_PATH = [str(STYLES)]

    def __init__(self, rows: list[Row], columns: tuple[Column, ...] = COLUMNS) -> None:
        super().__init__()
        self.rows = rows
        self.columns = columns

    def compose(self) -> ComposeResult:
        yield LiveTable(self.columns, id="table", title="Peers")

    def on_mount(self) -> None:
        table = self.query_one(LiveTable)
        table.update(self.rows)
        table.focus()


def table_of(app: App[Any]) -> LiveTable:
    return app.query_one("#table", LiveTable)


# -- layout: pure ---------------------------------------------------------------

@given(width=st.integers(min_value=10, max_value=200),
       need=st.lists(st.integers(min_value=1, max_value=30), min_size=6, max_size=6),
       extra=st.lists(st.integers(min_value=0, max_value=30), min_size=6, max_size=6))
def test_columns_are_dropped_whole_by_priority_and_never_narrower_than_needed(
        width: int, need: list[int], extra: list[int]) -> None:
    natural = [n + e for n, e in zip(need, extra, strict=True)]
    layout = lay_out(COLUMNS, need, natural, width)
    shown = [placed.column for placed in layout.placed]
    assert shown[0] == 0  # the first column is never dropped
    if need[0] + 2 <= width:
        assert layout.placed[-1].x + layout.placed[-1].width <= width - 1
        for placed in layout.placed:
            assert need[placed.column] <= placed.width <= max(natural[placed.column],
                                                             need[placed.column])
    # A column is hidden only when every column less important is hidden too.
    for hidden in layout.hidden:
        less_important = [i for i in range(1, 6)
                          if (COLUMNS[i].priority, i) > (COLUMNS[hidden].priority, hidden)]
        assert all(i in layout.hidden for i in less_important)


def test_a_value_is_shown_whole_or_short_and_only_keys_are_cut() -> None:
    assert fit("213 B/s", None, 7, False) == "213 B/s"
    assert fit("10.77.0.2/32, fd77::2/128", "10.77.0.2/32 +1", 20, False) == "10.77.0.2/32 +1"
    assert fit("8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=", None, 9, True) == "8DtMxP7o…"


def test_numbers_in_text_sort_by_value() -> None:
    names = ["peer-10", "peer-9", "Peer-100", "peer-1"]
    assert sorted(names, key=natural_key) == ["peer-1", "peer-9", "peer-10", "Peer-100"]


def test_tree_rows_get_guides() -> None:
    # bond0 with two members, then br0 with one port that has a child of its own.
    assert tree_guides([0, 1, 1, 0, 1, 2]) == ["", "├ ", "└ ", "", "└ ", "  └ "]
    assert tree_guides([0, 1, 2, 1]) == ["", "├ ", "│ └ ", "└ "]


# -- on screen ------------------------------------------------------------------

def header_and_cells(app: App[Any]) -> tuple[list[str], list[list[str]]]:
    lines = [line.strip("│ ") for line in screen_text(app) if line.startswith("│")]
    return lines[0].split(), [line.split() for line in lines[1:] if line.strip()]


async def test_when_narrow_whole_columns_go_and_nothing_is_cut() -> None:
    app = TableApp([peer_row(i) for i in range(3)])
    async with app.run_test(size=(45, 10)) as pilot:
        await pilot.pause()
        table = table_of(app)
        header = " ".join(header_and_cells(app)[0])
        labels = [c.label for c in COLUMNS if c not in table.hidden_columns]
        assert [c.key for c in table.hidden_columns] == ["received", "key"]
        for label in labels:
            assert label in header or (COLUMNS[[c.label for c in COLUMNS].index(label)]
                                       .short_label or "") in header.split()
        body = "\n".join(screen_text(app))
        assert "1.2 KiB/s" in body and "213 B" not in body
        assert "10.77.0.2/32 +1" in body or "10.77.0.2/32, fd77::2/128" in body
    wide = TableApp([peer_row(i) for i in range(3)])
    async with wide.run_test(size=(120, 10)) as pilot:
        await pilot.pause()
        assert table_of(wide).hidden_columns == []
        body = "\n".join(screen_text(wide))
        assert "10.77.0.2/32, fd77::2/128" in body and "Received" in body


async def test_an_update_with_the_same_rows_repaints_nothing() -> None:
    rows = [peer_row(i) for i in range(50)]
    app = TableApp(rows)
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        output = TerminalOutput(app)
        repaints = table.repaint_count
        for _ in range(3):
            table.update([peer_row(i) for i in range(50)])
            await pilot.pause()
        assert table.repaint_count == repaints
        assert output.bytes == 0
        # One cell of a row on screen: only that cell goes to the terminal.
        table.update([peer_row(i, rate="9.9 KiB/s" if i == 1 else "1.2 KiB/s")
                      for i in range(50)])
        await pilot.pause()
        assert table.repaint_count == repaints + 1
        assert 0 < output.bytes < 120, output.bytes
        assert "9.9 KiB/s" in "\n".join(screen_text(app))
        # A row far below the screen: nothing on the terminal changes.
        output.reset()
        table.update([peer_row(i, rate="7.7 KiB/s" if i == 40 else
                               "9.9 KiB/s" if i == 1 else "1.2 KiB/s") for i in range(50)])
        await pilot.pause()
        assert output.bytes == 0


async def test_a_changed_value_sends_only_the_characters_that_differ() -> None:
    """Over SSH every byte counts: of "1.2 KiB/s" becoming "1.3 KiB/s" only the "3" goes
    out (moved to and coloured); a tone that changes sends its whole cell."""
    app = TableApp([peer_row(i) for i in range(5)])
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        sent = sent_updates(app, plain=True)

        async def shown(rates: dict[int, str], tone: str = "good") -> list[str]:
            sent.clear()
            table.update([peer_row(i, rates.get(i, "1.2 KiB/s"))._replace(
                cells=(f"peer-{i}", Cell("42s", tone if i == 2 else "good"),
                       rates.get(i, "1.2 KiB/s"), *peer_row(i).cells[3:]))
                for i in range(5)])
            await pilot.pause()
            return sent

        assert await shown({1: "1.3 KiB/s"}) == ["3"]
        # "1.2 KiB/s" -> "  512 B/s" (right-aligned) differs up to the "B"
        assert await shown({1: "1.3 KiB/s", 3: "512 B/s"}) == ["  512 "]
        assert await shown({3: "512 B/s"}) == ["2"]  # row 1 back to 1.2 KiB/s
        assert await shown({3: "512 B/s"}, tone="warn") == ["42s      "]  # the whole cell
        assert "512 B/s" in "\n".join(screen_text(app))


async def test_two_changes_far_apart_in_a_row_are_sent_without_the_cells_between() -> None:
    """A row whose handshake and rate changed sends the two, each moved to: the cells
    between them (and the colours they would set) are more than a cursor move."""
    app = TableApp([peer_row(i) for i in range(5)])
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        sent = sent_updates(app)
        repaints = table.repaint_count
        row = peer_row(1, "1.3 KiB/s")
        table.update([row._replace(cells=(row.cells[0], Cell("47s", "good"), *row.cells[2:]))
                      if i == 1 else peer_row(i) for i in range(5)])
        await pilot.pause()
        assert table.repaint_count == repaints + 2
        [update] = sent
        assert _ESCAPES.sub("", update) == "73"
        # Two cursor moves: to the row, then along it (shorter than to line and column).
        colours = r"(\x1b\[[\d;]*m)*"
        assert re.fullmatch(rf"\x1b\[\d+;\d+H{colours}7\x1b\[\d+[CG]{colours}3{colours}",
                            update), repr(update)
        assert "47s" in "\n".join(screen_text(app)) and "1.3 KiB/s" in "\n".join(
            screen_text(app))


async def test_end_and_home_go_to_the_last_and_first_row() -> None:
    app = TableApp([peer_row(i) for i in range(500)])
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_key == "key499"
        assert any(line.startswith("│ peer-499 ") for line in screen_text(app))
        await pilot.press("home")
        assert table.cursor_key == "key0"
        await pilot.press("pagedown")
        assert table.cursor_index > 1
        await pilot.press("right")  # never scrolls sideways
        assert table.scroll_x == 0


async def test_cursor_stays_on_its_row_when_rows_come_and_go() -> None:
    app = TableApp([peer_row(i) for i in range(10)])
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        table.move_cursor("key5")
        table.update([peer_row(i) for i in range(10) if i != 2])
        assert table.cursor_key == "key5"
        table.update([peer_row(i) for i in range(10) if i not in (2, 5)])
        assert table.cursor_key == "key6"  # the row that took its place


async def test_filter_and_order_work_over_every_row_not_only_those_on_screen() -> None:
    rows = [peer_row(i) for i in range(300)]
    rows[250] = rows[250]._replace(cells=("zed-phone", *rows[250].cells[1:]))
    app = TableApp(rows)
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        await pilot.press("slash", *"zed")
        assert table.shown_keys == ["key250"]
        assert "/zed" in str(table.border_subtitle)
        await pilot.press("enter")
        assert table.filter_text == "zed"
        await pilot.press("slash", "escape")
        assert table.shown_count == 300
        await pilot.press("o")  # by Peer
        await pilot.press("O")  # reversed
        assert [cell_text(shown_row(table, k).cells[0]) for k in table.shown_keys[:2]] == [
            "zed-phone", "peer-299"]


async def test_filter_typing_is_not_taken_by_the_panes_keys() -> None:
    app = TableApp([peer_row(i) for i in range(5)])
    app.bind("a", "bell", description="would steal the key")
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        await pilot.press("slash", "p", "e", "e", "r", "-", "4")
        assert table.filter_text == "peer-4"
        assert table.shown_keys == ["key4"]


async def test_tree_rows_are_indented_under_their_parent() -> None:
    rows = [Row("bond0", ("bond0", "", "", "", "", "")),
            Row("eth0", ("eth0", "", "", "", "", ""), depth=1),
            Row("eth1", ("eth1", "", "", "", "", ""), depth=1)]
    app = TableApp(rows)
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        body = screen_text(app)
        assert body[2].startswith("│ bond0") and body[3].startswith("│ ├ eth0")
        assert body[4].startswith("│ └ eth1")
        table = table_of(app)
        table.sort_by("name", reverse=True)  # children stay under their parent
        assert table.shown_keys == ["bond0", "eth1", "eth0"]


async def test_rows_that_arrive_after_the_first_frame_widen_their_columns() -> None:
    app = TableApp([])
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()  # drawn empty: columns as wide as their labels
        table_of(app).update([peer_row(i) for i in range(3)])
        await pilot.pause()
        body = "\n".join(screen_text(app))
        assert "peer-1 " in body and "1.2 KiB/s" in body and "10.77.0.2/32" in body
        assert "…" not in body.replace("8DtMxP7o…", "")


async def test_an_empty_table_says_reading_until_its_first_rows() -> None:
    class EmptyApp(App[None]):
        CSS_PATH = [str(STYLES)]

        def compose(self) -> ComposeResult:
            yield LiveTable(COLUMNS, id="table", empty_text="No peers.")

    app = EmptyApp()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        assert "Reading…" in "\n".join(screen_text(app))
        table_of(app).update([])
        await pilot.pause()
        body = "\n".join(screen_text(app))
        assert "No peers." in body and "Reading…" not in body


async def test_esc_clears_a_kept_filter_and_the_border_always_says_it_is_there() -> None:
    app = TableApp([peer_row(i) for i in range(12)])
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        await pilot.press("slash", *"peer-1", "enter")  # kept: peer-1, peer-10, peer-11
        assert table.filter_text == "peer-1" and table.shown_count == 3
        assert str(table.border_subtitle) == "/peer-1 3 of 12 · esc clears"
        table.update([peer_row(i) for i in range(13)])  # a matching row arrives: count moves
        await pilot.pause()
        assert str(table.border_subtitle) == "/peer-1 4 of 13 · esc clears"
        await pilot.press("escape")
        assert table.filter_text == "" and table.shown_count == 13
        assert str(table.border_subtitle) == ""


async def test_a_new_row_the_kept_filter_hides_is_announced() -> None:
    app = TableApp([peer_row(i) for i in range(3)])
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        await pilot.press("slash", *"peer-1", "enter")
        table.update([peer_row(i) for i in range(3)]
                     + [Row("bond7", ("bond7", "", "", "", "", ""))])
        await pilot.pause()
        notices = [n.message for n in app._notifications]
        assert notices == ["New row is hidden by the filter /peer-1: bond7 (esc clears the "
                           "filter)."]
        assert "bond7" not in table.shown_keys
        table.update([peer_row(i) for i in range(3)]
                     + [Row("bond7", ("bond7", "", "", "", "", ""))])  # said once
        await pilot.pause()
        assert len(app._notifications) == 1


async def test_the_footer_shows_esc_first_while_a_kept_filter_hides_rows() -> None:
    from zsn.tui.widgets.footer import KeyBar

    class FooterApp(TableApp):
        def compose(self) -> ComposeResult:
            yield from super().compose()
            yield KeyBar(id="keys")

    app = FooterApp([peer_row(i) for i in range(5)])
    app.bind("a", "bell", description="Add a peer")
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        bar = app.query_one(KeyBar)
        assert "escape" not in bar.shown_keys
        await pilot.press("slash", *"peer-4", "enter")
        await wait_until(pilot, lambda: bar.shown_keys[:1] == ["escape"], "esc first")
        await pilot.press("escape")
        await wait_until(pilot, lambda: "escape" not in bar.shown_keys, "esc gone")


async def test_rate_columns_keep_their_width_and_place_as_values_change() -> None:
    """A rate going from '-' to '1023.9 KiB/s' moves no column: the width is the widest
    rate's, declared by the column, not this refresh's value."""
    from zsn.format import human_rate
    from zsn.view import rate_columns

    columns = (Column("name", "Link", 1), *rate_columns(2), Column("mtu", "MTU", 3))

    def rows(rate: float | None) -> list[Row]:
        shown = human_rate(rate) if rate is not None else "-"
        return [Row("eth0", ("eth0", shown, shown, "1500"), data=(None, rate, rate))]

    app = TableApp(rows(None), columns)
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        table = table_of(app)
        before = table._current_layout()
        for rate in (0.0, 1023.9 * 1024, 118e6, None):
            table.update(rows(rate))
            await pilot.pause()
            assert table._current_layout() == before


async def test_muted_and_gone_rows_are_dimmer_than_the_text_not_brighter() -> None:
    """Another namespace's rows (muted) and vanished ones (gone) are drawn in the
    theme's muted and disabled text colours blended over the background, as the docs say
    (greyed): read unblended, those colours with alpha came out white, brighter than
    every other row."""
    app = TableApp([peer_row(1), Row("key2", peer_row(2).cells, state="muted"),
                    Row("key3", peer_row(3).cells, state="gone")])
    async with app.run_test(size=(100, 10)) as pilot:
        app.theme = "textual-dark"
        await pilot.pause()
        table = table_of(app)
        text = table.rich_style.color
        assert text is not None and text.triplet is not None

        def brightness(state: str) -> int:
            color = table._style(state).color
            assert color is not None and color.triplet is not None, state
            return sum(color.triplet)

        assert brightness("gone") < brightness("muted") < sum(text.triplet)
