"""Forms and dialogs, typed into as fast as a terminal delivers keys (issue 9, items 2, 7).

Keys go in bursts (`tests.pilot.type_burst`: every key and paste posted at once, as
a terminal sends typing or a paste), with the pane polling every 50 ms underneath.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from tests.needs import needs_tools
from tests.pilot import (
    WAIT_SECONDS,
    Paste,
    screen_as,
    screen_text,
    type_burst,
    wait_for_rows,
    wait_until,
)
from tests.tui.captured import CAPTURED_HANDSHAKE, FIXTURES, fixed_snapshot
from tests.tui.conftest import SnapCompare
from zsn.lint import Finding
from zsn.plan import Plan
from zsn.system.host import Host
from zsn.tui.app import ZsnApp
from zsn.tui.panes.base import LivePane
from zsn.tui.screens.ask import AskScreen, ChooseScreen
from zsn.tui.screens.client_config import ClientConfigScreen
from zsn.tui.screens.create_interface import CreateInterfaceScreen
from zsn.tui.screens.findings import FindingsScreen
from zsn.tui.screens.onboarding import OnboardPeerScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard import onboarding
from zsn.wireguard.config import parse

POLL_SECONDS = 0.05


def _app(root: Path, monkeypatch: pytest.MonkeyPatch, refresh: float = POLL_SECONDS) -> ZsnApp:
    snapshot = fixed_snapshot()
    monkeypatch.setattr("zsn.tui.panes.wireguard.read_wireguard", lambda host, cache: snapshot)
    monkeypatch.setattr("zsn.tui.panes.wireguard.now", lambda: CAPTURED_HANDSHAKE + 42)
    return ZsnApp(Host(root), theme="zsn-night", refresh=refresh)


@pytest.fixture
def app(root: Path, monkeypatch: pytest.MonkeyPatch) -> ZsnApp:
    return _app(root, monkeypatch)


def _pane(app: ZsnApp) -> LivePane[Any]:
    pane = app.active_pane()
    assert pane is not None
    return pane


def _value(app: ZsnApp, selector: str) -> str:
    return app.screen.query_one(selector, Input).value


def _error(app: ZsnApp) -> str:
    error = app.screen.query_one(".form-error", Static)
    return str(error.render()) if error.display else ""


async def _polls_go_on(pilot: Pilot[int], app: ZsnApp) -> None:
    polled = _pane(app).snapshot_count
    await wait_until(pilot, lambda: _pane(app).snapshot_count >= polled + 3,
                     "the pane polling underneath")


# -- item 2: keys in bursts are never lost -----------------------------------------


def held_defaults(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The onboarding form's defaults, read once the first event is set; the second is
    set when they have been read."""
    release = threading.Event()
    filled = threading.Event()
    defaults = onboarding.onboarding_defaults

    def held(host: Host, interface: str) -> onboarding.OnboardingDefaults:
        release.wait(WAIT_SECONDS)
        try:
            return defaults(host, interface)
        finally:
            filled.set()

    monkeypatch.setattr("zsn.tui.screens.onboarding.onboarding_defaults", held)
    return release, filled


async def test_a_burst_typed_into_the_onboarding_form_loses_nothing(
        app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    # The defaults (next free address) arrive after the typing: they must not
    # overwrite the address typed meanwhile. They wait for the typing to be in the
    # form, not a fixed 0.3 s: on a busy machine that ran out inside the burst, with
    # the focus in a field not typed in yet (the next test).
    typed, filled = held_defaults(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        type_burst(app, "a", *"carol-phone", "tab", *"10.77.0.9", "tab", "tab",
                   Paste("1.1.1.1, 9.9.9.9"), "tab", "tab", "tab", *"vpn.example.com")
        await wait_until(pilot, lambda: isinstance(app.screen, OnboardPeerScreen)
                         and _value(app, "#onboard-endpoint") == "vpn.example.com",
                         "the last field typed")
        typed.set()
        await wait_until(pilot, filled.is_set, "the defaults read")
        await _polls_go_on(pilot, app)
        assert _value(app, "#onboard-name") == "carol-phone"
        assert _value(app, "#onboard-address") == "10.77.0.9"
        assert _value(app, "#onboard-dns") == "1.1.1.1, 9.9.9.9"
        assert _value(app, "#onboard-endpoint") == "vpn.example.com"
        assert app.focused is app.screen.query_one("#onboard-endpoint")
        type_burst(app, "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        assert "add peer carol-phone to zcapwg1 (server only, 10.77.0.9" in screen_as(
            app, PlanScreen).plan_title


async def test_defaults_arriving_in_a_field_just_entered_give_way_to_typing(
        app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """The defaults come while the focus is in the (empty) address field, before the
    first character: the default is shown selected, and typing replaces it (it went
    before the typed address: "10.77.0.4, fd77::410.77.0.9")."""
    entered, filled = held_defaults(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        type_burst(app, "a", *"carol-phone", "tab")
        await wait_until(pilot, lambda: isinstance(app.screen, OnboardPeerScreen)
                         and app.focused is app.screen.query_one("#onboard-address"),
                         "the address field entered")
        entered.set()
        await wait_until(pilot, lambda: filled.is_set() and _value(app, "#onboard-address"),
                         "the default address")
        type_burst(app, *"10.77.0.9")
        await wait_until(pilot, lambda: _value(app, "#onboard-address").endswith("9"),
                         "the typing")
        assert _value(app, "#onboard-address") == "10.77.0.9"


async def test_a_burst_into_the_new_interface_form_loses_nothing(app: ZsnApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        type_burst(app, "N", *"wg7", "tab", *"10.70.0.1/24", "tab", "tab", *"51999", "tab",
                   Paste("vpn.example.org"))
        await wait_until(pilot, lambda: isinstance(app.screen, CreateInterfaceScreen)
                         and _value(app, "#create-endpoint") == "vpn.example.org",
                         "the typing")
        await _polls_go_on(pilot, app)
        assert [_value(app, f"#create-{key}") for key in ("interface", "ipv4", "ipv6", "port")] \
            == ["wg7", "10.70.0.1/24", "", "51999"]
        assert app.focused is app.screen.query_one("#create-endpoint")
        type_burst(app, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        assert "create WireGuard interface wg7 (10.70.0.1/24, port 51999)" \
            in screen_as(app, PlanScreen).plan_title


async def test_a_rename_typed_right_after_n_lands_in_the_dialog(app: ZsnApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        type_burst(app, "n", *"alice-tablet", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        assert "rename peer alice-laptop to alice-tablet" in screen_as(app, PlanScreen).plan_title


async def test_a_profile_path_pasted_into_the_import_form_lands_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    (root / "etc/openvpn/client").mkdir(parents=True)
    profile = tmp_path / "office.ovpn"
    profile.write_text("client\nremote vpn.example.net 1194\n")
    app = ZsnApp(Host(root), theme="zsn-night", refresh=POLL_SECONDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        type_burst(app, "2")  # the OpenVPN pane
        await wait_until(pilot, lambda: getattr(app.active_pane(), "id", None) == "openvpn",
                         "the OpenVPN pane")
        type_burst(app, "i", Paste(str(profile)), "tab", *"work")
        await wait_until(pilot, lambda: _value(app, "#import-name") == "work", "the typing")
        await _polls_go_on(pilot, app)
        assert _value(app, "#import-path") == str(profile)
        assert app.focused is app.screen.query_one("#import-name")
        type_burst(app, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        assert "import office.ovpn as openvpn-client@work" in screen_as(app, PlanScreen).plan_title


# -- item 7: forms speak the form's language ------------------------------------------


async def test_an_error_names_the_form_field_and_never_a_cli_flag(app: ZsnApp) -> None:
    # zcapwg1 has no endpoint stored yet, and none is typed.
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, OnboardPeerScreen), "the form")
        await pilot.press(*"carol", "ctrl+s")
        await wait_until(pilot, lambda: _error(app), "the refusal")
        assert _error(app).startswith("Endpoint: no endpoint is known for zcapwg1")
        assert "--" not in _error(app)
        assert app.screen.query_one("#onboard-endpoint").has_class("-refused")
        assert _value(app, "#onboard-name") == "carol", "what was typed stays"
        assert app.focused is app.screen.query_one("#onboard-name"), "the focus stays"


async def test_a_bad_rename_keeps_the_dialog_open_with_the_input(app: ZsnApp,
                                                                 root: Path) -> None:
    before = (root / "etc/wireguard/zcapwg1.conf").read_bytes()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, AskScreen), "the dialog")
        await pilot.press("ctrl+u", *"bad name!", "enter")
        await wait_until(pilot, lambda: _error(app), "the refusal")
        assert "not allowed" in _error(app) or "may only" in _error(app)
        assert _value(app, "#ask-input") == "bad name!"
        await pilot.press("ctrl+u", *"alice-tablet", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
    assert (root / "etc/wireguard/zcapwg1.conf").read_bytes() == before


async def test_v_on_a_peer_without_a_name_says_what_is_missing(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # zcapwg2's peer has no name comment in its config.
    client = fixed_snapshot().interfaces[1]
    (root / "etc/wireguard/zcapwg2.conf").write_text(
        "[Interface]\nListenPort = 51902\n\n[Peer]\n"
        f"PublicKey = {client.peers[0].public_key}\nAllowedIPs = 10.77.0.1/32\n")
    app = _app(root, monkeypatch, refresh=3600)
    shown: list[str] = []
    monkeypatch.setattr(app, "notify", lambda message, **kwargs: shown.append(message))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        app.query_one("#wg-interfaces", LiveTable).focus()
        await pilot.press("down", "enter", "v")
        await wait_until(pilot, lambda: shown, "the answer")
    assert "has no name (no comment above its [Peer] block)" in shown[0]
    assert "private key is on its device" in shown[0]


async def test_g_without_a_default_route_explains_and_asks(
        app: ZsnApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zsn.wireguard.device.default_route_device", lambda: None)
    monkeypatch.setattr("zsn.wireguard.routing.default_route_device", lambda: None)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("G")
        await wait_until(pilot, lambda: isinstance(app.screen, AskScreen), "the question")
        assert any("There is no default route here" in line for line in screen_text(app))
        await pilot.press("enter")
        await wait_until(pilot, lambda: _error(app), "the refusal")
        assert isinstance(app.screen, AskScreen), "it does not close silently"
        assert "there is no default route: give the outgoing interface" in _error(app)


def _finding(ident: str, fixable: bool) -> Finding:
    return Finding(ident, "warning", "zcapwg1", f"{ident} message", f"{ident} fix",
                   fix_plan=(lambda: Plan("fix")) if fixable else None)


async def test_lint_offers_f_only_on_a_finding_with_a_fix(app: ZsnApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        chosen: list[Finding | None] = []
        app.push_screen(FindingsScreen([_finding("WG006", True), _finding("WG004", False)]),
                        chosen.append)
        await wait_until(pilot, lambda: isinstance(app.screen, FindingsScreen)
                         and "f" in app.screen.active_bindings, "f on the fixable finding")
        await pilot.press("down")
        assert "f" not in app.screen.active_bindings, "the footer hides f"
        await pilot.press("f")
        assert isinstance(app.screen, FindingsScreen) and not chosen
        await pilot.press("up", "f")
        await wait_until(pilot, lambda: chosen, "the fix chosen")
        assert chosen[0] is not None and chosen[0].id == "WG006"


async def test_pickers_say_how_to_confirm(app: ZsnApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        app.push_screen(ChooseScreen("Route zcapwg1 to", [("zcapwg2", "zcapwg2")]))
        await wait_until(pilot, lambda: isinstance(app.screen, ChooseScreen), "the picker")
        await pilot.pause()
        enter = app.screen.active_bindings["enter"].binding
        assert enter.show and enter.description == "Choose"
        assert any("enter chooses, esc cancels" in line for line in screen_text(app))


async def test_notifications_wait_while_the_qr_code_is_shown(app: ZsnApp) -> None:
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, OnboardPeerScreen), "the form")
        app.screen.query_one("#onboard-endpoint", Input).value = "vpn.example.com"
        await pilot.press(*"carol", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        await pilot.press("y")
        await wait_until(pilot, lambda: isinstance(app.screen, ClientConfigScreen), "the QR")
        app.notify("a vanished interface, say")
        await pilot.pause(0.3)
        assert not any("Done" in line or "vanished" in line for line in screen_text(app))
        await pilot.press("escape")
        await wait_until(pilot, lambda: any("Done: add peer carol" in line
                                            for line in screen_text(app)), "the Done")
        assert any("vanished" in line for line in screen_text(app))


async def test_client_to_client_plan_speaks_of_keys(app: ZsnApp, root: Path) -> None:
    needs_tools("iptables")
    (root / "etc/sysctl.d").mkdir(parents=True)
    clients = root / "etc/wireguard/clients/zcapwg1"
    clients.mkdir(parents=True, mode=0o700)
    alice = parse((FIXTURES / "zcapwg1.conf").read_text()).require_peer("alice-laptop")
    (clients / "alice-laptop.conf").write_text(onboarding.render_client_config(
        name="alice-laptop", interface="zcapwg1", private_key=None,
        addresses=["10.77.0.2/32"], dns=[], server_public_key=alice.get("PublicKey") or "",
        preshared_key=None, allowed_ips=["10.77.0.1/32"], endpoint="vpn.example.com:51901",
        keepalive=25).render())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("C")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        text = screen_as(app, PlanScreen).text
    assert "re-import them on the clients (key v: QR code)" in text
    assert "zsn peer" not in text


async def test_the_palette_lists_each_command_once(app: ZsnApp) -> None:
    from textual.command import CommandPalette
    from textual.widgets import OptionList

    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")

        def titles_shown() -> list[str]:
            options = app.screen.query_one(OptionList)
            return [str(options.get_option_at_index(i).prompt).split("\n")[0]
                    for i in range(options.option_count)]

        # The palette lists commands as its worker gathers them.
        await wait_until(pilot, lambda: "Quit" in titles_shown(), "the commands listed")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        titles = titles_shown()
    assert len(titles) == len(set(titles)), titles
    assert [t for t in titles if "quit" in t.lower()] == ["Quit"]
    assert [t for t in titles if "refresh" in t.lower()] == ["Refresh"]
    assert [t for t in titles if t.lower() in ("help", "keys")] == ["Help"]
    assert "Theme" not in titles and "Theme: zsn-16" in titles


async def test_one_notification_per_openvpn_import(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    (root / "etc/openvpn/client").mkdir(parents=True)
    profile = tmp_path / "office.ovpn"
    profile.write_text("client\nremote vpn.example.net 1194\n")
    app = ZsnApp(Host(root), theme="zsn-night", refresh=3600)
    shown: list[str] = []
    notify = app.notify

    def notify_and_keep(message: str, **options: Any) -> None:
        shown.append(message)
        notify(message, **options)
    monkeypatch.setattr(app, "notify", notify_and_keep)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await wait_until(pilot, lambda: getattr(app.active_pane(), "id", None) == "openvpn",
                         "the OpenVPN pane")
        shown_text = " ".join(line.strip() for line in screen_text(app))
        assert "Press i to import a .ovpn profile" in shown_text
        await pilot.press("i")
        await wait_until(pilot, lambda: len(app.screen.query("#import-path")), "the form")
        app.screen.query_one("#import-path", Input).value = str(profile)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan")
        await pilot.press("y")
        await wait_until(pilot, (root / "etc/openvpn/client/office.conf").exists, "the import")
        await wait_until(pilot, lambda: shown, "the Done")
        await pilot.pause(0.3)  # no second notice follows
    assert shown == ["Done: import office.ovpn as openvpn-client@office.service"]



def test_snapshot_refused_onboarding_form_80x24(snap_compare: SnapCompare, root: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(root, monkeypatch, refresh=3600)

    async def refused(pilot: Pilot[int]) -> None:
        await wait_for_rows(pilot)
        await pilot.press("a")
        await wait_until(pilot, lambda: _value(app, "#onboard-address"), "the defaults")
        await pilot.press(*"carol", "ctrl+s")
        await wait_until(pilot, lambda: _error(app), "the refusal")

    assert snap_compare(app, terminal_size=(80, 24), run_before=refused)


def test_snapshot_gateway_without_a_default_route_80x24(snap_compare: SnapCompare, root: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zsn.wireguard.device.default_route_device", lambda: None)
    app = _app(root, monkeypatch, refresh=3600)

    async def asked(pilot: Pilot[int]) -> None:
        await wait_for_rows(pilot)
        await pilot.press("G")
        await wait_until(pilot, lambda: isinstance(app.screen, AskScreen), "the question")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=asked)
