"""iwd over D-Bus (net.connman.iwd): its objects, station calls, and a passphrase agent.

iwd exports one object per adapter, device/station, network and known network;
`objects()` reads them all with one ObjectManager call (object paths are iwd's own
business: ``/net/connman/iwd/0/13``, so zsn matches interfaces, never paths).
Connecting to a network that needs a passphrase makes iwd call an *agent*:
`PassphraseAgent` is exported on zsn's connection and registered with iwd's
AgentManager for the length of one connect. It answers RequestPassphrase with the
passphrase given for that network, once; any other request is refused with
``net.connman.iwd.Agent.Error.Canceled`` (iwd then fails the connect, which is how
a rejected passphrase shows: iwd asks again).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from typing import Any

from dbus_fast import Variant

from zsn.system.dbus import PROPERTIES, BusError, SystemBus
from zsn.system.iwd_agent import AgentLog, PassphraseAgent
from zsn.system.limits import Deadline

IWD = "net.connman.iwd"
IWD_ROOT = "/net/connman/iwd"
DEVICE = "net.connman.iwd.Device"
STATION = "net.connman.iwd.Station"
NETWORK = "net.connman.iwd.Network"
KNOWN_NETWORK = "net.connman.iwd.KnownNetwork"
ADAPTER = "net.connman.iwd.Adapter"
AGENT_MANAGER = "net.connman.iwd.AgentManager"
DIAGNOSTIC = "net.connman.iwd.StationDiagnostic"
OBJECT_MANAGER = "org.freedesktop.DBus.ObjectManager"
CONNECT_TIMEOUT = 60.0
"""iwd cancels an unanswered agent request after 120 s; a connect ends well before."""
HIDDEN_SCANS = 3
"""Directed scans for a hidden network before zsn says it is not there. iwd's
ConnectHiddenNetwork probes for the name in one scan and answers NotFound when no
probe response came back during it: a response lost on a busy channel, or sent too
late by a busy access point, is not a network out of range (wpa_supplicant's connect
likewise waits for several scans without it)."""
_agent_numbers = itertools.count()

Objects = dict[str, dict[str, dict[str, Any]]]


def _plain(value: Any) -> Any:
    if isinstance(value, Variant):
        return _plain(value.value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


async def objects(bus: SystemBus) -> Objects:
    """Every iwd object: path -> interface -> properties (variants unwrapped)."""
    (managed,) = await bus.call(IWD, "/", OBJECT_MANAGER, "GetManagedObjects",
                                what="reading iwd's objects")
    return {str(path): {str(name): _plain(props) for name, props in interfaces.items()}
            for path, interfaces in managed.items()}


async def ordered_networks(bus: SystemBus, station: str) -> list[tuple[str, int]]:
    """(network object, signal in 100 * dBm), best first."""
    (networks,) = await bus.call(IWD, station, STATION, "GetOrderedNetworks",
                                 what="listing iwd's networks")
    return [(str(path), int(signal)) for path, signal in networks]


async def hidden_access_points(bus: SystemBus, station: str) -> list[tuple[str, int, str]]:
    """(address, signal in 100 * dBm, type) of access points that hide their name."""
    try:
        (points,) = await bus.call(IWD, station, STATION, "GetHiddenAccessPoints",
                                   what="listing iwd's hidden access points")
    except BusError as exc:
        if exc.name == "org.freedesktop.DBus.Error.UnknownMethod":
            return []  # experimental in iwd; older versions lack it
        raise
    return [(str(address), int(signal), str(kind)) for address, signal, kind in points]


async def diagnostics(bus: SystemBus, station: str) -> dict[str, Any]:
    """StationDiagnostic.GetDiagnostics: RSSI, Frequency, ConnectedBss, TxBitrate ...;
    empty when not connected or not supported."""
    try:
        (values,) = await bus.call(IWD, station, DIAGNOSTIC, "GetDiagnostics",
                                   what="reading iwd's link diagnostics")
    except BusError:
        return {}
    result: dict[str, Any] = _plain(values)
    return result


async def scan(bus: SystemBus, station: str, timeout: float) -> None:
    """Ask for a scan and wait until the station stops scanning (a running scan counts)."""
    try:
        await bus.call(IWD, station, STATION, "Scan", what="starting an iwd scan")
    except BusError as exc:
        if exc.name != "net.connman.iwd.Busy":
            raise
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    await asyncio.sleep(0.1)
    while loop.time() < deadline:
        (scanning,) = await bus.call(IWD, station, PROPERTIES, "Get", "ss",
                                     [STATION, "Scanning"], what="reading the scan state")
        if not _plain(scanning):
            return
        await asyncio.sleep(0.2)
    raise BusError(f"iwd still scanning after {timeout:g} s")


async def disconnect(bus: SystemBus, station: str) -> None:
    await bus.call(IWD, station, STATION, "Disconnect", what="disconnecting")


async def forget(bus: SystemBus, known_network: str) -> None:
    await bus.call(IWD, known_network, KNOWN_NETWORK, "Forget", what="forgetting the network")


async def set_autoconnect(bus: SystemBus, known_network: str, enabled: bool) -> None:
    await bus.call(IWD, known_network, PROPERTIES, "Set", "ssv",
                   [KNOWN_NETWORK, "AutoConnect", Variant("b", enabled)],
                   what="setting AutoConnect")


class ConnectError(BusError):
    """iwd failed a connect; `log` says what the agent was asked meanwhile."""

    def __init__(self, error: BusError, log: AgentLog) -> None:
        super().__init__(str(error), error.name)
        self.log = log


async def connect(bus: SystemBus, *, network: str | None, station: str,
                  hidden_ssid: bytes | None, passphrase: str | None,
                  timeout: float = CONNECT_TIMEOUT) -> AgentLog:
    """Connect through iwd with zsn's agent registered for this one connect.

    `network` is a Network object (Network.Connect), or None with `hidden_ssid` set
    (Station.ConnectHiddenNetwork; iwd names the network it finds
    ``STATION/<hex SSID>_<type>``). iwd answers the call once the connection is made
    or has failed; a failure raises `ConnectError` with iwd's error name and the
    agent's log.
    """
    log = AgentLog()
    path = f"/org/zsn/agent/p{os.getpid()}n{next(_agent_numbers)}"
    if network is not None:
        target = network

        def accepts(requested: str) -> bool:
            return requested == target
    else:
        prefix = f"{station}/{(hidden_ssid or b'').hex()}_"

        def accepts(requested: str) -> bool:
            return requested.startswith(prefix)

    agent = PassphraseAgent(accepts, passphrase, log)
    bus.bus.export(path, agent)
    try:
        await bus.call(IWD, IWD_ROOT, AGENT_MANAGER, "RegisterAgent", "o", [path],
                       what="registering zsn's passphrase agent with iwd")
        previous = bus.timeout
        bus.timeout = timeout
        try:
            if network is not None:
                await bus.call(IWD, network, NETWORK, "Connect", what="connecting")
            else:
                await bus.call(IWD, station, STATION, "ConnectHiddenNetwork", "s",
                               [(hidden_ssid or b"").decode("utf-8")],
                               what="connecting to the hidden network")
        except BusError as exc:
            raise ConnectError(exc, log) from exc
        finally:
            bus.timeout = previous
            with contextlib.suppress(BusError):  # iwd may have released it already
                await bus.call(IWD, IWD_ROOT, AGENT_MANAGER, "UnregisterAgent", "o", [path],
                               what="unregistering zsn's agent")
    finally:
        bus.bus.unexport(path, agent)
    return log


async def connect_hidden(bus: SystemBus, *, station: str, ssid: bytes, passphrase: str | None,
                         timeout: float = CONNECT_TIMEOUT) -> AgentLog:
    """Station.ConnectHiddenNetwork, asked again after a scan that did not find `ssid`
    (up to `HIDDEN_SCANS` scans, all within `timeout`); any other failure, or the last
    NotFound, is the `ConnectError`."""
    deadline = Deadline(timeout)
    scans = 1
    while True:
        try:
            return await connect(bus, network=None, station=station, hidden_ssid=ssid,
                                 passphrase=passphrase, timeout=deadline.remaining())
        except ConnectError as exc:
            if not (exc.name or "").endswith(".NotFound") or scans == HIDDEN_SCANS \
                    or deadline.remaining() <= 0:
                raise
        scans += 1
