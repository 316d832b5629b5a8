"""`LivePane`: a pane that polls core code in a thread and shows frozen snapshots.

`fetch()` runs in a worker thread (pyroute2's sync API and socket I/O must not
block Textual's loop); `show()` runs on the UI thread with the result. A fetch
that raises is shown in the pane's status line and polling goes on, so the pane
recovers when the daemon or socket comes back. Polling pauses while the pane is
hidden behind another tab, and never overlaps itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import DataTable, Static

from zsn.errors import ZsnError
from zsn.system.host import Host

T = TypeVar("T")

ROWS_PER_FRAME = 200
"""New table rows added per screen refresh, so adding thousands never blocks input."""


class LivePane(Vertical):
    PANE_HELP: ClassVar[str] = ""
    """Markdown shown in the help screen for this pane: columns, markers, keys."""

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host
        self.refresh_seconds = refresh_seconds
        self._busy = threading.Event()
        self._timer: Timer | None = None

    # -- to implement ----------------------------------------------------------
    def fetch(self) -> Any:
        """Read the live state (worker thread). Return a frozen snapshot."""
        raise NotImplementedError

    def show(self, snapshot: Any) -> None:
        """Show a snapshot (UI thread); update rows in place."""
        raise NotImplementedError

    def run_in_thread(self, job: Callable[[], T], done: Callable[[T], None],
                      failed: Callable[[str], None] | None = None) -> None:
        """Run a blocking core call (an action, a plan) off the UI thread.

        `done(result)` runs on the UI thread. A failure goes to `failed` (default: an
        error notification); whatever it is, it never ends the app.
        """

        def report(message: str) -> None:
            if failed is not None:
                failed(message)
            else:
                self.notify(message, severity="error", timeout=8)

        def runner() -> None:
            try:
                result = job()
            except ZsnError as exc:
                self.app.call_from_thread(report, str(exc))
            except Exception as exc:  # noqa: BLE001 - a failed action must not end the app
                self.app.call_from_thread(report, f"{type(exc).__name__}: {exc}")
            else:
                self.app.call_from_thread(done, result)

        self.run_worker(runner, thread=True, group=f"actions-{self.id}")

    def theme_colour(self, variable: str) -> str:
        """A theme variable's colour, for table cells (Rich text cannot use `$variables`)."""
        return self.app.theme_variables.get(variable, "")

    def focus_main(self) -> None:
        """Give the keyboard to the pane's main table (the last one: peers, connections),
        else to its first focusable widget. Focus must leave the tab that was shown:
        TabbedContent switches back to the tab holding the focused widget."""
        tables = self.query(DataTable)
        if tables:
            tables.last().focus()
            return
        focusable = [widget for widget in self.query("*") if widget.focusable]
        if focusable:
            focusable[0].focus()
        else:
            self.screen.set_focus(None)

    # -- machinery -------------------------------------------------------------
    def status_line(self) -> Static:
        return self.query_one(".pane-status", Static)

    def on_mount(self) -> None:
        self._timer = self.set_interval(self.refresh_seconds, self.poll)
        self.poll()

    def on_show(self) -> None:
        # A pane mounted with its tab, or shown again after polling paused while
        # hidden, reads at once rather than at the next tick.
        self.poll()

    def _is_shown(self) -> bool:
        return all(node.display for node in self.ancestors_with_self if hasattr(node, "display"))

    def poll(self, force: bool = False) -> None:
        if self._busy.is_set() or (not force and not self._is_shown()):
            return
        self._busy.set()
        self.run_worker(self._fetch_in_thread, thread=True, group=f"poll-{self.id}")

    def _fetch_in_thread(self) -> None:
        try:
            snapshot = self.fetch()
        except Exception as exc:  # noqa: BLE001 - any failure is shown, polling goes on
            message = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
            self.app.call_from_thread(self._deliver_error, message)
        else:
            self.app.call_from_thread(self._deliver, snapshot)
        finally:
            self._busy.clear()

    def _deliver(self, snapshot: Any) -> None:
        if self.is_mounted:
            self.show(snapshot)

    def _deliver_error(self, message: str) -> None:
        if self.is_mounted:
            self.set_status([f"Cannot read: {message}. Retrying every "
                             f"{self.refresh_seconds:g} s."], severity="error")

    def set_status(self, lines: list[str], severity: str = "error") -> None:
        """Show `lines` above the tables (hidden when empty)."""
        status = self.status_line()
        status.set_classes(f"pane-status -{severity}")
        status.update("\n".join(lines))
        status.display = bool(lines)

    def _update_rows(self, table: DataTable[Any], rows: dict[str, dict[str, Any]],
                     cache: dict[str, dict[str, Any]]) -> None:
        """Update `table` in place: change only cells that differ, add and drop rows by key."""
        for key in list(cache):
            if key not in rows:
                table.remove_row(key)
                del cache[key]
        new_rows: list[tuple[str, dict[str, Any]]] = []
        for key, cells in rows.items():
            old = cache.get(key)
            if old is None:
                new_rows.append((key, cells))
                continue
            for column, value in cells.items():
                if old.get(column) != value:
                    table.update_cell(key, column, value)
            cache[key] = cells
        self._add_rows_by_frames(table, new_rows, cache)

    def _add_rows_by_frames(self, table: DataTable[Any],
                            new_rows: list[tuple[str, dict[str, Any]]],
                            cache: dict[str, dict[str, Any]]) -> None:
        # Textual measures every cell of a new row; a big server's first read
        # (thousands of peers) added at once would freeze the screen for a second.
        for key, cells in new_rows[:ROWS_PER_FRAME]:
            if key not in cache:  # a later snapshot may have added it already
                table.add_row(*cells.values(), key=key)
                cache[key] = cells
        rest = new_rows[ROWS_PER_FRAME:]
        if rest:
            self.call_after_refresh(self._add_rows_by_frames, table, rest, cache)
