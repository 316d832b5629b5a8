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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.system.wpa_ctrl import WpaMonitor
from zsn.tries.restores import FILE, file_undo
from zsn.tries.undo import Outcome, Undo
from zsn.wlan.model import WlanInterface
from zsn.wlan.ssid import display

ASSOCIATION_WAIT = 20.0
"""How long a restore waits for the interface to be on its network again."""


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
        kept.append(dict(file_undo(path, snapshot, None).data))
    link = interface.link
    ssid = link.ssid if link.connected else None
    return Undo("wifi", {"backend": backend, "interface": interface.name,
                         "ssid": None if ssid is None else ssid.hex(),
                         "frequency": None if ssid is None else link.frequency, "files": kept})


def _frequency(data: Mapping[str, Any]) -> int | None:
    """The recorded channel's frequency (MHz), if it is one (a record is read back from
    disk: only a plain positive number goes into a command)."""
    value = data.get("frequency")
    return value if type(value) is int and 0 < value < 100_000 else None


def _files_restored(data: Mapping[str, Any], outcome: Outcome) -> bool:
    """Put back the files the change made the daemon write. A daemon rewrites a whole
    file (SAVE_CONFIG) or makes one (an iwd profile), so unlike a file zsn writes there
    is no text to tell its write from another's: the files the daemon owns go back as
    they were. True when one did."""
    changed = False
    for kept in data["files"]:
        path = Path(kept["path"])
        before: str | None = kept["before"]
        current = files.read_tracked(path) if files.exists(path) else None
        if (current.text if current else None) == before:
            continue
        if before is None:
            files.remove(path, missing_ok=True)
            outcome.done.append(f"removed {path}")
        else:
            files.write_atomic(path, before, previous=current, mode=kept["mode"],
                               backup=False)
            outcome.done.append(f"put back {path}")
        changed = True
    return changed


class WifiRestorer:
    def describe(self, data: Mapping[str, Any]) -> str:
        ssid = data["ssid"]
        target = f"on {display(bytes.fromhex(ssid))} again" if ssid else "disconnected"
        return f"{data['interface']} {target} ({data['backend']})"

    def restore(self, host: Host, data: Mapping[str, Any]) -> Outcome:
        ssid = bytes.fromhex(data["ssid"]) if data["ssid"] else None
        if data["backend"] == "iwd":
            return _iwd(host, data, ssid)
        return _wpa(host, data, ssid)

    def commands(self, data: Mapping[str, Any]) -> list[str]:
        name = data["interface"]
        if data["backend"] == "iwd":
            restored = [command for kept in data["files"] for command in FILE.commands(kept)]
            if data["ssid"]:
                return [*restored, f"iwctl station {name} connect "
                        f"'{display(bytes.fromhex(data['ssid']))}'"]
            return [*restored, f"iwctl station {name} disconnect"]
        found = [command for kept in data["files"] for command in FILE.commands(kept)]
        if data["files"]:
            found.append(f"wpa_cli -i {name} reconfigure")
        frequency = _frequency(data)
        if data["ssid"] and frequency is not None:
            found.append(f"wpa_cli -i {name} scan freq={frequency}")
        found.append(f"wpa_cli -i {name} {'reconnect' if data['ssid'] else 'disconnect'}")
        return found


def _wpa(host: Host, data: Mapping[str, Any], ssid: bytes | None) -> Outcome:
    from zsn.wlan import wpa

    name = str(data["interface"])
    outcome = Outcome()
    reloaded = _files_restored(data, outcome)

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
            await wpa.rejoin(monitor, ctrl, _frequency(data), ASSOCIATION_WAIT)
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


def _iwd(host: Host, data: Mapping[str, Any], ssid: bytes | None) -> Outcome:
    from zsn.system import iwd as bus_iwd
    from zsn.system.dbus import SystemBus, run_sync
    from zsn.wlan import iwd as iwd_backend

    name = str(data["interface"])
    outcome = Outcome()
    if _files_restored(data, outcome):
        time.sleep(0.5)  # iwd takes a profile's change from inotify: let it

    async def act(bus: SystemBus) -> None:
        objects = await bus_iwd.objects(bus)
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
