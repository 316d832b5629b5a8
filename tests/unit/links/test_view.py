"""The pane's table as data: cells for the captured links, columns dropped whole."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.links.conftest import captured_snapshot
from zsn.links.model import Rates
from zsn.links.view import COLUMNS, table_rows, visible_columns


def test_cells_show_mode_partner_member_and_vlan() -> None:
    snapshot = captured_snapshot(".member-down")
    rows = table_rows(snapshot)
    assert rows["ab0"]["detail"].text == "active-backup (eth7x)"
    assert rows["adnp"]["detail"].text == "802.3ad no partner"
    assert rows["adnp"]["detail"].style == "text-error"
    assert rows["eth2x"]["detail"].text == "mii down 1×"
    assert rows["eth2x"]["state"] == ("down", "text-error")
    assert rows["eth7x"]["detail"].text == "mii up"
    assert rows["rr0.10"]["detail"].text == "vlan 10"
    assert rows["rr0.10"]["name"].text == "└ rr0.10"
    assert rows["vethbr"]["detail"] == ("listening", "text-warning")
    assert rows["rr0"]["rx"].text == "-"  # no second reading yet
    assert list(rows)[:3] == ["lo", "rr0", "eth1x"]


def test_rates_and_trend() -> None:
    snapshot = captured_snapshot()
    busy = Rates(1536.0, 100.0, 12.0, 3.0, 0.0, 2.0)
    snapshot = replace(snapshot, rates={"rr0": busy},
                       history={"rr0": (0.0, 800.0, 1636.0)})
    row = table_rows(snapshot)["rr0"]
    assert (row["rx"].text, row["tx"].text) == ("1.5 KiB/s", "100 B/s")
    assert row["packets"].text == "12/3"
    assert row["faults"] == ("0/2", "text-error")
    assert row["trend"].text == "     ▁▄█"


def test_an_idle_link_draws_no_trend() -> None:
    snapshot = replace(captured_snapshot(), history={"rr0": (0.0, 0.0, 0.0)})
    assert table_rows(snapshot)["rr0"]["trend"].text == ""


def test_narrow_screens_drop_whole_columns_by_priority() -> None:
    rows = table_rows(captured_snapshot())
    wide = visible_columns(rows, 200)
    assert [c.key for c in wide] == [c.key for c in COLUMNS]
    # No rates yet ("-"): the detail fits at 80 columns, the kind does not.
    assert [c.key for c in visible_columns(rows, 76)] == ["name", "state", "mtu", "rx", "tx",
                                                         "detail"]
    assert [c.key for c in visible_columns(rows, 30)] == ["name", "state"]
