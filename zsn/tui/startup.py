"""What the terminal UI does before Textual is even imported, so its first frame comes
early and already has rows.

- **The first read.** The first pane's first snapshot is read in a thread started
  here, by the domain's ``live`` reader (`zsn.domains`), while the main thread
  imports Textual and builds the screen. The pane takes it when it is mounted: if
  it has arrived, the first frame has the rows; if not, the pane's first poll
  waits for it rather than reading again. A read that fails leaves the pane to
  read (and report) itself.
- **The cyclic garbage collector** is paused until the first frame is drawn:
  Textual's import and the first screen allocate hundreds of thousands of objects
  that all stay, and the collector would walk them again and again. They are then
  frozen (`gc.freeze`), so later collections, every second while zsn idles, do not
  walk them either.

No Textual here: `zsn.cli` uses this first.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

from zsn.domains import Domain, load
from zsn.system.host import Host


class Startup:
    """Made once by `begin`, handed to the app."""

    def __init__(self, first_read: FirstRead | None, *, collector_paused: bool = False) -> None:
        self._first_read = first_read
        self._collector_paused = collector_paused

    @classmethod
    def begin(cls, first: Domain | None, host: Host) -> Startup:
        """Pause the collector and start reading `first` (the first pane's domain)."""
        gc.disable()
        reader = first.live if first is not None else ""
        return cls(FirstRead(reader, host) if reader else None, collector_paused=True)

    def take_first_read(self) -> FirstRead | None:
        """The first read, for the first pane (once)."""
        first, self._first_read = self._first_read, None
        return first

    def first_frame_drawn(self) -> None:
        """Freeze what start-up made and let the collector run again."""
        if self._collector_paused:
            self._collector_paused = False
            gc.freeze()
            gc.enable()


class FirstRead:
    """A snapshot read in a thread by ``reader`` ("module:function", called with the host)."""

    def __init__(self, reader: str, host: Host) -> None:
        self._done = threading.Event()
        self._snapshot: Any = None
        threading.Thread(target=self._read, args=(reader, host), name="zsn-first-read",
                         daemon=True).start()

    def _read(self, reader: str, host: Host) -> None:
        try:
            self._snapshot = load(reader)(host)
        except Exception:  # noqa: BLE001 - the pane reads again and reports it
            self._snapshot = None
        finally:
            self._done.set()

    def ready(self) -> bool:
        return self._done.is_set()

    def take(self, timeout: float) -> Any:
        """The snapshot, waiting up to `timeout` seconds; ``None`` when the read failed
        or took longer (the pane then reads itself)."""
        if not self._done.wait(timeout):
            return None
        snapshot, self._snapshot = self._snapshot, None
        return snapshot
