"""Headless WireGuard management: ``zsn peer ...`` and ``zsn wg ...``.

The same plans as the TUI: each command builds a plan, prints it with
``--dry-run``, or applies it. Results go to stdout (a client config, a QR code),
what was done to stderr, errors as one line on stderr with a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence

from zsn.errors import ValidationError, ZsnError
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.wireguard import interfaces, lint, onboarding, routing
from zsn.wireguard.qr import DEFAULT_SIZE, make_qr, qr_payload


def build_parser(prog: str = "zsn") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Manage WireGuard headlessly.")
    parser.add_argument("--root", default="/", metavar="DIR",
                        help="treat DIR as the system root (default /)")
    top = parser.add_subparsers(dest="command", required=True)

    peer = top.add_parser("peer", help="add, remove, show, disable, enable, rename peers")
    peers = peer.add_subparsers(dest="action", required=True)
    add = peers.add_parser("add", help="add a peer (client) and print its config")
    _iface_name(add)
    add.add_argument("--profile", choices=[p.value for p in onboarding.Profile],
                     default=onboarding.Profile.SERVER.value,
                     help="what the client routes through the tunnel: server only, the whole "
                          "VPN subnet (client-to-client), or all traffic (gateway)")
    add.add_argument("--ip", help="the client's address (default: next free in the subnet)")
    add.add_argument("--dns", nargs="*", default=[], metavar="D", help="DNS servers")
    add.add_argument("--keepalive", type=int, default=onboarding.DEFAULT_KEEPALIVE, metavar="S",
                     help="PersistentKeepalive seconds, 0 for none (default 25)")
    add.add_argument("--no-psk", action="store_true", help="no preshared key")
    add.add_argument("--endpoint", help="server HOST[:PORT] (default: the one stored)")
    add.add_argument("--route", nargs="*", default=[], metavar="SUBNET",
                     help="subnets behind this peer (site-to-site)")
    add.add_argument("--public-key", metavar="KEY",
                     help="the device's own public key (default: zsn generates the key pair)")
    add.add_argument("--qr", action="store_true", help="print a QR code instead of the config")
    _dry_run(add)
    for action, text in (("remove", "remove a peer"), ("disable", "disable a peer (kept in "
                         "the file, off the live interface)"), ("enable", "enable a peer")):
        sub = peers.add_parser(action, help=text)
        _iface_name(sub)
        _dry_run(sub)
    show = peers.add_parser("show", help="print a peer's client config (or QR)")
    _iface_name(show)
    show.add_argument("--qr", action="store_true", help="print a QR code")
    rename = peers.add_parser("rename", help="rename a peer")
    _iface_name(rename)
    rename.add_argument("new_name")
    _dry_run(rename)
    routes = peers.add_parser("routes", help="set the subnets behind a peer (site-to-site)")
    _iface_name(routes)
    routes.add_argument("subnets", nargs="*", metavar="SUBNET")
    _dry_run(routes)

    wg = top.add_parser("wg", help="create interfaces, bring them up/down, routing, lint")
    wgs = wg.add_subparsers(dest="action", required=True)
    create = wgs.add_parser("create", help="create a server interface (key generated)")
    create.add_argument("interface")
    create.add_argument("--address", action="append", required=True,
                        help="address/prefix, e.g. 10.0.0.1/24 (repeat for IPv6)")
    create.add_argument("--port", required=True, help="listen port")
    create.add_argument("--endpoint", help="public address or hostname clients connect to")
    _dry_run(create)
    for action, text in (("up", "bring an interface up (wg-quick)"),
                         ("down", "bring an interface down (wg-quick)"),
                         ("clients", "let the clients of an interface reach each other")):
        sub = wgs.add_parser(action, help=text)
        sub.add_argument("interface")
        _dry_run(sub)
    endpoint = wgs.add_parser("endpoint", help="set the public address clients connect to")
    endpoint.add_argument("interface")
    endpoint.add_argument("host")
    _dry_run(endpoint)
    link = wgs.add_parser("link", help="route two interfaces to each other")
    link.add_argument("interface")
    link.add_argument("other")
    _dry_run(link)
    gateway = wgs.add_parser("gateway", help="NAT clients out of the default-route interface")
    gateway.add_argument("interface")
    gateway.add_argument("--egress", help="outgoing interface (default: the default route's)")
    _dry_run(gateway)
    check = wgs.add_parser("lint", help="check the configs; exit 1 when there are errors")
    check.add_argument("--json", action="store_true", help="print findings as JSON")
    return parser


def _iface_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("interface")
    parser.add_argument("name")


def _dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (file diffs, live operations) and change nothing")


def _plan_for(host: Host, args: argparse.Namespace) -> Plan:
    if args.command == "peer":
        if args.action == "add":
            request = onboarding.PeerRequest(
                args.interface, args.name, onboarding.Profile(args.profile), args.ip,
                list(args.dns), args.keepalive or None, not args.no_psk, args.endpoint,
                list(args.route), args.public_key)
            return onboarding.plan_add_peer(host, request)[0]
        builders = {"remove": onboarding.plan_remove_peer,
                    "disable": onboarding.plan_disable_peer,
                    "enable": onboarding.plan_enable_peer}
        if args.action in builders:
            return builders[args.action](host, args.interface, args.name)
        if args.action == "rename":
            return onboarding.plan_rename_peer(host, args.interface, args.name, args.new_name)
        return onboarding.plan_set_routed_subnets(host, args.interface, args.name,
                                                  list(args.subnets))
    if args.action == "create":
        return interfaces.plan_create_interface(host, args.interface, args.address, args.port,
                                                args.endpoint)
    if args.action == "up":
        return interfaces.plan_up(host, args.interface)
    if args.action == "down":
        return interfaces.plan_down(host, args.interface)
    if args.action == "endpoint":
        return interfaces.plan_set_endpoint(host, args.interface, args.host)
    if args.action == "clients":
        return routing.plan_client_to_client(host, args.interface)
    if args.action == "link":
        return routing.plan_link_interfaces(host, args.interface, args.other)
    return routing.plan_gateway(host, args.interface, args.egress)


def _print_config(text: str, as_qr: bool) -> None:
    if as_qr:
        # Made for this terminal when there is one (the level is chosen to fit it).
        size = shutil.get_terminal_size(DEFAULT_SIZE) if sys.stdout.isatty() else DEFAULT_SIZE
        code = make_qr(qr_payload(text), columns=size[0], lines=size[1] - 2)
        sys.stdout.write(code.ansi())
        print(code.describe(), file=sys.stderr)
    else:
        sys.stdout.write(text)


def _lint(host: Host, as_json: bool) -> int:
    findings = lint.lint_host(host)
    if as_json:
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    else:
        for finding in findings:
            where = f" ({finding.path}:{finding.line})" if finding.line else ""
            print(f"{finding.id} {finding.severity}: {finding.message}{where}\n"
                  f"      fix: {finding.fix}")
        if not findings:
            print("no findings")
    return 1 if any(f.severity == "error" for f in findings) else 0


def main(argv: Sequence[str] | None = None, prog: str = "zsn") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        host = Host.at(args.root)
        if args.command == "peer" and args.action == "show":
            client = onboarding.show_client_config(host, args.interface, args.name)
            _print_config(client.text, args.qr)
            return 0
        if args.command == "wg" and args.action == "lint":
            return _lint(host, args.json)
        plan = _plan_for(host, args)
        if args.dry_run:
            sys.stdout.write(plan.describe())
            return 0
        done = plan.apply()
        for line in done:
            print(f"done: {line}", file=sys.stderr)
        for note in plan.notes:
            print(f"note: {note}", file=sys.stderr)
        if plan.output:
            _print_config(plan.output, getattr(args, "qr", False))
        return 0
    except ValidationError as exc:
        print(f"{prog}: invalid: {exc}", file=sys.stderr)
        return 2
    except ZsnError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
