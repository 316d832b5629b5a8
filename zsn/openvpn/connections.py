"""OpenVPN connections: the configs under /etc/openvpn, their units and their live state.

Three places, three unit templates (upstream's and Debian's):
``client/NAME.conf`` -> ``openvpn-client@NAME.service``,
``server/NAME.conf`` -> ``openvpn-server@NAME.service``,
``NAME.conf`` (top level) -> ``openvpn@NAME.service``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from zsn.errors import ZsnError
from zsn.openvpn import management
from zsn.openvpn.config import Directive, OvpnConfig, parse
from zsn.system.files import exists, is_file, list_files, read_tracked
from zsn.system.host import Host

if TYPE_CHECKING:
    from zsn.system.dbus import SystemBus, UnitState

CONFIG_DIR = "/etc/openvpn"
Kind = Literal["client", "server", "legacy"]
KINDS: dict[Kind, tuple[str, str, str]] = {
    "client": ("client", "openvpn-client@{}.service", "/run/openvpn-client/{}.sock"),
    "server": ("server", "openvpn-server@{}.service", "/run/openvpn-server/{}.sock"),
    "legacy": ("", "openvpn@{}.service", "/run/openvpn/{}.sock"),
}
"""kind -> (folder under /etc/openvpn, unit name pattern, default management socket)."""


@dataclass(frozen=True)
class ConfigFile:
    kind: Kind
    """client, server or legacy (Debian's top-level openvpn@NAME)."""
    name: str
    path: Path
    """Path on the system (not under --root); `Host.path` resolves it."""

    @property
    def unit(self) -> str:
        return KINDS[self.kind][1].format(self.name)

    @property
    def working_dir(self) -> Path:
        """Where the unit runs OpenVPN, so relative paths in the config start here."""
        return self.path.parent


def config_path(kind: Kind, name: str) -> Path:
    folder = KINDS[kind][0]
    return Path(CONFIG_DIR, folder, f"{name}.conf") if folder else Path(CONFIG_DIR,
                                                                         f"{name}.conf")


def discover(host: Host) -> list[ConfigFile]:
    """Every config OpenVPN's units would run, client first, in name order."""
    found: list[ConfigFile] = []
    for kind, (folder, _unit, _sock) in KINDS.items():
        directory = host.path(Path(CONFIG_DIR, folder))
        for path in list_files(directory, "*.conf"):
            if is_file(path):
                found.append(ConfigFile(kind, path.stem, config_path(kind, path.stem)))
    return found


@dataclass(frozen=True)
class Remote:
    host: str
    port: str
    proto: str


@dataclass(frozen=True)
class Summary:
    """What a config says about the connection, read without touching secrets."""

    role: str
    """client or server (`role_of`)."""
    remotes: tuple[Remote, ...]
    proto: str
    dev: str
    management: management.Endpoint | None


def role_of(config: OvpnConfig) -> str:
    """``server`` or ``client``, as OpenVPN itself decides (options.c): ``client`` is
    ``pull`` + ``tls-client``; ``server`` and ``server-bridge`` imply ``mode server`` and
    ``tls-server``; a point-to-point ``tls-server`` waits for its peer like a server.
    Without a TLS role (a static-key or plain point-to-point link), the side with no
    ``remote`` waits for the other: it needs the server unit, which binds its port."""
    return role_and_reason(config)[0]


def role_and_reason(config: OvpnConfig) -> tuple[str, Directive | None]:
    """`role_of`, with the directive that decided it (None: no ``remote`` line)."""
    for name in ("client", "tls-client", "pull"):
        directive = config.get(name)
        if directive is not None:
            return "client", directive
    for directive in config.directives:
        if directive.name in ("server", "server-bridge", "tls-server") or (
                directive.name == "mode" and directive.arg == "server"):
            return "server", directive
    remote = config.get("remote")
    return ("client", remote) if remote is not None else ("server", None)


def summarize(config: OvpnConfig, host: Host, working_dir: Path) -> Summary:
    proto_directive = config.get("proto")
    proto = proto_directive.arg if proto_directive and proto_directive.arg else "udp"
    port_directive = config.get("port") or config.get("rport")
    default_port = port_directive.arg if port_directive and port_directive.arg else "1194"
    remotes = tuple(
        Remote(
            d.args[0],
            d.args[1] if len(d.args) > 1 else default_port,
            d.args[2] if len(d.args) > 2 else proto,
        )
        for d in config.get_all("remote") if d.args
    )
    dev_directive = config.get("dev")
    return Summary(
        role=role_of(config),
        remotes=remotes,
        proto=proto,
        dev=dev_directive.arg if dev_directive and dev_directive.arg else "",
        management=management_endpoint(config, host, working_dir),
    )


def management_endpoint(config: OvpnConfig, host: Host,
                        working_dir: Path) -> management.Endpoint | None:
    directive = config.get("management")
    if directive is None or len(directive.args) < 2:
        return None
    address, port = directive.args[0], directive.args[1]
    # A password file may follow a unix socket as well as a TCP port.
    password = None
    if len(directive.args) > 2 and directive.args[2] != "stdin":
        password = host.path(working_dir / directive.args[2])
    if port == "unix":
        return management.Endpoint(unix_path=host.path(working_dir / address),
                                   password_file=password)
    if not port.isdigit():
        return None
    return management.Endpoint(tcp_host=address, tcp_port=int(port), password_file=password)


@dataclass(frozen=True)
class Connection:
    """One config with everything zsn could learn about it; errors say what could not."""

    config: ConfigFile
    summary: Summary | None
    unit: UnitState | None
    live: management.LiveState | None
    errors: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.config.unit


def load(host: Host, config: ConfigFile) -> OvpnConfig:
    path = host.path(config.path)
    return parse(read_tracked(path).text, str(config.path))


def connections(host: Host, *, with_units: bool = True,
                with_live: bool = True) -> list[Connection]:
    """Every discovered connection with its unit state (one bus connection) and live state."""
    configs = discover(host)
    units: Mapping[str, UnitState | ZsnError] = {}
    if with_units and configs:
        units = _unit_states(host, [c.unit for c in configs])
    result: list[Connection] = []
    for config in configs:
        errors: list[str] = []
        summary: Summary | None = None
        try:
            summary = summarize(load(host, config), host, config.working_dir)
        except ZsnError as exc:
            errors.append(str(exc))
        unit_state: UnitState | None = None
        got = units.get(config.unit)
        if isinstance(got, ZsnError):
            errors.append(str(got))
        else:
            unit_state = got
        live = None
        running = unit_state is None or unit_state.active_state in ("active", "activating",
                                                                    "reloading")
        if with_live and summary and summary.management and running:
            try:
                live = management.query(summary.management)
            except ZsnError as exc:
                errors.append(str(exc))
        result.append(Connection(config, summary, unit_state, live, tuple(errors)))
    return result


def _unit_states(host: Host, names: list[str]) -> dict[str, UnitState | ZsnError]:
    socket = host.system_bus_socket
    if socket is not None and not exists(socket):
        # Said before loading the D-Bus library: a host without systemd (a
        # container, a --root tree) should not pay for it.
        missing = ZsnError(f"system bus {socket}: socket not found (is systemd running?)")
        return dict.fromkeys(names, missing)
    from zsn.system.dbus import Systemd, run_sync

    async def read(bus: SystemBus) -> dict[str, UnitState | ZsnError]:
        systemd = Systemd(bus)
        states: dict[str, UnitState | ZsnError] = {}
        for name in names:
            try:
                states[name] = await systemd.unit_state(name)
            except ZsnError as exc:
                states[name] = exc
        return states

    try:
        return run_sync(host, read)
    except ZsnError as exc:
        return dict.fromkeys(names, exc)
