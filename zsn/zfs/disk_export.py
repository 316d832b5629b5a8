"""The disks under the pools as data: ``zsn zfs disks --json``, the ``disks`` list of
``--export zfs`` and its Prometheus metrics.

One entry per leaf vdev and disk under it (a partition of a disk shared by two pools is
two entries, one per pool), so every disk joins its pool and vdev. The metrics carry
smartctl_exporter's names and its ``device`` label (the path without ``/dev/``), plus a
``pool`` and a ``vdev`` label: a dashboard made for smartctl_exporter works on them,
and a disk can be joined to the pool it carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zsn.exporter.prometheus import MetricFamily
from zsn.zfs.disk_health import DiskReading, DiskReport, health
from zsn.zfs.model import Pool
from zsn.zfs.smart import Smart


def smart_to_dict(smart: Smart | None, now: float) -> dict[str, Any] | None:
    if smart is None:
        return None
    data = smart._asdict()
    data["attributes"] = [attribute._asdict() for attribute in smart.attributes]
    data["failing_now"] = list(smart.failing_now)
    data["worn_now"] = list(smart.worn_now)
    data["failed_before"] = list(smart.failed_before)
    data["age_seconds"] = round(max(0.0, now - smart.read_at), 1)
    return data


def report_to_dict(report: DiskReport, now: float) -> dict[str, Any]:
    disk = report.disk
    judged = health(report)
    return {
        "disk": disk.name, "by_id": disk.by_id, "model": disk.model, "serial": disk.serial,
        "wwid": disk.wwid, "capacity": disk.capacity, "rotational": disk.rotational,
        "transport": disk.transport, "controller": disk.controller,
        "paths": list(disk.paths), "asleep_by_kernel": disk.runtime_suspended,
        "smart_device": disk.smart_device, "smart_type": disk.smart_type,
        "state": report.state, "health": judged.level, "reasons": list(judged.reasons),
        "smart": smart_to_dict(report.smart, now),
        "attempt": smart_to_dict(report.attempt, now),
        "growth": [grown._asdict() for grown in report.growth],
    }


def entries(pools: Iterable[Pool], reading: DiskReading, now: float,
            only: str | None = None) -> list[dict[str, Any]]:
    """One entry per pool, leaf vdev and disk under it (`only`: one pool's)."""
    found = []
    for pool in pools:
        if only is not None and pool.name != only:
            continue
        for vdev in pool.vdevs:
            chain = reading.chain(vdev.name) if vdev.is_leaf else None
            if chain is None:
                continue
            layers = [layer._asdict() for layer in chain.layers]
            reports = reading.of_leaf(vdev.name)
            if not reports:
                found.append({"pool": pool.name, "vdev": vdev.name, "group": vdev.group,
                              "vdev_state": vdev.state, "layers": layers,
                              "note": chain.note or None, "disk": None})
            for report in reports:
                found.append({"pool": pool.name, "vdev": vdev.name, "group": vdev.group,
                              "vdev_state": vdev.state, "layers": layers,
                              **report_to_dict(report, now)})
    return found


def device_label(entry: dict[str, Any]) -> str:
    """smartctl_exporter's ``device`` label: the device smartctl opened, without /dev/."""
    device = entry.get("smart_device") or f"/dev/{entry.get('disk')}"
    return str(device).removeprefix("/dev/").replace("/", "_")


ATTRIBUTE_VALUES = (("raw", "raw"), ("value", "value"), ("worst", "worst"),
                    ("thresh", "threshold"))


def metrics(disk_entries: list[dict[str, Any]]) -> list[MetricFamily]:
    """smartctl_exporter's families for the disks read (and zsn's for what it adds)."""
    info = MetricFamily("smartctl_device", "gauge", "Device info (labels), 1.")
    status = MetricFamily("smartctl_device_smart_status", "gauge",
                          "General smart status: 1 passed, 0 failed.")
    exit_status = MetricFamily("smartctl_device_smartctl_exit_status", "gauge",
                               "Exit status of smartctl on the device.")
    temperature = MetricFamily("smartctl_device_temperature", "gauge",
                               "Device temperature celsius.")
    power_on = MetricFamily("smartctl_device_power_on_seconds", "counter",
                            "Device power on seconds.")
    cycles = MetricFamily("smartctl_device_power_cycle_count", "counter",
                          "Device power cycle count.")
    capacity = MetricFamily("smartctl_device_capacity_bytes", "gauge",
                            "Device capacity in bytes.")
    rotation = MetricFamily("smartctl_device_rotation_rate", "gauge",
                            "Device rotation rate (0: solid-state).")
    attribute = MetricFamily("smartctl_device_attribute", "gauge",
                             "Device attributes (the ones zsn watches: 5, 187, 197, 198, "
                             "199).")
    # counters, as smartctl_exporter types them (metrics.go, smartctl.go)
    nvme = {key: MetricFamily(f"smartctl_device_{key}", "counter", text) for key, text in (
        ("percentage_used", "Device write percentage used."),
        ("available_spare", "Normalized percentage (0 to 100%) of the remaining spare "
                            "capacity available."),
        ("available_spare_threshold", "The available spare below which the device warns "
                                      "(0 to 100%)."),
        ("critical_warning", "This field indicates critical warnings for the state of "
                             "the controller."),
        ("media_errors", "Number of unrecovered data integrity errors."),
        ("num_err_log_entries", "Number of error information log entries over the life "
                                "of the controller."))}
    grown = MetricFamily("smartctl_scsi_grown_defect_list", "gauge",
                         "Device SCSI grown defect list counter.")
    age = MetricFamily("zsn_zfs_disk_smart_age_seconds", "gauge",
                       "Seconds since the disk's last SMART reading (zsn reads each disk "
                       "at most every 10 minutes).")
    asleep = MetricFamily("zsn_zfs_disk_asleep", "gauge",
                          "1 when the disk was asleep at the last attempt (not woken to "
                          "read SMART).")
    level = MetricFamily("zsn_zfs_disk_health", "gauge",
                         "1 for the disk's health as zsn judges it (label health: failing, "
                         "warning, ok, asleep, unreadable, unread, none).")
    for entry in disk_entries:
        if entry.get("disk") is None:
            continue
        labels = {"device": device_label(entry), "pool": entry["pool"],
                  "vdev": entry["vdev"]}
        level.add({**labels, "health": entry["health"]}, 1)
        attempt = entry.get("attempt")
        asleep.add(labels, int(bool(attempt and attempt["state"] == "standby")
                               or bool(entry.get("asleep_by_kernel"))))
        smart = entry.get("smart")
        if smart is None:
            continue
        age.add(labels, (attempt or smart)["age_seconds"])
        info.add({**labels, "protocol": smart["protocol"] or "",
                  "model_name": smart["model"] or entry.get("model") or "",
                  "serial_number": smart["serial"] or entry.get("serial") or "",
                  "firmware_version": smart["firmware"] or ""}, 1)
        if smart["passed"] is not None:
            status.add(labels, int(smart["passed"]))
        if smart["exit_status"] is not None:
            exit_status.add(labels, smart["exit_status"])
        if smart["temperature"] is not None:
            temperature.add({**labels, "temperature_type": "current"}, smart["temperature"])
        if smart["power_on_hours"] is not None:
            power_on.add(labels, smart["power_on_hours"] * 3600)
        for family, key in ((cycles, "power_cycles"), (capacity, "capacity"),
                            (rotation, "rotation_rate"), (grown, "grown_defects")):
            if smart[key] is not None:
                family.add(labels, smart[key])
        for key, family in nvme.items():
            value = smart["error_log_entries" if key == "num_err_log_entries" else key]
            if value is not None and smart["protocol"] == "NVMe":
                family.add(labels, value)
        for item in smart["attributes"]:
            for value_type, field in ATTRIBUTE_VALUES:
                if item[field] is not None:
                    attribute.add({**labels, "attribute_name": item["name"],
                                   "attribute_id": str(item["id"]),
                                   "attribute_value_type": value_type}, item[field])
    return [info, status, exit_status, temperature, power_on, cycles, capacity, rotation,
            attribute, *nvme.values(), grown, age, asleep, level]
