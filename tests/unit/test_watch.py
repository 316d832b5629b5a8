"""`zsn.watch.Watch`: a reader in a thread of its own, woken by a change or a wait."""

from __future__ import annotations

import queue
import threading

import pytest

from zsn.errors import ZsnError
from zsn.watch import Watch

WAIT = 10.0


class Reads:
    """A read function that hands each call to the test and answers what it is told."""

    def __init__(self) -> None:
        self.asked: queue.Queue[object] = queue.Queue()
        self.answers: queue.Queue[object] = queue.Queue()
        self.told: queue.Queue[tuple[object, str | None]] = queue.Queue()

    def read(self, wanted: object) -> str:
        self.asked.put(wanted)
        answer = self.answers.get(timeout=WAIT)
        if isinstance(answer, BaseException):
            raise answer
        return f"{answer} of {wanted}"

    def on_reading(self, reading: str, error: str | None) -> None:
        self.told.put((reading, error))


@pytest.fixture
def reads() -> Reads:
    return Reads()


def test_reads_in_its_own_thread_and_hands_the_latest_at_once(reads: Reads) -> None:
    watch: Watch[str, str] = Watch(reads.read, "nothing yet", every=3600,
                                   on_reading=reads.on_reading)
    try:
        assert watch.latest() == "nothing yet" and not watch.running
        watch.want("tank")
        assert reads.asked.get(timeout=WAIT) == "tank"
        assert watch.latest() == "nothing yet"  # the read is under way: nobody waits
        reads.answers.put("first")
        assert reads.told.get(timeout=WAIT) == ("first of tank", None)
        assert watch.latest() == "first of tank" and watch.error is None
    finally:
        watch.stop()


def test_a_changed_key_wakes_it_the_same_does_not(reads: Reads) -> None:
    watch: Watch[tuple[str, int], str] = Watch(
        reads.read, "", every=3600, key=lambda wanted: wanted[0], on_reading=reads.on_reading)
    try:
        watch.want(("tank", 1))
        assert reads.asked.get(timeout=WAIT) == ("tank", 1)
        reads.answers.put("a")
        reads.told.get(timeout=WAIT)
        watch.want(("tank", 2))  # the same key: the thread is left to its wait
        assert not watch._wake.is_set()
        watch.want(("backup", 2))
        assert reads.asked.get(timeout=WAIT) == ("backup", 2)
        reads.answers.put("b")
        assert reads.told.get(timeout=WAIT) == ("b of ('backup', 2)", None)
        watch.wake()
        assert reads.asked.get(timeout=WAIT) == ("backup", 2)
        reads.answers.put("c")
        reads.told.get(timeout=WAIT)
    finally:
        watch.stop()


def test_a_failed_read_keeps_the_last_reading_and_says_why(reads: Reads) -> None:
    watch: Watch[str, str] = Watch(reads.read, "", every=3600, on_reading=reads.on_reading)
    try:
        watch.want("tank")
        reads.answers.put("good")
        assert reads.told.get(timeout=WAIT) == ("good of tank", None)
        watch.wake()
        reads.answers.put(ZsnError("zpool: no answer"))
        assert reads.told.get(timeout=WAIT) == ("good of tank", "zpool: no answer")
        assert watch.latest() == "good of tank" and watch.error == "zpool: no answer"
        watch.wake()
        reads.answers.put("again")
        assert reads.told.get(timeout=WAIT) == ("again of tank", None)
        assert watch.error is None
    finally:
        watch.stop()


def test_reads_again_after_every_seconds(reads: Reads) -> None:
    watch: Watch[str, str] = Watch(reads.read, "", every=0.01)
    try:
        watch.want("tank")
        for answer in ("1", "2", "3"):
            assert reads.asked.get(timeout=WAIT) == "tank"
            reads.answers.put(answer)
    finally:
        watch.stop()


def test_stop_ends_the_thread_and_a_stopped_watch_never_starts(reads: Reads) -> None:
    watch: Watch[str, str] = Watch(reads.read, "", every=3600, name="zsn-test-watch")
    watch.want("tank")
    reads.asked.get(timeout=WAIT)
    (thread,) = [t for t in threading.enumerate() if t.name == "zsn-test-watch"]
    assert thread.daemon
    watch.stop()
    reads.answers.put("last")
    thread.join(WAIT)
    assert not watch.running and watch.latest() == "last of tank"

    never: Watch[str, str] = Watch(reads.read, "", every=3600)
    never.stop()
    never.want("tank")
    assert not never.running and never.latest() == ""



def test_with_no_period_it_reads_when_woken(reads: Reads) -> None:
    watch: Watch[str, str] = Watch(reads.read, "", every=None, on_reading=reads.on_reading)
    try:
        watch.want("wg0")
        assert reads.asked.get(timeout=WAIT) == "wg0"
        reads.answers.put("first")
        assert reads.told.get(timeout=WAIT) == ("first of wg0", None)
        assert reads.asked.empty()  # no period: it waits to be woken
        watch.wake()
        assert reads.asked.get(timeout=WAIT) == "wg0"
        reads.answers.put("second")
        assert reads.told.get(timeout=WAIT) == ("second of wg0", None)
    finally:
        watch.stop()
