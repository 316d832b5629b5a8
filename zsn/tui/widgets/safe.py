"""Outside text on Textual widgets: through `zsn.terminal.safe`, and never as markup.

Textual reads a plain `str` given to a `Static` or a border title as console markup:
a dataset named ``[link=http://x]`` would become a hyperlink, and ``[/]`` in a
daemon's reply ends the style of what follows. And a Rich `Text` keeps ESC and the
C1 controls as they are. So every widget that shows text zsn did not write (details
boxes, screens, titles, notifications) takes it through `plain` or `safe_rich`, or
is a `SafeStatic`, which does it for whatever it is given.
"""

from __future__ import annotations

from typing import Any

from rich.text import Span, Text
from textual.content import Content
from textual.visual import VisualType
from textual.widgets import Static

from zsn.terminal import safe, safe_text


def plain(text: str) -> Text:
    """`text` as a Rich `Text` to show as it is: escaped, no markup, line breaks kept."""
    return Text(safe_text(text))


def title(text: str) -> Content:
    """A border title or subtitle with outside text in it: escaped, one line, no markup."""
    return Content(safe(text))


def safe_rich(text: Text) -> Text:
    """`text` with its characters escaped and its styles kept on what they styled."""
    shown = text.plain
    if safe_text(shown) == shown:
        return text
    cuts = sorted({0, len(shown), *(s.start for s in text.spans), *(s.end for s in text.spans)})
    out = Text(style=text.style, justify=text.justify, overflow=text.overflow,
               no_wrap=text.no_wrap, end=text.end)
    for start, end in zip(cuts, cuts[1:], strict=False):
        if start >= end:
            continue
        piece = safe_text(shown[start:end])
        begin = len(out.plain)
        out.append(piece)
        out.spans.extend(Span(begin, begin + len(piece), span.style) for span in text.spans
                         if span.start <= start and span.end >= end)
    return out


def _safe_visual(content: VisualType) -> VisualType:
    if isinstance(content, str):
        return plain(content)
    if isinstance(content, Text):
        return safe_rich(content)
    return content


class SafeStatic(Static):
    """A `Static` for text from outside zsn: a `str` is shown as it is (escaped, never
    read as markup), a Rich `Text` is escaped with its styles kept."""

    def __init__(self, content: VisualType = "", **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(_safe_visual(content), **kwargs)

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        super().update(_safe_visual(content), layout=layout)
