"""systemd-networkd configs from systemd's own test suite (test/test-network/conf), as
cases of files that work together (what its test script copies in for one test).

For each case, zsn's reading is compared with networkd's: which netdevs it loads (and
their kinds) and which .network file each link gets, from the real systemd-networkd
run on the case (tests/lab/networkd.py); the values of each key from what
`systemd-analyze cat-config` gives for the file (main file and drop-ins in networkd's
order: the last assignment wins); MTUs, ports and STP of bridges from the kernel
after networkd made them (bonds and VLANs need modules this kernel lacks: the kernel
lab runs those, tests/kernel/test_links.py). Then every bond, VLAN and bridge gets a
new MTU through zsn: the edit must keep every byte it does not need, networkd must
read the result without a new warning and end up with the new MTU, and zsn must read
back what it wrote.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from tests.lab.networkd import NetworkdRun, require_networkd, run_networkd
from tests.needs import needs_tools
from zsn.links.persist import LinkConfig, Upsert
from zsn.links.persist.networkd import NETWORKD
from zsn.system.host import Host

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus" / "networkd"
ETC = "/etc/systemd/network"
RUN = "/run/systemd/network"
FAMILY = "networkd"


@dataclass(frozen=True)
class Case:
    files: tuple[str, ...]
    """Paths under the corpus folder (conf/...)."""
    place: str = ETC
    """Where the files go: /etc (as an admin writes them) or /run (where systemd's
    own test script puts them)."""
    links: tuple[str, ...] = ()
    """Links that exist before networkd starts (members and parents)."""
    masked: tuple[str, ...] = ()
    """Names to mask with a link to /dev/null in /etc (file or drop-in path)."""
    names: tuple[tuple[str, str], ...] = ()
    """(corpus path, file name) for a file that goes in under another name (systemd's
    fuzz inputs have none networkd reads)."""


CASES = {
    "vlan-drop-ins": Case(("conf/21-vlan.netdev", "conf/21-vlan.netdev.d/override.conf",
                           "conf/21-vlan.network", "conf/21-vlan.network.d/override.conf",
                           "conf/21-vlan-test1.network",
                           "conf/21-vlan-test1.network.d/override.conf"), RUN, ("test1",)),
    "vlan-drop-ins-in-etc": Case(("conf/21-vlan.netdev", "conf/21-vlan.netdev.d/override.conf",
                                  "conf/21-vlan-on-bond.network", "conf/21-vlan-test1.network",
                                  "conf/21-vlan-test1.network.d/override.conf"), ETC,
                                 ("test1",)),
    "vlan-drop-in-masked": Case(("conf/21-vlan.netdev", "conf/21-vlan.netdev.d/override.conf",
                                 "conf/21-vlan-test1.network",
                                 "conf/21-vlan-test1.network.d/override.conf"), RUN,
                                ("test1",), ("21-vlan.netdev.d/override.conf",)),
    "bond-802.3ad": Case(("conf/25-bond.netdev", "conf/25-bond99.network"), ETC),
    "bond-802.3ad-short": Case(("conf/21-bond-802.3ad.netdev",), RUN),
    "bond-active-backup": Case(("conf/25-bond-property.netdev",), ETC),
    "bond-balance-tlb": Case(("conf/25-bond-balanced-tlb.netdev",), ETC),
    "bond-slaves-without-netdev": Case(("conf/23-active-slave.network",
                                        "conf/23-bond199.network", "conf/12-dummy.netdev"),
                                       RUN),
    "bridge-ports": Case(("conf/26-bridge.netdev", "conf/26-bridge-slave-interface-1.network",
                          "conf/26-bridge-slave-interface-2.network",
                          "conf/25-bridge99.network"), ETC, ("dummy98", "test1")),
    "bridge-ports-in-run": Case(("conf/26-bridge.netdev",
                                 "conf/26-bridge-slave-interface-1.network",
                                 "conf/26-bridge-slave-interface-2.network",
                                 "conf/25-bridge99.network"), RUN, ("dummy98", "test1")),
    "bridge-properties": Case(("conf/25-bridge.netdev",
                               "conf/25-bridge-configure-without-carrier.network"), ETC),
    "dummy-named-by-drop-in": Case(("conf/10-dropin-test.netdev",
                                    "conf/10-dropin-test.netdev.d/mac.conf",
                                    "conf/10-dropin-test.netdev.d/name.conf"), RUN),
    "dummy-mtu": Case(("conf/12-dummy-mtu.netdev", "conf/12-dummy.network",
                       "conf/12-dummy.network.d/ipv6-mtu-1550.conf",
                       "conf/11-dummy-mtu.netdev"), ETC),
    "macvlan": Case(("conf/21-macvlan.netdev",), ETC),
    # A .network without [Match] (a fuzz input from systemd issue 15885) sorts first:
    # networkd ignores it, so test1 is still the bridge's port.
    "ignored-network-before-a-port": Case(
        ("fuzz-netdev-parser/bridge.netdev", "fuzz-network-parser/github-15885",
         "fuzz-network-parser/bridge-slave-interface-2"), ETC, ("test1",),
        names=(("fuzz-netdev-parser/bridge.netdev", "25-bridge.netdev"),
               ("fuzz-network-parser/github-15885", "10-github-15885.network"),
               ("fuzz-network-parser/bridge-slave-interface-2", "30-bridge-port.network"))),
}


def build(root: Path, case: Case) -> None:
    renamed = dict(case.names)
    for name in case.files:
        relative = renamed.get(name, name.removeprefix("conf/"))
        target = root / case.place.lstrip("/") / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / name, target)
    for masked in case.masked:
        target = root / ETC.lstrip("/") / masked
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to("/dev/null")
    (root / ETC.lstrip("/")).mkdir(parents=True, exist_ok=True)


# -- networkd's reading -------------------------------------------------------------------
_HEADER = re.compile(r"^# (/\S+)$")


def cat_config(root: Path, file_name: str) -> list[tuple[str, str, str, str]]:
    """(file, section, key, value) of every assignment networkd reads for a unit, in
    its order, as `systemd-analyze cat-config` lists the files."""
    result = subprocess.run(["systemd-analyze", f"--root={root}", "cat-config",
                             f"systemd/network/{file_name}"], capture_output=True, text=True,
                            check=True, timeout=30)
    found = []
    source = section = ""
    for line in result.stdout.splitlines():
        header = _HEADER.match(line)
        if header:
            source, section = header.group(1).removeprefix(str(root)), ""
            continue
        text = line.strip()
        if not text or text[0] in "#;":
            continue
        if text.startswith("[") and text.endswith("]"):
            section = text[1:-1]
        elif "=" in text:
            key, _, value = text.partition("=")
            found.append((source, section, key.strip(), value.strip()))
    return found


def last(assignments: list[tuple[str, str, str, str]], section: str, key: str) -> str | None:
    values = [value for _file, s, k, value in assignments if (s, k) == (section, key)]
    return values[-1] if values else None


def words(assignments: list[tuple[str, str, str, str]], section: str, key: str) -> list[str]:
    found: list[str] = []
    for _file, s, k, value in assignments:
        if (s, k) == (section, key):
            found = found + value.split() if value else []
    return found


def unit_names(root: Path, suffix: str) -> list[str]:
    names: set[str] = set()
    for folder in ("etc", "run", "usr/local/lib", "usr/lib", "lib"):
        directory = root / folder / "systemd/network"
        if directory.is_dir():
            names.update(p.name for p in directory.iterdir() if p.name.endswith(suffix))
    return sorted(names)


def unit_of(path: str) -> str:
    """The unit a file belongs to (a drop-in's main file name)."""
    path = path.partition(":")[0]
    parent = Path(path).parent.name
    return parent.removesuffix(".d") if parent.endswith(".d") else Path(path).name


def milliseconds(text: str) -> int:
    match = re.fullmatch(r"(\d+)(ms|s)?", text)
    assert match, f"a time span this test does not read: {text}"
    return int(match.group(1)) * (1 if match.group(2) == "ms" else 1000)


def networkd_reading(root: Path, run: NetworkdRun) -> dict[str, LinkConfig]:
    """The bonds, VLANs and bridges networkd makes of the tree, as LinkConfigs."""
    netdevs = {}
    for name in unit_names(root, ".netdev"):
        assignments = cat_config(root, name)
        netdev = last(assignments, "NetDev", "Name")
        if netdev in run.loaded:  # not masked, not refused
            netdevs[netdev] = assignments
    networks = {link: cat_config(root, Path(path).name)
                for link, values in run.states.items()
                if (path := values.get("NETWORK_FILE"))}
    for network_name in unit_names(root, ".network"):
        assignments = cat_config(root, network_name)
        names = words(assignments, "Match", "Name")
        if len(names) == 1 and names[0] not in networks and names[0] not in run.states:
            networks[names[0]] = assignments  # the netdev itself: not made on this kernel
    configs = {}
    for name, assignments in netdevs.items():
        kind = last(assignments, "NetDev", "Kind")
        if kind not in ("bond", "vlan", "bridge"):
            continue
        network = networks.get(name, [])
        mtu = last(network, "Link", "MTUBytes") or last(assignments, "NetDev", "MTUBytes")
        key = {"bond": "Bond", "bridge": "Bridge", "vlan": "VLAN"}[kind]
        related = sorted(link for link, other in networks.items() if link != name and
                         (name in words(other, "Network", "VLAN") if kind == "vlan"
                          else last(other, "Network", key) == name))
        miimon = last(assignments, "Bond", "MIIMonitorSec")
        stp = last(assignments, "Bridge", "STP")
        vlan_id = last(assignments, "VLAN", "Id")
        configs[name] = LinkConfig(
            name, kind, tuple(related) if kind != "vlan" else (),
            parent=related[0] if kind == "vlan" and related else None,
            vlan_id=int(vlan_id) if vlan_id else None, mtu=int(mtu) if mtu else None,
            mode=last(assignments, "Bond", "Mode"),
            miimon=milliseconds(miimon) if miimon else None,
            xmit_hash_policy=last(assignments, "Bond", "TransmitHashPolicy"),
            lacp_rate=last(assignments, "Bond", "LACPTransmitRate"),
            stp=(stp in ("yes", "true", "1", "on")) if kind == "bridge" else None)
    return configs


def kernel_checks(run: NetworkdRun, configs: dict[str, LinkConfig]) -> None:
    """What the kernel has for the bridges networkd made on this kernel."""
    for name, config in configs.items():
        link = run.link(name)
        if config.kind != "bridge":
            assert link is None, f"{name} was created on a kernel without {config.kind}"
            continue
        assert link is not None, f"networkd did not make {name}"
        if config.mtu is not None:
            assert link["mtu"] == config.mtu
        assert link["linkinfo"]["info_data"]["stp_state"] == int(bool(config.stp))
        ports = sorted(other["ifname"] for other in run.links if other.get("master") == name)
        assert ports == sorted(config.members)


# -- the test -----------------------------------------------------------------------------
def untouched_bytes_kept(before: str, after: str, allowed: re.Pattern[str]) -> None:
    """Every line the edit removed or added is one it had to touch."""
    for line in difflib.ndiff(before.splitlines(keepends=True),
                              after.splitlines(keepends=True)):
        if line[:2] in ("- ", "+ "):
            assert allowed.fullmatch(line[2:].rstrip("\n")), f"changed: {line!r}"


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    needs_tools("systemd-analyze")
    require_networkd()


@pytest.mark.parametrize("name", sorted(CASES))
def test_networkd_case(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    build(tmp_path, case)
    host = Host(tmp_path)
    run = run_networkd(tmp_path, list(case.links))
    persisted = NETWORKD.read(host)
    outcome = Outcome()
    for file in case.files:
        TALLY.record(FAMILY, f"{name}/{file}", outcome)
    assert persisted.problems == []
    # What networkd refuses or ignores, zsn reports for the same unit and link; a file
    # it ignores whole, zsn reports as such (its lines' own complaints are moot).
    ignored = {c.path for c in run.warnings
               if "ignoring file" in c.message or c.message.startswith("NetDev without")}
    assert {u.path for u in persisted.unread if u.kind == "networkd-ignores" and
            not u.names} == ignored
    refused = {(unit_of(c.path), c.message.split(":")[0].split()[0]) for c in run.warnings
               if "Unknown key" not in c.message and c.path not in ignored}
    assert {(unit_of(u.path), u.names[0]) for u in persisted.unread if u.names} == refused
    # Which netdevs networkd loads, with which kinds.
    known = {c.name: c.kind for c in persisted.configs.values()}
    known.update({d.name: d.kind for d in persisted.devices.values()})
    assert known == run.loaded
    # Which .network file each link gets.
    from zsn.links.persist.networkd import read_tree

    tree = read_tree(host)
    for link, values in run.states.items():
        network = tree.network_for(link)
        expected = values.get("NETWORK_FILE")
        assert (network.main.path if network else None) == expected, link
    expected_configs = networkd_reading(tmp_path, run)
    assert persisted.configs == expected_configs
    kernel_checks(run, expected_configs)
    outcome.read = True
    if not persisted.configs:
        return
    # Each bond, VLAN and bridge gets a new MTU.
    before = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file() and
              not p.is_symlink()}
    new_mtu = {config_name: 1400 + index for index, config_name in
               enumerate(sorted(persisted.configs))}
    changes = [
        Upsert(LinkConfig(config_name, persisted.configs[config_name].kind, mtu=mtu),
               frozenset({"mtu"})) for config_name, mtu in new_mtu.items()]
    plan = NETWORKD.plan(host, [*changes], persisted)
    assert all(note for note in plan.notes)
    for edit in plan.edits:
        edit.apply()
    mtu_line = re.compile(r"MTUBytes=\d+|\[(NetDev|Link)\]|")
    for path, text in before.items():
        if path.exists():
            untouched_bytes_kept(text, path.read_text(), mtu_line)
    own_network = re.compile(r"MTUBytes=\d+|\[(Match|Link|Network)\]|Name=\S+|")
    for path in tmp_path.rglob("*"):
        if path.is_file() and path not in before and not path.name.endswith(".zsn-bak"):
            if path.name.startswith("10-zsn-"):  # a bridge's own .network: its MTU
                untouched_bytes_kept("", path.read_text(), own_network)
                continue
            assert path.name.endswith("zsn.conf"), path  # a drop-in where it takes effect
            untouched_bytes_kept("", path.read_text(), mtu_line)
    after_run = run_networkd(tmp_path, list(case.links))
    assert {(c.path, c.message) for c in after_run.warnings} == {
        (c.path, c.message) for c in run.warnings}
    after = networkd_reading(tmp_path, after_run)
    for config_name, mtu in new_mtu.items():
        assert after[config_name].mtu == mtu
    kernel_checks(after_run, after)
    assert NETWORKD.read(host).configs == after
    outcome.edited = True
