"""The system bus: systemd (org.freedesktop.systemd1) and systemd-resolved (resolve1).

asyncio throughout, on dbus-fast's low-level `Message` API (no introspection round
trips). One connection per `SystemBus` context, made to `host.system_bus_address`,
so `--root DIR` talks to DIR/run/dbus/system_bus_socket. Callers in threads (TUI
workers, the exporter) use `run_sync`, which runs a coroutine on a private loop.
D-Bus errors become `BusError` with a message fit for a user.

Bounds (see `zsn.system.limits`): each call has `timeout`, a `run_sync`
conversation an overall deadline, and dbus-fast refuses auth lines past its limit
and messages past the spec's 128 MiB; a bus that trickles, floods or talks
garbage becomes a `BusError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.errors import DBusFastError

from zsn.errors import ZsnError
from zsn.system.host import Host

SYSTEMD = "org.freedesktop.systemd1"
SYSTEMD_PATH = "/org/freedesktop/systemd1"
SYSTEMD_MANAGER = "org.freedesktop.systemd1.Manager"
SYSTEMD_UNIT = "org.freedesktop.systemd1.Unit"
SYSTEMD_SERVICE = "org.freedesktop.systemd1.Service"
RESOLVE1 = "org.freedesktop.resolve1"
RESOLVE1_PATH = "/org/freedesktop/resolve1"
RESOLVE1_MANAGER = "org.freedesktop.resolve1.Manager"
RESOLVE1_LINK = "org.freedesktop.resolve1.Link"
PROPERTIES = "org.freedesktop.DBus.Properties"
DEFAULT_TIMEOUT = 10.0
"""Seconds one call (or the connection) may take."""
DEFAULT_DEADLINE = 30.0
"""Seconds one `run_sync` conversation may take, every call included."""
JOB_TIMEOUT = 90.0

T = TypeVar("T")


class BusError(ZsnError):
    """A D-Bus call failed or was refused; `name` is the D-Bus error name, if any."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message)
        self.name = name


_FRIENDLY = {
    "org.freedesktop.DBus.Error.AccessDenied": "access denied (root needed?)",
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired":
        "not authorised (polkit would have to ask; run as root)",
    "org.freedesktop.DBus.Error.ServiceUnknown": "service is not running",
    "org.freedesktop.DBus.Error.NoReply": "no reply in time",
    "org.freedesktop.DBus.Error.UnknownObject": "no such object",
}


def _connect_error(address: str, exc: BaseException, timeout: float) -> BaseException:
    """What to tell a user when connecting to the bus at `address` failed with `exc`."""
    reasons: tuple[tuple[type[BaseException], str], ...] = (
        (FileNotFoundError, "socket not found (is dbus running?)"),
        (ConnectionRefusedError, "connection refused"),
        (PermissionError, "permission denied"),
        (TimeoutError, f"no answer within {timeout:g} s"),
        # a refused handshake, an oversized or malformed message (dbus-fast caps
        # auth lines and messages at the spec's 128 MiB)
        (DBusFastError, "not a working D-Bus"),
    )
    for kind, reason in reasons:
        if isinstance(exc, kind):
            detail = f" ({exc})" if kind is DBusFastError else ""
            return BusError(f"system bus {address}: {reason}{detail}")
    if isinstance(exc, OSError):
        return BusError(f"system bus {address}: {exc.strerror or exc}")
    return exc


class SystemBus:
    """An open connection to a host's system bus: ``async with SystemBus(host) as bus``."""

    def __init__(self, host: Host, *, timeout: float = DEFAULT_TIMEOUT):
        self.host = host
        self.timeout = timeout
        self._bus: MessageBus | None = None

    async def __aenter__(self) -> SystemBus:
        address = self.host.system_bus_address
        bus = MessageBus(bus_address=address, bus_type=BusType.SYSTEM)
        try:
            await asyncio.wait_for(bus.connect(), self.timeout)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                bus.disconnect()  # a half-made connection must not leak its socket
            raise _connect_error(address, exc, self.timeout) from exc
        self._bus = bus
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bus is not None:
            self._bus.disconnect()
            self._bus = None

    @property
    def bus(self) -> MessageBus:
        if self._bus is None:
            raise BusError("system bus is not connected")
        return self._bus

    async def call(
        self, destination: str, path: str, interface: str, member: str,
        signature: str = "", body: Iterable[Any] = (), *, what: str | None = None,
    ) -> list[Any]:
        """Call a method; return the reply body or raise `BusError` naming `what` failed."""
        message = Message(
            destination=destination, path=path, interface=interface, member=member,
            signature=signature, body=list(body),
        )
        try:
            reply = await asyncio.wait_for(self.bus.call(message), self.timeout)
        except TimeoutError as exc:
            raise BusError(f"{what or member}: no answer within {self.timeout:g} s") from exc
        except (OSError, EOFError) as exc:
            raise BusError(f"{what or member}: system bus connection lost") from exc
        except DBusFastError as exc:
            raise BusError(f"{what or member}: bad message from the system bus ({exc})") \
                from exc
        if reply is None:
            raise BusError(f"{what or member}: no reply")
        if reply.message_type == MessageType.ERROR:
            detail = str(reply.body[0]) if reply.body else reply.error_name or "error"
            friendly = _FRIENDLY.get(reply.error_name or "")
            text = f"{detail} ({friendly})" if friendly else detail
            raise BusError(f"{what or member}: {text}", reply.error_name)
        return list(reply.body)

    async def get_all(self, destination: str, path: str, interface: str) -> dict[str, Any]:
        (props,) = await self.call(
            destination, path, PROPERTIES, "GetAll", "s", [interface],
            what=f"reading {interface.rsplit('.', 1)[-1]} properties",
        )
        return {key: value.value if isinstance(value, Variant) else value
                for key, value in props.items()}

    async def name_has_owner(self, name: str) -> bool:
        """Whether a service holds `name` on this bus (it is running)."""
        (owned,) = await self.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "NameHasOwner", "s", [name],
                                   what=f"asking the bus whether {name} runs")
        return bool(owned)

    async def add_match(self, rule: str) -> None:
        await self.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                        "org.freedesktop.DBus", "AddMatch", "s", [rule])


def run_sync(host: Host, action: Callable[[SystemBus], Awaitable[T]],
             *, timeout: float = DEFAULT_TIMEOUT, deadline: float | None = None) -> T:
    """Open the bus, run `action(bus)` and close it, from code that has no event loop.

    `timeout` bounds each call; `deadline` (default `DEFAULT_DEADLINE`) the whole
    conversation, so a bus that answers every call just in time cannot add up to
    minutes.
    """
    overall = DEFAULT_DEADLINE if deadline is None else deadline

    async def main() -> T:
        async with SystemBus(host, timeout=timeout) as bus:
            return await action(bus)

    async def bounded() -> T:
        try:
            return await asyncio.wait_for(main(), overall)
        except TimeoutError:
            raise BusError(f"system bus {host.system_bus_address}: no complete answer "
                           f"within {overall:g} s") from None

    return asyncio.run(bounded())


# systemd -------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitState:
    name: str
    load_state: str
    """loaded, not-found, bad-setting, error, masked."""
    active_state: str
    sub_state: str
    unit_file_state: str
    """enabled, disabled, static, ... or "" when there is no unit file."""
    main_pid: int
    active_since_us: int
    """ActiveEnterTimestamp, microseconds since the epoch; 0 when never active."""
    exec_main_status: int
    result: str
    """The service's Result: success, exit-code, signal, ..."""

    @property
    def exists(self) -> bool:
        return self.load_state != "not-found"


@dataclass(frozen=True)
class JobResult:
    unit: str
    verb: str
    result: str
    """done, failed, canceled, timeout, dependency, skipped (systemd's JobRemoved)."""

    @property
    def ok(self) -> bool:
        return self.result == "done"

    def describe(self) -> str:
        if self.ok:
            return f"{self.verb} {self.unit}: done"
        return f"{self.verb} {self.unit}: {self.result} (see the unit's log)"


@dataclass(frozen=True)
class UnitFileChange:
    kind: str
    """symlink or unlink."""
    path: str
    target: str


class Systemd:
    """The systemd manager on a bus."""

    def __init__(self, bus: SystemBus):
        self.bus = bus

    async def _manager(self, member: str, signature: str, body: list[Any],
                       what: str) -> list[Any]:
        return await self.bus.call(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER, member, signature,
                                   body, what=what)

    async def unit_state(self, name: str) -> UnitState:
        """The unit's states; `load_state` is "not-found" when no such unit exists."""
        (path,) = await self._manager("LoadUnit", "s", [name], f"looking up {name}")
        unit = await self.bus.get_all(SYSTEMD, path, SYSTEMD_UNIT)
        service: dict[str, Any] = {}
        if name.endswith(".service") and unit.get("LoadState") == "loaded":
            service = await self.bus.get_all(SYSTEMD, path, SYSTEMD_SERVICE)
        return UnitState(
            name=name,
            load_state=str(unit.get("LoadState", "")),
            active_state=str(unit.get("ActiveState", "")),
            sub_state=str(unit.get("SubState", "")),
            unit_file_state=str(unit.get("UnitFileState", "")),
            main_pid=int(service.get("MainPID", 0)),
            active_since_us=int(unit.get("ActiveEnterTimestamp", 0)),
            exec_main_status=int(service.get("ExecMainStatus", 0)),
            result=str(service.get("Result", "")),
        )

    async def _job(self, member: str, verb: str, name: str, timeout: float) -> JobResult:
        removed: dict[str, str] = {}
        done = asyncio.Event()

        def on_message(message: Message) -> None:
            if (message.message_type == MessageType.SIGNAL
                    and message.interface == SYSTEMD_MANAGER
                    and message.member == "JobRemoved"):
                _id, job, _unit, result = message.body
                removed[str(job)] = str(result)
                done.set()

        # Subscribe before starting the job: it may finish before StartUnit's reply.
        await self.bus.add_match(
            f"type='signal',sender='{SYSTEMD}',interface='{SYSTEMD_MANAGER}',"
            "member='JobRemoved'"
        )
        await self._manager("Subscribe", "", [], "subscribing to systemd")
        self.bus.bus.add_message_handler(on_message)
        try:
            (job,) = await self._manager(member, "ss", [name, "replace"], f"{verb} {name}")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while job not in removed:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise BusError(f"{verb} {name}: job still running after {timeout:g} s")
                done.clear()
                try:
                    await asyncio.wait_for(done.wait(), remaining)
                except TimeoutError:
                    continue
            return JobResult(name, verb, removed[job])
        finally:
            self.bus.bus.remove_message_handler(on_message)

    async def start(self, name: str, *, timeout: float = JOB_TIMEOUT) -> JobResult:
        return await self._job("StartUnit", "start", name, timeout)

    async def stop(self, name: str, *, timeout: float = JOB_TIMEOUT) -> JobResult:
        return await self._job("StopUnit", "stop", name, timeout)

    async def restart(self, name: str, *, timeout: float = JOB_TIMEOUT) -> JobResult:
        return await self._job("RestartUnit", "restart", name, timeout)

    async def enable(self, name: str) -> list[UnitFileChange]:
        """Enable the unit file (persistently) and reload, as `systemctl enable` does."""
        _carries, changes = await self._manager(
            "EnableUnitFiles", "asbb", [[name], False, False], f"enable {name}")
        await self.reload()
        return [UnitFileChange(*change) for change in changes]

    async def disable(self, name: str) -> list[UnitFileChange]:
        (changes,) = await self._manager(
            "DisableUnitFiles", "asb", [[name], False], f"disable {name}")
        await self.reload()
        return [UnitFileChange(*change) for change in changes]

    async def reload(self) -> None:
        await self._manager("Reload", "", [], "reloading systemd")


def control_unit(host: Host, unit: str, verb: str, *, missing: str,
                 timeout: float = JOB_TIMEOUT) -> JobResult:
    """Start, stop or restart `unit` over D-Bus and wait for systemd's job result.

    `missing` is the hint given when the unit does not exist (e.g. "is openvpn
    installed?").
    """

    async def act(bus: SystemBus) -> JobResult:
        systemd = Systemd(bus)
        state = await systemd.unit_state(unit)
        if not state.exists:
            raise ZsnError(f"{unit}: no such unit on this system ({missing})")
        job = {"start": systemd.start, "stop": systemd.stop, "restart": systemd.restart}[verb]
        return await job(unit, timeout=timeout)

    return run_sync(host, act, timeout=15.0, deadline=timeout + DEFAULT_DEADLINE)


# systemd-resolved ------------------------------------------------------------------


@dataclass(frozen=True)
class LinkDns:
    ifindex: int
    servers: tuple[str, ...]
    domains: tuple[str, ...]
    """Search domains as written; routing-only ones with a leading ``~``."""
    default_route: bool | None


class Resolved:
    """systemd-resolved's per-link settings, by interface index (read only: zsn's hook
    sets them from inside the tunnel's unit, with resolvectl)."""

    def __init__(self, bus: SystemBus):
        self.bus = bus

    async def link(self, ifindex: int) -> LinkDns:
        (path,) = await self.bus.call(RESOLVE1, RESOLVE1_PATH, RESOLVE1_MANAGER, "GetLink",
                                      "i", [ifindex], what=f"resolved link {ifindex}")
        props = await self.bus.get_all(RESOLVE1, path, RESOLVE1_LINK)
        servers = tuple(
            str(ipaddress.ip_address(bytes(raw))) for _family, raw in props.get("DNS", [])
        )
        domains = tuple(
            ("~" if routing else "") + domain for domain, routing in props.get("Domains", [])
        )
        default_route = props.get("DefaultRoute")
        return LinkDns(ifindex, servers, domains,
                       bool(default_route) if default_route is not None else None)
