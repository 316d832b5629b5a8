"""Lock-out scenarios run through a real SSH session (tests/lab/sshd.py): the checks
the host's tests (tests/integration/test_tryback_ssh.py) and the kernel lab guest's
(tests/kernel/test_tryback.py) share.

`never_confirmed` proves the cut first (while the try runs, a new connection fails and
the client's own session dies: its keepalives go unanswered), then that the guardian
restores the live state and the files and a new connection succeeds within SECONDS +
5 s of the change; it returns the time from the deadline to the first successful
connect, which `record_figure` keeps next to the junit report (bench/tryback.py reads
it, from the host's runs and the guest's alike). `confirmed` keeps the change from
another session (the console) and proves nobody rolls it back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lab.netns import wait_for
from tests.lab.sshd import Session, SshLab, zsn_command

FIGURES = "tryback-figures.jsonl"


def record_figure(request: pytest.FixtureRequest, scenario: str, seconds: float) -> None:
    """One scenario's deadline-to-path time, as a JSON line in the folder of the junit
    report (``--junitxml``; the kernel lab's results folder in a guest); nothing
    without one."""
    report = request.config.getoption("xmlpath", None)
    if not report:
        return
    with (Path(report).parent / FIGURES).open("a") as out:
        out.write(json.dumps({"scenario": scenario, "deadline_to_path": seconds}) + "\n")


def _nothing(lab: SshLab) -> Callable[[], None]:
    return lambda: None


@dataclass(frozen=True)
class Scenario:
    name: str
    argv: tuple[str, ...]
    """zsn's arguments (without --try); words of `names` are replaced per lab."""
    changed: Callable[[SshLab], bool]
    """Whether the change is live (checked while it is tried, and once confirmed)."""
    undo: Callable[[SshLab], object]
    """Puts the lab back after a confirmed run (what an admin would type)."""
    prepare: Callable[[SshLab], Callable[[], None]] = _nothing
    """Sets the scenario's stage; returns what tears it down."""
    bulk: bool = False
    """The client sends data all along (an MTU change only cuts big packets)."""
    size: int | None = None
    """Probe the path with pings this big (a new TCP connection adapts to a lower MTU:
    what the change cuts is the full-size packets of the session already there)."""
    files: tuple[str, ...] = ()
    """Bound folders whose files must be as before after a rollback."""
    names: Callable[[SshLab], dict[str, str]] = lambda lab: {"UPLINK": lab.uplink}

    def argv_for(self, lab: SshLab) -> list[str]:
        names = self.names(lab)
        return [names.get(word, word) for word in self.argv]


def files_of(lab: SshLab, scenario: Scenario) -> dict[str, str]:
    found = {}
    for system_path in scenario.files:
        for path in sorted(lab.folder(system_path).rglob("*")):
            if path.is_file():
                found[str(path)] = path.read_text()
    return found


def never_confirmed(lab: SshLab, scenario: Scenario, seconds: int) -> float:
    """The try, never confirmed; returns the seconds from its deadline to the first
    successful connect."""
    teardown = scenario.prepare(lab)
    try:
        before, files = lab.snapshot(), files_of(lab, scenario)
        assert lab.probe(size=scenario.size), "the path works before the change"
        session = lab.session(zsn_command(*scenario.argv_for(lab), "--try", str(seconds)),
                              bulk=scenario.bulk)
        try:
            # The prober starts once zsn runs in the session, well before the deadline.
            in_session(lab, session, lambda: bool(lab.changes()), "zsn to start the change")
            with lab.watch(scenario.size) as watch:
                applied_in_time(lab, scenario, session)
                applied = time.time()
                if "--persist" in scenario.argv:  # the boot config waits for confirm
                    assert files_of(lab, scenario) == files
                # The cut, proved: a new connection fails, the session itself dies.
                assert not lab.probe(1.0, scenario.size), "the change did not cut the path"
                assert session.died(seconds + 10), "the session survived the change"
                change = lab.wait_state(("pending", "rolled back", "rollback incomplete"),
                                        30)
                back = watch.first_up_after(float(change["deadline_wall"]), seconds + 20)
        finally:
            session.close()
        assert back is not None, "the path never came back"
        assert back - applied <= seconds + 5, \
            f"the path came back {back - applied:.1f} s after the change"
        done = lab.wait_state(("rolled back", "rollback incomplete"), 30)
        assert done["state"] == "rolled back", done["outcome"]
        assert done["outcome"]["by"] == "the guardian, at the deadline"
        # The kernel finishes bringing a link back by itself: its carrier (linkwatch
        # runs up to a second later, more on the guest) and then its IPv6 link-local
        # route. What is still different after SETTLE s is the rollback's.
        with suppress(TimeoutError):
            wait_for(lambda: lab.snapshot() == before, SETTLE, "the links to settle",
                     interval=0.2)
        after = lab.snapshot()
        assert after == before, "not as before the change: " + _differences(before, after)
        assert files_of(lab, scenario) == files
        listed = lab.zsn("pending", "--all")  # over a new session, as the admin would
        assert listed.returncode == 0, listed.stderr
        assert f"{change['id']}  {change['title']}  rolled back at" in listed.stdout
        return back - float(change["deadline_wall"])
    finally:
        teardown()


def _differences(before: dict[str, object], after: dict[str, object]) -> str:
    """What differs between two `SshLab.snapshot`s, part by part (links, addresses,
    routes)."""
    return "; ".join(f"{part}: before {json.dumps(before[part])}, after "
                     f"{json.dumps(after.get(part))}"
                     for part in before if before[part] != after.get(part))


SETTLE = 10.0
"""How long a restored link may take to be as it was (carrier, link-local route)."""
APPLY_WAIT = 120.0
"""zsn starts, records the change, starts its guardian and applies: slow in a guest."""


def applied_in_time(lab: SshLab, scenario: Scenario, session: Session) -> None:
    """Wait until zsn applied the change."""
    in_session(lab, session, lambda: scenario.changed(lab) and lab.applied(),
               "the change to be applied")


def in_session(lab: SshLab, session: Session, reached: Callable[[], bool],
               what: str) -> None:
    """Wait for `reached`, within APPLY_WAIT s; if the session ends first (its login
    refused or timed out, zsn exited), fail at once with what the session printed and
    sshd's last words."""
    try:
        wait_for(lambda: reached() or session.ended(), APPLY_WAIT, what)
        if reached():
            return
        problem = f"the session ended (exit {session.process.returncode}) before {what}"
    except TimeoutError:
        problem = f"no {what} within {APPLY_WAIT:g} s"
    out, err = session.close()
    raise AssertionError(f"{problem}; the session said:\n{out}{err}\n"
                         f"records: {lab.changes()}\nsshd said:\n{lab.sshd_said()}")


def guardian_gone(lab: SshLab, change_id: str) -> bool:
    path = lab.folder("/run/zsn") / "changes" / change_id / "guardian"
    try:
        pid = int(path.read_text())
        return b"zsn.tries.guardian" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return True


CONFIRM_WINDOW = 300
"""The try's window when the test does not wait it out: the confirm (a new zsn started
from the console) must come before the deadline, however slowly a loaded guest starts
it."""


def confirmed(lab: SshLab, scenario: Scenario, past_deadline: int | None = None,
              kept: Callable[[SshLab], bool] | None = None) -> None:
    """The try, kept from the console: the change stays (checked past the deadline of a
    `past_deadline` s try, or else by the guardian having gone: nobody else would roll it
    back); `kept` checks the boot config the confirm wrote."""
    window = CONFIRM_WINDOW if past_deadline is None else past_deadline
    teardown = scenario.prepare(lab)
    try:
        session = lab.session(zsn_command(*scenario.argv_for(lab), "--try", str(window)),
                              bulk=scenario.bulk)
        try:
            applied_in_time(lab, scenario, session)
            change = lab.change()
            confirm = lab.console("confirm", str(change["id"]))
            assert confirm.returncode == 0, confirm.stderr
            assert confirm.stdout == f"kept: change {change['id']} ({change['title']})\n"
            wait_for(lambda: guardian_gone(lab, str(change["id"])), 30, "the guardian to go")
            if past_deadline is not None:
                deadline = change["deadline_wall"]
                assert isinstance(deadline, float), change
                time.sleep(max(0.0, deadline + 1 - time.time()))
            assert scenario.changed(lab)
            assert lab.changes()[0]["state"] == "confirmed"
            if kept is not None:
                assert kept(lab), "the confirm did not write the boot config"
        finally:
            session.close()
    finally:
        try:
            scenario.undo(lab)
        finally:
            teardown()
