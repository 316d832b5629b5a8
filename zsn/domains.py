"""The domains zsn knows, and the contract each one fills in.

A domain is a package whose ``__init__`` declares ``DOMAIN = Domain(...)``, plus one
line in `REGISTRY`. Everything the faces need is named by module path, so nothing
loads until it is used: `zsn --export wlan` imports WLAN's export module and no
other domain's, `zsn link ...` imports the links command module, and the TUI imports
a pane's module when its tab is made. `cli.py`, `exporter/document.py` and `tui/app.py` read
this registry and name no domain themselves.

The faces, each a module path:

- ``export``: ``present(host) -> bool``, ``collect(host, *, include_secrets) -> dict``
  (JSON-ready, with an ``"errors"`` list when only part could be read),
  ``prometheus(data) -> list[MetricFamily]``, optionally ``begin_sampling(host)``
  (rates from two readings; see `zsn.exporter.document`) and optionally a ``Poller`` class for
  long-running processes (see `zsn.exporter.collectors`): ``Poller(host)`` keeps the section's
  readers warm, ``poll()`` reads the live state (what the ``live`` reader returns,
  where the domain has one), ``section(snapshot) -> dict`` is what ``collect`` would
  return from it (never with secrets), ``close()`` stops what it runs. A section
  without one is collected afresh each time. The section is named `Domain.name`.
- ``commands``: headless command groups (``zsn GROUP ...``); each group's module has
  ``add_arguments(parser)`` (its sub-commands) and ``run(args, host) -> int``.
- ``pane``: ``"module:Class"``, a `zsn.tui.panes.base.LivePane` shown as a tab.
- ``lint``: a module with ``RULES``, ``SUBJECT`` and ``lint(host)`` (see `zsn.lint`).
- ``live`` (optional): ``"module:function"``, ``function(host)`` returning the snapshot
  the pane shows, without Textual. For the first pane, `zsn.tui.startup` runs it
  while Textual loads, so the first frame already has the rows.
- ``desired`` (optional): a module, the domain's section of the desired-state file
  (`zsn.desired`, ``zsn apply``): ``SECTION`` (the dataclass the section decodes into,
  its checks in ``__post_init__``), ``ORDER`` (sections are planned by it, lowest
  first: links before what runs over them), ``describe(host) -> (dict, errors)`` (the
  section as the machine has it now: what ``zsn state export`` writes, and what, applied,
  plans nothing) and ``plans(host, section) -> Iterator[Plan]`` (the domain's own plans
  that make the machine so; each one is built on the files the ones before it write,
  and none is yielded that changes nothing).
- ``on_poll`` (optional): ``"module:function"``, ``function(host, snapshot)``, what a
  long-running zsn process does with each live reading besides showing or exporting
  it (e.g. keep a history). `snapshot` is what the export ``Poller.poll()`` returns (a
  domain with this hook has a Poller). `zsn serve` calls it from the section's
  collector thread after every poll, once the scrape waiting for that poll has its
  reading, and polls such a section every ``--poll-interval`` even when nobody
  scrapes; an exception it raises is logged and polling goes on.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

if TYPE_CHECKING:
    from zsn.exporter.prometheus import MetricFamily
    from zsn.lint import Finding
    from zsn.plan import Plan
    from zsn.system.host import Host

REGISTRY: tuple[str, ...] = (
    "zsn.wireguard",
    "zsn.openvpn",
    "zsn.zfs",
    "zsn.wlan",
    "zsn.links",
)
"""Domain packages in tab and section order."""


# NamedTuples, not frozen dataclasses: made at every start, and a frozen dataclass
# class costs ~0.3 ms to create (a NamedTuple a sixth of it).
class CommandGroup(NamedTuple):
    """One headless command group: ``zsn NAME ...``."""

    name: str
    """The first word on the command line: ``zsn NAME ...``."""
    help: str
    """One line for `zsn --help`."""
    module: str
    """Has ``add_arguments(parser)`` and ``run(args, host) -> int``."""
    usage: str = ""
    """A synopsis line for `zsn --help`, e.g. ``peer add|remove IFACE NAME ...``."""


class Domain(NamedTuple):
    """A domain's faces, each named by module path (see the module docstring)."""

    name: str
    """The export section's name and the pane's id: lower case, no spaces."""
    title: str
    """The tab's title."""
    export: str
    commands: tuple[CommandGroup, ...]
    pane: str
    lint: str
    live: str = ""
    on_poll: str = ""
    desired: str = ""


class HeadlessGroup(NamedTuple):
    """A command group defined inside a module that holds several (``module:attribute``)."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Host], int]


class ExportFace(Protocol):
    """A domain's export module (its optional faces are looked up by name)."""

    def present(self, host: Host) -> bool: ...

    def collect(self, host: Host, *, include_secrets: bool = False) -> dict[str, Any]: ...

    def prometheus(self, data: dict[str, Any]) -> list[MetricFamily]: ...


class CommandFace(Protocol):
    """A command group's module (or a `HeadlessGroup`)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, host: Host) -> int: ...


class LintFace(Protocol):
    """A domain's lint module (see `zsn.lint`)."""

    @property
    def RULES(self) -> Mapping[str, str]:
        """Rule id -> what it finds."""

    @property
    def SUBJECT(self) -> str:
        """What a finding's subject is (``interface``, ``unit`` ...), for JSON keys."""

    def lint(self, host: Host) -> list[Finding]: ...


class DesiredFace(Protocol):
    """A domain's section of the desired-state file (see the module docstring)."""

    @property
    def SECTION(self) -> type[Any]:
        """The dataclass the section decodes into."""

    @property
    def ORDER(self) -> int:
        """Sections are planned lowest first."""

    def describe(self, host: Host) -> tuple[dict[str, Any], list[str]]:
        """The section as the machine has it now, and what could not be read."""

    def plans(self, host: Host, section: Any) -> Iterator[Plan]:
        """The plans that make the machine as `section` says, in order."""


LiveReader = Callable[["Host"], object]
"""A domain's ``live`` face: the pane's snapshot, read without Textual."""


def load(path: str) -> Any:
    """The object at ``"package.module:attribute"``, or the module for ``"package.module"``."""
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


# The faces, loaded by path, as the contract's types: the domains' modules are checked
# against these Protocols statically in tests/unit/test_faces.py.
def export_face(domain: Domain) -> ExportFace:
    return cast(ExportFace, load(domain.export))


def command_face(group: CommandGroup) -> CommandFace:
    return cast(CommandFace, load(group.module))


def lint_face(domain: Domain) -> LintFace:
    return cast(LintFace, load(domain.lint))


def desired_face(domain: Domain) -> DesiredFace | None:
    return cast(DesiredFace, load(domain.desired)) if domain.desired else None


def live_reader(domain: Domain) -> LiveReader | None:
    return cast(LiveReader, load(domain.live)) if domain.live else None


@cache
def _declared(package: str) -> Domain:
    domain = importlib.import_module(package).DOMAIN
    if not isinstance(domain, Domain):
        raise TypeError(f"{package}.DOMAIN is not a zsn.domains.Domain")
    return domain


def domains() -> list[Domain]:
    """Every registered domain, in registry order."""
    return [_declared(package) for package in REGISTRY]


def domain(name: str) -> Domain:
    """The domain whose section/pane is `name`; `KeyError` when there is none."""
    for candidate in domains():
        if candidate.name == name:
            return candidate
    raise KeyError(name)


CHANGE_GROUPS: tuple[CommandGroup, ...] = (
    CommandGroup("confirm", "keep a change made with --try (before its deadline)",
                 "zsn.tries.cli:confirm", "confirm [ID]"),
    CommandGroup("pending", "changes made with --try that wait for confirm or rollback",
                 "zsn.tries.cli:pending", "pending [--all] [--json]"),
    CommandGroup("rollback", "undo a change made with --try now",
                 "zsn.tries.cli:rollback", "rollback [ID]"),
)
"""Every domain's live changes can be tried: these groups are no domain's."""


DESIRED_GROUPS: tuple[CommandGroup, ...] = (
    CommandGroup("apply", "make this machine as a desired-state file says (one plan; "
                 "--dry-run, --diff, --try)", "zsn.desired.cli:apply",
                 "apply FILE|- [--dry-run] [--diff] [--try SECONDS] [--json]"),
    CommandGroup("state", "write the desired-state file that describes this machine now",
                 "zsn.desired.cli:state", "state export [SECTION ...] [--json]"),
)
"""The desired state spans the domains (each one's ``desired`` face): no domain's."""


def command_groups() -> dict[str, CommandGroup]:
    """Every headless command group by its first word: the domains' in registry order,
    then those of tried changes and of the desired state."""
    groups = {group.name: group for each in domains() for group in each.commands}
    groups.update((group.name, group) for group in (*CHANGE_GROUPS, *DESIRED_GROUPS))
    return groups
