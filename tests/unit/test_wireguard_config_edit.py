"""The wg-quick config parser and editor on real-world configs (fixtures/wireguard/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zsn.errors import ParseError, ValidationError
from zsn.wireguard.config import DISABLED_PREFIX, Section, parse

FIXTURES = Path(__file__).parents[1] / "fixtures" / "wireguard"
REAL_CONFIGS = sorted(FIXTURES.glob("*.conf"))


def _changed_lines(before: str, after: str) -> list[int]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]


@pytest.mark.parametrize("path", REAL_CONFIGS, ids=lambda p: p.name)
def test_real_configs_round_trip_byte_for_byte(path: Path) -> None:
    text = path.read_text()
    assert parse(text, str(path)).render() == text
    crlf = text.replace("\n", "\r\n")
    assert parse(crlf).render() == crlf


def test_names_in_every_style_seen_in_the_wild() -> None:
    assert [p.name for p in parse((FIXTURES / "zcapwg1.conf").read_text()).peers] == \
        ["alice-laptop", "bob-site"]  # comment above [Peer]; "# Name = x" inside
    assert [p.name for p in parse((FIXTURES / "notes-gateway-server.conf").read_text()).peers] \
        == ["Client1", "Client2"]  # comment directly below [Peer], trailing spaces
    pivpn = "[Interface]\nPrivateKey = x\n### begin phone ###\n[Peer]\nPublicKey = k\n" \
            "### end phone ###\n#bare\n[Peer]\nPublicKey = j\n"
    assert [p.name for p in parse(pivpn).peers] == ["phone", "bare"]


def test_multiple_allowed_ips_lines_and_ipv6() -> None:
    config = parse((FIXTURES / "zcapwg1.conf").read_text())
    assert config.peers[0].get_all("AllowedIPs") == ["10.77.0.2/32", "fd77::2/128"]
    assert config.interface is not None
    assert config.interface.get_all("Address") == ["10.77.0.1/24", "fd77::1/64"]
    multi = parse((FIXTURES / "manpage-server-multipeer.conf").read_text())
    assert multi.interface is not None
    assert multi.interface.get_all("Address") == ["10.192.122.1/24", "10.10.0.1/16"]


def test_set_value_keeps_indentation_spacing_and_comments() -> None:
    text = (FIXTURES / "notes-server-wg0.conf").read_text()
    config = parse(text)
    assert config.interface is not None
    config.set_value(config.interface, "ListenPort", "51900")
    assert _changed_lines(text, config.render()) == [4]
    assert config.render().splitlines()[4] == "   ListenPort = 51900"
    trailing = "[Interface]\nListenPort=1  # keep me\r\n"
    edited = parse(trailing)
    assert edited.interface is not None
    edited.set_value(edited.interface, "ListenPort", "2")
    assert edited.render() == "[Interface]\nListenPort=2  # keep me\r\n"


def test_new_key_goes_after_the_block_with_its_indentation() -> None:
    text = (FIXTURES / "notes-client1-two-interfaces.conf").read_text()
    config = parse(text)
    peer = config.peers[0]
    config.set_value(peer, "PersistentKeepalive", "25")
    new = config.render().splitlines()
    old = text.splitlines()
    assert new[: peer.last_line + 1] == old[: peer.last_line + 1]
    # The notes (scraped from a web page) indent with no-break spaces around a space.
    indent = old[peer.last_line][: len(old[peer.last_line]) - len(old[peer.last_line].lstrip())]
    assert indent == "\u00a0 \u00a0"
    assert new[peer.last_line + 1] == indent + "PersistentKeepalive = 25"
    assert new[peer.last_line + 2:] == old[peer.last_line + 1:]


@pytest.mark.parametrize("path", REAL_CONFIGS, ids=lambda p: p.name)
def test_disable_then_enable_restores_every_byte(path: Path) -> None:
    text = path.read_text()
    config = parse(text)
    for peer_index in range(len(config.peers)):
        config.disable_peer(config.all_peers[peer_index])
    if not config.all_peers:
        return
    assert not config.peers
    assert all(p.disabled for p in config.all_peers)
    disabled = config.render()
    assert all(line.startswith(DISABLED_PREFIX) or not line.strip() or "[Peer]" not in line
               for line in disabled.splitlines())
    for peer_index in range(len(config.all_peers)):
        config.enable_peer(config.all_peers[peer_index])
    assert config.render() == text


def test_append_and_remove_peer_touch_nothing_else() -> None:
    text = (FIXTURES / "manpage-server-multipeer.conf").read_text()
    config = parse(text)
    config.append_peer("carol", [("PublicKey", "k" * 43 + "="), ("AllowedIPs", "10.192.122.9/32")])
    assert config.render().startswith(text)
    assert config.render()[len(text):] == \
        f"\n# carol\n[Peer]\nPublicKey = {'k' * 43}=\nAllowedIPs = 10.192.122.9/32\n"
    config.remove_peer(config.require_peer("carol"))
    assert config.render() == text


def test_remove_a_middle_peer_keeps_neighbours() -> None:
    text = (FIXTURES / "zcapwg1.conf").read_text()
    config = parse(text)
    config.remove_peer(config.require_peer("alice-laptop"))
    rendered = config.render()
    assert "8DtMxP7orKTjWmrj" not in rendered and "# alice-laptop" not in rendered
    assert rendered.endswith(text[text.index("[Peer]\n# Name = bob-site"):])
    assert [p.name for p in config.peers] == ["bob-site"]


def test_rename_keeps_the_name_style() -> None:
    config = parse((FIXTURES / "zcapwg1.conf").read_text())
    config.rename_peer(config.require_peer("bob-site"), "bob-office")
    assert "# Name = bob-office\n" in config.render()
    config.rename_peer(config.require_peer("alice-laptop"), "alice")
    assert "\n# alice\n[Peer]" in config.render()
    with pytest.raises(ValidationError, match="already exists"):
        config.rename_peer(config.require_peer("alice"), "bob-office")
    with pytest.raises(ValidationError, match="not allowed"):
        config.rename_peer(config.require_peer("alice"), "two words")


def test_values_that_would_break_the_file_are_refused() -> None:
    config = parse((FIXTURES / "zcapwg1.conf").read_text())
    assert config.interface is not None
    for bad in ("a\nPostUp = rm -rf /", "x # y"):
        with pytest.raises(ValidationError):
            config.set_value(config.interface, "ListenPort", bad)


def test_parse_errors_name_the_line() -> None:
    with pytest.raises(ParseError, match=r"^f.conf:3: expected 'Key = value'") as info:
        parse("[Interface]\nPrivateKey = x\nthis is not a key\n", "f.conf")
    assert info.value.line == 3
    with pytest.raises(ParseError, match="line 1: ListenPort is outside"):
        parse("ListenPort = 1\n")
    with pytest.raises(ParseError, match=r"line 2: unknown section \[Wat\]"):
        parse("[Interface]\n[Wat]\n")


@pytest.mark.parametrize(("label", "key"), [
    ("PrivateKey: ", "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="),
    ("", "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="),
    ("PresharedKey ", "0f" * 32),
])
def test_parse_errors_never_quote_key_material(label: str, key: str) -> None:
    # The message reaches notifications and `zsn --export` (lint WG000).
    with pytest.raises(ParseError) as info:
        parse(f"[Interface]\n{label}{key}\n", "wg0.conf")
    message = str(info.value)
    assert message.startswith("wg0.conf:2: expected 'Key = value'") and "(hidden)" in message
    assert not any(key[i:i + 8] in message for i in range(len(key) - 8))


# -- property tests --------------------------------------------------------------

_line = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    _line,
    st.sampled_from(["[Interface]", "[Peer]", "[peer] # x", "#[disabled] [Peer]",
                     "#[disabled] PublicKey = k", "PublicKey = abc", "  AllowedIPs=1.2.3.4/32",
                     "# alice", "### begin x ###", "", "   ", "\t# c"]),
), max_size=25), st.sampled_from(["\n", "\r\n"]))
def test_any_text_parses_exactly_or_fails_naming_a_line(lines: list[str], eol: str) -> None:
    text = eol.join(lines)
    try:
        config = parse(text)
    except ParseError as exc:
        assert exc.line is not None
        assert 1 <= exc.line <= max(1, len(text.splitlines()))
        return
    assert config.render() == text


_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,20}", fullmatch=True)
_keys = st.binary(min_size=32, max_size=32).map(
    lambda raw: __import__("base64").b64encode(raw).decode())
_nets = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(8, 32)).map(
    lambda t: f"10.{t[0]}.{t[1]}.0/{min(t[2], 24)}")


@settings(max_examples=150)
@given(st.lists(st.tuples(st.one_of(st.none(), _names), _keys, st.lists(_nets, min_size=1,
                                                                       max_size=3),
                          st.booleans()), max_size=8, unique_by=lambda p: p[0] or p[1]),
       st.integers(1, 65535))
def test_parse_of_render_gives_back_the_model(
    peers: list[tuple[str | None, str, list[str], bool]], port: int
) -> None:
    config = parse(f"[Interface]\nListenPort = {port}\nPrivateKey = {'A' * 43}=\n")
    for name, key, nets, disabled in peers:
        peer = config.append_peer(name, [("PublicKey", key), ("AllowedIPs", ", ".join(nets))])
        if disabled:
            config.disable_peer(peer)
    again = parse(config.render())
    model = [(p.name, p.get("PublicKey"), p.get_all("AllowedIPs"), p.disabled)
             for p in again.all_peers]
    assert model == [(n, k, nets, d) for n, k, nets, d in peers]
    assert again.interface is not None and again.interface.get("ListenPort") == str(port)


def _index(config_sections: list[Section]) -> list[tuple[object, ...]]:
    return [(s.kind, s.header, s.end, s.entries, s.name, s.name_line, s.disabled)
            for s in config_sections]


_operations = st.lists(st.tuples(
    st.sampled_from(["append", "remove", "disable", "enable", "rename", "set", "add_key",
                     "add_items", "remove_items"]),
    st.integers(0, 50)), max_size=12)


@settings(max_examples=150)
@given(st.sampled_from(REAL_CONFIGS), _operations)
def test_every_edit_leaves_the_same_index_as_a_fresh_parse(
        path: Path, operations: list[tuple[str, int]]) -> None:
    config = parse(path.read_text())
    for number, (operation, pick) in enumerate(operations):
        peers = config.all_peers
        peer = peers[pick % len(peers)] if peers else None
        try:
            if operation == "append" or peer is None:
                config.append_peer(f"p{number}", [("PublicKey", f"k{number}"),
                                                  ("AllowedIPs", f"10.9.{number}.1/32")])
            elif operation == "remove":
                config.remove_peer(peer)
            elif operation == "disable":
                config.disable_peer(peer)
            elif operation == "enable":
                config.enable_peer(peer)
            elif operation == "rename":
                config.rename_peer(peer, f"renamed{number}")
            elif operation == "set":
                config.set_value(peer, "AllowedIPs", f"10.10.{number}.0/24")
            elif operation == "add_key":
                config.set_value(peer, "PersistentKeepalive", str(number))
            elif operation == "add_items":
                config.add_list_items(peer, "AllowedIPs", [f"10.11.{number}.0/24"])
            else:
                config.remove_list_items(peer, "AllowedIPs", peer.get_all("AllowedIPs")[:1])
        except ValidationError:
            continue  # e.g. enabling a peer that is not disabled
        assert _index(config.sections) == _index(parse(config.render()).sections)


def test_parse_shared_reuses_a_parse_only_for_identical_text() -> None:
    from zsn.wireguard.config import parse_shared

    text = (FIXTURES / "zcapwg1.conf").read_text()
    first = parse_shared(text, "/test/shared.conf")
    assert parse_shared(text, "/test/shared.conf") is first
    changed = parse_shared(text.replace("bob-site", "bob"), "/test/shared.conf")
    assert changed is not first and [p.name for p in changed.peers] == ["alice-laptop", "bob"]
