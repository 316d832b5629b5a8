"""The state rule (`zsn.system.own_state`): what zsn reads back as its own state is
trusted only when nobody but root (or zsn's user) could have put it there. Hostile
trees are built here: folders others may write to, files of another user, links,
FIFOs; each store zsn keeps is refused in them with one line naming the path and the
fix, and nothing is read or written."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from zsn import cli
from zsn.errors import UnsafeStateError, ZsnError
from zsn.exporter.webconfig import WebConfig
from zsn.system import files, own_state
from zsn.system.host import Host
from zsn.wireguard import hooks, settings
from zsn.wireguard.history import HistoryStore
from zsn.zfs import transfers

PACKAGE = Path(__file__).resolve().parents[2] / "zsn"
NOBODY = 65534
RECORD = "/run/zsn/changes/abcdef/change.json"


@pytest.fixture
def host(tmp_path: Path) -> Host:
    root = tmp_path / "root"
    root.mkdir(mode=0o755)
    host = Host(root)
    for folder in ("/etc/zsn", "/run/zsn/changes/abcdef", "/var/lib/zsn/transfers",
                   "/etc/wireguard/clients/wg0"):
        host.path(folder).mkdir(parents=True, mode=0o755)
    host.path(RECORD).write_text("{}\n")
    return host


def tree(root: Path) -> dict[str, tuple[int, int, bytes | str | None]]:
    """Every entry under `root`: mode, owner and content (a link's target)."""
    found: dict[str, tuple[int, int, bytes | str | None]] = {}
    for folder, names, file_names in os.walk(root):
        for name in [*names, *file_names]:
            path = Path(folder) / name
            st = path.lstat()
            content: bytes | str | None = None
            if stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                content = path.read_bytes()
            found[str(path.relative_to(root))] = (st.st_mode, st.st_uid, content)
    return found


def test_a_store_as_zsn_makes_it_passes(host: Host) -> None:
    found = own_state.check(host.path(RECORD))
    assert found is not None and stat.S_ISREG(found.st_mode)
    assert own_state.check(host.path("/run/zsn/changes"), folder=True) is not None
    assert own_state.check(host.path("/run/zsn/changes/012345/change.json")) is None
    assert own_state.check(host.path("/var/lib/zsn/nothing/yet"), folder=True) is None
    assert own_state.is_own_state(host.path(RECORD))
    assert not own_state.is_own_state(host.path("/etc/zsn-other/x"))
    assert not own_state.is_own_state(host.path("/etc/wireguard/wg0.conf"))


def _writable(host: Host, system_path: str) -> None:
    os.chmod(host.path(system_path), 0o777)


def _group_writable(host: Host, system_path: str) -> None:
    os.chmod(host.path(system_path), 0o664)


def _nobodys(host: Host, system_path: str) -> None:
    os.chown(host.path(system_path), NOBODY, NOBODY)


def _linked(host: Host, system_path: str) -> None:
    path = host.path(system_path)
    path.rename(host.path("/srv-elsewhere"))
    path.symlink_to("/srv-elsewhere")


def _fifo(host: Host, system_path: str) -> None:
    path = host.path(system_path)
    path.unlink()
    os.mkfifo(path)


def _shared(host: Host, system_path: str) -> None:
    os.chmod(host.path(system_path), 0o1777)


# (what is done, to which part, the words and the fix the line must have)
HOSTILE = {
    "the store is world-writable": (_writable, "/run/zsn/changes",
                                    "writable by group and others (mode 0777)",
                                    "chmod go-w {path}"),
    "the record is group-writable": (_group_writable, RECORD,
                                     "writable by group (mode 0664)", "chmod go-w {path}"),
    "the store is another user's": (_nobodys, "/run/zsn",
                                    "owned by nobody", "chown root {path}"),
    "the record is another user's": (_nobodys, RECORD, "owned by nobody", "chown root {path}"),
    "the store is a link": (_linked, "/run/zsn/changes",
                            "is a symbolic link (to /srv-elsewhere)",
                            "rm {path} && cp -a {root}/srv-elsewhere {path}"),
    "the record is a FIFO": (_fifo, RECORD, "is not a regular file",
                             "mv {path} {path}.unsafe"),
    "a folder above is writable": (_writable, "/run", "writable by group and others",
                                   "chmod go-w {path}"),
    "a folder above is shared": (_shared, "/run", "a folder everyone may write to "
                                 "(mode 1777)", "keep it elsewhere"),
    "the tree's root is writable": (_writable, "/", "writable by group and others",
                                    "chmod go-w {path}"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_store_is_refused_naming_the_path_and_the_fix(host: Host, case: str) -> None:
    spoil, part, words, fix = HOSTILE[case]
    spoil(host, part)
    path = host.path(part)
    with pytest.raises(UnsafeStateError) as refused:
        own_state.check(host.path(RECORD))
    [line] = str(refused.value).splitlines()
    assert line.startswith(f"{path}: {words}"), line
    assert fix.format(path=path, root=host.root) in line


def test_zsn_s_own_user_may_own_its_state_when_not_root(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    for folder, _names, file_names in os.walk(host.root):
        for name in [".", *file_names]:
            os.chown(Path(folder) / name, 1000, 1000)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert own_state.check(host.path(RECORD)) is not None
    os.chown(host.path("/run/zsn"), NOBODY, NOBODY)
    with pytest.raises(UnsafeStateError, match=r"owned by nobody; zsn trusts its own state "
                       r"only where root or \S+ alone can change it: chown \S+ "):
        own_state.check(host.path(RECORD))


def test_folders_zsn_makes_for_its_state_are_its_own_whatever_the_umask(host: Host) -> None:
    old = os.umask(0o002)
    try:
        files.make_dirs(host.path("/var/lib/zsn/policies/tank"))
        files.make_dirs(host.path("/etc/zsn-not-state/x"))  # not zsn's: the umask's
    finally:
        os.umask(old)
    for folder in ("/var/lib/zsn/policies", "/var/lib/zsn/policies/tank"):
        assert stat.S_IMODE(host.path(folder).stat().st_mode) == 0o755
    assert stat.S_IMODE(host.path("/etc/zsn-not-state").stat().st_mode) == 0o775
    os.chmod(host.path("/var/lib/zsn"), 0o777)
    with pytest.raises(UnsafeStateError, match="/var/lib/zsn: writable"):
        files.make_dirs(host.path("/var/lib/zsn/policies/tank/more"))
    assert not host.path("/var/lib/zsn/policies/tank/more").exists()


# -- every store zsn keeps: refused, nothing read or written -------------------------------


def test_pending_and_rollback_refuse_a_store_others_can_write(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    _writable(host, "/run/zsn/changes")
    before = tree(host.root)
    for argv in (["pending"], ["pending", "--all"], ["rollback", "abcdef"],
                 ["confirm", "abcdef"]):
        assert cli.main(["--root", str(host.root), *argv]) == 1
        [line] = capsys.readouterr().err.splitlines()
        assert f"{host.path('/run/zsn/changes')}: writable by group and others" in line
        assert f"chmod go-w {host.path('/run/zsn/changes')}" in line
    assert tree(host.root) == before


def test_a_record_of_another_user_is_not_acted_on(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    _nobodys(host, RECORD)
    before = tree(host.root)
    assert cli.main(["--root", str(host.root), "rollback", "abcdef"]) == 1
    assert f"{host.path(RECORD)}: owned by nobody" in capsys.readouterr().err
    assert tree(host.root) == before


@pytest.mark.parametrize("spoil", [_writable, _nobodys, _linked])
def test_the_history_store_is_refused_in_a_folder_others_can_change(
        host: Host, spoil: object) -> None:
    assert callable(spoil)
    spoil(host, "/var/lib/zsn")
    _history_refused_naming(host, "/var/lib/zsn")


def _history_refused_naming(host: Host, part: str) -> None:
    """The history store is refused, opened to record or to read, naming `part`, and
    nothing in the tree changes."""
    before = tree(host.root)
    for create in (True, False):
        with pytest.raises(UnsafeStateError, match=f"^{re.escape(str(host.path(part)))}: "):
            HistoryStore.open(host, create=create)
    assert tree(host.root) == before


def test_settings_and_hooks_others_could_write_are_not_read(host: Host) -> None:
    toml = host.path("/etc/zsn/history.toml")
    toml.write_text('on_connect = ["/usr/local/bin/peer-event"]\n')
    assert hooks.load(host).hooks == {"connect": ("/usr/local/bin/peer-event",)}
    os.chmod(toml, 0o666)  # anyone could name a program zsn runs as root
    with pytest.raises(UnsafeStateError, match="history.toml: writable by group and others"):
        hooks.load(host)
    host.path("/etc/zsn/wireguard.json").write_text('{"wg0": {"endpoint_host": "a.example"}}\n')
    assert settings.load(host).get("wg0").endpoint_host == "a.example"
    _nobodys(host, "/etc/zsn")
    with pytest.raises(UnsafeStateError, match="/etc/zsn: owned by nobody"):
        settings.load(host)


def test_transfer_records_in_a_writable_folder_are_not_read(host: Host) -> None:
    assert transfers.read_transfers(host) == {"running": [], "last": []}
    _writable(host, "/var/lib/zsn/transfers")
    with pytest.raises(UnsafeStateError, match="transfers: writable"):
        transfers.read_transfers(host)


def test_a_web_config_others_could_write_is_refused(host: Host) -> None:
    config = host.path("/etc/zsn/web.yml")
    config.write_text("http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    WebConfig.load(host, "/etc/zsn/web.yml")
    os.chmod(config, 0o646)
    with pytest.raises(ZsnError, match="web.yml: writable by others"):
        WebConfig.load(host, "/etc/zsn/web.yml")


def test_client_configs_in_a_folder_others_can_write_are_not_handed_out(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    host.path("/etc/wireguard/wg0.conf").write_text(
        "[Interface]\nAddress = 10.66.0.1/24\nListenPort = 51820\n"
        "PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n\n"
        "# alice: client of wg0, added by zsn\n[Peer]\n"
        "PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\n"
        "AllowedIPs = 10.66.0.2/32\n")
    client = host.path("/etc/wireguard/clients/wg0/alice.conf")
    client.write_text("[Interface]\nPrivateKey = planted\n")
    _writable(host, "/etc/wireguard/clients/wg0")
    assert cli.main(["--root", str(host.root), "peer", "show", "wg0", "alice"]) == 1
    captured = capsys.readouterr()
    assert "planted" not in captured.out
    [line] = captured.err.splitlines()
    assert f"{host.path('/etc/wireguard/clients/wg0')}: writable by group and others" in line


# -- no module opens zsn's state without the rule ----------------------------------------

OUR_PATH = re.compile(
    r"""["'](/(?:etc|run|var|srv|opt|usr/local)(?:/[^"'/]+)*/zsn(?:/[^"']*)?)["']""")
"""A folder of zsn's own (``/var/lib/zsn/...``), not a file zsn writes for another program
in that program's folder (``/etc/netplan/90-zsn.yaml``: a config like any other)."""
NOT_STATE = {
    "zsn/system/networkd_sandbox.py": "networkd's private mounts inside its own namespaces",
}
OPENED_ELSEWHERE = {
    "zsn/wireguard/history.py": "SQLite opens the store itself",
    "zsn/exporter/webconfig.py": "the web config is wherever the admin keeps it",
}
"""Modules that reach zsn's state other than through `zsn.system.files` below
`own_state.PLACES`: each calls `own_state.check` itself."""
SQLITE_SOURCES = {
    "zsn/wireguard/imports.py": "wg-easy's database: an import source, never zsn's state",
}


def _modules() -> list[tuple[str, str]]:
    return [(str(path.relative_to(PACKAGE.parent)), path.read_text())
            for path in sorted(PACKAGE.rglob("*.py"))]


def test_every_path_of_zsn_s_own_lies_where_the_rule_applies() -> None:
    outside = []
    for relative, text in _modules():
        if relative in NOT_STATE:
            continue
        for match in OUR_PATH.finditer(text):
            place = match.group(1)
            if not any(place == top or place.startswith(top + "/") for top in own_state.PLACES):
                outside.append(f"{relative}: {place}")
    assert outside == [], ("zsn's own state lives below own_state.PLACES, where "
                           "zsn.system.files applies the state rule:\n" + "\n".join(outside))


def test_a_module_that_opens_zsn_s_state_itself_calls_the_rule() -> None:
    missing = []
    for relative, text in _modules():
        opens_itself = "sqlite3.connect(" in text and relative not in SQLITE_SOURCES
        if (opens_itself or relative in OPENED_ELSEWHERE) and "own_state.check(" not in text:
            missing.append(relative)
    assert missing == [], ("these open zsn's own state without the state rule "
                           "(own_state.check):\n" + "\n".join(missing))


def test_a_tree_that_is_not_there_holds_no_state(tmp_path: Path) -> None:
    host = Host(tmp_path / "nowhere")
    assert own_state.check(host.path(RECORD)) is None
    assert files.list_files(host.path("/run/zsn/changes")) == []


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("spoil", [_writable, _nobodys, _linked])
def test_the_history_store_s_journal_is_held_to_the_rule_too(
        host: Host, side: str, spoil: object) -> None:
    """SQLite reads its write-ahead log and journal as part of the store: one that others
    could have written (pages of their choosing) is refused like the store itself."""
    assert callable(spoil)
    HistoryStore.open(host).close()
    part = f"/var/lib/zsn/history.sqlite{side}"
    host.path(part).write_bytes(b"")
    os.chmod(host.path(part), 0o600)
    spoil(host, part)
    _history_refused_naming(host, part)
