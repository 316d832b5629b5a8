"""Atomic writes that keep backups and never overwrite someone else's edit."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from zsn.errors import FileChangedError, ZsnError
from zsn.system import files


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_write_keeps_a_backup_and_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "wg0.conf"
    path.write_text("[Interface]\n# keep me\n")
    os.chmod(path, 0o640)
    before = files.read_tracked(path)
    files.write_atomic(path, "[Interface]\n# keep me\nListenPort = 1\n", previous=before)
    assert path.read_text().endswith("ListenPort = 1\n")
    assert files.backup_path(path).read_text() == "[Interface]\n# keep me\n"
    assert mode(path) == mode(files.backup_path(path)) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_private_mode_is_set_before_content_lands(tmp_path: Path) -> None:
    path = tmp_path / "client.conf"
    files.write_atomic(path, "PrivateKey = secret\n", previous=None,
                       mode=files.PRIVATE_FILE_MODE)
    assert mode(path) == 0o600


def test_refuses_when_the_file_changed_since_read(tmp_path: Path) -> None:
    path = tmp_path / "wg0.conf"
    path.write_text("one\n")
    before = files.read_tracked(path)
    path.write_text("someone else's edit\n")
    with pytest.raises(FileChangedError, match="changed on disk"):
        files.write_atomic(path, "mine\n", previous=before)
    assert path.read_text() == "someone else's edit\n"
    assert not files.backup_path(path).exists()


def test_refuses_to_create_over_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "wg0.conf"
    path.write_text("existing\n")
    with pytest.raises(FileChangedError, match="already exists"):
        files.write_atomic(path, "new\n", previous=None)
    assert path.read_text() == "existing\n"


def test_refuses_when_the_file_was_removed(tmp_path: Path) -> None:
    path = tmp_path / "wg0.conf"
    path.write_text("x\n")
    before = files.read_tracked(path)
    path.unlink()
    with pytest.raises(FileChangedError, match="removed"):
        files.write_atomic(path, "y\n", previous=before)
    assert not path.exists()


def test_read_errors_are_plain(tmp_path: Path) -> None:
    with pytest.raises(ZsnError, match="no such file"):
        files.read_tracked(tmp_path / "missing.conf")
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(ZsnError, match="not UTF-8"):
        files.read_tracked(tmp_path / "bin")


def test_private_dir_is_0700(tmp_path: Path) -> None:
    directory = tmp_path / "clients" / "wg0"
    files.ensure_private_dir(directory)
    assert mode(directory) == 0o700


def test_snapshot_repr_hides_the_text(tmp_path: Path) -> None:
    # A snapshot's repr reaches tracebacks, logs and assertion output: never the key.
    source = Path(__file__).parents[1] / "fixtures/wireguard/manpage-server-multipeer.conf"
    path = tmp_path / "wg0.conf"
    path.write_text(source.read_text())
    snapshot = files.read_tracked(path)
    assert "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=" in snapshot.text
    assert "yAnz5TF" not in repr(snapshot) and "PrivateKey" not in repr(snapshot)
    assert str(path) in repr(snapshot)


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next_write(
        tmp_path: Path) -> None:
    gone_pid = _exited_pid()
    stale = tmp_path / f".wg0.conf.zsn-{gone_pid}-0a1b2c3d.tmp"
    alive = tmp_path / f".wg0.conf.zsn-{os.getppid()}-0a1b2c3d.tmp"
    old_style = tmp_path / ".wg0.conf.k3j_9x2a.tmp"
    young_old_style = tmp_path / ".wg0.conf.abcdefgh.tmp"
    for leftover in (stale, alive, old_style, young_old_style):
        leftover.write_text("PrivateKey = x\n")
    os.utime(old_style, (1, 1))
    files.write_atomic(tmp_path / "other.conf", "x\n", previous=None)
    assert not stale.exists() and not old_style.exists()
    assert alive.exists() and young_old_style.exists()  # a writer may still be at work


def _exited_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_stamp_changes_when_a_file_below_changes_and_only_then(tmp_path: Path) -> None:
    """A file written (even to the same size), added, removed, renamed or chmod-ed
    changes the stamp; reading it, or nothing at all, does not."""
    folder = tmp_path / "wireguard"
    (folder / "clients/alice").mkdir(parents=True)
    config = folder / "wg0.conf"
    config.write_text("[Interface]\nListenPort = 51820\n")
    (folder / "clients/alice/wg0.conf").write_text("[Interface]\n")
    settings = tmp_path / "zsn.json"  # absent at first: its absence is stamped
    before = files.stamp(folder, settings)
    assert files.stamp(folder, settings) == before
    config.read_text()
    assert files.stamp(folder, settings) == before

    def changed(change: Callable[[], object]) -> bool:
        first = files.stamp(folder, settings)
        change()
        return files.stamp(folder, settings) != first

    assert changed(lambda: config.write_text("[Interface]\nListenPort = 51821\n"))  # same size
    assert changed(lambda: os.chmod(config, 0o644))
    assert changed(lambda: (folder / "clients/alice/wg1.conf").write_text("[Peer]\n"))
    assert changed(lambda: (folder / "clients/alice/wg1.conf").unlink())
    assert changed(lambda: (folder / "clients/alice/wg0.conf").rename(
        folder / "clients/alice/wg2.conf"))
    assert changed(lambda: settings.write_text("{}"))
    (folder / "link").symlink_to(tmp_path)  # a link is stamped, never followed
    linked = files.stamp(folder, settings)
    assert changed(lambda: (tmp_path / "elsewhere").write_text("x")) is False
    assert files.stamp(folder, settings) == linked
    assert len(files.stamp(folder, settings, limit=3)) == 3
