"""The fuzzing registry: every decoder of input from outside zsn (config readers,
program output parsers, records, stores, HTTP request heads, imports, daemon
replies), each an `Entry` fuzzed with hypothesis by tests/unit/test_fuzz_registry.py.

The rule each entry is held to: a typed value or a one-line `ZsnError`, within
bounded time and memory; never another exception. Each run is deterministic
(``derandomize``, no example database) and counts its examples (it must run exactly
`Entry.examples`, and accept some, so the read-back checks really ran); with
``pytest -s`` each prints its count and its slowest example.

To add a decoder: write a function decorated with ``@entry(NAME, EXAMPLES, COVERS)``
returning ``(strategy, check)``: ``check(value)`` decodes the value through
`only_typed_errors` and checks what was accepted (reads back the same when written
out again, where zsn writes the format). COVERS names the functions of zsn/ the entry
reaches, as ``module:qualname`` (``*`` matches any part of a name): the registry's test
finds every function of zsn/ that decodes outside input (json/yaml/toml/sqlite3/
struct/msgspec calls, `zsn.decode`, functions named parse*/decode*/unpack*/from_dict)
and fails for one no entry covers.

What the entries check beyond the rule:

- wg-quick configs (`zsn.wireguard.config.parse`): ``render(parse(text)) == text``.
- UAPI ``get`` replies (`zsn.wireguard.uapi.parse_get`): no writer exists in zsn,
  so a reply is written from the parsed state by `uapi_reply` here and must parse
  back to the same state.
- OpenVPN management replies (`zsn.openvpn.management`: the session's line reader,
  ``state`` and ``status 2`` records): the state record written back from its
  fields parses to the same fields.
- OpenVPN configs (`zsn.openvpn.config.parse`): ``render(parse(text)) == text``, and
  the directives of the rendered text are the same.
- ZFS (`zsn.zfs`): `zpool status` text (status lines, tree lines, scan lines mixed
  with noise) and JSON; the `zpool iostat` block assembler fed rows rendered from
  numbers (each accepted block reads back the numbers); `zpool list`/`zfs list` rows
  and snapshot listings; what `zsn zfs send` reads (`zfs get` rows, `zfs send -nvP`
  estimates and resume tokens, the remote batch's end markers);
  kstat benchmarks and tables: typed errors only; the pool cache file (the real capture
  with bytes changed, cut or repeated): typed errors only, and what is accepted decodes
  to lists of the same shapes.
- zsn's WireGuard settings (`zsn.wireguard.settings.parse_settings`) and journal
  output (`zsn.system.journal.parse_entries`): typed errors (or skipped lines) only.
- Wi-Fi access points (`zsn.system.nl80211`, `zsn.wlan.elements`): the lab's captured
  GET_SCAN dump with bytes overwritten, and information elements (the captured
  access points' with bytes changed, or noise): typed errors only, and every element
  list gives a security zsn knows.
- The peer history (`zsn.wireguard.hooks.parse`: history.toml; the store's hour
  codes `zsn.wireguard.history.decode_amounts`, any bytes: typed errors or numbers,
  and encoded amounts read back within 1/2048), the import readers' text formats
  (PiVPN's setupVars.conf, docker env files, wg-easy v14's wg0.json) and expiry
  times (`zsn.wireguard.expiry`): typed errors only; an accepted setupVars line reads
  back the same.
- WireGuard access rules (`zsn.wireguard.policy.parse`): what is accepted renders and
  reads back the same; ``nft -j list table`` output (`zsn.system.nftables.decode`,
  `zsn.wireguard.acl_table.decode`: the captured listings with bytes changed, and JSON
  of any shape): typed errors only, and an accepted table renders to the same table.
- 802.1X (`zsn.eap`): iwd's ``.8021x`` files (its test suite's, changed) render back
  byte for byte; network blocks' values, EAP events, NetworkManager keyfiles and
  STATUS replies give typed values only.
- The first read's snapshot (`zsn.tui.startup.decode_snapshot`: what the forked
  child pickled, bytes overwritten, cut or repeated; pickles that call something;
  noise): typed errors only, and what is accepted is a model's NamedTuple that
  pickles and reads back the same.
- Try records (`zsn.tries.store.Store.load`, `Change.from_dict`, every undo kind's
  typed parameters through `zsn.tries.undo.Undo.from_dict`: a valid record with one
  value anywhere replaced by another, a hostile word or any JSON, or noise): typed
  errors only, and an accepted record writes back and reads back the same.
- Links (`zsn.links`, `zsn.system.rtnetlink`): rtnetlink dumps (noise, and the lab's
  captured dump with bytes overwritten) and `/proc/net/bonding`: typed errors only;
  the config formats zsn edits keep every byte they do not change: netplan YAML
  (a definition set into any document reads back as set), systemd unit files,
  ifupdown stanzas and netctl profiles (read, then written back unchanged).
- Disks (`zsn.zfs.smart`, `zsn.zfs.disk_state`, `zsn.zfs.disks`): ``smartctl --json``
  (real outputs with one value replaced by any JSON value, and any JSON): a reading or
  one line; zsn's SMART records (written ones changed): what is accepted renders and
  reads back the same; SCSI serial VPD pages: a printable serial or None.
- The readers behind the read-back of every format zsn writes (`zsn.meaning`: wg-quick,
  unit files, sysctl.d, ifupdown, bash assignments, OpenVPN, YAML, JSON): typed errors
  only, and an edit that changes nothing reads back as meaning nothing new. Their
  renderers, given any value (line breaks, control characters, ``#``, ``=``, quotes,
  long): refused with a typed error, or written so that the file reads back as meant.
"""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from hypothesis import event
from hypothesis import strategies as st

from zsn.errors import ZsnError
from zsn.openvpn import config as ovpn_config
from zsn.openvpn import management
from zsn.system import journal
from zsn.system.limits import Deadline
from zsn.system.sockets import BoundedReader
from zsn.wireguard import config as wg_config
from zsn.wireguard import settings as wg_settings
from zsn.wireguard import uapi
from zsn.wireguard.keys import base64_to_hex
from zsn.wireguard.model import DeviceState, PeerState

Fuzz = tuple[st.SearchStrategy[Any], Callable[[Any], None]]


class Entry(NamedTuple):
    """One decoder (or a family of them read the same way) and how it is fuzzed."""

    name: str
    examples: int
    covers: tuple[str, ...]
    """The functions of zsn/ this entry's inputs reach (``module:qualname``)."""
    build: Callable[[], Fuzz]


REGISTRY: dict[str, Entry] = {}


def entry(name: str, examples: int, covers: list[str]
          ) -> Callable[[Callable[[], Fuzz]], Callable[[], Fuzz]]:
    """Register the decorated ``() -> (strategy, check)`` as the entry `name`."""
    def register(build: Callable[[], Fuzz]) -> Callable[[], Fuzz]:
        assert name not in REGISTRY, f"two entries named {name!r}"
        REGISTRY[name] = Entry(name, examples, tuple(covers), build)
        return build
    return register


_accepted = [0]
"""Inputs accepted in the running entry (`only_typed_errors` counts them)."""


def only_typed_errors(parse: Callable[[], Any]) -> Any | None:
    """What `parse` returns, or None when it raised a ZsnError of one line; anything
    else fails."""
    try:
        result = parse()
    except ZsnError as exc:
        assert "\n" not in str(exc), f"a refusal of more than one line: {exc!r}"
        event("refused with a typed error")
        return None
    event("accepted")
    _accepted[0] += 1
    return result


_any_char = st.characters(exclude_categories=["Cs"])
_noise = st.text(alphabet=_any_char, max_size=40)
_eol = st.sampled_from(["\n", "\r\n", "\r", "\x85", "\u2028", "\x0c", ""])


def _joined(lines: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
    return st.tuples(lines, st.lists(_eol, min_size=1, max_size=3)).map(
        lambda parts: "".join(line + parts[1][i % len(parts[1])]
                              for i, line in enumerate(parts[0])))


# -- wg-quick configs ---------------------------------------------------------------

_wg_fragments = st.sampled_from([
    "[Interface]", "[Peer]", "[peer] # x", "[ Peer ]", "[Unknown]", "#[disabled] [Peer]",
    "#[disabled] [Interface]", "#[disabled] PublicKey = k", "PublicKey = abc",
    "  AllowedIPs=1.2.3.4/32, fd00::1/128", "Address = 10.0.0.1/24", "# alice",
    "# Name = bob", "# friendly_name=carol", "### begin x ###", "### end x ###",
    "# ../../etc/x", "#\x00", "", "   ", "\t# c", "Key =", "= value", "DNS = 1.1.1.1 # c",
])
_wg_text = _joined(st.lists(st.one_of(_wg_fragments, _noise), max_size=30))


@entry("wg-quick config", 3000,
      ["zsn.wireguard.config:parse",
       "zsn.wireguard.config:parse_shared"])
def wg_quick_config() -> Fuzz:
    def check(text: str) -> None:
        parsed = only_typed_errors(lambda: wg_config.parse(text, "wg0.conf"))
        shared = only_typed_errors(lambda: wg_config.parse_shared(text, "wg0.conf"))
        assert (shared is None) == (parsed is None)
        if parsed is None:
            return
        assert parsed.render() == text
        again = wg_config.parse(parsed.render(), "wg0.conf")
        assert [(s.kind, s.entries, s.name, s.disabled) for s in again.sections] == \
            [(s.kind, s.entries, s.name, s.disabled) for s in parsed.sections]

    return _wg_text, check


# -- UAPI replies -------------------------------------------------------------------

_hex_key = st.binary(min_size=32, max_size=32).map(bytes.hex)
_number = st.one_of(st.integers(0, 2**64), st.integers(-5, -1).map(str),
                    st.sampled_from(["", "x", "1_0", " 7", "\u0663", "9" * 30]))
_uapi_value = st.one_of(_hex_key, _number.map(str), _noise,
                        st.sampled_from(["0" * 64, "10.0.0.2/32", "[fd00::2]:51820"]))
_uapi_key = st.sampled_from([
    "private_key", "own_public_key", "listen_port", "fwmark", "public_key", "preshared_key",
    "protocol_version", "endpoint", "last_handshake_time_sec", "last_handshake_time_nsec",
    "tx_bytes", "rx_bytes", "persistent_keepalive_interval", "allowed_ip", "errno", "x",
])
_uapi_line = st.one_of(st.tuples(_uapi_key, _uapi_value).map("=".join), _noise)
_b64_key = st.binary(min_size=32, max_size=32).map(lambda raw: __import__("base64")
                                                     .b64encode(raw).decode())
_peer_state = st.builds(
    PeerState, _b64_key, st.one_of(st.none(), _b64_key),
    st.one_of(st.none(), st.sampled_from(["192.0.2.1:51820", "[2001:db8::1]:1"])),
    st.lists(st.sampled_from(["10.0.0.2/32", "fd00::2/128", "0.0.0.0/0"]), max_size=3)
    .map(tuple), st.one_of(st.none(), st.integers(1, 2**40)), st.integers(0, 2**63),
    st.integers(0, 2**63), st.one_of(st.none(), st.integers(1, 65535)))
_device_state = st.builds(
    DeviceState, st.one_of(st.none(), _b64_key), st.none(),
    st.one_of(st.none(), st.integers(0, 65535)), st.one_of(st.none(), st.integers(1, 2**32)),
    st.lists(_peer_state, max_size=4, unique_by=lambda p: p.public_key).map(tuple))
_uapi_text = st.one_of(
    st.tuples(
        st.lists(_uapi_line, max_size=40),
        st.sampled_from(["errno=0\n\n", "errno=-22\n\n", "errno=0\n", "", "errno=x\n\n"]),
    ).map(lambda parts: "".join(f"{line}\n" for line in parts[0]) + parts[1]),
    # Well-formed replies, some with one line changed into noise.
    st.tuples(_device_state, st.integers(0, 60), _uapi_line).map(
        lambda parts: _mutated(uapi_reply(parts[0]), parts[1], parts[2])),
)


def _mutated(reply: str, at: int, line: str) -> str:
    lines = reply.split("\n")
    if at < len(lines) - 3:
        lines[at] = line
    return "\n".join(lines)


def uapi_reply(state: DeviceState) -> str:
    """A ``get`` reply in wireguard-go's layout for `state` (keys back to hex), the
    order of device/uapi.go's IpcGetOperation."""
    lines = []
    if state.private_key:
        lines.append(f"private_key={base64_to_hex(state.private_key)}")
    if state.listen_port is not None:
        lines.append(f"listen_port={state.listen_port}")
    if state.fwmark:
        lines.append(f"fwmark={state.fwmark}")
    for peer in state.peers:
        lines.append(f"public_key={base64_to_hex(peer.public_key)}")
        psk = base64_to_hex(peer.preshared_key) if peer.preshared_key else "0" * 64
        lines += [f"preshared_key={psk}", "protocol_version=1"]
        if peer.endpoint:
            lines.append(f"endpoint={peer.endpoint}")
        lines += [f"last_handshake_time_sec={peer.latest_handshake or 0}",
                  "last_handshake_time_nsec=0",
                  f"tx_bytes={peer.tx_bytes}", f"rx_bytes={peer.rx_bytes}",
                  f"persistent_keepalive_interval={peer.persistent_keepalive or 0}"]
        lines += [f"allowed_ip={network}" for network in peer.allowed_ips]
    return "".join(f"{line}\n" for line in lines) + "errno=0\n\n"


@entry("UAPI reply", 3000,
      ["zsn.wireguard.uapi:parse_get",
       "zsn.wireguard.uapi:_parse_peer"])
def uapi_replies() -> Fuzz:
    def check(text: str) -> None:
        state = only_typed_errors(lambda: uapi.parse_get(text, "wg0.sock"))
        if state is None or state.public_key is not None:
            return  # boringtun's layout (handshake ages): no writer for it here
        assert uapi.parse_get(uapi_reply(state), "wg0.sock") == state

    return _uapi_text, check


# -- OpenVPN management interface -----------------------------------------------------

_mgmt_fragments = st.sampled_from([
    ">INFO:OpenVPN Management Interface Version 5", "ENTER PASSWORD:", "END",
    "SUCCESS: pid=1", "ERROR: unknown command", ">LOG:1700000000,,x", ">BYTECOUNT:1,2",
    "1700000000,CONNECTED,SUCCESS,10.8.0.2,192.0.2.1,1194,,,fd00::2",
    "TITLE,OpenVPN 2.6", "CLIENT_LIST,alice,192.0.2.9:5000,10.8.0.6,,123,456,x",
    "TCP/UDP read bytes,1234", "TCP/UDP write bytes,99", "\u00b2,CONNECTED",
    "TCP/UDP read bytes,\u00b9\u00b2",
])
_mgmt_lines = st.lists(st.one_of(_mgmt_fragments, _noise), max_size=30)


@entry("management session", 1000,
      ["zsn.openvpn.management:_Session.command"])
def management_session() -> Fuzz:
    stream = st.one_of(
        st.binary(max_size=2000),
        _joined(_mgmt_lines).map(lambda text: text.encode("utf-8", "surrogatepass")))

    def check(data: bytes) -> None:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.sendall(data)
            theirs.shutdown(socket.SHUT_WR)
            session = management._Session(  # the line reader is what is fuzzed
                BoundedReader(ours, "mgmt.sock", Deadline(5.0), 1 << 20))
            try:
                while True:
                    session.command("state")
                    _accepted[0] += 1  # a whole reply read
            except ZsnError:
                event("ended with a typed error")

    return stream, check


def state_line(fields: tuple[str, str, int, str, str, str, str]) -> str:
    state, description, since, ipv4, remote, port, ipv6 = fields
    return f"{since},{state},{description},{ipv4},{remote},{port},,,{ipv6}"


@entry("management records", 3000,
      ["zsn.openvpn.management:parse_state",
       "zsn.openvpn.management:parse_status"])
def management_records() -> Fuzz:
    def check(lines: list[str]) -> None:
        fields = only_typed_errors(lambda: management.parse_state(lines))
        if fields is not None and not any("," in str(f) for f in fields):
            assert management.parse_state([state_line(fields), "END"]) == fields
        only_typed_errors(lambda: management.parse_status(lines))

    return _mgmt_lines, check


# -- OpenVPN configs ----------------------------------------------------------------

_ovpn_fragments = st.sampled_from([
    "client", "remote vpn.example.net 1194 udp", "<ca>", "</ca>", "<key>", "</key>",
    "<tls-crypt>", "</connection>", "setenv opt up /x", "setenv opt", "setenv opt ../x",
    "up 'a b' \"c\\\"d\"", "config other.conf", "# comment", "; comment", "  --dev tun",
    "auth-user-pass ../../x", "dhcp-option DNS 10.0.0.1", "'unterminated", "\\", "",
    "remote <SERVER DNS OR IP HERE> 1194", "nobind", "mode server", "server 10.8.0.0 "
    "255.255.255.0", "<connection>", "remote a 1 tcp", "ignore-unknown-option x",
    "proto bogus", "server-bridge nogw", "crl-verify dir dir", "<up>", "</up>",
])
_ovpn_text = _joined(st.lists(st.one_of(_ovpn_fragments, _noise), max_size=30))


@entry("OpenVPN config", 3000,
      ["zsn.openvpn.config:parse", "zsn.openvpn.refusals:option_refusals",
       "zsn.openvpn.refusals:combination_refusals"])
def openvpn_config() -> Fuzz:
    from zsn.openvpn.refusals import combination_refusals, option_refusals

    def check(text: str) -> None:
        parsed = only_typed_errors(lambda: ovpn_config.parse(text, "office.conf"))
        if parsed is None:
            return
        assert parsed.render() == text
        assert ovpn_config.parse(parsed.render(), "office.conf").directives == parsed.directives
        lines = [(directive, directive.line + 1) for directive in parsed.directives]
        for refusal in option_refusals(lines) + combination_refusals(lines):
            assert refusal.line is None or 1 <= refusal.line <= len(parsed.lines) + 1
            assert "\n" not in refusal.message

    return _ovpn_text, check


# -- zsn's own files and journalctl output ------------------------------------------

_json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
_hostile_json = st.sampled_from([
    "[" * 100_000 + "]" * 100_000,  # nested 100,000 deep
    '{"a":' * 50_000 + "1" + "}" * 50_000,
    "[" * 100_000,  # deep and cut off
    '"' + "\\" * 1000 + '"', "1e999999", "-" + "9" * 5000, '{"a": 1, "a": 2}', "\ufeff{}",
    '{"wg0": {"links": "wg1"}}', '{"wg0": {"endpoint_host": 7}}', '{"wg0": []}', "[]", "null",
])
"""JSON that broke decoders: deep nesting, huge numbers, fields of the wrong type."""
_iface = st.sampled_from(["wg0", "wg1", "wg-home", "x=y+z.1"])
_settings_text = st.one_of(
    _noise, _hostile_json,
    st.dictionaries(_iface, st.fixed_dictionaries({
        "endpoint_host": st.one_of(st.none(), st.text(max_size=20)),
        "links": st.lists(_iface, max_size=3)}), max_size=3).map(json.dumps),
    st.dictionaries(st.sampled_from(["wg0", "wg1", "../x", "", "a" * 20]),
                    st.one_of(_json_value, st.fixed_dictionaries(
                        {"endpoint_host": _json_value, "links": _json_value})),
                    max_size=3).map(json.dumps))


@entry("WireGuard settings", 1000,
      ["zsn.wireguard.settings:parse_settings"])
def wireguard_settings() -> Fuzz:
    def check(text: str) -> None:
        loaded = only_typed_errors(
            lambda: wg_settings.parse_settings(text, Path("/etc/zsn/wireguard.json")))
        if loaded is not None:
            again = wg_settings.parse_settings(json.dumps({
                name: {"endpoint_host": value.endpoint_host, "links": value.links}
                for name, value in loaded.items()}), Path("/etc/zsn/wireguard.json"))
            assert again == loaded

    return _settings_text, check


_journal_entry = st.one_of(
    _json_value.map(json.dumps),
    st.fixed_dictionaries({"MESSAGE": st.one_of(st.text(max_size=20),
                                                st.lists(st.integers(-5, 300), max_size=8),
                                                _json_value),
                           "PRIORITY": st.one_of(st.sampled_from(["3", "6", "x", ""]),
                                                 _json_value),
                           "__REALTIME_TIMESTAMP": st.one_of(st.text(max_size=20),
                                                             _json_value)}).map(json.dumps),
    _noise)


@entry("journal output", 1000,
      ["zsn.system.journal:parse_entries"])
def journal_output() -> Fuzz:
    def check(lines: list[str]) -> None:
        entries = only_typed_errors(lambda: journal.parse_entries("\n".join(lines)))
        assert entries is not None  # malformed lines are skipped, never fatal
        assert all(isinstance(e.message, str) and isinstance(e.priority, int)
                   for e in entries)

    return st.lists(_journal_entry, max_size=10), check


# -- the decoding layer itself (zsn.decode) ------------------------------------------

_hostile_yaml = st.sampled_from([
    "[" * 100_000 + "]" * 100_000, "a:\n" + "".join(f"{' ' * i} b:\n" for i in range(200)),
    # "billion laughs": nine aliases of nine, expanded only by a reader that walks them
    "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
        for i in range(9)),
    "!!python/object:os.system {}", "a: !!binary AAAA", "--- 1\n--- 2\n", "? [a]\n: b\n",
    "a: 1\na: 2\n", "\t", "{a: [1, {b: c}]}", "",
])
_hostile_toml = st.sampled_from([
    "a = " + "[" * 100_000 + "]" * 100_000, "a = " + "{b = " * 5000 + "1" + "}" * 5000,
    "enabled = true", "on_connect = ['/bin/x']", "[[t]]\n[[t]]\n", "a = 1979-05-27T07:32:00Z",
    "a = 'x # not a comment'", "a = \"[[[[\"",
])
_timestamps = st.one_of(_noise, st.sampled_from([
    "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1970-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z", "2026-12-31T23:00:00Z", "2026-12-31T23:00:00", "2026-02-30T00:00Z",
    "+002026-01-01T00:00Z", "2026-12-31T23:00:00+25:00", "\u0662\u0660\u0662\u0666-01-01"]))


@dataclass
class _Sample:
    """A type of the kind readers declare: a dataclass with a check of its own."""

    name: str
    ports: list[int] = field(default_factory=list)
    when: int | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"{self.name!r} is not a name")


@entry("decoding layer", 1000, ["zsn.decode:*"])
def decoding_layer() -> Fuzz:
    from zsn import decode

    kinds: list[Any] = [dict[str, _Sample], list[int], _Sample, dict[str, Any]]
    documents = st.one_of(_hostile_json, _json_value.map(json.dumps), _noise,
                          st.lists(st.fixed_dictionaries(
                              {"name": st.sampled_from(["a", "", "a/b", 3]),
                               "ports": st.one_of(st.lists(st.integers(-1, 70000)), _json_value)}),
                              max_size=3).map(json.dumps))

    def check(value: tuple[str, str, str, str, int]) -> None:
        document, yaml_text, toml_text, moment, which = value
        kind = kinds[which]
        decoders: list[tuple[Callable[[str, Any, str], Any], str]] = [
            (decode.from_json, document), (decode.from_yaml, yaml_text),
            (decode.from_yaml, document), (decode.from_toml, toml_text)]
        for decoder, text in decoders:
            found = only_typed_errors(partial(decoder, text, kind, "fuzz"))
            if found is not None and kind is _Sample:
                assert isinstance(found, _Sample) and found.name and "/" not in found.name
        at = only_typed_errors(lambda: decode.timestamp(moment, "fuzz", "when"))
        if at is not None:
            assert decode.EARLIEST <= at <= decode.LATEST
            assert decode.timestamp(
                datetime.fromtimestamp(at, UTC).isoformat(), "again") == at

    return st.tuples(documents, st.one_of(_hostile_yaml, _noise, documents),
                     st.one_of(_hostile_toml, _noise), _timestamps, st.integers(0, 3)), check


# -- zsn serve: HTTP request heads and the web config --------------------------------

_head_lines = st.sampled_from([
    "GET /metrics HTTP/1.1", "GET / HTTP/1.0", "HEAD /export.json?collect[]=x HTTP/1.1",
    "GET  /metrics HTTP/1.1", "GET /metrics HTTP/2", "Host: x", "Host: y", "host:z",
    "Content-Length: 0", "Content-Length: 30", "content-length:0", "Content-Length: -1",
    "Transfer-Encoding: chunked", "Connection: close", "Connection: keep-alive",
    "Authorization: Basic cHJvbWV0aGV1czp4", " Folded: header", "NoColon", ": empty",
    "X-Prometheus-Scrape-Timeout-Seconds: 1e309", "GET /%ff%00 HTTP/1.1"])


@entry("HTTP request heads", 1000,
       ["zsn.exporter.serve:parse_head", "zsn.exporter.serve:parse_listen"])
def http_request_heads() -> Fuzz:
    from zsn.exporter import serve

    heads = st.one_of(
        st.binary(max_size=300),
        st.lists(st.one_of(_head_lines, _noise), max_size=10).map(
            lambda lines: "\r\n".join(lines).encode("utf-8", "surrogatepass") + b"\r\n\r\n"))

    def check(value: tuple[bytes, str]) -> None:
        head, listen = value
        request = only_typed_errors(lambda: serve.parse_head(head))
        if request is not None:
            assert request.method and request.path is not None
            assert request.headers.get("content-length", "0") == "0"
            assert "transfer-encoding" not in request.headers
            lengths = [line for line in head.lower().split(b"\r\n")
                       if line.startswith(b"content-length:")]
            assert len(lengths) <= 1  # never two readings of where the request ends
        found = only_typed_errors(lambda: serve.parse_listen(listen))
        if found is not None:
            assert 0 <= found[1] <= 65535

    return st.tuples(heads, st.one_of(_noise, st.sampled_from(
        ["127.0.0.1:9586", "[::1]:0", ":9586", "0.0.0.0:65536", "x:-1", "[::]:1"]))), check


_web_fragments = st.sampled_from([
    "tls_server_config:", "  cert_file: zsn.crt", "  key_file: zsn.key",
    "  client_auth_type: RequireAndVerifyClientCert", "  client_ca_file: ca.crt",
    "  min_version: TLS13", "  cipher_suites: [TLS_AES_128_GCM_SHA256]",
    "  curve_preferences: [CurveP256]", "http_server_config:", "  headers:",
    "    X-Frame-Options: deny", "    Server: zsn", "basic_auth_users:",
    '  prometheus: "$2b$04$41jY7QOMXrXPyYSCl96am.vfCZXcpbIjFT0QIHOEvWstf/sQQmoVq"',
    '  other: "$2b$99$41jY7QOMXrXPyYSCl96am.vfCZXcpbIjFT0QIHOEvWstf/sQQmoVq"',
    '  broken: "$2b$04$AAAAAAAAAAAAAAAAAAAAAAvfCZXcpbIjFT0QIHOEvWstf/sQQmoVq"',
    "rate_limit:", "  interval: 1m30s", "  burst: 3", "  interval: 1d", "  burst: -1",
    "colour: blue", "- x", "&a [1]", "*a", "", "  ", "# c"])


@entry("web config", 1000,
       ["zsn.exporter.webconfig:parse", "zsn.exporter.webconfig:bcrypt_cost"])
def web_config() -> Fuzz:
    from zsn.exporter import webconfig

    texts = st.one_of(_hostile_yaml, _noise, st.lists(st.one_of(_web_fragments, _noise),
                                                      max_size=12).map("\n".join))

    def check(text: str) -> None:
        only_typed_errors(lambda: webconfig.bcrypt_cost(text.strip(), "a hash"))
        parsed = only_typed_errors(lambda: webconfig.parse(text, Path("/etc/zsn"), "web.yml"))
        if parsed is not None:
            settings, named = parsed
            assert set(settings) == {"tls", "headers", "users", "rate_limit"}
            assert all(path.is_absolute() for path in named)
            for user, hashed in settings["users"].items():
                assert webconfig.bcrypt_cost(hashed, user) in webconfig.BCRYPT_COSTS

    return texts, check


# -- text from fixtures, lines mixed with noise ----------------------------------------

_FIXTURES = Path(__file__).parent.parent / "fixtures"


def _lines_of(*names: str) -> st.SearchStrategy[str]:
    """Texts made of the real captures' lines (changed, repeated, mixed with noise)."""
    lines = [line for name in names
             for line in (_FIXTURES / name).read_text(errors="replace").splitlines()]
    changed = st.tuples(st.sampled_from(lines), st.integers(0, 80), _noise).map(
        lambda cut: cut[0][:cut[1]] + cut[2] + cut[0][cut[1]:])
    return _joined(st.lists(st.one_of(st.sampled_from(lines), changed, _noise), max_size=25))


@entry("wpa_supplicant replies", 1000,
       ["zsn.wlan.wpa_protocol:parse_kv", "zsn.wlan.wpa_protocol:parse_bss",
        "zsn.wlan.wpa_protocol:parse_list_networks", "zsn.system.wpa_ctrl:parse_event"])
def wpa_supplicant_replies() -> Fuzz:
    from zsn.system.wpa_ctrl import parse_event
    from zsn.wlan import wpa_protocol

    texts = _lines_of("wlan/wpa_cli-bss.home-wpa2.txt", "wlan/wpa_cli-bss.office-sae.txt",
                      "wlan/wpa_cli-list_networks.txt", "wlan/wpa_ctrl-events.wrong-key.txt",
                      "wlan/wpa_cli-status.completed.txt")

    def check(text: str) -> None:
        values = only_typed_errors(lambda: wpa_protocol.parse_kv(text))
        assert values is None or all(key and "\n" not in key for key in values)
        only_typed_errors(lambda: wpa_protocol.parse_bss(text))
        for network in only_typed_errors(lambda: wpa_protocol.parse_list_networks(text)) or ():
            assert isinstance(network.id, int)
        for line in text.splitlines()[:5]:
            only_typed_errors(lambda line=line: parse_event(line))  # type: ignore[misc]

    return texts, check


@entry("Wi-Fi profiles", 1000,
       ["zsn.system.wpa_config:parse_wpa_config", "zsn.wlan.netctl:parse_profile",
        "zsn.bash:parse_assignments"])
def wifi_profiles() -> Fuzz:
    from zsn.system import wpa_config
    from zsn.wlan import netctl

    fragments = st.sampled_from([
        "Description='home'", "Interface=wlan0", "Connection=wireless", "Security=wpa",
        "ESSID='home wpa2'", "Key='secret phrase'", "Key=\\\"00aa", "IP=dhcp", "Hidden=yes",
        "ESSID=\"unterminated", "X=(a b", "$(reboot)", "Key=`id`", "network={", "}",
        "\tssid=\"home\"", "\tpsk=\"pass word\"", "\tkey_mgmt=SAE", "ctrl_interface=x"])
    texts = st.one_of(_lines_of("wlan/wpa_supplicant.conf.saved.txt"),
                      _joined(st.lists(st.one_of(fragments, _noise), max_size=15)))

    def check(text: str) -> None:
        config = only_typed_errors(lambda: wpa_config.parse_wpa_config(text))
        assert config is None or all(isinstance(n.ssid, bytes | None) for n in config.networks)
        only_typed_errors(lambda: netctl.parse_profile("home", text))

    return texts, check


_IWD_FRAGMENTS = st.sampled_from([
    "[Security]", "[Settings]", "[@pem@ca]", "-----BEGIN CERTIFICATE-----", "[", "[]",
    "EAP-Method=PEAP", "EAP-Method=ttls", "EAP-Method=", "EAP-Identity=\\sa\\nb",
    "EAP-PEAP-CACert=/ca.pem", "EAP-PEAP-ServerDomainMask=*.example.org",
    "EAP-TTLS-Phase2-Method=Tunneled-PAP", "EAP-TLS-CACert=embed:ca", "AutoConnect=false",
    "# comment", "=x", "Key", "  Key = value  ", ""])


@entry("iwd 802.1X files", 1000,
       ["zsn.eap.iwd:parse_settings", "zsn.eap.iwd:profile_of"])
def iwd_8021x_files() -> Fuzz:
    """iwd's upstream test profiles (tests/fixtures/corpus/eap) changed and mixed with
    noise: typed errors only, and what is read renders back byte for byte."""
    from zsn.eap import iwd as eap_iwd

    texts = st.one_of(
        _lines_of(*(f"corpus/eap/iwd/{path.name}"
                    for path in sorted((_FIXTURES / "corpus/eap/iwd").glob("*.8021x")))),
        _joined(st.lists(st.one_of(_IWD_FRAGMENTS, _noise), max_size=20)))

    def check(text: str) -> None:
        settings = only_typed_errors(lambda: eap_iwd.parse_settings(text))
        if settings is not None:
            assert settings.render() == text
            profile = eap_iwd.profile_of(settings)
            assert profile is None or isinstance(profile.server_checked, bool)

    return texts, check


@entry("802.1X settings and events", 1000,
       ["zsn.eap.supplicant:profile_of_values", "zsn.eap.events:EapAttempt.feed",
        "zsn.eap.events:iwd_reason", "zsn.wlan.nm:keyfile_profile",
        "zsn.links.dot1x:parse_status"])
def eap_settings_and_events() -> Fuzz:
    """Network blocks' values (a config file's, GET_NETWORK's), the supplicant's EAP
    events and iwd's log lines (the lab's captures of failed attempts, changed),
    NetworkManager keyfiles (its own test suite's, changed) and STATUS replies: typed
    values only."""
    from zsn.eap.events import EapAttempt, iwd_reason
    from zsn.eap.supplicant import profile_of_values
    from zsn.links.dot1x import parse_status
    from zsn.system.wpa_ctrl import parse_event
    from zsn.wlan.nm import keyfile_profile

    keys = st.sampled_from(["key_mgmt", "eap", "identity", "phase2", "ca_cert", "ca_path",
                            "domain_match", "domain_suffix_match", "altsubject_match"])
    values = st.one_of(st.sampled_from(['"x"', "WPA-EAP", "IEEE8021X", "PEAP TTLS", '""',
                                        '"auth=MSCHAPV2"', "hash://server/sha256/ab", '"']),
                       _noise)
    events = _lines_of("wlan/wpa_ctrl-events.wrong-key.txt", "wlan/wpa_cli-status.eap-tls.txt",
                       "wlan/iwd-log.eap-wrong-password.txt", "wlan/iwd-log.eap-wrong-ca.txt")
    keyfiles = _lines_of("corpus/eap/networkmanager/Test_Wired_TLS_New")

    def check(value: tuple[dict[str, str], str, str]) -> None:
        settings, datagrams, keyfile = value
        only_typed_errors(lambda: profile_of_values(settings))
        attempt = EapAttempt()
        for datagram in datagrams.splitlines():
            event = parse_event(datagram)
            if event is not None:
                attempt.feed(event)
        assert isinstance(attempt.reason, str)
        said = iwd_reason(datagrams.splitlines())
        assert said is None or isinstance(said, str)
        state = only_typed_errors(lambda: parse_status("eth0", datagrams))
        assert state is None or isinstance(state.authenticated, bool)
        only_typed_errors(lambda: keyfile_profile(keyfile))

    return st.tuples(st.dictionaries(keys, values, max_size=6), events, keyfiles), check


@entry("networkd's own check", 500,
       ["zsn.system.networkd_sandbox:parse_report", "zsn.system.networkd_sandbox:parse_log",
        "zsn.links.persist.networkd:parse_mtu", "zsn.links.persist.networkd:parse_boolean"])
def networkd_check() -> Fuzz:
    from zsn.links.persist import networkd
    from zsn.system import networkd_sandbox

    lines = st.sampled_from([
        "/etc/systemd/network/10-x.network:3: Unknown key name 'Nmae' in section 'Match', "
        "ignoring.", "bond0: Failed to parse MTU, ignoring: /etc/systemd/network/x.netdev",
        "Skipping overridden file '/run/systemd/network/a.network'.", "x.network:9999999999: x",
        "", "MTUBytes=9000", "1.5K", "yes", "off", "-1", "1e3"])
    reports = st.one_of(
        _hostile_json, _noise,
        st.lists(st.one_of(lines, _noise), max_size=8).map(lambda log: json.dumps({"log": log})),
        st.lists(_json_value, max_size=4).map(lambda log: json.dumps({"log": log})))

    def check(value: tuple[str, str]) -> None:
        report, word = value
        for complaint in only_typed_errors(lambda: networkd_sandbox.parse_report(report)) or ():
            assert complaint.line is None or complaint.line > 0
        mtu = only_typed_errors(lambda: networkd.parse_mtu(word))
        assert mtu is None or mtu > 0
        only_typed_errors(lambda: networkd.parse_boolean(word))

    return st.tuples(reports, st.one_of(lines, _noise)), check


@entry("SSH_CONNECTION", 1000, ["zsn.tries.session:parse_ssh_connection"])
def ssh_connection() -> Fuzz:
    from zsn.tries.session import parse_ssh_connection

    words = st.sampled_from(["192.0.2.9", "54122", "192.0.2.1", "22", "fe80::1%eth0",
                             "::ffff:192.0.2.9", "", "1.2.3", "%", "999999"])

    def check(value: str) -> None:
        found = only_typed_errors(lambda: parse_ssh_connection(value))
        if found is not None:
            assert all(part and " " not in part for part in found)

    return st.one_of(_noise, st.lists(st.one_of(words, _noise), max_size=5).map(" ".join)), check


@entry("theme files", 500, ["zsn.tui.themes:theme_from_toml"])
def theme_files() -> Fuzz:
    from zsn.tui.themes import theme_from_toml

    fragments = st.sampled_from([
        'name = "zsn-night"', 'primary = "#88c0d0"', 'primary = "ansi_blue"', "primary = 7",
        'secondary = "not a colour"', "dark = true", "[variables]", '"footer-key" = "red"',
        "x = 1", 'name = ""'])
    real = [path.read_text() for path in sorted((_FIXTURES.parents[1] / "themes").glob("*.toml"))]
    texts = st.one_of(_hostile_toml, st.sampled_from(real),
                      _lines_of("../../themes/zsn-night.toml"),
                      st.lists(st.one_of(fragments, _noise), max_size=8).map("\n".join))

    def check(text: str) -> None:
        theme = only_typed_errors(lambda: theme_from_toml(text, "fuzz.toml"))
        assert theme is None or theme.name.strip()

    return texts, check


class _Message:
    """A decoded generic netlink message as pyroute2 hands it over: attributes by name."""

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.attrs = attrs

    def get_attr(self, name: str) -> Any:
        return self.attrs.get(name)


@entry("WireGuard kernel replies", 1000, ["zsn.wireguard.kernel:parse_messages"])
def wireguard_kernel_replies() -> Fuzz:
    from zsn.wireguard.kernel import parse_messages

    key = st.one_of(_b64_key.map(str.encode), _b64_key, st.none(), st.binary(max_size=50),
                    st.just({"value": b"A" * 43 + b"="}), st.integers())
    endpoint = st.one_of(st.none(), st.fixed_dictionaries(
        {"addr": st.sampled_from(["192.0.2.1", "::", "fe80::1", ""]),
         "port": st.one_of(st.integers(0, 70000), st.none())}))
    number = st.one_of(st.none(), st.integers(-1, 2**64))
    peer = st.fixed_dictionaries({
        "WGPEER_A_PUBLIC_KEY": key, "WGPEER_A_PRESHARED_KEY": key, "WGPEER_A_ENDPOINT": endpoint,
        "WGPEER_A_RX_BYTES": number, "WGPEER_A_TX_BYTES": number,
        "WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL": number,
        "WGPEER_A_LAST_HANDSHAKE_TIME": st.one_of(st.none(), st.fixed_dictionaries(
            {"tv_sec": number, "tv_nsec": number})),
        "WGPEER_A_ALLOWEDIPS": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
            {"addr": st.sampled_from(["10.0.0.2", "fd00::2", "x"]),
             "cidr": st.one_of(st.integers(0, 200), st.none())}), max_size=3))}).map(_Message)
    message = st.fixed_dictionaries({
        "WGDEVICE_A_PRIVATE_KEY": key, "WGDEVICE_A_PUBLIC_KEY": key,
        "WGDEVICE_A_LISTEN_PORT": number, "WGDEVICE_A_FWMARK": number,
        "WGDEVICE_A_PEERS": st.one_of(st.none(), st.lists(peer, max_size=3))}).map(_Message)

    def check(messages: list[_Message]) -> None:
        device = only_typed_errors(lambda: parse_messages(messages))
        assert device is None or len({p.public_key for p in device.peers}) == len(device.peers)

    return st.lists(message, max_size=3), check


@entry("dmsetup and zfs JSON", 1000,
       ["zsn.zfs.facts:parse_dmsetup_table", "zsn.zfs.listing:_load",
        "zsn.zfs.listing:parse_pools_json", "zsn.zfs.listing:parse_datasets_json",
        "zsn.zfs.listing:parse_properties"])
def zfs_json_and_tables() -> Fuzz:
    from zsn.zfs import facts, listing

    documents = [json.loads((_FIXTURES / "zfs" / name).read_text()) for name in
                 ("zpool-list-j.openzfs-man.json", "zfs-list-j.openzfs-man.json",
                  "zfs-get-j-r-mountpoint.openzfs-man.json")]

    def changed(case: tuple[int, list[str], Any]) -> str:
        document = json.loads(json.dumps(documents[case[0]]))
        node = document
        for key in case[1]:
            if not isinstance(node, dict) or not node:
                break
            name = sorted(node)[hash(key) % len(node)]
            if not isinstance(node[name], dict):
                node[name] = case[2]
                break
            node = node[name]
        return json.dumps(document)

    texts = st.one_of(
        _hostile_json, _noise,
        st.tuples(st.integers(0, 2), st.lists(st.text(max_size=2), max_size=5), _json_value)
        .map(changed))
    tables = _joined(st.lists(st.one_of(st.sampled_from([
        "cryptdata: 0 1953521664 crypt aes-xts-plain64 " + "0" * 64 + " 0 8:2 4096",
        "vg-root: 0 1000 linear 253:0 2048", "x: crypt", ": 0 1 crypt"]), _noise), max_size=6))

    def check(value: tuple[str, str]) -> None:
        text, table = value
        for pool in only_typed_errors(lambda: listing.parse_pools_json(text)) or ():
            assert isinstance(pool["name"], str)
        only_typed_errors(lambda: listing.parse_datasets_json(text))
        only_typed_errors(lambda: listing.parse_properties(table))
        ciphers = only_typed_errors(lambda: facts.parse_dmsetup_table(table))
        assert ciphers is None or all(" " not in cipher for cipher in ciphers.values())

    return st.tuples(texts, tables), check


@entry("zfs send arguments", 1000,
       ["zsn.zfs.remote:parse_target", "zsn.zfs.remote:parse_source", "zsn.zfs.send:parse_rate"])
def zfs_send_arguments() -> Fuzz:
    from zsn.zfs import remote, send

    words = st.sampled_from([
        "tank/data", "tank/data@snap", "backup@nas:tank/b", "[fe80::1%eth0]:tank/x",
        "root@[2001:db8::1]:pool/ds", "host:", ":pool", "tank/a@", "@x", "tank//x", "50M",
        "50MiB/s", "800K", "1.5G", "100Mbit", "0", "1e999M", "-5M", "9" * 400 + "G"])

    def check(text: str) -> None:
        target = only_typed_errors(lambda: remote.parse_target(text))
        assert target is None or target.dataset
        only_typed_errors(lambda: remote.parse_source(text))
        rate = only_typed_errors(lambda: send.parse_rate(text))
        assert rate is None or 0 < rate < float("inf")

    return st.one_of(words, _noise, st.tuples(words, _noise).map("".join)), check


@entry("zfs transfer records", 300, ["zsn.zfs.transfers:_records"])
def zfs_transfer_records() -> Fuzz:
    from zsn.zfs import transfers

    record = st.one_of(_hostile_json, _noise, _json_value.map(json.dumps),
                       st.fixed_dictionaries({
                           "source": st.one_of(st.just("tank/a"), _json_value),
                           "target": st.one_of(st.just("nas:tank/b"), _json_value),
                           "pid": _json_value, "sent": _json_value}).map(json.dumps))

    def check(texts: list[str]) -> None:
        with tempfile.TemporaryDirectory(prefix="zsn-fuzz-") as folder:
            for number, text in enumerate(texts):
                (Path(folder) / f"{number}.json").write_text(text, errors="surrogateescape")
            for found, _path in only_typed_errors(
                    lambda: transfers._records(Path(folder))) or ():
                assert isinstance(found["source"], str) and isinstance(found["target"], str)

    return st.lists(record, max_size=4), check


# -- wg-easy v15's database ------------------------------------------------------------


@entry("wg-easy v15 database", 300,
       ["zsn.wireguard.imports:_read_wg_easy_v15", "zsn.wireguard.imports:_read_v15_tables",
        "zsn.wireguard.imports:_json_list"])
def wg_easy_database() -> Fuzz:
    import sqlite3

    from zsn.wireguard import imports

    real = (_FIXTURES / "wireguard/imports/wg-easy/v15/wg-easy.db").read_bytes()
    statements = st.sampled_from([
        None, "UPDATE clients_table SET mtu = 'x'", "UPDATE clients_table SET dns = '[[[['",
        "UPDATE clients_table SET allowed_ips = '[\"10.0.0.0/8\", 7]'",
        "UPDATE clients_table SET name = x'ff00'", "UPDATE interfaces_table SET port = 1.5",
        "UPDATE clients_table SET expires_at = '0001-01-01 00:00:00'",
        "UPDATE user_configs_table SET default_dns = '{}'", "DELETE FROM interfaces_table",
        "UPDATE clients_table SET ipv4_address = '::1' WHERE id = 1"])
    edits = st.lists(st.tuples(st.integers(0, len(real) - 1), st.binary(min_size=1, max_size=8)),
                     max_size=4)

    def check(change: tuple[str | None, list[tuple[int, bytes]]]) -> None:
        statement, noise = change
        with tempfile.TemporaryDirectory(prefix="zsn-fuzz-") as folder:
            path = Path(folder) / "wg-easy.db"
            path.write_bytes(real)
            if statement:
                db = sqlite3.connect(path)
                with db:
                    db.execute(statement)
                db.close()
            data = bytearray(path.read_bytes())
            for where, piece in noise:
                data[where:where + len(piece)] = piece
            path.write_bytes(bytes(data))
            found = only_typed_errors(lambda: imports.read_wg_easy(path, {}, "vpn.example.com"))
            if found is not None:
                assert found.interface and all(peer.public_key for peer in found.peers)

    return st.tuples(statements, edits), check


# -- the peer history store (SQLite) ------------------------------------------------


def _recorded_store() -> tuple[bytes, Any]:
    """A store holding the captured peer's life (the history tests' series), and the
    last snapshot recorded into it."""
    from tests.unit.test_wireguard_history import recorded_series
    from zsn.system.host import Host
    from zsn.wireguard.history import store_path

    with tempfile.TemporaryDirectory(prefix="zsn-fuzz-") as folder:
        host = Host(Path(folder))
        (host.root / "var/lib").mkdir(parents=True)
        last = recorded_series(host)
        import sqlite3

        db = sqlite3.connect(store_path(host))
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        return store_path(host).read_bytes(), last


@entry("peer history store", 300, ["zsn.wireguard.history:*"])
def history_store() -> Fuzz:
    from zsn.system.host import Host
    from zsn.wireguard.history import HistoryStore, read_peer, store_path
    from zsn.wireguard.recorder import Recorder

    real, last = _recorded_store()
    [peer] = last.interfaces[0].peers
    now = int(last.taken_at)
    edits = st.lists(st.tuples(st.integers(0, len(real) - 1), st.binary(min_size=1, max_size=8)),
                     max_size=6)

    def check(change: tuple[list[tuple[int, bytes]], int]) -> None:
        data = bytearray(real)
        for where, noise in change[0]:
            data[where:where + len(noise)] = noise
        with tempfile.TemporaryDirectory(prefix="zsn-fuzz-") as folder:
            host = Host(Path(folder))
            store_path(host).parent.mkdir(parents=True)
            store_path(host).write_bytes(bytes(data[:change[1]]))
            store = only_typed_errors(lambda: HistoryStore.open(host, create=False))
            if store is not None:
                try:
                    for read in (store.live_rows, store.peer_names, store.peer_ids,
                                 lambda: store.recent_hours([1, 2], now // 3600 - 200,
                                                            now // 3600),
                                 lambda: store.latest_events([1, 2], 5),
                                 lambda: read_peer(store, "zcaphs1", peer.public_key, now)):
                        only_typed_errors(read)
                finally:
                    store.close()
            recorder = Recorder(host)  # the write path: never raises, says why instead
            recorded = recorder.record(last._replace(taken_at=last.taken_at + 7200),
                                       flush=True)
            recorder.close()
            assert recorded.history_note is None or "\n" not in recorded.history_note

    return st.tuples(edits, st.one_of(st.just(len(real)), st.integers(0, len(real)))), check


# -- ZFS ---------------------------------------------------------------------------
_zfs_words = st.sampled_from([
    "  pool: tank", " state: ONLINE", " state: DEGRADED", "config:", "",
    "\tNAME        STATE     READ WRITE CKSUM", "\ttank        ONLINE       0     0     0",
    "\t  mirror-0  DEGRADED     0     0     0", "\t    sda     OFFLINE      0     0  2.7K",
    "\tlogs", "\tspares", "\t  sdf       AVAIL", "        draid1-0-0  INUSE     currently in use",
    "  scan: scrub in progress since Tue Nov 24 18:20:07 2026",
    "\t193M scanned at 32.1M/s, 89.2M issued at 14.9M/s, 193M total",
    "\t0B repaired, 101.00% done, 00:00:06 to go", "  scan: scrub paused since Mon Jan  1",
    "  scan: scrub repaired 0B in 14h7m with 1 errors on Sun Feb  4 20:54:25 2024",
    "errors: 3 data errors, use '-v' for a list", "errors: Permanent errors have been"])


@entry("zpool status text", 1000,
      ["zsn.zfs.status:parse_text",
       "zsn.zfs.status:_parse_pool",
       "zsn.zfs.status:_parse_tree",
       "zsn.zfs.status:parse_scan"])
def zpool_status_text() -> Fuzz:
    from zsn.zfs import status

    def check(lines: list[str]) -> None:
        pools = only_typed_errors(lambda: status.parse_text("\n".join(lines)))
        for pool in pools or ():
            names = {v.name for v in pool.vdevs}
            assert all(v.parent is None or v.parent in names for v in pool.vdevs)
            assert pool.scan is None or pool.scan.percent is None or \
                0 <= pool.scan.percent <= 100

    return st.lists(st.one_of(_zfs_words, _noise), max_size=14), check


@entry("zpool status JSON", 1000,
      ["zsn.zfs.status:parse_json"])
def zpool_status_json() -> Fuzz:
    from zsn.zfs import status

    vdev = st.fixed_dictionaries({"state": st.one_of(_json_value, st.just("ONLINE")),
                                  "read_errors": _json_value, "vdev_type": _json_value})
    pool = st.fixed_dictionaries({
        "state": _json_value, "vdevs": st.dictionaries(st.just("tank"), st.fixed_dictionaries(
            {"vdevs": st.dictionaries(st.text(max_size=5), vdev, max_size=3)})),
        "scan_stats": st.one_of(_json_value, st.fixed_dictionaries(
            {"function": st.sampled_from(["SCRUB", "RESILVER", "NONE", 3]),
             "state": st.sampled_from(["SCANNING", "FINISHED", "CANCELED", None]),
             "to_examine": _json_value, "issued": _json_value}))})
    document = st.one_of(_noise, st.fixed_dictionaries(
        {"pools": st.dictionaries(st.just("tank"), pool, max_size=1)}).map(json.dumps))

    def check(text: str) -> None:
        for found in only_typed_errors(lambda: status.parse_json(text)) or ():
            assert found.name == "tank"

    return document, check


@entry("zpool iostat stream", 1000,
      ["zsn.zfs.iostat:BlockAssembler.feed",
       "zsn.zfs.iostat:parse_row", "zsn.zfs.iostat:parse_blocks",
       "zsn.zfs.iostat:parse_pools"])
def zpool_iostat_stream() -> Fuzz:
    from zsn.zfs.iostat import BlockAssembler, parse_blocks, parse_pools

    number = st.one_of(st.integers(0, 10 ** 15).map(str), st.just("-"))
    rows = st.lists(st.tuples(st.sampled_from(["tank", "mirror-0", "/dev/sda1", "sdb"]),
                              st.lists(number, min_size=6, max_size=17)), max_size=12)
    lines = rows.map(lambda rs: ["\t".join([name, *values]) for name, values in rs])
    mixed = st.tuples(lines, st.lists(st.one_of(_noise, st.just("1795596113"),
                                                st.just("")), max_size=4))

    def check(parts: tuple[list[str], list[str]]) -> None:
        assembler = BlockAssembler("tank")
        for line in [*parts[0], *parts[1]]:
            for block in only_typed_errors(partial(assembler.feed, line)) or ():
                assert block.rows[0].name == "tank"
                for row in block.rows:
                    source = next(text for text in parts[0]
                                  if text.split("\t")[0] == row.name)
                    assert source  # every row came from a line that was fed
        text = "\n".join([*parts[0], *parts[1]])
        for block in only_typed_errors(lambda: parse_blocks(text, "tank")) or ():
            assert block.rows[0].name == "tank"
        for name, block in (only_typed_errors(lambda: parse_pools(text, ["tank"])) or {}).items():
            assert name == block.pool == "tank"

    return mixed, check


@entry("zpool/zfs list", 1000,
      ["zsn.zfs.listing:parse_pools_text",
       "zsn.zfs.listing:parse_datasets_text",
       "zsn.zfs.listing:parse_text_rows"])
def zpool_and_zfs_list() -> Fuzz:
    from zsn.zfs import listing

    value = st.one_of(st.integers(0, 2 ** 64).map(str), st.sampled_from(
        ["-", "1.00x", "8%", "lz4", "on", "1.5T", "ONLINE"]), _noise)
    row = st.lists(value, min_size=1, max_size=16).map("\t".join)

    def check(rows: list[str]) -> None:
        text = "\n".join(rows)
        pools = only_typed_errors(lambda: listing.parse_pools_text(text))
        assert pools is None or all(isinstance(p["name"], str) for p in pools)
        only_typed_errors(lambda: listing.parse_datasets_text(text))

    return st.lists(row, max_size=5), check


@entry("zfs snapshot list", 1000,
      ["zsn.zfs.snapshots:parse"])
def zfs_snapshot_list() -> Fuzz:
    from zsn.zfs import snapshots

    name = st.one_of(st.sampled_from(["tank/a@b", "tank@x y", "p/q/r@2026-01-01", "tank"]),
                     _noise)
    value = st.one_of(st.integers(0, 2 ** 64).map(str), st.sampled_from(["-", "1.5T"]), _noise)
    row = st.tuples(name, st.lists(value, min_size=0, max_size=7)).map(
        lambda parts: "\t".join([parts[0], *parts[1]]))

    def check(rows: list[str]) -> None:
        text = "\n".join(rows)
        for snapshot in only_typed_errors(lambda: snapshots.parse(text)) or ():
            assert snapshot.full_name + "\t" in text

    return st.lists(row, max_size=5), check


@entry("zfs send outputs", 1000,
      ["zsn.zfs.send:parse_token",
       "zsn.zfs.send:parse_estimate",
       "zsn.zfs.send:parse_properties",
       "zsn.zfs.remote:split_batch"])
def zfs_send_outputs() -> Fuzz:
    from zsn.system.commands import CommandResult
    from zsn.zfs import remote, send

    words = st.sampled_from([
        "resume token contents:", "nvlist version: 0", "\ttoname = tank/a@b",
        "\ttoguid = 0x152fa5cc748a978", "\trawok = 1", "\tbytes = 0x2c2b28",
        "full\ttank/a@b\t9757768", "size\t9757768", "size\t-", "size\t12a",
        "incremental\ta\ttank/a@b\t624", "tank/a\ttype\tfilesystem",
        "tank/a\treceive_resume_token\t1-abc", "@zsn-end 0", "@zsn-end 1", "@zsn-end x"])
    lines = st.lists(st.one_of(words, _noise), max_size=12)

    def check(parts: list[str]) -> None:
        text = "\n".join(parts)
        ok = CommandResult(("zfs",), 0, text, "", 0.0)
        token = only_typed_errors(lambda: send.parse_token("tank/b", "1-x", ok))
        if token is not None:
            assert token.toname == token.fields.get("toname", "")
            assert token.remaining is None or token.remaining >= 0
        size = only_typed_errors(lambda: send.parse_estimate(ok))
        assert size is None or size >= 0
        found = only_typed_errors(lambda: send.parse_properties(text))
        for name, values in (found or {}).items():
            assert all(f"{name}\t{key}\t{value}" in text for key, value in values.items())
        runs = remote.split_batch(text, ["a", "b", "c"], {k: ["zfs"] for k in "abc"})
        assert list(runs) == ["a", "b", "c"][:len(runs)]

    return lines, check


@entry("ZFS kstats", 1000,
      ["zsn.zfs.kstat:parse_bench",
       "zsn.zfs.kstat:parse_table",
       "zsn.zfs.kstat:parse_choice"])
def zfs_kstats() -> Fuzz:
    from zsn.zfs import kstat

    words = st.sampled_from(["implementation   native  byteswap", "scalar 1 2",
                             "fastest scalar scalar", "name type data", "c_max 4 123",
                             "[fastest] scalar sse2", "kfpu_allowed 1"])

    def check(lines: list[str]) -> None:
        text = "\n".join(lines)
        for parse in (kstat.parse_bench, kstat.parse_table, kstat.parse_choice):
            only_typed_errors(lambda parse=parse: parse(text))  # type: ignore[misc]

    return st.lists(st.one_of(words, _noise), max_size=12), check


# -- links ----------------------------------------------------------------------------

_LINK_DUMP = (Path(__file__).parent.parent / "fixtures/links/rtm-getlink.bin").read_bytes()


@entry("rtnetlink dumps", 1000,
      ["zsn.system.rtnetlink:decode_*",
       "zsn.system.rtnetlink:unsigned",
       "zsn.system.rtnetlink:_decode_each"])
def rtnetlink_dumps() -> Fuzz:
    from zsn.system import rtnetlink

    noise = st.binary(max_size=600)
    overwritten = st.tuples(st.integers(0, len(_LINK_DUMP) - 1), st.binary(max_size=64)).map(
        lambda cut: _LINK_DUMP[:cut[0]] + cut[1] + _LINK_DUMP[cut[0] + len(cut[1]):])

    def check(data: bytes) -> None:
        for decode in (rtnetlink.decode_links, rtnetlink.decode_addresses,
                       rtnetlink.decode_all_stats, rtnetlink.decode_routes):
            only_typed_errors(lambda decode=decode: decode([data]))  # type: ignore[misc]

    return st.one_of(noise, overwritten), check


_WLAN = Path(__file__).parent.parent / "fixtures/wlan"
_SCAN_DUMP = (_WLAN / "nl80211-get-scan.wlan0.scanned.bin").read_bytes()
_NL80211_FAMILY = int((_WLAN / "nl80211-family.txt").read_text())


@entry("nl80211 scan dumps", 1000,
      ["zsn.system.nl80211:decode_scan",
       "zsn.system.nl80211:decode_bss"])
def nl80211_scan_dumps() -> Fuzz:
    from zsn.system import nl80211

    overwritten = st.tuples(st.integers(0, len(_SCAN_DUMP) - 1), st.binary(max_size=64)).map(
        lambda cut: _SCAN_DUMP[:cut[0]] + cut[1] + _SCAN_DUMP[cut[0] + len(cut[1]):])

    def check(data: bytes) -> None:
        only_typed_errors(lambda: nl80211.decode_scan([data], _NL80211_FAMILY))

    return st.one_of(st.binary(max_size=600), overwritten), check


@entry("802.11 elements", 1000,
      ["zsn.wlan.elements:advertised"])
def elements_80211() -> Fuzz:
    from zsn.system import nl80211
    from zsn.wlan.elements import advertised
    from zsn.wlan.model import SECURITIES

    captured = [record.elements for record in nl80211.decode_scan([_SCAN_DUMP],
                                                                  _NL80211_FAMILY)]
    changed = st.tuples(st.sampled_from(captured), st.integers(0, 200),
                        st.binary(max_size=16)).map(
        lambda cut: cut[0][:cut[1]] + cut[2] + cut[0][cut[1] + len(cut[2]):])

    def check(value: tuple[bytes, int]) -> None:
        data, capability = value
        shown = only_typed_errors(lambda: advertised(data, capability))
        if shown is not None:
            assert shown.security in SECURITIES

    return st.tuples(st.one_of(changed, st.binary(max_size=300)),
                                      st.integers(0, 0xFFFF)), check


@entry("/proc/net/bonding", 1000,
      ["zsn.links.bonding:parse_proc_bonding", "zsn.links.bonding:parse_sysfs_enum"])
def proc_net_bonding() -> Fuzz:
    from zsn.links.bonding import parse_proc_bonding, parse_sysfs_enum

    lines = st.sampled_from([
        "Bonding Mode: IEEE 802.3ad Dynamic link aggregation", "MII Status: up",
        "Slave Interface: eth1", "Slave Interface:", "Link Failure Count: 3",
        "Link Failure Count: x", "Aggregator ID: 1", "Partner Mac Address: 00:00:00:00:00:00",
        "details partner lacp pdu:", "    system mac address: 22:82:52:28:3e:5b",
        "Currently Active Slave: None", "802.3ad info", "", "Speed: Unknown"])

    def check(parts: list[str]) -> None:
        for part in parts[:3]:  # a sysfs enum is one such line: "802.3ad 4"
            found = only_typed_errors(lambda part=part: parse_sysfs_enum(part))  # type: ignore[misc]
            assert found is None or isinstance(found[1], int)
        bond = only_typed_errors(lambda: parse_proc_bonding("\n".join(parts)))
        if bond is not None:
            assert all(slave.name and f"Slave Interface: {slave.name}" in parts
                       for slave in bond.slaves)

    return st.lists(st.one_of(lines, _noise), max_size=20), check


@entry("netplan YAML edit", 500,
      ["zsn.links.persist.yamledit:_load",
       "zsn.links.persist.yamledit:_indirections",
       "zsn.links.persist.yamledit:YamlDocument._root"])
def netplan_yaml_edit() -> Fuzz:
    import yaml

    from zsn.links.persist.yamledit import YamlDocument, _indirections

    fragments = st.sampled_from([
        "network:", "  version: 2", "  ethernets:", "    eth0: {}", "    eth1:",
        "      dhcp4: true", "  bonds:", "    bond0:", "      interfaces: [eth0]",
        "      interfaces:", "        - eth1", "  bridges: {br0: {interfaces: [eth2]}}",
        "# comment", "  # indented comment", "", "network: 7", "- x", "  vlans: null"])
    value = st.fixed_dictionaries({"interfaces": st.lists(st.sampled_from(
        ["eth1", "eth2", "bond0.10"]), max_size=3), "mtu": st.integers(68, 9000)})

    def check(case: tuple[list[str], dict[str, Any]]) -> None:
        text = "\n".join(case[0]) + "\n"
        assert all(line >= 0 for line, _what in _indirections(text))
        document = only_typed_errors(lambda: YamlDocument(text, "fuzz.yaml"))
        if document is None:
            return
        before = document.text
        if only_typed_errors(lambda: document.set(("network", "bonds", "zb0"),
                                                   case[1])) is None and document.text == before:
            return  # refused: nothing changed
        assert yaml.safe_load(document.text)["network"]["bonds"]["zb0"] == case[1]

    return st.tuples(st.lists(st.one_of(fragments, _noise), max_size=12),
                                        value), check


@entry("network config files", 1000,
      ["zsn.formats.unitfile:UnitFile.__init__",
       "zsn.links.persist.ifupdown:parse",
       "zsn.links.persist.netctl:Profile.parsed",
       "zsn.links.persist.networkd:parse_timespan_ms"])
def network_config_files() -> Fuzz:
    from zsn.formats.unitfile import UnitFile
    from zsn.links.persist.ifupdown import DIALECT_MARKERS, parse
    from zsn.links.persist.netctl import Profile, profile_config
    from zsn.links.persist.networkd import parse_timespan_ms

    lines = st.sampled_from([
        "[Match]", "Name=eth0 eth1", "[Network]", "Bond=bond0", "VLAN=", "[NetDev]",
        "Kind=bond", "MTUBytes=9000", "# c", "; c", "iface bond0 inet manual",
        "auto bond0 eth1", "    bond-slaves eth1 eth2", "\tbridge_ports none",
        "source /etc/network/interfaces.d/*", "Interface=bond0", "Connection=bond",
        "BindsToInterfaces=(eth1 'eth 2')", "ExecUpPost='ip link set dev bond0 mtu 9000'",
        "VLANID=10", "Mode=802.3ad", "X=(unclosed", "=", "",
        "iface br0 inet manual", "    slaves eth0", "    mtu 1500", "    use bridge",
        "    requires all", "    bridge-ports regex eth.*", "  bond-mode 1",
        "    bond-master bond0", "    bond-ports glob swp1-2", "iface br0",
        'ExecUpPost="ip link set dev br0 address $(cat /sys/class/net/eth0/address); ip_set"',
        "ExecDownPre=`ip link set bond0 mtu $MTU`", 'ExecUpPost=("$(a "b)")" ${X:-y})',
        "ExecUpPost=$((1+"])

    def check(parts: list[str]) -> None:
        text = "\n".join(parts) + "\n"
        unit = only_typed_errors(lambda: UnitFile(text))
        if unit is not None:
            assert unit.text == text
            unit.values("Network", "VLAN")
        for dialect, _markers in DIALECT_MARKERS:
            reading = only_typed_errors(partial(parse, text, dialect))
            assert reading is None or reading.files[0].text == text
        profile = only_typed_errors(lambda: Profile.parsed("/etc/netctl/x", None, text))
        if profile is not None:
            only_typed_errors(lambda: profile_config(profile))
            for hook in profile.opaque_hooks():  # kept byte for byte
                assert text[hook.start:hook.end].startswith(f"{hook.name}=")
        for part in parts:
            only_typed_errors(lambda part=part: parse_timespan_ms(part))  # type: ignore[misc]

    return st.lists(st.one_of(lines, _noise), max_size=15), check


@entry("ZFS pool cache file", 1000,
      ["zsn.zfs.cachefile:unpack"])
def zfs_pool_cache_file() -> Fuzz:
    from zsn.zfs import cachefile

    real = (Path(__file__).parents[1] / "fixtures" / "zfs-lab" /
            "etc-zfs-zpool.cache.full-rz-small.bin").read_bytes()
    edits = st.lists(st.tuples(st.integers(0, len(real) - 1), st.integers(0, 255)),
                     max_size=4)
    cut = st.one_of(st.just(len(real)), st.integers(0, len(real)))

    def check(change: tuple[list[tuple[int, int]], int, int]) -> None:
        data = bytearray(real)
        for where, byte in change[0]:
            data[where] = byte
        data = data[:change[1]] + data[change[1]:][:change[2]] * 2
        found = only_typed_errors(lambda: cachefile.unpack(bytes(data)))
        if found is not None:
            only_typed_errors(lambda: cachefile.top_vdevs(found))

    return st.tuples(edits, cut, st.integers(0, 64)), check


_toml_noise = st.one_of(
    st.text(max_size=80),
    st.builds(lambda key, value: f"{key} = {value}\n",
              st.sampled_from(["enabled", "on_connect", "on_disconnect", "on_conect"]),
              st.sampled_from(["true", "false", "yes", '["/bin/x"]', '["x", "y"]', '"a"',
                               "[]", '[1, "/a"]', '["/a", ""]'])))


@entry("history settings", 1000,
      ["zsn.wireguard.hooks:parse"])
def history_settings() -> Fuzz:
    from zsn.wireguard import hooks

    def check(text: str) -> None:
        loaded = only_typed_errors(lambda: hooks.parse(text, Path("/etc/zsn/history.toml")))
        if loaded is not None:
            for argv in loaded.hooks.values():
                assert argv and argv[0].startswith("/")

    return _toml_noise, check


@entry("history amounts", 1000,
      ["zsn.wireguard.history:decode_amounts"])
def history_amounts() -> Fuzz:
    from zsn.wireguard.history import decode_amounts, encode_amount

    def check(value: tuple[bytes, int]) -> None:
        data, amount = value
        if len(data) % 2 == 0:
            assert all(number >= 0 for number in decode_amounts(data))
            _accepted[0] += 1
        [back] = decode_amounts(encode_amount(amount))
        assert abs(back - min(amount, 2047 << 36)) <= max(amount, 1) / 2048

    return st.tuples(st.binary(max_size=64),
                                      st.integers(0, 2**70)), check


@entry("import sources", 1000,
      ["zsn.wireguard.imports:read_setup_vars",
       "zsn.wireguard.imports:read_env_file",
       "zsn.wireguard.imports:read_wg_easy",
       "zsn.wireguard.imports:_read_wg_easy_v14"])
def import_sources() -> Fuzz:
    from zsn.wireguard import imports

    def check(text: str) -> None:
        found = only_typed_errors(lambda: imports.read_setup_vars(text, "setupVars.conf"))
        if found is not None:
            again = imports.read_setup_vars(
                "".join(f"{key}={value}\n" for key, value in found.items()), "again")
            assert again == found
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "wg0.json"
            path.write_text(text)
            only_typed_errors(lambda: imports.read_env_file(path))
            only_typed_errors(lambda: imports.read_wg_easy(path, {}, "vpn.example.com"))

    return st.one_of(
        _noise, _json_value.map(json.dumps),
        st.lists(st.sampled_from(["pivpnDEV=wg0", 'pivpnHOST="a b"', "VPN=wireguard",
                                  "x", "# c", "A='q'", "B=\"", "=1"]),
                 max_size=6).map("\n".join)), check


@entry("expiry times", 1000,
      ["zsn.wireguard.expiry:parse_when",
       "zsn.wireguard.expiry:parse_stored"])
def expiry_times() -> Fuzz:
    from zsn.wireguard import expiry

    def check(text: str) -> None:
        for at in (only_typed_errors(lambda: expiry.parse_when(text, None, 1_800_000_000)),
                   only_typed_errors(lambda: expiry.parse_when(None, text, 1_800_000_000))):
            if at is not None:  # what was accepted is written and read back
                assert expiry.parse_stored(expiry.format_stored(at)) == at
        stored = expiry.parse_stored(text)
        if stored is not None:
            _accepted[0] += 1

    return st.one_of(
        st.text(max_size=30),
        st.sampled_from(["2030-01-01", "2030-01-01T10:00Z", "30d", "1d12h", "0d", "99999w",
                         "99999999999d", "2030-13-01", "2030-01-01T25:00",
                         "2030-01-01T10:00:00+01:00"])), check


# -- WireGuard access rules -------------------------------------------------------------

_acl_lines = st.one_of(
    _noise,
    st.builds(lambda key, value: f"{key} = {value}",
              st.sampled_from(["Default", "Group", "Rule", "Test", "default", "RULE", "X"]),
              st.one_of(_noise, st.sampled_from([
                  "allow", "deny", "kids: alice, bob", "kids:", "a-b: c, c", "kids alice",
                  "allow kids -> nas 445/tcp", "deny any -> 10.0.0.0/8", "allow a -> b 0",
                  "allow behind:site -> fd00::/64 53/udp", "allow 10.0.0.1/8 -> any",
                  "kids -> nas:445/tcp deny", "a -> [fd00::1]:22 allow", "a -> b:x allow",
                  "allow a -> fd00::1%eth0", "deny 10.0.0.0/8 -> fd00::/8"]))),
    st.sampled_from(["# comment", "", "  ", "Rule=allow any -> any"]))


@entry("access rules file", 2000, ["zsn.wireguard.policy:parse*"])
def access_rules_file() -> Fuzz:
    from zsn.wireguard import policy

    def check(text: str) -> None:
        read = only_typed_errors(lambda: policy.parse(text, "wg0", "wg0.acl"))
        if read is not None:
            again = policy.parse(policy.render(read), "wg0", "again")
            assert again == read

    return _joined(st.lists(_acl_lines, max_size=12)), check


@entry("nft table listings", 1000,
       ["zsn.system.nftables:decode", "zsn.wireguard.acl_table:*decode*",
        "zsn.wireguard.acl_table:TableSpec.from_dict", "zsn.wireguard.acl_table:parse_span"])
def nft_table_listings() -> Fuzz:
    from zsn.system import nftables
    from zsn.wireguard import acl_table

    folder = Path(__file__).parents[1] / "fixtures" / "wireguard" / "acl"
    real = [(folder / name).read_text() for name in (
        "nft-list-table.nftables-1.0.6.counted.json",
        "nft-list-table.nftables-1.0.6.hand-changed.json")]
    interface = "zcap7277hc"

    def check(value: tuple[int, list[tuple[int, str]], str | None]) -> None:
        which, edits, other = value
        text = real[which % 2] if other is None else other
        for where, piece in edits:
            where %= max(len(text), 1)
            text = text[:where] + piece + text[where + len(piece):]
        objects = only_typed_errors(lambda: nftables.decode(text, "nft"))
        if objects is not None:
            live = only_typed_errors(lambda: acl_table.decode(objects, interface))
            if live is not None:
                rendered = {"nftables": acl_table.render(live.spec)}
                assert acl_table.TableSpec.from_dict(live.spec.as_dict()) == live.spec
                assert json.loads(json.dumps(rendered)) == rendered

    return st.tuples(
        st.integers(0, 1),
        st.lists(st.tuples(st.integers(0, 6000), st.sampled_from(
            ["0", "9", '"', "{", "}", "[", "]", ",", "-1", "null", "true", "@", "x", " ",
             '"range"', '"prefix"', '"elem"', "4", "6", '"::"'])), max_size=3),
        st.one_of(st.none(), _json_value.map(json.dumps))), check



# -- try records ----------------------------------------------------------------------

_TRY_RECORD: dict[str, Any] = {
    "format": 2, "id": "c0ffee", "title": "set eth0: MTU 1450", "command": "zsn link set",
    "seconds": 60.0, "created": 1.0e9, "state": "pending", "deadline": 5.0,
    "deadline_wall": 1.0e9, "applied": True, "session": "", "netns": "",
    "guardian": {"how": "process"}, "outcome": None,
    "owns": ["link eth0", "file /etc/x"], "after": {"link eth0 mtu": 1450},
    "undo": [
        {"kind": "links", "data": {"links": [{
            "name": "eth0", "exists": True, "kind": "veth", "config": None, "master": None,
            "mtu": 1500, "up": True, "addresses": ["10.0.0.1/24"]}], "routes": [{
                "family": 2, "table": 254, "dst": None, "dst_len": 0, "gateway": "10.0.0.9",
                "oif": "eth0", "priority": None, "proto": 3, "scope": 0, "type": 1,
                "prefsrc": None, "expires": None, "metrics": None}]}},
        {"kind": "file", "data": {"path": "/etc/x", "before": "a = 1\n", "mode": 420,
                                  "after": "0" * 64, "copy": "/run/zsn/changes/c0ffee/before/1"}},
        {"kind": "firewall", "data": {
            "family": 4, "table": "nat", "chain": "POSTROUTING", "target": "MASQUERADE",
            "present": False, "source": "10.6.0.0/24", "in_interface": None,
            "out_interface": "eth0", "conntrack": []}},
        {"kind": "wg-peer", "data": {"interface": "wg0", "public_key": "A" * 43 + "=",
                                     "before": None}},
        {"kind": "nft-table", "data": {"interface": "wg0", "table": None}}],
    "deferred": [{"path": "/etc/netplan/01.yaml", "new_text": "network: {}\n", "mode": None,
                  "private_dir": False, "backup": True, "remove": False, "previous": None}],
}


def _replaced(record: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`record` with the value at `path` (keys and indexes) replaced by `value`."""
    if not path:
        return value
    copy = json.loads(json.dumps(record))
    cursor = copy
    for step in path[:-1]:
        cursor = cursor[step]
    cursor[path[-1]] = value
    return copy


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@entry("try records", 1000,
       ["zsn.tries.store:Store.load", "zsn.tries.store:Change.from_dict",
        "zsn.tries.undo:Undo.from_dict"])
def try_records() -> Fuzz:
    from zsn.system.host import Host
    from zsn.tries.store import STORE_DIR, Change, Store

    replaced = st.builds(_replaced, st.just(_TRY_RECORD), st.sampled_from(_paths(_TRY_RECORD)),
                         st.one_of(_json_value, st.sampled_from([
                             "/etc/../x", "../x", "-j", "a b", "wg0", "/run/zsn/x", 1.5,
                             2**70, -1, "/usr/bin/iptables", ["iptables", "-A"], True])))
    text = st.one_of(st.just(json.dumps(_TRY_RECORD)), replaced.map(json.dumps),
                     _hostile_json, _noise)

    def check(record: str) -> None:
        with tempfile.TemporaryDirectory(prefix="zsn-fuzz-") as folder:
            host = Host(Path(folder))
            path = host.path(f"{STORE_DIR}/c0ffee/change.json")
            path.parent.mkdir(parents=True, mode=0o700)
            path.write_text(record, errors="surrogateescape")
            path.chmod(0o600)
            change = only_typed_errors(lambda: Store(host).load("c0ffee"))
        if change is not None:
            assert Change.from_dict(json.loads(json.dumps(change.as_dict()))) == change

    return text, check


# -- desired-state files ------------------------------------------------------------

_STATE_DOCS = Path(__file__).parents[2] / "docs" / "state.md"


def _state_examples() -> list[str]:
    import re

    return [block for block in re.findall(r"```yaml\n(.*?)```", _STATE_DOCS.read_text(),
                                          re.DOTALL) if block.startswith("version:")]


_state_fragments = st.sampled_from([
    "version: 1", "version: 2", "version: '1'", "wireguard:", "  exclusive: true",
    "  interfaces:", "    - name: wg0", "    - name: ../x", "      listen_port: 70000",
    "      addresses: [10.0.0.1/24]", "      addresses: [10.0.0.0/24]", "      up: yes",
    "      peers:", "        - public_key: \"U8rvHcQ8SouCvbNH+EItFBTisPYHSV/+f+0VROrzuQY=\"",
    "          allowed_ips: [10.0.0.2/32, ::/0, 10.0.0.2/33]", "          keepalive: 0",
    "          endpoint: \"[fd00::1]:51820\"", "          endpoint: host", "          name: a/b",
    "      access: {default: maybe}", "      access: {rules: ['allow a -> b 99999']}",
    "      gateway: {egress: eth0}", "      private_key: x", "links:", "  bonds:",
    "    - {name: bond0, mode: 802.3ad, members: []}", "  mtu: {eth0: 9000, lo: 1}",
    "  vlans: [{name: v, parent: p, id: 4095}]", "zfs: {}", "wireguard: {}", "links: []",
    "zfs:", "  policies:", "    - dataset: tank/home", "    - dataset: \"tank/a\\nb\"",
    "      keep: {hourly: 24, frequent: 4}", "      keep: {minutely: 1, hourly: -1}",
    "      schedule: {daily_hour: 24}", "      pre_hook: [/usr/bin/x, \"a\\x00\"]",
    "      hook_timeout: 12.5", "      frequent_period: 420", "      prefix: autosnap",
    "  jobs:", "    - name: offsite", "      target: \"root@[fd00::2]:backup/a\"",
    "      source: tank/home", "      limit: 1126.4", "      every: 59", "      via: tcp",
])


def _state_as_written(value: object) -> object:
    """A decoded document as the file that says the same (None fields left out)."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _state_as_written(getattr(value, field.name))
                for field in dataclasses.fields(value)
                if getattr(value, field.name) is not None}
    if isinstance(value, list):
        return [_state_as_written(item) for item in value]
    if isinstance(value, dict):
        return {key: _state_as_written(item) for key, item in value.items()}
    return value


@entry("desired-state files", 1000, ["zsn.desired.document:parse"])
def desired_state_files() -> Fuzz:
    from zsn.desired.document import parse, render

    examples = _state_examples()
    changed = st.tuples(st.sampled_from(examples), st.lists(st.tuples(
        st.integers(0, 3000), st.one_of(_noise, st.sampled_from(
            [":", "-", "[", "]", "{", "}", "'", '"', "\n", "  ", "#", "&a", "*a", "!!str",
             "10.66.0.300/24", "=", "true"]))), max_size=3)).map(_spliced)
    texts = st.one_of(
        st.sampled_from(examples), changed, _hostile_yaml, _hostile_json, _noise,
        _json_value.map(json.dumps),
        st.lists(st.one_of(_state_fragments, _noise), max_size=14).map("\n".join))

    def check(text: str) -> None:
        document = only_typed_errors(lambda: parse(text, "state.yaml"))
        if document is not None:
            written = _state_as_written(document)
            assert isinstance(written, dict)
            for as_json in (False, True):
                again = parse(render(written, as_json=as_json), "again")
                assert again == document

    return texts, check


def _spliced(value: tuple[str, list[tuple[int, str]]]) -> str:
    text, edits = value
    for where, piece in edits:
        where %= max(len(text), 1)
        text = text[:where] + piece + text[where + len(piece):]
    return text




# -- disks: smartctl's JSON, zsn's SMART records, SCSI serial VPD pages ---------------------

def _edited_records(written: str, words: list[str]) -> st.SearchStrategy[str]:
    """Any JSON, and `written` (a record file zsn wrote) with a few pieces overwritten
    by JSON's punctuation, numbers, literals or `words`."""
    def changed(edits: list[tuple[int, str]]) -> str:
        text = written
        for where, piece in edits:
            where %= len(text)
            text = text[:where] + piece + text[where + len(piece):]
        return text

    return st.one_of(_hostile_json, _json_value.map(json.dumps), st.lists(st.tuples(
        st.integers(0, 4000), st.sampled_from(["0", "9", '"', "[", "]", "{", "}", ",", "-1",
                                               "null", "true", "1e999", *words])),
        min_size=1, max_size=3).map(changed))


@entry("smartctl JSON", 600, ["zsn.zfs.smart:parse", "zsn.zfs.smart:from_output"])
def smartctl_json() -> Fuzz:
    """Real outputs (tests/fixtures/smart) with one value anywhere replaced by any JSON
    value, and any JSON: a `Smart` or one line; what is read reads back the same from
    its own fields."""
    from zsn.zfs import smart

    folder = _FIXTURES / "smart"
    documents = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]

    def changed(case: tuple[int, list[str], Any]) -> str:
        document = json.loads(json.dumps(documents[case[0] % len(documents)]))
        node = document
        for key in case[1]:
            if isinstance(node, list) and node:
                index = hash(key) % len(node)
                if not isinstance(node[index], dict | list):
                    node[index] = case[2]
                    break
                node = node[index]
                continue
            if not isinstance(node, dict) or not node:
                break
            name = sorted(node)[hash(key) % len(node)]
            if not isinstance(node[name], dict | list):
                node[name] = case[2]
                break
            node = node[name]
        return json.dumps(document)

    texts = st.one_of(_hostile_json, _noise, _json_value.map(json.dumps),
                      st.tuples(st.integers(0, 20), st.lists(st.text(max_size=2), max_size=6),
                                _json_value).map(changed))

    def check(text: str) -> None:
        found = only_typed_errors(lambda: smart.parse(text, "smartctl /dev/sda", read_at=1.0))
        if found is None:
            return
        assert found.state in ("ok", "standby", "unreadable")
        failing, warnings = smart.problems(found)
        assert all("\n" not in line for line in (*failing, *warnings, found.message))
        assert smart.Smart(*found) == found

    return texts, check


@entry("SMART records", 300, ["zsn.zfs.disk_state:parse"])
def smart_records() -> Fuzz:
    """zsn's record file: any JSON and records zsn wrote with values replaced: records or
    one line; what is accepted renders and reads back the same."""
    from zsn.zfs import disk_state, smart

    reading = smart.parse((_FIXTURES / "smart" /
                           "sata-hdd-failed-reallocated-now.hds721050dle630.scrutiny.json")
                          .read_text(), "x", read_at=1000.0)
    records = disk_state.SmartRecords()
    disk_state.add_reading(records, "naa.5000cca37fca81a8", "sdc", reading)
    disk_state.add_reading(records, "naa.5000cca37fca81a8", "sdc",
                           reading._replace(read_at=2000.0, pending=9))
    texts = _edited_records(disk_state.render(records), ['"ok"', "2"])

    def check(text: str) -> None:
        found = only_typed_errors(lambda: disk_state.parse(text, "smart.json"))
        if found is not None:
            assert disk_state.parse(disk_state.render(found), "again") == found
            for record in found.disks.values():
                assert all(isinstance(g.describe(), str) for g in disk_state.growth(record))

    return texts, check


@entry("SCSI serial VPD page", 500, ["zsn.zfs.disks:parse_vpd_serial"])
def vpd_serial() -> Fuzz:
    """Any bytes and pages with the serial page's header: a serial or None, never an
    exception; a serial is printable text without its padding."""
    from zsn.zfs import disks

    def check(data: bytes) -> None:
        serial = disks.parse_vpd_serial(data)
        if serial is not None:  # a serial read: printable, no padding
            assert serial.isprintable() and serial == serial.strip(" \x00")
            _accepted[0] += 1

    pages = st.tuples(st.integers(0, 255), st.binary(max_size=40)).map(
        lambda parts: bytes([0, 0x80, 0, parts[0]]) + parts[1])
    return st.one_of(st.binary(max_size=64), pages), check




# -- scrub and trim schedules -----------------------------------------------------------

_CRON_TEXT = (Path(__file__).parents[1] / "fixtures/zfs-schedules/"
              "etc-cron.d-zfsutils-linux.debian12.txt").read_text()
_OLD_UNIT_TEXT = (Path(__file__).parents[1] / "fixtures/zfs-schedules/"
                  "zsn-zfs-scrub-wilbur.service.zsn-0d46de4").read_text()
_schedule_words = st.sampled_from([
    "24", "0", "8-14", "1-7", "*", "7", "9", "0-40", "root", "/usr/lib/zfs-linux/scrub",
    "/usr/lib/zfs-linux/trim", "[ $(date +\\%w) -eq 0 ]", "-eq 9", "Sun", "*-*-08..14",
    "*-*-31..01", "01:00:00", "25:00", "weekly", "monthly", "2nd", "5th", "Sat", "03:30",
    "#", "PATH=/bin", "\t", "tank", "org.debian:periodic-scrub", "disable", "-", ""])
_schedule_text = st.one_of(
    _joined(st.lists(st.lists(st.one_of(_schedule_words, _noise), max_size=9).map(" ".join),
                     max_size=8)),
    st.tuples(st.integers(0, len(_CRON_TEXT)), _noise).map(
        lambda cut: _CRON_TEXT[:cut[0]] + cut[1] + _CRON_TEXT[cut[0]:]),
    st.tuples(st.integers(0, len(_OLD_UNIT_TEXT)), _noise).map(
        lambda cut: _OLD_UNIT_TEXT[:cut[0]] + cut[1] + _OLD_UNIT_TEXT[cut[0]:]),
    _noise)


@entry("scrub schedules", 600, ["zsn.zfs.scrubs:parse_at", "zsn.zfs.scrubs:parse_calendar",
                                "zsn.zfs.scrubs:parse_cron",
                                "zsn.zfs.scrubs:parse_cron_properties",
                                "zsn.zfs.scrubs:old_unit"])
def scrub_schedules() -> Fuzz:
    """Debian's cron file with noise put in, and lines of cron fields, calendar
    expressions, --at words, ``zfs get`` rows and zsn's old unit with noise put in: typed
    errors or nothing found; every slot read (from the cron job, an OnCalendar or --at)
    renders to a calendar that reads back as the same slot, and to an --at (when one
    says it) that does; an old unit is named by a line of the text."""
    from zsn.zfs import scrubs

    def round_trip(slot: scrubs.Slot | None) -> None:
        if slot is not None:
            assert scrubs.parse_calendar(slot.calendar, slot.delay) == slot, slot
            at = scrubs.at_text(slot)
            assert at is None or scrubs.parse_at(at, slot.every) == slot, (slot, at)

    def check(text: str) -> None:
        job = only_typed_errors(lambda: scrubs.parse_cron(text))
        for slot in (job.slots.values() if job is not None else ()):
            round_trip(slot)
        round_trip(only_typed_errors(lambda: scrubs.parse_calendar(text)))
        for every in scrubs.EVERY:
            round_trip(only_typed_errors(partial(scrubs.parse_at, text, every)))
        found = only_typed_errors(lambda: scrubs.parse_cron_properties(text))
        assert found is None or all(set(kinds) <= {"scrub", "trim"} for kinds in found.values())
        old = only_typed_errors(lambda: scrubs.old_unit(text, "/x.service", "scrub", "wilbur"))
        assert old is None or 1 <= old.line <= len(text.splitlines()), old

    return _schedule_text, check
# -- scrub history: zpool history lines, zsn's scrub records -------------------------------

@entry("zpool history", 600,
       ["zsn.zfs.scrub_history:parse_history", "zsn.zfs.scrub_history:history_time"])
def zpool_history() -> Fuzz:
    """The lab's real `zpool history -il` (tests/fixtures/zfs-scrubs-lab) cut into lines,
    shuffled, repeated, changed and mixed with noise: finished scrubs or nothing, never an
    exception; each run ends after it starts and says so."""
    from zsn.zfs import scrub_history as scrubs

    lines = (_FIXTURES / "zfs-scrubs-lab" / "zpool-history-il.txt").read_text().splitlines()
    changed_line = st.tuples(st.sampled_from(lines), st.integers(0, 120), st.sampled_from(
        ["9", "0", " ", "]", "[", "=", "func=2", "done", "-", "99999", "\x00", "é"])).map(
        lambda c: c[0][:c[1]] + c[2] + c[0][c[1] + len(c[2]):])
    texts = st.lists(st.one_of(st.sampled_from(lines), changed_line, _noise),
                     max_size=30).map("\n".join)

    def check(text: str) -> None:
        runs = only_typed_errors(lambda: scrubs.parse_history(text))
        for run in runs or ():
            assert run.seconds is not None and run.seconds >= 0
            assert run.started is not None and run.started <= run.ended
            assert run.seen_in == ("history",)

    return texts, check


@entry("scrub records", 300, ["zsn.zfs.scrub_history:parse_records"])
def scrub_records() -> Fuzz:
    """zsn's scrub record file: any JSON, and records zsn wrote from the lab's history
    with values replaced: records or one line; what is accepted renders and reads back
    the same."""
    from zsn.zfs import scrub_history as scrubs

    runs = scrubs.parse_history((_FIXTURES / "zfs-scrubs-lab" /
                                 "zpool-history-il.txt").read_text())
    written = scrubs.render(scrubs.ScrubRecords(pools={"scrublab": scrubs.merge([], runs)}))
    texts = _edited_records(written, ['"scan"', '"history"', '"x"'])

    def check(text: str) -> None:
        found = only_typed_errors(lambda: scrubs.parse_records(text, "scrubs.json"))
        if found is not None:
            assert scrubs.parse_records(scrubs.render(found), "again") == found
            for runs in found.pools.values():
                scrubs.trend(runs)

    return texts, check



# -- ZFS protection ---------------------------------------------------------------------

_snapshot_class = st.sampled_from(["frequently", "hourly", "daily", "weekly", "monthly",
                                   "yearly", "minutely", ""])
_policy_value = st.fixed_dictionaries({}, optional={
    "keep": st.dictionaries(_snapshot_class, st.one_of(
        st.integers(-2, 200_000), st.booleans(), st.text(max_size=3)), max_size=4),
    "frequent_period": st.one_of(st.sampled_from([60, 300, 900, 420, 0]),
                                 st.text(max_size=3)),
    "recursive": st.one_of(st.booleans(), st.integers(0, 1)),
    "prefix": st.sampled_from(["zsn", "autosnap", "syncoid", ""]),
    "pre_hook": st.one_of(st.lists(st.sampled_from(["/bin/true", "x", "/a b", "a\nb", ""]),
                                   max_size=3), st.text(max_size=8)),
    "schedule": st.dictionaries(st.sampled_from(["daily_hour", "weekly_wday", "yearly_mon",
                                                 "nope"]), st.integers(-1, 40), max_size=2),
    "hook_timeout": st.one_of(st.floats(allow_nan=False), st.integers(-5, 5000)),
    "take": st.booleans(), "extra": _json_value})
_job_value = st.fixed_dictionaries({
    "source": st.sampled_from(["tank/a", "tank", "-x", "tank@s", ""]),
    "target": st.sampled_from(["b/c", "root@h:b/c", "[fd00::1]:b/c", "-oX:b", "h:/b", ""])},
    optional={"every": st.integers(-1, 10**9), "via": st.sampled_from(["ssh", "tcp", "nc"]),
              "limit": st.one_of(st.none(), st.floats(allow_nan=False), st.integers()),
              "raw": st.one_of(st.booleans(), st.none()), "added": st.floats(allow_nan=False)})


@entry("ZFS policy file", 1500, ["zsn.zfs.policy:decode", "zsn.zfs.policy:_unknown_field"])
def zfs_policy_file() -> Fuzz:
    from zsn.zfs.policy import decode, encode

    def check(text: str) -> None:
        found = only_typed_errors(lambda: decode(text, "/etc/zsn/zfs.json"))
        if found is not None:  # what is accepted is written and read back the same
            assert decode(encode(*found)) == found

    return st.one_of(
        _noise, _json_value.map(json.dumps),
        st.fixed_dictionaries({}, optional={
            "version": st.sampled_from([1, 2, "1"]),
            "policies": st.dictionaries(st.sampled_from(["tank/a", "tank", "tank//b", "@x",
                                                         "a" * 300]), _policy_value,
                                        max_size=3),
            "jobs": st.dictionaries(st.sampled_from(["offsite", "a.b-c", "-x", "x" * 70]),
                                    _job_value, max_size=2)}).map(json.dumps)), check


@entry("ZFS policy options", 1000,
       ["zsn.zfs.policy:parse_duration", "zsn.zfs.policy:parse_hook",
        "zsn.zfs.policy:parse_keep"])
def zfs_policy_options() -> Fuzz:
    from zsn.zfs import policy

    def check(text: str) -> None:
        seconds = only_typed_errors(lambda: policy.parse_duration(text, "--every"))
        assert seconds is None or (isinstance(seconds, int) and seconds >= 0)
        hook = only_typed_errors(lambda: policy.parse_hook(text))
        if hook:  # an accepted hook is an argv list the file takes back
            assert policy.check_hook(hook) == hook
        keep = only_typed_errors(lambda: policy.parse_keep(text))
        if keep is not None:
            assert policy.parse_keep(",".join(f"{c}={n}" for c, n in keep.items())) == keep

    return st.one_of(_noise, st.sampled_from([
        "15m", "1h", " 2d ", "90s", "1w", "0", "1y", "-1h", "9" * 40, "hourly=24,daily=7",
        "frequent=4", "hourly=0", "hourly=1,hourly=2", "weekly=x", "yearly=100001",
        "/usr/bin/logger -t zsn 'a b'", "/bin/sh -c 'x | y'", "a | b", "/x > y", "'open",
        "/bin/echo \x01", "", "/bin/true;", "hourly = 3 , daily=1"])), check


_sanoid_lines = st.sampled_from([
    "[tank/a]", "[tank/a/b]", "[template_x]", "[template_default]", "[version]", "[/abs]",
    "[ tank/c ]", "\tuse_template = x", "use_template = x, nope", "hourly = 3",
    "daily = 0", "frequently = 2", "frequent_period = 5", "frequent_period = 7",
    "recursive = yes", "recursive = zfs", "recursive = maybe", "process_children_only = 1",
    "skip_children = yes", "autosnap = no", "autoprune = off", "Hourly = 1",
    "pre_snapshot_script = /bin/true", "post_snapshot_script = /bin/x | y",
    "script_timeout = -1", "daily_hour = 25", "monthly_mday = 31", "path = tank/z",
    "hourly_warn = 90m", "hourly = 3 # c", "# comment", "; c", "", "= x", "key"])


@entry("sanoid.conf import", 1500,
       ["zsn.zfs.sanoid:parse_ini", "zsn.zfs.sanoid:import_sections"])
def sanoid_conf_import() -> Fuzz:
    from zsn.zfs import sanoid
    from zsn.zfs.policy import decode, encode

    def check(lines: list[str]) -> None:
        sections = only_typed_errors(lambda: sanoid.parse_ini("\n".join(lines), "sanoid.conf"))
        if sections is None:
            return
        for keep in (False, True):
            found = only_typed_errors(partial(sanoid.import_sections, sections,
                                              keep_commands=keep))
            if found is not None:  # every policy it makes is one zsn's file takes back
                assert decode(encode(found.policies, {}))[0] == found.policies

    return st.lists(st.one_of(_sanoid_lines, _noise), max_size=14), check


@entry("ZFS protection records", 1000,
       ["zsn.zfs.state:read_record", "zsn.zfs.state:typed", "zsn.zfs.jobs:read_record",
        "zsn.zfs.autosnap:last_run"])
def zfs_protection_records() -> Fuzz:
    from zsn.system.host import Host
    from zsn.zfs import autosnap, jobs, state

    host = Host(Path(tempfile.mkdtemp(prefix="zsn-fuzz-")))
    job_path = jobs.record_path(host, "fuzz")
    run_path = state.record_path(host, autosnap.RUN_RECORD)
    job_path.parent.mkdir(parents=True)

    def check(text: str) -> None:
        job_path.write_text(text)
        run_path.write_text(text)
        record = only_typed_errors(lambda: jobs.read_record(host, "fuzz"))
        for key, value in (record or {}).items():
            assert isinstance(value, jobs._RECORD_KINDS[key])
        last = only_typed_errors(lambda: autosnap.last_run(host))
        assert last is None or all(isinstance(e, str) for e in last.get("errors", []))

    fields = st.fixed_dictionaries({}, optional={
        key: _json_value for key in ("base", "last_success", "state", "raw", "runs",
                                     "errors", "ok", "started")})
    return st.one_of(_noise, _json_value.map(json.dumps), fields.map(json.dumps)), check


@entry("zfs dataset names list", 500, ["zsn.zfs.autosnap:parse_datasets"])
def zfs_dataset_names_list() -> Fuzz:
    from zsn.zfs.autosnap import parse_datasets

    def check(parts: list[str]) -> None:
        found = only_typed_errors(lambda: parse_datasets("\n".join(parts)))
        assert found is None or all("\t" not in name and "\n" not in name for name in found)

    return st.lists(st.one_of(st.sampled_from(["tank", "tank/a b", "tank\tx", "\tvdev"]),
                              _noise), max_size=6), check


_WRITTEN_FORMATS = ("wg-quick", "unit", "sysctl", "ifupdown", "bash", "openvpn", "yaml",
                    "json", "iwd", "wpa_supplicant", "pem")


def _written_format(name: str) -> Any:
    from zsn.bash import BASH
    from zsn.eap.iwd import IWD
    from zsn.formats.jsondoc import JSON
    from zsn.formats.pem import PEM
    from zsn.formats.sysctl import SYSCTL
    from zsn.formats.unitfile import UNIT
    from zsn.formats.wpa_supplicant import WPA_SUPPLICANT
    from zsn.links.persist.ifupdown import INTERFACES
    from zsn.links.persist.yamledit import YAML

    return {"wg-quick": wg_config.WG_QUICK, "unit": UNIT, "sysctl": SYSCTL,
            "ifupdown": INTERFACES, "bash": BASH, "openvpn": ovpn_config.OPENVPN,
            "yaml": YAML, "json": JSON, "iwd": IWD, "wpa_supplicant": WPA_SUPPLICANT,
            "pem": PEM}[name]


@entry("written formats' readers", 1000,
      ["zsn.wireguard.config:_WgQuick.read", "zsn.formats.unitfile:_Unit.read",
       "zsn.formats.sysctl:_Sysctl.read", "zsn.links.persist.ifupdown:_Interfaces.read",
       "zsn.bash:_Assignments.read", "zsn.openvpn.config:_OpenVpn.read",
       "zsn.links.persist.yamledit:_Yaml.read", "zsn.formats.jsondoc:_Json.read",
       "zsn.eap.iwd:_IwdSettings.read", "zsn.formats.wpa_supplicant:_WpaSupplicant.read",
       "zsn.formats.pem:_Pem.read", "zsn.meaning:Intent.verify"])
def written_formats_readers() -> Fuzz:
    """The readers behind the read-back of every format zsn writes (`zsn.meaning`):
    typed errors only, and a text read back against itself means nothing new."""
    from zsn.meaning import Intent

    lines = st.sampled_from(["[Interface]", "[Peer]", "PublicKey = k", "[Match]", "Name=a",
                             "net.ipv4.ip_forward = 1", "iface a inet manual", "  mtu 9000",
                             "A='b'", "remote x 1194", "<ca>", "</ca>", "a: [1, {b: c}]",
                             '{"a": [1]}', "# c", "x\\", "network={", "}", "ssid=\"x\"",
                             "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----",
                             "[Security]", "EAP-Method=PEAP", ""])

    def check(parts: list[str]) -> None:
        text = "\n".join(parts) + "\n"
        for name in _WRITTEN_FORMATS:  # every reader, whichever inputs come first
            format_ = _written_format(name)
            if only_typed_errors(partial(format_.read, text, "fuzz")) is not None:
                Intent(format_).verify(text, text, "fuzz")

    return st.lists(st.one_of(lines, _noise), max_size=12), check


@entry("written formats' renderers", 1000,
      ["zsn.wireguard.config:WgConfig.set_value", "zsn.wireguard.config:WgConfig.append_peer",
       "zsn.formats.unitfile:UnitFile.set", "zsn.formats.sysctl:SysctlFile.set",
       "zsn.bash:render_assignment", "zsn.openvpn.config:OvpnConfig.set_directive",
       "zsn.links.persist.yamledit:inline"])
def written_formats_renderers() -> Fuzz:
    """Each format's renderer given any value (line breaks, control characters, '#',
    '=', quotes, long): refused with a typed error, or written so that the file reads
    back as the edit meant (the intent records only what was written)."""
    from zsn.formats.sysctl import SysctlFile
    from zsn.formats.unitfile import UnitFile
    from zsn.links.persist import netctl as link_netctl
    from zsn.links.persist.networkd import SCHEMA
    from zsn.links.persist.yamledit import YamlDocument
    from zsn.values import TEXT

    server = (Path(__file__).parents[1] / "fixtures" / "wireguard" / "zcapwg1.conf").read_text()
    hostile = st.one_of(_noise, st.sampled_from([
        "x\nPostUp = y", "x\rup y", "x # y", "a=b", "'\"", "x\\", "\x1b[2J", "\u2028",
        "10.0.0.1/32", "eth0", "1", "x" * 5000]))

    def check(value: tuple[str, str]) -> None:
        name, text = value
        if name == "wg-quick":
            config = wg_config.parse(server)
            peer = config.require_peer("bob-site")
            only_typed_errors(lambda: config.set_value(peer, "AllowedIPs", text))
            only_typed_errors(lambda: config.append_peer(text, []))
            config.intent.verify(server, config.render(), "fuzz")
        elif name == "unit":
            unit = UnitFile("[Match]\nName=eth0\n", SCHEMA)
            only_typed_errors(lambda: unit.set("Network", "Bond", text))
            unit.intent.verify("[Match]\nName=eth0\n", unit.text, "fuzz")
        elif name == "sysctl":
            settings_file = SysctlFile("", {"net.ipv4.ip_forward": TEXT})
            only_typed_errors(lambda: settings_file.set("net.ipv4.ip_forward", text))
            settings_file.intent.verify("", settings_file.text, "fuzz")
        elif name == "bash":
            profile = link_netctl.Profile.parsed("/etc/netctl/x", None, "Interface=bond0\n")
            only_typed_errors(lambda: profile.set("ExecUpPost", text))
            profile.intent.verify("Interface=bond0\n", profile.text, "fuzz")
        elif name == "openvpn":
            config_o = ovpn_config.parse("client\n")
            only_typed_errors(lambda: config_o.set_directive("up", text))
            config_o.intent.verify("client\n", config_o.render(), "fuzz")
        else:
            document = YamlDocument("network:\n  version: 2\n", "fuzz")
            only_typed_errors(lambda: document.set(("network", "bonds", text), {"mtu": 1}))
            document.intent.verify("network:\n  version: 2\n", document.text, "fuzz")

    return st.tuples(st.sampled_from(["wg-quick", "unit", "sysctl", "bash", "openvpn",
                                      "yaml"]), hostile), check


# -- the first read's snapshot, sent back by its forked child --------------------------


class PickledCall:
    """Pickles as a call of `function` (what a hostile pickle asks for)."""

    def __init__(self, function: object, *args: object) -> None:
        self.reduced = (function, args)

    def __reduce__(self) -> tuple[object, ...]:
        return self.reduced


@entry("first read's snapshot", 1500,
      ["zsn.tui.startup:decode_snapshot", "zsn.tui.startup:encode_snapshot"])
def first_read_snapshot() -> Fuzz:
    """The captured wireguard-go server as a snapshot with a read-only mapping, pickled
    by the child's encoder, then bytes overwritten, cut or repeated; pickles that call
    something; noise: typed errors only, and what is accepted is a model's NamedTuple
    that pickles and reads back the same (the untouched one is the snapshot)."""
    import os
    import pickle
    from types import MappingProxyType

    from zsn.tui.startup import decode_snapshot, encode_snapshot
    from zsn.wireguard.model import InterfaceState, WireGuardSnapshot

    server = uapi.parse_get(
        (_FIXTURES / "wireguard/uapi-get.wireguard-go-0.0.20220316.two-peers.txt").read_text())
    snapshot = WireGuardSnapshot(interfaces=(InterfaceState(
        "zcapwg1", "userspace", None, server.private_key, server.listen_port, None,
        ("10.77.0.1/24",), "/etc/wireguard/zcapwg1.conf", server.peers,
        groups=MappingProxyType({"staff": ("alice",)})),), taken_at=1_700_000_000)
    real = encode_snapshot(snapshot)
    hostile = [pickle.dumps(PickledCall(os.system, "true")), pickle.dumps(PickledCall(eval, "1")),
               pickle.dumps(PickledCall(decode_snapshot, real)), pickle.dumps({"interfaces": []}),
               pickle.dumps(PickledCall(InterfaceState._make, range(10)))]
    changed = st.tuples(st.integers(0, len(real) - 1), st.binary(min_size=1, max_size=8),
                        st.integers(0, 2)).map(lambda edit: (
                            real[:edit[0]] + edit[1] + real[edit[0] + len(edit[1]):],
                            real[:edit[0]],
                            real[:edit[0]] + real[edit[0]:] * 2)[edit[2]])

    def check(data: bytes) -> None:
        decoded = only_typed_errors(lambda: decode_snapshot(data))
        if decoded is not None:
            assert type(decoded).__module__.endswith(".model") and hasattr(decoded, "_fields")
            assert decode_snapshot(encode_snapshot(decoded)) == decoded
            if data == real:
                assert decoded == snapshot

    return st.one_of(st.just(real), st.sampled_from(hostile), changed,
                     st.binary(max_size=600)), check
