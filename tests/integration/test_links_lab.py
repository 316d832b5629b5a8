"""Links on this host's kernel (veth and bridges work here; bonds and VLANs run in the
kernel lab, tests/kernel/test_links.py): zsn runs inside namespaces the tests build,
as `zsn link ...`, `zsn --export links` and the TUI, against the live kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab.mounts import private_argv
from tests.lab.netns import Lab, require_lab, run, wait_for

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Segment:
    """Namespace `ns` (where zsn runs) with veths `ports` to the namespaces `hosts`, whose
    ends have `addresses` in one /24: bridging the ports joins them."""

    lab: Lab
    ns: str
    hosts: tuple[str, str]
    ports: tuple[str, str]
    addresses: tuple[str, str]
    bridge: str


@pytest.fixture
def links_lab() -> Iterator[Lab]:
    require_lab(("ip", "ping"))
    built = Lab()
    try:
        yield built
    finally:
        built.close()


@pytest.fixture
def segment(links_lab: Lab) -> Segment:
    lab = links_lab
    ns = lab.namespace("z")
    hosts = (lab.namespace("h1"), lab.namespace("h2"))
    ports = (lab.name("p1"), lab.name("p2"))
    addresses = ("10.231.7.1", "10.231.7.2")
    for port, host, address in zip(ports, hosts, addresses, strict=True):
        run(["ip", "-n", ns, "link", "add", port, "type", "veth", "peer", "name", "e0",
             "netns", host])
        run(["ip", "-n", ns, "link", "set", port, "up"])
        run(["ip", "-n", host, "addr", "add", f"{address}/24", "dev", "e0"])
        run(["ip", "-n", host, "link", "set", "e0", "up"])
    return Segment(lab, ns, hosts, ports, addresses, lab.name("br"))


def zsn(ns: str, *argv: str, env: dict[str, str] | None = None,
        expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SSH_CONNECTION"}
    environment.update(env or {})
    result = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "zsn", *argv],
                            capture_output=True, text=True, timeout=60, env=environment,
                            cwd=REPO, check=False)
    if expect is not None:
        assert result.returncode == expect, result.stderr + result.stdout
    return result


def links(ns: str) -> dict[str, dict[str, Any]]:
    """The namespace's links as `ip -details -statistics` shows them, by name."""
    data = json.loads(run(["ip", "-n", ns, "-j", "-d", "-s", "link", "show"]).stdout)
    return {link["ifname"]: link for link in data}


def pings(ns: str, address: str, count: int = 1) -> bool:
    return run(["ip", "netns", "exec", ns, "ping", "-c", str(count), "-W", "1", address],
               check=False).returncode == 0


def test_bridge_lifecycle_with_traffic(segment: Segment) -> None:
    ns, bridge, (p1, p2) = segment.ns, segment.bridge, segment.ports
    before = set(links(ns))
    assert not pings(segment.hosts[0], segment.addresses[1])
    dry = zsn(ns, "link", "create", "bridge", bridge, "--ports", f"{p1},{p2}", "--dry-run")
    assert f"Plan: create bridge {bridge} ({p1}, {p2})" in dry.stdout
    assert bridge not in links(ns)
    zsn(ns, "link", "create", "bridge", bridge, "--ports", f"{p1},{p2}")
    now = links(ns)
    assert now[p1]["master"] == bridge and now[p2]["master"] == bridge
    wait_for(lambda: pings(segment.hosts[0], segment.addresses[1]), 10, "ping across")

    listing = zsn(ns, "link", "list").stdout.splitlines()
    assert listing[0].split() == ["NAME", "KIND", "STATE", "MTU", "DETAIL", "ADDRESSES"]
    rows = [line.split()[0:2] for line in listing[1:]]
    assert [bridge, "bridge"] in rows and ["├", p1] in rows and ["└", p2] in rows

    # pings flow from before the export's two counter readings until after them, however
    # long a loaded machine takes to start zsn
    traffic = subprocess.Popen(["ip", "netns", "exec", segment.hosts[0], "ping", "-w", "120",
                                "-i", "0.02", "-s", "1200", segment.addresses[1]],
                               stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: links(ns)[p1]["stats64"]["rx"]["bytes"] > 10 * 1228, 30,
                 f"ten pings into {p1}")
        exported = json.loads(zsn(ns, "--export", "links").stdout)["links"]
    finally:
        traffic.terminate()
        traffic.wait(timeout=20)
    by_name = {i["name"]: i for i in exported["interfaces"]}
    assert [m["name"] for m in by_name[bridge]["members"]] == [p1, p2]
    assert by_name[p1]["master"] == bridge and by_name[p1]["state"] == "up"
    assert by_name[p1]["counters"]["rx_bytes"] > 10 * 1228
    assert by_name[p1]["rates"]["rx_bytes_per_second"] > 1000
    assert exported["rate_window_seconds"] == 0.25

    zsn(ns, "link", "remove-member", bridge, p2)
    assert "master" not in links(ns)[p2]
    assert not pings(segment.hosts[0], segment.addresses[1])
    zsn(ns, "link", "add-member", bridge, p2)
    wait_for(lambda: pings(segment.hosts[0], segment.addresses[1]), 10, "ping again")
    zsn(ns, "link", "set", bridge, "--mtu", "1400")
    assert links(ns)[bridge]["mtu"] == 1400
    shown = zsn(ns, "link", "show", bridge).stdout
    assert f"{bridge}: bridge, up, MTU 1400" in shown and f"port:       {p1} forwarding" in shown

    zsn(ns, "link", "delete", bridge)
    after = links(ns)
    assert set(after) == before
    assert "master" not in after[p1] and "master" not in after[p2]


def test_a_failure_part_way_undoes_the_plan(segment: Segment) -> None:
    """The second port vanishes between the plan and its application: the first port
    is released and the bridge deleted again."""
    ns, bridge, (p1, p2) = segment.ns, segment.bridge, segment.ports
    script = textwrap.dedent(f"""
        import subprocess
        from zsn.errors import ZsnError
        from zsn.links import actions
        from zsn.system.host import Host
        plan = actions.plan_create_bridge(actions.Context.read(Host()), {bridge!r},
                                          [{p1!r}, {p2!r}])
        subprocess.run(["ip", "link", "del", {p2!r}], check=True)
        try:
            plan.apply()
        except ZsnError as exc:
            print(exc)
    """)
    result = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", script],
                            capture_output=True, text=True, timeout=60, cwd=REPO, check=True)
    assert f"failed at 'add port {p2} to {bridge}'" in result.stdout
    assert f"undone: add port {p1} to {bridge}; create bridge {bridge}" in result.stdout
    after = links(ns)
    assert bridge not in after and "master" not in after[p1]


def test_the_ssh_link_needs_its_name_and_the_default_route_is_guarded(
        segment: Segment) -> None:
    ns, bridge, (p1, _p2) = segment.ns, segment.bridge, segment.ports
    run(["ip", "-n", ns, "addr", "add", "10.231.7.9/24", "dev", p1])
    ssh = {"SSH_CONNECTION": f"{segment.addresses[0]} 50022 10.231.7.9 22"}
    refused = zsn(ns, "link", "create", "bridge", bridge, "--ports", p1, env=ssh, expect=2)
    assert (f"this SSH session (from {segment.addresses[0]} to 10.231.7.9, dev {p1}) runs "
            f"over {p1}; it changes {p1}, which could cut the session off" in refused.stderr)
    assert f"--confirm-ssh-link {p1}" in refused.stderr
    assert bridge not in links(ns)
    zsn(ns, "link", "create", "bridge", bridge, "--ports", p1, "--dry-run",
        "--confirm-ssh-link", p1, env=ssh)

    run(["ip", "-n", ns, "route", "add", "default", "via", segment.addresses[0]])
    guarded = zsn(ns, "link", "create", "bridge", bridge, "--ports", p1, expect=2)
    assert f"{p1} is up with 10.231.7.9/24 and carries the default route" in guarded.stderr


def test_config_only_writes_netplan_that_netplan_accepts(tmp_path: Path) -> None:
    from tests.needs import needs_tools

    needs_tools("netplan")
    (tmp_path / "etc/netplan").mkdir(parents=True)
    (tmp_path / "etc/netplan/01-netcfg.yaml").write_text(
        (REPO / "tests/fixtures/links/netplan-01-netcfg.yaml").read_text())
    (tmp_path / "etc/netplan/01-netcfg.yaml").chmod(0o600)
    root = str(tmp_path)
    refused = subprocess.run([sys.executable, "-m", "zsn", "--root", root, "link", "create",
                              "bridge", "br300", "--ports", "eno3"], capture_output=True,
                             text=True, cwd=REPO, timeout=60, check=False)
    assert refused.returncode == 2 and "edit its config only (--config-only)" in refused.stderr
    for argv in (["create", "bond", "bond0", "--mode", "active-backup", "--members",
                  "eno3,eno4", "--mtu", "9000", "--config-only"],
                 ["create", "vlan", "bond0.300", "--parent", "bond0", "--id", "300",
                  "--config-only"],
                 ["create", "bridge", "br300", "--ports", "bond0.300", "--config-only"],
                 ["remove-member", "br0", "eno2", "--config-only"]):
        result = subprocess.run([sys.executable, "-m", "zsn", "--root", root, "link", *argv],
                                capture_output=True, text=True, cwd=REPO, timeout=60,
                                check=False)
        assert result.returncode == 0, result.stderr
    run(["netplan", "generate", "--root-dir", root])
    generated = tmp_path / "run/systemd/network"
    assert "Mode=active-backup" in (generated / "10-netplan-bond0.netdev").read_text()
    assert "Bridge=br300" in (generated / "10-netplan-bond0.300.network").read_text()
    assert "Bridge=br0" not in (generated / "10-netplan-eno2.network").read_text()
    backup = tmp_path / "etc/netplan/01-netcfg.yaml.zsn-bak"
    assert backup.exists()
    lint = subprocess.run([sys.executable, "-m", "zsn", "--root", root, "link", "lint"],
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert "no findings" in lint.stdout or "LINK00" in lint.stdout


PANE_SCRIPT = """
import asyncio, json, sys
from zsn.system.host import Host
from zsn.tui.app import PaneSwitcher, ZsnApp
from zsn.tui.screens.plan import PlanScreen
from zsn.tui.widgets.table import LiveTable
import zsn.tui.panes.wireguard

# The machine's own root: nothing may be written under its /var/lib/zsn.
zsn.tui.panes.wireguard.record_history = lambda recorder, snapshot: snapshot

async def main():
    app = ZsnApp(Host(), refresh=0.5)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        app.query_one("#panes", PaneSwitcher).active = "tab-links"
        table = None
        for _ in range(200):
            await pilot.pause(0.05)
            found = app.query("#links-table")
            if found and sys.argv[1] in found.first().shown_keys:
                table = found.first()
                break
        rows = [[key, table.get_row(key).depth, table.cell(key, "kind"),
                 table.cell(key, "state")] for key in table.shown_keys]
        table.move_cursor(key=sys.argv[1])
        await pilot.pause(0.2)
        await pilot.press("d")
        for _ in range(200):
            await pilot.pause(0.05)
            if isinstance(app.screen, PlanScreen):
                break
        plan = app.screen.text
        await pilot.press("y")
        for _ in range(200):
            await pilot.pause(0.05)
            if sys.argv[1] not in table.shown_keys:
                break
        print(json.dumps({"rows": rows, "plan": plan, "after": table.shown_keys}))

asyncio.run(main())
"""


def test_pane_shows_the_tree_live_and_deletes_with_a_plan(segment: Segment) -> None:
    ns, bridge, (p1, p2) = segment.ns, segment.bridge, segment.ports
    zsn(ns, "link", "create", "bridge", bridge, "--ports", f"{p1},{p2}")
    # The kernel sets a new bridge's operstate up a moment after its carrier (linkwatch).
    wait_for(lambda: links(ns)[bridge]["operstate"] == "UP", 10, "the bridge up")
    result = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", PANE_SCRIPT,
                             bridge], capture_output=True, text=True, timeout=120, cwd=REPO,
                            env={k: v for k, v in os.environ.items() if k != "SSH_CONNECTION"},
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.splitlines()[-1])
    names = [row[0] for row in seen["rows"]]
    at = names.index(bridge)
    assert seen["rows"][at] == [bridge, 0, "bridge", "up"]
    assert [row[:2] for row in seen["rows"][at + 1:at + 3]] == [[p1, 1], [p2, 1]]
    assert f"Plan: delete {bridge}" in seen["plan"]
    assert f"remove port {p1} from {bridge}" in seen["plan"]
    assert bridge not in seen["after"]
    assert bridge not in links(ns)


def test_apply_makes_the_links_a_file_names_then_plans_nothing(
        segment: Segment, tmp_path: Path) -> None:
    """`zsn apply` of a links section (a bridge over the two ports, their MTU) in the
    namespace: the dry run changes nothing, the apply passes traffic, the same file and
    the machine's own export plan nothing, a tried change is rolled back, bad input is
    one line (exit 2) and changes nothing."""
    ns, bridge, (p1, p2) = segment.ns, segment.bridge, segment.ports
    store = tmp_path / "run-zsn"  # the try's record: the test's, never the host's
    store.mkdir(mode=0o700)

    def zsn(ns: str, *argv: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(private_argv({str(store): "/run/zsn"}, [
            "ip", "netns", "exec", ns, sys.executable, "-m", "zsn", *argv]),
            capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
            env={k: v for k, v in os.environ.items() if k != "SSH_CONNECTION"})
        if expect is not None:
            assert result.returncode == expect, result.stderr + result.stdout
        return result

    wanted = tmp_path / "state.yaml"
    wanted.write_text(f"version: 1\nlinks:\n  bridges:\n    - {{name: {bridge}, ports: "
                      f"[{p1}, {p2}], stp: false}}\n  mtu: {{{p1}: 1400, {p2}: 1400}}\n")
    dry = zsn(ns, "apply", str(wanted), "--dry-run", "--diff").stdout
    assert f"  - create bridge {bridge} ({p1}, {p2})\n  - set {p1} MTU to 1400\n" in dry
    assert f"  6. lower {p2} MTU 1500 -> 1400\n" in dry
    assert "note: live only: the change is gone after a reboot (persist: true in the " \
        "section)" in dry
    assert bridge not in links(ns) and links(ns)[p1]["mtu"] == 1500
    zsn(ns, "apply", str(wanted))
    now = links(ns)
    assert now[p1]["master"] == bridge and now[p2]["master"] == bridge
    assert (now[p1]["mtu"], now[p2]["mtu"], now[bridge]["mtu"]) == (1400, 1400, 1400)
    wait_for(lambda: pings(segment.hosts[0], segment.addresses[1]), 10, "ping across")
    again = zsn(ns, "apply", str(wanted)).stdout
    assert again.endswith("(nothing to change)\n"), again

    exported = zsn(ns, "state", "export", "links").stdout
    (tmp_path / "export.yaml").write_text(exported)
    assert f"name: {bridge}" in exported
    as_is = json.loads(zsn(ns, "apply", str(tmp_path / "export.yaml"), "--json").stdout)
    assert (as_is["changed"], as_is["applied"], as_is["steps"]) == (False, False, [])

    # one port out, tried: the guardian's record puts it back on rollback
    wanted.write_text(wanted.read_text().replace(f"[{p1}, {p2}]", f"[{p1}]"))
    tried = json.loads(zsn(ns, "apply", str(wanted), "--json", "--try", "300").stdout)
    assert tried["applied"] and tried["parts"] == [f"remove {p2} from bridge {bridge}"]
    assert tried["verify"] == [] and tried["try"]["seconds"] == 300
    assert "master" not in links(ns)[p2]
    assert [path.name for path in (store / "changes").iterdir()] == [tried["try"]["id"]]
    zsn(ns, "rollback", tried["try"]["id"])
    assert links(ns)[p2]["master"] == bridge
    wait_for(lambda: pings(segment.hosts[0], segment.addresses[1]), 10, "ping again")

    wanted.write_text(f"version: 1\nlinks:\n  bridges: [{{name: {bridge}, ports: [nosuch0]}}]\n")
    refused = zsn(ns, "apply", str(wanted), expect=2)
    assert refused.stderr.startswith("zsn apply: invalid: links: ") and \
        refused.stderr.count("\n") == 1 and "nosuch0" in refused.stderr, refused.stderr
    assert refused.stdout == "" and links(ns)[p2]["master"] == bridge

    # a step the kernel refuses (a bridge in a bridge: ELOOP): exit 1, the step named
    other = segment.lab.name("b2")
    run(["ip", "-n", ns, "link", "add", other, "type", "bridge"])
    wanted.write_text(f"version: 1\nlinks:\n  bridges:\n    - {{name: {bridge}, ports: "
                      f"[{p1}, {p2}, {other}]}}\n")
    failed = zsn(ns, "apply", str(wanted), expect=1)
    assert failed.stderr.startswith(f"zsn apply: error: apply {wanted}: failed at 'add port "
                                    f"{other} to {bridge}'") and \
        failed.stderr.count("\n") == 1, failed.stderr
    assert "master" not in links(ns)[other]
