"""Every format zsn writes for another program has one renderer that refuses a value
the program would read as more than one value (a line break, a control character, a
continuation, a comment), and every edit is read back by the format's reader before
anything is written (`zsn.meaning`): a line slipped past the renderer refuses the
plan, naming it. The files edited are real configs (tests/fixtures/*/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ValidationError
from zsn.formats.sysctl import SysctlFile
from zsn.formats.unitfile import UnitFile
from zsn.links.persist import LinkConfig, Upsert, checked, ifupdown
from zsn.links.persist import netctl as link_netctl
from zsn.links.persist.networkd import SCHEMA as NETWORKD
from zsn.links.persist.yamledit import YamlDocument, inline
from zsn.meaning import OwnFile
from zsn.openvpn.config import parse as parse_ovpn
from zsn.plan import FileEdit
from zsn.system.files import FileSnapshot
from zsn.values import one_of

BREAKS = ["x\nExecStart=/bin/sh", "x\rup /bin/sh", "x\x00", "x\x1b]0;t\x07", "x\u2028y",
          "x\x85y", "x\x0bPostUp=y"]
LINKS = Path(__file__).parent.parent / "fixtures" / "links"


def made(path: str, before: str, after: str, intent: object) -> FileEdit:
    snapshot = FileSnapshot(Path(path), before, 0, len(before), 0, 0o644) if before else None
    return FileEdit(Path(path), snapshot, after, intent=intent)  # type: ignore[arg-type]


# -- systemd unit files (networkd, netctl's drop-in) ---------------------------------------

@pytest.mark.parametrize("value", [*BREAKS, "bond0\\", " bond0"])
def test_a_unit_file_value_that_is_not_one_value_is_refused(value: str) -> None:
    unit = UnitFile("[Match]\nName=eth0\n", NETWORKD)
    with pytest.raises(ValidationError):
        unit.set("Network", "Bond", value)
    with pytest.raises(ValidationError):
        unit.add("Network", "VLAN", value)
    assert unit.text == "[Match]\nName=eth0\n"


def test_a_unit_file_key_zsn_does_not_write_is_refused() -> None:
    with pytest.raises(ValidationError, match="not a setting zsn writes"):
        UnitFile("", NETWORKD).set("Service", "ExecStart", "/bin/sh")


def test_a_unit_file_line_past_the_renderer_refuses_the_edit() -> None:
    before = "[Match]\nName=eth0\n"
    unit = UnitFile(before, NETWORKD)
    unit.set("Network", "Bond", "bond0")
    made("/etc/systemd/network/10-eth0.network", before, unit.text, unit.intent)
    unit.lines.append("ExecStart=/bin/sh\n")
    with pytest.raises(ValidationError, match="line 6"):
        made("/etc/systemd/network/10-eth0.network", before, unit.text, unit.intent)


# -- sysctl.d ------------------------------------------------------------------------------

SYSCTL_KEYS = {"net.ipv4.ip_forward": one_of("0", "1")}


@pytest.mark.parametrize("value", [*BREAKS, " 1", "2"])
def test_a_sysctl_value_that_is_not_one_setting_is_refused(value: str) -> None:
    with pytest.raises(ValidationError):
        SysctlFile("", SYSCTL_KEYS).set("net.ipv4.ip_forward", value)


def test_a_sysctl_line_past_the_renderer_refuses_the_edit() -> None:
    settings = SysctlFile("", SYSCTL_KEYS)
    settings.set("net.ipv4.ip_forward", "1")
    made("/etc/sysctl.d/99-zsn.conf", "", settings.text, settings.intent)
    settings.lines.append("kernel.modprobe = /tmp/x\n")
    with pytest.raises(ValidationError, match="line 2"):
        made("/etc/sysctl.d/99-zsn.conf", "", settings.text, settings.intent)


# -- netctl profiles (bash) ----------------------------------------------------------------

@pytest.mark.parametrize("value", BREAKS)
def test_a_netctl_value_that_is_not_one_line_is_refused(value: str) -> None:
    profile = link_netctl.Profile.parsed("/etc/netctl/bond0", None, "Interface=bond0\n")
    with pytest.raises(ValidationError):
        profile.set("ExecUpPost", value)
    with pytest.raises(ValidationError):
        profile.set("BindsToInterfaces", ("eth0", value))


def test_a_netctl_line_past_the_renderer_refuses_the_edit() -> None:
    before = "Description='bond'\nInterface=bond0\nConnection=bond\n"
    profile = link_netctl.Profile.parsed("/etc/netctl/bond0", None, before)
    profile.set("Mode", "active-backup")
    made("/etc/netctl/bond0", before, profile.text, profile.intent)
    profile.text += "ExecUpPost='rm -rf /'\n"
    with pytest.raises(ValidationError, match="line 5"):
        made("/etc/netctl/bond0", before, profile.text, profile.intent)


# -- ifupdown ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [*BREAKS, "eth0 \\\\"])
def test_an_ifupdown_option_that_is_not_one_line_is_refused(value: str) -> None:
    with pytest.raises(ValidationError):
        ifupdown._option_line("bond-slaves", value)


def test_an_ifupdown_line_past_the_renderer_refuses_the_edit() -> None:
    before = "auto lo\niface lo inet loopback\n"
    entry = ifupdown.InterfacesFile("/etc/network/interfaces", None,
                                    before.splitlines(keepends=True))
    entry.lines.append("    up rm -rf /\n")
    with pytest.raises(ValidationError, match="line 3"):
        made("/etc/network/interfaces", before, entry.text, entry.intent)


# -- netplan (YAML) ------------------------------------------------------------------------

@pytest.mark.parametrize("value", BREAKS)
def test_a_yaml_value_with_a_line_break_is_refused(value: str) -> None:
    with pytest.raises(ValidationError):
        inline(value)
    document = YamlDocument("network:\n  version: 2\n", "/etc/netplan/90-zsn.yaml")
    with pytest.raises(ValidationError):
        document.set(("network", "bonds", "bond0", "interfaces"), ["eth0", value])


def test_a_yaml_line_past_the_renderer_refuses_the_edit() -> None:
    before = "network:\n  version: 2\n"
    document = YamlDocument(before, "/etc/netplan/90-zsn.yaml")
    document.set(("network", "bonds", "bond0", "interfaces"), ["eth0"])
    made("/etc/netplan/90-zsn.yaml", before, document.text, document.intent)
    document.text += "  renderer: NetworkManager\n"
    with pytest.raises(ValidationError, match="renderer"):
        made("/etc/netplan/90-zsn.yaml", before, document.text, document.intent)


# -- OpenVPN -------------------------------------------------------------------------------

@pytest.mark.parametrize("value", BREAKS)
def test_an_openvpn_argument_that_is_not_one_line_is_refused(value: str) -> None:
    config = parse_ovpn("client\nremote vpn.example.net\n")
    with pytest.raises(ValidationError):
        config.set_directive("up", value)
    with pytest.raises(ValidationError):
        config.add_directive("management", "/run/x.sock" + value, "unix")


def test_an_openvpn_directive_zsn_does_not_write_is_refused() -> None:
    with pytest.raises(ValidationError, match="not a directive zsn writes"):
        parse_ovpn("client\n").set_directive("plugin", "/tmp/x.so")


def test_an_openvpn_line_past_the_renderer_refuses_the_edit() -> None:
    before = "client\nremote vpn.example.net\n"
    config = parse_ovpn(before)
    config.set_directive("script-security", "2")
    made("/etc/openvpn/client/x.conf", before, config.render(), config.intent)
    config.lines.append("up /tmp/evil\n")
    with pytest.raises(ValidationError, match="line 4"):
        made("/etc/openvpn/client/x.conf", before, config.render(), config.intent)


# -- what every link config system is given ------------------------------------------------

@pytest.mark.parametrize("config", [
    LinkConfig("bond0\nExecStart=x", "bond"), LinkConfig("bond0", "bond", members=("eth 0",)),
    LinkConfig("bond0", "bond", mode="round-robin"), LinkConfig("v", "vlan", vlan_id=5000),
    LinkConfig("bond0", "bond", mtu=10), LinkConfig("b", "bond", xmit_hash_policy="x\ny"),
])
def test_a_link_config_no_config_system_would_take_is_refused(config: LinkConfig) -> None:
    with pytest.raises(ValidationError):
        checked(config)
    assert Upsert(config).name == config.name


def test_zsns_own_files_and_deferred_edits_say_so() -> None:
    made("/etc/zsn/x.json", "", '{"a": 1}\n', OwnFile("zsn's"))
    with pytest.raises(TypeError, match="says what it means"):
        made("/etc/zsn/x.json", "", '{"a": 1}\n', None)
