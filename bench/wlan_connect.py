"""Connecting through zsn next to the backends' own clients, on the same access point.

Goal (issue 12): zsn's connect <= 1.1x wpa_cli's (wpa_supplicant) and iwctl's (iwd).
``--eap`` (issue 36): PEAP to a WPA2-Enterprise access point, from the command to
traffic passing, next to wpa_cli and iwctl with a hand-written profile
(bench/_eap_guest.py); goal <= 1.1x too.
Needs the QEMU kernel lab (mac80211_hwsim, hostapd, wpa_supplicant, iwd): one guest
boot, under the lab's lock, runs bench/_wlan_guest.py (see its docstring for what
each case does). Run from the repository root as root:

    python3 bench/wlan_connect.py [--rounds 6]

Each round times every case once, in rotating order, from a disconnected station
whose scan has just finished (so the backend may associate without scanning again),
until the backend reports the link up
(COMPLETED, or iwd's "connected"). The in-process zsn cases are the pane's path
(zsn already running); the CLI cases add the interpreter start and imports of a
one-shot ``zsn wifi connect`` (slow in the guest: it reads Python over 9p and its
CPU is some 14 times slower than the host's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.lab.kernel import boot  # noqa: E402

GOAL = 1.1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--eap", action="store_true",
                        help="PEAP (802.1X) instead of WPA2-Personal")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zsn-bench-wlan-") as directory:
        results = Path(directory)
        guest = f"bench/_eap_guest.py {results}" if args.eap else \
            f"bench/_wlan_guest.py connect {results}"
        run = boot(f"{sys.executable} {guest} {args.rounds}", results, "bench wlan_connect",
                   timeout=1800)
        data_file = results / "connect.json"
        if run.returncode != 0 or not data_file.exists():
            print(run.tail(40), file=sys.stderr)
            return 1
        data = json.loads(data_file.read_text())
    print(f"guest kernel {data['kernel']}; {data['versions']}; boot to exit "
          f"{run.boot.boot_to_exit:.0f} s; {args.rounds} rounds (medians, min-max)")
    times = data["times"]

    def line(label: str) -> float:
        values = times[label]
        median = statistics.median(values)
        print(f"  {label:40s} {median * 1e3:8.0f} ms   ({min(values) * 1e3:.0f}-"
              f"{max(values) * 1e3:.0f})")
        return median

    wpa_cli = line("wpa_cli")
    zsn_wpa = line("zsn wpa (in-process)")
    iwctl = line("iwctl")
    zsn_iwd = line("zsn iwd (in-process)")
    line("zsn wifi connect (CLI, wpa_supplicant)")
    line("zsn wifi connect (CLI, iwd)")
    for name, ratio in (("wpa_supplicant", zsn_wpa / wpa_cli), ("iwd", zsn_iwd / iwctl)):
        verdict = "meets" if ratio <= GOAL else "misses"
        print(f"  {name}: zsn / own client = {ratio:.2f}x ({verdict} the {GOAL}x goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
