"""OpenVPN configs zsn did not write, read as data (issue 10, items 2 and 10): names
that come from file names, and everything a profile runs or reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zsn.cli import main
from zsn.errors import ValidationError
from zsn.lint import Finding
from zsn.openvpn import actions, lint
from zsn.system.host import Host


def vpn(root: Host, *args: str) -> int:
    return main(["--root", str(root.root), "vpn", *args])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# -- item 10: a config's name comes from its file name ---------------------------

@pytest.mark.parametrize("action", [["management"], ["hook", "install"], ["start"],
                                    ["enable"]])
def test_actions_on_a_config_whose_file_name_is_no_usable_name_are_refused(
        root: Host, action: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    root.path("/etc/openvpn/client/off\nice.conf").write_text("client\nremote 192.0.2.1\n")
    before = _tree(root.root)
    assert vpn(root, *action, "off\nice", "--dry-run") == 2
    [line] = capsys.readouterr().err.splitlines()[-1:]
    assert "not a usable connection name" in line
    assert _tree(root.root) == before


def test_lint_flags_a_config_whose_file_name_is_no_usable_name(root: Host) -> None:
    root.path("/etc/openvpn/client/off ice.conf").write_text("client\nremote 192.0.2.1\n")
    [finding] = [f for f in lint.lint(root) if f.id == "OVPN010"]
    assert "'off ice'" in finding.message
    assert "OVPN010" in lint.RULES


# -- item 2: everything a config runs or reads -----------------------------------

def put(root: Host, relative: str, text: str) -> Path:
    path = root.path(f"/etc/openvpn/{relative}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def findings(root: Host, rule: str) -> list[Finding]:
    return [f for f in lint.lint(root) if f.id == rule]


PROGRAMS = [
    "setenv opt up /tmp/evil.sh",
    "plugin /usr/lib/openvpn/evil.so",
    "tls-verify /tmp/v.sh",
    "auth-user-pass-verify /tmp/a.sh via-env",
    "learn-address /tmp/l.sh",
    "client-connect /tmp/c.sh",
    "iproute /tmp/ip",
]


def test_lint_names_every_program_a_config_runs_even_behind_setenv_opt(root: Host) -> None:
    put(root, "client/office.conf",
        "client\nremote 192.0.2.1\nsetenv opt script-security 2\n" + "\n".join(PROGRAMS) + "\n")
    [finding] = findings(root, "OVPN008")
    assert finding.severity == "warning"
    for program in PROGRAMS:
        shown = program.removeprefix("setenv opt ")
        assert shown in finding.message, shown
    assert "office.conf:4, behind 'setenv opt'" in finding.message
    assert "OVPN008" in lint.RULES and "OVPN009" in lint.RULES
    # What OpenVPN obeys behind the prefix counts: the scripts are allowed to run.
    assert not findings(root, "OVPN005")


def test_zsn_own_hook_is_not_reported_as_a_program(root: Host) -> None:
    put(root, "client/office.conf", "client\nscript-security 2\n"
        "up /etc/openvpn/zsn-resolved-hook\ndown /etc/openvpn/zsn-resolved-hook\ndown-pre\n")
    assert not findings(root, "OVPN008")


def test_included_configs_are_followed(root: Host) -> None:
    put(root, "client/office.conf", "client\nremote 192.0.2.1\nconfig extra/more.conf\n")
    put(root, "client/extra/more.conf", "script-security 2\nlearn-address /tmp/l.sh\n"
        "auth-user-pass ../../shadow\n")
    [programs] = findings(root, "OVPN008")
    assert "learn-address /tmp/l.sh (more.conf:2" in programs.message
    [outside] = findings(root, "OVPN009")
    assert "/etc/shadow" in outside.message and outside.severity == "error"


@pytest.mark.parametrize(("files", "message"), [
    ({"client/office.conf": "client\nconfig a.conf\n", "client/a.conf": "config b.conf\n",
      "client/b.conf": "config a.conf\n"}, "includes itself"),
    ({"client/office.conf": "client\nconfig i1.conf\n",
      **{f"client/i{n}.conf": f"config i{n + 1}.conf\n" for n in range(1, 12)},
      "client/i12.conf": "verb 3\n"}, "deeper than 10"),
])
def test_include_loops_and_depth_end_in_a_finding(root: Host, files: dict[str, str],
                                                  message: str) -> None:
    for relative, text in files.items():
        put(root, relative, text)
    office = [f for f in lint.lint(root) if f.subject == "openvpn-client@office.service"]
    assert any(f.id == "OVPN000" and message in f.message for f in office), office


def test_a_missing_include_is_a_missing_file(root: Host) -> None:
    put(root, "client/office.conf", "client\nconfig gone.conf\n")
    [missing] = findings(root, "OVPN002")
    assert "gone.conf" in missing.message


@pytest.mark.parametrize(("line", "severity"), [
    ("auth-user-pass ../../../etc/shadow", "error"),
    ("askpass ../../root/pw", "warning"),
    ("secret ../static.key", "warning"),
    ("http-proxy proxy.example 8080 ../../../etc/shadow", "error"),
])
def test_relative_files_outside_the_config_folder_are_flagged(root: Host, line: str,
                                                              severity: str) -> None:
    put(root, "client/office.conf", f"client\nremote 192.0.2.1\n{line}\n")
    [finding] = findings(root, "OVPN009")
    assert finding.severity == severity and "outside /etc/openvpn/client" in finding.message
    assert finding.line == 3


CLIENT_PROGRAMS = PROGRAMS[:3]
"""The programs OpenVPN takes in a client profile (the others are server options, and
iproute is no option on Linux: OpenVPN refuses a client profile with them)."""


def test_import_warns_about_all_that_lint_would(root: Host, tmp_path: Path) -> None:
    source = tmp_path / "provider.ovpn"
    source.write_text("client\nremote vpn.example.net\nsetenv opt script-security 3\n"
                      + "\n".join(CLIENT_PROGRAMS) + "\nauth-user-pass /etc/shadow\n"
                      "log /etc/passwd\nconfig extra.conf\n")
    (tmp_path / "extra.conf").write_text("route-up /tmp/r.sh\n")
    warnings = "\n".join(actions.plan_import(root, source, "provider", True).warnings)
    for program in CLIENT_PROGRAMS:
        assert program.removeprefix("setenv opt ") in warnings, program
    assert "route-up /tmp/r.sh" in warnings  # behind the include, read from beside the file
    assert "script-security 3" in warnings
    assert "sends /etc/shadow" in warnings and "writes /etc/passwd" in warnings
    assert "extra.conf, which is not imported" in warnings
    # What lint reports once it is imported, the import said first.
    actions.plan_import(root, source, "provider", keep_commands=True).apply()
    reported = [f for f in lint.lint(root) if f.id in ("OVPN008", "OVPN009")]
    assert {f.id for f in reported} == {"OVPN008", "OVPN009"}
    for finding in reported:
        if finding.id == "OVPN009":
            assert finding.message in warnings, finding.message
            continue
        for program in finding.message.split(": ", 1)[1].split("; "):
            if not program.startswith("script-security"):
                assert program in warnings, program


def test_import_refuses_a_profile_openvpn_refuses(root: Host, tmp_path: Path) -> None:
    """A client profile with a server's program, or an option Linux's OpenVPN does not
    know: OpenVPN would not start it, so it is not imported (the line named)."""
    for line, words in ((3, "client-connect requires --mode server"),
                        (3, "'iproute' is not an option")):
        source = tmp_path / "provider.ovpn"
        program = PROGRAMS[5] if "client-connect" in words else PROGRAMS[6]
        source.write_text(f"client\nremote vpn.example.net\n{program}\n")
        with pytest.raises(ValidationError, match=rf"provider.ovpn:{line}: .*{words}"):
            actions.plan_import(root, source, "provider")
