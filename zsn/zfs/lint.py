"""The ZFS advisor: what the field notes warn about, checked on the live pools.

Each finding names the note it comes from (`Finding.source`) and gives its fix as a
command. Fixes that alter a pool or a dataset are only ever shown, never run by zsn on
its own: ashift cannot change at all, and compression, atime, xattr and recordsize
only apply to data written after the change.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from zsn.format import human_bytes, human_duration
from zsn.lint import Finding, Severity
from zsn.system.host import Host
from zsn.zfs.facts import Device, Facts
from zsn.zfs.model import Dataset, Pool, Vdev, ZfsSnapshot

if TYPE_CHECKING:
    from zsn.zfs.scrubs import Schedules

SUBJECT = "subject"
"""A pool (``tank``), a dataset (``tank/db``), or ``null`` for the host itself."""

RULES = {
    "ZFS001": "ashift below 12 (4 KiB) on 4K-sector or solid-state members",
    "ZFS002": "members named by kernel name (sdX) instead of /dev/disk/by-id",
    "ZFS003": "SSDs and HDDs mixed in one vdev (or pool)",
    "ZFS004": "compression off",
    "ZFS005": "atime on without relatime",
    "ZFS006": "xattr not sa",
    "ZFS007": "recordsize unsuited to the dataset's use (media 1M, databases 16K/8K, VMs 64K)",
    "ZFS008": "checksum or RAID-Z implementation slower than the fastest the kernel measured",
    "ZFS009": "no SIMD for ZFS: checksums and encryption run scalar",
    "ZFS010": "dm-crypt member using cbc-essiv where aes-xts-plain64 is faster",
    "ZFS011": "I/O scheduler other than none/noop under ZFS",
    "ZFS012": "no scrub for over 35 days",
    "ZFS013": "ARC size limit unset on a small-memory machine",
    "ZFS014": "a zpool status scan line zsn does not understand",
    "ZFS015": "a disk under a pool is failing (SMART health FAILED, NVMe critical warning, "
              "a pre-failure attribute at its threshold, wear or spare used up)",
    "ZFS016": "a disk under a pool shows signs of failing (reallocated, pending or "
              "uncorrectable sectors, media errors, CRC errors)",
    "ZFS017": "a disk's reallocated, pending or error counts grew since the reading before",
    "ZFS018": "a disk under a pool runs hot",
    "ZFS019": "an NVMe disk near its rated endurance",
    "ZFS020": "zpool status and the disks' SMART disagree about a vdev",
    "ZFS021": "a pool scrubbed (or trimmed) twice: by the distribution's cron job and a "
              "timer, or by two timers",
    "ZFS022": "a pool no schedule scrubs (no timer, no cron job)",
    "ZFS023": "pools on the same controller or disks scrub or trim at the same time",
    "ZFS024": "zsn's scrub (trim) service as an older zsn wrote it: it fails when a scrub "
              "is under way, or leaves one running when stopped",
}

NOTE_FPU = "field note 000_9ccc6ac61298d936.txt (kernel FPU exports, zfs_fletcher_4_impl)"
NOTE_RECORDSIZE = "field note 001_8e3103e979c22063.txt (About ZFS recordsize)"
NOTE_MIXING = ("field note 001_8e3103e979c22063.txt (ZFS does NOT favor lower latency "
               "devices)")
NOTE_CHEAT_SHEET = "field note 001_8e3103e979c22063.txt (ZFS tuning cheat sheet)"
NOTE_LUKS = "field note 002_a264e96ce7e9e52a.txt (LUKS under ZFS: cipher and elevator)"
NOTE_CREATING = "field note 004_2029cff501064e01.txt (creating a ZFS pool)"
REFERENCE_ARC = "OpenZFS zfs(4), zfs_arc_max: 0 lets the ARC take half of RAM"

SCRUB_DAYS = 35
SMALL_MEMORY = 8 * 1024 ** 3
_KERNEL_NAME_RE = re.compile(
    r"(?:/dev/)?(?:sd[a-z]+|hd[a-z]+|vd[a-z]+|xvd[a-z]+|nvme\d+n\d+|mmcblk\d+)(?:p?\d+)?")
SCALAR_IMPLEMENTATIONS = frozenset({"scalar", "superscalar", "superscalar4", "original",
                                    "generic", "x86_64", "fastest", "cycle"})
USES = {
    "media": (1024 ** 2, ("media", "movies", "movie", "films", "video", "videos", "photos",
                          "pictures", "music", "tv", "isos", "iso", "torrents")),
    "database": (16 * 1024, ("db", "dbs", "database", "databases", "mysql", "mariadb",
                             "innodb")),
    "postgres": (8 * 1024, ("postgres", "postgresql", "pgsql", "pgdata")),
    "vm": (64 * 1024, ("vm", "vms", "images", "qcow", "qcow2", "libvirt")),
}
"""Use -> (recordsize, words in a dataset's name that suggest it)."""


def advise(snapshot: ZfsSnapshot, facts: Facts) -> list[Finding]:
    findings: list[Finding] = []
    for pool in snapshot.pools:
        findings += _ashift(pool, facts)
        findings += _kernel_names(pool)
        findings += _mixed_media(pool, facts)
        findings += _stale_scrub(pool, snapshot.datasets_of(pool.name), facts.now)
        if pool.scan is not None and not pool.scan.understood:
            findings.append(Finding(
                "ZFS014", "warning", pool.name,
                f"zsn does not understand the scan line {pool.scan.text!r}: scrub age, "
                "progress and ETA are not shown for this pool",
                f"read it with 'zpool status {pool.name}'; report the line to zsn"))
    findings += _datasets(snapshot.datasets)
    findings += _implementations(facts)
    findings += _simd(facts)
    findings += _luks(snapshot.pools, facts)
    findings += _schedulers(snapshot.pools, facts)
    findings += _arc(facts)
    if facts.schedules is not None:
        findings += _schedules(facts.schedules, facts.now)
    if facts.disks is not None:
        from zsn.zfs import disk_advice

        findings += disk_advice.advise(snapshot, facts.disks, facts.now)
    return findings


# -- pools and vdevs ---------------------------------------------------------------
def _members(facts: Facts, paths: Iterable[str]) -> list[Device]:
    return [facts.devices[path] for path in paths if path in facts.devices]


def _ashift(pool: Pool, facts: Facts) -> Iterator[Finding]:
    tops = [top for top in facts.top_vdevs if top.pool == pool.name]
    reported: set[str] = set()
    for top in tops:
        if top.ashift is None or top.ashift >= 12:
            continue
        members = _members(facts, top.leaves)
        four_k = [d for d in members if any(size >= 4096
                                            for size in d.physical_block_size.values())]
        solid = [d for d in members if d.solid_state]
        reported.add(top.name)
        if four_k or solid:
            why = "4 KiB-sector" if four_k else "solid-state"
            severity: Severity = "warning"
            detail = (f"on {why} members ({', '.join(d.path for d in (four_k or solid))}): "
                      "every write smaller than 4 KiB becomes a read-modify-write")
        else:
            severity, detail = "info", ("fine only while every member has true 512-byte "
                                        "sectors; a 4K disk swapped in later stays slow")
        yield Finding(
            "ZFS001", severity, pool.name,
            f"{top.name} was created with ashift={top.ashift} ({2 ** top.ashift} B blocks) "
            f"{detail}; ashift is fixed for the life of a vdev",
            f"move the data to vdevs made with ashift=12: zpool create -o ashift=12 ... "
            f"(new vdevs: zpool add -o ashift=12 {pool.name} ...)", source=NOTE_CHEAT_SHEET)
    for vdev in pool.vdevs:
        if "configured" in vdev.note and "native" in vdev.note and vdev.parent not in reported:
            reported.add(vdev.parent or vdev.name)
            yield Finding(
                "ZFS001", "warning", pool.name,
                f"{vdev.name}: {vdev.note} (zpool status): its vdev's ashift is below the "
                "disk's sector size", "move the data to vdevs made with ashift=12: zpool "
                "create -o ashift=12 ...", source=NOTE_CHEAT_SHEET)
    if not tops and pool.ashift is not None and 0 < pool.ashift < 12:
        yield Finding(
            "ZFS001", "info", pool.name,
            f"the pool's ashift property is {pool.ashift}: new vdevs get "
            f"{2 ** pool.ashift} B blocks unless told otherwise",
            f"zpool set ashift=12 {pool.name} (only affects vdevs added later)",
            source=NOTE_CHEAT_SHEET)


def _kernel_names(pool: Pool) -> Iterator[Finding]:
    named = [v.name for v in pool.vdevs if v.is_leaf and _KERNEL_NAME_RE.fullmatch(v.name)]
    if named:
        yield Finding(
            "ZFS002", "warning", pool.name,
            f"members named by kernel name ({', '.join(named[:4])}"
            f"{' ...' if len(named) > 4 else ''}): these names change when disks are added "
            "or moved, and the pool may not import after a reboot",
            f"zpool export {pool.name} && zpool import -d /dev/disk/by-id {pool.name}",
            source=NOTE_CREATING)


def _children(pool: Pool, parent: str) -> list[Vdev]:
    return [v for v in pool.vdevs if v.parent == parent]


def _leaves_under(pool: Pool, vdev: Vdev) -> list[Vdev]:
    if vdev.is_leaf:
        return [vdev]
    return [leaf for child in _children(pool, vdev.name) for leaf in _leaves_under(pool, child)]


def _mixed_media(pool: Pool, facts: Facts) -> Iterator[Finding]:
    top_media: dict[str, set[bool]] = {}
    for vdev in pool.vdevs:
        if vdev.group in ("cache", "spares") or vdev.is_leaf or vdev.kind in ("pool", "group"):
            continue
        if vdev.kind in ("replacing", "spare"):
            continue
        members = _members(facts, (leaf.name for leaf in _leaves_under(pool, vdev)))
        solid = [d.path for d in members if d.solid_state]
        spinning = [d.path for d in members if d.spinning]
        if solid and spinning:
            yield Finding(
                "ZFS003", "warning", pool.name,
                f"{vdev.name} mixes solid-state ({', '.join(solid)}) and spinning "
                f"({', '.join(spinning)}) members: ZFS does not favour the faster one, the "
                "vdev runs at the speed of the HDD", f"zpool replace {pool.name} "
                f"{spinning[0]} NEW-SSD (or the SSDs with HDDs)", source=NOTE_MIXING)
        if vdev.group == "data" and vdev.depth == 1 and members:
            top_media[vdev.name] = {bool(d.solid_state) for d in members}
    for vdev in pool.vdevs:  # single-disk top-level vdevs have no interior row
        if vdev.group == "data" and vdev.depth == 1 and vdev.is_leaf:
            members = _members(facts, [vdev.name])
            if members and members[0].rotational:
                top_media[vdev.name] = {bool(members[0].solid_state)}
    kinds = set().union(*top_media.values()) if top_media else set()
    if len(kinds) == 2 and all(len(media) == 1 for media in top_media.values()):
        yield Finding(
            "ZFS003", "info", pool.name,
            "the pool has both SSD-only and HDD-only data vdevs: reads are served at the "
            "speed of whichever vdev holds the block, so it behaves like a pool of HDDs",
            "keep SSDs and HDDs in separate pools (or use the SSDs as special/log vdevs)",
            source=NOTE_MIXING)


def _stale_scrub(pool: Pool, datasets: tuple[Dataset, ...], now: float) -> Iterator[Finding]:
    scan = pool.scan
    limit = SCRUB_DAYS * 86400
    if scan is not None and scan.state in ("scanning", "paused", "unknown"):
        return
    if scan is not None and scan.function == "scrub" and scan.ended is not None:
        age = now - scan.ended
        if age > limit:
            what = "the last scrub finished" if scan.state == "finished" else \
                "the last scrub was canceled"
            yield Finding("ZFS012", "warning", pool.name,
                          f"{what} {human_duration(age)} ago: silent corruption goes unseen "
                          f"for that long", f"zpool scrub {pool.name}", source=NOTE_CREATING)
        return
    if scan is None:
        root = next((d for d in datasets if d.name == pool.name), None)
        if root is not None and root.created is not None and now - root.created > limit:
            yield Finding("ZFS012", "warning", pool.name,
                          f"never scrubbed, created {human_duration(now - root.created)} ago",
                          f"zpool scrub {pool.name}", source=NOTE_CREATING)


# -- datasets ----------------------------------------------------------------------
def _inherited(dataset: Dataset, by_name: dict[str, Dataset], *names: str) -> bool:
    """True when the parent has the same values: the finding belongs to the parent."""
    parent = by_name.get(dataset.parent or "")
    return parent is not None and all(getattr(parent, n) == getattr(dataset, n) for n in names)


def guess_use(dataset: Dataset) -> str | None:
    if dataset.use:
        return dataset.use if dataset.use in USES else None
    words = set(re.split(r"[^a-z0-9]+", dataset.name.lower().split("/", 1)[-1]))
    if "/" not in dataset.name:
        return None
    for use, (_, hints) in USES.items():
        if words & set(hints):
            return use
    return None


def _datasets(datasets: tuple[Dataset, ...]) -> Iterator[Finding]:
    by_name = {d.name: d for d in datasets}
    for dataset in datasets:
        name = dataset.name
        if dataset.compression == "off" and not _inherited(dataset, by_name, "compression"):
            yield Finding("ZFS004", "warning", name,
                          "compression is off: even incompressible data leaves compressible "
                          "slack, and lz4 is faster than the disks",
                          f"zfs set compression=lz4 {name} (new writes only)",
                          source=NOTE_CHEAT_SHEET)
        if dataset.type != "filesystem":
            continue
        if dataset.atime == "on" and dataset.relatime in ("off", None) \
                and not _inherited(dataset, by_name, "atime", "relatime"):
            yield Finding("ZFS005", "warning", name,
                          "atime is on without relatime: every read also writes an access "
                          "time, up to doubling the I/O",
                          f"zfs set atime=off {name} (or relatime=on)", source=NOTE_CHEAT_SHEET)
        if dataset.xattr in ("on", "dir") and not _inherited(dataset, by_name, "xattr"):
            yield Finding("ZFS006", "info", name,
                          f"xattr={dataset.xattr}: extended attributes (ACLs, SELinux) are "
                          "kept as hidden files, a lookup each",
                          f"zfs set xattr=sa {name} (new attributes only)",
                          source=NOTE_CHEAT_SHEET)
        use = guess_use(dataset)
        if use is not None and dataset.recordsize is not None:
            wanted = USES[use][0]
            if dataset.recordsize != wanted:
                how = "its zsn:use property" if dataset.use else "its name"
                yield Finding(
                    "ZFS007", "info", name,
                    f"recordsize {human_bytes(dataset.recordsize)} for {use} data ({how} "
                    f"says so); {human_bytes(wanted)} suits it",
                    f"zfs set recordsize={_size_word(wanted)} {name} (new files only; set "
                    f"zsn:use=... on the dataset if the guess is wrong)",
                    source=NOTE_RECORDSIZE)


def _size_word(size: int) -> str:
    return f"{size // 1024 ** 2}M" if size >= 1024 ** 2 else f"{size // 1024}K"


# -- the host ----------------------------------------------------------------------
def _implementations(facts: Facts) -> Iterator[Finding]:
    for parameter, bench, what in (
            ("zfs_fletcher_4_impl", facts.fletcher_bench, "fletcher-4 checksums"),
            ("zfs_vdev_raidz_impl", facts.raidz_bench, "RAID-Z parity")):
        choice = facts.choices.get(parameter)
        if choice is None or choice.chosen in (None, "fastest"):
            continue
        fix = f"echo fastest > {choice.path}"
        if choice.chosen == "cycle":
            yield Finding("ZFS008", "warning", None,
                          f"{parameter} is 'cycle': {what} rotate through every "
                          "implementation, a setting for testing", fix, source=NOTE_FPU)
            continue
        if bench is None or choice.chosen not in bench.speeds:
            continue
        chosen = bench.speeds[choice.chosen]
        ratios = [chosen[column] / best for column in bench.columns
                  if (best := max(s.get(column, 0) for s in bench.speeds.values())) > 0
                  and column in chosen]
        if ratios and sum(ratios) / len(ratios) < 0.9:
            share = round(100 * sum(ratios) / len(ratios))
            yield Finding(
                "ZFS008", "warning", None,
                f"{parameter} is pinned to {choice.chosen}, which the kernel's own benchmark "
                f"puts at {share}% of the fastest for {what}", fix, source=NOTE_FPU)


def _simd(facts: Facts) -> Iterator[Finding]:
    fix = ("use a kernel and OpenZFS that let ZFS use the FPU (OpenZFS 0.8.3+ saves FPU "
           "state itself); /proc/spl/kstat/zfs/fletcher_4_bench then lists sse2/avx2")
    x86_simd = {"sse2", "ssse3", "avx2", "avx512f"} & facts.cpu_flags
    allowed = facts.simd.get("kfpu_allowed")
    bench = facts.fletcher_bench
    if allowed == "0":
        yield Finding("ZFS009", "warning", None,
                      "the kernel does not let ZFS use the FPU (simd kstat kfpu_allowed 0): "
                      "checksums, RAID-Z and encryption run on scalar code", fix,
                      source=NOTE_FPU)
    elif x86_simd and bench is not None and bench.speeds \
            and set(bench.speeds) <= SCALAR_IMPLEMENTATIONS:
        yield Finding("ZFS009", "warning", None,
                      f"the CPU has {', '.join(sorted(x86_simd))} but ZFS benchmarked only "
                      f"{', '.join(bench.speeds)}: it cannot use the vector unit, so "
                      "checksums and encryption are several times slower", fix,
                      source=NOTE_FPU)
    aes = facts.choices.get("icp_aes_impl")
    if aes is not None and "aes" in facts.cpu_flags:
        if "aesni" not in aes.names:
            yield Finding("ZFS009", "warning", None,
                          "the CPU has AES-NI but ZFS offers no aesni implementation: "
                          f"encrypted datasets use {aes.chosen or 'generic'} AES", fix,
                          source=NOTE_FPU)
        elif aes.chosen in ("generic", "x86_64"):
            yield Finding("ZFS009", "warning", None,
                          f"icp_aes_impl is pinned to {aes.chosen} although aesni is there",
                          f"echo fastest > {aes.path}", source=NOTE_FPU)


def _luks(pools: tuple[Pool, ...], facts: Facts) -> Iterator[Finding]:
    for pool in pools:
        for vdev in pool.vdevs:
            device = facts.devices.get(vdev.name)
            if device is None or not device.crypt or device.cipher is None:
                continue
            if device.cipher.startswith("aes-cbc"):
                under = " ".join(f"/dev/{disk}" for disk in device.disks) or "DEVICE"
                yield Finding(
                    "ZFS010", "warning", pool.name,
                    f"{vdev.name} is dm-crypt with {device.cipher}: each block depends on the "
                    "previous one; aes-xts-plain64 scrubbed some 10% faster in the notes",
                    f"cryptsetup reencrypt --cipher aes-xts-plain64 --key-size 512 {under} "
                    "(LUKS2; back up first)", source=NOTE_LUKS)


def _schedulers(pools: tuple[Pool, ...], facts: Facts) -> Iterator[Finding]:
    whole = {path for top in facts.top_vdevs for path in top.whole_disks}
    seen: set[str] = set()
    for pool in pools:
        for vdev in pool.vdevs:
            device = facts.devices.get(vdev.name)
            if device is None or not (vdev.name in whole or device.crypt):
                continue
            for disk, scheduler in device.scheduler.items():
                if scheduler in ("none", "noop") or disk in seen:
                    continue
                seen.add(disk)
                severity: Severity = "warning" if scheduler in ("cfq", "bfq") else "info"
                yield Finding(
                    "ZFS011", severity, pool.name,
                    f"/dev/{disk} (under {vdev.name}) uses the {scheduler} I/O scheduler: ZFS "
                    "schedules its own I/O, a second scheduler below adds latency and load",
                    f"echo none > /sys/block/{disk}/queue/scheduler (keep it with a udev rule: "
                    f'ACTION=="add|change", KERNEL=="{disk}", ATTR{{queue/scheduler}}="none")',
                    source=NOTE_LUKS)


def _arc(facts: Facts) -> Iterator[Finding]:
    if facts.arc_max_parameter != 0 or facts.memory is None or facts.memory >= SMALL_MEMORY:
        return
    suggest = max(64 * 1024 ** 2, facts.memory // 4 // (64 * 1024 ** 2) * (64 * 1024 ** 2))
    grows = human_bytes(facts.arc_c_max) if facts.arc_c_max else "half of RAM"
    yield Finding(
        "ZFS013", "info", None,
        f"zfs_arc_max is unset on a machine with {human_bytes(facts.memory)} of RAM: the ARC "
        f"may grow to {grows} and gives memory back only under pressure",
        f"echo {suggest} > /sys/module/zfs/parameters/zfs_arc_max; and to keep it: "
        f"echo 'options zfs zfs_arc_max={suggest}' >> /etc/modprobe.d/zfs.conf",
        source=REFERENCE_ARC)


def _schedules(schedules: Schedules, now: float) -> Iterator[Finding]:
    from zsn.zfs.scrubs import CRON_PROPERTY, PAST, clashes, never, twice

    for entry, by in twice(schedules):
        fix = (f"zfs set {CRON_PROPERTY[entry.kind]}=disable {entry.pool}"
               if entry.cron else f"zsn zfs {entry.kind} schedule {entry.pool} --every month")
        yield Finding("ZFS021", "warning", entry.pool,
                      f"{PAST[entry.kind]} twice: by {' and '.join(by)}", fix)
    for entry in never(schedules):
        yield Finding("ZFS022", "warning", entry.pool,
                      "no timer and no cron job scrubs it: its errors are found only when "
                      "their blocks are read", f"zsn zfs scrub schedule {entry.pool} --every "
                      "month", source=NOTE_CREATING)
    for first, second in clashes(schedules, now):
        yield Finding("ZFS023", "info", first.pool,
                      f"its {first.kind} and {second.pool}'s {second.kind} can run at once, "
                      "on the same controller or disks: each slows the other",
                      f"zsn zfs {first.kind} schedule --stagger")
    yield from _old_units(schedules)


def _old_units(schedules: Schedules) -> Iterator[Finding]:
    from zsn.zfs.scrubs import describe_old_unit, old_units, rewrite_command

    for timer, found in old_units(schedules):
        yield Finding("ZFS024", "warning" if found.runs_zpool else "info", timer.pool,
                      f"{describe_old_unit(timer, found)}; setting the schedule again "
                      "rewrites it", rewrite_command(timer),
                      path=found.path, line=found.line)


def with_schedules(host: Host, snapshot: ZfsSnapshot, facts: Facts) -> Facts:
    """`facts` with the pools' schedules read now (the disks' map from `facts` when read)."""
    from dataclasses import replace

    from zsn.zfs.disks import read_map
    from zsn.zfs.live import zfs_stdout
    from zsn.zfs.scrubs import leaves_of, read_schedules

    if snapshot.unavailable:
        return facts
    disks = facts.disks.map if facts.disks is not None else \
        read_map(host, [leaf for pool in snapshot.pools for leaf in leaves_of(pool)])
    return replace(facts, schedules=read_schedules(host, snapshot.pools, disks, zfs_stdout))


def lint(host: Host) -> list[Finding]:
    """The advisor on the live system (runs zpool, zfs and, as root with dm-crypt, dmsetup)."""
    from zsn.zfs.diskwatch import read_with_disks
    from zsn.zfs.live import read_everything

    snapshot, facts, _ = read_everything(host, now=time.time())
    facts = read_with_disks(host, snapshot, facts)
    return advise(snapshot, with_schedules(host, snapshot, facts))
