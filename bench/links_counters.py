"""Per-interface counters for 500 links: netlink stats64 against psutil (issue 11 asks
for the cheaper one). Run as root:

    python3 bench/links_counters.py [--links N] [--runs N]

What is timed, each in this process with everything imported, interleaved:
- RTM_GETSTATS with only IFLA_STATS_LINK_64 (zsn's lean decoder): what the Links pane
  reads every refresh;
- psutil.net_io_counters(pernic=True, nowrap=False) (reads /proc/net/dev; nowrap=False
  because psutil's default hides a recreated interface's counter reset);
- pyroute2's own RTM_GETSTATS dump (IPRoute.stats, every attribute decoded);
- the whole link dump, zsn's lean decoder and pyroute2's IPRoute.get_links, for scale:
  the pane reads it only when netlink reports a change.
"""

from __future__ import annotations

import argparse
import sys

import _lab
import _links_lab


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--links", type=int, default=500)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    _lab.require(["ip", "unshare", "mount"])
    _lab.isolate()
    _links_lab.veths(args.links)

    import psutil

    from zsn.system import rtnetlink
    from zsn.system.netlink import pyroute2_module

    iproute = pyroute2_module("iproute.linux").IPRoute()
    lean = rtnetlink.read_counters()
    pernic = psutil.net_io_counters(pernic=True, nowrap=False)
    names = {r.index: r.name for r in rtnetlink.read_links()}
    mismatched = [names[i] for i, c in lean.items()
                  if names[i] in pernic and pernic[names[i]].bytes_recv != c.rx_bytes]
    print(f"check: {len(lean)} links by netlink, {len(pernic)} by psutil, receive bytes "
          f"differ for {len(mismatched)} (counters move between the two reads)")
    results = _lab.interleaved([
        ("netlink stats64 (zsn, RTM_GETSTATS)", rtnetlink.read_counters),
        ("psutil net_io_counters(pernic)", lambda: psutil.net_io_counters(pernic=True,
                                                                          nowrap=False)),
        ("pyroute2 IPRoute.stats('dump')", lambda: list(iproute.stats("dump"))),
        ("link dump, zsn lean decoder", rtnetlink.read_links),
        ("link dump, pyroute2 get_links", lambda: list(iproute.get_links())),
    ], args.runs)
    iproute.close()
    print(f"\n{args.links} links, {args.runs} interleaved runs each, "
          f"python {sys.version.split()[0]}")
    for label, stats in results.items():
        print(f"  {label:38} {stats.ms()}")
    zsn_stats = results["netlink stats64 (zsn, RTM_GETSTATS)"].median
    psutil_stats = results["psutil net_io_counters(pernic)"].median
    cheaper = "netlink stats64" if zsn_stats <= psutil_stats else "psutil"
    print(f"\ncheaper per refresh: {cheaper} ({zsn_stats * 1e3:.2f} ms vs "
          f"{psutil_stats * 1e3:.2f} ms = {psutil_stats / zsn_stats:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
