"""The restorers every domain shares: files, sysctls, firewall rules, systemd units,
routes (see `zsn.tries.undo` for what a restorer is).

Each one compares before it acts. A file is put back only when it still holds what
the change wrote (or was removed by it): one that changed since is someone's edit
and is left as it is, with the command that would restore the copy kept in the
change's folder. A rule, unit state or sysctl is set only when it differs.

Each kind's parameters are plain checked values (`zsn.tries.params`): a file undo
names a system path (found under ``--root`` inside the tree), a firewall undo the
parts of one rule, from which the restorer builds the ``iptables`` or ``ip6tables``
command itself.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from zsn.errors import CommandError, ZsnError
from zsn.system import commands, files, netlink
from zsn.system.host import Host
from zsn.tries import params as checked
from zsn.tries.store import STORE_DIR
from zsn.tries.undo import Outcome, Undo

FIREWALL_TIMEOUT = 10.0
UNIT_TIMEOUT = 60.0

_MAX_SETTING = 4096
"""A kernel setting's file is a line."""
_SYSCTL_KEY_RE = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path) -> bytes | None:
    if not files.exists(path):
        return None
    return files.read_bytes(path, files.MAX_FILE_BYTES)


# -- files -----------------------------------------------------------------------


@dataclass(frozen=True)
class FileUndo:
    """`path` back to `before` (None: removed) if it still holds what the change wrote
    (`after`, a SHA-256; None: the change removes it)."""

    path: str
    """The system path (``/etc/x``; under ``--root`` inside the tree)."""
    before: str | None
    mode: int | None
    after: str | None
    copy: str | None = None
    """The copy of `before` kept in the change's folder, for a restore by hand."""

    def __post_init__(self) -> None:
        checked.system_path(self.path)
        if self.mode is not None:
            checked.whole(self.mode, 0, 0o7777, "mode")
        if self.after is not None:
            checked.sha256(self.after, "after")
        if self.copy is not None and not checked.system_path(self.copy, "copy").startswith(
                STORE_DIR + "/"):
            raise ValueError(f"copy {self.copy[:80]!r} is not in {STORE_DIR}")


def file_undo(host: Host, path: Path, before: files.FileSnapshot | None,
              after: str | None) -> Undo:
    """Put `path` (as `Host.path` spells it) back to `before` (absent: remove it) if it
    still holds `after` (None: the change removes it). `before`'s text is kept in the
    record (0600) and, by the store, as a copy for manual restores (``copy``)."""
    return Undo("file", FileUndo(
        path=host.system_path(path), before=None if before is None else before.text,
        mode=None if before is None else before.mode,
        after=None if after is None else digest(after.encode("utf-8"))))


class FileRestorer:
    params = FileUndo

    def describe(self, params: FileUndo) -> str:
        if params.before is None:
            return f"remove {params.path} (the change creates it)"
        return f"put back {params.path} as it was"

    def objects(self, params: FileUndo) -> tuple[str, ...]:
        return (f"file {params.path}",)

    def observe(self, host: Host, params: FileUndo) -> dict[str, object]:
        current = _read_bytes(host.path(params.path))
        return {f"file {params.path}": None if current is None else digest(current)}

    def wanted(self, params: FileUndo) -> dict[str, object]:
        return {f"file {params.path}": None if params.before is None
                else digest(params.before.encode("utf-8"))}

    def restore(self, host: Host, params: FileUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        outcome = Outcome()
        if f"file {params.path}" in leave:  # written since the try: how to restore it
            outcome.commands.extend(self.commands(host, params))
            return outcome
        path = host.path(params.path)
        current = _read_bytes(path)
        before = params.before
        if before is not None and current == before.encode("utf-8"):
            return outcome  # as it was: never written, or put back already
        if before is None and current is None:
            return outcome
        written = params.after
        ours = (current is None and written is None) or (
            current is not None and written is not None and digest(current) == written)
        if not ours and not force:
            outcome.left.append(f"{path} changed since the change was made: left as it is")
            outcome.commands.extend(self.commands(host, params))
            return outcome
        if before is None:
            files.remove(path, missing_ok=True)
            outcome.done.append(f"removed {path}")
            return outcome
        previous = files.read_tracked(path) if current is not None else None
        files.write_atomic(path, before, previous=previous, mode=params.mode, backup=False)
        outcome.done.append(f"put back {path}")
        return outcome

    def commands(self, host: Host, params: FileUndo) -> list[str]:
        path = shlex.quote(str(host.path(params.path)))
        if params.before is None:
            return [f"rm {path}"]
        if params.copy is not None and params.mode is not None:
            return [f"install -m {params.mode:04o} {shlex.quote(str(host.path(params.copy)))} "
                    f"{path}"]
        return [f"# restore {path} from its backup"]


# -- sysctl ------------------------------------------------------------------------


@dataclass(frozen=True)
class SysctlUndo:
    """Kernel setting `key` (``net.ipv4.ip_forward``) back to `value`."""

    key: str
    value: str

    def __post_init__(self) -> None:
        if _SYSCTL_KEY_RE.fullmatch(self.key) is None:
            raise ValueError(f"key {self.key[:60]!r} is not a kernel setting's name")
        checked.one_line(self.value, "value", _MAX_SETTING)

    def path(self, host: Host) -> Path:
        return host.path("/proc/sys/" + self.key.replace(".", "/"))


def sysctl_undo(key: str, value: str) -> Undo:
    """``key`` (``net.ipv4.ip_forward``) back to `value`."""
    return Undo("sysctl", SysctlUndo(key, value))


class SysctlRestorer:
    params = SysctlUndo

    def describe(self, params: SysctlUndo) -> str:
        return f"set {params.key} back to {params.value}"

    def objects(self, params: SysctlUndo) -> tuple[str, ...]:
        return (f"sysctl {params.key}",)

    def observe(self, host: Host, params: SysctlUndo) -> dict[str, object]:
        return {f"sysctl {params.key}": files.read_text(params.path(host),
                                                        _MAX_SETTING).strip()}

    def wanted(self, params: SysctlUndo) -> dict[str, object]:
        return {f"sysctl {params.key}": params.value}

    def restore(self, host: Host, params: SysctlUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        outcome = Outcome()
        if f"sysctl {params.key}" in leave:
            return outcome
        path = params.path(host)
        if files.read_text(path, _MAX_SETTING).strip() != params.value:
            files.write_setting(path, params.value + "\n")
            outcome.done.append(f"{params.key} = {params.value}")
        return outcome

    def commands(self, host: Host, params: SysctlUndo) -> list[str]:
        return [f"sysctl -w {params.key}={shlex.quote(params.value)}"]


# -- firewall rules --------------------------------------------------------------

FIREWALL_TOOLS = {4: "iptables", 6: "ip6tables"}
FIREWALL_TABLES = ("filter", "nat")
FIREWALL_CHAINS = ("INPUT", "FORWARD", "OUTPUT", "PREROUTING", "POSTROUTING")
FIREWALL_TARGETS = ("ACCEPT", "DROP", "MASQUERADE")
CONNTRACK_STATES = ("NEW", "ESTABLISHED", "RELATED", "INVALID", "UNTRACKED", "SNAT", "DNAT")


@dataclass(frozen=True)
class FirewallUndo:
    """One iptables rule present again, or gone: its parts, never its command (the
    restorer picks ``iptables`` or ``ip6tables`` by `family`)."""

    family: int
    table: str
    chain: str
    target: str
    present: bool
    source: str | None = None
    in_interface: str | None = None
    out_interface: str | None = None
    conntrack: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        checked.choice(str(self.family), tuple(map(str, FIREWALL_TOOLS)), "family")
        checked.choice(self.table, FIREWALL_TABLES, "table")
        checked.choice(self.chain, FIREWALL_CHAINS, "chain")
        checked.choice(self.target, FIREWALL_TARGETS, "target")
        if self.source is not None:
            checked.network(self.source, "source")
        for name in (self.in_interface, self.out_interface):
            if name is not None:
                checked.interface(name)
        for state in self.conntrack:
            checked.choice(state, CONNTRACK_STATES, "conntrack state")

    def argv(self, operation: str) -> list[str]:
        """The command that checks (``-C``), adds (``-A``) or deletes (``-D``) it."""
        words = [FIREWALL_TOOLS[self.family]]
        if self.table != "filter":
            words += ["-t", self.table]
        words += [operation, self.chain]
        if self.source is not None:
            words += ["-s", self.source]
        if self.in_interface is not None:
            words += ["-i", self.in_interface]
        if self.out_interface is not None:
            words += ["-o", self.out_interface]
        if self.conntrack:
            words += ["-m", "conntrack", "--ctstate", ",".join(self.conntrack)]
        return [*words, "-j", self.target]

    @property
    def name(self) -> str:
        return f"firewall {' '.join(self.argv('-A')[1:])}"


_OPTIONS = {"-s": "source", "-i": "in_interface", "-o": "out_interface", "-j": "target"}


def firewall_undo(argv: list[str], present: bool) -> Undo:
    """The iptables rule `argv` (``iptables [-t TABLE] -A CHAIN ...``, as zsn writes its
    rules) present again, or gone; a rule zsn does not write is a ValueError."""
    tool, *words = argv
    family = next(number for number, name in FIREWALL_TOOLS.items() if name == tool)
    values: dict[str, object] = {"table": "filter"}
    index = 0
    while index < len(words):
        word = words[index]
        if word == "-t":
            values["table"] = words[index + 1]
        elif word in ("-A", "-I"):
            values["chain"] = words[index + 1]
        elif word in _OPTIONS:
            values[_OPTIONS[word]] = words[index + 1]
        elif word == "-m" and words[index + 1:index + 3] == ["conntrack", "--ctstate"]:
            values["conntrack"] = tuple(words[index + 3].split(","))
            index += 2
        else:
            raise ValueError(f"not a rule zsn writes: {shlex.join(argv)}")
        index += 2
    return Undo("firewall", FirewallUndo(family=family, present=present,
                                         **values))  # type: ignore[arg-type]


class FirewallRestorer:
    params = FirewallUndo

    def describe(self, params: FirewallUndo) -> str:
        verb = "add" if params.present else "remove"
        return f"{verb} the rule {' '.join(params.argv('-A')[1:])}"

    def objects(self, params: FirewallUndo) -> tuple[str, ...]:
        return (params.name,)

    def observe(self, host: Host, params: FirewallUndo) -> dict[str, object]:
        return {params.name: self._present(params)}

    def wanted(self, params: FirewallUndo) -> dict[str, object]:
        return {params.name: params.present}

    def restore(self, host: Host, params: FirewallUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        outcome = Outcome()
        if params.name in leave or self._present(params) == params.present:
            return outcome
        commands.run(params.argv("-A" if params.present else "-D"), timeout=FIREWALL_TIMEOUT)
        outcome.done.append(self.describe(params).replace("the rule ", "", 1))
        return outcome

    @staticmethod
    def _present(params: FirewallUndo) -> bool:
        try:
            commands.run(params.argv("-C"), timeout=FIREWALL_TIMEOUT)
        except CommandError:
            return False
        return True

    def commands(self, host: Host, params: FirewallUndo) -> list[str]:
        return [shlex.join(params.argv("-A" if params.present else "-D"))]


# -- systemd units ---------------------------------------------------------------


@dataclass(frozen=True)
class UnitUndo:
    unit: str
    active: bool

    def __post_init__(self) -> None:
        checked.unit(self.unit)


def unit_undo(unit: str, active: bool) -> Undo:
    return Undo("unit", UnitUndo(unit, active))


class UnitRestorer:
    params = UnitUndo

    def describe(self, params: UnitUndo) -> str:
        return f"{'start' if params.active else 'stop'} {params.unit}"

    def objects(self, params: UnitUndo) -> tuple[str, ...]:
        return (f"unit {params.unit}",)

    def observe(self, host: Host, params: UnitUndo) -> dict[str, object]:
        from zsn.system.dbus import SystemBus, Systemd, run_sync

        async def running(bus: SystemBus) -> bool:
            state = await Systemd(bus).unit_state(params.unit)
            return state.active_state in ("active", "activating", "reloading")

        return {f"unit {params.unit}": run_sync(host, running, timeout=15.0)}

    def wanted(self, params: UnitUndo) -> dict[str, object]:
        return {f"unit {params.unit}": params.active}

    def restore(self, host: Host, params: UnitUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        from zsn.system.dbus import SystemBus, Systemd, run_sync

        outcome = Outcome()
        if f"unit {params.unit}" in leave:
            return outcome
        unit, active = params.unit, params.active

        async def act(bus: SystemBus) -> str | None:
            systemd = Systemd(bus)
            state = await systemd.unit_state(unit)
            running = state.active_state in ("active", "activating", "reloading")
            if running == active:
                return None
            job = await (systemd.start(unit, timeout=UNIT_TIMEOUT) if active
                         else systemd.stop(unit, timeout=UNIT_TIMEOUT))
            if not job.ok:
                raise ZsnError(job.describe())
            return job.describe()

        done = run_sync(host, act, timeout=15.0, deadline=UNIT_TIMEOUT + 30.0)
        if done:
            outcome.done.append(done.replace(": done", ""))
        return outcome

    def commands(self, host: Host, params: UnitUndo) -> list[str]:
        return [f"systemctl {'start' if params.active else 'stop'} {params.unit}"]


# -- routes ------------------------------------------------------------------------


@dataclass(frozen=True)
class RouteData:
    """A route as a record keeps it (`zsn.system.netlink.Route`'s fields, checked)."""

    family: int
    table: int
    dst: str | None
    dst_len: int
    gateway: str | None
    oif: str | None
    priority: int | None
    proto: int
    scope: int
    type: int
    prefsrc: str | None
    expires: int | None
    metrics: dict[str, int] | None = None

    def __post_init__(self) -> None:
        checked.choice(str(self.family), (str(socket.AF_INET), str(socket.AF_INET6)),
                       "family")
        checked.whole(self.table, 0, 2**32 - 1, "table")
        checked.whole(self.dst_len, 0, 128, "prefix length")
        for number, what in ((self.proto, "protocol"), (self.scope, "scope"),
                             (self.type, "type")):
            checked.whole(number, 0, 255, what)
        for address, what in ((self.dst, "destination"), (self.gateway, "gateway"),
                              (self.prefsrc, "source")):
            if address is not None:
                checked.ip(address, what)
        if self.oif is not None:
            checked.interface(self.oif)
        if self.priority is not None:
            checked.whole(self.priority, 0, 2**32 - 1, "metric")
        if self.expires is not None:
            checked.whole(self.expires, 0, 2**32 - 1, "expiry")
        for name, value in (self.metrics or {}).items():
            if re.fullmatch(r"RTAX_[A-Z_]{1,20}", name) is None:
                raise ValueError(f"route metric {name[:30]!r} is not one the kernel has")
            checked.whole(value, 0, 2**32 - 1, name)

    @classmethod
    def of(cls, route: netlink.Route) -> RouteData:
        return cls(**route._asdict())

    def route(self) -> netlink.Route:
        return netlink.Route(**{name: getattr(self, name) for name in netlink.Route._fields})


@dataclass(frozen=True)
class RoutesUndo:
    routes: tuple[RouteData, ...]


def routes_undo(routes: list[netlink.Route]) -> Undo:
    """`routes` there again (those that went; the others are left alone)."""
    return Undo("routes", RoutesUndo(tuple(RouteData.of(route) for route in routes)))


def restore_routes(wanted: list[netlink.Route]) -> Outcome:
    """Add back those of `wanted` the kernel no longer has (a link that went down or
    was deleted took them with it)."""
    outcome = Outcome()
    if not wanted:
        return outcome
    present = {route.key for route in netlink.read_routes()}
    for route in wanted:
        if route.key in present:
            continue
        try:
            netlink.add_route(route)
        except ZsnError as exc:
            outcome.left.append(f"route {route.command().split(' add ', 1)[1]}: {exc}")
            outcome.commands.append(route.command())
            continue
        outcome.done.append(f"route {route.command().split(' add ', 1)[1]}")
    return outcome


class RoutesRestorer:
    """The routes out through the session's path: a safety net, owning nothing (a try
    never refuses another change for them)."""

    params = RoutesUndo

    def describe(self, params: RoutesUndo) -> str:
        count = len(params.routes)
        return f"add back the {count} route{'s' if count != 1 else ''} of the session's path " \
               "if they went"

    def objects(self, params: RoutesUndo) -> tuple[str, ...]:
        return ()

    def observe(self, host: Host, params: RoutesUndo) -> dict[str, object]:
        return {}

    def wanted(self, params: RoutesUndo) -> dict[str, object]:
        return {}

    def restore(self, host: Host, params: RoutesUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        return restore_routes([item.route() for item in params.routes])

    def commands(self, host: Host, params: RoutesUndo) -> list[str]:
        return [item.route().command() for item in params.routes]


FILE = FileRestorer()
SYSCTL = SysctlRestorer()
FIREWALL = FirewallRestorer()
UNIT = UnitRestorer()
ROUTES = RoutesRestorer()
