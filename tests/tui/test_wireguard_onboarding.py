"""Onboarding and peer actions in the WireGuard pane, driven by keys only, on a --root tree."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, Static

from tests.needs import needs_tools
from tests.pilot import screen_as, wait_for_rows, wait_until
from tests.tui.captured import FIXTURES
from tests.tui.conftest import SnapCompare
from zsn.tui.app import ZsnApp
from zsn.tui.screens.client_config import ClientConfigScreen
from zsn.tui.screens.create_interface import CreateInterfaceScreen
from zsn.tui.screens.findings import FindingsScreen
from zsn.tui.screens.onboarding import OnboardPeerScreen
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.table import LiveTable
from zsn.wireguard.config import parse
from zsn.wireguard.onboarding import render_client_config


@pytest.fixture
def app(tree_app: ZsnApp) -> ZsnApp:
    return tree_app


async def _wait_for_screen(pilot: Pilot[int], kind: type[Screen[Any]]) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, kind),
                     f"{kind.__name__} to open")


async def _wait_for(pilot: Pilot[int], predicate: Callable[[], object]) -> None:
    await wait_until(pilot, predicate)


async def test_onboarding_by_keys_writes_configs_and_shows_the_qr(app: ZsnApp,
                                                                   root: Path) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("a")
        await _wait_for_screen(pilot, OnboardPeerScreen)
        form = app.screen
        address = form.query_one("#onboard-address", Input)
        await _wait_for(pilot, lambda: address.value == "10.77.0.4, fd77::4")
        await pilot.press(*"carol")
        await pilot.press("tab", "tab")  # name -> address -> profile
        await pilot.press("down", "enter")  # whole VPN subnet
        await pilot.press("tab", "tab", "tab", "tab")  # dns, keepalive, psk, endpoint
        await pilot.press(*"vpn.example.com")
        await pilot.press("ctrl+s")
        await _wait_for_screen(pilot, PlanScreen)
        assert "add peer carol to zcapwg1 (whole VPN subnet" in screen_as(
            app, PlanScreen).plan_title
        await pilot.press("y")
        await _wait_for_screen(pilot, ClientConfigScreen)
        shown = screen_as(app, ClientConfigScreen).config_text
        assert "AllowedIPs = 10.77.0.0/24, fd77::/64" in shown
        assert "Endpoint = vpn.example.com:51901" in shown
        body = str(app.screen.query_one("#client-config-text", Static).render())
        assert "PrivateKey = (hidden)" in body
    client = root / "etc/wireguard/clients/zcapwg1/carol.conf"
    assert client.read_text() == shown
    assert stat.S_IMODE(client.stat().st_mode) == 0o600
    server = parse((root / "etc/wireguard/zcapwg1.conf").read_text())
    assert server.require_peer("carol").get_all("AllowedIPs") == ["10.77.0.4/32", "fd77::4/128"]


async def test_bad_input_keeps_the_form_open_and_writes_nothing(app: ZsnApp, root: Path) -> None:
    before = (root / "etc/wireguard/zcapwg1.conf").read_bytes()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("a")
        await _wait_for_screen(pilot, OnboardPeerScreen)
        await pilot.press(*"bad name", "ctrl+s")
        error = app.screen.query_one(".form-error", Static)
        await _wait_for(pilot, lambda: error.display)
        assert "not allowed" in str(error.render())
        assert isinstance(app.screen, OnboardPeerScreen)
        await pilot.press("escape")
    assert (root / "etc/wireguard/zcapwg1.conf").read_bytes() == before
    assert not (root / "etc/wireguard/clients").exists()


async def test_disable_shows_the_plan_and_comments_the_block_out(app: ZsnApp,
                                                                  root: Path) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        peers = app.query_one("#wg-peers", LiveTable)
        assert peers.row_count == 2
        await pilot.press("down", "e")  # bob-site
        await _wait_for_screen(pilot, PlanScreen)
        assert "disable peer bob-site" in screen_as(app, PlanScreen).plan_title
        await pilot.press("y")
        await _wait_for(pilot, lambda: "#[disabled] [Peer]" in
                        (root / "etc/wireguard/zcapwg1.conf").read_text())
    config = parse((root / "etc/wireguard/zcapwg1.conf").read_text())
    assert [p.name for p in config.peers] == ["alice-laptop"]


async def test_lint_line_and_one_key_fix(app: ZsnApp, root: Path) -> None:
    os.chmod(root / "etc/wireguard/zcapwg1.conf", 0o644)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        line = app.query_one("#wg-findings", Static)
        await _wait_for(pilot, lambda: line.display)
        assert "WG006" in str(line.render())
        await pilot.press("l")
        await _wait_for_screen(pilot, FindingsScreen)
        await pilot.press("f")
        await _wait_for_screen(pilot, PlanScreen)
        await pilot.press("y")
        await _wait_for(pilot, lambda: not stat.S_IMODE(
            (root / "etc/wireguard/zcapwg1.conf").stat().st_mode) & 0o077)


def _fixed_client_config() -> str:
    # Throwaway keys from the lab capture (fixtures/wireguard/zcapwg1.conf): stable bytes.
    config = parse((FIXTURES / "zcapwg1.conf").read_text())
    alice = config.require_peer("alice-laptop")
    return render_client_config(
        name="alice-laptop", interface="zcapwg1",
        private_key="0EERySwwME/UXHGdbYYo2lZbGszSZV83hLjwWXQQYEI=",
        addresses=["10.77.0.2/32"], dns=[], server_public_key=alice.get("PublicKey") or "",
        preshared_key=alice.get("PresharedKey"), allowed_ips=["10.77.0.0/24"],
        endpoint="vpn.example.com:51901", keepalive=25).render()


def test_snapshot_qr_screen_80x24(snap_compare: SnapCompare, app: ZsnApp) -> None:
    async def open_qr(pilot: Pilot[int]) -> None:
        await wait_for_rows(pilot)
        pilot.app.push_screen(ClientConfigScreen("alice-laptop on zcapwg1",
                                                 _fixed_client_config()))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_qr)


async def test_palette_lists_pane_actions(app: ZsnApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Add peer")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await _wait_for_screen(pilot, OnboardPeerScreen)


async def test_client_to_client_from_the_pane(app: ZsnApp, root: Path) -> None:
    needs_tools("iptables")
    (root / "etc/sysctl.d").mkdir(parents=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("C")
        await _wait_for_screen(pilot, PlanScreen)
        assert "let clients of zcapwg1 reach each other" in screen_as(app, PlanScreen).plan_title
        await pilot.press("y")
        config = root / "etc/wireguard/zcapwg1.conf"
        await _wait_for(pilot, lambda: "PostUp = iptables -A FORWARD -i %i -o %i -j ACCEPT"
                        in config.read_text())
    assert "net.ipv4.ip_forward = 1" in (root / "etc/sysctl.d/99-zsn-wireguard.conf").read_text()


async def test_create_interface_by_keys(app: ZsnApp, root: Path) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("N")
        await _wait_for_screen(pilot, CreateInterfaceScreen)
        await pilot.press(*"wg7", "tab", *"10.70.0.0/24", "ctrl+s")
        error = app.screen.query_one(".form-error", Static)
        await _wait_for(pilot, lambda: error.display)
        assert "network address" in str(error.render())
        await pilot.press("shift+tab")  # back to the address: fix it
        address = app.screen.query_one("#create-ipv4", Input)
        address.value = "10.70.0.1/24"
        await pilot.press("ctrl+s")
        await _wait_for_screen(pilot, PlanScreen)
        await pilot.press("y")
        path = root / "etc/wireguard/wg7.conf"
        await _wait_for(pilot, path.exists)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "ListenPort = 51820" in path.read_text()


async def test_the_new_interface_form_suggests_what_is_free(app: ZsnApp, root: Path) -> None:
    """Pre-filled, not placeholders: a name, a port and a subnet no config uses (the
    captured zcapwg1 takes 10.77.0.1/24 and its port), which ctrl+s keeps as they are."""
    (root / "etc/wireguard/wg0.conf").write_text(
        "[Interface]\nAddress = 10.66.0.1/24\nListenPort = 51820\nPrivateKey = "
        "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=\n")
    (root / "etc/wireguard/wg0.conf").chmod(0o600)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_rows(pilot)
        await pilot.press("N")
        await _wait_for_screen(pilot, CreateInterfaceScreen)
        port = app.screen.query_one("#create-port", Input)
        await _wait_for(pilot, lambda: port.value)
        values = {key: app.screen.query_one(f"#create-{key}", Input).value
                  for key in ("interface", "ipv4", "port")}
        assert values == {"interface": "wg1", "ipv4": "10.66.1.1/24", "port": "51821"}
        await pilot.press("ctrl+s")
        await _wait_for_screen(pilot, PlanScreen)
        await pilot.press("y")
        path = root / "etc/wireguard/wg1.conf"
        await _wait_for(pilot, path.exists)
    assert "Address = 10.66.1.1/24" in path.read_text() and "ListenPort = 51821" in path.read_text()
