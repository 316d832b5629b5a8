"""`StatusLine`: a pane's few lines above its tables, repainted only when they change."""

from __future__ import annotations

from typing import Any, Literal

from textual.widgets import Static

from zsn.terminal import safe_lines
from zsn.tui.widgets.safe import plain

Severity = Literal["error", "warning", "info"]


class StatusLine(Static):
    """Hidden while empty. Setting the same lines again costs nothing: no repaint,
    no layout (a Static's update re-lays out the screen, so it is never called
    with unchanged text)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", classes="pane-status", **kwargs)
        self.display = False
        self._shown: tuple[tuple[str, ...], str] = ((), "")

    @property
    def lines(self) -> tuple[str, ...]:
        return self._shown[0]

    @property
    def severity(self) -> str:
        return self._shown[1]

    def show_lines(self, lines: list[str] | tuple[str, ...], severity: Severity = "error") -> None:
        wanted = (tuple(lines), severity if lines else "")
        if wanted == self._shown:
            return
        self._shown = wanted
        self.set_classes(f"pane-status -{severity}")
        self.update(plain(safe_lines(lines)))  # names, replies: escaped, one line each
        self.display = bool(lines)
