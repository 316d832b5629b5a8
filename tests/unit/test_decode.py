"""The decoding layer (`zsn.decode`): typed values or one line naming the source and the
field; bounded in size, depth and YAML aliases; time stamps within the calendar."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from zsn import decode

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Client:
    name: str
    address: str
    ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if "/" in self.name:
            raise ValueError(f"{self.name!r} cannot name a file")


@dataclass
class Document:
    clients: dict[str, Client]


class Row(NamedTuple):
    id: int
    name: str | None


def test_a_document_becomes_the_readers_types() -> None:
    found = decode.from_json('{"clients": {"a": {"name": "alice", "address": "10.0.0.2"}}}',
                             Document, "wg0.json")
    assert found == Document({"a": Client("alice", "10.0.0.2")})
    assert decode.convert((3, None), Row, "history.sqlite") == Row(3, None)


@pytest.mark.parametrize(("text", "message"), [
    ('{"clients": {"a": {"name": "alice", "address": 7}}}',
     "wg0.json: clients[*].address: expected str, got int"),
    ('{"clients": {"a": {"name": "a/b", "address": "x"}}}',
     "wg0.json: clients[*]: 'a/b' cannot name a file"),
    ('{"clients": {"a": {"name": "x", "address": "x", "ports": [1, "2"]}}}',
     "wg0.json: clients[*].ports[1]: expected int, got str"),
    ('{"clients": {"a": }', "wg0.json: not valid JSON: invalid character (byte 18)"),
    ("[" * 100_000 + "]" * 100_000, "wg0.json: nested more than 64 levels deep"),
    ('{"clients": ' + '{"a": ' * 70 + "1" + "}" * 71, "nested more than 64 levels deep"),
])
def test_bad_input_is_one_line_naming_the_file_and_the_field(text: str, message: str) -> None:
    with pytest.raises(decode.DecodeError) as caught:
        decode.from_json(text, Document, "wg0.json")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_sizes_depths_and_aliases_are_bounded() -> None:
    with pytest.raises(decode.DecodeError, match="more than the 10 read"):
        decode.from_json("[1, 2, 3, 4, 5]", list[int], "x", max_bytes=10)
    assert decode.from_json("[" * 64 + "]" * 64, Any, "x") is not None  # 64 levels: fine
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
        for i in range(9))
    with pytest.raises(decode.DecodeError, match="more than 100000 values"):
        decode.from_yaml(laughs, dict[str, Any], "web.yml")
    with pytest.raises(decode.DecodeError, match="nested more than 64"):
        decode.from_toml("a = " + "[" * 100_000 + "]" * 100_000, dict[str, Any], "x.toml")
    with pytest.raises(decode.DecodeError, match="not valid YAML"):
        decode.from_yaml("!!python/object:os.system {}", dict[str, Any], "web.yml")


@pytest.mark.parametrize(("text", "seconds"), [
    ("2026-12-31T23:00:00Z", 1798758000), ("1970-01-01T00:00:00+00:00", 0),
    ("0001-01-01T00:00:00+14:00", None), ("9999-12-31T23:59:59-14:00", None),
    ("2026-12-31T23:00:00", None), ("soon", None),
])
def test_time_stamps_are_within_what_every_zone_can_show(text: str, seconds: int | None
                                                          ) -> None:
    if seconds is not None:
        assert decode.timestamp(text, "wg0.conf", "Expires") == seconds
        return
    with pytest.raises(decode.DecodeError, match=r"^wg0\.conf: Expires: "):
        decode.timestamp(text, "wg0.conf", "Expires")


def test_a_web_config_nested_100000_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    """It ended zsn serve with a RecursionError traceback."""
    (tmp_path / "web.yml").write_text("basic_auth_users: " + "[" * 100_000 + "]" * 100_000)
    result = subprocess.run([sys.executable, "-m", "zsn", "--root", str(tmp_path), "serve",
                             "--web-config", "/web.yml"], capture_output=True, text=True,
                            timeout=60, check=False, cwd=REPO)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"zsn serve: {tmp_path}/web.yml: nested more than 64 levels deep\n"


def test_a_yaml_key_given_twice_is_refused_naming_its_line() -> None:
    with pytest.raises(decode.DecodeError) as caught:
        decode.from_yaml("a: 1\nb:\n  c: 2\n  c: 3\n", dict[str, Any], "x.yaml")
    assert str(caught.value) == "x.yaml: line 4: key 'c' given twice in one mapping"
    assert decode.from_yaml("a: {c: 1}\nb: {c: 1}\n", dict[str, Any], "x.yaml") == {
        "a": {"c": 1}, "b": {"c": 1}}  # the same key in two mappings: fine


def test_known_keys_refuses_a_key_no_dataclass_declares() -> None:
    text = "clients:\n  a: {name: alice, address: 10.0.0.2, port: [1]}\n"
    assert decode.from_yaml(text, Document, "c.yaml").clients["a"].ports == []
    with pytest.raises(decode.DecodeError) as caught:
        decode.from_yaml(text, Document, "c.yaml", known_keys=True)
    assert str(caught.value) == ("c.yaml: clients.a: unknown key 'port' (did you mean "
                                 "'ports'?) (known: name, address, ports)")


# -- YAML: values made in the one pass that checks them --------------------------------

PYYAML_READS = [
    "a: yes\nb: no\nc: on\nd: Off\ne: ~\nf: null\ng: 0x1F\nh: 0o17\ni: 017\nj: 1_000\n"
    "k: 1:30\nl: -.inf\nm: 1e3\nn: '1e3'\no: 2002-12-14\np: 2001-12-14t21:59:43.10-05:00\n"
    "q: !!binary aGVsbG8=\nr: !!str 12\ns: \"\\u00e9\"\nt: [1, [2, [3]], {u: v}]\n",
    "a: &x {b: 1, c: [1, 2]}\nd: *x\ne: [*x, *x]\n",  # aliases: the same values again
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",  # a merge key: PyYAML's way
    "a: !!set {x, y}\nb: !!omap [{x: 1}, {y: 2}]\nc: !!pairs [{x: 1}, {x: 2}]\n",
    "1: int\n1.5: float\nnull: none\ntrue: bool\n2002-12-14: date\n= : value\n",
    "- !!map {a: 1}\n- !!seq [1]\n- !!null ''\n", "plain", "", "--- 12\n", "[]", "{}",
]


@pytest.mark.parametrize("text", PYYAML_READS)
def test_yaml_values_are_pyyamls(text: str) -> None:
    """Scalars by PyYAML's own function for their tag (YAML 1.1: yes, 0x1F, 1:30),
    aliases, merge keys, sets and ordered maps: exactly what PyYAML's safe loader makes."""
    import yaml

    assert decode.from_yaml(text, Any, "x.yaml") == yaml.safe_load(text)


@pytest.mark.parametrize(("text", "reason"), [
    ("a:\n  - b: {c: 1, d: [{e: 1, e: 2}]}\n", "line 2: key 'e' given twice"),
    ("a: &x {k: 1}\nb: [*x, {k: 1, 'k': 2}]\n", "line 2: key 'k' given twice"),
    ("a: 1\n'a': 2\n", "line 2: key 'a' given twice"),
    ("a:\n" + "".join(f"{' ' * (i + 1)}b{i}:\n" for i in range(70)), "nested more than 64"),
    ("a: &a [*a]\n", "nested more than 64"),
    ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
        for i in range(9)), "more than 100000 values"),
    ("a: " + "9" * 5000 + "\n", "not valid YAML"),  # past Python's int digits
    ("a: !!python/object:os.system {}\n", "not valid YAML"),
    ("a: !!python/name:os.system\n", "not valid YAML"),
    ("a: !local x\n", "not valid YAML"),
    ("a: !!bool maybe\n", "not valid YAML"),  # PyYAML: KeyError
    ("a: !!timestamp soon\n", "not valid YAML"),  # PyYAML: AttributeError
    ("a: !!int ''\n", "not valid YAML"),  # PyYAML: IndexError
    ("a: !!str [1]\n", "not valid YAML"),
    ("? [a]\n: b\n", "not valid YAML"),  # a list as a key
    ("a: =\n", "not valid YAML"),
])
def test_hostile_yaml_is_one_line(text: str, reason: str) -> None:
    with pytest.raises(decode.DecodeError) as caught:
        decode.from_yaml(text, Any, "x.yaml")
    assert str(caught.value).startswith("x.yaml: ") and reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_yaml_nested_64_levels_is_read_and_65_is_not() -> None:
    """Every value counts a level, scalars too (as before the values were made in the
    same pass): the innermost mapping's key and value are the 64th level."""
    def nested(levels: int) -> str:
        return "a:\n" + "".join(f"{' ' * (i + 1)}b{i}:\n" for i in range(levels)) + \
            " " * (levels + 1) + "c: 1\n"

    found: Any = decode.from_yaml(nested(61), dict[str, Any], "x.yaml")
    for level in range(62):
        found = found["a" if level == 0 else f"b{level - 1}"]
    assert found == {"c": 1}
    with pytest.raises(decode.DecodeError, match="nested more than 64 levels deep"):
        decode.from_yaml(nested(62), Any, "x.yaml")


def test_a_key_that_is_not_a_string_is_refused_by_the_type() -> None:
    assert decode.from_yaml("1: a\n", dict[int, str], "x.yaml") == {1: "a"}
    with pytest.raises(decode.DecodeError, match="x.yaml: expected str, got int"):
        decode.from_yaml("1: a\n", dict[str, str], "x.yaml")
    with pytest.raises(decode.DecodeError, match="^x.yaml: unknown key 'True'"):
        decode.from_yaml("yes: a\n", Client, "x.yaml", known_keys=True)


@dataclass
class Holder:
    client: Client | None = None
    clients: list[Client] | None = None
    by_name: dict[str, Client | None] = field(default_factory=dict)
    notes: list[str] | None = None


@pytest.mark.parametrize(("text", "where"), [
    ("client: {name: a, address: b, prot: 1}", "client: unknown key 'prot'"),
    ("clients: [{name: a, address: b}, {name: a, address: b, x: 1}]", "clients[1]: unknown"),
    ("by_name: {a: {name: a, address: b, y: 1}}", "by_name.a: unknown key 'y'"),
    ("notes: [a]\nother: 1", "x.yaml: unknown key 'other'"),
])
def test_known_keys_looks_through_unions_lists_and_dicts(text: str, where: str) -> None:
    with pytest.raises(decode.DecodeError, match=re.escape(where)):
        decode.from_yaml(text, Holder, "x.yaml", known_keys=True)
    assert decode.from_yaml("notes: [a]\nclient: null\n", Holder, "x.yaml",
                            known_keys=True) == Holder(notes=["a"])
