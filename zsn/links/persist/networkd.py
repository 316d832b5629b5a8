"""systemd-networkd: ``.netdev`` files create bonds, VLANs and bridges; ``.network`` files
attach members (``Bond=``, ``Bridge=``) and VLANs (``VLAN=``) and set the MTU.

Read as networkd reads them (systemd.network(5), src/basic/conf-files.c):

- files come from ``/etc/systemd/network``, ``/run/systemd/network``,
  ``/usr/local/lib/systemd/network``, ``/usr/lib/systemd/network`` and
  ``/lib/systemd/network``, in that precedence: a file name found in an earlier
  folder hides the same name in later ones, and a file that is empty or a link to
  ``/dev/null`` masks that name (it is read as nothing);
- each file's drop-ins (``NAME.d/*.conf`` in all those folders, the same rules per
  drop-in name) are read after it, sorted by file name, so the last assignment of a
  key in the main file or any drop-in wins;
- ``.network`` files are tried in lexical order of their names and the first whose
  ``[Match]`` fits the link is used; ``[Link] MTUBytes=`` there is applied after the
  netdev's ``[NetDev] MTUBytes=``;
- what networkd ignores zsn ignores too, and says so: hidden files (``.NAME``), a
  ``.network`` whose ``[Match]`` has no valid setting (only comments, no section, an
  empty ``Name=``: since systemd v246 such a file matches nothing, before it matched
  every link; src/network/networkd-network.c, network_verify), a ``.netdev`` without a
  valid ``Name=`` or ``Kind=`` (netdev_load_one).

An edit lands where it takes effect: the file (main or drop-in) whose assignment wins,
when it is under ``/etc/systemd/network``; otherwise a zsn drop-in there that sorts
after every other (``NAME.d/zsn.conf``). The plan notes say which file wins. New
netdevs go into ``30-zsn-NAME.netdev``; a link whose ``.network`` cannot carry the
change gets ``10-zsn-NAME.network``, which sorts before the usual ones (and the plan
says when it takes a link over from a wildcard match). There is no offline validator
for networkd before systemd v254 (systemd issue #31984).
"""

from __future__ import annotations

import fnmatch
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from zsn import values
from zsn.errors import ValidationError, ZsnError
from zsn.formats.unitfile import Assignment, Schema, UnitFile, list_values
from zsn.links import bonding
from zsn.links import values as link_values
from zsn.links.persist import (
    NETWORKD_DIR,
    NETWORKD_DIRS,
    Device,
    FileBackend,
    LinkConfig,
    Persisted,
    PersistPlan,
    Remove,
    Unread,
    Upsert,
    file_edits,
    in_order,
)
from zsn.meaning import Intent
from zsn.system import files
from zsn.system.host import Host
from zsn.system.packages import package_version

DIRS = NETWORKD_DIRS
EDITABLE = NETWORKD_DIR
KINDS = ("bond", "vlan", "bridge")
OWN_DROP_IN = "zsn.conf"
_GLOB_CHARS = set("*?[")
_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMG]?)")
_TIME_UNITS = {"us": 0.001, "usec": 0.001, "ms": 1, "msec": 1, "s": 1000, "sec": 1000,
               "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000,
               "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hr": 3_600_000,
               "hour": 3_600_000, "hours": 3_600_000}
_TIME_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)")
T = TypeVar("T")
SCHEMA: Schema = {
    ("Match", "Name"): link_values.LINKS,
    ("NetDev", "Name"): link_values.LINK,
    ("NetDev", "Kind"): values.one_of("bond", "vlan", "bridge"),
    ("NetDev", "MTUBytes"): link_values.MTU,
    ("Link", "MTUBytes"): link_values.MTU,
    ("Bond", "Mode"): link_values.BOND_MODE,
    ("Bond", "MIIMonitorSec"): values.pattern("milliseconds (100ms)", r"[0-9]{1,10}ms"),
    ("Bond", "TransmitHashPolicy"): link_values.HASH_POLICY,
    ("Bond", "LACPTransmitRate"): link_values.LACP_RATE,
    ("Bridge", "STP"): values.one_of("yes", "no"),
    ("VLAN", "Id"): link_values.VLAN_ID,
    ("Network", "Bond"): link_values.LINK,
    ("Network", "Bridge"): link_values.LINK,
    ("Network", "VLAN"): link_values.LINKS,
}
"""What zsn writes in .netdev and .network files, as networkd reads it
(systemd.netdev(5), systemd.network(5))."""
_TRUE = ("1", "yes", "y", "true", "t", "on")
_FALSE = ("0", "no", "n", "false", "f", "off")


@dataclass
class NetworkdFile:
    """One file networkd reads: a main file or a drop-in."""

    path: str
    snapshot: files.FileSnapshot | None
    unit: UnitFile
    removed: bool = False

    @property
    def text(self) -> str:
        return self.unit.text

    @property
    def intent(self) -> Intent:
        return self.unit.intent

    @property
    def editable(self) -> bool:
        return self.path.startswith(EDITABLE + "/")


@dataclass
class Unit:
    """A ``.netdev`` or ``.network`` as networkd sees it: its main file and drop-ins."""

    name: str
    """The file name (``10-bond0.netdev``): what sorts, shadows and names drop-ins."""
    main: NetworkdFile
    drop_ins: list[NetworkdFile] = field(default_factory=list)
    """Sorted by file name (the order networkd reads them in)."""
    drop_in_names: set[str] = field(default_factory=set)
    """Every drop-in name in any folder, masked ones too (a new one must sort after)."""
    ignored: str | None = None
    """Why networkd ignores the whole file (None: it reads it)."""

    @property
    def sources(self) -> list[NetworkdFile]:
        return [source for source in (self.main, *self.drop_ins) if not source.removed]

    @property
    def removed(self) -> bool:
        return self.main.removed

    def winner(self, section: str, key: str) -> tuple[NetworkdFile, Assignment] | None:
        """The file and line whose assignment of `key` networkd ends up with."""
        found = None
        for source in self.sources:
            assignments = source.unit.assignments(section, key)
            if assignments:
                found = (source, assignments[-1])
        return found

    def get(self, section: str, key: str) -> str | None:
        winner = self.winner(section, key)
        return winner[1].value if winner else None

    def values(self, section: str, key: str) -> list[str]:
        found: list[str] = []
        for source in self.sources:
            found = list_values(source.unit.assignments(section, key), found)
        return found

    def has_section(self, section: str) -> bool:
        return any(source.unit.has_section(section) for source in self.sources)

    def where(self, section: str, key: str) -> str:
        winner = self.winner(section, key)
        return f"{winner[0].path}:{winner[1].line + 1}" if winner else self.main.path


@dataclass
class Tree:
    netdevs: list[Unit] = field(default_factory=list)
    networks: list[Unit] = field(default_factory=list)
    """In lexical order of file name (networkd's matching order)."""
    masked: list[str] = field(default_factory=list)
    """Names masked by an empty file or a link to /dev/null (the masking path)."""

    def files(self) -> Iterator[NetworkdFile]:
        for unit in (*self.netdevs, *self.networks):
            yield unit.main
            yield from unit.drop_ins

    def netdev(self, name: str) -> Unit | None:
        for netdev in self.read_netdevs():
            if netdev.get("NetDev", "Name") == name:
                return netdev
        return None

    def read_netdevs(self) -> list[Unit]:
        """The .netdev files networkd reads (not removed, not ignored)."""
        return [unit for unit in self.netdevs if not unit.removed and unit.ignored is None]

    def read_networks(self) -> list[Unit]:
        """The .network files networkd reads, in its matching order."""
        return [unit for unit in self.networks if not unit.removed and unit.ignored is None]

    def network_for(self, name: str) -> Unit | None:
        """The .network file networkd would use for `name` (first match wins)."""
        for network in self.read_networks():
            if matches_name(network, name):
                return network
        return None


MATCH_KEYS = ("Name", "MACAddress", "PermanentMACAddress", "Path", "Driver", "Type", "Kind",
              "Property", "WLANInterfaceType", "SSID", "BSSID", "Host", "Virtualization",
              "KernelCommandLine", "KernelVersion", "Credential", "Architecture", "Firmware")
"""What networkd takes in [Match] (the last seven are conditions on the system)."""
EMPTY_MATCH_IGNORED_SINCE = (246,)
"""systemd v246 (commit dade7349) ignores a .network without a valid [Match] setting;
before, it matched every link."""


def valid_ifname(name: str, alternative: bool = False) -> bool:
    """systemd's ifname_valid_full: at most 15 bytes (127 for an alternative name, which
    [Match] Name= accepts), not ``.``/``..`` nor all digits, no control character,
    space, ``:``, ``/`` or ``%``."""
    encoded = name.encode(errors="surrogateescape")
    if not encoded or len(encoded) > (127 if alternative else 15) or name in (".", ".."):
        return False
    if name.isdigit():
        return False
    return all(32 < char != 127 and chr(char) not in ":/%" for char in encoded)


def match_names(network: Unit) -> list[str]:
    """[Match] Name= as networkd keeps it: an invalid name is dropped with a warning."""
    return [pattern for pattern in network.values("Match", "Name")
            if valid_ifname(pattern.removeprefix("!"), alternative=True)]


def ignored_network(network: Unit, version: tuple[int, ...] | None) -> str | None:
    """Why networkd ignores a .network file, if it does: no valid [Match] setting."""
    if version is not None and version < EMPTY_MATCH_IGNORED_SINCE:
        return None
    if match_names(network) or any(network.values("Match", key) for key in MATCH_KEYS[1:]):
        return None
    return ("its [Match] has no valid setting, so networkd ignores the whole file "
            "(Name=* would match every link)")


def ignored_netdev(netdev: Unit) -> str | None:
    """Why networkd ignores a .netdev file, if it does: no valid Name= or no Kind=."""
    name, kind = netdev.get("NetDev", "Name"), netdev.get("NetDev", "Kind")
    if not name or not valid_ifname(name):
        return (f"[NetDev] Name={name} is not an interface name" if name else
                "[NetDev] has no Name=") + ": networkd ignores the file"
    if not kind:
        return "[NetDev] has no Kind=: networkd ignores the file"
    return None


def matches_name(network: Unit, name: str) -> bool:
    """Whether the [Match] section's names fit `name` (a ``!`` list excludes; no
    Name= at all matches every link)."""
    patterns = match_names(network)
    if not patterns:
        return True
    if patterns[0].startswith("!"):
        return not any(fnmatch.fnmatchcase(name, p.lstrip("!")) for p in patterns)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def other_conditions(network: Unit) -> list[str]:
    """[Match] keys other than Name= that are set (MACAddress=, Type= ...): zsn cannot
    tell from a name whether they fit a link (an unknown key networkd skips)."""
    return [key for key in MATCH_KEYS[1:] if network.values("Match", key)]


def _masks(host: Host, system_path: str) -> bool:
    """An empty file or a link to /dev/null: networkd reads that name as nothing."""
    path = host.path(system_path)
    try:
        if files.is_link(path) and files.read_link(path) == "/dev/null":
            return True
        info = files.status(path)
    except (OSError, ZsnError):
        return False
    return stat.S_ISCHR(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_size == 0)


def chosen_files(host: Host, folders: list[str], pattern: str) -> dict[str, str]:
    """File name -> the path networkd reads for it (the first folder holding it).
    Hidden names and folders are skipped, as networkd's conf_files_list does."""
    chosen: dict[str, str] = {}
    for folder in folders:
        for path in files.list_files(host.path(folder), pattern):
            if path.name.startswith(".") or files.is_dir(path):
                continue
            chosen.setdefault(path.name, f"{folder}/{path.name}")
    return chosen


def read_tree(host: Host) -> Tree:
    tree = Tree()
    version = package_version(host, "systemd")
    for suffix, units in ((".netdev", tree.netdevs), (".network", tree.networks)):
        chosen = chosen_files(host, list(DIRS), f"*{suffix}")
        for name in sorted(chosen):
            path = chosen[name]
            if _masks(host, path):
                tree.masked.append(path)
                continue
            snapshot = files.read_tracked(host.path(path))
            unit = Unit(name, NetworkdFile(path, snapshot, UnitFile(snapshot.text, SCHEMA)))
            drop_ins = chosen_files(host, [f"{d}/{name}.d" for d in DIRS], "*.conf")
            unit.drop_in_names = set(drop_ins)
            for drop_in in sorted(drop_ins):
                drop_path = drop_ins[drop_in]
                if _masks(host, drop_path):
                    continue
                snapshot = files.read_tracked(host.path(drop_path))
                drop = UnitFile(snapshot.text, SCHEMA)
                unit.drop_ins.append(NetworkdFile(drop_path, snapshot, drop))
            unit.ignored = ignored_netdev(unit) if suffix == ".netdev" else \
                ignored_network(unit, version)
            units.append(unit)
    return tree


def parse_timespan_ms(text: str) -> int | None:
    """A systemd time span (``100ms``, ``1s``, ``1min 30s``; a bare number is seconds)
    in ms; None when systemd would not read it."""
    total = 0.0
    position = 0
    text = text.strip()
    if not text:
        return None
    while position < len(text):
        match = _TIME_RE.match(text, position)
        if match is None or match.end() == position:
            return None
        unit = match.group(2) or "s"
        if unit not in _TIME_UNITS:
            return None
        total += float(match.group(1)) * _TIME_UNITS[unit]
        position = match.end()
    return int(total)


def parse_mtu(text: str) -> int | None:
    """MTUBytes=: bytes, with an optional K, M or G (base 1024), as networkd parses it."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        return None
    value = float(match.group(1)) * {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}[
        match.group(2)]
    return int(value) if value.is_integer() or match.group(2) else None


def parse_boolean(text: str) -> bool | None:
    lowered = text.strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


class _Reading:
    """Reads LinkConfigs from a tree, reporting what it cannot read."""

    def __init__(self, tree: Tree, persisted: Persisted):
        self.tree = tree
        self.persisted = persisted

    def value(self, unit: Unit, section: str, key: str, parse: Callable[[str], T | None],
              name: str, what: str) -> T | None:
        raw = unit.get(section, key)
        if raw is None or raw == "":
            return None
        parsed = parse(raw)
        if parsed is None:
            winner = unit.winner(section, key)
            assert winner is not None
            self.persisted.unread.append(Unread(
                winner[0].path, winner[1].line + 1,
                f"{key}={raw} is not {what} networkd reads", "bad-value", names=(name,)))
        return parsed

    def network_for(self, name: str) -> Unit | None:
        """`Tree.network_for`, reporting a .network before it whose [Match] zsn cannot
        evaluate (it may be the one networkd uses)."""
        for network in self.tree.read_networks():
            if not matches_name(network, name):
                continue
            others = other_conditions(network)
            if others:
                self.persisted.unread.append(Unread(
                    network.main.path, None,
                    f"its [Match] also uses {', '.join(f'{k}=' for k in others)}: zsn cannot "
                    f"tell whether it applies to {name}", "match-condition", names=(name,)))
            return network
        return None

    def config(self, netdev: Unit) -> LinkConfig | None:
        name, kind = netdev.get("NetDev", "Name"), netdev.get("NetDev", "Kind")
        if netdev.ignored is not None or not name or not kind:
            return None
        if kind not in KINDS:
            self.persisted.devices.setdefault(name, Device(name, kind, netdev.main.path))
            return None
        if kind == "vlan" and _vlan_id(netdev.get("VLAN", "Id") or "") is None:
            self.persisted.unread.append(Unread(
                netdev.where("VLAN", "Id"), None, f"VLAN {name} has no valid Id=: networkd "
                "does not create it", "networkd-ignores", names=(name,)))
            return None
        network = self.network_for(name)
        mtu = self.value(network, "Link", "MTUBytes", parse_mtu, name, "a size") \
            if network is not None else None
        if mtu is None:
            mtu = self.value(netdev, "NetDev", "MTUBytes", parse_mtu, name, "a size")
        members: list[str] = []
        parent = None
        key = {"bond": "Bond", "bridge": "Bridge", "vlan": "VLAN"}[kind]
        for other in self.tree.read_networks():
            patterns = match_names(other)
            exact = patterns[0] if len(patterns) == 1 and not _GLOB_CHARS & set(patterns[0]) \
                and not patterns[0].startswith("!") else None
            if kind == "vlan":
                refers = name in other.values("Network", "VLAN")
            else:
                refers = other.get("Network", key) == name
            if not refers:
                continue
            if exact is None:
                self.persisted.unread.append(Unread(
                    other.main.path, None, f"{key}={name} in a .network that matches "
                    f"{' '.join(patterns) or 'every link'}: zsn reads members and parents "
                    "from .network files that name one link", "wildcard-match",
                    names=(name,)))
                continue
            if self.tree.network_for(exact) is not other or exact == name:
                continue  # not the link's .network; a link is not its own parent
            if kind != "vlan":
                members.append(exact)
            elif parent is None:
                parent = exact
            else:
                self.persisted.unread.append(Unread(
                    other.main.path, None, f"VLAN={name} is also set for {parent}: which "
                    "parent networkd uses depends on which link comes up first",
                    "ambiguous", names=(name,)))
        vlan_id = self.value(netdev, "VLAN", "Id", _vlan_id, name, "a VLAN id")
        miimon = self.value(netdev, "Bond", "MIIMonitorSec", parse_timespan_ms, name,
                            "a time span")
        stp = self.value(netdev, "Bridge", "STP", parse_boolean, name, "a boolean")
        return LinkConfig(
            name=name, kind=kind, members=tuple(members), parent=parent, vlan_id=vlan_id,
            mtu=mtu, mode=netdev.get("Bond", "Mode") if kind == "bond" else None,
            miimon=miimon,
            xmit_hash_policy=netdev.get("Bond", "TransmitHashPolicy") if kind == "bond"
            else None,
            lacp_rate=netdev.get("Bond", "LACPTransmitRate") if kind == "bond" else None,
            stp=bool(stp) if kind == "bridge" else None,
            source=netdev.main.path)


    def undefined_masters(self) -> None:
        """Bond=, Bridge= and VLAN= naming no netdev networkd creates: it ignores them."""
        defined = set(self.persisted.configs) | set(self.persisted.devices)
        for network in self.tree.read_networks():
            for key in ("Bond", "Bridge", "VLAN"):
                names = network.values("Network", key) if key == "VLAN" else \
                    [value] if (value := network.get("Network", key)) else []
                for name in names:
                    if name not in defined:
                        self.persisted.unread.append(Unread(
                            network.where("Network", key), None, f"{key}={name} names no "
                            "netdev networkd creates: it ignores the setting",
                            "networkd-ignores", blocking=False, names=(name,)))


def _vlan_id(text: str) -> int | None:
    return int(text) if text.isdigit() and int(text) <= 4094 else None


def _exact(network: Unit, name: str) -> bool:
    return match_names(network) == [name] and not other_conditions(network)


class NetworkdBackend(FileBackend):
    name = "networkd"

    def _collect(self, host: Host, persisted: Persisted) -> None:
        tree = read_tree(host)
        for source in tree.files():
            for oddity in source.unit.oddities():
                persisted.unread.append(Unread(source.path, oddity.line, oddity.message,
                                               "syntax", blocking=False))
        for unit in (*tree.netdevs, *tree.networks):
            if unit.ignored is not None:
                persisted.unread.append(Unread(unit.main.path, None, unit.ignored,
                                               "networkd-ignores", blocking=False))
        reading = _Reading(tree, persisted)
        for netdev in tree.netdevs:
            config = reading.config(netdev)
            if config is not None:
                persisted.configs.setdefault(config.name, config)
        reading.undefined_masters()

    def plan(self, host: Host, changes: list[Upsert | Remove],
             current: Persisted) -> PersistPlan:
        editor = _Editor(read_tree(host), PersistPlan(self.name), current)
        for change, old, config in in_order(changes, current):
            if isinstance(change, Remove) or config is None:
                editor.remove(change.name, old)
                continue
            editor.upsert(config, old, change.fields if old else None)
        plan = editor.plan
        plan.edits = file_edits(host, editor.all_files())
        if plan.edits:
            plan.notes.append("networkd applies new netdevs with 'networkctl reload'; "
                              "changed existing ones only at boot (before systemd v257)")
        return plan


class _Editor:
    def __init__(self, tree: Tree, plan: PersistPlan, current: Persisted):
        self.tree = tree
        self.plan = plan
        self.current = current
        self.created: list[NetworkdFile] = []

    def all_files(self) -> list[NetworkdFile]:
        seen: set[int] = set()
        found = []
        for source in (*self.tree.files(), *self.created):
            if id(source) not in seen:
                seen.add(id(source))
                found.append(source)
        return found

    # -- where a setting goes --------------------------------------------------------
    def _own_drop_in(self, unit: Unit) -> NetworkdFile:
        """zsn's drop-in for `unit` in /etc, named to sort after every other drop-in."""
        name = OWN_DROP_IN
        while any(other >= name for other in unit.drop_in_names if other != name):
            name = "z" + name
        path = f"{EDITABLE}/{unit.name}.d/{name}"
        for source in unit.drop_ins:
            if source.path == path:
                return source
        entry = NetworkdFile(path, None, UnitFile(schema=SCHEMA))
        unit.drop_ins.append(entry)
        unit.drop_in_names.add(name)
        self.created.append(entry)
        return entry

    def set(self, unit: Unit, section: str, key: str, value: str | None,
            about: str) -> None:
        """Make networkd end up with ``key=value`` for `unit` (None: no assignment)."""
        winner = unit.winner(section, key)
        if value is None:
            for source in unit.sources:
                if source.editable:
                    source.unit.remove(section, key)
            winner = unit.winner(section, key)
            if winner is not None:  # set where zsn does not edit: reset it after
                self._own_drop_in(unit).unit.set(section, key, "")
                self.plan.notes.append(f"{about}: {key}= reset in "
                                       f"{self._own_drop_in(unit).path}")
            return
        if winner is not None and winner[1].value == value:
            return
        if winner is not None and winner[0].editable:
            target = winner[0]
        elif winner is None and unit.main.editable:
            target = unit.main
        else:
            target = self._own_drop_in(unit)
        target.unit.set(section, key, value)
        if target is not unit.main or winner is not None:
            self.plan.notes.append(f"{about}: {key}={value} in {target.path}, the file "
                                   "whose setting networkd applies")

    def add_to_list(self, unit: Unit, section: str, key: str, value: str) -> None:
        if value in unit.values(section, key):
            return
        last = None
        for source in unit.sources:
            if source.unit.assignments(section, key):
                last = source
        if last is None and unit.main.editable:
            last = unit.main
        if last is None or not last.editable:
            last = self._own_drop_in(unit)
        last.unit.add(section, key, value)

    def remove_from_list(self, unit: Unit, section: str, key: str, value: str) -> None:
        for source in unit.sources:
            if source.editable:
                source.unit.remove(section, key, value)
        if value in unit.values(section, key):  # still set where zsn does not edit
            rest = [v for v in unit.values(section, key) if v != value]
            own = self._own_drop_in(unit)
            own.unit.remove(section, key)
            own.unit.add(section, key, "")
            for item in rest:
                own.unit.add(section, key, item)

    # -- units -----------------------------------------------------------------------
    def _new_unit(self, file_name: str) -> Unit:
        entry = NetworkdFile(f"{EDITABLE}/{file_name}", None, UnitFile(schema=SCHEMA))
        self.created.append(entry)
        unit = Unit(file_name, entry)
        target = self.tree.netdevs if file_name.endswith(".netdev") else self.tree.networks
        target.append(unit)
        target.sort(key=lambda u: u.name)
        return unit

    def network(self, name: str) -> Unit:
        """The .network networkd uses for `name`, if it names that link alone; else a
        new ``10-zsn-NAME.network`` that sorts before the one that matches now."""
        current = self.tree.network_for(name)
        if current is not None and _exact(current, name):
            return current
        file_name = f"10-zsn-{name}.network"
        prefix = ""
        while current is not None and prefix + file_name >= current.name:
            if len(prefix) > 8:
                raise ValidationError(f"{current.main.path} matches {name} and sorts first; "
                                      "zsn cannot add a .network file before it")
            prefix += "0"
        unit = self._new_unit(prefix + file_name)
        unit.main.unit.set("Match", "Name", name)
        if current is not None:
            self.plan.warnings.append(
                f"{unit.name} takes {name} over from {current.main.path} (its settings no "
                "longer apply to it)")
        return unit

    def upsert(self, config: LinkConfig, old: LinkConfig | None,
               only: frozenset[str] | None) -> None:
        def wanted(field_name: str) -> bool:
            return only is None or field_name in only

        other = self.current.devices.get(config.name)
        if other is not None:
            raise ValidationError(f"{config.name} is a {other.kind} netdev in {other.source}, "
                                  f"not a {config.kind}")
        netdev = self.tree.netdev(config.name)
        if netdev is None:
            netdev = self._new_unit(f"30-zsn-{config.name}.netdev")
            netdev.main.unit.set("NetDev", "Name", config.name)
            netdev.main.unit.set("NetDev", "Kind", config.kind)
        about = config.name
        new = netdev.main.snapshot is None
        network = self.network(config.name) if new else self.tree.network_for(config.name)
        if wanted("mtu"):
            self._mtu(netdev, network, config, about)
        if new and network is not None and not network.has_section("Network"):
            network.main.unit.add_section("Network")  # networkd brings such a link up
        if config.kind == "bond":
            self._bond(netdev, config, wanted)
        if config.kind == "bridge" and wanted("stp") and \
                parse_boolean(netdev.get("Bridge", "STP") or "no") != bool(config.stp):
            self.set(netdev, "Bridge", "STP", "yes" if config.stp else "no", about)
        if config.kind == "vlan":
            self._vlan(netdev, config, old, wanted)
        if config.kind in ("bond", "bridge") and wanted("members"):
            self._members(config, old)

    def _bond(self, netdev: Unit, config: LinkConfig, wanted: Callable[[str], bool]) -> None:
        """[Bond] Mode=, MIIMonitorSec=, TransmitHashPolicy=, LACPTransmitRate=."""
        about = config.name
        if wanted("mode") and config.mode:
            self.set(netdev, "Bond", "Mode", config.mode, about)
        if wanted("miimon"):
            miimon = config.miimon if config.miimon is not None else bonding.DEFAULT_MIIMON
            if parse_timespan_ms(netdev.get("Bond", "MIIMonitorSec") or "") != miimon:
                self.set(netdev, "Bond", "MIIMonitorSec", f"{miimon}ms", about)
        if wanted("xmit_hash_policy") and config.xmit_hash_policy:
            self.set(netdev, "Bond", "TransmitHashPolicy", config.xmit_hash_policy, about)
        if wanted("lacp_rate") and config.lacp_rate:
            self.set(netdev, "Bond", "LACPTransmitRate", config.lacp_rate, about)

    def _vlan(self, netdev: Unit, config: LinkConfig, old: LinkConfig | None,
              wanted: Callable[[str], bool]) -> None:
        """[VLAN] Id=, and the VLAN= line in its parent's .network (moved if it moved)."""
        if wanted("vlan_id") and config.vlan_id is not None and \
                _vlan_id(netdev.get("VLAN", "Id") or "") != config.vlan_id:
            self.set(netdev, "VLAN", "Id", str(config.vlan_id), config.name)
        if wanted("parent") and config.parent:
            if old is not None and old.parent and old.parent != config.parent:
                self._unlink_vlan(old.parent, config.name)
            self.add_to_list(self.network(config.parent), "Network", "VLAN", config.name)

    def _members(self, config: LinkConfig, old: LinkConfig | None) -> None:
        """Bond= or Bridge= in each member's .network; removed from those that left."""
        key = "Bond" if config.kind == "bond" else "Bridge"
        before = set(old.members) if old else set()
        for member in config.members:
            self.set(self.network(member), "Network", key, config.name, member)
        for member in before - set(config.members):
            self._detach(member, key, config.name)

    def _mtu(self, netdev: Unit, network: Unit | None, config: LinkConfig,
             about: str) -> None:
        """The MTU where it takes effect: [Link] MTUBytes= of the link's .network when it
        sets one (networkd applies it after the netdev's), else [NetDev] MTUBytes=. A
        bridge's always goes in a .network: the kernel sets a bridge made with an MTU to
        its ports' smallest when they join, one set afterwards it keeps."""
        value = str(config.mtu) if config.mtu is not None else None
        if config.kind == "bridge" and value is not None and (
                network is None or network.winner("Link", "MTUBytes") is None):
            network = network if network is not None else self.network(config.name)
            if network.main.snapshot is None:
                network.main.unit.set("Link", "MTUBytes", value)
            else:
                self.set(network, "Link", "MTUBytes", value, about)
        if network is not None and network.winner("Link", "MTUBytes") is not None:
            self.set(network, "Link", "MTUBytes", value, about)
            if netdev.winner("NetDev", "MTUBytes") is not None:
                self.set(netdev, "NetDev", "MTUBytes", value, about)
            return
        self.set(netdev, "NetDev", "MTUBytes", value, about)
        if value is not None and network is not None and network.main.snapshot is None:
            network.main.unit.set("Link", "MTUBytes", value)

    def _detach(self, member: str, key: str, master: str) -> None:
        network = self.tree.network_for(member)
        if network is None or network.get("Network", key) != master:
            return
        self.set(network, "Network", key, None, member)
        self._drop_if_own_and_empty(network, member)

    def _unlink_vlan(self, parent: str, vlan: str) -> None:
        network = self.tree.network_for(parent)
        if network is not None:
            self.remove_from_list(network, "Network", "VLAN", vlan)
            self._drop_if_own_and_empty(network, parent)

    @staticmethod
    def _drop_if_own_and_empty(network: Unit, name: str) -> None:
        """zsn's own 10-zsn-NAME.network with nothing left but its [Match] goes away."""
        own = network.main.path.endswith(f"10-zsn-{name}.network")
        if own and network.main.unit.count() <= 1 and not network.drop_ins:
            network.main.removed = True

    def remove(self, name: str, old: LinkConfig | None) -> None:
        netdev = self.tree.netdev(name)
        if netdev is not None:
            fixed = [source.path for source in (netdev.main, *netdev.drop_ins)
                     if not source.editable]
            if fixed:
                raise ValidationError(f"{name} is defined in {', '.join(fixed)}, which zsn "
                                      f"does not edit (only {EDITABLE}); mask it with a link "
                                      f"to /dev/null in {EDITABLE} by hand")
            for source in (netdev.main, *netdev.drop_ins):
                source.removed = True
        network = self.tree.network_for(name)
        if network is not None and _exact(network, name):
            if network.main.path.endswith(f"10-zsn-{name}.network"):
                for source in (network.main, *network.drop_ins):
                    source.removed = True
            else:
                self.plan.warnings.append(f"{network.main.path} still matches {name}; "
                                          "remove it by hand if nothing else uses the name")
        if old is None:
            return
        if old.kind == "vlan" and old.parent:
            self._unlink_vlan(old.parent, name)
        for member in old.members:
            self._detach(member, "Bond" if old.kind == "bond" else "Bridge", name)


NETWORKD = NetworkdBackend()
