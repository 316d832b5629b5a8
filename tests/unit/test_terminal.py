"""`zsn.terminal.safe`: outside text can never drive the terminal it is shown on."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zsn.system.commands import CommandResult
from zsn.terminal import one_line, safe, safe_bytes, safe_text
from zsn.wlan.ssid import display

# Sequences seen in attacks on terminal emulators and in the issue that asked for this.
ATTACKS = [
    ("\x1b]52;c;aGVsbG8=\x07", "\\x1b]52;c;aGVsbG8=\\x07"),  # OSC 52: sets the clipboard
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clears the screen, cursor home
    ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",  # a hyperlink hiding its target
     "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"),
    ("\x1b]0;title", "\\x1b]0;title"),  # an OSC left open swallows what follows
    ("\x9b2J", "\\x9b2J"),  # C1 CSI: the same on terminals taking 8-bit controls
    ("\x9d52;c;x\x9c", "\\x9d52;c;x\\x9c"),  # C1 OSC and ST
    ("pool\x7f\x08\x08", "pool\\x7f\\x08\\x08"),  # DEL and backspaces rub text out
    ("tank\r\nfake line", "tank\\x0d\\x0afake line"),  # forges a line of output
    ("tab\there", "tab\\x09here"),
    ("\u202egnp.exe", "\\u202egnp.exe"),  # right-to-left override
    ("a\u2066b\u2069c\u202ad\u202ce", "a\\u2066b\\u2069c\\u202ad\\u202ce"),  # isolates
    ("wg\u200b0", "wg\\u200b0"),  # zero-width space: looks like wg0
    ("x\u200ey\u061cz", "x\\u200ey\\u061cz"),  # LRM and Arabic letter mark
    ("\ufeffeth0", "\\ufeffeth0"),  # BOM
    ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
    ("nb\u00a0sp", "nb\\xa0sp"),  # a no-break space looks like a space
    ("\U000e0041tag", "\\U000e0041tag"),  # tag characters hide text
    ("\u3164", "\\u3164"),  # Hangul filler: a "letter" drawn as nothing
    ("bad\udcffbyte", "bad\\xffbyte"),  # a byte that was not UTF-8 (surrogateescape)
    ("lone\ud800", "lone\\ud800"),
    ("\x00", "\\x00"),
]


@pytest.mark.parametrize("text, shown", ATTACKS)
def test_controls_become_visible_escapes(text: str, shown: str) -> None:
    assert safe(text) == shown


@pytest.mark.parametrize("text", [
    "", "wg0", "tank/home@daily-2024-01-01", "/dev/disk/by-id/ata-WDC_WD40-part1",
    "café ☕", "日本語のプール", "mirror-0", "a b", "back\\slash", "\\x1b is already safe",
    "👩💻", "Ünïcödé", "[bold]markup[/]",
])
def test_printable_text_is_left_alone(text: str) -> None:
    assert safe(text) == text


def _dangerous(char: str) -> bool:
    return (unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
            or (unicodedata.category(char) == "Zs" and char != " "))


@settings(max_examples=2000)
@given(st.text(alphabet=st.characters(codec=None)))
@example("\x1b]52;c;x\x07")
def test_nothing_dangerous_comes_out_and_twice_is_once(text: str) -> None:
    shown = safe(text)
    assert not any(_dangerous(char) for char in shown)
    assert shown.isprintable()
    assert safe(shown) == shown
    shown.encode("utf-8")  # a terminal can be sent every character


@settings(max_examples=500)
@given(st.binary())
def test_any_bytes_are_shown_as_safe_text(data: bytes) -> None:
    shown = safe_bytes(data)
    assert shown.isprintable()
    shown.encode("utf-8")
    if b"\\" not in data:
        # The same bytes as an SSID read the same, apart from SSIDs' doubled backslashes.
        assert display(data) == shown


def test_safe_bytes_keeps_utf8_and_escapes_the_rest() -> None:
    assert safe_bytes("café".encode()) == "café"
    assert safe_bytes(b"\xff\x1b[2J") == "\\xff\\x1b[2J"
    assert safe_bytes(b"\xe2\x80\xae") == "\\u202e"  # U+202E, valid UTF-8


def test_ssids_share_the_same_escapes() -> None:
    for text, shown in ATTACKS:
        if "\\" in text or any(0xD800 <= ord(char) < 0xDC80 for char in text):
            continue  # SSIDs double backslashes; bytes never decode to a lone surrogate
        assert display(text.encode("utf-8", errors="surrogateescape")) == shown


def test_text_of_several_lines_keeps_only_its_line_feeds() -> None:
    assert safe_text("a\x1b[2J\nb\r\nc\u2028d") == "a\\x1b[2J\nb\\x0d\nc\\u2028d"
    assert safe_text("plain\ntext") == "plain\ntext"


def test_a_quoted_line_is_the_first_one_escaped_and_capped() -> None:
    assert one_line("\n  \nError: \x1b]52;c;eA==\x07 bad\nsecond line") == \
        "Error: \\x1b]52;c;eA==\\x07 bad"
    long = one_line("x" * 500, limit=20)
    assert len(long) == 20 and long.endswith("…")
    assert one_line(" \n\t\n") == ""


def test_a_program_error_quotes_one_escaped_line() -> None:
    result = CommandResult(("netplan",), 1, "", "\x1b[2J/etc/netplan/x.yaml:1: bad\u202e\nmore",
                           0.1)
    assert result.first_error_line() == "\\x1b[2J/etc/netplan/x.yaml:1: bad\\u202e"
    assert CommandResult(("x",), 3, "", "", 0.1).first_error_line() == "exit status 3"
