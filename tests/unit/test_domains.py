"""The domain contract: every registered domain has all four faces, the faces are found
through the registry alone, and a new domain is one package plus one registry line."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import zsn
from zsn import cli, domains
from zsn.domains import Domain, load
from zsn.exporter import document as export

PACKAGE_ROOT = Path(zsn.__file__).parent


def test_every_registered_domain_has_all_four_faces() -> None:
    from zsn.tui.panes.base import LivePane

    rule_ids: set[str] = set()
    for domain in domains.domains():
        provider = load(domain.export)
        for name in ("present", "collect", "prometheus"):
            assert callable(getattr(provider, name)), f"{domain.name}: export has no {name}"
        assert domain.commands, f"{domain.name} has no headless command group"
        for group in domain.commands:
            faces = load(group.module)
            parser = argparse.ArgumentParser()
            faces.add_arguments(parser)
            assert callable(faces.run)
            assert "--dry-run" in _all_options(parser), f"{group.name}: no --dry-run anywhere"
        assert issubclass(load(domain.pane), LivePane)
        rules = load(domain.lint)
        assert callable(rules.lint) and isinstance(rules.SUBJECT, str)
        assert rules.RULES and not rule_ids & set(rules.RULES), f"{domain.name}: rule ids"
        rule_ids |= set(rules.RULES)


def _all_options(parser: argparse.ArgumentParser) -> set[str]:
    options = {option for action in parser._actions for option in action.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                options |= _all_options(sub)
    return options


def test_cli_export_and_app_name_no_domain() -> None:
    names = set()
    for domain in domains.domains():
        names |= {domain.name, domain.title.lower()}
        names |= {group.name for group in domain.commands}
    for module in ("cli.py", "exporter/document.py", "tui/app.py", "exporter/serve.py",
                   "exporter/collectors.py"):
        words = set(re.findall(r"[a-z]+", (PACKAGE_ROOT / module).read_text().lower()))
        assert not names & words, f"{module} names {sorted(names & words)}"


def test_help_lists_every_group_and_each_group_its_commands(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    for group in domains.command_groups().values():
        assert re.search(rf"^  {group.name} +{re.escape(group.help[:30])}", top, re.M)
        with pytest.raises(SystemExit) as exited:
            cli.main([group.name, "--help"])
        assert exited.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith(f"usage: zsn {group.name} ")
        assert "exit status of a command" in text
    assert "sections for --export: " + ", ".join(export.sections()) in top


def test_headless_commands_never_import_textual_or_rich(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys, zsn.cli, zsn.domains
        for group in zsn.domains.command_groups():
            try:
                zsn.cli.main(['--root', {str(tmp_path)!r}, group, '--help'])
            except SystemExit:
                pass
        leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))
        print('LEAKED', leaked, file=sys.stderr)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=False)
    assert "LEAKED []" in result.stderr, result.stderr[-2000:]


# A domain added from outside the tree: one package, one registry line ----------------

DEMO_PACKAGE = {
    "__init__.py": '''
        from zsn.domains import CommandGroup, Domain

        DOMAIN = Domain(
            name="demo", title="Demo", export="zsn_demo.export",
            commands=(CommandGroup("demo", "greet somebody", "zsn_demo.cli",
                                   "demo greet NAME"),),
            pane="zsn_demo.pane:DemoPane", lint="zsn_demo.lint")
    ''',
    "export.py": '''
        from zsn.exporter.prometheus import MetricFamily

        def present(host):
            return host.path("/etc/demo").is_dir()

        def collect(host, *, include_secrets=False):
            return {"greetings": sorted(p.name for p in host.path("/etc/demo").iterdir())}

        def prometheus(data):
            family = MetricFamily("zsn_demo_greetings", "gauge", "Greetings on file.")
            family.add({}, len(data["greetings"]))
            return [family]
    ''',
    "cli.py": '''
        from zsn.headless import add_dry_run, apply_or_show
        from zsn.meaning import OwnFile
        from zsn.plan import FileEdit, Plan

        def add_arguments(parser):
            actions = parser.add_subparsers(dest="action", required=True)
            greet = actions.add_parser("greet", help="write a greeting")
            greet.add_argument("name")
            add_dry_run(greet)

        def run(args, host):
            path = host.path(f"/etc/demo/{args.name}")
            edit = FileEdit(path, None, "hi\\n", intent=OwnFile("the demo's greetings"))
            return apply_or_show(host, Plan(f"greet {args.name}", [edit]), args.dry_run)
    ''',
    "lint.py": '''
        from zsn.lint import Finding

        SUBJECT = "greeting"
        RULES = {"DEMO001": "greeting is empty"}

        def lint(host):
            return [Finding("DEMO001", "warning", p.name, "empty", "write something")
                    for p in host.path("/etc/demo").iterdir() if not p.read_text()]
    ''',
    "pane.py": '''
        from textual.widgets import Static

        from zsn.tui.panes.base import LivePane

        class DemoPane(LivePane):
            def compose(self):
                yield Static("", classes="pane-status")
                yield Static("demo pane", id="demo-body")

            def fetch(self):
                return sorted(p.name for p in self.host.path("/etc/demo").iterdir())

            def show(self, snapshot):
                self.query_one("#demo-body", Static).update(", ".join(snapshot))
    ''',
}


@pytest.fixture
def demo_domain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    package = tmp_path / "src" / "zsn_demo"
    package.mkdir(parents=True)
    for name, source in DEMO_PACKAGE.items():
        (package / name).write_text(textwrap.dedent(source).lstrip())
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setattr(domains, "REGISTRY", (*domains.REGISTRY, "zsn_demo"))
    root = tmp_path / "root"
    (root / "etc/demo").mkdir(parents=True)
    yield root
    for module in [m for m in sys.modules if m.startswith("zsn_demo")]:
        del sys.modules[module]


def test_a_new_domain_is_one_package_and_one_registry_line(
        demo_domain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(demo_domain)
    assert isinstance(domains.domain("demo"), Domain)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert re.search(r"^  demo +greet somebody", capsys.readouterr().out, re.M)

    assert cli.main(["--root", root, "demo", "greet", "alice", "--dry-run"]) == 0
    assert "Plan: greet alice" in capsys.readouterr().out
    assert not (demo_domain / "etc/demo/alice").exists()
    assert cli.main(["--root", root, "demo", "greet", "alice"]) == 0
    assert (demo_domain / "etc/demo/alice").read_text() == "hi\n"

    assert cli.main(["--root", root, "--export", "demo"]) == 0
    assert json.loads(capsys.readouterr().out)["demo"] == {"greetings": ["alice"]}
    assert cli.main(["--root", root, "--export", "--format", "prometheus"]) == 0
    metrics = capsys.readouterr().out
    assert "zsn_demo_greetings 1" in metrics
    assert 'zsn_collector_success{collector="demo"} 1' in metrics


async def test_a_new_domain_gets_its_tab_and_number_key(demo_domain: Path) -> None:
    from textual.widgets import Static

    from tests.pilot import screen_text, wait_until
    from zsn.system.host import Host
    from zsn.tui.app import PaneSwitcher, ZsnApp

    (demo_domain / "etc/demo/bob").write_text("hi\n")
    app = ZsnApp(Host(demo_domain))
    number = str(len(domains.REGISTRY))
    async with app.run_test(size=(80, 24)) as pilot:
        tabs = app.query_one("#panes", PaneSwitcher)
        await wait_until(pilot, lambda: bool(app.query("#demo-body")))
        assert f" {number} Demo " in screen_text(app)[0]
        await pilot.press(number)
        await wait_until(pilot, lambda: tabs.active == "tab-demo", "the demo tab")
        await wait_until(pilot, lambda: "bob" in str(
            app.query_one("#demo-body", Static).render()), "the demo pane's read")


def test_declaring_the_domains_loads_none_of_their_faces() -> None:
    # `zsn --export SECTION` and a headless command pay only for the faces they use.
    code = textwrap.dedent("""
        import sys, zsn.domains
        declared = zsn.domains.domains()
        faces = [d.export for d in declared] + [d.lint for d in declared] + [
            g.module.split(":")[0] for d in declared for g in d.commands] + [
            d.pane.split(":")[0] for d in declared]
        print("LOADED", sorted(set(faces) & set(sys.modules)))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert "LOADED []" in result.stdout


def test_pollers_and_per_poll_hooks_follow_the_contract() -> None:
    """A section kept warm by `zsn serve` has a Poller with poll/section/close; a domain
    with a per-poll hook has one (the hook gets its snapshots)."""
    for domain in domains.domains():
        provider = load(domain.export)
        poller = getattr(provider, "Poller", None)
        if domain.on_poll:
            assert poller is not None, f"{domain.name}: on_poll without a Poller"
            assert callable(load(domain.on_poll))
        if poller is not None:
            for name in ("poll", "section", "close"):
                assert callable(getattr(poller, name)), f"{domain.name}: Poller.{name}"
