"""WireGuard access rules at scale (issue 35's speed goals), as figures.

1. A running wireguard-go interface with 1,000 peers in 10 groups of 100, and 20 rules:
   - applying the policy: the plan (config and policy read, checked, its tests run,
     compiled) and its application (the policy file and the table a boot loads
     written, the whole table replaced in the kernel in one transaction); goal <= 1 s;
   - adding one peer to a group, plan and application (the policy file, the boot file,
     the set element in the kernel); goal <= 50 ms;
   - the number of nftables rules in the kernel for the same 20 rules with 10, 100 and
     1,000 peers in the groups: it must not change.
2. Forwarding throughput between two WireGuard clients through the hub (iperf3, TCP,
   both clients in their own namespace, the hub in a third), with the 1,000-peer
   policy loaded (the flow allowed by the last rule) and without any table, in
   alternating rounds of the same run; goal >= 0.95x.

Run as root from the repository root: python3 bench/wireguard_acl.py [--runs 20]
[--rounds 5] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _lab import Stats, big_interface, isolate, require

from zsn.system.host import Host
from zsn.wireguard import acl, acl_table
from zsn.wireguard.policy import Group, Policy, parse_rule, parse_test_text, peers_of
from zsn.wireguard.server import ServerConfig

INTERFACE = "zbnacl0"
PEERS = 1000
GROUPS = 10


def policy_of(groups: int, size: int, shift: int = 0) -> Policy:
    """`groups` groups of `size` of the bench's peers, 20 rules (ports, denies, allows)
    and two tests; `shift` rotates the rules, so two policies differ in every rule."""
    named = [Group(f"g{number}", tuple(f"peer-{number * size + index:05d}"
                                       for index in range(size)))
             for number in range(groups)]
    rules = []
    for number in range(20):
        source, destination = f"g{number % groups}", f"g{(number + 3 + shift) % groups}"
        verdict = "deny" if number % 3 == 0 else "allow"
        port = ("445/tcp", "53", None, "22/tcp")[number % 4]
        rules.append(parse_rule(verdict, source, destination, port))
    rules = rules[shift:] + rules[:shift]
    tests = (parse_test_text("peer-00000 -> 10.64.255.1 deny"),
             parse_test_text("any -> 10.64.255.9:8080 deny"))
    return Policy(INTERFACE, "deny", tuple(named), tuple(rules), tests)


def timed(action: object) -> tuple[float, float]:
    """(plan seconds, apply seconds) of a plan builder."""
    started = time.perf_counter()
    plan = action()  # type: ignore[operator]
    planned = time.perf_counter()
    plan.apply()
    return planned - started, time.perf_counter() - planned


def kernel_rules() -> tuple[int, int]:
    """(nftables rules, set elements) of the bench's table, as the kernel lists them."""
    listing = subprocess.run(["nft", "-j", "list", "table", "inet", f"zsn_{INTERFACE}"],
                             capture_output=True, text=True, check=True).stdout
    objects = json.loads(listing)["nftables"]
    rules = sum(1 for item in objects if "rule" in item)
    elements = sum(len(item["set"].get("elem", [])) for item in objects if "set" in item)
    return rules, elements


def at_scale(runs: int) -> None:
    big_interface(INTERFACE, PEERS)
    host = Host.at("/")
    print(f"policy: {GROUPS} groups of {PEERS // GROUPS} peers, 20 rules, default deny, "
          "2 tests")
    plans, applies, totals = [], [], []
    for run in range(runs + 1):
        policy = policy_of(GROUPS, PEERS // GROUPS, shift=run % 2)
        plan_s, apply_s = timed(lambda policy=policy: acl.plan_policy(host, INTERFACE,
                                                                        policy))
        if run:  # the first makes the files and the folder
            plans.append(plan_s)
            applies.append(apply_s)
            totals.append(plan_s + apply_s)
        live = acl_table.read_live(INTERFACE)
        assert live is not None
        assert live.spec == acl_table.compile_table(policy, peers_of(
            host, INTERFACE, ServerConfig.load(host, INTERFACE).config))
    print(f"apply the policy (whole table replaced)  plan   {Stats.of(plans).ms()}")
    print(f"                                         apply  {Stats.of(applies).ms()}")
    print(f"                                         total  {Stats.of(totals).ms()}"
          "   goal <= 1000 ms")
    adds, add_plans, add_applies, removes = [], [], [], []
    for run in range(runs):
        peer = f"peer-{950 + run:05d}"  # from g9 into g0 as well
        plan_s, apply_s = timed(lambda peer=peer: acl.plan_group_add(host, INTERFACE, "g0",
                                                                     [peer]))
        adds.append(plan_s + apply_s)
        add_plans.append(plan_s)
        add_applies.append(apply_s)
        plan_s, apply_s = timed(lambda peer=peer: acl.plan_group_remove(host, INTERFACE,
                                                                        "g0", [peer]))
        removes.append(plan_s + apply_s)
    print(f"add one peer to a group (plan + apply)          {Stats.of(adds).ms()}"
          "   goal <= 50 ms")
    print(f"                                         plan   {Stats.of(add_plans).ms()}")
    print(f"                                         apply  {Stats.of(add_applies).ms()}")
    print(f"take it out again                               {Stats.of(removes).ms()}")
    print("nftables rules in the kernel for the same 20 rules:")
    for size in (1, 10, 100):
        acl.plan_policy(host, INTERFACE, policy_of(GROUPS, size)).apply()
        rules, elements = kernel_rules()
        print(f"  {GROUPS * size:5d} peers in the groups: {rules} rules, {elements} set "
              "elements")


def throughput(rounds: int, seconds: int) -> None:
    from tests.lab.acl_lab import built_lab

    with tempfile.TemporaryDirectory(prefix="zsn-bench-") as folder, \
            built_lab(Path(folder), ["k1", "nas"], site=None, extra_peers=PEERS) as lab:
        w = lab.iface
        for number in range(GROUPS):
            members = [f"p{number * 100 + index:04d}" for index in range(100)]
            lab.zsn("wg", "acl", "group", "add", w, f"g{number}", *members)
        for number in range(19):
            lab.zsn("wg", "acl", "rule", "add", w, "deny" if number % 3 == 0 else "allow",
                    f"g{number % GROUPS}", f"g{(number + 3) % GROUPS}",
                    *(("--port", "445/tcp") if number % 2 else ()))
        lab.zsn("wg", "acl", "rule", "add", w, "allow", "k1", "nas")
        lab.zsn("wg", "acl", "default", w, "deny")
        live = lab.live()
        assert live is not None
        print(f"hub policy: {sum(len(s.elements) for s in live.spec.sets)} set elements, "
              f"{len(live.spec.rules) + 2} nftables rules; the flow k1 -> nas is allowed "
              "by the last rule (20)")
        server = subprocess.Popen(["ip", "netns", "exec", lab.ns["nas"], "iperf3", "-s"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)  # the server binds; a first client run would say if it did not
            results: dict[str, list[float]] = {"with the policy": [], "without a table": []}
            for _ in range(rounds):
                for label in (("without a table", "with the policy") if _ % 2 else
                              ("with the policy", "without a table")):
                    table = f"zsn_{w}"
                    if label == "without a table":  # whether or not the last round had one
                        lab.hub("nft", "add", "table", "inet", table, ";", "delete", "table",
                                "inet", table)
                    else:
                        lab.zsn("wg", "acl", "load", w)
                    assert (lab.live() is not None) == (label == "with the policy")
                    results[label].append(_iperf(lab, seconds))
            lab.zsn("wg", "acl", "load", w)
        finally:
            server.terminate()
            server.wait(5)
        for label, values in results.items():
            print(f"{label:16s}  median {statistics.median(values):8.1f} Mbit/s   "
                  f"min {min(values):8.1f}   max {max(values):8.1f}   (n={len(values)})")
        ratio = statistics.median(results["with the policy"]) / \
            statistics.median(results["without a table"])
        print(f"ratio with/without: {ratio:.3f}x   goal >= 0.95x")


def _iperf(lab: object, seconds: int) -> float:
    from tests.lab.acl_lab import AclLab

    assert isinstance(lab, AclLab)
    target = lab.addresses["nas"][0]
    for _attempt in range(10):
        result = subprocess.run(["ip", "netns", "exec", lab.ns["k1"], "iperf3", "-c", target,
                                 "-t", str(seconds), "-J"], capture_output=True, text=True,
                                check=False, timeout=seconds + 30)
        if result.returncode == 0:
            report = json.loads(result.stdout)
            return float(report["end"]["sum_received"]["bits_per_second"]) / 1e6
        time.sleep(0.5)  # the server is still starting, or busy with the last run
    raise RuntimeError(f"iperf3 failed: {result.stdout[-500:]} {result.stderr[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    require(["wireguard-go", "wg", "wg-quick", "nft", "iperf3", "ip", "unshare", "mount"])
    isolate()
    sys.setrecursionlimit(10000)
    at_scale(args.runs)
    throughput(args.rounds, args.seconds)


if __name__ == "__main__":
    main()
