"""Advice on OpenVPN configs: each finding has an id, a severity and a one-line fix."""

from __future__ import annotations

from pathlib import Path

from zsn.errors import ValidationError, ZsnError
from zsn.lint import Finding, Severity
from zsn.openvpn.actions import HOOK_PATH, is_zsn_hook, runs_hook
from zsn.openvpn.config import (
    INLINE,
    SCRIPT_OPTIONS,
    OvpnConfig,
    parse,
    validate_name,
)
from zsn.openvpn.connections import CONFIG_DIR, ConfigFile, discover, load, summarize
from zsn.openvpn.effects import Effects, ReadConfig, advice, analyze
from zsn.openvpn.refusals import option_refusals, profile_refusals
from zsn.system.files import exists, is_world_readable, read_tracked
from zsn.system.host import Host
from zsn.system.packages import package_version

FILE_OPTIONS = ("ca", "cert", "key", "tls-auth", "tls-crypt", "tls-crypt-v2", "pkcs12",
                "secret", "dh", "crl-verify", "auth-user-pass", "askpass", "extra-certs")
SECRET_OPTIONS = ("key", "tls-auth", "tls-crypt", "tls-crypt-v2", "pkcs12", "secret",
                  "auth-user-pass", "askpass")


SUBJECT = "unit"
RULES = {
    "OVPN000": "config does not parse",
    "OVPN001": "client/server config in the other's folder (wrong unit)",
    "OVPN002": "referenced file missing",
    "OVPN003": "secret file or config with an inline key readable by everyone",
    "OVPN004": "pushed DNS ignored (no up hook), or the hook without a down",
    "OVPN005": "scripts configured but script-security below 2",
    "OVPN006": "the DNS hook with 'user' (the down hook cannot revert DNS)",
    "OVPN007": "TCP management interface without a password file",
    "OVPN008": "runs programs or loads code as root (scripts, plugins, iproute ...), "
               "including behind 'setenv opt' and in included configs",
    "OVPN009": "a file it reads, sends or writes lies outside the config's folder",
    "OVPN010": "config file name that is no usable connection name (unit, socket path)",
    "OVPN011": "a TLS server without 'dh', which OpenVPN before 2.7 refuses to start",
    "OVPN012": "a line OpenVPN refuses as it reads the config (an option it does not know, "
               "a wrong number of parameters, a value it checks), so it does not start; "
               "checked with its option table, and by the openvpn binary when installed",
}
DH_OPTIONAL_SINCE = (2, 7)
"""OpenVPN 2.7 uses ECDH when a TLS server names no 'dh'; 2.6 and older refuse."""


def read_config(host: Host) -> ReadConfig:
    """Reads an included config at a system path under `host`'s root."""

    def read(path: Path) -> OvpnConfig:
        if not exists(host.path(path)):
            raise FileNotFoundError(path)
        return parse(read_tracked(host.path(path)).text, str(path))

    return read


def effects_of(host: Host, config_file: ConfigFile, config: OvpnConfig) -> Effects:
    return analyze(config, config_file.path, config_file.working_dir, read_config(host),
                   ignore=is_zsn_hook)


def lint_config(host: Host, config_file: ConfigFile, config: OvpnConfig) -> list[Finding]:
    unit = config_file.unit
    where = config_file.working_dir
    findings: list[Finding] = []

    def add(rule: str, severity: Severity, message: str, fix: str) -> None:
        findings.append(Finding(rule, severity, unit, message, fix))

    role = summarize(config, host, where).role
    if config_file.kind != "legacy" and role != config_file.kind:
        right = config_file.path.parent.parent / role / config_file.path.name
        add("OVPN001", "error",
            f"{config_file.path} is a {role} config in the {config_file.kind}/ folder, so "
            f"{unit} runs it with the wrong unit's settings",
            f"move it to {right} and use openvpn-{role}@{config_file.name}")

    tls_server = config.has("tls-server") or config.has("server") or config.has("server-bridge")
    version = package_version(host, "openvpn")
    if role == "server" and tls_server and not config.has("dh") and not config.has("secret") \
            and version is not None and version < DH_OPTIONAL_SINCE:
        add("OVPN011", "error",
            f"a TLS server without 'dh': OpenVPN {'.'.join(map(str, version))} refuses to "
            "start it ('You must define DH file (--dh)')",
            "add 'dh none' (ECDH, no file) or 'dh FILE'")

    effects = effects_of(host, config_file, config)
    findings.extend(_refused_lines(config_file, config, effects))
    for directive, _line in effects.directives:
        if directive.name not in FILE_OPTIONS or not directive.arg:
            continue
        if directive.arg == INLINE or (directive.name == "dh" and directive.arg == "none"):
            continue
        if directive.name in ("auth-user-pass", "askpass") and directive.arg == "stdin":
            continue
        path = host.path(where / directive.arg)
        shown = where / directive.arg
        if not exists(path):
            add("OVPN002", "error", f"'{directive.name}' file {shown} does not exist",
                f"copy the file to {shown} or inline it as <{directive.name}>")
        elif directive.name in SECRET_OPTIONS and is_world_readable(path):
            add("OVPN003", "error", f"'{directive.name}' file {shown} is readable by everyone",
                f"chmod 600 {shown}")
    has_inline_secret = any(d.inline is not None and d.name in SECRET_OPTIONS
                            for d, _line in effects.directives)
    if has_inline_secret and is_world_readable(host.path(config_file.path)):
        add("OVPN003", "error", f"{config_file.path} holds an inline private key and is "
            "readable by everyone", f"chmod 600 {config_file.path}")
    for told in advice(effects, config_dir=Path(CONFIG_DIR)):
        findings.append(Finding(told.rule, told.severity, unit, told.message, told.fix,
                                str(told.where.file) if told.where else None,
                                told.where.line if told.where else None))

    hooked = runs_hook(config)
    if role == "client" and not config.has("up"):
        dns_expected = config.has("redirect-gateway") or any(
            d.arg in ("DNS", "DNS6") for d in config.get_all("dhcp-option"))
        add("OVPN004", "warning" if dns_expected else "info",
            "DNS servers the server pushes are ignored (no up hook): queries may leak "
            "outside the tunnel",
            "install zsn's DNS hook: key h in the OpenVPN pane, or "
            f"'zsn vpn hook install {config_file.kind}/{config_file.name}'")
    elif hooked and not config.has("down"):
        add("OVPN004", "warning", "the DNS hook sets DNS on up but nothing reverts it on down",
            f"add 'down {HOOK_PATH}' and 'down-pre'")

    scripts = [d.name for d, _line in effects.directives if d.name in SCRIPT_OPTIONS]
    level = effects.script_security
    if scripts and level < 2:
        add("OVPN005", "error",
            f"script-security is {level}, so OpenVPN refuses to run the configured "
            f"{', '.join(sorted(set(scripts)))} script(s)",
            "add 'script-security 2'")
    if hooked and config.has("user"):
        add("OVPN006", "warning",
            "privileges are dropped ('user'), so the down hook cannot revert the link's DNS",
            "remove 'user'/'group', or rely on resolved dropping the link when tun goes")

    management = config.get("management")
    if management is not None and len(management.args) == 2 and management.args[1] != "unix":
        add("OVPN007", "warning",
            f"management interface on TCP {management.args[0]}:{management.args[1]} "
            "without a password file: any local user can control the tunnel",
            f"use 'management /run/openvpn-{config_file.kind}/{config_file.name}.sock unix'")
    return findings


def _refused_lines(config_file: ConfigFile, config: OvpnConfig,
                   effects: Effects) -> list[Finding]:
    """OVPN012: what OpenVPN refuses in the config (its option table, the combinations
    it refuses, the installed openvpn's own parse) and in the files it includes."""
    refused, unchecked = profile_refusals(config, config_file.path.name)
    found = [(str(config_file.path), refusal) for refusal in refused]
    for where_file in dict.fromkeys(where.file for _d, where in effects.directives):
        if where_file != config_file.path:
            lines = [(d, where.line) for d, where in effects.directives
                     if where.file == where_file]
            found += [(str(where_file), refusal) for refusal in option_refusals(lines)]
    findings = [Finding("OVPN012", "error", config_file.unit, refusal.message,
                        "correct the line: OpenVPN does not start this config", path,
                        refusal.line) for path, refusal in found]
    if unchecked:
        findings.append(Finding("OVPN012", "info", config_file.unit, unchecked,
                                "run 'zsn vpn lint' again"))
    return findings


def lint(host: Host) -> list[Finding]:
    """Findings for every discovered config; one that does not parse is itself a finding."""
    findings: list[Finding] = []
    for config_file in discover(host):
        try:
            validate_name(config_file.name)
        except ValidationError as exc:
            findings.append(Finding(
                "OVPN010", "error", config_file.unit,
                f"{exc}; zsn refuses to act on {config_file.path.parent}/{config_file.name!r}",
                "rename the file (letters, digits, '-', '_', '.')"))
        try:
            config = load(host, config_file)
        except ZsnError as exc:
            findings.append(Finding("OVPN000", "error", config_file.unit, str(exc),
                                    "fix the config at the line named, then reload"))
            continue
        findings.extend(lint_config(host, config_file, config))
    return findings

