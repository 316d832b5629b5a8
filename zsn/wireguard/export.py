"""The ``wireguard`` section of `zsn --export`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zsn.errors import NetlinkError, ZsnError
from zsn.every import Every
from zsn.exporter.prometheus import MetricFamily
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import lint, uapi
from zsn.wireguard.config import WIREGUARD_DIR
from zsn.wireguard.live import LiveCache, read_wireguard
from zsn.wireguard.model import CONNECTED_WITHIN, InterfaceState, PeerState, WireGuardSnapshot

HISTORY_SECONDS = 60.0
"""How often `zsn serve` reads the peers' history from the store again (when the
peers stay the same); `connected` is worked out from each poll's handshakes."""
LINT_SECONDS = 30.0
"""How often `zsn serve` lints the configs again (findings change with the files)."""


def _sockets_in(directory: Path) -> bool:
    try:
        return bool(files.list_files(directory, "*.sock"))
    except ZsnError:
        return False  # not root: the section's readers say so


def present(host: Host) -> bool:
    """WireGuard is present when an interface runs or a config exists."""
    if any(_sockets_in(host.path(d)) for d in uapi.SOCKET_DIRS):
        return True
    if files.is_dir(host.path(WIREGUARD_DIR)):
        return True
    if host.is_live:
        from zsn.system.netlink import list_links

        try:
            return any(link.kind == "wireguard" for link in list_links().values())
        except NetlinkError:  # no netlink here just means "not present"
            return False
    return False


def peer_to_dict(peer: PeerState, include_secrets: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": peer.name,
        "public_key": peer.public_key,
        "endpoint": peer.endpoint,
        "allowed_ips": list(peer.allowed_ips),
        "latest_handshake": peer.latest_handshake,
        "rx_bytes": peer.rx_bytes,
        "tx_bytes": peer.tx_bytes,
        "persistent_keepalive": peer.persistent_keepalive,
    }
    if include_secrets:
        data["preshared_key"] = peer.preshared_key
    return data


def interface_to_dict(interface: InterfaceState, include_secrets: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": interface.name,
        "implementation": interface.implementation,
        "public_key": interface.public_key,
        "listen_port": interface.listen_port,
        "fwmark": interface.fwmark,
        "addresses": list(interface.addresses),
        "config_path": interface.config_path,
        "in_namespace": interface.in_namespace,
        "peers": [peer_to_dict(peer, include_secrets) for peer in interface.peers],
    }
    if include_secrets:
        data["private_key"] = interface.private_key
    return data


def collect(host: Host, *, include_secrets: bool = False) -> dict[str, Any]:
    return section(host, read_wireguard(host), _lint(host), include_secrets=include_secrets)


def _lint(host: Host) -> tuple[list[dict[str, Any]], str | None]:
    """The findings as exported, and why there are none when lint failed."""
    try:
        return [finding.as_dict(lint.SUBJECT) for finding in lint.lint(host)], None
    except ZsnError as exc:
        return [], f"lint: {exc}"


def section(host: Host, snapshot: WireGuardSnapshot,
            linted: tuple[list[dict[str, Any]], str | None], *,
            include_secrets: bool = False,
            history: Callable[[], History | None] | None = None) -> dict[str, Any]:
    """The section from one reading; `history` gives the peers' history (read from the
    store now when it is not given)."""
    findings, lint_error = linted
    data: dict[str, Any] = {
        "interfaces": [interface_to_dict(i, include_secrets) for i in snapshot.interfaces],
        "findings": findings,
    }
    errors = list(snapshot.errors)
    rules, rule_errors = access_rules(host)
    if rules:
        data["access_rules"] = rules
    errors.extend(rule_errors)
    try:
        reports = history() if history is not None else history_reports(host, snapshot)
        attach_history(data["interfaces"], reports, snapshot)
    except ZsnError as exc:
        errors.append(f"history: {exc}")
    if lint_error:
        errors.append(lint_error)
    if snapshot.read_only_reason:
        errors.insert(0, snapshot.read_only_reason)
    if errors:
        data["errors"] = errors
    return data


def access_rules(host: Host) -> tuple[list[dict[str, Any]], list[str]]:
    """Each interface's access rules with the kernel's counters (`zsn wg acl show
    --json`), for the interfaces that have a policy file; and what could not be read."""
    from zsn.wireguard.acl_view import view, view_dict
    from zsn.wireguard.policy import ACL_DIR

    folder = host.path(ACL_DIR)
    try:
        if not files.is_dir(folder):
            return [], []
        policies = files.list_files(folder, "*.acl")
    except ZsnError as exc:  # not root: the rest of the section still stands
        return [], [f"access rules: {exc}"]
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    for path in policies:
        try:
            found.append(view_dict(view(host, path.stem)))
        except ZsnError as exc:
            errors.append(f"access rules of {path.stem}: {exc}")
    return found, errors


History = dict[tuple[str, str], dict[str, Any] | None]
"""A peer's exported history by (interface, public key)."""


def history_reports(host: Host, snapshot: WireGuardSnapshot) -> History | None:
    """Each peer's ``history`` (totals across restarts, session, last 24 hours, latest
    events) from the store; None when there is none. The export never writes it."""
    from zsn.wireguard.history import STORE_PATH, HistoryStore

    if not files.exists(host.path(STORE_PATH)):
        return None
    from zsn.wireguard.peerlog import bulk_reports, report_dict

    store = HistoryStore.open(host, create=False)
    try:
        reports = bulk_reports(store, snapshot, int(snapshot.taken_at or time.time()))
    finally:
        store.close()
    return {(key.interface, key.public_key): report_dict(report) if report is not None
            else None for key, report in reports.items()}


def attach_history(interfaces: list[dict[str, Any]], reports: History | None,
                   snapshot: WireGuardSnapshot) -> None:
    """Give each peer its history; ``connected`` from this snapshot's handshake (what
    the store would say: the same rule), so a history read a while ago still says it
    as of now."""
    if reports is None:
        return
    now = snapshot.taken_at or time.time()
    for interface in interfaces:
        for peer in interface["peers"]:
            report = reports.get((interface["name"], peer["public_key"]))
            if report is not None:
                handshake = peer["latest_handshake"]
                report = {**report, "connected": handshake is not None
                          and now - handshake <= CONNECTED_WITHIN}
            peer["history"] = report


class Poller:
    """`zsn serve`'s reader: peer names and unchanged peers cached between polls (the
    pane's `LiveCache`), lint every `LINT_SECONDS`, the peers' history from the store
    when the peers change, and again in the background every `HISTORY_SECONDS`
    (reading it costs up to ~1 ms a peer, seconds for a big server: never in a
    scrape's way; the recorder writes counters once a minute anyway)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._cache = LiveCache()
        self._lint = Every(LINT_SECONDS)
        self._history = Every(HISTORY_SECONDS, background=True)

    def poll(self) -> WireGuardSnapshot:
        return read_wireguard(self.host, self._cache)

    def section(self, snapshot: WireGuardSnapshot) -> dict[str, Any]:
        peers = frozenset((i.name, p.public_key) for i in snapshot.interfaces for p in i.peers)
        return section(self.host, snapshot, self._lint.get(None, lambda: _lint(self.host)),
                       history=lambda: self._history.get(
                           peers, lambda: history_reports(self.host, snapshot)))

    def close(self) -> None:
        pass


def peer_labels(interface: str, peer: dict[str, Any]) -> dict[str, str]:
    """prometheus_wireguard_exporter's labels, in its order: a dashboard made for it
    works unchanged. `allowed_ips` as ``wg show dump`` prints them; `friendly_name`
    (the peer's name comment, whatever its style) only for a peer that has one."""
    labels = {"interface": interface, "public_key": peer["public_key"],
              "allowed_ips": ",".join(peer["allowed_ips"]) or "(none)"}
    if peer["name"]:
        labels["friendly_name"] = peer["name"]
    return labels


def prometheus(data: dict[str, Any]) -> list[MetricFamily]:
    # The three peer families are prometheus_wireguard_exporter's, names, help and
    # labels alike (see docs/metrics.md); the others are zsn's own.
    sent = MetricFamily("wireguard_sent_bytes_total", "counter", "Bytes sent to the peer")
    received = MetricFamily("wireguard_received_bytes_total", "counter",
                            "Bytes received from the peer")
    handshake = MetricFamily("wireguard_latest_handshake_seconds", "gauge",
                             "UNIX timestamp seconds of the last handshake")
    info = MetricFamily(
        "zsn_wireguard_interface_info", "gauge",
        "WireGuard interface (value 1); labels carry its implementation and public key.",
    )
    peer_count = MetricFamily("zsn_wireguard_interface_peers", "gauge", "Peers on the interface.")
    keepalive = MetricFamily(
        "zsn_wireguard_peer_persistent_keepalive_seconds", "gauge",
        "Persistent keepalive interval; 0 means off.",
    )
    connected = MetricFamily(
        "zsn_wireguard_peer_connected", "gauge",
        "1 while the peer's latest handshake is at most 270 s old (zsn's history), else 0; "
        "absent without history.",
    )
    rule_packets = MetricFamily(
        "zsn_wireguard_acl_rule_packets_total", "counter",
        "Packets an access rule decided (rule: its number, or default); the first packet "
        "of each connection, replies pass apart. Starts again when the table is replaced.")
    rule_bytes = MetricFamily("zsn_wireguard_acl_rule_bytes_total", "counter",
                              "Bytes of the packets an access rule decided.")
    loaded = MetricFamily(
        "zsn_wireguard_acl_loaded", "gauge",
        "1 while the kernel's nftables table of the interface is its policy file's, else 0.")
    failing = MetricFamily("zsn_wireguard_acl_tests_failing", "gauge",
                           "Tests of the interface's access rules that fail.")
    for rules in data.get("access_rules", ()):
        name = rules["interface"]
        loaded.add({"interface": name}, 1 if rules["loaded"] and not rules["problem"] else 0)
        failing.add({"interface": name}, sum(1 for test in rules["tests"]
                                             if not test["passes"]))
        for label, counted in [*((str(rule["number"]), rule) for rule in rules["rules"]),
                               ("default", rules["default"])]:
            if counted["packets"] is not None:
                rule_packets.add({"interface": name, "rule": label}, counted["packets"])
                rule_bytes.add({"interface": name, "rule": label}, counted["bytes"])
    for interface in data.get("interfaces", ()):
        name = interface["name"]
        info.add({"interface": name, "implementation": interface["implementation"],
                  "public_key": interface["public_key"] or "",
                  "listen_port": str(interface["listen_port"] or "")}, 1)
        peer_count.add({"interface": name}, len(interface["peers"]))
        for peer in interface["peers"]:
            labels = peer_labels(name, peer)
            sent.add(labels, peer["tx_bytes"])
            received.add(labels, peer["rx_bytes"])
            handshake.add(labels, peer["latest_handshake"] or 0)
            keepalive.add(labels, peer["persistent_keepalive"] or 0)
            if peer.get("history"):
                connected.add(labels, 1 if peer["history"]["connected"] else 0)
    return [sent, received, handshake, info, peer_count, keepalive, connected, rule_packets,
            rule_bytes, loaded, failing]
