"""A UAPI socket that misbehaves must not hang or sink `zsn --export` (issue 10, item 1).

Real wireguard-go interfaces next to a socket that trickles a byte a second and one
that floods garbage, in a private /run/wireguard (`tests.lab.isolated`), so no one
else's export sees them.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.integration.conftest import WgPair
from tests.lab.isolated import run_isolated
from zsn.wireguard import uapi

pytestmark = pytest.mark.lab

MEMORY_BOUND = 200 * 1024 * 1024


def test_export_reports_hostile_sockets_and_still_the_real_interfaces(
        wg_pair: WgPair) -> None:
    trickle, flood = wg_pair.lab.name("tr"), wg_pair.lab.name("fl")
    result = run_isolated([sys.executable, "-m", "zsn", "--export", "wireguard"],
                          keep=list(wg_pair.sockets),
                          hostile={trickle: "trickle", flood: "flood"})
    # Each hostile socket costs at most one read deadline; the rest is start-up.
    assert result.seconds < 2 * uapi.DEFAULT_TIMEOUT + 15, result
    assert result.returncode == 3, result.stderr  # partial
    assert result.max_rss_bytes < MEMORY_BOUND, f"{result.max_rss_bytes / 2**20:.0f} MiB"
    section = json.loads(result.stdout)["wireguard"]
    errors = section["errors"]
    assert any(e.startswith(f"{trickle}: ") and "no complete answer within" in e
               for e in errors), errors
    assert any(e.startswith(f"{flood}: ") and "larger than" in e for e in errors), errors
    found = {i["name"]: i for i in section["interfaces"]}
    for name, other_key in zip(wg_pair.ifnames, reversed(wg_pair.public_keys), strict=True):
        assert [p["public_key"] for p in found[name]["peers"]] == [other_key]
    assert found[trickle]["peers"] == [] and found[flood]["peers"] == []
    assert trickle in result.stderr and flood in result.stderr
