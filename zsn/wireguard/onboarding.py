"""Peers on a server interface: add, remove, disable, enable, rename, show, routed subnets.

Each action is a `Plan`: the server config edit (only the peer's lines change),
the client config written 0600 under ``/etc/wireguard/clients/<iface>/``, and the
live change on the running interface (UAPI or netlink, never a restart). The TUI
form and ``zsn peer ...`` both build their plans here.
"""

from __future__ import annotations

import enum
import ipaddress
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.plan import FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import addressing, settings

# The "X as X" imports are re-exports: defined with the config reader (lint and the
# live read load them without the plan builders), found here by the TUI, CLI, routing.
from zsn.wireguard.config import WIREGUARD_DIR as WIREGUARD_DIR
from zsn.wireguard.config import Section, WgConfig, check_peer_name, parse
from zsn.wireguard.config import config_path as config_path
from zsn.wireguard.device import LiveDevice, PeerSettings, add_route, remove_route
from zsn.wireguard.keys import (
    KeyPair,
    check_key,
    generate_preshared_key,
    is_valid_key,
    public_key_from_private,
)
from zsn.wireguard.server import DEFAULT_KEEPALIVE as DEFAULT_KEEPALIVE
from zsn.wireguard.server import ServerConfig as ServerConfig
from zsn.wireguard.server import has_resolver as has_resolver
from zsn.wording import Action, Phrase


class Profile(enum.StrEnum):
    SERVER = "server"
    """The client reaches the server only."""
    SUBNET = "subnet"
    """The whole VPN subnet (client-to-client) and the subnets of linked interfaces."""
    ALL = "all"
    """All traffic through the server (gateway)."""


PROFILE_LABELS = {
    Profile.SERVER: "server only",
    Profile.SUBNET: "whole VPN subnet (client-to-client)",
    Profile.ALL: "all traffic (gateway)",
}


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
    _refuse_unusable_name(config, peer)
    return peer


def _refuse_unusable_name(config: WgConfig, peer: Section) -> None:
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


def _client_file(host: Host, interface: str, peer: Section) -> Path | None:
    """The peer's client config zsn wrote, when its name is one zsn could have given."""
    name = peer.client_file_name
    return client_config_path(host, interface, name) if name is not None else None


@dataclass
class PeerRequest:
    """Everything the onboarding form (or ``zsn peer add``) asks for."""

    interface: str
    name: str
    profile: Profile = Profile.SERVER
    address: str | None = None
    """``None`` takes the next free address in the interface's subnet."""
    dns: list[str] = field(default_factory=list)
    keepalive: int | None = DEFAULT_KEEPALIVE
    preshared_key: bool = True
    endpoint: str | None = None
    """``host`` or ``host:port``; ``None`` uses the one stored for the interface."""
    routed_subnets: list[str] = field(default_factory=list)
    """Networks behind this peer (site-to-site): server-side AllowedIPs and routes."""
    public_key: str | None = None
    """The device's own public key when it made its key pair itself; ``None`` generates one."""


@dataclass(frozen=True)
class OnboardingDefaults:
    """What the form pre-fills."""

    address: str
    endpoint: str
    profile: Profile = Profile.SERVER
    keepalive: int = DEFAULT_KEEPALIVE


def onboarding_defaults(host: Host, interface: str) -> OnboardingDefaults:
    server = ServerConfig.load(host, interface)
    chosen = addressing.next_free_address(server.config)
    stored = settings.load(host).get(interface).endpoint_host
    endpoint = ""
    if stored and server.listen_port:
        endpoint = addressing.format_endpoint(stored, server.listen_port)
    return OnboardingDefaults(", ".join(str(a) for a in chosen.addresses), endpoint)


def _resolve_endpoint(server: ServerConfig, given: str | None) -> tuple[str, str | None]:
    """The client's ``Endpoint``, and the host the user typed (``None`` when stored)."""
    if given:
        text = given.strip(addressing.BLANKS)
        host_part, sep, port_part = text.rpartition(":")
        if sep and port_part.isdigit() and (not host_part.count(":") or host_part.endswith("]")):
            host = addressing.check_endpoint_host(host_part)
            return addressing.format_endpoint(host, addressing.check_port(
                port_part, "endpoint port")), host
        host = addressing.check_endpoint_host(text)
        typed: str | None = host
    else:
        stored = settings.load(server.host).get(server.name).endpoint_host
        if not stored:
            raise ValidationError(
                f"no endpoint is known for {server.name} yet: give the host name or address "
                "clients connect to (the first one given is kept for its next peers)",
                field="endpoint")
        host, typed = stored, None
    return addressing.format_endpoint(host, server.require_listen_port()), typed


def _remember_endpoint(plan: Plan, server: ServerConfig, typed: str | None) -> None:
    """The first endpoint typed for an interface becomes its default ("set once")."""
    stored = settings.load(server.host)
    current = stored.get(server.name)
    if typed is None or current.endpoint_host:
        return
    current.endpoint_host = typed
    plan.steps.append(stored.edit({server.name: current}))
    plan.notes.append(f"{typed} is now the endpoint pre-filled for clients of {server.name}")


def client_allowed_ips(host: Host, server: ServerConfig, profile: Profile) -> list[str]:
    """What the client routes into the tunnel for `profile`."""
    own = addressing.interface_addresses(server.config)
    if profile is Profile.ALL:
        return ["0.0.0.0/0", "::/0"]
    if profile is Profile.SERVER:
        return [f"{a.ip}/{a.max_prefixlen}" for a in own]
    networks = [str(a.network) for a in own]
    for linked in settings.load(host).get(server.name).links:
        try:
            other = ServerConfig.load(host, linked)
        except ZsnError:
            continue  # lint reports a link to an interface that is gone
        networks.extend(str(a.network) for a in addressing.interface_addresses(other.config))
    return list(dict.fromkeys(networks))


@dataclass(frozen=True)
class ClientConfig:
    name: str
    interface: str
    text: str
    path: Path

    def __repr__(self) -> str:  # holds a private key
        return f"ClientConfig(name={self.name!r}, interface={self.interface!r})"


def render_client_config(
    *, name: str, interface: str, private_key: str | None, addresses: list[str], dns: list[str],
    server_public_key: str, preshared_key: str | None, allowed_ips: list[str], endpoint: str,
    keepalive: int | None,
) -> str:
    lines = [f"# {name}: client of {interface}, written by zsn", "[Interface]"]
    if private_key:
        lines.append(f"PrivateKey = {private_key}")
    else:
        lines.append("# PrivateKey: the device's own key (its public key was given to zsn)")
    lines.append(f"Address = {', '.join(addresses)}")
    if dns:
        lines.append(f"DNS = {', '.join(dns)}")
    lines += ["", f"# {interface} server", "[Peer]", f"PublicKey = {server_public_key}"]
    if preshared_key:
        lines.append(f"PresharedKey = {preshared_key}")
    lines += [f"AllowedIPs = {', '.join(allowed_ips)}", f"Endpoint = {endpoint}"]
    if keepalive:
        lines.append(f"PersistentKeepalive = {keepalive}")
    return "\n".join(lines) + "\n"


def _live_step_add(device: LiveDevice, peer: PeerSettings, what: str) -> LiveStep:
    return LiveStep(
        f"{what} on running {device.name} ({device.implementation}, no restart)",
        lambda: device.add_peer(peer),
        lambda: device.remove_peer(peer.public_key),
    )


def _live_step_remove(device: LiveDevice, peer: PeerSettings, what: str) -> LiveStep:
    return LiveStep(
        f"{what} on running {device.name} ({device.implementation}, no restart)",
        lambda: device.remove_peer(peer.public_key),
        lambda: device.add_peer(peer),
    )


def _route_steps(device: LiveDevice, networks: list[str], add: bool) -> list[LiveStep]:
    steps: list[LiveStep] = []
    for network in networks:
        put = partial(add_route, device.name, network)
        drop = partial(remove_route, device.name, network)
        if add:
            steps.append(LiveStep(f"route {network} dev {device.name}", put, drop))
        else:
            steps.append(LiveStep(f"remove route {network} dev {device.name}", drop, put))
    return steps


def _down_note(server: ServerConfig) -> str:
    return f"{server.name} is not running: the change takes effect when it comes up"


def _outside_subnet(server: ServerConfig, networks: list[str]) -> list[str]:
    """The networks the interface's own subnet route does not already cover."""
    own = [a.network for a in addressing.interface_addresses(server.config)]
    result = []
    for text in networks:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue  # a hand-edited item zsn cannot route (lint's business, not a crash)
        if not any(network.version == o.version and network.subnet_of(o)  # type: ignore[arg-type]
                   for o in own):
            result.append(text)
    return result


def _live_only_peers(server: ServerConfig, device: LiveDevice | None
                     ) -> list[tuple[str, tuple[str, ...]]]:
    """Peers on the running interface that are not in its config (added with `wg set`
    and never saved), as (public key, allowed IPs)."""
    if device is None:
        return []
    in_config = {peer.get("PublicKey") for peer in server.config.all_peers}
    return [(peer.public_key, peer.allowed_ips) for peer in device.peers()
            if peer.public_key not in in_config]


def plan_add_peer(host: Host, request: PeerRequest) -> tuple[Plan, ClientConfig]:
    """Validate `request` fully, then plan the peer's addition; nothing is changed yet."""
    server = ServerConfig.load(host, request.interface)
    with about_input("name"):
        name = check_peer_name(request.name.strip(addressing.BLANKS))
        client_path = client_config_path(host, server.name, name)
        if server.config.find_peer(name) is not None:
            hint: tuple[str | Action, ...] = (
                " (its client config: ", Action("show_client",
                                                f"zsn peer show {server.name} {name}"), ")"
            ) if files.exists(client_path) else ()
            raise ValidationError(Phrase(f"{server.name} already has a peer named {name!r}",
                                         *hint))
    link_notes = files.check_private_dirs(client_path.parent, host.path(WIREGUARD_DIR))
    profile = Profile(request.profile)
    device = server.live()
    live_only = _live_only_peers(server, device)
    leftover = _interrupted_add(server, client_path, live_only)
    owners = [(f"peer {key[:8]}… of the running {server.name} (not in its config)", allowed)
              for key, allowed in live_only]
    with about_input("address"):
        if request.address and request.address.strip():
            chosen = addressing.check_peer_address(server.config, request.address, owners)
        else:
            chosen = addressing.next_free_address(server.config, owners)
    with about_input("dns"):
        dns = [addressing.check_dns(item) for item in request.dns if item.strip()]
    with about_input("keepalive"):
        keepalive = addressing.check_keepalive(request.keepalive) if request.keepalive else None
    with about_input("endpoint"):
        endpoint, typed_endpoint = _resolve_endpoint(server, request.endpoint)
    with about_input("routed_subnets"):
        routed = addressing.check_allowed_networks(request.routed_subnets)
        _check_routed_free(server.config, routed, None)

    if request.public_key:
        with about_input("public_key"):
            public_key, private_key = check_key(request.public_key, "public key"), None
            if server.config.find_peer(public_key) is not None or any(
                    key == public_key for key, _ in live_only):
                raise ValidationError(f"{server.name} already has a peer with public key "
                                      f"{public_key}")
    else:
        keys = KeyPair.generate()
        public_key, private_key = keys.public_key, keys.private_key
    psk = generate_preshared_key() if request.preshared_key else None
    server_allowed = chosen.host_routes() + routed
    edited = server.edited()
    fields = [("PublicKey", public_key)]
    if psk:
        fields.append(("PresharedKey", psk))
    fields.append(("AllowedIPs", ", ".join(server_allowed)))
    edited.append_peer(name, fields)

    text = render_client_config(
        name=name, interface=server.name, private_key=private_key,
        addresses=chosen.host_routes(), dns=dns, server_public_key=server.public_key,
        preshared_key=psk, allowed_ips=client_allowed_ips(host, server, profile),
        endpoint=endpoint, keepalive=keepalive,
    )
    plan = Plan(f"add peer {name} to {server.name} ({PROFILE_LABELS[profile]}, "
                f"{', '.join(str(a) for a in chosen.addresses)})",
                warnings=list(chosen.warnings))
    plan.steps.append(FileEdit(client_path, leftover, text, mode=files.PRIVATE_FILE_MODE,
                               private_dir=True, backup=False))
    if leftover is not None:
        plan.notes.append(f"replaces {client_path}, left by an add that was interrupted: no "
                          f"peer of {server.name} has its key")
    plan.notes.extend(link_notes)
    plan.steps.append(server.edit(edited))
    _remember_endpoint(plan, server, typed_endpoint)
    if device is not None:
        peer = PeerSettings(public_key, psk, tuple(server_allowed))
        plan.steps.append(_live_step_add(device, peer, f"add peer {name}"))
        plan.steps.extend(_route_steps(device, _outside_subnet(server, routed), add=True))
    else:
        plan.notes.append(_down_note(server))
    if dns and not has_resolver(host):
        plan.notes.append("the client config sets DNS: the client needs resolvconf or "
                          "resolvectl, or wg-quick will not bring it up")
    plan.output = text
    return plan, ClientConfig(name, server.name, text, client_path)


def _interrupted_add(server: ServerConfig, client_path: Path,
                     live_only: list[tuple[str, tuple[str, ...]]]) -> files.FileSnapshot | None:
    """The client config an interrupted add left behind, to be replaced; ``None`` when
    there is none. Refused when the file belongs to a peer after all.

    An add writes the client config first and the server config second (the commit):
    killed in between, it leaves a client config whose key no peer has. The next add
    of that name replaces it rather than refusing forever.
    """
    if not files.lexists(client_path):
        return None
    refusal = ValidationError(f"{client_path} already exists; remove it or pick another name")
    try:
        snapshot = files.read_tracked(client_path)
        client = parse(snapshot.text, str(client_path))
    except ZsnError:
        raise refusal from None
    if files.is_link(client_path) or client.interface is None:
        raise refusal
    private = client.interface.get("PrivateKey")
    if private:
        try:
            key = public_key_from_private(private)
        except ZsnError:
            raise refusal from None
        in_use = {peer.get("PublicKey") for peer in server.config.all_peers}
        in_use.update(public for public, _allowed in live_only)
        if key in in_use:
            raise refusal
    return snapshot


def _check_routed_free(config: WgConfig, routed: list[str], owner: Section | None) -> None:
    own = addressing.interface_addresses(config)
    for text in routed:
        network = ipaddress.ip_network(text)
        for addr in own:
            if addr.version == network.version and network.overlaps(addr.network):
                raise ValidationError(f"routed subnet {network} overlaps the VPN subnet "
                                      f"{addr.network}")
        for peer in config.all_peers:
            if peer is owner:
                continue
            for taken in addressing.peer_networks(peer):
                if taken.version == network.version and network.overlaps(taken):
                    raise ValidationError(f"routed subnet {network} overlaps {taken} of "
                                          f"{peer.label}")


def _settings_of(peer: Section) -> PeerSettings:
    key = peer.get("PublicKey")
    if not key:
        raise ValidationError(f"{peer.label} has no PublicKey")
    keepalive = peer.get("PersistentKeepalive")
    return PeerSettings(
        key, peer.get("PresharedKey"), tuple(peer.get_all("AllowedIPs")),
        int(keepalive) if keepalive and keepalive.isdigit() and int(keepalive) else None,
        peer.get("Endpoint"),
    )


def plan_remove_peer(host: Host, interface: str, name: str) -> Plan:
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    live_settings = _settings_of(peer)
    client_path = _client_file(host, server.name, peer)
    edited.remove_peer(peer)
    plan = Plan(f"remove peer {name} from {server.name}")
    plan.steps.append(server.edit(edited))
    if client_path is not None and files.exists(client_path):
        kept = files.backup_path(client_path)
        plan.steps.append(LiveStep(f"move {client_path} to {kept.name}",
                                   lambda: files.rename(client_path, kept),
                                   lambda: files.rename(kept, client_path)))
    device = server.live()
    if device is not None and not peer.disabled:
        plan.steps.append(_live_step_remove(device, live_settings, f"remove peer {name}"))
        plan.steps.extend(_route_steps(
            device, _outside_subnet(server, list(live_settings.allowed_ips)), add=False))
    elif device is None:
        plan.notes.append(_down_note(server))
    return plan


def _file_and_live(server: ServerConfig, edited: WgConfig, title: str,
                   live: Callable[[LiveDevice], LiveStep]) -> Plan:
    """A plan editing the server config, then changing the running interface if it is up."""
    plan = Plan(title, [server.edit(edited)])
    device = server.live()
    if device is None:
        plan.notes.append(_down_note(server))
    else:
        plan.steps.append(live(device))
    return plan


def plan_disable_peer(host: Host, interface: str, name: str) -> Plan:
    """Comment the peer's block out (``#[disabled]``) and take it off the live interface."""
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    live_settings = _settings_of(peer)
    edited.disable_peer(peer)
    return _file_and_live(
        server, edited, f"disable peer {name} on {server.name} (kept in the file)",
        lambda device: _live_step_remove(device, live_settings, f"remove peer {name}"))


def plan_enable_peer(host: Host, interface: str, name: str) -> Plan:
    from zsn.wireguard.expiry import check_not_expired

    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    check_not_expired(edited, peer, server.name, time.time())
    edited.enable_peer(peer)
    enabled = edited.require_peer(name)
    live_settings = _settings_of(enabled)
    _check_enable_free(edited, enabled)
    return _file_and_live(
        server, edited, f"enable peer {name} on {server.name}",
        lambda device: _live_step_add(device, live_settings, f"add peer {name}"))


def _check_enable_free(config: WgConfig, peer: Section) -> None:
    mine = addressing.peer_networks(peer)
    for other in config.peers:
        if other is peer:
            continue
        for taken in addressing.peer_networks(other):
            for network in mine:
                if network.version == taken.version and network.overlaps(taken):
                    raise ValidationError(f"cannot enable {peer.label}: {network} overlaps "
                                          f"{taken} of {other.label}")


def plan_rename_peer(host: Host, interface: str, name: str, new_name: str) -> Plan:
    """Rename a peer: its name comment in the server config, and the client config zsn
    wrote for it, which moves to the new name with the new name in its first line.

    The server config is edited last: it is the commit. A rename killed before it
    leaves the client config moved (or not) and the peer under its old name; the
    same rename run again finds the moved file by the peer's key and goes on.
    """
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    # Renaming is how a peer named like a path gets a usable name: allowed, and
    # the old name is never turned into a file path.
    peer = edited.require_peer(name)
    with about_input("new_name"):
        new_name = check_peer_name(new_name.strip(addressing.BLANKS))
        if edited.find_peer(new_name) is not None:
            raise ValidationError(f"{server.name} already has a peer named {new_name!r}")
        new_client = client_config_path(host, server.name, new_name)
    old_client = _client_file(host, server.name, peer)
    plan = Plan(f"rename peer {name} to {new_name} on {server.name}")
    if old_client is not None and files.lexists(old_client):
        if files.lexists(new_client):
            raise ValidationError(f"{new_client} already exists", field="new_name")
        snapshot = files.read_tracked(old_client)
        renamed = _client_comment_renamed(snapshot.text, server.name, new_name)
        if renamed != snapshot.text:
            # No .zsn-bak: it would stay behind under the old name; undo restores the text.
            plan.steps.append(FileEdit(old_client, snapshot, renamed,
                                       mode=files.PRIVATE_FILE_MODE, backup=False))
        plan.steps.append(LiveStep(f"move {old_client} to {new_client.name}",
                                   partial(files.move, old_client, new_client),
                                   partial(files.move, new_client, old_client)))
    elif files.lexists(new_client):
        _adopt_moved_client(plan, server, peer, new_client, new_name)
    edited.rename_peer(peer, new_name)
    plan.steps.append(server.edit(edited))
    return plan


_CLIENT_COMMENT_RE = re.compile(r"# (?P<name>[^:\n]*): client of (?P<interface>\S+), "
                                r"written by zsn(?P<end>\r?\n|\Z)")


def _client_comment_renamed(text: str, interface: str, new_name: str) -> str:
    """`text` with the name in zsn's first line (``# NAME: client of IFACE, written by
    zsn``) replaced; anything else, and a first line someone rewrote, stays as it is."""
    first = _CLIENT_COMMENT_RE.match(text)
    if first is None or first.group("interface") != interface:
        return text
    return f"# {new_name}: client of {interface}, written by zsn{first.group('end')}" \
        + text[first.end():]


def _adopt_moved_client(plan: Plan, server: ServerConfig, peer: Section, client: Path,
                        new_name: str) -> None:
    """A client config already under the new name: the one of this peer when a rename
    was interrupted after moving it (its key is the peer's), else in the way."""
    snapshot = files.read_tracked(client)
    try:
        private = parse(snapshot.text, str(client)).interface
        key = public_key_from_private(private.get("PrivateKey") or "") if private else None
    except ZsnError:
        key = None
    if key is None or key != peer.get("PublicKey"):
        raise ValidationError(f"{client} already exists", field="new_name")
    renamed = _client_comment_renamed(snapshot.text, server.name, new_name)
    if renamed != snapshot.text:
        plan.steps.append(FileEdit(client, snapshot, renamed, mode=files.PRIVATE_FILE_MODE,
                                   backup=False))
    plan.notes.append(f"{client} is this peer's client config, moved by a rename that was "
                      "interrupted: kept")


def plan_set_routed_subnets(host: Host, interface: str, name: str,
                            subnets: list[str]) -> Plan:
    """Set the networks behind a peer (site-to-site): its server-side AllowedIPs and routes."""
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    routed = addressing.check_allowed_networks(subnets)
    _check_routed_free(edited, routed, peer)
    before = _settings_of(peer)
    host_routes = [n for n in before.allowed_ips
                   if not _outside_subnet(server, [n]) or _is_host(n)]
    old_routed = [n for n in before.allowed_ips if n not in host_routes]
    edited.remove_list_items(peer, "AllowedIPs", old_routed)
    peer = edited.require_peer(name)
    edited.add_list_items(peer, "AllowedIPs", routed)
    after = _settings_of(edited.require_peer(name))
    plan = Plan(f"set subnets behind {name} on {server.name}: {', '.join(routed) or 'none'}")
    plan.steps.append(server.edit(edited))
    device = server.live()
    if device is not None and not peer.disabled:
        plan.steps.append(LiveStep(
            f"set allowed IPs of {name} on running {device.name}",
            lambda: device.add_peer(after), lambda: device.add_peer(before)))
        plan.steps.extend(_route_steps(device, [n for n in old_routed if n not in routed],
                                       add=False))
        plan.steps.extend(_route_steps(device, _outside_subnet(server, routed), add=True))
    elif device is None:
        plan.notes.append(_down_note(server))
    return plan


def _is_host(network: str) -> bool:
    try:
        parsed = ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False
    return parsed.prefixlen == parsed.max_prefixlen


def show_client_config(host: Host, interface: str, name: str) -> ClientConfig:
    """The client config zsn wrote for a peer (the private key lives only there)."""
    addressing.check_interface_name(interface)
    peer = None
    if files.exists(config_path(host, interface)):
        config = ServerConfig.load(host, interface).config
        peer = config.find_peer(name)
        if peer is not None and not peer.name:
            raise ValidationError(
                f"peer {name[:8]}… of {interface} has no name (no comment above its [Peer] "
                "block): zsn keeps a client config, named after the peer, only for the peers "
                "it added; this one's private key is on its device")
        if peer is not None:
            _refuse_unusable_name(config, peer)
            name = peer.name or name  # found by its key: the file has its name
    if peer is None and is_valid_key(name):
        raise ValidationError(
            f"peer {name[:8]}… is not in {interface}.conf (it is on the running interface "
            "only): zsn has no client config for it")
    path = client_config_path(host, interface, name)
    if not files.exists(path):
        raise ValidationError(
            f"no client config for {name!r} on {interface} ({path}): zsn only has the "
            "configs it generated; the private key of a peer added by hand is on the client"
        )
    return ClientConfig(name, interface, files.read_tracked(path).text, path)
