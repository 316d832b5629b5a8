"""A private D-Bus system bus for tests: a dbus-daemon listening at ROOT/run/dbus/, so
`Host(ROOT)` reaches it as it would a real system's bus (the kernel lab's iwd tests
and the host's agent tests use it; nothing touches the machine's own bus)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.lab.netns import stop_process, wait_for
from tests.needs import needs_tools

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


@contextlib.contextmanager
def private_system_bus(root: Path) -> Iterator[Path]:
    """Run a dbus-daemon for `root`; yields its socket, stops it afterwards."""
    needs_tools("dbus-daemon")
    socket_path = root / "run/dbus/system_bus_socket"
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    config = root / "run/dbus/zsn-test-bus.conf"
    config.write_text(CONFIG.format(socket=socket_path))
    process = subprocess.Popen(["dbus-daemon", "--nofork", f"--config-file={config}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # The socket file exists from bind(); a client is refused until listen(): a
        # daemon started in between (iwd) gives up on the bus and exits.
        wait_for(lambda: accepts(socket_path), 30, "the private dbus-daemon listening")
        yield socket_path
    finally:
        stop_process(process, grace=5)
        socket_path.unlink(missing_ok=True)


def accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
