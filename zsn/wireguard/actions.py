"""Every change to a server interface's peers after they were added, as a `Plan`:
remove, disable, enable, rename, the subnets behind a peer (site-to-site) and expiry;
and the plan pieces adding a peer shares (`zsn.wireguard.onboarding`).

Each plan edits the server config (only the peer's lines change) and changes the
running interface live (UAPI or netlink, never a restart). The pane and
``zsn peer ...`` build their plans here.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.plan import Check, FileEdit, LiveStep, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.tries.restores import file_undo
from zsn.wireguard import acl, addressing
from zsn.wireguard.config import (
    Section,
    WgConfig,
    check_peer_name,
    config_path,
    parse,
    parse_shared,
)
from zsn.wireguard.device import LiveDevice, PeerSettings, add_route, remove_route
from zsn.wireguard.expiry import Expired, check_not_expired, describe, set_expiry
from zsn.wireguard.keys import public_key_from_private
from zsn.wireguard.restore import peer_undo, route_undo
from zsn.wireguard.server import ServerConfig, client_config_path, client_file, usable_peer


def live_step_add(device: LiveDevice, peer: PeerSettings, what: str) -> LiveStep:
    return LiveStep(
        f"{what} on running {device.name} ({device.implementation}, no restart)",
        lambda: device.add_peer(peer),
        lambda: device.remove_peer(peer.public_key),
        (peer_undo(device.name, peer.public_key, None),),
    )


def live_step_remove(device: LiveDevice, peer: PeerSettings, what: str) -> LiveStep:
    return LiveStep(
        f"{what} on running {device.name} ({device.implementation}, no restart)",
        lambda: device.remove_peer(peer.public_key),
        lambda: device.add_peer(peer),
        (peer_undo(device.name, peer.public_key, peer),),
    )


def route_steps(device: LiveDevice, networks: list[str], add: bool) -> list[LiveStep]:
    steps: list[LiveStep] = []
    for network in networks:
        put = partial(add_route, device.name, network)
        drop = partial(remove_route, device.name, network)
        restore = (route_undo(device.name, network, not add),)
        if add:
            steps.append(LiveStep(f"route {network} dev {device.name}", put, drop, restore))
        else:
            steps.append(LiveStep(f"remove route {network} dev {device.name}", drop, put,
                                  restore))
    return steps


def down_note(server: ServerConfig) -> str:
    return f"{server.name} is not running: the change takes effect when it comes up"


def outside_subnet(server: ServerConfig, networks: list[str]) -> list[str]:
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


def check_routed_free(config: WgConfig, routed: list[str], owner: Section | None) -> None:
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


def live_peer_check(device: LiveDevice, peer: PeerSettings) -> Check:
    """Verify after apply: the running interface has the peer, with its allowed IPs."""

    def differences() -> list[str]:
        live = next((each for each in device.peers() if each.public_key == peer.public_key),
                    None)
        if live is None:
            return [f"{device.name} runs without peer {peer.public_key[:8]}…"]
        if set(live.allowed_ips) != set(peer.allowed_ips):
            return [f"peer {peer.public_key[:8]}… has allowed IPs "
                    f"{', '.join(live.allowed_ips) or 'none'}, not "
                    f"{', '.join(peer.allowed_ips)}"]
        return []

    return Check(f"peer {peer.public_key[:8]}… on {device.name}", differences)


def routes_check(device: LiveDevice, networks: list[str]) -> Check:
    """Verify after apply: the routes into the interface are there."""

    def differences() -> list[str]:
        from zsn.system import netlink

        routed = {ipaddress.ip_network(f"{route.dst}/{route.dst_len}", strict=False)
                  for route in netlink.read_routes({device.name}) if route.dst}
        return [f"no route to {network} dev {device.name}" for network in networks
                if ipaddress.ip_network(network, strict=False) not in routed]

    return Check(f"routes into {device.name}", differences)


def settings_of(peer: Section) -> PeerSettings:
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
    live_settings = settings_of(peer)
    client_path = client_file(host, server.name, peer)
    removed = frozenset({peer.name}) if peer.name else frozenset()
    edited.remove_peer(peer)
    rules = acl.peer_change_steps(host, server, edited, removed=removed)
    plan = Plan(f"remove peer {name} from {server.name}")
    plan.steps.append(server.edit(edited))
    if client_path is not None and files.exists(client_path):
        kept = files.backup_path(client_path)
        client = files.read_tracked(client_path)
        old_kept = files.read_tracked(kept) if files.exists(kept) else None
        plan.steps.append(LiveStep(f"move {client_path} to {kept.name}",
                                   lambda: files.rename(client_path, kept),
                                   lambda: files.rename(kept, client_path),
                                   (file_undo(host, client_path, client, None),
                                    file_undo(host, kept, old_kept, client.text))))
    device = server.live()
    if device is not None and not peer.disabled:
        plan.steps.append(live_step_remove(device, live_settings, f"remove peer {name}"))
        plan.steps.extend(route_steps(
            device, outside_subnet(server, list(live_settings.allowed_ips)), add=False))
    elif device is None:
        plan.notes.append(down_note(server))
    return with_rules(plan, rules)


def with_rules(plan: Plan, rules: acl.PolicySteps) -> Plan:
    """`plan` with the access rules' part of its peer change (`acl.peer_change_steps`)
    after its own steps."""
    plan.steps.extend(rules.steps)
    plan.checks.extend(rules.checks)
    plan.notes.extend(note for note in rules.notes if note not in plan.notes)
    return plan


def _file_and_live(host: Host, server: ServerConfig, edited: WgConfig, title: str,
                   live: Callable[[LiveDevice], LiveStep], policy_tests: bool = True) -> Plan:
    """A plan editing the server config, then changing the running interface if it is
    up, and its access rules' sets."""
    rules = acl.peer_change_steps(host, server, edited, policy_tests=policy_tests)
    plan = Plan(title, [server.edit(edited)])
    device = server.live()
    if device is None:
        plan.notes.append(down_note(server))
    else:
        plan.steps.append(live(device))
    return with_rules(plan, rules)


def plan_disable_peer(host: Host, interface: str, name: str, policy_tests: bool = True) -> Plan:
    """Comment the peer's block out (``#[disabled]``) and take it off the live interface
    (and out of the access rules' sets). `policy_tests` False: an expired peer is taken
    off even when that breaks a test of the access rules."""
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    live_settings = settings_of(peer)
    edited.disable_peer(peer)
    return _file_and_live(
        host, server, edited, f"disable peer {name} on {server.name} (kept in the file)",
        lambda device: live_step_remove(device, live_settings, f"remove peer {name}"),
        policy_tests)


def plan_enable_peer(host: Host, interface: str, name: str) -> Plan:
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    check_not_expired(edited, peer, server.name, time.time())
    edited.enable_peer(peer)
    enabled = edited.require_peer(name)
    live_settings = settings_of(enabled)
    _check_enable_free(edited, enabled)
    return _file_and_live(
        host, server, edited, f"enable peer {name} on {server.name}",
        lambda device: live_step_add(device, live_settings, f"add peer {name}"))


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
    old_client = client_file(host, server.name, peer)
    plan = Plan(f"rename peer {name} to {new_name} on {server.name}")
    if old_client is not None and files.lexists(old_client):
        if files.lexists(new_client):
            raise ValidationError(f"{new_client} already exists", field="new_name")
        snapshot = files.read_tracked(old_client)
        renamed = _client_comment_renamed(snapshot.text, server.name, new_name)
        if renamed != snapshot.text:
            # No .zsn-bak: it would stay behind under the old name; undo restores the text.
            plan.steps.append(FileEdit(old_client, snapshot, renamed,
                                       mode=files.PRIVATE_FILE_MODE, backup=False,
                                       intent=parse(snapshot.text, str(old_client)).intent))
        plan.steps.append(LiveStep(f"move {old_client} to {new_client.name}",
                                   partial(files.move, old_client, new_client),
                                   partial(files.move, new_client, old_client)))
    elif files.lexists(new_client):
        _adopt_moved_client(plan, server, peer, new_client, new_name)
    old_name = peer.name
    edited.rename_peer(peer, new_name)
    rules = acl.peer_change_steps(host, server, edited, renamed={old_name: new_name}
                                  if old_name else {})
    plan.steps.append(server.edit(edited))
    return with_rules(plan, rules)


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
                                   backup=False, intent=parse(snapshot.text, str(client)).intent))
    plan.notes.append(f"{client} is this peer's client config, moved by a rename that was "
                      "interrupted: kept")


def plan_set_routed_subnets(host: Host, interface: str, name: str,
                            subnets: list[str]) -> Plan:
    """Set the networks behind a peer (site-to-site): its server-side AllowedIPs and routes."""
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    routed = addressing.check_allowed_networks(subnets)
    check_routed_free(edited, routed, peer)
    before = settings_of(peer)
    host_routes = [n for n in before.allowed_ips
                   if not outside_subnet(server, [n]) or _is_host(n)]
    old_routed = [n for n in before.allowed_ips if n not in host_routes]
    edited.remove_list_items(peer, "AllowedIPs", old_routed)
    peer = edited.require_peer(name)
    edited.add_list_items(peer, "AllowedIPs", routed)
    after = settings_of(edited.require_peer(name))
    rules = acl.peer_change_steps(host, server, edited)
    plan = Plan(f"set subnets behind {name} on {server.name}: {', '.join(routed) or 'none'}")
    plan.steps.append(server.edit(edited))
    device = server.live()
    if device is not None and not peer.disabled:
        plan.steps.append(LiveStep(
            f"set allowed IPs of {name} on running {device.name}",
            lambda: device.add_peer(after), lambda: device.add_peer(before),
            (peer_undo(device.name, before.public_key, before),)))
        plan.steps.extend(route_steps(device, [n for n in old_routed if n not in routed],
                                       add=False))
        plan.steps.extend(route_steps(device, outside_subnet(server, routed), add=True))
        plan.checks.append(live_peer_check(device, after))
        if outside_subnet(server, routed):
            plan.checks.append(routes_check(device, outside_subnet(server, routed)))
    elif device is None:
        plan.notes.append(down_note(server))
    return with_rules(plan, rules)


def _is_host(network: str) -> bool:
    try:
        parsed = ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False
    return parsed.prefixlen == parsed.max_prefixlen


def plan_expire(host: Host, interface: str, name: str, at: int | None) -> Plan:
    """The plan of ``zsn peer expire``: the expiry line, nothing live (the peer is
    taken off when the time comes)."""
    server = ServerConfig.load(host, interface)
    edited = server.edited()
    peer = usable_peer(edited, name)
    set_expiry(edited, peer, at)
    if at is None:
        title = f"peer {name} on {server.name} never expires"
    else:
        title = f"peer {name} on {server.name} expires {describe(at)}"
    plan = Plan(title, [server.edit(edited)])
    if peer.disabled:
        enable = "zsn peer enable" if at is None or at > time.time() else ""
        plan.notes.append(f"{name} is disabled; {enable} {server.name} {name} brings it back"
                          if enable else f"{name} is disabled")
    else:
        plan.notes.append("whichever zsn runs (the TUI, zsn serve, or the zsn-history timer) "
                          "disables the peer within a minute of that time")
    return plan


def enforce(host: Host, expired: list[Expired],
            done: Callable[[Expired], None]) -> list[str]:
    """Disable each expired peer (file and live interface); `done` is told of each.
    Returns what could not be done (another zsn may have done it first: not an error)."""
    problems: list[str] = []
    for peer in expired:
        try:
            plan_disable_peer(host, peer.interface, peer.public_key,
                              policy_tests=False).apply()
        except ZsnError as exc:
            try:
                config = parse_shared(files.read_text(config_path(host, peer.interface)),
                                      str(config_path(host, peer.interface)))
                still = config.find_peer(peer.public_key)
            except ZsnError:
                still = None
            if still is None or still.disabled:
                continue  # taken off meanwhile (another zsn, an admin)
            problems.append(f"expired peer {peer.name} on {peer.interface} could not be "
                            f"disabled: {exc}")
            continue
        done(peer)
    return problems
