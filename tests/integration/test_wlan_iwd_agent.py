"""zsn's iwd passphrase agent over a real (private) D-Bus system bus.

A stand-in for iwd's side of the agent protocol (doc/agent-api.txt) owns
net.connman.iwd on the bus: RegisterAgent remembers who registered, and
Network.Connect asks that agent for the passphrase as iwd does. It asks a second
time after a wrong answer, which iwd 2.3 in the lab does not do (it fails the
connect at once): zsn must refuse such a request rather than repeat a passphrase
that was just rejected. The real iwd is exercised in the kernel lab
(tests/kernel/test_wlan.py); here the bus plumbing, the one-answer rule and the
refusals are checked, and that the passphrase goes nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from dbus_fast import BusType, Message, MessageType
from dbus_fast.aio import MessageBus

from tests.lab.dbus import private_system_bus
from zsn.system import iwd as bus_iwd
from zsn.system.dbus import SystemBus
from zsn.system.host import Host
from zsn.system.iwd_agent import AGENT, CANCELED
from zsn.wlan.actions import iwd_failure

pytestmark = pytest.mark.lab
STATION = "/net/connman/iwd/0/3"
NETWORK = "/net/connman/iwd/0/3/686f6d652d77706132_psk"
OTHER = "/net/connman/iwd/0/3/636166652d6f70656e_open"
RIGHT = "correct horse battery"


class FakeIwd:
    """iwd's half of the agent protocol, on its own bus connection."""

    def __init__(self, bus: MessageBus, *, ask_for: str = NETWORK, misses: int = 0) -> None:
        self.bus = bus
        self.ask_for = ask_for
        self.misses = misses
        """ConnectHiddenNetwork calls answered NotFound before the network is found."""
        self.hidden_calls: list[str] = []
        self.agent: tuple[str, str] | None = None
        self.answers: list[str] = []
        self.errors: list[str] = []
        bus.add_message_handler(self.handle)

    def handle(self, message: Message) -> Message | bool | None:
        if message.message_type != MessageType.METHOD_CALL:
            return None
        if message.member == "RegisterAgent":
            self.agent = (str(message.sender), message.body[0])
            return Message.new_method_return(message)
        if message.member == "UnregisterAgent":
            self.agent = None
            return Message.new_method_return(message)
        if message.member == "Connect" and message.path in (NETWORK, OTHER):
            asyncio.ensure_future(self.connect(message))
            return True
        if message.member == "ConnectHiddenNetwork" and message.path == STATION:
            self.hidden_calls.append(message.body[0])
            if len(self.hidden_calls) <= self.misses:  # no probe response in this scan
                return Message.new_error(message, "net.connman.iwd.NotFound",
                                         "Object not found")
            self.ask_for = f"{STATION}/{message.body[0].encode().hex()}_psk"
            asyncio.ensure_future(self.connect(message))
            return True
        return None

    async def ask(self) -> Message:
        assert self.agent is not None
        reply = await self.bus.call(Message(
            destination=self.agent[0], path=self.agent[1], interface=AGENT,
            member="RequestPassphrase", signature="o", body=[self.ask_for]))
        assert reply is not None
        return reply

    async def connect(self, message: Message) -> None:
        for _attempt in range(2):  # iwd asks again when the handshake fails
            reply = await self.ask()
            if reply.message_type == MessageType.ERROR:
                self.errors.append(str(reply.error_name))
                break
            self.answers.append(reply.body[0])
            if reply.body[0] == RIGHT:
                await self.bus.send(Message.new_method_return(message))
                return
        await self.bus.send(Message.new_error(message, "net.connman.iwd.Failed",
                                              "Operation failed"))


async def _with_fake_iwd(root: Path, passphrase: str | None, *, ask_for: str = NETWORK,
                         network: str = NETWORK) -> tuple[FakeIwd, Any]:
    host = Host(root)
    iwd_bus = await MessageBus(bus_address=host.system_bus_address,
                               bus_type=BusType.SYSTEM).connect()
    await iwd_bus.request_name(bus_iwd.IWD)
    fake = FakeIwd(iwd_bus, ask_for=ask_for)
    try:
        async with SystemBus(host) as bus:
            try:
                result: Any = await bus_iwd.connect(bus, network=network, station="/s",
                                                    hidden_ssid=None, passphrase=passphrase,
                                                    timeout=10)
            except bus_iwd.ConnectError as exc:
                result = exc
    finally:
        iwd_bus.disconnect()
    return fake, result


@pytest.fixture
def bus_root(tmp_path: Path) -> Any:
    root = tmp_path / "root"
    with private_system_bus(root):
        yield root


def test_the_agent_answers_once_with_the_passphrase(bus_root: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake, log = asyncio.run(_with_fake_iwd(bus_root, RIGHT))
    assert fake.answers == [RIGHT] and fake.errors == []
    assert log.requests == [NETWORK] and log.refused == []
    assert fake.agent is None  # unregistered again
    assert RIGHT not in caplog.text and RIGHT not in repr(log)


def test_a_rejected_passphrase_is_not_given_twice(bus_root: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake, error = asyncio.run(_with_fake_iwd(bus_root, "wrong passphrase 1"))
    assert isinstance(error, bus_iwd.ConnectError)
    assert fake.answers == ["wrong passphrase 1"]
    assert fake.errors == [CANCELED]
    assert error.log.requests == [NETWORK, NETWORK] and error.log.refused == [NETWORK]
    message = iwd_failure("home-wpa2", error)
    assert message == ("home-wpa2: wrong passphrase (the access point rejected it and iwd "
                       "asked again)")
    assert "wrong passphrase 1" not in caplog.text + message + str(error)


def test_requests_for_another_network_are_refused(bus_root: Path) -> None:
    fake, error = asyncio.run(_with_fake_iwd(bus_root, RIGHT, ask_for=OTHER))
    assert isinstance(error, bus_iwd.ConnectError) and fake.answers == []
    assert fake.errors == [CANCELED] and error.log.refused == [OTHER]


async def _hidden_with_fake_iwd(root: Path, misses: int) -> tuple[FakeIwd, Any]:
    host = Host(root)
    iwd_bus = await MessageBus(bus_address=host.system_bus_address,
                               bus_type=BusType.SYSTEM).connect()
    await iwd_bus.request_name(bus_iwd.IWD)
    fake = FakeIwd(iwd_bus, misses=misses)
    try:
        async with SystemBus(host) as bus:
            try:
                result: Any = await bus_iwd.connect_hidden(
                    bus, station=STATION, ssid=b"hidden-wpa2", passphrase=RIGHT, timeout=10)
            except bus_iwd.ConnectError as exc:
                result = exc
    finally:
        iwd_bus.disconnect()
    return fake, result


def test_a_hidden_network_missed_by_one_scan_is_probed_for_again(bus_root: Path) -> None:
    """iwd's ConnectHiddenNetwork scans once: a lost probe response is NotFound. zsn
    asks again, and the passphrase goes to the network iwd then found."""
    fake, log = asyncio.run(_hidden_with_fake_iwd(bus_root, misses=bus_iwd.HIDDEN_SCANS - 1))
    assert fake.hidden_calls == ["hidden-wpa2"] * bus_iwd.HIDDEN_SCANS
    assert fake.answers == [RIGHT]
    assert log.requests == [f"{STATION}/{b'hidden-wpa2'.hex()}_psk"]


def test_a_hidden_network_not_found_in_every_scan_says_so(bus_root: Path) -> None:
    fake, error = asyncio.run(_hidden_with_fake_iwd(bus_root, misses=bus_iwd.HIDDEN_SCANS))
    assert isinstance(error, bus_iwd.ConnectError)
    assert len(fake.hidden_calls) == bus_iwd.HIDDEN_SCANS and fake.answers == []
    assert fake.agent is None  # unregistered again
    assert iwd_failure("hidden-wpa2", error, hidden=True) == (
        "hidden-wpa2: not found in 3 scans probing for it by name (out of range, or the "
        "name differs)")
