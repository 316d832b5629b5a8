"""`KeyFooter`: the footer shows the keys that matter, as many as fit.

Textual's footer lists every shown binding and cuts the line at the screen's
edge, so at 80 columns the last keys (help and quit among them) were lost. Here
the keys named in `keep` (help, quit) always stay; the others follow in binding
order (a pane lists its bindings most important first) while they fit; a key
that does not fit is left out whole, with every key after it. The rest are in
`?` and the command palette. Nothing here repaints on a timer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.geometry import Size
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeyFooter(Footer):
    def __init__(self, keep: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.keep = frozenset(keep)
        self._shown: tuple[tuple[str, str, bool], ...] | None = None

    async def recompose(self) -> None:
        # Textual rebuilds the footer whenever the focus moves; the keys rarely
        # change with it, and rebuilding costs a dozen widgets and a repaint.
        shown = tuple((key, active.binding.description, active.enabled)
                      for key, active in self.screen.active_bindings.items()
                      if active.binding.show)
        if shown == self._shown and self.children:
            return
        self._shown = shown
        await super().recompose()
        self.fit_keys()

    def on_resize(self) -> None:
        self.fit_keys()

    @staticmethod
    def _width(key: FooterKey) -> int:
        styles = key.styles
        return (key.get_content_width(Size(0, 0), Size(0, 0)) + styles.gutter.width
                + styles.margin.width)

    def fit_keys(self) -> None:
        width = self.size.width
        if not width:
            return
        keys = list(self.query(FooterKey))
        palette = [key for key in keys if key.has_class("-command-palette")]
        available = width - sum(self._width(key) for key in palette)
        ranked = [key for key in keys if key.key in self.keep and key not in palette]
        ranked += [key for key in keys if key.key not in self.keep and key not in palette]
        full = False
        for key in ranked:
            needed = self._width(key)
            shown = not full and needed <= available
            full |= not shown and key.key not in self.keep
            if shown:
                available -= needed
            if key.display != shown:
                key.display = shown

    @property
    def shown_keys(self) -> list[str]:
        """The keys on the footer now, left to right (for tests)."""
        return [key.key for key in self.query(FooterKey) if key.display]
