"""`zsn serve` in the QEMU kernel lab guest (group ``serve``), with every section live:
ZFS pools with a scrub held in progress and a finished one, a bond of two veths with a
VLAN on it, kernel WireGuard with a handshake, a hwsim Wi-Fi station associated to a
hostapd access point, and an OpenVPN client connected to its server (management socket).

What it proves: the Grafana dashboard's and the alert rules' every metric is in a live
scrape, with samples (a snapshot policy and a replication job have run once, so their
proof is in it), and so are zfs_exporter's default pool properties, with zpool's
values; zsn serve with CAP_NET_ADMIN as its only capability (what
contrib/systemd/zsn-serve.service leaves it) reads every section completely; without
any capability the kernel refuses the WireGuard dump and only that section says so.

Kept to one boot's worth of waiting: the set-up starts every daemon first and waits
for them together; one `zsn serve` is started and scraped once all its readers have
read (its per-collector deadline is raised for the guest, some 14 times slower than a
real box); the reading without capabilities is one `zsn --export` run meanwhile (the
same section readers, no server). Scrapes, exports and logs stay in ``WORK`` for
the run's report. Recipes: ../../../shared/reference/kernel-lab.md ("In the guest").
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab.kernel import modprobe
from tests.lab.netns import Lab, new_private_key, run, stop_process, wait_for
from tests.lab.pki import client_config, make_pki, server_config
from tests.schema import check_export
from tests.unit.test_contrib import alert_metrics, dashboard_metrics
from zsn.wireguard.keys import public_key_from_private

REPO = Path(__file__).resolve().parents[2]
WORK = Path("/run/zsn-lab-serve")
POOL = "servepool"
SCRUBBED = "servedone"
PORT = 19586
GUEST_DEADLINE = "60"
"""zsn serve's per-collector deadline here: the default 8 s is for a real machine."""


def sh(*argv: str, timeout: float = 120) -> str:
    return run(list(argv), timeout=timeout).stdout


@dataclass(frozen=True)
class Ready:
    """What one daemon's set-up waits for, once every daemon has been started."""

    predicate: Callable[[], bool]
    seconds: float
    what: str
    explain: Callable[[], str] = lambda: ""


@pytest.fixture(scope="module")
def everything() -> Iterator[Lab]:
    """Every section's daemons and devices, built once for the module: the slow
    handshakes (OpenVPN's TLS, the station's association, WireGuard's) go on while the
    pool and the bond are made."""
    lab = Lab()
    WORK.mkdir(parents=True, exist_ok=True)
    try:
        for module in ("zfs", "bonding", "8021q", "wireguard", "tun"):
            modprobe(module)
        modprobe("mac80211_hwsim", "radios=2")
        waits = [_openvpn(lab), _wifi(lab), _wireguard(lab)]
        _zfs(lab)
        _bond_and_vlan(lab)
        for ready in waits:
            try:
                wait_for(ready.predicate, ready.seconds, ready.what, interval=0.5)
            except TimeoutError as exc:
                raise TimeoutError(f"{exc}\n{ready.explain()}") from None
        yield lab
    finally:
        lab.close()
        for pool in (POOL, SCRUBBED):
            run(["zpool", "destroy", "-f", pool], check=False)
        with contextlib.suppress(OSError):
            Path("/sys/module/zfs/parameters/zfs_scan_suspend_progress").write_text("0")


def _zfs(lab: Lab) -> None:
    disks = [WORK / f"disk{n}" for n in (1, 2, 3)]
    for disk in disks:
        sh("truncate", "-s", "128M", str(disk))
    sh("zpool", "create", "-f", "-m", f"/run/{POOL}", POOL, "mirror", *map(str, disks[:2]))
    lab.defer(lambda: run(["zpool", "destroy", "-f", POOL], check=False))
    sh("zpool", "create", "-f", "-m", f"/run/{SCRUBBED}", SCRUBBED, str(disks[2]))
    lab.defer(lambda: run(["zpool", "destroy", "-f", SCRUBBED], check=False))
    sh("dd", "if=/dev/urandom", f"of=/run/{POOL}/data", "bs=1M", "count=8", "conv=fsync")
    # zpool status tells the last scrub's time only while no other scan runs: one pool
    # with a finished scrub (its time is exported), one with a scrub held in progress by
    # ZFS's own test switch (its progress is).
    sh("zpool", "scrub", "-w", SCRUBBED)
    Path("/sys/module/zfs/parameters/zfs_scan_suspend_progress").write_text("1")
    sh("zpool", "scrub", POOL)
    # a snapshot policy and a replication job, each run once: their proof is scraped
    zsn = [sys.executable, "-m", "zsn", "zfs"]
    sh(*zsn, "policy", "set", POOL, "--keep", "hourly=2,daily=1")
    sh(*zsn, "snapshots", "run")
    sh(*zsn, "replicate", "add", "servejob", POOL, f"{SCRUBBED}/copy", "--every", "1h")
    sh(*zsn, "replicate", "run", timeout=300)


def _bond_and_vlan(lab: Lab) -> None:
    partner = lab.namespace("bp")
    bond = lab.name("bd")
    sh("ip", "link", "add", bond, "type", "bond", "mode", "balance-rr", "miimon", "100")
    lab.defer(lambda: run(["ip", "link", "del", bond], check=False))
    for n in (1, 2):
        member, far = lab.name(f"m{n}"), lab.name(f"p{n}")
        sh("ip", "link", "add", member, "type", "veth", "peer", "name", far)
        sh("ip", "link", "set", far, "netns", partner)
        sh("ip", "-n", partner, "link", "set", far, "up")
        sh("ip", "link", "set", member, "master", bond)
    sh("ip", "link", "set", bond, "up")
    vlan = lab.name("v20")
    sh("ip", "link", "add", "link", bond, "name", vlan, "type", "vlan", "id", "20")
    sh("ip", "link", "set", vlan, "up")


def _wireguard(lab: Lab) -> Ready:
    other = lab.namespace("wg")
    lab.veth(None, "192.168.77.1/24", other, "192.168.77.2/24", suffix="w")
    keys = (new_private_key(), new_private_key())
    here, there = lab.name("wg0"), lab.name("wg1")
    for name, ns in ((here, None), (there, other)):
        prefix = ["ip", "-n", ns] if ns else ["ip"]
        sh(*prefix, "link", "add", name, "type", "wireguard")
    lab.defer(lambda: run(["ip", "link", "del", here], check=False))
    for key, name, ns, port, peer_key, endpoint, address, peer_ip in (
            (keys[0], here, None, 51901, keys[1], "192.168.77.2:51902", "10.78.0.1", "10.78.0.2"),
            (keys[1], there, other, 51902, keys[0], "192.168.77.1:51901", "10.78.0.2",
             "10.78.0.1")):
        key_file = WORK / f"{name}.key"
        key_file.write_text(key)
        wg = ["ip", "netns", "exec", ns, "wg"] if ns else ["wg"]
        sh(*wg, "set", name, "private-key", str(key_file), "listen-port", str(port), "peer",
           public_key_from_private(peer_key), "endpoint", endpoint, "allowed-ips",
           f"{peer_ip}/32", "persistent-keepalive", "25")
        prefix = ["ip", "-n", ns] if ns else ["ip"]
        sh(*prefix, "addr", "add", f"{address}/24", "dev", name)
        sh(*prefix, "link", "set", name, "up")
    return Ready(lambda: run(["ping", "-c", "1", "-W", "2", "10.78.0.2"], check=False)
                 .returncode == 0, 120, "a ping through kernel WireGuard")


def _wifi(lab: Lab) -> Ready:
    wait_for(lambda: Path("/sys/class/net/wlan1").exists(), 30, "the hwsim radios")
    ap_ns = lab.namespace("ap")
    phy = Path("/sys/class/net/wlan1/phy80211/name").read_text().strip()
    sh("iw", "phy", phy, "set", "netns", "name", ap_ns)
    config = WORK / "hostapd.conf"
    config.write_text("interface=wlan1\ndriver=nl80211\nssid=serve-lab\nhw_mode=g\n"
                      "channel=6\n")
    sh("ip", "netns", "exec", ap_ns, "hostapd", "-B", "-P", str(WORK / "hostapd.pid"),
       str(config))
    lab.defer(lambda: _kill(WORK / "hostapd.pid"))
    supplicant = WORK / "wpa_supplicant.conf"
    supplicant.write_text("ctrl_interface=/run/wpa_supplicant\nupdate_config=1\n"
                          'network={\n  ssid="serve-lab"\n  key_mgmt=NONE\n}\n')
    sh("wpa_supplicant", "-B", "-i", "wlan0", "-c", str(supplicant), "-P",
       str(WORK / "wpa.pid"))
    lab.defer(lambda: _kill(WORK / "wpa.pid"))
    return Ready(lambda: "wpa_state=COMPLETED" in run(
        ["wpa_cli", "-i", "wlan0", "status"], check=False).stdout, 120, "the station to connect")


def _openvpn(lab: Lab) -> Ready:
    server_ns = lab.namespace("ov")
    lab.veth(None, "192.168.78.1/24", server_ns, "192.168.78.2/24", suffix="o")
    pki = make_pki()
    server = WORK / "server.conf"
    server.write_text(server_config(pki, management=str(WORK / "server.sock")))
    sh("ip", "netns", "exec", server_ns, "openvpn", "--config", str(server), "--daemon",
       "--writepid", str(WORK / "server.pid"), "--log", str(WORK / "server.log"))
    lab.defer(lambda: _kill(WORK / "server.pid"))
    client_dir = Path("/etc/openvpn/client")  # the guest's /etc is a throw-away overlay
    client_dir.mkdir(parents=True, exist_ok=True)
    client = client_dir / "lab.conf"
    client.write_text(client_config(pki, remote="192.168.78.2",
                                    extra=f"management {WORK / 'client.sock'} unix\n"))
    client.chmod(0o600)
    sh("openvpn", "--config", str(client), "--daemon", "--writepid", str(WORK / "client.pid"),
       "--log", str(WORK / "client.log"))
    lab.defer(lambda: _kill(WORK / "client.pid"))
    return Ready(lambda: "Initialization Sequence Completed" in _read(WORK / "client.log"),
                 180, "the OpenVPN client to connect",
                 lambda: f"client: {_read(WORK / 'client.log')[-1500:]}\n"
                         f"server: {_read(WORK / 'server.log')[-1500:]}")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _kill(pidfile: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pidfile.read_text().strip()), 15)


def zsn_argv(capabilities: str, *args: str) -> list[str]:
    """zsn under `setpriv --bounding-set CAPABILITIES`, as root: only those remain."""
    return ["setpriv", f"--bounding-set={capabilities}", sys.executable, "-m", "zsn", *args]


def _start(argv: list[str], log: Path, output: Path | None = None) -> subprocess.Popen[bytes]:
    """Start `argv`, its stderr (and its stdout, unless `output` takes it) into `log`."""
    with open(log, "wb") as errors, open(output or os.devnull, "wb") as out:
        return subprocess.Popen(argv, stdout=out if output else errors, stderr=errors,
                                stdin=subprocess.DEVNULL, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)})


def _wait_listening(process: subprocess.Popen[bytes], log: Path) -> None:
    def listening() -> bool:
        assert process.poll() is None, _read(log)
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
            return True
        return False

    wait_for(listening, 120, "zsn serve to listen", interval=0.5)


def scrape(url: str, path: str = "/metrics") -> str:
    with urllib.request.urlopen(url + path, timeout=180) as reply:
        return str(reply.read().decode())


def samples_by_name(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            found.setdefault(re.split(r"[{ ]", line, maxsplit=1)[0], []).append(line)
    return found


def section_errors(document: dict[str, Any]) -> dict[str, list[str]]:
    return {name: list(section["errors"]) for name, section in document.items()
            if isinstance(section, dict) and section.get("errors")}


@dataclass(frozen=True)
class Scraped:
    found: dict[str, list[str]]
    """The live scrape's samples by metric name."""
    document: dict[str, Any]
    """`/export.json` right after it."""
    bare: dict[str, Any]
    """`zsn --export` without any capability."""


@pytest.fixture(scope="module")
def scraped(everything: Lab) -> Scraped:
    """One zsn serve with CAP_NET_ADMIN only, scraped once its ZFS I/O stream has had
    its first interval; one export without capabilities runs meanwhile."""
    bare_out = WORK / "export-no-capabilities.json"
    bare = _start(zsn_argv("-all", "--export"), WORK / "export-no-capabilities.log", bare_out)
    log = WORK / "serve.log"
    server = _start(zsn_argv("-all,+net_admin", "serve", "--listen", f"127.0.0.1:{PORT}",
                             "--deadline", GUEST_DEADLINE), log)
    url = f"http://127.0.0.1:{PORT}"
    try:
        _wait_listening(server, log)
        deadline = time.monotonic() + 120
        first = text = scrape(url)  # every reader's first reading (their durations)
        while True:
            found = samples_by_name(text)
            if "zsn_zfs_vdev_read_ops_per_second" in found or time.monotonic() > deadline:
                break  # the iostat stream's first interval has passed
            time.sleep(2)
            text = scrape(url)
        exported = scrape(url, "/export.json")
    finally:
        stop_process(server, 30)
        with contextlib.suppress(subprocess.TimeoutExpired):
            bare.wait(300)
        stop_process(bare)
    (WORK / "scrape-first.txt").write_text(first)
    (WORK / "scrape.txt").write_text(text)
    (WORK / "export.json").write_text(exported)
    return Scraped(found, json.loads(exported), json.loads(_read(bare_out) or "{}"))


def test_the_dashboard_and_the_alerts_name_metrics_of_a_live_scrape(scraped: Scraped) -> None:
    check_export(scraped.document)
    missing = {}
    for source, by_item in (("dashboard", dashboard_metrics()), ("alerts", alert_metrics())):
        for item, names in by_item.items():
            absent = sorted(name for name in names if name not in scraped.found)
            if absent:
                missing[f"{source}: {item}"] = absent
    assert not missing, f"not in the live scrape: {missing}"
    success = {line.split('"')[1]: line.rsplit(" ", 1)[1]
               for line in scraped.found["zsn_collector_success"]}
    # OpenVPN's units need systemd, which this guest has not: that collector is partial
    # (its management interface is still read: its traffic is in the scrape).
    assert {name: value for name, value in success.items() if name != "openvpn"} == {
        "wireguard": "1", "zfs": "1", "wlan": "1", "links": "1"}, (
        success, section_errors(scraped.document))


def test_zfs_exporters_pool_properties_have_zpools_values(scraped: Scraped) -> None:
    """freeing, leaked and readonly, as zfs_exporter reads them (`zpool get -Hpo`)."""
    values = dict(line.split("\t") for line in sh(
        "zpool", "get", "-Hpo", "property,value", "freeing,leaked,readonly", POOL).splitlines())
    expected = {"zfs_pool_freeing_bytes": values["freeing"],
                "zfs_pool_leaked_bytes": values["leaked"],
                "zfs_pool_readonly": {"off": "0", "on": "1"}[values["readonly"]]}
    for name, value in expected.items():
        assert f'{name}{{pool="{POOL}"}} {value}' in scraped.found.get(name, ()), (
            name, scraped.found.get(name))


def test_without_capabilities_only_the_wireguard_dump_is_refused(scraped: Scraped) -> None:
    errors = section_errors(scraped.bare)
    assert scraped.bare, _read(WORK / "export-no-capabilities.log")[-2000:]
    assert "wireguard" in errors, errors
    # OpenVPN's unit files are read over systemd's bus, absent here, with or without.
    assert set(errors) - {"openvpn"} == {"wireguard"}, errors
