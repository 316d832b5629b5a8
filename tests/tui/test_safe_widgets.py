"""Textual-side helpers for outside text: styles kept, characters escaped, no markup."""

from __future__ import annotations

from rich.text import Text

from zsn.tui.widgets.safe import plain, safe_rich, title


def test_rich_text_keeps_its_styles_on_the_escaped_characters() -> None:
    text = Text("pool ")
    text.append("t\x1bank", style="bold")
    text.append(" DEGRADED\u202e", style="red")
    shown = safe_rich(text)
    assert shown.plain == "pool t\\x1bank DEGRADED\\u202e"
    styled = {shown.plain[span.start:span.end]: str(span.style) for span in shown.spans}
    assert styled == {"t\\x1bank": "bold", " DEGRADED\\u202e": "red"}
    clean = Text("nothing to escape", style="bold")
    assert safe_rich(clean) is clean


def test_outside_text_is_never_markup() -> None:
    assert plain("[b]x[/b]\x07").plain == "[b]x[/b]\\x07"
    assert title("[link=http://x]y[/link]").plain == "[link=http://x]y[/link]"
