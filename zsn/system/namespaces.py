"""Which network namespace zsn runs in, as far as boot-time settings are concerned.

Forwarding (``net.ipv4.ip_forward`` ...) is a setting of each network namespace.
The files in ``/etc/sysctl.d`` are applied at boot by the system's init, in *its*
namespace: a setting zsn writes there while it runs in another one (``ip netns
exec``, ``unshare -n``) would change the host's namespace at the next boot and
never this one.

A container (systemd-nspawn, LXC) has its own init in its own namespace, which
applies the container's own ``/etc/sysctl.d``: there zsn shares PID 1's namespace
and writing the file is right. So "not the namespace boot settings apply to" is:
zsn's namespace is a named one (a bind mount in ``/run/netns``, how ``ip netns``
keeps them), or differs from PID 1's. PID 1's may not be readable (no ptrace
access, a sandbox): then zsn cannot tell and assumes the usual case.
"""

from __future__ import annotations

import os
from pathlib import Path

from zsn.system.host import Host

PROC = Path("/proc")
NAMED_NAMESPACES = Path("/run/netns")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def own_network_namespace(proc: Path = PROC) -> str:
    """zsn's network namespace as the kernel names it (``net:[INODE]``); "" unreadable."""
    mine = _identity(proc / "self/ns/net")
    return "" if mine is None else f"net:[{mine[1]}]"


def joinable_network_namespace(proc: Path = PROC, named: Path = NAMED_NAMESPACES) -> str | None:
    """Where another process joins zsn's network namespace: "" for PID 1's (or when it
    cannot be told), the ``/run/netns`` path of a named one, None for an unnamed other
    one (nothing to join by path)."""
    mine = _identity(proc / "self/ns/net")
    init = _identity(proc / "1/ns/net")
    if mine is None or init is None or mine == init:
        return ""
    try:
        entries = sorted(named.iterdir())
    except OSError:
        entries = []
    return next((str(entry) for entry in entries if _identity(entry) == mine), None)


def other_network_namespace(host: Host, proc: Path = PROC,
                            named: Path = NAMED_NAMESPACES) -> str | None:
    """Why zsn's network namespace is not the one boot settings (``/etc/sysctl.d``)
    apply to, or None when it is, or cannot be told. Under ``--root`` there is no
    running namespace: the tree's files are the point, None."""
    if not host.is_live:
        return None
    mine = _identity(proc / "self/ns/net")
    if mine is None:
        return None
    try:
        entries = sorted(named.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if _identity(entry) == mine:
            return f"zsn runs in the network namespace {entry.name!r} (ip netns)"
    init = _identity(proc / "1/ns/net")
    if init is not None and init != mine:
        return "zsn runs in a network namespace other than PID 1's"
    return None
