"""What every headless command group shares: `--dry-run`, applying a plan, exit statuses.

A group's ``run(args, host)`` builds a `Plan` and hands it to `apply_or_show`; errors
are turned into one line on stderr and an exit status by `run_group`, the same for
every domain:

- 0: done (or, with ``--dry-run``, the plan printed and nothing changed);
- 1: an error: a daemon, file or program failed, lint found errors, or the live
  state read back after a change is not what the plan meant;
- 2: the input was refused before anything changed.

A command that changes live networking takes `add_change_options` and applies its
plan with `apply_change`: the SSH session's path is checked against it, ``--try
SECONDS`` applies it under a guardian (`zsn.tries`), and the live state is read
back afterwards (verify after apply).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from zsn.domains import CommandFace
from zsn.errors import (
    EXIT_ERROR,
    EXIT_INVALID,
    EXIT_OK,
    SessionLinkError,
    ValidationError,
    ZsnError,
)
from zsn.system.host import Host
from zsn.terminal import cell_width, message_line, safe

if TYPE_CHECKING:  # the command line imports this module to start anything: keep it light
    from zsn.plan import Plan

CONFIRM_SSH_FLAG = "--confirm-ssh-link"
"""Names the link this SSH session runs over, to allow a change that touches it."""
TRY_FLAG = "--try"
"""Applies a change under a guardian that rolls it back unless it is confirmed."""


def add_dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (file diffs, live operations) and change nothing")


def add_confirm_ssh_link(parser: argparse.ArgumentParser) -> None:
    """The option that lets a change touch the SSH session's link (`SessionLinkError`):
    its ``dest`` is ``confirm_ssh``."""
    parser.add_argument(CONFIRM_SSH_FLAG, dest="confirm_ssh", metavar="IFACE",
                        help="allow changing the link this SSH session runs over; IFACE must "
                             "name it (zsn says which when it refuses)")


def add_change_options(parser: argparse.ArgumentParser) -> None:
    """``--try SECONDS``, ``--confirm-ssh-link IFACE`` and ``--dry-run``: the options of
    every command that changes live networking (applied with `apply_change`)."""
    parser.add_argument(TRY_FLAG, dest="try_seconds", metavar="SECONDS", type=_seconds,
                        help="apply the change, then roll it back by itself after SECONDS "
                             "unless 'zsn confirm ID' runs first (persistent files are "
                             "written on confirm)")
    add_confirm_ssh_link(parser)
    add_dry_run(parser)


def _seconds(text: str) -> float:
    """``--try``'s value, checked as the command line is read (before any plan)."""
    from zsn.tries.lifecycle import check_seconds

    try:
        return check_seconds(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def apply_change(host: Host, plan: Plan, args: argparse.Namespace,
                 show_output: Callable[[str], None] | None = None) -> int:
    """Apply (or with ``--dry-run`` show) a live change: the SSH session's path named
    and guarded, ``--try`` honoured, the result read back and compared with the plan."""
    from zsn.tries import session as sessions

    seconds: float | None = getattr(args, "try_seconds", None)
    confirmed = getattr(args, "confirm_ssh", None)
    session = sessions.find_session(host) if plan.touches or plan.reroutes else None
    if getattr(args, "dry_run", False):  # the plan names the session's path; no refusal
        sessions.name_in_plan(plan, session)
        sys.stdout.write(plan.describe())
        if seconds is not None:
            sys.stdout.write(_try_summary(host, plan, seconds))
        return EXIT_OK
    _refuse_owned(host, plan)
    sessions.guard(plan, session, confirmed, seconds is not None)
    if seconds is None:
        apply_or_show(host, plan, False, show_output)
        return _report_differences(verify(plan), None)
    return _try(host, plan, seconds, session, show_output)


def _refuse_owned(host: Host, plan: Plan) -> None:
    from zsn.tries.store import has_records

    if has_records(host):  # what a try owns is read only when one is on record
        from zsn.tries.lifecycle import refuse_owned

        refuse_owned(host, plan)


def _try_summary(host: Host, plan: Plan, seconds: float) -> str:
    from zsn.plan import FileEdit
    from zsn.tries.lifecycle import undo_of
    from zsn.tries.undo import describe

    lines = [f"Tried for {seconds:g} s: unless confirmed in time (zsn confirm ID), a guardian "
             "puts back:"]
    lines += [f"  - {describe(undo)}" for undo in undo_of(host, plan)]
    deferred = [step for step in plan.steps if isinstance(step, FileEdit) and step.persistent]
    lines += [f"  (written only on confirm: {step.path})" for step in deferred]
    return "\n".join(lines) + "\n"


def _try(host: Host, plan: Plan, seconds: float, session: object,
         show_output: Callable[[str], None] | None) -> int:
    from zsn.tries import lifecycle
    from zsn.tries.session import SessionPath

    assert session is None or isinstance(session, SessionPath)
    for warning in plan.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    result = lifecycle.begin(host, plan, seconds, shlex.join(["zsn", *sys.argv[1:]]), session)
    for line in result.done:
        print(f"done: {line}", file=sys.stderr)
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    if plan.output:
        (show_output or sys.stdout.write)(plan.output)
    change = result.change
    deferred = len(change.deferred)
    print(f"trying change {change.id} for {seconds:g} s: rolled back by itself unless "
          "confirmed" + (f"; {deferred} boot config file{'s' if deferred > 1 else ''} "
                         "written on confirm" if deferred else ""), file=sys.stderr)
    status = _report_differences(result.differences, change.id)
    sys.stderr.flush()
    # The last line: what to run next. Keep it, or (verify found it is not what was
    # meant) take it back at once.
    print(f"zsn rollback {change.id}" if status else f"zsn confirm {change.id}")
    sys.stdout.flush()
    return status


def verify(plan: Plan) -> list[str]:
    from zsn.tries.lifecycle import verify as read_back

    return read_back(plan)


def _report_differences(differences: list[str], change_id: str | None) -> int:
    """Verify after apply: each difference on stderr, exit 1; a try offers its rollback."""
    for difference in differences:
        print(f"verify: {difference}", file=sys.stderr)
    if not differences:
        return EXIT_OK
    if change_id is not None:
        print(f"verify: the change is not what was meant: roll it back now (below), or "
              f"keep it anyway with 'zsn confirm {change_id}'", file=sys.stderr)
    return EXIT_ERROR


def apply_or_show(host: Host, plan: Plan, dry_run: bool,
                  show_output: Callable[[str], None] | None = None) -> int:
    """Print the plan (``--dry-run``) or apply it: what was done and notes go to stderr,
    the plan's output (a client config, say) to stdout. A plan that changes what a
    pending try owns is refused, naming the try."""
    if dry_run:
        sys.stdout.write(plan.describe())
        return EXIT_OK
    _refuse_owned(host, plan)
    for warning in plan.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in plan.apply():
        print(f"done: {line}", file=sys.stderr)
    for note in plan.notes_after():
        print(f"note: {note}", file=sys.stderr)
    if plan.output:
        (show_output or sys.stdout.write)(plan.output)
    return EXIT_OK


def print_table(rows: Sequence[Sequence[str]], right: Collection[int] = ()) -> None:
    """Rows as aligned columns (the first row the header), the columns in `right`
    aligned right. Every cell is shown through `zsn.terminal.safe`: a name with a line
    break or a control character stays one escaped cell of one line."""
    shown = [[safe(cell) for cell in row] for row in rows]
    widths = [max(cell_width(row[i]) for row in shown) for i in range(len(shown[0]))]
    for row in shown:
        cells = [" " * (width - cell_width(cell)) + cell if index in right
                 else cell + " " * (width - cell_width(cell))
                 for index, (cell, width) in enumerate(zip(row, widths, strict=True))]
        print("  ".join(cells).rstrip())


def run_group(faces: CommandFace, args: argparse.Namespace, prog: str,
              parser: argparse.ArgumentParser | None = None) -> int:
    """Run a parsed command: its errors become one line on stderr and an exit status.

    A refused input names the option it came from (``--endpoint: ...``): the core
    says which input in `ValidationError.field`, the option's ``dest``."""
    try:
        host = Host.at(args.root)
        return faces.run(args, host)
    except SessionLinkError as exc:
        tries = any(action.dest == "try_seconds" for action in _actions_of(parser, args))
        how = (f"Try it ({TRY_FLAG} SECONDS: rolled back by itself unless confirmed) or "
               f"confirm with {CONFIRM_SSH_FLAG} {exc.link}" if tries else
               f"Confirm with {CONFIRM_SSH_FLAG} {exc.link}")
        print(f"{prog}: invalid: {message_line(str(exc))}. {how}", file=sys.stderr)
        return EXIT_INVALID
    except ValidationError as exc:
        option = _option_for(parser, args, exc.field) if parser and exc.field else None
        print(f"{prog}: invalid: {option + ': ' if option else ''}{message_line(str(exc))}",
              file=sys.stderr)
        return EXIT_INVALID
    except ZsnError as exc:
        print(f"{prog}: error: {message_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # e.g. a folder only root may look into: one line, no traceback
        from zsn.system.files import describe_os_error

        print(f"{prog}: error: {describe_os_error(exc)}", file=sys.stderr)
        return EXIT_ERROR


def _actions_of(parser: argparse.ArgumentParser | None,
                args: argparse.Namespace) -> list[argparse.Action]:
    """The options of the (sub)command that ran."""
    if parser is None:
        return []
    found: list[argparse.Action] = []
    for action in parser._actions:  # argparse has no public way to list them
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if isinstance(chosen, argparse.ArgumentParser):
                found.extend(_actions_of(chosen, args))
        else:
            found.append(action)
    return found


def _option_for(parser: argparse.ArgumentParser, args: argparse.Namespace,
                field: str) -> str | None:
    """The option (``--endpoint``) whose ``dest`` is `field`, in the (sub)command that
    ran; None for a positional argument (the user just typed it there)."""
    for action in parser._actions:  # argparse has no public way to list them
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if isinstance(chosen, argparse.ArgumentParser):
                found = _option_for(chosen, args, field)
                if found:
                    return found
        elif action.dest == field and action.option_strings:
            return max(action.option_strings, key=len)
    return None


def interval_seconds(text: str) -> float:
    """An argparse type for refresh and sample intervals: 0.1 to 3600 seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be between 0.1 and 3600 seconds")
    return value
