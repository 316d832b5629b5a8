"""netctl profiles: written so that bash (which netctl sources them with) reads back
exactly the values meant, hostile names included; read without running bash."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.needs import needs_tools
from zsn.bash import parse_assignments, quote
from zsn.errors import ParseError, ValidationError
from zsn.system.systemd import systemd_escape, systemd_unescape
from zsn.wlan import netctl
from zsn.wlan.secrets import Passphrase, derive_psk

HOSTILE = ["$(touch /tmp/pwned)", "`id`", "a b  c", "semi;colon", "back\\slash",
           "glob*?[x]", "~tilde", "#hash", "dollar$HOME", "!bang", "über ☕",
           "--option", "(paren)", "{brace}", "a&b|c", "x=y"]
VARIABLES = ("Description", "Interface", "Connection", "Security", "ESSID", "Hidden", "IP",
             "Key")


def bash_values(path: Path, names: tuple[str, ...] = VARIABLES) -> dict[str, str | None]:
    """Source the profile in bash (as netctl does) and read the variables back."""
    needs_tools("bash")
    script = 'set -u; source "$1" >/dev/null || exit 9\n' + "".join(
        f'if [[ -v {name} ]]; then printf "%s\\0" "${name}"; else printf "\\1\\0"; fi\n'
        for name in names)
    result = subprocess.run(["bash", "--noprofile", "--norc", "-c", script, "bash", str(path)],
                            capture_output=True, timeout=10, check=False,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                            cwd=path.parent)
    assert result.returncode == 0, result.stderr
    values = result.stdout.decode().split("\0")[:-1]
    return {name: (None if value == "\x01" else value)
            for name, value in zip(names, values, strict=True)}


def test_profile_with_a_derived_psk(tmp_path: Path) -> None:
    ssid = b"home-wpa2"
    text = netctl.render_profile("wlan0", ssid, "WPA2", Passphrase("correct horse battery"),
                                 hidden=False).text
    assert "correct" not in text
    path = tmp_path / "wlan0-home-wpa2"
    path.write_text(text)
    values = bash_values(path)
    assert values == {
        "Description": netctl.DESCRIPTION, "Interface": "wlan0", "Connection": "wireless",
        "Security": "wpa", "ESSID": "home-wpa2", "Hidden": None, "IP": "dhcp",
        "Key": '"' + derive_psk("correct horse battery", ssid)}
    profile = netctl.parse_profile(path.name, text)
    assert profile.key_is_psk and profile.essid == ssid and profile.security == "WPA2"
    assert profile.passphrase is None


@pytest.mark.parametrize("ssid", HOSTILE)
def test_hostile_ssids_reach_bash_unchanged(ssid: str, tmp_path: Path) -> None:
    text = netctl.render_profile("wlan0", ssid.encode(), "open", None, hidden=True).text
    path = tmp_path / "profile"
    path.write_text(text)
    values = bash_values(path)
    assert values["ESSID"] == ssid and values["Hidden"] == "yes" and values["Key"] is None
    assert not Path("/tmp/pwned").exists()
    assert netctl.parse_profile("p", text).values["ESSID"] == ssid


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(ssid=st.text(st.characters(codec="utf-8", exclude_characters="\"'\r\n\x00",
                                  exclude_categories=["Cc", "Cs"]),
                    min_size=1, max_size=10).filter(lambda s: len(s.encode()) <= 32),
       passphrase=st.text(st.characters(min_codepoint=32, max_codepoint=126),
                          min_size=8, max_size=63))
def test_sae_profiles_source_to_the_same_values(ssid: str, passphrase: str,
                                                tmp_path: Path) -> None:
    text = netctl.render_profile("wlan0", ssid.encode(), "WPA3", Passphrase(passphrase),
                                 hidden=False).text
    path = tmp_path / "profile"
    path.write_text(text)
    values = bash_values(path)
    assert values["ESSID"] == ssid
    expected_key = f'""{passphrase}"' if passphrase.startswith('"') else passphrase
    assert values["Key"] == expected_key
    parsed = netctl.parse_profile("p", text)
    assert {k: v for k, v in parsed.values.items()} == {
        k: v for k, v in values.items() if v is not None}
    assert parsed.passphrase == passphrase


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00",
                             exclude_categories=["Cs"]), max_size=20))
def test_printf_q_words_parse_as_bash_reads_them(value: str) -> None:
    """wifi-menu writes ESSID=$(printf %q ...): every such word parses to the value."""
    needs_tools("bash")
    word = subprocess.run(["bash", "--noprofile", "--norc", "-c", 'printf %q "$1"', "bash",
                           value], capture_output=True, text=True, timeout=10,
                          check=True).stdout
    (assignment,) = parse_assignments(f"ESSID={word}\n")
    assert assignment.value == value


@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00",
                             exclude_categories=["Cs"]), max_size=30))
def test_quote_round_trips(value: str) -> None:
    (assignment,) = parse_assignments(f"X={quote(value)}\n")
    assert assignment.value == value


@given(st.text(max_size=200))
def test_parser_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(ParseError):
        parse_assignments(text)


@pytest.mark.parametrize("text, reason", [
    ("ESSID=$HOME\n", "expansion"),
    ('ESSID="x$(id)"\n', "expansion"),
    ("ESSID=`id`\n", "expansion"),
    ("rm -rf /\n", "not a variable assignment"),
    ("ESSID=a b\n", "more than one word"),
    ("ESSID='open\n", "unterminated single quote"),
    ("Address=(x\n", "is not closed"),
    # bash: syntax error near unexpected token `;' (the reader once looped on it)
    ("BindsToInterfaces=(eth0 ; eth1)\n", "unquoted ';'"),
])
def test_profiles_needing_a_shell_are_refused(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_assignments(text)


def test_arrays_comments_and_continuations() -> None:
    text = ("# a comment\nAddress=('192.168.1.23/24' '192.168.1.87/24')  # two\n"
            "Routes=(\n  '10.0.0.0/8 via 192.168.1.1'\n)\nDescription=a\\\nb\n")
    values = {a.name: a.value for a in parse_assignments(text)}
    assert values == {"Address": ("192.168.1.23/24", "192.168.1.87/24"),
                      "Routes": ("10.0.0.0/8 via 192.168.1.1",), "Description": "ab"}


@pytest.mark.parametrize("ssid, reason", [
    (b'say "hi"', "double quote"), (b"it's", "single quote"), (b"two\nlines", "line break"),
    (b"bell\x07", "control characters"), (b"\xff\xfe", "not UTF-8"),
])
def test_names_netctl_cannot_carry_are_refused(ssid: bytes, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        netctl.render_profile("wlan0", ssid, "open", None, hidden=False)
    with pytest.raises(ValidationError, match=reason):
        netctl.profile_name_for("wlan0", ssid)


def test_profile_names_follow_wifi_menu() -> None:
    assert netctl.profile_name_for("wlan0", b"home/office") == "wlan0-home_office"
    for name in ("wlan0-x.service", "wlan0-x~"):  # netctl's list_profiles skips them
        with pytest.raises(ValidationError, match="does not list"):
            netctl.validate_profile_name(name)


@pytest.mark.parametrize("name", ["wlan0-FRITZ!Box 7590 VD", "wlan0-café", "a/b", ".hidden",
                                  "plain_name:1.2"])
def test_unit_names_match_systemd_escape(name: str) -> None:
    needs_tools("systemd-escape")
    real = subprocess.run(["systemd-escape", "--", name], capture_output=True, text=True,
                          timeout=5, check=True).stdout.strip()
    assert systemd_escape(name) == real
    assert systemd_unescape(real) == name


def test_dropin_as_netctl_enable_writes_it() -> None:
    profile = netctl.parse_profile("wlan0-x", "Description='Automatically generated profile "
                                   "by wifi-menu'\nInterface=wlan0\nConnection=wireless\n")
    assert netctl.dropin(profile).text == (
        "[Unit]\nDescription=Automatically generated profile by wifi-menu\n"
        "BindsTo=sys-subsystem-net-devices-wlan0.device\n"
        "After=sys-subsystem-net-devices-wlan0.device\n")
    assert netctl.unit_name("wlan0-FRITZ!Box") == "netctl@wlan0\\x2dFRITZ\\x21Box.service"


def test_a_description_that_would_be_a_second_line_of_the_drop_in_is_refused() -> None:
    profile = netctl.parse_profile("wlan0-x", "Description=$'x\\nExecStartPre=/bin/sh'\n"
                                   "Interface=wlan0\nConnection=wireless\n")
    assert profile.get("Description") == "x\nExecStartPre=/bin/sh"
    with pytest.raises(ValidationError, match="line break"):
        netctl.dropin(profile)


def test_wifi_menu_obscured_key_is_a_psk() -> None:
    # wifi-menu -o writes Key=$(printf %q "\"$psk") (src/wifi-menu)
    psk = derive_psk("correct horse battery", b"home-wpa2")
    profile = netctl.parse_profile("p", f"Security=wpa\nESSID=home-wpa2\nKey=\\\"{psk}\n")
    assert profile.key_is_psk and profile.get("Key") == '"' + psk
    assert profile.security == "WPA2"
    quoted = netctl.parse_profile("q", "Security=wpa\nESSID=x\nKey='\"\"\"quoted start\"'\n")
    assert quoted.passphrase == '"quoted start' and quoted.security == "WPA2/WPA3"
