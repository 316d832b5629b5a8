"""Every face of zsn fed with hostile text, for a test that reads the terminal's bytes.

Each domain's snapshot is built from its captured fixtures (the panes' own tests'
builders) and then made hostile by `hostile_copy`: every text field becomes a
hostile string from `tests.terminal_scan` (the same original always the same one, so
names still refer to each other), every bytes field (an SSID) hostile bytes. Fields
typed as a `Literal` are zsn's own closed vocabulary (a backend, a severity, a kind),
checked where they are parsed: they keep their value.

Run in a pseudo-terminal by `tests/tui/test_hostile_faces.py`:

- ``python -m tests.lab.hostile_faces tui``: the app, each pane's `fetch` answering
  its hostile snapshot, shows every pane in turn, with a hostile notification and a
  hostile plan on top, and quits;
- ``python -m tests.lab.hostile_faces cli ARGS...``: ``zsn ARGS...`` with the domains'
  readers answering the same snapshots.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from tests.terminal_scan import HOSTILE, hostile

ROOT = Path("/srv/zsn-hostile-root")
"""The --root the faces are shown for (it is never read: every reader is replaced)."""


class Hostile:
    """Replaces text with hostile text, the same original always the same way."""

    def __init__(self) -> None:
        self.seen: dict[object, object] = {}

    def text(self, original: str) -> str:
        if original not in self.seen:
            self.seen[original] = hostile(len(self.seen))
        value = self.seen[original]
        assert isinstance(value, str)
        return value

    def data(self, original: bytes) -> bytes:
        key = ("bytes", original)
        if key not in self.seen:
            number = len(self.seen)
            raw = HOSTILE[number % len(HOSTILE)].encode("utf-8", "surrogateescape")
            self.seen[key] = (b"%d" % number + raw)[:32]
        value = self.seen[key]
        assert isinstance(value, bytes)
        return value

    def copy(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            return self.data(value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            hints = _hints(type(value))
            return type(value)(*(value_ if _closed(hints.get(name)) else self.copy(value_)
                                 for name, value_ in zip(value._fields, value, strict=True)))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            hints = _hints(type(value))
            changes = {field.name: self.copy(getattr(value, field.name))
                       for field in dataclasses.fields(value)
                       if field.init and not _closed(hints.get(field.name))}
            return dataclasses.replace(value, **changes)
        if isinstance(value, list | tuple | set | frozenset):
            return type(value)(self.copy(item) for item in value)
        if isinstance(value, dict):
            return {self.copy(key): self.copy(item) for key, item in value.items()}
        return value


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a class whose hints do not resolve: no Literal known
        return {}


def _closed(hint: Any) -> bool:
    """A `Literal` (or an optional one, a tuple of them): zsn's own vocabulary."""
    if hint is None:
        return False
    if get_origin(hint) is Literal:
        return True
    return any(_closed(arg) for arg in get_args(hint) if arg is not type(None)
               and arg is not Ellipsis)


def snapshots() -> dict[str, Any]:
    """Each pane's hostile snapshot (what its `fetch` returns), by domain name."""
    from tests.tui.captured import fixed_snapshot as wireguard
    from tests.tui.test_links_pane import fixed_view as links
    from tests.tui.test_openvpn_pane import fixed_snapshot as openvpn
    from tests.tui.test_wlan_pane import fixed_snapshot as wlan
    from tests.tui.test_zfs_pane import fixed_snapshot as zfs
    from zsn.tui.panes.zfs import ZfsView

    making = Hostile()
    return {"wireguard": making.copy(wireguard()), "openvpn": making.copy(openvpn()),
            "zfs": ZfsView(making.copy(zfs())), "wlan": making.copy(wlan()),
            "links": making.copy(links())}


def _replace(owner: object, name: str, value: object) -> None:
    """What `pytest.MonkeyPatch.setattr` does, in a process of its own (never undone)."""
    setattr(owner, name, value)


def patch_panes(found: dict[str, Any]) -> None:
    from zsn.links import actions as link_actions
    from zsn.tui.panes.links import LinksPane
    from zsn.tui.panes.openvpn import OpenVpnPane
    from zsn.tui.panes.wireguard import WireGuardPane
    from zsn.tui.panes.wlan import WlanPane
    from zsn.tui.panes.zfs import ZfsPane

    for pane, name in ((WireGuardPane, "wireguard"), (OpenVpnPane, "openvpn"),
                       (ZfsPane, "zfs"), (WlanPane, "wlan"), (LinksPane, "links")):
        _replace(pane, "fetch", lambda self, snapshot=found[name]: snapshot)
    view = found["links"]
    _replace(link_actions.Context, "read", classmethod(
        lambda cls, host, environ=None: link_actions.Context(host, view.snapshot, set())))


def tui() -> None:
    from zsn.plan import LiveStep, Plan
    from zsn.system.host import Host
    from zsn.tui.app import ZsnApp
    from zsn.tui.screens.plan import PlanScreen

    patch_panes(snapshots())
    app = ZsnApp(Host(ROOT), theme="zsn-night", refresh=0.5)
    steps: list[tuple[float, Any]] = []
    for number in range(1, 6):
        steps.append((1.5, lambda number=number: app.action_show_pane_number(number)))
    steps.append((0.5, lambda: app.notify(HOSTILE[0] + HOSTILE[7], title=HOSTILE[3],
                                          severity="error")))
    steps.append((1.0, lambda: app.push_screen(PlanScreen(Plan(
        f"rename {HOSTILE[4]}", [LiveStep(HOSTILE[1], lambda: None)],
        warnings=[HOSTILE[2]], notes=[HOSTILE[5]])))))
    steps.append((1.5, app.exit))

    def schedule() -> None:
        delay = 1.0
        for wait, step in steps:
            delay += wait
            app.set_timer(delay, step)

    app.call_later(schedule)
    app.run()


def cli(argv: list[str]) -> int:
    """``zsn ARGV`` with every domain's reader answering the hostile snapshots; with
    ``FAIL`` first, every reader fails with a hostile message instead."""
    from zsn import cli as zsn_cli

    failing = argv[:1] == ["FAIL"]
    patch_readers(snapshots(), failing)
    return zsn_cli.main(argv[1:] if failing else argv)


def patch_readers(found: dict[str, Any], failing: bool = False) -> None:
    """The readers the headless commands and the export call, answering `found` (or,
    `failing`, raising an error that quotes a hostile reply)."""
    import zsn.links.cli
    import zsn.links.export
    import zsn.links.lint
    import zsn.openvpn.cli
    import zsn.openvpn.export
    import zsn.openvpn.lint
    import zsn.wireguard.export
    import zsn.wireguard.lint
    import zsn.wlan.cli
    import zsn.wlan.export
    import zsn.wlan.lint
    import zsn.zfs.cli
    import zsn.zfs.lint
    from zsn.errors import ZsnError
    from zsn.lint import Finding

    def answer(value: Any) -> Any:
        def read(*args: Any, **kwargs: Any) -> Any:
            if failing:
                raise ZsnError(f"the daemon said {HOSTILE[0]}{HOSTILE[3]}")
            return value
        return read

    making = Hostile()
    findings = [making.copy(Finding("X001", "warning", "subject", "message", "fix", "/etc/x",
                                    3))]
    view = found["links"]
    openvpn = found["openvpn"]
    replies = {
        (zsn.wlan.cli, "read_wlan"): found["wlan"],
        (zsn.wlan.export, "read_with_findings"): found["wlan"],
        (zsn.links.cli, "read_links"): (view.snapshot, view.details),
        (zsn.links.export, "read_links"): (view.snapshot, view.details),
        (zsn.links.cli, "with_rates"): view.snapshot,
        (zsn.openvpn.cli, "connections"): list(openvpn.connections),
        (zsn.openvpn.cli, "discover"): [c.config for c in openvpn.connections],
        (zsn.openvpn.export, "read_openvpn"): openvpn,
        (zsn.wireguard.export, "read_wireguard"): found["wireguard"],
        (zsn.zfs.cli, "read_zfs"): found["zfs"].snapshot,
    }
    for (module, name), value in replies.items():
        _replace(module, name, answer(value))
    for module in (zsn.links.lint, zsn.openvpn.lint, zsn.wireguard.lint, zsn.wlan.lint,
                   zsn.zfs.lint):
        _replace(module, "lint", answer(findings))


CLI_COMMANDS = (
    ["--export", "wireguard", "openvpn", "wlan", "links"],
    ["--export", "wireguard", "openvpn", "wlan", "links", "--format", "prometheus"],
    ["zfs", "list"], ["zfs", "status"], ["zfs", "advise"],
    ["link", "list"], ["link", "lint"],
    ["vpn", "list"], ["vpn", "lint"],
    ["wifi", "list"], ["wifi", "lint"],
    ["wg", "lint"],
    ["FAIL", "zfs", "list"], ["FAIL", "link", "list"], ["FAIL", "vpn", "list"],
    ["FAIL", "wifi", "list"],
)
"""What `cli` is run with: every listing, status, lint and export, then each group's
error line (a reader failing with a hostile message)."""


if __name__ == "__main__":
    if sys.argv[1] == "tui":
        tui()
    else:
        sys.exit(cli(sys.argv[2:]))
