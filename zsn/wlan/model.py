"""What zsn knows about Wi-Fi: interfaces, their link, scan results, known networks.

Frozen values built by the backend readers (iwd, wpa_supplicant, netctl,
NetworkManager) and shown by the pane, the export and the headless commands.
SSIDs are bytes (see `zsn.wlan.ssid`); nothing here ever holds a passphrase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from zsn.eap.profile import EapProfile
from zsn.lint import Finding
from zsn.wlan.ssid import display

Backend = Literal["iwd", "wpa_supplicant", "netctl", "networkmanager"]
BACKENDS: tuple[Backend, ...] = ("iwd", "wpa_supplicant", "netctl", "networkmanager")
BACKEND_TITLES: dict[str, str] = {
    "iwd": "iwd", "wpa_supplicant": "wpa_supplicant", "netctl": "netctl",
    "networkmanager": "NetworkManager",
}

Security = Literal["open", "OWE", "open/OWE", "WEP", "WPA", "WPA2", "WPA2/WPA3", "WPA3",
                   "personal", "enterprise", "unknown"]
SECURITIES: tuple[Security, ...] = ("open", "OWE", "open/OWE", "WEP", "WPA", "WPA2",
                                    "WPA2/WPA3", "WPA3", "personal", "enterprise", "unknown")
"""What iwd alone can tell is less: ``personal`` is a passphrase network whose WPA
version is unknown (iwd says "psk" for WPA2 and WPA3 alike) and ``open/OWE`` one
without a passphrase (iwd says "open" for OWE too), where the kernel had no beacon of
it; ``unknown``: an access point advertising key management zsn does not know."""
PERSONAL: tuple[Security, ...] = ("WPA", "WPA2", "WPA2/WPA3", "WPA3", "personal")
"""Securities that take a passphrase."""


def needs_passphrase(security: Security | None) -> bool:
    return security in PERSONAL or security == "WEP"


def channel_of(frequency: int | None) -> int | None:
    """The 802.11 channel number of a centre frequency in MHz (2.4, 5 and 6 GHz)."""
    if frequency is None:
        return None
    if frequency == 2484:
        return 14
    if 2412 <= frequency <= 2472:
        return (frequency - 2407) // 5
    if 5955 <= frequency <= 7115:
        return (frequency - 5950) // 5
    if 5000 <= frequency <= 5925:
        return (frequency - 5000) // 5
    return None


def signal_percent(dbm: float | None) -> int | None:
    """NetworkManager's mapping: -90..-20 dBm onto 0..100 %."""
    if dbm is None:
        return None
    return max(0, min(100, round((dbm + 90) * 100 / 70)))


def signal_bars(dbm: float | None) -> int:
    """0-4 bars, NetworkManager's thresholds (>80, >55, >30, >5 %)."""
    percent = signal_percent(dbm)
    if percent is None:
        return 0
    return sum(percent > threshold for threshold in (5, 30, 55, 80))


@dataclass(frozen=True)
class Link:
    """The interface's connection as its backend reports it."""

    state: str
    """The backend's own word: COMPLETED, SCANNING (wpa_supplicant), connected (iwd) ..."""
    connected: bool
    ssid: bytes | None = None
    bssid: str | None = None
    signal_dbm: float | None = None
    frequency: int | None = None
    bitrate_kbps: int | None = None
    """Transmit bitrate."""
    security: str | None = None
    """As the backend names it: WPA2-PSK, SAE, WPA2-Personal ..."""
    eap_state: str | None = None
    """802.1X: wpa_supplicant's supplicant PAE state (AUTHENTICATED, HELD ...)."""

    @property
    def channel(self) -> int | None:
        return channel_of(self.frequency)

    @property
    def in_use(self) -> bool:
        """Connected, or on the way to it: something a disconnect would end."""
        return self.connected or self.state in CONNECTING_STATES


CONNECTING_STATES = frozenset({"connecting", "ASSOCIATING", "AUTHENTICATING",
                               "4WAY_HANDSHAKE", "SCANNING"})
"""iwd's and wpa_supplicant's words for a connection being made."""

DISCONNECTED = Link("disconnected", False)


@dataclass(frozen=True)
class ScanEntry:
    """One access point (wpa_supplicant: a BSS) or one network (iwd) in range."""

    ssid: bytes | None
    """None for a hidden network (its beacons carry no name)."""
    bssid: str | None
    """None where the backend lists networks, not access points (iwd)."""
    signal_dbm: float | None
    frequency: int | None
    security: Security
    known: bool = False
    connected: bool = False

    @property
    def hidden(self) -> bool:
        return self.ssid is None

    @property
    def channel(self) -> int | None:
        return channel_of(self.frequency)

    @property
    def title(self) -> str:
        return display(self.ssid) if self.ssid is not None else "(hidden)"


def sorted_scan(entries: tuple[ScanEntry, ...]) -> list[ScanEntry]:
    """The connected network first, then named networks by signal (strongest first,
    then by name), then the hidden ones."""
    def key(entry: ScanEntry) -> tuple[bool, bool, float, str, str]:
        signal = entry.signal_dbm if entry.signal_dbm is not None else -999.0
        return (entry.hidden, not entry.connected, -signal, entry.title, entry.bssid or "")
    return sorted(entries, key=key)


@dataclass(frozen=True)
class KnownNetwork:
    """A network a backend remembers: an iwd profile, a wpa_supplicant network block,
    a netctl profile."""

    ssid: bytes
    backend: Backend
    ref: str
    """How the backend names it: iwd's object path, wpa_supplicant's network id, the
    netctl profile's name."""
    security: Security | None
    autoconnect: bool
    hidden: bool = False
    interface: str | None = None
    """None when the backend shares it between interfaces (iwd)."""
    at_boot: bool | None = None
    """netctl: the profile is enabled (started at boot); None where that is the
    backend daemon's business."""
    current: bool = False
    problem: str | None = None
    """Why the backend skips it now (wpa_supplicant TEMP-DISABLED), if it does."""
    path: str | None = None
    """The file that stores it, when zsn knows it."""
    eap: EapProfile | None = None
    """An enterprise network's 802.1X settings (method, identity, server check), when
    its backend lets zsn read them."""

    @property
    def title(self) -> str:
        return display(self.ssid)

    @property
    def key(self) -> str:
        return f"{self.backend}:{self.interface or ''}:{self.ref}"


@dataclass(frozen=True)
class Rfkill:
    soft: bool
    hard: bool

    @property
    def blocked(self) -> bool:
        return self.soft or self.hard

    def describe(self) -> str:
        if self.hard:
            return "hard-blocked"
        return "soft-blocked" if self.soft else "unblocked"


@dataclass(frozen=True)
class WlanInterface:
    name: str
    backend: Backend | None
    """None when no Wi-Fi daemon manages it."""
    link: Link = DISCONNECTED
    mac: str | None = None
    phy: str | None = None
    addresses: tuple[str, ...] = ()
    rfkill: Rfkill | None = None
    scan: tuple[ScanEntry, ...] = ()
    read_only: str | None = None
    """Why zsn only shows this interface (NetworkManager manages it), with the command
    to use instead."""
    hint: str | None = None
    """How to get a backend going when there is none."""
    backend_unit: str | None = None
    """The daemon's systemd unit (iwd.service, wpa_supplicant@wlan0.service)."""
    backend_unit_enabled: bool | None = None
    """Whether that unit starts at boot; None when systemd could not be asked."""
    also_managed_by: tuple[Backend, ...] = ()
    """Other daemons that drive this interface too: they fight over the radio."""
    config_path: str | None = None
    """wpa_supplicant's config file (from its command line), when known."""
    saves_config: bool | None = None
    """wpa_supplicant's update_config: whether SAVE_CONFIG may write the file."""
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class WlanSnapshot:
    interfaces: tuple[WlanInterface, ...]
    networks: tuple[KnownNetwork, ...]
    taken_at: float
    errors: tuple[str, ...] = field(default=())
    findings: tuple[Finding, ...] = field(default=())

    def interface(self, name: str) -> WlanInterface | None:
        return next((each for each in self.interfaces if each.name == name), None)

    def networks_of(self, interface: WlanInterface) -> list[KnownNetwork]:
        """The known networks the interface's backend can use."""
        return [net for net in self.networks if net.backend == interface.backend
                and net.interface in (None, interface.name)]
