"""``zsn apply FILE`` and ``zsn state export [SECTION ...]``.

``apply`` reads the file (``-``: standard input), plans the whole file as one plan and
applies it as every live change is applied (`zsn.headless.apply_change`: the SSH
session's path guarded, ``--try`` honoured, verify after apply). ``--dry-run`` prints
the plan and changes nothing; ``--diff`` shows its file diffs (secrets masked); with
``--json`` the outcome is one JSON object on stdout (the Ansible collection reads it:
docs/state.md says its fields), errors staying one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from zsn.domains import HeadlessGroup
from zsn.errors import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL
from zsn.headless import add_change_options, apply_change
from zsn.plan import FileEdit, Plan
from zsn.system.host import Host

JSON_VERSION = 1
"""The shape of ``zsn apply --json``'s object (docs/state.md)."""


def add_apply_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Sections the file leaves out, and what a section does not name, are "
                     "left as they are (exclusive: true removes what a section does not "
                     "name). A second apply of the same file plans nothing.")
    parser.add_argument("file", metavar="FILE",
                        help="the desired-state file (YAML or JSON; - reads standard input)")
    parser.add_argument("--diff", action="store_true",
                        help="show the plan's file diffs (secrets masked)")
    parser.add_argument("--json", action="store_true",
                        help="print the outcome as one JSON object (the plan, what was done, "
                             "the try's id)")
    add_change_options(parser)


def run_apply(args: argparse.Namespace, host: Host) -> int:
    from zsn.desired.document import parse, read_text
    from zsn.desired.planner import plan_document

    text, source = read_text(args.file)
    document = parse(text, source)
    plan = plan_document(host, document, f"apply {source}")
    if args.json:
        return _apply_json(host, plan, args)
    if args.dry_run or not plan.steps:
        sys.stdout.write(plan.describe(diffs=args.diff))
        return EXIT_OK
    if args.diff:
        sys.stdout.write(plan.describe(diffs=True))
    return apply_change(host, plan, args)


def _apply_json(host: Host, plan: Plan, args: argparse.Namespace) -> int:
    """The plan applied (or not: --dry-run, nothing to change), told as one object."""
    from zsn.tries import session as sessions

    seconds: float | None = args.try_seconds
    session = sessions.find_session(host) if plan.touches or plan.reroutes else None
    outcome: dict[str, Any] = {"zsn_apply": JSON_VERSION, "changed": bool(plan.steps),
                               "applied": False, "title": plan.title, "parts": plan.parts,
                               "steps": [step.description for step in plan.steps],
                               "diffs": _diffs(plan) if args.diff else [],
                               "warnings": [], "notes": [], "done": [], "verify": [],
                               "try": None}
    if args.dry_run or not plan.steps:
        sessions.name_in_plan(plan, session)
        outcome.update(warnings=[str(w) for w in plan.warnings],
                       notes=[str(n) for n in plan.notes])
        return _print(outcome, EXIT_OK)
    sessions.guard(plan, session, args.confirm_ssh, seconds is not None)
    outcome["warnings"] = [str(w) for w in plan.warnings]
    if seconds is None:
        from zsn.headless import verify

        outcome["done"] = plan.apply()
        outcome["notes"] = [str(n) for n in plan.notes_after()]
        outcome["verify"] = verify(plan)
    else:
        from zsn.tries import lifecycle

        result = lifecycle.begin(host, plan, seconds, shlex.join(["zsn", *sys.argv[1:]]),
                                 session)
        outcome["done"], outcome["verify"] = result.done, result.differences
        outcome["notes"] = [str(n) for n in plan.notes]
        outcome["try"] = {"id": result.change.id, "seconds": seconds,
                          "deadline": result.change.deadline_wall}
    outcome["applied"] = True
    return _print(outcome, EXIT_ERROR if outcome["verify"] else EXIT_OK)


def _diffs(plan: Plan) -> list[dict[str, str]]:
    """Each file edit's unified diff (secrets masked), or a line for zsn's own files."""
    found = []
    for step in plan.steps:
        if isinstance(step, FileEdit):
            text = step.diff() if step.shown_in_full else \
                f"{step.path}: zsn's own file, {len(step.new_text.splitlines())} lines\n"
            found.append({"path": str(step.path), "diff": text})
    return found


def _print(outcome: dict[str, Any], status: int) -> int:
    sys.stdout.write(json.dumps(outcome, indent=2) + "\n")
    sys.stdout.flush()
    return status


def add_state_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = verbs.add_parser(
        "export", help="print the desired-state file that describes this machine now "
                       "(applied, it plans nothing)")
    export.add_argument("sections", metavar="SECTION", nargs="*",
                        help="sections to write (default: every one)")
    export.add_argument("--json", action="store_true", help="write it as JSON (YAML "
                        "otherwise)")
    export.epilog = ("Exit status 3: written, but part of a section could not be read "
                     "(each reason on stderr; that part is left out, so applying the file "
                     "leaves it alone).")


def run_state(args: argparse.Namespace, host: Host) -> int:
    from zsn.desired.document import check_sections, export, render

    check_sections(args.sections)
    document, errors = export(host, args.sections)
    sys.stdout.write(render(document, as_json=args.json))
    sys.stdout.flush()
    for error in errors:
        print(f"zsn state export: {error}", file=sys.stderr)
    return EXIT_PARTIAL if errors else EXIT_OK


apply = HeadlessGroup(add_apply_arguments, run_apply)
state = HeadlessGroup(add_state_arguments, run_state)
