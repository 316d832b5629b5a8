"""The ``zfs`` section of `zsn --export`: pools, vdev trees, scans, I/O, datasets, advice.

Present when the ZFS module is loaded. Named on a host without it, the section says so
(``"available": false`` and the reason) and is complete: there is nothing to read.
Errors are for what exists but could not be read (zpool missing or refused, output not
understood). I/O rates of pools and vdevs are averages since each pool was imported
(`zpool iostat -Hpvl` without an interval); datasets carry their kstat counters.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zsn.errors import UnsafeStateError, ZsnError
from zsn.every import Every
from zsn.exporter.prometheus import MetricFamily
from zsn.system import files
from zsn.system.host import Host
from zsn.zfs.live import KSTAT_DIR, explain_failure, module_loaded, start_everything

if TYPE_CHECKING:
    from zsn.zfs.disk_health import DiskReading
    from zsn.zfs.diskwatch import DiskWatch
    from zsn.zfs.facts import Facts
    from zsn.zfs.model import Dataset, IostatBlock, IostatRow, Pool, Vdev, ZfsSnapshot
    from zsn.zfs.monitor import IostatMonitor, PoolIostat
    from zsn.zfs.scrub_history import ScrubHistory, ScrubWatch
    from zsn.zfs.scrubs import Schedules, Slot
    from zsn.zfs.snapshots import Snapshot

POOL_STATES = ("ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "REMOVED", "UNAVAIL", "SUSPENDED")


def present(host: Host) -> bool:
    return module_loaded(host)


def io_to_dict(row: IostatRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "read_ops_per_second": row.read_ops, "write_ops_per_second": row.write_ops,
        "read_bytes_per_second": row.read_bytes, "write_bytes_per_second": row.write_bytes,
        "read_wait_ns": row.total_wait_read, "write_wait_ns": row.total_wait_write,
        "disk_read_wait_ns": row.disk_wait_read, "disk_write_wait_ns": row.disk_wait_write,
    }


def vdev_to_dict(vdev: Vdev, io: IostatRow | None) -> dict[str, Any]:
    return {
        "name": vdev.name, "kind": vdev.kind, "group": vdev.group, "depth": vdev.depth,
        "parent": vdev.parent, "state": vdev.state, "read_errors": vdev.read_errors,
        "write_errors": vdev.write_errors, "checksum_errors": vdev.checksum_errors,
        "note": vdev.note or None, "io": io_to_dict(io),
    }


def pool_to_dict(pool: Pool, io: dict[str, IostatRow] | None = None) -> dict[str, Any]:
    rows = io or {}
    scan = pool.scan
    last_scrub = scan.ended if scan and scan.function == "scrub" and scan.state == "finished" \
        else None
    return {
        "name": pool.name, "health": pool.health, "size": pool.size,
        "allocated": pool.allocated, "free": pool.free, "fragmentation": pool.fragmentation,
        "capacity": pool.capacity, "dedup_ratio": pool.dedup_ratio, "ashift": pool.ashift,
        "freeing": pool.freeing, "leaked": pool.leaked, "readonly": pool.readonly,
        "status": pool.status or None, "action": pool.action or None,
        "data_errors": pool.data_errors,
        "scan": scan._asdict() if scan else None,
        "last_scrub": last_scrub,
        "io": io_to_dict(rows.get(pool.name)),
        "vdevs": [vdev_to_dict(v, rows.get(v.name)) for v in pool.vdevs if v.kind != "pool"
                  and v.kind != "group"],
    }


def dataset_to_dict(dataset: Dataset, counters: dict[str, int] | None) -> dict[str, Any]:
    data = dataset._asdict()
    data["counters"] = counters
    return data


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    return {"name": snapshot.full_name, "dataset": snapshot.dataset,
            "snapshot": snapshot.name, "guid": snapshot.guid, "createtxg": snapshot.createtxg,
            "created": snapshot.created, "used": snapshot.used,
            "referenced": snapshot.referenced, "holds": snapshot.holds}


KSTAT_MAX_BYTES = 1 << 16
"""An objset kstat is ~300 bytes; more is not one."""


def _read_kstat(path: Path) -> str:
    """One kstat, bounded, a regular file (`files.read_bytes`: plain os calls, one
    kstat per dataset). Bytes that are not UTF-8 stay visible."""
    return files.read_bytes(path, KSTAT_MAX_BYTES).decode(errors="replace")


def dataset_counters(host: Host, pools: list[str]) -> dict[str, dict[str, int]]:
    """Dataset -> reads, writes, read_bytes, written_bytes from ``POOL/objset-0x*`` kstats
    (counted since the dataset was loaded)."""
    from zsn.zfs import kstat
    from zsn.zfs.units import is_number

    found: dict[str, dict[str, int]] = {}
    for pool in pools:
        try:
            entries = files.list_files(host.path(f"{KSTAT_DIR}/{pool}"), "objset-*")
        except (OSError, ZsnError):
            continue
        for entry in entries:
            try:
                table = kstat.parse_table(_read_kstat(entry))
            except (OSError, ZsnError):
                continue
            name = table.get("dataset_name")
            numbers = {key: table.get(source, "") for key, source in (
                ("reads", "reads"), ("writes", "writes"), ("read_bytes", "nread"),
                ("written_bytes", "nwritten"))}
            if name and all(is_number(value) for value in numbers.values()):
                found[name] = {key: int(value) for key, value in numbers.items()}
    return found


def collect(host: Host, *, include_secrets: bool = False) -> dict[str, Any]:
    """`include_secrets` changes nothing: ZFS state holds no key material zsn reads."""
    reading = start_everything(host, now=time.time(), iostat=True)
    # While zpool and zfs run: the parsers and the advisor load.
    from zsn.zfs import iostat
    from zsn.zfs.lint import SUBJECT, advise

    snapshot, facts, outputs = reading.finish()
    if snapshot.unavailable:
        return section(snapshot, {}, {}, [], ())
    from zsn.zfs.diskwatch import read_with_disks
    from zsn.zfs.lint import with_schedules

    facts = with_schedules(host, snapshot, read_with_disks(host, snapshot, facts))
    errors: list[str] = []
    names = [pool.name for pool in snapshot.pools]
    blocks = {}
    result = outputs.get("iostat")
    if result is not None and names:
        if isinstance(result, Exception):
            errors.append(str(result))
        elif not result.ok:
            errors.append(explain_failure(result))
        else:
            try:
                blocks = iostat.parse_pools(result.stdout, names)
            except ZsnError as exc:
                errors.append(f"zpool iostat output not understood: {exc}")
    findings = [f.as_dict(SUBJECT) for f in advise(snapshot, facts)]
    from zsn.zfs.protection import collect as protection
    from zsn.zfs.scrub_history import ScrubReader

    # zsn's record and what zpool status says now; the pools' histories (a zpool run
    # each) are merged into the record by zsn zfs scrubs, the pane and zsn serve.
    scrubs = ScrubReader(host).read(snapshot.pools, history=False)
    data = section(snapshot, blocks, dataset_counters(host, names), findings,
                   (*facts.notes, *scrubs.notes), errors, _transfers(host, errors),
                   protection(host))
    return with_scrubs(with_schedules_dict(with_disks(data, snapshot, facts.disks), facts),
                       snapshot, scrubs)


def with_schedules_dict(data: dict[str, Any], facts: Facts) -> dict[str, Any]:
    """The section with its ``schedules`` (`zsn.zfs.scrubs`), when they were read."""
    if facts.schedules is not None:
        data["schedules"] = schedules_to_dict(facts.schedules, time.time())
    return data


def schedules_to_dict(schedules: Schedules, now: float) -> dict[str, Any]:
    """The ``schedules`` of ``--export zfs`` (and ``zsn zfs scrub schedule --json``)."""
    from zsn.zfs.scrubs import CRON_PROPERTY, clashes, describe_old_unit, rewrite_command

    def slot(found: Slot | None) -> dict[str, Any] | None:
        if found is None:
            return None
        return {"calendar": found.calendar, "when": found.describe(),
                "next_run": found.next_run(now)}

    cron = schedules.cron
    pools = []
    for entry in schedules.pools:
        runs = [timer.slot.next_run(now) for timer in entry.timers if timer.slot]
        cron_slot = cron.slots.get(entry.kind) if entry.cron and cron is not None else None
        if cron_slot is not None:
            runs.append(cron_slot.next_run(now))
        upcoming = [run for run in runs if run is not None]
        pools.append({
            "pool": entry.pool, "kind": entry.kind, "applies": entry.applies,
            "timers": [{"unit": t.unit, "origin": t.origin, "calendar": t.calendar,
                        "when": t.slot.describe() if t.slot else None,
                        "next_run": t.slot.next_run(now) if t.slot else None,
                        "old_unit": None if t.old_unit is None else {
                            "path": t.old_unit.path, "line": t.old_unit.line,
                            "problem": describe_old_unit(t, t.old_unit),
                            "rewrite": rewrite_command(t)}}
                       for t in entry.timers],
            "cron": entry.cron, "cron_property": entry.cron_property,
            "next_run": min(upcoming) if upcoming else None,
            "shares_with": list(entry.group),
        })
    return {
        "cron": None if cron is None else {
            "path": cron.path,
            **{kind: {"line": cron.lines[kind], "property": CRON_PROPERTY[kind],
                      **(slot(cron.slots.get(kind)) or {"calendar": None, "when": None,
                                                        "next_run": None})}
               if kind in cron.lines else None for kind in ("scrub", "trim")}},
        "units": {kind: "openzfs" if folder else "zsn"
                  for kind, folder in schedules.openzfs.items()},
        "pools": pools,
        "clashes": [[a.pool, a.kind, b.pool, b.kind] for a, b in clashes(schedules, now)],
    }


def with_disks(data: dict[str, Any], snapshot: ZfsSnapshot,
               reading: DiskReading | None) -> dict[str, Any]:
    """The section with its ``disks``: every leaf vdev's disks and their SMART."""
    from zsn.zfs.disk_export import entries

    if not snapshot.unavailable:
        data["disks"] = entries(snapshot.pools, reading, time.time()) if reading else []
    return data


def with_scrubs(data: dict[str, Any], snapshot: ZfsSnapshot,
                history: ScrubHistory | None) -> dict[str, Any]:
    """The section with its ``scrubs``: each pool's finished scrubs and their trend."""
    from zsn.zfs.scrub_history_export import entries

    if not snapshot.unavailable and history is not None:
        data["scrubs"] = entries(snapshot.pools, history)
    return data


def _transfers(host: Host, errors: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The transfers' records; records the state rule refuses are an error of the
    section (named, with the fix), not an empty list."""
    from zsn.zfs.transfers import read_transfers

    try:
        return read_transfers(host)
    except UnsafeStateError as exc:
        errors.append(str(exc))
        return {"running": [], "last": []}


def section(snapshot: ZfsSnapshot, blocks: dict[str, IostatBlock],
            counters: dict[str, dict[str, int]], findings: list[dict[str, Any]],
            notes: tuple[str, ...], errors: list[str] | None = None,
            transfers: dict[str, list[dict[str, Any]]] | None = None,
            protection: dict[str, Any] | None = None) -> dict[str, Any]:
    """The section from one reading: pools with their I/O blocks, datasets with their
    kstat counters, the advisor's findings and notes, the transfers (`zsn.zfs.transfers`),
    the snapshot policies' and replication jobs' proof (`zsn.zfs.protection`)."""
    from zsn.zfs.protection import empty

    if snapshot.unavailable:
        return {"available": False, "reason": snapshot.unavailable, "version": None,
                "pools": [], "datasets": [], "findings": [],
                "transfers": {"running": [], "last": []}, "protection": empty()}
    data: dict[str, Any] = {
        "available": True,
        "version": snapshot.version,
        "pools": [pool_to_dict(pool, {row.name: row for row in blocks[pool.name].rows}
                               if pool.name in blocks else None)
                  for pool in snapshot.pools],
        "datasets": [dataset_to_dict(d, counters.get(d.name)) for d in snapshot.datasets],
        "findings": findings,
        "transfers": transfers or {"running": [], "last": []},
        "protection": protection or empty(),
    }
    all_notes = list(snapshot.notes) + list(notes)
    if all_notes:
        data["notes"] = all_notes
    all_errors = list(snapshot.errors) + list(errors or ())
    if all_errors:
        data["errors"] = list(dict.fromkeys(all_errors))
    return data


IOSTAT_SECONDS = 10.0
"""The interval of `zsn serve`'s `zpool iostat` stream per pool: its I/O rates are
averages over the last one."""
ADVISE_SECONDS = 60.0
"""How often `zsn serve` gathers the advisor's facts (device sysfs, the pool cache
file) again when the pools stay the same."""
PROTECTION_SECONDS = 30.0
"""How often `zsn serve` lists the policies' snapshots and estimates the jobs' bytes
behind again (the ages are worked out afresh each scrape)."""


class Poller:
    """`zsn serve`'s reader: the pane's `ZfsReader` (kstat states between full reads),
    one `zpool iostat` stream per pool (`IostatMonitor`), the advisor every
    `ADVISE_SECONDS` or when the pools change."""

    def __init__(self, host: Host) -> None:
        from zsn.zfs.live import ZfsReader

        self.host = host
        self._reader = ZfsReader(host)
        self._monitor: IostatMonitor | None = None
        self._advice = Every(ADVISE_SECONDS)
        self._disks: DiskWatch | None = None
        self._scrubs: ScrubWatch | None = None
        self._protection = Every(PROTECTION_SECONDS, background=True)
        self._schedules: Schedules | None = None

    def poll(self) -> tuple[ZfsSnapshot, dict[str, PoolIostat]]:
        snapshot = self._reader.read()
        if not snapshot.pools:
            self._stop()
            return snapshot, {}
        self._watch_disks(snapshot)
        self._watch_scrubs(snapshot)
        monitor = self._monitor_for()
        if monitor is None:
            return snapshot, {}
        rows = {p.name: sum(1 for v in p.vdevs if v.kind != "group" and v.group != "spares")
                for p in snapshot.pools}
        monitor.watch([p.name for p in snapshot.pools], rows)
        return snapshot, monitor.poll()

    def section(self, reading: tuple[ZfsSnapshot, dict[str, PoolIostat]]) -> dict[str, Any]:
        snapshot, io = reading
        if snapshot.unavailable:
            return section(snapshot, {}, {}, [], ())
        names = [pool.name for pool in snapshot.pools]
        findings, notes = self._advice.get(
            (tuple(names), snapshot.pools), lambda: self._advise(snapshot))
        blocks = {pool: state.latest for pool, state in io.items() if state.latest is not None}
        errors = [f"zpool iostat {pool}: {state.error}" for pool, state in io.items()
                  if state.error]
        from zsn.zfs.protection import collect, refreshed

        disks = self._disks.latest() if self._disks is not None else None
        running = _transfers(self.host, errors)
        protection = refreshed(self._protection.get("protection", lambda: collect(self.host)),
                               running, time.time())
        scrubs = self._scrubs.latest() if self._scrubs is not None else None
        data = section(snapshot, blocks, dataset_counters(self.host, names), findings,
                       (*notes, *(scrubs.notes if scrubs else ())), errors, running, protection)
        if self._schedules is not None:
            data["schedules"] = schedules_to_dict(self._schedules, time.time())
        return with_scrubs(with_disks(data, snapshot, disks), snapshot, scrubs)

    def _watch_disks(self, snapshot: ZfsSnapshot) -> None:
        """The disks under the pools, mapped and their SMART read in a thread of their
        own (`zsn.zfs.diskwatch.DiskWatch`): a scrape never waits for a disk."""
        from zsn.zfs.diskwatch import DiskWatch
        from zsn.zfs.facts import leaf_paths

        if self._disks is None:
            self._disks = DiskWatch(self.host)
        self._disks.want(leaf_paths(snapshot.pools))

    def _watch_scrubs(self, snapshot: ZfsSnapshot) -> None:
        """The pools' scrubs (their histories, zsn's record) read in a thread of their
        own (`zsn.zfs.scrub_history.ScrubWatch`), which also records each scrub seen finished."""
        from zsn.zfs.scrub_history import ScrubWatch

        if self._scrubs is None:
            self._scrubs = ScrubWatch(self.host)
        self._scrubs.want(snapshot.pools)

    def _advise(self, snapshot: ZfsSnapshot) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
        from zsn.zfs.diskwatch import with_disks
        from zsn.zfs.facts import gather
        from zsn.zfs.lint import SUBJECT, advise, with_schedules

        facts = gather(self.host, snapshot.pools, dmsetup_output=None, now=time.time())
        if self._disks is not None:
            facts = with_disks(facts, self._disks.latest())
        facts = with_schedules(self.host, snapshot, facts)
        self._schedules = facts.schedules
        return [f.as_dict(SUBJECT) for f in advise(snapshot, facts)], tuple(facts.notes)

    def _monitor_for(self) -> IostatMonitor | None:
        if self._monitor is None:
            from zsn.zfs.live import find_program
            from zsn.zfs.monitor import IostatMonitor

            zpool = find_program("zpool")
            if zpool is None:
                return None
            self._monitor = IostatMonitor(zpool, IOSTAT_SECONDS)
        return self._monitor

    def _stop(self) -> None:
        if self._monitor is not None:
            self._monitor.stop()
            self._monitor = None

    def close(self) -> None:
        self._stop()
        if self._disks is not None:
            self._disks.stop()
        if self._scrubs is not None:
            self._scrubs.stop()


HEALTH_CODES = {"ONLINE": 0, "DEGRADED": 1, "FAULTED": 2, "OFFLINE": 3, "UNAVAIL": 4,
                "REMOVED": 5, "SUSPENDED": 6}
"""zfs_exporter's `zfs_pool_health` values (pdf/zfs_exporter, collector/transform.go)."""


def prometheus(data: dict[str, Any]) -> list[MetricFamily]:
    from zsn.lint import count_by_severity
    from zsn.zfs.protection import metrics as protection_metrics

    # The zfs_pool_* families are zfs_exporter's (pool collector), names and label
    # alike, so its dashboards keep working; the state one-hot has node_exporter's
    # node_zfs_zpool_state shape under zsn's name (see docs/metrics.md).
    health = MetricFamily("zfs_pool_health", "gauge",
                          "Health status code for the pool [0: ONLINE, 1: DEGRADED, "
                          "2: FAULTED, 3: OFFLINE, 4: UNAVAIL, 5: REMOVED, 6: SUSPENDED].")
    sizes = {key: MetricFamily(f"zfs_pool_{name}_bytes", "gauge", text) for key, name, text in (
        ("size", "size", "Total size of the storage pool."),
        ("allocated", "allocated", "Amount of storage space used within the pool."),
        ("free", "free", "The amount of free space available in the pool."),
        ("freeing", "freeing", "Space still to be freed in the background after a file "
         "system or snapshot was destroyed."),
        ("leaked", "leaked", "Space a destroy could not free (leaked)."))}
    ratios = {key: MetricFamily(f"zfs_pool_{name}_ratio", "gauge", text) for key, name, text in (
        ("fragmentation", "fragmentation",
         "The fragmentation ratio of the pool (free space, 0-1)."),
        ("capacity", "capacity", "Ratio of pool space used (0-1)."))}
    readonly = MetricFamily("zfs_pool_readonly", "gauge",
                            "Read-only status of the pool [0: read-write, 1: read-only].")
    dedup = MetricFamily("zfs_pool_deduplication_ratio", "gauge",
                         "The ratio of deduplicated size vs undeduplicated size for data in "
                         "this pool (as zfs_exporter: 1 / dedupratio).")
    state = MetricFamily("zsn_zfs_pool_state", "gauge",
                         "1 for the pool's current state (label state), 0 for the others.")
    data_errors = MetricFamily("zsn_zfs_pool_data_errors", "gauge",
                               "Files or blocks with permanent errors.")
    vdev_state = MetricFamily("zsn_zfs_vdev_state", "gauge",
                              "1, labelled with the vdev's current state.")
    vdev_errors = MetricFamily("zsn_zfs_vdev_errors_total", "counter",
                               "Read, write and checksum errors since the last zpool clear.")
    rates = {
        key: MetricFamily(f"zsn_zfs_vdev_{key}_per_second", "gauge",
                          f"{key.replace('_', ' ').capitalize()} per second (zsn serve: over "
                          "the last iostat interval; an export: since the pool was imported; "
                          "vdev=POOL for the whole pool).")
        for key in ("read_ops", "write_ops", "read_bytes", "write_bytes")}
    scan_active = MetricFamily("zsn_zfs_scan_active", "gauge",
                               "1 while a scrub or resilver runs (label function), else 0.")
    scan_progress = MetricFamily("zsn_zfs_scan_progress_ratio", "gauge",
                                 "Progress of the running or paused scrub or resilver (0-1).")
    last_scrub = MetricFamily("zsn_zfs_pool_last_scrub_timestamp_seconds", "gauge",
                              "Unix time the last scrub finished (absent: none recorded).")
    dataset_counters = {
        key: MetricFamily(f"zsn_zfs_dataset_{key}_total", "counter",
                          f"Dataset {key.replace('_', ' ')} (objset kstat).")
        for key in ("reads", "writes", "read_bytes", "written_bytes")}
    findings = MetricFamily("zsn_zfs_findings", "gauge", "Advisor findings by severity.")
    for pool in data.get("pools", ()):
        name = pool["name"]
        labels = {"pool": name}
        if pool["health"] in HEALTH_CODES:
            health.add(labels, HEALTH_CODES[pool["health"]])
        for value in POOL_STATES:
            state.add({**labels, "state": value.lower()}, int(pool["health"] == value))
        _add_space(pool, labels, sizes, ratios, dedup)
        if pool.get("readonly") is not None:
            readonly.add(labels, int(pool["readonly"]))
        data_errors.add(labels, pool["data_errors"])
        _add_vdevs(pool, labels, rates, vdev_state, vdev_errors)
        _add_scan(pool, labels, scan_active, scan_progress)
        if pool.get("last_scrub"):
            last_scrub.add(labels, pool["last_scrub"])
    for dataset in data.get("datasets", ()):
        counters = dataset.get("counters")
        if counters:
            dlabels = {"pool": dataset["name"].split("/", 1)[0], "dataset": dataset["name"]}
            for key, family in dataset_counters.items():
                family.add(dlabels, counters[key])
    for severity, count in count_by_severity(data.get("findings", ())).items():
        findings.add({"severity": severity}, count)
    from zsn.zfs.disk_export import metrics as disk_metrics
    from zsn.zfs.scrub_history_export import metrics as scrub_metrics

    return [health, *sizes.values(), *ratios.values(), readonly, dedup, state, data_errors,
            vdev_state, vdev_errors, *rates.values(), scan_active, scan_progress, last_scrub,
            *dataset_counters.values(), findings,
            *transfer_metrics(data.get("transfers") or {}),
            *disk_metrics(data.get("disks") or []),
            *scrub_metrics(data.get("scrubs") or []),
            *schedule_metrics(data.get("schedules")),
            *protection_metrics(data.get("protection") or {})]


def schedule_metrics(schedules: dict[str, Any] | None) -> list[MetricFamily]:
    """Per pool and kind (a trim only where the pool has a solid-state disk): how many
    schedules run it (timers and the distribution's cron job) and when the next run is."""
    runs = MetricFamily("zsn_zfs_schedules", "gauge",
                        "Timers and cron jobs that scrub (trim) the pool: 0 none, 2 or more "
                        "twice.")
    next_run = MetricFamily("zsn_zfs_schedule_next_run_timestamp_seconds", "gauge",
                            "Unix time of the pool's next scheduled scrub (trim) (absent: "
                            "none within a year).")
    for entry in (schedules or {}).get("pools", ()):
        if not entry["applies"]:
            continue
        labels = {"pool": entry["pool"], "kind": entry["kind"]}
        runs.add(labels, len(entry["timers"]) + int(entry["cron"]))
        if entry["next_run"] is not None:
            next_run.add(labels, entry["next_run"])
    return [runs, next_run]


def _add_space(pool: dict[str, Any], labels: dict[str, str], sizes: dict[str, MetricFamily],
               ratios: dict[str, MetricFamily], dedup: MetricFamily) -> None:
    """The pool's sizes, its fragmentation and capacity ratios, its deduplication."""
    for key, family in sizes.items():
        if pool.get(key) is not None:
            family.add(labels, pool[key])
    for key, family in ratios.items():
        if pool.get(key) is not None:
            family.add(labels, pool[key] / 100)
    if pool.get("dedup_ratio"):
        dedup.add(labels, 1 / pool["dedup_ratio"])


def _add_vdevs(pool: dict[str, Any], labels: dict[str, str], rates: dict[str, MetricFamily],
               vdev_state: MetricFamily, vdev_errors: MetricFamily) -> None:
    """I/O rates of the pool (vdev=POOL) and of each vdev; each vdev's state and errors."""
    io_rows = [(pool["name"], pool.get("io"))] + [(v["name"], v.get("io"))
                                                  for v in pool["vdevs"]]
    for vdev, io in io_rows:
        if io:
            for key, family in rates.items():
                family.add({**labels, "vdev": vdev}, io[f"{key}_per_second"])
    for vdev in pool["vdevs"]:
        vlabels = {**labels, "vdev": vdev["name"], "group": vdev["group"]}
        vdev_state.add({**vlabels, "state": vdev["state"]}, 1)
        for kind in ("read", "write", "checksum"):
            if vdev.get(f"{kind}_errors") is not None:
                vdev_errors.add({**vlabels, "type": kind}, vdev[f"{kind}_errors"])


def _add_scan(pool: dict[str, Any], labels: dict[str, str], scan_active: MetricFamily,
              scan_progress: MetricFamily) -> None:
    """Whether a scrub or resilver runs, and how far the running or paused one is."""
    scan = pool.get("scan")
    for function in ("scrub", "resilver"):
        running = bool(scan and scan["function"] == function and scan["state"] == "scanning")
        scan_active.add({**labels, "function": function}, int(running))
    if scan and scan["state"] in ("scanning", "paused") and scan["percent"] is not None:
        scan_progress.add({**labels, "function": scan["function"]}, scan["percent"] / 100)


def transfer_metrics(transfers: dict[str, Any]) -> list[MetricFamily]:
    """Transfers in progress and the last result per source and target pair."""
    running = _transfer_families("zsn_zfs_transfer_", (
        ("running", None, "1 while zsn zfs send runs for this source and target."),
        ("bytes", "bytes", "Bytes moved so far by the running transfer."),
        ("estimated_bytes", "estimate", "What zfs send -nvP estimated the transfer at."),
        ("rate_bytes_per_second", "rate", "The running transfer's rate over the last seconds."),
        ("eta_seconds", "eta_seconds", "Seconds left at that rate.")))
    last = _transfer_families("zsn_zfs_transfer_last_", (
        ("success", None, "1 if the last transfer of this pair went through, else 0."),
        ("bytes", "bytes", "Bytes the last transfer of this pair moved."),
        ("duration_seconds", "seconds", "How long the last transfer of this pair took."),
        ("rate_bytes_per_second", "rate", "Its average rate."),
        ("resumed", None, "1 if it resumed an interrupted one (receive_resume_token)."),
        ("finished_timestamp_seconds", "finished", "Unix time it ended.")))
    for families, records in ((running, transfers.get("running", ())),
                              (last, transfers.get("last", ()))):
        for record in records:
            labels = {"source": record["source"], "target": record["target"],
                      "via": str(record.get("via", ""))}
            values = {"running": 1, "success": int(record.get("state") == "ok"),
                      "resumed": int(bool(record.get("resumed")))}
            for key, (family, field) in families.items():
                value = values.get(key) if field is None else record.get(field)
                if isinstance(value, int | float):
                    family.add(labels, value)
    return [family for families in (running, last) for family, _ in families.values()]


def _transfer_families(prefix: str, specs: tuple[tuple[str, str | None, str], ...],
                       ) -> dict[str, tuple[MetricFamily, str | None]]:
    """Metric families by key, each with the record field it shows (None: computed)."""
    return {key: (MetricFamily(prefix + key, "gauge", text), field)
            for key, field, text in specs}
