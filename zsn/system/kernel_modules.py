"""Whether the running kernel has a feature: loaded, built in, or a module it can load.

Distribution kernels ship WireGuard, bonding, 8021q and the rest as modules that
nothing loads until first use (`ip link add ... type wireguard` loads its module),
so "not in /sys/module" does not mean "missing". Only files are read: asking the
kernel (a generic-netlink family lookup) would load the module as a side effect.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from zsn.errors import ZsnError
from zsn.system import files

MODULES_DIR = Path("/lib/modules")
SYSFS_MODULES = Path("/sys/module")
_INDEX_CAP = 8 * 1024 * 1024  # modules.dep is about 0.5 MB on a Debian kernel


def module_available(name: str, *, release: str | None = None,
                     modules_dir: Path = MODULES_DIR, sysfs: Path = SYSFS_MODULES) -> bool:
    """True when module `name` is loaded, built into the kernel, or installed for it.

    `name` as modprobe takes it; ``-`` and ``_`` are the same, as they are to modprobe.
    """
    canonical = name.replace("-", "_")
    if files.is_dir(sysfs / canonical):
        return True
    stem = "[-_]".join(re.escape(part) for part in re.split(r"[-_]", name))
    # A path as modules.dep ("kernel/.../NAME.ko: deps") and modules.builtin write it,
    # compressed (.ko.xz, .ko.zst) or not.
    pattern = re.compile(rf"(?:^|/){stem}\.ko(?:\.[a-z]+)?(?::|$)", re.MULTILINE)
    directory = modules_dir / (release or os.uname().release)
    for index in ("modules.builtin", "modules.dep"):
        try:
            text = files.read_bytes(directory / index, _INDEX_CAP).decode(errors="replace")
        except (ZsnError, OSError):
            continue
        if pattern.search(text):
            return True
    return False
