"""iwd as a backend: its D-Bus objects turned into zsn's model, and profile file names.

Known networks are iwd's, shared by every device; scan results are per station:
networks (by name and type, their best signal from GetOrderedNetworks) plus the
hidden access points (by address) iwd cannot name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from zsn.eap import iwd as eap_iwd
from zsn.errors import ZsnError
from zsn.system import files
from zsn.system import iwd as bus_iwd
from zsn.system.dbus import SystemBus
from zsn.system.host import Host
from zsn.wlan.model import KnownNetwork, Link, ScanEntry, Security

PROFILE_DIR = "/var/lib/iwd"
_PLAIN_NAME_RE = re.compile(r"[A-Za-z0-9_ -]+")
TYPES: dict[str, Security] = {"open": "open/OWE", "psk": "personal", "wep": "WEP",
                              "8021x": "enterprise"}
"""iwd's network types. "psk" is WPA2 or WPA3 Personal alike, "open" open or OWE (seen
in the lab: an OWE access point's network is ``NAME_open``): what the access point
offers is in its beacons (`zsn.wlan.elements`), read from the kernel's scan table;
without them zsn says only as much as iwd."""


def security_of_type(kind: str) -> Security:
    return TYPES.get(kind, "unknown")


def profile_path(ssid: bytes, kind: str) -> str:
    """Where iwd stores a known network: the SSID when it is plain, else ``=`` + hex."""
    text = ssid.decode("utf-8", errors="replace")
    plain = _PLAIN_NAME_RE.fullmatch(text) and text.encode() == ssid
    name = text if plain else "=" + ssid.hex()
    return f"{PROFILE_DIR}/{name}.{kind}"


@dataclass(frozen=True)
class IwdDevice:
    name: str
    path: str
    """The device/station object."""
    address: str | None
    powered: bool
    mode: str
    link: Link
    scan: tuple[ScanEntry, ...]


@dataclass(frozen=True)
class IwdState:
    devices: dict[str, IwdDevice]
    networks: tuple[KnownNetwork, ...]

    def device(self, name: str) -> IwdDevice | None:
        return self.devices.get(name)


def _ssid(name: Any) -> bytes:
    return str(name).encode("utf-8")


def known_networks(objects: bus_iwd.Objects, connected: set[str]) -> list[KnownNetwork]:
    found = []
    for path, interfaces in sorted(objects.items()):
        props = interfaces.get(bus_iwd.KNOWN_NETWORK)
        if props is None:
            continue
        ssid = _ssid(props.get("Name", ""))
        kind = str(props.get("Type", "psk"))
        found.append(KnownNetwork(
            ssid=ssid, backend="iwd", ref=path, security=security_of_type(kind),
            autoconnect=bool(props.get("AutoConnect", True)),
            hidden=bool(props.get("Hidden", False)), current=path in connected,
            path=profile_path(ssid, kind)))
    return found


def link_of(station: dict[str, Any], network: dict[str, Any] | None,
            diagnostics: dict[str, Any]) -> Link:
    state = str(station.get("State", "disconnected"))
    rate = diagnostics.get("TxBitrate", diagnostics.get("TxRate"))
    rssi = diagnostics.get("RSSI")
    frequency = diagnostics.get("Frequency")
    return Link(
        state=state, connected=state == "connected",
        ssid=_ssid(network["Name"]) if network and "Name" in network else None,
        bssid=str(diagnostics["ConnectedBss"]).lower() if "ConnectedBss" in diagnostics
        else None,
        signal_dbm=float(rssi) if rssi is not None else None,
        frequency=int(frequency) if frequency is not None else None,
        bitrate_kbps=int(rate) * 100 if rate is not None else None,
        security=str(diagnostics["Security"]) if "Security" in diagnostics else None)


@dataclass(frozen=True)
class IwdReplies:
    """What iwd answered, as plain data: its objects, and per station (by object path)
    its ordered networks, hidden access points and link diagnostics."""

    objects: bus_iwd.Objects
    ordered: dict[str, list[tuple[str, int]]]
    hidden: dict[str, list[tuple[str, int, str]]]
    diagnostics: dict[str, dict[str, Any]]


async def ask(bus: SystemBus) -> IwdReplies:
    objects = await bus_iwd.objects(bus)
    ordered: dict[str, list[tuple[str, int]]] = {}
    hidden: dict[str, list[tuple[str, int, str]]] = {}
    diagnostics: dict[str, dict[str, Any]] = {}
    for path, interfaces in sorted(objects.items()):
        station = interfaces.get(bus_iwd.STATION)
        if bus_iwd.DEVICE not in interfaces or station is None:
            continue
        if station.get("State") == "connected":
            diagnostics[path] = await bus_iwd.diagnostics(bus, path)
        ordered[path] = await bus_iwd.ordered_networks(bus, path)
        hidden[path] = await bus_iwd.hidden_access_points(bus, path)
    return IwdReplies(objects, ordered, hidden, diagnostics)


async def read(bus: SystemBus) -> IwdState:
    return state_of(await ask(bus))


def state_of(replies: IwdReplies) -> IwdState:
    """iwd's devices, their links and the networks they see, and its known networks."""
    objects = replies.objects
    connected_known = set()
    for interfaces in objects.values():
        network = interfaces.get(bus_iwd.NETWORK)
        if network and network.get("Connected") and network.get("KnownNetwork"):
            connected_known.add(str(network["KnownNetwork"]))
    devices: dict[str, IwdDevice] = {}
    for path, interfaces in sorted(objects.items()):
        device = interfaces.get(bus_iwd.DEVICE)
        if device is None:
            continue
        name = str(device.get("Name", ""))
        station = interfaces.get(bus_iwd.STATION)
        mode = str(device.get("Mode", "station"))
        if station is None:  # powered off, or in AP/ad-hoc mode
            devices[name] = IwdDevice(name, path, device.get("Address"),
                                      bool(device.get("Powered")), mode,
                                      Link("off" if not device.get("Powered") else mode, False),
                                      ())
            continue
        connected_path = station.get("ConnectedNetwork")
        network = objects.get(str(connected_path), {}).get(bus_iwd.NETWORK) \
            if connected_path else None
        link = link_of(station, network, replies.diagnostics.get(path, {}))
        scan: list[ScanEntry] = []
        for network_path, signal in replies.ordered.get(path, []):
            props = objects.get(network_path, {}).get(bus_iwd.NETWORK, {})
            scan.append(ScanEntry(
                ssid=_ssid(props.get("Name", "")), bssid=None, signal_dbm=signal / 100,
                frequency=None, security=security_of_type(str(props.get("Type", "open"))),
                known=bool(props.get("KnownNetwork")),
                connected=bool(props.get("Connected"))))
        for address, signal, kind in replies.hidden.get(path, []):
            scan.append(ScanEntry(ssid=None, bssid=address.lower(), signal_dbm=signal / 100,
                                  frequency=None, security=security_of_type(kind)))
        devices[name] = IwdDevice(name, path, device.get("Address"),
                                  bool(device.get("Powered")), mode, link, tuple(scan))
    return IwdState(devices, tuple(known_networks(objects, connected_known)))


def find_network(objects: bus_iwd.Objects, station: str, ssid: bytes) -> tuple[str, str] | None:
    """The (Network object, type) named `ssid` on `station`, if iwd sees it."""
    for path, interfaces in objects.items():
        props = interfaces.get(bus_iwd.NETWORK)
        if props and props.get("Device") == station and _ssid(props.get("Name")) == ssid:
            return path, str(props.get("Type", ""))
    return None


def station_of(objects: bus_iwd.Objects, name: str) -> str:
    """The station object of interface `name`; `ZsnError` when iwd has none for it."""
    station = next((path for path, ifaces in objects.items()
                    if ifaces.get(bus_iwd.DEVICE, {}).get("Name") == name
                    and bus_iwd.STATION in ifaces), None)
    if station is None:
        raise ZsnError(f"iwd has no station for {name} (powered off, or in another mode)")
    return station


def find_known(objects: bus_iwd.Objects, ssid: bytes) -> list[tuple[str, dict[str, Any]]]:
    return [(path, interfaces[bus_iwd.KNOWN_NETWORK]) for path, interfaces in objects.items()
            if bus_iwd.KNOWN_NETWORK in interfaces
            and _ssid(interfaces[bus_iwd.KNOWN_NETWORK].get("Name")) == ssid]


def with_eap(host: Host, network: KnownNetwork) -> KnownNetwork:
    """An enterprise known network with what its ``.8021x`` file says (method, identity,
    server check); as it was when the file cannot be read."""
    if network.security != "enterprise" or network.path is None:
        return network
    try:
        text = files.read_tracked(host.path(network.path)).text
        profile = eap_iwd.profile_of(eap_iwd.parse_settings(text, network.path))
    except ZsnError as exc:
        return replace(network, problem=f"profile not readable: {exc}")
    return replace(network, eap=profile)
