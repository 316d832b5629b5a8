"""`zsn serve` scrapes against the exporters it stands in for, in the same run.

Goals (issue 20): a scrape of zsn serve <= 1.0x prometheus_wireguard_exporter's on the
same interface, at 200 and at 5,000 peers (median); a scrape of links with 500 veth
interfaces <= 1.0x node_exporter's netdev and netclass collectors; zsn serve's idle
RSS and CPU per scrape, printed. Run as root from the repository root:

    python3 bench/serve.py [--peers 200,5000] [--links 500] [--runs 40]

Set-up (not part of the project): prometheus_wireguard_exporter 3.6.6 is built from
its crate with cargo into /var/cache/zsn-bench when missing (a few minutes, once);
node_exporter is Debian's prometheus-node-exporter. Everything runs in private mount
and network namespaces (`_lab.isolate`): each exporter sees only the benchmark's
interface, or its veths.

Each round scrapes every exporter once, in rotating order, over a new TCP connection
(connect, GET /metrics, read the whole answer), with Python's clock; medians are
compared and the ratio is zsn's median over the anchor's. Before timing, the outputs
are compared: the anchor's three WireGuard families and zsn's must hold the same
samples (names, labels, values), so both read the same interface.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import _lab
import _links_lab
import psutil

from zsn.exporter.collectors import REUSE_SECONDS
from zsn.exporter.serve import DEFAULT_POLL_INTERVAL

IDLE_SECONDS = 2 * DEFAULT_POLL_INTERVAL
"""Long enough for two of the polls a section with a per-poll hook (WireGuard's peer
history) gets when nobody scrapes."""

CRATE = "prometheus_wireguard_exporter"
CRATE_VERSION = "3.6.6"
CARGO_ROOT = Path("/var/cache/zsn-bench") / CRATE
RUST_EXPORTER = CARGO_ROOT / "bin" / CRATE
NODE_EXPORTER = "prometheus-node-exporter"
ZSN_PORT, RUST_PORT, NODE_PORT = 19586, 19587, 19100
COMPAT_FAMILIES = ("wireguard_sent_bytes_total", "wireguard_received_bytes_total",
                   "wireguard_latest_handshake_seconds")


def build_rust_exporter() -> Path:
    """prometheus_wireguard_exporter from crates.io, built once (the bench's set-up)."""
    if RUST_EXPORTER.exists():
        return RUST_EXPORTER
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    print(f"set-up: cargo install {CRATE} {CRATE_VERSION} (once, into {CARGO_ROOT})")
    subprocess.run([cargo, "install", CRATE, "--version", CRATE_VERSION, "--locked",
                    "--root", str(CARGO_ROOT)], check=True)
    return RUST_EXPORTER


def scrape(port: int, path: str = "/metrics") -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f":{port}{path}: HTTP {response.status}: {body[:200]!r}")
        return body
    finally:
        connection.close()


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{what} is not listening on {port}")


def start(argv: list[str], port: int, what: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=_lab.repo_env(), cwd=_lab.REPO)
    wait_listening(port, process, what)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def zsn_serve() -> subprocess.Popen[bytes]:
    return start([sys.executable, "-m", "zsn", "serve", "--listen", f"127.0.0.1:{ZSN_PORT}"],
                 ZSN_PORT, "zsn serve")


def samples(text: bytes, families: tuple[str, ...]) -> set[tuple[str, str]]:
    """(family, labels and value) of every sample of `families`, labels in sorted order."""
    found = set()
    for line in text.decode().splitlines():
        name, _, rest = line.partition("{")
        if name in families:
            labels, _, value = rest.rpartition("} ")
            found.add((name, ",".join(sorted(labels.split('",'))) + " " + value))
    return found


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def timed_round(actions: list[tuple[str, Callable[[], object]]], runs: int,
                zsn: psutil.Process, warmup: int = 3) -> tuple[dict[str, _lab.Stats], float]:
    """Every action once per round, order rotating (as `_lab.interleaved`); zsn's
    scrapes are spaced by more than `REUSE_SECONDS` (outside the timing), so each one
    reads the host afresh as Prometheus' scrapes 15 s apart do, and never gets the
    reading an earlier scrape left. Also zsn's CPU seconds per scrape over the rounds."""
    last_zsn = 0.0
    times: dict[str, list[float]] = {label: [] for label, _ in actions}
    zsn_scrapes = 0
    before = cpu_seconds(zsn)
    for round_number in range(warmup + runs):
        shift = round_number % len(actions)
        for label, action in [*actions[shift:], *actions[:shift]]:
            if label.startswith("zsn"):
                time.sleep(max(0.0, last_zsn + REUSE_SECONDS + 0.05 - time.monotonic()))
                zsn_scrapes += 1
            started = time.perf_counter()
            action()
            if round_number >= warmup:
                times[label].append(time.perf_counter() - started)
            if label.startswith("zsn"):
                last_zsn = time.monotonic()
    stats = {label: _lab.Stats.of(values) for label, values in times.items()}
    return stats, (cpu_seconds(zsn) - before) / zsn_scrapes


def report(stats: dict[str, _lab.Stats], anchor: str) -> None:
    for label, value in stats.items():
        ratio = value.median / stats[anchor].median
        print(f"  {label:<44} {value.ms()}   {ratio:5.2f}x")


def wireguard_phase(peers: int, runs: int, rust: Path) -> None:
    name = f"zbn{peers}"
    interface = _lab.WgGoInterface(name)
    interface.start()
    made = _lab.make_peers(peers)
    interface.load(made)
    config = write_friendly_config(interface, made)
    print(f"\n== {peers} peers on {name} (wireguard-go); names as '# friendly_name = ...' "
          "in its config")
    rust_process = start([str(rust), "-l", "127.0.0.1", "-p", str(RUST_PORT), "-n", str(config)],
                         RUST_PORT, CRATE)
    zsn_process = zsn_serve()
    try:
        anchor = samples(scrape(RUST_PORT), COMPAT_FAMILIES)
        ours = samples(scrape(ZSN_PORT, "/metrics?collect[]=wireguard"), COMPAT_FAMILIES)
        if anchor != ours or len(anchor) != 3 * peers:
            raise RuntimeError(f"the outputs differ: {len(anchor)} samples vs {len(ours)}; "
                               f"e.g. {sorted(anchor ^ ours)[:2]}")
        print(f"  same samples from both: {len(anchor)} in the three "
              f"{CRATE} families")
        zsn = psutil.Process(zsn_process.pid)
        actions: list[tuple[str, Callable[[], object]]] = [
            (f"{CRATE} /metrics", lambda: scrape(RUST_PORT)),
            ("zsn serve /metrics?collect[]=wireguard",
             lambda: scrape(ZSN_PORT, "/metrics?collect[]=wireguard")),
            ("zsn serve /metrics (every section)", lambda: scrape(ZSN_PORT)),
        ]
        stats, per_scrape = timed_round(actions, runs, zsn)
        report(stats, f"{CRATE} /metrics")
        idle_figures(zsn, per_scrape)
    finally:
        stop(zsn_process)
        stop(rust_process)
        interface.stop()
        config.unlink()


def write_friendly_config(interface: _lab.WgGoInterface, peers: list[_lab.Peer]) -> Path:
    """The wg-quick config with each name as prometheus_wireguard_exporter reads names
    (``# friendly_name = NAME`` inside the [Peer] block, column 0); zsn reads that style
    too."""
    path = interface.write_config(Path("/etc/wireguard"), peers)
    text = path.read_text()
    for peer in peers:
        text = text.replace(f"# {peer.name}\n[Peer]\n",
                            f"[Peer]\n# friendly_name = {peer.name}\n", 1)
    path.write_text(text)
    return path


def links_phase(count: int, runs: int) -> None:
    names = _links_lab.veths(count)
    node_process = start([NODE_EXPORTER, "--collector.disable-defaults", "--collector.netdev",
                          "--collector.netclass", "--web.disable-exporter-metrics",
                          f"--web.listen-address=127.0.0.1:{NODE_PORT}"], NODE_PORT,
                         NODE_EXPORTER)
    zsn_process = zsn_serve()
    print(f"\n== links: {len(names)} veth interfaces; node_exporter with only its netdev and "
          "netclass collectors")
    try:
        for port, path, family in ((NODE_PORT, "/metrics", "node_network_receive_bytes_total"),
                                   (ZSN_PORT, "/metrics?collect[]=links",
                                    "zsn_link_receive_bytes_total")):
            text = scrape(port, path).decode()
            seen = sum(1 for line in text.splitlines() if line.startswith(family + "{")
                       and _links_lab.PREFIX in line)
            if seen != len(names):
                raise RuntimeError(f"{family}: {seen} veths, expected {len(names)}")
        zsn = psutil.Process(zsn_process.pid)
        actions: list[tuple[str, Callable[[], object]]] = [
            ("node_exporter netdev+netclass /metrics", lambda: scrape(NODE_PORT)),
            ("zsn serve /metrics?collect[]=links",
             lambda: scrape(ZSN_PORT, "/metrics?collect[]=links")),
        ]
        stats, per_scrape = timed_round(actions, runs, zsn)
        report(stats, "node_exporter netdev+netclass /metrics")
        idle_figures(zsn, per_scrape)
    finally:
        stop(zsn_process)
        stop(node_process)


def idle_figures(zsn: psutil.Process, per_scrape: float,
                 idle_seconds: float = IDLE_SECONDS) -> None:
    before = cpu_seconds(zsn)
    time.sleep(idle_seconds)
    idle = cpu_seconds(zsn) - before
    rss = zsn.memory_info().rss
    print(f"  zsn serve: CPU {per_scrape * 1e3:.2f} ms per scrape (user+system over the "
          f"timed scrapes); RSS {rss / 2**20:.1f} MiB; idle CPU {idle * 1e3:.0f} ms over "
          f"{idle_seconds:.0f} s without scrapes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", default="200,5000")
    parser.add_argument("--links", type=int, default=500)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    _lab.require(["wireguard-go", "wg", "ip", "unshare", "mount", NODE_EXPORTER])
    rust = build_rust_exporter()  # before isolating: cargo may need the registry
    _lab.isolate()
    _lab.compile_repo()
    version = subprocess.run([NODE_EXPORTER, "--version"], capture_output=True, text=True)
    print(f"zsn serve vs {CRATE} {CRATE_VERSION} and "
          f"{(version.stdout + version.stderr).splitlines()[0]}; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    for peers in (int(text) for text in args.peers.split(",")):
        wireguard_phase(peers, args.runs, rust)
    if args.links:
        links_phase(args.links, args.runs)


if __name__ == "__main__":
    main()
