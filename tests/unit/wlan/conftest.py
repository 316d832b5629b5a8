"""Fixtures for the WLAN unit tests: real captures from the kernel lab (SOURCES.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from zsn.system import nl80211
from zsn.system.nl80211 import BssRecord
from zsn.wlan import iwd
from zsn.wlan.bss import in_range
from zsn.wlan.model import Rfkill, WlanInterface

WLAN_FIXTURES = Path(__file__).parents[2] / "fixtures" / "wlan"


def fixture_text(name: str) -> str:
    return (WLAN_FIXTURES / name).read_text()


@pytest.fixture
def wlan_fixtures() -> Path:
    return WLAN_FIXTURES


def make_root(base: Path, *, wireless: tuple[str, ...] = ("wlan0",), wired: tuple[str, ...] = (
        "eth0",), netctl: bool = True, soft_blocked: bool = False) -> Path:
    """A --root tree with the sysfs entries zsn reads, shaped as in the lab's captures
    (hwsim MACs 02:00:00:00:0N:00, rfkill switches named after the phy)."""
    root = base / "root"
    for number, name in enumerate(wireless):
        link = root / "sys/class/net" / name
        (link / "phy80211").mkdir(parents=True)
        (link / "phy80211/name").write_text(f"phy{number}\n")
        (link / "address").write_text(f"02:00:00:00:0{number}:00\n")
        switch = root / "sys/class/rfkill" / f"rfkill{number}"
        switch.mkdir(parents=True)
        for key, value in (("type", "wlan"), ("name", f"phy{number}"),
                           ("soft", "1" if soft_blocked else "0"), ("hard", "0")):
            (switch / key).write_text(value + "\n")
    for name in wired:
        (root / "sys/class/net" / name).mkdir(parents=True)
        (root / "sys/class/net" / name / "address").write_text("52:54:00:12:34:56\n")
    if netctl:
        (root / "etc/netctl").mkdir(parents=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    return root


def tree(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every file and link under `root` with its mode and content: "nothing changed"."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            found[relative] = (0, str(path.readlink()))
        elif path.is_file():
            found[relative] = (path.stat().st_mode, path.read_bytes())
        else:
            found[relative] = (path.stat().st_mode, "dir")
    return found


@pytest.fixture
def wifi(monkeypatch: pytest.MonkeyPatch) -> Callable[..., int]:
    """``zsn wifi ...`` as the command line runs it."""
    from zsn import cli, domains

    if "zsn.wlan" not in domains.REGISTRY:
        monkeypatch.setattr(domains, "REGISTRY", (*domains.REGISTRY, "zsn.wlan"))

    def run(root: Path, *args: str) -> int:
        return cli.main(["--root", str(root), "wifi", *args])

    return run


NL80211_FAMILY = int(fixture_text("nl80211-family.txt"))
"""The nl80211 family number of the boot that captured the scan dumps."""


def kernel_scan(step: str) -> list[BssRecord]:
    """The kernel's access points as iwd's station wlan0 saw them at `step` (scanned,
    transition, hidden: capture_security.py)."""
    return nl80211.decode_scan([(WLAN_FIXTURES / f"nl80211-get-scan.wlan0.{step}.bin")
                                .read_bytes()], NL80211_FAMILY)


def iwd_replies(step: str) -> iwd.IwdReplies:
    data = json.loads(fixture_text(f"iwd-replies.{step}.json"))
    return iwd.IwdReplies(
        data["objects"],
        {path: [(str(n), int(s)) for n, s in rows] for path, rows in data["ordered"].items()},
        {path: [(str(a), int(s), str(k)) for a, s, k in rows]
         for path, rows in data["hidden"].items()},
        data["diagnostics"])


def iwd_station(step: str) -> WlanInterface:
    """wlan0 under iwd at `step`, as `read_wlan` builds it: iwd's link and the kernel's
    access points, with what iwd remembers."""
    state = iwd.state_of(iwd_replies(step))
    device = state.devices["wlan0"]
    scan = in_range(kernel_scan(step), device.scan, device.link,
                    known=[network.ssid for network in state.networks])
    return WlanInterface("wlan0", "iwd", device.link, mac=device.address, phy="phy0",
                         rfkill=Rfkill(False, False), scan=scan, backend_unit="iwd.service",
                         backend_unit_enabled=True)
