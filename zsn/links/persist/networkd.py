"""systemd-networkd: ``.netdev`` files create bonds, VLANs and bridges; ``.network`` files
attach members (``Bond=``, ``Bridge=``) and VLANs (``VLAN=``) and set the MTU.

Files live in ``/etc/systemd/network`` (which zsn edits), ``/run/systemd/network`` and
``/usr/lib/systemd/network``; the same file name shadows, and for each link the
first ``.network`` file in lexical order whose ``[Match] Name=`` matches it wins. zsn
edits a ``.network`` file that matches a link by its exact name; otherwise it adds
``10-zsn-NAME.network``, which sorts before the usual ones (and says so when it takes
a link over from a wildcard match). New netdevs go into ``30-zsn-NAME.netdev``.
There is no offline validator for networkd (systemd issue #31984).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from zsn.errors import ValidationError
from zsn.links import bonding
from zsn.links.persist import (
    NETWORKD_DIR,
    FileBackend,
    LinkConfig,
    Persisted,
    PersistPlan,
    Remove,
    Upsert,
    file_edits,
    in_order,
)
from zsn.links.persist.unitfile import UnitFile
from zsn.system import files
from zsn.system.host import Host

DIRS = ("/usr/lib/systemd/network", "/lib/systemd/network", "/run/systemd/network",
        "/etc/systemd/network")
"""In increasing precedence for files of the same name."""
EDITABLE = NETWORKD_DIR
KINDS = ("bond", "vlan", "bridge")
_GLOB_CHARS = set("*?[")


@dataclass
class NetworkdFile:
    path: str
    snapshot: files.FileSnapshot | None
    unit: UnitFile
    removed: bool = False

    @property
    def text(self) -> str:
        return self.unit.text

    @property
    def editable(self) -> bool:
        return self.path.startswith(EDITABLE + "/")


@dataclass
class Tree:
    netdevs: list[NetworkdFile] = field(default_factory=list)
    networks: list[NetworkdFile] = field(default_factory=list)
    """In lexical order of file name (networkd's matching order)."""

    def netdev(self, name: str) -> NetworkdFile | None:
        for netdev in self.netdevs:
            if not netdev.removed and netdev.unit.get("NetDev", "Name") == name:
                return netdev
        return None

    def network_for(self, name: str) -> NetworkdFile | None:
        """The .network file networkd would use for `name` (first match wins)."""
        for network in self.networks:
            if network.removed:
                continue
            patterns = network.unit.values("Match", "Name")
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                return network
        return None


def read_tree(host: Host) -> Tree:
    chosen: dict[str, str] = {}
    for directory in DIRS:
        for pattern in ("*.netdev", "*.network"):
            for path in files.list_files(host.path(directory), pattern):
                chosen[path.name] = f"{directory}/{path.name}"
    tree = Tree()
    for name in sorted(chosen):
        snapshot = files.read_tracked(host.path(chosen[name]))
        entry = NetworkdFile(chosen[name], snapshot, UnitFile(snapshot.text))
        (tree.netdevs if name.endswith(".netdev") else tree.networks).append(entry)
    return tree


def parse_timespan_ms(text: str) -> int | None:
    """A systemd time span (``100ms``, ``1s``, ``0``; a bare number is seconds) in ms."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|msec|s|sec|min)?\s*", text)
    if match is None:
        return None
    value = int(match.group(1))
    return {"ms": value, "msec": value, "min": value * 60_000}.get(match.group(2) or "s",
                                                                   value * 1000)


def _exact(network: NetworkdFile, name: str) -> bool:
    patterns = network.unit.values("Match", "Name")
    return patterns == [name]


class NetworkdBackend(FileBackend):
    name = "networkd"

    def _collect(self, host: Host, persisted: Persisted) -> None:
        tree = read_tree(host)
        for netdev in tree.netdevs:
            config = self._config(tree, netdev)
            if config is not None:
                persisted.configs[config.name] = config

    def _config(self, tree: Tree, netdev: NetworkdFile) -> LinkConfig | None:
        unit = netdev.unit
        name, kind = unit.get("NetDev", "Name"), unit.get("NetDev", "Kind")
        if not name or kind not in KINDS:
            return None
        network = tree.network_for(name)
        mtu_text = unit.get("NetDev", "MTUBytes") or (
            network.unit.get("Link", "MTUBytes") if network else None)
        members: list[str] = []
        parent = None
        key = {"bond": "Bond", "bridge": "Bridge", "vlan": "VLAN"}[kind]
        for other in tree.networks:
            patterns = other.unit.values("Match", "Name")
            exact = patterns[0] if len(patterns) == 1 and not _GLOB_CHARS & set(patterns[0]) \
                else None
            if exact is None or tree.network_for(exact) is not other:
                continue
            if kind == "vlan":
                if name in other.unit.values("Network", "VLAN"):
                    parent = exact
            elif other.unit.get("Network", key) == name:
                members.append(exact)
        miimon_text = unit.get("Bond", "MIIMonitorSec")
        stp_text = unit.get("Bridge", "STP")
        vlan_id = unit.get("VLAN", "Id")
        return LinkConfig(
            name=name, kind=kind, members=tuple(members), parent=parent,
            vlan_id=int(vlan_id) if vlan_id and vlan_id.isdigit() else None,
            mtu=int(mtu_text) if mtu_text and mtu_text.isdigit() else None,
            mode=unit.get("Bond", "Mode") if kind == "bond" else None,
            miimon=parse_timespan_ms(miimon_text) if miimon_text else None,
            xmit_hash_policy=unit.get("Bond", "TransmitHashPolicy"),
            lacp_rate=unit.get("Bond", "LACPTransmitRate"),
            stp=(stp_text.lower() in ("yes", "true", "on", "1")) if stp_text else (
                False if kind == "bridge" else None),
            source=netdev.path)

    def plan(self, host: Host, changes: list[Upsert | Remove],
             current: Persisted) -> PersistPlan:
        plan = PersistPlan(self.name)
        tree = read_tree(host)
        created: list[NetworkdFile] = []
        for change, old, config in in_order(changes, current):
            if isinstance(change, Remove) or config is None:
                self._remove(tree, change.name, old, plan)
                continue
            self._upsert(tree, config, old, change.fields if old else None, created, plan)
        plan.edits = file_edits(host, [*tree.netdevs, *tree.networks])  # new ones too
        if plan.edits:
            plan.notes.append("networkd applies new netdevs with 'networkctl reload'; "
                              "changed existing ones only at boot (before systemd v257)")
        return plan

    # -- helpers -------------------------------------------------------------------
    def _new(self, tree: Tree, created: list[NetworkdFile], path: str) -> NetworkdFile:
        entry = NetworkdFile(path, None, UnitFile())
        created.append(entry)
        target = tree.netdevs if path.endswith(".netdev") else tree.networks
        target.append(entry)
        target.sort(key=lambda e: e.path.rsplit("/", 1)[-1])
        return entry

    def _network(self, tree: Tree, name: str, created: list[NetworkdFile],
                 plan: PersistPlan) -> NetworkdFile:
        """The .network file to edit for `name`: its exact match in /etc, else a new one."""
        current = tree.network_for(name)
        if current is not None and current.editable and _exact(current, name):
            return current
        entry = self._new(tree, created, f"{EDITABLE}/10-zsn-{name}.network")
        entry.unit.set("Match", "Name", name)
        if current is not None:
            plan.warnings.append(
                f"{entry.path.rsplit('/', 1)[-1]} takes {name} over from {current.path} "
                "(its settings no longer apply to it)")
        return entry

    def _upsert(self, tree: Tree, config: LinkConfig, old: LinkConfig | None,
                only: frozenset[str] | None, created: list[NetworkdFile],
                plan: PersistPlan) -> None:
        def wanted(field_name: str) -> bool:
            return only is None or field_name in only

        netdev = tree.netdev(config.name)
        if netdev is None:
            netdev = self._new(tree, created, f"{EDITABLE}/30-zsn-{config.name}.netdev")
        elif not netdev.editable:
            raise ValidationError(f"{config.name} is defined in {netdev.path}, which zsn "
                                  f"does not edit (only {EDITABLE})")
        unit = netdev.unit
        unit.set("NetDev", "Name", config.name)
        unit.set("NetDev", "Kind", config.kind)
        network = self._network(tree, config.name, created, plan)
        if wanted("mtu"):
            for target, section in ((unit, "NetDev"), (network.unit, "Link")):
                if config.mtu is None:
                    target.remove(section, "MTUBytes")
                else:
                    target.set(section, "MTUBytes", str(config.mtu))
        if not network.unit.has_section("Network"):
            network.unit.add_section("Network")  # networkd manages (brings up) the link
        if config.kind == "bond":
            if wanted("mode") and config.mode:
                unit.set("Bond", "Mode", config.mode)
            if wanted("miimon"):
                miimon = config.miimon if config.miimon is not None else bonding.DEFAULT_MIIMON
                unit.set("Bond", "MIIMonitorSec", f"{miimon}ms")
            if wanted("xmit_hash_policy") and config.xmit_hash_policy:
                unit.set("Bond", "TransmitHashPolicy", config.xmit_hash_policy)
            if wanted("lacp_rate") and config.lacp_rate:
                unit.set("Bond", "LACPTransmitRate", config.lacp_rate)
        if config.kind == "bridge" and wanted("stp"):
            unit.set("Bridge", "STP", "yes" if config.stp else "no")
        if config.kind == "vlan":
            if wanted("vlan_id") and config.vlan_id is not None:
                unit.set("VLAN", "Id", str(config.vlan_id))
            if wanted("parent") and config.parent:
                if old is not None and old.parent and old.parent != config.parent:
                    self._unlink_vlan(tree, old.parent, config.name)
                parent = self._network(tree, config.parent, created, plan)
                if config.name not in parent.unit.values("Network", "VLAN"):
                    parent.unit.add("Network", "VLAN", config.name)
        if config.kind in ("bond", "bridge") and wanted("members"):
            key = "Bond" if config.kind == "bond" else "Bridge"
            before = set(old.members) if old else set()
            for member in config.members:
                member_network = self._network(tree, member, created, plan)
                member_network.unit.set("Network", key, config.name)
            for member in before - set(config.members):
                self._detach(tree, member, key, config.name)

    def _detach(self, tree: Tree, member: str, key: str, master: str) -> None:
        network = tree.network_for(member)
        if network is None or not network.editable:
            return
        network.unit.remove("Network", key, master)
        self._drop_if_own_and_empty(network, member)

    def _unlink_vlan(self, tree: Tree, parent: str, vlan: str) -> None:
        network = tree.network_for(parent)
        if network is not None and network.editable:
            network.unit.remove("Network", "VLAN", vlan)
            self._drop_if_own_and_empty(network, parent)

    @staticmethod
    def _drop_if_own_and_empty(network: NetworkdFile, name: str) -> None:
        """zsn's own 10-zsn-NAME.network with nothing left but its [Match] goes away."""
        own = network.path.endswith(f"/10-zsn-{name}.network")
        if own and network.unit.assignments() <= 1:
            network.removed = True

    def _remove(self, tree: Tree, name: str, old: LinkConfig | None,
                plan: PersistPlan) -> None:
        netdev = tree.netdev(name)
        if netdev is not None:
            if not netdev.editable:
                raise ValidationError(f"{name} is defined in {netdev.path}, which zsn does "
                                      f"not edit (only {EDITABLE})")
            netdev.removed = True
        network = tree.network_for(name)
        if network is not None and network.editable and _exact(network, name):
            if network.path.endswith(f"/10-zsn-{name}.network"):
                network.removed = True
            else:
                plan.warnings.append(f"{network.path} still matches {name}; remove it by "
                                     "hand if nothing else uses the name")
        if old is None:
            return
        if old.kind == "vlan" and old.parent:
            self._unlink_vlan(tree, old.parent, name)
        for member in old.members:
            self._detach(tree, member, "Bond" if old.kind == "bond" else "Bridge", name)


NETWORKD = NetworkdBackend()
