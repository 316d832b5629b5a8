"""/proc/net/bonding and sysfs bonding values, on the kernel lab's captures."""

from __future__ import annotations

import pytest

from tests.unit.links.conftest import LINK_FIXTURES
from zsn.errors import ParseError
from zsn.links import bonding


def proc(name: str) -> bonding.ProcBond:
    return bonding.parse_proc_bonding((LINK_FIXTURES / name).read_text(), name)


def test_802_3ad_with_a_partner() -> None:
    bond = proc("proc-net-bonding-ad0.txt")
    assert bond.mode == "IEEE 802.3ad Dynamic link aggregation"
    assert (bond.miimon_ms, bond.lacp_rate, bond.aggregator_id) == (100, "fast", 1)
    assert bond.has_lacp_partner is True
    assert [s.name for s in bond.slaves] == ["eth3x", "eth4x"]
    first = bond.slaves[0]
    assert (first.mii_status, first.speed, first.duplex) == ("up", "10000 Mbps", "full")
    assert first.partner_mac == bond.partner_mac  # from 'details partner lacp pdu'
    assert first.aggregator_id == 1 and first.actor_churn == "monitoring"


def test_802_3ad_without_a_partner_has_an_all_zero_partner_mac() -> None:
    bond = proc("proc-net-bonding-adnp.txt")
    assert bond.partner_mac == "00:00:00:00:00:00"
    assert bond.has_lacp_partner is False
    assert bond.slaves[0].partner_mac == "00:00:00:00:00:00"


def test_active_backup_names_the_active_member_before_and_after_a_failure() -> None:
    assert proc("proc-net-bonding-ab0.txt").active_slave == "eth6x"
    after = proc("proc-net-bonding-ab0.member-down.txt")
    assert after.active_slave == "eth7x"
    down = next(s for s in after.slaves if s.name == "eth6x")
    assert (down.mii_status, down.link_failure_count) == ("down", 1)


@pytest.mark.parametrize("name", ["proc-net-bonding-rr0.txt",
                                  "shared/proc-net-bonding-balance-rr.txt",
                                  "shared/proc-net-bonding-802.3ad.member-down.txt"])
def test_balance_rr_and_shared_captures(name: str) -> None:
    bond = proc(name)
    assert bond.slaves and bond.has_lacp_partner in (None, True)
    assert all(s.permanent_mac for s in bond.slaves)


def test_member_down_in_balance_rr() -> None:
    bond = proc("proc-net-bonding-rr0.member-down.txt")
    eth2x = next(s for s in bond.slaves if s.name == "eth2x")
    assert (eth2x.mii_status, eth2x.link_failure_count) == ("down", 1)
    assert bond.has_lacp_partner is None  # not 802.3ad


def test_sysfs_enums_read_as_name_and_number() -> None:
    lines = (LINK_FIXTURES / "shared/sysfs-bonding-802.3ad.txt").read_text().splitlines()
    values = dict(line.split(": ", 1) for line in lines if ": " in line)
    assert bonding.parse_sysfs_enum(values["mode"]) == ("802.3ad", 4)
    assert bonding.parse_sysfs_enum(values["xmit_hash_policy"]) == ("layer3+4", 1)
    assert bonding.parse_sysfs_enum(values["lacp_rate"]) == ("fast", 1)
    name, number = bonding.parse_sysfs_enum(values["ad_select"])
    assert bonding.AD_SELECT[name] == number
    for table, key in ((bonding.MODES, "mode"), (bonding.XMIT_HASH_POLICIES,
                                                  "xmit_hash_policy")):
        name, number = bonding.parse_sysfs_enum(values[key])
        assert table[name] == number and bonding.name_of(table, number) == name
    with pytest.raises(ParseError):
        bonding.parse_sysfs_enum("balance-rr")
