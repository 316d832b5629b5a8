"""The desired-state file: its envelope (``version``, one section per domain that has a
``desired`` face), read through `zsn.decode` and written by `export`.

A section is optional; what it does not name is left as it is. The file's schema is
versioned (`VERSION`): a file of another version is refused, never guessed at.
"""

from __future__ import annotations

import dataclasses
import json
import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from zsn.decode import DecodeError, convert, from_json, from_yaml
from zsn.domains import DesiredFace, Domain, desired_face, domains
from zsn.errors import ValidationError, ZsnError, did_you_mean
from zsn.system import files
from zsn.system.host import Host

VERSION = 1
"""The schema of the file (docs/state.schema.json)."""
MAX_BYTES = 8 << 20
"""The largest desired-state file read: some 40,000 peers."""


class Section(NamedTuple):
    domain: Domain
    face: DesiredFace


@cache
def sections(named: frozenset[str] | None = None) -> tuple[Section, ...]:
    """The domains with a desired face (only those `named`, when given: the others'
    faces are not even imported), in the order their sections are planned."""
    found = [Section(each, face) for each in domains()
             if each.desired and (named is None or each.name in named)
             and (face := desired_face(each)) is not None]
    return tuple(sorted(found, key=lambda section: section.face.ORDER))


@cache
def document_type(named: frozenset[str] | None = None) -> type[Any]:
    """The file's type: ``version`` and one optional field per section. With `named`,
    the sections a file gives: the others' fields can only be left out (or null), so
    a file of one section costs the import of that section's types only."""
    fields: list[tuple[str, Any, Any]] = [("version", int, dataclasses.field())]
    fields += [(each.domain.name, each.face.SECTION | None, dataclasses.field(default=None))
               for each in sections(named)]
    if named is not None:
        fields += [(name, None, dataclasses.field(default=None))
                   for name in sorted(declared_sections() - named)]
    return dataclasses.make_dataclass("DesiredState", fields)


def section_names() -> list[str]:
    return [each.domain.name for each in sections()]


def declared_sections() -> frozenset[str]:
    """The sections' names, their faces not imported."""
    return frozenset(each.name for each in domains() if each.desired)


def check_sections(names: list[str]) -> None:
    """Refuse a section name no domain has (`zsn state export SECTION`)."""
    known = section_names()
    for name in names:
        if name not in known:
            raise ValidationError(f"unknown section {name!r}{did_you_mean(name, known)} "
                                  f"(sections: {', '.join(known)})")


def read_text(path: str) -> tuple[str, str]:
    """(the text, its name in messages) of FILE as the command line gives it: a path
    (read as it is named, not under --root: it is the command's input, not the tree's)
    or ``-`` for standard input."""
    if path == "-":
        import sys

        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ValidationError(f"standard input: more than {MAX_BYTES} bytes")
        try:
            return data.decode("utf-8"), "standard input"
        except UnicodeDecodeError as exc:
            raise ValidationError(f"standard input: not UTF-8 text (byte {exc.start})") \
                from None
    try:
        return files.read_text(Path(path), MAX_BYTES), path
    except ValidationError:
        raise
    except Exception as exc:  # noqa: BLE001 - a file that cannot be read is bad input
        raise ValidationError(str(exc)) from None


def parse(text: str, source: str) -> Any:
    """The file's text as a `document_type` value; bad input is one `ValidationError`
    naming the source and the field (exit 2, nothing changed)."""
    try:
        # JSON is YAML too; the JSON reader is the faster one (`zsn state export --json`).
        reader = from_json if text.lstrip().startswith("{") else from_yaml
        raw = reader(text, dict[str, Any], source, max_bytes=MAX_BYTES)
        _check_version(raw, source)
        known = declared_sections()
        named = frozenset(key for key, value in raw.items()
                          if key in known and value is not None)
        # a key no section has: the whole type names every section in its refusal
        whole = not raw.keys() <= {"version", *known}
        return convert(raw, document_type(None if whole else named), source,
                       known_keys=True)
    except DecodeError as exc:
        raise ValidationError(str(exc)) from None


def _check_version(raw: object, source: str) -> None:
    """A file of another schema is refused before its sections are read as this one's."""
    if not isinstance(raw, dict) or "version" not in raw:
        raise ValidationError(f"{source}: no 'version: {VERSION}' (the schema this zsn "
                              "reads)")
    version = raw["version"]
    if version != VERSION or isinstance(version, bool):
        raise ValidationError(f"{source}: version: {str(version)[:20]!r} is not a schema "
                              f"this zsn reads (it reads version {VERSION})")


def export(host: Host, names: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The file that describes `host` now (the sections `names`, default all), and what
    could not be read (each a line; those parts are left out, so applying the file
    leaves them alone)."""
    document: dict[str, Any] = {"version": VERSION}
    errors: list[str] = []
    for each in sections():
        if names and each.domain.name not in names:
            continue
        described, problems = each.face.describe(host)
        errors.extend(f"{each.domain.name}: {problem}" for problem in problems)
        if described:
            document[each.domain.name] = described
    return document, errors


HEADER = ("# zsn desired state (docs/state.md): `zsn apply FILE` makes a machine so;\n"
          "# written by `zsn state export`, it describes this one as it is now.\n")
_PLAIN_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.@-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
"""Words YAML 1.1 reads as something other than a string: always quoted."""


def render(document: dict[str, Any], *, as_json: bool = False) -> str:
    """The file's text: YAML (block style, strings quoted unless they are plain names)
    or JSON; read back before it is returned, so what is printed is what is meant."""
    if as_json:
        text = json.dumps(document, indent=2) + "\n"
    else:
        lines: list[str] = []
        _emit(document, "", lines)
        text = HEADER + "\n".join(lines) + "\n"
    reader = from_json if as_json else from_yaml
    if reader(text, dict[str, Any], "the state about to be written") != document:
        raise ZsnError("the state file zsn was about to write does not read back as the "
                       "state it describes; nothing was written")
    return text


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # a rate of bytes per second; repr reads back the same
        return repr(value)
    text = str(value)
    if _PLAIN_RE.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def _emit(value: object, indent: str, lines: list[str]) -> None:
    """`value` (a mapping) as block YAML at `indent`; lists of scalars in flow style."""
    assert isinstance(value, dict)
    for key, item in value.items():
        head = f"{indent}{key}:"
        if isinstance(item, dict):
            if not item:
                lines.append(f"{head} {{}}")
                continue
            lines.append(head)
            _emit(item, indent + "  ", lines)
        elif isinstance(item, list) and any(isinstance(each, dict) for each in item):
            lines.append(head)
            for each in item:
                inner: list[str] = []
                _emit(each, indent + "    ", inner)
                first = inner[0] if inner else f"{indent}    {{}}"
                lines.append(f"{indent}  - {first[len(indent) + 4:]}")
                lines.extend(inner[1:])
        elif isinstance(item, list):
            lines.append(f"{head} [{', '.join(_scalar(each) for each in item)}]")
        else:
            lines.append(f"{head} {_scalar(item)}")
