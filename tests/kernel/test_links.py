"""Bonds and VLANs, in the QEMU kernel lab guest (group ``links``): the modules this
host's kernel lacks (bonding, 8021q).

zsn builds the stacks with ``zsn link create`` in a namespace; the far ends are a
partner namespace set up with `ip` (not by zsn): a balance-rr bond with a VLAN at
MTU 9000, and an 802.3ad bond that negotiates LACP. Checked as a user would: jumbo
pings through the VLAN, a member taken down shown down while traffic goes on, the
LACP partner seen, deletion leaving nothing, and netplan files written with
``--persist`` that ``netplan generate`` accepts. The guest's /etc is a throwaway
overlay, so zsn runs on the real root there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab.kernel import modprobe
from tests.lab.netns import Lab, run, wait_for
from tests.lab.networkd import NetworkdRun, run_networkd
from tests.needs import needs_tools
from zsn.links.persist import LinkConfig, Upsert
from zsn.links.persist.networkd import NETWORKD
from zsn.system.host import Host

REPO = Path(__file__).resolve().parents[2]
NETPLAN_FILE = Path("/etc/netplan/01-zsn-lab.yaml")
NETPLAN_DEADLINE = 120
"""`netplan generate` on the guest: Python's start and netplan's generator, some 80
times slower than on a host when the host is loaded (15 s was not enough at a load of
12), then `udevadm control --reload`, which waits up to udevadm's own 60 s for udevd.
A netplan that hangs still fails here."""


def zsn(ns: str, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "zsn", *args],
                            capture_output=True, text=True, timeout=180, cwd=REPO,
                            check=False)
    assert result.returncode == expect, (f"zsn {' '.join(args)}: {result.returncode}\n"
                                         f"{result.stdout}\n{result.stderr}")
    return result


def netplan_generate() -> None:
    """`netplan generate` once udevd has handled the events of the links just made or
    deleted: generate ends by asking udevd to reload its rules, and waits for it."""
    run(["udevadm", "settle", f"--timeout={NETPLAN_DEADLINE}"], check=False,
        timeout=NETPLAN_DEADLINE + 10)
    run(["netplan", "generate"], timeout=NETPLAN_DEADLINE)


def exported(ns: str) -> dict[str, dict[str, Any]]:
    data = json.loads(zsn(ns, "--export", "links").stdout)["links"]
    return {interface["name"]: interface for interface in data["interfaces"]}


def link_names(ns: str) -> set[str]:
    return {link["ifname"] for link in json.loads(
        run(["ip", "-n", ns, "-j", "link", "show"]).stdout)}


def pings(ns: str, *args: str) -> bool:
    return run(["ip", "netns", "exec", ns, "ping", "-c", "3", "-W", "2", *args],
               check=False, timeout=30).returncode == 0


@dataclass
class Pair:
    """Namespace `ns` (zsn) and `partner`, joined by veths `ends[i]` <-> `far[i]`."""

    lab: Lab
    ns: str
    partner: str
    ends: list[str]
    far: list[str]


@pytest.fixture(scope="module", autouse=True)
def modules() -> None:
    modprobe("bonding", "max_bonds=0")
    modprobe("8021q")


@pytest.fixture
def pair(lab: Lab) -> Iterator[Pair]:
    ns, partner = lab.namespace("z"), lab.namespace("p")
    ends, far = [], []
    for number in range(1, 4):
        end, other = lab.name(f"e{number}"), lab.name(f"f{number}")
        run(["ip", "-n", ns, "link", "add", end, "type", "veth", "peer", "name", other,
             "netns", partner])
        ends.append(end)
        far.append(other)
    yield Pair(lab, ns, partner, ends, far)


def partner_bond(pair: Pair, mode: str, members: list[str], *extra: str) -> str:
    name = pair.lab.name("pb")
    p = ["ip", "-n", pair.partner]
    run([*p, "link", "add", name, "type", "bond", "mode", mode, "miimon", "100", *extra])
    for member in members:
        run([*p, "link", "set", member, "master", name])
    return name


def test_balance_rr_bond_with_a_jumbo_vlan_member_down_and_delete(pair: Pair) -> None:
    ns, partner = pair.ns, pair.partner
    before = link_names(ns)
    far_bond = partner_bond(pair, "balance-rr", pair.far[:2])
    run(["ip", "-n", partner, "link", "set", far_bond, "mtu", "9000", "up"])
    far_vlan = f"{far_bond}.10"
    run(["ip", "-n", partner, "link", "add", "link", far_bond, "name", far_vlan, "type",
         "vlan", "id", "10"])
    run(["ip", "-n", partner, "link", "set", far_vlan, "mtu", "9000", "up"])
    run(["ip", "-n", partner, "addr", "add", "10.0.10.2/24", "dev", far_vlan])

    bond = pair.lab.name("rr")
    vlan = f"{bond}.10"
    zsn(ns, "link", "create", "bond", bond, "--mode", "balance-rr", "--members",
        ",".join(pair.ends[:2]), "--mtu", "9000")
    too_big = zsn(ns, "link", "create", "vlan", vlan, "--parent", bond, "--id", "10",
                  "--mtu", "9001", expect=2)
    assert f"above {bond}'s 9000" in too_big.stderr
    zsn(ns, "link", "create", "vlan", vlan, "--parent", bond, "--id", "10", "--mtu", "9000")
    run(["ip", "-n", ns, "addr", "add", "10.0.10.1/24", "dev", vlan])
    assert wait_for_ping(ns, "-M", "do", "-s", "8972", "10.0.10.2")

    links = exported(ns)
    assert links[bond]["bond"]["mode"] == "balance-rr" and links[bond]["mtu"] == 9000
    assert [m["mii_status"] for m in links[bond]["members"]] == ["up", "up"]
    assert links[vlan]["parent"] == bond and links[vlan]["vlan_id"] == 10
    assert links[vlan]["mtu"] == 9000
    listing = zsn(ns, "link", "list").stdout
    assert f"├ {pair.ends[0]}" in listing and f"└ {vlan}" in listing

    run(["ip", "-n", ns, "link", "set", pair.ends[1], "down"])
    wait_for(lambda: exported(ns)[bond]["members"][1]["mii_status"] == "down", 20,
             "the member shown down")
    down = exported(ns)[bond]["members"][1]
    assert (down["role"], down["slave_state"]) == ("down", "active")  # the kernel's word
    shown = zsn(ns, "link", "show", bond).stdout
    assert f"member:     {pair.ends[1]} mii down, 1 failure; carries no traffic" in shown
    assert pings(ns, "-M", "do", "-s", "8972", "10.0.10.2")  # traffic goes on
    lint = zsn(ns, "link", "lint", "--json").stdout
    found = {(f["id"], f["interface"]) for f in json.loads(lint)}
    assert ("LINK008", bond) in found and ("LINK001", bond) in found

    refused = zsn(ns, "link", "delete", bond, expect=2)
    assert f"has VLAN {vlan} on it" in refused.stderr
    zsn(ns, "link", "delete", vlan)
    zsn(ns, "link", "delete", bond)
    assert link_names(ns) == before
    assert all("master" not in link for link in json.loads(
        run(["ip", "-n", ns, "-j", "link", "show"]).stdout))


def wait_for_ping(ns: str, *args: str) -> bool:
    wait_for(lambda: pings(ns, *args), 30, f"ping {' '.join(args)}")
    return True


def test_802_3ad_against_a_lacp_partner_and_without_one(pair: Pair) -> None:
    ns, partner = pair.ns, pair.partner
    before = link_names(ns)
    far_bond = partner_bond(pair, "802.3ad", pair.far[:2], "lacp_rate", "fast")
    run(["ip", "-n", partner, "link", "set", far_bond, "up"])
    run(["ip", "-n", partner, "addr", "add", "10.0.20.2/24", "dev", far_bond])
    run(["ip", "-n", partner, "link", "set", pair.far[2], "up"])  # no LACP on this one

    bond, lonely = pair.lab.name("ad"), pair.lab.name("np")
    zsn(ns, "link", "create", "bond", bond, "--mode", "802.3ad", "--members",
        ",".join(pair.ends[:2]), "--lacp-rate", "fast", "--xmit-hash-policy", "layer3+4")
    zsn(ns, "link", "create", "bond", lonely, "--mode", "802.3ad", "--members",
        pair.ends[2])
    run(["ip", "-n", ns, "addr", "add", "10.0.20.1/24", "dev", bond])
    wait_for(lambda: exported(ns)[bond]["bond"]["lacp_partner"] is True, 60,
             "LACP negotiated")
    assert wait_for_ping(ns, "10.0.20.2")
    links = exported(ns)
    assert links[bond]["bond"]["xmit_hash_policy"] == "layer3+4"
    assert links[bond]["bond"]["lacp_rate"] == "fast"
    assert links[lonely]["bond"]["lacp_partner"] is False
    assert all(m["aggregator_id"] for m in links[bond]["members"])
    # An 802.3ad bond without a partner is an error: lint exits 1.
    found = {(f["id"], f["interface"]) for f in json.loads(
        zsn(ns, "link", "lint", "--json", expect=1).stdout)}
    assert ("LINK006", lonely) in found and ("LINK006", bond) not in found
    assert ("LINK004", lonely) in found
    metrics = zsn(ns, "--export", "links", "--format", "prometheus").stdout
    assert f'zsn_link_bond_lacp_partner{{bond="{bond}"}} 1' in metrics
    assert f'zsn_link_bond_lacp_partner{{bond="{lonely}"}} 0' in metrics

    zsn(ns, "link", "delete", bond)
    zsn(ns, "link", "delete", lonely)
    assert link_names(ns) == before


def test_persisted_bond_is_netplan_that_netplan_generate_accepts(pair: Pair) -> None:
    needs_tools("netplan", "udevadm")
    ns = pair.ns
    NETPLAN_FILE.parent.mkdir(parents=True, exist_ok=True)
    pair.lab.file(NETPLAN_FILE, "# lab host\nnetwork:\n  version: 2\n")
    pair.lab.defer(lambda: Path(f"{NETPLAN_FILE}.zsn-bak").unlink(missing_ok=True))
    bond = pair.lab.name("pb")
    zsn(ns, "link", "create", "bond", bond, "--mode", "active-backup", "--members",
        ",".join(pair.ends[:2]), "--mtu", "9000", "--persist")
    zsn(ns, "link", "create", "vlan", f"{bond}.7", "--parent", bond, "--id", "7",
        "--persist")
    text = NETPLAN_FILE.read_text()
    assert text.startswith("# lab host\nnetwork:\n  version: 2\n")
    assert f"    {bond}:\n      interfaces: [{pair.ends[0]}, {pair.ends[1]}]" in text
    generated = Path("/run/systemd/network")
    netplan_generate()
    assert "Mode=active-backup" in (generated / f"10-netplan-{bond}.netdev").read_text()
    assert "Id=7" in (generated / f"10-netplan-{bond}.7.netdev").read_text()
    drift = [f for f in json.loads(zsn(ns, "link", "lint", "--json").stdout)
             if f["id"] == "LINK007" and f["interface"] in (bond, f"{bond}.7")]
    assert drift == []  # what runs is what boots
    zsn(ns, "link", "delete", f"{bond}.7", "--persist")
    zsn(ns, "link", "delete", bond, "--persist")
    assert bond not in NETPLAN_FILE.read_text()
    netplan_generate()


# -- networkd itself makes what zsn reads (systemd's own test configs) --------------------
NETWORKD_CORPUS = REPO / "tests" / "fixtures" / "corpus" / "networkd" / "conf"


def networkd_tree(root: Path, folder: str, names: tuple[str, ...]) -> Host:
    for name in names:
        target = root / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((NETWORKD_CORPUS / name).read_bytes())
    (root / "etc/systemd/network").mkdir(parents=True, exist_ok=True)
    return Host(root)


def kernel_link(run_: NetworkdRun, name: str) -> dict[str, Any]:
    link = run_.link(name)
    assert link is not None, f"networkd made no {name}: {run_.warnings}"
    return link


def test_networkd_makes_the_vlan_its_drop_ins_define_and_zsn_edits_take_effect(
        tmp_path: Path) -> None:
    """21-vlan.netdev names vlan99; its drop-in gives Id=99, and test1's .network drop-in
    VLAN=vlan99: networkd makes that VLAN on test1. zsn reads the same, and its MTU edit
    (a drop-in in /etc, as the files are in /run) is what networkd applies next time."""
    modprobe("8021q")
    host = networkd_tree(tmp_path, "run/systemd/network", (
        "21-vlan.netdev", "21-vlan.netdev.d/override.conf", "21-vlan-test1.network",
        "21-vlan-test1.network.d/override.conf"))
    config = NETWORKD.read(host).configs["vlan99"]
    vlan = kernel_link(run_networkd(tmp_path, ["test1"]), "vlan99")
    assert (vlan["link"], vlan["linkinfo"]["info_data"]["id"]) == (config.parent,
                                                                     config.vlan_id)
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("vlan99", "vlan", mtu=1400),
                                       frozenset({"mtu"}))], NETWORKD.read(host))
    for step in plan.edits:
        step.apply()
    assert kernel_link(run_networkd(tmp_path, ["test1"]), "vlan99")["mtu"] == 1400


def test_networkd_makes_the_bond_zsn_reads(tmp_path: Path) -> None:
    modprobe("bonding")
    host = networkd_tree(tmp_path, "etc/systemd/network", ("25-bond.netdev",
                                                           "25-bond99.network"))
    config = NETWORKD.read(host).configs["bond99"]
    data = kernel_link(run_networkd(tmp_path, []), "bond99")["linkinfo"]["info_data"]
    assert (data["mode"], data["miimon"], data["xmit_hash_policy"], data["ad_lacp_rate"]) == (
        config.mode, config.miimon, config.xmit_hash_policy, config.lacp_rate)
    plan = NETWORKD.plan(host, [Upsert(LinkConfig("bond99", "bond", mtu=9000),
                                       frozenset({"mtu"}))], NETWORKD.read(host))
    for step in plan.edits:
        step.apply()
    assert kernel_link(run_networkd(tmp_path, []), "bond99")["mtu"] == 9000
