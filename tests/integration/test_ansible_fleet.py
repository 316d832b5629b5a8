"""The Ansible collection (contrib/ansible/zsn/fleet) driven by the real
`ansible-playbook` over real SSH: three hosts, each Debian's sshd in a network
namespace of its own (tests/lab/sshd.py), the collection built and installed as its
README says. A play gives every host a WireGuard interface with peers and a bridge;
check mode changes nothing and shows the diffs; the play again changes nothing; the
commit-confirmed role keeps the change on the hosts it reaches again, while the host
whose path the change cuts (its uplink taken into a bridge) is reported failed and is
back by itself within its window plus 2 s; and each host's `zsn state export`,
applied, plans nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.lab import sshd
from tests.lab.netns import Lab, require_lab, run
from tests.lab.sshd import SshLab
from tests.lab.tryback import record_figure
from tests.needs import needs_tools

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
COLLECTION = REPO / "contrib" / "ansible" / "zsn" / "fleet"
ZSN = str(Path(sys.executable).parent / "zsn")
PEERS = ("8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=",
         "U8rvHcQ8SouCvbNH+EItFBTisPYHSV/+f+0VROrzuQY=",
         "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=")
"""Public keys of the hosts' peers (a peer needs no real key to be configured)."""
CUT_WINDOW = 12
"""The try window of the host whose path the change cuts."""
KEPT_WINDOW = 90
"""The others': a loaded machine's Ansible must reconnect and confirm within it."""
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+"
                   r"failed=(\d+)", re.MULTILINE)


@dataclass
class Fleet:
    hosts: dict[str, SshLab]
    spares: dict[str, str]
    work: Path
    environment: dict[str, str]

    def playbook(self, text: str, *options: str, states: Mapping[str, object] | None = None
                 ) -> tuple[int, str, dict[str, tuple[int, int, int, int]]]:
        """Run the play `text` with `states` (host -> its desired state); (exit status,
        output, host -> (ok, changed, unreachable, failed))."""
        (self.work / "play.yml").write_text(text)
        (self.work / "states.yml").write_text(yaml.safe_dump(
            {"zsn_states": states or {}}))
        result = subprocess.run(
            ["ansible-playbook", "-i", str(self.work / "inventory.yml"), "-e",
             f"@{self.work / 'states.yml'}", *options, str(self.work / "play.yml")],
            capture_output=True, text=True, env=self.environment, cwd=self.work,
            timeout=600, check=False)
        said = result.stdout + result.stderr
        recap = {name: (int(ok), int(changed), int(unreachable), int(failed))
                 for name, ok, changed, unreachable, failed in RECAP.findall(said)}
        assert set(recap) == set(self.hosts), said[-4000:]
        return result.returncode, said, recap

    def config(self, name: str) -> str:
        path = self.hosts[name].folder("/etc/wireguard") / "wg0.conf"
        return path.read_text() if path.exists() else ""

    def master(self, name: str, link: str) -> str | None:
        shown = json.loads(run(["ip", "-n", self.hosts[name].server, "-j", "link", "show",
                                link]).stdout)
        return shown[0].get("master") if shown else None


def _ssh_wrapper(work: Path, lab: SshLab) -> Path:
    """ssh in the host's client namespace: Ansible's ssh_executable for that host."""
    wrapper = work / f"ssh-{lab.client}"
    wrapper.write_text(f"#!/bin/sh\nexec ip netns exec {lab.client} ssh \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def _install_collection(work: Path, environment: dict[str, str]) -> None:
    """As the collection's README says: build it, install the archive."""
    subprocess.run(["ansible-galaxy", "collection", "build", "--output-path",
                    str(work / "dist"), str(COLLECTION)], check=True, capture_output=True,
                   env=environment, timeout=300)
    archive = next((work / "dist").glob("zsn-fleet-*.tar.gz"))
    subprocess.run(["ansible-galaxy", "collection", "install", str(archive), "-p",
                    str(work / "collections")], check=True, capture_output=True,
                   env=environment, timeout=300)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    require_lab(("ip", "ping"))
    needs_tools("ansible-playbook", "ansible-galaxy")
    work = tmp_path_factory.mktemp("fleet")
    labs = [Lab() for _ in range(3)]
    try:
        hosts: dict[str, SshLab] = {}
        spares: dict[str, str] = {}
        inventory: dict[str, dict[str, object]] = {}
        for number, lab in enumerate(labs, start=1):
            name = f"h{number}"
            hosts[name] = ssh_lab = sshd.build(lab, 38 + number)
            spares[name] = spare = lab.name("sp")
            run(["ip", "-n", ssh_lab.server, "link", "add", spare, "type", "veth", "peer",
                 "name", lab.name("sq")])
            inventory[name] = {
                "ansible_host": ssh_lab.server_ip, "ansible_user": "root",
                "ansible_ssh_executable": str(_ssh_wrapper(work, ssh_lab)),
                "ansible_ssh_private_key_file": str(ssh_lab.work / "client_key"),
                "ansible_ssh_extra_args": f"-b {ssh_lab.client_alias}",
                "ansible_python_interpreter": "/usr/bin/python3",
                "zsn_executable": ZSN, "zsn_uplink": ssh_lab.uplink, "zsn_spare": spare}
        (work / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": inventory}}))
        (work / "ansible.cfg").write_text(
            "[defaults]\nhost_key_checking = False\nforks = 3\nretry_files_enabled = False\n"
            "[ssh_connection]\npipelining = True\n"
            f"control_path_dir = {work / 'cp'}\n"
            "ssh_args = -o ControlMaster=auto -o ControlPersist=60s "
            "-o ServerAliveInterval=1 -o ServerAliveCountMax=2 -o IdentitiesOnly=yes "
            "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no "
            f"-o KexAlgorithms={sshd.KEX}\n")
        environment = {key: value for key, value in os.environ.items()
                       if not key.startswith(("ANSIBLE_", "SSH_"))}
        environment.update(ANSIBLE_CONFIG=str(work / "ansible.cfg"),
                           ANSIBLE_HOME=str(work / "home"),
                           ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
                           ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
        _install_collection(work, environment)
        yield Fleet(hosts, spares, work, environment)
    finally:
        for lab in labs:
            lab.close()


APPLY = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: Make each host as its desired state says
      zsn.fleet.zsn_apply:
        state: "{{ zsn_states[inventory_hostname] }}"
        executable: "{{ zsn_executable }}"
"""

COMMIT_CONFIRMED = f"""\
- hosts: all
  gather_facts: false
  roles:
    - role: zsn.fleet.commit_confirmed
      vars:
        zsn_state: "{{{{ zsn_states[inventory_hostname] }}}}"
        zsn_try_seconds: "{{{{ {CUT_WINDOW} if inventory_hostname == 'h3' else {KEPT_WINDOW} }}}}"
"""


def _state(fleet: Fleet, name: str, peers: int, *, cut: bool = False) -> dict[str, object]:
    number = int(name[1:])
    bridges = [{"name": "zbrf", "ports": [fleet.spares[name]], "stp": False}]
    if cut:
        bridges.append({"name": "zbrc", "ports": [fleet.hosts[name].uplink], "stp": False})
    return {"version": 1, "links": {"bridges": bridges}, "wireguard": {"interfaces": [{
        "name": "wg0", "addresses": [f"10.39.{number}.1/24"], "listen_port": 51820,
        "peers": [{"name": f"peer{index}", "public_key": PEERS[index],
                   "allowed_ips": [f"10.39.{number}.{10 + index}/32"]}
                  for index in range(peers)]}]}}


def test_the_installed_modules_document_their_options(fleet: Fleet) -> None:
    """ansible-doc reads each module's documentation, the shared options included."""
    shown = subprocess.run(["ansible-doc", "--json", "zsn.fleet.zsn_apply",
                            "zsn.fleet.zsn_confirm"], capture_output=True, text=True,
                           env=fleet.environment, timeout=300, check=True)
    docs = {name: entry["doc"] for name, entry in json.loads(shown.stdout).items()}
    assert set(docs["zsn.fleet.zsn_apply"]["options"]) == {
        "src", "state", "try_seconds", "confirm_ssh_link", "executable", "root"}
    assert set(docs["zsn.fleet.zsn_confirm"]["options"]) == {"id", "executable", "root"}


def test_a_play_checks_applies_then_changes_nothing(fleet: Fleet) -> None:
    states = {name: _state(fleet, name, 2) for name in fleet.hosts}
    status, said, recap = fleet.playbook(APPLY, "--check", "--diff", states=states)
    assert status == 0, said[-4000:]
    assert all(counts[1:] == (1, 0, 0) for counts in recap.values()), recap
    assert said.count(f"+PublicKey = {PEERS[1]}") == 3, said[-4000:]
    for name in fleet.hosts:
        assert fleet.config(name) == "" and fleet.master(name, fleet.spares[name]) is None

    started = time.monotonic()
    status, said, recap = fleet.playbook(APPLY, states=states)
    print(f"the play on three hosts: {time.monotonic() - started:.1f} s")
    assert status == 0 and all(c[1:] == (1, 0, 0) for c in recap.values()), said[-4000:]
    for name in fleet.hosts:
        assert PEERS[1] in fleet.config(name)
        assert fleet.master(name, fleet.spares[name]) == "zbrf"

    status, said, recap = fleet.playbook(APPLY, states=states)
    assert status == 0 and all(c[1:] == (0, 0, 0) for c in recap.values()), said[-4000:]

    refused = {name: {**state, "version": 2} for name, state in states.items()}
    status, said, recap = fleet.playbook(APPLY, states=refused)
    assert status == 2 and all(c[1:] == (0, 0, 1) for c in recap.values()), said[-4000:]
    assert said.count('"msg": "zsn apply: invalid: standard input: version: \'2\' is not a '
                      'schema this zsn reads') == 3, said[-4000:]


def test_commit_confirmed_keeps_what_it_reaches_and_the_cut_host_comes_back(
        fleet: Fleet, request: pytest.FixtureRequest) -> None:
    cut = fleet.hosts["h3"]
    cut.sysctl("net.ipv4.conf.all.rp_filter", "1")  # bridged, the uplink's address is lost
    states = {name: _state(fleet, name, 3, cut=name == "h3") for name in fleet.hosts}
    started = time.monotonic()
    with cut.watch() as watch:
        status, said, recap = fleet.playbook(COMMIT_CONFIRMED, states=states)
        played = time.monotonic() - started
        change = cut.wait_state(("rolled back",), CUT_WINDOW + 30)
        deadline = float(change["deadline_wall"])
        back = watch.first_up_after(deadline, 30)
    cut.sysctl("net.ipv4.conf.all.rp_filter", "0")
    assert status != 0, said[-4000:]
    assert recap["h3"][2] + recap["h3"][3] == 1, said[-4000:]  # unreachable or failed
    assert change["applied"] and any(state == "down" and when < deadline
                                     for state, when in watch.events), watch.events
    assert back is not None and back - deadline <= 2.0, (back, deadline)
    record_figure(request, "ansible-commit-confirmed-cut-host", back - deadline)
    print(f"commit-confirmed play: {played:.1f} s; the cut host back {back - deadline:.2f} s "
          f"after its {CUT_WINDOW} s window")
    assert fleet.master("h3", cut.uplink) is None and PEERS[2] not in fleet.config("h3")
    for name in ("h1", "h2"):
        assert recap[name][2:] == (0, 0), said[-4000:]
        assert [c["state"] for c in fleet.hosts[name].changes()] == ["confirmed"]
        assert PEERS[2] in fleet.config(name)


def test_each_hosts_export_applied_plans_nothing(fleet: Fleet) -> None:
    for name, lab in fleet.hosts.items():
        exported = lab.console("state", "export")
        assert exported.returncode == 0, exported.stderr
        path = fleet.work / f"{name}-export.yaml"
        path.write_text(exported.stdout)
        applied = lab.console("apply", str(path))
        assert applied.returncode == 0 and applied.stdout.endswith(
            "(nothing to change)\n"), applied.stdout + applied.stderr
