"""Over SSH for real (issue 34): every pane idle next to htop in the same run, and the
first frames, with the limits asserted.

    python3 bench/over_ssh.py [--seconds 20] [--peers 200] [--links 50] [--size 80x24]
                              [--runs 7] [--rows 5000] [--skip-startup] [--wireguard-only]

Run as root: it re-runs itself in a private mount and network namespace (`_lab.isolate`).
Every program runs on a pseudo-terminal of its own, as from a shell over SSH; what it
writes to the terminal is counted (bytes/s), and its CPU time (user + system, all
threads, from /proc through psutil) is read over the same seconds, after it shows its
rows and settles. Cases, in one run:

- htop at its default delay (1.5 s), first and again last (the reference: the mean);
- the WireGuard pane with `--peers` live peers: a wireguard-go server whose peers are
  as many wireguard-go clients in a second namespace, each keeping its session up with
  a 1 s keepalive, and a sender that sends each client a datagram of a random size
  every second, so every peer's rates change all the time;
- the Links pane with `--links` veth interfaces whose counters move (a frame of a
  random size on each every second);
- the ZFS, WLAN and OpenVPN panes as this machine has them (the host's kernel has no
  ZFS module and no wireless interface: the kernel lab's figures are bench/zfs.py's
  and bench/wlan_scan_render.py's).

Limits asserted at the end: each pane's bytes/s <= htop's; the WireGuard pane's CPU with
`--peers` live peers < 1 % of a core; the first frame with rows <= 1.3x the minimal
Textual app's first frame, and `--rows` rows on screen <= 1.5x (bench/startup.py's
method: interleaved runs, medians).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import _lab
import _links_lab
from idle import Idle, measure
from startup import GOAL_RATIO, PEERS_GOAL_RATIO, Case, first_frame, minimal_case, run_phase, shows

SERVER = "zbnsrv0"
CLIENTS = "zbncl"
"""The clients' namespace (`ip netns`), inside the bench's own network namespace."""
CLIENT_SOCKETS = Path("/run/zbn-clients")
"""Where the clients' UAPI sockets are: each client sees it as its /run/wireguard, so
zsn (and the pane's figures) sees the server alone."""
SERVER_PORT = 51820
STARTUP_IFACE = "zbnstart0"
CPU_LIMIT = 1.0
TABS = {"WireGuard": b"1", "OpenVPN": b"2", "ZFS": b"3", "WLAN": b"4", "Links": b"5"}


def _run(*argv: str, stdin: str | None = None) -> None:
    subprocess.run(list(argv), input=stdin, text=True, check=True, capture_output=True)


@contextlib.contextmanager
def live_peers(count: int) -> Iterator[None]:
    """A server with `count` peers, each a wireguard-go client that handshakes, keeps
    its session alive every second and receives a datagram of a random size every
    second; the server's config names every peer."""
    _run("ip", "netns", "add", CLIENTS)
    _run("ip", "link", "add", "zbnv0", "type", "veth", "peer", "name", "zbnv1", "netns",
         CLIENTS)
    _run("ip", "addr", "add", "192.0.2.1/24", "dev", "zbnv0")
    _run("ip", "link", "set", "zbnv0", "up")
    _run("ip", "-n", CLIENTS, "addr", "add", "192.0.2.2/24", "dev", "zbnv1")
    _run("ip", "-n", CLIENTS, "link", "set", "zbnv1", "up")
    _run("ip", "-n", CLIENTS, "link", "set", "lo", "up")
    shutil.rmtree(CLIENT_SOCKETS, ignore_errors=True)
    CLIENT_SOCKETS.mkdir()
    # Each wireguard-go watches its socket with an inotify instance: root's default
    # 128 instances (the whole machine's) would stop the clients at about 110.
    limit = Path("/proc/sys/fs/inotify/max_user_instances")
    before = limit.read_text()
    limit.write_text(str(max(int(before), 2 * count + 256)))
    server = _lab.WgGoInterface(SERVER, listen_port=SERVER_PORT)
    server.start()
    clients: list[_lab.WgGoInterface] = []
    stop = threading.Event()
    try:
        peers = []
        for index in range(count):
            client = _lab.WgGoInterface(f"zbnc{index:04d}", listen_port=30000 + index)
            clients.append(client)
            peers.append(_lab.Peer(f"peer-{index:05d}", _public(client.private_key),
                                   f"10.64.{index // 250}.{index % 250 + 2}/32", None, None,
                                   None))
        server.load(peers)
        server.write_config(Path("/etc/wireguard"), peers)
        _run("ip", "addr", "add", "10.64.0.1/16", "dev", SERVER)
        _run("ip", "link", "set", SERVER, "up")
        for client, peer in zip(clients, peers, strict=True):
            _start_client(client, peer, server)
        sender = threading.Thread(target=_send_to_peers, args=(peers, stop), daemon=True)
        sender.start()
        _wait_for_handshakes(server, count)
        yield
    finally:
        stop.set()
        for client in clients:
            client.stop()
        server.stop()
        Path(f"/etc/wireguard/{SERVER}.conf").unlink(missing_ok=True)
        subprocess.run(["ip", "netns", "del", CLIENTS], check=False, capture_output=True)
        shutil.rmtree(CLIENT_SOCKETS, ignore_errors=True)
        limit.write_text(before)


def _public(private: bytes) -> bytes:
    from zsn.wireguard.keys import public_key_from_private

    return base64.b64decode(public_key_from_private(_lab.b64(private)))


def _start_client(client: _lab.WgGoInterface, peer: _lab.Peer,
                  server: _lab.WgGoInterface) -> None:
    """The client in the clients' namespace: the server its one peer, a keepalive a second."""
    client.process = subprocess.Popen(
        ["ip", "netns", "exec", CLIENTS, "unshare", "--mount", "--propagation", "private",
         "sh", "-c", f'mount --bind {CLIENT_SOCKETS} /run/wireguard && '
                     f'exec wireguard-go -f "$0"', client.name],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    socket_path = CLIENT_SOCKETS / f"{client.name}.sock"
    deadline = time.monotonic() + 30
    from zsn.wireguard import uapi

    while not socket_path.exists() or uapi.is_stale(socket_path):  # bound, not listening
        if time.monotonic() > deadline or client.process.poll() is not None:
            said = client.process.stderr.read() if client.process.poll() is not None \
                and client.process.stderr else b""
            words = [line for line in said.decode(errors="replace").splitlines()
                     if line.strip() and line.strip()[0] not in "│┌└"]
            raise TimeoutError(f"{socket_path} did not appear (exit {client.process.returncode}): "
                               f"{' / '.join(words)[-500:]}")
        time.sleep(0.01)

    uapi.set_device(socket_path, [
        f"private_key={client.private_key.hex()}", f"listen_port={client.listen_port}",
        f"public_key={_public(server.private_key).hex()}",
        f"endpoint=192.0.2.1:{SERVER_PORT}", "persistent_keepalive_interval=1",
        "allowed_ip=10.64.0.1/32"])
    address = peer.allowed_ip
    _run("ip", "-n", CLIENTS, "addr", "add", address, "dev", client.name)
    _run("ip", "-n", CLIENTS, "link", "set", client.name, "up")


def _send_to_peers(peers: list[_lab.Peer], stop: threading.Event) -> None:
    """A datagram of 64-1400 bytes to every peer's tunnel address each second."""
    rng = random.Random(34)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        while not stop.wait(1.0):
            for peer in peers:
                with contextlib.suppress(OSError):
                    sender.sendto(b"x" * rng.randint(64, 1400),
                                  (peer.allowed_ip.split("/")[0], 9))


def _wait_for_handshakes(server: _lab.WgGoInterface, count: int) -> None:
    from zsn.wireguard import uapi

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = sum(1 for peer in uapi.get_device(server.socket).peers if peer.latest_handshake)
        if done == count:
            print(f"set-up: {SERVER} with {count} live peers (each a wireguard-go client, "
                  "1 s keepalive, a random-size datagram a second)")
            return
        time.sleep(1)
    raise TimeoutError(f"only {done} of {count} peers handshook within 120 s")


@contextlib.contextmanager
def moving_links(count: int) -> Iterator[None]:
    """`count` veths, a frame of a random size sent on each every second."""
    names = _links_lab.veths(count)
    stop = threading.Event()

    def send() -> None:
        rng = random.Random(11)
        sockets = {}
        for name in names:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            sock.bind((name, 0))
            sockets[name] = sock
        try:
            while not stop.wait(1.0):
                for sock in sockets.values():
                    # broadcast, ethertype 0x88b5 (local experimental): nothing answers
                    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5"
                    sock.send(frame + b"\0" * rng.randint(46, 1400))
        finally:
            for sock in sockets.values():
                sock.close()

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        subprocess.run(["ip", "-batch", "-"], input="".join(
            f"link del {name}\n" for name in names if name.endswith("a")), text=True,
            check=False, capture_output=True)


def zsn_pane(label: str, tab: str, ready: bytes, rows: int, columns: int,
             seconds: float) -> Idle:
    keys = b"" if tab == "WireGuard" else TABS[tab]
    return measure(label, [sys.executable, "-m", "zsn"], rows, columns, seconds, ready, keys)


def idle_phase(args: argparse.Namespace, rows: int, columns: int) -> list[Idle]:
    htop = shutil.which("htop") or "htop"
    results = [measure("htop (default delay 1.5 s)", [htop], rows, columns, args.seconds,
                       b"Load average")]
    with live_peers(args.peers):
        results.append(zsn_pane(f"WireGuard, {args.peers} live peers", "WireGuard",
                                b"peer-00000", rows, columns, args.seconds))
    if args.wireguard_only:
        results.append(measure("htop again (default delay)", [htop], rows, columns,
                               args.seconds, b"Load average"))
        return results
    with moving_links(args.links):
        results.append(zsn_pane(f"Links, {args.links} moving links", "Links",
                                _links_lab.PREFIX.encode(), rows, columns, args.seconds))
    results.append(zsn_pane("ZFS (no ZFS module here)", "ZFS", b"ZFS is not available",
                            rows, columns, args.seconds))
    results.append(zsn_pane("WLAN (no wireless interface)", "WLAN", b"No wireless", rows,
                            columns, args.seconds))
    results.append(zsn_pane("OpenVPN (no connection)", "OpenVPN", b"No OpenVPN configs", rows,
                            columns, args.seconds))
    results.append(measure("htop again (default delay)", [htop], rows, columns,
                           args.seconds, b"Load average"))
    return results


def startup_phase(args: argparse.Namespace) -> dict[str, float]:
    """Medians over interleaved runs: zsn's first frame with rows, then `--rows` rows."""
    python = sys.executable
    ratios = {}
    for peers, probe, goal in ((20, "first frame", GOAL_RATIO),
                               (args.rows, "peers shown", PEERS_GOAL_RATIO)):
        interface, _ = _lab.big_interface(STARTUP_IFACE, peers)
        try:
            cases = [minimal_case(), Case(f"zsn, {peers} peers", [python, "-m", "zsn"],
                                          {"first frame": first_frame,
                                           "peers shown": shows("peer-0")})]
            run_phase(f"{peers} rows", cases, args.runs)
            base = _lab.Stats.of(cases[0].times["first frame"]).median
            shown = _lab.Stats.of(cases[1].times["peers shown"]).median
            # The first frame with its rows: the rows come with it (zsn.tui.startup).
            ratios[f"{probe}, {peers} rows"] = shown / base
            ratios[f"{probe} goal"] = goal
        finally:
            interface.stop()
            Path(f"/etc/wireguard/{STARTUP_IFACE}.conf").unlink(missing_ok=True)
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--peers", type=int, default=200)
    parser.add_argument("--links", type=int, default=50)
    parser.add_argument("--size", default="80x24", help="terminal COLUMNSxROWS")
    parser.add_argument("--runs", type=int, default=7, help="startup runs per app")
    parser.add_argument("--rows", type=int, default=5000, help="rows of the big table")
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--wireguard-only", action="store_true",
                        help="htop and the WireGuard pane only, no start-up runs")
    args = parser.parse_args()
    columns, rows = (int(part) for part in args.size.split("x"))
    _lab.require(["wireguard-go", "ip", "unshare", "mount", "htop"])
    _lab.isolate()
    _lab.compile_repo()
    print(f"terminal {columns}x{rows}, {args.seconds:g} s each; load average "
          f"{os.getloadavg()[0]:.2f}")
    results = idle_phase(args, rows, columns)
    htop = [r for r in results if r.label.startswith("htop")]
    reference = sum(r.bytes_per_second for r in htop) / len(htop)
    print(f"\n{'idle, over the same seconds':42} {'bytes/s':>9} {'x htop':>7} {'CPU %':>7} "
          f"{'RSS MiB':>8} {'main thread %':>14}")
    failures = []
    for result in results:
        ratio = result.bytes_per_second / reference if reference else float("inf")
        print(f"{result.label:42} {result.bytes_per_second:9.1f} {ratio:7.2f} "
              f"{result.cpu_percent:7.2f} {result.rss_mib:8.1f} "
              f"{result.main_thread_percent:14.2f}")
        if not result.label.startswith("htop") and result.bytes_per_second > reference:
            failures.append(f"{result.label}: {result.bytes_per_second:.0f} B/s > htop's "
                            f"{reference:.0f} B/s")
    wireguard = next(r for r in results if r.label.startswith("WireGuard"))
    if wireguard.cpu_percent >= CPU_LIMIT:
        failures.append(f"{wireguard.label}: {wireguard.cpu_percent:.2f} % CPU >= {CPU_LIMIT} %")
    if not (args.skip_startup or args.wireguard_only):
        ratios = startup_phase(args)
        print("\nratios to the minimal Textual app's first frame (medians):")
        for name, goal in (("first frame, 20 rows", GOAL_RATIO),
                           (f"peers shown, {args.rows} rows", PEERS_GOAL_RATIO)):
            print(f"  {name:32} {ratios[name]:5.2f}x (limit {goal}x)")
            if ratios[name] > goal:
                failures.append(f"{name}: {ratios[name]:.2f}x > {goal}x")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    for failure in failures:
        print(f"LIMIT MISSED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
