"""Advice on the captured bonds, the export's JSON and Prometheus text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.schema import check_export
from tests.unit.links.conftest import LINK_FIXTURES, captured_snapshot
from zsn.exporter import document as zsn_export
from zsn.links import bonding
from zsn.links import export as links_export
from zsn.links.lint import RULES, lint_links
from zsn.links.live import BondDetails
from zsn.links.persist import LinkConfig, Owner, Persisted
from zsn.lint import Finding
from zsn.system import rtnetlink
from zsn.system.host import Host

NETPLAN = Owner("netplan", "netplan config found")


def ids(findings: list[Finding]) -> list[tuple[str, str | None]]:
    return sorted((f.id, f.subject) for f in findings)


def test_bond_advice_on_the_lab_capture() -> None:
    findings = lint_links(captured_snapshot(), None, Persisted())
    assert ids(findings) == [("LINK001", "rr0"), ("LINK004", "adnp"), ("LINK006", "adnp")]
    no_partner = next(f for f in findings if f.id == "LINK006")
    assert no_partner.severity == "error" and "00:00:00:00:00:00" in no_partner.message
    rr = next(f for f in findings if f.id == "LINK001")
    assert "one VLAN per port" in rr.fix and rr.source


def test_members_down_are_reported() -> None:
    findings = lint_links(captured_snapshot(".member-down"), None, Persisted())
    down = sorted(f.message for f in findings if f.id == "LINK008")
    assert down == ["member eth2x is down (1 link failure)",
                    "member eth4x is down (1 link failure)",
                    "member eth6x is down (1 link failure)"]


def test_live_and_config_differences(tmp_path: Path) -> None:
    persisted = Persisted({
        "rr0": LinkConfig("rr0", "bond", ("eth1x",), mtu=1500, mode="balance-rr",
                          source="/etc/netplan/01.yaml"),
        "bond7": LinkConfig("bond7", "bond", ("eth9",), source="/etc/netplan/01.yaml"),
        "rr0.10": LinkConfig("rr0.10", "vlan", parent="rr0", vlan_id=10, mtu=9000,
                             source="/etc/netplan/01.yaml"),
    })
    findings = lint_links(captured_snapshot(), NETPLAN, persisted, Host(tmp_path))
    drift = {f.subject: f for f in findings if f.id == "LINK007"}
    assert drift["rr0"].message == ("a reboot changes it: members eth1x,eth2x live, eth1x at "
                                    "boot; mtu 9000 live, 1500 at boot")
    assert drift["bond7"].severity == "info" and "next boot" in drift["bond7"].message
    assert "exists live only" in drift["ad0"].message and drift["ad0"].fix_plan is not None
    assert drift["ad0"].fix == "zsn link persist ad0"
    jumbo = next(f for f in findings if f.id == "LINK003")
    assert jumbo.subject == "rr0.10" and "above its parent rr0's 1500" in jumbo.message


def test_config_problem_is_an_error() -> None:
    findings = lint_links(captured_snapshot(), NETPLAN,
                          Persisted(problems=["/etc/netplan/01.yaml: line 3: bad"]))
    assert findings[0].id == "LINK000" and findings[0].severity == "error"


def test_every_rule_has_a_title() -> None:
    assert all(rule.startswith("LINK") and title for rule, title in RULES.items())


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    snapshot = captured_snapshot()
    details = BondDetails({"ad0": bonding.parse_proc_bonding(
        (LINK_FIXTURES / "proc-net-bonding-ad0.txt").read_text())}, ())
    monkeypatch.setattr(links_export, "read_links", lambda host: (snapshot, details))
    later = {index: rtnetlink.Counters(*(value + 250 for value in sample))
             for index, sample in snapshot.counters.items()}
    monkeypatch.setattr(rtnetlink, "read_counters", lambda: later)
    monkeypatch.setattr(links_export, "RATE_WINDOW", 0.01)
    result = zsn_export.collect(Host(tmp_path), ["links"])
    return result.document


def test_json_carries_stack_members_counters_and_rates(exported: dict[str, Any]) -> None:
    links = {i["name"]: i for i in exported["links"]["interfaces"]}
    ad0 = links["ad0"]
    assert (ad0["kind"], ad0["state"], ad0["mtu"]) == ("bond", "up", 1500)
    assert ad0["bond"]["mode"] == "802.3ad" and ad0["bond"]["lacp_partner"] is True
    members = {m["name"]: m for m in ad0["members"]}
    assert members["eth3x"]["mii_status"] == "up" and members["eth3x"]["role"] == "active"
    ab0 = {m["name"]: m for m in links["ab0"]["members"]}
    assert (ab0["eth7x"]["role"], ab0["eth7x"]["slave_state"]) == ("backup", "backup")
    assert members["eth3x"]["partner_mac"] == ad0["bond"]["partner_mac"]
    assert links["rr0.10"]["parent"] == "rr0" and links["rr0.10"]["vlan_id"] == 10
    assert links["br0"]["bridge"] == {"stp": True}
    assert links["eth1x"]["counters"]["rx_bytes"] + 250 > 250
    assert links["lo"]["rates"]["rx_bytes_per_second"] > 0  # 250 B in the short window
    assert exported["links"]["config"]["owner"] == "none"
    assert {f["id"] for f in exported["links"]["findings"]} >= {"LINK001", "LINK006"}
    check_export(exported)


def test_prometheus_text_parses_and_has_member_gauges(exported: dict[str, Any]) -> None:
    from zsn.exporter.document import ExportResult, to_prometheus

    text = to_prometheus(ExportResult(exported, []))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    up = {s.labels["interface"]: s.value for s in families["zsn_link_bond_member_up"].samples}
    assert up["eth3x"] == 1.0
    partner = {s.labels["bond"]: s.value for s in families["zsn_link_bond_lacp_partner"].samples}
    assert partner == {"ad0": 1.0, "adnp": 0.0}
    received = families["zsn_link_receive_bytes"]  # the parser drops _total
    assert any(s.labels["interface"] == "rr0.10" for s in received.samples)
    info = {s.labels["interface"]: s.labels for s in families["zsn_link_info"].samples}
    assert info["eth1x"]["master"] == "rr0" and info["rr0.10"]["parent"] == "rr0"


def test_prometheus_export_reads_counters_once_without_a_window(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A scraper computes rates from counters itself: the scrape must not wait out the
    JSON export's sampling window, nor read the counters a second time."""
    snapshot = captured_snapshot()
    monkeypatch.setattr(links_export, "read_links",
                        lambda host: (snapshot, BondDetails({}, ())))

    def second_reading() -> None:
        raise AssertionError("counters read a second time")

    monkeypatch.setattr(rtnetlink, "read_counters", second_reading)
    result = zsn_export.collect(Host(tmp_path), ["links"], sample_rates=False)
    section = result.document["links"]
    assert section["rate_window_seconds"] is None
    assert all(each["rates"] is None for each in section["interfaces"])
    from zsn.exporter.document import to_prometheus

    families = {f.name for f in text_string_to_metric_families(to_prometheus(result))}
    assert "zsn_link_receive_bytes" in families  # the parser drops a counter's _total
