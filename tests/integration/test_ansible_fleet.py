"""The Ansible collection (contrib/ansible/zsn/fleet) driven by the real
`ansible-playbook` over real SSH: three hosts, each Debian's sshd in a network
namespace of its own (tests/lab/sshd.py), the collection built and installed as its
README says. The hosts share a lab network (a bridge in a namespace of its own), and
each runs its own wireguard-go (a private /run/wireguard). The collection's example
play (zsn.fleet.wireguard_mesh) gives them a WireGuard hub and two spokes, each key
made on its host and read back by the play, and traffic passes through every tunnel,
spoke to spoke through the hub; played again it changes nothing. A changed file (a
bridge, the peers' keepalive) in check mode changes nothing and shows the diffs,
applied it changes each host once, then nothing; the commit-confirmed role keeps the
change on the hosts it reaches again, while the host whose path the change cuts (its
uplink taken into a bridge) is reported failed and is back by itself within its window
plus 2 s; and each host's `zsn state export`, applied, plans nothing."""

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
from tests.lab.netns import Lab, require_lab, run, wait_for
from tests.lab.sshd import SshLab
from tests.lab.tryback import record_figure
from tests.needs import needs_tools

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
COLLECTION = REPO / "contrib" / "ansible" / "zsn" / "fleet"
ZSN = str(Path(sys.executable).parent / "zsn")
HUB, SPOKES = "h1", ("h2", "h3")
MESH = "zsn.fleet.wireguard_mesh"
"""The collection's example play: the hub and spokes of the inventory's groups."""
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
        return self.run_playbook(str(self.work / "play.yml"), *options, states=states)

    def run_playbook(self, playbook: str, *options: str,
                     states: Mapping[str, object] | None = None
                     ) -> tuple[int, str, dict[str, tuple[int, int, int, int]]]:
        """Run `playbook` (a file, or a collection's playbook by name) with `states`;
        what `playbook` returns."""
        (self.work / "states.yml").write_text(yaml.safe_dump(
            {"zsn_states": states or {}}))
        result = subprocess.run(
            ["ansible-playbook", "-i", str(self.work / "inventory.yml"), "-e",
             f"@{self.work / 'states.yml'}", *options, playbook],
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

    def wireguard(self, name: str) -> dict[str, object]:
        """wg0 as the host's `zsn state export` says."""
        exported = self.hosts[name].console("state", "export", "wireguard", "--json")
        assert exported.returncode == 0, exported.stderr
        interfaces = json.loads(exported.stdout)["wireguard"]["interfaces"]
        found: dict[str, object] = next(each for each in interfaces if each["name"] == "wg0")
        return found

    def public_key(self, name: str) -> str:
        return str(self.wireguard(name)["public_key"])

    def live_peers(self, name: str) -> list[str]:
        """The public keys of the running wg0's peers (``wg show``, in the host's
        namespaces: its own wireguard-go socket)."""
        shown = self.hosts[name].in_server(["wg", "show", "wg0", "peers"])
        return sorted(shown.stdout.split())

    def reaches(self, name: str, address: str, timeout: float = 30) -> None:
        """A ping from host `name` to `address` is answered (the first may wait for
        the tunnel's handshake), going out through wg0."""
        server = self.hosts[name].server
        route = json.loads(run(["ip", "-n", server, "-j", "route", "get", address]).stdout)
        assert route[0]["dev"] == "wg0", route
        wait_for(lambda: run(["ip", "netns", "exec", server, "ping", "-n", "-c", "1", "-W",
                              "1", address], check=False).returncode == 0,
                 timeout, f"{name} to reach {address} over wg0", interval=0.2)

    def mesh_passes_traffic(self) -> None:
        """Hub to each spoke and back, and spoke to spoke (through the hub)."""
        for spoke in SPOKES:
            self.reaches(HUB, MESH_ADDRESSES[spoke])
            self.reaches(spoke, MESH_ADDRESSES[HUB])
        self.reaches("h2", MESH_ADDRESSES["h3"])
        self.reaches("h3", MESH_ADDRESSES["h2"])


MESH_ADDRESSES = {name: f"10.39.0.{number}" for number, name in enumerate(("h1", "h2", "h3"),
                                                                           start=1)}
"""Each host's address in the mesh (a /24)."""
LAN = "10.38.0.{}"
"""The lab network the hosts reach each other's tunnels over."""


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


def _lan(lab: Lab, hosts: dict[str, SshLab]) -> None:
    """The lab network: a bridge in a namespace of its own, each host's server
    namespace on it with the address `LAN` numbers it by."""
    switch = lab.namespace("ln")
    bridge = lab.name("br")
    run(["ip", "-n", switch, "link", "add", bridge, "type", "bridge"])
    run(["ip", "-n", switch, "link", "set", bridge, "up"])
    for number, ssh_lab in enumerate(hosts.values(), start=1):
        port, far = lab.veth_between(str(number), ssh_lab.server, switch)
        run(["ip", "-n", switch, "link", "set", far, "master", bridge, "up"])
        run(["ip", "-n", ssh_lab.server, "addr", "add", f"{LAN.format(number)}/24", "dev",
             port])
        run(["ip", "-n", ssh_lab.server, "link", "set", port, "up"])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    require_lab(("ip", "ping", "wg", "wg-quick", "wireguard-go", "iptables"))
    needs_tools("ansible-playbook", "ansible-galaxy")
    work = tmp_path_factory.mktemp("fleet")
    labs = [Lab() for _ in range(3)]
    lan = Lab()
    try:
        hosts: dict[str, SshLab] = {}
        spares: dict[str, str] = {}
        inventory: dict[str, dict[str, object]] = {}
        for number, lab in enumerate(labs, start=1):
            name = f"h{number}"
            hosts[name] = ssh_lab = sshd.build(lab, 38 + number, private=("/run/wireguard",))
            spares[name] = spare = lab.name("sp")
            run(["ip", "-n", ssh_lab.server, "link", "add", spare, "type", "veth", "peer",
                 "name", lab.name("sq")])
            inventory[name] = {
                "ansible_host": ssh_lab.server_ip, "ansible_user": "root",
                "ansible_ssh_executable": str(_ssh_wrapper(work, ssh_lab)),
                "ansible_ssh_private_key_file": str(ssh_lab.work / "client_key"),
                "ansible_ssh_extra_args": f"-b {ssh_lab.client_alias}",
                "ansible_python_interpreter": "/usr/bin/python3",
                "zsn_executable": ZSN, "zsn_uplink": ssh_lab.uplink, "zsn_spare": spare,
                "zsn_wg_address": f"{MESH_ADDRESSES[name]}/24",
                "zsn_wg_endpoint": LAN.format(number)}
        _lan(lan, hosts)
        (work / "inventory.yml").write_text(yaml.safe_dump({"all": {
            "hosts": inventory, "vars": {"zsn_wg_network": "10.39.0.0/24"},
            "children": {"zsn_wg_hub": {"hosts": {HUB: {}}},
                         "zsn_wg_spokes": {"hosts": {name: {} for name in SPOKES}}}}}))
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
        for lab in [*labs, lan]:
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


def _state(fleet: Fleet, name: str, keepalive: int, *, cut: bool = False
           ) -> dict[str, object]:
    """A bridge of the spare veth (with `cut`, one taking the uplink too) and every mesh
    peer's keepalive: what the file changes on each host."""
    bridges = [{"name": "zbrf", "ports": [fleet.spares[name]], "stp": False}]
    if cut:
        bridges.append({"name": "zbrc", "ports": [fleet.hosts[name].uplink], "stp": False})
    peers = SPOKES if name == HUB else (HUB,)
    return {"version": 1, "links": {"bridges": bridges}, "wireguard": {"interfaces": [{
        "name": "wg0", "peers": [{"public_key": fleet.public_key(peer), "keepalive": keepalive}
                                 for peer in peers]}]}}


def test_the_installed_modules_document_their_options(fleet: Fleet) -> None:
    """ansible-doc reads each module's documentation, the shared options included."""
    shown = subprocess.run(["ansible-doc", "--json", "zsn.fleet.zsn_apply",
                            "zsn.fleet.zsn_confirm", "zsn.fleet.zsn_state_info"],
                           capture_output=True, text=True, env=fleet.environment,
                           timeout=300, check=True)
    docs = {name: entry["doc"] for name, entry in json.loads(shown.stdout).items()}
    assert set(docs["zsn.fleet.zsn_apply"]["options"]) == {
        "src", "state", "try_seconds", "confirm_ssh_link", "executable", "root"}
    assert set(docs["zsn.fleet.zsn_confirm"]["options"]) == {"id", "executable", "root"}
    assert set(docs["zsn.fleet.zsn_state_info"]["options"]) == {
        "sections", "executable", "root"}


def test_the_mesh_play_passes_traffic_through_every_tunnel(fleet: Fleet) -> None:
    started = time.monotonic()
    status, said, recap = fleet.run_playbook(MESH, "-v")  # -v: every task's result shown
    print(f"the mesh play on three hosts: {time.monotonic() - started:.1f} s")
    # Two changes on each host: wg0 made and up, then its peers.
    assert status == 0 and all(c[1:] == (2, 0, 0) for c in recap.values()), said[-4000:]
    keys = {name: fleet.public_key(name) for name in fleet.hosts}
    assert len(set(keys.values())) == 3
    for name in fleet.hosts:  # each private key was made on its host and stayed there
        config = fleet.hosts[name].folder("/etc/wireguard") / "wg0.conf"
        assert config.stat().st_mode & 0o077 == 0
        private = re.search(r"^PrivateKey = (\S+)$", fleet.config(name), re.MULTILINE)
        assert private is not None and private.group(1) not in said
    assert fleet.live_peers(HUB) == sorted(keys[spoke] for spoke in SPOKES)
    for spoke in SPOKES:  # a spoke knows only the hub: the other spoke is reached through it
        assert fleet.live_peers(spoke) == [keys[HUB]]
    assert fleet.wireguard(HUB)["client_to_client"] is True
    fleet.mesh_passes_traffic()

    status, said, recap = fleet.run_playbook(MESH)
    assert status == 0 and all(c[1:] == (0, 0, 0) for c in recap.values()), said[-4000:]


def test_a_play_checks_applies_then_changes_nothing(fleet: Fleet) -> None:
    states = {name: _state(fleet, name, 25) for name in fleet.hosts}
    status, said, recap = fleet.playbook(APPLY, "--check", "--diff", states=states)
    assert status == 0, said[-4000:]
    assert all(counts[1:] == (1, 0, 0) for counts in recap.values()), recap
    # The hub's two peers and each spoke's one.
    assert said.count("+PersistentKeepalive = 25") == 4, said[-4000:]
    for name in fleet.hosts:
        assert "PersistentKeepalive" not in fleet.config(name)
        assert fleet.master(name, fleet.spares[name]) is None

    started = time.monotonic()
    status, said, recap = fleet.playbook(APPLY, states=states)
    print(f"the play on three hosts: {time.monotonic() - started:.1f} s")
    assert status == 0 and all(c[1:] == (1, 0, 0) for c in recap.values()), said[-4000:]
    for name in fleet.hosts:
        assert "PersistentKeepalive = 25" in fleet.config(name)
        assert fleet.master(name, fleet.spares[name]) == "zbrf"
    fleet.mesh_passes_traffic()  # the peers changed live, no restart

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
    states = {name: _state(fleet, name, 15, cut=name == "h3") for name in fleet.hosts}
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
    assert fleet.master("h3", cut.uplink) is None
    assert "PersistentKeepalive = 25" in fleet.config("h3")
    assert "PersistentKeepalive = 15" not in fleet.config("h3")
    for name in ("h1", "h2"):
        assert recap[name][2:] == (0, 0), said[-4000:]
        assert [c["state"] for c in fleet.hosts[name].changes()] == ["confirmed"]
        assert "PersistentKeepalive = 15" in fleet.config(name)
    fleet.mesh_passes_traffic()  # the rolled back host's tunnel too


def test_each_hosts_export_applied_plans_nothing(fleet: Fleet) -> None:
    for name, lab in fleet.hosts.items():
        exported = lab.console("state", "export")
        assert exported.returncode == 0, exported.stderr
        path = fleet.work / f"{name}-export.yaml"
        path.write_text(exported.stdout)
        applied = lab.console("apply", str(path))
        assert applied.returncode == 0 and applied.stdout.endswith(
            "(nothing to change)\n"), applied.stdout + applied.stderr
