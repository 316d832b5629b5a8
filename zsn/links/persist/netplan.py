"""netplan: ``/etc/netplan/*.yaml`` (and ``/lib``, ``/run``), validated by netplan itself.

Files with the same name shadow each other (``/run`` over ``/etc`` over ``/lib``); the
rest merge in lexical order of their names, later ones amending earlier ones
(netplan doc/netplan-generate.md). zsn edits only files under ``/etc/netplan``:
a definition is changed where it is defined, a new one goes into the file that
defines its members or parent, else the only file there, else ``90-zsn.yaml``.
Before a plan is shown, the edited tree is checked as ``netplan generate`` checks
it, in a scratch copy and without its side effects (`validate`).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zsn.errors import CommandError, ValidationError, ZsnError
from zsn.links import bonding
from zsn.links.persist import (
    NETPLAN_DIRS,
    Device,
    FileBackend,
    LinkConfig,
    Persisted,
    PersistPlan,
    Remove,
    Upsert,
    in_order,
    netplan_check,
    netplan_yaml,
)
from zsn.links.persist.yamledit import YamlDocument
from zsn.plan import FileEdit
from zsn.system import commands, files
from zsn.system.host import Host
from zsn.system.packages import package_version
from zsn.terminal import one_line

DIRS = NETPLAN_DIRS
EDITABLE = "/etc/netplan"
OWN_FILE = "/etc/netplan/90-zsn.yaml"
SECTIONS = {"bond": "bonds", "vlan": "vlans", "bridge": "bridges"}
OTHER_SECTIONS = {"ethernets": "ethernet", "wifis": "wifi", "modems": "modem",
                  "tunnels": "tunnel", "vrfs": "vrf", "dummy-devices": "dummy device",
                  "virtual-ethernets": "virtual ethernet", "nm-devices": "nm-device"}
"""Every other device type netplan defines (netplan-yaml(5)): zsn does not edit them, but
knows their names, so it never declares one again under ``ethernets:``."""
SIZE_CAP = 1 << 20
NETPLAN_TIMEOUT = 20.0


@dataclass(frozen=True)
class NetplanFile:
    path: str
    """As on the system, e.g. /etc/netplan/01-netcfg.yaml."""
    snapshot: files.FileSnapshot | None


def netplan_files(host: Host) -> list[NetplanFile]:
    """The files netplan reads, in its merge order (shadowed names left out)."""
    chosen: dict[str, str] = {}
    for directory in DIRS:
        for path in netplan_yaml(host, directory):
            chosen[path.name] = f"{directory}/{path.name}"
    found = []
    for name in sorted(chosen):
        system_path = chosen[name]
        found.append(NetplanFile(system_path, files.read_tracked(host.path(system_path))))
    return found


class NetplanBackend(FileBackend):
    name = "netplan"

    def _collect(self, host: Host, persisted: Persisted) -> None:
        version = package_version(host, "netplan.io")
        persisted.dialect = "netplan " + ".".join(map(str, version)) if version else ""
        for path, data in self._documents(host):
            network = data.get("network") if isinstance(data, dict) else None
            if not isinstance(network, dict):
                continue
            for section, kind in OTHER_SECTIONS.items():
                definitions = network.get(section)
                if isinstance(definitions, dict):
                    for name in definitions:
                        persisted.devices.setdefault(str(name), Device(str(name), kind, path))
            for kind, section in SECTIONS.items():
                definitions = network.get(section)
                if not isinstance(definitions, dict):
                    continue
                for name, body in definitions.items():
                    config = to_config(str(name), kind, body if isinstance(body, dict) else {},
                                       path)
                    old = persisted.configs.get(config.name)
                    persisted.configs[config.name] = _amend(old, config) if old else config

    def _documents(self, host: Host) -> list[tuple[str, Any]]:
        documents = []
        for netplan_file in netplan_files(host):
            assert netplan_file.snapshot is not None
            text = netplan_file.snapshot.text
            if len(text) > SIZE_CAP:
                raise ZsnError(f"{netplan_file.path}: larger than {SIZE_CAP >> 20} MiB")
            documents.append((netplan_file.path,
                              YamlDocument(text, netplan_file.path).data() or {}))
        return documents

    def plan(self, host: Host, changes: list[Upsert | Remove],
             current: Persisted) -> PersistPlan:
        plan = PersistPlan(self.name)
        existing = netplan_files(host)
        documents: dict[str, YamlDocument] = {}
        snapshots = {f.path: f.snapshot for f in existing}
        for netplan_file in existing:
            if netplan_file.path.startswith(EDITABLE + "/"):
                assert netplan_file.snapshot is not None
                documents[netplan_file.path] = YamlDocument(netplan_file.snapshot.text,
                                                            netplan_file.path)
        defined = self._where_defined(host)
        fixed = {path: data for path, data in self._documents(host)
                 if not path.startswith(EDITABLE + "/")}
        for change, old, config in in_order(changes, current):
            if isinstance(change, Remove) or config is None:
                self._remove(change.name, defined, documents, plan)
                continue
            other = current.devices.get(config.name)
            if other is not None:
                raise ValidationError(f"{config.name} is defined as a {other.kind} in "
                                      f"{other.source}; zsn makes it no {config.kind}")
            section = SECTIONS[config.kind]
            values = from_config(config, None if old is None else change.fields)
            if old is None:
                target = self._target(config, old, defined, documents)
                document = documents.setdefault(target, YamlDocument(
                    "network:\n  version: 2\n", target))
                # netplan refuses members, ports and VLAN parents it has no definition
                # for; they are declared before the new definition (netplan 0.106 refuses
                # a VLAN block ahead of its parent's in a file with Wi-Fi access points).
                for related in (*config.members, *([config.parent] if config.parent else [])):
                    self._declare_ethernet(related, defined, documents, target)
                document.set(("network", section, config.name), values)
                defined.setdefault(config.name, []).append(target)
                continue
            editor = _DefinitionEditor(config.name, section, defined.get(config.name, []),
                                       documents, fixed, plan)
            for key, value in values.items():
                if key == "interfaces":
                    editor.members(value)
                elif key == "parameters":
                    for name, sub_value in value.items():
                        editor.set(("parameters", name), sub_value)
                else:
                    editor.set((key,), value)
            for related in (*config.members, *([config.parent] if config.parent else [])):
                self._declare_ethernet(related, defined, documents, editor.last_editable())
        for path, document in documents.items():
            snapshot = snapshots.get(path)
            before = snapshot.text if snapshot else None
            if document.text == before:
                continue
            plan.edits.append(FileEdit(host.path(path), snapshot, document.text,
                                       mode=None if snapshot else files.PRIVATE_FILE_MODE,
                                       intent=document.intent))
        if plan.edits:
            plan.warnings.extend(validate(host, plan.edits))
            plan.notes.append("netplan applies the files at boot, or now with 'netplan apply'")
        return plan

    def _where_defined(self, host: Host) -> dict[str, list[str]]:
        """Interface name -> the files defining it (any section), in merge order."""
        found: dict[str, list[str]] = {}
        for path, data in self._documents(host):
            network = data.get("network") if isinstance(data, dict) else None
            if not isinstance(network, dict):
                continue
            for section in (*OTHER_SECTIONS, *SECTIONS.values()):
                definitions = network.get(section)
                if isinstance(definitions, dict):
                    for name in definitions:
                        found.setdefault(str(name), []).append(path)
        return found

    def _target(self, config: LinkConfig, old: LinkConfig | None,
                defined: dict[str, list[str]], documents: dict[str, YamlDocument]) -> str:
        if old is not None:
            places = defined.get(config.name, [])
            editable = [p for p in places if p.startswith(EDITABLE + "/")]
            if not editable:
                raise ValidationError(f"{config.name} is defined in {', '.join(places)}, "
                                      f"which zsn does not edit (only {EDITABLE})")
            return editable[-1]
        related = [*config.members, *([config.parent] if config.parent else [])]
        for name in related:
            editable = [p for p in defined.get(name, []) if p.startswith(EDITABLE + "/")]
            if editable:
                return editable[-1]
        if len(documents) == 1:
            return next(iter(documents))
        return OWN_FILE

    def _declare_ethernet(self, member: str, defined: dict[str, list[str]],
                          documents: dict[str, YamlDocument], target: str) -> None:
        if member in defined:
            return
        documents[target].set(("network", "ethernets", member), {})
        defined[member] = [target]

    def _remove(self, name: str, defined: dict[str, list[str]],
                documents: dict[str, YamlDocument], plan: PersistPlan) -> None:
        places = defined.pop(name, [])
        fixed = [p for p in places if not p.startswith(EDITABLE + "/")]
        if fixed:
            raise ValidationError(f"{name} is also defined in {', '.join(fixed)}, which zsn "
                                  f"does not edit (only {EDITABLE})")
        for path in places:
            document = documents[path]
            for section in SECTIONS.values():
                document.delete(("network", section, name))


class _DefinitionEditor:
    """Changes to one existing definition, each landing where it takes effect: in the
    last file (in netplan's merge order) that sets the key, when zsn edits that file;
    else in a later file zsn edits that defines the same device."""

    def __init__(self, name: str, section: str, places: list[str],
                 documents: dict[str, YamlDocument], fixed: dict[str, Any],
                 plan: PersistPlan):
        self.name, self.section, self.places = name, section, places
        self.documents, self.fixed, self.plan = documents, fixed, plan

    def _definition(self, path: str) -> dict[str, Any]:
        data = self.documents[path].data() if path in self.documents else self.fixed.get(path)
        found = data.get("network", {}) if isinstance(data, dict) else {}
        found = found.get(self.section, {}) if isinstance(found, dict) else {}
        body = found.get(self.name) if isinstance(found, dict) else None
        return body if isinstance(body, dict) else {}

    @staticmethod
    def _lookup(body: dict[str, Any], keys: tuple[str, ...]) -> Any:
        node: Any = body
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    def last_editable(self) -> str:
        editable = [p for p in self.places if p.startswith(EDITABLE + "/")]
        if not editable:
            raise ValidationError(f"{self.name} is defined in {', '.join(self.places)}, "
                                  f"which zsn does not edit (only {EDITABLE})")
        return editable[-1]

    def set(self, keys: tuple[str, ...], value: Any) -> None:
        setters = [p for p in self.places
                   if self._lookup(self._definition(p), keys) is not None]
        winner = setters[-1] if setters else None
        if winner is not None and self._lookup(self._definition(winner), keys) == value:
            return
        path = ("network", self.section, self.name, *keys)
        if value is None:
            for place in setters:
                if not place.startswith(EDITABLE + "/"):
                    raise ValidationError(f"{place} sets {'.'.join(keys)} for {self.name}; "
                                          f"zsn does not edit it (only {EDITABLE})")
                self.documents[place].delete(path, keep=3)
            return
        if winner is not None and winner.startswith(EDITABLE + "/"):
            target = winner
        else:
            later = [p for p in self.places if p.startswith(EDITABLE + "/") and (
                winner is None or self.places.index(p) > self.places.index(winner))]
            if not later:
                raise ValidationError(f"{winner} sets {'.'.join(keys)} for {self.name} and "
                                      f"no file zsn edits comes after it (only {EDITABLE})")
            target = later[-1]
        self.documents[target].set(path, value)
        if len(self.places) > 1:
            self.plan.notes.append(f"{self.name}: {'.'.join(keys)} set in {target}, the file "
                                   "whose value netplan uses")

    def members(self, wanted: list[str]) -> None:
        """netplan joins the member lists of every file: drop a member from each file
        listing it, add new ones to the last file zsn edits."""
        listed: list[str] = []
        for place in self.places:
            now = self._definition(place).get("interfaces")
            if not isinstance(now, list):
                continue
            kept = [str(m) for m in now if str(m) in wanted]
            if len(kept) != len(now):
                if not place.startswith(EDITABLE + "/"):
                    raise ValidationError(f"{place} lists members of {self.name}; zsn does "
                                          f"not edit it (only {EDITABLE})")
                self.documents[place].set(("network", self.section, self.name, "interfaces"),
                                          kept)
            listed += kept
        new = [m for m in wanted if m not in listed]
        if new:
            target = self.last_editable()
            now = self._definition(target).get("interfaces")
            current = [str(m) for m in now] if isinstance(now, list) else []
            self.documents[target].set(("network", self.section, self.name, "interfaces"),
                                       current + new)


def _amend(old: LinkConfig, new: LinkConfig) -> LinkConfig:
    """A later file amends a definition: what it sets wins, and its members add to the
    earlier ones (netplan joins the lists; checked with ``netplan get``)."""
    updates: dict[str, Any] = {}
    for field_name in ("parent", "vlan_id", "mtu", "mode", "miimon", "xmit_hash_policy",
                       "lacp_rate", "stp"):
        value = getattr(new, field_name)
        if value not in (None, ()):
            updates[field_name] = value
    members = old.members + tuple(m for m in new.members if m not in old.members)
    return replace(old, **updates, members=members, source=new.source)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"yes": True, "true": True, "on": True, "no": False, "false": False,
                "off": False}.get(value.lower())
    return None


def to_config(name: str, kind: str, body: dict[str, Any], source: str) -> LinkConfig:
    """One netplan definition (the mapping under ``bonds: NAME:`` etc.)."""
    parameters = body.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    interfaces = body.get("interfaces")
    members = tuple(str(m) for m in interfaces) if isinstance(interfaces, list) else ()
    stp = _bool(parameters.get("stp")) if kind == "bridge" else None
    if kind == "bridge" and stp is None:
        stp = True  # netplan's default for bridges
    miimon = parameters.get("mii-monitor-interval")
    return LinkConfig(
        name=name, kind=kind, members=members,
        parent=str(body["link"]) if kind == "vlan" and "link" in body else None,
        vlan_id=_int(body.get("id")) if kind == "vlan" else None,
        mtu=_int(body.get("mtu")),
        mode=str(parameters["mode"]) if kind == "bond" and "mode" in parameters else None,
        miimon=_int(str(miimon).removesuffix("ms")) if miimon is not None else None,
        xmit_hash_policy=str(parameters["transmit-hash-policy"])
        if "transmit-hash-policy" in parameters else None,
        lacp_rate=str(parameters["lacp-rate"]) if "lacp-rate" in parameters else None,
        stp=stp, source=source)


def from_config(config: LinkConfig, only: frozenset[str] | None) -> dict[str, Any]:
    """The netplan keys for `config` (all of them, or those of the fields in `only`;
    ``None`` values mean "remove the key")."""
    values: dict[str, Any] = {}

    def wanted(field_name: str) -> bool:
        return only is None or field_name in only

    if config.kind in ("bond", "bridge") and wanted("members"):
        values["interfaces"] = list(config.members)
    if config.kind == "vlan":
        if wanted("vlan_id"):
            values["id"] = config.vlan_id
        if wanted("parent"):
            values["link"] = config.parent
    if wanted("mtu") and (config.mtu is not None or only is not None):
        values["mtu"] = config.mtu
    parameters: dict[str, Any] = {}
    if config.kind == "bond":
        if wanted("mode") and config.mode:
            parameters["mode"] = config.mode
        if wanted("miimon"):
            parameters["mii-monitor-interval"] = config.miimon if config.miimon is not None \
                else bonding.DEFAULT_MIIMON
        if wanted("xmit_hash_policy") and config.xmit_hash_policy:
            parameters["transmit-hash-policy"] = config.xmit_hash_policy
        if wanted("lacp_rate") and config.lacp_rate:
            parameters["lacp-rate"] = config.lacp_rate
    if config.kind == "bridge" and wanted("stp"):
        parameters["stp"] = bool(config.stp)
    if parameters:
        values["parameters"] = parameters
    return values


class Unchecked(ZsnError):
    """netplan's check could not run here (no libnetplan, or the check failed to run)."""


def validate(host: Host, edits: list[FileEdit]) -> list[str]:
    """Check the tree with `edits` applied as ``netplan generate`` would (`generate`).

    Refuses (`ValidationError`) when netplan does, saying whether it refuses zsn's
    result or already the files as they are; returns a warning when netplan's library
    is not installed here, so the files could not be checked."""
    try:
        problem = generate(host, edits)
        if problem is None:
            return []
        already = bool(edits) and generate(host, []) is not None
    except Unchecked as exc:
        return [str(exc)]
    if already:
        raise ValidationError(f"netplan already refuses the files as they are, before zsn's "
                              f"change: {problem}")
    raise ValidationError(f"netplan generate refuses the result: {problem}")


def generate(host: Host, edits: list[FileEdit]) -> str | None:
    """netplan's one-line complaint about the tree with `edits` applied (None: it
    accepts it), checked as ``netplan generate`` would
    (`zsn.links.persist.netplan_check`) on a scratch copy in a private folder zsn
    makes: the files netplan reads, each read through the path rule and written there
    as a regular file, so the copy holds no link and nothing from outside the tree;
    the check runs nothing on the host and writes only into the copy. `Unchecked`
    when it cannot check here."""
    texts = {found.path: found.snapshot.text for found in netplan_files(host)
             if found.snapshot is not None}
    for edit in edits:
        texts["/" + str(edit.path.relative_to(host.root))] = edit.new_text
    with tempfile.TemporaryDirectory(prefix="zsn-netplan-") as scratch:
        root = Path(scratch)
        for system_path, text in texts.items():
            target = root / system_path.lstrip("/")
            files.make_dirs(target.parent)
            files.write_atomic(target, text, previous=None, mode=files.PRIVATE_FILE_MODE,
                               backup=False)
        try:
            result = commands.run([sys.executable, "-m", "zsn.links.persist.netplan_check",
                                   str(root)], timeout=NETPLAN_TIMEOUT, check=False)
        except CommandError as exc:
            raise Unchecked(f"netplan's check could not run: {exc}") from exc
        if result.returncode == netplan_check.EXIT_NO_LIBRARY:
            raise Unchecked("netplan is not installed here: the files were not checked as "
                            "'netplan generate' would check them")
        if not result.ok:
            return netplan_error(result.stderr or result.stdout, str(root))
    return None


def netplan_error(output: str, scratch: str) -> str:
    """The line of netplan's output that says what is wrong (``FILE:LINE:COL: Error
    ...``), with the scratch directory taken out of its paths: one line, escaped
    (`zsn.terminal.one_line`), quoting only what the scratch copy held."""
    lines = [line.replace(scratch, "").strip() for line in output.splitlines()]
    for line in lines:
        if "Error" in line or "error" in line:
            return one_line(line)
    useful = [line for line in lines if line and "WARNING" not in line
              and not line.startswith("See the ")]
    return one_line(useful[0]) if useful else "exit status 1"


NETPLAN = NetplanBackend()
