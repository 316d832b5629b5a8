"""Reading SMART when due and never waking a disk, zsn's records of the counts, the
advisor's disk rules and the disks as data (JSON, Prometheus): smartctl answers with real
outputs (tests/fixtures/smart, tests/fixtures/zfs-disks-lab), the disks are the sysfs
tree of test_disks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.unit.zfs.test_disks import AHCI, machine, write
from zsn.exporter.prometheus import render
from zsn.system.commands import CommandResult
from zsn.system.host import Host
from zsn.zfs import disk_state, status
from zsn.zfs.disk_advice import advise
from zsn.zfs.disk_export import entries, metrics
from zsn.zfs.disk_health import DiskReading, health
from zsn.zfs.diskwatch import DiskReader, DiskWatch
from zsn.zfs.model import Pool, ZfsSnapshot
from zsn.zfs.smart import parse

FIXTURES = Path(__file__).parents[2] / "fixtures"
SMART = FIXTURES / "smart"
LAB = FIXTURES / "zfs-disks-lab"
NOW = 1_800_000_000.0
STATUS = ("  pool: tank\n state: ONLINE\nconfig:\n\n"
          "\tNAME                      STATE     READ WRITE CKSUM\n"
          "\ttank                      ONLINE       0     0     0\n"
          "\t  mirror-0                ONLINE       0     0     0\n"
          "\t    /dev/mapper/luks-tank0  ONLINE       0     0     {cksum}\n"
          "\t    /dev/nvme0n1p1        ONLINE       0     0     0\n\n"
          "errors: No known data errors\n")
LEAVES = ["/dev/mapper/luks-tank0", "/dev/nvme0n1p1"]


class Smartctl:
    """Answers zsn's smartctl argv with a captured output per device; counts the calls."""

    def __init__(self, answers: dict[str, Path]) -> None:
        self.answers = answers
        self.calls: list[Sequence[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        path = self.answers[argv[-1]]
        text = path.read_text()
        code = parse(text, "x", read_at=0).exit_status or 0
        return CommandResult(tuple(argv), code, text, "", 0.1)


def reader(host: Host, smartctl: Smartctl, clock: list[float]) -> DiskReader:
    return DiskReader(host, runner=smartctl, clock=lambda: clock[0],
                      program=lambda: "/usr/sbin/smartctl", refusal=lambda *_: None)


def pool(cksum: int = 0) -> Pool:
    [found] = status.parse_text(STATUS.format(cksum=cksum))
    return found


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return machine(tmp_path)


def test_smart_is_read_when_due_and_kept_between_runs(host: Host) -> None:
    smartctl = Smartctl({"/dev/sda": SMART / "sata-hdd.wd20efrx.smartctl_exporter.json",
                         "/dev/nvme0": LAB / "smartctl-j-nvme.ZLABNVME0.json"})
    clock = [NOW]
    first = reader(host, smartctl, clock).read(LEAVES)
    assert sorted(call[-1] for call in smartctl.calls) == ["/dev/nvme0", "/dev/sda"]
    assert all("--nocheck=standby" in call and "-d" in call for call in smartctl.calls)
    assert [health(report).level for report in first.of_leaf(LEAVES[0])] == ["ok"]
    assert first.reports["nvme0n1"].smart.serial == "ZLABNVME0"  # type: ignore[union-attr]
    # judged once, in the reader (the disk watch's thread), not at every refresh
    assert first.verdicts == {name: health(report) for name, report in first.reports.items()}
    # another zsn nine minutes later: the records answer, no disk is asked
    clock[0] = NOW + 540
    again = reader(host, smartctl, clock).read(LEAVES)
    assert len(smartctl.calls) == 2
    assert again.reports["sda"].smart == first.reports["sda"].smart
    clock[0] = NOW + 600
    reader(host, smartctl, clock).read(LEAVES)
    assert len(smartctl.calls) == 4


def test_a_disk_asleep_is_not_asked_and_keeps_its_last_reading(host: Host) -> None:
    smartctl = Smartctl({"/dev/sda": SMART / "sata-hdd.wd20efrx.smartctl_exporter.json",
                         "/dev/nvme0": LAB / "smartctl-j-nvme.ZLABNVME0.json"})
    clock = [NOW]
    reader(host, smartctl, clock).read(LEAVES)
    write(Path(str(host.root)), f"/sys/{AHCI.format(port=1)}/power/runtime_status",
          "suspended\n")
    clock[0] = NOW + 700
    later = reader(host, smartctl, clock).read(LEAVES)
    assert [call[-1] for call in smartctl.calls[2:]] == ["/dev/nvme0"]
    sleeping = later.reports["sda"]
    assert (sleeping.state, health(sleeping).level) == ("standby", "asleep")
    assert sleeping.smart is not None and sleeping.smart.read_at == NOW
    assert sleeping.read_at == NOW + 700


def test_growing_counts_are_found_across_readings(host: Host) -> None:
    answers = {"/dev/sda": SMART / "sata-hdd-reallocated-1.st3500418as.smartctl_exporter.json",
               "/dev/nvme0": LAB / "smartctl-j-nvme.ZLABNVME0.json"}
    smartctl = Smartctl(answers)
    clock = [NOW]
    reader(host, smartctl, clock).read(LEAVES)
    answers["/dev/sda"] = SMART / "sata-hdd-reallocated-304.st3500418as.smartctl_exporter.json"
    clock[0] = NOW + 86400
    reading = reader(host, smartctl, clock).read(LEAVES)
    [grown] = reading.reports["sda"].growth
    assert (grown.counter, grown.before, grown.after) == ("reallocated", 1, 304)
    findings = advise(ZfsSnapshot(pools=(pool(),)), reading, NOW + 86400)
    assert sorted(f.id for f in findings) == ["ZFS016", "ZFS017"]
    grew = next(f for f in findings if f.id == "ZFS017")
    assert "reallocated sectors 1 → 304 (1d 00h between the readings)" in grew.message
    assert grew.fix.startswith("zpool replace tank /dev/mapper/luks-tank0 NEW-DEVICE")
    # the records read back the same
    records, note = disk_state.load(host)
    assert note is None
    assert disk_state.parse(disk_state.render(records), "again") == records


def read_one(host: Host, sda: Path, nvme: Path = LAB / "smartctl-j-nvme.ZLABNVME0.json",
             cksum: int = 0) -> tuple[ZfsSnapshot, DiskReading]:
    smartctl = Smartctl({"/dev/sda": sda, "/dev/nvme0": nvme})
    reading = reader(host, smartctl, [NOW]).read(LEAVES)
    return ZfsSnapshot(pools=(pool(cksum),)), reading


def test_a_failing_disk_and_a_failing_nvme_are_errors(host: Host) -> None:
    snapshot, reading = read_one(
        host, SMART / "sata-hdd-failed-reallocated-now.hds721050dle630.scrutiny.json",
        LAB / "smartctl-j-nvme.ZLABNVME1.json")
    findings = advise(snapshot, reading, NOW + 60)
    failing = sorted((f.id, f.severity, f.message) for f in findings if f.id == "ZFS015")
    assert [message.split(" is failing: ")[1] for _, _, message in failing] == [
        "SMART overall health FAILED; NVMe critical warning 0x04 (reliability degraded) "
        "(read 1m 00s ago)",
        "SMART overall health FAILED; Reallocated_Sector_Ct at or below threshold now "
        "(read 1m 00s ago)"]
    assert failing[0][2].startswith("/dev/nvme0n1 (QEMU NVMe Ctrl, serial ZLABNVME1) under "
                                    "/dev/nvme0n1p1")
    assert failing[1][2].startswith("/dev/sda (Hitachi HDS721050DLE630, serial MSK423Y20S3HBC)"
                                    " under /dev/mapper/luks-tank0")
    assert all(severity == "error" for _, severity, _ in failing)
    # ZFS has seen nothing yet on the disk with pending sectors
    unseen = next(f for f in findings if f.id == "ZFS020")
    assert "8 pending sectors" in unseen.message and "ZFS has not read those" in unseen.message


def test_checksum_errors_on_a_disk_smart_calls_clean_point_at_the_way_to_it(
        host: Host) -> None:
    snapshot, reading = read_one(
        host, SMART / "sata-hdd-crc-errors.hus724020ale640.smartctl_exporter.json", cksum=7)
    found = {f.id: f for f in advise(snapshot, reading, NOW)}
    assert sorted(found) == ["ZFS016", "ZFS020"]
    assert "0 read, 0 write and 7 checksum errors on /dev/mapper/luks-tank0" in \
        found["ZFS020"].message
    assert "interface CRC errors: the cable or the port" in found["ZFS020"].message


def test_heat_and_wear_findings(host: Host) -> None:
    snapshot, reading = read_one(host, SMART / "sata-hdd.wd20efrx.smartctl_exporter.json")
    hot = reading.reports["sda"]._replace(
        smart=reading.reports["sda"].smart._replace(temperature=55))  # type: ignore[union-attr]
    worn = reading.reports["nvme0n1"]._replace(
        smart=reading.reports["nvme0n1"].smart._replace(percentage_used=95))  # type: ignore[union-attr]
    changed = reading._replace(reports={"sda": hot, "nvme0n1": worn})
    found = {f.id: f for f in advise(snapshot, changed, NOW)}
    assert sorted(found) == ["ZFS018", "ZFS019"]
    assert "runs hot: 55 °C (zsn warns from 50 °C for a spinning disk)" in found["ZFS018"].message
    assert "95 % of its rated endurance used" in found["ZFS019"].message
    assert advise(snapshot, reading, NOW) == []


def test_the_disks_as_json_and_smartctl_exporters_metrics(host: Host) -> None:
    snapshot, reading = read_one(
        host, SMART / "sata-hdd-failed-reallocated-now.hds721050dle630.scrutiny.json",
        LAB / "smartctl-j-nvme.ZLABNVME1.json")
    found = entries(snapshot.pools, reading, NOW + 30)
    assert [(e["pool"], e["vdev"], e["disk"], e["health"]) for e in found] == [
        ("tank", "/dev/mapper/luks-tank0", "sda", "failing"),
        ("tank", "/dev/nvme0n1p1", "nvme0n1", "failing")]
    sda = found[0]
    assert [layer["kind"] for layer in sda["layers"]] == ["crypt", "partition", "disk"]
    assert sda["smart"]["age_seconds"] == 30.0 and sda["smart"]["reallocated"] == 1975
    text = render(metrics(found))
    sda_labels = 'device="sda",pool="tank",vdev="/dev/mapper/luks-tank0"'
    nvme_labels = 'device="nvme0",pool="tank",vdev="/dev/nvme0n1p1"'
    for line in (f"smartctl_device_smart_status{{{sda_labels}}} 0",
                 f"smartctl_device_smartctl_exit_status{{{sda_labels}}} 216",
                 f'smartctl_device_temperature{{{sda_labels},temperature_type="current"}} 25',
                 f"smartctl_device_power_on_seconds{{{sda_labels}}} {65592 * 3600}",
                 f'smartctl_device_attribute{{{sda_labels},attribute_name="Reallocated_Sector_Ct",'
                 f'attribute_id="5",attribute_value_type="raw"}} 1975',
                 f"smartctl_device_critical_warning{{{nvme_labels}}} 4",
                 f"smartctl_device_percentage_used{{{nvme_labels}}} 0",
                 f'zsn_zfs_disk_health{{{sda_labels},health="failing"}} 1',
                 f"zsn_zfs_disk_smart_age_seconds{{{sda_labels}}} 30.0"):
        assert line in text, line
    assert "smartctl_device_critical_warning{" + sda_labels not in text


def test_the_watch_reads_in_its_own_thread_and_hands_the_latest(host: Host) -> None:
    smartctl = Smartctl({"/dev/sda": SMART / "sata-hdd.wd20efrx.smartctl_exporter.json",
                         "/dev/nvme0": LAB / "smartctl-j-nvme.ZLABNVME0.json"})
    watch = DiskWatch(host, reader=reader(host, smartctl, [NOW]))
    try:
        assert watch.latest().reports == {}  # nothing waited for
        watch.want(LEAVES)
        for _ in range(500):
            if len(watch.latest().reports) == 2:
                break
            watch._stopped.wait(0.01)
        assert sorted(watch.latest().reports) == ["nvme0n1", "sda"]
    finally:
        watch.stop()
