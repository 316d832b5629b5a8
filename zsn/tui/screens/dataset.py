"""`enter` on a dataset: all of it, as `zfs get all` says, mountpoint first."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from zsn.tui.widgets.safe import plain, title
from zsn.zfs.listing import shown_property

FIRST = ("mountpoint", "mounted", "used", "available", "referenced", "compressratio",
         "compression", "recordsize", "atime", "relatime", "xattr", "quota", "reservation",
         "encryption", "creation")
"""What an admin looks for first; the rest follow in zfs's order."""


def property_table(dataset: str, properties: list[tuple[str, str, str]]) -> Table:
    by_name = {prop: (value, source) for prop, value, source in properties}
    order = [prop for prop in FIRST if prop in by_name] + [
        prop for prop, _value, _source in properties if prop not in FIRST]
    table = Table(box=None, show_header=True, header_style="bold", expand=True,
                  padding=(0, 1, 0, 0))
    table.add_column("property", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", style="dim", overflow="fold")
    for prop in order:
        value, source = by_name[prop]
        table.add_row(plain(prop), plain(shown_property(prop, value)),
                      plain("" if source == "-" else source))  # zfs's text: escaped
    return table


class DatasetScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def __init__(self, dataset: str, properties: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.dataset = dataset
        self.properties = properties

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dataset-details"):
            yield Static(property_table(self.dataset, self.properties))
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#dataset-details")
        box.border_title = title(f"{self.dataset} (esc closes, ↑↓ scroll)")
