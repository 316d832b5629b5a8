"""Addresses in the forms wg-quick and resolved accept, nothing else (issue 10, item 3).

Python's `ipaddress` takes IPv6 scope ids (``fd77::9%eth0``) that `wg`, `ip address`
and clients refuse; a config written with one does not come up. DNS servers must be
IP addresses: zsn's OpenVPN DNS hook passed ``.....`` to resolvectl, which failed
the connection's ``up``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.openvpn.test_hook import captured_env, run_hook
from zsn.cli import main as cli_main
from zsn.errors import ValidationError
from zsn.system.host import Host
from zsn.wireguard import addressing, interfaces

HOOK_ENV = Path(__file__).parent.parent / "fixtures" / "openvpn" / "hook-env-up.txt"

REFUSED: list[tuple[Callable[[str], object], str]] = [
    (addressing.check_interface_address, "fd77::1%eth0/64"),
    (addressing.check_network, "fd77::%eth0/64"),
    (addressing.check_ip, "fd77::9%eth0"),
    (addressing.check_dns, "fd77::53%eth0"),
    (addressing.check_dns, "....."),
    (addressing.check_dns, "10.0.0.256"),
    (addressing.check_dns, "10.1"),
    (addressing.check_dns, "fd77:::1"),
    (addressing.check_endpoint_host, "fe80::1%eth0"),
    (addressing.check_endpoint_host, "[fe80::1%eth0]"),
]


@pytest.mark.parametrize(("check", "text"), REFUSED)
def test_forms_wg_quick_refuses_are_refused(check: Callable[[str], object], text: str) -> None:
    with pytest.raises(ValidationError):
        check(text)


def test_what_wg_quick_takes_still_passes() -> None:
    assert addressing.check_dns("fd77::53") == "fd77::53"
    assert addressing.check_dns("corp.example.com") == "corp.example.com"
    assert addressing.check_endpoint_host("[2001:db8::1]") == "2001:db8::1"
    assert str(addressing.check_network("fd77::/64")) == "fd77::/64"


@pytest.fixture
def host(tmp_path: Path) -> Host:
    h = Host(tmp_path)
    interfaces.plan_create_interface(h, "wg0", ["10.66.0.1/24", "fd66::1/64"], 51820,
                                     "vpn.example.com").apply()
    return h


@pytest.mark.parametrize("args", [
    ["--ip", "fd66::9%eth0"],
    ["--ip", "fd66::9%eth0/128"],
    ["--route", "fd99::%eth0/64"],
    ["--dns", "fd66::53%eth0"],
    ["--dns", "....."],
    ["--endpoint", "[fe80::1%eth0]:51820"],
])
def test_peer_add_refuses_scope_ids_and_non_addresses(host: Host, args: list[str],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.read_bytes() for p in host.root.rglob("*") if p.is_file()}
    code = cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice", *args])
    assert code == 2, capsys.readouterr()
    [line] = capsys.readouterr().err.splitlines()
    assert "zsn peer: invalid: " in line
    assert {p: p.read_bytes() for p in host.root.rglob("*") if p.is_file()} == before


def test_create_refuses_a_scoped_address(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="scope"):
        interfaces.plan_create_interface(Host(tmp_path), "wg0", ["fd77::1%eth0/64"], 51820)


def _accepted_by_python(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return "%" not in text


@pytest.mark.parametrize("value", [".....", "1.2.3", "256.1.1.1", "01.2.3.4", "1.2.3.4.",
                                   "fd77::9%eth0", ":::", "1:2", "1::2::3", ":1::", "1.2.3.4::",
                                   "12345::1", "::1.2.3"])
def test_the_dns_hook_ignores_what_is_not_an_ip_address(tmp_path: Path, value: str) -> None:
    env = {**captured_env(HOOK_ENV), "foreign_option_3": f"dhcp-option DNS {value}"}
    code, calls, log = run_hook(tmp_path, env)
    assert code == 0, log
    assert calls[0] == "dns tun0 10.87.0.1"
    assert f"ignoring bad DNS server from server: {value}" in log


@pytest.mark.parametrize("value", ["10.87.0.53", "fd87::53", "::1", "::ffff:10.0.0.1",
                                   "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "::", "FD87::5:3"])
def test_the_dns_hook_passes_ip_addresses(tmp_path: Path, value: str) -> None:
    env = {**captured_env(HOOK_ENV), "foreign_option_3": f"dhcp-option DNS6 {value}"}
    code, calls, log = run_hook(tmp_path, env)
    assert code == 0, log
    assert calls[0] == f"dns tun0 10.87.0.1 {value}"


_address_like = st.text(alphabet="0123456789abcdefABCDEF:.%", min_size=1, max_size=24)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(_address_like, st.ip_addresses().map(str)))
def test_the_dns_hook_agrees_with_ipaddress(tmp_path: Path, value: str) -> None:
    env = {**captured_env(HOOK_ENV), "foreign_option_3": f"dhcp-option DNS {value}"}
    _code, calls, _log = run_hook(tmp_path, env)
    (tmp_path / "bin" / "calls").unlink(missing_ok=True)
    passed = bool(calls) and calls[0] == f"dns tun0 10.87.0.1 {value}"
    assert passed == _accepted_by_python(value), value
