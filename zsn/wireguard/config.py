"""wg-quick configuration files, kept byte for byte, and edited line by line.

A config is its list of raw lines (each with its own line ending); parsing builds
an index of sections and entries over those lines without normalising anything,
so rendering is ``"".join(lines)`` and an edit changes only the lines it touches.

A disabled peer stays in the file with every line of its block prefixed by
``#[disabled] `` (the marker PiVPN uses): wg-quick sees comments, zsn sees a peer.

This module is the format's one renderer: every line zsn adds is made here, its
value checked by `zsn.wireguard.schema.SCHEMA` (as wg and wg-quick check it, no ``#``,
no line break). Every edit also records what it means in the config's `WgConfig.intent`
(`zsn.meaning`), which the plan's `FileEdit` reads back against the written text
(`WG_QUICK` is the reader it uses).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from zsn.errors import ParseError, ValidationError
from zsn.format import excerpt
from zsn.meaning import Entry as MeantEntry
from zsn.meaning import Format, Intent, Reading, entry_text, one_line
from zsn.meaning import Section as MeantSection
from zsn.wireguard.schema import EXPIRES_KEY, NAME_KEY, SCHEMA

if TYPE_CHECKING:
    from zsn.system.host import Host

WIREGUARD_DIR = "/etc/wireguard"

_SECTION_RE = re.compile(r"^\s*\[\s*([A-Za-z]+)\s*\]\s*(?:#.*)?$")
# The parts of an entry line an edit must keep: indentation and spacing around
# "=", a trailing comment, the line ending.
_ENTRY_PARTS_RE = re.compile(
    r"^(?P<head>\s*[A-Za-z][A-Za-z0-9]*\s*=[ \t]*)(?P<value>[^#\r\n]*?)"
    r"(?P<tail>[ \t]*(?:#[^\r\n]*)?)(?P<eol>\r?\n|\r)?$"
)
# Name comment styles seen in the wild: "# alice", "#alice", "# Name = alice",
# "# name: alice", "# friendly_name = alice" (wireguard-ui / wg-gen-web).
_NAME_KEY_RE = re.compile(r"^(?:friendly[_ ]?)?name\s*[=:]\s*(.+)$", re.IGNORECASE)
# PiVPN wraps each client block in "### begin NAME ###" ... "### end NAME ###".
_PIVPN_BEGIN_RE = re.compile(r"^#+\s*begin\s+(\S+)\s*#+\s*$")
_PIVPN_END_RE = re.compile(r"^\s*#+\s*end\s+(\S+)\s*#+\s*$")
DISABLED_PREFIX = "#[disabled] "
EXPIRES_RE = re.compile(r"^\s*#\s*Expires\s*=\s*(?P<when>\S*)\s*$", re.IGNORECASE)
"""zsn's expiry of a peer, a comment inside its block: ``# Expires = 2026-12-31T23:59:59Z``
(`zsn.wireguard.expiry`); never taken for the peer's name."""
KNOWN_SECTIONS = ("Interface", "Peer")
_PLAIN_HEADERS = {"[Interface]": "Interface", "[Peer]": "Peer"}
PEER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,62}")
"""A peer name zsn gives a client config file; always used with fullmatch."""
MAX_NAME_BYTES = 200
_CONTROL_CHARACTER_RE = re.compile(r"[\x00-\x1f\x7f]")


def config_path(host: Host, interface: str) -> Path:
    """Where wg-quick keeps `interface`'s config on `host`."""
    return host.path(f"{WIREGUARD_DIR}/{interface}.conf")


class Entry(NamedTuple):
    """One ``Key = value`` line (a NamedTuple: configs with thousands of peers have tens
    of thousands of these, and a frozen dataclass is twice as slow to build)."""

    key: str
    """The key as written (case kept)."""
    value: str
    """The value with surrounding spaces and any trailing ``# comment`` removed."""
    line: int
    """0-based index into `WgConfig.lines`."""


@dataclass
class Section:
    """An ``[Interface]`` or ``[Peer]`` block: where it is and its entries."""

    kind: str
    """``Interface`` or ``Peer`` (canonical case)."""
    header: int
    """0-based line index of the ``[Section]`` line."""
    end: int
    """Line index one past the section's last line."""
    entries: list[Entry] = field(default_factory=list)
    name: str | None = None
    """For a peer: the name from its comment, when there is one."""
    name_line: int | None = None
    """The line the name was read from."""
    disabled: bool = False
    """The block is commented out with `DISABLED_PREFIX` (kept in the file, not live)."""

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
                if "," not in entry.value:  # one item (values are stripped already)
                    if entry.value:
                        items.append(entry.value)
                else:
                    items += [part for part in map(str.strip, entry.value.split(",")) if part]
        return items

    def entries_for(self, key: str) -> list[Entry]:
        wanted = key.lower()
        return [entry for entry in self.entries if entry.key.lower() == wanted]

    @property
    def last_line(self) -> int:
        """Index of the block's last meaningful line (header or last entry)."""
        return self.entries[-1].line if self.entries else self.header

    @property
    def label(self) -> str:
        if self.kind == "Interface":
            return "[Interface]"
        return f"peer {self.name!r}" if self.name else f"peer {self.get('PublicKey')}"

    @property
    def name_problem(self) -> str | None:
        """Why the name read from the file could not stand for a file, if it could not."""
        return name_problem(self.name) if self.name is not None else None

    @property
    def client_file_name(self) -> str | None:
        """The name as a client config file's name: only names zsn could have given
        (`PEER_NAME_RE`), never one that is a path or has odd characters."""
        return self.name if self.name and PEER_NAME_RE.fullmatch(self.name) else None


@dataclass
class WgConfig:
    """A config as its raw lines and the index of its sections over them."""

    lines: list[str]
    sections: list[Section]
    source: str | None = None
    intent: Intent = field(default_factory=lambda: Intent(WG_QUICK), repr=False)
    """What the edits made since the text was parsed mean (`zsn.meaning`)."""
    text: str | None = field(default=None, repr=False)
    """The text it was parsed from, while no edit changed it."""

    @classmethod
    def new(cls, source: str | None = None) -> WgConfig:
        """An empty config to write a new file into with the edits below: its intent is
        the whole file, whatever the file held before."""
        config = parse("", source)
        config.intent.whole([])
        return config

    @property
    def interface(self) -> Section | None:
        """The ``[Interface]`` (`parse` refuses a file with two)."""
        return next((s for s in self.sections if s.kind == "Interface" and not s.disabled),
                    None)

    @property
    def peers(self) -> list[Section]:
        """The active peers (what wg-quick loads)."""
        return [s for s in self.sections if s.kind == "Peer" and not s.disabled]

    @property
    def all_peers(self) -> list[Section]:
        """Active and disabled peers, in file order."""
        return [s for s in self.sections if s.kind == "Peer"]

    def render(self) -> str:
        return "".join(self.lines)

    def copy(self) -> WgConfig:
        """An independent copy to edit (entries are immutable and shared)."""
        sections = [Section(s.kind, s.header, s.end, list(s.entries), s.name, s.name_line,
                            s.disabled) for s in self.sections]
        intent = self.intent.copy()
        if self.text is not None and intent.known is None and not intent.ops:
            # The copy is edited, this one stays as parsed: the read-back's reading of
            # the file before the edits comes from it instead of a second parse.
            intent.known = (self.text, self)
        return WgConfig(list(self.lines), sections, self.source, intent)

    def peer_keys(self) -> list[tuple[str, Section]]:
        """(public key, peer) for each active peer that has a key, in file order."""
        found: list[tuple[str, Section]] = []
        for peer in self.peers:
            key = peer.get("PublicKey")
            if key:
                found.append((key, peer))
        return found

    def peer_names(self) -> dict[str, str]:
        """Peer name by public key, for the peers that have a name comment."""
        return {key: peer.name for key, peer in self.peer_keys() if peer.name}

    # -- lookups -------------------------------------------------------------------

    def find_peer(self, name_or_key: str) -> Section | None:
        """The peer (active or disabled) with this name or public key."""
        for peer in self.all_peers:
            if name_or_key in (peer.name, peer.get("PublicKey")):
                return peer
        return None

    def require_peer(self, name_or_key: str) -> Section:
        peer = self.find_peer(name_or_key)
        if peer is None:
            where = f" in {self.source}" if self.source else ""
            raise ValidationError(f"no peer named {name_or_key!r}{where}")
        return peer

    # -- edits: each changes only the lines it must, then re-indexes -------------

    @property
    def newline(self) -> str:
        """The file's line ending, for lines zsn adds."""
        for line in self.lines:
            if line.endswith("\r\n"):
                return "\r\n"
            if line.endswith("\n"):
                return "\n"
        return "\n"

    def set_value(self, section: Section, key: str, value: str) -> None:
        """Set `key` in `section`: rewrite its last line in place, or add a line after the block."""
        _check_value(key, value)
        self._set_value(section, key, value)

    def _set_value(self, section: Section, key: str, value: str) -> None:
        existing = section.entries_for(key)
        where = self._index(section)
        if existing:
            self.intent.assign(where, key, [e.value for e in existing[:-1]] + [value.strip()])
        else:
            self.intent.append(where, key, value.strip())
        if existing:
            # Same line, same position: swap the entry, no need to re-read the file.
            entry = existing[-1]
            self.lines[entry.line] = _replace_value(self.lines[entry.line], value)
            section.entries[section.entries.index(entry)] = Entry(entry.key, value.strip(),
                                                                  entry.line)
            return
        self._insert(section.last_line + 1,
                     [self._entry_line(section, key, value)], section.disabled)
        self._reindex(section.header)

    def append_entry(self, section: Section, key: str, value: str) -> None:
        """Add one more `key` line after the block's last entry (e.g. another PostUp)."""
        _check_value(key, value)
        self.intent.append(self._index(section), key, value.strip())
        self._insert(section.last_line + 1, [self._entry_line(section, key, value)],
                     section.disabled)
        self._reindex(section.header)

    def remove_key(self, section: Section, key: str) -> None:
        """Remove every `key` line of `section`."""
        self.intent.assign(self._index(section), key, [])
        doomed = {entry.line for entry in section.entries_for(key)}
        self.lines = [line for index, line in enumerate(self.lines) if index not in doomed]
        self._reindex(section.header)

    def add_list_items(self, section: Section, key: str, items: Iterable[str]) -> None:
        """Append items (e.g. AllowedIPs) missing from `key`'s comma-separated values."""
        present = set(section.get_all(key))
        new = [item for item in items if item not in present]
        if not new:
            return
        _check_value(key, ", ".join(new))  # what is there already stays as it is
        existing = section.entries_for(key)
        if existing:
            entry = existing[-1]
            joined = ", ".join([*([entry.value] if entry.value else []), *new])
            self._set_value(section, key, one_line(joined, key))
        else:
            self._set_value(section, key, ", ".join(new))

    def remove_list_items(self, section: Section, key: str, items: Iterable[str]) -> None:
        """Remove items from every `key` line; a line left empty is removed."""
        doomed = set(items)
        changed = False
        left = [", ".join(kept) for entry in section.entries_for(key)
                if (kept := [p.strip() for p in entry.value.split(",")
                             if p.strip() and p.strip() not in doomed])]
        for entry in reversed(section.entries_for(key)):
            parts = [part.strip() for part in entry.value.split(",") if part.strip()]
            kept = [part for part in parts if part not in doomed]
            if kept == parts:
                continue
            changed = True
            if kept:
                self.lines[entry.line] = _replace_value(self.lines[entry.line], ", ".join(kept))
            else:
                del self.lines[entry.line]
        if changed:
            self.intent.assign(self._index(section), key, left)
            self._reindex(section.header)

    def append_comment(self, text: str) -> None:
        """A ``# text`` line at the end (a note for whoever reads the file)."""
        self._append_lines([f"# {one_line(text, 'a comment')}{self.newline}"])

    def append_interface(self, fields: Sequence[tuple[str, str]], *,
                         note: str | None = None) -> Section:
        """An ``[Interface]`` block at the end (a file written from scratch), with a
        ``# note`` line first when there is one."""
        for key, value in fields:
            _check_value(key, value)
        self.intent.insert(None, "Interface", [(key, value.strip()) for key, value in fields])
        nl = self.newline
        comment = [] if note is None else [f"# {one_line(note, 'a comment')}{nl}"]
        self._append_lines([f"[Interface]{nl}", *comment,
                            *(f"{key} = {value}{nl}" for key, value in fields)])
        return next(s for s in reversed(self.sections) if s.kind == "Interface")

    def append_peer(self, name: str | None, fields: Sequence[tuple[str, str]], *,
                    label: str | None = None, expires: str | None = None) -> Section:
        """Add a ``[Peer]`` block at the end, its name as the comment above it (or a
        `label`, free text, where the peer is no peer of zsn's: a client's server), with
        its ``# Expires =`` line when it has one."""
        for key, value in fields:
            _check_value(key, value)
        nl = self.newline
        block: list[str] = []
        if self.lines and self.lines[-1].strip():
            block.append(nl)
        meant: list[tuple[str, str]] = []
        title = check_peer_name(name) if name is not None else \
            one_line(label, "a peer's label") if label is not None else None
        if title is not None:
            block.append(f"# {title}{nl}")
            meant.append((NAME_KEY, title))
        block.append(f"[Peer]{nl}")
        if expires is not None:
            block.append(f"# Expires = {_check_expires(expires)}{nl}")
            meant.append((EXPIRES_KEY, expires))
        block.extend(f"{key} = {value}{nl}" for key, value in fields)
        meant.extend((key, value.strip()) for key, value in fields)
        self.intent.insert(None, "Peer", meant)
        self._append_lines(block)
        return self.all_peers[-1]

    def _append_lines(self, block: list[str]) -> None:
        old_length = len(self.lines)
        if self.lines and not self.lines[-1].endswith(("\n", "\r")):
            self.lines[-1] += self.newline
        self.lines.extend(block)
        self._reindex(old_length)

    def remove_peer(self, peer: Section) -> None:
        """Remove a peer's block: its name comment, header, entries, and one blank line."""
        self.intent.delete(self._index(peer))
        start, end = self.block_span(peer)
        if start > 0 and not self.lines[start - 1].strip() and (
            end >= len(self.lines) or not self.lines[end].strip()
        ):
            start -= 1
        del self.lines[start:end]
        self._reindex(start)

    def disable_peer(self, peer: Section) -> None:
        if peer.disabled:
            raise ValidationError(f"{peer.label} is already disabled")
        self.intent.retitle(self._index(peer), DISABLED_PREFIX + peer.kind)
        start, end = self.block_span(peer)
        for index in range(start, end):
            if self.lines[index].strip():
                self.lines[index] = DISABLED_PREFIX + self.lines[index]
        self._reindex(start)

    def enable_peer(self, peer: Section) -> None:
        if not peer.disabled:
            raise ValidationError(f"{peer.label} is not disabled")
        self.intent.retitle(self._index(peer), peer.kind)
        start, end = self.block_span(peer)
        for index in range(start, end):
            if self.lines[index].startswith(DISABLED_PREFIX):
                self.lines[index] = self.lines[index][len(DISABLED_PREFIX):]
        self._reindex(start)

    def rename_peer(self, peer: Section, new_name: str) -> None:
        """Rename a peer, keeping the style of its name comment (or adding ``# name``)."""
        check_peer_name(new_name)
        if self.find_peer(new_name) is not None:
            raise ValidationError(f"a peer named {new_name!r} already exists")
        self.intent.assign(self._index(peer), NAME_KEY, [new_name])
        old = peer.name
        if peer.name_line is not None and old is not None:
            self.lines[peer.name_line] = _rename_in_line(self.lines[peer.name_line], old, new_name)
            end_marker = _pivpn_end_line(self.lines, peer)
            if end_marker is not None:
                self.lines[end_marker] = _rename_in_line(self.lines[end_marker], old, new_name)
        else:
            prefix = DISABLED_PREFIX if peer.disabled else ""
            self._insert(peer.header, [f"{prefix}# {new_name}{self.newline}"], False)
        self._reindex(min(peer.header, peer.name_line if peer.name_line is not None
                          else peer.header))

    def set_entry(self, section: Section, entry: Entry, value: str) -> None:
        """Rewrite one `entry` of `section` (one of several PostUp lines, say) in place."""
        _check_value(entry.key, value)
        self.intent.assign(self._index(section), entry.key,
                           [value.strip() if e.line == entry.line else e.value
                            for e in section.entries_for(entry.key)])
        self.lines[entry.line] = _replace_value(self.lines[entry.line], value)
        self._reindex(section.header)

    def set_comment(self, peer: Section, key: str, line: int | None, text: str | None) -> None:
        """Write (`line` None: add after ``[Peer]``), change or (`text` None) remove a
        comment zsn reads as part of the peer: its ``# Expires =`` line (`EXPIRES_KEY`)."""
        if key != EXPIRES_KEY:
            raise ValidationError(f"{key!r} is not a comment zsn writes")
        self.intent.assign(self._index(peer), key, [] if text is None else [text])
        prefix = DISABLED_PREFIX if peer.disabled else ""
        written = None if text is None else \
            f"{prefix}# Expires = {_check_expires(text)}{self.newline}"
        if line is not None:
            if written is None:
                del self.lines[line]
            else:
                self.lines[line] = written
        elif written is not None:
            self.lines.insert(peer.header + 1, written)
        self._reindex(min(peer.header, peer.name_line if peer.name_line is not None
                          else peer.header))

    def _index(self, section: Section) -> int:
        """Where `section` is in `sections` (found by its header line: a section read
        before an edit re-indexed the config is the same block)."""
        index = bisect.bisect_left(self.sections, section.header, key=lambda s: s.header)
        if index < len(self.sections) and self.sections[index].header == section.header:
            return index
        raise ValidationError(f"{section.label} is not in {self.source or 'the config'}")

    def block_span(self, peer: Section) -> tuple[int, int]:
        """Line range of a peer's block, name comment (and PiVPN markers) included."""
        start = peer.header
        if peer.name_line is not None and peer.name_line == peer.header - 1:
            start = peer.name_line
        end = peer.last_line + 1
        end_marker = _pivpn_end_line(self.lines, peer)
        if end_marker is not None:
            end = end_marker + 1
        return start, end

    def _entry_line(self, section: Section, key: str, value: str) -> str:
        indent = ""
        if section.entries:
            sample = _strip_disabled(self.lines[section.entries[-1].line])
            indent = sample[: len(sample) - len(sample.lstrip())]
        return f"{indent}{key} = {value}{self.newline}"

    def _insert(self, at: int, new_lines: list[str], disabled: bool) -> None:
        if at > 0 and not self.lines[at - 1].endswith(("\n", "\r")):
            self.lines[at - 1] += self.newline
        prefix = DISABLED_PREFIX if disabled else ""
        self.lines[at:at] = [prefix + line for line in new_lines]

    def _reindex(self, changed_from: int) -> None:
        """Re-read the sections from line `changed_from` on (the lines before are unchanged)."""
        kept = [s for s in self.sections if s.header < changed_from]
        fresh = _walk(self.lines, changed_from, self.source)
        if kept and kept[-1].end >= changed_from:
            kept[-1].end = fresh[0].header if fresh else len(self.lines)
        self.sections = kept + fresh


def expires_line(config: WgConfig, peer: Section) -> tuple[int, str] | None:
    """(0-based line, its time as written) of the peer's ``# Expires =`` comment."""
    for index in range(peer.header + 1, peer.last_line + 1):
        line = config.lines[index]
        body = line[len(DISABLED_PREFIX):] if line.startswith(DISABLED_PREFIX) else line
        if "xpires" not in body[:12] and "XPIRES" not in body[:12]:
            continue
        match = EXPIRES_RE.match(body)
        if match:
            return index, match.group("when")
    return None


def name_problem(name: str) -> str | None:
    """Why `name`, read from a file, cannot be used where a name becomes part of a path.

    Names in comments are data: shown as they are, but one that is a path or holds
    control characters is never joined to a directory.
    """
    if "/" in name:
        return "contains '/'"
    if name in (".", ".."):
        return f"is {name!r}"
    if _CONTROL_CHARACTER_RE.search(name):
        return "contains control characters"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def check_peer_name(name: str) -> str:
    """`name` if it can be a peer name (and a file name), else a `ValidationError`."""
    if not name:
        raise ValidationError("peer name is empty")
    if not PEER_NAME_RE.fullmatch(name):
        raise ValidationError(
            f"peer name {name!r} is not allowed: use letters, digits, '.', '_', '@', '-' "
            "(up to 63 characters, starting with a letter or digit)"
        )
    return name


def _check_value(key: str, value: str) -> None:
    """`value` as wg or wg-quick would take it for `key` (`SCHEMA`), on one line."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key):
        raise ValidationError(f"{key!r} is not a config key")
    entry_text(SCHEMA, key, value.strip(), fold=True)


def _check_expires(text: str) -> str:
    one_line(text, "Expires")
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", text):
        raise ValidationError(f"Expires {text!r} is not a UTC time as zsn writes it")
    return text


def _replace_value(line: str, value: str) -> str:
    disabled = line.startswith(DISABLED_PREFIX)
    body = line[len(DISABLED_PREFIX):] if disabled else line
    match = _ENTRY_PARTS_RE.match(body)
    if match is None:  # parse() accepted it, so this cannot happen for an entry line
        raise ParseError(f"cannot edit line {excerpt(line)}")
    tail = match.group("tail")
    if tail and not tail[0].isspace():
        tail = " " + tail
    new = f"{match.group('head')}{value}{tail}{match.group('eol') or ''}"
    return DISABLED_PREFIX + new if disabled else new


def _rename_in_line(line: str, old: str, new: str) -> str:
    at = line.rfind(old)
    return line[:at] + new + line[at + len(old):] if at >= 0 else line


def _pivpn_end_line(lines: list[str], peer: Section) -> int | None:
    after = peer.last_line + 1
    if peer.name and after < len(lines):
        match = _PIVPN_END_RE.match(_strip_disabled(lines[after]))
        if match and match.group(1) == peer.name:
            return after
    return None


def _strip_disabled(line: str) -> str:
    return line[len(DISABLED_PREFIX):] if line.startswith(DISABLED_PREFIX) else line


def _comment_text(line: str) -> str | None:
    stripped = _strip_disabled(line).strip()
    if not stripped.startswith("#"):
        return None
    return stripped.lstrip("#").strip()


def _name_from_comment(line: str) -> str | None:
    text = _comment_text(line)
    if text is None:
        return None
    if text[:7].lower() == "expires" and EXPIRES_RE.match(_strip_disabled(line)):
        return None
    # A word each pattern needs before the pattern itself: this runs for every peer
    # of a big server, whose comments are mostly a plain "# name".
    if "begin" in text:
        pivpn = _PIVPN_BEGIN_RE.match(_strip_disabled(line).strip())
        if pivpn:
            return pivpn.group(1)
    if "=" in text or ":" in text:
        match = _NAME_KEY_RE.match(text)
        if match:
            return match.group(1).strip() or None
    return text or None


def parse(text: str, source: str | None = None) -> WgConfig:
    """Parse a wg-quick config; raise `ParseError` naming the first line that is not valid.

    One ``[Interface]`` per file: wg-quick would merge two, and which one an edit
    belongs to would be a guess.
    """
    lines = text.splitlines(keepends=True)
    sections = _walk(lines, 0, source)
    interfaces = [s for s in sections if s.kind == "Interface" and not s.disabled]
    if len(interfaces) > 1:
        raise ParseError(f"a second [Interface] (the first is at line "
                         f"{interfaces[0].header + 1}); keep one per file",
                         interfaces[1].header + 1, source)
    return WgConfig(lines, sections, source, text=text)


_LAST_PARSED: dict[str, tuple[str, WgConfig]] = {}


def parse_shared(text: str, source: str) -> WgConfig:
    """`parse`, reusing the previous result for the same source when the text is identical.

    The live read (peer names) and lint read the same files in one export; this
    parses each once. The result is shared: read it, or edit a `WgConfig.copy()`.
    """
    previous = _LAST_PARSED.get(source)
    if previous is not None and previous[0] == text:
        return previous[1]
    config = parse(text, source)
    _LAST_PARSED[source] = (text, config)
    return config


def _walk(lines: list[str], start: int, source: str | None) -> list[Section]:
    """The sections of `lines` from line `start` on (indices stay absolute)."""
    sections: list[Section] = []
    current: Section | None = None
    skip = len(DISABLED_PREFIX)
    checked_keys: set[str] = set()
    # A NamedTuple's own __new__ is a Python function; tuple.__new__ makes the
    # same Entry without that call (tens of thousands of entries in a big config).
    new_entry = tuple.__new__
    # Cheap string tests first: this loop runs once per line of configs with
    # thousands of peers, and most lines are comments, blanks or plain entries
    # whose handful of keys repeat (each is checked once).
    for index, line in enumerate(lines[start:], start):
        disabled = line[:1] == "#"
        if not disabled and current is not None and not current.disabled:
            # The usual line: "Key = value" with a key seen before, in an active section.
            key, equals, value = line.partition("=")
            key = key.strip()
            if equals and key in checked_keys and "#" not in value:
                current.entries.append(new_entry(Entry, (key, value.strip(), index)))
                continue
        if disabled:
            if not line.startswith(DISABLED_PREFIX):
                continue
            body = line[skip:]
        else:
            body = line
        stripped = body.strip()
        if not stripped or stripped[0] == "#":
            continue
        if stripped[0] == "[":
            kind = _section_kind(body, stripped, disabled, index, source)
            if kind is not None:
                if current is not None:
                    current.end = index
                current = Section(kind, index, len(lines), disabled=disabled)
                sections.append(current)
                continue
        if disabled:
            if current is None or not current.disabled:
                continue  # a commented-out line outside a disabled block is just a comment
        elif current is not None and current.disabled:
            current.end = index
            current = None
        entry = _entry(stripped, body, disabled, index, source, checked_keys)
        if entry is None:
            continue  # a comment that only looks like a commented-out entry
        if current is None:
            raise ParseError(f"{entry.key} is outside any [Interface] or [Peer]", index + 1,
                             source)
        current.entries.append(entry)
    for section in sections:
        if section.kind == "Peer":
            _set_peer_name(lines, section)
    return sections


def _section_kind(body: str, stripped: str, disabled: bool, index: int,
                  source: str | None) -> str | None:
    """The section a "[...]" line opens, or None when it opens none. An unknown section
    is refused unless it is commented out (then the line is just a comment)."""
    kind = _PLAIN_HEADERS.get(stripped)
    if kind is not None:
        return kind
    header = _SECTION_RE.match(body)
    if header is None:
        return None
    kind = header.group(1).capitalize()
    if kind in KNOWN_SECTIONS:
        return kind
    if disabled:
        return None
    raise ParseError(f"unknown section [{header.group(1)}]", index + 1, source)


def _entry(stripped: str, body: str, disabled: bool, index: int, source: str | None,
           checked_keys: set[str]) -> Entry | None:
    """The "Key = value" of a line that is not the usual kind (a comment after it, a key
    not seen before, a commented-out entry), or None for a commented-out line that is no
    entry. `checked_keys` are the keys found well-formed so far."""
    if "#" in stripped:
        stripped = stripped[:stripped.index("#")]
    key, equals, value = stripped.partition("=")
    key = key.rstrip()
    if not (equals and (key in checked_keys or _is_key(key))):
        if disabled:
            return None
        raise ParseError(f"expected 'Key = value', got {excerpt(body.strip())}", index + 1,
                         source)
    checked_keys.add(key)
    return Entry(key, value.strip(), index)


def _is_key(key: str) -> bool:
    return key.isascii() and key.isalnum() and key[0].isalpha()


def _set_peer_name(lines: list[str], peer: Section) -> None:
    # The comment directly above [Peer] is the name; a comment directly below it
    # (as in many blog configs) or a "# Name = x" inside the block are alternatives.
    for index in (peer.header - 1, peer.header + 1):
        if 0 <= index < len(lines) and index <= peer.last_line:
            name = _name_from_comment(lines[index])
            if name:
                peer.name, peer.name_line = name, index
                return
    for index in range(peer.header + 1, peer.last_line + 1):
        text = _comment_text(lines[index])
        if text is not None:
            match = _NAME_KEY_RE.match(text)
            if match and match.group(1).strip():
                peer.name, peer.name_line = match.group(1).strip(), index
                return


class _WgQuick:
    """wg-quick's format as zsn reads it (`zsn.meaning.Format`): ``[Interface]`` and
    ``[Peer]`` sections (a disabled one's header marked ``#[disabled] ``), keys in lower
    case as wg compares them, and each peer's name and expiry comments."""

    name = "wg-quick"

    def key(self, key: str) -> str:
        return key.lower()

    def read(self, text: str, source: str) -> Reading:
        return _reading(parse(text, source))

    def read_both(self, before: str, after: str, source: str,
                  parsed: object) -> tuple[Reading, Reading] | None:
        """A big config read only where an edit changed it. Each section's block (the
        comment right above its header, which may be its name, the header and every
        line up to the next block) is found again unchanged in the new text, or read
        in both texts with its changed neighbours. wg-quick reads a section on its own,
        so an unchanged block (with no new comment above its header) means the same:
        it stands in for itself in both readings (`MeantSection.origin`)."""
        if not isinstance(parsed, WgConfig) or len(before) < _READ_WHOLE_BELOW \
                or not parsed.sections:
            return None
        # `parsed` is the editor's parse of `before` (Intent.known), left as it was.
        old, new = parsed.lines, after.splitlines(keepends=True)
        sections = parsed.sections
        bounds = [_block_start(old, s.header) for s in sections] + [len(old)]
        if new[:bounds[0]] != old[:bounds[0]]:
            return None  # the lines above the first section: read whole
        was: Reading = []
        now: Reading = []
        at, position = 0, bounds[0]
        while at < len(sections):
            if _found(old, bounds, at, new, position):
                kept = _stand_in(sections[at])
                was.append(kept)
                now.append(kept)
                position += bounds[at + 1] - bounds[at]
                at += 1
                continue
            again = _found_again(old, bounds, at, new, position)
            if again is None:
                return None
            upto, resumed = again
            was += _reading(parse("".join(old[bounds[at]:bounds[upto]]), source), bounds[at])
            now += _reading(parse("".join(new[position:resumed]), source), position)
            at, position = upto, resumed
        if position < len(new):  # added after the last block
            now += _reading(parse("".join(new[position:]), source), position)
        if sum(s.header == "Interface" for s in now) > 1:
            return None  # parse refuses a second [Interface]: read whole to say so
        return was, now


def _block_start(lines: list[str], header: int) -> int:
    """Where a section's block starts: the comment right above its header, else the
    header (a comment there can be its name)."""
    return header - 1 if header > 0 and _is_comment(lines[header - 1]) else header


def _is_comment(line: str) -> bool:
    """`_comment_text(line) is not None`, cheaper (it runs for every section)."""
    if line.startswith(DISABLED_PREFIX):
        line = line[len(DISABLED_PREFIX):]
    return line.lstrip()[:1] == "#"


def _found(old: list[str], bounds: list[int], at: int, new: list[str], position: int) -> bool:
    """Whether block `at` of the old lines is at `position` of the new, unchanged and
    with no comment added right above it (which would name its section)."""
    size = bounds[at + 1] - bounds[at]
    if new[position:position + size] != old[bounds[at]:bounds[at + 1]]:
        return False
    starts_with_comment = bounds[at] != 0 and _is_comment(old[bounds[at]])
    return starts_with_comment or position == 0 or not _is_comment(new[position - 1])


_RESYNC_BLOCKS = 16
_RESYNC_LINES = 2000


def _found_again(old: list[str], bounds: list[int], at: int, new: list[str],
                 position: int) -> tuple[int, int] | None:
    """(old block, new line) where the texts agree again after a change at block `at`
    and line `position`; None when not near (the texts are read whole then)."""
    limit = min(len(new), position + _RESYNC_LINES)
    for upto in range(at, min(at + _RESYNC_BLOCKS, len(bounds) - 1)):
        first = old[bounds[upto]]
        start = position + (1 if upto == at else 0)
        while start < limit:
            try:
                found = new.index(first, start, limit)
            except ValueError:
                break
            if _found(old, bounds, upto, new, found):
                return upto, found
            start = found + 1
    return None


_READ_WHOLE_BELOW = 64 << 10
"""A config shorter than this is read whole for the read-back (it costs little)."""


def _reading(config: WgConfig, offset: int = 0) -> Reading:
    """A parsed config as `WG_QUICK` reads it (its lines `offset` further down)."""
    found: Reading = []
    new_entry = tuple.__new__  # as in _walk: tens of thousands of entries in a big config
    first = offset + 1
    for section in config.sections:
        entries = [new_entry(MeantEntry, (e[0].lower(), e[1], e[2] + first))
                   for e in section.entries]
        if section.name is not None and section.name_line is not None:
            entries.append(MeantEntry(NAME_KEY, section.name, section.name_line + first))
        if section.kind == "Peer":
            expiry = expires_line(config, section)
            if expiry is not None:
                entries.append(MeantEntry(EXPIRES_KEY, expiry[1], expiry[0] + first))
        found.append(MeantSection(_header(section), entries, section.header + first))
    return found


def _header(section: Section) -> str:
    return DISABLED_PREFIX + section.kind if section.disabled else section.kind


def _stand_in(section: Section) -> MeantSection:
    """A section whose lines did not change, standing in for itself in both readings
    (see read_both)."""
    return MeantSection(_header(section), [], section.header + 1, section.header)


WG_QUICK: Format = _WgQuick()
