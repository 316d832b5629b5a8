"""Load + edit + save a 5,000-peer wg-quick config that has a name comment per peer.

zsn's editor next to the `wgconfig` package (PyPI) doing the same three edits:
add a named peer, change one peer's AllowedIPs, remove one peer. Prints the
median wall time of each over several rounds, the ratio zsn / wgconfig (goal
<= 1.0x), and whether every line zsn did not mean to touch is byte-identical.

Run: python bench/wireguard_config_edit.py [--peers N] [--rounds R]
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zsn.plan import FileEdit
from zsn.system import files
from zsn.wireguard.config import parse


def make_config(peers: int) -> tuple[str, list[str]]:
    def key() -> str:
        return base64.b64encode(os.urandom(32)).decode()

    keys = [key() for _ in range(peers)]
    lines = ["# wg0: benchmark server", "[Interface]", "Address = 10.8.0.1/16",
             "ListenPort = 51820", f"PrivateKey = {key()}"]
    for number, public in enumerate(keys):
        host = number + 2
        lines += ["", f"# peer-{number}", "[Peer]", f"PublicKey = {public}",
                  f"AllowedIPs = 10.8.{host // 256}.{host % 256}/32"]
    return "\n".join(lines) + "\n", keys


NEW_KEY = base64.b64encode(b"n" * 32).decode()


def edit_with_zsn(path: Path, keys: list[str]) -> None:
    """As a plan does it: a copy of the parse edited, the new text read back against
    what the edits meant (`zsn.meaning`, when the FileEdit is made), then written."""
    snapshot = files.read_tracked(path)
    config = parse(snapshot.text, str(path)).copy()
    config.append_peer("newcomer", [("PublicKey", NEW_KEY), ("AllowedIPs", "10.8.250.1/32")])
    config.set_value(config.require_peer(keys[2500]), "AllowedIPs",
                     "10.8.9.198/32, 192.168.50.0/24")
    config.remove_peer(config.require_peer(keys[4000]))
    FileEdit(path, snapshot, config.render(), backup=False, intent=config.intent).apply()


def edit_with_wgconfig(path: Path, keys: list[str]) -> None:
    import wgconfig

    config = wgconfig.WGConfig(str(path))
    config.read_file()
    config.add_peer(NEW_KEY, "# newcomer")
    config.add_attr(NEW_KEY, "AllowedIPs", "10.8.250.1/32")
    config.del_attr(keys[2500], "AllowedIPs")
    config.add_attr(keys[2500], "AllowedIPs", "10.8.9.198/32, 192.168.50.0/24")
    config.del_peer(keys[4000])
    config.write_file()


def timed(function, text: str, keys: list[str], rounds: int) -> tuple[float, str]:
    samples = []
    result = ""
    with tempfile.TemporaryDirectory(prefix="zsn-bench-") as tmp:
        path = Path(tmp) / "wg0.conf"
        for _ in range(rounds):
            path.write_text(text)
            started = time.perf_counter()
            function(path, keys)
            samples.append(time.perf_counter() - started)
            result = path.read_text()
    return statistics.median(samples), result


def real_world_round_trips() -> tuple[int, int, int]:
    """How many of the real configs in tests/fixtures each tool writes back unchanged."""
    import wgconfig

    paths = sorted((Path(__file__).resolve().parents[1] / "tests/fixtures/wireguard")
                   .glob("*.conf"))
    zsn_exact = wg_exact = 0
    for path in paths:
        text = path.read_text()
        zsn_exact += parse(text).render() == text
        config = wgconfig.WGConfig()
        config.read_from_fileobj(io.StringIO(text))
        out = io.StringIO()
        config.write_to_fileobj(out)
        wg_exact += out.getvalue() == text
    return zsn_exact, wg_exact, len(paths)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    text, keys = make_config(args.peers)
    zsn_time, zsn_out = timed(edit_with_zsn, text, keys, args.rounds)
    try:
        wg_time, wg_out = timed(edit_with_wgconfig, text, keys, args.rounds)
    except ImportError:
        print("wgconfig is not installed: pip install wgconfig", file=sys.stderr)
        return 1
    # The expected bytes, made with plain string operations on the original text:
    # one AllowedIPs line changed, one 5-line block gone, one block appended.
    edited_line = "AllowedIPs = 10.8.9.198/32\n"
    old_block = f"\n# peer-4000\n[Peer]\nPublicKey = {keys[4000]}\nAllowedIPs = 10.8.15.162/32\n"
    assert edited_line in text and old_block in text
    expected = (text.replace(edited_line, "AllowedIPs = 10.8.9.198/32, 192.168.50.0/24\n")
                .replace(old_block, "")
                + f"\n# newcomer\n[Peer]\nPublicKey = {NEW_KEY}\nAllowedIPs = 10.8.250.1/32\n")
    print(f"peers: {args.peers}, rounds: {args.rounds} (median)")
    print(f"zsn      load+edit+save: {zsn_time * 1000:8.1f} ms")
    print(f"wgconfig load+edit+save: {wg_time * 1000:8.1f} ms")
    print(f"ratio zsn / wgconfig:    {zsn_time / wg_time:8.2f}x (goal <= 1.0x)")
    print(f"zsn output byte-exact (only the edited lines differ): {zsn_out == expected}")
    print(f"wgconfig output byte-exact: {wg_out == expected}")
    zsn_exact, wg_exact, total = real_world_round_trips()
    print(f"real-world configs (tests/fixtures) written back unchanged: zsn {zsn_exact}/{total}, "
          f"wgconfig {wg_exact}/{total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
