"""Every headless command and the export, run as an unprivileged user against a
root-owned tree (issue 10, item 6): one clear line, a non-zero exit, no traceback.

The commands are found by walking `zsn.domains`: each group's parser, each action,
positionals filled with a probe name (the first choice where there are choices),
so a domain added later is covered without touching this test. The probe name is
also a readable client profile in the directory the commands run in, for commands
that take a file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.needs import needs_tools, unavailable
from zsn.domains import command_groups, load
from zsn.system.host import Host
from zsn.wireguard import interfaces, onboarding

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
PROBE = "probe0"


def _fill(parser: argparse.ArgumentParser) -> list[list[str]]:
    """Every way through `parser`: its required arguments, then each sub-command's."""
    words: list[str] = []
    subcommands: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse has no public walk
        if isinstance(action, argparse._SubParsersAction):
            subcommands = dict(action.choices)
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        sample = str(next(iter(action.choices))) if action.choices else PROBE
        if action.option_strings:
            if action.required:
                words += [action.option_strings[0], sample]
        elif action.nargs not in ("*", "?"):
            words.append(sample)
    for group in parser._mutually_exclusive_groups:
        if group.required:  # one of them must be given: the first, as a user would
            first = group._group_actions[0]
            words.append(first.option_strings[0])
            if first.nargs != 0:
                words.append(PROBE)
    if not subcommands:
        return [words]
    return [[*words, name, *rest] for name, sub in subcommands.items() for rest in _fill(sub)]


def every_command() -> list[list[str]]:
    found = []
    for name, group in command_groups().items():
        parser = argparse.ArgumentParser()
        load(group.module).add_arguments(parser)
        found += [[name, *words] for words in _fill(parser)]
    return found


@pytest.fixture(scope="module")
def root_owned_tree() -> Iterator[Path]:
    """A system tree as root leaves it: readable folders, secrets for root only."""
    if os.geteuid() != 0:
        unavailable("root is needed to run commands as another user")
    needs_tools("setpriv")
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import zsn"], check=False,
                           capture_output=True)
    if probe.returncode != 0:
        unavailable("this Python cannot be run by nobody")
    tree = Path(tempfile.mkdtemp(prefix="zsn-not-root-"))
    try:
        os.chmod(tree, 0o755)
        host = Host(tree)
        interfaces.plan_create_interface(host, PROBE, ["10.66.0.1/24"], 51820,
                                         "vpn.example.com").apply()
        onboarding.plan_add_peer(host, onboarding.PeerRequest(PROBE, "alice"))[0].apply()
        for folder in ("client", "server"):
            (tree / "etc/openvpn" / folder).mkdir(parents=True)
            os.chmod(tree / "etc/openvpn" / folder, 0o750)
        (tree / f"etc/openvpn/client/{PROBE}.conf").write_text("client\nremote 192.0.2.1\n")
        os.chmod(tree / f"etc/openvpn/client/{PROBE}.conf", 0o600)
        for folder in ("etc", "etc/openvpn", "etc/sysctl.d"):
            (tree / folder).mkdir(parents=True, exist_ok=True)
            os.chmod(tree / folder, 0o755)
        (tree / "etc/netplan").mkdir(mode=0o755)  # netplan wants its files root's alone
        (tree / "etc/netplan/01-zsn.yaml").write_text("network:\n  version: 2\n")
        os.chmod(tree / "etc/netplan/01-zsn.yaml", 0o600)
        (tree / "etc/netctl").mkdir(mode=0o755)  # profiles hold passphrases: root's alone
        (tree / f"etc/netctl/{PROBE}").write_text(
            "Interface=wlan0\nConnection=wireless\nSecurity=wpa\nESSID=probe\nKey=probe-pass\n")
        os.chmod(tree / f"etc/netctl/{PROBE}", 0o600)
        (tree / "run/wireguard").mkdir(parents=True)
        os.chmod(tree / "run/wireguard", 0o700)
        (tree / "run/zsn/changes").mkdir(parents=True)  # tried changes: root's alone,
        os.chmod(tree / "run/zsn", 0o700)  # as zsn makes the store on a box that tried one
        (tree / "home").mkdir(mode=0o755)
        (tree / "home" / PROBE).write_text("client\nremote 192.0.2.1\n")
        os.chmod(tree / "home" / PROBE, 0o644)
        yield tree
    finally:
        shutil.rmtree(tree)


def as_nobody(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NOBODY, sys.executable, "-m", "zsn", "--root", str(tree), *args],
        capture_output=True, text=True, timeout=60, check=False, cwd=tree / "home",
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


@pytest.mark.parametrize("argv", every_command(), ids=" ".join)
def test_every_command_says_in_one_line_what_it_could_not_do(root_owned_tree: Path,
                                                            argv: list[str]) -> None:
    before = {p: p.stat().st_mtime_ns for p in root_owned_tree.rglob("*")}
    result = as_nobody(root_owned_tree, *argv)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode != 0, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"zsn {argv[0]}: "), lines[0]
    if result.returncode == 1:  # not refused input: it names what it could not read
        assert "permission denied" in lines[0] or "root" in lines[0], lines[0]
    assert {p: p.stat().st_mtime_ns for p in root_owned_tree.rglob("*")} == before


def test_export_says_what_it_could_not_read(root_owned_tree: Path) -> None:
    result = as_nobody(root_owned_tree, "--export")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 3, result.stderr  # partial
    document = json.loads(result.stdout)
    for section in ("wireguard", "openvpn"):
        errors = document[section]["errors"]
        assert any("permission denied" in error for error in errors), (section, errors)
    assert result.stderr and all(line.startswith("zsn: ") for line in result.stderr.splitlines())
