from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zsn.errors import ParseError
from zsn.openvpn.config import INLINE, parse, quote_arg, tokenize

SAMPLES = sorted((Path(__file__).parents[2] / "fixtures/openvpn/configs").iterdir())


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_openvpn_sample_configs_round_trip_byte_for_byte(path: Path) -> None:
    text = path.read_text()
    assert parse(text).render() == text


def test_sample_client_is_indexed() -> None:
    config = parse((SAMPLES[0].parent / "client.conf").read_text())
    assert [d.args for d in config.get_all("remote")] == [("my-server-1", "1194")]
    assert config.get("dev").args == ("tun",)  # type: ignore[union-attr]
    # ";remote my-server-2 1194" is a comment, as for OpenVPN.
    assert len(config.get_all("remote")) == 1


def test_inline_blocks_with_crlf_round_trip_and_fold_into_one_directive() -> None:
    text = ("client\r\nremote vpn.example.net 443 tcp\r\n<ca>\r\n-----BEGIN CERTIFICATE-----"
            "\r\nMIIB\r\n-----END CERTIFICATE-----\r\n</ca>\r\n<tls-crypt>\r\n# key\r\n"
            "abcd\r\n</tls-crypt>\r\nscript-security 1")
    config = parse(text)
    assert config.render() == text
    ca = config.get("ca")
    assert ca is not None and ca.args == (INLINE,) and "MIIB" in (ca.inline or "")
    assert config.get("tls-crypt").inline == "# key\r\nabcd\r\n"  # type: ignore[union-attr]
    config.set_directive("script-security", "2")
    assert config.render() == text[:-1] + "2"
    config.add_directive("down-pre")
    assert config.render().endswith("script-security 2\r\ndown-pre\r\n")


def test_edit_keeps_every_other_line_and_comment() -> None:
    text = "# office VPN\nclient\n  script-security 1   # strict\n;up /bin/old\nremote a 1\n"
    config = parse(text)
    config.set_directive("script-security", "2")
    assert config.render() == (
        "# office VPN\nclient\n  script-security 2   # strict\n;up /bin/old\nremote a 1\n")


def test_only_newline_ends_a_line_as_for_openvpn() -> None:
    text = "client\n# note\x0cverb 3\nremote a\x85b 1\n"
    config = parse(text)
    assert [(d.name, d.args) for d in config.directives] == [
        ("client", ()), ("remote", ("a\x85b", "1"))]
    assert config.render() == text


@pytest.mark.parametrize(("line", "tokens"), [
    ('up "/etc/openvpn/my hook --flag"', ["up", "/etc/openvpn/my hook --flag"]),
    ("push 'dhcp-option DNS 10.0.0.1' # why", ["push", "dhcp-option DNS 10.0.0.1"]),
    (r"auth-user-pass C:\\x\ y", ["auth-user-pass", "C:\\x y"]),
    ("  ; all comment", []),
    ("remote host#1 1194", ["remote", "host#1", "1194"]),
])
def test_tokenize_like_openvpn(line: str, tokens: list[str]) -> None:
    assert tokenize(line) == tokens


@pytest.mark.parametrize(("text", "message"), [
    ("client\n<ca>\nabc\n", r"line 2: <ca> block is never closed"),
    ("client\n<ca>\nabc\n</cert>\n", r"line 4: </cert> closes <ca>"),
    ("</key>\n", r"without a matching opening tag"),
    ('up "/bin/x\n', r"line 1: unterminated \" quote"),
    ("=foo bar\n", r"not an option name"),
])
def test_unparseable_configs_name_the_line(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse(text, None)


@given(st.text(alphabet=st.characters(blacklist_characters="\x00\r\n"), max_size=30))
def test_quote_arg_reads_back(value: str) -> None:
    assert tokenize("x " + quote_arg(value)) == ["x", value]


def test_a_stray_line_of_key_material_is_not_quoted_in_the_error() -> None:
    from zsn.errors import ParseError
    from zsn.openvpn.config import parse

    secret = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC+BKcwggSjAgEA/oIBAQC7"
    with pytest.raises(ParseError) as caught:
        parse(f"client\n{secret}\n", "office.conf")
    assert "is not an option name" in str(caught.value)
    assert secret[:20] not in str(caught.value)
