"""Command-palette entries: pane actions, app actions, panes and themes, each once.

One provider lists everything, so nothing is there twice: the pane's bindings
(most important first), the app's (quit, help), the panes, the themes, then
Textual's own commands less those zsn already has an entry for. An action offered
twice (a pane listing two keys for it, Textual's quit beside zsn's) is listed
once, under its first name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.widget import Widget

ZSN_HAS_ITS_OWN = {
    "show_help_panel": "`?` shows zsn's help (keys, columns, markers)",
    "hide_help_panel": "the help is a screen zsn closes with esc",
    "change_theme": "each theme has its own `Theme: NAME` entry",
}
"""Textual's commands that do what one of zsn's entries does."""


class Command(NamedTuple):
    title: str
    help: str
    callback: Callable[[], object]
    action: tuple[int, str]
    """Who runs which action: entries with the same one are the same command."""


def _binding_commands(owner: Widget | App[Any], bindings: Any) -> Iterator[Command]:
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description:
            yield Command(binding.description.rstrip("…"),
                          f"key {binding.key_display or binding.key}",
                          partial(owner.run_action, binding.action),
                          (id(owner), binding.action))


class ZsnCommands(Provider):
    def _candidates(self) -> Iterator[Command]:
        app = self.app
        active_pane = getattr(app, "active_pane", None)
        pane = active_pane() if active_pane is not None else None
        if pane is not None:
            yield from _binding_commands(pane, pane.BINDINGS)
        yield from _binding_commands(app, app.BINDINGS)
        for number, domain in enumerate(getattr(app, "domains", ()), start=1):
            action = f"show_pane('{domain.name}')"
            yield Command(f"Pane: {domain.title}", f"key {number}",
                          partial(app.run_action, action), (id(app), action))
        for name in sorted(app.available_themes):
            yield Command(f"Theme: {name}", f"Switch to the {name} theme",
                          partial(setattr, app, "theme", name), (id(app), f"theme {name}"))
        for command in app.get_system_commands(self.screen):
            action = getattr(command.callback, "__name__", command.title)
            action = action.removeprefix("action_")
            if action not in ZSN_HAS_ITS_OWN:
                yield Command(command.title, command.help, command.callback, (id(app), action))

    def _commands(self) -> list[Command]:
        seen_actions: set[tuple[int, str]] = set()
        seen_titles: set[str] = set()
        commands = []
        for command in self._candidates():
            if command.action in seen_actions or command.title in seen_titles:
                continue
            seen_actions.add(command.action)
            seen_titles.add(command.title)
            commands.append(command)
        return commands

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(command.title, command.callback, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.callback,
                          help=command.help)
