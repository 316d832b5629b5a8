"""Security, channel and BSSID of every access point in range, from what it advertises
(the kernel's scan table, nl80211), checked on the lab's captures: iwd with WPA2-only,
SAE-only, transition, OWE, open and hidden access points (capture_security.py)."""

from __future__ import annotations

import re

from tests.unit.wlan.conftest import fixture_text, iwd_replies, iwd_station, kernel_scan
from zsn.system import nl80211
from zsn.wlan import iwd, live
from zsn.wlan.bss import in_range
from zsn.wlan.elements import advertised
from zsn.wlan.iwd import security_of_type


def iw_dump(step: str) -> dict[tuple[str, bool], dict[str, str]]:
    """`iw dev wlan0 scan dump`, the anchor: per (BSSID, associated) its freq, SSID and
    authentication suites."""
    found: dict[tuple[str, bool], dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in fixture_text(f"iw-dev-wlan0-scan-dump.{step}.txt").splitlines():
        header = re.match(r"BSS ([0-9a-f:]{17})\(on wlan0\)( -- associated)?", line)
        if header:
            current = {}
            found[(header.group(1), bool(header.group(2)))] = current
        elif match := re.match(r"\s+(freq|SSID): ?(.*)", line):
            current.setdefault(match.group(1), match.group(2))
        elif match := re.match(r"\s+\* Authentication suites: (.*)", line):
            current["akm"] = match.group(1)
    return found


def test_each_access_point_has_the_security_it_advertises() -> None:
    shown = {record.bssid: (advertised(record.elements, record.capability), record.frequency)
             for record in kernel_scan("scanned")}
    assert {bssid: (each.ssid, each.security, frequency)
            for bssid, (each, frequency) in shown.items()} == {
        "02:00:00:00:01:00": (b"home-wpa2", "WPA2", 2412),
        "02:00:00:00:02:00": (b"office-sae", "WPA3", 2437),
        "02:00:00:00:03:00": (b"mixed-wpa3", "WPA2/WPA3", 2462),  # transition mode
        "02:00:00:00:04:00": (None, "WPA2", 2462),  # hidden
        "02:00:00:00:05:00": (b"cafe-open", "open", 2437),
        "02:00:00:00:06:00": (b"guest-owe", "OWE", 2412),
    }


def test_the_kernels_table_reads_as_iw_prints_it() -> None:
    akm_words = {2: "PSK", 8: "SAE", 18: "OWE"}
    for step in ("scanned", "transition", "hidden"):
        anchor = iw_dump(step)
        records = kernel_scan(step)
        assert len(records) == len(anchor)
        for record in records:
            seen = anchor[(record.bssid, record.associated)]
            shown = advertised(record.elements, record.capability)
            assert int(seen["freq"]) == record.frequency
            assert seen["SSID"].encode() == (shown.ssid or b"")
            assert seen.get("akm", "") == " ".join(akm_words[a] for a in sorted(shown.akms))


def test_iwd_alone_cannot_tell_wpa2_from_wpa3_nor_open_from_owe() -> None:
    assert security_of_type("psk") == "personal" and security_of_type("open") == "open/OWE"


def test_under_iwd_every_network_in_range_has_channel_bssid_and_true_security() -> None:
    entries = {entry.title: entry for entry in iwd_station("scanned").scan}
    assert {title: (entry.security, entry.channel, entry.bssid)
            for title, entry in entries.items()} == {
        "home-wpa2": ("WPA2", 1, "02:00:00:00:01:00"),
        "office-sae": ("WPA3", 6, "02:00:00:00:02:00"),
        "mixed-wpa3": ("WPA2/WPA3", 11, "02:00:00:00:03:00"),
        "cafe-open": ("open", 6, "02:00:00:00:05:00"),
        "guest-owe": ("OWE", 1, "02:00:00:00:06:00"),
        "(hidden)": ("WPA2", 11, "02:00:00:00:04:00"),
    }


def test_the_connected_transition_network_keeps_what_it_offers() -> None:
    station = iwd_station("transition")
    (connected,) = [entry for entry in station.scan if entry.connected]
    assert (connected.title, connected.bssid, connected.channel, connected.security) == (
        "mixed-wpa3", "02:00:00:00:03:00", 11, "WPA2/WPA3")
    assert station.link.security == "WPA3-Personal"  # what this link negotiated
    # After connecting, the kernel's table held only the connected access point; the
    # others iwd still lists say only what iwd knows.
    others = {entry.title: entry.security for entry in station.scan if not entry.connected}
    assert others["home-wpa2"] == "personal" and others["guest-owe"] == "open/OWE"


def test_a_hidden_network_once_connected_is_one_row_by_name() -> None:
    """iwd still lists the access point among its hidden ones, and the kernel keeps the
    nameless beacon's entry beside the named one: one row, by name, connected."""
    station = iwd_station("hidden")
    rows = [(entry.title, entry.bssid, entry.connected) for entry in station.scan
            if entry.bssid == "02:00:00:00:04:00"]
    assert rows == [("hidden-wpa2", "02:00:00:00:04:00", True)]
    assert not any(entry.hidden for entry in station.scan)


def test_an_iwd_scan_in_parts_keeps_the_access_points_its_earlier_parts_saw() -> None:
    # iwd flushes the kernel's table part by part: a reading after the last part has
    # only its channels (here: none of the lab's), while iwd still lists every network.
    state = iwd.state_of(iwd_replies("scanned"))
    device = state.devices["wlan0"]
    parts = live._ScannedByParts()
    parts.add("wlan0", kernel_scan("scanned"))  # as the first part ended
    after_last_part = parts.completed("wlan0", [], device.scan)
    entries = {entry.title: entry for entry in in_range(after_last_part, device.scan,
                                                        device.link)}
    assert {title: entry.channel for title, entry in entries.items()} == {
        "home-wpa2": 1, "office-sae": 6, "mixed-wpa3": 11, "cafe-open": 6, "guest-owe": 1,
        "(hidden)": 11}


def test_an_access_point_iwd_no_longer_lists_is_forgotten() -> None:
    state = iwd.state_of(iwd_replies("scanned"))
    device = state.devices["wlan0"]
    records = kernel_scan("scanned")
    parts = live._ScannedByParts()
    parts.add("wlan0", records)
    gone = [entry for entry in device.scan if entry.title != "cafe-open"]
    kept = parts.completed("wlan0", [], tuple(gone))
    assert "02:00:00:00:05:00" not in {record.bssid for record in kept}
    assert len(kept) == len(records) - 1
    # and a fresher reading of an access point replaces the remembered one
    (fresh,) = [record for record in records if record.bssid == "02:00:00:00:01:00"]
    now = parts.completed("wlan0", [fresh], tuple(gone))
    assert [record.bssid for record in now].count("02:00:00:00:01:00") == 1


def test_each_part_of_an_iwd_scan_is_seen_ending_on_its_interface_only() -> None:
    header, *lines = fixture_text("nl80211-scan-events.wlan5.hex").splitlines()
    values = dict(item.split("=") for item in header.split())
    family, index = int(values["family"]), int(values["ifindex"])
    chunks = [bytes.fromhex(line) for line in lines]
    assert [nl80211.scans_ended(chunk, family, index) for chunk in chunks] == [
        True, False, True, False, True, False, True]  # iwd's own scan, then three parts
    assert not any(nl80211.scans_ended(chunk, family, index + 1) for chunk in chunks)
    assert not any(nl80211.scans_ended(chunk, family + 1, index) for chunk in chunks)
    assert not nl80211.scans_ended(chunks[0][:40], family, index)  # cut short: not an end
