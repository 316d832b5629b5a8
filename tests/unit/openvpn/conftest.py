from __future__ import annotations

from pathlib import Path

import pytest

from zsn.system.host import Host

OVPN_FIXTURES = Path(__file__).parents[2] / "fixtures" / "openvpn"


@pytest.fixture
def ovpn_fixtures() -> Path:
    return OVPN_FIXTURES


@pytest.fixture
def root(tmp_path: Path) -> Host:
    """An empty system tree with Debian's OpenVPN folders."""
    for sub in ("client", "server"):
        (tmp_path / "etc/openvpn" / sub).mkdir(parents=True)
    return Host(tmp_path)
