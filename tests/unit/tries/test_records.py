"""Records hold data, never programs (issue 32): an undo is a kind with checked
parameters, and zsn's code picks the program. A record that names a program, or whose
paths leave the tree under --root, is refused, left where it is, and listed by ``zsn
pending`` as unreadable with its path and why. Each hostile record here is one a
neighbour (or a damaged disk) could leave: the tests run them through ``zsn rollback``,
``zsn confirm`` and the guardian's loader, and check nothing ran and nothing outside
the tree was written."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from zsn import cli
from zsn.errors import ZsnError
from zsn.system.host import Host
from zsn.tries import store as records
from zsn.tries.store import Change, Store
from zsn.tries.undo import Undo

CHANGE_ID = "c0ffee"


def write_record(host: Host, undo: list[dict[str, Any]], **fields: Any) -> Path:
    """A record as zsn writes one (0600, in a 0700 folder of root's), whose undos (and
    other fields) are the given raw data."""
    change = Change(id=CHANGE_ID, title="a tried change", command="zsn test", seconds=60,
                    created=time.time(), state=records.PENDING,
                    deadline=records.boot_clock() + 600, deadline_wall=time.time() + 600,
                    applied=True)
    data = {**change.as_dict(), "undo": undo, **fields}
    folder = host.path(f"{records.STORE_DIR}/{CHANGE_ID}")
    folder.mkdir(parents=True, mode=0o700)
    path = folder / "change.json"
    path.write_text(json.dumps(data))
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Host:
    tree = tmp_path / "root"
    (tree / "etc").mkdir(parents=True)
    return Host(tree)


def test_a_firewall_undo_that_names_a_program_is_refused_and_runs_nothing(
        root: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "ran"
    program = tmp_path / "evil"
    program.write_text(f"#!/bin/sh\necho \"$@\" > {marker}\n")
    program.chmod(0o755)
    path = write_record(root, [{"kind": "firewall", "data": {
        "rule": [str(program), "-A", "FORWARD", "-j", "ACCEPT"], "present": True}}])
    before = path.read_bytes()
    assert cli.main(["--root", str(root.root), "rollback", CHANGE_ID]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert f"{path}: " in line and "unknown field 'rule'" in line and "not acted on" in line
    assert not marker.exists(), "the record's program ran"
    assert path.read_bytes() == before  # left as it is, for a person
    assert cli.main(["--root", str(root.root), "pending"]) == 0
    [listed] = capsys.readouterr().out.splitlines()
    assert listed.startswith(f"{CHANGE_ID}  unreadable  {path}: undo[0].data: unknown field "
                             "'rule' (a record holds data, never programs or options)")


def test_a_file_undo_outside_the_tree_writes_nothing_there(
        root: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "outside.conf"
    data: dict[str, object] = {"path": str(outside), "before": "planted\n", "mode": 0o644,
                               "after": None, "copy": None}
    write_record(root, [{"kind": "file", "data": data}])
    cli.main(["--root", str(root.root), "rollback", CHANGE_ID])
    assert not outside.exists(), "a record's file undo wrote outside the tree"
    for escaping in ("/etc/../../outside.conf", "etc/relative.conf", "//etc/x"):
        with pytest.raises(ZsnError, match="is not a normalised absolute path"):
            Undo.from_dict({"kind": "file", "data": {**data, "path": escaping}})


def test_a_deferred_edit_outside_the_tree_is_not_written_on_confirm(
        root: Host, tmp_path: Path) -> None:
    outside = tmp_path / "cron-job"
    edit = {"path": str(outside), "new_text": "* * * * * root sh -c planted\n", "mode": 0o644,
            "private_dir": False, "backup": False, "remove": False, "previous": None}
    write_record(root, [], deferred=[edit])
    cli.main(["--root", str(root.root), "confirm", CHANGE_ID])
    assert not outside.exists(), "a deferred edit of a record wrote outside the tree"
    escaping = {**edit, "path": "/etc/../../cron-job"}
    path = root.path(f"{records.STORE_DIR}/{CHANGE_ID}/change.json")
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "deferred": [escaping], "state": records.PENDING}))
    with pytest.raises(ZsnError, match=r"deferred\[0\]: path .* not a normalised"):
        Store(root).load(CHANGE_ID)


HOSTILE_UNDOS = {
    "a program in a firewall rule": ("firewall", {
        "family": 4, "table": "filter", "chain": "FORWARD", "target": "ACCEPT",
        "present": True, "program": "/tmp/evil"}, "unknown field 'program'"),
    "an option in a firewall target": ("firewall", {
        "family": 4, "table": "filter", "chain": "FORWARD", "target": "--goto=x",
        "present": True}, "target '--goto=x' is not one of"),
    "an option as an interface": ("firewall", {
        "family": 6, "table": "nat", "chain": "POSTROUTING", "target": "MASQUERADE",
        "present": True, "out_interface": "-j"}, "is not a link name"),
    "a config path for wg-quick": ("wg-quick", {"interface": "/tmp/evil.conf", "up": True},
                                   "interface name"),
    "a unit that is an option": ("unit", {"unit": "--kill-who=all", "active": False},
                                 "is not a systemd unit name"),
    "a sysctl key that is a path": ("sysctl", {"key": "../../../etc/shadow", "value": "x"},
                                    "is not a kernel setting's name"),
    "a line break in a sysctl value": ("sysctl", {"key": "net.ipv4.ip_forward",
                                                  "value": "1\nkernel.x = 1"}, "one line"),
    "a string where a boolean goes": ("wg-route", {"interface": "wg0",
                                                   "network": "10.0.0.0/24",
                                                   "present": "yes"}, "expected bool"),
    "a key that is no key": ("wg-peer", {"interface": "wg0", "public_key": "$(reboot)",
                                         "before": None}, "not a base64 WireGuard key"),
    "a link name with a slash": ("links", {"links": [{"name": "../eth0", "exists": True}],
                                           "routes": []}, "is not a link name"),
    "a bond mode zsn does not know": ("links", {"links": [{
        "name": "bond0", "exists": True, "kind": "bond",
        "config": {"name": "bond0", "kind": "bond", "mode": "evil"}}]}, "bond mode"),
    "a route through a name with spaces": ("routes", {"routes": [{
        "family": 2, "table": 254, "dst": None, "dst_len": 0, "gateway": "10.0.0.1",
        "oif": "eth0 metric 1", "priority": None, "proto": 3, "scope": 0, "type": 1,
        "prefsrc": None, "expires": None}]}, "is not a link name"),
    "a copy outside the store": ("file", {"path": "/etc/x", "before": "a", "mode": 0o600,
                                          "after": None, "copy": "/etc/shadow"},
                                 "is not in /run/zsn/changes"),
    "a Wi-Fi file outside the tree": ("wifi", {
        "backend": "wpa_supplicant", "interface": "wlan0", "ssid": None, "frequency": None,
        "files": [{"path": "/../x", "before": None, "mode": None, "after": None}]},
        "not a normalised absolute path"),
    "a backend zsn does not drive": ("wifi", {"backend": "sh", "interface": "wlan0",
                                              "ssid": None, "frequency": None},
                                     "backend 'sh' is not one of"),
    "a kind zsn does not know": ("shell", {"command": "reboot"},
                                 "'shell' is not a kind of undo zsn knows"),
}


@pytest.mark.parametrize("case", HOSTILE_UNDOS)
def test_an_undo_holds_checked_values_only(case: str) -> None:
    kind, data, reason = HOSTILE_UNDOS[case]
    with pytest.raises(ZsnError, match=reason.replace("(", r"\(").replace("$", r"\$")):
        Undo.from_dict({"kind": kind, "data": data})


def test_undos_zsn_writes_read_back_the_same() -> None:
    from zsn.links.checkpoint import LinkRecipe, LinkState, LinksUndo
    from zsn.tries.restores import firewall_undo, sysctl_undo, unit_undo
    from zsn.wireguard.restore import route_undo

    made = [
        firewall_undo(["iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "10.6.0.0/24",
                       "-o", "eth0", "-j", "MASQUERADE"], False),
        firewall_undo(["ip6tables", "-A", "FORWARD", "-o", "wg0", "-m", "conntrack",
                       "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"], False),
        sysctl_undo("net.ipv6.conf.all.forwarding", "0"), unit_undo("wg-quick@wg0.service", True),
        route_undo("wg0", "10.7.0.0/24", False),
        Undo("links", LinksUndo((LinkState("bond0", True, "bond", LinkRecipe(
            "bond0", "bond", mode="802.3ad", miimon=100, lacp_rate="fast"), None, 9000, True,
            ("10.0.20.1/24",)), LinkState("bond0.7", False)))),
    ]
    for undo in made:
        assert Undo.from_dict(json.loads(json.dumps(undo.as_dict()))) == undo
    assert made[0].params.argv("-C") == ["iptables", "-t", "nat", "-C", "POSTROUTING", "-s",
                                         "10.6.0.0/24", "-o", "eth0", "-j", "MASQUERADE"]


@pytest.mark.parametrize("damage", [
    pytest.param("{not json", id="not JSON"),
    pytest.param('{"format": 2, "id": 7}', id="fields missing"),
    pytest.param("[]", id="a list"),
    pytest.param("[" * 100_000, id="nested 100,000 deep")])
def test_a_damaged_record_is_listed_as_unreadable_not_hidden(
        root: Host, damage: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_record(root, [])
    path.write_text(damage)
    for argv in (["pending"], ["pending", "--all"]):
        assert cli.main(["--root", str(root.root), *argv]) == 0
        out = capsys.readouterr()
        [line] = out.out.splitlines()
        assert line.startswith(f"{CHANGE_ID}  unreadable  {path}: ")
        assert "nothing is pending" not in out.err and "no change is pending" not in out.err
    assert cli.main(["--root", str(root.root), "pending", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["state"] == "unreadable" and listed["path"] == str(path)
    assert cli.main(["--root", str(root.root), "rollback", CHANGE_ID]) == 1
    assert path.read_text() == damage  # left for a person


def test_a_record_zsn_may_not_trust_is_listed_with_the_fix(
        root: Host, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_record(root, [])
    os.chmod(path, 0o666)
    assert cli.main(["--root", str(root.root), "pending"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line == (f"{CHANGE_ID}  unreadable  {path}: writable by group and others (mode "
                    f"0666); zsn trusts its own state only where root alone can change it: "
                    f"chmod go-w {path}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666  # nothing changed it


def test_the_guardian_acts_on_no_record_that_names_a_program(
        root: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record past its deadline, as the guardian finds it: it refuses to load it (one
    line on its log) and runs nothing."""
    from zsn.tries.guardian import main

    marker = tmp_path / "ran"
    program = tmp_path / "evil"
    program.write_text(f"#!/bin/sh\ntouch {marker}\n")
    program.chmod(0o755)
    path = write_record(root, [{"kind": "firewall", "data": {
        "rule": [str(program), "-A", "FORWARD", "-j", "ACCEPT"], "present": False}}],
        deadline=records.boot_clock() - 1)
    before = path.read_bytes()
    # The guardian is a process of its own: it blocks SIGTERM and SIGINT (it waits for
    # them with sigtimedwait) and ignores SIGHUP. Run here, it would leave them so for
    # every child the rest of the suite starts (a `kill -TERM $$` that never lands).
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    hangup = signal.getsignal(signal.SIGHUP)
    try:
        assert main(["--root", str(root.root), CHANGE_ID]) == 1
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGHUP, hangup)
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"zsn guardian {CHANGE_ID}: {path}: undo[0].data: unknown field")
    assert not marker.exists(), "the guardian ran the record's program"
    assert path.read_bytes() == before


def test_a_record_moved_to_another_change_s_folder_is_not_that_change(
        root: Host, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_record(root, [])
    moved = root.path(f"{records.STORE_DIR}/abcdef")
    moved.mkdir(mode=0o700)
    (moved / "change.json").write_bytes(path.read_bytes())
    assert cli.main(["--root", str(root.root), "pending"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[-1] == (f"abcdef  unreadable  {moved / 'change.json'}: the record of change "
                          f"{CHANGE_ID}, in the folder of abcdef; left as it is, not acted on")


def test_every_kind_of_undo_has_typed_parameters_and_names_what_it_owns() -> None:
    """A new kind joins the rule: its parameters a frozen dataclass (checked when a
    record is read), and the restorer says what it owns and the state it leaves."""
    import dataclasses

    from zsn.tries.undo import RESTORERS, restorer

    for kind in RESTORERS:
        handler = restorer(kind)
        params = handler.params
        assert dataclasses.is_dataclass(params), kind
        assert getattr(params, "__dataclass_params__").frozen, kind  # noqa: B009 - not typed
        for method in ("describe", "objects", "observe", "wanted", "restore", "commands"):
            assert callable(getattr(handler, method, None)), (kind, method)
