"""Headless ZFS protection: ``zsn zfs policy ...``, ``zsn zfs snapshots run`` and
``zsn zfs replicate ...`` (the policies and jobs of `zsn.zfs.policy`, runs of
`zsn.zfs.autosnap` and `zsn.zfs.jobs`, the timers of `zsn.zfs.timers`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from zsn.errors import EXIT_ERROR, EXIT_OK, ValidationError
from zsn.format import human_bytes, human_duration
from zsn.headless import add_dry_run, apply_or_show, print_table
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.zfs import policy_actions
from zsn.zfs.policy import VIA, read_config

MAX_DAYS = 3660


def add_arguments(verbs: Any) -> None:
    policy = verbs.add_parser(
        "policy", help="snapshot policies: keep the newest N per class, taken and pruned "
                       "by a timer",
        description="A policy keeps, per class (frequent, hourly, daily, weekly, monthly, "
                    "yearly), the newest N snapshots it took of a dataset; "
                    "zsn zfs snapshots run takes what is due and prunes the rest.")
    actions = policy.add_subparsers(dest="policy_action", required=True, metavar="ACTION")
    setter = actions.add_parser("set", help="set (or replace) a dataset's policy")
    setter.add_argument("dataset", metavar="DATASET")
    setter.add_argument("--keep", required=True, metavar="CLASS=N,...",
                        help="e.g. hourly=24,daily=7,monthly=6 (a class not named keeps none)")
    setter.add_argument("--frequent-period", metavar="DURATION",
                        help="the frequent class's period, dividing the hour (default 15m)")
    setter.add_argument("--recursive", action="store_true",
                        help="and its descendants without a policy of their own, "
                             "snapshotted at once (atomic)")
    setter.add_argument("--children-only", action="store_true",
                        help="with --recursive: the descendants, not the dataset itself")
    setter.add_argument("--prune-only", action="store_true",
                        help="take nothing, prune what arrives (a replication target)")
    setter.add_argument("--pre-hook", metavar="CMD",
                        help="a program and its arguments, run (as root, no shell) before "
                             "the snapshots; if it fails, none is taken")
    setter.add_argument("--post-hook", metavar="CMD",
                        help="run after them, always (ZSN_OUTCOME says what happened)")
    setter.add_argument("--hook-timeout", metavar="DURATION",
                        help="how long a hook may take (default 30s)")
    add_dry_run(setter)
    remover = actions.add_parser("remove", help="drop a dataset's policy (its snapshots stay)")
    remover.add_argument("dataset", metavar="DATASET")
    add_dry_run(remover)
    lister = actions.add_parser("list", help="the policies")
    lister.add_argument("--json", action="store_true", help="print them as JSON")
    importer = actions.add_parser(
        "import", help="sanoid.conf's datasets and templates as policies (zsn takes over "
                       "pruning their autosnap_ snapshots)")
    importer.add_argument("kind", choices=("sanoid",), metavar="sanoid")
    importer.add_argument("path", metavar="PATH", nargs="?",
                          help="default /etc/sanoid/sanoid.conf")
    importer.add_argument("--keep-commands", action="store_true",
                          help="keep sanoid's snapshot scripts as hooks (they run as root)")
    add_dry_run(importer)
    simulator = actions.add_parser(
        "simulate", help="run the planner over a simulated clock from today's snapshots: "
                         "what would exist at the end, what would be destroyed on the way")
    simulator.add_argument("dataset", metavar="DATASET")
    simulator.add_argument("--days", required=True, metavar="N")
    simulator.add_argument("--every", metavar="DURATION",
                           help="between two runs (default: the policy's shortest period)")
    simulator.add_argument("--keep", metavar="CLASS=N,...",
                           help="simulate this policy instead of the one set")
    simulator.add_argument("--json", action="store_true", help="print the result as JSON")
    timer = actions.add_parser(
        "install-timer", help="write and enable systemd timers that run the snapshots and "
                              "the replication jobs (persistent, randomized delay)")
    timer.add_argument("--every", metavar="DURATION", default=None,
                       help="how often the snapshot timer fires (default: 15m, or the "
                            "shortest frequent period in use)")
    add_dry_run(timer)
    _replicate_arguments(verbs)


def _replicate_arguments(verbs: Any) -> None:
    replicate = verbs.add_parser(
        "replicate", help="scheduled replication jobs: a dataset sent to a target every so "
                          "often, resumed after an interruption")
    actions = replicate.add_subparsers(dest="replicate_action", required=True,
                                       metavar="ACTION")
    adder = actions.add_parser("add", help="add a job")
    adder.add_argument("name", metavar="NAME")
    adder.add_argument("source", metavar="SOURCE", help="pool/ds")
    adder.add_argument("target", metavar="TARGET", help="pool/ds here or [user@]host:pool/ds")
    adder.add_argument("--every", default="1h", metavar="DURATION",
                       help="how often it runs (default 1h)")
    adder.add_argument("--raw", action="store_true",
                       help="send blocks as stored (an encrypted source is always sent raw)")
    adder.add_argument("--allow-decrypted", action="store_true",
                       help="send an encrypted source decrypted (the target stores plain "
                            "data unless its parent is encrypted)")
    adder.add_argument("--via", choices=VIA, default="ssh")
    adder.add_argument("--limit", metavar="RATE", help="at most RATE per second: 50M, 100Mbit")
    adder.add_argument("-r", "--recursive", action="store_true",
                       help="the dataset and its descendants (one -R stream)")
    add_dry_run(adder)
    lister = actions.add_parser("list", help="the jobs with their last run")
    lister.add_argument("--json", action="store_true", help="print them as JSON")
    remover = actions.add_parser("remove", help="drop a job (the target keeps what it has)")
    remover.add_argument("name", metavar="NAME")
    add_dry_run(remover)
    runner = actions.add_parser("run", help="run the named job now, or every job that is "
                                            "due (what the timer runs)")
    runner.add_argument("name", metavar="NAME", nargs="?")
    runner.add_argument("--dry-run", action="store_true",
                        help="print each job's send plan and change nothing")


def _days(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
        raise ValidationError(f"{text[:20]!r}: a number of days from 1 to {MAX_DAYS}",
                              field="days")
    return int(text)


# -- running ------------------------------------------------------------------------------
def run_policy(args: argparse.Namespace, host: Host) -> int:
    action = args.policy_action
    if action == "set":
        request = policy_actions.PolicyRequest(
            args.dataset, args.keep, args.frequent_period, args.recursive, args.children_only,
            args.prune_only, args.pre_hook, args.post_hook, args.hook_timeout)
        return apply_or_show(host, policy_actions.plan_set_policy(host, request), args.dry_run)
    if action == "remove":
        return apply_or_show(host, policy_actions.plan_remove_policy(host, args.dataset),
                             args.dry_run)
    if action == "import":
        return apply_or_show(host, policy_actions.plan_import_sanoid(
            host, args.path, keep_commands=args.keep_commands), args.dry_run)
    if action == "simulate":
        return _simulate(host, args)
    if action == "install-timer":
        from zsn.zfs.timers import plan_install_timers

        return apply_or_show(host, plan_install_timers(host, args.every), args.dry_run)
    config = read_config(host)
    if args.json:
        from zsn.zfs.protection import policy_to_dict

        print(json.dumps([policy_to_dict(config.policies[d]) for d in sorted(config.policies)],
                         indent=2))
        return EXIT_OK
    if not config.policies:
        print("no snapshot policies (zsn zfs policy set DATASET --keep hourly=24,daily=7)",
              file=sys.stderr)
        return EXIT_OK
    print_table(policy_actions.policies_table(config.policies))
    return EXIT_OK


def run_snapshots(args: argparse.Namespace, host: Host) -> int:
    """``zsn zfs snapshots run [--dry-run] [--verbose]``."""
    from zsn.zfs.autosnap import run_policies

    outcome = run_policies(host, dry_run=args.dry_run, verbose=args.verbose,
                           say=lambda line: print(safe(line)))
    if outcome is None:
        return EXIT_OK
    for error in outcome.errors:
        print(f"zsn zfs snapshots run: {safe(error)}", file=sys.stderr)
    if not outcome.taken and not outcome.destroyed and outcome.ok:
        print("nothing was due", file=sys.stderr)
    return EXIT_OK if outcome.ok else EXIT_ERROR


def _simulate(host: Host, args: argparse.Namespace) -> int:
    from zsn.zfs.autosnap import local_zone
    from zsn.zfs.live import require_program
    from zsn.zfs.simulation import report, simulate_dataset

    zone = local_zone(host)
    days = _days(args.days)
    result = simulate_dataset(host, require_program("zfs"), args.dataset, days,
                              args.every, args.keep, zone, time.time())
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for line in report(result, zone):
            print(safe(line))
    return EXIT_OK


def run_replicate(args: argparse.Namespace, host: Host) -> int:
    action = args.replicate_action
    if action == "add":
        request = policy_actions.JobRequest(
            args.name, args.source, args.target, args.every, args.raw, args.allow_decrypted,
            args.via, args.limit, args.recursive)
        return apply_or_show(host, policy_actions.plan_add_job(host, request), args.dry_run)
    if action == "remove":
        return apply_or_show(host, policy_actions.plan_remove_job(host, args.name), args.dry_run)
    if action == "run":
        return _replicate_run(host, args)
    return _replicate_list(host, args.json)


def _replicate_run(host: Host, args: argparse.Namespace) -> int:
    from zsn.zfs.jobs import is_due, read_record, run_jobs, send_request, source_encrypted
    from zsn.zfs.send import plan_send

    config = read_config(host)
    if not config.jobs and args.name is None:  # a timer installed before any job is fine
        print("no replication jobs (zsn zfs replicate add NAME SOURCE TARGET)",
              file=sys.stderr)
        return EXIT_OK
    if args.dry_run:
        now = time.time()
        for job in sorted(config.jobs.values(), key=lambda j: j.name):
            if args.name not in (None, job.name):
                continue
            due = args.name is not None or is_due(job, read_record(host, job.name), now)
            print(f"job {safe(job.name)}: " + ("runs now" if due else "not due"))
            if due:
                plan = plan_send(host, send_request(job, source_encrypted(job.source)))
                sys.stdout.write(plan.plan().describe())
        if args.name is not None and args.name not in config.jobs:
            raise ValidationError(f"no replication job {args.name!r}")
        return EXIT_OK
    outcomes = run_jobs(host, config, args.name, say=lambda line: print(safe(line),
                                                                         file=sys.stderr))
    for outcome in outcomes:
        print(safe(outcome.message), file=sys.stdout if outcome.ok else sys.stderr)
    if not outcomes:
        print("no job is due", file=sys.stderr)
    return EXIT_OK if all(outcome.ok for outcome in outcomes) else EXIT_ERROR


def _replicate_list(host: Host, as_json: bool) -> int:
    from zsn.zfs.protection import collect

    read_config(host)  # a file zsn may not read is this command's error, not "no jobs"
    found = collect(host)
    for error in found.get("errors", []):
        print(f"zsn zfs: note: {error}", file=sys.stderr)
    jobs = found["jobs"]
    if as_json:
        print(json.dumps(jobs, indent=2))
        return EXIT_OK
    if not jobs:
        print("no replication jobs (zsn zfs replicate add NAME SOURCE TARGET)", file=sys.stderr)
        return EXIT_OK
    now = time.time()
    rows: list[tuple[str, ...]] = [("JOB", "SOURCE", "TARGET", "EVERY", "LAST OK", "LAG",
                                    "BEHIND", "STATE")]
    for job in jobs:
        rows.append((job["name"], job["source"], job["target"],
                     human_duration(job["every_seconds"]), _ago(job["last_success"], now),
                     human_duration(job["lag_seconds"]) if job["lag_seconds"] is not None
                     else "-",
                     human_bytes(job["bytes_behind"]) if job["bytes_behind"] is not None
                     else "-",
                     ("stalled" if job["stalled"] else job["state"] or "never run")
                     + (f": {job['error']}" if job["error"] else "")))
    print_table(rows, {3, 4, 5, 6})
    return EXIT_OK


def _ago(when: float | None, now: float) -> str:
    if when is None:
        return "never"
    return f"{human_duration(max(0.0, now - when))} ago"

