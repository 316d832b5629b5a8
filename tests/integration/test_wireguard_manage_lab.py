"""WireGuard management end to end, set up only through zsn's headless commands.

Five namespaces: a server, three clients and an "internet" host. The server runs
two interfaces (w0: clients c1, c2; w1: client c3 in the all-traffic profile),
clients reach it over a bridge, and the internet host sits behind the server's
default route with no route back to the VPN subnets (so only NAT lets c3 in).
Every wireguard-go instance comes from `zsn wg up` (wg-quick) in its namespace.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, kill_leftover_wireguard, require_lab, run, wait_for
from tests.needs import needs_tools
from zsn.wireguard import uapi
from zsn.wireguard.addressing import next_free_address
from zsn.wireguard.config import parse
from zsn.wireguard.keys import base64_to_hex, generate_private_key, public_key_from_private

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
EXTRA_TOOLS = ("wg-quick", "iptables", "ip6tables")
SERVER_TUNNEL = {"w0": "10.61.0.1", "w1": "10.62.0.1"}
INTERNET_HOST = "203.0.113.1"
BRIDGE_ADDRESS = "192.0.2.1"


@dataclass
class ManageLab:
    lab: Lab
    tag: str
    ns: dict[str, str]
    roots: dict[str, Path]

    def iface(self, suffix: str) -> str:
        return self.lab.name(suffix)

    def zsn(self, where: str, *args: str, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``zsn --root <root of where> ARGS`` inside namespace `where`."""
        root = self.roots[where]
        argv = ["ip", "netns", "exec", self.ns[where], *private_argv(
            {"/run/wireguard": str(root / "run/wireguard"), "/proc": str(root / "proc")},
            [sys.executable, "-m", "zsn", "--root", str(root), *args])]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                cwd=REPO, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"zsn {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def ping_ok(self, where: str, target: str) -> bool:
        return run(["ip", "netns", "exec", self.ns[where], "ping", "-c", "1", "-W", "1",
                    target], check=False, timeout=5).returncode == 0

    def server_config(self, suffix: str) -> Path:
        return self.roots["srv"] / "etc/wireguard" / f"{self.iface(suffix)}.conf"

    def client_up(self, where: str, server_suffix: str, peer: str, client_suffix: str) -> None:
        """Install the client config zsn wrote on the server and bring it up with zsn."""
        written = (self.roots["srv"] / "etc/wireguard/clients" / self.iface(server_suffix)
                   / f"{peer}.conf")
        target = self.roots[where] / "etc/wireguard" / f"{self.iface(client_suffix)}.conf"
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(written, target)
        os.chmod(target, 0o600)
        self.zsn(where, "wg", "up", self.iface(client_suffix))
        self.lab.defer(lambda: self.zsn(where, "wg", "down", self.iface(client_suffix),
                                        check=False))


def _require_tools() -> None:
    require_lab()
    needs_tools(*EXTRA_TOOLS)


def _root(tmp: Path, name: str) -> Path:
    root = tmp / name
    (root / "etc/sysctl.d").mkdir(parents=True)
    # UAPI sockets and /proc/sys are the real ones, seen from the namespace zsn runs
    # in, bind-mounted for each run (`ManageLab.zsn`): under --root zsn follows no
    # link out of the tree. Only run/wireguard: the host's /run/systemd must not make
    # zsn use the host's systemd for interfaces that belong in the test's namespaces.
    (root / "run/wireguard").mkdir(parents=True)
    (root / "proc").mkdir()
    return root


@pytest.fixture(scope="module")
def mlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManageLab]:
    _require_tools()
    tag = "zwm" + secrets.token_hex(2)
    lab = Lab(tag=tag)
    interfaces = [lab.name(s) for s in ("w0", "w1", "k1", "k2", "k3", "sx")]
    lab.defer(lambda: kill_leftover_wireguard(interfaces))
    tmp = tmp_path_factory.mktemp("wgmanage")
    try:
        ns = {key: lab.namespace(key) for key in ("srv", "c1", "c2", "c3", "net")}
        roots = {key: _root(tmp, key) for key in ns}
        bridge = lab.name("br")
        run(["ip", "-n", ns["srv"], "link", "add", bridge, "type", "bridge"])
        run(["ip", "-n", ns["srv"], "addr", "add", f"{BRIDGE_ADDRESS}/24", "dev", bridge])
        run(["ip", "-n", ns["srv"], "link", "set", bridge, "up"])
        for number, client in enumerate(("c1", "c2", "c3"), start=1):
            a, b = lab.veth_between(client, ns["srv"], ns[client])
            run(["ip", "-n", ns["srv"], "link", "set", a, "master", bridge, "up"])
            run(["ip", "-n", ns[client], "addr", "add", f"192.0.2.{10 + number}/24", "dev", b])
            run(["ip", "-n", ns[client], "link", "set", b, "up"])
        a, b = lab.veth_between("net", ns["srv"], ns["net"])
        run(["ip", "-n", ns["srv"], "addr", "add", "203.0.113.2/24", "dev", a])
        run(["ip", "-n", ns["srv"], "link", "set", a, "up"])
        run(["ip", "-n", ns["net"], "addr", "add", f"{INTERNET_HOST}/24", "dev", b])
        run(["ip", "-n", ns["net"], "link", "set", b, "up"])
        run(["ip", "-n", ns["srv"], "route", "add", "default", "via", INTERNET_HOST])

        built = ManageLab(lab, tag, ns, roots)
        w0, w1 = built.iface("w0"), built.iface("w1")
        built.zsn("srv", "wg", "create", w0, "--address", f"{SERVER_TUNNEL['w0']}/24",
                  "--port", "51861", "--endpoint", BRIDGE_ADDRESS)
        built.zsn("srv", "wg", "create", w1, "--address", f"{SERVER_TUNNEL['w1']}/24",
                  "--port", "51862", "--endpoint", BRIDGE_ADDRESS)
        for iface in (w0, w1):
            built.zsn("srv", "wg", "up", iface)
            lab.defer(partial(built.zsn, "srv", "wg", "down", iface, check=False))
        built.zsn("srv", "wg", "clients", w0)
        built.zsn("srv", "wg", "link", w0, w1)
        typo = built.zsn("srv", "wg", "gateway", w1, "--egress", "eth9", check=False)
        assert typo.returncode == 2 and typo.stderr.count("\n") == 1, typo.stderr
        assert "no outgoing interface named 'eth9' here (known: " in typo.stderr
        built.zsn("srv", "wg", "gateway", w1)  # egress found through netlink
        built.zsn("srv", "peer", "add", w0, "alice", "--profile", "subnet")
        built.zsn("srv", "peer", "add", w0, "bob", "--profile", "subnet")
        built.zsn("srv", "peer", "add", w1, "carol", "--profile", "all")
        built.client_up("c1", "w0", "alice", "k1")
        built.client_up("c2", "w0", "bob", "k2")
        built.client_up("c3", "w1", "carol", "k3")
        for client, target in (("c1", SERVER_TUNNEL["w0"]), ("c2", SERVER_TUNNEL["w0"]),
                               ("c3", SERVER_TUNNEL["w1"])):
            wait_for(partial(built.ping_ok, client, target), 20,
                     f"{client} reaching its server through the tunnel")
        yield built
    finally:
        lab.close()


def _device_keys(mlab: ManageLab, suffix: str) -> set[str]:
    socket = Path(f"/var/run/wireguard/{mlab.iface(suffix)}.sock")
    return {peer.public_key for peer in uapi.get_device(socket).peers}


def test_a_onboarding_a_peer_loses_no_ping(mlab: ManageLab) -> None:
    count = 100  # 5 s at 0.05 s intervals
    ping = subprocess.Popen(
        ["ip", "netns", "exec", mlab.ns["c1"], "ping", "-i", "0.05", "-c", str(count),
         "-W", "1", SERVER_TUNNEL["w0"]],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)
        before = _device_keys(mlab, "w0")
        added = mlab.zsn("srv", "peer", "add", mlab.iface("w0"), "dave")
        after = _device_keys(mlab, "w0")
        output, _ = ping.communicate(timeout=30)
    finally:
        if ping.poll() is None:
            ping.kill()
            ping.wait(timeout=5)
    assert "[Interface]" in added.stdout and "PrivateKey = " in added.stdout
    assert len(after - before) == 1, "dave is on the running interface"
    stats = re.search(r"(\d+) packets transmitted, (\d+) received", output)
    assert stats, output
    assert (int(stats.group(1)), int(stats.group(2))) == (count, count), output


def _reaches_without_loss(mlab: ManageLab, where: str, target: str, what: str) -> None:
    # The first packet may wait for a handshake; after that nothing may be lost.
    wait_for(lambda: mlab.ping_ok(where, target), 15, what)
    result = run(["ip", "netns", "exec", mlab.ns[where], "ping", "-c", "5", "-i", "0.2",
                  "-W", "2", target], check=False, timeout=20)
    assert " 0% packet loss" in result.stdout, result.stdout


def test_b_clients_of_one_interface_reach_each_other(mlab: ManageLab) -> None:
    _reaches_without_loss(mlab, "c1", "10.61.0.3", "client1 reaching client2")


def test_c_clients_of_linked_interfaces_reach_each_other(mlab: ManageLab) -> None:
    _reaches_without_loss(mlab, "c1", "10.62.0.2", "a client of w0 reaching one of w1")


def test_d_gateway_client_reaches_the_internet_through_nat(mlab: ManageLab) -> None:
    # The internet host has no route back to the VPN: only the server's NAT makes replies come.
    back = run(["ip", "-n", mlab.ns["net"], "route", "get", "10.62.0.2"], check=False)
    assert back.returncode != 0
    _reaches_without_loss(mlab, "c3", INTERNET_HOST, "client3 reaching the internet")
    rules = run(["ip", "netns", "exec", mlab.ns["srv"], "iptables", "-t", "nat", "-S"]).stdout
    assert f"-s 10.62.0.0/24 -o {mlab.iface('anet')} -j MASQUERADE" in rules


@pytest.mark.parametrize(("args", "message"), [
    (["peer", "add", "{w0}", "bad name!"], "peer name"),
    (["peer", "add", "{w0}", "eve", "--ip", "10.61.0.2"], "already used by peer 'alice'"),
    (["peer", "add", "{w0}", "eve", "--ip", "10.99.0.2"], "outside the interface subnet"),
    (["peer", "add", "{w0}", "eve", "--ip", "10.61.0.0"], "network or broadcast"),
    (["peer", "add", "{w0}", "eve", "--route", "10.70.0.1/24"], "host bits set"),
    (["peer", "add", "{w0}", "eve", "--endpoint", "vpn.example.com:99999"], "outside 1-65535"),
    (["peer", "add", "{w0}", "alice"], "already has a peer named 'alice'"),
    (["wg", "create", "zwm-bad/name", "--address", "10.80.0.1/24", "--port", "1"],
     "may only use"),
    (["wg", "create", "{tag}z", "--address", "10.80.0.0/24", "--port", "1"],
     "network address"),
    (["wg", "create", "{tag}z", "--address", "10.80.0.1/24", "--port", "0"], "outside 1-65535"),
])
def test_bad_input_changes_nothing(mlab: ManageLab, args: list[str], message: str) -> None:
    config = mlab.server_config("w0")
    before_text = config.read_bytes()
    before_keys = _device_keys(mlab, "w0")
    clients_before = sorted((config.parent / "clients").rglob("*"))
    filled = [a.format(w0=mlab.iface("w0"), tag=mlab.tag) for a in args]
    result = mlab.zsn("srv", *filled, check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, "one line"
    assert config.read_bytes() == before_text
    assert _device_keys(mlab, "w0") == before_keys
    assert sorted((config.parent / "clients").rglob("*")) == clients_before
    assert not (config.parent / f"{mlab.tag}z.conf").exists()


def test_files_zsn_wrote_pass_wg_quick_strip_and_wg_setconf(mlab: ManageLab) -> None:
    config = mlab.server_config("w0")
    mlab.zsn("srv", "peer", "disable", mlab.iface("w0"), "dave")
    try:
        stripped = run(["wg-quick", "strip", str(config)]).stdout
        assert "PostUp" not in stripped and "Address" not in stripped
        spare = mlab.iface("sx")
        mlab.lab.wireguard_go(mlab.ns["net"], spare)
        result = subprocess.run(["ip", "netns", "exec", mlab.ns["net"], "wg", "setconf", spare,
                                 "/dev/stdin"], input=stripped, capture_output=True, text=True,
                                timeout=10, check=False)
        assert result.returncode == 0, result.stderr
        shown = run(["ip", "netns", "exec", mlab.ns["net"], "wg", "show", spare, "peers"]).stdout
        expected = {p.get("PublicKey") for p in parse(config.read_text()).peers}
        assert set(shown.split()) == expected
        assert len(expected) == 2, "alice and bob; dave is disabled"
    finally:
        mlab.zsn("srv", "peer", "enable", mlab.iface("w0"), "dave")


def test_disable_takes_the_peer_off_the_live_interface_and_enable_brings_it_back(
        mlab: ManageLab) -> None:
    config = mlab.server_config("w0")
    bob = parse(config.read_text()).require_peer("bob").get("PublicKey")
    mlab.zsn("srv", "peer", "disable", mlab.iface("w0"), "bob")
    try:
        assert bob not in _device_keys(mlab, "w0")
        assert "#[disabled] [Peer]" in config.read_text()
    finally:
        mlab.zsn("srv", "peer", "enable", mlab.iface("w0"), "bob")
    assert bob in _device_keys(mlab, "w0")
    # The server forgot bob's session and has no endpoint for him (a client's endpoint is
    # learnt, not configured), so bob must handshake again: WireGuard does so when its
    # data gets no answer for KEEPALIVE_TIMEOUT + REKEY_TIMEOUT (15 s), plus jitter.
    wait_for(lambda: mlab.ping_ok("c2", SERVER_TUNNEL["w0"]), 30, "client2 handshaking again")
    _reaches_without_loss(mlab, "c1", "10.61.0.3", "client1 reaching client2 again")


def test_subnets_behind_a_peer_get_allowed_ips_and_a_route(mlab: ManageLab) -> None:
    w0 = mlab.iface("w0")

    def route_device() -> str:
        return run(["ip", "-n", mlab.ns["srv"], "route", "get", "192.168.77.1"],
                   check=False).stdout

    mlab.zsn("srv", "peer", "routes", w0, "bob", "192.168.77.0/24")
    try:
        assert f"dev {w0}" in route_device()
        socket = Path(f"/var/run/wireguard/{w0}.sock")
        bob = parse(mlab.server_config("w0").read_text()).require_peer("bob")
        live = {p.public_key: p for p in uapi.get_device(socket).peers}
        assert "192.168.77.0/24" in live[bob.get("PublicKey") or ""].allowed_ips
    finally:
        mlab.zsn("srv", "peer", "routes", w0, "bob")
    assert f"dev {w0}" not in route_device()


def test_a_server_set_up_by_zsn_lints_clean_and_exports_findings(mlab: ManageLab) -> None:
    lint = mlab.zsn("srv", "wg", "lint")
    assert lint.stdout == "no findings\n"
    exported = json.loads(mlab.zsn("srv", "--export", "wireguard").stdout)["wireguard"]
    assert exported["findings"] == []
    names = {i["name"] for i in exported["interfaces"]}
    assert {mlab.iface("w0"), mlab.iface("w1")} <= names
    # Forwarding off: the routed server gets a WG008 error with a safe fix.
    run(["ip", "netns", "exec", mlab.ns["srv"], "sysctl", "-qw", "net.ipv4.ip_forward=0"])
    try:
        broken = mlab.zsn("srv", "wg", "lint", "--json", check=False)
        assert broken.returncode == 1
        assert {f["id"] for f in json.loads(broken.stdout)} == {"WG008"}
    finally:
        run(["ip", "netns", "exec", mlab.ns["srv"], "sysctl", "-qw", "net.ipv4.ip_forward=1"])


def test_a_peer_only_on_the_running_interface_keeps_its_address(mlab: ManageLab) -> None:
    # A peer added by hand with `wg set` and never saved: onboarding must neither
    # offer nor accept its address, or WireGuard would silently move it.
    config = mlab.server_config("w0")
    socket = Path(f"/var/run/wireguard/{mlab.iface('w0')}.sock")
    address = next_free_address(parse(config.read_text())).host_routes()[0]
    stranger = public_key_from_private(generate_private_key())
    uapi.set_device(socket, [f"public_key={base64_to_hex(stranger)}",
                             f"allowed_ip={address}"])
    try:
        refused = mlab.zsn("srv", "peer", "add", mlab.iface("w0"), "eve", "--ip",
                           address.split("/")[0], check=False)
        assert refused.returncode == 2
        assert f"already used by peer {stranger[:8]}" in refused.stderr
        assert "(not in its config)" in refused.stderr
        added = mlab.zsn("srv", "peer", "add", mlab.iface("w0"), "eve")
        assert f"Address = {address}" not in added.stdout
        assert stranger in _device_keys(mlab, "w0"), "the hand-added peer is untouched"
    finally:
        mlab.zsn("srv", "peer", "remove", mlab.iface("w0"), "eve", check=False)
        uapi.set_device(socket, [f"public_key={base64_to_hex(stranger)}", "remove=true"])
