"""`list_links` reads the kernel's link and address dumps with zsn's own decoder
(`zsn.system.rtnetlink`): what it returns must be what pyroute2's IPRoute returns for
the same namespace, attribute by attribute.

Each read runs in a child inside a lab namespace (`ip netns exec`), so both see the
same links: loopback, a veth up with IPv4 and IPv6 addresses (one secondary), its
down peer in a bridge, a wireguard-go tun with addresses; then some 300 links, whose
dump takes several netlink datagrams.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.lab.netns import Lab, run

READ_BOTH = """
import json
from pyroute2 import IPRoute
from zsn.system.netlink import list_links

ours = {name: [link.index, link.name, link.kind, link.operstate, link.mtu, link.mac,
               list(link.addresses)] for name, link in list_links().items()}
with IPRoute() as ipr:
    raw_links, raw_addresses = list(ipr.get_links()), list(ipr.get_addr())
by_index = {}
for message in raw_addresses:
    address = message.get("address") or message.get("local")
    if address:
        by_index.setdefault(message["index"], []).append(f"{address}/{message['prefixlen']}")
theirs = {}
for message in raw_links:
    name = message.get("ifname")
    if name:
        theirs[name] = [message["index"], name, message.get(("linkinfo", "kind")),
                        message.get("operstate") or "UNKNOWN", message.get("mtu") or 0,
                        message.get("address"), by_index.get(message["index"], [])]
print(json.dumps([ours, theirs]))
"""


def _read_both(namespace: str) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    result = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", READ_BOTH],
                            capture_output=True, text=True, timeout=120, check=True)
    ours, theirs = json.loads(result.stdout)
    return ours, theirs


def test_links_and_addresses_are_what_iproute_reads(lab: Lab) -> None:
    namespace, other = lab.namespace("ln"), lab.namespace("lo")
    lab.veth(namespace, "192.168.241.1/24", other, "192.168.241.2/24")
    veth, bridge, tunnel = lab.name("va"), lab.name("br"), lab.name("wg")
    run(["ip", "-n", namespace, "addr", "add", "192.168.242.1/24", "dev", veth])
    run(["ip", "-n", namespace, "addr", "add", "192.168.241.9/24", "dev", veth])  # secondary
    run(["ip", "-n", namespace, "addr", "add", "fd41::1/64", "dev", veth])
    run(["ip", "-n", namespace, "link", "add", bridge, "type", "bridge"])
    run(["ip", "-n", namespace, "link", "add", lab.name("xa"), "type", "veth", "peer", "name",
         lab.name("xb")])
    run(["ip", "-n", namespace, "link", "set", lab.name("xb"), "master", bridge])
    lab.wireguard_go(namespace, tunnel)
    run(["ip", "-n", namespace, "addr", "add", "10.241.0.1/24", "dev", tunnel])
    run(["ip", "-n", namespace, "addr", "add", "fd42::1/64", "dev", tunnel])
    run(["ip", "-n", namespace, "link", "set", tunnel, "up"])

    ours, theirs = _read_both(namespace)
    assert ours == theirs
    assert ours[tunnel][2] == "tun" and "10.241.0.1/24" in ours[tunnel][6]
    assert {"192.168.241.9/24", "fd41::1/64"} <= set(ours[veth][6])
    assert ours[lab.name("xb")][3] == "DOWN" and ours[bridge][2] == "bridge"


def test_a_dump_over_several_datagrams_is_read_whole(lab: Lab) -> None:
    namespace = lab.namespace("lm")
    commands = "".join(f"link add {lab.tag}m{number}a type veth peer name {lab.tag}m{number}b\n"
                       f"address add 10.{number // 200}.{number % 200}.1/24 dev "
                       f"{lab.tag}m{number}a\n" for number in range(150))
    subprocess.run(["ip", "-n", namespace, "-batch", "-"], input=commands, text=True,
                   check=True, timeout=60)

    ours, theirs = _read_both(namespace)
    assert len(ours) == 301
    assert ours == theirs


ERRORS = """
import errno, json, os
from zsn.errors import AccessDeniedError, NetlinkError
from zsn.system import netlink, rtnetlink

def outcome(change):
    try:
        change()
    except NetlinkError as exc:
        return [exc.code, isinstance(exc, AccessDeniedError), str(exc)]
    return None

found = {
    "missing": outcome(lambda: netlink.set_link("zsnnosuch0", state="up")),
    "exists": outcome(lambda: netlink.create_link(os.environ["TAKEN"], "bridge")),
    "range": outcome(lambda: netlink.set_link(os.environ["TAKEN"], mtu=70000)),
}
os.setuid(65534)  # nobody: changes are refused, reads still work
found["denied"] = outcome(lambda: netlink.set_link(os.environ["TAKEN"], state="down"))
found["read"] = len(rtnetlink.read_links())
print(json.dumps(found))
"""


def test_netlink_errors_keep_their_errno(lab: Lab) -> None:
    """Callers decide by the kernel's errno (`NetlinkError.code`) or by class
    (`AccessDeniedError` for EPERM/EACCES), never by the message's words."""
    import errno

    namespace = lab.namespace("le")
    bridge = lab.name("eb")
    run(["ip", "-n", namespace, "link", "add", bridge, "type", "bridge"])
    result = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", ERRORS],
                            capture_output=True, text=True, timeout=120, check=True,
                            env={"TAKEN": bridge, "PATH": "/usr/bin:/bin",
                                 "PYTHONPATH": ":".join(sys.path)})
    found = json.loads(result.stdout)
    assert found["missing"][:2] == [errno.ENODEV, False]
    assert found["missing"][2] == "zsnnosuch0: no such network device"
    assert found["exists"][:2] == [errno.EEXIST, False]
    assert found["range"][0] in (errno.EINVAL, errno.ERANGE) and not found["range"][1]
    assert found["denied"][:2] == [errno.EPERM, True]
    assert "needs root" in found["denied"][2]
    assert found["read"] >= 2  # lo and the bridge
