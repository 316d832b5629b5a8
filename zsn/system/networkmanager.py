"""Whether NetworkManager runs and which devices it manages (D-Bus, read only).

zsn never changes NetworkManager's connections behind its back: where it manages a
device, zsn shows the nmcli commands instead of writing config files. dbus-fast is
imported only when the bus socket exists, so hosts without D-Bus pay nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from zsn.system.host import Host

NM = "org.freedesktop.NetworkManager"
NM_PATH = "/org/freedesktop/NetworkManager"
NM_DEVICE = "org.freedesktop.NetworkManager.Device"
UNKNOWN_DEVICE = "org.freedesktop.NetworkManager.UnknownDevice"
TIMEOUT = 3.0


def managed_devices(host: Host, names: Iterable[str]) -> dict[str, bool] | None:
    """For each of `names` NetworkManager knows, whether it manages it; ``None`` when
    NetworkManager does not run on the host's system bus (or there is no bus).

    Raises `BusError` when it runs but a device query fails."""
    wanted = list(dict.fromkeys(names))
    socket_path = host.system_bus_socket
    if socket_path is not None and not socket_path.exists():
        return None
    from zsn.system.dbus import BusError, SystemBus, run_sync

    async def ask(bus: SystemBus) -> dict[str, bool] | None:
        (running,) = await bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                    "org.freedesktop.DBus", "NameHasOwner", "s", [NM],
                                    what="asking whether NetworkManager runs")
        if not running:
            return None
        found: dict[str, bool] = {}
        for name in wanted:
            try:
                (path,) = await bus.call(NM, NM_PATH, NM, "GetDeviceByIpIface", "s", [name],
                                         what=f"NetworkManager device {name}")
            except BusError as exc:
                if exc.name == UNKNOWN_DEVICE:
                    continue
                raise
            properties = await bus.get_all(NM, path, NM_DEVICE)
            found[name] = bool(properties.get("Managed", False))
        return found

    try:
        return run_sync(host, ask, timeout=TIMEOUT)
    except BusError as exc:
        if "NetworkManager device" in str(exc):
            # It runs, but would not say whether it manages a device: writing config
            # files could then go behind its back.
            raise BusError(f"NetworkManager runs but {exc}", exc.name) from exc
        return None  # no bus here, or it does not answer: NetworkManager cannot run
