"""Typed parameters of undo records: data, never programs.

A try's record is read back by another process (the guardian, ``zsn rollback``)
that acts as root on what it says, so each undo kind (`zsn.tries.undo.RESTORERS`)
declares its parameters as a frozen dataclass whose fields are plain values:
names, networks, system paths, numbers, texts. Each class checks its values in
``__post_init__`` (raising ``ValueError`` with the reason, as `zsn.decode`'s types
do); the restorer then chooses the program and its arguments from them. Nothing in
a record can name a program, an option or a path outside the tree: a record that
tries is refused whole and left where it is for a person to look at (``zsn
pending`` lists it as unreadable, with why).

`read` turns a record's JSON value into such a class, strictly: every field of its
type, nothing else (an unknown key such as ``program`` is refused), no coercion (a
string is not a number, a number not a boolean).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import posixpath
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from zsn.errors import ZsnError

T = TypeVar("T")

_INTERFACE_RE = re.compile(r"[^/\s:]{1,15}")
"""The kernel's rule for a link name (dev_valid_name): 1-15 bytes, no '/', ':' or space."""
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_UNIT_RE = re.compile(r"[A-Za-z0-9:_.\\@-]{1,246}\.(?:service|socket|target|timer|mount|path)")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class RecordError(ZsnError):
    """A record (or a part of one) that zsn will not act on: the field and why."""


def read(kind: type[T], value: object, field: str = "") -> T:
    """`value` (decoded JSON) as a `kind` (a dataclass of this module's kind), or a
    `RecordError` naming the field."""
    converted: T = _convert(value, kind, field or kind.__name__)
    return converted


def _convert(value: object, kind: Any, field: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if origin in (types.UnionType, typing.Union):
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        real = [option for option in options if option is not type(None)]
        if len(real) == 1:
            return _convert(value, real[0], field)
        raise RecordError(f"{field}: a union of several types is not a record field")
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _dataclass(value, kind, field)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise RecordError(f"{field}: expected a list, got {_name(value)}")
        item = typing.get_args(kind)[0]
        converted = [_convert(entry, item, f"{field}[{index}]")
                     for index, entry in enumerate(value)]
        return converted if origin is list else tuple(converted)
    if origin is dict:
        key_type, item = typing.get_args(kind)
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise RecordError(f"{field}: expected an object, got {_name(value)}")
        return {key: _convert(entry, item, f"{field}.{key}") for key, entry in value.items()}
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordError(f"{field}: expected a number, got {_name(value)}")
        return float(value)
    if kind is int and isinstance(value, bool):
        raise RecordError(f"{field}: expected a whole number, got a boolean")
    if kind in (str, int, bool):
        if not isinstance(value, kind):
            raise RecordError(f"{field}: expected {kind.__name__}, got {_name(value)}")
        return value
    raise RecordError(f"{field}: {kind!r} is not a record field type")


def _dataclass(value: object, kind: type[Any], field: str) -> Any:
    if not isinstance(value, dict):
        raise RecordError(f"{field}: expected an object, got {_name(value)}")
    hints = typing.get_type_hints(kind)
    known = {item.name: item for item in dataclasses.fields(kind) if item.init}
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise RecordError(f"{field}: unknown field {unknown[0]!r} (a record holds data, "
                          "never programs or options)")
    arguments = {}
    for name, item in known.items():
        if name not in value:
            if item.default is dataclasses.MISSING and \
                    item.default_factory is dataclasses.MISSING:
                raise RecordError(f"{field}: missing field {name!r}")
            continue
        arguments[name] = _convert(value[name], hints[name], f"{field}.{name}")
    try:
        return kind(**arguments)
    except ValueError as exc:
        raise RecordError(f"{field}: {exc}") from None


def _name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def as_data(params: object) -> dict[str, Any]:
    """A parameters object as JSON-ready data (what `read` takes back)."""
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        raise TypeError(f"{params!r} is not undo parameters")
    data: dict[str, Any] = _data(dataclasses.asdict(params))
    return data


def _data(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_data(item) for item in value]
    if isinstance(value, dict):
        return {key: _data(item) for key, item in value.items()}
    return value


# -- checks of values: each returns the value or raises ValueError --------------------------


def system_path(text: str, what: str = "path") -> str:
    """An absolute path as the system it names sees it (``/etc/x``: under ``--root``,
    `Host.path` puts it inside the tree): normalised, no ``..``, no control character."""
    if not text.startswith("/") or posixpath.normpath(text) != text or text.startswith("//"):
        raise ValueError(f"{what} {text[:80]!r} is not a normalised absolute path")
    if "/../" in text + "/" or _CONTROL_RE.search(text):
        raise ValueError(f"{what} {text[:80]!r} leaves the tree or holds a control character")
    return text


def interface(text: str, what: str = "interface") -> str:
    if _INTERFACE_RE.fullmatch(text) is None or text in (".", "..") or \
            _CONTROL_RE.search(text) or text.startswith("-"):
        raise ValueError(f"{what} {text[:40]!r} is not a link name")
    return text


def network(text: str, what: str = "network") -> str:
    return _parsed(lambda value: ipaddress.ip_network(value, strict=False), text, what,
                   "a network (address/prefix)")


def interface_address(text: str, what: str = "address") -> str:
    return _parsed(ipaddress.ip_interface, text, what, "an address/prefix")


def ip(text: str, what: str = "address") -> str:
    return _parsed(ipaddress.ip_address, text, what, "an IP address")


def _parsed(parse: Callable[[str], object], text: str, what: str, kind: str) -> str:
    try:
        parse(text)
    except ValueError:
        raise ValueError(f"{what} {text[:60]!r} is not {kind}") from None
    return text


def sha256(text: str, what: str = "digest") -> str:
    if _SHA256_RE.fullmatch(text) is None:
        raise ValueError(f"{what} is not a SHA-256 digest")
    return text


def unit(text: str) -> str:
    if _UNIT_RE.fullmatch(text) is None or text.startswith("-"):
        raise ValueError(f"unit {text[:60]!r} is not a systemd unit name")
    return text


def one_line(text: str, what: str, limit: int = 4096) -> str:
    if len(text) > limit or _CONTROL_RE.search(text):
        raise ValueError(f"{what} is not one line of text of at most {limit} characters")
    return text


def whole(value: int, low: int, high: int, what: str) -> int:
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is outside {low}-{high}")
    return value


def choice(value: str, allowed: Mapping[str, object] | tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} {value[:40]!r} is not one of {', '.join(allowed)}")
    return value
