"""The Links pane at 80x24 and 120x40, fed with the kernel lab's captured links; every
key driven as a user would."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from tests.pilot import row_texts, screen_as, screen_text, settle, wait_for_rows, wait_until
from tests.tui.conftest import SnapCompare
from tests.unit.links.conftest import LINK_FIXTURES, captured_snapshot
from zsn.links import actions, bonding
from zsn.links.lint import LinksView, lint_links
from zsn.links.live import BondDetails, with_speeds
from zsn.links.model import LinksSnapshot, Rates
from zsn.links.persist import LinkConfig, Owner, Persisted
from zsn.system import netlink
from zsn.system.host import Host
from zsn.tui.app import PaneSwitcher, ZsnApp
from zsn.tui.panes.base import LivePane
from zsn.tui.panes.links import LinksPane
from zsn.tui.screens.ask import AskScreen, ChooseScreen
from zsn.tui.screens.findings import FindingsScreen
from zsn.tui.screens.help import HelpScreen
from zsn.tui.screens.link_form import LinkFormScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.details import DetailsBox
from zsn.tui.widgets.table import LiveTable

TABLE = "#links-table"
OWNER = Owner("netplan", "netplan config found under /")


def fixed_snapshot(suffix: str = "") -> LinksSnapshot:
    """The capture, with traffic on the balance-rr bond and its VLAN."""
    snapshot = captured_snapshot(suffix)
    busy = Rates(118_000_000.0, 2_400_000.0, 81_000.0, 36_000.0, 0.0, 0.0)
    half = Rates(59_000_000.0, 1_200_000.0, 40_500.0, 18_000.0, 0.0, 3.0)
    trend = (20e6, 60e6, 90e6, 120e6, 110e6, 120e6, 119e6, 120.4e6)
    return replace(snapshot, rates={"rr0": busy, "rr0.10": busy, "eth1x": half,
                                    "eth2x": half},
                   history={"rr0": trend, "rr0.10": trend, "eth1x": trend, "eth2x": trend})


def fixed_view(suffix: str = "") -> LinksView:
    details = BondDetails({name: bonding.parse_proc_bonding(
        (LINK_FIXTURES / f"proc-net-bonding-{name}{suffix}.txt").read_text())
        for name in ("rr0", "ad0", "adnp", "ab0")}, ())
    snapshot = fixed_snapshot(suffix)
    # Members' speed and duplex come from /proc/net/bonding, as the live read does.
    snapshot = replace(snapshot, interfaces=with_speeds(snapshot.interfaces, details,
                                                        Path("/nonexistent")))
    persisted = Persisted({"rr0": LinkConfig("rr0", "bond", ("eth1x", "eth2x"), mtu=9000,
                                             mode="balance-rr", source="/etc/netplan/01.yaml")})
    findings = tuple(lint_links(snapshot, OWNER, persisted))
    return LinksView(snapshot, details, OWNER, persisted, findings, version=1)


@pytest.fixture
def links_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    view = fixed_view()
    monkeypatch.setattr(LinksPane, "fetch", lambda self: view)
    monkeypatch.setattr(actions.Context, "read", classmethod(
        lambda cls, host, environ=None: actions.Context(host, view.snapshot, set())))
    return ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)


async def open_tab(pilot: Any) -> None:
    await pilot.pause()
    pilot.app.query_one("#panes", PaneSwitcher).active = "tab-links"
    await pilot.pause()
    await wait_for_rows(pilot, TABLE)


async def live_only(pilot: Any) -> None:
    """Open the tab with changes set to the live links only (the test root has no
    config system to persist into)."""
    await open_tab(pilot)
    pane = pilot.app.query_one(LinksPane)
    pane.mode = "live"
    pane._show_mode()
    await pilot.pause()


def table_rows(app: ZsnApp) -> dict[str, list[str]]:
    """Each row's cell texts by link name, in the columns' order (shown or not)."""
    table = app.query_one(TABLE, LiveTable)
    return dict(zip(table.shown_keys, row_texts(table), strict=True))


def shown_labels(app: ZsnApp) -> list[str]:
    table = app.query_one(TABLE, LiveTable)
    hidden = {column.key for column in table.hidden_columns}
    return [column.label for column in table.columns if column.key not in hidden]


async def select(pilot: Any, name: str) -> None:
    """Highlight `name`'s row and wait until the details box is about it."""
    pilot.app.query_one(TABLE, LiveTable).move_cursor(key=name)
    await wait_until(pilot, lambda: pilot.app.query_one("#links-details", DetailsBox).text
                     .startswith(f"{name}:"), f"{name}'s details")


# -- snapshots ------------------------------------------------------------------------


def test_snapshot_80x24(snap_compare: SnapCompare, links_app: ZsnApp) -> None:
    assert snap_compare(links_app, terminal_size=(80, 24), run_before=open_tab)


def test_snapshot_120x40(snap_compare: SnapCompare, links_app: ZsnApp) -> None:
    assert snap_compare(links_app, terminal_size=(120, 40), run_before=open_tab)


def test_snapshot_lacp_bond_details_80x24(snap_compare: SnapCompare,
                                          links_app: ZsnApp) -> None:
    async def on_ad0(pilot: Any) -> None:
        await open_tab(pilot)
        await select(pilot, "ad0")

    assert snap_compare(links_app, terminal_size=(80, 24), run_before=on_ad0)


def test_snapshot_mtu_plan_80x24(snap_compare: SnapCompare, links_app: ZsnApp) -> None:
    async def mtu_plan(pilot: Any) -> None:
        await live_only(pilot)
        await select(pilot, "rr0")
        await pilot.press("m")
        await pilot.pause()
        pilot.app.screen.query_one(Input).value = "1500"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, PlanScreen), "the plan")
        await pilot.pause()

    assert snap_compare(links_app, terminal_size=(80, 24), run_before=mtu_plan)


def test_snapshot_create_bond_form_80x24(snap_compare: SnapCompare,
                                         links_app: ZsnApp) -> None:
    async def form(pilot: Any) -> None:
        await open_tab(pilot)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("enter")  # bond
        await pilot.pause()

    assert snap_compare(links_app, terminal_size=(80, 24), run_before=form)


# -- what the rows say ----------------------------------------------------------------


async def test_tree_rows_state_and_detail(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(120, 40)) as pilot:
        await open_tab(pilot)
        rows = table_rows(links_app)
        assert rows["rr0"][:6] == ["rr0", "bond", "up", "9000", "112.5 MiB/s", "2.3 MiB/s"]
        assert "802.3ad no partner" in rows["adnp"]
        assert "active-backup (eth6x)" in rows["ab0"]
        assert "mii up backup" in rows["eth7x"]
        table = links_app.query_one(TABLE, LiveTable)
        depths = {key: table.get_row(key).depth for key in table.shown_keys}  # type: ignore[union-attr]
        assert (depths["rr0"], depths["eth1x"], depths["rr0.10"], depths["vethbr-p"]) == (
            0, 1, 1, 2)
        assert list(rows)[:5] == ["lo", "rr0", "eth1x", "eth2x", "rr0.10"]
        labels = shown_labels(links_app)
        assert "Detail" in labels and "Trend" in labels


async def test_80_columns_drop_whole_columns(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        labels = shown_labels(links_app)
        assert labels[:3] == ["Link", "Kind", "State"] or labels[:2] == ["Link", "State"]
        assert {"MTU", "↓ Rate", "↑ Rate"} <= set(labels)
        assert "MAC" not in labels and "Addresses" not in labels


async def test_details_follow_the_cursor(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await select(pilot, "ad0")
        details = links_app.query_one("#links-details", DetailsBox)
        assert "LACP:       aggregator 1, partner c6:55:f5:7a:39:c0" in details.text
        assert "member:     eth3x mii up, 0 failures, aggregator 1" in details.text
        await select(pilot, "rr0")
        assert "LINK001 warning" in details.text


async def test_members_going_down_repaint_their_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    views = [fixed_view(), fixed_view(".member-down")]
    monkeypatch.setattr(LinksPane, "fetch", lambda self: views[0] if len(views) > 1
                        else views[-1])
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_tab(pilot)
        assert "mii up" in table_rows(app)["eth2x"]
        views.pop(0)
        app.query_one(LinksPane).poll(force=True)
        await wait_until(pilot, lambda: "mii down 1×" in table_rows(app)["eth2x"],
                         "eth2x shown down")
        assert table_rows(app)["eth2x"][2] == "down"


async def test_a_link_losing_its_carrier_does_not_move_the_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """All up, then a bridge without carrier (the lab's br0 as captured): the header
    stays where it was at 80 columns."""
    captured = fixed_view()
    all_up = captured._replace(snapshot=replace(captured.snapshot, interfaces=tuple(
        replace(each, carrier=True, operstate="up") for each in captured.snapshot.interfaces)))
    views = [all_up, captured]
    monkeypatch.setattr(LinksPane, "fetch", lambda self: views[0])
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        assert table_rows(app)["br0"][2] == "up"
        header = screen_text(app)[2]
        views.pop(0)
        app.query_one(LinksPane).poll(force=True)
        await wait_until(pilot, lambda: table_rows(app)["br0"][2] == "no-carrier",
                         "br0 without carrier")
        assert screen_text(app)[2] == header


# -- keys ------------------------------------------------------------------------------


async def test_mtu_key_plans_the_order_and_y_applies(links_app: ZsnApp,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(netlink, "set_link", lambda name, **a: calls.append((name, a)))
    async with links_app.run_test(size=(80, 24)) as pilot:
        await live_only(pilot)
        await select(pilot, "rr0")
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(links_app.screen, AskScreen)
        assert links_app.screen.query_one(Input).value == "9000"
        links_app.screen.query_one(Input).value = "1500"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(links_app.screen, PlanScreen), "plan")
        text = screen_as(links_app, PlanScreen).text
        assert text.index("lower rr0.10 MTU 9000 -> 1500") < text.index("lower rr0 MTU")
        await pilot.press("y")
        await settle(pilot)
        await pilot.pause()
        assert calls == [("rr0.10", {"mtu": 1500}), ("rr0", {"mtu": 1500})]
        assert any("Done: set rr0 MTU to 1500" in n.message for n in links_app._notifications)


async def test_refusal_stays_in_the_dialog_and_changes_nothing(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await live_only(pilot)
        await select(pilot, "rr0.10")
        await pilot.press("m")
        await pilot.pause()
        ask = links_app.screen
        assert isinstance(ask, AskScreen)
        ask.query_one(Input).value = "9500"
        await pilot.press("enter")
        await wait_until(pilot, lambda: ask.query_one(".form-error").display, "the refusal")
        # The core's command line is worded as this pane's key.
        assert str(ask.query_one(".form-error").render()) == (
            "MTU 9500 is above rr0's 9000: raise rr0 first (key m: MTU)")
        assert links_app.screen is ask and ask.query_one(Input).value == "9500"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(links_app.screen, (AskScreen, PlanScreen))


async def test_create_form_refusal_stays_open_then_plans(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await live_only(pilot)
        await select(pilot, "ad0")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(links_app.screen, ChooseScreen)
        await pilot.press("down", "enter")  # VLAN
        await pilot.pause()
        form = links_app.screen
        assert isinstance(form, LinkFormScreen) and form.values()["parent"] == "ad0"
        assert form.focused is form.query_one("#link-vlan-id")  # the parent is filled in
        await pilot.press("5", "0", "0", "0")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: form.query_one(".form-error").display, "error")
        assert str(form.query_one(".form-error").render()).startswith(
            "VLAN id: VLAN id 5000 is outside 1-4094")
        assert form.query_one("#link-vlan-id").has_class("-refused")
        form.query_one("#link-vlan-id", Input).value = "42"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(links_app.screen, PlanScreen), "plan")
        assert "create vlan ad0.42 (on ad0, id 42)" in screen_as(links_app, PlanScreen).text
        await pilot.press("n")


async def test_member_keys_and_delete(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await live_only(pilot)
        await select(pilot, "eth7x")
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(links_app.screen, PlanScreen), "plan")
        assert "release eth7x from ab0" in screen_as(links_app, PlanScreen).text
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(links_app.screen, AskScreen)
        links_app.screen.query_one(Input).value = "vethbr-p"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(links_app.screen, PlanScreen), "plan")
        assert "enslave vethbr-p to ab0" in screen_as(links_app, PlanScreen).text
        await pilot.press("escape")
        await pilot.pause()
        await select(pilot, "ab0")
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(links_app.screen, PlanScreen), "plan")
        assert "delete bond ab0" in screen_as(links_app, PlanScreen).text
        await pilot.press("n")
        await pilot.pause()
        await select(pilot, "dum0")
        await pilot.press("d")
        await pilot.pause()
        assert any("dum0 is a dummy" in n.message for n in links_app._notifications)


async def test_a_change_to_the_ssh_link_is_tried(links_app: ZsnApp,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """No question to answer: the plan names the session's path and says the change is
    applied as a try (tests/tui/test_tries.py has what follows a yes)."""
    from tests.unit.links.conftest import captured_session
    from zsn.tries import session as sessions

    view = fixed_view()
    session = captured_session(monkeypatch, "rr0.10", "10.0.10.2 40000 10.0.10.1 22")
    monkeypatch.setattr(actions.Context, "read", classmethod(
        lambda cls, host, environ=None: actions.Context(host, view.snapshot, set(), session)))
    monkeypatch.setattr(sessions, "find_session", lambda host, environ=None: session)
    async with links_app.run_test(size=(80, 24)) as pilot:
        await live_only(pilot)
        await select(pilot, "eth2x")
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(links_app.screen, PlanScreen), "plan")
        text = " ".join(screen_as(links_app, PlanScreen).text.split())
        assert "release eth2x from rr0" in text
        assert ("warning: this SSH session (from 10.0.10.2 to 10.0.10.1, dev rr0.10) runs "
                "over rr0.10, rr0 (vlan parent of rr0.10), eth1x (member of rr0), eth2x "
                "(member of rr0): it changes rr0, eth2x: it could cut the session off" in text)
        assert ("warning: so it is applied as a try: rolled back by itself 60 s after it is "
                "applied unless you keep it (k)" in text)
        assert "confirm-ssh-link" not in text  # the CLI's way, not this one
        await pilot.press("n")


async def test_persist_mode_key_lint_help_and_palette(links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        table = links_app.query_one(TABLE, LiveTable)
        assert str(table.border_subtitle).startswith("changes: live + config (netplan)")
        await pilot.press("p")
        assert str(table.border_subtitle).startswith("changes: config only")
        await pilot.press("p")
        assert str(table.border_subtitle).startswith("changes: live only")
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(links_app.screen, FindingsScreen)
        assert {f.id for f in links_app.screen.findings} >= {"LINK001", "LINK006", "LINK007"}
        await pilot.press("escape")
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(links_app.screen, HelpScreen)
        assert ("c", "Create…", "") in links_app.screen.bindings_here
        assert "### Links" in links_app.screen.pane_help
        await pilot.press("escape")
        from zsn.tui.commands import ZsnCommands

        titles = [command.title for command in ZsnCommands(links_app.screen)._commands()]
        for wanted in ("Create", "MTU", "Add member", "Remove member", "Delete",
                       "Save to config", "Live/config", "Lint", "Pane: Links"):
            assert wanted in titles


async def test_an_idle_poll_repaints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """600 links, nothing moves: a second poll builds no new rows and writes nothing."""
    from tests.pilot import TerminalOutput
    from zsn.links.model import Interface

    links = tuple(Interface(index=n + 1, name=f"zd{n}", kind="dummy", admin_up=True,
                            operstate="unknown", carrier=True, mtu=1500, min_mtu=None,
                            max_mtu=None, mac=None) for n in range(600))
    idle = {f"zd{n}": Rates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0) for n in range(600)}
    quiet = LinksView(LinksSnapshot(links, 1.0, rates=idle), BondDetails({}, ()), None,
                      Persisted(), ())
    busy = quiet._replace(snapshot=replace(quiet.snapshot, rates=idle | {
        "zd3": Rates(2048.0, 0.0, 2.0, 0.0, 0.0, 0.0)}))
    views = [quiet]
    monkeypatch.setattr(LinksPane, "fetch", lambda self: views[-1])
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#panes", PaneSwitcher).active = "tab-links"
        pane = await wait_pane(pilot)
        await wait_until(pilot, lambda: pane.snapshot_count >= 1, "the first poll")
        await wait_until(pilot, lambda: len(app.query(LivePane)) == len(app.domains),
                         "the other panes made (their mounting lays the screen out again)")
        output = TerminalOutput(app)
        quiet_spells = 0
        for _ in range(100):  # the first poll's frames are drawn (late on a busy machine)
            output.reset()
            await pilot.pause(0.2)
            quiet_spells = quiet_spells + 1 if output.bytes == 0 else 0
            if quiet_spells == 3:
                break
        else:
            pytest.fail("the screen never settled after the first poll")
        pane.poll(force=True)
        await wait_until(pilot, lambda: pane.snapshot_count >= 2, "a second poll")
        await pilot.pause()
        assert output.bytes == 0, (output.updates, output.bytes, output.first_frame.split())
        views.append(busy)
        pane.poll(force=True)
        await wait_until(pilot, lambda: pane.snapshot_count >= 3, "a third poll")
        await pilot.pause()
        assert table_rows(app)["zd3"][4] == "2.0 KiB/s"
        assert 0 < output.bytes < 2000  # one cell, not the screen


async def wait_pane(pilot: Pilot[int]) -> LinksPane:
    await wait_until(pilot, lambda: pilot.app.query(LinksPane), "the pane")
    return pilot.app.query_one(LinksPane)


def test_snapshot_member_down_80x24(snap_compare: SnapCompare,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's bonds with one member each set down: the row and the box say that
    member carries no traffic (the kernel still calls it "active")."""
    view = fixed_view(".member-down")
    monkeypatch.setattr(LinksPane, "fetch", lambda self: view)
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)

    async def on_rr0(pilot: Any) -> None:
        await open_tab(pilot)
        await select(pilot, "rr0")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=on_rr0)


async def test_the_details_box_grows_with_the_terminal_and_says_what_is_below(
        links_app: ZsnApp) -> None:
    async with links_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await select(pilot, "ad0")
        box = links_app.query_one("#links-details", DetailsBox)
        await wait_until(pilot, lambda: "more lines" in str(box.border_subtitle), "indicator")
        small = box.size.height
        assert box.text.splitlines()[-1].endswith("-> zsn link persist ad0")  # the advice
        assert not any("zsn link persist" in line for line in screen_text(links_app))
        box.focus()
        await pilot.press("end")
        await wait_until(pilot, lambda: str(box.border_subtitle).startswith("↑"), "scrolled")
        # On the screen once drawn: the subtitle changes first, the frame after it.
        await wait_until(pilot, lambda: any("-> zsn link persist" in line
                                            for line in screen_text(links_app)), "the advice")
        await pilot.resize_terminal(120, 40)
        await wait_until(pilot, lambda: box.size.height > small, "taller at 120x40")


async def test_the_footer_follows_the_highlighted_link(links_app: ZsnApp) -> None:
    from zsn.tui.widgets.footer import KeyBar

    async with links_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        bar = links_app.query_one(KeyBar)
        await select(pilot, "eth2x")
        await wait_until(pilot, lambda: bar.shown_keys[0] == "x", "remove member first")
        await select(pilot, "rr0")
        await wait_until(pilot, lambda: bar.shown_keys[:2] == ["a", "d"], "add, delete first")
        assert "x" not in bar.shown_keys  # rr0 is no member
        await select(pilot, "lo")  # no bond, VLAN or bridge: only the MTU changes
        await wait_until(pilot, lambda: not {"a", "d", "x", "s"} & set(bar.shown_keys),
                         "no keys for bonds, bridges or members")
        assert "m" in bar.shown_keys
        await pilot.press("d")
        await wait_until(pilot, lambda: any("this needs a bond or vlan or bridge" in n.message
                                            for n in links_app._notifications), "why not")
        assert not isinstance(links_app.screen, PlanScreen)


async def test_under_a_root_only_the_config_keys_are_offered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.tui.widgets.footer import KeyBar

    view = fixed_view()
    view = view._replace(snapshot=replace(view.snapshot, live=False))
    monkeypatch.setattr(LinksPane, "fetch", lambda self: view)
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        bar = app.query_one(KeyBar)
        await wait_until(pilot, lambda: "c" in bar.shown_keys and not {
            "m", "d", "a", "x", "s", "p"} & set(bar.shown_keys), "only create and lint")
        await pilot.press("m")
        await wait_until(pilot, lambda: any("Under --root only the config" in n.message
                                            for n in app._notifications), "why not")
        assert not isinstance(app.screen, PlanScreen)


def test_snapshot_kept_filter_80x24(snap_compare: SnapCompare, links_app: ZsnApp) -> None:
    """A kept filter: its text, count and the key that clears it in the border, `esc`
    first in the footer."""
    async def filtered(pilot: Any) -> None:
        await open_tab(pilot)
        await pilot.press("slash", *"eth", "enter")
        await pilot.pause()

    assert snap_compare(links_app, terminal_size=(80, 24), run_before=filtered)


async def test_esc_clears_the_kept_filter_and_a_new_link_it_hides_is_announced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    full = fixed_view()
    # The capture less its loopback first; then the loopback "arrives".
    before = full._replace(snapshot=replace(full.snapshot, interfaces=tuple(
        i for i in full.snapshot.interfaces if i.name != "lo")))
    views = [before]
    monkeypatch.setattr(LinksPane, "fetch", lambda self: views[-1])
    app = ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        table = app.query_one(TABLE, LiveTable)
        await pilot.press("slash", *"eth", "enter")
        assert "eth1x" in table.shown_keys and table.get_row("lo") is None
        views.append(full)
        app.query_one(LinksPane).poll(force=True)
        await wait_until(pilot, lambda: table.get_row("lo") is not None, "lo arrived")
        await wait_until(pilot, lambda: any("hidden by the filter /eth: lo" in n.message
                                            for n in app._notifications), "announced")
        assert "lo" not in table.shown_keys
        assert str(table.border_subtitle).startswith(
            f"/eth {table.shown_count} of {table.row_count} · esc clears")
        table.focus()
        await pilot.press("escape")
        assert table.filter_text == "" and "lo" in table.shown_keys
