"""Which version of a package the host has installed, from the package manager's own
database under the host's root (so it works under ``--root`` too): dpkg's status file
(Debian, Ubuntu, Proxmox) or apk's (Alpine)."""

from __future__ import annotations

import re

from zsn.system import files
from zsn.system.host import Host

DPKG_STATUS = "/var/lib/dpkg/status"
APK_INSTALLED = "/lib/apk/db/installed"


def package_version(host: Host, package: str) -> tuple[int, ...] | None:
    """The installed version of `package` (dpkg's status, or Alpine's apk database), as
    numbers: ``0.11.4~rc1-1+b2`` is (0, 11, 4). None when neither knows it."""
    for database, name_field, version_field in ((DPKG_STATUS, "Package: ", "Version: "),
                                                (APK_INSTALLED, "P:", "V:")):
        path = host.path(database)
        if not files.exists(path):
            continue
        text = "\n" + files.read_tracked(path).text
        at = text.find(f"\n{name_field}{package}\n")
        if at < 0:
            continue
        end = text.find("\n\n", at + 1)
        record = text[at:end if end >= 0 else len(text)]
        version = next((line[len(version_field):] for line in record.splitlines()
                        if line.startswith(version_field)), "")
        numbers = re.match(r"(?:\d+:)?(\d+(?:\.\d+)*)", version)
        if numbers:
            return tuple(int(part) for part in numbers.group(1).split("."))
    return None
