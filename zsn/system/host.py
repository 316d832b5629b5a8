"""`Host`: the machine zsn looks at, rooted at `--root` (``/`` for the live system)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import NamedTuple

from zsn.errors import ZsnError


class Host(NamedTuple):
    """Resolves every system path under `root`, so tests and offline editing never touch /etc."""

    root: Path = Path("/")

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> Host:
        """A host rooted at `root`, refusing a root that does not exist or cannot be read."""
        path = Path(root).resolve()
        if not path.is_dir():
            raise ZsnError(f"root {str(root)!r} is not a directory")
        if not os.access(path, os.R_OK | os.X_OK):
            raise ZsnError(f"root {str(root)!r} cannot be read (permission denied)")
        return cls(path)

    @property
    def is_live(self) -> bool:
        """True when zsn looks at the running system rather than a tree under another root."""
        return self.root == Path("/")

    @property
    def is_superuser(self) -> bool:
        return os.geteuid() == 0

    def path(self, system_path: str | os.PathLike[str]) -> Path:
        """`system_path` (absolute, as on a real system) under this host's root."""
        relative = os.fspath(system_path).lstrip("/")
        return self.root / relative if relative else self.root

    def hostname(self) -> str:
        if self.is_live:
            return socket.gethostname()
        from zsn.system.files import read_text

        try:
            return read_text(self.path("/etc/hostname"), 4096).strip() or "localhost"
        except ZsnError:
            return "localhost"

    @property
    def system_bus_socket(self) -> Path | None:
        """The system bus's unix socket, when its address names one."""
        address = self.system_bus_address
        prefix = "unix:path="
        if not address.startswith(prefix):
            return None
        return Path(address[len(prefix):].split(",", 1)[0])

    @property
    def system_bus_address(self) -> str:
        """D-Bus address of the system bus; under `--root` the socket inside that tree."""
        if self.is_live and "DBUS_SYSTEM_BUS_ADDRESS" in os.environ:
            return os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
        return f"unix:path={self.path('/run/dbus/system_bus_socket')}"
