"""The Links pane idle with 500 interfaces at a 1 s refresh: CPU and terminal bytes/s,
next to the WireGuard pane idle with a 500-peer interface and zsn on an empty root.

Goal (issue 11): under 1 % CPU, and at most the WireGuard pane's idle bytes/s. Run as
root:

    python3 bench/links_pane.py [--links N] [--peers N] [--seconds S] [--size 100x30]

zsn runs as a child on its own pseudo-terminal, in a private namespace holding only
the benchmark's links (`_links_lab.veths`: IPv6 off, so idle is idle); the Links
tab is opened with its number key. Measured as in `idle.py` (its `measure`): after
the pane shows its rows and settles, the bytes zsn writes to the terminal and its
CPU time (user + system, all threads) over `--seconds`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import _lab
import _links_lab
from idle import SETTLE_SECONDS, measure


def links_tab_key() -> bytes:
    """The number key of the Links tab (its place in the domain registry)."""
    from zsn.domains import REGISTRY

    return str(REGISTRY.index("zsn.links") + 1).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--links", type=int, default=500)
    parser.add_argument("--peers", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--size", default="100x30", help="terminal COLUMNSxROWS")
    args = parser.parse_args()
    columns, rows = (int(part) for part in args.size.split("x"))
    _lab.require(["ip", "unshare", "mount", "wireguard-go"])
    _lab.isolate()
    _lab.compile_repo()
    names = _links_lab.veths(args.links)
    zsn = [sys.executable, "-m", "zsn", "--refresh", "1"]
    print(f"terminal {columns}x{rows}, {args.seconds:g} s each after {SETTLE_SECONDS:g} s "
          f"to settle; load average {os.getloadavg()[0]:.2f}")
    results = [measure(f"Links pane, {len(names) + 1} links", zsn, rows, columns,
                       args.seconds, names[0].encode(), keys=links_tab_key())]
    interface, _peers = _lab.big_interface("zbnpane0", args.peers)
    try:
        results.append(measure(f"WireGuard pane, {args.peers} peers", zsn, rows, columns,
                               args.seconds, b"peer-00000"))
    finally:
        interface.stop()
    with tempfile.TemporaryDirectory(prefix="zsn-bench-root-") as empty:
        results.append(measure("zsn --root EMPTY (reference)", [*zsn, "--root", empty],
                               rows, columns, args.seconds, b"WireGuard"))
    print(f"\n{'':34} {'bytes/s':>10} {'CPU %':>8} {'RSS MiB':>8}")
    for result in results:
        print(f"{result.label:34} {result.bytes_per_second:10.1f} "
              f"{result.cpu_percent:8.2f} {result.rss_mib:8.1f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
