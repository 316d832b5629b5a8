"""Labs that take minutes of real time (WireGuard's timers cannot be hurried), run in
the background of the whole test session instead of in front of it.

A test marked ``@pytest.mark.background_lab("tests.lab.MODULE", seconds)`` gets its
lab started as ``python -m tests.lab.MODULE OUT.json SECONDS`` as soon as the session
is collected (`start`), and is itself moved to the end of the session: by the time
it runs, the rest of the suite has used the minutes the lab needed. The test then
waits for the lab (`result`) and asserts on what it wrote. A lab still running when
the session ends (interrupted, deselected halfway) is stopped; it cleans up after
itself on SIGTERM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

_REPO = Path(__file__).resolve().parents[2]
_RUNNING: dict[str, tuple[subprocess.Popen[bytes], Path, float]] = {}


def _key(item: pytest.Item) -> tuple[str, float] | None:
    marker = item.get_closest_marker("background_lab")
    if marker is None:
        return None
    return str(marker.args[0]), float(marker.args[1])


def start(items: list[pytest.Item]) -> None:
    """Start the labs of the collected tests and move those tests to the end."""
    marked = [item for item in items if _key(item) is not None]
    if not marked or os.geteuid() != 0:
        return  # the tests themselves say why they cannot run
    for item in marked:
        module, seconds = _key(item)  # type: ignore[misc]
        if module in _RUNNING:
            continue
        out = Path(tempfile.mkstemp(prefix="zsn-background-", suffix=".json")[1])
        out.unlink()
        process = subprocess.Popen([sys.executable, "-m", module, str(out), str(seconds)],
                                   cwd=_REPO, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _RUNNING[module] = (process, out, seconds)
    items[:] = [item for item in items if item not in marked] + marked


def result(item: pytest.Item) -> dict[str, Any]:
    """What the item's lab wrote, once it has finished."""
    key = _key(item)
    assert key is not None, "not a background_lab test"
    module, seconds = key
    if module not in _RUNNING:  # not started at collection (run on its own without root?)
        start([item])
    process, out, _ = _RUNNING[module]
    started = time.monotonic()
    try:
        _, stderr = process.communicate(timeout=seconds + 300)
    except subprocess.TimeoutExpired:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
        pytest.fail(f"{module} did not finish within {seconds + 300:.0f} s")
    waited = time.monotonic() - started
    if not out.exists():
        pytest.fail(f"{module} wrote no result (exit {process.returncode}): "
                    f"{stderr.decode(errors='replace')[-2000:]}")
    data: dict[str, Any] = json.loads(out.read_text())
    data["waited_for"] = waited
    return data


def stop_all() -> None:
    for process, out, _ in _RUNNING.values():
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(120)  # its lab's cleanup
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        out.unlink(missing_ok=True)
    _RUNNING.clear()
