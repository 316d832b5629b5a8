"""The persistent network config: which system owns it, what it defines, and edits.

Owners, in the order zsn looks for them (reference: links.md "Who owns the config"):
NetworkManager (running, and managing a device involved: zsn writes nothing and shows
nmcli commands), netplan (``/etc/netplan/*.yaml``, also ``/lib`` and ``/run``),
systemd-networkd (``/etc/systemd/network``), ifupdown (``/etc/network/interfaces``
and what it sources), netctl (``/etc/netctl``).

Every backend reads its files into `LinkConfig`s (lint compares them with the live
links: what a reboot would change) and turns `Upsert`/`Remove` changes into
`FileEdit`s that keep every unrelated byte of existing files. This package's own
module holds what the backends share; `zsn.links.persist.owner` finds the owner and
hands reading and persisting to its backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from zsn.errors import AccessDeniedError, ZsnError
from zsn.links import values as link_values
from zsn.links.bonding import DEFAULT_MIIMON, HASHED_MODES
from zsn.links.model import Interface
from zsn.meaning import Intent, ValueType
from zsn.plan import FileEdit
from zsn.system import files
from zsn.system.files import FileSnapshot, describe_os_error
from zsn.system.host import Host

CONFIG_FIELDS = ("members", "parent", "vlan_id", "mtu", "mode", "miimon",
                 "xmit_hash_policy", "lacp_rate", "stp")


@dataclass(frozen=True)
class LinkConfig:
    """A bond, VLAN or bridge as a config system defines it; ``None`` = not set there."""

    name: str
    kind: str
    """bond, vlan or bridge."""
    members: tuple[str, ...] = ()
    """A bond's members or a bridge's ports."""
    parent: str | None = None
    vlan_id: int | None = None
    mtu: int | None = None
    mode: str | None = None
    miimon: int | None = None
    xmit_hash_policy: str | None = None
    lacp_rate: str | None = None
    stp: bool | None = None
    source: str = field(default="", compare=False)
    """Where it is defined (a file), for messages."""

    def bond_settings(self) -> list[tuple[str, str]]:
        """A bond's mode, miimon (the kernel's default when unset) and the hash policy
        and LACP rate it sets, as (name, value), in the order every tool writes them."""
        settings = [("mode", self.mode or "balance-rr"),
                    ("miimon", str(self.miimon if self.miimon is not None else DEFAULT_MIIMON))]
        if self.xmit_hash_policy:
            settings.append(("xmit_hash_policy", self.xmit_hash_policy))
        if self.lacp_rate:
            settings.append(("lacp_rate", self.lacp_rate))
        return settings

    def describe(self) -> str:
        parts = [self.kind]
        if self.mode:
            parts.append(self.mode)
        if self.members:
            parts.append(("ports " if self.kind == "bridge" else "members ")
                         + ",".join(self.members))
        if self.parent:
            parts.append(f"on {self.parent} id {self.vlan_id}")
        if self.mtu:
            parts.append(f"mtu {self.mtu}")
        return " ".join(parts)


@dataclass(frozen=True)
class Upsert:
    """Define `config`; where it is defined already, change only `fields`."""

    config: LinkConfig
    fields: frozenset[str] = frozenset(CONFIG_FIELDS)
    before: LinkConfig | None = None
    """The link as it was live before the change (None: it is new); NetworkManager's
    profiles are not read, so its commands are worked out from this."""

    @property
    def name(self) -> str:
        return self.config.name


@dataclass(frozen=True)
class Remove:
    name: str
    before: LinkConfig | None = None
    """The live link it removes (for NetworkManager's commands: its ports' profiles)."""


Change = Upsert | Remove


@dataclass(frozen=True)
class Unread:
    """Something in a config file zsn does not understand: reported (lint names the
    file and line), never silently dropped."""

    path: str
    line: int | None
    """1-based, when it is about one line."""
    message: str
    kind: str
    """What kind of thing it is (``bash-code``, ``unknown-key`` ...): the same kind is
    refused the same way everywhere."""
    blocking: bool = True
    """It may define or change a link zsn edits: persisting refuses until it is fixed."""
    names: tuple[str, ...] = ()
    """The interfaces it is about, when known; none: it could be about any."""

    def concerns(self, involved: Iterable[str]) -> bool:
        return self.blocking and (not self.names or bool(set(self.names) & set(involved)))

    def describe(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Device:
    """A definition of a kind zsn does not edit (an ethernet, a tunnel, a Wi-Fi ...):
    known, so that zsn neither declares it again nor edits it as something else."""

    name: str
    kind: str
    source: str


@dataclass
class Persisted:
    """What a config system defines: bonds, VLANs and bridges by name."""

    configs: dict[str, LinkConfig] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """Files that could not be read or parsed (each a one-line reason)."""
    denied: list[str] = field(default_factory=list)
    """The reads refused by the system (also in `problems`): a headless command run
    without the rights says so instead of reporting what it could read."""
    devices: dict[str, Device] = field(default_factory=dict)
    unread: list[Unread] = field(default_factory=list)
    dialect: str = ""
    """The implementation whose syntax the files are read (and written) in, when the
    system has more than one (ifupdown, ifupdown2, ifupdown-ng; netplan's version)."""

    def blocking(self, involved: Iterable[str]) -> list[Unread]:
        """What stops a change to the `involved` links from being planned."""
        return [item for item in self.unread if item.concerns(involved)]


@dataclass
class PersistPlan:
    owner: str
    edits: list[FileEdit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """NetworkManager: the nmcli commands to run instead of files."""


class Backend(Protocol):
    name: str

    def read(self, host: Host) -> Persisted: ...

    def plan(self, host: Host, changes: list[Change], current: Persisted) -> PersistPlan: ...


def config_of(interface: Interface, interfaces: tuple[Interface, ...]) -> LinkConfig:
    """A live link as a `LinkConfig` (what persisting it writes, what lint compares)."""
    members = tuple(i.name for i in interfaces if i.master == interface.name)
    bond = interface.bond
    return LinkConfig(
        name=interface.name, kind=interface.kind, members=members, parent=interface.parent,
        vlan_id=interface.vlan_id, mtu=interface.mtu,
        mode=bond.mode if bond else None, miimon=bond.miimon if bond else None,
        xmit_hash_policy=bond.xmit_hash_policy if bond and bond.mode in HASHED_MODES
        else None,
        lacp_rate=bond.lacp_rate if bond and bond.mode == "802.3ad" else None,
        stp=interface.stp)


class FileBackend:
    """A config system whose files zsn reads itself: `read` runs the backend's
    `_collect`; a file it cannot read or parse becomes a problem, so lint reports it
    and persisting refuses, instead of failing the whole read."""

    def read(self, host: Host) -> Persisted:
        persisted = Persisted()
        try:
            self._collect(host, persisted)
        except ZsnError as exc:
            persisted.problems.append(str(exc))
            if isinstance(exc, AccessDeniedError):
                persisted.denied.append(str(exc))
        except OSError as exc:  # a folder zsn may not list
            persisted.problems.append(f"{exc.filename or host.root}: {exc.strerror or exc}")
            if isinstance(exc, PermissionError):
                persisted.denied.append(describe_os_error(exc))
        return persisted

    def _collect(self, host: Host, persisted: Persisted) -> None:
        raise NotImplementedError


class EditedFile(Protocol):
    """A config file as a backend holds it while planning."""

    path: str
    """As on the system (the host's root is added when the edit is made)."""
    snapshot: FileSnapshot | None
    """What it held when read; None for a new file."""
    removed: bool

    @property
    def text(self) -> str: ...

    @property
    def intent(self) -> Intent:
        """What the edits mean (`zsn.meaning`): read back before anything is written."""
        ...


def file_edits(host: Host, entries: Iterable[EditedFile]) -> list[FileEdit]:
    """The plan steps for the files a backend changed, created or removed."""
    edits = []
    for entry in entries:
        if entry.removed:
            if entry.snapshot is not None:
                edits.append(FileEdit(host.path(entry.path), entry.snapshot, "", remove=True,
                                      intent=None))
        elif entry.snapshot is None or entry.text != entry.snapshot.text:
            edits.append(FileEdit(host.path(entry.path), entry.snapshot, entry.text,
                                  new_dir=entry.snapshot is None, intent=entry.intent))
    return edits


def in_order(changes: list[Change], current: Persisted) -> Iterator[
        tuple[Change, LinkConfig | None, LinkConfig | None]]:
    """Each change with the link's config before it and after it (None once removed),
    each change seeing what the ones before it did."""
    configs = dict(current.configs)
    for change in changes:
        if isinstance(change, Remove):
            yield change, configs.pop(change.name, None), None
        else:
            old = configs.get(change.name)
            checked(change.config, change.fields if old is not None
                    else frozenset(CONFIG_FIELDS))
            new = configs[change.name] = merged(old, change)
            yield change, old, new


def checked(config: LinkConfig, fields: frozenset[str] = frozenset(CONFIG_FIELDS)
            ) -> LinkConfig:
    """`config` if every value of `fields` in it (and its name) is one the config
    systems and the kernel take (`zsn.links.values`): what a backend writes, it writes
    from these. What a file already says and the change leaves alone stays as it is."""
    values: list[tuple[str, ValueType, object]] = [
        ("name", link_values.LINK, config.name), ("parent", link_values.LINK, config.parent),
        ("vlan_id", link_values.VLAN_ID, config.vlan_id), ("mtu", link_values.MTU, config.mtu),
        ("mode", link_values.BOND_MODE, config.mode),
        ("miimon", link_values.MIIMON, config.miimon),
        ("xmit_hash_policy", link_values.HASH_POLICY, config.xmit_hash_policy),
        ("lacp_rate", link_values.LACP_RATE, config.lacp_rate),
        *(("members", link_values.LINK, member) for member in config.members)]
    for what, type_, value in values:
        if value is not None and (what == "name" or what in fields):
            type_.text(what, str(value))
    return config


def merged(old: LinkConfig | None, change: Upsert) -> LinkConfig:
    """The config after `change`: the whole new config, or the old one with `fields`."""
    if old is None:
        return change.config
    updates = {name: getattr(change.config, name) for name in change.fields}
    return replace(old, **updates)


NETPLAN_DIRS = ("/lib/netplan", "/etc/netplan", "/run/netplan")
"""In increasing precedence for files of the same name."""


def netplan_yaml(host: Host, directory: str) -> list[Path]:
    """The files netplan reads in `directory`: its ``*.yaml``, matched as glob(3) matches
    (libnetplan's find_yaml_glob), so a hidden one (``.#01-netcfg.yaml``, Emacs' lock
    while the file is being edited; a copy set aside) is none of them."""
    return [path for path in files.list_files(host.path(directory), "*.yaml")
            if not path.name.startswith(".")]
NETWORKD_DIR = "/etc/systemd/network"
NETWORKD_DIRS = (NETWORKD_DIR, "/run/systemd/network", "/usr/local/lib/systemd/network",
                 "/usr/lib/systemd/network", "/lib/systemd/network")
"""Where networkd reads .netdev and .network files, in decreasing precedence."""
NETWORKD_ENABLED = "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
IFUPDOWN_MAIN = "/etc/network/interfaces"
NETCTL_DIR = "/etc/netctl"


@dataclass(frozen=True)
class Owner:
    name: str
    """networkmanager, netplan, networkd, ifupdown, netctl, or none."""
    reason: str
    managed: tuple[str, ...] = ()
    """NetworkManager: the involved devices it manages."""
