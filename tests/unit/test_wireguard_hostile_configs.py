"""WireGuard configs zsn did not write, read as data (issue 10, items 8-10): two
[Interface] sections, a stale peer routing the whole VPN subnet, names in comments
that would be paths."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from zsn.cli import main as cli_main
from zsn.errors import ParseError, UnsafeStateError
from zsn.system import files
from zsn.system.host import Host
from zsn.wireguard import interfaces, lint
from zsn.wireguard.config import parse


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture
def host(tmp_path: Path) -> Host:
    h = Host(tmp_path)
    interfaces.plan_create_interface(h, "wg0", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    return h


def _append(host: Host, text: str) -> None:
    path = host.path("/etc/wireguard/wg0.conf")
    path.write_text(path.read_text() + text)


# -- item 8: one [Interface] per file ---------------------------------------------

TWO_INTERFACES = """\
[Interface]
Address = 10.66.0.1/24
ListenPort = 51820

[Peer]
PublicKey = 8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=
AllowedIPs = 10.66.0.2/32

[Interface]
ListenPort = 51821
"""


def test_a_second_interface_section_is_refused_with_both_lines() -> None:
    with pytest.raises(ParseError, match=r"second \[Interface\].*line 1") as refused:
        parse(TWO_INTERFACES, "wg0.conf")
    assert refused.value.line == 9


def test_actions_and_lint_on_a_file_with_two_interfaces(host: Host,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    _append(host, "\n[Interface]\nListenPort = 51821\n")
    before = _tree(host.root)
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "second [Interface]" in line and "wg0.conf:7: " in line
    assert _tree(host.root) == before
    [finding] = [f for f in lint.lint(host) if f.id == "WG000"]
    assert "second [Interface]" in finding.message


# -- item 9: a stale peer routing the whole VPN subnet ----------------------------

STALE = """
# stale
[Peer]
PublicKey = 8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=
AllowedIPs = 10.66.0.0/24
"""


def test_a_peer_routing_the_whole_subnet_does_not_use_up_the_addresses(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    _append(host, STALE)
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 0
    out = capsys.readouterr()
    assert "Address = 10.66.0.2/32" in out.out
    [warning] = [line for line in out.err.splitlines() if line.startswith("warning:")]
    assert "'stale'" in warning and "10.66.0.0/24" in warning and "WG001" in warning
    assert [f.id for f in lint.lint(host) if f.id == "WG001"] == ["WG001"]


def test_an_address_given_inside_a_routed_network_is_taken_with_the_warning(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    _append(host, STALE)
    root = str(host.root)
    assert cli_main(["--root", root, "peer", "add", "wg0", "bob", "--ip", "10.66.0.9",
                     "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "+AllowedIPs = 10.66.0.9/32" in plan
    assert "warning: " in plan and "'stale'" in plan
    # A host address another peer holds is still refused.
    assert cli_main(["--root", root, "peer", "add", "wg0", "alice"]) == 0
    capsys.readouterr()
    assert cli_main(["--root", root, "peer", "add", "wg0", "carol", "--ip", "10.66.0.2"]) == 2
    assert "already used by peer 'alice'" in capsys.readouterr().err


# -- item 10: names read from files are data, never paths -------------------------

PATH_NAMED = """
# ../../../resolv
[Peer]
PublicKey = 8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=
AllowedIPs = 10.66.0.7/32
"""


@pytest.fixture
def path_named(host: Host) -> Host:
    """wg0 with a peer whose name comment is a path to /etc/resolv.conf from the
    clients folder, and that file."""
    _append(host, PATH_NAMED)
    host.path("/etc/resolv.conf").write_text("nameserver 192.0.2.53\n")
    host.path("/etc/wireguard/clients/wg0").mkdir(parents=True)  # as after any peer add
    return host


@pytest.mark.parametrize("action", [["remove"], ["disable"], ["routes", "192.168.9.0/24"],
                                    ["show"]])
def test_actions_on_a_peer_named_like_a_path_are_refused(
        path_named: Host, action: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    before = _tree(path_named.root)
    argv = ["--root", str(path_named.root), "peer", action[0], "wg0", "../../../resolv",
            *action[1:]]
    assert cli_main(argv) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "'../../../resolv'" in line and "line 7" in line and "'/'" in line
    assert _tree(path_named.root) == before


def test_renaming_such_a_peer_touches_no_file_outside(path_named: Host) -> None:
    key = "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE="
    assert cli_main(["--root", str(path_named.root), "peer", "rename", "wg0", key,
                     "laptop"]) == 0
    assert path_named.path("/etc/resolv.conf").read_text() == "nameserver 192.0.2.53\n"
    assert not path_named.path("/etc/wireguard/clients/wg0/laptop.conf").exists()
    text = path_named.path("/etc/wireguard/wg0.conf").read_text()
    assert "# laptop\n[Peer]" in text and "resolv" not in text


def test_lint_names_the_peer_and_its_line(path_named: Host) -> None:
    [finding] = [f for f in lint.lint(path_named) if f.id == "WG010"]
    assert finding.line == 7 and "'../../../resolv'" in finding.message
    assert "WG010" in lint.RULES


def test_a_name_with_spaces_stays_a_name_but_never_a_path(host: Host) -> None:
    _append(host, PATH_NAMED.replace("../../../resolv", "alice laptop"))
    odd = host.path("/etc/wireguard/clients/wg0/alice laptop.conf")
    odd.parent.mkdir(parents=True, exist_ok=True)
    odd.write_text("not zsn's\n")
    assert cli_main(["--root", str(host.root), "peer", "remove", "wg0", "alice laptop"]) == 0
    assert odd.read_text() == "not zsn's\n"  # zsn never wrote such a file: left alone
    assert not [f for f in lint.lint(host) if f.id == "WG010"]


def test_interface_names_in_zsn_settings_are_checked_where_read(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    settings_path = host.path("/etc/zsn/wireguard.json")
    settings_path.write_text('{"wg0": {"endpoint_host": "vpn.example.com", '
                             '"links": ["../../etc/x"]}}\n')
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "wireguard.json" in line and "'../../etc/x'" in line
    assert [f.id for f in lint.lint(host) if "wireguard.json" in f.message] == ["WG010"]


# -- item 7: symlinks --------------------------------------------------------------

def test_a_config_that_is_a_symlink_is_edited_through_to_its_target(host: Host) -> None:
    config = host.path("/etc/wireguard/wg0.conf")
    kept = host.path("/srv/wireguard/wg0.conf")
    kept.parent.mkdir(parents=True, mode=0o700)
    config.rename(kept)
    config.symlink_to("../../srv/wireguard/wg0.conf")
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 0
    assert config.is_symlink() and os.readlink(config) == "../../srv/wireguard/wg0.conf"
    assert [p.name for p in parse(kept.read_text()).peers] == ["alice"]
    assert host.path("/srv/wireguard/wg0.conf.zsn-bak").exists()
    assert not host.path("/etc/wireguard/wg0.conf.zsn-bak").exists()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


@pytest.mark.parametrize("link", ["clients", "clients/wg0"])
def test_a_clients_folder_linked_to_a_shared_directory_is_refused(
        host: Host, link: str, capsys: pytest.CaptureFixture[str]) -> None:
    shared = host.path("/tmp/shared")
    shared.mkdir(parents=True)
    os.chmod(shared, 0o1777)
    linked = host.path(f"/etc/wireguard/{link}")
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(shared)
    before = _tree(host.root)
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert f"{link}: is a symbolic link (to {shared})" in line
    assert _tree(host.root) == before and not any(shared.iterdir())


def test_a_clients_folder_linked_even_to_a_private_directory_is_refused(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    """Client configs hold keys zsn generated and hands out (``peer show``): its own
    state, reached through no link (the state rule), wherever the link leads."""
    private = host.path("/srv/wireguard-clients")
    private.mkdir(parents=True, mode=0o700)
    host.path("/etc/wireguard/clients").symlink_to("/srv/wireguard-clients")
    before = _tree(host.root)
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "/etc/wireguard/clients: is a symbolic link" in line
    assert f"rm {host.path('/etc/wireguard/clients')} && cp -a {private} " in line
    assert _tree(host.root) == before


def test_a_new_file_is_never_created_through_a_symlink(host: Host) -> None:
    outside = host.path("/etc/cron.d/zsn-planted")
    outside.parent.mkdir(parents=True)
    client = host.path("/etc/wireguard/clients/wg0/alice.conf")
    client.parent.mkdir(parents=True, mode=0o700)
    client.symlink_to(outside)  # dangling: writing through it would create the file
    assert cli_main(["--root", str(host.root), "peer", "add", "wg0", "alice"]) == 2
    assert not outside.exists()
    with pytest.raises(UnsafeStateError, match="alice.conf: is a symbolic link"):
        files.write_atomic(client, "x\n", previous=None)
    assert not outside.exists()
