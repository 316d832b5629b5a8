"""What an interface's access rules are, read without changing anything: the policy
file (or the policy an interface without one starts from), the kernel's table and its
counters, and the policy's tests; what ``zsn wg acl show``, ``explain``, ``--export
wireguard``, ``zsn serve`` and the pane read. Loads no plan."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from zsn.errors import ParseError, ValidationError, ZsnError, about_input
from zsn.system import files, nftables
from zsn.system.host import Host
from zsn.wireguard import policy as acl_policy
from zsn.wireguard import settings
from zsn.wireguard.acl_table import (
    DEFAULT,
    REPLIES,
    LiveTable,
    compile_table,
    differences,
    read_live,
)
from zsn.wireguard.config import PEER_NAME_RE
from zsn.wireguard.policy import Policy, PolicyTest, Rule, peers_of, policy_path
from zsn.wireguard.server import ServerConfig

_C_RULE_RE = re.compile(r"^ip6?tables -A FORWARD -i %i -o (?P<out>\S+) -j ACCEPT$")


@dataclass
class PolicyFile:
    """An interface's policy file as read (or the policy it starts with)."""

    path: Path
    snapshot: files.FileSnapshot | None
    policy: Policy

    @property
    def exists(self) -> bool:
        return self.snapshot is not None

    @classmethod
    def load(cls, host: Host, server: ServerConfig) -> PolicyFile:
        path = policy_path(host, server.name)
        read = acl_policy.read_file(host, server.name)
        if read is None:
            return cls(path, None, initial_policy(host, server))
        return cls(path, *read)


def read_policy(host: Host, interface: str) -> Policy | None:
    """The policy file of `interface`, None when it has none."""
    read = acl_policy.read_file(host, interface)
    return read[1] if read is not None else None


def initial_policy(host: Host, server: ServerConfig) -> Policy:
    """What an interface without a policy file does today, as a policy: everything is
    allowed, and the forwarding zsn set up before (client-to-client, linked interfaces:
    FORWARD rules in PostUp) is written as rules, so it stays when the default becomes
    deny."""
    rules: list[Rule] = []
    interface = server.config.interface
    for entry in interface.entries_for("PostUp") if interface else []:
        match = _C_RULE_RE.match(entry.value.strip())
        if match is None:
            continue
        out = server.name if match.group("out") == "%i" else match.group("out")
        rule = Rule("allow", acl_policy.Selector("name", server.name),
                    acl_policy.Selector("name", out))
        if rule not in rules and PEER_NAME_RE.fullmatch(out):
            rules.append(rule)
    try:
        links = settings.load(host).get(server.name).links
    except ZsnError:
        links = []
    for other in links:
        rule = Rule("allow", acl_policy.Selector("name", other),
                    acl_policy.Selector("name", server.name))
        if rule not in rules:
            rules.append(rule)
    return Policy(server.name, rules=tuple(rules))



class TestState(NamedTuple):
    test: PolicyTest
    result: acl_policy.TestResult

    @property
    def failure(self) -> str | None:
        return self.result.failure


class PolicyView(NamedTuple):
    """An interface's policy with its state: what ``show`` prints and the pane draws."""

    policy: Policy
    exists: bool
    """False: the interface has no policy file (the policy shown is its initial one)."""
    live: LiveTable | None
    """The kernel's table, None when it has none (or the interface is down)."""
    live_problem: str | None
    """Why the kernel's table is not the policy's (None: it is, or nothing is loaded)."""
    tests: tuple[TestState, ...]
    groups_of: Mapping[str, tuple[str, ...]]
    """Each peer's groups, by peer name."""

    def counters(self, label: str) -> tuple[int, int] | None:
        return self.live.counters.get(label) if self.live is not None else None


def view(host: Host, interface: str) -> PolicyView:
    """The policy, the kernel's table and counters, and the tests' states."""
    server = ServerConfig.load(host, interface)
    stored = PolicyFile.load(host, server)
    policy = stored.policy
    peers = peers_of(host, server.name, server.config)
    states = [TestState(test, acl_policy.run_test(policy, peers, test, number))
              for number, test in enumerate(policy.tests, start=1)]
    live: LiveTable | None = None
    problem: str | None = None
    if nftables.available():
        try:
            live = read_live(server.name)
        except ParseError as exc:
            problem = str(exc)
        if problem is None and (live is not None or stored.exists) \
                and server.live() is not None:
            try:
                wanted = compile_table(policy, peers)
            except ValidationError as exc:
                problem = str(exc)
            else:
                found = differences(live.spec if live is not None else None, wanted)
                problem = "; ".join(found) if found else None
    groups_of = {name: policy.groups_of(name) for name in peers.peers}
    return PolicyView(policy, stored.exists, live, problem, tuple(states), groups_of)


def explain(host: Host, interface: str, source: str, destination: str,
            port: str | None) -> tuple[Policy, list[acl_policy.Decision]]:
    server = ServerConfig.load(host, interface)
    policy = PolicyFile.load(host, server).policy
    peers = peers_of(host, server.name, server.config)
    with about_input("source"):
        src = acl_policy.parse_selector(source)
    with about_input("destination"):
        if port is None:
            dst, port_ = acl_policy.parse_endpoint(destination)
        else:
            dst, port_ = acl_policy.parse_selector(destination), None
    with about_input("port"):
        if port is not None:
            port_ = acl_policy.parse_port(port, ("tcp",))
    return policy, acl_policy.explain(policy, peers, src, dst, port_)


def view_dict(view: PolicyView) -> dict[str, Any]:
    """The policy with its counters and tests' states, JSON-ready (`show --json` and
    ``--export wireguard``)."""
    policy = view.policy

    def counted(label: str) -> dict[str, int | None]:
        counters = view.counters(label)
        return {"packets": counters[0] if counters else None,
                "bytes": counters[1] if counters else None}

    return {
        "interface": policy.interface,
        "policy_file": view.exists,
        "loaded": view.live is not None,
        "problem": view.live_problem,
        "default": {"verdict": policy.default, **counted(DEFAULT)},
        "replies": counted(REPLIES),
        "groups": {group.name: list(group.members) for group in policy.groups},
        "rules": [{"number": number, "verdict": rule.verdict, "from": str(rule.source),
                   "to": str(rule.destination),
                   "port": str(rule.port) if rule.port else None, **counted(str(number))}
                  for number, rule in enumerate(policy.rules, start=1)],
        "tests": [{"number": number, "test": str(state.test), "passes": state.failure is None,
                   "failure": state.failure}
                  for number, state in enumerate(view.tests, start=1)],
    }
