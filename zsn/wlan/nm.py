"""NetworkManager, read only: whether it manages an interface, and what it shows there.

NetworkManager drives wpa_supplicant (over D-Bus) or iwd itself, so a running
supplicant or iwd does not mean the radio is free: when NM manages the device
(``Managed`` true and a state other than unmanaged), zsn shows it, changes nothing,
and names the nmcli command to use instead.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from zsn.system.dbus import BusError, SystemBus
from zsn.system.networkmanager import NM, NM_DEVICE, device_path
from zsn.wlan.model import Link

WIRELESS = "org.freedesktop.NetworkManager.Device.Wireless"
ACCESS_POINT = "org.freedesktop.NetworkManager.AccessPoint"
UNMANAGED = 10
ACTIVATED = 100
STATES = {0: "unknown", 10: "unmanaged", 20: "unavailable", 30: "disconnected",
          40: "prepare", 50: "config", 60: "need-auth", 70: "ip-config", 80: "ip-check",
          90: "secondaries", 100: "activated", 110: "deactivating", 120: "failed"}


@dataclass(frozen=True)
class NmDevice:
    interface: str
    state: int
    link: Link

    @property
    def hint(self) -> str:
        name = shlex.quote(self.interface)
        return (f"NetworkManager manages {self.interface}: zsn shows it read-only; use "
                f"'nmcli device wifi connect SSID --ask ifname {name}' "
                f"or 'nmcli device set {name} managed no' to hand it to another backend")


async def managed_devices(bus: SystemBus, interfaces: list[str]) -> dict[str, NmDevice]:
    """The interfaces among `interfaces` NetworkManager manages (empty when it is not
    running)."""
    if not await bus.name_has_owner(NM):
        return {}
    found: dict[str, NmDevice] = {}
    for interface in interfaces:
        try:
            path = await device_path(bus, interface)
        except BusError:
            continue  # NM would not say: treated as not knowing the device
        if path is None:
            continue
        device = await bus.get_all(NM, path, NM_DEVICE)
        state = int(device.get("State", 0))
        if not device.get("Managed") or state == UNMANAGED:
            continue
        found[interface] = NmDevice(interface, state, await _link(bus, path, state))
    return found


async def _link(bus: SystemBus, path: str, state: int) -> Link:
    word = STATES.get(state, str(state))
    wireless = await bus.get_all(NM, path, WIRELESS)
    access_point = wireless.get("ActiveAccessPoint")
    if state != ACTIVATED or not access_point or access_point == "/":
        return Link(word, False)
    point = await bus.get_all(NM, str(access_point), ACCESS_POINT)
    strength = point.get("Strength")
    bitrate = wireless.get("Bitrate")
    return Link(
        state=word, connected=True, ssid=bytes(point.get("Ssid", b"")) or None,
        bssid=str(point.get("HwAddress", "")).lower() or None,
        # NM reports percent (-90..-20 dBm mapped onto 0..100); map it back.
        signal_dbm=-90 + int(strength) * 0.7 if strength is not None else None,
        frequency=int(point["Frequency"]) if "Frequency" in point else None,
        bitrate_kbps=int(bitrate) if bitrate else None)
