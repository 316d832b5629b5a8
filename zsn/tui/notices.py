"""Notifications wait while a screen that must stay uncovered is up.

A QR code is scanned from the screen and a client config is read from it: a toast
in the corner would cover modules of the code or lines of the config. While such
a screen is shown (it calls `ZsnApp.keep_uncovered` and, when it goes,
`ZsnApp.uncovered`), notifications are held, those still on screen are taken
down, and all of them are shown, each for its full time, once it is closed.
"""

from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple

from textual.notifications import SeverityLevel

RECENT = 16
"""Notifications remembered: enough for all that can be on screen at once."""


class Notice(NamedTuple):
    """A notification as sent (a NamedTuple: made at every start, a sixth of a frozen
    dataclass's cost to define)."""

    message: str
    title: str
    severity: SeverityLevel
    timeout: float
    markup: bool
    shown_at: float
    """`time.monotonic` when it was sent."""

    @property
    def on_screen(self) -> bool:
        return time.monotonic() - self.shown_at < self.timeout


class HeldNotices:
    def __init__(self) -> None:
        self._covers = 0
        self._held: list[Notice] = []
        self._recent: deque[Notice] = deque(maxlen=RECENT)

    def hold(self, notice: Notice) -> bool:
        """Whether `notice` waits (an uncovered screen is up); else it is shown now."""
        if self._covers:
            self._held.append(notice)
            return True
        self._recent.append(notice)
        return False

    def cover(self) -> bool:
        """A screen to keep uncovered is up: hold what is on screen now; True when
        something was (the caller takes it down)."""
        self._covers += 1
        showing = [notice for notice in self._recent if notice.on_screen]
        self._recent.clear()
        self._held[:0] = showing
        return bool(showing)

    def uncover(self) -> list[Notice]:
        """That screen is gone: what to show now (nothing while another is still up)."""
        self._covers = max(0, self._covers - 1)
        if self._covers:
            return []
        held, self._held = self._held, []
        return held
