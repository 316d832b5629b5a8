"""A real Prometheus (Debian's) scrapes `zsn serve` over TLS with basic auth, in the
namespace of a wireguard-go server with a peer.

Read back through Prometheus' HTTP API: the target is up, a WireGuard byte counter
and a link's counters equal what UAPI and the kernel report. Jobs with the wrong
password and without TLS are refused, and a client sending one byte a second is cut
off while Prometheus' scrapes go on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
import pytest

from tests.integration.conftest import WgPair
from tests.lab.netns import run, stop_process, wait_for
from tests.lab.pki import make_pki
from tests.needs import needs_tools
from tests.schema import check_export
from zsn.exporter import serve
from zsn.wireguard import uapi

pytestmark = pytest.mark.lab

PASSWORD = "scrape-me"
ZSN_ADDRESS = "192.168.240.1"
"""The server namespace's veth address: not loopback, so zsn demands TLS and auth."""
PORT = 19586
PROMETHEUS_PORT = 19090


@dataclass
class Scraped:
    ns: str
    directory: Path
    ca: Path
    config: Path
    """The WireGuard server's config (its private key must never be served)."""


def in_namespace(ns: str, code: str, timeout: float = 30) -> Any:
    """Run Python `code` (which prints one JSON value) inside `ns`."""
    result = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code],
                            capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(result.stdout)


def prometheus_api(ns: str, path: str) -> Any:
    code = ("import json, urllib.request; print(json.dumps(json.load(urllib.request.urlopen("
            f"'http://127.0.0.1:{PROMETHEUS_PORT}{path}', timeout=10))))")
    return in_namespace(ns, code)


def query(ns: str, expr: str) -> dict[str, float]:
    """Instant query: value by the series' public_key/interface label."""
    from urllib.parse import quote

    result = prometheus_api(ns, f"/api/v1/query?query={quote(expr)}")["data"]["result"]
    return {(s["metric"].get("public_key") or s["metric"].get("interface", "")): float(
        s["value"][1]) for s in result}


def targets(ns: str) -> dict[str, dict[str, Any]]:
    found = prometheus_api(ns, "/api/v1/targets")["data"]["activeTargets"]
    return {target["labels"]["job"]: target for target in found}


def start(argv: list[str], ns: str, log: Path,
          env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)


@pytest.fixture
def scraped(wg_pair: WgPair, tmp_path: Path) -> Iterator[Scraped]:
    needs_tools("prometheus", "promtool")
    ns = wg_pair.ns[0]
    pki = make_pki(server_names=[ZSN_ADDRESS])
    # The web config is zsn's own state: in a folder only root can change, up to /
    # (pytest's tmp_path lies in /tmp, which everyone may write to).
    web = Path(tempfile.mkdtemp(prefix="zsn-test-web-", dir="/run"))
    (web / "zsn.crt").write_text(pki.server_cert)
    (web / "zsn.key").write_text(pki.server_key)
    (tmp_path / "ca.crt").write_text(pki.ca_cert)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()
    (web / "web.yml").write_text(
        "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
        f'basic_auth_users:\n  prometheus: "{hashed}"\n')
    (tmp_path / "password").write_text(PASSWORD)
    (tmp_path / "wrong").write_text("not-the-password")
    target = f"{ZSN_ADDRESS}:{PORT}"

    def job(name: str, scheme: str, password_file: str) -> str:
        return (f"  - job_name: {name}\n    scheme: {scheme}\n"
                f"    tls_config: {{ca_file: {tmp_path / 'ca.crt'}}}\n"
                f"    basic_auth: {{username: prometheus, password_file: "
                f"{tmp_path / password_file}}}\n"
                f"    static_configs: [{{targets: ['{target}']}}]\n")

    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n" + job("zsn", "https", "password")
        + job("wrong-password", "https", "wrong") + job("no-tls", "http", "password"))
    zsn = start([sys.executable, "-m", "zsn", "serve", "--listen", target,
                 "--web-config", str(web / "web.yml")], ns, tmp_path / "zsn.log",
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    prometheus = start(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                        f"--storage.tsdb.path={tmp_path / 'data'}",
                        f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}"],
                       ns, tmp_path / "prometheus.log")
    try:
        wait_for(lambda: _up(ns), 60, "Prometheus to scrape zsn: "
                 f"{(tmp_path / 'zsn.log').read_text()[-800:]}")
        yield Scraped(ns, tmp_path, tmp_path / "ca.crt", wg_pair.config_path)
    finally:
        stop_process(prometheus)
        stop_process(zsn)
        shutil.rmtree(web)
    assert zsn.returncode == 0, (tmp_path / "zsn.log").read_text()[-2000:]


def _up(ns: str) -> bool:
    try:
        return bool(targets(ns)["zsn"]["health"] == "up")
    except (subprocess.SubprocessError, KeyError, json.JSONDecodeError):
        return False


def test_prometheus_scrapes_zsn_over_tls_with_basic_auth(wg_pair: WgPair,
                                                         scraped: Scraped) -> None:
    """One Prometheus for every check (it takes seconds to start): the CI time stays
    that of one scrape set-up."""
    reads_what_the_kernel_and_uapi_report(wg_pair, scraped)
    refuses_a_wrong_password_and_no_tls(scraped)
    bounds_a_slow_client_while_scrapes_go_on(scraped)
    passes_promtool_check_metrics(scraped)


def reads_what_the_kernel_and_uapi_report(wg_pair: WgPair, scraped: Scraped) -> None:
    ns = scraped.ns
    peer_key = wg_pair.public_keys[1]
    # traffic through the tunnel, then quiet: the counters hold still
    run(["ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", wg_pair.tunnel_ips[1]])
    device = uapi.get_device(wg_pair.sockets[0])
    (peer,) = [p for p in device.peers if p.public_key == peer_key]

    def wireguard_matches() -> bool:
        received = query(ns, f'wireguard_received_bytes_total{{public_key="{peer_key}"}}')
        sent = query(ns, f'wireguard_sent_bytes_total{{public_key="{peer_key}"}}')
        return received.get(peer_key) == peer.rx_bytes and sent.get(peer_key) == peer.tx_bytes

    wait_for(wireguard_matches, 30, "Prometheus' WireGuard counters to equal UAPI's")
    labels = prometheus_api(ns, "/api/v1/series?match[]=wireguard_received_bytes_total")["data"]
    (series,) = [s for s in labels if s["public_key"] == peer_key]
    assert series["friendly_name"] == wg_pair.peer_name
    assert series["allowed_ips"] == f"{wg_pair.tunnel_ips[1]}/32"
    assert series["interface"] == wg_pair.ifnames[0]

    veth = wg_pair.lab.name("va")

    def link_matches() -> bool:
        shown = json.loads(run(["ip", "-n", ns, "-s", "-j", "link", "show", "dev", veth]).stdout)
        stats = shown[0]["stats64"]
        expected = {"receive_bytes": stats["rx"]["bytes"], "transmit_bytes": stats["tx"]["bytes"],
                    "receive_packets": stats["rx"]["packets"],
                    "transmit_packets": stats["tx"]["packets"]}
        return all(query(ns, f'zsn_link_{name}_total{{interface="{veth}"}}').get(veth) == value
                   for name, value in expected.items())

    wait_for(link_matches, 30, "Prometheus' link counters to equal the kernel's")
    success = query(ns, "zsn_collector_success")
    assert success, "no collector lines"
    for collector in ("wireguard", "links"):
        value = query(ns, f'zsn_collector_success{{collector="{collector}"}}')
        assert value and all(v == 1 for v in value.values()), collector


def refuses_a_wrong_password_and_no_tls(scraped: Scraped) -> None:
    def refused() -> bool:
        found = targets(scraped.ns)
        return all(found[job]["health"] == "down" for job in ("wrong-password", "no-tls"))

    wait_for(refused, 30, "both bad jobs to be down")
    found = targets(scraped.ns)
    assert "401" in found["wrong-password"]["lastError"]
    assert found["zsn"]["health"] == "up"
    body = in_namespace(scraped.ns, _fetch_code("/export.json", scraped, PASSWORD))
    check_export(json.loads(body))
    # never a secret: the server's private key is in its config, not in the answer
    private = next(line.split(" = ", 1)[1] for line in scraped.config.read_text().splitlines()
                   if line.startswith("PrivateKey"))
    assert "private_key" not in body and private not in body
    assert in_namespace(scraped.ns, _fetch_code("/metrics", scraped, "nope")) == 401


def bounds_a_slow_client_while_scrapes_go_on(scraped: Scraped) -> None:
    """One byte a second on a connection of its own: zsn closes it at its head deadline,
    and Prometheus' one-second scrapes stay up meanwhile."""
    code = f"""
import json, socket, time
sock = socket.create_connection(("{ZSN_ADDRESS}", {PORT}), timeout=30)
started = time.monotonic()
closed = None
for _ in range(40):
    try:
        sock.send(b"G")
        sock.settimeout(1.0)
        if sock.recv(1) == b"":
            closed = time.monotonic() - started
            break
    except socket.timeout:
        continue
    except OSError:
        closed = time.monotonic() - started
        break
print(json.dumps(closed))
"""
    before = _last_scrape(scraped.ns)
    closed_after = in_namespace(scraped.ns, code, timeout=60)
    assert closed_after is not None and closed_after <= serve.HEAD_SECONDS + 5
    found = targets(scraped.ns)["zsn"]
    assert found["health"] == "up"
    assert _last_scrape(scraped.ns) > before + closed_after - 3  # kept scraping meanwhile


def passes_promtool_check_metrics(scraped: Scraped) -> None:
    text = in_namespace(scraped.ns, _fetch_code("/metrics", scraped, PASSWORD, text=True))
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _last_scrape(ns: str) -> float:
    """When Prometheus last scraped zsn (its RFC 3339 time, nanoseconds cut to micro)."""
    from datetime import datetime

    stamp = targets(ns)["zsn"]["lastScrape"]
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{whole}.{(fraction + '000000')[:6]}+00:00").timestamp()


def _fetch_code(path: str, scraped: Scraped, password: str, text: bool = False) -> str:
    """Code that fetches `path` over TLS with basic auth and prints the body (or the
    HTTP status of a refusal) as JSON."""
    return f"""
import base64, json, ssl, urllib.error, urllib.request
context = ssl.create_default_context(cafile={str(scraped.ca)!r})
token = base64.b64encode(b"prometheus:" + {password!r}.encode()).decode()
request = urllib.request.Request("https://{ZSN_ADDRESS}:{PORT}{path}",
                                 headers={{"Authorization": "Basic " + token}})
try:
    print(json.dumps(urllib.request.urlopen(request, context=context, timeout=20).read().decode()))
except urllib.error.HTTPError as exc:
    print(json.dumps(exc.code))
"""
