"""A server interface's wg-quick config on this host, read to lint it or to edit it
into a plan (`zsn.wireguard.config.config_path` says where it is).

Also the rules for a peer's name where it becomes a path (its client config) or is
acted on. Kept apart from the plan builders (`zsn.wireguard.actions`,
`zsn.wireguard.onboarding`, `zsn.wireguard.routing`) so that lint and `zsn --export`
read configs without loading what changes them (plans, live devices, commands).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zsn.errors import ValidationError
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import addressing
from zsn.wireguard.config import (
    WIREGUARD_DIR,
    Section,
    WgConfig,
    check_peer_name,
    config_path,
    parse_shared,
)
from zsn.wireguard.keys import public_key_from_private
from zsn.wireguard.schema import port_problem
from zsn.wording import Action, Phrase

if TYPE_CHECKING:
    from zsn.plan import FileEdit
    from zsn.wireguard.device import LiveDevice

DEFAULT_KEEPALIVE = 25
"""Seconds; keeps a NAT mapping open so the server (and other clients) can reach a client."""
RESOLVER_PROGRAMS = ("/usr/sbin/resolvconf", "/sbin/resolvconf", "/usr/bin/resolvectl",
                     "/bin/resolvectl")


def has_resolver(host: Host) -> bool:
    """Whether wg-quick can apply ``DNS =`` here (it runs resolvconf or resolvectl)."""
    return any(files.exists(host.path(p)) for p in RESOLVER_PROGRAMS)


@dataclass
class ServerConfig:
    """A server interface's config file as read, ready to be edited into a plan."""

    host: Host
    name: str
    path: Path
    snapshot: files.FileSnapshot
    config: WgConfig

    @classmethod
    def load(cls, host: Host, name: str) -> ServerConfig:
        addressing.check_interface_name(name)
        path = config_path(host, name)
        if not files.exists(path):
            raise ValidationError(f"no interface {name!r}: {path} does not exist")
        snapshot = files.read_tracked(path)
        return cls(host, name, path, snapshot, parse_shared(snapshot.text, str(path)))

    def edited(self) -> WgConfig:
        """A fresh copy of the config to edit (the loaded one stays as read)."""
        return self.config.copy()

    def edit(self, config: WgConfig) -> FileEdit:
        from zsn.plan import FileEdit  # plans load when one is made, not to read a config

        return FileEdit(self.path, self.snapshot, config.render(), mode=files.PRIVATE_FILE_MODE,
                        intent=config.intent)

    @property
    def listen_port(self) -> int | None:
        interface = self.config.interface
        value = interface.get("ListenPort") if interface else None
        return int(value) if value and value.isdigit() else None

    def require_listen_port(self) -> int:
        """The ListenPort clients connect to, or why there is none to use."""
        interface = self.config.interface
        entries = interface.entries_for("ListenPort") if interface else []
        if not entries:
            raise ValidationError(f"{self.path}: [Interface] has no ListenPort; clients need one")
        entry = entries[-1]
        problem = port_problem(entry.value)
        if problem is not None:
            raise ValidationError(f"{self.path}:{entry.line + 1}: ListenPort {entry.value!r} "
                                  f"{problem}; wg refuses it, and clients need a port")
        if entry.value.isdigit():
            return int(entry.value)
        return socket.getservbyname(entry.value, "udp")  # a service name, as wg reads it

    @property
    def public_key(self) -> str:
        interface = self.config.interface
        private = interface.get("PrivateKey") if interface else None
        if not private:
            raise ValidationError(f"{self.path}: [Interface] has no PrivateKey")
        return public_key_from_private(private)

    def live(self) -> LiveDevice | None:
        from zsn.wireguard.device import find_device  # netlink and UAPI: only when asked

        return find_device(self.host, self.name)


def client_config_path(host: Host, interface: str, name: str) -> Path:
    """Where zsn keeps a peer's client config: both names are checked here, where they
    become a path, whether typed or read from a file."""
    addressing.check_interface_name(interface)
    check_peer_name(name)
    return host.path(f"{WIREGUARD_DIR}/clients/{interface}/{name}.conf")


def usable_peer(config: WgConfig, name_or_key: str) -> Section:
    """The peer `name_or_key` names, refused when the name in its comment is a path
    or otherwise unusable (names read from files are data, never paths)."""
    peer = config.require_peer(name_or_key)
    refuse_unusable_name(config, peer)
    return peer


def refuse_unusable_name(config: WgConfig, peer: Section) -> None:
    problem = peer.name_problem
    if problem is not None:
        where = f" of {config.source}" if config.source else ""
        line = f" at line {peer.name_line + 1}" if peer.name_line is not None else ""
        interface = Path(config.source).stem if config.source else "IFACE"
        rename = Action("rename_peer", f"zsn peer rename {interface} "
                                       f"{peer.get('PublicKey') or 'KEY'} NEWNAME")
        raise ValidationError(Phrase(
            f"peer name {peer.name!r}{line}{where} {problem}: zsn does not act on it; "
            "rename the peer (", rename, ") or fix the comment"))


def client_file(host: Host, interface: str, peer: Section) -> Path | None:
    """The peer's client config zsn wrote, when its name is one zsn could have given."""
    name = peer.client_file_name
    return client_config_path(host, interface, name) if name is not None else None
