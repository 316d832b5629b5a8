"""The ``openvpn`` section of `zsn --export`: connections, unit states, live state, findings."""

from __future__ import annotations

from typing import Any

from zsn.errors import ZsnError
from zsn.exporter.prometheus import MetricFamily
from zsn.lint import count_by_severity
from zsn.openvpn.connections import CONFIG_DIR, Connection
from zsn.openvpn.lint import SUBJECT
from zsn.openvpn.live import read_openvpn
from zsn.openvpn.management import STATES
from zsn.system import files
from zsn.system.host import Host

ACTIVE_STATES = ("active", "reloading", "inactive", "failed", "activating", "deactivating")


def present(host: Host) -> bool:
    return files.is_dir(host.path(CONFIG_DIR))


def connection_to_dict(conn: Connection) -> dict[str, Any]:
    """Everything but secrets: configs are summarised, never copied."""
    summary = conn.summary
    unit = conn.unit
    live = conn.live
    return {
        "name": conn.config.name,
        "kind": conn.config.kind,
        "config": str(conn.config.path),
        "unit": conn.config.unit,
        "role": summary.role if summary else None,
        "remotes": [{"host": r.host, "port": r.port, "proto": r.proto}
                    for r in summary.remotes] if summary else [],
        "dev": summary.dev if summary else None,
        "management": summary.management.describe() if summary and summary.management else None,
        "unit_state": None if unit is None else {
            "load": unit.load_state, "active": unit.active_state, "sub": unit.sub_state,
            "enabled": unit.unit_file_state, "main_pid": unit.main_pid,
            "active_since": unit.active_since_us // 1_000_000 or None,
        },
        "live": None if live is None else {
            "state": live.state, "description": live.description, "since": live.since,
            "tunnel_ipv4": live.tunnel_ipv4 or None, "tunnel_ipv6": live.tunnel_ipv6 or None,
            "remote": live.remote or None, "remote_port": live.remote_port or None,
            "bytes_in": live.bytes_in, "bytes_out": live.bytes_out, "clients": live.clients,
        },
        "errors": list(conn.errors),
    }


def collect(host: Host, *, include_secrets: bool = False) -> dict[str, Any]:
    """`include_secrets` changes nothing: this section never carries key material."""
    try:
        snapshot = read_openvpn(host)
    except ZsnError as exc:  # e.g. a config folder only root may read
        return {"connections": [], "findings": [], "errors": [str(exc)]}
    data: dict[str, Any] = {
        "connections": [connection_to_dict(c) for c in snapshot.connections],
        "findings": [f.as_dict(SUBJECT) for f in snapshot.findings],
    }
    if snapshot.errors:
        data["errors"] = snapshot.errors
    return data


def prometheus(data: dict[str, Any]) -> list[MetricFamily]:
    active = MetricFamily(
        "zsn_openvpn_unit_active", "gauge",
        "1 for the unit's current ActiveState (label state), 0 for the others.")
    enabled = MetricFamily("zsn_openvpn_unit_enabled", "gauge",
                           "1 when the unit starts at boot (UnitFileState enabled).")
    state = MetricFamily(
        "zsn_openvpn_state", "gauge",
        "1 for the connection's current management state (label state), 0 for the others.")
    connected = MetricFamily("zsn_openvpn_connected", "gauge",
                             "1 when the management interface reports CONNECTED.")
    received = MetricFamily("zsn_openvpn_receive_bytes_total", "counter",
                            "Bytes received on the link (client) or from all clients (server).")
    sent = MetricFamily("zsn_openvpn_transmit_bytes_total", "counter",
                        "Bytes sent on the link (client) or to all clients (server).")
    clients = MetricFamily("zsn_openvpn_server_clients", "gauge", "Clients connected.")
    findings = MetricFamily("zsn_openvpn_findings", "gauge", "Lint findings by severity.")
    for conn in data.get("connections", ()):
        labels = {"unit": conn["unit"], "name": conn["name"], "kind": conn["kind"]}
        unit = conn.get("unit_state")
        if unit:
            for value in ACTIVE_STATES:
                active.add({**labels, "state": value}, int(unit["active"] == value))
            enabled.add(labels, int(unit["enabled"] == "enabled"))
        live = conn.get("live")
        connected.add(labels, int(bool(live) and live["state"] == "CONNECTED"))
        if live:
            for value in STATES:
                state.add({**labels, "state": value}, int(live["state"] == value))
            if live["bytes_in"] is not None:
                received.add(labels, live["bytes_in"])
            if live["bytes_out"] is not None:
                sent.add(labels, live["bytes_out"])
            if live["clients"] is not None:
                clients.add(labels, live["clients"])
    for severity, count in count_by_severity(data.get("findings", ())).items():
        findings.add({"severity": severity}, count)
    return [active, enabled, state, connected, received, sent, clients, findings]
