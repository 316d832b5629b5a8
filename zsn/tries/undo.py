"""Undo as data: what a tried change must put back, carried out by another process.

A change made with ``--try`` may be rolled back by its guardian after zsn has exited
(or been killed), so its undo cannot be a closure: it is a list of `Undo` records
(a kind and its typed parameters, `zsn.tries.params`) stored with the change. Each
kind says a *state* to restore ("eth0 has no master, is up, has MTU 1500";
"wg-quick@wg0 is inactive"; "/etc/x holds these bytes"), never a blind reverse
operation, so restoring twice, after a change that was only half applied (zsn
killed part-way), or after someone already put part of it back, does only what is
still missing.

Every kind is carried out by a `Restorer` named in `RESTORERS` by module path: the
record names a kind and plain values, never code, a program or an option; the
restorer chooses what runs. A restorer reports what it did, what still differs
from the state it was asked for, and the commands an admin would run to finish by
hand (`Outcome`).

A try owns what it touches (`Restorer.objects`: ``link vsrv``, ``file /etc/x``)
until it is confirmed or rolled back, and its record keeps the state it left them
in (`observe`, by aspect: ``link vsrv mtu``). A rollback leaves alone every aspect
that changed since (someone's later change) unless forced, and says so.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from zsn.errors import ZsnError
from zsn.system.host import Host
from zsn.tries import params as checked


class Undo(NamedTuple):
    """One state to restore: `kind` (a key of `RESTORERS`) and its typed parameters
    (the restorer's `Restorer.params` class)."""

    kind: str
    params: Any

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "data": checked.as_data(self.params)}

    @classmethod
    def from_dict(cls, value: object, field: str = "undo") -> Undo:
        """An undo read back from a record: its kind one zsn knows, its data exactly
        that kind's parameters (`zsn.tries.params.read`), else a `RecordError`."""
        if not isinstance(value, dict) or set(value) != {"kind", "data"}:
            raise checked.RecordError(f"{field}: expected an object of kind and data")
        kind = value["kind"]
        if not isinstance(kind, str) or kind not in RESTORERS:
            raise checked.RecordError(f"{field}.kind: {str(kind)[:40]!r} is not a kind of "
                                      "undo zsn knows")
        return cls(kind, checked.read(restorer(kind).params, value["data"],
                                      f"{field}.data"))


@dataclass
class Outcome:
    """What carrying out one or more `Undo`s did and left."""

    done: list[str] = field(default_factory=list)
    """What was put back."""
    left: list[str] = field(default_factory=list)
    """What still differs from the state to restore (empty: all restored)."""
    commands: list[str] = field(default_factory=list)
    """Shell commands that would finish what is left, in order."""
    changed: list[str] = field(default_factory=list)
    """Aspects left alone because they changed since the try (`changed_since`)."""

    def extend(self, other: Outcome) -> None:
        self.done.extend(other.done)
        self.left.extend(other.left)
        self.commands.extend(other.commands)
        self.changed.extend(other.changed)

    @property
    def complete(self) -> bool:
        return not self.left


class Restorer(Protocol):
    """Carries out one kind of `Undo`."""

    params: type[Any]
    """The kind's parameters: a frozen dataclass whose ``__post_init__`` checks them."""

    def describe(self, params: Any) -> str:
        """One line for a plan: what a rollback restores."""

    def objects(self, params: Any) -> tuple[str, ...]:
        """What the undo restores, by name (``link vsrv``, ``file /etc/x``): what a
        pending try owns. Empty for a safety net that owns nothing (routes)."""

    def observe(self, host: Host, params: Any) -> dict[str, object]:
        """Each aspect the undo would restore (``link vsrv mtu``, named after one of
        `objects`) and its state now, JSON-ready: kept in the record once the try is
        applied, and compared at rollback."""

    def wanted(self, params: Any) -> dict[str, object]:
        """The state a rollback puts each aspect in, as `observe` says it (an aspect
        already so is never "changed since")."""

    def restore(self, host: Host, params: Any, leave: frozenset[str], force: bool) -> Outcome:
        """Put the state back, except the aspects in `leave` (changed since the try);
        report what was done and left (errors included). `force`: also what the
        restorer itself would keep as someone's edit (a file written since)."""

    def commands(self, host: Host, params: Any) -> list[str]:
        """Shell commands that restore the whole state by hand (paths as they are on
        this machine: under ``--root``, inside the tree)."""


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
    return restorer(undo.kind).describe(undo.params)


def objects(undos: Iterable[Undo]) -> set[str]:
    """What `undos` restore, by name: what a try made of them owns."""
    return {name for undo in undos for name in restorer(undo.kind).objects(undo.params)}


def observe(host: Host, undos: Iterable[Undo]) -> dict[str, object]:
    """The state now of every aspect `undos` restore (one that cannot be read is
    missing: a rollback then restores it as if unchanged)."""
    found: dict[str, object] = {}
    for undo in undos:
        try:
            found.update(restorer(undo.kind).observe(host, undo.params))
        except (ZsnError, OSError):
            continue
    return found


def wanted(undos: Iterable[Undo]) -> dict[str, object]:
    """The state a rollback of `undos` puts each aspect in."""
    found: dict[str, object] = {}
    for undo in undos:
        found.update(restorer(undo.kind).wanted(undo.params))
    return found


def changed_since(now: Mapping[str, object], undos: list[Undo],
                  left: Mapping[str, object]) -> dict[str, tuple[object, object]]:
    """The aspects whose state (`now`, `observe`) is neither the one the try left
    (`left`, observed when it was applied) nor the one the rollback wants: someone
    changed them since. (then, now) by aspect."""
    target = wanted(undos)
    return {aspect: (then, now[aspect]) for aspect, then in left.items()
            if aspect in now and now[aspect] != then and now[aspect] != target.get(aspect)}


def perform(host: Host, undos: list[Undo], leave: frozenset[str] = frozenset(),
            force: bool = False) -> Outcome:
    """Carry out `undos` in order, leaving the aspects in `leave` alone; one that fails
    is reported (with the commands that would finish it) and the rest still run:
    restoring the session's path must not wait on a file that could not be put back."""
    outcome = Outcome()
    for undo in undos:
        handler = restorer(undo.kind)
        try:
            outcome.extend(handler.restore(host, undo.params, leave, force))
        except ZsnError as exc:
            outcome.left.append(f"{handler.describe(undo.params)}: {exc}")
            outcome.commands.extend(handler.commands(host, undo.params))
        except OSError as exc:
            outcome.left.append(f"{handler.describe(undo.params)}: {exc.strerror or exc}")
            outcome.commands.extend(handler.commands(host, undo.params))
        except Exception as exc:  # noqa: BLE001 - a guardian reports it and goes on
            outcome.left.append(f"{handler.describe(undo.params)}: {type(exc).__name__}: "
                                f"{exc}")
            outcome.commands.extend(handler.commands(host, undo.params))
    return outcome
