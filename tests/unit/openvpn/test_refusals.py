"""What OpenVPN refuses as it reads a config: zsn's reading of its option table, the
combinations it refuses, and the installed openvpn's own parse of a copy that starts
nothing. The profile of issue 33 is example-linux-configs' client template (its
`remote` line still holds the placeholder)."""

from __future__ import annotations

from pathlib import Path

from tests.needs import needs_tools
from zsn.openvpn.config import parse
from zsn.openvpn.refusals import (
    Refusal,
    combination_refusals,
    openvpn_refusal,
    option_refusals,
    profile_refusals,
)

CORPUS = Path(__file__).parents[2] / "fixtures" / "corpus" / "openvpn"
TEMPLATE = CORPUS / "example-linux-configs" / "client.ovpn"


def refusals(text: str) -> list[Refusal]:
    config = parse(text, "x.conf")
    lines = [(directive, directive.line + 1) for directive in config.directives]
    return option_refusals(lines) + combination_refusals(lines)


def test_a_placeholder_left_in_remote_is_six_parameters_openvpn_refuses() -> None:
    [refusal] = refusals(TEMPLATE.read_text())
    assert refusal.line == 3
    assert refusal.message.startswith("'remote' takes 1 to 3 parameters, here 6 (a "
                                      "placeholder left in?)")


def test_counts_values_and_combinations_as_openvpn_checks_them() -> None:
    found = refusals("client\nremote a 1194 udp\nproto quic\nkey-direction 2\n"
                     "block-outside-dns\nsetenv opt block-outside-dns\n"
                     "ignore-unknown-option route-metric\nroute-metric 1 2\n"
                     "client-connect /x\n<up>\nx\n</up>\n")
    assert [(r.line, r.message.split(" (")[0].split(":")[0]) for r in found] == [
        (3, "'proto' does not take 'quic' there"),
        (4, "'key-direction' does not take '2' there"),
        (5, "'block-outside-dns' is not an option OpenVPN 2.6.14 knows on Linux"),
        (10, "option 'up' is not expected to be inline"),
        (9, "--client-connect requires --mode server")]
    assert refusals("server 10.8.0.0 255.255.255.0\ndev tun\nnobind\n")[0].message == \
        "--nobind cannot be used with --mode server: OpenVPN refuses the config"
    assert refusals("server-bridge nogw\ncrl-verify crl dir\n") == []


def test_openvpn_itself_refuses_the_template_and_says_where() -> None:
    needs_tools("openvpn")
    refusal = openvpn_refusal(parse(TEMPLATE.read_text(), "client.ovpn"), "client.ovpn")
    assert refusal == Refusal(3, "OpenVPN itself: Unrecognized option or missing or extra "
                                 "parameter(s) in client.ovpn:3: remote (2.6.14)")


def test_openvpn_parses_a_copy_and_starts_nothing(tmp_path: Path) -> None:
    """The lines OpenVPN acts on as it parses are blanked: no log is redirected, no
    plugin loaded, no script checked or run, no pid file, socket or device made."""
    needs_tools("openvpn")
    marker = tmp_path / "ran"
    script = tmp_path / "up.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    text = (f"client\ndev tun\nremote 127.0.0.1 1194\nlog {tmp_path}/log\n"
            f"writepid {tmp_path}/pid\nstatus {tmp_path}/status\nscript-security 2\n"
            f"up {script}\nplugin {tmp_path}/none.so\ncd {tmp_path}/nowhere\n"
            f"management {tmp_path}/sock unix\nuser no-such-user\nconfig /nonexistent\n")
    assert openvpn_refusal(parse(text, "c.conf"), "c.conf") is None
    assert list(tmp_path.iterdir()) == [script]
    refused, unchecked = profile_refusals(parse(text + "remote\n", "c.conf"), "c.conf")
    assert unchecked is None and [r.line for r in refused] == [14]
