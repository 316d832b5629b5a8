"""Peers that expire, on the captured lab server's config (fixtures/wireguard/zcapwg1.conf:
one peer named above its block, one named by a `# Name =` line inside it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zsn.system.host import Host
from zsn.wireguard import expiry, lint
from zsn.wireguard.config import parse

FIXTURES = Path(__file__).parent.parent / "fixtures" / "wireguard"
REPO = Path(__file__).resolve().parents[2]
ALICE = "8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE="


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "etc/wireguard"
    directory.mkdir(parents=True, mode=0o700)
    shutil.copyfile(FIXTURES / "zcapwg1.conf", directory / "zcapwg1.conf")
    (tmp_path / "var/lib").mkdir(parents=True)
    return tmp_path


def zsn(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=60, check=False, cwd=REPO)


def config_text(root: Path) -> str:
    return (root / "etc/wireguard/zcapwg1.conf").read_text()


def test_expire_in_writes_one_line_inside_the_block_and_keeps_the_rest(root: Path) -> None:
    before = config_text(root)
    result = zsn(root, "peer", "expire", "zcapwg1", "bob-site", "--in", "30d")
    assert result.returncode == 0, result.stderr
    after = config_text(root)
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    [line] = added
    assert line.startswith("# Expires = ") and line.endswith("Z")
    lines = after.splitlines()
    assert lines[lines.index("[Peer]", lines.index("# alice-laptop")) + 0] == "[Peer]"
    assert lines[lines.index(line) - 1] == "[Peer]"  # right after bob-site's header
    config = parse(after)
    assert [peer.name for peer in config.peers] == ["alice-laptop", "bob-site"]
    at = expiry.expiries(config)["U8rvHcQ8SouCvbNH+EItFBTisPYHSV/+f+0VROrzuQY="]
    assert abs(at - (time.time() + 30 * 86400)) < 60
    # --never takes the line out again: the file is as it was.
    assert zsn(root, "peer", "expire", "zcapwg1", "bob-site", "--never").returncode == 0
    assert config_text(root) == before


def test_an_expiry_line_is_never_taken_for_a_peers_name() -> None:
    text = "[Interface]\nPrivateKey = x\n\n[Peer]\n# Expires = 2027-01-01T00:00:00Z\n" \
           "PublicKey = 8DtMxP7orKTjWmrj/T/GQHVamZNprolZYctPJWWkzEE=\n"
    [peer] = parse(text).peers
    assert peer.name is None


def test_a_date_alone_means_through_that_day_in_local_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        at = expiry.parse_when("2030-06-30", None, time.time())
        assert expiry.format_stored(at) == "2030-06-30T22:00:00Z"  # July 1st 00:00 CEST
        at = expiry.parse_when("2030-06-30 18:30", None, time.time())
        assert expiry.format_stored(at) == "2030-06-30T16:30:00Z"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.parametrize(("args", "message"), [
    (["--at", "2001-01-01"], "is in the past: to take the peer off now use zsn peer disable"),
    (["--at", "next friday"], "is not a date and time"),
    (["--in", "3 fortnights"], "is not a duration"),
    (["--in", "0d"], "more than 0"),
    (["--at", "9999-12-31"], "more than 100 years ahead"),  # the calendar's last day
    (["--at", "0001-01-01"], "in the past"),
])
def test_bad_times_are_refused_with_exit_2_and_nothing_changed(
        root: Path, args: list[str], message: str) -> None:
    before = config_text(root)
    result = zsn(root, "peer", "expire", "zcapwg1", "alice-laptop", *args)
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1
    assert config_text(root) == before


def test_dry_run_prints_the_plan_and_writes_nothing(root: Path) -> None:
    before = config_text(root)
    result = zsn(root, "peer", "expire", "zcapwg1", "alice-laptop", "--at", "2031-01-01",
                 "--dry-run")
    assert result.returncode == 0 and "+# Expires = 2031-01-0" in result.stdout
    assert config_text(root) == before


def test_an_expired_peer_is_disabled_by_the_next_record_and_enable_is_refused_until_renewed(
        root: Path) -> None:
    # Expired an hour ago, as if no zsn ran since.
    path = root / "etc/wireguard/zcapwg1.conf"
    text = config_text(root).replace(
        f"[Peer]\nPublicKey = {ALICE}",
        f"[Peer]\n# Expires = {expiry.format_stored(int(time.time()) - 3600)}\n"
        f"PublicKey = {ALICE}")
    path.write_text(text)
    [finding] = [f for f in lint.lint(Host(root)) if f.id == "WG013"]
    assert "alice-laptop" in finding.message and finding.line == 9
    result = zsn(root, "wg", "record")
    assert result.returncode == 0, result.stderr
    config = parse(config_text(root))
    [alice] = [peer for peer in config.all_peers if peer.name == "alice-laptop"]
    assert alice.disabled
    assert "#[disabled] # Expires = " in config_text(root)
    refused = zsn(root, "peer", "enable", "zcapwg1", "alice-laptop")
    assert refused.returncode == 2
    assert "expired" in refused.stderr and "zsn peer expire zcapwg1 alice-laptop" in \
        refused.stderr
    assert zsn(root, "peer", "expire", "zcapwg1", "alice-laptop", "--in", "7d").returncode == 0
    enabled = zsn(root, "peer", "enable", "zcapwg1", "alice-laptop")
    assert enabled.returncode == 0, enabled.stderr
    config = parse(config_text(root))
    assert [peer.name for peer in config.peers] == ["alice-laptop", "bob-site"]
    assert [f.id for f in lint.lint(Host(root)) if f.id.startswith("WG01")] == ["WG012"]


def test_lint_names_an_expires_line_it_cannot_read(root: Path) -> None:
    path = root / "etc/wireguard/zcapwg1.conf"
    path.write_text(config_text(root).replace(
        f"[Peer]\nPublicKey = {ALICE}", f"[Peer]\n# Expires = soon\nPublicKey = {ALICE}"))
    [finding] = [f for f in lint.lint(Host(root)) if f.id == "WG014"]
    assert "'Expires = soon'" in finding.message and finding.line == 9


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00",
                                  "1969-12-31T23:59:59Z"])
def test_an_expires_line_beyond_the_years_zsn_can_show_is_unreadable_not_fatal(
        root: Path, when: str) -> None:
    """A time the calendar cannot show in every zone stopped lint, the export and the
    history timer with a traceback: it is one WG014 finding now, and the rest works."""
    path = root / "etc/wireguard/zcapwg1.conf"
    path.write_text(config_text(root).replace(
        f"[Peer]\nPublicKey = {ALICE}", f"[Peer]\n# Expires = {when}\nPublicKey = {ALICE}"))
    [finding] = [f for f in lint.lint(Host(root)) if f.id == "WG014"]
    assert when in finding.message
    for args in (["wg", "lint"], ["--export", "wireguard"], ["wg", "record"]):
        result = zsn(root, *args)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        assert result.returncode in (0, 1), (args, result.stderr)
