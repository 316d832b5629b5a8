"""OpenVPN configuration files, kept byte for byte.

A config is its list of raw lines (each with its own line ending). Parsing builds
an index of directives over those lines, tokenised the way OpenVPN's own
`parse_line` does it (whitespace-separated, "double" and 'single' quotes, backslash
escapes outside single quotes, `#`/`;` starting a comment at the start of a token)
and folds `<tag>...</tag>` inline blocks into one directive. Rendering is
``"".join(lines)``; an edit changes only the lines it touches.

`OvpnConfig.set_directive` and `OvpnConfig.add_directive` are the format's one
renderer: each argument typed by `SCHEMA` and on one line (OpenVPN reads a line with
fgets: a line break inside quotes would still end it), quoted by `quote_arg`. Every
edit records what it means in `OvpnConfig.intent`, read back with `OPENVPN` before the
plan writes anything (`zsn.meaning`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from zsn import values
from zsn.errors import ParseError, ValidationError
from zsn.format import excerpt
from zsn.meaning import Entry, Format, Intent, Reading, Section, ValueType, one_line

_INLINE_OPEN_RE = re.compile(r"^\s*<([A-Za-z][A-Za-z0-9-]*)>\s*$")
_INLINE_CLOSE_RE = re.compile(r"^\s*</([A-Za-z][A-Za-z0-9-]*)>\s*$")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
INLINE = "[[inline]]"
"""The argument OpenVPN itself uses for a file given inline."""
SCRIPT_OPTIONS = ("up", "down", "route-up", "route-pre-down", "ipchange", "client-connect",
                  "client-disconnect", "learn-address", "tls-verify", "auth-user-pass-verify")
"""Options naming a command OpenVPN runs (with script-security 2 or more)."""
COMMAND_OPTIONS = (*SCRIPT_OPTIONS, "script-security", "plugin", "iproute")
"""What an imported profile loses unless its commands are kept: the scripts, the level
that lets them run, a plugin (a library loaded into OpenVPN) and a program run instead
of ip(8)."""
_PATH = values.pattern("an absolute path", r"/[^\s\"';#]*")
SCHEMA: dict[str, tuple[ValueType, ...]] = {
    "script-security": (values.integer(0, 3),),
    "up": (values.TEXT,), "down": (values.TEXT,), "down-pre": (),
    "management": (_PATH, values.one_of("unix")),
}
"""The directives zsn writes and what each argument takes."""


@dataclass(frozen=True)
class Directive:
    name: str
    """Lower-case option name, without a leading ``--``."""
    args: tuple[str, ...]
    line: int
    """0-based index of the first line in `OvpnConfig.lines`."""
    end: int
    """Index one past the directive's last line (more than one for inline blocks)."""
    inline: str | None = None
    """The body of an inline ``<tag>`` block, or None for an ordinary line."""
    hidden_by: str | None = None
    """``"setenv opt"`` when the line is ``setenv opt NAME ...``: OpenVPN obeys it as
    ``NAME ...`` (the prefix only turns an unknown option into a warning)."""

    @property
    def arg(self) -> str | None:
        return self.args[0] if self.args else None


def tokenize(text: str, *, line: int | None = None, source: str | None = None) -> list[str]:
    """Split one config line into arguments as OpenVPN does; a comment ends the line."""
    return _scan(text, line, source)[0]


def _scan(text: str, line: int | None, source: str | None) -> tuple[list[str], int | None]:
    """The line's arguments, and where its trailing comment starts (None if it has none)."""
    tokens: list[str] = []
    current: list[str] = []
    in_token = False
    quote: str | None = None
    backslash = False
    comment: int | None = None
    for position, char in enumerate(text.rstrip("\r\n")):
        if backslash:
            current.append(char)
            backslash = False
            continue
        if quote is not None:
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"':
                backslash = True
            else:
                current.append(char)
            continue
        if char in " \t\f\v":
            if in_token:
                tokens.append("".join(current))
                current, in_token = [], False
            continue
        if not in_token and char in "#;":
            comment = position
            break
        in_token = True
        if char in "\"'":
            quote = char
        elif char == "\\":
            backslash = True
        else:
            current.append(char)
    if quote is not None:
        raise ParseError(f"unterminated {quote} quote", line, source)
    if in_token:
        tokens.append("".join(current))
    return tokens, comment


def quote_arg(value: str) -> str:
    """`value` written so `tokenize` reads it back unchanged."""
    if value and not re.search(r"[\s\"'\\#;]", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _meant(directive: Directive) -> str:
    """A directive's meaning as one string: its arguments, inline body and prefix."""
    return json.dumps([directive.args, directive.inline, directive.hidden_by])


@dataclass
class OvpnConfig:
    lines: list[str]
    directives: list[Directive]
    source: str | None = None
    intent: Intent = field(default_factory=lambda: Intent(OPENVPN), repr=False)
    """What the edits since it was parsed mean (`zsn.meaning`)."""

    def render(self) -> str:
        return "".join(self.lines)

    def get(self, name: str) -> Directive | None:
        """The last `name` directive (the one OpenVPN obeys for single-valued options)."""
        found = [d for d in self.directives if d.name == name]
        return found[-1] if found else None

    def get_all(self, name: str) -> list[Directive]:
        return [d for d in self.directives if d.name == name]

    def has(self, name: str) -> bool:
        return any(d.name == name for d in self.directives)

    @property
    def script_security(self) -> int:
        """The effective script-security level (OpenVPN's default is 1)."""
        directive = self.get("script-security")
        if directive is None or not directive.arg or not directive.arg.isdigit():
            return 1
        return int(directive.arg)

    @property
    def newline(self) -> str:
        """The file's line ending, so added lines match the rest."""
        return "\r\n" if self.lines and self.lines[0].endswith("\r\n") else "\n"

    def set_directive(self, name: str, *args: str) -> bool:
        """Make the last `name` directive read `name args`, or append it. True if changed."""
        text = _rendered(name, args)
        current = self.get(name)
        if current is not None and current.inline is None and current.args == tuple(args):
            return False
        meant = _meant(Directive(name, tuple(args), 0, 0))
        if current is not None and current.inline is None:
            self.intent.assign("", name, [_meant(d) for d in self.get_all(name)[:-1]] + [meant])
            original = self.lines[current.line]
            indent = original[: len(original) - len(original.lstrip(" \t"))]
            ending = original[len(original.rstrip("\r\n")):]
            # Keep a trailing comment, with the spacing before it.
            comment_at = _scan(original, None, self.source)[1]
            comment = ""
            if comment_at is not None:
                before = original[:comment_at]
                comment = before[len(before.rstrip(" \t")):] + original[comment_at:].rstrip(
                    "\r\n")
            self.lines[current.line] = indent + text + comment + ending
        else:
            self.intent.append("", name, meant)
            self._append_line(text)
        self._reindex()
        return True

    def add_directive(self, name: str, *args: str) -> None:
        """One more ``name args`` line at the end."""
        text = _rendered(name, args)
        self.intent.append("", name, _meant(Directive(name, tuple(args), 0, 0)))
        self._append_line(text)

    def remove(self, directive: Directive) -> None:
        """Drop `directive`'s lines (all of them, for an inline block)."""
        self.intent.assign("", directive.name, [_meant(d) for d in self.get_all(directive.name)
                                                if d.line != directive.line])
        del self.lines[directive.line:directive.end]
        self._reindex()

    def _append_line(self, text: str) -> None:
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += self.newline
        self.lines.append(text + self.newline)
        self._reindex()

    def _reindex(self) -> None:
        self.directives = parse(self.render(), self.source).directives


def parse(text: str, source: str | None = None) -> OvpnConfig:
    """Parse `text`; raise `ParseError` naming the line when OpenVPN would refuse it."""
    if "\x00" in text:
        raise ParseError("contains a NUL byte; not a text config", None, source)
    # OpenVPN reads lines with fgets: only \n ends one (str.splitlines would also break
    # at form feeds, \x85, U+2028 ...).
    lines = [line for line in re.split(r"(?<=\n)", text) if line]
    directives: list[Directive] = []
    index = 0
    while index < len(lines):
        raw = lines[index]
        opened = _INLINE_OPEN_RE.match(raw)
        if opened:
            tag = opened.group(1).lower()
            body: list[str] = []
            close = index + 1
            while close < len(lines):
                closed = _INLINE_CLOSE_RE.match(lines[close])
                if closed:
                    if closed.group(1).lower() != tag:
                        raise ParseError(
                            f"</{closed.group(1)}> closes <{tag}>", close + 1, source
                        )
                    break
                body.append(lines[close])
                close += 1
            else:
                raise ParseError(f"<{tag}> block is never closed", index + 1, source)
            directives.append(Directive(tag, (INLINE,), index, close + 1, "".join(body)))
            index = close + 1
            continue
        if _INLINE_CLOSE_RE.match(raw):
            raise ParseError(f"{raw.strip()} without a matching opening tag", index + 1, source)
        tokens = tokenize(raw, line=index + 1, source=source)
        if tokens:
            name = tokens[0].removeprefix("--").lower()
            if not _NAME_RE.fullmatch(name):
                raise ParseError(f"{excerpt(tokens[0])} is not an option name", index + 1, source)
            args, hidden_by = tokens[1:], None
            if name == "setenv" and len(args) > 1 and args[0] == "opt":
                inner = args[1].removeprefix("--").lower()
                if _NAME_RE.fullmatch(inner):
                    name, args, hidden_by = inner, args[2:], "setenv opt"
            directives.append(Directive(name, tuple(args), index, index + 1,
                                        hidden_by=hidden_by))
        index += 1
    return OvpnConfig(lines, directives, source)


def validate_name(name: str) -> str:
    """A connection name usable as a systemd instance and a file name, or ValidationError."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name) or name.endswith(".conf"):
        raise ValidationError(
            f"{name!r} is not a usable connection name: use letters, digits, '-', '_' "
            "and '.', up to 64 characters, without '.conf'"
        )
    return name


def _rendered(name: str, args: tuple[str, ...]) -> str:
    """``name args`` as OpenVPN reads back exactly these arguments, each typed by
    `SCHEMA` (the format's renderer)."""
    types = SCHEMA.get(name)
    if types is None or len(types) != len(args):
        raise ValidationError(f"'{name} {' '.join(args)[:80]}' is not a directive zsn writes")
    for type_, arg in zip(types, args, strict=True):
        type_.text(name, one_line(arg, name))
    return " ".join([name, *(quote_arg(arg) for arg in args)])


class _OpenVpn:
    """An OpenVPN config as zsn reads it (`zsn.meaning.Format`): one section of every
    directive in order, each with its arguments (inline blocks with their body)."""

    name = "OpenVPN config"

    def key(self, key: str) -> str:
        return key

    def read(self, text: str, source: str) -> Reading:
        config = parse(text, source)
        return [Section("", [Entry(d.name, _meant(d), d.line + 1) for d in config.directives],
                        1)]


OPENVPN: Format = _OpenVpn()
