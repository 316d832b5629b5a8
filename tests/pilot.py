"""Waiting in Pilot tests: panes read in worker threads, so tests wait for what a
user would see, with a bound, instead of sleeping a fixed time. Plus what the
screen shows and what the app would write to a terminal."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from textual import events
from textual.app import App
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget

from zsn.tui.widgets.table import LiveTable
from zsn.view import Row, cell_text

WAIT_SECONDS = 60.0
"""How long a test waits for what a user would see before calling it broken. A bound
for a hang, not a speed goal: on a machine busy with other work (two cores, a CI
runner) a first read can take seconds, and a test must not fail for that."""


async def wait_until(pilot: Any, predicate: Callable[[], object], what: str = "condition",
                     seconds: float = WAIT_SECONDS) -> None:
    """Until `predicate()` is true; a widget it asks for that is not there yet (a pane
    is made when its tab is first shown) counts as not yet."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if predicate():
                return
        except NoMatches:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {seconds:g} s")
        await pilot.pause(0.02)


async def settle(pilot: Any) -> None:
    """Until no worker runs (an action, a plan) and no pane reads: what they started
    (a plan applied, then the read after it) is shown."""
    from zsn.tui.panes.base import LivePane

    app = pilot.app
    while True:
        await app.workers.wait_for_complete()
        reading = [pane for pane in app.query(LivePane) if pane.reading]
        if not reading:
            if not any(worker.is_running for worker in app.workers):
                return
            continue
        for pane in reading:
            await pane.reads_shown()


async def wait_for_rows(pilot: Any, table: str = "#wg-peers") -> None:
    """Until the table shows the first poll's rows (and the screen has settled)."""
    rows = pilot.app.query_one(table)
    await wait_until(pilot, lambda: getattr(rows, "row_count", 0), f"rows in {table}")
    await pilot.pause()


def shown_row(table: LiveTable, key: str) -> Row:
    """The table's row for `key`, which the test expects it to have."""
    row = table.get_row(key)
    assert row is not None, f"no row {key!r}"
    return row


ScreenT = TypeVar("ScreenT", bound=Screen[Any])


def screen_as(app: App[Any], kind: type[ScreenT]) -> ScreenT:
    """The app's top screen, which the test expects to be a `kind`."""
    screen = app.screen
    assert isinstance(screen, kind), screen
    return screen


def drawing_pending(app: App[Any]) -> bool:
    """True while a screen or a shown widget still has a layout, a repaint, a scroll or
    a restyle to do, or a message to handle: what it will write is not written yet."""
    # Only the screen on top draws (a change below it is drawn through it).
    for screen in (app.screen,):
        if (screen._layout_required or screen._scroll_required or screen._repaint_required
                or screen._recompose_required or screen._dirty_widgets or screen._callbacks
                or screen._compositor._dirty_regions):
            return True
        for node in screen.walk_children(Widget, with_self=True):
            if not all(each.display for each in node.ancestors_with_self
                       if hasattr(each, "display")):
                continue  # a hidden pane's widgets draw nothing (and keep their flags)
            if (node._layout_required or node._repaint_required or node._scroll_required
                    or node._recompose_required or node._refresh_styles_required
                    or not node._message_queue.empty()):
                return True
    return bool(app._batch_count or not app._message_queue.empty())


async def wait_until_quiet(pilot: Any) -> None:
    """Until start-up's deferred work is over and drawn: every pane made (a timer makes
    the panes not shown yet a second after start), WireGuard's first findings line
    (a timer starts it), every worker and read ended and nothing waiting to be drawn. A test
    of what a refresh writes then measures the refresh only, however slow the machine."""
    from zsn.tui.panes.base import LivePane

    app = pilot.app
    await wait_until(pilot, lambda: len(app.query(LivePane)) == len(app.domains),
                     "every pane made")
    panes = app.query("#wireguard")
    if panes:
        await wait_until(pilot, lambda: hasattr(panes.first(), "findings"),
                         "WireGuard's first findings line")
    await settle(pilot)
    await wait_until(pilot, lambda: not drawing_pending(app), "everything drawn")


def row_texts(table: LiveTable) -> list[list[str]]:
    """Every row's cells as text, in the order shown."""
    return [[cell_text(value) for value in row.cells]
            for row in (table.get_row(key) for key in table.shown_keys) if row is not None]


def screen_text(app: App[Any]) -> list[str]:
    """The lines on the screen now, as plain text."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=$]*[A-Za-z~]|\x1b\][^\x07]*\x07")


class TerminalOutput:
    """What the app would write to a real terminal from now on: Textual's headless
    driver writes nothing, so the screen updates are rendered here instead."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.updates = 0
        self.bytes = 0
        self.first_frame = ""
        """The text of the first screen update (escape sequences removed)."""
        self.written: list[str] = []
        """Every update as written, escape sequences and all."""
        self._display = app._display

        def display(screen: Any, renderable: Any) -> None:
            if renderable is not None and not app._batch_count:
                self.updates += 1
                written = renderable.render_segments(app.console)
                self.bytes += len(written.encode())
                self.written.append(written)
                if self.updates == 1:
                    self.first_frame = _ESCAPES.sub("", written)
            self._display(screen, renderable)

        app._display = display  # type: ignore[method-assign]

    def reset(self) -> None:
        self.updates = 0
        self.bytes = 0
        self.written.clear()


def type_burst(app: App[Any], *keys: str | Paste) -> None:
    """Send keys (and pastes) the way a terminal does when they are typed fast or
    pasted: all at once, without waiting for any to be handled (`pilot.press` waits
    until the app is idle after each key, which hides keys running ahead of their
    effects). A one-character key is that character; others are key names ("tab")."""
    for key in keys:
        if isinstance(key, Paste):
            app.post_message(events.Paste(key.text))
            continue
        character = key if len(key) == 1 else {"space": " "}.get(key)
        app.post_message(events.Key(key, character))


class Paste(NamedTuple):
    """A bracketed paste in `type_burst`."""

    text: str
