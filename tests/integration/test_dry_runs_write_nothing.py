"""A plan and a dry run write nothing: every ``--dry-run`` of every command group runs
under strace (`tests.lab.dry_runs`: one --root tree with something for each to plan),
and the trace shows no write outside the private scratch folders zsn makes itself,
and no program run that could act on the host (udevadm, systemctl, netplan ...)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.lab.dry_runs import MARK, build_tree, commands
from tests.needs import needs_tools
from tests.unit.links.test_hostile_trees import snapshot_of
from zsn import cli, domains
from zsn.domains import load
from zsn.openvpn.refusals import openvpn_binary

REPO = Path(__file__).resolve().parents[2]
TRACED = ("open,openat,openat2,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,"
          "unlinkat,rmdir,symlink,symlinkat,link,linkat,chmod,fchmod,fchmodat,chown,fchown,"
          "fchownat,lchown,truncate,ftruncate,mknod,mknodat,utimensat,bind,execve,access,"
          "faccessat,faccessat2")
LIVE_ONLY = {"link persist": "saves a live link: under --root there is none (exit 2)"}
"""Dry runs that refuse under a --root tree, and why; every other one shows a plan."""

_CALL = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIRFD = re.compile(r"^(?:AT_FDCWD|\d+)(?:<([^>]*)>)?, ")
_WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")


def dry_run_actions() -> set[str]:
    """Every ``GROUP ACTION ...`` that takes --dry-run, from the parsers themselves."""

    def walk(parser: argparse.ArgumentParser, trail: list[str]) -> set[str]:
        found = {" ".join(trail)} if any("--dry-run" in action.option_strings
                                         for action in parser._actions) else set()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found |= walk(child, [*trail, name])
        return found

    return {name for group in domains.command_groups().values()
            for name in walk(cli.group_parser(group, load(group.module)), [group.name])}


def action_of(argv: list[str]) -> str:
    words = [word for word in argv[2:] if not word.startswith("-")]
    if words[0] == "apply":  # apply FILE: a group with no actions
        return "apply"
    if words[:2] == ["wg", "acl"]:  # wg acl group add, wg acl default ...
        return " ".join(words[:4] if words[2] in ("group", "rule") else words[:3])
    three = words[:2] in (["link", "create"], ["zfs", "policy"], ["zfs", "replicate"])
    return " ".join(words[:3] if three else words[:2])


def written_paths(call: str, arguments: str) -> list[str]:
    """The paths a traced call creates, changes or removes (none for a read)."""
    if call in ("open", "openat", "openat2", "creat"):
        if call != "creat" and not _WRITE_FLAGS.search(arguments):
            return []
        return _paths(call, arguments)[:1]
    if call in ("execve", "access", "faccessat", "faccessat2"):
        return []
    if call == "bind":
        found = re.search(r'sun_path="((?:[^"\\]|\\.)*)"', arguments)
        return [found.group(1)] if found else []
    if call in ("fchmod", "fchown", "ftruncate"):
        found = re.match(r"\d+<([^>]*)>", arguments)
        return [found.group(1)] if found else ["(an fd zsn did not name)"]
    paths = _paths(call, arguments)
    return paths[1:] if call in ("symlink", "symlinkat") else paths


def _paths(call: str, arguments: str) -> list[str]:
    """The quoted paths of a call, each made absolute against the dirfd before it."""
    found: list[str] = []
    rest = arguments
    while True:
        base = ""
        if call.endswith("at") or call in ("renameat2", "openat2", "linkat", "symlinkat"):
            match = _DIRFD.match(rest)
            if match:
                base = match.group(1) or ""
                rest = rest[match.end():]
        string = _STRING.search(rest)
        if string is None:
            return found
        path = string.group(1)
        found.append(path if path.startswith("/") or not base else f"{base}/{path}")
        rest = rest[string.end():].lstrip(", ")


def test_every_dry_run_writes_nothing_outside_its_scratch(tmp_path: Path) -> None:
    needs_tools("strace", "netplan")
    root, programs = build_tree(tmp_path)
    lines = commands(tmp_path, root)
    assert {action_of(argv) for argv in lines} == dry_run_actions(), \
        "tests/lab/dry_runs.py must run every --dry-run there is"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    (tmp_path / "commands.json").write_text(json.dumps(lines))
    fake_log = tmp_path / "answers.json.log"
    before = snapshot_of(root)
    trace = tmp_path / "trace"
    environment = {**os.environ, "TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1",
                   "PATH": f"{programs}{os.pathsep}{os.environ['PATH']}",
                   "ZSN_FAKE_ZFS": str(tmp_path / "answers.json")}
    result = subprocess.run(
        ["strace", "-f", "-qq", "-y", "-s", "4096", "-e", f"trace={TRACED}", "-o", str(trace),
         sys.executable, "-m", "tests.lab.dry_runs", str(tmp_path / "commands.json")],
        cwd=REPO, env=environment, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    codes = json.loads(result.stdout.rsplit("@@codes ", 1)[1])
    expected = [2 if action_of(argv) in LIVE_ONLY else 0 for argv in lines]
    assert codes == expected, result.stderr[-3000:]

    allowed = (str(scratch) + "/", str(fake_log), "/dev/null")
    command = "(start-up)"
    outside: list[str] = []
    programs_run: set[str] = set()
    for line in trace.read_text().splitlines():
        match = _CALL.match(line)
        if match is None:
            continue
        _pid, call, arguments = match.groups()
        if MARK in arguments:
            number = int(arguments.split(MARK, 1)[1].split('"', 1)[0])
            command = " ".join(lines[number][2:])
            continue
        if call == "execve":
            executable = _STRING.search(arguments)
            if executable is not None:
                programs_run.add(executable.group(1))
            continue
        for path in written_paths(call, arguments):
            if not path.startswith(allowed):
                outside.append(f"{command}: {call}: {path}")
    assert outside == [], "\n".join(outside[:40])
    fakes = {str(programs / name) for name in ("zpool", "zfs", "dmsetup")}
    python = {sys.executable, os.path.realpath(sys.executable)}
    # `vpn import` has the installed openvpn parse a scratch copy of the profile, the
    # lines that load code, run scripts or write a log blanked (zsn.openvpn.refusals);
    # what it writes is checked above like everything else.
    checkers = {path for path in [openvpn_binary()] if path}
    allowed_programs = python | fakes | checkers
    assert programs_run <= allowed_programs, sorted(programs_run - allowed_programs)
    assert snapshot_of(root) == before
    assert list(scratch.iterdir()) == [], "zsn left scratch folders behind"
