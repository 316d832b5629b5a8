"""The import sources decoded strictly (``zsn wg import``): wg-easy's wg0.json and its
v15 database, PiVPN's setupVars.conf, a docker env file, a folder of wg-quick files,
each changed the way a damaged or hostile source would be. A source that is not what it
says is bad input: one line naming the file and the field, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

IMPORTS = Path(__file__).parent.parent / "fixtures" / "wireguard" / "imports"
REPO = Path(__file__).resolve().parents[2]


def zsn(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=60, check=False, cwd=REPO)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "etc/wireguard").mkdir(parents=True, mode=0o700)
    return tmp_path


def refused(root: Path, *args: str) -> str:
    before = sorted(p for p in root.rglob("*"))
    result = zsn(root, "wg", "import", *args, "--endpoint", "vpn.example.com")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert sorted(p for p in root.rglob("*")) == before  # nothing written
    return result.stderr


def v14(root: Path, change: Callable[[dict[str, object]], object]) -> str:
    document = json.loads((IMPORTS / "wg-easy/v14.0.0/wg0.json").read_text())
    text = change(document)
    folder = root / "srv/wg-easy"
    folder.mkdir(parents=True)
    (folder / "wg0.json").write_text(text if isinstance(text, str) else json.dumps(document))
    return "/srv/wg-easy"


def first_client(document: dict[str, object]) -> dict[str, object]:
    clients = document["clients"]
    assert isinstance(clients, dict)
    client: dict[str, object] = next(iter(clients.values()))
    return client


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: '{"server": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "wg0.json: nested more than 64 levels deep"),
    (lambda d: first_client(d).update(address=7), "wg0.json: clients[*].address: expected str, "
                                                  "got int"),
    (lambda d: first_client(d).update(address="10.8.0.300"), "wg0.json: clients[*]: "),
    (lambda d: first_client(d).pop("publicKey") and None, "wg0.json: clients[*]: object missing "
                                                 "required field publicKey"),
    (lambda d: first_client(d).update(enabled="yes"), "clients[*].enabled: expected bool"),
    (lambda d: d.update(server=[]), "wg0.json: server: expected object, got array"),
    (lambda d: "{", "wg0.json: not valid JSON"),
])
def test_a_damaged_wg_easy_v14_file_is_refused_naming_the_field(
        root: Path, change: Callable[[dict[str, object]], object], message: str) -> None:
    assert message in refused(root, "wg-easy", v14(root, change))


def v15(root: Path, statement: str | None, page: int | None = None) -> str:
    folder = root / "srv/wg-easy"
    folder.mkdir(parents=True)
    path = folder / "wg-easy.db"
    shutil.copyfile(IMPORTS / "wg-easy/v15/wg-easy.db", path)
    db = sqlite3.connect(path)
    with db:
        if statement:
            db.execute(statement)
        if page is not None:
            [(number,)] = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = "
                                     "'clients_table'")
    db.close()
    if page is not None:
        data = bytearray(path.read_bytes())
        data[(number - 1) * 4096:number * 4096] = b"\xa5" * 4096
        path.write_bytes(bytes(data))
    return "/srv/wg-easy"


@pytest.mark.parametrize(("statement", "message"), [
    ("UPDATE clients_table SET mtu = 'big'", "wg-easy.db: clients_table.mtu: expected int, "
                                             "got str"),
    ("UPDATE clients_table SET dns = '" + "[" * 5000 + "'", "wg-easy.db: dns: nested more "
                                                            "than 64 levels deep"),
    ("UPDATE clients_table SET server_allowed_ips = '[1]'", "server_allowed_ips[0]: expected "
                                                            "str, got int"),
    ("UPDATE clients_table SET ipv6_address = 'nope' WHERE id = (SELECT min(id) FROM "
     "clients_table)", "wg-easy.db: clients_table: "),
    ("UPDATE interfaces_table SET ipv4_cidr = '10.8.0.0/99'", "interfaces_table: "),
    (None, "not a wg-easy v15 database (database disk image is malformed)"),
])
def test_a_damaged_wg_easy_v15_database_is_refused_naming_the_column(
        root: Path, statement: str | None, message: str) -> None:
    where = v15(root, statement, page=None if statement else 1)
    assert message in refused(root, "wg-easy", where)


def test_bad_lines_in_pivpn_and_env_files_are_bad_input(root: Path) -> None:
    setup = root / "srv/pivpn/setupVars.conf"
    setup.parent.mkdir(parents=True)
    setup.write_text("pivpnDEV=wg0\nthis is not a setting\n")
    assert "setupVars.conf:2: not a KEY=value line" in refused(root, "pivpn", "/srv/pivpn")
    env = root / "srv/env"
    env.write_text("WG_HOST\n")
    where = v14(root, lambda d: None)
    assert "env:1: not a KEY=VALUE line" in refused(root, "wg-easy", where, "--env", "/srv/env")
