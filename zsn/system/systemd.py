"""Whether systemd runs the host zsn looks at (the choice between its units and
programs zsn runs itself)."""

from __future__ import annotations

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host


def systemd_runs(host: Host) -> bool:
    """Whether systemd is the running init: sd_booted()'s test, or, for a tree under
    --root whose /run is private (a container), systemd answering on its bus."""
    if files.is_dir(host.path("/run/systemd/system")):
        return True
    if not files.exists(host.path("/run/dbus/system_bus_socket")):
        return False
    from zsn.system.dbus import SYSTEMD, SYSTEMD_MANAGER, SYSTEMD_PATH, run_sync

    try:
        run_sync(host, lambda bus: bus.get_all(SYSTEMD, SYSTEMD_PATH, SYSTEMD_MANAGER),
                 timeout=2.0)
    except ZsnError:
        return False
    return True
