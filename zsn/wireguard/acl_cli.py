"""``zsn wg acl ...``: WireGuard access rules from the command line.

Every change is a plan (``--dry-run`` prints it, ``--try SECONDS`` tries it); ``show``,
``explain`` and ``test IFACE`` only read. Names from files are shown through
`zsn.terminal.safe` (`print_table`, `SafeStream` stdout).
"""

from __future__ import annotations

import argparse
import json
import sys

from zsn.errors import EXIT_ERROR, EXIT_OK, ValidationError
from zsn.headless import add_change_options, apply_change, print_table
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.wireguard import acl, acl_view
from zsn.wireguard.acl_view import view_dict
from zsn.wireguard.policy import network_text

TEST_USAGE = ("zsn wg acl test IFACE | test add IFACE 'SRC -> DST[:PORT/PROTO] allow|deny' | "
              "test remove IFACE N")


def _positive(text: str | None, what: str, field: str) -> int | None:
    """A rule's or test's number, or a position: read here, so a bad one is refused the
    way every input is (one line, naming the option)."""
    if text is None:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 100_000:
        raise ValidationError(f"{what} {text!r} is not a number from 1", field=field)
    return int(text)


def add_acl_arguments(acls: argparse.ArgumentParser) -> None:
    """``zsn wg acl ...`` (`acls` is the ``acl`` sub-command's parser)."""
    kinds = acls.add_subparsers(dest="acl", required=True, metavar="WHAT")
    group = kinds.add_parser("group", help="add peers to a group, take them out, remove it")
    verbs = group.add_subparsers(dest="verb", required=True, metavar="add|remove")
    add = verbs.add_parser("add", help="add peers to a group (made if new)")
    add.add_argument("interface")
    add.add_argument("group")
    add.add_argument("peers", nargs="+", metavar="PEER")
    add.add_argument("--move", action="store_true",
                     help="take the peers out of their other groups (one plan)")
    add_change_options(add)
    remove = verbs.add_parser("remove", help="take peers out of a group; without peers, "
                              "remove the group")
    remove.add_argument("interface")
    remove.add_argument("group")
    remove.add_argument("peers", nargs="*", metavar="PEER")
    add_change_options(remove)

    rule = kinds.add_parser("rule", help="add, remove or move a rule")
    verbs = rule.add_subparsers(dest="verb", required=True, metavar="add|remove|move")
    add = verbs.add_parser("add", help="add a rule (at the end, or at --position)")
    add.add_argument("interface")
    add.add_argument("verdict", choices=["allow", "deny"])
    add.add_argument("source", metavar="FROM",
                     help="a group, a peer, behind:PEER, an interface, a CIDR or any")
    add.add_argument("destination", metavar="TO", help="as FROM")
    add.add_argument("--port", metavar="PORT[/tcp|udp]",
                     help="only this destination port (both protocols without /tcp or /udp)")
    add.add_argument("--position", metavar="N",
                     help="put the rule at N (1: first); default: last")
    add_change_options(add)
    remove = verbs.add_parser("remove", help="remove rule N")
    remove.add_argument("interface")
    remove.add_argument("number", metavar="N")
    add_change_options(remove)
    move = verbs.add_parser("move", help="move rule N to --position M")
    move.add_argument("interface")
    move.add_argument("number", metavar="N")
    move.add_argument("--position", metavar="M", required=True)
    add_change_options(move)

    default = kinds.add_parser("default", help="what matches no rule: allow or deny")
    default.add_argument("interface")
    default.add_argument("verdict", choices=["allow", "deny"])
    add_change_options(default)

    load = kinds.add_parser("load", help="load the policy file into nftables again (the "
                            "fix lint offers when the kernel's table differs)")
    load.add_argument("interface")
    add_change_options(load)

    show = kinds.add_parser("show", help="groups, rules with their counters, tests")
    show.add_argument("interface")
    show.add_argument("--json", action="store_true", help="print it as JSON")

    explain = kinds.add_parser("explain", help="the verdict for SRC -> DST and the rule "
                               "that decides it")
    explain.add_argument("interface")
    explain.add_argument("source", metavar="SRC", help="an address, CIDR, peer, group, "
                         "behind:PEER or any")
    explain.add_argument("destination", metavar="DST", help="as SRC")
    explain.add_argument("port", nargs="?", metavar="PORT/PROTO",
                         help="a destination port (TCP without /udp); none: ping")
    explain.add_argument("--json", action="store_true", help="print it as JSON")

    test = kinds.add_parser("test", help="run the policy's tests; add or remove one",
                            usage=TEST_USAGE)
    test.add_argument("words", nargs="+", metavar="IFACE|add|remove")
    add_change_options(test)


def _plan(host: Host, args: argparse.Namespace) -> Plan:
    if args.acl == "group":
        if args.verb == "add":
            return acl.plan_group_add(host, args.interface, args.group, list(args.peers),
                                      args.move)
        return acl.plan_group_remove(host, args.interface, args.group, list(args.peers))
    if args.acl == "rule":
        position = _positive(getattr(args, "position", None), "position", "position")
        if args.verb == "add":
            return acl.plan_rule_add(host, args.interface, args.verdict, args.source,
                                     args.destination, args.port, position)
        number = _positive(args.number, "rule", "number")
        assert number is not None
        if args.verb == "remove":
            return acl.plan_rule_remove(host, args.interface, number)
        assert position is not None
        return acl.plan_rule_move(host, args.interface, number, position)
    if args.acl == "default":
        return acl.plan_default(host, args.interface, args.verdict)
    return acl.plan_load(host, args.interface)


def _test_plan(host: Host, words: list[str]) -> Plan:
    verb, rest = words[0], words[1:]
    if verb == "add" and len(rest) == 2:
        return acl.plan_test_add(host, rest[0], rest[1])
    if verb == "remove" and len(rest) == 2:
        number = _positive(rest[1], "test", "words")
        assert number is not None
        return acl.plan_test_remove(host, rest[0], number)
    raise ValidationError(f"usage: {TEST_USAGE}")


def run_acl(args: argparse.Namespace, host: Host) -> int:
    if args.acl == "show":
        return _show(host, args.interface, args.json)
    if args.acl == "explain":
        return _explain(host, args)
    if args.acl == "test":
        if len(args.words) == 1:
            return _run_tests(host, args.words[0])
        return apply_change(host, _test_plan(host, list(args.words)), args)
    return apply_change(host, _plan(host, args), args)


def _show(host: Host, interface: str, as_json: bool) -> int:
    view = acl_view.view(host, interface)
    data = view_dict(view)
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return EXIT_OK
    state = "loaded" if view.live is not None else "not loaded"
    if not view.exists:
        state += "; no policy file yet: this is what the first change starts from"
    print(f"Access rules of {interface} (nftables table inet zsn_{interface}: {state})")
    if view.live_problem:
        print(f"  differs from the kernel: {view.live_problem} (zsn wg acl load {interface})")
    print("Groups:" if data["groups"] else "Groups: none")
    for name, members in data["groups"].items():
        print(f"  {name}: {', '.join(members) or '(no peers)'}")
    rows = [["#", "verdict", "from", "to", "port", "packets", "bytes"]]
    for rule in data["rules"]:
        rows.append([str(rule["number"]), rule["verdict"], rule["from"], rule["to"],
                     rule["port"] or "any", _number(rule["packets"]), _number(rule["bytes"])])
    default = data["default"]
    rows.append(["-", default["verdict"], "(default: what matches no rule)", "", "",
                 _number(default["packets"]), _number(default["bytes"])])
    print("Rules (the first that matches decides):")
    print_table(rows, right={5, 6})
    print("Tests:" if data["tests"] else "Tests: none")
    for test in data["tests"]:
        print(f"  {test['number']}. {test['test']}: "
              f"{'passes' if test['passes'] else test['failure']}")
    return EXIT_OK


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _explain(host: Host, args: argparse.Namespace) -> int:
    policy, decisions = acl_view.explain(host, args.interface, args.source, args.destination,
                                    args.port)
    if args.json:
        sys.stdout.write(json.dumps([{
            "source": network_text(decision.source),
            "destination": network_text(decision.destination),
            "verdict": decision.verdict, "rule": decision.rule, "mixed": decision.partly,
            "text": decision.describe(policy)} for decision in decisions], indent=2) + "\n")
        return EXIT_OK
    for decision in decisions:
        print(decision.describe(policy))
    return EXIT_OK


def _run_tests(host: Host, interface: str) -> int:
    view = acl_view.view(host, interface)
    if not view.tests:
        print(f"{interface}'s access rules have no tests")
        return EXIT_OK
    failed = 0
    for number, state in enumerate(view.tests, start=1):
        if state.failure is None:
            print(f"pass {number}. {state.test}")
        else:
            failed += 1
            print(f"FAIL {state.failure}")
    print(f"{len(view.tests) - failed} of {len(view.tests)} tests pass")
    return EXIT_ERROR if failed else EXIT_OK
