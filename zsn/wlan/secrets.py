"""Wi-Fi secrets: passphrases and pre-shared keys, kept out of reprs, logs and screens.

A `Passphrase` holds what the user typed or piped in; its repr and str say
``(hidden)``, so a traceback, a log line or a test failure never prints it. The
text itself is reached only through `reveal()`, by the code that hands it to a
backend (an agent reply, ``SET_NETWORK psk``, a 0600 profile).

WPA2-Personal turns a passphrase into the 256-bit PSK with PBKDF2-HMAC-SHA1 (4096
rounds, the SSID as salt); where a backend stores a PSK, zsn derives it here so
the passphrase itself need not be stored.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from zsn.eap.request import read_secret_line
from zsn.errors import ValidationError

MIN_PASSPHRASE = 8
MAX_PASSPHRASE = 63
_RAW_PSK_RE = re.compile(r"[0-9a-fA-F]{64}")
_PRINTABLE_ASCII_RE = re.compile(r"[\x20-\x7e]+")


@dataclass(frozen=True)
class Passphrase:
    """A WPA passphrase (8-63 printable ASCII characters) or a raw PSK (64 hex digits)."""

    _text: str = field(repr=False)

    def __post_init__(self) -> None:
        validate_passphrase(self._text)

    def __repr__(self) -> str:
        return "Passphrase((hidden))"

    __str__ = __repr__

    def reveal(self) -> str:
        """The text itself: only for the backend call or file that needs it."""
        return self._text

    @property
    def is_raw_psk(self) -> bool:
        return _RAW_PSK_RE.fullmatch(self._text) is not None

    def psk(self, ssid: bytes) -> str:
        """The 64-hex-digit PSK for `ssid` (the raw PSK itself when that was given)."""
        if self.is_raw_psk:
            return self._text.lower()
        return derive_psk(self._text, ssid)


def validate_passphrase(text: str) -> None:
    """Refuse what no WPA network accepts, naming the reason (never the text)."""
    if _RAW_PSK_RE.fullmatch(text):
        return
    if "\n" in text or "\r" in text:
        raise ValidationError("the passphrase contains a line break (a file read with one "
                              "too many lines?); a passphrase is one line")
    if len(text) < MIN_PASSPHRASE:
        raise ValidationError(f"the passphrase has {len(text)} characters; WPA needs "
                              f"{MIN_PASSPHRASE} to {MAX_PASSPHRASE} (or a 64-hex-digit PSK)")
    if len(text) > MAX_PASSPHRASE:
        hint = " (64 characters but not all hex digits, so not a raw PSK)" \
            if len(text) == 64 else ""
        raise ValidationError(f"the passphrase has {len(text)} characters; WPA allows at most "
                              f"{MAX_PASSPHRASE}{hint}")
    if not _PRINTABLE_ASCII_RE.fullmatch(text):
        raise ValidationError("the passphrase contains characters outside printable ASCII; "
                              "WPA passphrases are ASCII characters 32 to 126")


def derive_psk(passphrase: str, ssid: bytes) -> str:
    """PBKDF2-HMAC-SHA1(passphrase, SSID, 4096 rounds, 32 bytes) as 64 hex digits,
    what `wpa_passphrase` prints."""
    return hashlib.pbkdf2_hmac("sha1", passphrase.encode("ascii"), ssid, 4096, 32).hex()


def read_passphrase_file(path: str, stdin_text: str | None = None) -> Passphrase:
    """The passphrase from a file (``-`` for standard input): its first line."""
    return Passphrase(read_secret_line(path, "passphrase", stdin_text))
