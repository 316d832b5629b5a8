"""`zsn --export links` with 500 veth interfaces next to `ip -s -d -j link show`.

Goal (issue 11): the whole zsn process <= 2x ip's, in the same run. Run as root:

    python3 bench/links_export.py [--links N] [--runs N]

Child processes from spawn to exit, stdout to a file, interleaved:
`ip -s -d -j link show`, `zsn --export links` (JSON; it reads the counters twice,
RATE_WINDOW = 0.25 s apart, for its rates), the same as Prometheus text, and for
reference the export without that window, a bare interpreter and the import of
zsn.cli. Then, in this process with everything imported, the export's phases without
the rate window.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import _lab
import _links_lab

NO_WINDOW = ("import sys, zsn.links.export as e; e.RATE_WINDOW = 0; from zsn.cli import main; "
             "sys.exit(main(['--export', 'links']))")
"""The same export with one counter reading (no rates): what the 0.25 s window costs."""


@dataclass
class Child:
    argv: list[str]
    out_path: str
    seconds: list[float] = field(default_factory=list)
    codes: set[int] = field(default_factory=set)

    def run_once(self) -> None:
        with open(self.out_path, "wb") as out:
            started = time.perf_counter()
            process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.DEVNULL,
                                       env=_lab.repo_env(), cwd=_lab.REPO)
            process.wait()
            self.seconds.append(time.perf_counter() - started)
        self.codes.add(process.returncode)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--links", type=int, default=500)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    _lab.require(["ip", "unshare", "mount"])
    _lab.isolate()
    _links_lab.veths(args.links)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="zsn-bench-") as tmp:
        children = {
            "ip -s -d -j link show": Child(["ip", "-s", "-d", "-j", "link", "show"],
                                           f"{tmp}/ip.json"),
            "zsn --export links (JSON)": Child([python, "-m", "zsn", "--export", "links"],
                                               f"{tmp}/zsn.json"),
            "zsn --export links --format prometheus": Child(
                [python, "-m", "zsn", "--export", "links", "--format", "prometheus"],
                f"{tmp}/zsn.prom"),
            "zsn --export links, rate window 0 (reference)": Child(
                [python, "-c", NO_WINDOW], f"{tmp}/zsn-nowindow.json"),
            "python -c pass": Child([python, "-c", "pass"], f"{tmp}/none"),
            "python -c 'import zsn.cli'": Child([python, "-c", "import zsn.cli"],
                                                f"{tmp}/none2"),
        }
        for child in children.values():
            child.run_once()
            child.seconds.clear()
        _lab.interleaved([(label, child.run_once) for label, child in children.items()],
                         args.runs, warmup=0)
        with open(f"{tmp}/zsn.json") as handle:
            document = json.load(handle)
        ours = [i for i in document["links"]["interfaces"] if i["name"].startswith("zbl")]
        with open(f"{tmp}/ip.json") as handle:
            theirs = [i for i in json.load(handle) if i["ifname"].startswith("zbl")]
        print(f"check: zsn exported {len(ours)} zbl links with counters and rates "
              f"({sum(1 for i in ours if i['rates'] is not None)} with rates), ip {len(theirs)};"
              f" exit codes {sorted({c for ch in children.values() for c in ch.codes})}; "
              f"JSON {os.path.getsize(f'{tmp}/zsn.json'):,} bytes")
    print(f"\n{args.links} links, {args.runs} interleaved runs, whole processes "
          f"(load average {os.getloadavg()[0]:.2f}):")
    stats = {label: _lab.Stats.of(child.seconds) for label, child in children.items()}
    for label, figure in stats.items():
        print(f"  {label:42} {figure.ms()}")
    ip = stats["ip -s -d -j link show"].median
    for label in ("zsn --export links (JSON)", "zsn --export links --format prometheus"):
        print(f"  ratio {label} / ip: {stats[label].median / ip:.1f}x (goal <= 2x)")

    from zsn.exporter import document as export
    from zsn.links import export as links_export
    from zsn.links.live import read_structure
    from zsn.system.host import Host

    links_export.RATE_WINDOW = 0.0
    host = Host()
    result = export.collect(host, ["links"])
    phases = _lab.interleaved([
        ("read_structure (links, addresses, bonds)", read_structure),
        ("collect (read + config + lint), no window", lambda: export.collect(host, ["links"])),
        ("JSON encoding", lambda: export.to_json(result)),
        ("Prometheus text", lambda: export.to_prometheus(result)),
    ], args.runs)
    print("\nin-process phases (everything imported):")
    for label, figure in phases.items():
        print(f"  {label:42} {figure.ms()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
