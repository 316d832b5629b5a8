"""Who owns the persistent network config, what it defines, and the edits that make a
change survive a reboot: each file-based owner's backend does the reading and the
editing (see `zsn.links.persist`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from zsn.domains import load
from zsn.errors import ZsnError
from zsn.links.persist import (
    IFUPDOWN_MAIN,
    NETCTL_DIR,
    NETPLAN_DIRS,
    NETWORKD_DIRS,
    NETWORKD_ENABLED,
    Backend,
    Change,
    Owner,
    Persisted,
    PersistPlan,
    netplan_yaml,
    nmcli,
)
from zsn.system import files
from zsn.system.host import Host


def netplan_present(host: Host) -> bool:
    return any(netplan_yaml(host, d) for d in NETPLAN_DIRS)


NETWORKD_LOCAL_DIRS = NETWORKD_DIRS[:2]
"""/etc and /run: what an admin, netplan or a test put there. The vendor folders
(/usr/lib ...) hold systemd's own examples on every machine with systemd
(80-wifi-adhoc.network, 80-container-ve.network), which say nothing of who manages
the network; an image whose networkd config is there has networkd enabled too."""


def networkd_present(host: Host) -> bool:
    """Files networkd reads in /etc or /run (netplan and tests put them there; a hidden
    one, a copy set aside, is none), or networkd enabled."""
    from zsn.links.persist.networkd import chosen_files

    for pattern in ("*.netdev", "*.network"):
        if chosen_files(host, list(NETWORKD_LOCAL_DIRS), pattern):
            return True
    return files.exists(host.path(NETWORKD_ENABLED))


def ifupdown_present(host: Host) -> bool:
    return files.exists(host.path(IFUPDOWN_MAIN))


def netctl_present(host: Host) -> bool:
    return files.exists(host.path(NETCTL_DIR))


OWNERS: tuple[tuple[str, str, Callable[[Host], bool]], ...] = (
    ("netplan", "zsn.links.persist.netplan:NETPLAN", netplan_present),
    ("networkd", "zsn.links.persist.networkd:NETWORKD", networkd_present),
    ("ifupdown", "zsn.links.persist.ifupdown:IFUPDOWN", ifupdown_present),
    ("netctl", "zsn.links.persist.netctl:NETCTL", netctl_present),
)
"""File-based owners in the order zsn looks for them; a backend's module (YAML and
all) is imported only when its files are there."""


def detect_owner(host: Host, involved: Iterable[str] = ()) -> Owner:
    """Which system owns the config of the `involved` links (see the module doc)."""
    from zsn.system.networkmanager import managed_devices

    devices = managed_devices(host, involved)
    if devices is not None:
        managed = tuple(name for name, is_managed in devices.items() if is_managed)
        if managed:
            return Owner("networkmanager",
                         f"NetworkManager runs and manages {', '.join(managed)}", managed)
    for name, _module, present in OWNERS:
        if present(host):
            return Owner(name, f"{name} config found under {host.root}")
    return Owner("none", f"no network config system found under {host.root} (looked for "
                 "NetworkManager, netplan, systemd-networkd, ifupdown, netctl)")


def backend_named(name: str) -> Backend:
    for owner, module, _present in OWNERS:
        if owner == name:
            backend: Backend = load(module)
            return backend
    raise ZsnError(f"no config backend named {name!r}")


def read_persistent(host: Host, owner: Owner | None = None) -> tuple[Owner, Persisted]:
    """The owner and what it defines (NetworkManager's connections are not read)."""
    owner = owner or detect_owner(host)
    if owner.name in ("networkmanager", "none"):
        return owner, Persisted()
    return owner, backend_named(owner.name).read(host)


def plan_persist(host: Host, changes: list[Change], involved: Iterable[str]) -> PersistPlan:
    """File edits (or nmcli commands) that make `changes` survive a reboot."""
    involved = tuple(involved)
    owner = detect_owner(host, involved)
    if owner.name == "networkmanager":
        return nmcli.plan(changes, owner)
    if owner.name == "none":
        raise ZsnError(f"cannot persist: {owner.reason}")
    backend = backend_named(owner.name)
    current = backend.read(host)
    if current.problems:
        raise ZsnError(f"cannot persist with {owner.name}: {current.problems[0]}")
    names = {change.name for change in changes} | set(involved)
    blocking = current.blocking(names)
    if blocking:
        raise ZsnError(f"cannot persist with {owner.name}: zsn does not understand "
                       f"{blocking[0].describe()}")
    return backend.plan(host, changes, current)
