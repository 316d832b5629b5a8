"""The session's kernel-lab guests, run beside the host tests instead of after them.

A guest has one vCPU and CI has two cores, so the host tests and a guest each have a
core. At collection (`start`), every selected ``test_kernel_group[GROUP]`` has its
group queued, longest first (the times of the machine's last runs, kept in
`DURATIONS`, else `REFERENCE_SECONDS`; a group never timed goes first, by its file's
size), and the tests
themselves move to the end of the session. While host tests run, one guest at a time
boots; once the first group's test is reached (`result`), the host tests are done and
the queue uses every slot the lab lock has (`tests.lab.kernel.LOCK_SLOTS`). The test
then waits for its group and fails as before with the guest's failing tests.

Nothing a guest reads changes while it runs: the checkout's bytecode is compiled before
the first boot (the guests mount the checkout with a cache that never revalidates).
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import tempfile
import threading
from collections import deque
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.lab.kernel import (
    BOOT_TIMEOUT,
    GUEST_TESTS,
    LAB_VENV,
    LOCK_SLOTS,
    LOCK_WAIT,
    REPO,
    GroupResult,
    groups,
    kill_guests,
    run_group,
)

BESIDE_HOST_TESTS = int(os.environ.get("ZSN_GUESTS_BESIDE_HOST_TESTS", "1"))
"""Guests that boot while host tests run (0: none, the guests wait for them and then
boot two at once): on a machine loaded by other work, a guest beside the host tests
can run past `BOOT_TIMEOUT`."""
DURATIONS = LAB_VENV.parent / "group-seconds.json"
"""Each group's last boot-to-exit seconds on this machine (the queue's order)."""
WAIT = len(groups()) * (BOOT_TIMEOUT + 60) + LOCK_WAIT
"""The longest a group's test waits for its result: every group before it and the lock."""


def _group_of(item: pytest.Item) -> str | None:
    if item.get_closest_marker("kernel") is None:
        return None
    callspec = getattr(item, "callspec", None)
    group = callspec.params.get("group") if callspec is not None else None
    return group if isinstance(group, str) else None


def _durations() -> dict[str, float]:
    try:
        data = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _remember(group: str, seconds: float) -> None:
    known = _durations()
    known[group] = round(seconds, 1)
    try:
        DURATIONS.parent.mkdir(parents=True, exist_ok=True)
        scratch = DURATIONS.with_name(f".{DURATIONS.name}.{os.getpid()}")
        scratch.write_text(json.dumps(known, indent=1, sort_keys=True))
        scratch.replace(DURATIONS)
    except OSError:
        pass  # the order is only a speed-up


REFERENCE_SECONDS = {"zfs_send": 659.1, "wlan": 446.7, "zfs": 446.0, "tryback": 338.8,
                     "links": 253.8, "serve": 127.7, "wireguard": 123.8}
"""Each group's boot-to-exit seconds in a full run on a 2-core box (2026-12-03), for a
machine that has timed none yet (CI's clean one). By file size, the longest group (zfs_send)
is third and started at +1,026 s in a full run there (2,100 s in all); longest first, at
+0 s (1,705 s in all)."""


def longest_first(names: list[str]) -> list[str]:
    """Groups never timed first (largest file first), then the slowest last time first
    (this machine's times, else `REFERENCE_SECONDS`)."""
    known = REFERENCE_SECONDS | _durations()

    def key(group: str) -> tuple[int, float]:
        if group in known:
            return 1, -known[group]
        path = GUEST_TESTS / f"test_{group}.py"
        return 0, -float(path.stat().st_size if path.exists() else 0)

    return sorted(names, key=key)


class GuestQueue:
    """Runs queued groups on worker threads, `width` guests at once."""

    def __init__(self, names: list[str]) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="zsn-guests-"))
        self._pending = deque(longest_first(names))
        self._futures: dict[str, Future[GroupResult]] = {name: Future() for name in names}
        self._changed = threading.Condition()
        self._width = BESIDE_HOST_TESTS
        self._running = 0
        self._stopped = False
        self._workers = [threading.Thread(target=self._work, name=f"guest-{n}", daemon=True)
                         for n in range(LOCK_SLOTS)]
        for worker in self._workers:
            worker.start()

    def widen(self) -> None:
        """The host tests are done: use every slot."""
        with self._changed:
            self._width = LOCK_SLOTS
            self._changed.notify_all()

    def _next(self) -> str | None:
        with self._changed:
            while not self._stopped and self._pending and self._running >= self._width:
                self._changed.wait()
            if self._stopped or not self._pending:
                return None
            self._running += 1
            return self._pending.popleft()

    def _work(self) -> None:
        while (group := self._next()) is not None:
            future = self._futures[group]
            try:
                result = run_group(group, self._folder / group)
                if result.run.boot.boot_to_exit and result.counts.get("tests"):
                    _remember(group, result.run.boot.boot_to_exit)
                future.set_result(result)
            except BaseException as error:  # a skip or failure the test re-raises  # noqa: BLE001
                future.set_exception(error)
            finally:
                with self._changed:
                    self._running -= 1
                    self._changed.notify_all()

    def result(self, group: str) -> GroupResult:
        if group not in self._futures:
            raise KeyError(group)
        self.widen()
        return self._futures[group].result(timeout=WAIT)

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        kill_guests()
        for worker in self._workers:
            worker.join(timeout=60)
        for group, future in self._futures.items():
            if not future.done():
                future.set_exception(RuntimeError(f"kernel group {group}: the session ended"))
        shutil.rmtree(self._folder, ignore_errors=True)


_QUEUE: GuestQueue | None = None


def start(items: list[pytest.Item]) -> None:
    """Queue the collected groups and move their tests to the end of the session."""
    global _QUEUE
    marked = [item for item in items if _group_of(item) is not None]
    if not marked or _QUEUE is not None:
        return
    items[:] = [item for item in items if item not in marked] + marked
    if os.geteuid() != 0:
        return  # each test says why it cannot run (`require_kernel_lab`)
    for tree in ("zsn", "tests"):
        compileall.compile_dir(REPO / tree, quiet=1)
    _QUEUE = GuestQueue([group for item in marked if (group := _group_of(item)) is not None])


def result(group: str, results: Path) -> GroupResult:
    """The group's result: from the session's queue, or booted now when it has none."""
    if _QUEUE is not None:
        return _QUEUE.result(group)
    return run_group(group, results)


def stop() -> None:
    global _QUEUE
    if _QUEUE is not None:
        _QUEUE.stop()
        _QUEUE = None
