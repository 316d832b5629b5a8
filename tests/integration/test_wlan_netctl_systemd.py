"""``zsn wifi autoconnect`` for netctl against a real systemd (a booted container).

netctl is not packaged for Debian, so its template unit is put in the container by
hand (the content of netctl's services/netctl@.service); nothing starts it. What is
checked is what `netctl enable` does and zsn does the same way: the link in
multi-user.target.wants, the profile.conf drop-in, and the reload over D-Bus, after
which systemd reads the drop-in (the unit's description is the profile's) and sees
the unit enabled; disabling undoes all of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.lab.container import Container, booted_container
from tests.lab.netns import Lab, require_lab
from zsn.plan import Plan
from zsn.system.dbus import (
    SYSTEMD,
    SYSTEMD_MANAGER,
    SYSTEMD_PATH,
    SYSTEMD_UNIT,
    SystemBus,
    run_sync,
)
from zsn.wlan import actions, netctl

pytestmark = pytest.mark.lab
PROFILE = "wlan0-home wpa2"
TEMPLATE = """[Unit]
Description=Networking for netctl profile %I
Documentation=man:netctl.profile(5)
Before=netctl.service
Wants=network.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/lib/netctl/network start %I
ExecStop=/usr/lib/netctl/network stop %I
KillMode=none
"""


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    require_lab(("ip", "systemd-nspawn", "debootstrap"))
    lab = Lab()
    try:
        with booted_container(lab, lab.namespace("nc")) as booted:
            yield booted
    finally:
        lab.close()


def _unit(container: Container, name: str) -> dict[str, Any]:
    async def read(bus: SystemBus) -> dict[str, Any]:
        (path,) = await bus.call(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER, "LoadUnit", "s",
                                 [name])
        return await bus.get_all(SYSTEMD, path, SYSTEMD_UNIT)

    return run_sync(container.host, read)


def test_enable_and_disable_as_netctl_does(container: Container) -> None:
    root = container.root
    (root / "usr/lib/systemd/system/netctl@.service").write_text(TEMPLATE)
    (root / "etc/netctl").mkdir(parents=True, exist_ok=True)
    (root / "etc/netctl" / PROFILE).write_text(
        "Description='Automatically generated profile by wifi-menu'\nInterface=wlan0\n"
        "Connection=wireless\nSecurity=none\nESSID='home wpa2'\nIP=dhcp\n")
    unit = netctl.unit_name(PROFILE)
    assert unit == "netctl@wlan0\\x2dhome\\x20wpa2.service"
    host = container.host
    assert actions.systemd_reachable(host)

    Plan("enable", actions.netctl_enable_steps(host, PROFILE, True)).apply()
    link = root / "etc/systemd/system/multi-user.target.wants" / unit
    assert link.is_symlink() and str(link.readlink()) == netctl.TEMPLATE_UNIT
    state = _unit(container, unit)
    assert state["Description"] == "Automatically generated profile by wifi-menu"
    assert any(p.endswith(f"{unit}.d/profile.conf") for p in state["DropInPaths"])
    assert "sys-subsystem-net-devices-wlan0.device" in state["BindsTo"]
    assert state["UnitFileState"] == "enabled"
    assert netctl.is_enabled(host, PROFILE)

    Plan("disable", actions.netctl_enable_steps(host, PROFILE, False)).apply()
    assert not link.is_symlink()
    state = _unit(container, unit)
    assert state["Description"] != "Automatically generated profile by wifi-menu"
    assert state["UnitFileState"] != "enabled"
    assert not netctl.is_enabled(host, PROFILE)
