"""The README and docs/ say only what exists: every command line parses with zsn's own
parser, every key is bound, every metric and lint id is one the code has, every link
leads somewhere; and the README stays a front page with the keys of every pane."""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.screen import Screen

from zsn import cli
from zsn.domains import Domain, domains, load
from zsn.exporter import document as export
from zsn.exporter import serve

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
FRONT_PAGE_LIMIT = 12 * 1024


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


# --- the front page --------------------------------------------------------------------


def test_readme_is_a_front_page() -> None:
    text = _text(README)
    assert len(text.encode()) <= FRONT_PAGE_LIMIT, f"README.md is {len(text.encode())} bytes"
    blocks = dict(_code_blocks(text))
    commands = [line.split("#")[0].strip() for code in blocks.values() for line in code]
    assert "bash scripts/run.sh" in commands and "bash scripts/test.sh" in commands
    assert (REPO / "scripts/run.sh").is_file() and (REPO / "scripts/test.sh").is_file()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images, "the README shows the TUI"
    for image in images:
        # A snapshot the TUI tests compare against: the picture is the UI as it is.
        assert image.startswith("tests/tui/__snapshots__/") and image.endswith("_80x24.svg")
        assert (REPO / image).is_file(), image


def test_every_domain_has_a_page_and_a_pane_section_on_the_front_page() -> None:
    readme = _text(README)
    for domain in domains():
        page = DOCS / f"{domain.name}.md"
        assert page.is_file(), f"docs/{domain.name}.md"
        assert f"](docs/{domain.name}.md)" in readme
        assert _section(readme, domain.title) is not None, f"README: no ### {domain.title}"
    for name in ("using.md", "export.md", "metrics.md"):
        assert (DOCS / name).is_file() and f"](docs/{name})" in readme


# --- links ----------------------------------------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"<[^>]+>|`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", _text(page), re.MULTILINE)
    return {_slug(heading) for heading in headings}


@pytest.mark.parametrize("page", _pages(), ids=_page_id)
def test_every_link_leads_somewhere(page: Path) -> None:
    text = _text(page)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # another site: not this repository's to check
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{_page_id(page)}: {target} does not exist"
        if anchor:
            assert anchor in _anchors(resolved), f"{_page_id(page)}: no #{anchor} in {path}"


# --- commands -------------------------------------------------------------------------


def _code_blocks(text: str) -> Iterator[tuple[str, list[str]]]:
    """(language, lines) of each fenced code block, keyed by its position."""
    for match in re.finditer(r"^ *```(\w*)\n(.*?)^ *```", text, re.MULTILINE | re.DOTALL):
        yield f"{match.start()}:{match.group(1)}", match.group(2).splitlines()


def _command_lines(text: str) -> Iterator[tuple[str, bool]]:
    """Every ``zsn ...`` command the page shows, and whether it is a whole command line
    (a shell example) rather than a mention or a synopsis (``zsn vpn import``)."""
    for key, lines in _code_blocks(text):
        whole = key.endswith(":sh")
        if not (key.endswith(":sh") or key.endswith(":")):
            continue
        for line in lines:
            line = re.sub(r"\s+#.*$", "", line.strip())
            for part in re.split(r" ; |; | && | \| ", line):
                part = re.split(r" [<>] ", part)[0].strip()
                if part.startswith("zsn ") or part == "zsn":
                    yield part, whole
    for span in re.findall(r"`(zsn\b[^`]*)`", text):
        yield re.split(r" \| | [<>] ", " ".join(span.split()))[0], False


def _variants(words: list[str]) -> Iterator[list[str]]:
    """The concrete command lines a synopsis stands for: ``[...]`` is optional and
    ``a|b`` is a choice; each optional part and each choice appears in one variant."""
    elements: list[tuple[int | None, list[str]]] = []  # (optional group, alternatives)
    group: int | None = None
    groups = 0
    for word in words:
        opening = word.startswith("[")
        if opening:
            group = groups
            groups += 1
        closing = word.endswith("]")
        word = word.removeprefix("[").removesuffix("]")
        alternatives = word.split("|") if "|" in word and not word.startswith("|") else [word]
        elements.append((group, alternatives))
        if closing:
            group = None

    def line(included: set[int], choice: dict[int, int]) -> list[str]:
        return [alternatives[choice.get(index, 0)]
                for index, (owner, alternatives) in enumerate(elements)
                if owner is None or owner in included]

    yield line(set(), {})
    for each in range(groups):
        yield line({each}, {})
    for index, (owner, alternatives) in enumerate(elements):
        for choice in range(1, len(alternatives)):
            yield line(set() if owner is None else {owner}, {index: choice})


def _parse(argv: list[str]) -> str | None:
    """Why zsn would refuse this command line, or None when it parses."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            command = cli.command_word(argv)
            if command is not None and command[0] == "serve":
                serve.build_parser().parse_args(command[1])
                return None
            named = cli.command_group_of(argv)
            if named is not None:
                group, rest = named
                cli.group_parser(group, load(group.module)).parse_args(rest)
                return None
            args = cli.build_parser().parse_args(argv)
    except SystemExit as exit_:
        return None if exit_.code == 0 else errors.getvalue().strip().splitlines()[-1]
    sections = {domain.name for domain in domains()}
    unknown = [name for name in args.sections if name not in sections and not name.isupper()]
    if unknown:
        return f"no section {unknown}"
    if not args.export and (args.sections or args.include_secrets or args.format != "json"
                            or args.textfile):
        return "SECTION, --format, --include-secrets and --textfile only apply with --export"
    return None


def _named_command(argv: list[str]) -> str | None:
    """For a mention or a synopsis: why the group and sub-command it names do not exist."""
    named = cli.command_group_of(argv)
    command = cli.command_word(argv)
    if named is None and command is not None and command[0] == "serve":
        options = {option for action in serve.build_parser()._actions
                   for option in action.option_strings}
        sections = {domain.name for domain in domains()}
        unknown = [word for word in command[1] if word.startswith("-") and word not in options
                   or word.islower() and word.isalpha() and word not in sections
                   and not _is_value(command[1], word)]
        return f"unknown {unknown}" if unknown else None
    if named is None:
        # A synopsis of the UI or the export: its options and sections exist.
        options = {option for action in cli.build_parser()._actions
                   for option in action.option_strings}
        sections = {domain.name for domain in domains()}
        unknown = [word for word in argv if word.startswith("-") and word not in options
                   or word.islower() and word.isalpha() and word not in sections
                   and not _is_value(argv, word)]
        return f"unknown {unknown}" if unknown else None
    group, rest = named
    parser = cli.group_parser(group, load(group.module))
    words = [word for word in rest if not word.startswith("-")]
    words = words[1:] if rest[:1] == ["--root"] else words
    choices = _subcommands(parser)
    if words and choices and words[0] not in choices and not words[0].isupper():
        return f"no {group.name} {words[0]!r}"
    return None


def _is_value(argv: list[str], word: str) -> bool:
    """Whether `word` is the value of the option before it (``--format json``)."""
    index = argv.index(word)
    return index > 0 and argv[index - 1].startswith("--")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.mark.parametrize("page", _pages(), ids=_page_id)
def test_every_command_in_the_docs_exists(page: Path) -> None:
    refused = []
    shown = list(_command_lines(_text(page)))
    for line, whole in shown:
        for variant in _variants(shlex.split(line)[1:]):
            if "..." in variant:
                reason = _named_command(variant[:variant.index("...")])
            else:
                reason = _parse(variant) if whole else _named_command(variant)
            if reason:
                refused.append(f"zsn {' '.join(variant)}: {reason}")
    assert not refused, "\n".join(refused)
    if page in (README, DOCS / "using.md"):
        assert shown


def test_every_command_is_on_the_front_page_and_in_zsn_help() -> None:
    synopsis = [line for key, lines in _code_blocks(_text(README)) if key.endswith(":")
                for line in lines]
    for domain in domains():
        for group in domain.commands:
            parser = cli.group_parser(group, load(group.module))
            subcommands = set(_subcommands(parser))
            usage_words = set(re.split(r"[ |]", group.usage))
            assert subcommands <= usage_words, f"zsn --help: {group.name} lacks " \
                f"{sorted(subcommands - usage_words)}"
            lines = [line for line in synopsis if f"] {group.name} " in line]
            assert lines, f"README: no synopsis of zsn {group.name}"
            listed = set(re.split(r"[ |]", lines[0]))
            assert subcommands <= listed, f"README: zsn {group.name} lacks " \
                f"{sorted(subcommands - listed)}"


def test_the_command_checker_refuses_what_zsn_refuses() -> None:
    assert _parse(["wg", "up", "wg0"]) is None
    assert _parse(["wg", "upp", "wg0"])
    assert _parse(["peer", "add", "wg0", "alice", "--frobnicate"])
    assert _parse(["--export", "nosuchsection"])
    assert _named_command(["vpn", "import"]) is None
    assert _named_command(["vpn", "teleport"])
    assert _named_command(["--export", "SECTION", "--format", "json"]) is None
    assert _named_command(["--export", "--frobnicate"])
    assert _named_command(["--root", "DIR", "COMMAND"]) is None
    variants = list(_variants(["zfs", "scrub", "tank", "[--pause|--stop]", "[--dry-run]"]))
    assert ["zfs", "scrub", "tank"] in variants
    assert ["zfs", "scrub", "tank", "--stop"] in variants
    assert ["zfs", "scrub", "tank", "--dry-run"] in variants


# --- keys -----------------------------------------------------------------------------

KEY_NAMES = {"?": "question_mark", "/": "slash", "esc": "escape", "[": "left_square_bracket",
             "]": "right_square_bracket"}


def _keys(bindings: object) -> set[str]:
    keys: set[str] = set()
    for binding in bindings if isinstance(bindings, list) else []:
        if isinstance(binding, Binding) and binding.action != "nothing":
            keys |= {key.strip() for key in binding.key.split(",")}
    return keys


def _bound(cls: type) -> set[str]:
    keys: set[str] = set()
    for klass in cls.__mro__:
        keys |= _keys(klass.__dict__.get("BINDINGS"))
    return keys


def _everywhere() -> set[str]:
    from zsn.tui.app import ZsnApp
    from zsn.tui.screens.form import FormScreen
    from zsn.tui.screens.plan import PlanScreen
    from zsn.tui.widgets.table import LiveTable

    keys = _bound(ZsnApp) | _bound(LiveTable) | _bound(Screen) | _bound(FormScreen)
    return keys | _bound(PlanScreen) | {ZsnApp.COMMAND_PALETTE_BINDING}


def _every_screen() -> set[str]:
    import importlib
    import pkgutil

    import zsn.tui.screens

    for module in pkgutil.iter_modules(zsn.tui.screens.__path__):
        importlib.import_module(f"zsn.tui.screens.{module.name}")
    keys: set[str] = set()
    pending: list[type[Screen[object]]] = [Screen]
    while pending:
        screen = pending.pop()
        if screen.__module__.startswith("zsn."):
            keys |= _bound(screen)
        pending.extend(screen.__subclasses__())
    return keys


def _kbd(text: str) -> list[str]:
    return [KEY_NAMES.get(key, key) for key in re.findall(r"<kbd>([^<]+)</kbd>", text)]


def _section(text: str, title: str) -> str | None:
    """The text under ``### TITLE`` up to the next heading of any level."""
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#)", text + "\n#",
                      re.MULTILINE | re.DOTALL)
    return match.group(1) if match else None


def _table_keys(section: str) -> set[str]:
    rows = [line for line in section.splitlines() if line.startswith("| <kbd>")]
    return {key for row in rows for key in _kbd(row.split("|")[1])}


@pytest.mark.parametrize("domain", domains(), ids=lambda domain: domain.name)
def test_the_front_page_lists_every_key_of_each_pane(domain: Domain) -> None:
    section = _section(_text(README), domain.title)
    assert section is not None
    documented = _table_keys(section)
    pane_keys = _bound(load(domain.pane))
    assert pane_keys <= documented, f"{domain.title}: undocumented {pane_keys - documented}"
    strays = documented - pane_keys - _everywhere()
    assert not strays, f"{domain.title}: not bound {strays}"


def test_the_front_page_lists_the_keys_that_work_everywhere() -> None:
    from zsn.tui.app import ZsnApp
    from zsn.tui.widgets.table import LiveTable

    section = _section(_text(README), "Everywhere")
    assert section is not None
    documented = _table_keys(section)
    numbers = {str(number) for number in range(1, 10)}
    expected = (_keys(ZsnApp.BINDINGS) - numbers) | _keys(LiveTable.BINDINGS)
    assert expected <= documented, f"undocumented {expected - documented}"
    assert documented & numbers
    strays = documented - _everywhere()
    assert not strays, f"not bound everywhere: {strays}"


@pytest.mark.parametrize("page", _pages(), ids=_page_id)
def test_every_key_in_the_docs_is_bound(page: Path) -> None:
    text = _text(page)
    own = next((domain for domain in domains() if page == DOCS / f"{domain.name}.md"), None)
    panes = [own] if own else domains()
    bound = _everywhere() | _every_screen()
    for domain in panes:
        bound |= _bound(load(domain.pane))
    strays = {key for key in _kbd(text) if key not in bound and key != "…"}
    assert not strays, f"{_page_id(page)}: {sorted(strays)} bound nowhere"


# --- metrics and lint ids -------------------------------------------------------------


def test_the_metrics_table_is_every_metric_zsn_writes() -> None:
    written = {family.name: family.kind for domain in domains()
               for family in load(domain.export).prometheus({})}
    text = export.to_prometheus(export.ExportResult({d.name: {} for d in domains()}, []))
    written |= dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    rows = re.findall(r"^\| `((?:zsn|wireguard|zfs|smartctl)_\w+)` \| (\w+) \|",
                      _text(DOCS / "metrics.md"), re.MULTILINE)
    documented = dict(rows)
    assert len(rows) == len(documented), "a metric listed twice"
    assert documented == written


@pytest.mark.parametrize("domain", domains(), ids=lambda domain: domain.name)
def test_every_lint_id_is_on_its_domain_page(domain: Domain) -> None:
    rules = set(load(domain.lint).RULES)
    text = _text(DOCS / f"{domain.name}.md")
    prefix = re.match(r"[A-Z]+", next(iter(rules)))
    assert prefix
    documented = set(re.findall(rf"`({prefix.group()}\d+)`", text))
    assert documented == rules


def test_documented_keys_use_one_spelling() -> None:
    """A key written as code (`x`) instead of <kbd>x</kbd> would escape the checks above."""
    for page in _pages():
        text = _text(page)
        for sentence in itertools.chain(re.findall(r"Keys?:[^\n]*", text)):
            assert not re.search(r"`[a-zA-Z]`", sentence), f"{_page_id(page)}: {sentence}"


def _words(text: str) -> set[str]:
    """The words of a description, each cut to its first four letters (scan/scans,
    disable/disabled), small words left out."""
    return {word[:4] for word in re.findall(r"[a-z]+", text.lower()) if len(word) > 2}


@pytest.mark.parametrize("domain", domains(), ids=lambda domain: domain.name)
def test_what_the_front_page_says_a_key_does_is_what_it_does(domain: Domain) -> None:
    """A key's row says what its binding does: a word of the binding's own description
    or action is in the row (a row that named another action, or an old one, fails)."""
    section = _section(_text(README), domain.title)
    assert section is not None
    pane = load(domain.pane)
    bindings = {key.strip(): binding for klass in reversed(pane.__mro__)
                for binding in klass.__dict__.get("BINDINGS", [])
                if isinstance(binding, Binding) for key in binding.key.split(",")}
    wrong = []
    for row in (line for line in section.splitlines() if line.startswith("| <kbd>")):
        cells = row.split("|")
        claim = _words(cells[2])
        for key in _kbd(cells[1]):
            binding = bindings.get(key)
            if binding is None:
                continue  # a key of every pane (checked with LiveTable's and the app's)
            does = _words(f"{binding.description} {binding.action} {binding.tooltip}")
            if not claim & does:
                wrong.append(f"{key}: README says {cells[2].strip()!r}, the key does "
                             f"{binding.description!r} ({binding.action})")
    assert not wrong, f"{domain.title}: " + "; ".join(wrong)
