"""Bonding: the kernel's numbers for modes and policies, and `/proc/net/bonding/BOND`.

Netlink carries bond settings as numbers (u8 attributes: a name such as ``802.3ad``
is refused); sysfs shows them as ``NAME NUMBER`` (``mode: balance-rr 0``); the config
systems and the command line use the names. Values from
include/uapi/linux/if_bonding.h and Documentation/networking/bonding.rst.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zsn.errors import ParseError

MODES: dict[str, int] = {
    "balance-rr": 0, "active-backup": 1, "balance-xor": 2, "broadcast": 3,
    "802.3ad": 4, "balance-tlb": 5, "balance-alb": 6,
}
XMIT_HASH_POLICIES: dict[str, int] = {
    "layer2": 0, "layer3+4": 1, "layer2+3": 2, "encap2+3": 3, "encap3+4": 4,
    "vlan+srcmac": 5,
}
LACP_RATES: dict[str, int] = {"slow": 0, "fast": 1}
AD_SELECT: dict[str, int] = {"stable": 0, "bandwidth": 1, "count": 2}
MII_STATUS = ("up", "going down", "down", "coming back")
"""IFLA_BOND_SLAVE_MII_STATUS: BOND_LINK_UP, _FAIL, _DOWN, _BACK."""
SLAVE_STATE = ("active", "backup")

HASHED_MODES = ("balance-xor", "802.3ad", "balance-tlb", "balance-alb")
"""Modes that use xmit_hash_policy (tlb/alb only with tlb_dynamic_lb off, but accept it)."""
STATIC_LAG_MODES = ("balance-rr", "balance-xor", "broadcast")
"""Modes whose switch ports must be grouped (a static LAG, or isolated switches/VLANs)."""
DEFAULT_MIIMON = 100
"""The kernel's default; netplan and networkd document 0, so zsn always writes it."""


def name_of(table: dict[str, int], number: int | None) -> str | None:
    """The name of `number` in one of the tables above; ``None`` when it is unknown."""
    if number is None:
        return None
    for name, value in table.items():
        if value == number:
            return name
    return None


def parse_sysfs_enum(text: str) -> tuple[str, int]:
    """A sysfs bonding enum as it reads, ``balance-rr 0``, as (name, number)."""
    match = re.fullmatch(r"(\S+) (\d+)\n?", text)
    if match is None:
        raise ParseError(f"not a bonding setting of the form 'NAME NUMBER': {text[:40]!r}")
    return match.group(1), int(match.group(2))


@dataclass(frozen=True)
class ProcSlave:
    name: str
    mii_status: str
    speed: str | None
    duplex: str | None
    link_failure_count: int
    permanent_mac: str | None
    aggregator_id: int | None
    actor_churn: str | None
    partner_churn: str | None
    partner_mac: str | None
    """From 'details partner lacp pdu' (802.3ad): the partner this port sees."""


@dataclass(frozen=True)
class ProcBond:
    mode: str
    """As the driver words it, e.g. 'IEEE 802.3ad Dynamic link aggregation'."""
    mii_status: str | None
    miimon_ms: int | None
    active_slave: str | None
    lacp_rate: str | None
    aggregator_id: int | None
    partner_mac: str | None
    slaves: tuple[ProcSlave, ...]

    @property
    def has_lacp_partner(self) -> bool | None:
        """802.3ad: whether a partner answered (its MAC is not all zeros); else None."""
        if self.partner_mac is None:
            return None
        return any(part != "00" for part in self.partner_mac.split(":"))


_SLAVE_KEYS = {
    "MII Status": "mii_status", "Speed": "speed", "Duplex": "duplex",
    "Link Failure Count": "link_failure_count", "Permanent HW addr": "permanent_mac",
    "Aggregator ID": "aggregator_id", "Actor Churn State": "actor_churn",
    "Partner Churn State": "partner_churn",
}


def parse_proc_bonding(text: str, source: str = "/proc/net/bonding") -> ProcBond:
    """Parse ``/proc/net/bonding/BOND`` (its layout varies by kernel version: unknown
    lines are skipped, the fields zsn needs are looked up by their label)."""
    header: dict[str, str] = {}
    slaves: list[dict[str, str]] = []
    section: dict[str, str] = header
    details: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            details = None
            continue
        if stripped.startswith("details "):
            details = stripped.removeprefix("details ").removesuffix(":")
            continue
        label, colon, value = stripped.partition(":")
        if not colon:
            continue  # "802.3ad info" and other headings
        label, value = label.strip(), value.strip()
        if label == "Slave Interface":
            if not value:
                raise ParseError("slave without a name", number, source)
            section = {"name": value}
            slaves.append(section)
            details = None
            continue
        if details is not None:
            if details == "partner lacp pdu" and label == "system mac address":
                section["partner_mac"] = value
            continue
        section.setdefault(label, value)
    if "Bonding Mode" not in header:
        raise ParseError("no 'Bonding Mode' line: not a /proc/net/bonding file", None, source)
    return ProcBond(
        mode=header["Bonding Mode"],
        mii_status=header.get("MII Status"),
        miimon_ms=_int(header.get("MII Polling Interval (ms)")),
        active_slave=_none_if_empty(header.get("Currently Active Slave")),
        lacp_rate=header.get("LACP rate"),
        aggregator_id=_int(header.get("Aggregator ID")),
        partner_mac=header.get("Partner Mac Address"),
        slaves=tuple(_slave(fields) for fields in slaves),
    )


def _slave(fields: dict[str, str]) -> ProcSlave:
    values = {key: fields.get(label) for label, key in _SLAVE_KEYS.items()}
    speed = values["speed"]
    return ProcSlave(
        name=fields["name"],
        mii_status=values["mii_status"] or "unknown",
        speed=None if speed in (None, "Unknown") else speed,
        duplex=None if values["duplex"] in (None, "Unknown") else values["duplex"],
        link_failure_count=_int(values["link_failure_count"]) or 0,
        permanent_mac=values["permanent_mac"],
        aggregator_id=_int(values["aggregator_id"]),
        actor_churn=values["actor_churn"],
        partner_churn=values["partner_churn"],
        partner_mac=fields.get("partner_mac"),
    )


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    return int(text) if re.fullmatch(r"\d{1,9}", text) else None


def _none_if_empty(text: str | None) -> str | None:
    return None if text in (None, "", "None") else text
