"""Endpoints for a running interface: the kernel and wireguard-go take addresses only."""

from __future__ import annotations

import pytest

from zsn.errors import ZsnError
from zsn.wireguard.device import resolve_endpoint


@pytest.mark.parametrize(("endpoint", "expected"), [
    ("192.0.2.7:51820", ("192.0.2.7", 51820)),
    ("[2001:db8::1]:443", ("2001:db8::1", 443)),
    (" 198.51.100.1:1 ", ("198.51.100.1", 1)),
])
def test_addresses_pass_through(endpoint: str, expected: tuple[str, int]) -> None:
    assert resolve_endpoint(endpoint) == expected


def test_a_hostname_is_resolved_as_wg_does() -> None:
    address, port = resolve_endpoint("localhost:51820")
    assert address in ("127.0.0.1", "::1") and port == 51820


@pytest.mark.parametrize(("endpoint", "message"), [
    ("vpn.example.com", "is not HOST:PORT"),
    ("vpn.example.com:0", "is not HOST:PORT"),
    ("vpn.example.com:65536", "is not HOST:PORT"),
    (":51820", "is not HOST:PORT"),
    ("no-such-host.invalid:51820", "cannot resolve endpoint no-such-host.invalid"),
])
def test_what_cannot_become_an_address_is_a_plain_error(endpoint: str, message: str) -> None:
    with pytest.raises(ZsnError, match=message):
        resolve_endpoint(endpoint)
