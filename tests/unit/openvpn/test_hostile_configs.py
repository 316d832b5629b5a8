"""OpenVPN configs zsn did not write, read as data (issue 10, items 2 and 10): names
that come from file names, and everything a profile runs or reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.cli import main
from zsn.openvpn import lint
from zsn.system.host import Host


def vpn(root: Host, *args: str) -> int:
    return main(["--root", str(root.root), "vpn", *args])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# -- item 10: a config's name comes from its file name ---------------------------

@pytest.mark.parametrize("action", [["management"], ["hook", "install"], ["start"],
                                    ["enable"]])
def test_actions_on_a_config_whose_file_name_is_no_usable_name_are_refused(
        root: Host, action: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    root.path("/etc/openvpn/client/off\nice.conf").write_text("client\nremote 192.0.2.1\n")
    before = _tree(root.root)
    assert vpn(root, *action, "off\nice", "--dry-run") == 2
    [line] = capsys.readouterr().err.splitlines()[-1:]
    assert "not a usable connection name" in line
    assert _tree(root.root) == before


def test_lint_flags_a_config_whose_file_name_is_no_usable_name(root: Host) -> None:
    root.path("/etc/openvpn/client/off ice.conf").write_text("client\nremote 192.0.2.1\n")
    [finding] = [f for f in lint.lint(root) if f.id == "OVPN010"]
    assert "'off ice'" in finding.message
    assert "OVPN010" in lint.RULES
