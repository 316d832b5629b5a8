"""Lock-out scenarios that need kernel modules the CI host lacks, in the QEMU kernel lab
guest (group ``tryback``): zsn runs inside a real SSH session (Debian's sshd in one
namespace, ssh in another: tests/lab/sshd.py) and makes a change that cuts it, with
``--try``; tests/lab/tryback.py has the checks.

- the uplink put into a bond (bonding): enslaving takes the link down, and the route
  the session's replies took goes with it;
- the VLAN carrying the session deleted (8021q): the rollback makes it again, with its
  address and the route through it;
- a Wi-Fi disconnect (mac80211_hwsim): the session runs over a station wpa_supplicant
  drives, hostapd is the access point in the client's namespace.

Each never confirmed (the guardian restores the path within SECONDS + 5 s) and
confirmed (it stays). The guest is much slower than the host: longer tries.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.lab import sshd
from tests.lab.kernel import modprobe
from tests.lab.netns import Lab, run, wait_for
from tests.lab.sshd import SshLab
from tests.lab.tryback import Scenario, confirmed, never_confirmed, record_figure
from tests.needs import needs_tools

SECONDS = 12
"""The guest runs Python some 14 times slower than the host: a longer try."""


@pytest.fixture(scope="module", autouse=True)
def modules() -> None:
    modprobe("bonding", "max_bonds=0")
    modprobe("8021q")


@pytest.fixture(scope="module")
def ssh_lab(request: pytest.FixtureRequest) -> Iterator[SshLab]:
    lab = Lab()
    try:
        ssh_lab = sshd.build(lab, 11)
        try:
            yield ssh_lab
        finally:
            _keep_sshd_log(request, ssh_lab)
    finally:
        lab.close()


def _keep_sshd_log(request: pytest.FixtureRequest, lab: SshLab) -> None:
    """sshd's log next to the junit report, in the folder the host reads after the
    guest powered off (the lab's own folder goes with the guest)."""
    report = request.config.getoption("xmlpath", None)
    if report:
        shutil.copy(lab.work / "sshd.log", Path(report).parent / "sshd.log")


def _link(lab: SshLab, name: str) -> dict[str, object] | None:
    result = run(["ip", "-n", lab.server, "-j", "link", "show", name], check=False)
    return json.loads(result.stdout)[0] if result.returncode == 0 else None


def _alias_net(lab: SshLab) -> str:
    return lab.client_alias.rsplit(".", 1)[0] + ".0/24"


# -- the uplink into a bond ---------------------------------------------------------


def _bonded(lab: SshLab) -> bool:
    link = _link(lab, lab.uplink)
    return link is not None and link.get("master") == "zbd11"


BOND = Scenario(
    "uplink-into-bond",
    ("link", "create", "bond", "zbd11", "--mode", "active-backup", "--members", "UPLINK"),
    changed=_bonded,
    undo=lambda lab: _bond_undo(lab))


def _bond_undo(lab: SshLab) -> None:
    run(["ip", "-n", lab.server, "link", "del", "zbd11"])
    run(["ip", "-n", lab.server, "link", "set", lab.uplink, "up"])
    run(["ip", "-n", lab.server, "route", "replace", _alias_net(lab), "via", lab.client_ip])


# -- the VLAN carrying the session deleted --------------------------------------------


def _vlans(lab: SshLab) -> tuple[str, str]:
    return f"{lab.uplink}.7", f"{lab.far}.7"


def _over_a_vlan(lab: SshLab) -> Callable[[], None]:
    """VLAN 7 on both ends; the session's replies go through it (a gateway route)."""
    ours, theirs = _vlans(lab)
    net = "10.240.11"
    run(["ip", "-n", lab.server, "link", "add", "link", lab.uplink, "name", ours, "type",
         "vlan", "id", "7"])
    run(["ip", "-n", lab.client, "link", "add", "link", lab.far, "name", theirs, "type",
         "vlan", "id", "7"])
    run(["ip", "-n", lab.server, "addr", "add", f"{net}.1/24", "dev", ours])
    run(["ip", "-n", lab.client, "addr", "add", f"{net}.2/24", "dev", theirs])
    for ns, dev in ((lab.server, ours), (lab.client, theirs)):
        run(["ip", "-n", ns, "link", "set", dev, "up"])
    run(["ip", "-n", lab.server, "route", "replace", _alias_net(lab), "via", f"{net}.2",
         "dev", ours])
    lab.target = (f"{net}.1", lab.client_alias)

    def teardown() -> None:
        lab.target = (lab.server_ip, lab.client_alias)
        run(["ip", "-n", lab.server, "link", "del", ours], check=False)
        run(["ip", "-n", lab.client, "link", "del", theirs])
        run(["ip", "-n", lab.server, "route", "replace", _alias_net(lab), "via",
             lab.client_ip])

    return teardown


VLAN = Scenario(
    "session-vlan-deleted", ("link", "delete", "VLAN"),
    changed=lambda lab: _link(lab, _vlans(lab)[0]) is None,
    undo=lambda lab: None,  # the teardown deletes what is left
    prepare=_over_a_vlan, names=lambda lab: {"VLAN": _vlans(lab)[0]})


# -- a Wi-Fi disconnect ----------------------------------------------------------------

WORK = Path("/run/zsn-lab-tryback")


def _phys() -> list[str]:
    return sorted(path.name for path in Path("/sys/class/ieee80211").iterdir())


def _wifi_of(ns: str) -> str | None:
    data = json.loads(run(["ip", "-n", ns, "-j", "link", "show"]).stdout)
    return next((link["ifname"] for link in data if link["ifname"].startswith("wlan")), None)


def _over_wifi(lab: SshLab) -> Callable[[], None]:
    """The server's station joins an open network hostapd offers in the client's
    namespace; the session's replies go over the air (a gateway route)."""
    needs_tools("hostapd", "wpa_supplicant", "wpa_cli", "iw")
    if _wifi_of(lab.server) is None:  # the radios stay in the namespaces between runs
        modprobe("mac80211_hwsim", "radios=2")
        wait_for(lambda: len(_phys()) >= 2, 30, "two hwsim radios")
        station_phy, ap_phy = _phys()[:2]
        run(["iw", "phy", station_phy, "set", "netns", "name", lab.server])
        run(["iw", "phy", ap_phy, "set", "netns", "name", lab.client])
    station, ap = _wifi_of(lab.server), _wifi_of(lab.client)
    assert station is not None and ap is not None
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "hostapd.conf").write_text("\n".join([
        f"interface={ap}", "driver=nl80211", "ssid=zsn-try", "hw_mode=g", "channel=1", ""]))
    (WORK / "wpa.conf").write_text("ctrl_interface=/run/wpa_supplicant\nupdate_config=1\n"
                                   'network={\n\tssid="zsn-try"\n\tkey_mgmt=NONE\n}\n')
    os.chmod(WORK / "wpa.conf", 0o600)
    run(["ip", "netns", "exec", lab.client, "hostapd", "-B", "-P", str(WORK / "hostapd.pid"),
         str(WORK / "hostapd.conf")])
    run(["ip", "netns", "exec", lab.server, "wpa_supplicant", "-B", "-i", station, "-c",
         str(WORK / "wpa.conf"), "-P", str(WORK / "wpa.pid")])
    net = "10.250.11"
    run(["ip", "-n", lab.server, "addr", "add", f"{net}.1/24", "dev", station])
    run(["ip", "-n", lab.client, "addr", "add", f"{net}.2/24", "dev", ap])
    wait_for(lambda: "wpa_state=COMPLETED" in run(
        ["ip", "netns", "exec", lab.server, "wpa_cli", "-i", station, "status"],
        check=False).stdout, 60, "the station associated")
    run(["ip", "-n", lab.server, "route", "replace", _alias_net(lab), "via", f"{net}.2",
         "dev", station])
    lab.target = (f"{net}.1", lab.client_alias)
    wait_for(lambda: lab.probe(2.0), 60, "the path over the air")

    def teardown() -> None:
        lab.target = (lab.server_ip, lab.client_alias)
        daemons = []
        for pidfile in ("wpa.pid", "hostapd.pid"):
            with contextlib.suppress(OSError, ValueError):
                pid = int((WORK / pidfile).read_text())
                os.kill(pid, signal.SIGTERM)
                daemons.append(pid)
        # The next scenario starts them again on the same radios and control sockets.
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in daemons), 30,
                 "wpa_supplicant and hostapd to exit")
        run(["ip", "-n", lab.server, "route", "replace", _alias_net(lab), "via",
             lab.client_ip])
        run(["ip", "-n", lab.server, "addr", "flush", "dev", station])
        run(["ip", "-n", lab.client, "addr", "flush", "dev", ap])

    return teardown


def _station(lab: SshLab) -> str:
    station = _wifi_of(lab.server)
    assert station is not None
    return station


def _disassociated(lab: SshLab) -> bool:
    return "wpa_state=DISCONNECTED" in run(
        ["ip", "netns", "exec", lab.server, "wpa_cli", "-i", _station(lab), "status"],
        check=False).stdout


WIFI = Scenario(
    "wifi-disconnect", ("wifi", "disconnect", "--iface", "STATION"),
    changed=_disassociated,
    undo=lambda lab: run(["ip", "netns", "exec", lab.server, "wpa_cli", "-i", _station(lab),
                          "reconnect"]),
    prepare=_over_wifi, names=lambda lab: {"STATION": _station(lab)})


SCENARIOS = [BOND, VLAN, WIFI]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_never_confirmed_the_guardian_restores_the_path(
        ssh_lab: SshLab, scenario: Scenario, request: pytest.FixtureRequest) -> None:
    try:
        record_figure(request, scenario.name, never_confirmed(ssh_lab, scenario, SECONDS))
    finally:
        ssh_lab.forget_changes()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_confirmed_the_change_stays(ssh_lab: SshLab, scenario: Scenario) -> None:
    try:
        confirmed(ssh_lab, scenario)
    finally:
        ssh_lab.forget_changes()
