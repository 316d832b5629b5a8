"""``zsn wg import pivpn|wg-easy|wg-quick [PATH]``: an existing setup taken over as it
is, so no client needs a new config.

Each reader turns a source into the same thing, an `Imported` interface: its
wg-quick config (a file already in place, or one written from the source's data),
its peers' names, keys, addresses, disabled state and expiry, the client configs
the source kept (for ``zsn peer show``), and the endpoint clients connect to. The
plan then writes what is missing under ``/etc/wireguard`` (0600 in 0700 folders)
and ``/etc/zsn/wireguard.json``, each as a diff to confirm first; what is already
there and the same is left alone, what is there and different is refused. A source
zsn does not understand (an unknown wg-easy schema, AmneziaWG settings a plain
WireGuard cannot honour, a file that does not parse) is refused, naming why.

Sources (reference/wireguard-imports.md): PiVPN's ``/etc/pivpn/wireguard/
setupVars.conf`` with its ``/etc/wireguard`` (``wg0.conf`` with ``### begin NAME ###``
blocks, ``configs/NAME.conf``, ``configs/clients.txt``); wg-easy v14's
``wg0.json`` (with its container's ``WG_*`` environment: ``--env``) and v15's
``wg-easy.db``; a folder of plain wg-quick files (servers and the clients that
pair with their peers by key).
"""

from __future__ import annotations

import ipaddress
import re
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from zsn import decode
from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.plan import FileEdit, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.terminal import one_line
from zsn.wireguard import settings
from zsn.wireguard.config import PEER_NAME_RE, WIREGUARD_DIR, WgConfig, config_path, parse
from zsn.wireguard.keys import public_key_from_private

SOURCES = ("pivpn", "wg-easy", "wg-quick")
DEFAULT_PATHS = {"pivpn": "/etc/pivpn/wireguard", "wg-easy": "/etc/wireguard",
                 "wg-quick": WIREGUARD_DIR}
MAX_SOURCE_BYTES = 16 << 20
_SETUP_VAR_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
WG_EASY_MIGRATIONS = {
    # sha256 of each of wg-easy's drizzle migrations (src/server/database/migrations,
    # 0000 to 0007: v15.0 to v15.4), as drizzle records them in __drizzle_migrations.
    "c9b7b217bb857baac7e0ddc81302dccea20c971c955cd5b0332ef3dcf7c29e7e",
    "814271c6d4daec80a2de04f0aa29d9a5f1b689f51db3d9a575443942233f4c11",
    "28f9a9e188aa0f1a5ec0651ef168b76b53795b2207109685316f909d4fc5634c",
    "6e5a47546acfce8bb47464e0b2b024fd31c3e263dfbb91bc35c2ff4feaf1e640",
    "abd4a4eb68cc3cdf5842f036c9e080a791217728c3657d2e5171c9b1e7be72d4",
    "438d5dedd33bf2cfa98ce4ee1181491754612794c3c0eb6791b183170bf7d25b",
    "c9983a7ae02d0f0e9e15549733af2265364475818a99103d3ad2f08205d7a901",
    "269a116ad7d8deeb4c6d1200c60aa34b9967beec4b9060c64373221f23cc21b2",
}
_AMNEZIA_COLUMNS = ("j_c", "j_min", "j_max", "s1", "s2", "s3", "s4", "h1", "h2", "h3", "h4",
                    "i1", "i2", "i3", "i4", "i5")


@dataclass
class ImportedPeer:
    name: str | None
    public_key: str
    preshared_key: str | None
    allowed_ips: list[str]
    endpoint: str | None = None
    enabled: bool = True
    expires: int | None = None
    client_config: str | None = None


@dataclass
class Imported:
    """One interface as a source describes it."""

    source: str
    interface: str
    config_text: str
    """The wg-quick config zsn keeps for it (the source's own file, or one written)."""
    in_place: bool
    """`config_text` is already /etc/wireguard/IFACE.conf (PiVPN's, wg-quick's own)."""
    peers: list[ImportedPeer] = field(default_factory=list)
    endpoint_host: str | None = None
    notes: list[str] = field(default_factory=list)


# -- the plan ------------------------------------------------------------------------


def plan_import(host: Host, source: str, path: str | None, *, interface: str | None = None,
                endpoint: str | None = None, env_file: str | None = None) -> Plan:
    """The plan that takes `source` over (nothing written before it is confirmed)."""
    where = host.path(path or DEFAULT_PATHS[source])
    try:
        if source == "pivpn":
            imported = [read_pivpn(host, where)]
        elif source == "wg-easy":
            env = read_env_file(host.path(env_file)) if env_file else {}
            imported = [read_wg_easy(where, env, endpoint)]
        else:
            imported = read_wg_quick(host, where)
    except ParseError as exc:  # a source that is not what it says is bad input: exit 2
        raise ValidationError(str(exc)) from None
    if interface is not None:
        if len(imported) != 1:
            raise ValidationError("--interface names one interface; the folder holds "
                                  f"{len(imported)}", field="interface")
        from zsn.wireguard.addressing import check_interface_name

        check_interface_name(interface)
        imported[0].interface = interface
        imported[0].in_place = False
    plan = Plan(f"import {len(imported)} interface(s) from {source} ({where}): "
                + ", ".join(f"{i.interface} ({len(i.peers)} peers)" for i in imported))
    stored = settings.load(host)
    endpoints: dict[str, settings.InterfaceSettings] = {}
    for one in imported:
        _plan_interface(host, plan, one)
        current = stored.get(one.interface)
        if one.endpoint_host and not current.endpoint_host:
            current.endpoint_host = one.endpoint_host
            endpoints[one.interface] = current
            plan.notes.append(f"{one.endpoint_host} is the endpoint pre-filled for new clients "
                              f"of {one.interface}")
        plan.notes.extend(one.notes)
    if endpoints:
        plan.steps.append(stored.edit(endpoints))
    if not plan.steps:
        plan.notes.append("everything is already in place: nothing to write")
    return plan


def _plan_interface(host: Host, plan: Plan, one: Imported) -> None:
    from zsn.wireguard.server import client_config_path

    try:
        parse(one.config_text, f"{one.interface}.conf")
    except ParseError as exc:  # a reader's output must be a config zsn reads itself
        raise ZsnError(f"{one.source}: the config made for {one.interface} does not parse: "
                       f"{exc}") from exc
    target = config_path(host, one.interface)
    if not one.in_place:
        _plan_file(plan, target, one.config_text, f"{one.interface}'s config")
    elif files.exists(target) and files.read_text(target) != one.config_text:
        plan.steps.append(FileEdit(target, files.read_tracked(target), one.config_text,
                                   mode=files.PRIVATE_FILE_MODE))
    for peer in one.peers:
        if peer.client_config is None or peer.name is None:
            continue
        if not PEER_NAME_RE.fullmatch(peer.name):
            one.notes.append(f"{peer.name!r} cannot name a file: its client config is not "
                             "copied (rename the peer, then import again)")
            continue
        _plan_file(plan, client_config_path(host, one.interface, peer.name),
                   peer.client_config, f"client config of {peer.name}")


def _plan_file(plan: Plan, path: Path, text: str, what: str) -> None:
    if files.lexists(path):
        if files.is_link(path) or files.read_text(path) != text:
            raise ValidationError(f"{path} exists and differs from the imported {what}: "
                                  "move it away or import under another name (--interface)")
        return
    plan.steps.append(FileEdit(path, None, text, mode=files.PRIVATE_FILE_MODE,
                               private_dir=True, backup=False))


# -- PiVPN ---------------------------------------------------------------------------


def read_setup_vars(text: str, source: str) -> dict[str, str]:
    """PiVPN's setupVars.conf: ``KEY=value`` lines a shell sources, read as data."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _SETUP_VAR_RE.match(stripped)
        if match is None:
            raise ParseError(f"not a KEY=value line: {stripped[:40]!r}", number, source)
        value = match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        found[match.group(1)] = value
    return found


def read_pivpn(host: Host, folder: Path) -> Imported:
    setup_path = folder / "setupVars.conf" if files.is_dir(folder) or not files.exists(
        folder) else folder
    if not files.exists(setup_path):
        raise ValidationError(f"{setup_path}: no PiVPN here (its setupVars.conf is missing)")
    values = read_setup_vars(files.read_text(setup_path), str(setup_path))
    if values.get("VPN", "wireguard") != "wireguard":
        raise ValidationError(f"{setup_path}: a PiVPN {values['VPN']} install, not WireGuard")
    interface = values.get("pivpnDEV", "wg0")
    server_path = config_path(host, interface)
    if not files.exists(server_path):
        raise ValidationError(f"{server_path}: PiVPN's server config is missing")
    text = files.read_text(server_path)
    config = parse(text, str(server_path))
    imported = Imported("pivpn", interface, text, True,
                        endpoint_host=values.get("pivpnHOST") or None)
    known = _pivpn_clients(host, imported)
    configs_dir = host.path(f"{WIREGUARD_DIR}/configs")
    for peer in config.all_peers:
        key = peer.get("PublicKey") or ""
        client_text = None
        client_path = configs_dir / f"{peer.name}.conf" if peer.name else None
        if client_path is not None and "/" not in (peer.name or "") and files.exists(
                client_path):
            client_text = files.read_text(client_path)
            if _client_public_key(client_text, str(client_path)) != key:
                imported.notes.append(f"{client_path}: its private key is not {peer.name}'s; "
                                      "not copied")
                client_text = None
        imported.peers.append(ImportedPeer(peer.name, key, peer.get("PresharedKey"),
                                           peer.get_all("AllowedIPs"),
                                           enabled=not peer.disabled,
                                           client_config=client_text))
        known.pop(key, None)
    for key, name in known.items():
        imported.notes.append(f"configs/clients.txt lists {name} ({key[:8]}…), which "
                              f"{interface}.conf has no block for: left out")
    return imported


def _pivpn_clients(host: Host, imported: Imported) -> dict[str, str]:
    """clients.txt: ``NAME PUBKEY CREATED IP`` (v4+; older ones have no key), by key."""
    path = host.path(f"{WIREGUARD_DIR}/configs/clients.txt")
    if not files.exists(path):
        imported.notes.append(f"{path} is missing: names come from {imported.interface}.conf")
        return {}
    found: dict[str, str] = {}
    for line in files.read_text(path).splitlines():
        parts = line.split()
        if len(parts) >= 4:
            found[parts[1]] = parts[0]
    return found


def _client_public_key(text: str, source: str) -> str | None:
    try:
        client = parse(text, source)
        private = client.interface.get("PrivateKey") if client.interface else None
        return public_key_from_private(private) if private else None
    except ZsnError:
        return None


# -- wg-easy --------------------------------------------------------------------------


def read_env_file(path: Path) -> dict[str, str]:
    """A docker env file or compose ``.env``: ``KEY=VALUE`` lines, ``#`` comments."""
    found: dict[str, str] = {}
    for number, line in enumerate(files.read_text(path, 1 << 20).splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, equals, value = stripped.removeprefix("export ").partition("=")
        if not equals:
            raise ParseError(f"not a KEY=VALUE line: {stripped[:40]!r}", number, str(path))
        found[key.strip()] = value.strip().strip("\"'")
    return found


def read_wg_easy(where: Path, env: dict[str, str], endpoint: str | None) -> Imported:
    if files.is_dir(where):
        for name in ("wg-easy.db", "wg0.json"):
            if files.exists(where / name):
                where = where / name
                break
        else:
            raise ValidationError(f"{where}: no wg-easy data here (wg-easy.db for v15, "
                                  "wg0.json for v14)")
    if not files.exists(where):
        raise ValidationError(f"{where}: no such file")
    if where.suffix == ".db":
        return _read_wg_easy_v15(where, endpoint)
    return _read_wg_easy_v14(where, env, endpoint)


def _wg_easy_name(name: str, notes: list[str]) -> str:
    """wg-easy names are free text; zsn's name a file. Kept when they can."""
    if PEER_NAME_RE.fullmatch(name):
        return name
    safe = re.sub(r"[^A-Za-z0-9._@-]+", "-", name).strip("-._@")[:63] or "client"
    notes.append(f"client {name!r} is named {safe!r} (a zsn peer name is a file name)")
    return safe


@dataclass
class _V14Server:
    """wg-easy v14's ``server`` (lib/WireGuard.js): what zsn uses of it."""

    privateKey: str
    address: str

    def __post_init__(self) -> None:
        ipaddress.IPv4Address(self.address)  # ValueError: named as the field's


@dataclass
class _V14Client:
    name: str
    address: str
    publicKey: str
    privateKey: str | None = None
    preSharedKey: str | None = None
    enabled: bool = True
    expiredAt: str | None = None

    def __post_init__(self) -> None:
        ipaddress.IPv4Address(self.address)


@dataclass
class _V14Document:
    server: _V14Server
    clients: dict[str, _V14Client]


def _read_wg_easy_v14(path: Path, env: dict[str, str], endpoint: str | None) -> Imported:
    data = decode.from_json(files.read_text(path, MAX_SOURCE_BYTES), _V14Document, str(path))
    server, clients = data.server, data.clients
    host_name = endpoint or env.get("WG_HOST")
    if not host_name:
        raise ValidationError("wg-easy v14 keeps the endpoint in its container's WG_HOST: "
                              "give --endpoint HOST (or --env with the container's "
                              "environment)", field="endpoint")
    port = env.get("WG_PORT", "51820")
    config_port = env.get("WG_CONFIG_PORT", port)
    if ":" in host_name and not host_name.startswith("["):
        host_name, _, config_port = host_name.rpartition(":")
    server_address = ipaddress.IPv4Address(server.address)
    notes: list[str] = []
    imported = Imported("wg-easy v14", "wg0", "", False, endpoint_host=host_name, notes=notes)
    server_public = public_key_from_private(server.privateKey)
    dns = env.get("WG_DEFAULT_DNS", "1.1.1.1")
    allowed = env.get("WG_ALLOWED_IPS", "0.0.0.0/0, ::/0")
    keepalive = env.get("WG_PERSISTENT_KEEPALIVE", "0")
    mtu = env.get("WG_MTU")
    for client in clients.values():
        name = _wg_easy_name(client.name, notes)
        address = str(ipaddress.IPv4Address(client.address))
        psk = client.preSharedKey or None
        text = None
        if client.privateKey:
            # What wg-easy v14 hands its clients (lib/WireGuard.js getClientConfiguration).
            lines = ["[Interface]", f"PrivateKey = {client.privateKey}",
                     f"Address = {address}/24"]
            if dns:
                lines.append(f"DNS = {dns}")
            if mtu:
                lines.append(f"MTU = {mtu}")
            lines += ["", "[Peer]", f"PublicKey = {server_public}"]
            if psk:
                lines.append(f"PresharedKey = {psk}")
            lines += [f"AllowedIPs = {allowed}", f"PersistentKeepalive = {keepalive}",
                      f"Endpoint = {host_name}:{config_port}"]
            text = "\n".join(lines) + "\n"
        imported.peers.append(ImportedPeer(
            name, client.publicKey, psk, [f"{address}/32"], enabled=client.enabled,
            expires=_iso_time(client.expiredAt) if client.expiredAt else None,
            client_config=text))
    interface_lines = [f"Address = {server_address}/24", f"ListenPort = {port}",
                       f"PrivateKey = {server.privateKey}"]
    if mtu:
        interface_lines.append(f"MTU = {mtu}")
    imported.config_text = _server_config(f"imported from wg-easy v14 ({path})",
                                          interface_lines, imported.peers)
    notes.append("wg-easy NATed its clients with iptables rules of its container (PostUp); "
                 "on this host: zsn wg gateway wg0")
    return imported


@dataclass
class _V15Interface:
    """A row of wg-easy v15's ``interfaces_table``: what zsn uses of it."""

    name: str
    port: int
    private_key: str
    public_key: str
    ipv4_cidr: str
    ipv6_cidr: str
    mtu: int

    def __post_init__(self) -> None:
        ipaddress.IPv4Network(self.ipv4_cidr, strict=False)  # ValueError: named
        ipaddress.IPv6Network(self.ipv6_cidr, strict=False)


@dataclass
class _V15Config:
    """``user_configs_table``: the defaults wg-easy hands new clients."""

    host: str | None = None
    port: int | None = None
    default_dns: str = "[]"
    default_allowed_ips: str = '["0.0.0.0/0", "::/0"]'


@dataclass
class _V15Client:
    """A row of ``clients_table``."""

    id: int
    name: str
    ipv4_address: str
    ipv6_address: str
    private_key: str
    public_key: str
    pre_shared_key: str
    persistent_keepalive: int
    mtu: int
    enabled: int
    server_allowed_ips: str = "[]"
    allowed_ips: str | None = None
    dns: str | None = None
    expires_at: str | None = None
    server_endpoint: str | None = None
    pre_up: str = ""
    post_up: str = ""
    pre_down: str = ""
    post_down: str = ""

    def __post_init__(self) -> None:
        ipaddress.IPv4Address(self.ipv4_address)
        ipaddress.IPv6Address(self.ipv6_address)


def _read_wg_easy_v15(path: Path, endpoint: str | None) -> Imported:
    with tempfile.TemporaryDirectory(prefix="zsn-import-") as scratch:
        # A copy, with its write-ahead log: the source is never opened for writing.
        for part in (path, path.with_name(path.name + "-wal")):
            if files.exists(part):
                files.write_atomic(Path(scratch) / part.name,
                                   files.read_bytes(part, files.MAX_FILE_BYTES),
                                   previous=None, backup=False)
        db = sqlite3.connect(f"file:{Path(scratch) / path.name}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            return _read_v15_tables(db, path, endpoint)
        except sqlite3.DatabaseError as exc:
            raise ParseError(f"not a wg-easy v15 database ({one_line(str(exc))})", None,
                             str(path)) from None
        except UnicodeDecodeError:
            raise ParseError("not a wg-easy v15 database (text that is not UTF-8)", None,
                             str(path)) from None
        finally:
            db.close()


def _json_list(text: str, path: Path, field: str) -> list[str]:
    """A column wg-easy keeps as a JSON array of strings."""
    try:
        return decode.from_json(text, list[str], str(path), max_bytes=1 << 20) if text else []
    except decode.DecodeError as exc:
        raise decode.DecodeError(str(path), f"{field}{exc.field or ''}", exc.reason) from None


def _read_v15_tables(db: sqlite3.Connection, path: Path, endpoint: str | None) -> Imported:
    source = str(path)
    applied = {row[0] for row in db.execute("SELECT hash FROM __drizzle_migrations")}
    unknown = applied - WG_EASY_MIGRATIONS
    if unknown:
        raise ValidationError(f"{path}: written by a wg-easy newer than zsn knows ({len(unknown)} "
                              "database migration(s) after v15.4): not imported")
    interfaces = db.execute("SELECT * FROM interfaces_table").fetchall()
    if len(interfaces) != 1:
        raise ValidationError(f"{path}: {len(interfaces)} interfaces; zsn imports wg-easy's "
                              "one (wg0)")
    raw = dict(interfaces[0])
    wg = decode.convert(raw, _V15Interface, source, "interfaces_table")
    if wg.private_key == "---default---":
        raise ValidationError(f"{path}: wg-easy's setup never finished (no server key yet)")
    config = decode.convert(dict(db.execute("SELECT * FROM user_configs_table WHERE id = ?",
                                            (wg.name,)).fetchone() or {}),
                            _V15Config, source, "user_configs_table")
    host_name = endpoint or config.host
    if not host_name:
        raise ValidationError("no endpoint in the database (wg-easy's host): give --endpoint",
                              field="endpoint")
    notes: list[str] = []
    imported = Imported("wg-easy v15", wg.name, "", False, endpoint_host=host_name,
                        notes=notes)
    if any(raw.get(column) for column in _AMNEZIA_COLUMNS):
        # Written by its migrations as defaults; used only when wg-easy ran AmneziaWG
        # (WG_EXECUTABLE=awg, in its container's environment, not in the database).
        notes.append("wg-easy keeps AmneziaWG parameters, used only if it ran AmneziaWG "
                     "(WG_EXECUTABLE=awg): clients of such a wg-easy need new configs for "
                     "plain WireGuard")
    v4 = ipaddress.ip_network(wg.ipv4_cidr, strict=False)
    v6 = ipaddress.ip_network(wg.ipv6_cidr, strict=False)
    for row in db.execute("SELECT * FROM clients_table WHERE interface_id = ? ORDER BY id",
                          (wg.name,)):
        client = decode.convert(dict(row), _V15Client, source, "clients_table")
        name = _wg_easy_name(client.name, notes)
        allowed_ips = [f"{client.ipv4_address}/32", f"{client.ipv6_address}/128",
                       *_json_list(client.server_allowed_ips, path, "server_allowed_ips")]
        client_allowed = _json_list(client.allowed_ips or config.default_allowed_ips, path,
                                    "allowed_ips")
        dns = _json_list(client.dns or config.default_dns, path, "dns")
        # What wg-easy v15 hands its clients (server/utils/wgHelper.ts generateClientConfig).
        lines = ["[Interface]", f"PrivateKey = {client.private_key}",
                 f"Address = {client.ipv4_address}/{v4.prefixlen}, "
                 f"{client.ipv6_address}/{v6.prefixlen}", f"MTU = {client.mtu}"]
        if dns:
            lines.append(f"DNS = {', '.join(dns)}")
        lines += ["", "[Peer]", f"PublicKey = {wg.public_key}",
                  f"PresharedKey = {client.pre_shared_key}",
                  f"AllowedIPs = {', '.join(client_allowed)}",
                  f"PersistentKeepalive = {client.persistent_keepalive}",
                  f"Endpoint = {host_name}:{config.port or wg.port}"]
        imported.peers.append(ImportedPeer(
            name, client.public_key, client.pre_shared_key, allowed_ips,
            endpoint=client.server_endpoint or None, enabled=bool(client.enabled),
            expires=_iso_time(client.expires_at) if client.expires_at else None,
            client_config="\n".join(lines) + "\n"))
        if any((client.pre_up, client.post_up, client.pre_down, client.post_down)):
            notes.append(f"{name}'s client-side hooks are in its client config only as "
                         "wg-easy wrote them: check them before handing it out again")
    interface_lines = [f"Address = {next(v4.hosts())}/{v4.prefixlen}, "
                       f"{next(v6.hosts())}/{v6.prefixlen}",
                       f"ListenPort = {wg.port}", f"PrivateKey = {wg.private_key}",
                       f"MTU = {wg.mtu}"]
    imported.config_text = _server_config(f"imported from wg-easy v15 ({path})",
                                          interface_lines, imported.peers)
    notes.append("wg-easy NATed its clients with its hooks (iptables/ip6tables PostUp); on "
                 f"this host: zsn wg gateway {wg.name}")
    return imported


def _iso_time(text: str) -> int | None:
    from zsn.wireguard.expiry import parse_stored

    return parse_stored(text.replace(" ", "T") + ("Z" if text[-1:].isdigit() else ""))


def _server_config(origin: str, interface_lines: list[str], peers: list[ImportedPeer]) -> str:
    """A server config written from a source's data, in zsn's own layout."""
    from zsn.wireguard.expiry import format_stored

    lines = [f"# {origin}", "[Interface]", *interface_lines]
    for peer in peers:
        block = [f"# {peer.name}" if peer.name else "", "[Peer]"]
        if peer.expires is not None:
            block.append(f"# Expires = {format_stored(peer.expires)}")
        block.append(f"PublicKey = {peer.public_key}")
        if peer.preshared_key:
            block.append(f"PresharedKey = {peer.preshared_key}")
        block.append(f"AllowedIPs = {', '.join(peer.allowed_ips)}")
        if peer.endpoint:
            block.append(f"Endpoint = {peer.endpoint}")
        block = [line for line in block if line]
        if not peer.enabled:
            block = [f"#[disabled] {line}" for line in block]
        lines += ["", *block]
    return "\n".join(lines) + "\n"


# -- plain wg-quick folders -----------------------------------------------------------


def read_wg_quick(host: Host, folder: Path) -> list[Imported]:
    if not files.is_dir(folder):
        raise ValidationError(f"{folder}: not a folder of wg-quick configs")
    parsed: dict[str, tuple[str, WgConfig]] = {}
    for path in files.list_files(folder, "*.conf"):
        if not files.is_file(path):
            continue
        text = files.read_text(path)
        parsed[path.stem] = (text, parse(text, str(path)))  # a line it cannot read: refused
    if not parsed:
        raise ValidationError(f"{folder}: no *.conf files")
    clients = {name: entry for name, entry in parsed.items() if _is_client(entry[1])}
    servers = {name: entry for name, entry in parsed.items() if name not in clients}
    if not servers:
        raise ValidationError(f"{folder}: only client configs (one [Peer] with an Endpoint "
                              "each), no server to import")
    in_place = folder.resolve() == host.path(WIREGUARD_DIR).resolve()
    by_key = {_client_public_key(text, name): (name, text) for name, (text, _c) in clients.items()}
    found: list[Imported] = []
    for name, (text, config) in servers.items():
        from zsn.wireguard.addressing import check_interface_name

        check_interface_name(name)
        edited = config.copy()
        imported = Imported("wg-quick", name, text, in_place)
        for index in range(len(edited.all_peers)):
            peer = edited.all_peers[index]  # afresh: a name added above moves the lines
            key = peer.get("PublicKey") or ""
            client = by_key.get(key)
            peer_name = peer.name
            if peer_name is None and client is not None and PEER_NAME_RE.fullmatch(client[0]):
                peer_name = client[0]
                edited.lines.insert(peer.header, f"# {peer_name}{edited.newline}")
                edited._reindex(peer.header)
                imported.notes.append(f"peer {key[:8]}… of {name} is named {peer_name} after "
                                      f"its client config {client[0]}.conf")
            imported.peers.append(ImportedPeer(
                peer_name, key, None, peer.get_all("AllowedIPs"), enabled=not peer.disabled,
                client_config=client[1] if client is not None else None))
        for entry in edited.interface.entries_for("Address") if edited.interface else []:
            if "fe80:" in entry.value.lower():
                imported.notes.append(f"{name}.conf has link-local addresses (fe80::) that "
                                      "`wg-quick save` recorded from the device; harmless")
                break
        imported.config_text = edited.render()
        found.append(imported)
    for name in clients:
        if not any(p.client_config == clients[name][0] for i in found for p in i.peers):
            found[0].notes.append(f"{name}.conf is a client of no server here: left as it is")
    return found


def _is_client(config: WgConfig) -> bool:
    peers = config.peers
    return len(peers) == 1 and peers[0].get("Endpoint") is not None

