"""Text that tells the user what to do next, worded by each front end.

An error or a plan note sometimes names another action: show a client config
again, rename a peer. The CLI says it as a command line, the TUI as the key that
does it where the user is. Core code writes such text once, as a `Phrase` of plain
parts and `Action`s. A `Phrase` is a `str` holding the CLI's wording, so printing,
logging and joining it need nothing special; `Phrase.worded(name)` gives another
front end's, naming each `Action` its own way (the TUI: `zsn.tui.wording.say`).

An input the user gave is named the same way, through `ValidationError.field`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Action(NamedTuple):
    name: str
    """The action as the TUI calls it (``show_client``): its binding gives the key."""
    command: str
    """The same as a command line (``zsn peer show wg0 alice --qr``)."""


class Phrase(str):
    """Text with `Action`s in it; as a `str`, the CLI's wording."""

    parts: tuple[str | Action, ...]

    def __new__(cls, *parts: str | Action) -> Phrase:
        text = "".join(part if isinstance(part, str) else part.command for part in parts)
        phrase = super().__new__(cls, text)
        phrase.parts = parts
        return phrase

    def worded(self, name: Callable[[Action], str]) -> str:
        """The text with each `Action` named by `name`."""
        return "".join(part if isinstance(part, str) else name(part) for part in self.parts)
