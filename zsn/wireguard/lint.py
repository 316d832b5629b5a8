"""Advice on WireGuard configs: findings with ids, severities and one-line fixes.

Findings come from the files under ``<root>/etc/wireguard`` and the host's state
(forwarding, resolvconf). A fix that is safe to apply without further thought
carries a plan builder (`Finding.fix_plan`): the TUI offers it on one key. What
changes things (plans, routing, live devices, commands) loads when such a plan is
built, not when lint runs: `zsn --export` lints every config.
"""

from __future__ import annotations

import re
import stat
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from zsn.errors import ZsnError
from zsn.lint import Finding
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import addressing, policy, settings
from zsn.wireguard.config import WIREGUARD_DIR, Section, WgConfig, parse
from zsn.wireguard.refusals import refusals
from zsn.wireguard.server import DEFAULT_KEEPALIVE, ServerConfig, has_resolver

if TYPE_CHECKING:
    from zsn.plan import Plan

SUBJECT = "interface"
RULES = {
    "WG000": "config cannot be read or parsed",
    "WG001": "AllowedIPs overlap between peers",
    "WG002": "duplicate public keys",
    "WG003": "peer address outside the interface subnet",
    "WG004": "SaveConfig = true (wg-quick rewrites the file, losing comments)",
    "WG005": "DNS = without resolvconf or resolvectl",
    "WG006": "config or key files readable by others",
    "WG007": "PostUp/PostDown naming another interface",
    "WG008": "routing or NAT set up while forwarding is off",
    "WG009": "client without PersistentKeepalive",
    "WG010": "a name read from a file that cannot stand for a file (a peer named like a "
             "path, a bad interface name in zsn's settings)",
    "WG011": "a line wg or wg-quick refuses (a key that is not 32-byte base64, a port or "
             "keepalive that is not a number, an unknown key, a peer without a PublicKey)",
    "WG012": "a peer expires within 7 days",
    "WG013": "a peer has expired but is still enabled (no zsn process ran since)",
    "WG014": "an Expires line zsn cannot read",
    "WG015": "access rules that cannot be read or name what the interface lacks",
    "WG016": "the kernel's access rules (nftables) differ from the policy file",
    "WG017": "access rules that a boot or wg-quick up would not load as the policy says",
    "WG018": "a test of the access rules fails",
}
_RULE_KEYS = ("PreUp", "PostUp", "PreDown", "PostDown")
# "-i wg1", "--in-interface wg1", nft "iifname wg1" / "iifname "wg1""
_IN_IFACE_RE = re.compile(r"(?:^|\s)(?:-i|--in-interface|iifname)\s+\"?([^\s\";]+)")
_OUT_IFACE_RE = re.compile(r"(?:^|\s)(?:-o|--out-interface|oifname)\s+\"?([^\s\";]+)")
# The commands of one PostUp line, separators kept (the fix rejoins them).
_COMMAND_SPLIT_RE = re.compile(r"(;|&&|\|\|)")
_ROUTING_RULE_RE = re.compile(r"FORWARD|MASQUERADE|SNAT|forward", re.IGNORECASE)


def inputs_stamp(host: Host) -> files.Stamp:
    """The files `lint` reads (configs, clients, access rules, zsn's settings), stat-ed:
    while it stays equal, only the kernel's tables and the clock can change a finding."""
    return files.stamp(host.path(WIREGUARD_DIR), host.path(settings.SETTINGS_PATH))


def lint(host: Host) -> list[Finding]:
    """Every finding for the WireGuard configs of `host`."""
    directory = host.path(WIREGUARD_DIR)
    findings: list[Finding] = []
    if not files.is_dir(directory):
        return findings
    paths = files.list_files(directory, "*.conf")
    names = {path.stem for path in paths}
    findings += _permission_findings(host, directory)
    stored, problem = _settings(host)
    if problem is not None:
        findings.append(problem)
    for path in paths:
        try:
            server = ServerConfig.load(host, path.stem)
        except ZsnError as exc:
            findings.append(Finding("WG000", "error", path.stem, str(exc),
                                    "fix the line named, or restore the .zsn-bak backup",
                                    str(path)))
            continue
        findings += lint_config(host, server, names, stored)
        findings += _keepalive_findings(server.path, server.config)
        findings += _expiry_findings(server.name, str(server.path), server.config)
        findings += _access_rule_findings(host, server)
    client_paths = [path for folder in files.list_files(directory / "clients")
                    for path in files.list_files(folder, "*.conf")]
    for path in client_paths:
        try:
            config = parse(files.read_tracked(path).text, str(path))
        except ZsnError:
            continue
        findings += _keepalive_findings(path, config)
    return findings


def _settings(host: Host) -> tuple[settings.Settings, Finding | None]:
    """zsn's stored settings, or empty ones and the finding saying why they are not used."""
    try:
        return settings.load(host), None
    except ZsnError as exc:
        rule = "WG010" if isinstance(exc, settings.BadNameError) else "WG000"
        path = host.path(settings.SETTINGS_PATH)
        return settings.Settings(path, None, {}), Finding(
            rule, "error", None, str(exc),
            f"fix or remove the entry in {path} (zsn refuses changes that read it)", str(path))


def lint_config(host: Host, server: ServerConfig, wireguard_names: set[str],
                stored: settings.Settings) -> list[Finding]:
    config, name, path = server.config, server.name, str(server.path)
    spans = [(peer, _spans(peer)) for peer in config.peers]
    found: list[Finding] = _unusable_names(config, name, path)
    found += _refused_lines(config, name, path)
    found += _overlaps(spans, name, path)
    found += _duplicate_keys(config, name, path)
    found += _outside_subnet(config, spans, name, path)
    interface = config.interface
    if interface is None:
        return found
    save = interface.get("SaveConfig")
    if save is not None and save.strip().lower() == "true":
        entry = interface.entries_for("SaveConfig")[-1]
        found.append(Finding(
            "WG004", "warning", name,
            "SaveConfig = true: wg-quick rewrites the file on down, losing comments and "
            "freezing resolved endpoints",
            "set SaveConfig = false (zsn changes peers live without it)", path, entry.line + 1,
            partial(_plan_set, host, name, "SaveConfig", "false")))
    if interface.get("DNS") and not has_resolver(host):
        entry = interface.entries_for("DNS")[-1]
        found.append(Finding(
            "WG005", "error", name,
            "DNS = is set but neither resolvconf nor resolvectl is installed: wg-quick up "
            "will fail",
            "install openresolv or systemd-resolved, or remove the DNS line", path,
            entry.line + 1))
    found += _rules_naming_other_interfaces(host, config, name, path, wireguard_names, stored)
    found += _forwarding_off(host, config, name, path, stored)
    return found


def _expiry_findings(interface: str, path: str, config: WgConfig) -> list[Finding]:
    import time

    from zsn.wireguard.expiry import WARN_BEFORE, describe, peer_expiry

    now = time.time()
    found: list[Finding] = []
    for peer in config.all_peers:
        expiry = peer_expiry(config, peer)
        if expiry is None:
            continue
        who = peer.name or peer.get("PublicKey") or "KEY"
        if expiry.at is None:
            found.append(Finding(
                "WG014", "error", interface,
                f"{peer.label}: 'Expires = {expiry.text}' is not a time zsn wrote (ISO 8601 "
                "with a zone, e.g. 2026-12-31T23:00:00Z): the peer never expires",
                f"zsn peer expire {interface} {who} --at DATETIME (or --never)",
                path, expiry.line + 1))
        elif peer.disabled:
            continue
        elif expiry.at <= now:
            found.append(Finding(
                "WG013", "error", interface,
                f"{peer.label} expired {describe(expiry.at, now)} but is still enabled: no "
                "zsn process (TUI, zsn serve, the zsn-history timer) has run since",
                f"run zsn wg record (or install contrib/systemd/zsn-history.timer), or "
                f"zsn peer expire {interface} {who} --in 30d", path, expiry.line + 1))
        elif expiry.at - now <= WARN_BEFORE:
            found.append(Finding(
                "WG012", "warning", interface,
                f"{peer.label} expires {describe(expiry.at, now)}",
                f"zsn peer expire {interface} {who} --in 30d to give it longer, or --never",
                path, expiry.line + 1))
    return found


def _access_rule_findings(host: Host, server: ServerConfig) -> list[Finding]:
    """The interface's policy file against its peers, its own tests, what a boot loads
    (PostUp, the compiled table) and, when it runs, the kernel's table."""
    from zsn.system import nftables
    from zsn.wireguard import acl_table

    name = server.name
    path = policy.policy_path(host, name)
    load = f"zsn wg acl load {name}"
    try:
        read = policy.read_file(host, name)
        if read is None:
            return []
        wanted = read[1]
        peers = policy.peers_of(host, name, server.config)
        policy.check_policy(wanted, peers)
        spec = acl_table.compile_table(wanted, peers)
    except ZsnError as exc:
        return [Finding("WG015", "error", name, str(exc),
                        "fix the line named (zsn wg acl ... changes the file), or restore its "
                        ".zsn-bak backup", str(path))]
    fix = partial(_plan_load, host, name)
    found = [Finding("WG018", "error", name, failure,
                     f"change the rules or the test (zsn wg acl show {name})", str(path))
             for failure in policy.failing_tests(wanted, peers)]
    if not nftables.available():
        return [*found, Finding(
            "WG017", "error", name, f"{name} has access rules but nft is not installed: "
            "wg-quick up fails at its PostUp", "apt install nftables", str(path))]
    boot = policy.compiled_path(host, name)
    stale = not files.exists(boot) or files.read_tracked(boot).text != acl_table.file_text(spec)
    if acl_table.hooks_missing(server.config) or stale:
        what = "the table file it loads is missing or out of date" if stale else \
            "its PostUp/PostDown lines that load and remove the table are missing"
        found.append(Finding("WG017", "error", name, f"{name}'s access rules would not load "
                             f"as the policy says at the next wg-quick up: {what}", load,
                             str(server.path), None, fix))
    if server.live() is None:
        return found
    try:
        live = acl_table.read_live(name)
        differs = acl_table.differences(live.spec if live is not None else None, spec)
    except ZsnError as exc:
        differs = [str(exc)]
    if differs:
        found.append(Finding("WG016", "error", name, f"{name} runs with access rules other "
                             f"than its policy file's: {'; '.join(differs)}", load, str(path),
                             None, fix))
    return found


def _plan_load(host: Host, interface: str) -> Plan:
    from zsn.wireguard.acl import plan_load

    return plan_load(host, interface)


def _unusable_names(config: WgConfig, name: str, path: str) -> list[Finding]:
    found: list[Finding] = []
    for peer in config.all_peers:
        problem = peer.name_problem
        if problem is None:
            continue
        line = peer.name_line + 1 if peer.name_line is not None else None
        found.append(Finding(
            "WG010", "error", name,
            f"peer name {peer.name!r} {problem}: names are data, never paths; zsn refuses "
            "to act on this peer",
            f"rename it: zsn peer rename {name} {peer.get('PublicKey') or 'KEY'} NEWNAME",
            path, line))
    return found


def _refused_lines(config: WgConfig, name: str, path: str) -> list[Finding]:
    return [Finding("WG011", "error", name, f"{refusal.message}: 'wg-quick up' fails here",
                    "correct or remove the line (a key comes from 'wg genkey' or 'wg pubkey')",
                    path, refusal.line + 1)
            for refusal in refusals(config)]


def _plan_set(host: Host, interface: str, key: str, value: str) -> Plan:
    from zsn.plan import Plan

    server = ServerConfig.load(host, interface)
    edited = server.edited()
    section = edited.interface
    if section is None:
        raise ZsnError(f"{server.path}: no [Interface]")
    edited.set_value(section, key, value)
    return Plan(f"set {key} = {value} in {server.path}", [server.edit(edited)])


PeerSpans = list[tuple[Section, list[tuple[addressing.Span, str]]]]


def _spans(peer: Section) -> list[tuple[addressing.Span, str]]:
    found = []
    for item in peer.get_all("AllowedIPs"):
        span = addressing.network_span(item)
        if span is not None:
            found.append((span, item))
    return found


def _overlaps(peers: PeerSpans, name: str, path: str) -> list[Finding]:
    # Sort by start and sweep: O(n log n), fine for thousands of peers.
    spans = [(span[0], span[1], span[2], text, peer)
             for peer, items in peers for span, text in items]
    spans.sort(key=lambda span: (span[0], span[1], -span[2]))
    found: list[Finding] = []
    reported: set[tuple[int, int]] = set()
    widest: tuple[int, int, int, str, Section] | None = None
    for span in spans:
        if widest is not None and widest[0] == span[0] and span[1] <= widest[2] \
                and widest[4] is not span[4]:
            pair = (id(widest[4]), id(span[4]))
            if pair not in reported:
                reported.add(pair)
                found.append(Finding(
                    "WG001", "error", name,
                    f"AllowedIPs overlap: {widest[3]} of {widest[4].label} and {span[3]} of "
                    f"{span[4].label}; only one of them receives that traffic",
                    "give each peer its own /32 (or /128) and put shared ranges on the clients",
                    path, span[4].header + 1))
        if widest is None or widest[0] != span[0] or span[2] > widest[2]:
            widest = span
    return found


def _duplicate_keys(config: WgConfig, name: str, path: str) -> list[Finding]:
    seen: dict[str, Section] = {}
    found: list[Finding] = []
    for peer in config.peers:
        key = peer.get("PublicKey")
        if not key:
            continue
        if key in seen:
            found.append(Finding(
                "WG002", "error", name,
                f"{peer.label} has the same public key as {seen[key].label}",
                "remove one of the two peers (each device needs its own key pair)",
                path, peer.header + 1))
        else:
            seen[key] = peer
    return found


def _outside_subnet(config: WgConfig, peers: PeerSpans, name: str, path: str
                    ) -> list[Finding]:
    subnets: dict[int, list[tuple[int, int, str]]] = {}
    for address in addressing.interface_addresses(config):
        network = address.network
        subnets.setdefault(address.version, []).append(
            (int(network.network_address), int(network.broadcast_address), str(network)))
    if not subnets:
        return []
    found: list[Finding] = []
    for peer, items in peers:
        for (version, first, _last, prefix), text in items:
            if prefix != (32 if version == 4 else 128):
                continue  # a routed subnet behind the peer, not its address
            same = subnets.get(version)
            if same is None:
                continue
            for low, high, _text in same:
                if low <= first <= high:
                    break
            else:
                found.append(Finding(
                    "WG003", "warning", name,
                    f"{peer.label} has address {text} outside the interface subnet "
                    f"{', '.join(subnet for _low, _high, subnet in same)}",
                    "give the peer an address inside the subnet (or widen the Address prefix)",
                    path, peer.header + 1))
    return found


def _rules_naming_other_interfaces(host: Host, config: WgConfig, name: str, path: str,
                                   wireguard_names: set[str], stored: settings.Settings
                                   ) -> list[Finding]:
    interface = config.interface
    if interface is None:
        return []
    linked = set(stored.get(name).links)
    found: list[Finding] = []
    for key in _RULE_KEYS:
        for entry in interface.entries_for(key):
            for command in _COMMAND_SPLIT_RE.split(entry.value):
                # "-i wg0 -o %i" in wg1's config forwards between the two on purpose:
                # fine when zsn linked them, a judgement call otherwise, never a %i typo.
                crossing = _crosses_into(command, name)
                for match in _IN_IFACE_RE.finditer(command):
                    other = match.group(1)
                    if other in (name, "%i") or (crossing and other in linked):
                        continue
                    if other in wireguard_names or other.startswith("wg"):
                        found.append(_other_interface_finding(
                            host, name, path, entry.line, key, other, "-i", not crossing))
            for match in _OUT_IFACE_RE.finditer(entry.value):
                other = match.group(1)
                if other != name and other in wireguard_names and other not in linked:
                    found.append(_other_interface_finding(host, name, path, entry.line, key,
                                                          other, "-o"))
    return found


def _other_interface_finding(host: Host, name: str, path: str, line: int, key: str,
                             other: str, flag: str, safe: bool = False) -> Finding:
    return Finding(
        "WG007", "warning", name,
        f"{key} names {flag} {other} in the config of {name}: the rule follows {name}'s "
        f"up/down, not {other}'s",
        f"write %i for this interface (wg-quick replaces it with {name})", path, line + 1,
        partial(_plan_use_percent_i, host, name, line, other) if safe else None)


def _crosses_into(command: str, name: str) -> bool:
    """Whether a rule sends traffic out of this interface (``-o %i``): it joins two."""
    return any(m.group(1) in (name, "%i") for m in _OUT_IFACE_RE.finditer(command))


def _plan_use_percent_i(host: Host, interface: str, line: int, other: str) -> Plan:
    from zsn.plan import Plan

    server = ServerConfig.load(host, interface)
    edited = server.edited()
    section = edited.interface
    entry = next((e for e in section.entries if e.line == line), None) if section else None
    if section is None or entry is None:
        raise ZsnError(f"{server.path}: the line changed; lint again")
    wrong = re.compile(rf"(-i|--in-interface|iifname)(\s+\"?){re.escape(other)}(?=[\s\";]|$)")
    fixed = "".join(part if _crosses_into(part, interface) else wrong.sub(r"\g<1>\g<2>%i", part)
                    for part in _COMMAND_SPLIT_RE.split(entry.value))
    edited.set_entry(section, entry, fixed)
    return Plan(f"use %i instead of {other} in {server.path}:{line + 1}", [server.edit(edited)])


def _forwarding_off(host: Host, config: WgConfig, name: str, path: str,
                    stored: settings.Settings) -> list[Finding]:
    interface = config.interface
    if interface is None:
        return []
    routes = any(_ROUTING_RULE_RE.search(entry.value)
                 for entry in interface.entries_for("PostUp"))
    routes = routes or bool(stored.get(name).links)
    if not routes:
        return []
    # Routing loads commands and live devices: only configs that route pay for it.
    from zsn.wireguard.routing import forwarding_enabled

    versions: set[int] = {a.version for a in addressing.interface_addresses(config)} or {4}
    off: set[int] = {v for v in versions if forwarding_enabled(host, v) is False}
    if not off:
        return []
    return [Finding(
        "WG008", "error", name,
        f"{name} routes or NATs traffic but IPv{'/IPv'.join(map(str, sorted(off)))} "
        "forwarding is off: clients reach only the server",
        "enable forwarding (now and in /etc/sysctl.d)", path, None,
        partial(_plan_forwarding, host, off))]


def _plan_forwarding(host: Host, versions: set[int]) -> Plan:
    from zsn.plan import Plan
    from zsn.wireguard.routing import forwarding_steps

    steps, notes = forwarding_steps(host, versions)
    return Plan("enable forwarding", steps, notes=notes)


def _permission_findings(host: Host, directory: Path) -> list[Finding]:
    found: list[Finding] = []
    for path in [directory, *files.walk(directory)]:
        if files.is_link(path) or path.name.endswith(".tmp"):
            continue
        try:
            mode = stat.S_IMODE(files.status(path).st_mode)
            is_dir = files.is_dir(path)
        except (OSError, ZsnError):
            continue
        wanted = files.PRIVATE_DIR_MODE if is_dir else files.PRIVATE_FILE_MODE
        secret = is_dir or path.suffix in (".conf", ".key", ".psk") or \
            path.name.endswith(files.BACKUP_SUFFIX)
        if secret and mode & stat.S_IROTH:
            found.append(Finding(
                "WG006", "error", None,
                f"{path} is readable by other users (mode {mode:04o}); it holds private keys",
                f"chmod {wanted:o} {path}", str(path), None,
                partial(_plan_chmod, path, wanted, mode)))
    return found


def _plan_chmod(path: Path, wanted: int, current: int) -> Plan:
    from zsn.plan import LiveStep, Plan

    return Plan(f"chmod {wanted:o} {path}", [LiveStep(f"chmod {wanted:04o} {path}",
                                                      partial(files.set_mode, path, wanted),
                                                      partial(files.set_mode, path, current))])


def _keepalive_findings(path: Path, config: WgConfig) -> list[Finding]:
    interface = config.interface
    if interface is None or interface.get("ListenPort"):
        return []  # a server: it waits for clients, it needs no keepalive
    found: list[Finding] = []
    for peer in config.peers:
        if peer.get("Endpoint") and not peer.get("PersistentKeepalive"):
            found.append(Finding(
                "WG009", "warning", path.stem,
                f"{path.name}: client without PersistentKeepalive; behind NAT the server "
                "and other clients cannot reach it once the mapping expires",
                f"set PersistentKeepalive = {DEFAULT_KEEPALIVE}", str(path), peer.header + 1,
                partial(_plan_keepalive, path)))
    return found


def _plan_keepalive(path: Path) -> Plan:
    from zsn.plan import FileEdit, Plan

    snapshot = files.read_tracked(path)
    config = parse(snapshot.text, str(path))
    for index in range(len(config.peers)):
        peer = config.peers[index]  # re-read: every edit re-indexes the config
        if peer.get("Endpoint") and not peer.get("PersistentKeepalive"):
            config.set_value(peer, "PersistentKeepalive", str(DEFAULT_KEEPALIVE))
    return Plan(f"add PersistentKeepalive = {DEFAULT_KEEPALIVE} to {path}",
                [FileEdit(path, snapshot, config.render(), mode=files.PRIVATE_FILE_MODE,
                          intent=config.intent)])

