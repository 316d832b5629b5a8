"""Every headless command that changes live networking can be tried (issue 19): the
ones the issue names take ``--try SECONDS`` and ``--confirm-ssh-link`` besides
``--dry-run``, and a command that only writes files or reads takes no ``--try``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from zsn import cli, domains

LIVE_CHANGES = {
    "link create bond", "link create vlan", "link create bridge", "link set",
    "link add-member", "link remove-member", "link delete", "link 8021x",
    "wg up", "wg down", "wg gateway", "wg link", "wg clients",
    "peer add", "peer remove", "peer disable", "peer enable", "peer routes",
    "wifi connect", "wifi disconnect",
    "vpn start", "vpn stop", "vpn restart",
    "wg acl group add", "wg acl group remove", "wg acl rule add", "wg acl rule remove",
    "wg acl rule move", "wg acl default", "wg acl load", "wg acl test",
    "apply",
}
"""What issue 19 lists: links, WireGuard (addresses, routes, firewall state, peers'
allowed IPs), Wi-Fi associations and OpenVPN units; the WireGuard access rules
(issue 35: the kernel's nftables table; ``wg acl test`` adds and removes tests too); and
a wired port's 802.1X (issue 36), which can take the port off the network; ``zsn apply``
(issue 39), a whole desired-state file as one plan."""


def _commands(parser: argparse.ArgumentParser,
              words: list[str]) -> Iterator[tuple[str, set[str]]]:
    subparsers = [action for action in parser._actions  # argparse lists them no other way
                  if isinstance(action, argparse._SubParsersAction)]
    if not subparsers:
        yield " ".join(words), {flag for action in parser._actions
                                for flag in action.option_strings}
    for action in subparsers:
        for name, child in action.choices.items():
            yield from _commands(child, [*words, name])


def every_command() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name, group in domains.command_groups().items():
        parser = cli.group_parser(group, domains.command_face(group))
        found.update(_commands(parser, [name]))
    return found


def test_every_live_network_change_can_be_tried() -> None:
    commands = every_command()
    assert set(commands) >= LIVE_CHANGES
    for command in sorted(LIVE_CHANGES):
        assert {"--try", "--confirm-ssh-link", "--dry-run"} <= commands[command], command


def test_only_live_changes_take_try() -> None:
    tried = {command for command, flags in every_command().items() if "--try" in flags}
    assert tried == LIVE_CHANGES
