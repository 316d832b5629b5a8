"""The one strict decoding layer for structured input from outside zsn.

Every JSON document, YAML or TOML file, SQLite row and time stamp that zsn reads from a
file, a program or a daemon becomes a typed value here, or a `DecodeError`: one line
that names the source (a file, a program, a table) and the field, such as::

    /etc/zsn/wireguard.json: wg0.links[1]: expected str, got int

The types are plain dataclasses, NamedTuples, TypedDicts, ``list``, ``dict`` and
scalars, declared next to the reader that uses them; a check a type cannot say
(an interface name, a key) goes in the dataclass's ``__post_init__``, raising
``ValueError`` with the reason: it comes out as a `DecodeError` naming the field too.

Bounds: every input is refused above its byte limit (`MAX_BYTES` unless the caller
gives a smaller one) and above `MAX_DEPTH` levels of nesting, before it is decoded;
YAML also above `MAX_NODES` nodes (aliases count each time they are used, so a
"billion laughs" file is refused, not expanded).

How to add a reader of outside input:

1. Declare the type it yields (dataclass or NamedTuple) in the reader's module.
2. Decode with ``from_json``, ``from_yaml``, ``from_toml``, ``convert`` (a value
   another parser produced: an SQLite row, a parsed config's field) or
   ``timestamp``; never ``json.loads``, ``yaml.safe_load``, ``tomllib`` or
   ``msgspec`` directly (tests/unit/test_fuzz_registry.py finds them).
3. Add an `Entry` to ``tests/unit/fuzz_registry.py``: the functions it covers, a
   hypothesis strategy of hostile inputs and an example count. The registry's test
   fails for a reader of outside input that no entry covers.

Why msgspec: it decodes and validates in one pass in C (a 5,000-peer document in
milliseconds), takes the standard library's dataclasses and NamedTuples as schemas
(so a reader's types need no import of it: the headless path imports msgspec only
when it decodes something), names the failing field in its errors, and costs ~13 ms
to import against pydantic's ~35 ms before its first model is built (``python -X
importtime``, this machine). It is imported on first use, here only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from zsn.errors import ParseError

if TYPE_CHECKING:
    import yaml as _yaml_module

T = TypeVar("T")

MAX_BYTES = 16 << 20
"""The largest document decoded unless the caller sets less."""
MAX_DEPTH = 64
"""Levels of nesting (arrays, objects, mappings) allowed in any document."""
MAX_NODES = 100_000
"""YAML nodes visited while checking a document (aliases count at each use)."""
EARLIEST = 0
"""1970-01-01T00:00:00Z: the earliest time stamp accepted."""
LATEST = 253402128000
"""9999-12-30T00:00:00Z: the latest, a day short of the calendar's end, so the time
can be shown in any time zone."""


class DecodeError(ParseError):
    """Structured input that is not what zsn expects: one line naming the source and
    the field (`field`, ``None`` for the document as a whole)."""

    def __init__(self, source: str, field: str | None, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason, None, source)
        self.field = field
        self.reason = reason


def from_json(data: str | bytes, kind: type[T], source: str, *,
              max_bytes: int = MAX_BYTES) -> T:
    """The JSON document `data` (from `source`) as a `kind`."""
    import msgspec

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    _check_size(len(raw), max_bytes, source)
    _check_depth(_bracket_skeleton(raw), source)
    return _msgspec(lambda: msgspec.json.decode(raw, type=kind, strict=True), source)


def from_yaml(text: str, kind: type[T], source: str, *, max_bytes: int = MAX_BYTES,
              known_keys: bool = False) -> T:
    """The YAML document `text` (safe tags only: no objects) as a `kind`; a mapping
    that gives a key twice is refused (YAML forbids it; PyYAML would keep the last).
    `known_keys`: a key no dataclass of `kind` declares is refused too (see `convert`)."""
    import yaml

    raw = text.encode("utf-8", "surrogatepass")
    _check_size(len(raw), max_bytes, source)
    _check_depth(_bracket_skeleton(raw, quotes=b"\"'"), source)
    # libyaml's loader where PyYAML has it: ten times faster than the pure Python one
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        value = None if node is None else _yaml_value(loader, node, source)
    except yaml.YAMLError as exc:
        raise DecodeError(source, None, f"not valid YAML: {_first_line(exc)}") from None
    except ValueError as exc:  # a value its type cannot hold (an integer of 5,000 digits)
        raise DecodeError(source, None, f"not valid YAML: {_first_line(exc)}") from None
    except RecursionError:
        raise DecodeError(source, None, f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()
    return convert(value, kind, source, known_keys=known_keys)


def from_toml(text: str, kind: type[T], source: str, *, max_bytes: int = MAX_BYTES) -> T:
    """The TOML document `text` as a `kind`."""
    import tomllib

    _check_size(len(text.encode("utf-8", "surrogatepass")), max_bytes, source)
    _check_depth(_bracket_skeleton(text.encode("utf-8", "surrogatepass"), quotes=b"\"'"),
                 source)
    try:
        value = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # ValueError: 5,000-digit numbers
        raise DecodeError(source, None, f"not valid TOML: {_first_line(exc)}") from None
    except RecursionError:
        raise DecodeError(source, None, f"nested more than {MAX_DEPTH} levels deep") from None
    if kind == dict[str, Any]:
        # What tomllib gives is such a table already: no msgspec to import for it (a
        # theme read before the TUI's first frame).
        return cast(T, value)
    return convert(value, kind, source)


def convert(value: object, kind: type[T], source: str, field: str | None = None, *,
            known_keys: bool = False) -> T:
    """`value` (what another parser produced: an SQLite row, a YAML mapping) as a
    `kind`, checked as strictly as a decoded document; `field` prefixes the names
    of the fields in an error (a table's name for its rows). With `known_keys` a key
    that no field of a dataclass in `kind` declares is refused, naming the nearest
    field: for files people write (a misspelt key would otherwise be passed over)."""
    import msgspec

    if known_keys:
        unknown = _unknown_key(value, kind, field or "")
        if unknown is not None:
            where, key, declared = unknown
            from zsn.errors import did_you_mean

            raise DecodeError(source, where or None, f"unknown key {key[:60]!r}"
                              f"{did_you_mean(key, declared)} (known: "
                              f"{', '.join(declared)})")
    return _msgspec(lambda: msgspec.convert(value, kind, strict=True), source, field)


def _unknown_key(value: object, kind: object, where: str
                 ) -> tuple[str, str, list[str]] | None:
    """(where, the key, the declared fields) of the first mapping key in `value` that no
    dataclass of `kind` declares; None when there is none. Values of another shape than
    their type are left to msgspec, which names them."""
    shape, parts = _shape(kind)
    if shape == "dataclass" and isinstance(value, dict):
        inner, declared = parts
        if not inner and value.keys() <= declared:
            return None  # fields that hold no dataclass (a peer's): known names suffice
        for key, item in value.items():
            if key not in declared:
                return where, str(key), list(declared)
            if key in inner:
                found = _unknown_key(item, inner[key], f"{where}.{key}" if where else str(key))
                if found is not None:
                    return found
    elif shape == "union":
        shaped = [each for each in parts if _same_shape(value, each)]
        return _unknown_key(value, shaped[0], where) if shaped else None
    elif shape == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            found = _unknown_key(item, parts, f"{where}[{index}]")
            if found is not None:
                return found
    elif shape == "dict" and isinstance(value, dict):
        for key, item in value.items():
            found = _unknown_key(item, parts, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    return None


@functools.cache
def _shape(kind: object) -> tuple[str, Any]:
    """What `_unknown_key` looks into for `kind`, worked out once per type (a file of
    1,000 peers has 1,000 mappings of one type): a dataclass's fields that can hold a
    dataclass (by name, with their types) and its fields' names, a union's members that
    can be a mapping or a list, a list's or a dict's items' type; ``leaf`` for a type
    that holds no dataclass (nothing to look into)."""
    import dataclasses
    import types
    import typing

    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        declared = tuple(each.name for each in dataclasses.fields(kind))
        hints = typing.get_type_hints(kind)
        inner = {name: hints[name] for name in declared
                 if name in hints and _shape(hints[name])[0] != "leaf"}
        return "dataclass", (inner, dict.fromkeys(declared).keys())
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        # members no mapping or list can be (None, str, int) are never looked into
        shaped = tuple(each for each in arguments if _collection(each))
        if not any(_shape(each)[0] != "leaf" for each in shaped):
            return "leaf", None
        return _shape(shaped[0]) if len(shaped) == 1 else ("union", shaped)
    if origin in (list, tuple, set, frozenset) and arguments:
        return ("list", arguments[0]) if _shape(arguments[0])[0] != "leaf" else ("leaf", None)
    if origin is dict and len(arguments) == 2:
        return ("dict", arguments[1]) if _shape(arguments[1])[0] != "leaf" else ("leaf", None)
    return "leaf", None


def _collection(kind: object) -> bool:
    """Whether a value of `kind` can be a mapping or a list (see `_same_shape`)."""
    import dataclasses
    import typing

    origin = typing.get_origin(kind) or kind
    return origin in (dict, list, tuple, set, frozenset) or (
        isinstance(kind, type) and dataclasses.is_dataclass(kind))


def _same_shape(value: object, kind: object) -> bool:
    """Whether `value` is a mapping for a dataclass or dict `kind`, a list for a list."""
    import dataclasses
    import typing

    origin = typing.get_origin(kind) or kind
    if isinstance(value, dict):
        return origin is dict or (isinstance(kind, type) and dataclasses.is_dataclass(kind))
    return isinstance(value, list) and origin in (list, tuple, set, frozenset)


def timestamp(text: str, source: str, field: str | None = None) -> int:
    """Unix seconds of an ISO 8601 time with a zone (``2026-12-31T23:00:00Z``), between
    `EARLIEST` and `LATEST`."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise DecodeError(source, field, f"{text[:40]!r} is not an ISO 8601 date and "
                                         "time") from None
    if moment.tzinfo is None:
        raise DecodeError(source, field, f"{text[:40]!r} has no time zone")
    try:
        seconds = moment.timestamp()
    except (OverflowError, ValueError):
        seconds = float("inf")
    if not EARLIEST <= seconds <= LATEST:
        raise DecodeError(source, field, f"{text[:40]!r} is not between "
                                         f"{_iso(EARLIEST)} and {_iso(LATEST)}")
    return int(seconds)


# -- machinery -------------------------------------------------------------------------

_JSON_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


def _msgspec(run: Callable[[], T], source: str, prefix: str | None = None) -> T:
    import msgspec

    try:
        return run()
    except msgspec.ValidationError as exc:
        reason, _, path = str(exc).partition(" - at `")
        field = _field(path.rstrip("`"), prefix) if path else prefix
        raise DecodeError(source, field, _reason(reason)) from None
    except msgspec.DecodeError as exc:
        reason = _reason(str(exc)).removeprefix("JSON is malformed: ")
        raise DecodeError(source, prefix, f"not valid JSON: {reason}") from None
    except RecursionError:
        raise DecodeError(source, prefix, f"nested more than {MAX_DEPTH} levels deep") from None


def _field(path: str, prefix: str | None) -> str | None:
    """``$.clients[...].name`` as ``clients[*].name`` (msgspec does not say which key)."""
    parts = [prefix] if prefix else []
    for match in _JSON_PATH_PART.finditer(path.removeprefix("$")):
        name, index = match.groups()
        if name is not None:
            parts.append(("." if parts else "") + name)
        else:
            parts.append("[*]" if index == "..." else f"[{index}]")
    return "".join(parts) or None


def _reason(text: str) -> str:
    text = text.replace("`", "").splitlines()[0] if text else "invalid"
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or ["invalid"])[0]


def _check_size(size: int, limit: int, source: str) -> None:
    if size > limit:
        raise DecodeError(source, None, f"{size} bytes, more than the {limit} read")


# strings as "unrolled loops" (runs of plain characters between escapes): the same
# matches as "(?:[^"\\]|\\.)*" in half the time (a 1,000-peer YAML file: ~1 ms less)
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TOML_STRING = re.compile(rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\n]*\'|#[^\n]*')
_NOT_BRACKET = bytes(byte for byte in range(256) if byte not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}|\[\}|\{\]")
_TOO_DEEP = re.compile(rb"[\[{]{%d}" % (MAX_DEPTH + 1))


def _bracket_skeleton(data: bytes, quotes: bytes = b'"') -> bytes:
    """The brackets of `data` outside its strings (and, with both quotes, TOML's and
    YAML's comments)."""
    strings = _TOML_STRING if quotes != b'"' else _JSON_STRING
    return strings.sub(b"", data).translate(None, _NOT_BRACKET)


def _check_depth(skeleton: bytes, source: str) -> None:
    """Refuse more than `MAX_DEPTH` levels before any recursive decoder sees the input:
    in at most that many passes in C, each removing the innermost pairs, a run of more
    openers than that refused at once."""
    for _level in range(MAX_DEPTH + 1):
        if _TOO_DEEP.search(skeleton):
            raise DecodeError(source, None, f"nested more than {MAX_DEPTH} levels deep")
        shorter = _INNERMOST.sub(b"", skeleton)
        if len(shorter) == len(skeleton):
            return  # nothing nested any more (or unbalanced: the decoder says where)
        skeleton = shorter
    raise DecodeError(source, None, f"nested more than {MAX_DEPTH} levels deep")


_YAML_TAG = "tag:yaml.org,2002:"
_YAML_STR = f"{_YAML_TAG}str"
_YAML_MAP = f"{_YAML_TAG}map"
_YAML_SEQ = f"{_YAML_TAG}seq"
_YAML_SCALARS = frozenset(f"{_YAML_TAG}{name}" for name in (
    "str", "null", "bool", "int", "float", "binary", "timestamp"))
"""The scalar tags whose values the one-pass builder makes (with PyYAML's own functions)."""


class _Unusual(Exception):
    """A node the one-pass builder leaves to PyYAML: another tag (``!!set``, ``!!omap``,
    ``!!pairs``, a tag on the wrong kind of node, one PyYAML refuses), a merge key
    (``<<``) or ``=`` as a key, a collection as a key."""


def _yaml_value(loader: Any, root: _yaml_module.Node, source: str) -> Any:
    """The value of a composed YAML document, as PyYAML's safe constructor makes it,
    checked while it is made: depth, node count (aliases counted at each use) and keys
    given twice. One pass over libyaml's nodes, each scalar read by PyYAML's own function
    for its tag (YAML 1.1 as PyYAML reads it: ``yes``, ``0x10``, ``1_000``); a document
    with anything else (`_Unusual`) is checked whole, then made by PyYAML's
    ``construct_document``, as every document was before."""
    try:
        try:
            return _YamlBuilder(loader, source).value(root, 1)
        except _Unusual:
            _check_yaml_node(root, source)
            return loader.construct_document(root)
    except (KeyError, AttributeError, IndexError):
        # PyYAML's scalar functions on a value their explicit tag cannot hold
        # (``!!bool maybe``: KeyError, ``!!timestamp x``: AttributeError, ``!!int ''``)
        raise DecodeError(source, None, "not valid YAML: a value its tag cannot hold"
                          ) from None


class _YamlBuilder:
    """`_yaml_value`'s one pass (see there)."""

    def __init__(self, loader: Any, source: str) -> None:
        import yaml

        self.loader = loader
        self.source = source
        self.constructors: dict[str | None, Callable[[Any, Any], Any]] = \
            loader.yaml_constructors
        self.scalar_node: type[Any] = yaml.ScalarNode
        self.mapping_node: type[Any] = yaml.MappingNode
        self.sequence_node: type[Any] = yaml.SequenceNode
        self.visited = 1

    def value(self, node: Any, depth: int) -> Any:
        kind = type(node)
        if kind is self.scalar_node:
            return self.scalar(node)
        children = node.value
        if not children:
            pass
        elif depth >= MAX_DEPTH:
            raise DecodeError(self.source, None, f"nested more than {MAX_DEPTH} levels deep")
        else:
            self.visited += len(children) * (2 if kind is self.mapping_node else 1)
            if self.visited > MAX_NODES:
                raise DecodeError(self.source, None, f"more than {MAX_NODES} values "
                                                     "(aliases repeated?)")
        if kind is self.mapping_node and node.tag == _YAML_MAP:
            return self.mapping(children, depth + 1)
        if kind is self.sequence_node and node.tag == _YAML_SEQ:
            scalar_node = self.scalar_node
            return [child.value if type(child) is scalar_node and child.tag == _YAML_STR
                    else self.value(child, depth + 1) for child in children]
        raise _Unusual

    def mapping(self, pairs: list[tuple[Any, Any]], depth: int) -> dict[Any, Any]:
        built: dict[Any, Any] = {}
        seen: set[tuple[str, str]] = set()
        scalar_node = self.scalar_node
        for key_node, value_node in pairs:
            if type(key_node) is not scalar_node:
                raise _Unusual  # a collection: PyYAML refuses it (no hashable value)
            tag, text = key_node.tag, key_node.value
            if (tag, text) in seen:
                raise DecodeError(self.source, None, f"line {key_node.start_mark.line + 1}: "
                                  f"key {text[:60]!r} given twice in one mapping")
            seen.add((tag, text))
            key = text if tag == _YAML_STR else self.scalar(key_node)
            if type(value_node) is scalar_node and value_node.tag == _YAML_STR:
                built[key] = value_node.value
            else:
                built[key] = self.value(value_node, depth)
        return built

    def scalar(self, node: Any) -> Any:
        tag = node.tag
        if tag == _YAML_STR:
            return node.value
        if tag not in _YAML_SCALARS:
            raise _Unusual
        return self.constructors[tag](self.loader, node)


def _check_yaml_node(root: _yaml_module.Node, source: str) -> None:
    """Depth and node count of a composed YAML document, aliases counted at each use."""
    import yaml

    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    visited = 0
    while stack:
        node, depth = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            raise DecodeError(source, None, f"more than {MAX_NODES} values (aliases "
                                            "repeated?)")
        if depth > MAX_DEPTH:
            raise DecodeError(source, None, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, child in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if (key.tag, key.value) in seen:
                        raise DecodeError(source, None, f"line {key.start_mark.line + 1}: "
                                          f"key {key.value[:60]!r} given twice in one "
                                          "mapping")
                    seen.add((key.tag, key.value))
                stack.extend(((key, depth + 1), (child, depth + 1)))


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")
