"""systemd unit-style files (``.netdev``, ``.network``): read and edit line by line.

``[Section]`` headers and ``Key=Value`` lines; ``#`` and ``;`` start comments; a
section may appear more than once. Edits touch only the lines of the keys they set
or remove; everything else stays byte for byte.
"""

from __future__ import annotations

import re

_SECTION_RE = re.compile(r"\s*\[([^\]]+)\]\s*")
_KEY_RE = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*=\s*(.*?)\s*")


class UnitFile:
    def __init__(self, text: str = ""):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def _sections(self) -> list[tuple[str, int, int]]:
        """(name, header line, end line exclusive) of every section, in order."""
        found: list[tuple[str, int, int]] = []
        for number, line in enumerate(self.lines):
            match = _SECTION_RE.fullmatch(line.rstrip("\n"))
            if match:
                if found:
                    name, start, _ = found[-1]
                    found[-1] = (name, start, number)
                found.append((match.group(1), number, len(self.lines)))
        return found

    def _keys(self, section: str) -> list[tuple[int, str, str]]:
        """(line, key, value) of every assignment in every `section`."""
        found = []
        for name, start, end in self._sections():
            if name != section:
                continue
            for number in range(start + 1, end):
                stripped = self.lines[number].strip()
                if not stripped or stripped[0] in "#;":
                    continue
                match = _KEY_RE.fullmatch(self.lines[number].rstrip("\n"))
                if match:
                    found.append((number, match.group(1), match.group(2)))
        return found

    def values(self, section: str, key: str) -> list[str]:
        """Every value of `key` in `section` (an empty assignment resets the list, as
        systemd does for list settings)."""
        found: list[str] = []
        for _line, name, value in self._keys(section):
            if name == key:
                if value:
                    found.extend(value.split() if key in ("Name", "VLAN") else [value])
                else:
                    found.clear()
        return found

    def get(self, section: str, key: str) -> str | None:
        values = [value for _line, name, value in self._keys(section) if name == key]
        return values[-1] if values else None

    def has_section(self, section: str) -> bool:
        return any(name == section for name, _start, _end in self._sections())

    def set(self, section: str, key: str, value: str) -> None:
        """One ``key=value`` in `section`: the last assignment is changed in place (the
        others removed), or a line is added at the end of the section."""
        lines = [line for line, name, _value in self._keys(section) if name == key]
        if lines:
            last = lines[-1]
            old = self.lines[last]
            indent = old[:len(old) - len(old.lstrip())]
            self.lines[last] = f"{indent}{key}={value}\n"
            for line in reversed(lines[:-1]):
                del self.lines[line]
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
        for number in range(start + 1, end):
            if _KEY_RE.fullmatch(self.lines[number].rstrip("\n")) and \
                    self.lines[number].lstrip()[:1] not in ("#", ";"):
                at = number + 1
        self.lines.insert(at, f"{key}={value}\n")

    def remove(self, section: str, key: str, value: str | None = None) -> bool:
        """Remove `key` (only the assignments of `value`, for lists); True if any went.
        A list line with several values keeps the others."""
        removed = False
        for line, name, current in reversed(self._keys(section)):
            if name != key:
                continue
            if value is None or current == value:
                del self.lines[line]
                removed = True
            elif value in current.split():
                rest = " ".join(part for part in current.split() if part != value)
                self.lines[line] = f"{key}={rest}\n"
                removed = True
        return removed

    def assignments(self) -> int:
        """How many ``key=value`` lines the file has (all sections)."""
        return sum(len(self._keys(name)) for name in {s[0] for s in self._sections()})
