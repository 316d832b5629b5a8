"""The advisor: system facts read under a root, and each rule firing and staying quiet.

Pools, datasets, benchmarks and pool configs (as `zdb -C` printed them) are real
captures. Block-device facts come from small sysfs trees built here in the layout and
value formats of a real /sys (as captured in tests/fixtures/zfs-lab/sys-block-*.txt):
they are constructed inputs."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.zfs.conftest import LAB, OTHERS, VM, read
from tests.unit.zfs.zdb_text import nvlist_of
from zsn.system.host import Host
from zsn.zfs import cachefile, kstat, listing, status
from zsn.zfs.facts import Choice, Device, Facts, gather, parse_dmsetup_table
from zsn.zfs.lint import RULES, advise, guess_use
from zsn.zfs.model import Dataset, Pool, ZfsSnapshot

DAY = 86400.0
SCRUBBED = 1795367000.0  # about the lab's scrub captures (Nov 24 2026)


def disk(root: Path, name: str, *, rotational: int, block: int = 512,
         scheduler: str = "[none] mq-deadline", partitions: tuple[str, ...] = ()) -> None:
    queue = root / f"sys/block/{name}/queue"
    queue.mkdir(parents=True)
    (queue / "rotational").write_text(f"{rotational}\n")
    (queue / "physical_block_size").write_text(f"{block}\n")
    (queue / "scheduler").write_text(f"{scheduler}\n")
    (root / f"sys/class/block/{name}").mkdir(parents=True)
    for part in partitions:
        (root / f"sys/block/{name}/{part}").mkdir()
        (root / f"sys/block/{name}/{part}/partition").write_text("1\n")
        (root / f"sys/class/block/{part}").mkdir(parents=True)


def link(root: Path, path: str, target: str) -> None:
    where = root / path.lstrip("/")
    where.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, where)


def crypt(root: Path, dm: str, name: str, slave: str) -> None:
    base = root / f"sys/block/{dm}"
    (base / "dm").mkdir(parents=True)
    (base / "dm/name").write_text(f"{name}\n")
    (base / "dm/uuid").write_text(f"CRYPT-LUKS2-0123456789abcdef-{name}\n")
    (base / "slaves").mkdir()
    (base / f"slaves/{slave}").mkdir()
    (root / f"sys/class/block/{dm}").mkdir(parents=True)
    link(root, f"/dev/mapper/{name}", f"../{dm}")


def pool_of(text: str, name: str) -> Pool:
    return next(p for p in status.parse_text(text) if p.name == name)


def vm_snapshot() -> ZfsSnapshot:
    """The lab's tank (ashift 12, lz4, atime off, xattr sa) and small (ashift 9, 2.1's
    defaults) after the replace, as zsn reads them."""
    columns = ("name", "used", "available", "referenced", "compressratio", "recordsize",
               "compression", "atime", "xattr", "mountpoint")
    datasets = listing.parse_datasets_text(read(VM / "zfs-list-Hp-o.txt"), columns)
    pools = status.parse_text(read(VM / "zpool-status.all-pools.txt"))
    return ZfsSnapshot(pools=tuple(pools), datasets=tuple(datasets))


def ids(findings: list) -> list[tuple[str, str | None]]:  # type: ignore[type-arg]
    return sorted((f.id, f.subject) for f in findings)


def test_every_rule_names_its_source_and_a_command() -> None:
    assert sorted(RULES) == [f"ZFS{n:03d}" for n in range(1, 25)]


def test_device_facts_follow_by_id_links_partitions_and_dm_crypt(tmp_path: Path) -> None:
    disk(tmp_path, "sda", rotational=1, block=4096, scheduler="mq-deadline [bfq] none",
         partitions=("sda1",))
    disk(tmp_path, "nvme0n1", rotational=0, partitions=("nvme0n1p1",))
    link(tmp_path, "/dev/disk/by-id/nvme-Samsung_SSD-part1", "../../nvme0n1p1")
    crypt(tmp_path, "dm-0", "crypt-a", "sda1")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text("MemTotal:        2012124 kB\n")
    status_text = ("  pool: tank\n state: ONLINE\nconfig:\n\n"
                   "\tNAME                              STATE     READ WRITE CKSUM\n"
                   "\ttank                              ONLINE       0     0     0\n"
                   "\t  mirror-0                        ONLINE       0     0     0\n"
                   "\t    /dev/mapper/crypt-a           ONLINE       0     0     0\n"
                   "\t    /dev/disk/by-id/nvme-Samsung_SSD-part1  ONLINE       0     0     0\n\n"
                   "errors: No known data errors\n")
    pools = status.parse_text(status_text)
    dmsetup = read(LAB / "dmsetup-table.crypt.txt").replace("zcr-cbc", "crypt-a")
    facts = gather(Host(tmp_path), pools, dmsetup_output=dmsetup, now=0)
    hdd = facts.devices["/dev/mapper/crypt-a"]
    assert (hdd.name, hdd.dm_name, hdd.disks, hdd.spinning, hdd.scheduler) == (
        "dm-0", "crypt-a", ("sda",), True, {"sda": "bfq"})
    assert hdd.physical_block_size == {"sda": 4096}
    assert hdd.crypt and hdd.cipher == "aes-cbc-essiv:sha256"
    ssd = facts.devices["/dev/disk/by-id/nvme-Samsung_SSD-part1"]
    assert (ssd.name, ssd.disks, ssd.solid_state, ssd.crypt) == (
        "nvme0n1p1", ("nvme0n1",), True, False)
    assert facts.memory == 2012124 * 1024
    found = advise(ZfsSnapshot(pools=tuple(pools)), facts)
    assert ids(found) == [("ZFS003", "tank"), ("ZFS010", "tank"), ("ZFS011", "tank")]
    mixed = next(f for f in found if f.id == "ZFS003")
    assert "mirror-0 mixes solid-state (/dev/disk/by-id/nvme-Samsung_SSD-part1)" in \
        mixed.message
    luks = next(f for f in found if f.id == "ZFS010")
    assert luks.fix.startswith("cryptsetup reencrypt --cipher aes-xts-plain64")
    assert luks.source and luks.source.startswith("field note 002")
    elevator = next(f for f in found if f.id == "ZFS011")
    assert elevator.severity == "warning" and "/dev/sda (under /dev/mapper/crypt-a)" in \
        elevator.message
    # without root the cipher is unknown: a note, no finding
    blind = gather(Host(tmp_path), pools, dmsetup_output=None, now=0)
    assert "need root" in blind.notes[0]
    assert "ZFS010" not in {f.id for f in advise(ZfsSnapshot(pools=tuple(pools)), blind)}


def test_dmsetup_tables_keep_only_the_cipher() -> None:
    ciphers = parse_dmsetup_table(read(LAB / "dmsetup-table.crypt.txt"))
    assert ciphers == {"zcr-cbc": "aes-cbc-essiv:sha256", "zcr-xts": "aes-xts-plain64"}


def test_a_pool_made_by_the_notes_advice_is_quiet() -> None:
    snapshot = vm_snapshot()
    tops = cachefile.top_vdevs(nvlist_of(read(VM / "zdb-C.tank.txt")))
    facts = Facts(top_vdevs=tuple(tops), now=SCRUBBED + DAY)
    assert [f for f in advise(snapshot, facts) if f.subject and f.subject.startswith("tank")] \
        == []


def test_ashift_9_and_2_1_defaults_fire() -> None:
    snapshot = vm_snapshot()
    tops = cachefile.top_vdevs(nvlist_of(read(VM / "zdb-C.small.txt")))
    found = advise(snapshot, Facts(top_vdevs=tuple(tops), now=SCRUBBED + DAY))
    assert ids(found) == [("ZFS001", "small"), ("ZFS004", "small"), ("ZFS005", "small"),
                          ("ZFS006", "small")]
    ashift = found[0]
    assert ashift.severity == "info"  # a file vdev: no sign of 4K or SSD media
    assert "ashift=9 (512 B blocks)" in ashift.message
    assert all(f.source and f.source.startswith("field note 001") for f in found)
    assert next(f for f in found if f.id == "ZFS004").fix == \
        "zfs set compression=lz4 small (new writes only)"


def test_ashift_9_on_solid_state_is_a_warning() -> None:
    snapshot = vm_snapshot()
    [small] = cachefile.top_vdevs(nvlist_of(read(VM / "zdb-C.small.txt")))
    ssd = Device("/run/vdev/small.img", "loop0", ("loop0",), {"loop0": False})
    facts = Facts(devices={"/run/vdev/small.img": ssd},
                  top_vdevs=(replace(small, leaves=("/run/vdev/small.img",)),), now=0)
    [finding] = [f for f in advise(snapshot, facts) if f.id == "ZFS001"]
    assert finding.severity == "warning" and "solid-state members" in finding.message


def test_a_block_size_note_in_status_is_an_ashift_finding() -> None:
    text = read(VM / "zpool-status-p-P.healthy.txt").replace(
        "disk-a  ONLINE       0     0     0",
        "disk-a  ONLINE       0     0     0  block size: 512B configured, 4096B native")
    found = advise(ZfsSnapshot(pools=(pool_of(text, "tank"),)), Facts(now=0))
    assert [(f.id, f.severity) for f in found] == [("ZFS001", "warning")]


def test_kernel_names_fire_and_by_id_names_do_not() -> None:
    spare = pool_of(read(OTHERS / "zpool-status-healthy-4mirror-spare.jc.txt"), "tank")
    by_id = pool_of(read(OTHERS / "zpool-status-healthy-2mirror-features.jc.txt"), "pool1")
    found = advise(ZfsSnapshot(pools=(spare, by_id)), Facts(now=0))
    assert [(f.id, f.subject) for f in found if f.id == "ZFS002"] == [("ZFS002", "tank")]
    assert "sdh, sdk, sdl, sdj ..." in found[0].message
    assert found[0].fix == "zpool export tank && zpool import -d /dev/disk/by-id tank"


def test_stale_scrubs() -> None:
    tank = pool_of(read(VM / "zpool-status-p-P.scrub-finished.txt"), "tank")
    assert tank.scan is not None and tank.scan.ended is not None
    fresh = Facts(now=tank.scan.ended + 34 * DAY)
    stale = Facts(now=tank.scan.ended + 36 * DAY)
    assert advise(ZfsSnapshot(pools=(tank,)), fresh) == []
    [finding] = advise(ZfsSnapshot(pools=(tank,)), stale)
    assert (finding.id, finding.fix) == ("ZFS012", "zpool scrub tank")
    assert "36d 00h ago" in finding.message
    never = pool_of(read(VM / "zpool-status-p-P.healthy.txt"), "tank")
    root = Dataset("tank", "filesystem", created=int(SCRUBBED))
    young = ZfsSnapshot(pools=(never,), datasets=(root._replace(compression="lz4"),))
    assert advise(young, Facts(now=SCRUBBED + DAY)) == []
    assert [f.id for f in advise(young, Facts(now=SCRUBBED + 40 * DAY))] == ["ZFS012"]
    running = pool_of(read(VM / "zpool-status-p-P.scrub-in-progress.txt"), "tank")
    assert advise(ZfsSnapshot(pools=(running,)), stale) == []


def test_recordsize_by_use() -> None:
    media = Dataset("tank/media", "filesystem", recordsize=128 * 1024)
    films = Dataset("tank/films", "filesystem", recordsize=1024 * 1024)
    mysql = Dataset("tank/mysql", "filesystem", recordsize=128 * 1024)
    pg = Dataset("tank/stuff", "filesystem", recordsize=16 * 1024, use="postgres")
    assert [guess_use(d) for d in (media, films, mysql, pg)] == [
        "media", "media", "database", "postgres"]
    found = advise(ZfsSnapshot(datasets=(media, films, mysql, pg)), Facts(now=0))
    assert [(f.id, f.subject, f.fix.split(" (")[0]) for f in found] == [
        ("ZFS007", "tank/media", "zfs set recordsize=1M tank/media"),
        ("ZFS007", "tank/mysql", "zfs set recordsize=16K tank/mysql"),
        ("ZFS007", "tank/stuff", "zfs set recordsize=8K tank/stuff")]


def test_inherited_settings_are_reported_once_at_their_source() -> None:
    columns = ("name", "used", "available", "referenced", "compressratio", "recordsize",
               "compression", "atime", "relatime", "xattr", "mountpoint", "type")
    datasets = listing.parse_datasets_text(read(LAB / "zfs-list-Hp-o.txt"), columns)
    children = tuple(Dataset(f"full/child{i}", "filesystem", compression="off", atime="on",
                             relatime="off", xattr="on") for i in range(3))
    found = advise(ZfsSnapshot(datasets=(*datasets, *children)), Facts(now=0))
    assert {f.subject for f in found} == {"full", "rz"}


def fletcher_facts(chosen: str) -> Facts:
    bench = kstat.parse_bench(read(VM / "proc-spl-kstat-zfs-fletcher_4_bench.txt"))
    names = ("fastest", "scalar", "superscalar", "superscalar4", "sse2", "ssse3", "avx2")
    path = "/sys/module/zcommon/parameters/zfs_fletcher_4_impl"
    return Facts(fletcher_bench=bench, choices={"zfs_fletcher_4_impl": Choice(chosen, names,
                                                                              path)}, now=0)


def test_a_pinned_implementation_slower_than_the_fastest() -> None:
    assert advise(ZfsSnapshot(), fletcher_facts("fastest")) == []
    assert advise(ZfsSnapshot(), fletcher_facts("superscalar")) == []
    [finding] = advise(ZfsSnapshot(), fletcher_facts("avx2"))
    assert finding.id == "ZFS008" and "puts at 26% of the fastest" in finding.message
    assert finding.fix == "echo fastest > /sys/module/zcommon/parameters/zfs_fletcher_4_impl"
    assert finding.subject is None


def test_no_simd_for_zfs() -> None:
    flags = frozenset({"sse2", "ssse3", "avx2", "aes"})
    real = kstat.parse_bench(read(OTHERS / "proc-spl-kstat-zfs-fletcher_4_bench.telegraf.txt"))
    simd = kstat.parse_table(read(OTHERS / "proc-spl-kstat-zfs-simd.telegraf.txt"))
    aes = Choice("fastest", ("cycle", "fastest", "generic", "x86_64", "aesni"),
                 "/sys/module/icp/parameters/icp_aes_impl")
    good = Facts(fletcher_bench=real, simd=simd, cpu_flags=flags,
                 choices={"icp_aes_impl": aes}, now=0)
    assert advise(ZfsSnapshot(), good) == []
    # the same machine as it looks when the kernel hides the FPU from ZFS
    scalar_only = kstat.Bench(real.columns, {k: v for k, v in real.speeds.items()
                                             if k.startswith(("scalar", "superscalar"))},
                              {"native": "superscalar4", "byteswap": "superscalar4"})
    no_aesni = replace(aes, names=("cycle", "fastest", "generic", "x86_64"))
    hidden = replace(good, fletcher_bench=scalar_only, simd={**simd, "kfpu_allowed": "1"},
                     choices={"icp_aes_impl": no_aesni})
    found = advise(ZfsSnapshot(), hidden)
    assert [f.id for f in found] == ["ZFS009", "ZFS009"]
    assert "benchmarked only scalar, superscalar, superscalar4" in found[0].message
    assert "AES-NI" in found[1].message
    refused = replace(good, simd={**simd, "kfpu_allowed": "0"})
    assert "kfpu_allowed 0" in advise(ZfsSnapshot(), refused)[0].message


def test_arc_limit_on_small_machines() -> None:
    arc = kstat.parse_table(read(LAB / "proc-spl-kstat-zfs-arcstats.txt"))
    small = Facts(memory=2060414976, arc_max_parameter=0, arc_c_max=int(arc["c_max"]), now=0)
    [finding] = advise(ZfsSnapshot(), small)
    assert finding.id == "ZFS013" and "may grow to 982.5 MiB" in finding.message
    assert finding.fix.startswith("echo 469762048 > /sys/module/zfs/parameters/zfs_arc_max")
    assert advise(ZfsSnapshot(), replace(small, memory=32 * 1024 ** 3)) == []
    assert advise(ZfsSnapshot(), replace(small, arc_max_parameter=1 << 30)) == []


@pytest.mark.parametrize(("scheduler", "severity"), [("cfq", "warning"), ("mq-deadline", "info")])
def test_schedulers_under_whole_disk_members(scheduler: str, severity: str) -> None:
    tank = pool_of(read(OTHERS / "zpool-status-healthy-4mirror-spare.jc.txt"), "tank")
    device = Device("sdh", "sdh", ("sdh",), {"sdh": True}, scheduler={"sdh": scheduler})
    top = cachefile.TopVdev("tank", 0, "mirror", 12, False, ("sdh", "sdk"), whole_disks=("sdh",))
    found = [f for f in advise(ZfsSnapshot(pools=(tank,)),
                               Facts(devices={"sdh": device}, top_vdevs=(top,), now=0))
             if f.id == "ZFS011"]
    assert [(f.severity, f.fix.split(" (")[0]) for f in found] == [
        (severity, "echo none > /sys/block/sdh/queue/scheduler")]
    partition_only = replace(top, whole_disks=())
    assert not [f for f in advise(ZfsSnapshot(pools=(tank,)),
                                  Facts(devices={"sdh": device}, top_vdevs=(partition_only,),
                                        now=0)) if f.id == "ZFS011"]


def test_a_scan_line_zsn_cannot_read_is_said_not_dropped() -> None:
    """jc's capture has "scrub repaired 0B in <snip>": no finished scrub zsn can date, so
    neither "never scrubbed" nor silence, but ZFS014 with zpool's own words."""
    tank = pool_of(read(OTHERS / "zpool-status-healthy-4mirror-spare.jc.txt"), "tank")
    assert tank.scan is not None and tank.scan.state == "unknown"
    assert tank.scan.text.startswith("scrub repaired 0B in <snip>")
    found = advise(ZfsSnapshot(pools=(tank,)), Facts(now=SCRUBBED + 400 * DAY))
    assert "ZFS012" not in {f.id for f in found}
    [finding] = [f for f in found if f.id == "ZFS014"]
    assert "'scrub repaired 0B in <snip>'" in finding.message
