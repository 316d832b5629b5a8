"""Core text as the TUI says it: actions by their keys, not by command lines."""

from __future__ import annotations

from textual.binding import Binding
from textual.dom import DOMNode

from zsn.wording import Action, Phrase


def message_of(error: BaseException) -> str:
    """The text an error was raised with (a `Phrase` stays one)."""
    first = error.args[0] if error.args else None
    return first if isinstance(first, str) else str(error)


def say(text: str | BaseException, node: DOMNode) -> str:
    """`text` (or an error's message) for a screen: each `Action` of a `Phrase` becomes
    the key bound to it in the pane the user is in, or in the app (``key v: QR code``);
    an action neither has a key for keeps its command line."""
    if isinstance(text, BaseException):
        text = message_of(text)
    if not isinstance(text, Phrase):
        return text
    active_pane = getattr(node.app, "active_pane", None)
    pane = active_pane() if active_pane is not None else None
    bindings = {binding.action: binding
                for binding in (*getattr(node.app, "BINDINGS", ()), *getattr(pane, "BINDINGS", ()))
                if isinstance(binding, Binding)}

    def name(action: Action) -> str:
        binding = bindings.get(action.name)
        if binding is None:
            return action.command
        key = binding.key_display or binding.key
        return f"key {key}: {binding.description.rstrip('…')}" if binding.description \
            else f"key {key}"

    return text.worded(name)
