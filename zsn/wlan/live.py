"""One snapshot of the machine's Wi-Fi: interfaces, their backend and link, scan results,
known networks of every backend. The pane, the export and the headless commands all
read through `read_wlan` (the pane and the export with the advice on it:
`zsn.wlan.lint.read_with_findings`).

Backends are detected per interface in this order: NetworkManager managing the
device (read only), iwd (``net.connman.iwd`` on the system bus has a device of
that name), wpa_supplicant (``/run/wpa_supplicant/IFACE`` answers), netctl
(``/etc/netctl`` exists; when netctl started the supplicant for one of its
profiles, the link is read through that supplicant's socket).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial

from zsn.errors import ZsnError
from zsn.system import files, nl80211, wireless
from zsn.system.dbus import SYSTEMD, SystemBus, Systemd
from zsn.system.host import Host
from zsn.system.iwd import IWD
from zsn.system.nl80211 import BssRecord
from zsn.system.wpa_ctrl import WpaControl, control_socket, supplicant_configs
from zsn.wlan import iwd as iwd_backend
from zsn.wlan import netctl, nm, wpa
from zsn.wlan.bss import in_range
from zsn.wlan.elements import advertised
from zsn.wlan.model import (
    DISCONNECTED,
    Backend,
    KnownNetwork,
    Rfkill,
    ScanEntry,
    WlanInterface,
    WlanSnapshot,
)

log = logging.getLogger("zsn.wlan")

READ_TIMEOUT = 5.0
READ_CONVERSATION = 10.0
"""A whole read of a Wi-Fi daemon (wpa_supplicant: status, the walk of every access
point, the known networks) ends within this."""
IWD_BINARIES = ("/usr/libexec/iwd", "/usr/lib/iwd/iwd")
WPA_BINARIES = ("/usr/sbin/wpa_supplicant", "/sbin/wpa_supplicant")


@dataclass
class _BusSide:
    nm: dict[str, nm.NmDevice] = field(default_factory=dict)
    iwd: iwd_backend.IwdState | None = None
    units: dict[str, bool] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _has_bus(host: Host) -> bool:
    socket_path = host.system_bus_socket
    return socket_path is None or files.exists(socket_path)


async def _unit_enabled(bus: SystemBus, unit: str) -> bool | None:
    state = await Systemd(bus).unit_state(unit)
    if not state.exists:
        return None
    return state.unit_file_state in ("enabled", "enabled-runtime", "static", "alias")


async def _read_bus(host: Host, names: list[str]) -> _BusSide:
    side = _BusSide()
    if not _has_bus(host):
        return side
    try:
        async with SystemBus(host, timeout=READ_TIMEOUT) as bus:
            try:
                side.nm = await nm.managed_devices(bus, names)
            except ZsnError as exc:
                side.errors.append(f"NetworkManager: {exc}")
            if await bus.name_has_owner(IWD):
                try:
                    side.iwd = await iwd_backend.read(bus)
                except ZsnError as exc:
                    side.errors.append(f"iwd: {exc}")
            if await bus.name_has_owner(SYSTEMD):
                units = ["iwd.service", *(f"wpa_supplicant@{name}.service" for name in names)]
                for unit in units:
                    with contextlib.suppress(ZsnError):
                        enabled = await _unit_enabled(bus, unit)
                        if enabled is not None:
                            side.units[unit] = enabled
    except ZsnError as exc:
        side.errors.append(str(exc))
    return side


async def _read_wpa(host: Host, name: str) -> wpa.WpaState | str | None:
    """The supplicant's state, an error message, or None when it does not run here."""
    path = control_socket(host, name)
    if not files.exists(path):
        return None
    try:
        async with WpaControl(path, timeout=READ_TIMEOUT, interface=name,
                              conversation=READ_CONVERSATION) as ctrl:
            return await wpa.read_state(ctrl, name)
    except ZsnError as exc:
        return str(exc)


def _addresses(host: Host) -> dict[str, tuple[str, ...]]:
    if not host.is_live:
        return {}
    from zsn.system.netlink import list_links

    with contextlib.suppress(ZsnError):
        return {name: link.addresses for name, link in list_links().items()}
    return {}


def start_hint(host: Host, name: str) -> str:
    """How to get a Wi-Fi daemon going on `name` when none runs."""
    if any(files.exists(host.path(binary)) for binary in IWD_BINARIES):
        return (f"no Wi-Fi daemon manages {name}: start iwd ('systemctl enable --now iwd'), "
                "then refresh")
    if any(files.exists(host.path(binary)) for binary in WPA_BINARIES):
        return (f"no Wi-Fi daemon manages {name}: start wpa_supplicant "
                f"('systemctl enable --now wpa_supplicant@{name}'; its config "
                f"/etc/wpa_supplicant/wpa_supplicant-{name}.conf needs "
                "ctrl_interface=/run/wpa_supplicant and update_config=1)")
    return f"no Wi-Fi daemon manages {name}: install iwd (or wpasupplicant) and start it"


def _kernel_scan(host: Host, name: str, errors: list[str]) -> list[BssRecord] | None:
    """The kernel's access points in range of `name` (None: not this machine's root, or
    the table could not be read; the reason joins `errors`)."""
    if not host.is_live:
        return None
    index = wireless.ifindex_of(host, name)
    if index is None:
        return None
    try:
        return nl80211.read_scan(index)
    except ZsnError as exc:
        errors.append(str(exc))
        return None


class _ScannedByParts:
    """What the kernel's table held as each part of an iwd scan ended, per interface.

    iwd flushes the table part by part (`zsn.system.nl80211.ScanWatch`), so a later
    reading lacks the access points of the earlier parts, which iwd still lists. An
    access point stays here while iwd lists its network (by name, or by address when
    hidden) and the kernel's table lacks it; a fresher reading replaces it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_interface: dict[str, dict[str, BssRecord]] = {}

    def add(self, name: str, records: list[BssRecord]) -> None:
        with self._lock:
            remembered = self._by_interface.setdefault(name, {})
            remembered.update((record.bssid, record) for record in records)

    def completed(self, name: str, records: list[BssRecord],
                  listed: tuple[ScanEntry, ...]) -> list[BssRecord]:
        """`records` (the table now) plus the remembered access points of networks in
        `listed` (iwd's networks in range) that the table no longer holds."""
        names = {entry.ssid for entry in listed if entry.ssid is not None}
        hidden = {entry.bssid for entry in listed if entry.ssid is None}
        current = {record.bssid for record in records}
        with self._lock:
            remembered = self._by_interface.get(name)
            if not remembered:
                return records
            kept = {bssid: record for bssid, record in remembered.items()
                    if bssid not in current and (
                        advertised(record.elements, record.capability).ssid in names
                        or bssid in hidden)}
            self._by_interface[name] = kept
        return records + list(kept.values())


_SCANNED_BY_PARTS = _ScannedByParts()


@contextlib.contextmanager
def watching_scans(host: Host, name: str) -> Iterator[None]:
    """Keep what the kernel's table holds as each part of a scan on `name` ends, for
    the readings after it (iwd's scans only: they flush part by part)."""
    with ScanFollower(host) as follower:
        follower.follow([name])
        yield


class ScanFollower:
    """Watches the kernel's scans on a set of interfaces, whoever starts them (zsn,
    iwd's own periodic scans, wpa_supplicant, `iw`): as each scan (or part of one) ends
    the table is kept for the readings after it (`_ScannedByParts`) and `ended(name)` is
    called, from the watch's thread, so a reader is told instead of polling. An idle
    watch costs no wake-up. Interfaces that are not this machine's (under --root) or
    that cannot be watched are left out (the readings then show what the table holds).
    """

    def __init__(self, host: Host, ended: Callable[[str], None] | None = None) -> None:
        self.host = host
        self.ended = ended
        self._watches: dict[str, tuple[int, nl80211.ScanWatch]] = {}

    def follow(self, names: Iterable[str]) -> None:
        """Watch exactly `names` from now on (the ones watched already go on)."""
        wanted = {name: index for name in names
                  if (index := wireless.ifindex_of(self.host, name)
                      if self.host.is_live else None) is not None}
        for name, (index, watch) in list(self._watches.items()):
            if wanted.get(name) != index:  # gone, or another interface of that name now
                watch.close()
                del self._watches[name]
        for name, index in wanted.items():
            if name not in self._watches:
                watch = nl80211.ScanWatch(index, partial(self._seen, name))
                if watch.error is not None:
                    log.debug("%s", watch.error)
                self._watches[name] = (index, watch)

    def _seen(self, name: str, records: list[BssRecord]) -> None:
        _SCANNED_BY_PARTS.add(name, records)
        if self.ended is not None:
            self.ended(name)

    def close(self) -> None:
        for _, watch in self._watches.values():
            watch.close()
        self._watches.clear()

    def __enter__(self) -> ScanFollower:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _rfkill(host: Host, phy: str | None) -> Rfkill | None:
    if phy is None:
        return None
    state = wireless.rfkill_state(host, phy)
    return Rfkill(*state) if state else None


async def _gather(host: Host, names: list[str]) -> tuple[_BusSide, dict[str, object]]:
    bus_task = asyncio.ensure_future(_read_bus(host, names))
    states = await asyncio.gather(*(_read_wpa(host, name) for name in names))
    return await bus_task, dict(zip(names, states, strict=True))


def read_wlan(host: Host) -> WlanSnapshot:
    names = wireless.wireless_interfaces(host)
    bus_side, wpa_states = asyncio.run(_gather(host, names))
    if bus_side.iwd is not None:  # iwd may see devices sysfs under this root does not show
        names = sorted(set(names) | set(bus_side.iwd.devices))
    addresses = _addresses(host)
    configs = supplicant_configs(host)
    profiles, _problems = netctl.read_profiles(host)
    networks: list[KnownNetwork] = [iwd_backend.with_eap(host, net) for net in
                                    bus_side.iwd.networks] if bus_side.iwd else []
    errors = list(bus_side.errors)
    interfaces: list[WlanInterface] = []
    for name in names:
        interfaces.append(_interface(host, name, bus_side, wpa_states.get(name),
                                     addresses.get(name, ()), configs.get(name), networks))
    for profile in profiles:
        known = netctl.known_network(host, profile)
        if known is None:
            continue
        current = any(each.backend == "netctl" and each.name == profile.interface
                      and each.link.connected and each.link.ssid == known.ssid
                      for each in interfaces)
        networks.append(replace(known, current=current))
    if any(each.backend == "networkmanager" for each in interfaces):
        try:
            networks.extend(nm.read_keyfiles(host))
        except ZsnError as exc:
            errors.append(f"NetworkManager's profiles: {exc}")
    errors += [f"{each.name}: {message}" for each in interfaces for message in each.errors]
    return WlanSnapshot(tuple(interfaces), tuple(networks), time.monotonic(), tuple(errors))


def _interface(host: Host, name: str, bus_side: _BusSide, wpa_state: object,
               addresses: tuple[str, ...], config: str | None,
               networks: list[KnownNetwork]) -> WlanInterface:
    phy = wireless.phy_of(host, name)
    base = WlanInterface(name=name, backend=None, mac=wireless.mac_of(host, name), phy=phy,
                         addresses=addresses, rfkill=_rfkill(host, phy), config_path=config)
    errors: list[str] = []
    supplicant = wpa_state if isinstance(wpa_state, wpa.WpaState) else None
    if isinstance(wpa_state, str):
        errors.append(wpa_state)
    iwd_device = bus_side.iwd.device(name) if bus_side.iwd else None
    managers: list[Backend] = []
    if name in bus_side.nm:
        managers.append("networkmanager")
    if iwd_device is not None:
        managers.append("iwd")
    netctl_owned = netctl.started_supplicant(host, name)
    if wpa_state is not None and not netctl_owned:
        managers.append("wpa_supplicant")
    if netctl_owned or (not managers and netctl.installed(host)):
        managers.append("netctl")
    if not managers:
        return replace(base, hint=start_hint(host, name), errors=tuple(errors))
    backend = managers[0]
    # NetworkManager drives wpa_supplicant or iwd itself: those are not rivals then.
    others = tuple(managers[1:]) if backend != "networkmanager" else ()
    result = replace(base, backend=backend, also_managed_by=others)
    if backend == "networkmanager":
        device = bus_side.nm[name]
        records = _kernel_scan(host, name, errors)
        return replace(result, link=device.link, read_only=device.hint, errors=tuple(errors),
                       scan=in_range(records, (), device.link) if records is not None else ())
    if backend == "iwd" and iwd_device is not None:
        records = _kernel_scan(host, name, errors)
        scan = iwd_device.scan if records is None else in_range(
            _SCANNED_BY_PARTS.completed(name, records, iwd_device.scan),
            iwd_device.scan, iwd_device.link,
            known=[n.ssid for n in networks if n.backend == "iwd"])
        return replace(result, link=iwd_device.link, scan=scan,
                       backend_unit="iwd.service",
                       backend_unit_enabled=bus_side.units.get("iwd.service"),
                       errors=tuple(errors))
    if supplicant is not None:
        result = replace(result, link=supplicant.link, scan=supplicant.scan,
                         saves_config=supplicant.update_config)
        if backend == "wpa_supplicant":
            networks.extend(supplicant.networks)
            unit = f"wpa_supplicant@{name}.service"
            result = replace(result, backend_unit=unit if unit in bus_side.units else None,
                             backend_unit_enabled=bus_side.units.get(unit))
    elif backend == "netctl":
        result = replace(result, link=DISCONNECTED,
                         hint=f"netctl has no profile running on {name}: scanning needs one "
                              "started (or a wpa_supplicant); connect to a known network")
    return replace(result, errors=tuple(errors))

