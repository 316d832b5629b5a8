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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from zsn import decode
from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.meaning import Intent
from zsn.plan import FileEdit, Plan
from zsn.system import files
from zsn.system.host import Host
from zsn.terminal import one_line
from zsn.wireguard import addressing, settings
from zsn.wireguard.config import PEER_NAME_RE, WIREGUARD_DIR, WgConfig, config_path, parse
from zsn.wireguard.keys import is_valid_key, public_key_from_private
from zsn.wireguard.refusals import refusals
from zsn.wireguard.schema import HOOK_KEYS

SOURCES = ("pivpn", "wg-easy", "wg-quick")
DEFAULT_PATHS = {"pivpn": "/etc/pivpn/wireguard", "wg-easy": "/etc/wireguard",
                 "wg-quick": WIREGUARD_DIR}
MAX_SOURCE_BYTES = 16 << 20
MAX_PEERS = 65536
"""More clients than this in one source is not a source zsn imports (wg-easy's largest
subnet gives /16's worth)."""
HOOK_NAMES = {"preup": "PreUp", "postup": "PostUp", "predown": "PreDown",
              "postdown": "PostDown"}
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
class Written:
    """A wg-quick config an import writes: the config (edited) and the text it was read
    from (empty for one written from the source's data)."""

    config: WgConfig
    original: str = ""

    @property
    def text(self) -> str:
        return self.config.render()

    def intent(self, replaces_original: bool) -> Intent:
        """What the written file means: the edits, on the original when the file written
        is not the original itself."""
        if replaces_original and self.original:
            return self.config.intent.replacing(self.original, self.config.source or "")
        return self.config.intent


@dataclass
class ImportedPeer:
    name: str | None
    public_key: str
    preshared_key: str | None
    allowed_ips: list[str]
    endpoint: str | None = None
    enabled: bool = True
    expires: int | None = None
    client_config: Written | None = None
    origin: str = ""
    """How the source names it, for messages (``client 'alice' (id 3)``)."""


@dataclass
class Imported:
    """One interface as a source describes it."""

    source: str
    interface: str
    written: Written
    """The wg-quick config zsn keeps for it (the source's own file, or one written)."""
    in_place: bool
    """`written` is already /etc/wireguard/IFACE.conf (PiVPN's, wg-quick's own)."""
    peers: list[ImportedPeer] = field(default_factory=list)
    endpoint_host: str | None = None
    notes: list[str] = field(default_factory=list)
    commands: list[tuple[str, str]] = field(default_factory=list)
    """(key, command) of the hooks the source runs as root when the interface goes up
    or down: kept in the config with ``--keep-commands``, else left out."""

    @property
    def config_text(self) -> str:
        return self.written.text


# -- the plan ------------------------------------------------------------------------


def plan_import(host: Host, source: str, path: str | None, *, interface: str | None = None,
                endpoint: str | None = None, env_file: str | None = None,
                keep_commands: bool = False) -> Plan:
    """The plan that takes `source` over (nothing written before it is confirmed).

    Every value is checked as wg and wg-quick would check it; duplicate keys, names
    and addresses are refused naming both. Commands the source runs as root (PreUp,
    PostUp, PreDown, PostDown) are left out unless `keep_commands`, and either way the
    plan names them; client configs never keep them."""
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
        addressing.check_interface_name(interface)
        imported[0].interface = interface
        imported[0].in_place = False
    plan = Plan(f"import {len(imported)} interface(s) from {source} ({where}): "
                + ", ".join(f"{i.interface} ({len(i.peers)} peers)" for i in imported))
    stored = settings.load(host)
    endpoints: dict[str, settings.InterfaceSettings] = {}
    for one in imported:
        check_peers(one)
        _commands(plan, one, keep_commands)
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


def check_peers(one: Imported) -> None:
    """Refuse what wg would refuse in `one`'s peers (a key that is not 32 bytes of
    base64, an AllowedIPs item that is no network) and what would make two peers one:
    the same key, name or address, naming both; and a peer with the interface's own
    key (wg ignores it) or address."""
    if len(one.peers) > MAX_PEERS:
        raise ValidationError(f"{one.source}: {len(one.peers)} clients; zsn imports at most "
                              f"{MAX_PEERS}")
    keys: dict[str, ImportedPeer] = {}
    names: dict[str, ImportedPeer] = {}
    addresses: dict[ipaddress.IPv4Network | ipaddress.IPv6Network, ImportedPeer] = {}
    own_key, own_addresses = _own_identity(one.written.config)
    for peer in one.peers:
        label = peer.origin or (f"peer {peer.name!r}" if peer.name else "a peer")
        if not is_valid_key(peer.public_key):
            raise ValidationError(f"{one.source}: {label}: its public key is not a WireGuard "
                                  "key (base64 of 32 bytes)")
        if peer.public_key == own_key:
            raise ValidationError(f"{one.source}: {label} has the public key of "
                                  f"{one.interface} itself: wg would ignore the peer")
        if peer.preshared_key is not None and not is_valid_key(peer.preshared_key):
            raise ValidationError(f"{one.source}: {label}: its pre-shared key is not a "
                                  "WireGuard key (base64 of 32 bytes)")
        for seen, value in ((keys, peer.public_key), (names, peer.name)):
            if value is None:
                continue
            other = seen.setdefault(value, peer)
            if other is not peer:
                what = "public key" if seen is keys else "name"
                raise ValidationError(f"{one.source}: {other.origin or other.name} and {label} "
                                      f"have the same {what}: wg would take them for one peer")
        for item in peer.allowed_ips:
            try:
                network = ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValidationError(f"{one.source}: {label}: {item!r} is not an address or "
                                      "network") from None
            if network.prefixlen != network.max_prefixlen:
                continue  # a routed subnet: overlaps are the admin's (lint says so)
            if network.network_address in own_addresses:
                raise ValidationError(f"{one.source}: {label} has the address of "
                                      f"{one.interface} itself, {network.network_address}")
            other = addresses.setdefault(network, peer)
            if other is not peer:
                raise ValidationError(f"{one.source}: {other.origin or other.name} and {label} "
                                      f"have the same address {network.network_address}")


def _own_identity(config: WgConfig) -> tuple[str | None, set[addressing.IPAddress]]:
    """The public key and the addresses of the interface `config` describes (none yet
    while a reader is still building it)."""
    interface = config.interface
    if interface is None:
        return None, set()
    private = interface.get("PrivateKey")
    key = public_key_from_private(private) if private and is_valid_key(private) else None
    own: set[addressing.IPAddress] = set()
    for value in interface.get_all("Address"):
        for item in value.split(","):
            try:
                own.add(ipaddress.ip_interface(item.strip()).ip)
            except ValueError:
                continue  # wg-quick refuses it: its own reader says so
    return key, own


def _commands(plan: Plan, one: Imported, keep: bool) -> None:
    """Name the commands `one` runs as root; keep them only when asked to."""
    config = one.written.config
    section = config.interface
    found = [(entry.key, entry.value) for entry in section.entries
             if entry.key.lower() in HOOK_KEYS] if section else []
    found += one.commands
    if not found:
        return
    listed = "; ".join(f"{key} = {command}" for key, command in found)
    if keep:
        for key, command in one.commands:
            if section is None:
                section = config.append_interface([])
            config.append_entry(section, key, command)
            section = config.interface
        plan.warnings.append(f"{one.interface}: commands wg-quick will run as root when it "
                             f"goes up or down (kept: --keep-commands): {listed}")
        return
    if section is not None:
        for key in HOOK_KEYS:
            if section.entries_for(key):
                config.remove_key(section, key)
                section = config.interface
                assert section is not None
    plan.notes.append(f"{one.interface}: left out, commands {one.source} had wg-quick run as "
                      f"root (import with --keep-commands to keep them): {listed}")


def _drop_client_commands(written: Written, what: str, notes: list[str]) -> Written:
    """A client config without the commands it would run as root on the client: zsn
    never hands out one that has them (`zsn peer show`)."""
    section = written.config.interface
    dropped = [f"{e.key} = {e.value}" for e in section.entries
               if e.key.lower() in HOOK_KEYS] if section else []
    for key in HOOK_KEYS:
        section = written.config.interface
        if section is not None and section.entries_for(key):
            written.config.remove_key(section, key)
    if dropped:
        notes.append(f"{what}: left out, commands it ran as root on the client: "
                     + "; ".join(dropped))
    return written


def _plan_interface(host: Host, plan: Plan, one: Imported) -> None:
    from zsn.wireguard.server import client_config_path

    text = one.written.text
    try:
        parse(text, f"{one.interface}.conf")
    except ParseError as exc:  # a reader's output must be a config zsn reads itself
        raise ZsnError(f"{one.source}: the config made for {one.interface} does not parse: "
                       f"{exc}") from exc
    target = config_path(host, one.interface)
    if not one.in_place:
        _plan_file(plan, target, one.written, f"{one.interface}'s config")
    elif files.exists(target) and files.read_text(target) != text:
        plan.steps.append(FileEdit(target, files.read_tracked(target), text,
                                   mode=files.PRIVATE_FILE_MODE,
                                   intent=one.written.intent(replaces_original=False)))
    for peer in one.peers:
        if peer.client_config is None or peer.name is None:
            continue
        if not PEER_NAME_RE.fullmatch(peer.name):
            one.notes.append(f"{peer.name!r} cannot name a file: its client config is not "
                             "copied (rename the peer, then import again)")
            continue
        _plan_file(plan, client_config_path(host, one.interface, peer.name),
                   peer.client_config, f"client config of {peer.name}")


def _plan_file(plan: Plan, path: Path, written: Written, what: str) -> None:
    text = written.text
    if files.lexists(path):
        if files.is_link(path) or files.read_text(path) != text:
            raise ValidationError(f"{path} exists and differs from the imported {what}: "
                                  "move it away or import under another name (--interface)")
        return
    plan.steps.append(FileEdit(path, None, text, mode=files.PRIVATE_FILE_MODE,
                               private_dir=True, backup=False,
                               intent=written.intent(replaces_original=True)))


def _read_config(text: str, source: str) -> WgConfig:
    """A wg-quick config from a source, refused (naming the line) where wg or wg-quick
    would refuse it."""
    try:
        config = parse(text, source)
    except ParseError as exc:
        raise ValidationError(f"{exc}: not imported") from None
    found = refusals(config)
    if found:
        raise ValidationError(f"{source}:{found[0].line + 1}: {found[0].message}; wg would "
                              "refuse it: not imported")
    return config


@contextmanager
def _about(source: str, what: str) -> Iterator[None]:
    """A value of the source that zsn refuses to write is named as the source names it."""
    try:
        yield
    except ValidationError as exc:
        raise ValidationError(f"{source}: {what}: {exc}", field=exc.field) from None


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
            raise ValidationError(f"{source}:{number}: not a KEY=value line: "
                                  f"{stripped[:40]!r}")
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
    endpoint_host = values.get("pivpnHOST") or None
    with _about(str(setup_path), "pivpnDEV"):
        addressing.check_interface_name(interface)
    if endpoint_host is not None:
        with _about(str(setup_path), "pivpnHOST"):
            endpoint_host = addressing.check_endpoint_host(endpoint_host)
    server_path = config_path(host, interface)
    if not files.exists(server_path):
        raise ValidationError(f"{server_path}: PiVPN's server config is missing")
    text = files.read_text(server_path)
    config = _read_config(text, str(server_path))
    imported = Imported("pivpn", interface, Written(config.copy(), text), True,
                        endpoint_host=endpoint_host)
    known = _pivpn_clients(host, imported)
    configs_dir = host.path(f"{WIREGUARD_DIR}/configs")
    for peer in config.all_peers:
        key = peer.get("PublicKey") or ""
        client = None
        name = peer.client_file_name
        client_path = configs_dir / f"{name}.conf" if name else None
        if client_path is not None and files.exists(client_path):
            client_text = files.read_text(client_path)
            client = _client_config(client_text, str(client_path), key, imported.notes)
            if client is not None:
                client = _drop_client_commands(client, str(client_path), imported.notes)
        imported.peers.append(ImportedPeer(peer.name, key, peer.get("PresharedKey"),
                                           peer.get_all("AllowedIPs"),
                                           enabled=not peer.disabled,
                                           client_config=client,
                                           origin=f"{server_path.name}: {peer.label}"))
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


def _client_config(text: str, source: str, key: str, notes: list[str]) -> Written | None:
    """A client config the source kept, when its private key is the peer's; else a note."""
    public = _client_public_key(text, source)
    if public != key:
        notes.append(f"{source}: its private key is not the peer's; not copied")
        return None
    return Written(parse(text, source), text)


def _client_public_key(text: str, source: str) -> str | None:
    try:
        client = _read_config(text, source)
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
            raise ValidationError(f"{path}:{number}: not a KEY=VALUE line: {stripped[:40]!r}")
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


def _endpoint(source: str, host_name: str, port: str | int) -> tuple[str, int]:
    with _about(source, "the endpoint clients connect to"):
        return addressing.check_endpoint_host(host_name), addressing.check_port(port, "port")


def _client_text(source: str, what: str, interface: list[tuple[str, str]],
                 peer: list[tuple[str, str]], notes: list[str]) -> Written:
    """The client config a wg-easy hands out, made by zsn's renderer (every value
    checked as wg-quick reads it)."""
    config = WgConfig.new(source)
    with _about(source, what):
        config.append_interface(interface)
        config.append_peer(None, peer)
    return Written(config)


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
    source = str(path)
    host_name, client_port = _endpoint(source, host_name, config_port)
    with _about(source, "server"):
        server_address = addressing.check_ip(server.address, "address")
        server_public = public_key_from_private(_key(server.privateKey, "privateKey"))
    notes: list[str] = []
    written = WgConfig.new(source)
    imported = Imported("wg-easy v14", "wg0", Written(written), False, endpoint_host=host_name,
                        notes=notes)
    dns = env.get("WG_DEFAULT_DNS", "1.1.1.1")
    allowed = env.get("WG_ALLOWED_IPS", "0.0.0.0/0, ::/0")
    keepalive = env.get("WG_PERSISTENT_KEEPALIVE", "0")
    mtu = env.get("WG_MTU")
    for variable, key in (("WG_PRE_UP", "PreUp"), ("WG_POST_UP", "PostUp"),
                          ("WG_PRE_DOWN", "PreDown"), ("WG_POST_DOWN", "PostDown")):
        if env.get(variable):
            imported.commands.append((key, env[variable]))
    if len(clients) > MAX_PEERS:
        raise ValidationError(f"{path}: {len(clients)} clients; zsn imports at most {MAX_PEERS}")
    for client_id, client in clients.items():
        origin = f"client {client.name[:40]!r} ({client_id[:40]})"
        name = _wg_easy_name(client.name, notes)
        psk = client.preSharedKey or None
        with _about(source, origin):
            address = str(addressing.check_ip(client.address, "address"))
            if psk is not None:
                psk = _key(psk, "preSharedKey")
        client_config = None
        if client.privateKey:
            # What wg-easy v14 hands its clients (lib/WireGuard.js getClientConfiguration).
            interface = [("PrivateKey", _key(client.privateKey, "privateKey", source, origin)),
                         ("Address", f"{address}/24")]
            if dns:
                interface.append(("DNS", dns))
            if mtu:
                interface.append(("MTU", mtu))
            peer = [("PublicKey", server_public)]
            if psk:
                peer.append(("PresharedKey", psk))
            peer += [("AllowedIPs", allowed), ("PersistentKeepalive", keepalive),
                     ("Endpoint", addressing.format_endpoint(host_name, client_port))]
            client_config = _client_text(source, origin, interface, peer, notes)
        imported.peers.append(ImportedPeer(
            name, client.publicKey, psk, [f"{address}/32"], enabled=client.enabled,
            expires=None if client.expiredAt is None
            else _iso_time(client.expiredAt, source, origin),
            client_config=client_config, origin=origin))
    interface_lines = [("Address", f"{server_address}/24"), ("ListenPort", port),
                       ("PrivateKey", server.privateKey)]
    if mtu:
        interface_lines.append(("MTU", mtu))
    check_peers(imported)
    _server_config(written, f"imported from wg-easy v14 ({path})", interface_lines,
                   imported.peers)
    notes.append("wg-easy NATed its clients with iptables rules of its container (PostUp); "
                 "on this host: zsn wg gateway wg0")
    return imported


def _key(value: object, what: str, source: str = "", origin: str = "") -> str:
    """A key from a source, refused unless it is one wg takes (base64 of 32 bytes)."""
    if isinstance(value, str) and is_valid_key(value):
        return value
    place = f"{source}: {origin}: " if source else ""
    raise ValidationError(f"{place}{what} is not a WireGuard key (base64 of 32 bytes)")


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
    device: str = ""

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


@dataclass
class _V15Hooks:
    """``hooks_table``: the server's commands, with wg-easy's placeholders."""

    pre_up: str = ""
    post_up: str = ""
    pre_down: str = ""
    post_down: str = ""


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
    with _about(source, "interfaces_table"):
        addressing.check_interface_name(wg.name)
        private = _key(wg.private_key, "private_key")
        server_public = _key(wg.public_key, "public_key")
        v4 = addressing.check_network(wg.ipv4_cidr, "ipv4_cidr")
        v6 = addressing.check_network(wg.ipv6_cidr, "ipv6_cidr")
        addressing.check_port(wg.port, "port")
    if public_key_from_private(private) != server_public:
        raise ValidationError(f"{source}: interfaces_table: public_key is not the public key "
                              "of private_key")
    config = decode.convert(dict(db.execute("SELECT * FROM user_configs_table WHERE id = ?",
                                            (wg.name,)).fetchone() or {}),
                            _V15Config, source, "user_configs_table")
    host_name = endpoint or config.host
    if not host_name:
        raise ValidationError("no endpoint in the database (wg-easy's host): give --endpoint",
                              field="endpoint")
    host_name, client_port = _endpoint(source, host_name, config.port or wg.port)
    notes: list[str] = []
    written = WgConfig.new(source)
    imported = Imported("wg-easy v15", wg.name, Written(written), False,
                        endpoint_host=host_name, notes=notes)
    if any(raw.get(column) for column in _AMNEZIA_COLUMNS):
        # Written by its migrations as defaults; used only when wg-easy ran AmneziaWG
        # (WG_EXECUTABLE=awg, in its container's environment, not in the database).
        notes.append("wg-easy keeps AmneziaWG parameters, used only if it ran AmneziaWG "
                     "(WG_EXECUTABLE=awg): clients of such a wg-easy need new configs for "
                     "plain WireGuard")
    hooks = decode.convert(dict(db.execute("SELECT pre_up, post_up, pre_down, post_down FROM "
                                           "hooks_table WHERE id = ?", (wg.name,)).fetchone()
                                or {}), _V15Hooks, source, "hooks_table")
    for command, key in ((hooks.pre_up, "PreUp"), (hooks.post_up, "PostUp"),
                         (hooks.pre_down, "PreDown"), (hooks.post_down, "PostDown")):
        if command:
            imported.commands.append((key, _wg_easy_template(command, wg, v4, v6)))
    rows = db.execute("SELECT * FROM clients_table WHERE interface_id = ? ORDER BY id "
                      "LIMIT ?", (wg.name, MAX_PEERS + 1)).fetchall()
    if len(rows) > MAX_PEERS:
        raise ValidationError(f"{path}: more than {MAX_PEERS} clients; zsn imports at most "
                              f"{MAX_PEERS}")
    for row in rows:
        client = decode.convert(dict(row), _V15Client, source, "clients_table")
        imported.peers.append(_v15_client(client, path, config, host_name, client_port,
                                          (v4, v6), server_public, notes))
    interface_lines = [("Address", f"{next(v4.hosts())}/{v4.prefixlen}, "
                                   f"{next(v6.hosts())}/{v6.prefixlen}"),
                       ("ListenPort", str(wg.port)), ("PrivateKey", private),
                       ("MTU", str(wg.mtu))]
    check_peers(imported)
    _server_config(written, f"imported from wg-easy v15 ({path})", interface_lines,
                   imported.peers)
    notes.append("wg-easy NATed its clients with its hooks (iptables/ip6tables PostUp); on "
                 f"this host: zsn wg gateway {wg.name}")
    return imported


def _v15_client(client: _V15Client, path: Path, config: _V15Config, host_name: str,
                client_port: int, networks: tuple[addressing.IPNetwork, addressing.IPNetwork],
                server_public: str, notes: list[str]) -> ImportedPeer:
    source = str(path)
    origin = f"client {client.name[:40]!r} (id {client.id})"
    name = _wg_easy_name(client.name, notes)
    v4, v6 = networks
    with _about(source, origin):
        public = _key(client.public_key, "public_key")
        psk = _key(client.pre_shared_key, "pre_shared_key")
        private = _key(client.private_key, "private_key")
    allowed_ips = [f"{client.ipv4_address}/32", f"{client.ipv6_address}/128",
                   *_json_list(client.server_allowed_ips, path, "server_allowed_ips")]
    client_allowed = _json_list(client.allowed_ips or config.default_allowed_ips, path,
                                "allowed_ips")
    dns = _json_list(client.dns or config.default_dns, path, "dns")
    # What wg-easy v15 hands its clients (server/utils/wgHelper.ts generateClientConfig).
    interface = [("PrivateKey", private),
                 ("Address", f"{client.ipv4_address}/{v4.prefixlen}, "
                             f"{client.ipv6_address}/{v6.prefixlen}"),
                 ("MTU", str(client.mtu))]
    if dns:
        interface.append(("DNS", ", ".join(dns)))
    peer = [("PublicKey", server_public), ("PresharedKey", psk),
            ("AllowedIPs", ", ".join(client_allowed)),
            ("PersistentKeepalive", str(client.persistent_keepalive)),
            ("Endpoint", addressing.format_endpoint(host_name, client_port))]
    text = _client_text(source, origin, interface, peer, notes)
    hooks = [f"{key} = {command}" for command, key in (
        (client.pre_up, "PreUp"), (client.post_up, "PostUp"), (client.pre_down, "PreDown"),
        (client.post_down, "PostDown")) if command]
    if hooks:
        notes.append(f"{name}: left out of its client config, commands wg-easy had it run as "
                     "root on the client: " + "; ".join(hooks))
    server_endpoint = None
    if client.server_endpoint:
        with _about(source, f"{origin}: server_endpoint"):
            server_endpoint = _checked_endpoint(client.server_endpoint)
    return ImportedPeer(name, public, psk, allowed_ips, endpoint=server_endpoint,
                        enabled=bool(client.enabled),
                        expires=None if client.expires_at is None
                        else _iso_time(client.expires_at, source, origin),
                        client_config=text, origin=origin)


def _checked_endpoint(text: str) -> str:
    host, colon, port = text.rpartition(":")
    if not colon:
        raise ValidationError(f"{text!r} has no :port")
    return addressing.format_endpoint(addressing.check_endpoint_host(host),
                                      addressing.check_port(port, "port"))


def _wg_easy_template(template: str, wg: _V15Interface, v4: addressing.IPNetwork,
                      v6: addressing.IPNetwork) -> str:
    """A wg-easy hook with its placeholders filled in as wg-easy fills them
    (server/utils/WireGuard.ts iptablesTemplate)."""
    return (template.replace("{{ipv4Cidr}}", str(v4)).replace("{{ipv6Cidr}}", str(v6))
            .replace("{{device}}", wg.device).replace("{{port}}", str(wg.port)))


def _iso_time(text: str, source: str, origin: str) -> int:
    """An expiry from wg-easy (ISO 8601, or SQLite's ``YYYY-MM-DD HH:MM:SS`` in UTC),
    refused when zsn cannot read it: never taken for "never expires"."""
    from zsn.wireguard.expiry import format_stored, parse_stored

    try:
        at = parse_stored(text.replace(" ", "T") + ("Z" if text[-1:].isdigit() else ""))
    except (ValueError, OverflowError, OSError):
        at = None
    if at is not None:
        try:
            format_stored(at)  # within what zsn writes back (years 1970 to 9999)
        except (ValueError, OverflowError, OSError):
            at = None
    if at is None or at < 0:
        raise ValidationError(f"{source}: {origin}: expiry {text[:40]!r} is not a date and "
                              "time zsn can read: not imported (it would never expire)")
    return at


def _server_config(config: WgConfig, origin: str, interface_lines: list[tuple[str, str]],
                   peers: list[ImportedPeer]) -> None:
    """A server config written from a source's data, in zsn's own layout, by zsn's
    renderer (every value checked as wg and wg-quick read it)."""
    from zsn.wireguard.expiry import format_stored

    source = config.source or ""
    with _about(source, "server"):
        config.append_comment(origin)
        config.append_interface(interface_lines)
    for peer in peers:
        fields = [("PublicKey", peer.public_key)]
        if peer.preshared_key:
            fields.append(("PresharedKey", peer.preshared_key))
        fields.append(("AllowedIPs", ", ".join(peer.allowed_ips)))
        if peer.endpoint:
            fields.append(("Endpoint", peer.endpoint))
        with _about(source, peer.origin):
            section = config.append_peer(peer.name, fields, expires=None if peer.expires is None
                                         else format_stored(peer.expires))
            if not peer.enabled:
                config.disable_peer(section)


# -- plain wg-quick folders -----------------------------------------------------------


def read_wg_quick(host: Host, folder: Path) -> list[Imported]:
    if not files.is_dir(folder):
        raise ValidationError(f"{folder}: not a folder of wg-quick configs")
    parsed: dict[str, tuple[str, WgConfig]] = {}
    for path in files.list_files(folder, "*.conf"):
        if not files.is_file(path):
            continue
        text = files.read_text(path)
        parsed[path.stem] = (text, _read_config(text, str(path)))  # refused naming the line
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
        with _about(f"{folder}/{name}.conf", "its name"):
            addressing.check_interface_name(name)
        edited = config.copy()
        imported = Imported("wg-quick", name, Written(edited, text), in_place)
        for index in range(len(edited.all_peers)):
            peer = edited.all_peers[index]  # afresh: a name added above moves the lines
            key = peer.get("PublicKey") or ""
            client = by_key.get(key)
            peer_name = peer.name
            if peer_name is None and client is not None and PEER_NAME_RE.fullmatch(client[0]) \
                    and edited.find_peer(client[0]) is None:
                peer_name = client[0]
                edited.rename_peer(peer, peer_name)
                imported.notes.append(f"peer {key[:8]}… of {name} is named {peer_name} after "
                                      f"its client config {client[0]}.conf")
            written = None
            if client is not None:
                source = f"{folder}/{client[0]}.conf"
                written = _drop_client_commands(Written(parse(client[1], source), client[1]),
                                                source, imported.notes)
            imported.peers.append(ImportedPeer(
                peer_name, key, edited.all_peers[index].get("PresharedKey"),
                peer.get_all("AllowedIPs"), enabled=not peer.disabled, client_config=written,
                origin=f"{name}.conf: {edited.all_peers[index].label}"))
        for entry in edited.interface.entries_for("Address") if edited.interface else []:
            if "fe80:" in entry.value.lower():
                imported.notes.append(f"{name}.conf has link-local addresses (fe80::) that "
                                      "`wg-quick save` recorded from the device; harmless")
                break
        found.append(imported)
    for name in clients:
        if not any(p.client_config is not None and p.client_config.original == clients[name][0]
                   for i in found for p in i.peers):
            found[0].notes.append(f"{name}.conf is a client of no server here: left as it is")
    return found


def _is_client(config: WgConfig) -> bool:
    peers = config.peers
    return len(peers) == 1 and peers[0].get("Endpoint") is not None
