"""NetworkManager, read only, over a real (private) D-Bus system bus.

A stand-in owns org.freedesktop.NetworkManager and answers the calls zsn makes
(GetDeviceByIpIface, the Device, Device.Wireless and AccessPoint properties), with
values shaped as NetworkManager documents them (NMDeviceState, Strength in percent,
Bitrate in kbit/s). NetworkManager itself is not in the labs; this checks zsn's
reading and the read-only refusal, not NetworkManager's behaviour.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from tests.lab.dbus import private_system_bus
from zsn.system.dbus import PROPERTIES, SystemBus
from zsn.system.host import Host
from zsn.system.networkmanager import NM, NM_DEVICE
from zsn.wlan import nm

pytestmark = pytest.mark.lab
DEVICE_PATH = "/org/freedesktop/NetworkManager/Devices/3"
AP_PATH = "/org/freedesktop/NetworkManager/AccessPoint/7"
PROPERTIES_BY_PATH: dict[str, dict[str, dict[str, Variant]]] = {
    DEVICE_PATH: {
        NM_DEVICE: {"Managed": Variant("b", True), "State": Variant("u", 100),
                    "Interface": Variant("s", "wlp3s0")},
        nm.WIRELESS: {"ActiveAccessPoint": Variant("o", AP_PATH),
                      "Bitrate": Variant("u", 144400)},
    },
    AP_PATH: {nm.ACCESS_POINT: {"Ssid": Variant("ay", b"office"), "Strength": Variant("y", 80),
                                "Frequency": Variant("u", 5180),
                                "HwAddress": Variant("s", "AA:BB:CC:00:11:22")}},
}


def _answer(message: Message) -> Message | None:
    if message.message_type != MessageType.METHOD_CALL:
        return None
    if message.member == "GetDeviceByIpIface":
        if message.body[0] == "wlp3s0":
            return Message.new_method_return(message, "o", [DEVICE_PATH])
        return Message.new_error(message, "org.freedesktop.NetworkManager.UnknownDevice",
                                 "No device found for the requested iface.")
    if message.interface == PROPERTIES and message.member == "GetAll":
        props = PROPERTIES_BY_PATH.get(str(message.path), {}).get(message.body[0], {})
        return Message.new_method_return(message, "a{sv}", [props])
    return None


async def _managed(root: Path, names: list[str]) -> dict[str, nm.NmDevice]:
    host = Host(root)
    service = await MessageBus(bus_address=host.system_bus_address,
                               bus_type=BusType.SYSTEM).connect()
    await service.request_name(NM)
    service.add_message_handler(_answer)
    try:
        async with SystemBus(host) as bus:
            return await nm.managed_devices(bus, names)
    finally:
        service.disconnect()


@pytest.fixture
def bus_root(tmp_path: Path) -> Any:
    root = tmp_path / "root"
    with private_system_bus(root):
        yield root


def test_a_managed_device_is_read_only_with_its_link(bus_root: Path) -> None:
    found = asyncio.run(_managed(bus_root, ["wlp3s0", "wlan9"]))
    assert list(found) == ["wlp3s0"]
    device = found["wlp3s0"]
    link = device.link
    assert (link.state, link.connected, link.ssid, link.bssid, link.frequency,
            link.bitrate_kbps) == ("activated", True, b"office", "aa:bb:cc:00:11:22", 5180,
                                   144400)
    assert link.signal_dbm == pytest.approx(-34.0)  # 80 % on NetworkManager's scale
    assert "nmcli device wifi connect SSID --ask ifname wlp3s0" in device.hint


def test_no_networkmanager_on_the_bus(bus_root: Path) -> None:
    async def ask() -> dict[str, nm.NmDevice]:
        async with SystemBus(Host(bus_root)) as bus:
            return await nm.managed_devices(bus, ["wlp3s0"])

    assert asyncio.run(ask()) == {}
