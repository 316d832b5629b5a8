"""``zsn zfs send SOURCE TARGET --probe``: find what limits a transfer, as the field notes
do by hand (``zfs send | pv``, ``dd if=/dev/zero | nc``, a disk's write speed) before
blaming the network.

Each stage is measured for `PROBE_SECONDS` from its first byte (start-up costs, an SSH
key exchange, are left out), through the same children and pump a send uses:

- source read: ``zfs send`` of the snapshot (in full: it reads what the target would
  get), into /dev/null;
- zsn's pipe: ``cat /dev/zero`` through zsn into ``cat``: the most this machine moves
  between two programs;
- SSH: zeros to ``cat > /dev/null`` on the target, with the cipher a send would get
  (ssh's own report of what the two ends agreed);
- TCP: zeros to zsn's receiver on the target (zeros reveal nothing, so the probe may
  use TCP on any network);
- target write: a dataset zsn creates for the test on the target's pool
  (``POOL/zsn-probe-RANDOM``, compression off so zeros are really written), written
  for the same time and synced, then destroyed: the only dataset zsn destroys, its own.

The slowest stage on the transfer's path limits it; the verdict says by how much, and
what would change with the other transport.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from zsn.errors import EXIT_ERROR, EXIT_OK, ZsnError
from zsn.format import human_bytes, human_rate
from zsn.system import commands
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.zfs import receiver
from zsn.zfs.live import ENV, require_program
from zsn.zfs.remote import Side
from zsn.zfs.send import SendPlan, SendRequest, plan_send
from zsn.zfs.transfer import ProgramSink, Sink, TcpSink, run_stream

PROBE_SECONDS = 3.0
WRITE_BYTES = 1 << 30
"""The write test stops at this size or at `PROBE_SECONDS`, whichever comes first."""
ROUGH_BYTES = 8 << 20
"""Less than this measured: the figure is rough (a small snapshot, a slow start)."""
_CIPHER_RE = re.compile(r"kex: client->server cipher: (\S+)")
_WROTE_RE = re.compile(r"^wrote (\d+) ([0-9.]+)$", re.MULTILINE)


class Stage(NamedTuple):
    key: str
    """``source``, ``pipe``, ``ssh``, ``tcp``, ``target``."""
    name: str
    """What was measured, for the user."""
    rate: float | None = None
    moved: int = 0
    seconds: float = 0.0
    error: str | None = None
    on_path: bool = True
    """The transfer as asked goes through it (the other transport is shown, not counted)."""
    note: str = ""


class DevNull:
    """A sink that discards: /dev/null opened here (splice writes to it)."""

    def __init__(self) -> None:
        self.fd: int | None = None

    def open(self) -> int:
        self.fd = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        return self.fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def wait(self, timeout: float) -> int | None:
        return 0

    def stop(self) -> None:
        self.close()

    def failure(self) -> str:
        return ""


def timed(send_argv: list[str], sink: Sink, *, seconds: float = PROBE_SECONDS,
          clock: Callable[[], float] = time.monotonic) -> tuple[float | None, int, float,
                                                                  str | None]:
    """Run one stream until `seconds` after its first byte (or its end): the rate
    between the first byte and the last tick, the bytes, the seconds, an error."""
    stop = threading.Event()
    first: list[tuple[float, int]] = []
    last: list[tuple[float, int]] = []

    def tick(moved: int) -> None:
        now = clock()
        if moved and not first:
            first.append((now, moved))
        if first:
            last[:] = [(now, moved)]
            if now - first[0][0] >= seconds:
                stop.set()

    outcome = run_stream(send_argv, sink, where="", on_tick=tick, stop=stop, clock=clock)
    error = None if outcome.error in (None, "stopped") else outcome.error
    if not first or not last or last[0][0] <= first[0][0]:
        rate = outcome.moved / outcome.seconds if outcome.moved and outcome.seconds else None
        return rate, outcome.moved, outcome.seconds, error
    (t0, m0), (t1, m1) = first[0], last[0]
    return (m1 - m0) / (t1 - t0), outcome.moved, t1 - t0, error


def _stage(key: str, name: str, send_argv: list[str], sink: Sink, *,
           on_path: bool = True) -> Stage:
    try:
        rate, moved, seconds, error = timed(send_argv, sink)
    except ZsnError as exc:
        return Stage(key, name, error=str(exc), on_path=on_path)
    note = f"only {human_bytes(moved)}: rough" if moved < ROUGH_BYTES and not error else ""
    return Stage(key, name, rate, moved, seconds, error, on_path, note)


def write_test(side: Side, pool: str, seconds: float = PROBE_SECONDS) -> Stage:
    """Create ``POOL/zsn-probe-RANDOM`` (compression off, mounted in /tmp), write zeros
    into it for `seconds` (at most `WRITE_BYTES`) and sync, then destroy it."""
    tag = "zsn-probe-" + os.urandom(4).hex()
    dataset, mountpoint = f"{pool}/{tag}", f"/tmp/{tag}"
    name = f"target write ({pool}, compression off, synced)"
    steps = [
        ["zfs", "create", "-o", "compression=off", "-o", "atime=off", "-o",
         f"mountpoint={mountpoint}", dataset],
        ["python3", "-c", receiver.source(), "--write-test", mountpoint,
         str(seconds), str(WRITE_BYTES)],
        ["zfs", "destroy", dataset],
        ["rmdir", mountpoint],
    ]
    if side.ssh is None:
        zfs = require_program("zfs")
        steps[0][0] = steps[2][0] = zfs
        steps[1][0:3] = [sys.executable, str(Path(receiver.__file__))]
        results = []
        for step in steps:
            results.append(commands.run(step, timeout=seconds + 120, check=False, env=ENV))
            if step is steps[0] and not results[0].ok:
                break
    else:
        results = list(side.run_batch(dict(zip("cwdr", steps, strict=True)),
                                      timeout=seconds + 180).values())
    if not results[0].ok:
        return Stage("target", name, error=f"zfs create {dataset}: "
                     f"{safe(results[0].first_error_line())}")
    written = _WROTE_RE.search(results[1].stdout) if len(results) > 1 else None
    cleanup = "" if len(results) > 2 and results[2].ok else \
        f"; could not destroy {dataset}: destroy it by hand"
    if written is None:
        reason = results[1].first_error_line() if len(results) > 1 else "no result"
        return Stage("target", name, error=safe(reason) + cleanup)
    moved, took = int(written.group(1)), float(written.group(2))
    return Stage("target", name, moved / took if took > 0 else None, moved, took,
                 cleanup or None)


def measure(plan: SendPlan) -> Iterator[Stage]:
    """Each stage of `plan`'s path as it is measured (and the other transport, for
    comparison)."""
    zfs = require_program("zfs")
    flags = ["-w"] if plan.request.raw else []
    snapshot = f"{plan.source}@{plan.decision.snapshot}"
    yield _stage("source", f"source read (zfs send {' '.join([*flags, snapshot])})",
                 [zfs, "send", *flags, snapshot], DevNull())
    yield _stage("pipe", "zsn's pipe (cat /dev/zero, zsn, cat)", ["cat", "/dev/zero"],
                 ProgramSink(["cat"]))
    target = plan.target
    side = Side(target, plan.ssh)
    if target.remote:
        assert plan.ssh is not None
        ssh_argv = plan.ssh.argv("sh -c " + _quoted("exec cat > /dev/null"), extra=["-v"])
        ssh_sink = ProgramSink(ssh_argv)
        ssh = _stage("ssh", f"ssh to {target.host}", ["cat", "/dev/zero"], ssh_sink,
                     on_path=plan.transport == "ssh")
        cipher = _CIPHER_RE.search(ssh_sink.failure())
        yield ssh._replace(name=ssh.name + (f" ({cipher.group(1)})" if cipher else ""))
        control = side.command(["python3", "-c", receiver.source(),
                                "--discard-output", "cat"])
        yield _stage("tcp", f"tcp to {target.host} (zsn's receiver)", ["cat", "/dev/zero"],
                     TcpSink(control), on_path=plan.transport == "tcp")
    yield write_test(side, target.dataset.split("/", 1)[0])


def stage_line(stage: Stage, width: int = 0) -> str:
    figure = human_rate(stage.rate) if stage.rate else "-"
    extra = stage.error or stage.note
    mark = "" if stage.on_path else " (not on this transfer's path)"
    return f"{stage.name:<{width}}  {figure:>12}{mark}" + (f"  {safe(extra)}" if extra else "")


def _quoted(script: str) -> str:
    import shlex

    from zsn.zfs.remote import remote_script

    return shlex.quote(remote_script([["sh", "-c", script]], exec_last=True))


def verdict(stages: Sequence[Stage]) -> dict[str, Any]:
    """The stage that limits the transfer, by how much, and what the other transport
    would give."""
    measured = [s for s in stages if s.on_path and s.rate]
    if not measured:
        return {"limit": None, "says": "nothing could be measured"}
    ordered = sorted(measured, key=lambda s: s.rate or 0.0)
    slowest = ordered[0]
    assert slowest.rate is not None
    says = f"the limit is {slowest.name} at {human_rate(slowest.rate)}"
    result: dict[str, Any] = {"limit": slowest.key, "rate": slowest.rate}
    if len(ordered) > 1:
        following = ordered[1]
        assert following.rate is not None
        factor = following.rate / slowest.rate
        result["factor"] = round(factor, 2)
        says += f", {factor:.1f}x below the next slowest, {following.name} at " \
                f"{human_rate(following.rate)}"
    others = [s for s in stages if not s.on_path and s.rate]
    if slowest.key in ("ssh", "tcp") and others and (others[0].rate or 0) > slowest.rate:
        other = others[0]
        ceiling = min([other.rate or 0.0] + [s.rate or 0.0 for s in ordered[1:]])
        says += (f"; --via {other.key} would allow up to {human_rate(ceiling)}"
                 + (" (for a raw send of encrypted data, or over WireGuard)"
                    if other.key == "tcp" else ""))
    elif slowest.key in ("source", "target"):
        says += "; the disks set the pace: a faster network would not help"
    result["says"] = says
    return result


def run_probe(host: Host, request: SendRequest, *, dry_run: bool = False,
              as_json: bool = False) -> int:
    plan = plan_send(host, request)
    pool = plan.target.dataset.split("/", 1)[0]
    if dry_run:
        print(f"Probe: {plan.source}@{plan.decision.snapshot} to {plan.target}")
        print(f"  measures for {PROBE_SECONDS:g} s each: the source read, zsn's pipe"
              + (", ssh and tcp to " + str(plan.target.host) if plan.target.remote else "")
              + ", the target's write speed")
        print(f"  creates {pool}/zsn-probe-RANDOM for the write test and destroys it "
              "right after (nothing else is written)")
        return EXIT_OK
    stages = list(measure(plan))
    found = verdict(stages)
    if as_json:
        print(json.dumps({"source": f"{plan.source}@{plan.decision.snapshot}",
                          "target": str(plan.target), "via": plan.transport,
                          "stages": [s._asdict() for s in stages], "verdict": found},
                         indent=2))
    else:
        print(f"probe: {plan.source}@{plan.decision.snapshot} to {plan.target}")
        width = max(len(s.name) for s in stages)
        for stage in stages:
            print("  " + stage_line(stage, width))
        print(found["says"])
    return EXIT_OK if found.get("limit") else EXIT_ERROR
