"""`zsn serve`: a long-running Prometheus exporter of every export section.

A small asyncio HTTP/1.1 server (standard library only; never Textual or Rich) in
front of one `zsn.exporter.collectors.Collector` per registered section:

- ``GET /metrics``: every section present on the host (``?collect[]=NAME`` for some,
  ``?exclude[]=NAME`` for all but some), each collector waited for no longer than its
  deadline; its ``zsn_collector_success`` and ``zsn_collector_duration_seconds``
  say how it went, and one that fails or is late never holds up the others.
- ``GET /export.json``: the document `zsn --export` prints (counters; no secrets).
- ``GET /``: a landing page linking both.

Bounds, so a client cannot hurt the scrapes of others: at most `MAX_CONNECTIONS`
connections (`MAX_CONNECTIONS_PER_CLIENT` from one address), the request head within
`HEAD_SECONDS` and `HEAD_BYTES` (one byte a second is cut off, and so is a connection
that sends nothing), no request bodies (400, as two Content-Length headers are),
responses written within `WRITE_SECONDS`, idle keep-alive connections closed after
`IDLE_SECONDS`. Listening anywhere but loopback needs a web config (`zsn.exporter.webconfig`:
TLS and basic auth, as Prometheus' own exporters read it).

This module names no domain: the sections come from `zsn.domains`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import ipaddress
import json
import logging
import signal
import socket
import ssl
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from zsn import __version__
from zsn.domains import domains
from zsn.errors import ZsnError
from zsn.exporter.collectors import Collector, Reading
from zsn.exporter.document import SCHEMA_VERSION, check_sections, collector_families
from zsn.exporter.prometheus import render
from zsn.system import files
from zsn.system.host import Host
from zsn.terminal import safe

if TYPE_CHECKING:
    from zsn.exporter.webconfig import RateLimit, Settings, WebConfig

DEFAULT_LISTEN = "127.0.0.1:9586"
"""The port Prometheus's registry of exporter ports gives the exporter zsn can stand in
for (see docs/metrics.md); loopback unless a web config says otherwise."""
DEFAULT_DEADLINE = 8.0
"""Seconds a scrape waits for each collector (Prometheus' default scrape timeout is 10 s)."""
DEFAULT_POLL_INTERVAL = 30.0
"""How often a section with a per-poll hook is polled when nobody scrapes."""
SCRAPE_TIMEOUT_MARGIN = 0.5
"""Kept free of Prometheus' own scrape timeout (its X-Prometheus-Scrape-Timeout-Seconds)."""
MAX_CONNECTIONS = 64
MAX_CONNECTIONS_PER_CLIENT = 8
HEAD_BYTES = 16 * 1024
HEAD_SECONDS = 10.0
IDLE_SECONDS = 60.0
WRITE_SECONDS = 30.0
MAX_REQUESTS_PER_CONNECTION = 10_000
LINGER_SECONDS = 1.0
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SINGLE_HEADERS = frozenset({"content-length", "transfer-encoding", "host", "authorization"})
"""Headers a request may give once: a second is refused, not merged or overridden."""

log = logging.getLogger("zsn.exporter.serve")


class Request(NamedTuple):
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    keep_alive: bool


class Response(NamedTuple):
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
           405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
           429: "Too Many Requests", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable"}


class ListenError(ZsnError):
    """The address cannot be listened on (in use, not here): exit 1, not bad input."""


class BadRequest(ZsnError):
    """The request cannot be served: answer with `status` and close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_head(head: bytes) -> Request:
    """The request line and headers of one HTTP/1.x request (no body allowed)."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # latin-1 decodes every byte; kept for clarity
        raise BadRequest(400, "request head is not text") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "malformed request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BadRequest(400, "malformed header line")
        key = name.lower()
        if key in headers and key in SINGLE_HEADERS:
            # Two lengths are two readings of where the request ends (RFC 9112 6.3):
            # one for this server, another for a proxy in front of it.
            raise BadRequest(400, f"{name} given twice")
        headers[key] = value.strip()
    if "transfer-encoding" in headers or headers.get("content-length", "0") != "0":
        raise BadRequest(400, "request bodies are not accepted")
    split = urlsplit(target)
    connection = headers.get("connection", "").lower()
    keep_alive = (connection != "close") if version == "HTTP/1.1" else (
        connection == "keep-alive")
    return Request(method, split.path, parse_qsl(split.query, keep_blank_values=True),
                   headers, keep_alive)


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[v6]:PORT``; ``:PORT`` for every address) as (host, port)."""
    host, colon, port_text = text.rpartition(":")
    if not colon or not port_text.isdigit() or int(port_text) > 65535:
        raise ZsnError(f"--listen {text!r}: expected ADDRESS:PORT, e.g. {DEFAULT_LISTEN}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback one ("" = every address)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise ZsnError(f"--listen: cannot resolve {host!r}: {exc.strerror or exc}") from None
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


class Exporter:
    """The collectors, and what a scrape makes of their readings."""

    def __init__(self, host: Host, *, deadline: float = DEFAULT_DEADLINE,
                 sections: Sequence[str] = ()) -> None:
        self.host = host
        self.deadline = deadline
        check_sections(sections)
        self.collectors = {each.name: Collector(each, host, forced=each.name in sections)
                           for each in domains() if not sections or each.name in sections}

    def close(self) -> None:
        for collector in self.collectors.values():
            collector.close()

    def warm_up(self) -> None:
        """Start every collector's first reading now, not at the first scrape: a first
        reading opens its readers cold (sockets, the pool streams, names from the
        configs) and can take longer than a scrape's deadline, which would report a
        working collector as failed once after each start."""
        for collector in self.collectors.values():
            collector.refresh()

    def chosen(self, query: list[tuple[str, str]]) -> list[Collector]:
        """The collectors a ``collect[]``/``exclude[]`` query names (node_exporter's rules)."""
        wanted = [value for key, value in query if key == "collect[]"]
        excluded = [value for key, value in query if key == "exclude[]"]
        if wanted and excluded:
            raise BadRequest(400, "collect[] and exclude[] cannot be used together")
        for name in wanted + excluded:
            if name not in self.collectors:
                known = ", ".join(self.collectors)
                raise BadRequest(400, f"unknown collector {name!r} (known: {known})")
        if wanted:
            return [self.collectors[name] for name in dict.fromkeys(wanted)]
        return [each for name, each in self.collectors.items() if name not in excluded]

    async def readings(self, collectors: list[Collector], deadline: float
                       ) -> list[tuple[Collector, Reading | None]]:
        """Each collector's reading, or None when it missed `deadline`."""
        futures = {each: asyncio.wrap_future(each.refresh()) for each in collectors}
        if futures:
            await asyncio.wait(futures.values(), timeout=deadline)
        return [(each, future.result() if future.done() and future.exception() is None
                 else None) for each, future in futures.items()]

    async def metrics(self, query: list[tuple[str, str]], deadline: float) -> bytes:
        parts: list[bytes] = []
        outcomes = []
        for collector, reading in await self.readings(self.chosen(query), deadline):
            if reading is None:
                outcomes.append((collector.name, False, deadline))
            elif reading.present:
                outcomes.append((collector.name, reading.complete, reading.duration))
                parts.append(reading.metrics)
        parts.append(render(collector_families(outcomes)).encode())
        return b"".join(parts)

    async def document(self, query: list[tuple[str, str]], deadline: float) -> bytes:
        collectors = self.chosen(query)
        document: dict[str, Any] = {
            "zsn": {"version": __version__, "schema": SCHEMA_VERSION},
            "host": {"hostname": files.read_hostname(self.host), "time": int(time.time())},
        }
        for collector, reading in await self.readings(collectors, deadline):
            if reading is None:
                document[collector.name] = {"errors": [
                    f"no reading within the deadline ({deadline:g} s)"]}
            elif reading.present:
                document[collector.name] = reading.data
        return (json.dumps(document, separators=(",", ":"), check_circular=False)
                + "\n").encode()

    async def poll_forever(self, collector: Collector, interval: float) -> None:
        """Poll a section with a per-poll hook every `interval` seconds, scraped or not."""
        while True:
            latest = collector.latest
            wait = interval if latest is None else \
                latest.finished_at + interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                latest_now = collector.latest
                if latest_now is not None and latest_now is not latest:
                    continue  # a scrape polled meanwhile: count from that poll
            await asyncio.wrap_future(collector.refresh(reuse_seconds=0))


class Server:
    """The HTTP side: connections, limits, routes."""

    def __init__(self, exporter: Exporter, web: WebConfig | None = None) -> None:
        self.exporter = exporter
        self.web = web
        self._tokens: float | None = None
        """The rate limit's bucket, full at the start (as Go's rate.Limiter)."""
        self._tokens_at = time.monotonic()
        self.connections = 0
        self.per_client: dict[str, int] = {}
        self._open: dict[asyncio.StreamWriter, asyncio.Event] = {}

    async def close_connections(self) -> None:
        """End every open connection (shutting down): their reads end as at EOF."""
        for writer in self._open:
            writer.close()
        ended = [event.wait() for event in self._open.values()]
        if ended:
            await asyncio.wait_for(asyncio.gather(*ended), WRITE_SECONDS)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        remote = writer.get_extra_info("peername")
        client = str(remote[0]) if isinstance(remote, tuple) and remote else "?"
        if (self.connections >= MAX_CONNECTIONS
                or self.per_client.get(client, 0) >= MAX_CONNECTIONS_PER_CLIENT):
            writer.close()
            return
        self.connections += 1
        self.per_client[client] = self.per_client.get(client, 0) + 1
        self._open[writer] = ended = asyncio.Event()
        try:
            if self.web is not None and not await self._secure(writer):
                return
            await self._serve_connection(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except Exception:  # one connection's bug must not stop the server
            log.exception("request failed")
        finally:
            del self._open[writer]
            ended.set()
            self.connections -= 1
            left = self.per_client[client] - 1
            if left:
                self.per_client[client] = left
            else:
                del self.per_client[client]
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _secure(self, writer: asyncio.StreamWriter) -> bool:
        """TLS as the web config says (read again if it changed); False: close."""
        assert self.web is not None
        # The client's first bytes (its TLS hello) stay unread while the config is read
        # again in a thread: read now, they would be lost to the handshake.
        transport = writer.transport
        transport.pause_reading()  # type: ignore[attr-defined]
        try:
            settings = await asyncio.to_thread(self.web.current)  # may read it again
        except ZsnError:
            return False  # no handshake without a config in force
        if settings.tls is None:
            transport.resume_reading()  # type: ignore[attr-defined]
            return True
        try:
            await writer.start_tls(settings.tls, ssl_handshake_timeout=HEAD_SECONDS)
        except (OSError, ssl.SSLError, TimeoutError):
            return False  # e.g. plain HTTP sent to the TLS port
        return self.web.client_allowed(settings, writer.get_extra_info("peercert"))

    async def _serve_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        for number in range(MAX_REQUESTS_PER_CONNECTION):
            # A new connection sends its first request within the head deadline: one that
            # sends nothing holds a slot no longer than one that trickles.
            wait = HEAD_SECONDS if number == 0 else IDLE_SECONDS
            try:
                first = await asyncio.wait_for(reader.read(1), wait)
            except TimeoutError:
                return
            if not first:
                return
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
                request = parse_head(first + head)
            except TimeoutError:
                await self._refuse(reader, writer, 408, "request head not received in time")
                return
            except (asyncio.LimitOverrunError, ValueError):
                await self._refuse(reader, writer, 431, "request head too large")
                return
            except BadRequest as exc:
                await self._refuse(reader, writer, exc.status, str(exc))
                return
            response = await self.respond(request)
            await self._send(writer, response, request.keep_alive, request.method)
            if not request.keep_alive:
                return

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      status: int, message: str) -> None:
        """Answer `status` and close, reading (and dropping) what the client still sends
        for a moment first, so the answer is not lost to a reset."""
        await self._send(writer, Response(status, f"{message}\n".encode()), False, "GET")
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(LINGER_SECONDS):
                dropped = 0
                while dropped < HEAD_BYTES * 4 and (chunk := await reader.read(HEAD_BYTES)):
                    dropped += len(chunk)

    async def respond(self, request: Request) -> Response:
        if self.web is None:
            return await self.route(request)
        try:
            settings = await asyncio.to_thread(self.web.current)
        except ZsnError:
            return Response(500, b"the web config cannot be used; see the log\n")
        response = await self._guarded(request, settings)
        return response._replace(headers=response.headers + settings.headers)

    async def _guarded(self, request: Request, settings: Settings) -> Response:
        assert self.web is not None
        if not self._take_token(settings.rate_limit):
            return Response(429, b"too many requests\n")
        if settings.users and not await asyncio.to_thread(
                self.web.check_basic, settings, request.headers.get("authorization")):
            return Response(401, b"unauthorized\n", headers=(("WWW-Authenticate", "Basic"),))
        return await self.route(request)

    def _take_token(self, limit: RateLimit) -> bool:
        """The web config's token bucket: one request per `interval`, `burst` at once."""
        if limit.interval <= 0:
            return True
        now = time.monotonic()
        capacity = max(1, limit.burst)
        tokens = capacity if self._tokens is None else self._tokens
        self._tokens = min(capacity, tokens + (now - self._tokens_at) / limit.interval)
        self._tokens_at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    async def route(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"only GET and HEAD\n", headers=(("Allow", "GET, HEAD"),))
        try:
            if request.path == "/metrics":
                body = await self.exporter.metrics(request.query, self._deadline(request))
                return Response(200, body, METRICS_TYPE)
            if request.path == "/export.json":
                body = await self.exporter.document(request.query, self._deadline(request))
                return Response(200, body, "application/json")
        except BadRequest as exc:
            return Response(exc.status, f"{exc}\n".encode())
        if request.path == "/":
            return Response(200, LANDING_PAGE, "text/html; charset=utf-8")
        return Response(404, b"not found: try /metrics or /export.json\n")

    def _deadline(self, request: Request) -> float:
        deadline = self.exporter.deadline
        header = request.headers.get("x-prometheus-scrape-timeout-seconds")
        if header:
            with contextlib.suppress(ValueError):
                deadline = min(deadline, max(0.1, float(header) - SCRAPE_TIMEOUT_MARGIN))
        return deadline

    async def _send(self, writer: asyncio.StreamWriter, response: Response, keep_alive: bool,
                    method: str) -> None:
        lines = [f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Error')}",
                 f"Content-Type: {response.content_type}",
                 f"Content-Length: {len(response.body)}",
                 f"Connection: {'keep-alive' if keep_alive else 'close'}"]
        lines += [f"{name}: {value}" for name, value in response.headers]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if method != "HEAD":
            writer.write(response.body)
        await asyncio.wait_for(writer.drain(), WRITE_SECONDS)


LANDING_PAGE = f"""<!DOCTYPE html>
<html><head><title>zsn exporter</title></head>
<body><h1>zsn exporter</h1><p>zsn {html.escape(__version__)}</p>
<ul><li><a href="metrics">/metrics</a> (Prometheus text; ?collect[]=SECTION)</li>
<li><a href="export.json">/export.json</a> (what zsn --export prints)</li></ul>
</body></html>
""".encode()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sections", metavar="SECTION", nargs="*",
                        help="serve only these sections (default: every section present, "
                             "checked at each scrape)")
    parser.add_argument("--listen", metavar="ADDR:PORT", default=DEFAULT_LISTEN,
                        help=f"where to listen (default {DEFAULT_LISTEN}); anything but "
                             "loopback needs --web-config")
    parser.add_argument("--web-config", metavar="FILE",
                        help="TLS, basic auth and a rate limit in the exporter-toolkit format "
                             "(what Prometheus' own exporters read with --web.config.file)")
    parser.add_argument("--deadline", metavar="SECONDS", type=float, default=DEFAULT_DEADLINE,
                        help="how long a scrape waits for each section (default "
                             f"{DEFAULT_DEADLINE:g}; less when Prometheus' scrape timeout "
                             "is shorter)")
    parser.add_argument("--poll-interval", metavar="SECONDS", type=float,
                        default=DEFAULT_POLL_INTERVAL,
                        help="how often sections that keep a history are polled between "
                             f"scrapes (default {DEFAULT_POLL_INTERVAL:g})")


async def serve(host: Host, args: argparse.Namespace, *,
                ready: Callable[[list[tuple[str, int]]], None] | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Serve until SIGTERM/SIGINT (or `stop` is set); `ready` gets the bound addresses."""
    address, port = parse_listen(args.listen)
    web = None
    remote = not is_loopback(address)
    if remote and not args.web_config:
        raise ZsnError(f"listening on {args.listen} (not loopback) needs --web-config "
                       "FILE with TLS and client authentication")
    if args.web_config:
        from zsn.exporter.webconfig import WebConfig

        # Beyond loopback every reading of it needs TLS and client authentication, at
        # the start and at each change (a reading without them is not put in force).
        web = WebConfig.load(host, args.web_config, remote=remote)
    exporter = Exporter(host, deadline=args.deadline, sections=args.sections)
    server_obj = Server(exporter, web)
    try:
        server = await asyncio.start_server(server_obj.handle, address or None, port,
                                            limit=HEAD_BYTES, reuse_address=True)
    except OSError as exc:
        exporter.close()
        raise ListenError(f"cannot listen on {args.listen}: {exc.strerror or exc}") from None
    exporter.warm_up()
    pollers = [asyncio.create_task(exporter.poll_forever(each, args.poll_interval))
               for each in exporter.collectors.values() if each.has_hook]
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
    bound = [sock.getsockname()[:2] for sock in server.sockets]
    log.info("%s: listening on %s%s", __version__, ", ".join(map(_describe, bound)),
             " (TLS)" if web is not None and web.tls else "")
    if ready is not None:
        ready(bound)
    try:
        async with server:
            await stop.wait()
            server.close()
            await server_obj.close_connections()
    finally:
        for task in pollers:
            task.cancel()
        exporter.close()


def _describe(address: Any) -> str:
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``zsn serve ...`` (the arguments after ``serve``)."""
    parser = argparse.ArgumentParser(
        prog="zsn serve",
        description="Serve every export section to Prometheus: GET /metrics (?collect[]=NAME "
                    "for some), GET /export.json. Exit status: 0 stopped by SIGTERM or "
                    "SIGINT; 1 cannot listen; 2 bad arguments or web config.")
    parser.add_argument("--root", default="/", metavar="DIR",
                        help="treat DIR as the system root (default /)")
    add_arguments(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv))
    if not 0.1 <= args.deadline <= 120:
        parser.error("--deadline must be between 0.1 and 120 seconds")
    if not 1 <= args.poll_interval <= 3600:
        parser.error("--poll-interval must be between 1 and 3600 seconds")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("zsn serve: %(message)s"))
    logging.getLogger("zsn").addHandler(handler)
    logging.getLogger("zsn").setLevel(logging.INFO)
    try:
        host = Host.at(args.root)
        asyncio.run(serve(host, args))
    except ZsnError as exc:
        print(f"zsn serve: {safe(str(exc))}", file=sys.stderr)
        return 1 if isinstance(exc, ListenError) else 2
    except KeyboardInterrupt:
        return 0
    return 0


class SafeFormatter(logging.Formatter):
    """Log lines may carry outside text (names, daemon replies): through the one
    terminal-safety function, as everything zsn prints."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(safe(line) for line in super().format(record).split("\n"))
