"""netctl: one profile per link in ``/etc/netctl/`` (bash variable syntax).

``Connection=bond|vlan|bridge``, ``Interface=NAME``, ``BindsToInterfaces=(...)``
(members, ports, or a VLAN's parent), ``Mode=`` for a bond, ``VLANID=`` for a VLAN.
netctl has no MTU or miimon option: zsn puts ``ip link set`` commands in
``ExecUpPost`` (netctl docs/netctl.profile.5.txt), and a new profile must be enabled
with ``netctl enable NAME`` to come up at boot.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from zsn.errors import ValidationError
from zsn.links import bonding
from zsn.links.persist import (
    NETCTL_DIR,
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

DIRECTORY = NETCTL_DIR
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)")
_EXEC_MTU = re.compile(r"ip link set (?:dev )?(\S+) mtu (\d+)")
_EXEC_MIIMON = re.compile(r"ip link set (?:dev )?(\S+) type bond miimon (\d+)")
_EXEC_STP = re.compile(r"ip link set (?:dev )?(\S+) type bridge stp_state ([01])")


def _value(raw: str) -> str | list[str]:
    """A bash value: an array ``(a 'b c')`` or a word (quotes removed)."""
    raw = raw.strip()
    try:
        if raw.startswith("(") and raw.endswith(")"):
            return shlex.split(raw[1:-1], comments=True)
        words = shlex.split(raw, comments=True)
    except ValueError:
        return raw
    return words[0] if len(words) == 1 else " ".join(words)


@dataclass
class Profile:
    path: str
    snapshot: files.FileSnapshot | None
    lines: list[str]
    removed: bool = False

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def variables(self) -> dict[str, str | list[str]]:
        found: dict[str, str | list[str]] = {}
        for line in self.lines:
            match = _ASSIGNMENT.fullmatch(line.strip())
            if match:
                found[match.group(1)] = _value(match.group(2))
        return found

    def set(self, key: str, value: str) -> None:
        for number, line in enumerate(self.lines):
            match = _ASSIGNMENT.fullmatch(line.strip())
            if match and match.group(1) == key:
                self.lines[number] = f"{key}={value}\n"
                return
        self.lines.append(f"{key}={value}\n")

    def unset(self, key: str) -> None:
        self.lines = [line for line in self.lines
                      if not ((m := _ASSIGNMENT.fullmatch(line.strip())) and m.group(1) == key)]


def _array(names: tuple[str, ...]) -> str:
    return "(" + " ".join(shlex.quote(name) for name in names) + ")"


def read_profiles(host: Host) -> list[Profile]:
    found = []
    for path in files.list_files(host.path(DIRECTORY)):
        if path.is_dir() or path.name.endswith((".action", ".conf", ".service",
                                                     ".zsn-bak")):
            continue
        snapshot = files.read_tracked(path)
        lines = snapshot.text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        found.append(Profile(f"{DIRECTORY}/{path.name}", snapshot, lines))
    return found


def profile_config(profile: Profile) -> LinkConfig | None:
    variables = profile.variables()
    kind = variables.get("Connection")
    name = variables.get("Interface")
    if kind not in ("bond", "vlan", "bridge") or not isinstance(name, str):
        return None
    binds = variables.get("BindsToInterfaces", [])
    bound = tuple(binds) if isinstance(binds, list) else tuple(str(binds).split())
    exec_up = str(variables.get("ExecUpPost", ""))
    mtu = next((int(m.group(2)) for m in _EXEC_MTU.finditer(exec_up) if m.group(1) == name),
               None)
    miimon = next((int(m.group(2)) for m in _EXEC_MIIMON.finditer(exec_up)
                   if m.group(1) == name), None)
    stp = next((m.group(2) == "1" for m in _EXEC_STP.finditer(exec_up) if m.group(1) == name),
               False if kind == "bridge" else None)
    vlan_id = variables.get("VLANID")
    mode = variables.get("Mode")
    return LinkConfig(
        name=name, kind=str(kind), members=bound if kind != "vlan" else (),
        parent=bound[0] if kind == "vlan" and bound else None,
        vlan_id=int(vlan_id) if isinstance(vlan_id, str) and vlan_id.isdigit() else None,
        mtu=mtu, mode=str(mode) if kind == "bond" and mode else None, miimon=miimon,
        stp=stp, source=profile.path)


def _exec_up(config: LinkConfig) -> list[str]:
    """ExecUpPost for what netctl cannot say itself (shell text netctl evaluates;
    names were validated, so they need no quoting)."""
    parts = []
    if config.kind == "bond":
        miimon = config.miimon if config.miimon is not None else bonding.DEFAULT_MIIMON
        parts.append(f"ip link set dev {config.name} type bond miimon {miimon}")
        if config.xmit_hash_policy:
            parts.append(f"ip link set dev {config.name} type bond xmit_hash_policy "
                         f"{config.xmit_hash_policy}")
        if config.lacp_rate:
            parts.append(f"ip link set dev {config.name} type bond lacp_rate {config.lacp_rate}")
    if config.kind == "bridge":
        parts.append(f"ip link set dev {config.name} type bridge stp_state "
                     f"{1 if config.stp else 0}")
    if config.mtu is not None:
        parts.append(f"ip link set dev {config.name} mtu {config.mtu}")
    return parts


class NetctlBackend(FileBackend):
    name = "netctl"

    @staticmethod
    def _collect(host: Host, persisted: Persisted) -> None:
        for profile in read_profiles(host):
            config = profile_config(profile)
            if config is not None:
                persisted.configs.setdefault(config.name, config)

    def plan(self, host: Host, changes: list[Upsert | Remove],
             current: Persisted) -> PersistPlan:
        plan = PersistPlan(self.name)
        profiles = read_profiles(host)
        created: list[Profile] = []
        for change, _old, config in in_order(changes, current):
            if isinstance(change, Remove) or config is None:
                for profile in profiles + created:
                    config = profile_config(profile)
                    if config is not None and config.name == change.name:
                        profile.removed = True
                        plan.notes.append(f"run 'netctl disable {profile.path.rsplit('/')[-1]}'"
                                          " if it was enabled")
                continue
            found = next((p for p in profiles + created if not p.removed and
                          (c := profile_config(p)) is not None and c.name == config.name), None)
            if found is not None:
                profile = found
            else:
                path = f"{DIRECTORY}/{config.name}"
                if any(p.path == path for p in profiles):
                    raise ValidationError(f"{path} exists and is not a profile for "
                                          f"{config.name}; move it away first")
                profile = Profile(path, None, [f"Description='{config.kind} {config.name} "
                                               "(zsn)'\n"])
                profile.set("Interface", config.name)
                profile.set("Connection", config.kind)
                profile.set("IP", "no")  # addresses are the admin's business
                created.append(profile)
                plan.notes.append(f"bring it up at boot with 'netctl enable {config.name}'")
            self._write(profile, config)
        plan.edits = file_edits(host, profiles + created)
        return plan

    @staticmethod
    def _write(profile: Profile, config: LinkConfig) -> None:
        profile.set("Interface", config.name)
        profile.set("Connection", config.kind)
        if config.kind == "vlan":
            profile.set("BindsToInterfaces", _array((config.parent,) if config.parent else ()))
            profile.set("VLANID", str(config.vlan_id))
        else:
            profile.set("BindsToInterfaces", _array(config.members))
        if config.kind == "bond" and config.mode:
            profile.set("Mode", config.mode)
        # Keep the profile's own ExecUpPost commands; replace only zsn's for this link.
        own = re.compile(rf"ip link set (?:dev )?{re.escape(config.name)} (?:mtu|type )")
        current = profile.variables().get("ExecUpPost")
        kept = [part.strip() for part in str(current or "").split(";")
                if part.strip() and not own.match(part.strip())]
        commands = kept + _exec_up(config)
        if commands:
            profile.set("ExecUpPost", shlex.quote("; ".join(commands)))
        else:
            profile.unset("ExecUpPost")


NETCTL = NetctlBackend()
