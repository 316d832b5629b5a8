"""wg-quick configuration files, kept byte for byte.

A config is its list of raw lines (each with its own line ending); parsing builds
an index of sections and entries over those lines without normalising anything,
so rendering is ``"".join(lines)`` and an edit changes only the lines it touches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zsn.errors import ParseError

_SECTION_RE = re.compile(r"^\s*\[\s*([A-Za-z]+)\s*\]\s*(?:#.*)?$")
_ENTRY_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*?)\s*$")
# Name comment styles seen in the wild: "# alice", "#alice", "# Name = alice",
# "# name: alice", "# friendly_name = alice" (wireguard-ui / wg-gen-web).
_NAME_KEY_RE = re.compile(r"^(?:friendly[_ ]?)?name\s*[=:]\s*(.+)$", re.IGNORECASE)
KNOWN_SECTIONS = ("Interface", "Peer")


@dataclass(frozen=True)
class Entry:
    key: str
    """The key as written (case kept)."""
    value: str
    """The value with surrounding spaces and any trailing ``# comment`` removed."""
    line: int
    """0-based index into `WgConfig.lines`."""


@dataclass
class Section:
    kind: str
    """``Interface`` or ``Peer`` (canonical case)."""
    header: int
    """0-based line index of the ``[Section]`` line."""
    end: int
    """Line index one past the section's last line."""
    entries: list[Entry] = field(default_factory=list)
    name: str | None = None
    """For a peer: the name from its comment, when there is one."""

    def get(self, key: str) -> str | None:
        """The last value of `key` (case-insensitive), as wg reads it."""
        wanted = key.lower()
        value = None
        for entry in self.entries:
            if entry.key.lower() == wanted:
                value = entry.value
        return value

    def get_all(self, key: str) -> list[str]:
        """Every comma-separated item of every `key` line, e.g. several AllowedIPs lines."""
        wanted = key.lower()
        items: list[str] = []
        for entry in self.entries:
            if entry.key.lower() == wanted:
                items.extend(part.strip() for part in entry.value.split(",") if part.strip())
        return items


@dataclass
class WgConfig:
    lines: list[str]
    sections: list[Section]
    source: str | None = None

    @property
    def interface(self) -> Section | None:
        return next((s for s in self.sections if s.kind == "Interface"), None)

    @property
    def peers(self) -> list[Section]:
        return [s for s in self.sections if s.kind == "Peer"]

    def render(self) -> str:
        return "".join(self.lines)

    def peer_names(self) -> dict[str, str]:
        """Peer name by public key, for the peers that have a name comment."""
        names: dict[str, str] = {}
        for peer in self.peers:
            key = peer.get("PublicKey")
            if key and peer.name:
                names[key] = peer.name
        return names


def _strip_inline_comment(value: str) -> str:
    hash_at = value.find("#")
    return value[:hash_at].rstrip() if hash_at >= 0 else value


def _comment_text(line: str) -> str | None:
    stripped = line.strip()
    if not stripped.startswith("#"):
        return None
    return stripped.lstrip("#").strip()


def _name_from_comment(text: str) -> str | None:
    match = _NAME_KEY_RE.match(text)
    if match:
        return match.group(1).strip() or None
    return text or None


def parse(text: str, source: str | None = None) -> WgConfig:
    """Parse a wg-quick config; raise `ParseError` naming the first line that is not valid."""
    lines = text.splitlines(keepends=True)
    sections: list[Section] = []
    current: Section | None = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        header = _SECTION_RE.match(line)
        if header:
            kind = header.group(1).capitalize()
            if kind not in KNOWN_SECTIONS:
                raise ParseError(f"unknown section [{header.group(1)}]", index + 1, source)
            if current is not None:
                current.end = index
            current = Section(kind=kind, header=index, end=len(lines))
            sections.append(current)
            continue
        entry = _ENTRY_RE.match(_strip_inline_comment(line.rstrip("\r\n")))
        if entry is None:
            raise ParseError(f"expected 'Key = value', got {stripped[:40]!r}", index + 1, source)
        if current is None:
            raise ParseError(f"{entry.group(1)} is outside any [Interface] or [Peer]",
                             index + 1, source)
        current.entries.append(Entry(entry.group(1), entry.group(2), index))
    for section in sections:
        if section.kind == "Peer":
            section.name = _peer_name(lines, section)
    return WgConfig(lines, sections, source)


def _peer_name(lines: list[str], peer: Section) -> str | None:
    # The comment directly above [Peer] is the name; a "# Name = x" inside the
    # block is a common alternative.
    if peer.header > 0:
        above = _comment_text(lines[peer.header - 1])
        if above is not None:
            name = _name_from_comment(above)
            if name:
                return name
    for index in range(peer.header + 1, peer.end):
        text = _comment_text(lines[index])
        if text is not None:
            match = _NAME_KEY_RE.match(text)
            if match and match.group(1).strip():
                return match.group(1).strip()
    return None
