from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.needs import unavailable
from zsn.errors import ParseError, ValidationError, ZsnError
from zsn.openvpn import actions, lint
from zsn.openvpn.config import parse
from zsn.openvpn.connections import ConfigFile, Kind, config_path, discover, summarize
from zsn.plan import ApplyError, FileEdit
from zsn.system.host import Host

SAMPLES = Path(__file__).parents[2] / "fixtures/openvpn/configs"


def put(host: Host, kind: Kind, name: str, text: str) -> ConfigFile:
    config = ConfigFile(kind, name, config_path(kind, name))
    host.path(config.path).write_text(text)
    return config


def test_discovery_names_the_right_units(root: Host) -> None:
    put(root, "client", "office", "client\n")
    put(root, "server", "home", "server 10.8.0.0 255.255.255.0\n")
    put(root, "legacy", "old", "client\n")
    (root.path("/etc/openvpn/client/notes.txt")).write_text("x")
    assert [c.unit for c in discover(root)] == [
        "openvpn-client@office.service", "openvpn-server@home.service", "openvpn@old.service"]


def test_summary_of_the_sample_server(root: Host) -> None:
    summary = summarize(parse((SAMPLES / "server.conf").read_text()), root,
                        Path("/etc/openvpn/server"))
    assert (summary.role, summary.proto, summary.dev) == ("server", "udp", "tun")
    assert summary.management is None


def test_management_endpoints_resolve_under_root(root: Host) -> None:
    unix = summarize(parse("client\nmanagement /run/openvpn-client/a.sock unix\n"), root,
                     Path("/etc/openvpn/client")).management
    assert unix is not None and unix.unix_path == root.path("/run/openvpn-client/a.sock")
    tcp = summarize(parse("client\nmanagement 127.0.0.1 7505 pw.txt\n"), root,
                    Path("/etc/openvpn/client")).management
    assert tcp is not None and (tcp.tcp_host, tcp.tcp_port) == ("127.0.0.1", 7505)
    assert tcp.password_file == root.path("/etc/openvpn/client/pw.txt")
    unix_pw = summarize(parse("client\nmanagement /run/a.sock unix /etc/openvpn/pw\n"), root,
                        Path("/etc/openvpn/client")).management
    assert unix_pw is not None and unix_pw.password_file == root.path("/etc/openvpn/pw")


def test_server_bridge_is_a_server() -> None:
    config = parse("server-bridge 10.8.0.4 255.255.255.0 10.8.0.50 10.8.0.100\ndev tap0\n")
    assert summarize(config, Host(), Path("/etc/openvpn/server")).role == "server"


def test_hook_install_is_idempotent_and_keeps_everything_else(root: Host) -> None:
    original = (SAMPLES / "client.conf").read_text()
    config = put(root, "client", "office", original)
    plan = actions.plan_hook_install(root, config)
    assert [e.description for e in plan.steps] == [
        f"edit {root.path(config.path)}",
        f"create {root.path(actions.HOOK_PATH)} (mode 0755)",
    ]
    assert "zsn's own file" in plan.describe() and "#!/bin/sh" not in plan.describe()
    assert "+script-security 2" in plan.describe()
    plan.apply()
    text = root.path(config.path).read_text()
    assert text.startswith(original)
    assert text[len(original):] == (
        "script-security 2\nup /etc/openvpn/zsn-resolved-hook\n"
        "down /etc/openvpn/zsn-resolved-hook\ndown-pre\n")
    hook = root.path(actions.HOOK_PATH)
    assert stat.S_IMODE(hook.stat().st_mode) == 0o755
    assert hook.read_text() == actions.hook_script()
    assert actions.plan_hook_install(root, config).steps == []
    assert root.path(config.path).with_name("office.conf.zsn-bak").read_text() == original


def test_hook_install_raises_a_low_script_security_and_keeps_route_all(root: Host) -> None:
    config = put(root, "client", "c", "client\nscript-security 1\n")
    actions.plan_hook_install(root, config, route_all_dns=True).apply()
    text = root.path(config.path).read_text()
    assert "script-security 2\n" in text and "script-security 1" not in text
    assert 'up "/etc/openvpn/zsn-resolved-hook --route-all-dns"\n' in text
    assert actions.routes_all_dns(parse(text))
    # Installing again without a choice keeps the flag: nothing to do.
    assert actions.plan_hook_install(root, config).steps == []
    actions.plan_hook_install(root, config, route_all_dns=False).apply()
    text = root.path(config.path).read_text()
    assert "up /etc/openvpn/zsn-resolved-hook\n" in text
    assert not actions.routes_all_dns(parse(text))
    assert actions.plan_hook_install(root, config).steps == []


def test_hook_install_keeps_a_hand_written_route_all_flag(root: Host) -> None:
    text = ("client\nscript-security 2\n"
            "up '/etc/openvpn/zsn-resolved-hook --route-all-dns'  # all DNS via the office\n"
            "down /etc/openvpn/zsn-resolved-hook\ndown-pre\n")
    config = put(root, "client", "c", text)
    root.path(actions.HOOK_PATH).write_text(actions.hook_script())
    os.chmod(root.path(actions.HOOK_PATH), actions.HOOK_MODE)
    assert actions.plan_hook_install(root, config).steps == []
    assert root.path(config.path).read_text() == text


def test_empty_up_command_is_replaced_not_a_crash(root: Host) -> None:
    config = put(root, "client", "c", 'client\nup ""\n')
    actions.plan_hook_install(root, config).apply()
    assert actions.runs_hook(parse(root.path(config.path).read_text()))


def test_hook_install_refuses_to_replace_another_up_script(root: Host) -> None:
    config = put(root, "client", "c",
                 "client\nscript-security 2\nup /etc/openvpn/update-resolv-conf\n")
    before = root.path(config.path).read_bytes()
    with pytest.raises(ValidationError, match="already runs '/etc/openvpn/update-resolv-conf'"):
        actions.plan_hook_install(root, config)
    assert root.path(config.path).read_bytes() == before
    assert not root.path(actions.HOOK_PATH).exists()


def test_hook_install_on_unparseable_config_writes_nothing(root: Host) -> None:
    config = put(root, "client", "c", "client\n<key>\nsecret\n")
    with pytest.raises(ParseError, match="<key> block is never closed"):
        actions.plan_hook_install(root, config)
    assert not root.path(actions.HOOK_PATH).exists()


def test_config_changed_on_disk_after_planning_is_not_overwritten(root: Host) -> None:
    config = put(root, "client", "c", "client\n")
    plan = actions.plan_hook_install(root, config)
    root.path(config.path).write_text("client\nverb 4\n")
    with pytest.raises(ZsnError, match="changed on disk"):
        plan.apply()
    assert root.path(config.path).read_text() == "client\nverb 4\n"
    assert isinstance(plan.steps[0], FileEdit)


def test_hook_install_failing_part_way_undoes_the_config_edit(root: Host) -> None:
    config = put(root, "client", "c", "client\n# keep me\n")
    plan = actions.plan_hook_install(root, config)
    root.path(actions.HOOK_PATH).write_text("someone else's script\n")
    with pytest.raises(ApplyError, match="undone: edit"):
        plan.apply()
    assert root.path(config.path).read_text() == "client\n# keep me\n"
    assert not root.path(config.path).with_name("c.conf.zsn-bak").exists()
    assert root.path(actions.HOOK_PATH).read_text() == "someone else's script\n"


def test_warnings_for_dropped_privileges_and_sandbox(root: Host) -> None:
    config = put(root, "client", "c", "client\nuser nobody\ngroup nogroup\n")
    dropin = root.path("/etc/systemd/system/openvpn-client@.service.d")
    dropin.mkdir(parents=True)
    (dropin / "harden.conf").write_text(
        "[Service]\nRestrictAddressFamilies=AF_INET AF_INET6 AF_NETLINK\n")
    warnings = actions.plan_hook_install(root, config).warnings
    assert any("drops privileges to 'nobody'" in w for w in warnings)
    assert any("without AF_UNIX" in w for w in warnings)


def test_debian_unit_sandbox_does_not_stop_the_hook(root: Host) -> None:
    unit_dir = root.path("/lib/systemd/system")
    unit_dir.mkdir(parents=True)
    real = Path("/lib/systemd/system/openvpn-client@.service")
    if not real.exists():
        unavailable("Debian's openvpn package (its unit files) is not installed")
    (unit_dir / real.name).write_text(real.read_text())
    config = put(root, "client", "c", "client\n")
    assert actions.plan_hook_install(root, config).warnings == []


def test_import_ovpn_with_inline_blocks_is_0600_and_byte_for_byte(root: Host,
                                                                   tmp_path: Path) -> None:
    source = tmp_path / "office.ovpn"
    text = ("client\r\nremote vpn.example.net 1194\r\n<ca>\r\nCA\r\n</ca>\r\n<cert>\r\nC\r\n"
            "</cert>\r\n<key>\r\nPRIVATE\r\n</key>\r\n<tls-crypt>\r\nTC\r\n</tls-crypt>\r\n")
    source.write_bytes(text.encode())
    plan = actions.plan_import(root, source, "office")
    assert "PRIVATE" not in plan.describe() and "(hidden)" in plan.describe()
    plan.apply()
    target = root.path("/etc/openvpn/client/office.conf")
    assert target.read_bytes() == text.encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(ValidationError, match="already exists"):
        actions.plan_import(root, source, "office")


def test_import_warns_about_programs_the_profile_runs(root: Host, tmp_path: Path) -> None:
    source = tmp_path / "provider.ovpn"
    source.write_text("client\nremote vpn.example.net\nscript-security 2\n"
                      "up '/bin/sh -c evil'\nplugin /usr/lib/x.so\n")
    warnings = actions.plan_import(root, source, "provider", keep_commands=True).warnings
    assert any("runs programs as root" in w and "up /bin/sh -c evil" in w
               and "plugin /usr/lib/x.so" in w for w in warnings)


def test_import_leaves_out_the_commands_unless_kept_and_names_them(root: Host,
                                                                   tmp_path: Path) -> None:
    source = tmp_path / "provider.ovpn"
    source.write_text("client\nremote vpn.example.net\nscript-security 2\n"
                      "up '/bin/sh -c evil'\nsetenv opt down /tmp/x\nplugin /usr/lib/x.so\n")
    plan = actions.plan_import(root, source, "provider")
    said = "\n".join(plan.notes)
    for command in ("script-security 2", "up /bin/sh -c evil", "down /tmp/x",
                    "plugin /usr/lib/x.so"):
        assert command in said, command
    assert "--keep-commands" in said and not any("runs programs" in w for w in plan.warnings)
    plan.apply()
    written = root.path("/etc/openvpn/client/provider.conf").read_text()
    assert written == "client\nremote vpn.example.net\n"
    assert not [f for f in lint.lint(root) if f.id == "OVPN008"]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("../etc", "client\n", "not a usable connection name"),
    ("ok", "verb 3\n", "import takes client profiles"),
    ("ok", "client\n<ca>\n", "never closed"),
])
def test_bad_imports_write_nothing(root: Host, tmp_path: Path, name: str, text: str,
                                   message: str) -> None:
    source = tmp_path / "in.ovpn"
    source.write_text(text)
    with pytest.raises(ZsnError, match=message):
        actions.plan_import(root, source, name)
    assert os.listdir(root.path("/etc/openvpn/client")) == []


def test_management_socket_added_once(root: Host) -> None:
    config = put(root, "client", "office", "client\n# keep me\n")
    plan = actions.plan_management_socket(root, config)
    plan.apply()
    assert root.path(config.path).read_text() == (
        "client\n# keep me\nmanagement /run/openvpn-client/office.sock unix\n")
    again = actions.plan_management_socket(root, config)
    assert again.steps == [] and "already configured" in again.warnings[0]


@pytest.mark.parametrize(("sample", "role"), [
    ("loopback-server", "server"), ("loopback-client", "client"), ("server.conf", "server"),
    ("client.conf", "client")])
def test_the_role_is_openvpns(sample: str, role: str) -> None:
    """loopback-server is point-to-point with 'tls-server' and a 'remote': OpenVPN's
    option dump reads it as tls_server ENABLED (mode 0), so it runs as a server."""
    config = parse((SAMPLES / sample).read_text())
    assert summarize(config, Host(), Path("/etc/openvpn/client")).role == role


def test_a_point_to_point_tls_server_is_not_imported_as_a_client(root: Host) -> None:
    with pytest.raises(ValidationError, match=r"a server config \('tls-server' at line 19\); "
                                              r"import takes client profiles"):
        actions.plan_import(root, SAMPLES / "loopback-server", "loop")
