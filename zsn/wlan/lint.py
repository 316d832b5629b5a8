"""Advice on the machine's Wi-Fi setup: rival daemons, exposed secrets, risky profiles.

Each finding has an id, a severity and a one-line fix. Sources: the interfaces and
known networks of a `WlanSnapshot`, netctl profiles, wpa_supplicant's config file
(from its command line, or the usual places), iwd's profile directory.
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from zsn.eap import iwd as eap_iwd
from zsn.eap.profile import EapProfile
from zsn.eap.request import SERVER_CHECK_RISK
from zsn.eap.supplicant import profile_of_values
from zsn.errors import ZsnError
from zsn.lint import Finding, Severity
from zsn.plan import LiveStep, Plan
from zsn.system import files
from zsn.system.files import is_world_readable, read_tracked
from zsn.system.host import Host
from zsn.system.wireless import interface_exists, is_wireless
from zsn.system.wpa_config import parse_wpa_config
from zsn.wlan import iwd, netctl, nm
from zsn.wlan.live import read_wlan
from zsn.wlan.model import BACKEND_TITLES, WlanSnapshot
from zsn.wlan.ssid import display

SUBJECT = "subject"
RULES = {
    "WLAN000": "netctl profile does not parse",
    "WLAN001": "two Wi-Fi daemons drive one interface",
    "WLAN002": "file holding a Wi-Fi secret is readable by everyone",
    "WLAN003": "passphrase stored in plain text where a PSK would do",
    "WLAN004": "autoconnect to an open network",
    "WLAN005": "wpa_supplicant cannot save its config (update_config)",
    "WLAN006": "radio blocked by rfkill",
    "WLAN007": "hidden network with autoconnect (the name is probed for everywhere)",
    "WLAN008": "WEP network remembered",
    "WLAN009": "netctl profile for an interface that does not exist or is not wireless",
    "WLAN010": "802.1X profile that does not check the server (no CA or no server name)",
    "WLAN011": "NetworkManager keyfile it refuses to load (owner, permissions, file type)",
}
WPA_CONFIG_GLOBS = ("/etc/wpa_supplicant/*.conf", "/etc/wpa_supplicant.conf")


def _chmod_plan(host: Host, system_path: str) -> Callable[[], Plan]:
    def build() -> Plan:
        path = host.path(system_path)
        mode = stat.S_IMODE(files.status(path).st_mode)
        return Plan(f"make {system_path} readable by root only", [LiveStep(
            f"chmod 600 {system_path} (was {mode:04o})",
            lambda: files.set_mode(path, 0o600), lambda: files.set_mode(path, mode))])
    return build


class _Add(Protocol):
    """Records one finding (the arguments of `Finding`)."""

    def __call__(self, rule: str, severity: Severity, subject: str | None, message: str,
                 fix: str, path: str | None = None, line: int | None = None,
                 fix_plan: Callable[[], Plan] | None = None) -> None: ...


def lint_snapshot(host: Host, snapshot: WlanSnapshot) -> list[Finding]:
    """The advice on `snapshot` and on the config files behind it (netctl profiles,
    wpa_supplicant's config, iwd's network files) under `host`."""
    profiles, problems = netctl.read_profiles(host)
    findings: list[Finding] = []

    def add(rule: str, severity: Severity, subject: str | None, message: str, fix: str,
            path: str | None = None, line: int | None = None,
            fix_plan: Callable[[], Plan] | None = None) -> None:
        findings.append(Finding(rule, severity, subject, message, fix, path, line, fix_plan))

    for broken in problems:
        add("WLAN000", "error", f"netctl:{broken.path.name}", broken.reason,
            "fix the line named: profiles are bash variable assignments", str(broken.path),
            broken.line)
    _lint_interfaces(snapshot, add)
    _lint_networks(snapshot, add)
    _lint_profiles(host, snapshot, profiles, add)
    _lint_wpa_configs(host, snapshot, add)
    _lint_iwd_files(host, add)
    _lint_keyfiles(host, add)
    for path, ssid, profile in nm.keyfile_profiles(host):
        _server_check(add, path, display(ssid) if ssid else "a wired connection", profile,
                      path, None, "set ca-cert= and domain-match= in [802-1x] (nmcli "
                      "connection modify ID 802-1x.ca-cert FILE 802-1x.domain-match NAME)")
    return findings


def _lint_keyfiles(host: Host, add: _Add) -> None:
    """WLAN011: a keyfile NetworkManager leaves out (it logs why, once, at load)."""
    for keyfile in nm.keyfiles(host):
        if keyfile.refused is None:
            continue
        permissions = keyfile.refused.startswith("its permissions")
        add("WLAN011", "error", keyfile.path,
            f"NetworkManager does not load {keyfile.path}: {keyfile.refused}",
            f"chmod 600 {keyfile.path}, then nmcli connection reload" if permissions else
            f"make {keyfile.path} a regular file owned by root, mode 600, then nmcli "
            "connection reload",
            keyfile.path, fix_plan=_chmod_plan(host, keyfile.path) if permissions else None)


def _server_check(add: _Add, subject: str, name: str, profile: EapProfile | None,
                  path: str | None, line: int | None, fix: str) -> None:
    """WLAN010: an 802.1X profile a rogue server could answer, whoever wrote it."""
    if profile is None or profile.server_checked:
        return
    add("WLAN010", "warning", subject,
        f"the 802.1X profile of {name} ({profile.title}) does not check the server "
        f"({profile.missing}): {SERVER_CHECK_RISK}", fix, path, line)


def _lint_interfaces(snapshot: WlanSnapshot, add: _Add) -> None:
    """Two backends on one radio, a config wpa_supplicant will not save, a blocked radio."""
    for each in snapshot.interfaces:
        if each.also_managed_by and each.backend is not None:
            rivals = [each.backend, *each.also_managed_by]
            names = " and ".join(BACKEND_TITLES[r] for r in rivals)
            loser = each.also_managed_by[0]
            unit = {"iwd": "iwd", "wpa_supplicant": f"wpa_supplicant@{each.name}",
                    "netctl": "netctl", "networkmanager": "NetworkManager"}[loser]
            add("WLAN001", "error", each.name,
                f"{names} both drive {each.name}: they fight over the radio and "
                "connections drop at random",
                f"keep one: systemctl disable --now {unit} (and any other unit starting it)")
        if each.backend == "wpa_supplicant" and each.saves_config is False:
            where = each.config_path or "wpa_supplicant's config"
            add("WLAN005", "warning", each.name,
                f"wpa_supplicant on {each.name} has update_config off: networks added, "
                "forgotten or toggled over its control socket are lost when it restarts",
                f"add update_config=1 to {where} and restart wpa_supplicant",
                each.config_path)
        if each.rfkill is not None and each.rfkill.hard:
            add("WLAN006", "warning", each.name,
                f"the radio of {each.name} ({each.phy}) is blocked by a hardware switch",
                "flip the laptop's wireless switch or key (BIOS setting on some machines)")
        elif each.rfkill is not None and each.rfkill.soft:
            add("WLAN006", "warning", each.name,
                f"the radio of {each.name} ({each.phy}) is soft-blocked: it cannot scan "
                "or connect", "rfkill unblock wifi")


def _lint_networks(snapshot: WlanSnapshot, add: _Add) -> None:
    """Known networks that are open, hidden or WEP."""
    for net in snapshot.networks:
        subject = f"{net.title} ({BACKEND_TITLES[net.backend]})"
        quoted = _shell_word(net.title)
        if net.security == "open" and net.autoconnect:
            add("WLAN004", "warning", subject,
                f"{net.title} is an open network with autoconnect on: any access point "
                "using that name gets your traffic, unencrypted",
                f"zsn wifi autoconnect {quoted} off")
        if net.hidden and net.autoconnect:
            add("WLAN007", "info", subject,
                f"{net.title} is hidden: the machine calls out its name wherever it goes, "
                "which tracks it and invites look-alike access points",
                f"make the network visible on the access point, or "
                f"zsn wifi autoconnect {quoted} off")
        if net.security == "WEP":
            add("WLAN008", "error", subject,
                f"{net.title} uses WEP, which is broken in minutes",
                f"switch the access point to WPA2 or WPA3, then zsn wifi forget {quoted}")


def _lint_profiles(host: Host, snapshot: WlanSnapshot, profiles: list[netctl.Profile],
                   add: _Add) -> None:
    """netctl profiles: keys readable by all, a missing interface, a stored passphrase."""
    scan_security = {entry.ssid: entry.security for each in snapshot.interfaces
                     for entry in each.scan if entry.ssid is not None}
    for profile in profiles:
        path = str(profile.path)
        subject = f"netctl:{profile.name}"
        if profile.has_key and is_world_readable(host.path(path)):
            add("WLAN002", "error", subject, f"{path} holds a Wi-Fi key and is readable by "
                "everyone", f"chmod 600 {path}", path, fix_plan=_chmod_plan(host, path))
        if profile.wireless and profile.interface and not (
                interface_exists(host, profile.interface)
                and is_wireless(host, profile.interface)):
            why = "is not wireless" if interface_exists(host, profile.interface) \
                else "does not exist"
            add("WLAN009", "warning", subject,
                f"the profile's Interface={profile.interface} {why}",
                f"set Interface= to the wireless interface in {path}", path,
                profile.lines.get("Interface"))
        if profile.essid is not None:
            _server_check(add, subject, display(profile.essid), profile.eap, path,
                          profile.lines.get("WPAConfigSection"),
                          "add ca_cert=\"FILE\" and domain_match=\"NAME\" to "
                          "WPAConfigSection, or connect again with zsn wifi connect SSID "
                          "--eap ... --ca-cert FILE --server-domain NAME")
        if (profile.get("Security") or "").lower() == "wpa" and profile.has_key \
                and not profile.key_is_psk and profile.essid is not None:
            seen = scan_security.get(profile.essid)
            if seen in ("WPA2", "WPA"):
                add("WLAN003", "warning", subject,
                    f"{path} stores the passphrase of {display(profile.essid)}, a WPA2 "
                    "network: the derived PSK connects just as well and does not reveal "
                    "a passphrase you may use elsewhere",
                    "zsn wifi forget and connect again (zsn stores the PSK), or "
                    "Key=\\\"<wpa_passphrase's psk>", path, profile.lines.get("Key"))


def _lint_wpa_configs(host: Host, snapshot: WlanSnapshot, add: _Add) -> None:
    """wpa_supplicant's configs: keys readable by all, stored passphrases."""
    for config in _wpa_configs(host, snapshot):
        try:
            snapshot_file = read_tracked(config)
        except ZsnError:
            continue
        parsed = parse_wpa_config(snapshot_file.text)
        shown = "/" + str(config.relative_to(host.root)) if host.root != Path("/") \
            else str(config)
        if parsed.has_secrets and is_world_readable(config):
            add("WLAN002", "error", shown, f"{shown} holds Wi-Fi keys and is readable by "
                "everyone", f"chmod 600 {shown}", shown, fix_plan=_chmod_plan(host, shown))
        for block in parsed.networks:
            _server_check(add, shown, display(block.ssid) if block.ssid else "a wired port",
                          profile_of_values(block.values), shown, block.line,
                          "add ca_cert=\"FILE\" and domain_match=\"NAME\" to the network "
                          "block (the CA of the RADIUS server and its name)")
            mgmt = block.key_mgmt
            if block.passphrase_stored and "SAE" not in mgmt and "FT-SAE" not in mgmt:
                name = display(block.ssid) if block.ssid is not None else "?"
                add("WLAN003", "warning", shown,
                    f"the network {name} stores its passphrase (psk=\"...\") though it "
                    "uses WPA-PSK only: the derived PSK would do",
                    f"replace the psk line with the one 'wpa_passphrase {_shell_word(name)}' "
                    "prints (64 hex digits, no quotes)", shown, block.lines.get("psk"))


def _lint_iwd_files(host: Host, add: _Add) -> None:
    """iwd's network files holding keys, readable by all."""
    iwd_dir = host.path(iwd.PROFILE_DIR)
    if files.is_dir(iwd_dir):
        try:
            entries = files.list_files(iwd_dir)
        except (ZsnError, OSError):
            entries = []
        for entry in entries:
            if entry.suffix == ".8021x":
                _lint_8021x_file(host, entry, add)
            if entry.suffix in (".psk", ".8021x") and is_world_readable(entry):
                shown = f"{iwd.PROFILE_DIR}/{entry.name}"
                add("WLAN002", "error", shown, f"{shown} holds a Wi-Fi key and is readable "
                    "by everyone", f"chmod 600 {shown}", shown,
                    fix_plan=_chmod_plan(host, shown))


def _lint_8021x_file(host: Host, entry: Path, add: _Add) -> None:
    shown = f"{iwd.PROFILE_DIR}/{entry.name}"
    try:
        profile = eap_iwd.profile_of(eap_iwd.parse_settings(read_tracked(entry).text, shown))
    except ZsnError:
        return
    name = entry.name.removesuffix(".8021x")
    if name.startswith("="):
        with contextlib.suppress(ValueError):
            name = display(bytes.fromhex(name[1:]))
    method = profile.method if profile else "TLS"
    _server_check(add, shown, name, profile, shown, None,
                  f"add EAP-{method}-CACert= and EAP-{method}-ServerDomainMask= to [Security]")


def _wpa_configs(host: Host, snapshot: WlanSnapshot) -> list[Path]:
    found: dict[Path, None] = {}
    for each in snapshot.interfaces:
        if each.config_path:
            found[host.path(each.config_path)] = None
    for pattern in WPA_CONFIG_GLOBS:
        directory, _, glob = pattern.rpartition("/")
        for match in files.list_files(host.path(directory), glob):
            found[match] = None
    return [path for path in found if files.is_file(path)]


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)


def lint(host: Host) -> list[Finding]:
    return lint_snapshot(host, read_wlan(host))


def read_with_findings(host: Host) -> WlanSnapshot:
    """What the pane and the export show: `read_wlan`'s snapshot with its advice."""
    snapshot = read_wlan(host)
    return replace(snapshot, findings=tuple(lint_snapshot(host, snapshot)))
