"""Every ``--dry-run`` of every command group, against one --root tree that has
something for each to plan: the tree, the command lines, and a driver that runs them
all in one process (``python -m tests.lab.dry_runs COMMANDS.json``), so a trace of
that process (strace) covers them all. Before each command the driver asks
``access("/@@zsn-dry-run-N")``, which marks in the trace where command N starts.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MARK = "/@@zsn-dry-run-"

NETPLAN = """\
network:
  version: 2
  renderer: networkd
  ethernets:
    eth1: {}
    eth2: {}
    eth3: {}
  bonds:
    bond0:
      interfaces: [eth1]
      parameters:
        mode: active-backup
"""
# A peer as `zsn peer disable` leaves it (its key from manpage-server-multipeer.conf).
DISABLED_PEER = ("\n#[disabled] [Peer]\n#[disabled] # Name = dave\n"
                 "#[disabled] PublicKey = GtL7fZc/bLnqZldpVofMCD6hDjrK28SsdLxevJ+qtKU=\n"
                 "#[disabled] AllowedIPs = 10.77.0.9/32\n")
ACCESS_RULES = ("Default = allow\nGroup = kids: alice-laptop\n"
                "Rule = deny kids -> bob-site 445/tcp\nRule = allow kids -> 10.77.0.0/24 53\n"
                "Test = kids -> bob-site:445/tcp deny\n")
"""The access rules of wg0 (as `zsn wg acl` writes them, comments aside)."""
DESIRED_STATE = """\
version: 1
wireguard:
  exclusive: true
  interfaces:
    - name: wg0
      gateway: {egress: lo}
      client_to_client: true
      linked: [wg9]
      peers:
        - {name: carol, public_key: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
           allowed_ips: [10.77.0.4/32], endpoint: "vpn.example.org:51820", keepalive: 25}
        - {public_key: "U8rvHcQ8SouCvbNH+EItFBTisPYHSV/+f+0VROrzuQY=", disabled: true}
    - name: wg9
      addresses: [10.9.0.1/24]
      listen_port: 51999
      up: true
zfs:
  policies:
    - {dataset: tank/home, keep: {hourly: 48}, recursive: true}
  jobs:
    - {name: copy, source: src/data, target: dst/copy, every: 600}
"""
"""What `zsn apply` plans on the tree: a new interface brought up and linked, peers
added, changed and removed (wg1 too: exclusive), the gateway and client-to-client, a
snapshot policy changed and a replication job added."""
OPENVPN_CLIENT = "client\ndev tun\nproto udp\nremote vpn.example.org 1194\nnobind\n"
NETCTL_PROFILE = ("Description='home'\nInterface=wlan0\nConnection=wireless\n"
                  "Security=wpa\nESSID=home-wpa2\nIP=dhcp\n"
                  "Key=\\\"1f3c9e4a8b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e\n")


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def build_tree(base: Path) -> tuple[Path, Path]:
    """A root with a WireGuard server, an OpenVPN client, a netctl Wi-Fi profile on a
    wireless interface, a netplan config and (fake programs on PATH) ZFS pools; and
    the folder of those programs."""
    root = base / "root"
    wireguard = root / "etc/wireguard"
    wireguard.mkdir(parents=True, mode=0o700)
    _write(wireguard / "wg0.conf", (FIXTURES / "wireguard/zcapwg1.conf").read_text()
           + DISABLED_PEER, 0o600)
    (root / "etc/sysctl.d").mkdir(parents=True)
    _write(root / "srv/old-wireguard/wg0.conf",  # keys wg takes: the import checks them
           (FIXTURES / "wireguard/imports/wg-quick/etc-wireguard/wg0.conf").read_text(), 0o600)
    _write(wireguard / "acl/wg0.acl", ACCESS_RULES, 0o600)
    _write(wireguard / "wg1.conf", "[Interface]\nAddress = 10.78.0.1/24\nListenPort = 51902\n"
           "PrivateKey = 0EERySwwME/UXHGdbYYo2lZbGszSZV83hLjwWXQQYEI=\n", 0o600)
    _write(root / "etc/openvpn/client/office.conf", OPENVPN_CLIENT, 0o600)
    _write(root / "etc/netplan/01-netcfg.yaml", NETPLAN, 0o600)
    for key, value in (("phy80211/name", "phy0"), ("address", "02:00:00:00:00:00")):
        _write(root / "sys/class/net/wlan0" / key, value + "\n")
    for key, value in (("type", "wlan"), ("name", "phy0"), ("soft", "0"), ("hard", "0")):
        _write(root / "sys/class/rfkill/rfkill0" / key, value + "\n")
    _write(root / "etc/netctl/wlan0-home-wpa2", NETCTL_PROFILE, 0o600)
    (root / "etc/systemd/system").mkdir(parents=True)
    _write(root / "etc/zsn/zfs.json", json.dumps(POLICY_FILE))
    _write(root / "srv/sanoid/sanoid.conf", SANOID_CONF)
    _write(root / "sys/module/zfs/version", "2.1.11-1+deb12u1\n")
    (root / "proc/spl/kstat/zfs").mkdir(parents=True)
    passphrase = _write(base / "passphrase", "correct horse battery\n", 0o600)
    assert passphrase.exists()
    from tests.lab.pki import make_pki

    _write(base / "eap-ca.pem", make_pki(["radius.example.org"]).ca_cert)
    _write(root / "sys/class/net/eth1/address", "52:54:00:12:34:57\n")
    return root, _fake_zfs(base)


def _fake_zfs(base: Path) -> Path:
    from tests.unit.zfs.conftest import FAKE, LAB, POOL_LIST, POOL_LIST_OUTPUT, read

    programs = base / "bin"
    programs.mkdir()
    for name in ("zpool", "zfs", "dmsetup"):
        program = programs / name
        program.write_text(FAKE.format(python=sys.executable, name=name))
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    answers: dict[str, dict[str, str | int]] = {
        POOL_LIST: {"stdout": read(POOL_LIST_OUTPUT)},
        "zpool status -p -P": {"stdout": read(LAB / "zpool-status-p-P.all-classes.txt")},
        # zfs-get-Hp-o.txt's "full compression off default", in the columns asked for.
        "zfs get -Hp -r -t filesystem,volume -o name,value,source compression full":
            {"stdout": "full\toff\tdefault\n"},
        # A pool without snapshots: zfs lists nothing.
        "zfs list -Hp -t snapshot -o name,guid,createtxg,creation,used,referenced,userrefs "
        "-s createtxg full": {"stdout": ""},
    }
    answers.update(_send_reads())
    answers.update(_protection_reads())
    (base / "answers.json").write_text(json.dumps(answers))
    return programs


POLICY_FILE = {
    "version": 1,
    "policies": {"tank/home": {"keep": {"hourly": 24, "daily": 7}, "recursive": True},
                 "tank/vol": {"keep": {"daily": 7}}},
    "jobs": {"offsite": {"source": "src/data", "target": "dst/data", "every": 3600,
                         "added": 1795300000}},
}
SANOID_CONF = "[tank/home]\n\tuse_template = production\n\n[template_production]\n" \
              "\thourly = 36\n\tdaily = 30\n\tmonthly = 3\n"


def _protection_reads() -> dict[str, dict[str, str | int]]:
    """What snapshot runs, policy and job changes read (tests/fixtures/zfs-policy-lab)."""
    from tests.unit.zfs.conftest import FIXTURES

    lab = FIXTURES / "zfs-policy-lab"

    def answer(name: str) -> dict[str, str | int]:
        def part(suffix: str) -> str:
            path = lab / f"{name}.{suffix}"
            return path.read_text() if path.exists() else ""

        return {"stdout": part("out"), "stderr": part("err"), "rc": int(part("rc") or 0)}

    snapshots = ("zfs list -Hp -t snapshot -o name,guid,createtxg,creation,used,referenced,"
                 "userrefs -s createtxg -d 1")
    return {
        "zfs list -Hp -o name -t filesystem,volume": answer("datasets"),
        f"{snapshots} tank/home tank/home/alice tank/home/bob tank/vol":
            answer("snapshots-policy"),
        "zfs list -H -o name tank/home": answer("dataset-exists"),
        "zfs get -Hp -o value encryption src/data": answer("encryption-plain"),
    }


def _send_reads() -> dict[str, dict[str, str | int]]:
    """`zsn zfs send src/data dst/data`'s reads of both sides and its estimates, as the
    kernel lab answered them for a new target (tests/fixtures/zfs-send-lab, second run)."""
    from tests.unit.zfs.conftest import FIXTURES

    send = FIXTURES / "zfs-send-lab"

    def answer(name: str) -> dict[str, str | int]:
        def part(suffix: str) -> str:
            path = send / f"{name}.{suffix}"
            return path.read_text() if path.exists() else ""

        return {"stdout": part("out"), "stderr": part("err"), "rc": int(part("rc") or 0)}

    get = "zfs get -Hp -o name,property,value -t filesystem,volume"
    listing = ("zfs list -Hp -t snapshot -o name,guid,createtxg,creation,used,referenced,"
               "userrefs -s createtxg")
    return {
        f"{get} type,encryption,keystatus src/data": answer("data.source-get"),
        f"{listing} src/data": answer("data.source-snapshots"),
        f"{get} type,encryption,written,receive_resume_token dst/data": answer("new.target-get"),
        f"{listing} dst/data": answer("new.target-snapshots"),
        "zfs get -Hp -o name,property,value type dst": answer("new.target-parent"),
        "zpool get -Hp -o name,property,value feature@extensible_dataset dst":
            answer("new.target-features"),
        "zfs send -nvP src/data@a": answer("estimate.full"),
        "zfs send -nvP -I @a src/data@c": answer("estimate.intermediate"),
    }


def commands(base: Path, root: Path) -> list[list[str]]:
    """One command line per dry run, each expected to show a plan."""
    passphrase = str(base / "passphrase")
    groups = {
        "peer": [["add", "wg0", "carol", "--endpoint", "vpn.example.org"],
                 ["remove", "wg0", "alice-laptop"], ["disable", "wg0", "bob-site"],
                 ["enable", "wg0", "dave"], ["rename", "wg0", "bob-site", "bob-office"],
                 ["expire", "wg0", "bob-site", "--in", "30d"],
                 ["routes", "wg0", "bob-site", "10.99.0.0/16", "10.98.0.0/16"]],
        "wg": [["create", "wg9", "--address", "10.9.0.1/24", "--port", "51999"],
               ["up", "wg0"], ["down", "wg0"], ["clients", "wg0"],
               ["endpoint", "wg0", "vpn.example.org"], ["link", "wg0", "wg1"],
               ["gateway", "wg0", "--egress", "lo"],  # an interface every machine has
               ["import", "wg-quick", "/srv/old-wireguard", "--interface", "wg5"],
               ["acl", "group", "add", "wg0", "kids", "bob-site"],
               ["acl", "group", "remove", "wg0", "kids", "alice-laptop"],
               ["acl", "rule", "add", "wg0", "allow", "any", "10.77.0.0/24", "--port", "53"],
               ["acl", "rule", "remove", "wg0", "2"],
               ["acl", "rule", "move", "wg0", "2", "--position", "1"],
               ["acl", "default", "wg0", "deny"], ["acl", "load", "wg0"],
               ["acl", "test", "add", "wg0", "bob-site -> alice-laptop allow"]],
        "vpn": [["start", "office"], ["stop", "office"], ["restart", "office"],
                ["enable", "office"], ["disable", "office"], ["hook", "install", "office"],
                ["import", str(base / "import/home.ovpn")], ["management", "office"]],
        "zfs": [["scrub", "full"], ["set", "full", "compression=lz4"],
                ["clear", "full", "/run/vdev/a"], ["snapshot", "full@before"],
                ["send", "src/data", "dst/data"], ["snapshots", "run"],
                ["policy", "set", "tank/home", "--keep", "hourly=48"],
                ["policy", "remove", "tank/vol"],
                ["policy", "import", "sanoid", f"{root}/srv/sanoid/sanoid.conf"],
                ["policy", "install-timer"],
                ["scrub", "schedule", "full", "--every", "month", "--at", "2nd Sun 01:00"],
                ["scrub", "schedule", "--stagger"], ["trim", "schedule", "rz", "--every", "week"],
                ["replicate", "add", "copy", "src/data", "dst/copy"],
                ["replicate", "remove", "offsite"], ["replicate", "run"]],
        "wifi": [["connect", "home-wpa2", "--passphrase-file", passphrase, "--hidden"],
                 ["connect", "corp", "--eap", "peap", "--identity", "alice@example.org",
                  "--password-file", passphrase, "--ca-cert", str(base / "eap-ca.pem"),
                  "--server-domain", "radius.example.org"],
                 ["disconnect"], ["forget", "home-wpa2"], ["autoconnect", "home-wpa2", "on"]],
        "link": [["create", "bond", "bond1", "--mode", "802.3ad", "--members", "eth2,eth3",
                  "--config-only"],
                 ["create", "vlan", "eth1.10", "--parent", "eth1", "--id", "10",
                  "--config-only"],
                 ["create", "bridge", "br0", "--ports", "eth3", "--config-only"],
                 ["set", "bond0", "--mtu", "9000", "--config-only"],
                 ["add-member", "bond0", "eth2", "--config-only"],
                 ["remove-member", "bond0", "eth1", "--config-only"],
                 ["delete", "bond0", "--config-only"], ["persist", "bond0"],
                 ["8021x", "eth1", "--eap", "peap", "--identity", "alice@example.org",
                  "--password-file", passphrase, "--ca-cert", str(base / "eap-ca.pem"),
                  "--server-domain", "radius.example.org"]],
    }
    _write(base / "import/home.ovpn", OPENVPN_CLIENT)
    _write(base / "state.yaml", DESIRED_STATE)
    groups["apply"] = [[str(base / "state.yaml"), "--diff"],
                       [str(base / "state.yaml"), "--json", "--try", "30"]]
    return [["--root", str(root), group, *argv, "--dry-run"]
            for group, lines in groups.items() for argv in lines]


def main(path: str) -> None:
    from zsn import cli

    codes = []
    for number, argv in enumerate(json.loads(Path(path).read_text())):
        os.access(f"{MARK}{number}", os.F_OK)
        try:
            code = cli.main(argv)
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else 1
        codes.append(code)
        sys.stderr.write(f"@@exit {number} {code}\n")
        sys.stderr.flush()
    sys.stdout.write("@@codes " + json.dumps(codes) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
