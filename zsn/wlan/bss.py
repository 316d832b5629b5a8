"""Networks in range from the kernel's scan table (`zsn.system.nl80211`), one row per
access point, for the backends whose own API lists less: iwd names networks, not
access points, and says "psk" for WPA2 and WPA3 alike; NetworkManager's interfaces
are shown read-only. The kernel's table has each access point's address, channel,
signal and advertised security (`zsn.wlan.elements`); the backend adds what only it
knows: which networks it remembers, and which one it is connected to.
"""

from __future__ import annotations

from collections.abc import Iterable

from zsn.system.nl80211 import BssRecord
from zsn.wlan.elements import advertised
from zsn.wlan.model import Link, ScanEntry


def in_range(records: Iterable[BssRecord], backend_scan: Iterable[ScanEntry], link: Link,
             known: Iterable[bytes] = ()) -> tuple[ScanEntry, ...]:
    """A scan entry per access point in `records`.

    An access point that hides its name is listed once as hidden, unless the kernel
    also holds it by name (cfg80211 keeps the hidden beacon's entry beside the one a
    probe for the name created, e.g. after connecting to it): then only by name.
    Networks the backend lists that the kernel's table lacks keep the backend's row.
    """
    records = list(records)
    backend = list(backend_scan)
    remembered = set(known) | {entry.ssid for entry in backend
                               if entry.known and entry.ssid is not None}
    connected_names = {entry.ssid for entry in backend if entry.connected}
    entries: list[ScanEntry] = []
    named_bssids = set()
    decoded = []
    for record in records:
        shown = advertised(record.elements, record.capability)
        decoded.append((record, shown))
        if shown.ssid is not None:
            named_bssids.add(record.bssid)
    for record, shown in decoded:
        if shown.ssid is None and record.bssid in named_bssids:
            continue
        connected = record.associated or (
            link.connected and link.bssid is not None and link.bssid == record.bssid)
        if link.connected and link.bssid is None and shown.ssid in connected_names:
            connected = True
        entries.append(ScanEntry(
            ssid=shown.ssid, bssid=record.bssid,
            signal_dbm=record.signal_mbm / 100 if record.signal_mbm is not None else None,
            frequency=record.frequency, security=shown.security,
            known=shown.ssid is not None and shown.ssid in remembered, connected=connected))
    seen = {entry.ssid for entry in entries if entry.ssid is not None}
    listed = {entry.bssid for entry in entries}
    for entry in backend:
        missing = entry.ssid not in seen if entry.ssid is not None else \
            entry.bssid not in listed
        if missing:
            entries.append(entry)
    return tuple(entries)
