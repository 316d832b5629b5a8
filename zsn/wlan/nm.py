"""NetworkManager, read only: whether it manages an interface, and what it shows there.

NetworkManager drives wpa_supplicant (over D-Bus) or iwd itself, so a running
supplicant or iwd does not mean the radio is free: when NM manages the device
(``Managed`` true and a state other than unmanaged), zsn shows it, changes nothing,
and names the nmcli command to use instead.
"""

from __future__ import annotations

import configparser
import re
import shlex
import stat
from dataclasses import dataclass
from os import stat_result
from typing import NamedTuple

from zsn.eap.profile import TLS_METHODS, EapProfile
from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.dbus import BusError, SystemBus
from zsn.system.host import Host
from zsn.system.networkmanager import NM, NM_DEVICE, device_path
from zsn.wlan.model import KnownNetwork, Link

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


KEYFILE_DIR = "/etc/NetworkManager/system-connections"


def keyfile_profile(text: str) -> tuple[bytes | None, EapProfile | None]:
    """A NetworkManager keyfile's SSID (``[wifi] ssid=``) and its ``[802-1x]`` settings
    (nm-settings-keyfile(5): eap=peap;, identity=, phase2-auth=, ca-cert=,
    domain-suffix-match=, domain-match=, altsubject-matches=)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error:
        return None, None
    ssid_text = parser.get("wifi", "ssid", fallback=None)
    ssid = ssid_text.encode() if ssid_text else None
    if not parser.has_section("802-1x"):
        return ssid, None
    section = parser["802-1x"]
    methods = [m.strip().upper() for m in section.get("eap", "").split(";") if m.strip()]
    method = next((m for m in methods if m in TLS_METHODS), methods[0] if methods else "?")
    name = next((section[key] for key in ("domain-match", "domain-suffix-match",
                                          "altsubject-matches") if section.get(key)), None)
    ca = section.get("ca-cert") or section.get("ca-path") or None
    return ssid, EapProfile(method=method, identity=section.get("identity") or None,
                            phase2=(section.get("phase2-auth") or
                                    section.get("phase2-autheap") or "").upper() or None,
                            ca_cert=ca, server_domain=name)


_MKSTEMP_SUFFIX = re.compile(r"[A-Za-z0-9]{6}")


def keyfile_name_ignored(name: str) -> bool:
    """Whether NetworkManager passes over a file of its ``/etc`` keyfile folder by its
    name (libnm's nm_keyfile_utils_ignore_filename, which asks no ``.nmconnection``
    there): a hidden file, a backup (``NAME~``), a temporary file of
    g_file_set_contents (``NAME.XXXXXX``, six letters or digits: also its ``.nmmeta``
    records), a certificate or key beside the profiles (``.pem``, ``.der``)."""
    if not name or name.startswith(".") or name.endswith("~"):
        return True
    _stem, dot, suffix = name.rpartition(".")
    if dot and _MKSTEMP_SUFFIX.fullmatch(suffix):
        return True
    lower = name.lower()
    return any(lower.endswith(tag) and len(name) > len(tag) for tag in (".pem", ".der"))


def keyfile_refusal(info: stat_result) -> str | None:
    """Why NetworkManager refuses to load a keyfile it reads by name, from its status
    (nms_keyfile_utils_check_file_permissions: a regular file, owned by root, that
    neither group nor others may read or write); None when it loads it."""
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != 0:
        return f"its owner (uid {info.st_uid}) is not root"
    if info.st_mode & 0o077:
        return f"its permissions ({stat.S_IMODE(info.st_mode):04o}) let group or others at it"
    return None


class Keyfile(NamedTuple):
    path: str
    """As on the system, e.g. /etc/NetworkManager/system-connections/eduroam.nmconnection."""
    refused: str | None
    """Why NetworkManager does not load it (`keyfile_refusal`); None when it does."""


def keyfiles(host: Host) -> list[Keyfile]:
    """The files of NetworkManager's keyfile folder it takes for profiles (by name),
    each with why it refuses to load it, if it does."""
    folder = host.path(KEYFILE_DIR)
    if not files.is_dir(folder):
        return []
    found = []
    for entry in files.list_files(folder):
        if keyfile_name_ignored(entry.name):
            continue
        try:
            refused = keyfile_refusal(files.status(entry))
        except OSError as exc:
            refused = f"it cannot be read ({exc.strerror or exc})"
        found.append(Keyfile(f"{KEYFILE_DIR}/{entry.name}", refused))
    return found


def keyfile_profiles(host: Host) -> list[tuple[str, bytes | None, EapProfile]]:
    """(system path, SSID or None for a wired one, 802.1X settings) of every keyfile
    NetworkManager loads with an ``[802-1x]`` section."""
    found = []
    for keyfile in keyfiles(host):
        if keyfile.refused is not None:
            continue
        try:
            text = files.read_tracked(host.path(keyfile.path), max_bytes=1 << 20).text
        except ZsnError:
            continue
        ssid, profile = keyfile_profile(text)
        if profile is not None:
            found.append((keyfile.path, ssid, profile))
    return found


def read_keyfiles(host: Host) -> list[KnownNetwork]:
    """NetworkManager's enterprise Wi-Fi profiles in its keyfiles, read only."""
    return [KnownNetwork(ssid=ssid, backend="networkmanager", ref=path.rsplit("/", 1)[1],
                         security="enterprise", autoconnect=True, eap=profile, path=path)
            for path, ssid, profile in keyfile_profiles(host) if ssid is not None]
