"""`KeyBar`: the footer line, showing the keys that matter, as many as fit.

Textual's Footer lists every shown binding and cuts the line at the screen's edge
(at 80 columns help and quit were lost), and it is a widget per key, rebuilt each
time the focus moves. This is one widget drawing one line: the keys named in
`keep` (help, quit) always stay; then the keys the current state needs most, which
the focused widget and its ancestors name in `urgent_keys()` (a table's `esc`
while a filter hides rows, the ZFS pane's pause and stop while a scrub runs);
then the others in binding order (a pane lists its bindings most important first)
while they fit; a key that does not fit is left out whole, with every key after
it. The rest are in `?` and the command palette (its key on the right). It is
redrawn only when the keys shown change: a widget whose urgent keys changed calls
`refresh_bindings()`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget

KeyShown = tuple[str, str, str, bool]
"""(key, key as shown, description, enabled)."""


def urgent_keys(screen: Screen[Any]) -> list[str]:
    """The keys the focused widget and its ancestors ask to show first, in that order."""
    keys: list[str] = []
    node: DOMNode | None = screen.focused
    while node is not None:
        wanted = getattr(node, "urgent_keys", None)
        if callable(wanted):
            keys.extend(key for key in wanted() if key not in keys)
        node = node.parent
    return keys


class KeyBar(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "key-bar--key", "key-bar--description", "key-bar--disabled",
    }

    def __init__(self, keep: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.keep = frozenset(keep)
        self._keys: tuple[KeyShown, ...] = ()
        self._spans: list[tuple[int, int, str]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        urgent = urgent_keys(screen)
        active = screen.active_bindings
        first = [key for key in urgent if key in active and active[key].binding.description]
        rest = [key for key, each in active.items()
                if key not in first and each.binding.show and each.binding.description]
        keys = tuple(
            (key, self.app.get_key_display(active[key].binding),
             active[key].binding.description, active[key].enabled)
            for key in (*first, *rest))
        if keys != self._keys:
            self._keys = keys
            self.refresh()

    @property
    def shown_keys(self) -> list[str]:
        """The keys on the line now, left to right (for tests)."""
        self._fit(self.size.width)
        return [key for _, _, key in self._spans]

    @property
    def greyed_keys(self) -> list[str]:
        """The keys on the line now that cannot act in this state (for tests)."""
        shown = set(self.shown_keys)
        return [key for key, _, _, enabled in self._keys if key in shown and not enabled]

    def _palette(self) -> KeyShown | None:
        app = self.app
        if not app.ENABLE_COMMAND_PALETTE:
            return None
        binding = Binding(app.COMMAND_PALETTE_BINDING, "command_palette", "palette")
        return (app.COMMAND_PALETTE_BINDING, app.get_key_display(binding), "palette", True)

    @staticmethod
    def _width(shown: KeyShown) -> int:
        return cell_len(shown[1]) + cell_len(shown[2]) + 3  # " k desc "

    def _fit(self, width: int) -> list[KeyShown]:
        palette = self._palette()
        room = width - (self._width(palette) if palette else 0)
        kept = [shown for shown in self._keys if shown[0] in self.keep]
        room -= sum(self._width(shown) for shown in kept)
        chosen = set(kept)
        for shown in self._keys:
            if shown[0] in self.keep:
                continue
            if self._width(shown) > room:
                break
            chosen.add(shown)
            room -= self._width(shown)
        line = [shown for shown in self._keys if shown in chosen]
        self._spans = []
        x = 0
        for shown in line:
            self._spans.append((x, x + self._width(shown), shown[0]))
            x += self._width(shown)
        return line

    def render(self) -> Text:
        width = self.size.width
        key_style = self.get_component_rich_style("key-bar--key")
        description_style = self.get_component_rich_style("key-bar--description")
        disabled_style = self.get_component_rich_style("key-bar--disabled")
        line = Text(no_wrap=True, end="")

        def add(shown: KeyShown) -> None:
            _, display, description, enabled = shown
            line.append(f" {display} ", style=key_style if enabled else disabled_style)
            line.append(f"{description} ",
                        style=description_style if enabled else disabled_style)

        for shown in self._fit(width):
            add(shown)
        palette = self._palette()
        if palette is not None:
            gap = width - line.cell_len - self._width(palette)
            if gap >= 0:
                line.append(" " * (gap - 1) + "▏" if gap else "")
                self._spans.append((line.cell_len, width, palette[0]))
                add(palette)
        return line

    async def _on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
