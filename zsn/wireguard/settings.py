"""What zsn remembers per WireGuard interface that wg-quick has no key for.

The server's public address (set once, pre-filled in every onboarding) and the
interfaces it is routed to, in ``<root>/etc/zsn/wireguard.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zsn import decode
from zsn.errors import ParseError, ValidationError
from zsn.meaning import OwnFile
from zsn.system import files
from zsn.system.host import Host

if TYPE_CHECKING:
    from zsn.plan import FileEdit

SETTINGS_PATH = "/etc/zsn/wireguard.json"
MAX_BYTES = 1 << 20


class BadNameError(ParseError):
    """The settings name an interface by something that is not an interface name."""


@dataclass
class InterfaceSettings:
    """What zsn remembers about one interface."""

    endpoint_host: str | None = None
    """Public address or hostname clients connect to (the port is the ListenPort)."""
    links: list[str] = field(default_factory=list)
    """Other WireGuard interfaces this one is routed to (their subnets go to clients)."""


@dataclass
class Settings:
    """The settings file as read, ready for an edit."""

    path: Path
    snapshot: files.FileSnapshot | None
    interfaces: dict[str, InterfaceSettings]

    def get(self, name: str) -> InterfaceSettings:
        return self.interfaces.get(name) or InterfaceSettings()

    def edit(self, changes: dict[str, InterfaceSettings]) -> FileEdit:
        """The file edit that stores the settings in `changes` (by interface name)."""
        from zsn.plan import FileEdit  # plans load when one is made: lint reads settings

        merged = {**self.interfaces, **changes}
        document = {
            iface: {"endpoint_host": value.endpoint_host, "links": sorted(set(value.links))}
            for iface, value in sorted(merged.items())
        }
        return FileEdit(self.path, self.snapshot, json.dumps(document, indent=2) + "\n",
                        private_dir=True, intent=OwnFile("zsn's WireGuard settings"))


def load(host: Host) -> Settings:
    path = host.path(SETTINGS_PATH)
    if not files.exists(path):
        return Settings(path, None, {})
    snapshot = files.read_tracked(path, MAX_BYTES)
    return Settings(path, snapshot, parse_settings(snapshot.text, path))


def parse_settings(text: str, path: Path) -> dict[str, InterfaceSettings]:
    """The settings in `text` (the file at `path`), by interface name."""
    interfaces = decode.from_json(text, dict[str, InterfaceSettings], str(path),
                                  max_bytes=MAX_BYTES)
    for name, value in interfaces.items():
        # Names read here become config paths elsewhere: checked where read.
        _check_name(name, "an interface", path)
        for link in value.links:
            _check_name(link, f"a link of {name}", path)
        value.endpoint_host = value.endpoint_host or None
    return interfaces


def _check_name(name: object, what: str, path: Path) -> None:
    from zsn.wireguard.addressing import check_interface_name

    try:
        check_interface_name(name if isinstance(name, str) else "")
    except ValidationError as exc:
        raise BadNameError(f"{name!r} given as {what} is not an interface name ({exc})",
                           None, str(path)) from None
