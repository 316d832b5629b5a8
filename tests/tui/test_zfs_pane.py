"""The ZFS pane fed with real captures (the lab's tank scrubbing, small never scrubbed),
its iostat streams replaced by a monitor that replays a captured `zpool iostat`."""

from __future__ import annotations

import operator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import ContentSwitcher, OptionList, Static

from tests.pilot import row_texts, screen_as, screen_text, settle, wait_for_rows, wait_until
from tests.tui.conftest import SnapCompare
from tests.unit.zfs.conftest import VM, read
from zsn.lint import Finding
from zsn.plan import LiveStep, Plan
from zsn.system.host import Host
from zsn.tui.app import PaneSwitcher, ZsnApp
from zsn.tui.panes.zfs import ZfsPane
from zsn.tui.screens.dataset import DatasetScreen
from zsn.tui.screens.findings import FindingsScreen
from zsn.tui.screens.help import HelpScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.footer import KeyBar
from zsn.tui.widgets.table import LiveTable
from zsn.view import cell_text
from zsn.zfs import iostat, listing, status
from zsn.zfs.live import MODULE_NOT_LOADED
from zsn.zfs.model import ZfsSnapshot
from zsn.zfs.monitor import PoolIostat
from zsn.zfs.snapshots import Snapshot

NOW = 1795367000.0  # shortly after the lab's scrub captures


def fixed_snapshot(state: str = "scrub-in-progress") -> ZfsSnapshot:
    pools = {p.name: p for p in status.parse_text(read(VM / f"zpool-status.{state}.txt"))}
    pools["small"] = status.parse_text(read(VM / "zpool-status.all-pools.txt"))[0]
    sized = {row["name"]: row for row in listing.parse_pools_text(
        read(VM / "zpool-list-Hp.txt"), listing.DEFAULT_POOL_COLUMNS)}
    merged = tuple(pool._replace(**{k: v for k, v in sized[name].items()
                                    if k not in ("name", "health")})
                   for name, pool in sorted(pools.items()))
    columns = ("name", "used", "available", "referenced", "compressratio", "recordsize",
               "compression", "atime", "xattr", "mountpoint")
    datasets = listing.parse_datasets_text(read(VM / "zfs-list-Hp-o.txt"), columns)
    return ZfsSnapshot(pools=merged, datasets=tuple(datasets), version="2.1.11-1+deb12u1")


class ReplayMonitor:
    """Stands in for IostatMonitor: tank's three captured blocks, already read."""

    instances: list[ReplayMonitor] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.history = iostat.History()
        self.blocks = iostat.parse_blocks(read(VM / "zpool-iostat-Hpvly.tank.1s-x3.txt"), "tank")
        for block in self.blocks:
            self.history.add(block)
        self.watched: list[str] = []
        self.stopped = False
        ReplayMonitor.instances.append(self)

    def watch(self, pools: list[str], rows: dict[str, int] | None = None) -> None:
        self.watched = list(pools)

    def poll(self) -> dict[str, PoolIostat]:
        return {"tank": PoolIostat("tank", self.blocks[-1], None, True),
                "small": PoolIostat("small", None, "zpool exited with status 1: Unable to "
                                    "parse pools/vdevs list.", False)}

    def stop(self) -> None:
        self.stopped = True


def make_app(monkeypatch: pytest.MonkeyPatch, snapshot: ZfsSnapshot) -> ZsnApp:
    monkeypatch.setattr("zsn.tui.panes.zfs.ZfsReader.read", lambda self: snapshot)
    monkeypatch.setattr("zsn.tui.panes.zfs.IostatMonitor", ReplayMonitor)
    monkeypatch.setattr("zsn.tui.panes.zfs.find_program", lambda name: "/usr/sbin/zpool")
    monkeypatch.setattr("zsn.tui.panes.zfs.now", lambda: NOW)
    ReplayMonitor.instances.clear()
    return ZsnApp(Host(Path("/srv/zsn-test-root")), theme="zsn-night", refresh=3600)


@pytest.fixture
def zfs_app(monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    return make_app(monkeypatch, fixed_snapshot())


async def open_tab(pilot: Pilot[int]) -> None:
    await pilot.pause()
    pilot.app.query_one("#panes", PaneSwitcher).active = "tab-zfs"
    await pilot.pause()
    await wait_for_rows(pilot, "#zfs-pools")
    await wait_for_rows(pilot, "#zfs-vdevs")


async def select_tank(pilot: Pilot[int]) -> None:
    await open_tab(pilot)
    pilot.app.query_one("#zfs-pools", LiveTable).focus()
    await pilot.press("down")
    await pilot.pause()


def rows(app: ZsnApp, table: str) -> list[list[str]]:
    return row_texts(app.query_one(table, LiveTable))


def tree(app: ZsnApp, table: str) -> list[tuple[int, str]]:
    """(depth, name) of every row shown."""
    widget = app.query_one(table, LiveTable)
    return [(row.depth, cell_text(row.cells[0])) for row in
            (widget.get_row(key) for key in widget.shown_keys) if row is not None]


def test_snapshot_80x24(snap_compare: SnapCompare, zfs_app: ZsnApp) -> None:
    assert snap_compare(zfs_app, terminal_size=(80, 24), run_before=select_tank)


def test_snapshot_120x40(snap_compare: SnapCompare, zfs_app: ZsnApp) -> None:
    assert snap_compare(zfs_app, terminal_size=(120, 40), run_before=select_tank)


async def test_pools_scan_and_the_vdev_tree_with_live_io(zfs_app: ZsnApp) -> None:
    async with zfs_app.run_test(size=(120, 40)) as pilot:
        await select_tank(pilot)
        pools = rows(zfs_app, "#zfs-pools")
        assert [r[:2] for r in pools] == [["small", "ONLINE"], ["tank", "ONLINE"]]
        assert "scrub 45.8% 7s" in pools[1] and "87.1 MiB/s" in pools[1]
        scan = str(zfs_app.query_one("#zfs-scan", Static).render())
        assert scan.startswith("tank: scrub in progress, 45.77% done, ") and "ETA 7s" in scan
        assert tree(zfs_app, "#zfs-vdevs") == [
            (0, "tank"), (1, "mirror-0"), (2, "disk-a"), (2, "disk-b"), (1, "mirror-1"),
            (2, "disk-c"), (2, "disk-d")]
        shown = screen_text(zfs_app)
        assert any("├ mirror-0" in line for line in shown)
        assert any("│ └ disk-b" in line for line in shown)
        disk_a = rows(zfs_app, "#zfs-vdevs")[2]
        assert disk_a[1] == "ONLINE" and disk_a[2] == "0/0/0"
        assert "21.8 MiB/s" in disk_a  # the last captured block: 22896609 B/s written
        labels = [c.label for c in zfs_app.query_one("#zfs-vdevs", LiveTable).columns]
        reads, writes = disk_a[labels.index("Reads")], disk_a[labels.index("Writes")]
        assert reads.strip() == "▁▁▁" and writes.strip() == "▇██"  # writing, not reading
        assert disk_a[labels.index("Wait r/w")] == "-/3.6 ms"
        assert ReplayMonitor.instances[-1].watched == ["small", "tank"]


async def test_an_io_stream_error_is_shown(zfs_app: ZsnApp) -> None:
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        status_text = str(zfs_app.query_one("#zfs .pane-status", Static).render())
        assert "I/O of small: zpool exited with status 1" in status_text


async def test_datasets_and_back_to_vdevs(zfs_app: ZsnApp) -> None:
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d")
        await pilot.pause()
        assert zfs_app.query_one("#zfs-lower", ContentSwitcher).current == "zfs-datasets"
        assert tree(zfs_app, "#zfs-datasets") == [(0, "tank"), (1, "db"), (1, "media")]
        db = rows(zfs_app, "#zfs-datasets")[1]
        assert "zstd" in db and "16 KiB" in db
        await pilot.press("v")
        await pilot.pause()
        assert zfs_app.query_one("#zfs-lower", ContentSwitcher).current == "zfs-vdevs"


async def test_narrow_terminals_drop_whole_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    labels: dict[int, list[str]] = {}
    for width, height in ((120, 40), (80, 24)):
        app = make_app(monkeypatch, fixed_snapshot())
        async with app.run_test(size=(width, height)) as pilot:
            await select_tank(pilot)
            table = app.query_one("#zfs-vdevs", LiveTable)
            labels[width] = [c.label for c in table.columns if c not in table.hidden_columns]
    wide, narrow = labels[120], labels[80]
    assert narrow[:3] == ["Vdev", "State", "R/W/Ck err"] and len(narrow) < len(wide)
    assert set(narrow) < set(wide)


async def test_scrub_keys_follow_the_scrub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each scrub key offered only when it can act, the footer reading the pool's new
    state back after each change (the lab's captures of tank at each step)."""
    app, reads, _ = changing_app(monkeypatch)
    after = {"pause": "scrub-paused", "start": "scrub-in-progress", "stop": "scrub-canceled"}
    ran: list[str] = []

    def plan_scrub(host: Host, pool: str, verb: str) -> Plan:
        def run() -> None:
            ran.append(verb)
            reads.snapshot = fixed_snapshot(after[verb])

        return Plan(f"{verb} scrub on {pool}", [LiveStep(f"scrub {verb} {pool}", run)])

    monkeypatch.setattr("zsn.zfs.actions.plan_scrub", plan_scrub)
    async with app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        # running: pause and stop first, no start; paused: resume and stop; over: start
        for key, verb, keys in (("p", "pause", ["p", "x"]), ("s", "start", ["s", "x"]),
                                ("x", "stop", ["p", "x"])):
            await wait_until(pilot, partial(first_keys, app, keys), f"{keys} first")
            assert ("s" in footer(app)[0]) == (key == "s")  # no start while one runs
            await pilot.press(key)
            await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
            assert screen_as(app, PlanScreen).plan_title == f"{verb} scrub on tank"
            await pilot.press("y")
            await wait_until(pilot, partial(operator.contains, ran, verb), f"{verb} applied")
        await wait_until(pilot, lambda: "x" not in footer(app)[0], "no stop once stopped")
        assert "p" not in footer(app)[0] and footer(app)[0][0] == "s"
        await pilot.press("p")
        await wait_until(pilot, lambda: any("No scrub is running on tank" in n.message
                                            for n in app._notifications), "the reason")
        assert not isinstance(app.screen, PlanScreen)
        assert ran == ["pause", "start", "stop"]


async def test_a_refused_scrub_is_a_notification(zfs_app: ZsnApp) -> None:
    from zsn.errors import ValidationError

    def refuse(host: Host, pool: str, verb: str) -> Plan:
        raise ValidationError(f"a scrub is already running on {pool}")

    async with zfs_app.run_test(size=(80, 24)) as pilot:
        pilot.app.query_one  # noqa: B018 - the app is up
        import zsn.zfs.actions as actions

        original = actions.plan_scrub
        actions.plan_scrub = refuse  # type: ignore[assignment]
        try:
            await select_tank(pilot)
            await pilot.press("x")
            await wait_until(pilot, lambda: any(
                "already running" in n.message for n in zfs_app._notifications), "a notice")
            assert not isinstance(zfs_app.screen, PlanScreen)
        finally:
            actions.plan_scrub = original


async def test_set_property_asks_property_then_value_then_shows_the_plan(
        zfs_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str, str]] = []

    def plan_set(host: Host, dataset: str, prop: str, value: str) -> Plan:
        asked.append((dataset, prop, value))
        return Plan(f"set {prop}={value} on {dataset}", notes=["preview"])

    monkeypatch.setattr("zsn.zfs.actions.plan_set", plan_set)
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("down", "e")
        await wait_until(pilot, lambda: bool(zfs_app.screen.query("#ask-choices")), "props")
        choices = zfs_app.screen.query_one("#ask-choices", OptionList)
        assert str(choices.get_option_at_index(0).prompt) == "compression (now zstd)"
        await pilot.press("enter")  # compression
        await wait_until(pilot, lambda: "lz4" in str(zfs_app.screen.query_one(
            "#ask-choices", OptionList).get_option_at_index(0).prompt), "values")
        first = str(zfs_app.screen.query_one("#ask-choices", OptionList)
                    .get_option_at_index(0).prompt)
        assert first == ("compression=lz4: existing blocks keep their compression; only new "
                         "writes use lz4")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(zfs_app.screen, PlanScreen), "the plan")
        assert asked == [("tank/db", "compression", "lz4")]


async def test_clear_errors_of_the_highlighted_device(
        zfs_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str | None]] = []

    def plan_clear(host: Host, pool: str, device: str | None = None) -> Plan:
        asked.append((pool, device))
        return Plan(f"clear errors on {pool}")

    monkeypatch.setattr("zsn.zfs.actions.plan_clear", plan_clear)
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(zfs_app.screen, PlanScreen), "the plan")
        await pilot.press("escape")
        await pilot.pause()
        zfs_app.query_one("#zfs-vdevs", LiveTable).focus()
        await pilot.press("down", "down", "c")
        await wait_until(pilot, lambda: len(asked) == 2, "the second plan")
        assert asked == [("tank", None), ("tank", "disk-a")]


async def test_the_advisor_lists_findings_with_their_fixes(
        zfs_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    finding = Finding("ZFS004", "warning", "small", "compression is off",
                      "zfs set compression=lz4 small (new writes only)",
                      source="field note 001_8e3103e979c22063.txt (ZFS tuning cheat sheet)")
    monkeypatch.setattr("zsn.zfs.lint.lint", lambda host: [finding])
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(zfs_app.screen, FindingsScreen), "findings")
        text = str(zfs_app.screen.query_one(OptionList).get_option_at_index(0).prompt)
        assert "ZFS004 warning [small]: compression is off" in text
        assert "fix: zfs set compression=lz4 small" in text


async def test_hiding_the_tab_stops_the_streams(zfs_app: ZsnApp) -> None:
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        monitor = ReplayMonitor.instances[-1]
        await pilot.press("1")
        await wait_until(pilot, lambda: monitor.stopped, "the streams stopped")


@pytest.mark.parametrize(("snapshot", "message"), [
    (ZfsSnapshot(unavailable=MODULE_NOT_LOADED),
     "ZFS is not available here: the ZFS kernel module is not loaded"),
    (ZfsSnapshot(), "No pools. zsn shows and tunes pools; create one with zpool create."),
    (ZfsSnapshot(errors=("zpool is not installed (Debian: apt install zfsutils-linux)",)),
     "zpool is not installed"),
])
async def test_empty_states(monkeypatch: pytest.MonkeyPatch, snapshot: ZfsSnapshot,
                            message: str) -> None:
    app = make_app(monkeypatch, snapshot)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#panes", PaneSwitcher).active = "tab-zfs"
        await wait_until(pilot, lambda: message in str(
            app.query_one("#zfs .pane-status", Static).render()), "the empty state")
        assert app.query_one("#zfs-pools", LiveTable).row_count == 0
        # Nothing to act on: no key offers to act, and one pressed says why.
        # The footer is redrawn from the key bar's own queue, after the read is shown.
        await wait_until(pilot, lambda: footer(app) == (["q", "question_mark"], []),
                         "no key but help and quit")
        await pilot.press("s")
        reason = snapshot.errors[0] if snapshot.errors else message.split(":")[0] \
            if snapshot.unavailable else "No pools here"
        await wait_until(pilot, lambda: any(reason in n.message for n in app._notifications),
                         "the reason")
        assert not isinstance(app.screen, PlanScreen)
        await pilot.press("question_mark")
        help_screen = screen_as(app, HelpScreen)
        assert all(reason in why for key, _, why in help_screen.bindings_here
                   if key != "r"), help_screen.bindings_here


def first_keys(app: ZsnApp, keys: list[str]) -> bool:
    return footer(app)[0][:len(keys)] == keys


def footer(app: ZsnApp) -> tuple[list[str], list[str]]:
    """The keys on the footer line, and those of them shown greyed."""
    bar = app.query_one(KeyBar)
    return bar.shown_keys, bar.greyed_keys


def test_snapshot_empty_state_80x24(snap_compare: SnapCompare,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(monkeypatch, ZfsSnapshot(unavailable=MODULE_NOT_LOADED))

    async def open_empty(pilot: Pilot[int]) -> None:
        await pilot.pause()
        app.query_one("#panes", PaneSwitcher).active = "tab-zfs"
        await wait_until(pilot, lambda: "not available" in str(
            app.query_one("#zfs .pane-status", Static).render()), "the empty state")

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_empty)


async def test_nothing_cut_at_80x24_and_an_idle_refresh_writes_nothing(zfs_app: ZsnApp) -> None:
    from tests.pilot import TerminalOutput, wait_until_quiet
    from tests.tui.test_wireguard_pane import shown_tokens_are_whole, table_lines

    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        for title, table in (("Pools", "#zfs-pools"), ("Vdevs", "#zfs-vdevs")):
            widget = zfs_app.query_one(table, LiveTable)
            labels = [c.label for c in widget.columns]
            lines = [line.replace("├", " ").replace("└", " ").replace("│ │", "│  ")
                     for line in table_lines(zfs_app, title)]
            bad = shown_tokens_are_whole(lines, row_texts(widget), labels)
            assert bad == [], f"{title}: cut {bad}"
        await wait_until_quiet(pilot)
        output = TerminalOutput(zfs_app)
        pane = zfs_app.query_one("#zfs", ZfsPane)
        for _ in range(2):
            pane.poll(force=True)
            await settle(pilot)
            await pilot.pause()
        assert output.bytes == 0


class Reads:
    """A reader whose snapshot the test changes between polls."""

    def __init__(self, snapshot: ZfsSnapshot) -> None:
        self.snapshot = snapshot

    def read(self) -> ZfsSnapshot:
        return self.snapshot


def changing_app(monkeypatch: pytest.MonkeyPatch) -> tuple[ZsnApp, Reads, ZfsSnapshot]:
    """The app on the fixed snapshot, read through a `Reads` the test can change."""
    both = fixed_snapshot()
    reads = Reads(both)
    app = make_app(monkeypatch, both)
    monkeypatch.setattr("zsn.tui.panes.zfs.ZfsReader.read", lambda self: reads.read())
    return app, reads, both


async def test_a_vanished_pool_stays_greyed_until_it_is_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app, reads, both = changing_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        pane = app.query_one("#zfs", ZfsPane)
        reads.snapshot = both._replace(pools=tuple(p for p in both.pools if p.name != "tank"))
        pane.poll(force=True)
        await wait_until(pilot, lambda: any(
            row[0] == "tank (gone)" for row in rows(app, "#zfs-pools")), "the greyed pool")
        table = app.query_one("#zfs-pools", LiveTable)
        assert table.get_row("tank").state == "gone"  # type: ignore[union-attr]
        await wait_until(pilot, lambda: any(
            "tank disappeared" in n.message for n in app._notifications), "the notice")
        # the cursor is on it: no vdev tree of another pool, no actions on it
        assert table.cursor_key == "tank"
        assert app.query_one("#zfs-vdevs", LiveTable).row_count == 0
        await wait_until(pilot, lambda: "s" in footer(app)[1], "s greyed: nothing to act on")
        await pilot.press("s")
        await wait_until(pilot, lambda: any(
            "The highlighted pool is gone" in n.message for n in app._notifications),
            "a notice")
        assert not isinstance(app.screen, PlanScreen)
        reads.snapshot = both  # imported again
        pane.poll(force=True)
        await wait_until(pilot, lambda: [r[0] for r in rows(app, "#zfs-pools")] ==
                         ["small", "tank"], "the pool back")
        await wait_until(pilot, lambda: app.query_one("#zfs-vdevs", LiveTable).row_count,
                         "its vdevs")


async def test_a_failed_read_is_not_every_pool_vanishing(monkeypatch: pytest.MonkeyPatch) -> None:
    app, reads, _ = changing_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        reads.snapshot = ZfsSnapshot(errors=("zpool: no answer within 15 s",))
        app.query_one("#zfs", ZfsPane).poll(force=True)
        await wait_until(pilot, lambda: "no answer within 15 s" in str(
            app.query_one("#zfs .pane-status", Static).render()), "the error")
        assert not any("disappeared" in n.message for n in app._notifications)


async def test_the_running_scan_shows_issued_of_total_rate_eta_and_start_at_80_columns(
        zfs_app: ZsnApp) -> None:
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        scan = zfs_app.query_one("#zfs-scan", Static)
        assert str(scan.render()).splitlines() == [
            "tank: scrub in progress, 45.77% done, 88.2 MiB of 193.0 MiB, at 14.7 MiB/s",
            "  ETA 7s, 0 B repaired, started Nov 24 18:20"]
        assert scan.size.height == 2
        await pilot.resize_terminal(120, 40)
        await wait_until(pilot, lambda: len(str(scan.render()).splitlines()) == 1,
                         "the scan on one line")


async def test_long_device_names_are_cut_not_the_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """by-id names (what the advisor recommends) are long: at 80 columns the name is
    shortened with an ellipsis and the state, errors, disk health and rates stay."""
    from tests.unit.zfs.conftest import OTHERS

    degraded = status.parse_text(read(
        OTHERS / "zpool-status-degraded-mirror-unavail-cksum-100980.zpool-status-exporter.txt"))
    app = make_app(monkeypatch, ZfsSnapshot(pools=tuple(degraded)))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        table = app.query_one("#zfs-vdevs", LiveTable)
        shown = [c.label for c in table.columns if c not in table.hidden_columns]
        assert shown[:6] == ["Vdev", "State", "R/W/Ck err", "Disk", "Read", "Write"]
        text = "\n".join(screen_text(app))
        assert "UNAVAIL" in text and "0/0/100980" in text
        assert "ata-ST8000VN004-xxxxxx_redacted-part1" not in text and "…" in text


async def test_not_root_is_said_and_the_pools_are_still_shown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.zfs.live import NEED_ROOT

    app = make_app(monkeypatch, fixed_snapshot()._replace(notes=(NEED_ROOT,)))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_tab(pilot)
        await wait_until(pilot, lambda: "zsn is not root: scrubs, property changes" in str(
            app.query_one("#zfs .pane-status", Static).render()), "the note")
        assert [r[0] for r in rows(app, "#zfs-pools")] == ["small", "tank"]


async def test_while_a_scrub_runs_the_footer_offers_pause_and_stop_first(
        zfs_app: ZsnApp) -> None:
    from zsn.tui.widgets.footer import KeyBar

    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)  # tank: a scrub in progress (the lab's capture)
        await wait_until(pilot, lambda: zfs_app.query_one(KeyBar).shown_keys[:2] == ["p", "x"],
                         "pause and stop first")
        zfs_app.query_one("#zfs-pools", LiveTable).move_cursor("small")  # never scrubbed
        await wait_until(pilot, lambda: zfs_app.query_one(KeyBar).shown_keys[0] == "s",
                         "scrub first")


def captured_db() -> tuple[list[tuple[str, str, str]], list[Snapshot]]:
    """tank/db in the lab: `zfs get -Hp all` and its one snapshot (`zfs list -Hp -t
    snapshot -o name,used,refer,creation`: guid and txg were not captured, nor shown)."""
    rows = listing.parse_text_rows(read(VM / "zfs-list-Hp-t-snapshot.txt"),
                                   ("name", "used", "referenced", "creation"), "zfs list")
    taken = [Snapshot(row["name"].split("@")[0], row["name"].split("@")[1], 0, 0,
                      int(row["creation"]), int(row["used"]), int(row["referenced"]))
             for row in rows]
    return listing.parse_properties(read(VM / "zfs-get-Hp-all.tank-db.txt")), taken


def test_snapshot_dataset_box_80x24(snap_compare: SnapCompare,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zsn.tui.panes.zfs.read_dataset", lambda name: captured_db())
    app = make_app(monkeypatch, fixed_snapshot())

    async def open_db(pilot: Pilot[int]) -> None:
        await select_tank(pilot)
        await pilot.press("d", "down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DatasetScreen), "the box")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_db)


async def test_enter_on_a_dataset_opens_all_of_it_mountpoint_first(
        zfs_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.tui.widgets.footer import KeyBar

    asked: list[str] = []

    def dataset(name: str) -> tuple[list[tuple[str, str, str]], list[Snapshot]]:
        asked.append(name)
        return captured_db()

    monkeypatch.setattr("zsn.tui.panes.zfs.read_dataset", dataset)
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d")
        await wait_until(pilot, lambda: "enter" in zfs_app.query_one(KeyBar).shown_keys,
                         "enter offered on the datasets")
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(zfs_app.screen, DatasetScreen), "the box")
        assert asked == ["tank/db"]
        body = screen_text(zfs_app)
        assert any("mountpoint" in line and "/run/tank/db" in line
                   and "inherited from tank" in line for line in body)
        assert any("compression" in line and "zstd" in line and "local" in line
                   for line in body)
        # At 80x24 the snapshots start below the first screen: the border says they
        # are there, and how far.
        box = zfs_app.screen.query_one("#dataset-details")
        await wait_until(pilot, lambda: str(box.border_subtitle).startswith(
            "1 snapshot: @before-upgrade · ↓ "), "the snapshots announced")
        assert not any("@before-upgrade" in line and "31.5 MiB" in line
                       for line in screen_text(zfs_app))
        await pilot.press("pagedown")  # the snapshots follow the first properties
        await pilot.pause()
        assert any("@before-upgrade" in line and "31.5 MiB" in line
                   for line in screen_text(zfs_app))
        await pilot.press("escape")
        assert not isinstance(zfs_app.screen, DatasetScreen)


async def test_done_says_what_the_value_was_and_what_it_is_now(
        zfs_app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notice reads the property back after the change, not before it."""
    values = [("lz4", "inherited from tank")]

    def plan_set(host: Host, dataset: str, prop: str, value: str) -> Plan:
        plan = Plan(f"set {prop}={value} on {dataset}",
                    [LiveStep(f"zfs set {prop}={value} {dataset}",
                              lambda: values.append((value, "local")))],
                    notes=[f"currently {prop}=lz4 (inherited from tank)"])
        plan.read_back = lambda: (f"{dataset}: was {prop}=lz4 (inherited from tank), now "
                                  f"{prop}={values[-1][0]} ({values[-1][1]})")
        return plan

    monkeypatch.setattr("zsn.zfs.actions.plan_set", plan_set)
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("down", "e")
        await wait_until(pilot, lambda: bool(zfs_app.screen.query("#ask-choices")), "props")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "zstd" in str(zfs_app.screen.query_one(
            "#ask-choices", OptionList).get_option_at_index(1).prompt), "values")
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(zfs_app.screen, PlanScreen), "the plan")
        await pilot.press("y")
        await wait_until(pilot, lambda: any(n.message.startswith("Done")
                                            for n in zfs_app._notifications), "done")
        done = next(n.message for n in zfs_app._notifications if n.message.startswith("Done"))
        assert done == ("Done: set compression=zstd on tank/db\ntank/db: was compression=lz4 "
                        "(inherited from tank), now compression=zstd (local)")


async def test_a_failed_change_is_one_line(zfs_app: ZsnApp,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from zsn.errors import CommandError

    def refuse() -> None:
        raise CommandError("zpool failed: cannot scrub tank: permission denied")

    monkeypatch.setattr("zsn.zfs.actions.plan_scrub", lambda host, pool, verb: Plan(
        f"{verb} scrub on {pool}", [LiveStep(f"zpool scrub -p {pool}", refuse)]))
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(zfs_app.screen, PlanScreen), "the plan")
        await pilot.press("y")
        await wait_until(pilot, lambda: bool(zfs_app._notifications), "the notice")
        notice = next(iter(zfs_app._notifications))
        assert notice.title == "Failed: pause scrub on tank"
        assert notice.message == ("failed at 'zpool scrub -p tank': zpool failed: cannot "
                                  "scrub tank: permission denied")


def test_snapshot_help_80x24(snap_compare: SnapCompare, zfs_app: ZsnApp) -> None:
    """`?`: the pane's own keys on the first screen."""
    async def help_open(pilot: Pilot[int]) -> None:
        await select_tank(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(zfs_app, terminal_size=(80, 24), run_before=help_open)


def test_snapshot_failure_notice_80x24(snap_compare: SnapCompare, zfs_app: ZsnApp,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed change: one line under its title, the tables still in sight."""
    from zsn.errors import CommandError

    def refuse() -> None:
        raise CommandError("zpool failed: cannot scrub tank: permission denied")

    monkeypatch.setattr("zsn.zfs.actions.plan_scrub", lambda host, pool, verb: Plan(
        f"{verb} scrub on {pool}", [LiveStep(f"zpool scrub -p {pool}", refuse)]))

    async def failed(pilot: Pilot[int]) -> None:
        await select_tank(pilot)
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, PlanScreen), "the plan")
        await pilot.press("y")
        await wait_until(pilot, lambda: bool(pilot.app._notifications), "the notice")
        await pilot.pause()

    assert snap_compare(zfs_app, terminal_size=(80, 24), run_before=failed)


async def test_set_property_is_offered_on_a_highlighted_dataset(zfs_app: ZsnApp) -> None:
    """`e` acts on a dataset: not offered under the vdev tree (pressed, it says how to
    get one), offered first once the datasets are shown; `d` and `v` show the other."""
    async with zfs_app.run_test(size=(80, 24)) as pilot:
        await select_tank(pilot)
        await wait_until(pilot, lambda: "d" in footer(zfs_app)[0] and not {"e", "v"} & set(
            footer(zfs_app)[0]), "datasets offered, not the vdevs or e")
        await pilot.press("e")
        await wait_until(pilot, lambda: any("Show the datasets (d)" in n.message
                                            for n in zfs_app._notifications), "how to")
        await pilot.press("d")
        await wait_for_rows(pilot, "#zfs-datasets")
        # after the running scrub's pause and stop: open and set
        await wait_until(pilot, lambda: footer(zfs_app)[0][:4] == ["p", "x", "enter", "e"],
                         "open and set first")
        assert "e" not in footer(zfs_app)[1] and "d" not in footer(zfs_app)[0]
