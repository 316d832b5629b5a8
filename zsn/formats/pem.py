"""PEM files (certificates and keys zsn copies for wpa_supplicant and iwd) as those
programs read them, for the read-back (`zsn.meaning`): each ``-----BEGIN X-----`` block,
its label and its base64 text; whatever stands around the blocks is not read."""

from __future__ import annotations

import re

from zsn.meaning import Entry, Format, Intent, Reading, Section

_BLOCK_RE = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def intent_of(text: str, source: str) -> Intent:
    """The intent of a copy of a PEM file: the blocks the source holds, nothing more."""
    return Intent(PEM).replacing(text, source)


class _Pem:
    name = "PEM"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        return [Section("", [Entry(match.group(1), "".join(match.group(2).split()),
                                   text.count("\n", 0, match.start()) + 1)
                             for match in _BLOCK_RE.finditer(text)], 1)]


PEM: Format = _Pem()
