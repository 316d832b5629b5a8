"""Input checks: names, VLAN ids, MTUs, lists; each refusal says what is wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zsn.errors import ValidationError
from zsn.links import validate


@pytest.mark.parametrize(("name", "reason"), [
    ("", "empty"), ("bond0.toolongnam", "16 bytes"), ("a/b", "'/'"), ("a:b", "':'"),
    ("a b", "whitespace"), (".", "not allowed"), ("..", "not allowed"),
    ("ééééééééé", "18 bytes"),
])
def test_bad_names_are_refused_with_the_reason(name: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        validate.interface_name(name)


def test_good_names_pass() -> None:
    for name in ("bond0", "bond0.10", "br-lan", "eth1x", "a" * 15):
        assert validate.interface_name(name) == name


def test_vlan_ids_mtu_and_lists() -> None:
    assert validate.vlan_id(1) == 1 and validate.vlan_id(4094) == 4094
    for bad in (0, 4095, -1):
        with pytest.raises(ValidationError, match="outside 1-4094"):
            validate.vlan_id(bad)
    with pytest.raises(ValidationError, match="outside 68-65535"):
        validate.mtu(67)
    assert validate.name_list("eth1,eth2", "members") == ["eth1", "eth2"]
    with pytest.raises(ValidationError, match="named twice"):
        validate.name_list("eth1,eth1", "members")
    with pytest.raises(ValidationError, match="empty name"):
        validate.name_list("eth1,", "members")
    with pytest.raises(ValidationError, match="bond mode 'lacp'"):
        validate.bond_mode("lacp")
    assert validate.whole_number("9000") == 9000
    assert validate.whole_number("") is None
    for typo in ("9k", " 9000", "-1", "1234567"):
        with pytest.raises(ValidationError, match="not a whole number"):
            validate.whole_number(typo)


@given(st.text(max_size=20))
def test_any_name_is_accepted_or_refused_with_a_validation_error(name: str) -> None:
    try:
        validate.interface_name(name)
    except ValidationError:
        return
    assert 0 < len(name.encode()) < 16 and "/" not in name and ":" not in name
    assert not any(char.isspace() for char in name)
