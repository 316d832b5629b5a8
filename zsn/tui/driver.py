"""The terminal driver: Textual's Linux driver, with an input thread that sleeps while
nothing is typed.

Textual's input thread wakes ten times a second to give its key parser a chance to
time out a lone Escape: some 1.2 ms of CPU a second on an idle TUI, about a tenth of
what zsn idles at with 200 live peers. Here it wakes that often only for a second
after the last input (when a lone Escape can be pending); otherwise it waits for input,
and Textual's stop (its ``exit_event``) wakes it through a pipe.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time
from codecs import getincrementaldecoder
from typing import Any

from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

TICK_SECONDS = 0.1
"""How often the parser is given a chance to time out a pending sequence (Textual's)."""
TICKING_SECONDS = 1.0
"""How long after the last input it is given that chance."""


class _WakingEvent(threading.Event):
    """An event whose `set` also writes to a pipe, so a thread in `select` sees it."""

    def __init__(self, wake: int) -> None:
        super().__init__()
        self._wake = wake

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # the pipe is full (it woke already) or closed
            os.write(self._wake, b"x")


class QuietDriver(LinuxDriver):
    """`LinuxDriver` whose input thread waits for input while none is arriving."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._woken, wake = os.pipe()
        os.set_blocking(wake, False)
        self._wake = wake
        self.exit_event = _WakingEvent(wake)

    def close(self) -> None:
        super().close()
        for end in (self._woken, self._wake):
            with contextlib.suppress(OSError):
                os.close(end)

    def run_input_thread(self) -> None:
        """Textual's loop (`LinuxDriver.run_input_thread`), with a wait for input or
        for the stop instead of a tick every 0.1 s while nothing is typed."""
        selector = selectors.SelectSelector()
        fileno = self.fileno
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(self._woken, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        last_input = time.monotonic()

        def process(ready: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            nonlocal last_input
            for key, _ in ready:
                if key.fd == self._woken:
                    os.read(self._woken, 64)
                    continue
                last_input = time.monotonic()
                data = decode(os.read(fileno, 1024 * 4), final=final)
                if not data:  # stdin is piped
                    break
                for event in parser.feed(data):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                ticking = time.monotonic() - last_input < TICKING_SECONDS
                process(selector.select(TICK_SECONDS if ticking else None))
            selector.unregister(fileno)
            process(selector.select(TICK_SECONDS), final=True)
        finally:
            selector.close()
            try:
                for _ in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
