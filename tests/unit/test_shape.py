"""The shape of the code, checked: what the import contracts (`.importlinter`) and the
type checker cannot say."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import zsn

PACKAGE = Path(zsn.__file__).parent


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _reads_text_of(node: ast.AST, names: set[str]) -> bool:
    """Whether `node` is ``str(exc)`` (or ``exc.args``) of a caught exception."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "str" and len(node.args) == 1:
        argument = node.args[0]
        return isinstance(argument, ast.Name) and argument.id in names
    return isinstance(node, ast.Attribute) and node.attr == "args" \
        and isinstance(node.value, ast.Name) and node.value.id in names


def test_no_caller_decides_by_an_errors_words() -> None:
    """An error's message is for people: code decides by its class or its code
    (`NetlinkError.code`, `AccessDeniedError`), never by ``"root" in str(exc)``."""
    found = []
    for path, tree in _modules():
        for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
            if handler.name is None:
                continue
            caught = {handler.name}
            for node in ast.walk(handler):
                tested: list[ast.expr] = []
                if not isinstance(node, ast.expr):  # a comparison or a call
                    continue
                if isinstance(node, ast.Compare) and any(
                        isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                    tested = [node.left, *node.comparators]
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("startswith", "endswith", "find", "count"):
                    tested = [node.func.value]
                if any(_reads_text_of(each, caught) for each in tested):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, found


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module: the import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_anywhere() -> None:
    """No two modules need each other, even through an import inside a function or one
    made for the type checker only (the contracts' acyclic_siblings sees siblings only,
    not a package and its modules, and leaves TYPE_CHECKING imports out): a module that
    needs another's type only names what it uses, as a Protocol."""
    import grimp

    imports = grimp.build_graph("zsn", exclude_type_checking_imports=False)
    graph = {module: set(imports.find_modules_directly_imported_by(module))
             for module in imports.modules}
    assert _strongly_connected(graph) == []
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]]


JOBS = ("actions", "cli", "export", "lint", "live", "view")
"""The files every domain has, each for the same job: its plans, its headless commands,
its export section, its advice, its live reads, its pane's rows (DEVELOPERS.md)."""


def test_every_domain_has_the_same_files_for_the_same_jobs() -> None:
    from zsn.domains import domains

    for domain in domains():
        package = PACKAGE / domain.name
        missing = [job for job in JOBS if not (package / f"{job}.py").is_file()]
        assert not missing, f"zsn/{domain.name} has no {missing}"


def test_panes_draw_rows_their_domain_view_built() -> None:
    """A pane hands its tables the rows of `zsn/<domain>/view.py` (tested without a
    terminal); it builds none itself."""
    built = []
    for path in sorted((PACKAGE / "tui" / "panes").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("Row", "row_of"):
                built.append(f"{path.name}:{node.lineno}")
    assert not built, built


def test_no_module_re_exports_names() -> None:
    """A name is imported from the module that defines it: no ``import X as X`` and no
    ``__all__`` listing imported names."""
    found = []
    for path, tree in _modules():
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                for alias in node.names:
                    if alias.asname is not None and alias.asname == alias.name.split(".")[-1]:
                        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
                    imported.add(alias.asname or alias.name.split(".")[0])
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(target, ast.Name) and target.id == "__all__"
                    for target in node.targets) and isinstance(node.value, ast.List | ast.Tuple):
                names = {element.value for element in node.value.elts
                         if isinstance(element, ast.Constant)}
                if names & imported:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, found
