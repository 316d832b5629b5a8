"""wpa_supplicant's control socket: an asyncio datagram client that binds its own socket.

The daemon listens on ``/run/wpa_supplicant/IFACE`` (a unix datagram socket) and
answers each command with one datagram to the sender's address, so a client binds
a socket of its own first (wpa_ctrl uses ``/tmp/wpa_ctrl_PID-N``; zsn a private
directory it removes again). A second socket sends ``ATTACH`` and then receives
``<N>CTRL-EVENT-...`` events; on the command socket no event interleaves with
replies. Every datagram has a size cap, every request a deadline (`timeout`) and the
whole conversation one more (`conversation`, from opening the socket): a daemon that
answers each request just in time, with an endless chain of ``BSS NEXT`` replies,
is stopped there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from zsn.errors import SocketAccessDeniedError, SocketError, ZsnError
from zsn.system import files
from zsn.system.host import Host, confine
from zsn.system.limits import Deadline

CONTROL_DIR = "/run/wpa_supplicant"
DEFAULT_TIMEOUT = 5.0
CONVERSATION_TIMEOUT = 60.0
"""The longest a conversation may take: a connect waits up to 30 s for the daemon's
events, then saves the config (10 s)."""
MAX_DATAGRAM = 65536
"""Receive size: wpa_supplicant's replies are at most a few KiB; a datagram that
fills this is cut (recv drops the rest), never read unbounded."""
_counter = itertools.count()

T = TypeVar("T")


@dataclass(frozen=True)
class Command:
    """One control-interface command; `shown` replaces secret values by ``(hidden)``."""

    text: str = field(repr=False)
    shown: str

    @classmethod
    def plain(cls, text: str) -> Command:
        return cls(text, text)

    def __repr__(self) -> str:
        return f"Command({self.shown!r})"


def control_socket(host: Host, interface: str) -> Path:
    return host.path(CONTROL_DIR) / interface


class WpaControl:
    """``async with WpaControl(path) as ctrl: reply = await ctrl.request("STATUS")``."""

    def __init__(self, path: Path, *, timeout: float = DEFAULT_TIMEOUT,
                 interface: str | None = None,
                 conversation: float = CONVERSATION_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout
        self.interface = interface or path.name
        self.conversation = conversation
        self._deadline = Deadline(conversation)
        self._sock: socket.socket | None = None
        self._dir: Path | None = None

    async def __aenter__(self) -> WpaControl:
        self._deadline = Deadline(self.conversation)
        self._dir = Path(tempfile.mkdtemp(prefix="zsn-wpa-"))
        # The daemon replies to this socket: let it reach the directory.
        os.chmod(self._dir, 0o711)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.setblocking(False)
        try:
            sock.bind(str(self._dir / f"c{os.getpid()}-{next(_counter)}"))
            sock.connect(str(confine(self.path)))  # inside --root
        except FileNotFoundError:
            self._close(sock)
            raise SocketError(f"wpa_supplicant is not running on {self.interface} "
                              f"(no control socket {self.path})") from None
        except ConnectionRefusedError:
            self._close(sock)
            raise SocketError(f"wpa_supplicant on {self.interface} does not answer "
                              f"({self.path} is a stale socket)") from None
        except PermissionError:
            self._close(sock)
            raise SocketAccessDeniedError(
                f"{self.path}: permission denied (root needed?)") from None
        except OSError as exc:
            self._close(sock)
            raise SocketError(f"{self.path}: {exc.strerror or exc}") from None
        self._sock = sock
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._sock is not None:
            self._close(self._sock)
            self._sock = None

    def _close(self, sock: socket.socket) -> None:
        sock.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @property
    def sock(self) -> socket.socket:
        if self._sock is None:
            raise SocketError("control socket is not open")
        return self._sock

    @property
    def _conversation_name(self) -> str:
        return f"wpa_supplicant on {self.interface} (the whole conversation)"

    def _wait(self, timeout: float | None) -> float:
        """Seconds the next wait may take: the request's, within the conversation's."""
        self._deadline.check(self._conversation_name, SocketError)
        return min(self.timeout if timeout is None else timeout, self._deadline.remaining())

    async def send(self, command: Command | str) -> None:
        command = Command.plain(command) if isinstance(command, str) else command
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.sock_sendall(self.sock, command.text.encode()),
                                   self._wait(None))
        except TimeoutError:
            raise SocketError(f"wpa_supplicant on {self.interface}: '{command.shown}' not "
                              f"accepted within {self.timeout:g} s") from None
        except (ConnectionRefusedError, FileNotFoundError):
            raise SocketError(f"wpa_supplicant on {self.interface} went away") from None
        except OSError as exc:
            raise SocketError(f"wpa_supplicant on {self.interface}: "
                              f"{exc.strerror or exc}") from None

    async def receive(self, timeout: float | None = None) -> str:
        """The next datagram, within `timeout` (default: the client's)."""
        loop = asyncio.get_running_loop()
        wait = self._wait(timeout)
        try:
            data = await asyncio.wait_for(loop.sock_recv(self.sock, MAX_DATAGRAM), wait)
        except TimeoutError:  # an OSError too: the caller says what timed out
            raise
        except (ConnectionRefusedError, FileNotFoundError):
            raise SocketError(f"wpa_supplicant on {self.interface} went away") from None
        except OSError as exc:
            raise SocketError(f"wpa_supplicant on {self.interface}: "
                              f"{exc.strerror or exc}") from None
        return data.decode("utf-8", errors="surrogateescape")

    async def request(self, command: Command | str, *, timeout: float | None = None) -> str:
        """Send one command and return its reply."""
        command = Command.plain(command) if isinstance(command, str) else command
        await self.send(command)
        try:
            return await self.receive(timeout)
        except TimeoutError:
            self._deadline.check(self._conversation_name, SocketError)
            wait = self.timeout if timeout is None else timeout
            raise SocketError(f"wpa_supplicant on {self.interface}: no answer to "
                              f"'{command.shown}' within {wait:g} s") from None


class WpaMonitor(WpaControl):
    """A control socket ``ATTACH``ed for events; ``DETACH``ed when closed."""

    async def __aenter__(self) -> WpaMonitor:
        await super().__aenter__()
        reply = await self.request("ATTACH")
        if reply.strip() != "OK":
            await super().__aexit__(None, None, None)
            raise SocketError(f"wpa_supplicant on {self.interface} refused ATTACH")
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._sock is not None:
            with contextlib.suppress(SocketError, OSError):
                await self.send("DETACH")
        await super().__aexit__(kind, exc, tb)

    async def events(self, deadline: float) -> AsyncIterator[str]:
        """Datagrams until the loop time `deadline`; then the iteration just ends."""
        loop = asyncio.get_running_loop()
        while True:
            remaining = min(deadline - loop.time(), self._deadline.remaining())
            if remaining <= 0:
                return
            try:
                yield await self.receive(remaining)
            except TimeoutError:
                return


def supplicant_configs(host: Host) -> dict[str, str]:
    """interface -> config file of each running wpa_supplicant, read from its command
    line in /proc (``-i IFACE -c CONF``, interface blocks separated by ``-N``)."""
    if not host.is_live:
        return {}
    found: dict[str, str] = {}
    for entry in files.list_files(Path("/proc")):
        if not entry.name.isdigit():
            continue
        try:
            if files.read_text(entry / "comm", 64).strip() != "wpa_supplicant":
                continue
            args = files.read_bytes(entry / "cmdline", 65536).decode(errors="replace")
        except (ZsnError, OSError):
            continue
        interface = config = None
        words = args.split("\0")
        for index, word in enumerate(words):
            for flag in ("-i", "-c"):
                if word == flag and index + 1 < len(words):
                    value = words[index + 1]
                elif word.startswith(flag) and len(word) > 2:
                    value = word[2:]
                else:
                    continue
                if flag == "-i":
                    interface = value
                else:
                    config = value
            if word == "-N" or index == len(words) - 1:
                if interface and config:
                    found[interface] = config
                interface = config = None
    return found


def run_sync(action: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from code without an event loop (thread workers, the CLI)."""

    async def main() -> T:
        return await action()

    return asyncio.run(main())


_PRINTF_ESCAPE_RE = re.compile(rb'\\(x[0-9a-fA-F]{2}|[\\"entr])')
_PRINTF_SIMPLE = {b"\\": b"\\", b'"': b'"', b"e": b"\x1b", b"n": b"\n", b"t": b"\t",
                  b"r": b"\r"}


def printf_unescape(text: str) -> bytes:
    """Bytes from wpa_supplicant's printf-escaped SSID (``\\xNN``, ``\\\\``, ``\\"`` ...).

    The control interface prints SSIDs with `printf_encode`: printable ASCII as is,
    every other byte escaped. Anything else after a backslash is kept as it is.
    """
    raw = text.encode("utf-8", errors="surrogateescape")

    def replace(match: re.Match[bytes]) -> bytes:
        token = match.group(1)
        if token.startswith(b"x"):
            return bytes([int(token[1:], 16)])
        return _PRINTF_SIMPLE[token]

    return _PRINTF_ESCAPE_RE.sub(replace, raw)


_EVENT_RE = re.compile(r"<(\d)>(\S+)(?: (.*))?", re.DOTALL)


@dataclass(frozen=True)
class Event:
    level: int
    name: str
    """CTRL-EVENT-CONNECTED, CTRL-EVENT-SSID-TEMP-DISABLED, ... or the first word."""
    text: str

    def field(self, key: str) -> str | None:
        """A ``key=value`` field of the event (values may be quoted: ``ssid="x y"``)."""
        match = re.search(rf'(?:^| ){re.escape(key)}=("(?:[^"\\]|\\.)*"|\S*)', self.text)
        if match is None:
            return None
        value = match.group(1)
        return value[1:-1] if value.startswith('"') and value.endswith('"') else value


def parse_event(datagram: str) -> Event | None:
    """An unsolicited message (``<3>CTRL-EVENT-...``); None for a reply such as ``OK``."""
    match = _EVENT_RE.fullmatch(datagram.rstrip("\n"))
    if match is None:
        return None
    return Event(int(match.group(1)), match.group(2), match.group(3) or "")
