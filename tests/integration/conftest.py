"""Two namespaces joined by veth, wireguard-go in each, keys and peers set over UAPI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lab.netns import Lab, new_private_key, run, wait_for
from zsn.wireguard import uapi
from zsn.wireguard.keys import base64_to_hex, public_key_from_private


@dataclass
class WgPair:
    lab: Lab
    ns: tuple[str, str]
    ifnames: tuple[str, str]
    sockets: tuple[Path, Path]
    public_keys: tuple[str, str]
    tunnel_ips: tuple[str, str]
    config_path: Path
    peer_name: str


@pytest.fixture
def wg_pair(lab: Lab) -> WgPair:
    ns = (lab.namespace("n1"), lab.namespace("n2"))
    lab.veth(ns[0], "192.168.240.1/24", ns[1], "192.168.240.2/24")
    ifnames = (lab.name("w1"), lab.name("w2"))
    keys = (new_private_key(), new_private_key())
    publics = (public_key_from_private(keys[0]), public_key_from_private(keys[1]))
    tunnel = ("10.240.0.1", "10.240.0.2")
    ports = (51871, 51872)
    sockets = (lab.wireguard_go(ns[0], ifnames[0]), lab.wireguard_go(ns[1], ifnames[1]))
    for me in (0, 1):
        other = 1 - me
        uapi.set_device(sockets[me], [
            f"private_key={base64_to_hex(keys[me])}",
            f"listen_port={ports[me]}",
            f"public_key={base64_to_hex(publics[other])}",
            f"endpoint=192.168.240.{other + 1}:{ports[other]}",
            f"allowed_ip={tunnel[other]}/32",
        ])
        run(["ip", "-n", ns[me], "addr", "add", f"{tunnel[me]}/24", "dev", ifnames[me]])
        run(["ip", "-n", ns[me], "link", "set", ifnames[me], "up"])
    peer_name = "alice laptop"
    config = lab.file(
        Path("/etc/wireguard") / f"{ifnames[0]}.conf",
        "[Interface]\n"
        f"Address = {tunnel[0]}/24\n"
        f"ListenPort = {ports[0]}\n"
        f"PrivateKey = {keys[0]}\n\n"
        f"# {peer_name}\n"
        "[Peer]\n"
        f"PublicKey = {publics[1]}\n"
        f"AllowedIPs = {tunnel[1]}/32\n",
    )
    # One ping makes the handshake; retry briefly while the devices settle.
    wait_for(lambda: run(["ip", "netns", "exec", ns[0], "ping", "-c", "1", "-W", "1", tunnel[1]],
                         check=False).returncode == 0, 15, "a ping through the tunnel")
    return WgPair(lab, ns, ifnames, sockets, publics, tunnel, config, peer_name)
