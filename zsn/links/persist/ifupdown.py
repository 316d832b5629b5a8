"""ifupdown: ``/etc/network/interfaces`` and what it sources, read in the dialect of the
implementation installed: Debian's ifupdown, ifupdown2 (Proxmox's default) or
ifupdown-ng. The three read the same file differently:

- **ifupdown** (0.8, config.c): stanzas start at ``iface``, ``mapping``, ``auto``,
  ``allow-*``, ``source``, ``source-directory``, ``no-auto-down``, ``no-scripts``,
  ``rename``; ``iface NAME FAMILY METHOD [inherits OTHER]`` needs a family and a method
  it knows, or it refuses the whole file; ``source`` patterns and
  ``source-directory`` folders are relative to the file's folder, and the folder's
  names must match ``[A-Za-z0-9_-]+``; ``-`` and ``_`` are the same in option names.
  An option given twice in one stanza is one value, the two joined by a newline
  (config.c), which the helper scripts split into words. Bonds come from ifenslave:
  a stanza with ``bond-master`` is a member; one with ``bond-slaves`` (or, when that is
  empty, the older ``slaves``: ``IF_BOND_SLAVES=${IF_BOND_SLAVES:-$IF_SLAVES}``) or
  ``bond-mode`` is a bond, ``all`` meaning every ``eth*`` interface at ifup. Bridges
  come from bridge-utils (``bridge_ports``; ``all``, ``regex`` and ``noregex`` match
  the interfaces there are at ifup). A VLAN (the vlan package, ifupdown's own
  link.defn) is ``PARENT.ID`` or ``vlanID`` with ``vlan-raw-device``.
- **ifupdown2** (networkinterfaces.py): ``iface NAME`` needs no family; no
  ``source-directory`` (it refuses the line); ``source`` globs from ``/``; a file with
  ``%`` goes through mako templates; ``-`` replaces ``_`` in option names, and an
  addon's aliases become its names (``bond-ports`` is ``bond-slaves``). A bond is a
  stanza with ``bond-slaves`` (``slaves`` is nothing to it), bridges take
  ``bridge-ports`` (or ``glob``/``regex`` expressions), a VLAN any name with
  ``vlan-raw-device`` and ``vlan-id``, or ``PARENT.ID``. An option given twice: every
  ``bridge-ports`` line's ports, the first value of anything else.
- **ifupdown-ng** (libifupdown/interface-file.c): stanzas of the same name merge;
  ``auto NAME`` makes NAME the stanza later lines go to; ``use EXECUTOR``, ``requires``,
  ``inherits``, ``template``; ifupdown2's and ifupdown's names are mapped to its own
  (``bond-slaves`` is ``bond-members``); a bond or bridge is what ``use``s that executor
  (``bond-*`` and ``bridge-*`` options imply it), ``slaves`` and ``bond-ports`` being
  nothing to it; a bridge's ``requires`` are its ports; a VLAN is ``PARENT.ID``,
  ``vlanID`` with ``vlan-raw-device``, or any name with both ``vlan-raw-device`` and
  ``vlan-id``. An option given twice reaches the executor twice; its shell keeps the
  last.

What zsn cannot read as the installed implementation does (a template, a mapping
script, a range of names, a port glob, a value two stanzas give differently) is
reported with its file and line; an option given twice is read as the installed
implementation reads it, and reported as one the three do not agree on. New stanzas
are written in the installed dialect, into ``/etc/network/interfaces.d/zsn-NAME`` when
that folder is sourced, else at the end of ``/etc/network/interfaces``.

`_Writer` is the format's one renderer: every line it adds or rewrites goes through
`_option_line` (the option's value typed by `SCHEMA`, on one line) and each edit
records what it means in the file's `InterfacesFile.intent`, read back with
`INTERFACES` before the plan writes anything (`zsn.meaning`).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass, field, replace

from zsn import values
from zsn.errors import ValidationError, ZsnError
from zsn.links import bonding
from zsn.links import values as link_values
from zsn.links.persist import (
    IFUPDOWN_MAIN,
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
from zsn.meaning import Entry as MeantEntry
from zsn.meaning import Format, Intent, ValueType, one_line
from zsn.meaning import Reading as Meaning
from zsn.meaning import Section as MeantSection
from zsn.system import files
from zsn.system.host import Host
from zsn.system.packages import package_version

MAIN = IFUPDOWN_MAIN
DROP_IN = "/etc/network/interfaces.d"
MAX_FILES = 200
CLASSIC, IFUPDOWN2, NG = "ifupdown", "ifupdown2", "ifupdown-ng"
DIALECT_MARKERS = (
    (IFUPDOWN2, ("/usr/share/ifupdown2", "/etc/network/ifupdown2/ifupdown2.conf")),
    (NG, ("/etc/network/ifupdown-ng.conf", "/usr/libexec/ifupdown-ng", "/sbin/ifupdown")),
    (CLASSIC, ("/lib/ifupdown", "/usr/lib/ifupdown", "/sbin/ifup")),
)
"""Files each implementation installs, in the order zsn looks for them."""
CLASSIC_KEYWORDS = ("iface", "mapping", "auto", "source", "no-auto-down", "no-scripts",
                    "rename")
CLASSIC_METHODS = {
    "inet": {"loopback", "static", "manual", "dhcp", "bootp", "tunnel", "ppp", "wvdial",
             "ipv4ll"},
    "inet6": {"auto", "loopback", "static", "manual", "dhcp", "tunnel", "v4tunnel", "6to4"},
    "ipx": {"static", "dynamic"}, "can": {"static"}, "link": {"none"}, "meta": {"none"},
}
"""Families and methods of Debian's ifupdown 0.8 on Linux (inet.defn, inet6.defn, ...)."""
IFUPDOWN2_KEYWORDS = ("source", "auto", "iface", "vlan")
IFUPDOWN2_METHODS = {"static", "manual", "loopback", "dhcp", "dhcp6", "ppp", "tunnel"}
NG_KEYWORDS = ("address", "auto", "defaults", "dhcp-hostname", "gateway", "hostname",
               "iface", "inherit", "interface", "source", "source-directory", "template",
               "use")
NG_REMAP = {"bond-slaves": "bond-members", "bond-ad-sys-priority": "bond-ad-actor-sys-prio",
            "pointopoint": "point-to-point", "vrf": "vrf-member", "mode": "tunnel-mode"}
"""ifupdown-ng's rewrites of other dialects' option names, those zsn's keys meet."""
IFUPDOWN2_ALIASES = {"bond-ports": "bond-slaves"}
"""ifupdown2's addon aliases (addons/bond.py), those zsn's keys meet: its ifquery
prints the option under its real name."""
CLASSIC_NOT_JOINED = ("pre-up", "up", "down", "post-down")
"""Options Debian's ifupdown keeps apart when repeated (config.c); ``post-up`` is
``up`` and ``pre-down`` is ``down`` to it."""
CLASSIC_RENAMED = {"post-up": "up", "pre-down": "down"}
SINGLE_VALUED = ("mtu", "bond-mode", "bond-miimon", "bond-xmit-hash-policy",
                 "bond-lacp-rate", "bridge-stp", "vlan-raw-device", "vlan-id",
                 "bond-slaves", "slaves", "bond-members", "bridge-ports")
_PORT_WORDS = {CLASSIC: {"all", "regex", "noregex"}, NG: {"all"},
               IFUPDOWN2: {"glob", "regex"}}
"""Words of a bridge's ports that match interfaces at ifup, not names (bridge-utils'
bridge_parse_ports; ifupdown-ng's bridge executor; ifupdown2's parse_port_list, which
reads a bond's members the same way; ifenslave takes ``all`` for a bond's)."""
_SOURCE_DIRECTORY_NAME = re.compile(r"[a-zA-Z0-9_-]+")
_RANGE = re.compile(r"\[\d+-\d+\]")
_LACP_RATES = {"0": "slow", "1": "fast"}
_MEMBERS = values.either(values.one_of("none"), link_values.LINKS)
SCHEMA: dict[str, ValueType] = {
    "use": values.one_of("bond", "bridge"), "bond-slaves": _MEMBERS, "bond-members": _MEMBERS,
    "bond-mode": link_values.BOND_MODE, "bond-miimon": link_values.MIIMON,
    "bond-xmit-hash-policy": link_values.HASH_POLICY, "bond-lacp-rate": link_values.LACP_RATE,
    "bridge-ports": _MEMBERS, "bridge-stp": values.one_of("on", "off"),
    "vlan-raw-device": link_values.LINK, "vlan-id": link_values.VLAN_ID,
    "mtu": link_values.MTU,
}
"""The options zsn writes in a stanza (``-`` or ``_`` alike), as ifupdown and its
helpers (ifenslave, bridge-utils, vlan) read them."""


def dialect_of(host: Host) -> tuple[str, str]:
    """The installed implementation (and how zsn knows); Debian's ifupdown when none is
    found (its syntax is the one the other two read as well)."""
    for dialect, markers in DIALECT_MARKERS:
        for marker in markers:
            if files.exists(host.path(marker)):
                return dialect, f"{marker} is installed"
    return CLASSIC, "no implementation found installed: Debian's ifupdown syntax"


def _key(option: str) -> str:
    return option.replace("_", "-")


@dataclass
class InterfacesFile:
    path: str
    snapshot: files.FileSnapshot | None
    lines: list[str]
    removed: bool = False
    intent: Intent = field(default_factory=lambda: Intent(INTERFACES))
    """What the edits since it was read mean (a new file: the whole file)."""

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def section_at(self, start: int) -> int:
        """The index, in `INTERFACES`'s reading, of the stanza whose header is line
        `start` (0-based) as the file is now."""
        for index, section in enumerate(INTERFACES.read(self.text, self.path)):
            if section.line == start + 1:
                return index
        raise ValidationError(f"{self.path}:{start + 1}: not a stanza zsn can edit")


@dataclass
class Stanza:
    """An ``iface`` stanza: its header line and option lines in one file."""

    name: str
    file: InterfacesFile
    start: int
    end: int
    """Line after its last option line (exclusive)."""
    family: str | None
    method: str | None
    options: list[tuple[int, str, str]] = field(default_factory=list)
    """(line, option as written, value)."""

    def get(self, option: str) -> str | None:
        for _line, name, value in self.options:
            if _key(name) == _key(option):
                return value
        return None


@dataclass
class Iface:
    """An interface as the dialect sees it: its stanzas merged."""

    name: str
    stanzas: list[Stanza] = field(default_factory=list)
    options: list[tuple[str, str, Stanza | None, int]] = field(default_factory=list)
    """(option key in the dialect's spelling, value, stanza, line) in reading order; the
    stanza is None for what a template or parent gave."""
    auto: bool = False
    template: bool = False

    def values(self, key: str) -> list[tuple[str, Stanza | None, int]]:
        return [(value, stanza, line) for name, value, stanza, line in self.options
                if _key(name) == _key(key)]

    def get(self, key: str) -> str | None:
        found = self.values(key)
        return found[-1][0] if found else None

    def value(self, key: str, dialect: str) -> str | None:
        """What `dialect` makes of `key` given more than once: ifupdown2 uses every
        ``bridge-ports`` line and the first of anything else; ifupdown-ng's executors
        (a shell) the last; Debian's ifupdown the last stanza's, where a repeat inside a
        stanza was already joined as it joins it."""
        found = self.values(key)
        if not found:
            return None
        if dialect == IFUPDOWN2:
            if _key(key) == "bridge-ports":
                return " ".join(value for value, _stanza, _line in found)
            return found[0][0]
        return found[-1][0]

    @property
    def uses(self) -> set[str]:
        return {value for value, _stanza, _line in self.values("use")}


@dataclass
class Reading:
    """A dialect's reading of the files: the interfaces and what zsn could not read."""

    dialect: str
    files: list[InterfacesFile] = field(default_factory=list)
    ifaces: dict[str, Iface] = field(default_factory=dict)
    unread: list[Unread] = field(default_factory=list)
    sources: list[tuple[str, str]] = field(default_factory=list)
    """(source or source-directory, absolute pattern) of the main file's lines."""

    def reads(self, path: str) -> bool:
        """Whether a file at `path` would be read (through the main file's sources)."""
        for keyword, pattern in self.sources:
            if keyword == "source" and fnmatch.fnmatchcase(path, pattern):
                return True
            folder, name = posixpath.split(path)
            if keyword == "source-directory" and fnmatch.fnmatchcase(folder, pattern) and (
                    self.dialect != CLASSIC or _SOURCE_DIRECTORY_NAME.fullmatch(name)):
                return True
        return False

    def report(self, file: InterfacesFile, line: int | None, message: str, kind: str,
               blocking: bool = True, names: tuple[str, ...] = ()) -> None:
        self.unread.append(Unread(file.path, line, message, kind, blocking, names))


# -- reading the files --------------------------------------------------------------------
def _logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(first line, text) with backslash continuations joined."""
    found: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines):
        text = line.rstrip("\n")
        if pending is not None:
            text = pending[1] + " " + text.strip()
            number = pending[0]
        if text.endswith("\\"):
            pending = (number, text[:-1].rstrip())
            continue
        pending = None
        found.append((number, text))
    if pending is not None:
        found.append(pending)
    return found


def _expand(host: Host, pattern: str) -> list[str]:
    """System paths matching `pattern` (absolute, wildcards in any component), sorted.
    As glob(3), Python's glob and wordexp(3) match them: a wildcard matches no leading
    dot, so ``interfaces.d/*`` leaves out hidden files (an editor's, a disabled one)."""
    parts = [part for part in posixpath.normpath(pattern).split("/") if part]
    paths = ["/"]
    for part in parts:
        found = []
        for base in paths:
            if any(char in part for char in "*?["):
                for match in files.list_files(host.path(base), part):
                    if match.name.startswith(".") and not part.startswith("."):
                        continue
                    found.append(posixpath.join(base, match.name))
            else:
                found.append(posixpath.join(base, part))
        paths = found
    return sorted(paths)


class _Reader:
    def __init__(self, host: Host, dialect: str):
        self.host = host
        self.reading = Reading(dialect)
        self.seen: set[str] = set()
        self.auto_executors = dialect == NG and _ng_setting(host, "auto_executor_selection")
        self.implicit_templates = dialect == NG and _ng_setting(
            host, "implicit_template_conversion")
        version = package_version(host, "ifupdown-ng") if dialect == NG else None
        self.literal_source = version is not None and version < (0, 12)
        self.stanza_options: dict[str, int] = {}
        """Debian's ifupdown: the current stanza's option names -> where they are in its
        interface's options (a repeat joins the first)."""
        """ifupdown-ng before 0.12 takes a source line as one path (no wildcards) and
        stops reading when it cannot open it."""

    def visit(self, system_path: str) -> InterfacesFile | None:
        if system_path in self.seen or len(self.reading.files) >= MAX_FILES:
            return None
        self.seen.add(system_path)
        path = self.host.path(system_path)
        if not files.exists(path) or files.is_dir(path):
            return None
        snapshot = files.read_tracked(path)
        entry = InterfacesFile(system_path, snapshot, snapshot.text.splitlines(keepends=True))
        if entry.lines and not entry.lines[-1].endswith("\n"):
            entry.lines[-1] += "\n"
        self.reading.files.append(entry)
        return entry

    def source(self, entry: InterfacesFile, line: int, keyword: str, pattern: str) -> None:
        dialect = self.reading.dialect
        if "$" in pattern or "`" in pattern or pattern.startswith("~"):
            self.reading.report(entry, line + 1, f"{keyword} {pattern}: an expansion zsn does "
                                "not evaluate", "source-expansion")
            return
        base = posixpath.dirname(entry.path) if dialect == CLASSIC else "/"
        absolute = posixpath.normpath(posixpath.join(base, pattern))
        if entry.path == MAIN:
            self.reading.sources.append((keyword, absolute))
        if keyword == "source" and self.literal_source:
            if not files.exists(self.host.path(absolute)):
                self.reading.report(entry, line + 1, f"source {pattern}: ifupdown-ng before "
                                    "0.12 expands no wildcards and cannot open it, so it "
                                    "stops reading the configuration", "ifupdown-refuses")
                return
            self.read(absolute)
            return
        if keyword == "source":
            for path in _expand(self.host, absolute):
                self.read(path)
            return
        for folder in _expand(self.host, absolute):
            for child in files.list_files(self.host.path(folder)):
                if dialect == CLASSIC and not _SOURCE_DIRECTORY_NAME.fullmatch(child.name):
                    continue
                if files.is_file(child):
                    self.read(posixpath.join(folder, child.name))

    def read(self, system_path: str) -> None:
        entry = self.visit(system_path)
        if entry is None:
            return
        {CLASSIC: self._classic, IFUPDOWN2: self._ifupdown2, NG: self._ng}[
            self.reading.dialect](entry)

    def iface(self, name: str) -> Iface:
        return self.reading.ifaces.setdefault(name, Iface(name))

    # -- Debian's ifupdown ---------------------------------------------------------------
    def _classic(self, entry: InterfacesFile) -> None:
        current: Stanza | None = None
        mapping = False
        for number, text in _logical_lines(entry.lines):
            words = text.split()
            if not words or words[0].startswith("#"):
                continue
            keyword = words[0]
            if keyword in CLASSIC_KEYWORDS or keyword.startswith(("allow-", "source-dir")):
                current, mapping = None, keyword == "mapping"
                if keyword == "iface":
                    current = self._classic_iface(entry, number, words)
                elif keyword == "source" or keyword.startswith("source-dir"):
                    self.source(entry, number, "source" if keyword == "source"
                                else "source-directory", " ".join(words[1:]))
                elif keyword == "auto":
                    for name in words[1:]:
                        self.iface(name).auto = True
                elif mapping:
                    self.reading.report(entry, number + 1, f"mapping {' '.join(words[1:])}: "
                                        "zsn does not run mapping scripts", "mapping",
                                        blocking=False)
                continue
            if mapping and keyword in ("script", "map"):
                continue
            if current is None:
                self.reading.report(entry, number + 1, f"misplaced option {keyword!r}: "
                                    "ifupdown refuses the file", "ifupdown-refuses")
                continue
            value = " ".join(words[1:])
            if not value:
                self.reading.report(entry, number + 1, f"option {keyword!r} with an empty "
                                    "value: ifupdown refuses the file", "ifupdown-refuses")
                continue
            current.options.append((number, keyword, value))
            current.end = number + 1
            self._classic_option(current, keyword, value, number)

    def _classic_option(self, stanza: Stanza, keyword: str, value: str, number: int) -> None:
        """An option of a stanza as config.c keeps it: under its name (``post-up`` is
        ``up``), a second one of the same name joined to the first by a newline (the
        inherited ones included), except the commands."""
        name = CLASSIC_RENAMED.get(keyword, keyword)
        options = self.iface(stanza.name).options
        if name not in CLASSIC_NOT_JOINED and name in self.stanza_options:
            at = self.stanza_options[name]
            before, first, where, line = options[at]
            options[at] = (before, f"{first}\n{value}", where, line)
            return
        self.stanza_options[name] = len(options)
        options.append((name, value, stanza, number))

    def _classic_iface(self, entry: InterfacesFile, number: int, words: list[str]
                       ) -> Stanza | None:
        """config.c's reading of an iface line: a known family and method, or an
        ``inherits`` keyword; the parent (of the same family, when one is given) must be
        defined before; anything else and ifupdown refuses the whole file."""
        def refuse(reason: str) -> None:
            self.reading.report(entry, number + 1, f"'{' '.join(words)}': {reason}; Debian's "
                                "ifupdown refuses the whole file", "ifupdown-refuses")

        if len(words) < 2:
            refuse("no interface name")
            return None
        name, rest = words[1], words[2:]
        family = method = inherits = None
        keyword = False
        if rest and rest[0] in CLASSIC_METHODS:
            family, rest = rest[0], rest[1:]
            if rest and rest[0] in CLASSIC_METHODS[family]:
                method, rest = rest[0], rest[1:]
            elif rest and rest[0] == "inherits":
                keyword = True
        elif rest and rest[0] == "inherits":
            keyword = True
        if family is None and not keyword:
            refuse("an unknown or no address family, and no inherits")
            return None
        if method is None and not keyword:
            refuse("an unknown or no method, and no inherits")
            return None
        if not keyword and rest and rest[0] == "inherits":
            keyword = True
        if keyword:
            if len(rest) < 2:
                refuse("'inherits' without a parameter")
                return None
            inherits = rest[1]
        stanza = Stanza(name, entry, number, number + 1, family, method)
        iface = self.iface(name)
        if inherits is not None:
            parent = next((s for other in [self.reading.ifaces.get(inherits)] if other
                           for s in other.stanzas if family is None or s.family == family),
                          None)
            if parent is None:
                refuse(f"inherits {inherits}, which is not defined before it")
                return None
            stanza.family, stanza.method = family or parent.family, method or parent.method
            inherited = self.reading.ifaces[inherits]
            copied = [(k, v, None, line) for k, v, s, line in inherited.options
                      if s is parent or (s is None and parent in inherited.stanzas)]
        else:
            copied = []
        self.stanza_options = {}
        for key, value, _none, line in copied:
            self.stanza_options.setdefault(key, len(iface.options))
            iface.options.append((key, value, None, line))
        iface.stanzas.append(stanza)
        return stanza

    # -- ifupdown2 -----------------------------------------------------------------------
    def _ifupdown2(self, entry: InterfacesFile) -> None:
        text = entry.text
        if "%" in text and re.search(r"^\s*%|\$\{|<%", text, re.MULTILINE):
            self.reading.report(entry, None, "a mako template (ifupdown2 renders it before "
                                "reading it): zsn does not", "template")
            return
        current: Stanza | None = None
        for number, line in _logical_lines(entry.lines):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            keyword = words[0]
            if keyword in IFUPDOWN2_KEYWORDS or keyword.split("-")[0] == "allow":
                current = None
                if keyword in ("iface", "vlan"):
                    current = self._ifupdown2_iface(entry, number, words)
                elif keyword == "source" and len(words) > 1:
                    self.source(entry, number, "source", words[1])
                elif keyword == "auto":
                    for name in words[1:]:
                        self.iface(name).auto = True
                continue
            if keyword == "source-directory":
                self.reading.report(entry, number + 1, "ifupdown2 does not read "
                                    "source-directory (it skips the line)",
                                    "ifupdown2-ignores", blocking=False)
                continue
            if current is None:
                self.reading.report(entry, number + 1, f"{keyword!r} outside any stanza: "
                                    "ifupdown2 skips it", "ifupdown2-ignores", blocking=False)
                continue
            value = " ".join(words[1:]).replace("$IFACE", current.name)
            current.options.append((number, keyword, value))
            current.end = number + 1
            key = IFUPDOWN2_ALIASES.get(_key(keyword), _key(keyword))
            self.iface(current.name).options.append((key, value, current, number))

    def _ifupdown2_iface(self, entry: InterfacesFile, number: int, words: list[str]
                         ) -> Stanza | None:
        if len(words) < 2:
            self.reading.report(entry, number + 1, f"{words[0]} without a name: ifupdown2 "
                                "stops reading (an internal error)", "ifupdown-refuses")
            return None
        name = words[1].split(":")[0]
        if _RANGE.search(name):
            self.reading.report(entry, number + 1, f"{words[1]} is a range of interfaces: zsn "
                                "does not expand ranges", "range", blocking=False)
            return None
        family = words[2] if len(words) > 2 else None
        method = words[3] if len(words) > 3 else None
        if method is not None and method not in IFUPDOWN2_METHODS:
            self.reading.report(entry, number + 1, f"method {method!r}: ifupdown2 does not "
                                "know it (it reports an error and goes on)",
                                "ifupdown2-ignores", blocking=False)
        stanza = Stanza(name, entry, number, number + 1, family, method)
        self.iface(name).stanzas.append(stanza)
        return stanza

    # -- ifupdown-ng ---------------------------------------------------------------------
    def _ng(self, entry: InterfacesFile) -> None:
        current: Iface | None = None
        stanza: Stanza | None = None
        for number, line in _logical_lines(entry.lines):
            words = line.split()
            if not words or not words[0][:1].isalpha():
                continue
            keyword = words[0]
            if keyword in ("iface", "interface", "template", "defaults"):
                opened = self._ng_stanza(entry, number, words)
                if opened is not None:
                    current, stanza = opened
                continue
            if keyword == "auto":
                if len(words) > 1:
                    current = self.iface(words[1])
                    current.auto = True
                    stanza = None
                continue
            if keyword in ("source", "source-directory"):
                if len(words) > 1:
                    self.source(entry, number, keyword, words[1])
                continue
            if current is None:
                continue
            if keyword == "inherit" and len(words) > 1:
                self._ng_inherit(entry, number, current, words[1])
                continue
            self._ng_option(current, stanza, number, words)

    def _ng_stanza(self, entry: InterfacesFile, number: int, words: list[str]
                   ) -> tuple[Iface, Stanza] | None:
        """An iface, interface, template or defaults line: the block it opens, if named."""
        keyword = words[0]
        name = "defaults" if keyword == "defaults" else (words[1] if len(words) > 1 else "")
        if not name:
            return None
        current = self.iface(name)
        current.template = keyword in ("template", "defaults")
        stanza = Stanza(name, entry, number, number + 1, None, None)
        current.stanzas.append(stanza)
        for word in words[2:]:
            if word in ("dhcp", "ppp"):
                current.options.append(("use", word, stanza, number))
        if "inherits" in words[:-1]:
            self._ng_inherit(entry, number, current, words[words.index("inherits") + 1])
        return current, stanza

    def _ng_option(self, current: Iface, stanza: Stanza | None, number: int,
                   words: list[str]) -> None:
        """An option line of the block `current` (in `stanza` when it is that block's)."""
        keyword = words[0]
        key = NG_REMAP.get(keyword, keyword)
        value = " ".join(words[1:])
        if keyword == "hostname":
            key = "dhcp-hostname"
        if stanza is not None and stanza.name == current.name:
            stanza.options.append((number, keyword, value))
            stanza.end = number + 1
        current.options.append((key, value, stanza, number))
        if self.auto_executors and "-" in key and key.split("-")[0] not in current.uses:
            # "bond-mode" means "use bond" (ifupdown-ng's auto_executor_selection).
            current.options.append(("use", key.split("-")[0], stanza, number))

    def _ng_inherit(self, entry: InterfacesFile, number: int, iface: Iface, parent: str
                    ) -> None:
        other = self.reading.ifaces.get(parent)
        if other is None:
            self.reading.report(entry, number + 1, f"{iface.name} inherits {parent}, which is "
                                "not defined before it", "ifupdown-ng-ignores",
                                blocking=False, names=(iface.name,))
            return
        if self.implicit_templates:
            other.template = True  # what is inherited from is a template, not a link
        iface.options.extend((k, v, None, line) for k, v, _s, line in other.options)


def _ng_setting(host: Host, name: str, default: bool = True) -> bool:
    """A boolean of /etc/network/ifupdown-ng.conf (``name = 1``)."""
    path = host.path("/etc/network/ifupdown-ng.conf")
    if not files.exists(path):
        return default
    for line in files.read_tracked(path).text.splitlines():
        key, equals, value = line.partition("=")
        if equals and key.strip() == name:
            return value.strip() not in ("0", "false", "no")
    return default


def read(host: Host, dialect: str) -> Reading:
    """The interfaces file and everything it sources, read as `dialect` reads it."""
    reader = _Reader(host, dialect)
    reader.read(MAIN)
    _check_repeats(reader.reading)
    return reader.reading


def parse(text: str, dialect: str, path: str = MAIN) -> Reading:
    """One file's text read as `dialect` reads it, its source lines not followed (what
    the fuzz tests drive)."""
    reader = _Reader(Host(), dialect)
    reader.source = lambda *_args: None  # type: ignore[method-assign]
    entry = InterfacesFile(path, None, text.splitlines(keepends=True))
    reader.reading.files.append(entry)
    {CLASSIC: reader._classic, IFUPDOWN2: reader._ifupdown2, NG: reader._ng}[dialect](entry)
    _check_repeats(reader.reading)
    for iface in reader.reading.ifaces.values():
        if iface.stanzas:
            iface_config(iface, reader.reading)
    return reader.reading


LIST_VALUED = ("bond-slaves", "slaves", "bond-members", "bridge-ports")
"""Options whose value is a list of names: two lines of one are two lists."""


def _check_repeats(reading: Reading) -> None:
    """An option given more than once: read as the installed implementation reads it
    (`Iface.value`), and reported, since the three do not agree on which wins. Zsn
    refuses to guess where Debian's ifupdown itself has no one value: two stanzas of
    different families that differ, or a number given twice in one stanza (it passes
    both, joined, to the script)."""
    dialect = reading.dialect
    for iface in reading.ifaces.values():
        for key in SINGLE_VALUED:
            values = iface.values(key)
            texts = [value for value, _stanza, _line in values]
            joined = dialect == CLASSIC and any("\n" in text for text in texts)
            if len(set(texts)) < 2 and not joined:
                continue
            _value, stanza, line = values[-1]
            where = stanza.file if stanza is not None else reading.files[0]
            shown = ", ".join(" ".join(text.split()) for text in texts)
            if dialect == CLASSIC and (len(set(texts)) > 1 or key not in LIST_VALUED):
                reading.report(where, line + 1, f"{iface.name} sets {key} more than once "
                               f"({shown}): Debian's ifupdown has no one value for it (two "
                               "stanzas differ, or a repeat joins two values)",
                               "repeated-option", names=(iface.name,))
                continue
            result = " ".join((iface.value(key, dialect) or "").split())
            reading.report(where, line + 1, f"{iface.name} sets {key} more than once "
                           f"({shown}): {dialect} uses {result}; the three ifupdown "
                           "implementations do not agree on which wins", "repeated-option",
                           blocking=False, names=(iface.name,))


# -- what the interfaces are --------------------------------------------------------------
def _words(value: str | None) -> tuple[str, ...]:
    """A list of names; ``none`` is none (``all`` and the like are `_expression`s)."""
    if not value or value.split() == ["none"]:
        return ()
    return tuple(value.split())


def _number(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _is_bond(iface: Iface, dialect: str) -> bool:
    """Whether the dialect makes a bond of `iface`: ifenslave acts on a stanza with
    bond-slaves (or slaves) or bond-mode that is no member (bond-master); ifupdown2's
    bond addon on one with bond-slaves; ifupdown-ng's bond executor where it is used."""
    if dialect == NG:
        return "bond" in iface.uses
    if dialect == IFUPDOWN2:
        return iface.value("bond-slaves", dialect) is not None
    return not iface.value("bond-master", dialect) and bool(
        _bond_members(iface, dialect) or iface.value("bond-mode", dialect))


def _bond_members(iface: Iface, dialect: str) -> str | None:
    """The members as the dialect's bond code reads them (ifenslave falls back to the
    older ``slaves`` when ``bond-slaves`` is empty)."""
    if dialect == NG:
        return iface.value("bond-members", dialect)
    members = iface.value("bond-slaves", dialect)
    if dialect == CLASSIC and not members:
        members = iface.value("slaves", dialect)
    return members


def _expression(iface: Iface, reading: Reading, keys: tuple[str, ...], value: str,
                what: str) -> bool:
    """Report members that are matched at ifup time (bridge-utils' ``all`` and
    ``regex``, ifenslave's ``all``, ifupdown2's ``glob``/``regex``); True if so."""
    words = value.split()
    dialect = reading.dialect
    special = _PORT_WORDS[dialect] if what == "bridge" or dialect == IFUPDOWN2 else \
        ({"all"} if dialect == CLASSIC else set())
    if not set(words) & special:
        return False
    found = [item for key in keys for item in iface.values(key)] or \
        [(value, iface.stanzas[0], iface.stanzas[0].start)]
    _value, stanza, line = found[-1]
    reading.report(stanza.file if stanza else reading.files[0], line + 1,
                   f"{what} members {' '.join(words)}: matched against the interfaces there "
                   "are at ifup; zsn does not expand them", "port-expression",
                   names=(iface.name,))
    return True


def iface_config(iface: Iface, reading: Reading) -> LinkConfig | None:
    """A bond, bridge or VLAN as the dialect makes it (None for anything else)."""
    dialect = reading.dialect
    source = (iface.stanzas[0].file.path if iface.stanzas else "")
    mtu = _number(iface.value("mtu", dialect))
    if _is_bond(iface, dialect):
        mode_text = iface.value("bond-mode", dialect)
        mode = bonding.name_of(bonding.MODES, int(mode_text)) if mode_text and \
            mode_text.isdigit() else mode_text
        members = _bond_members(iface, dialect)
        if members and _expression(iface, reading, ("bond-slaves", "slaves"), members, "bond"):
            return None
        lacp = iface.value("bond-lacp-rate", dialect)
        return LinkConfig(
            name=iface.name, kind="bond", members=_words(members), mtu=mtu, mode=mode,
            miimon=_number(iface.value("bond-miimon", dialect)),
            xmit_hash_policy=iface.value("bond-xmit-hash-policy", dialect),
            lacp_rate=_LACP_RATES.get(lacp, lacp) if lacp else None, source=source)
    bridge_ports = iface.value("bridge-ports", dialect)
    if dialect == NG:
        if "bridge" not in iface.uses:
            bridge_ports = None
        elif bridge_ports is None:
            bridge_ports = iface.value("requires", dialect) or ""
    if bridge_ports is not None:
        if _expression(iface, reading, ("bridge-ports", "requires"), bridge_ports, "bridge"):
            return None
        stp = iface.value("bridge-stp", dialect)
        return LinkConfig(name=iface.name, kind="bridge", members=_words(bridge_ports),
                          mtu=mtu, stp=stp.lower() in ("on", "yes", "1") if stp else False,
                          source=source)
    return _vlan(iface, dialect, mtu, source)


def _vlan(iface: Iface, dialect: str, mtu: int | None, source: str) -> LinkConfig | None:
    raw = iface.value("vlan-raw-device", dialect)
    vlan_id = _number(iface.value("vlan-id", dialect))
    dotted = re.fullmatch(r"(.+)\.(\d{1,4})", iface.name)
    numbered = re.fullmatch(r"vlan(\d{1,4})", iface.name)
    parent: str | None = None
    number: int | None = None
    if dialect == CLASSIC:
        if dotted and raw is None:
            parent, number = dotted.group(1), int(dotted.group(2))
        elif raw is not None and (dotted or numbered):
            parent = raw
            number = int((dotted or numbered).group(2 if dotted else 1))  # type: ignore[union-attr]
    elif dialect == NG:
        if numbered and raw is not None:
            parent, number = raw, int(numbered.group(1))
        elif dotted and not iface.name.startswith("vlan"):
            parent, number = dotted.group(1), int(dotted.group(2))
        elif raw is not None and vlan_id is not None:
            parent, number = raw, vlan_id
    else:  # ifupdown2: vlan-id and vlan-raw-device, else the dotted name
        if raw is not None and vlan_id is not None:
            parent, number = raw, vlan_id
        elif dotted:
            parent, number = raw or dotted.group(1), int(dotted.group(2))
    if parent is None or number is None or number > 4094:
        return None
    return LinkConfig(name=iface.name, kind="vlan", parent=parent, vlan_id=number, mtu=mtu,
                      source=source)


class IfupdownBackend(FileBackend):
    name = "ifupdown"

    @staticmethod
    def _collect(host: Host, persisted: Persisted) -> None:
        dialect, _reason = dialect_of(host)
        persisted.dialect = dialect
        reading = read(host, dialect)
        masters: dict[str, list[str]] = {}
        for iface in reading.ifaces.values():
            if iface.template or not iface.stanzas:
                continue
            config = iface_config(iface, reading)
            if config is not None:
                persisted.configs[config.name] = config
            master = iface.value("bond-master", dialect)
            if master and dialect == CLASSIC:
                masters.setdefault(master, []).append(iface.name)
        for master, members in masters.items():
            config = persisted.configs.get(master)
            if config is not None and config.kind == "bond":
                extra = tuple(m for m in members if m not in config.members)
                persisted.configs[master] = replace(config, members=config.members + extra)
        persisted.unread.extend(reading.unread)

    def plan(self, host: Host, changes: list[Upsert | Remove],
             current: Persisted) -> PersistPlan:
        plan = PersistPlan(self.name)
        dialect, reason = dialect_of(host)
        reading = read(host, dialect)
        entries = reading.files
        if not entries:
            raise ZsnError(f"{MAIN} cannot be read")
        writer = _Writer(reading)
        created: list[InterfacesFile] = []
        for change, _old, config in in_order(changes, current):
            if isinstance(change, Remove) or config is None:
                writer.remove(entries + created, change.name)
                continue
            where = writer.stanza(entries + created, config.name)
            if where is None:
                writer.check_name(config)
                created.extend(writer.add(entries, config))
            else:
                writer.update(where, config, change.fields)
            if config.kind == "bond":
                writer.warn_members(entries + created, config, plan)
        plan.edits = file_edits(host, entries + created)
        plan.notes.append(f"written for {dialect} ({reason})")
        kinds = {c.config.kind for c in changes if isinstance(c, Upsert)}
        if dialect == CLASSIC:
            packages = [p for k, p in (("bond", "ifenslave"), ("bridge", "bridge-utils"))
                        if k in kinds]
            if packages:
                plan.notes.append(f"ifupdown needs the package(s) {', '.join(packages)} for "
                                  "these options; 'ifup NAME' applies a new stanza")
        return plan


class _Writer:
    """Edits in the installed dialect's syntax, keeping every other byte."""

    def __init__(self, reading: Reading):
        self.reading = reading
        self.dialect = reading.dialect

    def check_name(self, config: LinkConfig) -> None:
        if config.kind != "vlan" or self.dialect != CLASSIC:
            return
        if config.name == f"{config.parent}.{config.vlan_id}" or \
                config.name == f"vlan{config.vlan_id}":
            return
        raise ValidationError(f"ifupdown names a VLAN PARENT.ID or vlanID: call it "
                              f"{config.parent}.{config.vlan_id}, not {config.name}")

    @staticmethod
    def stanza(entries: list[InterfacesFile], name: str) -> Stanza | None:
        """The stanza to edit: the interface's last one (inet first for ifupdown)."""
        found = [s for e in entries if not e.removed for s in _stanzas(e) if s.name == name]
        inet = [s for s in found if s.family == "inet"]
        return (inet or found)[-1] if found else None

    def options(self, config: LinkConfig) -> list[tuple[str, str | None]]:
        """Option lines for `config` in the order zsn writes them (None: remove)."""
        options: list[tuple[str, str | None]] = []
        if config.kind == "bond":
            members = " ".join(config.members) or "none"
            if self.dialect == NG:
                options.append(("use", "bond"))
                options.append(("bond-members", members))
            else:
                options.append(("bond-slaves", members))
            options.append(("bond-mode", config.mode))
            options.append(("bond-miimon", str(config.miimon if config.miimon is not None
                                               else bonding.DEFAULT_MIIMON)))
            options.append(("bond-xmit-hash-policy", config.xmit_hash_policy))
            options.append(("bond-lacp-rate", config.lacp_rate))
        elif config.kind == "bridge":
            if self.dialect == NG:
                options.append(("use", "bridge"))
            spelling = "bridge_" if self.dialect == CLASSIC else "bridge-"
            options.append((f"{spelling}ports", " ".join(config.members) or "none"))
            options.append((f"{spelling}stp", "on" if config.stp else "off"))
        elif config.name != f"{config.parent}.{config.vlan_id}":
            options.append(("vlan-raw-device", config.parent))
            if not re.fullmatch(rf"vlan{config.vlan_id}", config.name):
                options.append(("vlan-id", str(config.vlan_id)))
        options.append(("mtu", str(config.mtu) if config.mtu is not None else None))
        return options

    _FIELD_OPTIONS = {
        "members": ("bond-slaves", "bond-members", "bridge-ports"), "mode": ("bond-mode",),
        "miimon": ("bond-miimon",), "xmit_hash_policy": ("bond-xmit-hash-policy",),
        "lacp_rate": ("bond-lacp-rate",), "stp": ("bridge-stp",), "mtu": ("mtu",),
        "parent": ("vlan-raw-device",), "vlan_id": ("vlan-id",),
    }

    def add(self, entries: list[InterfacesFile], config: LinkConfig) -> list[InterfacesFile]:
        name = link_values.LINK.text("iface", config.name)
        header = f"iface {name} inet manual" if self.dialect == CLASSIC else f"iface {name}"
        options = [(key, value) for key, value in self.options(config) if value is not None]
        lines = [f"auto {name}\n", header + "\n"]
        lines += [f"    {_option_line(key, value)}\n" for key, value in options]
        meant = [(f"auto {name}", []), (header, [(_key(key), value) for key, value in options])]
        main = entries[0]
        file_name = "zsn-" + config.name.replace(".", "_")
        path = f"{DROP_IN}/{file_name}"
        if self.reading.reads(path):
            existing = next((e for e in entries if e.path == path), None)
            if existing is not None and existing.snapshot is not None:
                raise ValidationError(f"{path} exists but defines no {config.name}; "
                                      "move it away first")
            created = InterfacesFile(path, None, lines)
            created.intent.whole(meant)
            return [created]
        if main.lines and main.lines[-1].strip():
            main.lines.append("\n")
        main.lines.extend(lines)
        for title, items in meant:
            main.intent.insert(None, title, items)
        return []

    def update(self, stanza: Stanza, config: LinkConfig, fields: frozenset[str]) -> None:
        entry = stanza.file
        wanted = {_key(option) for name in fields for option in self._FIELD_OPTIONS.get(name, ())}
        indent = "    "
        if stanza.options:
            first = entry.lines[stanza.options[0][0]]
            indent = first[:len(first) - len(first.lstrip())] or indent
        insert_at = stanza.end
        where = entry.section_at(stanza.start)
        for key, value in self.options(config):
            if _key(key) not in wanted:
                continue
            aliases = {_key(key)} | ({"bond-slaves", "bond-members"}
                                     if _key(key) in ("bond-slaves", "bond-members") else set())
            present = [(line, name, now) for line, name, now in stanza.options
                       if _key(name) in aliases]
            if present:
                line, written, now = present[0]
                for alias in {_key(name) for _line, name, _now in present}:
                    entry.intent.assign(where, alias, [])
                if value is None:
                    entry.lines[line] = ""
                else:
                    entry.intent.assign(where, _key(written), [value])
                    if now != value:
                        old_line = entry.lines[line]
                        keep = old_line[:len(old_line) - len(old_line.lstrip())]
                        entry.lines[line] = f"{keep}{_option_line(written, value)}\n"
                for extra, _name, _now in present[1:]:
                    entry.lines[extra] = ""
            elif value is not None:
                entry.intent.append(where, key, value)
                entry.lines.insert(insert_at, f"{indent}{_option_line(key, value)}\n")
                insert_at += 1
                stanza = next(s for s in _stanzas(entry) if s.start == stanza.start)
        entry.lines = [line for line in entry.lines if line != ""]

    def warn_members(self, entries: list[InterfacesFile], config: LinkConfig,
                     plan: PersistPlan) -> None:
        for member in config.members:
            where = self.stanza(entries, member)
            if where is not None and where.method in ("dhcp", "static"):
                plan.warnings.append(
                    f"{where.file.path} gives member {member} its own addresses "
                    f"('iface {member} {where.family} {where.method}'): change it to "
                    "'inet manual'")

    @staticmethod
    def remove(entries: list[InterfacesFile], name: str) -> None:
        for entry in entries:
            if entry.removed:
                continue
            kill: set[int] = set()
            doomed: list[int] = []
            for stanza in _stanzas(entry):
                if stanza.name == name:
                    kill.update(range(stanza.start, stanza.end))
                    doomed.append(entry.section_at(stanza.start))
            for number, line in enumerate(entry.lines):
                words = line.split()
                if words and (words[0] == "auto" or words[0].startswith("allow-")) \
                        and name in words[1:]:
                    rest = [w for w in words[1:] if w != name]
                    if rest:
                        entry.intent.retitle(entry.section_at(number),
                                             " ".join([words[0], *rest]))
                        entry.lines[number] = f"{words[0]} {' '.join(rest)}\n"
                    else:
                        doomed.append(entry.section_at(number))
                        kill.add(number)
            for index in sorted(doomed, reverse=True):
                entry.intent.delete(index)
            if not kill:
                continue
            entry.lines = [line for n, line in enumerate(entry.lines) if n not in kill]
            if entry.path.startswith(f"{DROP_IN}/zsn-") and not any(
                    line.strip() and not line.lstrip().startswith("#") for line in entry.lines):
                entry.removed = True


def _stanzas(entry: InterfacesFile) -> list[Stanza]:
    """The iface stanzas of one file as written (for editing)."""
    found: list[Stanza] = []
    current: Stanza | None = None
    for number, line in enumerate(entry.lines):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] in (*CLASSIC_KEYWORDS, "template", "defaults", "interface", "vlan") or \
                words[0].startswith(("allow-", "source")):
            current = None
            if words[0] in ("iface", "template", "interface", "vlan") and len(words) > 1:
                current = Stanza(words[1], entry, number, number + 1,
                                 words[2] if len(words) > 2 else None,
                                 words[3] if len(words) > 3 else None)
                found.append(current)
            continue
        if current is not None:
            current.options.append((number, words[0], " ".join(words[1:])))
            current.end = number + 1
    return found


IFUPDOWN = IfupdownBackend()


def _option_line(key: str, value: str) -> str:
    """``key value``, the value typed by `SCHEMA` and on one line (the format's renderer)."""
    type_ = SCHEMA.get(_key(key))
    if type_ is None:
        raise ValidationError(f"{key!r} is not an option zsn writes in a stanza")
    if value.endswith("\\"):
        raise ValidationError(f"{key} {value[:80]!r}: a final backslash would continue the "
                              "line into the next")
    return f"{key} {type_.text(key, one_line(value, key))}"


_SECTION_WORDS = (*CLASSIC_KEYWORDS, "template", "defaults", "interface", "vlan")


class _Interfaces:
    """/etc/network/interfaces (one file) as zsn reads it (`zsn.meaning.Format`): each
    stanza, ``auto`` or ``allow-`` line a section (its header line's words), each
    option line an entry (``_`` read as ``-``), continuations joined."""

    name = "ifupdown interfaces"

    def key(self, key: str) -> str:
        return _key(key)

    def read(self, text: str, source: str) -> Meaning:
        found: Meaning = []
        current: MeantSection | None = None
        for number, line in _logical_lines(text.splitlines(keepends=True)):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] in _SECTION_WORDS or words[0].startswith(("allow-", "source")):
                current = MeantSection(" ".join(words), [], number + 1)
                found.append(current)
                continue
            if current is None:
                current = MeantSection("", [], number + 1)
                found.append(current)
            current.entries.append(MeantEntry(_key(words[0]), " ".join(words[1:]),
                                              number + 1))
        return found


INTERFACES: Format = _Interfaces()
