"""`zsn serve` for tests: small sections made for the test (one registry line each, as
a real domain) that can be made to fail, hang or count their polls, and a server in a
thread of the test's process."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from tests.lab.netns import wait_for
from zsn import domains
from zsn.exporter import serve
from zsn.system.host import Host

SECTIONS = {
    # name: export module source (present/collect/prometheus, maybe a Poller and a hook)
    "steady": '''
        from zsn.exporter.prometheus import MetricFamily

        def present(host):
            return True

        def collect(host, *, include_secrets=False):
            return {"value": 7, "secret_free": True}

        def prometheus(data):
            family = MetricFamily("zsn_steady_value", "gauge", "A steady value.")
            family.add({"name": 'say "hi"'}, data["value"])
            return [family]
    ''',
    "broken": '''
        from zsn.errors import ZsnError

        def present(host):
            return True

        def collect(host, *, include_secrets=False):
            raise ZsnError("the daemon refused")

        def prometheus(data):
            return []
    ''',
    "partial": '''
        from zsn.exporter.prometheus import MetricFamily

        def present(host):
            return True

        def collect(host, *, include_secrets=False):
            return {"value": 1, "errors": ["one interface could not be read"]}

        def prometheus(data):
            family = MetricFamily("zsn_partial_value", "gauge", "What could be read.")
            family.add({}, data["value"])
            return [family]
    ''',
    "slow": '''
        import threading
        from zsn.exporter.prometheus import MetricFamily

        release = threading.Event()
        polls = []

        def present(host):
            return True

        def collect(host, *, include_secrets=False):
            polls.append(1)
            release.wait(30)
            return {"value": len(polls)}

        def prometheus(data):
            family = MetricFamily("zsn_slow_value", "gauge", "Polls so far.")
            family.add({}, data["value"])
            return [family]
    ''',
    "absent": '''
        def present(host):
            return False

        def collect(host, *, include_secrets=False):
            raise AssertionError("an absent section is never read")

        def prometheus(data):
            return []
    ''',
    "hooked": '''
        from zsn.exporter.prometheus import MetricFamily

        hooked = []
        made = []

        def present(host):
            return True

        def collect(host, *, include_secrets=False):
            return Poller(host).section(Poller(host).poll())

        class Poller:
            def __init__(self, host):
                made.append(self)
                self.count = 0
                self.closed = False

            def poll(self):
                self.count += 1
                return ("snapshot", self.count)

            def section(self, snapshot):
                return {"polls": snapshot[1]}

            def close(self):
                self.closed = True

        def record(host, snapshot):
            hooked.append(snapshot)
            if snapshot[1] == 2:
                raise RuntimeError("the history store is locked")

        def prometheus(data):
            family = MetricFamily("zsn_hooked_polls", "counter", "Polls of the section.")
            family.add({}, data["polls"])
            return [family]
    ''',
}


@pytest.fixture
def fake_sections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                  ) -> Iterator[dict[str, ModuleType]]:
    """Registers one package per entry of SECTIONS (instead of the real domains)."""
    source = tmp_path / "src"
    packages = []
    for name, export in SECTIONS.items():
        package = source / f"zsn_fake_{name}"
        package.mkdir(parents=True)
        hook = ', on_poll="zsn_fake_hooked.export:record"' if name == "hooked" else ""
        (package / "__init__.py").write_text(textwrap.dedent(f'''
            from zsn.domains import Domain

            DOMAIN = Domain(name="{name}", title="{name}", export="zsn_fake_{name}.export",
                            commands=(), pane="", lint=""{hook})
        '''))
        (package / "export.py").write_text(textwrap.dedent(export))
        packages.append(f"zsn_fake_{name}")
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.setattr(domains, "REGISTRY", tuple(packages))
    domains._declared.cache_clear()
    yield {name: importlib.import_module(f"zsn_fake_{name}.export") for name in SECTIONS}
    importlib.import_module("zsn_fake_slow.export").release.set()
    domains._declared.cache_clear()
    for module in [m for m in sys.modules if m.startswith("zsn_fake_")]:
        del sys.modules[module]


class Running(SimpleNamespace):
    port: int
    loop: asyncio.AbstractEventLoop

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        return http_get(self.port, path, headers)


@contextmanager
def running(tmp_path: Path, *argv: str) -> Iterator[Running]:
    """`zsn serve` in a thread of this process, on a free loopback port."""
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    args = parser.parse_args(["--listen", "127.0.0.1:0", *argv])
    bound: list[tuple[str, int]] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            loop.run_until_complete(serve.serve(Host(tmp_path), args, ready=bound.extend,
                                                stop=stop))
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_for(lambda: bool(bound or failed), 10, "the server to listen")
    if failed:
        raise failed[0]
    try:
        yield Running(port=bound[0][1], loop=loop)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def http_get(port: int, path: str, headers: dict[str, str] | None = None,
             timeout: float = 20) -> tuple[int, str]:
    lines = [f"GET {path} HTTP/1.1", "Host: localhost", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        reply = read_all(sock)
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)
