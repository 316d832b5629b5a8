"""What a file zsn writes for another program means, and the check that it means
nothing more than the plan meant.

wg-quick, networkd, ifupdown, netplan, netctl, OpenVPN, wpa_supplicant, iwd, sysctl
and systemd read the files zsn writes; a value with a line break in it is a second
line to them (a ``PostUp =`` that wg-quick runs as root). So every file zsn writes for
another program is written the same way:

1. **Typed values.** Each key a format takes has a `ValueType` (a key, an address, a
   network, a port, a name, a duration ...) that checks a value as the reading program
   does and gives the text to write.
2. **One renderer per format.** Lines are made by that format's renderer only. It
   passes every value through `one_line` (no control character, no line break of any
   kind, not empty where empty means something else) and the key's `ValueType`.
3. **A read-back.** Whoever edits records an `Intent`: what each section and key it
   touched holds afterwards. A `zsn.plan.FileEdit` carries it; when the edit is made,
   `Intent.verify` reads the file before and after with the format's own reader
   (`Format.read`), applies the intent to the first reading and compares it with the
   second. A section, key or value the intent did not state (or one it stated that is
   missing) refuses the plan, naming the line that differs. Nothing is written then.

How a format plugs in:

- Write its reader as a `Format`: ``name`` (``"wg-quick"``) and
  ``read(text, source) -> Reading``: the sections the program reads, in file order,
  each a `Section` (its ``header`` as the format's identity for it, ``""`` for lines
  before any section or a format without sections) with its `Entry`s (``key`` as the
  program compares keys, e.g. lower-cased where it ignores case; ``value`` as it sees
  it; ``line`` 1-based). Comments count only where zsn gives them a meaning (a peer's
  name comment is an entry). Raise `zsn.errors.ParseError` for what the program refuses.
- Give it one renderer that makes every line through `one_line` and a schema of
  `ValueType`s (`entry_text` does both for ``key<sep>value`` lines).
- Have its editors record into an `Intent` (``Intent(FORMAT)``): `assign` (the key's
  values afterwards), `append`, `discard`, `insert` (a new section), `delete`,
  `retitle`, or `whole` for a file written from scratch. Sections are named by index
  in the reading (as the editor's own parse of the same text numbers them) or by
  header (the last section with it).
- Build the plan's `FileEdit` with ``intent=`` the editor's intent (a required
  argument). A file no other program reads (zsn's own JSON) says so with `OwnFile`;
  a removal needs none (``None``). `tests/unit/test_meaning.py` lists where `OwnFile`
  and `CheckedBefore` may stand instead of an intent.

A new format, a new editor or a new surface that writes through `FileEdit` gets the
read-back by construction: an edit whose text says more than its intent is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from zsn.errors import ParseError, ValidationError

_BREAKS_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (C0, DEL, C1) and Unicode's line and paragraph separators: every
reader splits or stops somewhere on one of them (Python's splitlines on \\x85 and
U+2028, fgets on \\n, systemd on \\r), so none may be part of a value."""


def one_line(value: str, what: str) -> str:
    """`value` if it can stand on one line of any config, else `ValidationError`."""
    found = _BREAKS_RE.search(value)
    if found is not None:
        raise ValidationError(f"{what} holds a control character or line break "
                              f"(U+{ord(found.group()):04X}): refused")
    return value


# -- typed values -------------------------------------------------------------------


@dataclass(frozen=True)
class ValueType:
    """What a key takes, checked as the reading program checks it."""

    name: str
    """What it is in a message (``a WireGuard key``)."""
    check: Callable[[str], str | None]
    """The value's problem as the program would refuse it, None when it takes it."""
    refused: str = ""
    """Characters beyond `one_line`'s that the format refuses in this value (its comment
    or separator characters, e.g. ``#`` for wg-quick)."""

    def text(self, key: str, value: str) -> str:
        """`value` as it is written for `key`, or `ValidationError` saying why not."""
        one_line(value, key)
        bad = next((ch for ch in value if ch in self.refused), None)
        if bad is not None:
            raise ValidationError(f"{key} = {value[:80]!r}: {bad!r} cannot be part of "
                                  f"{self.name} here")
        problem = self.check(value)
        if problem is not None:
            raise ValidationError(f"{key} = {value[:80]!r} is not {self.name}: {problem}")
        return value


def refusing(type_: ValueType, characters: str) -> ValueType:
    """`type_` in a format that also refuses `characters` in values."""
    return ValueType(type_.name, type_.check, type_.refused + characters)


def entry_text(schema: dict[str, ValueType], key: str, value: str, *, fold: bool = False
               ) -> str:
    """`value` checked for `key` by `schema` (keys compared case-insensitively when
    `fold`): an unknown key is refused, as the reading programs refuse it."""
    type_ = schema.get(key.lower() if fold else key)
    if type_ is None:
        raise ValidationError(f"{key!r} is not a key zsn writes in this file")
    return type_.text(key, value)


# -- a file's meaning ----------------------------------------------------------------


class Entry(NamedTuple):
    key: str
    value: str
    line: int = 0
    """1-based line of the text it was read from; 0 for one an intent states."""


@dataclass
class Section:
    header: str
    entries: list[Entry] = field(default_factory=list)
    line: int = 0
    origin: object = None
    """Set on a section a format did not read again because its lines did not change
    (`Format.read_both`): equal to the same section's in the other reading, its entries
    left out. An intent that changes it makes it an ordinary (empty) section."""

    def values(self, key: str) -> list[str]:
        return [entry.value for entry in self.entries if entry.key == key]


Reading = list[Section]
"""A file as its reading program reads it: sections in file order."""


class Format(Protocol):
    name: str

    def read(self, text: str, source: str) -> Reading:
        """`text` as the program reads it; `ParseError` for what it refuses."""
        ...

    def key(self, key: str) -> str:
        """A key as the program compares keys (e.g. lower-cased)."""
        ...


class ReadsBoth(Format, Protocol):
    """A format that reads a big file's before and after around the lines that changed
    only (the rest as `Section.origin` stand-ins): `Intent.verify` accepts an edit whose
    readings agree, and decides on whole readings when they do not."""

    def read_both(self, before: str, after: str, source: str,
                  parsed: object) -> tuple[Reading, Reading] | None:
        """(before, after) read so, or None to read both whole. `parsed` is the editor's
        own parse of `before` (`Intent.known`)."""
        ...


Where = int | str
"""A section by its index in the reading, or by header (the last one with it)."""


class Op(NamedTuple):
    """One change an intent states (data: a try record can keep it)."""

    kind: str
    """assign, append, discard, insert, delete or retitle."""
    where: Where | None
    key: str = ""
    values: tuple[str, ...] = ()
    header: str = ""
    entries: tuple[tuple[str, str], ...] = ()


@dataclass
class Intent:
    """What an edit means: the changes, section by section, key by key, that the file
    read afterwards must show, and nothing else."""

    format: Format
    ops: list[Op] = field(default_factory=list)
    whole_reading: Reading | None = None
    known: tuple[str, object] | None = field(default=None, repr=False)
    """A text and the editor's own parse of it (the file before the edits), which a
    `ReadsBoth` format may use instead of parsing it again when `before` is that text."""

    def copy(self) -> Intent:
        return Intent(self.format, list(self.ops), self.whole_reading, self.known)

    def whole(self, sections: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        """The file is written from scratch: it means `sections`, then the ops after."""
        self.ops.clear()
        self.whole_reading = [Section(header, [Entry(self.format.key(k), v) for k, v in items])
                              for header, items in sections]

    def replacing(self, text: str, source: str) -> Intent:
        """This intent for a file whose text is replaced by one made from `text` (a copy
        of a source, edited): the ops apply to what `text` means, not to what the file
        held before."""
        return Intent(self.format, list(self.ops), self.format.read(text, source))

    def assign(self, where: Where, key: str, values: Iterable[str]) -> None:
        """`key` in the section holds `values` afterwards (none: it is gone)."""
        self.ops.append(Op("assign", where, self.format.key(key), tuple(values)))

    def append(self, where: Where, key: str, value: str) -> None:
        self.ops.append(Op("append", where, self.format.key(key), (value,)))

    def discard(self, where: Where, key: str, value: str) -> None:
        """Every `key` entry holding `value` goes."""
        self.ops.append(Op("discard", where, self.format.key(key), (value,)))

    def insert(self, at: int | None, header: str,
               entries: Sequence[tuple[str, str]] = ()) -> None:
        """A new section at index `at` (None: after the last)."""
        self.ops.append(Op("insert", at, header=header,
                           entries=tuple((self.format.key(k), v) for k, v in entries)))

    def delete(self, where: Where) -> None:
        self.ops.append(Op("delete", where))

    def retitle(self, where: Where, header: str) -> None:
        self.ops.append(Op("retitle", where, header=header))

    def expected(self, before: Reading) -> Reading:
        """`before` with the intent applied."""
        base = self.whole_reading if self.whole_reading is not None else before
        sections = list(base)  # a section is copied when an op changes it (`_apply`)
        for op in self.ops:
            _apply(sections, op)
        return sections

    def _agrees_around_the_change(self, before: str, after: str, source: str) -> bool:
        """Whether the format's reading of just the changed part says the edit means
        what the intent says (False: read both whole, which decides)."""
        read_both = getattr(self.format, "read_both", None)
        if read_both is None or not before or self.whole_reading is not None \
                or self.known is None or self.known[0] != before:
            return False
        try:
            both = read_both(before, after, source, self.known[1])
        except ParseError:
            return False
        return both is not None and difference_of(self.expected(both[0]), both[1]) is None

    def verify(self, before: str, after: str, source: str,
               quote: Callable[[str], str] = str) -> None:
        """Refuse (`ValidationError`, one line naming the line of `after` that differs,
        shown through `quote`, e.g. with its secrets masked) unless `after` read by the
        format is `before` read by it with the intent applied."""
        if self._agrees_around_the_change(before, after, source):
            return
        try:
            actual = self.format.read(after, source)
        except ParseError as exc:
            raise ValidationError(f"{source}: what zsn would write does not read back as "
                                  f"{self.format.name}: {exc}; refused") from None
        base = [] if not before or self.whole_reading is not None else \
            self.format.read(before, source)
        expected = self.expected(base)
        found = difference_of(expected, actual)
        if found is None:
            return
        line, words = found
        lines = after.splitlines()
        shown = f" ({quote(lines[line - 1]).strip()[:120]!r})" if 0 < line <= len(lines) else ""
        raise ValidationError(f"{source}: what zsn would write does not mean what the plan "
                              f"meant ({self.format.name}): line {line}{shown} {words}; "
                              "refused")


def leaves(data: object) -> list[tuple[str, str]]:
    """Structured data (a YAML or JSON document) as (key path, value) leaves, both as
    JSON: what a format of such documents compares."""
    found: list[tuple[str, str]] = []
    pending: list[tuple[object, list[str]]] = [(data, [])]
    while pending:
        node, trail = pending.pop()
        if isinstance(node, dict) and node:
            pending.extend((item, [*trail, str(key)]) for key, item in reversed(node.items()))
        elif isinstance(node, list) and node and any(isinstance(i, dict | list) for i in node):
            pending.extend((item, [*trail, str(index)])
                           for index, item in reversed(list(enumerate(node))))
        else:
            found.append((json.dumps(trail), json.dumps(node, sort_keys=True, default=str)))
    return found


@dataclass(frozen=True)
class OwnFile:
    """A file only zsn reads (its own settings) or ships as it is (a script): no other
    program's values go into it."""

    why: str


@dataclass(frozen=True)
class CheckedBefore:
    """A text read back when its plan was made, written later by another process (a
    try's boot config, written on confirm from the try's record)."""

    when: str


def _find(sections: Reading, where: Where) -> int:
    if isinstance(where, int):
        if not 0 <= where < len(sections):
            raise ValidationError(f"section {where} is not in the file")
        return where
    for index in range(len(sections) - 1, -1, -1):
        if sections[index].header == where:
            return index
    raise ValidationError(f"section {where!r} is not in the file")


def _apply(sections: Reading, op: Op) -> None:
    if op.kind == "insert":
        new = Section(op.header, [Entry(k, v) for k, v in op.entries])
        sections.insert(len(sections) if op.where is None else int(op.where), new)
        return
    assert op.where is not None
    index = _find(sections, op.where)
    old = sections[index]
    # A copy to change, no longer the same as its unread counterpart (`origin`).
    section = sections[index] = Section(old.header, list(old.entries), old.line)
    if op.kind == "delete":
        del sections[index]
    elif op.kind == "retitle":
        section.header = op.header
    elif op.kind == "assign":
        kept = [entry for entry in section.entries if entry.key != op.key]
        section.entries = kept + [Entry(op.key, value) for value in op.values]
    elif op.kind == "append":
        section.entries.append(Entry(op.key, op.values[0]))
    elif op.kind == "discard":
        section.entries = [entry for entry in section.entries
                           if not (entry.key == op.key and entry.value == op.values[0])]
    else:
        raise ValueError(f"unknown intent {op.kind!r}")


def _title(section: Section) -> str:
    return repr(section.header) if section.header else "(top)"


def difference_of(expected: Reading, actual: Reading) -> tuple[int, str] | None:
    """(line of `actual`, what is wrong there) where it first differs from `expected`;
    None when both mean the same (keys in any order, each key's values in order)."""
    for index in range(max(len(expected), len(actual))):
        if index >= len(expected):
            return actual[index].line, f"opens section {_title(actual[index])}, not in the plan"
        if index >= len(actual):
            last = actual[-1].line if actual else 0
            return last, f"ends the file without section {_title(expected[index])} of the plan"
        want, have = expected[index], actual[index]
        if want.origin is not None and want.origin == have.origin:
            continue
        if want.header != have.header:
            return have.line, f"opens section {_title(have)} where the plan has {_title(want)}"
        if len(want.entries) == len(have.entries) and all(
                a[0] == b[0] and a[1] == b[1]
                for a, b in zip(want.entries, have.entries, strict=True)):
            continue  # the usual case: the same entries in the same order
        for key in dict.fromkeys([e.key for e in have.entries] + [e.key for e in want.entries]):
            wanted = want.values(key)
            found = [entry for entry in have.entries if entry.key == key]
            for position, entry in enumerate(found):
                if position >= len(wanted) or wanted[position] != entry.value:
                    return entry.line, f"sets {key} as the plan does not"
            if len(found) < len(wanted):
                return have.line, f"lacks {key} of section {_title(have)} that the plan sets"
    return None
