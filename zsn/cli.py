"""Command line: picks a face (TUI, export, or a headless command) and runs it.

Only the TUI branch imports Textual; the export and headless commands import the
core alone, so they start fast and run where no terminal is attached.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from zsn import __version__
from zsn.errors import ZsnError

DESCRIPTION = """\
zsn shows and manages this machine's network and storage plumbing.
Without --export it starts the terminal UI; with --export it prints a snapshot
and exits.\
"""

EPILOG = """\
sections for --export: wireguard, openvpn (default: every section present)

exit status of --export: 0 complete; 1 error (nothing written: unknown section,
unreadable root, bad option); 2 partial: the snapshot was written, but a section
could not be read fully (each reason on stderr and in the section's "errors").

headless WireGuard management (see 'zsn peer --help', 'zsn wg --help'):
  zsn [--root DIR] peer add|remove|show|disable|enable|rename|routes IFACE NAME ...
  zsn [--root DIR] wg create|up|down|endpoint|clients|link|gateway|lint ...

examples:
  zsn                                   start the UI
  zsn --theme zsn-16 --refresh 2        16-colour theme, refresh every 2 s
  zsn --export wireguard                JSON snapshot of WireGuard
  zsn --export --format prometheus > /var/lib/node_exporter/zsn.prom.$$ && \\
      mv /var/lib/node_exporter/zsn.prom.$$ /var/lib/node_exporter/zsn.prom
"""


HEADLESS_COMMANDS = ("peer", "wg")
"""First words that run a headless command (`zsn.wireguard.cli`) instead of the UI."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zsn",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zsn {__version__}")
    parser.add_argument(
        "--root", metavar="DIR", default="/",
        help="treat DIR as the system root: config files, /run sockets and the D-Bus "
             "socket are looked up under it (default: /)",
    )
    ui = parser.add_argument_group("terminal UI")
    ui.add_argument("--theme", metavar="NAME",
                    help="colour theme: a Textual built-in or one from the themes folder")
    ui.add_argument("--refresh", metavar="SECONDS", type=_positive_float, default=1.0,
                    help="how often live panes refresh (default: 1.0)")
    export = parser.add_argument_group("headless export")
    export.add_argument("--export", action="store_true",
                        help="print a snapshot of SECTION ... (default: all present) and exit")
    export.add_argument("sections", metavar="SECTION", nargs="*",
                        help="sections to export (only with --export)")
    export.add_argument("--format", choices=("json", "prometheus"), default="json",
                        help="export format (default: json)")
    export.add_argument("--include-secrets", action="store_true",
                        help="include private and preshared keys in the export")
    return parser


def _headless_command(args: list[str]) -> bool:
    """Whether the arguments name a headless command (``peer``, ``wg``), after any --root."""
    rest = args[2:] if args[:1] == ["--root"] else args[1:] if args[:1] and \
        args[0].startswith("--root=") else args
    return bool(rest) and rest[0] in HEADLESS_COMMANDS


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be between 0.1 and 3600 seconds")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if _headless_command(args_list):
        from zsn.wireguard import cli as wireguard_cli

        return wireguard_cli.main(args_list)
    parser = build_parser()
    args = parser.parse_args(args_list)
    if not args.export and (args.sections or args.include_secrets or args.format != "json"):
        parser.error("SECTION, --format and --include-secrets only apply with --export")
    try:
        from zsn.system.host import Host

        host = Host.at(args.root)
        if args.export:
            return _export(host, args.sections, args.format, args.include_secrets)
    except ZsnError as exc:
        print(f"zsn: {exc}", file=sys.stderr)
        return 1
    from zsn.tui.app import run

    return run(host, theme=args.theme, refresh=args.refresh)


def _export(host: object, sections: list[str], fmt: str, include_secrets: bool) -> int:
    from zsn import export
    from zsn.system.host import Host

    assert isinstance(host, Host)
    result = export.collect(host, sections, include_secrets=include_secrets)
    if fmt == "prometheus":
        text = export.to_prometheus(result)
    else:
        text = export.to_json(result, pretty=sys.stdout.isatty())
    sys.stdout.write(text)
    sys.stdout.flush()
    for message in result.errors:
        print(f"zsn: {message}", file=sys.stderr)
    return 2 if result.errors else 0
