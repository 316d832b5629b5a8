"""zsn's hook script run with the environment OpenVPN really gave its scripts.

`resolvectl` is replaced by a recorder first on PATH; the real one is exercised by
the systemd integration test."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from zsn.openvpn.actions import hook_script

RECORDER = '#!/bin/sh\nprintf "%s\\n" "$*" >> "$(dirname "$0")/calls"\n'


def captured_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def run_hook(tmp_path: Path, env: dict[str, str], *args: str,
             fail_resolvectl: bool = False) -> tuple[int, list[str], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    recorder = bin_dir / "resolvectl"
    recorder.write_text(RECORDER + ("exit 1\n" if fail_resolvectl else ""))
    recorder.chmod(0o755)
    hook = tmp_path / "zsn-resolved-hook"
    hook.write_text(hook_script())
    hook.chmod(0o755)
    result = subprocess.run(
        [str(hook), *args], env={**env, "PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True, text=True, timeout=10, check=False,
    )
    calls = (bin_dir / "calls").read_text().splitlines() if (bin_dir / "calls").exists() else []
    return result.returncode, calls, result.stderr


def test_up_sets_pushed_dns_and_domain_on_the_tun_link(tmp_path: Path, ovpn_fixtures: Path) -> None:
    code, calls, log = run_hook(tmp_path, captured_env(ovpn_fixtures / "hook-env-up.txt"))
    assert code == 0, log
    assert calls == ["dns tun0 10.87.0.1", "domain tun0 zov.test",
                     "default-route tun0 false"]


def test_up_with_every_kind_of_option(tmp_path: Path, ovpn_fixtures: Path) -> None:
    code, calls, log = run_hook(tmp_path, captured_env(ovpn_fixtures / "hook-env-up-full.txt"))
    assert code == 0, log
    assert calls == [
        "dns tun0 10.87.0.1 10.87.0.53 fd87::53",
        "domain tun0 zov.test corp.zov.test ~internal.zov.test ~.",
        "default-route tun0 true",
    ]


def test_route_all_dns_flag(tmp_path: Path, ovpn_fixtures: Path) -> None:
    env = captured_env(ovpn_fixtures / "hook-env-up.txt")
    code, calls, _log = run_hook(tmp_path, env, "--route-all-dns", "tun0", "1500")
    assert code == 0
    assert calls[1:] == ["domain tun0 zov.test ~.", "default-route tun0 true"]


def test_down_reverts_the_link(tmp_path: Path, ovpn_fixtures: Path) -> None:
    code, calls, log = run_hook(tmp_path, captured_env(ovpn_fixtures / "hook-env-down.txt"))
    assert (code, calls) == (0, ["revert tun0"])
    assert "reverted" in log


def test_hostile_pushed_values_are_ignored(tmp_path: Path, ovpn_fixtures: Path) -> None:
    env = captured_env(ovpn_fixtures / "hook-env-up.txt")
    env["foreign_option_3"] = "dhcp-option DNS $(touch /tmp/zov-pwned)"
    env["foreign_option_4"] = "dhcp-option DOMAIN *"
    env["foreign_option_5"] = "dhcp-option DNS --interface=lo"
    code, calls, log = run_hook(tmp_path, env)
    assert code == 0
    assert calls[0] == "dns tun0 10.87.0.1"
    assert "ignoring bad" in log and not os.path.exists("/tmp/zov-pwned")


def test_failed_up_exits_non_zero_and_reverts(tmp_path: Path, ovpn_fixtures: Path) -> None:
    env = captured_env(ovpn_fixtures / "hook-env-up.txt")
    code, calls, log = run_hook(tmp_path, env, fail_resolvectl=True)
    assert code == 1
    assert calls == ["dns tun0 10.87.0.1", "revert tun0"]
    assert "setting DNS failed" in log


@pytest.mark.parametrize("dev", ["", "-x", "../etc", "tun0;reboot"])
def test_bad_device_name_does_nothing(tmp_path: Path, ovpn_fixtures: Path, dev: str) -> None:
    env = {**captured_env(ovpn_fixtures / "hook-env-up.txt"), "dev": dev}
    code, calls, _log = run_hook(tmp_path, env)
    assert (code, calls) == (1, [])


@pytest.mark.parametrize("pushed", [
    # What OpenVPN sets for `push "dhcp-option DOMAIN \"x; rm -rf /\""`: the quoted
    # value joined back with spaces.
    "dhcp-option DOMAIN x; touch {canary}",
    "dhcp-option DOMAIN x;touch${{IFS}}{canary}",
    "dhcp-option DOMAIN `touch {canary}`",
    "dhcp-option DOMAIN-ROUTE $(touch${{IFS}}{canary})",
    "dhcp-option DNS 10.0.0.1;touch${{IFS}}{canary}",
    "dhcp-option DOMAIN-SEARCH ~.",
])
def test_pushed_shell_syntax_runs_nothing_and_reaches_no_argument(
        tmp_path: Path, ovpn_fixtures: Path, pushed: str) -> None:
    canary = tmp_path / "pwned"
    env = captured_env(ovpn_fixtures / "hook-env-up.txt")
    env["foreign_option_3"] = pushed.format(canary=canary)
    code, calls, _log = run_hook(tmp_path, env)
    assert code == 0
    assert not canary.exists()
    assert calls == ["dns tun0 10.87.0.1", "domain tun0 zov.test",
                     "default-route tun0 false"]


def test_log_shows_a_pushed_backslash_as_it_came(tmp_path: Path, ovpn_fixtures: Path) -> None:
    env = captured_env(ovpn_fixtures / "hook-env-up.txt")
    env["foreign_option_3"] = "dhcp-option DOMAIN a\\033[2Jb\\c"
    code, _calls, log = run_hook(tmp_path, env)
    assert code == 0
    assert "ignoring bad domain from server: a\\033[2Jb\\c\n" in log
    assert "\x1b" not in log


@pytest.mark.parametrize("domain", [".", "a..b", ".zov.test"])
def test_domains_resolved_would_refuse_are_skipped_not_fatal(
        tmp_path: Path, ovpn_fixtures: Path, domain: str) -> None:
    env = captured_env(ovpn_fixtures / "hook-env-up.txt")
    env["foreign_option_3"] = f"dhcp-option DOMAIN {domain}"
    code, calls, log = run_hook(tmp_path, env)
    assert code == 0, log
    assert calls[1] == "domain tun0 zov.test"
    assert f"ignoring bad domain from server: {domain}" in log
