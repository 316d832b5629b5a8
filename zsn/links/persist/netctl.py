"""netctl: one profile per link in ``/etc/netctl/`` (bash variable syntax).

``Connection=bond|vlan|bridge``, ``Interface=NAME``, ``BindsToInterfaces=(...)``
(members, ports, or a VLAN's parent), ``Mode=`` for a bond, ``VLANID=`` for a VLAN.
netctl has no MTU or miimon option: zsn puts ``ip link set`` commands in
``ExecUpPost`` (netctl docs/netctl.profile.5.txt), and a new profile must be enabled
with ``netctl enable NAME`` to come up at boot.

Profiles are read as bash reads them (`zsn.bash`: assignments only, nothing run; the
last assignment of a name wins; netctl's connection scripts turn a plain
``BindsToInterfaces=eth0`` into a one-element array, without splitting it). A profile
whose data needs bash to evaluate it is reported, not guessed; a hook that does
(``ExecUpPost="... $(cat ...)"``) is kept as written and never run: the profile is
read, what zsn would read from the hook (an MTU, STP, miimon) comes from its literal
commands only, and a change that would rewrite the hook is refused. An edit replaces
only the assignments whose meaning changes, character for character; every other
byte stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zsn import values
from zsn.bash import (
    BASH,
    NETCTL_HOOKS,
    Assignment,
    Opaque,
    Schema,
    Value,
    Words,
    canonical,
    is_netctl_profile,
    parse_assignments,
    render_assignment,
)
from zsn.errors import ParseError, ValidationError
from zsn.links import bonding
from zsn.links import values as link_values
from zsn.links.persist import (
    CONFIG_FIELDS,
    NETCTL_DIR,
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

DIRECTORY = NETCTL_DIR
LINK_CONNECTIONS = ("bond", "vlan", "bridge")
_EXEC_MTU = re.compile(r"ip link set (?:dev )?(\S+) mtu (\d+)")
_EXEC_MIIMON = re.compile(r"ip link set (?:dev )?(\S+) type bond miimon (\d+)")
_EXEC_STP = re.compile(r"ip link set (?:dev )?(\S+) type bridge stp_state ([01])")
EXEC_FIELDS = frozenset({"mtu", "miimon", "xmit_hash_policy", "lacp_rate", "stp"})
"""What zsn writes as ``ip link set`` commands in ExecUpPost."""
_CONNECTION_TEXT = re.compile(r"^\s*Connection=['\"]?(bond|vlan|bridge)\b", re.MULTILINE)
SCHEMA: Schema = {
    "Description": values.TEXT, "Interface": link_values.LINK,
    "Connection": values.one_of(*LINK_CONNECTIONS), "IP": values.one_of("no"),
    "BindsToInterfaces": link_values.LINK, "VLANID": link_values.VLAN_ID,
    "Mode": link_values.BOND_MODE, "ExecUpPost": values.TEXT,
}
"""What zsn writes in a link's netctl profile (netctl.profile(5)); ExecUpPost holds
the ``ip link set`` commands `_exec_up` makes of checked names and numbers."""


@dataclass
class Profile:
    path: str
    snapshot: files.FileSnapshot | None
    text: str
    assignments: list[Assignment] = field(default_factory=list)
    removed: bool = False
    intent: Intent = field(default_factory=lambda: Intent(BASH))
    """What the edits since it was read mean (a new profile: the whole file)."""

    @classmethod
    def parsed(cls, path: str, snapshot: files.FileSnapshot | None, text: str) -> Profile:
        return cls(path, snapshot, text, parse_assignments(text, path, NETCTL_HOOKS))

    @classmethod
    def new(cls, path: str) -> Profile:
        profile = cls(path, None, "")
        profile.intent.whole([("", [])])
        return profile

    def variables(self) -> dict[str, Value]:
        """Each variable's value after the file has run (the last assignment wins)."""
        return {a.name: a.value for a in self.assignments}

    def opaque_hooks(self) -> list[Assignment]:
        """The hooks that hold a value bash computes (kept as written)."""
        return [a for a in self.assignments if isinstance(a.value, Opaque)]

    def set(self, name: str, value: Words) -> None:
        """Make `name`'s last assignment `value` (appended when absent)."""
        line = render_assignment(SCHEMA, name, value)
        found = [a for a in self.assignments if a.name == name]
        self.intent.assign("", name, [canonical(a.value) for a in found[:-1]]
                           + [canonical(value)])
        if not found:
            if self.text and not self.text.endswith("\n"):
                self.text += "\n"
            self.text += line + "\n"
        else:
            last = found[-1]
            self.text = self.text[:last.start] + line + self.text[last.end:]
        self.assignments = parse_assignments(self.text, self.path, NETCTL_HOOKS)

    def unset(self, name: str) -> None:
        """Remove every assignment of `name`; a line left blank by it goes too."""
        self.intent.assign("", name, [])
        for assignment in reversed([a for a in self.assignments if a.name == name]):
            start = self.text.rfind("\n", 0, assignment.start) + 1
            end = self.text.find("\n", assignment.end)
            end = len(self.text) if end < 0 else end + 1
            before = self.text[start:assignment.start]
            after = self.text[assignment.end:end]
            if not before.strip() and not after.strip():
                self.text = self.text[:start] + self.text[end:]
            else:
                self.text = self.text[:assignment.start] + self.text[assignment.end:]
        self.assignments = parse_assignments(self.text, self.path, NETCTL_HOOKS)


def _bound(value: Value | None) -> tuple[str, ...]:
    """``BindsToInterfaces`` as netctl's scripts use it: ``("${BindsToInterfaces[@]}")``
    makes a plain value one element, never split at spaces."""
    if value is None or isinstance(value, Opaque):
        return ()
    return value if isinstance(value, tuple) else (value,)


def read_profiles(host: Host, persisted: Persisted | None = None) -> list[Profile]:
    """The profiles of /etc/netctl; one bash cannot be read without running is
    reported in `persisted` (blocking when it looks like a bond, VLAN or bridge)."""
    found = []
    for path in files.list_files(host.path(DIRECTORY)):
        if not is_netctl_profile(path.name) or files.is_dir(path):
            continue
        system_path = f"{DIRECTORY}/{path.name}"
        snapshot = files.read_tracked(path)
        try:
            profile = Profile.parsed(system_path, snapshot, snapshot.text)
        except ParseError as exc:
            if persisted is not None:
                link = _CONNECTION_TEXT.search(snapshot.text) is not None
                persisted.unread.append(Unread(
                    system_path, exc.line, f"{exc.reason}; zsn reads profiles without "
                    "running them", "bash-code", blocking=link))
            continue
        found.append(profile)
        if persisted is not None:
            interface = profile.variables().get("Interface")
            for hook in profile.opaque_hooks():
                persisted.unread.append(Unread(
                    system_path, hook.line, f"{hook.name} uses an expansion bash evaluates "
                    "as netctl reads the profile: zsn keeps it as written, never runs it, "
                    "and reads only its literal commands", "hook", blocking=False,
                    names=(interface,) if isinstance(interface, str) else ()))
    return found


def _exec_text(value: Value | None) -> str:
    """ExecUpPost's commands as text; of a hook zsn keeps opaque, what is certain of it
    (the expansions blanked out)."""
    if value is None:
        return ""
    if isinstance(value, Opaque):
        return value.literal
    return " ; ".join(value) if isinstance(value, tuple) else value


def profile_config(profile: Profile) -> LinkConfig | None:
    variables = profile.variables()
    kind = variables.get("Connection")
    name = variables.get("Interface")
    if kind not in LINK_CONNECTIONS or not isinstance(name, str):
        return None
    bound = _bound(variables.get("BindsToInterfaces"))
    exec_up = _exec_text(variables.get("ExecUpPost"))
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
        mtu=mtu, mode=mode if kind == "bond" and isinstance(mode, str) and mode else None,
        miimon=miimon, stp=stp, source=profile.path)


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
        for profile in read_profiles(host, persisted):
            config = profile_config(profile)
            if config is not None:
                persisted.configs.setdefault(config.name, config)
                continue
            variables = profile.variables()
            name, kind = variables.get("Interface"), variables.get("Connection")
            if isinstance(name, str) and isinstance(kind, str):
                persisted.devices.setdefault(name, Device(name, kind, profile.path))

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
            other = current.devices.get(config.name)
            if other is not None:
                raise ValidationError(f"{config.name} is a {other.kind} connection in "
                                      f"{other.source}, not a {config.kind}")
            found = next((p for p in profiles + created if not p.removed and
                          (c := profile_config(p)) is not None and c.name == config.name), None)
            fields = change.fields
            if found is not None:
                profile = found
            else:
                path = f"{DIRECTORY}/{config.name}"
                if any(p.path == path for p in profiles):
                    raise ValidationError(f"{path} exists and is not a profile for "
                                          f"{config.name}; move it away first")
                profile = Profile.new(path)
                profile.set("Description", f"{config.kind} {config.name} (zsn)")
                profile.set("Interface", config.name)
                profile.set("Connection", config.kind)
                profile.set("IP", "no")  # addresses are the admin's business
                created.append(profile)
                fields = frozenset(CONFIG_FIELDS)
                plan.notes.append(f"bring it up at boot with 'netctl enable {config.name}'")
            self._write(profile, config, fields)
        plan.edits = file_edits(host, profiles + created)
        return plan

    @staticmethod
    def _write(profile: Profile, config: LinkConfig, fields: frozenset[str]) -> None:
        """Change the assignments whose meaning differs from `config` (in `fields`)."""
        variables = profile.variables()

        def put(name: str, value: tuple[str, ...] | str | None) -> None:
            if value is None:
                if name in variables:
                    profile.unset(name)
                return
            now = variables.get(name)
            same = _bound(now) == value if isinstance(value, tuple) else now == value
            if not same:
                profile.set(name, value)

        if config.kind == "vlan":
            if "parent" in fields:
                put("BindsToInterfaces", (config.parent,) if config.parent else ())
            if "vlan_id" in fields:
                put("VLANID", str(config.vlan_id) if config.vlan_id is not None else None)
        elif "members" in fields:
            put("BindsToInterfaces", config.members)
        if config.kind == "bond" and "mode" in fields and config.mode:
            put("Mode", config.mode)
        if not fields & EXEC_FIELDS:
            return
        current = variables.get("ExecUpPost")
        if isinstance(current, Opaque):
            hook = next(a for a in reversed(profile.assignments) if a.name == "ExecUpPost")
            changed = ", ".join(sorted(fields & EXEC_FIELDS))
            raise ValidationError(
                f"{profile.path}:{hook.line}: ExecUpPost uses an expansion bash evaluates as "
                f"netctl reads the profile; zsn keeps it as written and does not rewrite it, "
                f"and netctl has no other place for the {changed}: change it there by hand")
        # Keep the profile's own ExecUpPost commands; replace only zsn's for this link.
        own = re.compile(rf"ip link set (?:dev )?{re.escape(config.name)} (?:mtu|type )")
        current_text = " ; ".join(current) if isinstance(current, tuple) else current or ""
        kept = [part.strip() for part in current_text.split(";")
                if part.strip() and not own.match(part.strip())]
        commands = "; ".join(kept + _exec_up(config))
        if commands and commands != current_text:
            profile.set("ExecUpPost", commands)
        elif not commands and current is not None:
            profile.unset("ExecUpPost")


NETCTL = NetctlBackend()
