"""`zsn serve --web-config FILE`: TLS and basic auth, read as Prometheus' own exporters
read ``--web.config.file`` (prometheus/exporter-toolkit, docs/web-configuration.md).

The same YAML file works for both: ``tls_server_config``, ``http_server_config``,
``basic_auth_users`` (bcrypt hashes) and ``rate_limit``; a key zsn does not know is an
error (the toolkit parses strictly too), and so is a setting Python's `ssl` cannot
honour (asking for a client certificate without verifying it, several curves in an
order): refused with the reason, never quietly weakened.

The file and the files it names are looked at again on every connection, as the
toolkit reads them on every request: a renewed certificate or a removed user takes
effect at once, without a restart. Every reading is checked as strictly as the first
(beyond loopback: TLS, and users or verified client certificates): one that fails,
or a file that became unreadable, is logged in one line and the last good settings
stay in force, so a half-written or emptied file never opens `/metrics` to anyone.

bcrypt hashes are checked when the file is read, as the toolkit does (``$2a$``,
``$2b$`` or ``$2y$``, a cost of 4 to 31, a salt bcrypt can use): a hash no login could
ever match is refused, not found out at the first scrape. A login for a user the file
does not name is checked against a hash of the highest cost in the file, so the time
it takes does not tell which users exist.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import logging
import os
import re
import ssl
import stat
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple, cast

from zsn import decode
from zsn.errors import ZsnError
from zsn.system import own_state
from zsn.system.files import read_text
from zsn.system.host import Host

log = logging.getLogger("zsn.exporter.serve")

CONFIG_MAX_BYTES = 1 << 20
TOP_KEYS = {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"}
TLS_KEYS = {"cert", "key", "client_ca", "cert_file", "key_file", "client_auth_type",
            "client_ca_file", "client_allowed_sans", "min_version", "max_version",
            "cipher_suites", "prefer_server_cipher_suites", "curve_preferences"}
HTTP_KEYS = {"http2", "headers"}
RATE_KEYS = {"interval", "burst"}
HEADERS: dict[str, tuple[str, ...]] = {
    # name: the only values allowed (none listed: any)
    "Strict-Transport-Security": (),
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": (),
    "Content-Security-Policy": (),
}
TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
# Go's names (crypto/tls CipherSuites(), what the toolkit accepts) -> OpenSSL's. The TLS
# 1.3 suites cannot be chosen in Go either: accepted, nothing to set.
CIPHERS = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_AES_128_GCM_SHA256": "",
    "TLS_AES_256_GCM_SHA384": "",
    "TLS_CHACHA20_POLY1305_SHA256": "",
}
CURVES = {"CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1"}
CLIENT_AUTH = {"NoClientCert": ssl.CERT_NONE, "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
               "RequireAndVerifyClientCert": ssl.CERT_REQUIRED}
CANNOT_ASK_UNVERIFIED = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
BCRYPT_HASH = re.compile(r"\$2[aby]\$(\d\d)\$([./A-Za-z0-9]{22})[./A-Za-z0-9]{31}")
"""A bcrypt hash as htpasswd -B and Go's bcrypt write it."""
BCRYPT_COSTS = range(4, 32)
"""Go's bcrypt.MinCost to MaxCost, what the toolkit accepts."""
AUTH_CACHE_SIZE = 256
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


class RateLimit(NamedTuple):
    interval: float
    """Seconds between two requests (0: no limit)."""
    burst: int


class Settings(NamedTuple):
    """One reading of the file."""

    tls: ssl.SSLContext | None
    users: dict[str, str]
    headers: tuple[tuple[str, str], ...]
    rate_limit: RateLimit
    allowed_sans: tuple[str, ...]
    verifies_clients: bool
    unknown_user_hash: str = ""
    """Checked for a user the file does not name: a hash of the highest cost in use."""


def duration_seconds(text: object, where: str) -> float:
    """A Go duration (``1s``, ``500ms``, ``1m30s``, ``0``) in seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool) and text == 0:
        return 0.0
    if not isinstance(text, str) or not text:
        raise ZsnError(f"{where}: expected a duration such as 1s or 500ms, got {text!r}")
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _DURATION_RE.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position != len(text):
        raise ZsnError(f"{where}: expected a duration such as 1s or 500ms, got {text!r}")
    return total


def _mapping(value: object, where: str, keys: set[str] | None = None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ZsnError(f"{where}: expected a mapping")
    if keys is not None:
        unknown = sorted(set(value) - keys)
        if unknown:
            raise ZsnError(f"{where}: unknown key {unknown[0]!r}")
    return value


def _string(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ZsnError(f"{where}: expected a string, got {value!r}")
    return value


def _strings(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(each, str) for each in value):
        raise ZsnError(f"{where}: expected a list of strings")
    return value


def parse(text: str, directory: Path, source: str, host: Host | None = None
          ) -> tuple[dict[str, Any], list[Path]]:
    """The file's settings checked as the toolkit checks them, and every file it names
    (relative paths are relative to the config file's directory)."""
    document = cast("type[dict[str, Any] | None]", dict[str, Any] | None)  # empty: nothing set
    loaded = decode.from_yaml(text, document, source, max_bytes=CONFIG_MAX_BYTES)
    top = _mapping(loaded, source, TOP_KEYS)
    tls = _mapping(top.get("tls_server_config"), f"{source}: tls_server_config", TLS_KEYS)
    http = _mapping(top.get("http_server_config"), f"{source}: http_server_config", HTTP_KEYS)
    headers = _mapping(http.get("headers"), f"{source}: http_server_config.headers")
    for name, value in headers.items():
        if name not in HEADERS:
            raise ZsnError(f"{source}: HTTP header {name!r} can not be configured")
        allowed = HEADERS[name]
        if isinstance(value, str) and not value.isprintable():
            # A line break would end the header and start another (Set-Cookie ...).
            raise ZsnError(f"{source}: {name}: a header value is one line of printable text")
        if not isinstance(value, str) or (allowed and value not in allowed):
            raise ZsnError(f"{source}: invalid value for {name}: expected one of "
                           f"{', '.join(allowed)}, got {value!r}")
    if "http2" in http and not isinstance(http["http2"], bool):
        raise ZsnError(f"{source}: http_server_config.http2: expected true or false")
    users = _mapping(top.get("basic_auth_users"), f"{source}: basic_auth_users")
    for user, hashed in users.items():
        bcrypt_cost(hashed, f"{source}: basic_auth_users: the password of {user!r}")
    rate = _mapping(top.get("rate_limit"), f"{source}: rate_limit", RATE_KEYS)
    interval = duration_seconds(rate.get("interval", 0), f"{source}: rate_limit.interval")
    burst = rate.get("burst", 0)
    if not isinstance(burst, int) or isinstance(burst, bool) or burst < 0:
        raise ZsnError(f"{source}: rate_limit.burst: expected a whole number")
    files = []
    for key in ("cert_file", "key_file", "client_ca_file"):
        name = _string(tls.get(key), f"{source}: tls_server_config.{key}")
        if name:
            # Relative to the file's folder, as in the toolkit; an absolute path is the
            # host's (under --root, inside the tree, as every path zsn reads).
            tls[key] = host.path(name) if host is not None and name.startswith("/") \
                else directory / name
            files.append(tls[key])
            _regular_file(tls[key], f"{source}: tls_server_config.{key}")
    settings = {"tls": tls, "headers": headers, "users": users,
                "rate_limit": RateLimit(interval, burst)}
    return settings, files


def _regular_file(path: Path, where: str) -> None:
    """OpenSSL reads what a certificate path names to its end: a FIFO or a device would
    hold the reading (and the server) for ever."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ZsnError(f"{where}: {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise ZsnError(f"{where}: {path} is not a regular file")


def bcrypt_cost(hashed: object, where: str) -> int:
    """The cost of a bcrypt hash any login could match (what Go's bcrypt.Cost accepts,
    and a salt bcrypt can use); a `ZsnError` naming `where` otherwise."""
    import bcrypt

    make = "make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n'"
    match = BCRYPT_HASH.fullmatch(hashed) if isinstance(hashed, str) else None
    if match is None:
        raise ZsnError(f"{where} is not a bcrypt hash ({make})")
    cost = int(match.group(1))
    if cost not in BCRYPT_COSTS:
        raise ZsnError(f"{where}: bcrypt cost {cost} is not between {BCRYPT_COSTS[0]} and "
                       f"{BCRYPT_COSTS[-1]} ({make})")
    try:  # the salt as bcrypt reads it, at the lowest cost (a millisecond)
        bcrypt.hashpw(b"", f"$2b$04${match.group(2)}".encode())
    except ValueError:
        raise ZsnError(f"{where}: its salt is not one bcrypt can use ({make})") from None
    return cost


@functools.cache
def unknown_user_hash(cost: int) -> str:
    """A hash of a random password at `cost`: what an unknown user's login is checked
    against (made once per cost and process: it takes as long as a login)."""
    import bcrypt

    return bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(cost)).decode()


def _tls_context(tls: dict[str, Any], source: str) -> tuple[ssl.SSLContext | None, bool]:
    """The server's SSL context (None: plain HTTP) and whether it verifies clients."""
    where = f"{source}: tls_server_config"
    cert_text = _string(tls.get("cert"), f"{where}.cert")
    key_text = _string(tls.get("key"), f"{where}.key")
    client_ca_text = _string(tls.get("client_ca"), f"{where}.client_ca")
    auth = _string(tls.get("client_auth_type"), f"{where}.client_auth_type") or "NoClientCert"
    enabled = bool(tls.get("cert_file") or tls.get("key_file") or cert_text or key_text
                   or tls.get("client_ca_file") or client_ca_text or "client_auth_type" in tls)
    if not enabled:
        return None, False
    if not tls.get("cert_file") and not cert_text:
        raise ZsnError(f"{where}: missing one of cert or cert_file")
    if not tls.get("key_file") and not key_text:
        raise ZsnError(f"{where}: missing one of key or key_file")
    if tls.get("cert_file") and cert_text or tls.get("key_file") and key_text:
        raise ZsnError(f"{where}: give a certificate and key either inline or as files")
    if auth in CANNOT_ASK_UNVERIFIED:
        raise ZsnError(f"{where}.client_auth_type {auth}: zsn never asks for a client "
                       "certificate it does not verify; use VerifyClientCertIfGiven or "
                       "RequireAndVerifyClientCert")
    if auth not in CLIENT_AUTH:
        raise ZsnError(f"{where}: invalid client_auth_type {auth!r}")
    has_ca = bool(tls.get("client_ca_file") or client_ca_text)
    if has_ca and auth == "NoClientCert":
        raise ZsnError(f"{where}: client CAs have been configured without a client_auth_type")
    if auth != "NoClientCert" and not has_ca:
        raise ZsnError(f"{where}: client_auth_type {auth} needs client_ca_file or client_ca")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_versions(context, tls, where)
    _load_chain(context, tls, cert_text, key_text, where)
    _set_ciphers_and_curves(context, tls, where)
    context.verify_mode = CLIENT_AUTH[auth]
    if has_ca:
        try:
            if tls.get("client_ca_file"):
                context.load_verify_locations(cafile=str(tls["client_ca_file"]))
            else:
                context.load_verify_locations(cadata=client_ca_text)
        except (OSError, ssl.SSLError) as exc:
            raise ZsnError(f"{where}: cannot load the client CA: {exc}") from None
    return context, auth == "RequireAndVerifyClientCert"


def _set_versions(context: ssl.SSLContext, tls: dict[str, Any], where: str) -> None:
    """min_version and max_version (TLS 1.2 to 1.3 unless set)."""
    versions = []
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        name = _string(tls.get(key), f"{where}.{key}") or default
        if name not in TLS_VERSIONS:
            raise ZsnError(f"{where}.{key}: unknown TLS version {name!r} "
                           f"(known: {', '.join(TLS_VERSIONS)})")
        versions.append(TLS_VERSIONS[name])
    try:
        context.minimum_version, context.maximum_version = versions
    except (ValueError, ssl.SSLError) as exc:
        raise ZsnError(f"{where}: this system's OpenSSL refuses those TLS versions: "
                       f"{exc}") from None


def _set_ciphers_and_curves(context: ssl.SSLContext, tls: dict[str, Any], where: str) -> None:
    """cipher_suites, prefer_server_cipher_suites and curve_preferences."""
    ciphers = _strings(tls.get("cipher_suites"), f"{where}.cipher_suites")
    unknown = [name for name in ciphers if name not in CIPHERS]
    if unknown:
        raise ZsnError(f"{where}.cipher_suites: unknown cipher {unknown[0]!r}")
    chosen = [CIPHERS[name] for name in ciphers if CIPHERS[name]]
    if chosen:
        context.set_ciphers(":".join(chosen))
    if tls.get("prefer_server_cipher_suites", True) is not False:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    curves = _strings(tls.get("curve_preferences"), f"{where}.curve_preferences")
    if curves:
        if len(curves) > 1 or curves[0] not in CURVES:
            raise ZsnError(f"{where}.curve_preferences: zsn can limit TLS to one NIST curve "
                           f"({', '.join(CURVES)}), not order several or pick another")
        context.set_ecdh_curve(CURVES[curves[0]])


def _load_chain(context: ssl.SSLContext, tls: dict[str, Any], cert_text: str, key_text: str,
                where: str) -> None:
    try:
        if tls.get("cert_file"):
            context.load_cert_chain(str(tls["cert_file"]), str(tls["key_file"]))
            return
        # Python's ssl loads certificates from files only: a private temporary file,
        # removed at once.
        with tempfile.TemporaryDirectory(prefix="zsn-tls-") as directory:
            os.chmod(directory, 0o700)
            cert = Path(directory) / "cert.pem"
            key = Path(directory) / "key.pem"
            cert.write_text(cert_text)
            key.touch(mode=0o600)
            key.write_text(key_text)
            context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ZsnError(f"{where}: cannot load the certificate and key: {reason}") from None


def _signature(paths: list[Path]) -> tuple[tuple[int, int, int], ...]:
    found = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            found.append((-1, -1, -1))
            continue
        found.append((st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(found)


class WebConfig:
    """The web config file, read again whenever it (or a file it names) changes."""

    def __init__(self, path: Path, *, remote: bool = False, host: Host | None = None) -> None:
        self.path = path
        self.host = host
        self.remote = remote
        """Served beyond loopback: every reading must have TLS and client authentication."""
        self._lock = threading.Lock()
        self._signature: tuple[tuple[int, int, int], ...] = ()
        self._files: list[Path] = []
        self._settings: Settings | None = None
        self._problem: str | None = None
        self._auth_cache: OrderedDict[bytes, bool] = OrderedDict()
        self._bcrypt_lock = threading.Lock()

    @classmethod
    def load(cls, host: Host, name: str, *, remote: bool = False) -> WebConfig:
        """The config at `name` (under the host's root), refused with the reason when it
        cannot be used (`remote`: when it would serve beyond loopback unprotected)."""
        config = cls(host.path(Path(name).absolute()), remote=remote, host=host)
        config._read()
        if config._settings is None:
            raise ZsnError(config._problem or f"{config.path}: not read")
        return config

    def current(self) -> Settings:
        """The settings in force: the file's, or the last good ones while it cannot be
        used (logged once per problem). Reads it again when it changed, which can take
        as long as a bcrypt check: call it from a thread."""
        with self._lock:
            if _signature([self.path, *self._files]) != self._signature:
                self._read()
            if self._settings is None:
                raise ZsnError(self._problem or f"{self.path}: not read")
            return self._settings

    def _read(self) -> None:
        signature = _signature([self.path, *self._files])
        try:
            settings, files = self._reading()
        except ZsnError as exc:
            self._signature = signature
            if self._settings is not None and self._problem != str(exc):
                log.error("web config not used, the last good one stays in force: %s", exc)
            self._problem = str(exc)
            return
        if self._problem is not None and self._settings is not None:
            log.info("web config usable again: %s", self.path)
        self._files = files
        self._signature = _signature([self.path, *files])
        self._settings, self._problem = settings, None
        self._auth_cache.clear()

    def _reading(self) -> tuple[Settings, list[Path]]:
        """The file's settings, checked as strictly at every reading as at the first."""
        source = str(self.path)
        # The state rule: users and TLS settings only from a file nobody else could
        # have written (checked at start and at every reload).
        own_state.check(self.path)
        text = read_text(self.path, CONFIG_MAX_BYTES)
        parsed, files = parse(text, self.path.parent, source, self.host)
        context, verifies = _tls_context(parsed["tls"], source)
        sans = tuple(_strings(parsed["tls"].get("client_allowed_sans"),
                              f"{source}: tls_server_config.client_allowed_sans"))
        if sans and context is None:
            raise ZsnError(f"{source}: client_allowed_sans needs TLS")
        users = dict(parsed["users"])
        costs = [bcrypt_cost(hashed, source) for hashed in users.values()]
        settings = Settings(context, users, tuple(parsed["headers"].items()),
                            parsed["rate_limit"], sans, verifies,
                            unknown_user_hash(max(costs)) if costs else "")
        if self.remote:
            _require_remote_safe(settings, self.path)
        return settings, files

    @property
    def tls(self) -> bool:
        return self.current().tls is not None

    def require_remote_safe(self) -> None:
        """Refuse to serve beyond loopback without TLS and client authentication."""
        _require_remote_safe(self.current(), self.path)

    def check_basic(self, settings: Settings, header: str | None) -> bool:
        """Whether an ``Authorization`` header names a user of `settings` with the right
        password. Costs a bcrypt check the first time (seconds of CPU at high costs:
        call it from a thread); later answers come from a cache."""
        if not settings.users:
            return True
        if not header or header[:6].lower() != "basic ":
            return False
        try:
            decoded = base64.b64decode(header[6:].strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user_bytes, colon, password = decoded.partition(b":")
        if not colon:
            return False
        user = user_bytes.decode("utf-8", "replace")
        hashed = settings.users.get(user)
        known = hashed is not None
        checked = hashed if hashed is not None else settings.unknown_user_hash
        key = hashlib.sha256(b"\0".join([user_bytes, checked.encode(), password])).digest()
        with self._lock:
            cached = self._auth_cache.get(key)
        if cached is None:
            cached = self._bcrypt(checked, password)
            with self._lock:
                self._auth_cache[key] = cached
                while len(self._auth_cache) > AUTH_CACHE_SIZE:
                    self._auth_cache.popitem(last=False)
        return known and cached

    def _bcrypt(self, hashed: str, password: bytes) -> bool:
        import bcrypt

        # One check at a time: each is CPU-bound and a flood of wrong passwords must
        # not take every core.
        with self._bcrypt_lock:
            try:
                return bool(bcrypt.checkpw(password, hashed.encode()))
            except ValueError:  # e.g. a password longer than bcrypt's 72 bytes
                return False

    def client_allowed(self, settings: Settings, peer_certificate: dict[str, Any] | None
                       ) -> bool:
        """Whether the client's certificate has a SAN the config allows (always true when
        it lists none)."""
        if not settings.allowed_sans:
            return True
        if not peer_certificate:
            return False
        values = {str(value) for _kind, value in peer_certificate.get("subjectAltName", ())}
        return bool(values & set(settings.allowed_sans))



def _require_remote_safe(settings: Settings, path: Path) -> None:
    if settings.tls is None:
        raise ZsnError(f"{path}: listening beyond loopback needs TLS "
                       "(tls_server_config with cert_file and key_file)")
    if not settings.users and not settings.verifies_clients:
        raise ZsnError(f"{path}: listening beyond loopback needs client authentication "
                       "(basic_auth_users, or client_auth_type RequireAndVerifyClientCert)")
