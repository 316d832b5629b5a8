"""Adding a peer (onboarding): the request the form and ``zsn peer add`` make, the
defaults the form pre-fills, the plan and the client config, and showing it again.

The plan writes the client config 0600 under ``/etc/wireguard/clients/<iface>/``,
then edits the server config (the commit), then adds the peer to the running
interface (UAPI or netlink, never a restart). Later changes to a peer are
`zsn.wireguard.actions`'.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.plan import FileEdit, Plan
from zsn.system import files, own_state
from zsn.system.host import Host
from zsn.wireguard import addressing, settings
from zsn.wireguard.acl import refuse_group_name
from zsn.wireguard.actions import (
    check_routed_free,
    down_note,
    live_peer_check,
    live_step_add,
    outside_subnet,
    route_steps,
    routes_check,
    settings_of,
)
from zsn.wireguard.config import (
    Section,
    WgConfig,
    check_peer_name,
    config_path,
    parse,
)
from zsn.wireguard.device import LiveDevice, PeerSettings
from zsn.wireguard.keys import (
    KeyPair,
    check_key,
    generate_preshared_key,
    is_valid_key,
    public_key_from_private,
)
from zsn.wireguard.schema import HOOK_KEYS
from zsn.wireguard.server import (
    DEFAULT_KEEPALIVE,
    ServerConfig,
    client_config_path,
    has_resolver,
    refuse_unusable_name,
)
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
) -> WgConfig:
    """The client config of a peer zsn adds (`WgConfig.render` gives its text)."""
    config = WgConfig.new()
    config.append_comment(f"{check_peer_name(name)}: client of {interface}, written by zsn")
    fields = [("PrivateKey", private_key)] if private_key else []
    fields.append(("Address", ", ".join(addresses)))
    if dns:
        fields.append(("DNS", ", ".join(dns)))
    config.append_interface(fields, note=None if private_key else (
        "PrivateKey: the device's own key (its public key was given to zsn)"))
    peer = [("PublicKey", server_public_key)]
    if preshared_key:
        peer.append(("PresharedKey", preshared_key))
    peer += [("AllowedIPs", ", ".join(allowed_ips)), ("Endpoint", endpoint)]
    if keepalive:
        peer.append(("PersistentKeepalive", str(keepalive)))
    config.append_peer(None, peer, label=f"{interface} server")
    return config


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
        refuse_group_name(host, server.name, name)
        client_path = client_config_path(host, server.name, name)
        existing = server.config.find_peer(name)
        finish = _finish_interrupted_add(host, server, existing, name, client_path)
        if finish is not None:
            return finish
        if existing is not None:
            hint: tuple[str | Action, ...] = (
                " (its client config: ", Action("show_client",
                                                f"zsn peer show {server.name} {name}"), ")"
            ) if files.exists(client_path) else ()
            raise ValidationError(Phrase(f"{server.name} already has a peer named {name!r}",
                                         *hint))
    own_state.check(client_path.parent, folder=True)  # refused before any plan is shown
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
        check_routed_free(server.config, routed, None)

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

    client = render_client_config(
        name=name, interface=server.name, private_key=private_key,
        addresses=chosen.host_routes(), dns=dns, server_public_key=server.public_key,
        preshared_key=psk, allowed_ips=client_allowed_ips(host, server, profile),
        endpoint=endpoint, keepalive=keepalive,
    )
    text = client.render()
    plan = Plan(f"add peer {name} to {server.name} ({PROFILE_LABELS[profile]}, "
                f"{', '.join(str(a) for a in chosen.addresses)})",
                warnings=list(chosen.warnings), notes=list(chosen.notes))
    plan.steps.append(FileEdit(client_path, leftover, text, mode=files.PRIVATE_FILE_MODE,
                               private_dir=True, backup=False,
                               intent=client.intent))
    if leftover is not None:
        plan.notes.append(f"replaces {client_path}, left by an add that was interrupted: no "
                          f"peer of {server.name} has its key")
    plan.steps.append(server.edit(edited))
    _remember_endpoint(plan, server, typed_endpoint)
    if device is not None:
        peer = PeerSettings(public_key, psk, tuple(server_allowed))
        plan.steps.append(live_step_add(device, peer, f"add peer {name}"))
        plan.steps.extend(route_steps(device, outside_subnet(server, routed), add=True))
        plan.checks.append(live_peer_check(device, peer))
        if outside_subnet(server, routed):
            plan.checks.append(routes_check(device, outside_subnet(server, routed)))
    else:
        plan.notes.append(down_note(server))
    if dns and not has_resolver(host):
        plan.notes.append("the client config sets DNS: the client needs resolvconf or "
                          "resolvectl, or wg-quick will not bring it up")
    plan.output = text
    return plan, ClientConfig(name, server.name, text, client_path)


def _finish_interrupted_add(host: Host, server: ServerConfig, peer: Section | None, name: str,
                            client_path: Path) -> tuple[Plan, ClientConfig] | None:
    """The rest of an add that was killed after saving the server config (the commit)
    and before the running interface had the peer: the same command run again puts it
    live (with its routes) instead of refusing a duplicate. None when there is nothing
    to finish: no such peer, a disabled one, or the interface is down or has it."""
    device = server.live()
    if peer is None or peer.disabled or device is None:
        return None
    wanted = settings_of(peer)
    if any(live.public_key == wanted.public_key for live in device.peers()):
        return None
    plan = Plan(f"finish adding peer {name} to {server.name} (in its config, not live: an "
                "add was interrupted)")
    plan.steps.append(live_step_add(device, wanted, f"add peer {name}"))
    plan.steps.extend(route_steps(device, outside_subnet(server, list(wanted.allowed_ips)),
                                  add=True))
    plan.checks.append(live_peer_check(device, wanted))
    text = ""
    if files.exists(client_path):
        text = files.read_tracked(client_path).text
        refuse_client_commands(text, str(client_path))
        plan.output = text
    else:
        plan.notes.append(f"{client_path} is gone: the device keeps its key; remove the peer "
                          "and add it again for a new client config")
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
            refuse_unusable_name(config, peer)
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
    text = files.read_tracked(path).text
    refuse_client_commands(text, str(path))
    return ClientConfig(name, interface, text, path)


def refuse_client_commands(text: str, source: str) -> None:
    """Refuse a client config that would run commands as root on the client (PreUp,
    PostUp, PreDown, PostDown): zsn never hands one out."""
    config = parse(text, source)
    for section in config.sections:
        for entry in section.entries:
            if entry.key.lower() in HOOK_KEYS and not section.disabled:
                raise ValidationError(
                    f"{source}:{entry.line + 1}: {entry.key} has wg-quick run a command as "
                    "root on the client; zsn hands out no client config that does: remove "
                    "the line, then show it again")
