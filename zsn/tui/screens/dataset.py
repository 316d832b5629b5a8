"""`enter` on a dataset: all of it, as `zfs get all` says: the mountpoint and what an
admin looks for first, its snapshots (`zfs list -t snapshot`, oldest first), then
every other property. The bottom border says how many snapshots there are and the
newest, and how many lines are below: at 80x24 the snapshots start below the first
screen."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from zsn.format import human_bytes
from zsn.tui.widgets.details import ScrollBox
from zsn.tui.widgets.safe import plain, title
from zsn.zfs.listing import shown_property
from zsn.zfs.snapshots import Snapshot

FIRST = ("mountpoint", "mounted", "used", "available", "referenced", "compressratio",
         "compression", "recordsize", "atime", "relatime", "xattr", "quota", "reservation",
         "encryption", "creation")
"""What an admin looks for first; the rest follow in zfs's order."""


def property_table(properties: list[tuple[str, str, str]], first: bool) -> Table:
    """The properties an admin looks for first (`first`), or all the others in zfs's
    order."""
    by_name = {prop: (value, source) for prop, value, source in properties}
    order = [prop for prop in FIRST if prop in by_name] if first else [
        prop for prop, _value, _source in properties if prop not in FIRST]
    table = Table(box=None, show_header=first, header_style="bold", expand=True,
                  padding=(0, 1, 0, 0), title=None if first else "Every other property",
                  title_justify="left")
    table.add_column("property", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", style="dim", overflow="fold")
    for prop in order:
        value, source = by_name[prop]
        table.add_row(plain(prop), plain(shown_property(prop, value)),
                      plain("" if source == "-" else source))  # zfs's text: escaped
    return table


def snapshot_table(snapshots: list[Snapshot]) -> Table | Text:
    if not snapshots:
        return Text("No snapshots.", style="dim")
    table = Table(box=None, show_header=True, header_style="bold", expand=True,
                  padding=(0, 1, 0, 0), title="Snapshots, oldest first", title_justify="left")
    for label in ("snapshot", "created", "used", "referenced", "holds"):
        table.add_column(label, no_wrap=label != "snapshot", overflow="fold")
    for each in snapshots:
        table.add_row(plain("@" + each.name),
                      shown_property("creation", str(each.created)) if each.created else "-",
                      human_bytes(each.used) if each.used is not None else "-",
                      human_bytes(each.referenced) if each.referenced is not None else "-",
                      str(each.holds) if each.holds else "")
    return table


def snapshots_summary(snapshots: list[Snapshot]) -> str:
    """What the box holds below the first screen: "3 snapshots, newest @daily-25"."""
    if not snapshots:
        return "no snapshots"
    if len(snapshots) == 1:
        return f"1 snapshot: @{snapshots[0].name}"
    return f"{len(snapshots)} snapshots, newest @{snapshots[-1].name}"


class DatasetScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def __init__(self, dataset: str, properties: list[tuple[str, str, str]],
                 snapshots: list[Snapshot]) -> None:
        super().__init__()
        self.dataset = dataset
        self.properties = properties
        self.snapshots = snapshots

    def compose(self) -> ComposeResult:
        with ScrollBox(id="dataset-details", hint="↑↓ pgdn",
                       summary=snapshots_summary(self.snapshots)):
            yield Static(property_table(self.properties, first=True))
            yield Static(snapshot_table(self.snapshots), id="dataset-snapshots")
            yield Static(property_table(self.properties, first=False))
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#dataset-details")
        box.border_title = title(f"{self.dataset} (esc closes, ↑↓ scroll)")
