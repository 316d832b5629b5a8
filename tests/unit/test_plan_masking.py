"""Secrets never reach a plan's diff, whichever way the file writes them."""

from __future__ import annotations

import pytest

from zsn.plan import mask_secrets


@pytest.mark.parametrize("opening", ["<key>", "<key>  ", "<KEY>\t", "<auth-user-pass>",
                                     "<http-proxy-user-pass>", "<tls-crypt-v2>"])
def test_inline_secret_blocks_are_hidden(opening: str) -> None:
    tag = opening.strip().strip("<>")
    text = f"client\n{opening}\nhunter2-secret\nsecond line\n  </{tag}>\n<ca>\nPUBLIC\n</ca>\n"
    masked = mask_secrets(text)
    assert "hunter2-secret" not in masked and "second line" not in masked
    assert f"  </{tag}>" in masked, "the closing line keeps its indentation"
    assert "PUBLIC" in masked


def test_wireguard_key_lines_are_hidden_even_when_disabled() -> None:
    # Files are masked before they are diffed, so lines have no diff prefix here.
    text = ("PrivateKey = 0EERySwwME/UXHGdbYYo2lZbGszSZV83hLjwWXQQYEI=\n"
            "#[disabled] PresharedKey=7GLHKJg7uk7yzrPNjvkVbgkn3j3OegRccK4wkseN0Rk=\n")
    masked = mask_secrets(text)
    assert "0EERyS" not in masked and "7GLHKJ" not in masked
