"""OpenVPN's own sample configs (sample/ of OpenVPN/openvpn, today's and 2.4's, and the
ones Debian ships), read by zsn and by the installed OpenVPN (2.6).

zsn's reading (the role that decides the systemd unit, the device, the remotes with
their ports and protocols) must equal OpenVPN's option dump (``--verb 4``: ``mode``,
``tls_server``, ``tls_client``, ``pull``, ``dev``, each connection profile's remote);
a config OpenVPN refuses to start, zsn's lint must refuse with an error naming why.
Then zsn adds a management socket to it: OpenVPN must read the result with that socket
and everything else as before, every byte of the file kept.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.corpus.tally import TALLY, Outcome
from tests.lab.openvpn_options import Dump, options
from tests.needs import needs_tools
from zsn.openvpn import actions, lint
from zsn.openvpn.config import parse
from zsn.openvpn.connections import ConfigFile, Kind, config_path, summarize
from zsn.system.host import Host

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus" / "openvpn"
DEBIAN = Path(__file__).parents[1] / "fixtures" / "openvpn" / "configs"
FAMILY = "openvpn"
FILES = sorted([*(str(p.relative_to(CORPUS.parent)) for p in CORPUS.rglob("*")
                  if p.is_file() and p.name != "SOURCES.md"),
                *(str(Path("..") / "openvpn" / "configs" / p.name) for p in DEBIAN.iterdir())])


def openvpn_role(dump: Dump) -> str:
    """What runs a config's unit: a server (mode server, or TLS server), a client (TLS
    client or pull), else the side of a point-to-point link without a remote waits."""
    options = dump.options
    if options.get("mode") == "1" or options.get("tls_server") == "ENABLED":
        return "server"
    if options.get("tls_client") == "ENABLED" or options.get("pull") == "ENABLED":
        return "client"
    return "server" if all(p.get("remote") == "[UNDEF]" for p in dump.profiles) else "client"


def installed_version(root: Path) -> None:
    """The host's openvpn package, as the tree's dpkg status lists it (zsn's lint reads
    the version there)."""
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "openvpn"],
                             capture_output=True, text=True, check=True, timeout=30).stdout
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True)
    status.write_text(f"Package: openvpn\nStatus: install ok installed\nVersion: {version}\n")


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    needs_tools("openvpn", "unshare", "dpkg-query")


@pytest.mark.parametrize("name", FILES)
def test_openvpn_config(tmp_path: Path, name: str) -> None:
    source = CORPUS.parent / name
    text = source.read_text()
    outcome = Outcome()
    TALLY.record(FAMILY, name.removeprefix("openvpn/").removeprefix("../openvpn/"), outcome)
    host = Host(tmp_path / "root")
    installed_version(host.root)
    config = parse(text, name)
    role: Kind = "server" if summarize(config, host, Path("/etc/openvpn") / "x").role == "server" \
        else "client"
    config_file = ConfigFile(role, "corpus", config_path(role, "corpus"))
    target = host.path(config_file.path)
    target.parent.mkdir(parents=True)
    target.write_text(text)
    target.chmod(0o600)
    scratch = tmp_path / "openvpn"
    scratch.mkdir()
    shutil.copyfile(source, scratch / source.name)
    dump = options(scratch / source.name)
    # What stops OpenVPN from starting: a config it cannot parse, a TLS server without dh,
    # a line its option table refuses.
    errors = [f for f in lint.lint(host) if f.id in ("OVPN000", "OVPN011", "OVPN012")]
    if dump.refused is not None:
        assert errors, f"OpenVPN refuses it ({dump.refused}); zsn's lint says nothing"
        outcome.read, outcome.refused = True, errors[0].id
        return
    assert errors == []
    summary = summarize(config, host, config_file.working_dir)
    assert summary.role == openvpn_role(dump)
    assert summary.dev == dump.options["dev"]
    remotes = [(p["remote"], p["remote_port"], p["proto"].removesuffix("-client"))
               for p in dump.profiles if p.get("remote") != "[UNDEF]"]
    assert [(r.host, r.port, r.proto) for r in summary.remotes] == remotes
    outcome.read = True
    plan = actions.plan_management_socket(host, config_file)
    for step in plan.steps:
        step.apply()
    after = target.read_text()
    assert after.startswith(text if text.endswith("\n") else text + "\n")
    shutil.copyfile(target, scratch / source.name)
    socket = f"/run/openvpn-{role}/corpus.sock"
    after_dump = options(scratch / source.name)
    assert after_dump.refused is None
    assert after_dump.options.get("management_addr") == socket
    assert {k: v for k, v in after_dump.options.items() if not k.startswith("management")} \
        == {k: v for k, v in dump.options.items() if not k.startswith("management")}
    outcome.edited = True
