"""Command line: picks a face (TUI, export, or a headless command) and runs it.

Only the TUI branch imports Textual; the export and headless commands import the
core alone, so they start fast and run where no terminal is attached. Command
groups and export sections come from `zsn.domains`; this module names no domain.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import NoReturn

from zsn import __version__
from zsn.domains import CommandFace, CommandGroup, command_face, command_groups, domains
from zsn.errors import (
    EXIT_ERROR,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_PARTIAL,
    ValidationError,
    ZsnError,
    did_you_mean,
)
from zsn.headless import interval_seconds
from zsn.terminal import message_line, safe_output

DESCRIPTION = """\
zsn shows and manages this machine's network and storage plumbing.
Without --export it starts the terminal UI; with --export it prints a snapshot
and exits; a COMMAND does one thing headlessly.\
"""

GROUP_EXIT_STATUS = """\
exit status of a command: 0 done (or the plan printed with --dry-run); 1 error;
2 input refused before anything changed. Every command that changes something
takes --dry-run: it prints the plan (file diffs, live operations) and changes
nothing."""

EXIT_STATUS = """\
exit status of --export: 0 complete; 1 error (nothing written: unreadable root, a
daemon or program failed); 2 input refused (unknown section, bad option), nothing
written; 3 partial: the snapshot was written, but a section could not be read fully
(each reason on stderr and in the section's "errors").

""" + GROUP_EXIT_STATUS

SERVE_HELP = "Prometheus exporter: /metrics and /export.json, kept warm between scrapes"
SERVE_USAGE = "serve [SECTION ...] [--listen ADDR:PORT] [--deadline S] [--poll-interval S]"

EXAMPLES = """\
examples:
  zsn                                   start the UI
  zsn --theme zsn-16 --refresh 2        16-colour theme, refresh every 2 s
  zsn --export {section:<23}  JSON snapshot of one section
  zsn --export --format prometheus --textfile /var/lib/prometheus/node-exporter/zsn.prom
  zsn serve --listen :9586 --web-config /etc/zsn/web.yml"""


def _epilog() -> str:
    registered = domains()
    sections = ", ".join(each.name for each in registered)
    groups = list(command_groups().values())
    width = max((len(group.name) for group in groups), default=0)
    width = max(width, len("serve"))
    lines = [f"sections for --export: {sections} (default: every section present)", "",
             EXIT_STATUS, "", "commands (zsn COMMAND --help shows each one's):"]
    lines += [f"  {group.name:<{width}}  {group.help}" for group in groups]
    lines += [f"  {'serve':<{width}}  {SERVE_HELP}"]
    lines += ["", "usage of the commands:"]
    lines += [f"  zsn [--root DIR] {group.usage or group.name + ' ...'}" for group in groups]
    lines += [f"  zsn [--root DIR] {SERVE_USAGE}"]
    return "\n".join(lines + ["", EXAMPLES.format(section=registered[0].name)])


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="zsn",
        usage="\n  zsn [--root DIR] [--theme NAME] [--refresh SECONDS]\n"
              "  zsn --export [SECTION ...] [--format json|prometheus] [--include-secrets] "
              "[--textfile FILE] [--root DIR]\n"
              "  zsn [--root DIR] COMMAND ...   (see 'commands' below)",
        description=DESCRIPTION,
        epilog=_epilog(),
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
    ui.add_argument("--refresh", metavar="SECONDS", type=interval_seconds, default=1.0,
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
    export.add_argument("--textfile", metavar="FILE",
                        help="with --format prometheus: replace FILE (NAME.prom in "
                             "node_exporter's textfile directory) atomically instead of "
                             "printing")
    return parser


def command_word(args: list[str]) -> tuple[str, list[str]] | None:
    """The first word after any --root, and the arguments without it; ``None`` when
    the arguments have none (they start the UI or an export)."""
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--root":
            index += 2
        elif word.startswith("--root="):
            index += 1
        else:
            break
    if index >= len(args) or args[index].startswith("-"):
        return None
    return args[index], args[:index] + args[index + 1:]


def command_group_of(args: list[str]) -> tuple[CommandGroup, list[str]] | None:
    """The command group the arguments name (after any --root), and the arguments
    without its name; ``None`` when they start the UI, an export or `zsn serve`."""
    command = command_word(args)
    if command is None:
        return None
    group = command_groups().get(command[0])
    return None if group is None else (group, command[1])


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, refusing a command line the way zsn refuses any input: one
    line on stderr (``zsn GROUP: invalid: ...``) and exit status 2, not the usage
    and a second line. Its sub-commands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID, f"{self.prog}: invalid: {message} "
                                f"('{self.prog} --help' shows the usage)\n")


def group_parser(group: CommandGroup, faces: CommandFace) -> argparse.ArgumentParser:
    """The parser of ``zsn GROUP ...`` (the arguments after the group's name)."""
    parser = ArgumentParser(prog=f"zsn {group.name}", description=group.help,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default="/", metavar="DIR",
                        help="treat DIR as the system root (default /)")
    faces.add_arguments(parser)
    parser.epilog = "\n\n".join(filter(None, [parser.epilog, GROUP_EXIT_STATUS]))
    return parser


def _run_command(group: CommandGroup, args: list[str]) -> int:
    from zsn.headless import run_group

    faces = command_face(group)
    parser = group_parser(group, faces)
    return run_group(faces, parser.parse_args(args), f"zsn {group.name}", parser)


def main(argv: Sequence[str] | None = None) -> int:
    gc.enable()  # paused while zsn was imported (`zsn.launch`)
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = command_word(args_list)
    if command is not None and command[0] == "serve":
        from zsn.exporter.serve import main as serve

        return serve(command[1])
    named = command_group_of(args_list)
    if command is not None and named is None and "--export" not in args_list:
        return _unknown_command(command[0])
    # What a headless run prints (names, replies, errors) goes out through
    # zsn.terminal.safe, whichever print it comes from.
    with safe_output():
        if named is not None:
            return _run_command(*named)
        parser = build_parser()
        args = parser.parse_args(args_list)
        if not args.export and (args.sections or args.include_secrets
                                or args.format != "json" or args.textfile):
            parser.error("SECTION, --format, --include-secrets and --textfile only apply "
                         "with --export")
        if args.textfile and (args.format != "prometheus"
                              or not args.textfile.endswith(".prom")):
            parser.error("--textfile takes a NAME.prom file (node_exporter reads only "
                         "those) and needs --format prometheus")
        if not args.export and not (sys.stdin.isatty() and sys.stdout.isatty()):
            print("zsn: invalid: the terminal UI needs a terminal on stdin and stdout "
                  "(for scripts: zsn --export, or a COMMAND)", file=sys.stderr)
            return EXIT_INVALID
        try:
            from zsn.system.host import Host

            if args.export:
                from zsn.exporter.document import check_sections

                check_sections(args.sections)
            host = Host.at(args.root)
            if args.export:
                return _export(host, args.sections, args.format, args.include_secrets,
                               args.textfile)
        except ValidationError as exc:
            print(f"zsn: invalid: {message_line(str(exc))}", file=sys.stderr)
            return EXIT_INVALID
        except ZsnError as exc:
            print(f"zsn: {message_line(str(exc))}", file=sys.stderr)
            return EXIT_ERROR
        except OSError as exc:
            from zsn.system.files import describe_os_error

            print(f"zsn: {describe_os_error(exc)}", file=sys.stderr)
            return EXIT_ERROR
    from zsn.tui.startup import Startup

    # Before Textual is imported: the first pane's read runs alongside its import.
    registered = domains()
    startup = Startup.begin(registered[0] if registered else None, host)
    from zsn.tui.app import run

    return run(host, theme=args.theme, refresh=args.refresh, startup=startup)


def _export(host: object, sections: list[str], fmt: str, include_secrets: bool,
            textfile: str | None = None) -> int:
    from zsn.exporter import document
    from zsn.system.host import Host

    assert isinstance(host, Host)
    # A snapshot's tens of thousands of objects (a big server's) all live until it
    # is printed: the cyclic collector would only walk them again and again (~30 ms
    # of such an export) without freeing anything; frozen, they are not walked
    # once more by the collection at exit either.
    gc.disable()
    try:
        result = document.collect(host, sections, include_secrets=include_secrets,
                                sample_rates=fmt != "prometheus")
        if fmt == "prometheus":
            text = document.to_prometheus(result)
        else:
            text = document.to_json(result, pretty=sys.stdout.isatty())
    finally:
        gc.freeze()
        gc.enable()
    if textfile is not None:
        from zsn.system.files import publish

        # Written even when partial: its zsn_collector_success lines say what is missing.
        publish(host.path(textfile), text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    for message in result.errors:
        print(f"zsn: {message}", file=sys.stderr)
    return EXIT_PARTIAL if result.errors else EXIT_OK


def _unknown_command(word: str) -> int:
    """A first word that names no command (nor sections, which need --export)."""
    names = [*command_groups(), "serve"]
    print(f"zsn: invalid: unknown command {message_line(word)!r}{did_you_mean(word, names)} "
          f"(commands: {', '.join(names)}; 'zsn --help' shows the usage)", file=sys.stderr)
    return EXIT_INVALID
