"""zpool and zfs that lie (`tests.unit.zfs.conftest.FakeZfs` on PATH): names with
control characters in their output (a mountpoint any delegated user may set, a file
vdev's path), an error that tries to drive the terminal, a flood. What reaches the
terminal (read from a pseudo-terminal) is escaped, one line per error, bounded."""

from __future__ import annotations

import sys

from tests.terminal_scan import drawn_text, raw_controls, run_in_terminal
from tests.unit.zfs.conftest import LAB, POOL_LIST, FakeZfs, read
from tests.unit.zfs.test_cli_export import DATASETS

MOUNTPOINT = "/mnt/\x1b]52;c;SE9TVElMRQ==\x07\u202eevil"
VDEV = "/run/vdev/a\x1b[2J\x9b31m"


def zsn(fake: FakeZfs, *argv: str) -> tuple[int, str]:
    code, written = run_in_terminal([sys.executable, "-m", "zsn", "--root", str(fake.root),
                                     *argv], timeout=60)
    return code, written.decode("utf-8", "replace")


def test_hostile_names_in_zpool_and_zfs_output_are_shown_escaped(fake_zfs: FakeZfs) -> None:
    fake_zfs.standard()
    fake_zfs.answer("zpool status -p -P", read(LAB / "zpool-status-p-P.all-classes.txt")
                    .replace("/run/vdev/a", VDEV))
    fake_zfs.answer(DATASETS, read(LAB / "zfs-list-Hp-o.200-datasets.txt")
                    .replace("p1", "full").replace("\t/run/full\t", f"\t{MOUNTPOINT}\t"))
    for argv, shown in ((["zfs", "list"], "/mnt/\\x1b]52;c;SE9TVElMRQ==\\x07\\u202eevil"),
                        (["zfs", "status", "full"], "/run/vdev/a\\x1b[2J\\x9b31m")):
        code, text = zsn(fake_zfs, *argv)
        assert code == 0, text
        assert raw_controls(text) == []
        assert shown in drawn_text(text), argv


def test_an_error_that_would_drive_the_terminal_is_quoted_escaped(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer(POOL_LIST,
                    stderr="cannot open '\x1b]0;owned\x07': \x1b[2Jno such pool\u202e\n"
                           "second line\n", rc=1)
    code, text = zsn(fake_zfs, "zfs", "list")
    assert code == 1
    assert raw_controls(text) == [] and text.count("\n") == 1
    assert "\\x1b]0;owned\\x07': \\x1b[2Jno such pool\\u202e" in text
    assert "second line" not in text


def test_a_flooding_zpool_is_stopped_at_its_cap(fake_zfs: FakeZfs) -> None:
    fake_zfs.answer(POOL_LIST, stream=["\x1b[2J" * 65536] * 80)
    code, text = zsn(fake_zfs, "zfs", "list")
    assert code == 1 and "larger than 16 MiB" in text
    assert raw_controls(text) == [] and text.count("\n") == 1
