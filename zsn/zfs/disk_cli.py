"""``zsn zfs disks [POOL] [--json]``: each leaf vdev's disks, what they are, their SMART."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from zsn.errors import EXIT_OK
from zsn.format import human_bytes, human_duration
from zsn.headless import print_table
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.zfs.disk_export import entries
from zsn.zfs.diskwatch import DiskReader
from zsn.zfs.facts import leaf_paths
from zsn.zfs.live import read_pools


def show_disks(host: Host, pool: str | None, as_json: bool) -> int:
    snapshot, pools = read_pools(host, pool)
    reading = DiskReader(host).read(leaf_paths(pools))
    now = time.time()
    found = entries(pools, reading, now)
    for note in (*snapshot.errors, *reading.notes):
        print(f"zsn zfs disks: {note}", file=sys.stderr)
    if as_json:
        print(json.dumps(found, indent=2))
        return EXIT_OK
    if not found:
        print("no pools (create one with zpool create)" if not pools else
              "no leaf vdevs on block devices", file=sys.stderr)
        return EXIT_OK
    _print(found, now)
    return EXIT_OK


def _kind(entry: dict[str, Any]) -> str:
    rotational = entry.get("rotational")
    transport = entry.get("transport") or "?"
    return f"{transport} {'HDD' if rotational else 'SSD' if rotational is False else ''}".strip()


def _read(entry: dict[str, Any], now: float) -> str:
    smart = entry.get("attempt") or entry.get("smart")
    if smart is None:
        return "-"
    return f"{human_duration(max(0.0, now - smart['read_at']))} ago"


def _print(found: list[dict[str, Any]], now: float) -> None:
    rows: list[tuple[str, ...]] = [("POOL", "VDEV", "DISK", "MODEL", "SERIAL", "SIZE", "KIND",
                                    "HEALTH", "TEMP", "HOURS", "READ")]
    details: list[str] = []
    for entry in found:
        vdev = entry["vdev"].rsplit("/", 1)[-1]
        if entry.get("disk") is None:
            rows.append((entry["pool"], vdev, "-", "", "", "", "", "", "", "", ""))
            continue
        smart = entry.get("smart") or {}
        model = smart.get("model") or entry.get("model") or "-"
        serial = smart.get("serial") or entry.get("serial") or "-"
        temperature = smart.get("temperature")
        hours = smart.get("power_on_hours")
        rows.append((entry["pool"], vdev, entry["disk"], model, serial,
                     human_bytes(entry["capacity"]) if entry.get("capacity") else "-",
                     _kind(entry), entry["health"],
                     f"{temperature}°C" if temperature is not None else "-",
                     str(hours) if hours is not None else "-", _read(entry, now)))
        layers = " → ".join(layer["label"] for layer in entry["layers"])
        where = f"{entry['vdev']}: {layers}" + (f" ({entry['by_id']})" if entry.get("by_id")
                                               else "")
        details.append(where)
        for reason in entry["reasons"]:
            details.append(f"  {entry['disk']}: {reason}")
    print_table(rows, {5, 8, 9})
    print()
    for line in details:
        print(safe(line))
