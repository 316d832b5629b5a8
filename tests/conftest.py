from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

# The suite runs on a shared 2-core machine: a per-example deadline would time the
# machine, not the code (a busy neighbour failed a 200 ms deadline). Readers that could
# loop are bounded by their own progress checks, not by this.
settings.register_profile("zsn", deadline=None)
settings.load_profile("zsn")

if TYPE_CHECKING:  # the lab module is imported when a test asks for a lab
    from tests.lab.netns import Lab

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _signals_as_found() -> Iterator[None]:
    """A test leaves the process's signal mask and dispositions as it found them: every
    child started later inherits a blocked or ignored signal (a guardian's main run
    in-process once left SIGTERM blocked, and a killed sender then ended with 0)."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    handlers = {number: signal.getsignal(number)
                for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE)}
    yield
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask, "the signal mask changed"
    changed = [signal.Signals(number).name for number, handler in handlers.items()
               if signal.getsignal(number) != handler]
    assert not changed, f"signal dispositions changed: {changed}"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def lab() -> Iterator[Lab]:
    from tests.lab.netns import Lab, require_lab

    require_lab()
    built = Lab()
    try:
        yield built
    finally:
        built.close()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what does not run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Labs that need minutes of real time start now and run beside the suite
    (`tests.lab.background`), and so do the kernel lab's guests (`tests.lab.guests`);
    their tests go last."""
    from tests.lab import background, guests

    if not config.option.collectonly:
        background.start(items)
        guests.start(items)


def pytest_sessionfinish() -> None:
    from tests.lab import background, guests

    guests.stop()
    background.stop_all()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The kernel lab's boots with their times (kept out of pytest's captured output)."""
    from tests.lab.kernel import BOOTS

    if not BOOTS:
        return
    terminalreporter.write_sep("-", "kernel lab guests")
    first = min(boot.started for boot in BOOTS)
    for boot in sorted(BOOTS, key=lambda boot: boot.started):
        guest = f", guest tests {boot.guest_tests:.1f} s" if boot.guest_tests else ""
        waited = f", waited {boot.lock_wait:.0f} s for the lock" if boot.lock_wait >= 1 else ""
        counts = f" ({boot.counts})" if boot.counts else ""
        terminalreporter.write_line(
            f"{boot.label}: {boot.kernel}, started at +{boot.started - first:.0f} s, "
            f"boot to exit {boot.boot_to_exit:.1f} s"
            f"{guest}{waited}{counts}")
