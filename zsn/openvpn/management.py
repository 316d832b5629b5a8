"""OpenVPN's management interface: connect briefly, ask, disconnect.

The interface serves one client at a time, so zsn never holds it: each query opens
the socket, reads the greeting (answering a password prompt when the config names
a password file), sends ``state`` and ``status 2`` and closes. Real-time lines
(``>INFO:``, ``>HOLD:``, ``>LOG:`` ...) arriving in between are skipped.
See OpenVPN's doc/management-notes.txt.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from pathlib import Path

from zsn.errors import ParseError, SocketAccessDeniedError, SocketError, ZsnError
from zsn.system.files import read_text
from zsn.system.host import confine
from zsn.system.limits import Deadline, MiB
from zsn.system.sockets import BoundedReader, ReplyTimeout

STATES = (
    "CONNECTING", "WAIT", "AUTH", "GET_CONFIG", "ASSIGN_IP", "ADD_ROUTES", "CONNECTED",
    "RECONNECTING", "EXITING", "RESOLVE", "TCP_CONNECT", "AUTH_PENDING",
)
DEFAULT_TIMEOUT = 2.0
"""Seconds a whole query (greeting, ``state``, ``status 2``) may take."""
MAX_REPLY_BYTES = 16 * MiB
"""Everything one query may read: ``status 2`` of a server with some 50 000 clients."""
PASSWORD_FILE_BYTES = 4096


@dataclass(frozen=True)
class Endpoint:
    """Where a config's `management` directive listens."""

    unix_path: Path | None = None
    tcp_host: str | None = None
    tcp_port: int | None = None
    password_file: Path | None = None

    def describe(self) -> str:
        if self.unix_path is not None:
            return str(self.unix_path)
        return f"{self.tcp_host}:{self.tcp_port}"


@dataclass(frozen=True)
class LiveState:
    state: str
    """CONNECTED, CONNECTING, RECONNECTING ... as OpenVPN names it."""
    description: str
    since: int
    """Unix time of the last state change."""
    tunnel_ipv4: str
    tunnel_ipv6: str
    remote: str
    remote_port: str
    bytes_in: int | None
    """Bytes received on the link (TCP/UDP read bytes, or the server's total)."""
    bytes_out: int | None
    clients: int | None = None
    """Connected clients, for a server."""


def _is_number(text: str) -> bool:
    # ASCII digits only: str.isdigit() is also true for "²", which int() refuses.
    return text.isascii() and text.isdigit()


def parse_state(lines: list[str]) -> tuple[str, str, int, str, str, str, str]:
    """The current state from a ``state`` reply (the last record before END)."""
    records = [line for line in lines if line and line != "END" and not line.startswith(">")]
    if not records:
        raise ParseError("empty reply to 'state'", None, "management")
    fields = records[-1].split(",")
    if len(fields) < 3 or not _is_number(fields[0]):
        raise ParseError(f"unexpected 'state' record {records[-1]!r}", None, "management")
    fields += [""] * (9 - len(fields))
    since, state, description, local_ipv4, remote, rport = fields[:6]
    return state, description, int(since), local_ipv4, remote, rport, fields[8]


def parse_status(lines: list[str]) -> tuple[int | None, int | None, int | None]:
    """(bytes in, bytes out, clients) from a ``status 2`` reply, client or server form."""
    client_stats: dict[str, int] = {}
    clients = 0
    bytes_in = bytes_out = 0
    server = False
    for line in lines:
        key, _, value = line.partition(",")
        if key in ("TCP/UDP read bytes", "TCP/UDP write bytes") and _is_number(value.strip()):
            client_stats[key] = int(value)
        elif key == "TITLE":
            server = True
        elif key == "CLIENT_LIST":
            # CLIENT_LIST,name,real,virt,virt6,bytes received,bytes sent,...
            fields = line.split(",")
            if len(fields) > 6 and _is_number(fields[5]) and _is_number(fields[6]):
                clients += 1
                bytes_in += int(fields[5])
                bytes_out += int(fields[6])
    if server:
        return bytes_in, bytes_out, clients
    if client_stats:
        return (client_stats.get("TCP/UDP read bytes"),
                client_stats.get("TCP/UDP write bytes"), None)
    raise ParseError("'status' reply has neither client statistics nor a client list",
                     None, "management")


class _Session:
    """One connection's reads and writes, all within the query's deadline and cap."""

    def __init__(self, reader: BoundedReader):
        self.reader = reader
        self.where = reader.where
        self.buffer = b""

    def _fill(self) -> None:
        try:
            chunk = self.reader.recv()
        except ReplyTimeout as exc:
            raise SocketError(f"{self.where}: OpenVPN did not answer in time (another "
                              "client may be holding the management interface)") from exc
        if not chunk:
            raise SocketError(
                f"{self.where}: OpenVPN closed the management connection "
                "(another client may be holding it)"
            )
        self.buffer += chunk

    def read_line(self) -> str:
        while b"\n" not in self.buffer:
            # The password prompt has no newline after it.
            if self.buffer.startswith(b"ENTER PASSWORD:"):
                self.buffer = self.buffer[len(b"ENTER PASSWORD:"):]
                return "ENTER PASSWORD:"
            self._fill()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    def send(self, command: str) -> None:
        self.reader.send(command.encode() + b"\n")

    def command(self, command: str) -> list[str]:
        """Send `command`; return its reply lines, up to END or a single SUCCESS line."""
        self.send(command)
        reply: list[str] = []
        while True:
            line = self.read_line()
            if line.startswith(">"):
                continue
            if line.startswith("ERROR:"):
                raise SocketError(f"{self.where}: '{command}' refused: {line[6:].strip()}")
            if line.startswith("SUCCESS:") and not reply:
                return [line]
            if line == "END":
                return reply
            reply.append(line)


_CONNECT_ERRORS: tuple[tuple[type[OSError], str], ...] = (
    (FileNotFoundError, "management socket is gone (is the connection running?)"),
    (ConnectionRefusedError, "nothing listening (is the connection running?)"),
    (PermissionError, "permission denied (root needed?)"),
    (TimeoutError, "no answer in time"),
)


def _connect(endpoint: Endpoint, timeout: float) -> socket.socket:
    where = endpoint.describe()
    if endpoint.unix_path is not None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address: str | tuple[str, int] = str(confine(endpoint.unix_path))  # inside --root
    else:
        assert endpoint.tcp_host is not None and endpoint.tcp_port is not None
        family = socket.AF_INET6 if ":" in endpoint.tcp_host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        address = (endpoint.tcp_host, endpoint.tcp_port)
    sock.settimeout(timeout)
    try:
        sock.connect(address)
    except OSError as exc:
        sock.close()
        reason = next((text for kind, text in _CONNECT_ERRORS if isinstance(exc, kind)),
                      f"cannot connect ({exc.strerror})")
        kind = SocketAccessDeniedError if isinstance(exc, PermissionError) else SocketError
        raise kind(f"{where}: {reason}") from exc
    return sock


def query(endpoint: Endpoint, *, timeout: float = DEFAULT_TIMEOUT,
          max_bytes: int = MAX_REPLY_BYTES) -> LiveState:
    """Ask the running OpenVPN for its state and counters, holding the slot only briefly.

    The whole conversation must end within `timeout` seconds and `max_bytes`.
    """
    where = endpoint.describe()
    deadline = Deadline(timeout)
    sock = _connect(endpoint, timeout)
    try:
        session = _Session(BoundedReader(sock, where, deadline, max_bytes))
        first = session.read_line()
        if first == "ENTER PASSWORD:":
            session.send(_read_password(endpoint))
            answer = session.read_line()
            if not answer.startswith("SUCCESS"):
                raise SocketError(f"{where}: management password was refused")
            first = session.read_line()
        if not first.startswith(">INFO:"):
            raise SocketError(f"{where}: not an OpenVPN management interface ({first[:60]!r})")
        state = parse_state(session.command("state"))
        counters = parse_status(session.command("status 2"))
        with contextlib.suppress(SocketError):
            session.send("quit")
    finally:
        sock.close()
    name, description, since, ipv4, remote, rport, ipv6 = state
    return LiveState(
        state=name, description=description, since=since, tunnel_ipv4=ipv4,
        tunnel_ipv6=ipv6, remote=remote, remote_port=rport, bytes_in=counters[0],
        bytes_out=counters[1], clients=counters[2],
    )


def _read_password(endpoint: Endpoint) -> str:
    if endpoint.password_file is None:
        raise SocketError(f"{endpoint.describe()}: asks for a password but none is configured")
    try:
        return read_text(endpoint.password_file, PASSWORD_FILE_BYTES).splitlines()[0]
    except (ZsnError, IndexError) as exc:
        raise SocketError(
            f"{endpoint.password_file}: management password file cannot be read"
        ) from exc

