"""Onboarding one peer on a running 5,000-peer interface, end to end.

A wireguard-go interface in a throwaway network namespace gets 5,000 peers over
UAPI, and a matching server config (a name comment per peer) is written under a
temporary --root. Then zsn onboards peers the way `zsn peer add` does: read and
check the config, pick the next free address, generate keys, write the client
config 0600, append the [Peer] block, add the peer to the running interface.
Prints the in-process median and worst time (goal < 150 ms) and the whole
`zsn peer add` command's wall time (Python start-up included). Needs root.

Run: sudo python bench/wireguard_onboarding.py [--peers N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.lab.netns import Lab  # noqa: E402
from zsn.system.host import Host  # noqa: E402
from zsn.wireguard import uapi  # noqa: E402
from zsn.wireguard.keys import KeyPair, base64_to_hex, generate_private_key  # noqa: E402
from zsn.wireguard.onboarding import PeerRequest, plan_add_peer  # noqa: E402


def build(lab: Lab, root: Path, peers: int) -> tuple[str, Path]:
    namespace = lab.namespace("b")
    interface = lab.name("bw")
    socket = lab.wireguard_go(namespace, interface)
    private = generate_private_key()
    publics = [KeyPair.generate().public_key for _ in range(peers)]
    lines = [f"private_key={base64_to_hex(private)}", "listen_port=51899"]
    config = ["# benchmark server", "[Interface]", "Address = 10.90.0.1/16",
              "ListenPort = 51899", f"PrivateKey = {private}"]
    for number, public in enumerate(publics):
        host = number + 2
        address = f"10.90.{host // 256}.{host % 256}/32"
        lines += [f"public_key={base64_to_hex(public)}", f"allowed_ip={address}"]
        config += ["", f"# peer-{number}", "[Peer]", f"PublicKey = {public}",
                   f"AllowedIPs = {address}"]
    uapi.set_device(socket, lines, timeout=60)
    directory = root / "etc/wireguard"
    directory.mkdir(parents=True, mode=0o700)
    path = directory / f"{interface}.conf"
    path.write_text("\n".join(config) + "\n")
    os.chmod(path, 0o600)
    (root / "run").mkdir()
    (root / "run/wireguard").symlink_to("/run/wireguard")  # the UAPI socket, under --root
    (root / "etc/zsn").mkdir(mode=0o700)
    (root / "etc/zsn/wireguard.json").write_text(
        f'{{"{interface}": {{"endpoint_host": "vpn.example.com", "links": []}}}}\n')
    return interface, socket


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespace, wireguard-go)", file=sys.stderr)
        return 1
    lab = Lab(tag="zwm" + secrets.token_hex(2))
    try:
        with tempfile.TemporaryDirectory(prefix="zsn-bench-") as tmp:
            root = Path(tmp)
            interface, socket = build(lab, root, args.peers)
            host = Host(root)
            samples = []
            for number in range(args.rounds):
                started = time.perf_counter()
                plan, _client = plan_add_peer(host, PeerRequest(interface, f"new-{number}"))
                plan.apply()
                samples.append(time.perf_counter() - started)
            commands = []
            for number in range(3):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), "peer", "add",
                                interface, f"cli-{number}"], check=True, cwd=REPO,
                               capture_output=True, timeout=60)
                commands.append(time.perf_counter() - started)
            live = len(uapi.get_device(socket, timeout=30).peers)
    finally:
        lab.close()
    print(f"live interface: {args.peers} peers (wireguard-go), config with a name per peer")
    print(f"onboard one peer, in process: median {statistics.median(samples) * 1000:.1f} ms, "
          f"worst {max(samples) * 1000:.1f} ms over {args.rounds} (goal < 150 ms)")
    print(f"'zsn peer add' whole command: median {statistics.median(commands) * 1000:.0f} ms "
          "(includes Python start-up and imports)")
    print(f"peers on the live interface afterwards: {live} "
          f"(expected {args.peers + args.rounds + 3})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
