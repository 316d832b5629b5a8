"""The zsn terminal UI: tabs of live panes, themes from files, help and palette."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, TabbedContent, TabPane

from zsn.domains import Domain, domains, load
from zsn.system.host import Host
from zsn.tui.commands import ZsnCommands
from zsn.tui.panes.base import LivePane
from zsn.tui.themes import BUILTIN_FALLBACK, FALLBACK_THEME, load_themes

STYLES = Path(__file__).parent / "styles"


class ZsnApp(App[int]):
    TITLE = "zsn"
    CSS_PATH = [str(path) for path in sorted(STYLES.glob("*.tcss"))]
    COMMANDS = App.COMMANDS | {ZsnCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "show_help", "Help", key_display="?"),
        # Number keys switch panes: the number is on each tab.
        *(Binding(str(number), f"show_pane_number({number})", show=False)
          for number in range(1, 10)),
    ]

    def __init__(self, host: Host, theme: str | None = None, refresh: float = 1.0) -> None:
        super().__init__()
        self.domains: list[Domain] = domains()
        self.host = host
        self.refresh_seconds = refresh
        self._requested_theme = theme
        self._theme_problems: list[str] = []
        loaded = load_themes()
        for theme_object in loaded.themes:
            self.register_theme(theme_object)
        self._theme_problems.extend(loaded.problems)
        # Chosen before mount: set in on_mount, a theme makes Textual re-parse and
        # re-apply the whole stylesheet before the first frame.
        self.theme = self._starting_theme()

    def _starting_theme(self) -> str:
        wanted = self._requested_theme or FALLBACK_THEME
        if wanted in self.available_themes:
            return wanted
        fallback = FALLBACK_THEME if FALLBACK_THEME in self.available_themes \
            else BUILTIN_FALLBACK
        self._theme_problems.append(f"theme {wanted!r} not found; using {fallback}")
        return fallback

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="panes"):
            for index, each in enumerate(self.domains):
                with TabPane(f"{index + 1} {each.title}", id=f"tab-{each.name}"):
                    if index == 0:
                        yield self._new_pane(each)
        yield Footer()

    def _new_pane(self, domain: Domain) -> LivePane:
        """A domain's pane, its module imported only when the pane is made."""
        pane: LivePane = load(domain.pane)(self.host, self.refresh_seconds, id=domain.name)
        return pane

    async def _mount_remaining_panes(self) -> None:
        # After the first frame: start-up pays for the first pane only, and every
        # tab has its pane before a user can switch to it (an empty tab would
        # leave the keyboard focus behind on the old one).
        for each in self.domains[1:]:
            tab_pane = self.query_one(f"#tab-{each.name}", TabPane)
            if not tab_pane.query(LivePane):
                await tab_pane.mount(self._new_pane(each))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self.active_pane()
        if pane is not None:
            pane.focus_main()

    def action_show_pane(self, pane_id: str) -> None:
        self.query_one("#panes", TabbedContent).active = f"tab-{pane_id}"

    def action_show_pane_number(self, number: int) -> None:
        if number <= len(self.domains):
            self.action_show_pane(self.domains[number - 1].name)

    def on_mount(self) -> None:
        self.call_after_refresh(self._mount_remaining_panes)
        for problem in self._theme_problems:
            self.notify(problem, title="Theme", severity="warning", timeout=8)
        if not self.host.is_live:
            self.sub_title = f"root: {self.host.root}"

    def active_pane(self) -> LivePane | None:
        tabs = self.query_one("#panes", TabbedContent)
        active = tabs.active_pane
        if active is None:
            return None
        panes = active.query(LivePane)
        return panes.first() if panes else None

    def action_show_help(self) -> None:
        from zsn.tui.screens.help import HelpScreen

        pane = self.active_pane()
        shown = [(b.key_display or b.key, b.description)
                 for b in (pane.BINDINGS if pane else []) if isinstance(b, Binding)]
        self.push_screen(HelpScreen(pane.PANE_HELP if pane else "", shown))

    def action_refresh_pane(self) -> None:
        pane = self.active_pane()
        if pane is not None:
            pane.poll(force=True)


def run(host: Host, theme: str | None = None, refresh: float = 1.0, **kwargs: Any) -> int:
    ZsnApp(host, theme=theme, refresh=refresh).run(**kwargs)
    return 0
