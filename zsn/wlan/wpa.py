"""wpa_supplicant as a backend: state read and changes made over its control socket.

Scan results come from walking ``BSS FIRST`` / ``BSS NEXT-<id>`` with a mask (one
small reply per access point) rather than SCAN_RESULTS, whose single 4096-byte reply
is cut silently on a busy channel; LIST_NETWORKS is paged with ``LAST_ID=`` for the
same reason. Connecting selects the network, waits for the daemon's events on an
ATTACHed socket, then re-enables the networks SELECT_NETWORK disabled (SAVE_CONFIG
would otherwise persist ``disabled=1`` on all of them).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from zsn.eap.events import EapAttempt
from zsn.eap.profile import EapProfile
from zsn.eap.supplicant import NAME_CHECKS, Value, profile_of_values
from zsn.errors import SocketError, ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.system.wpa_ctrl import Command, WpaControl, WpaMonitor, control_socket, parse_event
from zsn.wlan.model import KnownNetwork, Link, ScanEntry, Security
from zsn.wlan.secrets import Passphrase
from zsn.wlan.ssid import display
from zsn.wlan.wpa_protocol import (
    BSS_MASK,
    REPLY_LIMIT,
    NetworkLine,
    check_ok,
    link_from_status,
    parse_bss,
    parse_kv,
    parse_list_networks,
    set_secret,
    set_ssid,
    set_value,
)

MAX_BSS = 2000
"""A walk stops here whatever happens (a daemon handing out ids in a loop)."""
MAX_NETWORKS = 1000
CONNECT_TIMEOUT = 30.0
SCAN_TIMEOUT = 15.0
CHANNEL_SCAN_TIMEOUT = 5.0
"""A scan of one channel: well under a second on a real radio."""
NOT_FOUND_LIMIT = 3
"""Scans in a row without the network before a connect gives up early."""

T = TypeVar("T")


def key_mgmt_security(key_mgmt: str) -> Security | None:
    """A network block's security from its ``key_mgmt`` (``WPA-PSK SAE`` ...)."""
    words = set(key_mgmt.replace('"', "").split())
    if words & {"WPA-EAP", "WPA-EAP-SHA256", "IEEE8021X", "FT-EAP", "WPA-EAP-SUITE-B",
                "WPA-EAP-SUITE-B-192"}:
        return "enterprise"
    sae = bool(words & {"SAE", "FT-SAE", "SAE-EXT-KEY"})
    psk = bool(words & {"WPA-PSK", "WPA-PSK-SHA256", "FT-PSK"})
    if sae and psk:
        return "WPA2/WPA3"
    if sae:
        return "WPA3"
    if psk:
        return "WPA2"
    if "OWE" in words:
        return "OWE"
    if "NONE" in words:
        return "open"
    return None


@dataclass(frozen=True)
class WpaState:
    link: Link
    scan: tuple[ScanEntry, ...]
    networks: tuple[KnownNetwork, ...]
    update_config: bool | None
    """Whether SAVE_CONFIG may write the config (None: the daemon did not say)."""


async def walk_bss(ctrl: WpaControl) -> list[ScanEntry]:
    entries: list[ScanEntry] = []
    seen: set[int] = set()
    reply = await ctrl.request(f"BSS FIRST MASK=0x{BSS_MASK:x}")
    while len(entries) < MAX_BSS:
        bss = parse_bss(reply)
        if bss is None or bss.id in seen:
            break
        seen.add(bss.id)
        entries.append(bss.entry())
        reply = await ctrl.request(f"BSS NEXT-{bss.id} MASK=0x{BSS_MASK:x}")
    return entries


async def list_networks(ctrl: WpaControl) -> list[NetworkLine]:
    """Every configured network, paged past the reply buffer."""
    found: dict[int, NetworkLine] = {}
    command = "LIST_NETWORKS"
    while len(found) < MAX_NETWORKS:
        reply = await ctrl.request(command)
        if reply.startswith("FAIL"):
            raise SocketError(f"wpa_supplicant on {ctrl.interface}: LIST_NETWORKS failed")
        full = len(reply.encode("utf-8", errors="surrogateescape")) >= REPLY_LIMIT - 256
        text = reply
        if full and not reply.endswith("\n"):
            text = reply.rsplit("\n", 1)[0]  # the last line may be cut
        page = [line for line in parse_list_networks(text) if line.id not in found]
        for line in page:
            found[line.id] = line
        if not full or not page:
            break
        command = f"LIST_NETWORKS LAST_ID={max(found)}"
    return sorted(found.values(), key=lambda line: line.id)


async def network_value(ctrl: WpaControl, network_id: int, name: str) -> str | None:
    reply = (await ctrl.request(f"GET_NETWORK {network_id} {name}")).strip()
    return None if reply.startswith("FAIL") else reply


EAP_SETTINGS = ("key_mgmt", "eap", "identity", "phase2", "ca_cert", "ca_path",
                *NAME_CHECKS)


async def eap_profile(ctrl: WpaControl, network_id: int) -> EapProfile | None:
    """An enterprise network's 802.1X settings, as GET_NETWORK gives them (it never
    gives the password)."""
    values = {}
    for name in EAP_SETTINGS:
        value = await network_value(ctrl, network_id, name)
        if value is not None:
            values[name] = value
    return profile_of_values(values)


async def read_state(ctrl: WpaControl, interface: str) -> WpaState:
    status = parse_kv(await ctrl.request("STATUS"))
    signal = None
    if status.get("wpa_state") == "COMPLETED":
        reply = await ctrl.request("SIGNAL_POLL")
        signal = parse_kv(reply) if not reply.startswith("FAIL") else None
    link = link_from_status(status, signal)
    scan = await walk_bss(ctrl)
    networks = []
    for line in await list_networks(ctrl):
        key_mgmt = await network_value(ctrl, line.id, "key_mgmt")
        scan_ssid = await network_value(ctrl, line.id, "scan_ssid")
        security = key_mgmt_security(key_mgmt) if key_mgmt else None
        eap = await eap_profile(ctrl, line.id) if security == "enterprise" else None
        networks.append(KnownNetwork(
            ssid=line.ssid, backend="wpa_supplicant", ref=str(line.id),
            security=security, eap=eap,
            autoconnect=not line.disabled, hidden=scan_ssid == "1", interface=interface,
            current=line.current,
            problem="temporarily disabled (failed attempts)" if line.temporarily_disabled
            else None))
    update = (await ctrl.request("GET update_config")).strip()
    known = {(net.ssid) for net in networks}
    marked = tuple(
        ScanEntry(e.ssid, e.bssid, e.signal_dbm, e.frequency, e.security,
                  known=e.ssid in known,
                  connected=link.connected and e.bssid == link.bssid)
        for e in scan)
    return WpaState(link, marked, tuple(networks),
                    None if update.startswith("FAIL") else update == "1")


# Changes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WpaConnectResult:
    network_id: int
    created: bool
    saved: bool
    notes: tuple[str, ...]


class ConnectFailed(ZsnError):
    """The network was tried and did not connect; the message says why."""


def key_commands(network_id: int, ssid: bytes, security: Security | None,
                 passphrase: Passphrase | None) -> list[Command]:
    """SET_NETWORK commands for the network's security. WPA2 gets the PSK derived
    here (the passphrase is not stored); SAE needs the passphrase itself."""
    if security in (None, "open", "OWE") and passphrase is None:
        return [set_value(network_id, "key_mgmt", "OWE" if security == "OWE" else "NONE")]
    if passphrase is None:
        raise ConnectFailed(f"{display(ssid)} is a {security} network: a passphrase is needed")
    if security == "WEP":
        raise ConnectFailed("WEP networks are not supported (WEP is broken; change the "
                            "access point to WPA2 or WPA3)")
    if security == "enterprise":
        raise ConnectFailed("enterprise (802.1X) networks need EAP settings zsn does not "
                            "write; add a network block to wpa_supplicant's config")
    if security in ("WPA3", "WPA2/WPA3"):
        if passphrase.is_raw_psk:
            if security == "WPA3":
                raise ConnectFailed("WPA3 (SAE) needs the passphrase, not a raw PSK")
            return [set_value(network_id, "key_mgmt", "WPA-PSK"),
                    set_secret(network_id, "psk", passphrase.psk(ssid))]
        mgmt = "SAE" if security == "WPA3" else "WPA-PSK SAE"
        return [set_value(network_id, "key_mgmt", mgmt),
                set_value(network_id, "ieee80211w", "2" if security == "WPA3" else "1"),
                set_secret(network_id, "sae_password", f'"{passphrase.reveal()}"'),
                *([set_secret(network_id, "psk", passphrase.psk(ssid))]
                  if security == "WPA2/WPA3" else [])]
    return [set_value(network_id, "key_mgmt", "WPA-PSK"),
            set_secret(network_id, "psk", passphrase.psk(ssid))]


async def _ok(ctrl: WpaControl, command: Command | str) -> None:
    command = Command.plain(command) if isinstance(command, str) else command
    check_ok(command, await ctrl.request(command))


def eap_commands(network_id: int, values: list[Value]) -> list[Command]:
    """SET_NETWORK for each 802.1X value; the password and key passphrase shown hidden."""
    return [set_secret(network_id, value.key, value.text) if value.secret
            else set_value(network_id, value.key, value.text) for value in values]


async def connect(path: Path, interface: str, ssid: bytes, *, passphrase: Passphrase | None,
                  security: Security | None, hidden: bool,
                  timeout: float = CONNECT_TIMEOUT,
                  eap: list[Value] | None = None) -> WpaConnectResult:
    """Connect `interface` to `ssid`: a known network again (no passphrase given), or
    a new network block (the old one for the SSID is replaced only once the new one
    works). A failure removes what was added and restores the other networks."""
    async with WpaMonitor(path, interface=interface) as monitor, \
            WpaControl(path, interface=interface) as ctrl:
        networks = await list_networks(ctrl)
        same = [net for net in networks if net.ssid == ssid]
        enabled_before = [net.id for net in networks if not net.disabled]
        created = passphrase is not None or eap is not None or not same
        if created:
            reply = (await ctrl.request("ADD_NETWORK")).strip()
            if not reply.isdigit():
                raise ConnectFailed(f"wpa_supplicant refused ADD_NETWORK: {reply[:40]}")
            network_id = int(reply)
            try:
                await _ok(ctrl, set_ssid(network_id, ssid))
                commands = eap_commands(network_id, eap) if eap is not None else \
                    key_commands(network_id, ssid, security, passphrase)
                for command in commands:
                    await _ok(ctrl, command)
                if hidden:
                    await _ok(ctrl, set_value(network_id, "scan_ssid", "1"))
            except BaseException:
                await ctrl.request(f"REMOVE_NETWORK {network_id}")
                raise
        else:
            network_id = same[0].id
        try:
            await _select_and_wait(ctrl, monitor, network_id, ssid, timeout)
        except BaseException:
            if created:
                await ctrl.request(f"REMOVE_NETWORK {network_id}")
            await _enable(ctrl, [n for n in enabled_before if n != network_id])
            raise
        replaced = [net.id for net in same] if created else []
        for old in replaced:
            await ctrl.request(f"REMOVE_NETWORK {old}")
        await _enable(ctrl, [n for n in enabled_before if n not in replaced])
        # A network that was disabled at boot stays enabled now that it was chosen.
        await ctrl.request(f"ENABLE_NETWORK {network_id}")
        saved, notes = await save_config(ctrl)
        return WpaConnectResult(network_id, created, saved, tuple(notes))


async def _enable(ctrl: WpaControl, ids: list[int]) -> None:
    for network_id in ids:
        await ctrl.request(f"ENABLE_NETWORK {network_id}")


async def _select_and_wait(ctrl: WpaControl, monitor: WpaMonitor, network_id: int,
                           ssid: bytes, timeout: float) -> None:
    status = parse_kv(await ctrl.request("STATUS"))
    if status.get("wpa_state") == "COMPLETED" and status.get("id") == str(network_id):
        return
    await _ok(ctrl, f"SELECT_NETWORK {network_id}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    not_found = 0
    name = display(ssid)
    attempt = EapAttempt()
    async for datagram in monitor.events(deadline):
        event = parse_event(datagram)
        if event is None:
            continue
        if event.name == "CTRL-EVENT-CONNECTED" and f"id={network_id} " in event.text + " ":
            return
        if event.name.startswith("CTRL-EVENT-EAP-"):
            attempt.feed(event)
            if attempt.failed:
                raise ConnectFailed(f"{name}: 802.1X failed: {attempt.reason}")
        if event.name == "CTRL-EVENT-SSID-TEMP-DISABLED" and event.field("id") == str(network_id):
            reason = event.field("reason") or "unknown"
            if attempt.started:
                raise ConnectFailed(f"{name}: 802.1X failed: {attempt.reason}")
            if reason == "WRONG_KEY":
                raise ConnectFailed(f"{name}: wrong passphrase (the access point rejected the "
                                    "key in the handshake)")
            raise ConnectFailed(f"{name}: authentication failed ({reason})")
        if event.name == "CTRL-EVENT-NETWORK-NOT-FOUND":
            not_found += 1
            if not_found >= NOT_FOUND_LIMIT:
                raise ConnectFailed(f"{name}: not found in {not_found} scans (out of range, "
                                    "or a hidden network: use --hidden)")
        if event.name in ("CTRL-EVENT-ASSOC-REJECT", "CTRL-EVENT-AUTH-REJECT"):
            raise ConnectFailed(f"{name}: the access point refused us "
                                f"({event.name.removeprefix('CTRL-EVENT-').lower()}, "
                                f"status {event.field('status_code') or '?'})")
    state = parse_kv(await ctrl.request("STATUS")).get("wpa_state", "?")
    raise ConnectFailed(f"{name}: not connected within {timeout:g} s (state {state})")


async def follow_attempt(path: Path, interface: str, timeout: float) -> str | None:
    """An 802.1X attempt another program runs (the wpa_supplicant netctl starts for a
    ``Security=wpa-configsection`` profile): wait for its control socket at `path`,
    then read its events until it connects (None) or its EAP fails (the reason, in the
    words of zsn's own connects). None too when there was nothing to read: no socket
    within `timeout`, or no EAP event before the daemon went."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not files.exists(path):
        if loop.time() >= deadline:
            return None
        await asyncio.sleep(0.05)
    attempt = EapAttempt()
    try:
        async with WpaMonitor(path, interface=interface,
                              conversation=max(deadline - loop.time(), 1.0)) as monitor:
            async for datagram in monitor.events(deadline):
                event = parse_event(datagram)
                if event is None:
                    continue
                if event.name == "CTRL-EVENT-CONNECTED":
                    return None
                if event.name.startswith("CTRL-EVENT-EAP-"):
                    attempt.feed(event)
                    if attempt.failed:
                        return attempt.reason
                if event.name == "CTRL-EVENT-SSID-TEMP-DISABLED" and attempt.started:
                    return attempt.reason
    except SocketError:
        pass  # the daemon went (netctl stops it when its wait ends)
    return attempt.reason if attempt.started or attempt.cert_error else None


async def save_config(ctrl: WpaControl) -> tuple[bool, list[str]]:
    reply = (await ctrl.request("SAVE_CONFIG", timeout=10.0)).strip()
    if reply == "OK":
        return True, []
    return False, [f"not saved: wpa_supplicant on {ctrl.interface} cannot write its config "
                   "(add update_config=1 to it); the change is lost when it restarts"]


async def find_network(ctrl: WpaControl, ssid: bytes) -> list[NetworkLine]:
    return [net for net in await list_networks(ctrl) if net.ssid == ssid]


async def disconnect(ctrl: WpaControl) -> None:
    await _ok(ctrl, "DISCONNECT")


async def reconnect(ctrl: WpaControl) -> None:
    await _ok(ctrl, "RECONNECT")


async def remove_networks(ctrl: WpaControl, ids: list[int]) -> list[str]:
    for network_id in ids:
        await _ok(ctrl, f"REMOVE_NETWORK {network_id}")
    return (await save_config(ctrl))[1]


async def set_enabled(ctrl: WpaControl, ids: list[int], enabled: bool) -> list[str]:
    verb = "ENABLE_NETWORK" if enabled else "DISABLE_NETWORK"
    for network_id in ids:
        await _ok(ctrl, f"{verb} {network_id}")
    return (await save_config(ctrl))[1]


async def scan(monitor: WpaMonitor, ctrl: WpaControl, timeout: float = SCAN_TIMEOUT,
               frequency: int | None = None) -> None:
    """Ask for a scan (of the channel at `frequency` MHz alone, when given) and wait
    for its results (a scan already running counts)."""
    reply = (await ctrl.request("SCAN" if frequency is None else f"SCAN freq={frequency}")
             ).strip()
    if reply not in ("OK", "FAIL-BUSY"):
        raise SocketError(f"wpa_supplicant on {ctrl.interface} refused to scan: {reply[:40]}")
    deadline = asyncio.get_running_loop().time() + timeout
    async for datagram in monitor.events(deadline):
        event = parse_event(datagram)
        if event is not None and event.name in ("CTRL-EVENT-SCAN-RESULTS",
                                                "CTRL-EVENT-SCAN-FAILED"):
            if event.name == "CTRL-EVENT-SCAN-FAILED":
                raise SocketError(f"wpa_supplicant on {ctrl.interface}: scan failed "
                                  f"({event.text.strip() or 'no reason given'})")
            return
    raise SocketError(f"wpa_supplicant on {ctrl.interface}: no scan results within "
                      f"{timeout:g} s")


async def rejoin(monitor: WpaMonitor, ctrl: WpaControl, frequency: int | None,
                 timeout: float) -> bool:
    """RECONNECT after a DISCONNECT, first scanning the channel at `frequency` MHz
    alone when it is known (the one the network was on); True once connected within
    `timeout` s.

    RECONNECT joins at once from scan results younger than 5 s (wpa_supplicant's "fast
    associate"); older ones make it scan every channel the radio has first, dozens on a
    dual-band radio, the passive-only ones dwelt on for 100 ms or more each. With fresh
    results of the one channel it joins from them; a network no longer there makes it
    scan them all, as before."""
    deadline = asyncio.get_running_loop().time() + timeout
    if frequency is not None:
        with contextlib.suppress(SocketError):  # then RECONNECT scans them all
            await scan(monitor, ctrl, min(timeout, CHANNEL_SCAN_TIMEOUT), frequency)
    await reconnect(ctrl)
    async for datagram in monitor.events(deadline):
        event = parse_event(datagram)
        if event is not None and event.name == "CTRL-EVENT-CONNECTED":
            return True
    return False


def run(host: Host, interface: str, action: Callable[[WpaControl], Awaitable[T]],
        *, timeout: float = 5.0) -> T:
    """Open the interface's control socket, run `action`, close it (no event loop needed)."""

    async def main() -> T:
        async with WpaControl(control_socket(host, interface), timeout=timeout,
                              interface=interface) as ctrl:
            return await action(ctrl)

    return asyncio.run(main())
