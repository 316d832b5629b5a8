"""What an OpenVPN config makes OpenVPN do as root besides tunnelling: the programs it
runs or loads, the files it reads (and sends) or writes, the configs it includes.

What OpenVPN obeys counts, not how a line looks: ``setenv opt NAME ...`` is read as
``NAME ...`` (the prefix only softens an unknown option, options.c), ``config FILE``
includes another file, up to `MAX_INCLUDE_DEPTH` levels (read_config_file), and a
relative path starts from the unit's working directory, the config's folder (or the
folder a ``cd`` line names). Lint (OVPN008, OVPN009) and the import's warnings both
come from `analyze` and `advice`, so an import never keeps quiet about what lint
would report once the profile is installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from zsn.errors import ZsnError
from zsn.lint import Severity
from zsn.openvpn.config import INLINE, SCRIPT_OPTIONS, Directive, OvpnConfig

MAX_INCLUDE_DEPTH = 10
"""OpenVPN's max_recursive_levels: the top config is level 1."""
PROGRAM_OPTIONS = (*SCRIPT_OPTIONS, "tls-crypt-v2-verify", "client-crresponse", "dns-updown",
                   "plugin", "iproute", "engine", "providers", "pkcs11-providers")
"""Options that make OpenVPN run a program or load code (a plugin, an engine, a provider)."""
Use = Literal["reads", "sends", "writes", "includes", "changes to"]
FILE_ARGUMENTS: dict[str, tuple[int, Use]] = {
    **{name: (0, "reads") for name in (
        "ca", "capath", "cert", "key", "tls-auth", "tls-crypt", "tls-crypt-v2", "pkcs12",
        "secret", "dh", "crl-verify", "extra-certs", "askpass", "auth-gen-token-secret",
        "client-config-dir")},
    "management": (2, "reads"),
    # Their contents go to the server or a proxy.
    "auth-user-pass": (0, "sends"), "http-proxy": (2, "sends"), "socks-proxy": (2, "sends"),
    **{name: (0, "writes") for name in (
        "log", "log-append", "status", "writepid", "ifconfig-pool-persist", "replay-persist",
        "tls-export-cert")},
    "config": (0, "includes"),
    "cd": (0, "changes to"),
}
"""Options naming a file (or folder): which argument, and what OpenVPN does with it."""
_NOT_PATHS = {INLINE, "stdin", "auto", "auto-nct"}


@dataclass(frozen=True)
class Where:
    file: Path
    """System path of the config holding the line."""
    line: int
    """1-based."""
    hidden: bool = False
    """The line is ``setenv opt ...``."""

    def __str__(self) -> str:
        return f"{self.file.name}:{self.line}" + (", behind 'setenv opt'" if self.hidden else "")


@dataclass(frozen=True)
class Program:
    text: str
    """The option and its arguments, e.g. ``up /etc/openvpn/update-resolv-conf``."""
    where: Where


@dataclass(frozen=True)
class FileUse:
    option: str
    written: str
    """The path as the config gives it."""
    path: Path
    """Where it lands: relative paths joined to the working directory, normalised."""
    use: Use
    where: Where

    @property
    def relative(self) -> bool:
        return not os.path.isabs(self.written)


@dataclass
class Effects:
    working_dir: Path
    programs: list[Program] = field(default_factory=list)
    files: list[FileUse] = field(default_factory=list)
    directives: list[tuple[Directive, Where]] = field(default_factory=list)
    """Every directive OpenVPN reads, included files' too, in order."""
    problems: list[tuple[str, Where]] = field(default_factory=list)
    """Includes that loop, nest too deep or cannot be read: OpenVPN refuses the config."""
    missing: list[FileUse] = field(default_factory=list)
    """Included files that do not exist."""

    @property
    def script_security(self) -> int:
        levels = [d.arg for d, _where in self.directives if d.name == "script-security"]
        return int(levels[-1]) if levels and levels[-1] and levels[-1].isdigit() else 1


ReadConfig = Callable[[Path], OvpnConfig]
"""Reads the config at a system path; raises `FileNotFoundError` when there is none and
`ZsnError` when it cannot be read or parsed."""


def analyze(config: OvpnConfig, path: Path, working_dir: Path, read: ReadConfig,
            ignore: Callable[[Directive], bool] = lambda directive: False) -> Effects:
    """Walk `config` (at system `path`) and what it includes; `ignore` leaves out
    programs zsn itself installed (its DNS hook)."""
    effects = Effects(working_dir)
    _walk(config, path, working_dir, read, ignore, effects, [Path(os.path.normpath(path))])
    return effects


def _walk(config: OvpnConfig, path: Path, cwd: Path, read: ReadConfig,
          ignore: Callable[[Directive], bool], effects: Effects, chain: list[Path]) -> Path:
    for directive in config.directives:
        where = Where(path, directive.line + 1, directive.hidden_by is not None)
        effects.directives.append((directive, where))
        if directive.name in PROGRAM_OPTIONS and directive.args and not ignore(directive):
            effects.programs.append(Program(" ".join((directive.name, *directive.args)), where))
        used = _file_use(directive, cwd, where)
        if used is None:
            continue
        effects.files.append(used)
        if used.use == "changes to":
            cwd = used.path
        elif used.use == "includes":
            cwd = _include(used, read, ignore, effects, chain, cwd)
    return cwd


def _include(used: FileUse, read: ReadConfig, ignore: Callable[[Directive], bool],
             effects: Effects, chain: list[Path], cwd: Path) -> Path:
    target = used.path
    if target in chain:
        effects.problems.append((f"includes itself: {' -> '.join(p.name for p in chain)} -> "
                                 f"{target.name} (OpenVPN refuses the loop)", used.where))
        return cwd
    if len(chain) >= MAX_INCLUDE_DEPTH:
        effects.problems.append((f"includes nest deeper than {MAX_INCLUDE_DEPTH} levels "
                                 f"at {used.written} (OpenVPN refuses it)", used.where))
        return cwd
    try:
        included = read(used.path)
    except FileNotFoundError:
        effects.missing.append(used)
        return cwd
    except ZsnError as exc:
        effects.problems.append((f"included {used.written}: {exc}", used.where))
        return cwd
    # An included file's `cd` changes the directory for the rest of the whole read.
    return _walk(included, used.path, cwd, read, ignore, effects, [*chain, target])


def _file_use(directive: Directive, cwd: Path, where: Where) -> FileUse | None:
    spec = FILE_ARGUMENTS.get(directive.name)
    if spec is None or len(directive.args) <= spec[0]:
        return None
    written = directive.args[spec[0]]
    if written in _NOT_PATHS or (directive.name == "dh" and written == "none"):
        return None
    if directive.name == "management" and directive.args[1] == "unix" and len(directive.args) < 3:
        return None
    return FileUse(directive.name, written, Path(os.path.normpath(cwd / written)), spec[1],
                   where)


@dataclass(frozen=True)
class Advice:
    rule: str
    severity: Severity
    message: str
    fix: str
    where: Where | None


def advice(effects: Effects, *, config_dir: Path, strict: bool = False) -> list[Advice]:
    """What to tell about `effects`: programs (OVPN008), files outside the working
    directory (OVPN009), and includes OpenVPN would refuse (OVPN000) or not find
    (OVPN002).

    Lint flags relative paths that leave the folder and credentials sent from
    outside `config_dir`; `strict` (a profile being imported from elsewhere) flags
    every path outside the folder, absolute ones too.
    """
    found: list[Advice] = []
    if effects.programs:
        level = effects.script_security
        allowed = f"; script-security {level} lets the scripts run" if level >= 2 else ""
        found.append(Advice(
            "OVPN008", "warning",
            "runs programs as root when the connection starts: "
            + "; ".join(f"{p.text} ({p.where})" for p in effects.programs) + allowed,
            "check each program, and that only root can change it, before starting it",
            effects.programs[0].where))
    for used in effects.files:
        inside = used.path.is_relative_to(effects.working_dir)
        if inside or used.use == "changes to":
            continue
        sends_out = used.use == "sends" and not used.path.is_relative_to(config_dir)
        if not (strict or used.relative or sends_out):
            continue
        verb = {"sends": "sends", "reads": "reads", "writes": "writes",
                "includes": "includes"}[used.use]
        found.append(Advice(
            "OVPN009", "error" if used.use == "sends" else "warning",
            f"'{used.option} {used.written}' ({used.where}) {verb} {used.path}, outside "
            f"{effects.working_dir}" + (" (its contents go to the server or proxy)"
                                        if used.use == "sends" else ""),
            f"keep the files a config uses in {effects.working_dir} (or inline them)",
            used.where))
    found += [Advice("OVPN000", "error", message, "fix the config line named", where)
              for message, where in effects.problems]
    found += [Advice("OVPN002", "error",
                     f"included config {used.path} does not exist ({used.where})",
                     f"create {used.path} or remove the 'config' line", used.where)
              for used in effects.missing]
    return found
