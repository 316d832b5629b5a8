"""wpa_supplicant's config file, read for lint: global settings and ``network={...}`` blocks.

zsn never writes this file itself (wpa_supplicant's SAVE_CONFIG does); it only
reads it to spot secrets stored as passphrases and files others can read. Values
stay as written (``"quoted"`` strings keep their quotes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zsn.system.wpa_ctrl import printf_unescape


@dataclass(frozen=True)
class NetworkBlock:
    line: int
    """1-based line of ``network={``."""
    values: dict[str, str] = field(repr=False)
    lines: dict[str, int] = field(repr=False)

    @property
    def ssid(self) -> bytes | None:
        value = self.values.get("ssid")
        if value is None:
            return None
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            return value[1:-1].encode("utf-8", errors="surrogateescape")
        if value.startswith('P"') and value.endswith('"'):
            return printf_unescape(value[2:-1])
        try:
            return bytes.fromhex(value)
        except ValueError:
            return None

    @property
    def key_mgmt(self) -> set[str]:
        return set(self.values.get("key_mgmt", "WPA-PSK WPA-EAP").split())

    @property
    def passphrase_stored(self) -> bool:
        """psk is a quoted passphrase (a PSK is 64 hex digits, unquoted)."""
        return self.values.get("psk", "").startswith('"')


@dataclass(frozen=True)
class WpaConfig:
    settings: dict[str, str]
    networks: tuple[NetworkBlock, ...]

    @property
    def has_secrets(self) -> bool:
        secret_keys = ("psk", "sae_password", "password", "wep_key0", "wep_key1",
                       "wep_key2", "wep_key3", "private_key_passwd")
        return any(key in block.values for block in self.networks for key in secret_keys)


def parse_wpa_config(text: str) -> WpaConfig:
    """Lenient: lines that are not ``key=value`` (or a block's braces) are skipped."""
    settings: dict[str, str] = {}
    networks: list[NetworkBlock] = []
    block: tuple[int, dict[str, str], dict[str, int]] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if block is None and line.replace(" ", "") == "network={":
            block = (number, {}, {})
            continue
        if block is not None and line == "}":
            networks.append(NetworkBlock(*block))
            block = None
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if block is None:
            settings[key.strip()] = value.strip()
        else:
            block[1][key.strip()] = value.strip()
            block[2][key.strip()] = number
    return WpaConfig(settings, tuple(networks))
