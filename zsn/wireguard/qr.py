"""What a WireGuard client config's QR code carries (drawn by `zsn.qr`)."""

from __future__ import annotations


def qr_payload(config_text: str) -> str:
    """The config without comments and blank lines: the smaller the payload, the
    bigger each module on screen."""
    kept = [line.strip() for line in config_text.splitlines()
            if line.strip() and not line.strip().startswith("#")]
    return "\n".join(kept) + "\n"
