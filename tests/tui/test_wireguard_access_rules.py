"""The WireGuard pane's access-rules view (`P`): rules in order with the kernel's
counters, the default, tests and their state; keys that add, move and delete rules,
explain a pair and set a peer's groups, at 80x24, by keys only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.fixtures.wireguard.acl.capture import INTERFACE, policy_and_peers
from tests.pilot import row_texts, screen_as, wait_for_rows, wait_until
from tests.tui.captured import CAPTURED_HANDSHAKE, fixed_snapshot
from tests.tui.conftest import SnapCompare
from zsn.system import nftables
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.screens.ask import AskScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard import acl_table, policy
from zsn.wireguard.acl_view import PolicyView, TestState, view_dict

CAPTURED = Path(__file__).parents[1] / "fixtures" / "wireguard" / "acl"


def captured_rules() -> dict[str, Any]:
    """The policy the captured table holds, with the counters nft really listed."""
    read, peers = policy_and_peers()
    listing = (CAPTURED / "nft-list-table.nftables-1.0.6.counted.json").read_text()
    live = acl_table.decode(nftables.decode(listing, "fixture"), INTERFACE)
    tests = tuple(TestState(test, policy.run_test(read, peers, test, number))
                  for number, test in enumerate(read.tests, start=1))
    return view_dict(PolicyView(read, True, live, None, tests, {}))


@pytest.fixture
def rules_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, names: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.record_history",
                        lambda recorder, snapshot: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_access_rules",
                        lambda host, interface: captured_rules())
    return ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)


async def show_rules(pilot: Pilot[Any]) -> None:
    await wait_for_rows(pilot)
    await pilot.press("P")
    rules = pilot.app.query_one("#wg-rules", LiveTable)
    await wait_until(pilot, lambda: rules.row_count == 6, "the rules")


def test_snapshot_access_rules_80x24(snap_compare: SnapCompare, rules_app: ZsnApp) -> None:
    assert snap_compare(rules_app, terminal_size=(80, 24), run_before=show_rules)


async def test_the_view_shows_rules_in_order_with_counters_then_the_default(
        rules_app: ZsnApp) -> None:
    async with rules_app.run_test(size=(120, 40)) as pilot:
        await show_rules(pilot)
        rows = row_texts(rules_app.query_one("#wg-rules", LiveTable))
        assert rows[1][:6] == ["2", "deny", "kids", "10.56.0.2", "445/tcp", "1"]
        assert rows[2][:6] == ["3", "allow", "kids", "any", "any", "4"]
        assert rows[-1][:3] == ["-", "deny", "(the default)"]
        tests = row_texts(rules_app.query_one("#wg-tests", LiveTable))
        assert tests == [["1", "kids -> 10.56.0.2:445/tcp deny", "pass"]]
        assert not rules_app.query_one("#wg-peers", LiveTable).display
        await pilot.press("P")
        await wait_until(pilot, lambda: rules_app.query_one("#wg-peers", LiveTable).display,
                         "the peers again")


async def _plan_applied(pilot: Pilot[Any], title: str) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, PlanScreen), "the plan")
    assert title in screen_as(pilot.app, PlanScreen).plan_title
    await pilot.press("y")
    await wait_until(pilot, lambda: not isinstance(pilot.app.screen, PlanScreen), "applied")


async def test_rules_are_added_moved_and_deleted_by_keys(tree_app: ZsnApp, root: Path) -> None:
    policy_file = root / "etc/wireguard/acl/zcapwg1.acl"

    def rules() -> list[str]:
        if not policy_file.exists():
            return []
        return [str(rule) for rule in policy.parse(policy_file.read_text(), "zcapwg1",
                                                   "f").rules]

    async with tree_app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("P", "R")
        await wait_until(pilot, lambda: isinstance(tree_app.screen, AskScreen), "the form")
        await pilot.press(*"deny any -> bob-site 445/tcp", "enter")
        await _plan_applied(pilot, "add 'deny any -> bob-site 445/tcp'")
        await wait_until(pilot, lambda: rules() == ["deny any -> bob-site 445/tcp"], "rule 1")
        table = tree_app.query_one("#wg-rules", LiveTable)
        await wait_until(pilot, lambda: table.row_count == 2, "the rule shown")
        await pilot.press("home", "R")  # rule 1 highlighted: the new one goes before it
        await wait_until(pilot, lambda: isinstance(tree_app.screen, AskScreen), "the form")
        await pilot.press(*"allow alice-laptop -> any", "enter")
        await _plan_applied(pilot, "as rule 1")
        await wait_until(pilot, lambda: rules()[:1] == ["allow alice-laptop -> any"], "placed")
        await wait_until(pilot, lambda: table.row_count == 3, "both shown")
        await pilot.press("home", "right_square_bracket")
        await _plan_applied(pilot, "move rule 1 to 2")
        await wait_until(pilot, lambda: rules() == ["deny any -> bob-site 445/tcp",
                                                    "allow alice-laptop -> any"], "moved")
        await pilot.press("home", "d")
        await _plan_applied(pilot, "remove rule 1")
        await wait_until(pilot, lambda: rules() == ["allow alice-laptop -> any"], "deleted")


async def test_a_peers_groups_are_set_in_one_plan_and_shown(tree_app: ZsnApp,
                                                            root: Path) -> None:
    async with tree_app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("g")
        await wait_until(pilot, lambda: isinstance(tree_app.screen, AskScreen), "the form")
        await pilot.press(*"kids, laptops", "enter")
        await _plan_applied(pilot, "alice-laptop on zcapwg1: in kids, laptops")
    text = (root / "etc/wireguard/acl/zcapwg1.acl").read_text()
    assert "Group = kids: alice-laptop\n" in text and "Group = laptops: alice-laptop\n" in text
