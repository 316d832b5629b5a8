"""Replication in the QEMU kernel lab: `zsn zfs send` against the pipelines it replaces.

Goals (issue 21), each zsn's throughput at least 0.95x the reference's, same run:

- local, pool to pool: `zsn zfs send SRC@s DST` vs `zfs send SRC@s | zfs receive DST`;
- `--via tcp` (a raw send of an encrypted dataset) vs what an admin does by hand:
  `ssh root@127.0.0.1 'nc -l 127.0.0.1 PORT | zfs receive'` (openbsd-netcat), and
  once it listens, `zfs send -w | nc -N 127.0.0.1 PORT`, on loopback;
- `--via ssh` vs `zfs send | ssh root@127.0.0.1 zfs receive` (ssh's default cipher;
  again with the cipher zsn picked when that is another, to tell the transport from
  the cipher);
- zsn's own CPU per GiB moved (user + system of the zsn process while it moves the
  bytes, its children not counted), beside `pv`'s in `zfs send | pv | zfs receive`
  (what the field notes and syncoid put in the pipe to see progress).

Two throughputs per transfer, the stream's bytes over:
- *whole*: the seconds from starting the programs to the last one's exit, receiver's
  start included: a reference's wall time (for nc, from starting the ssh that starts
  the listener), zsn's `seconds` (its children started, the stream moved, zfs receive
  done; it leaves out the interpreter's start and zsn's reads of both sides before it
  sends, printed as the whole process's wall time);
- *data*: from the moment the bytes can flow to the receiver's exit: zsn's `seconds`
  less its `setup_seconds` (until its receiver accepted the connection, or ssh's
  remote shell said it runs); for nc from starting the sender, the listener up; for
  ssh from the remote shell's first word (`echo` on stderr before `exec zfs receive`,
  as zsn's remote command does).

Two lines tell the start-up's parts: `ssh root@127.0.0.1 true` (a connection) and the
same running zsn's receiver in `python3 -c` (it exits at once without a token). The
stream is the same on both sides of a pair (same snapshot, same flags). Rounds run
every case once, in rotating order; medians are compared. Each transfer goes to a new
dataset, destroyed after.

Layout: pools `bsrc` and `bdst` on files in a tmpfs; `bsrc/data` (SIZE MiB of random
bytes, @s) and `bsrc/secret` (the same size, encrypted with a raw key, @s); an sshd on
127.0.0.1 (throwaway host key, root by key, X25519 key exchange: the post-quantum
default takes tens of seconds of emulated CPU), root's client key named by a drop-in
of the guest's ssh_config.

Run as root on the host (boots one guest under the lab's lock):

    .venv/bin/python bench/zfs_send.py [--size 256] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BASE = Path("/run/zsnbench-send")
GOAL = 0.95
PORT = 47001
GIB = 1 << 30
LOOPBACK = "root@127.0.0.1"
DEFAULT_CIPHER = "chacha20-poly1305@openssh.com"
"""ssh's first (Debian 12's OpenSSH 9.2): the plain reference uses it already."""


def sh(*argv: str, check: bool = True) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False,
                            env={**os.environ, "LC_ALL": "C"})
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip()}")
    return result.stdout


def build_layout(size: int) -> None:
    # the ARC capped: the pools' files live in the guest's RAM (a tmpfs) beside it
    sh("modprobe", "zfs", f"zfs_arc_max={256 << 20}")
    BASE.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", f"size={6 * size + 400}m", "tmpfs", str(BASE))
    for pool, megabytes in (("bsrc", 3 * size + 128), ("bdst", 2 * size + 128)):
        sh("truncate", "-s", f"{megabytes}M", str(BASE / f"{pool}.img"))
        sh("zpool", "create", "-f", "-o", "ashift=12", "-O", "compression=lz4", "-O",
           "atime=off", "-m", f"{BASE}/{pool}", pool, str(BASE / f"{pool}.img"))
    (BASE / "key").write_bytes(os.urandom(32))
    sh("zfs", "create", "bsrc/data")
    sh("zfs", "create", "-o", "encryption=on", "-o", "keyformat=raw", "-o",
       f"keylocation=file://{BASE / 'key'}", "bsrc/secret")
    for dataset in ("data", "secret"):
        with open(BASE / "bsrc" / dataset / "random", "wb") as out:
            for _ in range(size):
                out.write(os.urandom(1 << 20))
        sh("zfs", "snapshot", f"bsrc/{dataset}@s")


def start_sshd() -> Any:
    from tests.lab.ssh_target import SshServer, client_key, unlock_root_for_keys, use_client_files

    ssh_dir = BASE / "client"
    public = client_key(ssh_dir)
    use_client_files(ssh_dir)
    work = BASE / "sshd"
    work.mkdir()
    unlock_root_for_keys(work)
    server = SshServer(None, ["127.0.0.1"], work, authorized=[public.read_text().strip()])
    server.start()
    (ssh_dir / "known_hosts").write_text(server.known_hosts_line("127.0.0.1") + "\n")
    server.wait_ready(LOOPBACK)
    return server


def zsn_send(*args: str) -> dict[str, Any]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "zsn", "zfs", "send", *args, "--json"],
                            capture_output=True, text=True, timeout=1200, cwd=REPO,
                            check=False)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"zsn zfs send {' '.join(args)}: {result.stderr.strip()}")
    record = json.loads(result.stdout)
    return {"bytes": record["bytes"], "seconds": record["seconds"], "wall": wall,
            "cpu": record["cpu_seconds"],
            "data": record["seconds"] - record["setup_seconds"]}


def pipeline(script: str) -> dict[str, Any]:
    started = time.perf_counter()
    result = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True,
                            text=True, timeout=1200, check=False, env={**os.environ,
                                                                       "LC_ALL": "C"})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{script}: {result.stderr.strip()}")
    return {"seconds": seconds, "wall": seconds, "stderr": result.stderr}


def listening(port: int) -> bool:
    """A socket in LISTEN state on `port` (what an admin waits for before sending)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def netcat(target: str) -> dict[str, Any]:
    """The listener started over ssh, then the sender once it listens, timed whole."""
    started = time.perf_counter()
    receiver = subprocess.Popen(
        ["ssh", "-o", "BatchMode=yes", LOOPBACK,
         f"set -o pipefail; nc -l 127.0.0.1 {PORT} | zfs receive -u {target}"],
        stdin=subprocess.DEVNULL)
    while not listening(PORT):
        if receiver.poll() is not None:
            raise RuntimeError("ssh nc -l | zfs receive ended before listening")
        time.sleep(0.02)
    sending = time.perf_counter()
    subprocess.run(["bash", "-o", "pipefail", "-c",
                    f"zfs send -w bsrc/secret@s | nc -N 127.0.0.1 {PORT}"], check=True,
                   timeout=1200)
    if receiver.wait(600) != 0:
        raise RuntimeError("ssh nc -l | zfs receive failed")
    ended = time.perf_counter()
    return {"seconds": ended - started, "wall": ended - started, "data": ended - sending}


def over_ssh(target: str, *options: str, as_zsn: bool = False) -> dict[str, Any]:
    """`zfs send | ssh HOST zfs receive`, the remote shell saying when it runs; with
    `as_zsn`, ssh and zfs receive with zsn's options (its pump left out)."""
    command = f"echo running >&2; exec zfs receive -u {target}"
    argv = ["ssh", "-o", "BatchMode=yes", *options, LOOPBACK, command]
    if as_zsn:
        from zsn.zfs.remote import connect, parse_target

        argv = connect(parse_target(f"{LOOPBACK}:{target}")).argv(
            command.replace("-u", "-s -u"))
    started = time.perf_counter()
    sender = subprocess.Popen(["zfs", "send", "bsrc/data@s"], stdout=subprocess.PIPE)
    assert sender.stdout is not None
    receiver = subprocess.Popen(argv, stdin=sender.stdout, stderr=subprocess.PIPE, text=True)
    sender.stdout.close()
    assert receiver.stderr is not None
    said = []  # root's shell may say something first (a .bashrc)
    while (line := receiver.stderr.readline()) and line.strip() != "running":
        said.append(line)
    running = time.perf_counter()
    rest = receiver.stderr.read()
    if receiver.wait(600) != 0 or sender.wait(60) != 0 or not line:
        raise RuntimeError(f"zfs send | ssh zfs receive failed: {''.join(said)}{rest}")
    ended = time.perf_counter()
    return {"seconds": ended - started, "wall": ended - started, "data": ended - running}


def start_up(*remote: str) -> dict[str, Any]:
    started = time.perf_counter()
    subprocess.run(["ssh", "-o", "BatchMode=yes", LOOPBACK, *remote], capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=300, check=False)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "wall": seconds}


def pv_cpu(target: str) -> dict[str, Any]:
    """`pv` in the pipe, its own CPU measured by /usr/bin/time."""
    found = pipeline(f"zfs send bsrc/data@s | /usr/bin/time -f 'pvcpu %U %S' pv -q | "
                     f"zfs receive -u {target}")
    line = next(line for line in found["stderr"].splitlines() if line.startswith("pvcpu"))
    user, system = (float(value) for value in line.split()[1:])
    return {**found, "cpu": user + system}


def cases(cipher: str) -> dict[str, Any]:
    from zsn.zfs import receiver

    found: dict[str, Any] = {
        "zsn local": lambda t: zsn_send("bsrc/data@s", t),
        "zfs send | zfs receive": lambda t: pipeline(
            f"zfs send bsrc/data@s | zfs receive -u {t}"),
        "zsn --via tcp (raw)": lambda t: zsn_send("bsrc/secret@s", f"{LOOPBACK}:{t}", "--raw",
                                                  "--via", "tcp"),
        "zfs send -w | nc": netcat,
        "zsn --via ssh": lambda t: zsn_send("bsrc/data@s", f"{LOOPBACK}:{t}"),
        "zfs send | ssh zfs receive": over_ssh,
        "zfs send | ssh (zsn's options) zfs receive -s": lambda t: over_ssh(t, as_zsn=True),
        "zfs send | pv | zfs receive": pv_cpu,
        "ssh true (start-up)": lambda t: start_up("true"),
        "ssh python3 -c RECEIVER (start-up)": lambda t: start_up(
            "python3 -c " + shlex.quote(receiver.source()) + " < /dev/null"),
    }
    if cipher != DEFAULT_CIPHER:
        found[f"... | ssh -c {cipher} ..."] = lambda t: over_ssh(t, "-c", cipher)
    return found


PAIRS = (("zsn local", "zfs send | zfs receive"),
         ("zsn --via tcp (raw)", "zfs send -w | nc"),
         ("zsn --via ssh", "zfs send | ssh zfs receive"))


def in_guest(results: Path, size: int, rounds: int, only: str | None = None) -> None:
    from tests.lab.ssh_target import forget_client_files
    from zsn.zfs.remote import cipher_order

    started = time.monotonic()
    build_layout(size)
    server = start_sshd()
    print(f"layout built in {time.monotonic() - started:.0f} s", flush=True)
    cipher = cipher_order()[0]
    runs = cases(cipher)
    if only:  # a few cases again, more rounds in the same time
        runs = {name: run for name, run in runs.items()
                if any(word in name for word in only.split(","))}
    names = list(runs)
    figures: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    stream: dict[str, int] = {}
    try:
        for number in range(rounds + 1):  # the first round warms caches, not counted
            for position, name in enumerate(names[number % len(names):]
                                            + names[:number % len(names)]):
                target = f"bdst/r{number}x{position}"
                try:
                    found = runs[name](target)
                except (RuntimeError, subprocess.SubprocessError) as exc:
                    print(f"round {number} {name}: FAILED {exc}", flush=True)
                    continue
                finally:
                    sh("zfs", "destroy", "-r", target, check=False)
                if "bytes" in found:
                    stream["raw" if "tcp" in name else "plain"] = found["bytes"]
                if number:
                    figures[name].append(found)
                print(f"round {number} {name}: {found['seconds']:.1f} s", flush=True)
    finally:
        server.stop()
        for pool in ("bsrc", "bdst"):
            subprocess.run(["zpool", "destroy", "-f", pool], check=False)
        forget_client_files()
        subprocess.run(["umount", "-l", "/etc/shadow"], check=False)
        subprocess.run(["umount", "-l", str(BASE)], check=False)
    (results / "figures.json").write_text(json.dumps(
        {"figures": figures, "stream": stream, "cipher": cipher, "size": size}, indent=2))


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256,
                        help="MiB per dataset (default 256)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds after a first one not counted (default: 2)")
    parser.add_argument("--only", metavar="WORDS",
                        help="only the cases whose name holds one of these comma-separated "
                             "words (e.g. 'ssh' for the ssh pair and the start-ups)")
    parser.add_argument("--in-guest", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--report", metavar="FIGURES_JSON",
                        help="print the figures a guest run wrote (no boot)")
    args = parser.parse_args()
    if args.in_guest:
        in_guest(Path(args.in_guest), args.size, args.rounds, args.only)
        return 0
    if args.report:
        return report(json.loads(Path(args.report).read_text()), "(as recorded)",
                      args.rounds)
    for tool in ("nc", "pv", "sshd"):
        if shutil.which(tool) is None:
            sys.exit(f"bench: {tool} is missing (apt install netcat-openbsd pv openssh-server)")
    from tests.lab.kernel import boot

    results = Path(tempfile.mkdtemp(prefix="zsn-bench-send-"))
    os.chmod(results, 0o755)
    only = f"--only {shlex.quote(args.only)} " if args.only else ""
    run = boot(f"{sys.executable} bench/zfs_send.py --size {args.size} --rounds {args.rounds} "
               f"{only}"
               f"--in-guest {results}", results, "bench zfs send", timeout=3000,
               cpus=2)  # its figures are 2 vCPUs' (idle host)
    figures_path = results / "figures.json"
    if run.returncode != 0 or not figures_path.exists():
        print(run.tail(40))
        return 1
    print("\n".join(line for line in run.tail(400).splitlines()
                    if line.startswith(("layout", "round"))))
    return report(json.loads(figures_path.read_text()), run.boot.kernel, args.rounds)


def report(found: dict[str, Any], kernel: str, rounds: int) -> int:
    """The figures of one guest run, medians and the ratios against the goal."""
    figures, stream = found["figures"], found["stream"]
    sizes = ", ".join(f"{stream[kind] / 2 ** 20:.1f} MiB {kind}" for kind in ("plain", "raw")
                      if kind in stream)
    print(f"guest kernel {kernel}, TCG, 2 vCPUs; {found['size']} MiB datasets "
          f"(streams: {sizes}); {rounds} rounds, medians; zsn's ssh cipher: "
          f"{found['cipher']}")
    print(f"\n{'':<36} {'MiB/s':>7} {'seconds':>8} {'data MiB/s':>10} {'data s':>7} "
          f"{'wall':>7} {'min s':>7} {'max s':>7}")
    rates: dict[str, float] = {}
    data_rates: dict[str, float] = {}
    for name, runs in figures.items():
        seconds = [r["seconds"] for r in runs]
        data = [r.get("data", r["seconds"]) for r in runs]
        size = stream["raw" if "tcp" in name or "nc" in name else "plain"]
        start_up = "start-up" in name
        rates[name] = size / median(seconds) / 2 ** 20
        data_rates[name] = size / median(data) / 2 ** 20
        shown = (f"{'':>7} {median(seconds):8.2f} {'':>10} {'':>7}" if start_up else
                 f"{rates[name]:7.2f} {median(seconds):8.2f} {data_rates[name]:10.2f} "
                 f"{median(data):7.2f}")
        print(f"{name:<36} {shown} {median([r['wall'] for r in runs]):7.2f} "
              f"{min(seconds):7.2f} {max(seconds):7.2f}")
    print()
    ratios = []
    for zsn, reference in PAIRS:
        if zsn not in rates or reference not in rates:
            continue
        ratio = rates[zsn] / rates[reference]
        ratios.append(ratio)
        print(f"{zsn} / {reference}: whole {ratio:.3f}x (goal >= {GOAL}) "
              f"{'OK' if ratio >= GOAL else 'UNDER'}; data alone "
              f"{data_rates[zsn] / data_rates[reference]:.3f}x")
    same = f"... | ssh -c {found['cipher']} ..."
    if same in rates:
        print(f"zsn --via ssh / {same}: {rates['zsn --via ssh'] / rates[same]:.2f}x "
              "(the same cipher: zsn's mover alone)")
    zsn_cpu = [r["cpu"] / r["bytes"] * GIB for name in ("zsn local", "zsn --via ssh",
                                                         "zsn --via tcp (raw)")
               for r in figures.get(name, ())]
    pv_runs = figures.get("zfs send | pv | zfs receive", [])
    pv_per_gib = median([r["cpu"] / stream["plain"] * GIB for r in pv_runs])
    pv_said = f", pv {pv_per_gib:.3f} s (time's 10 ms resolution)" if pv_runs else ""
    print(f"CPU per GiB moved: zsn {median(zsn_cpu):.3f} s (all its transfers){pv_said}")
    return 0 if ratios and min(ratios) >= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
