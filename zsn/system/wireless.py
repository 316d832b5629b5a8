"""Wireless interfaces and radios as the kernel shows them in sysfs (under the host's root).

`/sys/class/net/IFACE/phy80211` marks a wireless interface and names its radio;
`/sys/class/rfkill/rfkillN/{type,name,soft,hard}` says whether the radio may
transmit (soft: software switch, `rfkill unblock`; hard: a hardware switch).
"""

from __future__ import annotations

from pathlib import Path

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host

NET_CLASS = "/sys/class/net"
RFKILL_CLASS = "/sys/class/rfkill"
ATTRIBUTE_CAP = 4096
"""A sysfs attribute is at most a page."""


def _read(path: Path) -> str | None:
    try:
        return files.read_text(path, ATTRIBUTE_CAP).strip()
    except (ZsnError, OSError):
        return None


def interface_exists(host: Host, name: str) -> bool:
    return files.exists(host.path(NET_CLASS) / name)


def is_wireless(host: Host, name: str) -> bool:
    base = host.path(NET_CLASS) / name
    return files.exists(base / "phy80211") or files.is_dir(base / "wireless")


def wireless_interfaces(host: Host) -> list[str]:
    """Names of the wireless interfaces, sorted."""
    try:
        names = [entry.name for entry in files.list_files(host.path(NET_CLASS))]
    except (ZsnError, OSError):
        return []
    return sorted(name for name in names if is_wireless(host, name))


def phy_of(host: Host, name: str) -> str | None:
    """The interface's radio (``phy0``)."""
    return _read(host.path(NET_CLASS) / name / "phy80211" / "name")


def ifindex_of(host: Host, name: str) -> int | None:
    text = _read(host.path(NET_CLASS) / name / "ifindex")
    return int(text) if text is not None and text.isdigit() else None


def mac_of(host: Host, name: str) -> str | None:
    return _read(host.path(NET_CLASS) / name / "address")


def rfkill_state(host: Host, phy: str) -> tuple[bool, bool] | None:
    """(soft, hard) blocked for the radio `phy`; None when it has no rfkill switch."""
    try:
        switches = files.list_files(host.path(RFKILL_CLASS))
    except (ZsnError, OSError):
        return None
    for switch in switches:
        if _read(switch / "name") != phy:
            continue
        soft, hard = _read(switch / "soft"), _read(switch / "hard")
        if soft is None or hard is None:
            return None
        return soft == "1", hard == "1"
    return None
