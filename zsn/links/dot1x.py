"""802.1X on a wired port (``zsn link 8021x IFACE ...``): wpa_supplicant's wired driver,
its per-interface unit where systemd runs, its state read from the control socket.

The config is ``/etc/wpa_supplicant/wpa_supplicant-wired-IFACE.conf`` (what Debian's
``wpa_supplicant-wired@IFACE.service`` reads: ``-Dwired``), rendered from the request
and read back. A supplicant that runs already re-reads it (RECONFIGURE) while zsn
listens on its control socket. Otherwise, with systemd the unit is enabled and started
(its exchange may end before zsn listens: then STATUS says how); without systemd zsn
starts ``wpa_supplicant -B -Dwired`` itself (it forks and leaves the session) on a
runtime copy whose network waits to be enabled, and enables it once it listens, so
every event is seen. A failure says why, from the supplicant's events
(`zsn.eap.events`), and undoes what the command wrote.

The port's state (authenticated, held, connecting) is read from ``STATUS``: hostapd's
``driver=wired`` never blocks a port, so traffic passing says nothing about 802.1X.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zsn.eap import certs
from zsn.eap.events import EapAttempt
from zsn.eap.request import EapRequest
from zsn.eap.supplicant import wired
from zsn.errors import ValidationError, ZsnError
from zsn.plan import FileEdit, LiveStep, Plan, Step
from zsn.system import files, wireless
from zsn.system.commands import run
from zsn.system.dbus import BusError, SystemBus, Systemd, run_sync
from zsn.system.files import PRIVATE_FILE_MODE, read_tracked
from zsn.system.host import Host
from zsn.system.wpa_ctrl import WpaControl, WpaMonitor, control_socket, parse_event

CONFIG = "/etc/wpa_supplicant/wpa_supplicant-wired-{}.conf"
PIDFILE = "/run/zsn/wpa_supplicant-wired-{}.pid"
RUNTIME_CONFIG = "/run/zsn/wpa_supplicant-wired-{}.conf"
"""The config of a wpa_supplicant zsn starts itself (no systemd): the same network with
``disabled=1``, enabled over the control socket once zsn listens to its events."""
EAP_TIMEOUT = 30.0
_NAME_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")


def unit_name(interface: str) -> str:
    return f"wpa_supplicant-wired@{interface}.service"


@dataclass(frozen=True)
class PortState:
    """What wpa_supplicant says about the port (its STATUS)."""

    interface: str
    pae_state: str | None
    """AUTHENTICATED, HELD, CONNECTING, DISCONNECTED ... (the supplicant PAE state)."""
    port_status: str | None
    """Authorized or Unauthorized."""
    eap_state: str | None
    method: str | None

    @property
    def authenticated(self) -> bool:
        return self.pae_state == "AUTHENTICATED"


def parse_status(interface: str, reply: str) -> PortState:
    values = dict(line.split("=", 1) for line in reply.splitlines() if "=" in line)
    return PortState(interface, values.get("Supplicant PAE state"),
                     values.get("suppPortStatus"), values.get("EAP state"),
                     values.get("selectedMethod"))


def port_line(port: PortState | str) -> str:
    """One line for `zsn link show` and the pane: the port's 802.1X state."""
    if isinstance(port, str):
        return f"802.1X: state unknown ({port})"
    if port.authenticated:
        return f"802.1X: authenticated ({port.port_status or '?'}, {port.method or '?'})"
    if port.pae_state == "HELD":
        return ("802.1X: held (authentication failed; wpa_supplicant waits before trying "
                f"again), port {port.port_status or '?'}")
    return f"802.1X: {(port.pae_state or '?').lower()}, port {port.port_status or '?'}"


def port_to_dict(port: PortState | str) -> dict[str, object]:
    if isinstance(port, str):
        return {"error": port}
    return {"pae_state": port.pae_state, "port_status": port.port_status,
            "eap_state": port.eap_state, "method": port.method,
            "authenticated": port.authenticated}


async def _status(host: Host, interface: str) -> PortState:
    async with WpaControl(control_socket(host, interface), interface=interface) as ctrl:
        return parse_status(interface, await ctrl.request("STATUS"))


def read_ports(host: Host, names: list[str]) -> dict[str, PortState | str]:
    """The 802.1X state of each wired interface among `names` a supplicant runs on (or
    why it could not be read)."""
    found: dict[str, PortState | str] = {}
    for name in names:
        if wireless.is_wireless(host, name) or not files.exists(control_socket(host, name)):
            continue
        try:
            found[name] = asyncio.run(_status(host, name))
        except ZsnError as exc:
            found[name] = str(exc)
    return found


async def _authenticate(host: Host, interface: str, timeout: float,
                        commands: tuple[str, ...], unit: str | None) -> PortState:
    """Listen, send `commands` (re-read the config, enable the network), and wait for
    the EAP outcome; `ZsnError` with the reason. With no command (a daemon systemd has
    just started) the exchange may be over before zsn listens: STATUS says how it ended."""
    path = control_socket(host, interface)
    async with WpaMonitor(path, interface=interface, conversation=timeout + 10) as monitor, \
            WpaControl(path, interface=interface, conversation=timeout + 10) as ctrl:
        if not commands:
            state = parse_status(interface, await ctrl.request("STATUS"))
            if state.authenticated:
                return state
            if state.pae_state == "HELD":
                raise ZsnError(f"{interface}: 802.1X failed before zsn could listen (the "
                               f"port is held); 'journalctl -u {unit}' has wpa_supplicant's "
                               "reason")
        for command in commands:
            reply = (await ctrl.request(command)).strip()
            if reply != "OK":
                raise ZsnError(f"wpa_supplicant on {interface} refused {command}: "
                               f"{reply[:40] or 'no answer'}")
        attempt = EapAttempt()
        deadline = asyncio.get_running_loop().time() + timeout
        async for datagram in monitor.events(deadline):
            event = parse_event(datagram)
            if event is None or not event.name.startswith("CTRL-EVENT-EAP-"):
                continue
            attempt.feed(event)
            if attempt.failed:
                raise ZsnError(f"{interface}: 802.1X failed: {attempt.reason}")
            if attempt.succeeded:
                return parse_status(interface, await ctrl.request("STATUS"))
        state = parse_status(interface, await ctrl.request("STATUS"))
        if state.authenticated:
            return state
        raise ZsnError(f"{interface}: 802.1X failed: {attempt.reason} (after {timeout:g} s, "
                       f"state {state.pae_state or '?'})")


def _systemd(host: Host) -> bool:
    socket_path = host.system_bus_socket
    if socket_path is not None and not files.exists(socket_path):
        return False
    try:
        return bool(run_sync(host, lambda bus: bus.name_has_owner("org.freedesktop.systemd1"),
                             timeout=5.0))
    except ZsnError:
        return False


def _until(done: Callable[[], bool], timeout: float) -> bool:
    """Whether `done` came true within `timeout` seconds (asked every 50 ms)."""
    async def wait() -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not done():
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True
    return asyncio.run(wait())


def _wait_for_socket(host: Host, interface: str, timeout: float = 10.0) -> None:
    if not _until(lambda: files.exists(control_socket(host, interface)), timeout):
        raise ZsnError(f"wpa_supplicant on {interface} opened no control socket "
                       f"within {timeout:g} s")


def _stop_started(host: Host, pidfile: Path) -> None:
    """Stop the wpa_supplicant zsn started, and wait until it is gone (its control socket
    with it: nothing of the attempt stays). The pid is read back from its pid file, so
    it is signalled only when that process is a wpa_supplicant (a stale or planted
    number is not another program's)."""
    text = files.read_text(pidfile).strip()
    if not text.isdigit():
        return
    comm = host.path(f"/proc/{text}/comm")

    def running() -> bool:
        try:
            return files.exists(comm) and files.read_text(comm).strip() == "wpa_supplicant"
        except (OSError, ZsnError):
            return False  # gone between the two looks

    if not running():
        return
    os.kill(int(text), signal.SIGTERM)
    if not _until(lambda: not running(), 10.0):  # it deinitialises the port first
        os.kill(int(text), signal.SIGKILL)
        _until(lambda: not running(), 5.0)


def _start_steps(host: Host, interface: str, with_systemd: bool, timeout: float) -> LiveStep:
    unit = unit_name(interface)
    running = files.exists(control_socket(host, interface))
    pidfile = host.path(PIDFILE.format(interface))
    if with_systemd:  # the unit reads the config in /etc; re-read when it runs already
        commands: tuple[str, ...] = ("RECONFIGURE",) if running else ()
    else:  # zsn's runtime copy, its network enabled once zsn listens
        commands = ("RECONFIGURE", "ENABLE_NETWORK 0") if running else ("ENABLE_NETWORK 0",)

    def start() -> None:
        if with_systemd and not running:
            async def act(bus: SystemBus) -> None:
                systemd = Systemd(bus)
                await systemd.enable(unit)
                job = await systemd.start(unit, timeout=30.0)
                if not job.ok:
                    raise ZsnError(f"{job.describe()}: 'journalctl -u {unit}' says why")
            try:
                run_sync(host, act, timeout=15.0, deadline=60.0)
            except BusError as exc:
                raise ZsnError(f"systemd did not start {unit}: {exc}") from None
        elif not running:
            files.make_dirs(pidfile.parent)
            run(["wpa_supplicant", "-B", "-Dwired", "-i", interface, "-c",
                 str(host.path(RUNTIME_CONFIG.format(interface))), "-P", str(pidfile)],
                timeout=15.0)
        try:
            _wait_for_socket(host, interface)
            asyncio.run(_authenticate(host, interface, timeout, commands, unit))
        except BaseException:
            stop()  # the daemon zsn started must not stay with a config undone
            raise

    def stop() -> None:
        if running:
            return
        if with_systemd:
            async def act(bus: SystemBus) -> None:
                systemd = Systemd(bus)
                await systemd.stop(unit, timeout=30.0)
                await systemd.disable(unit)
            run_sync(host, act, timeout=15.0, deadline=60.0)
        elif files.exists(pidfile):
            _stop_started(host, pidfile)

    how = f"wpa_supplicant on {interface}: re-read its config" if running else \
        f"systemd: enable and start {unit}" if with_systemd else \
        f"start wpa_supplicant -B -Dwired -i {interface} (no systemd here)"
    return LiveStep(f"{how}, wait for 802.1X ({timeout:g} s)", start, stop, restore=None)


def plan_8021x(host: Host, interface: str, request: EapRequest,
               timeout: float = EAP_TIMEOUT) -> Plan:
    """802.1X on the wired port `interface` as `request` says."""
    if not _NAME_RE.fullmatch(interface):
        raise ValidationError(f"{interface!r} is not an interface name", field="name")
    if not wireless.interface_exists(host, interface):
        raise ValidationError(f"no interface {interface}", field="name")
    if wireless.is_wireless(host, interface):
        raise ValidationError(f"{interface} is wireless: use zsn wifi connect SSID --eap ...",
                              field="name")
    copies = certs.copy_plan(host, f"wired-{interface}", request)
    system_path = CONFIG.format(interface)
    path = host.path(system_path)
    previous = read_tracked(path) if files.exists(path) else None
    text, intent = wired(request, copies.paths)
    steps: list[Step] = [*copies.edits, FileEdit(path, previous, text, PRIVATE_FILE_MODE,
                                                   new_dir=True, intent=intent)]
    with_systemd = _systemd(host)
    if not with_systemd:
        runtime = host.path(RUNTIME_CONFIG.format(interface))
        runtime_text, runtime_intent = wired(request, copies.paths, disabled=True)
        steps.append(FileEdit(runtime, read_tracked(runtime) if files.exists(runtime) else None,
                              runtime_text, PRIVATE_FILE_MODE, private_dir=True, backup=False,
                              intent=runtime_intent))
    steps.append(_start_steps(host, interface, with_systemd, timeout))
    plan = Plan(f"802.1X on {interface} ({request.title} as {request.identity})", steps,
                notes=[f"the port's state: zsn link show {interface} (wpa_supplicant's "
                       "STATUS)"])
    plan.touches = frozenset({interface})
    return plan
