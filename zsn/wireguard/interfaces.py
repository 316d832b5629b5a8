"""Server interfaces: create the config (key generated, file 0600), bring up and down.

Where systemd runs (on the host, or in the tree under --root), up and down start
and stop the ``wg-quick@NAME`` unit over D-Bus, so the interface is systemd's to
supervise and `systemctl status` agrees. Elsewhere zsn runs wg-quick itself. When
the kernel has no WireGuard module, wg-quick uses wireguard-go
(``WG_QUICK_USERSPACE_IMPLEMENTATION``) and the plan says so.
"""

from __future__ import annotations

import shutil
from functools import partial

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.plan import FileEdit, LiveStep, Plan
from zsn.system import commands, files, kernel_modules
from zsn.system.host import Host
from zsn.wireguard import addressing, settings
from zsn.wireguard.config import WIREGUARD_DIR, config_path, parse
from zsn.wireguard.device import find_device
from zsn.wireguard.keys import KeyPair

USERSPACE_IMPLEMENTATION = "wireguard-go"
WG_QUICK_TIMEOUT = 30.0


def render_server_config(name: str, addresses: list[str], listen_port: int,
                         private_key: str) -> str:
    return (
        f"# {name}: WireGuard server, written by zsn\n"
        "[Interface]\n"
        f"Address = {', '.join(addresses)}\n"
        f"ListenPort = {listen_port}\n"
        f"PrivateKey = {private_key}\n"
    )


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
    text = render_server_config(name, [str(a) for a in parsed], port, keys.private_key)
    plan = Plan(f"create WireGuard interface {name} ({', '.join(map(str, parsed))}, "
                f"port {port})")
    plan.steps.append(FileEdit(path, None, text, mode=files.PRIVATE_FILE_MODE, private_dir=True))
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


def systemd_runs(host: Host) -> bool:
    """Whether systemd is the running init: sd_booted()'s test, or, for a tree under
    --root whose /run is private (a container), systemd answering on its bus."""
    if files.is_dir(host.path("/run/systemd/system")):
        return True
    if not files.exists(host.path("/run/dbus/system_bus_socket")):
        return False
    from zsn.system.dbus import SYSTEMD, SYSTEMD_MANAGER, SYSTEMD_PATH, run_sync

    try:
        run_sync(host, lambda bus: bus.get_all(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER),
                 timeout=2.0)
    except ZsnError:
        return False
    return True


def unit_name(name: str) -> str:
    return f"wg-quick@{name}.service"


def _unit(host: Host, verb: str, name: str) -> None:
    from zsn.system.dbus import control_unit

    job = control_unit(host, unit_name(name), verb, missing="is wireguard-tools installed?",
                       timeout=WG_QUICK_TIMEOUT)
    if not job.ok:
        raise ZsnError(job.describe())


def _wg_quick(host: Host, action: str, name: str) -> None:
    target = name if host.is_live else str(config_path(host, name))
    env = None if kernel_has_wireguard() else {
        "WG_QUICK_USERSPACE_IMPLEMENTATION": USERSPACE_IMPLEMENTATION}
    commands.run(["wg-quick", action, target], timeout=WG_QUICK_TIMEOUT, env=env)


def plan_up(host: Host, name: str) -> Plan:
    addressing.check_interface_name(name)
    path = config_path(host, name)
    if not files.exists(path):
        raise ValidationError(f"no interface {name!r}: {path} does not exist")
    if find_device(host, name) is not None:
        raise ValidationError(f"{name} is already up")
    plan = Plan(f"bring {name} up")
    if not kernel_has_wireguard():
        plan.notes.append("the kernel has no WireGuard module: wg-quick uses the userspace "
                          "implementation wireguard-go (slower, same protocol)")
    if systemd_runs(host):
        plan.steps.append(LiveStep(f"start {unit_name(name)} (systemd, over D-Bus)",
                                   partial(_unit, host, "start", name),
                                   partial(_unit, host, "stop", name)))
        return plan
    if shutil.which("wg-quick") is None:
        raise ValidationError("wg-quick is not installed (Debian: apt install wireguard-tools)")
    if not kernel_has_wireguard() and shutil.which(USERSPACE_IMPLEMENTATION) is None:
        raise ValidationError("the kernel has no WireGuard module and wireguard-go is not "
                              "installed (Debian: apt install wireguard-go)")
    plan.steps.append(LiveStep(f"wg-quick up {name}", partial(_wg_quick, host, "up", name),
                               partial(_wg_quick, host, "down", name)))
    return plan


def plan_down(host: Host, name: str) -> Plan:
    addressing.check_interface_name(name)
    if not files.exists(config_path(host, name)):
        raise ValidationError(f"no interface {name!r}: {config_path(host, name)} does not exist")
    plan = Plan(f"bring {name} down")
    if systemd_runs(host):
        plan.steps.append(LiveStep(f"stop {unit_name(name)} (systemd, over D-Bus)",
                                   partial(_unit, host, "stop", name),
                                   partial(_unit, host, "start", name)))
    else:
        plan.steps.append(LiveStep(f"wg-quick down {name}", partial(_wg_quick, host, "down", name),
                                   partial(_wg_quick, host, "up", name)))
    return plan
