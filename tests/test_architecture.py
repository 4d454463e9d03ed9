"""The package's shape (docs/architecture.md): folders are layers, each importing only from
the layers below it; no import cycles; no module over 400 lines. An import inside a
function counts as one at the top: a lazy import is still an edge of the graph, and a cycle
hidden behind one is still a cycle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import ROOT

PACKAGE = ROOT / "orkeon_run"

# Bottom first. A module belongs to the layer of its first name below the package.
LAYERS: list[set[str]] = [
    {"errors", "escape", "vocabulary", "catalog", "calls", "ledger", "events", "jsonio", "proc", "proc_loop",
     "environ", "exec_words", "logs", "gitpatch", "units", "github_api", "limits", "startup",
     "__init__"},
    {"policy"},
    {"config"},
    {"models"},
    {"tools"},
    {"hooks"},
    {"pipeline"},
    {"agent"},
    {"run"},
    {"report"},
    {"jobs"},
    {"commands"},
    {"cli", "__main__"},
]  # fmt: skip
MAX_LINES = 400


def layer_of(module: str) -> int:
    head = module.split(".")[1] if "." in module else "__init__"
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    raise AssertionError(f"{module} is in no layer: add its folder to LAYERS")


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        yield ".".join(parts), path


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str, path: Path, root: Path = PACKAGE.parent) -> Iterator[tuple[str, int]]:
    """The package modules `module` imports at run time (not under TYPE_CHECKING), at its
    top or inside its functions, with their line numbers (`root`: the package's folder)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _runtime_nodes(tree.body):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("orkeon_run"):
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    yield (full if _exists(full, root) else target), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("orkeon_run"):
                    yield alias.name, node.lineno


def _runtime_nodes(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `nodes`, functions and classes included, except the blocks under
    `if TYPE_CHECKING:` (never run)."""
    for node in nodes:
        if isinstance(node, ast.If) and _type_checking(node):
            yield from _runtime_nodes(node.orelse)
            continue
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _runtime_nodes([child])
            else:
                yield from ast.walk(child)


def _exists(module: str, root: Path) -> bool:
    rel = Path(*module.split("."))
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def test_every_module_imports_only_from_its_layer_and_below() -> None:
    wrong = []
    for module, path in modules():
        mine = layer_of(module)
        for target, line in imports(module, path):
            if layer_of(target) > mine:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} -> {target}")
    assert not wrong, "imports from a higher layer:\n" + "\n".join(wrong)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph` (module -> the modules it imports): each group of
    modules that reach one another, sorted (Tarjan's strongly connected components). A
    submodule importing its own package's names (its `__init__`, which imports it) is how
    packages work, not an edge."""
    edges = {m: {t for t in ts if t in graph and t != m and not m.startswith(t + ".")}
             for m, ts in graph.items()}  # fmt: skip
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            if group:
                found.append(sorted([*group, node]))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycles() -> None:
    graph = {m: {t for t, _ in imports(m, p)} for m, p in modules()}
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_an_import_inside_a_function_is_an_edge(tmp_path: Path) -> None:
    """A cycle hidden behind a function-level import, or behind one in a method, a `try`
    or a `with`, is found; one under TYPE_CHECKING is no edge."""
    mod = tmp_path / "orkeon_run"
    (mod / "sub").mkdir(parents=True)
    (mod / "a.py").write_text("def f():\n    from .sub import b\n")
    (mod / "sub" / "__init__.py").write_text("from .c import x\n")
    (mod / "sub" / "b.py").write_text(
        "class K:\n    def m(self):\n        try:\n            from ..a import f\n"
        "        except ImportError:\n            pass\n"
    )
    (mod / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import f\nx = 1\n"
    )
    files = {"orkeon_run.a": "a.py", "orkeon_run.sub.b": "sub/b.py", "orkeon_run.sub.c": "sub/c.py"}
    found = {m: {t for t, _ in imports(m, mod / f, tmp_path)} for m, f in files.items()}
    assert found["orkeon_run.sub.c"] == set()
    assert cycles(found) == [["orkeon_run.a", "orkeon_run.sub.b"]]


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=lambda x: str(x))
def test_no_module_is_over_400_lines(module: str, path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{module}: {lines} lines; split it (docs/architecture.md)"
