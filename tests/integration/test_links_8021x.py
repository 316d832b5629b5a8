"""``zsn link 8021x`` against real daemons: wpa_supplicant's wired driver on one end of a
veth pair, hostapd with ``driver=wired`` and its internal EAP server on the other.

hostapd's wired driver never blocks the port, so traffic passing proves nothing: the
test reads the authenticator's own state of the port (``hostapd_cli all_sta``). zsn
runs inside the supplicant's namespace as an admin would on the machine, and writes
the real /etc files (unique names, removed at the end).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lab.netns import Lab, require_lab, run, wait_for
from tests.lab.pki import make_pki

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
SERVER = "radius.lab.test"
PASSWORD, WRONG = "alice wired 1", "not it at all"


@dataclass
class Wired:
    lab: Lab
    authenticator_ns: str
    supplicant_ns: str
    port: str
    """The supplicant's end (in `supplicant_ns`)."""
    authenticator_port: str
    hostapd_ctrl: Path
    files: Path

    def zsn(self, *args: str, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.supplicant_ns, sys.executable,
                               "-m", "zsn", *args], input=stdin, capture_output=True,
                              text=True, timeout=120, cwd=REPO, check=False)

    def options(self, ca: str = "ca.pem") -> list[str]:
        return ["--eap", "peap", "--identity", "alice@lab.test", "--password-stdin",
                "--ca-cert", str(self.files / ca), "--server-domain", SERVER]

    def authenticator_says(self) -> str:
        return run(["ip", "netns", "exec", self.authenticator_ns, "hostapd_cli", "-p",
                    str(self.hostapd_ctrl), "-i", self.authenticator_port, "all_sta"],
                   check=False).stdout


def _stop_supplicant(port: str) -> None:
    pidfile = Path(f"/run/zsn/wpa_supplicant-wired-{port}.pid")
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pidfile.read_text()), signal.SIGTERM)
    wait_for(lambda: not Path(f"/run/wpa_supplicant/{port}").exists(), 15,
             "the supplicant gone")


@pytest.fixture(scope="module")
def wired(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wired]:
    require_lab(("ip", "hostapd", "hostapd_cli", "wpa_supplicant"))
    lab = Lab()
    try:
        authenticator, supplicant = lab.namespace("au"), lab.namespace("su")
        lab.veth(authenticator, "10.79.1.1/24", supplicant, "10.79.1.2/24")
        auth_port, port = lab.name("va"), lab.name("vb")
        folder = tmp_path_factory.mktemp("dot1x")
        pki = make_pki([SERVER])
        stranger = make_pki(ca_name_text="someone-elses-ca")
        for name, text in (("ca.pem", pki.ca_cert), ("server.pem", pki.server_cert),
                           ("server.key", pki.server_key), ("other-ca.pem", stranger.ca_cert),
                           ("eap_user", f'*\tPEAP\n"alice@lab.test"\tMSCHAPV2\t"{PASSWORD}"'
                                        "\t[2]\n")):
            (folder / name).write_text(text)
            os.chmod(folder / name, 0o600)
        ctrl = Path(f"/run/hostapd-{lab.tag}")
        config = folder / "hostapd.conf"
        config.write_text("\n".join([
            f"interface={auth_port}", "driver=wired", f"ctrl_interface={ctrl}",
            "ieee8021x=1", "eap_server=1", f"eap_user_file={folder / 'eap_user'}",
            f"ca_cert={folder / 'ca.pem'}", f"server_cert={folder / 'server.pem'}",
            f"private_key={folder / 'server.key'}"]) + "\n")
        pidfile = folder / "hostapd.pid"
        run(["ip", "netns", "exec", authenticator, "hostapd", "-B", "-P", str(pidfile),
             str(config)])
        lab.defer(lambda: os.kill(int(pidfile.read_text()), signal.SIGTERM))
        wait_for(lambda: (ctrl / auth_port).exists(), 15, "hostapd's control socket")
        leftovers = [f"/etc/wpa_supplicant/wpa_supplicant-wired-{port}.conf",
                     f"/etc/zsn/eap/wired-{port}"]
        lab.defer(lambda: subprocess.run(["rm", "-rf", *leftovers], check=False))
        lab.defer(lambda: _stop_supplicant(port))
        yield Wired(lab, authenticator, supplicant, port, auth_port, ctrl, folder)
    finally:
        lab.close()


def test_port_authenticates_and_the_authenticator_authorizes_it(wired: Wired) -> None:
    result = wired.zsn("link", "8021x", wired.port, *wired.options(), stdin=PASSWORD)
    assert result.returncode == 0, result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    sta = wired.authenticator_says()
    assert "[AUTHORIZED]" in sta and "dot1xAuthAuthSuccessesWhileAuthenticating=1" in sta, sta
    config = Path(f"/etc/wpa_supplicant/wpa_supplicant-wired-{wired.port}.conf")
    assert config.stat().st_mode & 0o777 == 0o600
    shown = wired.zsn("link", "show", wired.port)
    assert "802.1X: authenticated (Authorized" in shown.stdout, shown.stdout + shown.stderr
    exported = json.loads(wired.zsn("--export", "links").stdout)["links"]["dot1x"]
    assert exported[wired.port]["authenticated"] is True
    assert exported[wired.port]["pae_state"] == "AUTHENTICATED"


def test_a_wrong_password_is_named_and_nothing_stays(wired: Wired) -> None:
    _stop_supplicant(wired.port)
    config = Path(f"/etc/wpa_supplicant/wpa_supplicant-wired-{wired.port}.conf")
    before = config.read_text()
    result = wired.zsn("link", "8021x", wired.port, *wired.options(), stdin=WRONG)
    assert result.returncode == 1, result.stderr
    assert "802.1X failed: the server refused the identity or password" in result.stderr
    assert WRONG not in result.stdout + result.stderr
    assert config.read_text() == before  # the working config is back as it was
    assert not Path(f"/run/wpa_supplicant/{wired.port}").exists()


def test_a_port_without_a_server_check_is_refused(wired: Wired) -> None:
    result = wired.zsn("link", "8021x", wired.port, "--eap", "peap", "--identity",
                       "alice@lab.test", "--password-stdin", stdin=PASSWORD)
    assert result.returncode == 2 and "rogue access point or port" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
