"""Changes zsn makes to OpenVPN connections: each a `zsn.plan.Plan` that is shown, then applied.

File edits are `zsn.plan.FileEdit`s (atomic, backup kept, refused if the file changed
on disk since it was read, undone if a later step fails); unit control goes over
D-Bus to systemd.
"""

from __future__ import annotations

import configparser
import re
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from zsn.errors import ValidationError, ZsnError, about_input
from zsn.meaning import OwnFile
from zsn.openvpn.config import (
    COMMAND_OPTIONS,
    INLINE,
    Directive,
    OvpnConfig,
    parse,
    validate_name,
)
from zsn.openvpn.connections import (
    CONFIG_DIR,
    KINDS,
    ConfigFile,
    config_path,
    load,
    role_and_reason,
)
from zsn.openvpn.effects import ReadConfig, advice, analyze
from zsn.openvpn.refusals import profile_refusals
from zsn.plan import Check, FileEdit, LiveStep, Plan, Step
from zsn.system.files import (
    PRIVATE_FILE_MODE,
    exists,
    is_dir,
    is_file,
    list_files,
    read_text,
    read_tracked,
)
from zsn.system.host import Host
from zsn.tries.restores import unit_undo

if TYPE_CHECKING:  # D-Bus loads only when a unit is controlled, not for lint or export
    from zsn.system.dbus import JobResult, SystemBus, UnitFileChange

HOOK_PATH = "/etc/openvpn/zsn-resolved-hook"
HOOK_MODE = 0o755
HOOK_SCRIPT = OwnFile("zsn's DNS hook, shipped with zsn as it is")
ROUTE_ALL_FLAG = "--route-all-dns"


def hook_script() -> str:
    """The hook script zsn ships (package data next to this module)."""
    return resources.files("zsn.openvpn").joinpath("zsn-resolved-hook").read_text()


def require_usable_name(config_file: ConfigFile) -> None:
    """Refuse to act on a config whose file name is no connection name zsn can use.

    The name comes from a file: it becomes a unit instance and a socket path, so it
    is checked here, where it is read, as a typed one is.
    """
    try:
        validate_name(config_file.name)
    except ValidationError as exc:
        raise ValidationError(f"{config_file.path.parent}: {exc}; rename the file "
                              "(lint OVPN010)") from None


# The DNS hook ----------------------------------------------------------------------


def _hook_words(config: OvpnConfig, name: str) -> list[str] | None:
    """The words of the `name` (up/down) command, None if unset. OpenVPN takes the
    command as one argument (quoted when it has options), so the args are joined."""
    directive = config.get(name)
    words = " ".join(directive.args).split() if directive is not None else []
    return words or None


def is_zsn_hook(directive: Directive) -> bool:
    """True for an ``up``/``down`` line running zsn's own DNS hook: nothing to warn about."""
    return directive.name in ("up", "down") and bool(directive.args) and \
        (directive.args[0].split() or [""])[0] == HOOK_PATH


def runs_hook(config: OvpnConfig, name: str = "up") -> bool:
    """True if the config's `name` script is zsn's DNS hook."""
    return (_hook_words(config, name) or [""])[0] == HOOK_PATH


def routes_all_dns(config: OvpnConfig) -> bool:
    """True if zsn's hook runs on up with --route-all-dns (every query through the tunnel)."""
    return runs_hook(config) and ROUTE_ALL_FLAG in (_hook_words(config, "up") or [])


def plan_hook_install(host: Host, config_file: ConfigFile, *,
                      route_all_dns: bool | None = None) -> Plan:
    """Add zsn's DNS hook to a config, idempotently; install or update the script itself.

    `route_all_dns` None keeps what the config's hook line says (split DNS when the
    hook is not there yet); True or False sets it.
    """
    require_usable_name(config_file)
    path = host.path(config_file.path)
    snapshot = read_tracked(path)
    config = parse(snapshot.text, str(config_file.path))
    for name in ("up", "down"):
        if _hook_words(config, name) is not None and not runs_hook(config, name):
            other = " ".join(config.get(name).args)  # type: ignore[union-attr]
            raise ValidationError(
                f"{config_file.path} already runs '{other}' as its {name} script; OpenVPN "
                f"runs only one, so remove it (or fold it into {HOOK_PATH}) first"
            )
    if route_all_dns is None:
        route_all_dns = routes_all_dns(config)
    up_command = HOOK_PATH + (f" {ROUTE_ALL_FLAG}" if route_all_dns else "")
    if config.script_security < 2:
        config.set_directive("script-security", "2")
    up = config.get("up")
    if up is None or " ".join(up.args) != up_command:
        config.set_directive("up", up_command)
    down = config.get("down")
    if down is None or " ".join(down.args) != HOOK_PATH:
        config.set_directive("down", HOOK_PATH)
    if not config.has("down-pre"):
        config.add_directive("down-pre")
    edits: list[Step] = []
    if config.render() != snapshot.text:
        edits.append(FileEdit(path, snapshot, config.render(), intent=config.intent))
    hook_path = host.path(HOOK_PATH)
    script = hook_script()
    try:
        current = read_tracked(hook_path)
    except ZsnError:
        if exists(hook_path):
            raise
        edits.append(FileEdit(hook_path, None, script, HOOK_MODE, shown_in_full=False,
                              intent=HOOK_SCRIPT))
    else:
        if current.text != script or current.mode != HOOK_MODE:
            edits.append(FileEdit(hook_path, current, script, HOOK_MODE, shown_in_full=False,
                                  intent=HOOK_SCRIPT))
    return Plan(f"DNS hook for {config_file.unit}", edits,
                warnings=hook_warnings(host, config_file, config))


def plan_hook_remove(host: Host, config_file: ConfigFile) -> Plan:
    """Take zsn's DNS hook out of a config (its up/down lines and down-pre).

    `script-security` stays (other scripts may need it), and so does the script
    itself: other configs may run it.
    """
    require_usable_name(config_file)
    path = host.path(config_file.path)
    snapshot = read_tracked(path)
    config = parse(snapshot.text, str(config_file.path))
    title = f"remove the DNS hook from {config_file.unit}"
    hooked = [name for name in ("up", "down") if runs_hook(config, name)]
    if not hooked:
        return Plan(title, warnings=[f"{config_file.path} does not run zsn's DNS hook"])
    for name in hooked:
        config.remove(config.get(name))  # type: ignore[arg-type]
    if "down" in hooked and not config.has("down"):
        for directive in reversed(config.get_all("down-pre")):
            config.remove(directive)
    return Plan(title, [FileEdit(path, snapshot, config.render(), intent=config.intent)],
                notes=[f"takes effect when {config_file.unit} restarts; DNS the server "
                       "pushes is ignored from then on",
                       f"{HOOK_PATH} stays for other configs; 'script-security' is kept"])


def hook_warnings(host: Host, config_file: ConfigFile, config: OvpnConfig) -> list[str]:
    """Where the unit's sandbox or dropped privileges would stop the hook from working."""
    warnings: list[str] = []
    user = config.get("user")
    if user is not None:
        warnings.append(
            f"the config drops privileges to '{user.arg}': the down hook then runs "
            "without CAP_NET_ADMIN and resolved refuses the revert; the link's DNS "
            "only goes when the tun device does (never with persist-tun)"
        )
    if config.has("chroot"):
        warnings.append(f"the config uses chroot: {HOOK_PATH} and resolvectl must exist "
                        "inside the chroot for the down hook")
    service = unit_service_settings(host, config_file.unit)
    private_network = service.get("privatenetwork", "no").lower()
    if private_network in ("yes", "true", "1", "on"):
        warnings.append(f"{config_file.unit} has PrivateNetwork=yes: the hook cannot see the "
                        "host's links")
    families = service.get("restrictaddressfamilies", "")
    if families and ("AF_UNIX" not in families) != families.startswith("~"):
        warnings.append(f"{config_file.unit} restricts address families without AF_UNIX: "
                        "resolvectl cannot reach systemd-resolved over D-Bus")
    caps = service.get("capabilityboundingset", "")
    if caps and ("CAP_NET_ADMIN" not in caps) != caps.startswith("~"):
        warnings.append(f"{config_file.unit} drops CAP_NET_ADMIN: resolved will refuse "
                        "the hook's changes (no polkit agent for a service)")
    run_as = service.get("user", "root")
    if run_as not in ("", "root", "0"):
        warnings.append(f"{config_file.unit} runs as User={run_as}: resolved will refuse "
                        "the hook's changes")
    return warnings


_UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system",
              "/lib/systemd/system")


def unit_service_settings(host: Host, unit: str) -> dict[str, str]:
    """The [Service] settings of `unit` as systemd would merge them (last one wins),
    read from the unit file and its drop-ins under the host's root."""
    template = re.sub(r"@[^.]*\.", "@.", unit)
    names = [template, unit] if template != unit else [unit]
    found: list[Path] = []
    for name in names:
        for directory in _UNIT_DIRS:
            candidate = host.path(Path(directory, name))
            if is_file(candidate):
                found.append(candidate)
                break
    for name in names:
        for directory in reversed(_UNIT_DIRS):
            dropins = host.path(Path(directory, name + ".d"))
            if is_dir(dropins):
                found.extend(list_files(dropins, "*.conf"))
    settings: dict[str, str] = {}
    for path in found:
        parser = configparser.ConfigParser(strict=False, interpolation=None,
                                           allow_no_value=True, delimiters=("=",))
        try:
            parser.read_string(read_text(path), str(path))
        except (ZsnError, configparser.Error):
            continue
        if parser.has_section("Service"):
            for key, value in parser.items("Service"):
                settings[key] = value or ""
    return settings


# Import and management socket ------------------------------------------------------


def import_name(source: Path) -> str:
    """The name an imported profile gets when none is given: the file's, without
    ``.ovpn`` or ``.conf``."""
    return source.name.removesuffix(".ovpn").removesuffix(".conf")


def plan_import(host: Host, source: Path, name: str, keep_commands: bool = False) -> Plan:
    """Import a .ovpn file as /etc/openvpn/client/NAME.conf, byte for byte, mode 0600,
    but for the commands it has OpenVPN run as root (`COMMAND_OPTIONS`): named in the
    plan, and left out unless `keep_commands`."""
    with about_input("name"):
        validate_name(name)
    try:
        text = read_tracked(source).text
        config = parse(text, str(source))
    except ValidationError:
        raise
    except ZsnError as exc:  # the profile given is missing, unreadable, not a profile
        raise ValidationError(str(exc), field="file") from exc
    refused, unchecked = profile_refusals(config, source.name)
    if refused:
        where = f"{source}:{refused[0].line}" if refused[0].line else str(source)
        raise ValidationError(f"{where}: {refused[0].message}", field="file")
    role, reason = role_and_reason(config)
    if role != "client":
        why = (f"'{reason.name}' at line {reason.line + 1}" if reason is not None
               else "no 'client' or 'remote' line")
        raise ValidationError(f"{source}: a server config ({why}); import takes client "
                              "profiles", field="file")
    target_file = ConfigFile("client", name, config_path("client", name))
    target = host.path(target_file.path)
    if exists(target):
        raise ValidationError(f"{target_file.path} already exists; choose another name",
                              field="name")
    if not is_dir(target.parent):
        raise ValidationError(f"{target_file.path.parent} does not exist (is openvpn installed?)")
    commands = [d for d in config.directives if d.name in COMMAND_OPTIONS]
    notes = []
    if commands and not keep_commands:
        notes.append("left out, commands the profile had OpenVPN run as root (import with "
                      "--keep-commands to keep them): "
                      + "; ".join(" ".join((d.name, *d.args)) for d in commands))
        for directive in reversed(commands):
            config.remove(directive)
    warnings = [
        f"'{d.name} {d.arg}' refers to a file next to the profile: copy it to "
        f"{target_file.path.parent}/ as well"
        for d in config.directives
        if d.name in ("ca", "cert", "key", "tls-auth", "tls-crypt", "pkcs12")
        and d.arg and d.arg != INLINE and not Path(d.arg).is_absolute()
    ]
    # A profile comes from elsewhere (a provider, a colleague) and the unit runs it as
    # root: everything it would run, read, send or write is said before it lands.
    effects = analyze(config, target_file.path, target_file.working_dir,
                      _read_beside(host, source, target_file.working_dir),
                      ignore=is_zsn_hook)
    warnings += [f"{told.message}: {told.fix}"
                 for told in advice(effects, config_dir=Path(CONFIG_DIR), strict=True)]
    if effects.script_security >= 2:
        warnings.append(f"the profile sets script-security {effects.script_security}: "
                        "OpenVPN runs its scripts"
                        + (" and passes them passwords in their environment"
                           if effects.script_security >= 3 else ""))
    warnings += [f"'config {used.written}' includes {used.written}, which is not imported: "
                 f"once imported it reads {used.path}; check it and copy it there"
                 for used in effects.files if used.use == "includes"]
    warnings += [unchecked] if unchecked else []
    return Plan(f"import {source.name} as {target_file.unit}",
                [FileEdit(target, None, config.render(), PRIVATE_FILE_MODE,
                          intent=config.intent.replacing(text, str(source)))],
                warnings=warnings, notes=notes)


def _read_beside(host: Host, source: Path, working_dir: Path) -> ReadConfig:
    """Reads what a profile includes: from beside the profile for paths that land in
    its future folder (they are not imported), elsewhere from the host."""

    def read(path: Path) -> OvpnConfig:
        local = source.parent / path.relative_to(working_dir) \
            if path.is_relative_to(working_dir) else host.path(path)
        if not exists(local):
            raise FileNotFoundError(path)
        return parse(read_tracked(local).text, str(local))

    return read


def plan_management_socket(host: Host, config_file: ConfigFile) -> Plan:
    """Add a unix management socket (/run/openvpn-client/NAME.sock etc.) to a config."""
    require_usable_name(config_file)
    path = host.path(config_file.path)
    snapshot = read_tracked(path)
    config = parse(snapshot.text, str(config_file.path))
    existing = config.get("management")
    if existing is not None:
        return Plan(f"management socket for {config_file.unit}",
                    warnings=[f"already configured: management {' '.join(existing.args)}"])
    socket_path = KINDS[config_file.kind][2].format(config_file.name)
    config.add_directive("management", socket_path, "unix")
    return Plan(
        f"management socket for {config_file.unit}",
        [FileEdit(path, snapshot, config.render(), intent=config.intent)],
        warnings=[f"takes effect when {config_file.unit} restarts"],
    )


def check_config(host: Host, config_file: ConfigFile) -> None:
    """Raise ParseError if the config no longer parses (before starting its unit)."""
    load(host, config_file)


# Unit control -----------------------------------------------------------------------

VERBS = ("start", "stop", "restart")


def plan_unit(host: Host, config_file: ConfigFile, verb: str) -> Plan:
    """Start, stop or restart a connection's unit; starting refuses a config that no
    longer parses (the error names the line), before systemd is asked."""
    require_usable_name(config_file)
    if verb not in VERBS:
        raise ValidationError(f"unknown action {verb!r}; one of {', '.join(VERBS)}")
    if verb != "stop":
        check_config(host, config_file)
    try:
        config: OvpnConfig | None = load(host, config_file)
    except ZsnError:  # a broken config may still be stopped: its tunnel is not known
        config = None
    unit = config_file.unit
    undo = {"start": "stop", "stop": "start"}.get(verb)
    try:
        active = _active(host, unit)
    except ZsnError:  # no bus to ask (a dry run under --root): what the verb implies
        active = verb != "start"
    dev = config.get("dev") if config is not None else None
    tunnel = dev.args[0] if dev is not None and dev.args else ""
    plan = Plan(f"{verb} {unit}", [LiveStep(
        f"{verb} {unit} (systemd over D-Bus, waiting for the job's result)",
        lambda: _job_done(control(host, unit, verb)),
        (lambda: _job_done(control(host, unit, undo))) if undo else None,
        (unit_undo(unit, active),))],
        touches=_tunnel_devices(tunnel),
        reroutes=_redirected(config, unit) if verb != "stop" and config is not None else ())
    plan.checks.append(Check(f"{unit} {'stopped' if verb == 'stop' else 'running'}",
                             partial(_unit_differences, host, unit, verb != "stop")))
    return plan


def _tunnel_devices(dev: str) -> frozenset[str]:
    """The device a connection's tunnel is: ``dev tun0`` names it; a bare ``dev tun``
    (or tap) lets the kernel number it, so any of that kind may be it."""
    if not dev:
        return frozenset()
    return frozenset({f"{dev}*"}) if dev in ("tun", "tap") else frozenset({dev})


def _active(host: Host, unit: str) -> bool:
    """Whether `unit` runs now: what a rollback of starting or stopping it restores."""
    from zsn.system.dbus import Systemd, run_sync

    state = run_sync(host, lambda bus: Systemd(bus).unit_state(unit), timeout=10.0)
    return state.active_state in ("active", "activating", "reloading")


def _unit_differences(host: Host, unit: str, running: bool) -> list[str]:
    """Verify after apply: the unit is in the state the change meant."""
    if _active(host, unit) == running:
        return []
    return [f"{unit} is {'not running' if running else 'still running'}"]


def _redirected(config: OvpnConfig, unit: str) -> tuple[tuple[str, str], ...]:
    """What ``redirect-gateway`` routes into the tunnel: all of IPv4 (def1 as two
    halves, which win over the default route; without def1, the default route itself)
    and IPv6 with ``ipv6``."""
    directive = config.get("redirect-gateway")
    if directive is None:
        return ()
    why = f"{unit}'s redirect-gateway routes it into the tunnel"
    flags = {arg.lower() for arg in directive.args}
    found = [("0.0.0.0/1", why), ("128.0.0.0/1", why)] if "def1" in flags else \
        [("0.0.0.0/0", why)]
    if "ipv6" in flags:
        found += [("::/1", why), ("8000::/1", why)] if "def1" in flags else [("::/0", why)]
    return tuple(found)


def plan_enabled(host: Host, config_file: ConfigFile, enabled: bool) -> Plan:
    """Enable or disable a connection's start at boot."""
    require_usable_name(config_file)
    unit = config_file.unit
    verb = "enable" if enabled else "disable"
    return Plan(f"{verb} {unit} at boot", [LiveStep(
        f"{verb} {unit} (systemd unit file over D-Bus)",
        lambda: set_enabled(host, unit, enabled),
        lambda: set_enabled(host, unit, not enabled))])


def _job_done(result: JobResult) -> JobResult:
    if not result.ok:
        raise ZsnError(result.describe())
    return result


def control(host: Host, unit: str, verb: str, *, timeout: float = 90.0) -> JobResult:
    """Start, stop or restart `unit` over D-Bus and wait for systemd's job result."""
    if verb not in VERBS:
        raise ValidationError(f"unknown action {verb!r}; one of {', '.join(VERBS)}")
    from zsn.system.dbus import control_unit

    return control_unit(host, unit, verb, missing="is openvpn installed?", timeout=timeout)


def set_enabled(host: Host, unit: str, enabled: bool) -> list[UnitFileChange]:
    """Enable or disable `unit`'s start at boot; returns the symlinks systemd changed."""
    from zsn.system.dbus import Systemd, run_sync

    async def act(bus: SystemBus) -> list[UnitFileChange]:
        systemd = Systemd(bus)
        state = await systemd.unit_state(unit)
        if not state.exists:
            raise ZsnError(f"{unit}: no such unit on this system (is openvpn installed?)")
        return await (systemd.enable(unit) if enabled else systemd.disable(unit))

    return run_sync(host, act, timeout=15.0, deadline=60.0)

