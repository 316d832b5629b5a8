"""OpenVPN pieces of the lab: a server namespace and a client namespace joined by veth,
and an OpenVPN server started in the first (stopped at the lab's teardown)."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.lab.netns import Lab, stop_process, wait_for
from tests.lab.pki import Pki, server_config

OPENVPN_TOOLS = ("ip", "openvpn", "systemd-nspawn", "debootstrap")


def openvpn_lab() -> Lab:
    """A lab whose every name starts with `zov` (other labs run alongside with theirs)."""
    return Lab(tag="zov" + secrets.token_hex(3))


@dataclass(frozen=True)
class NsPair:
    """Two namespaces joined by a veth pair: server side 10.86.x.1, client side .2."""

    server_ns: str
    client_ns: str
    server_ip: str
    client_ip: str


def namespace_pair(lab: Lab) -> NsPair:
    server_ns, client_ns = lab.namespace("s"), lab.namespace("c")
    octet = secrets.randbelow(250) + 1
    server_ip, client_ip = f"10.86.{octet}.1", f"10.86.{octet}.2"
    lab.veth(server_ns, f"{server_ip}/24", client_ns, f"{client_ip}/24")
    return NsPair(server_ns, client_ns, server_ip, client_ip)


def start_openvpn(lab: Lab, ns: str, config: Path, management: Path) -> None:
    """Run `openvpn --config CONFIG` in `ns` until teardown; wait for its management socket."""
    log = config.with_suffix(".log")
    with open(log, "wb") as out:
        process = subprocess.Popen(["ip", "netns", "exec", ns, "openvpn", "--config", str(config)],
                                   stdout=out, stderr=subprocess.STDOUT)

    lab.defer(lambda: stop_process(process))
    wait_for(management.exists, 15, f"OpenVPN management socket {management}")


def start_server(lab: Lab, pair: NsPair, pki: Pki, workdir: Path, extra: str = "") -> Path:
    """Start the lab's OpenVPN server; return its management socket."""
    sock = workdir / "server.sock"
    config = workdir / "server.conf"
    config.write_text(server_config(pki, management=str(sock), extra=extra))
    start_openvpn(lab, pair.server_ns, config, sock)
    return sock
