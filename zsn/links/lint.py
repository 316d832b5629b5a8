"""Advice on bonds, VLANs and bridges: live links and the persistent config.

`LinkWatch` is what the Links pane reads, poll after poll: the live links with the
config and this advice, read again only when they may have changed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import NamedTuple

from zsn.errors import ZsnError
from zsn.links import bonding
from zsn.links.live import BondDetails, LinkMonitor, read_links
from zsn.links.model import KINDS_ZSN_MANAGES, Interface, LinksSnapshot
from zsn.links.persist import LinkConfig, Owner, Persisted, config_of
from zsn.links.persist.owner import detect_owner, read_persistent
from zsn.lint import Finding
from zsn.plan import Plan
from zsn.system.host import Host

SUBJECT = "interface"
RULES = {
    "LINK000": "the persistent network config cannot be read",
    "LINK001": "balance-rr (or another static-LAG mode) needs the switch to support it",
    "LINK002": "MTU differs between a bond's members, or is above a member's maximum",
    "LINK003": "jumbo MTU on a VLAN whose parent's MTU is smaller",
    "LINK004": "a bond with one member (no redundancy)",
    "LINK005": "a bond with miimon 0 (member failures go unnoticed)",
    "LINK006": "802.3ad bond without an LACP partner",
    "LINK007": "live links differ from the persistent config (a reboot changes them)",
    "LINK008": "a bond member is down",
    "LINK009": "a config line zsn does not understand (named by file and line; persisting "
               "refuses while it may change the links involved)",
    "LINK010": "a line the installed networkd or netplan itself ignores or refuses (its own "
               "check, run on a copy of the files)",
}
NOTES = "field notes 004 (one VLAN per port), bonding.rst 12.2.1"


def _bond_configs(snapshot: LinksSnapshot, persisted: Persisted) -> list[LinkConfig]:
    """Bonds as they run, or (not live) as the config defines them."""
    if snapshot.live:
        return [config_of(i, snapshot.interfaces) for i in snapshot.interfaces
                if i.kind == "bond"]
    return [c for c in persisted.configs.values() if c.kind == "bond"]


def lint_links(snapshot: LinksSnapshot, owner: Owner | None, persisted: Persisted,
               host: Host | None = None) -> list[Finding]:
    """Findings for the live links and the config; with `host`, a link that exists live
    only gets a safe fix (save it into the config)."""
    findings: list[Finding] = []
    by_name = snapshot.by_name()
    for problem in persisted.problems:
        findings.append(Finding("LINK000", "error", None, problem,
                                "fix the file at the line named; zsn cannot persist until then"))
    for unread in persisted.unread:
        findings.append(Finding(
            "LINK009", "warning", unread.names[0] if len(unread.names) == 1 else None,
            f"zsn does not understand {unread.describe()}",
            "write it in a form zsn reads, or edit it by hand"
            + (": zsn refuses to persist changes it may affect" if unread.blocking else ""),
            path=unread.path, line=unread.line))
    for bond in _bond_configs(snapshot, persisted):
        findings.extend(_bond_findings(bond, by_name, snapshot.live))
    if snapshot.live:
        for interface in snapshot.interfaces:
            parent = by_name.get(interface.parent or "")
            if interface.kind == "vlan" and parent is not None and interface.mtu > parent.mtu:
                findings.append(_jumbo_vlan(interface.name, interface.mtu, parent.name,
                                            parent.mtu, None))
    configs = persisted.configs
    for config in configs.values():
        parent_config = configs.get(config.parent or "")
        if config.kind == "vlan" and config.mtu and parent_config is not None:
            parent_mtu = parent_config.mtu or 1500
            if config.mtu > parent_mtu:
                findings.append(_jumbo_vlan(config.name, config.mtu, parent_config.name,
                                            parent_mtu, config.source))
    if snapshot.live and owner is not None and owner.name not in ("none", "networkmanager"):
        findings.extend(_drift(snapshot, persisted, owner, host))
    return findings


def _jumbo_vlan(name: str, mtu: int, parent: str, parent_mtu: int,
                source: str | None) -> Finding:
    where = f" in {source}" if source else ""
    return Finding("LINK003", "error", name,
                   f"MTU {mtu}{where} is above its parent {parent}'s {parent_mtu}: frames "
                   "that size are dropped (and the kernel refuses it when applied)",
                   f"zsn link set {parent} --mtu {mtu} --persist", path=source)


def _bond_findings(bond: LinkConfig, by_name: dict[str, Interface], live: bool) -> list[Finding]:
    findings: list[Finding] = []
    name = bond.name
    if bond.mode in bonding.STATIC_LAG_MODES:
        findings.append(Finding(
            "LINK001", "warning", name,
            f"{bond.mode} needs the switch to group its ports (a static LAG); balance-rr "
            "also reorders a flow's packets across members",
            "group the switch ports, or put each member on its own switch or VLAN (one VLAN "
            "per port); raise net.ipv4.tcp_reordering for single-flow speed",
            path=bond.source or None, source=NOTES))
    if len(bond.members) == 1:
        findings.append(Finding("LINK004", "warning", name,
                                f"{name} has a single member ({bond.members[0]}): no "
                                "redundancy, no extra bandwidth",
                                f"zsn link add-member {name} IFACE --persist",
                                path=bond.source or None))
    if bond.miimon == 0:
        findings.append(Finding("LINK005", "warning", name,
                                "miimon is 0: a member whose link fails keeps getting traffic",
                                "set miimon 100 (zsn writes it when it persists a bond)",
                                path=bond.source or None))
    if not live:
        return findings
    interface = by_name.get(name)
    members = [by_name[m] for m in bond.members if m in by_name]
    if interface is not None and interface.bond and interface.bond.has_partner is False \
            and interface.admin_up:
        findings.append(Finding(
            "LINK006", "error", name,
            "802.3ad without an LACP partner (partner MAC 00:00:00:00:00:00): the switch "
            "ports are not in an LACP group, so only one member carries traffic",
            "configure LACP on the switch ports, or use balance-xor/active-backup"))
    mtus = {m.mtu for m in members}
    if len(mtus) > 1:
        listed = ", ".join(f"{m.name} {m.mtu}" for m in members)
        findings.append(Finding("LINK002", "warning", name,
                                f"members have different MTUs ({listed})",
                                f"zsn link set {name} --mtu N (members follow the bond)"))
    for member in members:
        if interface is not None and member.max_mtu and interface.mtu > member.max_mtu:
            findings.append(Finding("LINK002", "error", name,
                                    f"MTU {interface.mtu} is above member {member.name}'s "
                                    f"maximum {member.max_mtu}",
                                    f"zsn link set {name} --mtu {member.max_mtu}"))
        if member.member is not None and member.member.mii_status != "up":
            failures = member.member.link_failure_count
            findings.append(Finding("LINK008", "warning", name,
                                    f"member {member.name} is {member.member.mii_status} "
                                    f"({failures} link failure{'s' if failures != 1 else ''})",
                                    f"check {member.name}'s cable and switch port"))
    return findings


def _compare(live: LinkConfig, saved: LinkConfig) -> list[str]:
    differences = []
    if set(live.members) != set(saved.members):
        differences.append(f"members {','.join(live.members) or '-'} live, "
                           f"{','.join(saved.members) or '-'} at boot")
    for field_name in ("mode", "vlan_id", "parent", "mtu"):
        now, boot = getattr(live, field_name), getattr(saved, field_name)
        if boot is not None and now is not None and now != boot:
            differences.append(f"{field_name.replace('_', ' ')} {now} live, {boot} at boot")
    return differences


def _save_plan(host: Host, name: str) -> Callable[[], Plan]:
    def build() -> Plan:
        from zsn.links.actions import Context, plan_save

        return plan_save(Context.read(host), name)

    return build


def _drift(snapshot: LinksSnapshot, persisted: Persisted, owner: Owner,
           host: Host | None) -> list[Finding]:
    findings: list[Finding] = []
    live = {i.name: config_of(i, snapshot.interfaces) for i in snapshot.interfaces
            if i.kind in KINDS_ZSN_MANAGES}
    for name, config in sorted(live.items()):
        saved = persisted.configs.get(name)
        if saved is None:
            findings.append(Finding("LINK007", "warning", name,
                                    f"{config.describe()} exists live only: a reboot removes "
                                    f"it ({owner.name} does not define it)",
                                    f"zsn link persist {name}",
                                    fix_plan=_save_plan(host, name) if host else None))
            continue
        differences = _compare(config, saved)
        if differences:
            findings.append(Finding("LINK007", "warning", name,
                                    "a reboot changes it: " + "; ".join(differences),
                                    "make the config match (zsn link ... --persist) or the "
                                    "live link match the config", path=saved.source or None))
    for name, saved in sorted(persisted.configs.items()):
        if name not in live:
            findings.append(Finding("LINK007", "info", name,
                                    f"{saved.source} defines {saved.describe()}, which is "
                                    "not up now: it appears at the next boot",
                                    f"apply the config now, or remove it from {saved.source}",
                                    path=saved.source or None))
    return findings


def lint(host: Host, *, strict: bool = False) -> list[Finding]:
    """Every finding for `host`; `strict` (the headless command) raises the first read
    the system refused instead of reporting it as LINK000 among the rest."""
    snapshot, _details = read_links(host)
    try:
        owner, persisted = read_persistent(host, detect_owner(host))
    except ZsnError as exc:
        owner, persisted = None, Persisted(problems=[str(exc)])
    if strict and persisted.denied:
        raise ZsnError(persisted.denied[0])
    findings = lint_links(snapshot, owner, persisted, host)
    if persisted.problems:  # the tool could not read what zsn could not either
        return findings
    return findings + tools_own_check(host, owner)


LINT_SECONDS = 30.0
"""The config and the advice are read again at least this often (files change on disk)."""


class LinksView(NamedTuple):
    """One poll: the live table, bond details, the config's owner and what it defines,
    the advice on both, and what could not be read."""

    snapshot: LinksSnapshot
    details: BondDetails
    owner: Owner | None
    persisted: Persisted
    findings: tuple[Finding, ...]
    errors: tuple[str, ...] = ()
    version: int = 0
    """The link table's version (`LinkMonitor.version`): it changes when netlink
    reports a change."""


class LinkWatch:
    """The links, their config and the advice, as the pane shows them. The table is
    read again only when netlink reports a change, the counters every poll (a root
    that is not this machine has no live links); the config and the advice when the
    table changed, after a change zsn made (`stale`), or every `LINT_SECONDS`."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._monitor = LinkMonitor() if host.is_live else None
        self._advice: tuple[Owner | None, Persisted, tuple[Finding, ...], tuple[str, ...]] = (
            None, Persisted(), (), ())
        self._advised_version = -1
        self._advised_at = 0.0

    def stale(self) -> None:
        """The config or the links changed (zsn's own change): read the advice again."""
        self._advised_version = -1

    def read(self) -> LinksView:
        if self._monitor is not None:
            snapshot = self._monitor.poll()
            version, details = self._monitor.version, self._monitor.details
        else:
            snapshot = LinksSnapshot((), time.monotonic(), live=False)
            version, details = 0, BondDetails({}, ())
        now = time.monotonic()
        if version != self._advised_version or now - self._advised_at > LINT_SECONDS:
            self._advised_version, self._advised_at = version, now
            self._advice = self._read_advice(snapshot)
        owner, persisted, findings, errors = self._advice
        return LinksView(snapshot, details, owner, persisted, findings,
                         errors + snapshot.errors, version)

    def _read_advice(self, snapshot: LinksSnapshot) -> tuple[
            Owner | None, Persisted, tuple[Finding, ...], tuple[str, ...]]:
        try:
            owner, persisted = read_persistent(self.host, detect_owner(self.host))
        except ZsnError as exc:
            return None, Persisted(), (), (str(exc),)
        return owner, persisted, tuple(lint_links(snapshot, owner, persisted, self.host)), ()

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.close()


def tools_own_check(host: Host, owner: Owner | None) -> list[Finding]:
    """LINK010: what the installed tool says about the files (networkd run on a copy in
    private namespaces). Nothing when it cannot run (not root, not installed)."""
    if owner is None:
        return []
    if owner.name == "networkd":
        from zsn.system import networkd_sandbox

        try:
            complaints = networkd_sandbox.check(host)
        except ZsnError as exc:
            return [Finding("LINK010", "info", None, str(exc), "run 'zsn link lint' again")]
        return [Finding("LINK010", "warning", None, f"systemd-networkd: {complaint.message}",
                        "correct or remove the line (networkd does not apply it)",
                        path=complaint.path, line=complaint.line)
                for complaint in complaints or []]
    if owner.name == "netplan":
        from zsn.links.persist.netplan import Unchecked, generate

        try:
            problem = generate(host, [])
        except Unchecked:
            return []  # said where a plan is made: here it would be noise on every lint
        except ZsnError as exc:
            return [Finding("LINK010", "info", None, str(exc), "run 'zsn link lint' again")]
        if problem is None:
            return []
        where = re.match(r"(/\S+?):(\d+):(?:\d+:)? ?(.*)", problem)
        return [Finding("LINK010", "error", None, f"netplan refuses the files: "
                        f"{where.group(3) if where else problem}",
                        "fix the line netplan names; zsn persists nothing until then",
                        path=where.group(1) if where else None,
                        line=int(where.group(2)) if where else None)]
    return []
