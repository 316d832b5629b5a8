"""Reading a 5,000-peer userspace interface: zsn in-process vs `wg show IFACE dump`.

Goal (issue 2): zsn's in-process read+parse at or below 1.0x the whole-process
time of `wg show IFACE dump` on the same interface. Run as root:

    python3 bench/wg_read.py [--runs N] [--peers N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import _lab

from zsn.system.host import Host
from zsn.system.netlink import list_links
from zsn.wireguard import config, uapi
from zsn.wireguard.live import LiveCache, read_wireguard

IFACE = "zbnread0"


def wg_dump(output: list[str]) -> None:
    """`wg show IFACE dump` as a child process, its stdout read through a pipe."""
    argv = ["wg", "show", IFACE, "dump"]
    output[:] = [subprocess.run(argv, capture_output=True, text=True, check=True).stdout]


def first_byte(sock: Path) -> None:
    """Connect, send get=1 and wait for the first byte only: wireguard-go's time to build
    the reply (it writes the reply in one piece when done)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(os.fspath(sock))
        client.sendall(b"get=1\n\n")
        client.recv(1)


def check_same_data(sock: Path, wg_output: str, names: dict[str, str]) -> None:
    """zsn and wg must have read the same peers, so both did the same work."""
    device = uapi.get_device(sock, names)
    wg_peers = {line.split("\t")[0]: line.split("\t")[3]
                for line in wg_output.splitlines()[1:]}
    zsn_peers = {p.public_key: ",".join(p.allowed_ips) for p in device.peers}
    if wg_peers != zsn_peers:
        raise RuntimeError("zsn and wg read different peers or allowed IPs")
    named = sum(1 for p in device.peers if p.name)
    print(f"check: wg and zsn both read {len(zsn_peers)} peers with identical keys and "
          f"allowed IPs; zsn matched {named} names from the config")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="timed repetitions (default 50)")
    parser.add_argument("--peers", type=int, default=_lab.PEER_COUNT)
    args = parser.parse_args()
    _lab.require(["wireguard-go", "wg", "ip", "unshare", "mount"])
    _lab.isolate()

    interface, _ = _lab.big_interface(IFACE, args.peers)
    try:
        return run_benchmarks(interface.socket, args.runs)
    finally:
        interface.stop()


def run_benchmarks(sock: Path, runs: int) -> int:
    conf = Path(f"/etc/wireguard/{IFACE}.conf")
    names = config.parse(conf.read_text(encoding="utf-8")).peer_names()
    reply = uapi.exchange(sock, "get=1\n\n")
    print(f"UAPI get reply: {len(reply):,} bytes, {reply.count(chr(10)):,} lines; "
          f"config: {conf.stat().st_size:,} bytes")

    host = Host()
    warm_cache = LiveCache()
    warm_peers = uapi.PeerCache()
    wg_output: list[str] = []
    WG = f"wg show {IFACE} dump"
    measured: list[tuple[str, Callable[[], object], str]] = [
        (WG, lambda: wg_dump(wg_output),
         "whole process: fork/exec, wg's netlink probe, UAPI get, print 5,000 lines to a pipe"),
        ("uapi.exchange (socket only)", lambda: uapi.exchange(sock, "get=1\n\n"),
         "connect, send get=1, receive the whole reply"),
        ("UAPI time to first byte", lambda: first_byte(sock),
         "wireguard-go building its reply (wg and zsn both wait for this)"),
        ("uapi.parse_get (parse only)", lambda: uapi.parse_get(reply, names=names),
         "parse the reply into PeerStates, names from a ready dict"),
        ("uapi.get_device", lambda: uapi.get_device(sock),
         "read+parse: exchange + parse_get, no names"),
        ("uapi.get_device + names", lambda: uapi.get_device(sock, names),
         "as above, names joined while parsing (dict given)"),
        ("uapi.get_device, polling", lambda: uapi.get_device(sock, names, warm_peers),
         "as above with the poller's PeerCache: peers whose lines did not change are reused"),
        ("config.parse + peer_names", lambda: config.parse(conf.read_text()).peer_names(),
         "read and parse the 5,000-peer wg-quick config"),
        ("netlink list_links", list_links,
         "rtnetlink: open socket, dump links and addresses (lo + the interface here)"),
        ("read_wireguard (TUI poll)", lambda: read_wireguard(host, warm_cache),
         "whole live read, root /, with the TUI's LiveCache (names and unchanged peers)"),
        ("read_wireguard (cold)", lambda: read_wireguard(host),
         "whole live read, root /, incl. config parse, as one --export does"),
    ]
    print(f"timing {len(measured)} actions, {runs} rounds, one of each per round "
          "(interleaved, so machine load hits all alike); times are wall clock")
    stats = _lab.interleaved([(label, action) for label, action, _ in measured], runs)
    check_same_data(sock, wg_output[0], names)
    print()
    for label, _, includes in measured:
        print(f"{label:30} {stats[label].ms()}")
        print(f"{'':30} {includes}")
    wg = stats[WG]
    print()
    print("ratios zsn/wg (medians; goal: read+parse <= 1.00x):")
    for label, what in (("uapi.get_device", "read+parse (get_device)"),
                        ("uapi.get_device + names", "read+parse with names"),
                        ("uapi.get_device, polling", "read+parse, polling"),
                        ("read_wireguard (TUI poll)", "read_wireguard, TUI poll"),
                        ("read_wireguard (cold)", "read_wireguard, cold"),
                        ("uapi.exchange (socket only)", "socket exchange alone")):
        ratio = stats[label].median / wg.median
        verdict = "meets goal" if ratio <= 1.0 else "MISSES goal"
        print(f"  {what:28} {ratio:5.2f}x   {verdict}")

    if shutil.which("hyperfine"):
        print("\ncross-check with hyperfine (no shell, output discarded):")
        sys.stdout.flush()
        subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style",
                        "basic", f"wg show {IFACE} dump"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
