"""The guest half of the WLAN benchmarks: runs inside the QEMU kernel lab (as root).

    python3 bench/_wlan_guest.py connect RESULTS ROUNDS
    python3 bench/_wlan_guest.py record RESULTS

``connect``: one hwsim access point (home-wpa2, WPA2-PSK) in namespace ``ap``, station
wlan0 under wpa_supplicant and station wlan2 under iwd (its own radio, private system
bus). Per round, in rotating order, the same connect four ways (each from a
disconnected station whose scan has just finished and lists the access point):
- ``wpa_cli``: add_network, set ssid and psk (the passphrase), select_network, then
  ``wpa_cli status`` every 20 ms until COMPLETED;
- ``zsn wpa`` (in-process): `zsn.wlan.wpa.connect` until its COMPLETED event;
- ``iwctl``: ``iwctl --passphrase P station wlan2 connect home-wpa2`` (returns when
  iwd answers the connect);
- ``zsn iwd`` (in-process): `zsn.system.iwd.connect` with zsn's agent;
plus, once per round, ``python -m zsn wifi connect`` for each backend (interpreter
start, imports, the read, the plan, the connect: what a user waits for).
Writes RESULTS/connect.json.

``record``: 100 access points (4 radios, 25 BSSes each, hostapd multi-BSS) and one
wpa_supplicant station; scans until it sees them all, then writes
``zsn --export wlan`` to RESULTS/export.json (the recorded snapshot the render
benchmark feeds to the pane).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from zsn.system import iwd as bus_iwd  # noqa: E402
from zsn.system.dbus import SystemBus  # noqa: E402
from zsn.system.host import Host  # noqa: E402
from zsn.system.wpa_ctrl import WpaControl, WpaMonitor  # noqa: E402
from zsn.wlan import wpa  # noqa: E402
from zsn.wlan.secrets import Passphrase  # noqa: E402

PASSPHRASE = "correct horse battery"
WORK = Path("/run/zsn-bench-wlan")


def sh(*argv: str, check: bool = True, stdin: str | None = None) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, input=stdin,
                            check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.returncode} {result.stderr.strip()}")
    return result.stdout


def wait(predicate, seconds: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(what)


def phy(interface: str) -> str:
    return Path(f"/sys/class/net/{interface}/phy80211/name").read_text().strip()


def start_ap(interface: str, ssid_settings: list[list[str]], channel: int) -> None:
    """hostapd on `interface` in namespace ap; one BSS per settings list (the first is
    the radio's own, the others `bss=` sections with their own BSSID)."""
    sh("iw", "phy", phy(interface), "set", "netns", "name", "ap")
    lines = [f"interface={interface}", "driver=nl80211", "ctrl_interface=/run/hostapd",
             "hw_mode=g", f"channel={channel}", *ssid_settings[0]]
    radio = int(interface.removeprefix("wlan"))
    for number, settings in enumerate(ssid_settings[1:], start=1):
        lines += [f"bss={interface}_{number}", f"bssid=02:00:00:00:{radio:02x}:{number:02x}",
                  *settings]
    config = WORK / f"{interface}.conf"
    config.write_text("\n".join(lines) + "\n")
    sh("ip", "netns", "exec", "ap", "hostapd", "-B", "-P", str(WORK / f"{interface}.pid"),
       str(config))
    wait(lambda: "state=ENABLED" in sh("ip", "netns", "exec", "ap", "hostapd_cli", "-p",
                                      "/run/hostapd", "-i", interface, "status", check=False),
         60, f"hostapd on {interface}")


def wpa_state() -> dict[str, str]:
    out = sh("wpa_cli", "-i", "wlan0", "status")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def wpa_reset() -> None:
    """Disconnected, no networks, and a scan that has just finished listing the access
    point: every case then starts from the same fresh scan results."""
    sh("wpa_cli", "-i", "wlan0", "remove_network", "all")
    wait(lambda: wpa_state().get("wpa_state") in ("DISCONNECTED", "INACTIVE"), 20,
         "wpa_supplicant disconnected")
    asyncio.run(scan_now())


async def scan_now() -> None:
    """A scan on wlan0, waited for through its CTRL-EVENT-SCAN-RESULTS event."""
    path = Path("/run/wpa_supplicant/wlan0")
    async with WpaMonitor(path) as monitor, WpaControl(path) as ctrl:
        await wpa.scan(monitor, ctrl, timeout=30)


def wpa_cli_connect() -> None:
    wpa_cli_network([("ssid", '"home-wpa2"'), ("psk", f'"{PASSPHRASE}"')])


def wpa_cli_network(settings: list[tuple[str, str]]) -> None:
    """A network block set line by line with wpa_cli, selected, and `status` every
    20 ms until COMPLETED."""
    network = sh("wpa_cli", "-i", "wlan0", "add_network").strip()
    for key, value in settings:
        sh("wpa_cli", "-i", "wlan0", "set_network", network, key, value)
    sh("wpa_cli", "-i", "wlan0", "select_network", network)
    deadline = time.monotonic() + 60
    while wpa_state().get("wpa_state") != "COMPLETED":
        if time.monotonic() > deadline:
            raise TimeoutError("wpa_cli connect")
        time.sleep(0.02)


def zsn_wpa_connect() -> None:
    asyncio.run(wpa.connect(Path("/run/wpa_supplicant/wlan0"), "wlan0", b"home-wpa2",
                            passphrase=Passphrase(PASSPHRASE), security="WPA2", hidden=False))


def zsn_cli(interface: str) -> None:
    sh(sys.executable, "-m", "zsn", "wifi", "connect", "home-wpa2", "--iface", interface,
       "--passphrase-file", "-", stdin=PASSPHRASE)


def iwd_state() -> str:
    return sh("busctl", "--system", "get-property", "net.connman.iwd", iwd_station(),
              "net.connman.iwd.Station", "State").split('"')[1]


_station: list[str] = []


def iwd_station() -> str:
    """iwd's station object ("" until iwd has one)."""
    if not _station:
        tree = sh("busctl", "--system", "tree", "--list", "net.connman.iwd", check=False)
        for line in tree.split():
            parts = line.split("/")
            if len(parts) == 6 and parts[4].isdigit() and parts[5].isdigit():
                _station.append(line)
    return _station[0] if _station else ""


def iwd_reset(ssid: str = "home-wpa2") -> None:
    """Disconnected, not known, and a scan that has just finished seeing the network."""
    sh("iwctl", "known-networks", ssid, "forget", check=False)
    wait(lambda: iwd_state() == "disconnected", 20, "iwd disconnected")
    sh("iwctl", "station", "wlan2", "scan", check=False)
    time.sleep(0.2)

    def scanned() -> bool:
        scanning = sh("busctl", "--system", "get-property", "net.connman.iwd", iwd_station(),
                      "net.connman.iwd.Station", "Scanning")
        return scanning.strip() == "b false" and ssid in sh(
            "iwctl", "station", "wlan2", "get-networks")

    wait(scanned, 60, "iwd's scan")


def iwctl_connect() -> None:
    sh("iwctl", "--passphrase", PASSPHRASE, "station", "wlan2", "connect", "home-wpa2")
    wait(lambda: iwd_state() == "connected", 60, "iwctl connected")


def zsn_iwd_connect() -> None:
    async def act() -> None:
        async with SystemBus(Host()) as bus:
            objects = await bus_iwd.objects(bus)
            network = next(path for path, ifaces in objects.items()
                           if ifaces.get(bus_iwd.NETWORK, {}).get("Name") == "home-wpa2")
            await bus_iwd.connect(bus, network=network, station=iwd_station(),
                                  hidden_ssid=None, passphrase=PASSPHRASE)
    asyncio.run(act())
    wait(lambda: iwd_state() == "connected", 60, "zsn iwd connected")


def connect_benchmark(results: Path, rounds: int) -> None:
    sh("modprobe", "mac80211_hwsim", "radios=3")
    wait(lambda: Path("/sys/class/net/wlan2").exists(), 30, "radios")
    sh("ip", "netns", "add", "ap")
    start_ap("wlan1", [["ssid=home-wpa2", "wpa=2", "wpa_key_mgmt=WPA-PSK",
                        "rsn_pairwise=CCMP", f"wpa_passphrase={PASSPHRASE}"]], 1)
    start_stations(WORK)
    cases = [
        ("wpa_cli", wpa_reset, wpa_cli_connect),
        ("zsn wpa (in-process)", wpa_reset, zsn_wpa_connect),
        ("iwctl", iwd_reset, iwctl_connect),
        ("zsn iwd (in-process)", iwd_reset, zsn_iwd_connect),
    ]
    time_cases(results, cases, [
        ("zsn wifi connect (CLI, wpa_supplicant)", wpa_reset, lambda: zsn_cli("wlan0")),
        ("zsn wifi connect (CLI, iwd)", iwd_reset, lambda: zsn_cli("wlan2"))], rounds)


def start_stations(work: Path) -> None:
    """wpa_supplicant on wlan0, iwd on wlan2 (a private system bus, no activation)."""
    config = work / "wpa.conf"
    config.write_text("ctrl_interface=/run/wpa_supplicant\nupdate_config=1\n")
    sh("ip", "link", "set", "wlan0", "up")
    sh("wpa_supplicant", "-B", "-i", "wlan0", "-c", str(config))
    wait(lambda: Path("/run/wpa_supplicant/wlan0").exists(), 20, "wpa socket")
    Path("/usr/share/dbus-1/system-services/net.connman.iwd.service").unlink(missing_ok=True)
    Path("/run/dbus").mkdir(exist_ok=True)
    sh("dbus-daemon", "--system", "--fork")
    subprocess.Popen(["/usr/libexec/iwd", "-i", "wlan2"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    wait(lambda: bool(iwd_station()), 30, "iwd station")


Case = tuple[str, Callable[[], None], Callable[[], None]]


def time_cases(results: Path, cases: list[Case], once_a_round: list[Case],
               rounds: int) -> None:
    """Each case once a round in rotating order after a warm-up, its reset untimed;
    `once_a_round` after them; RESULTS/connect.json with the times and versions."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in [*cases, *once_a_round]}
    for _label, reset, connect in cases:  # one warm-up each
        reset()
        connect()
    for number in range(rounds):
        shift = number % len(cases)
        for label, reset, connect in [*cases[shift:], *cases[:shift], *once_a_round]:
            reset()
            started = time.perf_counter()
            connect()
            times[label].append(time.perf_counter() - started)
        print(f"round {number + 1}/{rounds} done", flush=True)
    versions = sh("wpa_supplicant", "-v").splitlines()[0] + "; iwd " + \
        sh("/usr/libexec/iwd", "--version").strip()
    (results / "connect.json").write_text(json.dumps({"times": times, "versions": versions,
                                                      "kernel": os.uname().release}))


def record_benchmark(results: Path) -> None:
    sh("modprobe", "mac80211_hwsim", "radios=5")
    wait(lambda: Path("/sys/class/net/wlan4").exists(), 30, "radios")
    sh("ip", "netns", "add", "ap")
    channels = (1, 6, 11, 3)
    for radio in range(1, 5):
        settings = []
        for number in range(25):
            ssid = f"lab-{radio}-{number:02d}"
            security = number % 4
            if security == 0:
                extra: list[str] = []
            elif security == 3:
                extra = ["wpa=2", "wpa_key_mgmt=SAE", "rsn_pairwise=CCMP", "ieee80211w=2",
                         "sae_pwe=2", f"sae_password={PASSPHRASE}"]
            else:
                extra = ["wpa=2", "wpa_key_mgmt=WPA-PSK", "rsn_pairwise=CCMP",
                         f"wpa_passphrase={PASSPHRASE}"]
            if number == 24:
                extra.append("ignore_broadcast_ssid=1")
            settings.append([f"ssid={ssid}", *extra])
        start_ap(f"wlan{radio}", settings, channels[radio - 1])
    config = WORK / "wpa.conf"
    config.write_text("ctrl_interface=/run/wpa_supplicant\nupdate_config=1\n")
    sh("ip", "link", "set", "wlan0", "up")
    sh("wpa_supplicant", "-B", "-i", "wlan0", "-c", str(config))
    wait(lambda: Path("/run/wpa_supplicant/wlan0").exists(), 20, "wpa socket")

    def count() -> int:
        sh("wpa_cli", "-i", "wlan0", "scan", check=False)
        time.sleep(3)
        export = json.loads(sh(sys.executable, "-m", "zsn", "--export", "wlan"))
        (results / "export.json").write_text(json.dumps(export, indent=1))
        (wlan0,) = [i for i in export["wlan"]["interfaces"] if i["name"] == "wlan0"]
        return len(wlan0["scan"])

    wait(lambda: count() >= 100, 300, "100 BSSs in the scan")
    (results / "record.txt").write_text(
        f"kernel {os.uname().release}; {sh('wpa_supplicant', '-v').splitlines()[0]}; "
        f"recorded {time.strftime('%Y-%m-%d')}\n")


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    mode, results = sys.argv[1], Path(sys.argv[2])
    if mode == "connect":
        connect_benchmark(results, int(sys.argv[3]))
    else:
        record_benchmark(results)


if __name__ == "__main__":
    main()
