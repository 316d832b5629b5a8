"""The form for a new bond, VLAN or bridge.

A `FormScreen`: the values go to `build` in a worker thread (reading links and the
config, `netplan generate` ...); a refusal keeps the form open with the field it is
about marked; a plan, or a change that needs the SSH link confirmed first, closes it
with that result (`zsn.tui.panes.base.Planned`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.widgets import Input

from zsn.plan import Planned
from zsn.tui.screens.form import FormField, FormScreen, Values

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
        ("vlan_id", "VLAN id", "1-4094"),
        ("parent", "Parent", "bond0"),
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
"""Each kind's fields: key (the request's field, the CLI option's dest: read by
`zsn.links.actions.request_from_fields`), label, placeholder."""


class LinkFormScreen(FormScreen[Planned]):
    """Dismisses with the plan or the SSH confirmation needed, None on escape."""

    def __init__(self, kind: str, build: Callable[[dict[str, str]], Planned],
                 values: dict[str, str] | None = None) -> None:
        super().__init__()
        self.kind = kind
        self._build = build
        self.initial = values or {}

    def form_title(self) -> str:
        return f"New {self.kind}: enter or ctrl+s shows the plan, esc cancels"

    def form_fields(self) -> Iterable[FormField]:
        for key, label, placeholder in FORMS[self.kind]:
            yield FormField(key, label, Input(self.initial.get(key, ""),
                                              placeholder=placeholder,
                                              id=f"link-{key.replace('_', '-')}",
                                              compact=True))

    def build(self, values: Values) -> Planned:
        return self._build({key: str(value).strip() for key, value in values.items()})
