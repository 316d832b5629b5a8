"""wpa_supplicant's control interface, the text side: replies parsed, commands built.

Replies are ``OK``, ``FAIL``, ``FAIL-BUSY`` or ``key=value`` lines (STATUS, BSS,
SIGNAL_POLL) or tab-separated tables (LIST_NETWORKS). SSIDs come printf-escaped
(``\\xNN``). Commands carrying a secret are `Command`s whose shown form hides the
value, so an error message or a plan never prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.system.wpa_ctrl import Command, printf_unescape
from zsn.wlan.model import Link, ScanEntry, Security

BSS_MASK = 0x1887
"""id, bssid, freq, level, flags, ssid: what a scan list needs (WPA_BSS_MASK_*)."""
REPLY_LIMIT = 4096
"""wpa_supplicant's reply buffer: longer answers are cut silently."""
_BSSID_RE = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
_FLAG_RE = re.compile(r"\[([^\]]*)\]")


def parse_kv(reply: str) -> dict[str, str]:
    """``key=value`` lines as a dict (the first ``=`` splits; other lines are ignored)."""
    values: dict[str, str] = {}
    for line in reply.splitlines():
        key, sep, value = line.partition("=")
        if sep and key:
            values[key] = value
    return values


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def security_of_flags(flags: str) -> Security:
    """The security a BSS offers, from its flags (``[WPA2-PSK+SAE-CCMP][ESS]`` ...)."""
    tokens = _FLAG_RE.findall(flags)
    proto = [t for t in tokens if t.startswith(("WPA-", "WPA2-", "RSN-", "OSEN"))]
    joined = " ".join(proto)
    if "EAP" in joined or "OSEN" in joined:
        return "enterprise"
    if "OWE" in joined:
        return "OWE"
    sae = "SAE" in joined
    psk = "PSK" in joined
    if sae and psk:
        return "WPA2/WPA3"
    if sae:
        return "WPA3"
    if psk:
        return "WPA2" if any(t.startswith(("WPA2-", "RSN-")) for t in proto) else "WPA"
    if "WEP" in tokens:
        return "WEP"
    return "open"


@dataclass(frozen=True)
class Bss:
    id: int
    bssid: str
    frequency: int | None
    level: int | None
    flags: str
    ssid: bytes

    def entry(self) -> ScanEntry:
        return ScanEntry(ssid=self.ssid or None, bssid=self.bssid,
                         signal_dbm=self.level, frequency=self.frequency,
                         security=security_of_flags(self.flags))


def parse_bss(reply: str) -> Bss | None:
    """One ``BSS`` reply; None for the empty reply that ends a ``NEXT-`` walk."""
    if not reply.strip():
        return None
    values = parse_kv(reply)
    bss_id = _int(values.get("id"))
    bssid = values.get("bssid", "").lower()
    if bss_id is None or not _BSSID_RE.fullmatch(bssid):
        raise ParseError(f"BSS reply without id and bssid ({len(reply)} bytes)",
                         source="wpa_supplicant")
    return Bss(bss_id, bssid, _int(values.get("freq")), _int(values.get("level")),
               values.get("flags", ""), printf_unescape(values.get("ssid", "")))


@dataclass(frozen=True)
class NetworkLine:
    """A LIST_NETWORKS row."""

    id: int
    ssid: bytes
    bssid: str
    flags: tuple[str, ...]

    @property
    def disabled(self) -> bool:
        return "DISABLED" in self.flags

    @property
    def current(self) -> bool:
        return "CURRENT" in self.flags

    @property
    def temporarily_disabled(self) -> bool:
        return "TEMP-DISABLED" in self.flags


def parse_list_networks(reply: str) -> list[NetworkLine]:
    """LIST_NETWORKS: a header, then ``id<TAB>ssid<TAB>bssid<TAB>flags`` per network."""
    lines = reply.splitlines()
    if lines and lines[0].startswith("network id"):
        lines = lines[1:]
    networks = []
    for line in lines:
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0].isdigit():
            raise ParseError(f"unexpected LIST_NETWORKS line with {len(parts)} fields",
                             source="wpa_supplicant")
        flags = tuple(_FLAG_RE.findall(parts[3])) if len(parts) > 3 else ()
        networks.append(NetworkLine(int(parts[0]), printf_unescape(parts[1]), parts[2], flags))
    return networks


def link_from_status(status: dict[str, str], signal: dict[str, str] | None = None) -> Link:
    """The link from STATUS (and SIGNAL_POLL, when connected)."""
    state = status.get("wpa_state", "UNKNOWN")
    connected = state == "COMPLETED"
    signal = signal or {}
    speed = _int(signal.get("LINKSPEED"))
    ssid = status.get("ssid")
    return Link(
        state=state, connected=connected,
        ssid=printf_unescape(ssid) if ssid is not None and "bssid" in status else None,
        bssid=status.get("bssid"),
        signal_dbm=_int(signal.get("RSSI")),
        frequency=_int(signal.get("FREQUENCY") or status.get("freq")),
        bitrate_kbps=speed * 1000 if speed is not None else None,
        security=status.get("key_mgmt"),
        eap_state=status.get("Supplicant PAE state"),
    )


# Commands --------------------------------------------------------------------------

def set_ssid(network_id: int, ssid: bytes) -> Command:
    """SSID as unquoted hex: any bytes, nothing to escape."""
    return Command.plain(f"SET_NETWORK {network_id} ssid {ssid.hex()}")


def quoted(value: str) -> str:
    """A string value for SET_NETWORK: in double quotes, printable ASCII only (the
    parser takes everything up to the last quote, so inner quotes are fine)."""
    if not re.fullmatch(r"[\x20-\x7e]*", value):
        raise ValidationError("value has characters wpa_supplicant cannot take quoted")
    return f'"{value}"'


def set_secret(network_id: int, name: str, value: str) -> Command:
    """``SET_NETWORK id psk|sae_password|password|private_key_passwd ...``, the value
    hidden when shown."""
    if name not in ("psk", "sae_password", "password", "private_key_passwd"):
        raise ValueError(name)
    return Command(f"SET_NETWORK {network_id} {name} {value}",
                   f"SET_NETWORK {network_id} {name} (hidden)")


def set_value(network_id: int, name: str, value: str) -> Command:
    return Command.plain(f"SET_NETWORK {network_id} {name} {value}")


class WpaRefused(ZsnError):
    """wpa_supplicant answered FAIL (or something else than OK) to a command."""


def check_ok(command: Command, reply: str) -> None:
    """Raise unless wpa_supplicant answered OK; the message shows the command masked."""
    if reply.strip() != "OK":
        answer = reply.strip().splitlines()[0][:40] if reply.strip() else "no answer"
        raise WpaRefused(f"wpa_supplicant refused '{command.shown}': {answer}")
