"""WireGuard's cross-platform UAPI, spoken directly over the unix socket.

Used by userspace implementations (wireguard-go, boringtun). Protocol facts:
`get=1` answers ``key=value`` lines closed by ``errno=N`` and a blank line; keys
are hex; each ``public_key=`` starts a peer. wireguard-go reports errno negative,
boringtun positive: any non-zero is an error. boringtun sends ``own_public_key``
and reports the handshake as an age in seconds rather than a Unix time.
"""

from __future__ import annotations

import errno as errno_codes
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from zsn.errors import ParseError, SocketError
from zsn.system.host import Host
from zsn.wireguard.keys import hex_to_base64
from zsn.wireguard.model import DeviceState, PeerState

SOCKET_DIRS = ("/run/wireguard", "/var/run/wireguard")
DEFAULT_TIMEOUT = 3.0
_ZERO_KEY = "0" * 64


def socket_paths(host: Host) -> dict[str, Path]:
    """UAPI socket of every userspace interface, by interface name.

    /var/run is usually a link to /run; the first directory that has a name wins.
    """
    found: dict[str, Path] = {}
    for directory in SOCKET_DIRS:
        path = host.path(directory)
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as exc:
            raise SocketError(f"{path}: permission denied (root needed)") from exc
        for entry in entries:
            if entry.name.endswith(".sock"):
                found.setdefault(entry.name[: -len(".sock")], Path(entry.path))
    return found


def exchange(path: Path, request: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Send one UAPI request and return the reply text up to its closing blank line."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    chunks: list[bytes] = []
    try:
        try:
            sock.connect(os.fspath(path))
        except FileNotFoundError as exc:
            raise SocketError(f"{path}: socket is gone (interface removed?)") from exc
        except ConnectionRefusedError as exc:
            raise SocketError(f"{path}: nobody listening (userspace daemon stopped?)") from exc
        except PermissionError as exc:
            raise SocketError(f"{path}: permission denied (root needed)") from exc
        sock.sendall(request.encode("ascii"))
        last_byte = b""
        while True:
            data = sock.recv(1 << 20)
            if not data:
                break
            chunks.append(data)
            # The reply ends with a blank line; the two newlines may arrive apart.
            if data.endswith(b"\n\n") or (data == b"\n" and last_byte == b"\n"):
                break
            last_byte = data[-1:]
    except TimeoutError as exc:
        raise SocketError(f"{path}: no answer within {timeout:g} s") from exc
    except OSError as exc:
        if isinstance(exc, SocketError):
            raise
        raise SocketError(f"{path}: {exc.strerror or exc}") from exc
    finally:
        sock.close()
    reply = b"".join(chunks).decode("ascii", errors="replace")
    if not reply:
        raise SocketError(f"{path}: closed without a reply (request not understood)")
    return reply


def check_errno(reply: str, source: str) -> None:
    """Raise `SocketError` when the reply's ``errno=`` is missing or non-zero."""
    end = reply.rstrip("\n")
    last = end[end.rfind("\n") + 1 :]
    if not last.startswith("errno="):
        raise SocketError(f"{source}: reply ended without errno (truncated?)")
    try:
        code = int(last[len("errno=") :])
    except ValueError as exc:
        raise SocketError(f"{source}: unreadable {last!r}") from exc
    if code:
        reason = os.strerror(abs(code)) if abs(code) in errno_codes.errorcode else "error"
        raise SocketError(f"{source}: device refused the request: {reason} (errno {code})")


def parse_get(
    reply: str,
    source: str = "uapi",
    now: float | None = None,
    names: Mapping[str, str] | None = None,
) -> DeviceState:
    """Parse a `get=1` reply into a `DeviceState` (keys converted to base64).

    `names` maps public keys to peer names (from the config), set while parsing
    so a big server's peers are built once.
    """
    check_errno(reply, source)
    return _parse_lines(reply, source, now, names or {})


def _parse_lines(
    reply: str, source: str, now: float | None, names: Mapping[str, str]
) -> DeviceState:
    """Line by line, in any key order, boringtun's fields included; strict about values."""
    private_key: str | None = None
    public_key: str | None = None
    listen_port: int | None = None
    fwmark: int | None = None
    handshake_is_age = False
    peers: list[PeerState] = []
    # Peer fields are gathered in locals and flushed when the next peer starts.
    peer_key: str | None = None
    psk: str | None = None
    endpoint: str | None = None
    allowed: list[str] = []
    hs_sec = 0
    rx = tx = 0
    keepalive = 0

    def flush() -> None:
        if peer_key is None:
            return
        if hs_sec == 0:
            handshake: int | None = None
        elif handshake_is_age:
            handshake = int((now if now is not None else time.time()) - hs_sec)
        else:
            handshake = hs_sec
        peers.append(
            PeerState(peer_key, psk, endpoint, tuple(allowed), handshake, rx, tx,
                      keepalive or None, names.get(peer_key))
        )

    for number, line in enumerate(reply.split("\n"), start=1):
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ParseError(f"expected key=value, got {line[:40]!r}", number, source)
        try:
            if key == "allowed_ip":
                allowed.append(value)
            elif key == "public_key":
                flush()
                peer_key = hex_to_base64(value)
                psk = endpoint = None
                allowed = []
                hs_sec = rx = tx = keepalive = 0
            elif key == "rx_bytes":
                rx = int(value)
            elif key == "tx_bytes":
                tx = int(value)
            elif key == "last_handshake_time_sec":
                hs_sec = int(value)
            elif key == "endpoint":
                endpoint = value
            elif key == "preshared_key":
                psk = None if value == _ZERO_KEY else hex_to_base64(value)
            elif key == "persistent_keepalive_interval":
                keepalive = int(value)
            elif key == "private_key":
                private_key = hex_to_base64(value)
            elif key == "own_public_key":
                public_key = hex_to_base64(value)
                handshake_is_age = True  # only boringtun sends it
            elif key == "listen_port":
                listen_port = int(value)
            elif key == "fwmark":
                fwmark = int(value) or None
        except ValueError as exc:
            raise ParseError(f"bad value for {key}: {value[:40]!r}", number, source) from exc
    flush()
    return DeviceState(private_key, public_key, listen_port, fwmark, tuple(peers))


def get_device(
    path: Path, names: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT
) -> DeviceState:
    return parse_get(exchange(path, "get=1\n\n", timeout), source=str(path), names=names)


def set_device(path: Path, lines: Iterable[str], timeout: float = DEFAULT_TIMEOUT) -> None:
    """Apply a `set=1` request made of `lines` (``key=value``, hex keys); raise on errno."""
    body = "".join(f"{line}\n" for line in lines)
    if "\n\n" in body:
        raise ValueError("a UAPI set request must not contain blank lines")
    check_errno(exchange(path, f"set=1\n{body}\n", timeout), str(path))
