"""Interfaces brought up and down through the wg-quick@ unit of a real systemd.

A Debian bookworm container (systemd, wireguard-tools, wireguard-go) boots in a
namespace the test made. zsn, from the host and only through --root (the
container's files, its system bus, its /run/wireguard), creates an interface,
starts `wg-quick@NAME` over D-Bus, adds a peer to the running interface live and
stops the unit again; the unit's PostUp loads the interface's access rules into the
container's nftables, its PostDown removes them.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lab.container import Container, booted_container
from tests.lab.netns import Lab, require_lab, run, wait_for
from zsn.system.dbus import Systemd, UnitState, run_sync
from zsn.wireguard import uapi

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
TOOLS = ("ip", "systemd-nspawn", "debootstrap")


@dataclass(frozen=True)
class SystemdLab:
    lab: Lab
    namespace: str
    container: Container

    def zsn(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "zsn", "--root", str(self.container.root), *args],
            capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"zsn {' '.join(args)}: {result.stdout}{result.stderr}")
        return result

    def unit(self, name: str) -> UnitState:
        return run_sync(self.container.host,
                        lambda bus: Systemd(bus).unit_state(f"wg-quick@{name}.service"))


@pytest.fixture(scope="module")
def sdlab() -> Iterator[SystemdLab]:
    require_lab(TOOLS)
    lab = Lab(tag="zwm" + secrets.token_hex(2))
    try:
        namespace = lab.namespace("sd")
        with booted_container(lab, namespace) as container:
            yield SystemdLab(lab, namespace, container)
    finally:
        lab.close()


def test_up_and_down_go_through_the_wg_quick_unit(sdlab: SystemdLab) -> None:
    name = sdlab.lab.name("w")
    socket = sdlab.container.root / "run/wireguard" / f"{name}.sock"
    sdlab.zsn("wg", "create", name, "--address", "10.64.0.1/24", "--port", "51864",
              "--endpoint", "192.0.2.1")
    plan = sdlab.zsn("wg", "up", name, "--dry-run").stdout
    assert f"start wg-quick@{name}.service (systemd, over D-Bus)" in plan
    assert "wireguard-go" in plan  # this kernel has no WireGuard module: the plan says so
    sdlab.zsn("wg", "up", name)
    try:
        state = sdlab.unit(name)
        assert (state.active_state, state.sub_state) == ("active", "exited")
        wait_for(socket.exists, 10, "the unit's wireguard-go socket")
        assert uapi.get_device(socket).listen_port == 51864
        link = run(["ip", "-n", sdlab.namespace, "-brief", "address", "show", name]).stdout
        assert "10.64.0.1/24" in link  # in the test's namespace, not the host's
        client = sdlab.zsn("peer", "add", name, "alice").stdout
        assert "Endpoint = 192.0.2.1:51864" in client
        assert len(uapi.get_device(socket).peers) == 1  # added live, unit untouched
        assert sdlab.unit(name).active_state == "active"
    finally:
        sdlab.zsn("wg", "down", name, check=False)
    assert sdlab.unit(name).active_state == "inactive"
    wait_for(lambda: not socket.exists(), 10, "the socket to go with the unit")


def test_the_unit_loads_the_access_rules_and_removes_them(sdlab: SystemdLab) -> None:
    name = sdlab.lab.name("a")
    sdlab.zsn("wg", "create", name, "--address", "10.65.0.1/24", "--port", "51865",
              "--endpoint", "192.0.2.1")
    sdlab.zsn("peer", "add", name, "bob")
    added = sdlab.zsn("wg", "acl", "rule", "add", name, "deny", "bob", "any")
    assert f"{name} is not running: its access rules are loaded when it comes up" in \
        added.stderr

    def table() -> subprocess.CompletedProcess[str]:
        return run(["ip", "netns", "exec", sdlab.namespace, "nft", "-j", "list", "table",
                    "inet", f"zsn_{name}"], check=False)

    sdlab.zsn("wg", "up", name)
    try:
        assert sdlab.unit(name).active_state == "active"
        loaded = table()  # PostUp ran in the unit, in the container's namespace
        assert loaded.returncode == 0, loaded.stderr
        assert '"comment": "1"' in loaded.stdout
    finally:
        sdlab.zsn("wg", "down", name, check=False)
    assert table().returncode != 0, "PostDown removed the table"
