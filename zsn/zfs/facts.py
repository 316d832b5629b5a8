"""What the advisor needs to know about the machine under the pools.

For each leaf vdev: the kernel block device behind its path (``/dev/disk/by-id/...``
and ``/dev/mapper/...`` are symlinks), the whole disk it is on, whether that disk
spins (``queue/rotational``), its physical sector size, its active I/O scheduler, and,
for a device-mapper crypt device, its cipher and the disks under it. Plus the module's
checksum/RAID-Z/AES implementations and the kernel's benchmarks of them, the CPU's
SIMD flags, RAM and the ARC limit, and each top-level vdev's ashift from the pool cache
file (`zsn.zfs.cachefile`). Everything is read under the host's root (sysfs, procfs and
that file); `dmsetup table` (root only, and only when a dm-crypt device exists) is run by
the caller, which hands its output in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zsn.errors import ParseError, ZsnError
from zsn.system import files
from zsn.system.host import Host
from zsn.system.limits import MiB
from zsn.zfs import cachefile, kstat
from zsn.zfs.disk_health import DiskReading
from zsn.zfs.disks import chain, kernel_name
from zsn.zfs.model import Pool

if TYPE_CHECKING:
    from zsn.zfs.scrubs import Schedules
from zsn.zfs.units import is_number

PARAMETER_MODULES = ("zfs", "zcommon", "icp")
"""2.2 moved every parameter to module zfs; 2.1 keeps some in zcommon and icp."""


@dataclass(frozen=True)
class Device:
    """The block device behind one leaf vdev."""

    path: str
    name: str
    """Kernel name: sda1, nvme0n1p2, dm-3, loop0."""
    disks: tuple[str, ...]
    """The whole disks it lives on (itself, its parent, or a dm device's slaves' disks)."""
    rotational: dict[str, bool] = field(default_factory=dict)
    physical_block_size: dict[str, int] = field(default_factory=dict)
    scheduler: dict[str, str] = field(default_factory=dict)
    """Per disk, the active scheduler (the bracketed word of queue/scheduler)."""
    dm_name: str | None = None
    crypt: bool = False
    """A dm-crypt device (uuid ``CRYPT-...``, or a ``crypt`` table)."""
    cipher: str | None = None
    """From `dmsetup table` (root only): ``aes-xts-plain64``, ``aes-cbc-essiv:sha256``."""

    @property
    def solid_state(self) -> bool | None:
        if not self.rotational:
            return None
        return not any(self.rotational.values())

    @property
    def spinning(self) -> bool | None:
        if not self.rotational:
            return None
        return all(self.rotational.values())


@dataclass(frozen=True)
class Choice:
    """A module parameter naming implementations, the one in use in brackets."""

    chosen: str | None
    names: tuple[str, ...]
    path: str
    """Where it is, to set it: /sys/module/MODULE/parameters/NAME."""


@dataclass(frozen=True)
class Facts:
    devices: dict[str, Device] = field(default_factory=dict)
    """Leaf vdev path -> its device (file vdevs and missing devices are absent)."""
    top_vdevs: tuple[cachefile.TopVdev, ...] = ()
    fletcher_bench: kstat.Bench | None = None
    raidz_bench: kstat.Bench | None = None
    choices: dict[str, Choice] = field(default_factory=dict)
    simd: dict[str, str] = field(default_factory=dict)
    cpu_flags: frozenset[str] = frozenset()
    memory: int | None = None
    arc_max_parameter: int | None = None
    arc_c_max: int | None = None
    now: float = 0.0
    notes: tuple[str, ...] = ()
    disks: DiskReading | None = None
    """The disks under the leaves and their SMART (`zsn.zfs.diskwatch`), when read."""
    schedules: Schedules | None = None
    """The pools' scrub and trim schedules (`zsn.zfs.scrubs`), when read."""


FACT_CAP = 4 * MiB
"""/proc/cpuinfo of a many-core machine is a few hundred KiB."""


def _read(host: Host, path: str) -> str | None:
    try:
        return files.read_text(host.path(path), FACT_CAP)
    except (OSError, ZsnError):
        return None


def active_scheduler(text: str) -> str | None:
    """``mq-deadline [none] bfq`` -> none; a lone word (some drivers) is that word."""
    chosen, names = kstat.parse_choice(text)
    return chosen or (names[0] if len(names) == 1 else None)


def device(host: Host, path: str, ciphers: dict[str, str]) -> Device | None:
    name = kernel_name(host, path)
    if name is None:
        return None
    dm_name = (_read(host, f"/sys/block/{name}/dm/name") or "").strip() or None
    uuid = (_read(host, f"/sys/block/{name}/dm/uuid") or "").strip()
    disks = list(chain(host, path).disks)
    rotational: dict[str, bool] = {}
    block_size: dict[str, int] = {}
    scheduler: dict[str, str] = {}
    for disk in dict.fromkeys(disks):
        queue = f"/sys/block/{disk}/queue"
        value = (_read(host, f"{queue}/rotational") or "").strip()
        if value in ("0", "1"):
            rotational[disk] = value == "1"
        size = (_read(host, f"{queue}/physical_block_size") or "").strip()
        if is_number(size):
            block_size[disk] = int(size)
        chosen = active_scheduler(_read(host, f"{queue}/scheduler") or "")
        if chosen:
            scheduler[disk] = chosen
    cipher = ciphers.get(dm_name) if dm_name else None
    return Device(path, name, tuple(dict.fromkeys(disks)), rotational, block_size, scheduler,
                  dm_name, crypt=uuid.startswith("CRYPT-") or cipher is not None, cipher=cipher)


def parse_dmsetup_table(text: str) -> dict[str, str]:
    """dm name -> cipher of its ``crypt`` target. Nothing else of a line is kept: the
    field after the cipher is the key (dmsetup prints zeros unless --showkeys)."""
    ciphers: dict[str, str] = {}
    for line in text.splitlines():
        name, colon, table = line.partition(": ")
        words = table.split()
        if colon and len(words) >= 4 and words[2] == "crypt":
            ciphers[name] = words[3]
    return ciphers


def leaf_paths(pools: list[Pool] | tuple[Pool, ...]) -> list[str]:
    return [vdev.name for pool in pools for vdev in pool.vdevs
            if vdev.is_leaf and vdev.name.startswith("/")]


def gather(host: Host, pools: list[Pool] | tuple[Pool, ...], *,
           dmsetup_output: str | None, now: float) -> Facts:
    notes: list[str] = []
    ciphers = parse_dmsetup_table(dmsetup_output) if dmsetup_output else {}
    devices = {}
    for path in leaf_paths(pools):
        found = device(host, path, ciphers)
        if found is not None:
            devices[path] = found
    if dmsetup_output is None and any(d.crypt for d in devices.values()):
        notes.append("dm-crypt members found, but their ciphers need root to read "
                     "(dmsetup table)")
    tops: tuple[cachefile.TopVdev, ...] = ()
    try:
        tops = tuple(cachefile.read(host))
    except ZsnError as exc:
        notes.append(f"per-vdev ashift unknown: {exc}")
    choices = {}
    for parameter in ("zfs_fletcher_4_impl", "zfs_vdev_raidz_impl", "icp_aes_impl",
                      "icp_gcm_impl"):
        for module in PARAMETER_MODULES:
            path = f"/sys/module/{module}/parameters/{parameter}"
            text = _read(host, path)
            if text is not None:
                choices[parameter] = Choice(*kstat.parse_choice(text), path=path)
                break
    return Facts(
        devices=devices, top_vdevs=tops,
        fletcher_bench=_bench(host, "fletcher_4_bench"),
        raidz_bench=_bench(host, "vdev_raidz_bench"),
        choices=choices, simd=kstat.parse_table(_read(host, "/proc/spl/kstat/zfs/simd") or ""),
        cpu_flags=_cpu_flags(_read(host, "/proc/cpuinfo") or ""),
        memory=_mem_total(_read(host, "/proc/meminfo") or ""),
        arc_max_parameter=_integer(_read(host, "/sys/module/zfs/parameters/zfs_arc_max")),
        arc_c_max=_integer(kstat.parse_table(
            _read(host, "/proc/spl/kstat/zfs/arcstats") or "").get("c_max")),
        now=now, notes=tuple(notes),
    )


def _bench(host: Host, name: str) -> kstat.Bench | None:
    text = _read(host, f"/proc/spl/kstat/zfs/{name}")
    if not text:
        return None
    try:
        return kstat.parse_bench(text)
    except ParseError:
        return None


def _cpu_flags(cpuinfo: str) -> frozenset[str]:
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def _mem_total(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            words = line.split()
            if len(words) >= 2 and is_number(words[1]):
                return int(words[1]) * 1024
    return None


def _integer(text: str | None) -> int | None:
    value = (text or "").strip()
    return int(value) if is_number(value) else None
