"""One frozen snapshot of every OpenVPN connection and its findings, for the pane and export."""

from __future__ import annotations

import time
from dataclasses import dataclass

from zsn.lint import Finding
from zsn.openvpn.connections import Connection, connections
from zsn.openvpn.lint import lint
from zsn.system.host import Host


@dataclass(frozen=True)
class OpenVpnSnapshot:
    connections: tuple[Connection, ...]
    findings: tuple[Finding, ...]
    taken_at: float
    """Monotonic time of the reading, for rates."""

    @property
    def errors(self) -> list[str]:
        return [f"{c.config.unit}: {e}" for c in self.connections for e in c.errors]


def read_openvpn(host: Host) -> OpenVpnSnapshot:
    return OpenVpnSnapshot(tuple(connections(host)), tuple(lint(host)), time.monotonic())
