"""smartctl's JSON read into one `Smart` per disk, on real outputs (tests/fixtures/smart,
SOURCES.md there), and what zsn makes of each reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ZsnError
from zsn.zfs import smart
from zsn.zfs.smart import Smart, problems, temperature_problem, wear_problem

SMART = Path(__file__).parents[2] / "fixtures" / "smart"
LAB = Path(__file__).parents[2] / "fixtures" / "zfs-disks-lab"


def reading(name: str, folder: Path = SMART) -> Smart:
    return smart.parse((folder / name).read_bytes(), name, read_at=1000.0)


def test_every_capture_reads() -> None:
    names = sorted(path.name for path in SMART.glob("*.json"))
    assert len(names) == 14
    for name in names:
        assert reading(name).state in ("ok", "unreadable")


@pytest.mark.parametrize(("name", "facts"), [
    ("sata-hdd.wd20efrx.smartctl_exporter.json",
     {"protocol": "ATA", "model": "WDC WD20EFRX-68EUZN0", "passed": True, "temperature": 34,
      "power_on_hours": 47657, "reallocated": 0, "pending": 0, "offline_uncorrectable": 0,
      "crc_errors": 0, "rotation_rate": 5400, "capacity": 2000398934016,
      "wwn": "50014ee0499602d2"}),
    ("sata-ssd.ssdsc2kb480g8.smartctl_exporter.json",
     {"protocol": "ATA", "rotation_rate": 0, "passed": True, "temperature": 30,
      "offline_uncorrectable": None}),
    ("sata-hdd-crc-errors.hus724020ale640.smartctl_exporter.json",
     {"crc_errors": 12, "exit_status": 64, "passed": True}),
    ("sata-hdd-failed-reallocated-now.hds721050dle630.scrutiny.json",
     {"passed": False, "reallocated": 1975, "pending": 8, "exit_status": 216,
      "failing_now": ("Reallocated_Sector_Ct",), "serial": "MSK423Y20S3HBC"}),
    ("sas-hdd.h109060sesun600g.smartctl_exporter.json",
     {"protocol": "SCSI", "model": "HITACHI H109060SESUN600G", "temperature": 26,
      "temperature_limit": 85, "grown_defects": 0, "uncorrected_errors": 0,
      "power_on_hours": 22364, "rotation_rate": 10020}),
    ("sas-smartctl-6.7.scrutiny.json",
     {"protocol": "SCSI", "model": "SEAGATE ST1200MM0088", "temperature_limit": 60}),
    ("nvme.970-evo-plus.smartctl_exporter.json",
     {"protocol": "NVMe", "percentage_used": 0, "available_spare": 100,
      "available_spare_threshold": 10, "media_errors": 0, "critical_warning": 0,
      "temperature": 35, "power_on_hours": 3149, "error_log_entries": 22}),
    ("nvme-failed-critical-warning-16.mzwll3t2hajq.smartctl_exporter.json",
     {"passed": False, "critical_warning": 16, "exit_status": 8}),
    ("nvme-wear-75.ssdpe2kx020t7.smartctl_exporter.json", {"percentage_used": 75}),
    ("nvme-media-errors-7.scrutiny.json",
     {"media_errors": 7, "error_log_entries": 62, "passed": True}),
])
def test_the_facts_of_each_kind_of_disk(name: str, facts: dict[str, object]) -> None:
    found = reading(name)
    assert found.state == "ok"
    assert {key: getattr(found, key) for key in facts} == facts


def test_a_device_smartctl_could_not_open_is_unreadable_with_its_words() -> None:
    found = reading("open-failed.windows.scrutiny.json")
    assert (found.state, found.exit_status, found.passed) == ("unreadable", 2, None)
    assert found.message.startswith("Smartctl open device: /dev/sda failed:")


@pytest.mark.parametrize(("name", "failing", "warnings"), [
    ("sata-hdd.wd20efrx.smartctl_exporter.json", [], []),
    ("sata-hdd-reallocated-1.st3500418as.smartctl_exporter.json", [],
     ["1 reallocated sectors"]),
    ("sata-hdd-crc-errors.hus724020ale640.smartctl_exporter.json", [],
     ["12 interface CRC errors (cable or port)"]),
    ("sata-hdd-failed-reallocated-now.hds721050dle630.scrutiny.json",
     ["SMART overall health FAILED", "Reallocated_Sector_Ct at or below threshold now"],
     ["1975 reallocated sectors", "8 pending sectors"]),
    ("nvme-failed-critical-warning-16.mzwll3t2hajq.smartctl_exporter.json",
     ["SMART overall health FAILED",
      "NVMe critical warning 0x10 (volatile memory backup failed)"], []),
    ("nvme-media-errors-7.scrutiny.json", [], ["7 media errors"]),
    ("sas-hdd.st373453lc.smartctl-7.4.smartctl_exporter.json", [], []),
])
def test_what_makes_a_disk_failing_or_warn(name: str, failing: list[str],
                                           warnings: list[str]) -> None:
    assert problems(reading(name)) == (failing, warnings)


def test_heat_and_wear_limits() -> None:
    hdd = reading("sata-hdd.wd20efrx.smartctl_exporter.json")
    assert temperature_problem(hdd, True) is None
    assert temperature_problem(hdd._replace(temperature=51), True) == (
        "warning", "51 °C (zsn warns from 50 °C for a spinning disk)")
    assert temperature_problem(hdd._replace(temperature=51), False) is None
    sas = reading("sas-hdd.st373453lc.smartctl-7.4.smartctl_exporter.json")  # trip 68 °C
    assert temperature_problem(sas._replace(temperature=63), True) == (
        "warning", "63 °C (zsn warns from 50 °C for a spinning disk)")
    assert temperature_problem(sas._replace(temperature=68), True) == (
        "error", "68 °C, at or above the drive's own limit of 68 °C")
    worn = reading("nvme-wear-75.ssdpe2kx020t7.smartctl_exporter.json")
    assert wear_problem(worn) is None
    assert wear_problem(worn._replace(percentage_used=93)) == (
        "warning", "93 % of its rated endurance used")
    assert wear_problem(worn._replace(percentage_used=100))[0] == "error"  # type: ignore[index]
    assert wear_problem(worn._replace(available_spare=5)) == (
        "error", "available spare 5 % below its threshold of 10 %")


def test_the_critical_warning_bits_are_named() -> None:
    assert smart.critical_warning_bits(0x04) == ["reliability degraded"]
    assert smart.critical_warning_bits(0x41) == ["spare below threshold", "unknown bits 0x40"]


def test_zsn_asks_without_waking_the_disk_and_names_its_type() -> None:
    assert smart.argv("/usr/sbin/smartctl", "/dev/sda", "sat") == [
        "/usr/sbin/smartctl", "--json", "--info", "--health", "--attributes",
        "--nocheck=standby", "-d", "sat", "/dev/sda"]


@pytest.mark.parametrize("text", ["", "[]", '{"smartctl": {"exit_status": "x"}}',
                                  '{"ata_smart_attributes": {"table": [{"name": "x"}]}}',
                                  "{" * 200])
def test_what_is_not_smartctl_json_is_one_line(text: str) -> None:
    with pytest.raises(ZsnError) as caught:
        smart.parse(text, "smartctl /dev/sda", read_at=0)
    assert "\n" not in str(caught.value) and "smartctl /dev/sda" in str(caught.value)


def test_qemus_emulated_disks_as_the_kernel_lab_read_them() -> None:
    nvme = reading("smartctl-j-nvme.ZLABNVME0.json", LAB)
    assert (nvme.protocol, nvme.model, nvme.serial, nvme.passed, nvme.temperature,
            nvme.critical_warning) == ("NVMe", "QEMU NVMe Ctrl", "ZLABNVME0", True, 50, 0)
    assert problems(nvme) == ([], []) and wear_problem(nvme) is None
    failing = reading("smartctl-j-nvme.ZLABNVME1.json", LAB)
    assert (failing.exit_status, failing.passed, failing.critical_warning) == (8, False, 4)
    assert problems(failing)[0] == ["SMART overall health FAILED",
                                    "NVMe critical warning 0x04 (reliability degraded)"]
    sata = reading("smartctl-j-sat.ZLABSATA0.json", LAB)
    assert (sata.protocol, sata.model, sata.temperature, sata.power_on_hours,
            sata.reallocated, sata.rotation_rate) == ("ATA", "QEMU HARDDISK", 31, 1, 0, 7200)
    assert [a.id for a in sata.attributes] == [5]
    gone = reading("smartctl-j-nosuch.json", LAB)
    assert (gone.state, gone.exit_status) == ("unreadable", 2)
    assert gone.message == "Smartctl open device: /dev/sdz [SAT] failed: No such device"
