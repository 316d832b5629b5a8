"""Plans built on top of one another: `files.staged` shows the texts earlier plans will
write, `plan.combined` makes them one plan whose edits start from what is on disk."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from zsn.errors import FileChangedError, ZsnError
from zsn.meaning import OwnFile
from zsn.plan import FileEdit, LiveStep, Plan, combined
from zsn.system import files


def test_staged_texts_are_read_listed_and_seen_as_existing(tmp_path: Path) -> None:
    (tmp_path / "a.conf").write_text("on disk\n")
    new = tmp_path / "new" / "b.conf"
    staged: dict[Path, str | None] = {new: "staged\n", tmp_path / "a.conf": None}
    with files.staged(staged):
        assert files.read_text(new) == "staged\n"
        assert files.exists(new) and files.is_file(new) and files.lexists(new)
        assert files.is_dir(tmp_path / "new") and files.exists(tmp_path / "new")
        assert not files.exists(tmp_path / "a.conf")
        with pytest.raises(ZsnError, match="no such file"):
            files.read_tracked(tmp_path / "a.conf")
        assert files.list_files(tmp_path / "new", "*.conf") == [new]
        assert files.list_files(tmp_path, "*.conf") == []
    assert not new.exists()
    assert files.read_text(tmp_path / "a.conf") == "on disk\n"
    assert files.list_files(tmp_path, "*.conf") == [tmp_path / "a.conf"]


def _edit(path: Path, text: str) -> FileEdit:
    previous = files.read_tracked(path) if files.exists(path) else None
    return FileEdit(path, previous, text, mode=0o600, intent=OwnFile("a test's file"))


def test_combined_edits_start_from_the_disk_and_end_with_the_last_text(
        tmp_path: Path) -> None:
    path = tmp_path / "x.conf"
    path.write_text("one\n")
    order: list[str] = []
    staged: dict[Path, str | None] = {}
    plans = []
    with files.staged(staged):
        for text in ("one\ntwo\n", "one\ntwo\nthree\n"):
            plan = Plan(f"add {text.split()[-1]}", [_edit(path, text)],
                        notes=[f"note {text.split()[-1]}"])
            plan.steps.append(LiveStep(f"live {text.split()[-1]}",
                                       partial(order.append, text)))
            plans.append(plan)
            staged[path] = text
    plan = combined("both", plans)
    assert [step.description for step in plan.steps] == [
        f"edit {path} (mode 0600)", "live two", "live three"]
    assert plan.parts == ["add two", "add three"] and plan.notes == ["note two", "note three"]
    plan.apply()
    assert path.read_text() == "one\ntwo\nthree\n"
    assert (tmp_path / "x.conf.zsn-bak").read_text() == "one\n"
    assert len(order) == 2


def test_a_file_changed_on_disk_after_planning_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.conf"
    path.write_text("one\n")
    plan = combined("x", [Plan("a", [_edit(path, "two\n")])])
    path.write_text("someone else's\n")
    with pytest.raises(ZsnError) as refused:
        plan.apply()
    assert isinstance(refused.value.__cause__, FileChangedError)
    assert path.read_text() == "someone else's\n"


def test_edits_that_end_where_they_began_are_left_out(tmp_path: Path) -> None:
    kept, made = tmp_path / "kept.conf", tmp_path / "made.conf"
    kept.write_text("same\n")
    kept.chmod(0o600)
    staged: dict[Path, str | None] = {}
    with files.staged(staged):
        first = Plan("a", [_edit(kept, "changed\n"), _edit(made, "new\n")])
        staged.update({kept: "changed\n", made: "new\n"})
        second = Plan("b", [_edit(kept, "same\n"),
                            FileEdit(made, files.read_tracked(made), "", remove=True,
                                     intent=None)])
    assert combined("ab", [first, second]).steps == []
