"""The module map of a zsn tree: files and lines per domain, import cycles, the largest
functions by lines and by complexity. DEVELOPERS.md ("Module map") quotes its figures.

    .venv/bin/python scripts/module_map.py [TREE]     (TREE: a checkout; default: here)

Cycles are read by grimp (import-linter's graph): every import counts, function-level
ones too, TYPE_CHECKING ones do not. Complexity is ruff's C901 (McCabe) figure.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import grimp

DOMAINS = ("wireguard", "openvpn", "wlan", "links", "zfs")
JOBS = ("actions", "cli", "export", "lint", "live", "view")
"""The files every domain has for the same jobs (tests/unit/test_shape.py holds them)."""
TOP = 8


def files_per_domain(tree: Path) -> dict[str, tuple[int, int]]:
    """(files, lines) of each domain's package and of its TUI pane modules."""
    found = {}
    for domain in DOMAINS:
        paths = sorted((tree / "zsn" / domain).rglob("*.py"))
        panes = sorted((tree / "zsn" / "tui" / "panes").glob(f"{domain}*.py"))
        lines = sum(len(p.read_text().splitlines()) for p in [*paths, *panes])
        found[domain] = (len(paths) + len(panes), lines)
    return found


def cycles(tree: Path) -> list[list[str]]:
    """The import cycles: modules of one package (its __init__ included) that import
    each other, directly or through others of the package."""
    sys.path.insert(0, str(tree))
    graph = grimp.build_graph("zsn", exclude_type_checking_imports=True)
    found = []
    for package in sorted(m for m in graph.modules if graph.find_children(m)):
        members = graph.find_children(package) | {package}
        edges = {m: {i["imported"] for i in graph.find_matching_direct_imports(
            import_expression=f"{m} -> {package}")} | {
                i["imported"] for i in graph.find_matching_direct_imports(
                    import_expression=f"{m} -> {package}.*")} for m in members}
        edges = {m: (targets & members) - {m} for m, targets in edges.items()}
        found += [sorted(c) for c in _components(edges) if len(c) > 1]
    return found


def _components(edges: dict[str, set[str]]) -> list[set[str]]:
    seen: set[str] = set()
    result = []
    for start in edges:
        if start in seen:
            continue
        reach = _reach(edges, start)
        component = {n for n in reach if start in _reach(edges, n)}
        seen |= component
        result.append(component)
    return result


def _reach(edges: dict[str, set[str]], start: str) -> set[str]:
    stack, reached = [start], {start}
    while stack:
        for nxt in edges.get(stack.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                stack.append(nxt)
    return reached


def longest_functions(tree: Path) -> list[tuple[int, str]]:
    found = []
    for path in (tree / "zsn").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((lines, f"{path.relative_to(tree)}:{node.name}"))
    return sorted(found, reverse=True)[:TOP]


def most_complex(tree: Path) -> tuple[int, list[tuple[int, str]]]:
    """How many functions are above 10, and the most complex ones."""
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901",
         "--config", "lint.mccabe.max-complexity=10", "--output-format", "json", "zsn"],
        cwd=tree, capture_output=True, text=True, check=False).stdout
    found = []
    for item in json.loads(out):
        match = re.match(r"`(.+)` is too complex \((\d+) > 10\)", item["message"])
        if match:
            where = Path(item["filename"]).relative_to(tree.resolve())
            found.append((int(match.group(2)), f"{where}:{match.group(1)}"))
    return len(found), sorted(found, reverse=True)[:TOP]


def main() -> None:
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    print("files per domain (package + TUI panes), lines, standard files missing:")
    for domain, (count, lines) in files_per_domain(tree).items():
        missing = [f"{job}.py" for job in JOBS if not (tree / "zsn" / domain / f"{job}.py")
                   .exists()]
        print(f"  {domain:10} {count:3} files {lines:6} lines  {' '.join(missing) or '-'}")
    found = cycles(tree)
    print(f"import cycles: {len(found)}")
    for cycle in found:
        print("  " + " <-> ".join(cycle))
    print("longest functions (lines):")
    for lines, name in longest_functions(tree):
        print(f"  {lines:4}  {name}")
    above, worst = most_complex(tree)
    print(f"functions above complexity 10: {above}; the most complex:")
    for complexity, name in worst:
        print(f"  {complexity:4}  {name}")


if __name__ == "__main__":
    main()
