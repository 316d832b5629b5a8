"""Input checks for link actions: one specific reason, before anything changes."""

from __future__ import annotations

import re

from zsn.errors import ValidationError, about_input
from zsn.links import bonding
from zsn.terminal import is_safe, safe

IFNAMSIZ = 16
MIN_MTU = 68
"""The IPv4 minimum; the kernel checks each device's own range as well."""
MAX_MTU = 65535
_NAME_RE = re.compile(r"[^\s/:]+")


def interface_name(name: str, what: str = "interface name") -> str:
    """A name the kernel accepts (dev_valid_name): 1-15 bytes, not ``.``/``..``, no
    ``/``, ``:`` or whitespace; and, stricter than the kernel, no control or invisible
    character (`zsn.terminal`), which no config file or screen could show as typed."""
    if not name:
        raise ValidationError(f"{what} is empty")
    size = len(name.encode("utf-8"))
    if size >= IFNAMSIZ:
        raise ValidationError(f"{what} {name!r} is {size} bytes; the kernel allows at most "
                              f"{IFNAMSIZ - 1}")
    if name in (".", ".."):
        raise ValidationError(f"{what} {name!r} is not allowed")
    if _NAME_RE.fullmatch(name) is None:
        bad = next(char for char in name if char.isspace() or char in "/:")
        shown = {"/": "'/'", ":": "':'"}.get(bad, "whitespace")
        raise ValidationError(f"{what} {name!r} contains {shown}")
    if not is_safe(name):
        bad = next(char for char in name if not is_safe(char))
        raise ValidationError(f"{what} {safe(name)} contains the control or invisible "
                              f"character {safe(bad)}")
    return name


def name_list(text: str, what: str) -> list[str]:
    """``eth1,eth2`` as names, each checked, none twice; empty entries refused."""
    names = [part.strip() for part in text.split(",")]
    if any(not part for part in names):
        raise ValidationError(f"empty name in {text!r} (use a,b,c)", field=what)
    with about_input(what):
        for name in names:
            interface_name(name, what.rstrip("s"))
    seen = set()
    for name in names:
        if name in seen:
            raise ValidationError(f"{name} is named twice", field=what)
        seen.add(name)
    return names


def vlan_id(value: int) -> int:
    if not 1 <= value <= 4094:
        raise ValidationError(f"VLAN id {value} is outside 1-4094 (0 and 4095 are reserved)")
    return value


def mtu(value: int) -> int:
    if not MIN_MTU <= value <= MAX_MTU:
        raise ValidationError(f"MTU {value} is outside {MIN_MTU}-{MAX_MTU}")
    return value


def miimon(value: int) -> int:
    if not 0 <= value <= 60_000:
        raise ValidationError(f"miimon {value} ms is outside 0-60000")
    return value


def choice(value: str, table: dict[str, int], what: str) -> str:
    if value not in table:
        raise ValidationError(f"{what} {value!r} is not one of {', '.join(table)}")
    return value


def bond_mode(value: str) -> str:
    return choice(value, bonding.MODES, "bond mode")


def xmit_hash_policy(value: str) -> str:
    return choice(value, bonding.XMIT_HASH_POLICIES, "xmit hash policy")


def lacp_rate(value: str) -> str:
    return choice(value, bonding.LACP_RATES, "LACP rate")


def whole_number(text: str) -> int | None:
    """A number typed in a form or given as an option: empty is None, else digits only
    (a space or a sign is refused, as a typo would be)."""
    if not text:
        return None
    if not re.fullmatch(r"\d{1,6}", text):
        raise ValidationError(f"not a whole number: {text!r}")
    return int(text)
