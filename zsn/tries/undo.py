"""Undo as data: what a tried change must put back, carried out by another process.

A change made with ``--try`` may be rolled back by its guardian after zsn has exited
(or been killed), so its undo cannot be a closure: it is a list of `Undo` records
(a kind and JSON-ready data) stored with the change. Each kind says a *state* to
restore ("eth0 has no master, is up, has MTU 1500"; "wg-quick@wg0 is inactive";
"/etc/x holds these bytes"), never a blind reverse operation, so restoring twice,
after a change that was only half applied (zsn killed part-way), or after someone
already put part of it back, does only what is still missing.

Every kind is carried out by a `Restorer` named in `RESTORERS` by module path: the
record names a kind, never code, and only these run. A restorer reports what it
did, what still differs from the state it was asked for, and the commands an admin
would run to finish by hand (`Outcome`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from zsn.errors import ZsnError
from zsn.system.host import Host


class Undo(NamedTuple):
    """One state to restore: `kind` (a key of `RESTORERS`) and its data (JSON-ready)."""

    kind: str
    data: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "data": dict(self.data)}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Undo:
        kind, data = value.get("kind"), value.get("data")
        if not isinstance(kind, str) or kind not in RESTORERS or not isinstance(data, dict):
            raise ZsnError(f"unknown undo record {kind!r}")
        return cls(kind, data)


@dataclass
class Outcome:
    """What carrying out one or more `Undo`s did and left."""

    done: list[str] = field(default_factory=list)
    """What was put back."""
    left: list[str] = field(default_factory=list)
    """What still differs from the state to restore (empty: all restored)."""
    commands: list[str] = field(default_factory=list)
    """Shell commands that would finish what is left, in order."""

    def extend(self, other: Outcome) -> None:
        self.done.extend(other.done)
        self.left.extend(other.left)
        self.commands.extend(other.commands)

    @property
    def complete(self) -> bool:
        return not self.left


class Restorer(Protocol):
    """Carries out one kind of `Undo`."""

    def describe(self, data: Mapping[str, Any]) -> str:
        """One line for a plan: what a rollback restores."""

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        """Put the state back; report what was done and left (errors included)."""

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        """Shell commands that restore the whole state by hand."""


RESTORERS: dict[str, str] = {
    "file": "zsn.tries.restores:FILE",
    "sysctl": "zsn.tries.restores:SYSCTL",
    "firewall": "zsn.tries.restores:FIREWALL",
    "unit": "zsn.tries.restores:UNIT",
    "routes": "zsn.tries.restores:ROUTES",
    "links": "zsn.links.checkpoint:RESTORER",
    "wg-quick": "zsn.wireguard.interfaces:WG_QUICK",
    "wg-peer": "zsn.wireguard.restore:PEER",
    "wg-route": "zsn.wireguard.restore:ROUTE",
    "wifi": "zsn.wlan.restore:RESTORER",
    "nft-table": "zsn.wireguard.acl:TABLE",
}
"""Every kind of undo and the object that carries it out (``module:attribute``)."""


def restorer(kind: str) -> Restorer:
    # Found by name, like the domains (`zsn.domains`): the restorers live in the domains,
    # which build their undos from this module.
    module_name, _, attribute = RESTORERS[kind].partition(":")
    found: Restorer = getattr(importlib.import_module(module_name), attribute)
    return found


def describe(undo: Undo) -> str:
    return restorer(undo.kind).describe(undo.data)


def perform(host: Host, undos: list[Undo]) -> Outcome:
    """Carry out `undos` in order; one that fails is reported (with the commands that
    would finish it) and the rest still run: restoring the session's path must not
    wait on a file that could not be put back."""
    outcome = Outcome()
    for undo in undos:
        handler = restorer(undo.kind)
        try:
            outcome.extend(handler.restore(host, undo.data))
        except ZsnError as exc:
            outcome.left.append(f"{handler.describe(undo.data)}: {exc}")
            outcome.commands.extend(handler.commands(undo.data))
        except OSError as exc:
            outcome.left.append(f"{handler.describe(undo.data)}: {exc.strerror or exc}")
            outcome.commands.extend(handler.commands(undo.data))
        except Exception as exc:  # noqa: BLE001 - a guardian reports it and goes on
            outcome.left.append(f"{handler.describe(undo.data)}: {type(exc).__name__}: "
                                f"{exc}")
            outcome.commands.extend(handler.commands(undo.data))
    return outcome
