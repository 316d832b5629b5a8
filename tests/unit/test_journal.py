"""`zsn.system.journal.synchronize`: journald asked on the live system only."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.system import journal
from zsn.system.commands import CommandResult
from zsn.system.host import Host


def test_synchronize_asks_the_live_journald_and_not_an_offline_tree(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ran: list[list[str]] = []

    def run(argv: list[str], timeout: float) -> CommandResult:
        ran.append(argv)
        return CommandResult(tuple(argv), 0, "", "", 0.0)
    monkeypatch.setattr(journal, "run", run)
    journal.synchronize(Host())
    assert ran == [["journalctl", "--sync"]]
    journal.synchronize(Host(tmp_path))  # its files are read as they are: no daemon there
    assert ran == [["journalctl", "--sync"]]
