"""SSIDs: up to 32 arbitrary bytes, shown safely, parsed from user input and daemons.

An SSID is bytes on the air. Most are UTF-8, but nothing requires it, and a name may
hold control characters meant to garble a terminal. zsn keeps SSIDs as `bytes`,
shows them through `display` (UTF-8 where valid, ``\\xNN`` for anything else or
unprintable), and reads user input with `from_user`.
"""

from __future__ import annotations

import os

from zsn.errors import ValidationError
from zsn.terminal import safe

MAX_SSID_BYTES = 32


def from_user(text: str) -> bytes:
    """An SSID typed by a user (argv, a form), checked: 1 to 32 bytes once encoded.

    `os.fsencode` gives back the exact bytes of an argv word that is not UTF-8.
    """
    raw = os.fsencode(text)
    validate(raw)
    return raw


def validate(ssid: bytes) -> None:
    if not ssid:
        raise ValidationError("the SSID is empty")
    if len(ssid) > MAX_SSID_BYTES:
        raise ValidationError(
            f"the SSID {display(ssid[:MAX_SSID_BYTES])}… is {len(ssid)} bytes long; "
            f"802.11 allows at most {MAX_SSID_BYTES}")


def display(ssid: bytes) -> str:
    """The SSID for a screen, a log line or JSON: its bytes as `zsn.terminal.safe`
    shows them (UTF-8 text, invalid bytes and controls as ``\\xNN``) with its
    backslashes doubled first, so it never moves the cursor, forges another line or
    reads as another name."""
    return safe(ssid.decode("utf-8", errors="surrogateescape").replace("\\", "\\\\"))


def hex_ssid(ssid: bytes) -> str:
    """Lowercase hex: how iwd names object paths and files, and how wpa_supplicant
    takes any SSID without quoting."""
    return ssid.hex()
