"""systemd unit-style files (``.netdev``, ``.network`` and their drop-ins): read and
edit line by line, as systemd's config parser reads them (src/shared/conf-parser.c).

``[Section]`` headers and ``Key=Value`` lines, stripped of surrounding whitespace;
``#`` and ``;`` start a comment line; a line ending in a backslash continues on the
next; a section may appear more than once, the last assignment of a key wins, and an
empty assignment resets a list. Edits touch only the lines of the keys they set or
remove; everything else stays byte for byte.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_SECTION_RE = re.compile(r"\[([^\]]+)\]")
_KEY_RE = re.compile(r"([^=\s][^=]*?)\s*=\s*(.*)", re.DOTALL)
LIST_KEYS = frozenset({("Match", "Name"), ("Network", "VLAN")})
"""Keys whose value is a space-separated list that later assignments extend."""


class Assignment(NamedTuple):
    line: int
    """0-based index of its first line."""
    end: int
    """One past its last line (more than `line` + 1 for continued lines)."""
    section: str
    key: str
    value: str


class Oddity(NamedTuple):
    """A line systemd would ignore with a warning (zsn reports it the same way)."""

    line: int
    """1-based."""
    message: str


class UnitFile:
    def __init__(self, text: str = ""):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"

    @property
    def text(self) -> str:
        return "".join(self.lines)

    # -- reading -------------------------------------------------------------------
    def _logical(self) -> list[tuple[int, int, str]]:
        """(first line, end line, text) of each logical line: continuations joined,
        comment lines inside a continuation skipped, as systemd does."""
        found: list[tuple[int, int, str]] = []
        number = 0
        while number < len(self.lines):
            start = number
            text = self.lines[number].strip()
            number += 1
            if text[:1] in ("#", ";") or not text.endswith("\\"):
                found.append((start, number, text))
                continue
            parts = [text[:-1]]
            while number < len(self.lines):
                more = self.lines[number].strip()
                number += 1
                if more[:1] in ("#", ";"):
                    continue
                if more.endswith("\\"):
                    parts.append(more[:-1])
                    continue
                parts.append(more)
                break
            found.append((start, number, " ".join(part.strip() for part in parts).strip()))
        return found

    def _walk(self) -> tuple[list[tuple[str, int, int]], list[Assignment], list[Oddity]]:
        sections: list[tuple[str, int, int]] = []
        assignments: list[Assignment] = []
        oddities: list[Oddity] = []
        current: str | None = None
        for start, end, text in self._logical():
            if not text or text[0] in "#;":
                continue
            if text.startswith("["):
                match = _SECTION_RE.fullmatch(text)
                if match is None:
                    oddities.append(Oddity(start + 1, f"invalid section header {text!r}"))
                    current = None
                    continue
                if sections:
                    name, first, _ = sections[-1]
                    sections[-1] = (name, first, start)
                current = match.group(1)
                sections.append((current, start, len(self.lines)))
                continue
            match = _KEY_RE.fullmatch(text)
            if match is None:
                oddities.append(Oddity(start + 1, f"missing '=' in {text!r}"))
                continue
            if current is None:
                oddities.append(Oddity(start + 1, f"assignment outside any section: {text!r}"))
                continue
            assignments.append(Assignment(start, end, current, match.group(1),
                                          match.group(2).strip()))
        return sections, assignments, oddities

    def _sections(self) -> list[tuple[str, int, int]]:
        """(name, header line, end line exclusive) of every section, in order."""
        return self._walk()[0]

    def assignments(self, section: str | None = None, key: str | None = None
                    ) -> list[Assignment]:
        return [a for a in self._walk()[1]
                if (section is None or a.section == section) and (key is None or a.key == key)]

    def oddities(self) -> list[Oddity]:
        return self._walk()[2]

    def values(self, section: str, key: str) -> list[str]:
        """Every value of a list `key` in `section` (an empty assignment resets it)."""
        return list_values(self.assignments(section, key), [])

    def get(self, section: str, key: str) -> str | None:
        found = self.assignments(section, key)
        return found[-1].value if found else None

    def has_section(self, section: str) -> bool:
        return any(name == section for name, _start, _end in self._sections())

    def sections(self) -> list[str]:
        return [name for name, _start, _end in self._sections()]

    def count(self) -> int:
        """How many assignments the file has (all sections)."""
        return len(self._walk()[1])

    # -- editing -------------------------------------------------------------------
    def set(self, section: str, key: str, value: str) -> None:
        """One ``key=value`` in `section`: the last assignment is changed in place (the
        others of the section removed), or a line is added at the end of the section."""
        found = self.assignments(section, key)
        if found:
            last = found[-1]
            old = self.lines[last.line]
            indent = old[:len(old) - len(old.lstrip())]
            self.lines[last.line:last.end] = [f"{indent}{key}={value}\n"]
            for earlier in reversed(found[:-1]):
                del self.lines[earlier.line:earlier.end]
            return
        self.add(section, key, value)

    def add_section(self, section: str) -> None:
        if self.lines and self.lines[-1].strip():
            self.lines.append("\n")
        self.lines.append(f"[{section}]\n")

    def add(self, section: str, key: str, value: str) -> None:
        """Another ``key=value`` (list settings such as VLAN=), after the section's last
        assignment; the section is created at the end of the file when missing."""
        sections = [s for s in self._sections() if s[0] == section]
        if not sections:
            self.add_section(section)
            self.lines.append(f"{key}={value}\n")
            return
        _name, start, end = sections[-1]
        at = start + 1
        for assignment in self.assignments(section):
            if start < assignment.line < end:
                at = assignment.end
        self.lines.insert(at, f"{key}={value}\n")

    def remove(self, section: str, key: str, value: str | None = None) -> bool:
        """Remove `key` (only the assignments of `value`, for lists); True if any went.
        A list line with several values keeps the others."""
        removed = False
        for assignment in reversed(self.assignments(section, key)):
            if value is None or assignment.value == value:
                del self.lines[assignment.line:assignment.end]
                removed = True
            elif value in assignment.value.split():
                rest = " ".join(part for part in assignment.value.split() if part != value)
                old = self.lines[assignment.line]
                indent = old[:len(old) - len(old.lstrip())]
                self.lines[assignment.line:assignment.end] = [f"{indent}{key}={rest}\n"]
                removed = True
        return removed


def list_values(assignments: list[Assignment], start: list[str]) -> list[str]:
    """A list setting after `assignments` (in order): each adds its words, an empty
    one resets what came before."""
    found = list(start)
    for assignment in assignments:
        if assignment.value:
            found.extend(assignment.value.split())
        else:
            found.clear()
    return found
