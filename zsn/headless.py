"""What every headless command group shares: `--dry-run`, applying a plan, exit statuses.

A group's ``run(args, host)`` builds a `Plan` and hands it to `apply_or_show`; errors
are turned into one line on stderr and an exit status by `run_group`, the same for
every domain:

- 0: done (or, with ``--dry-run``, the plan printed and nothing changed);
- 1: an error: a daemon, file or program failed, or lint found errors;
- 2: the input was refused before anything changed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

from zsn.domains import CommandFace
from zsn.errors import SessionLinkError, ValidationError, ZsnError
from zsn.system.host import Host
from zsn.terminal import cell_width, message_line, safe

if TYPE_CHECKING:  # the command line imports this module to start anything: keep it light
    from zsn.plan import Plan

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INVALID = 2

CONFIRM_SSH_FLAG = "--confirm-ssh-link"
"""Names the link this SSH session runs over, to allow a change that touches it."""


class HeadlessGroup(NamedTuple):
    """A command group defined inside a module that holds several (``module:attribute``)."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Host], int]


def add_dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (file diffs, live operations) and change nothing")


def add_confirm_ssh_link(parser: argparse.ArgumentParser) -> None:
    """The option that lets a change touch the SSH session's link (`SessionLinkError`):
    its ``dest`` is ``confirm_ssh``."""
    parser.add_argument(CONFIRM_SSH_FLAG, dest="confirm_ssh", metavar="IFACE",
                        help="allow changing the link this SSH session runs over; IFACE must "
                             "name it (zsn says which when it refuses)")


def apply_or_show(plan: Plan, dry_run: bool,
                  show_output: Callable[[str], None] | None = None) -> int:
    """Print the plan (``--dry-run``) or apply it: what was done and notes go to stderr,
    the plan's output (a client config, say) to stdout."""
    if dry_run:
        sys.stdout.write(plan.describe())
        return EXIT_OK
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
        print(f"{prog}: invalid: {exc}. Confirm with {CONFIRM_SSH_FLAG} {exc.link}",
              file=sys.stderr)
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
