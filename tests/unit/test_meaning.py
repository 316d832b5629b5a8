"""The read-back every file edit goes through (`zsn.meaning`), on the wg-quick format
and on real configs (tests/fixtures/wireguard: SOURCES.md): an edit whose text says
more than its intent is refused naming the line, and the one renderer never writes a
value with a line break, a control character or a ``#`` in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from zsn.errors import ValidationError
from zsn.meaning import Intent, OwnFile, one_line
from zsn.plan import FileEdit
from zsn.system.files import FileSnapshot
from zsn.wireguard.config import WG_QUICK, WgConfig, parse
from zsn.wireguard.keys import generate_preshared_key, generate_private_key

FIXTURES = Path(__file__).parent.parent / "fixtures" / "wireguard"
SERVER = (FIXTURES / "zcapwg1.conf").read_text()
HOSTILE = ["x\nPostUp = touch /tmp/zsn-pwned", "x\rPostUp = y", "x\x00", "x\x1b[31m",
           "x\u2028PostUp = y", "x\x85y", "x # PostUp = y", "x\x7f"]


def snapshot(path: Path, text: str) -> FileSnapshot:
    return FileSnapshot(path, text, 0, len(text), 0, 0o600)


def edit(config: WgConfig, path: Path = Path("/etc/wireguard/wg0.conf")) -> FileEdit:
    return FileEdit(path, snapshot(path, SERVER), config.render(), intent=config.intent)


def test_an_edit_that_says_what_its_intent_says_is_made() -> None:
    config = parse(SERVER)
    peer = config.require_peer("bob-site")
    config.set_value(peer, "PersistentKeepalive", "25")
    config.add_list_items(peer, "AllowedIPs", ["10.99.0.0/24"])
    config.rename_peer(peer, "bob")
    config.disable_peer(config.require_peer("bob"))
    config.append_peer("carol", [("PublicKey", _public()), ("AllowedIPs", "10.77.0.9/32")])
    config.remove_peer(config.require_peer("alice-laptop"))
    assert edit(config).new_text == config.render()


@pytest.mark.parametrize("line", ["PostUp = touch /tmp/zsn-pwned\n", "[Peer]\n",
                                  "AllowedIPs = 0.0.0.0/0\n", "# Expires = 2099-01-01T00:00:00Z\n",
                                  "# mallory\n"])
def test_a_line_no_intent_stated_refuses_the_edit_naming_it(line: str) -> None:
    config = parse(SERVER)
    config.set_value(config.require_peer("bob-site"), "PersistentKeepalive", "25")
    # Past the renderer, what a bug would do: a line after the last peer's header.
    at = config.all_peers[-1].header + 1
    config.lines.insert(at, line)
    with pytest.raises(ValidationError) as refused:
        edit(config)
    assert f"line {at + 1}" in str(refused.value) or "[Peer]" in line
    assert "does not mean what the plan meant" in str(refused.value)


def test_a_changed_value_the_intent_did_not_state_refuses_and_hides_secrets() -> None:
    config = parse(SERVER)
    interface = config.interface
    assert interface is not None
    entry = interface.entries_for("PrivateKey")[0]
    config.lines[entry.line] = f"PrivateKey = {generate_private_key()}\n"
    with pytest.raises(ValidationError) as refused:
        edit(config)
    assert f"line {entry.line + 1}" in str(refused.value)
    assert "PrivateKey = (hidden)" in str(refused.value)


def test_a_line_missing_from_the_text_refuses_the_edit() -> None:
    config = parse(SERVER)
    config.append_peer("carol", [("PublicKey", _public()), ("AllowedIPs", "10.77.0.9/32")])
    del config.lines[-1]
    with pytest.raises(ValidationError, match="lacks allowedips"):
        edit(config)


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("key", ["AllowedIPs", "Endpoint", "PresharedKey", "PostUp", "DNS"])
def test_the_renderer_refuses_a_value_that_would_be_another_line(key: str, value: str) -> None:
    config = parse(SERVER)
    peer = config.require_peer("bob-site")
    section = config.interface if key in ("PostUp", "DNS") else peer
    assert section is not None
    with pytest.raises(ValidationError):
        config.set_value(section, key, value)
    with pytest.raises(ValidationError):
        config.append_entry(section, key, value)
    with pytest.raises(ValidationError):
        config.append_peer("carol", [("PublicKey", _public()), (key, value)])
    assert config.render() == SERVER


@pytest.mark.parametrize(("key", "value"), [
    ("PublicKey", "short"), ("PresharedKey", "short"), ("PrivateKey", "A" * 42 + "B="),
    ("AllowedIPs", "10.0.0.300/32"), ("AllowedIPs", "10.0.0.0/33"), ("Endpoint", "vpn"),
    ("Endpoint", "vpn:99999"), ("ListenPort", "65536"), ("PersistentKeepalive", "-1"),
    ("Address", "10.0.0.1/24, bogus"), ("MTU", "1"), ("SaveConfig", "maybe"),
    ("Bogus", "1"), ("PostUp", ""),
])
def test_the_renderer_refuses_what_wg_or_wg_quick_would_refuse(key: str, value: str) -> None:
    config = WgConfig.new()
    with pytest.raises(ValidationError):
        config.append_interface([(key, value)])


@pytest.mark.parametrize("name", HOSTILE)
def test_names_and_labels_stay_one_line(name: str) -> None:
    config = parse(SERVER)
    with pytest.raises(ValidationError):
        config.append_peer(name, [("PublicKey", _public())])
    with pytest.raises(ValidationError):
        config.rename_peer(config.require_peer("bob-site"), name)
    if "#" in name:
        return  # a comment may hold '#': wg and zsn read the whole line as one comment
    with pytest.raises(ValidationError):
        config.append_peer(None, [("PublicKey", _public())], label=name)
    with pytest.raises(ValidationError):
        config.append_comment(name)


def test_a_new_file_means_only_what_was_built() -> None:
    config = WgConfig.new()
    config.append_comment("wg9: written by a test")
    config.append_interface([("PrivateKey", generate_private_key()), ("ListenPort", "51820")])
    config.append_peer("alice", [("PublicKey", _public()),
                                 ("PresharedKey", generate_preshared_key()),
                                 ("AllowedIPs", "10.9.0.2/32")],
                       expires="2030-01-01T00:00:00Z")
    path = Path("/etc/wireguard/wg9.conf")
    FileEdit(path, None, config.render(), intent=config.intent)
    # The same intent over a file that held something else is still the whole file.
    FileEdit(path, snapshot(path, SERVER), config.render(), intent=config.intent)
    with pytest.raises(ValidationError):
        FileEdit(path, None, config.render() + "[Peer]\nPublicKey = " + _public() + "\n",
                 intent=config.intent)


def test_intents_apply_in_order_by_index_or_header() -> None:
    intent = Intent(WG_QUICK)
    intent.insert(None, "Interface", [("ListenPort", "1")])
    intent.append("Interface", "MTU", "1420")
    intent.insert(None, "Peer", [("PublicKey", "k")])
    intent.retitle(1, "#[disabled] Peer")
    intent.assign(0, "ListenPort", ["2"])
    intent.discard("Interface", "MTU", "1420")
    expected = intent.expected([])
    assert [(s.header, [(e.key, e.value) for e in s.entries]) for s in expected] == [
        ("Interface", [("listenport", "2")]), ("#[disabled] Peer", [("publickey", "k")])]
    intent.delete(0)
    assert [s.header for s in intent.expected([])] == ["#[disabled] Peer"]


@pytest.mark.parametrize("value", HOSTILE[:-2])
def test_one_line_refuses_every_break(value: str) -> None:
    if "#" in value:
        assert one_line(value, "x") == value  # '#' is each format's own to refuse
        return
    with pytest.raises(ValidationError):
        one_line(value, "x")


def test_a_file_only_zsn_reads_says_so() -> None:
    FileEdit(Path("/etc/zsn/x.json"), None, '{"a": "b\\nc"}\n', intent=OwnFile("zsn's"))


def _public() -> str:
    from zsn.wireguard.keys import public_key_from_private

    return public_key_from_private(generate_private_key())


OWN_FILES = {"zsn/wireguard/settings.py": 1, "zsn/openvpn/actions.py": 1,
             "zsn/tries/lifecycle.py": 1, "zsn/wireguard/acl.py": 1, "zsn/plan.py": 1,
             "zsn/zfs/policy_actions.py": 1}
"""Where a file edit may stand without an intent (`OwnFile`, `CheckedBefore`): zsn's
WireGuard settings, the DNS hook script zsn ships, a try's deferred boot config, the
access rules' policy file (zsn's own format, read back as a policy), and plans
combined (each edit of a file read back as its own plan was made) and zsn's ZFS policy
file."""


def test_every_file_edit_says_what_it_means() -> None:
    """A new surface that writes a file goes through the read-back: its FileEdit names
    an intent; only the places above say the file is zsn's own (or checked before)."""
    import ast

    package = Path(__file__).resolve().parents[2] / "zsn"
    found: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("OwnFile", "CheckedBefore"):
                where = str(path.relative_to(package.parent))
                found[where] = found.get(where, 0) + 1
    assert found == OWN_FILES


def _big_server(peers: int = 1500) -> str:
    """A server config past the size the read-back reads around the change only."""
    import base64
    import os

    lines = ["[Interface]", "Address = 10.8.0.1/16", "ListenPort = 51820",
             f"PrivateKey = {generate_private_key()}"]
    for number in range(peers):
        host = number + 2
        lines += ["", f"# peer-{number}", "[Peer]",
                  f"PublicKey = {base64.b64encode(os.urandom(32)).decode()}",
                  f"AllowedIPs = 10.8.{host // 256}.{host % 256}/32"]
    text = "\n".join(lines) + "\n"
    assert len(text) > 64 << 10
    return text


@pytest.mark.parametrize("where", ["top", "middle", "end"])
def test_a_big_config_is_read_back_around_the_change_and_a_stray_line_anywhere_refused(
        where: str) -> None:
    text = _big_server()
    path = Path("/etc/wireguard/wg0.conf")
    config = parse(text, str(path)).copy()
    config.set_value(config.require_peer("peer-700"), "AllowedIPs", "10.8.2.190/32, 10.9.0.0/24")
    config.append_peer("newcomer", [("PublicKey", _public()), ("AllowedIPs", "10.8.250.1/32")])
    config.rename_peer(config.require_peer("peer-3"), "three")
    config.disable_peer(config.require_peer("peer-1200"))
    FileEdit(path, snapshot(path, text), config.render(), intent=config.intent)
    lines = config.render().splitlines(keepends=True)
    at = {"top": 2, "middle": len(lines) // 3, "end": len(lines) - 1}[where]
    lines.insert(at, "PostUp = touch /tmp/zsn-pwned\n")
    with pytest.raises(ValidationError, match=f"line {at + 1}"):
        FileEdit(path, snapshot(path, text), "".join(lines), intent=config.intent)
