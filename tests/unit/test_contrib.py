"""What ships under contrib/: alert rules that promtool accepts and whose unit tests pass,
a Grafana dashboard that names only metrics zsn writes, systemd units that systemd
accepts and rates as hardened, and an Ansible local fact that Ansible itself runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.needs import needs_tools
from tests.schema import check_export, check_state
from zsn.domains import domains, load
from zsn.exporter import document as export

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
METRIC_RE = re.compile(r"\b(?:zsn|wireguard|zfs)_[a-z0-9_]+")
"""A metric zsn writes, in a PromQL expression (every one has one of these prefixes)."""
ALERT_TESTS = ("zsn-alerts.test.yml", "zsn-alerts-scrub.test.yml",
               "zsn-alerts-protection.test.yml")
MAX_EXPOSURE = 3.0
"""`systemd-analyze security` rates 0-10; below 4 is "OK" (a root daemon that reads
network state cannot go much lower: it keeps AF_NETLINK and CAP_NET_ADMIN)."""


def written_metrics() -> set[str]:
    """Every metric name zsn can write, from the domains' families and the collector lines."""
    names = {family.name for domain in domains() for family in load(domain.export).prometheus({})}
    return names | {family.name for family in export.collector_families([])}


def dashboard_metrics() -> dict[str, set[str]]:
    """Metric names by panel title, from every query of the dashboard (and its variables)."""
    dashboard = json.loads((CONTRIB / "grafana" / "zsn-dashboard.json").read_text())
    found: dict[str, set[str]] = {}
    for panel in dashboard["panels"]:
        for target in panel.get("targets", ()):
            found.setdefault(panel["title"], set()).update(METRIC_RE.findall(target["expr"]))
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            found.setdefault(f"${variable['name']}", set()).update(
                METRIC_RE.findall(query["query"]))
    return found


def alert_metrics() -> dict[str, set[str]]:
    rules = yaml.safe_load((CONTRIB / "prometheus" / "zsn-alerts.yml").read_text())
    return {rule["alert"]: set(METRIC_RE.findall(rule["expr"]))
            for group in rules["groups"] for rule in group["rules"]}


def test_the_alert_rules_pass_promtool() -> None:
    needs_tools("promtool")
    directory = CONTRIB / "prometheus"
    checked = subprocess.run(["promtool", "check", "rules", "zsn-alerts.yml"], cwd=directory,
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(["promtool", "test", "rules", *ALERT_TESTS], cwd=directory,
                            capture_output=True, text=True, timeout=300, check=False)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_is_unit_tested_firing() -> None:
    tested = set()
    for name in ALERT_TESTS:
        spec = yaml.safe_load((CONTRIB / "prometheus" / name).read_text())
        tested |= {case["alertname"] for test in spec["tests"]
                   for case in test.get("alert_rule_test", ()) if case["exp_alerts"]}
    assert tested == set(alert_metrics())


@pytest.mark.parametrize("source", ["dashboard", "alerts"])
def test_every_query_names_metrics_zsn_writes(source: str) -> None:
    """Statically, against the families zsn renders; tests/kernel/test_serve.py checks the
    same names against a live scrape with every section present."""
    by_item = dashboard_metrics() if source == "dashboard" else alert_metrics()
    written = written_metrics()
    for item, names in by_item.items():
        assert names - written == set(), f"{item}: {sorted(names - written)} not written by zsn"
    assert set().union(*by_item.values())  # the regex found something


def test_the_dashboard_imports_anywhere() -> None:
    """No import-time placeholders (file provisioning does not fill `${DS_...}` inputs):
    the data source is a variable, every panel uses it, ids are unique."""
    dashboard = json.loads((CONTRIB / "grafana" / "zsn-dashboard.json").read_text())
    assert dashboard["id"] is None and 8 <= len(dashboard["uid"]) <= 40
    assert "__inputs" not in dashboard
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert 1 <= panel["gridPos"]["w"] <= 24


@pytest.mark.parametrize("unit", ["zsn-serve.service", "zsn-textfile.service"])
def test_the_units_are_valid_and_hardened(unit: str, tmp_path: Path) -> None:
    needs_tools("systemd-analyze")
    # systemd checks that ExecStart's program exists: point it at one that does.
    text = (CONTRIB / "systemd" / unit).read_text().replace("/usr/local/bin/zsn", "/bin/true")
    copy = tmp_path / unit
    copy.write_text(text)
    shutil.copy(CONTRIB / "systemd" / "zsn-textfile.timer", tmp_path)
    verified = subprocess.run(["systemd-analyze", "verify", str(copy),
                               str(tmp_path / "zsn-textfile.timer")],
                              capture_output=True, text=True, timeout=60, check=False)
    assert verified.returncode == 0 and not verified.stderr.strip(), verified.stderr
    security = subprocess.run(["systemd-analyze", "security", "--offline=true", str(copy)],
                              capture_output=True, text=True, timeout=60, check=False)
    score = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout)
    assert score and float(score.group(1)) <= MAX_EXPOSURE, security.stdout[-600:]
    settings = dict(line.split("=", 1) for line in text.splitlines()
                    if "=" in line and not line.startswith("#"))
    assert settings["CapabilityBoundingSet"] == "CAP_NET_ADMIN"
    assert settings["NoNewPrivileges"] == "yes" and settings["ProtectSystem"] == "strict"


def run_fact(fact_dir: Path, path: str) -> dict[str, object]:
    needs_tools("ansible")
    result = subprocess.run(
        ["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m", "setup", "-a",
         f"filter=ansible_local fact_path={fact_dir}", "-o"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PATH": path, "ANSIBLE_LOCALHOST_WARNING": "false",
             "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false", "ANSIBLE_NOCOLOR": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    reply = json.loads(result.stdout.split(" => ", 1)[1])
    return reply["ansible_facts"]["ansible_local"]  # type: ignore[no-any-return]


def test_the_ansible_fact_is_run_by_ansible(tmp_path: Path) -> None:
    """Ansible runs the executable facts and reads zsn's export and its state (`zsn state
    export`) as JSON (exit 3, a partial export, is still facts)."""
    fact_dir = tmp_path / "facts.d"
    fact_dir.mkdir()
    shutil.copy(CONTRIB / "ansible" / "zsn.fact", fact_dir / "zsn.fact")
    # `zsn` as installed: a stand-in on PATH runs this checkout's zsn.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "zsn").write_text(f"#!/bin/sh\nPYTHONPATH={CONTRIB.parent} exec "
                                 f"{sys.executable} -m zsn \"$@\"\n")
    (bin_dir / "zsn").chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    shutil.copy(CONTRIB / "ansible" / "zsn_state.fact", fact_dir / "zsn_state.fact")
    both = run_fact(fact_dir, path)
    facts, state = both["zsn"], both["zsn_state"]
    assert isinstance(facts, dict) and isinstance(state, dict)
    check_export(facts)
    assert facts["zsn"]["schema"] == 1 and "links" in facts
    check_state(state)  # the desired state as it is now (zsn state export)
    assert state["version"] == 1

    # a partial export: zsn exits 3, the document is whole and is the fact
    partial = {"zsn": {"version": "0", "schema": 1}, "host": {"hostname": "h", "time": 0},
               "wireguard": {"errors": ["not root"]}}
    (bin_dir / "zsn").write_text(f"#!/bin/sh\necho '{json.dumps(partial)}'\nexit 3\n")
    assert run_fact(fact_dir, path)["zsn"] == partial == run_fact(fact_dir, path)["zsn_state"]


TIMER_UNITS = ("zsn-zfs-snapshots.service", "zsn-zfs-snapshots.timer",
               "zsn-zfs-replicate.service", "zsn-zfs-replicate.timer")


def test_the_zfs_timer_units_are_what_install_timer_writes() -> None:
    from zsn.zfs.timers import unit_texts

    written = unit_texts(900, "/usr/local/bin/zsn")
    assert set(written) == set(TIMER_UNITS)
    for name in TIMER_UNITS:
        shipped = (CONTRIB / "systemd" / name).read_text()
        assert shipped.endswith(written[name]), name
        assert all(line.startswith("#") for line in shipped[:-len(written[name])].splitlines())


def test_the_zfs_timer_units_pass_systemd_analyze(tmp_path: Path) -> None:
    needs_tools("systemd-analyze")
    for name in TIMER_UNITS:  # systemd checks that ExecStart's program exists
        text = (CONTRIB / "systemd" / name).read_text().replace("/usr/local/bin/zsn",
                                                                 "/bin/true")
        (tmp_path / name).write_text(text)
    verified = subprocess.run(["systemd-analyze", "verify",
                               *(str(tmp_path / name) for name in TIMER_UNITS)],
                              capture_output=True, text=True, timeout=60, check=False)
    assert verified.returncode == 0 and not verified.stderr.strip(), verified.stderr


@pytest.mark.parametrize("every", [60, 300, 900, 1800, 3600, 6 * 3600])
def test_a_timer_interval_is_a_calendar_systemd_spaces_so(every: int) -> None:
    from datetime import datetime

    from zsn.zfs.timers import calendar_every

    needs_tools("systemd-analyze")
    expression = calendar_every(every)
    shown = subprocess.run(["systemd-analyze", "calendar", "--iterations", "4", expression],
                           capture_output=True, text=True, timeout=60, check=False,
                           env={**os.environ, "TZ": "UTC", "LC_ALL": "C"})
    assert shown.returncode == 0, shown.stderr
    assert f"Normalized form: {expression}" in shown.stdout
    times = [datetime.strptime(line.split(": ", 1)[1].strip(), "%a %Y-%m-%d %H:%M:%S %Z")
             for line in shown.stdout.splitlines()
             if line.strip().startswith(("Next elapse:", "Iter. #"))]
    assert len(times) == 4
    assert {(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)} == {every}
