"""Names are checked as whole strings (issue 10, item 4): ``$`` also matches before a
trailing newline, so ``wg0\\n`` passed a ``^...$`` check and became a file name.
A name with a trailing newline is refused everywhere, typed or on the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from zsn.cli import main as cli_main
from zsn.errors import ValidationError
from zsn.openvpn.config import validate_name
from zsn.system import journal
from zsn.system.host import Host
from zsn.wireguard import addressing, interfaces
from zsn.wireguard.config import check_peer_name
from zsn.wireguard.keys import is_valid_key

KEY = "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE="

VALIDATORS: dict[str, tuple[Callable[[str], object], str]] = {
    "peer name": (check_peer_name, "alice"),
    "interface name": (addressing.check_interface_name, "wg0"),
    "connection name": (validate_name, "office"),
    "endpoint host": (addressing.check_endpoint_host, "vpn.example.com"),
    "DNS search domain": (addressing.check_dns, "corp.example.com"),
    "unit name": (lambda unit: journal.unit_lines(Host(Path("/nonexistent")), unit),
                  "openvpn-client@office.service"),
}


@pytest.mark.parametrize("what", sorted(VALIDATORS))
@pytest.mark.parametrize("tail", ["\n", "\r\n", "\n\n"])
def test_a_trailing_newline_is_refused(what: str, tail: str) -> None:
    check, good = VALIDATORS[what]
    with pytest.raises(ValidationError):
        check(good + tail)


def test_a_key_with_a_trailing_newline_is_not_a_key() -> None:
    assert is_valid_key(KEY)
    assert not is_valid_key(KEY + "\n")


@pytest.fixture
def host(tmp_path: Path) -> Host:
    h = Host(tmp_path)
    interfaces.plan_create_interface(h, "wg0", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    (tmp_path / "etc/openvpn/client").mkdir(parents=True)
    return h


@pytest.mark.parametrize("argv", [
    ["wg", "create", "wg1\n", "--address", "10.67.0.1/24", "--port", "51821"],
    ["wg", "endpoint", "wg0", "vpn.example.com\n"],
    ["peer", "add", "wg0", "alice\n"],
    ["peer", "add", "wg0", "alice", "--endpoint", "vpn.example.com\n"],
    ["peer", "add", "wg0", "alice", "--dns", "corp.example.com\n"],
    ["vpn", "import", "/dev/null", "--name", "office\n"],
])
def test_commands_refuse_names_with_a_newline_and_write_nothing(
        host: Host, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.read_bytes() for p in host.root.rglob("*") if p.is_file()}
    assert cli_main(["--root", str(host.root), *argv, "--dry-run"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert ": invalid: " in line
    assert {p: p.read_bytes() for p in host.root.rglob("*") if p.is_file()} == before


def test_rename_to_a_name_with_a_newline_is_refused(host: Host,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = str(host.root)
    assert cli_main(["--root", root, "peer", "add", "wg0", "alice"]) == 0
    capsys.readouterr()
    assert cli_main(["--root", root, "peer", "rename", "wg0", "alice", "bob\n"]) == 2
    assert "invalid" in capsys.readouterr().err
