"""Server-side routing: client-to-client, interface-to-interface, and gateway (NAT) mode.

Each action enables forwarding persistently (``/etc/sysctl.d/``) and now (only now
in a network namespace boot settings do not reach: `forwarding_steps`), and adds
firewall rules as PostUp/PostDown pairs that name the interface as ``%i``, so the
rules follow the config they are in. When the interface is running the rules are
also applied at once (argv, no shell), and undone if a later step fails.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from zsn import values
from zsn.errors import ValidationError, ZsnError, about_input
from zsn.formats.sysctl import SysctlFile
from zsn.plan import Check, FileEdit, LiveStep, Plan
from zsn.system import commands, files, netlink, own_state
from zsn.system.host import Host
from zsn.system.namespaces import other_network_namespace
from zsn.tries.restores import FirewallUndo, firewall_undo, sysctl_undo
from zsn.wireguard import acl, acl_view, addressing, policy, settings
from zsn.wireguard.config import WIREGUARD_DIR, WgConfig, parse
from zsn.wireguard.device import default_route_device
from zsn.wireguard.server import ServerConfig
from zsn.wording import Action, Phrase

SYSCTL_FILE = "/etc/sysctl.d/99-zsn-wireguard.conf"
FORWARDING_KEYS = {4: "net.ipv4.ip_forward", 6: "net.ipv6.conf.all.forwarding"}
_FORWARDING_SCHEMA = {key: values.one_of("0", "1") for key in FORWARDING_KEYS.values()}
_FULL_TUNNEL = {"0.0.0.0/0", "::/0"}
RTPROT_RA = 9
"""A route the kernel learned from a router advertisement (linux/rtnetlink.h)."""


def _proc_path(host: Host, key: str) -> Path:
    return host.path("/proc/sys/" + key.replace(".", "/"))


def forwarding_enabled(host: Host, version: int) -> bool | None:
    """Whether the kernel forwards IPv4/IPv6 now (``None`` when it cannot be read)."""
    try:
        return files.read_text(_proc_path(host, FORWARDING_KEYS[version]), 64).strip() == "1"
    except (OSError, ZsnError):
        return None


def _write_sysctl(path: Path, value: str) -> None:
    files.write_setting(path, value + "\n")


def forwarding_steps(host: Host, versions: set[int]) -> tuple[list[FileEdit | LiveStep],
                                                             list[str]]:
    """Enable forwarding for `versions`: persistently in sysctl.d, and live when it is
    off; (steps, notes). In a network namespace that boot settings do not reach
    (forwarding is per namespace) only live, and a note says why nothing persists."""
    steps: list[FileEdit | LiveStep] = []
    notes: list[str] = []
    elsewhere = other_network_namespace(host)
    if elsewhere is None:
        steps.extend(_sysctl_file_edit(host, versions))
    else:
        notes.append(f"forwarding is set in this namespace only and nothing persists: "
                     f"{elsewhere}, and forwarding is per network namespace; "
                     f"{SYSCTL_FILE} is applied at boot to PID 1's namespace, so it is not "
                     "written. Run this again when the namespace is made again.")
    for version in sorted(versions):
        if forwarding_enabled(host, version) is False:
            proc = _proc_path(host, FORWARDING_KEYS[version])
            steps.append(LiveStep(f"enable {FORWARDING_KEYS[version]} now",
                                  partial(_write_sysctl, proc, "1"),
                                  partial(_write_sysctl, proc, "0"),
                                  (sysctl_undo(FORWARDING_KEYS[version], "0"),)))
    return steps, notes


def forwarding_risks(host: Host, steps: list[FileEdit | LiveStep]) -> tuple[tuple[str, str], ...]:
    """Turning IPv6 forwarding on makes the kernel drop every default route it learned
    from router advertisements (and ignore new ones): a session that came over such a
    route is cut at once."""
    turns_on_v6 = any(isinstance(step, LiveStep) and FORWARDING_KEYS[6] in step.description
                      for step in steps)
    if not turns_on_v6 or not host.is_live:
        return ()
    try:
        learned = [route for route in netlink.read_routes()
                   if route.family == socket.AF_INET6 and route.dst is None
                   and route.proto == RTPROT_RA]
    except ZsnError:
        return ()
    if not learned:
        return ()
    return (("::/0", "turning IPv6 forwarding on drops the default routes learned from "
             "router advertisements"),)


def _forwarding_differences(host: Host, versions: set[int]) -> list[str]:
    return [f"{FORWARDING_KEYS[version]} is not 1" for version in sorted(versions)
            if forwarding_enabled(host, version) is False]


def _sysctl_file_edit(host: Host, versions: set[int]) -> list[FileEdit]:
    path = host.path(SYSCTL_FILE)
    snapshot = files.read_tracked(path) if files.exists(path) else None
    settings_file = SysctlFile(snapshot.text if snapshot else "", _FORWARDING_SCHEMA)
    if snapshot is None:
        settings_file.comment("Written by zsn: WireGuard routing needs forwarding")
    missing = [FORWARDING_KEYS[version] for version in sorted(versions)
               if settings_file.values(FORWARDING_KEYS[version])[-1:] != ["1"]]
    if not missing:
        return []
    if not files.is_dir(path.parent):
        raise ValidationError(f"{path.parent} does not exist; cannot make forwarding "
                              "persistent")
    for key in missing:
        settings_file.set(key, "1")
    return [FileEdit(path, snapshot, settings_file.text, intent=settings_file.intent)]


@dataclass(frozen=True)
class Rule:
    """One firewall rule as written in PostUp (``%i`` for the config's own interface)."""

    command: str

    @property
    def down(self) -> str:
        return self.command.replace(" -A ", " -D ").replace(" -I ", " -D ")

    def argv(self, interface: str, delete: bool = False) -> list[str]:
        text = self.down if delete else self.command
        return text.replace("%i", interface).split()


def _tools(versions: set[int]) -> list[str]:
    return ["iptables" if version == 4 else "ip6tables" for version in sorted(versions)]


def _run_rule(rule: Rule, interface: str, delete: bool) -> None:
    commands.run(rule.argv(interface, delete), timeout=10.0)


def rule_steps(server: ServerConfig, rules: list[Rule],
               config: WgConfig | None = None) -> tuple[list[FileEdit | LiveStep], list[str]]:
    """PostUp/PostDown lines for the rules not yet in the config, and their live
    application; `config` is the config as the plan edits it (others may have changed it:
    the access rules' PostUp), written with the rules' lines."""
    config = config if config is not None else server.edited()
    interface = config.interface
    if interface is None:
        raise ValidationError(f"{server.path}: no [Interface] section")
    present = {entry.value for entry in interface.entries_for("PostUp")}
    new = [rule for rule in rules if rule.command not in present]
    steps: list[FileEdit | LiveStep] = []
    notes: list[str] = []
    if not new:
        if config.render() != server.config.render():
            steps.append(server.edit(config))
        return steps, notes
    for tool in {rule.command.split()[0] for rule in new}:
        if shutil.which(tool) is None:
            raise ValidationError(f"{tool} is not installed (Debian: apt install iptables)")
    for rule in new:
        config.append_entry(config.interface or interface, "PostUp", rule.command)
        config.append_entry(config.interface or interface, "PostDown", rule.down)
    steps.append(server.edit(config))
    device = server.live()
    if device is None:
        notes.append(f"{server.name} is not running: the rules apply when it comes up")
    else:
        for rule in new:
            steps.append(LiveStep(f"run {' '.join(rule.argv(server.name))}",
                                  partial(_run_rule, rule, server.name, False),
                                  partial(_run_rule, rule, server.name, True),
                                  (firewall_undo(rule.argv(server.name), False),)))
    return steps, notes


def _rule_differences(rules: list[FirewallUndo]) -> list[str]:
    """Verify after apply: the firewall has each rule (``iptables -C``)."""
    found = []
    for rule in rules:
        if not commands.run(rule.argv("-C"), timeout=10.0, check=False).ok:
            found.append(f"the firewall lacks {' '.join(rule.argv('-A'))}")
    return found


def _versions(server: ServerConfig) -> set[int]:
    return {a.version for a in addressing.interface_addresses(server.config)} or {4}


def _client_config_edits(host: Host, interface: str, networks: list[str]) -> list[FileEdit]:
    """Add `networks` to AllowedIPs of every client config zsn wrote for `interface`."""
    directory = host.path(f"{WIREGUARD_DIR}/clients/{interface}")
    edits: list[FileEdit] = []
    if not files.is_dir(directory):
        return edits
    own_state.check(directory, folder=True)  # refused before any plan is shown
    for path in files.list_files(directory, "*.conf"):
        snapshot = files.read_tracked(path)
        config = parse(snapshot.text, str(path))
        changed = False
        for index in range(len(config.peers)):
            peer = config.peers[index]  # re-read: every edit re-indexes the config
            current = set(peer.get_all("AllowedIPs"))
            if current & _FULL_TUNNEL:
                continue  # all traffic already goes to the server
            missing = [n for n in networks if n not in current]
            if missing:
                covered = [item for item in current if _covered(item, missing)]
                config.remove_list_items(peer, "AllowedIPs", covered)
                config.add_list_items(config.peers[index], "AllowedIPs", missing)
                changed = True
        if changed:
            edits.append(FileEdit(path, snapshot, config.render(), mode=files.PRIVATE_FILE_MODE,
                                  intent=config.intent))
    return edits


def _covered(item: str, networks: list[str]) -> bool:
    """Whether `item` (e.g. the server's /32) lies inside one of `networks`."""
    try:
        inner = ipaddress.ip_network(item, strict=False)
    except ValueError:
        return False
    for text in networks:
        outer = ipaddress.ip_network(text, strict=False)
        if inner.version == outer.version and inner.subnet_of(outer):  # type: ignore[arg-type]
            return True
    return False


def _finish(plan: Plan, steps: list[FileEdit | LiveStep], notes: list[str],
            host: Host | None = None) -> Plan:
    plan.steps.extend(steps)
    plan.notes.extend(notes)
    rules = [step.restore[0].params for step in steps if isinstance(step, LiveStep)
             and step.restore and isinstance(step.restore[0].params, FirewallUndo)]
    if rules:
        plan.checks.append(Check("firewall rules", partial(_rule_differences, rules)))
    if host is not None:
        versions = {version for version, key in FORWARDING_KEYS.items()
                    if any(isinstance(step, LiveStep) and key in step.description
                           for step in steps)}
        if versions:
            plan.checks.append(Check("forwarding", partial(_forwarding_differences, host,
                                                           versions)))
        plan.reroutes = forwarding_risks(host, steps)
    changed = [s.path for s in plan.steps if isinstance(s, FileEdit) and "/clients/" in str(s.path)]
    if changed:
        interface = changed[0].parent.name
        plan.notes.append(Phrase(
            "client configs changed: re-import them on the clients (",
            Action("show_client", f"zsn peer show {interface} NAME --qr"), ")"))
    return plan


def _access_rules(host: Host, server: ServerConfig, config: WgConfig,
                  rules: list[policy.Rule]) -> acl.PolicySteps:
    """The access rules' part of client-to-client and linked interfaces: `rules` in the
    interface's policy (it decides what reaches what; the FORWARD rules open the host's
    firewall, which may drop forwarded traffic by default)."""
    stored = acl_view.PolicyFile.load(host, server)
    wanted = stored.policy
    for rule in rules:
        wanted = acl.with_rule(wanted, rule)
    return acl.policy_steps(host, server, stored, wanted, config)


def between(source: str, destination: str) -> policy.Rule:
    """The access rule that lets `source` reach `destination` (client-to-client, links)."""
    return policy.Rule("allow", policy.Selector("name", source),
                       policy.Selector("name", destination))


def plan_client_to_client(host: Host, interface: str) -> Plan:
    """Let the clients of one interface reach each other through the server: a rule of
    its access rules (``allow IFACE -> IFACE``), and a FORWARD rule for the host's
    firewall."""
    server = ServerConfig.load(host, interface)
    versions = _versions(server)
    plan = Plan(f"let clients of {interface} reach each other")
    config = server.edited()
    access = _access_rules(host, server, config, [between(server.name, server.name)])
    rules = [Rule(f"{tool} -A FORWARD -i %i -o %i -j ACCEPT") for tool in _tools(versions)]
    steps, notes = rule_steps(server, rules, config)
    subnets = [str(a.network) for a in addressing.interface_addresses(server.config)]
    forwarding, forwarding_notes = forwarding_steps(host, versions)
    plan.checks.extend(access.checks)
    return _finish(plan, [*forwarding, *steps, *access.steps,
                          *_client_config_edits(host, interface, subnets)],
                   [*forwarding_notes, *notes, *access.notes], host)


def plan_link_interfaces(host: Host, first: str, second: str) -> Plan:
    """Route two WireGuard interfaces to each other (wg0 <-> wg1)."""
    if first == second:
        raise ValidationError("link two different interfaces")
    one, two = ServerConfig.load(host, first), ServerConfig.load(host, second)
    versions = _versions(one) & _versions(two) or {4}
    plan = Plan(f"route {first} <-> {second}")
    forwarding, all_notes = forwarding_steps(host, versions)
    all_steps: list[FileEdit | LiveStep] = list(forwarding)
    for server, other in ((one, two), (two, one)):
        config = server.edited()
        access = _access_rules(host, server, config, [between(server.name, other.name),
                                                      between(other.name, server.name)])
        rules = [Rule(f"{tool} -A FORWARD -i %i -o {other.name} -j ACCEPT")
                 for tool in _tools(versions)]
        steps, notes = rule_steps(server, rules, config)
        all_steps.extend(steps)
        all_steps.extend(access.steps)
        plan.checks.extend(access.checks)
        all_notes.extend(notes)
        all_notes.extend(access.notes)
        subnets = [str(a.network) for a in addressing.interface_addresses(other.config)
                   if a.version in versions]
        all_steps.extend(_client_config_edits(host, server.name, subnets))
    stored = settings.load(host)
    changes = {}
    for name, other_name in ((first, second), (second, first)):
        current = stored.get(name)
        if other_name not in current.links:
            current.links = [*current.links, other_name]
            changes[name] = current
    if changes:
        all_steps.append(stored.edit(changes))
    return _finish(plan, all_steps, all_notes, host)


def plan_gateway(host: Host, interface: str, egress: str | None = None) -> Plan:
    """NAT the interface's clients out of the interface holding the default route."""
    server = ServerConfig.load(host, interface)
    if egress:
        with about_input("egress"):
            addressing.check_interface_name(egress)
            if egress != interface:  # that refusal below says more
                netlink.require_link(egress, "outgoing interface")  # seen where routes are
    else:
        try:
            egress = default_route_device()
        except ZsnError as exc:
            raise ValidationError(f"cannot find the default route ({exc}): give the outgoing "
                                  "interface", field="egress") from exc
        if not egress:
            raise ValidationError("there is no default route: give the outgoing interface",
                                  field="egress")
    if egress == interface:
        raise ValidationError("the outgoing interface cannot be the WireGuard interface itself",
                              field="egress")
    versions = _versions(server)
    rules: list[Rule] = []
    for address in addressing.interface_addresses(server.config):
        tool = "iptables" if address.version == 4 else "ip6tables"
        rules += [
            Rule(f"{tool} -A FORWARD -i %i -j ACCEPT"),
            Rule(f"{tool} -A FORWARD -o %i -m conntrack --ctstate RELATED,ESTABLISHED "
                 "-j ACCEPT"),
            Rule(f"{tool} -t nat -A POSTROUTING -s {address.network} -o {egress} "
                 "-j MASQUERADE"),
        ]
    plan = Plan(f"make {interface} a gateway: NAT out of {egress}")
    steps, notes = rule_steps(server, rules)
    forwarding, forwarding_notes = forwarding_steps(host, versions | {4})
    return _finish(plan, [*forwarding, *steps], [*forwarding_notes, *notes], host)
