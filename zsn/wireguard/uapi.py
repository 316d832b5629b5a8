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
import re
import socket
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from zsn.errors import (
    ParseError,
    SocketAccessDeniedError,
    SocketError,
    SocketGoneError,
    StaleSocketError,
)
from zsn.format import excerpt
from zsn.system.host import Host, confine
from zsn.system.limits import Deadline, MiB
from zsn.system.sockets import BoundedReader
from zsn.wireguard.keys import hex_to_base64
from zsn.wireguard.model import DeviceState, PeerState

SOCKET_DIRS = ("/run/wireguard", "/var/run/wireguard")
DEFAULT_TIMEOUT = 3.0
"""Seconds a whole exchange (connect, request, reply) may take."""
MAX_REPLY_BYTES = 32 * MiB
"""Largest reply read: about 100 000 peers, far beyond any real interface."""
_ZERO_KEY = "0" * 64


def is_stale(path: Path) -> bool:
    """Whether `path` is a socket file nobody listens on (its daemon died), asked by
    connecting: the file alone says nothing."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(DEFAULT_TIMEOUT)
        try:
            probe.connect(os.fspath(confine(path)))
        except ConnectionRefusedError:
            return True
        except OSError:
            return False  # gone, or not ours to ask: not shown as stale
    return False


def socket_paths(host: Host) -> dict[str, Path]:
    """UAPI socket of every userspace interface, by interface name.

    /var/run is usually a link to /run; the first directory that has a name wins.
    """
    found: dict[str, Path] = {}
    for directory in SOCKET_DIRS:
        path = host.path(directory)
        try:
            entries = sorted(os.scandir(confine(path)), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as exc:
            raise SocketAccessDeniedError(f"{path}: permission denied (root needed)") from exc
        for entry in entries:
            if entry.name.endswith(".sock"):
                found.setdefault(entry.name[: -len(".sock")], Path(entry.path))
    return found


class Exchange:
    """One request sent over a UAPI socket, its reply read later with `reply`.

    Between the two the daemon builds its answer (wireguard-go takes ~8 ms for
    5,000 peers before it writes a byte), so a reader can do other work meanwhile.
    Connecting and sending must finish within `timeout` seconds, and so must reading
    the whole reply once `reply` starts waiting for it (time the caller spends
    elsewhere in between is not the daemon's); the reply must fit in `max_bytes`.
    A socket that trickles or floods becomes a `SocketError`.
    """

    def __init__(self, path: Path, request: str, timeout: float = DEFAULT_TIMEOUT,
                 max_bytes: int = MAX_REPLY_BYTES) -> None:
        self.path = path
        self._timeout = timeout
        self._max_bytes = max_bytes
        deadline = Deadline(timeout)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(timeout)
            try:
                self._sock.connect(os.fspath(confine(path)))  # inside --root
            except FileNotFoundError as exc:
                raise SocketGoneError(f"{path}: socket is gone (interface removed?)") from exc
            except ConnectionRefusedError as exc:
                raise StaleSocketError(f"{path}: stale socket, no daemon behind it (the "
                                       "userspace daemon stopped; up removes it and starts "
                                       "one)") from exc
            except PermissionError as exc:
                raise SocketAccessDeniedError(f"{path}: permission denied (root needed)") from exc
            except TimeoutError as exc:
                raise SocketError(f"{path}: no answer within {timeout:g} s") from exc
            except OSError as exc:
                raise SocketError(f"{path}: {exc.strerror or exc}") from exc
            BoundedReader(self._sock, str(path), deadline, max_bytes).send(
                request.encode("ascii"))
        except BaseException:
            self._sock.close()
            raise

    def reply(self) -> str:
        """The reply text up to its closing blank line; the socket is closed."""
        reply = bytearray()
        reader = BoundedReader(self._sock, str(self.path), Deadline(self._timeout),
                               self._max_bytes)
        try:
            # The reply ends with a blank line; its two newlines may arrive apart.
            while not reply.endswith(b"\n\n"):
                data = reader.recv()
                if not data:
                    break
                reply += data
        finally:
            self._sock.close()
        if not reply:
            raise SocketError(f"{self.path}: closed without a reply (request not understood)")
        return reply.decode("ascii", errors="replace")

    def close(self) -> None:
        """Give up on the reply."""
        self._sock.close()


def exchange(path: Path, request: str, timeout: float = DEFAULT_TIMEOUT,
             max_bytes: int = MAX_REPLY_BYTES) -> str:
    """Send one UAPI request and return the reply text up to its closing blank line
    (see `Exchange` for the deadline and the size cap)."""
    return Exchange(path, request, timeout, max_bytes).reply()


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


# wireguard-go writes every peer with the same keys in the same order
# (device/uapi.go, IpcGetOperation): one regex reads such a block in C. A block in
# any other layout (boringtun's, a future version's) is read line by line.
_WIREGUARD_GO_PEER = re.compile(
    r"([0-9a-f]{64})\n"
    r"preshared_key=([0-9a-f]{64})\n"
    r"protocol_version=\d+"
    r"(?:\nendpoint=([^\n]+))?\n"
    r"last_handshake_time_sec=(\d+)\n"
    r"last_handshake_time_nsec=\d+\n"
    r"tx_bytes=(\d+)\n"
    r"rx_bytes=(\d+)\n"
    r"persistent_keepalive_interval=(\d+)"
    r"((?:\nallowed_ip=[^\n]+)*)\n?",
    re.ASCII,  # \d is 0-9 only, as in `_number`
)
_HANDSHAKE_LINE = "\nlast_handshake_time_sec="
_MOVED_LINES = re.compile(  # the lines of `_WIREGUARD_GO_PEER` that a moving peer changes
    r"\nlast_handshake_time_sec=(\d+)\n"
    r"last_handshake_time_nsec=\d+\n"
    r"tx_bytes=(\d+)\n"
    r"rx_bytes=(\d+)",
    re.ASCII,
)
_HEX_KEY_RE = re.compile(r"[0-9a-fA-F]{64}")
_NUMBER_RE = re.compile(r"[0-9]{1,20}")
_PEER_SEPARATOR = "\npublic_key="
_FIRST_PEER = "public_key="
_NO_NAMES: Mapping[str, str] = {}
_ALLOWED_SEPARATOR = "\nallowed_ip="


class PeerCache:
    """One device's peers from its previous read, by public key with the exact text of
    their block.

    Most peers of a big server are idle, so their lines do not change between
    polls and need not be parsed again; a peer that moves changes only its
    handshake and counter lines, so a block in wireguard-go's layout whose other
    lines are as before has only those read again. Used only where handshakes are
    Unix times (an age, as boringtun sends, changes every second anyway).
    """

    def __init__(self) -> None:
        self._by_key: dict[str, _Cached] = {}
        self._names: Mapping[str, str] | None = None

    def previous(self, names: Mapping[str, str]) -> dict[str, _Cached]:
        if names is not self._names:  # names changed: cached peers carry old ones
            self._by_key = {}
            self._names = names
        return self._by_key

    def keep(self, by_key: dict[str, _Cached]) -> None:
        self._by_key = by_key


_Cached = tuple[str, str, str, PeerState]
"""A peer's block, its text before the handshake line and from the line after
``rx_bytes`` on (empty when not in wireguard-go's layout), and the peer read from it."""


def parse_get(
    reply: str,
    source: str = "uapi",
    now: float | None = None,
    names: Mapping[str, str] | None = None,
    cache: PeerCache | None = None,
) -> DeviceState:
    """Parse a `get=1` reply into a `DeviceState` (keys converted to base64).

    `names` maps public keys to peer names (from the config), set while parsing
    so a big server's peers are built once; `cache` lets a poller skip peers
    whose lines did not change since its last read.
    """
    check_errno(reply, source)
    names = _NO_NAMES if names is None else names
    # Split the reply itself: a copy without the errno line, or with a newline in
    # front, would be two more megabyte-sized strings for a big server.
    parts = reply.split(_PEER_SEPARATOR)
    parts[-1] = parts[-1][: parts[-1].rfind("errno=")]
    if reply.startswith(_FIRST_PEER):  # no device lines (no key, no port)
        header, blocks = "", parts
        blocks[0] = blocks[0][len(_FIRST_PEER):]
        first_peer_line = 1
    else:
        header, blocks = parts[0], parts[1:]
        first_peer_line = header.count("\n") + 2
    private_key = public_key = None
    listen_port = fwmark = None
    handshake_is_age = False
    for number, key, value in _lines(header, 1, source):
        if key == "private_key":
            private_key = _hex_key(value, key, number, source)
        elif key == "own_public_key":
            public_key = _hex_key(value, key, number, source)
            handshake_is_age = True  # only boringtun sends it
        elif key == "listen_port":
            listen_port = _number(value, key, number, source)
        elif key == "fwmark":
            fwmark = _number(value, key, number, source) or None
    if handshake_is_age or cache is None:
        previous: dict[str, _Cached] = {}
        age_now = (now if now is not None else time.time()) if handshake_is_age else None
    else:
        previous, age_now = cache.previous(names), None
    current: dict[str, _Cached] = {}
    peers: list[PeerState] = []
    # Line numbers only matter in an error message: counted up to a block read
    # line by line, never for wireguard-go's blocks read whole.
    line, counted = first_peer_line, 0
    for index, block in enumerate(blocks):
        peer: PeerState | None = None
        cached = previous.get(block[:64]) if previous else None
        if cached is not None:
            text, head, tail, known = cached
            if block == text:
                peer = known
            elif head:
                peer = _moved(block, head, tail, known)
        if peer is None:
            head = tail = ""
            match = _WIREGUARD_GO_PEER.fullmatch(block) if age_now is None else None
            if match is not None:
                peer = _wireguard_go_peer(match, names)
                head = block[:match.start(4) - len(_HANDSHAKE_LINE)]
                tail = block[match.end(6):]
            else:
                line += sum(earlier.count("\n") + 1 for earlier in blocks[counted:index])
                counted = index
                peer = _parse_peer(block, names, age_now, line, source)
        if cache is not None:
            current[block[:64]] = (block, head, tail, peer)
        peers.append(peer)
    if cache is not None and not handshake_is_age:
        cache.keep(current)
    return DeviceState(private_key, public_key, listen_port, fwmark, tuple(peers))


def _moved(block: str, head: str, tail: str, peer: PeerState) -> PeerState | None:
    """`peer` with the handshake and counters of `block`, when only those lines
    changed since `head` and `tail` were read with it (else None)."""
    end = len(block) - len(tail)
    if not (block.startswith(head) and block.endswith(tail)):
        return None
    match = _MOVED_LINES.fullmatch(block, len(head), end)
    if match is None:
        return None
    handshake, tx, rx = match.groups()
    return tuple.__new__(PeerState, (peer[0], peer[1], peer[2], peer[3], int(handshake) or None,
                                     int(rx), int(tx), peer[7], peer[8]))


def _parse_peer(
    block: str,
    names: Mapping[str, str],
    age_now: float | None,
    first_line: int,
    source: str,
) -> PeerState:
    """One peer's block (the text after ``public_key=``), line by line."""
    key: str | None = None
    psk: str | None = None
    endpoint: str | None = None
    allowed_ips: list[str] = []
    handshake_value = rx_bytes = tx_bytes = keepalive_value = 0
    for number, name, value in _lines("public_key=" + block, first_line, source):
        if name == "public_key":
            key = _hex_key(value, name, number, source)
        elif name == "allowed_ip":
            allowed_ips.append(value)
        elif name == "endpoint":
            endpoint = value or None
        elif name == "preshared_key":
            psk = None if value == _ZERO_KEY else _hex_key(value, name, number, source)
        elif name == "last_handshake_time_sec":
            handshake_value = _number(value, name, number, source)
        elif name == "rx_bytes":
            rx_bytes = _number(value, name, number, source)
        elif name == "tx_bytes":
            tx_bytes = _number(value, name, number, source)
        elif name == "persistent_keepalive_interval":
            keepalive_value = _number(value, name, number, source)
    assert key is not None
    if not handshake_value:
        latest: int | None = None
    elif age_now is not None:
        latest = int(age_now - handshake_value)
    else:
        latest = handshake_value
    return PeerState(key, psk, endpoint, tuple(allowed_ips), latest, rx_bytes, tx_bytes,
                     keepalive_value or None, names.get(key))


def _wireguard_go_peer(match: re.Match[str], names: Mapping[str, str]) -> PeerState:
    key_hex, psk_hex, endpoint, handshake, tx, rx, keepalive, allowed = match.groups()
    key = hex_to_base64(key_hex)
    # tuple.__new__: the same PeerState without its Python-level __new__ (once per peer).
    return tuple.__new__(PeerState, (
        key,
        None if psk_hex == _ZERO_KEY else hex_to_base64(psk_hex),
        endpoint,
        tuple(allowed.split(_ALLOWED_SEPARATOR)[1:]),
        int(handshake) or None,
        int(rx),
        int(tx),
        int(keepalive) or None,
        names.get(key),
    ))


def _lines(text: str, first_line: int, source: str) -> Iterator[tuple[int, str, str]]:
    for offset, line in enumerate(text.split("\n")):
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ParseError(f"expected key=value, got {excerpt(line)}", first_line + offset,
                             source)
        yield first_line + offset, key, value


def _number(value: str, key: str, line: int, source: str) -> int:
    # ASCII digits only: int() would also take "-1", " 7", "1_0" and other scripts' digits.
    if not _NUMBER_RE.fullmatch(value):
        raise ParseError(f"bad value for {key}: {excerpt(value)}", line, source)
    return int(value)


def _hex_key(value: str, key: str, line: int, source: str) -> str:
    if not _HEX_KEY_RE.fullmatch(value):
        # Never quote it: a malformed private key is still mostly the key.
        raise ParseError(f"bad value for {key}: not a 64-digit hex key", line, source)
    return hex_to_base64(value)


def request_device(path: Path, timeout: float = DEFAULT_TIMEOUT) -> Exchange:
    """Ask the device at `path` for its state now; `read_device` reads the answer."""
    return Exchange(path, "get=1\n\n", timeout)


def read_device(request: Exchange, names: Mapping[str, str] | None = None,
                cache: PeerCache | None = None) -> DeviceState:
    return parse_get(request.reply(), source=str(request.path), names=names, cache=cache)


def get_device(
    path: Path,
    names: Mapping[str, str] | None = None,
    cache: PeerCache | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> DeviceState:
    return read_device(request_device(path, timeout), names, cache)


def set_device(path: Path, lines: Iterable[str], timeout: float = DEFAULT_TIMEOUT) -> None:
    """Apply a `set=1` request made of `lines` (``key=value``, hex keys); raise on errno."""
    body = "".join(f"{line}\n" for line in lines)
    if "\n\n" in body:
        raise ValueError("a UAPI set request must not contain blank lines")
    check_errno(exchange(path, f"set=1\n{body}\n", timeout), str(path))
