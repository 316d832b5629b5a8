"""iwd's D-Bus objects (as busctl showed them in the lab) turned into zsn's model."""

from __future__ import annotations

import re
import shlex
from typing import Any

from tests.unit.wlan.conftest import fixture_text
from zsn.system import iwd as bus_iwd
from zsn.wlan import iwd

STATION = "/net/connman/iwd/5/7"
HOME_NETWORK = "/net/connman/iwd/5/7/686f6d652d77706132_psk"
HOME_KNOWN = "/net/connman/iwd/686f6d652d77706132_psk"


def _value(signature: str, text: str) -> Any:
    words = shlex.split(text)
    if signature == "b":
        return words[0] == "true"
    if signature in ("s", "o"):
        return words[0] if words else None
    if signature in ("q", "n", "u", "i", "y"):
        return int(words[0])
    if signature == "as":
        return words[1:]
    raise AssertionError(signature)


def introspected(name: str) -> dict[str, dict[str, Any]]:
    """interface -> properties from `busctl introspect` output (properties with a value)."""
    interfaces: dict[str, dict[str, Any]] = {}
    current = ""
    for line in fixture_text(name).splitlines()[1:]:
        match = re.match(r"(\S+)\s+(interface|property|method|signal)\s+(\S+)\s+(.*?)\s{2,}(\S+)"
                         r"\s*$", line)
        if match is None:
            continue
        member, kind, signature, value, _flags = match.groups()
        if kind == "interface":
            current = member
            interfaces[current] = {}
        elif kind == "property" and value.strip() != "-":
            interfaces[current][member.lstrip(".")] = _value(signature, value)
    return interfaces


def captured_objects() -> bus_iwd.Objects:
    return {
        STATION: introspected("busctl-introspect-station.txt"),
        HOME_NETWORK: introspected("busctl-introspect-network.txt"),
        HOME_KNOWN: introspected("busctl-introspect-known-network.txt"),
        "/net/connman/iwd/5": introspected("busctl-introspect-adapter.txt"),
    }


def captured_diagnostics() -> dict[str, Any]:
    """`busctl call ... GetDiagnostics` (a{sv}) as a dict, from the lab's capture."""
    words = shlex.split(fixture_text("busctl-call-GetDiagnostics.connected.txt"))
    assert words[0] == "a{sv}"
    values: dict[str, Any] = {}
    rest = words[2:]
    for index in range(int(words[1])):
        key, signature, value = rest[3 * index:3 * index + 3]
        values[key] = _value(signature, value)
    return values


def test_diagnostics_units() -> None:
    values = captured_diagnostics()
    # iwctl showed "TxBitrate 9000 Kbit/s" for the same kind of link: 100 kbit/s units.
    assert values["TxBitrate"] == 90 and values["RSSI"] == -30


def test_known_network_from_its_object() -> None:
    (known,) = iwd.known_networks(captured_objects(), {HOME_KNOWN})
    assert (known.ssid, known.security, known.autoconnect, known.hidden, known.current) == (
        b"home-wpa2", "personal", True, False, True)  # iwd: "psk", WPA2 or 3
    assert known.backend == "iwd" and known.interface is None
    assert known.path == "/var/lib/iwd/home-wpa2.psk"


def test_connected_station_link() -> None:
    objects = captured_objects()
    station = objects[STATION][bus_iwd.STATION]
    network = objects[HOME_NETWORK][bus_iwd.NETWORK]
    link = iwd.link_of(station, network, {})
    assert link.connected and link.state == "connected" and link.ssid == b"home-wpa2"
    detailed = iwd.link_of(station, network, captured_diagnostics())
    assert (detailed.signal_dbm, detailed.channel, detailed.bitrate_kbps, detailed.bssid,
            detailed.security) == (-30, 1, 9000, "02:00:00:00:01:00", "WPA2-Personal")


def test_network_lookup_by_ssid_on_the_station() -> None:
    objects = captured_objects()
    assert iwd.find_network(objects, STATION, b"home-wpa2") == (HOME_NETWORK, "psk")
    assert iwd.find_network(objects, STATION, b"elsewhere") is None
    assert iwd.find_network(objects, "/net/connman/iwd/0/1", b"home-wpa2") is None
    assert [path for path, _ in iwd.find_known(objects, b"home-wpa2")] == [HOME_KNOWN]


def test_ordered_networks_reply_shape() -> None:
    words = shlex.split(fixture_text("busctl-call-GetOrderedNetworks.txt"))
    assert words[:2] == ["a(on)", "3"]
    pairs = list(zip(words[2::2], map(int, words[3::2]), strict=True))
    names = [bytes.fromhex(path.rsplit("/", 1)[1].split("_")[0]) for path, _ in pairs]
    assert names == [b"home-wpa2", b"office-sae", b"cafe-open"]
    assert [signal / 100 for _, signal in pairs] == [-30.0] * 3


def test_profile_file_names() -> None:
    # iwd's storage.c: the SSID when it is [A-Za-z0-9_ -] only, else "=" and hex
    assert iwd.profile_path(b"hidden-wpa2", "psk") == "/var/lib/iwd/hidden-wpa2.psk"
    assert iwd.profile_path(b"cafe open", "open") == "/var/lib/iwd/cafe open.open"
    assert iwd.profile_path("café".encode(), "psk") == "/var/lib/iwd/=636166c3a9.psk"
    assert iwd.profile_path(b"a.b", "psk") == "/var/lib/iwd/=612e62.psk"
