"""`LivePane`: the base of every pane. How to build one (links, WLAN, ZFS ...):

1. **Read** in `fetch()`: it runs in the pane's reader thread (one per pane, woken by
   each poll: pyroute2's sync API, sockets, D-Bus calls and commands must not block
   Textual's loop) and returns one frozen
   snapshot from the domain's core (`zsn/<domain>/live.py`), no Textual inside. A
   stream (journal, `zpool iostat` lines) is read the same way: its thread keeps
   the latest state and `fetch()` returns it. A fetch that raises is shown in the
   status line and polling goes on, so the pane recovers when the daemon is back.
   Polling runs every ``refresh_seconds``, pauses while the pane is hidden behind
   another tab, and never overlaps itself; `poll(force=True)` reads now (once more
   after the read under way); `await reads_shown()` waits until what was asked is
   shown (tests wait on it). Name the
   same reader in the domain's ``live=`` (`zsn.domains`): for the first pane, its
   first read then runs while Textual loads (`zsn.tui.startup`), and the first frame
   already has the rows. Otherwise the first read starts once the first frame is
   drawn; until it is shown, tables say "Reading…".
2. **Show** in `show(snapshot)` (UI thread): turn the snapshot into `Row`s and hand
   them to each table's `LiveTable.update(rows)`. Give every row a stable key (an
   interface name, a public key, a pool/vdev path) and every cell its text: the
   table compares each row with the last one and repaints only the cells whose text
   changed, so a poll that changes nothing writes nothing to the terminal. Keep
   formatting cheap and deterministic (`zsn.format`), and never put a clock in a
   cell unless it is the point of the column. Rows come in a stable order (config
   order, then name), not in the order a daemon happens to list them.
3. **Columns** are declared once (`zsn.tui.widgets.table.Column`): key, label,
   optional short label, `priority` (1 = essential, higher numbers are dropped
   first when the screen is narrow), `min_width`, alignment, `truncate` (only for
   keys and paths), `help` (one line for `?`), `sort_key`. Cells are `str` or
   `Cell(text, tone, short)`: a tone (good/warn/bad/muted/bold/accent) takes the
   theme's colours; `short` is a shorter form used when the full text does not fit.
   Values are never cut mid-word: columns go instead, and `?` lists which
   (`column_help`, generated from the declarations). Tree-shaped data (bond ->
   members, pool -> vdevs) uses `Row.depth`; the table draws the guides.
4. **Row states**: a source that vanishes (an interface, a unit, a pool) is not a
   banner: `GoneRows.merge(rows)` keeps its last row, greyed with state ``gone``,
   and says so once in a timed notification. An action that removes a source on
   purpose calls `gone.expect(key)` when the user confirms, so its row goes quietly
   and only the action's own "Done" is shown. ``muted`` rows are shown for
   information (e.g. another network namespace's device).
5. **Status line**: `set_status(lines, severity)` above the tables, for what the
   tables cannot say (not root, a daemon not running, an empty state with the key
   that helps). Unchanged lines cost nothing.
6. **Actions**: blocking calls go through `run_in_thread(job, done, failed)`; changes
   are plans: `run_plan(build)` builds the `zsn.plan.Plan` in a thread, shows it
   (`zsn.tui.screens.plan.PlanScreen`), applies it on `y`, reports "Done: ..." once,
   calls `plan_done(plan)` (drop stale caches) and polls. Input comes from a form
   (`zsn.tui.screens.form.FormScreen`, or `AskScreen` for one line) that builds and
   checks the plan itself, so a refusal keeps it open with the input; pass
   `show_plan` as its callback. A change that could cut the SSH session off (its
   plan function raises `zsn.errors.SessionLinkError` until the link is named) goes
   through `offer_plan(build)`, or `plan_in_dialog` + `show_planned` from a form:
   `build(link)` is called again with the link once `ask_session_link`, the one hook
   for that question, has it: the TUI names it itself, and `run_plan` applies every
   change that could cut the session off as a try (`zsn.tui.tries`: rolled back by
   a guardian unless kept with one key), after reading the live state back (verify
   after apply). Core text naming another action (`zsn.wording`)
   is worded with this pane's keys. Bindings are listed most
   important first: the footer shows as many as fit (help and quit always), the
   rest are in `?` and the command palette. `urgent_keys()` names the keys the
   current state needs most (they come first in the footer); call
   `state_changed()` when the highlighted row or the state may have changed them.
   A key that cannot do anything now says why in `not_now(action, parameters)`
   (Textual's `check_action` asks it): `NotNow(reason)` greys it in the footer
   (no row highlighted yet), `NotNow(reason, hidden=True)` takes it off the
   footer (nothing here it could ever act on: no ZFS, no wireless interface, not a
   member); either way pressing it says the reason, and `?` lists it with it.

Compose: yield a `StatusLine()` first, then the tables (and details widgets).
Textual calls the event handlers of every class (`on_mount` of the pane and of
`LivePane`): never call ``super().on_mount()``, it would start polling twice.
Declare the pane in the domain's `DOMAIN.pane` (see `zsn.domains`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from textual import events
from textual.actions import parse as parse_action
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer

from zsn.errors import SessionLinkError, ZsnError
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.tui.startup import FIRST_READ_SECONDS, FirstRead
from zsn.tui.widgets.status import Severity, StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.tui.wording import say
from zsn.view import Cell, Row, cell_text
from zsn.watch import Watch

if TYPE_CHECKING:
    from zsn.plan import Plan, Planned, SessionPlan
    from zsn.tries.lifecycle import AppliedTry
    from zsn.tries.session import SessionPath
    from zsn.tui.tries import Tries

T = TypeVar("T")
SnapshotT = TypeVar("SnapshotT")
"""What a pane's `fetch` reads and its `show` draws."""

GONE_NOTICE_SECONDS = 8
SHOWN_AGAIN_SECONDS = 0.5
"""A pane shown within this long of its last read does not read again at once."""
EXPECT_GONE_SECONDS = 60.0
"""How long a source an action removes may vanish without a notice."""

class NotNow(NamedTuple):
    """Why a pane's key cannot do anything in the current state (`LivePane.not_now`)."""

    reason: str
    """Said when the key is pressed, and in `?`."""
    hidden: bool = False
    """Off the footer (nothing here it could act on); else shown greyed."""


class Checked(NamedTuple):
    """A plan checked against the SSH session's path (`LivePane.run_plan`)."""

    plan: Plan
    session: SessionPath | None = None
    trying: bool = False
    """Applied as a try: the change could cut the session off."""


class GoneRows:
    """Keeps rows whose source vanished, greyed as ``gone``, where they were.

    `merge(rows)` returns `rows` plus the vanished ones; each vanishing is told
    once in a timed notification. A row comes back to life when its key is back.
    """

    def __init__(self, notify: Callable[[str], None], what: str = "") -> None:
        self._notify = notify
        self._what = what
        self._last: list[Row] = []
        self._gone: dict[str, tuple[int, Row]] = {}
        self._expected: dict[str, float] = {}

    def expect(self, key: str) -> None:
        """A deliberate action will remove `key`: drop its row quietly."""
        self._expected[key] = time.monotonic() + EXPECT_GONE_SECONDS

    @property
    def gone_keys(self) -> list[str]:
        return list(self._gone)

    def merge(self, rows: list[Row]) -> list[Row]:
        now = time.monotonic()
        self._expected = {k: t for k, t in self._expected.items() if t > now}
        present = {row.key for row in rows}
        for position, row in enumerate(self._last):
            if row.key in present or row.key in self._gone:
                continue
            if self._expected.pop(row.key, None) is not None:
                continue
            self._gone[row.key] = (position, self._gone_row(row))
            self._notify(f"{self._what}{safe(row.key)} disappeared: its daemon stopped or it was "
                         "removed. It stays greyed in the table; zsn shows it again when "
                         "it is back.")
        for key in [key for key in self._gone if key in present]:
            del self._gone[key]
        merged = list(rows)
        for position, row in sorted(self._gone.values(), key=lambda item: item[0]):
            merged.insert(min(position, len(merged)), row)
        self._last = merged
        return merged

    @staticmethod
    def _gone_row(row: Row) -> Row:
        if row.state == "gone":
            return row
        first = row.cells[0]
        cells = (Cell(f"{cell_text(first)} (gone)"), *row.cells[1:])
        return row._replace(cells=cells, state="gone")


def binding_action(action: str) -> tuple[str, tuple[object, ...]]:
    """A binding's action string as Textual's `check_action` gets it: the name (no
    namespace) and its parameters (``scrub('pause')`` -> ``("scrub", ("pause",))``)."""
    _, name, parameters = parse_action(action)
    return name, parameters


def failure_line(title: str, message: str) -> str:
    """A failed plan in one line: where it failed and why (the notice's title names the
    plan), then only what could not be undone. `ApplyError`'s text begins with the
    plan's title and a command's error repeats the command: both are said once."""
    lines = message.splitlines() or [""]
    first = lines[0].removeprefix(f"{title}: ")
    stuck = [line for line in lines[1:] if line.startswith("NOT undone")]
    undone = [line for line in lines[1:] if line.startswith("undone:")]
    tail = "; " + "; ".join(stuck) if stuck else " (undone)" if undone else ""
    return first + tail


class Read(Message, bubble=False):
    """A read's result, from the pane's reader thread to the pane."""

    def __init__(self, snapshot: Any = None, error: str | None = None) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.error = error
        """Why the read failed (None: it did not)."""


class LivePane(Vertical, Generic[SnapshotT]):
    PANE_HELP: ClassVar[str] = ""
    """Markdown for the help screen: what the pane shows and its markers. The
    columns' own lines come from their declarations (`column_help`)."""

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host
        self.refresh_seconds = refresh_seconds
        self._busy = False
        """A read is asked for or under way, until it is shown (UI thread only)."""
        self._again = False
        """A forced read was asked for during a read: it runs when that one is shown."""
        self._reader: Watch[None, Read] | None = None
        """The thread that reads (made by the first poll, stopped on unmount)."""
        self._waiting: list[asyncio.Future[None]] = []
        """`reads_shown` callers, told when the pane is idle."""
        self._footer_state: tuple[tuple[str, ...], tuple[NotNow | None, ...]] = ((), ())
        """What the footer was last drawn from (`state_changed`)."""
        self._timer: Timer | None = None
        self._last_poll = 0.0
        """When the last read started (0: none yet)."""
        self._hidden = False
        """Hidden since it was made: showing it again reads at once."""
        self.snapshot_count = 0
        """Snapshots shown so far (tests wait on it)."""
        self.first_read: FirstRead | None = None
        """The first snapshot, being read since the app started (`zsn.tui.startup`)."""
        self._status: tuple[list[str], Severity] = ([], "error")

    # -- to implement ----------------------------------------------------------
    def fetch(self) -> SnapshotT:
        """Read the live state (the pane's reader thread). Return a frozen snapshot."""
        raise NotImplementedError

    def show(self, snapshot: SnapshotT) -> None:
        """Show a snapshot (UI thread): rows to `LiveTable.update`, `set_status`."""
        raise NotImplementedError

    # -- for panes -------------------------------------------------------------
    def urgent_keys(self) -> tuple[str, ...]:
        """The keys the footer shows first in the current state (a running scrub's pause
        and stop), most needed first; call `state_changed` when they may change."""
        return ()

    def not_now(self, action: str, parameters: tuple[object, ...]) -> NotNow | None:
        """Why the pane's binding to `action(*parameters)` cannot act in the current
        state (None: it can). Cheap, UI thread: asked whenever the footer is drawn."""
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        why = self.not_now(action, parameters)
        return True if why is None else None if not why.hidden else False

    def why_not_now(self, binding: Binding) -> NotNow | None:
        """`not_now` for one of the pane's bindings (`?` lists the reason)."""
        name, parameters = binding_action(binding.action)
        return self.not_now(name, parameters)

    def state_changed(self) -> None:
        """The footer follows `urgent_keys` and `not_now` (redrawn only when they
        changed)."""
        state = (self.urgent_keys(), tuple(self.why_not_now(binding)
                                           for binding in self.own_bindings()))
        if state != self._footer_state:
            self._footer_state = state
            self.refresh_bindings()

    def own_bindings(self) -> list[Binding]:
        """The pane's own key bindings, in its order (most important first)."""
        return [binding for binding in self.BINDINGS if isinstance(binding, Binding)]

    def on_key(self, event: events.Key) -> None:
        """A key of this pane that cannot act now says why (Textual would drop it
        silently): a greyed key in the footer, or one `?` lists as not now."""
        active = self.screen.active_bindings.get(event.key)
        if active is not None and (active.enabled or active.node is not self):
            return  # it acts, or a widget nearer the focus takes it
        for binding in self.own_bindings():
            if event.key in binding.key.split(","):
                why = self.why_not_now(binding)
                if why is not None:
                    event.stop()
                    event.prevent_default()
                    self.notify(why.reason, title=binding.description, severity="warning",
                                timeout=6, markup=False)
                return

    def set_status(self, lines: list[str], severity: Severity = "error") -> None:
        """Show `lines` above the tables (hidden when empty); unchanged costs nothing.
        A change being tried says so first, with its countdown (`zsn.tui.tries`)."""
        self._status = (list(lines), severity)
        self.refresh_status()

    def refresh_status(self) -> None:
        if not self.is_mounted:
            return
        lines, severity = self._status
        tries = self._tries()
        tried = tries.status_lines() if tries is not None else []
        self.query_one(StatusLine).show_lines([*tried, *lines],
                                              severity if lines else "warning")

    def tables(self) -> list[LiveTable]:
        return list(self.query(LiveTable))

    def theme_colour(self, variable: str) -> str:
        """A theme variable's colour, for Rich text in a Static (it cannot use
        ``$variables``); table cells use tones instead."""
        return self.app.theme_variables.get(variable, "")

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

        def report_error(error: ZsnError) -> None:
            report(say(error, self))

        def runner() -> None:
            try:
                result = job()
            except ZsnError as exc:
                self.app.call_from_thread(report_error, exc)
            except Exception as exc:  # noqa: BLE001 - a failed action must not end the app
                self.app.call_from_thread(report, f"{type(exc).__name__}: {exc}")
            else:
                self.app.call_from_thread(done, result)

        self.run_worker(runner, thread=True, group=f"actions-{self.id}")

    def run_plan(self, build: Callable[[], Plan],
                 after: Callable[[Plan], None] | None = None,
                 confirmed: Callable[[Plan], None] | None = None) -> None:
        """Build a plan in a thread, show it, apply it on `y`.

        `confirmed(plan)` runs when the user says yes, before applying (e.g.
        `gone.expect(...)` for a source the plan removes); `after(plan)` once it is
        applied. "Done: TITLE" (and the plan's notes) is notified once.
        """
        from zsn.tui.screens.plan import PlanScreen

        def answered(checked: Checked, yes: bool | None) -> None:
            plan = checked.plan
            if not yes:
                return
            if confirmed is not None:
                confirmed(plan)
            if checked.trying:
                self.run_in_thread(lambda: self._try(checked),
                                   lambda tried: self._tried(plan, *tried, after),
                                   lambda message: self._plan_failed(plan, message))
                return
            self.run_in_thread(lambda: self._apply(plan),
                               lambda read: self._plan_applied(plan, read[0], after, read[1]),
                               lambda message: self._plan_failed(plan, message))

        def show(checked: Checked) -> None:
            self.app.push_screen(PlanScreen(checked.plan), lambda yes: answered(checked, yes))

        self.run_in_thread(lambda: self._checked(build()), show, self.nothing_changed)

    def _checked(self, plan: Plan) -> Checked:
        """The SSH session's path against `plan` (worker thread): a change that could
        cut the session off names it and is applied as a try, when it can be. A change
        to what a pending try owns is refused here, before it is shown."""
        from zsn.tries.lifecycle import refuse_owned, undo_of

        refuse_owned(self.host, plan)
        if not plan.touches and not plan.reroutes:
            return Checked(plan)
        from zsn.tries.session import find_session, name_in_plan
        from zsn.tui.tries import KEEP_KEY, TRY_SECONDS

        session = find_session(self.host)
        if not name_in_plan(plan, session):
            return Checked(plan)
        try:
            undo_of(self.host, plan)
        except ZsnError as exc:
            plan.warnings.insert(1, f"it cannot be tried ({exc}): it is applied as it is")
            return Checked(plan)
        plan.warnings.insert(1, f"so it is applied as a try: rolled back by itself "
                                f"{TRY_SECONDS:g} s after it is applied unless you keep it "
                                f"({KEEP_KEY})")
        return Checked(plan, session, trying=True)

    def _try(self, checked: Checked) -> tuple[AppliedTry, list[str]]:
        """Apply the checked plan as a try (worker thread); its read back notes."""
        from zsn.tries.lifecycle import begin
        from zsn.tui.tries import TRY_SECONDS

        applied = begin(self.host, checked.plan, TRY_SECONDS,
                        f"zsn's TUI: {checked.plan.title}", checked.session)
        return applied, checked.plan.notes_after()

    @staticmethod
    def _apply(plan: Plan) -> tuple[list[str], list[str]]:
        """Apply `plan` (worker thread), then read back in the same thread, right after:
        the notes that say what it is now, and what differs from what it meant."""
        from zsn.tries.lifecycle import verify

        plan.apply()
        return plan.notes_after(), verify(plan)

    def _tries(self) -> Tries | None:
        """The app's tried change (a test app without one has none)."""
        tries: Tries | None = getattr(self.app, "tries", None)
        return tries

    def _tried(self, plan: Plan, applied: AppliedTry, notes_after: list[str],
               after: Callable[[Plan], None] | None) -> None:
        tries = self._tries()
        if tries is not None:
            tries.start(applied.change)
        self._plan_applied(plan, notes_after, after, applied.differences, tried=True)

    def nothing_changed(self, message: str) -> None:
        """A change was refused before anything changed: say why, once."""
        self.notify(message, title="Nothing changed", severity="error", timeout=10)

    def offer_plan(self, build: SessionPlan, *, link: str | None = None,
                   after: Callable[[Plan], None] | None = None,
                   confirmed: Callable[[Plan], None] | None = None) -> None:
        """`run_plan` for a change that may touch the SSH session's link: `build(link)`
        runs in a thread; when it raises `SessionLinkError`, `ask_session_link` asks
        and `build` runs again with the link the user named."""

        def job() -> Plan | SessionLinkError:
            try:
                return build(link)
            except SessionLinkError as exc:
                return exc

        def built(result: Plan | SessionLinkError) -> None:
            if isinstance(result, SessionLinkError):
                self.ask_session_link(result, lambda named: self.offer_plan(
                    build, link=named, after=after, confirmed=confirmed))
            else:
                self.run_plan(lambda: result, after=after, confirmed=confirmed)

        self.run_in_thread(job, built, self.nothing_changed)

    @staticmethod
    def plan_in_dialog(build: SessionPlan) -> Planned:
        """For a form's build (its worker thread): the plan, or the SSH-link question
        for after the form closed; any other refusal keeps the form open."""
        from zsn.plan import Planned  # not before the first frame: plans come with actions

        try:
            return Planned(build, build(None))
        except SessionLinkError as exc:
            return Planned(build, exc)

    def show_planned(self, result: Planned | None) -> None:
        """A form's callback (None: cancelled): show its plan, or ask about the SSH
        session's link first and plan again with it."""
        if result is None:
            return
        if isinstance(result.outcome, SessionLinkError):
            self.ask_session_link(result.outcome,
                                  lambda named: self.offer_plan(result.build, link=named))
        else:
            self.show_plan(result.outcome)

    def ask_session_link(self, error: SessionLinkError, go: Callable[[str], None]) -> None:
        """The one place a pane meets a change that could cut the SSH session off. The
        TUI tries such a change rather than ask: the link is named (`go(link)`), and
        `run_plan` shows the plan, naming the session's path, and applies it as a try
        (rolled back by itself unless kept)."""
        go(error.link)

    def show_plan(self, plan: Plan | None) -> None:
        """A plan a dialog already made and checked (None: cancelled): show it, apply
        it on `y`, as `run_plan` does. Pass it as the dialog's callback."""
        if plan is not None:
            self.run_plan(lambda: plan)

    def _plan_failed(self, plan: Plan, message: str) -> None:
        self.notify(failure_line(plan.title, message), title=f"Failed: {plan.title}",
                    severity="error", timeout=10, markup=False)
        self.plan_done(plan)
        self.poll(force=True)

    def _plan_applied(self, plan: Plan, notes_after: list[str],
                      after: Callable[[Plan], None] | None,
                      differences: list[str] | None = None, tried: bool = False) -> None:
        notes = "\n".join(say(note, self) for note in notes_after)
        self.notify(f"Done: {plan.title}" + (f"\n{notes}" if notes else ""), timeout=6,
                    markup=False)
        if differences:  # verify after apply: what the live state is not
            from zsn.tui.tries import UNDO_KEY

            offer = f"\n{UNDO_KEY} rolls it back now" if tried else ""
            self.notify("\n".join(differences) + offer, title=f"Not as meant: {plan.title}",
                        severity="error", timeout=20, markup=False)
        self.plan_done(plan)
        self.poll(force=True)
        if after is not None:
            after(plan)

    def plan_done(self, plan: Plan) -> None:
        """Called after a plan of this pane was applied or failed part-way: what it
        touched may have changed (re-read caches, lint ...), before the pane polls."""

    def focus_main(self) -> None:
        """Give the keyboard to the pane's main table (the last one: peers, connections),
        else to its first focusable widget."""
        tables = [table for table in self.tables() if table.display]
        if tables:
            tables[-1].focus()
            return
        focusable = [widget for widget in self.query("*") if widget.focusable]
        if focusable:
            focusable[0].focus()
        else:
            self.screen.set_focus(None)

    def column_help(self) -> str:
        """Markdown for `?`: each table's columns and which are dropped when narrow."""
        parts = []
        for table in self.tables():
            parts.append(f"#### Columns: {table.help_title}\n{table.describe_columns()}")
        return "\n\n".join(parts)

    # -- machinery -------------------------------------------------------------
    def on_mount(self) -> None:
        # Paused while the pane is hidden (a pane not shown yet included): a hidden
        # pane does not poll, and its timer need not wake the loop to be told so.
        self._timer = self.set_interval(self.refresh_seconds, self.poll,
                                        pause=not self._is_shown())
        first = self.first_read
        if first is not None and first.ready():
            self.first_read = None
            snapshot = first.take(0)
            if snapshot is not None:  # shown before the first frame is drawn
                self._last_poll = time.monotonic()  # as fresh as a read started now
                self._deliver(snapshot)
                return
        # Once the first frame is drawn: the read's thread (imports, netlink) would
        # otherwise take turns with it for the interpreter.
        self.call_after_refresh(self._first_poll)

    def _first_poll(self) -> None:
        # Not when `on_show` started one already; not while hidden (on_show reads then).
        if not self._last_poll:
            self.poll()

    def on_show(self) -> None:
        # Shown for the first time: read unless a read was started (or its rows came
        # with the app). Shown again after polling paused while it was hidden: read at
        # once rather than at the next tick, unless the last read is fresh.
        if self._timer is not None:
            self._timer.resume()
        if not self._last_poll or (self._hidden and time.monotonic() - self._last_poll
                                   > SHOWN_AGAIN_SECONDS):
            self.poll()

    def on_hide(self) -> None:
        self._hidden = True
        if self._timer is not None:
            self._timer.pause()

    def _is_shown(self) -> bool:
        return all(node.display for node in self.ancestors_with_self if hasattr(node, "display"))

    def poll(self, force: bool = False) -> None:
        """Read now (UI thread): the pane's reader thread reads and `show`s the result.
        Not while hidden unless `force`; never two reads at once."""
        if self._busy:
            # A read is under way, maybe begun before the change that asks for this
            # one: read once more as soon as it is shown, so the change shows at once.
            self._again = self._again or force
            return
        if not force and not self._is_shown():
            return
        self._busy = True
        self._last_poll = time.monotonic()
        if self._reader is None:
            # Its reads run in the app's context, as Textual's own workers do.
            context = contextvars.copy_context()
            self._reader = Watch(lambda _: context.run(self._read), Read(), every=None,
                                 name=f"zsn-read-{self.id}", on_reading=self._read_done)
            self._reader.want(None)  # starts the thread, which reads at once
        else:
            self._reader.wake()

    @property
    def reading(self) -> bool:
        """A read is asked for or under way (until it is shown)."""
        return self._busy

    async def reads_shown(self) -> None:
        """Until no read is under way or asked for: what the pane read last is shown
        (tests wait on it). Returns at once when the pane is idle."""
        if self._busy:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            await waiter

    def _read(self) -> Read:
        """One read (the reader's thread): the first read's snapshot, else `fetch`;
        whatever fails is the read's error (the watch's own catch never sees it)."""
        try:
            first, self.first_read = self.first_read, None
            snapshot = first.take(FIRST_READ_SECONDS) if first is not None else None
            if snapshot is None:
                snapshot = self.fetch()
        except Exception as exc:  # noqa: BLE001 - any failure is shown, polling goes on
            return Read(error=f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc))
        return Read(snapshot)

    def _read_done(self, read: Read, _: str | None) -> None:
        # From the reader's thread: the result is handled in the pane's turn, so the
        # thread never waits for the UI (Textual's `call_from_thread` would).
        with contextlib.suppress(RuntimeError):  # the app's loop is closed
            self.post_message(read)

    def on_read(self, read: Read) -> None:
        read.stop()
        self._busy = False
        if self.is_mounted:
            if read.error is None:
                self._deliver(read.snapshot)
            else:
                self._deliver_error(read.error)
        if self._again:
            self._again = False
            self.poll(force=True)
        if not self._busy:
            self._wake_waiting()

    def on_unmount(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        self._busy = False
        self._wake_waiting()

    def _wake_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def _deliver(self, snapshot: SnapshotT) -> None:
        self.show(snapshot)
        self.snapshot_count += 1
        self.state_changed()

    def _deliver_error(self, message: str) -> None:
        self.set_status([f"Cannot read: {message}. Retrying every "
                         f"{self.refresh_seconds:g} s."], severity="error")

