"""The peer history's costs: a poll's write for 5,000 peers, a year's size, the TUI idle.

Run as root from the repository root, with zsn's environment (psutil):

    .venv/bin/python bench/history.py [--rounds 15] [--peers 5000] [--idle-seconds 20]

1. **Write per poll** (goal: printed). A wireguard-go interface with 5,000 peers (as
   the other benchmarks build it, in a private namespace); its live read is recorded
   into a fresh store, then polls are recorded one minute apart, each written at
   once: every peer's counters moved (the busiest case: all 5,000 rows change), 50
   peers moved, none moved. The device's peers never handshake, so the polls' byte
   counts are laid over the read snapshot (the recorder sees only counters).
   Printed: wall time of `Recorder.record` (median, p90), bytes the process wrote
   to the store (``wchar`` from /proc/self/io: the write-ahead log's frames) and the
   store's growth.
2. **A year** (goal: <= 20 MB for 500 peers): 500 peers x 8,760 hours of traffic in
   every hour (random amounts from 1 KB to 100 GB: the size does not depend on them,
   every hour takes 4 bytes), written through the store's own `close_hours`, then
   the file's size after a checkpoint. Events are printed apart: a year of 500
   peers with 4 sessions a day.
3. **The TUI idle with history on and off** (goal of issue 9: < 1 % CPU with 200
   peers, 0 bytes/s): `bench/idle.py`'s measure, zsn on an 80x24 pseudo-terminal,
   200 peers, once with the default settings and once with
   ``/etc/zsn/history.toml: enabled = false``, interleaved.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _lab

from zsn.system.host import Host
from zsn.wireguard.history import PERIOD_HOURS, Event, HistoryStore, HourAmounts, PeerKey
from zsn.wireguard.live import read_wireguard
from zsn.wireguard.model import WireGuardSnapshot
from zsn.wireguard.recorder import Recorder

IFACE = "zbnhist0"
PRIVATE = ("/var/lib/zsn", "/etc/zsn")


def written_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise RuntimeError("no wchar in /proc/self/io")


class Traffic:
    """Every peer's counters as they grow poll after poll (a peer that does not move
    keeps its counters: one that went back would be a restart)."""

    def __init__(self, snapshot: WireGuardSnapshot) -> None:
        self.snapshot = snapshot
        [interface] = snapshot.interfaces
        self.counters = [(peer.rx_bytes, peer.tx_bytes) for peer in interface.peers]
        self.rng = random.Random(3)

    def poll(self, minute: int, moving: int) -> WireGuardSnapshot:
        """The snapshot `minute` minutes on, the first `moving` peers having sent and
        received a minute's worth (a few hundred KB) since the last poll."""
        for index in range(moving):
            rx, tx = self.counters[index]
            self.counters[index] = (rx + 90_000 + self.rng.randrange(9000),
                                    tx + 40_000 + self.rng.randrange(4000))
        [interface] = self.snapshot.interfaces
        peers = tuple(peer._replace(rx_bytes=rx, tx_bytes=tx)
                      for peer, (rx, tx) in zip(interface.peers, self.counters, strict=True))
        return self.snapshot._replace(interfaces=(interface._replace(peers=peers),),
                                      taken_at=self.snapshot.taken_at + 60 * minute)


def store_size(store: Path) -> int:
    return sum(part.stat().st_size for part in store.parent.glob(store.name + "*"))


def bench_writes(rounds: int, count: int) -> None:
    interface, _ = _lab.big_interface(IFACE, count)
    try:
        snapshot = read_wireguard(Host())
    finally:
        interface.stop()
    [device] = snapshot.interfaces
    print(f"read {len(device.peers)} peers of {device.name}")
    root = Path(tempfile.mkdtemp(prefix="zsn-bench-history-"))
    (root / "var/lib").mkdir(parents=True)
    host = Host(root)
    recorder = Recorder(host)
    store = root / "var/lib/zsn/history.sqlite"
    started, before = time.perf_counter(), written_bytes()
    recorder.record(snapshot, flush=True)
    print(f"first poll (every peer new: {count} peers and live rows inserted): "
          f"{(time.perf_counter() - started) * 1000:.1f} ms, "
          f"{(written_bytes() - before) / 1024:.0f} KiB written")
    minute = 0
    traffic = Traffic(snapshot)
    cases = {f"all {count} peers moved": count, "50 peers moved": 50, "no peer moved": 0}
    figures: dict[str, list[tuple[float, int, int]]] = {label: [] for label in cases}
    for _round in range(rounds):
        for label, moving in cases.items():
            minute += 1
            sample = traffic.poll(minute, moving)
            size, before = store_size(store), written_bytes()
            started = time.perf_counter()
            recorder.record(sample, flush=True)
            elapsed = time.perf_counter() - started
            figures[label].append((elapsed, written_bytes() - before, store_size(store) - size))
    recorder.close()
    print(f"\nhistory write per poll ({rounds} rounds, written at once; medians, p90):")
    print(f"  {'':28} {'ms':>8} {'p90 ms':>8} {'KiB written':>12} {'store growth KiB':>17}")
    for label, found in figures.items():
        times = sorted(f[0] * 1000 for f in found)
        p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
        print(f"  {label:28} {statistics.median(times):8.1f} {p90:8.1f} "
              f"{statistics.median(f[1] for f in found) / 1024:12.1f} "
              f"{statistics.median(f[2] for f in found) / 1024:17.1f}")
    print("  (the TUI and zsn serve write counters at most once a minute: a busy server "
          "pays the first line once a minute, an idle one nothing)")


def bench_year(peers: int = 500) -> None:
    root = Path(tempfile.mkdtemp(prefix="zsn-bench-year-"))
    (root / "var/lib").mkdir(parents=True)
    store = HistoryStore.open(Host(root))
    rng = random.Random(7)
    first_hour = int(time.time()) // 3600 - 8760
    started = time.perf_counter()
    with store.transaction() as db:
        ids = [store.add_peer(db, PeerKey("wg0", f"peer-{n:04d}"), f"peer-{n:04d}", 0)
               for n in range(peers)]
    for month in range(0, 8760, 730):  # a month of hours at a time, every peer
        with store.transaction() as db:
            store.close_hours(db, [
                (peer, HourAmounts(first_hour + hour, rng.randrange(1000, 10**11),
                                   rng.randrange(1000, 10**11)))
                for peer in ids for hour in range(month, min(month + 730, 8760))])
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    hourly = store_size(root / "var/lib/zsn/history.sqlite")
    print(f"\na year of hourly data, {peers} peers x 8760 hours, every hour busy: "
          f"{hourly / 1e6:.1f} MB ({hourly / (peers * 8760):.2f} bytes an hour; "
          f"{PERIOD_HOURS} hours a row), written in {time.perf_counter() - started:.0f} s")
    started_at = first_hour * 3600
    with store.transaction() as db:
        store.add_events(db, [
            (peer, Event(started_at + day * 86400 + session * 21600 + offset, kind,
                         f"198.51.100.{peer % 250}:{40000 + peer}",
                         3600 if kind == "disconnect" else None))
            for peer in ids for day in range(365) for session in range(4)
            for offset, kind in ((0, "connect"), (3600, "disconnect"))])
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    total = store_size(root / "var/lib/zsn/history.sqlite")
    events = peers * 365 * 4 * 2
    print(f"  with a year of events too ({events} events: 4 sessions a day each): "
          f"{total / 1e6:.1f} MB ({(total - hourly) / events:.0f} bytes an event)")
    store.close()


def bench_idle(seconds: float, rounds: int) -> None:
    import idle

    settings = Path("/etc/zsn/history.toml")
    interface, _ = _lab.big_interface("zbnidle0", 200)
    results: dict[str, list[idle.Idle]] = {"history on": [], "history off": []}
    try:
        for _round in range(rounds):
            for label in results:
                if label == "history off":
                    settings.write_text("enabled = false\n")
                else:
                    settings.unlink(missing_ok=True)
                results[label].append(idle.measure(
                    f"zsn, 200 peers, {label}", [sys.executable, "-m", "zsn"], 24, 80,
                    seconds, b"peer-00000"))
    finally:
        interface.stop()
        settings.unlink(missing_ok=True)
    print(f"\nTUI idle, 80x24, 200 peers, {seconds:g} s each, {rounds} rounds (medians):")
    for label, found in results.items():
        print(f"  {label:12} CPU {statistics.median(r.cpu_percent for r in found):5.2f} % "
              f"(each: {', '.join(f'{r.cpu_percent:.2f}' for r in found)}), "
              f"{statistics.median(r.bytes_per_second for r in found):.0f} bytes/s, "
              f"RSS {statistics.median(r.rss_mib for r in found):.0f} MiB")
    store = Path("/var/lib/zsn/history.sqlite")
    print(f"  the store after the 'on' runs: {store_size(store) / 1024:.0f} KiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--peers", type=int, default=5000)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--idle-rounds", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated: writes,year,idle")
    args = parser.parse_args()
    _lab.require(["wireguard-go", "ip", "unshare", "mount"])
    _lab.isolate(PRIVATE)
    _lab.compile_repo()
    print(f"load average {os.getloadavg()[0]:.2f}")
    skip = set(args.skip.split(","))
    if "writes" not in skip:
        bench_writes(args.rounds, args.peers)
    if "year" not in skip:
        bench_year()
    if "idle" not in skip:
        bench_idle(args.idle_seconds, args.idle_rounds)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
