"""SSIDs shown safely, passphrases checked and kept out of reprs, PSKs derived."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.needs import needs_tools
from zsn.errors import ValidationError
from zsn.wlan.secrets import Passphrase, derive_psk, read_passphrase_file
from zsn.wlan.ssid import display, from_user


def test_psk_matches_the_published_vector() -> None:
    # hostap src/crypto/crypto_module_tests.c: passphrase "password", SSID "IEEE"
    assert derive_psk("password", b"IEEE") == (
        "f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e")


def test_psk_matches_wpa_passphrase() -> None:
    needs_tools("wpa_passphrase")
    for ssid, passphrase in (("home-wpa2", "correct horse battery"),
                             ("café ☕", "x" * 63), ("a", "12345678")):
        out = subprocess.run(["wpa_passphrase", ssid, passphrase], capture_output=True,
                             text=True, timeout=5, check=True).stdout
        psk = next(line.split("=", 1)[1] for line in out.splitlines()
                   if line.strip().startswith("psk="))
        assert derive_psk(passphrase, ssid.encode()) == psk


@pytest.mark.parametrize("text, reason", [
    ("short", "has 5 characters; WPA needs 8 to 63"),
    ("x" * 64, "64 characters but not all hex digits"),
    ("y" * 70, "has 70 characters; WPA allows at most 63"),
    ("pässwörd123", "outside printable ASCII"),
    ("two\nlines!!", "line break"),
])
def test_bad_passphrases_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason) as raised:
        Passphrase(text)
    assert text not in str(raised.value)


def test_a_raw_psk_is_taken_as_is() -> None:
    raw = "A" * 64
    passphrase = Passphrase(raw)
    assert passphrase.is_raw_psk and passphrase.psk(b"any") == "a" * 64


def test_passphrase_never_shows_in_repr_or_str() -> None:
    secret = Passphrase("hunter2-hunter2")
    assert "hunter2" not in repr(secret) and "hunter2" not in str(secret)
    assert "hunter2" not in repr([secret, {"p": secret}])
    assert secret.reveal() == "hunter2-hunter2"


def test_passphrase_file_takes_one_line(tmp_path: Path) -> None:
    path = tmp_path / "pass"
    path.write_text("correct horse battery\n")
    assert read_passphrase_file(str(path)).reveal() == "correct horse battery"
    path.write_text("one line\nanother\n")
    with pytest.raises(ValidationError, match="more than one line"):
        read_passphrase_file(str(path))
    assert read_passphrase_file("-", "from stdin\r\n").reveal() == "from stdin"
    with pytest.raises(ValidationError, match="no such file"):
        read_passphrase_file(str(tmp_path / "missing"))


def test_ssid_limits() -> None:
    assert from_user("home-wpa2") == b"home-wpa2"
    assert from_user("é" * 16) == "é".encode() * 16
    with pytest.raises(ValidationError, match="is 34 bytes long; 802.11 allows at most 32"):
        from_user("é" * 17)
    with pytest.raises(ValidationError, match="empty"):
        from_user("")


def test_display_escapes_what_could_garble_a_terminal() -> None:
    assert display(b"caf\xc3\xa9") == "café"
    assert display(b"\x1b[31mred\n") == "\\x1b[31mred\\x0a"
    assert display(b"a\\x41") == "a\\\\x41"
    assert display(b"\xff\xfe") == "\\xff\\xfe"


@given(st.binary(max_size=32))
def test_display_is_printable_and_one_line(ssid: bytes) -> None:
    shown = display(ssid)
    assert shown.isprintable() or shown == ""
    assert "\n" not in shown and "\x1b" not in shown


@given(st.binary(min_size=1, max_size=32), st.binary(min_size=1, max_size=32))
def test_display_tells_different_ssids_apart(first: bytes, second: bytes) -> None:
    if first != second:
        assert display(first) != display(second)
