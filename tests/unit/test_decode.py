"""The decoding layer (`zsn.decode`): typed values or one line naming the source and the
field; bounded in size, depth and YAML aliases; time stamps within the calendar."""

from __future__ import annotations

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
