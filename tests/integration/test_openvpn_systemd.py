"""zsn against a real systemd, resolved and OpenVPN, booted in a container.

An OpenVPN server runs in one namespace (PKI made here), pushing a DNS server and a
domain; a Debian bookworm container with systemd, systemd-resolved and openvpn boots
in a second namespace joined to the first by a veth pair. zsn, from the host and only
over the container's bus (plus its files under --root), installs its DNS hook, starts
`openvpn-client@test`, checks the unit, the live state and resolved's link settings,
then stops it and checks that the DNS settings are gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab.container import Container, booted_container
from tests.lab.netns import require_lab, run
from tests.lab.openvpn import (
    OPENVPN_TOOLS,
    NsPair,
    namespace_pair,
    openvpn_lab,
    start_server,
)
from tests.lab.pki import Pki, client_config, make_pki
from zsn.errors import ParseError, SocketError, ZsnError
from zsn.openvpn import actions, management
from zsn.openvpn.connections import ConfigFile, config_path, connections
from zsn.plan import FileEdit
from zsn.system.dbus import BusError, LinkDns, Resolved, SystemBus, Systemd, run_sync
from zsn.system.journal import unit_lines

pytestmark = pytest.mark.lab
UNIT = "openvpn-client@test.service"
TEST_CONFIG = ConfigFile("client", "test", config_path("client", "test"))


@dataclass(frozen=True)
class OvpnLab:
    ns: NsPair
    container: Container
    pki: Pki


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """The predicate's first truthy result (a record, lines, a value read) within `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"{what}: not reached within {timeout} s (last: {last!r})")


@pytest.fixture(scope="module")
def ovpn_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OvpnLab]:
    require_lab(OPENVPN_TOOLS)
    pki = make_pki()
    lab = openvpn_lab()
    try:
        pair = namespace_pair(lab)
        start_server(lab, pair, pki, tmp_path_factory.mktemp("zov-server"))
        with booted_container(lab, pair.client_ns) as container:
            yield OvpnLab(pair, container, pki)
    finally:
        lab.close()


def tun_index(ns: str) -> int | None:
    links = json.loads(run(["ip", "-n", ns, "-j", "link", "show"]).stdout)
    return next((link["ifindex"] for link in links if link["ifname"].startswith("tun")), None)


def journal_tail(lab: OvpnLab) -> str:
    """The client unit's log, for a failure message."""
    lines = unit_lines(lab.container.host, UNIT, lines=40)
    return "journal of " + UNIT + ":\n" + "\n".join(line.message for line in lines)


def zsn_export(lab: OvpnLab, *args: str) -> str:
    """`zsn --root CONTAINER --export ...` as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "zsn", "--root", str(lab.container.root), "--export", *args],
        capture_output=True, text=True, timeout=30, check=True,
        cwd=Path(__file__).parents[2],  # this tree's zsn, not an installed one
    ).stdout


def link_dns(lab: OvpnLab, ifindex: int) -> LinkDns:
    return run_sync(lab.container.host, lambda bus: Resolved(bus).link(ifindex))


def test_start_connects_and_hands_pushed_dns_to_resolved(ovpn_lab: OvpnLab) -> None:
    lab = ovpn_lab
    host = lab.container.host
    (host.path(TEST_CONFIG.path)).write_text(client_config(
        lab.pki, remote=lab.ns.server_ip,
        extra="management /run/openvpn-client/test.sock unix\n"))
    plan = actions.plan_hook_install(host, TEST_CONFIG)
    assert [e.path.name if isinstance(e, FileEdit) else e for e in plan.steps] == [
        "test.conf", "zsn-resolved-hook"]
    plan.apply()
    assert actions.plan_hook_install(host, TEST_CONFIG).steps == []  # idempotent

    result = actions.control(host, UNIT, "start")
    assert result.ok, result.describe()

    def connected() -> object:
        (conn,) = connections(host)
        return conn if conn.live and conn.live.state == "CONNECTED" else None

    try:
        conn = wait_until(connected, 30, "management state CONNECTED")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{journal_tail(lab)}") from None
    assert conn.unit is not None
    assert (conn.unit.active_state, conn.unit.sub_state) == ("active", "running")
    assert conn.unit.main_pid > 0
    assert conn.live.tunnel_ipv4.startswith("10.87.0.")
    assert conn.live.remote == lab.ns.server_ip
    assert conn.live.bytes_in and conn.live.bytes_out
    assert conn.summary is not None and conn.summary.remotes[0].host == lab.ns.server_ip

    ifindex = tun_index(lab.ns.client_ns)
    assert ifindex is not None
    exported = json.loads(zsn_export(lab, "openvpn"))["openvpn"]
    (entry,) = exported["connections"]
    assert entry["unit_state"]["active"] == "active" and entry["live"]["state"] == "CONNECTED"
    assert not entry["errors"] and "BEGIN PRIVATE KEY" not in json.dumps(exported)
    metrics = zsn_export(lab, "openvpn", "--format", "prometheus")
    assert 'zsn_openvpn_connected{unit="openvpn-client@test.service"' in metrics
    dns = wait_until(lambda: (d := link_dns(lab, ifindex)).servers and d, 10, "link DNS set")
    assert dns.servers == ("10.87.0.1",)
    assert "zov.test" in dns.domains
    assert dns.default_route is False  # split DNS: only zov.test goes to the tunnel

    lines = wait_until(lambda: [
        line.message for line in unit_lines(host, UNIT, lines=200)
        if "zsn-resolved-hook" in line.message or "Initialization" in line.message
    ], 10, "hook and OpenVPN lines in the journal")
    assert any("Initialization Sequence Completed" in m for m in lines)
    assert any("DNS 10.87.0.1" in m for m in lines)

    result = actions.control(host, UNIT, "stop")
    assert result.ok, result.describe()
    state = run_sync(host, lambda bus: Systemd(bus).unit_state(UNIT))
    assert state.active_state == "inactive"
    assert tun_index(lab.ns.client_ns) is None
    # The link is gone and resolved holds nothing for it.
    with pytest.raises(BusError, match="(?i)link"):
        link_dns(lab, ifindex)
    assert any("reverted" in line.message for line in unit_lines(host, UNIT, lines=200))

    # With the unit stopped, the management socket is gone: a specific message.
    endpoint = management.Endpoint(unix_path=host.path("/run/openvpn-client/test.sock"))
    with pytest.raises(SocketError, match="management socket is gone"):
        management.query(endpoint)


def test_route_all_dns_sets_default_route(ovpn_lab: OvpnLab) -> None:
    lab = ovpn_lab
    host = lab.container.host
    actions.plan_hook_install(host, TEST_CONFIG, route_all_dns=True).apply()
    try:
        assert actions.control(host, UNIT, "restart").ok
        ifindex = wait_until(lambda: tun_index(lab.ns.client_ns), 15, "tun device")
        dns = wait_until(lambda: (d := link_dns(lab, ifindex)).servers and d, 10, "link DNS")
        assert "~." in dns.domains and dns.default_route is True
    finally:
        assert actions.control(host, UNIT, "stop").ok
    # Installing again without a choice keeps route-all; back to split DNS on request.
    assert actions.plan_hook_install(host, TEST_CONFIG).steps == []
    actions.plan_hook_install(host, TEST_CONFIG, route_all_dns=False).apply()


def test_enable_and_disable_change_unit_file_state(ovpn_lab: OvpnLab) -> None:
    lab = ovpn_lab
    host = lab.container.host

    def file_state() -> str:
        return run_sync(host, lambda bus: Systemd(bus).unit_state(UNIT)).unit_file_state

    changes = actions.set_enabled(host, UNIT, True)
    assert any(c.kind == "symlink" for c in changes)
    assert file_state() == "enabled"
    assert host.path("/etc/systemd/system/multi-user.target.wants/" + UNIT).is_symlink()
    actions.set_enabled(host, UNIT, False)
    assert file_state() == "disabled"


def zsn_vpn(lab: OvpnLab, *args: str) -> subprocess.CompletedProcess[str]:
    """`zsn --root CONTAINER vpn ...` as a script would run it."""
    return subprocess.run(
        [sys.executable, "-m", "zsn", "--root", str(lab.container.root), "vpn", *args],
        capture_output=True, text=True, timeout=120, check=False,
        cwd=Path(__file__).parents[2],
    )


def test_vpn_commands_drive_the_unit_over_the_bus(ovpn_lab: OvpnLab) -> None:
    lab = ovpn_lab
    host = lab.container.host
    config = host.path(TEST_CONFIG.path)
    before = config.read_bytes()
    dry = zsn_vpn(lab, "hook", "remove", "test", "--dry-run")
    assert dry.returncode == 0 and "Plan: remove the DNS hook" in dry.stdout
    assert "-up /etc/openvpn/zsn-resolved-hook" in dry.stdout
    assert config.read_bytes() == before

    started = zsn_vpn(lab, "start", "client/test")
    assert started.returncode == 0, started.stderr
    assert "done: start openvpn-client@test.service" in started.stderr
    try:
        listed = wait_until(lambda: (r := zsn_vpn(lab, "list")).returncode == 0
                            and "CONNECTED" in r.stdout and r.stdout, 30, "CONNECTED in list")
        (row,) = [line for line in listed.splitlines() if line.startswith("test ")]
        assert row.split()[1:5] == ["client", "active/running", "disabled", "CONNECTED"]
        assert row.split()[5].startswith("10.87.0.")
        shown = zsn_vpn(lab, "show", "test")
        assert shown.returncode == 0 and "tunnel:     CONNECTED 10.87.0." in shown.stdout
        listed_json = json.loads(zsn_vpn(lab, "list", "--json").stdout)
        assert listed_json[0]["unit_state"]["sub"] == "running"
    finally:
        stopped = zsn_vpn(lab, "stop", "test")
    assert stopped.returncode == 0, stopped.stderr
    state = run_sync(host, lambda bus: Systemd(bus).unit_state(UNIT))
    assert state.active_state == "inactive"

    assert zsn_vpn(lab, "enable", "test").returncode == 0
    assert run_sync(host, lambda bus: Systemd(bus).unit_state(UNIT)).unit_file_state == \
        "enabled"
    assert zsn_vpn(lab, "disable", "openvpn-client@test.service").returncode == 0
    assert run_sync(host, lambda bus: Systemd(bus).unit_state(UNIT)).unit_file_state == \
        "disabled"

    missing = zsn_vpn(lab, "start", "nosuch")
    assert missing.returncode == 2
    assert missing.stderr == "zsn vpn: invalid: no OpenVPN connection named 'nosuch' " \
        "(known: test)\n"


def test_bad_input_gives_specific_messages_and_writes_nothing(ovpn_lab: OvpnLab) -> None:
    lab = ovpn_lab
    host = lab.container.host
    with pytest.raises(ZsnError, match="openvpn-nosuch@x.service: no such unit"):
        actions.control(host, "openvpn-nosuch@x.service", "start")
    # systemd itself refuses: a unit name that is not valid.
    with pytest.raises(BusError, match="start bad/name.service"):
        run_sync(host, lambda bus: Systemd(bus).start("bad/name.service"))
    # resolved refuses a link that does not exist.
    with pytest.raises(BusError, match="resolved link 99999"):
        run_sync(host, lambda bus: Resolved(bus).link(99999))

    broken = ConfigFile("client", "broken", config_path("client", "broken"))
    path = host.path(broken.path)
    path.write_text("client\n<ca>\n-----BEGIN CERTIFICATE-----\n")
    before = path.read_bytes()
    try:
        with pytest.raises(ParseError, match="<ca> block is never closed"):
            actions.plan_hook_install(host, broken)
        assert path.read_bytes() == before
        assert not path.with_name("broken.conf.zsn-bak").exists()
        listed = {c.config.name: c for c in connections(host)}
        assert any("never closed" in e for e in listed["broken"].errors)
    finally:
        path.unlink()


def test_bus_gone_is_a_clear_error(tmp_path: Path) -> None:
    from zsn.system.host import Host

    with pytest.raises(BusError, match="socket not found"):
        run_sync(Host(tmp_path), lambda bus: Systemd(bus).unit_state(UNIT))
    assert isinstance(SystemBus(Host(tmp_path)), SystemBus)
