"""``/etc/sysctl.d/*.conf`` (sysctl.d(5)): ``key = value`` lines, read by
systemd-sysctl at boot; ``#`` and ``;`` start a comment line, a leading ``-`` on a key
means "ignore a failure", and ``/`` separates the key's parts as well as ``.``.

The format's one renderer is `SysctlFile.set` (the value typed by the file's schema,
on one line), and `SYSCTL` reads a file back for the plan's check (`zsn.meaning`).
"""

from __future__ import annotations

import re

from zsn.errors import ValidationError
from zsn.meaning import Entry, Format, Intent, Reading, Section, ValueType, one_line

_KEY_RE = re.compile(r"[a-z0-9_]+(?:[./][a-z0-9_*-]+)+")


def _key(key: str) -> str:
    return key.lstrip("-").replace("/", ".")


class SysctlFile:
    """One sysctl.d file as text, with the settings zsn adds."""

    def __init__(self, text: str, schema: dict[str, ValueType]):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        self.schema = schema
        self.intent = Intent(SYSCTL)
        if not text:
            self.intent.whole([("", [])])

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def values(self, key: str) -> list[str]:
        return SYSCTL.read(self.text, "sysctl")[0].values(_key(key))

    def comment(self, text: str) -> None:
        self.lines.append(f"# {one_line(text, 'a comment')}\n")

    def set(self, key: str, value: str) -> None:
        """``key = value`` after the file's lines (the last one of a key wins)."""
        type_ = self.schema.get(key)
        if type_ is None or not _KEY_RE.fullmatch(key):
            raise ValidationError(f"{key!r} is not a setting zsn writes here")
        if value != value.strip():
            raise ValidationError(f"{key} = {value!r}: sysctl strips the blanks around it")
        type_.text(key, value)
        self.intent.append("", key, value)
        self.lines.append(f"{key} = {value}\n")


class _Sysctl:
    """sysctl.d as systemd-sysctl reads it (`zsn.meaning.Format`): one section of
    settings in file order, keys with ``.`` separators and without a leading ``-``."""

    name = "sysctl.d"

    def key(self, key: str) -> str:
        return _key(key)

    def read(self, text: str, source: str) -> Reading:
        entries = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            key, equals, value = stripped.partition("=")
            if not equals:
                continue  # systemd-sysctl skips it with a warning
            entries.append(Entry(_key(key.strip()), value.strip(), number))
        return [Section("", entries, 1)]


SYSCTL: Format = _Sysctl()
