"""Every read from a daemon or a program has an overall deadline and a size cap
(issue 10, item 1): sockets that trickle or flood, programs that stall or flood,
a system bus that does either, all fail in bounded time and memory with an error
that names the limit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.hostile import hostile_socket
from zsn.errors import CommandError, SocketError, ZsnError
from zsn.exporter import document as export
from zsn.openvpn import management
from zsn.openvpn.connections import connections
from zsn.system import commands, files
from zsn.system.dbus import BusError, SystemBus
from zsn.system.host import Host
from zsn.wireguard import interfaces, uapi


@pytest.fixture
def short_socket_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer.
    import tempfile

    with tempfile.TemporaryDirectory(prefix="zsn-") as directory:
        yield Path(directory)


def timed(call: object) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        call()  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 - the caller checks what it was
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


def test_uapi_read_from_a_trickling_socket_stops_at_the_deadline(
        short_socket_dir: Path) -> None:
    with hostile_socket(short_socket_dir / "wgt.sock", "trickle") as path:
        error, seconds = timed(lambda: uapi.get_device(path, timeout=1.5))
    assert isinstance(error, SocketError), error
    assert "no complete answer within 1.5 s" in str(error)
    assert seconds < 4


def test_uapi_read_from_a_flooding_socket_stops_at_the_cap(short_socket_dir: Path) -> None:
    with hostile_socket(short_socket_dir / "wgf.sock", "flood") as path:
        error, seconds = timed(lambda: uapi.exchange(path, "get=1\n\n", timeout=20,
                                                     max_bytes=4 << 20))
    assert isinstance(error, SocketError), error
    assert "answer larger than 4 MiB" in str(error)
    assert seconds < 10


@pytest.mark.parametrize("mode", ["trickle", "flood", "lines"])
def test_management_query_is_bounded(short_socket_dir: Path, mode: str) -> None:
    with hostile_socket(short_socket_dir / f"{mode}.sock", mode) as path:
        error, seconds = timed(lambda: management.query(
            management.Endpoint(unix_path=path), timeout=1.5, max_bytes=4 << 20))
    assert isinstance(error, SocketError), error
    assert seconds < 4
    if mode == "flood":
        assert "larger than 4 MiB" in str(error)


def test_a_program_that_floods_is_stopped_at_the_cap() -> None:
    error, seconds = timed(lambda: commands.run(["yes", "flood"], timeout=20,
                                                max_output=1 << 20))
    assert isinstance(error, CommandError), error
    assert str(error) == "yes: answer larger than 1 MiB; stopped reading"
    assert seconds < 10


def test_a_program_that_trickles_is_stopped_at_the_deadline() -> None:
    script = "while :; do printf x; sleep 0.2; done"
    error, seconds = timed(lambda: commands.run(["sh", "-c", script], timeout=1.0))
    assert isinstance(error, CommandError) and "no answer within 1 s" in str(error)
    assert seconds < 3


def test_a_child_left_holding_the_output_does_not_hold_zsn() -> None:
    # sh exits at once; the sleep it started keeps stdout open for 30 s.
    error, seconds = timed(lambda: commands.run(["sh", "-c", "sleep 30 & echo started"],
                                                timeout=1.0))
    assert error is None, error
    assert seconds < 3


def test_input_and_output_still_pass_through() -> None:
    result = commands.run(["cat"], input_text="line one\nline two\n")
    assert result.stdout == "line one\nline two\n"


@pytest.mark.parametrize("mode", ["trickle", "flood"])
def test_a_hostile_system_bus_becomes_a_bus_error(short_socket_dir: Path, mode: str) -> None:
    tree = short_socket_dir
    with hostile_socket(tree / "run/dbus/system_bus_socket", mode):
        async def connect() -> None:
            async with SystemBus(Host(tree), timeout=1.5):
                pass

        error, seconds = timed(lambda: asyncio.run(connect()))
    assert isinstance(error, BusError), repr(error)
    assert seconds < 4


def test_openvpn_connections_report_a_hostile_bus_and_go_on(short_socket_dir: Path) -> None:
    tree = short_socket_dir
    (tree / "etc/openvpn/client").mkdir(parents=True)
    (tree / "etc/openvpn/client/office.conf").write_text("client\nremote 192.0.2.1\n")
    with hostile_socket(tree / "run/dbus/system_bus_socket", "flood"):
        error, seconds = timed(lambda: connections(Host(tree)))
        [conn] = connections(Host(tree))
    assert error is None or isinstance(error, ZsnError)
    assert conn.errors and "system bus" in conn.errors[0]
    assert seconds < 15


@pytest.mark.parametrize("mode", ["trickle", "flood"])
def test_peer_add_on_a_hostile_interface_fails_cleanly(short_socket_dir: Path,
                                                       mode: str) -> None:
    tree = short_socket_dir
    interfaces.plan_create_interface(Host(tree), "wgbad", ["10.66.0.1/24"], 51820,
                                     "vpn.example.com").apply()
    with hostile_socket(tree / "run/wireguard/wgbad.sock", mode):
        before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "zsn", "--root", str(tree), "peer", "add", "wgbad", "alice"],
            capture_output=True, text=True, timeout=60, check=False)
        seconds = time.monotonic() - started
        after = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("zsn peer: error: ") and "wgbad.sock" in line
    assert seconds < uapi.DEFAULT_TIMEOUT + 10
    assert result.stdout == ""
    assert after == before


def test_a_fifo_or_a_huge_file_in_place_of_a_config_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "etc/wireguard").mkdir(parents=True)
    os.mkfifo(tmp_path / "etc/wireguard/wg0.conf")  # would block a plain open() forever
    (tmp_path / "etc/hostname").symlink_to("/dev/zero")  # would stream forever
    error, seconds = timed(lambda: export.collect(Host(tmp_path), ["wireguard"]))
    assert error is None, error
    assert seconds < 5
    assert host_name(tmp_path) == "localhost"
    with pytest.raises(ZsnError, match="not a regular file"):
        files.read_tracked(tmp_path / "etc/wireguard/wg0.conf")
    big = tmp_path / "big.conf"
    big.write_bytes(b"#" * 2048)
    with pytest.raises(ZsnError, match="larger than 1024 bytes"):
        files.read_tracked(big, max_bytes=1024)


def host_name(root: Path) -> str:
    return files.read_hostname(Host(root))
