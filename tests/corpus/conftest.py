from __future__ import annotations

import pytest

from tests.corpus.tally import TALLY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TALLY.outcomes:
        return
    terminalreporter.write_sep("-", "config corpus: files tried, read right, misread, "
                                    "edited right, refused")
    for line in TALLY.lines():
        terminalreporter.write_line(line)
    TALLY.write()
