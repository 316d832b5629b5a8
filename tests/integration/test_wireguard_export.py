"""`zsn --export` against two live wireguard-go devices that have shaken hands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.integration.conftest import WgPair

pytestmark = pytest.mark.lab


def export(*args: str, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "zsn", "--export", *args]
    if ns:
        argv = ["ip", "netns", "exec", ns, *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def interfaces_by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in document["wireguard"]["interfaces"]}


def test_export_shows_both_interfaces_with_handshake_and_counters(wg_pair: WgPair) -> None:
    result = export("wireguard")
    assert result.returncode == 0, result.stderr
    found = interfaces_by_name(json.loads(result.stdout))
    server = found[wg_pair.ifnames[0]]
    client = found[wg_pair.ifnames[1]]
    assert server["implementation"] == client["implementation"] == "userspace"
    assert server["public_key"] == wg_pair.public_keys[0]
    assert server["listen_port"] == 51871
    assert server["config_path"] == str(wg_pair.config_path)
    [peer] = server["peers"]
    assert peer["public_key"] == wg_pair.public_keys[1]
    assert peer["name"] == wg_pair.peer_name
    assert peer["allowed_ips"] == [f"{wg_pair.tunnel_ips[1]}/32"]
    assert peer["endpoint"] == "192.168.240.2:51872"
    assert time.time() - 60 < peer["latest_handshake"] <= time.time() + 1
    assert peer["rx_bytes"] > 0 and peer["tx_bytes"] > 0
    assert "private_key" not in server and "preshared_key" not in peer
    [back] = client["peers"]
    assert back["public_key"] == wg_pair.public_keys[0]
    assert back["latest_handshake"] is not None


def test_export_inside_the_namespace_shows_the_addresses(wg_pair: WgPair) -> None:
    result = export("wireguard", ns=wg_pair.ns[0])
    assert result.returncode == 0, result.stderr
    found = interfaces_by_name(json.loads(result.stdout))
    assert found[wg_pair.ifnames[0]]["addresses"] == [f"{wg_pair.tunnel_ips[0]}/24"]
    assert found[wg_pair.ifnames[0]]["in_namespace"] is True
    assert found[wg_pair.ifnames[1]]["in_namespace"] is False


def test_secrets_only_with_include_secrets(wg_pair: WgPair) -> None:
    plain = export("wireguard")
    assert "PrivateKey" not in plain.stdout
    private = json.loads(export("wireguard", "--include-secrets").stdout)
    server = interfaces_by_name(private)[wg_pair.ifnames[0]]
    assert server["private_key"] and len(server["private_key"]) == 44
    assert "preshared_key" in server["peers"][0]
    assert server["private_key"] not in plain.stdout


def test_prometheus_export_has_counters_for_the_peer(wg_pair: WgPair) -> None:
    result = export("wireguard", "--format", "prometheus")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    selector = f'interface="{wg_pair.ifnames[0]}",public_key="{wg_pair.public_keys[1]}"'
    received = [line for line in lines if line.startswith(
        "wireguard_received_bytes_total{" + selector)]
    assert len(received) == 1
    assert f'allowed_ips="{wg_pair.tunnel_ips[1]}/32",friendly_name="{wg_pair.peer_name}"}}' \
        in received[0]
    assert int(received[0].rsplit(" ", 1)[1]) > 0
    assert "# TYPE wireguard_sent_bytes_total counter" in lines


def test_a_stopped_daemon_is_reported_not_hidden(wg_pair: WgPair) -> None:
    # The socket file stays behind when a daemon is killed hard: the export must
    # say so on stderr and in "errors", with a non-zero exit.
    process = wg_pair.lab._daemons[wg_pair.ifnames[1]]
    process.kill()
    process.wait(timeout=5)
    assert wg_pair.sockets[1].exists()
    result = export("wireguard")
    assert result.returncode == 3  # partial
    document = json.loads(result.stdout)
    assert any(wg_pair.ifnames[1] in e and "stale socket, no daemon behind it" in e
               for e in document["wireguard"]["errors"])
    assert f"{wg_pair.ifnames[1]}" in result.stderr
    assert wg_pair.ifnames[0] in interfaces_by_name(document)


def export_as_nobody() -> tuple[int, str, str]:
    """Run the export's main() in a forked child that dropped root (no exec, so the
    interpreter need not be reachable by nobody)."""
    # Everything the export imports must be loaded before root is dropped: the
    # interpreter's own files may not be readable by nobody.
    import pyroute2  # noqa: F401
    from cryptography.hazmat.primitives.asymmetric import x25519  # noqa: F401

    import zsn.cli
    import zsn.wireguard.export

    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.dup2(out_write, 1)
            os.dup2(err_write, 2)
            sys.stdout = os.fdopen(1, "w")
            sys.stderr = os.fdopen(2, "w")
            code = zsn.cli.main(["--export", "wireguard"])
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - report anything as a failure code
            code = 99
        os._exit(code)
    os.close(out_write)
    os.close(err_write)
    with os.fdopen(out_read) as out, os.fdopen(err_read) as err:
        stdout, stderr = out.read(), err.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), stdout, stderr


def test_non_root_gets_errors_explaining_root_is_needed(wg_pair: WgPair) -> None:
    code, stdout, stderr = export_as_nobody()
    assert code == 3, stderr  # partial
    document = json.loads(stdout)
    errors = document["wireguard"]["errors"]
    assert "needs root" in errors[0]
    assert "needs root" in stderr
    # The interfaces are still listed by name, not silently dropped.
    assert wg_pair.ifnames[0] in interfaces_by_name(document)
