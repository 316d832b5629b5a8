"""The pane's rows as data: cells for the captured links, in tree order with depths."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.links.conftest import captured_snapshot
from zsn.links.live import BondDetails
from zsn.links.model import LinksSnapshot, Rates, member_role
from zsn.links.persist import LinkConfig
from zsn.links.text import describe
from zsn.links.view import COLUMNS, TableRows, config_row, rows
from zsn.view import CellValue, cell_text, cells_by_key


def by_key(snapshot: LinksSnapshot) -> dict[str, dict[str, CellValue]]:
    return {row.key: cells_by_key(COLUMNS, row) for row in rows(snapshot)}


def test_cells_show_mode_partner_member_and_vlan() -> None:
    shown = by_key(captured_snapshot(".member-down"))
    assert shown["ab0"]["detail"] == ("active-backup (eth7x)", "", "active-backup")
    assert shown["adnp"]["detail"] == ("802.3ad no partner", "bad", "no partner")
    assert shown["eth2x"]["detail"] == ("mii down 1×", "bad", "mii down")
    assert shown["eth2x"]["state"] == ("down", "bad", None)
    assert cell_text(shown["eth7x"]["detail"]) == "mii up"
    assert cell_text(shown["rr0.10"]["detail"]) == "vlan 10"
    assert shown["vethbr"]["detail"] == ("listening", "warn", None)
    assert cell_text(shown["rr0"]["rx_rate"]) == "-"  # no second reading yet
    assert all(len(row.cells) == len(COLUMNS) for row in rows(captured_snapshot()))


def test_tree_order_and_depth() -> None:
    order = [(row.key, row.depth) for row in rows(captured_snapshot())]
    assert order[:5] == [("lo", 0), ("rr0", 0), ("eth1x", 1), ("eth2x", 1), ("rr0.10", 1)]
    assert ("vethbr-p", 2) in order


def test_rates_and_trend() -> None:
    snapshot = captured_snapshot()
    busy = Rates(1536.0, 100.0, 12.0, 3.0, 0.0, 2.0)
    snapshot = replace(snapshot, rates={"rr0": busy},
                       history={"rr0": (0.0, 800.0, 1636.0), "ad0": (0.0, 0.0)})
    shown = by_key(snapshot)
    cells = shown["rr0"]
    assert (cell_text(cells["rx_rate"]), cell_text(cells["tx_rate"])) == ("1.5 KiB/s", "100 B/s")
    assert cell_text(cells["packets"]) == "12/3"
    assert cells["faults"] == ("0/2", "bad", None)
    assert cell_text(cells["trend"]) == "     ▁▄█"
    assert cell_text(shown["ad0"]["trend"]) == ""  # idle: no line
    rr0 = next(row for row in rows(snapshot) if row.key == "rr0")
    assert rr0.data[1:] == (busy.rx_bytes, busy.tx_bytes)  # what the rate columns order by


def test_addresses_have_a_short_form() -> None:
    shown = by_key(captured_snapshot())
    assert shown["ad0"]["addresses"] == ("10.0.20.1/24 fd00:20::1/64", "",
                                              "10.0.20.1/24 +1")


def test_a_config_only_link() -> None:
    row = config_row(LinkConfig("bond0", "bond", ("eth1", "eth2"), mtu=9000,
                                mode="802.3ad", source="/etc/netplan/01.yaml"))
    cells = cells_by_key(COLUMNS, row)
    assert row.data[0] is None and row.state == "muted"
    assert cells["state"] == ("config", "muted", None)
    assert cells["detail"] == ("802.3ad eth1,eth2", "", "802.3ad")
    assert cells["addresses"] == ("/etc/netplan/01.yaml", "", None)


def test_an_idle_poll_keeps_every_row_object() -> None:
    """Unchanged links keep their row: the table skips them without comparing cells."""
    snapshot = captured_snapshot()
    table = TableRows()
    first = table.rows(snapshot)
    again = table.rows(snapshot)
    assert all(a is b for a, b in zip(first, again, strict=True))
    busy = Rates(1536.0, 100.0, 12.0, 3.0, 0.0, 2.0)
    changed = {row.key for row in table.rows(replace(snapshot, rates={"rr0": busy}))
               if row not in first}
    assert changed == {"rr0"}


def test_a_member_is_active_only_when_its_mii_is_up_and_it_is_in_the_aggregator() -> None:
    """The kernel keeps a down member's slave state "active" (balance-rr, 802.3ad): the
    MII status and the 802.3ad aggregator say whether it carries traffic."""
    down = captured_snapshot(".member-down")
    links = down.by_name()
    assert links["eth2x"].member.state == "active"  # type: ignore[union-attr]
    assert member_role(links["eth2x"].member, links["rr0"].bond) == "down"  # type: ignore[arg-type]
    assert member_role(links["eth4x"].member, links["ad0"].bond) == "down"  # type: ignore[arg-type]
    assert member_role(links["eth7x"].member, links["ab0"].bond) == "active"  # type: ignore[arg-type]
    up = captured_snapshot().by_name()
    assert member_role(up["eth7x"].member, up["ab0"].bond) == "backup"  # type: ignore[arg-type]
    assert by_key(captured_snapshot())["eth7x"]["detail"] == ("mii up backup", "",
                                                                  "mii up backup")
    eth4x = up["eth4x"].member
    assert eth4x is not None and eth4x.aggregator_id == 1
    elsewhere = replace(eth4x, aggregator_id=2)  # a member LACP put in another aggregator
    assert member_role(elsewhere, up["ad0"].bond) == "standby"


def test_the_details_say_a_down_member_carries_no_traffic() -> None:
    snapshot = captured_snapshot(".member-down")
    lines = describe(snapshot.by_name()["rr0"], snapshot, BondDetails({}, ()))
    assert "  member:     eth2x mii down, 1 failure; carries no traffic" in lines
    assert "  member:     eth1x mii up, 0 failures; carries traffic" in lines
