"""The zsn terminal UI: tabs of live panes, themes from files, help and palette."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Header, TabbedContent, TabPane

from zsn.system.host import Host
from zsn.tui.commands import ZsnCommands
from zsn.tui.panes import PANES
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
        *(Binding(str(number), f"show_pane('{pane_id}')", title, show=False)
          for number, (pane_id, title, _, _) in enumerate(PANES, start=1)),
    ]

    def __init__(self, host: Host, theme: str | None = None, refresh: float = 1.0) -> None:
        super().__init__()
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
            for index, (pane_id, title, _, _) in enumerate(PANES):
                with TabPane(f"{index + 1} {title}", id=f"tab-{pane_id}"):
                    if index == 0:
                        yield self._new_pane(pane_id)
        yield Footer()

    def _new_pane(self, pane_id: str) -> LivePane:
        """A pane, its module imported only when the pane is made."""
        _, _, module, class_name = next(p for p in PANES if p[0] == pane_id)
        pane_class = getattr(importlib.import_module(module), class_name)
        pane: LivePane = pane_class(self.host, self.refresh_seconds, id=pane_id)
        return pane

    async def _mount_remaining_panes(self) -> None:
        # After the first frame: start-up pays for the first pane only, and every
        # tab has its pane before a user can switch to it (an empty tab would
        # leave the keyboard focus behind on the old one).
        for pane_id, *_ in PANES[1:]:
            tab_pane = self.query_one(f"#tab-{pane_id}", TabPane)
            if not tab_pane.query(LivePane):
                await tab_pane.mount(self._new_pane(pane_id))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self.active_pane()
        if pane is not None:
            pane.focus_main()

    def action_show_pane(self, pane_id: str) -> None:
        self.query_one("#panes", TabbedContent).active = f"tab-{pane_id}"

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
