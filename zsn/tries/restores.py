"""The restorers every domain shares: files, sysctls, firewall rules, systemd units,
routes (see `zsn.tries.undo` for what a restorer is).

Each one compares before it acts. A file is put back only when it still holds what
the change wrote (or was removed by it): one that changed since is someone's edit
and is left as it is, with the command that would restore the copy kept in the
change's folder. A rule, unit state or sysctl is set only when it differs.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zsn.errors import CommandError, ZsnError
from zsn.system import commands, files, netlink
from zsn.system.host import Host
from zsn.tries.undo import Outcome, Undo

FIREWALL_TIMEOUT = 10.0
UNIT_TIMEOUT = 60.0


_MAX_SETTING = 4096
"""A kernel setting's file is a line."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path) -> bytes | None:
    if not files.exists(path):
        return None
    return files.read_bytes(path, files.MAX_FILE_BYTES)


# -- files -----------------------------------------------------------------------


def file_undo(path: Path, before: files.FileSnapshot | None, after: str | None) -> Undo:
    """Put `path` back to `before` (absent: remove it) if it still holds `after`
    (None: the change removes it). `before`'s text is kept in the record (0600) and,
    by the store, as a copy for manual restores (``copy``)."""
    return Undo("file", {
        "path": str(path),
        "before": None if before is None else before.text,
        "mode": None if before is None else before.mode,
        "after": None if after is None else digest(after.encode("utf-8")),
        "copy": None,
    })


class FileRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        if data["before"] is None:
            return f"remove {data['path']} (the change creates it)"
        return f"put back {data['path']} as it was"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        path = Path(data["path"])
        current = _read_bytes(path)
        before: str | None = data["before"]
        outcome = Outcome()
        if before is not None and current == before.encode("utf-8"):
            return outcome  # as it was: never written, or put back already
        if before is None and current is None:
            return outcome
        written = data["after"]
        ours = (current is None and written is None) or (
            current is not None and written is not None and digest(current) == written)
        if not ours:
            outcome.left.append(f"{path} changed since the change was made: left as it is")
            outcome.commands.extend(self.commands(data))
            return outcome
        if before is None:
            files.remove(path, missing_ok=True)
            outcome.done.append(f"removed {path}")
            return outcome
        previous = files.read_tracked(path) if current is not None else None
        files.write_atomic(path, before, previous=previous, mode=data["mode"], backup=False)
        outcome.done.append(f"put back {path}")
        return outcome

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        path = shlex.quote(data["path"])
        if data["before"] is None:
            return [f"rm {path}"]
        if data.get("copy"):
            return [f"install -m {data['mode']:04o} {shlex.quote(data['copy'])} {path}"]
        return [f"# restore {path} from its backup"]


# -- sysctl ------------------------------------------------------------------------


def sysctl_undo(host: Host, key: str, value: str) -> Undo:
    """``key`` (``net.ipv4.ip_forward``) back to `value`."""
    return Undo("sysctl", {"key": key, "value": value,
                           "path": str(host.path("/proc/sys/" + key.replace(".", "/")))})


class SysctlRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        return f"set {data['key']} back to {data['value']}"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        path = Path(data["path"])
        outcome = Outcome()
        if files.read_text(path, _MAX_SETTING).strip() != data["value"]:
            files.write_setting(path, data["value"] + "\n")
            outcome.done.append(f"{data['key']} = {data['value']}")
        return outcome

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        return [f"sysctl -w {data['key']}={data['value']}"]


# -- firewall rules --------------------------------------------------------------


def firewall_undo(argv: list[str], present: bool) -> Undo:
    """The iptables rule `argv` (an ``-A`` command) present again, or gone."""
    return Undo("firewall", {"rule": list(argv), "present": present})


def _rule_with(rule: list[str], operation: str) -> list[str]:
    index = next(i for i, word in enumerate(rule) if word in ("-A", "-I", "-C", "-D"))
    return [*rule[:index], operation, *rule[index + 1:]]


class FirewallRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        verb = "add" if data["present"] else "remove"
        return f"{verb} the rule {' '.join(_rule_with(data['rule'], '-A')[1:])}"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        rule = list(data["rule"])
        outcome = Outcome()
        if self._present(rule) == data["present"]:
            return outcome
        commands.run(_rule_with(rule, "-A" if data["present"] else "-D"),
                     timeout=FIREWALL_TIMEOUT)
        outcome.done.append(self.describe(data).replace("the rule ", "", 1))
        return outcome

    @staticmethod
    def _present(rule: list[str]) -> bool:
        try:
            commands.run(_rule_with(rule, "-C"), timeout=FIREWALL_TIMEOUT)
        except CommandError:
            return False
        return True

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        return [shlex.join(_rule_with(data["rule"], "-A" if data["present"] else "-D"))]


# -- systemd units ---------------------------------------------------------------


def unit_undo(unit: str, active: bool) -> Undo:
    return Undo("unit", {"unit": unit, "active": active})


class UnitRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        return f"{'start' if data['active'] else 'stop'} {data['unit']}"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        from zsn.system.dbus import SystemBus, Systemd, run_sync

        unit, active = str(data["unit"]), bool(data["active"])

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

        outcome = Outcome()
        done = run_sync(host, act, timeout=15.0, deadline=UNIT_TIMEOUT + 30.0)
        if done:
            outcome.done.append(done.replace(": done", ""))
        return outcome

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        return [f"systemctl {'start' if data['active'] else 'stop'} {data['unit']}"]


# -- routes ------------------------------------------------------------------------


def routes_undo(routes: list[netlink.Route]) -> Undo:
    """`routes` there again (those that went; the others are left alone)."""
    return Undo("routes", {"routes": [route.as_dict() for route in routes]})


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
    def describe(self, data: Mapping[str, Any]) -> str:
        count = len(data["routes"])
        return f"add back the {count} route{'s' if count != 1 else ''} of the session's path " \
               "if they went"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        return restore_routes([netlink.Route.from_dict(item) for item in data["routes"]])

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        return [netlink.Route.from_dict(item).command() for item in data["routes"]]


FILE = FileRestorer()
SYSCTL = SysctlRestorer()
FIREWALL = FirewallRestorer()
UNIT = UnitRestorer()
ROUTES = RoutesRestorer()
