"""The pane's poller: the whole table only when netlink says something changed, the
counters every time; rates drop a sample when a counter fell or the ifindex changed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import pytest

from tests.unit.links.conftest import captured_bytes
from zsn.links import live
from zsn.system import rtnetlink
from zsn.system.rtnetlink import Counters


class Watcher:
    def __init__(self) -> None:
        self.events = [True]

    def changed(self) -> bool:
        return self.events.pop(0) if self.events else False

    def close(self) -> None:
        pass


@dataclass
class FakeKernel:
    """What the monitor reads: the captured link dump, counters we move by hand."""

    records: list[rtnetlink.LinkRecord]
    counters: dict[int, Counters]
    reads: list[str] = field(default_factory=list)

    def read_links(self) -> list[rtnetlink.LinkRecord]:
        self.reads.append("links")
        return [replace(r, counters=self.counters.get(r.index)) for r in self.records]

    def read_counters(self) -> dict[int, Counters]:
        self.reads.append("counters")
        return dict(self.counters)


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    records = rtnetlink.decode_links(captured_bytes("rtm-getlink.bin"))
    state = FakeKernel(records, {r.index: r.counters for r in records if r.counters is not None})
    clock = iter(float(n // 2) for n in range(200, 2000))  # each poll reads it twice: 1 s apart
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))  # the clock zsn.links.live reads
    monkeypatch.setattr(rtnetlink, "read_links", state.read_links)
    monkeypatch.setattr(rtnetlink, "read_counters", state.read_counters)
    monkeypatch.setattr(rtnetlink, "read_addresses", lambda: [])
    return state


def bump(state: FakeKernel, index: int, by: int) -> None:
    old = state.counters[index]
    state.counters[index] = old._replace(rx_bytes=old.rx_bytes + by, rx_packets=old.rx_packets + 1)


def test_counters_every_poll_table_on_change(kernel: FakeKernel) -> None:
    watcher = Watcher()
    monitor = live.LinkMonitor(watcher=watcher)  # type: ignore[arg-type]
    first = monitor.poll()
    assert kernel.reads == ["links"] and first.rates == {}
    rr0 = first.by_name()["rr0"].index
    bump(kernel, rr0, 3000)
    second = monitor.poll()
    assert kernel.reads == ["links", "counters"]
    assert second.interfaces is first.interfaces  # nothing changed: the same objects
    assert second.rates["rr0"].rx_bytes == 3000.0 and second.rates["rr0"].rx_packets == 1.0
    assert second.history["rr0"] == (3000.0,)
    watcher.events.append(True)
    monitor.poll()
    assert kernel.reads[-1] == "links" and monitor.version == 2


def test_a_counter_that_fell_or_a_new_ifindex_drops_the_sample(
        kernel: FakeKernel) -> None:
    monitor = live.LinkMonitor(watcher=Watcher())  # type: ignore[arg-type]
    snapshot = monitor.poll()
    rr0 = snapshot.by_name()["rr0"]
    bump(kernel, rr0.index, -10)  # a reset
    assert "rr0" not in monitor.poll().rates
    bump(kernel, rr0.index, 500)
    assert monitor.poll().rates["rr0"].rx_bytes == 500.0
    # rr0 deleted and created again: same name, new ifindex.
    kernel.records = [replace(r, index=99) if r.name == "rr0" else r for r in kernel.records]
    kernel.counters[99] = kernel.counters[rr0.index]
    monitor._watcher.events.append(True)  # type: ignore[attr-defined]
    assert "rr0" not in monitor.poll().rates


def test_an_idle_host_gets_the_same_snapshot_until_something_moves(
        kernel: FakeKernel) -> None:
    monitor = live.LinkMonitor(history=3, watcher=Watcher())  # type: ignore[arg-type]
    monitor.poll()
    quiet = monitor.poll()
    assert quiet.rates["dum0"] is live.IDLE and quiet.history["dum0"] == (0.0,)
    assert monitor.poll() is quiet and monitor.poll() is quiet  # nothing to redo
    bump(kernel, quiet.by_name()["dum0"].index, 100)
    moved = monitor.poll()
    assert moved is not quiet and moved.rates["dum0"].rx_bytes > 0
    assert moved.history["dum0"][-1] > 0
