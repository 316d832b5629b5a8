"""wpa_supplicant.conf as wpa_supplicant reads it, for the read-back of a file zsn writes
(`zsn.meaning`): the global settings, then each ``network={...}`` block, every
``key=value`` in order (the same line rules as `zsn.system.wpa_config`, which lint
reads the file with)."""

from __future__ import annotations

from zsn.errors import ParseError
from zsn.meaning import Entry, Format, Reading, Section


class _WpaSupplicant:
    name = "wpa_supplicant.conf"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        found: Reading = [Section("", [], 1)]
        block: Section | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if block is None and line.replace(" ", "") == "network={":
                block = Section("network", [], number)
                found.append(block)
                continue
            if block is not None and line == "}":
                block = None
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise ParseError(f"not key=value: {line[:40]!r}", number, source)
            (block or found[0]).entries.append(Entry(key.strip(), value.strip(), number))
        if block is not None:
            raise ParseError("a network block is not closed", block.line, source)
        return found


WPA_SUPPLICANT: Format = _WpaSupplicant()
