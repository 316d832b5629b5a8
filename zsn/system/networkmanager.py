"""Whether NetworkManager runs and which devices it manages (D-Bus, read only).

zsn never changes NetworkManager's connections behind its back: where it manages a
device, zsn shows the nmcli commands instead of writing config files. dbus-fast is
imported only when the bus socket exists, so hosts without D-Bus pay nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from zsn.system import files
from zsn.system.host import Host

if TYPE_CHECKING:
    from zsn.system.dbus import SystemBus

NM = "org.freedesktop.NetworkManager"
NM_PATH = "/org/freedesktop/NetworkManager"
NM_DEVICE = "org.freedesktop.NetworkManager.Device"
UNKNOWN_DEVICE = "org.freedesktop.NetworkManager.UnknownDevice"
TIMEOUT = 3.0


async def device_path(bus: SystemBus, name: str) -> str | None:
    """NetworkManager's object for interface `name`; None when it does not know it.
    Raises `BusError` for any other failure (NetworkManager must be running)."""
    from zsn.system.dbus import BusError

    try:
        (path,) = await bus.call(NM, NM_PATH, NM, "GetDeviceByIpIface", "s", [name],
                                 what=f"NetworkManager device {name}")
    except BusError as exc:
        if exc.name == UNKNOWN_DEVICE:
            return None
        raise
    return str(path)


def managed_devices(host: Host, names: Iterable[str]) -> dict[str, bool] | None:
    """For each of `names` NetworkManager knows, whether it manages it; ``None`` when
    NetworkManager does not run on the host's system bus (or there is no bus).

    Raises `BusError` when it runs but a device query fails."""
    wanted = list(dict.fromkeys(names))
    socket_path = host.system_bus_socket
    if socket_path is not None and not files.exists(socket_path):
        return None
    from zsn.system.dbus import BusError, run_sync

    running: list[bool] = []  # set once NetworkManager is known to run

    async def ask(bus: SystemBus) -> dict[str, bool] | None:
        if not await bus.name_has_owner(NM):
            return None
        running.append(True)
        found: dict[str, bool] = {}
        for name in wanted:
            path = await device_path(bus, name)
            if path is None:
                continue
            properties = await bus.get_all(NM, path, NM_DEVICE)
            found[name] = bool(properties.get("Managed", False))
        return found

    try:
        return run_sync(host, ask, timeout=TIMEOUT)
    except BusError as exc:
        if running:
            # It runs, but would not say whether it manages a device: writing config
            # files could then go behind its back.
            raise BusError(f"NetworkManager runs but {exc}", exc.name) from exc
        return None  # no bus here, or it does not answer: NetworkManager cannot run
