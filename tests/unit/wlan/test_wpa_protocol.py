"""wpa_supplicant's control-interface text, parsed from replies captured in the lab."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.wlan.conftest import fixture_text
from zsn.errors import ParseError
from zsn.system.wpa_config import parse_wpa_config
from zsn.system.wpa_ctrl import parse_event, printf_unescape
from zsn.wlan.secrets import Passphrase
from zsn.wlan.wpa import key_commands, key_mgmt_security
from zsn.wlan.wpa_protocol import (
    link_from_status,
    parse_bss,
    parse_kv,
    parse_list_networks,
    security_of_flags,
)


def _walk_replies() -> list[str]:
    """The BSS FIRST / NEXT- replies of the captured walk, one per access point."""
    text = fixture_text("wpa_cli-bss-first-next.txt")
    return [part for part in re.split(r"^== bss [^\n]*\n", text, flags=re.M) if part]


def test_bss_walk_names_every_access_point_with_its_security() -> None:
    entries = [parse_bss(reply) for reply in _walk_replies()]
    assert [(e.id, e.ssid, e.bssid) for e in entries if e] == [
        (0, b"home-wpa2", "02:00:00:00:01:00"), (1, b"office-sae", "02:00:00:00:04:00"),
        (2, b"", "02:00:00:00:03:00"), (3, b"cafe-open", "02:00:00:00:02:00")]
    scan = [e.entry() for e in entries if e]
    assert [(s.title, s.security, s.channel, s.signal_dbm) for s in scan] == [
        ("home-wpa2", "WPA2", 1, -30), ("office-sae", "WPA3", 6, -30),
        ("(hidden)", "WPA2", 11, -30), ("cafe-open", "open", 6, -30)]
    assert scan[2].hidden and not scan[0].hidden


@pytest.mark.parametrize("name, ssid, security", [
    ("wpa_cli-bss.home-wpa2.txt", b"home-wpa2", "WPA2"),
    ("wpa_cli-bss.office-sae.txt", b"office-sae", "WPA3"),
    ("wpa_cli-bss.cafe-open.txt", b"cafe-open", "open"),
    ("wpa_cli-bss.hidden-ap.txt", b"", "WPA2"),
])
def test_single_bss_replies(name: str, ssid: bytes, security: str) -> None:
    bss = parse_bss(fixture_text(name))
    assert bss is not None and bss.ssid == ssid and bss.entry().security == security


def test_the_empty_reply_ends_a_walk() -> None:
    assert parse_bss("") is None and parse_bss("\n") is None


@pytest.mark.parametrize("flags, security", [
    ("[WPA2-PSK+SAE-CCMP][ESS]", "WPA2/WPA3"),
    ("[WPA-PSK-TKIP][WPA2-PSK-CCMP][ESS]", "WPA2"),
    ("[WPA-PSK-TKIP][ESS]", "WPA"),
    ("[WPA2-EAP-CCMP][ESS]", "enterprise"),
    ("[WPA2-OWE-CCMP][ESS]", "OWE"),
    ("[WEP][ESS]", "WEP"),
    ("[ESS][SAE-H2E]", "open"),
])
def test_flags_name_the_security(flags: str, security: str) -> None:
    assert security_of_flags(flags) == security


def test_status_and_signal_poll_make_the_link() -> None:
    status = parse_kv(fixture_text("wpa_cli-status.completed.txt"))
    link = link_from_status(status, parse_kv(fixture_text("wpa_cli-signal_poll.txt")))
    assert link.connected and link.state == "COMPLETED"
    assert (link.ssid, link.bssid, link.signal_dbm, link.frequency, link.channel,
            link.bitrate_kbps, link.security) == (
        b"home-wpa2", "02:00:00:00:01:00", -30, 2412, 1, 36000, "WPA2-PSK")
    sae = link_from_status(parse_kv(fixture_text("wpa_cli-status.sae.txt")))
    assert sae.connected and sae.security == "SAE" and sae.ssid == b"office-sae"
    down = link_from_status(parse_kv(fixture_text("wpa_cli-status.disconnected.txt")))
    assert not down.connected and down.ssid is None and down.state == "DISCONNECTED"
    wrong = link_from_status(parse_kv(fixture_text("wpa_cli-status.wrong-key.txt")))
    assert not wrong.connected and wrong.state == "4WAY_HANDSHAKE"


def test_list_networks_flags() -> None:
    rows = parse_list_networks(fixture_text("wpa_cli-list_networks.txt"))
    assert [(r.id, r.ssid, r.disabled, r.temporarily_disabled) for r in rows] == [
        (0, b"home-wpa2", False, False), (1, b"office-sae", True, False),
        (2, b"cafe-open", True, False), (3, b"hidden-wpa2", False, True)]
    (current,) = parse_list_networks(fixture_text("wpa_cli-list_networks.one-current.txt"))
    assert current.current and not current.disabled


def test_wrong_key_event_is_recognised() -> None:
    events = [parse_event(line) for line in
              fixture_text("wpa_ctrl-events.wrong-key.txt").splitlines() if line]
    assert events[0] is None  # the OK answering ATTACH
    (disabled,) = [e for e in events if e and e.name == "CTRL-EVENT-SSID-TEMP-DISABLED"]
    assert disabled.level == 3
    assert (disabled.field("id"), disabled.field("ssid"), disabled.field("reason")) == (
        "3", "hidden-wpa2", "WRONG_KEY")
    names = [e.name for e in events if e]
    assert names[0] == "CTRL-EVENT-DISCONNECTED" and "CTRL-EVENT-SCAN-RESULTS" in names


def test_saved_config_blocks() -> None:
    config = parse_wpa_config(fixture_text("wpa_supplicant.conf.saved.txt"))
    assert config.settings == {"ctrl_interface": "/run/wpa_supplicant", "update_config": "1"}
    assert [b.ssid for b in config.networks] == [b"home-wpa2", b"office-sae", b"cafe-open",
                                                 b"hidden-wpa2"]
    assert config.networks[1].key_mgmt == {"SAE"} and config.has_secrets
    assert config.networks[1].values["disabled"] == "1"


def test_key_mgmt_security() -> None:
    assert key_mgmt_security("WPA-PSK") == "WPA2"
    assert key_mgmt_security("SAE") == "WPA3"
    assert key_mgmt_security("WPA-PSK SAE") == "WPA2/WPA3"
    assert key_mgmt_security("NONE") == "open"
    assert key_mgmt_security("WPA-EAP") == "enterprise"


def test_key_commands_store_the_psk_for_wpa2_and_hide_every_secret() -> None:
    passphrase = Passphrase("correct horse battery")
    wpa2 = key_commands(0, b"home-wpa2", "WPA2", passphrase)
    assert [c.text.split()[2] for c in wpa2] == ["key_mgmt", "psk"]
    psk = wpa2[1].text.split()[3]
    assert re.fullmatch(r"[0-9a-f]{64}", psk) and "correct" not in psk
    sae = key_commands(1, b"office-sae", "WPA3", Passphrase("sesame street 99"))
    assert any('sae_password "sesame street 99"' in c.text for c in sae)
    for command in wpa2 + sae:
        assert "(hidden)" in command.shown or "psk" not in command.text
        assert "sesame" not in command.shown and psk not in command.shown
        assert "sesame" not in repr(command) and psk not in repr(command)


def printf_encode(data: bytes) -> str:
    """wpa_supplicant's printf_encode (src/utils/common.c), for the round trip."""
    out = []
    for byte in data:
        char = chr(byte)
        special = {'"': '\\"', "\\": "\\\\", "\x1b": "\\e", "\n": "\\n", "\r": "\\r",
                   "\t": "\\t"}
        if char in special:
            out.append(special[char])
        elif 32 <= byte <= 126:
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


@given(st.binary(max_size=32))
def test_printf_escaped_ssids_decode_to_their_bytes(ssid: bytes) -> None:
    assert printf_unescape(printf_encode(ssid)) == ssid


@given(st.text(max_size=600))
def test_bss_parser_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_bss(text)


@given(st.text(max_size=600))
def test_list_networks_parser_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_list_networks(text)


@given(st.text(max_size=200))
def test_any_flags_give_a_security(flags: str) -> None:
    assert security_of_flags(flags)


@given(st.text(max_size=300))
def test_events_parse_or_are_replies(text: str) -> None:
    event = parse_event(text)
    if event is not None:
        event.field("id")
