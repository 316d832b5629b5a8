"""JSON documents another program reads (``nft -j -f``'s ruleset file): `json.dumps` is
the renderer (every string escaped: no value can make a second line of data), and
`JSON` reads a file back for the plan's check (`zsn.meaning`), leaf by leaf.
"""

from __future__ import annotations

from typing import Any

from zsn.decode import from_json
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
        data = from_json(text, Any, source)
        return [Section("", [Entry(k, v) for k, v in leaves(data)])]


JSON: Format = _Json()
