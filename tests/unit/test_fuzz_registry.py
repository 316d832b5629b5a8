"""The fuzzing registry's tests (tests/unit/fuzz_registry.py): each entry fuzzed
under the one rule (a typed value or a one-line `ZsnError`, in bounded time and
memory), and a scan of zsn/ that fails when a function decodes outside input that
no entry covers."""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import re
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.unit import fuzz_registry
from tests.unit.fuzz_registry import REGISTRY

ZSN = Path(__file__).parents[2] / "zsn"
SLOWEST_EXAMPLE_SECONDS = 5.0
"""Longest any one input may take (a busy 2-core machine included): a decoder that
takes longer on some input of a few KiB is quadratic or worse."""
MEMORY_GROWTH_KIB = 256 << 10
"""How far one entry's run may raise the process's peak memory."""


@pytest.mark.parametrize("name", list(REGISTRY))
def test_fuzz(name: str) -> None:
    entry = REGISTRY[name]
    strategy, check = entry.build()
    ran = 0
    slowest = 0.0
    fuzz_registry._accepted[0] = 0
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    reached: set[str] = set()

    @settings(max_examples=entry.examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(value: Any) -> None:
        nonlocal ran, slowest
        ran += 1
        if ran <= TRACED_EXAMPLES:
            with calls_into_zsn(reached):
                check(value)
            return
        started = time.perf_counter()
        check(value)
        slowest = max(slowest, time.perf_counter() - started)

    started = time.perf_counter()
    run()
    took = time.perf_counter() - started
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    print(f"\n{name}: {ran} examples in {took:.2f} s (slowest {slowest * 1000:.0f} ms), "
          f"{fuzz_registry._accepted[0]} accepted, peak memory +{grown} KiB")
    assert ran == entry.examples, (name, ran)
    assert fuzz_registry._accepted[0] > 0, f"{name}: nothing accepted"
    assert slowest < SLOWEST_EXAMPLE_SECONDS, f"{name}: one input took {slowest:.1f} s"
    assert grown < MEMORY_GROWTH_KIB, f"{name}: peak memory grew by {grown} KiB"
    unreached = [pattern for pattern in entry.covers
                 if not any(fnmatch.fnmatchcase(site, pattern) for site in reached)]
    assert not unreached, f"{name} covers {unreached}, which its inputs never reach"


TRACED_EXAMPLES = 100
"""Examples run under a profiler at first, recording which functions of zsn/ they
reach: an entry's covers must all be reached (so the list is a fact, not a claim)."""


@contextlib.contextmanager
def calls_into_zsn(reached: set[str]) -> Iterator[None]:
    """Record ``module:qualname`` of every function of zsn/ called meanwhile."""
    root = str(ZSN) + "/"

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(root):
            module = frame.f_code.co_filename[len(str(ZSN.parent)) + 1:-3].replace("/", ".")
            qualname = frame.f_code.co_qualname.replace(".<locals>", "")
            reached.add(f"{module}:{qualname}")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


# -- every decoder has an entry ------------------------------------------------------

RAW_DECODERS = {
    ("json", "loads"), ("json", "load"), ("sqlite3", "connect"), ("tomllib", "loads"),
    ("tomllib", "load"), ("struct", "unpack"), ("struct", "unpack_from"),
    ("struct", "iter_unpack"), ("datetime", "fromisoformat"), ("decode", "from_json"),
    ("decode", "from_yaml"), ("decode", "from_toml"), ("decode", "convert"),
    ("decode", "timestamp"),
}
"""``module.function`` calls that turn outside bytes into values."""
RAW_MODULES = {"yaml", "msgspec", "pickle", "_pickle", "marshal"}
"""Modules any of whose functions decode."""
READER_NAMES = re.compile(r"_?(parse|decode|unpack)(_|$)|parsed$|from_dict$")
"""Functions named as decoders."""
QUERIES = {"execute", "executemany", "fetchone", "fetchall"}
"""Reads of a database, in a module that opens one (sqlite3)."""
THE_LAYER = "zsn.decode"
"""The decoding layer itself: its callers are the sites (its own entry fuzzes it)."""

NOT_YET: set[str] = set()
"""Decoders found before the registry that have no entry yet: each is taken off as
its entry lands (the test fails for a name here that an entry covers). A new
decoder never goes here."""


def decoding_sites() -> dict[str, set[str]]:
    """Every function of zsn/ that decodes outside input, as ``module:qualname``, with
    what makes it one."""
    found: dict[str, set[str]] = {}
    for path in sorted(ZSN.rglob("*.py")):
        module = ".".join(path.relative_to(ZSN.parent).with_suffix("").parts)
        if module != THE_LAYER:
            tree = ast.parse(path.read_text())
            queries = any(isinstance(node, ast.Import) and any(
                alias.name == "sqlite3" for alias in node.names) for node in ast.walk(tree))
            _find_sites(tree, module, [], queries, found)
    return found


def _find_sites(node: ast.AST, module: str, trail: list[str], queries: bool,
                found: dict[str, set[str]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = [*trail, child.name]
            if not isinstance(child, ast.ClassDef) and READER_NAMES.match(child.name):
                found.setdefault(f"{module}:{'.'.join(inner)}", set()).add("name")
            _find_sites(child, module, inner, queries, found)
            continue
        why = _decoding_call(child, queries)
        if why:
            found.setdefault(f"{module}:{'.'.join(trail) or '<module>'}", set()).add(why)
        _find_sites(child, module, trail, queries, found)


def _decoding_call(node: ast.AST, queries: bool) -> str | None:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    owner = node.func.value
    while isinstance(owner, ast.Attribute):  # msgspec.json.decode
        owner = owner.value
    name = owner.id if isinstance(owner, ast.Name) else ""
    attribute = node.func.attr
    if (name, attribute) in RAW_DECODERS or name in RAW_MODULES:
        return f"{name}.{attribute}"
    if queries and attribute in QUERIES:
        return f"sqlite3 {attribute}"
    return None


def covered(site: str, patterns: set[str]) -> bool:
    return any(fnmatch.fnmatchcase(site, pattern) for pattern in patterns)


def test_every_decoder_of_outside_input_has_an_entry() -> None:
    covers = {pattern for entry in REGISTRY.values() for pattern in entry.covers}
    sites = decoding_sites()
    missing = sorted(site for site in sites
                     if not covered(site, covers) and not covered(site, NOT_YET))
    assert not missing, (
        "these functions decode outside input but no entry of tests/unit/fuzz_registry.py "
        "covers them (add one; see its docstring):\n"
        + "\n".join(f"  {site} ({', '.join(sorted(sites[site]))})" for site in missing))
    stale = sorted(pattern for pattern in NOT_YET
                   if all(covered(site, covers) for site in sites
                          if fnmatch.fnmatchcase(site, pattern)))
    assert not stale, f"these have entries now: take them off NOT_YET: {stale}"


def test_every_covered_name_is_a_function_of_zsn() -> None:
    """A covers pattern that names nothing (a renamed function) hides a gap."""
    defined = set(decoding_sites())
    for path in sorted(ZSN.rglob("*.py")):
        module = ".".join(path.relative_to(ZSN.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined.update(f"{module}:{node.name}.{item.name}" for item in node.body
                               if isinstance(item, ast.FunctionDef))
            if isinstance(node, ast.FunctionDef):
                defined.add(f"{module}:{node.name}")
    dangling = sorted(pattern for entry in REGISTRY.values() for pattern in entry.covers
                      if not covered(pattern, {pattern}) or not any(
                          fnmatch.fnmatchcase(name, pattern) for name in defined))
    dangling += sorted(pattern for pattern in NOT_YET
                       if not any(fnmatch.fnmatchcase(name, pattern) for name in defined))
    assert not dangling, f"covers naming no function of zsn/: {dangling}"


def test_the_registry_size() -> None:
    """What one run fuzzes (printed with ``pytest -s``)."""
    examples = sum(entry.examples for entry in REGISTRY.values())
    print(f"\nfuzz registry: {len(REGISTRY)} entries, {examples} examples a run, "
          f"{len(decoding_sites())} decoding functions found in zsn/")
    assert len(REGISTRY) >= 25


DECODED_ELSEWHERE = {
    "zsn.links.persist.yamledit": "edits netplan YAML keeping its formatting: PyYAML's node "
                                  "API, the document composed and checked there",
    "zsn.tries.store": "try records: moving to zsn.decode with the records reworked as data",
}
"""Modules that still parse JSON, YAML or TOML themselves, and why."""


def test_json_yaml_and_toml_are_decoded_by_the_layer_only() -> None:
    """json.loads, yaml.*, tomllib and msgspec outside zsn.decode skip its bounds (size,
    depth, aliases) and its one-line errors naming the field."""
    raw = {"json.loads", "json.load", "tomllib.loads", "tomllib.load"}
    found = sorted(site for site, why in decoding_sites().items()
                   if any(each in raw or each.split(".")[0] in ("yaml", "msgspec")
                          for each in why)
                   and site.split(":")[0] not in DECODED_ELSEWHERE)
    assert not found, f"decode these with zsn.decode (from_json, from_yaml ...): {found}"
