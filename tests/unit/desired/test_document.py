"""The desired-state file itself: the published schema is the sections' types, the
documented example reads, what zsn writes reads back the same, and refusals are one
line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.schema import STATE_SCHEMA_PATH, check_state, state_schema
from zsn.desired.document import export, parse, render, section_names
from zsn.errors import ValidationError
from zsn.system.host import Host

DOCS = Path(__file__).parents[3] / "docs"


def test_the_published_schema_is_the_sections_types() -> None:
    assert json.loads(STATE_SCHEMA_PATH.read_text()) == state_schema(), \
        "docs/state.schema.json is out of date: python -m tests.schema writes it"


def documented_examples() -> list[str]:
    """The YAML blocks of docs/state.md that are whole files."""
    blocks = re.findall(r"```yaml\n(.*?)```", (DOCS / "state.md").read_text(), re.DOTALL)
    return [block for block in blocks if block.startswith("version:")]


def test_the_documented_example_reads_and_matches_the_schema() -> None:
    import yaml

    examples = documented_examples()
    assert examples
    for text in examples:
        document = parse(text, "docs/state.md")
        assert document.wireguard.interfaces[0].peers[1].keepalive == 25
        check_state(yaml.safe_load(text))


def test_the_sections_are_the_domains_with_a_desired_face() -> None:
    assert section_names() == ["links", "wireguard", "zfs"]  # planned in this order


HOSTILE: list[Any] = ["a\nb", "x: y", "- item", "#", "'\"", "\u2028", "\x85", "null", "yes",
                      "on", "~", "0x10", "1e3", "10.0.0.1", "", " lead", "trail ", "[a]",
                      "{b}", "&anchor", "*alias", "!!python/object", "%TAG", "@at", "é"]


@pytest.mark.parametrize("as_json", [False, True])
def test_what_zsn_writes_reads_back_the_same(as_json: bool) -> None:
    document = {"version": 1, "strings": HOSTILE, "nested": [
        {"name": value, "list": [value, 3, True, None], "map": {"k": value}}
        for value in HOSTILE], "empty": {}, "none": [], "number": 0}
    text = render(document, as_json=as_json)
    from zsn.decode import from_json, from_yaml

    reader = from_json if as_json else from_yaml
    assert reader(text, dict[str, Any], "again") == document


def test_an_exported_tree_matches_the_schema(tmp_path: Path) -> None:
    import shutil

    (tmp_path / "etc/wireguard").mkdir(parents=True)
    shutil.copy(Path(__file__).parents[2] / "fixtures/wireguard/zcapwg1.conf",
                tmp_path / "etc/wireguard/wg0.conf")
    document, errors = export(Host(tmp_path), [])
    assert errors == []
    check_state(document)
    assert document["wireguard"]["interfaces"][0]["peers"][0]["name"] == "alice-laptop"


@pytest.mark.parametrize(("text", "reason"), [
    ("", "expected object, got null"),
    ("[1]", "expected object, got array"),
    ("{\"version\": 1, \"wireguard\": {\"interfaces\": 5}}", "wireguard.interfaces: expected"),
    ("version: true\n", "is not a schema"),
    ("version: 1\nlinks: {mtu: {eth0: 20}}\n", "links: MTU 20"),
    ("version: 1\nlinks: {bonds: [{name: b0, mode: fast, members: [e1]}]}\n", "links.bonds[0]"),
    ("a: &a [*a]\n", "nested more than 64"),
    ("version: 1\n" + "x: [" * 70 + "]" * 70 + "\n", "nested more than 64"),
])
def test_refusals_name_the_file_and_the_field(text: str, reason: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse(text, "f.yaml")
    assert str(refused.value).startswith("f.yaml") and reason in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_file_of_one_section_imports_that_sections_types_only() -> None:
    """zsn apply of a WireGuard file does not import the links' types and checks (a file
    the machine matches costs about one read: bench/apply.py)."""
    import subprocess
    import sys

    code = ("import sys; from zsn.desired.document import parse; "
            "parse('version: 1\\nlinks: null\\nwireguard: {interfaces: []}\\n', 'f'); "
            "print(sorted(m for m in sys.modules if m.startswith('zsn.links.')))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=Path(__file__).parents[3])
    assert found.stdout == "[]\n", found.stderr


def test_a_null_section_reads_as_one_left_out() -> None:
    given = parse("version: 1\nlinks: null\nwireguard: {interfaces: []}\n", "f.yaml")
    assert given == parse("version: 1\nwireguard: {interfaces: []}\n", "f.yaml")
    assert given.links is None and given.wireguard.interfaces == []
    both = parse("version: 1\nlinks: {mtu: {eth0: 1500}}\nwireguard: {}\n", "f.yaml")
    assert both.links.mtu == {"eth0": 1500} and both.wireguard.interfaces == []
    with pytest.raises(ValidationError, match="unknown key 'wireguards' .*known: version, "
                                              "links, wireguard"):
        parse("version: 1\nwireguards: {}\n", "f.yaml")
