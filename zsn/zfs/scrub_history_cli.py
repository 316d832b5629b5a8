"""``zsn zfs scrubs [POOL] [--json]``: each pool's last finished scrubs and their trend."""

from __future__ import annotations

import json
import sys
import time

from zsn.errors import EXIT_OK
from zsn.format import human_bytes, human_duration, human_rate
from zsn.headless import print_table
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.zfs.live import read_pools
from zsn.zfs.scrub_history import ScrubReader
from zsn.zfs.scrub_history_export import entries
from zsn.zfs.view import scrub_summary


def show_scrubs(host: Host, pool: str | None, as_json: bool) -> int:
    snapshot, pools = read_pools(host, pool)
    history = ScrubReader(host).read(pools)
    for note in (*snapshot.errors, *history.notes):
        print(f"zsn zfs scrubs: {note}", file=sys.stderr)
    if as_json:
        print(json.dumps(entries(pools, history), indent=2))
        return EXIT_OK
    if not pools:
        print("no pools (create one with zpool create)", file=sys.stderr)
        return EXIT_OK
    rows: list[tuple[str, ...]] = [("POOL", "FINISHED", "TOOK", "READ", "RATE", "ERRORS",
                                    "SEEN IN")]
    summaries = []
    for shown in pools:
        runs = history.of(shown.name)
        summaries.append(f"{shown.name}: {scrub_summary(runs)}")
        for run in runs:
            read = "-" if run.examined is None else \
                ("~" if run.bytes_from == "allocated" else "") + human_bytes(run.examined)
            rows.append((shown.name, time.strftime("%Y-%m-%d %H:%M", time.localtime(run.ended)),
                         human_duration(run.seconds) if run.seconds is not None else "-",
                         read, human_rate(run.rate) if run.rate is not None else "-",
                         str(run.errors) if run.errors is not None else "-",
                         ", ".join(run.seen_in)))
    if len(rows) > 1:
        print_table(rows, {2, 3, 4, 5})
        print()
    for line in summaries:
        print(safe(line))
    if any(run.bytes_from == "allocated" for p in pools for run in history.of(p.name)):
        print("~: the pool's allocated space when zsn saw the scrub finish (what a scrub "
              "reads), not zpool's own count")
    return EXIT_OK

