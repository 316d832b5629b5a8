"""The export document, Prometheus text, and the CLI around them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.schema import check_export
from zsn.errors import ZsnError
from zsn.exporter import document as export
from zsn.exporter.prometheus import MetricFamily, render
from zsn.system.host import Host
from zsn.wireguard.export import prometheus as wireguard_metrics


def zsn(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zsn", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_export_never_imports_textual_or_rich(tmp_path: Path) -> None:
    (tmp_path / "etc" / "wireguard").mkdir(parents=True, mode=0o700)  # 0700: no WG006
    (tmp_path / "etc" / "openvpn" / "client").mkdir(parents=True)
    code = (
        "import sys, zsn.cli\n"
        f"rc = zsn.cli.main(['--root', {str(tmp_path)!r}, '--export'])\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print('LEAKED', leaked, file=sys.stderr)\n"
        "raise SystemExit(rc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "LEAKED []" in result.stderr
    check_export(json.loads(result.stdout))
    assert json.loads(result.stdout)["wireguard"] == {"interfaces": [], "findings": []}
    assert json.loads(result.stdout)["openvpn"] == {"connections": [], "findings": []}


def test_document_shape_under_an_empty_root(tmp_path: Path) -> None:
    (tmp_path / "etc" / "wireguard").mkdir(parents=True)
    (tmp_path / "etc" / "hostname").write_text("nas01\n")
    result = export.collect(Host(tmp_path), [])
    assert result.document["zsn"]["schema"] == 1
    assert result.document["host"]["hostname"] == "nas01"
    assert isinstance(result.document["host"]["time"], int)
    assert result.errors == []


def test_a_root_without_wireguard_exports_no_section(tmp_path: Path) -> None:
    result = export.collect(Host(tmp_path), [])
    assert "wireguard" not in result.document


def test_unknown_section_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = zsn("--root", str(tmp_path), "--export", "wireguard", "zfsx")
    assert result.returncode == 2
    assert result.stdout == ""
    known = ", ".join(sorted(export.sections()))
    assert result.stderr.strip().splitlines() == [
        f"zsn: invalid: unknown section 'zfsx' (did you mean 'zfs'?) (known: {known})"]


def test_unreadable_root_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = zsn("--root", str(tmp_path / "nope"), "--export")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "is not a directory" in result.stderr


def test_help_documents_every_option() -> None:
    text = zsn("--help").stdout
    for option in ("--theme", "--refresh", "--root", "--version", "--export", "--format",
                   "--include-secrets", "SECTION", "exit status"):
        assert option in text


def test_export_only_options_need_export() -> None:
    result = zsn("--format", "prometheus")
    assert result.returncode == 2
    assert "only apply with --export" in result.stderr


def test_prometheus_text_parses_with_the_reference_parser() -> None:
    data = {"interfaces": [{
        "name": "wg0", "implementation": "kernel", "public_key": "K=", "listen_port": 51820,
        "peers": [
            {"name": 'say "hi"\\ there', "public_key": "P1=", "latest_handshake": 1700000000,
             "rx_bytes": 10, "tx_bytes": 20, "persistent_keepalive": 25, "allowed_ips": []},
            {"name": None, "public_key": "P2=", "latest_handshake": None, "rx_bytes": 0,
             "tx_bytes": 0, "persistent_keepalive": None,
             "allowed_ips": ["10.0.0.2/32", "fd00::2/128"]},
        ]}]}
    text = render(wireguard_metrics(data))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    received = families["wireguard_received_bytes"]
    assert received.type == "counter"
    first, second = received.samples
    assert first.labels == {"interface": "wg0", "public_key": "P1=", "allowed_ips": "(none)",
                            "friendly_name": 'say "hi"\\ there'}
    assert first.value == 10
    assert second.labels["allowed_ips"] == "10.0.0.2/32,fd00::2/128"  # as wg show dump
    assert "friendly_name" not in second.labels  # as prometheus_wireguard_exporter
    handshakes = families["wireguard_latest_handshake_seconds"].samples
    assert [s.value for s in handshakes] == [1700000000, 0]


def test_empty_families_are_left_out() -> None:
    assert render([MetricFamily("zsn_x", "gauge", "nothing")]) == ""


def test_a_sampling_section_window_runs_while_the_others_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A section whose rates need two readings takes the first before any section is
    read: `zsn --export` costs the longer of its window and the rest, not their sum;
    a section that cannot even start is reported and the others still are."""
    events: list[str] = []

    def collecting(name: str) -> SimpleNamespace:
        def collect(host: Host, **_options: object) -> dict[str, object]:
            events.append(f"collect {name}")
            return {"name": name}
        return SimpleNamespace(present=lambda host: True, collect=collect)

    def begin_sampling(host: Host) -> Callable[[], dict[str, object]]:
        events.append("first reading")

        def second_reading() -> dict[str, object]:
            events.append("second reading")
            return {"name": "sampled"}
        return second_reading

    def broken_start(host: Host) -> Callable[[], dict[str, object]]:
        raise ZsnError("no counters")

    sampled = collecting("sampled")
    sampled.begin_sampling = begin_sampling
    broken = collecting("broken")
    broken.begin_sampling = broken_start
    providers = {"plain": collecting("plain"), "sampled": sampled, "broken": broken}
    monkeypatch.setattr(export, "check_sections", lambda requested: list(providers))
    monkeypatch.setattr(export, "_provider", providers.__getitem__)

    result = export.collect(Host(tmp_path), ["plain", "sampled", "broken"])
    assert events == ["first reading", "collect plain", "second reading"]
    assert list(result.document)[2:] == ["plain", "sampled", "broken"]
    assert result.document["broken"] == {"errors": ["no counters"]}
    assert result.errors == ["broken: no counters"]

    events.clear()  # Prometheus wants counters only: no window at all
    export.collect(Host(tmp_path), ["plain", "sampled", "broken"], sample_rates=False)
    assert events == ["collect plain", "collect sampled", "collect broken"]


def test_a_poller_gives_what_collect_gives(tmp_path: Path) -> None:
    """`zsn serve`'s warm readers and `zsn --export` read the same section."""
    from zsn.domains import domains, load

    (tmp_path / "etc" / "wireguard").mkdir(parents=True, mode=0o700)
    source = Path(__file__).parent.parent / "fixtures" / "wireguard"
    config = tmp_path / "etc" / "wireguard" / "wg0.conf"
    config.write_text((source / "manpage-server-multipeer.conf").read_text())
    config.chmod(0o600)
    host = Host(tmp_path)
    for domain in domains():
        provider = load(domain.export)
        if not hasattr(provider, "Poller"):
            continue
        poller = provider.Poller(host)
        try:
            first = poller.section(poller.poll())
            again = poller.section(poller.poll())
        finally:
            poller.close()
        assert first == again == provider.collect(host), domain.name
        check_export({"zsn": {"version": "0", "schema": 1}, "host": {"hostname": "h", "time": 0},
                      domain.name: first})


def test_textfile_is_replaced_atomically_for_node_exporter(tmp_path: Path) -> None:
    (tmp_path / "etc" / "wireguard").mkdir(parents=True, mode=0o700)
    out = tmp_path / "var" / "lib" / "prometheus" / "node-exporter"
    out.mkdir(parents=True)
    (out / "zsn.prom").write_text("old\n")
    result = zsn("--root", str(tmp_path), "--export", "wireguard", "--format", "prometheus",
                 "--textfile", "/var/lib/prometheus/node-exporter/zsn.prom")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = (out / "zsn.prom").read_text()
    assert 'zsn_collector_success{collector="wireguard"} 1' in text
    assert (out / "zsn.prom").stat().st_mode & 0o777 == 0o644  # node_exporter reads it
    assert [p.name for p in out.iterdir()] == ["zsn.prom"]  # no temporary file left


@pytest.mark.parametrize(("args", "status", "message"), [
    (["--textfile", "/x/zsn.txt"], 2, "NAME.prom"),
    (["--format", "json", "--textfile", "/x/zsn.prom"], 2, "needs --format prometheus"),
    (["--format", "prometheus", "--textfile", "/nowhere/zsn.prom"], 1, "does not exist"),
])
def test_textfile_mistakes_are_refused(tmp_path: Path, args: list[str], status: int,
                                        message: str) -> None:
    argv = ["--root", str(tmp_path), "--export", *args]
    if "--format" not in args:
        argv += ["--format", "prometheus"]
    result = zsn(*argv)
    assert result.returncode == status
    assert message in result.stderr.strip().splitlines()[-1]


def test_wireguard_peers_as_prometheus_wireguard_exporter_writes_them() -> None:
    """The anchor's own /metrics (captured), against zsn's for the same interface: every
    line of its three families is the same, label order and escaping included, so a
    dashboard or alert made for it works on zsn unchanged."""
    from zsn.wireguard.live import LiveCache

    captured = Path(__file__).parent.parent / "fixtures" / "wireguard" / \
        "prometheus_wireguard_exporter"
    names = LiveCache().for_config(captured / "zbncap.conf")
    interfaces: dict[str, dict[str, object]] = {}
    for line in (captured / "wg-show-all-dump.txt").read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 5:  # the interface's own line
            interfaces[fields[0]] = {"name": fields[0], "implementation": "userspace",
                                     "public_key": fields[2], "listen_port": int(fields[3]),
                                     "peers": []}
            continue
        name, key, _psk, _endpoint, allowed, handshake, rx, tx, keepalive = fields
        peers = interfaces[name]["peers"]
        assert isinstance(peers, list)
        peers.append({"public_key": key, "name": names.get(key),
                      "allowed_ips": [] if allowed == "(none)" else allowed.split(","),
                      "latest_handshake": int(handshake) or None, "rx_bytes": int(rx),
                      "tx_bytes": int(tx),
                      "persistent_keepalive": None if keepalive == "off" else int(keepalive)})
    ours = render(wireguard_metrics({"interfaces": list(interfaces.values())})).splitlines()
    theirs = (captured / "metrics-3.6.6.prom").read_text().splitlines()
    for family in ("wireguard_sent_bytes_total", "wireguard_received_bytes_total",
                   "wireguard_latest_handshake_seconds"):
        mine = {line for line in ours if line.split("{")[0] == family
                or line.startswith((f"# TYPE {family} ", f"# HELP {family} "))}
        anchor = {line for line in theirs if line.split("{")[0] == family
                  or line.startswith((f"# TYPE {family} ", f"# HELP {family} "))}
        assert len(anchor) == 8 and mine == anchor, family


def test_every_in_the_background_gives_the_old_value_while_it_works() -> None:
    """A slow value (a big history store) that is only due is worked out in a thread
    while polls keep getting the old one; a new key is worked out at once."""
    import threading

    from zsn.every import Every

    now = [0.0]
    release = threading.Event()
    calls: list[str] = []

    def slow(value: str) -> Callable[[], str]:
        def compute() -> str:
            calls.append(value)
            if value == "refreshed":
                release.wait(10)
            return value
        return compute

    every = Every(60, clock=lambda: now[0], background=True)
    assert every.get("peers", slow("first")) == "first"
    now[0] = 61
    assert every.get("peers", slow("refreshed")) == "first"  # due: old value, work begun
    assert every.get("peers", slow("again")) == "first"  # one refresh at a time
    release.set()
    deadline = time.monotonic() + 10
    while every.get("peers", slow("later")) != "refreshed" and time.monotonic() < deadline:
        time.sleep(0.01)  # the refresh's thread is storing its value
    assert every.get("peers", slow("later")) == "refreshed"
    assert every.get("other peers", slow("new key")) == "new key"
    assert calls == ["first", "refreshed", "new key"]
