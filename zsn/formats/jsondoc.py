"""JSON documents another program reads (``nft -j -f``'s ruleset file): `json.dumps` is
the renderer (every string escaped: no value can make a second line of data), and
`JSON` reads a file back for the plan's check (`zsn.meaning`), leaf by leaf.
"""

from __future__ import annotations

import json

from zsn.errors import ParseError
from zsn.meaning import Entry, Format, Intent, Reading, Section, leaves


def intent_of(data: object) -> Intent:
    """The intent of a file written from scratch that holds `data`."""
    intent = Intent(JSON)
    intent.whole([("", leaves(data))])
    return intent


class _Json:
    name = "JSON"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ParseError(f"not JSON: {exc}", None, source) from None
        return [Section("", [Entry(k, v) for k, v in leaves(data)])]


JSON: Format = _Json()
