"""Reading the history back: ``zsn peer log IFACE NAME`` and the export's ``history``.

Both read the store without writing it and lay the live sample over it the way the
recorder would (`zsn.wireguard.recorder.advance`), so the totals and the session
are those of now, not of the last write.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from zsn.errors import ValidationError
from zsn.format import human_bytes, human_duration, sparkline
from zsn.system.host import Host
from zsn.terminal import safe
from zsn.wireguard.history import (
    Event,
    HistoryStore,
    HourAmounts,
    LiveRow,
    PeerKey,
    buckets,
    read_peer,
)
from zsn.wireguard.model import PeerState, WireGuardSnapshot
from zsn.wireguard.recorder import advance, boot_id

EXPORT_HOURS = 24
EXPORT_EVENTS = 10


class PeerReport(NamedTuple):
    interface: str
    public_key: str
    name: str | None
    first_seen: int
    live: LiveRow | None
    """The store's record with the live sample laid over it."""
    hours: list[HourAmounts]
    events: list[Event]


def overlay(row: LiveRow | None, peer: PeerState | None, instance: str,
            now: int) -> tuple[LiveRow | None, list[Event]]:
    """`row` as the recorder would leave it after the live sample `peer` (not written):
    the events it would record are returned too, so a report is never behind."""
    if peer is None:
        return row, []
    if row is not None and row.sampled_at > now:
        return row, []
    step = advance(row, peer, instance, now)
    return step.row, list(step.events)


def _live_peers(snapshot: WireGuardSnapshot) -> dict[PeerKey, tuple[PeerState, str]]:
    boot = boot_id()
    return {PeerKey(interface.name, peer.public_key): (peer, f"{boot}:{interface.instance}")
            for interface in snapshot.interfaces if interface.in_namespace
            for peer in interface.peers}


def find_peer(store: HistoryStore, interface: str, name_or_key: str) -> PeerKey:
    """The peer of `interface` the store knows by this name or public key."""
    known = store.peer_names()
    matches = [key for key, name, _first in known.values()
               if key.interface == interface and name_or_key in (name, key.public_key)]
    if not matches:
        raise ValidationError(f"no history of a peer {name_or_key!r} on {interface}: zsn "
                              "has not recorded it (history is kept while the TUI, zsn serve "
                              "or the zsn-history timer runs)")
    if len(matches) > 1:
        raise ValidationError(f"several peers of {interface} were named {name_or_key!r}; "
                              "give the public key")
    return matches[0]


def one_report(host: Host, store: HistoryStore, interface: str, name_or_key: str,
               now: int, hours: int, snapshot: WireGuardSnapshot | None) -> PeerReport:
    key = find_peer(store, interface, name_or_key)
    found = read_peer(store, key.interface, key.public_key, now, hours=hours)
    assert found is not None
    names = {k: name for k, name, _first in store.peer_names().values()}
    live = _live_peers(snapshot).get(key) if snapshot is not None else None
    row, new_events = overlay(found.live, live[0] if live else None,
                              live[1] if live else "", now)
    hours_list = list(found.hours)
    if row is not None and found.live is not None and row.hour == found.live.hour \
            and hours_list and hours_list[-1].hour == row.hour:
        extra = (row.hour_rx - found.live.hour_rx, row.hour_tx - found.live.hour_tx)
        last = hours_list[-1]
        hours_list[-1] = last._replace(rx=last.rx + extra[0], tx=last.tx + extra[1])
    return PeerReport(key.interface, key.public_key, names.get(key), found.first_seen, row,
                      hours_list, found.events + new_events)


def bulk_reports(store: HistoryStore, snapshot: WireGuardSnapshot, now: int,
                 hours: int = EXPORT_HOURS, events: int = EXPORT_EVENTS
                 ) -> dict[PeerKey, PeerReport]:
    """A report of every peer of `snapshot` the store knows, read in a few queries."""
    live_peers = _live_peers(snapshot)
    rows = store.live_rows()
    known = {key: (peer_id, name, first) for peer_id, (key, name, first)
             in store.peer_names().items()}
    wanted = {known[key][0]: key for key in live_peers if key in known}
    recent = store.recent_hours(list(wanted), now // 3600 - hours + 1, now // 3600)
    latest = store.latest_events(list(wanted), events)
    reports: dict[PeerKey, PeerReport] = {}
    for peer_id, key in wanted.items():
        peer, instance = live_peers[key]
        stored = rows.get(key)
        row, new_events = overlay(stored, peer, instance, now)
        series = recent.get(peer_id, [])
        if row is not None and series and series[-1].hour == row.hour:
            before = stored.hour_rx if stored and stored.hour == row.hour else 0
            before_tx = stored.hour_tx if stored and stored.hour == row.hour else 0
            last = series[-1]
            series[-1] = last._replace(rx=last.rx - before + row.hour_rx,
                                       tx=last.tx - before_tx + row.hour_tx)
        reports[key] = PeerReport(key.interface, key.public_key, known[key][1],
                                  known[key][2], row, series,
                                  (latest.get(peer_id, []) + new_events)[-events:])
    return reports


def report_dict(report: PeerReport) -> dict[str, Any]:
    """A report as JSON: the export's ``history`` of a peer, ``peer log --json``."""
    row = report.live
    return {
        "first_seen": report.first_seen,
        "total_rx": row.total_rx if row else 0,
        "total_tx": row.total_tx if row else 0,
        "connected": bool(row and row.connected),
        "session_since": row.since if row else None,
        "last_seen": row.last_seen if row else None,
        "last_endpoint": row.endpoint if row else None,
        "hourly": [[hour.hour * 3600, hour.rx, hour.tx] for hour in report.hours],
        "events": [event_dict(event) for event in report.events],
    }


def event_dict(event: Event) -> dict[str, Any]:
    return {"at": event.at, "kind": event.kind, "endpoint": event.endpoint,
            "seconds": event.seconds}


def report_text(report: PeerReport, now: int) -> str:
    """``zsn peer log``: the session, the totals, sparklines, then every event."""
    row = report.live
    title = f"{report.name or report.public_key} on {report.interface}"
    lines = [safe(title), f"  public key   {report.public_key}"]
    if row is not None and row.connected and row.since:
        lines.append(f"  session      connected for {human_duration(now - row.since)}, "
                     f"since {when(row.since)}, from {safe(row.endpoint or '?')}")
    elif row is not None and row.last_seen:
        ago = human_duration(now - row.last_seen)
        lines.append(f"  session      not connected; last seen {ago} ago "
                     f"({when(row.last_seen)}) from {safe(row.endpoint or '?')}")
    else:
        lines.append("  session      never connected since zsn began recording")
    if row is not None:
        lines.append(f"  totals       received {human_bytes(row.total_rx)} ({row.total_rx} B), "
                     f"sent {human_bytes(row.total_tx)} ({row.total_tx} B) since "
                     f"{when(report.first_seen)}")
    for label, count, size in (("last 24 h", 24, 1), ("last 7 days", 7 * 24, 7),
                               ("last 30 days", 30 * 24, 30)):
        sums = buckets(report.hours[-count:], size)
        if sums:
            lines.append(f"  {label:<12} {sparkline([rx + tx for rx, tx in sums], 24)}  "
                         f"↓ {human_bytes(sum(rx for rx, _ in sums))}  "
                         f"↑ {human_bytes(sum(tx for _, tx in sums))}")
    lines.append("")
    lines.append("  when              event       endpoint                  session")
    for event in report.events:
        lines.append(f"  {when(event.at)}  {event.kind:<10}  "
                     f"{safe(event.endpoint or '-'):<24}  "
                     f"{human_duration(event.seconds) if event.seconds is not None else ''}")
    if not report.events:
        lines.append("  (no events yet)")
    return "\n".join(lines) + "\n"


def when(unix: int) -> str:
    """A moment in this machine's local time, to the minute."""
    return datetime.fromtimestamp(unix).strftime("%Y-%m-%d %H:%M")


def history_by_peer(reports: Mapping[PeerKey, PeerReport]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(key.interface, key.public_key): report_dict(report)
            for key, report in reports.items()}
