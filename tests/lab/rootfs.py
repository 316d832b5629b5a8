"""A debootstrapped Debian bookworm rootfs with systemd, cached between runs.

Building it takes about a minute from the Debian mirror; the result is kept under
`CACHE_DIR` and reused read-only as the lower layer of every container (each test
boots an overlay copy, so no run sees another's leftovers). A `.complete` marker is
written last, so a build cut short is rebuilt rather than used half-made.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

CACHE_DIR = Path("/var/cache/zsn-lab")
# Bump the version when the package list changes so old caches are not reused.
ROOTFS_NAME = "bookworm-openvpn-wireguard-v3"
PACKAGES = (
    "systemd", "systemd-sysv", "dbus", "systemd-resolved", "openvpn", "iproute2",
    "wireguard-tools", "wireguard-go",  # wg-quick@.service, userspace WireGuard
    "nftables",  # the access rules a wg-quick@ unit's PostUp loads
)
MIRROR = "http://deb.debian.org/debian"


def rootfs_path() -> Path:
    return CACHE_DIR / ROOTFS_NAME


def ensure_rootfs(timeout: float = 280) -> Path:
    """The cached rootfs, built first when missing. Safe against concurrent builders.

    The build's timeout stays under pytest's per-test limit (300 s) so a slow mirror
    fails with debootstrap's own message rather than a bare pytest timeout."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    target = rootfs_path()
    with open(CACHE_DIR / f"{ROOTFS_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target
        if target.exists():
            shutil.rmtree(target)
        subprocess.run(
            [
                "debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
                "bookworm", str(target), MIRROR,
            ],
            check=True, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        # A persistent journal, so `journalctl --root` on the host can read the
        # container's unit logs (a volatile one lives in the container's private /run).
        (target / "var/log/journal").mkdir(parents=True, exist_ok=True)
        (target / "etc/machine-id").write_text("")
        (target / "etc/hostname").write_text("zov-lab\n")
        (target / ".complete").write_text("ok\n")
    return target


if __name__ == "__main__":
    print(ensure_rootfs())
