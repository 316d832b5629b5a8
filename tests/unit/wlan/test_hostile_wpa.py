"""A wpa_supplicant that hangs or lies (`tests.lab.hostile`): every conversation ends at
its deadline, and the commands say the daemon failed (exit 1), never that a network
is out of range."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.lab.hostile import hostile_socket
from tests.terminal_scan import raw_controls
from tests.unit.wlan.conftest import make_root
from zsn.wlan import live


@pytest.fixture
def root() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="zw", dir="/tmp"))  # unix socket paths are short
    try:
        root = make_root(base, netctl=False)
        (root / "run/wpa_supplicant").mkdir(parents=True)
        yield root
    finally:
        shutil.rmtree(base)


def test_an_endless_bss_walk_ends_at_the_conversation_deadline(
        root: Path, wifi: Callable[..., int], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Each reply comes 0.2 s late, well inside the 5 s a request may take: without a
    # deadline for the whole conversation the walk of 2000 access points takes 400 s
    # (a real attacker answers at 4.9 s: hours).
    monkeypatch.setattr(live, "READ_CONVERSATION", 2.0)
    with hostile_socket(root / "run/wpa_supplicant/wlan0", "wpa-endless"):
        started = time.monotonic()
        code = wifi(root, "list")
        took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 1, err
    assert took < 2.0 + 3, took
    assert "wpa_supplicant on wlan0 (the whole conversation): no complete answer " \
           "within 2 s" in err
    assert raw_controls(out + err) == []


def test_a_silent_daemon_is_the_error_not_the_network(
        root: Path, wifi: Callable[..., int], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "READ_TIMEOUT", 0.5)
    with hostile_socket(root / "run/wpa_supplicant/wlan0", "wpa-silent"):
        assert wifi(root, "connect", "home") == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "wlan0: its Wi-Fi daemon could not be read: wpa_supplicant on wlan0: no " \
               "answer to 'STATUS'" in err and "not in range" not in err
        assert wifi(root, "forget", "home") == 1
        assert "knows no network" not in capsys.readouterr().err
        assert wifi(root, "list") == 1
        assert "no answer to 'STATUS'" in capsys.readouterr().err
