"""The kernel's list of access points in range (cfg80211's scan results) over nl80211.

Whatever daemon drives a radio (iwd, wpa_supplicant, NetworkManager), its scans fill
the kernel's BSS table, and a dump of it (``NL80211_CMD_GET_SCAN``, no root needed,
no new scan) has what the daemons' own APIs may leave out: each access point's
address, frequency, signal, whether this station is associated with it, and the
information elements it advertises (name, RSN/WPA key management: what security it
really offers). `iw dev IFACE scan dump` prints the same table.

Constants from the kernel's ABI: linux/genetlink.h, linux/nl80211.h. Decoders take
raw bytes, so they are tested on dumps captured in the kernel lab.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from zsn.errors import NetlinkError, ParseError, ZsnError
from zsn.system import rtnetlink
from zsn.system.rtnetlink import NLMSG_ERROR, attributes, mac_text, messages, unsigned

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
CTRL_ATTR_MCAST_GROUPS = 7
CTRL_ATTR_MCAST_GRP_NAME = 1
CTRL_ATTR_MCAST_GRP_ID = 2
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
NL80211_CMD_GET_SCAN = 32
NL80211_CMD_NEW_SCAN_RESULTS = 34
NL80211_ATTR_IFINDEX = 3
NL80211_ATTR_BSS = 47
NL80211_BSS_BSSID = 1
NL80211_BSS_FREQUENCY = 2
NL80211_BSS_CAPABILITY = 5
NL80211_BSS_INFORMATION_ELEMENTS = 6
NL80211_BSS_SIGNAL_MBM = 7
NL80211_BSS_STATUS = 9
NL80211_BSS_SEEN_MS_AGO = 10
NL80211_BSS_BEACON_IES = 11
BSS_STATUS_ASSOCIATED = 1

_GENL = struct.Struct("=BBH")
_U16 = struct.Struct("=H")


class BssRecord(NamedTuple):
    """One access point in the kernel's scan table."""

    bssid: str
    frequency: int | None
    """MHz."""
    signal_mbm: int | None
    """Signal in 1/100 dBm."""
    capability: int | None
    """The 802.11 capability field (bit 4: privacy, i.e. some encryption)."""
    elements: bytes
    """The information elements of the last frame received (probe response or beacon)."""
    beacon_elements: bytes | None
    associated: bool
    seen_ms_ago: int | None


def decode_bss(data: bytes, start: int, end: int) -> BssRecord | None:
    values: dict[int, tuple[int, int]] = {kind: (a, b) for kind, a, b
                                          in attributes(data, start, end)}
    if NL80211_BSS_BSSID not in values:
        return None
    a, b = values[NL80211_BSS_BSSID]
    if b - a != 6:
        raise ValueError(f"a BSSID of {b - a} bytes")
    bssid = mac_text(data, a, b)

    def number(kind: int) -> int | None:
        return unsigned(data, *values[kind]) if kind in values else None

    def raw(kind: int) -> bytes | None:
        return bytes(data[values[kind][0]:values[kind][1]]) if kind in values else None

    signal = None
    if NL80211_BSS_SIGNAL_MBM in values:
        a, b = values[NL80211_BSS_SIGNAL_MBM]
        signal = int(struct.unpack_from("=i", data, a)[0]) if b - a == 4 else None
    capability = None
    if NL80211_BSS_CAPABILITY in values:
        a, b = values[NL80211_BSS_CAPABILITY]
        capability = int(_U16.unpack_from(data, a)[0]) if b - a >= 2 else None
    return BssRecord(bssid, number(NL80211_BSS_FREQUENCY), signal, capability,
                     raw(NL80211_BSS_INFORMATION_ELEMENTS) or b"",
                     raw(NL80211_BSS_BEACON_IES),
                     number(NL80211_BSS_STATUS) == BSS_STATUS_ASSOCIATED,
                     number(NL80211_BSS_SEEN_MS_AGO))


def decode_scan(chunks: Iterable[bytes], family: int) -> list[BssRecord]:
    """Every access point in a GET_SCAN dump; a malformed message raises `ParseError`."""
    found: list[BssRecord] = []
    for kind, data, a, b in messages(chunks):
        if kind != family or b - a < _GENL.size:
            continue
        if data[a] != NL80211_CMD_NEW_SCAN_RESULTS:
            continue
        try:
            for attribute, start, end in attributes(data, a + _GENL.size, b):
                if attribute == NL80211_ATTR_BSS:
                    record = decode_bss(data, start, end)
                    if record is not None:
                        found.append(record)
        except (struct.error, IndexError, ValueError) as exc:
            raise ParseError(f"malformed nl80211 scan message at byte {a}: {exc}",
                             source="netlink") from exc
    return found


def _request(command: int, attributes: bytes) -> bytes:
    return _GENL.pack(command, 1, 0) + attributes


class Family(NamedTuple):
    """A generic netlink family as the kernel gave it out at load."""

    id: int
    groups: dict[str, int]
    """Its multicast groups by name ("scan", "mlme"...) and number."""


def family(name: str = "nl80211") -> Family:
    chunks = rtnetlink.exchange(
        GENL_ID_CTRL, _request(CTRL_CMD_GETFAMILY, rtnetlink.attribute(
            CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0")),
        f"looking up the {name} netlink family", dump=False, protocol=NETLINK_GENERIC)
    for kind, data, a, b in messages(chunks):
        if kind == NLMSG_ERROR or b - a < _GENL.size:
            continue
        number, groups = None, {}
        for attribute, start, end in attributes(data, a + _GENL.size, b):
            if attribute == CTRL_ATTR_FAMILY_ID and end - start >= 2:
                number = int(_U16.unpack_from(data, start)[0])
            elif attribute == CTRL_ATTR_MCAST_GROUPS:
                for _index, group_start, group_end in attributes(data, start, end):
                    values = {kind: (x, y) for kind, x, y
                              in attributes(data, group_start, group_end)}
                    if CTRL_ATTR_MCAST_GRP_NAME in values and CTRL_ATTR_MCAST_GRP_ID in values:
                        x, y = values[CTRL_ATTR_MCAST_GRP_NAME]
                        group = bytes(data[x:y]).rstrip(b"\0").decode("ascii", "replace")
                        groups[group] = unsigned(data, *values[CTRL_ATTR_MCAST_GRP_ID])
        if number is not None:
            return Family(number, groups)
    raise NetlinkError(f"the kernel has no {name} netlink family (no Wi-Fi support)")


def family_id(name: str = "nl80211") -> int:
    """The generic netlink family's number (the kernel gives it out at load)."""
    return family(name).id


def dump_scan_raw(family: int, ifindex: int) -> list[bytes]:
    return rtnetlink.exchange(
        family, _request(NL80211_CMD_GET_SCAN, rtnetlink.attribute(
            NL80211_ATTR_IFINDEX, struct.pack("=I", ifindex))),
        "reading the kernel's list of access points in range", protocol=NETLINK_GENERIC)


def read_scan(ifindex: int) -> list[BssRecord]:
    """The access points the kernel knows in range of the interface `ifindex`."""
    family = family_id()
    return decode_scan(dump_scan_raw(family, ifindex), family)


def scans_ended(chunk: bytes, family_number: int, ifindex: int) -> bool:
    """Whether a datagram of the "scan" multicast group says a scan on `ifindex` ended
    with results (NL80211_CMD_NEW_SCAN_RESULTS naming the interface)."""
    try:
        for kind, data, a, b in messages([chunk]):
            if kind != family_number or b - a < _GENL.size \
                    or data[a] != NL80211_CMD_NEW_SCAN_RESULTS:
                continue
            for attribute, start, end in attributes(data, a + _GENL.size, b):
                if attribute == NL80211_ATTR_IFINDEX and end - start == 4 \
                        and unsigned(data, start, end) == ifindex:
                    return True
    except (struct.error, IndexError, ValueError):
        return False  # not an event of ours
    return False


def scan_events(nl80211: Family, *, blocking: bool = True) -> socket.socket:
    """A socket that receives the datagrams of nl80211's "scan" multicast group (scans
    triggered, ended, aborted), joined; the caller closes it."""
    group = nl80211.groups.get("scan")
    if group is None:
        raise NetlinkError("nl80211 has no scan multicast group")
    kind = socket.SOCK_RAW | socket.SOCK_CLOEXEC | (0 if blocking else socket.SOCK_NONBLOCK)
    sock = socket.socket(socket.AF_NETLINK, kind, NETLINK_GENERIC)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        sock.bind((0, 0))
        sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group)
    except OSError:
        sock.close()
        raise
    return sock


class ScanWatch:
    """Reads the kernel's table each time a scan on one interface ends, while open.

    iwd splits a scan it is asked for into parts (the 2.4 GHz channels 1, 6 and 11,
    then 5 GHz, then the rest of 2.4 GHz), each with NL80211_SCAN_FLAG_FLUSH: as a part
    ends, cfg80211 drops every access point the part did not see, so after the last
    part the table holds only its channels. iwd reads the table as each part ends; so
    does this, handing each reading to `seen` (from its own thread). A watch that cannot
    join the group (no nl80211, no permission) reads nothing: `error` says why.
    """

    def __init__(self, ifindex: int, seen: Callable[[list[BssRecord]], None]) -> None:
        self.ifindex = ifindex
        self.seen = seen
        self.error: str | None = None
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._wake_read, self._wake_write = -1, -1
        try:
            self._family = family()
            sock = scan_events(self._family)
        except (OSError, NetlinkError) as exc:
            self.error = f"watching the kernel's scans: {exc}"
            return
        self._sock = sock
        # `close` wakes the thread through this pipe: an idle watch never wakes up.
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, name="nl80211-scan-watch",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            ready, _, _ = select.select([self._sock.fileno(), self._wake_read], [], [])
            if self._stop.is_set() or self._sock.fileno() not in ready:
                continue
            try:
                chunk = self._sock.recv(1 << 16)
            except OSError:  # ENOBUFS: events lost; read the table anyway
                chunk = b""
            if chunk and not scans_ended(chunk, self._family.id, self.ifindex):
                continue
            try:
                self.seen(decode_scan(dump_scan_raw(self._family.id, self.ifindex),
                                      self._family.id))
            except (ZsnError, OSError) as exc:
                self.error = f"reading the kernel's scan table: {exc}"

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            os.write(self._wake_write, b"x")
            self._thread.join()
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for fd in (self._wake_read, self._wake_write):
            if fd >= 0:
                os.close(fd)
        self._wake_read, self._wake_write = -1, -1

    def __enter__(self) -> ScanWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
