"""WireGuard access rules (issue 35) without a kernel: the policy file, explain, the
table compiled for nftables against what nft really lists (captured), the undo record,
and the plans on a --root tree with no running interface."""

from __future__ import annotations

import ipaddress
import json
import os
import stat
from pathlib import Path

import pytest

from tests.fixtures.wireguard.acl.capture import INTERFACE, policy_and_peers
from zsn.cli import main as cli_main
from zsn.errors import ParseError, UnsafeStateError, ValidationError
from zsn.system import nftables
from zsn.system.host import Host
from zsn.wireguard import acl, acl_table, actions, interfaces, onboarding, policy, routing
from zsn.wireguard.acl_table import (
    LiveTable,
    TableSpec,
    compile_table,
    decode,
    differences,
    element_updates,
    file_text,
    render,
)
from zsn.wireguard.config import parse as parse_config
from zsn.wireguard.policy import Group, Peers, Policy, parse_rule, parse_test_text

CAPTURED = Path(__file__).parents[1] / "fixtures" / "wireguard" / "acl"
POLICY_TEXT = """\
# Access rules of wg0, written by zsn: change them with `zsn wg acl`.
# Rules are tried in order (numbered from 1); the first that matches decides,
# Default decides the rest. Replies of an allowed connection always pass.
# Loaded into nftables (table inet zsn_wg0) when wg0 comes up.

Default = deny

# Group = NAME: PEER, PEER ...
Group = kids: alice, bob
Group = media: tv

# Rule = allow|deny FROM -> TO [PORT[/tcp|/udp]]
Rule = deny kids -> nas 445/tcp
Rule = allow kids -> media
Rule = allow any -> 192.168.1.0/24 53
Rule = allow behind:site -> fd66::/64

# Test = SRC -> DST[:PORT/PROTO] allow|deny (checked on every change)
Test = kids -> nas:445/tcp deny
Test = alice -> [fd66::5]:22/tcp deny
"""


def _listing(name: str) -> list[nftables.NftObject]:
    return nftables.decode((CAPTURED / name).read_text(), name)


# -- the file ------------------------------------------------------------------------


def test_a_policy_file_reads_and_renders_back_byte_for_byte() -> None:
    read = policy.parse(POLICY_TEXT, "wg0", "wg0.acl")
    assert read.default == "deny"
    assert read.group("kids") == Group("kids", ("alice", "bob"))
    assert [str(rule) for rule in read.rules] == [
        "deny kids -> nas 445/tcp", "allow kids -> media", "allow any -> 192.168.1.0/24 53",
        "allow behind:site -> fd66::/64"]
    assert read.rules[2].port == policy.Port(53, ("tcp", "udp"))
    assert str(read.tests[1]) == "alice -> [fd66::5]:22/tcp deny"
    assert policy.render(read) == POLICY_TEXT


@pytest.mark.parametrize(("text", "message"), [
    ("Default = maybe\n", "wg0.acl:1: 'maybe' is neither allow nor deny"),
    ("Default = allow\nDefault = deny\n", "wg0.acl:2: a second Default line"),
    ("Rule = allow kids nas\n", "is not 'allow|deny FROM -> TO"),
    ("Rule = allow a -> b 70000\n", "port 70000 is outside 1-65535"),
    ("Rule = allow 10.0.0.0/8 -> fd00::/8\n", "can never match"),
    ("Rule = allow 10.0.0.1/8 -> any\n", "has host bits set; did you mean 10.0.0.0/8?"),
    ("Group = kids alice\n", "is not 'NAME: PEER, PEER ...'"),
    ("Group = kids: a, a\n", "lists a peer twice"),
    ("Group = 1kids: a\n", "group name '1kids' is not allowed"),
    ("Group = kids: a/b\n", "'a/b' is not an address"),
    ("Test = a -> b maybe\n", "'maybe' is neither allow nor deny"),
    ("Colour = red\n", "unknown key 'Colour'"),
    ("Rule = allow a\x1b[2J -> b\n", "wg0.acl:1: a control character"),
])
def test_a_bad_line_is_named_with_its_number(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=None) as caught:
        policy.parse(text, "wg0", "wg0.acl")
    assert message in str(caught.value)


def test_a_value_that_would_not_read_back_is_never_written() -> None:
    with pytest.raises(ValidationError, match="group name"):
        policy.render(Policy("wg0", groups=(Group("kids\nRule = allow any -> any", ()),)))
    with pytest.raises(ValidationError, match="is not an address"):
        policy.render(Policy("wg0", groups=(Group("kids", ("a, b",)),)))


@pytest.mark.parametrize(("text", "selector", "port"), [
    ("nas", policy.Selector("name", "nas"), None),
    ("nas:445/tcp", policy.Selector("name", "nas"), policy.Port(445, ("tcp",))),
    ("nas:53/udp", policy.Selector("name", "nas"), policy.Port(53, ("udp",))),
    ("10.0.0.9:22", policy.Selector("network", "10.0.0.9"), policy.Port(22, ("tcp",))),
    ("fd00::9", policy.Selector("network", "fd00::9"), None),
    ("[fd00::9]:22/tcp", policy.Selector("network", "fd00::9"), policy.Port(22, ("tcp",))),
    ("fd00::9:22/tcp", policy.Selector("network", "fd00::9"), policy.Port(22, ("tcp",))),
    ("behind:site:80", policy.Selector("behind", "site"), policy.Port(80, ("tcp",))),
    ("10.1.0.0/16", policy.Selector("network", "10.1.0.0/16"), None),
])
def test_a_test_destination_may_carry_a_port(text: str, selector: policy.Selector,
                                             port: policy.Port | None) -> None:
    assert policy.parse_endpoint(text) == (selector, port)


# -- explain -------------------------------------------------------------------------

NET = ipaddress.ip_network


def _peers() -> Peers:
    return Peers("wg0", (NET("10.66.0.0/24"), NET("fd66::/64")), {
        "alice": (NET("10.66.0.2/32"), NET("fd66::2/128")),
        "bob": (NET("10.66.0.3/32"),),
        "tv": (NET("10.66.0.4/32"),),
        "nas": (NET("10.66.0.5/32"), NET("fd66::5/128")),
        "site": (NET("10.66.0.6/32"), NET("192.168.50.0/24")),
    }, frozenset({"old"}), {"wg1": (NET("10.67.0.0/24"),)})


def _decide(text: str, source: str, destination: str,
            port: policy.Port | None = None) -> list[str]:
    read = policy.parse(text, "wg0", "wg0.acl")
    return [decision.describe(read) for decision in policy.explain(
        read, _peers(), policy.parse_selector(source), policy.parse_selector(destination),
        port)]


def test_explain_names_the_first_rule_that_matches() -> None:
    assert _decide(POLICY_TEXT, "alice", "nas", policy.Port(445, ("tcp",))) == [
        "10.66.0.2 -> 10.66.0.5: deny by rule 1 (deny kids -> nas 445/tcp)",
        "fd66::2 -> fd66::5: deny by rule 1 (deny kids -> nas 445/tcp)"]
    assert _decide(POLICY_TEXT, "bob", "tv") == [
        "10.66.0.3 -> 10.66.0.4: allow by rule 2 (allow kids -> media)"]
    # Without a port no port rule matches; the default decides.
    assert _decide(POLICY_TEXT, "bob", "nas") == ["10.66.0.3 -> 10.66.0.5: deny by the default"]
    assert _decide(POLICY_TEXT, "tv", "192.168.1.7", policy.Port(53, ("udp",))) == [
        "10.66.0.4 -> 192.168.1.7: allow by rule 3 (allow any -> 192.168.1.0/24 53)"]


def test_explain_says_when_only_part_of_a_network_matches_and_what_it_does_not_judge() -> None:
    assert _decide(POLICY_TEXT, "10.66.0.0/24", "tv") == [
        "10.66.0.0/24 -> 10.66.0.4: mixed (rule 2, 'allow kids -> media', matches only "
        "part of it)"]
    assert _decide(POLICY_TEXT, "192.168.9.1", "192.168.1.7") == [
        "192.168.9.1 -> 192.168.1.7: not judged (neither end is routed through wg0)"]


def test_what_the_server_never_forwards_is_not_judged_and_no_case_of_a_test() -> None:
    peers = _peers()._replace(local=(NET("10.66.0.1/32"), NET("fd66::1/128")))
    read = policy.parse(POLICY_TEXT, "wg0", "wg0.acl")
    decide = [decision.describe(read) for decision in policy.explain(
        read, peers, policy.parse_selector("site"), policy.parse_selector("192.168.50.9"),
        None)]
    assert decide == ["10.66.0.6 -> 192.168.50.9: not judged (both ends are behind peer "
                      "site: their traffic does not cross the server)",
                      "192.168.50.0/24 -> 192.168.50.9: not judged (both ends are behind "
                      "peer site: their traffic does not cross the server)"]
    assert policy.explain(read, peers, policy.parse_selector("alice"),
                          policy.parse_selector("10.66.0.1"), None)[0].aside == \
        "traffic to or from the server itself is not forwarded"
    # kids -> kids: alice to herself is no case; alice to bob is.
    selfish = read._replace(tests=(parse_test_text("kids -> kids:445/tcp deny"),))
    assert policy.failing_tests(selfish, peers) == []
    lonely = read._replace(tests=(parse_test_text("alice -> alice deny"),))
    assert policy.failing_tests(lonely, peers) == [
        "test 1 (alice -> alice deny) fails: 10.66.0.2 -> 10.66.0.2: not judged (both ends "
        "are behind peer alice: their traffic does not cross the server)",
    ]


def test_an_interface_selector_matches_what_is_routed_through_it() -> None:
    text = "Default = deny\nRule = allow wg0 -> wg1\nRule = allow wg0 -> wg0\n"
    assert _decide(text, "alice", "10.67.0.9") == [
        "10.66.0.2 -> 10.67.0.9: allow by rule 1 (allow wg0 -> wg1)"]
    assert _decide(text, "192.168.50.7", "bob") == [
        "192.168.50.7 -> 10.66.0.3: allow by rule 2 (allow wg0 -> wg0)"]
    assert _decide(text, "192.168.9.1", "bob") == ["192.168.9.1 -> 10.66.0.3: deny by the default"]


def test_the_policy_tests_fail_with_what_explain_says() -> None:
    read = policy.parse(POLICY_TEXT, "wg0", "wg0.acl")
    assert policy.failing_tests(read, _peers()) == []
    broken = read._replace(rules=(parse_rule("allow", "kids", "any", None), *read.rules))
    assert policy.failing_tests(broken, _peers()) == [
        "test 1 (kids -> nas:445/tcp deny) fails: 10.66.0.2 -> 10.66.0.5: allow by rule 1 "
        "(allow kids -> any)",
        "test 2 (alice -> [fd66::5]:22/tcp deny) fails: fd66::2 -> fd66::5: allow by rule 1 "
        "(allow kids -> any)"]
    # A test whose end covers no address now (a disabled peer) judges nothing.
    disabled = read._replace(tests=(parse_test_text("old -> nas deny"),))
    assert policy.run_test(disabled, _peers(), disabled.tests[0], 1).failure is None


def test_names_nothing_has_are_refused() -> None:
    read = policy.parse(POLICY_TEXT, "wg0", "wg0.acl")
    with pytest.raises(ValidationError, match="rule 1 .* 'nobody' is no group, peer"):
        policy.check_policy(read._replace(rules=(parse_rule("deny", "nobody", "any", None),)),
                            _peers())
    with pytest.raises(ValidationError, match="group 'kids': wg0 has no peer named 'carol'"):
        policy.check_policy(read._replace(groups=(Group("kids", ("carol",)),
                                                  Group("media", ("tv",)))), _peers())
    with pytest.raises(ValidationError, match="group 'tv' has the name of a peer"):
        policy.check_policy(read._replace(groups=(*read.groups, Group("tv", ()))), _peers())


# -- the kernel's table: compiled, rendered, read back -------------------------------


def test_the_captured_table_reads_back_as_the_policy_compiled() -> None:
    captured_policy, peers = policy_and_peers()
    live = decode(_listing("nft-list-table.nftables-1.0.6.counted.json"), INTERFACE)
    assert live.spec == compile_table(captured_policy, peers)
    assert differences(live.spec, compile_table(captured_policy, peers)) == []
    # The counters of the real traffic: the connection to 445 reset by rule 2, pings and
    # the connection to port 80 allowed by rule 3 (its IPv4 and IPv6 rules summed).
    assert live.counters["1"] == (0, 0)
    assert live.counters["2"] == (1, 60)
    assert live.counters["3"] == (4, 352)
    assert live.counters["replies"] == (10, 876)
    assert live.counters["default"] == (0, 0)


def test_the_number_of_kernel_rules_does_not_follow_the_peers() -> None:
    captured_policy, peers = policy_and_peers()
    many = peers._replace(peers={**peers.peers, **{
        f"p{i}": (NET(f"10.55.{i // 250 + 1}.{i % 250 + 1}/32"),) for i in range(1000)}})
    grouped = captured_policy._replace(groups=(
        Group("kids", ("laptop", "phone", *(f"p{i}" for i in range(1000)))),
        Group("empty", ())))
    few, lots = compile_table(captured_policy, peers), compile_table(grouped, many)
    assert len(lots.rules) == len(few.rules) == 10
    assert sum(len(each.elements) for each in lots.sets) == \
        sum(len(each.elements) for each in few.sets) + 1000


def test_a_table_changed_by_hand_is_not_taken_for_zsns() -> None:
    with pytest.raises(ParseError, match="not as zsn writes it"):
        decode(_listing("nft-list-table.nftables-1.0.6.hand-changed.json"), INTERFACE)


def test_the_listing_of_tables_and_an_absent_table() -> None:
    names = {body["name"] for kind, body in _listing("nft-list-tables.nftables-1.0.6.json")
             if kind == "table"}
    assert names == {f"zsn_{INTERFACE}"}
    absent = (CAPTURED / "nft-list-table.nftables-1.0.6.absent.txt").read_text()
    assert absent.startswith("rc=1\nstdout=\n")  # what list_table meets, then asks list tables


def test_render_gives_what_nft_lists_back() -> None:
    captured_policy, peers = policy_and_peers()
    spec = compile_table(captured_policy, peers)
    commands = render(spec)
    assert commands[:3] == [{"add": {"table": {"family": "inet", "name": f"zsn_{INTERFACE}"}}},
                            {"delete": {"table": {"family": "inet",
                                                  "name": f"zsn_{INTERFACE}"}}},
                            {"add": {"table": {"family": "inet",
                                               "name": f"zsn_{INTERFACE}"}}}]
    listed = [[{"counter": None} if "counter" in each else each for each in body["expr"]]
              for kind, body in _listing("nft-list-table.nftables-1.0.6.counted.json")
              if kind == "rule" and body.get("comment")]
    rendered = [command["add"]["rule"]["expr"] for command in commands
                if "rule" in command.get("add", {})]
    assert rendered == listed
    assert json.loads(file_text(spec)) == {"nftables": commands}


def test_a_member_change_is_an_element_update() -> None:
    captured_policy, peers = policy_and_peers()
    before = compile_table(captured_policy, peers)
    moved = captured_policy._replace(groups=(Group("kids", ("laptop",)),
                                             Group("empty", ("phone",))))
    after = compile_table(moved, peers)
    assert before.same_shape(after)
    table = f"zsn_{INTERFACE}"
    assert element_updates(before, after) == [
        {"delete": {"element": {"family": "inet", "table": table, "name": "g_kids_4",
                                "elem": ["10.55.0.3"]}}},
        {"add": {"element": {"family": "inet", "table": table, "name": "g_empty_4",
                             "elem": ["10.55.0.3"]}}}]


def test_the_undo_record_holds_typed_data_and_nothing_else() -> None:
    captured_policy, peers = policy_and_peers()
    spec = compile_table(captured_policy, peers)
    assert TableSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec
    record = spec.as_dict()
    bad_sets = [dict(record, sets=[{"name": "g_kids_4; flush ruleset", "family": 4,
                                    "elements": []}]),
                dict(record, sets=[{"name": "g_kids_4", "family": 4,
                                    "elements": ["fd00::/8"]}]),
                dict(record, interface="wg0 ; nft flush ruleset"),
                dict(record, rules=[{**record["rules"][0], "verdict": "jump evil"}]),
                dict(record, rules=[{**record["rules"][0], "port": 0}]),
                dict(record, rules=[{**record["rules"][0], "source": ["iface", "a b"]}]),
                {"interface": INTERFACE}]
    for bad in bad_sets:
        with pytest.raises(ValidationError):
            TableSpec.from_dict(bad)


def test_a_live_table_state_is_compared_set_by_set() -> None:
    captured_policy, peers = policy_and_peers()
    spec = compile_table(captured_policy, peers)
    fewer = spec._replace(sets=tuple(each._replace(elements=each.elements[:1])
                                     if each.name == "g_kids_4" else each
                                     for each in spec.sets))
    assert differences(fewer, spec) == [
        f"set g_kids_4 of table inet zsn_{INTERFACE} lacks 10.55.0.3"]
    assert differences(None, spec) == [f"nftables has no table inet zsn_{INTERFACE}"]
    assert isinstance(LiveTable(spec, {}), LiveTable)


# -- plans on a tree ---------------------------------------------------------------


@pytest.fixture
def host(tmp_path: Path) -> Host:
    (tmp_path / "etc/sysctl.d").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4").mkdir(parents=True)
    (tmp_path / "proc/sys/net/ipv4/ip_forward").write_text("1\n")
    h = Host(tmp_path)
    interfaces.plan_create_interface(h, "wg0", ["10.66.0.1/24", "fd66::1/64"], 51820,
                                     "vpn.example.com").apply()
    for name in ("alice", "bob", "nas"):
        onboarding.plan_add_peer(h, onboarding.PeerRequest("wg0", name))[0].apply()
    return h


def _policy_file(host: Host) -> str:
    return host.path("/etc/wireguard/acl/wg0.acl").read_text()


def test_the_first_change_writes_the_policy_its_boot_file_and_the_hooks(host: Host) -> None:
    plan = acl.plan_group_add(host, "wg0", "kids", ["alice", "bob"])
    assert "wg0 is not running" in plan.notes[0]
    plan.apply()
    assert "Group = kids: alice, bob\n" in _policy_file(host)
    for name in ("wg0.acl", "wg0.nft.json"):
        path = host.path(f"/etc/wireguard/acl/{name}")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(host.path("/etc/wireguard/acl").stat().st_mode) == 0o700
    boot = json.loads(host.path("/etc/wireguard/acl/wg0.nft.json").read_text())
    sets = {command["add"]["set"]["name"]: command["add"]["set"].get("elem")
            for command in boot["nftables"] if "set" in command.get("add", {})}
    assert sets == {"g_kids_4": ["10.66.0.2", "10.66.0.3"],
                    "g_kids_6": ["fd66::2", "fd66::3"]}
    server = parse_config(host.path("/etc/wireguard/wg0.conf").read_text())
    assert server.interface is not None
    assert server.interface.get_all("PostUp") == [acl_table.POST_UP]
    assert server.interface.get_all("PostDown") == [acl_table.POST_DOWN]


def test_rules_are_numbered_placed_moved_and_removed(host: Host) -> None:
    acl.plan_group_add(host, "wg0", "kids", ["alice", "bob"]).apply()
    acl.plan_rule_add(host, "wg0", "allow", "kids", "nas").apply()
    acl.plan_rule_add(host, "wg0", "deny", "kids", "nas", "445/tcp", position=1).apply()
    acl.plan_rule_add(host, "wg0", "deny", "any", "10.66.0.0/24").apply()
    assert [str(rule) for rule in policy.parse(_policy_file(host), "wg0", "f").rules] == [
        "deny kids -> nas 445/tcp", "allow kids -> nas", "deny any -> 10.66.0.0/24"]
    acl.plan_rule_move(host, "wg0", 3, 1).apply()
    acl.plan_rule_remove(host, "wg0", 2).apply()
    assert [str(rule) for rule in policy.parse(_policy_file(host), "wg0", "f").rules] == [
        "deny any -> 10.66.0.0/24", "allow kids -> nas"]
    with pytest.raises(ValidationError, match="there is no rule 3 \\(1-2\\)"):
        acl.plan_rule_remove(host, "wg0", 3)
    with pytest.raises(ValidationError, match="position 9 is outside 1-3"):
        acl.plan_rule_add(host, "wg0", "allow", "any", "any", position=9)


def test_a_change_that_breaks_a_test_is_refused_naming_it(host: Host) -> None:
    acl.plan_group_add(host, "wg0", "kids", ["alice"]).apply()
    acl.plan_rule_add(host, "wg0", "deny", "kids", "nas", "445/tcp").apply()
    acl.plan_test_add(host, "wg0", "kids -> nas:445/tcp deny").apply()
    before = _policy_file(host)
    with pytest.raises(ValidationError, match="breaks the access rules' test 1 "
                       r"\(kids -> nas:445/tcp deny\) fails: 10.66.0.2 -> 10.66.0.4: allow "
                       "by rule 1"):
        acl.plan_rule_add(host, "wg0", "allow", "kids", "any", position=1)
    with pytest.raises(ValidationError, match="test 1"):
        acl.plan_rule_remove(host, "wg0", 1)
    assert _policy_file(host) == before
    with pytest.raises(ValidationError, match="test 2 .* fails"):
        acl.plan_test_add(host, "wg0", "alice -> nas:445/tcp allow")


def test_peer_changes_keep_the_policy_in_step(host: Host) -> None:
    acl.plan_group_add(host, "wg0", "kids", ["alice", "bob"]).apply()
    acl.plan_rule_add(host, "wg0", "deny", "kids", "nas").apply()
    actions.plan_rename_peer(host, "wg0", "bob", "bobby").apply()
    assert "Group = kids: alice, bobby\n" in _policy_file(host)
    actions.plan_remove_peer(host, "wg0", "alice").apply()
    assert "Group = kids: bobby\n" in _policy_file(host)
    with pytest.raises(ValidationError, match="rule 1 of wg0's access rules names nas"):
        actions.plan_remove_peer(host, "wg0", "nas")
    with pytest.raises(ValidationError, match="have a group named 'kids'"):
        onboarding.plan_add_peer(host, onboarding.PeerRequest("wg0", "kids"))
    actions.plan_disable_peer(host, "wg0", "bobby").apply()
    boot = host.path("/etc/wireguard/acl/wg0.nft.json").read_text()
    assert "10.66.0.3" not in boot, "a disabled peer leaves its groups' sets"
    actions.plan_enable_peer(host, "wg0", "bobby").apply()
    assert "10.66.0.3" in host.path("/etc/wireguard/acl/wg0.nft.json").read_text()


def test_client_to_client_is_a_rule_of_the_policy_and_old_setups_keep_theirs(
        host: Host, tmp_path: Path) -> None:
    routing.plan_client_to_client(host, "wg0").apply()
    read = policy.parse(_policy_file(host), "wg0", "f")
    assert [str(rule) for rule in read.rules] == ["allow wg0 -> wg0"]
    assert read.default == "allow"
    server = host.path("/etc/wireguard/wg0.conf").read_text()
    assert "PostUp = iptables -A FORWARD -i %i -o %i -j ACCEPT" in server
    assert f"PostUp = {acl_table.POST_UP}" in server
    # A config made by an older zsn: its FORWARD rule becomes the policy's first rule.
    host.path("/etc/wireguard/acl/wg0.acl").unlink()
    acl.plan_default(host, "wg0", "deny").apply()
    read = policy.parse(_policy_file(host), "wg0", "f")
    assert [str(rule) for rule in read.rules] == ["allow wg0 -> wg0"]
    assert read.default == "deny"


def test_the_command_line_refuses_bad_input_with_one_line_and_changes_nothing(
        host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(host.root)
    before = {p: p.read_bytes() for p in host.path("/etc").rglob("*") if p.is_file()}
    for argv, message in (
            (["wg", "acl", "rule", "add", "wg0", "allow", "kids", "nas"], "'kids' is no group"),
            (["wg", "acl", "rule", "add", "wg0", "allow", "any", "nas", "--port", "99999"],
             "--port: port 99999 is outside 1-65535"),
            (["wg", "acl", "group", "add", "wg0", "kids", "carol"], "no peer named 'carol'"),
            (["wg", "acl", "test", "add", "wg0", "alice nas deny"], "is not 'SRC -> DST"),
            (["wg", "acl", "explain", "wg0", "alice", "nas", "445/sctp"], "is not PORT")):
        assert cli_main(["--root", root, *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in host.path("/etc").rglob("*") if p.is_file()} == before


def test_show_and_explain_on_the_command_line(host: Host,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = str(host.root)
    assert cli_main(["--root", root, "wg", "acl", "group", "add", "wg0", "kids", "alice"]) == 0
    assert cli_main(["--root", root, "wg", "acl", "rule", "add", "wg0", "deny", "kids",
                     "nas", "--port", "445/tcp"]) == 0
    assert cli_main(["--root", root, "wg", "acl", "test", "add", "wg0",
                     "kids -> nas:445/tcp deny"]) == 0
    capsys.readouterr()
    assert cli_main(["--root", root, "wg", "acl", "show", "wg0", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["rules"] == [{"number": 1, "verdict": "deny", "from": "kids", "to": "nas",
                               "port": "445/tcp", "packets": None, "bytes": None}]
    assert shown["tests"][0]["passes"] is True
    assert shown["groups"] == {"kids": ["alice"]}
    assert cli_main(["--root", root, "wg", "acl", "explain", "wg0", "alice", "nas:445"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "10.66.0.2 -> 10.66.0.4: deny by rule 1 (deny kids -> nas 445/tcp)",
        "fd66::2 -> fd66::4: deny by rule 1 (deny kids -> nas 445/tcp)"]
    assert cli_main(["--root", root, "wg", "acl", "test", "wg0"]) == 0
    assert "1 of 1 tests pass" in capsys.readouterr().out


def test_the_export_carries_the_rules_and_prometheus_their_counters(host: Host) -> None:
    from tests.schema import check_export
    from zsn.exporter import document
    from zsn.exporter.prometheus import render
    from zsn.wireguard import export

    acl.plan_group_add(host, "wg0", "kids", ["alice", "bob"]).apply()
    acl.plan_rule_add(host, "wg0", "deny", "kids", "nas", "445/tcp").apply()
    acl.plan_test_add(host, "wg0", "kids -> nas:445/tcp deny").apply()
    check_export(json.loads(document.to_json(document.collect(host, ["wireguard"]))))
    data = export.collect(host)
    [rules] = data["access_rules"]
    assert rules["interface"] == "wg0" and rules["loaded"] is False
    assert rules["rules"][0] == {"number": 1, "verdict": "deny", "from": "kids", "to": "nas",
                                 "port": "445/tcp", "packets": None, "bytes": None}
    # Counters as the kernel would give them: each rule by number, and the default.
    rules["rules"][0].update(packets=12, bytes=720)
    rules["default"].update(packets=3, bytes=180)
    rules["loaded"] = True
    text = render(family for family in export.prometheus(data)
                  if family.name.startswith("zsn_wireguard_acl"))
    assert 'zsn_wireguard_acl_rule_packets_total{interface="wg0",rule="1"} 12' in text
    assert 'zsn_wireguard_acl_rule_bytes_total{interface="wg0",rule="default"} 180' in text
    assert 'zsn_wireguard_acl_loaded{interface="wg0"} 1' in text
    assert 'zsn_wireguard_acl_tests_failing{interface="wg0"} 0' in text


def test_lint_says_when_the_policy_cannot_load_or_fails_its_tests(host: Host) -> None:
    from zsn.wireguard import lint

    def found() -> list[tuple[str, bool]]:
        return [(f.id, f.fix_plan is not None) for f in lint.lint(host)
                if f.id.startswith("WG01") and f.id >= "WG015"]

    acl.plan_group_add(host, "wg0", "kids", ["alice"]).apply()
    acl.plan_rule_add(host, "wg0", "deny", "kids", "nas", "445/tcp").apply()
    acl.plan_test_add(host, "wg0", "kids -> nas:445/tcp deny").apply()
    assert found() == []
    path = host.path("/etc/wireguard/acl/wg0.acl")
    written = path.read_text()
    path.write_text(written.replace("Rule = deny kids -> nas 445/tcp\n", ""))
    # The test fails now, and the table a boot loads is not the file's any more.
    assert sorted(found()) == [("WG017", True), ("WG018", False)]
    path.write_text(written.replace("Default = allow", "Default = perhaps"))
    assert found() == [("WG015", False)]
    path.write_text(written)
    host.path("/etc/wireguard/acl/wg0.nft.json").unlink()
    [(rule, fixable)] = found()
    assert (rule, fixable) == ("WG017", True)
    [finding] = [f for f in lint.lint(host) if f.id == "WG017"]
    assert finding.fix == "zsn wg acl load wg0" and finding.fix_plan is not None
    finding.fix_plan().apply()
    assert found() == []


def _spoiled_policy(host: Host, case: str) -> Path:
    """The policy file of wg0 where someone else could have put it (`case`)."""
    acl.plan_group_add(host, "wg0", "kids", ["alice"]).apply()
    folder = host.path("/etc/wireguard/acl")
    path = folder / "wg0.acl"
    if case == "folder writable by everyone":
        folder.chmod(0o777)
        return folder
    if case == "file of another user":
        os.chown(path, 65534, 65534)
        return path
    planted = host.path("/srv-planted.acl")
    path.rename(planted)
    path.symlink_to("/srv-planted.acl")
    return path


@pytest.mark.parametrize("case", ["folder writable by everyone", "file of another user",
                                  "file behind a link"])
def test_a_policy_others_could_have_written_is_neither_read_nor_rewritten(
        host: Host, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    spoiled = _spoiled_policy(host, case)
    before = {path: (path.lstat().st_mode, path.read_bytes() if path.is_file() else None)
              for path in host.path("/etc/wireguard/acl").iterdir()}
    with pytest.raises(UnsafeStateError, match=f"^{spoiled}: "):
        policy.read_file(host, "wg0")
    with pytest.raises(UnsafeStateError):
        acl.plan_group_add(host, "wg0", "media", ["bob"])
    assert cli_main(["--root", str(host.root), "wg", "acl", "group", "add", "wg0", "media",
                     "bob"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert str(spoiled) in line
    assert {path: (path.lstat().st_mode, path.read_bytes() if path.is_file() else None)
            for path in host.path("/etc/wireguard/acl").iterdir()} == before
