"""Headless links: ``zsn link ...``, the pane's abilities for scripts.

The flags are fixed (scripts rely on them): ``create bond NAME --mode M --members a,b
[--miimon MS] [--xmit-hash-policy P] [--lacp-rate slow|fast] [--mtu N]``, ``create vlan
NAME --parent P --id N [--mtu N]``, ``create bridge NAME [--ports a,b] [--stp]``; every
change takes ``--persist``, ``--config-only`` and ``--dry-run``.
"""

from __future__ import annotations

import argparse
import json
import sys

from zsn.eap.options import add_eap_arguments
from zsn.eap.options import request_from_args as eap_request
from zsn.errors import EXIT_OK, ValidationError
from zsn.headless import add_change_options, add_dry_run, apply_change, apply_or_show, print_table
from zsn.links import actions, lint, validate
from zsn.links.dot1x import plan_8021x, port_line, read_ports
from zsn.links.export import interfaces_to_dicts
from zsn.links.live import read_links, with_rates
from zsn.links.model import Interface, tree
from zsn.links.text import describe
from zsn.lint import print_findings
from zsn.system.host import Host
from zsn.terminal import safe_lines

SHOW_RATE_WINDOW = 1.0


def _change_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--persist", action="store_true",
                        help="also write the persistent config (netplan, networkd, ifupdown, "
                             "netctl; NetworkManager: print the nmcli commands); with --try, "
                             "written when the change is confirmed")
    parser.add_argument("--config-only", action="store_true",
                        help="write the persistent config only; no live link is touched "
                             "(offline editing with --root)")
    add_change_options(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Changes are checked first (names, VLAN ids, MTUs against parents and "
                     "members, members that carry the default route); a failure part-way "
                     "undoes what was done.")
    verbs = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = verbs.add_parser("list", help="every link as a tree: bond > members, bridge > "
                               "ports, parent > VLANs, veth > peer")
    listing.add_argument("--json", action="store_true", help="print the export's objects")
    show = verbs.add_parser("show", help="one link: state, stack, bond details, rates")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--json", action="store_true", help="print the export's object")

    create = verbs.add_parser("create", help="create a bond, VLAN or bridge")
    kinds = create.add_subparsers(dest="kind", required=True, metavar="KIND")
    bond = kinds.add_parser("bond", help="a bond of --members")
    bond.add_argument("name", metavar="NAME")
    bond.add_argument("--mode", required=True, metavar="MODE",
                      help="balance-rr, active-backup, balance-xor, broadcast, 802.3ad, "
                           "balance-tlb, balance-alb")
    bond.add_argument("--members", required=True, metavar="A,B", help="member links")
    bond.add_argument("--miimon", metavar="MS", help="link check interval "
                      "(default 100)")
    bond.add_argument("--xmit-hash-policy", metavar="P",
                      help="layer2, layer3+4, layer2+3, encap2+3, encap3+4, vlan+srcmac")
    bond.add_argument("--lacp-rate", choices=("slow", "fast"), help="802.3ad only")
    bond.add_argument("--mtu", metavar="N")
    _change_options(bond)
    vlan = kinds.add_parser("vlan", help="a VLAN on --parent")
    vlan.add_argument("name", metavar="NAME")
    vlan.add_argument("--parent", required=True, metavar="LINK")
    vlan.add_argument("--id", dest="vlan_id", required=True, metavar="N", help="1-4094")
    vlan.add_argument("--mtu", metavar="N", help="at most the parent's")
    _change_options(vlan)
    bridge = kinds.add_parser("bridge", help="a bridge, with --ports")
    bridge.add_argument("name", metavar="NAME")
    bridge.add_argument("--ports", metavar="A,B", help="ports to add")
    bridge.add_argument("--stp", action="store_true", help="turn spanning tree on")
    bridge.add_argument("--mtu", metavar="N")
    _change_options(bridge)

    set_parser = verbs.add_parser("set", help="set a link's MTU (in the right order)")
    set_parser.add_argument("name", metavar="NAME")
    set_parser.add_argument("--mtu", required=True, metavar="N")
    _change_options(set_parser)
    for verb, text in (("add-member", "add a member to a bond or a port to a bridge"),
                       ("remove-member", "remove a member or port")):
        sub = verbs.add_parser(verb, help=text)
        sub.add_argument("master", metavar="BOND|BRIDGE")
        sub.add_argument("member", metavar="LINK")
        _change_options(sub)
    delete = verbs.add_parser("delete", help="delete a bond, VLAN or bridge")
    delete.add_argument("name", metavar="NAME")
    _change_options(delete)
    save = verbs.add_parser("persist", help="write a live bond, VLAN or bridge into the "
                            "persistent config as it runs now")
    save.add_argument("name", metavar="NAME")
    add_dry_run(save)
    dot1x = verbs.add_parser("8021x", help="802.1X on a wired port (wpa_supplicant's "
                             "wired driver), the server always checked")
    dot1x.add_argument("name", metavar="IFACE")
    add_eap_arguments(dot1x)
    add_change_options(dot1x)
    check = verbs.add_parser("lint", help="advice on bonds, VLANs, bridges and the config; "
                             "exit 1 when there are errors")
    check.add_argument("--json", action="store_true", help="print findings as JSON")


def run(args: argparse.Namespace, host: Host) -> int:
    if args.action == "list":
        return _list(host, args.json)
    if args.action == "show":
        return _show(host, args.name, args.json)
    if args.action == "lint":
        return print_findings(lint.lint(host, strict=True), as_json=args.json,
                              subject_key=lint.SUBJECT)
    if args.action == "8021x":
        return apply_change(host, plan_8021x(host, args.name, eap_request(args)), args)
    request = request_from_args(args)
    context = actions.Context.read(host)
    if isinstance(request, actions.SaveLink):
        return apply_or_show(host, actions.plan(context, request), args.dry_run)
    # The session is guarded with every domain's changes, --try included (apply_change).
    options = actions.Options(persist=args.persist, config_only=args.config_only,
                              confirm_ssh=args.confirm_ssh, guard_session=False)
    plan = actions.plan(context, request, options)
    if args.config_only:
        return apply_or_show(host, plan, args.dry_run)
    return apply_change(host, plan, args)


def request_from_args(args: argparse.Namespace) -> actions.LinkRequest:
    """The request a changing command asks for: its options as text, as a form has
    them (a flag as "yes"), read by the same function as the pane's forms."""
    action = args.kind if args.action == "create" else args.action
    fields = {key: "yes" if value is True else value for key, value in vars(args).items()
              if isinstance(value, str) or value is True}
    return actions.request_from_fields(action, fields)


def _stack(interface: Interface) -> str:
    if interface.bond is not None:
        return f"{interface.bond.mode or '?'}"
    if interface.vlan_id is not None:
        return f"id {interface.vlan_id}"
    if interface.member is not None:
        return f"mii {interface.member.mii_status}"
    if interface.port_state is not None:
        return interface.port_state
    if interface.peer_elsewhere:
        return "peer in another netns"
    return ""


def _list(host: Host, as_json: bool) -> int:
    snapshot, details = read_links(host)
    if not snapshot.live:
        raise ValidationError(f"{host.root} is not this machine's root: links are read from "
                              "the kernel (see 'zsn link lint' for its config)")
    if as_json:
        print(json.dumps(interfaces_to_dicts(snapshot, details), indent=2))
        return EXIT_OK
    rows = [("NAME", "KIND", "STATE", "MTU", "DETAIL", "ADDRESSES")]
    for tree_row in tree(snapshot.interfaces):
        interface = tree_row.interface
        rows.append((tree_row.prefix + interface.name, interface.kind, interface.state_text,
                     str(interface.mtu), _stack(interface), " ".join(interface.addresses)))
    print_table(rows)
    for error in snapshot.errors:
        print(f"zsn link: {error}", file=sys.stderr)
    return EXIT_OK


def _show(host: Host, name: str, as_json: bool) -> int:
    validate.interface_name(name)
    first, details = read_links(host)
    context = actions.Context(host, first)
    interface = context.find(name)
    snapshot = with_rates(first, SHOW_RATE_WINDOW)
    data = interfaces_to_dicts(snapshot, details, interface)[0]
    findings = [f for f in lint.lint(host) if f.subject == name]
    if as_json:
        data["findings"] = [f.as_dict(lint.SUBJECT) for f in findings]
        print(json.dumps(data, indent=2))
        return EXIT_OK
    print(safe_lines(describe(interface, snapshot, details)))
    port = read_ports(host, [name]).get(name)
    if port is not None:
        print(safe_lines([port_line(port)]))
    for finding in findings:
        print(finding.describe())
    return EXIT_OK
