"""Kernel WireGuard, in the QEMU kernel lab guest (group ``wireguard``).

Two namespaces joined by a veth, each with a kernel WireGuard interface set up with
`ip` and `wg` (not by zsn), so zsn is checked against the kernel and WireGuard's own
tool: the generic-netlink reader against ``wg show all dump``, ``zsn peer add`` on
the running kernel interface under a 50 ms ping, ``zsn peer remove``, and the export.
The guest's /etc is a throwaway overlay, so zsn runs on the real root there.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab.kernel import modprobe
from tests.lab.netns import Lab, new_private_key, run, wait_for
from tests.needs import needs_tools
from zsn.wireguard.config import parse
from zsn.wireguard.keys import public_key_from_private

REPO = Path(__file__).resolve().parents[2]
UNDERLAY = ("192.168.241.1", "192.168.241.2")
TUNNEL = ("10.241.0.1", "10.241.0.2")
PORTS = (51841, 51842)
CLIENT_FWMARK = 0x5A
# Enough allowed IPs that the kernel splits the peer over several dump messages (1000
# in one with pyroute2's buffer; the test checks that this many do not).
MANY_ALLOWED_IPS = [f"10.242.{n // 256}.{n % 256}/32" for n in range(1500)] + ["fd42::/64"]


@dataclass
class KernelPair:
    lab: Lab
    server_ns: str
    client_ns: str
    server: str
    client: str
    client_public: str
    config: Path

    def zsn(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run zsn on the guest's real root inside the server's namespace."""
        return zsn(self.server_ns, *args)

    def key_of(self, name: str) -> str | None:
        """The public key of the peer called `name` in the server's config."""
        names = parse(self.config.read_text()).peer_names()
        return next((key for key, peer in names.items() if peer == name), None)

    def live_peers(self) -> set[str]:
        return set(run(["ip", "netns", "exec", self.server_ns, "wg", "show", self.server,
                        "peers"]).stdout.split())


def zsn(ns: str | None, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``python -m zsn ARGS`` as a user would, in network namespace `ns` if given."""
    argv = [sys.executable, "-m", "zsn", *args]
    if ns:
        argv = ["ip", "netns", "exec", ns, *argv]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO,
                            check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"zsn {' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def _secret_file(directory: Path, name: str, key: str) -> str:
    path = directory / name
    path.write_text(key + "\n")
    path.chmod(0o600)
    return str(path)


def test_up_plans_a_kernel_interface_before_the_module_is_loaded() -> None:
    # A distribution kernel loads wireguard.ko on the first `ip link add`; until then
    # zsn must not plan for wireguard-go (nor refuse when it is not installed).
    run(["modprobe", "-r", "wireguard"], check=False)
    assert not Path("/sys/module/wireguard").exists(), "this test must come first"
    name = "zk" + secrets.token_hex(2) + "u"
    config = Path("/etc/wireguard") / f"{name}.conf"
    config.parent.mkdir(mode=0o700, exist_ok=True)
    config.write_text(f"[Interface]\nAddress = 10.243.0.1/24\nListenPort = 51843\n"
                      f"PrivateKey = {new_private_key()}\n")
    try:
        plan = zsn(None, "wg", "up", name, "--dry-run").stdout
    finally:
        config.unlink()
    assert f"wg-quick up {name}" in plan
    assert "no WireGuard module" not in plan and "wireguard-go" not in plan, plan


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelPair]:
    needs_tools("ip", "wg", "ping")
    modprobe("wireguard")
    keys = tmp_path_factory.mktemp("keys")
    lab = Lab(tag="zk" + secrets.token_hex(2))
    try:
        server_ns, client_ns = lab.namespace("s"), lab.namespace("c")
        lab.veth(server_ns, f"{UNDERLAY[0]}/24", client_ns, f"{UNDERLAY[1]}/24")
        server, client = lab.name("ws"), lab.name("wc")
        private = (new_private_key(), new_private_key())
        public = (public_key_from_private(private[0]), public_key_from_private(private[1]))
        psk = base64.b64encode(secrets.token_bytes(32)).decode()
        psk_file = _secret_file(keys, "psk", psk)
        for me, (ns, ifname) in enumerate(((server_ns, server), (client_ns, client))):
            other = 1 - me
            run(["ip", "-n", ns, "link", "add", ifname, "type", "wireguard"])
            extra = ["fwmark", hex(CLIENT_FWMARK)] if me == 1 else []
            keepalive = ["persistent-keepalive", "25"] if me == 1 else []
            run(["ip", "netns", "exec", ns, "wg", "set", ifname,
                 "private-key", _secret_file(keys, f"key{me}", private[me]),
                 "listen-port", str(PORTS[me]), *extra,
                 "peer", public[other], "preshared-key", psk_file,
                 "endpoint", f"{UNDERLAY[other]}:{PORTS[other]}",
                 "allowed-ips", f"{TUNNEL[other]}/32", *keepalive])
            run(["ip", "-n", ns, "addr", "add", f"{TUNNEL[me]}/24", "dev", ifname])
            run(["ip", "-n", ns, "link", "set", ifname, "up"])
        # Peers that never shake hands: an IPv6 endpoint and a dump split over
        # several messages; a key alone (no endpoint, no allowed IPs).
        run(["ip", "netns", "exec", server_ns, "wg", "set", server,
             "peer", public_key_from_private(new_private_key()),
             "endpoint", f"[fd00::7]:{PORTS[1]}", "allowed-ips", ",".join(MANY_ALLOWED_IPS),
             "peer", public_key_from_private(new_private_key())])
        config = lab.file(
            Path("/etc/wireguard") / f"{server}.conf",
            "[Interface]\n"
            f"Address = {TUNNEL[0]}/24\n"
            f"ListenPort = {PORTS[0]}\n"
            f"PrivateKey = {private[0]}\n\n"
            "# alice\n"
            "[Peer]\n"
            f"PublicKey = {public[1]}\n"
            f"PresharedKey = {psk}\n"
            f"AllowedIPs = {TUNNEL[1]}/32\n",
        )
        built = KernelPair(lab, server_ns, client_ns, server, client, public[1], config)
        # A handshake sent before the veth's carrier is up is lost: reach the underlay
        # first, then the tunnel (WireGuard retries its handshake every 5 s).
        wait_for(lambda: _ping(client_ns, UNDERLAY[0]), 20, "the underlay")
        wait_for(lambda: _ping(client_ns, TUNNEL[0]), 30, "a ping through the tunnel")
        yield built
    finally:
        lab.close()


def _ping(ns: str, target: str) -> bool:
    return run(["ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", target],
               check=False, timeout=10).returncode == 0


READER = """
import json
from pyroute2.netlink.generic.wireguard import WireGuard
from zsn.system.host import Host
from zsn.wireguard.live import read_wireguard
snapshot = read_wireguard(Host())
wg = WireGuard()
print(json.dumps({"errors": list(snapshot.errors), "interfaces": [
    {"name": i.name, "implementation": i.implementation, "private_key": i.private_key,
     "public_key": i.public_key, "listen_port": i.listen_port, "fwmark": i.fwmark,
     "peers": [p._asdict() for p in i.peers], "messages": len(list(wg.info(i.name)))}
    for i in snapshot.interfaces]}))
"""


def _as_dump(snapshot: dict[str, Any]) -> list[str]:
    """zsn's reading in the format of `wg show all dump`."""
    lines = []
    for device in snapshot["interfaces"]:
        fwmark = f"0x{device['fwmark']:x}" if device["fwmark"] else "off"
        lines.append("\t".join([device["name"], device["private_key"] or "(none)",
                                device["public_key"] or "(none)",
                                str(device["listen_port"] or 0), fwmark]))
        for peer in device["peers"]:
            lines.append("\t".join([
                device["name"], peer["public_key"], peer["preshared_key"] or "(none)",
                peer["endpoint"] or "(none)", ",".join(peer["allowed_ips"]) or "(none)",
                str(peer["latest_handshake"] or 0), str(peer["rx_bytes"]),
                str(peer["tx_bytes"]), str(peer["persistent_keepalive"] or "off"),
            ]))
    return lines


@pytest.mark.parametrize("side", ["server", "client"])
def test_netlink_reader_agrees_with_wg_show_dump(pair: KernelPair, side: str) -> None:
    ns = pair.server_ns if side == "server" else pair.client_ns
    ifname = pair.server if side == "server" else pair.client

    def dump() -> list[str]:
        return run(["ip", "netns", "exec", ns, "wg", "show", "all", "dump"]).stdout.splitlines()

    # Counters move with every keepalive: compare a reading taken between two equal dumps.
    for _ in range(5):
        before = dump()
        reader = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", READER],
                                capture_output=True, text=True, timeout=120, cwd=REPO)
        assert reader.returncode == 0, reader.stderr
        after = dump()
        if before == after:
            break
    else:
        pytest.fail(f"wg show dump kept changing:\n{before}\n{after}")
    snapshot = json.loads(reader.stdout)
    assert snapshot["errors"] == []
    [device] = snapshot["interfaces"]
    assert (device["name"], device["implementation"]) == (ifname, "kernel")
    # zsn lists peers in the config's order (then by name), the kernel in its own.
    mine, theirs = _as_dump(snapshot), after
    assert (mine[0], sorted(mine[1:])) == (theirs[0], sorted(theirs[1:]))
    # What the comparison is worth: the dump really has what it checks.
    peers = device["peers"]
    if side == "server":
        assert len(peers) == 3
        assert device["messages"] > 1, "the dump was not split: the merge went untested"
        assert any(p["allowed_ips"] == MANY_ALLOWED_IPS for p in peers)
        assert any(p["endpoint"] == f"[fd00::7]:{PORTS[1]}" for p in peers)
        [alice] = [p for p in peers if p["public_key"] == pair.client_public]
        assert alice["name"] == "alice"
    else:
        assert device["fwmark"] == CLIENT_FWMARK
        [server] = peers
        assert server["persistent_keepalive"] == 25
    handshaken = [p for p in peers if p["latest_handshake"]]
    assert handshaken and all(p["rx_bytes"] > 0 and p["tx_bytes"] > 0 for p in handshaken)


def test_peer_add_on_the_kernel_interface_loses_no_ping(pair: KernelPair) -> None:
    endpoint = f"{UNDERLAY[0]}:{PORTS[0]}"
    # A dry run costs what the add costs: it sizes the ping so it spans the add.
    started = time.monotonic()
    plan = pair.zsn("peer", "add", pair.server, "dave", "--endpoint", endpoint, "--dry-run")
    took = time.monotonic() - started
    assert f"on running {pair.server} (kernel, no restart)" in plan.stdout, plan.stdout
    interval = 0.05
    count = int((2 * took + 4) / interval)
    ping = subprocess.Popen(
        ["ip", "netns", "exec", pair.client_ns, "ping", "-i", str(interval), "-c", str(count),
         "-W", "2", TUNNEL[0]],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)
        before = pair.live_peers()
        added = pair.zsn("peer", "add", pair.server, "dave", "--endpoint", endpoint)
        ping_still_running = ping.poll() is None
        after = pair.live_peers()
        output, _ = ping.communicate(timeout=count * interval * 4 + 30)
    finally:
        if ping.poll() is None:
            ping.kill()
            ping.wait(timeout=5)
    assert ping_still_running, f"the ping ended before the add did:\n{output}"
    stats = re.search(r"(\d+) packets transmitted, (\d+) received", output)
    assert stats, output
    assert (int(stats.group(1)), int(stats.group(2))) == (count, count), output
    assert "[Interface]" in added.stdout and f"Endpoint = {endpoint}" in added.stdout
    assert after - before == {pair.key_of("dave")}, "dave is on the running interface"


def test_the_added_peer_connects_with_its_client_config(pair: KernelPair) -> None:
    written = Path("/etc/wireguard/clients") / pair.server / "dave.conf"
    assert written.is_file(), "zsn peer add saves the client config"
    lab = pair.lab
    dave_ns = lab.namespace("d")
    lab.veth(pair.server_ns, "192.168.243.1/24", dave_ns, "192.168.243.2/24", suffix="d")
    run(["ip", "-n", dave_ns, "route", "add", f"{UNDERLAY[0]}/32", "via", "192.168.243.1"])
    interface = lab.name("wd")
    lab.file(Path("/etc/wireguard") / f"{interface}.conf", written.read_text())
    zsn(dave_ns, "wg", "up", interface)
    lab.defer(lambda: zsn(dave_ns, "wg", "down", interface, check=False))
    kind = run(["ip", "-n", dave_ns, "-d", "link", "show", interface]).stdout
    assert "wireguard" in kind, kind  # the kernel's, not wireguard-go's tun
    wait_for(lambda: _ping(dave_ns, TUNNEL[0]), 30, "dave reaching the server")


def test_export_reports_the_kernel_interface(pair: KernelPair) -> None:
    result = pair.zsn("--export", "wireguard")
    document = json.loads(result.stdout)
    interfaces = {i["name"]: i for i in document["wireguard"]["interfaces"]}
    server = interfaces[pair.server]
    assert server["implementation"] == "kernel"
    assert server["listen_port"] == PORTS[0]
    assert server["addresses"] == [f"{TUNNEL[0]}/24"]
    assert server["config_path"] == str(pair.config)
    assert "private_key" not in server
    [alice] = [p for p in server["peers"] if p["name"] == "alice"]
    assert alice["public_key"] == pair.client_public
    assert alice["endpoint"] == f"{UNDERLAY[1]}:{PORTS[1]}"
    assert alice["latest_handshake"] is not None and alice["rx_bytes"] > 0
    assert "preshared_key" not in alice


def test_enable_puts_a_hostname_endpoint_on_the_kernel_interface(pair: KernelPair) -> None:
    # A site-to-site peer, written by hand, disabled, with its office's DNS name.
    hosts = Path("/etc/hosts")
    original = hosts.read_text()
    hosts.write_text(original + "192.168.241.77 office.zsn-lab.test\n")
    pair.lab.defer(lambda: hosts.write_text(original))
    key = public_key_from_private(new_private_key())
    with pair.config.open("a") as config:
        config.write("\n# office\n" + "".join(
            f"#[disabled] {line}\n" for line in (
                "[Peer]", f"PublicKey = {key}", "AllowedIPs = 10.241.0.77/32",
                "Endpoint = office.zsn-lab.test:51877")))
    pair.zsn("peer", "enable", pair.server, "office")
    endpoints = run(["ip", "netns", "exec", pair.server_ns, "wg", "show", pair.server,
                     "endpoints"]).stdout
    assert f"{key}\t192.168.241.77:51877" in endpoints.splitlines(), endpoints


def test_peer_remove_takes_it_off_the_kernel_interface(pair: KernelPair) -> None:
    pair.zsn("peer", "add", pair.server, "erin", "--endpoint", f"{UNDERLAY[0]}:{PORTS[0]}")
    erin = pair.key_of("erin")
    assert erin in pair.live_peers()
    pair.zsn("peer", "remove", pair.server, "erin")
    assert erin not in pair.live_peers()
    assert pair.key_of("erin") is None
    assert _ping(pair.client_ns, TUNNEL[0]), "the other peers keep working"
