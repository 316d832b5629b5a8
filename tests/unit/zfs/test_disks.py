"""Leaf vdevs followed down to their disks, and the disks described, from sysfs trees
built here in a real /sys's layout (links from /sys/block into /sys/devices, dm's
``dm/name`` and ``dm/uuid``, ``slaves/``, ``device/model`` ...; the kernel lab's
captures in tests/fixtures/zfs-disks-lab/sysfs-*.txt show the same files): constructed
inputs, as in test_advisor. The lab (tests/kernel/test_zfs.py) maps real ones."""

from __future__ import annotations

import os
from pathlib import Path

from zsn.system.host import Host
from zsn.zfs import disks

AHCI = "devices/pci0000:00/0000:00:1f.2/ata{port}/host{port}/target{port}:0:0/{port}:0:0:0"
NVME = "devices/pci0000:00/0000:00:04.0/nvme/{controller}"


def link(root: Path, path: str, target: str) -> None:
    where = root / path.lstrip("/")
    where.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, where)


def write(root: Path, path: str, text: str) -> None:
    where = root / path.lstrip("/")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(text)


def block(root: Path, name: str, parent: str, *, size: int = 262144, rotational: int = 1,
          partitions: tuple[str, ...] = (), device: dict[str, str] | None = None) -> None:
    """A disk at /sys/devices/PARENT/block/NAME, linked from /sys/block and
    /sys/class/block, its partitions inside its folder."""
    real = f"/sys/{parent}/block/{name}"
    write(root, f"{real}/size", f"{size}\n")
    write(root, f"{real}/queue/rotational", f"{rotational}\n")
    for key, value in (device or {}).items():
        write(root, f"/sys/{parent}/{key}", f"{value}\n")
    if device is not None:
        link(root, f"{real}/device", f"../../../{parent.rsplit('/', 1)[-1]}")
    link(root, f"/sys/block/{name}", f"..{real.removeprefix('/sys')}")
    link(root, f"/sys/class/block/{name}", f"../..{real.removeprefix('/sys')}")
    for part in partitions:
        write(root, f"{real}/{part}/partition", "1\n")
        link(root, f"/sys/class/block/{part}", f"../..{real.removeprefix('/sys')}/{part}")


def mapped(root: Path, dm: str, name: str, uuid: str, slaves: tuple[str, ...]) -> None:
    real = f"/sys/devices/virtual/block/{dm}"
    write(root, f"{real}/dm/name", f"{name}\n")
    write(root, f"{real}/dm/uuid", f"{uuid}\n")
    write(root, f"{real}/size", "262144\n")
    (root / real.lstrip("/") / "slaves").mkdir()
    for slave in slaves:
        (root / real.lstrip("/") / "slaves" / slave).mkdir()
    link(root, f"/sys/block/{dm}", f"../devices/virtual/block/{dm}")
    link(root, f"/sys/class/block/{dm}", f"../../devices/virtual/block/{dm}")
    link(root, f"/dev/mapper/{name}", f"../{dm}")


def machine(root: Path) -> Host:
    """sda (SATA HDD, partition sda1 under dm-crypt), nvme0n1 (partition p1), sdb and sdc:
    two paths to one SAS disk under multipath, by-id links as udev makes them."""
    block(root, "sda", AHCI.format(port=1), size=3907029168, partitions=("sda1",),
          device={"model": "WDC WD20EFRX-68EUZN0", "vendor": "ATA", "wwid":
                  "t10.ATA     WDC WD20EFRX-68EUZN0                    WD-WCC4M0001"})
    write(root, f"/sys/{AHCI.format(port=1)}/block/sda/device/vpd_pg80", "")
    (root / f"sys/{AHCI.format(port=1)}/vpd_pg80").write_bytes(
        b"\x00\x80\x00\x14" + b"     WD-WCC4M0001".ljust(20))
    mapped(root, "dm-0", "luks-tank0", "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-luks-tank0",
           ("sda1",))
    block(root, "nvme0n1", f"{NVME.format(controller='nvme0')}", size=488397168, rotational=0,
          partitions=("nvme0n1p1",),
          device={"model": "Samsung SSD 970 EVO Plus 250GB", "serial": "S4EUNX0N123456"})
    write(root, "/sys/block/nvme0n1/wwid", "eui.0025385391b1234\n")
    sas = "devices/pci0000:00/0000:00:05.0/host2/port-2:0/end_device-2:0/target2:0:0/2:0:0:0"
    sas2 = "devices/pci0000:00/0000:00:05.0/host2/port-2:1/end_device-2:1/target2:0:1/2:0:1:0"
    for name, parent in (("sdb", sas), ("sdc", sas2)):
        block(root, name, parent, size=1172123568,
              device={"model": "H109060SESUN600G", "vendor": "HITACHI",
                      "sas_address": "0x5000cca01612345d", "wwid": "naa.5000cca01612345c"})
    mapped(root, "dm-1", "mpatha", "mpath-35000cca01612345c", ("sdb", "sdc"))
    for name, target in (("ata-WDC_WD20EFRX-68EUZN0_WD-WCC4M0001", "sda"),
                         ("ata-WDC_WD20EFRX-68EUZN0_WD-WCC4M0001-part1", "sda1"),
                         ("wwn-0x50014ee0499602d2", "sda"),
                         ("nvme-Samsung_SSD_970_EVO_Plus_250GB_S4EUNX0N123456", "nvme0n1"),
                         ("nvme-eui.0025385391b1234", "nvme0n1"),
                         ("nvme-Samsung_SSD_970_EVO_Plus_250GB_S4EUNX0N123456-part1",
                          "nvme0n1p1"),
                         ("dm-uuid-mpath-35000cca01612345c", "dm-1"),
                         ("dm-name-mpatha", "dm-1")):
        link(root, f"/dev/disk/by-id/{name}", f"../../{target}")
    return Host(root)


def test_each_leaf_maps_through_its_layers_to_its_disk(tmp_path: Path) -> None:
    host = machine(tmp_path)
    leaves = ["/dev/mapper/luks-tank0",
              "/dev/disk/by-id/nvme-Samsung_SSD_970_EVO_Plus_250GB_S4EUNX0N123456-part1",
              "/dev/mapper/mpatha", "/run/vdev/a", "/dev/sdz"]
    found = disks.read_map(host, leaves)
    crypt = found.leaves["/dev/mapper/luks-tank0"]
    assert [(layer.kind, layer.name) for layer in crypt.layers] == [
        ("crypt", "dm-0"), ("partition", "sda1"), ("disk", "sda")]
    assert crypt.layers[0].label == "luks-tank0 (dm-crypt LUKS2)" and crypt.disks == ("sda",)
    nvme = found.leaves[leaves[1]]
    assert [layer.kind for layer in nvme.layers] == ["partition", "disk"]
    assert nvme.disks == ("nvme0n1",)
    multipath = found.leaves["/dev/mapper/mpatha"]
    assert [layer.label for layer in multipath.layers] == ["mpatha (multipath, 2 paths)"]
    assert multipath.disks == ("dm-1",)
    assert found.leaves["/run/vdev/a"].note == "a file vdev: no disk of its own"
    assert found.leaves["/dev/sdz"].note == "no such device now"
    assert sorted(found.disks) == ["dm-1", "nvme0n1", "sda"]


def test_the_disks_are_described_from_sysfs_and_udev(tmp_path: Path) -> None:
    found = disks.read_map(machine(tmp_path), ["/dev/mapper/luks-tank0", "/dev/mapper/mpatha",
                                               "/dev/nvme0n1p1"]).disks
    sata = found["sda"]
    assert (sata.transport, sata.model, sata.serial, sata.capacity, sata.rotational) == (
        "sata", "WDC WD20EFRX-68EUZN0", "WD-WCC4M0001", 3907029168 * 512, True)
    assert sata.by_id == "/dev/disk/by-id/ata-WDC_WD20EFRX-68EUZN0_WD-WCC4M0001"
    assert sata.controller == "0000:00:1f.2"
    assert sata.wwid == "t10.ATA WDC WD20EFRX-68EUZN0 WD-WCC4M0001"
    assert (sata.smart_device, sata.smart_type) == ("/dev/sda", "sat")
    nvme = found["nvme0n1"]
    assert (nvme.transport, nvme.rotational, nvme.serial, nvme.controller) == (
        "nvme", False, "S4EUNX0N123456", "0000:00:04.0")
    assert (nvme.smart_device, nvme.smart_type) == ("/dev/nvme0", "nvme")
    assert nvme.by_id == "/dev/disk/by-id/nvme-Samsung_SSD_970_EVO_Plus_250GB_S4EUNX0N123456"
    assert nvme.key == "eui.0025385391b1234"
    multipath = found["dm-1"]
    assert (multipath.paths, multipath.transport, multipath.model) == (
        ("sdb", "sdc"), "sas", "H109060SESUN600G")
    assert (multipath.smart_device, multipath.smart_type) == ("/dev/sdb", "scsi")
    assert multipath.by_id == "/dev/disk/by-id/dm-uuid-mpath-35000cca01612345c"
    assert multipath.key == "naa.5000cca01612345c"


def test_a_disk_the_kernel_put_to_sleep_is_seen(tmp_path: Path) -> None:
    host = machine(tmp_path)
    write(tmp_path, f"/sys/{AHCI.format(port=1)}/power/runtime_status", "suspended\n")
    sata = disks.read_map(host, ["/dev/mapper/luks-tank0"]).disks["sda"]
    assert sata.runtime_suspended and disks.suspended_now(host, sata)


def test_scsi_serial_pages() -> None:
    assert disks.parse_vpd_serial(b"\x00\x80\x00\x0c  Z4028VRY   ") == "Z4028VRY"
    assert disks.parse_vpd_serial(b"\x00\x83\x00\x04abcd") is None
    assert disks.parse_vpd_serial(b"\x00\x80") is None
    assert disks.parse_vpd_serial(b"\x00\x80\x00\x03\x1b[2") is None
