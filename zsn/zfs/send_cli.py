"""``zsn zfs send SOURCE TARGET``: the plan (``--dry-run``), the transfer with its
progress on stderr, the result (``--json``: as recorded), and ``--probe``.

On a terminal the progress is one line redrawn in place (a bar, bytes of the estimate,
rate, ETA); otherwise a plain line every `PLAIN_EVERY` seconds, for logs. Ctrl-C or
SIGTERM stops the transfer the way that keeps the target's partial state: the same
command resumes it (exit status 130).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from zsn.errors import EXIT_ERROR, EXIT_OK, ValidationError
from zsn.format import human_bytes, human_duration, human_rate
from zsn.headless import add_dry_run
from zsn.system.host import Host
from zsn.terminal import SafeStream, safe
from zsn.zfs.send import VIA, SendRequest, parse_rate, plan_send

EXIT_INTERRUPTED = 130
PLAIN_EVERY = 5.0
REDRAW_EVERY = 0.25
BAR = 20


def add_arguments(verbs: Any) -> None:
    send = verbs.add_parser(
        "send", help="send snapshots to a dataset here or on another host (resumable)",
        description="Send SOURCE's snapshots to TARGET: in full to a new target, else from "
                    "the newest snapshot both have. Running it again after an "
                    "interruption resumes where it stopped.")
    send.add_argument("source", metavar="SOURCE",
                      help="pool/ds (up to its newest snapshot) or pool/ds@snap")
    send.add_argument("target", metavar="TARGET", help="pool/ds here or [user@]host:pool/ds")
    send.add_argument("--via", choices=VIA, default="ssh",
                      help="ssh (default), or tcp: a raw encrypted stream, or over WireGuard")
    send.add_argument("--raw", action="store_true",
                      help="send blocks as stored: an encrypted dataset stays encrypted and "
                           "the target never gets its key")
    send.add_argument("-r", "--recursive", action="store_true",
                      help="the dataset and its descendants (one -R stream)")
    send.add_argument("--limit", type=_rate, metavar="RATE",
                      help="at most RATE per second, evenly: 50M (MiB/s), 800K, 100Mbit")
    send.add_argument("--probe", action="store_true",
                      help="measure each stage (source read, pipe, SSH, TCP, target write) "
                           "and name the one that limits, instead of sending")
    send.add_argument("--json", action="store_true",
                      help="print the result (or the probe's findings) as JSON on stdout")
    add_dry_run(send)


def _rate(text: str) -> float:
    try:
        return parse_rate(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def request_of(args: argparse.Namespace) -> SendRequest:
    return SendRequest(args.source, args.target, args.via, args.raw, args.recursive,
                       args.limit)


def run(args: argparse.Namespace, host: Host) -> int:
    request = request_of(args)
    if args.probe:
        from zsn.zfs.probe import run_probe

        return run_probe(host, request, dry_run=args.dry_run, as_json=args.json)
    plan = plan_send(host, request)
    if args.dry_run:
        sys.stdout.write(plan.plan().describe())
        return EXIT_OK
    from zsn.zfs.transfer import Transfer, TransferFailed

    for warning in (*plan.decision.warnings, *plan.warnings):
        print(f"warning: {safe(warning)}", file=sys.stderr)
    printer = ProgressPrinter(sys.stderr)
    stop = threading.Event()
    transfer = Transfer(host, request, plan=plan, on_progress=printer.progress,
                        say=printer.say, stop=stop)
    try:
        with _stopping_on_signals(stop):
            result = transfer.run()
    except TransferFailed as failed:
        printer.end()
        if transfer.problem:
            print(f"note: {transfer.problem}", file=sys.stderr)
        if args.json:
            print(json.dumps(failed.result, indent=2))
        if failed.interrupted:
            print(f"zsn zfs send: {safe(str(failed))} after "
                  f"{human_bytes(failed.result['bytes'])}: run the same command to resume",
                  file=sys.stderr)
            return EXIT_INTERRUPTED if stop.is_set() else EXIT_ERROR
        print(f"zsn zfs send: error: {failed}", file=sys.stderr)
        return EXIT_ERROR
    printer.end()
    if transfer.problem:
        print(f"note: {transfer.problem}", file=sys.stderr)
    print(summary(result), file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    return EXIT_OK


def summary(result: dict[str, Any]) -> str:
    if not result["bytes"] and not result.get("resumed"):
        return f"{safe(result['target'])} is up to date ({safe(result['snapshot'])})"
    seconds = result.get("seconds") or 0.0
    resumed = "resumed, " if result.get("resumed") else ""
    return (f"sent {human_bytes(result['bytes'])} in {human_duration(seconds)} "
            f"({human_rate(result.get('rate'))}, {resumed}zsn used "
            f"{result.get('cpu_seconds', 0):.2f} s of CPU): {safe(result['snapshot'])} is on "
            f"{safe(result['target'])}")


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` (the transfer ends the way that keeps partial state)
    instead of raising wherever the main thread happens to be."""
    def handler(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class ProgressPrinter:
    """Progress on stderr: redrawn in place on a terminal, a line now and then in a log."""

    def __init__(self, stream: TextIO, clock: Any = time.monotonic) -> None:
        self.stream = stream
        # The redraw's own escapes go around the safe stream; the text is still safe.
        self._raw: TextIO = stream.stream if isinstance(stream, SafeStream) else stream
        self.terminal = stream.isatty()
        self._clock = clock
        self._shown_at = float("-inf")
        self._drawn = False

    def progress(self, progress: dict[str, Any]) -> None:
        now = self._clock()
        if now - self._shown_at < (REDRAW_EVERY if self.terminal else PLAIN_EVERY):
            return
        self._shown_at = now
        line = progress_line(progress, bar=self.terminal)
        if self.terminal:
            width = shutil.get_terminal_size((80, 24)).columns - 1
            self._raw.write("\r" + safe(line[:width]) + "\x1b[K")
            self._raw.flush()
            self._drawn = True
        else:
            self.stream.write(f"progress: {line}\n")
        self.stream.flush()

    def say(self, line: str) -> None:
        self._clear()
        self.stream.write(safe(line) + "\n")
        self.stream.flush()
        self._shown_at = float("-inf")

    def end(self) -> None:
        self._clear()

    def _clear(self) -> None:
        if self._drawn:
            self._raw.write("\r\x1b[K")
            self._raw.flush()
            self._drawn = False


def progress_line(progress: dict[str, Any], bar: bool = False) -> str:
    """``[#####.....] 412.0 MiB of 1.2 GiB 33%, 92.1 MiB/s, ETA 9s``."""
    moved, estimate = progress["bytes"], progress.get("estimate")
    percent = progress.get("percent")
    parts = [human_bytes(moved) + (f" of {human_bytes(estimate)}" if estimate else "")
             + (f" {percent:.0f}%" if percent is not None else "")]
    parts.append(human_rate(progress.get("rate")) if progress.get("rate") is not None
                 else "rate -")
    eta = progress.get("eta_seconds")
    parts.append(f"ETA {human_duration(eta)}" if eta is not None else "ETA -")
    text = ", ".join(parts)
    if bar and percent is not None:
        filled = int(BAR * percent / 100)
        text = "[" + "#" * filled + "." * (BAR - filled) + "] " + text
    return text
