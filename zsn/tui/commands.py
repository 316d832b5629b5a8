"""Command-palette entries: pane actions and app actions, searchable by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider


class ZsnCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.app
        commands: list[tuple[str, str, Callable[[], object]]] = [
            ("Help: keys and columns", "Show what every key does", partial(app.run_action,
                                                                           "show_help")),
            ("Refresh now", "Read the live state again", partial(app.run_action,
                                                                  "refresh_pane")),
            ("Quit zsn", "Leave zsn", partial(app.run_action, "quit")),
        ]
        # The active pane's own actions (add peer, lint, ...), with the key that runs them.
        pane = app.active_pane() if hasattr(app, "active_pane") else None
        for binding in getattr(pane, "BINDINGS", ()):
            if isinstance(binding, Binding) and binding.description and pane is not None:
                commands.append((f"{binding.description.rstrip('…')}",
                                 f"key {binding.key_display or binding.key}",
                                 partial(pane.run_action, binding.action)))
        for number, domain in enumerate(getattr(app, "domains", ()), start=1):
            commands.append((f"Pane: {domain.title}", f"key {number}",
                             partial(app.run_action, f"show_pane('{domain.name}')")))
        for name in sorted(app.available_themes):
            commands.append((f"Theme: {name}", f"Switch to the {name} theme",
                             partial(setattr, app, "theme", name)))
        return commands

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback,
                          help=help_text)
