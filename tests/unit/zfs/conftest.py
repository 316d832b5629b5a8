"""ZFS unit tests: real captured outputs (tests/fixtures/zfs*/), and fake zpool, zfs and
dmsetup programs on PATH that replay them, so the CLI, export and actions run end to end
(subprocesses, argv, LC_ALL, exit statuses) without a ZFS kernel module."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import pytest

from zsn.zfs.names import POOL_COLUMNS

FIXTURES = Path(__file__).parents[2] / "fixtures"
LAB = FIXTURES / "zfs-lab"
VM = FIXTURES / "zfs-vm"
OTHERS = FIXTURES / "zfs"
POOL_LIST = "zpool list -Hp -o " + ",".join(POOL_COLUMNS)
"""The `zpool list` zsn runs; `POOL_LIST_OUTPUT` is its output for the lab's pools full
and rz (made as for the other captures of the folder)."""
POOL_LIST_OUTPUT = LAB / "zpool-list-Hp-o.freeing-leaked-readonly.txt"

FAKE = '''#!{python}
"""A fake {name}: answers the argv it was set up for with a captured output."""
import json, os, sys, time
script = json.load(open(os.environ["ZSN_FAKE_ZFS"]))
argv = " ".join(sys.argv[1:])
with open(os.environ["ZSN_FAKE_ZFS"] + ".log", "a") as log:
    log.write(json.dumps({{"program": "{name}", "argv": sys.argv[1:],
                          "lc_all": os.environ.get("LC_ALL")}}) + "\\n")
answer = script.get("{name} " + argv)
if answer is None:
    sys.stderr.write("fake {name}: nothing set up for: " + argv + "\\n")
    sys.exit(99)
if answer.get("sleep"):
    time.sleep(answer["sleep"])
if answer.get("drain"):  # a receiver: read the stream to its end, note its size
    size = len(sys.stdin.buffer.read())
    with open(os.environ["ZSN_FAKE_ZFS"] + ".received", "a") as received:
        received.write(str(size) + "\\n")
for chunk in answer.get("stream", []):
    sys.stdout.write(chunk)
    sys.stdout.flush()
    time.sleep(answer.get("every", 0))
sys.stdout.write(answer.get("stdout", ""))
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("rc", 0))
'''


class FakeCall(TypedDict):
    """One run of a fake program, as it logged it."""

    program: str
    argv: list[str]
    lc_all: str | None


def read(path: Path) -> str:
    return path.read_text()


@dataclass
class FakeZfs:
    """Fake programs and a root that looks like a host with the ZFS module loaded."""

    bin: Path
    root: Path
    script: Path
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The fake programs' script (JSON): stdout, stderr, rc, stream, every, sleep."""

    def answer(self, command: str, stdout: str = "", stderr: str = "", rc: int = 0,
               **extra: Any) -> None:
        """`command` is the program and its arguments, e.g. ``zpool status -p -P``."""
        self.answers[command] = {"stdout": stdout, "stderr": stderr, "rc": rc, **extra}
        self.script.write_text(json.dumps(self.answers))

    def calls(self) -> list[FakeCall]:
        log = Path(str(self.script) + ".log")
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def standard(self, status: str = "zpool-status-p-P.all-classes.txt") -> None:
        """The lab's two pools (full, rz) as zsn reads them."""
        self.answer(POOL_LIST, read(POOL_LIST_OUTPUT))
        self.answer("zpool status -p -P", read(LAB / status))


@pytest.fixture
def fake_zfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeZfs]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("zpool", "zfs", "dmsetup"):
        program = bin_dir / name
        program.write_text(FAKE.format(python=sys.executable, name=name))
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    root = tmp_path / "root"
    (root / "sys/module/zfs").mkdir(parents=True)
    (root / "sys/module/zfs/version").write_text("2.1.11-1+deb12u1\n")
    (root / "proc/spl/kstat/zfs").mkdir(parents=True)
    script = tmp_path / "answers.json"
    script.write_text("{}")
    monkeypatch.setenv("ZSN_FAKE_ZFS", str(script))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    yield FakeZfs(bin_dir, root, script)
