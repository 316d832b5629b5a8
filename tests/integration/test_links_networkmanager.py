"""Is NetworkManager in charge? Asked over a real dbus-daemon (a private system bus
under a --root tree), answered by a stand-in that speaks NetworkManager's interface:
NetworkManager itself is not installed on test hosts, and must not manage them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.dbus import private_system_bus
from tests.lab.netns import stop_process
from zsn.links import actions
from zsn.links.persist.owner import detect_owner
from zsn.system.host import Host
from zsn.system.networkmanager import managed_devices

pytestmark = pytest.mark.lab

# No `from __future__ import annotations`: dbus-fast reads the signature annotations.
STAND_IN = textwrap.dedent('''
    import asyncio, sys
    from dbus_fast import BusType, DBusError, PropertyAccess
    from dbus_fast.aio import MessageBus
    from dbus_fast.service import ServiceInterface, dbus_property, method

    DEVICES = {"eth1": ("/org/freedesktop/NetworkManager/Devices/1", True),
               "eth2": ("/org/freedesktop/NetworkManager/Devices/2", False)}

    class Manager(ServiceInterface):
        def __init__(self):
            super().__init__("org.freedesktop.NetworkManager")

        @method()
        def GetDeviceByIpIface(self, iface: "s") -> "o":
            if iface not in DEVICES:
                raise DBusError("org.freedesktop.NetworkManager.UnknownDevice",
                                "No device found for the requested iface.")
            return DEVICES[iface][0]

    class Device(ServiceInterface):
        def __init__(self, managed):
            super().__init__("org.freedesktop.NetworkManager.Device")
            self._managed = managed

        @dbus_property(access=PropertyAccess.READ)
        def Managed(self) -> "b":
            return self._managed

    async def main():
        bus = await MessageBus(bus_address=sys.argv[1], bus_type=BusType.SYSTEM).connect()
        bus.export("/org/freedesktop/NetworkManager", Manager())
        for path, managed in DEVICES.values():
            bus.export(path, Device(managed))
        await bus.request_name("org.freedesktop.NetworkManager")
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
''')


@pytest.fixture
def nm_root(tmp_path: Path) -> Iterator[Path]:
    with private_system_bus(tmp_path) as socket:
        stand_in = subprocess.Popen([sys.executable, "-c", STAND_IN, f"unix:path={socket}"],
                                    stdout=subprocess.PIPE, text=True)
        try:
            assert stand_in.stdout is not None
            assert stand_in.stdout.readline().strip() == "ready"
            yield tmp_path
        finally:
            stop_process(stand_in, grace=10)


def test_managed_devices_over_the_bus(nm_root: Path) -> None:
    host = Host(nm_root)
    assert managed_devices(host, ["eth1", "eth2", "eth9"]) == {"eth1": True, "eth2": False}


def test_networkmanager_owns_what_it_manages_and_gets_nmcli_commands(nm_root: Path) -> None:
    (nm_root / "etc/netplan").mkdir(parents=True)
    (nm_root / "etc/netplan/01.yaml").write_text("network:\n  version: 2\n")
    host = Host(nm_root)
    assert detect_owner(host, ["eth1"]).name == "networkmanager"
    assert detect_owner(host, ["eth2", "eth9"]).name == "netplan"  # not managed: files
    from tests.unit.links.conftest import captured_snapshot

    context = actions.Context(host, captured_snapshot(), set())
    only_config = actions.Options(config_only=True)
    on_files = actions.plan_create_bridge(context, "br9", ["eth2"], options=only_config)
    assert [step.path.name for step in on_files.steps] == ["01.yaml"]  # type: ignore[union-attr]
    managed = actions.plan_create_bridge(context, "br9", ["eth1"], options=only_config)
    assert not managed.steps
    assert any("NetworkManager runs and manages eth1" in w for w in managed.warnings)
    assert managed.output.splitlines() == [
        "nmcli connection add type bridge con-name br9 ifname br9 bridge.stp no "
        "ipv4.method disabled ipv6.method disabled",
        "nmcli connection add type ethernet con-name br9-port-eth1 ifname eth1 master br9 "
        "slave-type bridge"]


def test_without_a_bus_networkmanager_is_not_running(tmp_path: Path) -> None:
    assert managed_devices(Host(tmp_path), ["eth1"]) is None
