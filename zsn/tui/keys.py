"""Keys and pastes are delivered one at a time: none is lost or lands in the wrong place.

Textual routes a key to the widget focused when the app reads it from the terminal
and goes on to the next key at once. Typed fast or pasted, a burst therefore runs
ahead of its own effects: after `tab` the next characters still go to the field
being left, after the key that opens a form they go to the screen underneath
(where they do nothing), after `enter` on a table they miss the table it focuses.

`KeySequencer` holds each key (or paste) back until the one before it is done:
its widget handled it and it bubbled up as far as it goes (a probe follows it up
the DOM through each node's message queue, behind it), a screen it opened is
mounted (with its first field focused) and, for a screen drawn in steps
(`DrawnInSteps`, the help), drawn whole, and the focus changes it asked for are made
(the release waits behind them in the app's queue). Then the next one is
routed, by Textual's own rules, to wherever the previous one left the focus. A key
whose effects never finish (a node removed under it) is released after
`KEY_SECONDS` anyway, so the keyboard can never stall. Characters waiting for a
text field that has the focus go to it together (typing there moves no focus).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App, ScreenStackError
from textual.dom import DOMNode
from textual.message_pump import MessagePump

KEY_SECONDS = 5.0
"""At most this long waiting for one key's effects before the next key goes: a bound
for effects that never finish, not a speed goal. A key's effects finish in
milliseconds on an idle machine, but over a second on a busy one (two cores, other
work), and a watchdog firing then would send the next key ahead of them."""
SCREEN_SECONDS = 5.0
"""At most this long waiting for a screen a key opened to be mounted (same reason)."""
SCREEN_POLL_SECONDS = 0.005


class DrawnInSteps:
    """A screen whose first frame shows only a part of it (at once, even in a busy
    pane): keys that follow the one that opened it wait until it sets `drawn` (`end`
    must reach the end of the whole, not of the first part)."""

    drawn: bool = False


def _screen_ready(app: App[Any]) -> bool:
    try:
        screen = app.screen
    except ScreenStackError:  # no screen yet, or shutting down
        return True
    return screen.is_mounted and not (isinstance(screen, DrawnInSteps) and not screen.drawn)


class KeySequencer:
    """Used by the app's ``on_event``: `hold` a key that must wait, else `deliver` it."""

    def __init__(self, app: App[Any],
                 route: Callable[[events.Event], Awaitable[MessagePump | None]]) -> None:
        self._app = app
        self._route = route
        """Routes a key or paste by Textual's own rules; returns the node it was given
        to (the focused widget or the screen), None when the app handled it."""
        self._waiting: deque[events.Event] = deque()
        self._busy = False
        self._current: events.Event | None = None
        """The key whose effects are being waited for."""
        self._watchdog: asyncio.TimerHandle | None = None

    def hold(self, event: events.Event) -> bool:
        """Whether `event`, a key or paste just read, waits for the one before it."""
        if self._busy:
            self._waiting.append(event)
            return True
        return False

    async def deliver(self, event: events.Event) -> None:
        """Route `event` now and hold the next ones until it is done."""
        self._follow(event, await self._route(event))

    def _follow(self, event: events.Event, target: MessagePump | None) -> None:
        self._busy = True
        self._current = event
        loop = asyncio.get_running_loop()
        self._watchdog = loop.call_later(KEY_SECONDS, self._done, event)
        if target is None or not target.call_later(self._probe, target, event):
            self._done(event)

    def _probe(self, node: MessagePump, event: events.Event) -> None:
        # Runs in `node`'s queue behind the key: the key is done with `node`, and, if
        # it bubbles, it is already in the parent's queue, ahead of the next probe.
        # A key `node` stopped goes no further (a character an input took): done.
        if event is not self._current:
            return
        stopped = getattr(event, "_stop_propagation", False)  # Textual has no getter
        parent = node.parent if isinstance(node, DOMNode) else None
        if stopped or node is self._app or parent is None \
                or not parent.call_later(self._probe, parent, event):
            self._done(event)

    def _done(self, event: events.Event) -> None:
        if event is not self._current:
            return
        self._current = None
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self._when_screen_ready(time.monotonic() + SCREEN_SECONDS)

    def _when_screen_ready(self, deadline: float) -> None:
        if _screen_ready(self._app) or time.monotonic() > deadline:
            # Behind what the key's handlers queued on the app (a deferred focus).
            if not self._app.call_later(self._release, deadline):
                self._waiting.clear()  # the app is closing
                self._busy = False
        else:
            asyncio.get_running_loop().call_later(SCREEN_POLL_SECONDS,
                                                  self._when_screen_ready, deadline)

    async def _release(self, deadline: float) -> None:
        # In the app's queue: the next key is routed here, as the app would have.
        if not (self._waiting and self._app.is_running):
            self._waiting.clear()
            self._busy = False
            return
        if not _screen_ready(self._app) and time.monotonic() <= deadline:
            # What the key's handlers queued opened a screen meanwhile (an action runs
            # after the key is routed): wait for that one too.
            self._when_screen_ready(deadline)
            return
        from textual.widgets import Input  # loaded by the first form, not at start-up

        event = self._waiting.popleft()
        # Characters typed into a text field go together: typing moves no focus.
        while self._waiting and _is_character(event) and _is_character(self._waiting[0]) \
                and isinstance(self._app.focused, Input):
            await self._route(event)
            event = self._waiting.popleft()
        await self.deliver(event)


def _is_character(event: events.Event) -> bool:
    return isinstance(event, events.Key) and event.is_printable
