"""`zsn serve --web-config`: the exporter-toolkit file read as Prometheus' exporters read
it (checked against promtool's own validator), TLS, basic auth with bcrypt, changes
taken at once, and what is refused rather than weakened."""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import bcrypt
import pytest

from tests.lab.pki import Pki, make_pki
from tests.lab.serving import running
from tests.needs import needs_tools
from zsn.errors import ZsnError
from zsn.exporter.webconfig import WebConfig, duration_seconds
from zsn.system.host import Host

PASSWORD = "correct horse"
# Cost 4 keeps the suite fast; the server treats every cost alike.
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki(server_names=["127.0.0.1", "localhost"], client_names=["scraper.lab"])


def write_tls(directory: Path, pki: Pki) -> None:
    (directory / "zsn.crt").write_text(pki.server_cert)
    (directory / "zsn.key").write_text(pki.server_key)
    (directory / "ca.crt").write_text(pki.ca_cert)
    (directory / "client.crt").write_text(pki.client_cert)
    (directory / "client.key").write_text(pki.client_key)


def config(directory: Path, text: str) -> Path:
    path = directory / "web.yml"
    path.write_text(text)
    return path


VALID = f"""
tls_server_config:
  cert_file: zsn.crt
  key_file: zsn.key
  min_version: TLS12
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
    X-Frame-Options: deny
basic_auth_users:
  prometheus: "{HASH}"
"""

INVALID = {
    "unknown key": "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
                   "  colour: blue\n",
    "header not allowed": "http_server_config:\n  headers:\n    Server: zsn\n",
    "header value": "http_server_config:\n  headers:\n    X-Frame-Options: always\n",
    "client auth type": "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
                        "  client_auth_type: Sometimes\n",
    "CA without client auth": "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
                              "  client_ca_file: ca.crt\n",
    "key without cert": "tls_server_config:\n  key_file: zsn.key\n",
    "TLS version": "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
                   "  min_version: TLS99\n",
    "missing cert file": "tls_server_config:\n  cert_file: nope.crt\n  key_file: zsn.key\n",
    "cipher": "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
              "  cipher_suites: [TLS_RSA_WITH_NOTHING]\n",
}


def test_zsn_and_promtool_agree_on_what_a_web_config_is(tmp_path: Path, pki: Pki) -> None:
    needs_tools("promtool")
    write_tls(tmp_path, pki)

    def promtool_accepts(path: Path) -> bool:
        result = subprocess.run(["promtool", "check", "web-config", str(path)],
                                capture_output=True, text=True, timeout=60, check=False)
        return result.returncode == 0

    path = config(tmp_path, VALID)
    assert promtool_accepts(path)
    WebConfig.load(Host(tmp_path), "/web.yml")
    for case, text in INVALID.items():
        path = config(tmp_path, text)
        assert not promtool_accepts(path), case
        with pytest.raises(ZsnError):
            WebConfig.load(Host(tmp_path), "/web.yml")


@pytest.mark.parametrize(("text", "reason"), [
    ("tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
     "  client_auth_type: RequireAnyClientCert\n  client_ca_file: ca.crt\n",
     "never asks for a client certificate it does not verify"),
    ("tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
     "  curve_preferences: [X25519, CurveP256]\n", "one NIST curve"),
    ("basic_auth_users:\n  prometheus: secret\n", "is not a bcrypt hash"),
    # a hash no login can match: refused when read, as the toolkit refuses it
    (f'basic_auth_users:\n  prometheus: "{HASH[:4]}99{HASH[6:]}"\n',
     "bcrypt cost 99 is not between 4 and 31"),
    (f'basic_auth_users:\n  prometheus: "{HASH[:4]}03{HASH[6:]}"\n',
     "bcrypt cost 3 is not between 4 and 31"),
    (f'basic_auth_users:\n  prometheus: "{HASH[:7]}{"A" * 22}{HASH[29:]}"\n',
     "its salt is not one bcrypt can use"),
    (f'basic_auth_users:\n  prometheus: "{HASH[:7]}{"!" * 22}{HASH[29:]}"\n',
     "is not a bcrypt hash"),
    # a header value is written into every response: a line break would add headers
    ('http_server_config:\n  headers:\n    Strict-Transport-Security: '
     '"max-age=1\\r\\nSet-Cookie: a=b"\n', "one line of printable text"),
])
def test_what_python_cannot_honour_is_refused_not_weakened(
        tmp_path: Path, pki: Pki, text: str, reason: str) -> None:
    write_tls(tmp_path, pki)
    with pytest.raises(ZsnError, match=reason):
        config(tmp_path, text)
        WebConfig.load(Host(tmp_path), "/web.yml")


def test_go_durations() -> None:
    assert duration_seconds("1m30s", "x") == 90
    assert duration_seconds("250ms", "x") == 0.25
    assert duration_seconds(0, "x") == 0
    for bad in ("1 s", "s", "1d", "", 5):
        with pytest.raises(ZsnError):
            duration_seconds(bad, "x")


def https(port: int, path: str = "/metrics", *, user: str | None = "prometheus",
          password: str = PASSWORD, ca: str, cert: tuple[Path, Path] | None = None
          ) -> tuple[int, dict[str, str], str]:
    context = ssl.create_default_context(cadata=ca)
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=20)
    headers = {}
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


@pytest.fixture
def served(fake_sections: dict[str, ModuleType], tmp_path: Path, pki: Pki
           ) -> Iterator[tuple[int, Path]]:
    fake_sections["slow"].release.set()
    write_tls(tmp_path, pki)
    path = config(tmp_path, VALID)
    with running(tmp_path, "--web-config", "/web.yml", "steady") as server:
        yield server.port, path


def test_tls_and_basic_auth(served: tuple[int, Path], pki: Pki) -> None:
    port, _ = served
    status, headers, body = https(port, ca=pki.ca_cert)
    assert status == 200 and "zsn_steady_value" in body
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "deny"
    for user, password in (("prometheus", "wrong"), ("nobody", PASSWORD), (None, "")):
        status, headers, body = https(port, user=user, password=password, ca=pki.ca_cert)
        assert status == 401, (user, password)
        assert headers["WWW-Authenticate"] == "Basic"
        assert "zsn_" not in body
    # plain HTTP to the TLS port: no answer but the end of the connection
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        with contextlib.suppress(ConnectionResetError):
            assert b"zsn_" not in sock.recv(65536)


def test_a_changed_config_takes_effect_at_once(served: tuple[int, Path], pki: Pki) -> None:
    port, path = served
    assert https(port, ca=pki.ca_cert)[0] == 200
    other = bcrypt.hashpw(b"new password", bcrypt.gensalt(4)).decode()
    path.write_text(VALID.replace(HASH, other) + "\n")
    assert https(port, ca=pki.ca_cert)[0] == 401
    assert https(port, password="new password", ca=pki.ca_cert)[0] == 200
    # broken: the last good settings stay in force until it is fixed
    path.write_text(VALID + "colour: blue\n")
    assert https(port, ca=pki.ca_cert)[0] == 401
    assert https(port, password="new password", ca=pki.ca_cert)[0] == 200
    path.write_text(VALID)
    assert https(port, ca=pki.ca_cert)[0] == 200


def test_client_certificates_and_their_names(fake_sections: dict[str, ModuleType],
                                             tmp_path: Path, pki: Pki) -> None:
    write_tls(tmp_path, pki)
    client = (tmp_path / "client.crt", tmp_path / "client.key")
    path = config(tmp_path, "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n"
                  "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                  "  client_allowed_sans: [scraper.lab]\n")
    WebConfig.load(Host(tmp_path), "/web.yml").require_remote_safe()  # verified clients suffice
    with running(tmp_path, "--web-config", "/web.yml", "steady") as server:
        assert https(server.port, user=None, ca=pki.ca_cert, cert=client)[0] == 200
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            https(server.port, user=None, ca=pki.ca_cert)
        path.write_text(path.read_text().replace("scraper.lab", "other.lab"))
        with pytest.raises((ssl.SSLError, ConnectionError, OSError, http.client.HTTPException)):
            https(server.port, user=None, ca=pki.ca_cert, cert=client)


def test_the_rate_limit(fake_sections: dict[str, ModuleType], tmp_path: Path,
                        pki: Pki) -> None:
    config(tmp_path, "rate_limit:\n  interval: 1h\n  burst: 2\n")
    with running(tmp_path, "--web-config", "/web.yml", "steady") as server:
        statuses = [server.get("/metrics")[0] for _ in range(4)]
    assert statuses == [200, 200, 429, 429]


def test_beyond_loopback_needs_tls_and_client_authentication(tmp_path: Path, pki: Pki) -> None:
    write_tls(tmp_path, pki)
    config(tmp_path, f'basic_auth_users:\n  prometheus: "{HASH}"\n')
    with pytest.raises(ZsnError, match="needs TLS"):
        WebConfig.load(Host(tmp_path), "/web.yml").require_remote_safe()
    config(tmp_path, "tls_server_config:\n  cert_file: zsn.crt\n  key_file: zsn.key\n")
    with pytest.raises(ZsnError, match="needs client authentication"):
        WebConfig.load(Host(tmp_path), "/web.yml").require_remote_safe()
    config(tmp_path, VALID)
    WebConfig.load(Host(tmp_path), "/web.yml").require_remote_safe()


@pytest.mark.parametrize("change", [
    "users removed", "emptied", "TLS removed", "broken", "unreadable", "too deep"])
def test_a_reread_config_is_held_to_the_rules_of_the_start(
        fake_sections: dict[str, ModuleType], tmp_path: Path, pki: Pki,
        caplog: pytest.LogCaptureFixture, change: str) -> None:
    """Beyond loopback, a config without TLS or users is refused at the start; one that
    becomes so while zsn serves (or that cannot be read any more) is refused too: the
    last good one stays in force and one line in the log says why."""
    write_tls(tmp_path, pki)
    path = config(tmp_path, VALID)
    new_text = {"users removed": VALID.split("basic_auth_users:")[0], "emptied": "",
                "TLS removed": VALID.split("http_server_config:")[1].join(
                    ["http_server_config:", ""]),
                "broken": VALID + "colour: blue\n", "unreadable": None,
                "too deep": "basic_auth_users: " + "[" * 100 + "]" * 100}[change]
    with running(tmp_path, "--listen", "0.0.0.0:0", "--web-config", "/web.yml",
                 "steady") as server:
        assert https(server.port, ca=pki.ca_cert)[0] == 200
        caplog.clear()
        if new_text is None:
            path.unlink()
        else:
            path.write_text(new_text)
        # still TLS, still the user's password: nobody else gets the metrics
        assert https(server.port, user=None, ca=pki.ca_cert)[0] == 401
        status, _headers, body = https(server.port, ca=pki.ca_cert)
        assert status == 200 and "zsn_steady_value" in body
        [line] = [r.getMessage() for r in caplog.records
                  if r.name == "zsn.exporter.serve" and "web config" in r.getMessage()]
        assert "last good one stays in force" in line and str(path) in line
        assert "\n" not in line
        path.write_text(VALID)  # fixed: in force again
        assert https(server.port, ca=pki.ca_cert)[0] == 200


def test_an_unknown_user_costs_a_check_at_the_highest_cost_in_use(tmp_path: Path) -> None:
    """The toolkit's rule: a wrong password of a known user and any password of an
    unknown one take the same bcrypt work, so the timing tells no names."""
    cheap = bcrypt.hashpw(b"other", bcrypt.gensalt(4)).decode()
    costly = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(12)).decode()
    config(tmp_path, f'basic_auth_users:\n  cheap: "{cheap}"\n  prometheus: "{costly}"\n')
    web = WebConfig.load(Host(tmp_path), "/web.yml")
    settings = web.current()
    assert settings.unknown_user_hash.startswith("$2b$12$")

    def timed(user: str, password: str) -> float:
        header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        started = time.perf_counter()
        assert not web.check_basic(settings, header)
        return time.perf_counter() - started

    known = min(timed("prometheus", f"wrong {n}") for n in range(3))
    unknown = min(timed("nobody", f"wrong {n}") for n in range(3))
    assert unknown > known / 2, (known, unknown)


def test_checks_are_cached_and_unknown_users_cost_the_same(tmp_path: Path, pki: Pki) -> None:
    """bcrypt runs once per (user, hash, password); an unknown user is checked against a
    hash too, so timing does not tell which users exist."""
    slow_hash = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(12)).decode()
    config(tmp_path, f'basic_auth_users:\n  prometheus: "{slow_hash}"\n')
    web = WebConfig.load(Host(tmp_path), "/web.yml")
    settings = web.current()

    def timed(user: str, password: str) -> tuple[bool, float]:
        header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        started = time.perf_counter()
        return web.check_basic(settings, header), time.perf_counter() - started

    ok, first = timed("prometheus", PASSWORD)
    again_ok, again = timed("prometheus", PASSWORD)
    assert ok and again_ok and again < first / 10
    unknown_ok, unknown = timed("nobody", PASSWORD)
    assert not unknown_ok and unknown > first / 20  # a bcrypt check was made
    assert not web.check_basic(settings, "Basic !!!") and not web.check_basic(settings, None)


def test_a_certificate_path_that_names_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """OpenSSL reads a FIFO until a writer comes: zsn serve hung at the start (and at a
    reload, the event loop with it)."""
    import os

    os.mkfifo(tmp_path / "cert.pem")
    config(tmp_path, "tls_server_config:\n  cert_file: cert.pem\n  key_file: cert.pem\n")
    with pytest.raises(ZsnError, match="cert.pem is not a regular file"):
        WebConfig.load(Host(tmp_path), "/web.yml")


def test_a_web_config_others_could_write_is_refused(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Its users and TLS settings decide who reads the metrics: only from a file nobody
    but root could have written (used silently before); at a reload, the last good
    settings stay in force."""
    path = config(tmp_path, f'basic_auth_users:\n  prometheus: "{HASH}"\n')
    path.chmod(0o666)
    with pytest.raises(ZsnError, match=r"web\.yml: writable by group and others \(mode 0666\);"
                                       r" .*: chmod go-w .*web\.yml$"):
        WebConfig.load(Host(tmp_path), "/web.yml")
    path.chmod(0o600)
    web = WebConfig.load(Host(tmp_path), "/web.yml")
    path.write_text("")  # every user gone, in a file others can write
    path.chmod(0o666)
    assert web.current().users == {"prometheus": HASH}
    assert any("writable by group and others" in r.getMessage() for r in caplog.records)


def test_an_absolute_certificate_path_is_read_inside_the_root(tmp_path: Path, pki: Pki) -> None:
    """Under --root every path zsn reads is inside the tree: an absolute cert_file was
    read from the machine itself."""
    (tmp_path / "pki").mkdir()
    write_tls(tmp_path / "pki", pki)
    config(tmp_path, "tls_server_config:\n  cert_file: /pki/zsn.crt\n  key_file: /pki/zsn.key\n")
    assert WebConfig.load(Host(tmp_path), "/web.yml").tls
