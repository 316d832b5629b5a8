"""The zsn terminal UI: tabs of live panes, themes from files, help and palette."""

from __future__ import annotations

import gc
import os
import select
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from rich.console import RenderableType
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.message_pump import MessagePump
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import ContentSwitcher

from zsn.domains import Domain, domains, load
from zsn.system.host import Host
from zsn.terminal import safe, safe_text
from zsn.tui.commands import ZsnCommands
from zsn.tui.driver import QuietDriver
from zsn.tui.keys import KeySequencer
from zsn.tui.notices import HeldNotices, Notice
from zsn.tui.output import FrontScreen, tight
from zsn.tui.panes.base import LivePane
from zsn.tui.startup import Startup
from zsn.tui.themes import BUILTIN_FALLBACK, FALLBACK_THEME, load_themes
from zsn.tui.tries import KEEP_KEY, UNDO_KEY, Tries
from zsn.tui.widgets.footer import KeyBar
from zsn.tui.widgets.panebar import PaneBar

STYLES = Path(__file__).parent / "styles"
FIRST_STYLES = ("app.tcss", "table.tcss")
"""Styles every first frame needs; with the first pane's (``<domain>.tcss``), all it
parses. The others (the other panes', the forms') are read once something else is
made: Textual parses every file it is given before the first frame (those five, ~2.5
ms)."""
MOUNT_OTHER_PANES_AFTER = 1.0
"""Seconds after start-up when the panes not shown yet are made (their imports)."""
HANGUP_CHECK_SECONDS = 2.0
"""How often zsn looks whether its terminal is still there."""
EXIT_HANGUP = 129
"""As a shell reports a program that SIGHUP ended."""


def terminal_hung_up(fd: int) -> bool:
    """True once the terminal on `fd` is gone (its SSH session or window closed): the
    kernel reports a hang-up, and reads return end-of-file forever. Looking does not
    read, so no key is taken from the input thread."""
    watcher = select.poll()
    watcher.register(fd, 0)  # hang-up and error are always reported
    return any(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
               for _, events in watcher.poll(0))


def _terminal_fd() -> int | None:
    stream = sys.__stdin__
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError):
        return None
    return fd if fd >= 0 and os.isatty(fd) else None


class PaneSwitcher(ContentSwitcher):
    """Shows one pane's container (``tab-NAME``) at a time."""

    @property
    def active(self) -> str | None:
        """The shown container's id, ``tab-NAME``; set it to switch panes."""
        return self.current

    @active.setter
    def active(self, container_id: str) -> None:
        self.current = container_id


class MainScreen(FrontScreen):
    """The panes' screen. Its first activation does less than Textual's: each node was
    styled as it was mounted a moment before, so the whole screen is not styled again
    when it first resumes; and no widget is given the keyboard by itself (the first
    table) only for the shown pane to move it to its main one (`LivePane.focus_main`):
    each move styles both tables again, with their dozen component classes each."""

    AUTO_FOCUS = ""

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        # Textual runs Screen's own handler after this one, with the event as left
        # here; that handler counts each resume and suspension (`stack_updates`).
        if self.stack_updates == 0:
            event.refresh_styles = False


def _set_start_up_aside() -> None:
    """What start-up made (modules, styles, every pane's widgets: some 300,000 objects)
    is kept out of the collector's full passes from now on: idle, a refresh a second
    makes enough short-lived objects for a full pass every half minute or so, and
    each went through all of them again (2 ms a second on average with 200 live
    peers, a fifth of the TUI's idle CPU)."""
    gc.collect()
    gc.freeze()


class ZsnApp(App[int]):
    TITLE = "zsn"
    CSS_PATH = [str(path) for path in sorted(STYLES.glob("*.tcss"))]
    """Every style file; the app starts with those its first frame needs (`FIRST_STYLES`)."""
    COMMANDS = {ZsnCommands}  # Textual's own commands come through it, less duplicates
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "show_help", "Help", key_display="?"),
        # Only while a change is tried (`check_action`): keep it, or roll it back now.
        Binding(KEEP_KEY, "keep_try", "Keep change"),
        Binding(UNDO_KEY, "undo_try", "Roll back"),
        # Number keys switch panes: the number is on each tab.
        *(Binding(str(number), f"show_pane_number({number})", show=False)
          for number in range(1, 10)),
    ]

    def get_driver_class(self) -> type[Driver]:
        """Textual's, or on Linux its driver with an input thread that sleeps while
        nothing is typed (`zsn.tui.driver`)."""
        driver = super().get_driver_class()
        return QuietDriver if driver is LinuxDriver else driver

    def __init__(self, host: Host, theme: str | None = None, refresh: float = 1.0,
                 startup: Startup | None = None) -> None:
        self.domains: list[Domain] = domains()
        first = [STYLES / name for name in FIRST_STYLES]
        if self.domains and (STYLES / f"{self.domains[0].name}.tcss").is_file():
            first.append(STYLES / f"{self.domains[0].name}.tcss")
        super().__init__(css_path=[str(path) for path in first])
        self._styles_to_read = [Path(path) for path in self.CSS_PATH
                                if Path(path) not in first]
        self.startup = startup
        self.host = host
        self.refresh_seconds = refresh
        self._requested_theme = theme
        self._theme_problems: list[str] = []
        loaded = load_themes()
        for theme_object in loaded.themes:
            self.register_theme(theme_object)
        self._theme_problems.extend(loaded.problems)
        self._use_starting_theme(self._starting_theme())
        self._keys = KeySequencer(self, self._route_input)
        self._notices = HeldNotices()
        self.tries = Tries(self)
        """The change being tried, if any (`zsn.tui.tries`)."""

    async def on_event(self, event: events.Event) -> None:
        # Keys and pastes from the terminal go one at a time (zsn.tui.keys): typed
        # fast, each lands where the one before left the focus.
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            if not self._keys.hold(event):
                await self._keys.deliver(event)
            return
        await super().on_event(event)

    async def _route_input(self, event: events.Event) -> MessagePump | None:
        """Textual's routing of a key or paste; the node it went to (None: the app
        handled it, a priority binding)."""
        target = self.focused or (self.screen if self._screen_stack else None)
        await super().on_event(event)
        return target if event.is_forwarded else None

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification, whoever sends it: its text often quotes a name or a
        daemon's reply, so it is escaped (`zsn.terminal`) and never read as markup
        (`Widget.notify` asks for markup by default)."""
        notice = Notice(safe_text(message), safe(title), severity,
                        self.NOTIFICATION_TIMEOUT if timeout is None else timeout, False,
                        time.monotonic())
        if not self._notices.hold(notice):
            self._show_notice(notice)

    def _show_notice(self, notice: Notice) -> None:
        super().notify(notice.message, title=notice.title, severity=notice.severity,
                       timeout=notice.timeout, markup=notice.markup)

    def keep_uncovered(self) -> None:
        """A screen that must not be covered (QR code, client config) is up:
        notifications wait until `uncovered` (zsn.tui.notices)."""
        if self._notices.cover():
            # Behind the notifications still on their way to the screen.
            self.call_later(self.clear_notifications)

    def uncovered(self) -> None:
        for notice in self._notices.uncover():
            self._show_notice(notice)

    def _use_starting_theme(self, name: str) -> None:
        """Start with theme `name` as if it were Textual's default. Assigning `theme`
        runs its watcher, which re-parses and re-applies the whole stylesheet once
        more before the first frame (~10 ms); nothing is parsed yet, so setting the
        value and what the watcher sets on the app (classes, ANSI colour filter,
        the stylesheet's variables) is enough."""
        self.set_reactive(App.theme, name)
        dark = self.current_theme.dark
        self.update_classes({f"-theme-{name}": True, "-dark-mode": dark, "-light-mode": not dark},
                            update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())

    def _starting_theme(self) -> str:
        wanted = self._requested_theme or FALLBACK_THEME
        if wanted in self.available_themes:
            return wanted
        fallback = FALLBACK_THEME if FALLBACK_THEME in self.available_themes \
            else BUILTIN_FALLBACK
        self._theme_problems.append(f"theme {wanted!r} not found; using {fallback}")
        return fallback

    def compose(self) -> ComposeResult:
        yield PaneBar([(each.name, each.title) for each in self.domains], id="pane-bar")
        first = f"tab-{self.domains[0].name}" if self.domains else None
        with PaneSwitcher(id="panes", initial=first):
            for index, each in enumerate(self.domains):
                with Vertical(id=f"tab-{each.name}", classes="pane-container"):
                    if index == 0:
                        pane = self._new_pane(each)
                        if self.startup is not None:
                            pane.first_read = self.startup.take_first_read()
                        yield pane
        # A tried change's keys are on the line whenever one is tried (`check_action`).
        yield KeyBar(keep=("q", "question_mark", KEEP_KEY, UNDO_KEY), id="key-bar")

    def _new_pane(self, domain: Domain) -> LivePane[Any]:
        """A domain's pane, its module imported only when the pane is made."""
        pane: LivePane[Any] = load(domain.pane)(self.host, self.refresh_seconds, id=domain.name)
        return pane

    async def _mount_pane(self, domain: Domain) -> None:
        try:
            container = self.query_one(f"#tab-{domain.name}", Vertical)
        except NoMatches:  # the timer fired as the app closed: nothing left to mount in
            return
        if not container.query(LivePane):
            self._read_every_style()
            await container.mount(self._new_pane(domain))

    def _read_every_style(self) -> None:
        """The style files left out of the first frame's, before anything else is made
        (a pane, a screen): parsed with the next styling, the others' parse kept."""
        if self._styles_to_read:
            self.stylesheet.read_all(self._styles_to_read)
            self._styles_to_read = []
            self.stylesheet.update(self)

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        self._read_every_style()
        return super().push_screen(*args, **kwargs)

    async def _mount_remaining_panes(self) -> None:
        # A while after start-up, so the first pane's first rows do not wait for
        # the other panes' imports; a pane asked for earlier is made at once.
        for each in self.domains[1:]:
            await self._mount_pane(each)
        self.call_after_refresh(_set_start_up_aside)

    def action_show_pane(self, pane_id: str) -> None:
        self.query_one("#panes", PaneSwitcher).current = f"tab-{pane_id}"

    async def _pane_switched(self, container_id: str | None) -> None:
        name = (container_id or "").removeprefix("tab-")
        self.query_one(PaneBar).active = name
        for each in self.domains:
            if each.name == name:
                await self._mount_pane(each)  # made now if asked for before the timer
        pane = self.active_pane()
        if pane is not None:
            pane.focus_main()

    def on_pane_bar_chosen(self, event: PaneBar.Chosen) -> None:
        self.action_show_pane(event.name)

    def action_show_pane_number(self, number: int) -> None:
        if number <= len(self.domains):
            self.action_show_pane(self.domains[number - 1].name)

    def on_mount(self) -> None:
        switcher = self.query_one("#panes", PaneSwitcher)
        self.watch(switcher, "current", self._pane_switched)
        bar = self.query_one(PaneBar)
        bar.title = "zsn" if self.host.is_live else f"zsn — root: {safe(str(self.host.root))}"
        self.set_timer(MOUNT_OTHER_PANES_AFTER, self._mount_remaining_panes)
        if self.startup is not None:
            self.call_after_refresh(self.startup.first_frame_drawn)
        for problem in self._theme_problems:
            self.notify(problem, title="Theme", severity="warning", timeout=8)
        if self.host.is_superuser:
            # After the first frame: its thread (the store's imports, a read of /run/zsn)
            # would take turns with drawing it.
            self.call_after_refresh(self.run_worker, self.tries.pick_up, thread=True,
                                    group="tries")
        # A dropped session whose SIGHUP did not reach zsn (started by a program that
        # set it aside, or in a session of its own) would leave Textual's input thread
        # reading end-of-file in a loop at half a core, on the server, for ever.
        terminal = _terminal_fd()
        if terminal is not None and not self.is_headless:
            self.set_interval(HANGUP_CHECK_SECONDS, lambda: self._exit_if_hung_up(terminal))

    def _exit_if_hung_up(self, fd: int) -> None:
        if terminal_hung_up(fd):
            self.exit(return_code=EXIT_HANGUP)

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(id="_default")

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        # Only the cells that changed go to the terminal (`zsn.tui.output`).
        super()._display(screen, tight(renderable))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("keep_try", "undo_try"):
            return self.tries.current is not None
        return True

    def action_keep_try(self) -> None:
        self.tries.keep()

    def action_undo_try(self) -> None:
        self.tries.undo()

    def panes(self) -> list[LivePane[Any]]:
        """Every pane made so far."""
        return list(self.query(LivePane))

    def active_pane(self) -> LivePane[Any] | None:
        current = self.query_one("#panes", PaneSwitcher).current
        if current is None:
            return None
        panes = self.query_one(f"#{current}").query(LivePane)
        return panes.first() if panes else None

    def action_show_help(self) -> None:
        from zsn.tui.screens.help import HelpScreen

        pane = self.active_pane()
        shown: list[tuple[str, str, str]] = []
        for binding in pane.own_bindings() if pane else []:
            if binding.description:
                why = pane.why_not_now(binding) if pane else None
                shown.append((binding.key_display or binding.key, binding.description,
                              why.reason if why else ""))
        title = next((each.title for each in self.domains if pane and each.name == pane.id),
                     "this pane")

        def pane_help() -> str:  # built after the keys are on the screen
            return (pane.PANE_HELP + "\n\n" + pane.column_help()) if pane else ""

        self.push_screen(HelpScreen(shown, pane_help, title))

def run(host: Host, theme: str | None = None, refresh: float = 1.0,
        startup: Startup | None = None, **kwargs: Any) -> int:
    terminal = _terminal_fd()  # before: a hung-up terminal is no longer a tty
    app = ZsnApp(host, theme=theme, refresh=refresh, startup=startup)
    try:
        app.run(**kwargs)
    except OSError:
        # Textual's last words (the error it exits on, printed at shutdown) can meet the
        # terminal gone too: EIO out of `run` is then the hang-up, not a failure.
        if terminal is not None and terminal_hung_up(terminal):
            return EXIT_HANGUP
        raise
    # Whoever saw the hang-up first, the 2 s check or a write that failed with EIO (which
    # ends Textual with 1), it is a hang-up.
    if app.return_code == EXIT_HANGUP or (terminal is not None and terminal_hung_up(terminal)):
        return EXIT_HANGUP
    return 0
