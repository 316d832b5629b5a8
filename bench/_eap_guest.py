"""The guest half of `bench/wlan_connect.py --eap`: runs inside the QEMU kernel lab (as root).

    python3 bench/_eap_guest.py RESULTS ROUNDS

One hwsim access point, corp-peap (WPA2-Enterprise, PEAP/MSCHAPv2 from hostapd's
internal EAP server, certificates made here) in namespace ``ap`` with 10.78.0.1;
station wlan0 under wpa_supplicant (10.78.0.2), station wlan2 under iwd on a private
system bus (10.78.0.3). Each case is timed from the command to traffic passing (a ping
of the access point answered), from a disconnected station whose scan has just
finished and lists the network, in rotating order:
- ``wpa_cli``: a hand-written network block, set line by line (add_network, set_network
  key_mgmt, eap, identity, password, phase2, ca_cert, domain_match, select_network),
  then ``status`` every 20 ms until COMPLETED, then the ping;
- ``zsn wpa (in-process)``: the pane's path once the form is submitted: the plan
  (request checked, CA copied, values rendered and read back) and its apply, then
  the ping;
- ``iwctl``: a hand-written ``.8021x`` file written, ``iwctl station wlan2 connect
  corp-peap`` (returns when iwd answers), then the ping;
- ``zsn iwd (in-process)``: the plan (its ``.8021x`` file rendered and read back) and
  its apply, then the ping;
plus ``python -m zsn wifi connect ... --eap peap`` for each backend once per round.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._wlan_guest import iwd_reset as shared_iwd_reset  # noqa: E402
from bench._wlan_guest import (  # noqa: E402
    iwd_state,
    phy,
    scan_now,
    sh,
    start_stations,
    time_cases,
    wait,
    wpa_cli_network,
    wpa_state,
)
from tests.lab.pki import make_pki  # noqa: E402
from zsn.eap.request import EapSecret, make_request  # noqa: E402
from zsn.system.host import Host  # noqa: E402
from zsn.wlan import actions  # noqa: E402
from zsn.wlan.live import read_wlan  # noqa: E402

PASSWORD = "alice pass 1"
SERVER = "radius.lab.test"
WORK = Path("/run/zsn-bench-eap")
SSID = "corp-peap"


def start_ap() -> None:
    pki = make_pki([SERVER], kind="rsa")
    for name, text in (("ca.pem", pki.ca_cert), ("server.pem", pki.server_cert),
                       ("server.key", pki.server_key),
                       ("eap_user", f'*\tPEAP\n"alice@lab.test"\tMSCHAPV2\t"{PASSWORD}"\t[2]\n')):
        (WORK / name).write_text(text)
    sh("ip", "netns", "add", "ap")
    sh("iw", "phy", phy("wlan1"), "set", "netns", "name", "ap")
    config = WORK / "hostapd.conf"
    config.write_text("\n".join([
        "interface=wlan1", "driver=nl80211", "ctrl_interface=/run/hostapd", f"ssid={SSID}",
        "hw_mode=g", "channel=1", "wpa=2", "wpa_key_mgmt=WPA-EAP", "rsn_pairwise=CCMP",
        "ieee8021x=1", "eap_server=1", f"eap_user_file={WORK / 'eap_user'}",
        f"ca_cert={WORK / 'ca.pem'}", f"server_cert={WORK / 'server.pem'}",
        f"private_key={WORK / 'server.key'}"]) + "\n")
    sh("ip", "netns", "exec", "ap", "hostapd", "-B", str(config))
    wait(lambda: "state=ENABLED" in sh("ip", "netns", "exec", "ap", "hostapd_cli", "-p",
                                      "/run/hostapd", "-i", "wlan1", "status", check=False),
         60, "hostapd")
    sh("ip", "-n", "ap", "addr", "add", "10.78.0.1/24", "dev", "wlan1")


def ping(interface: str) -> None:
    wait(lambda: subprocess.run(["ping", "-c", "1", "-W", "1", "-I", interface, "10.78.0.1"],
                                capture_output=True, check=False).returncode == 0, 60,
         f"a ping over {interface}")


def request() -> object:
    return make_request("peap", "alice@lab.test", password=EapSecret(PASSWORD),
                        ca_cert=str(WORK / "ca.pem"), server_domain=SERVER)


def wpa_reset() -> None:
    sh("wpa_cli", "-i", "wlan0", "remove_network", "all")
    wait(lambda: wpa_state().get("wpa_state") in ("DISCONNECTED", "INACTIVE"), 20,
         "wpa_supplicant disconnected")
    import asyncio

    asyncio.run(scan_now())


def wpa_cli_connect() -> None:
    wpa_cli_network([("ssid", f'"{SSID}"'), ("key_mgmt", "WPA-EAP"), ("eap", "PEAP"),
                     ("identity", '"alice@lab.test"'), ("password", f'"{PASSWORD}"'),
                     ("phase2", '"auth=MSCHAPV2"'), ("ca_cert", f'"{WORK / "ca.pem"}"'),
                     ("domain_match", f'"{SERVER}"')])
    ping("wlan0")


_snapshots: dict[str, object] = {}


def zsn_connect(interface: str) -> None:
    """What the pane does once the form is submitted (it has read the machine already)."""
    host = Host()
    snapshot = _snapshots[interface]
    target = actions.resolve_interface(host, snapshot, interface)  # type: ignore[arg-type]
    plan = actions.plan_connect(host, snapshot, target, SSID.encode(), None, False,  # type: ignore[arg-type]
                                request())  # type: ignore[arg-type]
    plan.apply()
    ping(interface)


def iwd_reset() -> None:
    """As for WPA2, then a disconnect, which stops the station's autoconnect: iwd must
    not join the network by itself as soon as a profile for it appears."""
    shared_iwd_reset(SSID)
    sh("iwctl", "station", "wlan2", "disconnect", check=False)


HAND_WRITTEN = f"""[Security]
EAP-Method=PEAP
EAP-Identity=alice@lab.test
EAP-PEAP-CACert={WORK / 'ca.pem'}
EAP-PEAP-ServerDomainMask={SERVER}
EAP-PEAP-Phase2-Method=MSCHAPV2
EAP-PEAP-Phase2-Identity=alice@lab.test
EAP-PEAP-Phase2-Password={PASSWORD}
"""


def iwctl_connect() -> None:
    profile = Path(f"/var/lib/iwd/{SSID}.8021x")
    profile.write_text(HAND_WRITTEN)
    os.chmod(profile, 0o600)
    sh("iwctl", "station", "wlan2", "connect", SSID)
    wait(lambda: iwd_state() == "connected", 60, "iwctl connected")
    ping("wlan2")


def zsn_cli(interface: str) -> None:
    sh(sys.executable, "-m", "zsn", "wifi", "connect", SSID, "--iface", interface, "--eap",
       "peap", "--identity", "alice@lab.test", "--password-stdin", "--ca-cert",
       str(WORK / "ca.pem"), "--server-domain", SERVER, stdin=PASSWORD)
    ping(interface)


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    results, rounds = Path(sys.argv[1]), int(sys.argv[2])
    sh("modprobe", "mac80211_hwsim", "radios=3")
    wait(lambda: Path("/sys/class/net/wlan2").exists(), 30, "radios")
    start_ap()
    start_stations(WORK)
    sh("ip", "addr", "add", "10.78.0.2/24", "dev", "wlan0")
    sh("ip", "addr", "add", "10.78.0.3/24", "dev", "wlan2")
    wpa_reset()
    iwd_reset()
    snapshot = read_wlan(Host())
    _snapshots.update({"wlan0": snapshot, "wlan2": snapshot})
    time_cases(results, [("wpa_cli", wpa_reset, wpa_cli_connect),
                         ("zsn wpa (in-process)", wpa_reset, lambda: zsn_connect("wlan0")),
                         ("iwctl", iwd_reset, iwctl_connect),
                         ("zsn iwd (in-process)", iwd_reset, lambda: zsn_connect("wlan2"))],
               [("zsn wifi connect (CLI, wpa_supplicant)", wpa_reset, lambda: zsn_cli("wlan0")),
                ("zsn wifi connect (CLI, iwd)", iwd_reset, lambda: zsn_cli("wlan2"))], rounds)


if __name__ == "__main__":
    main()
