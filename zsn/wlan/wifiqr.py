"""Wi-Fi QR codes: the ``WIFI:`` payload phones read to join a network.

``WIFI:T:WPA;S:<ssid>;P:<passphrase>;H:true;;`` (T is WPA, WEP or nopass; H only
for a hidden network). A field ends at an unescaped ``;``; a backslash escapes
any character, and ``\\ ; , : "`` must be escaped (ZXing's WifiResultParser).
The passphrase comes from where the backend stored it (iwd's profile, netctl's
Key, wpa_supplicant's config); where only the PSK is stored, the code carries the
64 hex digits, which Android takes as a raw key.
"""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass, field

from zsn.errors import ValidationError, ZsnError
from zsn.system.files import read_tracked
from zsn.system.host import Host
from zsn.system.wpa_config import parse_wpa_config
from zsn.wlan import netctl
from zsn.wlan.model import KnownNetwork, Security
from zsn.wlan.ssid import display

_SPECIAL = re.compile(r'([\\;,:"])')


def escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text)


@dataclass(frozen=True)
class WifiCode:
    ssid: bytes
    security: Security | None
    secret: str | None = field(repr=False)
    hidden: bool
    secret_is_psk: bool = False

    def payload(self) -> str:
        """The QR's text. Holds the passphrase: never log or notify it."""
        try:
            name = self.ssid.decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError(f"the SSID {display(self.ssid)} is not UTF-8 text, which "
                                  "a Wi-Fi QR code cannot carry") from None
        kind = "nopass" if self.secret is None else \
            "WEP" if self.security == "WEP" else \
            "SAE" if self.security == "WPA3" else "WPA"
        parts = [f"T:{kind}", f"S:{escape(name)}"]
        if self.secret is not None:
            parts.append(f"P:{escape(self.secret)}")
        if self.hidden:
            parts.append("H:true")
        return "WIFI:" + ";".join(parts) + ";;"

    def notes(self) -> list[str]:
        out = []
        if self.secret_is_psk:
            out.append("only the PSK is stored, so the code carries its 64 hex digits: "
                       "Android takes them, some other phones need the passphrase")
        if self.hidden:
            out.append("hidden network: the code says so (H:true)")
        return out


def _iwd_secret(host: Host, path: str) -> tuple[str | None, bool]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(read_tracked(host.path(path)).text)
    passphrase = parser.get("Security", "Passphrase", fallback=None)
    if passphrase is not None:
        return passphrase, False
    psk = parser.get("Security", "PreSharedKey", fallback=None)
    return (psk, True) if psk else (None, False)


def _netctl_secret(host: Host, name: str) -> tuple[str | None, bool]:
    text = read_tracked(host.path(netctl.PROFILE_DIR) / name).text
    profile = netctl.parse_profile(name, text)
    if profile.key_is_psk:
        return (profile.get("Key") or "").lstrip('"').lower(), True
    return profile.passphrase, False


def _wpa_secret(host: Host, config_path: str, ssid: bytes) -> tuple[str | None, bool]:
    config = parse_wpa_config(read_tracked(host.path(config_path)).text)
    for block in config.networks:
        if block.ssid != ssid:
            continue
        for name in ("sae_password", "psk"):
            value = block.values.get(name)
            if value and value.startswith('"') and value.endswith('"'):
                return value[1:-1], False
        psk = block.values.get("psk")
        if psk:
            return psk, True
        return None, False
    raise ZsnError(f"{config_path} has no network block for {display(ssid)} (added but "
                   "never saved? wpa_supplicant needs update_config=1 to save)")


NO_ENTERPRISE_QR = ("{name} is an enterprise (802.1X) network: there is no standard QR "
                    "code for those (a phone needs the CA, the server name and an identity "
                    "that the Wi-Fi QR format cannot carry), so zsn shows none")


def wifi_code(host: Host, network: KnownNetwork, config_path: str | None = None) -> WifiCode:
    """The QR data of a known network, its secret read from where the backend keeps it."""
    secret: str | None = None
    is_psk = False
    if network.security == "enterprise":
        raise ValidationError(NO_ENTERPRISE_QR.format(name=network.title))
    if network.security not in ("open", "OWE", "open/OWE"):
        if network.backend == "iwd" and network.path:
            secret, is_psk = _iwd_secret(host, network.path)
        elif network.backend == "netctl":
            secret, is_psk = _netctl_secret(host, network.ref)
        elif network.backend == "wpa_supplicant":
            if config_path is None:
                raise ZsnError("wpa_supplicant does not give its secrets out over the "
                               "socket, and zsn could not find its config file")
            secret, is_psk = _wpa_secret(host, config_path, network.ssid)
        if secret is None:
            raise ZsnError(f"no passphrase or PSK stored for {network.title}")
    return WifiCode(network.ssid, network.security, secret, network.hidden, is_psk)
