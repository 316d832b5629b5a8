"""ZFS pane: pools with health and live I/O, the highlighted pool's vdev tree or datasets.

Live per-pool and per-vdev I/O comes from one `zpool iostat` stream per pool
(`zsn.zfs.monitor`), running only while the pane is shown; health, trees, scans and
datasets from `zsn.zfs.live.ZfsReader`, which between full reads only looks at the
pools' kstat state files. Rows and columns come from `zsn.zfs.view`; the pane's
`LiveTable`s drop the columns that do not fit, whole, least important first, and
repaint only the cells that changed (iostat updates several times a second).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import ContentSwitcher

from zsn.every import Every
from zsn.lint import Finding
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.tui.panes.base import GONE_NOTICE_SECONDS, GoneRows, LivePane, NotNow
from zsn.tui.panes.zfs_replication import Background
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.safe import SafeStatic
from zsn.tui.widgets.status import Severity, StatusLine
from zsn.tui.widgets.table import LiveTable
from zsn.zfs import actions, snapshots, view
from zsn.zfs.disk_health import EMPTY, DiskReading
from zsn.zfs.diskwatch import DiskWatch
from zsn.zfs.export import schedules_to_dict
from zsn.zfs.facts import leaf_paths
from zsn.zfs.live import (
    ZfsReader,
    find_program,
    require_program,
    run_zfs_command,
)
from zsn.zfs.model import Dataset, IostatRow, Pool, ZfsSnapshot
from zsn.zfs.monitor import IostatMonitor, PoolIostat
from zsn.zfs.protection import collect as collect_protection
from zsn.zfs.protection import refreshed
from zsn.zfs.scrub_actions import schedules_of
from zsn.zfs.scrub_history import EMPTY as NO_SCRUBS
from zsn.zfs.scrub_history import ScrubHistory, ScrubWatch
from zsn.zfs.send import SendRequest
from zsn.zfs.snapshots import Snapshot, read_dataset
from zsn.zfs.transfers import read_transfers


def now() -> float:
    """The wall clock for "scrubbed 3d ago" (replaced in snapshot tests)."""
    return time.time()


SNAPSHOTS_EVERY = 10.0
"""Seconds between two reads of the shown dataset's snapshots."""
PROTECTION_EVERY = 10.0
"""Seconds between two readings of the policies' snapshots and the jobs' bytes behind
(the ages and a running transfer's progress follow every refresh)."""
SCHEDULES_EVERY = 60.0
"""Seconds between two readings of the schedules (unit files, the cron job, a zfs get)
while they are shown (the time to the next run follows every refresh)."""

VALUES = {
    "compression": ("lz4", "zstd", "gzip", "zle", "off"),
    "atime": ("off", "on"),
    "xattr": ("sa", "dir", "on"),
    "recordsize": ("16K", "64K", "128K", "1M"),
}
"""The short lists the property dialog offers (zsn zfs set takes any valid value)."""


def no_samples(pool: str, name: str) -> list[int]:
    return []


@dataclass
class ZfsView:
    snapshot: ZfsSnapshot
    io: dict[str, PoolIostat] = field(default_factory=dict)
    reads: Callable[[str, str], list[int]] = no_samples
    writes: Callable[[str, str], list[int]] = no_samples
    transfers: dict[str, list[dict[str, Any]]] | None = None
    """Read while the transfers view is shown (`zsn.zfs.transfers`)."""
    snapshots: tuple[str, list[Snapshot]] | None = None
    """A dataset's snapshots, while the snapshots view shows them."""
    disks: DiskReading = EMPTY
    """The disks under the leaves and their SMART (read by `DiskWatch` in its own
    thread: taken as they are, never waited for)."""
    protection: dict[str, Any] | None = None
    """The policies' and jobs' proof, while the policies or transfers view is shown
    (`zsn.zfs.protection`)."""
    scrubs: ScrubHistory = NO_SCRUBS
    """The pools' finished scrubs (read by `ScrubWatch` in its own thread)."""
    schedules: dict[str, Any] | None = None
    """The scrub and trim schedules (`zsn.zfs.export.schedules_to_dict`), while the
    schedules view is shown."""


class ZfsPane(LivePane[ZfsView]):
    PANE_HELP: ClassVar[str] = """\
### ZFS
The upper table lists the pools: health, capacity, read and write bandwidth over the
last interval, and the scrub (progress and ETA while it runs, else how long ago the last
one finished). The line under it shows the highlighted pool's scan in full.

The lower table is the highlighted pool's vdev tree (`v`): mirrors, raidz and draid
groups, then the dedup, special, logs, cache and spares groups, each row with its
state, read/write/checksum error counts, bandwidth, the read and the write trend of
the last intervals (a scrub shows as reads, a resilver as writes to the new device),
operations per second and mean latency (total wait; disk wait apart), and its disk's
health from SMART (`ok 34°`, `warn`, `FAIL`, `asleep`: zsn never wakes a disk to read
it; read at most every 10 minutes per disk, as root). The box under the tree shows the
highlighted device's way down to its disks (partition, dm-crypt, multipath), the disk
(model, serial, size, by-id name) and its SMART with the reading's age, and what is
wrong with it. On the pool's own row the box shows its last finished scrubs: how long
each took, how much it read and how fast, and the last one against the median of the
ones before (a scrub that got slower after a change shows there); from the pool's
history (as root) and zsn's own record. `*` after a state: the device is resilvering.
Or its datasets (`d`): used, available, compression, record size, compression ratio,
atime, xattr, mountpoint. A pool that disappears (exported, or its disks gone) stays
greyed in the list until it is back.

I/O comes from one `zpool iostat` per pool, running only while this tab is shown;
one that stalls, dies or prints garbage is stopped, shown and restarted.

- `s` start (or resume) a scrub, `p` pause it (keeps its progress), `x` stop it.
- `c` clear error counters (of the highlighted device in the vdev tree, else the pool).
- `enter` on a dataset shows all of it (every property with its source, the
  mountpoint first).
- `e` set compression, atime, xattr or recordsize on the highlighted dataset: the
  plan says what changes for data already written and which datasets inherit it.
- `l` the advisor: findings from the field notes, each with its fix as a command
  (zsn never runs a fix that alters a pool on its own).
Every change is shown as a plan first and applied on `y`. Nothing destroys data.

#### Snapshots and replication
- `n` the highlighted dataset's snapshots (`d` first to pick the dataset; the pool's
  own dataset otherwise): creation, used, referenced, holds. `N` takes one (a plan).
- `a` the snapshot policies (`zsn zfs policy set`): each dataset a policy covers with,
  per class, how old its newest snapshot is, how many there are of how many kept, and
  `late` when the newest is older than two periods; the title says how the last run
  went.
- `t` the transfers: the replication jobs first (`zsn zfs replicate add`: last
  success, lag, bytes behind, `stalled` when a transfer moved nothing for 5 minutes,
  `late` without a success for two periods), then each source and target pair's
  running send (progress, rate, ETA) or its last result (bytes, time, resumed or
  not), also those started from the command line (`zsn zfs send`).
- `S` sends the highlighted dataset (or the highlighted transfer's pair again, which
  resumes an interrupted one): a form, then the plan; it runs in the background and
  goes on if zsn quits. `K` stops a running send (the target keeps what arrived).
- `P` probes the highlighted transfer's pair: the source's read speed, zsn's pipe, SSH
  (with its cipher) and TCP to the target, the target's write speed, and which one
  limits the transfer.

#### Schedules
- `w` the scrub and trim schedules (`zsn zfs scrub schedule`): per pool and kind, when
  its timer (or the distribution's cron job) runs it, the next run, and `twice`,
  `never` or `clashes with` a pool on the same controller or disks (`zsn zfs scrub
  schedule --stagger` spreads them).
"""

    # Most important first: the footer shows as many as fit.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "scrub('start')", "Scrub"),
        Binding("d", "lower('datasets')", "Datasets"),
        Binding("v", "lower('vdevs')", "Vdevs"),
        Binding("n", "lower('snapshots')", "Snapshots"),
        Binding("a", "lower('policies')", "Policies"),
        Binding("t", "lower('transfers')", "Transfers"),
        Binding("S", "send", "Send…", key_display="S"),
        Binding("e", "set_property", "Set prop"),
        Binding("l", "advise", "Advisor"),
        Binding("p", "scrub('pause')", "Pause scrub"),
        Binding("x", "scrub('stop')", "Stop scrub"),
        Binding("c", "clear", "Clear errors"),
        Binding("N", "take_snapshot", "Snapshot…", key_display="N"),
        Binding("P", "probe", "Probe", key_display="P"),
        Binding("K", "stop_transfer", "Stop send", key_display="K"),
        Binding("w", "lower('schedules')", "Schedules"),
        Binding("r", "refresh_now", "Refresh", show=False),
    ]

    def __init__(self, host: Host, refresh_seconds: float, **kwargs: Any) -> None:
        super().__init__(host, refresh_seconds, **kwargs)
        self.reader = ZfsReader(host)
        self._monitor: IostatMonitor | None = None
        self._monitor_lock = threading.Lock()
        self._view: ZfsView | None = None
        self._shown_pool: str | None = None
        self._scan = ""
        self._io_pending = threading.Event()
        self.gone = GoneRows(lambda message: self.notify(
            message, severity="warning", timeout=GONE_NOTICE_SECONDS), "Pool ")
        self.background = Background(host)
        self._lower = "vdevs"
        """The lower table shown (read by `fetch` in its thread)."""
        self._snapshots_of: str | None = None
        self._snapshots: tuple[str, float, list[Snapshot]] | None = None
        self.disks = DiskWatch(host)
        self.scrubs = ScrubWatch(host)
        self._disk_text: list[str] | None = None
        self._protection = Every(PROTECTION_EVERY)
        self._schedules = Every(SCHEDULES_EVERY)

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield LiveTable(view.POOL_COLUMNS, id="zfs-pools", title="Pools")
        yield SafeStatic("", id="zfs-scan")
        with ContentSwitcher(initial="zfs-vdevs", id="zfs-lower"):
            yield LiveTable(view.VDEV_COLUMNS, id="zfs-vdevs",
                            title="Vdevs (d: datasets)")
            yield LiveTable(view.DATASET_COLUMNS, id="zfs-datasets",
                            title="Datasets (v: vdevs)", empty_text="No datasets.")
            yield LiveTable(view.SNAPSHOT_COLUMNS, id="zfs-snapshots", title="Snapshots",
                            empty_text="No snapshots (N takes one).")
            yield LiveTable(view.POLICY_COLUMNS, id="zfs-policies", title="Policies",
                            empty_text="No snapshot policies (zsn zfs policy set DATASET "
                                       "--keep hourly=24,daily=7).")
            yield LiveTable(view.TRANSFER_COLUMNS, id="zfs-transfers", title="Transfers",
                            empty_text="No transfers yet (S sends a dataset).")
            yield LiveTable(view.SCHEDULE_COLUMNS, id="zfs-schedules", title="Schedules",
                            empty_text="No pools to schedule.")
        yield DetailsBox("Disk", id="zfs-disk")

    # -- the iostat streams: only while shown --------------------------------------
    def _monitor_for(self) -> IostatMonitor | None:
        with self._monitor_lock:
            if self._monitor is None:
                zpool = find_program("zpool")
                if zpool is None:
                    return None
                # zpool iostat samples at least a second: shorter is noise and load
                self._monitor = IostatMonitor(zpool, max(1.0, self.refresh_seconds),
                                              on_update=self._iostat_output)
            return self._monitor

    def _iostat_output(self) -> None:
        """A reader thread got lines: read them on the UI side, once per burst."""
        if self._io_pending.is_set():
            return
        self._io_pending.set()
        try:
            self.app.call_from_thread(self._iostat_arrived)
        except RuntimeError:  # the app is shutting down
            self._io_pending.clear()

    def _iostat_arrived(self) -> None:
        self._io_pending.clear()
        if self.is_mounted and self._view is not None and self._monitor is not None:
            self._view.io = self._monitor.poll()
            self._refresh_io()

    def on_hide(self) -> None:
        self._stop_streams()

    def on_unmount(self) -> None:
        self._stop_streams()
        self.disks.stop()
        self.scrubs.stop()

    def _stop_streams(self) -> None:
        with self._monitor_lock:
            monitor, self._monitor = self._monitor, None
        if monitor is not None:
            monitor.stop()

    # -- data ------------------------------------------------------------------
    def fetch(self) -> ZfsView:
        shown = self._fetch_pools()
        if self._lower in ("transfers", "policies"):
            shown.transfers = read_transfers(self.host)
            shown.protection = refreshed(
                self._protection.get("protection", lambda: collect_protection(self.host)),
                shown.transfers, now())
        if self._lower == "schedules" and shown.snapshot.pools:
            pools = shown.snapshot.pools
            shown.schedules = self._schedules.get(
                tuple(pool.name for pool in pools),
                lambda: schedules_to_dict(schedules_of(self.host, pools), now()))
        dataset = self._snapshots_of
        if self._lower == "snapshots" and dataset is not None:
            shown.snapshots = (dataset, self._read_snapshots(dataset))
        return shown

    def _read_snapshots(self, dataset: str) -> list[Snapshot]:
        """The dataset's snapshots, read again every `SNAPSHOTS_EVERY` seconds."""
        cached = self._snapshots
        now = time.monotonic()
        if cached is None or cached[0] != dataset or now - cached[1] > SNAPSHOTS_EVERY:
            found = snapshots.read(run_zfs_command, require_program("zfs"), dataset)
            cached = self._snapshots = (dataset, now, found)
        return cached[2]

    def _fetch_pools(self) -> ZfsView:
        snapshot = self.reader.read()
        disks = EMPTY
        scrubs = NO_SCRUBS
        if snapshot.pools:
            self.disks.want(leaf_paths(snapshot.pools))
            disks = self.disks.latest()
            self.scrubs.want(snapshot.pools)
            scrubs = self.scrubs.latest()
        monitor = self._monitor_for() if snapshot.pools else None
        if monitor is None:
            self._stop_streams()
            return ZfsView(snapshot, disks=disks, scrubs=scrubs)
        if not self._is_shown():
            return ZfsView(snapshot, disks=disks, scrubs=scrubs)
        rows = {p.name: sum(1 for v in p.vdevs if v.kind != "group" and v.group != "spares")
                for p in snapshot.pools}
        monitor.watch([p.name for p in snapshot.pools], rows)
        return ZfsView(snapshot, monitor.poll(), monitor.history.reads,
                       monitor.history.writes, disks=disks, scrubs=scrubs)

    def show(self, snapshot: ZfsView) -> None:
        if not self._is_shown():  # hidden while this read ran: no stream may outlive that
            self._stop_streams()
        self._view = snapshot
        with self.app.batch_update():
            self._show_status(snapshot)
            self._update_pools()
            self._update_lower()
            self._update_replication(snapshot)
        for line in self.background.check():
            self.notify(f"The send started here failed: {line}", severity="error",
                        timeout=10)

    def _show_status(self, current: ZfsView) -> None:
        snapshot = current.snapshot
        severity: Severity
        if snapshot.unavailable:
            self.set_status([f"ZFS is not available here: {snapshot.unavailable}."], "info")
            return
        lines = list(snapshot.errors)
        for pool, state in current.io.items():
            if state.error:
                lines.append(f"I/O of {pool}: {state.error}")
        if not snapshot.pools and not snapshot.errors:
            lines.append("No pools. zsn shows and tunes pools; create one with zpool create.")
            self.set_status(lines, "info")
            return
        lines += [f"Note: {note}." for note in snapshot.notes]
        severity = "error" if snapshot.errors else "warning"
        self.set_status(lines[:4] + ([f"... and {len(lines) - 4} more"] if len(lines) > 4
                                     else []), severity)

    def _pool_io(self, pool: str) -> dict[str, IostatRow]:
        state = self._view.io.get(pool) if self._view else None
        if state is None or state.latest is None:
            return {}
        return {row.name: row for row in state.latest.rows}

    def _update_pools(self) -> None:
        assert self._view is not None
        rows = view.pool_rows(self._view.snapshot.pools, self._pool_io, now())
        snapshot = self._view.snapshot
        failed = not snapshot.pools and (snapshot.errors or snapshot.unavailable)
        # A read that failed says why in the status line; it is not every pool vanishing.
        self.query_one("#zfs-pools", LiveTable).update(rows if failed else self.gone.merge(rows))
        self._update_scan()

    def _update_scan(self) -> None:
        text = self._scan_text()
        if text.markup != self._scan:  # a Static's update re-lays out the screen
            self._scan = text.markup
            self.query_one("#zfs-scan", SafeStatic).update(text)

    def on_resize(self, event: events.Resize) -> None:
        if self._view is not None:
            self._update_scan()  # the scan line keeps the parts that fit the new width

    def selected_pool(self) -> Pool | None:
        """The highlighted pool; None when there is none, or it is a gone row."""
        if self._view is None or not self._view.snapshot.pools:
            return None
        key = self.query_one("#zfs-pools", LiveTable).cursor_key
        if key is not None and key in self.gone.gone_keys:
            return None
        pool = self._view.snapshot.pool(key) if key is not None else None
        return pool or self._view.snapshot.pools[0]

    def _scan_text(self) -> Text:
        pool = self.selected_pool()
        if pool is None or self._view is None:
            return Text("")
        width = self.query_one("#zfs-scan", SafeStatic).content_region.width or self.size.width
        text = Text("\n".join(view.scan_lines(pool, now(), max(20, width))), no_wrap=True)
        if pool.status:
            text.append("\n" + pool.status, style=self.theme_colour("text-warning"))
        return text

    def _update_lower(self) -> None:
        vdevs = self.query_one("#zfs-vdevs", LiveTable)
        datasets = self.query_one("#zfs-datasets", LiveTable)
        pool = self.selected_pool()
        if pool is None or self._view is None:
            vdevs.update([])
            datasets.update([])
            return
        if pool.name != self._shown_pool:  # another pool: its rows replace the old ones
            self._shown_pool = pool.name
            vdevs.clear()
            datasets.clear()
        reads, writes = self._view.reads, self._view.writes
        vdevs.update(view.vdev_rows(pool, self._pool_io(pool.name),
                                    lambda name: reads(pool.name, name),
                                    lambda name: writes(pool.name, name), self._view.disks))
        datasets.update(view.dataset_rows(self._view.snapshot.datasets_of(pool.name)))
        self._update_disk()

    def _update_disk(self) -> None:
        """The box under the vdev tree: the highlighted device's disks, when it is one;
        the pool's scrubs on the pool's own row."""
        lines: list[str] = []
        title = "Disk"
        pool = self.selected_pool()
        key = self.query_one("#zfs-vdevs", LiveTable).cursor_key
        if self._lower == "vdevs" and pool is not None and key is not None \
                and self._view is not None:
            vdev = pool.vdev(key.split("\0", 1)[1])
            if vdev is not None and vdev.is_leaf:
                lines = view.disk_lines(vdev, self._view.disks, now())
            elif vdev is not None and vdev.kind == "pool":
                lines = view.scrub_lines(pool.name, self._view.scrubs.of(pool.name), now())
                title = "Scrubs"
        box = self.query_one("#zfs-disk", DetailsBox)
        if lines != self._disk_text:
            self._disk_text = lines
            box.display = bool(lines)
            if box.border_title != title:
                box.border_title = title
            box.show_lines(lines)

    def _refresh_io(self) -> None:
        with self.app.batch_update():
            self._update_pools()
            self._update_lower()
            if self._view is not None:
                self._show_status(self._view)

    # -- events and actions ------------------------------------------------------
    def on_live_table_highlighted(self, event: LiveTable.Highlighted) -> None:
        if event.table.id == "zfs-pools" and self._view is not None:
            self._update_scan()
            self._update_lower()
        elif event.table.id == "zfs-vdevs" and self._view is not None:
            self._update_disk()
        self.state_changed()

    def on_live_table_selected(self, event: LiveTable.Selected) -> None:
        if event.table.id == "zfs-datasets":
            self.open_dataset(event.key)

    def open_dataset(self, name: str) -> None:
        """All of a dataset (`zfs get all`) and its snapshots, read in a thread, in a
        scrolled box."""
        from zsn.tui.screens.dataset import DatasetScreen

        def read() -> DatasetScreen:
            properties, taken = read_dataset(name)
            return DatasetScreen(name, properties, taken)

        def show(screen: DatasetScreen) -> None:
            self.app.push_screen(screen)

        self.run_in_thread(read, show)

    def urgent_keys(self) -> tuple[str, ...]:
        """While a scrub runs: pause and stop it; paused: resume or stop; then, on the
        datasets, open, set, snapshots and send; on the snapshots, take one; on the
        transfers, stop the highlighted running one, probe, send."""
        pool = self.selected_pool()
        scan = pool.scan if pool is not None else None
        keys: tuple[str, ...] = ()
        if scan is not None and scan.function == "scrub" and scan.state == "scanning":
            keys = ("p", "x")
        elif scan is not None and scan.function == "scrub" and scan.state == "paused":
            keys = ("s", "x")
        lower = self.query_one("#zfs-lower", ContentSwitcher).current
        if lower == "zfs-datasets":
            keys += ("enter", "e", "n", "S")
        elif lower == "zfs-snapshots":
            keys += ("N", "S")
        elif lower == "zfs-transfers":
            record = self.selected_transfer()
            running = record is not None and record.get("state") == "running"
            keys += ("K", "P", "S") if running else ("S", "P")
        return keys

    def not_now(self, action: str, parameters: tuple[object, ...]) -> NotNow | None:
        """No ZFS or no pools: only refresh; a scrub's pause and stop only while one
        runs; `e` on a highlighted dataset; a transfer's probe and stop on one."""
        if action == "refresh_now" or self._view is None:
            return None  # not read yet: the keys say what they find when pressed
        snapshot = self._view.snapshot
        if snapshot.unavailable:
            return NotNow(f"ZFS is not available here: {snapshot.unavailable}.", hidden=True)
        if not snapshot.pools:  # none, or none could be read
            return NotNow(snapshot.errors[0] if snapshot.errors else "No pools here.",
                          hidden=True)
        lower = self.query_one("#zfs-lower", ContentSwitcher).current
        if action == "lower":  # (n again: the snapshots of what is highlighted now)
            which = parameters[0] if parameters else ""
            shown = lower == f"zfs-{which}" and which != "snapshots"
            return NotNow("Already shown.", hidden=True) if shown else None
        if action in ("probe", "stop_transfer"):
            return self._transfer_not_now(action, lower == "zfs-transfers")
        if action == "set_property":
            if lower != "zfs-datasets":
                return NotNow("Show the datasets (d), highlight one, then press e.",
                              hidden=True)
            return None if self.selected_dataset() is not None else NotNow(
                "Highlight a dataset, then press e.")
        pool = self.selected_pool()
        if action in ("scrub", "clear") and pool is None:
            return NotNow("The highlighted pool is gone.")
        if action == "scrub" and pool is not None:
            return self._scrub_not_now(pool, str(parameters[0]) if parameters else "start")
        return None

    def _transfer_not_now(self, action: str, shown: bool) -> NotNow | None:
        record = self.selected_transfer()
        if action == "probe" and record is None:
            return NotNow("Highlight a transfer to probe its path (t shows them; S sends "
                          "one first).", hidden=not shown)
        if action == "stop_transfer" and (record is None or record.get("state") != "running"):
            return NotNow("Highlight a running transfer in the transfers view (t).",
                          hidden=not shown or record is not None)
        return None

    @staticmethod
    def _scrub_not_now(pool: Pool, verb: str) -> NotNow | None:
        scan = pool.scan
        running = scan is not None and scan.state == "scanning"
        scrubbing = running and scan is not None and scan.function == "scrub"
        paused = scan is not None and scan.function == "scrub" and scan.state == "paused"
        if verb == "start" and running:
            return NotNow(f"A scrub is running on {pool.name}: p pauses it, x stops it."
                          if scrubbing else f"{pool.name} is resilvering: a scrub can "
                          "start when it is done.", hidden=True)
        if verb == "pause" and not scrubbing:
            return NotNow(f"No scrub is running on {pool.name}"
                          + (" (it is paused: s resumes it)." if paused else "."), hidden=True)
        if verb == "stop" and not (scrubbing or paused):
            return NotNow(f"No scrub is running or paused on {pool.name}.", hidden=True)
        return None

    def action_lower(self, which: str) -> None:
        if which == "snapshots":
            self._snapshots_of = self._dataset_for_snapshots()
            table = self.query_one("#zfs-snapshots", LiveTable)
            table.set_title(f"Snapshots of {self._snapshots_of}" if self._snapshots_of
                            else "Snapshots")
            if self._snapshots is not None and self._snapshots[0] != self._snapshots_of:
                table.clear()
        self._lower = which
        self.query_one("#zfs-lower", ContentSwitcher).current = f"zfs-{which}"
        self._update_disk()
        self.query_one(f"#zfs-{which}", LiveTable).focus()
        self.state_changed()
        if which in ("snapshots", "transfers", "policies", "schedules"):
            self.poll(force=True)

    # -- snapshots and transfers -----------------------------------------------------
    def _dataset_for_snapshots(self) -> str | None:
        """The highlighted dataset, else the highlighted pool's own dataset."""
        dataset = self.selected_dataset()
        pool = self.selected_pool()
        if dataset is not None and (pool is None or dataset.pool == pool.name):
            return dataset.name
        return pool.name if pool is not None else None

    def _update_replication(self, current: ZfsView) -> None:
        protection = current.protection or {}
        if current.transfers is not None:
            table = self.query_one("#zfs-transfers", LiveTable)
            table.set_title(view.jobs_title(protection.get("jobs", ()), now()))
            table.update(view.transfer_rows(current.transfers, now(),
                                            protection.get("jobs", ())))
        if current.protection is not None:
            table = self.query_one("#zfs-policies", LiveTable)
            line, _ = view.last_run_line(protection, now())
            table.set_title(f"Policies: {line}")
            table.update(view.policy_rows(protection))
        if current.schedules is not None:
            table = self.query_one("#zfs-schedules", LiveTable)
            table.set_title(view.schedules_title(current.schedules))
            table.update(view.schedule_rows(current.schedules, now()))
        if current.snapshots is not None and current.snapshots[0] == self._snapshots_of:
            dataset, found = current.snapshots
            self.query_one("#zfs-snapshots", LiveTable).update(
                view.snapshot_rows(dataset, found))

    def selected_transfer(self) -> dict[str, Any] | None:
        """The highlighted transfer's record (running, else the pair's last)."""
        current = self._view.transfers if self._view is not None else None
        key = self.query_one("#zfs-transfers", LiveTable).cursor_key
        if current is None or key is None or self._lower != "transfers":
            return None
        job = None
        if key.startswith("job\0"):  # a replication job's row: its pair's transfer
            jobs = (self._view.protection or {}).get("jobs", ()) if self._view else ()
            job = next((j for j in jobs if j["name"] == key[4:]), None)
            if job is None:
                return None
            key = f"{job['source']}\0{job['target']}"
        for record in [*current.get("running", ()), *current.get("last", ())]:
            if f"{record['source']}\0{record['target']}" == key:
                return dict(record)
        if job is not None:
            return {"source": job["source"], "target": job["target"], "via": job["via"],
                    "raw": job["raw"], "recursive": job["recursive"], "state": job["state"]}
        return None

    def action_send(self) -> None:
        from zsn.tui.panes.zfs_replication import SendForm

        record = self.selected_transfer()
        like = None
        if record is not None:
            source = str(record["source"])
            like = SendRequest(source, str(record["target"]), str(record.get("via") or "ssh"),
                               bool(record.get("raw")), bool(record.get("recursive")))
        else:
            dataset = self._dataset_for_snapshots()
            if dataset is None:
                self.notify("No dataset to send.", severity="warning")
                return
            source = dataset

        def started(request: SendRequest) -> None:
            self.background.start(request)

        def planned(plan: Plan | None) -> None:
            if plan is not None:
                self.run_plan(lambda: plan, after=lambda _: self.action_lower("transfers"))

        self.app.push_screen(SendForm(self.host, source, started, like), planned)

    def action_take_snapshot(self) -> None:
        from zsn.tui.screens.ask import AskScreen

        dataset = self._dataset_for_snapshots()
        if dataset is None:
            self.notify("No dataset to snapshot.", severity="warning")
            return
        name = time.strftime("zsn-%Y-%m-%d-%H%M")
        self.app.push_screen(AskScreen(
            f"Snapshot of {dataset}", f"Name after {dataset}@:", name,
            lambda text: snapshots.plan_snapshot(self.host, f"{dataset}@{text.strip()}")),
            self.show_plan)

    def action_probe(self) -> None:
        from zsn.tui.panes.zfs_replication import ProbeScreen

        record = self.selected_transfer()
        if record is None:
            self.action_lower("transfers")
            self.notify("Highlight a transfer to probe its path (S sends one first).",
                        severity="warning")
            return
        request = SendRequest(str(record["source"]), str(record["target"]),
                              str(record.get("via") or "ssh") if record.get("via") != "local"
                              else "ssh", bool(record.get("raw")),
                              bool(record.get("recursive")))
        self.app.push_screen(ProbeScreen(self.host, request))

    def action_stop_transfer(self) -> None:
        from zsn.tui.panes.zfs_replication import stop_plan

        record = self.selected_transfer()
        if record is None or record.get("state") != "running":
            self.notify("Highlight a running transfer in the transfers view (t).",
                        severity="warning")
            return
        self.run_plan(lambda: stop_plan(record))

    def action_refresh_now(self) -> None:
        self.reader.invalidate(datasets=True)
        self.poll(force=True)

    def _need_pool(self) -> Pool | None:
        pool = self.selected_pool()
        if pool is None:
            self.notify("No pool to act on.", severity="warning")
        return pool

    def plan_done(self, plan: Plan) -> None:
        """A plan (applied or failed part-way) changed pools or datasets: read all again."""
        self.reader.invalidate(datasets=True)
        self._snapshots = None
        self._protection = Every(PROTECTION_EVERY)
        self._schedules = Every(SCHEDULES_EVERY)

    def action_scrub(self, verb: str) -> None:
        pool = self._need_pool()
        if pool is not None:
            self.run_plan(lambda: actions.plan_scrub(self.host, pool.name, verb))

    def action_clear(self) -> None:
        pool = self._need_pool()
        if pool is None:
            return
        device = None
        switcher = self.query_one("#zfs-lower", ContentSwitcher)
        vdevs = self.query_one("#zfs-vdevs", LiveTable)
        key = vdevs.cursor_key
        if switcher.current == "zfs-vdevs" and vdevs.has_focus and key is not None:
            name = key.split("\0", 1)[1]
            vdev = pool.vdev(name)
            if vdev is not None and vdev.kind not in ("pool", "group"):
                device = name
        self.run_plan(lambda: actions.plan_clear(self.host, pool.name, device))

    def selected_dataset(self) -> Dataset | None:
        if self._view is None:
            return None
        key = self.query_one("#zfs-datasets", LiveTable).cursor_key
        return next((d for d in self._view.snapshot.datasets if d.name == key), None)

    def action_set_property(self) -> None:
        from zsn.tui.screens.ask import ChooseScreen

        switcher = self.query_one("#zfs-lower", ContentSwitcher)
        dataset = self.selected_dataset() if switcher.current == "zfs-datasets" else None
        if dataset is None:
            self.action_lower("datasets")
            self.notify("Highlight a dataset, then press e.", severity="warning")
            return
        current = {"compression": dataset.compression, "atime": dataset.atime,
                   "xattr": dataset.xattr, "recordsize": view.dataset_cells(dataset)[
                       "recordsize"].text}
        choices = [(prop, f"{prop} (now {current[prop] or '-'})") for prop in VALUES]

        def property_chosen(prop: str | None) -> None:
            if prop is None:
                return
            values = [(value, f"{prop}={value}: " + actions.preview(prop, value))
                      for value in VALUES[prop]]
            self.app.push_screen(ChooseScreen(f"{prop} for {dataset.name}", values),
                                 lambda value: value_chosen(prop, value))

        def value_chosen(prop: str, value: str | None) -> None:
            if value is not None:
                self.run_plan(lambda: actions.plan_set(self.host, dataset.name, prop, value))

        self.app.push_screen(ChooseScreen(f"Property of {dataset.name}", choices),
                             property_chosen)

    def action_advise(self) -> None:
        from zsn.tui.screens.findings import FindingsScreen
        from zsn.zfs.lint import lint

        def shown(findings: list[Finding]) -> None:
            self.app.push_screen(FindingsScreen(findings, empty_text=(
                "No findings: the pools and datasets follow the field notes' advice.")))

        self.notify("Reading pools, devices and kernel benchmarks ...", timeout=2)
        self.run_in_thread(lambda: lint(self.host), shown)
