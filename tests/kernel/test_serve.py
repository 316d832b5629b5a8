"""`zsn serve` in the QEMU kernel lab guest (group ``serve``), with every section live:
a ZFS pool with a scrub held in progress, a bond of two veths with a VLAN on it,
kernel WireGuard with a handshake, a hwsim Wi-Fi station associated to a hostapd
access point, and an OpenVPN client connected to its server (management socket).

What it proves: the Grafana dashboard's and the alert rules' every metric is in a live
scrape, with samples; zsn serve with CAP_NET_ADMIN as its only capability (what
contrib/systemd/zsn-serve.service leaves it) reads every section completely; without
it, the kernel refuses the WireGuard dump and only that collector says so.
Recipes: ../../../shared/reference/kernel-lab.md ("In the guest").
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
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.kernel import modprobe
from tests.lab.netns import Lab, new_private_key, run, wait_for
from tests.lab.pki import client_config, make_pki, server_config
from tests.schema import check_export
from tests.unit.test_contrib import alert_metrics, dashboard_metrics
from zsn.wireguard.keys import public_key_from_private

REPO = Path(__file__).resolve().parents[2]
WORK = Path("/run/zsn-lab-serve")
POOL = "servepool"
PORT = 19586


def sh(*argv: str, timeout: float = 120) -> str:
    return run(list(argv), timeout=timeout).stdout


@pytest.fixture(scope="module")
def everything() -> Iterator[Lab]:
    """Every section's daemons and devices, built once for the module."""
    lab = Lab()
    WORK.mkdir(parents=True, exist_ok=True)
    try:
        for module in ("zfs", "bonding", "8021q", "wireguard", "tun"):
            modprobe(module)
        modprobe("mac80211_hwsim", "radios=2")
        _zfs(lab)
        _bond_and_vlan(lab)
        _wireguard(lab)
        _wifi(lab)
        _openvpn(lab)
        yield lab
    finally:
        lab.close()
        run(["zpool", "destroy", "-f", POOL], check=False)
        with contextlib.suppress(OSError):
            Path("/sys/module/zfs/parameters/zfs_scan_suspend_progress").write_text("0")


def _zfs(lab: Lab) -> None:
    disks = [WORK / f"disk{n}" for n in (1, 2)]
    for disk in disks:
        sh("truncate", "-s", "128M", str(disk))
    sh("zpool", "create", "-f", "-m", f"/run/{POOL}", POOL, "mirror", *map(str, disks))
    lab.defer(lambda: run(["zpool", "destroy", "-f", POOL], check=False))
    sh("dd", "if=/dev/urandom", f"of=/run/{POOL}/data", "bs=1M", "count=8", "conv=fsync")
    # A finished scrub (its time is exported), then one held in progress by ZFS's own
    # test switch, so the scan's progress is in the scrape too.
    sh("zpool", "scrub", "-w", POOL)
    Path("/sys/module/zfs/parameters/zfs_scan_suspend_progress").write_text("1")
    sh("zpool", "scrub", POOL)


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


def _wireguard(lab: Lab) -> None:
    other = lab.namespace("wg")
    a, b = lab.name("wa"), lab.name("wb")
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    sh("ip", "addr", "add", "192.168.77.1/24", "dev", a)
    sh("ip", "link", "set", a, "up")
    sh("ip", "link", "set", b, "netns", other)
    sh("ip", "-n", other, "addr", "add", "192.168.77.2/24", "dev", b)
    sh("ip", "-n", other, "link", "set", b, "up")
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
    wait_for(lambda: run(["ping", "-c", "1", "-W", "2", "10.78.0.2"], check=False)
             .returncode == 0, 60, "a ping through kernel WireGuard")


def _wifi(lab: Lab) -> None:
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
    wait_for(lambda: "wpa_state=COMPLETED" in run(
        ["wpa_cli", "-i", "wlan0", "status"], check=False).stdout, 60, "the station to connect")


def _openvpn(lab: Lab) -> None:
    server_ns = lab.namespace("ov")
    a, b = lab.name("oa"), lab.name("ob")
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    sh("ip", "addr", "add", "192.168.78.1/24", "dev", a)
    sh("ip", "link", "set", a, "up")
    sh("ip", "link", "set", b, "netns", server_ns)
    sh("ip", "-n", server_ns, "addr", "add", "192.168.78.2/24", "dev", b)
    sh("ip", "-n", server_ns, "link", "set", b, "up")
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
    try:
        wait_for(lambda: "Initialization Sequence Completed" in _read(WORK / "client.log"),
                 180, "the OpenVPN client to connect")
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}\nclient: {_read(WORK / 'client.log')[-1500:]}\n"
                           f"server: {_read(WORK / 'server.log')[-1500:]}") from None


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _kill(pidfile: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pidfile.read_text().strip()), 15)


@contextlib.contextmanager
def serving(capabilities: str) -> Iterator[str]:
    """zsn serve under `setpriv --bounding-set CAPABILITIES` (as root); its URL."""
    log = WORK / f"serve-{capabilities.replace(',', '_').replace('+', '')}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["setpriv", f"--bounding-set={capabilities}", sys.executable, "-m", "zsn",
             "serve", "--listen", f"127.0.0.1:{PORT}"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        def listening() -> bool:
            assert process.poll() is None, _read(log)
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
                return True
            return False

        wait_for(listening, 120, "zsn serve to listen")
        yield f"http://127.0.0.1:{PORT}"
    finally:
        process.terminate()
        process.wait(30)


def scrape(url: str, path: str = "/metrics") -> str:
    with urllib.request.urlopen(url + path, timeout=120) as reply:
        return str(reply.read().decode())


def samples_by_name(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            found.setdefault(re.split(r"[{ ]", line, maxsplit=1)[0], []).append(line)
    return found


def test_the_dashboard_and_the_alerts_name_metrics_of_a_live_scrape(everything: Lab) -> None:
    with serving("-all,+net_admin") as url:
        scrape(url)  # the first: iostat streams start, readers warm up
        deadline = time.monotonic() + 120
        while True:
            text = scrape(url)
            found = samples_by_name(text)
            if "zsn_zfs_vdev_read_ops_per_second" in found or time.monotonic() > deadline:
                break  # the iostat stream's first interval has passed
            time.sleep(2)
        document = json.loads(scrape(url, "/export.json"))
    check_export(document)
    missing = {}
    for source, by_item in (("dashboard", dashboard_metrics()), ("alerts", alert_metrics())):
        for item, names in by_item.items():
            absent = sorted(name for name in names if name not in found)
            if absent:
                missing[f"{source}: {item}"] = absent
    assert not missing, f"not in the live scrape: {missing}"
    success = {line.split('"')[1]: line.rsplit(" ", 1)[1]
               for line in found["zsn_collector_success"]}
    # OpenVPN's units need systemd, which this guest has not: that collector is partial
    # (its management interface is still read: its traffic is in the scrape).
    assert {name: value for name, value in success.items() if name != "openvpn"} == {
        "wireguard": "1", "zfs": "1", "wlan": "1", "links": "1"}, success


def test_without_cap_net_admin_only_the_wireguard_dump_is_refused(everything: Lab) -> None:
    with serving("-all") as url:
        text = scrape(url)
        document = json.loads(scrape(url, "/export.json"))
    success = {line.split('"')[1]: line.rsplit(" ", 1)[1]
               for line in samples_by_name(text)["zsn_collector_success"]}
    assert success["wireguard"] == "0"
    assert success["zfs"] == success["links"] == success["wlan"] == "1", success
    assert document["wireguard"]["errors"]
