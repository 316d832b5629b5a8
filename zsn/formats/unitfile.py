"""systemd unit-style files (``.netdev``, ``.network`` and their drop-ins): read and
edit line by line, as systemd's config parser reads them (src/shared/conf-parser.c).

``[Section]`` headers and ``Key=Value`` lines, stripped of surrounding whitespace;
``#`` and ``;`` start a comment line; a line ending in a backslash continues on the
next; a section may appear more than once, the last assignment of a key wins, and an
empty assignment resets a list. Edits touch only the lines of the keys they set or
remove; everything else stays byte for byte.

This is the format's one renderer: every ``Key=value`` line zsn adds is made by
`UnitFile.set` or `UnitFile.add`, its value checked by the file's schema (a
`zsn.meaning.ValueType` per section and key: an unknown one is refused), on one line,
without surrounding blanks (systemd strips them) or a final backslash (which would
continue the line into the next). Every edit records what it means in
`UnitFile.intent`, which the plan's `FileEdit` reads back with `UNIT`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from zsn.errors import ValidationError
from zsn.meaning import Entry, Intent, Reading, Section, ValueType, one_line

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


Schema = dict[tuple[str, str], ValueType]
"""What each (section, key) zsn writes in one kind of unit file takes."""


class UnitFile:
    def __init__(self, text: str = "", schema: Schema | None = None):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        self.schema = schema or {}
        self.intent = Intent(UNIT)
        """What the edits since `text` mean (a new file: the whole file)."""
        if not text:
            self.intent.whole([])

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
    def _checked(self, section: str, key: str, value: str) -> str:
        """`value` as this file's renderer writes it for `key` in `section`."""
        one_line(f"{section}{key}", "a section or key")
        type_ = self.schema.get((section, key))
        if type_ is None:
            raise ValidationError(f"[{section}] {key}= is not a setting zsn writes here")
        if value == "":
            return value  # an empty assignment resets the setting
        if value != value.strip() or value.endswith("\\"):
            raise ValidationError(f"{key}={value[:80]!r}: blanks around it or a final "
                                  "backslash would change it as systemd reads it")
        return type_.text(key, value)

    def _section_wanted(self, section: str) -> None:
        if not self.has_section(section):
            self.intent.insert(None, section)

    def set(self, section: str, key: str, value: str) -> None:
        """One ``key=value`` in `section`: the last assignment is changed in place (the
        others of the section removed), or a line is added at the end of the section."""
        self._checked(section, key, value)
        found = self.assignments(section, key)
        self._section_wanted(section)
        self.intent.assign(section, key, [value])
        if found:
            last = found[-1]
            old = self.lines[last.line]
            indent = old[:len(old) - len(old.lstrip())]
            self.lines[last.line:last.end] = [f"{indent}{key}={value}\n"]
            for earlier in reversed(found[:-1]):
                del self.lines[earlier.line:earlier.end]
            return
        self._add(section, key, value)

    def add_section(self, section: str) -> None:
        one_line(section, "a section")
        if "]" in section or not section:
            raise ValidationError(f"[{section}] is not a section name")
        self._section_wanted(section)
        self._add_section(section)

    def _add_section(self, section: str) -> None:
        if self.lines and self.lines[-1].strip():
            self.lines.append("\n")
        self.lines.append(f"[{section}]\n")

    def add(self, section: str, key: str, value: str) -> None:
        """Another ``key=value`` (list settings such as VLAN=), after the section's last
        assignment; the section is created at the end of the file when missing."""
        self._checked(section, key, value)
        self._section_wanted(section)
        self.intent.append(section, key, value)
        self._add(section, key, value)

    def _add(self, section: str, key: str, value: str) -> None:
        sections = [s for s in self._sections() if s[0] == section]
        if not sections:
            self._add_section(section)
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
        left = []
        for assignment in self.assignments(section, key):
            if value is None or assignment.value == value:
                continue
            if value in assignment.value.split():
                rest = " ".join(part for part in assignment.value.split() if part != value)
                left.append(rest)
            else:
                left.append(assignment.value)
        if self.has_section(section):
            self.intent.assign(section, key, left)
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


class _Unit:
    """systemd's unit file syntax as zsn reads it (`zsn.meaning.Format`): the sections
    merged by name in the order they first appear (systemd merges them), each with its
    assignments in order."""

    name = "systemd unit file"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        unit = UnitFile(text)
        sections, assignments, _oddities = unit._walk()
        found: dict[str, Section] = {}
        for name, start, _end in sections:
            found.setdefault(name, Section(name, [], start + 1))
        for assignment in assignments:
            found[assignment.section].entries.append(
                Entry(assignment.key, assignment.value, assignment.line + 1))
        return list(found.values())


UNIT = _Unit()
