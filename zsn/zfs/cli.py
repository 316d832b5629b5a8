"""Headless ZFS: ``zsn zfs ...``, the pane's views and actions for scripts.

Changes are the pane's plans: ``--dry-run`` prints one, otherwise it is applied.
`iostat` runs the same bounded `zpool iostat` stream as the pane and prints each
interval's block as it arrives (``--json``: one JSON object per line).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from zsn.errors import EXIT_OK, ValidationError, ZsnError
from zsn.format import human_bytes, human_duration, human_nanoseconds, human_rate
from zsn.headless import add_dry_run, apply_or_show, interval_seconds, print_table
from zsn.lint import print_findings
from zsn.system.host import Host
from zsn.system.streams import LineStream
from zsn.terminal import safe, safe_lines
from zsn.zfs import actions, lint, policy_cli, send_cli, snapshots
from zsn.zfs.export import dataset_to_dict, pool_to_dict, snapshot_to_dict
from zsn.zfs.iostat import BlockAssembler, iostat_argv, looks_like_row
from zsn.zfs.live import ENV, read_everything, read_zfs, require_program, run_zfs_command
from zsn.zfs.model import IostatBlock, Pool, Scan, ZfsSnapshot
from zsn.zfs.monitor import deadline_for
from zsn.zfs.names import validate_pool_name
from zsn.zfs.scrub_cli import (
    SCHEDULE,
    add_schedule_arguments,
    refuse_schedule_options,
    run_schedule,
)
from zsn.zfs.units import is_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("POOL is a pool's name, DATASET a filesystem or volume (pool/name). "
                     "Reading needs no root (/dev/zfs is open to all); changes do.")
    verbs = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = verbs.add_parser("list", help="pools (health, size, scan) and datasets")
    listing.add_argument("--json", action="store_true", help="print the export's objects")
    shown = verbs.add_parser("status", help="a pool's vdev tree, errors and scrub")
    shown.add_argument("pool", metavar="POOL", nargs="?")
    shown.add_argument("--json", action="store_true", help="print the export's objects")
    io = verbs.add_parser("iostat", help="live per-pool and per-vdev I/O, each interval")
    io.add_argument("pool", metavar="POOL")
    io.add_argument("--interval", type=interval_seconds, default=1.0, metavar="S",
                    help="seconds between samples (default 1)")
    io.add_argument("--count", type=_count, default=None, metavar="N",
                    help="stop after N samples (default: until interrupted)")
    io.add_argument("--json", action="store_true", help="one JSON object per sample")
    scrub = verbs.add_parser(
        "scrub", help="start (or resume), pause or stop a scrub; 'scrub schedule' shows "
                      "and sets the scrub timers",
        description="zsn zfs scrub POOL starts (or resumes) a scrub; zsn zfs scrub schedule "
                    "[POOL --every week|month [--at WHEN] | POOL --off | --stagger] shows "
                    "and sets the pools' scrub timers.")
    scrub.add_argument("pool", metavar="POOL|schedule")
    which = scrub.add_mutually_exclusive_group()
    which.add_argument("--pause", action="store_const", const="pause", dest="verb",
                       help="pause it (keeps its progress)")
    which.add_argument("--stop", action="store_const", const="stop", dest="verb",
                       help="stop it (its progress is lost)")
    add_schedule_arguments(scrub, "scrub")
    add_dry_run(scrub)
    trim = verbs.add_parser("trim", help="'trim schedule': show and set the trim timers of "
                                         "pools on solid-state disks")
    trim.add_argument("pool", metavar="schedule", choices=(SCHEDULE,))
    add_schedule_arguments(trim, "trim")
    add_dry_run(trim)
    setter = verbs.add_parser(
        "set", help="set compression, atime, xattr or recordsize on a dataset")
    setter.add_argument("dataset", metavar="DATASET")
    setter.add_argument("assignment", metavar="PROPERTY=VALUE")
    add_dry_run(setter)
    clear = verbs.add_parser("clear", help="reset a pool's (or one device's) error counters")
    clear.add_argument("pool", metavar="POOL")
    clear.add_argument("device", metavar="DEVICE", nargs="?")
    add_dry_run(clear)
    listed = verbs.add_parser(
        "snapshots", help="snapshots (of a dataset, or all): creation, used, referenced, "
                          "holds; 'snapshots run' takes and prunes per policy",
        description="zsn zfs snapshots [DATASET] lists snapshots; zsn zfs snapshots run "
                    "takes the snapshots the policies say are due and prunes the rest "
                    "(--dry-run: what it would take and destroy, and why).")
    listed.add_argument("dataset", metavar="DATASET|run", nargs="?")
    listed.add_argument("-r", "--recursive", action="store_true",
                        help="the dataset's descendants' snapshots too")
    listed.add_argument("--json", action="store_true", help="print them as JSON")
    listed.add_argument("--dry-run", action="store_true",
                        help="with run: print what would be taken and destroyed, and why")
    listed.add_argument("--verbose", action="store_true",
                        help="with run --dry-run: every policy snapshot's verdict")
    taking = verbs.add_parser("snapshot", help="take a snapshot (DATASET@NAME)")
    taking.add_argument("snapshot", metavar="DATASET@NAME")
    taking.add_argument("-r", "--recursive", action="store_true",
                        help="of every descendant too, atomically")
    add_dry_run(taking)
    send_cli.add_arguments(verbs)
    disks = verbs.add_parser("disks", help="the disks under each vdev: identity and SMART "
                                           "(read at most every 10 minutes per disk)")
    disks.add_argument("pool", metavar="POOL", nargs="?")
    disks.add_argument("--json", action="store_true", help="print them as JSON")
    scrubs = verbs.add_parser(
        "scrubs", help="the last finished scrubs of each pool: when, how long, how fast, "
                       "and the last one against the ones before")
    scrubs.add_argument("pool", metavar="POOL", nargs="?")
    scrubs.add_argument("--json", action="store_true", help="print them as JSON")
    policy_cli.add_arguments(verbs)
    advise = verbs.add_parser("advise", help="the advisor: findings with their fixes as "
                                             "commands; exit 1 when there are errors")
    advise.add_argument("--json", action="store_true", help="print findings as JSON")


def _count(text: str) -> int:
    if not is_number(text) or not 1 <= int(text) <= 1_000_000:
        raise argparse.ArgumentTypeError(f"not a count from 1: {text!r}")
    return int(text)


def run(args: argparse.Namespace, host: Host) -> int:
    if args.action == "trim" or (args.action == "scrub" and args.pool == SCHEDULE):
        if args.action == "scrub" and args.verb:
            raise ValidationError(f"--{args.verb}: for zsn zfs scrub POOL, not a schedule")
        return run_schedule(args, host, "trim" if args.action == "trim" else "scrub")
    if args.action == "scrub":
        refuse_schedule_options(args, "scrub")
        return apply_or_show(host, actions.plan_scrub(host, args.pool, args.verb or "start"),
                             args.dry_run)
    if args.action == "set":
        prop, equals, value = args.assignment.partition("=")
        if not equals:
            raise ValidationError(f"{args.assignment!r}: write PROPERTY=VALUE, e.g. "
                                  "compression=lz4")
        plan = actions.plan_set(host, args.dataset, prop.strip().lower(), value)
        return apply_or_show(host, plan, args.dry_run)
    if args.action == "clear":
        return apply_or_show(host, actions.plan_clear(host, args.pool, args.device), args.dry_run)
    if args.action == "snapshot":
        return apply_or_show(host, snapshots.plan_snapshot(host, args.snapshot, args.recursive),
                             args.dry_run)
    if args.action == "send":
        return send_cli.run(args, host)
    if args.action in ("snapshots", "policy", "replicate"):
        return _protection(args, host)
    if args.action == "advise":
        from zsn.zfs.diskwatch import read_with_disks

        snapshot, facts, _ = read_everything(host, now=time.time())
        _require(snapshot)
        facts = lint.with_schedules(host, snapshot, read_with_disks(host, snapshot, facts))
        for note in (*snapshot.notes, *facts.notes):
            print(f"note: {note}", file=sys.stderr)
        return print_findings(lint.advise(snapshot, facts), as_json=args.json,
                              subject_key=lint.SUBJECT)
    if args.action == "disks":
        from zsn.zfs.disk_cli import show_disks

        return show_disks(host, args.pool, args.json)
    if args.action == "scrubs":
        from zsn.zfs.scrub_history_cli import show_scrubs

        return show_scrubs(host, args.pool, args.json)
    if args.action == "iostat":
        return _iostat(host, validate_pool_name(args.pool), args.interval, args.count,
                       args.json)
    pool = getattr(args, "pool", None)
    if pool is not None:
        validate_pool_name(pool)
    snapshot = read_zfs(host, datasets=args.action == "list")
    _require(snapshot)
    if args.action == "list":
        return _list(snapshot, args.json)
    return _status(snapshot, pool, args.json)


def _protection(args: argparse.Namespace, host: Host) -> int:
    """Snapshots (listed, or a policy run), policies and replication jobs."""
    if args.action == "policy":
        return policy_cli.run_policy(args, host)
    if args.action == "replicate":
        return policy_cli.run_replicate(args, host)
    if args.dataset == "run":
        if args.recursive or args.json:
            raise ValidationError("snapshots run takes --dry-run and --verbose only")
        return policy_cli.run_snapshots(args, host)
    if args.dry_run or args.verbose:
        raise ValidationError("--dry-run and --verbose are for zsn zfs snapshots run")
    return _snapshots(args.dataset, args.recursive, args.json)


def _require(snapshot: ZfsSnapshot) -> None:
    if snapshot.unavailable:
        raise ZsnError(f"ZFS is not available: {snapshot.unavailable}")
    if snapshot.errors and not snapshot.pools:
        raise ZsnError("; ".join(snapshot.errors))
    for error in snapshot.errors:
        print(f"zsn zfs: {error}", file=sys.stderr)


def scan_summary(scan: Scan | None, now: float) -> str:
    """One phrase: ``scrub 46.3% 14.9 MiB/s ETA 6s``, ``scrub done 3d 04h ago`` ..."""
    if scan is None:
        return "never scrubbed"
    if scan.state == "unknown":
        return f"not understood: {scan.text}"
    if scan.state in ("scanning", "paused"):
        parts = [scan.function if scan.state == "scanning" else f"{scan.function} paused"]
        if scan.percent is not None:
            parts.append(f"{scan.percent:.1f}%")
        if scan.state == "scanning" and scan.rate:
            parts.append(human_rate(scan.rate))
        if scan.state == "scanning" and scan.eta_seconds is not None:
            parts.append(f"ETA {human_duration(scan.eta_seconds)}")
        return " ".join(parts)
    when = f" {human_duration(now - scan.ended)} ago" if scan.ended else ""
    if scan.state == "canceled":
        return f"{scan.function} canceled{when}"
    errors = f", {scan.errors} errors" if scan.errors else ""
    return f"{scan.function} done{when}{errors}"


def _size(value: int | None) -> str:
    return human_bytes(value) if value is not None else "-"


def _list(snapshot: ZfsSnapshot, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"pools": [pool_to_dict(p) for p in snapshot.pools],
                          "datasets": [dataset_to_dict(d, None) for d in snapshot.datasets]},
                         indent=2))
        return EXIT_OK
    if not snapshot.pools:
        print("no pools (create one with zpool create)", file=sys.stderr)
        return EXIT_OK
    now = time.time()
    rows: list[tuple[str, ...]] = [("POOL", "HEALTH", "SIZE", "ALLOC", "FREE", "FRAG", "CAP",
                                    "DEDUP", "SCAN")]
    for pool in snapshot.pools:
        rows.append((pool.name, pool.health, _size(pool.size), _size(pool.allocated),
                     _size(pool.free), _percent(pool.fragmentation), _percent(pool.capacity),
                     f"{pool.dedup_ratio:.2f}x" if pool.dedup_ratio is not None else "-",
                     scan_summary(pool.scan, now)))
    print_table(rows, {2, 3, 4, 5, 6, 7})
    if snapshot.datasets:
        print()
        rows = [("DATASET", "USED", "AVAIL", "REFER", "RATIO", "RECSIZE", "COMPRESS", "ATIME",
                 "XATTR", "MOUNTPOINT")]
        for d in snapshot.datasets:
            rows.append((d.name, _size(d.used), _size(d.available), _size(d.referenced),
                         f"{d.compress_ratio:.2f}x" if d.compress_ratio is not None else "-",
                         _size(d.recordsize or d.volblocksize), d.compression or "-",
                         d.atime or "-", d.xattr or "-", d.mountpoint or "-"))
        print_table(rows, {1, 2, 3, 4, 5})
    return EXIT_OK


def _snapshots(dataset: str | None, recursive: bool, as_json: bool) -> int:
    found = snapshots.read(run_zfs_command, require_program("zfs"), dataset, recursive)
    if as_json:
        print(json.dumps([snapshot_to_dict(s) for s in found], indent=2))
        return EXIT_OK
    if not found:
        where = f"{dataset} has" if dataset else "there are"
        print(f"{where} no snapshots (take one with zsn zfs snapshot DATASET@NAME)",
              file=sys.stderr)
        return EXIT_OK
    rows: list[tuple[str, ...]] = [("SNAPSHOT", "CREATED", "USED", "REFER", "HOLDS")]
    for snapshot in found:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(snapshot.created)) \
            if snapshot.created is not None else "-"
        rows.append((safe(snapshot.full_name), created, _size(snapshot.used),
                     _size(snapshot.referenced), str(snapshot.holds)))
    print_table(rows, {2, 3, 4})
    return EXIT_OK


def _percent(value: int | None) -> str:
    return f"{value}%" if value is not None else "-"


def _status(snapshot: ZfsSnapshot, pool_name: str | None, as_json: bool) -> int:
    pools = list(snapshot.pools)
    if pool_name is not None:
        pools = [p for p in pools if p.name == pool_name]
        if not pools:
            known = ", ".join(p.name for p in snapshot.pools) or "none"
            raise ValidationError(f"no pool named {pool_name!r} (pools: {known})")
    if as_json:
        print(json.dumps([pool_to_dict(p) for p in pools], indent=2))
        return EXIT_OK
    if not pools:
        print("no pools (create one with zpool create)", file=sys.stderr)
    now = time.time()
    for index, pool in enumerate(pools):
        if index:
            print()
        _print_pool(pool, now)
    return EXIT_OK


def _print_pool(pool: Pool, now: float) -> None:
    print(safe_lines([
        f"{pool.name}: {pool.health}, {_size(pool.allocated)} of {_size(pool.size)} used"
        f" ({_percent(pool.capacity)}), fragmentation {_percent(pool.fragmentation)}",
        *([f"  status: {pool.status}"] if pool.status else []),
        *([f"  action: {pool.action}"] if pool.action else []),
        f"  scan:   {scan_summary(pool.scan, now)}{_scan_details(pool.scan)}"]))
    rows = [("  NAME", "STATE", "READ", "WRITE", "CKSUM", "")]
    for vdev in pool.vdevs:
        indent = "  " + "  " * vdev.depth
        if vdev.kind == "group":
            rows.append((indent + vdev.name, "", "", "", "", ""))
            continue
        rows.append((indent + vdev.name, vdev.state, _count_cell(vdev.read_errors),
                     _count_cell(vdev.write_errors), _count_cell(vdev.checksum_errors),
                     vdev.note))
    print_table(rows, {2, 3, 4})
    if pool.data_errors:
        print(f"  {pool.data_errors} file(s) with permanent errors: zpool status -v "
              f"{safe(pool.name)} lists them")


def _count_cell(value: int | None) -> str:
    return "" if value is None else str(value)


def _scan_details(scan: Scan | None) -> str:
    if scan is None:
        return ""
    parts = []
    if scan.state in ("scanning", "paused") and scan.issued is not None and scan.total:
        parts.append(f"{human_bytes(scan.issued)} of {human_bytes(scan.total)} issued")
    if scan.repaired is not None:
        verb = "resilvered" if scan.function == "resilver" else "repaired"
        parts.append(f"{human_bytes(scan.repaired)} {verb}")
    if scan.duration_seconds is not None:
        parts.append(f"took {human_duration(scan.duration_seconds)}")
    return f" ({', '.join(parts)})" if parts else ""


# -- iostat ------------------------------------------------------------------------
def _iostat(host: Host, pool_name: str, interval: float, count: int | None,
            as_json: bool) -> int:
    snapshot = read_zfs(host, datasets=False)
    _require(snapshot)
    pool = snapshot.pool(pool_name)
    if pool is None:
        known = ", ".join(p.name for p in snapshot.pools) or "none"
        raise ValidationError(f"no pool named {pool_name!r} (pools: {known})")
    zpool = require_program("zpool")
    show = _json_block if as_json else _text_block
    arrived = threading.Event()
    stream = LineStream(iostat_argv(zpool, pool.name, interval, count), env=ENV,
                        deadline=deadline_for(interval), accept=looks_like_row,
                        on_output=arrived.set)
    assembler = BlockAssembler(pool.name)
    assembler.expect(sum(1 for v in pool.vdevs if v.kind != "group" and v.group != "spares"))
    shown = 0
    try:
        stream.start()
        while True:
            arrived.wait(0.5)
            arrived.clear()
            blocks = assembler.feed_all(stream.take_lines())
            ended = not stream.running
            if ended:
                blocks += assembler.feed_all(stream.take_lines()) + assembler.finish()
            for block in blocks:
                show(block, pool)
                shown += 1
            sys.stdout.flush()
            if ended:
                break
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        stream.stop()
    if stream.error or (stream.returncode not in (0, None) and not shown) or \
            (count is not None and shown < count):
        raise ZsnError(f"zpool iostat {pool.name}: {stream.describe_end()}")
    return EXIT_OK


def _json_block(block: IostatBlock, pool: Pool) -> None:
    groups = {v.name: v.group for v in pool.vdevs}
    print(json.dumps({"pool": block.pool, "time": block.timestamp, "vdevs": [
        {"name": row.name, "group": groups.get(row.name, "data"), "read_ops": row.read_ops,
         "write_ops": row.write_ops, "read_bytes": row.read_bytes,
         "write_bytes": row.write_bytes, "read_wait_ns": row.total_wait_read,
         "write_wait_ns": row.total_wait_write, "disk_read_wait_ns": row.disk_wait_read,
         "disk_write_wait_ns": row.disk_wait_write} for row in block.rows]},
        separators=(",", ":")))


def _text_block(block: IostatBlock, pool: Pool) -> None:
    depth = {v.name: v.depth for v in pool.vdevs}
    when = time.strftime("%H:%M:%S", time.localtime(block.timestamp)) \
        if block.timestamp else ""
    rows = [("NAME", "R OPS/S", "W OPS/S", "READ", "WRITE", "R WAIT", "W WAIT")]
    for row in block.rows:
        rows.append(("  " * depth.get(row.name, 1) + row.name, str(row.read_ops),
                     str(row.write_ops), human_rate(row.read_bytes),
                     human_rate(row.write_bytes), human_nanoseconds(row.total_wait_read),
                     human_nanoseconds(row.total_wait_write)))
    print(f"{block.pool} {when}".rstrip())
    print_table(rows, {1, 2, 3, 4, 5, 6})
    print()
