"""One request per link action: the pane's forms and the CLI's options are read into the
same `LinkRequest` by one function, so a value and a refusal read the same in both."""

from __future__ import annotations

import argparse

import pytest

from zsn.errors import ValidationError
from zsn.links import actions
from zsn.links.cli import add_arguments, request_from_args


def _from_command_line(argv: list[str]) -> actions.LinkRequest:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return request_from_args(parser.parse_args(argv))


@pytest.mark.parametrize(("argv", "form", "request_"), [
    (["create", "bond", "bond9", "--mode", "802.3ad", "--members", "eth1,eth2", "--miimon",
      "200", "--lacp-rate", "fast", "--mtu", "9000"],
     ("bond", {"name": "bond9", "mode": "802.3ad", "members": "eth1,eth2", "miimon": "200",
               "xmit_hash_policy": "", "lacp_rate": "fast", "mtu": "9000"}),
     actions.CreateBond("bond9", "802.3ad", ("eth1", "eth2"), 200, None, "fast", 9000)),
    (["create", "vlan", "bond9.10", "--parent", "bond9", "--id", "10"],
     ("vlan", {"vlan_id": "10", "parent": "bond9", "name": "", "mtu": ""}),
     actions.CreateVlan("bond9.10", "bond9", 10)),
    (["create", "bridge", "br0", "--ports", "eth3", "--stp"],
     ("bridge", {"name": "br0", "ports": "eth3", "stp": "yes", "mtu": ""}),
     actions.CreateBridge("br0", ("eth3",), True)),
    (["set", "bond9", "--mtu", "1500"], ("set", {"name": "bond9", "mtu": "1500"}),
     actions.SetMtu("bond9", 1500)),
    (["add-member", "br0", "eth4"], ("add-member", {"master": "br0", "member": "eth4"}),
     actions.AddMember("br0", "eth4")),
])
def test_the_form_and_the_command_line_make_the_same_request(
        argv: list[str], form: tuple[str, dict[str, str]],
        request_: actions.LinkRequest) -> None:
    from_cli = _from_command_line(argv)
    from_form = actions.request_from_fields(*form)
    assert from_cli == from_form == request_
    assert type(from_cli) is type(from_form) is type(request_)


@pytest.mark.parametrize(("action", "fields", "field", "reason"), [
    ("vlan", {"vlan_id": "ten", "parent": "rr0"}, "vlan_id", "not a whole number: 'ten'"),
    ("vlan", {"parent": "rr0"}, "vlan_id", "a VLAN needs an id"),
    ("bond", {"name": "b", "members": "eth1,,eth2"}, "members", "empty name"),
    ("bond", {"name": "b", "members": "eth1", "mtu": " 9000"}, "mtu", "not a whole number"),
    ("bridge", {"name": "br0", "stp": "maybe"}, "stp", "say yes or no"),
    ("set", {"name": "rr0"}, "mtu", "type the new MTU"),
])
def test_a_refusal_names_the_field_both_faces_show(action: str, fields: dict[str, str],
                                                   field: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason) as refused:
        actions.request_from_fields(action, fields)
    assert refused.value.field == field


def test_every_verb_that_changes_links_has_a_request() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    # 802.1X on a port is an EapRequest (zsn.eap), shared with zsn wifi connect.
    changing = set(verbs.choices) - {"list", "show", "lint", "create", "8021x"}
    assert changing | {"bond", "vlan", "bridge"} == set(actions.ACTIONS)
