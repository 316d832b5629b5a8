"""What an access point advertises in its beacons and probe responses (802.11
information elements): its name, and its security from the key management suites
of its RSN element (and the old WPA vendor element), the way wpa_supplicant and iw
read them [hostap src/common/wpa_common.c wpa_parse_wpa_ie_rsn; iw scan.c].

- RSN (element 48): version, group cipher, pairwise ciphers, then the AKM suites,
  each an OUI (00-0F-AC) and a type: 1 802.1X, 2 PSK, 3 FT-802.1X, 4 FT-PSK,
  5 802.1X-SHA256, 6 PSK-SHA256, 8 SAE, 9 FT-SAE, 11/12 Suite-B, 13 FT-802.1X-SHA384,
  18 OWE, 24 SAE-EXT-KEY, 25 FT-SAE-EXT-KEY [IEEE 802.11-2020 table 9-151].
- WPA (element 221, OUI 00-50-F2 type 1): the same layout, AKMs 1 802.1X, 2 PSK.
- Neither, with the privacy bit of the capability field set: WEP; else open.

PSK and SAE together are WPA3's transition mode (WPA2/WPA3); SAE alone is WPA3.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from zsn.wlan.model import Security

SSID = 0
RSN = 48
VENDOR = 221
IEEE_OUI = b"\x00\x0f\xac"
WPA_OUI = b"\x00\x50\xf2"
PRIVACY = 0x0010

PSK_AKMS = frozenset({2, 4, 6})
SAE_AKMS = frozenset({8, 9, 24, 25})
ENTERPRISE_AKMS = frozenset({1, 3, 5, 11, 12, 13, 22, 23})
OWE_AKMS = frozenset({18})


def elements(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(id, body) of each element; a truncated last element is left out."""
    offset = 0
    while offset + 2 <= len(data):
        kind, length = data[offset], data[offset + 1]
        if offset + 2 + length > len(data):
            return
        yield kind, data[offset + 2:offset + 2 + length]
        offset += 2 + length


def _suites(body: bytes, offset: int) -> tuple[list[bytes], int]:
    """A suite count and its 4-byte suites from `offset`; ([], len) when absent."""
    if offset + 2 > len(body):
        return [], len(body)
    count = body[offset] | body[offset + 1] << 8
    offset += 2
    suites = [body[offset + 4 * i:offset + 4 * i + 4] for i in range(count)]
    if any(len(suite) != 4 for suite in suites):
        return [], len(body)
    return suites, offset + 4 * count


def akm_suites(body: bytes, oui: bytes) -> set[int] | None:
    """The AKM types of an RSN/WPA element body (after the WPA element's OUI+type);
    None when the element is too short to say. No AKM list means PSK (802.11's
    default for RSN and for WPA)."""
    if len(body) < 2:
        return None
    offset = 2 + 4  # version, group cipher
    if offset > len(body):
        return {2}
    _pairwise, offset = _suites(body, offset)
    akms, _end = _suites(body, offset)
    if not akms:
        return {2}
    return {suite[3] for suite in akms if suite[:3] == oui}


class Advertised(NamedTuple):
    ssid: bytes | None
    """None for an access point that hides its name (empty or zeroed SSID element)."""
    security: Security
    akms: frozenset[int]
    """The AKM suite types of its RSN element (WPA's when it has only that)."""


def security_of(akms: set[int], wpa_only: bool) -> Security:
    if akms & ENTERPRISE_AKMS and not akms & (PSK_AKMS | SAE_AKMS):
        return "enterprise"
    if akms & SAE_AKMS:
        return "WPA2/WPA3" if akms & PSK_AKMS else "WPA3"
    if akms & PSK_AKMS:
        return "WPA" if wpa_only else "WPA2"
    if akms & OWE_AKMS:
        return "OWE"
    if akms & ENTERPRISE_AKMS:
        return "enterprise"
    return "unknown"


def advertised(data: bytes, capability: int | None) -> Advertised:
    """Name and security from an access point's information elements."""
    ssid: bytes | None = None
    rsn: set[int] | None = None
    wpa: set[int] | None = None
    for kind, body in elements(data):
        if kind == SSID and ssid is None:
            ssid = body
        elif kind == RSN and rsn is None:
            rsn = akm_suites(body, IEEE_OUI)
        elif kind == VENDOR and body[:4] == WPA_OUI + b"\x01" and wpa is None:
            wpa = akm_suites(body[4:], WPA_OUI)
    if ssid is not None and not ssid.strip(b"\0"):
        ssid = None  # hidden: an empty or zeroed name
    if rsn is not None:
        return Advertised(ssid, security_of(rsn, False), frozenset(rsn))
    if wpa is not None:
        return Advertised(ssid, security_of(wpa, True), frozenset(wpa))
    privacy = capability is not None and bool(capability & PRIVACY)
    return Advertised(ssid, "WEP" if privacy else "open", frozenset())
