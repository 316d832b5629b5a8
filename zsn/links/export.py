"""The ``links`` section of `zsn --export`: every link with its stack, counters and
rates (counters read twice, `RATE_WINDOW` seconds apart), the config's owner, findings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from zsn.errors import ZsnError
from zsn.every import Every
from zsn.exporter.prometheus import MetricFamily
from zsn.links.dot1x import PortState, port_to_dict, read_ports
from zsn.links.live import BondDetails, LinkMonitor, read_links, with_rates
from zsn.links.model import BondState, Interface, LinksSnapshot, member_role
from zsn.links.persist import Persisted
from zsn.links.persist.owner import detect_owner, read_persistent
from zsn.lint import count_by_severity
from zsn.system.host import Host
from zsn.system.rtnetlink import Counters

RATE_WINDOW = 0.25
"""Seconds between the two counter readings rates come from; the rest of the export
(the other sections, then this one's config and lint) runs meanwhile."""
COUNTER_FIELDS = Counters._fields
LINT_SECONDS = 30.0
"""How often `zsn serve` reads the network config and lints again without a change."""


def present(host: Host) -> bool:
    """Live: a host always has links. Under --root: when it has a network config."""
    if host.is_live:
        return True
    return detect_owner(host).name not in ("none", "networkmanager")


def interfaces_to_dicts(snapshot: LinksSnapshot, details: BondDetails,
                        only: Interface | None = None) -> list[dict[str, Any]]:
    """Every link (or `only` that one) as the export shows it."""
    members: dict[str, list[Interface]] = {}
    for interface in snapshot.interfaces:
        if interface.master:
            members.setdefault(interface.master, []).append(interface)
    chosen = snapshot.interfaces if only is None else (only,)
    return [interface_to_dict(i, snapshot, details, members.get(i.name, []))
            for i in chosen]


def interface_to_dict(interface: Interface, snapshot: LinksSnapshot, details: BondDetails,
                      members: list[Interface]) -> dict[str, Any]:
    counters = snapshot.counters.get(interface.index)
    rates = snapshot.rates.get(interface.name)
    data: dict[str, Any] = {
        "name": interface.name, "index": interface.index, "kind": interface.kind,
        "state": interface.state_text, "operstate": interface.operstate,
        "admin_up": interface.admin_up, "carrier": interface.carrier, "mtu": interface.mtu,
        "mac": interface.mac, "addresses": list(interface.addresses),
        "master": interface.master, "parent": interface.parent, "vlan_id": interface.vlan_id,
        "peer": interface.peer, "speed_mbps": interface.speed_mbps, "duplex": interface.duplex,
        "members": [_member(m, details.bonds.get(interface.name), interface.bond)
                    for m in members],
        "bond": None, "bridge": None,
        "counters": dict(zip(COUNTER_FIELDS, counters, strict=True)) if counters else None,
        "rates": None if rates is None else {
            "rx_bytes_per_second": rates.rx_bytes, "tx_bytes_per_second": rates.tx_bytes,
            "rx_packets_per_second": rates.rx_packets,
            "tx_packets_per_second": rates.tx_packets,
            "errors_per_second": rates.errors, "drops_per_second": rates.drops,
        },
    }
    if interface.bond is not None:
        bond = interface.bond
        data["bond"] = {
            "mode": bond.mode, "miimon": bond.miimon, "xmit_hash_policy": bond.xmit_hash_policy,
            "lacp_rate": bond.lacp_rate, "min_links": bond.min_links,
            "active_member": bond.active_member, "aggregator": bond.aggregator,
            "partner_mac": bond.partner_mac, "lacp_partner": bond.has_partner,
        }
    if interface.kind == "bridge":
        data["bridge"] = {"stp": interface.stp}
    return data


def _member(member: Interface, proc: Any, bond: BondState | None) -> dict[str, Any]:
    state = member.member
    data: dict[str, Any] = {"name": member.name, "state": member.state_text,
                            "port_state": member.port_state}
    if state is not None:
        data.update(mii_status=state.mii_status, role=member_role(state, bond),
                    slave_state=state.state,
                    link_failure_count=state.link_failure_count,
                    aggregator_id=state.aggregator_id, permanent_mac=state.permanent_mac)
        slave = next((s for s in proc.slaves if s.name == member.name), None) if proc else None
        if slave is not None and slave.partner_mac is not None:
            data["partner_mac"] = slave.partner_mac
    return data


def begin_sampling(host: Host) -> Callable[[], dict[str, Any]]:
    """Take the first reading now; the returned call finishes the section, so the rate
    window runs while the export reads the other sections."""
    snapshot, details = read_links(host)
    return lambda: _section(host, snapshot, details, with_rate_window=True)


def collect(host: Host, *, include_secrets: bool = False) -> dict[str, Any]:
    """Counters read once, rates None (what Prometheus wants). `include_secrets`
    changes nothing: links carry no secrets."""
    snapshot, details = read_links(host)
    return _section(host, snapshot, details, with_rate_window=False)


Linted = tuple[dict[str, Any] | None, Persisted, list[dict[str, Any]], list[str]]
"""The config's owner (as exported), what it defines, the findings, errors."""


def _config_and_lint(host: Host, snapshot: LinksSnapshot) -> Linted:
    errors: list[str] = []
    try:
        owner, persisted = read_persistent(host, detect_owner(host))
        config: dict[str, Any] | None = {"owner": owner.name, "reason": owner.reason,
                                         "dialect": persisted.dialect or None}
    except ZsnError as exc:
        owner, persisted, config = None, Persisted(problems=[str(exc)]), None
        errors.append(str(exc))
    from zsn.links.lint import SUBJECT, lint_links

    findings = [f.as_dict(SUBJECT) for f in lint_links(snapshot, owner, persisted)]
    return config, persisted, findings, errors


def _section(host: Host, snapshot: LinksSnapshot, details: BondDetails,
             with_rate_window: bool) -> dict[str, Any]:
    linted = _config_and_lint(host, snapshot)
    if with_rate_window:
        snapshot = with_rates(snapshot, RATE_WINDOW)
    ports = read_ports(host, [each.name for each in snapshot.interfaces])
    return section(snapshot, details, linted,
                   RATE_WINDOW if snapshot.live and with_rate_window else None, ports)


def section(snapshot: LinksSnapshot, details: BondDetails, linted: Linted,
            rate_window: float | None = None,
            ports: dict[str, PortState | str] | None = None) -> dict[str, Any]:
    ports = ports or {}
    config, persisted, findings, errors = linted
    data: dict[str, Any] = {"config": config}
    data["interfaces"] = interfaces_to_dicts(snapshot, details)
    data["rate_window_seconds"] = rate_window
    data["configured"] = [
        {"name": c.name, "kind": c.kind, "members": list(c.members), "parent": c.parent,
         "vlan_id": c.vlan_id, "mtu": c.mtu, "mode": c.mode, "miimon": c.miimon,
         "xmit_hash_policy": c.xmit_hash_policy, "lacp_rate": c.lacp_rate, "stp": c.stp,
         "source": c.source}
        for c in persisted.configs.values()]
    data["findings"] = findings
    data["dot1x"] = {name: port_to_dict(port) for name, port in ports.items()}
    errors = errors + list(snapshot.errors)
    if errors:
        data["errors"] = errors
    return data


class Poller:
    """`zsn serve`'s reader: the pane's `LinkMonitor` (one counters dump per poll, the
    whole table when netlink reports a change), the config and lint again when the
    table changed or every `LINT_SECONDS`. Counters only: a scraper takes the rates."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._monitor = LinkMonitor() if host.is_live else None
        self._lint = Every(LINT_SECONDS)

    def poll(self) -> tuple[LinksSnapshot, BondDetails, int]:
        if self._monitor is None:
            snapshot, details = read_links(self.host)
            return snapshot, details, 0
        return self._monitor.poll(), self._monitor.details, self._monitor.version

    def section(self, reading: tuple[LinksSnapshot, BondDetails, int]) -> dict[str, Any]:
        snapshot, details, version = reading
        linted = self._lint.get(version, lambda: _config_and_lint(self.host, snapshot))
        ports = read_ports(self.host, [each.name for each in snapshot.interfaces])
        return section(replace(snapshot, rates={}) if snapshot.rates else snapshot, details,
                       linted, ports=ports)

    def close(self) -> None:
        if self._monitor is not None:
            self._monitor.close()


def prometheus(data: dict[str, Any]) -> list[MetricFamily]:
    info = MetricFamily("zsn_link_info", "gauge",
                        "1 per link; labels kind, master (bond or bridge), parent (VLAN).")
    up = MetricFamily("zsn_link_up", "gauge", "1 when the link is up with carrier.")
    mtu = MetricFamily("zsn_link_mtu_bytes", "gauge", "The link's MTU.")
    speed = MetricFamily("zsn_link_speed_bytes_per_second", "gauge",
                         "Negotiated speed (hardware links and bonds that report one).")
    counters = {
        "rx_bytes": MetricFamily("zsn_link_receive_bytes_total", "counter", "Bytes received."),
        "tx_bytes": MetricFamily("zsn_link_transmit_bytes_total", "counter", "Bytes sent."),
        "rx_packets": MetricFamily("zsn_link_receive_packets_total", "counter",
                                   "Packets received."),
        "tx_packets": MetricFamily("zsn_link_transmit_packets_total", "counter",
                                   "Packets sent."),
        "rx_errors": MetricFamily("zsn_link_receive_errors_total", "counter",
                                  "Receive errors."),
        "tx_errors": MetricFamily("zsn_link_transmit_errors_total", "counter",
                                  "Transmit errors."),
        "rx_dropped": MetricFamily("zsn_link_receive_drops_total", "counter",
                                   "Received packets dropped."),
        "tx_dropped": MetricFamily("zsn_link_transmit_drops_total", "counter",
                                   "Packets dropped on transmit."),
    }
    member_up = MetricFamily("zsn_link_bond_member_up", "gauge",
                             "1 when the bond member's MII status is up, 0 otherwise.")
    failures = MetricFamily("zsn_link_bond_member_link_failures_total", "counter",
                            "Link failures the bond counted for the member.")
    partner = MetricFamily("zsn_link_bond_lacp_partner", "gauge",
                           "802.3ad: 1 when an LACP partner answered (partner MAC not zero).")
    findings = MetricFamily("zsn_links_findings", "gauge", "Lint findings by severity.")
    for interface in data.get("interfaces", ()):
        labels = {"interface": interface["name"]}
        info.add({**labels, "kind": interface["kind"], "master": interface["master"] or "",
                  "parent": interface["parent"] or ""}, 1)
        up.add(labels, int(interface["state"] in ("up", "unknown")))
        mtu.add(labels, interface["mtu"])
        if interface["speed_mbps"]:
            speed.add(labels, interface["speed_mbps"] * 125_000)
        for key, family in counters.items():
            if interface["counters"] is not None:
                family.add(labels, interface["counters"][key])
        bond = interface.get("bond")
        if bond is None:
            continue
        if bond["lacp_partner"] is not None:
            partner.add({"bond": interface["name"]}, int(bond["lacp_partner"]))
        for member in interface["members"]:
            member_labels = {"bond": interface["name"], "interface": member["name"]}
            member_up.add(member_labels, int(member.get("mii_status") == "up"))
            failures.add(member_labels, member.get("link_failure_count") or 0)
    for severity, count in count_by_severity(data.get("findings", ())).items():
        findings.add({"severity": severity}, count)
    return [info, up, mtu, speed, *counters.values(), member_up, failures, partner, findings]
