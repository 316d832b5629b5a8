"""wg-quick configs: wg(8)'s and wg-quick(8)'s man page examples, the field notes'
configs and a captured one, read by zsn and by wireguard-tools.

The real tools' reading: ``wg-quick strip`` (what wg-quick hands to wg) loaded with
``wg setconf`` into a wireguard-go device in a private namespace, then ``wg showconf``:
the private key, the listen port and each peer's key, preshared key, allowed IPs and
keepalive must be what zsn reads. A config wg refuses (placeholder keys, no-break
spaces) zsn's lint must refuse too (WG011, naming the line); an endpoint given by a
name cannot be resolved in the lab, so such a file is only checked for what wg refuses.
Then zsn adds a peer, as ``zsn peer add`` does (an address from the interface's first
range with room, when it has one): every byte before stays, and wg reads the new peer
and the old ones.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from tests.lab.netns import Lab, new_private_key, require_lab
from zsn.errors import ValidationError
from zsn.wireguard import addressing
from zsn.wireguard.config import WgConfig, parse
from zsn.wireguard.keys import public_key_from_private
from zsn.wireguard.refusals import refusals

FIXTURES = Path(__file__).parents[1] / "fixtures"
FAMILY = "wireguard"
FILES = sorted([*(f"corpus/wireguard/{p.name}" for p in (FIXTURES / "corpus" / "wireguard")
                  .glob("*.conf")),
                *(f"wireguard/{p.name}" for p in (FIXTURES / "wireguard").glob("*.conf"))])
_RESOLVING = ("Name or service not known", "Temporary failure in name resolution",
              "No address associated")


@pytest.fixture(scope="module")
def device() -> Iterator[tuple[str, str]]:
    require_lab(("ip", "wireguard-go", "wg", "wg-quick"))
    lab = Lab()
    try:
        ns = lab.namespace("c")
        ifname = lab.name("wg")
        lab.wireguard_go(ns, ifname)
        yield ns, ifname
    finally:
        lab.close()


def strip(config: Path) -> str:
    result = subprocess.run(["wg-quick", "strip", str(config)], capture_output=True,
                            text=True, timeout=30, check=True)
    return result.stdout


def setconf(ns: str, ifname: str, text: str) -> str | None:
    """wg's complaint when it refuses `text` (None: the device took it)."""
    result = subprocess.run(["ip", "netns", "exec", ns, "wg", "setconf", ifname, "/dev/stdin"],
                            input=text, capture_output=True, text=True, timeout=30,
                            check=False, env={**os.environ,
                                              "WG_ENDPOINT_RESOLUTION_RETRIES": "0"})
    return None if result.returncode == 0 else (result.stderr.strip() or "refused")


def showconf(ns: str, ifname: str) -> dict[str, object]:
    """The device's configuration, as wg shows it: interface and peers by key."""
    text = subprocess.run(["ip", "netns", "exec", ns, "wg", "showconf", ifname],
                          capture_output=True, text=True, timeout=30, check=True).stdout
    peers: dict[str, dict[str, str]] = {}
    interface: dict[str, str] = {}
    current = interface
    for line in text.splitlines():
        if line.strip() == "[Peer]":
            current = {}
        key, equals, value = line.partition(" = ")
        if not equals:
            continue
        current[key] = value
        if key == "PublicKey":
            peers[value] = current
    return {"interface": {k: v for k, v in interface.items() if k != "FwMark"},
            "peers": peers}


def zsn_view(text: str) -> dict[str, object]:
    """zsn's reading, in the terms of `wg showconf`."""
    config = parse(text)
    assert config.interface is not None
    interface = {"ListenPort": config.interface.get("ListenPort") or None,
                 "PrivateKey": config.interface.get("PrivateKey")}
    peers = {}
    for peer in config.peers:
        shown = {"PublicKey": peer.get("PublicKey"), "PresharedKey": peer.get("PresharedKey"),
                 "AllowedIPs": ", ".join(network(item) for item in peer.get_all("AllowedIPs"))
                 or None, "Endpoint": peer.get("Endpoint"),
                 "PersistentKeepalive": peer.get("PersistentKeepalive")}
        peers[peer.get("PublicKey")] = {k: v for k, v in shown.items() if v}
    return {"interface": {k: v for k, v in interface.items() if v}, "peers": peers}


def network(item: str) -> str:
    """An AllowedIPs item as zsn routes it (its span): the network, host bits cleared,
    which is what wg sets and shows."""
    span = addressing.network_span(item)
    assert span is not None, item
    version, first, _last, prefix = span
    return str(ipaddress.ip_network((first, prefix) if version == 4 else
                                    (ipaddress.IPv6Address(first), prefix)))


def allocated(config: WgConfig) -> str:
    """The new peer's AllowedIPs: the address zsn hands out (inside one of the
    interface's ranges, held by no peer nor the server), or a fixed one when the
    interface has no range with room."""
    try:
        chosen = addressing.next_free_address(config)
    except ValidationError:
        return "10.250.0.9/32"
    ranges = addressing.interface_addresses(config)
    held = {a.ip for a in ranges} | {n.network_address for peer in config.all_peers
                                     for n in addressing.peer_networks(peer)
                                     if n.prefixlen == n.max_prefixlen}
    for address in chosen.addresses:
        assert any(address in r.network for r in ranges) and address not in held, address
    return ", ".join(chosen.host_routes())


@pytest.mark.parametrize("name", FILES)
def test_wireguard_config(tmp_path: Path, device: tuple[str, str], name: str) -> None:
    ns, ifname = device
    text = (FIXTURES / name).read_text()
    outcome = Outcome()
    TALLY.record(FAMILY, name, outcome)
    path = tmp_path / "wg0.conf"
    path.write_text(text)
    path.chmod(0o600)
    refused = refusals(parse(text))
    complaint = setconf(ns, ifname, strip(path))
    if complaint is not None and any(words in complaint for words in _RESOLVING):
        # wg took everything up to an endpoint it must resolve: nothing else is wrong.
        assert refused == []
        outcome.read = True
    elif complaint is not None:
        assert refused, f"wg refuses it ({complaint}); zsn's lint says nothing"
        outcome.read, outcome.refused = True, "WG011"
        return
    else:
        assert refused == []
        expected = showconf(ns, ifname)
        ours = zsn_view(text)
        if "ListenPort" not in ours["interface"]:  # type: ignore[operator]
            expected["interface"].pop("ListenPort", None)  # type: ignore[attr-defined]
        assert ours == expected
        outcome.read = True
    # A new peer, as zsn's peer add writes it.
    config = parse(text)
    allowed = allocated(config)
    key = public_key_from_private(new_private_key())
    config.append_peer("corpus-peer", [("PublicKey", key), ("AllowedIPs", allowed)])
    after = config.render()
    assert after.startswith(text if text.endswith(("\n", "\r")) or not text else text + "\n")
    path.write_text(after)
    assert refusals(parse(after)) == []
    complaint = setconf(ns, ifname, strip(path))
    if complaint is None:
        shown = showconf(ns, ifname)
        assert shown["peers"][key]["AllowedIPs"] == allowed  # type: ignore[index]
        assert set(shown["peers"]) == set(zsn_view(after)["peers"])  # type: ignore[call-overload]
    else:
        assert any(words in complaint for words in _RESOLVING), complaint
    outcome.edited = True
