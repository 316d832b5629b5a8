"""The part of bash syntax netctl profiles use: variable assignments, read without running.

A profile is sourced by netctl as bash (`netctl.profile(5)`: "variable definitions
following the bash shell syntax ... not expected to execute any code"). zsn reads
them without a shell: ``NAME=WORD`` and ``NAME=(WORD ...)`` with WORDs made of
unquoted text (backslash escapes), ``'single'``, ``"double"`` and ``$'ANSI-C'``
quoting, as bash and wifi-menu's ``printf %q`` write them, plus comments and line
continuations. Anything that would need bash to evaluate it (``$VAR``, ``$(...)``,
backticks, commands) is a `ParseError` naming the line, never run; except in the
hooks (``ExecUpPost``, ``ExecDownPre``: commands netctl runs with ``eval``), whose
value is kept `Opaque`: its text exactly as written, never evaluated, so the
profile's data can still be read and edited around it.

`quote` writes a value back so that bash reads exactly it; `render_assignment` is the one
renderer of a ``NAME=value`` line (its value typed by the file's schema, on one line),
and `BASH` reads a file back for the plan's check (`zsn.meaning`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zsn.errors import ParseError, ValidationError
from zsn.meaning import Entry, Format, Intent, Reading, Section, ValueType, one_line

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_RE = re.compile(r"[A-Za-z0-9_./:@+,%=-]+")
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b",
                "E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_METACHARACTERS = set(";&|<>()")
_HEX = "0123456789abcdefABCDEF"


NETCTL_HOOKS = frozenset({"ExecUpPost", "ExecDownPre"})
"""netctl.profile(5)'s commands, evaluated with eval when the profile goes up or down."""


@dataclass(frozen=True)
class Opaque:
    """A value bash computes as it reads the file (a command substitution, a variable):
    its source text byte for byte, which zsn neither evaluates nor rewrites."""

    text: str
    """The value as written, quotes and all."""
    literal: str
    """The text with its quotes undone and each expansion replaced by NUL: what is
    certain of the value whatever the expansions give."""


Value = str | tuple[str, ...] | Opaque


class Expansion(ParseError):
    """A word bash would have to evaluate ($, backticks, a leading ~)."""


@dataclass(frozen=True)
class Assignment:
    name: str
    value: Value
    line: int
    """1-based line where the assignment starts."""
    end_line: int
    start: int = 0
    """Offset of the assignment's first character in the text (its name)."""
    end: int = 0
    """Offset one past its last character: an edit replaces ``text[start:end]`` and
    keeps the rest of the line (a trailing comment) as it was."""


NETCTL_FOLDERS = {"examples", "hooks", "interfaces"}
"""Folders of /etc/netctl that hold no profiles."""
_NOT_PROFILES = (".action", ".conf", ".service", ".zsn-bak")


def is_netctl_profile(name: str) -> bool:
    """Whether netctl takes a file of /etc/netctl named `name` for a profile
    (list_profiles, src/lib/globals): no hidden file, editor backup (``NAME~``), name
    with a line break, ``.action``, ``.conf`` or ``.service`` file (nor zsn's backup)."""
    return not (name in NETCTL_FOLDERS or name.startswith(".") or name.endswith("~")
                or "\n" in name or name.endswith(_NOT_PROFILES))


def quote(value: str) -> str:
    """`value` as one bash word: bare when that is unambiguous, else single-quoted."""
    if value and _BARE_RE.fullmatch(value) and not value.startswith(("~", "=")):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


Words = str | tuple[str, ...]
"""A value zsn writes: a word, or an array of words (never an `Opaque`)."""
Schema = dict[str, ValueType]
"""What each variable zsn writes in one kind of file takes."""


def render_assignment(schema: Schema, name: str, value: Words) -> str:
    """``name=value`` as bash reads back exactly `value` (an array for a tuple), each
    word checked by `schema` and kept on one line."""
    type_ = schema.get(name)
    if type_ is None or not _NAME_RE.fullmatch(name):
        raise ValidationError(f"{name!r} is not a variable zsn writes here")
    words = value if isinstance(value, tuple) else (value,)
    for word in words:
        type_.text(name, one_line(word, name))
    if isinstance(value, tuple):
        return f"{name}=(" + " ".join(quote(word) for word in value) + ")"
    return f"{name}={quote(value)}"


class AssignmentsFile:
    """A file of assignments written from scratch (a netctl profile), line by line
    through `render_assignment`; its `intent` is the whole file."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.lines: list[str] = []
        self.intent = Intent(BASH)
        self.intent.whole([("", [])])

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def add(self, name: str, value: Words) -> None:
        self.lines.append(render_assignment(self.schema, name, value) + "\n")
        self.intent.append("", name, canonical(value))


def canonical(value: Value) -> str:
    """A value as one string, arrays told apart from words (for comparing meanings);
    an `Opaque` one is its text as written."""
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, tuple):
        return "(" + " ".join(quote(word) for word in value) + ")"
    return value


class _Assignments:
    """A netctl profile's assignments as zsn reads them (`zsn.meaning.Format`): one
    section, every assignment in order (the last of a name is the one that counts),
    the hooks' values bash computes kept as written."""

    name = "bash assignments"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        return [Section("", [Entry(a.name, canonical(a.value), a.line)
                             for a in parse_assignments(text, source, NETCTL_HOOKS)], 1)]


BASH: Format = _Assignments()


class _Reader:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.source = source

    def error(self, message: str) -> ParseError:
        return ParseError(message, self.line, self.source)

    def expansion(self, message: str) -> Expansion:
        return Expansion(message, self.line, self.source)

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        char = self.text[self.pos]
        self.pos += 1
        if char == "\n":
            self.line += 1
        return char

    def at_end(self) -> bool:
        return self.pos >= len(self.text)


def _skip_blanks(reader: _Reader, newlines: bool) -> None:
    while not reader.at_end():
        char = reader.peek()
        if char in " \t" or (newlines and char == "\n"):
            reader.take()
        elif char == "\\" and reader.peek(1) == "\n":
            reader.take()
            reader.take()
        elif char == "#":
            while not reader.at_end() and reader.peek() != "\n":
                reader.take()
        else:
            return


def _word(reader: _Reader, in_array: bool) -> str:
    """One word; the reader stops at an unquoted blank, newline, ``;`` or ``)``."""
    out: list[str] = []
    start = reader.pos
    while not reader.at_end():
        char = reader.peek()
        if char in " \t\n" or (in_array and char == ")") or char == ";":
            break
        if char == "\\":
            reader.take()
            if reader.at_end():
                break
            escaped = reader.take()
            if escaped != "\n":  # a continuation joins the lines
                out.append(escaped)
        elif char == "'":
            reader.take()
            end = reader.text.find("'", reader.pos)
            if end < 0:
                raise reader.error("unterminated single quote")
            while reader.pos < end:
                out.append(reader.take())
            reader.take()
        elif char == "$" and reader.peek(1) == "'":
            reader.take()
            reader.take()
            out.append(_ansi_c(reader))
        elif char == '"':
            reader.take()
            out.append(_double_quoted(reader))
        elif char in "$`":
            raise reader.expansion("uses an expansion ($ or `) that zsn does not evaluate")
        elif char == "~" and reader.pos == start:
            raise reader.expansion("starts a word with ~, which bash would expand")
        elif char in _METACHARACTERS or (in_array and char in "*?["):
            raise reader.error(f"unquoted {char!r}: not a plain assignment")
        else:
            out.append(reader.take())
    return "".join(out)


def _double_quoted(reader: _Reader) -> str:
    out: list[str] = []
    while True:
        if reader.at_end():
            raise reader.error("unterminated double quote")
        char = reader.take()
        if char == '"':
            return "".join(out)
        if char == "\\" and reader.peek() in ('$', '`', '"', "\\", "\n"):
            escaped = reader.take()
            if escaped != "\n":
                out.append(escaped)
        elif char in "$`":
            raise reader.expansion("uses an expansion ($ or `) inside double quotes")
        else:
            out.append(char)


def _ansi_c(reader: _Reader) -> str:
    """``$'...'``: escapes such as ``\\xHH`` and ``\\NNN`` are bytes (``printf %q`` writes
    a non-printable UTF-8 character as its bytes), so the word is decoded at the end."""
    out = bytearray()
    while True:
        if reader.at_end():
            raise reader.error("unterminated $'...' quote")
        char = reader.take()
        if char == "'":
            return out.decode("utf-8", errors="surrogateescape")
        if char != "\\":
            out += char.encode("utf-8", errors="surrogateescape")
            continue
        if reader.at_end():
            raise reader.error("unterminated $'...' quote")
        code = reader.take()
        if code in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[code].encode()
        elif code in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[code]
            digits = ""
            while len(digits) < size and reader.peek() and reader.peek() in _HEX:
                digits += reader.take()
            if not digits:
                out += ("\\" + code).encode()
            elif code == "x":
                out.append(int(digits, 16))
            else:
                out += chr(min(int(digits, 16), 0x10FFFF)).encode("utf-8", errors="replace")
        elif code in "01234567":
            digits = code
            while len(digits) < 3 and reader.peek() and reader.peek() in "01234567":
                digits += reader.take()
            out.append(int(digits, 8) & 0xFF)
        else:
            out += ("\\" + code).encode("utf-8", errors="surrogateescape")


class _Opaque:
    """Finds where a value bash would evaluate ends, without evaluating it: quotes,
    ``$(...)``, ``${...}``, ``$((...))`` and backticks nest as bash nests them."""

    def __init__(self, reader: _Reader):
        self.reader = reader
        self.literal: list[str] = []

    def take(self) -> str:
        if self.reader.at_end():
            raise self.reader.error("an expansion is not closed")
        return self.reader.take()

    def value(self) -> None:
        if self.reader.peek() == "(":
            self.take()
            while True:
                _skip_blanks(self.reader, newlines=True)
                if self.reader.peek() == ")":
                    self.take()
                    return
                if self.reader.at_end():
                    raise self.reader.error("an array is not closed")
                if self.reader.peek() == ";":
                    raise self.reader.error("unquoted ';' inside an array")
                self.word(in_array=True)
                self.literal.append(" ")
        self.word(in_array=False)

    def word(self, in_array: bool) -> None:
        reader = self.reader
        while not reader.at_end():
            char = reader.peek()
            if char in " \t\n;" or (in_array and char == ")"):
                return
            if char in "&|<>()":
                raise reader.error(f"unquoted {char!r}: not a plain assignment")
            self.part(double=False)

    def part(self, double: bool) -> None:
        """One quoted string, escape, expansion or character."""
        char = self.take()
        if char == "\\":
            self.literal.append(self.take())
        elif char == "'" and not double:
            while (inner := self.take()) != "'":
                self.literal.append(inner)
        elif char == '"' and not double:
            while self.reader.peek() != '"':
                self.part(double=True)
            self.take()
        elif char == "$" and self.reader.peek() in "({":
            self.nested(self.take())
            self.literal.append("\0")
        elif char == "$" and (self.reader.peek().isalnum() or self.reader.peek() in "_@*#?$!-"):
            name = self.take()
            while name.isalnum() or name == "_":
                if not (self.reader.peek().isalnum() or self.reader.peek() == "_"):
                    break
                name = self.take()
            self.literal.append("\0")
        elif char == "`":
            self.until("`", nest=False)
            self.literal.append("\0")
        else:
            self.literal.append(char)

    def until(self, end: str, nest: bool) -> None:
        """Past the next unescaped `end`; with `nest`, a ``$(``/``${`` on the way nests."""
        while (inner := self.take()) != end:
            if inner == "\\":
                self.take()
            elif nest and inner == "$" and self.reader.peek() in "({":
                self.nested(self.take())

    def nested(self, opening: str) -> None:
        """The rest of ``$(...)`` or ``${...}``: to the bracket that closes it."""
        closing = ")" if opening == "(" else "}"
        depth = 1
        while depth:
            char = self.take()
            if char == "\\":
                self.take()
            elif char == "'":
                while self.take() != "'":
                    pass
            elif char in '"`':
                self.until(char, nest=char == '"')
            elif char == "$" and self.reader.peek() in "({":
                self.nested(self.take())
            elif char == opening:
                depth += 1
            elif char == closing:
                depth -= 1


def parse_assignments(text: str, source: str = "profile",
                      opaque: frozenset[str] = frozenset()) -> list[Assignment]:
    """Every assignment in `text`, in order; `ParseError` for anything else. A name in
    `opaque` whose value needs bash is kept as `Opaque` instead of refused."""
    reader = _Reader(text, source)
    found: list[Assignment] = []
    while True:
        _skip_blanks(reader, newlines=True)
        while reader.peek() == ";":
            reader.take()
            _skip_blanks(reader, newlines=True)
        if reader.at_end():
            return found
        line = reader.line
        match = _NAME_RE.match(reader.text, reader.pos)
        if match is None or reader.text[match.end():match.end() + 1] != "=":
            excerpt = reader.text[reader.pos:].split("\n", 1)[0][:30]
            raise reader.error(f"not a variable assignment: {excerpt!r}")
        name = match.group(0)
        start = reader.pos
        reader.pos = match.end() + 1
        value: Value
        if name in opaque:
            value_at, value_line = reader.pos, reader.line
            try:
                value = _plain_value(reader, name)
            except Expansion:
                reader.pos, reader.line = value_at, value_line
                scanner = _Opaque(reader)
                scanner.value()
                value = Opaque(text[value_at:reader.pos], "".join(scanner.literal))
        else:
            value = _plain_value(reader, name)
        found.append(Assignment(name, value, line, reader.line, start, reader.pos))
        _skip_blanks(reader, newlines=False)
        if not reader.at_end() and reader.peek() not in "\n;":
            raise reader.error(f"more than one word after {name}= (quote the value)")


def _plain_value(reader: _Reader, name: str) -> str | tuple[str, ...]:
    """A value of plain words: one, or an array ``(WORD ...)``."""
    if reader.peek() != "(":
        return _word(reader, in_array=False)
    reader.take()
    words: list[str] = []
    while True:
        _skip_blanks(reader, newlines=True)
        if reader.at_end():
            raise reader.error(f"{name}=( is not closed")
        if reader.peek() == ")":
            reader.take()
            return tuple(words)
        if reader.peek() == ";":  # bash: syntax error near unexpected token
            raise reader.error(f"unquoted ';' inside {name}=( ... )")
        words.append(_word(reader, in_array=True))
