"""Child process of bench/wlan_scan_render.py: zsn's TUI with its WLAN pane shown and fed
a recorded snapshot (``zsn --export wlan`` JSON) on every refresh.

    python3 bench/_wlan_pane_app.py EXPORT.json static|changing REFRESH

``changing``: each refresh moves the signal of 10 access points by 1-3 dB (seeded,
so every run sees the same sequence), as consecutive real scans do; rows then
change cells and order. ``static``: the same snapshot every time.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from zsn.system.host import Host  # noqa: E402
from zsn.wlan.model import (  # noqa: E402
    KnownNetwork,
    Link,
    Rfkill,
    ScanEntry,
    WlanInterface,
    WlanSnapshot,
)


def _ssid(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def snapshot_from_export(data: dict[str, Any]) -> WlanSnapshot:
    interfaces = []
    for each in data["interfaces"]:
        link = Link(each["state"], each["connected"], _ssid(each["ssid"]), each["bssid"],
                    each["signal_dbm"], each["frequency"], each["bitrate_kbps"],
                    each["security"])
        scan = tuple(ScanEntry(_ssid(e["ssid"]), e["bssid"], e["signal_dbm"], e["frequency"],
                               e["security"], e["known"], e["connected"])
                     for e in each["scan"])
        rfkill = Rfkill(**each["rfkill"]) if each["rfkill"] else None
        interfaces.append(WlanInterface(each["name"], each["backend"], link, each["mac"],
                                        each["phy"], tuple(each["addresses"]), rfkill, scan))
    networks = tuple(KnownNetwork(p["ssid"].encode(), p["backend"], p["id"], p["security"],
                                  p["autoconnect"], p["hidden"], p["interface"], p["at_boot"],
                                  p["current"]) for p in data["profiles"])
    return WlanSnapshot(tuple(interfaces), networks, 0.0)


def main() -> None:
    export, mode, refresh = sys.argv[1], sys.argv[2], float(sys.argv[3])
    base = snapshot_from_export(json.loads(Path(export).read_text())["wlan"])
    rng = random.Random(12)
    state = {"snapshot": base}

    def read(host: Host) -> WlanSnapshot:
        snapshot = state["snapshot"]
        if mode == "changing":
            interfaces = []
            for each in snapshot.interfaces:
                scan = list(each.scan)
                for index in rng.sample(range(len(scan)), min(10, len(scan))):
                    entry = scan[index]
                    delta = rng.choice((-3, -2, -1, 1, 2, 3))
                    signal = max(-95, min(-20, (entry.signal_dbm or -60) + delta))
                    scan[index] = dataclasses.replace(entry, signal_dbm=signal)
                interfaces.append(dataclasses.replace(each, scan=tuple(scan)))
            snapshot = dataclasses.replace(snapshot, interfaces=tuple(interfaces))
            state["snapshot"] = snapshot
        return snapshot

    import zsn.tui.panes.wlan as pane

    pane.read_with_findings = read  # type: ignore[assignment]
    from zsn.tui.app import ZsnApp

    class BenchApp(ZsnApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.set_timer(0.2, lambda: self.action_show_pane("wlan"))

    with tempfile.TemporaryDirectory(prefix="zsn-bench-root-") as root:
        BenchApp(Host(Path(root)), theme="zsn-night", refresh=refresh).run()


if __name__ == "__main__":
    main()
