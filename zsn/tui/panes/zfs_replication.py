"""The ZFS pane's replication: the send form, transfers run in the background, the
probe screen.

A send started here runs as its own ``zsn zfs send`` process, in a session of its own:
it goes on when the TUI quits or the SSH session to it drops, and the transfers view
(like ``zsn --export zfs``) follows it through its progress file. Its output goes to a
log next to the progress files, read back when it fails before it could record
anything (the target changed between the plan and the start, say), then removed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import IO, Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Footer, Input, RichLog, Select

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.format import human_bytes
from zsn.plan import LiveStep, Plan
from zsn.system.host import Host
from zsn.tui.screens.form import FormField, FormScreen, Values
from zsn.tui.widgets.safe import plain, title
from zsn.zfs.send import VIA, SendRequest, parse_rate, plan_send
from zsn.zfs.transfers import process_start

LOG_TAIL_BYTES = 64 * 1024


def send_argv(host: Host, request: SendRequest) -> list[str]:
    """The ``zsn zfs send`` that runs `request` (this zsn, under the same root)."""
    argv = [sys.executable, "-m", "zsn"]
    if not host.is_live:
        argv += ["--root", str(host.root)]
    argv += ["zfs", "send", request.source, request.target, "--via", request.via]
    if request.raw:
        argv.append("--raw")
    if request.recursive:
        argv.append("--recursive")
    if request.limit:
        argv += ["--limit", str(int(request.limit))]
    return argv


class Background:
    """Sends this TUI started: each a detached process with a log; `check` reports
    the ones that ended in failure without a record of their own."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.started: dict[int, tuple[subprocess.Popen[bytes], IO[bytes]]] = {}

    def start(self, request: SendRequest) -> int:
        # the child's output goes to an unnamed scratch file of zsn's own (gone when
        # closed): read only when the send fails before it records a result
        log = tempfile.TemporaryFile()  # noqa: SIM115 (kept open until the send ends)
        process = subprocess.Popen(send_argv(self.host, request), stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, close_fds=True)
        self.started[process.pid] = (process, log)
        return process.pid

    def check(self) -> list[str]:
        """Lines to tell the user about sends that failed before recording a result."""
        told = []
        for pid, (process, log) in list(self.started.items()):
            status = process.poll()
            if status is None:
                continue
            del self.started[pid]
            with log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(0, size - LOG_TAIL_BYTES))  # its last words
                text = log.read(LOG_TAIL_BYTES).decode(errors="replace")
            lines = [line for line in text.splitlines()
                     if line.strip() and not line.startswith("progress:")]
            if status not in (0, 130) and lines:
                told.append(lines[-1])
        return told


def stop_plan(record: dict[str, Any]) -> Plan:
    """Stop a running transfer the way Ctrl-C does (the target keeps what arrived)."""
    pid, start = record.get("pid"), record.get("process_start")
    if not isinstance(pid, int) or process_start(pid) != start or start is None:
        raise ValidationError("that transfer is not running any more")
    plan = Plan(f"stop sending {record['source']} to {record['target']}")

    def stop() -> None:
        if process_start(pid) != start:
            raise ZsnError("the transfer ended meanwhile")
        os.kill(pid, signal.SIGTERM)

    plan.steps.append(LiveStep(f"SIGTERM to zsn zfs send (pid {pid})", stop))
    plan.notes.append(f"{human_bytes(record.get('bytes') or 0)} sent so far stay on the "
                      "target: send again (S) to resume from there")
    return plan


class SendForm(FormScreen[Plan]):
    """Source, target, transport, raw, recursive, limit: builds the plan of a send
    that starts in the background on `y`."""

    FIRST_FIELD = "target"
    """The source comes filled in (the highlighted dataset or transfer)."""

    def __init__(self, host: Host, source: str, start: Callable[[SendRequest], object],
                 like: SendRequest | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host
        self.source = source
        self.like = like or SendRequest(source, "")
        """A transfer to send again: its target, transport and flags fill the form."""
        self.start = start

    def form_title(self) -> str:
        return "Send snapshots: ctrl+s to see the plan, esc to cancel"

    def form_fields(self) -> Iterable[FormField]:
        yield FormField("source", "Source", Input(self.source, id="send-source",
                                                  placeholder="pool/ds or pool/ds@snap"))
        like = self.like
        yield FormField("target", "Target", Input(like.target, id="send-target",
                                                  placeholder="pool/ds or [user@]host:pool/ds"))
        yield FormField("via", "Via", Select([("ssh", "ssh"), ("tcp (raw encrypted, or "
                                                              "WireGuard)", "tcp")],
                                             value=like.via if like.via in VIA else "ssh",
                                             allow_blank=False, id="send-via"))
        yield FormField("raw", "Raw", Checkbox("encrypted stays encrypted, key stays here",
                                               like.raw, id="send-raw"))
        yield FormField("recursive", "Recursive", Checkbox("and its descendants",
                                                           like.recursive,
                                                           id="send-recursive"))
        yield FormField("limit", "Limit", Input("", id="send-limit",
                                                placeholder="e.g. 50M, 100Mbit (empty: none)"))

    def build(self, values: Values) -> Plan:
        limit = None
        if str(values["limit"]).strip():
            with about_input("limit"):
                limit = parse_rate(str(values["limit"]))
        request = SendRequest(str(values["source"]).strip(), str(values["target"]).strip(),
                              str(values["via"]), bool(values["raw"]),
                              bool(values["recursive"]), limit)
        planned = plan_send(self.host, request)
        shown = planned.plan()
        plan = Plan(shown.title, warnings=shown.warnings)
        if not planned.decision.streams:
            plan.notes = shown.notes
            return plan
        plan.steps.append(LiveStep(
            "start zsn zfs send in the background (it goes on if zsn quits)",
            lambda: self.start(request)))
        plan.notes = [f"stream {number}: {step.description}"
                      for number, step in enumerate(shown.steps, start=1)] + shown.notes
        return plan


class ProbeScreen(ModalScreen[None]):
    """`zsn zfs send --probe` for one pair, stage by stage as they are measured."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("r", "again", "Probe again"),
    ]

    def __init__(self, host: Host, request: SendRequest) -> None:
        super().__init__()
        self.host = host
        self.request = request
        self._probing = False

    def compose(self) -> ComposeResult:
        yield RichLog(id="probe", wrap=True, markup=False, highlight=False, min_width=1)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#probe").border_title = title(
            f"Probe: {self.request.source} to {self.request.target}")
        self.action_again()

    def action_again(self) -> None:
        if not self._probing:
            self._probing = True
            self._probe()

    @work(thread=True, exclusive=True)
    def _probe(self) -> None:
        from zsn.zfs.probe import PROBE_SECONDS, measure, stage_line, verdict

        self.app.call_from_thread(self._line, f"measuring each stage for {PROBE_SECONDS:g} s "
                                  "(a write test on the target's pool, destroyed after) ...")
        stages = []
        try:
            plan = plan_send(self.host, self.request)
            for stage in measure(plan):
                stages.append(stage)
                self.app.call_from_thread(self._line, stage_line(stage, 40))
        except ZsnError as exc:
            self.app.call_from_thread(self._line, f"probe failed: {exc}")
        else:
            self.app.call_from_thread(self._line, verdict(stages)["says"])
        self.app.call_from_thread(self._done)

    def _line(self, text: str) -> None:
        if self.is_mounted:
            self.query_one("#probe", RichLog).write(plain(text))

    def _done(self) -> None:
        self._probing = False
