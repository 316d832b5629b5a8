"""Changes the TUI applies as a try: the one pending change, its countdown in every
pane's status line, ``k`` to keep it and ``u`` to roll it back now.

A change that could cut the SSH session off (`zsn.tries.session`) is applied under
a guardian (`zsn.tries.lifecycle`) when the user says yes: if the session is cut, the
guardian puts things back at the deadline and the session comes back by itself.
`TRY_SECONDS` is long enough to look at the result and press one key. A change still
pending when the TUI starts (a try made by the CLI, or by a TUI that went away with
its session) is shown the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from zsn.errors import UnsafeStateError
from zsn.system.host import Host

if TYPE_CHECKING:
    from zsn.tries.store import Change

TRY_SECONDS = 60.0
"""How long a change the TUI tries waits to be kept."""
KEEP_KEY = "k"
UNDO_KEY = "u"


class PendingTry(NamedTuple):
    change_id: str
    title: str
    deadline_wall: float

    def seconds_left(self) -> float:
        return max(0.0, self.deadline_wall - time.time())


class TriedPane(Protocol):
    """What a pane does for a try: show the countdown, read again, run a blocking call."""

    def refresh_status(self) -> None: ...

    def poll(self, force: bool = False) -> None: ...

    def run_in_thread(self, job: Callable[[], Any], done: Callable[[Any], None],
                      failed: Callable[[str], None] | None = None) -> None: ...


class TryingApp(Protocol):
    """What the app gives its tries (the app, typed here by what is used, so this
    module needs neither the app's module nor the panes')."""

    host: Host

    def panes(self) -> Sequence[TriedPane]: ...

    def active_pane(self) -> TriedPane | None: ...

    def set_interval(self, interval: float, callback: Callable[[], object]) -> object: ...

    def refresh_bindings(self) -> None: ...

    def run_worker(self, work: Callable[[], object], *, thread: bool, group: str,
                   exclusive: bool) -> object: ...

    def call_from_thread(self, callback: Callable[..., object], *args: Any) -> object: ...

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None) -> None: ...


class Tries:
    """The app's pending try, if any (one at a time, as the store allows)."""

    def __init__(self, app: TryingApp) -> None:
        self.app = app
        self.current: PendingTry | None = None
        self._timer_started = False

    def status_lines(self) -> list[str]:
        """What every pane's status line says first while a change is tried."""
        tried = self.current
        if tried is None:
            return []
        left = tried.seconds_left()
        if left <= 0:
            return [f"Trying {tried.title}: the deadline passed, the guardian is rolling it "
                    "back…"]
        return [f"Trying {tried.title}: rolled back in {left:.0f} s unless you keep it — "
                f"{KEEP_KEY} keeps it, {UNDO_KEY} rolls it back now"]

    def start(self, change: Change) -> None:
        self.current = PendingTry(change.id, change.title, change.deadline_wall)
        if not self._timer_started:
            self._timer_started = True
            self.app.set_interval(1.0, self.tick)
        self.app.refresh_bindings()
        self.refresh()

    def refresh(self) -> None:
        for pane in self.app.panes():
            pane.refresh_status()

    def tick(self) -> None:
        tried = self.current
        if tried is None:
            return
        self.refresh()
        if tried.seconds_left() <= 0:
            self.app.run_worker(lambda: self._watch_end(tried), thread=True,
                                group="tries", exclusive=True)

    def _watch_end(self, tried: PendingTry) -> None:
        """Past the deadline (worker thread): tell how the guardian ended it."""
        from zsn.tries import store as records

        try:
            change = records.Store(self.app.host).load(tried.change_id)
        except Exception:  # noqa: BLE001 - the record may be gone: nothing to tell
            self.app.call_from_thread(self._ended, tried, None)
            return
        if change.state not in records.WAITING:
            self.app.call_from_thread(self._ended, tried, change)

    def _ended(self, tried: PendingTry, change: Change | None) -> None:
        if self.current is not tried:
            return
        self.current = None
        self.app.refresh_bindings()
        self.refresh()
        if change is None:
            return
        from zsn.tries import store as records

        outcome = change.outcome
        left = outcome.get("left") or []
        if change.state == records.CONFIRMED:
            self.app.notify(f"Kept: {change.title}", timeout=6)
        elif left:
            self.app.notify("Not everything could be put back: " + "; ".join(left)
                            + " (zsn rollback finishes what it can; zsn pending --all "
                              "has the commands)", title=f"Rolled back: {change.title}",
                            severity="error", timeout=30)
        else:
            self.app.notify(f"{change.title}: put back as it was ({outcome.get('by')})",
                            title="Rolled back", severity="warning", timeout=10)
        for pane in self.app.panes():
            pane.poll(force=True)

    def keep(self) -> None:
        tried = self.current
        if tried is None:
            return
        from zsn.tries.lifecycle import confirm

        def kept(change: Change) -> None:
            self._ended(tried, change)

        def refused(message: str) -> None:
            self.app.notify(message, title="Not kept", severity="error", timeout=10)

        self._in_thread(lambda: confirm(self.app.host, tried.change_id), kept, refused)

    def undo(self) -> None:
        tried = self.current
        if tried is None:
            return
        from zsn.tries.lifecycle import roll_back

        def undone(change: Change) -> None:
            self._ended(tried, change)

        def refused(message: str) -> None:
            self.app.notify(message, title="Not rolled back", severity="error", timeout=10)

        self._in_thread(lambda: roll_back(self.app.host, tried.change_id, by="zsn's TUI (u)"),
                        undone, refused)

    def _in_thread(self, job: Callable[[], Change], done: Callable[[Change], None],
                   failed: Callable[[str], None]) -> None:
        pane = self.app.active_pane()
        if pane is not None:
            pane.run_in_thread(job, done, failed)

    def pick_up(self) -> None:
        """At start-up (worker thread, once the first frame is drawn): a change still
        pending is shown as tried. The store is imported here, not before that frame."""
        from zsn.tries import store as records

        try:
            waiting = [c for c in records.Store(self.app.host).waiting()
                       if c.state == records.PENDING]
        except UnsafeStateError as exc:  # the state rule: said once, with the fix
            self.app.call_from_thread(self._refused_store, str(exc))
            return
        except Exception:  # noqa: BLE001 - no store (not root, no /run/zsn): nothing pending
            return
        if waiting:
            self.app.call_from_thread(self.start, waiting[0])

    def _refused_store(self, message: str) -> None:
        self.app.notify(message, title="Pending changes not read", severity="error",
                        timeout=30)
