"""The access-rules lab: a WireGuard hub and its peers, each in a network namespace of
its own, with a probe in every one (`tests.lab.acl_probe`) and the hub's nftables
counters read between probes. Built by the lab test and by ``bench/wireguard_acl.py``.

    clients (wireguard-go) --veth-- bridge in the hub --- hub (wg-quick, zsn)
    site (wireguard-go, forwards) --veth-- lan (behind the site peer)

zsn runs on the hub only through its command line (``--root`` a tree of the test's,
in a private mount namespace where that tree's ``/etc/wireguard`` is the real one's,
so the ``PostUp`` that loads the table finds its file). Every client is set up from
the client config zsn wrote for it (``wg-quick strip``, ``wg setconf``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, kill_leftover_wireguard, run, stop_process, wait_for
from zsn.system import nftables
from zsn.system.host import Host
from zsn.wireguard import acl_table
from zsn.wireguard.acl_table import LiveTable
from zsn.wireguard.config import WgConfig, parse

REPO = Path(__file__).resolve().parents[2]
PORTS = (445, 80)
"""What every probe listens on: a port rule's port and another."""
HUB_V4, HUB_V6 = "10.71.0.1", "fd71::1"
SUBNETS = ("10.71.0.0/24", "fd71::/64")
LAN_NETWORKS = ("192.168.71.0/24", "fd72::/64")
LAN_HOST = ("192.168.71.2", "fd72::2")
SITE_LAN_SIDE = ("192.168.71.1", "fd72::1")
BRIDGE = "192.0.2.1"
PORT = 51871


@dataclass
class Probe:
    """The probe process of one namespace: one question, one answer line."""

    process: subprocess.Popen[str]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self.lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            return self.process.stdout.readline().strip()


@dataclass
class AclLab:
    lab: Lab
    root: Path
    iface: str
    ns: dict[str, str]
    """Namespace of each node (``hub``, the peers, ``lan``)."""
    addresses: dict[str, tuple[str, str]]
    """IPv4 and IPv6 address of each node but the hub."""
    probes: dict[str, Probe] = field(default_factory=dict)
    ends: dict[str, str] = field(default_factory=dict)
    """The WireGuard interface of each peer's namespace."""
    site: str | None = None
    """The peer with a LAN behind it."""

    def zsn(self, *args: str, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``zsn --root ROOT ARGS`` in the hub's namespace."""
        argv = ["ip", "netns", "exec", self.ns["hub"], *private_argv(
            {"/run/wireguard": str(self.root / "run/wireguard"),
             "/proc": str(self.root / "proc"),
             str(self.root / "etc/wireguard"): "/etc/wireguard"},
            [sys.executable, "-m", "zsn", "--root", str(self.root), *args])]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                cwd=REPO, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"zsn {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def hub(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(["ip", "netns", "exec", self.ns["hub"], *argv], check=check)

    def live(self) -> LiveTable | None:
        """The hub's table as nft lists it (libnftables, in the hub's probe), through
        zsn's own reader."""
        listing = self.probes["hub"].ask(f"list zsn_{self.iface}")
        if listing.startswith("error "):
            return None
        return acl_table.decode(nftables.decode(listing, "lab"), self.iface)

    def counters(self) -> dict[str, int]:
        live = self.live()
        assert live is not None, "no table on the hub"
        return {label: packets for label, (packets, _bytes) in live.counters.items()}

    def probe(self, source: str, kind: str, address: str, port: int | None = None) -> str:
        line = f"{kind} {address}" + (f" {port}" if port else "")
        return self.probes[source].ask(line)

    def reconnect(self) -> None:
        """Every peer's end configured anew (its session cleared), after the hub restarted."""
        for node, ifname in self.ends.items():
            _configure_end(self, node, ifname, node == self.site)

    def host(self) -> Host:
        return Host(self.root)

    def client_config(self, name: str) -> Path:
        return self.root / "etc/wireguard/clients" / self.iface / f"{name}.conf"


def build(lab: Lab, tmp: Path, peers: list[str], site: str | None = "site",
          extra_peers: int = 0) -> AclLab:
    """The hub and one namespace per peer in `peers` (and `site` with a LAN behind
    it); `extra_peers` more peers in the hub's config that never connect (a big policy's
    sets). Everything is removed by `lab.close()`."""
    if not Path("/etc/wireguard").is_dir():
        raise RuntimeError("/etc/wireguard is needed as a mount point")
    iface = lab.name("w")
    lab.defer(lambda: kill_leftover_wireguard([iface]))
    root = tmp / "root"
    for folder in ("etc/sysctl.d", "run/wireguard", "proc"):
        (root / folder).mkdir(parents=True)
    (root / "etc/wireguard").mkdir(mode=0o700)
    nodes = [*peers, *([site] if site else [])]
    ns = {"hub": lab.namespace("hub")}
    bridge = lab.name("br")
    run(["ip", "-n", ns["hub"], "link", "add", bridge, "type", "bridge"])
    run(["ip", "-n", ns["hub"], "addr", "add", f"{BRIDGE}/24", "dev", bridge])
    run(["ip", "-n", ns["hub"], "link", "set", bridge, "up"])
    for number, node in enumerate(nodes, start=1):
        ns[node] = lab.namespace(node)
        a, b = lab.veth_between(node, ns["hub"], ns[node])
        run(["ip", "-n", ns["hub"], "link", "set", a, "master", bridge, "up"])
        run(["ip", "-n", ns[node], "addr", "add", f"192.0.2.{10 + number}/24", "dev", b])
        run(["ip", "-n", ns[node], "link", "set", b, "up"])
    # Forwarding; and every reject answered: the kernel's ICMP rate limit (one error a
    # second per destination) would leave most of a prober's rejected pings unanswered.
    for key in ("net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
                "net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0"):
        run(["ip", "netns", "exec", ns["hub"], "sysctl", "-qw", key])
    built = AclLab(lab, root, iface, ns, {}, site=site)
    lab.defer(lambda: built.zsn("wg", "down", iface, check=False))
    built.zsn("wg", "create", iface, "--address", f"{HUB_V4}/24", "--address",
              f"{HUB_V6}/64", "--port", str(PORT), "--endpoint", BRIDGE)
    for node in peers:
        built.zsn("peer", "add", iface, node, "--profile", "subnet", "--no-psk")
    if site:
        built.zsn("peer", "add", iface, site, "--profile", "subnet", "--no-psk",
                  "--route", *LAN_NETWORKS)
    if extra_peers:
        _add_silent_peers(root / "etc/wireguard" / f"{iface}.conf", extra_peers)
    built.zsn("wg", "up", iface)
    for node in nodes:
        _client_up(built, node, node == site)
    if site:
        _lan_behind(built, site)
    for node in ["hub", *nodes, *(["lan"] if site else [])]:
        built.probes[node] = _start_probe(lab, ns[node], () if node == "hub" else PORTS)
    for node in nodes:
        def reaches(node: str = node) -> bool:
            return built.probe(node, "icmp", HUB_V4) == "ok"

        wait_for(reaches, 30, f"{node} reaching the hub through the tunnel")
    return built


def _add_silent_peers(path: Path, count: int) -> None:
    """`count` peers named ``p0001``... with an address each in 10.72.0.0/16 (routed to
    none: they never connect), written as an admin would."""
    from zsn.wireguard.keys import KeyPair

    lines = []
    base = int(ipaddress.IPv4Address("10.72.0.1"))
    for index in range(count):
        key = KeyPair.generate().public_key
        lines += ["", f"# p{index:04d}", "[Peer]", f"PublicKey = {key}",
                  f"AllowedIPs = {ipaddress.IPv4Address(base + index)}/32"]
    with path.open("a") as handle:
        handle.write("\n".join(lines) + "\n")


def _client_up(built: AclLab, node: str, is_site: bool) -> None:
    """The peer's end from the client config zsn wrote: wireguard-go, its key and the
    hub as peer (`wg setconf` of the stripped config), addresses and routes."""
    lab, where = built.lab, built.ns[node]
    ifname = lab.name(f"x{node}")
    lab.wireguard_go(where, ifname)
    config = _configure_end(built, node, ifname, is_site)
    assert config.interface is not None
    addresses = config.interface.get_all("Address")
    for address in addresses:
        run(["ip", "-n", where, "addr", "add", address, "dev", ifname])
    run(["ip", "-n", where, "link", "set", ifname, "up"])
    for network in [*SUBNETS, *([] if is_site else LAN_NETWORKS)]:
        run(["ip", "-n", where, "route", "replace", network, "dev", ifname])
    built.addresses[node] = (addresses[0].split("/")[0], addresses[1].split("/")[0])
    built.ends[node] = ifname


def _configure_end(built: AclLab, node: str, ifname: str, is_site: bool) -> WgConfig:
    """`wg setconf` of the peer's client config (replacing its peers clears their
    sessions), the hub's allowed IPs widened to the LAN behind the site."""
    where = built.ns[node]
    config_path = built.client_config(node)
    config = parse(config_path.read_text())
    stripped = run(["wg-quick", "strip", str(config_path)]).stdout
    result = subprocess.run(["ip", "netns", "exec", where, "wg", "setconf", ifname,
                             "/dev/stdin"], input=stripped, capture_output=True, text=True,
                            timeout=15, check=False)
    assert result.returncode == 0, result.stderr
    hub = config.peers[0].get("PublicKey") or ""
    routed = [*SUBNETS, *([] if is_site else LAN_NETWORKS)]
    run(["ip", "netns", "exec", where, "wg", "set", ifname, "peer", hub,
         "allowed-ips", ",".join(routed), "persistent-keepalive", "5"])
    return config


def _lan_behind(built: AclLab, site: str) -> None:
    lab = built.lab
    built.ns["lan"] = lab.namespace("lan")
    a, b = lab.veth_between("lan", built.ns[site], built.ns["lan"])
    for where, dev, addresses in ((built.ns[site], a, SITE_LAN_SIDE),
                                  (built.ns["lan"], b, LAN_HOST)):
        run(["ip", "-n", where, "addr", "add", f"{addresses[0]}/24", "dev", dev])
        run(["ip", "-n", where, "addr", "add", f"{addresses[1]}/64", "dev", dev, "nodad"])
        run(["ip", "-n", where, "link", "set", dev, "up"])
    run(["ip", "-n", built.ns["lan"], "route", "add", "default", "via", SITE_LAN_SIDE[0]])
    run(["ip", "-n", built.ns["lan"], "-6", "route", "add", "default", "via",
         SITE_LAN_SIDE[1]])
    for key in ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"):
        run(["ip", "netns", "exec", built.ns[site], "sysctl", "-qw", f"{key}=1"])
    built.addresses["lan"] = LAN_HOST


def _start_probe(lab: Lab, where: str, ports: tuple[int, ...]) -> Probe:
    process = subprocess.Popen(
        ["ip", "netns", "exec", where, sys.executable, "-m", "tests.lab.acl_probe",
         *map(str, ports)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=REPO)

    lab.defer(lambda: stop_process(process, grace=5))
    assert process.stdout is not None
    ready = process.stdout.readline().strip()
    assert ready == "ready", ready
    return Probe(process)


@contextlib.contextmanager
def built_lab(tmp: Path, peers: list[str], site: str | None = "site",
              extra_peers: int = 0, tag: str | None = None) -> Iterator[AclLab]:
    lab = Lab(tag=tag) if tag else Lab()
    try:
        yield build(lab, tmp, peers, site, extra_peers)
    finally:
        lab.close()


def require_tools() -> None:
    """Skip (or, under CI, fail) when the lab cannot run here."""
    from tests.lab.netns import require_lab
    from tests.needs import needs_tools, unavailable

    require_lab()
    needs_tools("wg-quick", "nft")
    if not Path("/etc/wireguard").is_dir():
        unavailable("/etc/wireguard is needed as a mount point")
