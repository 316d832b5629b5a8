"""The typed values zsn writes into other programs' files, each checked as the programs
that read them check it (`zsn.meaning` says how a format's renderer uses them).

Each is a `zsn.meaning.ValueType`: a name for messages and the problem a value has
(None when the reading program takes it). A format adds its own where its programs
read a value their own way (a WireGuard key, a systemd boolean) and refuses its
comment and separator characters with `zsn.meaning.refusing`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from zsn.meaning import ValueType

_HOSTNAME_RE = re.compile(
    r"(?=.{1,253}\Z)([A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)"
    r"(\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*\.?")
_INTERFACE_RE = re.compile(r"[^/\s:]{1,15}")
"""The kernel's rule for a link name (dev_valid_name): 1-15 bytes, no '/', ':' or space."""


def _ip(text: str) -> str | None:
    if "%" in text:
        return "an IPv6 scope id (%...) is not taken here"
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return "not an IP address"
    return None


def _interface_address(text: str) -> str | None:
    address, slash, prefix = text.partition("/")
    problem = _ip(address)
    if problem is not None:
        return problem
    if not slash:
        return None
    limit = 128 if ":" in address else 32
    if not prefix.isascii() or not prefix.isdigit() or int(prefix) > limit:
        return f"/{prefix} is not a prefix length of 0-{limit}"
    return None


def _network(text: str) -> str | None:
    problem = _interface_address(text)
    if problem is not None:
        return problem
    try:
        ipaddress.ip_network(text, strict=True)
    except ValueError:
        return "has host bits set"
    return None


def _hostname(text: str) -> str | None:
    return None if _HOSTNAME_RE.fullmatch(text) else "not a host name"


def _host(text: str) -> str | None:
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    return None if _ip(bare) is None or _hostname(bare) is None else \
        "neither an IP address nor a host name"


def integer(low: int, high: int) -> ValueType:
    def problem(text: str) -> str | None:
        if not text.isascii() or not text.isdigit():
            return "not a whole number"
        return None if low <= int(text) <= high else f"outside {low}-{high}"
    return ValueType(f"a number of {low}-{high}", problem)


def one_of(*words: str, fold: bool = False) -> ValueType:
    def problem(text: str) -> str | None:
        found = text.lower() if fold else text
        return None if found in words else "takes " + ", ".join(words)
    return ValueType("one of " + ", ".join(words), problem)


def either(first: ValueType, second: ValueType) -> ValueType:
    def problem(text: str) -> str | None:
        if first.check(text) is None or second.check(text) is None:
            return None
        return f"neither {first.name} nor {second.name}"
    return ValueType(f"{first.name} or {second.name}", problem, first.refused + second.refused)


def listed(item: ValueType, separator: str = ",", *, empty: bool = False) -> ValueType:
    """A `separator`-separated list of `item`s (spaces around items are skipped)."""
    def problem(text: str) -> str | None:
        parts = [part.strip() for part in text.split(separator)] if separator.strip() \
            else text.split()
        if not any(parts):
            return None if empty else "an empty list"
        for part in parts:
            found = item.check(part)
            if found is not None:
                return f"{part!r}: {found}"
        return None
    return ValueType(f"a list of {item.name}", problem, item.refused)


def pattern(name: str, regex: str) -> ValueType:
    compiled = re.compile(regex)
    return ValueType(name, lambda text: None if compiled.fullmatch(text) else "does not fit")


def _text(text: str) -> str | None:
    return None if text.strip() else "empty"


def checked(name: str, check: Callable[[str], str | None]) -> ValueType:
    return ValueType(name, check)


IP = ValueType("an IP address", _ip)
INTERFACE_ADDRESS = ValueType("an IP address with an optional /prefix", _interface_address)
NETWORK = ValueType("a network (address/prefix)", _network)
HOSTNAME = ValueType("a host name", _hostname)
HOST = ValueType("an IP address or a host name", _host)
PORT = integer(1, 65535)
INTERFACE = ValueType("an interface name", lambda text: None if _INTERFACE_RE.fullmatch(text)
                      and text not in (".", "..") else "not a link name the kernel takes")
TEXT = ValueType("text on one line", _text)
"""Any text on one line (a command, a description): `one_line` is its whole check."""
WORD = ValueType("one word", lambda text: None if text and not any(c.isspace() for c in text)
                 else "not one word")
