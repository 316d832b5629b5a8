"""zsn's wpa_supplicant client against a real wpa_supplicant on this machine.

There is no radio here, so the daemon drives a veth with its ``wired`` driver: the
control interface, network blocks, SAVE_CONFIG and events are the same code in
wpa_supplicant as on Wi-Fi, and an open (key_mgmt NONE) network reaches COMPLETED.
Scanning and keys are the kernel lab's business (tests/kernel/test_wlan.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from tests.lab.netns import Lab, require_lab, run, wait_for
from zsn.errors import SocketError
from zsn.system.host import Host
from zsn.system.wpa_ctrl import WpaControl, control_socket
from zsn.wlan import wpa
from zsn.wlan.wpa_protocol import REPLY_LIMIT, parse_list_networks

pytestmark = pytest.mark.lab

T = TypeVar("T")


@dataclass
class Supplicant:
    host: Host
    interface: str
    config: Path
    pid: int

    @property
    def socket(self) -> Path:
        return control_socket(self.host, self.interface)

    def run(self, action: Callable[[WpaControl], Awaitable[T]]) -> T:
        return wpa.run(self.host, self.interface, action)


@pytest.fixture
def supplicant(lab: Lab, tmp_path: Path) -> Iterator[Supplicant]:
    require_lab(("ip", "wpa_supplicant"))
    namespace = lab.namespace("ws")
    interface = lab.name("wa")
    run(["ip", "-n", namespace, "link", "add", interface, "type", "veth", "peer", "name",
         lab.name("wb")])
    run(["ip", "-n", namespace, "link", "set", interface, "up"])
    root = tmp_path / "root"
    (root / "run/wpa_supplicant").mkdir(parents=True)
    config = tmp_path / "wpa.conf"
    config.write_text(f"ctrl_interface={root}/run/wpa_supplicant\nupdate_config=1\nap_scan=0\n")
    pidfile = tmp_path / "wpa.pid"
    run(["ip", "netns", "exec", namespace, "wpa_supplicant", "-B", "-D", "wired", "-i",
         interface, "-c", str(config), "-P", str(pidfile)])
    # wpa_supplicant creates its pid file, then writes the pid: a busy machine can read
    # it in between.
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit(), 10,
             "wpa_supplicant's pid in its pid file")
    pid = int(pidfile.read_text())

    def stop() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)

    lab.defer(stop)
    host = Host(root)
    wait_for(control_socket(host, interface).exists, 10, "the control socket")
    yield Supplicant(host, interface, config, pid)


def _private_dirs() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("zsn-wpa-")}


def test_state_of_an_idle_supplicant_and_no_socket_left_behind(
        supplicant: Supplicant) -> None:
    before = _private_dirs()
    state = supplicant.run(lambda ctrl: wpa.read_state(ctrl, supplicant.interface))
    assert state.link.state == "DISCONNECTED" and not state.link.connected
    assert state.scan == () and state.networks == () and state.update_config is True
    assert _private_dirs() == before


def test_network_list_is_read_whole_past_the_reply_buffer(supplicant: Supplicant) -> None:
    names = [f"network-{number:03d}-{'x' * 20}" for number in range(150)]

    async def add(ctrl: WpaControl) -> str:
        for name in names:
            network_id = (await ctrl.request("ADD_NETWORK")).strip()
            assert (await ctrl.request(f"SET_NETWORK {network_id} ssid {name.encode().hex()}")
                    ).strip() == "OK"
        return await ctrl.request("LIST_NETWORKS")

    raw = supplicant.run(add)
    assert len(raw) >= REPLY_LIMIT - 100  # one reply is cut ...
    assert len(parse_list_networks(raw.rsplit("\n", 1)[0])) < len(names)
    listed = supplicant.run(wpa.list_networks)  # ... zsn pages past it
    assert [line.ssid.decode() for line in listed] == names


def test_connect_forget_and_autoconnect_reach_the_saved_config(
        supplicant: Supplicant) -> None:
    async def add_other(ctrl: WpaControl) -> None:
        other = (await ctrl.request("ADD_NETWORK")).strip()
        await ctrl.request(f"SET_NETWORK {other} ssid {b'other'.hex()}")
        await ctrl.request(f"SET_NETWORK {other} key_mgmt NONE")
        await ctrl.request(f"ENABLE_NETWORK {other}")

    supplicant.run(add_other)
    result = asyncio.run(wpa.connect(supplicant.socket, supplicant.interface, b"lan",
                                     passphrase=None, security="open", hidden=False,
                                     timeout=20))
    assert result.created and result.saved and result.notes == ()
    state = supplicant.run(lambda ctrl: wpa.read_state(ctrl, supplicant.interface))
    assert state.link.connected and state.link.ssid == b"lan"
    # SELECT_NETWORK disabled "other"; zsn enabled it again before saving.
    assert {(n.ssid, n.autoconnect, n.current) for n in state.networks} == {
        (b"other", True, False), (b"lan", True, True)}
    saved = supplicant.config.read_text()
    assert 'ssid="lan"' in saved and "disabled=1" not in saved

    lan = next(n for n in state.networks if n.ssid == b"lan")
    notes = supplicant.run(lambda ctrl: wpa.set_enabled(ctrl, [int(lan.ref)], False))
    assert notes == [] and "disabled=1" in supplicant.config.read_text()
    supplicant.run(lambda ctrl: wpa.remove_networks(ctrl, [int(lan.ref)]))
    assert 'ssid="lan"' not in supplicant.config.read_text()
    assert 'ssid="other"' in supplicant.config.read_text()


def test_connect_to_an_unknown_network_gives_up_in_bounded_time(
        supplicant: Supplicant) -> None:
    # The wired driver "associates" at once, but no access point answers the WPA
    # handshake on a veth: the deadline ends the attempt.
    from zsn.wlan.secrets import Passphrase

    with pytest.raises(wpa.ConnectFailed, match="not connected within 2 s") as raised:
        asyncio.run(wpa.connect(supplicant.socket, supplicant.interface, b"never",
                                passphrase=Passphrase("correct horse battery"),
                                security="WPA2", hidden=False, timeout=2))
    assert "correct" not in str(raised.value)
    networks = supplicant.run(wpa.list_networks)
    assert [n.ssid for n in networks] == []  # the failed attempt was removed again


def test_a_dead_supplicant_is_reported_plainly(supplicant: Supplicant) -> None:
    os.kill(supplicant.pid, signal.SIGKILL)  # leaves its socket file behind
    wait_for(lambda: not Path(f"/proc/{supplicant.pid}").exists(), 10, "the daemon to die")
    with pytest.raises(SocketError, match="does not answer .* is a stale socket"):
        supplicant.run(wpa.list_networks)


def test_a_daemon_that_never_answers_hits_the_deadline(tmp_path: Path) -> None:
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    mute.bind(str(tmp_path / "wlan9"))
    try:
        async def ask() -> str:
            async with WpaControl(tmp_path / "wlan9", timeout=0.3) as ctrl:
                return await ctrl.request("STATUS")
        with pytest.raises(SocketError, match="no answer to 'STATUS' within 0.3 s"):
            asyncio.run(ask())
    finally:
        mute.close()


def test_secrets_never_reach_an_error(supplicant: Supplicant) -> None:
    from zsn.wlan.secrets import Passphrase

    secret = Passphrase("correct horse battery")
    with pytest.raises(wpa.ConnectFailed) as raised:
        asyncio.run(wpa.connect(supplicant.socket, supplicant.interface, b"corp",
                                passphrase=secret, security="enterprise", hidden=False,
                                timeout=2))
    assert "EAP" in str(raised.value) and "correct" not in str(raised.value)
    assert supplicant.run(wpa.list_networks) == []
