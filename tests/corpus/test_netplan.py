"""netplan's own examples (examples/*.yaml of canonical/netplan), each as
/etc/netplan/EXAMPLE.yaml, read by zsn and by the installed netplan (Debian 12's 0.106).

zsn's reading must equal `netplan get` (every device of every type by name; bonds,
bridges and VLANs with their members, parent, id, MTU and parameters), and a file the
installed netplan refuses (`netplan generate`) zsn must refuse too, saying that netplan
refuses the files as they are. Then zsn writes an edit: a new MTU on each bond, bridge
and VLAN, a new bond of two new members and a new VLAN on a new parent (declared
before the VLAN: 0.106 refuses the reverse in a file with Wi-Fi access points);
netplan must accept the result and read exactly those changes, and every line of the
file that did not need to change must stay.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.corpus.tally import TALLY, Outcome
from tests.needs import needs_tools
from zsn.errors import ValidationError
from zsn.links.persist import Change, LinkConfig, Upsert
from zsn.links.persist.netplan import NETPLAN, OTHER_SECTIONS, SECTIONS, generate
from zsn.system.host import Host

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus" / "netplan"
FAMILY = "netplan"
FILES = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.yaml"))


def netplan_get(root: Path) -> dict[str, Any]:
    result = subprocess.run(["netplan", "get", "--root-dir", str(root), "all"],
                            capture_output=True, text=True, timeout=60, check=True)
    network = yaml.safe_load(result.stdout) or {}
    return network.get("network", network) if isinstance(network, dict) else {}


def netplan_reading(network: dict[str, Any]) -> tuple[dict[str, LinkConfig], dict[str, str]]:
    """netplan's merged definitions as LinkConfigs, and every other device's type."""
    configs = {}
    for kind, section in SECTIONS.items():
        for name, body in (network.get(section) or {}).items():
            parameters = body.get("parameters") or {}
            stp = parameters.get("stp")
            miimon = parameters.get("mii-monitor-interval")
            configs[str(name)] = LinkConfig(
                str(name), kind, tuple(sorted(str(m) for m in body.get("interfaces") or ())),
                parent=body.get("link"), vlan_id=body.get("id"),
                mtu=int(body["mtu"]) if "mtu" in body else None,
                mode=parameters.get("mode") if kind == "bond" else None,
                miimon=int(str(miimon).removesuffix("ms")) if miimon is not None else None,
                xmit_hash_policy=parameters.get("transmit-hash-policy"),
                lacp_rate=parameters.get("lacp-rate"),
                stp=(stp in (True, "true") if stp is not None else True)
                if kind == "bridge" else None)
    devices = {str(name): kind for section, kind in OTHER_SECTIONS.items()
               for name in (network.get(section) or {})}
    return configs, devices


def zsn_reading(host: Host) -> tuple[dict[str, LinkConfig], dict[str, str]]:
    persisted = NETPLAN.read(host)
    assert persisted.problems == []
    configs = {name: LinkConfig(c.name, c.kind, tuple(sorted(c.members)), c.parent, c.vlan_id,
                                c.mtu, c.mode, c.miimon, c.xmit_hash_policy, c.lacp_rate,
                                c.stp)
               for name, c in persisted.configs.items()}
    return configs, {name: d.kind for name, d in persisted.devices.items()}


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    needs_tools("netplan")


@pytest.mark.parametrize("name", FILES)
def test_netplan_file(tmp_path: Path, name: str) -> None:
    target = tmp_path / "etc/netplan" / Path(name).name
    target.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / name, target)
    target.chmod(0o600)
    host = Host(tmp_path)
    outcome = Outcome()
    TALLY.record(FAMILY, name, outcome)
    configs, devices = zsn_reading(host)
    refused = generate(host, [])
    bond = LinkConfig("zsnb0", "bond", ("zsnm1", "zsnm2"), mtu=9000, mode="802.3ad",
                      miimon=100, lacp_rate="fast")
    vlan = LinkConfig("zsnp0.7", "vlan", parent="zsnp0", vlan_id=7, mtu=1500)
    mtus = [Upsert(LinkConfig(c, configs[c].kind, mtu=1400 + n), frozenset({"mtu"}))
            for n, c in enumerate(sorted(configs))]
    changes: list[Change] = [*mtus, Upsert(bond), Upsert(vlan)]
    if refused is not None:
        # netplan refuses the file as it is: zsn says so and plans nothing.
        with pytest.raises(ValidationError, match="netplan already refuses the files as "
                                                  "they are"):
            NETPLAN.plan(host, changes, NETPLAN.read(host))
        outcome.read, outcome.refused = True, "netplan-refuses"
        return
    assert (configs, devices) == netplan_reading(netplan_get(tmp_path))
    outcome.read = True
    text = target.read_text()
    plan = NETPLAN.plan(host, changes, NETPLAN.read(host))
    assert not plan.warnings  # netplan generate accepted the result
    for edit in plan.edits:
        edit.apply()
    after = target.read_text() if target.exists() else ""
    for line in difflib.ndiff(text.splitlines(keepends=True), after.splitlines(True)):
        if line.startswith("- "):
            assert re.match(r"\s*mtu:", line[2:]), f"changed: {line!r}"
    assert generate(host, []) is None
    after_configs, after_devices = netplan_reading(netplan_get(tmp_path))
    for change in mtus:
        assert after_configs[change.name].mtu == change.config.mtu
    assert after_configs["zsnb0"] == bond
    assert after_configs["zsnp0.7"].parent == "zsnp0"
    assert after_devices == {**devices, "zsnm1": "ethernet", "zsnm2": "ethernet",
                             "zsnp0": "ethernet"}
    assert zsn_reading(host) == (after_configs, after_devices)
    outcome.edited = True


def test_files_netplan_does_not_read_are_not_read(tmp_path: Path) -> None:
    """netplan reads ``*.yaml`` as glob(3) matches it: a hidden file (a copy set aside as
    ``.bridge_vlan.yaml``, Emacs' lock ``.#bridge.yaml`` while the file is being edited, a
    link to nowhere) is none of its files. zsn read both: the set-aside copy's br0 ports
    joined the real one's, and the lock was an unreadable file."""
    folder = tmp_path / "etc/netplan"
    folder.mkdir(parents=True)
    for name, example in (("bridge.yaml", "bridge.yaml"),
                          (".bridge_vlan.yaml", "bridge_vlan.yaml")):
        shutil.copyfile(CORPUS / "examples" / example, folder / name)
        (folder / name).chmod(0o600)
    (folder / ".#bridge.yaml").symlink_to("root@zsn-host.4242:1764633600")
    host = Host(tmp_path)
    assert zsn_reading(host) == netplan_reading(netplan_get(tmp_path))
    assert NETPLAN.read(host).configs["br0"].members == ("enp3s0",)
    assert generate(host, []) is None
