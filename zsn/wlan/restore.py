"""Putting a Wi-Fi interface back on the network it was on (or off), for a tried
``zsn wifi connect|disconnect`` (a restorer of `zsn.tries.undo`).

wpa_supplicant: when the connect saved its config (SAVE_CONFIG), the file is put back
first (as every file is: only if it still holds what the connect wrote) and
wpa_supplicant re-reads it (RECONFIGURE), so its networks are the ones it had; then
it is connected again (RECONNECT, after a scan of the channel the network was on)
or disconnected as it was. iwd: the network it was
on is connected again (iwd keeps its profile), or the station disconnected. netctl
profiles are systemd units: the ``unit`` kind restores them. A restore waits for the
association, so what it reports is what the radio did.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.system.wpa_ctrl import WpaMonitor
from zsn.tries import params as checked
from zsn.tries.restores import FILE, FileUndo, digest, file_undo
from zsn.tries.undo import Outcome, Undo
from zsn.wlan.model import WlanInterface
from zsn.wlan.ssid import display

ASSOCIATION_WAIT = 20.0
"""How long a restore waits for the interface to be on its network again."""
BACKENDS = ("iwd", "wpa_supplicant")


@dataclass(frozen=True)
class WifiUndo:
    """`interface` on the network `ssid` (hex; None: disconnected) again, through
    `backend`, after `files` the daemon wrote are put back."""

    backend: str
    interface: str
    ssid: str | None
    frequency: int | None
    files: tuple[FileUndo, ...] = ()

    def __post_init__(self) -> None:
        checked.choice(self.backend, BACKENDS, "backend")
        checked.interface(self.interface)
        if self.ssid is not None:
            try:
                if not 0 < len(bytes.fromhex(self.ssid)) <= 32:
                    raise ValueError
            except ValueError:
                raise ValueError("ssid is not 1-32 bytes in hex") from None
        if self.frequency is not None:
            checked.whole(self.frequency, 1, 99_999, "frequency (MHz)")

    @property
    def name(self) -> str:
        return f"wifi {self.interface}"


def wifi_undo(host: Host, backend: str, interface: WlanInterface,
              daemon_files: tuple[str, ...] = ()) -> Undo:
    """`interface` on the network it is on now again (or disconnected, as it is), after
    putting back `daemon_files` (system paths) the change makes the daemon write:
    wpa_supplicant's config (SAVE_CONFIG), an iwd network profile. The channel it is
    on is kept too: wpa_supplicant finds the network again by scanning that one first."""
    kept = []
    for system_path in daemon_files:
        path = files.write_target(host.path(system_path))
        snapshot = files.read_tracked(path) if files.exists(path) else None
        kept.append(file_undo(host, path, snapshot, None).params)
    link = interface.link
    ssid = link.ssid if link.connected else None
    return Undo("wifi", WifiUndo(backend, interface.name, None if ssid is None else ssid.hex(),
                                 None if ssid is None else link.frequency, tuple(kept)))


def _files_restored(host: Host, params: WifiUndo, leave: frozenset[str],
                    outcome: Outcome) -> bool:
    """Put back the files the change made the daemon write. A daemon rewrites a whole
    file (SAVE_CONFIG) or makes one (an iwd profile), so unlike a file zsn writes there
    is no text to tell its write from another's: the files the daemon owns go back as
    they were (but for one changed since the try). True when one did."""
    changed = False
    for kept in params.files:
        if f"file {kept.path}" in leave:
            continue
        path = host.path(kept.path)
        current = files.read_tracked(path) if files.exists(path) else None
        if (current.text if current else None) == kept.before:
            continue
        if kept.before is None:
            files.remove(path, missing_ok=True)
            outcome.done.append(f"removed {path}")
        else:
            files.write_atomic(path, kept.before, previous=current, mode=kept.mode,
                               backup=False)
            outcome.done.append(f"put back {path}")
        changed = True
    return changed


class WifiRestorer:
    params = WifiUndo

    def describe(self, params: WifiUndo) -> str:
        target = f"on {display(bytes.fromhex(params.ssid))} again" if params.ssid \
            else "disconnected"
        return f"{params.interface} {target} ({params.backend})"

    def objects(self, params: WifiUndo) -> tuple[str, ...]:
        return (params.name, *(f"file {kept.path}" for kept in params.files))

    def observe(self, host: Host, params: WifiUndo) -> dict[str, object]:
        """The network the interface is on (as its daemon says: one short question) and
        the daemon's files."""
        found: dict[str, object] = {}
        for kept in params.files:
            path = host.path(kept.path)
            data = files.read_bytes(path, files.MAX_FILE_BYTES) if files.exists(path) else None
            found[f"file {kept.path}"] = None if data is None else digest(data)
        ssid = _on_iwd(host, params.interface) if params.backend == "iwd" \
            else _on_wpa(host, params.interface)
        found[params.name] = None if ssid is None else ssid.hex()
        return found

    def wanted(self, params: WifiUndo) -> dict[str, object]:
        found: dict[str, object] = {
            f"file {kept.path}": None if kept.before is None
            else digest(kept.before.encode("utf-8")) for kept in params.files}
        found[params.name] = params.ssid
        return found

    def restore(self, host: Host, params: WifiUndo, leave: frozenset[str],
                force: bool) -> Outcome:
        ssid = bytes.fromhex(params.ssid) if params.ssid else None
        if params.backend == "iwd":
            return _iwd(host, params, ssid, leave)
        return _wpa(host, params, ssid, leave)

    def commands(self, host: Host, params: WifiUndo) -> list[str]:
        name = params.interface
        restored = [command for kept in params.files for command in FILE.commands(host, kept)]
        if params.backend == "iwd":
            if params.ssid:
                return [*restored, f"iwctl station {name} connect "
                        f"'{display(bytes.fromhex(params.ssid))}'"]
            return [*restored, f"iwctl station {name} disconnect"]
        found = list(restored)
        if params.files:
            found.append(f"wpa_cli -i {name} reconfigure")
        if params.ssid and params.frequency is not None:
            found.append(f"wpa_cli -i {name} scan freq={params.frequency}")
        found.append(f"wpa_cli -i {name} {'reconnect' if params.ssid else 'disconnect'}")
        return found


def _wpa(host: Host, params: WifiUndo, ssid: bytes | None, leave: frozenset[str]) -> Outcome:
    from zsn.wlan import wpa

    name = params.interface
    outcome = Outcome()
    reloaded = _files_restored(host, params, leave, outcome)
    if params.name in leave:
        return outcome

    async def act(ctrl: Any) -> None:
        if reloaded:
            await wpa._ok(ctrl, "RECONFIGURE")
            outcome.done.append(f"wpa_supplicant on {name} re-read its config")
        state = await wpa.read_state(ctrl, name)
        if ssid is None:
            if state.link.state not in ("DISCONNECTED", "INACTIVE", "INTERFACE_DISABLED"):
                await wpa.disconnect(ctrl)
                outcome.done.append(f"{name} disconnected")
            return
        if state.link.connected and state.link.ssid == ssid:
            return
        async with WpaMonitor(ctrl.path, interface=name,
                              conversation=ASSOCIATION_WAIT + 5) as monitor:
            await wpa.rejoin(monitor, ctrl, params.frequency, ASSOCIATION_WAIT)
        state = await wpa.read_state(ctrl, name)
        if state.link.connected and state.link.ssid == ssid:
            outcome.done.append(f"{name} on {display(ssid)} again")
        elif state.link.connected and state.link.ssid is not None:
            outcome.left.append(f"{name} is on {display(state.link.ssid)}, not "
                                f"{display(ssid)}")
        else:
            outcome.left.append(f"{name} is not on {display(ssid)} after "
                                f"{ASSOCIATION_WAIT:g} s ({state.link.state})")

    wpa.run(host, name, act, timeout=ASSOCIATION_WAIT + 10)
    return outcome


def _on_wpa(host: Host, name: str) -> bytes | None:
    """The network wpa_supplicant has `name` on (None: not connected)."""
    from zsn.wlan import wpa
    from zsn.wlan.wpa_protocol import link_from_status, parse_kv

    async def ask(ctrl: Any) -> bytes | None:
        link = link_from_status(parse_kv(await ctrl.request("STATUS")))
        return link.ssid if link.connected else None

    found: bytes | None = wpa.run(host, name, ask, timeout=15.0)
    return found


def _station(objects: Any, name: str) -> tuple[str, dict[str, Any], bytes | None]:
    """iwd's station of `name`: its path, properties, and the network it is on."""
    from zsn.system import iwd as bus_iwd

    station = next((path for path, ifaces in objects.items()
                    if ifaces.get(bus_iwd.DEVICE, {}).get("Name") == name
                    and bus_iwd.STATION in ifaces), None)
    if station is None:
        raise ZsnError(f"iwd has no station for {name}")
    props = objects[station][bus_iwd.STATION]
    current = props.get("ConnectedNetwork")
    current_ssid = None
    if current and current in objects:
        raw = objects[current].get(bus_iwd.NETWORK, {}).get("Name")
        current_ssid = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) \
            else None
    return station, props, current_ssid


def _on_iwd(host: Host, name: str) -> bytes | None:
    """The network iwd has `name` on (None: not connected)."""
    from zsn.system import iwd as bus_iwd
    from zsn.system.dbus import SystemBus, run_sync

    async def ask(bus: SystemBus) -> bytes | None:
        _station_path, props, ssid = _station(await bus_iwd.objects(bus), name)
        return ssid if props.get("State") == "connected" else None

    found: bytes | None = run_sync(host, ask, timeout=15.0)
    return found


def _iwd(host: Host, params: WifiUndo, ssid: bytes | None, leave: frozenset[str]) -> Outcome:
    from zsn.system import iwd as bus_iwd
    from zsn.system.dbus import SystemBus, run_sync
    from zsn.wlan import iwd as iwd_backend

    name = params.interface
    outcome = Outcome()
    if _files_restored(host, params, leave, outcome):
        time.sleep(0.5)  # iwd takes a profile's change from inotify: let it
    if params.name in leave:
        return outcome

    async def act(bus: SystemBus) -> None:
        objects = await bus_iwd.objects(bus)
        station, props, current_ssid = _station(objects, name)
        if ssid is None:
            if props.get("State") in ("connected", "connecting", "roaming"):
                await bus_iwd.disconnect(bus, station)
                outcome.done.append(f"{name} disconnected (iwd)")
            return
        if current_ssid == ssid and props.get("State") == "connected":
            return
        found = iwd_backend.find_network(objects, station, ssid)
        if found is None:
            raise ZsnError(f"iwd does not see {display(ssid)} on {name}")
        await bus_iwd.connect(bus, network=found[0], station=station, hidden_ssid=None,
                              passphrase=None, timeout=ASSOCIATION_WAIT)
        outcome.done.append(f"{name} on {display(ssid)} again (iwd)")

    run_sync(host, act, timeout=ASSOCIATION_WAIT + 5, deadline=ASSOCIATION_WAIT + 20)
    return outcome


RESTORER = WifiRestorer()
