"""ifupdown: ``/etc/network/interfaces`` and the files its ``source`` and
``source-directory`` lines pull in.

A stanza is ``iface NAME FAMILY METHOD`` followed by option lines up to the next
stanza keyword; ``auto``/``allow-*`` lines bring links up at boot. Bonds use
ifenslave's options (``bond-slaves``, ``bond-mode``, ``bond-miimon`` ...), bridges
bridge-utils' (``bridge_ports``, ``bridge_stp``); a VLAN named ``PARENT.ID`` needs
nothing more (ifupdown knows it natively), ``vlanID`` needs ``vlan-raw-device``
(package vlan). ``-`` and ``_`` are the same in option names (ifupdown execute.c).
New stanzas go into ``/etc/network/interfaces.d/zsn-NAME`` when that folder is
sourced, else at the end of ``/etc/network/interfaces``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace

from zsn.errors import ValidationError, ZsnError
from zsn.links import bonding
from zsn.links.persist import (
    IFUPDOWN_MAIN,
    FileBackend,
    LinkConfig,
    Persisted,
    PersistPlan,
    Remove,
    Upsert,
    file_edits,
    in_order,
)
from zsn.system import files
from zsn.system.host import Host

MAIN = IFUPDOWN_MAIN
DROP_IN = "/etc/network/interfaces.d"
STANZA_WORDS = ("iface", "mapping", "auto", "source", "source-directory", "rename",
                "no-auto-down", "no-scripts")
_SOURCE_DIRECTORY_NAME = re.compile(r"[a-zA-Z0-9_-]+")
MAX_FILES = 200


def _key(option: str) -> str:
    return option.replace("_", "-")


def _starts_stanza(word: str) -> bool:
    return word in STANZA_WORDS or word.startswith("allow-")


@dataclass
class Stanza:
    name: str
    family: str
    method: str
    start: int
    end: int
    """Line after its last option line (exclusive)."""
    options: list[tuple[int, str, str]] = field(default_factory=list)
    """(line, option as written, value)."""

    def get(self, option: str) -> str | None:
        for _line, name, value in self.options:
            if _key(name) == _key(option):
                return value
        return None


@dataclass
class InterfacesFile:
    path: str
    snapshot: files.FileSnapshot | None
    lines: list[str]
    removed: bool = False

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def stanzas(self) -> list[Stanza]:
        found: list[Stanza] = []
        current: Stanza | None = None
        for number, line in enumerate(self.lines):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if _starts_stanza(words[0]):
                current = None
                if words[0] == "iface" and len(words) >= 4:
                    current = Stanza(words[1], words[2], words[3], number, number + 1)
                    found.append(current)
                continue
            if current is not None:
                current.options.append((number, words[0], " ".join(words[1:])))
                current.end = number + 1
        return found

    def sources(self) -> list[tuple[str, str]]:
        """(keyword, pattern) of every source/source-directory line."""
        found = []
        for line in self.lines:
            words = line.split()
            if len(words) >= 2 and words[0] in ("source", "source-directory"):
                found.append((words[0], words[1]))
        return found


def read_files(host: Host) -> list[InterfacesFile]:
    """/etc/network/interfaces and everything it sources (recursively), in reading order.

    Source patterns are data: normalised so ``..`` cannot climb out of the root, and
    a wildcard is expanded in the last component only (``interfaces.d/*``)."""
    found: list[InterfacesFile] = []
    seen: set[str] = set()

    def visit(system_path: str) -> None:
        if system_path in seen or len(found) >= MAX_FILES:
            return
        seen.add(system_path)
        path = host.path(system_path)
        if not files.exists(path) or path.is_dir():
            return
        snapshot = files.read_tracked(path)
        entry = InterfacesFile(system_path, snapshot, snapshot.text.splitlines(keepends=True))
        if entry.lines and not entry.lines[-1].endswith("\n"):
            entry.lines[-1] += "\n"
        found.append(entry)
        base = posixpath.dirname(system_path)
        for keyword, pattern in entry.sources():
            absolute = posixpath.normpath(posixpath.join(base, pattern))
            if keyword == "source":
                folder, name = posixpath.split(absolute)
                for match in files.list_files(host.path(folder), name):
                    visit(posixpath.join(folder, match.name))
            else:
                for child in files.list_files(host.path(absolute)):
                    if _SOURCE_DIRECTORY_NAME.fullmatch(child.name):
                        visit(posixpath.join(absolute, child.name))

    visit(MAIN)
    return found


def drop_in_sourced(main: InterfacesFile) -> bool:
    """Whether /etc/network/interfaces reads /etc/network/interfaces.d/ (any name)."""
    for keyword, pattern in main.sources():
        if keyword == "source-directory" and pattern.rstrip("/") in (DROP_IN, "interfaces.d"):
            return True
        if keyword == "source" and pattern in (f"{DROP_IN}/*", "interfaces.d/*"):
            return True
    return False


def _words(value: str | None) -> tuple[str, ...]:
    if not value or value in ("none", "all"):
        return ()
    return tuple(value.split())


def stanza_config(stanza: Stanza, path: str) -> LinkConfig | None:
    """A bond, bridge or VLAN from its stanza (None for anything else)."""
    mtu_text = stanza.get("mtu")
    mtu = int(mtu_text) if mtu_text and mtu_text.isdigit() else None
    if any(_key(name).startswith("bond-") and _key(name) != "bond-master"
           for _line, name, _value in stanza.options):
        mode_text = stanza.get("bond-mode")
        mode = bonding.name_of(bonding.MODES, int(mode_text)) if mode_text and \
            mode_text.isdigit() else mode_text
        miimon_text = stanza.get("bond-miimon")
        return LinkConfig(
            name=stanza.name, kind="bond", members=_words(stanza.get("bond-slaves")),
            mtu=mtu, mode=mode,
            miimon=int(miimon_text) if miimon_text and miimon_text.isdigit() else None,
            xmit_hash_policy=stanza.get("bond-xmit-hash-policy"),
            lacp_rate=stanza.get("bond-lacp-rate"), source=path)
    if stanza.get("bridge-ports") is not None:
        stp = stanza.get("bridge-stp")
        return LinkConfig(name=stanza.name, kind="bridge",
                          members=_words(stanza.get("bridge-ports")), mtu=mtu,
                          stp=stp in ("on", "yes") if stp else False, source=path)
    raw = stanza.get("vlan-raw-device")
    dotted = re.fullmatch(r"(.+)\.(\d{1,4})", stanza.name)
    numbered = re.fullmatch(r"vlan(\d{1,4})", stanza.name)
    if dotted and raw is None:
        return LinkConfig(name=stanza.name, kind="vlan", parent=dotted.group(1),
                          vlan_id=int(dotted.group(2)), mtu=mtu, source=path)
    if raw is not None and (dotted or numbered):
        number = (dotted or numbered).group(2 if dotted else 1)  # type: ignore[union-attr]
        return LinkConfig(name=stanza.name, kind="vlan", parent=raw, vlan_id=int(number),
                          mtu=mtu, source=path)
    return None


class IfupdownBackend(FileBackend):
    name = "ifupdown"

    @staticmethod
    def _collect(host: Host, persisted: Persisted) -> None:
        masters: dict[str, list[str]] = {}
        for entry in read_files(host):
            for stanza in entry.stanzas():
                config = stanza_config(stanza, entry.path)
                if config is not None and config.name not in persisted.configs:
                    persisted.configs[config.name] = config
                master = stanza.get("bond-master")
                if master:
                    masters.setdefault(master, []).append(stanza.name)
        for master, members in masters.items():
            config = persisted.configs.get(master)
            if config is not None and config.kind == "bond":
                extra = tuple(m for m in members if m not in config.members)
                persisted.configs[master] = replace(config, members=config.members + extra)

    def plan(self, host: Host, changes: list[Upsert | Remove],
             current: Persisted) -> PersistPlan:
        plan = PersistPlan(self.name)
        entries = read_files(host)
        if not entries:
            raise ZsnError(f"{MAIN} cannot be read")
        created: list[InterfacesFile] = []
        for change, old, config in in_order(changes, current):
            if isinstance(change, Remove) or config is None:
                self._remove(entries + created, change.name)
                continue
            self._check_name(config)
            where = self._stanza(entries + created, config.name)
            if where is None:
                created.extend(self._add(entries, config))
            else:
                self._update(where[0], where[1], config, change.fields, old)
            if config.kind == "bond":
                self._warn_members(entries + created, config, plan)
        plan.edits = file_edits(host, entries + created)
        kinds = {c.config.kind for c in changes if isinstance(c, Upsert)}
        packages = [p for k, p in (("bond", "ifenslave"), ("bridge", "bridge-utils"))
                    if k in kinds]
        if packages:
            plan.notes.append(f"ifupdown needs the package(s) {', '.join(packages)} for these "
                              "options; 'ifup NAME' applies a new stanza")
        return plan

    @staticmethod
    def _check_name(config: LinkConfig) -> None:
        if config.kind != "vlan":
            return
        if config.name == f"{config.parent}.{config.vlan_id}" or \
                config.name == f"vlan{config.vlan_id}":
            return
        raise ValidationError(f"ifupdown names a VLAN PARENT.ID or vlanID: call it "
                              f"{config.parent}.{config.vlan_id}, not {config.name}")

    @staticmethod
    def _stanza(entries: list[InterfacesFile], name: str) -> tuple[InterfacesFile,
                                                                   Stanza] | None:
        for entry in entries:
            if entry.removed:
                continue
            for stanza in entry.stanzas():
                if stanza.name == name and stanza.family == "inet":
                    return entry, stanza
        for entry in entries:
            for stanza in entry.stanzas():
                if stanza.name == name and not entry.removed:
                    return entry, stanza
        return None

    @staticmethod
    def _options(config: LinkConfig) -> list[tuple[str, str | None]]:
        """Option lines for `config` in the order zsn writes them (None: remove)."""
        options: list[tuple[str, str | None]] = []
        if config.kind == "bond":
            options.append(("bond-slaves", " ".join(config.members) or "none"))
            options.append(("bond-mode", config.mode))
            options.append(("bond-miimon", str(config.miimon if config.miimon is not None
                                               else bonding.DEFAULT_MIIMON)))
            options.append(("bond-xmit-hash-policy", config.xmit_hash_policy))
            options.append(("bond-lacp-rate", config.lacp_rate))
        elif config.kind == "bridge":
            options.append(("bridge_ports", " ".join(config.members) or "none"))
            options.append(("bridge_stp", "on" if config.stp else "off"))
        elif config.name != f"{config.parent}.{config.vlan_id}":
            options.append(("vlan-raw-device", config.parent))
        options.append(("mtu", str(config.mtu) if config.mtu is not None else None))
        return options

    _FIELD_OPTIONS = {
        "members": ("bond-slaves", "bridge-ports"), "mode": ("bond-mode",),
        "miimon": ("bond-miimon",), "xmit_hash_policy": ("bond-xmit-hash-policy",),
        "lacp_rate": ("bond-lacp-rate",), "stp": ("bridge-stp",), "mtu": ("mtu",),
        "parent": ("vlan-raw-device",),
    }

    def _add(self, entries: list[InterfacesFile], config: LinkConfig) -> list[InterfacesFile]:
        lines = [f"auto {config.name}\n", f"iface {config.name} inet manual\n"]
        lines += [f"    {key} {value}\n" for key, value in self._options(config)
                  if value is not None]
        main = entries[0]
        if drop_in_sourced(main):
            file_name = "zsn-" + config.name.replace(".", "_")
            path = f"{DROP_IN}/{file_name}"
            existing = next((e for e in entries if e.path == path), None)
            if existing is not None and existing.snapshot is not None:
                raise ValidationError(f"{path} exists but defines no {config.name}; "
                                      "move it away first")
            return [InterfacesFile(path, None, lines)]
        if main.lines and main.lines[-1].strip():
            main.lines.append("\n")
        main.lines.extend(lines)
        return []

    def _update(self, entry: InterfacesFile, stanza: Stanza, config: LinkConfig,
                fields: frozenset[str], old: LinkConfig | None) -> None:
        wanted = {_key(option) for name in fields for option in self._FIELD_OPTIONS.get(name, ())}
        indent = "    "
        if stanza.options:
            first = entry.lines[stanza.options[0][0]]
            indent = first[:len(first) - len(first.lstrip())] or indent
        insert_at = stanza.end
        for key, value in self._options(config):
            if _key(key) not in wanted:
                continue
            present = [(line, name) for line, name, _v in stanza.options
                       if _key(name) == _key(key)]
            if present:
                line, written = present[0]
                if value is None:
                    entry.lines[line] = ""
                else:
                    old_line = entry.lines[line]
                    keep = old_line[:len(old_line) - len(old_line.lstrip())]
                    entry.lines[line] = f"{keep}{written} {value}\n"
                for extra, _name in present[1:]:
                    entry.lines[extra] = ""
            elif value is not None:
                entry.lines.insert(insert_at, f"{indent}{key} {value}\n")
                insert_at += 1
                stanza = next(s for s in entry.stanzas() if s.start == stanza.start)
        entry.lines = [line for line in entry.lines if line != ""]

    def _warn_members(self, entries: list[InterfacesFile], config: LinkConfig,
                      plan: PersistPlan) -> None:
        for member in config.members:
            where = self._stanza(entries, member)
            if where is not None and where[1].method in ("dhcp", "static"):
                plan.warnings.append(
                    f"{where[0].path} gives member {member} its own addresses "
                    f"('iface {member} inet {where[1].method}'): change it to 'inet manual'")

    def _remove(self, entries: list[InterfacesFile], name: str) -> None:
        for entry in entries:
            if entry.removed:
                continue
            kill: set[int] = set()
            for stanza in entry.stanzas():
                if stanza.name == name:
                    kill.update(range(stanza.start, stanza.end))
            for number, line in enumerate(entry.lines):
                words = line.split()
                if words and (words[0] == "auto" or words[0].startswith("allow-")) \
                        and name in words[1:]:
                    rest = [w for w in words[1:] if w != name]
                    if rest:
                        entry.lines[number] = f"{words[0]} {' '.join(rest)}\n"
                    else:
                        kill.add(number)
            if not kill:
                continue
            entry.lines = [line for n, line in enumerate(entry.lines) if n not in kill]
            if entry.path.startswith(f"{DROP_IN}/zsn-") and not any(
                    line.strip() and not line.lstrip().startswith("#") for line in entry.lines):
                entry.removed = True


IFUPDOWN = IfupdownBackend()
