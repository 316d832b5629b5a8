"""WireGuard keys: Curve25519, 32 bytes, base64 (44 characters) in configs and `wg`, hex on UAPI."""

from __future__ import annotations

import base64
import binascii
import os
import re
from typing import NamedTuple

from zsn.errors import ValidationError

KEY_LENGTH = 32
_BASE64_KEY_RE = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=")


def is_valid_key(text: str) -> bool:
    """True when `text` is a base64 WireGuard key as `wg` accepts it (32 bytes, canonical)."""
    return bool(_BASE64_KEY_RE.fullmatch(text))


def check_key(text: str, what: str = "key") -> str:
    """`text` stripped, or a `ValidationError` saying exactly what is wrong with it."""
    key = text.strip()
    if not key:
        raise ValidationError(f"{what} is empty")
    if len(key) != 44:
        raise ValidationError(f"{what} must be 44 base64 characters, got {len(key)}")
    if not is_valid_key(key):
        raise ValidationError(f"{what} is not a valid base64 WireGuard key")
    return key


def hex_to_base64(hex_key: str) -> str:
    # binascii directly: this runs twice per peer on every poll of a big server.
    return binascii.b2a_base64(bytes.fromhex(hex_key), newline=False).decode("ascii")


def base64_to_hex(key: str) -> str:
    try:
        raw = base64.b64decode(key, validate=True)
    except binascii.Error as exc:
        raise ValidationError("key is not valid base64") from exc
    if len(raw) != KEY_LENGTH:
        raise ValidationError(f"key must decode to {KEY_LENGTH} bytes, got {len(raw)}")
    return raw.hex()


def _clamp(raw: bytearray) -> bytearray:
    # Curve25519 scalar clamping, exactly as `wg genkey` does it.
    raw[0] &= 248
    raw[31] = (raw[31] & 127) | 64
    return raw


def public_key_from_private(private_key: str) -> str:
    """The X25519 public key of a base64 private key, as `wg pubkey` computes it."""
    # wg clamps before use; cryptography clamps too, but be explicit so the result
    # never depends on a library detail.
    raw = _clamp(bytearray(base64.b64decode(check_key(private_key, "private key"))))
    return base64.b64encode(_x25519_public(bytes(raw))).decode("ascii")


def _x25519_public(private: bytes) -> bytes:
    try:
        # The Rust binding cryptography's X25519PrivateKey wraps. The public module
        # also loads the OpenSSL backend (ciphers, RSA, EC) only to ask whether
        # X25519 is supported: ~8 ms, more than a cold `zsn --export` spends
        # deriving an interface's public key.
        from cryptography.hazmat.bindings._rust import openssl

        key = openssl.x25519.from_private_bytes(private)
    except (ImportError, AttributeError):  # a cryptography that moved it
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        return X25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()
    return key.public_key().public_bytes_raw()


def generate_private_key() -> str:
    """A new private key, as `wg genkey` makes it: 32 random bytes, clamped, base64."""
    return base64.b64encode(bytes(_clamp(bytearray(os.urandom(KEY_LENGTH))))).decode("ascii")


def generate_preshared_key() -> str:
    """A new preshared key, as `wg genpsk` makes it: 32 random bytes, base64."""
    return base64.b64encode(os.urandom(KEY_LENGTH)).decode("ascii")


class KeyPair(NamedTuple):
    """A private key and its public key, base64."""

    private_key: str
    """A secret: never logged, exported or shown in notifications."""
    public_key: str

    def __repr__(self) -> str:
        return f"KeyPair(public_key={self.public_key!r}, private_key=<hidden>)"

    @classmethod
    def generate(cls) -> KeyPair:
        private = generate_private_key()
        return cls(private, public_key_from_private(private))
