"""Wi-Fi in the QEMU kernel lab guest (group ``wlan``): mac80211_hwsim radios, real
hostapd access points, real wpa_supplicant and iwd, driven by zsn.

Four hostapd access points run in namespace AP on their own radios: home-wpa2
(WPA2-PSK), cafe-open (open), hidden-wpa2 (hidden, WPA2-PSK) and office-sae (WPA3
SAE only); a fifth hostapd on one more radio serves three WPA2-Enterprise networks, one
BSS per 802.1X method, from its internal EAP server. The stations are in the guest's
root namespace: wlan0 driven by wpa_supplicant, wlan5 by iwd on a private system bus
(its own radio: cfg80211 keeps an SSID a directed probe revealed, so a radio that
probed for the hidden network would show it by name). zsn scans, connects (the
headless command with the passphrase on standard input, as a user would, and the
plans in-process), pings the access point, fails a wrong passphrase in bounded time,
toggles autoconnect and forgets, and every output and log line is checked for the
passphrases at the end.
802.1X: PEAP, TTLS and EAP-TLS on each client (wpa_supplicant, iwd, and the
wpa_supplicant netctl starts for a ``Security=wpa-configsection`` profile), the same
access points and certificates for all three; iwd logs into a journald the guest runs,
as iwd.service, where zsn reads why an attempt failed.
Recipes: ../../../shared/reference/kernel-lab.md ("In the guest").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from tests.lab import journald
from tests.lab.dbus import private_system_bus
from tests.lab.kernel import modprobe
from tests.lab.netns import Lab, run, wait_for
from tests.needs import needs_tools
from zsn.eap.request import EapRequest, EapSecret, make_request
from zsn.errors import ValidationError, ZsnError
from zsn.plan import Plan
from zsn.system import nl80211
from zsn.system.host import Host
from zsn.system.wpa_ctrl import control_socket
from zsn.wlan import actions, live, wpa
from zsn.wlan.lint import lint
from zsn.wlan.live import read_wlan
from zsn.wlan.secrets import Passphrase, derive_psk

REPO = Path(__file__).resolve().parents[2]
WORK = Path("/run/zsn-lab-wlan")
IWD_UNIT = "iwd.service"
HOME, HIDDEN, SAE = "correct horse battery", "hidden treasure 42", "sesame street 99"
WRONG = "wrong passphrase 1"
ALICE, BOB, WRONG_EAP = "alice pass 1", "bob pass 2", "not the password"
SECRETS = [HOME, HIDDEN, SAE, WRONG, derive_psk(HOME, b"home-wpa2"),
           derive_psk(HIDDEN, b"hidden-wpa2"), derive_psk(WRONG, b"home-wpa2"),
           ALICE, BOB, WRONG_EAP]
# (interface, SSID, channel, subnet, hostapd settings) as in the fixtures' capture.sh, but
# for the hidden AP's beacon interval: it answers no wildcard probe, so a scan shows it
# only by a beacon heard in the 30 ms an active scan dwells on its channel; at the
# default 100 TU that is one scan in three, at 20 TU (20.48 ms) every scan.
ACCESS_POINTS = [
    ("wlan1", "home-wpa2", 1, "10.77.1", ["wpa=2", "wpa_key_mgmt=WPA-PSK", "rsn_pairwise=CCMP",
                                          f"wpa_passphrase={HOME}"]),
    ("wlan2", "cafe-open", 6, "10.77.2", []),
    ("wlan3", "hidden-wpa2", 11, "10.77.3", ["ignore_broadcast_ssid=1", "beacon_int=20", "wpa=2",
                                             "wpa_key_mgmt=WPA-PSK", "rsn_pairwise=CCMP",
                                             f"wpa_passphrase={HIDDEN}"]),
    ("wlan4", "office-sae", 6, "10.77.4", ["wpa=2", "wpa_key_mgmt=SAE", "rsn_pairwise=CCMP",
                                           "ieee80211w=2", "sae_pwe=2",
                                           f"sae_password={SAE}"]),
]
WPA_STATION, IWD_STATION = "wlan0", "wlan5"
EAP_RADIO, NETCTL_STATION = "wlan6", "wlan7"
"""The 802.1X access points' radio (one hostapd, three BSSs), and the station netctl's
wpa_supplicant drives."""
RADIOS = 8
VERDICT = 30.0
"""A daemon rejects a wrong key within this (wpa_supplicant's connect deadline in zsn:
later, zsn reports a timeout, not a wrong passphrase)."""
SETTLE = 60.0
"""The guest is some 14 times slower than the host, and several times slower again
when the host is loaded: a station may still be finishing its handshake (or redoing
it, when the access point's EAPOL timers ran out first) when zsn has returned; a
ping may need the ARP round trip a few times. Waits end as soon as the state is
there."""
SCANS = 10
"""Scans `_scan_until` makes at most before it gives up."""


class Captured(logging.Handler):
    """Every log record of the module's in-process zsn calls (debug included)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class WifiLab:
    lab: Lab
    ap_ns: str
    outputs: list[str] = field(default_factory=list)
    """Everything zsn printed or logged in this module, checked for secrets at the end."""
    log: Captured = field(default_factory=Captured)
    results: Path | None = None
    """The directory shared with the host (where the junit report goes), if any."""

    def zsn(self, *args: str, stdin: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([sys.executable, "-m", "zsn", *args], input=stdin,
                                capture_output=True, text=True, timeout=180, cwd=REPO,
                                check=False)
        self.outputs += [result.stdout, result.stderr]
        if check and result.returncode != 0:
            raise AssertionError(f"zsn {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def capture(self, name: str, text: str, command: str) -> None:
        """Keep a real output for tests/fixtures/wlan (next to the guest's junit file)."""
        if self.results is None:
            return
        (self.results / "captures").mkdir(exist_ok=True)
        (self.results / "captures" / name).write_text(text)
        with open(self.results / "captures" / "manifest.tsv", "a") as manifest:
            manifest.write(f"{name}\t{command}\n")

    def ping(self, subnet: str, interface: str, host_part: int) -> None:
        run(["ip", "addr", "flush", "dev", interface])
        run(["ip", "addr", "add", f"{subnet}.{host_part}/24", "dev", interface])
        wait_for(lambda: run(["ping", "-c", "1", "-W", "1", "-I", interface, f"{subnet}.1"],
                             check=False).returncode == 0, SETTLE,
                 f"a ping from {interface} to the access point {subnet}.1")

    def reporting_bound(self) -> float:
        """How long a wrong passphrase may take to be reported now: the daemon's
        `VERDICT`, plus zsn's start and first read twice over, timed as `zsn wifi list`
        takes them at this moment (the host's load changes the guest's speed)."""
        started = time.monotonic()
        self.zsn("wifi", "list", check=False)
        return VERDICT + 2 * (time.monotonic() - started)


def _phy(interface: str) -> str:
    return Path(f"/sys/class/net/{interface}/phy80211/name").read_text().strip()


@pytest.fixture(scope="module")
def wifi(request: pytest.FixtureRequest) -> Iterator[WifiLab]:
    needs_tools("hostapd", "hostapd_cli", "wpa_supplicant", "wpa_cli", "iw", "ip", "ping",
                "dbus-daemon", "iwctl")
    modprobe("mac80211_hwsim", f"radios={RADIOS}")
    wait_for(lambda: Path(f"/sys/class/net/wlan{RADIOS - 1}").exists(), SETTLE,
             f"{RADIOS} hwsim radios")
    lab = Lab()
    handler = Captured()
    root_logger = logging.getLogger()
    old_level = root_logger.level
    root_logger.addHandler(handler)
    root_logger.setLevel(logging.DEBUG)
    try:
        WORK.mkdir(parents=True, exist_ok=True)
        ap_ns = lab.namespace("ap")
        for interface, ssid, channel, subnet, settings in ACCESS_POINTS:
            run(["iw", "phy", _phy(interface), "set", "netns", "name", ap_ns])
            config = WORK / f"{interface}.conf"
            config.write_text("\n".join([f"interface={interface}", "driver=nl80211",
                                         "ctrl_interface=/run/hostapd", f"ssid={ssid}",
                                         "hw_mode=g", f"channel={channel}", *settings]) + "\n")
            os.chmod(config, 0o600)
            pidfile = WORK / f"{interface}.pid"
            # A daemon's start (-B returns once it is up) takes its time on a loaded host.
            run(["ip", "netns", "exec", ap_ns, "hostapd", "-B", "-P", str(pidfile),
                 str(config)], timeout=SETTLE)
            lab.defer(partial(_kill, pidfile))

            def enabled(interface: str = interface) -> bool:
                return "state=ENABLED" in run(
                    ["ip", "netns", "exec", ap_ns, "hostapd_cli", "-p", "/run/hostapd", "-i",
                     interface, "status"], check=False).stdout
            wait_for(enabled, SETTLE, f"hostapd on {interface}")
            run(["ip", "-n", ap_ns, "addr", "add", f"{subnet}.1/24", "dev", interface])
        xml = request.config.getoption("xmlpath", None)
        built = WifiLab(lab, ap_ns, log=handler, results=Path(xml).parent if xml else None)
        yield built
    finally:
        root_logger.removeHandler(handler)
        root_logger.setLevel(old_level)
        lab.close()


def _kill(pidfile: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pidfile.read_text()), 15)


@pytest.fixture(scope="module")
def supplicant(wifi: WifiLab) -> Iterator[Path]:
    """wpa_supplicant on wlan0 with a config it may save (update_config=1)."""
    config = WORK / "wpa_supplicant-wlan0.conf"
    config.write_text("ctrl_interface=/run/wpa_supplicant\nupdate_config=1\n")
    os.chmod(config, 0o600)
    pidfile = WORK / "wpa.pid"
    run(["ip", "link", "set", WPA_STATION, "up"])
    run(["wpa_supplicant", "-B", "-i", WPA_STATION, "-c", str(config), "-P", str(pidfile)],
        timeout=SETTLE)
    wait_for(lambda: Path(f"/run/wpa_supplicant/{WPA_STATION}").exists(), SETTLE,
             "wpa_supplicant's control socket")
    yield config
    _kill(pidfile)


def _scan_until(wifi: WifiLab, interface: str, wanted: set[str | None], hidden: bool,
                located: bool = False) -> list[dict[str, object]]:
    """`zsn wifi scan` until every wanted SSID (None: a hidden AP) shows, at most
    `SCANS` times (a probe response or beacon can be lost: a count of scans, not of
    seconds, as a loaded host makes each scan slower, not luckier); `located`: with its
    channel, i.e. from the kernel's scan table, not only from the daemon's list."""
    entries: list[dict[str, object]] = []
    for _ in range(SCANS):
        entries = json.loads(wifi.zsn("wifi", "scan", interface, "--json").stdout)
        seen = {entry["ssid"] for entry in entries if entry["channel"] or not located}
        if wanted <= seen and (not hidden or any(
                entry["hidden"] and (entry["channel"] or not located) for entry in entries)):
            return entries
    raise AssertionError(f"{SCANS} scans on {interface} saw only {entries}")


# wpa_supplicant ------------------------------------------------------------------------

def test_wpa_supplicant_scan_sees_every_access_point(wifi: WifiLab, supplicant: Path) -> None:
    entries = _scan_until(wifi, WPA_STATION, {"home-wpa2", "cafe-open", "office-sae"},
                          hidden=True)
    by_name = {entry["ssid"]: entry for entry in entries}
    assert by_name["home-wpa2"]["security"] == "WPA2"
    assert by_name["office-sae"]["security"] == "WPA3"
    assert by_name["cafe-open"]["security"] == "open"
    (hidden,) = [entry for entry in entries if entry["hidden"]]
    assert hidden["bssid"] == "02:00:00:00:03:00" and hidden["security"] == "WPA2"
    assert entries[-1]["hidden"]  # hidden networks grouped last


def _wpa_state() -> dict[str, str]:
    out = run(["wpa_cli", "-i", WPA_STATION, "status"]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _wpa_connected(ssid: str) -> dict[str, str]:
    """wpa_supplicant's status once it is COMPLETED on `ssid` (see `SETTLE`)."""
    state: dict[str, str] = {}

    def completed() -> bool:
        nonlocal state
        state = _wpa_state()
        return (state.get("wpa_state"), state.get("ssid")) == ("COMPLETED", ssid)

    wait_for(completed, SETTLE, f"{WPA_STATION} connected to {ssid}", interval=0.5)
    return state


def test_wpa_supplicant_connects_wpa2_stores_the_psk_and_pings(
        wifi: WifiLab, supplicant: Path) -> None:
    result = wifi.zsn("wifi", "connect", "home-wpa2", "--passphrase-file", "-", "--iface",
                      WPA_STATION, stdin=HOME + "\n")
    assert "done: wpa_supplicant on wlan0" in result.stderr
    assert _wpa_connected("home-wpa2")["key_mgmt"] == "WPA2-PSK"
    saved = supplicant.read_text()
    assert f"psk={derive_psk(HOME, b'home-wpa2')}" in saved and HOME not in saved
    wifi.ping("10.77.1", WPA_STATION, 2)


def test_wpa_supplicant_connects_sae_hidden_and_open(wifi: WifiLab, supplicant: Path) -> None:
    wifi.zsn("wifi", "connect", "office-sae", "--passphrase-file", "-", stdin=SAE)
    assert _wpa_connected("office-sae")["key_mgmt"] == "SAE"
    wifi.ping("10.77.4", WPA_STATION, 2)
    wifi.zsn("wifi", "connect", "hidden-wpa2", "--hidden", "--passphrase-file", "-",
             stdin=HIDDEN)
    _wpa_connected("hidden-wpa2")
    wifi.ping("10.77.3", WPA_STATION, 2)
    wifi.zsn("wifi", "connect", "cafe-open")
    assert _wpa_connected("cafe-open")["key_mgmt"] == "NONE"
    wifi.ping("10.77.2", WPA_STATION, 2)
    # Every network stays enabled: SELECT_NETWORK's disabling was undone before saving.
    listed = run(["wpa_cli", "-i", WPA_STATION, "list_networks"]).stdout
    assert "DISABLED" not in listed and "disabled=1" not in supplicant.read_text()


def test_wpa_supplicant_wrong_passphrase_fails_clearly_in_bounded_time(
        wifi: WifiLab, supplicant: Path) -> None:
    before = supplicant.read_text()
    bound = wifi.reporting_bound()
    started = time.monotonic()
    result = wifi.zsn("wifi", "connect", "home-wpa2", "--passphrase-file", "-", stdin=WRONG,
                      check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert "home-wpa2: wrong passphrase" in result.stderr
    assert elapsed < bound, (elapsed, bound)
    # The attempt's network block is gone again; the working one stays.
    assert supplicant.read_text() == before
    wifi.zsn("wifi", "connect", "home-wpa2")  # the known network, no passphrase needed
    _wpa_connected("home-wpa2")


def test_wpa_supplicant_autoconnect_and_forget_change_the_saved_config(
        wifi: WifiLab, supplicant: Path) -> None:
    def block(ssid: str) -> str:
        match = re.search(r'network=\{\n\tssid="' + ssid + r'"\n(.*?)\n\}', supplicant.read_text(),
                          re.S)
        return match.group(1) if match else ""

    wifi.zsn("wifi", "autoconnect", "cafe-open", "off")
    assert "disabled=1" in block("cafe-open")
    wifi.zsn("wifi", "autoconnect", "cafe-open", "on")
    assert "disabled=1" not in block("cafe-open")
    wifi.zsn("wifi", "forget", "cafe-open")
    assert 'ssid="cafe-open"' not in supplicant.read_text()
    assert 'ssid="home-wpa2"' in supplicant.read_text()


def test_wpa_supplicant_lint_and_qr(wifi: WifiLab, supplicant: Path) -> None:
    # SAVE_CONFIG wrote a new file with wpa_supplicant's umask: readable by everyone.
    mode = supplicant.stat().st_mode & 0o777
    wifi.capture("wpa_supplicant.conf.mode-after-save_config.txt", f"{mode:o}\n",
                 "stat -c %a of the config, 0600 before wpa_supplicant's SAVE_CONFIG")
    findings = json.loads(wifi.zsn("wifi", "lint", "--json", check=False).stdout)
    assert not [f for f in findings if f["id"] in ("WLAN001", "WLAN005")]
    exposed = [f for f in findings if f["id"] == "WLAN002"]
    if mode & 0o004:
        assert [f["path"] for f in exposed] == [str(supplicant)]
        (finding,) = [f for f in lint(Host()) if f.id == "WLAN002"]
        assert finding.fix_plan is not None
        finding.fix_plan().apply()
        assert supplicant.stat().st_mode & 0o777 == 0o600
    assert not [f for f in lint(Host()) if f.id == "WLAN002"]
    qr = wifi.zsn("wifi", "qr", "office-sae")  # its sae_password from the saved config
    assert "office-sae: QR version" in qr.stderr


# iwd -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def iwd(wifi: WifiLab) -> Iterator[Host]:
    """iwd on wlan5 only, on a private system bus at /run/dbus (no D-Bus activation),
    logging into a running journald as iwd.service does under systemd (its stderr on
    journald's stream, from the unit's cgroup): zsn reads an 802.1X failure's reason
    there (`journalctl -u iwd.service`)."""
    activation = Path("/usr/share/dbus-1/system-services/net.connman.iwd.service")
    activation.unlink(missing_ok=True)
    with private_system_bus(Path("/")), journald.running_journald():
        process = subprocess.Popen(journald.as_unit(IWD_UNIT, ["/usr/libexec/iwd", "-i",
                                                               IWD_STATION]),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            host = Host()
            wait_for(lambda: IWD_STATION in [
                each.name for each in read_wlan(host).interfaces
                if each.backend == "iwd"], SETTLE, "iwd's station", interval=1)
            started = journald.unit_text(IWD_UNIT)  # journald named iwd's unit
            assert "Wireless daemon version" in started, started
            yield host
        finally:
            process.terminate()
            process.wait(10)
            journald.remove_unit_cgroup(IWD_UNIT)


@contextlib.contextmanager
def _scan_events(wifi: WifiLab, interface: str) -> Iterator[None]:
    """Keep the datagrams of nl80211's "scan" multicast group meanwhile, for
    tests/fixtures/wlan (the unit tests of `nl80211.scans_ended`)."""
    nl = nl80211.family()
    sock = nl80211.scan_events(nl, blocking=False)
    try:
        yield
        chunks = []
        with contextlib.suppress(BlockingIOError):
            while True:
                chunks.append(sock.recv(1 << 16))
    finally:
        sock.close()
    index = int(Path(f"/sys/class/net/{interface}/ifindex").read_text())
    wifi.capture(f"nl80211-scan-events.{interface}.hex",
                 f"family={nl.id} ifindex={index}\n" + "".join(f"{c.hex()}\n" for c in chunks),
                 f"datagrams of nl80211's scan group during `zsn wifi scan {interface}` "
                 "under iwd, one per line in hex")


def test_iwd_scan_sees_every_access_point(wifi: WifiLab, iwd: Host) -> None:
    # iwd scans in three parts, each flushing what the others found from the kernel's
    # table: zsn reads the table as each part ends, so one scan shows every channel.
    with _scan_events(wifi, IWD_STATION):
        entries = _scan_until(wifi, IWD_STATION, {"home-wpa2", "cafe-open", "office-sae"},
                              hidden=True, located=True)
    by_name = {entry["ssid"]: entry for entry in entries}
    assert by_name["cafe-open"]["security"] == "open"
    assert by_name["home-wpa2"]["security"] == "WPA2"  # from its beacons: iwd says "psk"
    assert by_name["office-sae"]["security"] == "WPA3"
    (hidden,) = [entry for entry in entries if entry["hidden"]]
    assert hidden["bssid"] == "02:00:00:00:03:00"
    # Each with its address and channel, from the kernel's scan table.
    assert all(by_name[name]["bssid"] for name in ("home-wpa2", "cafe-open", "office-sae"))
    assert hidden["channel"] == 11


def test_a_scan_zsn_did_not_start_is_read_as_each_part_ends(
        wifi: WifiLab, iwd: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    """iwd's own scans (iwctl's here; its periodic ones alike) flush the kernel's table
    part by part: the follower the WLAN pane keeps while it runs reads the table as each
    part ends and says so, so the pane shows every network with its address, channel
    and security from the beacons, not iwd's "personal" with nothing else."""
    monkeypatch.setattr(live, "_SCANNED_BY_PARTS", live._ScannedByParts())  # none kept yet
    ended: list[str] = []
    with live.ScanFollower(iwd, ended.append) as follower:
        follower.follow([IWD_STATION])
        # Refused while iwd scans on its own: that scan is one zsn did not start either.
        run(["iwctl", "station", IWD_STATION, "scan"], check=False, timeout=60)
        wait_for(lambda: ended.count(IWD_STATION) >= 3, SETTLE,
                 "the three parts of iwd's scan to end", interval=0.5)
    interface = read_wlan(iwd).interface(IWD_STATION)
    assert interface is not None
    by_name = {entry.ssid: entry for entry in interface.scan}
    for name in (b"home-wpa2", b"cafe-open", b"office-sae"):
        assert by_name[name].bssid and by_name[name].frequency, by_name.get(name)
    assert by_name[b"home-wpa2"].security == "WPA2"  # from its beacons: iwd says "psk"


def _iwd_link(host: Host) -> tuple[str, bytes | None]:
    interface = read_wlan(host).interface(IWD_STATION)
    assert interface is not None
    return interface.link.state, interface.link.ssid


def _iwd_connected(host: Host, ssid: bytes) -> None:
    """iwd's station connected to `ssid` (see `SETTLE`)."""
    wait_for(lambda: _iwd_link(host) == ("connected", ssid), SETTLE,
             f"{IWD_STATION} connected to {ssid.decode()}", interval=1)


def test_iwd_connects_through_zsns_agent_and_pings(wifi: WifiLab, iwd: Host) -> None:
    snapshot = read_wlan(iwd)
    interface = actions.resolve_interface(iwd, snapshot, IWD_STATION)
    plan = actions.plan_connect(iwd, snapshot, interface, b"home-wpa2", Passphrase(HOME),
                                hidden=False)
    wifi.outputs.append(plan.describe())
    wifi.outputs += plan.apply()
    _iwd_connected(iwd, b"home-wpa2")
    assert Path("/var/lib/iwd/home-wpa2.psk").exists()
    station = next(line for line in run(["busctl", "--system", "tree", "--list",
                                         "net.connman.iwd"]).stdout.split()
                   if re.fullmatch(r"/net/connman/iwd/\d+/\d+", line))
    command = ["busctl", "--system", "call", "net.connman.iwd", station,
               "net.connman.iwd.StationDiagnostic", "GetDiagnostics"]
    wifi.capture("busctl-call-GetDiagnostics.connected.txt", run(command).stdout,
                 " ".join(command) + "  # connected to home-wpa2")
    wifi.ping("10.77.1", IWD_STATION, 3)
    shown = wifi.zsn("wifi", "list").stdout
    assert re.search(r"wlan5 +iwd +connected +home-wpa2 +-\d+ dBm", shown), shown


def test_iwd_wrong_passphrase_fails_clearly_in_bounded_time(wifi: WifiLab, iwd: Host) -> None:
    bound = wifi.reporting_bound()
    started = time.monotonic()
    result = wifi.zsn("wifi", "connect", "office-sae", "--iface", IWD_STATION,
                      "--passphrase-file", "-", stdin=WRONG, check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert "office-sae: the passphrase was not accepted" in result.stderr, result.stderr
    assert elapsed < bound, (elapsed, bound)
    assert not Path("/var/lib/iwd/office-sae.psk").exists()


def test_iwd_connects_sae_and_hidden(wifi: WifiLab, iwd: Host) -> None:
    wifi.zsn("wifi", "connect", "office-sae", "--iface", IWD_STATION, "--passphrase-file", "-",
             stdin=SAE)
    _iwd_connected(iwd, b"office-sae")
    wifi.ping("10.77.4", IWD_STATION, 3)
    wifi.zsn("wifi", "connect", "hidden-wpa2", "--hidden", "--iface", IWD_STATION,
             "--passphrase-file", "-", stdin=HIDDEN)
    _iwd_connected(iwd, b"hidden-wpa2")
    assert "Hidden=true" in Path("/var/lib/iwd/hidden-wpa2.psk").read_text()


def test_iwd_autoconnect_and_forget_change_its_profiles(wifi: WifiLab, iwd: Host) -> None:
    profile = Path("/var/lib/iwd/home-wpa2.psk")
    wifi.zsn("wifi", "autoconnect", "home-wpa2", "off", "--iface", IWD_STATION)
    wait_for(lambda: "AutoConnect=false" in profile.read_text(), SETTLE, "AutoConnect=false")
    wifi.zsn("wifi", "autoconnect", "home-wpa2", "on", "--iface", IWD_STATION)
    wait_for(lambda: "AutoConnect=false" not in profile.read_text(), SETTLE, "AutoConnect back")
    wifi.zsn("wifi", "forget", "home-wpa2", "--iface", IWD_STATION)
    wait_for(lambda: not profile.exists(), SETTLE, "the profile removed")
    wifi.zsn("wifi", "disconnect", "--iface", IWD_STATION)
    assert _iwd_link(iwd)[0] == "disconnected"


def test_two_daemons_on_one_radio_are_flagged(wifi: WifiLab, iwd: Host) -> None:
    config = WORK / "rival.conf"
    config.write_text("ctrl_interface=/run/wpa_supplicant\n")
    pidfile = WORK / "rival.pid"
    run(["wpa_supplicant", "-B", "-i", IWD_STATION, "-c", str(config), "-P", str(pidfile)],
        timeout=SETTLE)
    try:
        wait_for(lambda: Path(f"/run/wpa_supplicant/{IWD_STATION}").exists(), SETTLE,
                 "rival")
        findings = json.loads(wifi.zsn("wifi", "lint", "--json", check=False).stdout)
        (rivals,) = [f for f in findings if f["id"] == "WLAN001"]
        assert rivals["subject"] == IWD_STATION and "iwd and wpa_supplicant" in rivals["message"]
    finally:
        _kill(pidfile)


def test_export_shows_both_stations_and_no_secret(wifi: WifiLab, iwd: Host,
                                                  supplicant: Path) -> None:
    exported = wifi.zsn("--export", "wlan").stdout
    data = json.loads(exported)["wlan"]
    by_name = {each["name"]: each for each in data["interfaces"]}
    wlan0 = by_name[WPA_STATION]
    assert (wlan0["backend"], wlan0["connected"], wlan0["ssid"]) == (
        "wpa_supplicant", True, "home-wpa2")
    assert wlan0["signal_dbm"] == -30 and wlan0["bitrate_kbps"] and wlan0["channel"] == 1
    assert by_name[IWD_STATION]["backend"] == "iwd"
    assert {p["ssid"] for p in data["profiles"] if p["backend"] == "iwd"} >= {
        "office-sae", "hidden-wpa2"}
    metrics = wifi.zsn("--export", "wlan", "--format", "prometheus").stdout
    assert re.search(r'zsn_wlan_signal_dbm\{interface="wlan0",ssid="home-wpa2",'
                     r'bssid="02:00:00:00:01:00"\} -30', metrics), metrics
    assert "zsn_wlan_bitrate_bits_per_second{interface=\"wlan0\"" in metrics


# 802.1X ----------------------------------------------------------------------------------
# One hostapd on its own radio with three BSSs, one per method, each with its internal
# EAP server and eap_user file; certificates made once: a CA, the RADIUS server's
# certificate for radius.lab.test, a client's, and a second CA that signed nothing here.
# Each client is one parameter of the same tests: wpa_supplicant on wlan0, iwd on
# wlan5, and on wlan7 the wpa_supplicant netctl starts for a zsn profile.

SERVER_NAME = "radius.lab.test"
EAP_POINTS = [  # (interface, BSSID, SSID, subnet, eap_user lines)
    (EAP_RADIO, "02:00:00:00:06:00", "corp-peap", "10.77.6",
     ['*\tPEAP', f'"alice@lab.test"\tMSCHAPV2\t"{ALICE}"\t[2]']),
    (f"{EAP_RADIO}b", "02:00:00:00:06:01", "corp-ttls", "10.77.7",
     ['*\tTTLS', f'"bob@lab.test"\tTTLS-PAP\t"{BOB}"\t[2]']),
    (f"{EAP_RADIO}c", "02:00:00:00:06:02", "corp-tls", "10.77.8", ['*\tTLS']),
]
METHODS = ("peap", "ttls", "tls")
SSIDS = {"peap": "corp-peap", "ttls": "corp-ttls", "tls": "corp-tls"}
SUBNETS = {"peap": "10.77.6", "ttls": "10.77.7", "tls": "10.77.8"}
PASSWORDS = {"peap": ALICE, "ttls": BOB, "tls": None}
CLIENTS = ("wpa_supplicant", "iwd", "netctl")
HOST_PARTS = {"wpa_supplicant": 2, "iwd": 3, "netctl": 4}


@dataclass
class EapLab:
    files: Path

    def path(self, name: str) -> str:
        return str(self.files / name)

    def options(self, method: str) -> list[str]:
        """`zsn wifi connect`'s 802.1X options for `method` (the password on stdin)."""
        common = ["--ca-cert", self.path("ca.pem"), "--server-domain", SERVER_NAME]
        if method == "peap":
            return ["--eap", "peap", "--identity", "alice@lab.test",
                    "--anonymous-identity", "anonymous@lab.test", "--password-stdin", *common]
        if method == "ttls":
            return ["--eap", "ttls", "--identity", "bob@lab.test", "--phase2", "pap",
                    "--password-stdin", *common]
        return ["--eap", "tls", "--identity", "host1", "--client-cert",
                self.path("client.pem"), "--client-key", self.path("client.key"), *common]

    def request(self, method: str, *, password: str | None = None, ca: str = "ca.pem",
                domain: str = SERVER_NAME) -> EapRequest:
        """The request those options make (what the pane's form makes too)."""
        secret = password or PASSWORDS[method]
        common = {"ca_cert": self.path(ca), "server_domain": domain,
                  "password": EapSecret(secret) if secret else None}
        if method == "peap":
            return make_request("peap", "alice@lab.test",
                                anonymous_identity="anonymous@lab.test", **common)  # type: ignore[arg-type]
        if method == "ttls":
            return make_request("ttls", "bob@lab.test", phase2="pap", **common)  # type: ignore[arg-type]
        return make_request("tls", "host1", client_cert=self.path("client.pem"),
                            client_key=self.path("client.key"), **common)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def eap(wifi: WifiLab) -> EapLab:
    from tests.lab.pki import make_ca, make_pki

    folder = WORK / "eap"
    folder.mkdir(exist_ok=True)
    pki = make_pki([SERVER_NAME], kind="rsa")  # iwd's TLS (ell) takes RSA
    stranger = make_ca(kind="rsa", ca_name_text="someone-elses-ca")
    for name, text, mode in (("ca.pem", pki.ca_cert, 0o644), ("server.pem", pki.server_cert,
                             0o644), ("server.key", pki.server_key, 0o600),
                             ("client.pem", pki.client_cert, 0o644),
                             ("client.key", pki.client_key, 0o600),
                             ("other-ca.pem", stranger, 0o644)):
        (folder / name).write_text(text)
        os.chmod(folder / name, mode)
    lines = ["driver=nl80211", "ctrl_interface=/run/hostapd", "hw_mode=g", "channel=1"]
    for number, (interface, bssid, ssid, _subnet, users) in enumerate(EAP_POINTS):
        (folder / f"{interface}.eap_user").write_text("\n".join(users) + "\n")
        lines += [f"{'interface' if number == 0 else 'bss'}={interface}", f"bssid={bssid}",
                  f"ssid={ssid}", "wpa=2", "wpa_key_mgmt=WPA-EAP", "rsn_pairwise=CCMP",
                  "ieee8021x=1", "eap_server=1",
                  f"eap_user_file={folder / f'{interface}.eap_user'}",
                  f"ca_cert={folder / 'ca.pem'}", f"server_cert={folder / 'server.pem'}",
                  f"private_key={folder / 'server.key'}"]
    config = folder / "hostapd.conf"
    config.write_text("\n".join(lines) + "\n")
    os.chmod(config, 0o600)
    run(["iw", "phy", _phy(EAP_RADIO), "set", "netns", "name", wifi.ap_ns])
    pidfile = folder / "hostapd.pid"
    run(["ip", "netns", "exec", wifi.ap_ns, "hostapd", "-B", "-P", str(pidfile), "-f",
         str(folder / "hostapd.log"), str(config)], timeout=SETTLE)
    wifi.lab.defer(partial(_kill, pidfile))
    wifi.lab.defer(lambda: wifi.capture("hostapd-log.eap.txt", (folder / "hostapd.log")
                                        .read_text(errors="replace"),
                                        "hostapd -f LOG of the 802.1X access points"))
    wifi.lab.defer(lambda: wifi.capture("iwd-log.whole.txt", journald.unit_text(IWD_UNIT),
                                        "journalctl -u iwd.service -o cat for the whole "
                                        "module"))
    wait_for(lambda: "state=ENABLED" in run(
        ["ip", "netns", "exec", wifi.ap_ns, "hostapd_cli", "-p", "/run/hostapd", "-i",
         EAP_RADIO, "status"], check=False).stdout, SETTLE, f"hostapd on {EAP_RADIO}")
    for interface, _bssid, _ssid, subnet, _users in EAP_POINTS:
        run(["ip", "-n", wifi.ap_ns, "addr", "add", f"{subnet}.1/24", "dev", interface])
    return EapLab(folder)


@dataclass
class EapClient:
    """One client of the 802.1X tests: how zsn connects it, and how the test sees it."""

    name: str
    interface: str
    host: Host

    def profile(self, ssid: str) -> Path:
        """Where the network's settings end up (the file the test reads back)."""
        if self.name == "iwd":
            return Path(f"/var/lib/iwd/{ssid}.8021x")
        if self.name == "netctl":
            return Path(f"/etc/netctl/{NETCTL_STATION}-{ssid}")
        return WORK / "wpa_supplicant-wlan0.conf"

    def plan(self, ssid: str, request: EapRequest) -> Plan:
        snapshot = read_wlan(self.host)
        interface = actions.resolve_interface(self.host, snapshot, self.interface)
        assert interface.backend == self.name, interface
        return actions.plan_connect(self.host, snapshot, interface, ssid.encode(), None,
                                    False, request)

    def connected_to(self) -> bytes | None:
        if self.name == "iwd":
            link, joined = _iwd_link(self.host)
            return joined if link == "connected" else None
        state, ssid = _station_state(self.interface)
        return ssid.encode() if state == "COMPLETED" and ssid else None


def _assert_listed(client: EapClient, methods: Sequence[str]) -> None:
    """What zsn lists: each method's network with its method and server check, read
    back from the client's own profile."""
    known = {n.ssid: n.eap for n in read_wlan(client.host).networks
             if n.backend == client.name}
    for method in methods:
        found = known[SSIDS[method].encode()]
        assert found is not None and found.server_checked, (method, found)
        assert found.method == method.upper(), found


def _station_state(interface: str) -> tuple[str | None, str | None]:
    out = run(["wpa_cli", "-i", interface, "status"], check=False).stdout
    state = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return state.get("wpa_state"), state.get("ssid")


@pytest.fixture(scope="module")
def eap_clients(wifi: WifiLab, supplicant: Path, iwd: Host, eap: EapLab
                ) -> dict[str, EapClient]:
    """The three clients, each seeing the three networks."""
    # iwd loads EAP-TLS client keys through the kernel's keyring: its package's
    # modules-load.d entry loads this at boot (no systemd here to read it).
    modprobe("pkcs8_key_parser")
    Path("/etc/netctl").mkdir(exist_ok=True)
    run(["ip", "link", "set", NETCTL_STATION, "up"])
    clients = {"wpa_supplicant": EapClient("wpa_supplicant", WPA_STATION, Host()),
               "iwd": EapClient("iwd", IWD_STATION, iwd),
               "netctl": EapClient("netctl", NETCTL_STATION, Host())}
    for client in (clients["wpa_supplicant"], clients["iwd"]):
        wait_for(partial(_sees_every_network, client), 4 * SETTLE,
                 f"the 802.1X networks in {client.interface}'s scan", interval=1)
    return clients


@contextlib.contextmanager
def _netctl_supplicant(profile: Path) -> Iterator[None]:
    """What netctl's wireless connection does with ``Security=wpa-configsection``
    (netctl.profile(5); netctl is not packaged for Debian): bash sources the profile,
    and the WPAConfigSection lines become the network block of the config its
    wpa_supplicant starts with (the control socket where zsn finds it)."""
    lines = run(["bash", "-c", f'source "{profile}"; printf "%s\\n" '
                 '"${WPAConfigSection[@]}"']).stdout.splitlines()
    Path("/run/network").mkdir(exist_ok=True)
    config = Path(f"/run/network/wpa_supplicant-{NETCTL_STATION}.conf")
    config.write_text("ctrl_interface=/run/wpa_supplicant\nnetwork={\n"
                      + "".join(f"{line}\n" for line in lines) + "}\n")
    os.chmod(config, 0o600)
    pidfile = WORK / "netctl-wpa.pid"
    run(["wpa_supplicant", "-B", "-i", NETCTL_STATION, "-c", str(config), "-P", str(pidfile)],
        timeout=SETTLE)
    try:
        yield
    finally:
        _kill(pidfile)
        wait_for(lambda: not Path(f"/run/wpa_supplicant/{NETCTL_STATION}").exists(),
                 SETTLE, "netctl's supplicant gone")
        config.unlink()


def _connect(wifi: WifiLab, eap: EapLab, client: EapClient, method: str) -> None:
    """zsn connects `client` to the method's network: the headless command once (the
    guest's CPU makes each start of Python costly), the plan in-process otherwise (the
    pane's path, the same steps)."""
    ssid = SSIDS[method]
    if method == "peap" and client.name == "wpa_supplicant":
        result = wifi.zsn("wifi", "connect", ssid, "--iface", client.interface,
                          *eap.options(method), stdin=ALICE + "\n")
        assert f"done: {client.name} on {client.interface}" in result.stderr, result.stderr
        return
    plan = client.plan(ssid, eap.request(method))
    wifi.outputs.append(plan.describe())
    if client.name == "netctl":  # no systemd in the guest: the files, then as netctl does
        from zsn.plan import FileEdit

        for step in plan.steps:
            if isinstance(step, FileEdit):
                step.apply()
        return
    wifi.outputs += plan.apply()


@pytest.mark.parametrize("client_name", CLIENTS)
def test_peap_ttls_and_eap_tls_connect_and_pass_traffic(
        wifi: WifiLab, eap: EapLab, eap_clients: dict[str, EapClient], client_name: str
) -> None:
    client = eap_clients[client_name]
    for method in METHODS:
        ssid = SSIDS[method]
        _connect(wifi, eap, client, method)
        profile = client.profile(ssid)
        if client.name != "wpa_supplicant":  # its SAVE_CONFIG writes with its umask
            assert profile.stat().st_mode & 0o777 == 0o600
        with _netctl_supplicant(profile) if client.name == "netctl" \
                else contextlib.nullcontext():
            wait_for(lambda ssid=ssid: client.connected_to() == ssid.encode(),  # type: ignore[misc]
                     SETTLE, f"{client.interface} on {ssid}", interval=0.5)
            wifi.ping(SUBNETS[method], client.interface, HOST_PARTS[client.name])
            if client.name == "netctl":  # its profiles are listed while they run
                _assert_listed(client, [method])
    if client.name != "netctl":
        _assert_listed(client, METHODS)
    if client.name == "iwd":
        text = client.profile("corp-ttls").read_text()
        assert f"EAP-TTLS-ServerDomainMask={SERVER_NAME}" in text, text
        assert "EAP-TTLS-CACert=/etc/zsn/eap/iwd-corp-ttls/ca.pem" in text, text
    if client.name == "wpa_supplicant":
        saved = client.profile("corp-peap").read_text()
        assert f'domain_match="{SERVER_NAME}"' in saved and "eap=PEAP" in saved
        key = Path("/etc/zsn/eap/wpa_supplicant-wlan0-corp-tls/client.key")
        assert key.stat().st_mode & 0o777 == 0o600


FAILURES = {  # what goes wrong -> (method, request changes)
    "wrong password": ("peap", {"password": WRONG_EAP}),
    "wrong CA": ("ttls", {"ca": "other-ca.pem"}),
    "server name mismatch": ("tls", {"domain": "other.lab.test"}),
}
SUPPLICANT_REASONS = {
    "wrong password": "802.1X failed: the server refused the identity or password",
    "wrong CA": "802.1X failed: server certificate not trusted: the server's certificate is "
                "not signed by the CA given",
    "server name mismatch": "802.1X failed: server name mismatch",
}
IWD_CERTIFICATE_REFUSED = (
    "802.1X failed: a certificate was refused in the TLS handshake (iwd: bad_certificate): "
    "the server's certificate is not signed by the CA given (--ca-cert) or not for the "
    "name given (--server-domain), or the server refused the client certificate; iwd "
    "does not say which")
REASONS = {
    "wpa_supplicant": SUPPLICANT_REASONS,
    "netctl": SUPPLICANT_REASONS,  # read from the events of the supplicant netctl starts
    # Read from iwd's lines in the journal: one alert for both certificate cases.
    "iwd": {"wrong password": "802.1X failed: the server refused the identity or password",
            "wrong CA": IWD_CERTIFICATE_REFUSED,
            "server name mismatch": IWD_CERTIFICATE_REFUSED},
}


def _netctl_attempt(plan: Plan, ssid: str) -> str:
    """A netctl start that fails, as zsn's step sees it: the profile written, the
    supplicant's events read while netctl waits; then the profile put back."""
    from zsn.plan import FileEdit

    edits = [step for step in plan.steps if isinstance(step, FileEdit)]
    for edit in edits:
        edit.apply()
    try:
        with _netctl_supplicant(Path(f"/etc/netctl/{NETCTL_STATION}-{ssid}")):
            reason = asyncio.run(wpa.follow_attempt(
                control_socket(Host(), NETCTL_STATION), NETCTL_STATION, SETTLE))
    finally:
        for edit in reversed(edits):
            edit.undo()
    assert reason is not None, "netctl's supplicant connected"
    return f"802.1X failed: {reason}"


def _forget_all(client: EapClient) -> None:
    """iwd joins any network it knows by itself after a failed connect: it knows none,
    and is disconnected."""
    snapshot = read_wlan(client.host)
    interface = actions.resolve_interface(client.host, snapshot, IWD_STATION)
    for network in snapshot.networks_of(interface):
        actions.plan_forget(client.host, snapshot, interface, network.ssid).apply()
    wait_for(lambda: not [n for n in read_wlan(client.host).networks if n.backend == "iwd"],
             SETTLE, "iwd knowing no network", interval=0.5)
    if _iwd_link(client.host)[0] != "disconnected":
        wifi_plan = actions.plan_disconnect(client.host, read_wlan(client.host),
                                            actions.resolve_interface(
                                                client.host, read_wlan(client.host),
                                                IWD_STATION))
        wifi_plan.apply()
    wait_for(lambda: _iwd_link(client.host)[0] == "disconnected", SETTLE, "iwd disconnected",
             interval=0.5)


def _sees_every_network(client: EapClient) -> bool:
    """A scan of `client`'s station lists the three 802.1X networks (a scan that
    outlasts zsn's bound beside a connected station counts as not yet)."""
    snapshot = read_wlan(client.host)
    interface = actions.resolve_interface(client.host, snapshot, client.interface)
    try:
        actions.scan(client.host, interface)
    except ZsnError:
        return False
    scanned = read_wlan(client.host).interface(client.interface)
    return scanned is not None and {ssid.encode() for ssid in SSIDS.values()} <= {
        entry.ssid for entry in scanned.scan}


@pytest.mark.parametrize("client_name", CLIENTS)
def test_wrong_password_wrong_ca_and_name_mismatch_fail_with_their_reason(
        wifi: WifiLab, eap: EapLab, eap_clients: dict[str, EapClient], client_name: str
) -> None:
    client = eap_clients[client_name]
    if client.name == "iwd":
        _forget_all(client)
    for failure, (method, changes) in FAILURES.items():
        ssid = SSIDS[method]
        profile = client.profile(ssid)
        before = profile.read_text() if profile.exists() else None
        if client.name == "iwd":  # forgotten networks leave its list until seen again
            wait_for(lambda: _sees_every_network(client), 4 * SETTLE,
                     "iwd seeing the 802.1X networks", interval=1)
        plan = client.plan(ssid, eap.request(method, **changes))
        if client.name == "netctl":
            said = _netctl_attempt(plan, ssid)
        else:
            started = time.time()
            with pytest.raises(ZsnError) as failed:
                plan.apply()
            said = str(failed.value)
            if client.name == "iwd":
                wifi.capture(f"iwd-log.eap-{failure.replace(' ', '-').lower()}.txt",
                             journald.unit_text(IWD_UNIT, since=started),
                             f"journalctl -u iwd.service -o cat during a failing {method} "
                             f"connect: {failure}")
        wifi.outputs.append(said)
        assert REASONS[client.name][failure] in said, (client.name, failure, said)
        # Nothing of the failed attempt stays: the profile is as it was.
        assert (profile.read_text() if profile.exists() else None) == before, failure


def test_no_profile_without_a_server_check_unless_overridden(
        wifi: WifiLab, supplicant: Path, eap: EapLab, eap_clients: dict[str, EapClient]
) -> None:
    """The request is refused before any backend is asked (the same for the three);
    overridden, the profile is saved, works, and the lint names it."""
    before = supplicant.read_text()
    for missing in ({"ca_cert": None}, {"server_domain": None}):
        with pytest.raises(ValidationError, match="rogue access point"):
            make_request("ttls", "bob@lab.test", phase2="pap", password=EapSecret(BOB),
                         **{"ca_cert": eap.path("ca.pem"), "server_domain": SERVER_NAME,
                            **missing})  # type: ignore[arg-type]
    assert supplicant.read_text() == before
    assert not [f for f in lint(Host()) if f.id == "WLAN010"]
    unchecked = make_request("peap", "alice@lab.test", password=EapSecret(ALICE),
                             no_server_check=True)
    wifi.outputs += eap_clients["wpa_supplicant"].plan("corp-peap", unchecked).apply()
    _wpa_connected("corp-peap")
    (finding,) = [f for f in lint(Host()) if f.id == "WLAN010"]
    assert "corp-peap" in finding.message and "rogue" in finding.message, finding


def test_no_passphrase_in_any_output_or_log(wifi: WifiLab) -> None:
    text = "\n".join(wifi.outputs + wifi.log.lines)
    assert len(wifi.outputs) > 20
    for secret in SECRETS:
        assert secret not in text, f"a secret leaked ({SECRETS.index(secret)})"
