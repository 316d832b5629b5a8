"""Onboarding, routing and lint plans on a config tree under a temporary --root (no live device)."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.needs import needs_tools
from zsn.cli import main as cli_main
from zsn.errors import ValidationError
from zsn.lint import Finding
from zsn.plan import ApplyError, FileEdit, LiveStep
from zsn.system.host import Host
from zsn.wireguard import actions, interfaces, lint, onboarding, routing, settings
from zsn.wireguard.config import parse

FIXTURES = Path(__file__).parents[1] / "fixtures" / "wireguard"


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def host(tmp_path: Path) -> Host:
    (tmp_path / "etc/sysctl.d").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4/ip_forward").write_text("0\n")
    h = Host(tmp_path)
    interfaces.plan_create_interface(h, "wg0", ["10.66.0.1/24", "fd66::1/64"], 51820,
                                     "vpn.example.com").apply()
    return h


def _add(host: Host, name: str, **fields: object) -> onboarding.ClientConfig:
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", name,
                                                                         **fields))  # type: ignore[arg-type]
    plan.apply()
    return client


def test_create_writes_a_private_config_in_a_private_dir(host: Host) -> None:
    path = host.path("/etc/wireguard/wg0.conf")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    config = parse(path.read_text())
    assert config.interface is not None
    assert config.interface.get_all("Address") == ["10.66.0.1/24", "fd66::1/64"]


def test_onboarding_picks_free_addresses_and_writes_both_configs(host: Host) -> None:
    alice = _add(host, "alice")
    bob = _add(host, "bob", profile=onboarding.Profile.ALL, dns=["10.66.0.1"])
    assert "Address = 10.66.0.2/32, fd66::2/128" in alice.text
    assert "Address = 10.66.0.3/32, fd66::3/128" in bob.text
    assert "AllowedIPs = 10.66.0.1/32, fd66::1/128" in alice.text
    assert "AllowedIPs = 0.0.0.0/0, ::/0" in bob.text
    assert "Endpoint = vpn.example.com:51820" in alice.text
    assert "PersistentKeepalive = 25" in alice.text and "PresharedKey = " in alice.text
    assert stat.S_IMODE(alice.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(alice.path.parent.stat().st_mode) == 0o700
    server = parse(host.path("/etc/wireguard/wg0.conf").read_text())
    assert [p.name for p in server.peers] == ["alice", "bob"]
    assert server.peers[1].get_all("AllowedIPs") == ["10.66.0.3/32", "fd66::3/128"]
    assert onboarding.onboarding_defaults(host, "wg0").address == "10.66.0.4, fd66::4"


def test_the_first_endpoint_typed_for_an_adopted_interface_is_remembered(
        tmp_path: Path) -> None:
    h = Host(tmp_path)
    interfaces.plan_create_interface(h, "wg0", ["10.66.0.1/24"], 51820).apply()
    with pytest.raises(ValidationError, match="no endpoint is known for wg0") as refused:
        onboarding.plan_add_peer(h, onboarding.PeerRequest("wg0", "alice"))
    assert refused.value.field == "endpoint" and "--endpoint" not in str(refused.value)
    assert onboarding.onboarding_defaults(h, "wg0").endpoint == ""
    alice = _add(h, "alice", endpoint="vpn.example.com")
    assert "Endpoint = vpn.example.com:51820" in alice.text
    assert onboarding.onboarding_defaults(h, "wg0").endpoint == "vpn.example.com:51820"
    bob = _add(h, "bob", endpoint="other.example.com:4500")  # a one-off: the default stays
    assert "Endpoint = other.example.com:4500" in bob.text
    assert onboarding.onboarding_defaults(h, "wg0").endpoint == "vpn.example.com:51820"


def test_a_freed_address_is_reused_but_a_disabled_peer_keeps_its_own(host: Host) -> None:
    _add(host, "alice")
    _add(host, "bob")
    actions.plan_disable_peer(host, "wg0", "alice").apply()
    assert "10.66.0.4/32" in _add(host, "carol").text
    actions.plan_remove_peer(host, "wg0", "bob").apply()
    assert "10.66.0.3/32" in _add(host, "dave").text


def test_dry_run_shows_diffs_without_secrets(host: Host) -> None:
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "alice"))
    text = plan.describe()
    private = next(line for line in client.text.splitlines() if line.startswith("PrivateKey"))
    assert private.split(" = ")[1] not in text
    assert "PrivateKey = (hidden)" in text and "PresharedKey = (hidden)" in text
    assert "+# alice" in text and "create " in text
    assert not client.path.exists()


BAD_REQUESTS = [
    ({"name": ""}, "peer name is empty"),
    ({"name": "../etc"}, "not allowed"),
    ({"name": "x" * 64}, "not allowed"),
    ({"address": "10.66.0.1"}, "already used by the server itself"),
    ({"address": "10.67.0.5"}, "outside the interface subnet"),
    ({"address": "10.66.0.255"}, "network or broadcast"),
    ({"address": "10.66.0.0/24"}, "must be a single host"),
    ({"address": "10.66.0.300"}, "is not an IP address"),
    ({"routed_subnets": ["192.168.1.1/24"]}, "host bits set; did you mean 192.168.1.0/24"),
    ({"routed_subnets": ["10.66.0.0/25"]}, "overlaps the VPN subnet"),
    ({"routed_subnets": ["bogus"]}, "not a CIDR network"),
    ({"endpoint": "vpn.example.com:0"}, "endpoint port 0 is outside 1-65535"),
    ({"endpoint": "bad host!"}, "neither an IP address nor a hostname"),
    ({"dns": ["1.1.1.1;rm"]}, "DNS entry"),
    ({"keepalive": 70000}, "keepalive 70000 is outside"),
    ({"public_key": "abc"}, "public key must be 44 base64 characters"),
    ({"public_key": "A" * 43 + "B"}, "not a valid base64 WireGuard key"),
    ({"interface": "wg0/../x"}, "may only use"),
    ({"interface": "wg9"}, "does not exist"),
]


@pytest.mark.parametrize(("fields", "message"), BAD_REQUESTS, ids=[m for _, m in BAD_REQUESTS])
def test_bad_input_is_refused_and_nothing_changes(host: Host, fields: dict[str, object],
                                                  message: str) -> None:
    _add(host, "alice")
    before = _tree(host.root)
    request = onboarding.PeerRequest(**{"interface": "wg0", "name": "eve", **fields})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        onboarding.plan_add_peer(host, request)
    assert _tree(host.root) == before


BAD_CHANGES = [
    (lambda h: actions.plan_rename_peer(h, "wg0", "alice", "bob"),
     "wg0 already has a peer named 'bob'"),
    (lambda h: actions.plan_rename_peer(h, "wg0", "alice", "a/b"), "not allowed"),
    (lambda h: actions.plan_rename_peer(h, "wg0", "nobody", "x"), "no peer named 'nobody'"),
    (lambda h: actions.plan_remove_peer(h, "wg0", "nobody"), "no peer named 'nobody'"),
    (lambda h: actions.plan_disable_peer(h, "wg9", "alice"), "no interface 'wg9'"),
    (lambda h: actions.plan_enable_peer(h, "wg0", "alice"), "is not disabled"),
    (lambda h: actions.plan_set_routed_subnets(h, "wg0", "alice", ["300.1.1.0/24"]),
     "not a CIDR network"),
    (lambda h: actions.plan_set_routed_subnets(h, "wg0", "alice", ["10.66.0.0/16"]),
     "overlaps the VPN subnet"),
    (lambda h: routing.plan_gateway(h, "wg0", "eth0;reboot"), "may only use"),
    (lambda h: routing.plan_gateway(h, "wg0", "wg0"), "cannot be the WireGuard interface"),
    (lambda h: routing.plan_link_interfaces(h, "wg0", "wg0"), "two different interfaces"),
    (lambda h: routing.plan_link_interfaces(h, "wg0", "wg9"), "no interface 'wg9'"),
    (lambda h: interfaces.plan_set_endpoint(h, "wg0", "bad host"), "neither an IP address"),
    (lambda h: onboarding.show_client_config(h, "wg0", "../../wg0"), "not allowed"),
]


@pytest.mark.parametrize(("action", "message"), BAD_CHANGES, ids=[m for _, m in BAD_CHANGES])
def test_bad_input_to_other_actions_is_refused_and_nothing_changes(
        host: Host, action: Callable[[Host], object], message: str) -> None:
    _add(host, "alice")
    _add(host, "bob")
    before = _tree(host.root)
    with pytest.raises(ValidationError, match=message):
        action(host)
    assert _tree(host.root) == before


def test_colliding_routed_subnets_and_duplicate_keys(host: Host) -> None:
    _add(host, "site", routed_subnets=["192.168.50.0/24"])
    with pytest.raises(ValidationError, match="overlaps 192.168.50.0/24 of peer 'site'"):
        onboarding.plan_add_peer(host, onboarding.PeerRequest(
            "wg0", "other", routed_subnets=["192.168.0.0/16"]))
    key = parse(host.path("/etc/wireguard/wg0.conf").read_text()).peers[0].get("PublicKey")
    assert key
    with pytest.raises(ValidationError, match="already has a peer with public key"):
        onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "twin", public_key=key))


def test_interface_creation_refuses_bad_input(tmp_path: Path) -> None:
    h = Host(tmp_path)
    for args, message in [
        (("wg0", ["10.1.0.0/24"], 51820), "network address"),
        (("wg0", ["10.1.0.1"], 51820), "needs a /prefix"),
        (("wg0", ["10.1.0.1/24", "10.2.0.1/24"], 51820), "at most one IPv4"),
        (("wg0", ["10.1.0.1/24"], "port"), "is not a number"),
        (("wg0", ["10.1.0.1/24"], 70000), "outside 1-65535"),
        (("a-very-long-interface", ["10.1.0.1/24"], 1), "longer than 15"),
    ]:
        with pytest.raises(ValidationError, match=message):
            interfaces.plan_create_interface(h, *args)  # type: ignore[arg-type]
    assert not any(tmp_path.rglob("*"))


@pytest.mark.parametrize(("addresses", "port", "message"), [
    (["10.67.0.1/24"], 51820, "listen port 51820 is already used by wg0"),
    (["10.66.0.129/25"], 51821, r"address 10.66.0.129/25 overlaps wg0's subnet 10.66.0.0/24"),
    (["10.67.0.1/24", "fd66::1:1/112"], 51821, "overlaps wg0's subnet fd66::/64"),
])
def test_a_new_interface_must_not_collide_with_another(host: Host, addresses: list[str],
                                                       port: int, message: str) -> None:
    before = _tree(host.root)
    with pytest.raises(ValidationError, match=message):
        interfaces.plan_create_interface(host, "wg1", addresses, port)
    assert _tree(host.root) == before
    interfaces.plan_create_interface(host, "wg1", ["10.67.0.1/24"], 51821).apply()


def test_a_failing_step_undoes_everything_before_it(host: Host) -> None:
    _add(host, "alice")
    before = _tree(host.root)
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "bob"))

    def fail() -> None:
        raise OSError("the device went away")

    plan.steps.append(LiveStep("add peer bob on the running interface", fail))
    with pytest.raises(ApplyError) as info:
        plan.apply()
    assert "the device went away" in str(info.value)
    assert "undone: edit" in str(info.value)
    assert _tree(host.root) == before
    assert not client.path.exists()


def test_rename_moves_the_client_config_and_renames_it_inside(host: Host) -> None:
    before = _add(host, "alice")
    plan = actions.plan_rename_peer(host, "wg0", "alice", "alice-phone")
    shown = plan.describe()
    assert "-# alice: client of wg0, written by zsn" in shown
    assert "+# alice-phone: client of wg0, written by zsn" in shown
    assert "PrivateKey = (hidden)" in shown or "PrivateKey" not in shown
    plan.apply()
    after = onboarding.show_client_config(host, "wg0", "alice-phone")
    first, rest = after.text.split("\n", 1)
    assert first == "# alice-phone: client of wg0, written by zsn"
    assert rest == before.text.split("\n", 1)[1], "the rest byte for byte"
    assert stat.S_IMODE(after.path.stat().st_mode) == 0o600
    assert sorted(p.name for p in after.path.parent.iterdir()) == ["alice-phone.conf"]
    with pytest.raises(ValidationError, match="no client config"):
        onboarding.show_client_config(host, "wg0", "alice")


def test_a_rename_that_fails_at_the_server_config_leaves_the_client_config_as_it_was(
        host: Host) -> None:
    _add(host, "alice")
    plan = actions.plan_rename_peer(host, "wg0", "alice", "alice-phone")
    server = host.path("/etc/wireguard/wg0.conf")
    server.write_text(server.read_text() + "\n")  # changed since the plan read it
    before = _tree(host.root)
    with pytest.raises(ApplyError, match="changed on disk"):
        plan.apply()
    assert _tree(host.root) == before


def test_a_rename_killed_after_moving_the_client_config_is_finished_by_running_it_again(
        host: Host) -> None:
    _add(host, "alice")
    plan = actions.plan_rename_peer(host, "wg0", "alice", "alice-phone")
    for step in plan.steps[:-1]:  # killed before the server config (the commit)
        step.apply()
    again = actions.plan_rename_peer(host, "wg0", "alice", "alice-phone")
    assert any("interrupted" in note for note in again.notes)
    again.apply()
    client = onboarding.show_client_config(host, "wg0", "alice-phone")
    assert client.text.startswith("# alice-phone: client of wg0, written by zsn\n")
    assert parse(host.path("/etc/wireguard/wg0.conf").read_text()).find_peer("alice-phone")


def test_routed_subnets_behind_a_peer(host: Host) -> None:
    _add(host, "site")
    actions.plan_set_routed_subnets(host, "wg0", "site", ["192.168.50.0/24"]).apply()
    peer = parse(host.path("/etc/wireguard/wg0.conf").read_text()).require_peer("site")
    assert peer.get_all("AllowedIPs") == ["10.66.0.2/32", "fd66::2/128", "192.168.50.0/24"]
    actions.plan_set_routed_subnets(host, "wg0", "site", ["192.168.60.0/24"]).apply()
    peer = parse(host.path("/etc/wireguard/wg0.conf").read_text()).require_peer("site")
    assert peer.get_all("AllowedIPs") == ["10.66.0.2/32", "fd66::2/128", "192.168.60.0/24"]


def test_subnets_behind_a_hand_edited_peer_keep_what_zsn_cannot_read(host: Host) -> None:
    _add(host, "site")
    path = host.path("/etc/wireguard/wg0.conf")
    path.write_text(path.read_text().replace("AllowedIPs = 10.66.0.2/32",
                                             "AllowedIPs = 10.66.0.2/32, bogus"))
    actions.plan_set_routed_subnets(host, "wg0", "site", ["192.168.50.0/24"]).apply()
    peer = parse(path.read_text()).require_peer("site")
    assert peer.get_all("AllowedIPs") == ["10.66.0.2/32", "bogus", "fd66::2/128",
                                          "192.168.50.0/24"]


def test_gateway_rules_use_percent_i_and_are_added_once(host: Host) -> None:
    needs_tools("iptables", "ip6tables")
    routing.plan_gateway(host, "wg0", "eth0").apply()
    config = parse(host.path("/etc/wireguard/wg0.conf").read_text())
    assert config.interface is not None
    ups = [e.value for e in config.interface.entries_for("PostUp")]
    assert "iptables -t nat -A POSTROUTING -s 10.66.0.0/24 -o eth0 -j MASQUERADE" in ups
    assert "ip6tables -A FORWARD -i %i -j ACCEPT" in ups
    assert all("wg0" not in up for up in ups)
    downs = [e.value for e in config.interface.entries_for("PostDown")]
    assert [d.replace(" -D ", " -A ") for d in downs] == ups
    sysctl = host.path("/etc/sysctl.d/99-zsn-wireguard.conf").read_text()
    assert "net.ipv4.ip_forward = 1" in sysctl and "net.ipv6.conf.all.forwarding = 1" in sysctl
    assert host.path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "1"
    again = routing.plan_gateway(host, "wg0", "eth0")
    assert not again.steps


def _lint_ids(host: Host) -> dict[str, list[Finding]]:
    found: dict[str, list[Finding]] = {}
    for finding in lint.lint(host):
        found.setdefault(finding.id, []).append(finding)
    return found


def _install(host: Host, fixture: str, name: str) -> Path:
    target = host.path(f"/etc/wireguard/{name}.conf")
    shutil.copyfile(FIXTURES / fixture, target)
    os.chmod(target, 0o600)
    return target


def test_lint_catches_the_notes_mixing_wg0_and_wg1_and_fixes_it(host: Host) -> None:
    target = _install(host, "notes-gateway-server.conf", "wg2")
    found = _lint_ids(host)["WG007"]
    assert found[0].subject == "wg2" and "-i wg1" in found[0].message
    assert found[0].fix_plan is not None
    before = target.read_text()
    found[0].fix_plan().apply()
    after = target.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True)
               if a != b]
    assert len(changed) == 1 and "-A FORWARD -i %i -j ACCEPT" in changed[0][1]
    assert "WG007" in {f.id for f in lint.lint(host) if f.subject == "wg2"}  # PostDown


def test_lint_leaves_rules_joining_two_interfaces_to_judgement(host: Host) -> None:
    interfaces.plan_create_interface(host, "wg1", ["10.67.0.1/24"], 51821).apply()
    path = host.path("/etc/wireguard/wg1.conf")
    config = parse(path.read_text())
    assert config.interface is not None
    joining = "iptables -A FORWARD -i wg0 -o %i -j ACCEPT"
    config.append_entry(config.interface, "PostUp",
                        f"{joining}; iptables -A FORWARD -i wg0 -j ACCEPT")
    path.write_text(config.render())
    found = [f for f in _lint_ids(host)["WG007"] if f.subject == "wg1"]
    assert [f.fix_plan is not None for f in found] == [False, True]
    assert found[1].fix_plan is not None
    found[1].fix_plan().apply()
    assert f"PostUp = {joining}; iptables -A FORWARD -i %i -j ACCEPT\n" in path.read_text()
    # Once zsn has linked the two, the joining rule is expected there.
    stored = settings.load(host)
    stored.edit({"wg1": settings.InterfaceSettings(links=["wg0"])}).apply()
    assert "WG007" not in _lint_ids(host)


def test_lint_savecfg_dns_overlap_duplicates_keepalive_permissions(host: Host) -> None:
    _install(host, "manpage-server-multipeer.conf", "wg3")  # SaveConfig = true
    _install(host, "manpage-client-gateway.conf", "wg4")  # DNS, no resolvconf under root
    _install(host, "notes-gateway-client.conf", "wg5")  # client without keepalive
    overlap = _install(host, "zcapwg1.conf", "wg6")
    config = parse(overlap.read_text())
    config.set_value(config.require_peer("bob-site"), "AllowedIPs", "10.77.0.0/24")
    config.append_peer("twin", [("PublicKey", config.peers[0].get("PublicKey") or ""),
                                ("AllowedIPs", "10.77.0.9/32")])
    config.append_peer("far", [("PublicKey", "f" * 42 + "c="), ("AllowedIPs", "10.99.9.9/32")])
    overlap.write_text(config.render())
    os.chmod(host.path("/etc/wireguard/wg3.conf"), 0o644)
    found = _lint_ids(host)
    assert found["WG004"][0].subject == "wg3" and found["WG004"][0].fix_plan
    assert found["WG005"][0].subject == "wg4" and found["WG005"][0].line == 3
    assert {f.subject for f in found["WG009"]} == {"wg4", "wg5"}  # both are clients
    assert any("bob-site" in f.message and "alice-laptop" in f.message for f in found["WG001"])
    assert any("twin" in f.message for f in found["WG002"])
    assert any("far" in f.message for f in found["WG003"])
    assert [f.path for f in found["WG006"]] == [str(host.path("/etc/wireguard/wg3.conf"))]
    for finding in (found["WG004"][0], found["WG006"][0], *found["WG009"]):
        assert finding.fix_plan is not None
        finding.fix_plan().apply()
    after = _lint_ids(host)
    assert "WG004" not in after and "WG006" not in after and "WG009" not in after


def test_lint_forwarding_off_under_routing(host: Host) -> None:
    needs_tools("iptables")
    routing.plan_client_to_client(host, "wg0").apply()
    host.path("/proc/sys/net/ipv4/ip_forward").write_text("0\n")
    found = _lint_ids(host)["WG008"]
    assert found[0].fix_plan is not None
    found[0].fix_plan().apply()
    assert "WG008" not in _lint_ids(host)


def test_cli_prints_config_and_one_line_errors(host: Host,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = str(host.root)
    assert cli_main(["--root", root, "peer", "add", "wg0", "alice", "--no-psk"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("# alice: client of wg0") and "PresharedKey" not in out.out
    assert cli_main(["--root", root, "peer", "show", "wg0", "alice", "--qr"]) == 0
    assert "\u2580" in capsys.readouterr().out
    assert cli_main(["--root", root, "peer", "add", "wg0", "alice"]) == 2
    err = capsys.readouterr().err
    assert err == ("zsn peer: invalid: wg0 already has a peer named 'alice' (its client config: "
                   "zsn peer show wg0 alice)\n")
    assert cli_main(["--root", root, "peer", "remove", "wg0", "alice", "--dry-run"]) == 0
    assert "Plan: remove peer alice" in capsys.readouterr().out
    assert host.path("/etc/wireguard/clients/wg0/alice.conf").exists()


def test_plans_and_results_never_show_private_keys_in_reprs(host: Host) -> None:
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "alice"))
    private = next(line.split(" = ")[1] for line in client.text.splitlines()
                   if line.startswith("PrivateKey"))
    psk = next(line.split(" = ")[1] for line in client.text.splitlines()
               if line.startswith("PresharedKey"))
    shown = repr(plan) + repr(client) + plan.describe() + "".join(map(repr, plan.steps))
    assert private not in shown and psk not in shown


def test_dry_runs_print_no_keys_and_write_nothing(host: Host,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _add(host, "alice")
    root = str(host.root)
    before = _tree(host.root)
    secrets = {line.split("=", 1)[1].strip() for path in host.root.rglob("*.conf")
               for line in path.read_text().splitlines()
               if line.startswith(("PrivateKey", "PresharedKey"))}
    assert len(secrets) == 3  # server and client private keys, the preshared key
    for args in (["wg", "create", "wg1", "--address", "10.67.0.1/24", "--port", "51821"],
                 ["peer", "add", "wg0", "bob"], ["peer", "remove", "wg0", "alice"],
                 ["peer", "disable", "wg0", "alice"], ["peer", "rename", "wg0", "alice", "al"]):
        assert cli_main(["--root", root, *args, "--dry-run"]) == 0
        out = capsys.readouterr()
        assert "Plan: " in out.out and "(hidden)" in out.out
        assert not any(secret in out.out + out.err for secret in secrets)
        assert "PrivateKey = (hidden)" in out.out or args[1] != "create"
    assert _tree(host.root) == before



def test_a_refused_input_names_its_option_on_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The core names the input (ValidationError.field); the CLI says which option.
    root = str(tmp_path)
    assert cli_main(["--root", root, "wg", "create", "wg0", "--address", "10.66.0.1/24",
                     "--port", "51820"]) == 0
    capsys.readouterr()
    assert cli_main(["--root", root, "peer", "add", "wg0", "alice"]) == 2
    assert capsys.readouterr().err.startswith(
        "zsn peer: invalid: --endpoint: no endpoint is known for wg0 yet")
    assert cli_main(["--root", root, "peer", "add", "wg0", "alice", "--endpoint", "vpn.example",
                     "--ip", "10.99.0.2"]) == 2
    assert capsys.readouterr().err.startswith("zsn peer: invalid: --ip: peer address 10.99.0.2")
    assert cli_main(["--root", root, "peer", "add", "wg0", "bad name"]) == 2
    assert capsys.readouterr().err.startswith("zsn peer: invalid: peer name"), \
        "a positional argument is not named again"


def test_forwarding_in_another_namespace_is_live_only_and_says_why(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routing, "other_network_namespace",
                        lambda h: "zsn runs in the network namespace 'lab1' (ip netns)")
    steps, notes = routing.forwarding_steps(host, {4})
    assert not [s for s in steps if isinstance(s, FileEdit)], "no /etc/sysctl.d file"
    assert [s.description for s in steps if isinstance(s, LiveStep)] == \
        ["enable net.ipv4.ip_forward now"]
    assert "nothing persists: zsn runs in the network namespace 'lab1'" in notes[0]
    assert "forwarding is per network namespace" in notes[0]


def test_forwarding_where_boot_settings_apply_persists_too(host: Host) -> None:
    steps, notes = routing.forwarding_steps(host, {4})
    assert [s.path.name for s in steps if isinstance(s, FileEdit)] == ["99-zsn-wireguard.conf"]
    assert not notes


def _ranges(host: Host, addresses: str) -> None:
    """wg0 with the `Address` line of a server that has several ranges (issue 33's
    ``10.8.0.2/32, 10.7.0.1/24``): the first holds only the server's own address."""
    path = host.path("/etc/wireguard/wg0.conf")
    text = path.read_text()
    line = next(line for line in text.splitlines() if line.startswith("Address = "))
    path.write_text(text.replace(line, f"Address = {addresses}"))


def test_a_peer_gets_its_address_from_the_range_with_room(host: Host) -> None:
    _ranges(host, "10.8.0.2/32, 10.7.0.1/24")
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "alice"))
    assert "Address = 10.7.0.2/32\n" in client.text
    assert "10.7.0.2 is from 10.7.0.1/24 (10.8.0.2/32 has no free address)" in plan.notes
    plan.apply()
    assert onboarding.onboarding_defaults(host, "wg0").address == "10.7.0.3"
    bob = _add(host, "bob", address="10.7.0.9")
    assert "Address = 10.7.0.9/32\n" in bob.text


def test_each_family_takes_its_own_range_with_room(host: Host) -> None:
    _ranges(host, "10.8.0.2/32, 10.7.0.1/24, fd08::2/128, fd07::1/64")
    plan, client = onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "alice"))
    assert "Address = 10.7.0.2/32, fd07::2/128\n" in client.text
    assert plan.notes[:2] == ["10.7.0.2 is from 10.7.0.1/24 (10.8.0.2/32 has no free address)",
                              "fd07::2 is from fd07::1/64 (fd08::2/128 has no free address)"]
    plan.apply()
    # A typed address in the second range: its twin is the same host of the IPv6 range.
    bob = _add(host, "bob", address="10.7.0.9")
    assert "Address = 10.7.0.9/32, fd07::9/128\n" in bob.text


def test_a_twin_whose_host_number_is_taken_is_the_first_free_one(host: Host) -> None:
    _ranges(host, "10.66.0.1/24, fd66::1/120")
    _add(host, "alice", address="10.66.0.2, fd66::3")
    bob = _add(host, "bob")  # 10.66.0.3 with fd66::3 is alice's: fd66::2 is free
    assert "Address = 10.66.0.3/32, fd66::2/128\n" in bob.text


def test_no_room_in_any_range_names_them_all(host: Host) -> None:
    _ranges(host, "10.8.0.2/32, 10.7.0.1/30")
    _add(host, "alice")
    with pytest.raises(ValidationError, match=r"no free address left in 10\.8\.0\.2/32, "
                                              r"10\.7\.0\.1/30"):
        onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "bob"))
