"""An interface's access rules as the kernel holds them: one nftables table.

`compile_table` turns a `Policy` and what its names stand for (`Peers`) into a
`TableSpec`: a named set per group (and per peer a rule names), holding the peers'
allowed IPs, and one nftables rule per policy rule and IP version, referencing the
sets; so the number of rules follows the rules written, never the peers. The table
``inet zsn_IFACE`` holds one chain on the forward hook:

    iifname != IFACE oifname != IFACE accept      # not this interface's traffic
    ct state established,related counter accept   # replies of allowed flows
    <the rules, in order, each with a counter and its number as comment>
    counter accept|reject                          # the default

A deny rejects, so the sender learns at once: a TCP connection with a reset, anything
else with ICMP administratively prohibited (a deny without a port is two kernel rules
for that reason, one for TCP and one for the rest).
`render` makes the commands that replace the table in one transaction (``add
table``, ``delete table``, ``add table`` and its contents: it works whether the
table exists or not); `decode` reads ``nft -j list table`` back into a `TableSpec`
and the rules' counters, refusing anything zsn does not write.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from zsn.errors import ParseError, ValidationError
from zsn.system import nftables
from zsn.wireguard import policy as acl_policy
from zsn.wireguard.config import WgConfig
from zsn.wireguard.policy import IPNetwork, Peers, Policy, Selector, Verdict

FAMILY = "inet"
CHAIN = "forward"
REJECT = {"type": "icmpx", "expr": "admin-prohibited"}
RESET = {"type": "tcp reset"}
OTHER = "other"
REPLIES = "replies"
DEFAULT = "default"
_TABLE_INTERFACE_RE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_SET_NAME_RE = re.compile(r"(?:g_[A-Za-z][A-Za-z0-9_-]{0,31}|[pb][0-9]{1,4})_[46]")
_LABEL_RE = re.compile(r"[1-9][0-9]{0,3}|default")
MatchKind = Literal["any", "net", "set", "iface"]
Family = Literal[4, 6]


POST_UP = f"nft -j -f {acl_policy.ACL_DIR}/%i.nft.json"
"""Loads the compiled table when the interface comes up (wg-quick substitutes ``%i``)."""
POST_DOWN = "nft add table inet zsn_%i \\; delete table inet zsn_%i"
"""Removes it when the interface goes down, whether or not it is there (one transaction)."""


def hooks_missing(config: WgConfig) -> bool:
    interface = config.interface
    if interface is None:
        return True
    ups = {entry.value.strip() for entry in interface.entries_for("PostUp")}
    downs = {entry.value.strip() for entry in interface.entries_for("PostDown")}
    return POST_UP not in ups or POST_DOWN not in downs


def table_name(interface: str) -> str:
    """``zsn_IFACE``: refused for interface names nft would not read as a name."""
    if not _TABLE_INTERFACE_RE.fullmatch(interface):
        raise ValidationError(f"interface name {interface!r} cannot name an nftables table: "
                              "access rules need letters, digits, '_', '.' or '-' only")
    return f"zsn_{interface}"


class Match(NamedTuple):
    """One end of a kernel rule."""

    kind: MatchKind
    value: str = ""
    """A network's text, a set's name or an interface's name."""


class TableRule(NamedTuple):
    label: str
    """The policy rule's number, or ``default``."""
    family: Family | None
    source: Match
    destination: Match
    port: int | None
    protocols: tuple[str, ...]
    """The protocols of `port`; without a port, empty (every packet) or ``("tcp",)``:
    the TCP part of a deny, rejected with a reset."""
    verdict: Verdict


class TableSet(NamedTuple):
    name: str
    family: Family
    elements: tuple[str, ...]
    """Networks, in `normalized` order."""


class TableSpec(NamedTuple):
    """What the table of one interface holds (its counters aside)."""

    interface: str
    sets: tuple[TableSet, ...]
    rules: tuple[TableRule, ...]

    @property
    def table(self) -> str:
        return table_name(self.interface)

    def same_shape(self, other: TableSpec) -> bool:
        """The same rules and set names: only set elements differ (a live update)."""
        return self.interface == other.interface and self.rules == other.rules and \
            [(s.name, s.family) for s in self.sets] == [(s.name, s.family) for s in other.sets]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for an undo record (`from_dict` checks it again)."""
        return {
            "interface": self.interface,
            "sets": [{"name": s.name, "family": s.family, "elements": list(s.elements)}
                     for s in self.sets],
            "rules": [{"label": r.label, "family": r.family,
                       "source": [r.source.kind, r.source.value],
                       "destination": [r.destination.kind, r.destination.value],
                       "port": r.port, "protocols": list(r.protocols), "verdict": r.verdict}
                      for r in self.rules],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableSpec:
        """A spec from a record; `ValidationError` for anything zsn would not write."""
        try:
            interface = _text(data["interface"])
            table_name(interface)
            sets = tuple(_set_from(item) for item in _items(data["sets"]))
            rules = tuple(_rule_from(item, interface) for item in _items(data["rules"]))
        except (KeyError, TypeError) as exc:
            raise ValidationError(f"not a table of access rules: {exc}") from None
        return cls(interface, sets, rules)


def _items(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValidationError("expected a list of objects")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"expected text, not {type(value).__name__}")
    return value


def _family_of(value: object) -> Family | None:
    if value is None:
        return None
    if value == 4 and isinstance(value, int) and not isinstance(value, bool):
        return 4
    if value == 6 and isinstance(value, int) and not isinstance(value, bool):
        return 6
    raise ValidationError(f"IP version {value!r}")


def _set_from(item: Mapping[str, Any]) -> TableSet:
    name = _text(item["name"])
    family = _family_of(item["family"])
    if family is None or not _SET_NAME_RE.fullmatch(name) or not name.endswith(f"_{family}"):
        raise ValidationError(f"set {name!r} of IP version {family}")
    elements = [parse_span(_text(each), family) for each in item["elements"]]
    return TableSet(name, family, normalized(elements))


def _match_from(value: object, family: Family | None, interface: str) -> Match:
    if not isinstance(value, list) or len(value) != 2:
        raise ValidationError("a rule's end is [kind, value]")
    kind, text = _text(value[0]), _text(value[1])
    if kind == "any" and not text:
        return Match("any")
    if kind == "net" and family is not None:
        return Match("net", span_text(parse_span(text, family)))
    if kind == "set" and family is not None and _SET_NAME_RE.fullmatch(text) \
            and text.endswith(f"_{family}"):
        return Match("set", text)
    if kind == "iface":
        table_name(text)
        return Match("iface", text)
    raise ValidationError(f"a rule's end {kind!r} {text[:40]!r}")


def _rule_from(item: Mapping[str, Any], interface: str) -> TableRule:
    label = _text(item["label"])
    if not _LABEL_RE.fullmatch(label):
        raise ValidationError(f"rule label {label[:20]!r}")
    family = _family_of(item["family"])
    port = item["port"]
    protocols = tuple(_text(each) for each in item["protocols"])
    if port is not None and (not isinstance(port, int) or isinstance(port, bool)
                             or not 1 <= port <= 65535):
        raise ValidationError(f"port {port!r}")
    if protocols not in (((), ("tcp",)) if port is None
                         else (("tcp",), ("udp",), ("tcp", "udp"))):
        raise ValidationError(f"protocols {protocols!r}")
    verdict = acl_policy.check_verdict(_text(item["verdict"]))
    return TableRule(label, family, _match_from(item["source"], family, interface),
                     _match_from(item["destination"], family, interface), port, protocols,
                     verdict)


# -- compile -----------------------------------------------------------------------


Span = tuple[int, int, int]
"""A network as (IP version, its first address as a number, prefix length)."""
_FAMILIES = {4: (socket.AF_INET, 32), 6: (socket.AF_INET6, 128)}


def span_of(network: IPNetwork) -> Span:
    return network.version, int(network.network_address), network.prefixlen


def span_text(span: Span) -> str:
    """The element's text, as nft and inet_ntop(3) write it (a host without a prefix)."""
    version, first, prefix = span
    family, bits = _FAMILIES[version]
    address = socket.inet_ntop(family, first.to_bytes(bits // 8, "big"))
    return address if prefix == bits else f"{address}/{prefix}"


def parse_span(text: str, family: Family, prefix: int | None = None) -> Span:
    """An address (or ``ADDR/LEN``) of IP version `family` read with inet_pton(3): a
    listing holds thousands, and this costs a tenth of ipaddress'."""
    address, slash, length = text.partition("/")
    if slash:
        if prefix is not None or not length.isdigit() or len(length) > 3:
            raise ValidationError(f"{text[:60]!r} is not a network")
        prefix = int(length)
    kind, bits = _FAMILIES[family]
    try:
        first = int.from_bytes(socket.inet_pton(kind, address), "big")
    except (OSError, ValueError):
        raise ValidationError(f"{text[:60]!r} is not an IPv{family} address") from None
    prefix = bits if prefix is None else prefix
    if not 0 <= prefix <= bits or first & ((1 << (bits - prefix)) - 1):
        raise ValidationError(f"{text[:60]!r} is not a network (prefix, host bits)")
    return family, first, prefix


def normalized(spans: Iterable[Span]) -> tuple[str, ...]:
    """Set elements: no duplicates, none inside another (nft refuses overlapping
    intervals), in address order, as text. Compared as numbers: a table holds
    thousands, and ipaddress' own comparisons cost a hundred times more."""
    kept: list[tuple[int, int]] = []
    texts: list[str] = []
    for span in sorted(set(spans)):
        version, first, prefix = span
        last = first + (1 << (_FAMILIES[version][1] - prefix)) - 1
        if kept and kept[-1][0] == version and last <= kept[-1][1]:
            continue  # inside the one before (sorted: it starts no later, and is wider)
        kept.append((version, last))
        texts.append(span_text(span))
    return tuple(texts)


def _split(networks: Iterable[IPNetwork]) -> dict[Family, list[Span]]:
    by_family: dict[Family, list[Span]] = {4: [], 6: []}
    for network in networks:
        by_family[4 if network.version == 4 else 6].append(span_of(network))
    return by_family


def compile_table(policy: Policy, peers: Peers) -> TableSpec:
    """The table that enforces `policy` on the interface `peers` describes."""
    sets: dict[str, dict[Family, list[Span]]] = {}
    for group in policy.groups:
        members: list[IPNetwork] = []
        for member in group.members:
            members.extend(peers.peers.get(member, ()))
        sets[f"g_{group.name}"] = _split(members)
    named: dict[Selector, str] = {}

    def end(selector: Selector) -> tuple[MatchKind, str, Family | None]:
        resolved = peers.resolve(selector, policy)
        if resolved.kind == "any":
            return "any", "", None
        if resolved.kind == "interface":
            return "iface", resolved.name, None
        if resolved.kind == "network":
            network = resolved.networks[0]
            return "net", span_text(span_of(network)), 4 if network.version == 4 else 6
        if resolved.kind == "group":
            return "set", f"g_{resolved.name}", None
        if selector not in named:
            prefix = "b" if resolved.kind == "behind" else "p"
            named[selector] = f"{prefix}{len(named) + 1}"
            sets[named[selector]] = _split(resolved.networks)
        return "set", named[selector], None

    rules: list[TableRule] = []
    for number, rule in enumerate(policy.rules, start=1):
        source, destination = end(rule.source), end(rule.destination)
        fixed = {source[2], destination[2]} - {None}
        families: list[Family | None]
        if fixed:
            families = [fixed.pop()]
        elif "set" in (source[0], destination[0]):
            families = [4, 6]
        else:
            families = [None]
        port = rule.port.number if rule.port else None
        protocols = tuple(rule.port.protocols) if rule.port else ()
        for family in families:
            for part in _parts(protocols, port, rule.verdict):
                rules.append(TableRule(str(number), family, _end(source, family),
                                       _end(destination, family), port, part, rule.verdict))
    rules.extend(TableRule(DEFAULT, None, Match("any"), Match("any"), None, part,
                           policy.default) for part in _parts((), None, policy.default))
    table_sets = tuple(TableSet(f"{name}_{family}", family, normalized(by_family[family]))
                       for name, by_family in sets.items() for family in (4, 6))
    return TableSpec(policy.interface, table_sets, tuple(rules))


def _parts(protocols: tuple[str, ...], port: int | None,
           verdict: Verdict) -> list[tuple[str, ...]]:
    """The protocols of each kernel rule a policy rule becomes: a deny rejects TCP with a
    reset (a connection fails at once), the rest with an ICMP error."""
    if verdict == "allow":
        return [protocols]
    if port is None:
        return [("tcp",), ()]
    return [(protocol,) for protocol in protocols]


def _end(end: tuple[MatchKind, str, Family | None], family: Family | None) -> Match:
    kind, value, _ = end
    return Match(kind, f"{value}_{family}" if kind == "set" else value)


# -- render: the commands that replace the table ------------------------------------

_PROTOCOL = {4: "ip", 6: "ip6"}


def _address(text: str) -> object:
    """A network as nft's JSON has it, from its `normalized` text (a host without a
    prefix): no parse, a table holds thousands."""
    address, slash, length = text.partition("/")
    return {"prefix": {"addr": address, "len": int(length)}} if slash else address


def _match_json(end: Match, family: Family | None, field: str) -> list[dict[str, Any]]:
    if end.kind == "any":
        return []
    if end.kind == "iface":
        key = "iifname" if field == "saddr" else "oifname"
        return [{"match": {"op": "==", "left": {"meta": {"key": key}}, "right": end.value}}]
    assert family is not None
    right = "@" + end.value if end.kind == "set" else _address(end.value)
    return [{"match": {"op": "==", "left": {"payload": {"protocol": _PROTOCOL[family],
                                                        "field": field}},
                       "right": right}}]


def _rule_json(rule: TableRule) -> list[dict[str, Any]]:
    expr = [*_match_json(rule.source, rule.family, "saddr"),
            *_match_json(rule.destination, rule.family, "daddr")]
    if rule.port is None and rule.protocols:
        expr.append({"match": {"op": "==", "left": {"meta": {"key": "l4proto"}},
                               "right": rule.protocols[0]}})
    if rule.port is not None:
        if len(rule.protocols) == 1:  # as nft lists it back: `tcp dport 443`
            expr.append({"match": {"op": "==", "left": {"payload": {
                "protocol": rule.protocols[0], "field": "dport"}}, "right": rule.port}})
        else:
            expr.append({"match": {"op": "==", "left": {"meta": {"key": "l4proto"}},
                                   "right": {"set": list(rule.protocols)}}})
            expr.append({"match": {"op": "==", "left": {"payload": {
                "protocol": "th", "field": "dport"}}, "right": rule.port}})
    expr.append({"counter": None})
    expr.append(_verdict_json(rule))
    return expr


def _verdict_json(rule: TableRule) -> dict[str, Any]:
    if rule.verdict == "allow":
        return {"accept": None}
    return {"reject": dict(RESET if rule.protocols == ("tcp",) else REJECT)}


def _table(spec_interface: str) -> dict[str, Any]:
    return {"table": {"family": FAMILY, "name": table_name(spec_interface)}}


def removal(interface: str) -> list[dict[str, Any]]:
    """The commands that remove the table, whether it exists or not."""
    return [{"add": _table(interface)}, {"delete": _table(interface)}]


def render(spec: TableSpec) -> list[dict[str, Any]]:
    """The commands that make the table exactly `spec` in one transaction."""
    table = table_name(spec.interface)
    base = {"family": FAMILY, "table": table}
    commands: list[dict[str, Any]] = [*removal(spec.interface), {"add": _table(spec.interface)}]
    for each in spec.sets:
        body: dict[str, Any] = {**base, "name": each.name,
                                "type": "ipv4_addr" if each.family == 4 else "ipv6_addr",
                                "flags": ["interval"]}
        if each.elements:
            body["elem"] = [_address(element) for element in each.elements]
        commands.append({"add": {"set": body}})
    commands.append({"add": {"chain": {**base, "name": CHAIN, "type": "filter",
                                       "hook": "forward", "prio": 0, "policy": "accept"}}})
    rule = {**base, "chain": CHAIN}
    commands.append({"add": {"rule": {**rule, "comment": OTHER, "expr": _other_expr(
        spec.interface)}}})
    commands.append({"add": {"rule": {**rule, "comment": REPLIES, "expr": _replies_expr()}}})
    for each_rule in spec.rules:
        commands.append({"add": {"rule": {**rule, "comment": each_rule.label,
                                          "expr": _rule_json(each_rule)}}})
    return commands


def _other_expr(interface: str) -> list[dict[str, Any]]:
    return [{"match": {"op": "!=", "left": {"meta": {"key": "iifname"}}, "right": interface}},
            {"match": {"op": "!=", "left": {"meta": {"key": "oifname"}}, "right": interface}},
            {"accept": None}]


def _replies_expr() -> list[dict[str, Any]]:
    return [{"match": {"op": "in", "left": {"ct": {"key": "state"}},
                       "right": ["established", "related"]}},
            {"counter": None}, {"accept": None}]


def element_updates(before: TableSpec, after: TableSpec) -> list[dict[str, Any]]:
    """The commands that take `before`'s sets to `after`'s (same shape), deletions first."""
    table = table_name(after.interface)
    deletes: list[dict[str, Any]] = []
    adds: list[dict[str, Any]] = []
    for old, new in zip(before.sets, after.sets, strict=True):
        kept, had = set(new.elements), set(old.elements)
        gone = [e for e in old.elements if e not in kept]
        added = [e for e in new.elements if e not in had]
        body = {"family": FAMILY, "table": table, "name": new.name}
        if gone:
            deletes.append({"delete": {"element": {**body, "elem": [_address(e)
                                                                     for e in gone]}}})
        if added:
            adds.append({"add": {"element": {**body, "elem": [_address(e) for e in added]}}})
    return deletes + adds


def file_text(spec: TableSpec) -> str:
    """The commands as the file a boot loads (``nft -j -f FILE``): one per line."""
    import json

    lines = [json.dumps(command, separators=(", ", ": ")) for command in render(spec)]
    return '{"nftables": [\n' + ",\n".join(lines) + "\n]}\n"


# -- decode: the table read back ----------------------------------------------------


class LiveTable(NamedTuple):
    spec: TableSpec
    counters: Mapping[str, tuple[int, int]]
    """(packets, bytes) by rule label (``1`` ..., ``default``, ``replies``); a rule
    written as two kernel rules (IPv4 and IPv6) counts both."""


def read_live(interface: str) -> LiveTable | None:
    """The interface's table as the kernel has it (None: there is none); `ParseError`
    when it is not as zsn writes it."""
    objects = nftables.list_table(FAMILY, table_name(interface))
    return None if objects is None else decode(objects, interface)


def decode(objects: Sequence[nftables.NftObject], interface: str) -> LiveTable:
    """`objects` of ``nft -j list table inet zsn_IFACE`` as zsn wrote them, or `ParseError`
    saying what is not (a table changed by hand)."""
    source = f"nft table {FAMILY} {table_name(interface)}"
    sets: list[TableSet] = []
    rules: list[TableRule] = []
    counters: dict[str, tuple[int, int]] = {}
    chains = 0
    fixed: list[str] = []
    try:
        for kind, body in objects:
            if kind in ("metainfo", "table"):
                continue
            if kind == "set":
                sets.append(_decode_set(body))
            elif kind == "chain":
                _check_chain(body)
                chains += 1
            elif kind == "rule":
                label = body.get("comment")
                if label in (OTHER, REPLIES) and not rules:
                    counters[str(label)] = _decode_fixed(body, str(label), interface)
                    fixed.append(str(label))
                    continue
                rule, counted = _decode_rule(body)
                rules.append(rule)
                packets, octets = counters.get(rule.label, (0, 0))
                counters[rule.label] = (packets + counted[0], octets + counted[1])
            else:
                raise ValidationError(f"a {kind} zsn does not make")
        if chains != 1 or fixed != [OTHER, REPLIES]:
            raise ValidationError("not zsn's one chain with its first two rules")
        if not rules or rules[-1].label != DEFAULT:
            raise ValidationError("no default rule at the end")
    except ValidationError as exc:
        raise ParseError(f"not as zsn writes it: {exc}", None, source) from None
    return LiveTable(TableSpec(interface, tuple(sets), tuple(rules)), counters)


def _decode_set(body: Mapping[str, Any]) -> TableSet:
    name = body.get("name")
    kind = body.get("type")
    if not isinstance(name, str) or not _SET_NAME_RE.fullmatch(name):
        raise ValidationError(f"set {str(name)[:40]!r}")
    family: Family = 4 if name.endswith("_4") else 6
    if kind != ("ipv4_addr" if family == 4 else "ipv6_addr") or body.get("flags") != ["interval"]:
        raise ValidationError(f"set {name}: type {kind!r}, flags {body.get('flags')!r}")
    elements = body.get("elem", [])
    if not isinstance(elements, list):
        raise ValidationError(f"set {name}: elements are not a list")
    spans: list[Span] = []
    for element in elements:
        spans.extend(_decode_element(element, family))
    return TableSet(name, family, normalized(spans))


def _decode_element(element: object, family: Family) -> list[Span]:
    if isinstance(element, dict) and set(element) == {"elem"} \
            and isinstance(element["elem"], dict):
        element = element["elem"].get("val")
    if isinstance(element, str):
        return [parse_span(element, family)]
    if isinstance(element, dict) and set(element) == {"prefix"} \
            and isinstance(element["prefix"], dict):
        prefix = element["prefix"]
        address, length = prefix.get("addr"), prefix.get("len")
        if isinstance(address, str) and isinstance(length, int) \
                and not isinstance(length, bool):
            return [parse_span(address, family, length)]
    if isinstance(element, dict) and set(element) == {"range"} \
            and isinstance(element["range"], list) and len(element["range"]) == 2 \
            and all(isinstance(each, str) for each in element["range"]):
        (_, first, _), (_, last, _) = (parse_span(each, family) for each in element["range"])
        if last < first:
            raise ValidationError(f"range {element['range']!r}")
        address = ipaddress.IPv4Address if family == 4 else ipaddress.IPv6Address
        return [span_of(network) for network in
                ipaddress.summarize_address_range(address(first), address(last))]
    raise ValidationError(f"set element {str(element)[:60]!r}")


def _check_chain(body: Mapping[str, Any]) -> None:
    wanted = {"name": CHAIN, "type": "filter", "hook": "forward", "prio": 0,
              "policy": "accept"}
    if any(body.get(key) != value for key, value in wanted.items()):
        raise ValidationError(f"chain {str(body.get('name'))[:40]!r} is not zsn's forward "
                              "chain")


def _counter(expr: object) -> tuple[int, int]:
    if isinstance(expr, dict) and set(expr) == {"counter"} and isinstance(expr["counter"],
                                                                          dict):
        packets, octets = expr["counter"].get("packets"), expr["counter"].get("bytes")
        if isinstance(packets, int) and isinstance(octets, int) and packets >= 0 \
                and octets >= 0 and not isinstance(packets, bool):
            return packets, octets
    raise ValidationError("a rule without its counter")


def _without_counters(expr: list[Any]) -> list[Any]:
    return [{"counter": None} if isinstance(each, dict) and "counter" in each else each
            for each in expr]


def _decode_fixed(body: Mapping[str, Any], label: str, interface: str) -> tuple[int, int]:
    expr = body.get("expr")
    wanted = _other_expr(interface) if label == OTHER else _replies_expr()
    if not isinstance(expr, list) or _without_counters(expr) != wanted:
        raise ValidationError(f"the {label} rule was changed")
    return _counter(expr[1]) if label == REPLIES else (0, 0)


def _decode_rule(body: Mapping[str, Any]) -> tuple[TableRule, tuple[int, int]]:
    label = body.get("comment")
    expr = body.get("expr")
    if not isinstance(label, str) or not _LABEL_RE.fullmatch(label) \
            or not isinstance(expr, list) or len(expr) < 2:
        raise ValidationError(f"a rule zsn did not write ({str(label)[:20]!r})")
    verdict_expr = expr[-1]
    verdict: Verdict
    if verdict_expr == {"accept": None}:
        verdict = "allow"
    elif verdict_expr in ({"reject": REJECT}, {"reject": RESET}):
        verdict = "deny"
    else:
        raise ValidationError(f"rule {label}: verdict {str(verdict_expr)[:60]}")
    counted = _counter(expr[-2])
    ends: dict[str, Match] = {"saddr": Match("any"), "daddr": Match("any")}
    family: Family | None = None
    port: int | None = None
    protocols: tuple[str, ...] = ()
    for item in expr[:-2]:
        match = item.get("match") if isinstance(item, dict) and len(item) == 1 else None
        if not isinstance(match, dict) or match.get("op") not in ("==", None):
            raise ValidationError(f"rule {label}: {str(item)[:60]}")
        left, right = match.get("left"), match.get("right")
        if left == {"meta": {"key": "iifname"}} and isinstance(right, str):
            table_name(right)
            ends["saddr"] = Match("iface", right)
        elif left == {"meta": {"key": "oifname"}} and isinstance(right, str):
            table_name(right)
            ends["daddr"] = Match("iface", right)
        elif left == {"meta": {"key": "l4proto"}} and right == {"set": ["tcp", "udp"]}:
            protocols = ("tcp", "udp")
        elif left == {"meta": {"key": "l4proto"}} and right == "tcp" and not protocols:
            protocols = ("tcp",)
        elif isinstance(left, dict) and isinstance(left.get("payload"), dict):
            payload = left["payload"]
            protocol, field = payload.get("protocol"), payload.get("field")
            if field == "dport" and protocol in ("th", "tcp", "udp") \
                    and isinstance(right, int) and not isinstance(right, bool) \
                    and 1 <= right <= 65535:
                port = right
                if protocol != "th":
                    protocols = (str(protocol),)
            elif protocol in ("ip", "ip6") and field in ("saddr", "daddr"):
                family = 4 if protocol == "ip" else 6
                ends[str(field)] = _address_end(right, family)
            else:
                raise ValidationError(f"rule {label}: {str(left)[:60]}")
        else:
            raise ValidationError(f"rule {label}: {str(item)[:60]}")
    rule = TableRule(label, family, ends["saddr"], ends["daddr"], port, protocols, verdict)
    if (port is not None and not protocols) or \
            (port is None and protocols not in ((), ("tcp",))) or \
            _verdict_json(rule) != verdict_expr:
        raise ValidationError(f"rule {label}: protocols {protocols!r} with port {port!r} and "
                              f"{str(verdict_expr)[:40]}")
    return rule, counted


def _address_end(right: object, family: Family) -> Match:
    if isinstance(right, str) and right.startswith("@"):
        name = right[1:]
        if not _SET_NAME_RE.fullmatch(name) or not name.endswith(f"_{family}"):
            raise ValidationError(f"set {name[:40]!r}")
        return Match("set", name)
    found = normalized(_decode_element(right, family))
    if len(found) != 1:
        raise ValidationError(f"address {str(right)[:60]}")
    return Match("net", found[0])


def differences(live: TableSpec | None, wanted: TableSpec) -> list[str]:
    """What differs between the kernel's table and the one meant (empty: the same)."""
    name = f"table {FAMILY} {wanted.table}"
    if live is None:
        return [f"nftables has no {name}"]
    found = []
    if live.rules != wanted.rules:
        found.append(f"the rules of {name} are not the policy's")
    live_sets = {each.name: each for each in live.sets}
    for each in wanted.sets:
        have = live_sets.pop(each.name, None)
        if have is None:
            found.append(f"{name} lacks the set {each.name}")
        elif have.elements != each.elements:
            missing = set(each.elements) - set(have.elements)
            extra = set(have.elements) - set(each.elements)
            what = [f"lacks {', '.join(sorted(missing)[:3])}"] if missing else []
            what += [f"has {', '.join(sorted(extra)[:3])} too"] if extra else []
            found.append(f"set {each.name} of {name} {' and '.join(what)}")
    found += [f"{name} has the set {name_} the policy does not" for name_ in live_sets]
    return found
