"""SMART from ``smartctl --json`` (smartmontools 7+): one disk's health in typed facts.

`parse` decodes what smartctl printed (through `zsn.decode`: typed, bounded) into a
`Smart`: overall health, temperature, power-on hours, the ATA attributes that predict a
failure (reallocated, pending and offline-uncorrectable sectors, reported uncorrectable
errors, interface CRC errors), the NVMe health log (percentage used, spare, media errors,
critical warning) and SCSI's grown defects and uncorrected errors. A disk that smartctl
found spun down (``--nocheck=standby``: it exits before sending any command that would
wake the disk) is a `Smart` whose `state` is ``standby``; one smartctl could not open or
read is ``unreadable`` with smartctl's own words.

smartctl's exit status is a bit mask [smartctl(8)]: bit 0 a command line it refused,
bit 1 a device it could not open *or* found in a low-power mode (told apart by its
message ``Device is in STANDBY mode, exit(2)``), bits 2-7 what it found on the disk
(the data is there: bit 3 "disk failing", bit 4 a pre-failure attribute at or below its
threshold, bit 6 error log entries ...).

`argv` is how zsn asks: always ``--nocheck=standby`` and always the device type
(``-d sat``, ``nvme`` or ``scsi``, from sysfs): without ``-d`` smartctl's autodetection
may itself spin a disk up (smartctl(8), ``-n``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from zsn import decode

MAX_JSON_BYTES = 1 << 20
"""``smartctl -x --json`` of a SATA disk is ~40 KiB; zsn asks for less."""
STANDBY_MESSAGE = re.compile(r"Device is in (.+) mode, exit\(\d+\)")
"""smartmontools ataprint.cpp / scsiprint.cpp: ``jinf("Device is in %s mode, exit(%d)")``
(STANDBY, SLEEP, IDLE BY TIMER, STANDBY (OS) ...)."""

EXIT_COMMAND_LINE = 1
EXIT_OPEN_OR_LOW_POWER = 2
EXIT_SMART_COMMAND = 4
EXIT_FAILING = 8
EXIT_PREFAIL_NOW = 16
EXIT_PREFAIL_PAST = 32
EXIT_ERROR_LOG = 64
EXIT_SELF_TEST_LOG = 128

REALLOCATED = 5
REPORTED_UNCORRECT = 187
PENDING = 197
OFFLINE_UNCORRECTABLE = 198
CRC_ERRORS = 199
WATCHED_ATTRIBUTES = {
    REALLOCATED: "Reallocated_Sector_Ct",
    REPORTED_UNCORRECT: "Reported_Uncorrect",
    PENDING: "Current_Pending_Sector",
    OFFLINE_UNCORRECTABLE: "Offline_Uncorrectable",
    CRC_ERRORS: "UDMA_CRC_Error_Count",
}
"""The ATA attributes zsn reads, by id, with smartmontools' default names (the drive
database may rename them per model: the id is what counts)."""

SmartState = Literal["ok", "standby", "unreadable"]


# -- what smartctl prints (the parts zsn reads) ------------------------------------------
@dataclass
class _Message:
    string: str = ""
    severity: str = ""


@dataclass
class _Smartctl:
    version: list[int] = field(default_factory=list)
    exit_status: int = 0
    messages: list[_Message] = field(default_factory=list)


@dataclass
class _Device:
    name: str = ""
    type: str = ""
    protocol: str = ""


@dataclass
class _Status:
    passed: bool | None = None


@dataclass
class _Temperature:
    current: int | None = None
    drive_trip: int | None = None
    op_limit_max: int | None = None


@dataclass
class _Hours:
    hours: int | None = None


@dataclass
class _Bytes:
    bytes: int | None = None


@dataclass
class _Wwn:
    naa: int = 0
    oui: int = 0
    id: int = 0


@dataclass
class _Flags:
    prefailure: bool = False


@dataclass
class _Raw:
    value: int | None = None


@dataclass
class _Attribute:
    id: int
    name: str = ""
    value: int | None = None
    worst: int | None = None
    thresh: int | None = None
    when_failed: str = ""
    flags: _Flags = field(default_factory=_Flags)
    raw: _Raw = field(default_factory=_Raw)


@dataclass
class _Attributes:
    table: list[_Attribute] = field(default_factory=list)


@dataclass
class _NvmeLog:
    critical_warning: int | None = None
    temperature: int | None = None
    available_spare: int | None = None
    available_spare_threshold: int | None = None
    percentage_used: int | None = None
    media_errors: int | None = None
    num_err_log_entries: int | None = None
    power_on_hours: int | None = None


@dataclass
class _ScsiCounters:
    total_uncorrected_errors: int | None = None


@dataclass
class _ScsiErrors:
    read: _ScsiCounters | None = None
    write: _ScsiCounters | None = None
    verify: _ScsiCounters | None = None


@dataclass
class SmartctlOutput:
    """``smartctl --json`` as zsn reads it: the fields it uses, typed; others ignored."""

    smartctl: _Smartctl = field(default_factory=_Smartctl)
    device: _Device | None = None
    model_name: str | None = None
    scsi_model_name: str | None = None
    serial_number: str | None = None
    wwn: _Wwn | None = None
    firmware_version: str | None = None
    user_capacity: _Bytes | None = None
    rotation_rate: int | None = None
    smart_status: _Status | None = None
    temperature: _Temperature | None = None
    power_on_time: _Hours | None = None
    power_cycle_count: int | None = None
    ata_smart_attributes: _Attributes | None = None
    nvme_smart_health_information_log: _NvmeLog | None = None
    scsi_grown_defect_list: int | None = None
    scsi_error_counter_log: _ScsiErrors | None = None


# -- what zsn keeps ---------------------------------------------------------------------
class Attribute(NamedTuple):
    """An ATA attribute zsn shows: normalized value, worst, threshold, raw count."""

    id: int
    name: str
    value: int | None
    worst: int | None
    threshold: int | None
    raw: int | None
    when_failed: str
    """``""``, ``now`` (at or below its threshold now) or ``past``."""
    prefailure: bool


class Smart(NamedTuple):
    """One SMART reading of one disk."""

    state: SmartState
    read_at: float
    """Unix time of the reading."""
    message: str = ""
    """Why it is ``standby`` or ``unreadable`` (smartctl's words)."""
    exit_status: int | None = None
    protocol: str | None = None
    """ATA, NVMe or SCSI."""
    model: str | None = None
    serial: str | None = None
    wwn: str | None = None
    firmware: str | None = None
    capacity: int | None = None
    rotation_rate: int | None = None
    """RPM; 0 for a solid-state disk (ATA and SCSI report it)."""
    passed: bool | None = None
    """The overall health self-assessment; None when the disk gives none."""
    temperature: int | None = None
    """Degrees Celsius."""
    temperature_limit: int | None = None
    """The drive's own limit when it reports one (SCSI drive trip, ATA op limit)."""
    power_on_hours: int | None = None
    power_cycles: int | None = None
    reallocated: int | None = None
    pending: int | None = None
    offline_uncorrectable: int | None = None
    reported_uncorrect: int | None = None
    crc_errors: int | None = None
    percentage_used: int | None = None
    available_spare: int | None = None
    available_spare_threshold: int | None = None
    media_errors: int | None = None
    error_log_entries: int | None = None
    critical_warning: int | None = None
    grown_defects: int | None = None
    uncorrected_errors: int | None = None
    """SCSI: read, write and verify uncorrected errors together."""
    failing_now: tuple[str, ...] = ()
    """Pre-failure attributes at or below their threshold now."""
    worn_now: tuple[str, ...] = ()
    """Old-age attributes at or below their threshold now (wear, not a failure)."""
    failed_before: tuple[str, ...] = ()
    """Attributes that were at or below their threshold in the past."""
    attributes: tuple[Attribute, ...] = ()
    """The watched ATA attributes (`WATCHED_ATTRIBUTES`) as the disk reports them."""


def parse(text: str | bytes, source: str, *, read_at: float) -> Smart:
    """What smartctl printed for one disk (`source` names it in errors)."""
    output = decode.from_json(text, SmartctlOutput, source, max_bytes=MAX_JSON_BYTES)
    return from_output(output, read_at)


def _standby_message(output: SmartctlOutput) -> str | None:
    for message in output.smartctl.messages:
        found = STANDBY_MESSAGE.search(message.string)
        if found:
            return found.group(1)
    return None


def _first_error(output: SmartctlOutput) -> str:
    for message in output.smartctl.messages:
        if message.severity == "error" or not message.severity:
            return message.string[:300]
    if output.smartctl.messages:
        return output.smartctl.messages[0].string[:300]
    return f"smartctl exited with status {output.smartctl.exit_status}"


def from_output(output: SmartctlOutput, read_at: float) -> Smart:
    status = output.smartctl.exit_status
    device = output.device
    if status & EXIT_OPEN_OR_LOW_POWER:
        mode = _standby_message(output)
        if mode is not None:
            return Smart("standby", read_at, f"the disk is in {mode} mode: not woken",
                         status, device.protocol if device else None)
    if status & (EXIT_COMMAND_LINE | EXIT_OPEN_OR_LOW_POWER):
        return Smart("unreadable", read_at, _first_error(output), status,
                     device.protocol if device else None)
    fields: dict[str, object] = {
        "protocol": device.protocol if device and device.protocol else None,
        "model": output.model_name or output.scsi_model_name,
        "serial": output.serial_number,
        "wwn": (f"{output.wwn.naa:x}{output.wwn.oui:06x}{output.wwn.id:09x}"
                if output.wwn is not None else None),
        "firmware": output.firmware_version,
        "capacity": output.user_capacity.bytes if output.user_capacity else None,
        "rotation_rate": output.rotation_rate,
        "passed": output.smart_status.passed if output.smart_status else None,
        "power_cycles": output.power_cycle_count,
    }
    if output.temperature is not None:
        fields["temperature"] = output.temperature.current
        fields["temperature_limit"] = (output.temperature.drive_trip
                                       or output.temperature.op_limit_max)
    if output.power_on_time is not None:
        fields["power_on_hours"] = output.power_on_time.hours
    fields.update(_ata(output.ata_smart_attributes))
    fields.update(_nvme(output.nvme_smart_health_information_log))
    if output.scsi_grown_defect_list is not None:
        fields["grown_defects"] = output.scsi_grown_defect_list
    fields.update(_scsi(output.scsi_error_counter_log))
    return Smart("ok", read_at, "", status, **fields)  # type: ignore[arg-type]


def _ata(attributes: _Attributes | None) -> dict[str, object]:
    if attributes is None:
        return {}
    found: dict[str, object] = {}
    kept = []
    failing_now: list[str] = []
    worn_now: list[str] = []
    failed_before: list[str] = []
    keys = {REALLOCATED: "reallocated", PENDING: "pending",
            OFFLINE_UNCORRECTABLE: "offline_uncorrectable",
            REPORTED_UNCORRECT: "reported_uncorrect", CRC_ERRORS: "crc_errors"}
    for attribute in attributes.table:
        name = attribute.name or WATCHED_ATTRIBUTES.get(attribute.id, str(attribute.id))
        if attribute.when_failed == "now":
            (failing_now if attribute.flags.prefailure else worn_now).append(name)
        elif attribute.when_failed == "past":
            failed_before.append(name)
        if attribute.id in keys:
            raw = attribute.raw.value
            found[keys[attribute.id]] = raw
            kept.append(Attribute(attribute.id, name, attribute.value, attribute.worst,
                                  attribute.thresh, raw, attribute.when_failed,
                                  attribute.flags.prefailure))
    found["failing_now"] = tuple(failing_now)
    found["worn_now"] = tuple(worn_now)
    found["failed_before"] = tuple(failed_before)
    found["attributes"] = tuple(kept)
    return found


def _nvme(log: _NvmeLog | None) -> dict[str, object]:
    if log is None:
        return {}
    found: dict[str, object] = {
        "percentage_used": log.percentage_used, "available_spare": log.available_spare,
        "available_spare_threshold": log.available_spare_threshold,
        "media_errors": log.media_errors, "error_log_entries": log.num_err_log_entries,
        "critical_warning": log.critical_warning}
    return found


def _scsi(log: _ScsiErrors | None) -> dict[str, object]:
    if log is None:
        return {}
    counts = [part.total_uncorrected_errors for part in (log.read, log.write, log.verify)
              if part is not None and part.total_uncorrected_errors is not None]
    return {"uncorrected_errors": sum(counts)} if counts else {}


SMARTCTL_TYPES = {"nvme": "nvme", "sata": "sat", "ata": "sat", "sas": "scsi", "scsi": "scsi"}
"""The disk's transport (`zsn.zfs.disks`) -> smartctl's ``-d`` type."""


def argv(smartctl: str, device: str, device_type: str) -> list[str]:
    """How zsn asks smartctl about one disk: identity, health and attributes, never
    waking it (``--nocheck=standby``), its type given so nothing is probed."""
    return [smartctl, "--json", "--info", "--health", "--attributes",
            "--nocheck=standby", "-d", device_type, device]


# -- what it means ------------------------------------------------------------------------
HealthWord = Literal["FAILED", "failing", "warn", "ok", "standby", "?"]


def problems(smart: Smart) -> tuple[list[str], list[str]]:
    """(failing, warnings): what makes the disk failing now, and what predicts it."""
    failing: list[str] = []
    warnings: list[str] = []
    if smart.state != "ok":
        return failing, warnings
    if smart.passed is False:
        failing.append("SMART overall health FAILED")
    if smart.critical_warning:
        failing.append(f"NVMe critical warning 0x{smart.critical_warning:02x} "
                       f"({', '.join(critical_warning_bits(smart.critical_warning))})")
    if smart.failing_now:
        failing.append(f"{', '.join(smart.failing_now)} at or below threshold now")
    for count, what in ((smart.reallocated, "reallocated sectors"),
                        (smart.pending, "pending sectors"),
                        (smart.offline_uncorrectable, "offline uncorrectable sectors"),
                        (smart.media_errors, "media errors"),
                        (smart.grown_defects, "grown defects"),
                        (smart.uncorrected_errors, "uncorrected errors"),
                        (smart.crc_errors, "interface CRC errors (cable or port)")):
        if count:
            warnings.append(f"{count} {what}")
    if smart.worn_now:
        warnings.append(f"{', '.join(smart.worn_now)} worn to its threshold")
    if smart.failed_before:
        warnings.append(f"{', '.join(smart.failed_before)} failed in the past")
    return failing, warnings


CRITICAL_WARNING_BITS = ("spare below threshold", "temperature outside its limits",
                         "reliability degraded", "media read-only",
                         "volatile memory backup failed", "persistent memory unreliable")
"""NVMe SMART log byte 0, bits 0-5 (NVMe base specification, Figure 'SMART / Health
Information Log Page'; smartmontools nvmeprint.cpp print_critical_warning)."""


def critical_warning_bits(value: int) -> list[str]:
    named = [text for bit, text in enumerate(CRITICAL_WARNING_BITS) if value & (1 << bit)]
    if value & ~0x3F:
        named.append(f"unknown bits 0x{value & ~0x3F:02x}")
    return named


HDD_TEMPERATURE = 50
"""°C from which a spinning disk runs hot: drive makers rate most at 55-60 °C, and wear
grows above ~45-50 °C; zsn warns at 50 unless the drive names a lower limit."""
SSD_TEMPERATURE = 70
"""°C from which a solid-state disk runs hot (NVMe drives throttle at 70-80 °C)."""
WEAR_WARNING = 90
"""NVMe percentage used from which a disk is near its rated endurance (100 = reached)."""


def temperature_problem(smart: Smart, rotational: bool | None) -> tuple[str, str] | None:
    """("error" or "warning", why) when the disk runs hot."""
    temperature = smart.temperature
    if smart.state != "ok" or temperature is None:
        return None
    limit = smart.temperature_limit
    if limit and temperature >= limit:
        return "error", f"{temperature} °C, at or above the drive's own limit of {limit} °C"
    spinning = rotational if rotational is not None else bool(smart.rotation_rate)
    warn_at = HDD_TEMPERATURE if spinning else SSD_TEMPERATURE
    if limit:
        warn_at = min(warn_at, limit - 5)
    if temperature >= warn_at:
        return "warning", (f"{temperature} °C (zsn warns from {warn_at} °C for a "
                           f"{'spinning' if spinning else 'solid-state'} disk)")
    return None


def wear_problem(smart: Smart) -> tuple[str, str] | None:
    """("error" or "warning", why) when an NVMe disk is at or near its rated wear."""
    if smart.state != "ok":
        return None
    spare, threshold = smart.available_spare, smart.available_spare_threshold
    if spare is not None and threshold is not None and spare < threshold:
        return "error", f"available spare {spare} % below its threshold of {threshold} %"
    used = smart.percentage_used
    if used is None or used < WEAR_WARNING:
        return None
    if used >= 100:
        return "error", f"{used} % of its rated endurance used"
    return "warning", f"{used} % of its rated endurance used"
