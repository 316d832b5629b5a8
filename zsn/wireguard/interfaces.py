"""Server interfaces: create the config (key generated, file 0600), bring up and down.

Where systemd runs (on the host, or in the tree under --root), up and down start
and stop the ``wg-quick@NAME`` unit over D-Bus, so the interface is systemd's to
supervise and `systemctl status` agrees. Elsewhere zsn runs wg-quick itself. When
the kernel has no WireGuard module, wg-quick uses wireguard-go
(``WG_QUICK_USERSPACE_IMPLEMENTATION``) and the plan says so.
"""

from __future__ import annotations

import contextlib
import ipaddress
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.plan import Check, FileEdit, LiveStep, Plan
from zsn.system import commands, files, kernel_modules, netlink
from zsn.system.host import Host
from zsn.system.systemd import systemd_runs
from zsn.tries.restores import unit_undo
from zsn.tries.undo import Outcome, Undo
from zsn.wireguard import addressing, settings, uapi
from zsn.wireguard.config import WIREGUARD_DIR, WgConfig, config_path, parse
from zsn.wireguard.device import find_device
from zsn.wireguard.keys import KeyPair

USERSPACE_IMPLEMENTATION = "wireguard-go"
WG_QUICK_TIMEOUT = 30.0


def render_server_config(name: str, addresses: list[str], listen_port: int,
                         private_key: str) -> WgConfig:
    config = WgConfig.new()
    config.append_comment(f"{name}: WireGuard server, written by zsn")
    config.append_interface([("Address", ", ".join(addresses)),
                             ("ListenPort", str(listen_port)), ("PrivateKey", private_key)])
    return config


def plan_create_interface(host: Host, name: str, addresses: list[str], listen_port: int | str,
                          endpoint_host: str | None = None) -> Plan:
    with about_input("interface"):
        addressing.check_interface_name(name)
        path = config_path(host, name)
        if files.exists(path):
            raise ValidationError(f"{path} already exists; zsn adopts it as it is")
    with about_input("address"):
        if not addresses:
            raise ValidationError("an interface needs at least one address (e.g. 10.0.0.1/24)")
        parsed = [addressing.check_interface_address(a) for a in addresses]
        versions = [a.version for a in parsed]
        if len(set(versions)) != len(versions):
            raise ValidationError("give at most one IPv4 and one IPv6 address")
    with about_input("port"):
        port = addressing.check_port(listen_port)
    _check_free(host, parsed, port)
    with about_input("endpoint"):
        endpoint = addressing.check_endpoint_host(endpoint_host) if endpoint_host else None
    keys = KeyPair.generate()
    config = render_server_config(name, [str(a) for a in parsed], port, keys.private_key)
    plan = Plan(f"create WireGuard interface {name} ({', '.join(map(str, parsed))}, "
                f"port {port})")
    plan.steps.append(FileEdit(path, None, config.render(), mode=files.PRIVATE_FILE_MODE,
                               private_dir=True, intent=config.intent))
    if endpoint:
        stored = settings.load(host)
        current = stored.get(name)
        current.endpoint_host = endpoint
        plan.steps.append(stored.edit({name: current}))
    plan.notes.append(f"public key {keys.public_key}")
    return plan


def _check_free(host: Host, addresses: list[addressing.IPInterface], port: int) -> None:
    """Refuse a port or subnet another interface's config already uses: wg-quick up would
    fail on the port, and overlapping subnets send one interface's traffic to the other."""
    for path in files.list_files(host.path(WIREGUARD_DIR), "*.conf"):
        try:
            other = parse(files.read_tracked(path).text, str(path))
        except ZsnError:
            continue  # lint reports a config it cannot read
        interface = other.interface
        if interface is not None and (interface.get("ListenPort") or "").strip() == str(port):
            raise ValidationError(f"listen port {port} is already used by {path.stem}",
                                  field="port")
        for mine in addresses:
            for theirs in addressing.interface_addresses(other):
                if mine.version == theirs.version and mine.network.overlaps(theirs.network):
                    raise ValidationError(f"address {mine} overlaps {path.stem}'s subnet "
                                          f"{theirs.network}", field="address")


@dataclass(frozen=True)
class NewInterface:
    """What the new-interface form suggests: free now, so it can be kept as it is."""

    name: str
    address: str
    port: int


FIRST_PORT = 51820
SUGGESTED_SUBNETS = "10.66.{}.0/24"


def free_interface(host: Host) -> NewInterface:
    """A name no config or link has, a port no config listens on, and a /24 that no
    config's subnet, no address here and no route (the default aside) covers."""
    names: set[str] = set()
    ports: set[int] = set()
    taken: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for path in files.list_files(host.path(WIREGUARD_DIR), "*.conf"):
        names.add(path.stem)
        try:
            other = parse(files.read_tracked(path).text, str(path))
        except ZsnError:
            continue
        listen = (other.interface.get("ListenPort") or "").strip() if other.interface else ""
        if listen.isdigit():
            ports.add(int(listen))
        taken += [address.network for address in addressing.interface_addresses(other)]
    if host.is_live:
        with contextlib.suppress(ZsnError):
            links = netlink.list_links()
            names |= set(links)
            taken += [ipaddress.ip_interface(a).network for link in links.values()
                      for a in link.addresses]
        with contextlib.suppress(ZsnError):
            taken += [ipaddress.ip_network(f"{route.dst}/{route.dst_len}", strict=False)
                      for route in netlink.read_routes() if route.dst is not None]
    name = next(f"wg{n}" for n in range(len(names) + 1) if f"wg{n}" not in names)
    port = next(p for p in range(FIRST_PORT, FIRST_PORT + len(ports) + 1) if p not in ports)
    for third in range(256):
        subnet = ipaddress.ip_network(SUGGESTED_SUBNETS.format(third))
        if not any(subnet.version == other.version and subnet.overlaps(other)
                   for other in taken):
            return NewInterface(name, f"{next(subnet.hosts())}/24", port)
    return NewInterface(name, "", port)  # 10.66.0.0/16 is all used: the user says


def plan_set_endpoint(host: Host, name: str, endpoint_host: str) -> Plan:
    addressing.check_interface_name(name)
    endpoint = addressing.check_endpoint_host(endpoint_host)
    stored = settings.load(host)
    current = stored.get(name)
    current.endpoint_host = endpoint
    plan = Plan(f"clients of {name} connect to {endpoint}")
    plan.steps.append(stored.edit({name: current}))
    return plan


def kernel_has_wireguard() -> bool:
    """Whether wg-quick gets a kernel interface: the module may not be loaded yet."""
    return kernel_modules.module_available("wireguard")


def unit_name(name: str) -> str:
    return f"wg-quick@{name}.service"


def _unit(host: Host, verb: str, name: str) -> None:
    from zsn.system.dbus import control_unit

    job = control_unit(host, unit_name(name), verb, missing="is wireguard-tools installed?",
                       timeout=WG_QUICK_TIMEOUT)
    if not job.ok:
        raise ZsnError(job.describe())


def wg_quick(host: Host, action: str, name: str) -> None:
    """``wg-quick up|down NAME``, with wireguard-go when the kernel has no module.

    Detached (a session of its own, no terminal): the wireguard-go it starts would
    otherwise be in zsn's process group and session, and die with the SSH connection
    or the tmux window (where systemd runs, the ``wg-quick@`` unit runs it instead)."""
    target = name if host.is_live else str(config_path(host, name))
    env = None if kernel_has_wireguard() else {
        "WG_QUICK_USERSPACE_IMPLEMENTATION": USERSPACE_IMPLEMENTATION}
    commands.run(["wg-quick", action, target], timeout=WG_QUICK_TIMEOUT, env=env,
                 detached=True)


def stale_socket(host: Host, name: str) -> Path | None:
    """The UAPI socket of `name` when no daemon is behind it (it died and left it)."""
    path = uapi.socket_paths(host).get(name)
    return path if path is not None and uapi.is_stale(path) else None


def _remove_stale(path: Path) -> None:
    if files.exists(path) and uapi.is_stale(path):  # not one a daemon opened meanwhile
        files.remove(path)


def plan_up(host: Host, name: str) -> Plan:
    addressing.check_interface_name(name)
    path = config_path(host, name)
    if not files.exists(path):
        raise ValidationError(f"no interface {name!r}: {path} does not exist")
    if find_device(host, name) is not None:
        raise ValidationError(f"{name} is already up")
    config = parse(files.read_tracked(path).text, str(path))
    plan = Plan(f"bring {name} up", touches=frozenset({name}),
                reroutes=_routed_by(config, name))
    stale = stale_socket(host, name)
    if stale is not None:
        # Nothing to put back: a socket nobody listens on is no state.
        plan.steps.append(LiveStep(f"remove {stale}: a stale socket, no daemon behind it",
                                   partial(_remove_stale, stale), None, ()))
    if not kernel_has_wireguard():
        plan.notes.append("the kernel has no WireGuard module: wg-quick uses the userspace "
                          "implementation wireguard-go (slower, same protocol)")
    plan.checks.append(Check(f"{name} up", partial(_up_differences, host, name, config)))
    if systemd_runs(host):
        plan.steps.append(LiveStep(f"start {unit_name(name)} (systemd, over D-Bus)",
                                   partial(_unit, host, "start", name),
                                   partial(_unit, host, "stop", name),
                                   (unit_undo(unit_name(name), False),)))
        return plan
    if shutil.which("wg-quick") is None:
        raise ValidationError("wg-quick is not installed (Debian: apt install wireguard-tools)")
    if not kernel_has_wireguard() and shutil.which(USERSPACE_IMPLEMENTATION) is None:
        raise ValidationError("the kernel has no WireGuard module and wireguard-go is not "
                              "installed (Debian: apt install wireguard-go)")
    plan.steps.append(LiveStep(f"wg-quick up {name}", partial(wg_quick, host, "up", name),
                               partial(wg_quick, host, "down", name),
                               (wg_quick_undo(name, False),)))
    return plan


def _routed_by(config: WgConfig, name: str) -> tuple[tuple[str, str], ...]:
    """The networks wg-quick routes into the interface: its peers' AllowedIPs (none with
    ``Table = off``)."""
    table = (config.interface.get("Table") or "auto").strip().lower() \
        if config.interface is not None else "auto"
    if table == "off":
        return ()
    found: dict[str, str] = {}
    for peer in config.peers:
        if peer.disabled:
            continue
        for allowed in peer.get_all("AllowedIPs"):
            for network in allowed.split(","):
                if network.strip():
                    found.setdefault(network.strip(),
                                     f"wg-quick routes {name}'s AllowedIPs into {name}")
    return tuple(found.items())


def _up_differences(host: Host, name: str, config: WgConfig) -> list[str]:
    """Verify after `wg up`: the interface runs, with its addresses and its peers."""
    device = find_device(host, name)
    if device is None:
        return [f"{name} is not running"]
    found = []
    if host.is_live:  # a tree under --root (a container) has its links elsewhere
        live = netlink.list_links().get(name)
        addresses = set(live.addresses) if live is not None else set()
        for address in addressing.interface_addresses(config):
            if str(address) not in addresses:
                found.append(f"{name} lacks its address {address}")
    keys = {peer.public_key for peer in device.peers()}
    for peer in config.peers:
        key = (peer.get("PublicKey") or "").strip()
        if key and key not in keys and not peer.disabled:
            found.append(f"{name} runs without its peer {peer.name or key[:8] + '…'}")
    return found


def _down_differences(host: Host, name: str) -> list[str]:
    return [f"{name} still runs"] if find_device(host, name) is not None else []


def plan_down(host: Host, name: str) -> Plan:
    addressing.check_interface_name(name)
    if not files.exists(config_path(host, name)):
        raise ValidationError(f"no interface {name!r}: {config_path(host, name)} does not exist")
    plan = Plan(f"bring {name} down", touches=frozenset({name}))
    plan.checks.append(Check(f"{name} down", partial(_down_differences, host, name)))
    if systemd_runs(host):
        plan.steps.append(LiveStep(f"stop {unit_name(name)} (systemd, over D-Bus)",
                                   partial(_unit, host, "stop", name),
                                   partial(_unit, host, "start", name),
                                   (unit_undo(unit_name(name), True),)))
    else:
        plan.steps.append(LiveStep(f"wg-quick down {name}", partial(wg_quick, host, "down", name),
                                   partial(wg_quick, host, "up", name),
                                   (wg_quick_undo(name, True),)))
    return plan


@dataclass(frozen=True)
class WgQuickUndo:
    """Interface `interface` up (from its config) or down again through wg-quick: a
    name, never a path (``wg-quick up /x.conf`` would run that file's commands)."""

    interface: str
    up: bool

    def __post_init__(self) -> None:
        try:
            addressing.check_interface_name(self.interface)
        except ValidationError as exc:
            raise ValueError(str(exc)) from None

    @property
    def name(self) -> str:
        return f"wg-quick {self.interface}"


def wg_quick_undo(name: str, up: bool) -> Undo:
    return Undo("wg-quick", WgQuickUndo(name, up))


class WgQuickRestorer:
    params = WgQuickUndo

    def describe(self, params: WgQuickUndo) -> str:
        return f"bring {params.interface} {'up' if params.up else 'down'} again (wg-quick)"

    def objects(self, params: WgQuickUndo) -> tuple[str, ...]:
        return (params.name,)

    def observe(self, host: Host, params: WgQuickUndo) -> dict[str, object]:
        return {params.name: find_device(host, params.interface) is not None}

    def wanted(self, params: WgQuickUndo) -> dict[str, object]:
        return {params.name: params.up}

    def restore(self, host: Host, params: WgQuickUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        name, up = params.interface, params.up
        outcome = Outcome()
        if params.name in leave or (find_device(host, name) is not None) == up:
            return outcome
        wg_quick(host, "up" if up else "down", name)
        outcome.done.append(f"wg-quick {'up' if up else 'down'} {name}")
        return outcome

    def commands(self, host: Host, params: WgQuickUndo) -> list[str]:
        return [f"wg-quick {'up' if params.up else 'down'} {params.interface}"]


WG_QUICK = WgQuickRestorer()
"""An interface up or down again through wg-quick (where systemd runs it, the ``unit``
kind of `zsn.tries.restores` does)."""
