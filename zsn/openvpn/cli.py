"""Headless OpenVPN: ``zsn vpn ...``, the pane's abilities for scripts.

Connections are named as in the pane: ``NAME`` when only one config has that name,
else ``client/NAME``, ``server/NAME`` or ``legacy/NAME`` (or the unit's name).
Changes are the pane's plans: ``--dry-run`` prints one, otherwise it is applied.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zsn.errors import EXIT_OK, ValidationError
from zsn.format import human_bytes
from zsn.headless import add_change_options, add_dry_run, apply_change, apply_or_show, print_table
from zsn.lint import print_findings
from zsn.openvpn import actions, lint
from zsn.openvpn.connections import KINDS, ConfigFile, Connection, connections, discover
from zsn.openvpn.export import connection_to_dict
from zsn.system.host import Host


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("NAME is a config's name (client/office.conf -> office), or KIND/NAME "
                     "when a client and a server share it, or the unit's name.")
    actions_parser = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions_parser.add_parser(
        "list", help="every connection: unit state, boot, tunnel state, address")
    listing.add_argument("--json", action="store_true",
                         help="print the export's connection objects")
    show = actions_parser.add_parser("show", help="one connection's details and findings")
    show.add_argument("name", metavar="NAME")
    for verb, text in (("start", "start the unit (refuses a config that does not parse)"),
                       ("stop", "stop the unit"), ("restart", "restart the unit"),
                       ("enable", "start the unit at boot"),
                       ("disable", "do not start the unit at boot")):
        sub = actions_parser.add_parser(verb, help=text)
        sub.add_argument("name", metavar="NAME")
        if verb in actions.VERBS:  # these change live networking
            add_change_options(sub)
        else:
            add_dry_run(sub)
    hook = actions_parser.add_parser(
        "hook", help="install or remove the systemd-resolved DNS hook")
    hook.add_argument("hook_action", choices=("install", "remove"), metavar="install|remove")
    hook.add_argument("name", metavar="NAME")
    routing = hook.add_mutually_exclusive_group()
    routing.add_argument("--route-all-dns", dest="route_all", action="store_const",
                         const=True, help="send every DNS query through the tunnel (~.)")
    routing.add_argument("--split-dns", dest="route_all", action="store_const", const=False,
                         help="only the pushed domains go to the tunnel's DNS "
                              "(default: keep the config's current choice; split when new)")
    add_dry_run(hook)
    imported = actions_parser.add_parser(
        "import", help="copy a .ovpn profile to /etc/openvpn/client/NAME.conf (0600)")
    imported.add_argument("file", metavar="FILE", type=Path)
    imported.add_argument("--name", help="connection name (default: the file's name)")
    imported.add_argument("--keep-commands", action="store_true",
                          help="keep the commands the profile has OpenVPN run as root (up, "
                               "down, script-security, plugin ...); left out by default, "
                               "named either way")
    add_dry_run(imported)
    management = actions_parser.add_parser(
        "management", help="add a unix management socket (live state in zsn)")
    management.add_argument("name", metavar="NAME")
    add_dry_run(management)
    check = actions_parser.add_parser(
        "lint", help="check every config; exit 1 when there are errors")
    check.add_argument("--json", action="store_true", help="print findings as JSON")


def run(args: argparse.Namespace, host: Host) -> int:
    if args.action == "list":
        return _list(host, args.json)
    if args.action == "show":
        return _show(host, find_config(host, args.name))
    if args.action == "lint":
        return print_findings(lint.lint(host), as_json=args.json, subject_key=lint.SUBJECT)
    if args.action == "import":
        name = args.name or actions.import_name(args.file)
        return apply_or_show(host, actions.plan_import(host, args.file, name, args.keep_commands),
                             args.dry_run)
    config = find_config(host, args.name)
    if args.action in actions.VERBS:
        return apply_change(host, actions.plan_unit(host, config, args.action), args)
    elif args.action in ("enable", "disable"):
        plan = actions.plan_enabled(host, config, args.action == "enable")
    elif args.action == "management":
        plan = actions.plan_management_socket(host, config)
    elif args.hook_action == "install":
        plan = actions.plan_hook_install(host, config, route_all_dns=args.route_all)
    else:
        plan = actions.plan_hook_remove(host, config)
    return apply_or_show(host, plan, args.dry_run)


def find_config(host: Host, name: str) -> ConfigFile:
    """The config `name` means: NAME, KIND/NAME or a unit name; refused when ambiguous."""
    configs = discover(host)
    kind, _, bare = name.rpartition("/")
    matches = [c for c in configs if c.unit in (name, f"{name}.service")] or [
        c for c in configs if c.name == bare and kind in ("", c.kind)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        choices = ", ".join(f"{c.kind}/{c.name}" for c in matches)
        raise ValidationError(f"{name!r} names {len(matches)} connections; say which: {choices}")
    if kind and kind not in KINDS:
        raise ValidationError(f"{kind!r} is not a kind of connection (one of "
                              f"{', '.join(KINDS)})")
    known = ", ".join(c.name for c in configs) or "none: no configs under /etc/openvpn"
    raise ValidationError(f"no OpenVPN connection named {name!r} (known: {known})")


def _list(host: Host, as_json: bool) -> int:
    found = connections(host)
    if as_json:
        print(json.dumps([connection_to_dict(conn) for conn in found], indent=2))
        return EXIT_OK
    rows = [("NAME", "KIND", "UNIT", "BOOT", "TUNNEL", "ADDRESS")]
    rows += [_row(conn) for conn in found]
    print_table(rows)
    for conn in found:
        for error in conn.errors:
            print(f"zsn vpn: {conn.config.unit}: {error}", file=sys.stderr)
    if not found:
        print("no OpenVPN configs under /etc/openvpn (import one with 'zsn vpn import FILE')",
              file=sys.stderr)
    return EXIT_OK


def _row(conn: Connection) -> tuple[str, str, str, str, str, str]:
    unit = conn.unit
    state = f"{unit.active_state}/{unit.sub_state}" if unit else "?"
    boot = (unit.unit_file_state or "-") if unit else "?"
    live = conn.live
    tunnel = live.state if live else "-"
    address = (live.tunnel_ipv4 or live.tunnel_ipv6 or "-") if live else "-"
    return (conn.config.name, conn.config.kind, state, boot, tunnel, address)


def _show(host: Host, config: ConfigFile) -> int:
    conn = next(c for c in connections(host) if c.config == config)
    data = connection_to_dict(conn)
    unit = data["unit_state"]
    live = data["live"]
    lines = [
        f"{config.unit}",
        f"  config:     {data['config']}",
        f"  role:       {data['role'] or '?'}   dev: {data['dev'] or '?'}",
        "  remotes:    " + (", ".join(f"{r['host']}:{r['port'] or 1194}/{r['proto'] or 'udp'}"
                                      for r in data["remotes"]) or "-"),
        f"  management: {data['management'] or '- (add one: zsn vpn management NAME)'}",
    ]
    if unit:
        lines.append(f"  unit:       {unit['active']}/{unit['sub']}, boot {unit['enabled']}"
                     + (f", pid {unit['main_pid']}" if unit["main_pid"] else ""))
    if live:
        lines.append(f"  tunnel:     {live['state']} {live['tunnel_ipv4'] or ''} "
                     f"{live['tunnel_ipv6'] or ''}".rstrip())
        if live["bytes_in"] is not None:
            lines.append(f"  traffic:    {human_bytes(live['bytes_in'])} in, "
                         f"{human_bytes(live['bytes_out'] or 0)} out"
                         + (f", {live['clients']} clients" if live["clients"] is not None
                            else ""))
    print("\n".join(lines))
    findings = [f for f in lint.lint(host) if f.subject == config.unit]
    for finding in findings:
        print(finding.describe())
    for error in conn.errors:
        print(f"zsn vpn: {error}", file=sys.stderr)
    return EXIT_OK
