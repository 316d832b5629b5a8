"""`zsn serve`: collectors kept warm, per-collector deadlines, the per-poll hook, routes,
and the bounds a hostile client meets, with the made-up sections of
`tests.lab.serving`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.lab.netns import wait_for
from tests.lab.serving import Running, read_all, running
from zsn.errors import ZsnError
from zsn.exporter import serve


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def collector_lines(text: str, collector: str) -> tuple[float | None, float | None]:
    found = samples(text)
    key = (("collector", collector),)
    return (found.get(("zsn_collector_success", key)),
            found.get(("zsn_collector_duration_seconds", key)))


def test_a_failing_or_late_collector_never_fails_the_others(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    with running(tmp_path, "--deadline", "0.5") as server:
        started = time.monotonic()
        status, text = server.get("/metrics")
        took = time.monotonic() - started
    assert status == 200
    found = samples(text)
    assert found[("zsn_steady_value", (("name", 'say "hi"'),))] == 7
    assert collector_lines(text, "steady")[0] == 1
    assert collector_lines(text, "broken")[0] == 0
    # a partial reading is served, but the collector did not read everything
    assert found[("zsn_partial_value", ())] == 1
    assert collector_lines(text, "partial")[0] == 0
    # the hung one: no metrics, success 0, its deadline as its duration; the scrape
    # waited for it no longer than that
    assert collector_lines(text, "slow") == (0, 0.5)
    assert not any(name == "zsn_slow_value" for name, _ in found)
    assert took < 5
    # a section not present on the host has no lines at all
    assert collector_lines(text, "absent") == (None, None)


def test_a_late_reading_serves_the_next_scrape_and_polls_never_pile_up(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    slow = fake_sections["slow"]
    with running(tmp_path, "--deadline", "0.3") as server:
        for _ in range(3):  # each misses its deadline; all wait on the same poll
            assert collector_lines(server.get("/metrics?collect[]=slow")[1], "slow")[0] == 0
        assert len(slow.polls) == 1
        slow.release.set()
        status, text = server.get("/metrics?collect[]=slow")
    assert status == 200
    assert collector_lines(text, "slow")[0] == 1
    assert samples(text)[("zsn_slow_value", ())] == 1


def test_prometheus_scrape_timeout_shortens_the_deadline(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    with running(tmp_path, "--deadline", "8") as server:
        started = time.monotonic()
        _, text = server.get("/metrics?collect[]=slow",
                             {"X-Prometheus-Scrape-Timeout-Seconds": "1.5"})
        assert time.monotonic() - started < 4
    assert collector_lines(text, "slow") == (0, 1.0)


def test_collect_and_exclude_follow_node_exporter(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    with running(tmp_path) as server:
        status, text = server.get("/metrics?collect[]=steady&collect[]=partial")
        assert status == 200
        assert {name for name, _ in samples(text)} >= {"zsn_steady_value", "zsn_partial_value"}
        assert collector_lines(text, "broken") == (None, None)
        fake_sections["slow"].release.set()
        status, text = server.get("/metrics?exclude[]=steady")
        assert status == 200 and collector_lines(text, "steady") == (None, None)
        assert collector_lines(text, "broken")[0] == 0
        status, text = server.get("/metrics?collect[]=nope")
        assert status == 400 and "unknown collector 'nope'" in text
        status, text = server.get("/metrics?collect[]=steady&exclude[]=broken")
        assert status == 400 and "cannot be used together" in text


def test_export_json_is_the_export_document(fake_sections: dict[str, ModuleType],
                                            tmp_path: Path) -> None:
    fake_sections["slow"].release.set()
    with running(tmp_path) as server:
        status, text = server.get("/export.json")
    document = json.loads(text)
    assert status == 200
    assert document["zsn"]["schema"] >= 1
    assert document["steady"] == {"value": 7, "secret_free": True}
    assert document["broken"] == {"errors": ["the daemon refused"]}
    assert "absent" not in document


def test_the_per_poll_hook_runs_after_every_poll_scraped_or_not(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    """A section with an ``on_poll`` hook is polled every --poll-interval without
    scrapes; its hook gets the poller's snapshot; a failing hook is logged and polling
    goes on; the poller is made once and closed at the end."""
    hooked = fake_sections["hooked"]
    fake_sections["slow"].release.set()
    with running(tmp_path, "--poll-interval", "1") as server:
        wait_for(lambda: len(hooked.hooked) >= 3, 15, "three polls without a scrape")
        _, text = server.get("/metrics?collect[]=hooked")
        assert collector_lines(text, "hooked")[0] == 1
        polls = samples(text)[("zsn_hooked_polls_total", ())]
        wait_for(lambda: len(hooked.hooked) >= polls, 5, "the scrape's poll in the hook")
    assert hooked.hooked[:3] == [("snapshot", 1), ("snapshot", 2), ("snapshot", 3)]
    assert len(hooked.made) == 1 and hooked.made[0].closed


def test_routes_and_methods(fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    fake_sections["slow"].release.set()
    with running(tmp_path) as server:
        status, text = server.get("/")
        assert status == 200 and 'href="metrics"' in text
        assert server.get("/nope")[0] == 404
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            assert read_all(sock).split()[1] == b"400"
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(100).split()[1] == b"405"


def test_keep_alive_serves_several_scrapes_on_one_connection(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    fake_sections["slow"].release.set()
    with running(tmp_path) as server, socket.create_connection(
            ("127.0.0.1", server.port), timeout=10) as sock:
        stream = sock.makefile("rb")
        for _ in range(3):
            sock.sendall(b"GET /metrics?collect[]=steady HTTP/1.1\r\nHost: x\r\n\r\n")
            assert stream.readline().split()[1] == b"200"
            length = 0
            while (line := stream.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert b"zsn_steady_value" in stream.read(length)


def test_a_slow_client_is_cut_off_while_other_scrapes_go_on(
        fake_sections: dict[str, ModuleType], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte a second never completes a request head: the connection is closed
    at HEAD_SECONDS, and scrapes from others are served meanwhile."""
    monkeypatch.setattr(serve, "HEAD_SECONDS", 2.0)
    fake_sections["slow"].release.set()
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: " + b"a" * 40 + b"\r\n\r\n"
    with running(tmp_path) as server, socket.create_connection(
            ("127.0.0.1", server.port), timeout=15) as slow:
        started = time.monotonic()
        served = 0
        closed_after = None
        for byte in request:
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                closed_after = time.monotonic() - started
                break
            status, _ = server.get("/metrics?collect[]=steady")
            served += status == 200
            time.sleep(max(0.0, served - (time.monotonic() - started)))
            slow.settimeout(0.01)
            try:
                if slow.recv(100):
                    closed_after = time.monotonic() - started
                    break
            except TimeoutError:
                pass
            finally:
                slow.settimeout(15)
        assert closed_after is not None and closed_after < 6
        assert served >= 1


def test_request_heads_and_connections_are_bounded(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    fake_sections["slow"].release.set()
    with running(tmp_path) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (serve.HEAD_BYTES + 10))
            assert read_all(sock).split()[1] == b"431"
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=10)
                for _ in range(serve.MAX_CONNECTIONS_PER_CLIENT)]
        try:
            for sock in held:
                sock.sendall(b"G")  # a request begun, never finished
            extra = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            assert extra.recv(10) == b""  # refused: closed at once
            extra.close()
        finally:
            for sock in held:
                sock.close()
        # once they are gone, the same client is served again
        wait_for(lambda: scraped(server), 10, "a scrape after the held connections closed")


def scraped(server: Running) -> bool:
    try:
        return server.get("/metrics?collect[]=steady")[0] == 200
    except OSError:  # refused until the server has seen the others close
        return False


def test_listening_beyond_loopback_is_refused_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "zsn", "--root", str(tmp_path), "serve",
                             "--listen", "0.0.0.0:0"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not loopback" in lines[0]


def test_an_address_in_use_is_a_failure_not_bad_input(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "zsn", "serve", "--root", str(tmp_path),
                                 "--listen", f"127.0.0.1:{port}"], capture_output=True,
                                text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "cannot listen on" in result.stderr


def test_serve_never_imports_textual_or_rich(tmp_path: Path) -> None:
    """The real sections, under an empty root: serve, scrape both routes, and look."""
    (tmp_path / "etc" / "wireguard").mkdir(parents=True, mode=0o700)
    code = textwrap.dedent(f"""
        import asyncio, sys, threading, urllib.request
        from zsn.exporter import serve
        from zsn.system.host import Host

        parser = serve.argparse.ArgumentParser()
        serve.add_arguments(parser)
        args = parser.parse_args(["--listen", "127.0.0.1:0"])
        bound, stop = [], None

        async def main():
            global stop
            stop = asyncio.Event()
            task = asyncio.create_task(serve.serve(Host.at({str(tmp_path)!r}), args,
                                                   ready=bound.extend, stop=stop))
            while not bound:
                await asyncio.sleep(0.01)
            for path in ("/metrics", "/export.json"):
                url = f"http://127.0.0.1:{{bound[0][1]}}{{path}}"
                body = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read())
                print(path, len(body))
            stop.set()
            await task

        asyncio.run(main())
        leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))
        print('LEAKED', leaked)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "LEAKED []" in result.stdout
    assert "/export.json" in result.stdout



@pytest.mark.parametrize(("text", "address", "loopback"), [
    ("127.0.0.1:9586", ("127.0.0.1", 9586), True),
    ("[::1]:9586", ("::1", 9586), True),
    ("localhost:9586", ("localhost", 9586), True),
    (":9586", ("", 9586), False),
    ("0.0.0.0:9586", ("0.0.0.0", 9586), False),
    ("[::]:9586", ("::", 9586), False),
])
def test_listen_addresses(text: str, address: tuple[str, int], loopback: bool) -> None:
    assert serve.parse_listen(text) == address
    assert serve.is_loopback(address[0]) is loopback


@pytest.mark.parametrize("text", ["9586", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000"])
def test_listen_mistakes(text: str) -> None:
    with pytest.raises(ZsnError, match="expected ADDRESS:PORT"):
        serve.parse_listen(text)


def test_every_collector_starts_reading_when_serve_starts_not_at_the_first_scrape(
        fake_sections: dict[str, ModuleType], tmp_path: Path) -> None:
    slow = fake_sections["slow"]
    with running(tmp_path, "--deadline", "0.3") as server:
        # a first reading slower than the deadline, under way before any scrape
        wait_for(lambda: len(slow.polls) == 1, 10, "the slow section's first reading")
        slow.release.set()
        status, text = server.get("/metrics?collect[]=slow")
    assert status == 200
    assert collector_lines(text, "slow")[0] == 1


def test_a_connection_that_sends_nothing_is_cut_at_the_head_deadline(
        fake_sections: dict[str, ModuleType], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Not at the keep-alive idle time (60 s): a silent connection holds a slot no longer
    than one that trickles a byte a second."""
    monkeypatch.setattr(serve, "HEAD_SECONDS", 2.0)
    with running(tmp_path) as server, socket.create_connection(
            ("127.0.0.1", server.port), timeout=20) as silent:
        started = time.monotonic()
        assert silent.recv(100) == b""  # closed by the server, no answer
        assert time.monotonic() - started < 8


@pytest.mark.parametrize("headers", [
    b"Content-Length: 0\r\nContent-Length: 30\r\n",
    b"Content-Length: 30\r\nContent-Length: 0\r\n",
    b"Content-Length: 30\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Host: other\r\n",
])
def test_conflicting_lengths_and_request_bodies_get_400_and_the_connection_closed(
        fake_sections: dict[str, ModuleType], tmp_path: Path, headers: bytes) -> None:
    """What follows such a head (a body, or a second request hidden as one) is never
    served: one answer, 400, and the end of the connection."""
    hidden = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"  # 30 bytes
    with running(tmp_path) as server, socket.create_connection(
            ("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n" + hidden)
        reply = read_all(sock)
    assert reply.split()[1] == b"400"
    assert reply.count(b"HTTP/1.1 ") == 1 and b"zsn_" not in reply
