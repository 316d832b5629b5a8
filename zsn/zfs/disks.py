"""The disks under the pools: which disk each leaf vdev is on, and what that disk is.

A leaf vdev names a block device (``/dev/disk/by-id/ata-...-part1``, ``/dev/mapper/
luks-tank0``, ``/dev/sdc``); `chain` follows it down through the layers the kernel shows
in sysfs (a partition to its disk; a device-mapper device to its ``slaves``: dm-crypt,
LVM, linear, delay ...; an md array to its members) to the whole disks it lives on. A
dm-multipath device is itself the disk (one disk reached by several paths, its
``slaves``): SMART is read through its first path. Each disk is described from sysfs
and udev's ``/dev/disk/by-id`` names alone (no program, no root): model, serial, WWN,
capacity, rotational or not, its transport and controller, and whether the kernel has
put it to sleep (runtime power management: reading it would wake it).

Everything is read under the host's root (``--root`` trees, tests).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Literal, NamedTuple

from zsn.errors import ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.zfs.smart import SMARTCTL_TYPES

SYSFS_CAP = 4096
MAX_DEPTH = 8
"""Layers followed below a leaf (a dm device over a dm device ...)."""
BY_ID = "/dev/disk/by-id"
MAX_BY_ID_LINKS = 4096
"""More links than this in /dev/disk/by-id are not read (a folder someone filled)."""
BY_ID_PREFERENCE = ("ata-", "nvme-", "scsi-SATA_", "scsi-3", "scsi-", "usb-", "wwn-",
                    "dm-uuid-mpath-", "nvme-eui.", "nvme-nvme.", "virtio-", "mmc-", "dm-name-")
"""The by-id name shown for a disk: the first kind it has (model and serial first, the
way OpenZFS's docs ask pools to be made), the shortest of that kind."""
_PCI_RE = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
NO_SMART = ("loop", "zram", "ram", "md", "vd", "xvd", "mmcblk", "nbd", "rbd", "sr")
"""Kernel names of devices that have no SMART to read."""

LayerKind = Literal["partition", "crypt", "lvm", "dm", "md", "loop", "multipath", "disk"]


class Layer(NamedTuple):
    kind: LayerKind
    name: str
    """Kernel name: sda1, dm-3, md0 ..."""
    label: str = ""
    """What it is to a person: ``luks-tank0 (dm-crypt)``, ``loop0 → /run/vdev/a``."""


class Disk(NamedTuple):
    """A whole disk, as sysfs and udev describe it."""

    name: str
    """Kernel name: sda, nvme0n1, or dm-4 for a multipath disk."""
    transport: str | None = None
    """nvme, sata, sas, scsi, usb, virtio ... (None: unknown)."""
    by_id: str | None = None
    """``/dev/disk/by-id/NAME`` udev made for it (preferred kind, see BY_ID_PREFERENCE)."""
    model: str | None = None
    serial: str | None = None
    wwid: str | None = None
    """The kernel's world-wide id (``naa.5000c500...``, ``eui...``, ``t10.ATA ...``)."""
    capacity: int | None = None
    """Bytes."""
    rotational: bool | None = None
    controller: str | None = None
    """The PCI address of its controller (``0000:00:1f.2``); NVMe: its own."""
    paths: tuple[str, ...] = ()
    """A multipath disk's path devices (sdc, sdd); else empty."""
    runtime_suspended: bool = False
    """The kernel has put it to sleep (runtime PM): any command would wake it."""

    @property
    def key(self) -> str:
        """What names the disk in zsn's state across renames (sda today, sdb after a
        reboot): its world-wide id, else its serial, else its by-id name."""
        return self.wwid or (f"serial:{self.serial}" if self.serial else None) \
            or self.by_id or self.name

    @property
    def smart_device(self) -> str | None:
        """What smartctl opens: the disk, a multipath disk's first path, an NVMe
        namespace's controller."""
        name = self.paths[0] if self.paths else self.name
        if any(name.startswith(prefix) for prefix in NO_SMART):
            return None
        found = re.fullmatch(r"(nvme\d+)n\d+", name)
        return f"/dev/{found.group(1)}" if found else f"/dev/{name}"

    @property
    def smart_type(self) -> str | None:
        """smartctl's ``-d`` type for it; None: no SMART to read (loop, virtio ...)."""
        if self.smart_device is None:
            return None
        return SMARTCTL_TYPES.get(self.transport or "")


class LeafChain(NamedTuple):
    """A leaf vdev and what lies under it."""

    leaf: str
    layers: tuple[Layer, ...] = ()
    """From the leaf's own device down, the disks last."""
    disks: tuple[str, ...] = ()
    """Kernel names of the whole disks (keys of `DiskMap.disks`)."""
    note: str = ""
    """Why there is no disk: a file vdev, a device that is gone."""


class DiskMap(NamedTuple):
    disks: dict[str, Disk]
    leaves: dict[str, LeafChain]
    """By leaf vdev name (the path `zpool status -P` prints)."""


def _read(host: Host, path: str) -> str | None:
    try:
        return files.read_text(host.path(path), SYSFS_CAP).strip()
    except (OSError, ZsnError, UnicodeDecodeError):
        return None


def _entries(host: Host, path: str) -> list[str]:
    try:
        return [entry.name for entry in files.list_files(host.path(path))]
    except (OSError, ZsnError):
        return []


MAX_LINKS = 16


def follow_links(host: Host, path: str) -> str:
    """`path` with the links it ends in followed, as the system spells it (udev's
    ``/dev/disk/by-id/NAME`` -> ``/dev/sda1``, ``/sys/block/sda`` -> its place under
    ``/sys/devices``): on the live system as under ``--root``, where `Host.resolve`
    alone leaves a live path as it is."""
    current = os.path.normpath(path)
    for _ in range(MAX_LINKS):
        place = host.path(current)
        if not files.is_link(place):
            return current
        target = files.read_link(place)
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    return current


def kernel_name(host: Host, path: str) -> str | None:
    """The kernel name of the block device `path` names (udev's links followed inside
    the root), when sysfs has it."""
    if not path.startswith("/dev/"):
        return None
    try:
        name = os.path.basename(follow_links(host, path))
        return name if files.exists(host.path(f"/sys/class/block/{name}")) else None
    except (OSError, ZsnError):
        return None


def whole_disk(host: Host, name: str) -> str:
    """The disk a partition is on (sda1 -> sda); a disk is its own."""
    if files.exists(host.path(f"/sys/block/{name}")):
        return name
    for disk in _entries(host, "/sys/block"):
        if files.is_dir(host.path(f"/sys/block/{disk}/{name}")):
            return disk
    return name


def slaves(host: Host, name: str) -> list[str]:
    """The devices under a device-mapper device or an md array."""
    return _entries(host, f"/sys/block/{name}/slaves")


def chain(host: Host, leaf: str) -> LeafChain:
    """What lies under the leaf vdev `leaf`, down to its whole disks."""
    if not leaf.startswith("/dev/"):
        return LeafChain(leaf, note="a file vdev: no disk of its own" if leaf.startswith("/")
                         else "")
    name = kernel_name(host, leaf)
    if name is None:
        return LeafChain(leaf, note="no such device now")
    layers: list[Layer] = []
    disks: list[str] = []
    _descend(host, name, layers, disks, 0)
    return LeafChain(leaf, tuple(layers), tuple(dict.fromkeys(disks)))


def _descend(host: Host, name: str, layers: list[Layer], disks: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    uuid = _read(host, f"/sys/block/{name}/dm/uuid") or ""
    dm_name = _read(host, f"/sys/block/{name}/dm/name")
    below = slaves(host, name)
    if uuid.startswith("mpath-"):
        layers.append(Layer("multipath", name, f"{dm_name or name} (multipath, "
                                                f"{len(below)} path{'s' * (len(below) != 1)})"))
        disks.append(name)
        return
    if dm_name is not None:
        kind: LayerKind = "dm"
        what = "device-mapper"
        if uuid.startswith("CRYPT-"):
            # cryptsetup's uuids: CRYPT-LUKS2-<uuid>-<name>, CRYPT-PLAIN-<name>
            kind, what = "crypt", f"dm-crypt {uuid.split('-')[1]}".strip()
        elif uuid.startswith("LVM-"):
            kind, what = "lvm", "LVM"
        elif re.match(r"part\d+-", uuid):
            kind, what = "partition", "partition"
        layers.append(Layer(kind, name, f"{dm_name} ({what})"))
        for slave in below:
            _descend(host, slave, layers, disks, depth + 1)
        return
    if files.is_dir(host.path(f"/sys/block/{name}/md")):
        layers.append(Layer("md", name, f"{name} (md)"))
        for slave in below:
            _descend(host, slave, layers, disks, depth + 1)
        return
    backing = _read(host, f"/sys/block/{name}/loop/backing_file")
    if backing is not None:  # the loop device stands for its file's disk: not looked up
        layers.append(Layer("loop", name, f"{name} → {backing}"))
        disks.append(name)
        return
    disk = whole_disk(host, name)
    if disk != name:
        layers.append(Layer("partition", name, name))
        _descend(host, disk, layers, disks, depth + 1)
        return
    layers.append(Layer("disk", name, name))
    disks.append(name)


def by_id_names(host: Host) -> dict[str, list[str]]:
    """Kernel name -> the names udev gave it under /dev/disk/by-id."""
    found: dict[str, list[str]] = {}
    try:
        links = files.list_files(host.path(BY_ID))
    except (OSError, ZsnError):
        return found
    for link in links[:MAX_BY_ID_LINKS]:
        try:
            target = files.read_link(link)
        except (OSError, ZsnError):
            continue
        found.setdefault(os.path.basename(target), []).append(link.name)
    return found


def preferred_by_id(names: Iterable[str]) -> str | None:
    """The by-id name to show (see `BY_ID_PREFERENCE`)."""
    def rank(name: str) -> tuple[int, int, str]:
        matching = [prefix for prefix in BY_ID_PREFERENCE if name.startswith(prefix)]
        # the most specific prefix names the kind: nvme-eui.X is not an nvme-MODEL_SERIAL
        kind = (BY_ID_PREFERENCE.index(max(matching, key=len)) if matching
                else len(BY_ID_PREFERENCE))
        return kind, len(name), name

    chosen = min(names, key=rank, default=None)
    return f"{BY_ID}/{chosen}" if chosen is not None else None


def transport(host: Host, name: str, system_path: str) -> str | None:
    """How the disk is attached, from where sysfs puts it."""
    if name.startswith("nvme"):
        return "nvme"
    if name.startswith(("vd", "xvd")):
        return "virtio" if name.startswith("vd") else "xen"
    if name.startswith("mmcblk"):
        return "mmc"
    if "/usb" in system_path:
        return "usb"
    if name.startswith("sd"):
        if _read(host, f"/sys/block/{name}/device/vendor") == "ATA" or "/ata" in system_path:
            return "sata"
        if files.exists(host.path(f"/sys/block/{name}/device/sas_address")):
            return "sas"
        return "scsi"
    return None


def _system_path(host: Host, path: str) -> str:
    """`path` with its links followed (inside the root), as the system spells it."""
    try:
        return follow_links(host, path)
    except (OSError, ZsnError):
        return path


def controller(system_path: str) -> str | None:
    """The last PCI address on the disk's sysfs path: its controller."""
    found = _PCI_RE.findall(system_path)
    return found[-1] if found else None


def parse_vpd_serial(data: bytes) -> str | None:
    """The serial number in a SCSI Unit Serial Number VPD page (0x80): a 4-byte header
    whose last byte is the length, then the serial, padded with spaces."""
    if len(data) < 4 or data[1] != 0x80:
        return None
    length = data[3]
    serial = data[4:4 + length].decode("ascii", "replace").strip(" \x00")
    return serial if serial.isprintable() and serial else None


def describe(host: Host, name: str, by_id: dict[str, list[str]]) -> Disk:
    """The disk `name` from sysfs (and its by-id names)."""
    system_path = _system_path(host, f"/sys/block/{name}")
    device = f"/sys/block/{name}/device"
    paths: tuple[str, ...] = ()
    uuid = _read(host, f"/sys/block/{name}/dm/uuid") or ""
    if uuid.startswith("mpath-"):
        paths = tuple(slaves(host, name))
        first = paths[0] if paths else None
        if first is not None:
            base = describe(host, first, by_id)
            return base._replace(name=name, by_id=preferred_by_id(by_id.get(name, []))
                                 or base.by_id, paths=paths,
                                 wwid=base.wwid or uuid.removeprefix("mpath-"),
                                 runtime_suspended=any(_suspended(host, path)
                                                       for path in paths))
    model = _read(host, f"{device}/model")
    serial = _read(host, f"{device}/serial")
    if serial is None:
        try:
            serial = parse_vpd_serial(files.read_bytes(host.path(f"{device}/vpd_pg80"),
                                                       SYSFS_CAP))
        except (OSError, ZsnError):
            serial = None
    wwid = _read(host, f"/sys/block/{name}/wwid") or _read(host, f"{device}/wwid")
    size = _read(host, f"/sys/block/{name}/size")
    rotational = _read(host, f"/sys/block/{name}/queue/rotational")
    return Disk(
        name=name, transport=transport(host, name, system_path),
        by_id=preferred_by_id(by_id.get(name, [])),
        model=" ".join(model.split()) if model else None, serial=serial or None,
        wwid=" ".join(wwid.split()) if wwid else None,
        capacity=int(size) * 512 if size and size.isascii() and size.isdigit() else None,
        rotational={"1": True, "0": False}.get(rotational or ""),
        controller=controller(system_path), paths=paths,
        runtime_suspended=_suspended(host, name))


def _suspended(host: Host, name: str) -> bool:
    return _read(host, f"/sys/block/{name}/device/power/runtime_status") == "suspended"


def read_map(host: Host, leaves: Iterable[str]) -> DiskMap:
    """Every leaf's chain and every disk under them."""
    chains = {leaf: chain(host, leaf) for leaf in dict.fromkeys(leaves)}
    names = {disk for found in chains.values() for disk in found.disks}
    by_id = by_id_names(host) if names else {}
    return DiskMap({name: describe(host, name, by_id) for name in sorted(names)}, chains)


def suspended_now(host: Host, disk: Disk) -> bool:
    """Whether the kernel has the disk asleep right now (read fresh before each SMART
    read: a disk may go to sleep between two reads of the map)."""
    return any(_suspended(host, name) for name in (disk.paths or (disk.name,)))
