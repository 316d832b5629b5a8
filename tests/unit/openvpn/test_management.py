from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from zsn.errors import SocketError
from zsn.openvpn import management
from zsn.rates import RateTracker


def replies(transcript: str) -> tuple[str, list[list[str]]]:
    """Split a captured transcript into the greeting and the reply to each command."""
    lines = transcript.splitlines()
    greeting, rest = lines[0], lines[1:]
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in rest:
        current.append(line)
        if line == "END":
            blocks.append(current)
            current = []
    return greeting, blocks


def test_client_connected_transcript(ovpn_fixtures: Path) -> None:
    greeting, (state, status) = replies(
        (ovpn_fixtures / "mgmt-client-connected.txt").read_text())
    assert greeting.startswith(">INFO:OpenVPN Management Interface")
    name, description, since, ipv4, remote, port, ipv6 = management.parse_state(state)
    assert (name, description) == ("CONNECTED", "SUCCESS")
    assert ipv4.startswith("10.87.0.") and remote.startswith("10.86.") and port == "1194"
    assert since > 1_600_000_000 and ipv6 == ""
    bytes_in, bytes_out, clients = management.parse_status(status)
    assert bytes_in and bytes_out and clients is None


def test_server_transcript_sums_its_clients(ovpn_fixtures: Path) -> None:
    _greeting, (state, status) = replies((ovpn_fixtures / "mgmt-server.txt").read_text())
    assert management.parse_state(state)[0] == "CONNECTED"
    bytes_in, bytes_out, clients = management.parse_status(status)
    assert clients == 1 and bytes_in and bytes_out


def test_waiting_client_transcript(ovpn_fixtures: Path) -> None:
    _greeting, (state, status) = replies(
        (ovpn_fixtures / "mgmt-client-waiting.txt").read_text())
    assert management.parse_state(state)[0] == "WAIT"
    assert management.parse_status(status)[0] == 0


def fake_openvpn(path: Path, transcript: str, password: str | None = None) -> tuple[
        threading.Thread, list[str]]:
    """A unix socket that answers one connection like the captured OpenVPN; returns the
    serving thread and every line the client sent. With `password`, OpenVPN's handshake
    first (management-notes.txt: the prompt has no newline; a right password gets
    SUCCESS, then the greeting; a wrong one ERROR)."""
    greeting, blocks = replies(transcript)
    answers = {"state": blocks[0], "status 2": blocks[1]}
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    seen: list[str] = []

    def serve() -> None:
        conn, _ = server.accept()
        with server, conn, conn.makefile("rw", newline="\n") as stream:
            if password is not None:
                stream.write("ENTER PASSWORD:")
                stream.flush()
                seen.append(stream.readline().strip())
                if seen[-1] != password:
                    stream.write("ERROR: bad password\r\n")
                    return
                stream.write("SUCCESS: password is correct\r\n")
            stream.write(greeting + "\r\n")
            stream.flush()
            for command in stream:
                seen.append(command.strip())
                if command.strip() == "quit":
                    return
                stream.write(">BYTECOUNT:1,2\r\n")  # a real-time line in between
                stream.write("".join(f"{line}\r\n" for line in answers[command.strip()]))
                stream.flush()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, seen


@pytest.fixture
def replay(tmp_path: Path, ovpn_fixtures: Path) -> Iterator[Path]:
    path = tmp_path / "client.sock"
    thread, seen = fake_openvpn(path, (ovpn_fixtures / "mgmt-client-connected.txt").read_text())
    yield path
    thread.join(5)
    assert seen == ["state", "status 2", "quit"]


def test_query_asks_briefly_and_skips_real_time_lines(replay: Path) -> None:
    live = management.query(management.Endpoint(unix_path=replay))
    assert live.state == "CONNECTED" and live.bytes_in and live.bytes_out


def test_gone_socket_is_a_specific_error(tmp_path: Path) -> None:
    with pytest.raises(SocketError, match="management socket is gone"):
        management.query(management.Endpoint(unix_path=tmp_path / "nope.sock"))


def test_socket_with_no_listener(tmp_path: Path) -> None:
    path = tmp_path / "stale.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.close()  # the file stays, nobody listens: a crashed OpenVPN
    with pytest.raises(SocketError, match="nothing listening"):
        management.query(management.Endpoint(unix_path=path))


def test_bad_state_reply_is_a_parse_error() -> None:
    with pytest.raises(Exception, match="unexpected 'state' record"):
        management.parse_state(["garbage", "END"])


def test_rates_from_two_counter_readings() -> None:
    tracker = RateTracker()
    assert tracker.update("u", 10.0, 1000, 500) == (None, None)
    assert tracker.update("u", 12.0, 3000, 900) == (1000.0, 200.0)


def test_held_interface_times_out_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "held.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)  # OpenVPN busy with another client: accepted, never greeted
    try:
        with pytest.raises(SocketError, match="another client may be holding"):
            management.query(management.Endpoint(unix_path=path), timeout=0.3)
    finally:
        listener.close()


@pytest.mark.parametrize("given", ["s3cret-pw", "wrong-pw"])
def test_password_is_sent_and_never_shown(tmp_path: Path, ovpn_fixtures: Path,
                                          given: str) -> None:
    password_file = tmp_path / "pw.txt"
    password_file.write_text(given + "\n")
    thread, seen = fake_openvpn(
        tmp_path / "pw.sock", (ovpn_fixtures / "mgmt-client-connected.txt").read_text(),
        password="s3cret-pw")
    endpoint = management.Endpoint(unix_path=tmp_path / "pw.sock", password_file=password_file)
    if given == "wrong-pw":
        with pytest.raises(SocketError, match="password was refused") as failure:
            management.query(endpoint)
        assert given not in str(failure.value)
    else:
        assert management.query(endpoint).state == "CONNECTED"
    thread.join(5)
    assert seen == ([given] if given == "wrong-pw" else [given, "state", "status 2", "quit"])
