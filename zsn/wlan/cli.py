"""Headless Wi-Fi: ``zsn wifi ...``, the pane's abilities for scripts and SSH one-liners.

Changes are the pane's plans: ``--dry-run`` prints one, otherwise it is applied.
A passphrase is read from a file or standard input (``--passphrase-file -``),
never from the command line, where ``ps`` and shell history would keep it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from zsn.eap.options import add_eap_arguments, request_from_args, wants_eap
from zsn.errors import EXIT_ERROR, EXIT_OK, ValidationError
from zsn.headless import add_change_options, add_dry_run, apply_change, apply_or_show, print_table
from zsn.lint import print_findings
from zsn.qr import DEFAULT_SIZE, make_qr
from zsn.system.host import Host
from zsn.terminal import write_styled
from zsn.wlan import actions, lint
from zsn.wlan.export import interface_to_dict, profile_to_dict
from zsn.wlan.live import read_wlan
from zsn.wlan.model import (
    BACKEND_TITLES,
    WlanInterface,
    WlanSnapshot,
    signal_bars,
    sorted_scan,
)
from zsn.wlan.secrets import read_passphrase_file
from zsn.wlan.ssid import display, from_user


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("IFACE defaults to the only wireless interface a Wi-Fi daemon manages. "
                     "Backends: iwd (D-Bus), wpa_supplicant (its control socket), netctl "
                     "(/etc/netctl); NetworkManager's interfaces are shown, not changed.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="interfaces, their link, and known networks")
    listing.add_argument("--json", action="store_true", help="print the export's objects")
    scan = commands.add_parser("scan", help="scan now and list the networks in range")
    scan.add_argument("iface", nargs="?", metavar="IFACE")
    scan.add_argument("--json", action="store_true", help="print the scan results as JSON")
    connect = commands.add_parser("connect", help="connect to a network (remembered)")
    connect.add_argument("ssid", metavar="SSID")
    connect.add_argument("--passphrase-file", metavar="FILE|-",
                         help="read the passphrase (8-63 characters, or a 64-hex-digit PSK) "
                              "from FILE, or from standard input with -")
    connect.add_argument("--hidden", action="store_true",
                         help="the network hides its name: look for it by name")
    connect.add_argument("--iface", metavar="IFACE")
    add_eap_arguments(connect)
    add_change_options(connect)
    disconnect = commands.add_parser("disconnect", help="drop the connection")
    disconnect.add_argument("--iface", metavar="IFACE")
    add_change_options(disconnect)
    forget = commands.add_parser("forget", help="remove a known network from the backend")
    forget.add_argument("ssid", metavar="SSID")
    forget.add_argument("--iface", metavar="IFACE")
    add_dry_run(forget)
    auto = commands.add_parser(
        "autoconnect", help="join a known network by itself (netctl: start it at boot)")
    auto.add_argument("ssid", metavar="SSID")
    auto.add_argument("state", choices=("on", "off"), metavar="on|off")
    auto.add_argument("--iface", metavar="IFACE")
    add_dry_run(auto)
    qr = commands.add_parser("qr", help="a known network as a Wi-Fi QR code (holds the "
                                        "passphrase: mind who sees the screen)")
    qr.add_argument("ssid", metavar="SSID")
    qr.add_argument("--iface", metavar="IFACE")
    check = commands.add_parser("lint", help="check the Wi-Fi setup; exit 1 on errors")
    check.add_argument("--json", action="store_true", help="print findings as JSON")


def run(args: argparse.Namespace, host: Host) -> int:
    if args.action == "lint":
        return print_findings(lint.lint(host), as_json=args.json, subject_key=lint.SUBJECT)
    snapshot = read_wlan(host)
    if args.action == "list":
        return _list(snapshot, args.json)
    if args.action == "scan":
        interface = actions.resolve_interface(host, snapshot, args.iface)
        actions.scan(host, interface)
        fresh = read_wlan(host).interface(interface.name) or interface
        return _print_scan(fresh, args.json)
    interface = actions.resolve_interface(host, snapshot, getattr(args, "iface", None))
    if args.action == "disconnect":
        return apply_change(host, actions.plan_disconnect(host, snapshot, interface), args)
    ssid = from_user(args.ssid)
    if args.action == "connect":
        passphrase = None
        eap = request_from_args(args) if wants_eap(args) else None
        if args.passphrase_file is not None:
            stdin_text = sys.stdin.read(4096) if args.passphrase_file == "-" else None
            passphrase = read_passphrase_file(args.passphrase_file, stdin_text)
        plan = actions.plan_connect(host, snapshot, interface, ssid, passphrase, args.hidden,
                                    eap)
        return apply_change(host, plan, args)
    if args.action == "forget":
        return apply_or_show(host, actions.plan_forget(host, snapshot, interface, ssid),
                             args.dry_run)
    if args.action == "autoconnect":
        return apply_or_show(host, actions.plan_autoconnect(host, snapshot, interface, ssid,
                                                      args.state == "on"), args.dry_run)
    if args.action == "qr":
        return _qr(host, snapshot, interface, ssid)
    raise ValidationError(f"unknown action {args.action!r}")


def _signal(dbm: float | None) -> str:
    if dbm is None:
        return "-"
    bars = signal_bars(dbm)
    return f"{dbm:.0f} dBm {'▂▄▆█'[:bars]}{'·' * (4 - bars)}"


def _list(snapshot: WlanSnapshot, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"interfaces": [interface_to_dict(i) for i in snapshot.interfaces],
                          "profiles": [profile_to_dict(n) for n in snapshot.networks]},
                         indent=2))
        return EXIT_OK
    if snapshot.interfaces:
        rows: list[tuple[str, ...]] = [
            ("IFACE", "BACKEND", "STATE", "SSID", "SIGNAL", "CH", "ADDRESS")]
        for each in snapshot.interfaces:
            link = each.link
            rows.append((each.name, BACKEND_TITLES.get(each.backend or "", "-"), link.state,
                         display(link.ssid) if link.ssid else "-", _signal(link.signal_dbm),
                         str(link.channel or "-"), each.addresses[0] if each.addresses else "-"))
        print_table(rows)
    else:
        print("no wireless interfaces", file=sys.stderr)
    for each in snapshot.interfaces:
        for note in filter(None, (each.read_only, each.hint)):
            print(f"zsn wifi: {each.name}: {note}", file=sys.stderr)
    if snapshot.networks:
        print()
        rows = [("KNOWN NETWORK", "BACKEND", "SECURITY", "AUTOCONNECT", "IFACE")]
        for net in snapshot.networks:
            auto = "on" if net.autoconnect else "off"
            if net.at_boot is not None:
                auto += " (at boot)" if net.at_boot else ""
            rows.append((net.title + (" *" if net.current else ""),
                         BACKEND_TITLES[net.backend], net.security or "?", auto,
                         net.interface or "all"))
        print_table(rows)
    failed = [*snapshot.errors, *(f"{each.name}: {error}" for each in snapshot.interfaces
                                  for error in each.errors)]
    for error in failed:
        print(f"zsn wifi: {error}", file=sys.stderr)
    return EXIT_ERROR if failed else EXIT_OK  # what is listed is not all there is


def _print_scan(interface: WlanInterface, as_json: bool) -> int:
    from zsn.wlan.export import scan_to_dict

    entries = sorted_scan(interface.scan)
    if as_json:
        print(json.dumps([scan_to_dict(entry) for entry in entries], indent=2))
        return EXIT_OK
    if not entries:
        print(f"no networks in range of {interface.name}", file=sys.stderr)
        return EXIT_OK
    rows: list[tuple[str, ...]] = [("SSID", "SECURITY", "SIGNAL", "CH", "BSSID", "")]
    for entry in entries:
        mark = "connected" if entry.connected else "known" if entry.known else ""
        rows.append((entry.title, entry.security, _signal(entry.signal_dbm),
                     str(entry.channel or "-"), entry.bssid or "-", mark))
    print_table(rows)
    return EXIT_OK


def _qr(host: Host, snapshot: WlanSnapshot, interface: WlanInterface, ssid: bytes) -> int:
    from zsn.wlan.wifiqr import wifi_code

    network = actions.known_by_ssid(snapshot, interface, ssid)[0]
    code = wifi_code(host, network, interface.config_path)
    size = shutil.get_terminal_size(DEFAULT_SIZE) if sys.stdout.isatty() else DEFAULT_SIZE
    qr = make_qr(code.payload(), columns=size[0], lines=size[1] - 2)
    write_styled(qr.ansi())  # zsn's own colours; nothing in it from outside
    print(f"{network.title}: {qr.describe()}", file=sys.stderr)
    for note in code.notes():
        print(f"note: {note}", file=sys.stderr)
    return EXIT_OK
