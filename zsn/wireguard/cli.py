"""Headless WireGuard management: ``zsn peer ...`` and ``zsn wg ...``.

The same plans as the TUI: each command builds a plan, prints it with
``--dry-run``, or applies it. Results go to stdout (a client config, a QR code),
what was done to stderr, errors as one line on stderr with a non-zero exit.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from functools import partial

from zsn.domains import HeadlessGroup
from zsn.errors import EXIT_ERROR, EXIT_OK
from zsn.headless import add_change_options, add_dry_run, apply_change, apply_or_show
from zsn.lint import print_findings
from zsn.plan import Plan
from zsn.qr import DEFAULT_SIZE, make_qr
from zsn.system.host import Host
from zsn.terminal import safe, write_styled
from zsn.wireguard import actions, interfaces, lint, onboarding, routing
from zsn.wireguard.acl_cli import add_acl_arguments, run_acl
from zsn.wireguard.qr import qr_payload
from zsn.wireguard.server import DEFAULT_KEEPALIVE

LIVE_ACTIONS = frozenset({"up", "down", "clients", "link", "gateway"})
"""``zsn wg`` actions that change live networking: they take --try (`apply_change`)."""


def add_peer_arguments(parser: argparse.ArgumentParser) -> None:
    """``zsn peer ...``: add, remove, show, disable, enable, rename peers, set their routes."""
    peers = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = peers.add_parser("add", help="add a peer (client) and print its config")
    _iface_name(add)
    add.add_argument("--profile", choices=[p.value for p in onboarding.Profile],
                     default=onboarding.Profile.SERVER.value,
                     help="what the client routes through the tunnel: server only, the whole "
                          "VPN subnet (client-to-client), or all traffic (gateway)")
    add.add_argument("--ip", dest="address",
                     help="the client's address (default: next free in the subnet)")
    add.add_argument("--dns", nargs="*", default=[], metavar="D", help="DNS servers")
    add.add_argument("--keepalive", type=int, default=DEFAULT_KEEPALIVE, metavar="S",
                     help="PersistentKeepalive seconds, 0 for none (default 25)")
    add.add_argument("--no-psk", action="store_true", help="no preshared key")
    add.add_argument("--endpoint", help="server HOST[:PORT] (default: the one stored)")
    add.add_argument("--route", dest="routed_subnets", nargs="*", default=[],
                     metavar="SUBNET", help="subnets behind this peer (site-to-site)")
    add.add_argument("--public-key", metavar="KEY",
                     help="the device's own public key (default: zsn generates the key pair)")
    add.add_argument("--qr", action="store_true", help="print a QR code instead of the config")
    add_change_options(add)
    for action, text in (("remove", "remove a peer"), ("disable", "disable a peer (kept in "
                         "the file, off the live interface)"), ("enable", "enable a peer")):
        sub = peers.add_parser(action, help=text)
        _iface_name(sub)
        add_change_options(sub)
    show = peers.add_parser("show", help="print a peer's client config (or QR)")
    _iface_name(show)
    show.add_argument("--qr", action="store_true", help="print a QR code")
    rename = peers.add_parser("rename", help="rename a peer")
    _iface_name(rename)
    rename.add_argument("new_name")
    add_dry_run(rename)
    expire = peers.add_parser("expire", help="set when a peer expires (it is disabled then, "
                              "by whichever zsn runs or the zsn-history timer)")
    _iface_name(expire)
    when = expire.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", metavar="DATETIME",
                      help="local date and time, e.g. 2026-12-31 (through that day) or "
                           "'2026-12-31 18:00'")
    when.add_argument("--in", dest="within", metavar="DURATION",
                      help="from now: 30d, 12h, 2w, 1d12h")
    when.add_argument("--never", action="store_true", help="remove the expiry")
    add_dry_run(expire)
    log = peers.add_parser("log", help="a peer's life from the history: session, totals "
                           "across restarts, sparklines, connect/disconnect/endpoint events")
    _iface_name(log)
    log.add_argument("--hours", type=_positive_hours, default=30 * 24, metavar="N",
                     help="hours of per-hour history to read (default 720: 30 days)")
    log.add_argument("--json", action="store_true",
                     help="print it as JSON (per-hour bytes included)")
    routes = peers.add_parser("routes", help="set the subnets behind a peer (site-to-site)")
    _iface_name(routes)
    routes.add_argument("subnets", nargs="*", metavar="SUBNET")
    add_change_options(routes)


def add_wg_arguments(parser: argparse.ArgumentParser) -> None:
    """``zsn wg ...``: create interfaces, bring them up/down, routing, lint."""
    wgs = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = wgs.add_parser("create", help="create a server interface (key generated)")
    create.add_argument("interface")
    create.add_argument("--address", action="append", required=True,
                        help="address/prefix, e.g. 10.0.0.1/24 (repeat for IPv6)")
    create.add_argument("--port", required=True, help="listen port")
    create.add_argument("--endpoint", help="public address or hostname clients connect to")
    add_dry_run(create)
    for action, text in (("up", "bring an interface up (wg-quick)"),
                         ("down", "bring an interface down (wg-quick)"),
                         ("clients", "let the clients of an interface reach each other")):
        sub = wgs.add_parser(action, help=text)
        sub.add_argument("interface")
        add_change_options(sub)
    endpoint = wgs.add_parser("endpoint", help="set the public address clients connect to")
    endpoint.add_argument("interface")
    endpoint.add_argument("host")
    add_dry_run(endpoint)
    link = wgs.add_parser("link", help="route two interfaces to each other")
    link.add_argument("interface")
    link.add_argument("other")
    add_change_options(link)
    gateway = wgs.add_parser("gateway", help="NAT clients out of the default-route interface")
    gateway.add_argument("interface")
    gateway.add_argument("--egress", help="outgoing interface (default: the default route's)")
    add_change_options(gateway)
    imports = wgs.add_parser("import", help="take over a PiVPN, wg-easy or plain wg-quick "
                             "setup (keys, addresses and names kept: no client needs a new "
                             "config)")
    imports.add_argument("source", choices=["pivpn", "wg-easy", "wg-quick"])
    imports.add_argument("path", nargs="?", metavar="PATH",
                         help="where the source keeps its data (default: pivpn "
                              "/etc/pivpn/wireguard, wg-easy /etc/wireguard (wg-easy.db or "
                              "wg0.json), wg-quick /etc/wireguard)")
    imports.add_argument("--interface", metavar="NAME",
                         help="the interface name here (default: the source's)")
    imports.add_argument("--endpoint", metavar="HOST[:PORT]",
                         help="what clients connect to (wg-easy v14 keeps it in WG_HOST)")
    imports.add_argument("--env", dest="env_file", metavar="FILE",
                         help="wg-easy v14: its container's environment (docker env file or "
                              ".env with WG_HOST, WG_PORT, WG_DEFAULT_DNS ...)")
    imports.add_argument("--keep-commands", action="store_true",
                         help="keep the commands the source has wg-quick run as root (PreUp, "
                              "PostUp, PreDown, PostDown); left out by default, named either "
                              "way")
    add_dry_run(imports)
    record = wgs.add_parser("record", help="read every interface once and record its peers' "
                            "history (what the zsn-history timer runs where neither the TUI "
                            "nor zsn serve do)")
    record.add_argument("--reset-store", action="store_true",
                        help="first set the history store aside (renamed beside itself), "
                             "e.g. when it is damaged, and start a new one")
    check = wgs.add_parser("lint", help="check the configs; exit 1 when there are errors")
    check.add_argument("--json", action="store_true", help="print findings as JSON")
    rules = wgs.add_parser("acl", help="access rules: peer groups, ordered allow/deny rules, "
                           "explain, tests (enforced with nftables)")
    add_acl_arguments(rules)



def _positive_hours(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 24 * 3660:
        raise argparse.ArgumentTypeError(f"not a number of hours from 1 to 87840: {text!r}")
    return int(text)


def _iface_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("interface")
    parser.add_argument("name")


def _peer_plan(host: Host, args: argparse.Namespace) -> Plan:
    if args.action == "add":
        request = onboarding.PeerRequest(
            args.interface, args.name, onboarding.Profile(args.profile), args.address,
            list(args.dns), args.keepalive or None, not args.no_psk, args.endpoint,
            list(args.routed_subnets), args.public_key)
        return onboarding.plan_add_peer(host, request)[0]
    builders = {"remove": actions.plan_remove_peer,
                "disable": actions.plan_disable_peer,
                "enable": actions.plan_enable_peer}
    if args.action in builders:
        return builders[args.action](host, args.interface, args.name)
    if args.action == "rename":
        return actions.plan_rename_peer(host, args.interface, args.name, args.new_name)
    if args.action == "expire":
        import time

        from zsn.wireguard import expiry

        at = None if args.never else expiry.parse_when(args.at, args.within, time.time())
        return actions.plan_expire(host, args.interface, args.name, at)
    return actions.plan_set_routed_subnets(host, args.interface, args.name,
                                              list(args.subnets))


def _wg_plan(host: Host, args: argparse.Namespace) -> Plan:
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
    if args.action == "import":
        from zsn.wireguard.imports import plan_import

        return plan_import(host, args.source, args.path, interface=args.interface,
                           endpoint=args.endpoint, env_file=args.env_file,
                           keep_commands=args.keep_commands)
    return routing.plan_gateway(host, args.interface, args.egress)


def _print_config(text: str, as_qr: bool) -> None:
    if as_qr:
        # Made for this terminal when there is one (the level is chosen to fit it),
        # in explicit colours; to a file or a pipe, plain text (`QrCode.plain`).
        terminal = sys.stdout.isatty()
        size = shutil.get_terminal_size(DEFAULT_SIZE) if terminal else DEFAULT_SIZE
        code = make_qr(qr_payload(text), columns=size[0], lines=size[1] - 2)
        if terminal:
            write_styled(code.ansi())  # zsn's own colours; nothing in it from outside
        else:
            sys.stdout.write(code.plain())
        print(code.describe() + ("" if terminal else "; plain text without colour codes, "
                                 "light modules drawn, for a terminal with a dark background"),
              file=sys.stderr)
    else:
        sys.stdout.write(text)


def _peer_log(args: argparse.Namespace, host: Host) -> int:
    import json
    import time

    from zsn.wireguard.history import HistoryStore
    from zsn.wireguard.live import read_wireguard
    from zsn.wireguard.peerlog import one_report, report_dict, report_text

    now = int(time.time())
    snapshot = read_wireguard(host)
    store = HistoryStore.open(host, create=False)
    try:
        report = one_report(host, store, args.interface, args.name, now, args.hours, snapshot)
    finally:
        store.close()
    if args.json:
        data = {"interface": report.interface, "public_key": report.public_key,
                "name": report.name, **report_dict(report)}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(report_text(report, now))
    return EXIT_OK


def _record(host: Host, reset: bool) -> int:
    from zsn.wireguard.history import reset_store
    from zsn.wireguard.live import read_wireguard
    from zsn.wireguard.recorder import record_once

    if reset:
        aside = reset_store(host)
        print(f"history store set aside as {safe(str(aside))}; history starts anew"
              if aside else "no history store to set aside", file=sys.stderr)

    failures: list[str] = []

    def report(message: str) -> None:
        failures.append(message)
        print(f"zsn wg record: {safe(message)}", file=sys.stderr)

    def told(message: str) -> None:
        print(f"done: {safe(message)}", file=sys.stderr)

    snapshot = read_wireguard(host)
    recorded = record_once(host, snapshot, report, told)
    for error in snapshot.errors:
        print(f"zsn wg record: {safe(error)}", file=sys.stderr)
    if recorded.history_note:
        print(f"zsn wg record: {safe(recorded.history_note)}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR if failures or snapshot.errors else EXIT_OK


def run_peer(args: argparse.Namespace, host: Host) -> int:
    if args.action == "log":
        return _peer_log(args, host)
    if args.action == "show":
        client = onboarding.show_client_config(host, args.interface, args.name)
        _print_config(client.text, args.qr)
        return EXIT_OK
    show = partial(_print_config, as_qr=getattr(args, "qr", False))
    if args.action == "rename":
        return apply_or_show(host, _peer_plan(host, args), args.dry_run, show)
    return apply_change(host, _peer_plan(host, args), args, show)


def run_wg(args: argparse.Namespace, host: Host) -> int:
    if args.action == "record":
        return _record(host, args.reset_store)
    if args.action == "acl":
        return run_acl(args, host)
    if args.action == "lint":
        return print_findings(lint.lint(host), as_json=args.json, subject_key=lint.SUBJECT)
    if args.action in LIVE_ACTIONS:
        return apply_change(host, _wg_plan(host, args), args)
    return apply_or_show(host, _wg_plan(host, args), args.dry_run)


peer = HeadlessGroup(add_peer_arguments, run_peer)
wg = HeadlessGroup(add_wg_arguments, run_wg)
