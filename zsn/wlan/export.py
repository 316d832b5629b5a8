"""The ``wlan`` section of `zsn --export`: interfaces, scan results, profiles, findings.

No secret is exported unless asked for: with ``--include-secrets`` each profile
carries the passphrase (or PSK) its backend stores, when zsn can read it.
"""

from __future__ import annotations

from typing import Any

from zsn.eap.profile import EapProfile
from zsn.errors import ZsnError
from zsn.exporter.prometheus import MetricFamily
from zsn.lint import count_by_severity
from zsn.system import files, wireless
from zsn.system.host import Host
from zsn.wlan import iwd, netctl
from zsn.wlan.lint import SUBJECT, read_with_findings
from zsn.wlan.model import BACKENDS, KnownNetwork, ScanEntry, WlanInterface, signal_percent
from zsn.wlan.ssid import display


def present(host: Host) -> bool:
    return bool(wireless.wireless_interfaces(host)) or netctl.installed(host) \
        or files.is_dir(host.path(iwd.PROFILE_DIR))


def _ssid(ssid: bytes | None) -> str | None:
    return display(ssid) if ssid is not None else None


def scan_to_dict(entry: ScanEntry) -> dict[str, Any]:
    return {
        "ssid": _ssid(entry.ssid), "hidden": entry.hidden, "bssid": entry.bssid,
        "signal_dbm": entry.signal_dbm, "frequency": entry.frequency,
        "channel": entry.channel, "security": entry.security, "known": entry.known,
        "connected": entry.connected,
    }


def interface_to_dict(each: WlanInterface) -> dict[str, Any]:
    link = each.link
    return {
        "name": each.name, "backend": each.backend, "state": link.state,
        "connected": link.connected, "ssid": _ssid(link.ssid), "bssid": link.bssid,
        "signal_dbm": link.signal_dbm, "signal_percent": signal_percent(link.signal_dbm),
        "frequency": link.frequency, "channel": link.channel,
        "bitrate_kbps": link.bitrate_kbps, "security": link.security,
        "eap_state": link.eap_state, "mac": each.mac,
        "phy": each.phy, "addresses": list(each.addresses),
        "rfkill": None if each.rfkill is None else {"soft": each.rfkill.soft,
                                                    "hard": each.rfkill.hard},
        "read_only": each.read_only, "also_managed_by": list(each.also_managed_by),
        "backend_unit": each.backend_unit, "backend_unit_enabled": each.backend_unit_enabled,
        "scan": [scan_to_dict(entry) for entry in each.scan],
        "errors": list(each.errors),
    }


def eap_to_dict(profile: EapProfile | None) -> dict[str, Any] | None:
    """An 802.1X profile without its secrets (zsn never reads them out)."""
    if profile is None:
        return None
    return {"method": profile.method, "phase2": profile.phase2, "identity": profile.identity,
            "ca_cert": profile.ca_cert, "server_domain": profile.server_domain,
            "server_checked": profile.server_checked}


def profile_to_dict(net: KnownNetwork) -> dict[str, Any]:
    return {
        "ssid": net.title, "backend": net.backend, "interface": net.interface,
        "id": net.ref, "security": net.security, "autoconnect": net.autoconnect,
        "at_boot": net.at_boot, "hidden": net.hidden, "current": net.current,
        "problem": net.problem, "path": net.path, "eap": eap_to_dict(net.eap),
    }


def _secret(host: Host, net: KnownNetwork, interfaces: list[WlanInterface]
            ) -> dict[str, str] | None:
    from zsn.wlan.wifiqr import wifi_code

    config = next((each.config_path for each in interfaces
                   if each.name == net.interface and each.config_path), None)
    try:
        code = wifi_code(host, net, config)
    except (ZsnError, OSError):
        return None
    if code.secret is None:
        return None
    return {"psk" if code.secret_is_psk else "passphrase": code.secret}


def collect(host: Host, *, include_secrets: bool = False) -> dict[str, Any]:
    snapshot = read_with_findings(host)
    profiles = []
    for net in snapshot.networks:
        data = profile_to_dict(net)
        if include_secrets and net.security != "enterprise":  # no 802.1X password out
            data["secret"] = _secret(host, net, list(snapshot.interfaces))
        profiles.append(data)
    data_out: dict[str, Any] = {
        "interfaces": [interface_to_dict(each) for each in snapshot.interfaces],
        "profiles": profiles,
        "findings": [f.as_dict(SUBJECT) for f in snapshot.findings],
    }
    if snapshot.errors:
        data_out["errors"] = list(snapshot.errors)
    return data_out


def prometheus(data: dict[str, Any]) -> list[MetricFamily]:
    info = MetricFamily("zsn_wlan_interface_info", "gauge",
                        "1 per wireless interface; labels: backend and link state.")
    connected = MetricFamily("zsn_wlan_connected", "gauge",
                             "1 when the interface is associated and authenticated.")
    signal = MetricFamily("zsn_wlan_signal_dbm", "gauge",
                          "Signal of the connected access point, in dBm.")
    bitrate = MetricFamily("zsn_wlan_bitrate_bits_per_second", "gauge",
                           "Transmit bitrate of the link.")
    frequency = MetricFamily("zsn_wlan_frequency_hertz", "gauge",
                             "Centre frequency of the connected channel.")
    scanned = MetricFamily("zsn_wlan_scan_results", "gauge",
                           "Access points (or networks, for iwd) in the last scan.")
    rfkill = MetricFamily("zsn_wlan_rfkill_blocked", "gauge",
                          "1 when the radio is blocked (label kind: soft or hard).")
    profiles = MetricFamily("zsn_wlan_profiles", "gauge", "Known networks per backend.")
    findings = MetricFamily("zsn_wlan_findings", "gauge", "Lint findings by severity.")
    for each in data.get("interfaces", ()):
        labels = {"interface": each["name"]}
        info.add({**labels, "backend": each["backend"] or "none", "state": each["state"]}, 1)
        connected.add(labels, int(bool(each["connected"])))
        if each["connected"]:
            link_labels = {**labels, "ssid": each["ssid"] or "", "bssid": each["bssid"] or ""}
            if each["signal_dbm"] is not None:
                signal.add(link_labels, each["signal_dbm"])
            if each["bitrate_kbps"] is not None:
                bitrate.add(link_labels, each["bitrate_kbps"] * 1000)
            if each["frequency"] is not None:
                frequency.add(link_labels, each["frequency"] * 1_000_000)
        scanned.add(labels, len(each["scan"]))
        if each["rfkill"] is not None:
            for kind in ("soft", "hard"):
                rfkill.add({**labels, "kind": kind}, int(each["rfkill"][kind]))
    counts = dict.fromkeys(BACKENDS, 0)
    for profile in data.get("profiles", ()):
        counts[profile["backend"]] = counts.get(profile["backend"], 0) + 1
    for backend, count in counts.items():
        if count:
            profiles.add({"backend": backend}, count)
    for severity, count in count_by_severity(data.get("findings", ())).items():
        findings.add({"severity": severity}, count)
    return [info, connected, signal, bitrate, frequency, scanned, rfkill, profiles, findings]
