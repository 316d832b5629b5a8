"""The form for a new bond, VLAN or bridge (and the SSH confirmation).

The form hands its values to `build` in a worker thread (reading links and the
config, `netplan generate` ...): a refusal keeps it open with the reason shown; a
plan, or a change that needs the SSH link confirmed, closes it with that result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, Static

from zsn.errors import ZsnError
from zsn.links.actions import SessionLinkError
from zsn.plan import Plan

FORMS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "bond": (
        ("name", "Name", "bond0"),
        ("mode", "Mode", "balance-rr, active-backup, 802.3ad, balance-xor ..."),
        ("members", "Members", "eth1,eth2"),
        ("miimon", "miimon (ms)", "100"),
        ("xmit_hash_policy", "Hash policy", "802.3ad/xor/tlb/alb: layer2, layer3+4 ..."),
        ("lacp_rate", "LACP rate", "802.3ad: slow or fast"),
        ("mtu", "MTU", "optional, e.g. 9000"),
    ),
    "vlan": (
        ("parent", "Parent", "bond0"),
        ("id", "VLAN id", "1-4094"),
        ("name", "Name", "empty: PARENT.ID"),
        ("mtu", "MTU", "optional, at most the parent's"),
    ),
    "bridge": (
        ("name", "Name", "br0"),
        ("ports", "Ports", "optional: eth1,eth2"),
        ("stp", "STP", "yes or no (default no)"),
        ("mtu", "MTU", "optional"),
    ),
}

FormResult = Plan | SessionLinkError


class LinkFormScreen(ModalScreen[tuple[dict[str, str], FormResult] | None]):
    """Dismisses with (values, plan or the SSH confirmation needed), None on escape."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Plan"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, kind: str, build: Callable[[dict[str, str]], Plan],
                 values: dict[str, str] | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.build = build
        self.initial = values or {}

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="link-form"):
            with Grid(id="link-form-grid"):
                for key, label, placeholder in FORMS[self.kind]:
                    yield Label(label)
                    yield Input(self.initial.get(key, ""), placeholder=placeholder,
                                id=f"link-{key.replace('_', '-')}", compact=True)
            yield Static("", id="link-form-error")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#link-form").border_title = (
            f"New {self.kind}: enter or ctrl+s shows the plan, esc cancels")
        self.query_one("#link-form-error", Static).display = False
        first = next((key for key, _label, _p in FORMS[self.kind]
                      if not self.initial.get(key)), FORMS[self.kind][0][0])
        self.query_one(f"#link-{first.replace('_', '-')}", Input).focus()

    def values(self) -> dict[str, str]:
        return {key: self.query_one(f"#link-{key.replace('_', '-')}", Input).value.strip()
                for key, _label, _placeholder in FORMS[self.kind]}

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_submit()

    def action_submit(self) -> None:
        self.make_plan(self.values())

    @work(thread=True, exclusive=True, group="link-form")
    def make_plan(self, values: dict[str, str]) -> None:
        try:
            plan = self.build(values)
        except SessionLinkError as exc:
            self.app.call_from_thread(self.dismiss, (values, exc))
            return
        except ZsnError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        self.app.call_from_thread(self.dismiss, (values, plan))

    def _show_error(self, message: str) -> None:
        error = self.query_one("#link-form-error", Static)
        error.update(message)
        error.display = True

    def action_cancel(self) -> None:
        self.dismiss(None)
