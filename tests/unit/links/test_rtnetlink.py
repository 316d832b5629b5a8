"""The lean rtnetlink decoder on real kernel answers captured in the kernel lab, checked
against iproute2's JSON of the same moment and against pyroute2's own decoding."""

from __future__ import annotations

import errno
import struct

import pytest

from tests.unit.links.conftest import captured_bytes, ip_json
from zsn.errors import AccessDeniedError, NetlinkAccessDeniedError, NetlinkError
from zsn.system import rtnetlink
from zsn.system.netlink import pyroute2_module


def by_name(records: list[rtnetlink.LinkRecord]) -> dict[str, rtnetlink.LinkRecord]:
    return {record.name: record for record in records}


def test_link_dump_agrees_with_iproute2_json_of_the_same_moment() -> None:
    records = rtnetlink.decode_links(captured_bytes("rtm-getlink.bin"))
    ours = by_name(records)
    theirs = ip_json("ip-d-j-link.json")
    assert [r.name for r in records] == [link["ifname"] for link in theirs]
    index_names = {link["ifindex"]: link["ifname"] for link in theirs}
    for link in theirs:
        record = ours[link["ifname"]]
        assert record.index == link["ifindex"]
        assert record.mtu == link["mtu"]
        assert record.mac == link["address"]
        assert record.operstate == link["operstate"].lower()
        assert record.carrier == ("NO-CARRIER" not in link["flags"])
        assert record.admin_up == ("UP" in link["flags"])
        assert record.min_mtu == link.get("min_mtu") and record.max_mtu == link.get("max_mtu")
        master = {v: k for k, v in index_names.items()}.get(link.get("master", ""))
        assert record.master == master
        info = link.get("linkinfo", {})
        assert record.kind == info.get("info_kind")
        assert record.slave_kind == info.get("info_slave_kind")
        if "link_netnsid" in link:
            assert record.link_netnsid == link["link_netnsid"]
            assert record.link == link["link_index"]


def test_bond_vlan_and_bridge_data_match_iproute2() -> None:
    ours = by_name(rtnetlink.decode_links(captured_bytes("rtm-getlink.bin")))
    theirs = {link["ifname"]: link for link in ip_json("ip-d-j-link.json")}
    ad0 = ours["ad0"].bond
    info = theirs["ad0"]["linkinfo"]["info_data"]
    assert ad0 is not None
    assert (ad0.mode, ad0.miimon, ad0.xmit_hash_policy, ad0.lacp_rate) == (4, 100, 1, 1)
    assert info["mode"] == "802.3ad" and info["xmit_hash_policy"] == "layer3+4"
    assert ad0.partner_mac == info["ad_info"]["partner_mac"] != "00:00:00:00:00:00"
    assert (ad0.aggregator, ad0.num_ports) == (1, 2)
    adnp = ours["adnp"].bond
    assert adnp is not None and adnp.partner_mac == "00:00:00:00:00:00"
    ab0 = ours["ab0"].bond
    assert ab0 is not None and ab0.mode == 1
    assert ab0.active_slave == ours["eth6x"].index
    slave = ours["eth7x"].bond_slave
    assert slave is not None and (slave.state, slave.mii_status) == (1, 0)  # backup, up
    assert ours["eth3x"].bond_slave.aggregator_id == 1  # type: ignore[union-attr]
    vlan = ours["rr0.10"]
    assert vlan.vlan == rtnetlink.VlanData(10, 0x8100) and vlan.link == ours["rr0"].index
    assert ours["br0"].bridge is not None and ours["br0"].bridge.stp_state == 1
    assert ours["vethbr"].bridge_port == rtnetlink.BridgePortData(1)  # listening
    assert theirs["vethbr"]["linkinfo"]["info_slave_data"]["state"] == "listening"


def test_member_down_capture_shows_mii_down_and_a_failure() -> None:
    ours = by_name(rtnetlink.decode_links(captured_bytes("rtm-getlink.member-down.bin")))
    for name in ("eth2x", "eth4x", "eth6x"):
        slave = ours[name].bond_slave
        assert slave is not None and slave.mii_status == 2 and slave.link_failure_count == 1
    assert ours["ab0"].bond.active_slave == ours["eth7x"].index  # type: ignore[union-attr]


def test_decoder_agrees_with_pyroute2_on_the_same_bytes() -> None:
    ifinfmsg = pyroute2_module("netlink.rtnl.ifinfmsg").ifinfmsg
    data = captured_bytes("rtm-getlink.bin")[0]
    ours = rtnetlink.decode_links([data])
    offset = 0
    for record in ours:
        length = struct.unpack_from("=I", data, offset)[0]
        message = ifinfmsg(data[offset:offset + length])
        message.decode()
        assert message["index"] == record.index
        assert message.get("ifname") == record.name
        assert message.get("mtu") == record.mtu
        assert (message.get("master") or None) == record.master
        stats = message.get("stats64")
        assert stats["rx_bytes"] == record.counters.rx_bytes  # type: ignore[union-attr]
        assert stats["tx_packets"] == record.counters.tx_packets  # type: ignore[union-attr]
        assert message.get(("linkinfo", "kind")) == record.kind
        offset += (length + 3) & ~3


def test_addresses_match_iproute2() -> None:
    ours = rtnetlink.decode_addresses(captured_bytes("rtm-getaddr.bin"))
    theirs = [(link["ifindex"], a["local"], a["prefixlen"]) for link in ip_json("ip-j-addr.json")
              for a in link["addr_info"]]
    # The kernel dumps IPv4 first, then IPv6; ip groups them by link.
    assert sorted((a.index, a.address, a.prefixlen) for a in ours) == sorted(theirs)
    assert ("10.0.10.1", 24) in [(a.address, a.prefixlen) for a in ours]


def test_counters_dump_gives_each_link_its_stats64() -> None:
    counters = rtnetlink.decode_all_stats(captured_bytes("rtm-getstats.bin"))
    theirs = {link["ifindex"]: link["stats64"] for link in ip_json("ip-j-s-link.json")}
    assert set(counters) == set(theirs)
    for index, sample in counters.items():
        # ip ran right after the dump: bytes never go down, idle links match exactly.
        assert sample.rx_bytes <= theirs[index]["rx"]["bytes"]
        assert sample.tx_packets <= theirs[index]["tx"]["packets"]
    loopback = counters[1]
    assert loopback == rtnetlink.Counters(0, 0, 0, 0, 0, 0, 0, 0)


def _error_reply(sequence: int, code: int) -> bytes:
    """The kernel's NLMSG_ERROR answer (struct nlmsgerr: -errno, then the request's
    header), as linux/netlink.h lays it out."""
    request = struct.pack("=IHHII", 16, rtnetlink.RTM_GETLINK, 0x301, sequence, 0)
    body = struct.pack("=i", -code) + request
    return struct.pack("=IHHII", 16 + len(body), rtnetlink.NLMSG_ERROR, 0, sequence, 0) + body


def test_an_error_reply_keeps_its_errno_and_says_it_in_words() -> None:
    with pytest.raises(NetlinkError) as missing:
        rtnetlink._check_chunk(_error_reply(7, errno.ENODEV), 7, "reading eth9", dump=False)
    assert missing.value.code == errno.ENODEV
    assert not isinstance(missing.value, AccessDeniedError)
    assert str(missing.value) == "reading eth9: no such network device"
    with pytest.raises(NetlinkAccessDeniedError) as denied:
        rtnetlink._check_chunk(_error_reply(7, errno.EPERM), 7, "reading eth9", dump=False)
    assert denied.value.code == errno.EPERM and isinstance(denied.value, AccessDeniedError)
    assert rtnetlink._check_chunk(_error_reply(7, 0), 7, "ack", dump=False)  # an ack
