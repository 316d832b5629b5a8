"""`?` in any pane: opens at once with the pane's own keys first, every key of the pane
listed, its border saying how much is below, and keys typed while it opens are not
lost."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static

from tests.pilot import screen_text, type_burst, wait_for_rows, wait_until
from zsn.tui.app import ZsnApp
from zsn.tui.screens.help import HelpScreen
from zsn.tui.widgets.table import LiveTable


async def test_help_opens_with_the_panes_own_keys_first(fixed_app: ZsnApp) -> None:
    async with fixed_app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        pane = fixed_app.active_pane()
        assert pane is not None
        await pilot.press("question_mark")
        assert isinstance(fixed_app.screen, HelpScreen)
        body = "\n".join(screen_text(fixed_app))
        assert "Keys of WireGuard" in body
        first_key = next(b for b in pane.BINDINGS if isinstance(b, Binding))
        assert first_key.description in body  # on the first screen, before the rest
        # Every key of the pane, shown in the footer or not, is in the help.
        listed = {key: action for key, action, _ in fixed_app.screen.bindings_here}
        for binding in pane.BINDINGS:
            assert isinstance(binding, Binding)
            assert listed[binding.key_display or binding.key] == binding.description
        more = fixed_app.screen.query_one("#help-more", Static)
        await wait_until(pilot, lambda: "Keys in every pane" in getattr(more.content, "markup",
                                                                        ""),
                         "the rest of the help")
        box = fixed_app.screen.query_one("#help")
        await wait_until(pilot, lambda: " more lines (↑↓ pgdn)" in str(box.border_subtitle),
                         "the border saying how much is below")


async def test_keys_typed_while_help_opens_are_not_lost(fixed_app: ZsnApp) -> None:
    async with fixed_app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        peers = fixed_app.query_one("#wg-peers", LiveTable)
        peers.focus()
        await pilot.pause()
        before = peers.cursor_index
        type_burst(fixed_app, "question_mark", "escape", "down")
        await wait_until(pilot, lambda: not isinstance(fixed_app.screen, HelpScreen)
                         and peers.cursor_index == before + 1, "help closed, cursor moved")


async def test_a_key_typed_with_the_one_that_opens_help_reaches_it(fixed_app: ZsnApp) -> None:
    """`?` and `end` in one write: `end` scrolls the whole help to its end, not the
    first frame's part of it (help then at its top)."""
    async with fixed_app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        type_burst(fixed_app, "question_mark", "end")
        await wait_until(pilot, lambda: isinstance(fixed_app.screen, HelpScreen)
                         and fixed_app.screen.drawn, "help")
        box = fixed_app.screen.query_one("#help")
        await wait_until(pilot, lambda: box.max_scroll_y > 0
                         and box.scroll_y == box.max_scroll_y, "help scrolled to its end")
        assert "switch pane (the number is on each tab)" in "\n".join(screen_text(fixed_app))
