"""The domain contract, typed: every domain's faces are checked against the Protocols
of `zsn.domains` by mypy (this module's assignments: a module that lacks a face, or
has one with another signature, is a type error), and here at run time against the
registry, so a new domain is added to these tables."""

from __future__ import annotations

from zsn import domains
from zsn.desired import cli as desired_cli
from zsn.domains import CommandFace, DesiredFace, ExportFace, LintFace, LiveReader
from zsn.links import cli as links_cli
from zsn.links import desired as links_desired
from zsn.links import export as links_export
from zsn.links import lint as links_lint
from zsn.openvpn import cli as openvpn_cli
from zsn.openvpn import export as openvpn_export
from zsn.openvpn import lint as openvpn_lint
from zsn.tries import cli as tries_cli
from zsn.wireguard import cli as wireguard_cli
from zsn.wireguard import desired as wireguard_desired
from zsn.wireguard import export as wireguard_export
from zsn.wireguard import lint as wireguard_lint
from zsn.wireguard import live as wireguard_live
from zsn.wlan import cli as wlan_cli
from zsn.wlan import export as wlan_export
from zsn.wlan import lint as wlan_lint
from zsn.zfs import cli as zfs_cli
from zsn.zfs import desired as zfs_desired
from zsn.zfs import export as zfs_export
from zsn.zfs import lint as zfs_lint

EXPORTS: dict[str, ExportFace] = {
    "wireguard": wireguard_export, "openvpn": openvpn_export, "zfs": zfs_export,
    "wlan": wlan_export, "links": links_export,
}
LINTS: dict[str, LintFace] = {
    "wireguard": wireguard_lint, "openvpn": openvpn_lint, "zfs": zfs_lint,
    "wlan": wlan_lint, "links": links_lint,
}
COMMANDS: dict[str, CommandFace] = {
    "peer": wireguard_cli.peer, "wg": wireguard_cli.wg, "vpn": openvpn_cli,
    "zfs": zfs_cli, "wifi": wlan_cli, "link": links_cli,
    # No domain's: the changes made with --try (zsn.domains.CHANGE_GROUPS).
    "confirm": tries_cli.confirm, "pending": tries_cli.pending, "rollback": tries_cli.rollback,
    # No domain's either: the desired state spans them (zsn.domains.DESIRED_GROUPS).
    "apply": desired_cli.apply, "state": desired_cli.state,
}
DESIRED: dict[str, DesiredFace] = {"wireguard": wireguard_desired, "links": links_desired,
                                   "zfs": zfs_desired}
LIVE: dict[str, LiveReader] = {"wireguard": wireguard_live.read_wireguard}


def test_the_tables_are_the_registry() -> None:
    registered = domains.domains()
    for each in registered:
        assert domains.export_face(each) is EXPORTS[each.name]
        assert domains.lint_face(each) is LINTS[each.name]
        assert domains.live_reader(each) is LIVE.get(each.name)
        assert domains.desired_face(each) is DESIRED.get(each.name)
    assert set(EXPORTS) == set(LINTS) == {each.name for each in registered}
    groups = domains.command_groups()
    assert set(COMMANDS) == set(groups)
    for name, group in groups.items():
        assert domains.command_face(group) is COMMANDS[name]
