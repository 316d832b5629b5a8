"""A plan step that removes a file: shown as a diff to /dev/null, kept as the backup,
put back when a later step fails, refused when the file changed since it was read."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import FileChangedError, ZsnError
from zsn.plan import ApplyError, FileEdit, LiveStep, Plan
from zsn.system import files


def test_remove_is_shown_applied_and_undone(tmp_path: Path) -> None:
    path = tmp_path / "30-zsn-bond0.netdev"
    path.write_text("[NetDev]\nName=bond0\nKind=bond\n")
    path.chmod(0o640)
    edit = FileEdit(path, files.read_tracked(path), "", remove=True, intent=None)
    plan = Plan("delete bond0", [edit])
    text = plan.describe()
    assert f"1. remove {path} (kept as 30-zsn-bond0.netdev.zsn-bak)" in text
    assert "+++ /dev/null" in text and "-Kind=bond" in text
    plan.apply()
    assert not path.exists()
    backup = files.backup_path(path)
    assert backup.read_text() == "[NetDev]\nName=bond0\nKind=bond\n"
    assert backup.stat().st_mode & 0o777 == 0o640

    path.write_text("[NetDev]\nName=bond0\nKind=bond\n")
    path.chmod(0o640)
    backup.unlink()

    def fail() -> None:
        raise ZsnError("boom")

    plan = Plan("delete bond0", [
        FileEdit(path, files.read_tracked(path), "", remove=True, intent=None),
        LiveStep("fails", fail)])
    with pytest.raises(ApplyError, match="undone: remove"):
        plan.apply()
    assert path.read_text() == "[NetDev]\nName=bond0\nKind=bond\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert not backup.exists()


def test_remove_refuses_a_file_changed_since_read(tmp_path: Path) -> None:
    path = tmp_path / "bond0"
    path.write_text("Interface=bond0\n")
    snapshot = files.read_tracked(path)
    path.write_text("Interface=bond0\nConnection=bond\n")
    with pytest.raises(FileChangedError):
        FileEdit(path, snapshot, "", remove=True, intent=None).apply()
    assert path.exists()
