"""Changes zsn makes to Wi-Fi: connect, disconnect, forget, autoconnect, scan.

Every change is a `zsn.plan.Plan` shown first (``--dry-run``, the pane's plan
screen) and applied on request; the passphrase travels inside the steps' closures
to the backend (iwd's agent, wpa_supplicant's SET_NETWORK, a 0600 netctl profile)
and never into a step's description, a note or an error message.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from zsn.eap.request import EapRequest
from zsn.errors import ValidationError, ZsnError
from zsn.plan import Check, FileEdit, LiveStep, Plan, Step
from zsn.system import files, wireless
from zsn.system.dbus import BusError, SystemBus, Systemd, run_sync
from zsn.system.files import PRIVATE_FILE_MODE, backup_path, is_world_readable, read_tracked
from zsn.system.host import Host
from zsn.system.wpa_ctrl import WpaControl, WpaMonitor, control_socket
from zsn.tries.restores import unit_undo
from zsn.tries.undo import Undo
from zsn.wlan import netctl, wpa
from zsn.wlan.live import watching_scans
from zsn.wlan.model import (
    BACKEND_TITLES,
    KnownNetwork,
    ScanEntry,
    Security,
    WlanInterface,
    WlanSnapshot,
    needs_passphrase,
)
from zsn.wlan.restore import wifi_undo
from zsn.wlan.secrets import Passphrase
from zsn.wlan.ssid import display

T = TypeVar("T")
IWD_SCAN_TIMEOUT = 15.0


# Which interface, which backend ------------------------------------------------------

def resolve_interface(host: Host, snapshot: WlanSnapshot, name: str | None, *,
                      change: bool = True) -> WlanInterface:
    """The interface a command is about: `name`, or the only wireless one. Refused
    (nothing changed) when it is not wireless, has no backend, or NetworkManager has it."""
    if name is not None:
        if not wireless.interface_exists(host, name) and snapshot.interface(name) is None:
            known = ", ".join(each.name for each in snapshot.interfaces) or "none"
            raise ValidationError(f"no interface {name!r} (wireless interfaces: {known})")
        found = snapshot.interface(name)
        if found is None:
            raise ValidationError(f"{name} is not a wireless interface (no "
                                  f"/sys/class/net/{name}/phy80211)")
    else:
        candidates = [each for each in snapshot.interfaces if each.backend is not None] \
            or list(snapshot.interfaces)
        if not candidates:
            raise ValidationError("no wireless interface on this machine")
        if len(candidates) > 1:
            names = ", ".join(each.name for each in candidates)
            raise ValidationError(f"several wireless interfaces ({names}): name one with "
                                  "--iface")
        found = candidates[0]
    if change and found.read_only:
        raise ValidationError(found.read_only)
    if change and found.backend is None:
        raise ValidationError(found.hint or f"no Wi-Fi daemon manages {found.name}")
    return found


def _bus(host: Host, action: Callable[[SystemBus], Awaitable[T]], timeout: float = 10.0,
         deadline: float | None = None) -> T:
    return run_sync(host, action, timeout=timeout, deadline=deadline)


def _wpa(host: Host, interface: str, action: Callable[[WpaControl], Awaitable[T]]) -> T:
    return wpa.run(host, interface, action)


@dataclass(frozen=True)
class Target:
    """What a connect aims at, worked out from the scan and the known networks."""

    ssid: bytes
    security: Security | None
    hidden: bool
    known: KnownNetwork | None


def _best(entries: list[ScanEntry]) -> ScanEntry | None:
    return max(entries, key=lambda e: e.signal_dbm if e.signal_dbm is not None else -999,
               default=None)


def connect_target(snapshot: WlanSnapshot, interface: WlanInterface, ssid: bytes,
                   passphrase: Passphrase | None, hidden: bool,
                   eap: EapRequest | None = None) -> Target:
    name = display(ssid)
    known = next((net for net in snapshot.networks_of(interface) if net.ssid == ssid), None)
    seen = _best([e for e in interface.scan if e.ssid == ssid])
    if seen is None and hidden:
        seen = _best([e for e in interface.scan if e.ssid is None])
    security: Security | None
    if seen is not None:
        security = seen.security
    elif known is not None:
        security = known.security
    elif hidden or eap is not None:
        security = "enterprise" if eap is not None else "WPA2" if passphrase is not None \
            else "open"
    elif interface.errors:
        # The daemon failed: that is its error, not the network's absence.
        raise ZsnError(f"{interface.name}: its Wi-Fi daemon could not be read: "
                       f"{interface.errors[0]}")
    else:
        raise ValidationError(f"{name} is not in range of {interface.name} (scan again: "
                              f"zsn wifi scan {interface.name}; for a hidden network add "
                              "--hidden)")
    if eap is not None and security != "enterprise":
        raise ValidationError(f"{name} is a {security} network, not an enterprise (802.1X) "
                              "one: it takes no 802.1X settings", field="method")
    if security == "enterprise" and eap is None and known is None:
        raise ValidationError(f"{name} is an enterprise (802.1X) network: give its EAP "
                              "method (peap, ttls, tls, or eduroam), identity and server "
                              "check", field="method")
    if eap is not None and passphrase is not None:
        raise ValidationError("an enterprise network takes a password, not a passphrase",
                              field="passphrase_file")
    if security == "WEP":
        raise ValidationError(f"{name} uses WEP, which is broken; zsn does not connect to it")
    if security in ("open", "OWE", "open/OWE") and passphrase is not None:
        raise ValidationError(f"{name} is an open network: it takes no passphrase")
    if needs_passphrase(security) and passphrase is None and known is None:
        raise ValidationError(f"{name} is a {security} network: give its passphrase with "
                              "--passphrase-file FILE (or - for standard input)")
    if security == "WPA3" and passphrase is not None and passphrase.is_raw_psk:
        raise ValidationError(f"{name} is WPA3 (SAE), which needs the passphrase itself, not "
                              "a raw PSK")
    return Target(ssid, security, hidden or (known.hidden if known else False), known)


# Connect -----------------------------------------------------------------------------

def plan_connect(host: Host, snapshot: WlanSnapshot, interface: WlanInterface, ssid: bytes,
                 passphrase: Passphrase | None, hidden: bool,
                 eap: EapRequest | None = None) -> Plan:
    target = connect_target(snapshot, interface, ssid, passphrase, hidden, eap)
    name = display(ssid)
    title = f"connect {interface.name} to {name}"
    if eap is not None:
        return _live(host, _plan_connect_eap(host, snapshot, interface, target, eap, title),
                     interface, ssid)
    if interface.backend == "iwd":
        return _plan_connect_iwd(host, interface, target, passphrase, title)
    if interface.backend == "wpa_supplicant":
        return _plan_connect_wpa(host, interface, target, passphrase, title)
    if interface.backend == "netctl":
        return _plan_connect_netctl(host, snapshot, interface, target, passphrase, title)
    raise ValidationError(f"{interface.name}: {BACKEND_TITLES.get(interface.backend or '', '?')}"
                          " cannot be driven by zsn")


def _plan_connect_eap(host: Host, snapshot: WlanSnapshot, interface: WlanInterface,
                     target: Target, eap: EapRequest, title: str) -> Plan:
    from zsn.wlan import enterprise

    if interface.backend == "iwd":
        plan = enterprise.iwd_plan(host, interface, target.ssid, target.hidden, eap, title)
        if not iwd_configures_addresses(host):
            plan.notes.append(f"iwd does not set addresses here ({IWD_MAIN_CONF} has no "
                              "EnableNetworkConfiguration=true): a DHCP client must "
                              f"configure {interface.name}")
        return plan
    if interface.backend == "wpa_supplicant":
        return enterprise.wpa_plan(host, interface, target.ssid, target.hidden, eap, title)
    if interface.backend == "netctl":
        profile_name, steps = enterprise.netctl_edits(host, interface, target.ssid,
                                                      target.hidden, eap)
        steps.append(_netctl_start(host, interface, profile_name,
                                   "wpa_supplicant with the profile's network block, then DHCP",
                                   eap_ssid=target.ssid))
        return Plan(title, steps, notes=[f"profile {netctl.PROFILE_DIR}/{profile_name} "
                                         "(0600, Security=wpa-configsection)"])
    raise ValidationError(f"{interface.name}: {BACKEND_TITLES.get(interface.backend or '', '?')}"
                          " cannot be driven by zsn")


def _security_word(target: Target) -> str:
    return target.security or "unknown security"


def _plan_connect_wpa(host: Host, interface: WlanInterface, target: Target,
                      passphrase: Passphrase | None, title: str) -> Plan:
    name = display(target.ssid)
    if passphrase is None and target.known is not None:
        what = f"select the known network {name}"
    else:
        stored = ("the PSK derived from the passphrase" if target.security in ("WPA2", "WPA")
                  or (passphrase is not None and passphrase.is_raw_psk) else
                  "the passphrase (SAE needs it)" if passphrase is not None else "no key")
        hidden = ", probed for by name (hidden)" if target.hidden else ""
        what = (f"add {name} ({_security_word(target)}{hidden}) with {stored}, select it")
    notes: list[str] = []

    def run() -> None:
        result = asyncio.run(wpa.connect(
            control_socket(host, interface.name), interface.name, target.ssid,
            passphrase=passphrase, security=target.security, hidden=target.hidden))
        notes.extend(result.notes)  # shown once the plan is applied
        config = interface.config_path
        if result.saved and config and is_world_readable(host.path(config)):
            # SAVE_CONFIG writes a new file with the daemon's umask (0644 as a rule).
            notes.append(f"wpa_supplicant saved {config} readable by everyone: "
                         f"chmod 600 {config} (zsn wifi lint, WLAN002)")

    if interface.saves_config is False:
        notes.append(f"wpa_supplicant on {interface.name} cannot save its config "
                     "(update_config=0): the network is lost when it restarts")
    saved = (interface.config_path,) if interface.config_path and \
        interface.saves_config is not False else ()
    steps: list[Step] = [LiveStep(
        f"wpa_supplicant on {interface.name}: {what}, wait for COMPLETED "
        f"({wpa.CONNECT_TIMEOUT:g} s), re-enable the other networks, SAVE_CONFIG", run,
        restore=(wifi_undo(host, "wpa_supplicant", interface, saved),)
        if saved or interface.saves_config is False else None)]
    return _live(host, Plan(title, steps, notes=notes), interface, target.ssid)


def _plan_connect_iwd(host: Host, interface: WlanInterface, target: Target,
                      passphrase: Passphrase | None, title: str) -> Plan:
    from zsn.system import iwd as bus_iwd
    from zsn.wlan import iwd as iwd_backend

    name = display(target.ssid)
    steps: list[Step] = []
    warnings = []
    if target.known is not None and passphrase is not None:
        known_path = target.known.ref
        warnings.append(f"iwd already knows {name}: its stored profile is forgotten first, "
                        "so a wrong new passphrase leaves it forgotten")
        steps.append(LiveStep(f"iwd: forget the stored profile of {name}",
                              lambda: _bus(host, lambda bus: bus_iwd.forget(bus, known_path)),
                              restore=()))  # the connect's restore puts the profile back

    def run() -> None:
        async def act(bus: SystemBus) -> None:
            objects = await bus_iwd.objects(bus)
            station = iwd_backend.station_of(objects, interface.name)
            found = iwd_backend.find_network(objects, station, target.ssid)
            secret = passphrase.reveal() if passphrase is not None else None
            try:
                if found is not None:
                    await bus_iwd.connect(bus, network=found[0], station=station,
                                          hidden_ssid=None, passphrase=secret)
                elif target.hidden:
                    await bus_iwd.connect_hidden(bus, station=station, ssid=target.ssid,
                                                 passphrase=secret)
                else:
                    raise ZsnError(f"iwd does not see {name} on {interface.name} (scan again)")
            except bus_iwd.ConnectError as exc:
                probed = found is None and target.hidden
                raise ZsnError(iwd_failure(name, exc, hidden=probed)) from None
        # The whole talk: the connect's own bound, and the calls around it.
        _bus(host, act, timeout=10.0, deadline=bus_iwd.CONNECT_TIMEOUT + 20.0)

    how = "passphrase handed to iwd by zsn's agent, once" if passphrase is not None else \
        "iwd's stored profile" if target.known is not None else "open network"
    hidden = " (hidden: ConnectHiddenNetwork)" if target.hidden and target.known is None else ""
    kind = "open" if target.security in ("open", "OWE") else "psk"
    profile = (iwd_backend.profile_path(target.ssid, kind),) if passphrase is not None else ()
    steps.append(LiveStep(f"iwd on {interface.name}: connect to {name}{hidden} ({how}), "
                          "wait for iwd's answer", run,
                          restore=(wifi_undo(host, "iwd", interface, profile),)))
    notes = []
    if passphrase is not None:
        notes.append("iwd stores the network in /var/lib/iwd (0600) and connects to it "
                     "again by itself")
    if not iwd_configures_addresses(host):
        notes.append(f"iwd does not set addresses here ({IWD_MAIN_CONF} has no "
                     "EnableNetworkConfiguration=true): a DHCP client such as "
                     f"systemd-networkd or dhcpcd must configure {interface.name}")
    return _live(host, Plan(title, steps, warnings=warnings, notes=notes), interface,
                 target.ssid)


def _live(host: Host, plan: Plan, interface: WlanInterface, ssid: bytes | None) -> Plan:
    """A connect or disconnect changes the interface's link: the SSH session's path is
    checked against it, and the link is read back (verify after apply)."""
    plan.touches = frozenset({interface.name})
    wanted = f"on {display(ssid)}" if ssid is not None else "disconnected"

    def differences() -> list[str]:
        from zsn.wlan.live import read_wlan

        now = read_wlan(host).interface(interface.name)
        link = now.link if now is not None else None
        if ssid is None:
            return [f"{interface.name} is still on {display(link.ssid or b'')}"] \
                if link is not None and link.connected else []
        if link is None or not link.connected:
            return [f"{interface.name} is not connected ({link.state if link else 'gone'})"]
        if link.ssid != ssid:
            return [f"{interface.name} is on {display(link.ssid or b'')}, not {display(ssid)}"]
        return []

    plan.checks.append(Check(f"{interface.name} {wanted}", differences))
    return plan


async def _active_units(bus: SystemBus, units: list[str]) -> dict[str, bool]:
    systemd = Systemd(bus)
    found = {}
    for unit in units:
        state = await systemd.unit_state(unit)
        found[unit] = state.active_state in ("active", "activating", "reloading")
    return found


def _unit_restores(host: Host, units: list[str]) -> tuple[Undo, ...] | None:
    """Each netctl unit back in the state it is in now; None (the change cannot be
    tried) when systemd cannot be asked."""
    try:
        states = _bus(host, lambda bus: _active_units(bus, units), timeout=15.0)
    except ZsnError:
        return None
    return tuple(unit_undo(unit, active) for unit, active in states.items())


IWD_MAIN_CONF = "/etc/iwd/main.conf"


def iwd_configures_addresses(host: Host) -> bool:
    """iwd runs DHCP itself only with ``[General] EnableNetworkConfiguration=true``."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(files.read_text(host.path(IWD_MAIN_CONF)), IWD_MAIN_CONF)
    except (ZsnError, OSError, configparser.Error):
        return False
    value = parser.get("General", "EnableNetworkConfiguration", fallback="false")
    return value.strip().lower() in ("true", "yes", "1")


def iwd_failure(name: str, exc: ZsnError, hidden: bool = False) -> str:
    """What a failed iwd connect means, from iwd's error and what the agent was asked
    (`hidden`: the network was probed for by name)."""
    from zsn.system.iwd import HIDDEN_SCANS
    from zsn.system.iwd_agent import AgentLog

    error_name = getattr(exc, "name", None) or ""
    log: AgentLog | None = getattr(exc, "log", None)
    if log is not None and log.refused and log.requests and len(log.requests) > 1:
        return (f"{name}: wrong passphrase (the access point rejected it and iwd asked "
                "again)")
    if error_name.endswith(".Failed") and log is not None and log.requests:
        # iwd asked for the passphrase, then failed: the handshake (4-way or SAE) it
        # was for did not succeed. iwd's error does not say more.
        return (f"{name}: the passphrase was not accepted (or the access point refused "
                f"the connection; iwd: {exc})")
    if error_name.endswith(".NotFound") and hidden:
        return (f"{name}: not found in {HIDDEN_SCANS} scans probing for it by "
                "name (out of range, or the name differs)")
    if error_name.endswith(".NotFound"):
        return f"{name}: not found (out of range, or hidden without --hidden)"
    if error_name.endswith(".AlreadyProvisioned"):
        return (f"{name}: iwd already knows this hidden network; it connects by itself in "
                "range (zsn wifi autoconnect on)")
    if error_name.endswith(".InProgress") or error_name.endswith(".Busy"):
        return f"{name}: iwd is busy with another connect or scan; try again"
    if error_name.endswith(".Aborted"):
        return f"{name}: the connect was aborted ({exc})"
    return f"{name}: {exc}"


def _netctl_profiles_for(host: Host, interface: str, ssid: bytes) -> list[netctl.Profile]:
    profiles, _ = netctl.read_profiles(host)
    return [p for p in profiles if p.interface == interface and p.essid == ssid and p.wireless]


def _plan_connect_netctl(host: Host, snapshot: WlanSnapshot, interface: WlanInterface,
                         target: Target, passphrase: Passphrase | None, title: str) -> Plan:
    existing = _netctl_profiles_for(host, interface.name, target.ssid)
    steps: list[Step] = []
    if existing and passphrase is None:
        profile_name = existing[0].name
    else:
        profile_name = existing[0].name if existing else \
            netctl.profile_name_for(interface.name, target.ssid)
        profile = netctl.render_profile(interface.name, target.ssid, target.security,
                                        passphrase, target.hidden)
        path = netctl.profile_dir(host) / profile_name
        previous = read_tracked(path) if existing else None
        if previous is None and files.exists(path):
            raise ValidationError(f"/etc/netctl/{profile_name} exists but is not a profile "
                                  f"for {display(target.ssid)} on {interface.name}")
        steps.append(FileEdit(path, previous, profile.text, PRIVATE_FILE_MODE,
                              intent=profile.intent))
    steps.append(_netctl_start(host, interface, profile_name,
                               "waits for association and DHCP"))
    return _live(host, Plan(title, steps, notes=[f"profile {netctl.PROFILE_DIR}/{profile_name} "
                                                 "(0600): start it at boot with "
                                                 f"'zsn wifi autoconnect {_quote(target.ssid)} "
                                                 "on'"]), interface, target.ssid)


def _netctl_start(host: Host, interface: WlanInterface, profile_name: str,
                  what: str, eap_ssid: bytes | None = None) -> LiveStep:
    """Start the profile's unit, the interface's other profiles stopped first; for an
    802.1X profile (`eap_ssid`), its supplicant's events say why a start failed."""
    unit = netctl.unit_name(profile_name)
    others = [netctl.unit_name(p.name) for p in netctl.read_profiles(host)[0]
              if p.interface == interface.name and p.name != profile_name]
    follow = (interface.name, eap_ssid) if eap_ssid is not None else None
    return LiveStep(
        f"systemd: stop the other netctl profiles on {interface.name}, start {unit} ({what})",
        lambda: _netctl_switch(host, unit, others, follow),
        lambda: _bus(host, lambda bus: _stop_units(bus, [unit]), timeout=15.0),
        _unit_restores(host, [unit, *others]))


def _quote(ssid: bytes) -> str:
    import shlex

    return shlex.quote(display(ssid))


async def _stop_units(bus: SystemBus, units: list[str]) -> None:
    systemd = Systemd(bus)
    for unit in units:
        state = await systemd.unit_state(unit)
        if state.exists and state.active_state in ("active", "activating"):
            job = await systemd.stop(unit, timeout=30.0)
            if not job.ok:
                raise ZsnError(job.describe())


NETCTL_START_TIMEOUT = 60.0


def _netctl_switch(host: Host, unit: str, others: list[str],
                   follow: tuple[str, bytes] | None = None) -> None:
    """`follow`: (interface, SSID) of an 802.1X profile, whose supplicant's EAP events
    are read while the unit starts (netctl itself says only that it timed out)."""
    async def act(bus: SystemBus) -> None:
        await _stop_units(bus, others)
        watch = asyncio.create_task(wpa.follow_attempt(
            control_socket(host, follow[0]), follow[0], NETCTL_START_TIMEOUT)) \
            if follow is not None else None
        reason = None
        try:
            job = await Systemd(bus).start(unit, timeout=NETCTL_START_TIMEOUT)
            if watch is not None and not job.ok:
                with contextlib.suppress(TimeoutError):
                    reason = await asyncio.wait_for(watch, 5.0)
        finally:
            if watch is not None:
                watch.cancel()
        if not job.ok and reason is not None and follow is not None:
            raise ZsnError(f"{display(follow[1])}: 802.1X failed: {reason} "
                           f"({job.describe()})")
        if not job.ok:
            raise ZsnError(f"{job.describe()}: 'journalctl -u {unit}' says why")
    try:
        _bus(host, act, timeout=15.0)
    except BusError as exc:
        raise ZsnError(f"netctl needs systemd to start {unit}: {exc}") from None


# Disconnect, forget, autoconnect ---------------------------------------------------------

def plan_disconnect(host: Host, snapshot: WlanSnapshot, interface: WlanInterface) -> Plan:
    title = f"disconnect {interface.name}"
    if not interface.link.in_use:
        return Plan(title, warnings=[f"{interface.name} is not connected"])
    if interface.backend == "iwd":
        from zsn.system import iwd as bus_iwd

        station = _iwd_station(host, interface.name)
        return _live(host, Plan(title, [LiveStep(
            f"iwd: disconnect {interface.name}",
            lambda: _bus(host, lambda bus: bus_iwd.disconnect(bus, station)),
            restore=(wifi_undo(host, "iwd", interface),))],
            notes=["iwd does not reconnect on this interface until the next connect (zsn "
                   "wifi connect SSID)"]), interface, None)
    if interface.backend == "wpa_supplicant":
        return _live(host, Plan(title, [LiveStep(
            f"wpa_supplicant: DISCONNECT {interface.name}",
            lambda: _wpa(host, interface.name, wpa.disconnect),
            lambda: _wpa(host, interface.name, wpa.reconnect),
            (wifi_undo(host, "wpa_supplicant", interface),))],
            notes=["wpa_supplicant stays disconnected until the next connect"]),
            interface, None)
    if interface.backend == "netctl":
        units = [netctl.unit_name(p.name) for p in netctl.read_profiles(host)[0]
                 if p.interface == interface.name]
        return _live(host, Plan(title, [LiveStep(
            f"systemd: stop the netctl profiles on {interface.name}",
            lambda: _bus(host, lambda bus: _stop_units(bus, units), timeout=15.0),
            restore=_unit_restores(host, units))]), interface, None)
    raise ValidationError(f"{interface.name}: nothing zsn can disconnect")


def _iwd_station(host: Host, name: str) -> str:
    from zsn.system import iwd as bus_iwd

    async def find(bus: SystemBus) -> str | None:
        objects = await bus_iwd.objects(bus)
        return next((path for path, ifaces in objects.items()
                     if ifaces.get(bus_iwd.DEVICE, {}).get("Name") == name
                     and bus_iwd.STATION in ifaces), None)

    station = _bus(host, find)
    if station is None:
        raise ZsnError(f"iwd has no station for {name}")
    return station


def known_by_ssid(snapshot: WlanSnapshot, interface: WlanInterface, ssid: bytes
                  ) -> list[KnownNetwork]:
    found = [net for net in snapshot.networks_of(interface) if net.ssid == ssid]
    if not found and interface.errors:
        raise ZsnError(f"{interface.name}: its Wi-Fi daemon could not be read: "
                       f"{interface.errors[0]}")
    if not found:
        names = ", ".join(net.title for net in snapshot.networks_of(interface)) or "none"
        raise ValidationError(f"{BACKEND_TITLES.get(interface.backend or '', '?')} on "
                              f"{interface.name} knows no network {display(ssid)} "
                              f"(known: {names})")
    return found


def plan_forget(host: Host, snapshot: WlanSnapshot, interface: WlanInterface,
                ssid: bytes) -> Plan:
    networks = known_by_ssid(snapshot, interface, ssid)
    name = display(ssid)
    title = f"forget {name}"
    if interface.backend == "iwd":
        from zsn.system import iwd as bus_iwd

        steps: list[Step] = []
        for net in networks:
            path = net.ref
            steps.append(LiveStep(f"iwd: forget {name} (removes {net.path})",
                                  lambda path=path: _bus(host, lambda bus: bus_iwd.forget(
                                      bus, path))))  # type: ignore[misc]
        return Plan(title, steps)
    if interface.backend == "wpa_supplicant":
        ids = [int(net.ref) for net in networks]
        notes: list[str] = []

        def run() -> None:
            notes.extend(_wpa(host, interface.name,
                              lambda ctrl: wpa.remove_networks(ctrl, ids)))
        return Plan(title, [LiveStep(
            f"wpa_supplicant on {interface.name}: REMOVE_NETWORK "
            f"{', '.join(map(str, ids))}, SAVE_CONFIG", run)], notes=notes)
    if interface.backend == "netctl":
        steps = []
        for net in networks:
            if net.at_boot:
                steps += netctl_enable_steps(host, net.ref, False)
            if systemd_reachable(host):
                unit = netctl.unit_name(net.ref)
                steps.append(LiveStep(f"systemd: stop {unit} if running",
                                      lambda unit=unit: _bus(host, lambda bus: _stop_units(
                                          bus, [unit]), timeout=15.0)))  # type: ignore[misc]
            steps.append(_move_aside(host, netctl.profile_dir(host) / net.ref))
        return Plan(title, steps, notes=_boot_note(host))
    raise ValidationError(f"{interface.name}: zsn cannot forget networks here")


def _move_aside(host: Host, path: Path) -> LiveStep:
    """Forgetting a profile keeps it as NAME.zsn-bak: a config is never lost."""
    backup = backup_path(path)
    shown = "/" + str(path.relative_to(host.root)) if host.root != Path("/") else str(path)

    def run() -> None:
        read_tracked(path)  # refuses a directory or unreadable file before moving
        files.rename(path, backup)

    return LiveStep(f"move {shown} to {backup.name}", run, lambda: files.rename(backup, path))


def plan_autoconnect(host: Host, snapshot: WlanSnapshot, interface: WlanInterface,
                     ssid: bytes, enabled: bool) -> Plan:
    networks = known_by_ssid(snapshot, interface, ssid)
    name = display(ssid)
    word = "on" if enabled else "off"
    title = f"autoconnect {name} {word}"
    pending = [net for net in networks if net.autoconnect != enabled]
    if not pending:
        return Plan(title, warnings=[f"autoconnect is already {word} for {name}"])
    if interface.backend == "iwd":
        from zsn.system import iwd as bus_iwd

        steps: list[Step] = [LiveStep(
            f"iwd: set AutoConnect={str(enabled).lower()} on {name} (saved in {net.path})",
            lambda ref=net.ref: _bus(host, lambda bus: bus_iwd.set_autoconnect(
                bus, ref, enabled)),  # type: ignore[misc]
            lambda ref=net.ref: _bus(host, lambda bus: bus_iwd.set_autoconnect(
                bus, ref, not enabled)))  # type: ignore[misc]
            for net in pending]
        return Plan(title, steps)
    if interface.backend == "wpa_supplicant":
        ids = [int(net.ref) for net in pending]
        notes: list[str] = []

        def run() -> None:
            notes.extend(_wpa(host, interface.name,
                              lambda ctrl: wpa.set_enabled(ctrl, ids, enabled)))
        verb = "ENABLE_NETWORK" if enabled else "DISABLE_NETWORK"
        extra = "" if enabled else " (also drops the connection if it is this network)"
        return Plan(title, [LiveStep(
            f"wpa_supplicant on {interface.name}: {verb} {', '.join(map(str, ids))}{extra}, "
            "SAVE_CONFIG", run,
            lambda: _wpa(host, interface.name, lambda ctrl: wpa.set_enabled(
                ctrl, ids, not enabled)))], notes=notes)
    if interface.backend == "netctl":
        steps = []
        for net in pending:
            steps += netctl_enable_steps(host, net.ref, enabled)
        return Plan(title, steps, notes=_boot_note(host))
    raise ValidationError(f"{interface.name}: zsn cannot change autoconnect here")


def netctl_enable_steps(host: Host, profile_name: str, enabled: bool) -> list[Step]:
    """``netctl enable`` / ``disable``: the wants symlink and the drop-in, then a reload."""
    link = netctl.enabled_link(host, profile_name)
    dropin = netctl.dropin_path(host, profile_name)
    unit = netctl.unit_name(profile_name)
    steps: list[Step] = []
    if enabled:
        profile = netctl.parse_profile(
            profile_name, read_tracked(netctl.profile_dir(host) / profile_name).text)
        drop_in = netctl.dropin(profile)

        def make_dir() -> None:
            files.make_dirs(dropin.parent)

        steps.append(LiveStep(f"create {netctl.SYSTEMD_CONF_DIR}/{unit}.d/", make_dir))
        previous = read_tracked(dropin) if files.exists(dropin) else None
        steps.append(FileEdit(dropin, previous, drop_in.text, intent=drop_in.intent))
        steps.append(LiveStep(
            f"link {netctl.WANTS_DIR}/{unit} -> {netctl.TEMPLATE_UNIT}",
            lambda: _symlink(link), lambda: files.remove_link(link)))
    else:
        if files.lexists(link):
            target = files.read_link(link) if files.is_link(link) else netctl.TEMPLATE_UNIT
            steps.append(LiveStep(f"remove {netctl.WANTS_DIR}/{unit}",
                                  lambda: files.remove_link(link),
                                  lambda: files.make_link(target, link)))
        if files.exists(dropin):
            steps.append(_move_aside(host, dropin))
    if systemd_reachable(host):
        steps.append(LiveStep("systemd: reload unit files (over D-Bus)",
                              lambda: _reload(host), lambda: _reload(host)))
    return steps


def systemd_reachable(host: Host) -> bool:
    """Whether a system bus (so, presumably, systemd) runs for this root. ``netctl enable``
    reloads only on a booted systemd; offline edits under --root are read at boot."""
    socket_path = host.system_bus_socket
    return socket_path is None or files.exists(socket_path)


def _boot_note(host: Host) -> list[str]:
    if systemd_reachable(host):
        return []
    return ["no system bus under this root: systemd reads the change when it starts"]


def _symlink(link: Path) -> None:
    files.make_dirs(link.parent)
    if files.lexists(link):
        raise ZsnError(f"{link} already exists")
    files.make_link(netctl.TEMPLATE_UNIT, link)


def _reload(host: Host) -> None:
    try:
        _bus(host, lambda bus: Systemd(bus).reload(), timeout=30.0)
    except BusError as exc:
        raise ZsnError(f"systemd did not reload its unit files: {exc}") from None


# Scan ----------------------------------------------------------------------------------

def scan(host: Host, interface: WlanInterface) -> None:
    """Ask the backend for a fresh scan and wait for it (bounded)."""
    if interface.read_only:
        raise ValidationError(interface.read_only)
    if interface.backend == "iwd":
        from zsn.system import iwd as bus_iwd

        station = _iwd_station(host, interface.name)
        with watching_scans(host, interface.name):
            _bus(host, lambda bus: bus_iwd.scan(bus, station, IWD_SCAN_TIMEOUT),
                 timeout=IWD_SCAN_TIMEOUT)
        return
    path = control_socket(host, interface.name)
    if interface.backend in ("wpa_supplicant", "netctl") and files.exists(path):
        async def act() -> None:
            async with WpaMonitor(path, interface=interface.name) as monitor, \
                    WpaControl(path, interface=interface.name) as ctrl:
                await wpa.scan(monitor, ctrl)
        asyncio.run(act())
        return
    raise ValidationError(interface.hint or f"{interface.name}: no daemon to scan with")
